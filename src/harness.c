/* harness.c: measuring one case and pass. Set-up (allocation, first touch, input generation)
 * happens outside the timed region; then warm-up, batch calibration (k calls per sample so a
 * sample outlasts the timer's resolution by far), samples until min time and count, counters
 * read as snapshots around each sample, and memory figures from the tracked allocator. */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "opperf/harness.h"
#include "opperf/npy.h"
#include "opperf/profile.h"
#include "opperf/report.h"
#include "opperf/schedstat.h"

void opf_settings_default(opf_settings *s) {
  memset(s, 0, sizeof *s);
  s->warmup = 0.05;
  s->warmup_settle = 0.05;
  s->min_time = 0.03;
  s->max_time = 3.0;
  s->ci_target = 0.03;
  s->ci_time = 0.15;
  s->sample_time = 0.002;
  s->min_runs = 5;
  s->max_runs = 10000;
  s->threads = omp_get_num_procs();
  s->cache = OPF_CACHE_WARM;
  s->seed = 42;
  snprintf(s->events, sizeof s->events, "sw");
  s->contention_retries = OPF_CONTENTION_RETRIES;
  s->contention_threshold = OPF_CONTENTION_THRESHOLD;
}

int opf_hook_chain_add(opf_hook_chain *ch, const opf_region_hooks *h) {
  if (ch->n >= OPF_MAX_HOOKS) return OPF_EINVAL;
  ch->h[ch->n++] = *h;
  return OPF_OK;
}

static void chain_begin(void *ctx) {
  opf_hook_chain *ch = ctx;
  for (int i = 0; i < ch->n; i++)
    if (ch->h[i].sample_begin) ch->h[i].sample_begin(ch->h[i].ctx);
}

static void chain_end(void *ctx) {
  opf_hook_chain *ch = ctx;
  for (int i = ch->n - 1; i >= 0; i--)
    if (ch->h[i].sample_end) ch->h[i].sample_end(ch->h[i].ctx);
}

static void chain_case_end(void *ctx, const opf_result *r) {
  opf_hook_chain *ch = ctx;
  for (int i = ch->n - 1; i >= 0; i--)
    if (ch->h[i].case_end) ch->h[i].case_end(ch->h[i].ctx, r);
}

opf_region_hooks opf_hook_chain_hooks(opf_hook_chain *ch) {
  opf_region_hooks h = {chain_begin, chain_end, chain_case_end, ch};
  return h;
}

const char *opf_status_name(opf_status s) {
  static const char *n[] = {"ok", "skipped", "error", "crashed", "timeout"};
  return (unsigned)s <= OPF_ST_TIMEOUT ? n[s] : "?";
}

void opf_result_release(opf_result *r) {
  free(r->samples);
  r->samples = NULL;
  free(r->cpu_samples);
  r->cpu_samples = NULL;
  free(r->sample_start);
  r->sample_start = NULL;
  free(r->folded); /* --profile-folded */
  r->folded = NULL;
  r->folded_len = 0;
  for (int i = 0; i < r->n_events; i++) {
    free(r->events[i].raw);
    r->events[i].raw = NULL;
    r->events[i].n_raw = 0;
  }
}

/* Append n doubles to a malloc'd array of *len (the result keeps its old array on failure). */
static int append(double **arr, int len, const double *more, int n) {
  if (!n) return 0;
  double *v = realloc(*arr, sizeof *v * (size_t)(len + n));
  if (!v) return -1;
  memcpy(v + len, more, sizeof *v * (size_t)n);
  *arr = v;
  return 0;
}

void opf_result_merge(opf_result *acc, opf_result *rep) {
  if (acc->status != OPF_ST_OK) goto out;
  if (rep->status != OPF_ST_OK) { /* a repetition that failed fails the case */
    opf_result_release(acc);
    *acc = *rep; /* acc takes rep's arrays */
    memset(rep, 0, sizeof *rep);
    return;
  }
  if (acc->n_reps >= OPF_MAX_REPS || !rep->samples) goto out;
  int n = acc->n_samples;
  if (append(&acc->samples, n, rep->samples, rep->n_samples)) goto out;
  /* Per-sample arrays that only some samples would have: none. */
  if (!acc->cpu_samples || !rep->cpu_samples || append(&acc->cpu_samples, n, rep->cpu_samples, rep->n_samples)) {
    free(acc->cpu_samples);
    acc->cpu_samples = NULL;
  }
  if (!acc->sample_start || !rep->sample_start ||
      append(&acc->sample_start, n, rep->sample_start, rep->n_samples)) {
    free(acc->sample_start);
    acc->sample_start = NULL;
  }
  acc->n_samples = n + rep->n_samples;
  opf_stats_compute(acc->samples, acc->n_samples, &acc->time);
  /* the median's interval over the pooled samples (not the first repetition's) */
  double *sorted = malloc(sizeof *sorted * (size_t)acc->n_samples);
  acc->ci_lo = acc->ci_hi = 0;
  if (sorted) {
    memcpy(sorted, acc->samples, sizeof *sorted * (size_t)acc->n_samples);
    opf_sort_doubles(sorted, acc->n_samples);
    if (opf_median_ci95(sorted, acc->n_samples, &acc->ci_lo, &acc->ci_hi)) acc->ci_lo = acc->ci_hi = 0;
    free(sorted);
  }
  acc->rep_median[acc->n_reps++] = rep->time.median;
  acc->total_time += rep->total_time;
  /* contention: the worse repetition's figures (the status says the merged case was disturbed) */
  if (!rep->sched_ok && acc->sched_ok) {
    acc->sched_ok = 0;
    memcpy(acc->sched_reason, rep->sched_reason, sizeof acc->sched_reason);
  } else if (rep->sched_ok && acc->sched_ok && rep->contention > acc->contention) {
    acc->contention = rep->contention, acc->runq_wait_s = rep->runq_wait_s;
    acc->oncpu_s = rep->oncpu_s, acc->contended = rep->contended;
  }
  acc->attempts += rep->attempts;
  opf_profile_merge(acc, rep); /* --profile */
  if (rep->batch > acc->batch) acc->batch = rep->batch;
  if (rep->peak_live_bytes > acc->peak_live_bytes) acc->peak_live_bytes = rep->peak_live_bytes;
  if (rep->max_rss_bytes > acc->max_rss_bytes) acc->max_rss_bytes = rep->max_rss_bytes;
  if (rep->call_alloc_bytes > acc->call_alloc_bytes) acc->call_alloc_bytes = rep->call_alloc_bytes;
  if (rep->call_allocs > acc->call_allocs) acc->call_allocs = rep->call_allocs;
  for (int i = 0; i < acc->n_events && i < rep->n_events; i++) {
    opf_event_result *a = &acc->events[i], *b = &rep->events[i];
    if (a->has_value != b->has_value && (a->has_value ? b : a)->status != OPF_EV_NOT_SUPPORTED) {
      /* counted in some repetitions only: the value is theirs, the status says so */
      if (!a->has_value) {
        double *raw = a->raw;
        *a = *b;
        b->raw = raw;
      }
      a->status = OPF_EV_PARTIAL;
      snprintf(a->reason, sizeof a->reason, "not counted in every repetition (%d merged)",
               acc->n_reps);
      continue;
    }
    if (!b->has_value) continue;
    a->n_partial += b->n_partial;
    a->main_per_call = (a->main_per_call * a->n_raw + b->main_per_call * b->n_raw) /
                       (a->n_raw + b->n_raw > 0 ? a->n_raw + b->n_raw : 1);
    int na = a->n_raw;
    if (append(&a->raw, na, b->raw, b->n_raw)) continue;
    a->n_raw = na + b->n_raw;
    opf_stats es;
    if (!opf_stats_compute(a->raw, a->n_raw, &es)) a->per_call = es.median;
    a->mean_per_call = (a->mean_per_call * na + b->mean_per_call * b->n_raw) / a->n_raw;
    if (b->running_pct < a->running_pct) a->running_pct = b->running_pct, a->status = b->status;
    if (b->status == OPF_EV_PARTIAL && a->status != OPF_EV_PARTIAL) {
      a->status = OPF_EV_PARTIAL;
      snprintf(a->reason, sizeof a->reason, "%s", b->reason);
    }
  }
out:
  opf_result_release(rep);
}

/* "0-1,3" -> cpu set; OPF_EINVAL on a malformed list or a CPU this machine does not have. */
static int parse_cpus(const char *list, cpu_set_t *set, opf_err *err) {
  CPU_ZERO(set);
  const char *p = list;
  int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
  while (*p) {
    char *end;
    errno = 0;
    long a = strtol(p, &end, 10), b = a;
    if (end == p || errno) goto bad;
    p = end;
    if (*p == '-') {
      b = strtol(p + 1, &end, 10);
      if (end == p + 1 || b < a) goto bad;
      p = end;
    }
    if (a < 0 || b >= ncpu)
      return opf_err_set(err, OPF_EINVAL, "CPU list '%s': this machine has CPUs 0-%d", list,
                         ncpu - 1);
    for (long c = a; c <= b; c++) CPU_SET((int)c, set);
    if (*p == ',') p++;
    else if (*p) goto bad;
  }
  return OPF_OK;
bad:
  return opf_err_set(err, OPF_EINVAL, "malformed CPU list '%s' (expected e.g. 0-1,3)", list);
}

int opf_runtime_setup(const opf_settings *s, opf_err *err) {
  if (s->threads < 1 || s->threads > 1024)
    return opf_err_set(err, OPF_EINVAL, "threads must be between 1 and 1024, not %d", s->threads);
  if (s->cpus[0]) {
    cpu_set_t set;
    int rc = parse_cpus(s->cpus, &set, err);
    if (rc) return rc;
    if (sched_setaffinity(0, sizeof set, &set))
      return opf_err_set(err, OPF_ESYS, "cannot pin to CPUs '%s': %s", s->cpus, strerror(errno));
  }
  omp_set_dynamic(0);
  omp_set_num_threads(s->threads);
  openblas_set_num_threads(s->threads);
  /* Create the OpenMP pool now (OpenBLAS's OpenMP build shares it) so that counters opened
   * afterwards on every thread of the process cover the workers. (An empty region is
   * optimised away and creates no thread: each thread must do something observable.) */
  static volatile int started;
#pragma omp parallel
  started = omp_get_thread_num();
  (void)started;
  return OPF_OK;
}

/* Evicts caches before a cold sample by writing a buffer twice the last-level cache. */
typedef struct {
  unsigned char *buf;
  size_t n;
} flusher;

/* --cache cold: every thread of the run writes its share of a buffer twice the size of all
 * last-level cache instances together, so each worker's private caches and every L3 slice
 * are evicted (a memset by the caller alone leaves the workers' L1/L2 warm). */
static void flush_caches(flusher *f) {
  if (!f->buf) return;
  static unsigned char v;
  v++;
  unsigned char *buf = f->buf;
  const size_t n = f->n;
  const unsigned char val = v;
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    size_t lo = n / (size_t)nt * (size_t)t, hi = t == nt - 1 ? n : n / (size_t)nt * (size_t)(t + 1);
    memset(buf + lo, val, hi - lo);
  }
  __asm__ __volatile__("" : : "r"(f->buf) : "memory");
}

static void fill_info(opf_result *r, const opf_case *c) {
  const opf_op *op = c->op;
  int k = 0;
  for (int i = 0; i < op->n_in; i++) {
    if (!c->present[i]) continue;
    opf_tensor_info *t = &r->tensors[k++];
    snprintf(t->name, sizeof t->name, "%s", op->in[i].name);
    snprintf(t->role, sizeof t->role, "in");
    opf_shape_str(&c->in[i], t->shape, sizeof t->shape);
    t->dtype = c->in[i].dtype;
    t->bytes = opf_tensor_bytes(&c->in[i], NULL);
  }
  for (int i = 0; i < op->n_out; i++) {
    opf_tensor_info *t = &r->tensors[k++];
    snprintf(t->name, sizeof t->name, "%s", op->out[i]);
    snprintf(t->role, sizeof t->role, "%s", op->inplace[i] ? "inplace" : "out");
    opf_shape_str(&c->out[i], t->shape, sizeof t->shape);
    t->dtype = c->out[i].dtype;
    t->bytes = opf_tensor_bytes(&c->out[i], NULL);
  }
  r->n_tensors = k;
}

static int fail(opf_result *r, opf_status st, const char *fmt, const char *msg) {
  r->status = st;
  snprintf(r->message, sizeof r->message, fmt, msg);
  return OPF_OK;
}

/* --save-tensors: DIR/NNNN_OP_DTYPE_PASS_NAME.npy. Inputs (and output gradients) as generated,
 * before any call; outputs (and input gradients) after the measurement. */
static int save_tensors(const opf_settings *s, const opf_case *c, opf_pass pass, int after,
                        opf_result *r, opf_err *err) {
  const opf_op *op = c->op;
  char path[600];
  int np = snprintf(r->saved, sizeof r->saved, "%s/%04d_%s_%s_%s_", s->save_dir, s->case_index,
                    op->name, opf_dtype_name(c->dtype), opf_pass_name(pass));
  if (np >= (int)sizeof r->saved) return opf_err_set(err, OPF_EINVAL, "--save-tensors path too long");
  const opf_tensor *t[2 * (OPF_MAX_IN + OPF_MAX_OUT)];
  const char *names[2 * (OPF_MAX_IN + OPF_MAX_OUT)], *pre[2 * (OPF_MAX_IN + OPF_MAX_OUT)];
  int n = 0;
  for (int i = 0; i < op->n_in; i++) {
    if (!after && c->in[i].data) t[n] = &c->in[i], names[n] = op->in[i].name, pre[n++] = "";
    if (after && c->gin[i].data) t[n] = &c->gin[i], names[n] = op->in[i].name, pre[n++] = "grad_";
  }
  for (int i = 0; i < op->n_out; i++) {
    if (after && c->out[i].data) t[n] = &c->out[i], names[n] = op->out[i], pre[n++] = "";
    if (!after && c->gout[i].data) t[n] = &c->gout[i], names[n] = op->out[i], pre[n++] = "grad_";
  }
  for (int i = 0; i < n; i++) {
    /* An in-place output shares its input's name space: suffix it so both files exist. */
    int clash = 0;
    for (int j = 0; j < op->n_in; j++) clash |= after && !pre[i][0] && !strcmp(names[i], op->in[j].name);
    snprintf(path, sizeof path, "%s%s%s%s.npy", r->saved, pre[i], names[i], clash ? "_out" : "");
    int rc = opf_npy_save(path, t[i], err);
    if (rc) return rc;
  }
  return OPF_OK;
}

/* CPU time of the whole process (every OpenMP thread), read outside the timed region. */
static double process_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int call_batch(opf_case *c, opf_pass pass, int64_t k) {
  for (int64_t i = 0; i < k; i++) {
    int rc = opf_case_call(c, pass);
    if (rc) return rc;
  }
  return OPF_OK;
}

/* One sample: the --cache cold eviction, the process CPU clock, the region hooks, and innermost
 * the counter window around k calls (the other threads' counters read first and the caller's
 * last at the start, the reverse at the end). k = 0 without hooks: an empty window, for the
 * harness's own count. */
typedef struct window {
  double b, e, cb, ce;
  int snap_ok, rc;
} window;

static void sample_window(opf_case *c, opf_pass pass, int64_t k, flusher *fl,
                          const opf_region_hooks *hk, opf_pmu *pmu, opf_pmu_snap *sa,
                          opf_pmu_snap *sb, window *w) {
  flush_caches(fl);
  w->cb = process_cpu();
  if (hk && hk->sample_begin) hk->sample_begin(hk->ctx);
  /* A failed snapshot read leaves partial values: such a sample gets no counter deltas. */
  w->snap_ok = pmu && opf_pmu_read_begin(pmu, sa) == OPF_OK;
  w->b = opf_now();
  w->rc = k ? call_batch(c, pass, k) : OPF_OK;
  w->e = opf_now();
  w->snap_ok = w->snap_ok && opf_pmu_read(pmu, sb) == OPF_OK;
  if (hk && hk->sample_end) hk->sample_end(hk->ctx);
  w->ce = process_cpu();
}

/* One empty window right after a sample (same eviction, clocks and reads, no call): adds each
 * event's count to resid[i * cap + nr[i]]. */
static void empty_window(opf_pmu *pmu, opf_pmu_snap *sa, opf_pmu_snap *sb, size_t nev,
                         flusher *fl, double *resid, int *nr, int cap, opf_pmu_acc *acc) {
  window w;
  sample_window(NULL, OPF_PASS_FWD, 0, fl, NULL, pmu, sa, sb, &w);
  if (w.snap_ok) opf_pmu_acc_add(pmu, acc, sa, sb);
  for (size_t i = 0; w.snap_ok && i < nev; i++) {
    opf_pmu_dval d;
    if (nr[i] < cap && opf_pmu_delta_ex(pmu, i, sa, sb, &d) == OPF_DV_OK)
      resid[i * (size_t)cap + (size_t)nr[i]++] = d.value;
  }
}

/* One measurement attempt: its samples, counter samples and accumulators, resource and
 * allocation figures around its sampling loop, and the scheduler's figures for every thread
 * of the process read once before the first window and once after the last. */
typedef struct attempt {
  double *samples, *cpu, *start, *ev; /* ev: per-sample counts, then main, then empty windows */
  opf_pmu_acc *acc_s, *acc_e;         /* sums over samples / empty windows */
  double ev_run[OPF_PMU_MAX_EVENTS];
  int ev_n[OPF_PMU_MAX_EVENTS], ev_partial[OPF_PMU_MAX_EVENTS], ev_nr[OPF_PMU_MAX_EVENTS];
  int n;
  double total, ci_lo, ci_hi, median;
  char stop[12];
  struct rusage ru0, ru1;
  opf_alloc_stats a1, a2;
  int sched_ok, threads;
  opf_sched_totals s0, s1;
  double contention;
  char sched_reason[160];
} attempt;

static void attempt_free(attempt *a) {
  free(a->samples);
  free(a->cpu);
  free(a->start);
  free(a->ev);
  opf_pmu_acc_free(a->acc_s);
  opf_pmu_acc_free(a->acc_e);
  memset(a, 0, sizeof *a);
}

static int attempt_alloc(attempt *a, int cap, size_t nev, int pmu_live) {
  memset(a, 0, sizeof *a);
  a->samples = malloc(sizeof *a->samples * (size_t)cap);
  a->cpu = malloc(sizeof *a->cpu * (size_t)cap);
  a->start = malloc(sizeof *a->start * (size_t)cap);
  int bad = !a->samples || !a->cpu || !a->start;
  if (pmu_live) {
    a->ev = malloc(sizeof *a->ev * 3 * nev * (size_t)cap);
    a->acc_s = opf_pmu_acc_new();
    a->acc_e = opf_pmu_acc_new();
    bad = bad || !a->ev || !a->acc_s || !a->acc_e;
  }
  if (bad) attempt_free(a);
  return bad ? -1 : 0;
}

/* The sampling loop of one attempt: samples until the adaptive stop. */
static int sample_loop(const opf_settings *s, opf_case *c, opf_pass pass, int64_t k, flusher *fl,
                       opf_pmu *pmu, opf_pmu_snap *sa, opf_pmu_snap *sb, size_t nev, int cap,
                       attempt *a) {
  int rc = OPF_OK;
  /* Per-sample counts, so counters are summarised by their median like the time (a stalled
   * sample inflates a mean: e.g. OpenMP workers spinning while the caller waits); then the
   * calling thread's own counts, then the empty windows' counts (the harness's own). */
  double *ev_samples = a->ev;
  double *ev_main = ev_samples ? ev_samples + nev * (size_t)cap : NULL;
  double *ev_empty = ev_samples ? ev_samples + 2 * nev * (size_t)cap : NULL;
  /* The samples so far in ascending order, for the adaptive stop (insertion: O(n) each). */
  double *sorted = malloc(sizeof *sorted * (size_t)cap);
  if (!sorted) {
    snprintf(c->err.msg, sizeof c->err.msg, "cannot allocate the sample buffer");
    return OPF_ENOMEM;
  }
  getrusage(RUSAGE_SELF, &a->ru0);
  opf_alloc_stats_get(&a->a1);
  const opf_region_hooks *hk = s->hooks;
  opf_err se;
  a->sched_ok = opf_sched_read(&a->s0, &se) == OPF_OK;
  if (!a->sched_ok) snprintf(a->sched_reason, sizeof a->sched_reason, "%.150s", se.msg);
  double start = opf_now();
  int n = 0;
  snprintf(a->stop, sizeof a->stop, "runs");
  for (;;) {
    window w;
    sample_window(c, pass, k, fl, hk, pmu, sa, sb, &w);
    rc = w.rc;
    if (rc) break;
    const double b = w.b, e = w.e, cb = w.cb, ce = w.ce;
    const int snap_ok = w.snap_ok;
    a->cpu[n] = (ce - cb) / (double)k;
    a->start[n] = b;
    a->samples[n++] = (e - b) / (double)k;
    a->total += e - b;
    for (size_t i = 0; snap_ok && i < nev; i++) {
      opf_pmu_dval d;
      opf_pmu_dstate st = opf_pmu_delta_ex(pmu, i, sa, sb, &d);
      if (st == OPF_DV_PARTIAL) a->ev_partial[i]++;
      if (st != OPF_DV_OK) continue;
      a->ev_run[i] += d.frac_running * (e - b);
      ev_main[i * (size_t)cap + (size_t)a->ev_n[i]] = d.main_value;
      ev_samples[i * (size_t)cap + (size_t)a->ev_n[i]++] = d.value;
    }
    /* The harness's own count, paired with this sample: an empty window under the same
     * conditions (cache state, load) right after it. */
    if (snap_ok) opf_pmu_acc_add(pmu, a->acc_s, sa, sb);
    if (snap_ok) empty_window(pmu, sa, sb, nev, fl, ev_empty, a->ev_nr, cap, a->acc_e);
    int at = n - 1;
    while (at > 0 && sorted[at - 1] > a->samples[n - 1]) sorted[at] = sorted[at - 1], at--;
    sorted[at] = a->samples[n - 1];
    double elapsed = opf_now() - start;
    if (n >= cap) break;
    if (n >= s->min_runs && a->total >= s->min_time) {
      double lo, hi;
      if (s->ci_target <= 0) {
        snprintf(a->stop, sizeof a->stop, "min-time");
        break;
      }
      if (opf_median_ci95(sorted, n, &lo, &hi) == 0 && hi - lo <= s->ci_target * sorted[n / 2]) {
        snprintf(a->stop, sizeof a->stop, "ci");
        break;
      }
      if (a->total >= s->ci_time) {
        snprintf(a->stop, sizeof a->stop, "ci-time");
        break;
      }
    }
    if (elapsed >= s->max_time && n >= 3) {
      snprintf(a->stop, sizeof a->stop, "max-time");
      break;
    }
  }
  double wall = opf_now() - start;
  if (a->sched_ok) {
    a->sched_ok = opf_sched_read(&a->s1, &se) == OPF_OK;
    if (!a->sched_ok) snprintf(a->sched_reason, sizeof a->sched_reason, "%.150s", se.msg);
  }
  if (a->sched_ok) {
    a->threads = s->threads < a->s1.tasks ? s->threads : a->s1.tasks;
    if (a->threads < 1) a->threads = 1;
    double wait = a->s1.runq_s - a->s0.runq_s;
    a->contention = wall > 0 && wait > 0 ? wait / (wall * a->threads) : 0;
  }
  a->n = n;
  if (n > 0 && opf_median_ci95(sorted, n, &a->ci_lo, &a->ci_hi) != 0) a->ci_lo = a->ci_hi = 0;
  if (n > 0) a->median = sorted[n / 2];
  free(sorted);
  getrusage(RUSAGE_SELF, &a->ru1);
  opf_alloc_stats_get(&a->a2);
  return rc;
}

void opf_result_init(opf_result *r, const opf_case *c, const char *set, opf_pass pass,
                     const opf_pmu *pmu) {
  const opf_op *op = c->op;
  memset(r, 0, sizeof *r);
  snprintf(r->op, sizeof r->op, "%s", op->name);
  snprintf(r->category, sizeof r->category, "%s", op->category);
  snprintf(r->impl, sizeof r->impl, "%s", opf_impl_name(c->impl));
  snprintf(r->set, sizeof r->set, "%s", set ? set : "custom");
  opf_case_spec_str(c, r->spec, sizeof r->spec);
  opf_case_params_str(c, r->params, sizeof r->params);
  r->dtype = c->dtype;
  r->pass = pass;
  fill_info(r, c);
  r->flops = (op->flops ? op->flops : opf_default_flops)(c, pass);
  r->bytes = (op->bytes ? op->bytes : opf_default_bytes)(c, pass);
  if (pass != OPF_PASS_FWD) opf_case_grad_views(c, r->grad_views, sizeof r->grad_views);
  for (size_t i = 0; pmu && i < opf_pmu_count(pmu) && i < OPF_PMU_MAX_EVENTS; i++) {
    const opf_pmu_event *e = opf_pmu_event_at(pmu, i);
    opf_event_result *er = &r->events[r->n_events++];
    snprintf(er->name, sizeof er->name, "%s", e->name);
    const char *kind = opf_pmu_kind(e->type, e->config);
    snprintf(er->kind, sizeof er->kind, "%s", e->fstr[0] && kind ? kind : "");
    er->status = e->status;
    er->group = e->group;
    snprintf(er->plm, sizeof er->plm, "%s", opf_pmu_event_plm(pmu, i));
    er->err = e->err;
    snprintf(er->reason, sizeof er->reason, "%s", e->reason);
  }
}

int opf_measure(const opf_settings *s, opf_case *c, const char *set, opf_pass pass, opf_pmu *pmu,
                opf_result *r) {
  opf_result_init(r, c, set, pass, pmu);

  if (pass != OPF_PASS_FWD && !opf_case_has_backward(c))
    return fail(r, OPF_ST_SKIPPED, "%s", "no backward pass (not differentiable)");
  const int with_grad = pass != OPF_PASS_FWD;
  uint64_t need = opf_case_footprint(c, with_grad), avail = opf_mem_available();
  if (need == UINT64_MAX || (avail && need > avail / 10 * 9)) {
    char m[160];
    snprintf(m, sizeof m, "needs %.2f GiB, %.2f GiB available", (double)need / (1 << 30),
             (double)avail / (1 << 30));
    return fail(r, OPF_ST_SKIPPED, "%s", m);
  }
  if (s->check && pass != OPF_PASS_BWD) { /* --check: forward vs the reference, before timing */
    opf_err ce;
    if (opf_case_check_reference(c, s->seed, &ce)) return fail(r, OPF_ST_ERROR, "%s", ce.msg);
    snprintf(r->check, sizeof r->check, "passed");
  }
  if (s->check && r->grad_views[0]) { /* gradient views against the materialised gradients */
    opf_err ce;
    if (opf_case_check_grad_views(c, s->seed, &ce)) return fail(r, OPF_ST_ERROR, "%s", ce.msg);
    snprintf(r->check, sizeof r->check, "passed");
  }

  opf_err err;
  opf_alloc_stats_reset();
  opf_alloc_stats a0;
  if (opf_case_alloc(c, with_grad, &err) || opf_case_fill(c, s->seed, &err))
    return fail(r, OPF_ST_ERROR, "%s", err.msg);
  if (s->save_dir[0] && save_tensors(s, c, pass, 0, r, &err)) {
    opf_case_release(c);
    return fail(r, OPF_ST_ERROR, "%s", err.msg);
  }
  opf_alloc_stats_get(&a0);
  r->setup_bytes = a0.bytes_allocated;
  r->setup_allocs = a0.n_allocs;

  flusher fl = {0};
  if (s->cache == OPF_CACHE_COLD) {
    fl.n = 2 * opf_llc_bytes();
    fl.buf = malloc(fl.n); /* harness memory, deliberately outside the tracked allocator */
    if (!fl.buf) {
      opf_case_release(c);
      return fail(r, OPF_ST_ERROR, "%s", "cannot allocate the cache-flush buffer");
    }
  }

  int rc = OPF_OK;
  double *ev_samples = NULL; /* per-sample counter values (declared before the first goto) */
  opf_pmu_snap *sa = NULL, *sb = NULL;
  opf_pmu_acc *acc_s = NULL, *acc_e = NULL; /* sums over samples / empty windows */
  /* bwd alone needs the forward state (outputs, saved workspace) of the same inputs. */
  if (pass == OPF_PASS_BWD) rc = opf_case_call(c, OPF_PASS_FWD); /* the native kernels or the unfused chain */

  /* Warm-up, which also estimates the time per call for the batch size: one call, then
   * chunks of about sample_time each. It ends once two consecutive chunks agree per call within
   * warmup_settle (caches, page tables, branch predictors and the clock have settled) and
   * OPF_WARMUP_MIN has passed, or after s->warmup seconds at the latest. */
  int64_t wcalls = 0;
  double t0 = opf_now(), t = t0, prev = 0, est = 0;
  rc = opf_case_call(c, pass);
  wcalls = 1;
  t = opf_now();
  est = t - t0;
  while (!rc && (s->warmup_calls > 0 ? wcalls < s->warmup_calls : t - t0 < s->warmup)) {
    int64_t m = 1;
    if (s->warmup_calls > 0) m = s->warmup_calls - wcalls;
    else if (est > 0 && est < s->sample_time) m = (int64_t)ceil(s->sample_time / est);
    if (m > 1000000) m = 1000000;
    double cb = opf_now();
    for (int64_t j = 0; j < m && !rc; j++) rc = opf_case_call(c, pass);
    wcalls += m;
    t = opf_now();
    est = (t - cb) / (double)m;
    if (s->warmup_calls <= 0 && s->warmup_settle > 0 && prev > 0 && t - t0 >= OPF_WARMUP_MIN &&
        fabs(est / prev - 1) <= s->warmup_settle)
      break;
    prev = est;
  }
  r->warmup_s = t - t0;
  r->warmup_calls = wcalls;
  if (rc) goto kernel_failed;
  int64_t k = 1;
  if (s->batch > 0) {
    k = s->cache == OPF_CACHE_WARM ? s->batch : 1;
  } else if (s->cache == OPF_CACHE_WARM && est > 0 && est < s->sample_time) {
    k = (int64_t)ceil(s->sample_time / est);
    if (k > 1000000) k = 1000000;
  }
  r->batch = k;

  int cap = s->max_runs > 0 ? s->max_runs : 1000;
  size_t nev = pmu ? opf_pmu_count(pmu) : 0;
  if (nev > OPF_PMU_MAX_EVENTS) nev = OPF_PMU_MAX_EVENTS;
  int pmu_live = pmu && opf_pmu_n_open(pmu) > 0;
  double ev_sum[OPF_PMU_MAX_EVENTS] = {0}, ev_resid[OPF_PMU_MAX_EVENTS] = {0};
  sa = pmu_live ? opf_pmu_snap_new() : NULL;
  sb = pmu_live ? opf_pmu_snap_new() : NULL;
  /* size the end snapshot now: its first read would allocate inside the first window */
  if (sb) opf_pmu_read(pmu, sb);
  if (pmu_live && (!sa || !sb)) {
    rc = OPF_ENOMEM;
    snprintf(c->err.msg, sizeof c->err.msg, "cannot allocate the counter sample buffer");
    goto kernel_failed;
  }
  /* Attempts: the sampling loop, again while it ran contended (--contention-retries); the
   * attempt with the least contention is kept, the other's buffers freed. */
  attempt at[2];
  memset(at, 0, sizeof at);
  int keep = -1, cur = 0;
  int retries = s->contention_retries < 0 ? 0 : s->contention_retries;
  if (retries > OPF_MAX_ATTEMPTS - 1) retries = OPF_MAX_ATTEMPTS - 1;
  /* Region hooks (perf record control, the sampling profiler, callgrind) would see the
   * discarded attempts' samples too: what they record must be the reported samples. */
  if (s->hooks || s->backend[0]) retries = 0;
  for (int ai = 0;; ai++) {
    attempt *a = &at[cur];
    if (attempt_alloc(a, cap, nev, pmu_live)) {
      rc = OPF_ENOMEM;
      snprintf(c->err.msg, sizeof c->err.msg, "cannot allocate the sample buffer");
    } else {
      if (ai) {
        struct timespec pause = {0, (long)(OPF_CONTENTION_PAUSE * 1e9)};
        nanosleep(&pause, NULL);
      }
      rc = sample_loop(s, c, pass, k, &fl, pmu_live ? pmu : NULL, sa, sb, nev, cap, a);
    }
    if (rc) {
      attempt_free(&at[0]);
      attempt_free(&at[1]);
      goto kernel_failed;
    }
    r->attempts = ai + 1;
    r->attempt_contention[ai] = a->sched_ok ? a->contention : -1;
    r->attempt_median[ai] = a->n ? a->median : 0;
    if (keep < 0 || (a->sched_ok && at[keep].sched_ok && a->contention < at[keep].contention)) {
      if (keep >= 0) attempt_free(&at[keep]);
      keep = cur;
      r->attempt_kept = ai;
    } else {
      attempt_free(a);
    }
    const attempt *b = &at[keep];
    if (ai >= retries || !b->sched_ok || b->contention <= s->contention_threshold) break;
    cur = 1 - keep;
  }
  attempt *best = &at[keep];
  /* the kept attempt's arrays become the result's and the figures below are its own */
  r->samples = best->samples, r->cpu_samples = best->cpu, r->sample_start = best->start;
  best->samples = best->cpu = best->start = NULL;
  ev_samples = best->ev, best->ev = NULL;
  acc_s = best->acc_s, acc_e = best->acc_e, best->acc_s = best->acc_e = NULL;
  double *ev_run = best->ev_run;
  int *ev_n = best->ev_n, *ev_partial = best->ev_partial, *ev_nr = best->ev_nr;
  double *ev_main = ev_samples ? ev_samples + nev * (size_t)cap : NULL;
  double *ev_empty = ev_samples ? ev_samples + 2 * nev * (size_t)cap : NULL;
  const int n = best->n;
  r->total_time = best->total;
  snprintf(r->stop, sizeof r->stop, "%s", best->stop);
  r->ci_lo = best->ci_lo, r->ci_hi = best->ci_hi;
  struct rusage ru0 = best->ru0, ru1 = best->ru1;
  opf_alloc_stats a1 = best->a1, a2 = best->a2;
  r->sched_ok = best->sched_ok;
  if (best->sched_ok) {
    double ncalls = (double)n * (double)k;
    r->runq_wait_s = (best->s1.runq_s - best->s0.runq_s) / ncalls;
    r->oncpu_s = (best->s1.oncpu_s - best->s0.oncpu_s) / ncalls;
    r->contention = best->contention;
    r->contention_threads = best->threads;
    r->contended = best->contention > s->contention_threshold;
  } else {
    memcpy(r->sched_reason, best->sched_reason, sizeof r->sched_reason);
  }

  r->n_samples = n;
  opf_stats_compute(r->samples, n, &r->time);
  r->n_reps = 1;
  r->rep_median[0] = r->time.median;
  double calls = (double)n * (double)k;
  r->call_alloc_bytes = (double)(a2.bytes_allocated - a1.bytes_allocated) / calls;
  r->call_allocs = (double)(a2.n_allocs - a1.n_allocs) / calls;
  r->peak_live_bytes = a2.peak_live_bytes;
  r->max_rss_bytes = (uint64_t)ru1.ru_maxrss * 1024;
  r->minor_faults = (double)(ru1.ru_minflt - ru0.ru_minflt) / calls;
  r->major_faults = (double)(ru1.ru_majflt - ru0.ru_majflt) / calls;
  opf_stats cpu_st;
  opf_stats_compute(r->cpu_samples, n, &cpu_st);
  for (size_t i = 0; i < nev; i++) {
    opf_event_result *er = &r->events[i];
    if (er->status == OPF_EV_NOT_SUPPORTED || er->status == OPF_EV_CONFIG_ERROR ||
        er->status == OPF_EV_NOT_COUNTED)
      continue;
    er->n_partial = ev_partial[i];
    if (ev_nr[i] >= 3) { /* median of the empty windows, subtracted from every sample */
      opf_stats rs;
      opf_stats_compute(ev_empty + i * (size_t)cap, ev_nr[i], &rs);
      ev_resid[i] = rs.median;
    }
    er->residual = ev_resid[i];
    for (int j = 0; j < ev_n[i]; j++) {
      double *v = &ev_samples[i * (size_t)cap + (size_t)j], *vm = &ev_main[i * (size_t)cap + (size_t)j];
      *v = *v - ev_resid[i] > 0 ? (*v - ev_resid[i]) / (double)k : 0;
      *vm = *vm - ev_resid[i] > 0 ? (*vm - ev_resid[i]) / (double)k : 0;
      ev_sum[i] += *v * (double)k;
    }
    if (!ev_n[i]) {
      er->status = OPF_EV_NOT_COUNTED;
      snprintf(er->reason, sizeof er->reason, "%s",
               ev_partial[i] ? "its group never had a counter on a thread that ran"
                             : "never read a value while measuring");
      continue;
    }
    opf_stats es;
    opf_stats_compute(ev_main + i * (size_t)cap, ev_n[i], &es);
    er->main_per_call = es.median;
    opf_stats_compute(ev_samples + i * (size_t)cap, ev_n[i], &es);
    er->has_value = 1;
    er->per_call = es.median;
    er->mean_per_call = ev_sum[i] / ((double)ev_n[i] * (double)k);
    er->running_pct = 100.0 * ev_run[i] / r->total_time;
    er->raw = malloc(sizeof *er->raw * (size_t)ev_n[i]); /* for comparisons: `opperf compare` */
    if (er->raw) {
      memcpy(er->raw, ev_samples + i * (size_t)cap, sizeof *er->raw * (size_t)ev_n[i]);
      er->n_raw = ev_n[i];
    }
    er->status = er->running_pct >= 99.9 ? OPF_EV_COUNTED : OPF_EV_SCALED;
    /* Multiplexed: a sample shorter than the rotation holds the group for part of it only,
     * and scaling each sample on its own is noisy and biased (the PMU lab measured 18% off).
     * The figure is then the ratio estimate over the whole case, per thread, as perf stat
     * scales: sum of values x sum of enabled / sum of running, less the empty windows' mean. */
    opf_pmu_dval ds, de;
    int ns = 0, ne = 0;
    if (er->status == OPF_EV_SCALED && opf_pmu_acc_value(pmu, acc_s, i, &ds, &ns) == OPF_DV_OK &&
        ns > 0) {
      double res = 0, resm = 0;
      if (opf_pmu_acc_value(pmu, acc_e, i, &de, &ne) == OPF_DV_OK && ne > 0)
        res = de.value / ne, resm = de.main_value / ne;
      double v = (ds.value - ns * res) / ((double)ns * (double)k);
      double vm = (ds.main_value - ns * resm) / ((double)ns * (double)k);
      er->per_call = er->mean_per_call = v > 0 ? v : 0;
      er->main_per_call = vm > 0 ? vm : 0;
      er->residual = res;
    }
    if (ev_partial[i]) {
      er->status = OPF_EV_PARTIAL;
      snprintf(er->reason, sizeof er->reason,
               "%d of %d samples left out: a thread ran while the group had no counter",
               ev_partial[i], ev_partial[i] + ev_n[i]);
    }
    /* Thread coverage check: task-clock summed over the counted threads against the process
     * CPU time of the same samples (only where the harness's reads are negligible). */
    if (!strcmp(er->kind, "task-clock") && cpu_st.median * (double)k >= 1e-3 &&
        er->per_call < 0.9e9 * cpu_st.median) {
      er->status = OPF_EV_PARTIAL;
      snprintf(er->reason, sizeof er->reason,
               "covers %.0f%% of the process CPU time: threads not counted",
               100.0 * er->per_call / (1e9 * cpu_st.median));
    }
  }
  r->status = OPF_ST_OK;
  if (s->save_dir[0] && save_tensors(s, c, pass, 1, r, &err)) {
    r->status = OPF_ST_ERROR;
    snprintf(r->message, sizeof r->message, "%.500s", err.msg);
  }
  if (s->hooks && s->hooks->case_end) s->hooks->case_end(s->hooks->ctx, r);
  opf_pmu_acc_free(acc_s);
  opf_pmu_acc_free(acc_e);
  opf_pmu_snap_free(sa);
  opf_pmu_snap_free(sb);
  free(ev_samples);
  free(fl.buf);
  attempt_free(&at[0]);
  attempt_free(&at[1]);
  opf_case_release(c);
  return OPF_OK;

kernel_failed:
  opf_pmu_acc_free(acc_s);
  opf_pmu_acc_free(acc_e);
  opf_pmu_snap_free(sa);
  opf_pmu_snap_free(sb);
  free(ev_samples);
  free(fl.buf);
  r->status = OPF_ST_ERROR;
  snprintf(r->message, sizeof r->message, "%s failed: %.480s", opf_pass_name(pass),
           c->err.msg[0] ? c->err.msg : opf_strerror(rc));
  opf_case_release(c);
  return OPF_OK;
}

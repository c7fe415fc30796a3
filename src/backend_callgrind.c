/* backend_callgrind.c: the library side of the callgrind back-end: client requests around the
 * measured samples (region hooks), the parser of callgrind dump files, and the simulated
 * per-call counters attached to results. Never prints; the CLI runs the process under valgrind. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opperf/backend.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define OPF_HAVE_VALGRIND 1
#endif
#endif
#ifndef OPF_HAVE_VALGRIND
#define OPF_HAVE_VALGRIND 0
#endif

const char *const opf_cg_report_events[OPF_CG_NREPORT] = {
    "Ir", "D1mr", "D1mw", "DLmr", "DLmw", "I1mr", "ILmr", "Bc", "Bcm", "Bi", "Bim"};

int opf_event_is_simulated(const char *name) { return name && !strncmp(name, "sim:", 4); }

/* ---- dump parsing ---- */

/* "32768 B, 64 B, 8-way associative" */
static void parse_cache(const char *s, opf_cg_cache *c) {
  unsigned long long size;
  int line, assoc;
  if (sscanf(s, "%llu B, %d B, %d-way", &size, &line, &assoc) == 3) {
    c->size = size;
    c->line = line;
    c->assoc = assoc;
  }
}

/* Cost numbers of a "totals:"/"summary:" line; missing trailing values are zero. */
static int parse_costs(const char *s, uint64_t *v, int max) {
  int n = 0;
  while (*s) {
    while (*s == ' ' || *s == '\t') s++;
    if (!*s || *s == '\n' || *s == '\r') break;
    if (!isdigit((unsigned char)*s) || n == max) return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno) return -1;
    v[n++] = x;
    s = end;
  }
  for (int i = n; i < max; i++) v[i] = 0;
  return n;
}

int opf_cg_parse_stream(FILE *f, const char *name, opf_cg_dump *d, opf_err *err) {
  memset(d, 0, sizeof *d);
  char line[4096];
  int lineno = 0, have_events = 0, have_totals = 0, have_summary = 0, parts = 0, magic = 0;
  uint64_t summary[OPF_CG_MAX_EVENTS] = {0};
  while (fgets(line, sizeof line, f)) {
    lineno++;
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n') {
      /* Cost lines of long symbol names can exceed the buffer; skip the rest of them. */
      int ch;
      while ((ch = fgetc(f)) != EOF && ch != '\n') {}
    }
    line[strcspn(line, "\r\n")] = '\0';
    if (lineno == 1 && !strncmp(line, "# callgrind format", 18)) {
      magic = 1;
      continue;
    }
    if (!strncmp(line, "version:", 8)) {
      magic = 1;
    } else if (!strncmp(line, "creator:", 8)) {
      snprintf(d->creator, sizeof d->creator, "%s", line + 8 + strspn(line + 8, " "));
    } else if (!strncmp(line, "part:", 5)) {
      if (++parts > 1)
        return opf_err_set(err, OPF_EINVAL, "%s:%d: several dump parts in one file (--combine-dumps is not supported)", name, lineno);
      d->part = atoi(line + 5);
    } else if (!strncmp(line, "desc: Trigger:", 14)) {
      snprintf(d->trigger, sizeof d->trigger, "%s", line + 14 + strspn(line + 14, " "));
    } else if (!strncmp(line, "desc: I1 cache:", 15)) {
      parse_cache(line + 15, &d->i1);
    } else if (!strncmp(line, "desc: D1 cache:", 15)) {
      parse_cache(line + 15, &d->d1);
    } else if (!strncmp(line, "desc: LL cache:", 15)) {
      parse_cache(line + 15, &d->ll);
    } else if (!strncmp(line, "events:", 7)) {
      if (have_events)
        return opf_err_set(err, OPF_EINVAL, "%s:%d: a second 'events:' line", name, lineno);
      have_events = 1;
      char *save = NULL;
      for (char *t = strtok_r(line + 7, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (d->n_events == OPF_CG_MAX_EVENTS || strlen(t) >= sizeof d->events[0])
          return opf_err_set(err, OPF_EINVAL, "%s:%d: too many or too long event names", name, lineno);
        snprintf(d->events[d->n_events++], sizeof d->events[0], "%s", t);
      }
      if (!d->n_events) return opf_err_set(err, OPF_EINVAL, "%s:%d: empty 'events:' line", name, lineno);
    } else if (!strncmp(line, "totals:", 7) || !strncmp(line, "summary:", 8)) {
      int tot = line[0] == 't';
      if (!have_events)
        return opf_err_set(err, OPF_EINVAL, "%s:%d: '%s' before the 'events:' line", name, lineno, tot ? "totals:" : "summary:");
      uint64_t *dst = tot ? d->totals : summary;
      if (parse_costs(line + (tot ? 7 : 8), dst, d->n_events) < 0)
        return opf_err_set(err, OPF_EINVAL, "%s:%d: malformed cost line '%.200s'", name, lineno, line);
      if (tot) have_totals = 1;
      else have_summary = 1;
    }
  }
  if (ferror(f)) return opf_err_set(err, OPF_EIO, "cannot read '%s'", name);
  if (!magic) return opf_err_set(err, OPF_EINVAL, "'%s' is not a callgrind output file", name);
  if (!have_events) return opf_err_set(err, OPF_EINVAL, "%s: no 'events:' line", name);
  if (!have_totals && !have_summary) return opf_err_set(err, OPF_EINVAL, "%s: no 'totals:' or 'summary:' line", name);
  /* callgrind 3.19 writes "summary: 0" in the header and the real sums in "totals:". */
  if (!have_totals) memcpy(d->totals, summary, sizeof summary);
  return OPF_OK;
}

int opf_cg_parse_file(const char *path, opf_cg_dump *d, opf_err *err) {
  FILE *f = fopen(path, "r");
  if (!f) return opf_err_set(err, OPF_EIO, "cannot open callgrind dump '%s': %s", path, strerror(errno));
  int rc = opf_cg_parse_stream(f, path, d, err);
  fclose(f);
  return rc;
}

int opf_cg_event_index(const opf_cg_dump *d, const char *event) {
  for (int i = 0; i < d->n_events; i++)
    if (!strcmp(d->events[i], event)) return i;
  return -1;
}

static int cache_is(const opf_cg_cache *c, const char *spec) {
  unsigned long long size;
  int assoc, line;
  if (sscanf(spec, "%llu,%d,%d", &size, &assoc, &line) != 3) return 0;
  return c->size == size && c->assoc == assoc && c->line == line;
}

int opf_cg_geometry_ok(const opf_cg_dump *d) {
  return cache_is(&d->i1, OPF_CG_I1) && cache_is(&d->d1, OPF_CG_D1) && cache_is(&d->ll, OPF_CG_LL);
}

int opf_cg_totals_add(opf_cg_totals *t, const opf_cg_dump *d) {
  if (t->n_dumps == t->cap) {
    int cap = t->cap ? 2 * t->cap : 8;
    uint64_t *p = realloc(t->per_dump, sizeof *p * OPF_CG_NREPORT * (size_t)cap);
    if (!p) return OPF_ENOMEM;
    t->per_dump = p;
    t->cap = cap;
  }
  uint64_t *row = t->per_dump + (size_t)t->n_dumps * OPF_CG_NREPORT;
  t->n_dumps++;
  for (int k = 0; k < OPF_CG_NREPORT; k++) {
    int i = opf_cg_event_index(d, opf_cg_report_events[k]);
    /* An event counts only when every summed dump has it. */
    t->present[k] = i >= 0 && (t->n_dumps == 1 || t->present[k]);
    row[k] = i >= 0 ? d->totals[i] : 0;
    t->v[k] += row[k];
  }
  return OPF_OK;
}

void opf_cg_totals_release(opf_cg_totals *t) {
  free(t->per_dump);
  t->per_dump = NULL;
  t->cap = 0;
}

/* ---- region hooks ---- */

int opf_cg_running(void) {
#if OPF_HAVE_VALGRIND
  return RUNNING_ON_VALGRIND ? 1 : 0;
#else
  return 0;
#endif
}

void opf_cg_region_init(opf_cg_region *g, const char *prefix) {
  memset(g, 0, sizeof *g);
  snprintf(g->prefix, sizeof g->prefix, "%s", prefix ? prefix : "");
  g->active = opf_cg_running();
  g->case_first = 1;
}

/* The client requests are single special instruction sequences: cheap, and no-ops when not
 * running under valgrind. Everything that costs instructions (formatting the label) happens
 * before ZERO_STATS so that it is not counted. */
static void cg_sample_begin(void *ctx) {
  opf_cg_region *g = ctx;
  /* Samples of a next case before the last one was collected: their dumps would be counted
   * as the last case's, and this case would find none. collect says so. */
  if (g->case_ended) g->overlap++;
  int s = g->sample++;
  if (!g->active) return;
  if (s == 0) {
    /* Switching instrumentation on also empties the simulated caches: this sample warms them.
     * It is dumped (and the dump ignored) like any other so that the counted samples find
     * the hooks' own code and branches warm as well: they then count identically. */
#if OPF_HAVE_VALGRIND
    CALLGRIND_START_INSTRUMENTATION;
#endif
    g->instr_on = 1;
    snprintf(g->label, sizeof g->label, "opperf-r%d-warm", g->result);
  } else {
    snprintf(g->label, sizeof g->label, "opperf-r%d-s%d", g->result, s);
  }
#if OPF_HAVE_VALGRIND
  CALLGRIND_ZERO_STATS;
#endif
}

static void cg_sample_end(void *ctx) {
  opf_cg_region *g = ctx;
  if (!g->active || !g->instr_on) return;
#if OPF_HAVE_VALGRIND
  CALLGRIND_DUMP_STATS_AT(g->label);
#endif
  g->n_dumps++;
  g->case_dumps++;
}

static void cg_stop(opf_cg_region *g) {
  if (!g->instr_on) return;
#if OPF_HAVE_VALGRIND
  CALLGRIND_STOP_INSTRUMENTATION;
#endif
  g->instr_on = 0;
}

static void cg_case_end(void *ctx, const opf_result *r) {
  (void)r;
  opf_cg_region *g = ctx;
  g->case_ended = 1;
  cg_stop(g);
}

opf_region_hooks opf_cg_hooks(opf_cg_region *g) {
  opf_region_hooks h = {cg_sample_begin, cg_sample_end, cg_case_end, g};
  return h;
}

int opf_cg_region_collect(opf_cg_region *g, opf_cg_totals *t, int *counted, opf_err *err) {
  cg_stop(g);
  memset(t, 0, sizeof *t);
  *counted = 0;
  int rc = OPF_OK;
  if (g->overlap)
    rc = opf_err_set(err, OPF_EINVAL, "callgrind region: %d sample%s of the next case began before "
                     "this case's dumps were collected (collect after each measurement)",
                     g->overlap, g->overlap == 1 ? "" : "s");
  for (int i = 0; i < g->case_dumps; i++) {
    char path[300], want[64];
    int n = g->case_first + i;
    snprintf(path, sizeof path, "%s.%d", g->prefix, n);
    if (i) snprintf(want, sizeof want, "Client Request: opperf-r%d-s%d", g->result, i);
    else snprintf(want, sizeof want, "Client Request: opperf-r%d-warm", g->result);
    opf_cg_dump d;
    if (!rc) {
      rc = opf_cg_parse_file(path, &d, err);
      if (!rc && strcmp(d.trigger, want))
        rc = opf_err_set(err, OPF_EINVAL, "callgrind dump '%s' is '%s', expected '%s'", path, d.trigger, want);
      if (!rc && !opf_cg_geometry_ok(&d))
        rc = opf_err_set(err, OPF_EINVAL, "callgrind dump '%s' simulated caches other than I1=%s D1=%s LL=%s",
                         path, OPF_CG_I1, OPF_CG_D1, OPF_CG_LL);
      if (!rc && i) { /* dump 0 is the cache-warming sample */
        snprintf(g->creator, sizeof g->creator, "%s", d.creator);
        rc = opf_cg_totals_add(t, &d);
        if (rc) opf_err_set(err, rc, "out of memory reading callgrind dumps");
        else (*counted)++;
      }
    }
    if (!g->keep) unlink(path);
  }
  g->case_first += g->case_dumps;
  g->case_dumps = 0;
  g->sample = 0;
  g->case_ended = 0;
  g->overlap = 0;
  g->result++;
  return rc;
}

/* The timer read of the harness (opf_now) on both sides of the calls; noinline keeps the
 * pseudo-case's code shaped like the harness loop. */
static __attribute__((noinline)) double empty_sample(const opf_region_hooks *h) {
  h->sample_begin(h->ctx);
  double b = opf_now();
  double e = opf_now();
  h->sample_end(h->ctx);
  return e - b;
}

/* Median over the dumps of event k, minus sub per dump (clamped at 0); x: scratch of n_dumps. */
static double median_event(const opf_cg_totals *t, int k, double sub, double *x) {
  for (int i = 0; i < t->n_dumps; i++) {
    double v = (double)t->per_dump[(size_t)i * OPF_CG_NREPORT + (size_t)k] - sub;
    x[i] = v > 0 ? v : 0;
  }
  opf_stats st;
  if (opf_stats_compute(x, t->n_dumps, &st)) return 0;
  return st.median;
}

int opf_cg_measure_overhead(opf_cg_region *g, int n, opf_cg_totals *per_sample, opf_err *err) {
  memset(per_sample, 0, sizeof *per_sample);
  if (!g->active) return OPF_OK;
  opf_region_hooks h = opf_cg_hooks(g);
  volatile double sink = 0;
  for (int i = 0; i < n + 1; i++) sink += empty_sample(&h);
  (void)sink;
  h.case_end(h.ctx, NULL);
  opf_cg_totals t = {0};
  int counted;
  int rc = opf_cg_region_collect(g, &t, &counted, err);
  if (!rc && (counted != n || n < 1))
    rc = opf_err_set(err, OPF_EINVAL, "callgrind overhead: %d dumps, expected %d", counted, n);
  double *x = rc ? NULL : malloc(sizeof *x * (size_t)n);
  if (!rc && !x) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  /* The median sample: the first one may still miss in the caches the hooks use. */
  for (int k = 0; !rc && k < OPF_CG_NREPORT; k++) {
    per_sample->present[k] = t.present[k];
    per_sample->v[k] = (uint64_t)median_event(&t, k, 0, x);
  }
  if (!rc) per_sample->n_dumps = 1;
  free(x);
  opf_cg_totals_release(&t);
  return rc;
}

/* ---- results ---- */

void opf_cg_context_events(opf_pmu_event *ev, int *n, int max, const char *creator,
                           const opf_cg_totals *overhead) {
  for (int k = 0; k < OPF_CG_NREPORT && *n < max; k++) {
    opf_pmu_event *e = &ev[(*n)++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "sim:%s", opf_cg_report_events[k]);
    snprintf(e->fstr, sizeof e->fstr, "callgrind:%s", opf_cg_report_events[k]);
    e->group = -1;
    e->status = OPF_EV_COUNTED;
    char sub[64] = "";
    if (overhead && overhead->present[k] && overhead->v[k])
      snprintf(sub, sizeof sub, "; harness %" PRIu64 "/sample subtracted", overhead->v[k]);
    snprintf(e->reason, sizeof e->reason,
             "simulated by %s: I1=%s D1=%s LL=%s (size,assoc,line), no prefetch%s",
             creator && creator[0] ? creator : "valgrind callgrind", OPF_CG_I1, OPF_CG_D1,
             OPF_CG_LL, sub);
  }
}

int opf_cg_attach(opf_result *r, const opf_cg_totals *t, int counted, const opf_cg_totals *overhead) {
  if (r->status != OPF_ST_OK) return OPF_OK;
  if (counted < 1 || r->n_samples != counted + 1 || r->batch < 1 || t->n_dumps != counted ||
      !t->per_dump)
    return OPF_EINVAL;
  double *x = malloc(sizeof *x * (size_t)counted);
  if (!x) return OPF_ENOMEM;
  /* Drop the cache-warming sample so that samples, statistics and counters describe the same
   * calls. */
  r->total_time -= r->samples[0] * (double)r->batch;
  memmove(r->samples, r->samples + 1, sizeof *r->samples * (size_t)counted);
  if (r->sample_start) memmove(r->sample_start, r->sample_start + 1, sizeof *r->sample_start * (size_t)counted);
  r->n_samples = counted;
  opf_stats_compute(r->samples, r->n_samples, &r->time);
  double calls = (double)counted * (double)r->batch;
  r->simulated = 1;
  for (int k = 0; k < OPF_CG_NREPORT && r->n_events < OPF_PMU_MAX_EVENTS; k++) {
    opf_event_result *e = &r->events[r->n_events++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "sim:%s", opf_cg_report_events[k]);
    e->group = -1;
    if (!t->present[k]) {
      e->status = OPF_EV_NOT_COUNTED;
      snprintf(e->reason, sizeof e->reason, "callgrind did not report %s", opf_cg_report_events[k]);
      continue;
    }
    double sub = overhead && overhead->present[k] ? (double)overhead->v[k] : 0;
    double total = (double)t->v[k] - sub * counted;
    e->status = OPF_EV_COUNTED;
    e->has_value = 1;
    /* Like measured counters: the median sample per call, and the mean kept alongside. */
    e->per_call = median_event(t, k, sub, x) / (double)r->batch;
    e->mean_per_call = (total > 0 ? total : 0) / calls;
    e->running_pct = 100.0;
  }
  free(x);
  snprintf(r->message, sizeof r->message,
           "simulated: counters from valgrind callgrind (%d samples of %lld call%s after one "
           "cache-warming sample); times were measured under valgrind and are not real",
           counted, (long long)r->batch, r->batch == 1 ? "" : "s");
  return OPF_OK;
}

/* report_text.c: the human table (aligned, with units) and the Markdown report. Both need
 * every record before laying out columns, so records are kept until the end. */
#include <stdlib.h>
#include <string.h>

#include "opperf/topdown.h"
#include "report_impl.h"
#include "report_peer.h"
#include "textable.h"

typedef struct {
  opf_result *rows;
  int n, cap;
} text_priv;

static int text_begin(opf_emitter *e) {
  e->priv = calloc(1, sizeof(text_priv));
  return e->priv ? 0 : -1;
}

static int text_record(opf_emitter *e, const opf_result *r) {
  text_priv *p = e->priv;
  if (p->n == p->cap) {
    int cap = p->cap ? p->cap * 2 : 64;
    opf_result *rows = realloc(p->rows, sizeof *rows * (size_t)cap);
    if (!rows) return -1;
    p->rows = rows;
    p->cap = cap;
  }
  p->rows[p->n] = *r;
  p->rows[p->n].samples = NULL; /* not needed for a table */
  p->rows[p->n].folded = NULL;
  p->n++;
  return 0;
}

static void text_release(opf_emitter *e) {
  text_priv *p = e->priv;
  if (p) free(p->rows);
  free(p);
}

/* Events measured in nanoseconds by the kernel (software clocks) print as times. */
static int is_time_event(const char *name) { return strstr(name, "clock") != NULL; }

static void print_header(const opf_emitter *e, FILE *f, int md) {
  const opf_context *c = e->ctx;
  const opf_settings *s = &c->settings;
  fprintf(f, "%sopperf %s (%s) on %s, %d CPUs; %d threads%s%s; %s cache; seed %llu\n",
          md ? "**" : "", c->tool_version, c->git_hash, c->cpu_model, c->cpus_online, s->threads,
          s->cpus[0] ? ", pinned to " : "", s->cpus, s->cache == OPF_CACHE_COLD ? "cold" : "warm",
          (unsigned long long)s->seed);
  if (md) fprintf(f, "**\n\n");
  /* The 1-minute load after the run includes the run's own threads; only the load before it
   * says whether something else was competing. */
  fprintf(f, "%sBLAS: OpenBLAS %s%s%s (%s), %d threads; load average %.1f before the run%s, %.1f after "
             "(including this run)\n",
          md ? "- " : "", c->blas_core, c->blas_core_note[0] ? ", " : "", c->blas_core_note, c->blas_parallel, c->blas_threads, c->loadavg_start,
          c->loadavg_start > 0.5 * c->cpus_online ? " (busy machine: expect noise)" : "",
          c->loadavg_end);
  if (c->n_overhead) {
    fprintf(f, "%sharness overhead per sample:", md ? "- " : "");
    for (int i = 0; i < c->n_overhead; i++) {
      char b[32];
      fprintf(f, "%s %s %s", i ? "," : "", c->overhead[i].what,
              opf_fmt_time(c->overhead[i].per_sample_s, b, sizeof b));
    }
    fputc('\n', f);
  }
  if (!c->have_machine)
    fprintf(f, "%sno roofline %%: run `opperf machine` once to measure this machine's ceilings\n",
            md ? "- " : "");
  /* --backend callgrind: what the simulated counters are, and that times are not shown. */
  for (int i = 0; i < c->n_events; i++)
    if (!strncmp(c->events[i].name, "sim:", 4)) {
      fprintf(f, "%ssim:* counters are %s; times were taken under valgrind and are not shown\n",
              md ? "- " : "", c->events[i].reason);
      break;
    }
  int over = 0, placed = 0;
  const text_priv *p = e->priv;
  for (int k = 0; k < p->n; k++) {
    const opf_result *r = &p->rows[k];
    placed |= r->roof.level_name[0] != 0;
    over |= r->roofline_time > 0 && r->time.median > 0 && r->roofline_time > 1.05 * r->time.median;
  }
  if (placed)
    fprintf(f, "%sroofline %%: cache-aware (`opperf machine` ceilings): each case against the level its "
               "working set fits in (per thread), bound = that level or compute\n", md ? "- " : "");
  if (over)
    fprintf(f, "%sabove 100%%: faster than the level's measured ceiling (part of the data in an inner "
               "level, or a noisy run)\n", md ? "- " : "");
  int hw_missing = 0;
  for (int i = 0; i < c->n_events; i++) {
    const opf_pmu_event *ev = &c->events[i];
    if (ev->status == OPF_EV_NOT_SUPPORTED || ev->status == OPF_EV_CONFIG_ERROR) {
      fprintf(f, "%scounter %s: %s (%s)\n", md ? "- " : "", ev->name,
              opf_ev_status_name(ev->status), ev->reason);
      hw_missing = 1;
    }
  }
  if (hw_missing)
    fprintf(f, "%sno value is shown for these counters; software events and --backend callgrind (simulated counts) still work%s\n",
            md ? "- " : "", md ? "" : "; `opperf events` shows what opens here");
  if (opf_td_requested(c->events, c->n_events)) {
    /* the model and its source once; each distinct reason why a case has no top-down */
    static char shown[8][320];
    int n_shown = 0, model_done = 0;
    for (int k = 0; k < p->n; k++) {
      opf_td_result td;
      if (!opf_td_eval(&p->rows[k], opf_td_counters_from_note(c->pmu_note), 0, &td)) continue;
      if (td.model && !model_done) {
        fprintf(f, "%stop-down (td:* = %% of slots): %s, %s [%s]; %s\n", md ? "- " : "",
                td.model->cpu, td.model->formula, td.model->source, opf_td_verdict_rule());
        model_done = 1;
      }
      if (!td.model) continue; /* the preset's own line above says why */
      const char *why = td.has_l1 ? td.reason2 : td.reason;
      int dup = !why[0];
      for (int j = 0; j < n_shown && !dup; j++) dup = !strcmp(shown[j], why);
      if (dup || n_shown == 8) continue;
      fprintf(f, "%s%s%s\n", md ? "- " : "", td.has_l1 ? "top-down: " : "", why);
      snprintf(shown[n_shown++], sizeof shown[0], "%s", why);
    }
  }
  int live = 0, kernel = 0;
  for (int i = 0; i < c->n_events; i++) {
    const opf_pmu_event *ev = &c->events[i];
    if (ev->status != OPF_EV_COUNTED || !strncmp(ev->name, "sim:", 4)) continue;
    live = 1;
    kernel |= strstr(ev->plm, "kernel") != NULL;
    if (ev->downgraded)
      fprintf(f, "%scounter %s: %s\n", md ? "- " : "", ev->name, ev->reason);
  }
  if (live) {
    fprintf(f, "%scounters: per call, summed over every thread of the process (threads created later "
               "included) and scaled per thread; user space only%s; the harness's own count "
               "(median of an empty window after every sample) is subtracted\n",
            md ? "- " : "",
            kernel ? " except context-switches, cpu-migrations and ':k' events (kernel mode too)"
                   : " (add ':k' for kernel mode)");
    if (c->pmu_note[0]) fprintf(f, "%s%s\n", md ? "- " : "", c->pmu_note);
    if (c->omp_wait[0] && s->threads > 1)
      fprintf(f, "%sOpenMP wait policy %s (main-thread counts in JSON exclude the workers)\n",
              md ? "- " : "", c->omp_wait);
  }
  fputc('\n', f);
}

/* For a fused operator's native record: the unfused chain's median time on the same case,
 * 0 when the run has none. */
static double unfused_time(const text_priv *p, const opf_result *r) {
  if (strcmp(r->impl, "native")) return 0;
  for (int k = 0; k < p->n; k++) {
    const opf_result *u = &p->rows[k];
    if (!strcmp(u->impl, "unfused") && u->status == OPF_ST_OK && u->pass == r->pass && u->dtype == r->dtype &&
        !strcmp(u->op, r->op) && !strcmp(u->spec, r->spec))
      return u->time.median;
  }
  return 0;
}

static int text_render(opf_emitter *e, int md) {
  text_priv *p = e->priv;
  const opf_context *ctx = e->ctx;
  enum { C_OP, C_DT, C_PASS, C_IN, C_PAR, C_MED, C_PEER, C_RATIO, C_AGREE, C_MIN, C_P90, C_CV, C_N, C_ALLOC, C_PEAK, C_M0 };
  const int nm = opf_metric_count(), C_BOUND = C_M0 + nm, C_TD0 = C_BOUND + 1, C_EV0 = C_TD0 + OPF_TD_N1;
  const int td_on = opf_td_requested(ctx->events, ctx->n_events);
  const int td_cap = opf_td_counters_from_note(ctx->pmu_note);
  int nev = ctx->n_events, ncol = C_EV0 + nev + 1, c_note = C_EV0 + nev;
  opf_textable *t = opf_textable_new(ncol);
  if (!t) return -1;
  opf_textable_header(t, C_OP, "op", 0);
  opf_textable_header(t, C_DT, "dtype", 0);
  opf_textable_header(t, C_PASS, "pass", 0);
  opf_textable_header(t, C_IN, "inputs", 0);
  opf_textable_header(t, C_PAR, "params", 0);
  opf_textable_header(t, C_MED, "median", 1);
  opf_peer_headers(t, C_PEER); /* --baseline: empty columns, dropped, without a peer */
  if (!md) {
    opf_textable_header(t, C_MIN, "min", 1);
    opf_textable_header(t, C_P90, "p90", 1);
  }
  opf_textable_header(t, C_CV, "mad%", 1);
  if (!md) opf_textable_header(t, C_N, "samples", 1);
  for (int m = 0; m < nm; m++)
    if (!md || m < 4) opf_textable_header(t, C_M0 + m, opf_metric_at(m)->label, 1);
  opf_textable_header(t, C_BOUND, "bound", 0); /* the roofline's level, or compute */
  /* topdown preset: level-1 shares of slots, compact (retiring, bad speculation, front end,
   * back end); the verdict goes to the status column. */
  static const char *const td_hdr[OPF_TD_N1] = {"td:ret", "td:bad", "td:fe", "td:be"};
  for (int k = 0; td_on && k < OPF_TD_N1; k++) opf_textable_header(t, C_TD0 + k, td_hdr[k], 1);
  if (!md) {
    opf_textable_header(t, C_ALLOC, "alloc/call", 1);
    opf_textable_header(t, C_PEAK, "peak mem", 1);
  }
  for (int i = 0; i < nev; i++) {
    const opf_pmu_event *ev = &ctx->events[i];
    if (ev->status == OPF_EV_NOT_SUPPORTED || ev->status == OPF_EV_CONFIG_ERROR) continue;
    char h[160];
    snprintf(h, sizeof h, "%s/call", ev->name);
    opf_textable_header(t, C_EV0 + i, h, 1);
  }
  opf_textable_header(t, c_note, "status", 0);
  for (int k = 0; k < p->n; k++) {
    const opf_result *r = &p->rows[k];
    char b[64], inputs[256];
    if (opf_textable_row(t)) break;
    opf_result_inputs(r, inputs, sizeof inputs);
    int alt = r->impl[0] && strcmp(r->impl, "native"); /* unfused, a plugin's implementation */
    opf_textable_cell(t, C_OP, "%s%s%s%s", r->op, alt ? " [" : "", alt ? r->impl : "", alt ? "]" : "");
    opf_textable_cell(t, C_DT, "%s", opf_dtype_name(r->dtype));
    opf_textable_cell(t, C_PASS, "%s", opf_pass_name(r->pass));
    opf_textable_cell(t, C_IN, "%s", inputs);
    opf_textable_cell(t, C_PAR, "%s", r->params);
    opf_peer_cells(t, C_PEER, r);
    if (r->status != OPF_ST_OK) {
      opf_textable_cell(t, c_note, "%s: %s", opf_status_name(r->status), r->message);
      continue;
    }
    if (!r->simulated) { /* --backend callgrind: times under valgrind are not real */
      opf_textable_cell(t, C_MED, "%s", opf_fmt_time(r->time.median, b, sizeof b));
      opf_textable_cell(t, C_MIN, "%s", opf_fmt_time(r->time.min, b, sizeof b));
      opf_textable_cell(t, C_P90, "%s", opf_fmt_time(r->time.p90, b, sizeof b));
      /* Robust spread: scaled MAD relative to the median (the cv is in JSON and CSV; one
     * stalled sample on a shared machine makes it meaningless). */
    opf_textable_cell(t, C_CV, "%.1f%%", r->time.median > 0 ? 100 * r->time.mad / r->time.median : 0);
    }
    opf_textable_cell(t, C_N, "%dx%lld", r->n_samples, (long long)r->batch);
    for (int m = 0; m < nm; m++) {
      double v;
      if (!opf_metric_value(r, m, &v)) continue;
      if (!strcmp(opf_metric_at(m)->unit, "%")) opf_textable_cell(t, C_M0 + m, "%.1f%%", v);
      else opf_textable_cell(t, C_M0 + m, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.3g", v);
    }
    if (r->roofline_time > 0 && !r->simulated) opf_textable_cell(t, C_BOUND, "%s", opf_roofline_label(&r->roof));
    opf_td_result td;
    char td_note[160] = "";
    if (td_on && opf_td_eval(r, td_cap, 0, &td)) {
      if (td.has_l1) {
        for (int k = 0; k < OPF_TD_N1; k++) opf_textable_cell(t, C_TD0 + k, "%.0f%%", 100 * td.l1[k]);
        if (td.verdict[0]) snprintf(td_note, sizeof td_note, ", %s", td.verdict);
      } else {
        snprintf(td_note, sizeof td_note, ", top-down n/a (see header)");
      }
    }
    opf_textable_cell(t, C_ALLOC, "%s", opf_fmt_bytes(r->call_alloc_bytes, b, sizeof b));
    opf_textable_cell(t, C_PEAK, "%s", opf_fmt_bytes((double)r->peak_live_bytes, b, sizeof b));
    for (int i = 0; i < r->n_events && i < nev; i++) {
      const opf_event_result *ev = &r->events[i];
      if (!ev->has_value) {
        if (ev->status == OPF_EV_NOT_COUNTED) opf_textable_cell(t, C_EV0 + i, "not counted");
        continue;
      }
      const char *mark = ev->status == OPF_EV_SCALED    ? " (scaled)"
                         : ev->status == OPF_EV_PARTIAL ? " (partial)"
                                                        : "";
      if (is_time_event(ev->name))
        opf_textable_cell(t, C_EV0 + i, "%s%s", opf_fmt_time(ev->per_call * 1e-9, b, sizeof b), mark);
      else if (r->simulated) /* simulated counts: exact integers per sample, no exponent */
        opf_textable_cell(t, C_EV0 + i, ev->per_call >= 100 ? "%.0f" : "%.3g", ev->per_call);
      else
        opf_textable_cell(t, C_EV0 + i, "%.4g%s", ev->per_call, mark);
    }
    if (r->simulated) opf_textable_cell(t, c_note, "ok, simulated%s", td_note);
    else {
      double tu = unfused_time(p, r);
      char gain[48] = "";
      if (tu > 0 && r->time.median > 0) snprintf(gain, sizeof gain, ", fusion gain %.2fx", tu / r->time.median);
      char views[128] = ""; /* gradients handed back as views: no data moved for them */
      if (r->grad_views[0]) snprintf(views, sizeof views, ", views %s", r->grad_views);
      char cont[64] = ""; /* CPU contention over the sampling loop above the threshold */
      if (r->attempts > 0 && !r->sched_ok) snprintf(cont, sizeof cont, ", contention n/a");
      else if (r->contended)
        snprintf(cont, sizeof cont, ", contended %.0f%% (%d attempt%s)", 100 * r->contention,
                 r->attempts, r->attempts == 1 ? "" : "s");
      opf_textable_cell(t, c_note, "ok%s%s%s%s%s%s%s", cont, r->check[0] ? ", reference ok" : "",
                        r->time.outliers ? ", outliers: " : "",
                        r->time.outliers ? (snprintf(b, sizeof b, "%d", r->time.outliers), b) : "", gain,
                        views, td_note);
    }
  }
  print_header(e, e->out, md);
  opf_textable_print(t, e->out, md);
  opf_profile_print(e->out, p->rows, p->n, md); /* --profile */
  opf_textable_free(t);
  opf_peer_summary(e->out, p->rows, p->n, md);
  return 0;
}

static int table_end(opf_emitter *e) { return text_render(e, 0); }
static int md_end(opf_emitter *e) { return text_render(e, 1); }

const emitter_ops opf_emit_table = {text_begin, text_record, table_end, text_release, 0};
const emitter_ops opf_emit_md = {text_begin, text_record, md_end, text_release, 0};

/* report_csv.c: CSV with one header line and stable column names (RFC 4180 quoting); one
 * trailing column per requested counter, named "<event>_per_call"; roofline_level after them
 * when a machine file gave ceilings. */
#include <string.h>

#include "opperf/topdown.h"
#include "report_impl.h"
#include "report_peer.h"

/* One CSV field followed by sep (',' or '\n'; 0 for none). */
static void field(FILE *f, const char *s, char sep) {
  if (strpbrk(s, ",\"\n")) {
    fputc('"', f);
    for (; *s; s++) {
      if (*s == '"') fputc('"', f);
      fputc(*s, f);
    }
    fputc('"', f);
  } else {
    fputs(s, f);
  }
  if (sep) fputc(sep, f);
}

static int csv_begin(opf_emitter *e) {
  fputs("op,category,impl,set,dtype,pass,status,inputs,params,calls_per_sample,samples,"
        "min_s,median_s,mean_s,p90_s,p99_s,max_s,stddev_s,cv,mad_s,outliers,flops_per_call,"
        "bytes_per_call,setup_bytes,bytes_allocated_per_call,"
        "allocations_per_call,peak_live_bytes,max_rss_bytes,minor_faults_per_call,contention,"
        "attempts,message",
        e->out);
  for (int m = 0; m < opf_metric_count(); m++) fprintf(e->out, ",%s", opf_metric_at(m)->name);
  for (int i = 0; i < e->ctx->n_events; i++) {
    fputc(',', e->out);
    char h[160];
    snprintf(h, sizeof h, "%s_per_call", e->ctx->events[i].name);
    field(e->out, h, 0);
  }
  /* the cache-aware roofline's bound ("L1".."DRAM" or "compute"), with a machine file only */
  if (e->ctx->have_machine) fputs(",roofline_level", e->out);
  /* topdown preset: level-1 shares of slots (0..1), last, so runs without it keep the header */
  if (opf_td_requested(e->ctx->events, e->ctx->n_events))
    fputs(",td_retiring,td_bad_speculation,td_frontend_bound,td_backend_bound,td_verdict", e->out);
  if (e->ctx->peer[0]) /* --baseline torch|numpy */
    fputs(",peer_library,peer_op,peer_status,peer_median_s,ratio_ours_over_peer,check,max_abs_err,max_rel_err", e->out);
  fputc('\n', e->out);
  return 0;
}

static int csv_record(opf_emitter *e, const opf_result *r) {
  FILE *f = e->out;
  char inputs[256];
  opf_result_inputs(r, inputs, sizeof inputs);
  field(f, r->op, ',');
  field(f, r->category, ',');
  field(f, r->impl, ',');
  field(f, r->set, ',');
  field(f, opf_dtype_name(r->dtype), ',');
  field(f, opf_pass_name(r->pass), ',');
  field(f, opf_status_name(r->status), ',');
  field(f, inputs, ',');
  field(f, r->params, ',');
  if (r->status == OPF_ST_OK) {
    fprintf(f, "%lld,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.9g,%d,", (long long)r->batch,
            r->n_samples, r->time.min, r->time.median, r->time.mean, r->time.p90, r->time.p99,
            r->time.max, r->time.stddev, r->time.cv, r->time.mad, r->time.outliers);
  } else {
    fputs(",,,,,,,,,,,,", f);
  }
  fprintf(f, "%.9g,%.9g,", r->flops, r->bytes);
  if (r->status == OPF_ST_OK)
    fprintf(f, "%llu,%.6g,%.6g,%llu,%llu,%.6g,", (unsigned long long)r->setup_bytes, r->call_alloc_bytes, r->call_allocs,
            (unsigned long long)r->peak_live_bytes, (unsigned long long)r->max_rss_bytes,
            r->minor_faults);
  else
    fputs(",,,,,,", f);
  /* CPU contention of the kept attempt (run-queue wait share, 0..1; empty when not measured,
   * the message or JSON says why) and the attempts made (empty when the case was not measured) */
  if (r->status == OPF_ST_OK && r->attempts > 0 && r->sched_ok) fprintf(f, "%.4g,", r->contention);
  else fputc(',', f);
  if (r->attempts > 0) fprintf(f, "%d,", r->attempts);
  else fputc(',', f);
  field(f, r->message, 0);
  for (int m = 0; m < opf_metric_count(); m++) {
    double v;
    fputc(',', f);
    if (opf_metric_value(r, m, &v)) fprintf(f, "%.6g", v);
  }
  for (int i = 0; i < e->ctx->n_events; i++) {
    const opf_event_result *ev = i < r->n_events ? &r->events[i] : NULL;
    fputc(',', f);
    if (ev && ev->has_value) fprintf(f, "%.9g", ev->per_call);
  }
  if (e->ctx->have_machine) {
    fputc(',', f);
    if (r->status == OPF_ST_OK && r->roof.level_name[0]) fputs(opf_roofline_label(&r->roof), f);
  }
  if (opf_td_requested(e->ctx->events, e->ctx->n_events)) {
    opf_td_result td;
    int have = opf_td_eval(r, opf_td_counters_from_note(e->ctx->pmu_note), 0, &td) && td.has_l1;
    for (int k = 0; k < OPF_TD_N1; k++) {
      fputc(',', f);
      if (have) fprintf(f, "%.6g", td.l1[k]);
    }
    fputc(',', f);
    field(f, have ? td.verdict : "", 0);
  }
  const opf_peer_result *p = r->peer;
  if (e->ctx->peer[0]) { /* --baseline torch|numpy: empty fields when this case had no peer */
    fputc(',', f);
    field(f, p ? p->library : "", ',');
    field(f, p ? p->name : "", ',');
    field(f, p ? p->status : "", ',');
    if (opf_peer_ok(p)) fprintf(f, "%.9g", p->median);
    fputc(',', f);
    if (p && p->ratio > 0) fprintf(f, "%.6g", p->ratio);
    fprintf(f, ",%s,", opf_peer_verdict(p));
    if (p && p->check.done) fprintf(f, "%.6g,%.6g", p->check.max_abs, p->check.max_rel);
    else fputc(',', f);
  }
  fputc('\n', f);
  return 0;
}

static int csv_end(opf_emitter *e) {
  (void)e;
  return 0;
}

const emitter_ops opf_emit_csv = {csv_begin, csv_record, csv_end, NULL, 0};

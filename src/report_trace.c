/* report_trace.c: Chrome trace-event JSON ({"traceEvents": [...]}) for Perfetto and
 * chrome://tracing: one complete event ("ph":"X") per measured sample with the case in its
 * args, each counter as a counter track ("ph":"C") at the samples' starts, and process/thread
 * names as metadata events. Timestamps are microseconds since the first sample of the run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"

typedef struct trace_priv {
  int n;          /* events written so far (for the separating commas) */
  int have_t0;
  double t0;      /* opf_now() seconds of the first sample */
  int tid;        /* one thread track per case pass, in run order */
} trace_priv;

static void jstr(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void sep(opf_emitter *e) {
  trace_priv *p = e->priv;
  fputs(p->n++ ? ",\n" : "\n", e->out);
}

static void jnum(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  else fputs("null", f);
}

static int trace_begin(opf_emitter *e) {
  trace_priv *p = calloc(1, sizeof *p);
  if (!p) return -1;
  e->priv = p;
  fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"opperf\",\"version\":", e->out);
  jstr(e->out, e->ctx->tool_version);
  fputs(",\"git\":", e->out);
  jstr(e->out, e->ctx->git_hash);
  fputs(",\"cpu\":", e->out);
  jstr(e->out, e->ctx->cpu_model);
  fputs(",\"command\":", e->out);
  jstr(e->out, e->ctx->command);
  fputs(",\"timestamp\":", e->out);
  jstr(e->out, e->ctx->timestamp);
  fputs(",\"clock\":\"CLOCK_MONOTONIC_RAW, microseconds since the first sample\"},\n\"traceEvents\":[", e->out);
  sep(e);
  fputs("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":", e->out);
  char name[600];
  snprintf(name, sizeof name, "%.500s", e->ctx->command[0] ? e->ctx->command : "opperf");
  jstr(e->out, name);
  fputs("}}", e->out);
  return 0;
}

/* The case's identity as trace args (no closing brace). */
static void case_args(FILE *f, const opf_result *r, const char *inputs) {
  fputs("\"op\":", f);
  jstr(f, r->op);
  fputs(",\"impl\":", f);
  jstr(f, r->impl);
  fputs(",\"inputs\":", f);
  jstr(f, inputs);
  fputs(",\"spec\":", f);
  jstr(f, r->spec);
  fputs(",\"params\":", f);
  jstr(f, r->params);
  fputs(",\"dtype\":", f);
  jstr(f, opf_dtype_name(r->dtype));
  fputs(",\"pass\":", f);
  jstr(f, opf_pass_name(r->pass));
  fputs(",\"set\":", f);
  jstr(f, r->set);
}

static int trace_record(opf_emitter *e, const opf_result *r) {
  trace_priv *p = e->priv;
  FILE *f = e->out;
  char inputs[256], label[512];
  opf_result_inputs(r, inputs, sizeof inputs);
  snprintf(label, sizeof label, "%s %s %s %s", r->op, opf_pass_name(r->pass), inputs, opf_dtype_name(r->dtype));
  int tid = ++p->tid;
  sep(e);
  fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":", tid);
  jstr(f, label);
  fputs("}}", f);
  sep(e);
  fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}", tid, tid);
  int timed = r->status == OPF_ST_OK && r->sample_start && r->samples && r->n_samples > 0;
  if (timed && !p->have_t0) {
    p->t0 = r->sample_start[0];
    p->have_t0 = 1;
  }
  if (!timed) { /* failed, crashed or no start times: an instant event that says so */
    sep(e);
    fprintf(f, "{\"ph\":\"i\",\"s\":\"t\",\"name\":");
    jstr(f, r->op);
    fprintf(f, ",\"cat\":\"case\",\"pid\":1,\"tid\":%d,\"ts\":0,\"args\":{", tid);
    case_args(f, r, inputs);
    fputs(",\"status\":", f);
    jstr(f, opf_status_name(r->status));
    fputs(",\"message\":", f);
    jstr(f, r->status == OPF_ST_OK ? "no sample start times" : r->message);
    fputs("}}", f);
    return 0;
  }
  for (int i = 0; i < r->n_samples; i++) {
    double ts = (r->sample_start[i] - p->t0) * 1e6, dur = r->samples[i] * (double)r->batch * 1e6;
    sep(e);
    fputs("{\"ph\":\"X\",\"cat\":\"sample\",\"name\":", f);
    jstr(f, label);
    fprintf(f, ",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{", tid, ts, dur);
    case_args(f, r, inputs);
    fprintf(f, ",\"sample\":%d,\"calls\":%lld,\"time_per_call_s\":", i, (long long)r->batch);
    jnum(f, r->samples[i]);
    if (r->simulated) fputs(",\"simulated\":true", f);
    fputs("}}", f);
    /* Counter tracks: the per-call count of this sample, when every sample read the event
     * (otherwise the raw values cannot be matched to samples). */
    for (int k = 0; k < r->n_events; k++) {
      const opf_event_result *ev = &r->events[k];
      double v = NAN;
      if (ev->raw && ev->n_raw == r->n_samples) v = ev->raw[i];
      else if (ev->has_value && r->simulated) v = ev->per_call; /* simulated: one figure per case */
      if (!isfinite(v)) continue;
      sep(e);
      fputs("{\"ph\":\"C\",\"cat\":\"counter\",\"name\":", f);
      char cname[160];
      snprintf(cname, sizeof cname, "%s per call", ev->name);
      jstr(f, cname);
      fprintf(f, ",\"pid\":1,\"ts\":%.3f,\"args\":{\"value\":", ts);
      jnum(f, v);
      fputs("}}", f);
    }
    sep(e);
    fprintf(f, "{\"ph\":\"C\",\"cat\":\"counter\",\"name\":\"time per call (ns)\",\"pid\":1,\"ts\":%.3f,\"args\":{\"value\":", ts);
    jnum(f, r->samples[i] * 1e9);
    fputs("}}", f);
  }
  return 0;
}

static int trace_end(opf_emitter *e) {
  fputs("\n]}\n", e->out);
  return 0;
}

static void trace_release(opf_emitter *e) {
  free(e->priv);
  e->priv = NULL;
}

const emitter_ops opf_emit_trace = {trace_begin, trace_record, trace_end, trace_release, 0};

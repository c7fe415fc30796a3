/* report_json.c: the JSON report (cJSON): schema version, the context block, and one record
 * per case with statistics, raw samples, model-derived throughput, memory and counters. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"

static cJSON *settings_json(const opf_settings *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "warmup_s", s->warmup);
  cJSON_AddNumberToObject(o, "min_time_s", s->min_time);
  cJSON_AddNumberToObject(o, "max_time_s", s->max_time);
  cJSON_AddNumberToObject(o, "sample_time_s", s->sample_time);
  cJSON_AddNumberToObject(o, "min_runs", s->min_runs);
  cJSON_AddNumberToObject(o, "max_runs", s->max_runs);
  cJSON_AddNumberToObject(o, "threads", s->threads);
  cJSON_AddStringToObject(o, "cpus", s->cpus[0] ? s->cpus : "any");
  cJSON_AddStringToObject(o, "cache", s->cache == OPF_CACHE_COLD ? "cold" : "warm");
  cJSON_AddStringToObject(o, "alloc", "setup");
  cJSON_AddNumberToObject(o, "seed", (double)s->seed);
  cJSON_AddStringToObject(o, "events", s->events);
  cJSON_AddStringToObject(o, "backend", s->backend[0] ? s->backend : "native");
  return o;
}

static cJSON *context_json(const opf_context *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON *tool = cJSON_AddObjectToObject(o, "tool");
  cJSON_AddStringToObject(tool, "name", "opperf");
  cJSON_AddStringToObject(tool, "version", c->tool_version);
  cJSON_AddStringToObject(tool, "git_hash", c->git_hash);
  cJSON_AddStringToObject(tool, "build_type", c->build_type);
  cJSON_AddStringToObject(tool, "compiler", c->compiler);
  cJSON_AddStringToObject(tool, "cflags", c->cflags);
  cJSON *host = cJSON_AddObjectToObject(o, "host");
  cJSON_AddStringToObject(host, "hostname", c->hostname);
  cJSON_AddStringToObject(host, "cpu_model", c->cpu_model);
  cJSON_AddNumberToObject(host, "cpus_online", c->cpus_online);
  cJSON_AddNumberToObject(host, "mem_total_bytes", (double)c->mem_total);
  cJSON_AddStringToObject(host, "kernel", c->kernel);
  cJSON *caches = cJSON_AddArrayToObject(host, "caches");
  for (int i = 0; i < c->n_caches; i++) {
    cJSON *k = cJSON_CreateObject();
    cJSON_AddNumberToObject(k, "level", c->caches[i].level);
    cJSON_AddStringToObject(k, "type", c->caches[i].type);
    cJSON_AddNumberToObject(k, "size_bytes", (double)c->caches[i].size);
    cJSON_AddStringToObject(k, "shared_cpus", c->caches[i].shared_cpus);
    cJSON_AddItemToArray(caches, k);
  }
  cJSON *perf = cJSON_AddObjectToObject(o, "perf");
  if (c->perf_event_paranoid == -99) cJSON_AddNullToObject(perf, "perf_event_paranoid");
  else cJSON_AddNumberToObject(perf, "perf_event_paranoid", c->perf_event_paranoid);
  cJSON_AddStringToObject(perf, "pmus_detected", c->pmus);
  cJSON *evs = cJSON_AddArrayToObject(perf, "counters");
  for (int i = 0; i < c->n_events; i++) {
    const opf_pmu_event *e = &c->events[i];
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "name", e->name);
    cJSON_AddStringToObject(k, "encoding", e->fstr);
    cJSON_AddStringToObject(k, "status", opf_ev_status_name(e->status));
    cJSON_AddNumberToObject(k, "group", e->group);
    if (!strncmp(e->name, "sim:", 4)) cJSON_AddTrueToObject(k, "simulated"); /* --backend callgrind */
    if (e->err) cJSON_AddNumberToObject(k, "errno", e->err);
    if (e->reason[0]) cJSON_AddStringToObject(k, "reason", e->reason);
    cJSON_AddItemToArray(evs, k);
  }
  cJSON *blas = cJSON_AddObjectToObject(o, "blas");
  cJSON_AddStringToObject(blas, "config", c->blas_config);
  cJSON_AddStringToObject(blas, "parallel", c->blas_parallel);
  cJSON_AddNumberToObject(blas, "threads", c->blas_threads);
  cJSON_AddStringToObject(blas, "library", c->blas_library);
  cJSON_AddStringToObject(blas, "core", c->blas_core);
  cJSON_AddStringToObject(o, "environment", c->env);
  cJSON *load = cJSON_AddObjectToObject(host, "loadavg_1min");
  cJSON_AddNumberToObject(load, "start", c->loadavg_start);
  cJSON_AddNumberToObject(load, "end", c->loadavg_end);
  cJSON_AddNumberToObject(o, "omp_threads", c->omp_threads);
  cJSON_AddBoolToObject(o, "roofline_available", c->have_machine);
  cJSON *timer = cJSON_AddObjectToObject(o, "timer");
  cJSON_AddStringToObject(timer, "clock", "CLOCK_MONOTONIC_RAW");
  cJSON_AddNumberToObject(timer, "resolution_s", c->timer_resolution);
  cJSON_AddNumberToObject(timer, "read_overhead_s", c->timer_overhead);
  cJSON *ov = cJSON_AddObjectToObject(o, "harness_overhead_per_sample_s");
  for (int i = 0; i < c->n_overhead; i++)
    cJSON_AddNumberToObject(ov, c->overhead[i].what, c->overhead[i].per_sample_s);
  cJSON_AddItemToObject(o, "settings", settings_json(&c->settings));
  cJSON_AddStringToObject(o, "command", c->command);
  cJSON_AddStringToObject(o, "timestamp", c->timestamp);
  return o;
}

/* Records accumulate in an array; the document (schema, context, results) is assembled at the
 * end, when the context also knows how the run went (load at the end). */
static int json_begin(opf_emitter *e) {
  e->priv = cJSON_CreateArray();
  return e->priv ? 0 : -1;
}

static int json_record(opf_emitter *e, const opf_result *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return -1;
  cJSON_AddStringToObject(o, "op", r->op);
  cJSON_AddStringToObject(o, "category", r->category);
  cJSON_AddStringToObject(o, "impl", r->impl);
  cJSON_AddStringToObject(o, "set", r->set);
  cJSON_AddStringToObject(o, "spec", r->spec);
  cJSON_AddStringToObject(o, "params", r->params);
  cJSON_AddStringToObject(o, "dtype", opf_dtype_name(r->dtype));
  cJSON_AddStringToObject(o, "pass", opf_pass_name(r->pass));
  cJSON_AddStringToObject(o, "status", opf_status_name(r->status));
  if (r->message[0]) cJSON_AddStringToObject(o, "message", r->message);
  if (r->simulated) cJSON_AddTrueToObject(o, "simulated"); /* --backend callgrind */
  if (r->saved[0]) cJSON_AddStringToObject(o, "saved_prefix", r->saved);
  cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
  for (int i = 0; i < r->n_tensors; i++) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "name", r->tensors[i].name);
    cJSON_AddStringToObject(t, "role", r->tensors[i].role);
    cJSON_AddStringToObject(t, "shape", r->tensors[i].shape);
    cJSON_AddStringToObject(t, "dtype", opf_dtype_name(r->tensors[i].dtype));
    cJSON_AddNumberToObject(t, "bytes", (double)r->tensors[i].bytes);
    cJSON_AddItemToArray(ts, t);
  }
  cJSON *model = cJSON_AddObjectToObject(o, "model");
  cJSON_AddNumberToObject(model, "flops_per_call", r->flops);
  cJSON_AddNumberToObject(model, "bytes_per_call", r->bytes);
  if (r->bytes > 0) cJSON_AddNumberToObject(model, "arithmetic_intensity", r->flops / r->bytes);
  if (r->status == OPF_ST_OK) {
    cJSON *t = cJSON_AddObjectToObject(o, "time");
    cJSON_AddStringToObject(t, "unit", "s/call");
    if (r->simulated) cJSON_AddStringToObject(t, "note", "measured under valgrind: not a real time");
    cJSON_AddNumberToObject(t, "calls_per_sample", (double)r->batch);
    cJSON_AddNumberToObject(t, "samples", r->n_samples);
    cJSON_AddNumberToObject(t, "min", r->time.min);
    cJSON_AddNumberToObject(t, "median", r->time.median);
    cJSON_AddNumberToObject(t, "mean", r->time.mean);
    cJSON_AddNumberToObject(t, "p90", r->time.p90);
    cJSON_AddNumberToObject(t, "p99", r->time.p99);
    cJSON_AddNumberToObject(t, "max", r->time.max);
    cJSON_AddNumberToObject(t, "stddev", r->time.stddev);
    cJSON_AddNumberToObject(t, "cv", r->time.cv);
    cJSON_AddNumberToObject(t, "mad", r->time.mad);
    cJSON_AddNumberToObject(t, "outliers", r->time.outliers);
    cJSON_AddNumberToObject(t, "measured_s", r->total_time);
    cJSON_AddItemToObject(t, "raw", cJSON_CreateDoubleArray(r->samples, r->n_samples));
    cJSON *m = cJSON_AddObjectToObject(o, "memory");
    cJSON_AddNumberToObject(m, "setup_bytes", (double)r->setup_bytes);
    cJSON_AddNumberToObject(m, "setup_allocations", (double)r->setup_allocs);
    cJSON_AddNumberToObject(m, "bytes_allocated_per_call", r->call_alloc_bytes);
    cJSON_AddNumberToObject(m, "allocations_per_call", r->call_allocs);
    cJSON_AddNumberToObject(m, "peak_live_bytes", (double)r->peak_live_bytes);
    cJSON_AddNumberToObject(m, "process_max_rss_bytes", (double)r->max_rss_bytes);
    cJSON_AddNumberToObject(m, "minor_page_faults_per_call", r->minor_faults);
    cJSON_AddNumberToObject(m, "major_page_faults_per_call", r->major_faults);
  }
  if (r->roofline > 0) cJSON_AddNumberToObject(model, "roofline_bound_flops_per_s", r->roofline);
  /* Only metrics whose inputs exist: absent means absent, not 0. */
  cJSON *mets = cJSON_AddObjectToObject(o, "metrics");
  for (int m = 0; m < opf_metric_count(); m++) {
    double v;
    if (opf_metric_value(r, m, &v)) cJSON_AddNumberToObject(mets, opf_metric_at(m)->name, v);
  }
  cJSON *cs = cJSON_AddArrayToObject(o, "counters");
  for (int i = 0; i < r->n_events; i++) {
    const opf_event_result *ev = &r->events[i];
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "name", ev->name);
    cJSON_AddStringToObject(k, "status", opf_ev_status_name(ev->status));
    if (ev->kind[0]) cJSON_AddStringToObject(k, "kind", ev->kind);
    cJSON_AddNumberToObject(k, "group", ev->group);
    if (r->simulated && !strncmp(ev->name, "sim:", 4)) cJSON_AddTrueToObject(k, "simulated");
    if (ev->has_value) {
      cJSON_AddNumberToObject(k, "per_call", ev->per_call);
      cJSON_AddNumberToObject(k, "mean_per_call", ev->mean_per_call);
      cJSON_AddNumberToObject(k, "running_pct", ev->running_pct);
      if (ev->raw) cJSON_AddItemToObject(k, "raw", cJSON_CreateDoubleArray(ev->raw, ev->n_raw));
    }
    if (ev->err) cJSON_AddNumberToObject(k, "errno", ev->err);
    if (ev->reason[0]) cJSON_AddStringToObject(k, "reason", ev->reason);
    cJSON_AddItemToArray(cs, k);
  }
  cJSON_AddItemToArray(e->priv, o);
  return 0;
}

static int json_end(opf_emitter *e) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return -1;
  cJSON_AddNumberToObject(root, "schema_version", OPF_SCHEMA_VERSION);
  cJSON_AddItemToObject(root, "context", context_json(e->ctx));
  cJSON_AddItemToObject(root, "results", e->priv);
  e->priv = root;
  char *s = cJSON_Print(root);
  if (!s) return -1;
  fputs(s, e->out);
  fputc('\n', e->out);
  cJSON_free(s);
  return 0;
}

static void json_release(opf_emitter *e) { cJSON_Delete(e->priv); }

const emitter_ops opf_emit_json = {json_begin, json_record, json_end, json_release};

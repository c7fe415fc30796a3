/* report_json.c: the JSON reports (cJSON): the opperf report (schema version, the context
 * block, and one record per case with statistics, raw samples, model-derived throughput, memory
 * and counters), its streaming JSON-lines form, and Google Benchmark-compatible JSON. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/htmlreport.h" /* opf_machine_file_json */
#include "opperf/topdown.h"
#include "report_impl.h"
#include "report_peer.h"

static cJSON *settings_json(const opf_settings *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "warmup_s", s->warmup);
  cJSON_AddNumberToObject(o, "warmup_settle", s->warmup_settle);
  cJSON_AddNumberToObject(o, "min_time_s", s->min_time);
  cJSON_AddNumberToObject(o, "max_time_s", s->max_time);
  cJSON_AddNumberToObject(o, "ci_target", s->ci_target);
  cJSON_AddNumberToObject(o, "ci_time_s", s->ci_time);
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
  cJSON_AddStringToObject(perf, "groups", c->pmu_note);
  cJSON_AddStringToObject(perf, "omp_wait_policy", c->omp_wait);
  cJSON_AddStringToObject(perf, "counting",
                          "per thread of the process (threads created later are inherited), "
                          "summed and scaled per thread; user space only unless ':k' was "
                          "asked (context-switches and cpu-migrations count kernel mode); the "
                          "harness's own count, the median of an empty window taken after "
                          "every sample, is subtracted");
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
    if (e->plm[0]) cJSON_AddStringToObject(k, "privilege", e->plm);
    if (e->downgraded) cJSON_AddTrueToObject(k, "kernel_refused");
    cJSON_AddItemToArray(evs, k);
  }
  cJSON *blas = cJSON_AddObjectToObject(o, "blas");
  cJSON_AddStringToObject(blas, "config", c->blas_config);
  cJSON_AddStringToObject(blas, "parallel", c->blas_parallel);
  cJSON_AddNumberToObject(blas, "threads", c->blas_threads);
  cJSON_AddStringToObject(blas, "library", c->blas_library);
  cJSON_AddStringToObject(blas, "core", c->blas_core);
  cJSON_AddStringToObject(blas, "core_source", c->blas_core_source); /* src/cli/blas.c */
  cJSON_AddStringToObject(blas, "core_openblas", c->blas_core_openblas);
  cJSON_AddStringToObject(blas, "cpu_family", c->blas_cpu_family);
  cJSON_AddStringToObject(blas, "core_note", c->blas_core_note);
  cJSON *ids = cJSON_AddArrayToObject(o, "build_ids"); /* GNU build-ids: src/buildids.c */
  for (int i = 0; i < c->n_build_ids; i++) {
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "path", c->build_ids[i].path);
    if (c->build_ids[i].build_id[0]) cJSON_AddStringToObject(k, "build_id", c->build_ids[i].build_id);
    else cJSON_AddNullToObject(k, "build_id");
    cJSON_AddItemToArray(ids, k);
  }
  cJSON_AddStringToObject(o, "environment", c->env);
  cJSON *load = cJSON_AddObjectToObject(host, "loadavg_1min");
  cJSON_AddNumberToObject(load, "start", c->loadavg_start);
  cJSON_AddNumberToObject(load, "end", c->loadavg_end);
  cJSON_AddNumberToObject(o, "omp_threads", c->omp_threads);
  cJSON_AddBoolToObject(o, "roofline_available", c->have_machine);
  if (c->have_machine) cJSON_AddItemToObject(o, "machine", opf_machine_file_json()); /* the ceilings */
  if (c->peer[0]) cJSON_AddStringToObject(o, "peer", c->peer); /* --baseline torch|numpy */
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
  if (c->interrupted) cJSON_AddTrueToObject(o, "interrupted"); /* SIGINT/SIGTERM: partial run */
  return o;
}

/* Records accumulate in an array; the document (schema, context, results) is assembled at the
 * end, when the context also knows how the run went (load at the end). */
static int json_begin(opf_emitter *e) {
  e->priv = cJSON_CreateArray();
  return e->priv ? 0 : -1;
}

static cJSON *result_json(const opf_result *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
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
  if (r->check[0]) cJSON_AddStringToObject(o, "reference_check", r->check); /* --check */
  if (r->grad_views[0]) cJSON_AddStringToObject(o, "grad_views", r->grad_views); /* no data moved */
  if (r->simulated) cJSON_AddTrueToObject(o, "simulated"); /* --backend callgrind */
  if (r->saved[0]) cJSON_AddStringToObject(o, "saved_prefix", r->saved);
  opf_peer_json(o, r); /* --baseline torch|numpy */
  if (r->profile.event[0]) cJSON_AddItemToObject(o, "profile", opf_profile_json(&r->profile));
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
    cJSON_AddNumberToObject(t, "warmup_s", r->warmup_s);
    cJSON_AddNumberToObject(t, "warmup_calls", (double)r->warmup_calls);
    if (r->ci_hi > 0) {
      double ci[2] = {r->ci_lo, r->ci_hi};
      cJSON_AddItemToObject(t, "median_ci95", cJSON_CreateDoubleArray(ci, 2));
    }
    if (r->stop[0]) cJSON_AddStringToObject(t, "stop", r->stop);
    if (r->cpu_samples && r->n_samples > 0) { /* process CPU time (all threads) per call */
      opf_stats cs;
      if (!opf_stats_compute(r->cpu_samples, r->n_samples, &cs))
        cJSON_AddNumberToObject(t, "process_cpu_median", cs.median);
    }
    cJSON_AddItemToObject(t, "raw", cJSON_CreateDoubleArray(r->samples, r->n_samples));
    cJSON_AddNumberToObject(t, "repetitions", r->n_reps);
    cJSON_AddItemToObject(t, "repetition_medians", cJSON_CreateDoubleArray(r->rep_median, r->n_reps));
    if (r->attempts > 0) { /* CPU contention over the sampling loop (schedstat), and the retries */
      cJSON *ct = cJSON_AddObjectToObject(t, "contention");
      if (r->sched_ok) {
        cJSON_AddStringToObject(ct, "status", r->contended ? "contended" : "measured");
        cJSON_AddNumberToObject(ct, "fraction", r->contention);
        cJSON_AddNumberToObject(ct, "runq_wait_s", r->runq_wait_s);
        cJSON_AddNumberToObject(ct, "oncpu_s", r->oncpu_s);
        cJSON_AddNumberToObject(ct, "threads", r->contention_threads);
      } else {
        cJSON_AddStringToObject(ct, "status", "not available");
        cJSON_AddStringToObject(ct, "reason", r->sched_reason);
      }
      cJSON_AddNumberToObject(t, "attempts", r->attempts);
      cJSON *al = cJSON_AddArrayToObject(t, "attempt_list");
      for (int i = 0; i < r->attempts && i < OPF_MAX_ATTEMPTS && r->n_reps <= 1; i++) {
        cJSON *ai = cJSON_CreateObject();
        if (r->attempt_contention[i] >= 0) cJSON_AddNumberToObject(ai, "contention", r->attempt_contention[i]);
        else cJSON_AddNullToObject(ai, "contention");
        cJSON_AddNumberToObject(ai, "median", r->attempt_median[i]);
        cJSON_AddBoolToObject(ai, "kept", i == r->attempt_kept);
        cJSON_AddItemToArray(al, ai);
      }
    }
    if (r->ab_vs[0] && r->ab_rounds > 0) { /* --interleave: paired against another implementation */
      cJSON *ab = cJSON_AddObjectToObject(o, "ab");
      cJSON_AddStringToObject(ab, "vs", r->ab_vs);
      cJSON_AddNumberToObject(ab, "rounds", r->ab_rounds);
      cJSON_AddNumberToObject(ab, "ratio", r->ab_ratio);
      if (r->ab_hi > 0) cJSON_AddItemToObject(ab, "ci95", cJSON_CreateDoubleArray((double[]){r->ab_lo, r->ab_hi}, 2));
      cJSON_AddItemToObject(ab, "round_ratios", cJSON_CreateDoubleArray(r->ab_round, r->ab_rounds));
    }
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
  if (r->roof.level_name[0]) { /* the cache-aware placement (src/roofline.c) */
    const opf_roofline *rf = &r->roof;
    cJSON_AddStringToObject(model, "roofline_level", opf_roofline_label(rf));
    cJSON_AddStringToObject(model, "roofline_memory_level", rf->level_name);
    cJSON_AddNumberToObject(model, "roofline_time_s", rf->time);
    cJSON_AddNumberToObject(model, "roofline_ceiling_bytes_per_s", rf->bandwidth);
    cJSON_AddStringToObject(model, "roofline_ceiling_kernel", rf->read_only ? "read" : "triad");
    if (rf->peak > 0) cJSON_AddNumberToObject(model, "roofline_peak_flops_per_s", rf->peak);
    cJSON_AddNumberToObject(model, "working_set_bytes", rf->working_set);
    cJSON_AddNumberToObject(model, "working_set_per_thread_bytes", rf->per_thread_ws);
  }
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
      cJSON_AddNumberToObject(k, "main_thread_per_call", ev->main_per_call);
      cJSON_AddNumberToObject(k, "harness_residual_per_sample", ev->residual);
      if (ev->raw) cJSON_AddItemToObject(k, "raw", cJSON_CreateDoubleArray(ev->raw, ev->n_raw));
    }
    if (ev->n_partial) cJSON_AddNumberToObject(k, "partial_samples", ev->n_partial);
    if (ev->plm[0]) cJSON_AddStringToObject(k, "privilege", ev->plm);
    if (ev->err) cJSON_AddNumberToObject(k, "errno", ev->err);
    if (ev->reason[0]) cJSON_AddStringToObject(k, "reason", ev->reason);
    cJSON_AddItemToArray(cs, k);
  }
  return o;
}

/* The record's top-down analysis (topdown preset): level-1 / level-2 shares of slots from one
 * group's counters, the model, its source and the verdict; or why it is absent. */
static void add_topdown(cJSON *o, const opf_emitter *e, const opf_result *r) {
  if (!opf_td_requested(e->ctx->events, e->ctx->n_events)) return;
  opf_td_result td;
  if (!opf_td_eval(r, opf_td_counters_from_note(e->ctx->pmu_note), 0, &td)) return;
  cJSON *t = cJSON_AddObjectToObject(o, "topdown");
  if (!t) return;
  if (td.model) {
    cJSON_AddStringToObject(t, "model", td.model->pmu);
    cJSON_AddStringToObject(t, "cpu", td.model->cpu);
    cJSON_AddStringToObject(t, "formula", td.model->formula);
    if (td.model->formula2) cJSON_AddStringToObject(t, "formula_level2", td.model->formula2);
    if (td.model->width > 0) cJSON_AddNumberToObject(t, "slots_per_cycle", td.model->width);
    cJSON_AddStringToObject(t, "source", td.model->source);
  }
  cJSON_AddBoolToObject(t, "available", td.has_l1);
  if (!td.has_l1) {
    cJSON_AddStringToObject(t, "reason", td.reason);
    return;
  }
  cJSON_AddNumberToObject(t, "slots_per_call", td.slots);
  cJSON_AddNumberToObject(t, "group", td.group);
  cJSON_AddStringToObject(t, "privilege", td.plm);
  cJSON *l1 = cJSON_AddObjectToObject(t, "level1");
  for (int k = 0; k < OPF_TD_N1; k++) cJSON_AddNumberToObject(l1, opf_td_l1_name(k), td.l1[k]);
  cJSON *l2 = cJSON_AddObjectToObject(t, "level2");
  for (int k = 0; k < OPF_TD_N2; k++)
    if (td.has_l2[k]) cJSON_AddNumberToObject(l2, opf_td_l2_name(k), td.l2[k]);
  if (td.reason2[0]) cJSON_AddStringToObject(t, "level2_absent", td.reason2);
  if (td.verdict[0]) cJSON_AddStringToObject(t, "verdict", td.verdict);
  else cJSON_AddNullToObject(t, "verdict");
}

static int json_record(opf_emitter *e, const opf_result *r) {
  cJSON *o = result_json(r);
  if (!o) return -1;
  add_topdown(o, e, r);
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

const emitter_ops opf_emit_json = {json_begin, json_record, json_end, json_release, 0};

/* ---- JSON lines: written as the run goes (a killed run still leaves valid lines) ----
 * {"context": {...}} first, one {"result": {...}} per case and pass, {"end": {...}} last. */
static int jsonl_line(opf_emitter *e, const char *key, cJSON *item) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return -1;
  cJSON_AddItemToObject(o, key, item);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!s) return -1;
  int rc = fprintf(e->out, "%s\n", s) < 0 || fflush(e->out) ? -1 : 0;
  cJSON_free(s);
  return rc;
}

static int jsonl_begin(opf_emitter *e) {
  cJSON_AddNumberToObject(e->priv = cJSON_CreateObject(), "results", 0);
  return jsonl_line(e, "context", context_json(e->ctx));
}

static int jsonl_record(opf_emitter *e, const opf_result *r) {
  cJSON *n = cJSON_GetObjectItem(e->priv, "results");
  cJSON_SetNumberValue(n, n->valuedouble + 1);
  cJSON *o = result_json(r);
  if (o) add_topdown(o, e, r);
  return o ? jsonl_line(e, "result", o) : -1;
}

static int jsonl_end(opf_emitter *e) {
  cJSON *end = e->priv;
  e->priv = NULL;
  cJSON_AddBoolToObject(end, "interrupted", e->ctx->interrupted);
  cJSON_AddNumberToObject(end, "loadavg_end", e->ctx->loadavg_end);
  return jsonl_line(e, "end", end);
}

const emitter_ops opf_emit_jsonl = {jsonl_begin, jsonl_record, jsonl_end, json_release, 1};

/* ---- Google Benchmark JSON: context and benchmarks, one "iteration" entry per sample (its
 * calls are the iterations) plus mean/median/stddev/cv aggregates, times in ns, counters per
 * call as user counters: dashboards and tools/compare.py read it unchanged. ---- */
static void gbench_name(const opf_result *r, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "%s/%s/%s/%s", r->op, opf_pass_name(r->pass),
                                opf_dtype_name(r->dtype), r->spec);
  for (size_t i = 0; i < off && i < n; i++)
    if (buf[i] == ' ') buf[i] = ',';
}

static void gbench_counters(cJSON *b, const opf_result *r) {
  for (int i = 0; i < r->n_events; i++)
    if (r->events[i].has_value) cJSON_AddNumberToObject(b, r->events[i].name, r->events[i].per_call);
  if (r->time.median > 0 && r->flops > 0) cJSON_AddNumberToObject(b, "FLOP/s", r->flops / r->time.median);
  if (r->time.median > 0 && r->bytes > 0) cJSON_AddNumberToObject(b, "bytes_per_second", r->bytes / r->time.median);
  /* CPU contention of the kept attempt (run-queue wait share, 0..1), only when it was measured */
  if (r->attempts > 0 && r->sched_ok) {
    cJSON_AddNumberToObject(b, "contention", r->contention);
    cJSON_AddNumberToObject(b, "attempts", r->attempts);
  }
}

static cJSON *gbench_entry(const opf_result *r, const char *name, int family, int rep, const char *agg,
                           double real_s, double cpu_s, double iters) {
  cJSON *b = cJSON_CreateObject();
  char full[420];
  snprintf(full, sizeof full, "%.400s%s%s", name, agg ? "_" : "", agg ? agg : "");
  cJSON_AddStringToObject(b, "name", full);
  cJSON_AddNumberToObject(b, "family_index", family);
  cJSON_AddNumberToObject(b, "per_family_instance_index", 0);
  cJSON_AddStringToObject(b, "run_name", name);
  cJSON_AddStringToObject(b, "run_type", agg ? "aggregate" : "iteration");
  cJSON_AddNumberToObject(b, "repetitions", r->n_samples);
  if (!agg) cJSON_AddNumberToObject(b, "repetition_index", rep);
  cJSON_AddNumberToObject(b, "threads", 1);
  if (agg) {
    cJSON_AddStringToObject(b, "aggregate_name", agg);
    cJSON_AddStringToObject(b, "aggregate_unit", strcmp(agg, "cv") ? "time" : "percentage");
  }
  cJSON_AddNumberToObject(b, "iterations", iters);
  cJSON_AddNumberToObject(b, "real_time", real_s * 1e9);
  cJSON_AddNumberToObject(b, "cpu_time", cpu_s * 1e9);
  cJSON_AddStringToObject(b, "time_unit", "ns");
  gbench_counters(b, r);
  return b;
}

static int gbench_begin(opf_emitter *e) {
  e->priv = cJSON_CreateArray();
  return e->priv ? 0 : -1;
}

static int gbench_record(opf_emitter *e, const opf_result *r) {
  if (r->status != OPF_ST_OK) return 0; /* Google Benchmark has no failed entries: see the JSON report */
  char name[400];
  gbench_name(r, name, sizeof name);
  int family = cJSON_GetArraySize(e->priv) ? cJSON_GetObjectItem(cJSON_GetArrayItem(e->priv, cJSON_GetArraySize(e->priv) - 1), "family_index")->valueint + 1 : 0;
  for (int i = 0; i < r->n_samples; i++)
    cJSON_AddItemToArray(e->priv, gbench_entry(r, name, family, i, NULL, r->samples[i],
                                               r->cpu_samples ? r->cpu_samples[i] : r->samples[i], (double)r->batch));
  opf_stats cs = {0};
  if (r->cpu_samples) opf_stats_compute(r->cpu_samples, r->n_samples, &cs);
  else cs = r->time;
  const char *aggs[4] = {"mean", "median", "stddev", "cv"};
  const double real[4] = {r->time.mean, r->time.median, r->time.stddev, r->time.cv},
               cpu[4] = {cs.mean, cs.median, cs.stddev, cs.cv};
  for (int a = 0; a < 4; a++) {
    cJSON *b = gbench_entry(r, name, family, 0, aggs[a], real[a], cpu[a], (double)r->n_samples);
    if (a == 3) { /* cv entries are ratios, not times */
      cJSON_ReplaceItemInObject(b, "real_time", cJSON_CreateNumber(real[a]));
      cJSON_ReplaceItemInObject(b, "cpu_time", cJSON_CreateNumber(cpu[a]));
    }
    cJSON_AddItemToArray(e->priv, b);
  }
  return 0;
}

static int gbench_end(opf_emitter *e) {
  const opf_context *c = e->ctx;
  cJSON *root = cJSON_CreateObject(), *ctx = cJSON_AddObjectToObject(root, "context");
  cJSON_AddStringToObject(ctx, "date", c->timestamp);
  cJSON_AddStringToObject(ctx, "host_name", c->hostname);
  cJSON_AddStringToObject(ctx, "executable", c->command);
  cJSON_AddNumberToObject(ctx, "num_cpus", c->cpus_online);
  cJSON_AddNumberToObject(ctx, "mhz_per_cpu", c->mhz);
  cJSON_AddStringToObject(ctx, "mhz_source", c->mhz_source);
  cJSON_AddBoolToObject(ctx, "cpu_scaling_enabled", 0);
  cJSON *caches = cJSON_AddArrayToObject(ctx, "caches");
  for (int i = 0; i < c->n_caches; i++) {
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "type", c->caches[i].type);
    cJSON_AddNumberToObject(k, "level", c->caches[i].level);
    cJSON_AddNumberToObject(k, "size", (double)c->caches[i].size);
    cJSON_AddNumberToObject(k, "num_sharing", c->caches[i].num_sharing);
    cJSON_AddItemToArray(caches, k);
  }
  cJSON *load = cJSON_AddArrayToObject(ctx, "load_avg");
  cJSON_AddItemToArray(load, cJSON_CreateNumber(c->loadavg_start));
  cJSON_AddStringToObject(ctx, "library_build_type", !strcmp(c->build_type, "Debug") ? "debug" : "release");
  cJSON_AddStringToObject(ctx, "opperf_version", c->tool_version);
  cJSON_AddStringToObject(ctx, "opperf_git_hash", c->git_hash);
  cJSON_AddStringToObject(ctx, "cpu_model", c->cpu_model);
  cJSON_AddNumberToObject(ctx, "omp_threads", c->omp_threads);
  if (c->interrupted) cJSON_AddTrueToObject(ctx, "interrupted");
  cJSON_AddItemToObject(root, "benchmarks", e->priv);
  e->priv = root;
  char *s = cJSON_Print(root);
  if (!s) return -1;
  fputs(s, e->out);
  fputc('\n', e->out);
  cJSON_free(s);
  return 0;
}

const emitter_ops opf_emit_gbench = {gbench_begin, gbench_record, gbench_end, json_release, 0};

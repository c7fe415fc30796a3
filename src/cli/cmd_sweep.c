/* cmd_sweep.c: `opperf sweep OP`: one operator over many shapes (--shapes, --vary, --aspect),
 * warm and/or cold: time per call, ns and cycles per element, GB/s, cache/TLB misses per KiB and
 * per element; table/csv/json/md/trace and an SVG plot. Every shape is validated before anything
 * is measured or written. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli_backend.h" /* --backend callgrind */
#include "cli.h"
#include "opts.h"
#include "opperf/topdown.h"
#include "opperf/svg.h"
#include "opperf/sweep.h"
#include "textable.h"

#define MAX_ITEMS 32
#define MAX_MISS 8

typedef enum { SW_NONE, SW_SHAPES, SW_VARY, SW_ASPECT } sweep_kind;

typedef struct sweep_point {
  char label[128];   /* the varied input's shape ("1024x1024"), or the item as given */
  char spec[1024];   /* the case spec given to opf_case_init */
  double x;          /* plot position: varied value, rows, or index */
  int64_t elems;     /* elements of the varied input (per-element figures) */
} sweep_point;

typedef struct sweep_row {
  int point, cache;
  opf_pass pass;
  opf_status status;
  char message[160];
  int simulated;
  double time_s, ns_elem, cyc_elem, gbps; /* NAN: absent */
  int cyc_from_counter;                   /* 1: cycles counter, 0: task-clock x MHz */
  double miss_kib[MAX_MISS], miss_elem[MAX_MISS];
  double td[OPF_TD_N1]; /* topdown preset: level-1 % of slots, NAN when not computed */
  double intensity, gflops, roof_pct; /* roofline: FLOP/byte, GFLOP/s, % of the attainable; NAN: absent */
  char roof_level[8];                 /* its bound: "L1".."DRAM", "compute"; "" when not placed */
  opf_dtype dtype;
} sweep_row;

typedef struct sweep_opts {
  opf_settings s;
  sweep_kind kind;
  const char *shapes, *vary, *aspect, *caches, *passes, *dtype, *output, *plot, *plot_metric;
  const char *inputs[MAX_ITEMS];
  int n_inputs;
  const char *params[MAX_ITEMS];
  int n_params;
  opf_format fmt;
  int verbose;
  cli_backend_kind backend;
  const char *perf_ctl; /* --perf-control SPEC (NULL: $OPPERF_PERF_CONTROL) */
  const char *blas_kernel; /* --blas-kernel (src/cli/blas.c) */
} sweep_opts;

/* --plot-metric td:ret|td:bad|td:fe|td:be: index in opf_td_result.l1, -1 otherwise. */
static int td_metric(const char *m) {
  static const char *const k[OPF_TD_N1] = {"td:ret", "td:bad", "td:fe", "td:be"};
  for (int i = 0; m && i < OPF_TD_N1; i++)
    if (!strcmp(m, k[i])) return i;
  return -1;
}

enum { O_SHAPES = 256, O_VARY, O_ASPECT, O_INPUT, O_PARAM, O_DTYPE, O_PASS, O_CACHE, O_EVENTS,
       O_BACKEND, O_THREADS, O_CPU, O_SEED, O_WARMUP, O_MINTIME, O_MAXTIME, O_RUNS, O_SAMPLE,
       O_FORMAT, O_PLOT, O_PLOT_METRIC, O_PERF_CTL, O_PLUGIN, O_BLAS };

#define M(f) offsetof(sweep_opts, f)
static const cli_opt sweep_table[] = {
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "shapes (one of):"},
    {"shapes", O_SHAPES, "LIST", CLI_O_CUSTOM, 0, 0, 0, "explicit shapes, e.g. \"1024x1024,10000x10,10x10000\"; a shape\napplies to the first input unless written NAME=SHAPE (items\nmay name several inputs: \"a=64x64 b=1x64,a=8x8 b=1x8\")"},
    {"vary", O_VARY, "SPEC", CLI_O_CUSTOM, 0, 0, 0, "a range on one dimension: x.dim0=16:65536:x2 (multiply) or\nx.dim1=8:64:+8 (add); the other dimensions come from\n--input x=SHAPE, else from the operator's standard shape"},
    {"aspect", O_ASPECT, "N", CLI_O_CUSTOM, 0, 0, 0, "at a fixed element count N (a power of two: 1048576, 2^20):\n(1,N), (2,N/2) ... (N,1) on the first input"},
    {"input", O_INPUT, "NAME=SHAPE", CLI_O_CUSTOM, 0, 0, 0, "base shape of the varied input, or a fixed other input"},
    {"param", O_PARAM, "KEY=VALUE", CLI_O_CUSTOM, 0, 0, 0, "param for every shape (repeatable)"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "measurement (as in opperf run):"},
    {"dtype", O_DTYPE, "T", CLI_O_STR, M(dtype), 0, 0, "one dtype (default float32, else the operator's first)"},
    {"pass", O_PASS, "LIST", CLI_O_LIST, M(passes), 0, 0, "fwd (default), bwd, both"},
    {"cache", O_CACHE, "LIST", CLI_O_LIST, M(caches), 0, 0, "warm (default), cold, or warm,cold (both in one sweep)"},
    {"events", O_EVENTS, "LIST", CLI_O_CUSTOM, 0, 0, 0, "counters (default sw): cache and tlb add misses per KiB/element"},
    {"backend", O_BACKEND, "callgrind", CLI_O_CUSTOM, 0, 0, 0, "simulated cache misses (sim:D1mr, sim:DLmr, ...); times not real"},
    {"blas-kernel", O_BLAS, "K", CLI_O_STR, M(blas_kernel), 0, 0, "OpenBLAS kernel family: auto (default), native or a core name\n(see opperf run -h)"},
    {"threads", O_THREADS, "N", CLI_O_INT, M(s.threads), 1, 1024, "OpenMP and OpenBLAS threads (default: all CPUs)"},
    {"cpu", O_CPU, "LIST", CLI_O_CUSTOM, 0, 0, 0, "pin to CPUs, e.g. 0 or 0-1"},
    {"seed", O_SEED, "N", CLI_O_CUSTOM, 0, 0, 0, "seed of all generated inputs (default 42)"},
    {"warmup", O_WARMUP, "SEC", CLI_O_SECONDS, M(s.warmup), 0, 0, "warm-up per shape and pass, at most (default 0.05)"},
    {"min-time", O_MINTIME, "SEC", CLI_O_SECONDS, M(s.min_time), 0, 0, "measure at least this long per shape and pass"},
    {"max-time", O_MAXTIME, "SEC", CLI_O_SECONDS, M(s.max_time), 0, 0, "stop after this long once 3 samples exist"},
    {"runs", O_RUNS, "N", CLI_O_CUSTOM, 0, 0, 0, "exactly N samples per shape (overrides the time limits)"},
    {"sample-time", O_SAMPLE, "SEC", CLI_O_SECONDS, M(s.sample_time), 0, 0, "calibrate calls per sample to last this long"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "output:"},
    {"format", O_FORMAT, "F", CLI_O_CUSTOM, 0, 0, 0, "table (default), csv, json, md, trace"},
    {"output", 'o', "FILE", CLI_O_STR, M(output), 0, 0, "write the report to FILE, atomically"},
    {"plot", O_PLOT, "FILE.svg", CLI_O_STR, M(plot), 0, 0, "SVG line plot: one line per pass and cache mode"},
    {"plot-metric", O_PLOT_METRIC, "M", CLI_O_CUSTOM, 0, 0, 0, "what the plot shows: ns-per-elem (default), time, gbps,\ncycles-per-elem, misses:EVENT (per KiB; the default with\n--backend callgrind is the first simulated miss counter),\ntd:ret, td:bad, td:fe, td:be (top-down % of slots; needs\n--events topdown), roofline (the cache-aware roofline chart:\nGFLOP/s over FLOP/byte with the ceilings of `opperf machine`),\nroofline-pct (% of the attainable, per shape)"},
    {"verbose", 'v', NULL, CLI_O_FLAG, M(verbose), 1, 0, "one opperf_verbose line per shape and pass on stderr"},
    {"perf-control", O_PERF_CTL, "SPEC", CLI_O_STR, M(perf_ctl), 0, 0, "under `perf record -D -1 --control=SPEC`: perf counts the\nmeasured samples only (see opperf run -h)"},
    {"plugin", O_PLUGIN, "LIB.so", CLI_O_CUSTOM, 0, 0, 0, "load a plugin first, so OP may be one of its operators"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};
#undef M

static const cli_cmd_opts sweep_cmd = {
    "sweep", "usage: opperf sweep OP (--shapes LIST | --vary SPEC | --aspect N) [options]",
    "Measures one operator over many shapes and reports, per shape: time per call, ns and\n"
    "cycles per element, GB/s, and cache/TLB misses per KiB and per element when counted.",
    sweep_table, (int)(sizeof sweep_table / sizeof sweep_table[0]),
    "Ctrl-C stops after the current shape and writes the shapes measured so far (exit 130).\n"};

static int parse_args(int argc, char **argv, sweep_opts *o) {
  opf_settings_default(&o->s);
  o->caches = "warm";
  o->passes = "fwd";
  o->fmt = OPF_FMT_TABLE;
  o->plot_metric = NULL; /* ns-per-elem, or misses of the first miss event when simulated */
  optind = 1;
  int ch, nkind = 0;
  long long v;
  const char *arg;
  while ((ch = cli_opts_next(&sweep_cmd, argc, argv, o, &arg)) > 0) {
    switch (ch) {
    case O_PLUGIN: if (cli_plugin_load(arg)) return 2; break;
    case O_SHAPES: o->shapes = arg; o->kind = SW_SHAPES; nkind++; break;
    case O_VARY: o->vary = arg; o->kind = SW_VARY; nkind++; break;
    case O_ASPECT: o->aspect = arg; o->kind = SW_ASPECT; nkind++; break;
    case O_INPUT:
    case O_PARAM:
      if (!strchr(arg, '=') || arg[0] == '=')
        return cli_usage_error("--%s expects NAME=VALUE, not '%s'", ch == O_INPUT ? "input" : "param", arg);
      if (ch == O_INPUT && o->n_inputs < MAX_ITEMS) o->inputs[o->n_inputs++] = arg;
      else if (ch == O_PARAM && o->n_params < MAX_ITEMS) o->params[o->n_params++] = arg;
      else return cli_usage_error("too many --input/--param items");
      break;
    case O_EVENTS:
      if (strlen(arg) >= sizeof o->s.events) return cli_usage_error("--events list is too long");
      if (cli_check_list(arg, "--events")) return EXIT_USAGE;
      snprintf(o->s.events, sizeof o->s.events, "%s", strcmp(arg, "none") ? arg : "");
      break;
    case O_BACKEND: if (cli_backend_parse(arg, &o->backend)) return 2; break;
    case O_CPU: snprintf(o->s.cpus, sizeof o->s.cpus, "%s", arg); break;
    case O_SEED:
      if (!cli_parse_int(arg, &v) || v < 0) return cli_usage_error("--seed needs a non-negative integer, not '%s'", arg);
      o->s.seed = (uint64_t)v;
      break;
    case O_RUNS:
      if (!cli_parse_int(arg, &v) || v < 1 || v > 1000000)
        return cli_usage_error("--runs needs a count between 1 and 1000000, not '%s'", arg);
      o->s.min_runs = o->s.max_runs = (int)v;
      o->s.min_time = 0;
      o->s.max_time = 1e9;
      break;
    case O_FORMAT: {
      int f = opf_format_parse(arg);
      if (f != OPF_FMT_TABLE && f != OPF_FMT_CSV && f != OPF_FMT_JSON && f != OPF_FMT_MD && f != OPF_FMT_TRACE)
        return cli_usage_error("sweep: unknown format '%s' (use table, csv, json, md or trace)", arg);
      o->fmt = (opf_format)f;
      break;
    }
    case O_PLOT_METRIC:
      if (strcmp(arg, "ns-per-elem") && strcmp(arg, "time") && strcmp(arg, "gbps") &&
          strcmp(arg, "cycles-per-elem") && (strncmp(arg, "misses:", 7) || !arg[7]) &&
          td_metric(arg) < 0 && strcmp(arg, "roofline") && strcmp(arg, "roofline-pct"))
        return cli_usage_error("--plot-metric must be ns-per-elem, time, gbps, cycles-per-elem, misses:EVENT, td:ret|td:bad|td:fe|td:be, roofline or roofline-pct, not '%s'", arg);
      o->plot_metric = arg;
      break;
    default: return cli_usage_error("sweep: unhandled option");
    }
  }
  if (ch == CLI_OPT_HELP_DONE) return -1;
  if (ch < 0) return 2;
  if (o->s.max_time < o->s.min_time) o->s.max_time = o->s.min_time;
  if (nkind != 1) return cli_usage_error("sweep needs exactly one of --shapes, --vary or --aspect");
  if (optind + 1 != argc)
    return cli_usage_error(optind == argc ? "sweep needs an operator (opperf sweep OP ...)" : "sweep takes one operator");
  if (o->plot && !*o->plot) return cli_usage_error("--plot needs a file name");
  return 0;
}

/* Index of input name in op, -1 when it has none of that name. */
static int input_index(const opf_op *op, const char *name, size_t len) {
  for (int i = 0; i < OPF_MAX_IN && op->in[i].name; i++)
    if (strlen(op->in[i].name) == len && !strncmp(op->in[i].name, name, len)) return i;
  return -1;
}

static void shape_str(int nd, const int64_t *sh, char *buf, size_t n) {
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < nd && off < n; i++) off += (size_t)snprintf(buf + off, n - off, "%s%lld", i ? "x" : "", (long long)sh[i]);
}

/* Append " item" for every --input other than the varied one, then every --param. */
static int add_fixed(const sweep_opts *o, const char *target, char *spec, size_t n) {
  size_t tl = strlen(target);
  for (int i = 0; i < o->n_inputs; i++) {
    if (!strncmp(o->inputs[i], target, tl) && o->inputs[i][tl] == '=') continue;
    size_t l = strlen(spec);
    if ((size_t)snprintf(spec + l, n - l, " %s", o->inputs[i]) >= n - l) return -1;
  }
  for (int i = 0; i < o->n_params; i++) {
    size_t l = strlen(spec);
    if ((size_t)snprintf(spec + l, n - l, " %s", o->params[i]) >= n - l) return -1;
  }
  return 0;
}

/* The base shape of input `name` for --vary: --input NAME=SHAPE, else the operator's standard
 * entry (or its first entry). */
static int base_shape(const sweep_opts *o, const opf_op *op, opf_dtype dt, const char *name, int *nd,
                      int64_t *shape) {
  size_t l = strlen(name);
  opf_err e;
  for (int i = 0; i < o->n_inputs; i++)
    if (!strncmp(o->inputs[i], name, l) && o->inputs[i][l] == '=') {
      if (opf_shape_parse(o->inputs[i] + l + 1, nd, shape, &e)) return cli_usage_error("--input %s: %s", o->inputs[i], e.msg);
      return 0;
    }
  const char *spec = NULL;
  for (int k = 0; k < OPF_MAX_SETS && op->shapes[k].set; k++)
    if (!spec || !strcmp(op->shapes[k].set, "standard")) {
      spec = op->shapes[k].spec;
      if (!strcmp(op->shapes[k].set, "standard")) break;
    }
  opf_case c;
  memset(&c, 0, sizeof c);
  if (!spec || opf_case_init(&c, op, dt, spec, &e))
    return cli_usage_error("--vary: %s has no default shape for input '%s': give one with --input %s=SHAPE", op->name, name, name);
  int idx = input_index(op, name, l);
  *nd = c.in[idx].ndim;
  memcpy(shape, c.in[idx].shape, sizeof(int64_t) * (size_t)*nd);
  return 0;
}

static int build_points(const sweep_opts *o, const opf_op *op, opf_dtype dt, sweep_point **out, int *np,
                        int *xlog, char *xlabel, size_t xn, char *what, size_t wn) {
  opf_err e;
  sweep_point *pts = calloc(OPF_SWEEP_MAX_POINTS, sizeof *pts);
  if (!pts) return cli_usage_error("out of memory");
  *out = pts;
  *np = 0;
  const char *first = op->in[0].name;
  if (o->kind == SW_SHAPES) {
    char *list = strdup(o->shapes), *save = NULL;
    if (!list) return cli_usage_error("out of memory");
    int rc = 0;
    for (char *item = strtok_r(list, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
      while (*item == ' ') item++;
      if (!*item) continue;
      if (*np == OPF_SWEEP_MAX_POINTS) {
        rc = cli_usage_error("--shapes: more than %d shapes", OPF_SWEEP_MAX_POINTS);
        break;
      }
      sweep_point *p = &pts[*np];
      char target[64] = "";
      char tmp[512], *s2 = NULL;
      snprintf(tmp, sizeof tmp, "%s", item);
      size_t off = 0;
      for (char *tok = strtok_r(tmp, " ", &s2); tok; tok = strtok_r(NULL, " ", &s2)) {
        const char *eq = strchr(tok, '=');
        if (!target[0]) snprintf(target, sizeof target, "%.*s", eq ? (int)(eq - tok) : (int)strlen(first), eq ? tok : first);
        off += (size_t)snprintf(p->spec + off, sizeof p->spec - off, "%s%s%s%s", off ? " " : "", eq ? "" : first,
                                eq ? "" : "=", tok);
      }
      snprintf(p->label, sizeof p->label, "%s", item);
      p->x = *np;
      if (add_fixed(o, target, p->spec, sizeof p->spec)) rc = cli_usage_error("--shapes: spec too long");
      (*np)++;
    }
    free(list);
    if (!rc && !*np) rc = cli_usage_error("--shapes: no shapes in '%s'", o->shapes);
    snprintf(xlabel, xn, "shape");
    snprintf(what, wn, "shapes %s", o->shapes);
    *xlog = 0;
    return rc;
  }
  if (o->kind == SW_ASPECT) {
    int64_t n, rows[64], cols[64];
    const char *val = o->aspect, *eq = strchr(o->aspect, '=');
    char target[64];
    snprintf(target, sizeof target, "%s", first);
    if (eq) {
      if (input_index(op, o->aspect, (size_t)(eq - o->aspect)) < 0)
        return cli_usage_error("--aspect: %s has no input '%.*s'", op->name, (int)(eq - o->aspect), o->aspect);
      snprintf(target, sizeof target, "%.*s", (int)(eq - o->aspect), o->aspect);
      val = eq + 1;
    }
    if (opf_sweep_parse_count(val, &n, &e)) return cli_usage_error("%s", e.msg);
    int k = opf_sweep_aspect(n, rows, cols, 64);
    for (int i = 0; i < k; i++) {
      sweep_point *p = &pts[i];
      snprintf(p->label, sizeof p->label, "%lldx%lld", (long long)rows[i], (long long)cols[i]);
      snprintf(p->spec, sizeof p->spec, "%s=%s", target, p->label);
      if (add_fixed(o, target, p->spec, sizeof p->spec)) return cli_usage_error("--aspect: spec too long");
      p->x = (double)rows[i];
      p->elems = n;
    }
    *np = k;
    *xlog = 1;
    snprintf(xlabel, xn, "rows of %.40s (elements; %lld in all)", target, (long long)n);
    snprintf(what, wn, "aspect sweep of %s at %lld elements", target, (long long)n);
    return 0;
  }
  opf_sweep_vary v;
  if (opf_sweep_parse_vary(o->vary, &v, &e)) return cli_usage_error("%s", e.msg);
  if (!v.input[0]) snprintf(v.input, sizeof v.input, "%s", first);
  if (input_index(op, v.input, strlen(v.input)) < 0)
    return cli_usage_error("--vary: %s has no input '%s'", op->name, v.input);
  int nd;
  int64_t shape[OPF_MAX_DIMS];
  if (base_shape(o, op, dt, v.input, &nd, shape)) return 2;
  if (v.dim >= nd)
    return cli_usage_error("--vary %s: dimension %d is out of range (input %s has %d dimension%s)", o->vary, v.dim,
                           v.input, nd, nd == 1 ? "" : "s");
  int64_t vals[OPF_SWEEP_MAX_POINTS];
  int k = opf_sweep_vary_values(&v, vals, OPF_SWEEP_MAX_POINTS);
  if (k > OPF_SWEEP_MAX_POINTS)
    return cli_usage_error("--vary %s: %d shapes, more than %d", o->vary, k, OPF_SWEEP_MAX_POINTS);
  for (int i = 0; i < k; i++) {
    sweep_point *p = &pts[i];
    shape[v.dim] = vals[i];
    shape_str(nd, shape, p->label, sizeof p->label);
    snprintf(p->spec, sizeof p->spec, "%s=%s", v.input, p->label);
    if (add_fixed(o, v.input, p->spec, sizeof p->spec)) return cli_usage_error("--vary: spec too long");
    p->x = (double)vals[i];
  }
  *np = k;
  *xlog = v.geometric;
  snprintf(xlabel, xn, "%s.dim%d (elements along the dimension)", v.input, v.dim);
  snprintf(what, wn, "%s.dim%d from %lld to %lld (%s%lld)", v.input, v.dim, (long long)v.start, (long long)v.stop,
           v.geometric ? "x" : "+", (long long)v.step);
  return 0;
}

static const char *miss_kinds[] = {"l1d-load-misses", "llc-load-misses", "dtlb-load-misses", "itlb-load-misses", NULL};
static const char *miss_sim[] = {"sim:D1mr", "sim:D1mw", "sim:DLmr", "sim:DLmw", NULL};

static int is_miss_event(const opf_event_result *ev) {
  for (int i = 0; miss_kinds[i]; i++)
    if (!strcmp(ev->kind, miss_kinds[i])) return 1;
  for (int i = 0; miss_sim[i]; i++)
    if (!strcmp(ev->name, miss_sim[i])) return 1;
  return 0;
}

typedef struct sweep_state {
  char miss_name[MAX_MISS][128];
  char miss_why[MAX_MISS][192]; /* why an event has no value (status and reason) */
  int miss_any[MAX_MISS];       /* some row has a value */
  int n_miss;
  int any_cyc_counter, any_cyc_est;
  const opf_machine *mach; /* the ceilings of `opperf machine` (roofline chart); NULL: none */
} sweep_state;

static void fill_row(sweep_state *st, const opf_context *ctx, const sweep_point *p, const opf_result *r,
                     sweep_row *row) {
  row->status = r->status;
  snprintf(row->message, sizeof row->message, "%.159s", r->message);
  row->simulated = r->simulated;
  row->time_s = row->ns_elem = row->cyc_elem = row->gbps = NAN;
  for (int i = 0; i < MAX_MISS; i++) row->miss_kib[i] = row->miss_elem[i] = NAN;
  for (int k = 0; k < OPF_TD_N1; k++) row->td[k] = NAN;
  row->intensity = row->gflops = row->roof_pct = NAN;
  row->dtype = r->dtype;
  snprintf(row->roof_level, sizeof row->roof_level, "%s", opf_roofline_label(&r->roof));
  if (r->status != OPF_ST_OK) return;
  if (r->flops > 0 && r->bytes > 0) row->intensity = r->flops / r->bytes;
  if (!r->simulated && r->flops > 0 && r->time.median > 0) row->gflops = r->flops / r->time.median / 1e9;
  if (!r->simulated && r->roofline_time > 0 && r->time.median > 0) row->roof_pct = 100 * r->roofline_time / r->time.median;
  opf_td_result td;
  if (opf_td_eval(r, 0, 0, &td) && td.has_l1)
    for (int k = 0; k < OPF_TD_N1; k++) row->td[k] = 100 * td.l1[k];
  double el = (double)p->elems;
  if (!r->simulated) {
    row->time_s = r->time.median;
    row->ns_elem = r->time.median * 1e9 / el;
    if (r->bytes > 0 && r->time.median > 0) row->gbps = r->bytes / r->time.median / 1e9;
    const opf_event_result *cyc = NULL, *tc = NULL;
    for (int i = 0; i < r->n_events; i++) {
      if (!r->events[i].has_value) continue;
      if (!strcmp(r->events[i].kind, "cycles") && !cyc) cyc = &r->events[i];
      if (!strcmp(r->events[i].kind, "task-clock") && !tc) tc = &r->events[i];
    }
    if (cyc) {
      row->cyc_elem = cyc->per_call / el;
      row->cyc_from_counter = 1;
      st->any_cyc_counter = 1;
    } else if (tc && ctx->mhz > 0) { /* task-clock counts nanoseconds of CPU time */
      row->cyc_elem = tc->per_call * 1e-9 * ctx->mhz * 1e6 / el;
      st->any_cyc_est = 1;
    }
  }
  for (int i = 0; i < r->n_events; i++) {
    const opf_event_result *ev = &r->events[i];
    if (!is_miss_event(ev)) continue;
    int k = 0;
    while (k < st->n_miss && strcmp(st->miss_name[k], ev->name)) k++;
    if (k == st->n_miss) {
      if (k == MAX_MISS) continue;
      snprintf(st->miss_name[st->n_miss++], sizeof st->miss_name[0], "%s", ev->name);
    }
    if (!ev->has_value) {
      snprintf(st->miss_why[k], sizeof st->miss_why[k], "%s%s%.160s", opf_ev_status_name(ev->status),
               ev->reason[0] ? ": " : "", ev->reason);
      continue;
    }
    st->miss_any[k] = 1;
    row->miss_elem[k] = ev->per_call / el;
    if (r->bytes > 0) row->miss_kib[k] = ev->per_call / (r->bytes / 1024);
  }
}

static const char *cache_name(int c) { return c == OPF_CACHE_COLD ? "cold" : "warm"; }

/* A number cell: "" when absent. */
static void num(char *b, size_t n, double v, const char *fmt) {
  if (isfinite(v)) snprintf(b, n, fmt, v);
  else b[0] = '\0';
}

static void render_table(FILE *f, int md, const sweep_state *st, const sweep_point *pts, const sweep_row *rows,
                         int nrows, const opf_context *ctx, const char *op, const char *what, opf_dtype dt) {
  if (md) fprintf(f, "**opperf sweep %s**: %s, %s\n\n", op, what, opf_dtype_name(dt));
  else {
    fprintf(f, "opperf sweep %s: %s, %s; %s, %d CPUs, %d thread%s\n", op, what, opf_dtype_name(dt), ctx->cpu_model,
            ctx->cpus_online, ctx->settings.threads, ctx->settings.threads == 1 ? "" : "s");
    fprintf(f, "BLAS: OpenBLAS %s%s%s\n", ctx->blas_core, ctx->blas_core_note[0] ? ", " : "",
            ctx->blas_core_note);
    if (st->any_cyc_est)
      fprintf(f, "cycles/elem estimated from task-clock x %.0f MHz, the nominal frequency (%s; no cycles counter)\n",
              ctx->mhz, ctx->mhz_source);
    if (nrows && rows[0].simulated)
      fprintf(f, "misses simulated by callgrind (times under valgrind are not real: not shown)\n");
    if (ctx->interrupted) fprintf(f, "interrupted: the shapes measured before Ctrl-C\n");
    for (int k = 0; k < st->n_miss; k++)
      if (!st->miss_any[k]) fprintf(f, "%s: no value (%s)\n", st->miss_name[k], st->miss_why[k]);
    fputc('\n', f);
  }
  int nc = 9 + 2 * st->n_miss;
  opf_textable *t = opf_textable_new(nc);
  if (!t) return;
  const char *h[] = {"cache", "pass", "shape", "elements", "time/call", "ns/elem", "cycles/elem", "GB/s"};
  for (int i = 0; i < 8; i++) opf_textable_header(t, i, h[i], i >= 3);
  for (int k = 0; k < st->n_miss; k++) {
    char b[160];
    snprintf(b, sizeof b, "%s/KiB", st->miss_name[k]);
    opf_textable_header(t, 8 + 2 * k, b, 1);
    snprintf(b, sizeof b, "%s/elem", st->miss_name[k]);
    opf_textable_header(t, 9 + 2 * k, b, 1);
  }
  opf_textable_header(t, nc - 1, "status", 0);
  for (int i = 0; i < nrows; i++) {
    const sweep_row *r = &rows[i];
    char b[64];
    opf_textable_row(t);
    opf_textable_cell(t, 0, "%s", cache_name(r->cache));
    opf_textable_cell(t, 1, "%s", opf_pass_name(r->pass));
    opf_textable_cell(t, 2, "%s", pts[r->point].label);
    opf_textable_cell(t, 3, "%lld", (long long)pts[r->point].elems);
    if (isfinite(r->time_s)) opf_textable_cell(t, 4, "%s", opf_fmt_time(r->time_s, b, sizeof b));
    num(b, sizeof b, r->ns_elem, "%.3f");
    opf_textable_cell(t, 5, "%s", b);
    num(b, sizeof b, r->cyc_elem, "%.3f");
    opf_textable_cell(t, 6, "%s%s", b, b[0] && !r->cyc_from_counter ? "*" : "");
    num(b, sizeof b, r->gbps, "%.3g");
    opf_textable_cell(t, 7, "%s", b);
    for (int k = 0; k < st->n_miss; k++) {
      num(b, sizeof b, r->miss_kib[k], "%.3g");
      opf_textable_cell(t, 8 + 2 * k, "%s", b);
      num(b, sizeof b, r->miss_elem[k], "%.4g");
      opf_textable_cell(t, 9 + 2 * k, "%s", b);
    }
    int msg = r->status != OPF_ST_OK && r->message[0];
    opf_textable_cell(t, nc - 1, "%s%s%s", opf_status_name(r->status), msg ? ": " : "", msg ? r->message : "");
  }
  opf_textable_print(t, f, md);
  opf_textable_free(t);
  if (md && st->any_cyc_est) fprintf(f, "\n\\* cycles estimated from task-clock x %.0f MHz\n", ctx->mhz);
}

static void csv_field(FILE *f, const char *s) {
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
}

static void render_csv(FILE *f, const sweep_state *st, const sweep_point *pts, const sweep_row *rows, int nrows,
                       const char *op, opf_dtype dt) {
  fputs("op,dtype,cache,pass,shape,spec,elements,time_per_call_s,ns_per_elem,cycles_per_elem,cycles_source,gbps", f);
  for (int k = 0; k < st->n_miss; k++) {
    fputs(",", f);
    char b[160];
    snprintf(b, sizeof b, "%s_per_kib", st->miss_name[k]);
    csv_field(f, b);
    fputs(",", f);
    snprintf(b, sizeof b, "%s_per_elem", st->miss_name[k]);
    csv_field(f, b);
  }
  fputs(",status,message\n", f);
  for (int i = 0; i < nrows; i++) {
    const sweep_row *r = &rows[i];
    char b[64];
    csv_field(f, op);
    fprintf(f, ",%s,%s,%s,", opf_dtype_name(dt), cache_name(r->cache), opf_pass_name(r->pass));
    csv_field(f, pts[r->point].label);
    fputc(',', f);
    csv_field(f, pts[r->point].spec);
    fprintf(f, ",%lld", (long long)pts[r->point].elems);
    double v[4] = {r->time_s, r->ns_elem, r->cyc_elem, r->gbps};
    for (int k = 0; k < 4; k++) {
      num(b, sizeof b, v[k], "%.9g");
      fprintf(f, ",%s", b);
      if (k == 2) fprintf(f, ",%s", isfinite(r->cyc_elem) ? r->cyc_from_counter ? "counter" : "task-clock*mhz" : "");
    }
    for (int k = 0; k < st->n_miss; k++) {
      num(b, sizeof b, r->miss_kib[k], "%.9g");
      fprintf(f, ",%s", b);
      num(b, sizeof b, r->miss_elem[k], "%.9g");
      fprintf(f, ",%s", b);
    }
    fprintf(f, ",%s,", opf_status_name(r->status));
    csv_field(f, r->message);
    fputc('\n', f);
  }
}

static void jadd(cJSON *o, const char *k, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
  else cJSON_AddNullToObject(o, k);
}

static char *render_json(const sweep_state *st, const sweep_point *pts, const sweep_row *rows, int nrows,
                         const opf_context *ctx, const char *op, const char *what, opf_dtype dt) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "schema_version", OPF_SCHEMA_VERSION);
  cJSON_AddStringToObject(root, "kind", "sweep");
  cJSON_AddStringToObject(root, "op", op);
  cJSON_AddStringToObject(root, "sweep", what);
  cJSON_AddStringToObject(root, "dtype", opf_dtype_name(dt));
  cJSON *c = cJSON_AddObjectToObject(root, "context");
  cJSON_AddStringToObject(c, "tool_version", ctx->tool_version);
  cJSON_AddStringToObject(c, "git_hash", ctx->git_hash);
  cJSON_AddStringToObject(c, "cpu_model", ctx->cpu_model);
  cJSON_AddNumberToObject(c, "cpus_online", ctx->cpus_online);
  cJSON_AddNumberToObject(c, "mhz", ctx->mhz);
  cJSON_AddNumberToObject(c, "threads", ctx->settings.threads);
  cJSON_AddStringToObject(c, "events", ctx->settings.events);
  cJSON_AddStringToObject(c, "timestamp", ctx->timestamp);
  cJSON_AddStringToObject(c, "command", ctx->command);
  cJSON *blas = cJSON_AddObjectToObject(c, "blas"); /* as opperf run's context: src/cli/blas.c */
  cJSON_AddStringToObject(blas, "core", ctx->blas_core);
  cJSON_AddStringToObject(blas, "core_source", ctx->blas_core_source);
  cJSON_AddStringToObject(blas, "core_openblas", ctx->blas_core_openblas);
  cJSON_AddStringToObject(blas, "cpu_family", ctx->blas_cpu_family);
  cJSON_AddStringToObject(blas, "core_note", ctx->blas_core_note);
  cJSON_AddStringToObject(c, "environment", ctx->env);
  if (ctx->interrupted) cJSON_AddTrueToObject(c, "interrupted"); /* SIGINT/SIGTERM: partial sweep */
  cJSON *pa = cJSON_AddArrayToObject(root, "points");
  for (int i = 0; i < nrows; i++) {
    const sweep_row *r = &rows[i];
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "cache", cache_name(r->cache));
    cJSON_AddStringToObject(p, "pass", opf_pass_name(r->pass));
    cJSON_AddStringToObject(p, "shape", pts[r->point].label);
    cJSON_AddStringToObject(p, "spec", pts[r->point].spec);
    cJSON_AddNumberToObject(p, "x", pts[r->point].x);
    cJSON_AddNumberToObject(p, "elements", (double)pts[r->point].elems);
    jadd(p, "time_per_call_s", r->time_s);
    jadd(p, "ns_per_elem", r->ns_elem);
    jadd(p, "cycles_per_elem", r->cyc_elem);
    if (isfinite(r->cyc_elem)) cJSON_AddStringToObject(p, "cycles_source", r->cyc_from_counter ? "counter" : "task-clock*mhz");
    jadd(p, "gbps", r->gbps);
    jadd(p, "roofline_pct", r->roof_pct);
    if (r->roof_level[0]) cJSON_AddStringToObject(p, "roofline_level", r->roof_level);
    cJSON *m = cJSON_AddObjectToObject(p, "misses");
    for (int k = 0; k < st->n_miss; k++) {
      cJSON *e = cJSON_AddObjectToObject(m, st->miss_name[k]);
      jadd(e, "per_kib", r->miss_kib[k]);
      jadd(e, "per_elem", r->miss_elem[k]);
    }
    cJSON_AddBoolToObject(p, "simulated", r->simulated);
    cJSON_AddStringToObject(p, "status", opf_status_name(r->status));
    cJSON_AddStringToObject(p, "message", r->message);
    cJSON_AddItemToArray(pa, p);
  }
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  return s;
}

static int write_plot(const sweep_opts *o, const sweep_state *st, const sweep_point *pts, int np, const sweep_row *rows, int nrows,
                      int xlog, const char *xlabel, const char *op, const char *what, int *cmodes, int ncm,
                      opf_pass *passes, int npass, opf_err *e) {
  int ns = ncm * npass, rc;
  opf_svg_series *se = calloc((size_t)ns, sizeof *se);
  double *xs = calloc((size_t)(ns * np) + 1, sizeof *xs), *ys = calloc((size_t)(ns * np) + 1, sizeof *ys);
  char(*labels)[64] = calloc((size_t)ns, sizeof *labels);
  const char **cats = calloc((size_t)np, sizeof *cats);
  if (!se || !xs || !ys || !labels || !cats) {
    rc = opf_err_set(e, OPF_ENOMEM, "out of memory");
    goto out;
  }
  const char *m = o->plot_metric, *ylabel = "time per element (ns)";
  char ybuf[200];
  int miss = -1; /* misses:EVENT: index in st->miss_name */
  if (!m) m = nrows && rows[0].simulated && st->n_miss ? "misses:" : "ns-per-elem";
  if (!strncmp(m, "misses:", 7)) {
    for (int k = 0; k < st->n_miss && miss < 0; k++)
      if (!m[7] || !strcmp(st->miss_name[k], m + 7)) miss = k;
    if (miss < 0) {
      rc = opf_err_set(e, OPF_EINVAL, "--plot-metric %s: no such miss counter in this sweep", m);
      goto out;
    }
    snprintf(ybuf, sizeof ybuf, "%s misses per KiB of traffic%s", st->miss_name[miss],
             nrows && rows[0].simulated ? " (simulated)" : "");
    ylabel = ybuf;
  }
  int roof = !strcmp(m, "roofline"), roofpct = !strcmp(m, "roofline-pct");
  if ((roof || roofpct) && !st->mach) {
    rc = opf_err_set(e, OPF_EINVAL, "--plot-metric %s needs this machine's ceilings: run `opperf machine` first", m);
    goto out;
  }
  if (roof) ylabel = "GFLOP/s (models' FLOP at the median time)";
  if (roofpct) ylabel = "% of the attainable (cache-aware roofline)";
  if (!strcmp(m, "time")) ylabel = "time per call (us)";
  else if (!strcmp(m, "gbps")) ylabel = "bandwidth from the bytes model (GB/s)";
  else if (!strcmp(m, "cycles-per-elem")) ylabel = "cycles per element";
  int tdm = td_metric(m);
  if (tdm >= 0) {
    static const char *const what_td[OPF_TD_N1] = {"retiring", "bad speculation", "front-end bound",
                                                   "back-end bound"};
    snprintf(ybuf, sizeof ybuf, "%s (%% of slots, top-down)", what_td[tdm]);
    ylabel = ybuf;
  }
  double ymin = INFINITY, ymax = 0;
  for (int c = 0; c < ncm; c++)
    for (int p = 0; p < npass; p++) {
      int s = c * npass + p;
      snprintf(labels[s], sizeof labels[s], "%s, %s cache", opf_pass_name(passes[p]), cache_name(cmodes[c]));
      se[s].label = labels[s];
      se[s].x = xs + (size_t)s * (size_t)np;
      se[s].y = ys + (size_t)s * (size_t)np;
      se[s].n = np;
      for (int i = 0; i < np; i++) {
        xs[(size_t)s * (size_t)np + (size_t)i] = pts[i].x;
        ys[(size_t)s * (size_t)np + (size_t)i] = NAN;
      }
    }
  for (int i = 0; i < nrows; i++) {
    const sweep_row *r = &rows[i];
    int c = 0, p = 0;
    while (c < ncm && cmodes[c] != r->cache) c++;
    while (p < npass && passes[p] != r->pass) p++;
    double v = tdm >= 0 ? r->td[tdm] : miss >= 0 ? r->miss_kib[miss] : !strcmp(m, "time") ? r->time_s * 1e6 : !strcmp(m, "gbps") ? r->gbps
             : !strcmp(m, "cycles-per-elem") ? r->cyc_elem : roof ? r->gflops : roofpct ? r->roof_pct : r->ns_elem;
    if (roof) xs[(size_t)(c * npass + p) * (size_t)np + (size_t)r->point] = r->intensity;
    ys[(size_t)(c * npass + p) * (size_t)np + (size_t)r->point] = v;
    if (isfinite(v) && v > 0) ymin = fmin(ymin, v), ymax = fmax(ymax, v);
  }
  if (tdm >= 0 && !(ymax > 0)) {
    rc = opf_err_set(e, OPF_EINVAL, "--plot-metric %s: no top-down shares in this sweep (needs "
                     "--events topdown on a CPU whose counters count them: see the report)", m);
    goto out;
  }
  if (roof && !(ymax > 0)) {
    rc = opf_err_set(e, OPF_EINVAL, "--plot-metric roofline: no case with FLOPs in this sweep (a data-movement "
                     "operator has no place on it; try roofline-pct)");
    goto out;
  }
  for (int i = 0; i < np; i++) cats[i] = pts[i].label;
  char title[512];
  snprintf(title, sizeof title, "opperf sweep %s: %s", op, what);
  opf_svg_plot plot = {.title = title, .xlabel = xlabel, .ylabel = ylabel, .xlog = xlog,
                       .ylog = ymax > 0 && ymax / ymin > 30, .xcat = o->kind == SW_SHAPES ? cats : NULL,
                       .n_xcat = o->kind == SW_SHAPES ? np : 0, .n_series = ns, .series = se};
  opf_svg_roof roofs[OPF_MEM_LEVELS];
  char roof_labels[OPF_MEM_LEVELS][48], cap[96];
  if (roof) { /* the cache-aware roofline chart: the ceilings of `opperf machine` */
    plot.n_roofs = opf_roofline_chart(st->mach, nrows ? rows[0].dtype : OPF_F32, o->s.threads, roofs, roof_labels, cap, sizeof cap);
    plot.roofs = roofs, plot.cap_label = cap, plot.xlog = plot.ylog = 1, plot.xcat = NULL, plot.n_xcat = 0;
    plot.xlabel = "arithmetic intensity (FLOP/byte, models)";
  }
  char *buf = NULL;
  size_t len = 0;
  rc = opf_svg_render(&plot, &buf, &len, e);
  if (!rc) rc = opf_write_atomic(o->plot, buf, len, e);
  free(buf);
out:
  free(se);
  free(xs);
  free(ys);
  free(labels);
  free(cats);
  return rc;
}

int cmd_sweep(int argc, char **argv) {
  sweep_opts o;
  memset(&o, 0, sizeof o);
  cli_backend_save_args(argc, argv);
  cli_blas_save_args(argc, argv);
  char command[512];
  cli_join_argv(argc, argv, command, sizeof command);
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc < 0 ? EXIT_OK : EXIT_USAGE;
  o.verbose |= cli_verbose_env();
  const opf_op *op = opf_op_find(argv[optind]);
  if (!op) return cli_unknown_op(argv[optind]);
  /* OpenBLAS's kernel family: may re-execute this command with OPENBLAS_CORETYPE set. */
  if (cli_blas_setup(o.blas_kernel, o.backend == CLI_BK_NATIVE)) return EXIT_USAGE;
  int pass_mask;
  if (cli_parse_passes(o.passes, &pass_mask)) return EXIT_USAGE;
  opf_pass passes[OPF_NPASSES];
  int npass = 0;
  for (int p = 0; p < OPF_NPASSES; p++)
    if (pass_mask >> p & 1) passes[npass++] = (opf_pass)p;
  int cmodes[2], ncm = 0;
  {
    char b[64], *save = NULL;
    snprintf(b, sizeof b, "%s", o.caches);
    for (char *t = strtok_r(b, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      int m = !strcmp(t, "warm") ? OPF_CACHE_WARM : !strcmp(t, "cold") ? OPF_CACHE_COLD : -1;
      if (m < 0) return cli_usage_error("--cache takes warm, cold or warm,cold, not '%s'", t);
      if (ncm == 2 || (ncm == 1 && cmodes[0] == m)) return cli_usage_error("--cache: '%s' given twice", t);
      cmodes[ncm++] = m;
    }
    if (!ncm) return cli_usage_error("--cache needs warm, cold or warm,cold");
  }
  opf_dtype dt;
  if (o.dtype) {
    int d = opf_dtype_parse(o.dtype);
    if (d < 0) return cli_usage_error("sweep: unknown dtype '%s' (give one of float32, float64, int32, int64, bool)", o.dtype);
    if (!(op->dtypes & OPF_DT_BIT(d))) return cli_usage_error("operator '%s' does not support dtype %s", op->name, o.dtype);
    dt = (opf_dtype)d;
  } else {
    dt = op->dtypes & OPF_DT_BIT(OPF_F32) ? OPF_F32 : (opf_dtype)__builtin_ctz(op->dtypes);
  }

  sweep_point *pts = NULL;
  int np = 0, xlog = 0;
  char xlabel[160], what[256];
  rc = build_points(&o, op, dt, &pts, &np, &xlog, xlabel, sizeof xlabel, what, sizeof what);
  /* Validate every shape (and its memory) before measuring or writing anything. */
  opf_case *cases = rc ? NULL : calloc((size_t)np, sizeof *cases);
  if (!rc && !cases) rc = cli_usage_error("out of memory");
  for (int i = 0; !rc && i < np; i++) {
    opf_err e;
    if (opf_case_init(&cases[i], op, dt, pts[i].spec, &e)) {
      rc = cli_usage_error("%s", e.msg);
      break;
    }
    char target[64];
    const char *eq = strchr(pts[i].spec, '=');
    snprintf(target, sizeof target, "%.*s", (int)(eq - pts[i].spec), pts[i].spec);
    int ti = input_index(op, target, strlen(target));
    if (ti >= 0 && !pts[i].elems) pts[i].elems = opf_numel(&cases[i].in[ti]);
    if (pts[i].elems < 1) pts[i].elems = 1;
    for (int p = 0; p < npass; p++)
      if (passes[p] != OPF_PASS_FWD && !opf_case_has_backward(&cases[i])) {
        rc = cli_usage_error("%s has no backward pass (use --pass fwd)", op->name);
        break;
      }
    uint64_t need = opf_case_footprint(&cases[i], npass > 1 || passes[0] != OPF_PASS_FWD), avail = opf_mem_available();
    if (!rc && (need == UINT64_MAX || (avail && need > avail))) {
      char a[32], b[32];
      rc = cli_usage_error("%s %s: the case needs %s but only %s of memory is available", op->name, pts[i].label,
                           need == UINT64_MAX ? "more than 2^62 bytes" : opf_fmt_bytes((double)need, a, sizeof a),
                           opf_fmt_bytes((double)avail, b, sizeof b));
    }
  }
  if (rc) {
    free(pts);
    free(cases);
    return EXIT_USAGE;
  }

  cli_backend bk;
  rc = cli_backend_setup(&bk, o.backend, &o.s);
  if (rc != CLI_BACKEND_MEASURE) {
    free(pts);
    free(cases);
    return rc;
  }
  /* The run pipeline (src/session.c), as `opperf run` uses it; the sweep's own table, CSV and
   * JSON (points with per-element figures) are rendered at the end, the trace streams. */
  opf_err e;
  memset(&e, 0, sizeof e);
  opf_session *ses = NULL;
  if (opf_session_new(&ses, &o.s, command, &e) ||
      (o.fmt == OPF_FMT_TRACE && opf_session_add_output(ses, OPF_FMT_TRACE, o.output, &e)) ||
      opf_session_start(ses, &e)) {
    opf_session_free(ses);
    free(pts);
    free(cases);
    return cli_usage_error("%s", e.msg);
  }
  opf_settings *ss = opf_session_settings(ses);
  cli_region reg;
  if (cli_region_setup(&reg, ss, o.perf_ctl)) {
    opf_session_free(ses);
    free(pts);
    free(cases);
    return EXIT_USAGE;
  }
  cli_region_install(&reg, ss);
  opf_context *ctx = opf_session_context(ses);
  int nrows_max = np * npass * ncm, nrows = 0, failed = 0;
  sweep_row *rows = calloc((size_t)nrows_max, sizeof *rows);
  rc = !rows ? opf_err_set(&e, OPF_ENOMEM, "out of memory") : 0;
  if (!rc) {
    cli_blas_context(ctx);
    rc = cli_backend_context(&bk, ctx, &e);
  }
  if (!rc) rc = opf_session_begin(ses, &e);
  sweep_state st;
  memset(&st, 0, sizeof st);
  st.mach = opf_session_machine(ses); /* the session places each result on the roofline */
  int tty = isatty(2) && !o.verbose, done = 0;
  cli_stop_install(0);
  for (int c = 0; !rc && c < ncm && !cli_stop_requested; c++) {
    o.s.cache = ss->cache = (opf_cache_mode)cmodes[c];
    for (int i = 0; i < np && !cli_stop_requested; i++)
      for (int p = 0; p < npass && !cli_stop_requested; p++) {
        if (tty) fprintf(stderr, "\r\033[K[%d/%d] %s %s %s %s", ++done, nrows_max, op->name, pts[i].label,
                         opf_pass_name(passes[p]), cache_name(cmodes[c]));
        opf_result r;
        ss->case_index = nrows;
        opf_session_measure(ses, &cases[i], "sweep", passes[p], &r);
        cli_backend_result(&bk, &r);
        sweep_row *row = &rows[nrows++];
        row->point = i;
        row->cache = cmodes[c];
        row->pass = passes[p];
        fill_row(&st, ctx, &pts[i], &r, row);
        failed += r.status >= OPF_ST_ERROR;
        if (o.verbose) cli_verbose_line("sweep", &r, &o.s);
        opf_session_record(ses, &r); /* the trace, when that is the format */
        opf_result_release(&r);
      }
  }
  if (tty) fputs("\r\033[K", stderr);
  cli_region_finish(&reg);
  if (!rc) {
    if (cli_stop_requested) ctx->interrupted = 1;
    rc = opf_session_end(ses, 1, &e); /* the context's end figures; a trace is written here */
  }
  if (!rc) {
    o.s.cache = (opf_cache_mode)cmodes[0];
    const char *opname = op->name;
    if (o.plot) rc = write_plot(&o, &st, pts, np, rows, nrows, xlog, xlabel, opname, what, cmodes, ncm, passes, npass, &e);
    if (!rc && o.fmt != OPF_FMT_TRACE) {
      char *buf = NULL;
      size_t len = 0;
      if (o.fmt == OPF_FMT_JSON) {
        buf = render_json(&st, pts, rows, nrows, ctx, opname, what, dt);
        if (buf) {
          len = strlen(buf);
          buf[len] = '\0';
        }
        if (buf) { /* a final newline */
          char *b2 = realloc(buf, len + 2);
          if (b2) {
            buf = b2;
            buf[len++] = '\n';
            buf[len] = '\0';
          }
        }
      } else {
        FILE *f = open_memstream(&buf, &len);
        if (f) {
          if (o.fmt == OPF_FMT_CSV) render_csv(f, &st, pts, rows, nrows, opname, dt);
          else render_table(f, o.fmt == OPF_FMT_MD, &st, pts, rows, nrows, ctx, opname, what, dt);
          fclose(f);
        }
      }
      if (!buf) rc = opf_err_set(&e, OPF_ENOMEM, "cannot render the report");
      else if (o.output && strcmp(o.output, "-")) rc = opf_write_atomic(o.output, buf, len, &e);
      else if (fwrite(buf, 1, len, stdout) != len) rc = opf_err_set(&e, OPF_EIO, "cannot write to standard output");
      fflush(stdout);
      free(buf);
    }
  }
  opf_session_free(ses); /* ends an unfinished trace without writing it */
  free(rows);
  free(pts);
  free(cases);
  if (rc) return cli_usage_error("%s", e.msg[0] ? e.msg : "cannot write the report");
  if (cli_stop_requested) {
    fprintf(stderr, "opperf: interrupted: %d of %d sweep points done, results written\n", nrows, nrows_max);
    return 130;
  }
  return failed ? EXIT_FAILED : EXIT_OK;
}

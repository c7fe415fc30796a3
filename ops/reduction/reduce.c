/* reduce.c: sum, mean, max and argmax over one axis (or all) with keepdims, and the backward
 * of sum, mean and max. Every shape is an (outer, n, inner) triple: contiguous rows (inner 1)
 * reduce in 64 vector lanes, outer axes stream rows into an L1-resident accumulator row, and
 * the work is split into shape-determined tasks so results do not depend on the thread count. */
#include "reduction/reduce.h"

enum { RED_SUM, RED_MEAN, RED_MAX, RED_ARGMAX };

/* Task sizing: a task covers at least RED_TASK_WORK elements when the shape allows; when there
 * are fewer than RED_MIN_TASKS (outer block, column block) pairs, the reduced axis is cut into
 * at most RED_MAX_SEG segments whose partials are combined afterwards. */
#define RED_TASK_WORK 16384
#define RED_MIN_TASKS 16
#define RED_MAX_SEG 16

typedef struct red_plan {
  int kind;
  opf_rgeom g;
  double scale;        /* 1, or 1/n for mean */
  int64_t m;           /* wide-row factor (inner > 1 only), else 1 */
  int64_t ncb, cbw;    /* column blocks of the inner extent and their width */
  int64_t ochunk, nob; /* outer rows per task and outer blocks */
  int64_t S, seg;      /* segments of the reduced axis and rows per segment */
  int64_t ntask, nout;
} red_plan;

typedef struct red_run {
  const red_plan *p;
  const void *x;
  void *out;   /* values, or int64 indices for argmax */
  void *pv;    /* segment partials (S > 1): S x nout of RA (sums) or RT (max/argmax) */
  int64_t *pi; /* segment partial indices (argmax) */
} red_run;

static red_plan red_make_plan(const opf_case *c, int kind) {
  red_plan p = {.kind = kind, .scale = 1, .m = 1, .ncb = 1, .cbw = 1, .S = 1};
  const int all = c->p[0] == OPF_AXIS_ALL;
  p.g = opf_red_geom(&c->in[0], all ? 0 : opf_axis(c->p[0], c->in[0].ndim), all);
  const int64_t outer = p.g.outer, n = p.g.n, inner = p.g.inner;
  p.nout = outer * inner;
  if (kind == RED_MEAN && n > 0) p.scale = 1.0 / (double)n;
  if (inner > 1) {
    p.m = opf_red_wide_m(inner);
    /* argmax re-reads a chunk of rows per column block from L1: narrower blocks let a chunk
     * hold more rows, amortising the per-chunk merge */
    p.cbw = p.m > 1 ? inner : kind == RED_ARGMAX ? OPF_RED_CB / 4 : OPF_RED_CB;
    p.ncb = (inner + p.cbw - 1) / p.cbw;
  }
  const int64_t per_o = n * inner, work = outer * per_o;
  p.ochunk = per_o > 0 ? RED_TASK_WORK / per_o : outer;
  if (p.ochunk > (outer + RED_MIN_TASKS - 1) / RED_MIN_TASKS)
    p.ochunk = (outer + RED_MIN_TASKS - 1) / RED_MIN_TASKS;
  if (p.ochunk < 1) p.ochunk = 1;
  p.nob = outer > 0 ? (outer + p.ochunk - 1) / p.ochunk : 0;
  const int64_t base = p.nob * p.ncb;
  if (base > 0 && base < RED_MIN_TASKS) {
    int64_t s = work / (base * RED_TASK_WORK), want = (RED_MIN_TASKS + base - 1) / base;
    p.S = s < want ? s : want;
  }
  if (p.S > RED_MAX_SEG) p.S = RED_MAX_SEG;
  if (p.S < 1) p.S = 1;
  p.seg = (n + p.S - 1) / p.S;
  if (p.seg > 0) p.S = (n + p.seg - 1) / p.seg; /* no empty segment */
  else p.S = 1;
  p.ntask = base * p.S;
  return p;
}

/* Workspace: [argmax indices for max's backward][segment partial values][partial indices]. */
typedef struct red_ws {
  size_t idx, pv, pi, total;
} red_ws;

static size_t red_round(size_t b) { return (b + OPF_ALIGN - 1) / OPF_ALIGN * OPF_ALIGN; }

static red_ws red_ws_layout(const red_plan *p, int kind) {
  red_ws w = {0, 0, 0, 0};
  size_t no = (size_t)p->nout, part = p->S > 1 ? (size_t)p->S * no * 8 : 0;
  size_t idx = kind == RED_MAX ? red_round(no * 8) : 0;
  w.pv = idx;
  w.pi = w.pv + red_round(part);
  w.total = w.pi + (kind == RED_MAX || kind == RED_ARGMAX ? red_round(part) : 0);
  return w;
}

#define RT float
#define RL float
#define RA double
#define RX int32_t
#define RFLOAT 1
#define RSUF f32
#include "reduction/reduce_drv.h"
#define RT double
#define RL double
#define RA double
#define RX int64_t
#define RFLOAT 1
#define RSUF f64
#include "reduction/reduce_drv.h"
#define RT int32_t
#define RL uint32_t
#define RA uint64_t
#define RX int32_t
#define RFLOAT 0
#define RSUF i32
#include "reduction/reduce_drv.h"
#define RT int64_t
#define RL uint64_t
#define RA uint64_t
#define RX int64_t
#define RFLOAT 0
#define RSUF i64
#include "reduction/reduce_drv.h"

typedef void (*red_task_fn)(const red_run *, int64_t);
typedef void (*red_finish_fn)(const red_run *);
static const red_task_fn red_tasks[OPF_NDTYPES] = {red_task_f32, red_task_f64, red_task_i32,
                                                   red_task_i64};
static const red_finish_fn red_finishes[OPF_NDTYPES] = {red_finish_f32, red_finish_f64,
                                                        red_finish_i32, red_finish_i64};

/* Run a plan on x into out (values, or indices for RED_ARGMAX), partials in the workspace
 * laid out for the operator ws_kind (max's backward runs an argmax plan in max's workspace). */
static void red_run_plan(opf_case *c, const red_plan *p, int ws_kind, void *out) {
  red_ws w = red_ws_layout(p, ws_kind);
  red_run r = {p, c->in[0].data, out, (char *)c->ws + w.pv, (int64_t *)((char *)c->ws + w.pi)};
  if (p->kind != RED_ARGMAX && p->kind != RED_MAX) r.pi = NULL;
  const red_task_fn task = red_tasks[c->dtype];
  const int64_t work = p->g.outer * p->g.n * p->g.inner;
  if (work > OPF_PAR_MIN && p->ntask > 1 && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < p->ntask; t++) task(&r, t);
  } else {
    for (int64_t t = 0; t < p->ntask; t++) task(&r, t);
  }
  if (p->S > 1) red_finishes[c->dtype](&r);
}

static int red_forward_kind(opf_case *c, int kind) {
  const red_plan p = red_make_plan(c, kind);
  if (p.nout == 0) return OPF_OK;
  if (p.g.n == 0) { /* empty sum is 0, empty mean is NaN (max/argmax were refused by infer) */
    if (kind == RED_MEAN)
      for (int64_t e = 0; e < p.nout; e++) {
        if (c->dtype == OPF_F32) ((float *)c->out[0].data)[e] = NAN;
        else ((double *)c->out[0].data)[e] = NAN;
      }
    else memset(c->out[0].data, 0, c->out[0].nbytes);
    return OPF_OK;
  }
  red_run_plan(c, &p, kind, c->out[0].data);
  return OPF_OK;
}

static int sum_forward(opf_case *c) { return red_forward_kind(c, RED_SUM); }
static int mean_forward(opf_case *c) { return red_forward_kind(c, RED_MEAN); }
static int max_forward(opf_case *c) { return red_forward_kind(c, RED_MAX); }
static int argmax_forward(opf_case *c) { return red_forward_kind(c, RED_ARGMAX); }

/* ---- backward ---- */
typedef struct red_bwd_ctx {
  opf_case *c;
  const opf_rgeom *g;
  double s;
  const int64_t *idx;
} red_bwd_ctx;

static void bcast_range(int64_t lo, int64_t hi, void *p) {
  const red_bwd_ctx *b = p;
  opf_case *c = b->c;
  if (c->dtype == OPF_F32)
    red_bcast_f32(b->g, c->gout[0].data, c->gin[0].data, (float)b->s, lo, hi);
  else
    red_bcast_f64(b->g, c->gout[0].data, c->gin[0].data, b->s, lo, hi);
}

static void bcast_rows_range(int64_t lo, int64_t hi, void *p) {
  const red_bwd_ctx *b = p;
  bcast_range(lo * b->g->n, hi * b->g->n, p);
}

/* sum: dx = broadcast(dy); mean: dx = broadcast(dy) / n. Many contiguous rows (inner 1) are
 * split between threads by whole rows (short rows then take the unrolled path), everything
 * else by flat ranges. */
static int red_bcast_backward(opf_case *c, int kind) {
  if (!c->gin[0].data) return OPF_OK;
  const red_plan p = red_make_plan(c, kind);
  red_bwd_ctx b = {c, &p.g, p.scale, NULL};
  if (p.g.inner == 1 && p.g.n > 0 && p.g.outer >= 64)
    opf_parallel_range(p.g.outer, (OPF_PAR_MIN + p.g.n - 1) / p.g.n, bcast_rows_range, &b);
  else
    opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, bcast_range, &b);
  return OPF_OK;
}

static int sum_backward(opf_case *c) { return red_bcast_backward(c, RED_SUM); }
static int mean_backward(opf_case *c) { return red_bcast_backward(c, RED_MEAN); }

static void max_rows_range(int64_t lo, int64_t hi, void *p) {
  const red_bwd_ctx *b = p;
  opf_case *c = b->c;
  if (c->dtype == OPF_F32)
    red_max_bwd_rows_f32(b->g, c->in[0].data, c->out[0].data, c->gout[0].data, c->gin[0].data,
                         lo, hi);
  else
    red_max_bwd_rows_f64(b->g, c->in[0].data, c->out[0].data, c->gout[0].data, c->gin[0].data,
                         lo, hi);
}

static void zero_range(int64_t lo, int64_t hi, void *p) {
  opf_case *c = ((const red_bwd_ctx *)p)->c;
  size_t es = opf_dtype_size(c->dtype);
  memset((char *)c->gin[0].data + (size_t)lo * es, 0, (size_t)(hi - lo) * es);
}

static void scatter_range(int64_t lo, int64_t hi, void *p) {
  const red_bwd_ctx *b = p;
  opf_case *c = b->c;
  if (c->dtype == OPF_F32)
    red_max_scatter_f32(b->g, b->idx, c->gout[0].data, c->gin[0].data, lo, hi);
  else
    red_max_scatter_f64(b->g, b->idx, c->gout[0].data, c->gin[0].data, lo, hi);
}

static void max_find_task(opf_case *c, const red_plan *p, int64_t *idx, int64_t t) {
  const int64_t o = t / p->ncb, j0 = (t % p->ncb) * p->cbw;
  const int64_t w = p->g.inner - j0 < p->cbw ? p->g.inner - j0 : p->cbw;
  const int64_t xo = o * p->g.n * p->g.inner + j0, e = o * p->g.inner + j0;
  if (c->dtype == OPF_F32)
    red_max_find_cols_f32(p, (const float *)c->in[0].data + xo, (const float *)c->out[0].data + e,
                          w, idx + e);
  else
    red_max_find_cols_f64(p, (const double *)c->in[0].data + xo,
                          (const double *)c->out[0].data + e, w, idx + e);
}

/* max: the gradient goes to the first maximal element of each reduced line (the forward's
 * tie rule); everything else is 0. The forward's y is exactly each line's max, so only its
 * first position is searched: along contiguous rows, or down the columns of each (outer,
 * column block) into the workspace, after which dx is zeroed in parallel and dy scattered. */
static int max_backward(opf_case *c) {
  if (!c->gin[0].data) return OPF_OK;
  const red_plan p = red_make_plan(c, RED_ARGMAX);
  if (p.nout == 0 || p.g.n == 0) return OPF_OK;
  int64_t *idx = c->ws; /* layout offset 0 */
  red_bwd_ctx b = {c, &p.g, 1, idx};
  if (p.g.inner == 1 || p.g.n >= INT32_MAX) {
    if (p.g.inner == 1 && p.g.outer >= 64) {
      opf_parallel_range(p.g.outer, (OPF_PAR_MIN + p.g.n - 1) / p.g.n, max_rows_range, &b);
      return OPF_OK;
    }
    red_run_plan(c, &p, RED_MAX, idx); /* few long rows (parallel by segments), or huge n */
  } else {
    /* the column search streams whole rows of its block: blocks of 512 keep each row read one
     * or half a page long (argmax's 256 restart the prefetcher too often) and still give a
     * (1024, 1024) axis 0 two tasks */
    red_plan pf = red_make_plan(c, RED_MAX);
    if (pf.m == 1) {
      pf.cbw = OPF_RED_CB / 2;
      pf.ncb = (pf.g.inner + pf.cbw - 1) / pf.cbw;
    }
    const int64_t ntask = p.g.outer * pf.ncb;
    if (opf_numel(&c->in[0]) > OPF_PAR_MIN && ntask > 1 && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
      for (int64_t t = 0; t < ntask; t++) max_find_task(c, &pf, idx, t);
    } else {
      for (int64_t t = 0; t < ntask; t++) max_find_task(c, &pf, idx, t);
    }
  }
  opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, zero_range, &b);
  opf_parallel_range(p.nout, OPF_PAR_MIN, scatter_range, &b);
  return OPF_OK;
}

/* ---- infer ---- */
static int red_infer_kind(opf_case *c, int kind) {
  if (c->in[0].ndim < 0) return OPF_OK; /* "needs a shape" is reported by the caller */
  int axis, all;
  int rc = opf_red_axis(c, c->p[0], 1, &axis, &all);
  if (rc) return rc;
  const red_plan p = red_make_plan(c, kind);
  if ((kind == RED_MAX || kind == RED_ARGMAX) && p.g.n == 0) {
    char s[96];
    return opf_case_error(c, OPF_EINVAL, "%s of an empty axis: input 'x' %s has size 0 on the reduced axis",
                          c->op->name, opf_shape_str(&c->in[0], s, sizeof s));
  }
  opf_red_set_out(c, kind == RED_ARGMAX ? OPF_I64 : c->dtype, axis, all, c->p[1] != 0);
  c->ws_bytes = red_ws_layout(&p, kind).total;
  if (kind == RED_MAX) { /* the backward may run an argmax plan (other segments) in this space */
    const red_plan pa = red_make_plan(c, RED_ARGMAX);
    const size_t b = red_ws_layout(&pa, RED_MAX).total;
    if (b > c->ws_bytes) c->ws_bytes = b;
  }
  return OPF_OK;
}

static int sum_infer(opf_case *c) { return red_infer_kind(c, RED_SUM); }
static int mean_infer(opf_case *c) { return red_infer_kind(c, RED_MEAN); }
static int max_infer(opf_case *c) { return red_infer_kind(c, RED_MAX); }
static int argmax_infer(opf_case *c) { return red_infer_kind(c, RED_ARGMAX); }

/* ---- reference: one output element at a time, the reduced line walked in order ---- */
static int red_reference_kind(opf_case *c, int kind) {
  const int all = c->p[0] == OPF_AXIS_ALL;
  const opf_rgeom g = opf_red_geom(&c->in[0], all ? 0 : opf_axis(c->p[0], c->in[0].ndim), all);
  const void *xv = c->in[0].data;
  void *yv = c->out[0].data;
  const opf_dtype dt = c->dtype;
  for (int64_t o = 0; o < g.outer; o++)
    for (int64_t j = 0; j < g.inner; j++) {
      const int64_t e = o * g.inner + j;
      double fs = 0, fm = -INFINITY;
      uint64_t is = 0;                 /* integer sums wrap modulo 2^64, cast to the width */
      int64_t im = INT64_MIN, arg = 0;
      for (int64_t k = 0; k < g.n; k++) {
        const int64_t i = (o * g.n + k) * g.inner + j;
        if (dt == OPF_F32 || dt == OPF_F64) {
          double v = dt == OPF_F32 ? ((const float *)xv)[i] : ((const double *)xv)[i];
          fs += v;
          if (k == 0 || v > fm) fm = v, arg = k;
        } else {
          int64_t v = dt == OPF_I32 ? ((const int32_t *)xv)[i] : ((const int64_t *)xv)[i];
          is += (uint64_t)v;
          if (k == 0 || v > im) im = v, arg = k;
        }
      }
      if (kind == RED_ARGMAX) {
        ((int64_t *)yv)[e] = arg;
        continue;
      }
      double fr = kind == RED_SUM ? fs : kind == RED_MEAN ? fs / (double)g.n : fm;
      switch (dt) {
      case OPF_F32: ((float *)yv)[e] = (float)fr; break;
      case OPF_F64: ((double *)yv)[e] = fr; break;
      case OPF_I32: ((int32_t *)yv)[e] = (int32_t)(kind == RED_SUM ? (uint32_t)is : (uint32_t)im); break;
      default: ((int64_t *)yv)[e] = kind == RED_SUM ? (int64_t)is : im; break;
      }
    }
  return OPF_OK;
}

static int sum_reference(opf_case *c) { return red_reference_kind(c, RED_SUM); }
static int mean_reference(opf_case *c) { return red_reference_kind(c, RED_MEAN); }
static int max_reference(opf_case *c) { return red_reference_kind(c, RED_MAX); }
static int argmax_reference(opf_case *c) { return red_reference_kind(c, RED_ARGMAX); }

/* ---- models ----
 * sum: one add per input element; backward is a pure broadcast (no flops).
 * mean: sum plus one scale per output; backward one scale per output (dy/n, then broadcast).
 * max / argmax: one compare per input element; max's backward compares every element again
 * to find the argmax, then writes dx. */
static double red_numel_x(const opf_case *c) { return (double)opf_numel(&c->in[0]); }
static double red_numel_y(const opf_case *c) { return (double)opf_numel(&c->out[0]); }

static double sum_flops(const opf_case *c, opf_pass p) { return opf_pass_sum(p, red_numel_x(c), 0); }
static double mean_flops(const opf_case *c, opf_pass p) {
  return opf_pass_sum(p, red_numel_x(c) + red_numel_y(c), red_numel_y(c));
}
static double max_flops(const opf_case *c, opf_pass p) {
  return opf_pass_sum(p, red_numel_x(c), red_numel_x(c));
}
static double argmax_flops(const opf_case *c, opf_pass p) { return opf_pass_sum(p, red_numel_x(c), 0); }

/* fwd: read x, write y. bwd of sum/mean: read dy, write dx (x is not needed); of max: read
 * x and dy, write dx. */
static double red_bytes_kind(const opf_case *c, opf_pass p, int reads_x) {
  const double es = (double)opf_dtype_size(c->dtype), x = red_numel_x(c) * es,
               y = red_numel_y(c) * es;
  return opf_pass_sum(p, x + y, (reads_x ? x : 0) + y + x);
}
static double sum_bytes(const opf_case *c, opf_pass p) { return red_bytes_kind(c, p, 0); }
static double max_bytes(const opf_case *c, opf_pass p) { return red_bytes_kind(c, p, 1); }

#define RED_PARAMS                                                                            \
  .n_params = 2,                                                                              \
  .params = {{.name = "axis", .type = OPF_P_AXIS, .def = OPF_AXIS_ALL, .min = -8, .max = 7,    \
              .help = "axis to reduce (negative counts from the end) or 'all' (the default, "  \
                      "as in NumPy)"},                                                        \
             {.name = "keepdims", .type = OPF_P_BOOL, .def = 0,                               \
              .help = "keep the reduced axes as size-1 dimensions"}}

#define RED_SHAPES                                                                            \
  .shapes = {{"standard", "x=1024x1024 axis=0"},  {"standard", "x=1024x1024 axis=1"},         \
             {"standard", "x=1024x1024 axis=all"}, {"skewed", "x=10000x10 axis=0"},            \
             {"skewed", "x=10000x10 axis=1"},      {"skewed", "x=10x10000 axis=0"},            \
             {"skewed", "x=10x10000 axis=1"},      {"skewed", "x=10000x1 axis=0"},             \
             {"skewed", "x=10000x1 axis=1"},       {"skewed", "x=100000x10 axis=0"},           \
             {"skewed", "x=100000x10 axis=1"},     {"small", "x=16x16 axis=0"},                \
             {"small", "x=16x16 axis=1 keepdims=true"}, {"small", "x=1x64 axis=-1"},           \
             {"small", "x=400x3 axis=0"},          {"small", "x=4x5x6 axis=1"},                \
             {"small", "x=4x5x6 axis=all"},        {"test", "x=301x517 axis=0"},               \
             {"test", "x=301x517 axis=1"},         {"test", "x=301x517 axis=all"},             \
             {"test", "x=3x1000x7 axis=1 keepdims=true"}, {"test", "x=200000x3 axis=0"},       \
             {"large", "x=8192x8192 axis=0"},      {"large", "x=8192x8192 axis=1"}}

/* Values in [-4, 4): integers get many ties, which exercises argmax's first-occurrence rule. */
#define RED_INPUT(diff)                                                                       \
  .n_in = 1, .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = (diff), .lo = -4, .hi = 4}}

OPPERF_OP(sum) = {
    .abi = OPF_OP_ABI,
    .name = "sum",
    .category = "reduction",
    .summary = "sum over an axis or all (integers wrap modulo 2^bits, as the exact sum cast)",
    .dtypes = OPF_DT_ALL,
    RED_INPUT(OPF_IN_DIFF),
    .n_out = 1,
    .out = {"y"},
    RED_PARAMS,
    RED_SHAPES,
    .infer = sum_infer,
    .forward = sum_forward,
    .backward = sum_backward,
    .reference = sum_reference,
    .flops = sum_flops,
    .bytes = sum_bytes,
};

OPPERF_OP(mean) = {
    .abi = OPF_OP_ABI,
    .name = "mean",
    .category = "reduction",
    .summary = "arithmetic mean over an axis or all",
    .dtypes = OPF_DT_FLOAT,
    RED_INPUT(OPF_IN_DIFF),
    .n_out = 1,
    .out = {"y"},
    RED_PARAMS,
    RED_SHAPES,
    .infer = mean_infer,
    .forward = mean_forward,
    .backward = mean_backward,
    .reference = mean_reference,
    .flops = mean_flops,
    .bytes = sum_bytes,
};

OPPERF_OP(max) = {
    .abi = OPF_OP_ABI,
    .name = "max",
    .category = "reduction",
    .summary = "maximum over an axis or all (gradient to the first maximal element)",
    .dtypes = OPF_DT_ALL,
    RED_INPUT(OPF_IN_DIFF),
    .n_out = 1,
    .out = {"y"},
    RED_PARAMS,
    RED_SHAPES,
    .infer = max_infer,
    .forward = max_forward,
    .backward = max_backward,
    .reference = max_reference,
    .flops = max_flops,
    .bytes = max_bytes,
};

OPPERF_OP(argmax) = {
    .abi = OPF_OP_ABI,
    .name = "argmax",
    .category = "reduction",
    .summary = "int64 index of the first maximum over an axis (flat index for 'all')",
    .dtypes = OPF_DT_ALL,
    RED_INPUT(0),
    .n_out = 1,
    .out = {"indices"},
    RED_PARAMS,
    RED_SHAPES,
    .infer = argmax_infer,
    .forward = argmax_forward,
    .reference = argmax_reference,
    .flops = argmax_flops,
    .bytes = opf_default_bytes,
};

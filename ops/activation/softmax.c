/* softmax.c: softmax and log_softmax over one axis, numerically stable (the max is subtracted
 * before exp), with backward dx = y * (dy - sum(dy * y)) and dx = dy - exp(y) * sum(dy).
 * Kernels are in ops/reduction/softmax_drv.h (shared geometry and lane kernels with the
 * reductions): contiguous rows in parallel, outer axes by column blocks. */
#include "reduction/reduce.h"

#define RT float
#define RSUF f32
#include "reduction/softmax_drv.h"
#define RT double
#define RSUF f64
#include "reduction/softmax_drv.h"

/* Column block of the outer-axis path: narrower than the reductions' so (1024, 1024) on axis 0
 * still has a few independent tasks and a block's rows stay in L2 across the three passes. */
#define SM_CB 256
/* Threads pay off sooner than for OPF_PAR_MIN plain elements: each element costs an exp. */
#define SM_PAR_MIN (OPF_PAR_MIN / 4)

typedef struct sm_plan {
  opf_rgeom g;
  int64_t m, cbw, ncb; /* wide-row factor, column block width and count (inner > 1) */
  int lg;              /* log_softmax */
} sm_plan;

static sm_plan sm_make_plan(const opf_case *c, int lg) {
  sm_plan p = {.lg = lg, .m = 1, .cbw = 1, .ncb = 1};
  p.g = opf_red_geom(&c->in[0], opf_axis(c->p[0], c->in[0].ndim), 0);
  if (p.g.inner > 1) {
    p.m = opf_red_wide_m(p.g.inner);
    p.cbw = p.m > 1 ? p.g.inner : SM_CB;
    p.ncb = (p.g.inner + p.cbw - 1) / p.cbw;
  }
  return p;
}

typedef struct sm_ctx {
  opf_case *c;
  const sm_plan *p;
} sm_ctx;

static void sm_rows_fwd_range(int64_t lo, int64_t hi, void *v) {
  const sm_ctx *s = v;
  const int64_t n = s->p->g.n;
  if (s->c->dtype == OPF_F32)
    sm_rows_fwd_f32((const float *)s->c->in[0].data + lo * n, (float *)s->c->out[0].data + lo * n,
                    hi - lo, n, s->p->lg);
  else
    sm_rows_fwd_f64((const double *)s->c->in[0].data + lo * n,
                    (double *)s->c->out[0].data + lo * n, hi - lo, n, s->p->lg);
}

static void sm_rows_bwd_range(int64_t lo, int64_t hi, void *v) {
  const sm_ctx *s = v;
  const int64_t n = s->p->g.n, o = lo * n;
  if (s->c->dtype == OPF_F32)
    sm_rows_bwd_f32((const float *)s->c->out[0].data + o, (const float *)s->c->gout[0].data + o,
                    (float *)s->c->gin[0].data + o, hi - lo, n, s->p->lg);
  else
    sm_rows_bwd_f64((const double *)s->c->out[0].data + o, (const double *)s->c->gout[0].data + o,
                    (double *)s->c->gin[0].data + o, hi - lo, n, s->p->lg);
}

/* Outer-axis task t = (outer index, column block). */
static void sm_cols_task(const sm_ctx *s, int64_t t, int bwd) {
  const sm_plan *p = s->p;
  const int64_t o = t / p->ncb, j0 = (t % p->ncb) * p->cbw;
  const int64_t w = p->g.inner - j0 < p->cbw ? p->g.inner - j0 : p->cbw;
  const int64_t off = o * p->g.n * p->g.inner + j0;
  opf_case *c = s->c;
  if (c->dtype == OPF_F32) {
    if (bwd)
      sm_cols_bwd_f32((const float *)c->out[0].data + off, (const float *)c->gout[0].data + off,
                      (float *)c->gin[0].data + off, p->g.n, p->g.inner, p->m, w, p->lg);
    else
      sm_cols_fwd_f32((const float *)c->in[0].data + off, (float *)c->out[0].data + off, p->g.n,
                      p->g.inner, p->m, w, p->lg);
  } else {
    if (bwd)
      sm_cols_bwd_f64((const double *)c->out[0].data + off, (const double *)c->gout[0].data + off,
                      (double *)c->gin[0].data + off, p->g.n, p->g.inner, p->m, w, p->lg);
    else
      sm_cols_fwd_f64((const double *)c->in[0].data + off, (double *)c->out[0].data + off,
                      p->g.n, p->g.inner, p->m, w, p->lg);
  }
}

static int sm_run(opf_case *c, int lg, int bwd) {
  if (bwd && !c->gin[0].data) return OPF_OK;
  const sm_plan p = sm_make_plan(c, lg);
  if (p.g.n == 0 || p.g.outer * p.g.inner == 0) return OPF_OK;
  sm_ctx s = {c, &p};
  if (p.g.inner == 1) {
    opf_parallel_range(p.g.outer, (SM_PAR_MIN + p.g.n - 1) / p.g.n,
                       bwd ? sm_rows_bwd_range : sm_rows_fwd_range, &s);
    return OPF_OK;
  }
  const int64_t ntask = p.g.outer * p.ncb;
  if (opf_numel(&c->in[0]) > SM_PAR_MIN && ntask > 1 && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < ntask; t++) sm_cols_task(&s, t, bwd);
  } else {
    for (int64_t t = 0; t < ntask; t++) sm_cols_task(&s, t, bwd);
  }
  return OPF_OK;
}

static int softmax_forward(opf_case *c) { return sm_run(c, 0, 0); }
static int softmax_backward(opf_case *c) { return sm_run(c, 0, 1); }
static int log_softmax_forward(opf_case *c) { return sm_run(c, 1, 0); }
static int log_softmax_backward(opf_case *c) { return sm_run(c, 1, 1); }

static int sm_infer(opf_case *c) {
  if (c->in[0].ndim < 0) return OPF_OK;
  int axis, all;
  int rc = opf_red_axis(c, c->p[0], 0, &axis, &all);
  if (rc) return rc;
  opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

/* Reference: each line along the axis in double with libm exp/log. */
static int sm_reference_kind(opf_case *c, int lg) {
  const opf_rgeom g = opf_red_geom(&c->in[0], opf_axis(c->p[0], c->in[0].ndim), 0);
  const int f32 = c->dtype == OPF_F32;
  for (int64_t o = 0; o < g.outer; o++)
    for (int64_t j = 0; j < g.inner; j++) {
      const int64_t base = o * g.n * g.inner + j;
#define SM_X(k) (f32 ? (double)((const float *)c->in[0].data)[base + (k) * g.inner]           \
                     : ((const double *)c->in[0].data)[base + (k) * g.inner])
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < g.n; k++) m = SM_X(k) > m ? SM_X(k) : m;
      for (int64_t k = 0; k < g.n; k++) s += exp(SM_X(k) - m);
      for (int64_t k = 0; k < g.n; k++) {
        double v = lg ? SM_X(k) - m - log(s) : exp(SM_X(k) - m) / s;
        if (f32) ((float *)c->out[0].data)[base + k * g.inner] = (float)v;
        else ((double *)c->out[0].data)[base + k * g.inner] = v;
      }
#undef SM_X
    }
  return OPF_OK;
}

static int softmax_reference(opf_case *c) { return sm_reference_kind(c, 0); }
static int log_softmax_reference(opf_case *c) { return sm_reference_kind(c, 1); }

/* Per element, forward: max, subtract, exp, sum, scale (log_softmax: subtract instead of
 * scale) = 5 flops, exp counted as one; backward: softmax multiply-add of the dot, subtract,
 * multiply = 4; log_softmax add of the sum, exp, multiply, subtract = 4. */
static double sm_flops(const opf_case *c, opf_pass p) {
  const double n = (double)opf_numel(&c->in[0]);
  return opf_pass_sum(p, 5 * n, 4 * n);
}

/* fwd: read x, write y; bwd: read y and dy, write dx (x is not needed). */
static double sm_bytes(const opf_case *c, opf_pass p) {
  const double b = (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, 2 * b, 3 * b);
}

#define SM_COMMON                                                                             \
  .abi = OPF_OP_ABI, .category = "nn.activation", .dtypes = OPF_DT_FLOAT, .n_in = 1,          \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -4, .hi = 4}},       \
  .n_out = 1, .out = {"y"}, .n_params = 1,                                                    \
  .params = {{.name = "axis", .type = OPF_P_INT, .def = -1, .min = -8, .max = 7,              \
              .help = "axis to normalise over (negative counts from the end)"}},             \
  .shapes = {{"standard", "x=1024x1024 axis=-1"}, {"skewed", "x=10000x10 axis=-1"},          \
             {"skewed", "x=10x10000 axis=-1"},     {"skewed", "x=10000x10 axis=0"},           \
             {"skewed", "x=10x10000 axis=0"},      {"small", "x=16x16 axis=-1"},              \
             {"small", "x=16x16 axis=0"},          {"small", "x=1x64 axis=-1"},               \
             {"small", "x=37x3 axis=-1"},          {"small", "x=37x3 axis=0"},                \
             {"small", "x=400x3 axis=0"},          {"small", "x=4x5x6 axis=1"},               \
             {"small", "x=3x70 axis=-1"},          {"test", "x=301x517 axis=-1"},             \
             {"test", "x=301x517 axis=0"},         {"test", "x=3x1000x7 axis=1"},             \
             {"test", "x=20000x10 axis=-1"},       {"test", "x=7x300x11 axis=-1"},            \
             {"large", "x=8192x8192 axis=-1"}},                                               \
  .infer = sm_infer, .flops = sm_flops, .bytes = sm_bytes

OPPERF_OP(softmax) = {
    SM_COMMON,
    .name = "softmax",
    .summary = "softmax over an axis: exp(x - max) / sum",
    .forward = softmax_forward,
    .backward = softmax_backward,
    .reference = softmax_reference,
};

OPPERF_OP(log_softmax) = {
    SM_COMMON,
    .name = "log_softmax",
    .summary = "log of softmax over an axis: x - max - log(sum(exp(x - max)))",
    .forward = log_softmax_forward,
    .backward = log_softmax_backward,
    .reference = log_softmax_reference,
};

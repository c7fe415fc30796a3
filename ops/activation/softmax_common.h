/* softmax_common.h: the softmax machinery shared by softmax.c (softmax, log_softmax) and
 * softmax_ext.c (softmin, masked_softmax, masked_log_softmax): the kernels of
 * reduction/softmax_drv.h for both float dtypes behind a dtype dispatch, the plan (contiguous
 * rows, or column blocks for outer axes), the parallel driver, shape inference, the reference
 * (with an optional sign and mask) and the models. */
#ifndef OPPERF_SOFTMAX_COMMON_H
#define OPPERF_SOFTMAX_COMMON_H

#include "reduction/reduce.h"

/* The kernels of reduction/softmax_drv.h for both float dtypes, compiled once in
 * softmax_kernels.c (each is three ISA clones of a heavily specialised body: compiling them
 * into every file of the family doubled the family's build time). */
#define SM_KERNEL_DECLS(RT, S)                                                                \
  void opf_sm_rows_fwd_##S(const RT *restrict x, RT *restrict y, int64_t nrows, int64_t n,    \
                           int lg);                                                           \
  void opf_sm_rows_bwd_##S(const RT *restrict y, const RT *restrict dy, RT *restrict dx,      \
                           int64_t nrows, int64_t n, int lg);                                 \
  void opf_sm_cols_fwd_##S(const RT *restrict x, RT *restrict y, int64_t n, int64_t inner,    \
                           int64_t m, int64_t w, int lg);                                     \
  void opf_sm_cols_bwd_##S(const RT *restrict y, const RT *restrict dy, RT *restrict dx,      \
                           int64_t n, int64_t inner, int64_t m, int64_t w, int lg);
SM_KERNEL_DECLS(float, f32)
SM_KERNEL_DECLS(double, f64)
#undef SM_KERNEL_DECLS

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

/* The axis is param 0 of every operator of the family. */
static inline sm_plan sm_make_plan(const opf_case *c, int lg) {
  sm_plan p = {.lg = lg, .m = 1, .cbw = 1, .ncb = 1};
  p.g = opf_red_geom(&c->in[0], opf_axis(c->p[0], c->in[0].ndim), 0);
  if (p.g.inner > 1) {
    p.m = opf_red_wide_m(p.g.inner);
    p.cbw = p.m > 1 ? p.g.inner : SM_CB;
    p.ncb = (p.g.inner + p.cbw - 1) / p.cbw;
  }
  return p;
}

/* Outer-axis task t = (outer index, column block): element offset of its first column, *w
 * its width. Its elements are off + k * inner + j for k < n, j < w. */
static inline int64_t sm_task_off(const sm_plan *p, int64_t t, int64_t *w) {
  const int64_t o = t / p->ncb, j0 = (t % p->ncb) * p->cbw;
  *w = p->g.inner - j0 < p->cbw ? p->g.inner - j0 : p->cbw;
  return o * p->g.n * p->g.inner + j0;
}

/* The kernels on raw pointers, dispatched on the dtype. Forward: a = x, out = y (b unused);
 * backward: a = y, b = dy, out = dx. Rows: nrows contiguous rows of n; columns: one block of
 * w columns, n rows of stride inner, wide-row factor m. */
static inline void sm_rows_kernel(opf_dtype dt, int bwd, const void *a, const void *b,
                                  void *out, int64_t nrows, int64_t n, int lg) {
  if (dt == OPF_F32) {
    if (bwd) opf_sm_rows_bwd_f32(a, b, out, nrows, n, lg);
    else opf_sm_rows_fwd_f32(a, out, nrows, n, lg);
  } else {
    if (bwd) opf_sm_rows_bwd_f64(a, b, out, nrows, n, lg);
    else opf_sm_rows_fwd_f64(a, out, nrows, n, lg);
  }
}

static inline void sm_cols_kernel(opf_dtype dt, int bwd, const void *a, const void *b,
                                  void *out, int64_t n, int64_t inner, int64_t m, int64_t w,
                                  int lg) {
  if (dt == OPF_F32) {
    if (bwd) opf_sm_cols_bwd_f32(a, b, out, n, inner, m, w, lg);
    else opf_sm_cols_fwd_f32(a, out, n, inner, m, w, lg);
  } else {
    if (bwd) opf_sm_cols_bwd_f64(a, b, out, n, inner, m, w, lg);
    else opf_sm_cols_fwd_f64(a, out, n, inner, m, w, lg);
  }
}

/* Runs a plan on at most nt threads: contiguous rows (inner 1) as one chunk of rows per thread
 * through rows(lo, hi, ctx), outer axes as tasks (outer index, column block) through
 * task(t, ctx), statically scheduled. Small tensors stay on the calling thread. */
typedef void (*sm_task_fn)(int64_t t, void *ctx);
static inline void sm_drive(const opf_case *c, const sm_plan *p, int nt, opf_range_fn rows,
                            sm_task_fn task, void *ctx) {
  if (p->g.inner == 1) {
    const int64_t n = p->g.outer, min_par = (SM_PAR_MIN + p->g.n - 1) / p->g.n;
    if (n < min_par || nt <= 1) {
      rows(0, n, ctx);
      return;
    }
#pragma omp parallel num_threads(nt)
    {
      int64_t th = omp_get_num_threads(), t = omp_get_thread_num();
      int64_t chunk = (n + th - 1) / th;
      int64_t lo = t * chunk, hi = lo + chunk < n ? lo + chunk : n;
      if (lo < hi) rows(lo, hi, ctx);
    }
    return;
  }
  const int64_t ntask = p->g.outer * p->ncb;
  if (opf_numel(&c->in[0]) > SM_PAR_MIN && ntask > 1 && nt > 1) {
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t t = 0; t < ntask; t++) task(t, ctx);
  } else {
    for (int64_t t = 0; t < ntask; t++) task(t, ctx);
  }
}

/* ---- the plain kernels straight on the case's tensors (softmax, log_softmax; also the
 * backward of masked_softmax, whose zero outputs make the plain gradient exact) ---- */
typedef struct sm_ctx {
  opf_case *c;
  const sm_plan *p;
  int bwd;
} sm_ctx;

/* One kernel call on the case's tensors from element o: rows (nrows rows) or one column
 * block (w wide). */
static inline void sm_plain_call(const sm_ctx *s, int64_t o, int rows, int64_t nr_or_w) {
  const opf_case *c = s->c;
  const sm_plan *p = s->p;
  const size_t off = (size_t)o * opf_dtype_size(c->dtype);
  const char *a = (const char *)(s->bwd ? c->out[0].data : c->in[0].data) + off;
  const char *b = s->bwd ? (const char *)c->gout[0].data + off : NULL;
  char *out = (char *)(s->bwd ? c->gin[0].data : c->out[0].data) + off;
  if (rows) sm_rows_kernel(c->dtype, s->bwd, a, b, out, nr_or_w, p->g.n, p->lg);
  else sm_cols_kernel(c->dtype, s->bwd, a, b, out, p->g.n, p->g.inner, p->m, nr_or_w, p->lg);
}
static inline void sm_plain_rows(int64_t lo, int64_t hi, void *v) {
  const sm_ctx *s = v;
  sm_plain_call(s, lo * s->p->g.n, 1, hi - lo);
}
static inline void sm_plain_task(int64_t t, void *v) {
  const sm_ctx *s = v;
  int64_t w;
  const int64_t o = sm_task_off(s->p, t, &w);
  sm_plain_call(s, o, 0, w);
}

static inline int sm_run(opf_case *c, int lg, int bwd) {
  if (bwd && !c->gin[0].data) return OPF_OK;
  const sm_plan p = sm_make_plan(c, lg);
  if (p.g.n == 0 || p.g.outer * p.g.inner == 0) return OPF_OK;
  sm_ctx s = {c, &p, bwd};
  sm_drive(c, &p, omp_get_max_threads(), sm_plain_rows, sm_plain_task, &s);
  return OPF_OK;
}

/* Shape inference: the axis param must name a dim of x; y has x's shape. */
static inline int sm_infer(opf_case *c) {
  if (c->in[0].ndim < 0) return OPF_OK;
  int axis, all;
  int rc = opf_red_axis(c, c->p[0], 0, &axis, &all);
  if (rc) return rc;
  opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

/* Reference: each line along the axis in double with libm exp/log, on z = sign * x. With
 * kept (NULL: every element), the line's normalisation runs over the kept elements only and
 * the others get `other` (a line with none kept gets `other` throughout); kept takes the flat
 * index of an element of x. */
typedef int (*sm_kept_fn)(const opf_case *c, int64_t flat);
static inline int sm_reference_gen(opf_case *c, int lg, double sign, sm_kept_fn kept,
                                   double other) {
  const opf_rgeom g = opf_red_geom(&c->in[0], opf_axis(c->p[0], c->in[0].ndim), 0);
  const int f32 = c->dtype == OPF_F32;
  for (int64_t o = 0; o < g.outer; o++)
    for (int64_t j = 0; j < g.inner; j++) {
      const int64_t base = o * g.n * g.inner + j;
#define SM_X(k) (sign * (f32 ? (double)((const float *)c->in[0].data)[base + (k) * g.inner]   \
                             : ((const double *)c->in[0].data)[base + (k) * g.inner]))
#define SM_KEPT(k) (!kept || kept(c, base + (k) * g.inner))
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < g.n; k++)
        if (SM_KEPT(k)) m = SM_X(k) > m ? SM_X(k) : m;
      for (int64_t k = 0; k < g.n; k++)
        if (SM_KEPT(k)) s += exp(SM_X(k) - m);
      for (int64_t k = 0; k < g.n; k++) {
        double v = !SM_KEPT(k) ? other : lg ? SM_X(k) - m - log(s) : exp(SM_X(k) - m) / s;
        if (f32) ((float *)c->out[0].data)[base + k * g.inner] = (float)v;
        else ((double *)c->out[0].data)[base + k * g.inner] = v;
      }
#undef SM_KEPT
#undef SM_X
    }
  return OPF_OK;
}

/* Per element, forward: max, subtract, exp, sum, scale (log_softmax: subtract instead of
 * scale) = 5 flops, exp counted as one; backward: softmax multiply-add of the dot, subtract,
 * multiply = 4; log_softmax add of the sum, exp, multiply, subtract = 4. `extra` adds a
 * per-element cost to each pass (the negation of softmin, the masking selects). */
static inline double sm_flops_extra(const opf_case *c, opf_pass p, double fwd_extra,
                                    double bwd_extra) {
  const double n = (double)opf_numel(&c->in[0]);
  return opf_pass_sum(p, (5 + fwd_extra) * n, (4 + bwd_extra) * n);
}
static inline double sm_flops(const opf_case *c, opf_pass p) { return sm_flops_extra(c, p, 0, 0); }

/* fwd: read x, write y; bwd: read y and dy, write dx (x is not needed). */
static inline double sm_bytes(const opf_case *c, opf_pass p) {
  const double b = (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, 2 * b, 3 * b);
}

/* The axis param and the shape sets of the family (extra inputs in X, e.g. " mask=16x16"). */
#define SM_AXIS_PARAM                                                                         \
  {.name = "axis", .type = OPF_P_INT, .def = -1, .min = -8, .max = 7,                         \
   .help = "axis to normalise over (negative counts from the end)"}
#define SM_X_INPUT                                                                            \
  {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -4, .hi = 4}
/* S: a suffix of the "small" entries (e.g. params the gradient check needs). */
#define SM_SHAPES_SFX(S)                                                                      \
  {"standard", "x=1024x1024 axis=-1"}, {"skewed", "x=10000x10 axis=-1"},                     \
      {"skewed", "x=10x10000 axis=-1"}, {"skewed", "x=10000x10 axis=0"},                      \
      {"skewed", "x=10x10000 axis=0"}, {"small", "x=16x16 axis=-1" S},                        \
      {"small", "x=16x16 axis=0" S}, {"small", "x=1x64 axis=-1" S},                           \
      {"small", "x=37x3 axis=-1" S}, {"small", "x=37x3 axis=0" S},                            \
      {"small", "x=400x3 axis=0" S}, {"small", "x=4x5x6 axis=1" S},                           \
      {"small", "x=3x70 axis=-1" S}, {"test", "x=301x517 axis=-1"},                           \
      {"test", "x=301x517 axis=0"}, {"test", "x=3x1000x7 axis=1"},                            \
      {"test", "x=20000x10 axis=-1"}, {"test", "x=7x300x11 axis=-1"},                         \
      {"large", "x=8192x8192 axis=-1"}
#define SM_SHAPES SM_SHAPES_SFX("")

#endif

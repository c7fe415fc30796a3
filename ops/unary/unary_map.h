/* unary_map.h: the driver of elementwise maps y = f(x), dx = h(x, y, dy) (unary and rounding
 * operators, sigmoid): loops generated from element expressions for float32/float64 (and
 * int32/int64), threading, shape inference, libm reference, models, fill hooks. An operator
 * is one table row (UM_MAP: formulas, costs) and one descriptor line (UM_UNARY). */
#ifndef OPPERF_UNARY_MAP_H
#define OPPERF_UNARY_MAP_H

#include "opf_kernel.h"
#include "unary/vmath.h"

/* Type-generic names for the vector math, so one expression serves float32 and float64. */
#define VM_EXP(v) _Generic((v), float: vm_expf, double: vm_exp)(v)
/* exp of a non-positive argument (float32: vm_expf_nonpos; float64: the full vm_exp) */
#define VM_EXP_NP(v) _Generic((v), float: vm_expf_nonpos, double: vm_exp)(v)
#define VM_LOG(v) _Generic((v), float: vm_logf, double: vm_log)(v)
#define VM_ABS(v) _Generic((v), float: __builtin_fabsf, double: __builtin_fabs)(v)
#define VM_SEL(c, a, b) _Generic((a), float: vm_self_if, double: vm_seld_if)(c, a, b)
/* A constant in the element type of x (for constants that are not exact in float32). */
#define UM_C(v) ((__typeof__(x))(v))

typedef struct um_kernels {
  void (*f32)(const float *restrict x, float *restrict y, int64_t n);
  void (*f64)(const double *restrict x, double *restrict y, int64_t n);
  /* dx from x, y (the forward output) and dy; loops drop the operands they do not read */
  void (*b32)(const float *restrict x, const float *restrict y, const float *restrict dy,
              float *restrict dx, int64_t n);
  void (*b64)(const double *restrict x, const double *restrict y, const double *restrict dy,
              double *restrict dx, int64_t n);
  void (*i32)(const int32_t *restrict x, int32_t *restrict y, int64_t n); /* NULL: floats only */
  void (*i64)(const int64_t *restrict x, int64_t *restrict y, int64_t n);
  int64_t par_min; /* elements below which a pass stays on one thread (0: OPF_PAR_MIN) */
} um_kernels;

/* Parallel thresholds by cost per element: waking the second thread costs about as much as
 * 32768 copied elements, 4096 libm-class functions (0.2-1 ns each) or 1024 special ones
 * (gamma, erfinv: 2-5 ns). */
#define UM_PAR_CHEAP OPF_PAR_MIN
#define UM_PAR_MATH (OPF_PAR_MIN / 8)
#define UM_PAR_SPECIAL (OPF_PAR_MIN / 32)

/* FWD is an expression in x, BWD one in x, y and dy (all of the element type T). */
#define UM_FWD_LOOP(name, T, SUF, FWD)                                                        \
  OPF_VEC static void name##_fwd_##SUF(const T *restrict xp, T *restrict yp, int64_t n) {    \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = xp[i];                                                                      \
      yp[i] = (FWD);                                                                          \
    }                                                                                         \
  }
#define UM_BWD_LOOP(name, T, SUF, BWD)                                                        \
  OPF_VEC static void name##_bwd_##SUF(const T *restrict xp, const T *restrict yp,           \
                                       const T *restrict dyp, T *restrict dxp, int64_t n) {   \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = xp[i], y = yp[i], dy = dyp[i];                                              \
      (void)x, (void)y, (void)dy;                                                             \
      dxp[i] = (BWD);                                                                         \
    }                                                                                         \
  }
#define UM_LOOPS(name, T, SUF, FWD, BWD)                                                      \
  UM_FWD_LOOP(name, T, SUF, FWD) UM_BWD_LOOP(name, T, SUF, BWD)

typedef struct {
  opf_case *c;
  const um_kernels *k;
} um_ctx;

static inline void um_fwd_range(int64_t lo, int64_t hi, void *p) {
  const um_ctx *u = p;
  const opf_case *c = u->c;
  const void *x = c->in[0].data;
  void *y = c->out[0].data;
  switch (c->dtype) {
  case OPF_F32: u->k->f32((const float *)x + lo, (float *)y + lo, hi - lo); break;
  case OPF_F64: u->k->f64((const double *)x + lo, (double *)y + lo, hi - lo); break;
  case OPF_I32: u->k->i32((const int32_t *)x + lo, (int32_t *)y + lo, hi - lo); break;
  default: u->k->i64((const int64_t *)x + lo, (int64_t *)y + lo, hi - lo); break;
  }
}

static inline void um_bwd_range(int64_t lo, int64_t hi, void *p) {
  const um_ctx *u = p;
  const opf_case *c = u->c;
  if (c->dtype == OPF_F32)
    u->k->b32((const float *)c->in[0].data + lo, (const float *)c->out[0].data + lo,
              (const float *)c->gout[0].data + lo, (float *)c->gin[0].data + lo, hi - lo);
  else
    u->k->b64((const double *)c->in[0].data + lo, (const double *)c->out[0].data + lo,
              (const double *)c->gout[0].data + lo, (double *)c->gin[0].data + lo, hi - lo);
}

/* opf_parallel_range with chunk boundaries on multiples of 64 elements (whole cache lines
 * for every dtype): no two threads write the same line, and every element is computed by the
 * same code path whatever the thread count. The vector libm's AVX-512 and AVX2 variants and
 * the scalar function used for loop remainders may differ in the last bit, so with unaligned
 * chunks the elements next to a boundary would change with the thread count. */
static inline void um_parallel(int64_t n, const um_kernels *k, opf_range_fn fn, void *ctx) {
  int64_t min_par = k->par_min > 0 ? k->par_min : OPF_PAR_MIN;
  if (n < min_par || omp_get_max_threads() == 1) {
    fn(0, n, ctx);
    return;
  }
#pragma omp parallel
  {
    int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t chunk = ((n + nt - 1) / nt + 63) & ~(int64_t)63;
    int64_t lo = t * chunk, hi = lo + chunk < n ? lo + chunk : n;
    if (lo < hi) fn(lo, hi, ctx);
  }
}

static inline int um_forward(opf_case *c, const um_kernels *k) {
  um_ctx u = {c, k};
  um_parallel(opf_numel(&c->in[0]), k, um_fwd_range, &u);
  return OPF_OK;
}

/* Integer cases have no gradient (gin is NULL): nothing to do. */
static inline int um_backward(opf_case *c, const um_kernels *k) {
  if (!c->gin[0].data) return OPF_OK;
  um_ctx u = {c, k};
  um_parallel(opf_numel(&c->in[0]), k, um_bwd_range, &u);
  return OPF_OK;
}

static inline int um_infer(opf_case *c) {
  if (c->in[0].ndim >= 0) opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

/* Reference: the float64 libm function, rounded once to the case dtype; integer dtypes
 * through fi (exact int64 semantics, wrapped to int32 by the conversion). */
static inline int um_reference_int(opf_case *c, double (*f)(double), int64_t (*fi)(int64_t)) {
  int64_t n = opf_numel(&c->in[0]);
  const void *x = c->in[0].data;
  void *y = c->out[0].data;
  for (int64_t i = 0; i < n; i++) {
    switch (c->dtype) {
    case OPF_F32: ((float *)y)[i] = (float)f(((const float *)x)[i]); break;
    case OPF_F64: ((double *)y)[i] = f(((const double *)x)[i]); break;
    case OPF_I32: ((int32_t *)y)[i] = (int32_t)fi(((const int32_t *)x)[i]); break;
    default: ((int64_t *)y)[i] = fi(((const int64_t *)x)[i]); break;
    }
  }
  return OPF_OK;
}
static inline int um_reference(opf_case *c, double (*f)(double)) {
  return um_reference_int(c, f, NULL);
}

/* Work model: fwd and bwd cost per element as stated by the operator. */
static inline double um_flops(const opf_case *c, opf_pass p, double fwd, double bwd) {
  double n = (double)opf_numel(&c->in[0]);
  return n * (opf_pass_sum(p, fwd, bwd));
}

/* Traffic model: fwd reads x and writes y; bwd reads `reads` tensors of x's size (dy, and x
 * and/or y as the gradient formula needs them) and writes dx. */
static inline double um_bytes(const opf_case *c, opf_pass p, int reads) {
  double nb = (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->in[0].dtype);
  return opf_pass_sum(p, 2 * nb, (reads + 1) * nb);
}

/* Streams the backward pass reads (the `reads` of um_bytes). */
#define UM_R_NONE 0 /* the gradient is a constant (sign: 0) */
#define UM_R_DY 1   /* dy only (negative, degrees) */
#define UM_R_ONE 2  /* dy and one of x, y */
#define UM_R_BOTH 3 /* dy, x and y */

/* Defines the kernels of an elementwise map for float32 and float64 and its hooks
 * name##_forward, name##_backward and name##_reference (REF: the float64 libm-based function,
 * double(double)); UM_HOOKS(name) puts them in a descriptor. */
#define UM_KERNELS_FLOAT(name, FWD, BWD)                                                      \
  UM_LOOPS(name, float, f32, FWD, BWD)                                                        \
  UM_LOOPS(name, double, f64, FWD, BWD)
#define UM_HOOK_FNS(name, REF, IREF, PAR, ...)                                                \
  static const um_kernels name##_kernels = {name##_fwd_f32, name##_fwd_f64, __VA_ARGS__,     \
                                            .par_min = PAR};                                  \
  static int name##_forward(opf_case *c) { return um_forward(c, &name##_kernels); }           \
  static int name##_reference(opf_case *c) { return um_reference_int(c, REF, IREF); }
#define UM_BWD_HOOK(name)                                                                     \
  static int name##_backward(opf_case *c) { return um_backward(c, &name##_kernels); }
#define UM_DEFINE(name, FWD, BWD, REF)                                                        \
  UM_KERNELS_FLOAT(name, FWD, BWD)                                                            \
  UM_HOOK_FNS(name, REF, NULL, 0, name##_bwd_f32, name##_bwd_f64)                             \
  UM_BWD_HOOK(name)
#define UM_HOOKS(name)                                                                        \
  .forward = name##_forward, .backward = name##_backward, .reference = name##_reference

/* flops and bytes hooks from per-element costs FF (fwd) and BF (bwd) and the backward reads. */
#define UM_MODELS(name, FF, BF, READS)                                                        \
  static double name##_flops(const opf_case *c, opf_pass p) { return um_flops(c, p, FF, BF); } \
  static double name##_bytes(const opf_case *c, opf_pass p) { return um_bytes(c, p, READS); }
/* All hooks of a differentiable map (... : the integer kernels, if any). */
#define UM_DIFF_HOOKS(name, REF, IREF, FF, BF, READS, PAR, ...)                               \
  UM_HOOK_FNS(name, REF, IREF, PAR, name##_bwd_f32, name##_bwd_f64, ##__VA_ARGS__)            \
  UM_BWD_HOOK(name)                                                                           \
  UM_MODELS(name, FF, BF, READS)

/* One table row per operator: name, forward expression in x, backward expression in x, y, dy,
 * float64 reference double(double), flops per element fwd and bwd, backward reads (UM_R_*),
 * parallel threshold (UM_PAR_*). */
#define UM_MAP(name, FWD, BWD, REF, FF, BF, READS, PAR)                                       \
  UM_KERNELS_FLOAT(name, FWD, BWD)                                                            \
  UM_DIFF_HOOKS(name, REF, NULL, FF, BF, READS, PAR)
/* Also int32 and int64 forward kernels from the same FWD expression (type-generic helpers:
 * VM_TG), with IREF int64_t(int64_t) as their reference. Integer cases have no backward. */
#define UM_MAP_INT(name, FWD, BWD, REF, IREF, FF, BF, READS, PAR)                             \
  UM_KERNELS_FLOAT(name, FWD, BWD)                                                            \
  UM_FWD_LOOP(name, int32_t, i32, FWD)                                                        \
  UM_FWD_LOOP(name, int64_t, i64, FWD)                                                        \
  UM_DIFF_HOOKS(name, REF, IREF, FF, BF, READS, PAR, name##_fwd_i32, name##_fwd_i64)

/* A forward with a cheaper form on a common part of the domain (erfinv away from +-1, gamma
 * for x > 0): the branch-free FWD pays for every region on every lane, so blocks of UM_BLOCK
 * elements that all satisfy FAST_IF (an expression in x) take FAST instead. FAST must give
 * the same bits as FWD there (the same operations), so results do not depend on how the
 * blocks fall. */
#define UM_BLOCK 1024
/* For each block of x: FAST(xp + i, ...) when TEST(xp + i, m), else FULL(xp + i, ...). */
#define UM_EACH_BLOCK(TEST, FAST, FULL, ...)                                                  \
  for (int64_t i = 0; i < n; i += UM_BLOCK) {                                                 \
    int64_t m = n - i < UM_BLOCK ? n - i : UM_BLOCK;                                          \
    (TEST(xp + i, m) ? FAST : FULL)(xp + i, __VA_ARGS__);                                     \
  }
#define UM_SPLIT_LOOP(name, T, SUF, FAST_IF, FAST, FWD)                                       \
  UM_FWD_LOOP(name##_fast, T, SUF, FAST)                                                      \
  UM_FWD_LOOP(name##_full, T, SUF, FWD)                                                       \
  OPF_VEC static int name##_all_fast_##SUF(const T *restrict xp, int64_t n) {                 \
    int ok = 1;                                                                               \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = xp[i];                                                                      \
      ok &= (FAST_IF);                                                                        \
    }                                                                                         \
    return ok;                                                                                \
  }                                                                                           \
  static void name##_fwd_##SUF(const T *restrict xp, T *restrict yp, int64_t n) {            \
    UM_EACH_BLOCK(name##_all_fast_##SUF, name##_fast_fwd_##SUF, name##_full_fwd_##SUF,        \
                  yp + i, m);                                                                 \
  }
/* A backward that reads x anyway splits on the same test at no extra traffic. */
#define UM_SPLIT_BWD_LOOP(name, T, SUF, BWD_FAST, BWD)                                        \
  UM_BWD_LOOP(name##_fast, T, SUF, BWD_FAST)                                                  \
  UM_BWD_LOOP(name##_full, T, SUF, BWD)                                                       \
  static void name##_bwd_##SUF(const T *restrict xp, const T *restrict yp,                   \
                               const T *restrict dyp, T *restrict dxp, int64_t n) {           \
    UM_EACH_BLOCK(name##_all_fast_##SUF, name##_fast_bwd_##SUF, name##_full_bwd_##SUF,        \
                  yp + i, dyp + i, dxp + i, m);                                               \
  }
/* Forward split only. */
#define UM_MAP_SPLIT(name, FAST_IF, FAST, FWD, BWD, REF, FF, BF, READS, PAR)                  \
  UM_SPLIT_LOOP(name, float, f32, FAST_IF, FAST, FWD)                                         \
  UM_SPLIT_LOOP(name, double, f64, FAST_IF, FAST, FWD)                                        \
  UM_BWD_LOOP(name, float, f32, BWD)                                                          \
  UM_BWD_LOOP(name, double, f64, BWD)                                                         \
  UM_DIFF_HOOKS(name, REF, NULL, FF, BF, READS, PAR)
/* Forward and backward split on the same test. */
#define UM_MAP_SPLIT2(name, FAST_IF, FAST, FWD, BWD_FAST, BWD, REF, FF, BF, READS, PAR)       \
  UM_SPLIT_LOOP(name, float, f32, FAST_IF, FAST, FWD)                                         \
  UM_SPLIT_LOOP(name, double, f64, FAST_IF, FAST, FWD)                                        \
  UM_SPLIT_BWD_LOOP(name, float, f32, BWD_FAST, BWD)                                          \
  UM_SPLIT_BWD_LOOP(name, double, f64, BWD_FAST, BWD)                                         \
  UM_DIFF_HOOKS(name, REF, NULL, FF, BF, READS, PAR)

/* Forward-only maps (rounding): no backward kernels, bwd models zero. */
#define UM_MAP_FWD(name, FWD, REF, FF, PAR)                                                   \
  UM_FWD_LOOP(name, float, f32, FWD)                                                          \
  UM_FWD_LOOP(name, double, f64, FWD)                                                         \
  UM_HOOK_FNS(name, REF, NULL, PAR, NULL, NULL)                                               \
  UM_MODELS(name, FF, 0, UM_R_NONE)

/* Default shapes of the elementwise maps (OPERATORS.md "elementwise, unary"). */
#define UM_SHAPES                                                                             \
  {{"standard", "x=1024x1024"}, {"skewed", "x=10000x10"},  {"skewed", "x=10x10000"},           \
   {"skewed", "x=10000x1"},     {"skewed", "x=100000x10"}, {"small", "x=16x16"},               \
   {"small", "x=1x1024"},       {"small", "x=37x3"},       {"small", "x=()"},                  \
   {"test", "x=301x517"},       {"test", "x=100003"},      {"large", "x=8192x8192"},           \
   {"huge", "x=46341x46341"}}

/* Descriptor fields every elementwise map shares (one float input x, one output y). */
#define UM_COMMON                                                                             \
  .abi = OPF_OP_ABI, .dtypes = OPF_DT_FLOAT, .n_in = 1, .n_out = 1, .out = {"y"},             \
  .shapes = UM_SHAPES, .infer = um_infer, .bytes = opf_default_bytes

/* Descriptors of UM_MAP operators: OPPERF_OP(sqrt) = {UM_UNARY(sqrt), .name = "sqrt",
 * UM_X(lo, hi, help), .summary = "..."}. UM_UNARY_INT adds the integer dtypes. */
#define UM_DESC(name, cat, dts)                                                               \
  .abi = OPF_OP_ABI, .category = cat, .dtypes = dts, .n_in = 1, .n_out = 1, .out = {"y"},     \
  .shapes = UM_SHAPES, .infer = um_infer, .forward = name##_forward,                          \
  .reference = name##_reference, .flops = name##_flops, .bytes = name##_bytes
#define UM_UNARY(name) UM_DESC(name, "unary", OPF_DT_FLOAT), .backward = name##_backward
#define UM_UNARY_INT(name)                                                                    \
  UM_DESC(name, "unary", OPF_DT_FLOAT | OPF_DT_INT), .backward = name##_backward
/* x uniform in [lo, hi); FILL (or NULL) overrides the generator. */
#define UM_X_FILL(lo_, hi_, fill_, help_)                                                     \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = lo_, .hi = hi_,      \
          .fill = fill_, .help = help_}}
#define UM_X(lo_, hi_, help_) UM_X_FILL(lo_, hi_, NULL, help_)

/* Fill hook: magnitudes uniform in [lo, hi) with random signs, for maps defined on both sides
 * of a singularity at 0 (reciprocal, rcbrt). */
static inline int um_fill_signed(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  const double lo = c->op->in[i].lo, hi = c->op->in[i].hi;
  opf_fill_uniform(t, c->seed, (uint64_t)i, -(hi - lo), hi - lo);
  int64_t n = opf_numel(t);
  if (t->dtype == OPF_F32) {
    float *v = t->data;
#pragma omp parallel for if (n > OPF_PAR_MIN)
    for (int64_t k = 0; k < n; k++) v[k] += __builtin_copysignf((float)lo, v[k]);
  } else {
    double *v = t->data;
#pragma omp parallel for if (n > OPF_PAR_MIN)
    for (int64_t k = 0; k < n; k++) v[k] += __builtin_copysign(lo, v[k]);
  }
  return OPF_OK;
}

#endif

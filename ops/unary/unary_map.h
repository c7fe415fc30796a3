/* unary_map.h: the shared driver of elementwise maps y = f(x) with dx = h(x, y, dy) (exp,
 * log, sigmoid): loop generation from element expressions, threaded forward and backward,
 * shape inference and a libm reference. Each operator file only states its formulas. */
#ifndef OPPERF_UNARY_MAP_H
#define OPPERF_UNARY_MAP_H

#include "opf_kernel.h"
#include "unary/vmath.h"

/* Type-generic names for the vector math, so one expression serves float32 and float64. */
#define VM_EXP(v) _Generic((v), float: vm_expf, double: vm_exp)(v)
#define VM_LOG(v) _Generic((v), float: vm_logf, double: vm_log)(v)
#define VM_ABS(v) _Generic((v), float: __builtin_fabsf, double: __builtin_fabs)(v)
#define VM_SEL(c, a, b) _Generic((a), float: vm_self_if, double: vm_seld_if)(c, a, b)

typedef struct um_kernels {
  void (*f32)(const float *restrict x, float *restrict y, int64_t n);
  void (*f64)(const double *restrict x, double *restrict y, int64_t n);
  /* dx from x, y (the forward output) and dy; loops drop the operands they do not read */
  void (*b32)(const float *restrict x, const float *restrict y, const float *restrict dy,
              float *restrict dx, int64_t n);
  void (*b64)(const double *restrict x, const double *restrict y, const double *restrict dy,
              double *restrict dx, int64_t n);
} um_kernels;

/* FWD is an expression in x, BWD one in x, y and dy (all of the element type T). */
#define UM_LOOPS(name, T, SUF, FWD, BWD)                                                      \
  OPF_VEC static void name##_fwd_##SUF(const T *restrict xp, T *restrict yp, int64_t n) {    \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = xp[i];                                                                      \
      yp[i] = (FWD);                                                                          \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void name##_bwd_##SUF(const T *restrict xp, const T *restrict yp,           \
                                       const T *restrict dyp, T *restrict dxp, int64_t n) {   \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = xp[i], y = yp[i], dy = dyp[i];                                              \
      (void)x, (void)y;                                                                       \
      dxp[i] = (BWD);                                                                         \
    }                                                                                         \
  }


typedef struct {
  opf_case *c;
  const um_kernels *k;
} um_ctx;

static inline void um_fwd_range(int64_t lo, int64_t hi, void *p) {
  const um_ctx *u = p;
  const opf_case *c = u->c;
  if (c->dtype == OPF_F32)
    u->k->f32((const float *)c->in[0].data + lo, (float *)c->out[0].data + lo, hi - lo);
  else
    u->k->f64((const double *)c->in[0].data + lo, (double *)c->out[0].data + lo, hi - lo);
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

static inline int um_forward(opf_case *c, const um_kernels *k) {
  um_ctx u = {c, k};
  opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, um_fwd_range, &u);
  return OPF_OK;
}

static inline int um_backward(opf_case *c, const um_kernels *k) {
  um_ctx u = {c, k};
  opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, um_bwd_range, &u);
  return OPF_OK;
}

static inline int um_infer(opf_case *c) {
  if (c->in[0].ndim >= 0) opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

/* Reference: the float64 libm function, rounded once to the case dtype. */
static inline int um_reference(opf_case *c, double (*f)(double)) {
  int64_t n = opf_numel(&c->in[0]);
  for (int64_t i = 0; i < n; i++) {
    if (c->dtype == OPF_F32)
      ((float *)c->out[0].data)[i] = (float)f(((const float *)c->in[0].data)[i]);
    else
      ((double *)c->out[0].data)[i] = f(((const double *)c->in[0].data)[i]);
  }
  return OPF_OK;
}

/* Work model: fwd and bwd cost per element as stated by the operator. */
static inline double um_flops(const opf_case *c, opf_pass p, double fwd, double bwd) {
  double n = (double)opf_numel(&c->in[0]);
  return n * (opf_pass_sum(p, fwd, bwd));
}

/* Defines the kernels of an elementwise map for float32 and float64 and its hooks
 * name##_forward, name##_backward and name##_reference (REF: the float64 libm-based function,
 * double(double)); UM_HOOKS(name) puts them in a descriptor. */
#define UM_DEFINE(name, FWD, BWD, REF)                                                        \
  UM_LOOPS(name, float, f32, FWD, BWD)                                                        \
  UM_LOOPS(name, double, f64, FWD, BWD)                                                       \
  static const um_kernels name##_kernels = {name##_fwd_f32, name##_fwd_f64, name##_bwd_f32,  \
                                            name##_bwd_f64};                                  \
  static int name##_forward(opf_case *c) { return um_forward(c, &name##_kernels); }           \
  static int name##_backward(opf_case *c) { return um_backward(c, &name##_kernels); }         \
  static int name##_reference(opf_case *c) { return um_reference(c, REF); }
#define UM_HOOKS(name)                                                                        \
  .forward = name##_forward, .backward = name##_backward, .reference = name##_reference

/* Default shapes of the elementwise maps (OPERATORS.md "elementwise, unary"). */
#define UM_SHAPES                                                                             \
  {{"standard", "x=1024x1024"}, {"skewed", "x=10000x10"},  {"skewed", "x=10x10000"},           \
   {"skewed", "x=10000x1"},     {"skewed", "x=100000x10"}, {"small", "x=16x16"},               \
   {"small", "x=1x1024"},       {"small", "x=37x3"},       {"small", "x=()"},                  \
   {"test", "x=301x517"},       {"test", "x=100003"},      {"large", "x=8192x8192"}}

/* Descriptor fields every elementwise map shares (one float input x, one output y). */
#define UM_COMMON                                                                             \
  .abi = OPF_OP_ABI, .dtypes = OPF_DT_FLOAT, .n_in = 1, .n_out = 1, .out = {"y"},             \
  .shapes = UM_SHAPES, .infer = um_infer, .bytes = opf_default_bytes

#endif

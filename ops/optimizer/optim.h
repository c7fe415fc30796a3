/* optim.h: shared machinery of the optimizer update operators (ops/optimizer/): the common
 * params, infer (every state has the weight's shape), one dtype-generic kernel body per
 * optimizer instantiated for float32 and float64, the threaded in-place streaming driver, a
 * vectorisable reciprocal square root, the double-precision reference loop and the models. */
#ifndef OPPERF_OPTIM_H
#define OPPERF_OPTIM_H

#include <math.h>

#include "opf_kernel.h"
#include "unary/vmath.h"

/* Params every optimizer has, first and in this order (MXNet's names and defaults, except
 * that lr, which MXNet requires, gets a default). */
enum { OPT_P_LR, OPT_P_WD, OPT_P_RESCALE, OPT_P_CLIP, OPT_P_NCOMMON };

#define OPT_PARAMS_COMMON(lr_def, wd_def)                                                      \
  {.name = "lr", .type = OPF_P_FLOAT, .def = (lr_def), .min = 0, .max = 10,                    \
   .help = "learning rate"},                                                                   \
      {.name = "wd", .type = OPF_P_FLOAT, .def = (wd_def), .min = 0, .max = 10,                \
       .help = "weight decay (L2 penalty coefficient)"},                                       \
      {.name = "rescale_grad", .type = OPF_P_FLOAT, .def = 1, .min = -1e6, .max = 1e6,         \
       .help = "gradient scale: grad = rescale_grad * grad"},                                  \
      {.name = "clip_gradient", .type = OPF_P_FLOAT, .def = -1, .min = -1, .max = 1e6,         \
       .help = "clip the rescaled gradient to [-c, c]; negative: no clipping"}

/* Inputs: weights in [-1, 1], small gradients, and states drawn inside their valid ranges. */
#define OPT_IN_WEIGHT                                                                          \
  {.name = "weight", .dtype = OPF_DT_CASE, .lo = -1, .hi = 1,                                  \
   .help = "parameters, updated in place; every other input takes its shape"}
#define OPT_IN_GRAD                                                                            \
  {.name = "grad", .dtype = OPF_DT_CASE, .lo = -0.1, .hi = 0.1, .help = "gradient (read only)"}
#define OPT_IN_STATE(nm, l, h, hl)                                                             \
  {.name = (nm), .dtype = OPF_DT_CASE, .lo = (l), .hi = (h), .help = (hl)}

/* Shape sets shared by every optimizer: an operator lists OPT_SHAPES_HEAD, its own "small"
 * entries (params to exercise), then OPT_SHAPES_TAIL and its own "test"/"huge" entries. */
#define OPT_SHAPES_HEAD                                                                        \
  {"standard", "weight=1024x1024"}, {"skewed", "weight=10000x10"},                             \
      {"skewed", "weight=10x10000"}, {"skewed", "weight=100000x10"}, {"small", "weight=16x16"}, \
      {"small", "weight=1x64"}, {"small", "weight=5"},                                         \
      {"small", "weight=37x3 clip_gradient=0.05 wd=0.01 rescale_grad=0.5"}
#define OPT_SHAPES_TAIL                                                                        \
  {"test", "weight=301x517"}, {"test", "weight=100003 clip_gradient=0.03 wd=0.001"},           \
      {"large", "weight=8192x8192"}

/* Every input has the shape of the first one given (weight, unless only a state was); missing
 * ones are derived from it, so "--input weight=..." alone resizes the whole update. */
static inline int opt_infer(opf_case *c) {
  const opf_op *op = c->op;
  int ref = -1;
  for (int i = 0; i < op->n_in && ref < 0; i++)
    if (c->in[i].ndim >= 0) ref = i;
  if (ref < 0) return OPF_OK; /* opf_case_init reports "input 'weight' needs a shape" */
  for (int i = 0; i < op->n_in; i++) {
    if (c->in[i].ndim < 0) {
      opf_tensor_set_shape(&c->in[i], c->in[i].dtype, c->in[ref].ndim, c->in[ref].shape);
    } else {
      int rc = opf_same_shape(c, &c->in[ref], &c->in[i], op->in[ref].name, op->in[i].name);
      if (rc) return rc;
    }
  }
  for (int j = 0; j < op->n_out; j++)
    opf_set_out(c, j, c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

/* ---- kernels ---- */

/* 1/sqrt(x) for x >= 0 by the bit-level estimate and Newton steps y *= 1.5 - x/2 y^2 (each
 * squares the relative error: 3.4e-2 -> 1.7e-3 -> 4.5e-6 -> 3e-11 -> 1e-21), so 3 steps for
 * float32 and 4 for float64 reach rounding level. Why not sqrt(): without -fno-math-errno GCC
 * keeps the errno call path and vectorises no loop that calls sqrt. x = 0 gives a large finite
 * y, so x * rsqrt(x) = sqrt(x) = 0 exactly there; a subnormal x gets a poor estimate, harmless
 * where it is used (next to an epsilon or a far larger term; the states stay normal). */
VM_INLINE float opt_rsqrtf(float x) {
  float y = vm_u2f(0x5f375a86u - (vm_f2u(x) >> 1)), hx = 0.5f * x;
  y = y * (1.5f - hx * y * y);
  y = y * (1.5f - hx * y * y);
  return y * (1.5f - hx * y * y);
}
VM_INLINE double opt_rsqrtd(double x) {
  double y = vm_u2d(0x5fe6eb50c7b537a9ull - (vm_d2u(x) >> 1)), hx = 0.5 * x;
  y = y * (1.5 - hx * y * y);
  y = y * (1.5 - hx * y * y);
  y = y * (1.5 - hx * y * y);
  return y * (1.5 - hx * y * y);
}
#define OPT_RSQRT(x) _Generic((x), float: opt_rsqrtf, double: opt_rsqrtd)(x)
#define OPT_SQRT(x) ((x) * OPT_RSQRT(x))
/* Clamp to [-c, c]; c = +inf (clipping off) leaves x alone. Two separate selects, which GCC
 * maps to one vminps and one vmaxps (the nested ?: form compiled to compares, mask logic and
 * blends). */
VM_INLINE float opt_clampf(float x, float c) {
  x = x > c ? c : x;
  return x < -c ? -c : x;
}
VM_INLINE double opt_clampd(double x, double c) {
  x = x > c ? c : x;
  return x < -c ? -c : x;
}
#define OPT_CLAMP(x, c) _Generic((x), float: opt_clampf, double: opt_clampd)(x, c)

/* Kernels see the arrays (inputs in descriptor order, already offset to the chunk), the
 * hyper-parameters converted to their dtype, and acc: partial sums a kernel may add to (only
 * lamb's norm pass does; the others get NULL). */
typedef void (*opt_k32)(float *const *a, const float *h, int64_t n, double *acc);
typedef void (*opt_k64)(double *const *a, const double *h, int64_t n, double *acc);

/* Define static NAME_f32 and NAME_f64 from one body written with the element type T: the
 * update is written once and vectorised for each dtype and ISA (OPF_VEC). */
#define OPT_KERNELS(NAME, ...)                                                                 \
  OPF_VEC static void NAME##_f32(float *const *a, const float *h, int64_t n,                  \
                                 double *acc __attribute__((unused))) {                        \
    typedef float T;                                                                           \
    __VA_ARGS__                                                                                \
  }                                                                                            \
  OPF_VEC static void NAME##_f64(double *const *a, const double *h, int64_t n,                \
                                 double *acc __attribute__((unused))) {                        \
    typedef double T;                                                                          \
    __VA_ARGS__                                                                                \
  }

/* Hyper-parameters every kernel gets first (opt_hyper), then its own from OPT_H_NCOMMON. */
enum { OPT_H_LR, OPT_H_WD, OPT_H_RS, OPT_H_CG, OPT_H_NCOMMON };

/* In a kernel body: the weight w and gradient g arrays and the common hyper-parameters. */
#define OPT_LOCALS                                                                             \
  T *restrict w = a[0];                                                                        \
  const T *restrict g = a[1];                                                                  \
  const T lr = h[OPT_H_LR], wd = h[OPT_H_WD], rs = h[OPT_H_RS], cg = h[OPT_H_CG];              \
  (void)w, (void)g, (void)lr, (void)wd, (void)rs, (void)cg
/* The gradient at element i, rescaled and clipped; the second form adds wd w before clipping
 * (MXNet's adam and rmsprop). */
#define OPT_GRAD(i) OPT_CLAMP(rs * g[i], cg)
#define OPT_GRAD_WD(i) OPT_CLAMP(rs * g[i] + wd * w[i], cg)

enum { OPT_MAXH = 16 }; /* hyper-parameters per kernel */

typedef struct opt_run {
  const opf_case *c;
  opt_k32 k32;
  opt_k64 k64;
  float h32[OPT_MAXH];
  double h64[OPT_MAXH];
} opt_run;

static inline opt_run opt_run_make(const opf_case *c, opt_k32 k32, opt_k64 k64, const double *h,
                                   int nh) {
  opt_run r = {.c = c, .k32 = k32, .k64 = k64};
  for (int j = 0; j < nh && j < OPT_MAXH; j++) r.h32[j] = (float)h[j], r.h64[j] = h[j];
  return r;
}

/* Run the kernel on elements [lo, hi) of every array. */
static inline void opt_run_chunk(const opt_run *r, int64_t lo, int64_t hi, double *acc) {
  const opf_case *c = r->c;
  if (c->dtype == OPF_F32) {
    float *a[OPF_MAX_IN];
    for (int j = 0; j < c->op->n_in; j++) a[j] = (float *)c->in[j].data + lo;
    r->k32(a, r->h32, hi - lo, acc);
  } else {
    double *a[OPF_MAX_IN];
    for (int j = 0; j < c->op->n_in; j++) a[j] = (double *)c->in[j].data + lo;
    r->k64(a, r->h64, hi - lo, acc);
  }
}

static inline void opt_range(int64_t lo, int64_t hi, void *p) { opt_run_chunk(p, lo, hi, NULL); }

/* One fused pass over every array, split into one contiguous chunk per thread. h[0..nh) are
 * the kernel's hyper-parameters in double; clipping bounds that are off must already be +inf. */
static inline int opt_stream(opf_case *c, opt_k32 k32, opt_k64 k64, const double *h, int nh) {
  opt_run r = opt_run_make(c, k32, k64, h, nh);
  opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, opt_range, &r);
  return OPF_OK;
}

/* A clip param as a kernel bound: negative means off, i.e. +inf. */
static inline double opt_bound(double clip) { return clip >= 0 ? clip : INFINITY; }

/* The common hyper-parameters into h[0..OPT_H_NCOMMON). */
static inline void opt_hyper(const opf_case *c, double *h) {
  h[OPT_H_LR] = c->p[OPT_P_LR], h[OPT_H_WD] = c->p[OPT_P_WD];
  h[OPT_H_RS] = c->p[OPT_P_RESCALE], h[OPT_H_CG] = opt_bound(c->p[OPT_P_CLIP]);
}

/* ---- reference ---- */

/* Clamp as MXNet's clip::Map, applied only when c >= 0. */
static inline double opt_clip_ref(double x, double c) {
  return c < 0 ? x : x > c ? c : x < -c ? -c : x;
}

/* The gradient of element values v (v[0] weight, v[1] grad): clip(rescale_grad grad), and
 * clip(rescale_grad grad + wd w). */
static inline double opt_grad_ref(const double *v, const double *p) {
  return opt_clip_ref(p[OPT_P_RESCALE] * v[1], p[OPT_P_CLIP]);
}
static inline double opt_grad_wd_ref(const double *v, const double *p) {
  return opt_clip_ref(p[OPT_P_RESCALE] * v[1] + p[OPT_P_WD] * v[0], p[OPT_P_CLIP]);
}

/* One element of every input in v (in descriptor order), updated in place from the params. */
typedef void (*opt_ref_fn)(double *v, const double *p);

static inline double opt_get(const opf_tensor *t, int64_t i) {
  return t->dtype == OPF_F32 ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}
static inline void opt_put(opf_tensor *t, int64_t i, double x) {
  if (t->dtype == OPF_F32) ((float *)t->data)[i] = (float)x;
  else ((double *)t->data)[i] = x;
}

/* Naive element loop in double: read every input, apply the scalar formula, write each
 * in-place output from the input it updates. */
static inline int opt_reference(opf_case *c, opt_ref_fn step) {
  const opf_op *op = c->op;
  int64_t n = opf_numel(&c->in[0]);
  for (int64_t i = 0; i < n; i++) {
    double v[OPF_MAX_IN];
    for (int j = 0; j < op->n_in; j++) v[j] = opt_get(&c->in[j], i);
    step(v, c->p);
    for (int k = 0; k < op->n_out; k++) opt_put(&c->out[k], i, v[op->inplace[k] - 1]);
  }
  return OPF_OK;
}

/* ---- models ---- */

/* An optimizer update has no backward: the update is the whole training step, so every pass
 * (fwd, bwd, both) reports it (the test driver requires positive traffic for each pass). */
static inline double opt_flops_per(const opf_case *c, double per_elem) {
  return per_elem * (double)opf_numel(&c->in[0]);
}
/* Traffic of `passes` full sweeps over one array of the weight's size and dtype: each input
 * read once and each state written once per element, in place (no write-allocate: the lines
 * were just read). */
static inline double opt_bytes_arrays(const opf_case *c, double passes) {
  return passes * (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->dtype);
}
/* Clipping costs a min and a max per element when it is on. */
static inline double opt_clip_flops(const opf_case *c) { return c->p[OPT_P_CLIP] >= 0 ? 2 : 0; }
/* Reads every input, writes every in-place output: the usual model of a one-pass update. */
static inline double opt_bytes(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_bytes_arrays(c, c->op->n_in + c->op->n_out);
}

#endif

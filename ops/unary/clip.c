/* clip.c: clip (and its alias clamp, PyTorch's name): y = min(max(x, min), max), either bound
 * optional ("none", torch.clamp's None); float32/float64 with the gradient, int32/int64
 * forward. Memory-bound: one vectorised pass (ISA chosen at load time), threaded like the
 * other elementwise maps (unary_map.h's cache-line aligned chunks). */
#include <math.h>

#include "unary/unary_map.h"

enum { P_MIN, P_MAX };

/* NaN propagates as in torch.clamp: each comparison is false for NaN, so x passes through
 * both selects unchanged (GCC makes them maxps/minps with the NaN-keeping operand order).
 * min > max gives max everywhere, as torch.clamp does. */
#define CLIP_FWD_LOOP(T, SUF)                                                                 \
  OPF_VEC static void clip_fwd_##SUF(const T *restrict xp, T *restrict yp, int64_t n, T lo,   \
                                     T hi) {                                                  \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = xp[i], t = x < lo ? lo : x;                                                 \
      yp[i] = t > hi ? hi : t;                                                                \
    }                                                                                         \
  }
/* torch.clamp's backward (clamp_backward): dy where min <= x <= max, else 0 (the bounds
 * themselves get the subgradient 1; NaN gets 0). */
#define CLIP_BWD_LOOP(T, SUF)                                                                 \
  OPF_VEC static void clip_bwd_##SUF(const T *restrict xp, const T *restrict dyp,             \
                                     T *restrict dxp, int64_t n, T lo, T hi) {                \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = xp[i];                                                                      \
      dxp[i] = x >= lo && x <= hi ? dyp[i] : (T)0;                                            \
    }                                                                                         \
  }
CLIP_FWD_LOOP(float, f32)
CLIP_FWD_LOOP(double, f64)
CLIP_FWD_LOOP(int32_t, i32)
CLIP_FWD_LOOP(int64_t, i64)
CLIP_BWD_LOOP(float, f32)
CLIP_BWD_LOOP(double, f64)

/* An integer bound: absent (infinite) or beyond the type's range saturates to it. */
static int64_t clip_ibound(double v, int64_t tmin, int64_t tmax) {
  return v <= (double)tmin ? tmin : v >= (double)tmax ? tmax : (int64_t)v;
}

typedef struct {
  const opf_case *c;
  int bwd;
} clip_ctx;

static void clip_range(int64_t lo, int64_t hi, void *p) {
  const clip_ctx *u = p;
  const opf_case *c = u->c;
  const double a = c->p[P_MIN], b = c->p[P_MAX];
  const void *x = c->in[0].data;
  const int64_t n = hi - lo;
  if (u->bwd) {
    if (c->dtype == OPF_F32)
      clip_bwd_f32((const float *)x + lo, (const float *)c->gout[0].data + lo,
                   (float *)c->gin[0].data + lo, n, (float)a, (float)b);
    else
      clip_bwd_f64((const double *)x + lo, (const double *)c->gout[0].data + lo,
                   (double *)c->gin[0].data + lo, n, a, b);
    return;
  }
  void *y = c->out[0].data;
  switch (c->dtype) {
  case OPF_F32: clip_fwd_f32((const float *)x + lo, (float *)y + lo, n, (float)a, (float)b); break;
  case OPF_F64: clip_fwd_f64((const double *)x + lo, (double *)y + lo, n, a, b); break;
  case OPF_I32:
    clip_fwd_i32((const int32_t *)x + lo, (int32_t *)y + lo, n,
                 (int32_t)clip_ibound(a, INT32_MIN, INT32_MAX),
                 (int32_t)clip_ibound(b, INT32_MIN, INT32_MAX));
    break;
  default:
    clip_fwd_i64((const int64_t *)x + lo, (int64_t *)y + lo, n, clip_ibound(a, INT64_MIN, INT64_MAX),
                 clip_ibound(b, INT64_MIN, INT64_MAX));
  }
}

static const um_kernels clip_par = {.par_min = UM_PAR_CHEAP};

static int clip_forward(opf_case *c) {
  clip_ctx u = {c, 0};
  um_parallel(opf_numel(&c->in[0]), &clip_par, clip_range, &u);
  return OPF_OK;
}

static int clip_backward(opf_case *c) {
  if (!c->gin[0].data) return OPF_OK; /* integer cases have no gradient */
  clip_ctx u = {c, 1};
  um_parallel(opf_numel(&c->in[0]), &clip_par, clip_range, &u);
  return OPF_OK;
}

/* Integer inputs take integer bounds: torch.clamp would promote the result to a float
 * dtype, which this operator does not model. */
static int clip_infer(opf_case *c) {
  if (opf_dtype_is_float(c->dtype) == 0)
    for (int k = P_MIN; k <= P_MAX; k++)
      if (isfinite(c->p[k]) && c->p[k] != floor(c->p[k]))
        return opf_case_error(c, OPF_EINVAL, "%s=%g must be an integer (or none) for dtype %s",
                              c->op->params[k].name, c->p[k], opf_dtype_name(c->dtype));
  return um_infer(c);
}

/* The plain definition, element by element. */
static int clip_reference(opf_case *c) {
  const int64_t n = opf_numel(&c->in[0]);
  const double a = c->p[P_MIN], b = c->p[P_MAX];
  for (int64_t i = 0; i < n; i++) {
    switch (c->dtype) {
    case OPF_F32: {
      const float x = ((const float *)c->in[0].data)[i];
      float y = x;
      if (x < (float)a) y = (float)a;
      if (y > (float)b) y = (float)b;
      ((float *)c->out[0].data)[i] = y;
      break;
    }
    case OPF_F64: {
      const double x = ((const double *)c->in[0].data)[i];
      ((double *)c->out[0].data)[i] = isnan(x) ? x : fmin(fmax(x, a), b);
      break;
    }
    default: { /* integers: saturated bounds, clamped in int64, stored saturated */
      const int64_t lo = clip_ibound(a, INT64_MIN, INT64_MAX), hi = clip_ibound(b, INT64_MIN, INT64_MAX);
      int64_t y = c->dtype == OPF_I32 ? ((const int32_t *)c->in[0].data)[i]
                                      : ((const int64_t *)c->in[0].data)[i];
      if (y < lo) y = lo;
      if (y > hi) y = hi;
      if (c->dtype == OPF_I32)
        ((int32_t *)c->out[0].data)[i] = (int32_t)(y < INT32_MIN ? INT32_MIN : y > INT32_MAX ? INT32_MAX : y);
      else
        ((int64_t *)c->out[0].data)[i] = y;
    }
    }
  }
  return OPF_OK;
}

/* One compare-select per present bound and element, in both passes (backward: the two
 * compares of the mask, the select folded in). Bytes: fwd x and y; bwd x, dy and dx. */
static double clip_per_elem(const opf_case *c) {
  return (double)(isfinite(c->p[P_MIN]) != 0) + (double)(isfinite(c->p[P_MAX]) != 0);
}
static double clip_flops(const opf_case *c, opf_pass p) {
  const double f = clip_per_elem(c);
  return um_flops(c, p, f, f);
}
static double clip_bytes(const opf_case *c, opf_pass p) { return um_bytes(c, p, UM_R_ONE); }

/* Both names share this descriptor body. */
#define CLIP_DESC                                                                             \
  .abi = OPF_OP_ABI, .category = "unary", .dtypes = OPF_DT_FLOAT | OPF_DT_INT, .n_in = 1,     \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -2, .hi = 2,        \
          .help = "values, half of them outside the default [-1, 1]"}},                      \
  .n_out = 1, .out = {"y"}, .n_params = 2,                                                    \
  .params = {{.name = "min", .type = OPF_P_FLOAT, .def = -1, .min = -INFINITY, .max = 1e300,  \
              .help = "lower bound; none: no lower bound (torch.clamp's min=None)"},          \
             {.name = "max", .type = OPF_P_FLOAT, .def = 1, .min = -1e300, .max = INFINITY,   \
              .help = "upper bound; none: no upper bound (min > max gives max everywhere)"}}, \
  .shapes = {{"standard", "x=1024x1024"}, {"skewed", "x=10000x10"},  {"skewed", "x=10x10000"},  \
             {"skewed", "x=10000x1"},     {"skewed", "x=100000x10"}, {"small", "x=16x16"},      \
             {"small", "x=1x1024"},       {"small", "x=37x3 min=none max=1"},                 \
             {"small", "x=37x3 min=-1 max=none"}, {"small", "x=()"},                         \
             {"small", "x=5x7 min=1 max=-1"},    {"test", "x=301x517"},                     \
             {"test", "x=100003 min=-1 max=0"},    {"large", "x=8192x8192"},                  \
             {"huge", "x=46341x46341"}},                                                        \
  .infer = clip_infer, .forward = clip_forward, .backward = clip_backward,                    \
  .reference = clip_reference, .flops = clip_flops, .bytes = clip_bytes

OPPERF_OP(clip) = {
    CLIP_DESC,
    .name = "clip",
    .summary = "clip to [min, max]: y = min(max(x, min), max), either bound optional (clamp)",
};

OPPERF_OP(clamp) = {
    CLIP_DESC,
    .name = "clamp",
    .summary = "alias of clip (torch.clamp's name): y = min(max(x, min), max)",
};

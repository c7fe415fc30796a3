/* continuous.c: uniform, normal and exponential samples from the counter-based generator.
 * Transform sampling, vectorised: uniform scales one draw, exponential is -log(u)/rate with
 * the branch-free vmath log, normal is Box-Muller on pairs (elements 2m and 2m+1 are r*cos and
 * r*sin of pair m's two draws) with rand_common.h's sin/cos. float32 runs in float arithmetic. */
#include "random/rand_common.h"

/* ---- uniform(low, high): a = low, b = high - low ---- */
RC_MAP(uniform, f32, float, g->fa + g->fb * rc_u01f(x))
RC_MAP(uniform, f64, double, g->a + g->b * rc_u01(x))
RC_DISPATCH_FLOAT(uniform)

static double uniform_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  uint64_t x = rc_draw(r, k, 0);
  return g->a + g->b * (g->dt == OPF_F32 ? (double)rc_u01f(x) : rc_u01(x));
}

static int uniform_infer(opf_case *c) {
  if (!(c->p[RC_P_B] > c->p[RC_P_A]))
    return opf_case_error(c, OPF_EINVAL, "uniform needs low < high (low=%g, high=%g)",
                          c->p[RC_P_A], c->p[RC_P_B]);
  return rc_infer(c);
}
static rc_ctx uniform_ctx(const opf_case *c, void *s) {
  (void)s;
  return rc_ctx_make(c, c->p[RC_P_A], c->p[RC_P_B] - c->p[RC_P_A]);
}
RC_ENTRIES(uniform, char)

/* ---- exponential(rate): a = 1/rate (the kernels multiply), b = rate (the reference divides) ---- */
RC_MAP(exponential, f32, float, -vm_logf(rc_u01fo(x)) * g->fa)
RC_MAP(exponential, f64, double, -vm_log(rc_u01o(x)) * g->a)
RC_DISPATCH_FLOAT(exponential)

static double exponential_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  uint64_t x = rc_draw(r, k, 0);
  return -log(g->dt == OPF_F32 ? (double)rc_u01fo(x) : rc_u01o(x)) / g->b;
}

static int exponential_infer(opf_case *c) {
  if (!(c->p[RC_P_A] > 0))
    return opf_case_error(c, OPF_EINVAL, "exponential needs rate > 0 (rate=%g)", c->p[RC_P_A]);
  return rc_infer(c);
}
static rc_ctx exponential_ctx(const opf_case *c, void *s) {
  (void)s;
  return rc_ctx_make(c, 1.0 / c->p[RC_P_A], c->p[RC_P_A]);
}
RC_ENTRIES(exponential, char)

/* ---- normal(mean, std): Box-Muller on pair m = k/2 (draws (m, 0) and (m, 1)) ---- */
VM_INLINE void normal_pair_f64(uint64_t key, int64_t m, double *c0, double *s1) {
  double s, c, r = rc_sqrt(-2.0 * vm_log(rc_u01o(rc_bits(key, m, 0))));
  rc_sincos2pi(rc_u01(rc_bits(key, m, 1)), &s, &c);
  *c0 = r * c, *s1 = r * s;
}
VM_INLINE void normal_pair_f32(uint64_t key, int64_t m, float *c0, float *s1) {
  float s, c, r = rc_sqrtf(-2.0f * vm_logf(rc_u01fo(rc_bits(key, m, 0))));
  rc_sincos2pif(rc_u01f(rc_bits(key, m, 1)), &s, &c);
  *c0 = r * c, *s1 = r * s;
}

/* Elements [lo, lo+n): a lone odd first element, whole pairs (vectorised), a lone last one. */
#define NORMAL_LOOP(SUF, T, MEAN, STD)                                                        \
  OPF_VEC static void normal_##SUF(const rc_ctx *restrict g, int64_t lo, int64_t n,           \
                                   T *restrict y) {                                           \
    T c0, s1;                                                                                 \
    int64_t i = 0;                                                                            \
    if (n > 0 && (lo & 1)) {                                                                  \
      normal_pair_##SUF(g->key, lo >> 1, &c0, &s1);                                           \
      y[i++] = MEAN + STD * s1;                                                               \
    }                                                                                         \
    const int64_t m0 = (lo + i) >> 1, np = (n - i) >> 1;                                      \
    T *restrict yp = y + i;                                                                   \
    for (int64_t m = 0; m < np; m++) {                                                        \
      normal_pair_##SUF(g->key, m0 + m, &c0, &s1);                                            \
      yp[2 * m] = MEAN + STD * c0;                                                            \
      yp[2 * m + 1] = MEAN + STD * s1;                                                        \
    }                                                                                         \
    if (i + 2 * np < n) {                                                                     \
      normal_pair_##SUF(g->key, m0 + np, &c0, &s1);                                           \
      y[n - 1] = MEAN + STD * c0;                                                             \
    }                                                                                         \
  }
NORMAL_LOOP(f32, float, g->fa, g->fb)
NORMAL_LOOP(f64, double, g->a, g->b)
RC_DISPATCH_FLOAT(normal)

static double normal_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  uint64_t x1 = rc_draw(r, k >> 1, 0), x2 = rc_draw(r, k >> 1, 1);
  int f = g->dt == OPF_F32;
  double u1 = f ? (double)rc_u01fo(x1) : rc_u01o(x1), u2 = f ? (double)rc_u01f(x2) : rc_u01(x2);
  double z = sqrt(-2.0 * log(u1)) * ((k & 1) ? sin(2 * M_PI * u2) : cos(2 * M_PI * u2));
  return g->a + g->b * z;
}

static int normal_infer(opf_case *c) {
  if (!(c->p[RC_P_B] >= 0))
    return opf_case_error(c, OPF_EINVAL, "normal needs std >= 0 (std=%g)", c->p[RC_P_B]);
  return rc_infer(c);
}
static rc_ctx normal_ctx(const opf_case *c, void *s) {
  (void)s;
  return rc_ctx_make(c, c->p[RC_P_A], c->p[RC_P_B]);
}
RC_ENTRIES(normal, char)

#define CONT_OP(NAME)                                                                         \
  RC_COMMON, .name = #NAME, .dtypes = OPF_DT_FLOAT, .shapes = CR_SHAPE_SETS,                  \
  .infer = NAME##_infer, .forward = NAME##_forward, .reference = NAME##_reference

OPPERF_OP(uniform) = {
    CONT_OP(uniform),
    .summary = "uniform samples in [low, high)",
    .n_params = 4,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "low", .type = OPF_P_FLOAT, .def = 0, .min = -1e300, .max = 1e300,
                .help = "lower bound (included)"},
               {.name = "high", .type = OPF_P_FLOAT, .def = 1, .min = -1e300, .max = 1e300,
                .help = "upper bound (excluded)"}},
};

OPPERF_OP(normal) = {
    CONT_OP(normal),
    .summary = "normal samples N(mean, std^2) by Box-Muller (element k from pair k/2)",
    .n_params = 4,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "mean", .type = OPF_P_FLOAT, .def = 0, .min = -1e300, .max = 1e300,
                .help = "mean"},
               {.name = "std", .type = OPF_P_FLOAT, .def = 1, .min = 0, .max = 1e300,
                .help = "standard deviation"}},
};

OPPERF_OP(exponential) = {
    CONT_OP(exponential),
    .summary = "exponential samples with the given rate (mean 1/rate), by -log(u)/rate",
    .n_params = 3,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "rate", .type = OPF_P_FLOAT, .def = 1, .min = 0, .max = 1e300,
                .help = "rate lambda > 0"}},
};

/* act_maps.c: the elementwise activations: leaky_relu, elu, selu, gelu (erf form), gelu_tanh,
 * silu, mish, hard_sigmoid, log_sigmoid, softplus, softsign. One table row each (unary_map.h's
 * UM_MAP, or act_common.h's AM_MAP for the ones with params): vectorised forward and backward
 * loops (exp from vmath.h, expm1 and float64 erfc from libmvec, the float32 GELU cdf and the
 * log1p of softplus in act_common.h), threaded, float64 libm references. Every backward reads
 * dy and one of x, y: whichever gives the exact gradient. */
#include "activation/act_common.h"

/* expm1 of min(x, 0) (libmvec's, accurate near 0), computed on every lane and selected: a
 * conditional call is not vectorised (measured 8.4 ms for (1024, 1024), 0.27 ms this way). */
#define ELU_EXPM1(x) VL(expm1, VM_SEL((x) < 0, (x), UM_C(0)))
/* SELU's constants (Klambauer et al. 2017), as in PyTorch. */
#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946
/* tanh form of GELU: 0.5 x (1 + tanh(k (x + c x^3))) = x s with s = sigmoid(2 k (x + c x^3)),
 * one exp and no cancellation for x << 0. */
#define GT_K 0.79788456080286535588 /* sqrt(2 / pi) */
#define GT_C 0.044715
#define GT_S(x) (1 / (1 + VM_EXP(UM_C(-2 * GT_K) * ((x) + UM_C(GT_C) * (x) * (x) * (x)))))
/* mish: tanh(softplus(x)) = n / (n + 2) with n = e (e + 2), e = exp(x); e is clamped at
 * exp(20), where that ratio is 1 in float64 already, so n never overflows. */
#define MISH_E(x) VM_EXP(VM_SEL((x) < 20, (x), UM_C(20)))

static double leaky_relu_ref(double x, const double *p) { return x > 0 ? x : p[0] * x; }
static double elu_ref(double x, const double *p) { return x > 0 ? x : p[0] * expm1(x); }
static double selu_ref(double x) { return SELU_SCALE * (x > 0 ? x : SELU_ALPHA * expm1(x)); }
static double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + tanh(GT_K * (x + GT_C * x * x * x)));
}
static double silu_ref(double x) { return x / (1 + exp(-x)); }
static double mish_ref(double x) { return x * tanh(log1p(exp(x))); }
static double hard_sigmoid_ref(double x, const double *p) {
  return fmin(fmax(p[0] * x + p[1], 0), 1);
}
static double log_sigmoid_ref(double x) {
  return x >= 0 ? -log1p(exp(-x)) : x - log1p(exp(x));
}
static double softplus_ref(double x, const double *p) {
  return p[0] * x > p[1] ? x : log1p(exp(p[0] * x)) / p[0];
}
static double softsign_ref(double x) { return x / (1 + fabs(x)); }

/* Costs per element (exp, expm1, erfc, log1p counted as one flop each). Gradients: leaky_relu
 * 1 or alpha; elu and selu from y (y + alpha = alpha exp(x) below 0); gelu cdf + x pdf;
 * gelu_tanh s + x s (1 - s) 2k (1 + 3c x^2); silu s (1 + x (1 - s)); mish
 * t + x (1 - t^2) sigmoid(x) with 1 - t = 2 / (n + 2); hard_sigmoid alpha inside the ramp;
 * log_sigmoid 1 / (1 + exp(x)); softplus sigmoid(beta x) below the threshold;
 * softsign 1 / (1 + |x|)^2. */
AM_MAP(leaky_relu, x > 0 ? x : p0 * x, x > 0 ? dy : p0 * dy, leaky_relu_ref, 2, 2, UM_R_ONE,
       UM_PAR_CHEAP)
AM_MAP(elu, VM_SEL(x > 0, x, p0 * ELU_EXPM1(x)), y > 0 ? dy : dy * (y + p0), elu_ref, 3, 3,
       UM_R_ONE, UM_PAR_MATH)
UM_MAP(selu, UM_C(SELU_SCALE) * VM_SEL(x > 0, x, UM_C(SELU_ALPHA) * ELU_EXPM1(x)),
       y > 0 ? UM_C(SELU_SCALE) * dy : dy * (y + UM_C(SELU_SCALE * SELU_ALPHA)), selu_ref, 4, 3,
       UM_R_ONE, UM_PAR_MATH)
/* gelu: the float32 forward takes the AVX-512 kernel where the CPU has it (act_common.h) */
UM_LOOPS(gelu_vec, float, f32, ACT_GELU(x), dy * ACT_GELU_GRAD(x))
UM_LOOPS(gelu, double, f64, ACT_GELU(x), dy * ACT_GELU_GRAD(x))
static void gelu_fwd_f32(const float *restrict x, float *restrict y, int64_t n) {
  if (VM512_OK()) act_gelu_f32_avx512(x, NULL, y, n);
  else gelu_vec_fwd_f32(x, y, n);
}
static void gelu_bwd_f32(const float *restrict x, const float *restrict y,
                         const float *restrict dy, float *restrict dx, int64_t n) {
  if (VM512_OK()) act_gelu_grad_f32_avx512(x, NULL, dy, dx, n);
  else gelu_vec_bwd_f32(x, y, dy, dx, n);
}
UM_DIFF_HOOKS(gelu, act_gelu_ref, NULL, 4, 9, UM_R_ONE, UM_PAR_MATH)
UM_MAP(gelu_tanh, x * GT_S(x), ({
         const __typeof__(x) s = GT_S(x);
         dy * (s + x * s * (1 - s) * UM_C(2 * GT_K) * (1 + UM_C(3 * GT_C) * x * x));
       }),
       gelu_tanh_ref, 9, 15, UM_R_ONE, UM_PAR_MATH)
UM_MAP(silu, x / (1 + VM_EXP(-x)), ({
         const __typeof__(x) s = 1 / (1 + VM_EXP(-x));
         dy * s * (1 + x * (1 - s));
       }),
       silu_ref, 4, 9, UM_R_ONE, UM_PAR_MATH)
UM_MAP(mish, ({
         const __typeof__(x) e = MISH_E(x), n = e * (e + 2);
         x * n / (n + 2);
       }),
       ({
         const __typeof__(x) e = MISH_E(x), n = e * (e + 2), t = n / (n + 2);
         dy * (t + x * (2 / (n + 2)) * (1 + t) * (e / (1 + e)));
       }),
       mish_ref, 7, 14, UM_R_ONE, UM_PAR_MATH)
AM_MAP(hard_sigmoid, ({
         const __typeof__(x) v = p0 * x + p1;
         VM_SEL(v < 0, UM_C(0), VM_SEL(v > 1, UM_C(1), v));
       }),
       ({
         const __typeof__(x) v = p0 * x + p1;
         VM_SEL((v > 0) & (v < 1), p0 * dy, UM_C(0));
       }),
       hard_sigmoid_ref, 4, 4, UM_R_ONE, UM_PAR_CHEAP)
/* log_sigmoid: both passes from e = exp(-|x|) (VM_EXP_NP: no overflow to handle); the
 * gradient 1 / (1 + exp(x)) = (x > 0 ? e : 1) / (1 + e); the float32 backward by the AVX-512
 * kernel where the CPU has it: -expm1(y) from the forward's y (act_common.h) */
#define LS_FWD(x) (VM_SEL(x < 0, x, UM_C(0)) - ACT_LOG1P01(VM_EXP_NP(-VM_ABS(x))))
#define LS_BWD(x, dy)                                                                         \
  ({                                                                                          \
    const __typeof__(x) e = VM_EXP_NP(-VM_ABS(x));                                            \
    dy * VM_SEL(x > 0, e, UM_C(1)) / (1 + e);                                                 \
  })
UM_LOOPS(log_sigmoid_vec, float, f32, LS_FWD(x), LS_BWD(x, dy))
UM_LOOPS(log_sigmoid, double, f64, LS_FWD(x), LS_BWD(x, dy))
#define log_sigmoid_fwd_f32 log_sigmoid_vec_fwd_f32
static void log_sigmoid_bwd_f32(const float *restrict x, const float *restrict y,
                                const float *restrict dy, float *restrict dx, int64_t n) {
  if (VM512_OK()) act_log_sigmoid_grad_f32_avx512(y, dy, dx, n);
  else log_sigmoid_vec_bwd_f32(x, y, dy, dx, n);
}
UM_DIFF_HOOKS(log_sigmoid, log_sigmoid_ref, NULL, 6, 3, UM_R_ONE, UM_PAR_MATH)
AM_MAP(softplus, ({
         const __typeof__(x) bx = p0 * x;
         const __typeof__(x) sp = VM_SEL(bx > 0, bx, UM_C(0)) + ACT_LOG1P01(VM_EXP(-VM_ABS(bx)));
         VM_SEL(bx > p1, x, sp * (1 / p0));
       }),
       ({
         const __typeof__(x) bx = p0 * x;
         VM_SEL(bx > p1, dy, dy / (1 + VM_EXP(-bx)));
       }),
       softplus_ref, 7, 5, UM_R_ONE, UM_PAR_MATH)
UM_MAP(softsign, x / (1 + VM_ABS(x)), ({
         const __typeof__(x) d = 1 + VM_ABS(x);
         dy / (d * d);
       }),
       softsign_ref, 3, 4, UM_R_ONE, UM_PAR_CHEAP)

/* x uniform in [lo, hi) */
#define ACT_X(lo_, hi_)                                                                       \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = lo_, .hi = hi_}}

OPPERF_OP(leaky_relu) = {
    ACT_DESC(leaky_relu),
    .name = "leaky_relu",
    .summary = "leaky rectifier: y = x for x > 0, alpha x otherwise",
    ACT_X(-4, 4),
    .n_params = 1,
    .params = {{.name = "alpha", .type = OPF_P_FLOAT, .def = 0.01, .min = -100, .max = 100,
                .help = "slope for x <= 0 (PyTorch negative_slope)"}},
    .shapes = ACT_SHAPES({"small", "x=16x16 alpha=0.3"}, {"small", "x=37x3 alpha=-0.5"}),
};

OPPERF_OP(elu) = {
    ACT_DESC(elu),
    .name = "elu",
    .summary = "exponential linear unit: y = x for x > 0, alpha (exp(x) - 1) otherwise",
    ACT_X(-4, 4),
    .n_params = 1,
    .params = {{.name = "alpha", .type = OPF_P_FLOAT, .def = 1, .min = 0, .max = 100,
                .help = "scale of the negative part (>= 0: the gradient is taken from y)"}},
    .shapes = ACT_SHAPES({"small", "x=16x16 alpha=0.5"}, {"small", "x=37x3 alpha=2"}),
};

OPPERF_OP(selu) = {
    ACT_DESC(selu),
    .name = "selu",
    .summary = "scaled ELU: y = scale (x > 0 ? x : alpha (exp(x) - 1)), alpha 1.6733, scale 1.0507",
    ACT_X(-4, 4),
    .shapes = UM_SHAPES,
};

OPPERF_OP(gelu) = {
    ACT_DESC(gelu),
    .name = "gelu",
    .summary = "Gaussian error linear unit, erf form: y = x Phi(x) = 0.5 x erfc(-x / sqrt 2)",
    ACT_X(-5, 5),
    .shapes = UM_SHAPES,
};

OPPERF_OP(gelu_tanh) = {
    ACT_DESC(gelu_tanh),
    .name = "gelu_tanh",
    .summary = "GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
    ACT_X(-5, 5),
    .shapes = UM_SHAPES,
};

OPPERF_OP(silu) = {
    ACT_DESC(silu),
    .name = "silu",
    .summary = "sigmoid linear unit (swish): y = x sigmoid(x)",
    ACT_X(-6, 6),
    .shapes = UM_SHAPES,
};

OPPERF_OP(mish) = {
    ACT_DESC(mish),
    .name = "mish",
    .summary = "mish: y = x tanh(softplus(x))",
    ACT_X(-6, 6),
    .shapes = UM_SHAPES,
};

/* MXNet's, Keras's and ONNX's parametrisation (alpha 0.2, beta 0.5); PyTorch's Hardsigmoid
 * is alpha = 1/6, beta = 0.5 (the "small" set runs both). */
OPPERF_OP(hard_sigmoid) = {
    ACT_DESC(hard_sigmoid),
    .name = "hard_sigmoid",
    .summary = "hard sigmoid: y = clip(alpha x + beta, 0, 1) (MXNet/ONNX alpha 0.2, beta 0.5)",
    ACT_X(-4, 4),
    .n_params = 2,
    .params = {{.name = "alpha", .type = OPF_P_FLOAT, .def = 0.2, .min = -1000, .max = 1000,
                .help = "slope (PyTorch's Hardsigmoid: 1/6)"},
               {.name = "beta", .type = OPF_P_FLOAT, .def = 0.5, .min = -1000, .max = 1000,
                .help = "offset"}},
    .shapes = ACT_SHAPES({"small", "x=16x16 alpha=0.16666666666666666 beta=0.5"},
                         {"small", "x=37x3 alpha=-0.5 beta=0.25"}),
};

OPPERF_OP(log_sigmoid) = {
    ACT_DESC(log_sigmoid),
    .name = "log_sigmoid",
    .summary = "log of the logistic sigmoid: y = -softplus(-x) = min(x, 0) - log1p(exp(-|x|))",
    ACT_X(-6, 6),
    .shapes = UM_SHAPES,
};

/* PyTorch's Softplus: linear above the threshold, for numerical stability. */
OPPERF_OP(softplus) = {
    ACT_DESC(softplus),
    .name = "softplus",
    .summary = "softplus: y = log(1 + exp(beta x)) / beta, y = x where beta x > threshold",
    ACT_X(-5, 5),
    .n_params = 2,
    .params = {{.name = "beta", .type = OPF_P_FLOAT, .def = 1, .min = 1e-6, .max = 1000,
                .help = "sharpness (> 0)"},
               {.name = "threshold", .type = OPF_P_FLOAT, .def = 20, .min = -1000, .max = 1000,
                .help = "beta x above which y = x"}},
    .shapes = ACT_SHAPES({"small", "x=16x16 beta=2 threshold=3"},
                         {"small", "x=37x3 beta=0.5 threshold=1"}),
};

OPPERF_OP(softsign) = {
    ACT_DESC(softsign),
    .name = "softsign",
    .summary = "softsign: y = x / (1 + |x|)",
    ACT_X(-5, 5),
    .shapes = UM_SHAPES,
};

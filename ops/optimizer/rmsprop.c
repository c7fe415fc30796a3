/* rmsprop.c: adaptive-rate updates scaled by a running square of the gradient, in place:
 * rmsprop (MXNet rmsprop_update, Tieleman & Hinton), rmsprop_centered (MXNet
 * rmspropalex_update, Graves 2013: also tracks the mean gradient and a momentum delta) and
 * adagrad (MXNet's AdaGrad: the square accumulates without decay). One fused pass each. */
#include "optimizer/optim.h"

enum { P_GAMMA1 = OPT_P_NCOMMON, P_EPS, P_CLIPW, P_GAMMA2, P_RMS_N = P_GAMMA2 };

#define RMS_PARAMS                                                                             \
  {.name = "gamma1", .type = OPF_P_FLOAT, .def = 0.95, .min = 0, .max = 1,                     \
   .help = "decay rate of the running mean square n"},                                         \
      {.name = "epsilon", .type = OPF_P_FLOAT, .def = 1e-8, .min = 0, .max = 1,                \
       .help = "added to n under the square root"},                                            \
      {.name = "clip_weights", .type = OPF_P_FLOAT, .def = -1, .min = -1, .max = 1e6,          \
       .help = "clip the updated weight to [-c, c]; negative: no clipping"}

enum { RH_G1 = OPT_H_NCOMMON, RH_OG1, RH_EPS, RH_CW, RH_G2, RMS_NH };

/* The hyper-parameters of both RMSProp kernels (gamma2: centered only). */
static int rms_forward(opf_case *c, opt_k32 k32, opt_k64 k64) {
  const double *p = c->p;
  double h[RMS_NH];
  opt_hyper(c, h);
  h[RH_G1] = p[P_GAMMA1], h[RH_OG1] = 1 - p[P_GAMMA1], h[RH_EPS] = p[P_EPS];
  h[RH_CW] = opt_bound(p[P_CLIPW]);
  h[RH_G2] = c->op->n_params > P_GAMMA2 ? p[P_GAMMA2] : 0;
  return opt_stream(c, k32, k64, h, RMS_NH);
}

/* The running square n of both RMSProp variants (adagrad names it history). */
#define RMS_LOCALS                                                                             \
  OPT_LOCALS;                                                                                  \
  T *restrict ns = a[2];                                                                       \
  const T g1 = h[RH_G1], og1 = h[RH_OG1], eps = h[RH_EPS], cw = h[RH_CW]

/* Weight clipping costs a min and a max when it is on. */
static double rms_clipw_flops(const opf_case *c) { return c->p[P_CLIPW] >= 0 ? 2 : 0; }

/* ---- rmsprop (MXNet RMSPropUpdate):
 *   g = clip(rescale_grad * grad + wd w)
 *   n = (1 - gamma1) g^2 + gamma1 n
 *   w = clip_weights(w - lr g / sqrt(n + epsilon)) ---- */

OPT_KERNELS(rmsprop, {
  RMS_LOCALS;
  for (int64_t i = 0; i < n; i++) {
    const T G = OPT_GRAD_WD(i), ni = og1 * G * G + g1 * ns[i];
    ns[i] = ni;
    const T wi = w[i] - lr * G * OPT_RSQRT(ni + eps);
    w[i] = OPT_CLAMP(wi, cw);
  }
})

static int rmsprop_forward(opf_case *c) { return rms_forward(c, rmsprop_f32, rmsprop_f64); }

static void rmsprop_ref(double *v, const double *p) {
  double g = opt_grad_wd_ref(v, p);
  v[2] = (1 - p[P_GAMMA1]) * g * g + p[P_GAMMA1] * v[2];
  v[0] = opt_clip_ref(v[0] - p[OPT_P_LR] * (g / sqrt(v[2] + p[P_EPS])), p[P_CLIPW]);
}
static int rmsprop_reference(opf_case *c) { return opt_reference(c, rmsprop_ref); }

/* g: rescale, wd w, add (3); n: square, 2 multiplies, add (4); w: + eps, sqrt, divide, lr *,
 * subtract (5): 12 (+2 for each clipping that is on). */
static double rmsprop_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 12 + opt_clip_flops(c) + rms_clipw_flops(c));
}

OPPERF_OP(rmsprop) = {
    .abi = OPF_OP_ABI,
    .name = "rmsprop",
    .category = "optimizer",
    .summary = "RMSProp update in place (MXNet rmsprop_update): w -= lr g / sqrt(n + eps)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {OPT_IN_WEIGHT, OPT_IN_GRAD,
           OPT_IN_STATE("n", 0, 0.01, "running mean of g^2 (>= 0), updated in place")},
    .n_out = 2,
    .out = {"weight", "n"},
    .inplace = {1, 3},
    .n_params = P_RMS_N,
    .params = {OPT_PARAMS_COMMON(0.001, 0), RMS_PARAMS},
    .shapes = {OPT_SHAPES_HEAD,
               {"small", "weight=5x6 clip_weights=0.5 gamma1=0.5"},
               OPT_SHAPES_TAIL},
    .infer = opt_infer,
    .forward = rmsprop_forward,
    .reference = rmsprop_reference,
    .flops = rmsprop_flops,
    .bytes = opt_bytes,
};

/* ---- rmsprop_centered (MXNet RMSPropAlexUpdate):
 *   g = clip(rescale_grad * grad + wd w)
 *   n = (1 - gamma1) g^2 + gamma1 n;  gm = (1 - gamma1) g + gamma1 gm
 *   delta = gamma2 delta - lr g / sqrt(n - gm^2 + epsilon)
 *   w = clip_weights(w + delta)
 * n - gm^2 is a variance (>= 0) when the states are consistent: the inputs are drawn with
 * n >= 0.001 > gm^2, and the updates keep it so. ---- */

OPT_KERNELS(rmsprop_centered, {
  RMS_LOCALS;
  T *restrict gm = a[3], *restrict delta = a[4];
  const T g2 = h[RH_G2];
  for (int64_t i = 0; i < n; i++) {
    const T G = OPT_GRAD_WD(i), ni = og1 * G * G + g1 * ns[i], gi = og1 * G + g1 * gm[i];
    const T di = g2 * delta[i] - lr * G * OPT_RSQRT(ni - gi * gi + eps);
    ns[i] = ni, gm[i] = gi, delta[i] = di;
    const T wi = w[i] + di;
    w[i] = OPT_CLAMP(wi, cw);
  }
})

static int rmsprop_centered_forward(opf_case *c) {
  return rms_forward(c, rmsprop_centered_f32, rmsprop_centered_f64);
}

static void rmsprop_centered_ref(double *v, const double *p) {
  double g = opt_grad_wd_ref(v, p), g1 = p[P_GAMMA1];
  v[2] = (1 - g1) * g * g + g1 * v[2];
  v[3] = (1 - g1) * g + g1 * v[3];
  v[4] = p[P_GAMMA2] * v[4] - p[OPT_P_LR] * (g / sqrt(v[2] - v[3] * v[3] + p[P_EPS]));
  v[0] = opt_clip_ref(v[0] + v[4], p[P_CLIPW]);
}
static int rmsprop_centered_reference(opf_case *c) {
  return opt_reference(c, rmsprop_centered_ref);
}

/* g 3; n 4; gm: 2 multiplies, add (3); delta: gm^2, subtract, + eps, sqrt, divide, lr *,
 * gamma2 delta, subtract (8); w + delta (1): 19 (+2 for each clipping that is on). */
static double rmsprop_centered_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 19 + opt_clip_flops(c) + rms_clipw_flops(c));
}

OPPERF_OP(rmsprop_centered) = {
    .abi = OPF_OP_ABI,
    .name = "rmsprop_centered",
    .category = "optimizer",
    .summary = "centered RMSProp in place (MXNet rmspropalex_update): weight, n, g, delta",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 5,
    .in = {OPT_IN_WEIGHT, OPT_IN_GRAD,
           OPT_IN_STATE("n", 0.001, 0.01, "running mean of grad^2, updated in place"),
           OPT_IN_STATE("g", -0.03, 0.03,
                        "running mean of grad (g^2 < n), updated in place"),
           OPT_IN_STATE("delta", -0.001, 0.001, "momentum of the step, updated in place")},
    .n_out = 4,
    .out = {"weight", "n", "g", "delta"},
    .inplace = {1, 3, 4, 5},
    .n_params = P_RMS_N + 1,
    .params = {OPT_PARAMS_COMMON(0.001, 0), RMS_PARAMS,
               {.name = "gamma2", .type = OPF_P_FLOAT, .def = 0.9, .min = 0, .max = 1,
                .help = "decay rate of the momentum delta"}},
    .shapes = {OPT_SHAPES_HEAD,
               {"small", "weight=5x6 clip_weights=0.5 gamma2=0.5"},
               OPT_SHAPES_TAIL},
    .infer = opt_infer,
    .forward = rmsprop_centered_forward,
    .reference = rmsprop_centered_reference,
    .flops = rmsprop_centered_flops,
    .bytes = opt_bytes,
};

/* ---- adagrad (MXNet AdaGrad: the dense form of _sparse_adagrad_update, plus the Python
 * optimizer's weight decay):
 *   g = clip(rescale_grad * grad)
 *   history = history + g^2
 *   w = w - lr (g / sqrt(history + epsilon) + wd w) ---- */

enum { P_ADA_EPS = OPT_P_NCOMMON, P_ADA_N };

OPT_KERNELS(adagrad, {
  RMS_LOCALS;
  (void)g1, (void)og1, (void)cw;
  for (int64_t i = 0; i < n; i++) {
    const T G = OPT_GRAD(i), hi = ns[i] + G * G;
    ns[i] = hi;
    w[i] = w[i] - lr * (G * OPT_RSQRT(hi + eps) + wd * w[i]);
  }
})

static int adagrad_forward(opf_case *c) {
  double h[RMS_NH] = {[RH_EPS] = c->p[P_ADA_EPS]};
  opt_hyper(c, h);
  return opt_stream(c, adagrad_f32, adagrad_f64, h, RMS_NH);
}

static void adagrad_ref(double *v, const double *p) {
  double g = opt_grad_ref(v, p);
  v[2] = v[2] + g * g;
  v[0] = v[0] - p[OPT_P_LR] * (g / sqrt(v[2] + p[P_ADA_EPS]) + p[OPT_P_WD] * v[0]);
}
static int adagrad_reference(opf_case *c) { return opt_reference(c, adagrad_ref); }

/* g: rescale (1); history: square, add (2); w: + eps, sqrt, divide, wd w, add, lr *,
 * subtract (7): 10 (+2 clipping). */
static double adagrad_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 10 + opt_clip_flops(c));
}

OPPERF_OP(adagrad) = {
    .abi = OPF_OP_ABI,
    .name = "adagrad",
    .category = "optimizer",
    .summary = "AdaGrad update in place (MXNet adagrad_update): history += g^2",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {OPT_IN_WEIGHT, OPT_IN_GRAD,
           OPT_IN_STATE("history", 0, 0.01, "sum of g^2 so far (>= 0), updated in place")},
    .n_out = 2,
    .out = {"weight", "history"},
    .inplace = {1, 3},
    .n_params = P_ADA_N,
    .params = {OPT_PARAMS_COMMON(0.01, 0),
               {.name = "epsilon", .type = OPF_P_FLOAT, .def = 1e-7, .min = 0, .max = 1,
                .help = "added to history under the square root"}},
    .shapes = {OPT_SHAPES_HEAD, OPT_SHAPES_TAIL},
    .infer = opt_infer,
    .forward = adagrad_forward,
    .reference = adagrad_reference,
    .flops = adagrad_flops,
    .bytes = opt_bytes,
};

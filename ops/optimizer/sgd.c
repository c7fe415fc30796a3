/* sgd.c: plain and momentum SGD updates, in place: sgd (MXNet sgd_update), sgd_momentum
 * (sgd_mom_update) and nag (nag_mom_update, Nesterov momentum). Memory-bound streams over 3
 * to 5 arrays: one fused vectorised pass, one contiguous chunk per thread (optim.h). */
#include "optimizer/optim.h"

enum { P_MOMENTUM = OPT_P_NCOMMON };

/* ---- sgd: g = clip(rescale_grad * grad); w = (1 - lr wd) w - lr g (MXNet SGDKernel) ---- */

OPT_KERNELS(sgd, {
  OPT_LOCALS;
  const T decay = 1 - lr * wd;
  for (int64_t i = 0; i < n; i++) w[i] = decay * w[i] - lr * OPT_GRAD(i);
})

static int sgd_forward(opf_case *c) {
  double h[OPT_H_NCOMMON];
  opt_hyper(c, h);
  return opt_stream(c, sgd_f32, sgd_f64, h, OPT_H_NCOMMON);
}

static void sgd_ref(double *v, const double *p) {
  v[0] = (1 - p[OPT_P_LR] * p[OPT_P_WD]) * v[0] - p[OPT_P_LR] * opt_grad_ref(v, p);
}
static int sgd_reference(opf_case *c) { return opt_reference(c, sgd_ref); }

/* rescale, (1 - lr wd) w, lr g, subtract: 4 per element (+2 when clipping). */
static double sgd_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 4 + opt_clip_flops(c));
}

OPPERF_OP(sgd) = {
    .abi = OPF_OP_ABI,
    .name = "sgd",
    .category = "optimizer",
    .summary = "SGD update in place (MXNet sgd_update): w = (1 - lr wd) w - lr clip(rescale g)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {OPT_IN_WEIGHT, OPT_IN_GRAD},
    .n_out = 1,
    .out = {"weight"},
    .inplace = {1},
    .n_params = OPT_P_NCOMMON,
    .params = {OPT_PARAMS_COMMON(0.01, 0)},
    .shapes = {OPT_SHAPES_HEAD, OPT_SHAPES_TAIL, {"huge", "weight=46341x46341"}},
    .infer = opt_infer,
    .forward = sgd_forward,
    .reference = sgd_reference,
    .flops = sgd_flops,
    .bytes = opt_bytes,
};

/* ---- sgd_momentum (MXNet SGDMomKernel):
 *   g = clip(rescale_grad * grad)
 *   mom = momentum mom - lr wd w - lr g
 *   w = w + mom ---- */

enum { MOM_MU = OPT_H_NCOMMON, MOM_NH };

OPT_KERNELS(sgd_mom, {
  OPT_LOCALS;
  T *restrict mom = a[2];
  const T mu = h[MOM_MU], lrwd = lr * wd;
  for (int64_t i = 0; i < n; i++) {
    const T m = mu * mom[i] - lrwd * w[i] - lr * OPT_GRAD(i);
    mom[i] = m;
    w[i] = w[i] + m;
  }
})

/* Both momentum kernels take the common hyper-parameters and the momentum. */
static int mom_forward(opf_case *c, opt_k32 k32, opt_k64 k64) {
  double h[MOM_NH];
  opt_hyper(c, h);
  h[MOM_MU] = c->p[P_MOMENTUM];
  return opt_stream(c, k32, k64, h, MOM_NH);
}

static int sgd_mom_forward(opf_case *c) { return mom_forward(c, sgd_mom_f32, sgd_mom_f64); }

static void sgd_mom_ref(double *v, const double *p) {
  v[2] = p[P_MOMENTUM] * v[2] - p[OPT_P_LR] * p[OPT_P_WD] * v[0] - p[OPT_P_LR] * opt_grad_ref(v, p);
  v[0] = v[0] + v[2];
}
static int sgd_mom_reference(opf_case *c) { return opt_reference(c, sgd_mom_ref); }

/* rescale, momentum mom, (lr wd) w, lr g, two subtracts, w + mom: 7 (+2 clipping). */
static double sgd_mom_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 7 + opt_clip_flops(c));
}

#define MOM_PARAM_MOMENTUM                                                                     \
  {.name = "momentum", .type = OPF_P_FLOAT, .def = 0.9, .min = 0, .max = 1,                    \
   .help = "decay rate of the momentum"}
#define MOM_IN_MOM OPT_IN_STATE("mom", -0.01, 0.01, "momentum, updated in place")

OPPERF_OP(sgd_momentum) = {
    .abi = OPF_OP_ABI,
    .name = "sgd_momentum",
    .category = "optimizer",
    .summary = "momentum SGD in place (MXNet sgd_mom_update): mom = mu mom - lr (g + wd w)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {OPT_IN_WEIGHT, OPT_IN_GRAD, MOM_IN_MOM},
    .n_out = 2,
    .out = {"weight", "mom"},
    .inplace = {1, 3},
    .n_params = OPT_P_NCOMMON + 1,
    .params = {OPT_PARAMS_COMMON(0.01, 0), MOM_PARAM_MOMENTUM},
    .shapes = {OPT_SHAPES_HEAD,
               {"small", "weight=4x4 momentum=0"},
               OPT_SHAPES_TAIL},
    .infer = opt_infer,
    .forward = sgd_mom_forward,
    .reference = sgd_mom_reference,
    .flops = sgd_mom_flops,
    .bytes = opt_bytes,
};

/* ---- nag (MXNet NAGMomKernel, rewritten without its temporaries):
 *   g = clip(rescale_grad * grad) + wd w
 *   mom = momentum mom - lr g
 *   w = w + momentum mom - lr g
 * (MXNet: mom' = momentum mom; w' = w - mom' + (momentum + 1) (mom' - lr g); mom = mom' - lr g,
 * which is the same w'.) ---- */

OPT_KERNELS(nag, {
  OPT_LOCALS;
  T *restrict mom = a[2];
  const T mu = h[MOM_MU];
  for (int64_t i = 0; i < n; i++) {
    const T G = OPT_GRAD(i) + wd * w[i], step = lr * G, m = mu * mom[i] - step;
    mom[i] = m;
    w[i] = w[i] + mu * m - step;
  }
})

static int nag_forward(opf_case *c) { return mom_forward(c, nag_f32, nag_f64); }

static void nag_ref(double *v, const double *p) {
  double mu = p[P_MOMENTUM], lr = p[OPT_P_LR], w = v[0];
  double g = opt_grad_ref(v, p) + p[OPT_P_WD] * w;
  double m1 = mu * v[2]; /* MXNet's sequence, literally */
  v[0] = w - m1 + (mu + 1) * (m1 - lr * g);
  v[2] = m1 - lr * g;
}
static int nag_reference(opf_case *c) { return opt_reference(c, nag_ref); }

/* rescale, wd w, add, lr g, momentum mom, subtract, momentum mom, add, subtract: 9 (+2). */
static double nag_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 9 + opt_clip_flops(c));
}

OPPERF_OP(nag) = {
    .abi = OPF_OP_ABI,
    .name = "nag",
    .category = "optimizer",
    .summary = "Nesterov momentum SGD in place (MXNet nag_mom_update)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {OPT_IN_WEIGHT, OPT_IN_GRAD, MOM_IN_MOM},
    .n_out = 2,
    .out = {"weight", "mom"},
    .inplace = {1, 3},
    .n_params = OPT_P_NCOMMON + 1,
    .params = {OPT_PARAMS_COMMON(0.01, 0), MOM_PARAM_MOMENTUM},
    .shapes = {OPT_SHAPES_HEAD, OPT_SHAPES_TAIL},
    .infer = opt_infer,
    .forward = nag_forward,
    .reference = nag_reference,
    .flops = nag_flops,
    .bytes = opt_bytes,
};

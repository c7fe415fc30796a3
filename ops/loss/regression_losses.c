/* regression_losses.c: mse_loss (pred - target)^2, l1_loss |pred - target|, huber_loss
 * (quadratic within delta, linear beyond) and smooth_l1_loss (PyTorch: huber with delta = beta,
 * divided by beta; l1 when beta = 0), each reduced by mean, sum or none, with gradients for pred
 * and target (d target = -d pred). Pointwise kernels of loss_common.h: one streaming pass each way. */
#include "loss/loss_common.h"

/* mse: fwd subtract and square (2 per element, + the reduction's add), bwd subtract, scale by
 * 2 and negate for d target (3). */
static double mse_ref(double a, double b, ls_par p) {
  (void)p;
  return (a - b) * (a - b);
}
LS_PW_DEFINE(mse, (a - b) * (a - b), LS_C(2) * (a - b), LS_C(2) * (b - a), mse_ref, 2, 3, LS_PAR_CHEAP)

/* sign(a - b), 0 on ties (as PyTorch's l1 gradient) */
#define L1_SIGN(d) (LS_SEL((d) > 0, LS_C(1), LS_C(0)) - LS_SEL((d) < 0, LS_C(1), LS_C(0)))
static double l1_ref(double a, double b, ls_par p) {
  (void)p;
  return fabs(a - b);
}
LS_PW_DEFINE(l1, LS_ABS(a - b), L1_SIGN(a - b), -L1_SIGN(a - b), l1_ref, 2, 3, LS_PAR_CHEAP)

/* huber with threshold k0 and scale k1: q = min(|d|, k0), loss = k1 q (|d| - q / 2), which is
 * k1 d^2 / 2 within k0 and k1 k0 (|d| - k0 / 2) beyond; gradient k1 clamp(d, -k0, k0). */
#define HUBER_F                                                                               \
  ({                                                                                          \
    LS_T d_ = LS_ABS(a - b), q_ = LS_SEL(d_ < k0, d_, k0);                                    \
    k1 * q_ * (d_ - LS_C(0.5) * q_);                                                          \
  })
#define HUBER_D                                                                               \
  ({                                                                                          \
    LS_T d_ = a - b;                                                                          \
    k1 * LS_SEL(d_ > k0, k0, LS_SEL(d_ < -k0, -k0, d_));                                      \
  })
static double huber_ref(double a, double b, ls_par p) {
  const double d = fabs(a - b), k = p.k[0];
  return p.k[1] * (d < k ? 0.5 * d * d : k * (d - 0.5 * k));
}
LS_PW_DEFINE(huber, HUBER_F, HUBER_D, -(HUBER_D), huber_ref, 5, 4, LS_PAR_CHEAP)

enum { P_RED, P_K }; /* params of huber_loss and smooth_l1_loss: reduction, delta / beta */

static const ls_pw *mse_loss_sel(const opf_case *c, ls_par *p) {
  (void)c;
  *p = (ls_par){{0, 0, 0}};
  return &mse_pw;
}
static const ls_pw *l1_loss_sel(const opf_case *c, ls_par *p) {
  (void)c;
  *p = (ls_par){{0, 0, 0}};
  return &l1_pw;
}
static const ls_pw *huber_loss_sel(const opf_case *c, ls_par *p) {
  *p = (ls_par){{c->p[P_K], 1, 0}};
  return &huber_pw;
}
/* smooth_l1(d; beta) = huber(d; beta) / beta, and |d| for beta = 0 (PyTorch) */
static const ls_pw *smooth_l1_loss_sel(const opf_case *c, ls_par *p) {
  const double beta = c->p[P_K];
  if (beta == 0) return l1_loss_sel(c, p);
  *p = (ls_par){{beta, 1 / beta, 0}};
  return &huber_pw;
}
LS_PW_HOOKS(mse_loss, P_RED)
LS_PW_HOOKS(l1_loss, P_RED)
LS_PW_HOOKS(huber_loss, P_RED)
LS_PW_HOOKS(smooth_l1_loss, P_RED)

static int mse_loss_infer(opf_case *c) { return ls_pw_infer(c, (int)c->p[P_RED]); }
static int l1_loss_infer(opf_case *c) { return ls_pw_infer(c, (int)c->p[P_RED]); }
static int smooth_l1_loss_infer(opf_case *c) { return ls_pw_infer(c, (int)c->p[P_RED]); }
static int huber_loss_infer(opf_case *c) {
  if (!(c->p[P_K] > 0))
    return opf_case_error(c, OPF_EINVAL, "huber_loss: delta must be > 0, not %g", c->p[P_K]);
  return ls_pw_infer(c, (int)c->p[P_RED]);
}

#define REG_INPUTS                                                                            \
  .n_in = 2,                                                                                  \
  .in = {{.name = "pred", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -2, .hi = 2},     \
         {.name = "target", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -2, .hi = 2,    \
          .help = "same shape as pred (derived from it when omitted)"}},                      \
  .n_out = 1, .out = {"loss"}, .dtypes = OPF_DT_FLOAT, .category = "nn.loss", .abi = OPF_OP_ABI

/* Shape sets of the three: the catalogue's regression shapes, tiny entries for every reduction
 * with the variant params P1..P4 (thresholds below, inside and above the data range), and
 * odd sizes that hit the threaded and vector-remainder paths. */
#define REG_SHAPES(P1, P2, P3, P4)                                                            \
  {"standard", "pred=1024x1024"}, {"skewed", "pred=1024x10"}, {"skewed", "pred=10x100000"},   \
      {"small", "pred=16x16"}, {"small", "pred=16x16 reduction=sum " P1},                     \
      {"small", "pred=16x16 reduction=none " P2}, {"small", "pred=1x64 " P3},                 \
      {"small", "pred=37x3 reduction=sum " P4}, {"small", "pred=()"},                         \
      {"test", "pred=301x517 " P1}, {"test", "pred=301x517 reduction=none"},                  \
      {"test", "pred=100003 reduction=sum " P3}, {"large", "pred=8192x8192"}

OPPERF_OP(mse_loss) = {
    REG_INPUTS,
    .name = "mse_loss",
    .summary = "mean squared error (L2 loss): reduce((pred - target)^2)",
    .n_params = 1,
    .params = {LS_REDUCTION},
    .shapes = {REG_SHAPES("", "", "", "")},
    .infer = mse_loss_infer,
    LS_PW_OPS(mse_loss),
};

OPPERF_OP(l1_loss) = {
    REG_INPUTS,
    .name = "l1_loss",
    .summary = "mean absolute error (L1 loss): reduce(|pred - target|)",
    .n_params = 1,
    .params = {LS_REDUCTION},
    .shapes = {REG_SHAPES("", "", "", "")},
    .infer = l1_loss_infer,
    LS_PW_OPS(l1_loss),
};

OPPERF_OP(smooth_l1_loss) = {
    REG_INPUTS,
    .name = "smooth_l1_loss",
    .summary = "smooth L1 (PyTorch): 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta",
    .n_params = 2,
    .params = {LS_REDUCTION,
               {.name = "beta", .type = OPF_P_FLOAT, .def = 1, .min = 0, .max = 1e30,
                .help = "width of the quadratic zone (0: plain L1)"}},
    .shapes = {REG_SHAPES("beta=0.5", "beta=2", "beta=0", "beta=0.25")},
    .infer = smooth_l1_loss_infer,
    LS_PW_OPS(smooth_l1_loss),
};

OPPERF_OP(huber_loss) = {
    REG_INPUTS,
    .name = "huber_loss",
    .summary = "Huber loss: 0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta)",
    .n_params = 2,
    .params = {LS_REDUCTION,
               {.name = "delta", .type = OPF_P_FLOAT, .def = 1, .min = 0, .max = 1e30,
                .help = "threshold between the quadratic and linear zones (> 0)"}},
    .shapes = {REG_SHAPES("delta=0.5", "delta=2", "delta=0.1", "delta=3")},
    .infer = huber_loss_infer,
    LS_PW_OPS(huber_loss),
};

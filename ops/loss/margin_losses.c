/* margin_losses.c: losses of a score f against labels y in {-1, +1}, pointwise and reduced
 * by mean, sum or none: hinge_loss max(0, margin - y f), squared_hinge_loss max(0, margin -
 * y f)^2 and logistic_loss log(1 + exp(-y f)) (PyTorch's soft_margin_loss). The labels are
 * categorical signs: gradients for pred only (as PyTorch, which has none for the target). */
#include "loss/loss_common.h"

/* a = pred f, b = label y, k0 = margin. */
#define HINGE_Z (k0 - b * a)
static double hinge_ref(double f, double y, ls_par p) { return fmax(p.k[0] - y * f, 0); }
static double sq_hinge_ref(double f, double y, ls_par p) {
  const double z = fmax(p.k[0] - y * f, 0);
  return z * z;
}
static double logistic_ref(double f, double y, ls_par p) {
  (void)p;
  const double z = -y * f; /* softplus(z), stable for either sign */
  return fmax(z, 0) + log1p(exp(-fabs(z)));
}
LS_PW_DEFINE(hinge, LS_MAX(HINGE_Z, LS_C(0)), LS_SEL(HINGE_Z > 0, -b, LS_C(0)), LS_C(0),
             hinge_ref, 3, 3, LS_PAR_CHEAP)
LS_PW_DEFINE(sq_hinge, ({ LS_T z_ = LS_MAX(HINGE_Z, LS_C(0)); z_ * z_; }),
             -2 * b * LS_MAX(HINGE_Z, LS_C(0)), LS_C(0), sq_hinge_ref, 4, 4, LS_PAR_CHEAP)
LS_PW_DEFINE(logistic, LS_SOFTPLUS(-b * a), -b * LS_SIGMOID(-b * a), LS_C(0), logistic_ref, 7,
             7, LS_PAR_MATH)

enum { P_RED, P_MARGIN };

static const ls_pw *hinge_loss_sel(const opf_case *c, ls_par *p) {
  *p = (ls_par){{c->p[P_MARGIN], 0, 0}};
  return &hinge_pw;
}
static const ls_pw *squared_hinge_loss_sel(const opf_case *c, ls_par *p) {
  *p = (ls_par){{c->p[P_MARGIN], 0, 0}};
  return &sq_hinge_pw;
}
static const ls_pw *logistic_loss_sel(const opf_case *c, ls_par *p) {
  (void)c;
  *p = (ls_par){{0, 0, 0}};
  return &logistic_pw;
}
LS_PW_HOOKS(hinge_loss, P_RED)
LS_PW_HOOKS(squared_hinge_loss, P_RED)
LS_PW_HOOKS(logistic_loss, P_RED)

static int margin_infer(opf_case *c) { return ls_pw_infer(c, (int)c->p[P_RED]); }

/* Scores in [-2, 2): with margin 1 about half the hinge terms are active. */
#define MARGIN_COMMON                                                                         \
  .n_in = 2,                                                                                  \
  .in = {{.name = "pred", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -2, .hi = 2,      \
          .help = "scores"},                                                                  \
         {.name = "labels", .dtype = OPF_DT_CASE, .fill = ls_fill_sign,                       \
          .help = "-1 or +1, same shape as pred (derived when omitted)"}},                    \
  .n_out = 1, .out = {"loss"}, .dtypes = OPF_DT_FLOAT, .category = "nn.loss",                 \
  .abi = OPF_OP_ABI, .infer = margin_infer
#define MARGIN_PARAM                                                                          \
  {.name = "margin", .type = OPF_P_FLOAT, .def = 1, .min = -1e30, .max = 1e30,                \
   .help = "the loss is zero where y f >= margin"}
#define MARGIN_SHAPES(x)                                                                      \
  {"standard", "pred=32x1000"}, {"standard", "pred=1024x1024"}, {"skewed", "pred=1024x10"},   \
      {"skewed", "pred=10x100000"}, {"small", "pred=16x10"}, {"small", "pred=4x7 reduction=sum"}, \
      {"small", "pred=5x3 reduction=none"}, {"small", "pred=1x64 " x},                        \
      {"small", "pred=37x3 reduction=none " x}, {"small", "pred=()"},                         \
      {"test", "pred=301x517"}, {"test", "pred=301x517 reduction=none " x},                   \
      {"test", "pred=100003 reduction=sum"}, {"large", "pred=8192x8192"}

OPPERF_OP(hinge_loss) = {
    MARGIN_COMMON,
    .name = "hinge_loss",
    .summary = "hinge loss: reduce(max(0, margin - y f)), labels y in {-1, +1}",
    .n_params = 2,
    .params = {LS_REDUCTION, MARGIN_PARAM},
    .shapes = {MARGIN_SHAPES("margin=0.5")},
    LS_PW_OPS(hinge_loss),
};

OPPERF_OP(squared_hinge_loss) = {
    MARGIN_COMMON,
    .name = "squared_hinge_loss",
    .summary = "squared hinge loss: reduce(max(0, margin - y f)^2), labels y in {-1, +1}",
    .n_params = 2,
    .params = {LS_REDUCTION, MARGIN_PARAM},
    .shapes = {MARGIN_SHAPES("margin=1.5")},
    LS_PW_OPS(squared_hinge_loss),
};

OPPERF_OP(logistic_loss) = {
    MARGIN_COMMON,
    .name = "logistic_loss",
    .summary = "logistic loss (soft margin): reduce(log(1 + exp(-y f))), labels y in {-1, +1}",
    .n_params = 1,
    .params = {LS_REDUCTION},
    .shapes = {MARGIN_SHAPES("")},
    LS_PW_OPS(logistic_loss),
};

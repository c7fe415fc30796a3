/* prob_losses.c: losses on probabilities and rates, pointwise and reduced by mean, sum or none:
 * sigmoid_binary_cross_entropy (from logits, as softplus(x) - x y: no overflow, accurate
 * tails), kl_div (PyTorch: log-probability input, probability or log-probability target,
 * batchmean) and poisson_nll_loss (log or linear rate, optional Stirling term). Gradients for
 * both inputs, as PyTorch computes them (targets included). */
#include "loss/loss_common.h"

/* ---- sigmoid_binary_cross_entropy: a = logits x, b = target y in [0, 1] ----
 * loss = softplus(x) - x y; d x = sigmoid(x) - y; d y = -x. */
static double bce_ref(double x, double y, ls_par p) {
  (void)p;
  return fmax(x, 0) - x * y + log1p(exp(-fabs(x)));
}
LS_PW_DEFINE(bce, LS_SOFTPLUS(a) - a * b, LS_SIGMOID(a) - b, -a, bce_ref, 7, 6, LS_PAR_MATH)

/* ---- kl_div: a = x (log-probabilities), b = target ----
 * probability target: loss = xlogy(t, t) - t x (0 where t = 0, as PyTorch); d x = -t,
 * d t = log t + 1 - x (-x where t = 0: the xlogy term's derivative is taken as 0 there).
 * log target: loss = exp(t) (t - x); d x = -exp(t), d t = exp(t) (t - x + 1). */
#define KL_XLOGY(t) LS_SEL((t) == 0, LS_C(0), (t) * LS_LOG(t))
static double kl_ref(double x, double t, ls_par p) {
  (void)p;
  return (t == 0 ? 0 : t * log(t)) - t * x;
}
LS_PW_DEFINE(kl, KL_XLOGY(b) - b * a, -b, LS_SEL(b == 0, LS_C(0), LS_LOG(b) + 1) - a, kl_ref, 4,
             4, LS_PAR_MATH)
static double kl_log_ref(double x, double t, ls_par p) {
  (void)p;
  return exp(t) * (t - x);
}
LS_PW_DEFINE(kl_log, LS_EXP(b) * (b - a), -LS_EXP(b), LS_EXP(b) * (b - a + 1), kl_log_ref, 3, 5,
             LS_PAR_MATH)

/* ---- poisson_nll_loss: a = pred (log-rate or rate), b = target count; k0 = eps ----
 * log input: loss = exp(x) - t x; d x = exp(x) - t, d t = -x.
 * rate input: loss = x - t log(x + eps); d x = 1 - t / (x + eps), d t = -log(x + eps).
 * full adds Stirling's approximation of log(t!) where t > 1: t log t - t + log(2 pi t) / 2,
 * d t: log t + 1 / (2 t). The masked lanes compute log of t <= 1 and are discarded. */
#define PNL_STIRLING(t)                                                                       \
  LS_SEL((t) > 1, (t) * LS_LOG(t) - (t) + LS_C(0.5) * LS_LOG(LS_C(6.283185307179586) * (t)),  \
         LS_C(0))
#define PNL_DSTIRLING(t) LS_SEL((t) > 1, LS_LOG(t) + LS_C(0.5) / (t), LS_C(0))
static double pnl_stirling_ref(double t) {
  return t > 1 ? t * log(t) - t + 0.5 * log(2 * M_PI * t) : 0;
}
static double pnl_log_ref(double x, double t, ls_par p) {
  (void)p;
  return exp(x) - t * x;
}
static double pnl_lin_ref(double x, double t, ls_par p) { return x - t * log(x + p.k[0]); }
static double pnl_log_full_ref(double x, double t, ls_par p) {
  return pnl_log_ref(x, t, p) + pnl_stirling_ref(t);
}
static double pnl_lin_full_ref(double x, double t, ls_par p) {
  return pnl_lin_ref(x, t, p) + pnl_stirling_ref(t);
}
LS_PW_DEFINE(pnl_log, LS_EXP(a) - b * a, LS_EXP(a) - b, -a, pnl_log_ref, 3, 3, LS_PAR_MATH)
LS_PW_DEFINE(pnl_lin, a - b * LS_LOG(a + k0), 1 - b / (a + k0), -LS_LOG(a + k0), pnl_lin_ref, 4,
             5, LS_PAR_MATH)
LS_PW_DEFINE(pnl_log_full, LS_EXP(a) - b * a + PNL_STIRLING(b), LS_EXP(a) - b,
             PNL_DSTIRLING(b) - a, pnl_log_full_ref, 11, 7, LS_PAR_MATH)
LS_PW_DEFINE(pnl_lin_full, a - b * LS_LOG(a + k0) + PNL_STIRLING(b), 1 - b / (a + k0),
             PNL_DSTIRLING(b) - LS_LOG(a + k0), pnl_lin_full_ref, 12, 9, LS_PAR_MATH)

/* ---- operators ---- */
enum { P_RED };                            /* every operator here: reduction first */
enum { KL_LOG_TARGET = 1 };                /* kl_div */
enum { PNL_LOG_INPUT = 1, PNL_FULL, PNL_EPS }; /* poisson_nll_loss */

static const ls_pw *sigmoid_binary_cross_entropy_sel(const opf_case *c, ls_par *p) {
  (void)c;
  *p = (ls_par){{0, 0, 0}};
  return &bce_pw;
}
static const ls_pw *kl_div_sel(const opf_case *c, ls_par *p) {
  *p = (ls_par){{0, 0, 0}};
  return c->p[KL_LOG_TARGET] ? &kl_log_pw : &kl_pw;
}
static const ls_pw *poisson_nll_loss_sel(const opf_case *c, ls_par *p) {
  *p = (ls_par){{c->p[PNL_EPS], 0, 0}};
  static const ls_pw *const k[2][2] = {{&pnl_lin_pw, &pnl_lin_full_pw},
                                       {&pnl_log_pw, &pnl_log_full_pw}};
  return k[c->p[PNL_LOG_INPUT] != 0][c->p[PNL_FULL] != 0];
}
LS_PW_HOOKS(sigmoid_binary_cross_entropy, P_RED)
LS_PW_HOOKS(kl_div, P_RED)
LS_PW_HOOKS(poisson_nll_loss, P_RED)

static int prob_infer(opf_case *c) { return ls_pw_infer(c, (int)c->p[P_RED]); }

#define PROB_COMMON .n_out = 1, .out = {"loss"}, .dtypes = OPF_DT_FLOAT, .category = "nn.loss", \
                    .abi = OPF_OP_ABI, .infer = prob_infer, .n_in = 2

OPPERF_OP(sigmoid_binary_cross_entropy) = {
    PROB_COMMON,
    .name = "sigmoid_binary_cross_entropy",
    .summary = "binary cross entropy from logits: reduce(softplus(x) - x y), y in [0, 1]",
    .in = {{.name = "logits", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -6, .hi = 6},
           {.name = "target", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0, .hi = 1,
            .help = "probabilities in [0, 1], same shape as logits (derived when omitted)"}},
    .n_params = 1,
    .params = {LS_REDUCTION},
    .shapes = {{"standard", "logits=32x1000"},
               {"standard", "logits=1024x1024"},
               {"skewed", "logits=1024x10"},
               {"skewed", "logits=10x100000"},
               {"small", "logits=16x10"},
               {"small", "logits=4x7 reduction=sum"},
               {"small", "logits=5x3 reduction=none"},
               {"small", "logits=1x64"},
               {"small", "logits=37x3 reduction=none"},
               {"test", "logits=301x517"},
               {"test", "logits=301x517 reduction=none"},
               {"test", "logits=100003 reduction=sum"},
               {"large", "logits=8192x8192"}},
    LS_PW_OPS(sigmoid_binary_cross_entropy),
};

/* KL divergence test inputs: log-probabilities in [-5, 0) and targets in [0.02, 1) (away
 * from 0, where d target has its log singularity). */
OPPERF_OP(kl_div) = {
    PROB_COMMON,
    .name = "kl_div",
    .summary = "KL divergence (PyTorch kl_div): reduce(t (log t - x)), x log-probabilities",
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -5, .hi = 0,
            .help = "log-probabilities"},
           {.name = "target", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0.02, .hi = 1,
            .help = "probabilities (log-probabilities with log_target), same shape as x"}},
    .n_params = 2,
    .params = {{.name = "reduction", .type = OPF_P_ENUM, .def = LS_MEAN,
                .choices = "mean|sum|none|batchmean",
                .help = "mean (over every element), sum, none, or batchmean (sum / size of dim 0, "
                        "the KL divergence per sample)"},
               {.name = "log_target", .type = OPF_P_BOOL, .def = 0,
                .help = "target holds log-probabilities"}},
    .shapes = {{"standard", "x=32x1000 reduction=batchmean"},
               {"standard", "x=1024x1024"},
               {"skewed", "x=1024x10 reduction=batchmean"},
               {"skewed", "x=10x100000 reduction=batchmean"},
               {"small", "x=16x10"},
               {"small", "x=4x7 reduction=sum"},
               {"small", "x=5x3 reduction=none"},
               {"small", "x=6x9 reduction=batchmean"},
               {"small", "x=1x64 log_target=1"},
               {"small", "x=37x3 reduction=none log_target=1"},
               {"small", "x=() reduction=sum"},
               {"test", "x=301x517 reduction=batchmean"},
               {"test", "x=301x517 reduction=none"},
               {"test", "x=100003 reduction=sum log_target=1"},
               {"large", "x=8192x8192 reduction=batchmean"}},
    LS_PW_OPS(kl_div),
};

/* Rates in [0.05, 2.5) are valid inputs for both log_input modes; counts in [0, 4) cross the
 * t > 1 threshold of the Stirling term. */
OPPERF_OP(poisson_nll_loss) = {
    PROB_COMMON,
    .name = "poisson_nll_loss",
    .summary = "Poisson negative log-likelihood: reduce(exp(x) - t x) (log_input) or x - t log(x + eps)",
    .in = {{.name = "pred", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0.05, .hi = 2.5,
            .help = "log-rates (log_input) or rates (> 0)"},
           {.name = "target", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0, .hi = 4,
            .help = "counts (>= 0), same shape as pred"}},
    .n_params = 4,
    .params = {LS_REDUCTION,
               {.name = "log_input", .type = OPF_P_BOOL, .def = 1,
                .help = "pred is a log-rate (else a rate)"},
               {.name = "full", .type = OPF_P_BOOL, .def = 0,
                .help = "add Stirling's approximation of log(t!) where t > 1"},
               {.name = "eps", .type = OPF_P_FLOAT, .def = 1e-8, .min = 0, .max = 1,
                .help = "added to the rate before its log (log_input=0)"}},
    .shapes = {{"standard", "pred=1024x1024"},
               {"standard", "pred=1024x1024 log_input=0"},
               {"skewed", "pred=1024x10"},
               {"skewed", "pred=10x100000"},
               {"small", "pred=16x16"},
               {"small", "pred=16x16 reduction=sum log_input=0"},
               {"small", "pred=16x16 reduction=none full=1"},
               {"small", "pred=1x64 log_input=0 full=1"},
               {"small", "pred=37x3 reduction=sum log_input=0 eps=0.1"},
               {"small", "pred=()"},
               {"test", "pred=301x517"},
               {"test", "pred=301x517 reduction=none log_input=0 full=1"},
               {"test", "pred=100003 reduction=sum full=1"},
               {"large", "pred=8192x8192"}},
    LS_PW_OPS(poisson_nll_loss),
};

/* ftrl.c: FTRL-Proximal update in place (MXNet ftrl_update, McMahan et al. 2013): the weight
 * is recomputed from the accumulated z and n, with L1 (lamda1) shrinking small weights to
 * exactly 0. One fused pass over weight, grad, z and n. */
#include "optimizer/optim.h"

enum { P_LAMDA1 = OPT_P_NCOMMON, P_BETA, P_FTRL_N };
/* sign(z) * l1 for z != 0, a bit operation (z = 0 gives a weight of 0 either way). */
#define FTRL_COPYSIGN(a, b)                                                                    \
  _Generic((a), float: __builtin_copysignf, double: __builtin_copysign)(a, b)

enum { FH_L1 = OPT_H_NCOMMON, FH_BETA, FTRL_NH };

/* MXNet FtrlUpdateKernel:
 *   g = clip(rescale_grad * grad)
 *   z = z + g - (sqrt(n + g^2) - sqrt(n)) w / lr
 *   n = n + g^2
 *   w = (sign(z) lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)
 * The new n's square root serves both the z and the w formulas, so two roots per element;
 * the final select is a multiply by the 0/1 comparison, as MXNet writes it (a ?: with a
 * constant arm can leave a branch that stops vectorisation). */
OPT_KERNELS(ftrl, {
  OPT_LOCALS;
  T *restrict z = a[2], *restrict ns = a[3];
  const T inv_lr = 1 / lr, l1 = h[FH_L1], beta = h[FH_BETA];
  for (int64_t i = 0; i < n; i++) {
    const T G = OPT_GRAD(i), n0 = ns[i], n1 = n0 + G * G, s1 = OPT_SQRT(n1);
    const T zi = z[i] + G - (s1 - OPT_SQRT(n0)) * w[i] * inv_lr;
    z[i] = zi, ns[i] = n1;
    const T keep = (T)((zi > l1) | (zi < -l1));
    w[i] = (FTRL_COPYSIGN(l1, zi) - zi) / ((beta + s1) * inv_lr + wd) * keep;
  }
})

static int ftrl_forward(opf_case *c) {
  double h[FTRL_NH] = {[FH_L1] = c->p[P_LAMDA1], [FH_BETA] = c->p[P_BETA]};
  opt_hyper(c, h);
  return opt_stream(c, ftrl_f32, ftrl_f64, h, FTRL_NH);
}

static void ftrl_ref(double *v, const double *p) {
  double lr = p[OPT_P_LR], g = opt_grad_ref(v, p);
  v[2] += g - (sqrt(v[3] + g * g) - sqrt(v[3])) * v[0] / lr;
  v[3] += g * g;
  double z = v[2], sign = z > 0 ? 1 : z < 0 ? -1 : 0;
  v[0] = (sign * p[P_LAMDA1] - z) / ((p[P_BETA] + sqrt(v[3])) / lr + p[OPT_P_WD]) *
         (fabs(z) > p[P_LAMDA1]);
}
static int ftrl_reference(opf_case *c) { return opt_reference(c, ftrl_ref); }

static int ftrl_infer(opf_case *c) {
  if (!(c->p[OPT_P_LR] > 0))
    return opf_case_error(c, OPF_EINVAL, "ftrl divides by lr: lr must be positive, not %g",
                          c->p[OPT_P_LR]);
  return opt_infer(c);
}

/* g: rescale (1); g^2, n + g^2, two square roots (4); z: subtract, * w, / lr, g -, z + (5);
 * w: sign, * lamda1, - z, beta +, / lr, + wd, divide, |z|, compare, select (10): 20 per
 * element (+2 clipping). */
static double ftrl_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 20 + opt_clip_flops(c));
}

OPPERF_OP(ftrl) = {
    .abi = OPF_OP_ABI,
    .name = "ftrl",
    .category = "optimizer",
    .summary = "FTRL-Proximal update in place (MXNet ftrl_update): weight, z, n",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 4,
    .in = {OPT_IN_WEIGHT, OPT_IN_GRAD,
           OPT_IN_STATE("z", -1, 1, "accumulated adjusted gradient, updated in place"),
           OPT_IN_STATE("n", 0, 1, "accumulated g^2 (>= 0), updated in place")},
    .n_out = 3,
    .out = {"weight", "z", "n"},
    .inplace = {1, 3, 4},
    .n_params = P_FTRL_N,
    .params = {OPT_PARAMS_COMMON(0.1, 0),
               {.name = "lamda1", .type = OPF_P_FLOAT, .def = 0.01, .min = 0, .max = 1e6,
                .help = "L1 regularisation: |z| <= lamda1 gives a weight of exactly 0"},
               {.name = "beta", .type = OPF_P_FLOAT, .def = 1, .min = 0, .max = 1e6,
                .help = "per-coordinate learning-rate beta"}},
    .shapes = {OPT_SHAPES_HEAD,
               {"small", "weight=8x8 lamda1=0.5 wd=0.1"},
               OPT_SHAPES_TAIL},
    .infer = ftrl_infer,
    .forward = ftrl_forward,
    .reference = ftrl_reference,
    .flops = ftrl_flops,
    .bytes = opt_bytes,
};

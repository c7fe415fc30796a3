/* adam.c: Adam-family updates, in place: adam (MXNet adam_update), adamw (MXNet contrib
 * adamw_update, decoupled weight decay) and lamb (lamb_update_phase1 + phase2 fused, with the
 * layer-wise trust ratio ||w|| / ||d||). adam and adamw are one fused pass over 4 arrays; lamb
 * needs both norms before it can update, so it is two threaded passes (see lamb_forward). */
#include "optimizer/optim.h"

enum { P_BETA1 = OPT_P_NCOMMON, P_BETA2, P_EPS, P_ADAM_N };

#define ADAM_PARAMS(eps_def)                                                                   \
  {.name = "beta1", .type = OPF_P_FLOAT, .def = 0.9, .min = 0, .max = 1,                       \
   .help = "decay rate of the first moment (mean)"},                                           \
      {.name = "beta2", .type = OPF_P_FLOAT, .def = 0.999, .min = 0, .max = 1,                 \
       .help = "decay rate of the second moment (var)"},                                       \
      {.name = "epsilon", .type = OPF_P_FLOAT, .def = (eps_def), .min = 0, .max = 1,           \
       .help = "added to sqrt(var) for stability"}
#define ADAM_INPUTS                                                                            \
  OPT_IN_WEIGHT, OPT_IN_GRAD,                                                                  \
      OPT_IN_STATE("mean", -0.1, 0.1, "first moment, updated in place"),                       \
      OPT_IN_STATE("var", 0, 0.01, "second moment (>= 0), updated in place")

/* Kernel hyper-parameters after the common ones (lamb adds its own after ADAM_NH). */
enum { AH_B1 = OPT_H_NCOMMON, AH_OB1, AH_B2, AH_OB2, AH_EPS, AH_ETA, ADAM_NH };

static void adam_hyper(const opf_case *c, double *h) {
  const double *p = c->p;
  opt_hyper(c, h);
  h[AH_B1] = p[P_BETA1], h[AH_OB1] = 1 - p[P_BETA1];
  h[AH_B2] = p[P_BETA2], h[AH_OB2] = 1 - p[P_BETA2];
  h[AH_EPS] = p[P_EPS], h[AH_ETA] = 1;
}

/* The moment updates every kernel here shares: mean and var of G at element i, stored, and
 * left in mi and vi. */
#define ADAM_MOMENTS(i, G)                                                                     \
  const T mi = b1 * m[i] + ob1 * (G), vi = b2 * v[i] + ob2 * (G) * (G);                        \
  m[i] = mi;                                                                                   \
  v[i] = vi
#define ADAM_LOCALS                                                                            \
  OPT_LOCALS;                                                                                  \
  T *restrict m = a[2], *restrict v = a[3];                                                    \
  const T b1 = h[AH_B1], ob1 = h[AH_OB1], b2 = h[AH_B2], ob2 = h[AH_OB2], eps = h[AH_EPS];     \
  (void)b1, (void)ob1, (void)b2, (void)ob2

/* ---- adam (MXNet AdamUpdateKernel; bias correction is left to the caller's lr):
 *   g = clip(rescale_grad * grad + wd w)
 *   mean = beta1 mean + (1 - beta1) g;  var = beta2 var + (1 - beta2) g^2
 *   w = w - lr mean / (sqrt(var) + epsilon) ---- */

OPT_KERNELS(adam, {
  ADAM_LOCALS;
  for (int64_t i = 0; i < n; i++) {
    const T G = OPT_GRAD_WD(i);
    ADAM_MOMENTS(i, G);
    w[i] = w[i] - lr * mi / (OPT_SQRT(vi) + eps);
  }
})

static int adam_forward(opf_case *c) {
  double h[ADAM_NH];
  adam_hyper(c, h);
  return opt_stream(c, adam_f32, adam_f64, h, ADAM_NH);
}

/* mean and var in v[2], v[3] from the (already rescaled, decayed and clipped) gradient g. */
static void adam_moments_ref(double *v, const double *p, double g) {
  v[2] = p[P_BETA1] * v[2] + (1 - p[P_BETA1]) * g;
  v[3] = p[P_BETA2] * v[3] + (1 - p[P_BETA2]) * g * g;
}

static void adam_ref(double *v, const double *p) {
  adam_moments_ref(v, p, opt_grad_wd_ref(v, p));
  v[0] = v[0] - p[OPT_P_LR] * v[2] / (sqrt(v[3]) + p[P_EPS]);
}
static int adam_reference(opf_case *c) { return opt_reference(c, adam_ref); }

/* g: rescale, wd w, add (3); mean: 3; var: square, 2 multiplies, add (4); w: sqrt, + eps,
 * divide, lr *, subtract (5): 15 per element (+2 clipping). */
static double adam_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 15 + opt_clip_flops(c));
}

OPPERF_OP(adam) = {
    .abi = OPF_OP_ABI,
    .name = "adam",
    .category = "optimizer",
    .summary = "Adam update in place (MXNet adam_update): weight, mean, var",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 4,
    .in = {ADAM_INPUTS},
    .n_out = 3,
    .out = {"weight", "mean", "var"},
    .inplace = {1, 3, 4},
    .n_params = P_ADAM_N,
    .params = {OPT_PARAMS_COMMON(0.001, 0), ADAM_PARAMS(1e-8)},
    .shapes = {OPT_SHAPES_HEAD,
               {"small", "weight=4x5 beta1=0 beta2=0.5 epsilon=0.001"},
               OPT_SHAPES_TAIL},
    .infer = opt_infer,
    .forward = adam_forward,
    .reference = adam_reference,
    .flops = adam_flops,
    .bytes = opt_bytes,
};

/* ---- adamw (MXNet contrib AdamWUpdate, decoupled weight decay):
 *   g = clip(rescale_grad * grad)
 *   mean = beta1 mean + (1 - beta1) g;  var = beta2 var + (1 - beta2) g^2
 *   w = w - eta (lr mean / (sqrt(var) + epsilon) + wd w) ---- */

enum { P_ETA = P_ADAM_N, P_ADAMW_N };

OPT_KERNELS(adamw, {
  ADAM_LOCALS;
  const T eta = h[AH_ETA];
  for (int64_t i = 0; i < n; i++) {
    const T G = OPT_GRAD(i);
    ADAM_MOMENTS(i, G);
    w[i] = w[i] - eta * (lr * mi / (OPT_SQRT(vi) + eps) + wd * w[i]);
  }
})

static int adamw_forward(opf_case *c) {
  double h[ADAM_NH];
  adam_hyper(c, h);
  h[AH_ETA] = c->p[P_ETA];
  return opt_stream(c, adamw_f32, adamw_f64, h, ADAM_NH);
}

static void adamw_ref(double *v, const double *p) {
  adam_moments_ref(v, p, opt_grad_ref(v, p));
  v[0] = v[0] - p[P_ETA] * (p[OPT_P_LR] * v[2] / (sqrt(v[3]) + p[P_EPS]) + p[OPT_P_WD] * v[0]);
}
static int adamw_reference(opf_case *c) { return opt_reference(c, adamw_ref); }

/* g: rescale (1); mean 3; var 4; w: sqrt, + eps, divide, lr *, wd w, add, eta *, subtract
 * (8): 16 per element (+2 clipping). */
static double adamw_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 16 + opt_clip_flops(c));
}

OPPERF_OP(adamw) = {
    .abi = OPF_OP_ABI,
    .name = "adamw",
    .category = "optimizer",
    .summary = "AdamW update in place (MXNet adamw_update): Adam with decoupled weight decay",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 4,
    .in = {ADAM_INPUTS},
    .n_out = 3,
    .out = {"weight", "mean", "var"},
    .inplace = {1, 3, 4},
    .n_params = P_ADAMW_N,
    .params = {OPT_PARAMS_COMMON(0.001, 0.01), ADAM_PARAMS(1e-8),
               {.name = "eta", .type = OPF_P_FLOAT, .def = 1, .min = 0, .max = 10,
                .help = "learning-rate multiplier of the schedule (scales the whole step)"}},
    .shapes = {OPT_SHAPES_HEAD,
               {"small", "weight=3x7 eta=0.5 wd=0.1"},
               OPT_SHAPES_TAIL},
    .infer = opt_infer,
    .forward = adamw_forward,
    .reference = adamw_reference,
    .flops = adamw_flops,
    .bytes = opt_bytes,
};

/* ---- lamb (MXNet LambUpdatePhaseOneKernel + LambUpdatePhaseTwoKernel):
 *   g = clip(rescale_grad * grad)
 *   mean = beta1 mean + (1 - beta1) g;  var = beta2 var + (1 - beta2) g^2
 *   d = mean^ / (sqrt(var^) + epsilon) + wd w, with mean^ = mean / (1 - beta1^t) and
 *       var^ = var / (1 - beta2^t) when bias_correction (else mean, var)
 *   r1 = ||w|| clamped to [lower_bound, upper_bound] (each when >= 0), r2 = ||d||
 *   w = w - lr (r1 / r2) d   (plain lr when r1 or r2 is 0)
 * MXNet stores d (phase 1) and reads it back (phase 2) with separate norm kernels: 12 array
 * sweeps. Here pass 1 updates mean and var and accumulates ||w||^2 and ||d||^2 without storing
 * d; pass 2 recomputes d from the updated mean and var: 10 sweeps and no workspace. ---- */

enum { P_T = P_ADAM_N, P_BIAS, P_LOWER, P_UPPER, P_LAMB_N };
enum { LH_C1 = ADAM_NH, LH_C2, LAMB_NH };

/* The update direction d at element i (w, m, v, c1, c2, eps, wd in scope). */
#define LAMB_DIR(mi, vi, wi) ((mi) * c1 / (OPT_SQRT((vi) * c2) + eps) + wd * (wi))
#define LAMB_LOCALS                                                                            \
  ADAM_LOCALS;                                                                                 \
  const T c1 = h[LH_C1], c2 = h[LH_C2]

/* Pass 1 works in blocks of LAMB_BLK elements: one loop updates mean and var and leaves d in
 * an L1-resident buffer, a second sums w^2 and d^2 into LAMB_LANES independent lanes (the
 * vector registers; one accumulator would be a serial chain GCC may not reorder), folded into
 * double totals per block so float32 sums stay accurate over 64M parameters. With the sums in
 * the update loop itself, GCC (short of registers for all the hyper-parameters) kept the lane
 * accumulators on the stack: a store-to-load round trip in every iteration's chain. */
enum { LAMB_LANES = 64, LAMB_BLK = 512 };

OPT_KERNELS(lamb_p1, {
  LAMB_LOCALS;
  T d[LAMB_BLK];
  double tw = 0, td = 0;
  for (int64_t i0 = 0; i0 < n; i0 += LAMB_BLK) {
    const int64_t len = n - i0 < LAMB_BLK ? n - i0 : LAMB_BLK;
    for (int64_t k = 0; k < len; k++) {
      const T G = OPT_GRAD(i0 + k);
      ADAM_MOMENTS(i0 + k, G);
      d[k] = LAMB_DIR(mi, vi, w[i0 + k]);
    }
    const T *restrict wb = w + i0;
    T sw[LAMB_LANES] = {0}, sd[LAMB_LANES] = {0};
    int64_t k = 0;
    for (; k + LAMB_LANES <= len; k += LAMB_LANES)
      for (int j = 0; j < LAMB_LANES; j++) {
        sw[j] += wb[k + j] * wb[k + j];
        sd[j] += d[k + j] * d[k + j];
      }
    for (; k < len; k++) sw[0] += wb[k] * wb[k], sd[0] += d[k] * d[k];
    for (int j = 0; j < LAMB_LANES; j++) tw += sw[j], td += sd[j];
  }
  acc[0] += tw;
  acc[1] += td;
})

OPT_KERNELS(lamb_p2, {
  LAMB_LOCALS;
  for (int64_t i = 0; i < n; i++) w[i] = w[i] - lr * LAMB_DIR(m[i], v[i], w[i]);
})

/* Pass 1 over every element with the same contiguous chunk per thread as opf_parallel_range;
 * the per-thread sums are combined by an OpenMP reduction. */
static void lamb_pass1(const opt_run *r, int64_t n, double *sums) {
  double s0 = 0, s1 = 0;
  if (n < OPF_PAR_MIN || omp_get_max_threads() == 1) {
    double acc[2] = {0, 0};
    opt_run_chunk(r, 0, n, acc);
    s0 = acc[0], s1 = acc[1];
  } else {
#pragma omp parallel reduction(+ : s0, s1)
    {
      int nt = omp_get_num_threads(), t = omp_get_thread_num();
      int64_t chunk = (n + nt - 1) / nt, lo = (int64_t)t * chunk;
      int64_t hi = lo + chunk < n ? lo + chunk : n;
      double acc[2] = {0, 0};
      if (lo < hi) opt_run_chunk(r, lo, hi, acc);
      s0 += acc[0], s1 += acc[1];
    }
  }
  sums[0] = s0, sums[1] = s1;
}

/* The step size lr r1 / r2 of MXNet's phase 2 from ||w||^2 and ||d||^2. */
static double lamb_lr(const double *p, double ww, double dd) {
  double r1 = sqrt(ww), r2 = sqrt(dd);
  if (p[P_LOWER] >= 0) r1 = r1 > p[P_LOWER] ? r1 : p[P_LOWER];
  if (p[P_UPPER] >= 0) r1 = r1 < p[P_UPPER] ? r1 : p[P_UPPER];
  return r1 == 0 || r2 == 0 ? p[OPT_P_LR] : p[OPT_P_LR] * r1 / r2;
}

/* 1 / (1 - beta^t) with bias correction, else 1. */
static double lamb_corr(const double *p, int which) {
  return p[P_BIAS] ? 1 / (1 - pow(p[which], p[P_T])) : 1;
}

static int lamb_forward(opf_case *c) {
  double h[LAMB_NH], sums[2];
  adam_hyper(c, h);
  h[LH_C1] = lamb_corr(c->p, P_BETA1), h[LH_C2] = lamb_corr(c->p, P_BETA2);
  opt_run r = opt_run_make(c, lamb_p1_f32, lamb_p1_f64, h, LAMB_NH);
  lamb_pass1(&r, opf_numel(&c->in[0]), sums);
  h[OPT_H_LR] = lamb_lr(c->p, sums[0], sums[1]);
  return opt_stream(c, lamb_p2_f32, lamb_p2_f64, h, LAMB_NH);
}

/* MXNet's two phases literally: d stored in a double buffer, both norms, then the update. */
static int lamb_reference(opf_case *c) {
  const double *p = c->p;
  int64_t n = opf_numel(&c->in[0]);
  double *d = opf_alloc((size_t)(n > 0 ? n : 1) * sizeof *d);
  if (!d) return opf_case_error(c, OPF_ENOMEM, "lamb reference: no memory for %lld values",
                                (long long)n);
  double ww = 0, dd = 0;
  for (int64_t i = 0; i < n; i++) {
    double v[4];
    for (int j = 0; j < 4; j++) v[j] = opt_get(&c->in[j], i);
    adam_moments_ref(v, p, opt_grad_ref(v, p));
    double mh = v[2], vh = v[3];
    if (p[P_BIAS]) mh /= 1 - pow(p[P_BETA1], p[P_T]), vh /= 1 - pow(p[P_BETA2], p[P_T]);
    d[i] = mh / (sqrt(vh) + p[P_EPS]) + p[OPT_P_WD] * v[0];
    opt_put(&c->out[1], i, v[2]);
    opt_put(&c->out[2], i, v[3]);
    ww += v[0] * v[0], dd += d[i] * d[i];
  }
  double lr = lamb_lr(p, ww, dd);
  for (int64_t i = 0; i < n; i++) opt_put(&c->out[0], i, opt_get(&c->in[0], i) - lr * d[i]);
  opf_free(d);
  return OPF_OK;
}

static int lamb_infer(opf_case *c) {
  const double *p = c->p;
  if (p[P_BIAS] && (p[P_BETA1] >= 1 || p[P_BETA2] >= 1))
    return opf_case_error(c, OPF_EINVAL,
                          "bias_correction needs beta1 and beta2 below 1 (beta1=%g beta2=%g): "
                          "1 - beta^t would be 0",
                          p[P_BETA1], p[P_BETA2]);
  if (p[P_LOWER] >= 0 && p[P_UPPER] >= 0 && p[P_LOWER] > p[P_UPPER])
    return opf_case_error(c, OPF_EINVAL, "lower_bound %g is above upper_bound %g", p[P_LOWER],
                          p[P_UPPER]);
  return opt_infer(c);
}

/* Real work per element: g: rescale (1); mean 3; var 4; d: two bias-correction multiplies,
 * sqrt, + eps, divide, wd w, add (7); the two squared norms, square and add each (4); update:
 * multiply and subtract (2): 21 (+2 clipping). Pass 2's recomputation of d (7 more) is an
 * implementation choice that saves traffic, not counted. */
static double lamb_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_flops_per(c, 21 + opt_clip_flops(c));
}

/* Pass 1 reads weight, grad, mean, var and writes mean, var (6 sweeps); pass 2 reads weight,
 * mean, var and writes weight (4): 10 sweeps, the least for a two-pass update (a one-pass one
 * would need the norms in advance). */
static double lamb_bytes(const opf_case *c, opf_pass p) {
  (void)p;
  return opt_bytes_arrays(c, 10);
}

OPPERF_OP(lamb) = {
    .abi = OPF_OP_ABI,
    .name = "lamb",
    .category = "optimizer",
    .summary = "LAMB in place (MXNet lamb_update_phase1+2): Adam step scaled by ||w|| / ||d||",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 4,
    .in = {ADAM_INPUTS},
    .n_out = 3,
    .out = {"weight", "mean", "var"},
    .inplace = {1, 3, 4},
    .n_params = P_LAMB_N,
    .params = {OPT_PARAMS_COMMON(0.001, 0.01), ADAM_PARAMS(1e-6),
               {.name = "t", .type = OPF_P_INT, .def = 1, .min = 1, .max = 1e9,
                .help = "update count, for bias correction"},
               {.name = "bias_correction", .type = OPF_P_BOOL, .def = 1,
                .help = "divide mean by 1 - beta1^t and var by 1 - beta2^t"},
               {.name = "lower_bound", .type = OPF_P_FLOAT, .def = -1, .min = -1, .max = 1e6,
                .help = "lower limit of ||w|| in the trust ratio; negative: none"},
               {.name = "upper_bound", .type = OPF_P_FLOAT, .def = -1, .min = -1, .max = 1e6,
                .help = "upper limit of ||w|| in the trust ratio; negative: none"}},
    .shapes = {OPT_SHAPES_HEAD,
               {"small", "weight=6x5 bias_correction=false"},
               {"small", "weight=7x3 t=10 lower_bound=0.5 upper_bound=2"},
               {"small", "weight=16x16 upper_bound=0.1"},
               OPT_SHAPES_TAIL,
               {"test", "weight=65537 t=3 lower_bound=300"}},
    .infer = lamb_infer,
    .forward = lamb_forward,
    .reference = lamb_reference,
    .flops = lamb_flops,
    .bytes = lamb_bytes,
};

/* mse_loss.c: mean squared error (L2 loss) between pred and target, reduction mean, sum or
 * none, and its gradients d pred = 2 (pred - target) g / N (mean), d target = -d pred.
 * One streaming pass each way: the reduction sums in vector lanes per block and in float64
 * across blocks and threads; the backward writes both gradients in the same pass. */
#include "opf_kernel.h"

enum { MSE_MEAN, MSE_SUM, MSE_NONE };

#define KI static inline __attribute__((always_inline))
/* Block of the reduction summed in the element type before joining the float64 total: short
 * enough that float32 lanes keep full accuracy, long enough to amortise the join. */
#define MSE_BLOCK 4096

#define MSE_KERNELS(T, SUF)                                                                   \
  /* sum of (p - t)^2 over [0, n): vector lanes within a block, float64 across blocks */      \
  OPF_VEC static double sqdiff_sum_##SUF(const T *restrict p, const T *restrict t,            \
                                         int64_t n) {                                         \
    enum { L = 128 / sizeof(T) };                                                             \
    double total = 0;                                                                         \
    for (int64_t b0 = 0; b0 < n; b0 += MSE_BLOCK) {                                           \
      const int64_t m = n - b0 < MSE_BLOCK ? n - b0 : MSE_BLOCK;                              \
      const T *restrict pb = p + b0, *restrict tb = t + b0;                                   \
      T acc[L] = {0}, s = 0;                                                                  \
      int64_t k = 0;                                                                          \
      for (; k + L <= m; k += L)                                                              \
        for (int j = 0; j < L; j++) {                                                         \
          T d = pb[k + j] - tb[k + j];                                                        \
          acc[j] += d * d;                                                                    \
        }                                                                                     \
      for (; k < m; k++) s += (pb[k] - tb[k]) * (pb[k] - tb[k]);                              \
      for (int w = L / 2; w > 0; w /= 2) /* tree fold: no serial chain of L adds */           \
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];                                     \
      s += acc[0];                                                                            \
      total += s;                                                                             \
    }                                                                                         \
    return total;                                                                             \
  }                                                                                           \
  OPF_VEC static void sqdiff_##SUF(const T *restrict p, const T *restrict t, T *restrict y,    \
                                   int64_t n) {                                               \
    for (int64_t i = 0; i < n; i++) y[i] = (p[i] - t[i]) * (p[i] - t[i]);                     \
  }                                                                                           \
  /* dp = scale g (p - t), dt = -dp; g a scalar (gs = 0) or per element (gs = 1); either     \
   * gradient may be absent. gs and the presence pattern are constants after inlining. */    \
  KI void grad_row_##SUF(const T *restrict p, const T *restrict t, const T *restrict g,       \
                         const int gs, T scale, T *restrict dp, T *restrict dt, int64_t n,    \
                         const int want_p, const int want_t) {                                \
    for (int64_t i = 0; i < n; i++) {                                                         \
      T d = scale * g[gs ? i : 0] * (p[i] - t[i]);                                            \
      if (want_p) dp[i] = d;                                                                  \
      if (want_t) dt[i] = -d;                                                                 \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void grad_##SUF(const T *restrict p, const T *restrict t, const T *restrict g, \
                                 int gs, T scale, T *restrict dp, T *restrict dt, int64_t n) { \
    if (gs) {                                                                                 \
      if (dp && dt) grad_row_##SUF(p, t, g, 1, scale, dp, dt, n, 1, 1);                       \
      else if (dp) grad_row_##SUF(p, t, g, 1, scale, dp, dt, n, 1, 0);                        \
      else if (dt) grad_row_##SUF(p, t, g, 1, scale, dp, dt, n, 0, 1);                        \
    } else {                                                                                  \
      if (dp && dt) grad_row_##SUF(p, t, g, 0, scale, dp, dt, n, 1, 1);                       \
      else if (dp) grad_row_##SUF(p, t, g, 0, scale, dp, dt, n, 1, 0);                        \
      else if (dt) grad_row_##SUF(p, t, g, 0, scale, dp, dt, n, 0, 1);                        \
    }                                                                                         \
  }
MSE_KERNELS(float, f32)
MSE_KERNELS(double, f64)

static int mse_infer(opf_case *c) {
  if (c->in[0].ndim < 0 || c->in[1].ndim < 0) return OPF_OK; /* the driver names the input */
  int rc = opf_same_shape(c, &c->in[0], &c->in[1], "pred", "target");
  if (rc) return rc;
  if ((int)c->p[0] == MSE_NONE) opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  else opf_set_out(c, 0, c->dtype, 0, NULL);
  return OPF_OK;
}

/* Offset views of the case's tensors for one chunk; dtype-generic through char pointers. */
#define AT(t, i) ((char *)(t).data + (size_t)(i) * opf_dtype_size((t).dtype))

static void none_range(int64_t lo, int64_t hi, void *ctx) {
  opf_case *c = ctx;
  if (c->dtype == OPF_F32)
    sqdiff_f32((const float *)AT(c->in[0], lo), (const float *)AT(c->in[1], lo),
               (float *)AT(c->out[0], lo), hi - lo);
  else
    sqdiff_f64((const double *)AT(c->in[0], lo), (const double *)AT(c->in[1], lo),
               (double *)AT(c->out[0], lo), hi - lo);
}

static double sum_range(const opf_case *c, int64_t lo, int64_t hi) {
  if (c->dtype == OPF_F32)
    return sqdiff_sum_f32((const float *)AT(c->in[0], lo), (const float *)AT(c->in[1], lo),
                          hi - lo);
  return sqdiff_sum_f64((const double *)AT(c->in[0], lo), (const double *)AT(c->in[1], lo),
                        hi - lo);
}

static void set_scalar(opf_tensor *t, double v) {
  if (t->dtype == OPF_F32) *(float *)t->data = (float)v;
  else *(double *)t->data = v;
}

static int mse_forward(opf_case *c) {
  const int64_t n = opf_numel(&c->in[0]);
  const int red = (int)c->p[0];
  if (red == MSE_NONE) {
    opf_parallel_range(n, OPF_PAR_MIN, none_range, c);
    return OPF_OK;
  }
  double total = 0;
#pragma omp parallel if (n >= OPF_PAR_MIN) reduction(+ : total)
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt, lo = t * chunk, hi = lo + chunk < n ? lo + chunk : n;
    if (lo < hi) total += sum_range(c, lo, hi);
  }
  set_scalar(&c->out[0], red == MSE_MEAN ? total / (double)n : total); /* mean of none: NaN */
  return OPF_OK;
}

static void grad_range(int64_t lo, int64_t hi, void *ctx) {
  opf_case *c = ctx;
  const int red = (int)c->p[0];
  const int gs = red == MSE_NONE;
  /* 2 / N folded into one scale; the scalar upstream gradient stays in g (gs = 0) */
  const double scale = red == MSE_MEAN ? 2.0 / (double)opf_numel(&c->in[0]) : 2.0;
  const int64_t goff = gs ? lo : 0;
  void *dp = c->gin[0].data ? AT(c->gin[0], lo) : NULL;
  void *dt = c->gin[1].data ? AT(c->gin[1], lo) : NULL;
  if (c->dtype == OPF_F32)
    grad_f32((const float *)AT(c->in[0], lo), (const float *)AT(c->in[1], lo),
             (const float *)AT(c->gout[0], goff), gs, (float)scale, dp, dt, hi - lo);
  else
    grad_f64((const double *)AT(c->in[0], lo), (const double *)AT(c->in[1], lo),
             (const double *)AT(c->gout[0], goff), gs, scale, dp, dt, hi - lo);
}

static int mse_backward(opf_case *c) {
  opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, grad_range, c);
  return OPF_OK;
}

static int mse_reference(opf_case *c) {
  const int64_t n = opf_numel(&c->in[0]);
  const int red = (int)c->p[0];
  double total = 0;
  for (int64_t i = 0; i < n; i++) {
    double p, t;
    if (c->dtype == OPF_F32) {
      p = ((const float *)c->in[0].data)[i];
      t = ((const float *)c->in[1].data)[i];
    } else {
      p = ((const double *)c->in[0].data)[i];
      t = ((const double *)c->in[1].data)[i];
    }
    double e = (p - t) * (p - t);
    if (red != MSE_NONE) total += e;
    else if (c->dtype == OPF_F32) ((float *)c->out[0].data)[i] = (float)e;
    else ((double *)c->out[0].data)[i] = e;
  }
  if (red != MSE_NONE) set_scalar(&c->out[0], red == MSE_MEAN ? total / (double)n : total);
  return OPF_OK;
}

/* fwd: subtract, square, accumulate: 3 per element (none: 2, no accumulation); the final
 * divide of mean is not counted. bwd: subtract and scale (2), negate for d target (1). */
static double mse_flops(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->in[0]);
  double fwd = ((int)c->p[0] == MSE_NONE ? 2 : 3) * n, bwd = 3 * n;
  return opf_pass_sum(p, fwd, bwd);
}

/* fwd reads pred and target, writes the output (1 element or N); bwd reads pred, target and
 * the output gradient (1 or N) and writes both input gradients. */
static double mse_bytes(const opf_case *c, opf_pass p) {
  double es = (double)opf_dtype_size(c->dtype), n = (double)opf_numel(&c->in[0]) * es;
  double out = (double)opf_numel(&c->out[0]) * es;
  double fwd = 2 * n + out, bwd = 2 * n + out + 2 * n;
  return opf_pass_sum(p, fwd, bwd);
}

OPPERF_OP(mse_loss) = {
    .abi = OPF_OP_ABI,
    .name = "mse_loss",
    .category = "nn.loss",
    .summary = "mean squared error (L2 loss): reduce((pred - target)^2)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "pred", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1},
           {.name = "target", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "same shape as pred"}},
    .n_out = 1,
    .out = {"loss"},
    .n_params = 1,
    .params = {{.name = "reduction", .type = OPF_P_ENUM, .def = MSE_MEAN,
                .choices = "mean|sum|none",
                .help = "mean or sum: a scalar loss; none: the per-element squared errors"}},
    .shapes = {{"standard", "pred=1024x1024 target=1024x1024"},
               {"skewed", "pred=1024x10 target=1024x10"},
               {"skewed", "pred=10x100000 target=10x100000"},
               {"small", "pred=16x16 target=16x16"},
               {"small", "pred=16x16 target=16x16 reduction=sum"},
               {"small", "pred=16x16 target=16x16 reduction=none"},
               {"small", "pred=1x64 target=1x64"},
               {"small", "pred=37x3 target=37x3 reduction=sum"},
               {"small", "pred=() target=()"},
               {"test", "pred=301x517 target=301x517"},
               {"test", "pred=301x517 target=301x517 reduction=none"},
               {"test", "pred=100003 target=100003 reduction=sum"},
               {"large", "pred=8192x8192 target=8192x8192"}},
    .infer = mse_infer,
    .forward = mse_forward,
    .backward = mse_backward,
    .reference = mse_reference,
    .flops = mse_flops,
    .bytes = mse_bytes,
};

/* batch_norm.c: batch normalisation per channel of (N, C, ...) input, train (batch statistics)
 * or inference (running statistics), with gamma/beta gradients. Work is split into the N*C
 * contiguous (n, c) runs of S = H*W elements with per-run partial sums in double (balanced
 * even for C = 3); 2-D input (S = 1) is vectorised across channels, row by row. */
#include <math.h>
#include <string.h>

#include "conv_common.h"

enum { IN_X, IN_GAMMA, IN_BETA, IN_RMEAN, IN_RVAR };
enum { P_MODE, P_EPS, P_MOMENTUM };
enum { MODE_TRAIN, MODE_INFERENCE };

/* Independent accumulator lanes: the compiler vectorises across them (a single running sum
 * is a serial dependence chain it may not reassociate). */
#define BN_LANES 32

/* ---- dtype kernels, one template for float and double ---- */
#define BN_KERNELS(T, S)                                                                       \
  /* Run of n elements: *s1 = sum (x - k), *s2 = sum (x - k)^2 (shifted by a sample of the  \
   * channel, so the one-pass variance does not cancel). */                                   \
  OPF_VEC static void stats_run_##S(const T *restrict x, int64_t n, double k, double *s1,     \
                                    double *s2) {                                             \
    double a[BN_LANES] = {0}, b[BN_LANES] = {0};                                              \
    int64_t i = 0;                                                                            \
    for (; i + BN_LANES <= n; i += BN_LANES)                                                  \
      for (int j = 0; j < BN_LANES; j++) {                                                    \
        double d = (double)x[i + j] - k;                                                      \
        a[j] += d;                                                                            \
        b[j] += d * d;                                                                        \
      }                                                                                       \
    double u = 0, v = 0;                                                                      \
    for (; i < n; i++) {                                                                      \
      double d = (double)x[i] - k;                                                            \
      u += d;                                                                                 \
      v += d * d;                                                                             \
    }                                                                                         \
    for (int j = 0; j < BN_LANES; j++) u += a[j], v += b[j];                                  \
    *s1 = u;                                                                                  \
    *s2 = v;                                                                                  \
  }                                                                                           \
  /* Run of n elements: *sg = sum g, *sgx = sum g (x - m). */                                 \
  OPF_VEC static void gsums_run_##S(const T *restrict g, const T *restrict x, int64_t n,      \
                                    double m, double *sg, double *sgx) {                      \
    double a[BN_LANES] = {0}, b[BN_LANES] = {0};                                              \
    int64_t i = 0;                                                                            \
    for (; i + BN_LANES <= n; i += BN_LANES)                                                  \
      for (int j = 0; j < BN_LANES; j++) {                                                    \
        double gv = (double)g[i + j];                                                         \
        a[j] += gv;                                                                           \
        b[j] += gv * ((double)x[i + j] - m);                                                  \
      }                                                                                       \
    double u = 0, v = 0;                                                                      \
    for (; i < n; i++) {                                                                      \
      u += (double)g[i];                                                                      \
      v += (double)g[i] * ((double)x[i] - m);                                                 \
    }                                                                                         \
    for (int j = 0; j < BN_LANES; j++) u += a[j], v += b[j];                                  \
    *sg = u;                                                                                  \
    *sgx = v;                                                                                 \
  }                                                                                           \
  /* Row of channels [c0, c1) of 2-D input: per-channel sums, vectorised across channels. */ \
  OPF_VEC static void stats_row_##S(const T *restrict x, const T *restrict k,                 \
                                    double *restrict s1, double *restrict s2, int64_t c0,     \
                                    int64_t c1) {                                             \
    for (int64_t c = c0; c < c1; c++) {                                                       \
      double d = (double)x[c] - (double)k[c];                                                 \
      s1[c] += d;                                                                             \
      s2[c] += d * d;                                                                         \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void gsums_row_##S(const T *restrict g, const T *restrict x,                 \
                                    const double *restrict m, double *restrict sg,            \
                                    double *restrict sgx, int64_t c0, int64_t c1) {           \
    for (int64_t c = c0; c < c1; c++) {                                                       \
      sg[c] += (double)g[c];                                                                  \
      sgx[c] += (double)g[c] * ((double)x[c] - m[c]);                                         \
    }                                                                                         \
  }                                                                                           \
  /* out = a*g + b*(x - m) + d elementwise over n elements. The coefficients advance with   \
   * ps (0: one channel's run; 1: a row across channels); g == NULL means the forward        \
   * normalisation y = b*(x - m) + d. Inlined with ps constant into the two entry points. */ \
  static inline __attribute__((always_inline)) void affine_body_##S(                          \
      const T *restrict g, const T *restrict x, T *restrict out, int64_t n,                   \
      const double *restrict a, const double *restrict b, const double *restrict m,           \
      const double *restrict d, int64_t ps) {                                                 \
    if (ps == 0) {                                                                            \
      T a0 = (T)a[0], b0 = (T)b[0], m0 = (T)m[0], d0 = (T)d[0];                               \
      if (g)                                                                                  \
        for (int64_t i = 0; i < n; i++) out[i] = a0 * g[i] + b0 * (x[i] - m0) + d0;           \
      else                                                                                    \
        for (int64_t i = 0; i < n; i++) out[i] = b0 * (x[i] - m0) + d0;                       \
    } else if (g) {                                                                           \
      for (int64_t i = 0; i < n; i++)                                                         \
        out[i] = (T)(a[i] * g[i] + b[i] * ((double)x[i] - m[i]) + d[i]);                      \
    } else {                                                                                  \
      for (int64_t i = 0; i < n; i++) out[i] = (T)(b[i] * ((double)x[i] - m[i]) + d[i]);      \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void affine_run_##S(const T *g, const T *x, T *out, int64_t n,               \
                                     const double *a, const double *b, const double *m,       \
                                     const double *d) {                                       \
    affine_body_##S(g, x, out, n, a, b, m, d, 0);                                             \
  }                                                                                           \
  OPF_VEC static void affine_row_##S(const T *g, const T *x, T *out, int64_t n,               \
                                     const double *a, const double *b, const double *m,       \
                                     const double *d) {                                       \
    affine_body_##S(g, x, out, n, a, b, m, d, 1);                                             \
  }

BN_KERNELS(float, f32)
BN_KERNELS(double, f64)

/* ---- driver ---- */
/* Workspace (doubles): per-channel mean, invstd, the coefficients a, b, d of the elementwise
 * pass, the updated running mean and var; then two partial-sum arrays of N*C (runs) or C
 * (rows). mean and invstd survive from forward to backward. */
typedef struct bn_ctx {
  opf_case *c;
  int64_t N, C, S;
  int train;
  double *mean, *invstd, *ca, *cb, *cd, *rm_new, *rv_new, *p1, *p2;
  const void *g; /* NULL in forward */
  void *out;
} bn_ctx;

static void bn_setup(opf_case *c, bn_ctx *t) {
  const opf_tensor *x = &c->in[IN_X];
  memset(t, 0, sizeof *t);
  t->c = c;
  t->N = x->shape[0], t->C = x->shape[1], t->S = 1;
  for (int k = 2; k < x->ndim; k++) t->S *= x->shape[k];
  t->train = (int)c->p[P_MODE] == MODE_TRAIN;
  double *w = c->ws;
  int64_t C = t->C, R = t->S > 1 ? t->N : 1;
  t->mean = w, t->invstd = w + C, t->ca = w + 2 * C, t->cb = w + 3 * C, t->cd = w + 4 * C;
  t->rm_new = w + 5 * C, t->rv_new = w + 6 * C, t->p1 = w + 7 * C, t->p2 = w + 7 * C + R * C;
}

static size_t bn_ws_doubles(int64_t N, int64_t C, int64_t S) {
  return (size_t)(7 * C + 2 * (S > 1 ? N : 1) * C);
}

static int bn_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X];
  char s1[96], s2[96];
  if (x->ndim < 2)
    return opf_case_error(c, OPF_EINVAL, "batch_norm: x must be (N, C) or (N, C, ...), got %s "
                          "(%d-D)", opf_shape_str(x, s1, sizeof s1), x->ndim);
  for (int k = 0; k < x->ndim; k++)
    if (x->shape[k] <= 0)
      return opf_case_error(c, OPF_EINVAL, "batch_norm: x %s has an empty dimension",
                            opf_shape_str(x, s1, sizeof s1));
  int64_t C = x->shape[1], S = opf_numel(x) / (x->shape[0] * C);
  for (int i = IN_GAMMA; i <= IN_RVAR; i++) {
    opf_tensor *v = &c->in[i];
    if (v->ndim < 0) opf_tensor_set_shape(v, c->dtype, 1, &C);
    else if (v->ndim != 1 || v->shape[0] != C)
      return opf_case_error(c, OPF_EINVAL, "batch_norm: '%s' %s must have shape (%lld), one "
                            "per channel of x %s", c->op->in[i].name, opf_shape_str(v, s1, sizeof s1),
                            (long long)C, opf_shape_str(x, s2, sizeof s2));
  }
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  c->ws_bytes = bn_ws_doubles(x->shape[0], C, S) * sizeof(double);
  return OPF_OK;
}

/* Pass 1 over runs [lo, hi) (u = n*C + c): forward statistics, or backward sums of g. */
static void sums_runs(int64_t lo, int64_t hi, void *p) {
  bn_ctx *t = p;
  opf_case *c = t->c;
  size_t e = opf_dtype_size(c->dtype);
  const char *x = c->in[IN_X].data;
  for (int64_t u = lo; u < hi; u++) {
    int64_t ch = u % t->C;
    const void *xu = x + (size_t)(u * t->S) * e;
    if (!t->g) {
      double k = nn_ld(x, c->dtype, ch * t->S); /* shift: first element of the channel */
      if (c->dtype == OPF_F32) stats_run_f32(xu, t->S, k, &t->p1[u], &t->p2[u]);
      else stats_run_f64(xu, t->S, k, &t->p1[u], &t->p2[u]);
    } else {
      const void *gu = (const char *)t->g + (size_t)(u * t->S) * e;
      if (c->dtype == OPF_F32) gsums_run_f32(gu, xu, t->S, t->mean[ch], &t->p1[u], &t->p2[u]);
      else gsums_run_f64(gu, xu, t->S, t->mean[ch], &t->p1[u], &t->p2[u]);
    }
  }
}

/* Pass 1 for 2-D input over channels [lo, hi): rows accumulate into p1/p2[c]. */
static void sums_rows(int64_t lo, int64_t hi, void *p) {
  bn_ctx *t = p;
  opf_case *c = t->c;
  size_t e = opf_dtype_size(c->dtype);
  const char *x = c->in[IN_X].data;
  for (int64_t ch = lo; ch < hi; ch++) t->p1[ch] = t->p2[ch] = 0;
  for (int64_t n = 0; n < t->N; n++) {
    const void *xr = x + (size_t)(n * t->C) * e;
    if (!t->g) {
      if (c->dtype == OPF_F32) stats_row_f32(xr, (const float *)x, t->p1, t->p2, lo, hi);
      else stats_row_f64(xr, (const double *)x, t->p1, t->p2, lo, hi);
    } else {
      const void *gr = (const char *)t->g + (size_t)(n * t->C) * e;
      if (c->dtype == OPF_F32) gsums_row_f32(gr, xr, t->mean, t->p1, t->p2, lo, hi);
      else gsums_row_f64(gr, xr, t->mean, t->p1, t->p2, lo, hi);
    }
  }
}

/* Pass 2: out = a*g + b*(x - mean) + d (g NULL in forward). */
static void affine_runs(int64_t lo, int64_t hi, void *p) {
  bn_ctx *t = p;
  opf_case *c = t->c;
  size_t e = opf_dtype_size(c->dtype);
  for (int64_t u = lo; u < hi; u++) {
    int64_t ch = u % t->C;
    size_t off = (size_t)(u * t->S) * e;
    const void *gu = t->g ? (const char *)t->g + off : NULL;
    const void *xu = (const char *)c->in[IN_X].data + off;
    void *ou = (char *)t->out + off;
    if (c->dtype == OPF_F32)
      affine_run_f32(gu, xu, ou, t->S, &t->ca[ch], &t->cb[ch], &t->mean[ch], &t->cd[ch]);
    else
      affine_run_f64(gu, xu, ou, t->S, &t->ca[ch], &t->cb[ch], &t->mean[ch], &t->cd[ch]);
  }
}

static void affine_rows(int64_t lo, int64_t hi, void *p) {
  bn_ctx *t = p;
  opf_case *c = t->c;
  size_t e = opf_dtype_size(c->dtype);
  for (int64_t n = 0; n < t->N; n++) {
    size_t off = (size_t)(n * t->C + lo) * e;
    const void *gr = t->g ? (const char *)t->g + off : NULL;
    const void *xr = (const char *)c->in[IN_X].data + off;
    void *o = (char *)t->out + off;
    if (c->dtype == OPF_F32)
      affine_row_f32(gr, xr, o, hi - lo, t->ca + lo, t->cb + lo, t->mean + lo, t->cd + lo);
    else
      affine_row_f64(gr, xr, o, hi - lo, t->ca + lo, t->cb + lo, t->mean + lo, t->cd + lo);
  }
}

/* Elements below which a pass stays on one thread. A pass is one light streaming sweep and
 * the forward and backward make two each: at (32, 1024) two threads took 23 us against 12 us
 * for one, so the bar is higher than the generic OPF_PAR_MIN. */
#define BN_PAR_MIN (4 * OPF_PAR_MIN)

/* Runs a pass over runs (S > 1) or channel columns (2-D input), threaded when large. */
static void bn_pass(bn_ctx *t, opf_range_fn runs, opf_range_fn rows) {
  if (t->S > 1) {
    int64_t units = t->N * t->C;
    opf_parallel_range(units, (BN_PAR_MIN + t->S - 1) / t->S, runs, t);
  } else {
    opf_parallel_range(t->C, (BN_PAR_MIN + t->N - 1) / t->N, rows, t);
  }
}

/* Sum the partials of channel ch over the rows (n) they were split into. */
static void bn_reduce(const bn_ctx *t, int64_t ch, double *s1, double *s2) {
  int64_t R = t->S > 1 ? t->N : 1;
  double u = 0, v = 0;
  for (int64_t r = 0; r < R; r++) u += t->p1[r * t->C + ch], v += t->p2[r * t->C + ch];
  *s1 = u;
  *s2 = v;
}

static int bn_forward(opf_case *c) {
  bn_ctx t;
  bn_setup(c, &t);
  opf_dtype dt = c->dtype;
  double eps = c->p[P_EPS], mom = c->p[P_MOMENTUM], M = (double)(t.N * t.S);
  if (t.train) bn_pass(&t, sums_runs, sums_rows);
  for (int64_t ch = 0; ch < t.C; ch++) {
    double mean, var;
    if (t.train) {
      double s1, s2;
      bn_reduce(&t, ch, &s1, &s2);
      double k = nn_ld(c->in[IN_X].data, dt, ch * t.S), d = s1 / M;
      mean = k + d;
      var = s2 / M - d * d;
      if (var < 0) var = 0;
      /* The running statistics a framework would store (unbiased variance), computed into
       * the workspace: the inputs stay untouched so repeated calls are identical. */
      t.rm_new[ch] = (1 - mom) * nn_ld(c->in[IN_RMEAN].data, dt, ch) + mom * mean;
      t.rv_new[ch] = (1 - mom) * nn_ld(c->in[IN_RVAR].data, dt, ch) +
                     mom * (M > 1 ? var * M / (M - 1) : var);
    } else {
      mean = nn_ld(c->in[IN_RMEAN].data, dt, ch);
      var = nn_ld(c->in[IN_RVAR].data, dt, ch);
    }
    t.mean[ch] = mean;
    t.invstd[ch] = 1 / sqrt(var + eps);
    t.ca[ch] = 0;
    t.cb[ch] = nn_ld(c->in[IN_GAMMA].data, dt, ch) * t.invstd[ch];
    t.cd[ch] = nn_ld(c->in[IN_BETA].data, dt, ch);
  }
  t.out = c->out[0].data;
  bn_pass(&t, affine_runs, affine_rows);
  return OPF_OK;
}

/* With xhat = (x - mean) invstd: dbeta = sum g, dgamma = sum g xhat, and
 * train:     dx = gamma invstd (g - dbeta/M - xhat dgamma/M)
 * inference: dx = gamma invstd g (mean and invstd are constants). */
static int bn_backward(opf_case *c) {
  bn_ctx t;
  bn_setup(c, &t);
  opf_dtype dt = c->dtype;
  double M = (double)(t.N * t.S);
  t.g = c->gout[0].data;
  bn_pass(&t, sums_runs, sums_rows);
  for (int64_t ch = 0; ch < t.C; ch++) {
    double sg, sgx;
    bn_reduce(&t, ch, &sg, &sgx);
    double is = t.invstd[ch], dgamma = sgx * is, a = nn_ld(c->in[IN_GAMMA].data, dt, ch) * is;
    if (c->gin[IN_GAMMA].data) nn_st(c->gin[IN_GAMMA].data, dt, ch, dgamma);
    if (c->gin[IN_BETA].data) nn_st(c->gin[IN_BETA].data, dt, ch, sg);
    t.ca[ch] = a;
    t.cb[ch] = t.train ? -a * is * dgamma / M : 0;
    t.cd[ch] = t.train ? -a * sg / M : 0;
  }
  if (c->gin[IN_X].data) {
    t.out = c->gin[IN_X].data;
    bn_pass(&t, affine_runs, affine_rows);
  }
  return OPF_OK;
}

/* Reference: the textbook two-pass mean and variance per channel, then normalise. */
static int bn_reference(opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  opf_dtype dt = c->dtype;
  int64_t N = x->shape[0], C = x->shape[1], S = opf_numel(x) / (N * C);
  for (int64_t ch = 0; ch < C; ch++) {
    double mean = 0, var = 0;
    if ((int)c->p[P_MODE] == MODE_TRAIN) {
      for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) mean += nn_ld(x->data, dt, (n * C + ch) * S + s);
      mean /= (double)(N * S);
      for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) {
          double d = nn_ld(x->data, dt, (n * C + ch) * S + s) - mean;
          var += d * d;
        }
      var /= (double)(N * S);
    } else {
      mean = nn_ld(c->in[IN_RMEAN].data, dt, ch);
      var = nn_ld(c->in[IN_RVAR].data, dt, ch);
    }
    double gamma = nn_ld(c->in[IN_GAMMA].data, dt, ch), beta = nn_ld(c->in[IN_BETA].data, dt, ch);
    for (int64_t n = 0; n < N; n++)
      for (int64_t s = 0; s < S; s++) {
        int64_t i = (n * C + ch) * S + s;
        nn_st(c->out[0].data, dt, i,
              (nn_ld(x->data, dt, i) - mean) / sqrt(var + c->p[P_EPS]) * gamma + beta);
      }
  }
  return OPF_OK;
}

/* Per element of x: train forward 7 (mean: add; variance: sub, mul, add; normalise: sub,
 * mul, add), inference forward 3 (normalise); train backward 9 (sum g: add; sum g(x-mean):
 * sub, mul, add; dx = a g + b (x-mean) + d: mul, sub, mul, add, add), inference backward 5
 * (the two sums, and dx = a g). Per-channel work is O(C) and left out. */
static double bn_flops(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->in[IN_X]);
  int train = (int)c->p[P_MODE] == MODE_TRAIN;
  double fwd = n * (train ? 7 : 3), bwd = n * (train ? 9 : 5);
  return opf_pass_sum(p, fwd, bwd);
}

/* Forward: x read, y written, and gamma, beta, running mean and var read (train reads the
 * running stats for their update). Backward: g and x read, dx written, gamma read, dgamma
 * and dbeta written; inference also reads the running mean and var. */
static double bn_bytes(const opf_case *c, opf_pass p) {
  double e = (double)opf_dtype_size(c->dtype), n = (double)opf_numel(&c->in[IN_X]);
  double C = (double)c->in[IN_X].shape[1];
  int train = (int)c->p[P_MODE] == MODE_TRAIN;
  double fwd = (2 * n + 4 * C) * e, bwd = (3 * n + (train ? 3 : 5) * C) * e;
  return opf_pass_sum(p, fwd, bwd);
}

OPPERF_OP(batch_norm) = {
    .abi = OPF_OP_ABI,
    .name = "batch_norm",
    .category = "nn.basic",
    .summary = "batch normalisation per channel of (N, C, ...) input, train or inference",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 5,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "input (N, C) or (N, C, H, W)"},
           {.name = "gamma", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0.5, .hi = 1.5,
            .help = "scale (C)"},
           {.name = "beta", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -0.5, .hi = 0.5,
            .help = "shift (C)"},
           {.name = "running_mean", .dtype = OPF_DT_CASE, .lo = -0.5, .hi = 0.5,
            .help = "running mean (C), used in inference mode"},
           {.name = "running_var", .dtype = OPF_DT_CASE, .lo = 0.5, .hi = 1.5,
            .help = "running variance (C, positive), used in inference mode"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {{"mode", OPF_P_ENUM, MODE_TRAIN, 0, 0, "train|inference",
                "train: batch statistics; inference: running statistics"},
               {"eps", OPF_P_FLOAT, 1e-5, 0, 1, NULL, "added to the variance"},
               {"momentum", OPF_P_FLOAT, 0.1, 0, 1, NULL,
                "running-statistics update weight (train; the update goes to the workspace, "
                "the inputs are not modified)"}},
    .shapes = {{"standard", "x=32x64x56x56 mode=train"},
               {"standard", "x=32x64x56x56 mode=inference"},
               {"skewed", "x=32x3x10000x10 mode=train"},
               {"skewed", "x=32x3x10000x10 mode=inference"},
               {"skewed", "x=32x1024 mode=train"},
               {"skewed", "x=32x1024 mode=inference"},
               {"small", "x=4x3x5x5"},
               {"small", "x=4x3x5x5 mode=inference"},
               {"small", "x=16x5"},
               {"small", "x=16x5 mode=inference"},
               {"small", "x=2x3x37"},
               {"small", "x=1x2x1x1"},
               {"test", "x=5x7x61x67"},
               {"test", "x=3x5x11x1001 mode=inference"},
               {"test", "x=163x1031"},
               {"test", "x=2x3x30011"},
               {"large", "x=64x128x112x112"}},
    .infer = bn_infer,
    .forward = bn_forward,
    .backward = bn_backward,
    .reference = bn_reference,
    .flops = bn_flops,
    .bytes = bn_bytes,
};

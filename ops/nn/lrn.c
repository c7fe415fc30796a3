/* lrn.c: local response normalisation across channels (AlexNet; MXNet LRN, PyTorch
 * LocalResponseNorm): y = x * (k + alpha/nsize * sum of x^2 over the nsize channels centred on
 * the element's)^-beta, NCHW (any spatial rank). Blocks of spatial positions (norm_common.h)
 * slide the window along the channels with per-position running sums, so the cost per element
 * does not grow with nsize; the power is vectorised (square roots for the usual exponents). */
#include "norm_common.h"
#include "unary/vmath.h"

enum { P_NSIZE, P_ALPHA, P_BETA, P_K };

#define LRN_PAR_MIN OPF_PAR_MIN /* roots and a division per element: earlier than norm.c */

typedef struct lrn_ctx {
  opf_case *c;
  int64_t N, C, S, h;  /* h = nsize / 2: the window of channel c is [c - h, c + h] */
  int64_t blk, nb;     /* positions per block, blocks per sample */
  size_t slot;         /* bytes of a thread's slot: sums, a zero row, t (see lrn_units) */
  double k, an, beta;  /* an = alpha / nsize */
  int bwd;
} lrn_ctx;

static void lrn_setup(const opf_case *c, lrn_ctx *t) {
  const opf_tensor *x = &c->in[0];
  size_t e = opf_dtype_size(c->dtype);
  memset(t, 0, sizeof *t);
  t->c = (opf_case *)c;
  t->N = x->shape[0], t->C = x->shape[1], t->S = opf_shape_numel(x->ndim - 2, x->shape + 2);
  t->h = (int64_t)c->p[P_NSIZE] / 2;
  t->k = c->p[P_K], t->an = c->p[P_ALPHA] / c->p[P_NSIZE], t->beta = c->p[P_BETA];
  t->blk = nc_plane_block(t->C, t->S, e);
  t->nb = (t->S + t->blk - 1) / t->blk;
  t->slot = ((size_t)t->blk * (sizeof(double) + (size_t)(1 + t->C) * e) + 63) / 64 * 64;
}

static int lrn_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  char s[96];
  if (x->ndim < 3)
    return opf_case_error(c, OPF_EINVAL, "lrn: x must be (N, C, spatial...), got %s (%d-D)",
                          opf_shape_str(x, s, sizeof s), x->ndim);
  for (int d = 0; d < x->ndim; d++)
    if (x->shape[d] <= 0)
      return opf_case_error(c, OPF_EINVAL, "lrn: x %s has an empty dimension",
                            opf_shape_str(x, s, sizeof s));
  if ((int64_t)c->p[P_NSIZE] % 2 == 0)
    return opf_case_error(c, OPF_EINVAL, "lrn: nsize=%lld must be odd (a window centred on "
                          "each channel)", (long long)c->p[P_NSIZE]);
  if (!(c->p[P_K] > 0))
    return opf_case_error(c, OPF_EINVAL, "lrn: k=%g must be > 0 (the base k + alpha/nsize * "
                          "sum x^2 must stay positive)", c->p[P_K]);
  lrn_ctx t;
  lrn_setup(c, &t);
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  c->ws_bytes = (size_t)omp_get_max_threads() * t.slot;
  return OPF_OK;
}

/* s^-beta for s >= k > 0. exp(-beta log s) in general (vmath.h, vectorised); the exponents
 * networks use get square roots instead (errno-free through vlibm.h, so they vectorise):
 * beta = 0.75, AlexNet's and the default, is 1/(sqrt(s) sqrt(sqrt(s))). Measured at
 * (32, 64, 56, 56) float32, forward: 11.7M cycles against 29M with exp/log, and 15.0M with
 * 1/sqrt by Newton steps from the bit-trick estimate (more instructions, longer chains; the
 * sqrt/div units are the bottleneck of the chosen form, about 1.8 cycles per element). Each
 * kernel has one loop per kind (GCC does not unswitch a switch inside the loop, and does not
 * vectorise it there). */
enum { POW_GENERAL, POW_075, POW_05, POW_1 };
static int lrn_pow_kind(double beta) {
  return beta == 0.75 ? POW_075 : beta == 0.5 ? POW_05 : beta == 1 ? POW_1 : POW_GENERAL;
}
#define LRN_P075(s) (1 / (VM_SQRT(s) * VM_SQRT(VM_SQRT(s))))
#define LRN_P05(s) (1 / VM_SQRT(s))
#define LRN_P1(s) (1 / (s))
#define LRN_PGEN(s) (_Generic((s), float: vm_expf, double: vm_exp)(                           \
    nb * _Generic((s), float: vm_logf, double: vm_log)(s)))
/* LOOP(P) is a loop whose body uses P(sc) for the power: instantiated once per kind. */
#define LRN_BY_KIND(kind, LOOP)                                                                \
  switch (kind) {                                                                              \
  case POW_075: LOOP(LRN_P075); break;                                                         \
  case POW_05: LOOP(LRN_P05); break;                                                           \
  case POW_1: LOOP(LRN_P1); break;                                                             \
  default: LOOP(LRN_PGEN); break;                                                              \
  }

/* One channel step, fused so the window sums acc (double) are read and written once:
 * acc += add^2 (the channel entering the window), the channel's own work, acc -= sub^2 (the
 * channel leaving it). Rows outside [0, C) are a zero row. The sums are double: the drift
 * of a running sum stays far below what k > 0 lets through to the output. */
/* forward: y = x (k + an acc)^-beta */
#define LRN_FWD_LOOP(P)                                                                        \
  for (int64_t s = 0; s < n; s++) {                                                            \
    const double a = acc[s] + (double)add[s] * (double)add[s];                                 \
    const T sc = (T)(k + an * a);                                                              \
    y[s] = x[s] * P(sc);                                                                       \
    acc[s] = a - (double)sub[s] * (double)sub[s];                                              \
  }
/* backward sweep 1: p = scale^-beta, dx = g p, t = g x p / scale */
#define LRN_BWD_LOOP(P)                                                                        \
  for (int64_t s = 0; s < n; s++) {                                                            \
    const double a = acc[s] + (double)add[s] * (double)add[s];                                 \
    const T sc = (T)(k + an * a), p = P(sc);                                                   \
    dx[s] = g[s] * p;                                                                          \
    tt[s] = g[s] * x[s] * p / sc;                                                              \
    acc[s] = a - (double)sub[s] * (double)sub[s];                                              \
  }
#define LRN_KERNELS(T_, S)                                                                     \
  /* acc += x^2 (the channels of the first window) */                                         \
  OPF_VEC static void sq_add_##S(const T_ *restrict x, double *restrict acc, int64_t n) {     \
    for (int64_t s = 0; s < n; s++) acc[s] += (double)x[s] * (double)x[s];                    \
  }                                                                                           \
  OPF_VEC static void fwd_##S(const T_ *restrict add, const T_ *restrict x,                   \
                              const T_ *restrict sub, double *restrict acc, T_ *restrict y,   \
                              int64_t n, double k, double an, double beta) {                  \
    typedef T_ T;                                                                             \
    const T nb = (T)-beta;                                                                    \
    LRN_BY_KIND(lrn_pow_kind(beta), LRN_FWD_LOOP)                                             \
  }                                                                                           \
  OPF_VEC static void bwd1_##S(const T_ *restrict add, const T_ *restrict x,                  \
                               const T_ *restrict sub, const T_ *restrict g,                  \
                               double *restrict acc, T_ *restrict dx, T_ *restrict tt,        \
                               int64_t n, double k, double an, double beta) {                 \
    typedef T_ T;                                                                             \
    const T nb = (T)-beta;                                                                    \
    LRN_BY_KIND(lrn_pow_kind(beta), LRN_BWD_LOOP)                                             \
  }                                                                                           \
  /* backward sweep 2, with acc the window sums of t: dx -= f x sum */                        \
  OPF_VEC static void bwd2_##S(const T_ *restrict add, const T_ *restrict x,                  \
                               const T_ *restrict sub, double *restrict acc,                  \
                               T_ *restrict dx, int64_t n, double f) {                        \
    for (int64_t s = 0; s < n; s++) {                                                         \
      const double a = acc[s] + (double)add[s];                                               \
      dx[s] -= (T_)(f * a) * x[s];                                                            \
      acc[s] = a - (double)sub[s];                                                            \
    }                                                                                         \
  }
LRN_KERNELS(float, f32)
LRN_KERNELS(double, f64)

/* Channel row ch of the block in a tensor, or the zero row outside [0, C). */
static const void *lrn_row(const lrn_ctx *t, const void *base, int64_t n, int64_t ch,
                           int64_t s0, const void *zero) {
  if (ch < 0 || ch >= t->C) return zero;
  return (const char *)base + (size_t)((n * t->C + ch) * t->S + s0) * opf_dtype_size(t->c->dtype);
}

/* Units u = n * nb + b: positions [b * blk, ...) of sample n. Forward: one sweep along the
 * channels with the window sum of x^2. Backward: sweep 1 recomputes the scale and writes
 * dx = g p and t (into the slot) per channel; sweep 2 slides the window sum of t and
 * subtracts the cross term 2 alpha beta / nsize * x * sum t. Slot: the sums (blk doubles),
 * a zero row, then t (C x blk). */
static void lrn_units(int64_t lo, int64_t hi, int tid, void *p) {
  const lrn_ctx *t = p;
  opf_case *c = t->c;
  const int f32 = c->dtype == OPF_F32;
  size_t e = opf_dtype_size(c->dtype);
  double *acc = (double *)((char *)c->ws + (size_t)tid * t->slot);
  char *zero = (char *)(acc + t->blk), *tt = zero + (size_t)t->blk * e;
  const void *X = c->in[0].data, *G = c->gout[0].data;
  memset(zero, 0, (size_t)t->blk * e);
  for (int64_t u = lo; u < hi; u++) {
    int64_t n = u / t->nb, s0 = (u % t->nb) * t->blk;
    int64_t len = t->S - s0 < t->blk ? t->S - s0 : t->blk;
    memset(acc, 0, sizeof(double) * (size_t)len);
    for (int64_t ch = 0; ch < t->h && ch < t->C; ch++) { /* window of channel 0, but c + h */
      const void *x = lrn_row(t, X, n, ch, s0, zero);
      if (f32) sq_add_f32(x, acc, len);
      else sq_add_f64(x, acc, len);
    }
    for (int64_t ch = 0; ch < t->C; ch++) {
      const void *add = lrn_row(t, X, n, ch + t->h, s0, zero);
      const void *sub = lrn_row(t, X, n, ch - t->h, s0, zero);
      const void *x = lrn_row(t, X, n, ch, s0, zero);
      if (!t->bwd) {
        void *y = (void *)lrn_row(t, c->out[0].data, n, ch, s0, zero);
        if (f32) fwd_f32(add, x, sub, acc, y, len, t->k, t->an, t->beta);
        else fwd_f64(add, x, sub, acc, y, len, t->k, t->an, t->beta);
      } else {
        const void *g = lrn_row(t, G, n, ch, s0, zero);
        void *dx = (void *)lrn_row(t, c->gin[0].data, n, ch, s0, zero);
        void *tr = tt + (size_t)(ch * len) * e;
        if (f32) bwd1_f32(add, x, sub, g, acc, dx, tr, len, t->k, t->an, t->beta);
        else bwd1_f64(add, x, sub, g, acc, dx, tr, len, t->k, t->an, t->beta);
      }
    }
    if (!t->bwd) continue;
    double f = 2 * t->an * t->beta;
    memset(acc, 0, sizeof(double) * (size_t)len);
    for (int64_t ch = 0; ch < t->h && ch < t->C; ch++)
      for (int64_t s = 0; s < len; s++) /* the first window of t, with plain adds */
        acc[s] += f32 ? (double)((float *)tt)[ch * len + s] : ((double *)tt)[ch * len + s];
    for (int64_t ch = 0; ch < t->C; ch++) {
      const void *add = ch + t->h < t->C ? tt + (size_t)((ch + t->h) * len) * e : zero;
      const void *sub = ch - t->h >= 0 ? tt + (size_t)((ch - t->h) * len) * e : zero;
      const void *x = lrn_row(t, X, n, ch, s0, zero);
      void *dx = (void *)lrn_row(t, c->gin[0].data, n, ch, s0, zero);
      if (f32) bwd2_f32(add, x, sub, acc, dx, len, f);
      else bwd2_f64(add, x, sub, acc, dx, len, f);
    }
  }
}

static void lrn_run(opf_case *c, int bwd) {
  lrn_ctx t;
  lrn_setup(c, &t);
  t.bwd = bwd;
  int64_t per = t.C * t.blk;
  nc_parallel_slots(t.N * t.nb, (LRN_PAR_MIN + per - 1) / per, nc_slots_threads(c, 0, t.slot),
                    lrn_units, &t);
}

static int lrn_forward(opf_case *c) {
  lrn_run(c, 0);
  return OPF_OK;
}

static int lrn_backward(opf_case *c) {
  if (!c->gin[0].data) return OPF_OK;
  lrn_run(c, 1);
  return OPF_OK;
}

/* Reference: the window sum of squares of every element directly, and pow() from libm. */
static int lrn_reference(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  opf_dtype dt = c->dtype;
  int64_t N = x->shape[0], C = x->shape[1], S = opf_shape_numel(x->ndim - 2, x->shape + 2);
  int64_t h = (int64_t)c->p[P_NSIZE] / 2;
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++)
      for (int64_t s = 0; s < S; s++) {
        double sum = 0;
        for (int64_t c2 = ch - h; c2 <= ch + h; c2++) {
          if (c2 < 0 || c2 >= C) continue;
          double v = nn_ld(x->data, dt, (n * C + c2) * S + s);
          sum += v * v;
        }
        double scale = c->p[P_K] + c->p[P_ALPHA] / c->p[P_NSIZE] * sum;
        int64_t i = (n * C + ch) * S + s;
        nn_st(c->out[0].data, dt, i, nn_ld(x->data, dt, i) * pow(scale, -c->p[P_BETA]));
      }
  return OPF_OK;
}

/* Per element, the textbook count: forward nsize + 4 (a square, nsize - 1 window adds, the
 * scale k + an*sum: mul, add, the power, the product with x); backward 2 nsize + 9 (the
 * forward's scale and power again: nsize + 3; t = g x p / scale: mul, mul, div; the window
 * sum of t: nsize - 1; dx = g p - f x sum: mul, mul, mul, sub). The sliding implementation
 * does fewer adds for large nsize. */
static double lrn_flops(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->in[0]), w = c->p[P_NSIZE];
  return opf_pass_sum(p, (w + 4) * n, (2 * w + 9) * n);
}

/* Forward reads x and writes y; backward reads x and g and writes dx. */
static double lrn_bytes(const opf_case *c, opf_pass p) {
  double b = (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, 2 * b, 3 * b);
}

OPPERF_OP(lrn) = {
    .abi = OPF_OP_ABI,
    .name = "lrn",
    .category = "nn.basic",
    .summary = "local response normalisation across channels, y = x (k + a/n sum x^2)^-b",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "input (N, C, spatial...)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 4,
    .params = {{"nsize", OPF_P_INT, 5, 1, 1e6, NULL, "channels in the window (odd)"},
               {"alpha", OPF_P_FLOAT, 1e-4, 0, 1e6, NULL, "scale of the sum of squares"},
               {"beta", OPF_P_FLOAT, 0.75, 0, 100, NULL, "exponent"},
               {"k", OPF_P_FLOAT, 2, 0, 1e6, NULL, "additive constant (> 0)"}},
    .shapes = {{"standard", "x=32x64x56x56 nsize=5"},
               {"skewed", "x=32x3x10000x10 nsize=5"},
               {"skewed", "x=32x256x13x13 nsize=5"},
               {"small", "x=2x7x3x3"},
               {"small", "x=2x7x3x3 nsize=3 alpha=1 beta=0.5 k=1"},
               {"small", "x=1x4x5 nsize=3 alpha=2"},
               {"small", "x=2x3x2x2 nsize=7 alpha=1"},
               {"small", "x=1x10x1x1 nsize=1 alpha=0.5 beta=1.5"},
               {"small", "x=1x6x2x3 nsize=3 alpha=1 beta=1"},
               {"small", "x=1x9x70 nsize=5 alpha=1"},
               {"test", "x=5x17x61x67 alpha=0.5"},
               {"test", "x=2x33x3x1001 nsize=7 alpha=1"},
               {"large", "x=32x128x112x112 nsize=5"},
               {"huge", "x=64x128x512x513 nsize=5"}},
    .infer = lrn_infer,
    .forward = lrn_forward,
    .backward = lrn_backward,
    .reference = lrn_reference,
    .flops = lrn_flops,
    .bytes = lrn_bytes,
};

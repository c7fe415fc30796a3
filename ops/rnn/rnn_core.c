/* rnn_core.c: the engine of the recurrent family (rnn.h): fused vectorised gate kernels
 * (forward and backward, float32/float64), the cuDNN-style layer-direction drivers (see
 * rnn.h), the workspace layout, the naive double-precision reference and the flops model. */
#include <math.h>

#include "rnn/rnn.h"
#include "unary/vmath.h"

/* ---- activations: branch-free, so the gate loops vectorise ---- */

/* sigmoid via e = exp(-|x|): 1/(1+e) for x >= 0, e/(1+e) below (no overflow, full relative
 * precision for small results). */
VM_INLINE float rnn_sigf(float x) {
  const float e = vm_expf(-__builtin_fabsf(x));
  return vm_self_if(x < 0, e, 1.0f) / (1.0f + e);
}
VM_INLINE double rnn_sigd(double x) {
  const double e = vm_exp(-__builtin_fabs(x));
  return vm_seld_if(x < 0, e, 1.0) / (1.0 + e);
}

/* tanh (Cephes): |x| < 0.625 by an odd polynomial (float32) or rational function (float64),
 * where (1-e)/(1+e) would cancel; above it (1-e)/(1+e) with e = exp(-2|x|) <= 0.29 (no
 * overflow for large |x|). Measured against libm on [-20, 20] in steps of 1e-5: max relative
 * error 1.5e-7 (float32), 4.8e-16 (float64). */
VM_INLINE float rnn_tanhf(float x) {
  const float a = __builtin_fabsf(x), e = vm_expf(-2.0f * a), z = x * x;
  const float big = (1.0f - e) / (1.0f + e);
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  return __builtin_copysignf(vm_self_if(a < 0.625f, p * z * a + a, big), x);
}
VM_INLINE double rnn_tanhd(double x) {
  const double a = __builtin_fabs(x), e = vm_exp(-2.0 * a), z = x * x;
  const double big = (1.0 - e) / (1.0 + e);
  const double p = (-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z -
                   1.61468768441708447952e3;
  const double q = ((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z +
                   4.84406305325125486048e3;
  return __builtin_copysign(vm_seld_if(a < 0.625, a + a * z * (p / q), big), x);
}
#define RNN_SIG(x) _Generic((x), float: rnn_sigf, double: rnn_sigd)(x)
#define RNN_TANH(x) _Generic((x), float: rnn_tanhf, double: rnn_tanhd)(x)

/* ---- gate kernels over n consecutive hidden units of one batch row ----
 * Each gate block is its own restrict pointer (blocks H apart in a row of G*H), so the
 * compiler vectorises without runtime overlap checks. Forward kernels turn the summed
 * pre-activations into activations in place (what backward needs); the bias pointers (read
 * only) index gate blocks at multiples of H. */
#define RNN_KERNELS(T, S)                                                                      \
  OPF_VEC static void lstm_fwd_##S(int64_t n, int64_t H, T *restrict gi, T *restrict gf,      \
                                   T *restrict gg, T *restrict go, const T *restrict b,       \
                                   const T *restrict cp, T *restrict cs, T *restrict h) {     \
    for (int64_t j = 0; j < n; j++) {                                                          \
      const T i = RNN_SIG(gi[j] + b[j]), f = RNN_SIG(gf[j] + b[H + j]);                        \
      const T g = RNN_TANH(gg[j] + b[2 * H + j]), o = RNN_SIG(go[j] + b[3 * H + j]);           \
      const T c = f * cp[j] + i * g;                                                           \
      gi[j] = i, gf[j] = f, gg[j] = g, go[j] = o;                                              \
      cs[j] = c;                                                                               \
      h[j] = o * RNN_TANH(c);                                                                  \
    }                                                                                          \
  }                                                                                            \
  /* dh = dy + dhr (from above and from the next step); dc carries the cell gradient back */  \
  OPF_VEC static void lstm_bwd_##S(int64_t n, const T *restrict gi, const T *restrict gf,     \
                                   const T *restrict gg, const T *restrict go,                \
                                   const T *restrict cs, const T *restrict cp,                \
                                   const T *restrict dy, const T *restrict dhr,               \
                                   T *restrict dc, T *restrict di, T *restrict df,            \
                                   T *restrict dg, T *restrict dout) {                        \
    for (int64_t j = 0; j < n; j++) {                                                          \
      const T i = gi[j], f = gf[j], g = gg[j], o = go[j], tc = RNN_TANH(cs[j]);                \
      const T dh = dy[j] + dhr[j], dcc = dc[j] + dh * o * (1 - tc * tc);                       \
      di[j] = dcc * g * i * (1 - i);                                                           \
      df[j] = dcc * cp[j] * f * (1 - f);                                                       \
      dg[j] = dcc * i * (1 - g * g);                                                           \
      dout[j] = dh * tc * o * (1 - o);                                                         \
      dc[j] = dcc * f;                                                                         \
    }                                                                                          \
  }                                                                                            \
  /* hh: the step's W_hh h (3 blocks); bi, bh: b_ih, b_hh; hn saves W_hn h + b_hn */           \
  OPF_VEC static void gru_fwd_##S(int64_t n, int64_t H, T *restrict gr, T *restrict gz,       \
                                  T *restrict gn, const T *restrict hh, const T *restrict bi, \
                                  const T *restrict bh, const T *restrict hp,                 \
                                  T *restrict hn, T *restrict h) {                            \
    for (int64_t j = 0; j < n; j++) {                                                          \
      const T r = RNN_SIG(gr[j] + bi[j] + hh[j] + bh[j]);                                      \
      const T z = RNN_SIG(gz[j] + bi[H + j] + hh[H + j] + bh[H + j]);                          \
      const T a = hh[2 * H + j] + bh[2 * H + j];                                               \
      const T m = RNN_TANH(gn[j] + bi[2 * H + j] + r * a);                                     \
      gr[j] = r, gz[j] = z, gn[j] = m, hn[j] = a;                                              \
      h[j] = (1 - z) * m + z * hp[j];                                                          \
    }                                                                                          \
  }                                                                                            \
  /* d* are the gradients of the input projection's blocks, dh* of the hidden one's (they     \
   * differ in the n block, which r scales); dhr becomes the direct term z dh */              \
  OPF_VEC static void gru_bwd_##S(int64_t n, const T *restrict gr, const T *restrict gz,      \
                                  const T *restrict gn, const T *restrict hn,                 \
                                  const T *restrict hp, const T *restrict dy,                 \
                                  T *restrict dhr, T *restrict dr, T *restrict dz,            \
                                  T *restrict dn, T *restrict dhhr, T *restrict dhhz,         \
                                  T *restrict dhhn) {                                         \
    for (int64_t j = 0; j < n; j++) {                                                          \
      const T r = gr[j], z = gz[j], m = gn[j], dh = dy[j] + dhr[j];                            \
      const T an = dh * (1 - z) * (1 - m * m), ar = an * hn[j] * r * (1 - r);                  \
      const T az = dh * (hp[j] - m) * z * (1 - z);                                             \
      dr[j] = ar, dz[j] = az, dn[j] = an;                                                      \
      dhhr[j] = ar, dhhz[j] = az, dhhn[j] = an * r;                                            \
      dhr[j] = dh * z;                                                                         \
    }                                                                                          \
  }                                                                                            \
  OPF_VEC static void tanh_fwd_##S(int64_t n, T *restrict y, const T *restrict b) {           \
    for (int64_t j = 0; j < n; j++) y[j] = RNN_TANH(y[j] + b[j]);                              \
  }                                                                                            \
  OPF_VEC static void relu_fwd_##S(int64_t n, T *restrict y, const T *restrict b) {           \
    for (int64_t j = 0; j < n; j++) {                                                          \
      const T a = y[j] + b[j];                                                                 \
      y[j] = a > 0 ? a : 0;                                                                    \
    }                                                                                          \
  }                                                                                            \
  OPF_VEC static void tanh_bwd_##S(int64_t n, const T *restrict y, const T *restrict dy,      \
                                   const T *restrict dhr, T *restrict dg) {                   \
    for (int64_t j = 0; j < n; j++) dg[j] = (dy[j] + dhr[j]) * (1 - y[j] * y[j]);              \
  }                                                                                            \
  OPF_VEC static void relu_bwd_##S(int64_t n, const T *restrict y, const T *restrict dy,      \
                                   const T *restrict dhr, T *restrict dg) {                   \
    for (int64_t j = 0; j < n; j++) dg[j] = y[j] > 0 ? dy[j] + dhr[j] : 0;                     \
  }
RNN_KERNELS(float, f32)
RNN_KERNELS(double, f64)

/* ---- one step's gate pass ---- */

/* Views of one step (element pointers; rows of the batch are ld apart). */
typedef struct rnn_step {
  const rnn_geom *g;
  int bwd;
  char *gates;             /* (N, G*H): lstm/gru pre-activations, then activations */
  const char *hh;          /* gru: (N, 3H) W_hh h */
  const char *bias;        /* [b_ih + b_hh (lstm, rnn) or b_ih (gru); b_hh], G*H each */
  const char *hp;          /* previous h, rows ldhp apart */
  int64_t ldhp;
  const char *cp;          /* lstm: previous c (N, H) */
  char *cs;                /* lstm: c_t; gru: W_hn h + b_hn (N, H) */
  char *y;                 /* h_t, rows ldy apart */
  int64_t ldy;
  const char *dy;          /* gradient arriving at h_t from above, rows lddy apart */
  int64_t lddy;
  char *dhr, *dc;          /* (N, H): gradient from the next step, in and out */
  char *dg, *dgh;          /* (N, G*H): gradients of the input / hidden projections */
} rnn_step;

/* Hidden units [j, j+n) of batch row r. */
#define RNN_PIECE(T, S)                                                                        \
  static void piece_##S(const rnn_step *s, int64_t r, int64_t j, int64_t n) {                  \
    const int64_t H = s->g->H, GH = H * rnn_ngates(s->g->kind), o = r * H + j;                 \
    T *g = s->gates ? (T *)s->gates + r * GH + j : NULL, *y = (T *)s->y + r * s->ldy + j;      \
    const T *b = (const T *)s->bias + j, *hp = (const T *)s->hp + r * s->ldhp + j;             \
    if (!s->bwd) {                                                                             \
      switch (s->g->kind) {                                                                    \
      case RNN_LSTM:                                                                           \
        lstm_fwd_##S(n, H, g, g + H, g + 2 * H, g + 3 * H, b, (const T *)s->cp + o,            \
                     (T *)s->cs + o, y);                                                       \
        break;                                                                                 \
      case RNN_GRU:                                                                            \
        gru_fwd_##S(n, H, g, g + H, g + 2 * H, (const T *)s->hh + r * GH + j, b, b + GH, hp,   \
                    (T *)s->cs + o, y);                                                        \
        break;                                                                                 \
      case RNN_TANH: tanh_fwd_##S(n, y, b); break;                                             \
      default: relu_fwd_##S(n, y, b); break;                                                   \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    const T *dy = (const T *)s->dy + r * s->lddy + j;                                          \
    T *dhr = (T *)s->dhr + o, *dg = (T *)s->dg + r * GH + j;                                   \
    switch (s->g->kind) {                                                                      \
    case RNN_LSTM:                                                                             \
      lstm_bwd_##S(n, g, g + H, g + 2 * H, g + 3 * H, (const T *)s->cs + o,                    \
                   (const T *)s->cp + o, dy, dhr, (T *)s->dc + o, dg, dg + H, dg + 2 * H,      \
                   dg + 3 * H);                                                                \
      break;                                                                                   \
    case RNN_GRU: {                                                                            \
      T *dh = (T *)s->dgh + r * GH + j;                                                        \
      gru_bwd_##S(n, g, g + H, g + 2 * H, (const T *)s->cs + o, hp, dy, dhr, dg, dg + H,       \
                  dg + 2 * H, dh, dh + H, dh + 2 * H);                                         \
      break;                                                                                   \
    }                                                                                          \
    case RNN_TANH: tanh_bwd_##S(n, y, dy, dhr, dg); break;                                     \
    default: relu_bwd_##S(n, y, dy, dhr, dg); break;                                           \
    }                                                                                          \
  }
RNN_PIECE(float, f32)
RNN_PIECE(double, f64)

/* Flat range [lo, hi) of the step's N*H hidden units, cut at row ends: a batch of 1 still
 * splits between threads. */
static void step_range(int64_t lo, int64_t hi, void *p) {
  const rnn_step *s = p;
  const int64_t H = s->g->H;
  for (int64_t k = lo; k < hi;) {
    const int64_t r = k / H, j = k - r * H, n = (hi - k < H - j) ? hi - k : H - j;
    if (s->g->dt == OPF_F32) piece_f32(s, r, j, n);
    else piece_f64(s, r, j, n);
    k += n;
  }
}

/* Hidden units per step below which the gate pass stays on one thread. An lstm/gru unit is 5
 * exp-class functions (measured: the lstm forward gate pass of 32x512 units takes ~26 us, 1.6
 * ns a unit, 2% of the layer's forward), an rnn unit one tanh or a max. unary_map.h puts the
 * break-even of waking the second thread at 4096 libm-class elements; 4096 lstm units (~6 us)
 * are comfortably past it, tanh needs twice as many, relu as many as a copy. */
static int64_t step_par_min(rnn_kind k) {
  return k == RNN_LSTM || k == RNN_GRU ? 4096 : k == RNN_TANH ? 8192 : OPF_PAR_MIN;
}

static void run_step(rnn_step *s) {
  opf_parallel_range(s->g->N * s->g->H, step_par_min(s->g->kind), step_range, s);
}

/* ---- workspace ---- */

/* Byte offsets in c->ws. Forward writes (and backward reads) ymid, gates, cs; the rest is
 * scratch, backward's apart from forward's so backward can run twice on one forward. */
typedef struct rnn_ws {
  size_t ymid;  /* (L-1) x (T, N, D*H): outputs of the layers below the top */
  size_t gates; /* L*D x (T, N, G*H): lstm/gru activations (rnn: none, h_t is enough) */
  size_t cs;    /* L*D x (T, N, H): lstm c_t, gru W_hn h + b_hn */
  size_t bias;  /* 2 G*H: the direction's biases, combined for lstm and rnn */
  size_t zeros; /* (N, H) zeros: absent initial states and output gradients */
  size_t hh;    /* gru: (N, 3H) W_hh h of the current step */
  size_t dg;    /* (T, N, G*H): gradient of the input projection */
  size_t dgh;   /* gru: (T, N, G*H): gradient of the hidden projection (lstm/rnn: = dg) */
  size_t dyb;   /* min(L-1, 2) x (T, N, D*H): gradients of the lower layers' outputs */
  size_t dhr, dc; /* (N, H): recurrent gradients of h and c */
  size_t ones;  /* (T*N) ones: bias gradients as a GEMV */
  size_t total;
} rnn_ws;

static void ws_layout(const rnn_geom *g, rnn_ws *w) {
  const size_t es = opf_dtype_size(g->dt);
  const int64_t GH = rnn_ngates(g->kind) * g->H, TN = g->T * g->N, DH = g->D * g->H;
  const int64_t LD = (int64_t)g->L * g->D, NH = g->N * g->H;
  const int gated = g->kind == RNN_LSTM || g->kind == RNN_GRU, gru = g->kind == RNN_GRU;
  size_t off = 0;
#define RNN_REGION(f, elems) (w->f = off, off += ((size_t)(elems) * es + 63) & ~(size_t)63)
  RNN_REGION(ymid, (int64_t)(g->L - 1) * TN * DH);
  RNN_REGION(gates, gated ? LD * TN * GH : 0);
  RNN_REGION(cs, gated ? LD * TN * g->H : 0);
  RNN_REGION(bias, 2 * GH);
  RNN_REGION(zeros, NH);
  RNN_REGION(hh, gru ? g->N * GH : 0);
  RNN_REGION(dg, TN * GH);
  RNN_REGION(dgh, gru ? TN * GH : 0);
  RNN_REGION(dyb, (g->L > 2 ? 2 : g->L - 1) * TN * DH);
  RNN_REGION(dhr, NH);
  RNN_REGION(dc, NH);
  RNN_REGION(ones, TN);
#undef RNN_REGION
  w->total = off;
}

size_t rnn_ws_bytes(const rnn_geom *g) {
  rnn_ws w;
  ws_layout(g, &w);
  return w.total;
}

int64_t rnn_param_count(const rnn_geom *g) {
  const int64_t GH = rnn_ngates(g->kind) * g->H;
  int64_t n = 0;
  for (int l = 0; l < g->L; l++) n += g->D * GH * (rnn_in_size(g, l) + g->H + 2);
  return n;
}

/* ---- layer-direction drivers ---- */

/* One layer direction's operands: x (T*N, Il) contiguous; y its H columns of the layer's
 * (T, N, D*H) output (ld D*H); h0, c0 (N, H) or NULL; saved gates and cs. */
typedef struct rnn_dir {
  const rnn_wts *w;
  int64_t Il, ldy;
  const char *x, *h0, *c0;
  char *y, *gates, *cs;
  int reverse;
} rnn_dir;

#define RNN_AT(p, elems) ((p) + (size_t)(elems) * es)

/* lin_gemm by linalg.h's own float32 kernels (GEMV at batch 1, outer products, threaded
 * blocks), or by OpenBLAS when g->blas. */
static void rnn_gemm(const rnn_geom *g, int ta, int tb, int64_t M, int64_t N, int64_t K,
                     const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C,
                     int64_t ldc) {
  lin_gemm_own(g->blas, g->dt, ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

/* The direction's bias vector(s) into bias: [b_ih + b_hh; b_hh], or [b_ih; b_hh] for gru
 * (whose b_hn sits inside r's product). Absent biases are zeros. */
static void set_bias(const rnn_geom *g, const rnn_wts *w, char *bias) {
  const int64_t GH = rnn_ngates(g->kind) * g->H;
  for (int64_t q = 0; q < GH; q++) {
    const double bi = w->bih ? lin_get(g->dt, w->bih, q) : 0, bh = w->bhh ? lin_get(g->dt, w->bhh, q) : 0;
    lin_set(g->dt, bias, q, g->kind == RNN_GRU ? bi : bi + bh);
    lin_set(g->dt, bias, GH + q, bh);
  }
}

/* Rows of the previous step: h (and lstm's c; cp is unused otherwise) of step k-1 in
 * processing order, or the initial states (zeros when absent). */
static void step_prev(const rnn_geom *g, const rnn_dir *d, int64_t k, int64_t t, rnn_step *s,
                      const char *zeros) {
  const size_t es = opf_dtype_size(g->dt);
  const int64_t N = g->N, H = g->H, tp = d->reverse ? t + 1 : t - 1;
  if (k > 0) {
    s->hp = RNN_AT(d->y, tp * N * d->ldy), s->ldhp = d->ldy;
    s->cp = d->cs ? RNN_AT(d->cs, tp * N * H) : NULL;
  } else {
    s->hp = d->h0 ? d->h0 : zeros, s->ldhp = H;
    s->cp = d->c0 ? d->c0 : zeros;
  }
}

static void dir_forward(const rnn_geom *g, const rnn_dir *d, const rnn_ws *L, char *ws, char *hy,
                        char *cy) {
  const opf_dtype dt = g->dt;
  const size_t es = opf_dtype_size(dt);
  const int64_t T = g->T, N = g->N, H = g->H, GH = rnn_ngates(g->kind) * H;
  char *zeros = ws + L->zeros, *hh = ws + L->hh;
  set_bias(g, d->w, ws + L->bias);
  /* input projection of all T steps: (T*N, Il) x W_ih^T; rnn's goes straight into y */
  if (d->gates) rnn_gemm(g, 0, 1, T * N, GH, d->Il, d->x, d->Il, d->w->wih, d->Il, 0.0, d->gates, GH);
  else rnn_gemm(g, 0, 1, T * N, H, d->Il, d->x, d->Il, d->w->wih, d->Il, 0.0, d->y, d->ldy);
  rnn_step s = {.g = g, .bias = ws + L->bias, .hh = hh, .ldy = d->ldy};
  for (int64_t k = 0; k < T; k++) {
    const int64_t t = d->reverse ? T - 1 - k : k;
    step_prev(g, d, k, t, &s, zeros);
    const int have_h = k > 0 || d->h0; /* else h W_hh^T is zero: skip the GEMM */
    s.y = RNN_AT(d->y, t * N * d->ldy);
    if (d->gates) s.gates = RNN_AT(d->gates, t * N * GH), s.cs = RNN_AT(d->cs, t * N * H);
    if (g->kind == RNN_LSTM) {
      if (have_h) rnn_gemm(g, 0, 1, N, GH, H, s.hp, s.ldhp, d->w->whh, H, 1.0, s.gates, GH);
    } else if (g->kind == RNN_GRU) {
      if (have_h) rnn_gemm(g, 0, 1, N, GH, H, s.hp, s.ldhp, d->w->whh, H, 0.0, hh, GH);
      else memset(hh, 0, (size_t)(N * GH) * es);
    } else if (have_h) {
      rnn_gemm(g, 0, 1, N, H, H, s.hp, s.ldhp, d->w->whh, H, 1.0, s.y, d->ldy);
    }
    run_step(&s);
  }
  const int64_t tl = d->reverse ? 0 : T - 1; /* the last step processed */
  if (hy)
    for (int64_t r = 0; r < N; r++)
      memcpy(RNN_AT(hy, r * H), RNN_AT(d->y, (tl * N + r) * d->ldy), (size_t)H * es);
  if (cy && g->kind == RNN_LSTM) memcpy(cy, RNN_AT(d->cs, tl * N * H), (size_t)(N * H) * es);
}

/* Gradients flowing into one layer direction (NULL: zero) and out of it (NULL: not wanted). */
typedef struct rnn_dgrad {
  const char *dy; /* the direction's columns of dL/dy, rows ldy apart */
  const char *dhy, *dcy;
  char *dh0, *dc0, *dx;
  double beta_dx; /* 1: add to dx (the second direction) */
} rnn_dgrad;

/* Weight, bias and input gradients of a direction from its dG (and gru's dGh) over all steps:
 * big GEMMs with K = T*N. */
static void dir_weight_grads(const rnn_geom *g, const rnn_dir *d, const rnn_dgrad *gr,
                             const char *dg, const char *dgh, const char *ones) {
  const opf_dtype dt = g->dt;
  const size_t es = opf_dtype_size(dt);
  const int64_t T = g->T, N = g->N, H = g->H, GH = rnn_ngates(g->kind) * H, TN = T * N;
  const rnn_wts *w = d->w;
  if (w->dwih) rnn_gemm(g, 1, 0, GH, d->Il, TN, dg, GH, d->x, d->Il, 0.0, w->dwih, d->Il);
  if (w->dwhh) { /* step t pairs dGh_t with its previous h: y one step back, or h0 */
    double beta = 0;
    if (T > 1) {
      const char *A = d->reverse ? dgh : RNN_AT(dgh, N * GH);
      const char *B = d->reverse ? RNN_AT(d->y, N * d->ldy) : d->y;
      rnn_gemm(g, 1, 0, GH, H, (T - 1) * N, A, GH, B, d->ldy, 0.0, w->dwhh, H);
      beta = 1;
    }
    if (d->h0) {
      const char *A = d->reverse ? RNN_AT(dgh, (T - 1) * N * GH) : dgh;
      rnn_gemm(g, 1, 0, GH, H, N, A, GH, d->h0, H, beta, w->dwhh, H);
    } else if (T == 1) {
      memset(w->dwhh, 0, (size_t)(GH * H) * es);
    }
  }
  /* column sums as GEMV: db (1, GH) = ones (1, TN) x dG (TN, GH) */
  if (w->dbih) rnn_gemm(g, 0, 0, 1, GH, TN, ones, TN, dg, GH, 0.0, w->dbih, GH);
  if (w->dbhh) {
    if (g->kind == RNN_GRU || !w->dbih) rnn_gemm(g, 0, 0, 1, GH, TN, ones, TN, dgh, GH, 0.0, w->dbhh, GH);
    else memcpy(w->dbhh, w->dbih, (size_t)GH * es);
  }
  if (gr->dx) rnn_gemm(g, 0, 0, TN, d->Il, GH, dg, GH, w->wih, d->Il, gr->beta_dx, gr->dx, d->Il);
}

static void dir_backward(const rnn_geom *g, const rnn_dir *d, const rnn_dgrad *gr,
                         const rnn_ws *L, char *ws) {
  const opf_dtype dt = g->dt;
  const size_t es = opf_dtype_size(dt);
  const int64_t T = g->T, N = g->N, H = g->H, GH = rnn_ngates(g->kind) * H, NH = N * H;
  const int gru = g->kind == RNN_GRU;
  char *zeros = ws + L->zeros, *dg = ws + L->dg, *dgh = gru ? ws + L->dgh : dg;
  char *dhr = ws + L->dhr, *dc = ws + L->dc;
  if (gr->dhy) memcpy(dhr, gr->dhy, (size_t)NH * es);
  else memset(dhr, 0, (size_t)NH * es);
  if (gr->dcy) memcpy(dc, gr->dcy, (size_t)NH * es);
  else memset(dc, 0, (size_t)NH * es);
  rnn_step s = {.g = g, .bwd = 1, .ldy = d->ldy, .dhr = dhr, .dc = dc};
  for (int64_t k = T - 1; k >= 0; k--) {
    const int64_t t = d->reverse ? T - 1 - k : k;
    step_prev(g, d, k, t, &s, zeros);
    s.y = RNN_AT(d->y, t * N * d->ldy);
    if (d->gates) s.gates = RNN_AT(d->gates, t * N * GH), s.cs = RNN_AT(d->cs, t * N * H);
    s.dy = gr->dy ? RNN_AT(gr->dy, t * N * d->ldy) : zeros;
    s.lddy = gr->dy ? d->ldy : H;
    s.dg = RNN_AT(dg, t * N * GH), s.dgh = RNN_AT(dgh, t * N * GH);
    run_step(&s);
    /* dh of the previous step: dGh_t W_hh (gru adds it to its direct term z dh) */
    if (k > 0 || gr->dh0)
      rnn_gemm(g, 0, 0, N, H, GH, s.dgh, GH, d->w->whh, H, gru ? 1.0 : 0.0, dhr, H);
  }
  if (gr->dh0) memcpy(gr->dh0, dhr, (size_t)NH * es);
  if (gr->dc0) memcpy(gr->dc0, dc, (size_t)NH * es);
  dir_weight_grads(g, d, gr, dg, dgh, ws + L->ones);
}

/* The operands of layer l, direction dn. */
static void dir_of(const rnn_geom *g, const rnn_bind *b, const rnn_ws *L, char *ws, int l,
                   int dn, rnn_dir *d) {
  const size_t es = opf_dtype_size(g->dt);
  const int64_t TN = g->T * g->N, DH = g->D * g->H, NH = g->N * g->H;
  const int64_t GH = rnn_ngates(g->kind) * g->H, ld = (int64_t)l * g->D + dn;
  char *y = l == g->L - 1 ? b->y : ws + L->ymid + (size_t)((l * TN * DH)) * es;
  const int gated = g->kind == RNN_LSTM || g->kind == RNN_GRU;
  *d = (rnn_dir){.w = &b->w[ld],
                 .Il = rnn_in_size(g, l),
                 .ldy = DH,
                 .x = l ? ws + L->ymid + (size_t)((l - 1) * TN * DH) * es : b->x,
                 .h0 = b->h0 ? RNN_AT((const char *)b->h0, ld * NH) : NULL,
                 .c0 = b->c0 ? RNN_AT((const char *)b->c0, ld * NH) : NULL,
                 .y = RNN_AT(y, dn * g->H),
                 .gates = gated ? ws + L->gates + (size_t)(ld * TN * GH) * es : NULL,
                 .cs = gated ? ws + L->cs + (size_t)(ld * NH * g->T) * es : NULL,
                 .reverse = dn == 1};
}

int rnn_forward(const rnn_geom *g, const rnn_bind *b, void *wsp) {
  rnn_ws L;
  ws_layout(g, &L);
  char *ws = wsp;
  const size_t es = opf_dtype_size(g->dt);
  const int64_t NH = g->N * g->H;
  memset(ws + L.zeros, 0, (size_t)NH * es);
  for (int l = 0; l < g->L; l++)
    for (int dn = 0; dn < g->D; dn++) {
      rnn_dir d;
      dir_of(g, b, &L, ws, l, dn, &d);
      const int64_t ld = (int64_t)l * g->D + dn;
      dir_forward(g, &d, &L, ws, b->hy ? RNN_AT((char *)b->hy, ld * NH) : NULL,
                  b->cy ? RNN_AT((char *)b->cy, ld * NH) : NULL);
    }
  return OPF_OK;
}

int rnn_backward(const rnn_geom *g, const rnn_bind *b, void *wsp) {
  rnn_ws L;
  ws_layout(g, &L);
  char *ws = wsp;
  const size_t es = opf_dtype_size(g->dt);
  const int64_t TN = g->T * g->N, DH = g->D * g->H, NH = g->N * g->H;
  memset(ws + L.zeros, 0, (size_t)NH * es);
  for (int64_t k = 0; k < TN; k++) lin_set(g->dt, ws + L.ones, k, 1.0);
  for (int l = g->L - 1; l >= 0; l--) {
    /* dL/dy of layer l: the output's gradient on top, else what layer l+1 computed (two
     * buffers alternate: layer l reads one while writing the other for layer l-1) */
    const char *dyl = l == g->L - 1 ? b->dy : ws + L.dyb + (size_t)((l % 2) * TN * DH) * es;
    char *dxl = l ? ws + L.dyb + (size_t)(((l - 1) % 2) * TN * DH) * es : b->dx;
    for (int dn = 0; dn < g->D; dn++) {
      rnn_dir d;
      dir_of(g, b, &L, ws, l, dn, &d);
      const int64_t ld = (int64_t)l * g->D + dn;
      rnn_dgrad gr = {.dy = dyl ? RNN_AT(dyl, dn * g->H) : NULL,
                      .dhy = b->dhy ? RNN_AT((const char *)b->dhy, ld * NH) : NULL,
                      .dcy = b->dcy ? RNN_AT((const char *)b->dcy, ld * NH) : NULL,
                      .dh0 = b->dh0 ? RNN_AT((char *)b->dh0, ld * NH) : NULL,
                      .dc0 = b->dc0 ? RNN_AT((char *)b->dc0, ld * NH) : NULL,
                      .dx = dxl,
                      .beta_dx = dn ? 1.0 : 0.0};
      dir_backward(g, &d, &gr, &L, ws);
    }
  }
  return OPF_OK;
}

/* ---- reference: the definitions, step by step, in double ---- */

static double ref_sig(double a) { return 1 / (1 + exp(-a)); }

/* One new h (and c) element from the summed projections gi (W_ih x + b_ih) and gh
 * (W_hh h + b_hh) of gate blocks H apart. */
static double ref_unit(rnn_kind k, const double *gi, const double *gh, int64_t H, double h,
                       double *c) {
  switch (k) {
  case RNN_RELU: return gi[0] + gh[0] > 0 ? gi[0] + gh[0] : 0;
  case RNN_TANH: return tanh(gi[0] + gh[0]);
  case RNN_LSTM: {
    double i = ref_sig(gi[0] + gh[0]), f = ref_sig(gi[H] + gh[H]);
    double g = tanh(gi[2 * H] + gh[2 * H]), o = ref_sig(gi[3 * H] + gh[3 * H]);
    *c = f * *c + i * g;
    return o * tanh(*c);
  }
  default: {
    double r = ref_sig(gi[0] + gh[0]), z = ref_sig(gi[H] + gh[H]);
    double n = tanh(gi[2 * H] + r * gh[2 * H]);
    return (1 - z) * n + z * h;
  }
  }
}

int rnn_reference(opf_case *c, const rnn_geom *g, const rnn_bind *b) {
  const opf_dtype dt = g->dt;
  const int64_t T = g->T, N = g->N, H = g->H, D = g->D, DH = D * H, TN = T * N;
  const int64_t GH = rnn_ngates(g->kind) * H, wide = g->In > DH ? g->In : DH;
  double *in = opf_alloc(sizeof(double) * (size_t)(TN * wide));
  double *out = opf_alloc(sizeof(double) * (size_t)(TN * DH));
  double *h = opf_alloc(sizeof(double) * (size_t)(N * H)), *cc = opf_alloc(sizeof(double) * (size_t)(N * H));
  double *gi = opf_alloc(sizeof(double) * (size_t)GH), *gh = opf_alloc(sizeof(double) * (size_t)GH);
  int rc = OPF_OK;
  if (!in || !out || !h || !cc || !gi || !gh) {
    rc = opf_case_error(c, OPF_ENOMEM, "reference: out of memory");
    goto done;
  }
  for (int64_t k = 0; k < TN * g->In; k++) in[k] = lin_get(dt, b->x, k);
  for (int l = 0; l < g->L; l++) {
    const int64_t Il = rnn_in_size(g, l);
    for (int dn = 0; dn < D; dn++) {
      const int64_t ld = (int64_t)l * D + dn;
      const rnn_wts *w = &b->w[ld];
      for (int64_t k = 0; k < N * H; k++) {
        h[k] = b->h0 ? lin_get(dt, b->h0, ld * N * H + k) : 0;
        cc[k] = b->c0 ? lin_get(dt, b->c0, ld * N * H + k) : 0;
      }
      for (int64_t s = 0; s < T; s++) {
        const int64_t t = dn ? T - 1 - s : s;
        for (int64_t n = 0; n < N; n++) {
          for (int64_t q = 0; q < GH; q++) {
            double a = w->bih ? lin_get(dt, w->bih, q) : 0, e = w->bhh ? lin_get(dt, w->bhh, q) : 0;
            for (int64_t i = 0; i < Il; i++) a += lin_get(dt, w->wih, q * Il + i) * in[(t * N + n) * Il + i];
            for (int64_t j = 0; j < H; j++) e += lin_get(dt, w->whh, q * H + j) * h[n * H + j];
            gi[q] = a, gh[q] = e;
          }
          for (int64_t j = 0; j < H; j++) { /* h[n] is read only at j: update in place */
            h[n * H + j] = ref_unit(g->kind, gi + j, gh + j, H, h[n * H + j], &cc[n * H + j]);
            out[(t * N + n) * DH + dn * H + j] = h[n * H + j];
          }
        }
      }
      for (int64_t k = 0; k < N * H; k++) {
        if (b->hy) lin_set(dt, b->hy, ld * N * H + k, h[k]);
        if (b->cy) lin_set(dt, b->cy, ld * N * H + k, cc[k]);
      }
    }
    memcpy(in, out, sizeof(double) * (size_t)(TN * DH)); /* the next layer's input */
  }
  for (int64_t k = 0; k < TN * DH; k++) lin_set(dt, b->y, k, out[k]);
done:
  opf_free(in), opf_free(out), opf_free(h), opf_free(cc), opf_free(gi), opf_free(gh);
  return rc;
}

/* ---- models ---- */

/* Gate elementwise flops per hidden unit and step, counting sigmoid and tanh as 3 each (exp,
 * add, divide, as the sigmoid operator does):
 *   fwd  relu 2 (bias add, max); tanh 4 (bias add, tanh);
 *        lstm 23: 4 bias adds, 3 sigmoids (9), 2 tanh (6), c' = f c + i g (3), h' = o tc (1);
 *        gru 23: r, z 3 adds + sigmoid each (12), W_hn h + b_hn (1), n 3 + tanh (6),
 *             h' = (1-z) n + z h (4);
 *   bwd  relu 2 (dh = dy + dhr, select); tanh 4 (dh, (1 - y^2) dh);
 *        lstm 26: dh (1), tanh(c) (3), dc (5), four gate derivatives (16), dc f (1);
 *        gru 17: dh (1), a_n (5), a_r (4), a_z (5), r a_n (1), z dh (1). */
static const double rnn_ew_fwd[] = {2, 4, 23, 23}, rnn_ew_bwd[] = {2, 4, 26, 17};

/* Per layer direction, with K_l = I_l (input) and steps s = T (T-1 without h0: the first
 * step's h W_hh^T is zero and skipped):
 *   fwd: 2 TN GH I_l (input projection) + 2 s N H GH (recurrent) + ew_fwd T N H;
 *   bwd: 2 TN GH I_l twice (dW_ih, dx) + 2 s N H GH twice (dh through W_hh, dW_hh)
 *        + TN GH per bias vector summed (one for lstm/rnn, whose db_hh = db_ih; two for gru)
 *        + ew_bwd T N H. */
double rnn_flops(const rnn_geom *g, opf_pass p) {
  const double T = (double)g->T, N = (double)g->N, H = (double)g->H, TN = T * N;
  const double GH = rnn_ngates(g->kind) * H, steps = g->has_h0 ? T : T - 1;
  double fwd = 0, bwd = 0;
  for (int l = 0; l < g->L; l++) {
    const double Il = (double)rnn_in_size(g, l);
    fwd += g->D * (2 * TN * GH * Il + 2 * steps * N * H * GH + rnn_ew_fwd[g->kind] * TN * H);
    bwd += g->D * (4 * TN * GH * Il + 4 * steps * N * H * GH + rnn_ew_bwd[g->kind] * TN * H +
                   (g->has_bias ? (g->kind == RNN_GRU ? 2 : 1) * TN * GH : 0));
  }
  return opf_pass_sum(p, fwd, bwd);
}

int rnn_fill_weights(opf_case *c, int i, opf_rng *r) {
  (void)r;
  const opf_tensor *o = &c->out[c->op->n_out - 1];
  const int64_t H = o->shape[o->ndim - 1];
  const double s = 1.0 / sqrt((double)(H > 0 ? H : 1));
  opf_fill_uniform(&c->in[i], c->seed, (uint64_t)i, -s, s);
  return OPF_OK;
}

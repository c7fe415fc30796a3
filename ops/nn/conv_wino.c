/* conv_wino.c: Winograd F(4x4, 3x3) convolution for 2-D float32 convolutions (NCHW or NHWC:
 * the transforms read and write either through strides) with a 3x3 window, stride 1,
 * dilation 1 and one group (conv_core.h: nn_wino_*). Each 4x4 output tile costs 36 multiplies per channel pair instead of 144: the input tiles (6x6,
 * overlapping by 2) are transformed to V = B^T d B, the weights to U = G g G^T, the 36
 * element-wise products summed over channels are 36 GEMMs through OpenBLAS
 * (M[xi] = U[xi] V[xi], F x C times C x tiles), and Y = A^T M A gives the outputs. Work items
 * are blocks of tile rows of one image, sized so V and M stay in L2; threads take whole items
 * with single-threaded GEMMs, as in the im2col core. The data gradient of such a convolution
 * is the same convolution of the output gradient with the flipped, transposed weight and
 * padding 2 - pad, so one driver serves both. The transforms run on 8-float GCC vectors
 * across all the tiles of an item (contiguous arrays only), in the runtime ISA clones of
 * opf_kernel.h; the same source builds for arm64 (NEON pairs) and the baseline. */
#include <string.h>

#include "conv_wino.h"
#include "linalg/linalg.h"

/* Bytes of V plus M per work item: both stay in the core's L2 (1 MB on Zen 5) between the
 * input transform, the GEMMs and the output transform. */
#define WINO_BLOCK_BYTES ((int64_t)768 << 10)

int nn_wino_fits(const nn_conv_geom *g, opf_dtype dt) {
  return dt == OPF_F32 && g->nd == 2 && g->groups == 1 && g->k[1] == 3 &&
         g->k[2] == 3 && g->s[1] == 1 && g->s[2] == 1 && g->d[1] == 1 && g->d[2] == 1 &&
         g->p[1] <= 2 && g->p[2] <= 2;
}

static void plan_of(wino_plan *p, int64_t N, int64_t Ci, int64_t Co, int64_t Hi, int64_t Wi,
                    int64_t ph, int64_t pw, int nhwc) {
  p->N = N, p->Ci = Ci, p->Co = Co, p->Hi = Hi, p->Wi = Wi, p->ph = ph, p->pw = pw;
  p->Ho = Hi + 2 * ph - 2, p->Wo = Wi + 2 * pw - 2;
  p->ics = nhwc ? 1 : Hi * Wi, p->ies = nhwc ? Ci : 1;
  p->ocs = nhwc ? 1 : p->Ho * p->Wo, p->oes = nhwc ? Co : 1;
  p->TH = (p->Ho + WINO_M - 1) / WINO_M, p->TW = (p->Wo + WINO_M - 1) / WINO_M;
  int64_t per_tile = WINO_XI * (Ci + Co) * (int64_t)sizeof(float);
  int64_t tiles = WINO_BLOCK_BYTES / per_tile;
  p->rb = tiles / p->TW;
  if (p->rb < 1) p->rb = 1;
  if (p->rb > p->TH) p->rb = p->TH;
  p->Tb = p->rb * p->TW;
}

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }
/* U (36, Co, Ci) and the tap-major weight the transform reads (9, Co, Ci) */
static size_t u_bytes(const wino_plan *p) { return al64((size_t)(45 * p->Ci * p->Co) * 4); }
/* Per thread: V (36, Ci, Tb), M (36, Co, Tb), the transforms' scratch (one padded input row
 * and the 6 rows x 6 phases before and after B^T; or the 24 rows of A^T M and the 16 of Y)
 * and, for a weight gradient, the thread's transformed sum dU (36, Co, Ci). */
typedef struct wino_slot {
  float *V, *M, *scratch, *dU;
  void *pk; /* nn_gemm's packing scratch (NULL: OpenBLAS) */
} wino_slot;

static size_t slot_layout(const wino_plan *p, char *base, wino_slot *s) {
  size_t v = al64((size_t)(WINO_XI * p->Ci * p->Tb) * 4), m = al64((size_t)(WINO_XI * p->Co * p->Tb) * 4);
  size_t sc = al64((size_t)(72 * p->Tb + 4 * p->TW + 8) * 4), du = al64((size_t)(WINO_XI * p->Ci * p->Co) * 4);
  if (s) {
    s->V = (float *)base, s->M = (float *)(base + v), s->scratch = (float *)(base + v + m);
    s->dU = (float *)(base + v + m + sc);
    s->pk = p->own ? base + v + m + sc + du : NULL;
  }
  return v + m + sc + du + al64(nn_gemm_ws_bytes());
}
static size_t slot_bytes(const wino_plan *p) { return slot_layout(p, NULL, NULL); }
static size_t plan_bytes(const wino_plan *p) {
  return u_bytes(p) + (size_t)omp_get_max_threads() * slot_bytes(p);
}

/* Forward plan (x to y) and data-gradient plan (gy to dx) of a geometry nn_wino_fits. */
static void fwd_plan(const nn_conv_geom *g, wino_plan *p) {
  plan_of(p, g->N, g->C, g->F, g->in[1], g->in[2], g->p[1], g->p[2], g->nhwc);
  p->own = !g->openblas;
}
static void bwd_plan(const nn_conv_geom *g, wino_plan *p) {
  plan_of(p, g->N, g->F, g->C, g->out[1], g->out[2], 2 - g->p[1], 2 - g->p[2], g->nhwc);
  p->own = !g->openblas;
}

size_t nn_wino_ws_bytes(const nn_conv_geom *g) {
  wino_plan a, b;
  fwd_plan(g, &a);
  bwd_plan(g, &b);
  size_t x = plan_bytes(&a), y = plan_bytes(&b);
  return x > y ? x : y;
}

/* G (6x3) of F(4x4, 3x3) and its use on 3 values: o[i] = sum_k G[i][k] g[k]. */
#define WINO_G3(o, g0, g1, g2)                                                                 \
  do {                                                                                         \
    __typeof__(g0) s_ = (g0) + (g2);                                                           \
    o[0] = (g0) * (1.0f / 4);                                                                  \
    o[1] = -(s_ + (g1)) * (1.0f / 6);                                                          \
    o[2] = -(s_ - (g1)) * (1.0f / 6);                                                          \
    o[3] = (g0) * (1.0f / 24) + (g1) * (1.0f / 12) + (g2) * (1.0f / 6);                         \
    o[4] = (g0) * (1.0f / 24) - (g1) * (1.0f / 12) + (g2) * (1.0f / 6);                         \
    o[5] = (g2);                                                                               \
  } while (0)

/* U[xi][co][ci] = G w G^T of the 3x3 window of output channel co and input channel ci:
 * w[co][ci] (flip = 0) or, for the data gradient, the flipped w[ci][co] (flip = 1). The
 * windows are first gathered tap-major (wt[tap][co*Ci + ci]), so the transform runs over
 * contiguous (co, ci) pairs. */
OPF_VEC static void weight_transform(float *restrict U, float *restrict wt, const float *restrict w,
                                     const wino_plan *p, int flip) {
  const int64_t Ci = p->Ci, Co = p->Co, CC = Ci * Co;
  for (int64_t co = 0; co < Co; co++)
    for (int64_t ci = 0; ci < Ci; ci++)
      for (int t = 0; t < 9; t++)
        wt[t * CC + co * Ci + ci] = flip ? w[(ci * Co + co) * 9 + 8 - t] : w[(co * Ci + ci) * 9 + t];
  for (int64_t k = 0; k < CC; k++) {
    float c0[6], c1[6], c2[6], r[6];
    WINO_G3(c0, wt[k], wt[3 * CC + k], wt[6 * CC + k]); /* down the columns */
    WINO_G3(c1, wt[CC + k], wt[4 * CC + k], wt[7 * CC + k]);
    WINO_G3(c2, wt[2 * CC + k], wt[5 * CC + k], wt[8 * CC + k]);
    for (int i = 0; i < 6; i++) {
      WINO_G3(r, c0[i], c1[i], c2[i]); /* along row i */
      for (int j = 0; j < 6; j++) U[(int64_t)(i * 6 + j) * CC + k] = r[j];
    }
  }
}

/* B^T applied to 6 values (a vector step of VL lanes each): out[i] = sum_k BT[i][k] in[k]. */
#define WINO_BT(o0, o1, o2, o3, o4, o5, d0, d1, d2, d3, d4, d5)                                  \
  do {                                                                                         \
    o0 = 4 * (d0) - 5 * (d2) + (d4);                                                           \
    o1 = -4 * ((d1) + (d2)) + (d3) + (d4);                                                     \
    o2 = 4 * ((d1) - (d2)) - (d3) + (d4);                                                      \
    o3 = -2 * ((d1) - (d3)) - (d2) + (d4);                                                     \
    o4 = 2 * ((d1) - (d3)) - (d2) + (d4);                                                      \
    o5 = 4 * (d1) - 5 * (d3) + (d5);                                                           \
  } while (0)

/* Vectors of 8 floats (GCC vector extension: AVX/AVX-512 registers on x86, pairs of NEON
 * registers on arm64), unaligned. The transforms run over all Tb tiles of an item at once;
 * a last partial step is recomputed overlapping the previous one (same values), so every
 * step is a whole vector; items of fewer than 8 tiles go element by element. */
typedef float wvec __attribute__((vector_size(32), aligned(4)));
#define WL 8
#define WLD(p) (*(const wvec *)(p))
#define WST(p, v) (*(wvec *)(p) = (v))

/* for (t = 0; t < n; t += step) with the last step moved back to end at n: body(VT, LD, ...)
 * with the vector type and its load (a float and a plain dereference below WL elements). */
#define WINO_STEPS(t, n, body, ...)                                                            \
  do {                                                                                         \
    if ((n) < WL) {                                                                            \
      for (int64_t t = 0; t < (n); t++) {                                                      \
        typedef float wvec_s;                                                                  \
        body(wvec_s, *, __VA_ARGS__);                                                          \
      }                                                                                        \
    } else {                                                                                   \
      for (int64_t t0_ = 0;; t0_ += WL) {                                                      \
        int64_t t = t0_ + WL <= (n) ? t0_ : (n) - WL;                                          \
        body(wvec, WLD, __VA_ARGS__);                                                          \
        if (t + WL >= (n)) break;                                                              \
      }                                                                                        \
    }                                                                                          \
  } while (0)

/* One step of a 6-to-6 (B^T) or 4-to-6 (A) transform: inputs in[k*is + t], outputs
 * out[k*os + t]. */
#define WINO_BT_STEP(VT, LD, in, is, out, os)                                                  \
  {                                                                                            \
    VT d0 = LD(in + t), d1 = LD(in + (is) + t), d2 = LD(in + 2 * (is) + t);                    \
    VT d3 = LD(in + 3 * (is) + t), d4 = LD(in + 4 * (is) + t), d5 = LD(in + 5 * (is) + t);     \
    VT o0, o1, o2, o3, o4, o5;                                                                 \
    WINO_BT(o0, o1, o2, o3, o4, o5, d0, d1, d2, d3, d4, d5);                                   \
    *(VT *)(out + t) = o0, *(VT *)(out + (os) + t) = o1, *(VT *)(out + 2 * (os) + t) = o2;     \
    *(VT *)(out + 3 * (os) + t) = o3, *(VT *)(out + 4 * (os) + t) = o4;                        \
    *(VT *)(out + 5 * (os) + t) = o5;                                                          \
  }
#define WINO_A4_STEP(VT, LD, in, is, out, os)                                                  \
  {                                                                                            \
    VT o0, o1, o2, o3, o4, o5;                                                                 \
    WINO_A4(o0, o1, o2, o3, o4, o5, LD(in + t), LD(in + (is) + t), LD(in + 2 * (is) + t),      \
            LD(in + 3 * (is) + t));                                                            \
    *(VT *)(out + t) = o0, *(VT *)(out + (os) + t) = o1, *(VT *)(out + 2 * (os) + t) = o2;     \
    *(VT *)(out + 3 * (os) + t) = o3, *(VT *)(out + 4 * (os) + t) = o4;                        \
    *(VT *)(out + 5 * (os) + t) = o5;                                                          \
  }

/* d[k*ks + tx] = lin[4*tx + k] for the 6 columns k of each of n tiles (lin: 4n + 8 floats):
 * 8 tiles per step from 5 vector loads and 10 shuffles (a 4-way deinterleave, and the
 * columns 4 and 5 as columns 0 and 1 of the next tile). */
typedef int wivec __attribute__((vector_size(32)));
OPF_VEC static void deinterleave(float *restrict d, int64_t ks, const float *restrict lin,
                                 int64_t n) {
  if (n < WL) {
    for (int64_t tx = 0; tx < n; tx++)
      for (int k = 0; k < 6; k++) d[k * ks + tx] = lin[4 * tx + k];
    return;
  }
  const wivec lo = {0, 4, 8, 12, 1, 5, 9, 13}, hi = {2, 6, 10, 14, 3, 7, 11, 15};
  const wivec first = {0, 1, 2, 3, 8, 9, 10, 11}, second = {4, 5, 6, 7, 12, 13, 14, 15};
  const wivec next0 = {1, 2, 3, 4, 5, 6, 7, 8}, next1 = {1, 2, 3, 4, 5, 6, 7, 9};
  for (int64_t t0 = 0;; t0 += WL) {
    int64_t tx = t0 + WL <= n ? t0 : n - WL;
    const float *q = lin + 4 * tx;
    wvec a0 = WLD(q), a1 = WLD(q + 8), a2 = WLD(q + 16), a3 = WLD(q + 24), a4 = WLD(q + 32);
    wvec b0 = __builtin_shuffle(a0, a1, lo), b1 = __builtin_shuffle(a0, a1, hi);
    wvec c0 = __builtin_shuffle(a2, a3, lo), c1 = __builtin_shuffle(a2, a3, hi);
    wvec p0 = __builtin_shuffle(b0, c0, first), p1 = __builtin_shuffle(b0, c0, second);
    wvec p2 = __builtin_shuffle(b1, c1, first), p3 = __builtin_shuffle(b1, c1, second);
    WST(d + tx, p0), WST(d + ks + tx, p1), WST(d + 2 * ks + tx, p2), WST(d + 3 * ks + tx, p3);
    WST(d + 4 * ks + tx, __builtin_shuffle(p0, a4, next0));
    WST(d + 5 * ks + tx, __builtin_shuffle(p1, a4, next1));
    if (tx + WL >= n) break;
  }
}

/* Input transform of one channel over item tiles [0, Tb) (tile rows ty0..): V[xi][t] (xi
 * stride vs). Each of the 6 input rows of a tile row (zero outside the image) is split into
 * its 6 column phases (ph[k][tx] = row[4*tx + k - pad]), so that B^T down the rows and then along
 * each tile's 6 columns read only contiguous arrays over all the item's tiles. */
OPF_VEC static void input_block(float *restrict V, int64_t vs, const float *restrict xc,
                                const wino_plan *p, int64_t ty0, int64_t rb,
                                float *restrict scratch) {
  const int64_t TW = p->TW, Tb = rb * TW, L = 4 * TW + 8, W = p->Wi, pw = p->pw;
  const int64_t ks = Tb, rs = 6 * Tb; /* R[r][k][t], U[y][k][t] */
  float *restrict lin = scratch, *restrict R = lin + L, *restrict U = R + 36 * Tb;
  for (int64_t q = 0; q < rb; q++)
    for (int r = 0; r < WINO_A; r++) {
      int64_t iy = (ty0 + q) * WINO_M - p->ph + r;
      float *d = R + r * rs + q * TW;
      if (iy < 0 || iy >= p->Hi) {
        for (int k = 0; k < 6; k++) memset(d + k * ks, 0, (size_t)TW * sizeof *d);
        continue;
      }
      const int64_t es = p->ies;
      const float *src = xc + iy * W * es;
      int64_t a = pw < L ? pw : L, b = W + pw < L ? W + pw : L;
      for (int64_t i = 0; i < a; i++) lin[i] = 0;
      if (es == 1) memcpy(lin + a, src, (size_t)(b - a) * sizeof *lin);
      else
        for (int64_t i = a; i < b; i++) lin[i] = src[(i - a) * es];
      for (int64_t i = b; i < L; i++) lin[i] = 0;
      deinterleave(d, ks, lin, TW);
    }
  WINO_STEPS(t, rs, WINO_BT_STEP, R, rs, U, rs);
  for (int y = 0; y < WINO_A; y++) {
    const float *u = U + y * rs;
    float *v = V + (int64_t)(y * 6) * vs;
    WINO_STEPS(t, Tb, WINO_BT_STEP, u, ks, v, vs);
  }
}

/* A^T applied to 6 values: the 4 outputs. */
#define WINO_AT(o0, o1, o2, o3, m0, m1, m2, m3, m4, m5)                                          \
  do {                                                                                         \
    __typeof__(m0) a_ = (m1) + (m2), b_ = (m1) - (m2), c_ = (m3) + (m4), d_ = (m3) - (m4);     \
    o0 = (m0) + a_ + c_;                                                                       \
    o1 = b_ + 2 * d_;                                                                          \
    o2 = a_ + 4 * c_;                                                                          \
    o3 = b_ + 8 * d_ + (m5);                                                                   \
  } while (0)

/* out[4*t + j] = y[j*ys + t] for the 4 columns j of n tiles, 8 tiles per step (the inverse
 * of deinterleave's first 8 shuffles). */
OPF_VEC static void interleave(float *restrict out, const float *restrict y, int64_t ys, int64_t n) {
  if (n < WL) {
    for (int64_t t = 0; t < n; t++)
      for (int j = 0; j < 4; j++) out[4 * t + j] = y[j * ys + t];
    return;
  }
  const wivec lo = {0, 8, 1, 9, 2, 10, 3, 11}, hi = {4, 12, 5, 13, 6, 14, 7, 15};
  for (int64_t t0 = 0;; t0 += WL) {
    int64_t t = t0 + WL <= n ? t0 : n - WL;
    wvec p0 = WLD(y + t), p1 = WLD(y + ys + t), p2 = WLD(y + 2 * ys + t), p3 = WLD(y + 3 * ys + t);
    wvec b0 = __builtin_shuffle(p0, p2, lo), b1 = __builtin_shuffle(p0, p2, hi);
    wvec c0 = __builtin_shuffle(p1, p3, lo), c1 = __builtin_shuffle(p1, p3, hi);
    float *o = out + 4 * t;
    WST(o, __builtin_shuffle(b0, c0, lo)), WST(o + 8, __builtin_shuffle(b0, c0, hi));
    WST(o + 16, __builtin_shuffle(b1, c1, lo)), WST(o + 24, __builtin_shuffle(b1, c1, hi));
    if (t + WL >= n) break;
  }
}

/* Output transform of channel co over the item's tiles (M rows xi stride ms): Y = A^T M A
 * plus the bias, A^T down the 6 rows then along them over all tiles at once, then each tile
 * row's 4 output rows interleaved into the output plane yc where inside it. */
OPF_VEC static void output_block(float *restrict yc, const float *restrict M, int64_t ms,
                                 const wino_plan *p, int64_t ty0, int64_t rb, float bias,
                                 float *restrict scratch) {
  const int64_t TW = p->TW, Tb = rb * TW, Wo = p->Wo;
  float *restrict S = scratch, *restrict Y = S + 24 * Tb; /* S[i][x][t], Y[i][j][t] */
  for (int x = 0; x < 6; x++) {
    const float *m = M + x * ms;
    float *s = S + x * Tb;
#define WINO_OUT_V(VT, LD, unused)                                                                 \
  {                                                                                            \
    VT o0, o1, o2, o3;                                                                         \
    WINO_AT(o0, o1, o2, o3, LD(m + t), LD(m + 6 * ms + t), LD(m + 12 * ms + t),                \
            LD(m + 18 * ms + t), LD(m + 24 * ms + t), LD(m + 30 * ms + t));                    \
    *(VT *)(s + t) = o0, *(VT *)(s + 6 * Tb + t) = o1, *(VT *)(s + 12 * Tb + t) = o2;          \
    *(VT *)(s + 18 * Tb + t) = o3;                                                             \
  }
    WINO_STEPS(t, Tb, WINO_OUT_V, 0);
  }
  for (int i = 0; i < WINO_M; i++) {
    const float *s = S + i * 6 * Tb;
    float *y = Y + i * 4 * Tb;
#define WINO_OUT_H(VT, LD, unused)                                                                 \
  {                                                                                            \
    VT o0, o1, o2, o3;                                                                         \
    WINO_AT(o0, o1, o2, o3, LD(s + t), LD(s + Tb + t), LD(s + 2 * Tb + t), LD(s + 3 * Tb + t), \
            LD(s + 4 * Tb + t), LD(s + 5 * Tb + t));                                           \
    *(VT *)(y + t) = o0 + bias, *(VT *)(y + Tb + t) = o1 + bias;                               \
    *(VT *)(y + 2 * Tb + t) = o2 + bias, *(VT *)(y + 3 * Tb + t) = o3 + bias;                  \
  }
    WINO_STEPS(t, Tb, WINO_OUT_H, 0);
  }
  const int64_t full = Wo / WINO_M;
  for (int64_t q = 0; q < rb; q++)
    for (int i = 0; i < WINO_M; i++) {
      int64_t oy = (ty0 + q) * WINO_M + i;
      if (oy >= p->Ho) break;
      const float *y0 = Y + i * 4 * Tb + q * TW;
      const int64_t es = p->oes;
      float *restrict out = yc + oy * Wo * es;
      if (es == 1) interleave(out, y0, Tb, full);
      else
        for (int64_t t = 0; t < full; t++)
          for (int j = 0; j < 4; j++) out[(4 * t + j) * es] = y0[j * Tb + t];
      for (int64_t j = 4 * full; j < Wo; j++) out[j * es] = y0[full + (j - 4 * full) * Tb];
    }
}

/* dst = winograd(src, U) + bias over work item (n, tile rows [ty0, ty0 + rb)). */
static void run_item(const wino_plan *p, const float *U, const float *src, const float *bias,
                     float *dst, int64_t n, int64_t ty0, char *slot) {
  int64_t rb = p->TH - ty0 < p->rb ? p->TH - ty0 : p->rb, Tb = rb * p->TW;
  wino_slot sl;
  slot_layout(p, slot, &sl);
  float *V = sl.V, *M = sl.M, *scratch = sl.scratch;
  int64_t vs = p->Ci * Tb, ms = p->Co * Tb; /* xi strides */
  const float *sn = src + n * p->Ci * p->Hi * p->Wi;
  for (int64_t ci = 0; ci < p->Ci; ci++)
    input_block(V + ci * Tb, vs, sn + ci * p->ics, p, ty0, rb, scratch);
  for (int xi = 0; xi < WINO_XI; xi++)
    nn_gemm(OPF_F32, 0, 0, p->Co, Tb, p->Ci, U + (int64_t)xi * p->Co * p->Ci, p->Ci,
            V + xi * vs, Tb, 0.0, M + xi * ms, Tb, sl.pk);
  float *dn = dst + n * p->Co * p->Ho * p->Wo;
  for (int64_t co = 0; co < p->Co; co++)
    output_block(dn + co * p->ocs, M + co * Tb, ms, p, ty0, rb, bias ? bias[co] : 0,
                 scratch);
}

/* Threads for a plan: whole items each, as many as the workspace has slots for. */
static int threads_for(const wino_plan *p, size_t ws_bytes, int64_t items) {
  int64_t nt = (int64_t)((ws_bytes - u_bytes(p)) / slot_bytes(p));
  if (nt > omp_get_max_threads()) nt = omp_get_max_threads();
  if (nt > items) nt = items;
  return nt < 1 ? 1 : (int)nt;
}

static void run(const wino_plan *p, void *ws, size_t ws_bytes, const float *w, int flip,
                const float *src, const float *bias, float *dst) {
  float *U = ws;
  weight_transform(U, U + WINO_XI * p->Ci * p->Co, w, p, flip);
  char *slots = (char *)ws + u_bytes(p);
  size_t sb = slot_bytes(p);
  int64_t per = (p->TH + p->rb - 1) / p->rb, items = p->N * per;
  int nt = threads_for(p, ws_bytes, items);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++)
      run_item(p, U, src, bias, dst, it / per, it % per * p->rb, slots + (size_t)k * sb);
  }
}

/* A (6x4) applied to 4 values: the adjoint of WINO_AT. */
#define WINO_A4(o0, o1, o2, o3, o4, o5, y0, y1, y2, y3)                                          \
  do {                                                                                         \
    __typeof__(y0) e_ = (y0) + (y2), f_ = (y1) + (y3), g_ = (y0) + 4 * (y2), h_ = 2 * (y1) + 8 * (y3); \
    o0 = (y0);                                                                                 \
    o1 = e_ + f_;                                                                              \
    o2 = e_ - f_;                                                                              \
    o3 = g_ + h_;                                                                              \
    o4 = g_ - h_;                                                                              \
    o5 = (y3);                                                                                 \
  } while (0)

/* The adjoint of the output transform for one output channel over the item's tiles:
 * G[xi][t] (xi stride ms) = A dY A^T of each tile's 4x4 output gradient (0 outside the
 * plane gc), A down the rows then along them, contiguous over all tiles. */
OPF_VEC static void grad_block(float *restrict G, int64_t ms, const float *restrict gc,
                               const wino_plan *p, int64_t ty0, int64_t rb,
                               float *restrict scratch) {
  const int64_t TW = p->TW, Tb = rb * TW, Wo = p->Wo, full = Wo / WINO_M;
  float *restrict Yr = scratch, *restrict Z = Yr + 16 * Tb; /* Yr[i][j][t], Z[x][j][t] */
  const int64_t js = Tb, is = 4 * Tb;
  for (int64_t q = 0; q < rb; q++)
    for (int i = 0; i < WINO_M; i++) {
      int64_t oy = (ty0 + q) * WINO_M + i;
      float *d = Yr + i * is + q * TW;
      if (oy >= p->Ho) {
        for (int j = 0; j < 4; j++) memset(d + j * js, 0, (size_t)TW * sizeof *d);
        continue;
      }
      const int64_t es = p->oes;
      const float *row = gc + oy * Wo * es;
      for (int64_t t = 0; t < full; t++)
        d[t] = row[4 * t * es], d[js + t] = row[(4 * t + 1) * es],
        d[2 * js + t] = row[(4 * t + 2) * es], d[3 * js + t] = row[(4 * t + 3) * es];
      for (int64_t t = full; t < TW; t++)
        for (int j = 0; j < 4; j++) d[j * js + t] = 4 * t + j < Wo ? row[(4 * t + j) * es] : 0;
    }
  WINO_STEPS(t, is, WINO_A4_STEP, Yr, is, Z, is);
  for (int x = 0; x < 6; x++) {
    const float *z = Z + x * is;
    float *gx = G + (int64_t)(x * 6) * ms;
    WINO_STEPS(t, Tb, WINO_A4_STEP, z, js, gx, ms);
  }
}

/* Weight-gradient item: dU[xi] += G[xi] V[xi]^T over the item's tiles (Co x Tb by Tb x Ci). */
static void dw_item(const wino_plan *p, const float *x, const float *gy, int64_t n, int64_t ty0,
                    char *slot) {
  int64_t rb = p->TH - ty0 < p->rb ? p->TH - ty0 : p->rb, Tb = rb * p->TW;
  wino_slot sl;
  slot_layout(p, slot, &sl);
  float *V = sl.V, *G = sl.M, *scratch = sl.scratch, *dU = sl.dU;
  int64_t vs = p->Ci * Tb, gs = p->Co * Tb;
  const float *xn = x + n * p->Ci * p->Hi * p->Wi, *gn = gy + n * p->Co * p->Ho * p->Wo;
  for (int64_t ci = 0; ci < p->Ci; ci++)
    input_block(V + ci * Tb, vs, xn + ci * p->ics, p, ty0, rb, scratch);
  for (int64_t co = 0; co < p->Co; co++)
    grad_block(G + co * Tb, gs, gn + co * p->ocs, p, ty0, rb, scratch);
  for (int xi = 0; xi < WINO_XI; xi++)
    nn_gemm(OPF_F32, 0, 1, p->Co, p->Ci, Tb, G + xi * gs, Tb, V + xi * vs, Tb, 1.0,
            dU + (int64_t)xi * p->Co * p->Ci, p->Ci, sl.pk);
}

/* dw[co][ci] = G^T dU[.][co][ci] G (the adjoint of weight_transform). */
static void weight_untransform(float *dw, const float *dU, const wino_plan *p) {
  static const float G[6][3] = {{1.0f / 4, 0, 0},
                                {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                {0, 0, 1}};
  const int64_t CC = p->Co * p->Ci;
  for (int64_t k = 0; k < CC; k++) {
    float t[6][3];
    for (int i = 0; i < 6; i++)
      for (int b = 0; b < 3; b++) {
        float acc = 0;
        for (int j = 0; j < 6; j++) acc += dU[(i * 6 + j) * CC + k] * G[j][b];
        t[i][b] = acc;
      }
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) {
        float acc = 0;
        for (int i = 0; i < 6; i++) acc += G[i][a] * t[i][b];
        dw[k * 9 + a * 3 + b] = acc;
      }
  }
}

void nn_wino_forward(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                     const void *w, const void *b, void *y) {
  wino_plan p;
  fwd_plan(g, &p);
  run(&p, ws, ws_bytes, w, 0, x, b, y);
}

void nn_wino_weight_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                         const void *gy, void *dw) {
  wino_plan p;
  fwd_plan(g, &p);
  char *slots = (char *)ws + u_bytes(&p);
  size_t sb = slot_bytes(&p), du = (size_t)(WINO_XI * p.Ci * p.Co);
  wino_slot s0;
  slot_layout(&p, slots, &s0);
  size_t du_off = (size_t)((char *)s0.dU - slots);
  int64_t per = (p.TH + p.rb - 1) / p.rb, items = p.N * per;
  int nt = threads_for(&p, ws_bytes, items), used = 1;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    if (k == 0) used = m;
    memset(slots + (size_t)k * sb + du_off, 0, du * 4);
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++)
      dw_item(&p, x, gy, it / per, it % per * p.rb, slots + (size_t)k * sb);
  }
  float *dU = (float *)(slots + du_off);
  for (int k = 1; k < used; k++) {
    const float *o = (const float *)(slots + (size_t)k * sb + du_off);
    for (size_t i = 0; i < du; i++) dU[i] += o[i];
  }
  weight_untransform(dw, dU, &p);
}

void nn_wino_data_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *gy,
                       const void *w, const void *bias, void *dx) {
  wino_plan p;
  bwd_plan(g, &p);
  run(&p, ws, ws_bytes, w, 1, gy, bias, dx);
}

/* ---- the plan and transforms for the 3-D driver (conv_wino.h) ---- */
void nn_wino_plan(wino_plan *p, int64_t N, int64_t Ci, int64_t Co, int64_t Hi, int64_t Wi,
                  int64_t ph, int64_t pw, int nhwc) {
  plan_of(p, N, Ci, Co, Hi, Wi, ph, pw, nhwc);
}
void nn_wino_weights(float *U, float *wt, const float *w, const wino_plan *p, int flip) {
  weight_transform(U, wt, w, p, flip);
}
void nn_wino_unweights(float *dw, const float *dU, const wino_plan *p) {
  weight_untransform(dw, dU, p);
}
void nn_wino_input(float *V, int64_t vs, const float *xc, const wino_plan *p, int64_t ty0,
                   int64_t rb, float *scratch) {
  input_block(V, vs, xc, p, ty0, rb, scratch);
}
void nn_wino_output(float *yc, const float *M, int64_t ms, const wino_plan *p, int64_t ty0,
                    int64_t rb, float bias, float *scratch) {
  output_block(yc, M, ms, p, ty0, rb, bias, scratch);
}
void nn_wino_grad(float *G, int64_t ms, const float *gc, const wino_plan *p, int64_t ty0,
                  int64_t rb, float *scratch) {
  grad_block(G, ms, gc, p, ty0, rb, scratch);
}

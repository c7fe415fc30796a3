/* conv_wino.c: Winograd F(4x4, 3x3) convolution for 2-D float32 convolutions (NCHW or NHWC)
 * with a 3x3 window, stride 1, dilation 1 and one group (conv_core.h: nn_wino_*). Each 4x4
 * output tile costs 36 multiplies per channel pair instead of 144: the input tiles (6x6,
 * overlapping by 2) are transformed to V = B^T d B, the weights to U = G g G^T, the 36
 * element-wise products summed over channels are 36 GEMMs (M[xi] = U[xi] V[xi], F x C times
 * C x tiles; conv_gemm.c's AVX-512 kernel with U packed once per call where it runs, else
 * OpenBLAS), and Y = A^T M A gives the outputs. Work items are blocks of tile rows of one
 * image, sized so V and M stay in L2; threads take whole items with single-threaded GEMMs,
 * as in the im2col core. The data gradient of such a convolution is the same convolution of
 * the output gradient with the flipped, transposed weight and padding 2 - pad, so one driver
 * serves both. The transforms run on 8-float GCC vectors across all the tiles of an item
 * (contiguous arrays only), in the runtime ISA clones of opf_kernel.h; the same source builds
 * for arm64 (NEON pairs) and the baseline. Channels-last tensors go through planar copies of
 * each item's rows (8x8 register transposes), so the transforms read and write contiguous
 * rows in both layouts. The fused operators (conv_fused.c) add a per-filter weight scale, the
 * bias and relu in the output transform, a relu mask on the output gradient where the
 * gradient transforms read it, and its channel sums. A dilated 3x3 window (nn_wino_dil_fits)
 * runs the same transforms and products on its dilation phases: output rows a, a+dh, ... read
 * only every dh-th input row from one residue, columns likewise, so each phase is a dense 3x3
 * convolution (pad 0-2); an item is one row phase's tile rows with the tiles of all dw column
 * phases side by side (dense rows for the vector transforms, 32+ tiles for the GEMM strips),
 * rows gathered and scattered in place with stride-2 vector shuffles (channels first) or
 * through per-phase planar copies (channels last); forward and data gradient only. */
#include <string.h>

#include "conv_wino.h"
#include "linalg/linalg.h"

/* Bytes of V plus M per work item: both stay in the core's L2 (1 MB on Zen 5) between the
 * input transform, the GEMMs and the output transform. */
#define WINO_BLOCK_BYTES ((int64_t)1 << 20)
#define WINO_NR 32 /* the own GEMM kernel's strip of columns (conv_gemm.c GM_NR) */
#define WINO_MAX_SEGS 16 /* a dilated convolution's column phases (dilation) at most */

int nn_wino_fits(const nn_conv_geom *g, opf_dtype dt) {
  return dt == OPF_F32 && g->nd == 2 && g->groups == 1 && g->k[1] == 3 &&
         g->k[2] == 3 && g->s[1] == 1 && g->s[2] == 1 && g->d[1] == 1 && g->d[2] == 1 &&
         g->p[1] <= 2 && g->p[2] <= 2;
}

static int u_packed(const wino_plan *p);

int nn_wino_dil_fits(const nn_conv_geom *g, opf_dtype dt) {
  return dt == OPF_F32 && g->nd == 2 && g->groups == 1 && g->k[1] == 3 && g->k[2] == 3 &&
         g->s[1] == 1 && g->s[2] == 1 && (g->d[1] > 1 || g->d[2] > 1) &&
         g->d[2] <= WINO_MAX_SEGS && g->p[1] <= 2 * g->d[1] && g->p[2] <= 2 * g->d[2];
}

/* Tiles per item over the column strips the own kernel computes for them (its last strip is
 * partly wasted: 42 tiles cost 64 columns, 56 cost 64). */
static double strip_use(int64_t Tb) {
  return (double)Tb / (double)((Tb + WINO_NR - 1) / WINO_NR * WINO_NR);
}

/* Tile rows per item: as many as fit WINO_BLOCK_BYTES, or with the own kernel, among the
 * upper half of those counts the one whose tiles fill its strips best (measured: 64x64
 * channels, 14 tiles per row, 42 tiles per item ran ~15% slower than 56). */
static void plan_tiles(wino_plan *p);
static void plan_of(wino_plan *p, int64_t N, int64_t Ci, int64_t Co, int64_t Hi, int64_t Wi,
                    int64_t ph, int64_t pw, int nhwc, int own) {
  p->own = own;
  p->N = N, p->Ci = Ci, p->Co = Co, p->Hi = Hi, p->Wi = Wi, p->ph = ph, p->pw = pw;
  p->Ho = Hi + 2 * ph - 2, p->Wo = Wi + 2 * pw - 2;
  p->nhwc = nhwc, p->wsc = p->mask = NULL, p->relu = 0, p->gsum = NULL;
  p->TH = (p->Ho + WINO_M - 1) / WINO_M, p->TW = (p->Wo + WINO_M - 1) / WINO_M;
  p->dh = p->dw = 1, p->HA = Hi, p->WA = Wi, p->HoA = p->Ho, p->WoA = p->Wo, p->phA = ph, p->pwA = pw;
  plan_tiles(p);
}

/* floor(a / d) for d > 0 */
static int64_t fdiv(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }

/* One axis of phase a of a dilated convolution (input extent in, output out, pad, dilation
 * d): its outputs are every d-th from a (*pout of them), and they read only every d-th input
 * from *r (*pin of them) as a dense 3-tap window padded by *ppad (0 .. ceil(pad / d)). */
static void phase_axis(int64_t in, int64_t out, int64_t pad, int64_t d, int64_t a, int64_t *r,
                       int64_t *pin, int64_t *ppad, int64_t *pout) {
  int64_t q = fdiv(a - pad, d);
  *r = a - pad - q * d;
  *ppad = -q;
  *pin = in > *r ? (in - *r + d - 1) / d : 0;
  *pout = out > a ? (out - a + d - 1) / d : 0;
}

/* The dense convolution of phase (a, b) of a dilated plan m in q (strides left to the caller);
 * *rh, *rw: the phase's first input row and column. */
static void phase_plan(const wino_plan *m, int64_t a, int64_t b, wino_plan *q, int64_t *rh,
                       int64_t *rw) {
  *q = *m;
  phase_axis(m->HA, m->HoA, m->phA, m->dh, a, rh, &q->Hi, &q->ph, &q->Ho);
  phase_axis(m->WA, m->WoA, m->pwA, m->dw, b, rw, &q->Wi, &q->pw, &q->Wo);
  q->TH = (q->Ho + WINO_M - 1) / WINO_M, q->TW = (q->Wo + WINO_M - 1) / WINO_M;
  q->Tb = q->rb * q->TW;
}

/* A dilated 3x3 stride-1 convolution (N, Ci, Hi, Wi) -> (N, Co, Hi + 2ph - 2dh, ...): its
 * tiles, items and scratch those of phase (0, 0), the largest. */
static void plan_dil_of(wino_plan *p, int64_t N, int64_t Ci, int64_t Co, int64_t Hi, int64_t Wi,
                        int64_t ph, int64_t pw, int64_t dh, int64_t dw, int nhwc, int own) {
  plan_of(p, N, Ci, Co, Hi, Wi, ph, pw, nhwc, own);
  p->dh = dh, p->dw = dw, p->HoA = Hi + 2 * ph - 2 * dh, p->WoA = Wi + 2 * pw - 2 * dw;
  int64_t rh, rw, tw = 0;
  wino_plan q;
  phase_plan(p, 0, 0, &q, &rh, &rw);
  p->Hi = q.Hi, p->ph = q.ph, p->Ho = q.Ho, p->TH = q.TH;
  for (int64_t b = 0; b < dw; b++) tw += (phase_plan(p, 0, b, &q, &rh, &rw), q.TW);
  p->TW = tw; /* every column phase's tiles side by side */
  plan_tiles(p);
}

/* Tile rows per item (rb) and tiles per item (Tb) from TH and TW. */
static void plan_tiles(wino_plan *p) {
  int64_t per_tile = WINO_XI * (p->Ci + p->Co) * (int64_t)sizeof(float);
  int64_t tiles = WINO_BLOCK_BYTES / per_tile, rb = tiles / p->TW;
  if (rb < 1) rb = 1;
  if (p->dh * p->dw > 1 && rb * p->TW < WINO_NR) rb = (WINO_NR + p->TW - 1) / p->TW;
  if (rb > p->TH) rb = p->TH;
  p->rb = rb;
  if (u_packed(p))
    for (int64_t r = rb - 1; r >= (rb + 1) / 2 && r >= 1; r--)
      if (strip_use(r * p->TW) > strip_use(p->rb * p->TW) + 1e-9) p->rb = r;
  p->Tb = p->rb * p->TW;
}

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }
/* U (36, Co, Ci) and the tap-major weight the transform reads (9, Co, Ci) */
/* The forward products by nn_gemm's own kernel with U packed once per call (36 packs): where
 * it runs (AVX-512) and the weight has rows and depth enough for its 14 x 32 tiles; the item's
 * tiles (N) are not limited, their remainder strips are masked. */
static int u_packed(const wino_plan *p) {
  return p->own && nn_gemm_own(OPF_F32, p->Co, 1 << 20, p->Ci);
}
static size_t upk_bytes(const wino_plan *p) { return al64(nn_gemm_pack_bytes(p->Co, p->Ci)); }
static size_t u_bytes(const wino_plan *p) {
  return al64((size_t)(45 * p->Ci * p->Co) * 4) + (u_packed(p) ? WINO_XI * upk_bytes(p) : 0);
}
/* Per thread: V (36, Ci, Tb), M (36, Co, Tb), the transforms' scratch (one padded input row
 * and the 6 rows x 6 phases before and after B^T; or the 24 rows of A^T M and the 16 of Y),
 * for a weight gradient the thread's transformed sum dU (36, Co, Ci) and gy sums (Co),
 * channels-last the item's rows in planar order T (the input rows or the output rows). */
typedef struct wino_slot {
  float *V, *M, *scratch, *dU, *gs, *T;
  void *pk; /* nn_gemm's packing scratch (NULL: OpenBLAS) */
} wino_slot;

static int64_t t_floats(const wino_plan *p) {
  if (p->dh * p->dw > 1) /* the item's input and output rows planar, by column phases */
    return p->nhwc ? p->Ci * (WINO_M * p->rb + 2) * (p->WA + p->dw) +
                         p->Co * WINO_M * p->rb * (p->WoA + p->dw)
                   : 0;
  int64_t in = p->Ci * (WINO_M * p->rb + 2) * p->Wi, out = p->Co * WINO_M * p->rb * p->Wo;
  return p->nhwc ? (in > out ? in : out) : 0;
}

static size_t slot_layout(const wino_plan *p, char *base, wino_slot *s) {
  size_t v = al64((size_t)(WINO_XI * p->Ci * p->Tb) * 4), m = al64((size_t)(WINO_XI * p->Co * p->Tb) * 4);
  size_t sc = al64((size_t)(72 * p->Tb + 4 * p->TW + 8) * 4), du = al64((size_t)(WINO_XI * p->Ci * p->Co) * 4);
  size_t gs = al64((size_t)p->Co * 4), t = al64((size_t)t_floats(p) * 4);
  if (s) {
    s->V = (float *)base, s->M = (float *)(base + v), s->scratch = (float *)(base + v + m);
    s->dU = (float *)(base + v + m + sc), s->gs = (float *)(base + v + m + sc + du);
    s->T = (float *)(base + v + m + sc + du + gs);
    s->pk = p->own ? base + v + m + sc + du + gs + t : NULL;
  }
  return v + m + sc + du + gs + t + al64(nn_gemm_ws_bytes());
}
static size_t slot_bytes(const wino_plan *p) { return slot_layout(p, NULL, NULL); }
static size_t plan_bytes(const wino_plan *p) {
  return u_bytes(p) + (size_t)omp_get_max_threads() * slot_bytes(p);
}

/* Forward plan (x to y) and data-gradient plan (gy to dx) of a geometry nn_wino_fits. */
static void fwd_plan(const nn_conv_geom *g, wino_plan *p) {
  plan_dil_of(p, g->N, g->C, g->F, g->in[1], g->in[2], g->p[1], g->p[2], g->d[1], g->d[2],
              g->nhwc, !g->openblas);
}
static void bwd_plan(const nn_conv_geom *g, wino_plan *p) {
  plan_dil_of(p, g->N, g->F, g->C, g->out[1], g->out[2], 2 * g->d[1] - g->p[1],
              2 * g->d[2] - g->p[2], g->d[1], g->d[2], g->nhwc, !g->openblas);
}

/* The most either plan needs with either GEMM (the own kernel's plan packs U but may take
 * fewer tile rows per item than OpenBLAS's: infer sizes one workspace for every impl). */
size_t nn_wino_ws_bytes(const nn_conv_geom *g) {
  nn_conv_geom h = *g;
  size_t most = 0;
  for (int blas = 0; blas < 2; blas++) {
    wino_plan a, b;
    h.openblas = blas;
    fwd_plan(&h, &a);
    bwd_plan(&h, &b);
    size_t x = plan_bytes(&a), y = plan_bytes(&b);
    if (x > most) most = x;
    if (y > most) most = y;
  }
  return most;
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
    for (int64_t ci = 0; ci < Ci; ci++) {
      float s = p->wsc ? p->wsc[flip ? ci : co] : 1; /* the scale of weight row f */
      for (int t = 0; t < 9; t++)
        wt[t * CC + co * Ci + ci] = s * (flip ? w[(ci * Co + co) * 9 + 8 - t] : w[(co * Ci + ci) * 9 + t]);
    }
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

/* d[i] = s[i] where m[i] > 0, else 0 (m NULL: a copy). */
static inline __attribute__((always_inline)) void copy_masked(float *restrict d,
                                                              const float *restrict s,
                                                              const float *restrict m, int64_t n) {
  if (!m) memcpy(d, s, (size_t)n * sizeof *d);
  else
    for (int64_t i = 0; i < n; i++) d[i] = m[i] > 0 ? s[i] : 0;
}

/* The 8x8 block r[0..7] transposed in place (three rounds of 8 two-vector shuffles). */
static inline __attribute__((always_inline)) void t8x8(wvec *r) {
  const wivec a = {0, 8, 1, 9, 4, 12, 5, 13}, b = {2, 10, 3, 11, 6, 14, 7, 15};
  const wivec c = {0, 1, 8, 9, 4, 5, 12, 13}, d = {2, 3, 10, 11, 6, 7, 14, 15};
  const wivec e = {0, 1, 2, 3, 8, 9, 10, 11}, f = {4, 5, 6, 7, 12, 13, 14, 15};
  wvec t[8], u[8];
  for (int k = 0; k < 8; k += 2)
    t[k] = __builtin_shuffle(r[k], r[k + 1], a), t[k + 1] = __builtin_shuffle(r[k], r[k + 1], b);
  for (int k = 0; k < 8; k += 4) {
    u[k] = __builtin_shuffle(t[k], t[k + 2], c), u[k + 1] = __builtin_shuffle(t[k], t[k + 2], d);
    u[k + 2] = __builtin_shuffle(t[k + 1], t[k + 3], c);
    u[k + 3] = __builtin_shuffle(t[k + 1], t[k + 3], d);
  }
  for (int k = 0; k < 4; k++)
    r[k] = __builtin_shuffle(u[k], u[k + 4], e), r[k + 4] = __builtin_shuffle(u[k], u[k + 4], f);
}

/* Channels-last rows to planar and back: to_planar gives dst[c*ds + i] = src[i*pp + c] (0 where
 * mask[i*pp + c] <= 0, when mask is not NULL), from_planar src[c*cs + i] to dst[i*pp + c], for
 * n positions of C channels (planes ds, cs >= n apart; positions pp >= C apart: C, or a
 * multiple of it for every other position of a dilated phase), by 8x8 blocks. */
OPF_VEC static void to_planar(float *restrict dst, const float *restrict src,
                              const float *restrict mask, int64_t n, int64_t C, int64_t ds,
                              int64_t pp) {
  /* the last 8 positions as one more block when n is not a multiple of 8 (the same values
   * written twice): only the channel remainder goes element by element */
  int64_t n8 = n >= 8 ? n : 0, C8 = C & ~(int64_t)7;
  for (int64_t c0 = 0; c0 < C8; c0 += 8)
    for (int64_t j0 = 0; j0 < n8; j0 += 8) {
      int64_t i0 = j0 + 8 <= n ? j0 : n - 8;
      wvec r[8];
      for (int k = 0; k < 8; k++) {
        r[k] = WLD(src + (i0 + k) * pp + c0);
        if (mask) r[k] = (wvec)((wivec)r[k] & (WLD(mask + (i0 + k) * pp + c0) > 0));
      }
      t8x8(r);
      for (int k = 0; k < 8; k++) WST(dst + (c0 + k) * ds + i0, r[k]);
    }
  for (int64_t i = 0; i < n; i++) /* the remainders */
    for (int64_t c = i < n8 ? C8 : 0; c < C; c++)
      dst[c * ds + i] = !mask || mask[i * pp + c] > 0 ? src[i * pp + c] : 0;
}

OPF_VEC static void from_planar(float *restrict dst, const float *restrict src, int64_t n,
                                int64_t C, int64_t cs, int64_t pp) {
  int64_t n8 = n >= 8 ? n : 0, C8 = C & ~(int64_t)7; /* as to_planar */
  for (int64_t j0 = 0; j0 < n8; j0 += 8)
    for (int64_t c0 = 0; c0 < C8; c0 += 8) {
      int64_t i0 = j0 + 8 <= n ? j0 : n - 8;
      wvec r[8];
      for (int k = 0; k < 8; k++) r[k] = WLD(src + (c0 + k) * cs + i0);
      t8x8(r);
      for (int k = 0; k < 8; k++) WST(dst + (i0 + k) * pp + c0, r[k]);
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t c = i < n8 ? C8 : 0; c < C; c++) dst[i * pp + c] = src[c * cs + i];
}

/* Rows [r0, r1) (clipped to [0, H)) of an image of C channels (H x W, the plan's layout;
 * mask beside it or NULL) as channel planes: channels-first the image itself; channels-last
 * the rows copied planar into T (masked there). Row y of channel c is at
 * base + c*cs + (y - row0)*W, masked by mask at the same offset when mask is not NULL. */
typedef struct wino_rows {
  const float *base, *mask;
  int64_t cs, row0;
} wino_rows;
static wino_rows rows_of(const wino_plan *p, const float *img, const float *mimg, int64_t C,
                         int64_t H, int64_t W, int64_t r0, int64_t r1, float *T) {
  if (!p->nhwc) return (wino_rows){img, mimg, H * W, 0};
  r0 = r0 < 0 ? 0 : r0, r1 = r1 > H ? H : r1;
  int64_t n = r1 > r0 ? (r1 - r0) * W : 0;
  if (n) to_planar(T, img + r0 * W * C, mimg ? mimg + r0 * W * C : NULL, n, C, n, C);
  return (wino_rows){T, NULL, n, r0};
}

/* d[i] = s[i*st] for i < n (a dilated phase's columns of a row): stride 2 by pairs of
 * vectors (never reading past s[(n-1)*st]), else element by element. */
OPF_VEC static void gather_cols(float *restrict d, const float *restrict s, int64_t n,
                                int64_t st) {
  int64_t i = 0;
  if (st == 1) {
    memcpy(d, s, (size_t)n * sizeof *d);
    return;
  }
  if (st == 2) {
    const wivec even = {0, 2, 4, 6, 8, 10, 12, 14};
    for (; i + 9 <= n; i += WL) WST(d + i, __builtin_shuffle(WLD(s + 2 * i), WLD(s + 2 * i + 8), even));
  }
  for (; i < n; i++) d[i] = s[i * st];
}

/* d[i*st] = s[i] for i < n, the elements between left as they are (stride 2: whole vectors
 * read, blended and written back, never past d[(n-1)*st]). */
OPF_VEC static void scatter_cols(float *restrict d, const float *restrict s, int64_t n,
                                 int64_t st) {
  int64_t i = 0;
  if (st == 1) {
    memcpy(d, s, (size_t)n * sizeof *d);
    return;
  }
  if (st == 2) {
    const wivec lo = {8, 1, 9, 3, 10, 5, 11, 7}, hi = {12, 1, 13, 3, 14, 5, 15, 7};
    for (; i + 9 <= n; i += WL) {
      wvec v = WLD(s + i);
      WST(d + 2 * i, __builtin_shuffle(WLD(d + 2 * i), v, lo));
      WST(d + 2 * i + 8, __builtin_shuffle(WLD(d + 2 * i + 8), v, hi));
    }
  }
  for (; i < n; i++) d[i * st] = s[i];
}

/* Input transform of one channel over item tiles [0, Tb) (tile rows ty0..): V[xi][t] (xi
 * stride vs). Each of the 6 input rows of a tile row (zero outside the image; from xc, row
 * row0 of the channel's plane, masked by mc when not NULL) is split into its 6 column phases
 * (ph[k][tx] = row[4*tx + k - pad]), so that B^T down the rows and then along each tile's 6
 * columns read only contiguous arrays over all the item's tiles. */
/* B^T down each tile's 6 rows R[r][k][t], then along its 6 columns: V[xi][t] (xi stride vs),
 * over Tb tiles at once (U: 36 Tb floats of scratch). */
OPF_VEC static void input_finish(float *restrict V, int64_t vs, const float *restrict R,
                                 float *restrict U, int64_t Tb) {
  const int64_t ks = Tb, rs = 6 * Tb;
  WINO_STEPS(t, rs, WINO_BT_STEP, R, rs, U, rs);
  for (int y = 0; y < WINO_A; y++) {
    const float *u = U + y * rs;
    float *v = V + (int64_t)(y * 6) * vs;
    WINO_STEPS(t, Tb, WINO_BT_STEP, u, ks, v, vs);
  }
}

/* A dilated convolution's item rows: its column phases' tiles side by side, phase b's TW[b]
 * tiles from T0[b] (T0[n]: all of them), its input columns Wi[b] padded by pw[b], its outputs
 * Wo[b]. */
typedef struct wino_segs {
  int n;
  int64_t T0[WINO_MAX_SEGS + 1], TW[WINO_MAX_SEGS], Wi[WINO_MAX_SEGS], pw[WINO_MAX_SEGS],
      Wo[WINO_MAX_SEGS];
} wino_segs;

OPF_VEC static void input_block(float *restrict V, int64_t vs, const float *restrict xc,
                                const float *restrict mc, int64_t row0, const wino_plan *p,
                                int64_t ty0, int64_t rb, float *restrict scratch) {
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
      const int64_t ro = (iy - row0) * W;
      int64_t a = pw < L ? pw : L, b = W + pw < L ? W + pw : L;
      for (int64_t i = 0; i < a; i++) lin[i] = 0;
      copy_masked(lin + a, xc + ro, mc ? mc + ro : NULL, b - a);
      for (int64_t i = b; i < L; i++) lin[i] = 0;
      deinterleave(d, ks, lin, TW);
    }
  input_finish(V, vs, R, U, Tb);
}

/* The input transform of a dilated convolution's item (the rows of row phase q, every column
 * phase side by side: sg) for one channel, whose phase b rows are at xb[b] (row y at
 * xb[b] + (y - row0)*xrs[b], every xcs-th column): as input_block on the concatenated
 * rows, the last tile of each phase then given its own two last columns (the next phase's
 * first ones in the concatenation). */
OPF_VEC static void input_block_dil(float *restrict V, int64_t vs, const wino_segs *sg,
                                    const float *const *xb, const int64_t *xrs, int64_t xcs,
                                    int64_t row0, const wino_plan *q, int64_t ty0, int64_t rb,
                                    float *restrict scratch) {
  const int64_t TW = sg->T0[sg->n], Tb = rb * TW, L = 4 * TW + 8;
  const int64_t ks = Tb, rs = 6 * Tb;
  float *restrict lin = scratch, *restrict R = lin + L, *restrict U = R + 36 * Tb;
  for (int64_t qq = 0; qq < rb; qq++)
    for (int r = 0; r < WINO_A; r++) {
      int64_t iy = (ty0 + qq) * WINO_M - q->ph + r;
      float *d = R + r * rs + qq * TW;
      if (iy < 0 || iy >= q->Hi) {
        for (int k = 0; k < 6; k++) memset(d + k * ks, 0, (size_t)TW * sizeof *d);
        continue;
      }
      float ext[WINO_MAX_SEGS][2];
      for (int b = 0; b < sg->n; b++) {
        float *seg = lin + 4 * sg->T0[b];
        const int64_t n = 4 * sg->TW[b] + 2, pw = sg->pw[b], W = sg->Wi[b];
        int64_t a = pw < n ? pw : n, e = W + pw < n ? W + pw : n;
        for (int64_t i = 0; i < a; i++) seg[i] = 0;
        gather_cols(seg + a, xb[b] + (iy - row0) * xrs[b], e - a, xcs);
        for (int64_t i = e; i < n; i++) seg[i] = 0;
        ext[b][0] = seg[n - 2], ext[b][1] = seg[n - 1];
      }
      for (int64_t i = 4 * TW + 2; i < L; i++) lin[i] = 0;
      deinterleave(d, ks, lin, TW);
      for (int b = 0; b + 1 < sg->n; b++) {
        int64_t t = sg->T0[b + 1] - 1;
        d[4 * ks + t] = ext[b][0], d[5 * ks + t] = ext[b][1];
      }
    }
  input_finish(V, vs, R, U, Tb);
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
 * plus the bias (then the relu of a fused operator), A^T down the 6 rows then along them over
 * all tiles at once, then each tile row's 4 output rows interleaved into the channel's plane
 * (yc: its row row0) where inside it. */
/* Y[i][j][t] = (A^T M A)[i][j] + bias of Tb tiles (relu: then max(., 0)), A^T down the 6
 * rows then along them over all tiles at once; returns Y (scratch + 24 Tb, 16 Tb floats). */
OPF_VEC static float *output_tiles(const float *restrict M, int64_t ms, int64_t Tb, float bias,
                                   int relu, float *restrict scratch) {
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
  if (relu)
    for (int64_t i = 0; i < 16 * Tb; i++) Y[i] = Y[i] > 0 ? Y[i] : 0;
  return Y;
}

OPF_VEC static void output_block(float *restrict yc, int64_t row0, const float *restrict M,
                                 int64_t ms, const wino_plan *p, int64_t ty0, int64_t rb,
                                 float bias, float *restrict scratch) {
  const int64_t TW = p->TW, Tb = rb * TW, Wo = p->Wo;
  const float *Y = output_tiles(M, ms, Tb, bias, p->relu, scratch);
  const int64_t full = Wo / WINO_M;
  for (int64_t q = 0; q < rb; q++)
    for (int i = 0; i < WINO_M; i++) {
      int64_t oy = (ty0 + q) * WINO_M + i;
      if (oy >= p->Ho) break;
      const float *y0 = Y + i * 4 * Tb + q * TW;
      float *restrict out = yc + (oy - row0) * Wo;
      interleave(out, y0, Tb, full);
      for (int64_t j = 4 * full; j < Wo; j++) out[j] = y0[full + (j - 4 * full) * Tb];
    }
}

/* The output transform of a dilated item for one output channel: as output_block on the
 * concatenated rows of every column phase (sg), phase b's part of output row y written to
 * yb[b] + (y - row0)*yrs[b], every ycs-th column. */
OPF_VEC static void output_block_dil(float *const *yb, const int64_t *yrs, int64_t ycs,
                                     int64_t row0, const wino_segs *sg, const float *restrict M,
                                     int64_t ms, const wino_plan *q, int64_t ty0, int64_t rb,
                                     float bias, float *restrict scratch) {
  const int64_t TW = sg->T0[sg->n], Tb = rb * TW;
  float *Y = output_tiles(M, ms, Tb, bias, q->relu, scratch), *row = Y + 16 * Tb;
  for (int64_t qq = 0; qq < rb; qq++)
    for (int i = 0; i < WINO_M; i++) {
      int64_t oy = (ty0 + qq) * WINO_M + i;
      if (oy >= q->Ho) break;
      interleave(row, Y + i * 4 * Tb + qq * TW, Tb, TW);
      for (int b = 0; b < sg->n; b++)
        scatter_cols(yb[b] + (oy - row0) * yrs[b], row + 4 * sg->T0[b], sg->Wo[b], ycs);
    }
}

/* M[xi] = U[xi] V[xi] for the 36 points, over Tb tiles (V: Ci x Tb, M: Co x Tb per point). */
static void products(const wino_plan *p, const float *U, const float *V, float *M, int64_t Tb,
                     void *pk) {
  const int64_t vs = p->Ci * Tb, ms = p->Co * Tb;
  const char *upk = (const char *)U + al64((size_t)(45 * p->Ci * p->Co) * 4);
  for (int xi = 0; xi < WINO_XI; xi++)
    if (u_packed(p))
      nn_gemm_pre(0, 0, p->Co, Tb, p->Ci, NULL, 0, V + xi * vs, Tb, 0.0, M + xi * ms, Tb, pk,
                  upk + (size_t)xi * upk_bytes(p), NULL);
    else
      nn_gemm(OPF_F32, 0, 0, p->Co, Tb, p->Ci, U + (int64_t)xi * p->Co * p->Ci, p->Ci,
              V + xi * vs, Tb, 0.0, M + xi * ms, Tb, pk);
}

/* A dilated convolution's item: image n, row phase a, that phase's tile rows [ty0, ty0 + rb),
 * the tiles of every column phase b side by side (the same input rows: every dh-th of the
 * image's from the phase's first). Channels-first the transforms read and write the tensors'
 * rows in place (every dw-th column); channels-last through planar copies of each phase's
 * columns of the item's rows. */
static void run_item_dil(const wino_plan *m, const float *U, const float *src, const float *bias,
                         float *dst, int64_t n, int64_t a, int64_t ty0, char *slot) {
  wino_slot sl;
  slot_layout(m, slot, &sl);
  wino_plan q;
  wino_segs sg;
  int64_t rh, rw[WINO_MAX_SEGS], Wsum = 0, Wosum = 0;
  const int64_t WA = m->WA, WoA = m->WoA, Ci = m->Ci, Co = m->Co, dw = m->dw;
  sg.n = (int)dw, sg.T0[0] = 0;
  for (int b = 0; b < sg.n; b++) {
    phase_plan(m, a, b, &q, &rh, &rw[b]);
    sg.TW[b] = q.TW, sg.T0[b + 1] = sg.T0[b] + q.TW, sg.Wi[b] = q.Wi, sg.pw[b] = q.pw;
    sg.Wo[b] = q.Wo, Wsum += q.Wi, Wosum += q.Wo;
  }
  if (ty0 >= q.TH || sg.T0[sg.n] == 0) return; /* a shorter phase than the first */
  const int64_t rb = q.TH - ty0 < m->rb ? q.TH - ty0 : m->rb, Tb = rb * sg.T0[sg.n];
  const int64_t vs = Ci * Tb, ms = Co * Tb;
  const float *xn = src + n * Ci * m->HA * WA;
  float *yn = dst + n * Co * m->HoA * WoA;
  /* the phase's input rows [u0, u1) the tiles read, output rows [o0, o1) they give */
  int64_t u0 = ty0 * WINO_M - q.ph, u1 = u0 + WINO_M * rb + 2;
  u0 = u0 < 0 ? 0 : u0, u1 = u1 > q.Hi ? q.Hi : u1, u1 = u1 < u0 ? u0 : u1;
  int64_t o0 = ty0 * WINO_M, o1 = o0 + WINO_M * rb < q.Ho ? o0 + WINO_M * rb : q.Ho;
  const int64_t nu = u1 - u0, no = o1 - o0;
  const float *xb[WINO_MAX_SEGS];
  float *yb[WINO_MAX_SEGS];
  int64_t xrs[WINO_MAX_SEGS], yrs[WINO_MAX_SEGS], off[WINO_MAX_SEGS], ooff[WINO_MAX_SEGS];
  float *Tin = sl.T, *Tout = sl.T + Ci * (WINO_M * m->rb + 2) * Wsum;
  for (int b = 0; b < sg.n; b++) {
    off[b] = b ? off[b - 1] + Ci * nu * sg.Wi[b - 1] : 0;
    ooff[b] = b ? ooff[b - 1] + Co * no * sg.Wo[b - 1] : 0;
    if (!m->nhwc) continue;
    for (int64_t u = u0; u < u1; u++) /* (Wi[b], Ci) -> (Ci, nu, Wi[b]) */
      to_planar(Tin + off[b] + (u - u0) * sg.Wi[b], xn + ((rh + u * m->dh) * WA + rw[b]) * Ci,
                NULL, sg.Wi[b], Ci, nu * sg.Wi[b], dw * Ci);
  }
  for (int64_t ci = 0; ci < Ci; ci++) {
    for (int b = 0; b < sg.n; b++)
      if (m->nhwc) xb[b] = Tin + off[b] + ci * nu * sg.Wi[b], xrs[b] = sg.Wi[b];
      else xb[b] = xn + ci * m->HA * WA + rh * WA + rw[b], xrs[b] = m->dh * WA;
    input_block_dil(sl.V + ci * Tb, vs, &sg, xb, xrs, m->nhwc ? 1 : dw, m->nhwc ? u0 : 0, &q, ty0,
                    rb, sl.scratch);
  }
  products(m, U, sl.V, sl.M, Tb, sl.pk);
  for (int64_t co = 0; co < Co; co++) {
    for (int b = 0; b < sg.n; b++)
      if (m->nhwc) yb[b] = Tout + ooff[b] + co * no * sg.Wo[b], yrs[b] = sg.Wo[b];
      else yb[b] = yn + co * m->HoA * WoA + a * WoA + b, yrs[b] = m->dh * WoA;
    output_block_dil(yb, yrs, m->nhwc ? 1 : dw, m->nhwc ? o0 : 0, &sg, sl.M + co * Tb, ms, &q,
                     ty0, rb, bias ? bias[co] : 0, sl.scratch);
  }
  if (m->nhwc)
    for (int b = 0; b < sg.n; b++)
      for (int64_t i = o0; i < o1; i++)
        from_planar(yn + ((a + i * m->dh) * WoA + b) * Co, Tout + ooff[b] + (i - o0) * sg.Wo[b],
                    sg.Wo[b], Co, no * sg.Wo[b], dw * Co);
}

/* dst = winograd(src, U) + bias over work item (n, tile rows [ty0, ty0 + rb)). */
static void run_item(const wino_plan *p, const float *U, const float *src, const float *bias,
                     float *dst, int64_t n, int64_t ty0, char *slot) {
  int64_t rb = p->TH - ty0 < p->rb ? p->TH - ty0 : p->rb, Tb = rb * p->TW;
  wino_slot sl;
  slot_layout(p, slot, &sl);
  float *V = sl.V, *M = sl.M, *scratch = sl.scratch;
  int64_t vs = p->Ci * Tb, ms = p->Co * Tb; /* xi strides */
  int64_t img = p->Ci * p->Hi * p->Wi, r0 = ty0 * WINO_M - p->ph;
  wino_rows in = rows_of(p, src + n * img, p->mask ? p->mask + n * img : NULL, p->Ci, p->Hi,
                         p->Wi, r0, r0 + WINO_M * rb + 2, sl.T);
  for (int64_t ci = 0; ci < p->Ci; ci++)
    input_block(V + ci * Tb, vs, in.base + ci * in.cs, in.mask ? in.mask + ci * in.cs : NULL,
                in.row0, p, ty0, rb, scratch);
  products(p, U, V, M, Tb, sl.pk);
  /* channels-last: the item's output rows [o0, o1) planar in T, then interleaved */
  float *dn = dst + n * p->Co * p->Ho * p->Wo, *yb = dn;
  int64_t o0 = ty0 * WINO_M, o1 = o0 + WINO_M * rb < p->Ho ? o0 + WINO_M * rb : p->Ho;
  int64_t cs = p->Ho * p->Wo, row0 = 0;
  if (p->nhwc) yb = sl.T, cs = (o1 - o0) * p->Wo, row0 = o0;
  for (int64_t co = 0; co < p->Co; co++)
    output_block(yb + co * cs, row0, M + co * Tb, ms, p, ty0, rb, bias ? bias[co] : 0, scratch);
  if (p->nhwc) from_planar(dn + o0 * p->Wo * p->Co, sl.T, cs, p->Co, cs, p->Co);
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
  if (u_packed(p)) {
    char *upk = (char *)ws + al64((size_t)(45 * p->Ci * p->Co) * 4);
    for (int xi = 0; xi < WINO_XI; xi++)
      nn_gemm_pack(0, 0, p->Co, p->Ci, U + (int64_t)xi * p->Co * p->Ci, p->Ci,
                   upk + (size_t)xi * upk_bytes(p));
  }
  char *slots = (char *)ws + u_bytes(p);
  size_t sb = slot_bytes(p);
  /* items: (image, tile rows), a dilated convolution's (image, row phase, its tile rows) */
  int64_t per = (p->TH + p->rb - 1) / p->rb, dil = p->dh * p->dw > 1, items = p->N * p->dh * per;
  int nt = threads_for(p, ws_bytes, items);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    if (dil) { /* a block of tile rows of every row phase at a time, handed out in turn: a
                * thread slowed by another process's load leaves its share to the other, and
                * one thread writes all the rows of a block (channels first, the row phases'
                * rows interleave within cache lines) */
      const int64_t dh = p->dh;
#pragma omp for schedule(dynamic, 1)
      for (int64_t blk = 0; blk < items / dh; blk++)
        for (int64_t a = 0; a < dh; a++)
          run_item_dil(p, U, src, bias, dst, blk / per, a, blk % per * p->rb,
                       slots + (size_t)k * sb);
    } else
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
 * plane; gc its row row0, masked by mc when not NULL), A down the rows then along them,
 * contiguous over all tiles; *sum (when not NULL) gets the sum of the item's gradient. */
OPF_VEC static void grad_block(float *restrict G, int64_t ms, const float *restrict gc,
                               const float *restrict mc, int64_t row0, const wino_plan *p,
                               int64_t ty0, int64_t rb, float *restrict sum,
                               float *restrict scratch) {
  const int64_t TW = p->TW, Tb = rb * TW, Wo = p->Wo, full = Wo / WINO_M;
  float *restrict Yr = scratch, *restrict Z = Yr + 16 * Tb; /* Yr[i][j][t], Z[x][j][t] */
  float *restrict mrow = Z + 24 * Tb; /* a masked row (Wo <= 4 TW floats) */
  const int64_t js = Tb, is = 4 * Tb;
  for (int64_t q = 0; q < rb; q++)
    for (int i = 0; i < WINO_M; i++) {
      int64_t oy = (ty0 + q) * WINO_M + i;
      float *d = Yr + i * is + q * TW;
      if (oy >= p->Ho) {
        for (int j = 0; j < 4; j++) memset(d + j * js, 0, (size_t)TW * sizeof *d);
        continue;
      }
      const float *row = gc + (oy - row0) * Wo;
      if (mc) copy_masked(mrow, row, mc + (oy - row0) * Wo, Wo), row = mrow;
      for (int64_t t = 0; t < full; t++)
        d[t] = row[4 * t], d[js + t] = row[4 * t + 1], d[2 * js + t] = row[4 * t + 2],
        d[3 * js + t] = row[4 * t + 3];
      for (int64_t t = full; t < TW; t++)
        for (int j = 0; j < 4; j++) d[j * js + t] = 4 * t + j < Wo ? row[4 * t + j] : 0;
    }
  if (sum) { /* every gradient element is in one tile, the rest of Yr is 0 */
    wvec acc = {0};
    int64_t n = 16 * Tb, n8 = n & ~(int64_t)7;
    for (int64_t i = 0; i < n8; i += WL) acc += WLD(Yr + i);
    float s = 0;
    for (int k = 0; k < WL; k++) s += acc[k];
    for (int64_t i = n8; i < n; i++) s += Yr[i];
    *sum += s;
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
  int64_t vs = p->Ci * Tb, gs = p->Co * Tb, gimg = p->Co * p->Ho * p->Wo;
  int64_t r0 = ty0 * WINO_M - p->ph, o0 = ty0 * WINO_M;
  wino_rows in = rows_of(p, x + n * p->Ci * p->Hi * p->Wi, NULL, p->Ci, p->Hi, p->Wi, r0,
                         r0 + WINO_M * rb + 2, sl.T);
  for (int64_t ci = 0; ci < p->Ci; ci++)
    input_block(V + ci * Tb, vs, in.base + ci * in.cs, NULL, in.row0, p, ty0, rb, scratch);
  wino_rows go = rows_of(p, gy + n * gimg, p->mask ? p->mask + n * gimg : NULL, p->Co, p->Ho,
                         p->Wo, o0, o0 + WINO_M * rb, sl.T);
  for (int64_t co = 0; co < p->Co; co++)
    grad_block(G + co * Tb, gs, go.base + co * go.cs, go.mask ? go.mask + co * go.cs : NULL,
               go.row0, p, ty0, rb, p->gsum ? sl.gs + co : NULL, scratch);
  /* the own kernel wherever its tiles fit (nn_gemm's call-size limit sends these 64 x 64 x
   * 56 products to OpenBLAS, measured ~2x slower per product here) */
  int own = p->own && Tb >= 32 && nn_gemm_own(OPF_F32, p->Co, p->Ci, (int64_t)1 << 20);
  for (int xi = 0; xi < WINO_XI; xi++) {
    float *d = dU + (int64_t)xi * p->Co * p->Ci;
    if (own)
      nn_gemm_pre(0, 1, p->Co, p->Ci, Tb, G + xi * gs, Tb, V + xi * vs, Tb, 1.0, d, p->Ci, sl.pk,
                  NULL, NULL);
    else
      nn_gemm(OPF_F32, 0, 1, p->Co, p->Ci, Tb, G + xi * gs, Tb, V + xi * vs, Tb, 1.0, d, p->Ci,
              sl.pk);
  }
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

/* The plan's additions for a fused operator (fu may be NULL). */
static void plan_fuse(wino_plan *p, const nn_wino_fuse *fu) {
  if (!fu) return;
  p->wsc = fu->wscale, p->mask = fu->mask, p->relu = fu->relu, p->gsum = fu->gsum;
}

void nn_wino_forward_fused(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                           const void *w, const void *b, const nn_wino_fuse *fu, void *y) {
  wino_plan p;
  fwd_plan(g, &p);
  plan_fuse(&p, fu);
  run(&p, ws, ws_bytes, w, 0, x, b, y);
}

void nn_wino_forward(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                     const void *w, const void *b, void *y) {
  nn_wino_forward_fused(g, ws, ws_bytes, x, w, b, NULL, y);
}

void nn_wino_weight_grad_fused(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                               const void *gy, const nn_wino_fuse *fu, void *dw) {
  wino_plan p;
  fwd_plan(g, &p);
  plan_fuse(&p, fu);
  p.wsc = NULL;
  char *slots = (char *)ws + u_bytes(&p);
  size_t sb = slot_bytes(&p), du = (size_t)(WINO_XI * p.Ci * p.Co);
  wino_slot s0;
  slot_layout(&p, slots, &s0);
  size_t du_off = (size_t)((char *)s0.dU - slots), gs_off = (size_t)((char *)s0.gs - slots);
  int64_t per = (p.TH + p.rb - 1) / p.rb, items = p.N * per;
  int nt = threads_for(&p, ws_bytes, items), used = 1;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    if (k == 0) used = m;
    memset(slots + (size_t)k * sb + du_off, 0, du * 4);
    memset(slots + (size_t)k * sb + gs_off, 0, (size_t)p.Co * 4);
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++)
      dw_item(&p, x, gy, it / per, it % per * p.rb, slots + (size_t)k * sb);
  }
  float *dU = (float *)(slots + du_off), *gs = (float *)(slots + gs_off);
  for (int k = 1; k < used; k++) {
    const float *o = (const float *)(slots + (size_t)k * sb + du_off);
    const float *og = (const float *)(slots + (size_t)k * sb + gs_off);
    for (size_t i = 0; i < du; i++) dU[i] += o[i];
    for (int64_t f = 0; f < p.Co; f++) gs[f] += og[f];
  }
  weight_untransform(dw, dU, &p);
  if (p.gsum) memcpy(p.gsum, gs, (size_t)p.Co * 4);
}

void nn_wino_weight_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                         const void *gy, void *dw) {
  nn_wino_weight_grad_fused(g, ws, ws_bytes, x, gy, NULL, dw);
}

void nn_wino_data_grad_fused(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *gy,
                             const void *w, const void *bias, const nn_wino_fuse *fu,
                             void *dx) {
  wino_plan p;
  bwd_plan(g, &p);
  plan_fuse(&p, fu);
  p.relu = 0, p.gsum = NULL;
  run(&p, ws, ws_bytes, w, 1, gy, bias, dx);
}

void nn_wino_data_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *gy,
                       const void *w, const void *bias, void *dx) {
  nn_wino_data_grad_fused(g, ws, ws_bytes, gy, w, bias, NULL, dx);
}

/* ---- the plan and transforms for the 3-D driver (conv_wino.h) ---- */
void nn_wino_plan(wino_plan *p, int64_t N, int64_t Ci, int64_t Co, int64_t Hi, int64_t Wi,
                  int64_t ph, int64_t pw, int own) {
  plan_of(p, N, Ci, Co, Hi, Wi, ph, pw, 0, own);
}
void nn_wino_weights(float *U, float *wt, const float *w, const wino_plan *p, int flip) {
  weight_transform(U, wt, w, p, flip);
}
void nn_wino_unweights(float *dw, const float *dU, const wino_plan *p) {
  weight_untransform(dw, dU, p);
}
void nn_wino_input(float *V, int64_t vs, const float *xc, const wino_plan *p, int64_t ty0,
                   int64_t rb, float *scratch) {
  input_block(V, vs, xc, NULL, 0, p, ty0, rb, scratch);
}
void nn_wino_output(float *yc, const float *M, int64_t ms, const wino_plan *p, int64_t ty0,
                    int64_t rb, float bias, float *scratch) {
  output_block(yc, 0, M, ms, p, ty0, rb, bias, scratch);
}
void nn_wino_grad(float *G, int64_t ms, const float *gc, const wino_plan *p, int64_t ty0,
                  int64_t rb, float *scratch) {
  grad_block(G, ms, gc, NULL, 0, p, ty0, rb, NULL, scratch);
}

/* conv_core.c: the N-d convolution core (see conv_core.h). im2col on L2-sized blocks of output
 * positions, then OpenBLAS GEMMs on the block: forward W col, weight gradient g col^T, data
 * gradient col2im(W^T g). Channels-first and channels-last layouts share the plan; 1x1
 * stride-1 unpadded convolutions use the image as its own col matrix. Threads take whole work
 * items (equal ranges of the outer spatial axis of an image) with single-threaded GEMMs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conv_core.h"
#include "linalg/linalg.h" /* lin_gemm: the project's dtype-dispatching GEMM */

/* Bytes of col rows plus output rows per block of positions: the block stays in the core's L2
 * (1 MB on Zen5) between im2col, the GEMM and the epilogue. */
#define CONV_BLOCK_BYTES ((int64_t)1 << 20)
/* Fewest positions per block: below this the GEMM's N dimension, not L2, limits (measured on
 * wide-channel 3-D convolutions, whose col rows alone would fill L2 at ~100 positions). */
#define CONV_MIN_COLS 128
#define CONV_LANES 32
/* Channels-first groups of at most this many filters and col rows use the hand-written
 * small products instead of OpenBLAS. Measured (1 thread, f32): they win 1.3-2x on first
 * layers (C = 3: Kc = 27, F = 64), 16-channel 3x3 and 64-channel 1x1 convolutions and every
 * grouped shape with the OpenBLAS build as installed (which runs its AVX2 Haswell kernels on
 * this AVX-512 machine), and stay within ~10% of its AVX-512 kernels
 * (OPENBLAS_CORETYPE=SkylakeX); beyond Kc = 256 BLAS's AVX-512 kernels win. Against the own
 * packed AVX-512 GEMM (conv_gemm.c, since its unmasked stores) they lose once the weight
 * block passes about 64 x 160 (Zen 5, 1 thread, interleaved: conv1d 1x64x65536 64 filters
 * k3, Fg x Kc = 64 x 192: forward 15.3 -> 10.2 ms, backward 30.8 -> 23.5 ms on the GEMM; 64 x
 * 144 stride 2: 3.2 small vs 3.3 GEMM; 16 x 144: 3.9 small vs 6.2 GEMM). */
#define CONV_SMALL_F 64
#define CONV_SMALL_K 256
#define CONV_SMALL_FK (64 * 160)

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }

/* Position rows of a channels-first block: rows q (fixed outer coordinates, OW positions)
 * meeting [j0, j1), CONV_ROWS at a time. For each: e, where the row's position a lands in the
 * block; the run [a, b) of the row inside the block; i0/i1, o*s along the two outer axes
 * (the input coordinates of its taps before the tap and padding offsets). */
#define CONV_ROWS 32
typedef struct conv_rows {
  int n, full; /* full: every run is a whole row (a = 0, b = OW) */
  int64_t e[CONV_ROWS], a[CONV_ROWS], b[CONV_ROWS], i0[CONV_ROWS], i1[CONV_ROWS];
} conv_rows;

/* Fills rw from row q on; returns the row after them, or -1 when the block is done. */
static inline int64_t conv_rows_fill(const nn_conv_geom *g, int64_t j0, int64_t j1, int64_t q,
                                     conv_rows *rw) {
  const int64_t OW = g->out[2], OH = g->out[1];
  rw->n = 0, rw->full = 1;
  if (q * OW >= j1) return -1;
  int64_t o1 = q % OH, o0 = q / OH;
  for (; rw->n < CONV_ROWS && q * OW < j1; q++) {
    int i = rw->n++;
    int64_t e = q * OW - j0;
    rw->a[i] = e < 0 ? -e : 0;
    rw->b[i] = j1 - q * OW < OW ? j1 - q * OW : OW;
    rw->e[i] = e + rw->a[i];
    rw->full &= rw->a[i] == 0 && rw->b[i] == OW;
    rw->i0[i] = o0 * g->s[0], rw->i1[i] = o1 * g->s[1];
    if (++o1 == OH) o1 = 0, o0++;
  }
  return q;
}

/* The taps of a channels-first window: offsets along the two outer axes (t*d - p), the
 * offset along the row and the output range [lo, hi) of the row they land inside. */
#define CONV_MAX_TAPS 64
typedef struct conv_tap {
  int64_t d0, d1, off, lo, hi;
} conv_tap;

static inline void conv_taps(const nn_conv_geom *g, conv_tap *tp) {
  for (int64_t t = 0; t < g->KK; t++) {
    int64_t kw = t % g->k[2];
    tp[t].d0 = t / (g->k[1] * g->k[2]) * g->d[0] - g->p[0];
    tp[t].d1 = t / g->k[2] % g->k[1] * g->d[1] - g->p[1];
    tp[t].off = kw * g->d[2] - g->p[2];
    nn_tap_range(g->in[2], g->out[2], g->s[2], g->p[2], kw * g->d[2], &tp[t].lo, &tp[t].hi);
  }
}

/* ---- dtype kernels: one template for float and double, untyped pointers so one table of
 * function pointers serves both ---- */
#define CONV_KERNELS(T, SFX)                                                                     \
  /* One run of a position row: the col row d (position a at d[0]) gets, for positions o    \
   * in [a, b), the taps xr[o*sw + off] that land inside the input ([l, h)) and 0 around. */   \
  static inline __attribute__((always_inline)) void im2col_run_##SFX(                        \
      T *restrict d, const T *restrict xr, int64_t a, int64_t l, int64_t h, int64_t b,         \
      int64_t sw, int64_t off) {                                                               \
    for (int64_t o = a; o < l; o++) d[o - a] = 0;                                             \
    if (sw == 1)                                                                              \
      for (int64_t o = l; o < h; o++) d[o - a] = xr[o + off];                                 \
    else                                                                                      \
      for (int64_t o = l; o < h; o++) d[o - a] = xr[o * sw + off];                            \
    for (int64_t o = h; o < b; o++) d[o - a] = 0;                                             \
  }                                                                                           \
  /* Channels-first col block: col[r*ld + j - j0] = big[c, tap r of position j] for           \
   * r = (c, kd, kh, kw) and positions j in [j0, j1) (0 in the padding); nn_tap_range splits  \
   * each position row (fixed od, oh) into zero head, strided body and zero tail. Blocks of   \
   * whole rows (2-D and 3-D) walk the rows directly; others (1-D, wide rows) clip each row   \
   * to the block through a table of runs. */                                                \
  OPF_VEC static void im2col_cf_##SFX(void *col_, int64_t ld, const void *x_,                  \
                                      const nn_conv_geom *g, int64_t j0, int64_t j1) {         \
    T *restrict col = col_;                                                                   \
    const T *restrict x = x_;                                                                 \
    const int64_t k12 = g->k[1] * g->k[2], sw = g->s[2], OW = g->out[2], OH = g->out[1];      \
    const int whole = j0 % OW == 0 && j1 % OW == 0;                                           \
    conv_rows rw = {0};                                                                       \
    for (int64_t q = j0 / OW; whole ? q * OW < j1 : (q = conv_rows_fill(g, j0, j1, q, &rw)) >= 0;) { \
      for (int64_t r = 0; r < g->Kall; r++) {                                                 \
        int64_t ch = r / g->KK, t = r % g->KK, kw = t % g->k[2], lo, hi;                      \
        int64_t od = t / k12 * g->d[0] - g->p[0], oh = t / g->k[2] % g->k[1] * g->d[1] - g->p[1]; \
        nn_tap_range(g->in[2], OW, sw, g->p[2], kw * g->d[2], &lo, &hi);                      \
        const T *xc = x + ch * g->S;                                                          \
        const int64_t off = kw * g->d[2] - g->p[2];                                           \
        T *restrict dst = col + r * ld;                                                       \
        if (whole) {                                                                          \
          int64_t o0 = q / OH, o1 = q % OH;                                                   \
          for (int64_t e = 0; e < j1 - j0; e += OW) {                                         \
            int64_t id = o0 * g->s[0] + od, ih = o1 * g->s[1] + oh;                           \
            if (++o1 == OH) o1 = 0, o0++;                                                     \
            if ((uint64_t)id >= (uint64_t)g->in[0] || (uint64_t)ih >= (uint64_t)g->in[1])     \
              im2col_run_##SFX(dst + e, xc, 0, OW, OW, OW, sw, off);                          \
            else                                                                              \
              im2col_run_##SFX(dst + e, xc + (id * g->in[1] + ih) * g->in[2], 0, lo, hi, OW, sw, \
                               off);                                                          \
          }                                                                                   \
          continue;                                                                           \
        }                                                                                     \
        for (int i = 0; i < rw.n; i++) {                                                      \
          int64_t a = rw.a[i], b = rw.b[i], id = rw.i0[i] + od, ih = rw.i1[i] + oh;           \
          int64_t l = lo < a ? a : lo > b ? b : lo, h = hi > b ? b : hi < l ? l : hi;         \
          const T *xr = xc;                                                                   \
          if ((uint64_t)id >= (uint64_t)g->in[0] || (uint64_t)ih >= (uint64_t)g->in[1])       \
            l = h = b;                                                                        \
          else                                                                                \
            xr += (id * g->in[1] + ih) * g->in[2];                                            \
          im2col_run_##SFX(dst + rw.e[i], xr, a, l, h, b, sw, off);                           \
        }                                                                                     \
      }                                                                                       \
      if (whole) break;                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* The adjoint: adds the col block into big, only where the outer-axis coordinate is in    \
   * [wlo, whi) (the slabs this work item owns). With a depthwise weight w, col holds the     \
   * output gradient rows of the block and tap t of channel c gets sum_f w[f, t] g[f]. */      \
  OPF_VEC static void col2im_cf_##SFX(void *dx_, const void *col_, int64_t ld,                 \
                                      const nn_conv_geom *g, int64_t j0, int64_t j1,           \
                                      int64_t wlo, int64_t whi, const void *w_) {              \
    T *restrict dx = dx_;                                                                     \
    const T *restrict col = col_, *w = w_;                                                    \
    const int64_t k12 = g->k[1] * g->k[2], sw = g->s[2];                                      \
    int64_t lo3[3] = {0, 0, 0}, hi3[3] = {g->in[0], g->in[1], g->in[2]};                      \
    lo3[g->oax] = wlo, hi3[g->oax] = whi;                                                     \
    conv_rows rw;                                                                             \
    for (int64_t q = j0 / g->out[2]; (q = conv_rows_fill(g, j0, j1, q, &rw)) >= 0;) {         \
      for (int64_t r = 0; r < g->Kall; r++) {                                                 \
        int64_t ch = r / g->KK, t = r % g->KK, kw = t % g->k[2], lo, hi;                      \
        int64_t od = t / k12 * g->d[0] - g->p[0], oh = t / g->k[2] % g->k[1] * g->d[1] - g->p[1]; \
        int64_t off = kw * g->d[2] - g->p[2];                                                 \
        nn_tap_range(hi3[2] - lo3[2], g->out[2], sw, g->p[2] + lo3[2], kw * g->d[2], &lo,     \
                     &hi);                                                                    \
        T *dc = dx + ch * g->S;                                                               \
        for (int i = 0; i < rw.n; i++) {                                                      \
          int64_t a = rw.a[i], b = rw.b[i], id = rw.i0[i] + od, ih = rw.i1[i] + oh;           \
          if (id < lo3[0] || id >= hi3[0] || ih < lo3[1] || ih >= hi3[1]) continue;           \
          int64_t l = lo, h = hi;                                                             \
          if (!rw.full) l = lo < a ? a : lo > b ? b : lo, h = hi > b ? b : hi < l ? l : hi;   \
          T *restrict dr = dc + (id * g->in[1] + ih) * g->in[2];                              \
          for (int64_t m = 0; m < (w ? g->Fg : 1); m++) {                                     \
            int64_t f = ch * g->Fg + m; /* position a of the source row: */                  \
            const T *restrict sr = col + (w ? f : r) * ld + rw.e[i];                          \
            T sc = w ? w[f * g->KK + t] : 1;                                                  \
            if (sw == 1)                                                                      \
              for (int64_t o = l; o < h; o++) dr[o + off] += sc * sr[o - a];                 \
            else                                                                              \
              for (int64_t o = l; o < h; o++) dr[o * sw + off] += sc * sr[o - a];             \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* Channels-last col block and its adjoint. Row j - j0 (ld apart) of col holds, per group  \
   * gi, the Cg channels of every tap at gi*Kc + t*Cg: contiguous runs of the channel vector  \
   * of the tap's input position (the layout im2col is natural for). adj = 0: col = im2col(x) \
   * (0 in the padding); adj = 1: x += col2im(col) where the outer coordinate is in         \
   * [wlo, whi). */                                                                           \
  OPF_VEC static void cl_walk_##SFX(T *restrict col, int64_t ld, T *restrict x,              \
                                    const nn_conv_geom *g, int64_t j0, int64_t j1,             \
                                    int64_t wlo, int64_t whi, int adj) {                       \
    const int64_t C = g->C, Cg = g->Cg, Kc = g->Kc, G = g->groups;                            \
    int64_t lo3[3] = {0, 0, 0}, hi3[3] = {g->in[0], g->in[1], g->in[2]};                      \
    lo3[g->oax] = wlo, hi3[g->oax] = whi;                                                     \
    for (int64_t j = j0; j < j1; j++) {                                                       \
      int64_t o2 = j % g->out[2], q = j / g->out[2], o1 = q % g->out[1], o0 = q / g->out[1];  \
      T *cj = col + (j - j0) * ld;                                                            \
      int64_t t = 0;                                                                          \
      for (int64_t a = 0; a < g->k[0]; a++) {                                                 \
        int64_t i0 = o0 * g->s[0] - g->p[0] + a * g->d[0];                                    \
        for (int64_t b = 0; b < g->k[1]; b++) {                                               \
          int64_t i1 = o1 * g->s[1] - g->p[1] + b * g->d[1];                                  \
          for (int64_t k = 0; k < g->k[2]; k++, t++) {                                        \
            int64_t i2 = o2 * g->s[2] - g->p[2] + k * g->d[2];                                \
            T *ct = cj + t * Cg;                                                              \
            if (i0 < lo3[0] || i0 >= hi3[0] || i1 < lo3[1] || i1 >= hi3[1] || i2 < lo3[2] ||  \
                i2 >= hi3[2]) {                                                               \
              for (int64_t gi = 0; !adj && gi < G; gi++)                                      \
                for (int64_t cl = 0; cl < Cg; cl++) ct[gi * Kc + cl] = 0;                     \
              continue;                                                                       \
            }                                                                                 \
            T *xt = x + ((i0 * g->in[1] + i1) * g->in[2] + i2) * C;                           \
            for (int64_t gi = 0; gi < G; gi++)                                                \
              if (adj)                                                                        \
                for (int64_t cl = 0; cl < Cg; cl++) xt[gi * Cg + cl] += ct[gi * Kc + cl];     \
              else                                                                            \
                for (int64_t cl = 0; cl < Cg; cl++) ct[gi * Kc + cl] = xt[gi * Cg + cl];      \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  static void im2col_cl_##SFX(void *col, int64_t ld, const void *x, const nn_conv_geom *g,   \
                              int64_t j0, int64_t j1) {                                        \
    cl_walk_##SFX(col, ld, (T *)x, g, j0, j1, 0, g->in[g->oax], 0); /* x only read */        \
  }                                                                                           \
  static void col2im_cl_##SFX(void *dx, const void *col, int64_t ld, const nn_conv_geom *g,  \
                              int64_t j0, int64_t j1, int64_t wlo, int64_t whi,               \
                              const void *w) {                                                \
    (void)w; /* never depthwise */                                                            \
    cl_walk_##SFX((T *)col, ld, dx, g, j0, j1, wlo, whi, 1); /* col only read */              \
  }                                                                                           \
  /* Epilogue on positions [j0, j0 + n) of a (F, ld) channels-first or (., F) channels-last  \
   * matrix: y = relu?(y * sc[f] + sh[f]), sc/sh NULL meaning 1/0. */                         \
  OPF_VEC static void epi_##SFX(void *y_, int64_t ld, int64_t j0, int64_t n, int64_t F,        \
                              int nhwc, const void *sc_, const void *sh_, int relu) {          \
    T *restrict y = y_;                                                                       \
    const T *restrict sc = sc_, *restrict sh = sh_;                                           \
    if (!nhwc) {                                                                              \
      for (int64_t f = 0; f < F; f++) {                                                       \
        T a = sc ? sc[f] : 1, b = sh ? sh[f] : 0;                                             \
        T *restrict r = y + f * ld + j0;                                                      \
        if (relu)                                                                             \
          for (int64_t j = 0; j < n; j++) {                                                   \
            T v = r[j] * a + b;                                                               \
            r[j] = v > 0 ? v : 0;                                                             \
          }                                                                                   \
        else                                                                                  \
          for (int64_t j = 0; j < n; j++) r[j] = r[j] * a + b;                                \
      }                                                                                       \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t j = 0; j < n; j++) {                                                         \
      T *restrict r = y + (j0 + j) * F;                                                       \
      if (sc)                                                                                 \
        for (int64_t f = 0; f < F; f++) r[f] *= sc[f];                                        \
      if (sh)                                                                                 \
        for (int64_t f = 0; f < F; f++) r[f] += sh[f];                                        \
      if (relu)                                                                               \
        for (int64_t f = 0; f < F; f++) r[f] = r[f] > 0 ? r[f] : 0;                           \
    }                                                                                         \
  }                                                                                           \
  /* acc[f] += sum of y over positions [j0, j0 + n), same matrix conventions; CONV_LANES     \
   * partial sums let the compiler vectorise the channels-first rows. */                      \
  OPF_VEC static void sums_##SFX(void *acc_, const void *y_, int64_t ld, int64_t j0, int64_t n, \
                               int64_t F, int nhwc) {                                          \
    T *restrict acc = acc_;                                                                   \
    const T *restrict y = y_;                                                                 \
    if (nhwc) {                                                                               \
      for (int64_t j = 0; j < n; j++)                                                         \
        for (int64_t f = 0; f < F; f++) acc[f] += y[(j0 + j) * F + f];                        \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t f = 0; f < F; f++) {                                                         \
      const T *restrict r = y + f * ld + j0;                                                  \
      T part[CONV_LANES] = {0}, s = 0;                                                        \
      int64_t j = 0;                                                                          \
      for (; j + CONV_LANES <= n; j += CONV_LANES)                                            \
        for (int l = 0; l < CONV_LANES; l++) part[l] += r[j + l];                             \
      for (; j < n; j++) s += r[j];                                                           \
      for (int l = 0; l < CONV_LANES; l++) s += part[l];                                      \
      acc[f] += s;                                                                            \
    }                                                                                         \
  }                                                                                           \
  /* d = g where m > 0, else 0 (the relu mask of a fused backward) */                         \
  OPF_VEC static void mask_##SFX(void *d_, const void *g_, const void *m_, int64_t n) {        \
    T *restrict d = d_;                                                                       \
    const T *restrict gr = g_, *restrict m = m_;                                              \
    for (int64_t i = 0; i < n; i++) d[i] = m[i] > 0 ? gr[i] : 0;                              \
  }                                                                                           \
  OPF_VEC static void vadd_##SFX(void *a_, const void *b_, int64_t n) {                        \
    T *restrict a = a_;                                                                       \
    const T *restrict b = b_;                                                                 \
    for (int64_t i = 0; i < n; i++) a[i] += b[i];                                             \
  }                                                                                           \
  /* The weight in GEMM order: (F, Kc) with columns (t, cl) for channels-last, rows scaled by \
   * sc (NULL: 1); unprep is the inverse permutation (dw back to (F, Cg, k...)). */            \
  static void wprep_##SFX(void *wp_, const void *w_, const nn_conv_geom *g, const void *sc_,    \
                        int inverse) {                                                        \
    T *restrict wp = wp_;                                                                     \
    const T *restrict w = w_, *restrict sc = sc_;                                             \
    for (int64_t f = 0; f < g->F; f++) {                                                      \
      T a = sc ? sc[f] : 1;                                                                   \
      for (int64_t cl = 0; cl < g->Cg; cl++)                                                  \
        for (int64_t t = 0; t < g->KK; t++) {                                                 \
          int64_t i = (f * g->Cg + cl) * g->KK + t;                                           \
          int64_t o = f * g->Kc + (g->nhwc ? t * g->Cg + cl : cl * g->KK + t);                \
          if (inverse) wp[i] = w[o];                                                          \
          else wp[o] = w[i] * a;                                                              \
        }                                                                                     \
    }                                                                                         \
  }

CONV_KERNELS(float, f32)
CONV_KERNELS(double, f64)

/* Products of small groups (grouped, depthwise): OpenBLAS spends more in call overhead and
 * packing than in arithmetic on a (4 x 36) x (36 x 168) product, so channels-first blocks of
 * groups with few filters and taps use these register-blocked loops on the same col block,
 * with 64-byte GCC vectors (V lanes) as accumulators.
 * nn: C (M x n, ldc) = A B with A(m, k) = A[m*sm + k*sk] (W or W^T) and B (K x n, ldb) rows,
 * in blocks of 4 rows x 2 vectors (1 row x 4 vectors); a last partial block is recomputed
 * overlapping the previous one (the product overwrites C), blocks narrower than that go
 * element by element.
 * nt: C (M x N, ldc) += A B^T, A (M x n) and B (N x n) rows: dot products in 4 x 4 blocks. */
#define CONV_SMALL(T, SFX, V)                                                                  \
  typedef T vec_##SFX __attribute__((vector_size(V * sizeof(T)), aligned(sizeof(T))));      \
  static inline __attribute__((always_inline)) void nn_blk_##SFX(int mb, int nv, int64_t K, const T *A, int64_t sm,         \
                                  int64_t sk, const T *B, int64_t ldb, T *C, int64_t ldc) {   \
    vec_##SFX acc[4][4] = {{{0}}};                                                            \
    for (int64_t k = 0; k < K; k++) {                                                         \
      const vec_##SFX *b = (const vec_##SFX *)(B + k * ldb);                                  \
      for (int i = 0; i < mb; i++) {                                                          \
        T a = A[i * sm + k * sk];                                                             \
        for (int v = 0; v < nv; v++) acc[i][v] += a * b[v];                                   \
      }                                                                                       \
    }                                                                                         \
    for (int i = 0; i < mb; i++)                                                              \
      for (int v = 0; v < nv; v++) ((vec_##SFX *)(C + i * ldc))[v] = acc[i][v];              \
  }                                                                                           \
  OPF_VEC static void small_nn_##SFX(int64_t M, int64_t n, int64_t K, const void *A_,        \
                                     int64_t sm, int64_t sk, const void *B_, int64_t ldb,     \
                                     void *C_, int64_t ldc) {                                 \
    const T *A = A_, *B = B_;                                                                 \
    T *C = C_;                                                                                \
    for (int64_t m = 0; m < M;) {                                                             \
      int mb = M - m >= 4 ? 4 : 1, nv = mb == 4 ? 2 : 4, w = nv * V;                          \
      for (int64_t j = 0; n >= w && j < n; j += w) {                                          \
        int64_t j0 = j + w <= n ? j : n - w;                                                  \
        if (mb == 4) nn_blk_##SFX(4, 2, K, A + m * sm, sm, sk, B + j0, ldb, C + m * ldc + j0, ldc); \
        else nn_blk_##SFX(1, 4, K, A + m * sm, sm, sk, B + j0, ldb, C + m * ldc + j0, ldc);   \
      }                                                                                       \
      for (int i = 0; n < w && i < mb; i++)                                                   \
        for (int64_t j = 0; j < n; j++) {                                                     \
          T acc = 0;                                                                          \
          for (int64_t k = 0; k < K; k++) acc += A[(m + i) * sm + k * sk] * B[k * ldb + j];   \
          C[(m + i) * ldc + j] = acc;                                                         \
        }                                                                                     \
      m += mb;                                                                                \
    }                                                                                         \
  }                                                                                           \
  static inline __attribute__((always_inline)) void nt_blk_##SFX(int mb, int nb, int64_t n, const T *A, int64_t lda,        \
                                  const T *B, int64_t ldb, T *C, int64_t ldc) {               \
    vec_##SFX acc[4][4] = {{{0}}};                                                            \
    int64_t j = 0;                                                                            \
    for (; j + V <= n; j += V) {                                                              \
      vec_##SFX a[4], b[4];                                                                   \
      for (int i = 0; i < mb; i++) a[i] = *(const vec_##SFX *)(A + i * lda + j);              \
      for (int q = 0; q < nb; q++) b[q] = *(const vec_##SFX *)(B + q * ldb + j);              \
      for (int i = 0; i < mb; i++)                                                            \
        for (int q = 0; q < nb; q++) acc[i][q] += a[i] * b[q];                                \
    }                                                                                         \
    if (j < n) { /* the tail as one zero-padded vector per row */                            \
      vec_##SFX a[4] = {{0}}, b[4] = {{0}};                                                   \
      for (int i = 0; i < mb; i++)                                                            \
        for (int64_t l = 0; l < n - j; l++) a[i][l] = A[i * lda + j + l];                     \
      for (int q = 0; q < nb; q++)                                                            \
        for (int64_t l = 0; l < n - j; l++) b[q][l] = B[q * ldb + j + l];                     \
      for (int i = 0; i < mb; i++)                                                            \
        for (int q = 0; q < nb; q++) acc[i][q] += a[i] * b[q];                                \
    }                                                                                         \
    for (int i = 0; i < mb; i++)                                                              \
      for (int q = 0; q < nb; q++) {                                                          \
        T s = 0;                                                                              \
        for (int l = 0; l < V; l++) s += acc[i][q][l];                                        \
        C[i * ldc + q] += s;                                                                  \
      }                                                                                       \
  }                                                                                           \
  /* Depthwise forward, direct: the output block (F rows, ld apart, positions [j0, j1)) of  \
   * filters that each read one channel; per output row, every tap of the window adds        \
   * w[f, t] times a strided run of its input row (no col round trip). */                    \
  OPF_VEC static void dw_fwd_##SFX(void *y_, int64_t ld, const void *x_, const void *w_,     \
                                   const nn_conv_geom *g, int64_t j0, int64_t j1) {           \
    T *y = y_;                                                                                \
    const T *x = x_, *w = w_;                                                                 \
    const int64_t KK = g->KK, sw = g->s[2];                                                   \
    conv_tap tp[CONV_MAX_TAPS];                                                               \
    conv_taps(g, tp);                                                                         \
    conv_rows rw;                                                                             \
    for (int64_t q = j0 / g->out[2]; (q = conv_rows_fill(g, j0, j1, q, &rw)) >= 0;)           \
      for (int64_t f = 0; f < g->F; f++) {                                                    \
        const T *xc = x + f / g->Fg * g->S, *wf = w + f * KK;                                 \
        for (int i = 0; i < rw.n; i++) {                                                      \
          const int64_t a = rw.a[i], b = rw.b[i];                                             \
          T *restrict d = y + f * ld + rw.e[i]; /* position a of the row */                  \
          for (int64_t o = 0; o < b - a; o++) d[o] = 0;                                       \
          for (int64_t t = 0; t < KK; t++) {                                                  \
            int64_t id = rw.i0[i] + tp[t].d0, ih = rw.i1[i] + tp[t].d1;                       \
            if ((uint64_t)id >= (uint64_t)g->in[0] || (uint64_t)ih >= (uint64_t)g->in[1])     \
              continue;                                                                       \
            int64_t l = tp[t].lo > a ? tp[t].lo : a, h = tp[t].hi < b ? tp[t].hi : b;          \
            const T *restrict xr = xc + (id * g->in[1] + ih) * g->in[2];                      \
            const T wv = wf[t];                                                               \
            const int64_t off = tp[t].off;                                                    \
            if (sw == 1)                                                                      \
              for (int64_t o = l; o < h; o++) d[o - a] += wv * xr[o + off];                   \
            else                                                                              \
              for (int64_t o = l; o < h; o++) d[o - a] += wv * xr[o * sw + off];              \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
  }                                                                                           \
  OPF_VEC static void small_nt_##SFX(int64_t M, int64_t N, int64_t n, const void *A_,        \
                                     int64_t lda, const void *B_, int64_t ldb, void *C_,      \
                                     int64_t ldc) {                                           \
    const T *A = A_, *B = B_;                                                                 \
    T *C = C_;                                                                                \
    for (int64_t m = 0; m < M;) {                                                             \
      int mb = M - m >= 4 ? 4 : 1;                                                            \
      for (int64_t r = 0; r < N;) {                                                           \
        int nb = N - r >= 4 ? 4 : 1;                                                          \
        const T *a = A + m * lda, *b = B + r * ldb;                                           \
        T *c = C + m * ldc + r;                                                               \
        if (mb == 4 && nb == 4) nt_blk_##SFX(4, 4, n, a, lda, b, ldb, c, ldc);                \
        else if (mb == 4) nt_blk_##SFX(4, 1, n, a, lda, b, ldb, c, ldc);                      \
        else if (nb == 4) nt_blk_##SFX(1, 4, n, a, lda, b, ldb, c, ldc);                      \
        else nt_blk_##SFX(1, 1, n, a, lda, b, ldb, c, ldc);                                   \
        r += nb;                                                                              \
      }                                                                                       \
      m += mb;                                                                                \
    }                                                                                         \
  }

CONV_SMALL(float, f32, 16)
CONV_SMALL(double, f64, 8)

typedef void (*im2col_fn)(void *col, int64_t ld, const void *x, const nn_conv_geom *g,
                          int64_t j0, int64_t j1);
typedef void (*col2im_fn)(void *dx, const void *col, int64_t ld, const nn_conv_geom *g,
                          int64_t j0, int64_t j1, int64_t wlo, int64_t whi, const void *w);
typedef struct conv_kern {
  im2col_fn im2col[2]; /* [nhwc] */
  col2im_fn col2im[2];
  void (*epi)(void *y, int64_t ld, int64_t j0, int64_t n, int64_t F, int nhwc, const void *sc,
              const void *sh, int relu);
  void (*sums)(void *acc, const void *y, int64_t ld, int64_t j0, int64_t n, int64_t F, int nhwc);
  void (*mask)(void *d, const void *g, const void *m, int64_t n);
  void (*vadd)(void *a, const void *b, int64_t n);
  void (*wprep)(void *wp, const void *w, const nn_conv_geom *g, const void *sc, int inverse);
  void (*small_nn)(int64_t M, int64_t n, int64_t K, const void *A, int64_t sm, int64_t sk,
                   const void *B, int64_t ldb, void *C, int64_t ldc);
  void (*small_nt)(int64_t M, int64_t N, int64_t n, const void *A, int64_t lda, const void *B,
                   int64_t ldb, void *C, int64_t ldc);
  void (*dw_fwd)(void *y, int64_t ld, const void *x, const void *w, const nn_conv_geom *g,
                 int64_t j0, int64_t j1);
} conv_kern;

static const conv_kern conv_kerns[2] = {
    {{im2col_cf_f32, im2col_cl_f32}, {col2im_cf_f32, col2im_cl_f32}, epi_f32, sums_f32,
     mask_f32, vadd_f32, wprep_f32, small_nn_f32, small_nt_f32, dw_fwd_f32},
    {{im2col_cf_f64, im2col_cl_f64}, {col2im_cf_f64, col2im_cl_f64}, epi_f64, sums_f64,
     mask_f64, vadd_f64, wprep_f64, small_nn_f64, small_nt_f64, dw_fwd_f64}};

/* ---- geometry ---- */
void nn_conv_geom_finish(nn_conv_geom *g, opf_dtype dt) {
  g->oax = 3 - g->nd;
  g->esz = opf_dtype_size(dt);
  g->Cg = g->C / g->groups, g->Fg = g->F / g->groups;
  g->S = g->in[0] * g->in[1] * g->in[2], g->P = g->out[0] * g->out[1] * g->out[2];
  g->KK = g->k[0] * g->k[1] * g->k[2], g->Kc = g->Cg * g->KK, g->Kall = g->C * g->KK;
  g->fast = g->KK == 1;
  for (int a = 0; a < 3; a++) g->fast &= g->s[a] == 1 && g->p[a] == 0;
  g->small = !g->nhwc && g->Fg <= CONV_SMALL_F && g->Kc <= CONV_SMALL_K &&
             g->Fg * g->Kc <= CONV_SMALL_FK;
  g->dwise = g->small && !g->fast && g->Cg == 1 && g->KK <= CONV_MAX_TAPS;
  for (int a = 0; a < 3; a++) /* a window that does not fit: infer rejects it */
    if (g->in[a] <= 0 || g->out[a] <= 0) return;
  g->Sin = g->S / g->in[g->oax], g->Pin = g->P / g->out[g->oax];
  int64_t per = ((g->fast ? 0 : g->Kall) + g->F) * (int64_t)g->esz, cols = CONV_BLOCK_BYTES / per;
  if (cols < CONV_MIN_COLS) cols = CONV_MIN_COLS;
  if (g->out[2] <= cols) cols -= cols % g->out[2]; /* whole rows */
  else if (cols > 64) cols &= ~(int64_t)15;       /* whole vectors of the GEMM's N dimension */
  g->cols = cols < g->P ? cols : g->P;
}

/* ---- work plan: per-thread slots after the shared prepared weight ---- */
typedef struct conv_slot {
  char *col, *gm, *dw, *dss, *dbs;
  void *pk; /* nn_gemm's packing scratch (NULL: OpenBLAS) */
} conv_slot;

typedef struct conv_run {
  const nn_conv_job *j;
  const nn_conv_geom *g;
  const conv_kern *k;
  const char *wp;    /* weight in GEMM order */
  const char *wpk;   /* the weight packed for nn_gemm_pre, per group (NULL: not packed) */
  size_t wpk_group;  /* bytes per group of wpk */
  char *slots;
  size_t slot_bytes;
  int pack_tr;       /* the weight packing run_items does first (run_pack): tr of gemm_w */
  int nt;            /* threads */
  int64_t R;         /* work items per image */
} conv_run;

/* nn_gemm's scratch per slot: float32 only (its own kernel). */
static size_t gemm_ws(const nn_conv_geom *g) { return g->esz == 4 ? al64(nn_gemm_ws_bytes()) : 0; }

static size_t slot_bytes(const nn_conv_geom *g) {
  size_t e = g->esz, colb = g->fast ? 0 : (size_t)(g->Kall * g->cols) * e;
  return al64(colb) + al64((size_t)(g->F * g->cols) * e) + al64((size_t)(g->F * g->Kc) * e) +
         al64((size_t)g->F * e) + al64((size_t)g->C * e) + gemm_ws(g);
}

/* The weight packed for the products with it (gemm_w), per group: float32 only. */
static size_t wpk_group_bytes(const nn_conv_geom *g) {
  size_t a = nn_gemm_pack_bytes(g->Fg, g->Kc), b = nn_gemm_pack_bytes(g->Kc, g->Fg);
  return g->esz == 4 ? al64(a > b ? a : b) : 0;
}

/* The weight in GEMM order, then the packed weight. */
static size_t wp_bytes(const nn_conv_geom *g) {
  return al64((size_t)(g->F * g->Kc) * g->esz) + (size_t)g->groups * wpk_group_bytes(g);
}

/* ---- thin images: one product over the whole batch ----
 * Channels-first blocks never cross images, so a small plane (a 4x4 input of a 4x4 stride-2
 * transposed convolution's backward) makes every product P columns wide: too thin for the
 * own kernel (OpenBLAS's Haswell GEMM ran it, its packing a quarter of the time), and the
 * weight gradient a K = P product per image re-reading all of dW. With P below CONV_THIN_P,
 * the forward driver instead writes col for all images side by side (Kall x N P, CONV_THIN_BYTES
 * at most) and runs Y = W col and dW = G col^T once each on the own threaded GEMM
 * (lin_sgemm.c), gathering G and scattering Y between the image-major layout and the
 * product's channel-major one. Float32, one group, no epilogue but a bias. */
#define CONV_THIN_P 32
#define CONV_THIN_BYTES ((int64_t)64 << 20)

static size_t thin_bytes(const nn_conv_geom *g) {
  const int64_t NP = g->N * g->P;
  return al64((size_t)(g->Kall * NP) * 4) + 2 * al64((size_t)(g->F * NP) * 4);
}

static int thin_fits(const nn_conv_geom *g) {
  return g->esz == 4 && !g->nhwc && g->groups == 1 && !g->fast && !g->dwise && !g->openblas &&
         g->P < CONV_THIN_P && g->N > 1 && (int64_t)thin_bytes(g) <= CONV_THIN_BYTES &&
         nn_gemm_own(OPF_F32, g->F, g->N * g->P, g->Kall);
}

size_t nn_conv_ws_bytes(const nn_conv_geom *g) {
  size_t core = wp_bytes(g) + (size_t)omp_get_max_threads() * slot_bytes(g);
  size_t thin = g->esz == 4 && g->P < CONV_THIN_P ? thin_bytes(g) : 0;
  return core > thin ? core : thin;
}

/* Per channel sums of the big tensor over images and positions (a transposed bias
 * gradient). */
static void big_sums(const nn_conv_geom *g, opf_dtype dt, const void *big, void *out) {
  memset(out, 0, (size_t)g->C * g->esz);
  for (int64_t n = 0; n < g->N; n++)
    conv_kerns[dt].sums(out, (const char *)big + (size_t)(n * g->C * g->S) * g->esz, g->S, 0,
                        g->S, g->C, g->nhwc);
}

static void thin_forward(const nn_conv_job *j) {
  const nn_conv_geom *g = j->g;
  const conv_kern *k = &conv_kerns[OPF_F32];
  const int64_t N = g->N, P = g->P, F = g->F, NP = N * P, C = g->C, S = g->S;
  float *col = j->ws, *ym = col + al64((size_t)(g->Kall * NP) * 4) / 4;
  float *gm = ym + al64((size_t)(F * NP) * 4) / 4;
  const int par = (double)g->Kall * (double)NP > OPF_PAR_MIN;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t n = 0; n < N; n++)
    k->im2col[0]((char *)(col + n * P), NP, (const char *)j->big + (size_t)(n * C * S) * 4, g, 0, P);
  if (j->small) {
    lin_gemm_own(0, OPF_F32, 0, 0, F, NP, g->Kall, 1.0, j->w, g->Kall, col, NP, 0.0, ym, NP);
    const float *b = j->shift;
    float *y = j->small;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t n = 0; n < N; n++)
      for (int64_t f = 0; f < F; f++) {
        const float *src = ym + f * NP + n * P;
        float *dst = y + (n * F + f) * P, bf = b ? b[f] : 0.0f;
        for (int64_t q = 0; q < P; q++) dst[q] = src[q] + bf;
      }
  }
  if (j->dw) {
    const float *gs = j->gsmall;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t f = 0; f < F; f++)
      for (int64_t n = 0; n < N; n++) memcpy(gm + f * NP + n * P, gs + (n * F + f) * P, (size_t)P * 4);
    lin_gemm_own(0, OPF_F32, 0, 1, F, g->Kall, NP, 1.0, gm, NP, col, NP, 0.0, j->dw, g->Kall);
  }
  if (j->dbig_sum) big_sums(g, OPF_F32, j->big, j->dbig_sum);
}

static conv_slot slot_at(const conv_run *t, int k) {
  const nn_conv_geom *g = t->g;
  size_t e = g->esz;
  conv_slot s;
  s.col = t->slots + (size_t)k * t->slot_bytes;
  s.gm = s.col + al64(g->fast ? 0 : (size_t)(g->Kall * g->cols) * e);
  s.dw = s.gm + al64((size_t)(g->F * g->cols) * e);
  s.dss = s.dw + al64((size_t)(g->F * g->Kc) * e);
  s.dbs = s.dss + al64((size_t)g->F * e);
  s.pk = gemm_ws(g) && !g->openblas ? s.dbs + al64((size_t)g->C * e) : NULL;
  return s;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b, b = r;
  }
  return a;
}

/* Threads and work items. Each thread runs whole items with its own slot and
 * single-threaded GEMMs (OpenBLAS's OpenMP build runs serially inside an active parallel
 * region): one fork per call, where threaded GEMMs on one block at a time synchronise the
 * pool on every call and measured 1.5-2x slower. An item is one of R equal ranges of the
 * outer spatial axis of an image, R = nt / gcd(N, nt), so the N*R items split evenly over
 * the threads even for N = 1 or odd N. */
static void run_init(conv_run *t, const nn_conv_job *j, const void *wscale) {
  const nn_conv_geom *g = j->g;
  t->j = j, t->g = g, t->k = &conv_kerns[j->dt];
  t->slot_bytes = slot_bytes(g);
  t->slots = (char *)j->ws + wp_bytes(g);
  int64_t cap = (int64_t)((j->ws_bytes - wp_bytes(g)) / t->slot_bytes), nt = omp_get_max_threads();
  if (nt > cap) nt = cap;
  if (nt < 1 || nn_conv_macs(g) < OPF_PAR_MIN) nt = 1;
  t->nt = (int)nt;
  t->R = nt / gcd64(g->N, nt);
  t->wp = j->w;
  t->wpk = NULL;
  if (j->w && ((g->nhwc && g->KK > 1) || wscale)) { /* channels-last 1x1: already in order */
    t->k->wprep(j->ws, j->w, g, wscale, 0);
    t->wp = j->ws;
  }
}

/* Plans the packing of each group's weight once for the products gemm_w runs with it on every
 * block (tr as there), when nn_gemm's own kernel serves them: float32 AVX-512, not the
 * hand-written small products, not depthwise. The threads of run_items share the packing
 * (pack_share). */
static void run_pack(conv_run *t, int tr) {
  const nn_conv_geom *g = t->g;
  int64_t M = tr ? g->Kc : g->Fg, K = tr ? g->Fg : g->Kc, pb = g->cols; /* a whole block */
  if (!t->j->w || g->openblas || g->dwise || (g->small && !g->nhwc) || !wpk_group_bytes(g) ||
      !nn_gemm_own(t->j->dt, g->nhwc ? pb : M, g->nhwc ? M : pb, K))
    return;
  t->wpk_group = wpk_group_bytes(g);
  t->wpk = (char *)t->j->ws + al64((size_t)(g->F * g->Kc) * g->esz);
  t->pack_tr = tr;
}

/* Thread k of m packs its share of the strips of every group's weight (run_pack): channels-
 * first op(A) = W (Fg x Kc) or W^T, channels-last op(B) = W^T or W. One pass over the weight
 * per call, split over the threads (serial, it left the second thread waiting for 3-5% of a
 * 1x1 convolution's time). */
static void pack_share(const conv_run *t, int k, int m) {
  const nn_conv_geom *g = t->g;
  int tr = t->pack_tr, side = g->nhwc;
  int64_t MN = tr ? g->Kc : g->Fg, K = tr ? g->Fg : g->Kc;
  int64_t ns = nn_gemm_pack_strips(side, MN), all = g->groups * ns;
  for (int64_t it = all * k / m; it < all * (k + 1) / m;) {
    int64_t gi = it / ns, s0 = it % ns, s1 = s0 + (all * (k + 1) / m - it);
    if (s1 > ns) s1 = ns;
    const char *w = t->wp + (size_t)(gi * g->Fg * g->Kc) * g->esz;
    char *d = (char *)t->wpk + (size_t)gi * t->wpk_group;
    nn_gemm_pack_part(side, side ? !tr : tr, MN, K, w, g->Kc, d, s0, s1);
    it += s1 - s0;
  }
}

/* Owned ranges of item r along the outer axis: small slabs [*oa, *ob), big slabs [*ia, *ib),
 * and the small slabs [*xa, *xb) whose windows reach the owned big slabs (the halo a data
 * gradient needs: no two items write the same big slab). */
static void item_ranges(const conv_run *t, int64_t r, int64_t *oa, int64_t *ob, int64_t *ia,
                        int64_t *ib, int64_t *xa, int64_t *xb) {
  const nn_conv_geom *g = t->g;
  int a = g->oax;
  int64_t O = g->out[a], IN = g->in[a];
  *oa = O * r / t->R, *ob = O * (r + 1) / t->R;
  *ia = IN * r / t->R, *ib = IN * (r + 1) / t->R;
  *xa = *xb = *oa;
  if (*ia >= *ib) return;
  int64_t lo = *ia + g->p[a] - (g->k[a] - 1) * g->d[a], hi = *ib - 1 + g->p[a];
  int64_t x0 = lo <= 0 ? 0 : (lo + g->s[a] - 1) / g->s[a], x1 = hi < 0 ? 0 : hi / g->s[a] + 1;
  if (x1 > O) x1 = O;
  if (x0 > x1) x0 = x1;
  *xa = x0, *xb = x1;
}

/* The col matrix of positions [j0, j1) of image bn: im2col into the slot, or the image
 * itself on the fast path. Channels-first rows are taps (ld = block width or S), channels-last
 * rows are positions (ld = Kall or C). */
static const char *col_view(const conv_run *t, const conv_slot *s, const char *bn, int64_t j0,
                            int64_t j1, int64_t *ld) {
  const nn_conv_geom *g = t->g;
  if (g->fast) {
    *ld = g->nhwc ? g->C : g->S;
    return bn + (size_t)(g->nhwc ? j0 * g->C : j0) * g->esz;
  }
  *ld = g->nhwc ? g->Kall : j1 - j0;
  t->k->im2col[g->nhwc](s->col, *ld, bn, g, j0, j1);
  return s->col;
}

/* A small-side matrix (F channels x pb positions) starting at position j0 of m (ld apart). */
static const char *small_at(const nn_conv_geom *g, const char *m, int64_t ld, int64_t j0) {
  return m + (size_t)(g->nhwc ? j0 * ld : j0) * g->esz;
}

/* The three products for group gi on a block of pb positions. Channels-first: Y = W col,
 * dcol = W^T G (gemm_w, tr = 0 / 1: C = op(W) B), dW += G col^T (gemm_dw); channels-last
 * stores the position-major transposes, so the same products read Yt = colt W^T,
 * dcolt = Gt W and dW += Gt^T colt. B, C: the group's rows (channels-first) or columns
 * (channels-last) of (B, ldb) and (C, ldc). */
static void gemm_w(const conv_run *t, const conv_slot *s, int tr, int64_t gi, int64_t pb,
                   const char *B, int64_t ldb, char *C, int64_t ldc, const float *bias) {
  const nn_conv_geom *g = t->g;
  opf_dtype dt = t->j->dt;
  size_t e = g->esz;
  const char *w = t->wp + (size_t)(gi * g->Fg * g->Kc) * e;
  int64_t M = tr ? g->Kc : g->Fg, K = tr ? g->Fg : g->Kc;
  if (t->wpk) { /* the weight packed once per call (run_pack) */
    const char *pk = t->wpk + (size_t)gi * t->wpk_group;
    if (bias) bias += gi * M;
    if (g->nhwc)
      nn_gemm_pre_bias(0, !tr, pb, M, K, B + (size_t)(gi * K) * e, ldb, NULL, 0, 0.0,
                       C + (size_t)(gi * M) * e, ldc, s->pk, NULL, pk, bias, 0);
    else
      nn_gemm_pre_bias(tr, 0, M, pb, K, NULL, 0, B + (size_t)(gi * K * ldb) * e, ldb, 0.0,
                       C + (size_t)(gi * M * ldc) * e, ldc, s->pk, pk, NULL, bias, 1);
    return;
  }
  if (g->nhwc) {
    nn_gemm(dt, 0, !tr, pb, M, K, B + (size_t)(gi * K) * e, ldb, w, g->Kc, 0.0,
            C + (size_t)(gi * M) * e, ldc, s->pk);
    return;
  }
  B += (size_t)(gi * K * ldb) * e, C += (size_t)(gi * M * ldc) * e;
  if (g->small) t->k->small_nn(M, pb, K, w, tr ? 1 : g->Kc, tr ? g->Kc : 1, B, ldb, C, ldc);
  else nn_gemm(dt, tr, 0, M, pb, K, w, g->Kc, B, ldb, 0.0, C, ldc, s->pk);
}

static void gemm_dw(const conv_run *t, const conv_slot *s, int64_t gi, int64_t pb, const char *G,
                    int64_t ldg, const char *col, int64_t ldc, char *dw) {
  const nn_conv_geom *g = t->g;
  opf_dtype dt = t->j->dt;
  size_t e = g->esz;
  char *d = dw + (size_t)(gi * g->Fg * g->Kc) * e;
  /* the dot products reduce 4x4 vector accumulators per block: on narrow blocks of larger
   * groups that costs more than BLAS (measured: (16 x 144) groups on 126-wide blocks) */
  if (g->small && (g->cols >= 512 || g->Fg * g->Kc <= 1024))
    t->k->small_nt(g->Fg, g->Kc, pb, G + (size_t)(gi * g->Fg * ldg) * e, ldg,
                   col + (size_t)(gi * g->Kc * ldc) * e, ldc, d, g->Kc);
  else if (!g->nhwc)
    nn_gemm(dt, 0, 1, g->Fg, g->Kc, pb, G + (size_t)(gi * g->Fg * ldg) * e, ldg,
            col + (size_t)(gi * g->Kc * ldc) * e, ldc, 1.0, d, g->Kc, s->pk);
  else
    nn_gemm(dt, 1, 0, g->Fg, g->Kc, pb, G + (size_t)(gi * g->Fg) * e, ldg,
            col + (size_t)(gi * g->Kc) * e, ldc, 1.0, d, g->Kc, s->pk);
}

/* Forward item: small positions of slabs [oa, ob) of image n, block by block. */
static void fwd_item(const conv_run *t, int64_t n, int64_t r, const conv_slot *s) {
  const nn_conv_job *j = t->j;
  const nn_conv_geom *g = t->g;
  size_t e = g->esz;
  const char *bn = (const char *)j->big + (size_t)(n * g->C * g->S) * e;
  char *yn = j->small ? (char *)j->small + (size_t)(n * g->F * g->P) * e : NULL;
  const char *gn = j->dw ? (const char *)j->gsmall + (size_t)(n * g->F * g->P) * e : NULL;
  int64_t oa, ob, ia, ib, xa, xb, ld = g->nhwc ? g->F : g->P;
  item_ranges(t, r, &oa, &ob, &ia, &ib, &xa, &xb);
  /* the bias in the packed kernel's stores (float32 only: wpk) when no scale comes first */
  const float *fb = t->wpk && j->shift && !j->scale ? (const float *)j->shift : NULL;
  const void *shift = fb ? NULL : j->shift;
  int epi = j->scale || shift || j->relu;
  for (int64_t b0 = oa * g->Pin; b0 < ob * g->Pin; b0 += g->cols) {
    int64_t b1 = b0 + g->cols < ob * g->Pin ? b0 + g->cols : ob * g->Pin, pb = b1 - b0, ldc = 0;
    /* depthwise products are direct: a col block only for a weight gradient */
    const char *col = g->dwise && !gn ? NULL : col_view(t, s, bn, b0, b1, &ldc);
    if (yn) {
      char *yb = (char *)small_at(g, yn, ld, b0);
      if (g->dwise) t->k->dw_fwd(yb, ld, bn, t->wp, g, b0, b1);
      else
        for (int64_t gi = 0; gi < g->groups; gi++) gemm_w(t, s, 0, gi, pb, col, ldc, yb, ld, fb);
      if (epi) t->k->epi(yn, ld, b0, pb, g->F, g->nhwc, j->scale, shift, j->relu);
    }
    if (gn)
      for (int64_t gi = 0; gi < g->groups; gi++)
        gemm_dw(t, s, gi, pb, small_at(g, gn, ld, b0), ld, col, ldc, s->dw);
  }
  if (j->dbig_sum && ia < ib)
    t->k->sums(s->dbs, bn, g->S, ia * g->Sin, (ib - ia) * g->Sin, g->C, g->nhwc);
}

/* Backward item: weight gradient and small-channel sums over its own small slabs, data
 * gradient over the big slabs [ia, ib) it owns, from every small position whose windows reach
 * them (the halo [xa, xb) is a few slabs beyond [oa, ob) at the edges of the range). */
static void bwd_item(const conv_run *t, int64_t n, int64_t r, const conv_slot *s) {
  const nn_conv_job *j = t->j;
  const nn_conv_geom *g = t->g;
  const conv_kern *k = t->k;
  size_t e = g->esz, img = (size_t)(n * g->F * g->P) * e, bimg = (size_t)(n * g->C * g->S) * e;
  const char *bn = j->big ? (const char *)j->big + bimg : NULL;
  const char *gn = (const char *)j->gsmall + img;
  const char *mn = j->mask ? (const char *)j->mask + img : NULL;
  char *dxn = j->dbig ? (char *)j->dbig + bimg : NULL;
  int64_t oa, ob, ia, ib, xa, xb, ld = g->nhwc ? g->F : g->P;
  item_ranges(t, r, &oa, &ob, &ia, &ib, &xa, &xb);
  if (!dxn) xa = xb = oa;
  if (dxn && !g->fast && ia < ib) { /* col2im accumulates into the owned slabs */
    if (g->nhwc) memset(dxn + (size_t)(ia * g->Sin * g->C) * e, 0, (size_t)((ib - ia) * g->Sin * g->C) * e);
    else
      for (int64_t ch = 0; ch < g->C; ch++)
        memset(dxn + (size_t)(ch * g->S + ia * g->Sin) * e, 0, (size_t)((ib - ia) * g->Sin) * e);
  }
  int64_t lo = (oa < xa ? oa : xa) * g->Pin, hi = (ob > xb ? ob : xb) * g->Pin;
  for (int64_t b0 = lo; b0 < hi; b0 += g->cols) {
    int64_t b1 = b0 + g->cols < hi ? b0 + g->cols : hi, pb = b1 - b0, ldg = ld;
    const char *G = small_at(g, gn, ld, b0);
    if (mn) { /* g' = g where the fused relu passed, into the slot */
      if (g->nhwc) k->mask(s->gm, G, small_at(g, mn, ld, b0), pb * g->F);
      else
        for (int64_t f = 0; f < g->F; f++)
          k->mask(s->gm + (size_t)(f * pb) * e, G + (size_t)(f * ld) * e,
                  small_at(g, mn, ld, b0) + (size_t)(f * ld) * e, pb);
      G = s->gm, ldg = g->nhwc ? g->F : pb;
    }
    int64_t w0 = b0 > oa * g->Pin ? b0 : oa * g->Pin, w1 = b1 < ob * g->Pin ? b1 : ob * g->Pin;
    if (w0 < w1) { /* weight gradient and channel sums of the owned positions */
      const char *Gw = small_at(g, G, ldg, w0 - b0);
      if (j->dw) {
        int64_t ldc;
        const char *col = col_view(t, s, bn, w0, w1, &ldc);
        for (int64_t gi = 0; gi < g->groups; gi++) gemm_dw(t, s, gi, w1 - w0, Gw, ldg, col, ldc, s->dw);
      }
      if (j->dsmall_sum) k->sums(s->dss, Gw, ldg, 0, w1 - w0, g->F, g->nhwc);
    }
    int64_t x0 = b0 > xa * g->Pin ? b0 : xa * g->Pin, x1 = b1 < xb * g->Pin ? b1 : xb * g->Pin;
    if (!dxn || x0 >= x1) continue;
    const char *Gx = small_at(g, G, ldg, x0 - b0);
    if (g->dwise) { /* direct: dx taps from the gradient rows */
      k->col2im[0](dxn, Gx, ldg, g, x0, x1, ia, ib, t->wp);
      continue;
    }
    char *col = s->col;
    int64_t ldc = g->nhwc ? g->Kall : x1 - x0;
    if (g->fast) /* the data gradient is its own col block */
      col = dxn + (size_t)(g->nhwc ? x0 * g->C : x0) * e, ldc = g->nhwc ? g->C : g->S;
    for (int64_t gi = 0; gi < g->groups; gi++) gemm_w(t, s, 1, gi, x1 - x0, Gx, ldg, col, ldc, NULL);
    if (!g->fast) k->col2im[g->nhwc](dxn, col, ldc, g, x0, x1, ia, ib, NULL);
  }
  if (j->bigshift && dxn && ia < ib)
    k->epi(dxn, g->S, ia * g->Sin, (ib - ia) * g->Sin, g->C, g->nhwc, NULL, j->bigshift, 0);
}

/* Sums the per-thread partials of slots [0, used) into the job's outputs. */
static void run_reduce(const conv_run *t, int used) {
  const nn_conv_job *j = t->j;
  const nn_conv_geom *g = t->g;
  size_t e = g->esz;
  conv_slot s0 = slot_at(t, 0);
  for (int k = 1; k < used; k++) {
    conv_slot s = slot_at(t, k);
    if (j->dw) t->k->vadd(s0.dw, s.dw, g->F * g->Kc);
    if (j->dsmall_sum) t->k->vadd(s0.dss, s.dss, g->F);
    if (j->dbig_sum) t->k->vadd(s0.dbs, s.dbs, g->C);
  }
  if (j->dw) {
    if (g->nhwc) t->k->wprep(j->dw, s0.dw, g, NULL, 1);
    else memcpy(j->dw, s0.dw, (size_t)(g->F * g->Kc) * e);
  }
  if (j->dsmall_sum) memcpy(j->dsmall_sum, s0.dss, (size_t)g->F * e);
  if (j->dbig_sum) memcpy(j->dbig_sum, s0.dbs, (size_t)g->C * e);
}

static void run_items(const conv_run *t, int bwd) {
  const nn_conv_job *j = t->j;
  const nn_conv_geom *g = t->g;
  int64_t items = g->N * t->R;
  int used = 1;
#pragma omp parallel num_threads(t->nt) if (t->nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    conv_slot s = slot_at(t, k);
    if (k == 0) used = m;
    if (j->dw) memset(s.dw, 0, (size_t)(g->F * g->Kc) * g->esz);
    if (j->dsmall_sum) memset(s.dss, 0, (size_t)g->F * g->esz);
    if (j->dbig_sum) memset(s.dbs, 0, (size_t)g->C * g->esz);
    if (t->wpk) {
      pack_share(t, k, m);
#pragma omp barrier
    }
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++) {
      if (bwd) bwd_item(t, it / t->R, it % t->R, &s);
      else fwd_item(t, it / t->R, it % t->R, &s);
    }
  }
  run_reduce(t, used);
}

void nn_conv_forward(const nn_conv_job *j) {
  if (!j->scale && !j->relu && j->ws_bytes >= thin_bytes(j->g) && thin_fits(j->g)) {
    thin_forward(j);
    return;
  }
  conv_run t;
  run_init(&t, j, NULL);
  if (j->small) run_pack(&t, 0);
  run_items(&t, 0);
}

void nn_conv_backward(const nn_conv_job *j) {
  conv_run t;
  run_init(&t, j, j->gscale);
  if (j->dbig) run_pack(&t, 1);
  run_items(&t, 1);
}

/* ---- whole tensors (the im2col / col2im operators), channels-first ---- */
void nn_conv_unfold(const nn_conv_geom *g, opf_dtype dt, void *col, const void *big) {
  const conv_kern *k = &conv_kerns[dt];
  size_t e = g->esz;
  int64_t blk = 1024, nb = (g->P + blk - 1) / blk, items = g->N * nb;
#pragma omp parallel for schedule(static) if ((double)g->N * g->Kall * g->P > OPF_PAR_MIN)
  for (int64_t it = 0; it < items; it++) {
    int64_t n = it / nb, j0 = it % nb * blk, j1 = j0 + blk < g->P ? j0 + blk : g->P;
    k->im2col[0]((char *)col + (size_t)(n * g->Kall * g->P + j0) * e, g->P,
                 (const char *)big + (size_t)(n * g->C * g->S) * e, g, j0, j1);
  }
}

void nn_conv_fold(const nn_conv_geom *g, opf_dtype dt, void *big, const void *col) {
  conv_run t = {.g = g, .k = &conv_kerns[dt]};
  int64_t nt = omp_get_max_threads();
  if ((double)g->N * g->Kall * g->P < OPF_PAR_MIN) nt = 1;
  t.R = nt / gcd64(g->N, nt);
  size_t e = g->esz;
  int64_t items = g->N * t.R;
#pragma omp parallel for schedule(static) num_threads((int)nt) if (nt > 1)
  for (int64_t it = 0; it < items; it++) {
    int64_t n = it / t.R, oa, ob, ia, ib, xa, xb;
    item_ranges(&t, it % t.R, &oa, &ob, &ia, &ib, &xa, &xb);
    char *bn = (char *)big + (size_t)(n * g->C * g->S) * e;
    for (int64_t ch = 0; ch < g->C; ch++)
      memset(bn + (size_t)(ch * g->S + ia * g->Sin) * e, 0, (size_t)((ib - ia) * g->Sin) * e);
    if (ia < ib && xa < xb)
      t.k->col2im[0](bn, (const char *)col + (size_t)(n * g->Kall * g->P + xa * g->Pin) * e,
                     g->P, g, xa * g->Pin, xb * g->Pin, ia, ib, NULL);
  }
}

/* ---- references ---- */
static int64_t big_idx(const nn_conv_geom *g, int64_t n, int64_t c, const int64_t *i) {
  int64_t pos = (i[0] * g->in[1] + i[1]) * g->in[2] + i[2];
  return g->nhwc ? (n * g->S + pos) * g->C + c : (n * g->C + c) * g->S + pos;
}
static int64_t small_idx(const nn_conv_geom *g, int64_t n, int64_t f, int64_t pos) {
  return g->nhwc ? (n * g->P + pos) * g->F + f : (n * g->F + f) * g->P + pos;
}

/* Calls fn for every (image, small channel, small position, big channel of the group, tap)
 * whose tap lands inside the big tensor, with the flat indices of all three operands. */
typedef void (*ref_fn)(void *ctx, int64_t si, int64_t bi, int64_t wi);
static void ref_walk(const nn_conv_geom *g, ref_fn fn, void *ctx) {
  for (int64_t n = 0; n < g->N; n++)
    for (int64_t f = 0; f < g->F; f++)
      for (int64_t pos = 0; pos < g->P; pos++) {
        int64_t o[3] = {pos / (g->out[1] * g->out[2]), pos / g->out[2] % g->out[1], pos % g->out[2]};
        for (int64_t cl = 0; cl < g->Cg; cl++)
          for (int64_t t = 0; t < g->KK; t++) {
            int64_t kk[3] = {t / (g->k[1] * g->k[2]), t / g->k[2] % g->k[1], t % g->k[2]}, i[3];
            int inside = 1;
            for (int a = 0; a < 3; a++) {
              i[a] = o[a] * g->s[a] - g->p[a] + kk[a] * g->d[a];
              inside &= i[a] >= 0 && i[a] < g->in[a];
            }
            if (inside)
              fn(ctx, small_idx(g, n, f, pos), big_idx(g, n, f / g->Fg * g->Cg + cl, i),
                 (f * g->Cg + cl) * g->KK + t);
          }
      }
}

typedef struct ref_ctx {
  opf_dtype dt;
  const void *src, *w;
  double *acc;
} ref_ctx;

static void ref_gather(void *p, int64_t si, int64_t bi, int64_t wi) {
  ref_ctx *r = p;
  r->acc[si] += nn_ld(r->src, r->dt, bi) * nn_ld(r->w, r->dt, wi);
}
static void ref_scatter(void *p, int64_t si, int64_t bi, int64_t wi) {
  ref_ctx *r = p;
  r->acc[bi] += nn_ld(r->src, r->dt, si) * nn_ld(r->w, r->dt, wi);
}

/* acc (n elements, from opf_alloc: references may not use the case workspace) -> out, plus a
 * per-channel bias (channel of element i given by chan). */
static void ref_store(const nn_conv_geom *g, opf_dtype dt, double *acc, int64_t n, int64_t CH,
                      int64_t plane, const void *b, void *out) {
  for (int64_t i = 0; i < n; i++) {
    int64_t ch = g->nhwc ? i % CH : i / plane % CH;
    nn_st(out, dt, i, acc[i] + (b ? nn_ld(b, dt, ch) : 0));
  }
  opf_free(acc);
}

void nn_conv_ref_fwd(const nn_conv_geom *g, opf_dtype dt, const void *big, const void *w,
                     const void *b, void *small) {
  int64_t n = g->N * g->F * g->P;
  ref_ctx r = {dt, big, w, opf_calloc((size_t)n, sizeof(double))};
  ref_walk(g, ref_gather, &r);
  ref_store(g, dt, r.acc, n, g->F, g->P, b, small);
}

void nn_conv_ref_tfwd(const nn_conv_geom *g, opf_dtype dt, const void *small, const void *w,
                      const void *b, void *big) {
  int64_t n = g->N * g->C * g->S;
  ref_ctx r = {dt, small, w, opf_calloc((size_t)n, sizeof(double))};
  ref_walk(g, ref_scatter, &r);
  ref_store(g, dt, r.acc, n, g->C, g->S, b, big);
}

void nn_conv_ref_cols(const nn_conv_geom *g, opf_dtype dt, void *big, void *col, int fold) {
  if (fold) memset(big, 0, (size_t)(g->N * g->C * g->S) * g->esz);
  for (int64_t n = 0; n < g->N; n++)
    for (int64_t c = 0; c < g->C; c++)
      for (int64_t t = 0; t < g->KK; t++)
        for (int64_t pos = 0; pos < g->P; pos++) {
          int64_t o[3] = {pos / (g->out[1] * g->out[2]), pos / g->out[2] % g->out[1], pos % g->out[2]};
          int64_t kk[3] = {t / (g->k[1] * g->k[2]), t / g->k[2] % g->k[1], t % g->k[2]}, i[3];
          int inside = 1;
          for (int a = 0; a < 3; a++) {
            i[a] = o[a] * g->s[a] - g->p[a] + kk[a] * g->d[a];
            inside &= i[a] >= 0 && i[a] < g->in[a];
          }
          int64_t ci = ((n * g->C + c) * g->KK + t) * g->P + pos;
          int64_t bi = inside ? ((n * g->C + c) * g->in[0] + i[0]) * g->in[1] * g->in[2] +
                                    i[1] * g->in[2] + i[2]
                              : -1;
          if (!fold) nn_st(col, dt, ci, bi < 0 ? 0 : nn_ld(big, dt, bi));
          else if (bi >= 0) nn_st(big, dt, bi, nn_ld(big, dt, bi) + nn_ld(col, dt, ci));
        }
}

/* ---- operator side ---- */
static int64_t pint(const opf_case *c, const char *name, int64_t def) {
  for (int i = 0; i < c->op->n_params; i++)
    if (!strcmp(c->op->params[i].name, name)) return (int64_t)c->p[i];
  return def;
}

/* "AxBxC" of n values */
static const char *dims_str(const int64_t *v, int n, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < n && o < len; i++)
    o += (size_t)snprintf(buf + o, len - o, i ? "x%lld" : "%lld", (long long)v[i]);
  return buf;
}

/* name of the layout choice (e.g. "NCHW") */
static void layout_name(int nd, int nhwc, char *buf, size_t len) {
  const char *s = nn_conv_layouts(nd), *bar = strchr(s, '|');
  if (nhwc) snprintf(buf, len, "%s", bar + 1);
  else snprintf(buf, len, "%.*s", (int)(bar - s), s);
}

static const char *const kernel_names[3][3] = {{"kw"}, {"kh", "kw"}, {"kd", "kh", "kw"}};

void nn_conv_geom_of(const opf_case *c, const nn_conv_spec *sp, nn_conv_geom *g) {
  const opf_tensor *x = &c->in[sp->in_x], *w = &c->in[sp->in_w];
  int nd = sp->nd, nhwc = pint(c, "layout", 0) == 1;
  int64_t s = pint(c, "stride", 1), p = pint(c, "pad", 0), d = pint(c, "dilation", 1);
  int64_t op = pint(c, "output_padding", 0), cx = nhwc ? x->shape[nd + 1] : x->shape[1];
  memset(g, 0, sizeof *g);
  g->nd = nd, g->nhwc = nhwc, g->N = x->shape[0], g->groups = pint(c, "groups", 1);
  for (int a = 0; a < 3; a++) g->in[a] = g->out[a] = g->k[a] = g->s[a] = g->d[a] = 1;
  for (int i = 0; i < nd; i++) {
    int a = 3 - nd + i;
    int64_t xs = x->shape[(nhwc ? 1 : 2) + i], k = w->shape[2 + i];
    g->k[a] = k, g->s[a] = s, g->p[a] = p, g->d[a] = d;
    if (sp->transpose) g->out[a] = xs, g->in[a] = (xs - 1) * s - 2 * p + d * (k - 1) + op + 1;
    else g->in[a] = xs, g->out[a] = nn_out_len(xs, k, s, p, d);
  }
  if (sp->transpose) g->F = cx, g->C = w->shape[1] * g->groups;
  else g->C = cx, g->F = w->shape[0];
  nn_conv_geom_finish(g, c->dtype);
}

int nn_conv_infer(opf_case *c, const nn_conv_spec *sp, nn_conv_geom *g) {
  const char *nm = sp->name;
  int nd = sp->nd, nhwc = pint(c, "layout", 0) == 1;
  opf_tensor *x = &c->in[sp->in_x], *w = &c->in[sp->in_w];
  char lay[16], s1[96], s2[96], s3[96], s4[96], s5[96];
  layout_name(nd, nhwc, lay, sizeof lay);
  if (x->ndim != nd + 2)
    return opf_case_error(c, OPF_EINVAL, "%s input 'x' must be %d-D %s, got %s (%d-D)", nm,
                          nd + 2, lay, opf_shape_str(x, s1, sizeof s1), x->ndim);
  for (int k = 0; k < x->ndim; k++)
    if (x->shape[k] <= 0)
      return opf_case_error(c, OPF_EINVAL, "%s input 'x' %s has an empty dimension", nm,
                            opf_shape_str(x, s1, sizeof s1));
  int64_t groups = pint(c, "groups", 1), cx = nhwc ? x->shape[nd + 1] : x->shape[1];
  int64_t filters = pint(c, "filters", 1), kernel = pint(c, "kernel", 1);
  if (cx % groups)
    return opf_case_error(c, OPF_EINVAL, "input channels %lld of x %s are not divisible by "
                          "groups=%lld", (long long)cx, opf_shape_str(x, s1, sizeof s1),
                          (long long)groups);
  const char *wdesc = sp->transpose ? "C, filters/groups" : "filters, C/groups";
  char kdesc[32];
  snprintf(kdesc, sizeof kdesc, "%s%s%s%s%s", kernel_names[nd - 1][0], nd > 1 ? ", " : "",
           nd > 1 ? kernel_names[nd - 1][1] : "", nd > 2 ? ", " : "",
           nd > 2 ? kernel_names[nd - 1][2] : "");
  if (w->ndim < 0) {
    if (sp->transpose && filters % groups)
      return opf_case_error(c, OPF_EINVAL, "filters %lld are not divisible by groups=%lld",
                            (long long)filters, (long long)groups);
    int64_t shape[5] = {sp->transpose ? cx : filters, sp->transpose ? filters / groups : cx / groups};
    for (int i = 0; i < nd; i++) {
      int64_t k = nd > 1 ? pint(c, kernel_names[nd - 1][i], 0) : 0;
      shape[2 + i] = k > 0 ? k : kernel;
    }
    opf_tensor_set_shape(w, c->dtype, nd + 2, shape);
  } else {
    int ok = w->ndim == nd + 2;
    for (int k = 0; ok && k < w->ndim; k++) ok = w->shape[k] > 0;
    if (!ok)
      return opf_case_error(c, OPF_EINVAL, "weight 'w' must be %d-D (%s, %s) with positive "
                            "sizes, got %s", nd + 2, wdesc, kdesc, opf_shape_str(w, s1, sizeof s1));
    if (!sp->transpose && w->shape[1] * groups != cx)
      return opf_case_error(c, OPF_EINVAL, "weight 'w' %s needs C/groups = %lld input channels "
                            "per filter for x %s and groups=%lld, not %lld",
                            opf_shape_str(w, s1, sizeof s1), (long long)(cx / groups),
                            opf_shape_str(x, s2, sizeof s2), (long long)groups,
                            (long long)w->shape[1]);
    if (sp->transpose && w->shape[0] != cx)
      return opf_case_error(c, OPF_EINVAL, "weight 'w' %s needs %lld rows, one per input "
                            "channel of x %s, not %lld", opf_shape_str(w, s1, sizeof s1),
                            (long long)cx, opf_shape_str(x, s2, sizeof s2), (long long)w->shape[0]);
  }
  int64_t F = sp->transpose ? w->shape[1] * groups : w->shape[0];
  if (!sp->transpose && F % groups)
    return opf_case_error(c, OPF_EINVAL, "filters %lld are not divisible by groups=%lld",
                          (long long)F, (long long)groups);
  if (sp->in_b >= 0 && c->present[sp->in_b]) {
    opf_tensor *b = &c->in[sp->in_b];
    if (b->ndim < 0) opf_tensor_set_shape(b, c->dtype, 1, &F);
    else if (b->ndim != 1 || b->shape[0] != F)
      return opf_case_error(c, OPF_EINVAL, "bias 'b' %s must have shape (%lld), one per filter",
                            opf_shape_str(b, s1, sizeof s1), (long long)F);
  }
  int64_t st = pint(c, "stride", 1), pad = pint(c, "pad", 0), dil = pint(c, "dilation", 1);
  int64_t op = pint(c, "output_padding", 0);
  if (sp->transpose && op >= st && op >= dil)
    return opf_case_error(c, OPF_EINVAL, "%s: output_padding %lld must be smaller than the "
                          "stride %lld or the dilation %lld", nm, (long long)op, (long long)st,
                          (long long)dil);
  nn_conv_geom_of(c, sp, g);
  int a0 = 3 - nd, bad = 0;
  for (int a = a0; a < 3; a++) bad |= g->in[a] <= 0 || g->out[a] <= 0;
  if (bad) {
    int64_t kk[3], dd[3], padded[3], xin[3], pp[3];
    for (int i = 0; i < nd; i++) {
      int a = a0 + i;
      kk[i] = g->k[a], dd[i] = g->d[a], pp[i] = g->p[a];
      xin[i] = sp->transpose ? g->out[a] : g->in[a], padded[i] = g->in[a] + 2 * g->p[a];
    }
    if (sp->transpose)
      return opf_case_error(c, OPF_EINVAL, "%s: output size is empty for input %s, window %s "
                            "(dilation %s), stride %lld and pad %lld", nm,
                            dims_str(xin, nd, s1, sizeof s1), dims_str(kk, nd, s2, sizeof s2),
                            dims_str(dd, nd, s3, sizeof s3), (long long)st, (long long)pad);
    return opf_case_error(c, OPF_EINVAL, "%s: window %s (dilation %s) is larger than the padded "
                          "input %s (input %s, pad %s)", nm, dims_str(kk, nd, s1, sizeof s1),
                          dims_str(dd, nd, s2, sizeof s2), dims_str(padded, nd, s3, sizeof s3),
                          dims_str(xin, nd, s4, sizeof s4), dims_str(pp, nd, s5, sizeof s5));
  }
  /* cblas takes int sizes: the col matrix dimensions and leading dimensions must fit. */
  if (g->Kall > INT32_MAX || g->P > INT32_MAX || g->S > INT32_MAX || g->F > INT32_MAX ||
      g->C > INT32_MAX)
    return opf_case_error(c, OPF_EINVAL, "%s: x %s with w %s exceeds the 2^31 GEMM dimension "
                          "limit", nm, opf_shape_str(x, s1, sizeof s1), opf_shape_str(w, s2, sizeof s2));
  int64_t shape[5], CH = sp->transpose ? g->C : g->F;
  const int64_t *sz = sp->transpose ? g->in : g->out;
  shape[0] = g->N;
  shape[nhwc ? nd + 1 : 1] = CH;
  for (int i = 0; i < nd; i++) shape[(nhwc ? 1 : 2) + i] = sz[a0 + i];
  opf_set_out(c, 0, c->dtype, nd + 2, shape);
  /* one workspace for every algorithm the case's implementations may pick */
  size_t ws = nn_conv_ws_bytes(g), alt = 0;
  if (nn_subpix_fits(g) && (sp->transpose || nn_conv_strided(g))) alt = nn_subpix_ws_bytes(g);
  if ((nn_wino_fits(g, c->dtype) || nn_wino_dil_fits(g, c->dtype)) && nn_wino_ws_bytes(g) > alt)
    alt = nn_wino_ws_bytes(g);
  if ((nn_group_fits(g, c->dtype, 0) || nn_group_gemm_fits(g, c->dtype, 0)) &&
      nn_group_ws_bytes(g) > alt)
    alt = nn_group_ws_bytes(g);
  if (nn_wino3d_fits(g, c->dtype) && nn_wino3d_ws_bytes(g) > alt) alt = nn_wino3d_ws_bytes(g);
  c->ws_bytes = ws > alt ? ws : alt;
  return OPF_OK;
}

/* ---- operator hooks of conv.c and conv_transpose.c: inputs x, w, b at 0, 1, 2; the rank
 * from the layout choices ("NCW|NWC": 1), transposed when the operator has output_padding.
 * A transposed convolution swaps the drivers: forward y = col2im(W^T x) + b is the data
 * gradient of a convolution, backward dx = W im2col(gy) its forward (sharing the col blocks
 * with dw = x im2col(gy)^T), db the sums of gy. ---- */
static nn_conv_spec op_spec(const opf_case *c) {
  nn_conv_spec sp = {c->op->name, 2, 0, 0, 1, 2};
  for (int i = 0; i < c->op->n_params; i++) {
    const opf_param_desc *pd = &c->op->params[i];
    if (!strcmp(pd->name, "output_padding")) sp.transpose = 1;
    if (!strcmp(pd->name, "layout")) sp.nd = (int)strcspn(pd->choices, "|") - 2;
  }
  return sp;
}

int nn_conv_op_infer(opf_case *c) {
  nn_conv_spec sp = op_spec(c);
  nn_conv_geom g;
  return nn_conv_infer(c, &sp, &g);
}

void nn_conv_op_geom(const opf_case *c, nn_conv_geom *g) {
  nn_conv_spec sp = op_spec(c);
  nn_conv_geom_of(c, &sp, g);
}

static const void *op_bias(const opf_case *c) { return c->present[2] ? c->in[2].data : NULL; }

/* The 2-D and 3-D Winograd drivers (the same three passes). */
typedef struct wino_ops {
  void (*fwd)(const nn_conv_geom *, void *, size_t, const void *, const void *, const void *,
              void *);
  void (*dgrad)(const nn_conv_geom *, void *, size_t, const void *, const void *, const void *,
                void *);
  void (*wgrad)(const nn_conv_geom *, void *, size_t, const void *, const void *, void *);
} wino_ops;
static const wino_ops wino2d = {nn_wino_forward, nn_wino_data_grad, nn_wino_weight_grad};
static const wino_ops wino3d = {nn_wino3d_forward, nn_wino3d_data_grad, nn_wino3d_weight_grad};
/* a dilated window's phases: forward and data gradient only */
static const wino_ops wino2d_dil = {nn_wino_forward, nn_wino_data_grad, NULL};

/* Winograd for a convolution the automatic choice sends there: it fits, and the channel
 * counts are large enough for its 36 GEMMs (a first layer with C = 3 keeps im2col, whose
 * hand-written small products serve it better). NULL: not Winograd. */
static const wino_ops *use_wino(const nn_conv_geom *g, opf_dtype dt, int algo, int tr) {
  const wino_ops *o = nn_wino_fits(g, dt) ? &wino2d : nn_wino3d_fits(g, dt) ? &wino3d : NULL;
  if (!o && !tr && nn_wino_dil_fits(g, dt) && algo != NN_ALGO_CORE && algo != NN_ALGO_DIRECT &&
      algo != NN_ALGO_TAPS)
    o = &wino2d_dil;
  if (algo == NN_ALGO_GEMM || algo == NN_ALGO_NOWINO || !o) return NULL;
  if (algo == NN_ALGO_FAST) return o;
  /* 3-D from planes of 16 4x4 tiles: on 7x7 and 12x12 planes (128 channels) the per-slice
   * GEMMs were too thin and im2col won by 1.3-3.5x; 14x14 and up Winograd won 1.3-2x */
  if (o == &wino3d && ((g->out[1] + 3) / 4) * ((g->out[2] + 3) / 4) < NN_WINO3D_MIN_TILES)
    return NULL;
  return g->C >= NN_WINO_MIN_CH && g->F >= NN_WINO_MIN_CH ? o : NULL;
}

/* The phase decomposition for a transposed forward the automatic choice sends there: it
 * fits, and the output has channels enough for its GEMMs' M dimension (3 output channels
 * keep col2im, whose GEMM's M is C*taps). */
static int use_subpix(const nn_conv_geom *g, int algo) {
  if (algo == NN_ALGO_GEMM || !nn_subpix_fits(g)) return 0;
  return algo == NN_ALGO_FAST || g->C >= NN_SUBPIX_MIN_CH;
}

/* The phase decomposition for a strided convolution's data gradient (a transposed
 * convolution's forward with the same weight): where it fits, from NN_SUBPIX_MIN_CH input
 * channels (its GEMMs' M dimension). col2im's GEMM has M = C*taps but scatters every col row
 * back into dx; the phases write each dx element once, from K = F*taps-of-the-phase. */
static int use_subpix_dx(const nn_conv_geom *g, int algo) {
  if (algo == NN_ALGO_GEMM || !nn_conv_strided(g) || !nn_subpix_fits(g)) return 0;
  return algo == NN_ALGO_FAST || g->C >= NN_SUBPIX_MIN_CH;
}

/* The direct grouped kernel (conv_group.c) for a plain convolution wherever it fits (dx: its
 * data gradient too): it has no GEMM, so the OpenBLAS alternative keeps it as well. */
static int use_group(const nn_conv_geom *g, opf_dtype dt, int algo, int dx) {
  if (dx && algo == NN_ALGO_GROUP8 && nn_conv_strided(g)) return 0; /* before the phases */
  return algo != NN_ALGO_GEMM && algo != NN_ALGO_CORE && nn_group_fits(g, dt, dx);
}

/* Its implicit GEMM (one group, dilated) wherever it fits, but for the built-in alternatives
 * that keep the direct kernels (direct) or the im2col core (im2col, openblas: the GEMM is
 * nn_gemm's kernel, not OpenBLAS). */
static int use_group_gemm(const nn_conv_geom *g, opf_dtype dt, int algo, int dx) {
  return (algo == NN_ALGO_AUTO || algo == NN_ALGO_FAST || algo == NN_ALGO_NOWINO ||
          algo == NN_ALGO_TAPS) &&
         nn_group_gemm_fits(g, dt, dx);
}

/* conv_group.c's kernels for the algorithm (gemm: use_group_gemm) */
static int group_kind(int gemm, int algo) {
  return gemm ? NN_GROUP_GEMM : algo == NN_ALGO_GROUP8 ? NN_GROUP_BLOCK8 : NN_GROUP_DIRECT;
}

/* out[c] = sum of the big tensor's channel c (a transposed convolution's bias gradient). */

/* A transposed convolution with a 3x3 window, stride 1 is the data gradient of a plain one
 * (and its backward that one's forward and weight gradient): Winograd serves both. */
int nn_conv_op_run_fwd(opf_case *c, int algo) {
  nn_conv_geom g;
  nn_conv_op_geom(c, &g);
  g.openblas = algo == NN_ALGO_GEMM || algo == NN_ALGO_BLAS;
  int tr = op_spec(c).transpose;
  const void *x = c->in[0].data, *w = c->in[1].data;
  void *y = c->out[0].data;
  const wino_ops *wo = use_wino(&g, c->dtype, algo, tr);
  if (wo) {
    if (tr) wo->dgrad(&g, c->ws, c->ws_bytes, x, w, op_bias(c), y);
    else wo->fwd(&g, c->ws, c->ws_bytes, x, w, op_bias(c), y);
    return OPF_OK;
  }
  if (tr && use_subpix(&g, algo)) {
    nn_subpix_forward(&g, c->dtype, c->ws, c->ws_bytes, x, w, op_bias(c), y);
    return OPF_OK;
  }
  int gemm = !tr && use_group_gemm(&g, c->dtype, algo, 0);
  if (gemm || (!tr && use_group(&g, c->dtype, algo, 0))) {
    nn_group_forward(&g, group_kind(gemm, algo), c->ws, c->ws_bytes, x, w, op_bias(c), y);
    return OPF_OK;
  }
  nn_conv_job j = {.g = &g, .dt = c->dtype, .ws = c->ws, .ws_bytes = c->ws_bytes, .w = w};
  if (tr) {
    j.gsmall = x, j.dbig = y, j.bigshift = op_bias(c);
    nn_conv_backward(&j);
  } else {
    j.big = x, j.small = y, j.shift = op_bias(c);
    nn_conv_forward(&j);
  }
  return OPF_OK;
}

int nn_conv_op_forward(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_AUTO); }

int nn_conv_op_run_bwd(opf_case *c, int algo) {
  nn_conv_geom g;
  nn_conv_op_geom(c, &g);
  g.openblas = algo == NN_ALGO_GEMM || algo == NN_ALGO_BLAS;
  void *db = c->present[2] ? c->gin[2].data : NULL;
  int tr = op_spec(c).transpose;
  const void *x = c->in[0].data, *w = c->in[1].data, *gy = c->gout[0].data;
  void *dx = c->gin[0].data, *dw = c->gin[1].data;
  nn_conv_job j = {.g = &g, .dt = c->dtype, .ws = c->ws, .ws_bytes = c->ws_bytes, .w = w, .dw = dw};
  const wino_ops *wo = use_wino(&g, c->dtype, algo, tr);
  int dx_wino = wo && !wo->wgrad; /* a dilated window: dx by Winograd, dw and db below */
  if (dx_wino) wo = NULL;
  if (wo) { /* dx and dw by Winograd, db by sums */
    if (tr) {
      if (db) big_sums(&g, c->dtype, gy, db);
      wo->fwd(&g, c->ws, c->ws_bytes, gy, w, NULL, dx);
      wo->wgrad(&g, c->ws, c->ws_bytes, gy, x, dw);
      return OPF_OK;
    }
    if (db) { /* the core's bias-gradient sums alone */
      j.gsmall = gy, j.dsmall_sum = db, j.dw = NULL;
      nn_conv_backward(&j);
    }
    wo->dgrad(&g, c->ws, c->ws_bytes, gy, w, NULL, dx);
    wo->wgrad(&g, c->ws, c->ws_bytes, x, gy, dw);
  } else if (tr) {
    j.big = gy, j.small = dx, j.gsmall = x, j.dbig_sum = db;
    nn_conv_forward(&j);
  } else if (dx_wino || use_group(&g, c->dtype, algo, 0) ||
             use_group_gemm(&g, c->dtype, algo, 1)) {
    /* dx by Winograd (a dilated window's phases), else direct or by the implicit GEMM where
     * they fit; dw, db direct where they fit; the rest (a strided data gradient, the weight
     * gradient of channels the direct kernel does not take) by the core */
    int gemm = !dx_wino && use_group_gemm(&g, c->dtype, algo, 1);
    int wg = use_group(&g, c->dtype, algo, 0);
    int dx_done = dx_wino || gemm || use_group(&g, c->dtype, algo, 1);
    int dx_group = dx_done && !dx_wino;
    if (dx_group || wg)
      nn_group_backward(&g, group_kind(gemm, algo), c->ws, c->ws_bytes, x, w, gy,
                        dx_group ? dx : NULL, wg ? dw : NULL, wg ? db : NULL);
    if (dx_wino && dx) nn_wino_data_grad(&g, c->ws, c->ws_bytes, gy, w, NULL, dx);
    if (!dx_done || !wg) {
      j.big = x, j.gsmall = gy, j.dbig = dx_done ? NULL : dx, j.dw = wg ? NULL : dw;
      j.dsmall_sum = wg ? NULL : db;
      nn_conv_backward(&j);
    }
  } else if (use_subpix_dx(&g, algo)) { /* dw and db by the core, dx by phases */
    j.big = x, j.gsmall = gy, j.dsmall_sum = db;
    nn_conv_backward(&j);
    nn_subpix_forward(&g, c->dtype, c->ws, c->ws_bytes, gy, w, NULL, dx);
  } else {
    j.big = x, j.gsmall = gy, j.dbig = dx, j.dsmall_sum = db;
    nn_conv_backward(&j);
  }
  return OPF_OK;
}

int nn_conv_op_backward(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_AUTO); }

int nn_conv_op_reference(opf_case *c) {
  nn_conv_geom g;
  nn_conv_op_geom(c, &g);
  if (op_spec(c).transpose)
    nn_conv_ref_tfwd(&g, c->dtype, c->in[0].data, c->in[1].data, op_bias(c), c->out[0].data);
  else nn_conv_ref_fwd(&g, c->dtype, c->in[0].data, c->in[1].data, op_bias(c), c->out[0].data);
  return OPF_OK;
}

/* The GEMM work 2*N*F*P*(C/groups)*KK (P the small side's positions: a convolution's output, a
 * transposed one's input) fwd, twice that bwd (data and weight gradients); plus one add per
 * output element for the bias fwd, and for db bwd. */
double nn_conv_op_flops(const opf_case *c, opf_pass p) {
  nn_conv_geom g;
  nn_conv_op_geom(c, &g);
  double mm = 2 * nn_conv_macs(&g), outs = op_spec(c).transpose ? nn_conv_big_elems(&g)
                                                                 : nn_conv_small_elems(&g);
  double bias = c->present[2] ? outs : 0;
  return opf_pass_sum(p, mm + bias, 2 * mm + bias);
}

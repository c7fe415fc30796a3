/* depthwise_conv2d.c: depthwise 2-D convolution (groups == channels, channel multiplier M),
 * NCHW or NHWC, with stride, padding, dilation and an optional bias. A direct kernel: each
 * band of output rows copies its input rows once into zero-padded "phase planes" (for stride
 * s, the s x s planes of every s-th row and column), where every tap of every output is a
 * fixed offset from the output's flattened index; the outputs are then register-blocked
 * vector FMAs over contiguous loads (NCHW: scalar weight per tap; NHWC: a weight vector per
 * tap over channels). Backward uses the same planes: dx as a correlation of the gradient with
 * the taps of each phase, dw and db as dot products. im2col + GEMM is poor here: K = 9.
 * NHWC with multiplier 1 and at least one vector of channels takes a direct path instead
 * (default; --impl phase keeps the planes everywhere): channels in the vector lanes, taps
 * read in place from x, rows of output pixels register-blocked (8 pixels x 1 channel vector,
 * each input vector of a 3-wide tap row loaded once for its three outputs), the rows a row's
 * successor reads first prefetched; dx as the transposed convolution (per class of input
 * columns mod the stride) with the same kernel, dw and db as per-channel sums in registers
 * over each row; threads over images x rows. */
#include <string.h>

#include "resize_common.h"

enum { IN_X, IN_W, IN_B };
enum { P_MULT, P_KERNEL, P_KH, P_KW, P_STRIDE, P_PAD, P_DIL, P_LAYOUT };

#define DW_BAND_BYTES ((int64_t)384 << 10) /* per-thread band buffers, about half of L2 */
#define DW_V 64                              /* bytes of one vector */
#define DW_PIX 4                             /* NHWC: pixels per register block */
/* Keeps short copy and zero loops inline instead of turning them into memcpy / memset calls,
 * whose set-up costs more than rows of a few hundred bytes. */
#define DW_NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))

/* ---- geometry ---- */
typedef struct dw_geom {
  int nhwc;
  int64_t N, C, H, W, M, CM, KH, KW, KK, s, ph, pw, dh, dw, OH, OW;
  int64_t u;                   /* elements per phase-plane pixel: 1, or C rounded up to a vector */
  int64_t Wq, Hq;              /* phase-plane row pitch and rows, in pixels */
  int64_t ahmax, awmax, offmax; /* largest tap offsets: rows, columns, flattened pixels */
  int64_t band, nb, Hb;        /* output rows per band, bands, phase rows a band holds */
  int64_t ch;                  /* pixels per chunk of the flattened loops */
  int64_t LB;                  /* pixels of every band buffer (with slack) */
  size_t es;
} dw_geom;

static int64_t dw_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/* Tap t = (kh, kw): its phase plane and flattened offset. */
static inline int64_t dw_phase(const dw_geom *g, int64_t t) {
  return (t / g->KW * g->dh % g->s) * g->s + t % g->KW * g->dw % g->s;
}
static inline int64_t dw_off(const dw_geom *g, int64_t t) {
  return t / g->KW * g->dh / g->s * g->Wq + t % g->KW * g->dw / g->s;
}

/* Geometry from validated shapes and params. */
static void dw_geom_of(const opf_case *c, dw_geom *g) {
  memset(g, 0, sizeof *g);
  const opf_tensor *x = &c->in[IN_X], *w = &c->in[IN_W];
  g->nhwc = (int)c->p[P_LAYOUT] == RS_NHWC;
  g->N = x->shape[0];
  g->C = x->shape[g->nhwc ? 3 : 1], g->H = x->shape[g->nhwc ? 1 : 2],
  g->W = x->shape[g->nhwc ? 2 : 3];
  g->M = (int64_t)c->p[P_MULT], g->CM = g->C * g->M;
  g->KH = w->shape[2], g->KW = w->shape[3], g->KK = g->KH * g->KW;
  g->s = (int64_t)c->p[P_STRIDE], g->ph = g->pw = (int64_t)c->p[P_PAD];
  g->dh = g->dw = (int64_t)c->p[P_DIL];
  g->OH = nn_out_len(g->H, g->KH, g->s, g->ph, g->dh);
  g->OW = nn_out_len(g->W, g->KW, g->s, g->pw, g->dw);
  g->es = opf_dtype_size(c->dtype);
  int64_t lanes = DW_V / (int64_t)g->es;
  g->u = g->nhwc ? dw_up(g->C, lanes) : 1;
  g->ch = g->nhwc ? DW_PIX : 4 * lanes;
  g->Wq = (g->W + 2 * g->pw + g->s - 1) / g->s;
  g->Hq = (g->H + 2 * g->ph + g->s - 1) / g->s;
  g->ahmax = (g->KH - 1) * g->dh / g->s, g->awmax = (g->KW - 1) * g->dw / g->s;
  g->offmax = g->ahmax * g->Wq + g->awmax;
  /* bands: s*s phase planes plus three more buffers of about band*Wq pixels each */
  int64_t per_row = g->Wq * g->u * (int64_t)g->es * (g->s * g->s + 3);
  g->band = DW_BAND_BYTES / per_row;
  g->band = g->band < 1 ? 1 : g->band > g->OH ? g->OH : g->band;
  g->nb = (g->OH + g->band - 1) / g->band;
  int64_t last = (g->nb - 1) * g->band; /* the last band's phase rows reach Hq */
  g->Hb = g->band + g->ahmax + 1;
  if (g->Hq - last > g->Hb) g->Hb = g->Hq - last;
  g->LB = dw_up((g->Hb + g->ahmax + 1) * g->Wq + g->offmax + g->awmax + 4 * g->ch, g->ch);
}

/* Per-thread slot: s*s phase planes, the output / dx band, the gradient band, then the dw and
 * db partial sums; elements of the case dtype. */
static size_t dw_buf_bytes(const dw_geom *g) { return (size_t)(g->LB * g->u) * g->es; }
/* Elements of the dw and db partials: [o][t] and [o] (NCHW), [m][t][c] and [m][c] (NHWC). */
static int64_t dw_part_elems(const dw_geom *g) {
  return g->M * (g->KK + 1) * (g->nhwc ? g->u : g->C);
}
static size_t dw_slot_bytes(const dw_geom *g) {
  size_t part = ((size_t)dw_part_elems(g) * g->es + 63) & ~(size_t)63;
  return (size_t)(g->s * g->s + 2) * dw_buf_bytes(g) + part;
}
/* Shared tables before the slots (NHWC): weights [m][t][c], bias [m][c] and a zero row,
 * channels padded with zeros. */
static size_t dw_table_bytes(const dw_geom *g) {
  return g->nhwc ? (((size_t)((g->M * (g->KK + 1) + 1) * g->u) * g->es + 63) & ~(size_t)63) : 0;
}

/* Offset (elements) of image n, plane ch of x or dx. */
static int64_t dw_img(const dw_geom *g, int64_t n, int64_t ch) {
  return g->nhwc ? n * g->H * g->W * g->C : (n * g->C + ch) * g->H * g->W;
}

/* ---- kernels, one template for float and double ----
 * Types: 64-byte vectors (16 floats, 8 doubles). */
typedef float dw_v_f32 __attribute__((vector_size(DW_V)));
typedef double dw_v_f64 __attribute__((vector_size(DW_V)));
typedef int32_t dw_i_f32 __attribute__((vector_size(DW_V)));
typedef int64_t dw_i_f64 __attribute__((vector_size(DW_V)));

#define DW_KERNELS(T, S)                                                                       \
  /* NCHW taps over `rows` rows: y[r*ldy + j] = (init ? init[r*ldy + j] : b) + sum_k w[k] *  \
   * src[k][r*lds + j] for j < n. Two rows of four vectors (eight independent FMA chains,   \
   * enough to cover the FMA latency) are accumulated in registers over all the taps, three  \
   * taps an iteration. A row's last chunk is shifted back to end at n (recomputing a few    \
   * outputs) when n >= 4 vectors, so rows write nothing past n (not with init == y);        \
   * shorter rows need buffers padded to 4 vectors. */                                        \
  OPF_VEC static void dw_taps1_##S(T *y, int64_t ldy, const T *init, T b, const T *const *src, \
                                   int64_t lds, const T *w, int64_t nt, int64_t n,            \
                                   int64_t rows) {                                            \
    typedef dw_v_##S vf;                                                                      \
    enum { V = DW_V / sizeof(T) };                                                            \
    const vf z = {0};                                                                         \
    for (int64_t r = 0; r < rows; r += 2) {                                                   \
      int64_t r2 = r + 1 < rows ? r + 1 : r; /* an odd last row pairs with itself */          \
      for (int64_t j0 = 0; j0 < n; j0 += 4 * V) {                                             \
        int64_t j = j0 + 4 * V > n && n >= 4 * V ? n - 4 * V : j0;                            \
        vf a[4], c[4], bv = b - z;                                                            \
        for (int q = 0; q < 4; q++) a[q] = bv;                                                \
        for (int q = 0; q < 4; q++) c[q] = bv;                                                \
        if (init)                                                                             \
          for (int q = 0; q < 4; q++) {                                                       \
            memcpy(&a[q], init + r * ldy + j + q * V, sizeof a[q]);                           \
            memcpy(&c[q], init + r2 * ldy + j + q * V, sizeof c[q]);                          \
          }                                                                                   \
        int64_t k = 0;                                                                        \
        for (; k + 3 <= nt; k += 3) {                                                         \
          _Pragma("GCC unroll 3") for (int t = 0; t < 3; t++) {                               \
            const T *p = src[k + t] + r * lds + j, *pp = src[k + t] + r2 * lds + j;           \
            vf wk = w[k + t] - z; /* x - 0 is exact: a plain broadcast */                     \
            _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {                             \
              vf v, u;                                                                        \
              memcpy(&v, p + q * V, sizeof v), memcpy(&u, pp + q * V, sizeof u);              \
              a[q] += wk * v, c[q] += wk * u;                                                 \
            }                                                                                 \
          }                                                                                   \
        }                                                                                     \
        for (; k < nt; k++) {                                                                 \
          const T *p = src[k] + r * lds + j, *pp = src[k] + r2 * lds + j;                     \
          vf wk = w[k] - z;                                                                   \
          _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {                               \
            vf v, u;                                                                          \
            memcpy(&v, p + q * V, sizeof v), memcpy(&u, pp + q * V, sizeof u);                \
            a[q] += wk * v, c[q] += wk * u;                                                   \
          }                                                                                   \
        }                                                                                     \
        for (int q = 0; q < 4; q++) {                                                         \
          memcpy(y + r * ldy + j + q * V, &a[q], sizeof a[q]);                                \
          memcpy(y + r2 * ldy + j + q * V, &c[q], sizeof c[q]);                               \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* NHWC taps over `rows` rows of pixels of u channels (u a multiple of V), pitches ldy and \
   * lds pixels: y[(r*ldy + p)*u + c] = (init ? init[..] : b[c]) + sum_k w[k][c] *            \
   * src[k][(r*lds + p)*u + c] for p < n, DW_PIX pixels of one channel vector accumulated in  \
   * registers over all the taps; last chunk shifted back as for NCHW. */                     \
  OPF_VEC static void dw_tapsv_##S(T *y, int64_t ldy, const T *init, const T *b,              \
                                   const T *const *src, int64_t lds, const T *const *w,       \
                                   int64_t nt, int64_t n, int64_t rows, int64_t u) {          \
    typedef dw_v_##S vf;                                                                      \
    enum { V = DW_V / sizeof(T) };                                                            \
    for (int64_t r = 0; r < rows; r++)                                                        \
      for (int64_t p0 = 0; p0 < n; p0 += DW_PIX) {                                            \
        int64_t p = p0 + DW_PIX > n && n >= DW_PIX ? n - DW_PIX : p0;                         \
        for (int64_t c = 0; c < u; c += V) {                                                  \
          vf a[DW_PIX];                                                                       \
          for (int q = 0; q < DW_PIX; q++) {                                                  \
            if (init) memcpy(&a[q], init + (r * ldy + p + q) * u + c, sizeof a[q]);           \
            else memcpy(&a[q], b + c, sizeof a[q]);                                           \
          }                                                                                   \
          for (int64_t k = 0; k < nt; k++) {                                                  \
            vf wk;                                                                            \
            memcpy(&wk, w[k] + c, sizeof wk);                                                 \
            const T *s0 = src[k] + (r * lds + p) * u + c;                                     \
            _Pragma("GCC unroll 4") for (int q = 0; q < DW_PIX; q++) {                        \
              vf v;                                                                           \
              memcpy(&v, s0 + q * u, sizeof v);                                               \
              a[q] += wk * v;                                                                 \
            }                                                                                 \
          }                                                                                   \
          for (int q = 0; q < DW_PIX; q++)                                                    \
            memcpy(y + (r * ldy + p + q) * u + c, &a[q], sizeof a[q]);                        \
        }                                                                                     \
      }                                                                                       \
  }                                                                                           \
  /* dw: out[k * ostr + c] += sum_p g[p*u + c] * src[k][p*u + c] over n pixels of u channels \
   * (NCHW: u = 1 and the channel sums fold into one), and bias[c] += sum_p g[p*u + c]. Taps  \
   * go three at a time over the gradient, two vectors per tap and step (six FMA chains, one  \
   * gradient load shared by three taps); the bias rides along with the first three. */       \
  OPF_VEC static void dw_dots_##S(T *out, int64_t ostr, T *bias, const T *g,                  \
                                  const T *const *src, int64_t nt, int64_t n, int64_t u) {    \
    typedef dw_v_##S vf;                                                                      \
    enum { V = DW_V / sizeof(T) };                                                            \
    int64_t step = u == 1 ? 2 * V : 2 * u, cw = u == 1 ? 1 : u; /* elements per step */       \
    for (int64_t c = 0; c < cw; c += V) /* channel vectors (one pass when flat) */            \
      for (int64_t k0 = 0; k0 < (nt > 0 ? nt : 1); k0 += 3) {                                 \
        int64_t nk = nt - k0 < 3 ? nt - k0 : 3;                                               \
        int wb = k0 == 0 && bias;                                                             \
        vf z = {0}, a0 = z, a1 = z, a2 = z, b0 = z, b1 = z, b2 = z, s0 = z, s1 = z;            \
        const T *p0 = nk > 0 ? src[k0] : g, *p1 = nk > 1 ? src[k0 + 1] : g;                   \
        const T *p2 = nk > 2 ? src[k0 + 2] : g;                                               \
        int64_t off = u == 1 ? V : u; /* the second vector of a step */                       \
        for (int64_t e = c; e < n * u; e += step) {                                           \
          vf g0, g1, v0, v1;                                                                  \
          memcpy(&g0, g + e, sizeof g0), memcpy(&g1, g + e + off, sizeof g1);                 \
          s0 += g0, s1 += g1;                                                                 \
          memcpy(&v0, p0 + e, sizeof v0), memcpy(&v1, p0 + e + off, sizeof v1);               \
          a0 += g0 * v0, b0 += g1 * v1;                                                       \
          memcpy(&v0, p1 + e, sizeof v0), memcpy(&v1, p1 + e + off, sizeof v1);               \
          a1 += g0 * v0, b1 += g1 * v1;                                                       \
          memcpy(&v0, p2 + e, sizeof v0), memcpy(&v1, p2 + e + off, sizeof v1);               \
          a2 += g0 * v0, b2 += g1 * v1;                                                       \
        }                                                                                     \
        vf r[4] = {a0 + b0, a1 + b1, a2 + b2, s0 + s1};                                       \
        for (int t = 0; t < 4; t++) {                                                         \
          T *o = t < 3 ? (t < nk ? out + (k0 + t) * ostr : NULL) : wb ? bias : NULL;          \
          if (!o) continue;                                                                   \
          if (u == 1) {                                                                       \
            T sum = 0;                                                                        \
            for (int l = 0; l < V; l++) sum += r[t][l];                                       \
            o[0] += sum;                                                                      \
          } else {                                                                            \
            for (int l = 0; l < V; l++) o[c + l] += r[t][l];                                  \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
  }                                                                                           \
  /* One phase row of pixels q < nq: dst[q] = src pixel (q*s + c0), zero outside [0, ncol);  \
   * pixels of u elements of which the first uc come from src (the rest are zero). */         \
  static inline __attribute__((always_inline)) void dw_phase_row_##S(                         \
      T *restrict dst, const T *restrict src, int64_t nq,                                     \
                                       int64_t s, int64_t c0, int64_t ncol, int64_t u,        \
                                       int64_t uc) {                                          \
    enum { V = DW_V / sizeof(T) };                                                            \
    int64_t qa = c0 >= 0 ? 0 : (-c0 + s - 1) / s;                                             \
    int64_t qb = ncol - c0 <= 0 ? 0 : (ncol - c0 + s - 1) / s;                                \
    qa = qa < nq ? qa : nq, qb = qb < nq ? qb : nq, qb = qb > qa ? qb : qa;                   \
    for (int64_t i = 0; i < qa * u; i++) dst[i] = 0; /* the padding: a pixel or two */        \
    for (int64_t i = qb * u; i < nq * u; i++) dst[i] = 0;                                     \
    if (u == 1 && s == 1) { /* rows of a few hundred bytes: inline vector copies */           \
      T *restrict d = dst + qa;                                                               \
      const T *restrict sp = src + qa + c0;                                                   \
      int64_t n = qb - qa, i = 0;                                                             \
      for (; i + V <= n; i += V) {                                                            \
        dw_v_##S v;                                                                           \
        memcpy(&v, sp + i, sizeof v);                                                         \
        memcpy(d + i, &v, sizeof v);                                                          \
      }                                                                                       \
      for (; i < n; i++) d[i] = sp[i];                                                        \
    } else if (u == 1 && s == 2) {                                                            \
      for (int64_t q = qa; q < qb; q++) dst[q] = src[2 * q + c0];                             \
    } else if (u == 1) {                                                                      \
      for (int64_t q = qa; q < qb; q++) dst[q] = src[q * s + c0];                             \
    } else if (u == uc && s == 1) {                                                           \
      memcpy(dst + qa * u, src + (qa + c0) * u, (size_t)((qb - qa) * u) * sizeof(T));         \
    } else {                                                                                  \
      for (int64_t q = qa; q < qb; q++) {                                                     \
        memcpy(dst + q * u, src + (q * s + c0) * uc, (size_t)uc * sizeof(T));                 \
        memset(dst + q * u + uc, 0, (size_t)(u - uc) * sizeof(T));                            \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* Rows r < rows of one phase plane (pitch nq pixels of u elements): input row ih0 + r*s  \
   * of img (rows of rowe elements), zero rows outside [0, H). Stride-1 rows that fit one     \
   * vector (14x14 maps) are one load, one shift-and-zero shuffle and one store (the load may \
   * read past the row, never past end). */                                                   \
  OPF_VEC DW_NO_LIBCALLS static void dw_phase_plane_##S(                                      \
      T *restrict dst, const T *restrict img, const T *end, int64_t rowe, int64_t ih0,         \
      int64_t rows, int64_t H, int64_t nq, int64_t s, int64_t c0, int64_t ncol, int64_t u,    \
      int64_t uc, int64_t ldp) {                                                              \
    typedef dw_v_##S vf;                                                                      \
    enum { V = DW_V / sizeof(T) };                                                            \
    int one = u == 1 && s == 1 && nq <= V && c0 <= 0 && ncol - c0 <= V;                       \
    dw_i_##S mask;                                                                            \
    for (int l = 0; l < V; l++) mask[l] = l + c0 >= 0 && l + c0 < ncol ? l + c0 : V;         \
    for (int64_t r = 0; r < rows; r++) {                                                      \
      int64_t ih = ih0 + r * s;                                                               \
      T *restrict d = dst + r * nq * u;                                                       \
      if (ih < 0 || ih >= H) {                                                                \
        for (int64_t i = 0; i < nq * u; i++) d[i] = 0;                                        \
        for (int64_t i = 0; ldp && i < nq; i++) d[ldp + i] = 0;                               \
      } else if (one && img + ih * rowe + V <= end) {                                         \
        vf v, z = {0};                                                                        \
        memcpy(&v, img + ih * rowe, sizeof v);                                                \
        v = __builtin_shuffle(v, z, mask);                                                    \
        memcpy(d, &v, (size_t)nq * sizeof(T));                                                \
      } else if (ldp) { /* stride 2, flat: both column phases (d, d + ldp) in one pass */     \
        T *restrict d1 = d + ldp;                                                             \
        const T *restrict xr = img + ih * rowe;                                               \
        int64_t q0 = (1 - c0) / 2, q1 = (ncol - c0) / 2; /* pixels 2q + c0 (+1) inside */     \
        q0 = q0 < nq ? q0 : nq, q1 = q1 < nq ? q1 : nq, q1 = q1 > q0 ? q1 : q0;               \
        for (int64_t q = q0; q < q1; q++) d[q] = xr[2 * q + c0], d1[q] = xr[2 * q + c0 + 1];  \
        for (int64_t q = 0; q < nq; q++) { /* the edges, zero outside the row */              \
          if (q == q0) q = q1;                                                                \
          if (q >= nq) break;                                                                 \
          int64_t i0 = 2 * q + c0;                                                            \
          d[q] = i0 >= 0 && i0 < ncol ? xr[i0] : 0;                                           \
          d1[q] = i0 + 1 >= 0 && i0 + 1 < ncol ? xr[i0 + 1] : 0;                              \
        }                                                                                     \
      } else {                                                                                \
        dw_phase_row_##S(d, img + ih * rowe, nq, s, c0, ncol, u, uc);                         \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* dst[r*ldd + i] = src[r*lds + i] for i < n, r < rows: short rows, inline copies; rows    \
   * that fit a vector are stored whole (the excess is overwritten by the next row), the last \
   * one exactly. */                                                                           \
  OPF_VEC DW_NO_LIBCALLS static void dw_copy_rows_##S(T *restrict dst, int64_t ldd,           \
                                                      const T *restrict src, int64_t lds,     \
                                                      int64_t n, int64_t rows) {              \
    typedef dw_v_##S vf;                                                                      \
    enum { V = DW_V / sizeof(T) };                                                            \
    int64_t r = 0;                                                                            \
    if (n <= V && lds >= V)                                                                   \
      for (; r + 1 < rows && ldd >= n; r++) {                                                 \
        vf v;                                                                                 \
        memcpy(&v, src + r * lds, sizeof v);                                                  \
        memcpy(dst + r * ldd, &v, sizeof v);                                                  \
      }                                                                                       \
    for (; r < rows; r++)                                                                     \
      for (int64_t i = 0; i < n; i++) dst[r * ldd + i] = src[r * lds + i];                    \
  }                                                                                           \
  /* The converse for dx: input row pixels iw < W from the s phase rows sp[fc] (iw + pw =    \
   * q*s + fc): dst pixel iw (uc elements) from sp[fc] pixel q (u elements). Stride 2 on      \
   * flat rows interleaves the two phases in one vector loop. */                              \
  OPF_VEC DW_NO_LIBCALLS static void dw_unphase_row_##S(T *restrict dst, const T *const *sp,  \
                                                        int64_t W, int64_t s, int64_t pw,     \
                                                        int64_t u, int64_t uc) {              \
    if (u == uc && s == 1) { /* one contiguous run */                                        \
      const T *restrict s0 = sp[0] + pw * u;                                                  \
      for (int64_t i = 0; i < W * u; i++) dst[i] = s0[i];                                     \
      return;                                                                                 \
    }                                                                                         \
    int64_t q0 = 0, q1 = 0;                                                                   \
    if (u == 1 && s == 2) { /* pairs (2q - pw, 2q + 1 - pw) inside [0, W) */                 \
      const T *restrict s0 = sp[0], *restrict s1 = sp[1];                                    \
      q0 = (pw + 1) / 2, q1 = (W + pw) / 2;                                                   \
      T *restrict d = dst - pw;                                                               \
      for (int64_t q = q0; q < q1; q++) d[2 * q] = s0[q], d[2 * q + 1] = s1[q];               \
    }                                                                                         \
    int64_t skip0 = q0 * s - pw, skip1 = q1 * s - pw; /* pixels the pair loop wrote */        \
    for (int64_t iw = 0; iw < W; iw++) { /* the rest pixel by pixel */                       \
      if (iw == skip0 && skip1 > skip0) iw = skip1;                                           \
      if (iw >= W) break;                                                                     \
      int64_t q = (iw + pw) / s, fc = (iw + pw) % s;                                          \
      if (uc == 1) dst[iw] = sp[fc][q * u];                                                   \
      else memcpy(dst + iw * uc, sp[fc] + q * u, (size_t)uc * sizeof(T));                     \
    }                                                                                         \
  }

DW_KERNELS(float, f32)
DW_KERNELS(double, f64)

/* Prefetch share of pixels [j0, j1) of np: of the nl[i] lines from pf[i], i < 2 (pf NULL:
 * none). */
static inline __attribute__((always_inline)) void dw_pf2(const char *const *pf, const int64_t *nl,
                                                         int64_t j0, int64_t j1, int64_t np) {
  for (int i = 0; pf && i < 2; i++)
    for (int64_t l = j0 * nl[i] / np; l < j1 * nl[i] / np; l++) __builtin_prefetch(pf[i] + l * 64);
}

/* ---- the direct NHWC kernels (multiplier 1, at least one vector of channels) ----
 * Channels in the vector lanes, read straight from x / the gradient (no copies): a tap is a
 * source pointer plus a pixel step. C not a multiple of the vector: the last vector is
 * [C - V, C), overlapping the one before (stores recompute the same values; sums skip the
 * lanes already counted). */
#define DW_DIRECT(T, S)                                                                        \
  /* P pixels j of y (pixel step ys elements) and Q channel vectors from c (P*Q <= 8): init    \
   * (or zero) + sum over the taps of w[k] * src[k][j*ss], all P*Q accumulators in registers   \
   * over the taps (short rows take more channel vectors: eight FMA chains either way). */     \
  static inline __attribute__((always_inline)) void dw_dblk_##S(                               \
      T *y, int64_t ys, const T *init, const T *const *src, int64_t ss, const T *const *w,     \
      int64_t nt, int64_t c, int P, int Q) {                                                   \
    typedef dw_v_##S vf;                                                                       \
    enum { V = DW_V / sizeof(T) };                                                             \
    vf a[8], z = {0};                                                                          \
    _Pragma("GCC unroll 8") for (int q = 0; q < P * Q; q++) {                                  \
      if (init) memcpy(&a[q], init + c + q % Q * V, sizeof a[q]);                              \
      else a[q] = z;                                                                           \
    }                                                                                          \
    for (int64_t k = 0; k < nt; k++) {                                                         \
      vf wk[8];                                                                                \
      _Pragma("GCC unroll 8") for (int u = 0; u < Q; u++)                                      \
        memcpy(&wk[u], w[k] + c + u * V, sizeof wk[u]);                                        \
      const T *p = src[k] + c;                                                                 \
      _Pragma("GCC unroll 8") for (int q = 0; q < P * Q; q++) {                                \
        vf v;                                                                                  \
        memcpy(&v, p + q / Q * ss + q % Q * V, sizeof v);                                      \
        a[q] += wk[q % Q] * v;                                                                 \
      }                                                                                        \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int q = 0; q < P * Q; q++)                                    \
      memcpy(y + q / Q * ys + c + q % Q * V, &a[q], sizeof a[q]);                              \
  }                                                                                            \
  /* The same for taps in rows of three adjacent pixels (3 wide, dilation 1: src[k + i] =      \
   * src[k] + i*C) and pixel step ss = St*C, St = 1 or 2: each input vector of a row is        \
   * loaded once for the up to three outputs it feeds ((P - 1)*St + 3 loads for 3P FMAs, not   \
   * 3P). (3x3 rows of 512 channels: the 2 KiB pixel pitch puts a row's loads of one channel   \
   * vector in two L1 sets, so every load saved is an L2 read saved.) */                       \
  static inline __attribute__((always_inline)) void dw_dblk3_##S(                              \
      T *y, int64_t ys, const T *init, const T *const *src, int64_t C, const T *const *w,      \
      int64_t nt, int64_t c, int P, int Q, int St) {                                           \
    typedef dw_v_##S vf;                                                                       \
    enum { V = DW_V / sizeof(T) };                                                             \
    vf a[8], z = {0};                                                                          \
    _Pragma("GCC unroll 8") for (int q = 0; q < P * Q; q++) {                                  \
      if (init) memcpy(&a[q], init + c + q % Q * V, sizeof a[q]);                              \
      else a[q] = z;                                                                           \
    }                                                                                          \
    for (int64_t k = 0; k < nt; k += 3) {                                                      \
      vf wk[3][2];                                                                             \
      for (int i = 0; i < 3; i++)                                                              \
        _Pragma("GCC unroll 2") for (int u = 0; u < Q; u++)                                    \
          memcpy(&wk[i][u], w[k + i] + c + u * V, sizeof wk[i][u]);                            \
      const T *p = src[k] + c;                                                                 \
      _Pragma("GCC unroll 17") for (int e = 0; e < (P - 1) * St + 3; e++)                      \
        _Pragma("GCC unroll 2") for (int u = 0; u < Q; u++) {                                  \
          vf v;                                                                                \
          memcpy(&v, p + e * C + u * V, sizeof v);                                             \
          _Pragma("GCC unroll 3") for (int i = 0; i < 3; i++) {                                \
            int q = (e - i) / St;                                                              \
            if (e >= i && (e - i) % St == 0 && q < P) a[q * Q + u] += wk[i][u] * v;            \
          }                                                                                    \
        }                                                                                      \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int q = 0; q < P * Q; q++)                                    \
      memcpy(y + q / Q * ys + c + q % Q * V, &a[q], sizeof a[q]);                              \
  }                                                                                            \
  /* np pixels in blocks of 8 while they last, then of 4 (the last one shifted back over       \
   * pixels already written: the same values again), single pixels only in rows under 4;       \
   * blocks of 4 take two channel vectors at a time, single pixels eight. The pfn bytes at pf  \
   * (the rows the next call reads first, NULL for none) are prefetched spread over the        \
   * blocks: streaming from memory, the hardware prefetchers alone leave these first reads     \
   * waiting. */                                                                               \
  OPF_VEC static void dw_dir_##S(T *y, int64_t ys, const T *init, const T *const *src,         \
                                 int64_t ss, const T *const *w, int64_t nt, int64_t np,        \
                                 int64_t C, const char *pf, int64_t pfn) {                     \
    enum { V = DW_V / sizeof(T) };                                                             \
    const T *sp[1024];                                                                         \
    int64_t lines = pf ? (pfn + 63) / 64 : 0;                                                  \
    int row3 = nt % 3 == 0 && (ss == C || ss == 2 * C); /* rows of 3 adjacent taps */          \
    for (int64_t k = 0; row3 && k < nt; k += 3)                                                \
      row3 = src[k + 1] == src[k] + C && src[k + 2] == src[k] + 2 * C;                         \
    for (int64_t j0 = 0; j0 < np;) {                                                           \
      int P = np - j0 >= 8 ? 8 : np >= 4 ? 4 : 1;                                              \
      int64_t j = j0 + P > np ? np - P : j0, j1 = j + P;                                       \
      for (int64_t l = j0 * lines / np; l < j1 * lines / np; l++)                              \
        __builtin_prefetch(pf + l * 64);                                                       \
      for (int64_t k = 0; k < nt; k++) sp[k] = src[k] + j * ss;                                \
      T *yj = y + j * ys;                                                                      \
      int64_t c = 0;                                                                           \
      if (P == 4 && row3 && ss == C)                                                           \
        for (; c + 2 * V <= C; c += 2 * V) dw_dblk3_##S(yj, ys, init, sp, C, w, nt, c, 4, 2, 1); \
      else if (P == 4 && row3)                                                                 \
        for (; c + 2 * V <= C; c += 2 * V) dw_dblk3_##S(yj, ys, init, sp, C, w, nt, c, 4, 2, 2); \
      else if (P == 4)                                                                         \
        for (; c + 2 * V <= C; c += 2 * V) dw_dblk_##S(yj, ys, init, sp, ss, w, nt, c, 4, 2);  \
      else if (P == 1)                                                                         \
        for (; c + 8 * V <= C; c += 8 * V) dw_dblk_##S(yj, ys, init, sp, ss, w, nt, c, 1, 8);  \
      for (int64_t c0 = c; c0 < C; c0 += V) { /* one channel vector at a time */               \
        int64_t cv = c0 + V > C ? C - V : c0;                                                  \
        if (row3 && ss == C && P == 8) dw_dblk3_##S(yj, ys, init, sp, C, w, nt, cv, 8, 1, 1);  \
        else if (row3 && P == 8) dw_dblk3_##S(yj, ys, init, sp, C, w, nt, cv, 8, 1, 2);        \
        else if (row3 && ss == C && P == 4)                                                    \
          dw_dblk3_##S(yj, ys, init, sp, C, w, nt, cv, 4, 1, 1);                               \
        else if (row3 && P == 4) dw_dblk3_##S(yj, ys, init, sp, C, w, nt, cv, 4, 1, 2);        \
        else if (P == 8) dw_dblk_##S(yj, ys, init, sp, ss, w, nt, cv, 8, 1);                   \
        else if (P == 4) dw_dblk_##S(yj, ys, init, sp, ss, w, nt, cv, 4, 1);                   \
        else dw_dblk_##S(yj, ys, init, sp, ss, w, nt, cv, 1, 1);                               \
      }                                                                                        \
      j0 = j1;                                                                                 \
    }                                                                                          \
  }                                                                                            \
  /* Up to 9 taps of one channel vector: out[k][c..] += sum_j g[j*gs] * src[k][j*ss] and       \
   * bias[c..] += sum_j g[j*gs], the sums in registers over the np pixels; lanes below skip    \
   * are not added (counted by the vector before). St = 1 or 2: the taps are rows of three     \
   * adjacent pixels (src[k + i] = src[k] + i*C, ss = St*C, K a multiple of 3) and blocks of   \
   * 8 pixels load each input vector once for the up to three taps it meets (as dblk3). */     \
  static inline __attribute__((always_inline)) void dw_dgrp_##S(                               \
      T *const *out, T *bias, const T *g, int64_t gs, const T *const *src, int64_t ss,         \
      int64_t np, int64_t c, int skip, int K, int St, const char *const *pf,                   \
      const int64_t *nl) {                                                                     \
    typedef dw_v_##S vf;                                                                       \
    enum { V = DW_V / sizeof(T) };                                                             \
    vf a[9], sb = {0}, z = {0};                                                                \
    _Pragma("GCC unroll 9") for (int k = 0; k < K; k++) a[k] = z;                              \
    int64_t j = 0;                                                                             \
    if (St)                                                                                    \
      for (; j + 8 <= np; j += 8) {                                                            \
        vf gq[8];                                                                              \
        dw_pf2(pf, nl, j, j + 8, np);                                                          \
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++) {                                  \
          memcpy(&gq[q], g + (j + q) * gs + c, sizeof gq[q]);                                  \
          sb += gq[q];                                                                         \
        }                                                                                      \
        for (int r = 0; r < K / 3; r++) { /* no unroll pragma: -O0 warns it ignores it */    \
          const T *p = src[3 * r] + j * ss + c;                                                \
          _Pragma("GCC unroll 17") for (int e = 0; e < 7 * St + 3; e++) {                      \
            vf v;                                                                              \
            memcpy(&v, p + e * (ss / St), sizeof v);                                           \
            _Pragma("GCC unroll 3") for (int i = 0; i < 3; i++) {                              \
              int q = (e - i) / St;                                                            \
              if (e >= i && (e - i) % St == 0 && q < 8) a[3 * r + i] += gq[q] * v;             \
            }                                                                                  \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    for (; j < np; j++) {                                                                      \
      vf gv;                                                                                   \
      dw_pf2(pf, nl, j, j + 1, np);                                                            \
      memcpy(&gv, g + j * gs + c, sizeof gv);                                                  \
      sb += gv;                                                                                \
      _Pragma("GCC unroll 9") for (int k = 0; k < K; k++) {                                    \
        vf v;                                                                                  \
        memcpy(&v, src[k] + j * ss + c, sizeof v);                                             \
        a[k] += gv * v;                                                                        \
      }                                                                                        \
    }                                                                                          \
    if (!skip) {                                                                               \
      _Pragma("GCC unroll 9") for (int k = 0; k < K; k++) {                                    \
        vf o;                                                                                  \
        memcpy(&o, out[k] + c, sizeof o);                                                      \
        o += a[k];                                                                             \
        memcpy(out[k] + c, &o, sizeof o);                                                      \
      }                                                                                        \
      if (bias) {                                                                              \
        vf o;                                                                                  \
        memcpy(&o, bias + c, sizeof o);                                                        \
        o += sb;                                                                               \
        memcpy(bias + c, &o, sizeof o);                                                        \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    for (int k = 0; k < K; k++)                                                                \
      for (int l = skip; l < V; l++) out[k][c + l] += a[k][l];                                 \
    if (bias)                                                                                  \
      for (int l = skip; l < V; l++) bias[c + l] += sb[l];                                     \
  }                                                                                            \
  /* dw and db partials of np pixels: every channel vector, the taps nine at a time (the       \
   * bias with the first nine; with no tap, the bias alone). pf[2] / pfn[2]: two ranges to     \
   * prefetch, spread over the channel vectors (as in dir). */                                 \
  OPF_VEC static void dw_ddots_##S(T *const *out, T *bias, const T *g, int64_t gs,             \
                                   const T *const *src, int64_t ss, int64_t nt, int64_t np,    \
                                   int64_t C, const char *const *pf, const int64_t *pfn) {     \
    enum { V = DW_V / sizeof(T) };                                                             \
    for (int64_t c0 = 0; c0 < C; c0 += V) {                                                    \
      int64_t c = c0 + V > C ? C - V : c0, ce = c0 + V < C ? c0 + V : C;                       \
      const char *pa[2] = {NULL, NULL}; /* this channel vector's share of the prefetches */    \
      int64_t nl[2] = {0, 0};                                                                  \
      for (int i = 0; pf && i < 2; i++) {                                                      \
        int64_t lines = pf[i] ? (pfn[i] + 63) / 64 : 0;                                        \
        pa[i] = pf[i] + c0 * lines / C * 64, nl[i] = ce * lines / C - c0 * lines / C;          \
      }                                                                                        \
      int skip = (int)(c0 - c);                                                                \
      for (int64_t k0 = 0; k0 < (nt > 0 ? nt : 1); k0 += 9) {                                  \
        int64_t nk = nt - k0 < 9 ? nt - k0 : 9;                                                \
        T *b = k0 == 0 ? bias : NULL;                                                          \
        T *const *o = out + k0;                                                                \
        const T *const *sk = src + k0;                                                         \
        int r3 = nk % 3 == 0 && (ss == C || ss == 2 * C) && np >= 8;                           \
        for (int64_t k = 0; r3 && k < nk; k += 3)                                              \
          r3 = sk[k + 1] == sk[k] + C && sk[k + 2] == sk[k] + 2 * C;                           \
        int St = r3 ? (int)(ss / C) : 0;                                                       \
        const char *const *pq = k0 == 0 ? pa : NULL; /* prefetch in the first group */         \
        if (nk == 9 && St == 1) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 9, 1, pq, nl);   \
        else if (nk == 9 && St == 2) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 9, 2, pq, nl); \
        else if (nk == 6 && St == 1) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 6, 1, pq, nl); \
        else if (nk == 6 && St == 2) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 6, 2, pq, nl); \
        else if (nk == 9) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 9, 0, pq, nl);         \
        else if (nk == 6) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 6, 0, pq, nl);         \
        else if (nk == 5) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 5, 0, pq, nl);         \
        else if (nk == 3) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 3, 0, pq, nl);         \
        else {                                                                                 \
          for (int64_t k = 0; k < nk; k++)                                                     \
            dw_dgrp_##S(o + k, k ? NULL : b, g, gs, sk + k, ss, np, c, skip, 1, 0,             \
                        k ? NULL : pq, nl);                                                    \
          if (nk <= 0 && b) dw_dgrp_##S(o, b, g, gs, sk, ss, np, c, skip, 0, 0, pq, nl);       \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

DW_DIRECT(float, f32)
DW_DIRECT(double, f64)

typedef struct dw_kern {
  void (*taps1)(void *, int64_t, const void *, double, const void *const *, int64_t,
                const void *, int64_t, int64_t, int64_t);
  void (*tapsv)(void *, int64_t, const void *, const void *, const void *const *, int64_t,
                const void *const *, int64_t, int64_t, int64_t, int64_t);
  void (*dots)(void *, int64_t, void *, const void *, const void *const *, int64_t, int64_t,
               int64_t);
  void (*phase_plane)(void *, const void *, const void *, int64_t, int64_t, int64_t, int64_t,
                      int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
  void (*copy_rows)(void *, int64_t, const void *, int64_t, int64_t, int64_t);
  void (*unphase_row)(void *, const void *const *, int64_t, int64_t, int64_t, int64_t, int64_t);
  void (*dir)(void *, int64_t, const void *, const void *const *, int64_t, const void *const *,
              int64_t, int64_t, int64_t, const char *, int64_t);
  void (*ddots)(void *const *, void *, const void *, int64_t, const void *const *, int64_t,
                int64_t, int64_t, int64_t, const char *const *, const int64_t *);
} dw_kern;

/* taps1 takes its constant as a double for one table type; the wrappers narrow it. */
static void dw_taps1_f32w(void *y, int64_t ldy, const void *init, double b, const void *const *src,
                          int64_t lds, const void *w, int64_t nt, int64_t n, int64_t rows) {
  dw_taps1_f32(y, ldy, init, (float)b, (const float *const *)src, lds, w, nt, n, rows);
}
static void dw_taps1_f64w(void *y, int64_t ldy, const void *init, double b, const void *const *src,
                          int64_t lds, const void *w, int64_t nt, int64_t n, int64_t rows) {
  dw_taps1_f64(y, ldy, init, b, (const double *const *)src, lds, w, nt, n, rows);
}

static const dw_kern dw_kerns[2] = {
    {dw_taps1_f32w, (void *)dw_tapsv_f32, (void *)dw_dots_f32, (void *)dw_phase_plane_f32,
     (void *)dw_copy_rows_f32, (void *)dw_unphase_row_f32, (void *)dw_dir_f32,
     (void *)dw_ddots_f32},
    {dw_taps1_f64w, (void *)dw_tapsv_f64, (void *)dw_dots_f64, (void *)dw_phase_plane_f64,
     (void *)dw_copy_rows_f64, (void *)dw_unphase_row_f64, (void *)dw_dir_f64,
     (void *)dw_ddots_f64}};

/* ---- the work of one band ---- */
typedef struct dw_ctx {
  opf_case *c;
  dw_geom g;
  const dw_kern *k;
  const char *xend;              /* end of x's data (a short row's vector load stays before it) */
  int64_t tph[1024], toff[1024]; /* each tap's phase plane and flattened offset */
  char *tab;   /* NHWC weights [m][t][c] and bias [m][c] */
  char *slots;
  size_t slot;
  int bwd;
  int direct; /* the direct NHWC path (dw_direct_ok) */
  int stage;  /* direct: 0 forward rows, 1 dx rows, 2 dw / db rows */
} dw_ctx;

typedef struct dw_slot {
  char *plane[16]; /* phase planes (s*s <= 16 is checked) */
  char *ybuf, *gbuf;
  char *dwp, *dbp; /* partial dw [o][t] (NCHW) or [m][t][c] (NHWC), db [o] or [m][c] */
} dw_slot;

static void dw_slot_of(const dw_ctx *x, int t, dw_slot *sl) {
  const dw_geom *g = &x->g;
  char *p = x->slots + (size_t)t * x->slot;
  size_t bb = dw_buf_bytes(g);
  for (int64_t f = 0; f < g->s * g->s; f++) sl->plane[f] = p + (size_t)f * bb;
  sl->ybuf = p + (size_t)(g->s * g->s) * bb;
  sl->gbuf = sl->ybuf + bb;
  sl->dwp = sl->gbuf + bb;
  sl->dbp = sl->dwp + (size_t)(g->M * g->KK * (g->nhwc ? g->u : g->C)) * g->es;
}

/* Phase planes of the band starting at output row oh0: local phase row r holds phase-plane
 * row oh0 + r. img: the (n, c) plane (NCHW) or image n (NHWC). */
static void dw_build(const dw_ctx *x, const dw_slot *sl, const char *img, int64_t oh0) {
  const dw_geom *g = &x->g;
  int64_t s = g->s, uc = g->nhwc ? g->C : 1, rowe = g->W * uc;
  int pair = s == 2 && g->u == 1; /* both column phases of a row in one pass */
  int64_t ldp = (int64_t)(dw_buf_bytes(g) / g->es);
  for (int64_t f = 0; f < s * s; f += pair ? 2 : 1)
    x->k->phase_plane(sl->plane[f], img, x->xend, rowe, oh0 * s + f / s - g->ph, g->Hb, g->H,
                      g->Wq, s, f % s - g->pw, g->W, g->u, uc, pair ? ldp : 0);
  /* the slack past the rows: read by the padded tail of the flattened loops, so zero */
  for (int64_t f = 0; f < s * s; f++)
    memset(sl->plane[f] + (size_t)(g->Hb * g->Wq * g->u) * g->es, 0,
           (size_t)((g->LB - g->Hb * g->Wq) * g->u) * g->es);
}

/* Tap sources for output m of the band: phase plane + offset (pixels -> elements). */
static void dw_srcs(const dw_ctx *x, const dw_slot *sl, const void **src) {
  const dw_geom *g = &x->g;
  for (int64_t t = 0; t < g->KK; t++)
    src[t] = sl->plane[x->tph[t]] + (size_t)(x->toff[t] * g->u) * g->es;
}

/* Forward of band b of plane / image `it`. */
static void dw_fwd_band(const dw_ctx *x, const dw_slot *sl, int64_t n, int64_t ch, int64_t b) {
  opf_case *c = x->c;
  const dw_geom *g = &x->g;
  size_t es = g->es;
  int64_t oh0 = b * g->band, oh1 = oh0 + g->band < g->OH ? oh0 + g->band : g->OH;
  int64_t J = dw_up((oh1 - oh0 - 1) * g->Wq + g->OW, 2 * g->ch);
  const char *img = (const char *)c->in[IN_X].data + (size_t)dw_img(g, n, ch) * es;
  dw_build(x, sl, img, oh0);
  const void *src[1024];
  dw_srcs(x, sl, src);
  const char *w = c->in[IN_W].data, *bias = c->present[IN_B] ? c->in[IN_B].data : NULL;
  int64_t rows = oh1 - oh0;
  for (int64_t m = 0; m < g->M; m++) {
    if (!g->nhwc) {
      int64_t o = ch * g->M + m;
      double bo = bias ? nn_ld(bias, c->dtype, o) : 0;
      const char *wo = w + (size_t)(o * g->KK) * es;
      char *y = (char *)c->out[0].data + (size_t)(((n * g->CM + o) * g->OH + oh0) * g->OW) * es;
      if (g->OW >= g->ch) { /* rows straight into y */
        x->k->taps1(y, g->OW, NULL, bo, src, g->Wq, wo, g->KK, g->OW, rows);
        continue;
      }
      /* short rows: the flat outputs as two halves (two rows for the kernel), copied out */
      x->k->taps1(sl->ybuf, J / 2, NULL, bo, src, J / 2, wo, g->KK, J / 2, 2);
      x->k->copy_rows(y, g->OW, sl->ybuf, g->Wq, g->OW, rows);
      continue;
    }
    const void *wt[1024];
    for (int64_t t = 0; t < g->KK; t++) wt[t] = x->tab + (size_t)((m * g->KK + t) * g->u) * es;
    const char *bt = x->tab + (size_t)((g->M * g->KK + m) * g->u) * es;
    char *y = (char *)c->out[0].data + (size_t)((n * g->OH + oh0) * g->OW * g->CM) * es;
    if (g->M == 1 && g->u == g->C && g->OW >= DW_PIX) { /* rows straight into y */
      x->k->tapsv(y, g->OW, NULL, bt, src, g->Wq, wt, g->KK, g->OW, rows, g->u);
      continue;
    }
    x->k->tapsv(sl->ybuf, 0, NULL, bt, src, 0, wt, g->KK, J, 1, g->u);
    for (int64_t oh = oh0; oh < oh1; oh++)
      for (int64_t ow = 0; ow < g->OW; ow++) {
        const char *sp = sl->ybuf + (size_t)(((oh - oh0) * g->Wq + ow) * g->u) * es;
        char *dp = y + (size_t)(((oh - oh0) * g->OW + ow) * g->CM + m) * es;
        if (g->M == 1) memcpy(dp, sp, (size_t)g->C * es);
        else if (es == 4)
          for (int64_t q = 0; q < g->C; q++) ((float *)dp)[q * g->M] = ((const float *)sp)[q];
        else for (int64_t q = 0; q < g->C; q++) ((double *)dp)[q * g->M] = ((const double *)sp)[q];
      }
  }
}

/* The gradient band of output m (NHWC) or plane o (NCHW): zeros, then output rows
 * [oh0 - ahmax, oh1), row oh at local row oh - oh0 + ahmax after awmax leading zero pixels
 * (so a tap's offset back from any pixel of the band stays inside). */
static void dw_grad_band(const dw_ctx *x, const dw_slot *sl, int64_t n, int64_t o, int64_t m,
                         int64_t oh0, int64_t oh1) {
  opf_case *c = x->c;
  const dw_geom *g = &x->g;
  size_t es = g->es;
  int64_t u = g->u, lead = g->offmax;
  memset(sl->gbuf, 0, dw_buf_bytes(g));
  for (int64_t oh = oh0 - g->ahmax > 0 ? oh0 - g->ahmax : 0; oh < oh1; oh++) {
    char *dst = sl->gbuf + (size_t)((lead + (oh - oh0) * g->Wq) * u) * es;
    if (!g->nhwc) {
      memcpy(dst,
             (const char *)c->gout[0].data + (size_t)(((n * g->CM + o) * g->OH + oh) * g->OW) * es,
             (size_t)g->OW * es);
      continue;
    }
    const char *gr =
        (const char *)c->gout[0].data + (size_t)((n * g->OH + oh) * g->OW * g->CM + m) * es;
    if (g->M == 1) {
      for (int64_t ow = 0; ow < g->OW; ow++)
        memcpy(dst + (size_t)(ow * u) * es, gr + (size_t)(ow * g->CM) * es, (size_t)g->C * es);
    } else if (es == 4) {
      for (int64_t ow = 0; ow < g->OW; ow++)
        for (int64_t q = 0; q < g->C; q++)
          ((float *)dst)[ow * u + q] = ((const float *)gr)[ow * g->CM + q * g->M];
    } else {
      for (int64_t ow = 0; ow < g->OW; ow++)
        for (int64_t q = 0; q < g->C; q++)
          ((double *)dst)[ow * u + q] = ((const double *)gr)[ow * g->CM + q * g->M];
    }
  }
}

/* Backward of band b: dw and db partials over output rows [oh0, oh1), then dx over the phase
 * rows [oh0, q1) (q1 = Hq for the last band), accumulated over the multiplier's outputs in
 * the phase planes (free once dw is done) and written back to its input rows. */
static void dw_bwd_band(const dw_ctx *x, const dw_slot *sl, int64_t n, int64_t ch, int64_t b) {
  opf_case *c = x->c;
  const dw_geom *g = &x->g;
  size_t es = g->es;
  int64_t oh0 = b * g->band, oh1 = oh0 + g->band < g->OH ? oh0 + g->band : g->OH;
  int64_t q1 = b == g->nb - 1 ? g->Hq : oh1, uc = g->nhwc ? g->C : 1, u = g->u;
  int64_t J = dw_up((oh1 - oh0 - 1) * g->Wq + g->OW, 2 * g->ch),
          L = dw_up((q1 - oh0) * g->Wq, 2 * g->ch);
  int wgrad = c->gin[IN_W].data != NULL, bgrad = c->present[IN_B] && c->gin[IN_B].data;
  char *dx = c->gin[IN_X].data;
  const char *gb = sl->gbuf + (size_t)(g->offmax * u) * es; /* pixel (oh0, 0) */
  const char *w = c->in[IN_W].data;
  const void *src[1024], *wt[1024];
  int64_t built = -1; /* the output whose gradient band is in gbuf */
  if (wgrad || bgrad) {
    if (wgrad) {
      const char *img = (const char *)c->in[IN_X].data + (size_t)dw_img(g, n, ch) * es;
      dw_build(x, sl, img, oh0);
      dw_srcs(x, sl, src);
    }
    for (int64_t m = 0; m < g->M; m++) {
      int64_t o = ch * g->M + m, at = g->nhwc ? m * u : o; /* partials of this output */
      dw_grad_band(x, sl, n, o, m, oh0, oh1);
      built = m;
      x->k->dots(wgrad ? sl->dwp + (size_t)(at * g->KK) * es : NULL, g->nhwc ? u : 1,
                 bgrad ? sl->dbp + (size_t)at * es : NULL, gb, src, wgrad ? g->KK : 0, J, u);
    }
  }
  if (!dx) return;
  for (int64_t m = 0; m < g->M; m++) {
    int64_t o = ch * g->M + m;
    if (built != m) dw_grad_band(x, sl, n, o, m, oh0, oh1);
    built = -1;
    /* phase f: dP_f (+)= sum over the taps t of phase f of w_t * gradient shifted back by t */
    for (int64_t f = 0; f < g->s * g->s; f++) {
      int64_t nt = 0;
      double wb[1024];
      for (int64_t t = 0; t < g->KK; t++) {
        if (x->tph[t] != f) continue;
        src[nt] = gb - (size_t)(x->toff[t] * u) * es;
        if (g->nhwc) wt[nt] = x->tab + (size_t)((m * g->KK + t) * u) * es;
        else nn_st(wb, c->dtype, nt, nn_ld(w, c->dtype, o * g->KK + t));
        nt++;
      }
      if (!nt && m) continue;
      char *dp = sl->plane[f];
      if (!g->nhwc) x->k->taps1(dp, L / 2, m ? dp : NULL, 0, src, L / 2, wb, nt, L / 2, 2);
      else
        x->k->tapsv(dp, 0, m ? dp : NULL, x->tab + (size_t)(g->M * (g->KK + 1) * u) * es, src, 0,
                    wt, nt, L, 1, u);
    }
  }
  /* dx rows of phase rows [oh0, q1): input row ih = hq * s + fr - ph */
  int64_t s = g->s;
  char *dimg = dx + (size_t)dw_img(g, n, ch) * es;
  int64_t ia = oh0 * s - g->ph, ib = q1 * s - g->ph;
  ia = ia < 0 ? 0 : ia, ib = ib > g->H ? g->H : ib;
  for (int64_t ih = ia; ih < ib; ih++) {
    int64_t hq = (ih + g->ph) / s, fr = (ih + g->ph) % s;
    const void *sp[4];
    for (int64_t fc = 0; fc < s; fc++)
      sp[fc] = sl->plane[fr * s + fc] + (size_t)((hq - oh0) * g->Wq * u) * es;
    x->k->unphase_row(dimg + (size_t)(ih * g->W * uc) * es, sp, g->W, s, g->pw, u, uc);
  }
}

/* ---- the direct NHWC path: rows of pixels, taps read in place ---- */
/* Multiplier 1 and at least one vector of channels (the planes' channel padding and
 * multiplier interleave are the phase path's). */
static int dw_direct_ok(const dw_geom *g) {
  return g->nhwc && g->M == 1 && g->C >= DW_V / (int64_t)g->es;
}

/* A tap of one row: source pixel j at element off + j*step of its image; valid for pixels
 * [jlo, jhi); t indexes the weight table and the dw partials. */
typedef struct dw_tap {
  int64_t off, jlo, jhi, t;
} dw_tap;

/* Taps of output row oh reading x (forward and dw), pixel step s: only those valid
 * somewhere in the row. */
static int64_t dw_xtaps(const dw_geom *g, int64_t oh, dw_tap *tp) {
  int64_t nt = 0;
  for (int64_t kh = 0; kh < g->KH; kh++) {
    int64_t ih = oh * g->s - g->ph + kh * g->dh;
    if (ih < 0 || ih >= g->H) continue;
    for (int64_t kw = 0; kw < g->KW; kw++) {
      int64_t c0 = kw * g->dw - g->pw; /* input column of pixel 0 */
      int64_t jlo = c0 >= 0 ? 0 : (-c0 + g->s - 1) / g->s;
      int64_t jhi = c0 >= g->W ? 0 : (g->W - 1 - c0) / g->s + 1;
      jhi = jhi < g->OW ? jhi : g->OW;
      if (jlo >= jhi) continue;
      tp[nt++] = (dw_tap){(ih * g->W + c0) * g->C, jlo, jhi, kh * g->KW + kw};
    }
  }
  return nt;
}

/* Taps of input row ih, columns iw = r + j*s (the data gradient: the transposed
 * convolution), reading the output gradient with pixel step 1; nj pixels. */
static int64_t dw_gtaps(const dw_geom *g, int64_t ih, int64_t r, int64_t nj, dw_tap *tp) {
  int64_t nt = 0, s = g->s;
  for (int64_t kh = 0; kh < g->KH; kh++) {
    int64_t num = ih + g->ph - kh * g->dh;
    if (num < 0 || num % s || num / s >= g->OH) continue;
    for (int64_t kw = g->KW - 1; kw >= 0; kw--) { /* sources ascending */
      int64_t nc = r + g->pw - kw * g->dw;
      if ((nc % s + s) % s) continue;
      int64_t ow0 = nc / s; /* exact: the output column of pixel 0 */
      int64_t jlo = ow0 < 0 ? -ow0 : 0, jhi = g->OW - ow0 < nj ? g->OW - ow0 : nj;
      if (jlo >= jhi) continue;
      tp[nt++] = (dw_tap){(num / s * g->OW + ow0) * g->C, jlo, jhi, kh * g->KW + kw};
    }
  }
  return nt;
}

/* Pixels [a, b) where every tap is valid (a = b = np when none is). */
static void dw_span(const dw_tap *tp, int64_t nt, int64_t np, int64_t *a, int64_t *b) {
  *a = 0, *b = np;
  for (int64_t k = 0; k < nt; k++) {
    *a = tp[k].jlo > *a ? tp[k].jlo : *a;
    *b = tp[k].jhi < *b ? tp[k].jhi : *b;
  }
  if (*a >= *b) *a = *b = np;
}

/* Pixels of a row outside the span, one at a time with the taps valid there: the next one
 * from *j (returns 0 past np), its tap count in *n and sources in src (and idx: the taps). */
static int dw_edge(const dw_tap *tp, int64_t nt, int64_t np, int64_t a, int64_t b, int64_t *j,
                   int64_t *n, int64_t *idx) {
  if (*j == a && b > a) *j = b;
  if (*j >= np) return 0;
  *n = 0;
  for (int64_t k = 0; k < nt; k++)
    if (*j >= tp[k].jlo && *j < tp[k].jhi) idx[(*n)++] = k;
  return 1;
}

/* One row through the dir kernel: pixels j < np of y (pixel step ys elements) = init +
 * taps of base (pixel step ss); [pf, pf + pfn) prefetched meanwhile. */
static void dw_row_dir(const dw_ctx *x, char *y, int64_t ys, const char *init, const char *base,
                       const dw_tap *tp, int64_t nt, int64_t ss, int64_t np, const char *pf,
                       int64_t pfn) {
  const dw_geom *g = &x->g;
  size_t es = g->es;
  const void *src[1024], *wt[1024];
  int64_t idx[1024], a, b, n;
  dw_span(tp, nt, np, &a, &b);
  if (a < b) {
    for (int64_t k = 0; k < nt; k++) {
      src[k] = base + (size_t)(tp[k].off + a * ss) * es;
      wt[k] = x->tab + (size_t)(tp[k].t * g->u) * es;
    }
    x->k->dir(y + (size_t)(a * ys) * es, ys, init, src, ss, wt, nt, b - a, g->C, pf, pfn);
  }
  for (int64_t j = 0; dw_edge(tp, nt, np, a, b, &j, &n, idx); j++) {
    for (int64_t i = 0; i < n; i++) {
      src[i] = base + (size_t)(tp[idx[i]].off + j * ss) * es;
      wt[i] = x->tab + (size_t)(tp[idx[i]].t * g->u) * es;
    }
    x->k->dir(y + (size_t)(j * ys) * es, ys, init, src, ss, wt, n, 1, g->C, NULL, 0);
  }
}

/* One row's dw / db partials: gradient row gr (pixel step C) against the taps of base; the
 * ranges pf[2] / pfn[2] prefetched meanwhile. */
static void dw_row_dots(const dw_ctx *x, const dw_slot *sl, int wgrad, int bgrad, const char *gr,
                        const char *base, const dw_tap *tp, int64_t nt, int64_t ss, int64_t np,
                        const char *const *pf, const int64_t *pfn) {
  const dw_geom *g = &x->g;
  size_t es = g->es;
  const void *src[1024];
  void *out[1024];
  int64_t idx[1024], a, b, n, C = g->C;
  if (!wgrad) nt = 0;
  dw_span(tp, nt, np, &a, &b);
  void *db = bgrad ? sl->dbp : NULL;
  if (a < b) {
    for (int64_t k = 0; k < nt; k++) {
      src[k] = base + (size_t)(tp[k].off + a * ss) * es;
      out[k] = sl->dwp + (size_t)(tp[k].t * g->u) * es;
    }
    x->k->ddots(out, db, gr + (size_t)(a * C) * es, C, src, ss, nt, b - a, C, pf, pfn);
  }
  for (int64_t j = 0; dw_edge(tp, nt, np, a, b, &j, &n, idx); j++) {
    for (int64_t i = 0; i < n; i++) {
      src[i] = base + (size_t)(tp[idx[i]].off + j * ss) * es;
      out[i] = sl->dwp + (size_t)(tp[idx[i]].t * g->u) * es;
    }
    x->k->ddots(out, db, gr + (size_t)(j * C) * es, C, src, ss, n, 1, C, NULL, NULL);
  }
}

/* Last input row an item's row reads (-1 for none): x rows for output row i (forward, dw),
 * gradient rows for input row i (dx). */
static int64_t dw_last_row(const dw_geom *g, int stage, int64_t i) {
  int64_t r = stage == 1 ? (i + g->ph) / g->s : i * g->s - g->ph + (g->KH - 1) * g->dh;
  int64_t top = stage == 1 ? g->OH - 1 : g->H - 1;
  return r < top ? r : top;
}

/* The rows item it + 1 reads first (none read by item it), to prefetch during item it:
 * their bytes, from *pf (x or the gradient). */
static int64_t dw_next_rows(const dw_ctx *x, int64_t it, int64_t items, const char **pf) {
  const dw_geom *g = &x->g;
  if (it + 1 >= items) return 0;
  int st = x->stage;
  int64_t per = st == 1 ? g->H : g->OH, hin = st == 1 ? g->OH : g->H, win = st == 1 ? g->OW : g->W;
  int64_t n = it / per, n1 = (it + 1) / per;
  int64_t lo = n1 == n ? dw_last_row(g, st, it % per) + 1 : 0;
  int64_t hi = dw_last_row(g, st, (it + 1) % per);
  if (lo < 0) lo = 0;
  if (hi < lo) return 0;
  const char *base = st == 1 ? x->c->gout[0].data : x->c->in[IN_X].data;
  *pf = base + (size_t)((n1 * hin + lo) * win * g->C) * g->es;
  return (hi - lo + 1) * win * g->C * (int64_t)g->es;
}

/* Rows [lo, hi) of the current stage: forward and dw rows are (n, oh), dx rows (n, ih). */
static void dw_ditems(void *p, int64_t lo, int64_t hi, int t) {
  const dw_ctx *x = p;
  const dw_geom *g = &x->g;
  opf_case *c = x->c;
  size_t es = g->es;
  int64_t C = g->C, s = g->s;
  dw_slot sl;
  dw_slot_of(x, t, &sl);
  dw_tap tp[1024];
  const char *xd = c->in[IN_X].data, *gd = c->gout[0].data;
  int64_t items = x->stage == 1 ? g->N * g->H : g->N * g->OH;
  for (int64_t it = lo; it < hi; it++) {
    const char *pf = NULL;
    int64_t pfn = dw_next_rows(x, it, items, &pf);
    if (x->stage == 1) { /* dx row: s column classes */
      int64_t n = it / g->H, ih = it % g->H;
      char *dx = (char *)c->gin[IN_X].data + (size_t)((n * g->H + ih) * g->W * C) * es;
      const char *gi = gd + (size_t)(n * g->OH * g->OW * C) * es;
      for (int64_t r = 0; r < s && r < g->W; r++) {
        int64_t nj = (g->W - r + s - 1) / s, nt = dw_gtaps(g, ih, r, nj, tp);
        dw_row_dir(x, dx + (size_t)(r * C) * es, s * C, NULL, gi, tp, nt, C, nj, r ? NULL : pf,
                   pfn);
      }
      continue;
    }
    int64_t n = it / g->OH, oh = it % g->OH, nt = dw_xtaps(g, oh, tp);
    const char *xi = xd + (size_t)(n * g->H * g->W * C) * es;
    size_t row = (size_t)((n * g->OH + oh) * g->OW * C) * es;
    if (x->stage == 0) {
      const char *bt = x->tab + (size_t)(g->KK * g->u) * es; /* bias or zeros */
      dw_row_dir(x, (char *)c->out[0].data + row, C, bt, xi, tp, nt, s * C, g->OW, pf, pfn);
    } else {
      /* the next x rows and the next gradient row */
      const char *pfs[2] = {pf, it + 1 < items ? gd + row + (size_t)(g->OW * C) * es : NULL};
      int64_t pfns[2] = {pfn, g->OW * C * (int64_t)es};
      dw_row_dots(x, &sl, c->gin[IN_W].data != NULL, c->present[IN_B] && c->gin[IN_B].data,
                  gd + row, xi, tp, nt, s * C, g->OW, pfs, pfns);
    }
  }
}

/* ---- items, infer, passes ---- */
static void dw_items(void *p, int64_t lo, int64_t hi, int t) {
  const dw_ctx *x = p;
  const dw_geom *g = &x->g;
  dw_slot sl;
  dw_slot_of(x, t, &sl);
  int64_t planes = g->nhwc ? 1 : g->C;
  for (int64_t it = lo; it < hi; it++) {
    int64_t b = it % g->nb, ch = it / g->nb % planes, n = it / g->nb / planes;
    if (x->bwd) dw_bwd_band(x, &sl, n, ch, b);
    else dw_fwd_band(x, &sl, n, ch, b);
  }
}

static int dw_infer(opf_case *c) {
  int nhwc = (int)c->p[P_LAYOUT] == RS_NHWC;
  rs_image m = {0};
  int rc = rs_check_image(c, IN_X, nhwc, "depthwise_conv2d", &m);
  if (rc) return rc;
  opf_tensor *w = &c->in[IN_W], *b = &c->in[IN_B];
  int64_t M = (int64_t)c->p[P_MULT], CM = m.C * M;
  char s1[96], s2[96];
  opf_shape_str(&c->in[IN_X], s1, sizeof s1);
  if (w->ndim < 0) {
    int64_t k = (int64_t)c->p[P_KERNEL];
    int64_t shape[4] = {CM, 1, c->p[P_KH] > 0 ? (int64_t)c->p[P_KH] : k,
                        c->p[P_KW] > 0 ? (int64_t)c->p[P_KW] : k};
    opf_tensor_set_shape(w, c->dtype, 4, shape);
  } else if (w->ndim != 4 || w->shape[1] != 1 || w->shape[2] <= 0 || w->shape[3] <= 0) {
    return opf_case_error(c, OPF_EINVAL, "weight 'w' must be (C*multiplier, 1, "
                          "kh, kw), got %s", opf_shape_str(w, s2, sizeof s2));
  } else if (w->shape[0] != CM) {
    return opf_case_error(c, OPF_EINVAL, "weight 'w' %s has %lld filters, but x "
                          "%s (%s) has C=%lld channels and multiplier=%lld: needs %lld",
                          opf_shape_str(w, s2, sizeof s2), (long long)w->shape[0], s1,
                          nhwc ? "NHWC" : "NCHW", (long long)m.C, (long long)M, (long long)CM);
  }
  if (c->present[IN_B]) {
    if (b->ndim < 0) opf_tensor_set_shape(b, c->dtype, 1, &CM);
    else if (b->ndim != 1 || b->shape[0] != CM)
      return opf_case_error(c, OPF_EINVAL,
                            "bias 'b' %s must have shape (%lld), "
                            "one per output channel",
                            opf_shape_str(b, s2, sizeof s2), (long long)CM);
  }
  nn_geom ng = {.N = m.N, .C = m.C, .H = m.H, .W = m.W, .KH = w->shape[2], .KW = w->shape[3]};
  ng.sh = ng.sw = (int64_t)c->p[P_STRIDE];
  ng.ph = ng.pw = (int64_t)c->p[P_PAD];
  ng.dh = ng.dw = (int64_t)c->p[P_DIL];
  if ((rc = nn_check_window(c, "depthwise_conv2d", &ng))) return rc;
  if (ng.KH * ng.KW > 1024 || ng.sh > 4)
    return opf_case_error(c, OPF_EINVAL, "kernel %lldx%lld with stride %lld: at "
                          "most 1024 taps and stride 4", (long long)ng.KH, (long long)ng.KW,
                          (long long)ng.sh);
  rs_image o = m;
  o.C = CM, o.H = ng.OH, o.W = ng.OW;
  int64_t shape[4];
  rs_shape(&o, shape);
  opf_set_out(c, 0, c->dtype, 4, shape);
  dw_geom g;
  dw_geom_of(c, &g);
  c->ws_bytes = dw_table_bytes(&g) + (size_t)omp_get_max_threads() * dw_slot_bytes(&g);
  return OPF_OK;
}

/* Context of a call; NHWC weights and bias tables rebuilt from w and b (channels padded). */
static void dw_setup(opf_case *c, dw_ctx *x, int bwd) {
  memset(x, 0, sizeof *x);
  x->c = c;
  dw_geom_of(c, &x->g);
  const dw_geom *g = &x->g;
  x->k = &dw_kerns[c->dtype];
  x->bwd = bwd;
  x->tab = c->ws;
  x->slots = (char *)c->ws + dw_table_bytes(g);
  x->slot = dw_slot_bytes(g);
  x->xend = (const char *)c->in[IN_X].data + c->in[IN_X].nbytes;
  for (int64_t t = 0; t < g->KK; t++) x->tph[t] = dw_phase(g, t), x->toff[t] = dw_off(g, t);
  if (!g->nhwc) return;
  memset(x->tab, 0, dw_table_bytes(g));
  for (int64_t m = 0; m < g->M; m++)
    for (int64_t q = 0; q < g->C; q++) {
      int64_t o = q * g->M + m;
      for (int64_t t = 0; t < g->KK; t++)
        nn_st(x->tab, c->dtype, (m * g->KK + t) * g->u + q,
              nn_ld(c->in[IN_W].data, c->dtype, o * g->KK + t));
      if (c->present[IN_B])
        nn_st(x->tab, c->dtype, (g->M * g->KK + m) * g->u + q,
              nn_ld(c->in[IN_B].data, c->dtype, o));
    }
}

/* One pass; phase: the phase-plane path even where the direct one applies. */
static void dw_run(opf_case *c, int bwd, int phase) {
  dw_ctx x;
  dw_setup(c, &x, bwd);
  x.direct = !phase && dw_direct_ok(&x.g);
  const dw_geom *g = &x.g;
  int cap = (int)((c->ws_bytes - dw_table_bytes(g)) / x.slot);
  int64_t items = g->N * (g->nhwc ? 1 : g->C) * g->nb;
  double work = (double)g->N * (double)g->CM * (double)(g->OH * g->OW) * (double)g->KK;
  size_t part = (size_t)dw_part_elems(g) * g->es;
  if (bwd) /* every slot's dw / db partials start at zero; unused slots add nothing */
    for (int k = 0; k < cap; k++) {
      dw_slot sl;
      dw_slot_of(&x, k, &sl);
      memset(sl.dwp, 0, part);
    }
  if (!x.direct) {
    rs_run_items(items, work, cap, dw_items, &x);
  } else if (!bwd) {
    rs_run_items(g->N * g->OH, work, cap, dw_ditems, &x);
  } else {
    if (c->gin[IN_X].data) x.stage = 1, rs_run_items(g->N * g->H, work, cap, dw_ditems, &x);
    if (c->gin[IN_W].data || (c->present[IN_B] && c->gin[IN_B].data))
      x.stage = 2, rs_run_items(g->N * g->OH, work, cap, dw_ditems, &x);
  }
  if (!bwd) return;
  void *dw = c->gin[IN_W].data, *db = c->present[IN_B] ? c->gin[IN_B].data : NULL;
  if (dw) memset(dw, 0, (size_t)(g->CM * g->KK) * g->es);
  if (db) memset(db, 0, (size_t)g->CM * g->es);
  for (int k = 0; k < cap; k++) {
    dw_slot sl;
    dw_slot_of(&x, k, &sl);
    for (int64_t o = 0; o < g->CM; o++) {
      int64_t q = o / g->M, m = o % g->M; /* NHWC partials are [m][t][c] and [m][c] */
      for (int64_t t = 0; dw && t < g->KK; t++) {
        int64_t at = g->nhwc ? (m * g->KK + t) * g->u + q : o * g->KK + t;
        nn_st(dw, c->dtype, o * g->KK + t,
              nn_ld(dw, c->dtype, o * g->KK + t) + nn_ld(sl.dwp, c->dtype, at));
      }
      if (db) {
        int64_t at = g->nhwc ? m * g->u + q : o;
        nn_st(db, c->dtype, o, nn_ld(db, c->dtype, o) + nn_ld(sl.dbp, c->dtype, at));
      }
    }
  }
}

static int dw_forward(opf_case *c) {
  dw_run(c, 0, 0);
  return OPF_OK;
}

static int dw_backward(opf_case *c) {
  dw_run(c, 1, 0);
  return OPF_OK;
}

static int dw_forward_phase(opf_case *c) {
  dw_run(c, 0, 1);
  return OPF_OK;
}

static int dw_backward_phase(opf_case *c) {
  dw_run(c, 1, 1);
  return OPF_OK;
}

/* Reference: the definition, one output element at a time. */
static int dw_reference(opf_case *c) {
  dw_geom g;
  dw_geom_of(c, &g);
  opf_dtype dt = c->dtype;
  rs_image xi = {g.N, g.C, g.H, g.W, g.nhwc}, yi = {g.N, g.CM, g.OH, g.OW, g.nhwc};
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t o = 0; o < g.CM; o++)
      for (int64_t oh = 0; oh < g.OH; oh++)
        for (int64_t ow = 0; ow < g.OW; ow++) {
          double acc = c->present[IN_B] ? nn_ld(c->in[IN_B].data, dt, o) : 0;
          for (int64_t kh = 0; kh < g.KH; kh++)
            for (int64_t kw = 0; kw < g.KW; kw++) {
              int64_t ih = oh * g.s - g.ph + kh * g.dh, iw = ow * g.s - g.pw + kw * g.dw;
              if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
              acc += nn_ld(c->in[IN_X].data, dt, rs_at(&xi, n, o / g.M, ih, iw)) *
                     nn_ld(c->in[IN_W].data, dt, (o * g.KH + kh) * g.KW + kw);
            }
          nn_st(c->out[0].data, dt, rs_at(&yi, n, o, oh, ow), acc);
        }
  return OPF_OK;
}

/* Work: 2 flops per tap of every output (+1 with a bias) forward; backward the same twice
 * (dx and dw), plus one add per output for db. Bytes: fwd reads x, w, b and writes y; bwd
 * reads g, x and w and writes dx, dw and db. */
static double dw_flops(const opf_case *c, opf_pass p) {
  dw_geom g;
  dw_geom_of(c, &g);
  double outs = (double)g.N * (double)g.CM * (double)(g.OH * g.OW), mm = 2 * outs * (double)g.KK;
  double bias = c->present[IN_B] ? outs : 0;
  return opf_pass_sum(p, mm + bias, 2 * mm + bias);
}

static double dw_bytes(const opf_case *c, opf_pass p) {
  double e = (double)opf_dtype_size(c->dtype);
  double x = (double)opf_numel(&c->in[IN_X]), w = (double)opf_numel(&c->in[IN_W]);
  double b = c->present[IN_B] ? (double)opf_numel(&c->in[IN_B]) : 0,
         y = (double)opf_numel(&c->out[0]);
  return opf_pass_sum(p, (x + w + b + y) * e, (y + x + w + x + w + b) * e);
}

OPPERF_OP(depthwise_conv2d) = {
    .abi = OPF_OP_ABI,
    .name = "depthwise_conv2d",
    .category = "nn.conv",
    .summary = "depthwise 2-D convolution (groups = channels, channel multiplier), NCHW or NHWC",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {{.name = "x",
            .dtype = OPF_DT_CASE,
            .flags = OPF_IN_DIFF,
            .lo = -1,
            .hi = 1,
            .help = "input (N, C, H, W), or (N, H, W, C) with layout=NHWC"},
           {.name = "w",
            .dtype = OPF_DT_CASE,
            .flags = OPF_IN_DIFF,
            .lo = -0.5,
            .hi = 0.5,
            .help = "filters (C*multiplier, 1, KH, KW): output channel c*multiplier + m reads "
                    "input channel c; derived from kernel/kh/kw when omitted"},
           {.name = "b",
            .dtype = OPF_DT_CASE,
            .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL,
            .lo = -1,
            .hi = 1,
            .help = "bias (C*multiplier); b=none drops it"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 8,
    .params = {{"multiplier", OPF_P_INT, 1, 1, 1 << 16, NULL, "output channels per input channel"},
               {"kernel", OPF_P_INT, 3, 1, 1 << 10, NULL, "square kernel size (when w is omitted)"},
               {"kh", OPF_P_INT, 0, 0, 1 << 10, NULL,
                "kernel height, 0 = kernel (when w is omitted)"},
               {"kw", OPF_P_INT, 0, 0, 1 << 10, NULL,
                "kernel width, 0 = kernel (when w is omitted)"},
               {"stride", OPF_P_INT, 1, 1, 1 << 16, NULL, "stride in both dimensions (at most 4)"},
               {"pad", OPF_P_INT, 0, 0, 1 << 16, NULL, "zero padding on each side"},
               {"dilation", OPF_P_INT, 1, 1, 1 << 16, NULL, "spacing between kernel taps"},
               {"layout", OPF_P_ENUM, RS_NCHW, 0, 0, RS_LAYOUTS,
                "NCHW (N, C, H, W) or NHWC (N, H, W, C)"}},
    .shapes = {{"standard", "x=32x32x112x112 kernel=3 pad=1"},
               {"standard", "x=32x512x14x14 kernel=3 pad=1"},
               {"standard", "x=32x112x112x32 kernel=3 pad=1 layout=NHWC"},
               {"standard", "x=32x14x14x512 kernel=3 pad=1 layout=NHWC"},
               {"skewed", "x=1x32x512x512 kernel=3 stride=2 pad=1"},
               {"skewed", "x=1x512x512x32 kernel=3 stride=2 pad=1 layout=NHWC"},
               {"skewed", "x=32x64x112x112 kernel=3 stride=2 pad=1"},
               {"skewed", "x=32x144x56x56 kernel=5 pad=2"},
               {"skewed", "x=32x32x56x56 kernel=3 pad=2 dilation=2 multiplier=2"},
               {"small", "x=2x3x5x5 kernel=3"},
               {"small", "x=2x3x5x5 kernel=3 pad=1 b=none"},
               {"small", "x=1x2x7x6 kernel=3 stride=2 pad=1"},
               {"small", "x=1x2x7x7 kernel=3 pad=2 dilation=2 multiplier=2"},
               {"small", "x=1x3x6x5 kh=2 kw=3 pad=1 multiplier=3"},
               {"small", "x=2x4x4x3 kernel=3 pad=1 layout=NHWC"},
               {"small", "x=1x7x6x3 kernel=3 stride=2 pad=1 multiplier=2 layout=NHWC"},
               {"small", "x=1x5x5x17 kernel=3 pad=1 b=none layout=NHWC"},
               {"small", "x=1x5x9x16 kernel=3 pad=1 layout=NHWC"},
               {"small", "x=1x7x9x10 kernel=3 stride=2 pad=1 layout=NHWC"},
               {"small", "x=1x1x9x8 kernel=1 stride=3"},
               {"small", "x=1x2x8x9 kernel=5 stride=3 pad=2 dilation=1"},
               {"test", "x=3x7x37x41 kernel=3 pad=1"},
               {"test", "x=2x5x61x67 kernel=3 stride=2 pad=1 multiplier=2"},
               {"test", "x=2x33x29x19 kernel=3 pad=1 layout=NHWC"},
               {"test", "x=1x45x38x21 kernel=5 stride=2 pad=2 dilation=2 layout=NHWC"},
               {"test", "x=1x3x300x257 kernel=3 pad=1"},
               {"test", "x=1x150x40x24 kernel=3 stride=2 pad=1 layout=NHWC"},
               {"large", "x=64x64x112x112 kernel=3 pad=1"}},
    .infer = dw_infer,
    .forward = dw_forward,
    .backward = dw_backward,
    .reference = dw_reference,
    .flops = dw_flops,
    .bytes = dw_bytes,
};

/* The phase-plane algorithm everywhere (the default's only one before the direct NHWC path). */
OPPERF_IMPL(depthwise_conv2d_phase) = {.abi = OPF_OP_ABI,
                                       .name = "phase",
                                       .implements = "depthwise_conv2d",
                                       .summary = "zero-padded phase planes per band of rows, "
                                                  "NCHW and NHWC (the default's NCHW path)",
                                       .forward = dw_forward_phase,
                                       .backward = dw_backward_phase};

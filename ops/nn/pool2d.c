/* pool2d.c: 2-D max and average pooling, NCHW, square window with stride and padding;
 * threaded over the N*C planes, vectorised in register chunks of outputs along a row (narrow
 * planes such as 10000x10 are transposed first). Max pooling saves each window's argmax for
 * its backward scatter; average backward gathers g / count per input row. */
#include <math.h>
#include <string.h>

#include "conv_common.h"

enum { P_KERNEL, P_STRIDE, P_PAD, P_COUNT_PAD };

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Resolve the window of a case (stride 0 means stride = kernel). */
static void pool_geom(const opf_case *c, nn_geom *g) {
  const opf_tensor *x = &c->in[0];
  g->N = x->shape[0], g->C = x->shape[1], g->H = x->shape[2], g->W = x->shape[3];
  g->KH = g->KW = (int64_t)c->p[P_KERNEL];
  g->sh = g->sw = c->p[P_STRIDE] > 0 ? (int64_t)c->p[P_STRIDE] : g->KH;
  g->ph = g->pw = (int64_t)c->p[P_PAD];
  g->dh = g->dw = 1;
  g->OH = nn_out_len(g->H, g->KH, g->sh, g->ph, 1);
  g->OW = nn_out_len(g->W, g->KW, g->sw, g->pw, 1);
}

/* Clipped window extent [a, b) of output index o along an axis. */
static inline void pool_span(int64_t o, int64_t s, int64_t p, int64_t k, int64_t in, int64_t *a,
                             int64_t *b) {
  int64_t lo = o * s - p, hi = lo + k;
  *a = lo < 0 ? 0 : lo;
  *b = hi > in ? in : hi;
}

/* Outputs [*a, *b) along an axis whose whole window lies inside the input. */
static inline void pool_inner(int64_t in, int64_t out, int64_t s, int64_t p, int64_t k,
                              int64_t *a, int64_t *b) {
  int64_t l = (p + s - 1) / s, h = in - k + p < 0 ? 0 : (in - k + p) / s + 1;
  if (h > out) h = out;
  if (l > h) l = h;
  *a = l, *b = h;
}

/* A plane as the kernels see it: rows of length W (pitch W), outputs OH x OW, and the
 * argmax index of element (r, c) = r * imr + c * imc (imr = W, imc = 1 unless the plane is
 * a transposed copy). rs/cs: the average's scale factors per output row and column. */
typedef struct pool_plane {
  int64_t H, W, OH, OW, K, s, p, imr, imc;
  const void *rs, *cs;
} pool_plane;

/* ---- dtype kernels, one template for float and double ----
 * A chunk is one 64-byte vector of outputs (16 floats or 8 doubles), written with GCC vector
 * extensions: the auto-vectoriser unrolls a 16-lane inner loop and then gives up, leaving
 * the running max, argmax and sums in memory. vi_S holds the int32 argmax of a chunk and
 * vm_S the comparison masks; EVEN_S picks elements 0, 2, .. 2V-2 out of a load at 0 and one
 * at V-1 (stride 2). */
typedef float vf_f32 __attribute__((vector_size(64)));
typedef int32_t vm_f32 __attribute__((vector_size(64)));
typedef int32_t vi_f32 __attribute__((vector_size(64)));
typedef double vf_f64 __attribute__((vector_size(64)));
typedef int64_t vm_f64 __attribute__((vector_size(64)));
typedef int32_t vi_f64 __attribute__((vector_size(32)));
#define LANES_f32 16
#define LANES_f64 8
#define LANE_IDX_f32 {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
#define LANE_IDX_f64 {0, 1, 2, 3, 4, 5, 6, 7}
#define EVEN_f32 {0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31}
#define EVEN_f64 {0, 2, 4, 6, 9, 11, 13, 15}
#define MASK_IDX_f32(m) (m)
#define MASK_IDX_f64(m) __builtin_convertvector(m, vi_f64)

#define POOL_KERNELS(T, S)                                                                     \
  /* *v = lanes l of a chunk, xr[l*s + kw], for the (constant) stride s. Stride 2 takes the \
   * even elements of the 2V-1 it needs from two overlapping loads, never reading beyond. */  \
  ALWAYS_INLINE void pool_load_##S(vf_##S *v, const T *xr, int64_t s, int64_t kw) {           \
    if (s == 1) {                                                                             \
      memcpy(v, xr + kw, sizeof *v);                                                          \
    } else if (s == 2) {                                                                      \
      vf_##S v0, v1;                                                                          \
      memcpy(&v0, xr + kw, sizeof v0);                                                        \
      memcpy(&v1, xr + kw + LANES_##S - 1, sizeof v1);                                        \
      *v = __builtin_shuffle(v0, v1, (vm_##S)EVEN_##S);                                       \
    } else {                                                                                  \
      for (int l = 0; l < LANES_##S; l++) (*v)[l] = xr[l * s + kw];                           \
    }                                                                                         \
  }                                                                                           \
  /* Output row oh of a plane, max (ar != NULL) or average. The outputs whose windows lie  \
   * inside the row go in chunks, the last one shifted back to end with them (recomputing a \
   * few outputs is cheaper than a scalar tail); edge outputs take the clipped window. */     \
  ALWAYS_INLINE void pool_row_##S(const T *restrict xp, const pool_plane *q, int64_t oh,      \
                                  T *restrict yr, int32_t *restrict ar, int64_t s) {          \
    enum { V = LANES_##S };                                                                   \
    int64_t W = q->W, K = q->K, p = q->p, ha, hb, ia, ib;                                     \
    pool_span(oh, s, p, K, q->H, &ha, &hb);                                                   \
    pool_inner(W, q->OW, s, p, K, &ia, &ib);                                                  \
    const T *cs = q->cs;                                                                      \
    T rsc = ar ? 0 : ((const T *)q->rs)[oh];                                                  \
    const vi_##S lane = LANE_IDX_##S;                                                         \
    vi_##S loff = lane * (int32_t)(s * q->imc);                                               \
    int64_t done = ib - ia < V ? ia : ib; /* outputs below this are chunked */               \
    for (int64_t ow = ia; ow < done; ow += V) {                                               \
      if (ow + V > ib) ow = ib - V;                                                           \
      const T *xc = xp + ow * s - p;                                                          \
      vf_##S m = {0};                                                                         \
      vi_##S a = {0};                                                                         \
      if (ar) m -= (T)INFINITY, a += (int32_t)(ha * q->imr + (ow * s - p) * q->imc);          \
      for (int64_t ih = ha; ih < hb; ih++) {                                                  \
        const T *xr = xc + ih * W;                                                            \
        int32_t rb = (int32_t)(ih * q->imr + (ow * s - p) * q->imc);                          \
        for (int64_t kw = 0; kw < K; kw++) {                                                  \
          vf_##S v;                                                                           \
          pool_load_##S(&v, xr, s, kw);                                                       \
          if (ar) {                                                                           \
            vm_##S take = v > m;                                                              \
            vi_##S ti = MASK_IDX_##S(take);                                                   \
            m = (vf_##S)(((vm_##S)v & take) | ((vm_##S)m & ~take));                          \
            a = ((loff + (rb + (int32_t)(kw * q->imc))) & ti) | (a & ~ti);                    \
          } else {                                                                            \
            m += v;                                                                           \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
      if (ar) {                                                                               \
        memcpy(yr + ow, &m, sizeof m);                                                        \
        memcpy(ar + ow, &a, sizeof a);                                                        \
      } else {                                                                                \
        for (int l = 0; l < V; l++) yr[ow + l] = m[l] * (rsc * cs[ow + l]);                   \
      }                                                                                       \
    }                                                                                         \
    for (int64_t o = 0; o < q->OW; o++) { /* edges, and rows too short for a chunk */        \
      if (o == ia) o = done;                                                                  \
      if (o >= q->OW) break;                                                                  \
      int64_t wa, wb;                                                                         \
      pool_span(o, s, p, K, W, &wa, &wb);                                                     \
      T m = ar ? (T)-INFINITY : 0;                                                            \
      int64_t a = ha * q->imr + wa * q->imc;                                                  \
      for (int64_t ih = ha; ih < hb; ih++)                                                    \
        for (int64_t iw = wa; iw < wb; iw++) {                                                \
          T v = xp[ih * W + iw]; /* branch-free: random data mispredicts */                 \
          int take = v > m;                                                                   \
          a = ar && take ? ih * q->imr + iw * q->imc : a;                                     \
          m = !ar ? m + v : take ? v : m;                                                     \
        }                                                                                     \
      if (ar) yr[o] = m, ar[o] = (int32_t)a;                                                  \
      else yr[o] = m * (rsc * cs[o]);                                                         \
    }                                                                                         \
  }                                                                                           \
  ALWAYS_INLINE void pool_plane_body_##S(const T *x, T *y, int32_t *am, const pool_plane *q,  \
                                         int64_t s) {                                         \
    for (int64_t oh = 0; oh < q->OH; oh++)                                                    \
      pool_row_##S(x, q, oh, y + oh * q->OW, am ? am + oh * q->OW : NULL, s);                 \
  }                                                                                           \
  /* Forward of one plane; the stride is made a constant for 1 and 2 so the chunk loads are \
   * contiguous or de-interleaving vector loads rather than gathers. */                       \
  OPF_VEC static void pool_plane_##S(const T *x, T *y, int32_t *am, const pool_plane *q) {    \
    if (q->s == 1) pool_plane_body_##S(x, y, am, q, 1);                                       \
    else if (q->s == 2) pool_plane_body_##S(x, y, am, q, 2);                                  \
    else pool_plane_body_##S(x, y, am, q, q->s);                                              \
  }                                                                                           \
  /* Average backward of one plane, written as a gather so every store is contiguous: for  \
   * input row ih, t = sum of the scaled g rows whose windows cover it (t is zero-padded by  \
   * K on both sides); then dx[s*j + f] = sum over the taps kw of phase f of t[j + off] and  \
   * the s phases are interleaved into the row. */                                           \
  ALWAYS_INLINE void avg_bwd_body_##S(const T *restrict gy, T *restrict dx, T *restrict wk,   \
                                      const pool_plane *q, int64_t s) {                       \
    int64_t W = q->W, K = q->K, p = q->p, OW = q->OW, OH = q->OH;                             \
    int64_t nj = (W + s - 1) / s, pad = K + p + s + 2;                                        \
    const T *rs = q->rs, *cs = q->cs;                                                         \
    T *restrict t = wk + pad, *restrict ph = wk + 2 * pad + OW;                               \
    for (int64_t i = 0; i < pad; i++) t[-pad + i] = 0, t[OW + i] = 0;                         \
    for (int64_t ih = 0; ih < q->H; ih++) {                                                   \
      T *restrict dr = dx + ih * W;                                                           \
      int64_t oa = ih + p - K + 1, ob = (ih + p) / s + 1;                                     \
      oa = oa <= 0 ? 0 : (oa + s - 1) / s;                                                    \
      if (ob > OH) ob = OH;                                                                   \
      if (oa >= ob) {                                                                         \
        memset(dr, 0, (size_t)W * sizeof(T));                                                 \
        continue;                                                                             \
      }                                                                                       \
      for (int64_t ow = 0; ow < OW; ow++) t[ow] = gy[oa * OW + ow] * rs[oa];                  \
      for (int64_t oh = oa + 1; oh < ob; oh++)                                                \
        for (int64_t ow = 0; ow < OW; ow++) t[ow] += gy[oh * OW + ow] * rs[oh];               \
      for (int64_t ow = 0; ow < OW; ow++) t[ow] *= cs[ow];                                    \
      for (int64_t f = 0; f < s; f++) {                                                       \
        T *restrict d = s == 1 ? dr : ph + f * nj;                                            \
        int64_t n = s == 1 ? W : nj, first = 1;                                               \
        for (int64_t kw = 0; kw < K; kw++) {                                                  \
          int64_t r = f + p - kw;                                                             \
          if (r % s) continue;                                                                \
          const T *restrict src = t + r / s;                                                  \
          if (first)                                                                          \
            for (int64_t j = 0; j < n; j++) d[j] = src[j];                                    \
          else                                                                                \
            for (int64_t j = 0; j < n; j++) d[j] += src[j];                                   \
          first = 0;                                                                          \
        }                                                                                     \
        if (first)                                                                            \
          for (int64_t j = 0; j < n; j++) d[j] = 0;                                           \
      }                                                                                       \
      if (s == 1) continue;                                                                   \
      int64_t jw = W / s;                                                                     \
      for (int64_t j = 0; j < jw; j++)                                                        \
        for (int64_t f = 0; f < s; f++) dr[j * s + f] = ph[f * nj + j];                       \
      for (int64_t iw = jw * s; iw < W; iw++) dr[iw] = ph[(iw - jw * s) * nj + jw];           \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void avg_bwd_plane_##S(const T *gy, T *dx, T *wk, const pool_plane *q) {     \
    if (q->s == 1) avg_bwd_body_##S(gy, dx, wk, q, 1);                                        \
    else if (q->s == 2) avg_bwd_body_##S(gy, dx, wk, q, 2);                                   \
    else avg_bwd_body_##S(gy, dx, wk, q, q->s);                                               \
  }                                                                                           \
  /* Max backward of planes [p0, p1): route each g to its window's argmax. */                \
  static void max_bwd_##S(const T *restrict gy, T *restrict dx, const int32_t *restrict am,   \
                          int64_t HW, int64_t O, int64_t p0, int64_t p1) {                    \
    for (int64_t pl = p0; pl < p1; pl++) {                                                    \
      T *restrict dp = dx + pl * HW;                                                          \
      const T *restrict gp = gy + pl * O;                                                     \
      const int32_t *restrict ap = am + pl * O;                                               \
      memset(dp, 0, (size_t)HW * sizeof(T));                                                  \
      for (int64_t o = 0; o < O; o++) dp[ap[o]] += gp[o];                                     \
    }                                                                                         \
  }                                                                                           \
  /* Average scale along one axis: 1 / (real elements of the window), or 1 / K with        \
   * count_include_pad. */                                                                    \
  static void pool_scale_##S(T *sc, int64_t out, int64_t in, int64_t s, int64_t p, int64_t k,  \
                             int count_pad) {                                                 \
    for (int64_t o = 0; o < out; o++) {                                                       \
      int64_t a, b;                                                                           \
      pool_span(o, s, p, k, in, &a, &b);                                                      \
      sc[o] = (T)1 / (T)(count_pad ? k : b - a);                                              \
    }                                                                                         \
  }

/* dst (cols x rows) = src (rows x cols)^T, for the narrow planes: tall (cols < V) into wide
 * and back. V x V tiles are transposed in registers by log2(V) rounds of two-vector
 * shuffles, round b swapping the off-diagonal b x b blocks of every 2b x 2b block. Tall
 * tiles load V rows of V (reading a little past the last column, never past the array);
 * wide tiles load the few rows and store V lanes per output row in increasing order, each
 * store's excess overwritten by the next. Whatever the tiles leave is done elementwise. */
#define POOL_TRANSPOSE(T, S, VT, MT, V, LOGV)                                                  \
  /* Fully unrolled, so the tile stays in registers. */                                       \
  ALWAYS_INLINE void tile_##S(VT *r, const MT *mlo, const MT *mhi) {                          \
    _Pragma("GCC unroll 4") for (int k = 0; k < LOGV; k++) {                                  \
      int b = V >> (k + 1);                                                                   \
      _Pragma("GCC unroll 16") for (int i = 0; i < V; i++) if (!(i & b)) {                    \
        VT lo = __builtin_shuffle(r[i], r[i + b], mlo[k]);                                    \
        VT hi = __builtin_shuffle(r[i], r[i + b], mhi[k]);                                    \
        r[i] = lo, r[i + b] = hi;                                                             \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void transpose_##S(const T *restrict src, T *restrict dst, int64_t rows,     \
                                    int64_t cols) {                                           \
    MT mlo[LOGV], mhi[LOGV];                                                                  \
    int nb = 0;                                                                               \
    for (int b = V / 2; b >= 1; b /= 2, nb++)                                                 \
      for (int l = 0; l < V; l++) {                                                           \
        int g = l / (2 * b) * 2 * b, o = l % (2 * b);                                         \
        mlo[nb][l] = o < b ? g + o : V + g + o - b;                                           \
        mhi[nb][l] = o < b ? g + o + b : V + g + o;                                           \
      }                                                                                       \
    int64_t total = rows * cols, r0 = 0, c0 = 0;                                              \
    VT r[V];                                                                                  \
    if (cols < V) /* tall: tiles of V rows */                                                 \
      for (; r0 + V <= rows && (r0 + V - 1) * cols + V <= total; r0 += V) {                   \
        _Pragma("GCC unroll 16") for (int i = 0; i < V; i++)                                  \
            memcpy(&r[i], src + (r0 + i) * cols, sizeof r[i]);                                \
        tile_##S(r, mlo, mhi);                                                                \
        _Pragma("GCC unroll 16") for (int c = 0; c < V; c++) if (c < cols)                    \
            memcpy(dst + c * rows + r0, &r[c], sizeof r[c]);                                  \
      }                                                                                       \
    else if (rows < V) /* wide: tiles of V columns */                                         \
      for (; c0 + V <= cols; c0 += V) {                                                       \
        _Pragma("GCC unroll 16") for (int i = 0; i < V; i++) {                                \
          VT z = {0};                                                                         \
          r[i] = z;                                                                           \
          if (i < rows) memcpy(&r[i], src + i * cols + c0, sizeof r[i]);                      \
        }                                                                                     \
        tile_##S(r, mlo, mhi);                                                                \
        _Pragma("GCC unroll 16") for (int j = 0; j < V; j++) {                                \
          T *d = dst + (c0 + j) * rows;                                                       \
          if ((c0 + j) * rows + V <= total) {                                                 \
            memcpy(d, &r[j], sizeof r[j]);                                                    \
          } else { /* the last rows: exactly `rows` elements, via memory (a variable lane    \
                    * index would force the whole tile out of registers) */                 \
            T tmp[V];                                                                         \
            memcpy(tmp, &r[j], sizeof tmp);                                                   \
            memcpy(d, tmp, (size_t)rows * sizeof(T));                                         \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    /* what the tiles left: rows [r0, rows) of a tall, columns [c0, cols) of a wide source */ \
    for (int64_t i = r0; i < rows; i++)                                                       \
      for (int64_t c = c0; c < cols; c++) dst[c * rows + i] = src[i * cols + c];             \
  }

POOL_KERNELS(float, f32)
POOL_KERNELS(double, f64)
POOL_TRANSPOSE(float, f32, vf_f32, vm_f32, 16, 4)
POOL_TRANSPOSE(double, f64, vf_f64, vm_f64, 8, 3)
POOL_TRANSPOSE(int32_t, i32, vi_f32, vm_f32, 16, 4)

/* ---- driver ---- */
/* Workspace: [argmax: int32 per output (max)] [scales: OH + OW (avg)] then one slot per
 * thread: a row scratch and, for transposed planes, copies of x, y and the argmax. */
typedef struct pool_ctx {
  opf_case *c;
  nn_geom g;
  int avg, count_pad, tr; /* tr: planes are processed transposed */
  size_t esz;
  int32_t *am;
  void *rs, *cs;          /* per output row / column scale (avg) */
  size_t shared, slot;    /* bytes before the slots, bytes per slot */
  char *slots;
} pool_ctx;

static size_t pool_align(size_t b) { return (b + 63) & ~(size_t)63; }

/* Narrow planes (a row shorter than one chunk) run transposed when that makes rows longer. */
static int pool_transposed(const nn_geom *g) { return g->OW < 16 && g->OH > g->OW; }

/* Row scratch of the average backward (either orientation): the padded t row and the s
 * phase rows of avg_bwd_body. */
static size_t pool_row_elems(const nn_geom *g) {
  int64_t o = g->OW > g->OH ? g->OW : g->OH, i = g->W > g->H ? g->W : g->H;
  int64_t pad = g->KH + g->ph + g->sh + 2;
  return (size_t)(o + 2 * pad + i + g->sh);
}

static void pool_layout(const opf_case *c, pool_ctx *t) {
  nn_geom *g = &t->g;
  pool_geom(c, g);
  t->avg = c->op->n_params > P_COUNT_PAD;
  t->count_pad = t->avg && c->p[P_COUNT_PAD] != 0;
  t->tr = pool_transposed(g);
  t->esz = opf_dtype_size(c->dtype);
  size_t e = t->esz, hw = (size_t)(g->H * g->W), o = (size_t)(g->OH * g->OW);
  t->shared = t->avg ? pool_align((size_t)(g->OH + g->OW) * e) : pool_align(o * g->N * g->C * 4);
  t->slot = pool_align(pool_row_elems(g) * e) +
            (t->tr ? pool_align(hw * e) + pool_align(o * e) + pool_align(o * 4) : 0);
  char *ws = c->ws;
  t->am = t->avg ? NULL : (int32_t *)ws;
  t->rs = t->avg ? ws : NULL;
  t->cs = t->avg ? ws + (size_t)g->OH * e : NULL;
  t->slots = ws ? ws + t->shared : NULL;
}

static int pool_infer(opf_case *c) {
  nn_geom g = {0};
  const char *name = c->op->name;
  int rc = nn_check_nchw(c, 0, name, &g);
  if (rc) return rc;
  pool_geom(c, &g);
  if (g.ph > g.KH / 2)
    return opf_case_error(c, OPF_EINVAL, "%s: pad %lld must be at most half the kernel %lld",
                          name, (long long)g.ph, (long long)g.KH);
  if ((rc = nn_check_window(c, name, &g))) return rc;
  if (g.H * g.W > INT32_MAX) {
    char s[96];
    return opf_case_error(c, OPF_EINVAL, "%s: planes of x %s exceed 2^31 elements", name,
                          opf_shape_str(&c->in[0], s, sizeof s));
  }
  int64_t shape[4] = {g.N, g.C, g.OH, g.OW};
  opf_set_out(c, 0, c->dtype, 4, shape);
  pool_ctx t;
  pool_layout(c, &t); /* c->ws is NULL here: only the sizes are used */
  c->ws_bytes = t.shared + (size_t)omp_get_max_threads() * t.slot;
  return OPF_OK;
}

static void pool_setup(opf_case *c, pool_ctx *t) {
  memset(t, 0, sizeof *t);
  t->c = c;
  pool_layout(c, t);
  const nn_geom *g = &t->g;
  if (!t->avg) return;
  if (c->dtype == OPF_F32) {
    pool_scale_f32(t->rs, g->OH, g->H, g->sh, g->ph, g->KH, t->count_pad);
    pool_scale_f32(t->cs, g->OW, g->W, g->sw, g->pw, g->KW, t->count_pad);
  } else {
    pool_scale_f64(t->rs, g->OH, g->H, g->sh, g->ph, g->KH, t->count_pad);
    pool_scale_f64(t->cs, g->OW, g->W, g->sw, g->pw, g->KW, t->count_pad);
  }
}

/* The plane as the kernels see it, direct or transposed (rows and columns swapped). */
static pool_plane pool_view(const pool_ctx *t, int tr) {
  const nn_geom *g = &t->g;
  pool_plane q = {g->H, g->W, g->OH, g->OW, g->KH, g->sh, g->ph, g->W, 1, t->rs, t->cs};
  if (tr) {
    q.H = g->W, q.W = g->H, q.OH = g->OW, q.OW = g->OH;
    q.imr = 1, q.imc = g->W;
    q.rs = t->cs, q.cs = t->rs;
  }
  return q;
}

static void transpose(opf_dtype dt, const void *src, void *dst, int64_t rows, int64_t cols) {
  if (dt == OPF_F32) transpose_f32(src, dst, rows, cols);
  else transpose_f64(src, dst, rows, cols);
}

/* Planes [lo, hi) with slot k. */
static void pool_planes(const pool_ctx *t, int bwd, int64_t lo, int64_t hi, int k) {
  opf_case *c = t->c;
  const nn_geom *g = &t->g;
  opf_dtype dt = c->dtype;
  size_t e = t->esz, hw = (size_t)(g->H * g->W), o = (size_t)(g->OH * g->OW);
  char *slot = t->slots + (size_t)k * t->slot;
  char *xt = slot + pool_align(pool_row_elems(g) * e), *yt = xt + pool_align(hw * e), *at = yt + pool_align(o * e);
  pool_plane q = pool_view(t, t->tr);
  if (bwd && !t->avg) {
    if (dt == OPF_F32) max_bwd_f32(c->gout[0].data, c->gin[0].data, t->am, hw, o, lo, hi);
    else max_bwd_f64(c->gout[0].data, c->gin[0].data, t->am, hw, o, lo, hi);
    return;
  }
  for (int64_t pl = lo; pl < hi; pl++) {
    const char *x = (const char *)(bwd ? c->gout[0].data : c->in[0].data) + pl * (bwd ? o : hw) * e;
    char *y = (char *)(bwd ? c->gin[0].data : c->out[0].data) + pl * (bwd ? hw : o) * e;
    int32_t *am = t->avg ? NULL : t->am + pl * o;
    if (bwd) { /* average backward: g plane in, dx plane out */
      if (t->tr) transpose(dt, x, yt, g->OH, g->OW);
      void *dx = t->tr ? (void *)xt : (void *)y;
      if (dt == OPF_F32) avg_bwd_plane_f32(t->tr ? (void *)yt : x, dx, (void *)slot, &q);
      else avg_bwd_plane_f64(t->tr ? (void *)yt : x, dx, (void *)slot, &q);
      if (t->tr) transpose(dt, xt, y, g->W, g->H);
      continue;
    }
    if (t->tr) transpose(dt, x, xt, g->H, g->W);
    const void *xs = t->tr ? (const void *)xt : x;
    void *ys = t->tr ? (void *)yt : y;
    int32_t *as = am && t->tr ? (int32_t *)at : am;
    if (dt == OPF_F32) pool_plane_f32(xs, ys, as, &q);
    else pool_plane_f64(xs, ys, as, &q);
    if (t->tr) {
      transpose(dt, yt, y, g->OW, g->OH);
      if (am) transpose_i32((const int32_t *)at, am, g->OW, g->OH);
    }
  }
}

/* Planes split evenly over the threads (at most one per workspace slot). */
static void pool_run(pool_ctx *t, int bwd) {
  const nn_geom *g = &t->g;
  int64_t planes = g->N * g->C, per = g->H * g->W + g->OH * g->OW;
  int64_t nt = omp_get_max_threads(), cap = (int64_t)((t->c->ws_bytes - t->shared) / t->slot);
  if (nt > cap) nt = cap;
  if (nt > planes) nt = planes;
  if (planes * per < 2 * OPF_PAR_MIN) nt = 1;
#pragma omp parallel num_threads((int)nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    pool_planes(t, bwd, planes * k / m, planes * (k + 1) / m, k);
  }
}

static int pool_forward(opf_case *c) {
  pool_ctx t;
  pool_setup(c, &t);
  pool_run(&t, 0);
  return OPF_OK;
}

static int pool_backward(opf_case *c) {
  pool_ctx t;
  pool_setup(c, &t);
  if (c->gin[0].data) pool_run(&t, 1);
  return OPF_OK;
}

/* Reference: each output is the max / mean of its window's real elements (average with
 * count_include_pad divides by the full kernel area instead). */
static int pool_reference(opf_case *c) {
  nn_geom g;
  pool_geom(c, &g);
  int avg = c->op->n_params > P_COUNT_PAD, count_pad = avg && c->p[P_COUNT_PAD] != 0;
  opf_dtype dt = c->dtype;
  for (int64_t pl = 0; pl < g.N * g.C; pl++)
    for (int64_t oh = 0; oh < g.OH; oh++)
      for (int64_t ow = 0; ow < g.OW; ow++) {
        double acc = avg ? 0 : -INFINITY;
        int64_t cnt = 0;
        for (int64_t kh = 0; kh < g.KH; kh++)
          for (int64_t kw = 0; kw < g.KW; kw++) {
            int64_t ih = oh * g.sh - g.ph + kh, iw = ow * g.sw - g.pw + kw;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            double v = nn_ld(c->in[0].data, dt, (pl * g.H + ih) * g.W + iw);
            acc = avg ? acc + v : (v > acc ? v : acc);
            cnt++;
          }
        if (avg) acc /= (double)(count_pad ? g.KH * g.KW : cnt);
        nn_st(c->out[0].data, dt, (pl * g.OH + oh) * g.OW + ow, acc);
      }
  return OPF_OK;
}

/* max: one compare per window tap forward, one add per output backward (the scatter).
 * avg: one add per tap plus one scale per output, forward and backward alike. */
static double pool_flops(const opf_case *c, opf_pass p) {
  nn_geom g;
  pool_geom(c, &g);
  double outs = (double)(g.N * g.C * g.OH * g.OW), taps = outs * (double)(g.KH * g.KW);
  int avg = c->op->n_params > P_COUNT_PAD;
  double fwd = avg ? taps + outs : taps, bwd = avg ? taps + outs : outs;
  return opf_pass_sum(p, fwd, bwd);
}

/* fwd: x read, y written; bwd: g read, dx written. Max pooling also moves its int32 argmax
 * (written forward, read backward) instead of re-reading x. */
static double pool_bytes(const opf_case *c, opf_pass p) {
  double e = (double)opf_dtype_size(c->dtype);
  double xin = (double)opf_numel(&c->in[0]), outs = (double)opf_numel(&c->out[0]);
  double idx = c->op->n_params > P_COUNT_PAD ? 0 : 4 * outs;
  double fwd = (xin + outs) * e + idx, bwd = (outs + xin) * e + idx;
  return opf_pass_sum(p, fwd, bwd);
}

#define POOL_PARAMS                                                                            \
  {"kernel", OPF_P_INT, 2, 1, 1 << 16, NULL, "square window size"},                            \
      {"stride", OPF_P_INT, 0, 0, 1 << 16, NULL, "stride, 0 = kernel"},                        \
      {"pad", OPF_P_INT, 0, 0, 1 << 15, NULL, "padding on each side, at most kernel/2"}
#define POOL_SHAPES                                                                            \
  {"standard", "x=32x64x56x56 kernel=2 stride=2"},                                             \
      {"standard", "x=32x64x56x56 kernel=3 stride=1 pad=1"},                                   \
      {"skewed", "x=32x3x256x256 kernel=2 stride=2"},                                          \
      {"skewed", "x=32x3x256x256 kernel=3 stride=1 pad=1"},                                    \
      {"skewed", "x=32x3x10000x10 kernel=2 stride=2"},                                         \
      {"skewed", "x=32x3x10000x10 kernel=3 stride=1 pad=1"},                                   \
      {"small", "x=2x3x6x6 kernel=2 stride=2"}, {"small", "x=2x2x5x7 kernel=3 stride=1 pad=1"},  \
      {"small", "x=1x2x7x5 kernel=3 stride=2 pad=1"}, {"small", "x=1x1x9x4 kernel=2 stride=1"}, \
      {"small", "x=1x3x5x5 kernel=5 stride=3 pad=2"}, {"small", "x=2x1x16x3 kernel=2 stride=3"}, \
      {"small", "x=1x1x3x40 kernel=3 stride=1 pad=1"},                                         \
      {"test", "x=5x7x37x41 kernel=3 stride=2 pad=1"}, {"test", "x=3x5x61x33 kernel=2"},        \
      {"test", "x=2x3x1001x13 kernel=3 stride=1 pad=1"},                                       \
      {"test", "x=2x3x29x31 kernel=4 stride=3 pad=2"},                                         \
      {"test", "x=3x2x83x101 kernel=3 stride=1"}, {"test", "x=2x5x301x7 kernel=2 stride=2"},    \
      {"large", "x=64x128x224x224 kernel=2 stride=2"}

OPPERF_OP(max_pool2d) = {
    .abi = OPF_OP_ABI,
    .name = "max_pool2d",
    .category = "nn.pool",
    .summary = "2-D max pooling, NCHW, square window with stride and padding",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "input (N, C, H, W)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {POOL_PARAMS},
    .shapes = {POOL_SHAPES},
    .infer = pool_infer,
    .forward = pool_forward,
    .backward = pool_backward,
    .reference = pool_reference,
    .flops = pool_flops,
    .bytes = pool_bytes,
};

OPPERF_OP(avg_pool2d) = {
    .abi = OPF_OP_ABI,
    .name = "avg_pool2d",
    .category = "nn.pool",
    .summary = "2-D average pooling, NCHW, square window with stride and padding",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "input (N, C, H, W)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 4,
    .params = {POOL_PARAMS,
               {"count_include_pad", OPF_P_BOOL, 1, 0, 1, NULL,
                "divide by the full window area (true) or by its unpadded elements (false)"}},
    .shapes = {POOL_SHAPES, {"small", "x=1x2x5x6 kernel=3 stride=2 pad=1 count_include_pad=false"},
               {"small", "x=1x1x20x3 kernel=3 stride=1 pad=1 count_include_pad=false"},
               {"test", "x=2x5x37x41 kernel=3 stride=1 pad=1 count_include_pad=false"}},
    .infer = pool_infer,
    .forward = pool_forward,
    .backward = pool_backward,
    .reference = pool_reference,
    .flops = pool_flops,
    .bytes = pool_bytes,
};

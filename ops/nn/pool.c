/* pool.c: max, average and sum pooling over 1-D, 2-D and 3-D windows (per-axis kernel, stride,
 * padding), channels-first or channels-last, forward and backward, float32 and float64. One
 * N-d core: every case is a 3-D window over (D, H, W) planes, 1-D and 2-D having unit leading
 * axes. Channels-first planes are threaded over N*C and vectorised in 64-byte chunks of
 * outputs along a row (narrow planes such as 10000x10 are transposed first); channels-last
 * images are threaded over output rows and vectorised along C. Max pooling saves each
 * window's argmax (ties: the first maximum in row-major window order) for its backward
 * scatter (a gather for stride-1 windows along W only); average and sum backward gather each
 * input's covering outputs. */
#include "pool_common.h"

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

/* Outputs [*a, *b) whose windows cover input index i along an axis (empty when *a >= *b). */
static inline void pool_cover(int64_t i, int64_t s, int64_t p, int64_t k, int64_t out,
                              int64_t *a, int64_t *b) {
  int64_t lo = i + p - k + 1, hi = (i + p) / s + 1;
  *a = lo <= 0 ? 0 : (lo + s - 1) / s;
  *b = hi > out ? out : hi;
}

/* A channels-first plane as the kernels see it: dims (D, H, W) (H and W swapped when the
 * plane runs transposed), the window, the argmax index of element (d, r, c) =
 * d * imd + r * imr + c * imc, and the avg/sum scale factors per output axis. A staged plane
 * is a copy whose rows carry the W padding (lead elements of -inf for max, 0 otherwise, on
 * each side), so that every output of a row is computed in vector chunks. */
typedef struct pool_view {
  int64_t D, H, W, OD, OH, OW;
  int64_t kd, kh, kw, sd, sh, sw, pd, ph, pw;
  int64_t imd, imr, imc;
  const void *ds, *rs, *cs;
  int64_t pitch, lead; /* row pitch of the plane read, and where column 0 sits in a row */
  const char *pf;       /* the next plane's input, prefetched while this one runs */
  int64_t pf_bytes;
} pool_view;

/* 0, but opaque to the compiler. A contiguous chunk load OR-ed with it stays a register
 * value: otherwise GCC folds the load into the max blend as an AVX-512 masked load, whose
 * ~8-cycle latency then sits on the running max's dependency chain (3x3 stride 1 ran 2x
 * slower). */
static inline int32_t pool_opaque_zero(void) {
  int32_t z;
  __asm__("" : "=r"(z) : "0"(0));
  return z;
}

/* EVEN_S picks elements 0, 2, .. 2V-2 out of a load at 0 and one at V-1 (stride 2);
 * ILV_LO_S / ILV_HI_S interleave the low / high halves of two vectors. */
#define ILV_LO_f32 {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23}
#define ILV_HI_f32 {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31}
#define ILV_LO_f64 {0, 8, 1, 9, 2, 10, 3, 11}
#define ILV_HI_f64 {4, 12, 5, 13, 6, 14, 7, 15}
#define EVEN_f32 {0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31}
#define EVEN_f64 {0, 2, 4, 6, 9, 11, 13, 15}

/* cf_plane's body for stride s of 1, 2 or any, with the flags constant. */
#define POOL_CF_STRIDES(S, MAX, ARG, TIE)                                                      \
  {                                                                                            \
    if (s == 1) cf_plane_body_##S(x, y, am, q, MAX, ARG, TIE, 1);                              \
    else if (s == 2) cf_plane_body_##S(x, y, am, q, MAX, ARG, TIE, 2);                         \
    else cf_plane_body_##S(x, y, am, q, MAX, ARG, TIE, s);                                     \
  }

#define POOL_CF_KERNELS(T, S)                                                                  \
  /* *v = lanes l of a chunk, xr[l*s], for the (constant) stride s. Stride 2 takes the even \
   * elements of the 2V-1 it needs from two overlapping loads, never reading beyond. */       \
  POOL_INLINE void cf_load_##S(vf_##S *v, const T *xr, int64_t s, int max, int32_t zero) {    \
    if (s == 1) {                                                                             \
      memcpy(v, xr, sizeof *v);                                                               \
      if (max) *v = (vf_##S)((vm_##S)*v | zero);                                              \
    } else if (s == 2) {                                                                      \
      vf_##S v0, v1;                                                                          \
      memcpy(&v0, xr, sizeof v0);                                                             \
      memcpy(&v1, xr + LANES_##S - 1, sizeof v1);                                             \
      *v = __builtin_shuffle(v0, v1, (vm_##S)EVEN_##S);                                       \
    } else {                                                                                  \
      for (int l = 0; l < LANES_##S; l++) (*v)[l] = xr[l * s];                                \
    }                                                                                         \
  }                                                                                           \
  /* u (1, 2 or 4) chunks of outputs o[k].. of one row, window rows [da, db) x [ha, hb),   \
   * every window inside the (staged) row. The chunks are independent dependency chains:   \
   * one chunk's running max waits ~5 cycles per tap on its compare and blend. */           \
  POOL_INLINE void cf_chunks_##S(const T *xp, const pool_view *q, int64_t da, int64_t db,     \
                                 int64_t ha, int64_t hb, const int64_t *o, int u, int max,    \
                                 int arg, int tie, int64_t s, T *yr, int32_t *ar, T rsc,      \
                                 int32_t zero) {                                              \
    const vi_##S lane = LANE_IDX_##S;                                                         \
    vi_##S loff = lane * (int32_t)(s * q->imc);                                               \
    int64_t c[4];                                                                             \
    vf_##S m[4] = {{0}};                                                                      \
    vi_##S a[4] = {{0}};                                                                      \
    int32_t d[4] = {0};                                                                       \
    _Pragma("GCC unroll 4") for (int k = 0; k < u; k++) {                                     \
      c[k] = o[k] * s - q->pw; /* window column of lane 0 (< 0 in the left padding) */       \
      d[k] = (int32_t)((c[k] - c[0]) * q->imc);                                               \
      if (!max) continue;                                                                     \
      m[k] -= (T)INFINITY; /* argmax starts at the first real element of each window */      \
      if (!arg) continue;                                                                     \
      vi_##S col = lane * (int32_t)s + (int32_t)c[k];                                         \
      col &= col >= 0;                                                                        \
      a[k] = col * (int32_t)q->imc + (int32_t)(da * q->imd + ha * q->imr);                    \
    }                                                                                         \
    for (int64_t id = da; id < db; id++)                                                      \
      for (int64_t ih = ha; ih < hb; ih++) {                                                  \
        const T *xr = xp + (id * q->H + ih) * q->pitch + q->lead;                             \
        vi_##S iv = loff + (int32_t)(id * q->imd + ih * q->imr + c[0] * q->imc);              \
        for (int64_t kw = 0; kw < q->kw; kw++, iv += (int32_t)q->imc)                         \
          _Pragma("GCC unroll 4") for (int k = 0; k < u; k++) {                               \
            vf_##S v;                                                                         \
            cf_load_##S(&v, xr + c[k] + kw, s, max, zero);                                    \
            if (max && arg) pool_acc_##S(&m[k], &a[k], v, iv + d[k], tie);                    \
            else if (max) m[k] = pool_vmax_##S(m[k], v);                                      \
            else m[k] += v;                                                                   \
          }                                                                                   \
      }                                                                                       \
    _Pragma("GCC unroll 4") for (int k = 0; k < u; k++) {                                     \
      if (max) {                                                                              \
        memcpy(yr + o[k], &m[k], sizeof m[k]);                                                \
        if (arg) memcpy(ar + o[k], &a[k], sizeof a[k]);                                       \
      } else {                                                                                \
        vf_##S cs;                                                                            \
        memcpy(&cs, (const T *)q->cs + o[k], sizeof cs);                                      \
        m[k] *= cs * rsc;                                                                     \
        memcpy(yr + o[k], &m[k], sizeof m[k]);                                                \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* Output row (od, oh) of a plane: the outputs whose windows lie inside the row (all of   \
   * them in a staged plane, whose rows carry their padding) go in chunks, the last one     \
   * shifted back to end with them (recomputing a few outputs is cheaper than a scalar     \
   * tail); edge outputs take the clipped window, one at a time. */                         \
  POOL_INLINE void cf_row_##S(const T *xp, const pool_view *q, int64_t od, int64_t oh,        \
                              T *yr, int32_t *ar, int max, int arg, int tie, int64_t s) {     \
    enum { V = LANES_##S };                                                                   \
    int64_t da, db, ha, hb, ia = 0, ib = q->OW;                                               \
    pool_span(od, q->sd, q->pd, q->kd, q->D, &da, &db);                                       \
    pool_span(oh, q->sh, q->ph, q->kh, q->H, &ha, &hb);                                       \
    if (!q->lead) pool_inner(q->W, q->OW, s, q->pw, q->kw, &ia, &ib);                         \
    T rsc = max ? 0 : ((const T *)q->ds)[od] * ((const T *)q->rs)[oh];                        \
    int64_t n = ib - ia, done = n < V ? ia : ib, nch = n < V ? 0 : (n + V - 1) / V;           \
    int32_t zero = pool_opaque_zero();                                                        \
    for (int64_t j = 0; j < nch;) {                                                           \
      int u = nch - j >= 4 ? 4 : nch - j >= 2 ? 2 : 1;                                        \
      int64_t o[4];                                                                           \
      for (int k = 0; k < u; k++) o[k] = ia + (j + k) * V > ib - V ? ib - V : ia + (j + k) * V; \
      if (u == 4) cf_chunks_##S(xp, q, da, db, ha, hb, o, 4, max, arg, tie, s, yr, ar, rsc, zero); \
      else if (u == 2) cf_chunks_##S(xp, q, da, db, ha, hb, o, 2, max, arg, tie, s, yr, ar, rsc, zero); \
      else cf_chunks_##S(xp, q, da, db, ha, hb, o, 1, max, arg, tie, s, yr, ar, rsc, zero);        \
      j += u;                                                                                 \
    }                                                                                         \
    for (int64_t o = 0; o < q->OW; o++) { /* edges, and rows too short for a chunk */        \
      if (o == ia) o = done;                                                                  \
      if (o >= q->OW) break;                                                                  \
      int64_t wa, wb;                                                                         \
      pool_span(o, s, q->pw, q->kw, q->W, &wa, &wb);                                          \
      T m = max ? (T)-INFINITY : 0;                                                           \
      int64_t a = da * q->imd + ha * q->imr + wa * q->imc;                                    \
      for (int64_t id = da; id < db; id++)                                                    \
        for (int64_t ih = ha; ih < hb; ih++)                                                  \
          for (int64_t iw = wa; iw < wb; iw++) {                                              \
            T v = xp[(id * q->H + ih) * q->pitch + q->lead + iw];                             \
            if (max && arg) pool_acc1_##S(&m, &a, v, id * q->imd + ih * q->imr + iw * q->imc, tie); \
            else if (max) m = v > m ? v : m;                                                  \
            else m += v;                                                                      \
          }                                                                                   \
      if (max && arg) ar[o] = (int32_t)a;                                                     \
      yr[o] = max ? m : m * (rsc * ((const T *)q->cs)[o]);                                    \
    }                                                                                         \
  }                                                                                           \
  POOL_INLINE void cf_plane_body_##S(const T *x, T *y, int32_t *am, const pool_view *q,       \
                                     int max, int arg, int tie, int64_t s) {                  \
    int64_t rows = q->OD * q->OH, per = (q->pf_bytes / rows + 63) & ~(int64_t)63;              \
    for (int64_t od = 0; od < q->OD; od++)                                                    \
      for (int64_t oh = 0; oh < q->OH; oh++) {                                                \
        int64_t r = (od * q->OH + oh) * q->OW, i = od * q->OH + oh;                           \
        for (int64_t b = i * per; b < (i + 1) * per && b < q->pf_bytes; b += 64)              \
          __builtin_prefetch(q->pf + b);                                                      \
        cf_row_##S(x, q, od, oh, y + r, arg ? am + r : NULL, max, arg, tie, s);               \
      }                                                                                       \
  }                                                                                           \
  /* Forward of one plane: max (with its argmax when am != NULL; tie needs it) or avg/sum;  \
   * the stride along W is made a constant for 1 and 2 so the chunk loads are contiguous or  \
   * de-interleaving vector loads, not gathers. */                                           \
  OPF_VEC static void cf_plane_##S(const T *x, T *y, int32_t *am, const pool_view *q, int max, \
                                   int tie) {                                                 \
    int64_t s = q->sw;                                                                        \
    if (!max) POOL_CF_STRIDES(S, 0, 0, 0)                                                     \
    else if (!am) POOL_CF_STRIDES(S, 1, 0, 0)                                                 \
    else if (!tie) POOL_CF_STRIDES(S, 1, 1, 0)                                                \
    else POOL_CF_STRIDES(S, 1, 1, 1)                                                          \
  }                                                                                           \
  /* Average/sum backward of one plane, as a gather so every store is contiguous, in two   \
   * passes. Pass 1: row (id, ih) of the plane tp (rows of pitch OW + 2M, zero margins of M) \
   * = cs * the sum of the g rows whose windows cover it, each scaled by ds * rs. Pass 2:   \
   * dx[iw] = sum over the taps kw with (iw + p - kw) % s == 0 of t[(iw + p - kw) / s], in   \
   * vector chunks for s = 1 (shifted loads) and s = 2 (the two phases' sums interleaved in \
   * registers). The passes are separate so that pass 2's shifted loads do not hit pass 1's  \
   * stores still in flight (a failed store-to-load forward stalled every row). */          \
  POOL_INLINE void cf_spread_body_##S(const T *restrict gy, T *restrict dx, T *restrict tp,    \
                                      const pool_view *q, int64_t s) {                        \
    enum { V = LANES_##S };                                                                   \
    int64_t W = q->W, K = q->kw, p = q->pw, OW = q->OW, M = K + 1, TP = OW + 2 * M;           \
    const T *ds = q->ds, *rs = q->rs, *cs = q->cs;                                            \
    for (int64_t id = 0; id < q->D; id++) {                                                   \
      int64_t da, db;                                                                         \
      pool_cover(id, q->sd, q->pd, q->kd, q->OD, &da, &db);                                   \
      for (int64_t ih = 0; ih < q->H; ih++) {                                                 \
        T *restrict t = tp + (id * q->H + ih) * TP + M;                                       \
        int64_t oa, ob;                                                                       \
        pool_cover(ih, q->sh, q->ph, q->kh, q->OH, &oa, &ob);                                 \
        for (int64_t i = 0; i < M; i++) t[-M + i] = 0, t[OW + i] = 0;                         \
        if (oa >= ob || da >= db) {                                                           \
          for (int64_t ow = 0; ow < OW; ow++) t[ow] = 0;                                      \
          continue;                                                                           \
        }                                                                                     \
        for (int64_t od = da; od < db; od++)                                                  \
          for (int64_t oh = oa; oh < ob; oh++) {                                              \
            const T *restrict gr = gy + (od * q->OH + oh) * OW;                               \
            T sc = ds[od] * rs[oh];                                                           \
            if (od == da && oh == oa)                                                         \
              for (int64_t ow = 0; ow < OW; ow++) t[ow] = gr[ow] * sc;                        \
            else                                                                              \
              for (int64_t ow = 0; ow < OW; ow++) t[ow] += gr[ow] * sc;                       \
          }                                                                                   \
        for (int64_t ow = 0; ow < OW; ow++) t[ow] *= cs[ow];                                  \
      }                                                                                       \
    }                                                                                         \
    for (int64_t r = 0; r < q->D * q->H; r++) {                                               \
      const T *t = tp + r * TP + M;                                                           \
      T *restrict dr = dx + r * W;                                                            \
      int64_t done = 0;                                                                       \
      if (s == 1 && W >= V) {                                                                 \
        for (int64_t i = 0; i < W; i += V) {                                                  \
          int64_t i0 = i + V > W ? W - V : i;                                                 \
          vf_##S acc = {0};                                                                   \
          for (int64_t kw = 0; kw < K; kw++) {                                                \
            vf_##S v;                                                                         \
            memcpy(&v, t + i0 + p - kw, sizeof v);                                            \
            acc += v;                                                                         \
          }                                                                                   \
          memcpy(dr + i0, &acc, sizeof acc);                                                  \
        }                                                                                     \
        done = W;                                                                             \
      } else if (s == 2 && W >= 2 * V) { /* chunks of 2V: dx[2j] from phase 0, dx[2j + 1]  \
                                          * from phase 1; the last chunk shifted back */     \
        int64_t jl = (W - 2 * V) / 2;                                                         \
        done = 2 * jl + 2 * V;                                                                \
        for (int64_t j = 0; j <= jl; j = j + V > jl && j < jl ? jl : j + V) {                 \
          vf_##S f0 = {0}, f1 = {0};                                                          \
          for (int64_t kw = 0; kw < K; kw++) {                                                \
            int64_t r0 = p - kw; /* phase 0 when even, else phase 1 with (1 + p - kw) */     \
            vf_##S v;                                                                         \
            memcpy(&v, t + j + (r0 & 1 ? (r0 + 1) / 2 : r0 / 2), sizeof v);                   \
            if (r0 & 1) f1 += v;                                                              \
            else f0 += v;                                                                     \
          }                                                                                   \
          vf_##S lo = __builtin_shuffle(f0, f1, (vm_##S)ILV_LO_##S);                          \
          vf_##S hi = __builtin_shuffle(f0, f1, (vm_##S)ILV_HI_##S);                          \
          memcpy(dr + 2 * j, &lo, sizeof lo);                                                 \
          memcpy(dr + 2 * j + V, &hi, sizeof hi);                                             \
        }                                                                                     \
      }                                                                                       \
      for (int64_t iw = done; iw < W; iw++) { /* the rest, and every other stride */         \
        T acc = 0;                                                                            \
        for (int64_t kw = 0; kw < K; kw++) {                                                  \
          int64_t r0 = iw + p - kw;                                                           \
          if (r0 >= 0 && r0 % s == 0 && r0 / s < OW) acc += t[r0 / s];                        \
        }                                                                                     \
        dr[iw] = acc;                                                                         \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void cf_spread_##S(const T *gy, T *dx, T *wk, const pool_view *q) {          \
    if (q->sw == 1) cf_spread_body_##S(gy, dx, wk, q, 1);                                     \
    else if (q->sw == 2) cf_spread_body_##S(gy, dx, wk, q, 2);                                \
    else cf_spread_body_##S(gy, dx, wk, q, q->sw);                                            \
  }

/* Max backward as a gather, for windows along W only (every other axis: kernel 1, stride 1)
 * with stride 1 and as many outputs as inputs (pad (k - 1) / 2): in a unit of n elements
 * (a plane; an image of C channels for channels-last, st = C) input i can only be the argmax
 * of the k outputs o = i + (p - kw) * st, so dx[i] = sum of gy[o] over those with am[o] == i,
 * in increasing o (the scatter's order: bit for bit its sums). The flat index crosses row
 * ends safely: an output of another row has its argmax in that row. Against the scatter
 * (memset, then dx[am[o]] += gy[o], ~5 cycles a store-to-load chain when neighbouring windows
 * share their argmax) it is one pass of contiguous vector stores: 4096x64x12 k3 ran 2x faster. */
enum { POOL_GATHER_KMAX = 8 };
#define POOL_GATHER(T, S)                                                                      \
  POOL_INLINE T gather1_##S(const T *gp, const int32_t *ap, int64_t i, int64_t n, int64_t k,   \
                            int64_t p, int64_t st) {                                          \
    T acc = 0;                                                                                \
    for (int64_t kw = k - 1; kw >= 0; kw--) {                                                 \
      int64_t o = i + (p - kw) * st;                                                          \
      if (o >= 0 && o < n && ap[o] == i) acc += gp[o];                                        \
    }                                                                                         \
    return acc;                                                                               \
  }                                                                                           \
  OPF_VEC static void pool_gather_##S(const T *restrict gy, T *restrict dx,                   \
                                      const int32_t *restrict am, int64_t n, int64_t k,       \
                                      int64_t p, int64_t st, int64_t u0, int64_t u1) {        \
    enum { V = LANES_##S };                                                                   \
    const vi_##S lane = LANE_IDX_##S;                                                         \
    int64_t h = (k - 1 - p) * st, e = n - p * st; /* vector chunks inside [h, e) */           \
    if (e - h < V) h = e = n;                                                                 \
    for (int64_t u = u0; u < u1; u++) {                                                       \
      const T *restrict gp = gy + u * n;                                                      \
      const int32_t *restrict ap = am + u * n;                                                \
      T *restrict dp = dx + u * n;                                                            \
      for (int64_t i = 0; i < h; i++) dp[i] = gather1_##S(gp, ap, i, n, k, p, st);            \
      for (int64_t i = h; i < e; i += V) {                                                    \
        int64_t i0 = i + V > e ? e - V : i;                                                   \
        vi_##S idx = lane + (int32_t)i0;                                                      \
        vf_##S acc = {0};                                                                     \
        for (int64_t kw = k - 1; kw >= 0; kw--) {                                             \
          vf_##S g;                                                                           \
          vi_##S a;                                                                           \
          memcpy(&g, gp + i0 + (p - kw) * st, sizeof g);                                      \
          memcpy(&a, ap + i0 + (p - kw) * st, sizeof a);                                      \
          vm_##S m = IDX_MASK_##S(a == idx);                                                  \
          acc = (vf_##S)(((vm_##S)(acc + g) & m) | ((vm_##S)acc & ~m));                       \
        }                                                                                     \
        memcpy(dp + i0, &acc, sizeof acc);                                                    \
      }                                                                                       \
      for (int64_t i = e; i < n; i++) dp[i] = gather1_##S(gp, ap, i, n, k, p, st);            \
    }                                                                                         \
  }
POOL_GATHER(float, f32)
POOL_GATHER(double, f64)

/* Whether the max backward of g runs as pool_gather: its step, 0 when not. */
static int64_t pool_gather_step(const pool_geom *g) {
  for (int a = 0; a < 2; a++)
    if (g->k[a] != 1 || g->s[a] != 1) return 0;
  if (g->kind != PK_MAX || g->s[2] != 1 || g->out[2] != g->in[2] || g->k[2] > POOL_GATHER_KMAX)
    return 0;
  return g->cl ? g->C : 1;
}

static void pool_gather(const opf_case *c, const pool_geom *g, const int32_t *am, int64_t st,
                        int64_t u0, int64_t u1) {
  int64_t n = g->cl ? g->S * g->C : g->S;
  if (c->dtype == OPF_F32)
    pool_gather_f32(c->gout[0].data, c->gin[0].data, am, n, g->k[2], g->p[2], st, u0, u1);
  else
    pool_gather_f64(c->gout[0].data, c->gin[0].data, am, n, g->k[2], g->p[2], st, u0, u1);
}

/* Channels-last kernels. Windows are scanned in increasing index order, so the strictly-
 * greater rule keeps the first maximum. */
#define POOL_CL_KERNELS(T, S)                                                                  \
  /* u chunks of channels c[k].. of one output position, window [da,db)x[ha,hb)x[wa,wb): the \
   * running max/sum of each chunk in registers, the taps (whole channel vectors) in window  \
   * order. */                                                                                \
  POOL_INLINE void cl_chunks_##S(const T *xi, const pool_geom *g, int64_t da, int64_t db,     \
                                 int64_t ha, int64_t hb, int64_t wa, int64_t wb,              \
                                 const int64_t *c, int u, T *yv, int32_t *av, T sc,           \
                                 int32_t zero) {                                              \
    const vi_##S lane = LANE_IDX_##S;                                                         \
    int64_t C = g->C, H = g->in[1], W = g->in[2];                                             \
    vf_##S m[4] = {{0}};                                                                      \
    vi_##S a[4] = {{0}}, li[4] = {{0}};                                                       \
    int32_t first = (int32_t)(((da * H + ha) * W + wa) * C);                                  \
    _Pragma("GCC unroll 4") for (int k = 0; k < u; k++) {                                     \
      li[k] = lane + (int32_t)c[k];                                                           \
      if (av) m[k] -= (T)INFINITY, a[k] = li[k] + first;                                      \
    }                                                                                         \
    for (int64_t id = da; id < db; id++)                                                      \
      for (int64_t ih = ha; ih < hb; ih++)                                                    \
        for (int64_t iw = wa; iw < wb; iw++) {                                                \
          int64_t off = ((id * H + ih) * W + iw) * C;                                         \
          _Pragma("GCC unroll 4") for (int k = 0; k < u; k++) {                               \
            vf_##S v;                                                                         \
            memcpy(&v, xi + off + c[k], sizeof v);                                            \
            if (av) {                                                                         \
              v = (vf_##S)((vm_##S)v | zero); /* a register operand: see pool_opaque_zero */ \
              pool_acc_##S(&m[k], &a[k], v, li[k] + (int32_t)off, 0);                         \
            } else {                                                                          \
              m[k] += v;                                                                      \
            }                                                                                 \
          }                                                                                   \
        }                                                                                     \
    _Pragma("GCC unroll 4") for (int k = 0; k < u; k++) {                                     \
      if (!av) m[k] *= sc;                                                                    \
      memcpy(yv + c[k], &m[k], sizeof m[k]);                                                  \
      if (av) memcpy(av + c[k], &a[k], sizeof a[k]);                                          \
    }                                                                                         \
  }                                                                                           \
  POOL_INLINE void cl_row_body_##S(const T *xi, T *yr, int32_t *ar, const pool_geom *g,       \
                                   int64_t od, int64_t oh, const T *ds, const T *rs,          \
                                   const T *cs, int max) {                                    \
    enum { V = LANES_##S };                                                                   \
    int64_t C = g->C, H = g->in[1], W = g->in[2], da, db, ha, hb;                             \
    int64_t nch = C < V ? 0 : (C + V - 1) / V;                                                \
    int32_t zero = pool_opaque_zero();                                                        \
    pool_span(od, g->s[0], g->p[0], g->k[0], g->in[0], &da, &db);                             \
    pool_span(oh, g->s[1], g->p[1], g->k[1], H, &ha, &hb);                                    \
    for (int64_t ow = 0; ow < g->out[2]; ow++) {                                              \
      int64_t wa, wb;                                                                         \
      pool_span(ow, g->s[2], g->p[2], g->k[2], W, &wa, &wb);                                  \
      T *restrict m = yr + ow * C;                                                            \
      int32_t *restrict a = max ? ar + ow * C : NULL;                                         \
      T sc = max ? 0 : ds[od] * rs[oh] * cs[ow];                                              \
      for (int64_t j = 0; j < nch;) { /* chunk groups, the last chunk shifted back */        \
        int u = nch - j >= 4 ? 4 : nch - j >= 2 ? 2 : 1;                                      \
        int64_t c[4];                                                                         \
        for (int k = 0; k < u; k++) c[k] = (j + k) * V > C - V ? C - V : (j + k) * V;         \
        if (u == 4) cl_chunks_##S(xi, g, da, db, ha, hb, wa, wb, c, 4, m, a, sc, zero);       \
        else if (u == 2) cl_chunks_##S(xi, g, da, db, ha, hb, wa, wb, c, 2, m, a, sc, zero);  \
        else cl_chunks_##S(xi, g, da, db, ha, hb, wa, wb, c, 1, m, a, sc, zero);              \
        j += u;                                                                               \
      }                                                                                       \
      if (nch) continue;                                                                      \
      /* fewer channels than a chunk: y and the argmax rows are the accumulators */          \
      if (a) {                                                                                \
        int32_t first = (int32_t)(((da * H + ha) * W + wa) * C);                              \
        for (int64_t c = 0; c < C; c++) m[c] = (T)-INFINITY, a[c] = first + (int32_t)c;       \
      } else {                                                                                \
        for (int64_t c = 0; c < C; c++) m[c] = 0;                                             \
      }                                                                                       \
      for (int64_t id = da; id < db; id++)                                                    \
        for (int64_t ih = ha; ih < hb; ih++)                                                  \
          for (int64_t iw = wa; iw < wb; iw++) {                                              \
            int64_t off = ((id * H + ih) * W + iw) * C;                                       \
            const T *restrict xv = xi + off;                                                  \
            if (a) pool_tap_max_##S(xv, m, a, C, (int32_t)off);                               \
            else                                                                              \
              for (int64_t c = 0; c < C; c++) m[c] += xv[c];                                  \
          }                                                                                   \
      if (!a)                                                                                 \
        for (int64_t c = 0; c < C; c++) m[c] *= sc;                                           \
    }                                                                                         \
  }                                                                                           \
  /* Output row (od, oh) of a channels-last image: every position's window applied to all   \
   * C channels, in register chunks of channels (fewer than a chunk: plain loops). */        \
  OPF_VEC static void cl_row_##S(const T *xi, T *yr, int32_t *ar, const pool_geom *g,         \
                                 int64_t od, int64_t oh, const T *ds, const T *rs,            \
                                 const T *cs) {                                               \
    if (ar) cl_row_body_##S(xi, yr, ar, g, od, oh, ds, rs, cs, 1);                            \
    else cl_row_body_##S(xi, yr, ar, g, od, oh, ds, rs, cs, 0);                               \
  }                                                                                           \
  /* Average/sum backward of input row (id, ih): each position's gradient is the scaled sum \
   * of its covering outputs' gradient vectors. */                                            \
  OPF_VEC static void cl_spread_row_##S(const T *gi, T *dr, const pool_geom *g, int64_t id,   \
                                        int64_t ih, const T *ds, const T *rs, const T *cs) {  \
    int64_t C = g->C, OH = g->out[1], OW = g->out[2], da, db, ha, hb;                         \
    pool_cover(id, g->s[0], g->p[0], g->k[0], g->out[0], &da, &db);                           \
    pool_cover(ih, g->s[1], g->p[1], g->k[1], OH, &ha, &hb);                                  \
    for (int64_t iw = 0; iw < g->in[2]; iw++) {                                               \
      int64_t wa, wb;                                                                         \
      pool_cover(iw, g->s[2], g->p[2], g->k[2], OW, &wa, &wb);                                \
      T *restrict d = dr + iw * C;                                                            \
      int first = 1;                                                                          \
      for (int64_t od = da; od < db; od++)                                                    \
        for (int64_t oh = ha; oh < hb; oh++)                                                  \
          for (int64_t ow = wa; ow < wb; ow++) {                                              \
            const T *restrict gv = gi + ((od * OH + oh) * OW + ow) * C;                       \
            T sc = ds[od] * rs[oh] * cs[ow];                                                  \
            if (first)                                                                        \
              for (int64_t c = 0; c < C; c++) d[c] = gv[c] * sc;                              \
            else                                                                              \
              for (int64_t c = 0; c < C; c++) d[c] += gv[c] * sc;                             \
            first = 0;                                                                        \
          }                                                                                   \
      if (first) memset(d, 0, (size_t)C * sizeof(T));                                         \
    }                                                                                         \
  }                                                                                           \
  /* Average scale along one axis: 1 / (real elements of the window), or 1 / K with        \
   * count_include_pad; 1 for sum pooling. */                                                 \
  static void pool_scale_##S(T *sc, int64_t out, int64_t in, int64_t s, int64_t p, int64_t k,  \
                             int kind, int count_pad) {                                       \
    for (int64_t o = 0; o < out; o++) {                                                       \
      int64_t a, b;                                                                           \
      pool_span(o, s, p, k, in, &a, &b);                                                      \
      sc[o] = kind == PK_SUM ? (T)1 : (T)1 / (T)(count_pad ? k : b - a);                      \
    }                                                                                         \
  }                                                                                           \
  /* Staged copy of a channels-first plane: rows of W with p fill values on each side. */    \
  OPF_VEC static void stage_##S(const T *restrict x, T *restrict st, int64_t rows, int64_t W, \
                                int64_t p, T fill) {                                          \
    enum { V = LANES_##S };                                                                   \
    for (int64_t r = 0; r < rows; r++, x += W, st += W + 2 * p) {                             \
      for (int64_t i = 0; i < p; i++) st[i] = fill, st[p + W + i] = fill;                     \
      if (W < V) { /* (no memcpy call per short row: a library call costs more) */           \
        for (int64_t i = 0; i < W; i++) st[p + i] = x[i];                                     \
        continue;                                                                             \
      }                                                                                       \
      for (int64_t i = 0; i < W; i += V) {                                                    \
        int64_t j = i + V > W ? W - V : i;                                                    \
        vf_##S v;                                                                             \
        memcpy(&v, x + j, sizeof v);                                                          \
        memcpy(st + p + j, &v, sizeof v);                                                     \
      }                                                                                       \
    }                                                                                         \
  }

/* dst (cols x rows) = src (rows x cols)^T, for the narrow planes: tall (cols < V) into wide
 * and back. V x V tiles are transposed in registers by log2(V) rounds of two-vector
 * shuffles, round b swapping the off-diagonal b x b blocks of every 2b x 2b block. Tall
 * tiles load V rows of V (reading a little past the last column, never past the array);
 * wide tiles load the few rows and store V lanes per output row in increasing order, each
 * store's excess overwritten by the next. Whatever the tiles leave is done elementwise. */
/* Round b of a tile: r[i], r[i + b] for every i with bit b clear become the lanes of their
 * 2b x 2b blocks' low and high halves. The masks are constants, so each shuffle compiles to
 * one or two permutes in every clone: computed at run time they were variable two-source
 * permutes, one instruction with AVX-512 but lowered lane by lane without it (the AVX2 and
 * baseline clones of transpose_f32 were 0.9 MB each and took most of pool.c's compile time). */
#define POOL_TM_LO(V, b, l) ((l) % (2 * (b)) < (b) ? (l) : (V) + (l) - (b))
#define POOL_TM_HI(V, b, l) ((l) % (2 * (b)) < (b) ? (l) + (b) : (V) + (l))
#define POOL_TM8(F, b) {F(8, b, 0), F(8, b, 1), F(8, b, 2), F(8, b, 3), F(8, b, 4), F(8, b, 5), F(8, b, 6), F(8, b, 7)}
#define POOL_TM16(F, b)                                                                        \
  {F(16, b, 0), F(16, b, 1), F(16, b, 2),  F(16, b, 3),  F(16, b, 4),  F(16, b, 5),           \
   F(16, b, 6), F(16, b, 7), F(16, b, 8),  F(16, b, 9),  F(16, b, 10), F(16, b, 11),          \
   F(16, b, 12), F(16, b, 13), F(16, b, 14), F(16, b, 15)}
#define POOL_TILE_ROUND(VT, MT, V, B)                                                          \
  _Pragma("GCC unroll 16") for (int i = 0; i < V; i++) if (!(i & (B))) {                      \
    VT lo = __builtin_shuffle(r[i], r[i + (B)], (MT)POOL_TM##V(POOL_TM_LO, B));               \
    VT hi = __builtin_shuffle(r[i], r[i + (B)], (MT)POOL_TM##V(POOL_TM_HI, B));               \
    r[i] = lo, r[i + (B)] = hi;                                                               \
  }
#define POOL_TILE_16(VT, MT)                                                                   \
  POOL_TILE_ROUND(VT, MT, 16, 8) POOL_TILE_ROUND(VT, MT, 16, 4)                               \
  POOL_TILE_ROUND(VT, MT, 16, 2) POOL_TILE_ROUND(VT, MT, 16, 1)
#define POOL_TILE_8(VT, MT)                                                                    \
  POOL_TILE_ROUND(VT, MT, 8, 4) POOL_TILE_ROUND(VT, MT, 8, 2) POOL_TILE_ROUND(VT, MT, 8, 1)

#define POOL_TRANSPOSE(T, S, VT, MT, V, LOGV)                                                  \
  /* Fully unrolled, so the tile stays in registers. */                                       \
  POOL_INLINE void tile_##S(VT *r) { POOL_TILE_##V(VT, MT) }                                 \
  OPF_VEC static void transpose_##S(const T *restrict src, T *restrict dst, int64_t rows,     \
                                    int64_t cols) {                                           \
    int64_t total = rows * cols, r0 = 0, c0 = 0;                                              \
    VT r[V];                                                                                  \
    if (cols < V) /* tall: tiles of V rows */                                                 \
      for (; r0 + V <= rows && (r0 + V - 1) * cols + V <= total; r0 += V) {                   \
        _Pragma("GCC unroll 16") for (int i = 0; i < V; i++)                                  \
            memcpy(&r[i], src + (r0 + i) * cols, sizeof r[i]);                                \
        tile_##S(r);                                                                \
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
        tile_##S(r);                                                                \
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

POOL_CF_KERNELS(float, f32)
POOL_CF_KERNELS(double, f64)
POOL_CL_KERNELS(float, f32)
POOL_CL_KERNELS(double, f64)
POOL_TRANSPOSE(float, f32, vf_f32, vm_f32, 16, 4)
POOL_TRANSPOSE(double, f64, vf_f64, vm_f64, 8, 3)
POOL_TRANSPOSE(int32_t, i32, vi_f32, vm_f32, 16, 4)

/* ---- driver ---- */
/* How channels-first planes run forward: in place; transposed (narrow planes: rows shorter
 * than a chunk become columns); staged (short padded rows copied with their W padding, so
 * edge outputs are vector lanes too: 3x3 pad 1 on 56x56 ran 1.2x faster). A "flat" stride-1
 * variant (the plane staged with every padding, one 1-D chunk loop over the wide output)
 * measured no faster: the row bookkeeping it removes came back as the compaction pass. */
enum { M_DIRECT, M_TR, M_STAGED };

/* Workspace: [argmax: int32 per output (max)] [scales: OD + OH + OW (avg, sum)] then one slot
 * per thread (channels-first): a row scratch (average backward) and the mode's copies:
 * transposed x, y and argmax planes, or the staged plane. */
typedef struct pool_ctx {
  opf_case *c;
  pool_geom g;
  int max, mode;
  int vals; /* max forward without an input gradient: the values only, no argmax */
  size_t esz;
  int32_t *am;
  void *ds, *rs, *cs; /* per output axis scale (avg, sum) */
  size_t shared, slot, sa, sb; /* slot: row scratch, then parts of sa, sb and sc bytes */
  char *slots;
  int bwd;
} pool_ctx;

/* Elements of a staged plane: rows of W with the W padding on both sides. */
static size_t pool_staged_elems(const pool_geom *g) {
  return (size_t)(g->in[0] * g->in[1] * (g->in[2] + 2 * g->p[2]));
}

static int pool_mode(const pool_geom *g, size_t e) {
  if (g->cl) return M_DIRECT;
  if (g->out[2] < 16 && g->out[1] > g->out[2]) return M_TR;
  /* staged when the rows are short enough for the edges to matter and the copy stays in L2 */
  if (g->p[2] > 0 && g->out[2] < 512 && pool_staged_elems(g) * e <= (256u << 10)) return M_STAGED;
  return M_DIRECT;
}

/* Scratch of the channels-first average backward: the t plane of cf_spread_body, one row
 * per input row of the plane as the kernels see it (transposed: H and W swapped), each the
 * output row plus margins of K + 1. */
static size_t pool_row_elems(const pool_geom *g, int mode) {
  int tr = mode == M_TR;
  int64_t rows = g->in[0] * (tr ? g->in[2] : g->in[1]);
  int64_t pitch = (tr ? g->out[1] : g->out[2]) + 2 * ((tr ? g->k[1] : g->k[2]) + 1);
  return g->kind == PK_MAX ? 0 : (size_t)(rows * pitch);
}

/* Channels-first planes of one short row (1-D pooling of 4096x64x12: 262144 planes of 12)
 * paid a plane's set-up per 12 elements; an image's C rows run as one (C, W) plane instead
 * (the window has extent 1, stride 1 and no padding along the new rows, so every output is
 * the same; the argmax indices count within the bigger plane, forward and backward alike). */
enum { POOL_ROW_MERGE_W = 16, POOL_ROW_MERGE_MAX = 16384 };
static void pool_merge_rows(pool_geom *g) {
  if (g->cl || g->in[0] != 1 || g->in[1] != 1 || g->C < 2 || g->in[2] >= POOL_ROW_MERGE_W ||
      g->C * g->in[2] > POOL_ROW_MERGE_MAX)
    return;
  g->in[1] = g->out[1] = g->C;
  g->S *= g->C, g->OS *= g->C, g->C = 1;
}

static void pool_layout(const opf_case *c, pool_ctx *t) {
  pool_geom *g = &t->g;
  pool_resolve(c, g);
  pool_merge_rows(g);
  t->max = g->kind == PK_MAX;
  t->esz = opf_dtype_size(c->dtype);
  t->mode = pool_mode(g, t->esz);
  size_t e = t->esz, S = (size_t)g->S, OS = (size_t)g->OS;
  size_t nsc = (size_t)(g->out[0] + g->out[1] + g->out[2]);
  t->shared = t->max ? pool_align((size_t)(g->N * g->C) * OS * 4) : pool_align(nsc * e);
  t->sa = t->mode == M_TR ? pool_align(S * e) : t->mode == M_STAGED ? pool_align(pool_staged_elems(g) * e) : 0;
  t->sb = t->mode == M_TR ? pool_align(OS * e) : 0;
  size_t sc = t->mode == M_TR ? pool_align(OS * 4) : 0;
  t->slot = g->cl ? 64 : 64 + pool_align(pool_row_elems(g, t->mode) * e) + t->sa + t->sb + sc;
  char *ws = c->ws;
  t->am = t->max ? (int32_t *)ws : NULL;
  t->ds = t->max ? NULL : ws;
  t->rs = t->max ? NULL : ws + (size_t)g->out[0] * e;
  t->cs = t->max ? NULL : ws + (size_t)(g->out[0] + g->out[1]) * e;
  t->slots = ws ? ws + t->shared : NULL;
}

static int pool_infer(opf_case *c) {
  pool_geom g;
  int rc = pool_check(c, &g);
  if (rc) return rc;
  pool_ctx t;
  pool_layout(c, &t); /* c->ws is NULL here: only the sizes are used */
  c->ws_bytes = t.shared + (size_t)omp_get_max_threads() * t.slot;
  return OPF_OK;
}

static void pool_setup(opf_case *c, pool_ctx *t) {
  memset(t, 0, sizeof *t);
  t->c = c;
  pool_layout(c, t);
  const pool_geom *g = &t->g;
  if (t->max) return;
  void *sc[3] = {t->ds, t->rs, t->cs};
  for (int a = 0; a < 3; a++) {
    if (c->dtype == OPF_F32)
      pool_scale_f32(sc[a], g->out[a], g->in[a], g->s[a], g->p[a], g->k[a], g->kind, g->count_pad);
    else
      pool_scale_f64(sc[a], g->out[a], g->in[a], g->s[a], g->p[a], g->k[a], g->kind, g->count_pad);
  }
}

/* A channels-first plane as the kernels see it, direct or transposed (H and W swapped). */
static pool_view pool_view_of(const pool_ctx *t) {
  const pool_geom *g = &t->g;
  pool_view q = {g->in[0], g->in[1], g->in[2], g->out[0], g->out[1], g->out[2],
                 g->k[0],  g->k[1],  g->k[2],  g->s[0],   g->s[1],   g->s[2],
                 g->p[0],  g->p[1],  g->p[2],  g->in[1] * g->in[2], g->in[2], 1,
                 t->ds,    t->rs,    t->cs,    g->in[2],  0,        NULL, 0};
  if (t->mode == M_STAGED) q.pitch = g->in[2] + 2 * g->p[2], q.lead = g->p[2];
  if (t->mode == M_TR) {
    q.H = g->in[2], q.W = g->in[1], q.OH = g->out[2], q.OW = g->out[1];
    q.kh = g->k[2], q.kw = g->k[1], q.sh = g->s[2], q.sw = g->s[1], q.ph = g->p[2], q.pw = g->p[1];
    q.imr = 1, q.imc = g->in[2], q.pitch = g->in[1];
    q.rs = t->cs, q.cs = t->rs;
  }
  return q;
}

/* Transposes each of the d (rows x cols) slices of src into dst. */
static void transpose_slices(size_t e, const void *src, void *dst, int64_t d, int64_t rows,
                             int64_t cols) {
  for (int64_t i = 0; i < d; i++) {
    size_t off = (size_t)(i * rows * cols) * e;
    const char *s = (const char *)src + off;
    char *o = (char *)dst + off;
    if (e == 8) transpose_f64((const double *)s, (double *)o, rows, cols);
    else if (e == 4) transpose_f32((const float *)s, (float *)o, rows, cols);
  }
}

/* Largest slice of the next plane prefetched per output row (bytes); see pool_cf_items. */
enum { POOL_PF_ROW_MAX = 4096 };

/* Channels-first planes [lo, hi) with scratch slot k. */
static void pool_cf_items(void *ctx, int64_t lo, int64_t hi, int k) {
  const pool_ctx *t = ctx;
  opf_case *c = t->c;
  const pool_geom *g = &t->g;
  int f32 = c->dtype == OPF_F32, tr = t->mode == M_TR;
  size_t e = t->esz, S = (size_t)g->S, OS = (size_t)g->OS;
  int64_t D = g->in[0], H = g->in[1], W = g->in[2], OD = g->out[0], OH = g->out[1], OW = g->out[2];
  char *slot = t->slots + (size_t)k * t->slot;
  char *pa = slot + pool_align(pool_row_elems(g, t->mode) * e), *pb = pa + t->sa, *pc = pb + t->sb;
  pool_view q = pool_view_of(t);
  if (t->bwd && t->max) {
    int64_t st = pool_gather_step(g);
    if (st) pool_gather(c, g, t->am, st, lo, hi);
    else pool_scatter(c->dtype, c->gout[0].data, c->gin[0].data, t->am, g->S, g->OS, lo, hi);
    return;
  }
  for (int64_t pl = lo; pl < hi; pl++) {
    if (t->bwd) { /* average/sum backward: g plane in, dx plane out */
      const char *gp = (const char *)c->gout[0].data + pl * OS * e;
      char *dp = (char *)c->gin[0].data + pl * S * e;
      if (tr) transpose_slices(e, gp, pb, OD, OH, OW);
      const void *gs = tr ? (const void *)pb : gp;
      void *dx = tr ? (void *)pa : dp;
      if (f32) cf_spread_f32(gs, dx, (void *)slot, &q);
      else cf_spread_f64(gs, dx, (void *)slot, &q);
      if (tr) transpose_slices(e, pa, dp, D, W, H);
      continue;
    }
    const char *xp = (const char *)c->in[0].data + pl * S * e;
    char *yp = (char *)c->out[0].data + pl * OS * e;
    int32_t *ap = t->max && !t->vals ? t->am + pl * OS : NULL;
    /* the next plane, prefetched in slices, one per output row; not when a slice would be
     * longer than POOL_PF_ROW_MAX: a long row is a sequential stream the hardware prefetcher
     * follows by itself, and a burst of thousands of prefetches ahead of it only stalls it */
    const char *pf = pl + 1 < hi && (int64_t)(S * e) <= POOL_PF_ROW_MAX * OD * OH ? xp + S * e : NULL;
    q.pf = pf, q.pf_bytes = pf ? (int64_t)(S * e) : 0;
    if (t->mode == M_STAGED) {
      if (f32) stage_f32((const void *)xp, (void *)pa, D * H, W, g->p[2], t->max ? -INFINITY : 0);
      else stage_f64((const void *)xp, (void *)pa, D * H, W, g->p[2], t->max ? -INFINITY : 0);
    }
    if (tr) transpose_slices(e, xp, pa, D, H, W);
    const void *xs = t->mode == M_DIRECT ? (const void *)xp : pa;
    void *ys = tr ? (void *)pb : yp;
    int32_t *as = t->max && tr ? (int32_t *)pc : ap; /* transposed: ties need the argmax */
    if (f32) cf_plane_f32(xs, ys, as, &q, t->max, tr);
    else cf_plane_f64(xs, ys, as, &q, t->max, tr);
    if (tr) {
      transpose_slices(e, pb, yp, OD, OW, OH);
      if (ap)
        for (int64_t d = 0; d < OD; d++)
          transpose_i32((int32_t *)pc + d * OH * OW, ap + d * OH * OW, OW, OH);
    }
  }
}

/* Channels-last: forward over output rows (n, od, oh), average/sum backward over input rows
 * (n, id, ih), max backward over images. */
static void pool_cl_items(void *ctx, int64_t lo, int64_t hi, int k) {
  (void)k;
  const pool_ctx *t = ctx;
  opf_case *c = t->c;
  const pool_geom *g = &t->g;
  int f32 = c->dtype == OPF_F32;
  size_t e = t->esz;
  int64_t C = g->C, S = g->S, OS = g->OS;
  if (t->bwd && t->max) {
    int64_t st = pool_gather_step(g);
    if (st) pool_gather(c, g, t->am, st, lo, hi);
    else pool_scatter(c->dtype, c->gout[0].data, c->gin[0].data, t->am, S * C, OS * C, lo, hi);
    return;
  }
  int64_t R = t->bwd ? g->in[0] * g->in[1] : g->out[0] * g->out[1]; /* rows per image */
  int64_t RL = t->bwd ? g->in[2] * C : g->out[2] * C;               /* elements per row */
  for (int64_t it = lo; it < hi; it++) {
    int64_t n = it / R, r = it % R;
    int64_t a0 = r / (t->bwd ? g->in[1] : g->out[1]), a1 = r % (t->bwd ? g->in[1] : g->out[1]);
    if (t->bwd) {
      const char *gi = (const char *)c->gout[0].data + (size_t)(n * OS * C) * e;
      char *dr = (char *)c->gin[0].data + (size_t)(n * S * C + r * RL) * e;
      if (f32) cl_spread_row_f32((const void *)gi, (void *)dr, g, a0, a1, t->ds, t->rs, t->cs);
      else cl_spread_row_f64((const void *)gi, (void *)dr, g, a0, a1, t->ds, t->rs, t->cs);
      continue;
    }
    const char *xi = (const char *)c->in[0].data + (size_t)(n * S * C) * e;
    char *yr = (char *)c->out[0].data + (size_t)(n * OS * C + r * RL) * e;
    /* channels-last max keeps its argmax even when no backward follows: values-only
     * variants of cl_row (a compare-and-blend kernel, or the argmax kernel into a scratch
     * row) made GCC schedule every cl_row body worse (3x3 NHWC max 1.1-2x, k2 NHWC avg
     * 1.05-1.3x slower) */
    int32_t *ar = t->max ? t->am + n * OS * C + r * RL : NULL;
    if (f32) cl_row_f32((const void *)xi, (void *)yr, ar, g, a0, a1, t->ds, t->rs, t->cs);
    else cl_row_f64((const void *)xi, (void *)yr, ar, g, a0, a1, t->ds, t->rs, t->cs);
  }
}

static void pool_run(pool_ctx *t, int bwd) {
  const pool_geom *g = &t->g;
  t->bwd = bwd;
  int64_t elems = g->N * g->C * (g->S + g->OS);
  int64_t slots = (int64_t)((t->c->ws_bytes - t->shared) / t->slot);
  int64_t items = !g->cl || (bwd && t->max) ? g->N * (g->cl ? 1 : g->C)
                  : bwd                     ? g->N * g->in[0] * g->in[1]
                                            : g->N * g->out[0] * g->out[1];
  pool_run_items(items, elems, slots, g->cl ? pool_cl_items : pool_cf_items, t);
}

static int pool_forward(opf_case *c) {
  pool_ctx t;
  pool_setup(c, &t);
  t.vals = t.max && !c->gin[0].data; /* no backward follows (include/op.h) */
  pool_run(&t, 0);
  return OPF_OK;
}

static int pool_backward(opf_case *c) {
  pool_ctx t;
  pool_setup(c, &t);
  if (c->gin[0].data) pool_run(&t, 1);
  return OPF_OK;
}

/* ---- descriptors ---- */
#define POOL_PARAMS(LAYOUTS)                                                                   \
  {"kernel", OPF_P_LIST, 0, 1, 1 << 16, NULL,                                                  \
   "window size: one value for every spatial axis, or one per axis", "2"},                    \
      {"stride", OPF_P_LIST, 0, 0, 1 << 16, NULL,                                              \
       "stride: one value or one per axis; 0 = the kernel size", "0"},                         \
      {"pad", OPF_P_LIST, 0, 0, 1 << 15, NULL,                                                 \
       "implicit padding on each side (ignored by max; zeros for sum/avg), at most kernel/2",  \
       "0"},                                                                                   \
      POOL_LAYOUT_PARAM(LAYOUTS)
#define COUNT_PAD_PARAM                                                                        \
  {"count_include_pad", OPF_P_BOOL, 1, 0, 1, NULL,                                             \
   "divide by the full window volume (true) or by its unpadded elements (false)"}
#define POOL_X(HELP)                                                                           \
  .n_in = 1,                                                                                   \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,          \
          .help = HELP}},                                                                      \
  .n_out = 1, .out = {"y"}, .infer = pool_infer, .forward = pool_forward,                      \
  .backward = pool_backward, .reference = pool_reference, .flops = pool_flops,                 \
  .bytes = pool_bytes, .category = "nn.pool", .dtypes = OPF_DT_FLOAT, .abi = OPF_OP_ABI
#define X1_HELP "input (N, C, W), or (N, W, C) with layout=NWC"
#define X2_HELP "input (N, C, H, W), or (N, H, W, C) with layout=NHWC"
#define X3_HELP "input (N, C, D, H, W), or (N, D, H, W, C) with layout=NDHWC"

/* Shape sets. 1-D and 3-D follow the 2-D defaults: the standard window pair (2 stride 2;
 * 3 stride 1 pad 1) on a typical activation, channels-last variants, few-channel skewed
 * inputs; small entries cover every layout, stride, pad and per-axis variant with windows
 * small enough for max pooling's finite differences. */
#define POOL1_SHAPES                                                                           \
  {"standard", "x=32x64x4096 kernel=2 stride=2"},                                              \
      {"standard", "x=32x64x4096 kernel=3 stride=1 pad=1"},                                    \
      {"standard", "x=32x4096x64 kernel=2 stride=2 layout=NWC"},                               \
      {"standard", "x=32x4096x64 kernel=3 stride=1 pad=1 layout=NWC"},                         \
      {"skewed", "x=32x3x65536 kernel=2 stride=2"},                                            \
      {"skewed", "x=32x3x65536 kernel=3 stride=1 pad=1"},                                      \
      {"skewed", "x=4096x64x12 kernel=3 stride=1 pad=1"},                                      \
      {"small", "x=2x3x12 kernel=2 stride=2"}, {"small", "x=2x2x9 kernel=3 stride=1 pad=1"},    \
      {"small", "x=1x2x40 kernel=3 stride=1 pad=1"}, {"small", "x=1x2x37 kernel=3 stride=2 pad=1"}, \
      {"small", "x=1x1x23 kernel=4 stride=3 pad=2"}, {"small", "x=2x1x5 kernel=5 stride=2 pad=2"}, \
      {"small", "x=2x7x3 kernel=2 stride=2 layout=NWC"},                                       \
      {"small", "x=1x9x18 kernel=3 stride=1 pad=1 layout=NWC"},                                \
      {"small", "x=1x8x5 kernel=3 stride=3 pad=1 layout=NWC"},                                 \
      {"test", "x=5x7x1001 kernel=3 stride=2 pad=1"}, {"test", "x=3x5x613 kernel=2"},           \
      {"test", "x=3x4x333 kernel=4 stride=1 pad=2"},                                           \
      {"test", "x=3x611x37 kernel=3 stride=1 pad=1 layout=NWC"},                               \
      {"large", "x=64x256x8192 kernel=2 stride=2"}
#define POOL2_SHAPES                                                                           \
  {"standard", "x=32x64x56x56 kernel=2 stride=2"},                                             \
      {"standard", "x=32x64x56x56 kernel=3 stride=1 pad=1"},                                   \
      {"standard", "x=32x56x56x64 kernel=2 stride=2 layout=NHWC"},                             \
      {"standard", "x=32x56x56x64 kernel=3 stride=1 pad=1 layout=NHWC"},                       \
      {"skewed", "x=32x3x256x256 kernel=2 stride=2"},                                          \
      {"skewed", "x=32x3x256x256 kernel=3 stride=1 pad=1"},                                    \
      {"skewed", "x=32x3x10000x10 kernel=2 stride=2"},                                         \
      {"skewed", "x=32x3x10000x10 kernel=3 stride=1 pad=1"},                                   \
      {"small", "x=2x3x6x6 kernel=2 stride=2"}, {"small", "x=2x2x5x7 kernel=3 stride=1 pad=1"},  \
      {"small", "x=1x2x7x5 kernel=3 stride=2 pad=1"}, {"small", "x=1x1x9x4 kernel=2 stride=1"}, \
      {"small", "x=1x3x5x5 kernel=5 stride=3 pad=2"}, {"small", "x=2x1x16x3 kernel=2 stride=3"}, \
      {"small", "x=1x1x3x40 kernel=3 stride=1 pad=1"},                                         \
      {"small", "x=1x2x6x9 kernel=2,3 stride=1,2 pad=1,1"},                                    \
      {"small", "x=2x6x5x3 kernel=2 stride=2 layout=NHWC"},                                    \
      {"small", "x=1x5x4x20 kernel=3 stride=1 pad=1 layout=NHWC"},                             \
      {"test", "x=5x7x37x41 kernel=3 stride=2 pad=1"}, {"test", "x=3x5x61x33 kernel=2"},        \
      {"test", "x=2x3x1001x13 kernel=3 stride=1 pad=1"},                                       \
      {"test", "x=2x3x29x31 kernel=4 stride=3 pad=2"},                                         \
      {"test", "x=3x2x83x101 kernel=3 stride=1"}, {"test", "x=2x5x301x7 kernel=2 stride=2"},    \
      {"test", "x=3x37x41x35 kernel=3 stride=2 pad=1 layout=NHWC"},                            \
      {"large", "x=64x128x224x224 kernel=2 stride=2"}
#define POOL3_SHAPES                                                                           \
  {"standard", "x=8x64x16x56x56 kernel=2 stride=2"},                                           \
      {"standard", "x=8x64x16x56x56 kernel=3 stride=1 pad=1"},                                 \
      {"standard", "x=8x16x56x56x64 kernel=2 stride=2 layout=NDHWC"},                          \
      {"standard", "x=8x16x56x56x64 kernel=3 stride=1 pad=1 layout=NDHWC"},                    \
      {"skewed", "x=8x3x16x256x256 kernel=2 stride=2"},                                        \
      {"skewed", "x=8x64x16x56x56 kernel=1,3,3 stride=1,2,2 pad=0,1,1"},                       \
      {"skewed", "x=8x3x16x4000x10 kernel=3 stride=1 pad=1"},                                  \
      {"small", "x=2x2x4x4x4 kernel=2 stride=2"}, {"small", "x=1x2x3x5x4 kernel=3 stride=1 pad=1"}, \
      {"small", "x=1x1x5x4x19 kernel=3 stride=2 pad=1"},                                       \
      {"small", "x=1x1x3x3x36 kernel=3 stride=1 pad=1"},                                       \
      {"small", "x=1x2x4x9x3 kernel=1,2,3 stride=1,2,1 pad=0,1,1"},                            \
      {"small", "x=1x1x2x15x3 kernel=2 stride=1"},                                             \
      {"small", "x=2x4x4x3x3 kernel=2 stride=2 layout=NDHWC"},                                 \
      {"small", "x=1x3x4x3x17 kernel=3 stride=1 pad=1 layout=NDHWC"},                          \
      {"test", "x=2x3x9x37x41 kernel=3 stride=2 pad=1"}, {"test", "x=2x3x7x61x33 kernel=2"},    \
      {"test", "x=1x3x5x301x7 kernel=3 stride=1 pad=1"},                                       \
      {"test", "x=2x7x19x23x35 kernel=3 stride=2 pad=1 layout=NDHWC"},                         \
      {"large", "x=8x64x16x112x112 kernel=2 stride=2"}
#define AVG_SHAPES(...)                                                                        \
  {"small", __VA_ARGS__ " kernel=3 stride=2 pad=1 count_include_pad=false"}

OPPERF_OP(max_pool1d) = {
    .name = "max_pool1d",
    .summary = "1-D max pooling, NCW or NWC, window with stride and padding",
    POOL_X(X1_HELP),
    .n_params = 4,
    .params = {POOL_PARAMS("NCW|NWC")},
    .shapes = {POOL1_SHAPES},
};

OPPERF_OP(avg_pool1d) = {
    .name = "avg_pool1d",
    .summary = "1-D average pooling, NCW or NWC, window with stride and padding",
    POOL_X(X1_HELP),
    .n_params = 5,
    .params = {POOL_PARAMS("NCW|NWC"), COUNT_PAD_PARAM},
    .shapes = {POOL1_SHAPES, AVG_SHAPES("x=1x2x19"), AVG_SHAPES("x=2x11x3 layout=NWC"),
               {"test", "x=3x5x777 kernel=3 stride=1 pad=1 count_include_pad=false"}},
};

OPPERF_OP(sum_pool1d) = {
    .name = "sum_pool1d",
    .summary = "1-D sum pooling (LP pooling with p = 1), NCW or NWC, stride and padding",
    POOL_X(X1_HELP),
    .n_params = 4,
    .params = {POOL_PARAMS("NCW|NWC")},
    .shapes = {POOL1_SHAPES},
};

OPPERF_OP(max_pool2d) = {
    .name = "max_pool2d",
    .summary = "2-D max pooling, NCHW or NHWC, window with stride and padding",
    POOL_X(X2_HELP),
    .n_params = 4,
    .params = {POOL_PARAMS("NCHW|NHWC")},
    .shapes = {POOL2_SHAPES},
};

OPPERF_OP(avg_pool2d) = {
    .name = "avg_pool2d",
    .summary = "2-D average pooling, NCHW or NHWC, window with stride and padding",
    POOL_X(X2_HELP),
    .n_params = 5,
    .params = {POOL_PARAMS("NCHW|NHWC"), COUNT_PAD_PARAM},
    .shapes = {POOL2_SHAPES, AVG_SHAPES("x=1x2x5x6"), AVG_SHAPES("x=1x7x5x18 layout=NHWC"),
               {"small", "x=1x1x20x3 kernel=3 stride=1 pad=1 count_include_pad=false"},
               {"test", "x=2x5x37x41 kernel=3 stride=1 pad=1 count_include_pad=false"}},
};

OPPERF_OP(sum_pool2d) = {
    .name = "sum_pool2d",
    .summary = "2-D sum pooling (LP pooling with p = 1), NCHW or NHWC, stride and padding",
    POOL_X(X2_HELP),
    .n_params = 4,
    .params = {POOL_PARAMS("NCHW|NHWC")},
    .shapes = {POOL2_SHAPES},
};

OPPERF_OP(max_pool3d) = {
    .name = "max_pool3d",
    .summary = "3-D max pooling, NCDHW or NDHWC, window with stride and padding",
    POOL_X(X3_HELP),
    .n_params = 4,
    .params = {POOL_PARAMS("NCDHW|NDHWC")},
    .shapes = {POOL3_SHAPES},
};

OPPERF_OP(avg_pool3d) = {
    .name = "avg_pool3d",
    .summary = "3-D average pooling, NCDHW or NDHWC, window with stride and padding",
    POOL_X(X3_HELP),
    .n_params = 5,
    .params = {POOL_PARAMS("NCDHW|NDHWC"), COUNT_PAD_PARAM},
    .shapes = {POOL3_SHAPES, AVG_SHAPES("x=1x2x5x3x6"), AVG_SHAPES("x=1x3x5x4x3 layout=NDHWC"),
               {"test", "x=2x3x9x37x41 kernel=3 stride=1 pad=1 count_include_pad=false"}},
};

OPPERF_OP(sum_pool3d) = {
    .name = "sum_pool3d",
    .summary = "3-D sum pooling (LP pooling with p = 1), NCDHW or NDHWC, stride and padding",
    POOL_X(X3_HELP),
    .n_params = 4,
    .params = {POOL_PARAMS("NCDHW|NDHWC")},
    .shapes = {POOL3_SHAPES},
};

/* norm_common.h: run kernels shared by the normalisation operators (norm.c: layer, instance and
 * group norm; l2_normalization.c): sums over a contiguous run accumulated in double lanes,
 * and the one affine map out = a*g + b*(x - m) + d that every forward and backward pass of
 * these operators reduces to. Also per-thread workspace slots (lrn.c). */
#ifndef OPPERF_NN_NORM_COMMON_H
#define OPPERF_NN_NORM_COMMON_H

#include <math.h>
#include <string.h>

#include "conv_common.h"
#include "unary/vlibm.h" /* errno-free sqrt: vectorises to vsqrtpd in the loops here */

/* Sums over a run: independent lanes of the element type (four AVX-512 registers: enough
 * chains to hide the add latency, which a single running sum, a serial dependence GCC may
 * not reassociate, would not), flushed into double lanes every NC_BLK elements, so a float32
 * lane never adds more than NC_BLK/64 = 32 terms (relative error ~2e-6) while the loop runs
 * at full float32 width: converting every element to double halved the in-cache speed. */
#define NC_LANES(T) ((int)(256 / sizeof(T)))
#define NC_BLK 2048

/* Folding the lanes: GCC's own code for a pairwise fold of a lane array went through the
 * stack and scalar shuffles (missed store forwarding cost more than a row of 64 elements),
 * so the lanes are folded with vector-extension types: the element lanes (four vectors) into
 * two double vectors at every flush, and those horizontally once at the end. */
typedef float nc_vf __attribute__((vector_size(64)));
typedef double nc_vd __attribute__((vector_size(64)));
typedef float nc_vh __attribute__((vector_size(32)));
#define NC_ALIGNED __attribute__((aligned(64)))
#define NC_INLINE static inline __attribute__((always_inline))

NC_INLINE void nc_flush_f32(const float *l, nc_vd *d0, nc_vd *d1) {
  nc_vf v[4];
  memcpy(v, l, sizeof v);
  nc_vf s = (v[0] + v[1]) + (v[2] + v[3]);
  *d0 += __builtin_convertvector(__builtin_shufflevector(s, s, 0, 1, 2, 3, 4, 5, 6, 7), nc_vd);
  *d1 += __builtin_convertvector(__builtin_shufflevector(s, s, 8, 9, 10, 11, 12, 13, 14, 15),
                                 nc_vd);
}
NC_INLINE void nc_flush_f64(const double *l, nc_vd *d0, nc_vd *d1) {
  nc_vd v[4];
  memcpy(v, l, sizeof v);
  *d0 += v[0] + v[1];
  *d1 += v[2] + v[3];
}
NC_INLINE double nc_hsum(nc_vd a, nc_vd b) {
  nc_vd s = a + b;
  s += __builtin_shufflevector(s, s, 4, 5, 6, 7, 0, 1, 2, 3);
  s += __builtin_shufflevector(s, s, 2, 3, 0, 1, 4, 5, 6, 7);
  return s[0] + s[1];
}
/* Horizontal sums of one vector (the short-row kernels of norm.c). */
NC_INLINE double nc_vsum_f32(nc_vf v) {
  nc_vf s = v + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  s += __builtin_shufflevector(s, s, 4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15);
  s += __builtin_shufflevector(s, s, 2, 3, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return (double)s[0] + (double)s[1];
}
NC_INLINE double nc_vsum_f64(nc_vd v) { return nc_hsum(v, (nc_vd){0}); }
#define NC_FLUSH(l, d0, d1) _Generic((l)[0], float: nc_flush_f32, double: nc_flush_f64)(l, d0, d1)

/* (o1, o2) = sums over i < n of E1(i) and E2(i), expressions of the element type T. */
#define NC_SUM2(T, n, E1, E2, o1, o2)                                                          \
  do {                                                                                         \
    enum { NL_ = NC_LANES(T) };                                                                \
    nc_vd a0_ = {0}, a1_ = {0}, b0_ = {0}, b1_ = {0};                                          \
    double t1_ = 0, t2_ = 0;                                                                   \
    int64_t i_ = 0;                                                                            \
    while (i_ + NL_ <= (n)) {                                                                  \
      int64_t e_ = i_ + NC_BLK < (n) ? i_ + NC_BLK : (n);                                      \
      T l1_[NL_] NC_ALIGNED = {0}, l2_[NL_] NC_ALIGNED = {0};                                  \
      for (; i_ + NL_ <= e_; i_ += NL_)                                                        \
        for (int j_ = 0; j_ < NL_; j_++) l1_[j_] += E1(i_ + j_), l2_[j_] += E2(i_ + j_);       \
      NC_FLUSH(l1_, &a0_, &a1_);                                                               \
      NC_FLUSH(l2_, &b0_, &b1_);                                                               \
    }                                                                                          \
    for (; i_ < (n); i_++) t1_ += E1(i_), t2_ += E2(i_);                                       \
    (o1) = t1_ + nc_hsum(a0_, a1_);                                                            \
    (o2) = t2_ + nc_hsum(b0_, b1_);                                                            \
  } while (0)
#define NC_SUM1(T, n, E, out)                                                                  \
  do {                                                                                         \
    enum { NL_ = NC_LANES(T) };                                                                \
    nc_vd a0_ = {0}, a1_ = {0};                                                                \
    double t1_ = 0;                                                                            \
    int64_t i_ = 0;                                                                            \
    while (i_ + NL_ <= (n)) {                                                                  \
      int64_t e_ = i_ + NC_BLK < (n) ? i_ + NC_BLK : (n);                                      \
      T l1_[NL_] NC_ALIGNED = {0};                                                             \
      for (; i_ + NL_ <= e_; i_ += NL_)                                                        \
        for (int j_ = 0; j_ < NL_; j_++) l1_[j_] += E(i_ + j_);                                \
      NC_FLUSH(l1_, &a0_, &a1_);                                                               \
    }                                                                                          \
    for (; i_ < (n); i_++) t1_ += E(i_);                                                       \
    (out) = t1_ + nc_hsum(a0_, a1_);                                                           \
  } while (0)

/* Deviations are taken from tm, the mean rounded to the element type; the sums are then
 * corrected to the exact mean m in double: sum (x - m)^2 = sum (x - tm)^2 - n (m - tm)^2 and
 * sum g (x - m) = sum g (x - tm) - (m - tm) sum g. */
#define NC_X(i) (x[i])
#define NC_DEV2(i) ((x[i] - tm) * (x[i] - tm))
#define NC_XA(i) (xa[i])
#define NC_XB(i) (xb[i])
#define NC_DEVA(i) ((xa[i] - tma) * (xa[i] - tma))
#define NC_DEVB(i) ((xb[i] - tmb) * (xb[i] - tmb))
#define NC_G(i) (g[i])
#define NC_GDEV(i) (g[i] * (x[i] - tm))

#define NC_KERNELS(T, S)                                                                       \
  /* Mean and 1/sqrt(var + eps) of a run by two passes: the mean, then sum (x - mean)^2     \
   * while the run is still in L1/L2 (no cancellation, unlike sum x^2 - n mean^2, and no    \
   * division per element, unlike Welford). Inlined into the row loops of the callers. */   \
  NC_INLINE void nc_moments_body_##S(const T *restrict x, int64_t n, double eps, double *mean, \
                                     double *rstd) {                                          \
    double s, q;                                                                              \
    NC_SUM1(T, n, NC_X, s);                                                                   \
    const double m = s / (double)n;                                                           \
    const T tm = (T)m;                                                                        \
    NC_SUM1(T, n, NC_DEV2, q);                                                                \
    double v = q / (double)n - (m - (double)tm) * (m - (double)tm);                           \
    *mean = m;                                                                                \
    *rstd = 1 / sqrt((v > 0 ? v : 0) + eps); /* v < 0: rounding of a constant run */          \
  }                                                                                           \
  /* The same for two rows a and b in the same sweeps: for short rows the time goes into the \
   * dependent chain sum -> mean -> deviations -> variance of each row, and two rows' chains  \
   * interleave. */                                                                           \
  NC_INLINE void nc_moments2_body_##S(const T *restrict xa, const T *restrict xb, int64_t n,  \
                                      double eps, double *mean, double *rstd) {               \
    double sa, sb, qa, qb;                                                                    \
    NC_SUM2(T, n, NC_XA, NC_XB, sa, sb);                                                      \
    const double ma = sa / (double)n, mb = sb / (double)n;                                    \
    const T tma = (T)ma, tmb = (T)mb;                                                         \
    NC_SUM2(T, n, NC_DEVA, NC_DEVB, qa, qb);                                                  \
    double va = qa / (double)n - (ma - (double)tma) * (ma - (double)tma);                     \
    double vb = qb / (double)n - (mb - (double)tmb) * (mb - (double)tmb);                     \
    mean[0] = ma, mean[1] = mb;                                                               \
    rstd[0] = 1 / sqrt((va > 0 ? va : 0) + eps);                                              \
    rstd[1] = 1 / sqrt((vb > 0 ? vb : 0) + eps);                                              \
  }                                                                                           \
  OPF_VEC static inline void nc_moments_##S(const T *restrict x, int64_t n, double eps,       \
                                            double *mean, double *rstd) {                     \
    nc_moments_body_##S(x, n, eps, mean, rstd);                                               \
  }                                                                                           \
  /* sum of x^2 (l2 norms) */                                                                 \
  OPF_VEC static inline double nc_sumsq_##S(const T *restrict x, int64_t n) {                 \
    const T tm = 0;                                                                           \
    double q;                                                                                 \
    NC_SUM1(T, n, NC_DEV2, q);                                                                \
    return q;                                                                                 \
  }                                                                                           \
  /* *sg = sum g, *sgx = sum g (x - m) */                                                     \
  OPF_VEC static inline void nc_gsums_##S(const T *restrict g, const T *restrict x, int64_t n, \
                                          double m, double *sg, double *sgx) {                \
    const T tm = (T)m;                                                                        \
    double a, b;                                                                              \
    NC_SUM2(T, n, NC_G, NC_GDEV, a, b);                                                       \
    *sg = a;                                                                                  \
    *sgx = b - (m - (double)tm) * a;                                                          \
  }                                                                                           \
  /* out = a g + b (x - m) + d, or b (x - m) + d without g; in the element type */            \
  OPF_VEC static inline void nc_affine_##S(const T *restrict g, const T *restrict x,          \
                                           T *restrict out, int64_t n, double a, double b,    \
                                           double m, double d) {                              \
    const T ta = (T)a, tb = (T)b, tm = (T)m, td = (T)d;                                       \
    if (g)                                                                                    \
      for (int64_t i = 0; i < n; i++) out[i] = ta * g[i] + tb * (x[i] - tm) + td;             \
    else                                                                                      \
      for (int64_t i = 0; i < n; i++) out[i] = tb * (x[i] - tm) + td;                         \
  }

NC_KERNELS(float, f32)
NC_KERNELS(double, f64)

/* dtype dispatch of the run kernels on untyped pointers */
static inline void nc_moments(opf_dtype dt, const void *x, int64_t n, double eps, double *mean,
                              double *rstd) {
  if (dt == OPF_F32) nc_moments_f32(x, n, eps, mean, rstd);
  else nc_moments_f64(x, n, eps, mean, rstd);
}
static inline double nc_sumsq(opf_dtype dt, const void *x, int64_t n) {
  return dt == OPF_F32 ? nc_sumsq_f32(x, n) : nc_sumsq_f64(x, n);
}
static inline void nc_gsums(opf_dtype dt, const void *g, const void *x, int64_t n, double m,
                            double *sg, double *sgx) {
  if (dt == OPF_F32) nc_gsums_f32(g, x, n, m, sg, sgx);
  else nc_gsums_f64(g, x, n, m, sg, sgx);
}
static inline void nc_affine(opf_dtype dt, const void *g, const void *x, void *out, int64_t n,
                             double a, double b, double m, double d) {
  if (dt == OPF_F32) nc_affine_f32(g, x, out, n, a, b, m, d);
  else nc_affine_f64(g, x, out, n, a, b, m, d);
}

/* Cross-channel operators (l2_normalization's channel mode, lrn) work on blocks of blk
 * spatial positions of one sample across all C channels: per-position sums stay in cache
 * while each channel's run of the block is swept. Up to NC_BLK_MAX positions and NC_PLANE
 * bytes of data per block (a second sweep hits L2/L3). At (32, 64, 56, 56) a block is the
 * whole plane, so a sweep is one sequential stream: 512-position blocks (64 strided runs at
 * a time) took 1.4x the cycles of l2_normalization's channel mode there. At (32, 3, 10000,
 * 10) 4096-position blocks and whole planes measured the same; the cap bounds the slots. */
#define NC_PLANE (2048 * 1024)
#define NC_BLK_MAX 4096
static inline int64_t nc_plane_block(int64_t C, int64_t S, size_t e) {
  int64_t blk = (int64_t)(NC_PLANE / ((size_t)C * e)) / 16 * 16;
  if (blk < 64) blk = 64;
  if (blk > NC_BLK_MAX) blk = NC_BLK_MAX;
  return blk < S ? blk : S;
}

/* Per-thread scratch slots in the workspace: infer sizes them for omp_get_max_threads();
 * a run with more threads than slots stays on one thread rather than overflow them. */
static inline int64_t nc_slots_threads(const opf_case *c, size_t shared, size_t slot) {
  int64_t cap = slot ? (int64_t)((c->ws_bytes - shared) / slot) : 1;
  int64_t nt = omp_get_max_threads();
  return nt <= cap ? nt : 1;
}

/* opf_parallel_range with the chunk's thread index, for kernels that use a slot each. */
typedef void (*nc_range_fn)(int64_t lo, int64_t hi, int tid, void *ctx);
static inline void nc_parallel_slots(int64_t n, int64_t min_par, int64_t nt, nc_range_fn fn,
                                     void *ctx) {
  if (n < min_par || nt <= 1) {
    fn(0, n, 0, ctx);
    return;
  }
#pragma omp parallel num_threads((int)nt)
  {
    int k = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t chunk = (n + k - 1) / k;
    int64_t lo = (int64_t)t * chunk, hi = lo + chunk < n ? lo + chunk : n;
    if (lo < hi) fn(lo, hi, t, ctx);
  }
}

#endif

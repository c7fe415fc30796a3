/* pool_global.c: global max and average pooling, 1-D to 3-D, channels-first or channels-last:
 * y (N, C, 1...) (or (N, 1..., C)) is the max / mean of each channel's whole spatial extent.
 * Channels-first reduces each contiguous plane with several vector accumulators (threaded
 * over N*C planes); channels-last sweeps an image's rows into a C-long accumulator row,
 * vectorised along C (threaded over images and channel blocks). Max keeps the argmax (ties:
 * the first maximum in index order) for its backward scatter; avg backward broadcasts. */
#include "pool_common.h"

enum { G_ACC = 4 };    /* independent vector accumulators of a plane reduction */
enum { G_CBLK = 512 }; /* channels per item of a channels-last reduction */
enum { G_SHORT = 16 }; /* short channels-first planes reduced together (gshort) */

#define POOL_GLOBAL_KERNELS(T, S)                                                              \
  /* Max and argmax of x[0, n): G_ACC chunk accumulators (independent dependency chains),   \
   * the rest in chunks and one last chunk shifted back to end at n (max is idempotent; the \
   * revisited elements have smaller indices, so that chunk breaks ties by index), then the \
   * lanes are combined: the larger value, on a tie the smaller index. */                    \
  /* The lanes of gmax_run: per-lane max and argmax of x[0, n), n >= V, in *mo, *ao. */     \
  __attribute__((always_inline)) static inline void gmax_lanes_##S(const T *x, int64_t n,      \
                                                                   vf_##S *mo, vi_##S *ao) {  \
    enum { V = LANES_##S };                                                                   \
    const vi_##S lane = LANE_IDX_##S;                                                         \
    vf_##S m[G_ACC], m0;                                                                      \
    vi_##S a[G_ACC];                                                                          \
    memcpy(&m0, x, sizeof m0);                                                                \
    /* a NaN past x[0] starts its lane at -inf: the sequential max skips it (a NaN at x[0]   \
     * is the answer); left in, it kept every later element of its lane out */               \
    const vm_##S keep = (m0 == m0) | (IDX_MASK_##S(lane) == 0);                               \
    const vf_##S ninf = (vf_##S){0} - (T)INFINITY;                                            \
    m0 = (vf_##S)(((vm_##S)m0 & keep) | ((vm_##S)ninf & ~keep));                              \
    for (int k = 0; k < G_ACC; k++) m[k] = m0, a[k] = lane;                                   \
    int64_t i = 0;                                                                            \
    for (; i + G_ACC * V <= n; i += G_ACC * V)                                                \
      for (int k = 0; k < G_ACC; k++) {                                                       \
        vf_##S v;                                                                             \
        memcpy(&v, x + i + k * V, sizeof v);                                                  \
        pool_acc_##S(&m[k], &a[k], v, lane + (int32_t)(i + k * V), 0);                        \
      }                                                                                       \
    for (; i + V <= n; i += V) {                                                              \
      vf_##S v;                                                                               \
      memcpy(&v, x + i, sizeof v);                                                            \
      pool_acc_##S(&m[0], &a[0], v, lane + (int32_t)i, 0);                                    \
    }                                                                                         \
    if (i < n) {                                                                              \
      vf_##S v;                                                                               \
      memcpy(&v, x + n - V, sizeof v);                                                        \
      pool_acc_##S(&m[0], &a[0], v, lane + (int32_t)(n - V), 1);                              \
    }                                                                                         \
    for (int k = 1; k < G_ACC; k++) pool_acc_##S(&m[0], &a[0], m[k], a[k], 1);               \
    *mo = m[0], *ao = a[0];                                                                   \
  }                                                                                           \
  OPF_VEC static void gmax_run_##S(const T *x, int64_t n, T *y, int32_t *am) {                \
    enum { V = LANES_##S };                                                                   \
    T best = x[0];                                                                            \
    int64_t bi = 0;                                                                           \
    if (n < V) {                                                                              \
      for (int64_t i = 1; i < n; i++) pool_acc1_##S(&best, &bi, x[i], i, 0);                  \
      *y = best, *am = (int32_t)bi;                                                           \
      return;                                                                                 \
    }                                                                                         \
    const vi_##S lane = LANE_IDX_##S;                                                         \
    vf_##S m[1];                                                                              \
    vi_##S a[1];                                                                              \
    gmax_lanes_##S(x, n, &m[0], &a[0]);                                                       \
    /* across the lanes by halving rotations (a scalar loop over the lanes cost ~700       \
     * cycles a plane: GCC unrolls it into lane extracts) */                                  \
    const vm_##S lm = LANE_IDX_##S;                                                           \
    for (int w = V / 2; w >= 1; w /= 2) {                                                     \
      vf_##S m2 = __builtin_shuffle(m[0], (lm + w) & (V - 1));                                \
      vi_##S a2 = __builtin_shuffle(a[0], (lane + w) & (V - 1));                              \
      pool_acc_##S(&m[0], &a[0], m2, a2, 1);                                                  \
    }                                                                                         \
    *y = m[0][0], *am = a[0][0];                                                              \
  }                                                                                           \
  /* V planes of n >= V elements (8x2048x4x7x7: 16384 planes of 196) at once: each plane's  \
   * lanes as in gmax_run, then the V lane sets are reduced together, a transpose-reduce:   \
   * each step merges two vectors (halves of each plane's lane group from both, one        \
   * two-source shuffle each) into one holding twice the planes at half the lanes, so V    \
   * planes cost V-1 merges instead of V*log2(V) rotations; the last vector holds plane p's \
   * max and argmax in lane p. Ties keep the smaller index, as gmax_run. */                 \
  OPF_VEC static void gmaxv_##S(const T *x, int64_t n, T *restrict y, int32_t *restrict am) { \
    enum { V = LANES_##S };                                                                   \
    vf_##S m[V];                                                                              \
    vi_##S a[V];                                                                              \
    for (int p = 0; p < V; p++) gmax_lanes_##S(x + p * n, n, &m[p], &a[p]);                   \
    const vm_##S lm = LANE_IDX_##S;                                                           \
    const vi_##S li = LANE_IDX_##S;                                                           \
    for (int w = V / 2, cnt = V; w >= 1; w /= 2, cnt /= 2) {                                  \
      /* result lane i: lane i % w of the lower (lo) or upper (hi) half of plane group i / w \
       * of the two sources concatenated (groups of 2w lanes, the first source's first) */    \
      const vm_##S lom = lm / w * 2 * w + lm % w;                                             \
      const vi_##S loi = li / w * 2 * w + li % w;                                             \
      for (int q = 0; q < cnt / 2; q++) {                                                     \
        vf_##S lo = __builtin_shuffle(m[2 * q], m[2 * q + 1], lom);                           \
        vf_##S hi = __builtin_shuffle(m[2 * q], m[2 * q + 1], lom + w);                       \
        vi_##S alo = __builtin_shuffle(a[2 * q], a[2 * q + 1], loi);                          \
        vi_##S ahi = __builtin_shuffle(a[2 * q], a[2 * q + 1], loi + w);                      \
        pool_acc_##S(&lo, &alo, hi, ahi, 1);                                                  \
        m[q] = lo, a[q] = alo;                                                                \
      }                                                                                       \
    }                                                                                         \
    memcpy(y, &m[0], sizeof m[0]);                                                            \
    memcpy(am, &a[0], sizeof a[0]);                                                           \
  }                                                                                           \
  /* The whole vectors of x[0, n) summed in G_ACC vector accumulators, combined into one;     \
   * *done = the elements they cover (the caller adds the rest). */                         \
  static inline __attribute__((always_inline)) vf_##S gsum_vec_##S(const T *x, int64_t n,    \
                                                                  int64_t *done) {            \
    enum { V = LANES_##S };                                                                   \
    vf_##S acc[G_ACC] = {{0}};                                                                \
    int64_t i = 0;                                                                            \
    for (; i + G_ACC * V <= n; i += G_ACC * V)                                                \
      for (int k = 0; k < G_ACC; k++) {                                                       \
        vf_##S v;                                                                             \
        memcpy(&v, x + i + k * V, sizeof v);                                                  \
        acc[k] += v;                                                                          \
      }                                                                                       \
    for (; i + V <= n; i += V) {                                                              \
      vf_##S v;                                                                               \
      memcpy(&v, x + i, sizeof v);                                                            \
      acc[0] += v;                                                                            \
    }                                                                                         \
    *done = i;                                                                                \
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);                                             \
  }                                                                                           \
  /* Sums of V planes of n >= V elements (8x2048x4x7x7 average), times scale: each plane in \
   * G_ACC vector accumulators with its last n % V elements added to lane 0, then the V     \
   * vectors' lanes summed together (nn_lanesums; the 16 scalar lane adds per plane of      \
   * gsum_run were a third of the time at 196 elements). */                                  \
  OPF_VEC static void gsumv_##S(const T *x, int64_t n, T *restrict y, T scale) {             \
    enum { V = LANES_##S };                                                                   \
    vf_##S m[V];                                                                              \
    for (int p = 0; p < V; p++) {                                                             \
      const T *xp = x + p * n;                                                                \
      int64_t i;                                                                              \
      m[p] = gsum_vec_##S(xp, n, &i);                                                         \
      T tail = 0;                                                                             \
      for (; i < n; i++) tail += xp[i];                                                       \
      m[p][0] += tail;                                                                        \
    }                                                                                         \
    nn_lanesums_##S(m);                                                                       \
    m[0] *= scale;                                                                            \
    memcpy(y, &m[0], sizeof m[0]);                                                            \
  }                                                                                           \
  /* Sum of x[0, n) in G_ACC vector accumulators (the order differs from a serial sum only  \
   * by rounding). */                                                                         \
  OPF_VEC static T gsum_run_##S(const T *x, int64_t n) {                                      \
    enum { V = LANES_##S };                                                                   \
    int64_t i;                                                                                \
    vf_##S t = gsum_vec_##S(x, n, &i);                                                        \
    T s = 0;                                                                                  \
    for (int l = 0; l < V; l++) s += t[l];                                                    \
    for (; i < n; i++) s += x[i];                                                             \
    return s;                                                                                 \
  }                                                                                           \
  /* Planes shorter than a vector (4096x64x12: 262144 planes of 12), np of them from x:      \
   * G_SHORT planes at a time, their running max / sums in independent chains (one plane at  \
   * a time is a call and a serial chain of S dependent operations each). Max in index      \
   * order with a strict >, as gmax_run's scalar path: the first maximum wins. */            \
  OPF_VEC static void gshort_##S(const T *restrict x, int64_t S, int64_t np, T *restrict y,  \
                                 int32_t *restrict am, T scale) {                            \
    int64_t p = 0;                                                                            \
    for (; p + G_SHORT <= np; p += G_SHORT) {                                                 \
      const T *restrict xp = x + p * S;                                                       \
      T m[G_SHORT];                                                                           \
      int32_t a[G_SHORT];                                                                     \
      for (int j = 0; j < G_SHORT; j++) m[j] = am ? xp[j * S] : 0, a[j] = 0;                  \
      if (am) {                                                                               \
        for (int64_t k = 1; k < S; k++)                                                       \
          for (int j = 0; j < G_SHORT; j++) {                                                 \
            const T v = xp[j * S + k];                                                        \
            const int take = v > m[j];                                                        \
            a[j] = take ? (int32_t)k : a[j];                                                  \
            m[j] = take ? v : m[j];                                                           \
          }                                                                                   \
        for (int j = 0; j < G_SHORT; j++) y[p + j] = m[j], am[p + j] = a[j];                  \
      } else {                                                                                \
        for (int64_t k = 0; k < S; k++)                                                       \
          for (int j = 0; j < G_SHORT; j++) m[j] += xp[j * S + k];                            \
        for (int j = 0; j < G_SHORT; j++) y[p + j] = m[j] * scale;                            \
      }                                                                                       \
    }                                                                                         \
    for (; p < np; p++) {                                                                     \
      if (am) gmax_run_##S(x + p * S, S, y + p, am + p);                                      \
      else y[p] = gsum_run_##S(x + p * S, S) * scale;                                         \
    }                                                                                         \
  }                                                                                           \
  /* Channels [c0, c1) of a channels-last image of S rows of C: the rows swept into y (and  \
   * the argmax row, max) in increasing index order, so the first maximum wins. */           \
  OPF_VEC static void gcl_##S(const T *x, int64_t S, int64_t C, int64_t c0, int64_t c1,        \
                              T *restrict y, int32_t *restrict am, T scale) {                 \
    int64_t n = c1 - c0;                                                                      \
    T *restrict m = y + c0;                                                                   \
    if (am) {                                                                                 \
      enum { V = LANES_##S, GK = 4 };                                                         \
      int32_t *restrict a = am + c0;                                                          \
      const vi_##S lane = LANE_IDX_##S;                                                       \
      int64_t c = 0;                                                                          \
      /* GK vectors of channels kept in registers down all S rows (a running row in memory   \
       * cost a load and a store of the max and the argmax per tap: 32x7x7x2048 NHWC 1.3 ms) */ \
      for (; c + GK * V <= n; c += GK * V) {                                                  \
        vf_##S mv[GK];                                                                        \
        vi_##S av[GK];                                                                        \
        for (int k = 0; k < GK; k++)                                                          \
          mv[k] = (vf_##S){0} - (T)INFINITY, av[k] = lane + (int32_t)(c0 + c + k * V);         \
        for (int64_t s = 0; s < S; s++) {                                                     \
          const T *xr = x + s * C + c0 + c;                                                   \
          for (int k = 0; k < GK; k++) {                                                      \
            vf_##S v;                                                                         \
            memcpy(&v, xr + k * V, sizeof v);                                                 \
            pool_acc_##S(&mv[k], &av[k], v, lane + (int32_t)(s * C + c0 + c + k * V), 0);     \
          }                                                                                   \
        }                                                                                     \
        for (int k = 0; k < GK; k++)                                                          \
          memcpy(m + c + k * V, &mv[k], sizeof mv[k]), memcpy(a + c + k * V, &av[k], sizeof av[k]); \
      }                                                                                       \
      if (c < n) {                                                                            \
        for (int64_t j = c; j < n; j++) m[j] = (T)-INFINITY, a[j] = (int32_t)(c0 + j);        \
        for (int64_t s = 0; s < S; s++)                                                       \
          pool_tap_max_##S(x + s * C + c0 + c, m + c, a + c, n - c, (int32_t)(s * C + c0 + c)); \
      }                                                                                       \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t c = 0; c < n; c++) m[c] = 0;                                                 \
    for (int64_t s = 0; s < S; s++) {                                                         \
      const T *restrict xr = x + s * C + c0;                                                  \
      for (int64_t c = 0; c < n; c++) m[c] += xr[c];                                          \
    }                                                                                         \
    for (int64_t c = 0; c < n; c++) m[c] *= scale;                                            \
  }                                                                                           \
  /* Average backward: rows [r0, r1) of S*units rows of C elements, dx row = g row * scale  \
   * (C = 1 for channels-first planes, whose gradient is one value per plane). */            \
  OPF_VEC static void gspread_##S(const T *restrict g, T *restrict dx, int64_t S, int64_t C,  \
                                  int64_t r0, int64_t r1, T scale) {                          \
    if (C == 1) {                                                                             \
      for (int64_t u = r0 / S; u * S < r1; u++) { /* planes, clipped to the rows */          \
        int64_t a = u * S > r0 ? u * S : r0, b = (u + 1) * S < r1 ? (u + 1) * S : r1;         \
        T v = g[u] * scale;                                                                   \
        for (int64_t i = a; i < b; i++) dx[i] = v;                                            \
      }                                                                                       \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t r = r0; r < r1; r++) {                                                       \
      const T *restrict gr = g + r / S * C;                                                   \
      T *restrict d = dx + r * C;                                                             \
      for (int64_t c = 0; c < C; c++) d[c] = gr[c] * scale;                                   \
    }                                                                                         \
  }

POOL_GLOBAL_KERNELS(float, f32)
POOL_GLOBAL_KERNELS(double, f64)

#ifdef OPF_X86
#include <immintrin.h>
/* 16 float32 planes of n >= 16 (gmaxv's job) in two passes, AVX-512: the maxima first, one
 * vmaxps per vector (the running argmax of gmax_lanes cost a compare, two blends and an index
 * add per vector) and the same transpose-reduce on values only; then each plane's argmax as
 * the smallest index holding its maximum (a compare and a masked index minimum per vector,
 * over the plane again, now in L1). That is gmax_run's answer: the first maximum in index
 * order (+0 and -0 compare equal there as here). NaN: vmaxps(v, m) keeps m for a NaN v, as
 * gmax_run ignores later NaNs; a NaN among a plane's first 16 elements (where gmax_run's lanes
 * start) sends that plane to gmax_run. */
__attribute__((target("avx512f"))) static void gmax16_f32_avx512(const float *x, int64_t n,
                                                                  float *restrict y,
                                                                  int32_t *restrict am) {
  __m512 m[16];
  unsigned nanp = 0;
  for (int p = 0; p < 16; p++) {
    const float *xp = x + p * n;
    __m512 a0 = _mm512_loadu_ps(xp), a1 = a0, a2 = a0, a3 = a0;
    nanp |= (unsigned)(_mm512_cmp_ps_mask(a0, a0, _CMP_UNORD_Q) != 0) << p;
    int64_t i = 16;
    for (; i + 64 <= n; i += 64) {
      a0 = _mm512_max_ps(_mm512_loadu_ps(xp + i), a0);
      a1 = _mm512_max_ps(_mm512_loadu_ps(xp + i + 16), a1);
      a2 = _mm512_max_ps(_mm512_loadu_ps(xp + i + 32), a2);
      a3 = _mm512_max_ps(_mm512_loadu_ps(xp + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16) a0 = _mm512_max_ps(_mm512_loadu_ps(xp + i), a0);
    if (i < n) a1 = _mm512_max_ps(_mm512_loadu_ps(xp + n - 16), a1);
    m[p] = _mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3));
  }
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (int w = 8, cnt = 16; w >= 1; w /= 2, cnt /= 2) { /* as gmaxv: lane i of the merge of */
    const __m512i lo = _mm512_add_epi32(                 /* groups of 2w lanes: i / w * 2w + */
        _mm512_mullo_epi32(_mm512_srli_epi32(lane, __builtin_ctz((unsigned)w)), /* i % w   */
                           _mm512_set1_epi32(2 * w)),
        _mm512_and_si512(lane, _mm512_set1_epi32(w - 1)));
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(w));
    for (int q = 0; q < cnt / 2; q++)
      m[q] = _mm512_max_ps(_mm512_permutex2var_ps(m[2 * q], lo, m[2 * q + 1]),
                           _mm512_permutex2var_ps(m[2 * q], hi, m[2 * q + 1]));
  }
  float mv[16];
  _mm512_storeu_ps(mv, m[0]);
  for (int p = 0; p < 16; p++) {
    const float *xp = x + p * n;
    int32_t k0;
    if (nanp >> p & 1) {
      gmax_run_f32(xp, n, y + p, am ? am + p : &k0);
      continue;
    }
    if (!am && mv[p] != 0.0f) { /* values only: vmaxps returns one of its operands, and a */
      y[p] = mv[p];             /* nonzero maximum has the bits of every element equal to it */
      continue;
    }
    const __m512 b = _mm512_set1_ps(mv[p]);
    __m512i best = _mm512_set1_epi32(INT32_MAX), idx = lane;
    const __m512i step = _mm512_set1_epi32(16);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16, idx = _mm512_add_epi32(idx, step))
      best = _mm512_mask_min_epi32(best, _mm512_cmp_ps_mask(_mm512_loadu_ps(xp + i), b, _CMP_EQ_OQ),
                                   best, idx);
    if (i < n)
      best = _mm512_mask_min_epi32(
          best, _mm512_cmp_ps_mask(_mm512_loadu_ps(xp + n - 16), b, _CMP_EQ_OQ), best,
          _mm512_add_epi32(lane, _mm512_set1_epi32((int32_t)(n - 16))));
    const int32_t k = _mm512_reduce_min_epi32(best);
    if (am) am[p] = k;
    y[p] = xp[k]; /* (a zero maximum: the first zero's sign, as gmax_run) */
  }
}

/* One long float32 plane (n >= G_LONG: 32x3x65536 NCW, 8x64x16x56x56 NCDHW) in one pass,
 * AVX-512: blocks of G_LBLK elements reduced with vmaxps only (one operation per vector, so
 * the pass runs at the memory's pace); a block whose maximum beats the running one strictly
 * is scanned again, from L1, for the first index of that maximum. The strict comparison
 * keeps the first maximum in index order, gmax_run's answer; later NaNs are ignored as
 * there (vmaxps(v, m) keeps m), and a NaN among the first 16 elements sends the plane to
 * gmax_run. */
enum { G_LONG = 1024, G_LBLK = 2048 };
__attribute__((target("avx512f"))) static void gmax_long_f32_avx512(const float *x, int64_t n,
                                                                     float *y, int32_t *am) {
  const __m512 x0 = _mm512_loadu_ps(x);
  if (_mm512_cmp_ps_mask(x0, x0, _CMP_UNORD_Q)) {
    int32_t t;
    gmax_run_f32(x, n, y, am ? am : &t);
    return;
  }
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  float best = -INFINITY;
  int64_t bi = -1;
  int found = 0;
  for (int64_t b0 = 0; b0 < n; b0 += G_LBLK) {
    const int64_t len = n - b0 < G_LBLK ? n - b0 : G_LBLK;
    const float *xb = x + b0;
    __m512 a0 = ninf, a1 = ninf, a2 = ninf, a3 = ninf;
    int64_t i = 0;
    for (; i + 64 <= len; i += 64) {
      a0 = _mm512_max_ps(_mm512_loadu_ps(xb + i), a0);
      a1 = _mm512_max_ps(_mm512_loadu_ps(xb + i + 16), a1);
      a2 = _mm512_max_ps(_mm512_loadu_ps(xb + i + 32), a2);
      a3 = _mm512_max_ps(_mm512_loadu_ps(xb + i + 48), a3);
    }
    for (; i < len; i += 16) {
      const __mmask16 m = len - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (len - i)) - 1);
      a0 = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, m, xb + i), a0);
    }
    const float bm = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3)));
    if (found && !(bm > best)) continue;
    found = 1;
    if (!am && bm != 0.0f) { /* values only: no index needed (see gmax16_f32_avx512) */
      best = bm;
      continue;
    }
    const __m512 b = _mm512_set1_ps(bm);
    for (i = 0; i < len; i += 16) {
      const __mmask16 m = len - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (len - i)) - 1);
      const __mmask16 eq = _mm512_mask_cmp_ps_mask(m, _mm512_loadu_ps(xb + i), b, _CMP_EQ_OQ);
      if (eq) {
        bi = b0 + i + __builtin_ctz((unsigned)eq);
        break;
      }
    }
    best = bm;
  }
  /* values only with a nonzero maximum: best; else the element (a zero's sign: the first) */
  *y = am || best == 0.0f ? x[bi] : best;
  if (am) *am = (int32_t)bi;
}
#define GMAX16_AVX512() __builtin_cpu_supports("avx512f")
#else
#define GMAX16_AVX512() 0
enum { G_LONG = 1024 };
static void gmax16_f32_avx512(const float *x, int64_t n, float *y, int32_t *am) {
  int32_t t[16];
  gmaxv_f32(x, n, y, am ? am : t);
}
static void gmax_long_f32_avx512(const float *x, int64_t n, float *y, int32_t *am) {
  int32_t t;
  gmax_run_f32(x, n, y, am ? am : &t);
}
#endif

typedef struct gpool_ctx {
  opf_case *c;
  pool_geom g;
  int bwd;
  int64_t cblk; /* channels-last channel blocks per image */
} gpool_ctx;

static int gpool_infer(opf_case *c) {
  pool_geom g;
  int rc = pool_check(c, &g);
  if (rc) return rc;
  c->ws_bytes = g.kind == PK_MAX ? pool_align((size_t)(g.N * g.C) * 4) : 0;
  return OPF_OK;
}

static void gpool_items(void *ctx, int64_t lo, int64_t hi, int k) {
  (void)k;
  const gpool_ctx *t = ctx;
  opf_case *c = t->c;
  const pool_geom *g = &t->g;
  int f32 = c->dtype == OPF_F32, max = g->kind == PK_MAX;
  size_t e = opf_dtype_size(c->dtype);
  int64_t S = g->S, C = g->C;
  int32_t *am = c->ws;
  /* no input gradient, so no backward follows: the AVX-512 float32 kernels skip the argmax
   * (the values are the same bits) */
  int32_t *am16 = c->gin[0].data ? am : NULL;
  double sc = 1.0 / (double)S;
  if (t->bwd) {
    if (max) { /* units [lo, hi): planes, or images (channels-last) */
      pool_scatter(c->dtype, c->gout[0].data, c->gin[0].data, am, g->cl ? S * C : S,
                   g->cl ? C : 1, lo, hi);
    } else { /* rows [lo, hi) of C (channels-last) or 1 */
      int64_t w = g->cl ? C : 1;
      if (f32) gspread_f32(c->gout[0].data, c->gin[0].data, S, w, lo, hi, (float)sc);
      else gspread_f64(c->gout[0].data, c->gin[0].data, S, w, lo, hi, sc);
    }
    return;
  }
  const char *x = c->in[0].data;
  char *y = c->out[0].data;
  if (!g->cl && S < (f32 ? LANES_f32 : LANES_f64)) {
    const char *xp = x + (size_t)(lo * S) * e;
    if (f32) gshort_f32((const void *)xp, S, hi - lo, (float *)y + lo, max ? am + lo : NULL, (float)sc);
    else gshort_f64((const void *)xp, S, hi - lo, (double *)y + lo, max ? am + lo : NULL, sc);
    return;
  }
  int64_t it = lo;
  if (!g->cl && !max && S < G_LONG) { /* whole groups of a vector's lanes in planes (gsumv) */
    const int64_t V = f32 ? LANES_f32 : LANES_f64;
    for (; S >= V && it + V <= hi; it += V) {
      const void *xp = x + (size_t)(it * S) * e;
      if (f32) gsumv_f32(xp, S, (float *)y + it, (float)sc);
      else gsumv_f64(xp, S, (double *)y + it, sc);
    }
  }
  if (!g->cl && max) { /* whole groups of a vector's lanes in planes (gmaxv) */
    const int64_t V = f32 ? LANES_f32 : LANES_f64;
    const int v512 = f32 && GMAX16_AVX512();
    if (v512 && S >= G_LONG) { /* long planes: one pass each */
      for (; it < hi; it++)
        gmax_long_f32_avx512((const float *)x + it * S, S, (float *)y + it, am16 ? am16 + it : NULL);
      return;
    }
    for (; S >= V && it + V <= hi; it += V) {
      const void *xp = x + (size_t)(it * S) * e;
      if (v512) gmax16_f32_avx512(xp, S, (float *)y + it, am16 ? am16 + it : NULL);
      else if (f32) gmaxv_f32(xp, S, (float *)y + it, am + it);
      else gmaxv_f64(xp, S, (double *)y + it, am + it);
    }
  }
  for (; it < hi; it++) {
    if (g->cl) { /* image n, channel block b */
      int64_t n = it / t->cblk, b = it % t->cblk;
      int64_t c0 = b * G_CBLK, c1 = c0 + G_CBLK < C ? c0 + G_CBLK : C;
      const char *xi = x + (size_t)(n * S * C) * e;
      char *yi = y + (size_t)(n * C) * e;
      int32_t *ai = max ? am + n * C : NULL;
      if (f32) gcl_f32((const void *)xi, S, C, c0, c1, (void *)yi, ai, (float)sc);
      else gcl_f64((const void *)xi, S, C, c0, c1, (void *)yi, ai, sc);
      continue;
    }
    const char *xp = x + (size_t)(it * S) * e;
    if (max) {
      if (f32) gmax_run_f32((const void *)xp, S, (float *)y + it, am + it);
      else gmax_run_f64((const void *)xp, S, (double *)y + it, am + it);
    } else if (f32) {
      ((float *)y)[it] = gsum_run_f32((const void *)xp, S) * (float)sc;
    } else {
      ((double *)y)[it] = gsum_run_f64((const void *)xp, S) * sc;
    }
  }
}

static void gpool_run(opf_case *c, int bwd) {
  gpool_ctx t = {.c = c, .bwd = bwd};
  pool_resolve(c, &t.g);
  const pool_geom *g = &t.g;
  t.cblk = (g->C + G_CBLK - 1) / G_CBLK;
  int64_t items = bwd ? (g->kind == PK_MAX ? g->N * (g->cl ? 1 : g->C) : g->N * g->S * (g->cl ? 1 : g->C))
                      : g->N * (g->cl ? t.cblk : g->C);
  pool_run_items(items, g->N * g->C * g->S, omp_get_max_threads(), gpool_items, &t);
}

static int gpool_forward(opf_case *c) {
  gpool_run(c, 0);
  return OPF_OK;
}

static int gpool_backward(opf_case *c) {
  if (c->gin[0].data) gpool_run(c, 1);
  return OPF_OK;
}

#define GPOOL_X(HELP)                                                                          \
  .n_in = 1,                                                                                   \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,          \
          .help = HELP}},                                                                      \
  .n_out = 1, .out = {"y"}, .infer = gpool_infer, .forward = gpool_forward,                    \
  .backward = gpool_backward, .reference = pool_reference, .flops = pool_flops,                \
  .bytes = pool_bytes, .category = "nn.pool", .dtypes = OPF_DT_FLOAT, .abi = OPF_OP_ABI,      \
  .n_params = 1
#define G1_HELP "input (N, C, W), or (N, W, C) with layout=NWC; y is (N, C, 1) or (N, 1, C)"
#define G2_HELP "input (N, C, H, W), or (N, H, W, C) with layout=NHWC; y keeps the rank"
#define G3_HELP "input (N, C, D, H, W), or (N, D, H, W, C) with layout=NDHWC; y keeps the rank"
#define G1_SHAPES                                                                              \
  {"standard", "x=32x64x4096"}, {"standard", "x=32x4096x64 layout=NWC"},                       \
      {"skewed", "x=32x3x65536"}, {"skewed", "x=4096x64x12"},                                  \
      {"small", "x=2x3x7"}, {"small", "x=1x2x40"}, {"small", "x=3x2x1"},                       \
      {"small", "x=2x5x3 layout=NWC"}, {"small", "x=1x4x20 layout=NWC"},                       \
      {"test", "x=5x7x1001"}, {"test", "x=3x611x37 layout=NWC"}, {"large", "x=64x256x8192"}
#define G2_SHAPES                                                                              \
  {"standard", "x=32x64x56x56"}, {"standard", "x=32x2048x7x7"},                                \
      {"standard", "x=32x56x56x64 layout=NHWC"}, {"standard", "x=32x7x7x2048 layout=NHWC"},    \
      {"skewed", "x=32x3x256x256"}, {"skewed", "x=32x3x10000x10"},                             \
      {"small", "x=2x3x4x5"}, {"small", "x=1x2x7x7"}, {"small", "x=1x1x9x4"},                  \
      {"small", "x=2x3x4x3 layout=NHWC"}, {"small", "x=1x3x2x20 layout=NHWC"},                 \
      {"test", "x=5x7x37x41"}, {"test", "x=3x37x41x35 layout=NHWC"},                           \
      {"test", "x=2x3x5x1100 layout=NHWC"}, {"large", "x=64x128x112x112"}
#define G3_SHAPES                                                                              \
  {"standard", "x=8x64x16x56x56"}, {"standard", "x=8x16x56x56x64 layout=NDHWC"},               \
      {"skewed", "x=8x3x16x256x256"}, {"skewed", "x=8x2048x4x7x7"},                            \
      {"small", "x=2x3x3x4x5"}, {"small", "x=1x2x2x3x3 layout=NDHWC"},                         \
      {"small", "x=1x1x2x3x20 layout=NDHWC"}, {"small", "x=1x2x1x1x17"},                       \
      {"test", "x=2x5x9x37x41"}, {"test", "x=2x7x19x23x35 layout=NDHWC"},                      \
      {"large", "x=8x64x16x112x112"}

OPPERF_OP(global_max_pool1d) = {
    .name = "global_max_pool1d",
    .summary = "1-D global max pooling: max over W per channel, NCW or NWC",
    GPOOL_X(G1_HELP),
    .params = {POOL_LAYOUT_PARAM("NCW|NWC")},
    .shapes = {G1_SHAPES},
};

OPPERF_OP(global_avg_pool1d) = {
    .name = "global_avg_pool1d",
    .summary = "1-D global average pooling: mean over W per channel, NCW or NWC",
    GPOOL_X(G1_HELP),
    .params = {POOL_LAYOUT_PARAM("NCW|NWC")},
    .shapes = {G1_SHAPES},
};

OPPERF_OP(global_max_pool2d) = {
    .name = "global_max_pool2d",
    .summary = "2-D global max pooling: max over (H, W) per channel, NCHW or NHWC",
    GPOOL_X(G2_HELP),
    .params = {POOL_LAYOUT_PARAM("NCHW|NHWC")},
    .shapes = {G2_SHAPES},
};

OPPERF_OP(global_avg_pool2d) = {
    .name = "global_avg_pool2d",
    .summary = "2-D global average pooling: mean over (H, W) per channel, NCHW or NHWC",
    GPOOL_X(G2_HELP),
    .params = {POOL_LAYOUT_PARAM("NCHW|NHWC")},
    .shapes = {G2_SHAPES},
};

OPPERF_OP(global_max_pool3d) = {
    .name = "global_max_pool3d",
    .summary = "3-D global max pooling: max over (D, H, W) per channel, NCDHW or NDHWC",
    GPOOL_X(G3_HELP),
    .params = {POOL_LAYOUT_PARAM("NCDHW|NDHWC")},
    .shapes = {G3_SHAPES},
};

OPPERF_OP(global_avg_pool3d) = {
    .name = "global_avg_pool3d",
    .summary = "3-D global average pooling: mean over (D, H, W) per channel, NCDHW or NDHWC",
    GPOOL_X(G3_HELP),
    .params = {POOL_LAYOUT_PARAM("NCDHW|NDHWC")},
    .shapes = {G3_SHAPES},
};

/* vsort.c: AVX-512 sorts of unsigned 32- and 64-bit keys (see vsort.h): bitonic networks over
 * up to 16 registers (256 keys of 32 bits, 128 of 64) for short arrays and quicksort leaves,
 * and a quicksort whose partition compresses each vector into its < pivot and >= pivot lanes
 * (register compress, then one plain and one masked store: the compress-to-memory form is
 * microcoded on AMD Zen 4). Many equal keys: a partition that leaves nothing below the pivot
 * (the pivot is the minimum) is redone at pivot + 1, which sets the run of minima aside; all
 * keys equal ends the range. Recursion deeper than 2 log2(n) finishes with the radix sort. */
#include "sort/vsort.h"

#include "sort/sort_common.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define VS_T __attribute__((target("avx512f,popcnt")))
#define VS_I __attribute__((target("avx512f,popcnt"), always_inline)) static inline

/* Lanes with bit d of their index set (they take the max of a compare-exchange at lane
 * distance d). */
VS_I uint32_t vs_upper(int d) {
  return d == 1 ? 0xAAAAu : d == 2 ? 0xCCCCu : d == 4 ? 0xF0F0u : 0xFF00u;
}

/* ---- per-width primitives: w64 (8 lanes of 64 bits) and w32 (16 of 32); B the bits, MT
 * the mask type, V the lanes ---- */
#define VS_PRIM(W, B, MT, V)                                                                  \
  VS_I __m512i W##_min(__m512i a, __m512i b) { return _mm512_min_epu##B(a, b); }              \
  VS_I __m512i W##_max(__m512i a, __m512i b) { return _mm512_max_epu##B(a, b); }              \
  VS_I __m512i W##_perm(__m512i v, __m512i ix) { return _mm512_permutexvar_epi##B(ix, v); }   \
  VS_I __m512i W##_blend(uint32_t m, __m512i a, __m512i b) {                                  \
    return _mm512_mask_mov_epi##B(a, (MT)m, b);                                               \
  }                                                                                           \
  VS_I uint32_t W##_lanes(int64_t cnt) {                                                      \
    return cnt >= V ? (uint32_t)((1ull << V) - 1) : cnt <= 0 ? 0u : (1u << cnt) - 1;          \
  }                                                                                           \
  VS_I __m512i W##_load(const void *p, int64_t cnt) { /* masked: the rest the largest key */ \
    return _mm512_mask_loadu_epi##B(_mm512_set1_epi##B(-1), (MT)W##_lanes(cnt), p);           \
  }                                                                                           \
  VS_I void W##_store(void *p, int64_t cnt, __m512i v) {                                      \
    _mm512_mask_storeu_epi##B(p, (MT)W##_lanes(cnt), v);                                      \
  }                                                                                           \
  VS_I __m512i W##_loadu(const void *p) { return _mm512_loadu_si512(p); }                     \
  VS_I void W##_storeu(void *p, __m512i v) { _mm512_storeu_si512(p, v); }                     \
  VS_I uint32_t W##_lt(__m512i v, __m512i p) { return _mm512_cmplt_epu##B##_mask(v, p); }     \
  VS_I __m512i W##_compress(uint32_t m, __m512i v) { return _mm512_maskz_compress_epi##B((MT)m, v); } \
  VS_I __m512i W##_set1(uint64_t x) { return _mm512_set1_epi##B(x); }                         \
  VS_I uint64_t W##_hmin(__m512i v) { return _mm512_reduce_min_epu##B(v); }                   \
  VS_I uint64_t W##_hmax(__m512i v) { return _mm512_reduce_max_epu##B(v); }
VS_PRIM(w64, 64, __mmask8, 8)
VS_PRIM(w32, 32, __mmask16, 16)
#undef VS_PRIM
/* lane indices xor x */
VS_I __m512i w64_xidx(int x) {
  return _mm512_xor_si512(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(x));
}
VS_I __m512i w32_xidx(int x) {
  return _mm512_xor_si512(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                          _mm512_set1_epi32(x));
}

/* The sorts for one width W (lanes V, word T, radix fall-back RADIX(a, tmp, n) returning the
 * buffer that holds the result). */
#define VS_DEF(W, T, V, RADIX)                                                                \
  /* compare-exchange of each lane with lane ^ x: lanes in um keep the max */                 \
  VS_I __m512i W##_cx(__m512i v, int x, uint32_t um) {                                        \
    const __m512i o = W##_perm(v, W##_xidx(x));                                               \
    return W##_blend(um, W##_min(v, o), W##_max(v, o));                                       \
  }                                                                                           \
  /* Bitonic sort of R registers (R * V keys) into ascending order: for each block size k a   \
   * flip stage (key e against e ^ (k-1)), then half-cleaners at k/4 .. 1; all ascending. */   \
  VS_I void W##_net(__m512i *v, const int R) {                                                \
    const int N = R * V;                                                                      \
    _Pragma("GCC unroll 16") for (int k = 2; k <= N; k *= 2) {                                \
      if (k <= V) {                                                                           \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) v[r] = W##_cx(v[r], k - 1, vs_upper(k / 2)); \
      } else {                                                                                \
        const int kr = k / V;                                                                 \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                \
          const int p = r ^ (kr - 1);                                                         \
          if (p > r) {                                                                        \
            const __m512i y = W##_perm(v[p], W##_xidx(V - 1));                                \
            const __m512i mn = W##_min(v[r], y), mx = W##_max(v[r], y);                       \
            v[r] = mn;                                                                        \
            v[p] = W##_perm(mx, W##_xidx(V - 1));                                             \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
      _Pragma("GCC unroll 16") for (int d = k / 4; d >= 1; d /= 2) {                          \
        if (d >= V) {                                                                         \
          const int dr = d / V;                                                               \
          _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                              \
            if (!(r & dr)) {                                                                  \
              const __m512i mn = W##_min(v[r], v[r | dr]), mx = W##_max(v[r], v[r | dr]);     \
              v[r] = mn, v[r | dr] = mx;                                                      \
            }                                                                                 \
          }                                                                                   \
        } else {                                                                              \
          _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) v[r] = W##_cx(v[r], d, vs_upper(d)); \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  VS_I void W##_netn(T *a, int64_t n, const int R) {                                          \
    __m512i v[16];                                                                            \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) v[r] = W##_load(a + r * V, n - r * V); \
    W##_net(v, R);                                                                            \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) W##_store(a + r * V, n - r * V, v[r]); \
  }                                                                                           \
  /* n <= 16 V keys: the network of the smallest power-of-two register count, padded with    \
   * the largest key (never stored back). */                                                  \
  VS_T static void W##_small(T *a, int64_t n) {                                               \
    if (n <= 1) return;                                                                       \
    if (n <= V) W##_netn(a, n, 1);                                                            \
    else if (n <= 2 * V) W##_netn(a, n, 2);                                                   \
    else if (n <= 4 * V) W##_netn(a, n, 4);                                                   \
    else if (n <= 8 * V) W##_netn(a, n, 8);                                                   \
    else W##_netn(a, n, 16);                                                                \
  }                                                                                           \
  /* Write x's lanes in m (valid ones) to the sides: below-pivot lanes to a[*lw..] (a full    \
   * store: the left gap holds a vector), the others to a[..*rw) (a masked store). */          \
  VS_I void W##_put(T *a, __m512i x, __m512i P, uint32_t m, int64_t *lw, int64_t *rw) {       \
    const uint32_t lt = W##_lt(x, P) & m, ge = ~lt & m;                                       \
    const int nl = __builtin_popcount(lt), ng = __builtin_popcount(ge);                       \
    W##_storeu(a + *lw, W##_compress(lt, x));                                                 \
    *lw += nl, *rw -= ng;                                                                     \
    W##_store(a + *rw, ng, W##_compress(ge, x));                                              \
  }                                                                                           \
  /* Partition a[0..n) (n >= 2V) in place: keys < piv first; returns their count; *mn, *mx  \
   * the range's extremes. Reads from the side whose gap is smaller, so both gaps hold a     \
   * vector when one is written. */                                                           \
  VS_T static int64_t W##_part(T *a, int64_t n, T piv, T *mn, T *mx) {                        \
    const __m512i P = W##_set1(piv);                                                          \
    const uint32_t all = W##_lanes(V);                                                        \
    const __m512i vl = W##_loadu(a), vr = W##_loadu(a + n - V);                               \
    __m512i lo = W##_min(vl, vr), hi = W##_max(vl, vr);                                       \
    int64_t lr = V, rr = n - V, lw = 0, rw = n;                                               \
    while (rr - lr >= V) {                                                                    \
      __m512i x;                                                                              \
      if (lr - lw <= rw - rr) x = W##_loadu(a + lr), lr += V;                                 \
      else rr -= V, x = W##_loadu(a + rr);                                                    \
      lo = W##_min(lo, x), hi = W##_max(hi, x);                                               \
      W##_put(a, x, P, all, &lw, &rw);                                                        \
    }                                                                                         \
    if (rr > lr) { /* the tail: fewer than V keys, then the gaps are one */                   \
      const __m512i x = W##_load(a + lr, rr - lr);                                            \
      const uint32_t m = W##_lanes(rr - lr);                                                  \
      lo = W##_min(lo, x); /* (padding is the largest key: hi only from valid lanes) */       \
      hi = W##_max(hi, W##_blend(m, W##_set1(0), x));                                         \
      W##_put(a, x, P, m, &lw, &rw);                                                          \
    }                                                                                         \
    W##_put(a, vl, P, all, &lw, &rw);                                                         \
    W##_put(a, vr, P, all, &lw, &rw);                                                         \
    *mn = W##_hmin(lo), *mx = W##_hmax(hi);                                                   \
    return lw;                                                                                \
  }                                                                                           \
  /* Median of 15 keys spread over the range. */                                             \
  static T W##_pivot(const T *a, int64_t n) {                                                 \
    T s[15];                                                                                  \
    for (int i = 0; i < 15; i++) {                                                            \
      const T w = a[(n / 16) * (i + 1)];                                                      \
      int j = i;                                                                              \
      for (; j > 0 && s[j - 1] > w; j--) s[j] = s[j - 1];                                     \
      s[j] = w;                                                                               \
    }                                                                                         \
    return s[7];                                                                              \
  }                                                                                           \
  VS_T static void W##_qsort(T *a, T *tmp, int64_t n, int depth) {                            \
    while (n > 16 * V) {                                                                      \
      if (depth-- <= 0) {                                                                     \
        T *r = RADIX(a, tmp, n);                                                              \
        if (r != a) memcpy(a, r, (size_t)n * sizeof *a);                                      \
        return;                                                                               \
      }                                                                                       \
      const T piv = W##_pivot(a, n);                                                          \
      T mn, mx;                                                                               \
      int64_t m = W##_part(a, n, piv, &mn, &mx);                                              \
      if (mn == mx) return; /* all keys equal */                                              \
      if (m == 0) { /* piv is the minimum (mx > piv): set its run aside */                   \
        m = W##_part(a, n, (T)(piv + 1), &mn, &mx);                                           \
        a += m, tmp += m, n -= m;                                                             \
        continue;                                                                             \
      }                                                                                       \
      if (m < n - m) W##_qsort(a, tmp, m, depth), a += m, tmp += m, n -= m;                   \
      else W##_qsort(a + m, tmp + m, n - m, depth), n = m;                                    \
    }                                                                                         \
    W##_small(a, n);                                                                          \
  }

static uint64_t *vs_radix64(uint64_t *a, uint64_t *t, int64_t n) { return srt_radix64(a, t, n, 0); }
VS_DEF(w64, uint64_t, 8, vs_radix64)
VS_DEF(w32, uint32_t, 16, srt_radix32)

int srt_vsort_ok(void) {
  static int ok = -1;
  if (ok < 0) ok = __builtin_cpu_supports("avx512f") ? 1 : 0;
  return ok;
}

static int vs_depth(int64_t n) {
  int d = 0;
  while (n > 1) n >>= 1, d++;
  return 2 * d + 4;
}

int srt_vsort64(uint64_t *a, uint64_t *tmp, int64_t n) {
  if (!srt_vsort_ok()) return 0;
  w64_qsort(a, tmp, n, vs_depth(n));
  return 1;
}
int srt_vsort32(uint32_t *a, uint32_t *tmp, int64_t n) {
  if (!srt_vsort_ok()) return 0;
  w32_qsort(a, tmp, n, vs_depth(n));
  return 1;
}

#else /* no vector sorts: the callers' portable sorts run */
int srt_vsort_ok(void) { return 0; }
int srt_vsort64(uint64_t *a, uint64_t *tmp, int64_t n) {
  (void)a, (void)tmp, (void)n;
  return 0;
}
int srt_vsort32(uint32_t *a, uint32_t *tmp, int64_t n) {
  (void)a, (void)tmp, (void)n;
  return 0;
}
#endif

/* vsort.c: AVX-512 sorts of unsigned 32- and 64-bit keys and of 64-bit key + 32-bit index
 * pairs (see vsort.h): bitonic networks over up to 16 registers (256 keys of 32 bits, 128 of
 * 64; 64 pairs) for short arrays and quicksort leaves, and a quicksort whose partition
 * compresses each vector into its < pivot and >= pivot lanes (register compress, then one
 * plain and one masked store: the compress-to-memory form is microcoded on AMD Zen 4), 4
 * vectors a step, the pivot the median of a sorted sample. Many equal keys: a partition that
 * leaves nothing below the pivot (the pivot is the minimum) is redone at pivot + 1, which sets
 * the run of minima aside; all keys equal ends the range. Recursion deeper than 2 log2(n)
 * (bad pivots) finishes with the radix sort. Also: the 32-bit key sort on several threads
 * (srt_vsort32_mt), the key transforms of contiguous lines, of 16-column blocks (register
 * transposes) and of short rows sorted a register each (srt_vkeys32, srt_vcols_*,
 * srt_vrows32*). */
#include "sort/vsort.h"

#include "sort/sort_common.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define VS_T __attribute__((target("avx512f,popcnt")))
#define VS_I __attribute__((target("avx512f,popcnt"), always_inline)) static inline

/* log2 of a power of two up to 256 (a constant once inlined) */
VS_I int vs_log2(int n) {
  return n >= 256 ? 8 : n >= 128 ? 7 : n >= 64 ? 6 : n >= 32 ? 5 : n >= 16 ? 4 : n >= 8 ? 3 : n >= 4 ? 2 : 1;
}

/* Vectors per partition step (read from one side, then put). */
#define VS_U 4

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
  VS_I __m512i W##_mask_max(__m512i s, uint32_t m, __m512i a, __m512i b) {                    \
    return _mm512_mask_max_epu##B(s, (MT)m, a, b);                                            \
  }                                                                                           \
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

/* Lane e gets lane e ^ x: in-lane shuffles where the pattern allows (one cycle, more ports
 * than the cross-lane permute), else the permute. x is a constant once inlined. */
VS_I __m512i w64_swz(__m512i v, int x) {
  switch (x) {
  case 1: return _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x4E);
  case 2: return _mm512_permutex_epi64(v, 0x4E);
  case 3: return _mm512_permutex_epi64(v, 0x1B);
  case 4: return _mm512_shuffle_i64x2(v, v, 0x4E);
  default: return _mm512_permutexvar_epi64(w64_xidx(x), v);
  }
}
VS_I __m512i w32_swz(__m512i v, int x) {
  switch (x) {
  case 1: return _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0xB1);
  case 2: return _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x4E);
  case 3: return _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x1B);
  case 4: return _mm512_shuffle_i64x2(v, v, 0xB1);
  case 8: return _mm512_shuffle_i64x2(v, v, 0x4E);
  default: return _mm512_permutexvar_epi32(w32_xidx(x), v);
  }
}

/* The sorts for one width W (lanes V, word T, radix fall-back RADIX(a, tmp, n) returning the
 * buffer that holds the result). */
#define VS_DEF(W, T, V, RADIX)                                                                \
  /* compare-exchange of each lane with lane ^ x: lanes in um keep the max */                 \
  VS_I __m512i W##_cx(__m512i v, int x, uint32_t um) {                                        \
    const __m512i o = W##_swz(v, x);                                                          \
    return W##_mask_max(W##_min(v, o), um, v, o);                                             \
  }                                                                                           \
  /* Bitonic sort of R registers (R * V keys) into ascending order: for each block size k a   \
   * flip stage (key e against e ^ (k-1)), then half-cleaners at k/4 .. 1; all ascending. */   \
  VS_I void W##_net(__m512i *v, const int R) {                                                \
    const int LN = vs_log2(R * V); /* (counted loops: GCC unrolls them, x stays constant) */  \
    _Pragma("GCC unroll 16") for (int lk = 1; lk <= LN; lk++) {                               \
      const int k = 1 << lk;                                                                  \
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
      _Pragma("GCC unroll 16") for (int ld = lk - 2; ld >= 0; ld--) {                         \
        const int d = 1 << ld;                                                                \
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
  /* Partition a[0..n) (n >= 2 VS_U V) in place: keys < piv first; returns their count; *mn, \
   * *mx the range's extremes. VS_U vectors from each end are set aside first, so after every \
   * read of VS_U vectors from the side with the smaller gap both gaps hold VS_U vectors: the  \
   * VS_U puts that follow each find a vector of room on the left (full store) and their     \
   * lanes on the right. One side choice (a branch the data decide) per VS_U vectors. The     \
   * tail (fewer than VS_U vectors) is loaded whole before any put, so the free room is then  \
   * one range and every put still fits; the set-aside vectors go last. */                    \
  VS_T static int64_t W##_part(T *a, int64_t n, T piv, T *mn, T *mx) {                        \
    const __m512i P = W##_set1(piv);                                                          \
    const uint32_t all = W##_lanes(V);                                                        \
    enum { UV = VS_U * V };                                                                   \
    __m512i sl[VS_U], sr[VS_U], x[VS_U];                                                      \
    _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++)                                    \
      sl[u] = W##_loadu(a + u * V), sr[u] = W##_loadu(a + n - UV + u * V);                    \
    __m512i lo = W##_min(sl[0], sr[0]), hi = W##_max(sl[0], sr[0]);                           \
    _Pragma("GCC unroll 8") for (int u = 1; u < VS_U; u++)                                    \
      lo = W##_min(lo, W##_min(sl[u], sr[u])), hi = W##_max(hi, W##_max(sl[u], sr[u]));       \
    int64_t lr = UV, rr = n - UV, lw = 0, rw = n;                                             \
    while (rr - lr >= UV) {                                                                   \
      const T *src;                                                                           \
      if (lr - lw <= rw - rr) src = a + lr, lr += UV;                                         \
      else rr -= UV, src = a + rr;                                                            \
      _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) x[u] = W##_loadu(src + u * V);   \
      _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) {                                \
        lo = W##_min(lo, x[u]), hi = W##_max(hi, x[u]);                                       \
        W##_put(a, x[u], P, all, &lw, &rw);                                                   \
      }                                                                                       \
    }                                                                                         \
    const int64_t r = rr - lr; /* the tail: fewer than VS_U vectors */                        \
    _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) /* (no lanes: nothing read) */     \
      x[u] = W##_load(a + lr + u * V, r - u * V);                                             \
    _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) {                                  \
      if (u * V < r) {                                                                        \
        const uint32_t m = W##_lanes(r - u * V);                                              \
        lo = W##_min(lo, x[u]); /* (padding is the largest key: hi from valid lanes only) */  \
        hi = W##_max(hi, W##_blend(m, W##_set1(0), x[u]));                                    \
        W##_put(a, x[u], P, m, &lw, &rw);                                                     \
      }                                                                                       \
    }                                                                                         \
    _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++)                                    \
      W##_put(a, sl[u], P, all, &lw, &rw), W##_put(a, sr[u], P, all, &lw, &rw);               \
    *mn = W##_hmin(lo), *mx = W##_hmax(hi);                                                   \
    return lw;                                                                                \
  }                                                                                           \
  /* The pivot: the median of a sorted sample of keys spread evenly over the range (64 keys  \
   * from 1024 up, else 16), sorted by the network. */                                        \
  VS_T static T W##_pivot(const T *a, int64_t n) {                                            \
    T s[64];                                                                                  \
    const int ns = n >= 1024 ? 64 : 16;                                                       \
    const int64_t st = n / ns;                                                                \
    for (int i = 0; i < ns; i++) s[i] = a[st / 2 + st * i];                                   \
    if (ns == 64) W##_netn(s, 64, 64 / V);                                                    \
    else W##_netn(s, 16, 16 / V);                                                             \
    return s[ns / 2];                                                                         \
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

/* ---- key-index pairs: 64-bit keys with 32-bit indices in a parallel array (argsort and sort
 * of the 8-byte dtypes). The keys move as w64 does, 8 lanes of a zmm; each index rides in the
 * same lane of a ymm: every permute is applied to both, every compare-exchange turns into a
 * compare mask that selects in both. Needs AVX-512VL for the masked 256-bit operations. ---- */
#define KV_T __attribute__((target("avx512f,avx512vl,popcnt")))
#define KV_I __attribute__((target("avx512f,avx512vl,popcnt"), always_inline)) static inline

/* Leaves of the quicksort: 64 pairs (8 registers of keys and 8 of indices); 16 registers of
 * each would spill (measured: 128-pair leaves cost 3 times as much per pair as 64). */
#define KV_LEAF 64

typedef struct kv_v {
  __m512i k;
  __m256i i;
} kv_v;

KV_I __m256i kv_xidx32(int x) {
  return _mm256_xor_si256(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32(x));
}
/* The indices' lane e ^ x (the lanes of w64_swz): in-lane shuffles where they can. */
KV_I __m256i kv_swz32(__m256i v, int x) {
  switch (x) {
  case 1: return _mm256_shuffle_epi32(v, 0xB1);
  case 2: return _mm256_shuffle_epi32(v, 0x4E);
  case 3: return _mm256_shuffle_epi32(v, 0x1B);
  case 4: return _mm256_shuffle_i32x4(v, v, 1);
  default: return _mm256_permutexvar_epi32(kv_xidx32(x), v);
  }
}
/* compare-exchange of each lane of (*k, *i) with lane ^ x: lanes in um keep the larger key. A
 * lane takes its partner's index exactly when its key changed (ties keep their own pair on
 * both sides). */
KV_I void kv_cx(__m512i *k, __m256i *i, int x, uint32_t um) {
  const __m512i o = w64_swz(*k, x);
  const __m512i nk = _mm512_mask_max_epu64(_mm512_min_epu64(*k, o), (__mmask8)um, *k, o);
  const __mmask8 take = _mm512_cmpneq_epu64_mask(nk, *k);
  *i = _mm256_mask_mov_epi32(*i, take, kv_swz32(*i, x));
  *k = nk;
}
/* pair a gets the smaller key of each lane, pair b the larger */
KV_I void kv_mm(__m512i *ka, __m256i *ia, __m512i *kb, __m256i *ib) {
  const __mmask8 m = _mm512_cmpgt_epu64_mask(*ka, *kb);
  const __m512i k0 = *ka;
  const __m256i i0 = *ia;
  *ka = _mm512_mask_mov_epi64(*ka, m, *kb), *ia = _mm256_mask_mov_epi32(*ia, m, *ib);
  *kb = _mm512_mask_mov_epi64(*kb, m, k0), *ib = _mm256_mask_mov_epi32(*ib, m, i0);
}

/* The bitonic network of w64_net on pairs: keys K[0..R), indices I[0..R) (R <= 8: 16 would
 * spill). */
KV_I void kv_net(__m512i *K, __m256i *I, const int R) {
  const int LN = vs_log2(R * 8);
  _Pragma("GCC unroll 16") for (int lk = 1; lk <= LN; lk++) {
    const int k = 1 << lk;
    if (k <= 8) {
      _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) kv_cx(&K[r], &I[r], k - 1, vs_upper(k / 2));
    } else {
      const int kr = k / 8;
      _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {
        const int p = r ^ (kr - 1);
        if (p > r) {
          __m512i yk = w64_swz(K[p], 7);
          __m256i yi = kv_swz32(I[p], 7);
          kv_mm(&K[r], &I[r], &yk, &yi);
          K[p] = w64_swz(yk, 7), I[p] = kv_swz32(yi, 7);
        }
      }
    }
    _Pragma("GCC unroll 16") for (int ld = lk - 2; ld >= 0; ld--) {
      const int d = 1 << ld;
      if (d >= 8) {
        const int dr = d / 8;
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)
          if (!(r & dr)) kv_mm(&K[r], &I[r], &K[r | dr], &I[r | dr]);
      } else {
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) kv_cx(&K[r], &I[r], d, vs_upper(d));
      }
    }
  }
}
/* Padding lanes get the largest key; the caller keeps that key out of the array, so no real
 * pair ties with a pad (a tie could store a pad's index). */
KV_I void kv_netn(uint64_t *k, uint32_t *ix, int64_t n, const int R) {
  __m512i K[8];
  __m256i I[8];
  _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {
    const __mmask8 m = (__mmask8)w64_lanes(n - r * 8);
    K[r] = _mm512_mask_loadu_epi64(_mm512_set1_epi64(-1), m, k + r * 8);
    I[r] = _mm256_maskz_loadu_epi32(m, ix + r * 8);
  }
  kv_net(K, I, R);
  _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {
    const __mmask8 m = (__mmask8)w64_lanes(n - r * 8);
    _mm512_mask_storeu_epi64(k + r * 8, m, K[r]);
    _mm256_mask_storeu_epi32(ix + r * 8, m, I[r]);
  }
}
KV_T static void kv_small(uint64_t *k, uint32_t *ix, int64_t n) {
  if (n <= 1) return;
  if (n <= 8) kv_netn(k, ix, n, 1);
  else if (n <= 16) kv_netn(k, ix, n, 2);
  else if (n <= 32) kv_netn(k, ix, n, 4);
  else kv_netn(k, ix, n, 8);
}
/* w64_put on pairs */
KV_I void kv_put(uint64_t *k, uint32_t *ix, kv_v x, __m512i P, uint32_t m, int64_t *lw, int64_t *rw) {
  const __mmask8 lt = (__mmask8)(_mm512_cmplt_epu64_mask(x.k, P) & m), ge = (__mmask8)(~lt & m);
  const int nl = __builtin_popcount(lt), ng = __builtin_popcount(ge);
  _mm512_storeu_si512(k + *lw, _mm512_maskz_compress_epi64(lt, x.k));
  _mm256_storeu_si256((__m256i *)(ix + *lw), _mm256_maskz_compress_epi32(lt, x.i));
  *lw += nl, *rw -= ng;
  const __mmask8 s = (__mmask8)w64_lanes(ng);
  _mm512_mask_storeu_epi64(k + *rw, s, _mm512_maskz_compress_epi64(ge, x.k));
  _mm256_mask_storeu_epi32(ix + *rw, s, _mm256_maskz_compress_epi32(ge, x.i));
}
KV_I kv_v kv_load(const uint64_t *k, const uint32_t *ix, int64_t cnt) {
  const __mmask8 m = (__mmask8)w64_lanes(cnt);
  return (kv_v){_mm512_mask_loadu_epi64(_mm512_set1_epi64(-1), m, k),
                _mm256_maskz_loadu_epi32(m, ix)};
}
/* w64_part on pairs (same gaps and order of puts) */
KV_T static int64_t kv_part(uint64_t *k, uint32_t *ix, int64_t n, uint64_t piv, uint64_t *mn,
                            uint64_t *mx) {
  const __m512i P = _mm512_set1_epi64((long long)piv);
  enum { V = 8, UV = VS_U * V };
  kv_v sl[VS_U], sr[VS_U], x[VS_U];
  _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++)
    sl[u] = kv_load(k + u * V, ix + u * V, V), sr[u] = kv_load(k + n - UV + u * V, ix + n - UV + u * V, V);
  __m512i lo = _mm512_min_epu64(sl[0].k, sr[0].k), hi = _mm512_max_epu64(sl[0].k, sr[0].k);
  _Pragma("GCC unroll 8") for (int u = 1; u < VS_U; u++) {
    lo = _mm512_min_epu64(lo, _mm512_min_epu64(sl[u].k, sr[u].k));
    hi = _mm512_max_epu64(hi, _mm512_max_epu64(sl[u].k, sr[u].k));
  }
  int64_t lr = UV, rr = n - UV, lw = 0, rw = n;
  while (rr - lr >= UV) {
    int64_t at;
    if (lr - lw <= rw - rr) at = lr, lr += UV;
    else rr -= UV, at = rr;
    _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) x[u] = kv_load(k + at + u * V, ix + at + u * V, V);
    _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) {
      lo = _mm512_min_epu64(lo, x[u].k), hi = _mm512_max_epu64(hi, x[u].k);
      kv_put(k, ix, x[u], P, 0xff, &lw, &rw);
    }
  }
  const int64_t r = rr - lr;
  _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) /* (no lanes: nothing read) */
    x[u] = kv_load(k + lr + u * V, ix + lr + u * V, r - u * V);
  _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) {
    if (u * V < r) {
      const uint32_t m = w64_lanes(r - u * V);
      lo = _mm512_min_epu64(lo, x[u].k);
      hi = _mm512_max_epu64(hi, _mm512_maskz_mov_epi64((__mmask8)m, x[u].k));
      kv_put(k, ix, x[u], P, m, &lw, &rw);
    }
  }
  _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++)
    kv_put(k, ix, sl[u], P, 0xff, &lw, &rw), kv_put(k, ix, sr[u], P, 0xff, &lw, &rw);
  *mn = _mm512_reduce_min_epu64(lo), *mx = _mm512_reduce_max_epu64(hi);
  return lw;
}
KV_T static void kv_qsort(uint64_t *k, uint32_t *ix, uint64_t *tk, uint32_t *tv, int64_t n, int depth) {
  while (n > KV_LEAF) {
    if (depth-- <= 0) { /* bad pivots: the radix sort finishes this range */
      uint64_t *rk = k;
      uint32_t *rv = ix;
      srt_radix_kv(&rk, &rv, tk, tv, n);
      if (rk != k) memcpy(k, rk, (size_t)n * sizeof *k), memcpy(ix, rv, (size_t)n * sizeof *ix);
      return;
    }
    const uint64_t piv = w64_pivot(k, n);
    uint64_t mn, mx;
    int64_t m = kv_part(k, ix, n, piv, &mn, &mx);
    if (mn == mx) return;
    if (m == 0) {
      m = kv_part(k, ix, n, piv + 1, &mn, &mx);
      k += m, ix += m, tk += m, tv += m, n -= m;
      continue;
    }
    if (m < n - m) kv_qsort(k, ix, tk, tv, m, depth), k += m, ix += m, tk += m, tv += m, n -= m;
    else kv_qsort(k + m, ix + m, tk + m, tv + m, n - m, depth), n = m;
  }
  kv_small(k, ix, n);
}

/* ---- key-index pairs with 32-bit keys (argsort and sort of the 4-byte dtypes): 16 keys in
 * a zmm and their 16 indices in the same lanes of another, so a partition step classifies
 * 16 pairs with one compare (packed key << 32 | index words take two, and move twice the
 * key bytes). The networks permute both registers alike; a compare-exchange's mask selects
 * in both. Ties are left in any order (kv32_ties puts them in index order). ---- */

/* Leaves: 128 pairs (8 registers of keys, 8 of indices). */
#define KV32_LEAF 128

/* Leaves as packed key << 32 | index words in registers (the pairs' order in the registers
 * is free before a sort: unpacking lanes pairwise gives the words), sorted by the w64
 * network (min/max on one register per 8 pairs, where the pair networks select in two):
 * R32 registers of pairs, 2 R32 of words. Padding lanes get the largest key and index, which
 * the caller keeps out of the array: pads sort last. Equal keys leave in index order. */
KV_I void kv32_netn(uint32_t *k, uint32_t *ix, int64_t n, const int R32) {
  __m512i W[16];
  _Pragma("GCC unroll 8") for (int r = 0; r < R32; r++) {
    const __mmask16 m = (__mmask16)w32_lanes(n - r * 16);
    const __m512i K = _mm512_mask_loadu_epi32(_mm512_set1_epi32(-1), m, k + r * 16);
    const __m512i I = _mm512_mask_loadu_epi32(_mm512_set1_epi32(-1), m, ix + r * 16);
    W[2 * r] = _mm512_unpacklo_epi32(I, K), W[2 * r + 1] = _mm512_unpackhi_epi32(I, K);
  }
  w64_net(W, 2 * R32);
  _Pragma("GCC unroll 16") for (int r = 0; r < 2 * R32; r++) {
    const __mmask8 m = (__mmask8)w64_lanes(n - r * 8);
    _mm256_mask_storeu_epi32(k + r * 8, m, _mm512_cvtepi64_epi32(_mm512_srli_epi64(W[r], 32)));
    _mm256_mask_storeu_epi32(ix + r * 8, m, _mm512_cvtepi64_epi32(W[r]));
  }
}
KV_T static void kv32_small(uint32_t *k, uint32_t *ix, int64_t n) {
  if (n <= 1) return;
  if (n <= 16) kv32_netn(k, ix, n, 1);
  else if (n <= 32) kv32_netn(k, ix, n, 2);
  else if (n <= 64) kv32_netn(k, ix, n, 4);
  else kv32_netn(k, ix, n, 8);
}
typedef struct kv32_v {
  __m512i k, i;
} kv32_v;
/* w32_put on pairs */
KV_I void kv32_put(uint32_t *k, uint32_t *ix, kv32_v x, __m512i P, uint32_t m, int64_t *lw, int64_t *rw) {
  const __mmask16 lt = (__mmask16)(_mm512_cmplt_epu32_mask(x.k, P) & m), ge = (__mmask16)(~lt & m);
  const int nl = __builtin_popcount(lt), ng = __builtin_popcount(ge);
  _mm512_storeu_si512(k + *lw, _mm512_maskz_compress_epi32(lt, x.k));
  _mm512_storeu_si512(ix + *lw, _mm512_maskz_compress_epi32(lt, x.i));
  *lw += nl, *rw -= ng;
  const __mmask16 s = (__mmask16)w32_lanes(ng);
  _mm512_mask_storeu_epi32(k + *rw, s, _mm512_maskz_compress_epi32(ge, x.k));
  _mm512_mask_storeu_epi32(ix + *rw, s, _mm512_maskz_compress_epi32(ge, x.i));
}
KV_I kv32_v kv32_load(const uint32_t *k, const uint32_t *ix, int64_t cnt) {
  const __mmask16 m = (__mmask16)w32_lanes(cnt);
  return (kv32_v){_mm512_mask_loadu_epi32(_mm512_set1_epi32(-1), m, k), _mm512_maskz_loadu_epi32(m, ix)};
}
/* w32_part on pairs (same gaps and order of puts) */
KV_T static int64_t kv32_part(uint32_t *k, uint32_t *ix, int64_t n, uint32_t piv, uint32_t *mn,
                              uint32_t *mx) {
  const __m512i P = _mm512_set1_epi32((int)piv);
  enum { V = 16, UV = VS_U * V };
  kv32_v sl[VS_U], sr[VS_U], x[VS_U];
  _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++)
    sl[u] = kv32_load(k + u * V, ix + u * V, V), sr[u] = kv32_load(k + n - UV + u * V, ix + n - UV + u * V, V);
  __m512i lo = _mm512_min_epu32(sl[0].k, sr[0].k), hi = _mm512_max_epu32(sl[0].k, sr[0].k);
  _Pragma("GCC unroll 8") for (int u = 1; u < VS_U; u++) {
    lo = _mm512_min_epu32(lo, _mm512_min_epu32(sl[u].k, sr[u].k));
    hi = _mm512_max_epu32(hi, _mm512_max_epu32(sl[u].k, sr[u].k));
  }
  int64_t lr = UV, rr = n - UV, lw = 0, rw = n;
  while (rr - lr >= UV) {
    int64_t at;
    if (lr - lw <= rw - rr) at = lr, lr += UV;
    else rr -= UV, at = rr;
    _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) x[u] = kv32_load(k + at + u * V, ix + at + u * V, V);
    _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) {
      lo = _mm512_min_epu32(lo, x[u].k), hi = _mm512_max_epu32(hi, x[u].k);
      kv32_put(k, ix, x[u], P, 0xffff, &lw, &rw);
    }
  }
  const int64_t r = rr - lr;
  _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) /* (no lanes: nothing read) */
    x[u] = kv32_load(k + lr + u * V, ix + lr + u * V, r - u * V);
  _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++) {
    if (u * V < r) {
      const uint32_t m = w32_lanes(r - u * V);
      lo = _mm512_min_epu32(lo, x[u].k);
      hi = _mm512_max_epu32(hi, _mm512_maskz_mov_epi32((__mmask16)m, x[u].k));
      kv32_put(k, ix, x[u], P, m, &lw, &rw);
    }
  }
  _Pragma("GCC unroll 8") for (int u = 0; u < VS_U; u++)
    kv32_put(k, ix, sl[u], P, 0xffff, &lw, &rw), kv32_put(k, ix, sr[u], P, 0xffff, &lw, &rw);
  *mn = _mm512_reduce_min_epu32(lo), *mx = _mm512_reduce_max_epu32(hi);
  return lw;
}
KV_T static void kv32_qsort(uint32_t *k, uint32_t *ix, uint32_t *tk, uint32_t *tv, int64_t n, int depth) {
  while (n > KV32_LEAF) {
    if (depth-- <= 0) { /* bad pivots: the radix sort finishes this range */
      uint32_t *rk = k, *rv = ix;
      srt_radix_kv32(&rk, &rv, tk, tv, n);
      if (rk != k) memcpy(k, rk, (size_t)n * sizeof *k), memcpy(ix, rv, (size_t)n * sizeof *ix);
      return;
    }
    const uint32_t piv = w32_pivot(k, n);
    uint32_t mn, mx;
    int64_t m = kv32_part(k, ix, n, piv, &mn, &mx);
    if (mn == mx) return;
    if (m == 0) {
      m = kv32_part(k, ix, n, piv + 1, &mn, &mx);
      k += m, ix += m, tk += m, tv += m, n -= m;
      continue;
    }
    if (m < n - m) kv32_qsort(k, ix, tk, tv, m, depth), k += m, ix += m, tk += m, tv += m, n -= m;
    else kv32_qsort(k + m, ix + m, tk + m, tv + m, n - m, depth), n = m;
  }
  kv32_small(k, ix, n);
}

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

/* ---- the key transforms of contiguous 4-byte lines (sort_common.h's srt_keys and
 * srt_unkey32, 16 lanes at a time; a masked tail) ---- */
VS_I __m512i vs_key32(__m512i w, uint32_t f, int fl) {
  const __m512i S = _mm512_set1_epi32((int)0x80000000u);
  if (!fl) return _mm512_xor_si512(w, _mm512_set1_epi32((int)(f ^ 0x80000000u)));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(w, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  w = _mm512_mask_mov_epi32(w, nan, _mm512_set1_epi32(0x7fffffff)); /* any NaN */
  const __m512i m = _mm512_srai_epi32(w, 31);
  const __m512i k = _mm512_sub_epi32(_mm512_xor_si512(w, _mm512_or_si512(m, S)), m);
  return _mm512_xor_si512(k, _mm512_set1_epi32((int)f));
}
VS_T int srt_vkeys32(const uint32_t *x, uint32_t *k, int64_t n, uint32_t f, int fl) {
  if (!srt_vsort_ok()) return 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_si512(k + i, vs_key32(_mm512_loadu_si512(x + i), f, fl));
  const __mmask16 t = (__mmask16)w32_lanes(n - i);
  _mm512_mask_storeu_epi32(k + i, t, vs_key32(_mm512_maskz_loadu_epi32(t, x + i), f, fl));
  return 1;
}
VS_I __m512i vs_unkey32(__m512i k, int fl, __mmask16 *z) {
  const __m512i S = _mm512_set1_epi32((int)0x80000000u);
  if (!fl) return _mm512_xor_si512(k, S);
  *z |= _mm512_cmpeq_epu32_mask(k, S);
  const __m512i m = _mm512_srai_epi32(_mm512_xor_si512(k, _mm512_set1_epi32(-1)), 31);
  return _mm512_sub_epi32(_mm512_xor_si512(k, _mm512_or_si512(m, S)), m);
}
VS_T int srt_vunkeys32(const uint32_t *k, uint32_t *y, int64_t n, uint32_t f, int fl, int *zeros) {
  if (!srt_vsort_ok()) return 0;
  const __m512i F = _mm512_set1_epi32((int)f);
  __mmask16 z = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_si512(y + i, vs_unkey32(_mm512_xor_si512(_mm512_loadu_si512(k + i), F), fl, &z));
  const __mmask16 t = (__mmask16)w32_lanes(n - i);
  __mmask16 zt = 0;
  _mm512_mask_storeu_epi32(y + i, t, vs_unkey32(_mm512_xor_si512(_mm512_maskz_loadu_epi32(t, k + i), F), fl, &zt));
  *zeros = (z | (zt & t)) != 0;
  return 1;
}

/* ---- 16 columns of a row-major block as 16 contiguous lines of keys and back (the
 * values-only sort of lines along an outer axis): 16 rows of 16 words transposed in
 * registers (32-bit, then 64-bit unpacks within 128-bit lanes, then a 4x4 transpose of the
 * lanes), the key transform on the way in, its inverse on the way out. ---- */
VS_I void vs_tr16(__m512i *r) {
  __m512i a[16], b[16];
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
    a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]), a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) { /* b[4i + c]: lane l holds column 4l + c of rows 4i.. */
    b[4 * i] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]), b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]), b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
  }
  _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
    const __m512i u0 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0x44), u1 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0xEE);
    const __m512i u2 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0x44), u3 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0xEE);
    r[c] = _mm512_shuffle_i32x4(u0, u2, 0x88), r[4 + c] = _mm512_shuffle_i32x4(u0, u2, 0xDD);
    r[8 + c] = _mm512_shuffle_i32x4(u1, u3, 0x88), r[12 + c] = _mm512_shuffle_i32x4(u1, u3, 0xDD);
  }
}
VS_T int srt_vcols_keys32(const uint32_t *x, int64_t ld, int64_t n, int w, uint32_t *k, int64_t lp,
                          uint32_t f, int fl) {
  if (!srt_vsort_ok()) return 0;
  const __mmask16 m = (__mmask16)w32_lanes(w);
  int64_t r = 0;
  for (; r + 16 <= n; r += 16) {
    __m512i v[16];
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) v[i] = _mm512_maskz_loadu_epi32(m, x + (r + i) * ld);
    vs_tr16(v);
    _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++)
      if (q < w) _mm512_storeu_si512(k + q * lp + r, vs_key32(v[q], f, fl));
  }
  for (; r < n; r++) { /* the rest of the rows: a row's keys to the w lines */
    uint32_t t[16];
    _mm512_storeu_si512(t, vs_key32(_mm512_maskz_loadu_epi32(m, x + r * ld), f, fl));
    for (int q = 0; q < w; q++) k[q * lp + r] = t[q];
  }
  return 1;
}
VS_T int srt_vcols_unkeys32(const uint32_t *k, int64_t lp, int64_t n, int w, uint32_t *y, int64_t ld,
                            uint32_t f, int fl, uint32_t *zeros) {
  if (!srt_vsort_ok()) return 0;
  const __m512i F = _mm512_set1_epi32((int)f);
  const __mmask16 m = (__mmask16)w32_lanes(w);
  __mmask16 z = 0; /* lanes: lines with a zero */
  const int nts = w == 16 && ((uintptr_t)y & 63) == 0 && ld % 16 == 0 && ld >= 512;
  int64_t r = 0;
  for (; r + 16 <= n; r += 16) {
    __m512i v[16];
    _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++)
      v[q] = q < w ? _mm512_xor_si512(_mm512_loadu_si512(k + q * lp + r), F) : _mm512_setzero_si512();
    vs_tr16(v);
    if (nts) { /* whole aligned 64-byte rows: streamed (no reads for ownership; the rows are
                * 4 KiB apart at 1024 columns, all in one L1 set) */
      _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
        _mm512_stream_si512((void *)(y + (r + i) * ld), vs_unkey32(v[i], fl, &z));
    } else {
      _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
        _mm512_mask_storeu_epi32(y + (r + i) * ld, m, vs_unkey32(v[i], fl, &z));
    }
  }
  if (nts) _mm_sfence();
  for (; r < n; r++) {
    uint32_t t[16] = {0};
    for (int q = 0; q < w; q++) t[q] = k[q * lp + r];
    _mm512_mask_storeu_epi32(y + r * ld, m, vs_unkey32(_mm512_xor_si512(_mm512_loadu_si512(t), F), fl, &z));
  }
  *zeros = z & m;
  return 1;
}

/* Short contiguous lines, n <= 16 words each: a line a register (masked load, the key
 * transform, padding set to the largest key, the 16-key network, the inverse transform,
 * masked store), no buffer and no call per line; successive lines are independent, so their
 * networks overlap in the pipeline. Returns bit r set when line r (< 64) has a zero's key. */
VS_T uint64_t srt_vrows32(const uint32_t *x, uint32_t *y, int64_t rows, int n, uint32_t f, int fl) {
  if (n == 1) { /* lines of one: each its own value (a NaN as 0x7fffffff, as every sort gives
                 * it back; a zero keeps its sign), 16 lines a vector: 10000x1 took 8.5 ns a
                 * line through the network */
    const __m512i ABS = _mm512_set1_epi32(0x7fffffff), INF = _mm512_set1_epi32(0x7f800000);
    for (int64_t r = 0; r < rows; r += 16) {
      const __mmask16 t = (__mmask16)w32_lanes(rows - r < 16 ? (int)(rows - r) : 16);
      __m512i v = _mm512_maskz_loadu_epi32(t, x + r);
      if (fl) v = _mm512_mask_mov_epi32(v, _mm512_cmpgt_epu32_mask(_mm512_and_si512(v, ABS), INF), ABS);
      if (t == (__mmask16)0xFFFF) _mm512_storeu_si512(y + r, v);
      else _mm512_mask_storeu_epi32(y + r, t, v);
    }
    return 0;
  }
  const __mmask16 m = (__mmask16)w32_lanes(n);
  const __m512i F = _mm512_set1_epi32((int)f), PAD = _mm512_set1_epi32(-1);
  uint64_t zr = 0;
  for (int64_t r = 0; r < rows; r++) {
    __m512i v = _mm512_mask_mov_epi32(PAD, m, vs_key32(_mm512_maskz_loadu_epi32(m, x + r * n), f, fl));
    w32_net(&v, 1);
    __mmask16 z = 0;
    v = vs_unkey32(_mm512_xor_si512(v, F), fl, &z);
    _mm512_mask_storeu_epi32(y + r * n, m, v);
    zr |= (uint64_t)((z & m) != 0) << r;
  }
  return zr;
}

/* The same rows of a float32 sort that keeps its permutation: each row's keys packed with
 * their positions into key << 32 | position words in two registers (padding: the largest key
 * and positions >= n, so it sorts last), sorted by the 64-bit network; the positions go to
 * perm, and y is x permuted by them (each value's own bits: zeros keep their signs), NaNs
 * given back as 0x7fffffff as everywhere else. */
VS_T void srt_vrows32_perm(const uint32_t *x, uint32_t *y, uint32_t *perm, int64_t rows, int n,
                           uint32_t f) {
  const __mmask16 m = (__mmask16)w32_lanes(n);
  const __m512i PAD = _mm512_set1_epi32(-1), NANK = _mm512_set1_epi32((int)(0xffffffffu ^ f));
  const __m512i I0 = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), I1 = _mm512_set_epi64(15, 14, 13, 12, 11, 10, 9, 8);
  for (int64_t r = 0; r < rows; r++) {
    const __m512i X = _mm512_maskz_loadu_epi32(m, x + r * n);
    const __m512i K = _mm512_mask_mov_epi32(PAD, m, vs_key32(X, f, 1));
    __m512i W[2];
    W[0] = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(K)), 32), I0);
    W[1] = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(K, 1)), 32), I1);
    w64_net(W, 2);
    const __m512i P = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(W[0])),
                                         _mm512_cvtepi64_epi32(W[1]), 1);
    const __m512i SK = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_srli_epi64(W[0], 32))),
                                          _mm512_cvtepi64_epi32(_mm512_srli_epi64(W[1], 32)), 1);
    const __mmask16 nan = _mm512_cmpeq_epu32_mask(SK, NANK);
    const __m512i Y = _mm512_mask_mov_epi32(_mm512_permutexvar_epi32(P, X), nan, _mm512_set1_epi32(0x7fffffff));
    _mm512_mask_storeu_epi32(perm + r * n, m, P);
    _mm512_mask_storeu_epi32(y + r * n, m, Y);
  }
}

/* ---- one long line of 32-bit keys on nt threads (srt_vsort32_mt): the first partition is
 * itself split, each thread partitioning a chunk of its own around one pivot (the median of
 * a sample of the whole line) and the chunks' sides then joined by swapping each chunk's
 * low side with the front of the high sides gathered so far (at most n/2 keys move, the
 * order inside a side being free). The ranges are then partitioned a level at a time, one
 * range a thread, until there are VS_MT_RANGES a thread, which the threads sort with
 * w32_qsort, largest first. ---- */
#define VS_MT_RANGES 4
#define VS_MT_MAXR 128

/* Swap a[0..k) with a[j..j+k) (disjoint). */
VS_T static void vs_swap32(uint32_t *a, int64_t j, int64_t k) {
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m512i x = _mm512_loadu_si512(a + i), y = _mm512_loadu_si512(a + j + i);
    _mm512_storeu_si512(a + i, y), _mm512_storeu_si512(a + j + i, x);
  }
  for (; i < k; i++) {
    const uint32_t t = a[i];
    a[i] = a[j + i], a[j + i] = t;
  }
}

/* Partition a[0..n) around the sample median on nt threads; returns the low side's size (0
 * when the pivot is the minimum: the caller sorts the range whole). */
VS_T static int64_t vs_part32_mt(uint32_t *a, int64_t n, int nt) {
  const uint32_t piv = w32_pivot(a, n);
  int64_t m[64];
  if (nt > 64) nt = 64;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
  for (int t = 0; t < nt; t++) {
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    uint32_t mn, mx;
    m[t] = w32_part(a + lo, hi - lo, piv, &mn, &mx);
  }
  /* a[0..l) low, a[l..e) high; chunk t (from e) joins: its low side swaps with the front of
   * the high keys (the shorter of the two moves) */
  int64_t l = m[0], e = n / nt;
  for (int t = 1; t < nt; t++) {
    const int64_t hi = n * (t + 1) / nt, h = e - l, lt = m[t];
    if (lt <= h) vs_swap32(a + l, e - l, lt);          /* the low keys to the front */
    else vs_swap32(a + l, e + lt - h - l, h);          /* the high keys behind the low ones */
    l += lt, e = hi;
  }
  return l;
}

VS_T static int vs_cmp_len(const void *x, const void *y) {
  const int64_t a = ((const int64_t *)x)[1], b = ((const int64_t *)y)[1];
  return (a < b) - (a > b); /* longest first */
}

VS_T static void vs_sort32_mt(uint32_t *a, uint32_t *tmp, int64_t n, int nt) {
  int64_t r[VS_MT_MAXR][2], nr = 0; /* ranges: offset, length */
  const int64_t m0 = vs_part32_mt(a, n, nt);
  if (m0 > 0 && m0 < n) r[0][0] = 0, r[0][1] = m0, r[1][0] = m0, r[1][1] = n - m0, nr = 2;
  else r[0][0] = 0, r[0][1] = n, nr = 1;
  const int64_t want = (int64_t)nt * VS_MT_RANGES < VS_MT_MAXR / 2 ? (int64_t)nt * VS_MT_RANGES : VS_MT_MAXR / 2;
  int split = nr > 1;
  while (split && nr < want) { /* a level of partitions, one range a thread */
    int64_t m[VS_MT_MAXR];
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
    for (int64_t i = 0; i < nr; i++) {
      uint32_t *s = a + r[i][0];
      const int64_t len = r[i][1];
      m[i] = 0;
      if (len > 64 * 16) {
        uint32_t mn, mx;
        const int64_t k = w32_part(s, len, w32_pivot(s, len), &mn, &mx);
        m[i] = mn == mx ? 0 : k;
      }
    }
    split = 0;
    for (int64_t i = nr - 1; i >= 0; i--) /* (back to front: the new ranges go at the end) */
      if (m[i] > 0 && m[i] < r[i][1]) {
        r[nr][0] = r[i][0] + m[i], r[nr][1] = r[i][1] - m[i], r[i][1] = m[i], nr++, split = 1;
      }
  }
  qsort(r, (size_t)nr, sizeof r[0], vs_cmp_len);
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t i = 0; i < nr; i++)
    w32_qsort(a + r[i][0], tmp + r[i][0], r[i][1], vs_depth(r[i][1]));
}

int srt_vsort32_mt(uint32_t *a, uint32_t *tmp, int64_t n, int nt) {
  if (!srt_vsort_ok()) return 0;
  if (nt < 2 || n < SRT_VMT_MIN) w32_qsort(a, tmp, n, vs_depth(n));
  else vs_sort32_mt(a, tmp, n, nt);
  return 1;
}


/* Equal keys' pairs in ascending index order: the quicksort leaves their order arbitrary.
 * Runs of equal keys are found a vector at a time (a key equal to its successor). */
KV_T static void kv_run_sort(uint32_t *v, uint32_t *tv, int64_t len) {
  if (len <= SRT_SMALL) srt_ins32(v, len);
  else {
    const uint32_t *r = srt_sort32(v, tv, len);
    if (r != v) memcpy(v, r, (size_t)len * sizeof *v);
  }
}
#define KV_TIES_DEF(TK, name, V, MT, CMPEQ)                                                   \
  KV_T static void name(const TK *k, uint32_t *v, uint32_t *tv, int64_t n) {                   \
    int64_t i = 0;                                                                             \
    while (i + 1 < n) {                                                                        \
      if (i + V + 1 <= n) {                                                                    \
        const MT eq = CMPEQ(_mm512_loadu_si512(k + i), _mm512_loadu_si512(k + i + 1));         \
        if (!eq) {                                                                             \
          i += V;                                                                              \
          continue;                                                                            \
        }                                                                                      \
        i += __builtin_ctz(eq);                                                                \
      } else if (k[i] != k[i + 1]) {                                                           \
        i++;                                                                                   \
        continue;                                                                              \
      }                                                                                        \
      int64_t j = i + 1;                                                                       \
      while (j < n && k[j] == k[i]) j++;                                                       \
      kv_run_sort(v + i, tv, j - i);                                                           \
      i = j;                                                                                   \
    }                                                                                          \
  }
KV_TIES_DEF(uint64_t, kv_ties, 8, __mmask8, _mm512_cmpeq_epu64_mask)
KV_TIES_DEF(uint32_t, kv32_ties, 16, __mmask16, _mm512_cmpeq_epu32_mask)
#undef KV_TIES_DEF

static int kv_ok(void) {
  static int ok = -1;
  if (ok < 0) ok = srt_vsort_ok() && __builtin_cpu_supports("avx512vl");
  return ok;
}
int srt_vsort_kv_ok(void) { return kv_ok(); }

int srt_vsort_kv(uint64_t *k, uint32_t *v, uint64_t *tk, uint32_t *tv, int64_t n) {
  if (!kv_ok()) return 0;
  /* the largest key (the networks' padding) set aside at the end, in index order */
  int64_t m = 0, c = 0;
  for (int64_t i = 0; i < n; i++) {
    if (k[i] != UINT64_MAX) k[m] = k[i], v[m] = v[i], m++;
    else tv[c++] = v[i];
  }
  for (int64_t i = 0; i < c; i++) k[m + i] = UINT64_MAX, v[m + i] = tv[i];
  kv_qsort(k, v, tk, tv, m, vs_depth(m));
  kv_ties(k, v, tv, m);
  return 1;
}

/* Pairs with key UINT32_MAX (the padding key) moved to the end in index order, the others
 * kept in front (a vector pass finds whether there are any; then compressed 16 at a time, in
 * place: the front never passes what was read); returns the count kept in front. */
KV_T static int64_t kv32_aside(uint32_t *k, uint32_t *v, uint32_t *tv, int64_t n) {
  const __m512i MX = _mm512_set1_epi32(-1);
  __mmask16 any = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) any |= _mm512_cmpeq_epu32_mask(_mm512_loadu_si512(k + i), MX);
  for (; i < n; i++) any |= k[i] == UINT32_MAX;
  if (!any) return n;
  int64_t m = 0, c = 0;
  for (i = 0; i < n; i += 16) {
    const __mmask16 l = (__mmask16)w32_lanes(n - i);
    const __m512i K = _mm512_maskz_loadu_epi32(l, k + i), I = _mm512_maskz_loadu_epi32(l, v + i);
    const __mmask16 keep = (__mmask16)(_mm512_cmpneq_epu32_mask(K, MX) & l), out = (__mmask16)(~keep & l);
    _mm512_mask_compressstoreu_epi32(k + m, keep, K);
    _mm512_mask_compressstoreu_epi32(v + m, keep, I);
    _mm512_mask_compressstoreu_epi32(tv + c, out, I);
    m += __builtin_popcount(keep), c += __builtin_popcount(out);
  }
  for (int64_t j = 0; j < c; j++) k[m + j] = UINT32_MAX, v[m + j] = tv[j];
  return m;
}

int srt_vsort_kv32(uint32_t *k, uint32_t *v, uint32_t *tk, uint32_t *tv, int64_t n) {
  if (!kv_ok()) return 0;
  const int64_t m = kv32_aside(k, v, tv, n); /* the padding key set aside, as above */
  kv32_qsort(k, v, tk, tv, m, vs_depth(m));
  kv32_ties(k, v, tv, m);
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
int srt_vsort32_mt(uint32_t *a, uint32_t *tmp, int64_t n, int nt) {
  (void)a, (void)tmp, (void)n, (void)nt;
  return 0;
}
int srt_vkeys32(const uint32_t *x, uint32_t *k, int64_t n, uint32_t f, int fl) {
  (void)x, (void)k, (void)n, (void)f, (void)fl;
  return 0;
}
uint64_t srt_vrows32(const uint32_t *x, uint32_t *y, int64_t rows, int n, uint32_t f, int fl) {
  (void)x, (void)y, (void)rows, (void)n, (void)f, (void)fl;
  return 0;
}
void srt_vrows32_perm(const uint32_t *x, uint32_t *y, uint32_t *perm, int64_t rows, int n,
                      uint32_t f) {
  (void)x, (void)y, (void)perm, (void)rows, (void)n, (void)f;
}
int srt_vcols_keys32(const uint32_t *x, int64_t ld, int64_t n, int w, uint32_t *k, int64_t lp,
                     uint32_t f, int fl) {
  (void)x, (void)ld, (void)n, (void)w, (void)k, (void)lp, (void)f, (void)fl;
  return 0;
}
int srt_vcols_unkeys32(const uint32_t *k, int64_t lp, int64_t n, int w, uint32_t *y, int64_t ld,
                       uint32_t f, int fl, uint32_t *zeros) {
  (void)k, (void)lp, (void)n, (void)w, (void)y, (void)ld, (void)f, (void)fl, (void)zeros;
  return 0;
}
int srt_vunkeys32(const uint32_t *k, uint32_t *y, int64_t n, uint32_t f, int fl, int *zeros) {
  (void)k, (void)y, (void)n, (void)f, (void)fl, (void)zeros;
  return 0;
}
int srt_vsort_kv(uint64_t *k, uint32_t *v, uint64_t *tk, uint32_t *tv, int64_t n) {
  (void)k, (void)v, (void)tk, (void)tv, (void)n;
  return 0;
}
int srt_vsort_kv_ok(void) { return 0; }
int srt_vsort_kv32(uint32_t *k, uint32_t *v, uint32_t *tk, uint32_t *tv, int64_t n) {
  (void)k, (void)v, (void)tk, (void)tv, (void)n;
  return 0;
}
#endif

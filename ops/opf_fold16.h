/* opf_fold16.h: sixteen AVX-512 float32 vectors folded into one vector of their sixteen
 * lane-folds (lane i: all 16 lanes of v[i] combined by + or *), by a transposing tree of
 * unpacks, vshufps and 128-bit lane shuffles: 15 combines and 30 shuffles for the 16 results,
 * in order, where a horizontal reduction per vector takes about three times the instructions.
 * Shared by the narrow-row GEMV (ops/linalg/lin_sgemm.c: 16 row products) and the short-row
 * reductions (ops/reduction/reduce.c: 16 rows of 2..16 elements). The combination order is a
 * fixed pairwise tree, the same for every call. v is overwritten. Internal to the library. */
#ifndef OPPERF_OPF_FOLD16_H
#define OPPERF_OPF_FOLD16_H

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static inline __m512 opf_fold16_comb(int mul, __m512 a,
                                                                         __m512 b) {
  return mul ? _mm512_mul_ps(a, b) : _mm512_add_ps(a, b);
}

/* mul 0: sums, 1: products. */
__attribute__((target("avx512f"))) static inline __m512 opf_fold16(int mul, __m512 *v) {
  for (int i = 0; i < 8; i++) /* per 128-bit lane: vectors 2i, 2i + 1, 2 partials each */
    v[i] = opf_fold16_comb(mul, _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                           _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; i++) /* per 128-bit lane: the lane's folds of vectors 4i..4i+3 */
    v[i] = opf_fold16_comb(mul, _mm512_shuffle_ps(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  for (int i = 0; i < 2; i++)
    v[i] = opf_fold16_comb(mul, _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x88),
                           _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xDD));
  return opf_fold16_comb(mul, _mm512_shuffle_f32x4(v[0], v[1], 0x88),
                         _mm512_shuffle_f32x4(v[0], v[1], 0xDD));
}
#endif

#endif

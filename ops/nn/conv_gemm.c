/* conv_gemm.c: the convolutions' own single-threaded float32 GEMM for AVX-512 CPUs
 * (conv_core.h: nn_gemm). OpenBLAS as installed here runs its AVX2 Haswell kernels (the
 * environment's OPENBLAS_CORETYPE), about half of what this CPU's 512-bit FMAs give, and the
 * GEMM-bound convolutions (1x1, strided, Winograd's batched products) were 1.3-2x slower than
 * oneDNN's AVX-512 code for that reason alone. Goto/BLIS structure: op(B) packed in KC x NC
 * blocks of NR-wide strips, op(A) in MC x KC blocks of MR-tall strips (or, not transposed,
 * read in place by whole strips), a 14 x 32 register tile (28 zmm accumulators) per
 * micro-kernel call, stored with plain (unmasked) stores where the tile is full width, a bias
 * optionally added in those stores. Everything else (float64, CPUs without AVX-512, tiny
 * products, no scratch) goes to lin_gemm (OpenBLAS). nn_gemm_taps runs the same tile as an
 * implicit GEMM for conv_group.c: several taps' row sets summed in the registers. */
#include "conv_core.h"
#include "linalg/linalg.h"

#define GM_MR NN_GEMM_MR
#define GM_NR NN_GEMM_NR
#define GM_KC 256
#define GM_MC (GM_MR * 16)
#define GM_NC (GM_NR * 32)

/* Fewer multiply-adds than this, M below two register tiles or N below one (much of the tile
 * wasted: 16-filter groups' weight gradients, M = 16, ran 1.27x slower than OpenBLAS) or
 * K < 32 (packing costs more than the products: a transposed convolution's 4x4 planes gave
 * 16-wide blocks, 1.7x slower than OpenBLAS): OpenBLAS. */
#define GM_MIN_MACS (64.0 * 64 * 64)

size_t nn_gemm_ws_bytes(void) {
  return (size_t)(GM_MC * GM_KC + GM_KC * GM_NC) * sizeof(float) + 128;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

static int have_avx512(void) {
  static int have = -1;
  if (have < 0) have = __builtin_cpu_supports("avx512f") ? 1 : 0;
  return have;
}

/* op(A) rows [i0, i0+mc) x cols [p0, p0+kc) into MR-tall strips, k-major: ap[s][k][0..MR). */
static void pack_a(float *restrict ap, const float *restrict A, int64_t lda, int ta, int64_t i0,
                   int64_t mc, int64_t p0, int64_t kc) {
  for (int64_t s = 0; s < mc; s += GM_MR) {
    int64_t mr = mc - s < GM_MR ? mc - s : GM_MR;
    float *d = ap + s * kc;
    if (ta) { /* A stored (K, M): op(A)(i, k) = A[k*lda + i], rows of a strip contiguous */
      for (int64_t k = 0; k < kc; k++) {
        const float *src = A + (p0 + k) * lda + i0 + s;
        int64_t i = 0;
        for (; i < mr; i++) d[k * GM_MR + i] = src[i];
        for (; i < GM_MR; i++) d[k * GM_MR + i] = 0;
      }
    } else {
      for (int64_t i = 0; i < GM_MR; i++) {
        if (i >= mr) {
          for (int64_t k = 0; k < kc; k++) d[k * GM_MR + i] = 0;
          continue;
        }
        const float *src = A + (i0 + s + i) * lda + p0;
        for (int64_t k = 0; k < kc; k++) d[k * GM_MR + i] = src[k];
      }
    }
  }
}

/* op(B) rows [p0, p0+kc) x cols [j0, j0+nc) into NR-wide strips: bp[s][k][0..NR). */
__attribute__((target("avx512f"))) static void pack_b(float *restrict bp, const float *restrict B,
                                                      int64_t ldb, int tb, int64_t p0, int64_t kc,
                                                      int64_t j0, int64_t nc) {
  for (int64_t s = 0; s < nc; s += GM_NR) {
    int64_t nr = nc - s < GM_NR ? nc - s : GM_NR;
    float *d = bp + s * kc;
    if (!tb) { /* B stored (K, N): a strip row is contiguous */
      __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
      __mmask16 m1 = nr >= 32 ? 0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
      for (int64_t k = 0; k < kc; k++) {
        const float *src = B + (p0 + k) * ldb + j0 + s;
        _mm512_store_ps(d + k * GM_NR, _mm512_maskz_loadu_ps(m0, src));
        _mm512_store_ps(d + k * GM_NR + 16, _mm512_maskz_loadu_ps(m1, src + 16));
      }
    } else { /* B stored (N, K): op(B)(k, j) = B[j*ldb + k] */
      for (int64_t j = 0; j < GM_NR; j++) {
        if (j >= nr) {
          for (int64_t k = 0; k < kc; k++) d[k * GM_NR + j] = 0;
          continue;
        }
        const float *src = B + (j0 + s + j) * ldb + p0;
        for (int64_t k = 0; k < kc; k++) d[k * GM_NR + j] = src[k];
      }
    }
  }
}

/* acc += the sum over kc of the outer products of an op(A) strip and a packed op(B) strip:
 * op(A) element (i, k) at a[k*ka + i*ia], a packed strip (ka MR, ia 1) or MR rows of a
 * row-major A read in place (ka 1, ia lda). */
__attribute__((target("avx512f"), always_inline)) static inline void
micro_acc(__m512 acc[GM_MR][2], int64_t kc, const float *restrict a, int64_t ka, int64_t ia,
          const float *restrict b) {
  for (int64_t k = 0; k < kc; k++) {
    __m512 b0 = _mm512_load_ps(b + k * GM_NR), b1 = _mm512_load_ps(b + k * GM_NR + 16);
    const float *ak = a + k * ka;
#pragma GCC unroll 14
    for (int i = 0; i < GM_MR; i++) {
      __m512 ai = _mm512_set1_ps(ak[i * ia]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
}

/* The C tile (mr x nr valid, ldc apart) = acc + beta C (+ bias) when first (beta 0: C not
 * read), else C += acc; bias (NULL: none) the tile's first column's (brow 0: one per column)
 * or first row's (brow 1: one per row) entry. */
__attribute__((target("avx512f"), always_inline)) static inline void
micro_store(__m512 acc[GM_MR][2], float *restrict c, int64_t ldc, int64_t mr, int64_t nr,
            int first, float beta, const float *bias, int brow) {
  __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
  __mmask16 m1 = nr >= 32 ? 0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
  __m512 vb = _mm512_set1_ps(beta);
  int load = !first || beta != 0.0f;
  if (first && beta != 1.0f && beta != 0.0f) load = 2;
  /* Full-width tiles by plain loads and stores: masked 512-bit stores, even with every lane
   * set, cost Zen 5 about a fifth of the whole product (a 1x1 convolution's M 196 x N 1024 x
   * K 256 blocks: 16.4 ms against 13.7 ms for 32 of them at 1 thread). */
  int full = nr == GM_NR;
  __m512 z0 = _mm512_setzero_ps(), z1 = z0;
  if (!first) bias = NULL;
  if (bias && !brow) z0 = _mm512_maskz_loadu_ps(m0, bias), z1 = _mm512_maskz_loadu_ps(m1, bias + 16);
#pragma GCC unroll 14
  for (int i = 0; i < GM_MR; i++) {
    if (i >= mr) break;
    float *ci = c + i * ldc;
    __m512 r0 = acc[i][0], r1 = acc[i][1];
    if (load) {
      __m512 o0 = full ? _mm512_loadu_ps(ci) : _mm512_maskz_loadu_ps(m0, ci);
      __m512 o1 = full ? _mm512_loadu_ps(ci + 16) : _mm512_maskz_loadu_ps(m1, ci + 16);
      if (load == 2) o0 = _mm512_mul_ps(o0, vb), o1 = _mm512_mul_ps(o1, vb);
      r0 = _mm512_add_ps(r0, o0), r1 = _mm512_add_ps(r1, o1);
    }
    if (bias) {
      if (brow) z0 = z1 = _mm512_set1_ps(bias[i]);
      r0 = _mm512_add_ps(r0, z0), r1 = _mm512_add_ps(r1, z1);
    }
    if (full) {
      _mm512_storeu_ps(ci, r0);
      _mm512_storeu_ps(ci + 16, r1);
    } else {
      _mm512_mask_storeu_ps(ci, m0, r0);
      _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
  }
}

/* One register tile: micro_acc over kc from zero, then micro_store. */
__attribute__((target("avx512f"), always_inline)) static inline void
micro_at(int64_t kc, const float *restrict a, int64_t ka, int64_t ia, const float *restrict b,
         float *restrict c, int64_t ldc, int64_t mr, int64_t nr, int first, float beta,
         const float *bias, int brow) {
  __m512 acc[GM_MR][2];
  for (int i = 0; i < GM_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  micro_acc(acc, kc, a, ka, ia, b);
  micro_store(acc, c, ldc, mr, nr, first, beta, bias, brow);
}

__attribute__((target("avx512f"))) static void micro(int64_t kc, const float *restrict a,
                                                     const float *restrict b, float *restrict c,
                                                     int64_t ldc, int64_t mr, int64_t nr,
                                                     int first, float beta, const float *bias,
                                                     int brow) {
  micro_at(kc, a, GM_MR, 1, b, c, ldc, mr, nr, first, beta, bias, brow);
}

/* The same on MR whole rows of A in place (lda apart): no packing of op(A) when A is not
 * transposed (a channels-last convolution's positions: packing was 3% of a 1x1's time). */
__attribute__((target("avx512f"))) static void micro_rows(int64_t kc, const float *restrict a,
                                                          int64_t lda, const float *restrict b,
                                                          float *restrict c, int64_t ldc,
                                                          int64_t nr, int first, float beta,
                                                          const float *bias, int brow) {
  micro_at(kc, a, 1, lda, b, c, ldc, GM_MR, nr, first, beta, bias, brow);
}

/* The implicit GEMM's tile (nn_gemm_taps): the taps' products summed in the registers, one
 * store. */
__attribute__((target("avx512f"))) static void micro_taps(int64_t ntap, int64_t kt,
                                                          const float *restrict a, int64_t lda,
                                                          const int64_t *toff,
                                                          const float *restrict b, float *c,
                                                          int64_t ldc, int64_t mr, int64_t nr,
                                                          int first, const float *bias) {
  __m512 acc[GM_MR][2];
  for (int i = 0; i < GM_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t t = 0; t < ntap; t++) micro_acc(acc, kt, a + toff[t], 1, lda, b + t * kt * GM_NR);
  micro_store(acc, c, ldc, mr, nr, first, 0.0f, bias, 0);
}

/* A prepacked operand (nn_gemm_pack): KC blocks one after another, each the whole operand's
 * strips (rows padded to a multiple of the strip width). */
static int64_t padded(int64_t n, int64_t r) { return (n + r - 1) / r * r; }

static void sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                  const float *B, int64_t ldb, float beta, float *C, int64_t ldc, void *ws,
                  const float *apk, const float *bpk, const float *bias, int brow) {
  float *bp = (float *)(((uintptr_t)ws + 63) & ~(uintptr_t)63);
  float *ap = bp + GM_KC * GM_NC;
  const int64_t Mp = padded(M, GM_MR), Np = padded(N, GM_NR);
  /* op(A) = A read in place by whole strips (the last partial one packed), unless its rows
   * 2 KiB apart or a multiple of that put more than 4 of a strip's 14 rows in one L1 set */
  const int direct = !apk && !ta && lda % 512 != 0;
  for (int64_t j0 = 0; j0 < N; j0 += GM_NC) {
    int64_t nc = N - j0 < GM_NC ? N - j0 : GM_NC;
    for (int64_t p0 = 0; p0 < K; p0 += GM_KC) {
      int64_t kc = K - p0 < GM_KC ? K - p0 : GM_KC;
      if (bpk) bp = (float *)bpk + p0 * Np + j0 * kc;
      else pack_b(bp, B, ldb, tb, p0, kc, j0, nc);
      for (int64_t i0 = 0; i0 < M; i0 += GM_MC) {
        int64_t mc = M - i0 < GM_MC ? M - i0 : GM_MC, mf = direct ? mc - mc % GM_MR : 0;
        if (apk) ap = (float *)apk + p0 * Mp + i0 * kc;
        else if (mf < mc) pack_a(ap + mf * kc, A, lda, ta, i0 + mf, mc - mf, p0, kc);
        for (int64_t js = 0; js < nc; js += GM_NR) {
          int64_t nr = nc - js < GM_NR ? nc - js : GM_NR;
          for (int64_t is = 0; is < mc; is += GM_MR) {
            float *c = C + (i0 + is) * ldc + j0 + js;
            const float *bi = bias ? bias + (brow ? i0 + is : j0 + js) : NULL;
            if (is < mf)
              micro_rows(kc, A + (i0 + is) * lda + p0, lda, bp + js * kc, c, ldc, nr, p0 == 0,
                         beta, bi, brow);
            else
              micro(kc, ap + is * kc, bp + js * kc, c, ldc, mc - is < GM_MR ? mc - is : GM_MR, nr,
                    p0 == 0, beta, bi, brow);
          }
        }
      }
    }
  }
}

int nn_gemm_taps_ok(void) { return have_avx512(); }

void nn_gemm_taps(int64_t M, int64_t N, int64_t ntap, int64_t kt, const float *A, int64_t lda,
                  const int64_t *toff, const float *bpk, int64_t bs, float *C, int64_t ldc,
                  int first, const float *bias) {
  for (int64_t js = 0; js < N; js += GM_NR) {
    int64_t nr = N - js < GM_NR ? N - js : GM_NR;
    const float *b = bpk + js / GM_NR * bs, *bi = bias ? bias + js : NULL;
    for (int64_t is = 0; is < M; is += GM_MR)
      micro_taps(ntap, kt, A + is * lda, lda, toff, b, C + is * ldc + js, ldc,
                 M - is < GM_MR ? M - is : GM_MR, nr, first, bi);
  }
}

int nn_gemm_own(opf_dtype dt, int64_t M, int64_t N, int64_t K) {
  return dt == OPF_F32 && have_avx512() && (double)M * (double)N * (double)K >= GM_MIN_MACS &&
         M >= 2 * GM_MR && N >= GM_NR && K >= 32;
}

void nn_gemm_pack_part(int side, int trans, int64_t MN, int64_t K, const void *X, int64_t ld,
                       void *dst, int64_t s0, int64_t s1) {
  const int64_t R = side ? GM_NR : GM_MR, Xp = padded(MN, R);
  int64_t a = s0 * R, b = s1 * R < MN ? s1 * R : MN;
  if (a >= b) return;
  for (int64_t p0 = 0; p0 < K; p0 += GM_KC) {
    int64_t kc = K - p0 < GM_KC ? K - p0 : GM_KC;
    float *d = (float *)dst + p0 * Xp + a * kc;
    if (side) pack_b(d, X, ld, trans, p0, kc, a, b - a);
    else pack_a(d, X, ld, trans, a, b - a, p0, kc);
  }
}
#else
int nn_gemm_taps_ok(void) { return 0; }
void nn_gemm_taps(int64_t M, int64_t N, int64_t ntap, int64_t kt, const float *A, int64_t lda,
                  const int64_t *toff, const float *bpk, int64_t bs, float *C, int64_t ldc,
                  int first, const float *bias) {
  (void)M, (void)N, (void)ntap, (void)kt, (void)A, (void)lda, (void)toff, (void)bpk, (void)bs;
  (void)C, (void)ldc, (void)first, (void)bias;
}
int nn_gemm_own(opf_dtype dt, int64_t M, int64_t N, int64_t K) {
  (void)dt, (void)M, (void)N, (void)K;
  return 0;
}
void nn_gemm_pack_part(int side, int trans, int64_t MN, int64_t K, const void *X, int64_t ld,
                       void *dst, int64_t s0, int64_t s1) {
  (void)side, (void)trans, (void)MN, (void)K, (void)X, (void)ld, (void)dst, (void)s0, (void)s1;
}
#endif

int64_t nn_gemm_pack_strips(int side, int64_t MN) {
  int64_t R = side ? GM_NR : GM_MR;
  return (MN + R - 1) / R;
}

void nn_gemm_pack(int side, int trans, int64_t MN, int64_t K, const void *X, int64_t ld,
                  void *dst) {
  nn_gemm_pack_part(side, trans, MN, K, X, ld, dst, 0, nn_gemm_pack_strips(side, MN));
}

size_t nn_gemm_pack_bytes(int64_t MN, int64_t K) {
  return (size_t)(((MN + GM_NR - 1) / GM_NR * GM_NR + GM_NR) * K) * sizeof(float) + 64;
}

void nn_gemm_pre_bias(int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                      int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc,
                      void *ws, const void *apk, const void *bpk, const float *bias, int brow) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (K > 0) sgemm(ta, tb, M, N, K, A, lda, B, ldb, (float)beta, C, ldc, ws, apk, bpk, bias, brow);
  else if (beta != 1.0 || bias) /* an empty sum: C = beta C (+ bias) */
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        float *c = (float *)C + i * ldc + j;
        *c = (beta == 0 ? 0 : (float)beta * *c) + (bias ? bias[brow ? i : j] : 0);
      }
#else
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb;
  (void)beta, (void)C, (void)ldc, (void)ws, (void)apk, (void)bpk, (void)bias, (void)brow;
#endif
}

void nn_gemm_pre(int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
                 const void *B, int64_t ldb, double beta, void *C, int64_t ldc, void *ws,
                 const void *apk, const void *bpk) {
  nn_gemm_pre_bias(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, ws, apk, bpk, NULL, 0);
}

void nn_gemm(opf_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
             int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc,
             void *ws) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (ws && K > 0 && nn_gemm_own(dt, M, N, K)) {
    sgemm(ta, tb, M, N, K, A, lda, B, ldb, (float)beta, C, ldc, ws, NULL, NULL, NULL, 0);
    return;
  }
#else
  (void)ws;
#endif
  lin_gemm(dt, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

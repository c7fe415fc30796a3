/* linalg.h: helpers shared by this family's operators. For the GEMM-shaped ones (dot,
 * batch_dot, nn dense): a row-major OpenBLAS GEMM call for either float dtype, the forward and
 * backward of one C = op(A) op(B) product, and the naive double-accumulating reference they are
 * tested against. For the data-movement ones (transpose, concat, take): their traffic model
 * and a copy for short runs. */
#ifndef OPPERF_OPS_LINALG_H
#define OPPERF_OPS_LINALG_H

#include <cblas.h>
#include <limits.h>

#include "opf_kernel.h"

/* One product C(M,N) = op(A) op(B): A is stored (M,K), or (K,M) when ta; B is stored (K,N),
 * or (N,K) when tb. Row-major and contiguous, so the leading dimensions follow. */
typedef struct lin_mm {
  opf_dtype dt;
  int ta, tb;
  int64_t M, N, K;
} lin_mm;

static inline int64_t lin_lda(const lin_mm *m) { return m->ta ? m->M : m->K; }
static inline int64_t lin_ldb(const lin_mm *m) { return m->tb ? m->K : m->N; }

/* OpenBLAS takes int dimensions (LP64 build): infer rejects anything larger. */
static inline int lin_check_int(opf_case *c, const char *what, int64_t v) {
  if (v > INT_MAX)
    return opf_case_error(c, OPF_EINVAL, "%s is %lld, above the BLAS limit %d", what,
                          (long long)v, INT_MAX);
  return OPF_OK;
}

/* C = op(A) op(B) + beta C, row-major, M x N result with inner dimension K. A single row or
 * column (M or N of 1) goes to GEMV: OpenBLAS's GEMM runs a (1,1024)x(1024,1024) product at
 * ~20 GB/s of matrix traffic, its GEMV at ~100 (one thread). */
static inline void lin_gemm(opf_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                            const void *A, int64_t lda, const void *B, int64_t ldb, double beta,
                            void *C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const int f32 = dt == OPF_F32;
  if (K == 0) { /* an empty sum: C = beta C, which BLAS may leave untouched */
    if (beta == 0)
      for (int64_t i = 0; i < M; i++) memset((char *)C + (size_t)(i * ldc) * opf_dtype_size(dt), 0, (size_t)N * opf_dtype_size(dt));
    return;
  }
  /* BLAS requires a leading dimension >= 1. */
  lda = lda > 0 ? lda : 1, ldb = ldb > 0 ? ldb : 1;
  if (M == 1) { /* c (N) = op(B)^T a, with a's K elements lda apart when ta */
    const enum CBLAS_TRANSPOSE t = tb ? CblasNoTrans : CblasTrans;
    int rows = (int)(tb ? N : K), cols = (int)(tb ? K : N), inca = ta ? (int)lda : 1;
    if (f32) cblas_sgemv(CblasRowMajor, t, rows, cols, 1.0f, B, (int)ldb, A, inca, (float)beta, C, 1);
    else cblas_dgemv(CblasRowMajor, t, rows, cols, 1.0, B, (int)ldb, A, inca, beta, C, 1);
    return;
  }
  if (N == 1) { /* c (M, ldc apart) = op(A) b, with b's K elements ldb apart unless tb */
    const enum CBLAS_TRANSPOSE t = ta ? CblasTrans : CblasNoTrans;
    int rows = (int)(ta ? K : M), cols = (int)(ta ? M : K), incb = tb ? 1 : (int)ldb;
    if (f32) cblas_sgemv(CblasRowMajor, t, rows, cols, 1.0f, A, (int)lda, B, incb, (float)beta, C, (int)ldc);
    else cblas_dgemv(CblasRowMajor, t, rows, cols, 1.0, A, (int)lda, B, incb, beta, C, (int)ldc);
    return;
  }
  const enum CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  if (f32)
    cblas_sgemm(CblasRowMajor, opa, opb, (int)M, (int)N, (int)K, 1.0f, A, (int)lda, B, (int)ldb,
                (float)beta, C, (int)ldc);
  else
    cblas_dgemm(CblasRowMajor, opa, opb, (int)M, (int)N, (int)K, 1.0, A, (int)lda, B, (int)ldb,
                beta, C, (int)ldc);
}

/* Forward: C = op(A) op(B) + beta C (beta 1 lets dense pre-load the bias into C). */
static inline void lin_mm_forward(const lin_mm *m, const void *A, const void *B, double beta,
                                  void *C) {
  lin_gemm(m->dt, m->ta, m->tb, m->M, m->N, m->K, A, lin_lda(m), B, lin_ldb(m), beta, C, m->N);
}

/* Backward of C = op(A) op(B) given G = dL/dC (M,N); overwrites dA and dB (either may be NULL)
 * in A's and B's stored layouts:
 *   op(A) gradient G op(B)^T, stored transposed when ta:  dA = op(B) G^T;
 *   op(B) gradient op(A)^T G, stored transposed when tb:  dB = G^T op(A). */
static inline void lin_mm_backward(const lin_mm *m, const void *A, const void *B, const void *G,
                                   void *dA, void *dB) {
  const int64_t M = m->M, N = m->N, K = m->K, lda = lin_lda(m), ldb = lin_ldb(m);
  if (dA) {
    if (!m->ta) lin_gemm(m->dt, 0, !m->tb, M, K, N, G, N, B, ldb, 0, dA, K);
    else lin_gemm(m->dt, m->tb, 1, K, M, N, B, ldb, G, N, 0, dA, M);
  }
  if (dB) {
    if (!m->tb) lin_gemm(m->dt, !m->ta, 0, K, N, M, A, lda, G, N, 0, dB, N);
    else lin_gemm(m->dt, 1, m->ta, N, K, M, G, N, A, lda, 0, dB, K);
  }
}

static inline double lin_get(opf_dtype dt, const void *p, int64_t i) {
  return dt == OPF_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* Reference: C[m][n] = sum_k op(A)[m][k] op(B)[k][n] (+ bias[n] when bias), in double, by
 * the definition (no blocking, no BLAS). */
static inline void lin_mm_reference(const lin_mm *m, const void *A, const void *B,
                                    const void *bias, void *C) {
  const int64_t M = m->M, N = m->N, K = m->K;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = bias ? lin_get(m->dt, bias, j) : 0.0;
      for (int64_t k = 0; k < K; k++)
        s += lin_get(m->dt, A, m->ta ? k * M + i : i * K + k) *
             lin_get(m->dt, B, m->tb ? j * K + k : k * N + j);
      if (m->dt == OPF_F32) ((float *)C)[i * N + j] = (float)s;
      else ((double *)C)[i * N + j] = s;
    }
}

/* ---- data movement ---- */

/* Models of a pure data movement (transpose, concat): no arithmetic, and each pass reads and
 * writes n elements once. */
static inline double lin_move_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}
static inline double lin_move_bytes(const opf_case *c, int64_t n, opf_pass p) {
  double b = 2.0 * (double)n * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, b, b);
}

/* Copy n bytes (a multiple of 4). Runs under 64 bytes, such as the 10-element rows of a
 * (10000,10) concat on axis 1, are two overlapping fixed-size moves the compiler inlines: a
 * libc memcpy call per 40-byte run cost ~2.5 ns, more than the copy. */
static inline void lin_copy(void *restrict dst, const void *restrict src, size_t n) {
  char *d = dst;
  const char *s = src;
  if (n >= 64) memcpy(d, s, n);
  else if (n >= 32) memcpy(d, s, 32), memcpy(d + n - 32, s + n - 32, 32);
  else if (n >= 16) memcpy(d, s, 16), memcpy(d + n - 16, s + n - 16, 16);
  else if (n >= 8) memcpy(d, s, 8), memcpy(d + n - 8, s + n - 8, 8);
  else if (n >= 4) memcpy(d, s, 4), memcpy(d + n - 4, s + n - 4, 4);
}

#endif

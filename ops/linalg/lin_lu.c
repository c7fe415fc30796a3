/* lin_lu.c: LU factorization with partial pivoting of a float32 square matrix under LAPACK
 * sgetrf's contract (column-major buffer, 1-based pivot rows, info = first zero pivot), so
 * getri and every reader of lin_getrf's factors take it unchanged. Recursion on column halves
 * (as LAPACK's getrf2): the left half factored, its row swaps applied to the right half, the
 * right half's top block solved (OpenBLAS TRSM), its bottom block updated by a product with
 * the left half (A22 -= A21 A12: the bulk of the 2n^3/3 flops), then the right half factored
 * and its swaps applied back to the left. The solves recurse on halves too (a third of the
 * flops, mostly products then). The products run on the own AVX-512 GEMM of
 * lin_sgemm.c (alpha -1 folded by negating A21 around it) where it takes the shape, else on
 * OpenBLAS; panels of at most LU_LEAF columns are factored column by column in place.
 * OpenBLAS's sgetrf runs its AVX2 (Haswell) GEMM here at ~125 GFLOP/s against the own
 * kernel's ~220 (1 thread, Zen 5). */
#include <math.h>

#include "linalg/linalg.h"
#include "nn/conv_core.h" /* nn_gemm_own */
#include "opf_kernel.h"

/* Column panels this narrow are factored column by column: their rank-1 updates stay in L1/L2
 * (LU_LEAF columns of n floats) and the recursion's products above are wide enough for GEMM. */
#define LU_LEAF 16
/* Triangular solves this small go to OpenBLAS's TRSM whole. */
#define LU_TRSM_LEAF 64

/* Column-major: element (i, j) at a[i + j * lda]; a column is contiguous (a row-major row). */

/* First index of the largest |x[i]| (LAPACK's isamax; NaNs are never chosen over a number). */
OPF_VEC static int64_t lu_amax(const float *x, int64_t n) {
  float best = 0;
  for (int64_t i = 0; i < n; i++) {
    float v = fabsf(x[i]);
    best = v > best ? v : best;
  }
  for (int64_t i = 0; i < n; i++)
    if (fabsf(x[i]) == best) return i;
  return 0;
}

/* x[i] = x[i] * r, y[i] -= x[i] * t: the scaled pivot column and one rank-1 update. */
OPF_VEC static void lu_scale(float *x, int64_t n, float r) {
  for (int64_t i = 0; i < n; i++) x[i] *= r;
}
OPF_VEC static void lu_axpy(float *restrict y, const float *restrict x, int64_t n, float t) {
  for (int64_t i = 0; i < n; i++) y[i] -= x[i] * t;
}

/* Unblocked LU of the m x n panel a (n <= LU_LEAF): pivots into ipiv (1-based, relative to the
 * panel's first row); returns the first zero pivot's column + 1, or 0. */
static int lu_leaf(int64_t m, int64_t n, float *a, int64_t lda, int *ipiv) {
  int info = 0;
  const int64_t kn = m < n ? m : n;
  for (int64_t k = 0; k < kn; k++) {
    float *col = a + k * lda;
    const int64_t p = k + lu_amax(col + k, m - k);
    ipiv[k] = (int)(p + 1);
    if (col[p] != 0) {
      if (p != k)
        for (int64_t j = 0; j < n; j++) {
          float t = a[k + j * lda];
          a[k + j * lda] = a[p + j * lda], a[p + j * lda] = t;
        }
      lu_scale(col + k + 1, m - k - 1, 1.0f / col[k]);
    } else if (!info) {
      info = (int)(k + 1);
    }
    for (int64_t j = k + 1; j < n; j++) lu_axpy(a + k + 1 + j * lda, col + k + 1, m - k - 1, a[k + j * lda]);
  }
  return info;
}

/* The row swaps ipiv[k0, k1) (1-based rows) on the ncols columns at a, one column at a time. */
static void lu_swaps(float *a, int64_t lda, int64_t ncols, const int *ipiv, int64_t k0, int64_t k1) {
  for (int64_t j = 0; j < ncols; j++) {
    float *col = a + j * lda;
    for (int64_t k = k0; k < k1; k++) {
      const int64_t p = ipiv[k] - 1;
      if (p != k) {
        float t = col[k];
        col[k] = col[p], col[p] = t;
      }
    }
  }
}

/* C (m x n) -= A (m x k) B (k x n), column-major with one leading dimension: the row-major
 * product C^T = B^T A^T. The own kernel takes alpha 1 only: A is negated around it (exactly
 * undone: a sign flip). */
static void lu_gemm_sub(int64_t m, int64_t n, int64_t k, float *A, const float *B, float *C,
                        int64_t ld) {
  if (nn_gemm_own(OPF_F32, n, m, k)) {
    for (int64_t j = 0; j < k; j++) lu_scale(A + j * ld, m, -1.0f);
    lin_gemm_own(0, OPF_F32, 0, 0, n, m, k, 1.0, B, ld, A, ld, 1.0, C, ld);
    for (int64_t j = 0; j < k; j++) lu_scale(A + j * ld, m, -1.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)m, (int)k, -1.0f, B,
              (int)ld, A, (int)ld, 1.0f, C, (int)ld);
}

/* B (m x n) = L^-1 B with L (m x m) unit lower triangular, column-major with one leading
 * dimension: halves of L by recursion, so all but LU_TRSM_LEAF-wide diagonal blocks of the
 * m^2 n flops are products on lu_gemm_sub (OpenBLAS's TRSM runs its AVX2 kernels). */
static void lu_trsm(int64_t m, int64_t n, float *L, float *B, int64_t ld) {
  if (m <= LU_TRSM_LEAF) {
    cblas_strsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (int)m, (int)n,
                1.0f, L, (int)ld, B, (int)ld);
    return;
  }
  const int64_t h = m / 2;
  lu_trsm(h, n, L, B, ld);
  lu_gemm_sub(m - h, n, h, L + h, B, B + h, ld);
  lu_trsm(m - h, n, L + h + h * ld, B + h, ld);
}

static int lu_rec(int64_t m, int64_t n, float *a, int64_t lda, int *ipiv) {
  if (n <= LU_LEAF) return lu_leaf(m, n, a, lda, ipiv);
  const int64_t kn = m < n ? m : n, n1 = kn / 2, n2 = n - n1;
  int info = lu_rec(m, n1, a, lda, ipiv);
  float *a12 = a + n1 * lda, *a21 = a + n1, *a22 = a + n1 + n1 * lda;
  lu_swaps(a12, lda, n2, ipiv, 0, n1);
  lu_trsm(n1, n2, a, a12, lda);
  lu_gemm_sub(m - n1, n2, n1, a21, a12, a22, lda);
  int info2 = lu_rec(m - n1, n2, a22, lda, ipiv + n1);
  if (info2 && !info) info = (int)(info2 + n1);
  for (int64_t k = n1; k < kn; k++) ipiv[k] += (int)n1;
  lu_swaps(a, lda, n1, ipiv, n1, kn);
  return info;
}

int lin_own_sgetrf(int64_t n, float *a, int *ipiv) {
  if (n <= 0) return 0;
  return lu_rec(n, n, a, n, ipiv);
}

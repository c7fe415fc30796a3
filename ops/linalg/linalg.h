/* linalg.h: helpers shared by this family's operators. For the GEMM-shaped ones (dot,
 * batch_dot, nn dense, linalg_gemm): a row-major OpenBLAS GEMM call for either float dtype, the
 * forward and backward of one C = alpha op(A) op(B) product, and the naive double-accumulating
 * reference they are tested against. For the triangular and factorization operators (trsm,
 * trmm, syrk, potrf, potri, inverse, det, ...): dtype-dispatching BLAS-2/3 and LAPACK calls and
 * the triangle, transpose and fill helpers of lin_util.c. For the data-movement ones
 * (transpose, concat, take): their traffic model and a copy for short runs. */
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
  int blas; /* every product by OpenBLAS (the "openblas" --impl), not lin_gemm_own's kernels */
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

/* C = alpha op(A) op(B) + beta C, row-major, M x N result with inner dimension K. A single
 * row or column (M or N of 1) goes to GEMV: OpenBLAS's GEMM runs a (1,1024)x(1024,1024)
 * product at ~20 GB/s of matrix traffic, its GEMV at ~100 (one thread). */
static inline void lin_gemm_ab(opf_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                               double alpha, const void *A, int64_t lda, const void *B,
                               int64_t ldb, double beta, void *C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const int f32 = dt == OPF_F32;
  const size_t es = opf_dtype_size(dt);
  if (K == 0) { /* an empty sum: C = beta C, which BLAS may leave untouched */
    for (int64_t i = 0; i < M; i++) {
      char *row = (char *)C + (size_t)(i * ldc) * es;
      if (beta == 0) memset(row, 0, (size_t)N * es);
      else if (f32) for (int64_t j = 0; j < N; j++) ((float *)row)[j] *= (float)beta;
      else for (int64_t j = 0; j < N; j++) ((double *)row)[j] *= beta;
    }
    return;
  }
  /* BLAS requires a leading dimension >= 1. */
  lda = lda > 0 ? lda : 1, ldb = ldb > 0 ? ldb : 1;
  if (M == 1) { /* c (N) = op(B)^T a, with a's K elements lda apart when ta */
    const enum CBLAS_TRANSPOSE t = tb ? CblasNoTrans : CblasTrans;
    int rows = (int)(tb ? N : K), cols = (int)(tb ? K : N), inca = ta ? (int)lda : 1;
    if (f32) cblas_sgemv(CblasRowMajor, t, rows, cols, (float)alpha, B, (int)ldb, A, inca, (float)beta, C, 1);
    else cblas_dgemv(CblasRowMajor, t, rows, cols, alpha, B, (int)ldb, A, inca, beta, C, 1);
    return;
  }
  if (N == 1) { /* c (M, ldc apart) = op(A) b, with b's K elements ldb apart unless tb */
    const enum CBLAS_TRANSPOSE t = ta ? CblasTrans : CblasNoTrans;
    int rows = (int)(ta ? K : M), cols = (int)(ta ? M : K), incb = tb ? 1 : (int)ldb;
    if (f32) cblas_sgemv(CblasRowMajor, t, rows, cols, (float)alpha, A, (int)lda, B, incb, (float)beta, C, (int)ldc);
    else cblas_dgemv(CblasRowMajor, t, rows, cols, alpha, A, (int)lda, B, incb, beta, C, (int)ldc);
    return;
  }
  const enum CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  if (f32)
    cblas_sgemm(CblasRowMajor, opa, opb, (int)M, (int)N, (int)K, (float)alpha, A, (int)lda, B,
                (int)ldb, (float)beta, C, (int)ldc);
  else
    cblas_dgemm(CblasRowMajor, opa, opb, (int)M, (int)N, (int)K, alpha, A, (int)lda, B,
                (int)ldb, beta, C, (int)ldc);
}

/* lin_sgemm.c: float32 C = alpha op(A) op(B) + beta C by the project's own threaded kernels
 * (AVX-512 GEMV, outer product, dot-product tiles, conv_gemm.c's packed kernel); 0 when it
 * does not cover the case (no AVX-512, other shapes): nothing was written, use OpenBLAS. */
int lin_own_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* lin_gemm_ab by the own kernels where they cover the product, unless blas. */
static inline void lin_gemm_own(int blas, opf_dtype dt, int ta, int tb, int64_t M, int64_t N,
                                int64_t K, double alpha, const void *A, int64_t lda,
                                const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  if (!blas && dt == OPF_F32 &&
      lin_own_sgemm(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc))
    return;
  lin_gemm_ab(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* C = op(A) op(B) + beta C (alpha 1). */
static inline void lin_gemm(opf_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                            const void *A, int64_t lda, const void *B, int64_t ldb, double beta,
                            void *C, int64_t ldc) {
  lin_gemm_ab(dt, ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

/* Forward: C = op(A) op(B) + beta C (beta 1 lets dense pre-load the bias into C). */
static inline void lin_mm_forward(const lin_mm *m, const void *A, const void *B, double beta,
                                  void *C) {
  lin_gemm_own(m->blas, m->dt, m->ta, m->tb, m->M, m->N, m->K, 1.0, A, lin_lda(m), B,
               lin_ldb(m), beta, C, m->N);
}

/* Backward of C = alpha op(A) op(B) given G = dL/dC (M,N); overwrites dA and dB (either may
 * be NULL) in A's and B's stored layouts:
 *   op(A) gradient alpha G op(B)^T, stored transposed when ta:  dA = alpha op(B) G^T;
 *   op(B) gradient alpha op(A)^T G, stored transposed when tb:  dB = alpha G^T op(A). */
static inline void lin_mm_backward_ab(const lin_mm *m, double alpha, const void *A,
                                      const void *B, const void *G, void *dA, void *dB) {
  const int64_t M = m->M, N = m->N, K = m->K, lda = lin_lda(m), ldb = lin_ldb(m);
  if (dA) {
    if (!m->ta) lin_gemm_own(m->blas, m->dt, 0, !m->tb, M, K, N, alpha, G, N, B, ldb, 0, dA, K);
    else lin_gemm_own(m->blas, m->dt, m->tb, 1, K, M, N, alpha, B, ldb, G, N, 0, dA, M);
  }
  if (dB) {
    if (!m->tb) lin_gemm_own(m->blas, m->dt, !m->ta, 0, K, N, M, alpha, A, lda, G, N, 0, dB, N);
    else lin_gemm_own(m->blas, m->dt, 1, m->ta, N, K, M, alpha, G, N, A, lda, 0, dB, K);
  }
}

/* The same with alpha 1 (dot, batch_dot, dense). */
static inline void lin_mm_backward(const lin_mm *m, const void *A, const void *B, const void *G,
                                   void *dA, void *dB) {
  lin_mm_backward_ab(m, 1.0, A, B, G, dA, dB);
}

static inline double lin_get(opf_dtype dt, const void *p, int64_t i) {
  return dt == OPF_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static inline void lin_set(opf_dtype dt, void *p, int64_t i, double v) {
  if (dt == OPF_F32) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
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

/* ---- BLAS-2/3 beyond GEMM (row-major, either float dtype) ---- */

/* y = alpha op(A) x + beta y with A stored (rows, cols), op = transpose when trans. */
static inline void lin_gemv(opf_dtype dt, int trans, int64_t rows, int64_t cols, double alpha,
                            const void *A, int64_t lda, const void *x, int64_t incx, double beta,
                            void *y, int64_t incy) {
  const enum CBLAS_TRANSPOSE t = trans ? CblasTrans : CblasNoTrans;
  if (rows == 0 || cols == 0) { /* an empty sum, which BLAS skips: y = beta y */
    const int64_t len = trans ? cols : rows;
    for (int64_t i = 0; i < len; i++)
      lin_set(dt, y, i * incy, beta == 0 ? 0 : beta * lin_get(dt, y, i * incy));
    return;
  }
  lda = lda > 0 ? lda : 1;
  if (dt == OPF_F32)
    cblas_sgemv(CblasRowMajor, t, (int)rows, (int)cols, (float)alpha, A, (int)lda, x, (int)incx,
                (float)beta, y, (int)incy);
  else
    cblas_dgemv(CblasRowMajor, t, (int)rows, (int)cols, alpha, A, (int)lda, x, (int)incx, beta,
                y, (int)incy);
}

/* lin_gemv by the own kernels (float32, AVX-512; lin_sgemm.c's row GEMV) unless blas: y (rows,
 * or cols when trans) = alpha op(A) x + beta y. Only y = A x with at least 64 rows of 2+
 * columns: there the own kernel won (1 thread: 100000 x 10 85 vs 163 us, 1024 x 1024 40 vs 43,
 * 4096 x 64 8.5 vs 10.4), while OpenBLAS stayed faster on A^T x (1024 x 1024: 76 vs 98 us;
 * 100000 x 10 at 2 threads: 0.33 vs 7.8 ms, a column split of 10 columns) and on a single row
 * or column (90 ns vs 1.7 us). */
static inline void lin_gemv_own(int blas, opf_dtype dt, int trans, int64_t rows, int64_t cols,
                                double alpha, const void *A, int64_t lda, const void *x,
                                int64_t incx, double beta, void *y, int64_t incy) {
  if (!blas && dt == OPF_F32 && !trans && rows >= 64 && cols >= 2 &&
      lin_own_sgemm(0, 0, rows, 1, cols, (float)alpha, A, lda, x, incx, (float)beta, y, incy))
    return;
  lin_gemv(dt, trans, rows, cols, alpha, A, lda, x, incx, beta, y, incy);
}

/* The triangular product (solve 0) or solve (solve 1) B := alpha op(A) B, or B op(A) when
 * right, in place on B (M,N); A is triangular (lower or upper), square of the side's size. */
static inline void lin_trxm(opf_dtype dt, int solve, int right, int lower, int trans, int64_t M,
                            int64_t N, double alpha, const void *A, int64_t lda, void *B,
                            int64_t ldb) {
  if (M == 0 || N == 0) return;
  const enum CBLAS_SIDE sd = right ? CblasRight : CblasLeft;
  const enum CBLAS_UPLO ul = lower ? CblasLower : CblasUpper;
  const enum CBLAS_TRANSPOSE t = trans ? CblasTrans : CblasNoTrans;
  const int m = (int)M, n = (int)N, la = lda > 0 ? (int)lda : 1, lb = ldb > 0 ? (int)ldb : 1;
  if (dt == OPF_F32) {
    if (solve) cblas_strsm(CblasRowMajor, sd, ul, t, CblasNonUnit, m, n, (float)alpha, A, la, B, lb);
    else cblas_strmm(CblasRowMajor, sd, ul, t, CblasNonUnit, m, n, (float)alpha, A, la, B, lb);
  } else {
    if (solve) cblas_dtrsm(CblasRowMajor, sd, ul, t, CblasNonUnit, m, n, alpha, A, la, B, lb);
    else cblas_dtrmm(CblasRowMajor, sd, ul, t, CblasNonUnit, m, n, alpha, A, la, B, lb);
  }
}

/* The lower triangle of C (n,n) = alpha A A^T, A (n,k); or alpha A^T A, A (k,n), when trans.
 * The strict upper triangle is not written. */
static inline void lin_syrk(opf_dtype dt, int trans, int64_t n, int64_t k, double alpha,
                            const void *A, void *C) {
  if (n == 0) return;
  const enum CBLAS_TRANSPOSE t = trans ? CblasTrans : CblasNoTrans;
  const int lda = (int)(trans ? n : k) > 0 ? (int)(trans ? n : k) : 1;
  if (dt == OPF_F32)
    cblas_ssyrk(CblasRowMajor, CblasLower, t, (int)n, (int)k, (float)alpha, A, lda, 0.0f, C, (int)n);
  else
    cblas_dsyrk(CblasRowMajor, CblasLower, t, (int)n, (int)k, alpha, A, lda, 0.0, C, (int)n);
}

/* ---- LAPACK: Fortran symbols inside libopenblas ----
 * Column-major, every argument by reference, and (gfortran ABI) a hidden length after each
 * character argument. A row-major matrix is the column-major transpose: a row-major lower
 * triangle is LAPACK's 'U', and LU of the row-major buffer factors A^T. */
void spotrf_(const char *uplo, const int *n, float *a, const int *lda, int *info, size_t uplo_len);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t uplo_len);
void spotri_(const char *uplo, const int *n, float *a, const int *lda, int *info, size_t uplo_len);
void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t uplo_len);
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void sgetri_(const int *n, float *a, const int *lda, const int *ipiv, float *work,
             const int *lwork, int *info);
void dgetri_(const int *n, double *a, const int *lda, const int *ipiv, double *work,
             const int *lwork, int *info);

/* Workspace of getri in elements per row: LAPACK's block size for it is 64 and it falls back to
 * unblocked (BLAS-2) code when given less than n * 64. */
#define LIN_GETRI_NB 64

/* Cholesky (inverse 0) of the row-major lower triangle of a (n,n) in place, A = L L^T, or the
 * inverse (inverse 1) (L L^T)^-1 from the factor L there, written to the lower triangle. The
 * strict upper triangle is neither read nor written. Returns LAPACK's info (> 0: not positive
 * definite, or a zero on the factor's diagonal). */
static inline int lin_potrx(opf_dtype dt, int inverse, int64_t n, void *a) {
  int nn = (int)n, ld = nn > 1 ? nn : 1, info = 0;
  if (dt == OPF_F32) (inverse ? spotri_ : spotrf_)("U", &nn, a, &ld, &info, 1);
  else (inverse ? dpotri_ : dpotrf_)("U", &nn, a, &ld, &info, 1);
  return info;
}

/* LU with partial pivoting of the row-major (n,n) buffer in place: it factors A^T = P L U
 * (so det A = det A^T). Returns info (> 0: exactly singular). */
static inline int lin_getrf(opf_dtype dt, int64_t n, void *a, int *ipiv) {
  int nn = (int)n, ld = nn > 1 ? nn : 1, info = 0;
  if (dt == OPF_F32) sgetrf_(&nn, &nn, a, &ld, ipiv, &info);
  else dgetrf_(&nn, &nn, a, &ld, ipiv, &info);
  return info;
}

/* lin_lu.c: lin_getrf's float32 factorization (the same contract) by recursion on the own GEMM. */
int lin_own_sgetrf(int64_t n, float *a, int *ipiv);

/* lin_getrf by lin_lu.c for float32 unless blas (LAPACK's, OpenBLAS's kernels). */
static inline int lin_getrf_own(int blas, opf_dtype dt, int64_t n, void *a, int *ipiv) {
  if (!blas && dt == OPF_F32) return lin_own_sgetrf(n, a, ipiv);
  return lin_getrf(dt, n, a, ipiv);
}

/* Inverse from lin_getrf's factors, in place: the row-major buffer then holds A^-1. work has
 * n * LIN_GETRI_NB elements. */
static inline int lin_getri(opf_dtype dt, int64_t n, void *a, const int *ipiv, void *work) {
  int nn = (int)n, ld = nn > 1 ? nn : 1, lw = nn * LIN_GETRI_NB, info = 0;
  if (lw < 1) lw = 1;
  if (dt == OPF_F32) sgetri_(&nn, a, &ld, ipiv, work, &lw, &info);
  else dgetri_(&nn, a, &ld, ipiv, work, &lw, &info);
  return info;
}

/* Shape sets of the square-matrix operators (potrf, potri, inverse, det, slogdet): not
 * GEMM-shaped, so no skewed set; tiny small shapes, since the gradient check calls the O(n^3)
 * reference 48 times per input per entry, and test sizes off the block boundaries. */
#define LIN_SQUARE_SHAPES                                                                      \
  {{"standard", "a=1024x1024"}, {"small", "a=1x1"},      {"small", "a=2x2"},                   \
   {"small", "a=4x4"},          {"small", "a=7x7"},      {"test", "a=301x301"},                \
   {"test", "a=67x67"},         {"large", "a=4096x4096"}}

/* ---- lin_util.c: case helpers, triangle and transpose kernels, writers, fills, references ---- */

/* The product of one batch entry of a matmul-shaped case: inputs 0 (a) and 1 (b), params 0
 * (transpose_a) and 1 (transpose_b), rank 3 with a leading batch dimension. */
void opf_lin_mm_of(const opf_case *c, lin_mm *m, int64_t *batch);
/* Validates a and b as rank-2 (or 3) operands of that product, sets output 0 (batch,)M x N. */
int opf_lin_mm_infer(opf_case *c, int rank);

/* Input i must be a square matrix (n,n) within BLAS's int range: sets *n, or fails the case
 * with a message naming the input and its shape. */
int opf_lin_square(opf_case *c, int i, int64_t *n);

/* y (n) = s x, threaded and vectorised (y may be x). */
void opf_lin_scale(opf_dtype dt, int64_t n, double s, const void *x, void *y);

/* D (n,m) = alpha X^T + beta Y, with X (m,n); Y NULL means beta 0. D must not overlap X. */
void opf_lin_transpose_add(opf_dtype dt, int64_t n, int64_t m, double alpha, const void *X,
                           int64_t ldx, double beta, const void *Y, int64_t ldy, void *D,
                           int64_t ldd);

/* In-place triangle operations on a square (n,n) row-major matrix. */
typedef enum lin_tri_op {
  LIN_TRI_MIRROR, /* upper := lower^T (make the matrix symmetric from its lower triangle) */
  LIN_TRI_FOLD,   /* lower := lower + upper^T below the diagonal, then upper := 0 */
  LIN_TRI_KEEP    /* keep one triangle scaled (off-diagonal by s, diagonal by sd), zero the other */
} lin_tri_op;
/* lower selects the triangle LIN_TRI_KEEP keeps (the others work from the lower one). */
void opf_lin_tri(opf_dtype dt, lin_tri_op op, int64_t n, void *a, int lower, double s, double sd);

/* The lower (or upper) triangle, diagonal included, of C (n,n) = alpha op(A) op(B), op(A) being
 * (n,k); the other triangle is zeroed. Panels of rows skip most of the unwanted half. */
void opf_lin_gemm_tri(opf_dtype dt, int lower, int ta, int tb, int64_t n, int64_t k, double alpha,
                      const void *A, int64_t lda, const void *B, int64_t ldb, void *C);

/* Writes an (R,C) matrix through fn, which fills rows [r0, r1), columns [c0, c1) into dst
 * (row stride c1 - c0): threaded, and with streaming stores (creation/create_common.h's
 * cr_write) when the matrix is larger than the LLC, where ordinary stores would also read
 * every line (read-for-ownership). */
typedef void (*lin_rows_fn)(const void *ctx, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                            void *dst);
void opf_lin_write_rows(opf_dtype dt, int64_t R, int64_t C, void *out, lin_rows_fn fn,
                        const void *ctx);

/* Sums over rows split across threads (gradients of broadcast operands: outer's dy,
 * khatri_rao's factors): fn(ctx, lo, hi, acc) accumulates rows [lo, hi) into acc[0..n); thread
 * 0 into the destinations themselves (zeroed first), the others into workspace slots of
 * opf_lin_acc_ws bytes (sized at infer for opf_lin_acc_slots threads; more are capped), which
 * are then added in. Single-threaded below OPF_PAR_MIN elements (rows * row_elems). */
#define LIN_MAX_ACC 3
typedef struct {
  int n;
  void *dst[LIN_MAX_ACC];
  int64_t len[LIN_MAX_ACC]; /* elements */
} lin_accs;
typedef void (*lin_acc_fn)(const void *ctx, int64_t lo, int64_t hi, void *const *acc);
int opf_lin_acc_slots(void);
size_t opf_lin_acc_ws(opf_dtype dt, const lin_accs *a);
void opf_lin_accumulate(opf_dtype dt, int64_t rows, int64_t row_elems, const lin_accs *a,
                        void *ws, lin_acc_fn fn, const void *ctx);

/* out (M,N) = alpha x y^T, x of M elements incx apart, y contiguous. */
void opf_lin_outer(opf_dtype dt, int64_t M, int64_t N, double alpha, const void *x, int64_t incx,
                   const void *y, void *out);
/* Its backward in one pass over G (M,N): dx = G y, dy = G^T x; ws of opf_lin_acc_ws bytes for
 * N-element accumulators. */
void opf_lin_outer_backward(opf_dtype dt, int64_t M, int64_t N, const void *G, const void *x,
                            const void *y, void *dx, void *dy, void *ws);

/* Fill hooks for matrix inputs with structure (seeded like opf_fill_uniform, the same values in
 * float32 and float64):
 *   spd:     symmetric positive definite, off-diagonal uniform in [-1,1), diagonal n + [-1,1):
 *            diagonally dominant, eigenvalues within n +- ~1.2 sqrt(n) (cond ~ 1 + 2.4/sqrt(n));
 *   tri:     diagonal in [1,2), off-diagonal in [-a,a) with a = 0.5/sqrt(n): either triangle is
 *            a well-conditioned triangular matrix (|strict part| < ~0.6);
 *   factor:  tri with the strict upper triangle zero (a Cholesky factor);
 *   general: a random permutation matrix plus [-a,a) noise, a = 0.5/sqrt(n), scaled by 2 for
 *            logdet (log|det| ~ n log 2, away from 0); its singular values lie in ~[0.4, 1.6],
 *            |det| in about [0.3, 3] before scaling, partial pivoting really pivots and the sign
 *            of det is random. */
int opf_lin_fill_spd(opf_case *c, int i, opf_rng *r);
int opf_lin_fill_tri(opf_case *c, int i, opf_rng *r);
int opf_lin_fill_factor(opf_case *c, int i, opf_rng *r);
int opf_lin_fill_general(opf_case *c, int i, opf_rng *r);
int opf_lin_fill_logdet(opf_case *c, int i, opf_rng *r);

/* References (naive, double precision, no BLAS). LU with partial pivoting of a (n,n) in
 * place: piv[k] is the row swapped with row k at step k; returns the permutation's sign. */
double opf_lin_ref_lu(double *a, int64_t n, int64_t *piv);
/* Square input t (f32 or f64) read into a new double (n,n) buffer (NULL when out of memory). */
double *opf_lin_ref_load(const opf_tensor *t);
/* The reference's OPF_ENOMEM for an (n,n) scratch matrix. */
int opf_lin_ref_nomem(opf_case *c, int64_t n);

/* ---- data movement ---- */

/* Models of a pure data movement (transpose, reshape, split): no arithmetic, and each pass
 * reads and writes n elements once; a backward that hands dx (input 0's gradient, the only
 * one) back as a view of g moves nothing. */
static inline double lin_move_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}
static inline double lin_move_bytes(const opf_case *c, int64_t n, opf_pass p) {
  double b = 2.0 * (double)n * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, b, opf_case_grad_view(c, 0, NULL) ? 0 : b);
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

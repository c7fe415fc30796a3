/* potrf.c: Cholesky factorization potrf, A = L L^T for a symmetric positive-definite A, and
 * potri, the inverse (L L^T)^-1 from the factor L, with their gradients, through OpenBLAS's
 * LAPACK (potrf, potri) and BLAS-3 (trmm, trsm, gemm). Both read the lower triangle of their
 * input only (LAPACK's convention), so the gradients are with respect to that triangle. */
#include <math.h>

#include "linalg/linalg.h"

static int square_infer(opf_case *c) {
  int64_t n;
  int rc = opf_lin_square(c, 0, &n);
  if (rc) return rc;
  opf_set_out(c, 0, c->dtype, 2, c->in[0].shape);
  return OPF_OK;
}

static int64_t dim(const opf_case *c) { return c->in[0].shape[0]; }

/* ---- potrf ---- */

static int potrf_forward(opf_case *c) {
  const int64_t n = dim(c);
  memcpy(c->out[0].data, c->in[0].data, c->out[0].nbytes);
  int info = lin_potrx(c->dtype, 0, n, c->out[0].data);
  if (info > 0)
    return opf_case_error(c, OPF_EINVAL,
                          "a is not positive definite: its leading minor of order %d is not positive",
                          info);
  opf_lin_tri(c->dtype, LIN_TRI_KEEP, n, c->out[0].data, 1, 1, 1);
  return OPF_OK;
}

/* Murray (2016), "Differentiation of the Cholesky decomposition": with Phi(X) the lower
 * triangle of X with its diagonal halved and Lbar = tril(G),
 *   S = L^-T Phi(L^T Lbar) L^-1
 * is the gradient for a symmetric perturbation of A. A perturbation of the lower-triangle entry
 * a_ij (i > j) moves a_ij and a_ji, so dA = tril(S + S^T) with the diagonal S_ii. All in place in
 * dA: one TRMM and two TRSMs, n^3 flops each. */
static int potrf_backward(opf_case *c) {
  const opf_dtype dt = c->dtype;
  const int64_t n = dim(c);
  void *d = c->gin[0].data;
  const void *L = c->out[0].data;
  if (!d) return OPF_OK;
  memcpy(d, c->gout[0].data, c->gin[0].nbytes);
  opf_lin_tri(dt, LIN_TRI_KEEP, n, d, 1, 1, 1);                 /* Lbar */
  lin_trxm(dt, 0, 0, 1, 1, n, n, 1.0, L, n, d, n);               /* L^T Lbar */
  opf_lin_tri(dt, LIN_TRI_KEEP, n, d, 1, 1, 0.5);               /* Phi */
  lin_trxm(dt, 1, 0, 1, 1, n, n, 1.0, L, n, d, n);               /* L^-T ... */
  lin_trxm(dt, 1, 1, 1, 0, n, n, 1.0, L, n, d, n);               /* ... L^-1 = S */
  opf_lin_tri(dt, LIN_TRI_FOLD, n, d, 1, 1, 1);                 /* tril(S + S^T) */
  return OPF_OK;
}

/* Cholesky-Banachiewicz in double, reading the lower triangle. */
static int potrf_reference(opf_case *c) {
  const opf_dtype dt = c->dtype;
  const int64_t n = dim(c);
  double *L = opf_lin_ref_load(&c->in[0]);
  if (!L) return opf_lin_ref_nomem(c, n);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j <= i; j++) {
      double s = L[i * n + j];
      for (int64_t k = 0; k < j; k++) s -= L[i * n + k] * L[j * n + k];
      if (i == j && s <= 0) {
        opf_free(L);
        return opf_case_error(c, OPF_EINVAL, "reference: a is not positive definite (pivot %lld)",
                              (long long)i);
      }
      L[i * n + j] = i == j ? sqrt(s) : s / L[j * n + j];
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) lin_set(dt, c->out[0].data, i * n + j, j <= i ? L[i * n + j] : 0);
  opf_free(L);
  return OPF_OK;
}

/* fwd: n^3/3 (the standard Cholesky count); bwd: one TRMM and two TRSMs on n x n, 3n^3. */
static double potrf_flops(const opf_case *c, opf_pass p) {
  const double n = (double)dim(c);
  return opf_pass_sum(p, n * n * n / 3, 3 * n * n * n);
}

/* fwd reads the lower triangle and writes L; bwd reads L's triangle and G and writes dA. */
static double potrf_bytes(const opf_case *c, opf_pass p) {
  const double n = (double)dim(c), es = (double)opf_dtype_size(c->dtype), tri = n * (n + 1) / 2;
  return opf_pass_sum(p, (tri + n * n) * es, (tri + 2 * n * n) * es);
}

OPPERF_OP(potrf) = {
    .abi = OPF_OP_ABI,
    .name = "potrf",
    .category = "linalg",
    .summary = "Cholesky factor L of a symmetric positive-definite a = L L^T (LAPACK potrf)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = opf_lin_fill_spd,
            .help = "symmetric positive-definite (N,N), lower triangle read (generated "
                    "diagonally dominant: eigenvalues within N +- 1.2 sqrt(N))"}},
    .n_out = 1,
    .out = {"l"},
    .shapes = LIN_SQUARE_SHAPES,
    .infer = square_infer,
    .forward = potrf_forward,
    .backward = potrf_backward,
    .reference = potrf_reference,
    .flops = potrf_flops,
    .bytes = potrf_bytes,
};

/* ---- potri ---- */

static int potri_infer(opf_case *c) {
  int rc = square_infer(c);
  if (rc) return rc;
  const int64_t n = dim(c);
  c->ws_bytes = (size_t)(n * n) * opf_dtype_size(c->dtype); /* G + G^T for backward */
  return OPF_OK;
}

static int potri_forward(opf_case *c) {
  const int64_t n = dim(c);
  memcpy(c->out[0].data, c->in[0].data, c->out[0].nbytes);
  int info = lin_potrx(c->dtype, 1, n, c->out[0].data);
  if (info > 0)
    return opf_case_error(c, OPF_EINVAL, "the factor a is singular: a[%d][%d] is zero", info - 1,
                          info - 1);
  opf_lin_tri(c->dtype, LIN_TRI_MIRROR, n, c->out[0].data, 1, 1, 1);
  return OPF_OK;
}

/* C = (L L^T)^-1: dC = -C dA C with dA = dL L^T + L dL^T gives
 *   dL = -tril((C S C) L) = -tril(C S L^-T),  S = G + G^T  (C L = L^-T).
 * One GEMM (2n^3) and one TRSM (n^3). */
static int potri_backward(opf_case *c) {
  const opf_dtype dt = c->dtype;
  const int64_t n = dim(c);
  void *d = c->gin[0].data;
  if (!d) return OPF_OK;
  opf_lin_transpose_add(dt, n, n, 1.0, c->gout[0].data, n, 1.0, c->gout[0].data, n, c->ws, n);
  lin_gemm(dt, 0, 0, n, n, n, c->out[0].data, n, c->ws, n, 0.0, d, n);
  lin_trxm(dt, 1, 1, 1, 1, n, n, 1.0, c->in[0].data, n, d, n); /* ... L^-T */
  opf_lin_tri(dt, LIN_TRI_KEEP, n, d, 1, -1, -1);
  return OPF_OK;
}

/* L^-1 by forward substitution, then C = L^-T L^-1, in double from the lower triangle. */
static int potri_reference(opf_case *c) {
  const opf_dtype dt = c->dtype;
  const int64_t n = dim(c);
  double *L = opf_lin_ref_load(&c->in[0]), *X = opf_alloc((size_t)(n * n + 1) * sizeof *X);
  if (!L || !X) {
    opf_free(L), opf_free(X);
    return opf_lin_ref_nomem(c, n);
  }
  for (int64_t j = 0; j < n; j++) /* column j of X = L^-1 solves L x = e_j */
    for (int64_t i = 0; i < n; i++) {
      double s = i == j;
      for (int64_t k = j; k < i; k++) s -= L[i * n + k] * X[k * n + j];
      X[i * n + j] = i < j ? 0 : s / L[i * n + i];
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t k = 0; k < n; k++) s += X[k * n + i] * X[k * n + j];
      lin_set(dt, c->out[0].data, i * n + j, s);
    }
  opf_free(L), opf_free(X);
  return OPF_OK;
}

/* fwd: triangular inverse n^3/3 and the product L^-T L^-1 n^3/3; bwd: G + G^T n^2, GEMM 2n^3,
 * TRSM n^3. */
static double potri_flops(const opf_case *c, opf_pass p) {
  const double n = (double)dim(c);
  return opf_pass_sum(p, 2 * n * n * n / 3, 3 * n * n * n + n * n);
}

/* fwd reads L's triangle and writes C; bwd reads G, C and L's triangle and writes dL. */
static double potri_bytes(const opf_case *c, opf_pass p) {
  const double n = (double)dim(c), es = (double)opf_dtype_size(c->dtype), tri = n * (n + 1) / 2;
  return opf_pass_sum(p, (tri + n * n) * es, (tri + 3 * n * n) * es);
}

OPPERF_OP(potri) = {
    .abi = OPF_OP_ABI,
    .name = "potri",
    .category = "linalg",
    .summary = "inverse (a a^T)^-1 from a lower Cholesky factor a (LAPACK potri)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = opf_lin_fill_factor,
            .help = "lower-triangular Cholesky factor (N,N), lower triangle read (generated "
                    "with diagonal in [1,2) and a small strict part: well conditioned)"}},
    .n_out = 1,
    .out = {"inv"},
    .shapes = LIN_SQUARE_SHAPES,
    .infer = potri_infer,
    .forward = potri_forward,
    .backward = potri_backward,
    .reference = potri_reference,
    .flops = potri_flops,
    .bytes = potri_bytes,
};

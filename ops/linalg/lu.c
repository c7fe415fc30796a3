/* lu.c: the LU-based operators inverse (A^-1), det (det A) and slogdet (sign and log|det A|)
 * of a general square matrix, with their gradients: float32 LU by lin_lu.c (the own GEMM;
 * --impl openblas: OpenBLAS's LAPACK getrf), float64 LU, getri and the GEMMs by OpenBLAS.
 * Gradients: inverse -A^-T G A^-T; det g det(A) A^-T; slogdet g A^-T (the sign is piecewise
 * constant). det and slogdet keep forward's LU factors in the workspace, and their
 * backward turns a copy of them into A^-1 (getri). */
#include <math.h>

#include "linalg/linalg.h"

/* Workspace: [scratch n^2][getri work n*NB][ipiv n] (elements, elements, ints), with the LU
 * factors first for det and slogdet. */
typedef struct {
  char *lu, *scratch, *work;
  int *ipiv;
} lu_ws;

static lu_ws lu_ws_of(const opf_case *c, int keep_lu) {
  const int64_t n = c->in[0].shape[0];
  const size_t es = opf_dtype_size(c->dtype), sq = (size_t)(n * n) * es;
  lu_ws w;
  w.lu = keep_lu ? c->ws : NULL;
  w.scratch = (char *)c->ws + (keep_lu ? sq : 0);
  w.work = w.scratch + sq;
  w.ipiv = (int *)(w.work + (size_t)(n * LIN_GETRI_NB) * es);
  return w;
}

static int lu_infer(opf_case *c, int keep_lu, int n_out) {
  int64_t n;
  int rc = opf_lin_square(c, 0, &n);
  if (rc) return rc;
  if ((rc = lin_check_int(c, "N * 64 (getri's workspace)", n * LIN_GETRI_NB))) return rc;
  const size_t es = opf_dtype_size(c->dtype);
  c->ws_bytes = (size_t)(n * n) * es * (keep_lu ? 2 : 1) + (size_t)(n * LIN_GETRI_NB) * es +
                (size_t)n * sizeof(int);
  if (n_out == 0) opf_set_out(c, 0, c->dtype, 2, c->in[0].shape);
  for (int i = 0; i < n_out; i++) opf_set_out(c, i, c->dtype, 0, NULL);
  return OPF_OK;
}

static int64_t dim(const opf_case *c) { return c->in[0].shape[0]; }

/* ---- inverse ---- */

static int inverse_infer(opf_case *c) { return lu_infer(c, 0, 0); }

static int inverse_run(opf_case *c, int blas) {
  const int64_t n = dim(c);
  lu_ws w = lu_ws_of(c, 0);
  memcpy(c->out[0].data, c->in[0].data, c->out[0].nbytes);
  int info = lin_getrf_own(blas, c->dtype, n, c->out[0].data, w.ipiv);
  if (info > 0)
    return opf_case_error(c, OPF_EINVAL, "a is singular: U[%d][%d] of its LU is zero", info - 1,
                          info - 1);
  info = lin_getri(c->dtype, n, c->out[0].data, w.ipiv, w.work);
  if (info) return opf_case_error(c, OPF_EKERNEL, "getri failed (info %d)", info);
  return OPF_OK;
}

static int inverse_forward(opf_case *c) { return inverse_run(c, 0); }
static int inverse_blas_fwd(opf_case *c) { return inverse_run(c, 1); }

/* Y = A^-1: dY = -Y dA Y gives dA = -Y^T G Y^T: T = G Y^T, then dA = -Y^T T (two GEMMs). */
static int inverse_backward(opf_case *c) {
  const int64_t n = dim(c);
  const void *Y = c->out[0].data;
  lu_ws w = lu_ws_of(c, 0);
  if (!c->gin[0].data) return OPF_OK;
  lin_gemm(c->dtype, 0, 1, n, n, n, c->gout[0].data, n, Y, n, 0.0, w.scratch, n);
  lin_gemm_ab(c->dtype, 1, 0, n, n, n, -1.0, Y, n, w.scratch, n, 0.0, c->gin[0].data, n);
  return OPF_OK;
}

/* Column j of A^-1 solves A x = e_j: the pivots' row swaps, then L (unit) and U substitution. */
static int inverse_reference(opf_case *c) {
  const int64_t n = dim(c);
  double *a = opf_lin_ref_load(&c->in[0]), *x = opf_alloc((size_t)(n + 1) * sizeof *x);
  int64_t *piv = opf_alloc((size_t)(n + 1) * sizeof *piv);
  int rc = OPF_OK;
  if (!a || !x || !piv) {
    rc = opf_lin_ref_nomem(c, n);
    goto out;
  }
  opf_lin_ref_lu(a, n, piv);
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = 0; i < n; i++) x[i] = i == j;
    for (int64_t k = 0; k < n; k++) {
      double t = x[k];
      x[k] = x[piv[k]], x[piv[k]] = t;
    }
    for (int64_t i = 0; i < n; i++)
      for (int64_t k = 0; k < i; k++) x[i] -= a[i * n + k] * x[k];
    for (int64_t i = n - 1; i >= 0; i--) {
      for (int64_t k = i + 1; k < n; k++) x[i] -= a[i * n + k] * x[k];
      x[i] /= a[i * n + i];
    }
    for (int64_t i = 0; i < n; i++) lin_set(c->dtype, c->out[0].data, i * n + j, x[i]);
  }
out:
  opf_free(a), opf_free(x), opf_free(piv);
  return rc;
}

/* fwd: LU 2n^3/3 and the inverse from it 4n^3/3, 2n^3; bwd: two GEMMs, 4n^3. */
static double inverse_flops(const opf_case *c, opf_pass p) {
  const double n = (double)dim(c);
  return opf_pass_sum(p, 2 * n * n * n, 4 * n * n * n);
}

/* fwd reads A and writes A^-1; bwd reads G and A^-1 and writes dA. */
static double inverse_bytes(const opf_case *c, opf_pass p) {
  const double nn = (double)dim(c) * (double)dim(c), es = (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, 2 * nn * es, 3 * nn * es);
}

OPPERF_OP(inverse) = {
    .abi = OPF_OP_ABI,
    .name = "inverse",
    .category = "linalg",
    .summary = "inverse of a general square matrix (LU + LAPACK getri)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = opf_lin_fill_general,
            .help = "square matrix (N,N) (generated as a permutation plus small noise: well "
                    "conditioned, and partial pivoting pivots)"}},
    .n_out = 1,
    .out = {"inv"},
    .shapes = LIN_SQUARE_SHAPES,
    .infer = inverse_infer,
    .forward = inverse_forward,
    .backward = inverse_backward,
    .reference = inverse_reference,
    .flops = inverse_flops,
    .bytes = inverse_bytes,
};

/* ---- det and slogdet ---- */

/* LU of A into the workspace; sign and log|det| from its diagonal and pivots (log 0 = -inf and
 * sign 0 when A is exactly singular). ipiv is 1-based: a swap wherever ipiv[k] != k + 1. */
static void lu_logdet(opf_case *c, int blas, double *sign, double *logabs) {
  const opf_dtype dt = c->dtype;
  const int64_t n = dim(c);
  lu_ws w = lu_ws_of(c, 1);
  memcpy(w.lu, c->in[0].data, c->in[0].nbytes);
  lin_getrf_own(blas, dt, n, w.lu, w.ipiv); /* info > 0 (singular) shows as a zero on the diagonal */
  double s = 1, l = 0;
  for (int64_t k = 0; k < n; k++) {
    const double u = lin_get(dt, w.lu, k * n + k);
    if (w.ipiv[k] != k + 1) s = -s;
    if (u < 0) s = -s;
    l += log(fabs(u));
  }
  *sign = l == -INFINITY ? 0 : s;
  *logabs = l;
}

/* dA = s A^-T, with A^-1 from a copy of forward's LU factors (getri), transposed into dA. */
static int lu_grad(opf_case *c, double s) {
  const int64_t n = dim(c);
  lu_ws w = lu_ws_of(c, 1);
  if (!c->gin[0].data) return OPF_OK;
  memcpy(w.scratch, w.lu, c->in[0].nbytes);
  int info = lin_getri(c->dtype, n, w.scratch, w.ipiv, w.work);
  if (info > 0)
    return opf_case_error(c, OPF_EINVAL, "a is singular: the gradient (the adjugate) is not computed");
  opf_lin_transpose_add(c->dtype, n, n, s, w.scratch, n, 0.0, NULL, 0, c->gin[0].data, n);
  return OPF_OK;
}

static int det_infer(opf_case *c) { return lu_infer(c, 1, 1); }
static int slogdet_infer(opf_case *c) { return lu_infer(c, 1, 2); }

static int det_run(opf_case *c, int blas) {
  double s, l;
  lu_logdet(c, blas, &s, &l);
  lin_set(c->dtype, c->out[0].data, 0, s * exp(l));
  return OPF_OK;
}

static int slogdet_run(opf_case *c, int blas) {
  double s, l;
  lu_logdet(c, blas, &s, &l);
  lin_set(c->dtype, c->out[0].data, 0, s);
  lin_set(c->dtype, c->out[1].data, 0, l);
  return OPF_OK;
}

static int det_forward(opf_case *c) { return det_run(c, 0); }
static int det_blas_fwd(opf_case *c) { return det_run(c, 1); }
static int slogdet_forward(opf_case *c) { return slogdet_run(c, 0); }
static int slogdet_blas_fwd(opf_case *c) { return slogdet_run(c, 1); }

static int det_backward(opf_case *c) {
  return lu_grad(c, lin_get(c->dtype, c->gout[0].data, 0) * lin_get(c->dtype, c->out[0].data, 0));
}

static int slogdet_backward(opf_case *c) { return lu_grad(c, lin_get(c->dtype, c->gout[1].data, 0)); }

/* Gaussian elimination with partial pivoting in double: sign and log|det|. */
static int logdet_reference(opf_case *c, double *sign, double *logabs) {
  const int64_t n = dim(c);
  double *a = opf_lin_ref_load(&c->in[0]);
  int64_t *piv = opf_alloc((size_t)(n + 1) * sizeof *piv);
  if (!a || !piv) {
    opf_free(a), opf_free(piv);
    return opf_lin_ref_nomem(c, n);
  }
  double s = opf_lin_ref_lu(a, n, piv), l = 0;
  for (int64_t k = 0; k < n; k++) {
    s *= a[k * n + k] < 0 ? -1 : a[k * n + k] > 0 ? 1 : 0;
    l += log(fabs(a[k * n + k]));
  }
  *sign = s, *logabs = l;
  opf_free(a), opf_free(piv);
  return OPF_OK;
}

static int det_reference(opf_case *c) {
  double s, l;
  int rc = logdet_reference(c, &s, &l);
  if (!rc) lin_set(c->dtype, c->out[0].data, 0, s * exp(l));
  return rc;
}

static int slogdet_reference(opf_case *c) {
  double s, l;
  int rc = logdet_reference(c, &s, &l);
  if (!rc) lin_set(c->dtype, c->out[0].data, 0, s), lin_set(c->dtype, c->out[1].data, 0, l);
  return rc;
}

/* fwd: LU 2n^3/3 and n to reduce its diagonal; bwd: the inverse from the LU 4n^3/3 and the
 * scaled transpose n^2. */
static double logdet_flops(const opf_case *c, opf_pass p) {
  const double n = (double)dim(c);
  return opf_pass_sum(p, 2 * n * n * n / 3 + n, 4 * n * n * n / 3 + n * n);
}

/* fwd reads A, writes the scalars; bwd reads the LU factors and writes dA. */
static double logdet_bytes(const opf_case *c, opf_pass p) {
  const double nn = (double)dim(c) * (double)dim(c), es = (double)opf_dtype_size(c->dtype);
  const double outs = c->op->n_out;
  return opf_pass_sum(p, (nn + outs) * es, (2 * nn + outs) * es);
}

OPPERF_OP(det) = {
    .abi = OPF_OP_ABI,
    .name = "det",
    .category = "linalg",
    .summary = "determinant of a square matrix through its LU factorization",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = opf_lin_fill_general,
            .help = "square matrix (N,N) (generated as a permutation plus small noise: |det| "
                    "of order 1 at any N, either sign)"}},
    .n_out = 1,
    .out = {"det"},
    .shapes = LIN_SQUARE_SHAPES,
    .infer = det_infer,
    .forward = det_forward,
    .backward = det_backward,
    .reference = det_reference,
    .flops = logdet_flops,
    .bytes = logdet_bytes,
};

OPPERF_OP(slogdet) = {
    .abi = OPF_OP_ABI,
    .name = "slogdet",
    .category = "linalg",
    .summary = "sign and log|det| of a square matrix through its LU factorization",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = opf_lin_fill_logdet,
            .help = "square matrix (N,N) (generated as twice a permutation plus small noise: "
                    "log|det| about N log 2)"}},
    .n_out = 2,
    .out = {"sign", "logabsdet"},
    .shapes = LIN_SQUARE_SHAPES,
    .infer = slogdet_infer,
    .forward = slogdet_forward,
    .backward = slogdet_backward,
    .reference = slogdet_reference,
    .flops = logdet_flops,
    .bytes = logdet_bytes,
};

/* OpenBLAS's LAPACK getrf for the factorization (the float32 default is lin_lu.c's). */
#define LU_BLAS_IMPL(op, fwd, bwd)                                                             \
  {.abi = OPF_OP_ABI, .name = "openblas", .implements = op,                                  \
   .summary = "LU by OpenBLAS's LAPACK getrf", .forward = fwd, .backward = bwd}
OPPERF_IMPL(inverse_openblas) = LU_BLAS_IMPL("inverse", inverse_blas_fwd, inverse_backward);
OPPERF_IMPL(det_openblas) = LU_BLAS_IMPL("det", det_blas_fwd, det_backward);
OPPERF_IMPL(slogdet_openblas) = LU_BLAS_IMPL("slogdet", slogdet_blas_fwd, slogdet_backward);

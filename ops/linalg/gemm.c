/* gemm.c: the BLAS-3 products linalg_gemm, out = alpha op(A) op(B) + beta C, and syrk,
 * out = alpha A A^T (or alpha A^T A), with their gradients. linalg_gemm's float32 products run
 * on the own kernels of lin_sgemm.c where they cover the shape (as dot's do; its "openblas"
 * --impl keeps every product on OpenBLAS GEMM/GEMV), syrk on OpenBLAS SYRK.
 * syrk computes one triangle (half the flops of the equivalent GEMM) and mirrors it, since
 * the operator returns the full symmetric matrix. */
#include "linalg/linalg.h"

/* ---- linalg_gemm: params 0 and 1 are transpose_a and transpose_b, as opf_lin_mm_of wants ---- */
enum { G_ALPHA = 2, G_BETA = 3 };

static int gemm_infer(opf_case *c) {
  int rc = opf_lin_mm_infer(c, 2);
  if (rc) return rc;
  opf_tensor *C = &c->in[2];
  const opf_tensor *o = &c->out[0];
  if (C->ndim < 0) { /* derived: the product's shape */
    opf_tensor_set_shape(C, c->dtype, 2, o->shape);
    return OPF_OK;
  }
  char sc[96], so[96];
  if (C->ndim != 2 || C->shape[0] != o->shape[0] || C->shape[1] != o->shape[1])
    return opf_case_error(c, OPF_EINVAL, "c=%s must have the shape of op(a) op(b), %s",
                          opf_shape_str(C, sc, sizeof sc), opf_shape_str(o, so, sizeof so));
  return OPF_OK;
}

static int gemm_run(opf_case *c, int bwd, int blas) {
  lin_mm m;
  int64_t batch;
  opf_lin_mm_of(c, &m, &batch);
  m.blas = blas;
  const double alpha = c->p[G_ALPHA], beta = c->p[G_BETA];
  if (!bwd) {
    /* beta C pre-loaded into out for GEMM to add onto; beta 0 skips reading C (BLAS ignores
     * the old contents then, NaN included) */
    if (beta != 0) memcpy(c->out[0].data, c->in[2].data, c->out[0].nbytes);
    lin_gemm_own(blas, m.dt, m.ta, m.tb, m.M, m.N, m.K, alpha, c->in[0].data, lin_lda(&m),
                 c->in[1].data, lin_ldb(&m), beta, c->out[0].data, m.N);
    return OPF_OK;
  }
  /* dA and dB as for dot, scaled by alpha; dC = beta G. */
  lin_mm_backward_ab(&m, alpha, c->in[0].data, c->in[1].data, c->gout[0].data, c->gin[0].data,
                     c->gin[1].data);
  if (c->gin[2].data) opf_lin_scale(c->dtype, m.M * m.N, beta, c->gout[0].data, c->gin[2].data);
  return OPF_OK;
}
static int gemm_forward(opf_case *c) { return gemm_run(c, 0, 0); }
static int gemm_backward(opf_case *c) { return gemm_run(c, 1, 0); }
static int gemm_blas_fwd(opf_case *c) { return gemm_run(c, 0, 1); }
static int gemm_blas_bwd(opf_case *c) { return gemm_run(c, 1, 1); }

static int gemm_reference(opf_case *c) {
  lin_mm m;
  int64_t batch;
  opf_lin_mm_of(c, &m, &batch);
  lin_mm_reference(&m, c->in[0].data, c->in[1].data, NULL, c->out[0].data);
  const double alpha = c->p[G_ALPHA], beta = c->p[G_BETA];
  for (int64_t k = 0; k < m.M * m.N; k++)
    lin_set(m.dt, c->out[0].data, k,
            alpha * lin_get(m.dt, c->out[0].data, k) + beta * lin_get(m.dt, c->in[2].data, k));
  return OPF_OK;
}

/* fwd: the product 2MNK plus beta C added in, 2MN (a multiply and an add per element; alpha
 * folds into the product as in BLAS's own count); bwd: dA and dB 4MNK, dC = beta G MN. */
static double gemm_flops(const opf_case *c, opf_pass p) {
  lin_mm m;
  int64_t batch;
  opf_lin_mm_of(c, &m, &batch);
  const double mn = (double)m.M * (double)m.N;
  return opf_pass_sum(p, 2 * mn * (double)m.K + 2 * mn, 4 * mn * (double)m.K + mn);
}

/* fwd reads A, B, C and writes out; bwd reads G, A, B and writes dA, dB, dC. */
static double gemm_bytes(const opf_case *c, opf_pass p) {
  lin_mm m;
  int64_t batch;
  opf_lin_mm_of(c, &m, &batch);
  const double es = (double)opf_dtype_size(c->dtype);
  const double ab = (double)m.M * (double)m.K + (double)m.K * (double)m.N;
  const double mn = (double)m.M * (double)m.N;
  return opf_pass_sum(p, (ab + 2 * mn) * es, (2 * ab + 2 * mn) * es);
}

OPPERF_OP(linalg_gemm) = {
    .abi = OPF_OP_ABI,
    .name = "linalg_gemm",
    .category = "linalg",
    .summary = "general matrix product alpha op(a) op(b) + beta c (own float32 kernels, else OpenBLAS GEMM)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "left operand (M,K), stored (K,M) with transpose_a"},
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "right operand (K,N), stored (N,K) with transpose_b"},
           {.name = "c", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "addend (M,N); derived from a and b when omitted"}},
    .n_out = 1,
    .out = {"out"},
    .n_params = 4,
    .params = {{.name = "transpose_a", .type = OPF_P_BOOL, .def = 0, .min = 0, .max = 1,
                .help = "a is stored transposed: (K,M) instead of (M,K)"},
               {.name = "transpose_b", .type = OPF_P_BOOL, .def = 0, .min = 0, .max = 1,
                .help = "b is stored transposed: (N,K) instead of (K,N)"},
               {.name = "alpha", .type = OPF_P_FLOAT, .def = 1, .min = -1e6, .max = 1e6,
                .help = "scale of the product"},
               {.name = "beta", .type = OPF_P_FLOAT, .def = 1, .min = -1e6, .max = 1e6,
                .help = "scale of c (0: c is not read)"}},
    .shapes = {{"standard", "a=1024x1024 b=1024x1024"},
               {"skewed", "a=1x1024 b=1024x1024"},
               {"skewed", "a=4096x64 b=64x4096"},
               {"skewed", "a=64x4096 b=4096x64"},
               {"skewed", "a=1024x1024 b=1024x1024 transpose_a=true"},
               {"skewed", "a=1024x1024 b=1024x1024 transpose_b=true"},
               {"small", "a=4x4 b=4x4"},
               {"small", "a=1x6 b=6x5 alpha=-1.5"},
               {"small", "a=7x3 b=3x5 alpha=0.5 beta=-2"},
               {"small", "a=3x7 b=5x3 transpose_a=true transpose_b=true alpha=2 beta=0"},
               {"small", "a=6x4 b=5x4 transpose_b=true beta=0.25"},
               {"small", "a=5x7 b=7x1 c=5x1"},
               {"test", "a=301x517 b=517x129 alpha=1.5 beta=0.5"},
               {"test", "a=517x301 b=129x517 transpose_a=true transpose_b=true alpha=-1 beta=2"},
               {"test", "a=301x517 b=517x129 beta=0.5"},
               {"test", "a=517x301 b=129x517 transpose_a=true transpose_b=true beta=0"},
               {"test", "a=301x517 b=129x517 transpose_b=true"},
               {"large", "a=4096x4096 b=4096x4096"}},
    .infer = gemm_infer,
    .forward = gemm_forward,
    .backward = gemm_backward,
    .reference = gemm_reference,
    .flops = gemm_flops,
    .bytes = gemm_bytes,
};
OPPERF_IMPL(linalg_gemm_openblas) = {.abi = OPF_OP_ABI, .name = "openblas", .implements = "linalg_gemm",
                                     .summary = "every product by OpenBLAS GEMM/GEMV",
                                     .forward = gemm_blas_fwd, .backward = gemm_blas_bwd};

/* ---- syrk ---- */
enum { S_TRANS = 0, S_ALPHA = 1 };

/* out is (n,n) from a (n,k), or a (k,n) with transpose. */
static void syrk_dims(const opf_case *c, int64_t *n, int64_t *k) {
  const int t = c->p[S_TRANS] != 0;
  *n = c->in[0].shape[t ? 1 : 0];
  *k = c->in[0].shape[t ? 0 : 1];
}

static int syrk_infer(opf_case *c) {
  const opf_tensor *a = &c->in[0];
  char s[96];
  if (a->ndim != 2)
    return opf_case_error(c, OPF_EINVAL, "needs a matrix a (N,K), got a=%s",
                          a->ndim < 0 ? "none" : opf_shape_str(a, s, sizeof s));
  int64_t n, k;
  syrk_dims(c, &n, &k);
  int rc;
  if ((rc = lin_check_int(c, "N", n)) || (rc = lin_check_int(c, "K", k))) return rc;
  int64_t shape[2] = {n, n};
  opf_set_out(c, 0, c->dtype, 2, shape);
  c->ws_bytes = (size_t)(n * n) * opf_dtype_size(c->dtype); /* G + G^T for backward */
  return OPF_OK;
}

static int syrk_forward(opf_case *c) {
  int64_t n, k;
  syrk_dims(c, &n, &k);
  if (k == 0) {
    memset(c->out[0].data, 0, c->out[0].nbytes);
    return OPF_OK;
  }
  lin_syrk(c->dtype, c->p[S_TRANS] != 0, n, k, c->p[S_ALPHA], c->in[0].data, c->out[0].data);
  opf_lin_tri(c->dtype, LIN_TRI_MIRROR, n, c->out[0].data, 1, 1, 1);
  return OPF_OK;
}

/* out = alpha A A^T: dA = alpha (G + G^T) A; out = alpha A^T A: dA = alpha A (G + G^T). */
static int syrk_backward(opf_case *c) {
  int64_t n, k;
  syrk_dims(c, &n, &k);
  if (!c->gin[0].data) return OPF_OK;
  const opf_dtype dt = c->dtype;
  const double alpha = c->p[S_ALPHA];
  const void *G = c->gout[0].data, *A = c->in[0].data;
  opf_lin_transpose_add(dt, n, n, 1.0, G, n, 1.0, G, n, c->ws, n);
  if (c->p[S_TRANS] != 0) lin_gemm_ab(dt, 0, 0, k, n, n, alpha, A, n, c->ws, n, 0.0, c->gin[0].data, n);
  else lin_gemm_ab(dt, 0, 0, n, k, n, alpha, c->ws, n, A, k, 0.0, c->gin[0].data, k);
  return OPF_OK;
}

static int syrk_reference(opf_case *c) {
  int64_t n, k;
  syrk_dims(c, &n, &k);
  const opf_dtype dt = c->dtype;
  const int t = c->p[S_TRANS] != 0;
  const void *A = c->in[0].data;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t l = 0; l < k; l++)
        s += t ? lin_get(dt, A, l * n + i) * lin_get(dt, A, l * n + j)
               : lin_get(dt, A, i * k + l) * lin_get(dt, A, j * k + l);
      lin_set(dt, c->out[0].data, i * n + j, c->p[S_ALPHA] * s);
    }
  return OPF_OK;
}

/* fwd: n(n+1)/2 dot products of length k, n(n+1)k (BLAS's count for SYRK); bwd: G + G^T n^2
 * and the product with A 2n^2 k. */
static double syrk_flops(const opf_case *c, opf_pass p) {
  int64_t n, k;
  syrk_dims(c, &n, &k);
  const double dn = (double)n, dk = (double)k;
  return opf_pass_sum(p, dn * (dn + 1) * dk, dn * dn + 2 * dn * dn * dk);
}

/* fwd reads A and writes out; bwd reads G and A and writes dA. */
static double syrk_bytes(const opf_case *c, opf_pass p) {
  int64_t n, k;
  syrk_dims(c, &n, &k);
  const double es = (double)opf_dtype_size(c->dtype);
  const double nn = (double)n * (double)n, nk = (double)n * (double)k;
  return opf_pass_sum(p, (nk + nn) * es, (nn + 2 * nk) * es);
}

OPPERF_OP(syrk) = {
    .abi = OPF_OP_ABI,
    .name = "syrk",
    .category = "linalg",
    .summary = "symmetric rank-k product alpha a a^T (or alpha a^T a) through OpenBLAS SYRK",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "matrix (N,K), or (K,N) with transpose"}},
    .n_out = 1,
    .out = {"out"},
    .n_params = 2,
    .params = {{.name = "transpose", .type = OPF_P_BOOL, .def = 0, .min = 0, .max = 1,
                .help = "out = alpha a^T a (N,N) from a (K,N) instead of alpha a a^T"},
               {.name = "alpha", .type = OPF_P_FLOAT, .def = 1, .min = -1e6, .max = 1e6,
                .help = "scale of the product"}},
    .shapes = {{"standard", "a=1024x1024"},
               {"skewed", "a=64x4096"},
               {"skewed", "a=4096x64"},
               {"skewed", "a=4096x64 transpose=true"},
               {"skewed", "a=64x4096 transpose=true"},
               {"small", "a=4x4"},
               {"small", "a=5x3"},
               {"small", "a=3x5 transpose=true alpha=-0.5"},
               {"small", "a=1x6"},
               {"small", "a=6x1 transpose=true alpha=2"},
               {"test", "a=301x517"},
               {"test", "a=517x129 transpose=true alpha=-0.75"},
               {"large", "a=4096x4096"}},
    .infer = syrk_infer,
    .forward = syrk_forward,
    .backward = syrk_backward,
    .reference = syrk_reference,
    .flops = syrk_flops,
    .bytes = syrk_bytes,
};

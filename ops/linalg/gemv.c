/* gemv.c: matrix-vector product gemv, y = A x, and the outer product outer, C = x y^T, with
 * their gradients. Both are memory-bound BLAS-2 work: gemv's y = A x goes to the own float32
 * row GEMV of lin_sgemm.c where it wins (linalg.h: lin_gemv_own), dx = A^T g and float64 to
 * OpenBLAS's GEMV (--impl openblas: all of it); the outer products (outer's forward, gemv's
 * dA) to a threaded vectorised writer that streams past the cache when large (BLAS's GER
 * would read and write the result), and outer's backward to one pass over G for both
 * gradients. */
#include "linalg/linalg.h"

/* A vector input (n,) whose length the other operand fixes; derived when the spec omits it. */
static int vec_input(opf_case *c, int i, int64_t n, const char *rule) {
  opf_tensor *v = &c->in[i];
  char s[96];
  if (v->ndim < 0) {
    opf_tensor_set_shape(v, c->dtype, 1, &n);
    return OPF_OK;
  }
  if (v->ndim != 1 || v->shape[0] != n)
    return opf_case_error(c, OPF_EINVAL, "%s=%s must be a vector of %lld elements (%s)",
                          c->op->in[i].name, opf_shape_str(v, s, sizeof s), (long long)n, rule);
  return OPF_OK;
}

/* ---- gemv ---- */

static int gemv_infer(opf_case *c) {
  const opf_tensor *a = &c->in[0];
  char s[96];
  if (a->ndim != 2)
    return opf_case_error(c, OPF_EINVAL, "needs a matrix a (M,N), got a=%s",
                          a->ndim < 0 ? "none" : opf_shape_str(a, s, sizeof s));
  int rc;
  if ((rc = lin_check_int(c, "M", a->shape[0])) || (rc = lin_check_int(c, "N", a->shape[1])) ||
      (rc = vec_input(c, 1, a->shape[1], "the columns of a")))
    return rc;
  opf_set_out(c, 0, c->dtype, 1, a->shape);
  return OPF_OK;
}

static int gemv_run(opf_case *c, int bwd, int blas) {
  const int64_t M = c->in[0].shape[0], N = c->in[0].shape[1];
  if (!bwd) {
    lin_gemv_own(blas, c->dtype, 0, M, N, 1.0, c->in[0].data, N, c->in[1].data, 1, 0.0,
                 c->out[0].data, 1);
    return OPF_OK;
  }
  /* dA = g x^T (the outer kernel), dx = A^T g (GEMV). */
  if (c->gin[0].data)
    opf_lin_outer(c->dtype, M, N, 1.0, c->gout[0].data, 1, c->in[1].data, c->gin[0].data);
  if (c->gin[1].data)
    lin_gemv_own(blas, c->dtype, 1, M, N, 1.0, c->in[0].data, N, c->gout[0].data, 1, 0.0,
                 c->gin[1].data, 1);
  return OPF_OK;
}
static int gemv_forward(opf_case *c) { return gemv_run(c, 0, 0); }
static int gemv_backward(opf_case *c) { return gemv_run(c, 1, 0); }
static int gemv_blas_fwd(opf_case *c) { return gemv_run(c, 0, 1); }
static int gemv_blas_bwd(opf_case *c) { return gemv_run(c, 1, 1); }

static int gemv_reference(opf_case *c) {
  const opf_dtype dt = c->dtype;
  const int64_t M = c->in[0].shape[0], N = c->in[0].shape[1];
  for (int64_t i = 0; i < M; i++) {
    double s = 0;
    for (int64_t j = 0; j < N; j++)
      s += lin_get(dt, c->in[0].data, i * N + j) * lin_get(dt, c->in[1].data, j);
    lin_set(dt, c->out[0].data, i, s);
  }
  return OPF_OK;
}

/* fwd: a multiply-add per element of A, 2MN; bwd: dA one multiply per element (MN) and dx a
 * multiply-add per element (2MN). */
static double gemv_flops(const opf_case *c, opf_pass p) {
  const double mn = (double)c->in[0].shape[0] * (double)c->in[0].shape[1];
  return opf_pass_sum(p, 2 * mn, 3 * mn);
}

/* fwd reads A and x, writes y; bwd reads A, x and g, writes dA and dx. */
static double gemv_bytes(const opf_case *c, opf_pass p) {
  const double M = (double)c->in[0].shape[0], N = (double)c->in[0].shape[1];
  const double es = (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, (M * N + N + M) * es, (2 * M * N + 2 * N + M) * es);
}

OPPERF_OP(gemv) = {
    .abi = OPF_OP_ABI,
    .name = "gemv",
    .category = "linalg",
    .summary = "matrix-vector product y = a x through OpenBLAS GEMV",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "matrix (M,N)"},
           {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "vector (N,); derived from a when omitted"}},
    .n_out = 1,
    .out = {"y"},
    .shapes = {{"standard", "a=1024x1024"},
               {"skewed", "a=1x1024"},
               {"skewed", "a=1024x1"},
               {"skewed", "a=4096x64"},
               {"skewed", "a=64x4096"},
               {"skewed", "a=100000x10"},
               {"small", "a=16x16"},
               {"small", "a=1x16"},
               {"small", "a=16x1"},
               {"small", "a=7x3 x=3"},
               {"small", "a=3x7"},
               {"test", "a=301x517"},
               {"test", "a=1000x67"},
               {"test", "a=1001x10"},
               {"test", "a=77x16"},
               {"large", "a=8192x8192"},
               {"huge", "a=46341x46341"}},
    .infer = gemv_infer,
    .forward = gemv_forward,
    .backward = gemv_backward,
    .reference = gemv_reference,
    .flops = gemv_flops,
    .bytes = gemv_bytes,
};

/* ---- outer ---- */

static int outer_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0], *y = &c->in[1];
  char s[96];
  if (x->ndim != 1)
    return opf_case_error(c, OPF_EINVAL, "needs a vector x (M,), got x=%s",
                          x->ndim < 0 ? "none" : opf_shape_str(x, s, sizeof s));
  if (y->ndim >= 0 && y->ndim != 1)
    return opf_case_error(c, OPF_EINVAL, "needs a vector y (N,), got y=%s",
                          opf_shape_str(y, s, sizeof s));
  int rc = vec_input(c, 1, y->ndim < 0 ? x->shape[0] : y->shape[0], "");
  if (rc) return rc;
  if ((rc = lin_check_int(c, "M", x->shape[0])) || (rc = lin_check_int(c, "N", y->shape[0])))
    return rc;
  int64_t shape[2] = {x->shape[0], y->shape[0]};
  opf_set_out(c, 0, c->dtype, 2, shape);
  lin_accs acc = {1, {NULL}, {y->shape[0]}}; /* per-thread partial dy */
  c->ws_bytes = opf_lin_acc_ws(c->dtype, &acc);
  return OPF_OK;
}

static int outer_forward(opf_case *c) {
  opf_lin_outer(c->dtype, c->in[0].shape[0], c->in[1].shape[0], 1.0, c->in[0].data, 1,
                c->in[1].data, c->out[0].data);
  return OPF_OK;
}

/* dx = G y and dy = G^T x in one pass over G (two GEMVs would read it twice). */
static int outer_backward(opf_case *c) {
  const int64_t M = c->in[0].shape[0], N = c->in[1].shape[0];
  void *dx = c->gin[0].data, *dy = c->gin[1].data;
  if (!dx || !dy)
    return opf_case_error(c, OPF_EKERNEL, "outer backward needs the gradients of both inputs");
  opf_lin_outer_backward(c->dtype, M, N, c->gout[0].data, c->in[0].data, c->in[1].data, dx, dy, c->ws);
  return OPF_OK;
}

static int outer_reference(opf_case *c) {
  const opf_dtype dt = c->dtype;
  const int64_t M = c->in[0].shape[0], N = c->in[1].shape[0];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++)
      lin_set(dt, c->out[0].data, i * N + j,
              lin_get(dt, c->in[0].data, i) * lin_get(dt, c->in[1].data, j));
  return OPF_OK;
}

/* fwd: one multiply per output element, MN; bwd: a multiply-add per element of G for each of
 * dx and dy, 4MN. */
static double outer_flops(const opf_case *c, opf_pass p) {
  const double mn = (double)c->in[0].shape[0] * (double)c->in[1].shape[0];
  return opf_pass_sum(p, mn, 4 * mn);
}

/* fwd reads x and y, writes C; bwd reads G, x and y, writes dx and dy. */
static double outer_bytes(const opf_case *c, opf_pass p) {
  const double M = (double)c->in[0].shape[0], N = (double)c->in[1].shape[0];
  const double es = (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, (M * N + M + N) * es, (M * N + 2 * M + 2 * N) * es);
}

OPPERF_IMPL(gemv_openblas) = {.abi = OPF_OP_ABI, .name = "openblas", .implements = "gemv",
                              .summary = "y = A x by OpenBLAS GEMV",
                              .forward = gemv_blas_fwd, .backward = gemv_blas_bwd};

OPPERF_OP(outer) = {
    .abi = OPF_OP_ABI,
    .name = "outer",
    .category = "linalg",
    .summary = "outer product c = x y^T of two vectors",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "vector (M,)"},
           {.name = "y", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "vector (N,); the shape of x when omitted"}},
    .n_out = 1,
    .out = {"c"},
    .shapes = {{"standard", "x=1024 y=1024"},
               {"skewed", "x=10000 y=10"},
               {"skewed", "x=10 y=10000"},
               {"skewed", "x=100000 y=10"},
               {"skewed", "x=10000 y=1"},
               {"skewed", "x=1 y=1024"},
               {"small", "x=16 y=16"},
               {"small", "x=1 y=16"},
               {"small", "x=16 y=1"},
               {"small", "x=7 y=3"},
               {"small", "x=5"},
               {"test", "x=301 y=517"},
               {"test", "x=4099 y=13"},
               {"large", "x=8192 y=8192"},
               {"huge", "x=46341 y=46341"}},
    .infer = outer_infer,
    .forward = outer_forward,
    .backward = outer_backward,
    .reference = outer_reference,
    .flops = outer_flops,
    .bytes = outer_bytes,
};

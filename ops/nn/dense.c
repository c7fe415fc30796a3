/* dense.c: fully connected layer y = x w^T + b (x flattened to (N, in) by default, or applied
 * on its last axis with flatten=false) and its gradients dx, dw, db. The products go through
 * linalg.h's lin_mm (float32: the own threaded kernels of lin_sgemm.c, else OpenBLAS; the
 * "openblas" --impl keeps every product on OpenBLAS); the bias is pre-loaded into y so the
 * GEMM adds onto it. */
#include <math.h>

#include "linalg/linalg.h"

enum { IN_X = 0, IN_W = 1, IN_B = 2 };
enum { P_UNITS = 0, P_FLATTEN = 1 };

/* Rows (N) and features (in) of x seen as a matrix. */
static void dense_dims(const opf_case *c, int64_t *rows, int64_t *in) {
  const opf_tensor *x = &c->in[IN_X];
  if (c->p[P_FLATTEN] != 0) {
    *rows = x->shape[0];
    *in = opf_shape_numel(x->ndim - 1, x->shape + 1);
  } else {
    *rows = opf_shape_numel(x->ndim - 1, x->shape);
    *in = x->shape[x->ndim - 1];
  }
}

static void dense_mm(const opf_case *c, lin_mm *m) {
  int64_t rows, in;
  dense_dims(c, &rows, &in);
  *m = (lin_mm){.dt = c->dtype, .ta = 0, .tb = 1, .M = rows, .N = c->in[IN_W].shape[0], .K = in};
}

static int dense_run_fwd(opf_case *c, int blas);
static int dense_run_bwd(opf_case *c, int blas);
static int dense_forward(opf_case *c) { return dense_run_fwd(c, 0); }
static int dense_backward(opf_case *c) { return dense_run_bwd(c, 0); }
static int dense_blas_fwd(opf_case *c) { return dense_run_fwd(c, 1); }
static int dense_blas_bwd(opf_case *c) { return dense_run_bwd(c, 1); }

static int dense_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *w = &c->in[IN_W], *b = &c->in[IN_B];
  int flatten = c->p[P_FLATTEN] != 0;
  int64_t units = (int64_t)c->p[P_UNITS];
  char sx[96], sw[96];
  if (x->ndim < 0)
    return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (e.g. x=32x1024 units=1024)");
  if (x->ndim < (flatten ? 2 : 1))
    return opf_case_error(c, OPF_EINVAL, "x=%s: needs (N, in...)%s",
                          opf_shape_str(x, sx, sizeof sx), flatten ? " with flatten" : "");
  int64_t rows, in;
  dense_dims(c, &rows, &in);
  if (w->ndim < 0) {
    if (units < 1)
      return opf_case_error(c, OPF_EINVAL, "needs units=N or a weight shape w=UNITSx%lld",
                            (long long)in);
    int64_t ws[2] = {units, in};
    opf_tensor_set_shape(w, w->dtype, 2, ws);
  }
  if (w->ndim != 2 || w->shape[1] != in)
    return opf_case_error(c, OPF_EINVAL, "w=%s must be (units, %lld) for x=%s%s",
                          opf_shape_str(w, sw, sizeof sw), (long long)in,
                          opf_shape_str(x, sx, sizeof sx), flatten ? " (flattened)" : "");
  if (units > 0 && w->shape[0] != units)
    return opf_case_error(c, OPF_EINVAL, "units=%lld disagrees with w=%s", (long long)units,
                          opf_shape_str(w, sw, sizeof sw));
  units = w->shape[0];
  if (c->present[IN_B]) {
    if (b->ndim < 0) opf_tensor_set_shape(b, b->dtype, 1, &units);
    if (b->ndim != 1 || b->shape[0] != units)
      return opf_case_error(c, OPF_EINVAL, "b=%s must be (%lld), one bias per unit",
                            opf_shape_str(b, sx, sizeof sx), (long long)units);
  }
  int rc;
  if ((rc = lin_check_int(c, "rows of x", rows)) || (rc = lin_check_int(c, "units", units)) ||
      (rc = lin_check_int(c, "features of x", in)))
    return rc;
  int64_t shape[OPF_MAX_DIMS];
  int nd = flatten ? 2 : x->ndim;
  if (flatten) shape[0] = rows;
  else memcpy(shape, x->shape, sizeof(int64_t) * (size_t)(x->ndim - 1));
  shape[nd - 1] = units;
  opf_set_out(c, 0, c->dtype, nd, shape);
  return OPF_OK;
}

/* Weights and bias uniform in +-1/sqrt(in), the usual fan-in initialisation, so y stays O(1). */
static int fill_fan_in(opf_case *c, int i, opf_rng *r) {
  (void)r;
  int64_t in = c->in[IN_W].shape[1];
  double s = 1.0 / sqrt((double)(in > 0 ? in : 1));
  opf_fill_uniform(&c->in[i], c->seed, (uint64_t)i, -s, s);
  return OPF_OK;
}

/* ---- bias broadcast and its gradient ---- */
typedef struct {
  const opf_case *c;
  int64_t units, rows;
} dense_ctx;

static void bias_rows(int64_t lo, int64_t hi, void *p) {
  const dense_ctx *x = p;
  size_t row = (size_t)x->units * opf_dtype_size(x->c->dtype);
  const char *b = x->c->in[IN_B].data;
  char *y = x->c->out[0].data;
  for (int64_t i = lo; i < hi; i++) memcpy(y + (size_t)i * row, b, row);
}

/* db[j] = sum_i g[i][j] over n columns: rows streamed in order, columns vectorised. */
#define DENSE_COLSUM(T, sfx)                                                                   \
  OPF_VEC static void colsum_##sfx(const T *restrict g, T *restrict db, int64_t rows,         \
                                   int64_t ld, int64_t n) {                                    \
    for (int64_t j = 0; j < n; j++) db[j] = 0;                                                 \
    for (int64_t i = 0; i < rows; i++)                                                         \
      for (int64_t j = 0; j < n; j++) db[j] += g[i * ld + j];                                  \
  }
DENSE_COLSUM(float, f32)
DENSE_COLSUM(double, f64)

/* Column blocks of 16 elements (a 64-byte line of float32) so threads never share a line. */
static void colsum_blocks(int64_t lo, int64_t hi, void *p) {
  const dense_ctx *x = p;
  int64_t j0 = lo * 16, j1 = hi * 16 < x->units ? hi * 16 : x->units;
  if (x->c->dtype == OPF_F32)
    colsum_f32((const float *)x->c->gout[0].data + j0, (float *)x->c->gin[IN_B].data + j0,
               x->rows, x->units, j1 - j0);
  else
    colsum_f64((const double *)x->c->gout[0].data + j0, (double *)x->c->gin[IN_B].data + j0,
               x->rows, x->units, j1 - j0);
}

static int dense_run_fwd(opf_case *c, int blas) {
  lin_mm m;
  dense_mm(c, &m);
  m.blas = blas;
  int bias = c->present[IN_B];
  if (bias) {
    dense_ctx x = {c, m.N, m.M};
    opf_parallel_range(m.M, m.N ? OPF_PAR_MIN / m.N + 1 : INT64_MAX, bias_rows, &x);
  }
  lin_mm_forward(&m, c->in[IN_X].data, c->in[IN_W].data, bias ? 1.0 : 0.0, c->out[0].data);
  return OPF_OK;
}

static int dense_run_bwd(opf_case *c, int blas) {
  lin_mm m;
  dense_mm(c, &m);
  m.blas = blas;
  lin_mm_backward(&m, c->in[IN_X].data, c->in[IN_W].data, c->gout[0].data, c->gin[IN_X].data,
                  c->gin[IN_W].data);
  if (c->present[IN_B] && c->gin[IN_B].data) {
    dense_ctx x = {c, m.N, m.M};
    int64_t blocks = (m.N + 15) / 16;
    opf_parallel_range(blocks, m.M * m.N >= OPF_PAR_MIN && blocks > 1 ? 2 : INT64_MAX,
                       colsum_blocks, &x);
  }
  return OPF_OK;
}

static int dense_reference(opf_case *c) {
  lin_mm m;
  dense_mm(c, &m);
  lin_mm_reference(&m, c->in[IN_X].data, c->in[IN_W].data,
                   c->present[IN_B] ? c->in[IN_B].data : NULL, c->out[0].data);
  return OPF_OK;
}

/* Forward 2*N*in*units for x w^T plus N*units bias adds; backward 2*N*in*units each for dx and
 * dw plus N*units adds for db. */
static double dense_flops(const opf_case *c, opf_pass p) {
  lin_mm m;
  dense_mm(c, &m);
  double mm = 2.0 * (double)m.M * (double)m.N * (double)m.K;
  double bias = c->present[IN_B] ? (double)m.M * (double)m.N : 0;
  double fwd = mm + bias, bwd = 2 * mm + bias;
  return opf_pass_sum(p, fwd, bwd);
}

/* Forward reads x, w, b and writes y; backward reads g, x, w and writes dx, dw, db. */
static double dense_bytes(const opf_case *c, opf_pass p) {
  double es = (double)opf_dtype_size(c->dtype);
  double x = (double)opf_numel(&c->in[IN_X]), w = (double)opf_numel(&c->in[IN_W]);
  double b = c->present[IN_B] ? (double)opf_numel(&c->in[IN_B]) : 0;
  double y = (double)opf_numel(&c->out[0]);
  double fwd = es * (x + w + b + y), bwd = es * (y + 2 * x + 2 * w + b);
  return opf_pass_sum(p, fwd, bwd);
}

OPPERF_OP(dense) = {
    .abi = OPF_OP_ABI,
    .name = "dense",
    .category = "nn.basic",
    .summary = "fully connected layer y = x w^T + b",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "input (N, in...): flattened to (N, in), or (..., in) with flatten=false"},
           {.name = "w", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = fill_fan_in,
            .help = "weights (units, in), uniform in +-1/sqrt(in); derived from units"},
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL,
            .fill = fill_fan_in, .help = "bias (units); b=none drops it"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{.name = "units", .type = OPF_P_INT, .def = 0, .min = 0, .max = INT_MAX,
                .help = "output features (0: taken from w's shape)"},
               {.name = "flatten", .type = OPF_P_BOOL, .def = 1, .min = 0, .max = 1,
                .help = "flatten x's trailing dims into features (else apply on the last axis)"}},
    .shapes = {{"standard", "x=32x1024 units=1024"},
               {"standard", "x=32x1024 units=1024 b=none"},
               {"skewed", "x=1x1024 units=1024"},
               {"skewed", "x=4096x64 units=64"},
               {"skewed", "x=32x3x256x256 units=64"},
               {"skewed", "x=32x16x1024 units=1024 flatten=false"},
               {"small", "x=4x16 units=8"},
               {"small", "x=1x16 units=16"},
               {"small", "x=3x2x5 units=4"},
               {"small", "x=2x3x5 units=4 flatten=false"},
               {"small", "x=5x7 units=3 b=none"},
               {"small", "x=3x6 w=4x6"},
               {"test", "x=67x301 units=129"},
               {"test", "x=33x3x17x19 units=65"},
               {"large", "x=8192x4096 units=4096"}},
    .infer = dense_infer,
    .forward = dense_forward,
    .backward = dense_backward,
    .reference = dense_reference,
    .flops = dense_flops,
    .bytes = dense_bytes,
};

OPPERF_IMPL(dense_openblas) = {.abi = OPF_OP_ABI, .name = "openblas", .implements = "dense",
                               .summary = "every product by OpenBLAS GEMM/GEMV",
                               .forward = dense_blas_fwd, .backward = dense_blas_bwd};

/* act_fused.c: fused activation operators. dense_relu = relu(x w^T + b): the GEMM runs in row
 * blocks and the bias + relu epilogue runs on each block right after its GEMM, while it is in
 * cache; backward masks dy by the output (y > 0) and sums db in one pass, then two GEMMs
 * (linalg.h's own float32 kernels, or OpenBLAS in the "openblas" --impl).
 * bias_gelu = gelu(x + bias) (erf form) over the last axis: one pass each way, the bias
 * gradient summed while dx is produced. Both are checked against their unfused chains
 * (.unfused) by the harness. */
#include "activation/act_common.h"
#include "linalg/linalg.h"

/* ================= dense_relu ================= */
/* Inputs and params in dense's order (x, w, b; units, flatten): shape inference, the weight
 * fill and the reference are dense's own (looked up in the registry), so the two cannot
 * drift apart; the unfused chain binds them by name. */
enum { DR_X = 0, DR_W = 1, DR_B = 2 };
enum { DR_UNITS = 0, DR_FLATTEN = 1 };
/* Row blocks: the y block of a GEMM call is about DR_BLOCK_BYTES, so the epilogue finds it in
 * L2/L3, with at least DR_MB_MIN rows: every call packs all of w again. Measured forward on
 * (4096, 1024) -> 1024, against one GEMM over all rows: blocks of 64 rows 1.15x the time,
 * 128 rows 1.05x, 256 rows and more the same within noise. */
#define DR_BLOCK_BYTES (1 << 20)
#define DR_MB_MIN 256

static const opf_op *dr_dense(opf_case *c) {
  const opf_op *d = opf_op_find("dense");
  if (!d) opf_case_error(c, OPF_ENOTFOUND, "dense_relu needs the dense operator in this build");
  return d;
}

/* dense's fan-in initialisation of w and b */
static int dr_fill(opf_case *c, int i, opf_rng *r) {
  const opf_op *d = dr_dense(c);
  return d ? d->in[i].fill(c, i, r) : OPF_ENOTFOUND;
}

/* the GEMM as dense sees it: y (M, N) = x (M, K) w^T, w (N, K); M is x's first dim
 * (flatten) or all but its last */
static lin_mm dr_mm(const opf_case *c) {
  const opf_tensor *x = &c->in[DR_X];
  const int64_t M = c->p[DR_FLATTEN] != 0 ? x->shape[0] : opf_shape_numel(x->ndim - 1, x->shape);
  return (lin_mm){.dt = c->dtype, .ta = 0, .tb = 1, .M = M, .N = c->in[DR_W].shape[0],
                  .K = c->in[DR_W].shape[1]};
}

/* Workspace: the masked gradient g (M, N), 64-byte rounded, then the db partial sums. */
static size_t dr_g_bytes(const opf_case *c, const lin_mm *m) {
  return ((size_t)(m->M * m->N) * opf_dtype_size(c->dtype) + 63) & ~(size_t)63;
}

static int dr_infer(opf_case *c) {
  const opf_op *d = dr_dense(c);
  if (!d) return OPF_ENOTFOUND;
  int rc = d->infer(c);
  if (rc) return rc;
  const lin_mm m = dr_mm(c);
  c->ws_bytes = dr_g_bytes(c, &m) + act_colsum_ws(m.M, m.N);
  return OPF_OK;
}

#define DR_KERNELS(T, S)                                                                      \
  /* y = max(y + b, 0) over rows of n (b NULL: no bias) */                                    \
  OPF_VEC static void dr_epi_##S(T *restrict y, const T *restrict b, int64_t rows, int64_t n) { \
    if (b)                                                                                    \
      for (int64_t r = 0; r < rows; r++)                                                      \
        for (int64_t j = 0; j < n; j++) {                                                     \
          const T v = y[r * n + j] + b[j];                                                    \
          y[r * n + j] = v > 0 ? v : 0;                                                       \
        }                                                                                     \
    else                                                                                      \
      for (int64_t i = 0; i < rows * n; i++) y[i] = y[i] > 0 ? y[i] : 0;                      \
  }                                                                                           \
  /* g = dy (y > 0) for a tile of rows (stride ld) and w columns; acc[j] += g */             \
  OPF_VEC static void dr_mask_##S(const T *restrict y, const T *restrict dy, T *restrict g,   \
                                  double *restrict acc, int64_t rows, int64_t ld, int64_t w) { \
    ACT_COLSUM_ROWS(T, rows, w, acc,                                                          \
                    const T v = VM_SEL(y[r * ld + j] > 0, dy[r * ld + j], (T)0);              \
                    g[r * ld + j] = v; part[j] += v;);                                        \
  }
DR_KERNELS(float, f32)
DR_KERNELS(double, f64)

typedef struct dr_ctx {
  const opf_case *c;
  int64_t r0, N; /* forward: first row of the block */
  void *g;       /* backward: the masked gradient (M, N) */
} dr_ctx;

static void dr_epi_rows(int64_t lo, int64_t hi, void *v) {
  const dr_ctx *d = v;
  const opf_case *c = d->c;
  const void *b = c->present[DR_B] ? c->in[DR_B].data : NULL;
  const int64_t o = (d->r0 + lo) * d->N;
  if (c->dtype == OPF_F32) dr_epi_f32((float *)c->out[0].data + o, b, hi - lo, d->N);
  else dr_epi_f64((double *)c->out[0].data + o, b, hi - lo, d->N);
}

static int dr_run_fwd(opf_case *c, int blas) {
  lin_mm m = dr_mm(c);
  m.blas = blas;
  const size_t es = opf_dtype_size(c->dtype);
  int64_t mb = DR_BLOCK_BYTES / (m.N > 0 ? m.N * (int64_t)es : 1);
  mb = mb < DR_MB_MIN ? DR_MB_MIN : mb;
  dr_ctx d = {.c = c, .N = m.N};
  for (int64_t r0 = 0; r0 < m.M; r0 += mb) {
    const int64_t rows = m.M - r0 < mb ? m.M - r0 : mb;
    lin_gemm_own(blas, m.dt, 0, 1, rows, m.N, m.K, 1.0,
                 (const char *)c->in[DR_X].data + (size_t)(r0 * m.K) * es, m.K, c->in[DR_W].data,
                 m.K, 0.0, (char *)c->out[0].data + (size_t)(r0 * m.N) * es, m.N);
    d.r0 = r0;
    opf_parallel_range(rows, OPF_PAR_MIN / (m.N > 0 ? m.N : 1) + 1, dr_epi_rows, &d);
  }
  return OPF_OK;
}

static void dr_mask_tile(void *v, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                         double *restrict acc) {
  const dr_ctx *d = v;
  const opf_case *c = d->c;
  const int64_t o = r0 * d->N + c0;
  if (c->dtype == OPF_F32)
    dr_mask_f32((const float *)c->out[0].data + o, (const float *)c->gout[0].data + o,
                (float *)d->g + o, acc, r1 - r0, d->N, c1 - c0);
  else
    dr_mask_f64((const double *)c->out[0].data + o, (const double *)c->gout[0].data + o,
                (double *)d->g + o, acc, r1 - r0, d->N, c1 - c0);
}

/* g = dy (y > 0) and db = colsum(g) in one pass, then dx = g w and dw = g^T x. */
static int dr_run_bwd(opf_case *c, int blas) {
  lin_mm m = dr_mm(c);
  m.blas = blas;
  dr_ctx d = {.c = c, .N = m.N, .g = c->ws};
  double *part = (double *)((char *)c->ws + dr_g_bytes(c, &m));
  act_colsum_drive(m.M, m.N, dr_mask_tile, &d, part);
  if (c->present[DR_B]) act_store_sums(c->dtype, c->gin[DR_B].data, part, m.N);
  lin_mm_backward(&m, c->in[DR_X].data, c->in[DR_W].data, d.g, c->gin[DR_X].data,
                  c->gin[DR_W].data);
  return OPF_OK;
}

static int dr_forward(opf_case *c) { return dr_run_fwd(c, 0); }
static int dr_backward(opf_case *c) { return dr_run_bwd(c, 0); }
static int dr_blas_fwd(opf_case *c) { return dr_run_fwd(c, 1); }
static int dr_blas_bwd(opf_case *c) { return dr_run_bwd(c, 1); }

/* dense's reference, then relu */
static int dr_reference(opf_case *c) {
  const opf_op *d = dr_dense(c);
  if (!d) return OPF_ENOTFOUND;
  int rc = d->reference(c);
  const int64_t n = opf_numel(&c->out[0]);
  for (int64_t i = 0; i < n && !rc; i++) {
    if (c->dtype == OPF_F32) {
      float *y = (float *)c->out[0].data + i;
      *y = *y > 0 ? *y : 0;
    } else {
      double *y = (double *)c->out[0].data + i;
      *y = *y > 0 ? *y : 0;
    }
  }
  return rc;
}

/* dense's work plus the relu: forward 2MNK + MN (bias) + MN (relu); backward 4MNK + MN (db)
 * + MN (mask). */
static double dr_flops(const opf_case *c, opf_pass p) {
  const lin_mm m = dr_mm(c);
  const double mm = 2.0 * (double)m.M * (double)m.N * (double)m.K, mn = (double)m.M * (double)m.N;
  const double bias = c->present[DR_B] ? mn : 0;
  return opf_pass_sum(p, mm + bias + mn, 2 * mm + bias + mn);
}

/* Forward reads x, w, b and writes y; backward reads dy, y (the relu mask), x, w and writes
 * dx, dw, db. */
static double dr_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype);
  const double x = (double)opf_numel(&c->in[DR_X]), w = (double)opf_numel(&c->in[DR_W]);
  const double b = c->present[DR_B] ? (double)opf_numel(&c->in[DR_B]) : 0;
  const double y = (double)opf_numel(&c->out[0]);
  return opf_pass_sum(p, es * (x + w + b + y), es * (2 * y + 2 * x + 2 * w + b));
}

OPPERF_OP(dense_relu) = {
    .abi = OPF_OP_ABI,
    .name = "dense_relu",
    .category = "nn.fused",
    .summary = "fused dense + relu: y = max(x w^T + b, 0), epilogue per GEMM row block",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    /* dense's inputs and params, in dense's order (the chain binds them by name) */
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "as dense: (N, in...), or (..., in) with flatten=false"},
           {.name = "w", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = dr_fill,
            .help = "as dense: (units, in), derived from units"},
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL,
            .fill = dr_fill, .help = "as dense: (units), or b=none"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{.name = "units", .type = OPF_P_INT, .def = 0, .min = 0, .max = INT_MAX,
                .help = "as dense (0: from w)"},
               {.name = "flatten", .type = OPF_P_BOOL, .def = 1, .min = 0, .max = 1,
                .help = "as dense (false: on the last axis)"}},
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
               {"test", "x=1100x40 units=300"},
               {"large", "x=8192x4096 units=4096"}},
    .infer = dr_infer,
    .forward = dr_forward,
    .backward = dr_backward,
    .reference = dr_reference,
    .flops = dr_flops,
    .bytes = dr_bytes,
    .unfused = "dense x=x w=w b=b | relu x=_",
};

OPPERF_IMPL(dense_relu_openblas) = {.abi = OPF_OP_ABI, .name = "openblas",
                                    .implements = "dense_relu",
                                    .summary = "every product by OpenBLAS GEMM/GEMV",
                                    .forward = dr_blas_fwd, .backward = dr_blas_bwd};

/* ================= bias_gelu ================= */
enum { BG_X = 0, BG_BIAS = 1 };

static int bg_infer(opf_case *c) {
  opf_tensor *x = &c->in[BG_X], *b = &c->in[BG_BIAS];
  char sx[96], sb[96];
  if (x->ndim < 1)
    return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (..., C), e.g. x=4096x3072");
  const int64_t C = x->shape[x->ndim - 1];
  if (b->ndim < 0) opf_tensor_set_shape(b, b->dtype, 1, &C);
  if (b->ndim != 1 || b->shape[0] != C)
    return opf_case_error(c, OPF_EINVAL,
                          "bias=%s must be (%lld), one per element of x=%s's last axis",
                          opf_shape_str(b, sb, sizeof sb), (long long)C,
                          opf_shape_str(x, sx, sizeof sx));
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  c->ws_bytes = act_cview_ws(opf_numel(x), C);
  return OPF_OK;
}

#define BG_KERNELS(T, S)                                                                      \
  /* `rows` rows (stride ld) of w columns: y = gelu(x + b) */                                 \
  OPF_VEC static void bg_fwd_##S(const T *restrict x, const T *restrict b, T *restrict y,     \
                                 int64_t rows, int64_t ld, int64_t w) {                       \
    for (int64_t r = 0; r < rows; r++)                                                        \
      for (int64_t j = 0; j < w; j++) y[r * ld + j] = ACT_GELU(x[r * ld + j] + b[j]);         \
  }                                                                                           \
  /* dx = dy gelu'(x + b), acc[j] += dx */                                                    \
  OPF_VEC static void bg_bwd_##S(const T *restrict x, const T *restrict b,                    \
                                 const T *restrict dy, T *restrict dx, double *restrict acc,  \
                                 int64_t rows, int64_t ld, int64_t w) {                       \
    ACT_COLSUM_ROWS(T, rows, w, acc,                                                          \
                    const T g = dy[r * ld + j] * ACT_GELU_GRAD(x[r * ld + j] + b[j]);         \
                    dx[r * ld + j] = g; part[j] += g;);                                       \
  }
BG_KERNELS(float, f32)
BG_KERNELS(double, f64)

/* acc[j] += the sum of `rows` (<= ACT_RB) rows of d, as ACT_COLSUM_ROWS sums one block. */
OPF_VEC static void bg_colsum_f32(const float *restrict d, double *restrict acc, int64_t rows,
                                  int64_t ld, int64_t w) {
  ACT_COLSUM_ROWS(float, rows, w, acc, part[j] += d[r * ld + j];);
}

/* bg_bwd_f32 by the AVX-512 gradient (act_common.h): each block of ACT_RB rows is written to
 * dx first, then summed from there (still in L1/L2) in ACT_COLSUM_ROWS's order, so dbias
 * keeps its summation order and its independence of the thread count. */
static void bg_bwd_f32_avx512(const float *restrict x, const float *restrict b,
                              const float *restrict dy, float *restrict dx, double *restrict acc,
                              int64_t rows, int64_t ld, int64_t w) {
  for (int64_t r0 = 0; r0 < rows; r0 += ACT_RB) {
    const int64_t r1 = r0 + ACT_RB < rows ? r0 + ACT_RB : rows;
    for (int64_t r = r0; r < r1; r++)
      act_gelu_grad_f32_avx512(x + r * ld, b, dy + r * ld, dx + r * ld, w);
    bg_colsum_f32(dx + r0 * ld, acc, r1 - r0, ld, w);
  }
}

typedef struct bg_ctx {
  const opf_case *c;
  act_cview v;
} bg_ctx;

static void bg_block(void *p, int64_t o, int64_t rows, int64_t w, int64_t c0,
                     double *restrict acc) {
  const bg_ctx *b = p;
  const opf_case *c = b->c;
  const int64_t ld = b->v.P;
  if (c->dtype == OPF_F32) {
    const float *x = (const float *)c->in[BG_X].data + o, *bias = (const float *)b->v.a + c0;
    if (acc && VM512_OK())
      bg_bwd_f32_avx512(x, bias, (const float *)c->gout[0].data + o,
                        (float *)c->gin[BG_X].data + o, acc, rows, ld, w);
    else if (acc)
      bg_bwd_f32(x, bias, (const float *)c->gout[0].data + o, (float *)c->gin[BG_X].data + o,
                 acc, rows, ld, w);
    else if (VM512_OK())
      for (int64_t r = 0; r < rows; r++)
        act_gelu_f32_avx512(x + r * ld, bias, (float *)c->out[0].data + o + r * ld, w);
    else
      bg_fwd_f32(x, bias, (float *)c->out[0].data + o, rows, ld, w);
  } else {
    const double *x = (const double *)c->in[BG_X].data + o, *bias = (const double *)b->v.a + c0;
    if (acc)
      bg_bwd_f64(x, bias, (const double *)c->gout[0].data + o, (double *)c->gin[BG_X].data + o,
                 acc, rows, ld, w);
    else
      bg_fwd_f64(x, bias, (double *)c->out[0].data + o, rows, ld, w);
  }
}

static void bg_init(bg_ctx *b, const opf_case *c) {
  const opf_tensor *x = &c->in[BG_X];
  b->c = c;
  act_cview_init(&b->v, opf_numel(x), x->shape[x->ndim - 1], c->dtype, c->in[BG_BIAS].data);
}

static int bg_forward(opf_case *c) {
  bg_ctx b;
  bg_init(&b, c);
  act_cview_map(&b.v, bg_block, &b);
  return OPF_OK;
}

/* dx and dbias in one pass (dbias: act_common.h's deterministic column sums). */
static int bg_backward(opf_case *c) {
  if (!c->gin[BG_X].data) return OPF_OK;
  bg_ctx b;
  bg_init(&b, c);
  act_cview_colsum(&b.v, bg_block, &b, c->ws);
  act_store_sums(c->dtype, c->gin[BG_BIAS].data, c->ws, b.v.C);
  return OPF_OK;
}

static int bg_reference(opf_case *c) {
  const int64_t n = opf_numel(&c->in[BG_X]), C = c->in[BG_BIAS].shape[0];
  for (int64_t i = 0; i < n; i++) {
    if (c->dtype == OPF_F32) {
      const float *x = c->in[BG_X].data, *b = c->in[BG_BIAS].data;
      ((float *)c->out[0].data)[i] = (float)act_gelu_ref((double)x[i] + b[i % C]);
    } else {
      const double *x = c->in[BG_X].data, *b = c->in[BG_BIAS].data;
      ((double *)c->out[0].data)[i] = act_gelu_ref(x[i] + b[i % C]);
    }
  }
  return OPF_OK;
}

/* Per element, as the gelu operator counts: forward the add and gelu's 4 = 5; backward the
 * add, gelu's 9 (which include the multiply by dy) and the dbias add = 11. */
static double bg_flops(const opf_case *c, opf_pass p) {
  const double n = (double)opf_numel(&c->in[BG_X]);
  return opf_pass_sum(p, 5 * n, 11 * n);
}

/* Forward reads x, bias and writes y; backward reads x, bias, dy and writes dx, dbias. */
static double bg_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), n = (double)opf_numel(&c->in[BG_X]);
  const double C = (double)opf_numel(&c->in[BG_BIAS]);
  return opf_pass_sum(p, es * (2 * n + C), es * (3 * n + 2 * C));
}

OPPERF_OP(bias_gelu) = {
    .abi = OPF_OP_ABI,
    .name = "bias_gelu",
    .category = "nn.fused",
    .summary = "fused bias add + gelu (erf form): y = gelu(x + bias), bias over the last axis",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -4, .hi = 4,
            .help = "input (..., C)"},
           {.name = "bias", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "bias (C), added along the last axis (derived)"}},
    .n_out = 1,
    .out = {"y"},
    .shapes = {{"standard", "x=4096x3072"},
               {"standard", "x=1024x1024"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=100000x10"},
               {"skewed", "x=32x128x3072"},
               {"small", "x=16x16"},
               {"small", "x=37x3"},
               {"small", "x=1x64"},
               {"small", "x=2x3x5"},
               {"small", "x=5x1"},
               {"small", "x=7"},
               {"test", "x=301x517"},
               {"test", "x=7x11x300"},
               {"test", "x=20000x10"},
               {"test", "x=100003x1"},
               {"large", "x=16384x3072"},
               {"huge", "x=46341x46341"}},
    .infer = bg_infer,
    .forward = bg_forward,
    .backward = bg_backward,
    .reference = bg_reference,
    .flops = bg_flops,
    .bytes = bg_bytes,
    .unfused = "add a=x b=bias | gelu x=_",
};

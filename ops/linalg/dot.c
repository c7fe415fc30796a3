/* dot.c: matrix product dot (M,K)x(K,N) and batched batch_dot (B,M,K)x(B,K,N), optionally with
 * transposed operands, and their gradients, through linalg.h's lin_mm (float32: the own
 * threaded kernels of lin_sgemm.c where they cover the shape, else OpenBLAS GEMM; the
 * "openblas" --impl keeps every product on OpenBLAS). dot is batch_dot with one batch: both
 * share the kernels below and differ only in the rank infer accepts. */
#include "linalg/linalg.h"

/* Below this many multiply-adds per product a threaded OpenBLAS GEMM does not scale (measured:
 * 128x128x128 runs no faster on 2 threads than on 1), so batches go to threads instead. */
#define BD_SMALL_GEMM (1 << 22)

static int dot_infer(opf_case *c) { return opf_lin_mm_infer(c, 2); }
static int batch_dot_infer(opf_case *c) { return opf_lin_mm_infer(c, 3); }

/* ---- kernels: one product per batch entry ---- */
typedef struct {
  lin_mm m;
  int bwd;
  size_t sa, sb, sc; /* bytes per batch entry of a, b and c */
  const char *A, *B, *G;
  char *C, *dA, *dB;
} bd_ctx;

static void bd_one(const bd_ctx *x, int64_t i) {
  const char *A = x->A + i * x->sa, *B = x->B + i * x->sb;
  if (!x->bwd) {
    lin_mm_forward(&x->m, A, B, 0.0, x->C + i * x->sc);
    return;
  }
  lin_mm_backward(&x->m, A, B, x->G + i * x->sc, x->dA ? x->dA + i * x->sa : NULL,
                  x->dB ? x->dB + i * x->sb : NULL);
}

/* Either a threaded GEMM per batch entry, or batch entries split across OpenMP threads with
 * single-threaded GEMMs (OpenBLAS's OpenMP build runs single-threaded inside an active
 * parallel region). Measured on 2 Zen5 cores (fwd, GFLOP/s, 2 threads, threaded / split):
 * (32,128,64)x(32,64,128) 172/223; (512,16,16)^2 53/89; (16,128,128)^2 95/229;
 * (8,256,256)^2 89/241; (4,512,512)^2 248/253; (3,512,512)^2 229/176; B=1 1024^3 237/116.
 * Splitting wins whenever the batches divide evenly, so whole rounds of nt batches are split
 * and a remainder of large products goes to threaded GEMMs (small ones join the split). */
static void bd_run(const bd_ctx *x, int64_t batch) {
  int nt = omp_get_max_threads();
  int64_t work = x->m.M * x->m.N * x->m.K;
  int64_t split = nt > 1 && batch > 1 ? (work < BD_SMALL_GEMM ? batch : batch / nt * nt) : 0;
  if (split * (work + x->m.M * x->m.N) < OPF_PAR_MIN) split = 0; /* not worth waking the pool */
  if (split > 0) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < split; i++) bd_one(x, i);
  }
  for (int64_t i = split; i < batch; i++) bd_one(x, i);
}

static void bd_setup(opf_case *c, bd_ctx *x, int64_t *batch, int bwd, int blas) {
  opf_lin_mm_of(c, &x->m, batch);
  x->m.blas = blas;
  size_t es = opf_dtype_size(c->dtype);
  x->bwd = bwd;
  x->sa = (size_t)(x->m.M * x->m.K) * es;
  x->sb = (size_t)(x->m.K * x->m.N) * es;
  x->sc = (size_t)(x->m.M * x->m.N) * es;
  x->A = c->in[0].data, x->B = c->in[1].data;
  x->C = c->out[0].data, x->G = c->gout[0].data;
  x->dA = c->gin[0].data, x->dB = c->gin[1].data;
}

static int mm_run(opf_case *c, int bwd, int blas) {
  bd_ctx x;
  int64_t batch;
  bd_setup(c, &x, &batch, bwd, blas);
  bd_run(&x, batch);
  return OPF_OK;
}
static int mm_forward(opf_case *c) { return mm_run(c, 0, 0); }
static int mm_backward(opf_case *c) { return mm_run(c, 1, 0); }
static int mm_blas_fwd(opf_case *c) { return mm_run(c, 0, 1); }
static int mm_blas_bwd(opf_case *c) { return mm_run(c, 1, 1); }

static int mm_reference(opf_case *c) {
  bd_ctx x;
  int64_t batch;
  bd_setup(c, &x, &batch, 0, 0);
  for (int64_t i = 0; i < batch; i++)
    lin_mm_reference(&x.m, x.A + i * x.sa, x.B + i * x.sb, NULL, x.C + i * x.sc);
  return OPF_OK;
}

/* 2MNK per product forward (a multiply and an add per term); backward forms two products of
 * the same size (dA and dB): 4MNK. */
static double mm_flops(const opf_case *c, opf_pass p) {
  lin_mm m;
  int64_t batch;
  opf_lin_mm_of(c, &m, &batch);
  double f = 2.0 * (double)batch * (double)m.M * (double)m.N * (double)m.K;
  return opf_pass_sum(p, f, 2 * f);
}

#define MM_INPUTS                                                                              \
  {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,              \
    .help = "left operand (stored transposed with transpose_a)"},                              \
   {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,              \
    .help = "right operand (stored transposed with transpose_b)"}}
#define MM_PARAMS                                                                              \
  {{.name = "transpose_a", .type = OPF_P_BOOL, .def = 0, .min = 0, .max = 1,                 \
    .help = "a is stored transposed: (K,M) instead of (M,K)"},                                 \
   {.name = "transpose_b", .type = OPF_P_BOOL, .def = 0, .min = 0, .max = 1,                 \
    .help = "b is stored transposed: (N,K) instead of (K,N)"}}

OPPERF_OP(dot) = {
    .abi = OPF_OP_ABI,
    .name = "dot",
    .category = "linalg",
    .summary = "matrix product op(a) op(b) (own float32 kernels, else OpenBLAS GEMM)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = MM_INPUTS,
    .n_out = 1,
    .out = {"c"},
    .n_params = 2,
    .params = MM_PARAMS,
    .shapes = {{"standard", "a=1024x1024 b=1024x1024"},
               {"skewed", "a=1x1024 b=1024x1024"},
               {"skewed", "a=4096x64 b=64x4096"},
               {"skewed", "a=64x4096 b=4096x64"},
               {"skewed", "a=1024x1024 b=1024x1024 transpose_a=true"},
               {"skewed", "a=1024x1024 b=1024x1024 transpose_b=true"},
               {"small", "a=16x16 b=16x16"},
               {"small", "a=1x16 b=16x8"},
               {"small", "a=7x3 b=3x5"},
               {"small", "a=3x7 b=5x3 transpose_a=true transpose_b=true"},
               {"small", "a=6x4 b=5x4 transpose_b=true"},
               {"small", "a=4x6 b=4x5 transpose_a=true"},
               {"small", "a=5x7 b=7x1"},
               {"small", "a=7x1 b=5x7 transpose_a=true transpose_b=true"},
               {"test", "a=301x517 b=517x129"},
               {"test", "a=517x301 b=129x517 transpose_a=true transpose_b=true"},
               {"large", "a=4096x4096 b=4096x4096"}},
    .infer = dot_infer,
    .forward = mm_forward,
    .backward = mm_backward,
    .reference = mm_reference,
    .flops = mm_flops,
    .bytes = opf_default_bytes,
};

OPPERF_OP(batch_dot) = {
    .abi = OPF_OP_ABI,
    .name = "batch_dot",
    .category = "linalg",
    .summary = "batched matrix product op(a[i]) op(b[i]) (own float32 kernels, else OpenBLAS)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = MM_INPUTS,
    .n_out = 1,
    .out = {"c"},
    .n_params = 2,
    .params = MM_PARAMS,
    .shapes = {{"standard", "a=32x128x64 b=32x64x128"},
               {"skewed", "a=512x16x16 b=512x16x16"},
               {"skewed", "a=4x512x512 b=4x512x512"},
               {"skewed", "a=3x512x512 b=3x512x512"},
               {"skewed", "a=32x64x128 b=32x128x64 transpose_a=true transpose_b=true"},
               {"small", "a=2x4x4 b=2x4x4"},
               {"small", "a=3x1x5 b=3x5x2"},
               {"small", "a=2x3x7 b=2x5x3 transpose_a=true transpose_b=true"},
               {"small", "a=1x6x4 b=1x4x5"},
               {"small", "a=3x4x1 b=3x1x5"},
               {"test", "a=5x67x33 b=5x33x41"},
               {"test", "a=3x131x97 b=3x61x131 transpose_a=true transpose_b=true"},
               {"large", "a=16x1024x1024 b=16x1024x1024"}},
    .infer = batch_dot_infer,
    .forward = mm_forward,
    .backward = mm_backward,
    .reference = mm_reference,
    .flops = mm_flops,
    .bytes = opf_default_bytes,
};

#define MM_BLAS_IMPL(op)                                                                       \
  {.abi = OPF_OP_ABI, .name = "openblas", .implements = op,                                  \
   .summary = "every product by OpenBLAS GEMM/GEMV", .forward = mm_blas_fwd,                 \
   .backward = mm_blas_bwd}
OPPERF_IMPL(dot_openblas) = MM_BLAS_IMPL("dot");
OPPERF_IMPL(batch_dot_openblas) = MM_BLAS_IMPL("batch_dot");

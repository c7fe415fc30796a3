/* test_models_linalg.c: golden flops and bytes models of dot, batch_dot, dense, transpose,
 * concat and take at one standard shape each (derived by hand below), the output shapes infer
 * gives, the error paths the generic driver cannot see (incompatible shapes, bad params, bad
 * index values) and the threaded / buffered kernel paths checked against references at
 * shapes beyond the "test" set. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"
#include "linalg/linalg.h"

static double model(const opf_op *op, const opf_case *c, int flops, opf_pass p) {
  return flops ? (op->flops ? op->flops : opf_default_flops)(c, p)
               : (op->bytes ? op->bytes : opf_default_bytes)(c, p);
}

/* Exact flops and bytes of one case for the three passes. */
static void golden(const char *name, opf_dtype dt, const char *spec, double f_fwd, double f_bwd,
                   double b_fwd, double b_bwd) {
  const opf_op *op = ts_op(name);
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, dt, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  assert_float_equal(model(op, &c, 1, OPF_PASS_FWD), f_fwd, 0);
  assert_float_equal(model(op, &c, 1, OPF_PASS_BWD), f_bwd, 0);
  assert_float_equal(model(op, &c, 1, OPF_PASS_BOTH), f_fwd + f_bwd, 0);
  assert_float_equal(model(op, &c, 0, OPF_PASS_FWD), b_fwd, 0);
  assert_float_equal(model(op, &c, 0, OPF_PASS_BWD), b_bwd, 0);
  assert_float_equal(model(op, &c, 0, OPF_PASS_BOTH), b_fwd + b_bwd, 0);
}

static void test_golden_models(void **state) {
  (void)state;
  const double MB = 1024.0 * 1024.0;
  /* dot (1024,1024)x(1024,1024) float32: 2MNK = 2^31 fwd, 4MNK bwd (dA and dB). Bytes
   * (default model): fwd reads a, b and writes c, 3 x 4 MiB; bwd reads g, a, b and writes
   * da, db, 5 x 4 MiB. */
  golden("dot", OPF_F32, "a=1024x1024 b=1024x1024", 2147483648.0, 4294967296.0, 12 * MB, 20 * MB);
  /* the transposed variant does the same work */
  golden("dot", OPF_F32, "a=1024x1024 b=1024x1024 transpose_a=true transpose_b=true",
         2147483648.0, 4294967296.0, 12 * MB, 20 * MB);
  /* batch_dot (32,128,64)x(32,64,128) float32: 2*32*128*128*64 = 67108864 fwd, twice that
   * bwd. a and b are 1 MiB each, c 2 MiB: fwd 4 MiB; bwd g + a + b + da + db = 6 MiB. */
  golden("batch_dot", OPF_F32, "a=32x128x64 b=32x64x128", 67108864.0, 134217728.0, 4 * MB,
         6 * MB);
  /* dense x=(32,1024) units=1024 float32: GEMM 2*32*1024*1024 = 67108864, bias adds
   * 32*1024 = 32768: fwd 67141632; bwd 2 GEMMs + db sums = 134250496. Elements: x 32768,
   * w 1048576, b 1024, y 32768; fwd bytes 4*(x+w+b+y) = 4460544; bwd 4*(g+2x+2w+b) = 8785920.
   * Without the bias: no adds, no b. */
  golden("dense", OPF_F32, "x=32x1024 units=1024", 67141632.0, 134250496.0, 4460544.0, 8785920.0);
  golden("dense", OPF_F32, "x=32x1024 units=1024 b=none", 67108864.0, 134217728.0, 4456448.0,
         8781824.0);
  /* transpose (1024,1024) float32 and (32,64,56,56) float64: no flops; the forward reads and
   * writes the tensor once: 8 MiB; 32*64*56*56*8*2 = 102760448. The backward hands dx back as
   * a strided view of g: 0 bytes. */
  golden("transpose", OPF_F32, "x=1024x1024", 0, 0, 8 * MB, 0);
  golden("transpose", OPF_F64, "x=32x64x56x56 perm=nchw2nhwc", 0, 0, 102760448.0, 0);
  /* concat of two (1024,1024) float32 on axis 1: the output is 8 MiB, read or written once:
   * 16 MiB forward; the backward's pieces are views of g: 0 bytes. */
  golden("concat", OPF_F32, "a=1024x1024 b=1024x1024 axis=1", 0, 0, 16 * MB, 0);
  /* take 1024 int64 indices from (1024,1024) float32: fwd reads 8 KiB of indices and 4 MiB of
   * rows and writes 4 MiB; bwd reads indices and g (4 MiB) and writes dx (4 MiB), with one
   * add per element of g (1048576). */
  golden("take", OPF_F32, "x=1024x1024 indices=1024", 0, 1048576.0, 8192 + 8 * MB, 8192 + 8 * MB);
}

/* Output shape of a spec as "AxB". */
static void expect_shape(const char *name, const char *spec, const char *want) {
  opf_case c;
  opf_err e;
  char s[96];
  if (opf_case_init(&c, ts_op(name), OPF_F32, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  opf_shape_str(&c.out[0], s, sizeof s);
  if (strcmp(s, want)) fail_msg("%s [%s]: output %s, want %s", name, spec, s, want);
}

static void test_shapes(void **state) {
  (void)state;
  expect_shape("dot", "a=3x4 b=4x5", "3x5");
  expect_shape("dot", "a=4x3 b=5x4 transpose_a=true transpose_b=true", "3x5");
  expect_shape("batch_dot", "a=2x3x4 b=2x4x5", "2x3x5");
  expect_shape("dense", "x=8x3x4x5 units=7", "8x7");
  expect_shape("dense", "x=8x3x4x5 units=7 flatten=false", "8x3x4x7");
  expect_shape("dense", "x=8x60 w=9x60", "8x9");
  expect_shape("transpose", "x=2x3x4x5 perm=nchw2nhwc", "2x4x5x3");
  expect_shape("transpose", "x=2x3x4x5 perm=nhwc2nchw", "2x5x3x4");
  expect_shape("transpose", "x=2x3x4", "4x3x2");
  expect_shape("concat", "a=2x3 b=2x5 c=2x1 axis=1", "2x9");
  expect_shape("concat", "a=2x3 b=4x3 d=1x3", "7x3");
  expect_shape("take", "x=3x4x5 indices=2x3 axis=1", "3x2x3x5");
  expect_shape("take", "x=10x20 axis=-1", "10x20");

  /* derived inputs: dense weights and bias, take indices */
  opf_case c;
  opf_err e;
  char s[96];
  assert_int_equal(opf_case_init(&c, ts_op("dense"), OPF_F32, "x=8x60 units=9", &e), OPF_OK);
  assert_string_equal(opf_shape_str(&c.in[1], s, sizeof s), "9x60");
  assert_string_equal(opf_shape_str(&c.in[2], s, sizeof s), "9");
  assert_int_equal(opf_case_init(&c, ts_op("take"), OPF_F32, "x=10x20 axis=1", &e), OPF_OK);
  assert_string_equal(opf_shape_str(&c.in[1], s, sizeof s), "20");
  assert_int_equal(c.in[1].dtype, OPF_I64);
}

static void test_errors(void **state) {
  (void)state;
  ts_expect_einval("dot", "a=3x4 b=5x6", "inner dimensions differ: a=3x4 has K=4, b=5x6 has K=5");
  ts_expect_einval("dot", "a=4x3 b=4x5 transpose_a=false", "K=3");
  ts_expect_einval("dot", "a=3x4x5 b=5x6", "needs a (M,K) and b (K,N) matrices, got a=3x4x5 b=5x6");
  ts_expect_einval("dot", "a=3x4", "needs both inputs");
  ts_expect_einval("dot", "a=3x4 b=4x5 transpose_b=maybe", "must be true or false");
  ts_expect_einval("batch_dot", "a=2x3x4 b=3x4x5", "batch sizes differ: a=2x3x4 b=3x4x5");
  ts_expect_einval("batch_dot", "a=2x3x4 b=2x5x6", "inner dimensions differ");
  ts_expect_einval("batch_dot", "a=3x4 b=4x5", "needs a (B,M,K) and b (B,K,N)");
  ts_expect_einval("dense", "x=32x1024", "needs units=N or a weight shape w=UNITSx1024");
  ts_expect_einval("dense", "x=32x1024 w=16x512", "w=16x512 must be (units, 1024)");
  ts_expect_einval("dense", "x=32x4x8 w=16x8", "w=16x8 must be (units, 32) for x=32x4x8 (flattened)");
  ts_expect_einval("dense", "x=32x1024 units=8 w=16x1024", "units=8 disagrees with w=16x1024");
  ts_expect_einval("dense", "x=32x1024 units=8 b=7", "b=7 must be (8)");
  ts_expect_einval("dense", "x=32 units=8", "x=32: needs (N, in...) with flatten");
  ts_expect_einval("dense", "x=32x8 units=-1", "outside its range");
  ts_expect_einval("transpose", "x=2x3x4 perm=nchw2nhwc", "perm=nchw2nhwc needs a 4-D tensor, got x=2x3x4");
  ts_expect_einval("transpose", "x=2x3x4x5x6 perm=nhwc2nchw", "needs a 4-D tensor");
  ts_expect_einval("transpose", "x=5", "perm=reverse needs a rank >= 2 tensor, got x=5");
  ts_expect_einval("transpose", "x=5x5 perm=nchw", "must be one of reverse|nchw2nhwc|nhwc2nchw");
  ts_expect_einval("concat", "a=2x3 b=2x4 axis=0", "'b' 2x4 does not match 'a' 2x3 outside axis 0 (dim 1: 4 vs 3)");
  ts_expect_einval("concat", "a=2x3 b=2x3 c=2x3x1", "'c' 2x3x1 and 'a' 2x3 differ in rank");
  ts_expect_einval("concat", "a=2x3 b=2x3 axis=2", "axis=2 is out of range for a=2x3");
  ts_expect_einval("concat", "a=2x3 b=2x3 axis=all", "axis=all is not allowed");
  ts_expect_einval("concat", "a=2x3", "input 'b' needs a shape");
  ts_expect_einval("concat", "a=2x3 b=none", "input 'b' of 'concat' is required");
  ts_expect_einval("take", "x=4x5 axis=2", "axis=2 is out of range for x=4x5");
  ts_expect_einval("take", "x=4x0 indices=3 axis=1", "cannot take indices=3 from the empty axis 1");
  ts_expect_einval("take", "x=4x5 axis=all", "axis=all is not allowed");
  ts_expect_einval("take", "indices=4", "x needs a shape");
  ts_expect_einval("take", "x=2x2x2x2x2 indices=2x2x2x2x2", "gives rank 9");
}

/* A bad index value (user data) fails the kernel with OPF_EINVAL, never reads out of bounds. */
static void test_take_bad_index(void **state) {
  (void)state;
  const opf_op *op = ts_op("take");
  opf_case c;
  ts_case_ready(&c, op, OPF_F32, "x=16x8 indices=6", 1, 3);
  ((int64_t *)c.in[1].data)[4] = 16;
  assert_int_equal(op->forward(&c), OPF_EINVAL);
  assert_non_null(strstr(c.err.msg, "index 16 at position 4 is outside [0, 16)"));
  assert_int_equal(op->backward(&c), OPF_EINVAL);
  ((int64_t *)c.in[1].data)[4] = -1;
  assert_int_equal(op->forward(&c), OPF_EINVAL);
  ((int64_t *)c.in[1].data)[4] = 15;
  assert_int_equal(op->forward(&c), OPF_OK);
  opf_case_release(&c);
}

/* Forward against the reference on threads nt, for paths the "test" set leaves out. */
static void check_fwd(const char *name, opf_dtype dt, const char *spec, int nt) {
  const opf_op *op = ts_op(name);
  int saved = omp_get_max_threads();
  omp_set_num_threads(nt);
  opf_case c, r;
  ts_case_ready(&c, op, dt, spec, 0, 11);
  if (op->forward(&c)) fail_msg("%s [%s]: %s", name, spec, c.err.msg);
  r = c;
  r.ws = NULL;
  r.ws_bytes = 0;
  opf_tensor_set_shape(&r.out[0], c.out[0].dtype, c.out[0].ndim, c.out[0].shape);
  opf_err e;
  if (opf_tensor_alloc(&r.out[0], &e)) fail_msg("%s", e.msg);
  if (op->reference(&r)) fail_msg("%s [%s]: reference: %s", name, spec, r.err.msg);
  char msg[256];
  if (ts_compare(&c.out[0], &r.out[0], dt == OPF_F64 ? 1e-9 : 1e-4, msg, sizeof msg))
    fail_msg("%s %s [%s] on %d threads: %s", name, opf_dtype_name(dt), spec, nt, msg);
  opf_tensor_free(&r.out[0]);
  opf_case_release(&c);
  omp_set_num_threads(saved);
}

static void test_kernel_paths(void **state) {
  (void)state;
  for (int nt = 1; nt <= 2; nt++) {
    /* batch_dot: batches split across threads, remainder of large products on threaded GEMM */
    check_fwd("batch_dot", OPF_F32, "a=3x160x160 b=3x160x200", nt);
    check_fwd("batch_dot", OPF_F64, "a=5x9x7 b=5x7x11 transpose_a=false transpose_b=false", nt);
    /* transpose: the buffered path (output rows a multiple of 1 KiB) for both word sizes */
    check_fwd("transpose", OPF_I32, "x=1024x300", nt);
    check_fwd("transpose", OPF_I64, "x=3x128x517x20 perm=nhwc2nchw", nt);
    /* ... with output runs that are not whole vectors (5 and 37 rows) */
    check_fwd("transpose", OPF_I32, "x=5x256x67", nt);
    check_fwd("transpose", OPF_F64, "x=37x128x41", nt);
  }
}

/* Backward of transpose on the buffered path: dx must be g permuted back. (The native
 * backward hands dx back as a strided view of g; materialize runs the permuting kernel.) */
static void test_transpose_backward_buffered(void **state) {
  (void)state;
  const opf_op *op = ts_op("transpose");
  const char *specs[] = {"x=64x1024", "x=2x1024x3x40 perm=nchw2nhwc"};
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < 2; s++) {
      opf_case c;
      opf_err e0;
      if (opf_case_init(&c, op, (opf_dtype)d, specs[s], &e0) ||
          opf_case_set_impl(&c, OPF_IMPL_MATERIALIZE, &e0) || opf_case_alloc(&c, 1, &e0) ||
          opf_case_fill(&c, 5, &e0))
        fail_msg("%s: %s", specs[s], e0.msg);
      assert_false(opf_grad_is_view(&c, 0));
      if (op->forward(&c) || op->backward(&c)) fail_msg("%s: %s", specs[s], c.err.msg);
      /* y[k] = x[perm(k)] means dx[perm(k)] = g[k]: transposing dx forward (by the
       * reference) must give back g exactly. */
      opf_case r = c;
      opf_tensor fwd_dx;
      opf_tensor_set_shape(&fwd_dx, c.out[0].dtype, c.out[0].ndim, c.out[0].shape);
      opf_err e;
      if (opf_tensor_alloc(&fwd_dx, &e)) fail_msg("%s", e.msg);
      r.in[0] = c.gin[0];
      r.out[0] = fwd_dx;
      r.ws = NULL;
      if (op->reference(&r)) fail_msg("reference: %s", r.err.msg);
      char msg[256];
      if (ts_compare(&r.out[0], &c.gout[0], 0, msg, sizeof msg))
        fail_msg("%s %s: transpose(dx) != g: %s", opf_dtype_name((opf_dtype)d), specs[s], msg);
      opf_tensor_free(&fwd_dx);
      opf_case_release(&c);
    }
}


/* lin_sgemm.c's own float32 products (lin_own_sgemm) against a double-precision product: GEMV
 * both ways (M = 1 and N = 1, each transpose), outer products (K = 1), the dot-product tiles
 * (op(B) = B^T with a side <= 64: 4 x 4 tiles, K chunks and 16-wide remainders), the packed
 * kernel split along M, N and K (with its reduction); beta 0 (C prefilled with NaN, never
 * read), 1 and 0.5, alpha 0.5 where GEMV/outer take it, leading dimensions wider than the
 * matrices, on 1 and 2 threads. Every case must write exactly the M x N block. Off AVX-512
 * lin_own_sgemm declines (returns 0) and writes nothing. */
static void test_own_sgemm(void **state) {
  (void)state;
  static const int64_t sizes[][3] = {
      {1, 1, 1},      {1, 37, 19},    {1, 1030, 517}, {45, 1, 300},   {1030, 1, 33},
      {7, 1, 1},      {33, 70, 1},    {300, 1029, 1}, {3, 5, 130},    {33, 67, 301},
      {61, 1000, 257}, {1000, 13, 200}, {64, 64, 4096}, {30, 40, 5000}, {64, 4100, 64},
      {4100, 64, 70}, {100, 300, 150}, {29, 97, 33},   {130, 33, 64}};
  int saved = omp_get_max_threads(), own = 0;
  unsigned char took[sizeof sizes / sizeof *sizes][4][3]; /* on 1 thread: the own path ran */
  opf_rng rng;
  opf_rng_init(&rng, 23, 0);
  for (int nt = 1; nt <= 2; nt++) {
    omp_set_num_threads(nt);
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
      for (int tr = 0; tr < 4; tr++)
        for (int bi = 0; bi < 3; bi++) {
          const int ta = tr & 1, tb = tr >> 1;
          const int64_t M = sizes[z][0], N = sizes[z][1], K = sizes[z][2];
          const int vec = M == 1 || N == 1 || K == 1;
          const double beta = bi == 0 ? 0 : bi == 1 ? 1 : 0.5, alpha = vec && bi == 2 ? 0.5 : 1;
          /* padded leading dimensions, except where a vector must be contiguous */
          const int64_t lda = (ta ? M : K) + (M == 1 && !ta ? 0 : 3);
          const int64_t ldb = (tb ? K : N) + (N == 1 && tb ? 0 : 5), ldc = N + 7;
          const int64_t ra = ta ? K : M, rb = tb ? N : K;
          float *A = opf_alloc(sizeof(float) * (size_t)(ra * lda));
          float *B = opf_alloc(sizeof(float) * (size_t)(rb * ldb));
          float *C = opf_alloc(sizeof(float) * (size_t)(M * ldc));
          double *R = opf_alloc(sizeof(double) * (size_t)(M * N));
          for (int64_t i = 0; i < ra * lda; i++) A[i] = (float)(opf_rng_uniform(&rng) - 0.5);
          for (int64_t i = 0; i < rb * ldb; i++) B[i] = (float)(opf_rng_uniform(&rng) - 0.5);
          for (int64_t i = 0; i < M * ldc; i++)
            C[i] = beta == 0 || i % ldc >= N ? NAN : (float)(opf_rng_uniform(&rng) - 0.5);
          for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
              double acc = 0;
              for (int64_t k = 0; k < K; k++)
                acc += (double)(ta ? A[k * lda + i] : A[i * lda + k]) *
                       (tb ? B[j * ldb + k] : B[k * ldb + j]);
              R[i * N + j] = alpha * acc + (beta == 0 ? 0 : beta * C[i * ldc + j]);
            }
          const int done = lin_own_sgemm(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb,
                                         (float)beta, C, ldc);
          own |= done;
          if (nt == 1) took[z][tr][bi] = (unsigned char)done;
          else if (done != took[z][tr][bi]) /* threads split the work, never decide the path */
            fail_msg("own sgemm %lldx%lldx%lld ta=%d tb=%d: %s on 2 threads, %s on 1", (long long)M,
                     (long long)N, (long long)K, ta, tb, done ? "ran" : "declined",
                     done ? "declined" : "ran");
          for (int64_t i = 0; i < M && done; i++)
            for (int64_t j = 0; j < ldc; j++) {
              const float c = C[i * ldc + j];
              if (j >= N) {
                if (!isnan(c))
                  fail_msg("own sgemm %lldx%lldx%lld wrote C[%lld,%lld] past N", (long long)M,
                           (long long)N, (long long)K, (long long)i, (long long)j);
              } else if (!(fabs(c - R[i * N + j]) <= 2e-6 * sqrt((double)K) + 1e-6))
                fail_msg("own sgemm %lldx%lldx%lld ta=%d tb=%d alpha=%g beta=%g on %d threads: "
                         "C[%lld,%lld] = %.8g, expected %.8g",
                         (long long)M, (long long)N, (long long)K, ta, tb, alpha, beta, nt,
                         (long long)i, (long long)j, c, R[i * N + j]);
            }
          opf_free(A), opf_free(B), opf_free(C), opf_free(R);
        }
  }
  omp_set_num_threads(saved);
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) assert_true(own);
  else assert_false(own);
#else
  assert_false(own);
#endif
}

/* The operators on lin_sgemm.c's float32 kernels, forward and backward, against float64 (which
 * stays on OpenBLAS) on the same inputs, 1 and 2 threads: batch 1 (GEMV both ways, the outer
 * product of the weight gradient), small sides (dot-product tiles, with a K split on 2
 * threads), the packed kernel split along K, N and M, transposes, a batched product (inside
 * batch_dot's parallel loop) and the recurrent cells at batch 1. */
static void test_float32_products(void **state) {
  (void)state;
  static const char *cases[][2] = {
      {"dense", "x=1x300 units=200"},
      {"dense", "x=3x700 units=70"},
      {"dense", "x=40x3x10x10 units=33"},
      {"dense", "x=33x2000 units=70 b=none"},
      {"dense_relu", "x=1x257 units=130"},
      {"dense_relu", "x=45x300 units=100"},
      {"dot", "a=64x2100 b=2100x40"},
      {"dot", "a=1x500 b=500x300"},
      {"dot", "a=300x1 b=1x200"},
      {"dot", "a=200x100 b=100x1"},
      {"dot", "a=300x50 b=70x300 transpose_a=true transpose_b=true"},
      {"dot", "a=150x300 b=310x300 transpose_b=true"},
      {"batch_dot", "a=3x1x300 b=3x300x200"},
      {"gru_cell", "x=1x100 hidden=70"},
      {"lstm_cell", "x=1x64 hidden=40"},
  };
  int saved = omp_get_max_threads();
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    for (int threads = 1; threads <= 2; threads++) {
      omp_set_num_threads(threads);
      ts_check_f32(cases[k][0], cases[k][1], 1e-4);
    }
  omp_set_num_threads(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_take_bad_index),
      cmocka_unit_test(test_kernel_paths),
      cmocka_unit_test(test_transpose_backward_buffered),
      cmocka_unit_test(test_own_sgemm),
      cmocka_unit_test(test_float32_products),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

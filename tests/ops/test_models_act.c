/* test_models_act.c: the activation family (ops/activation: act_maps.c, prelu.c,
 * softmax_ext.c) and the fused activations (ops/fused/act_fused.c): golden flops and bytes
 * (derived by hand below), derived shapes, the infer error paths, hand-computed values of the
 * masked softmax semantics (MXNet's documented example, fully masked lines), and parameter
 * gradients that do not depend on the thread count. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* Elementwise maps at x = (1024, 1024) float32: n = 1048576 elements of 4 bytes. Flops are
 * n times the per-element costs stated in act_maps.c; bytes read x and write y forward
 * (8388608) and read dy and one of x, y and write dx backward (12582912). */
static void test_golden_maps(void **state) {
  (void)state;
  const double n = 1048576, fb = 8388608, bb = 12582912;
  struct {
    const char *name;
    double ff, bf;
  } maps[] = {{"leaky_relu", 2, 2}, {"elu", 3, 3},          {"selu", 4, 3},
              {"gelu", 4, 9},       {"gelu_tanh", 9, 15},   {"silu", 4, 9},
              {"mish", 7, 14},      {"hard_sigmoid", 4, 4}, {"log_sigmoid", 6, 3},
              {"softplus", 7, 5},   {"softsign", 3, 4}};
  for (size_t k = 0; k < sizeof maps / sizeof maps[0]; k++)
    ts_expect_models(maps[k].name, OPF_F32, "x=1024x1024", maps[k].ff * n, maps[k].bf * n, fb, bb);
  /* float64 doubles the bytes only */
  ts_expect_models("gelu", OPF_F64, "x=1024x1024", 4 * n, 9 * n, 2 * fb, 2 * bb);
}

static void test_golden_prelu(void **state) {
  (void)state;
  /* x (1024, 1024), alpha (1024) float32: flops 2n fwd (compare, multiply), 4n bwd (select
   * and multiply for dx, multiply and add for dalpha) = 2097152, 4194304; bytes fwd
   * 4 (2n + C) = 4 * 2098176 = 8392704, bwd 4 (3n + 2C) = 4 * 3147776 = 12591104. */
  ts_expect_models("prelu", OPF_F32, "x=1024x1024", 2097152, 4194304, 8392704, 12591104);
  /* one slope: C = 1: 4 (2n + 1) = 8388612, 4 (3n + 2) = 12582920 */
  ts_expect_models("prelu", OPF_F32, "x=1024x1024 alpha=1", 2097152, 4194304, 8388612, 12582920);
}

static void test_golden_softmax_ext(void **state) {
  (void)state;
  /* x (1024, 1024) float32, n = 1048576: softmax's 5n fwd and 4n bwd, bytes 2 * 4n fwd and
   * 3 * 4n bwd. softmin adds a negation each way: 6n = 6291456, 5n = 5242880. */
  ts_expect_models("softmin", OPF_F32, "x=1024x1024 axis=-1", 6291456, 5242880, 8388608, 12582912);
  /* masked_softmax: two selects forward (7n = 7340032), the plain gradient (4n = 4194304);
   * the mask's n bytes forward: 8388608 + 1048576 = 9437184. */
  ts_expect_models("masked_softmax", OPF_F32, "x=1024x1024 axis=-1", 7340032, 4194304, 9437184,
                   12582912);
  /* masked_log_softmax: two selects each way, 7n and 6n = 6291456; the mask read both ways:
   * backward 12582912 + 1048576 = 13631488. */
  ts_expect_models("masked_log_softmax", OPF_F32, "x=1024x1024 axis=0", 7340032, 6291456, 9437184,
                   13631488);
  /* a broadcast mask (1, 1024) counts its own 1024 bytes */
  ts_expect_models("masked_softmax", OPF_F32, "x=1024x1024 mask=1x1024", 7340032, 4194304, 8389632,
                   12582912);
}

static void test_golden_fused(void **state) {
  (void)state;
  /* dense_relu x (32, 1024), units 1024, float32: M = 32, N = K = 1024. GEMM 2MNK =
   * 67108864; fwd + MN bias adds + MN relu = 67174400; bwd 2 GEMMs + MN (db) + MN (mask) =
   * 134283264. Bytes: x 32768, w 1048576, b 1024, y 32768 elements: fwd 4 (x + w + b + y) =
   * 4460544; bwd reads dy, y, x, w and writes dx, dw, db: 4 (2y + 2x + 2w + b) = 8916992. */
  ts_expect_models("dense_relu", OPF_F32, "x=32x1024 units=1024", 67174400, 134283264, 4460544,
                   8916992);
  /* without the bias: 67141632, 134250496; 4 * 1114112 = 4456448, 4 * 2228224 = 8912896 */
  ts_expect_models("dense_relu", OPF_F32, "x=32x1024 units=1024 b=none", 67141632, 134250496,
                   4456448, 8912896);
  /* bias_gelu x (4096, 3072), float32: n = 12582912, C = 3072: 5n = 62914560 fwd (add and
   * gelu's 4), 11n = 138412032 bwd (add, gelu's 9, the dbias add); bytes fwd
   * 4 (2n + C) = 100675584, bwd 4 (3n + 2C) = 151019520. */
  ts_expect_models("bias_gelu", OPF_F32, "x=4096x3072", 62914560, 138412032, 100675584, 151019520);
}

static void test_derived_shapes(void **state) {
  (void)state;
  ts_expect_shape("prelu", "x=8x5x3x3", 1, 1, "5");     /* one slope per channel (axis 1) */
  ts_expect_shape("prelu", "x=33", 1, 1, "1");          /* no channel axis: one slope */
  ts_expect_shape("masked_softmax", "x=4x5", 1, 1, "4x5"); /* the mask defaults to x's shape */
  ts_expect_shape("masked_log_softmax", "x=4x5x6 mask=5x1 axis=1", 0, 0, "4x5x6");
  ts_expect_shape("bias_gelu", "x=2x3x7", 1, 1, "7");
  ts_expect_shape("dense_relu", "x=3x2x5 units=4", 1, 1, "4x10");
  ts_expect_shape("dense_relu", "x=3x2x5 units=4 flatten=false", 0, 0, "3x2x4");
}

static void test_errors(void **state) {
  (void)state;
  ts_expect_einval("prelu", "x=4x5 alpha=3", "alpha=3 must be (5), one slope per channel");
  ts_expect_einval("prelu", "x=4x5 alpha=1x5", "alpha=1x5 must be (5)");
  ts_expect_einval("prelu", "x=7 alpha=7", "alpha=7 must be (1)");
  ts_expect_einval("masked_softmax", "x=4x5 mask=4x4", "mask=4x4 cannot be broadcast to x=4x5");
  ts_expect_einval("masked_softmax", "x=4x5 mask=2x4x5", "mask=2x4x5 cannot be broadcast");
  ts_expect_einval("masked_log_softmax", "x=4x5 axis=2", "axis 2 is out of range");
  ts_expect_einval("masked_log_softmax", "x=4x5 masked_value=nan", "masked_value");
  ts_expect_einval("softmin", "x=4x5 axis=-3", "axis -3 is out of range");
  ts_expect_einval("leaky_relu", "x=4x5 alpha=1000", "alpha");
  ts_expect_einval("elu", "x=4x5 alpha=-1", "alpha");
  ts_expect_einval("softplus", "x=4x5 beta=0", "beta");
  ts_expect_einval("bias_gelu", "x=4x16 bias=15", "bias=15 must be (16)");
  ts_expect_einval("bias_gelu", "x=4x16 bias=1x16", "bias=1x16 must be (16)");
  ts_expect_einval("dense_relu", "x=4x16 w=8x15", "must be (units, 16)");
  ts_expect_einval("dense_relu", "x=4x16 w=8x16 units=4", "units=4 disagrees with w=8x16");
  ts_expect_einval("dense_relu", "x=4x16 units=8 b=7", "b=7 must be (8), one bias per unit");
  ts_expect_einval("dense_relu", "x=4x16", "needs units=N");
}

/* MXNet's documented example: data 0..4, mask [1 0 1 0 1] gives softmax
 * [0.01587624 0 0.11731042 0 0.8668133] and log softmax [-4.1429286 -inf -2.1429286 -inf
 * -0.14292854] (float32 printouts: compared to 1e-5); a second row fully masked gives zeros
 * and -inf (masked_value=zero: 0). */
static void run_masked(const char *name, const char *spec, double *y) {
  opf_case c;
  ts_case_ready(&c, ts_op(name), OPF_F64, spec, 0, 1);
  const uint8_t m[10] = {1, 0, 1, 0, 1, 0, 0, 0, 0, 0};
  for (int k = 0; k < 10; k++) ((double *)c.in[0].data)[k] = k % 5;
  memcpy(c.in[1].data, m, sizeof m);
  if (c.op->forward(&c)) fail_msg("%s: forward failed: %s", name, c.err.msg);
  memcpy(y, c.out[0].data, 10 * sizeof(double));
  opf_case_release(&c);
}

/* GELU float32 forward (the AVX-512 kernel where the CPU has it, act_common.h) against
 * 0.5 x erfc(-x / sqrt 2) in double, element by element with relative precision down to the
 * normal range: x from -15 to 7 in steps of 2^-16 (both tails, the sign switch; the previous
 * kernel went over the bound at x = -0.40787 on this grid, relative 4.3e-7 against 4.25e-7,
 * which its test's steps of 1/64 missed), every edge of the kernel's 16 intervals of |x| and
 * its clamp at 14.5 with their float neighbours on both sides, the specials, lengths 1..33
 * (the two-vector step, the single and the masked vector), 1 and 2 threads; bias_gelu with a
 * bias that shifts each column, rows of 35 and of 10. */
/* The relative bound near 0: 4e-7 for the AVX-512 kernel; the other paths (no AVX-512 DQ,
 * arm64: the previous formula, kept) go over it on this grid (4.06e-7 at x = -0.0996, arm64
 * under qemu) and stay within 8e-7, their bound. */
#if defined(__x86_64__)
#define GELU_FAST() (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
#else
#define GELU_FAST() 0
#endif
static double gelu_rel = 4e-7;

static void gelu_check(const char *op, const float *y, const float *x, const float *b,
                       int64_t n, int64_t w) {
  gelu_rel = GELU_FAST() ? 4e-7 : 8e-7;
  for (int64_t i = 0; i < n; i++) {
    const double v = (double)x[i] + (b ? (double)b[i % w] : 0);
    const double want = (double)(float)(0.5 * v * erfc(-v * M_SQRT1_2));
    const double got = y[i];
    int ok;
    if (isnan(v) || (isinf(v) && v < 0)) ok = isnan(got);
    else if (isinf(v)) ok = got == v;
    /* exp(-z^2) inherits the rounding of z^2 = x^2 / 2 (relative 1.2e-7, so an absolute
     * 6e-8 x^2 in the exponent): the tail's relative error grows with x^2 (2e-5 at -12) */
    else ok = fabs(got - want) <= (gelu_rel + 1.5e-7 * v * v) * fabs(want) + 1e-37;
    if (!ok) fail_msg("%s n=%lld: x = %.9g: got %.9g, want %.9g", op, (long long)n, v, got, want);
  }
}

static void gelu_run(const float *x, int64_t n, int threads) {
  opf_case c;
  char spec[32];
  snprintf(spec, sizeof spec, "x=%lld", (long long)n);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  ts_case_ready(&c, ts_op("gelu"), OPF_F32, spec, 0, 3);
  memcpy(c.in[0].data, x, (size_t)n * sizeof *x);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  gelu_check("gelu", c.out[0].data, x, NULL, n, 1);
  for (int64_t i = 0; i < n; i++)
    if (x[i] == 0 && signbit(x[i]))
      assert_true(signbit(((float *)c.out[0].data)[i]) && ((float *)c.out[0].data)[i] == 0);
  opf_case_release(&c);
  omp_set_num_threads(saved);
}

static void test_gelu_accuracy(void **state) {
  (void)state;
  const float edges[] = {0.25f, 0.5f, 0.75f, 1, 1.5f, 2, 2.5f, 3, 4, 5, 6, 7, 9, 11, 13, 14.5f, 15};
  const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, -13.2f, 88.0f,
                      -88.0f, 1e-45f, -1e-45f, 3e38f, -3e38f, -NAN};
  enum { NG = 22 * 65536 };
  const int64_t ne = 6 * (int64_t)(sizeof edges / sizeof edges[0]), ns = sizeof sp / sizeof sp[0];
  const int64_t n = NG + ne + ns;
  float *x = malloc((size_t)n * sizeof *x);
  assert_non_null(x);
  for (int64_t i = 0; i < NG; i++) x[i] = -15.0f + (float)i / 65536.0f;
  float *e = x + NG;
  for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++)
    for (int sg = -1; sg <= 1; sg += 2) {
      const float v = (float)sg * edges[k];
      *e++ = nextafterf(v, -INFINITY), *e++ = v, *e++ = nextafterf(v, INFINITY);
    }
  memcpy(e, sp, sizeof sp);
  for (int t = 1; t <= 2; t++) gelu_run(x, n, t);
  /* short lengths: the specials and edges first, so every path sees them */
  for (int64_t m = 1; m <= 33; m++)
    for (int t = 1; t <= 2; t++) gelu_run(x + NG + ne + ns - m, m, t), gelu_run(x + NG + m, m, t);
  free(x);
  const int64_t ws[] = {35, 10};
  for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) {
    const int64_t w = ws[k], rows = 2600 / w;
    opf_case c;
    char spec[48];
    snprintf(spec, sizeof spec, "x=%lldx%lld", (long long)rows, (long long)w);
    ts_case_ready(&c, ts_op("bias_gelu"), OPF_F32, spec, 0, 3);
    float *bx = c.in[0].data, *b = c.in[1].data;
    for (int64_t i = 0; i < rows * w; i++) bx[i] = -12.0f + (float)i / (float)(rows * w) * 18.0f;
    for (int64_t j = 0; j < w; j++) b[j] = (float)(j - w / 2) / 8.0f;
    assert_int_equal(c.op->forward(&c), OPF_OK);
    gelu_check("bias_gelu", c.out[0].data, bx, b, rows * w, w);
    opf_case_release(&c);
  }
}

static void test_masked_semantics(void **state) {
  (void)state;
  const double sm[5] = {0.01587624, 0, 0.11731042, 0, 0.8668133};
  const double ls[5] = {-4.1429286, -INFINITY, -2.1429286, -INFINITY, -0.14292854};
  double y[10];
  run_masked("masked_softmax", "x=2x5 mask=2x5", y);
  for (int k = 0; k < 5; k++) assert_float_equal(y[k], sm[k], 1e-5);
  for (int k = 5; k < 10; k++) assert_true(y[k] == 0);
  run_masked("masked_log_softmax", "x=2x5 mask=2x5", y);
  for (int k = 0; k < 5; k++) {
    if (isinf(ls[k])) assert_true(y[k] == -INFINITY);
    else assert_float_equal(y[k], ls[k], 1e-5);
  }
  for (int k = 5; k < 10; k++) assert_true(y[k] == -INFINITY);
  run_masked("masked_log_softmax", "x=2x5 mask=2x5 masked_value=zero", y);
  assert_float_equal(y[0], ls[0], 1e-5);
  for (int k = 5; k < 10; k++) assert_true(y[k] == 0);
  /* the same along axis 0 of the transpose: x (5, 2) */
  opf_case c;
  ts_case_ready(&c, ts_op("masked_softmax"), OPF_F64, "x=5x2 mask=5x2 axis=0", 0, 1);
  for (int k = 0; k < 10; k++) {
    ((double *)c.in[0].data)[k] = k / 2;
    ((uint8_t *)c.in[1].data)[k] = k % 2 == 0 && (k / 2) % 2 == 0;
  }
  if (c.op->forward(&c)) fail_msg("forward failed: %s", c.err.msg);
  for (int k = 0; k < 10; k++)
    assert_float_equal(((double *)c.out[0].data)[k], (k % 2 ? 0 : sm[k / 2]), 1e-5);
  opf_case_release(&c);
}

/* Forward and backward at a thread count; returns the case (caller releases). */
static void run_threads(opf_case *c, const char *name, opf_dtype dt, const char *spec, int nt) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(nt);
  ts_case_ready(c, ts_op(name), dt, spec, 1, 5);
  if (c->op->forward(c) || c->op->backward(c)) fail_msg("%s [%s]: %s", name, spec, c->err.msg);
  omp_set_num_threads(saved);
}

/* log_sigmoid float32, forward and backward, from vmath.h's exp of a non-positive argument
 * (vm_expf_nonpos), against float64 element by element: x over both tails in steps of 1/8
 * (the exp's flush below -87.33 included: x up to +/-100), the specials, and lengths around
 * the vector widths (1, 15, 16, 17, 33: masked and scalar tails) at 1 and 2 threads. The
 * gradient of a tail value is dy e^-|x| (relative precision down to the normal range, an
 * absolute 1.2e-38 below, where the exp flushes); of x = +inf 0, of -inf dy. */
static void log_sigmoid_check(int64_t n, int threads) {
  opf_case c;
  char spec[32];
  snprintf(spec, sizeof spec, "x=%lld", (long long)n);
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  ts_case_ready(&c, ts_op("log_sigmoid"), OPF_F32, spec, 1, 7);
  float *x = c.in[0].data, *dy = c.gout[0].data;
  for (int64_t i = 0; i < n; i++) x[i] = -100.0f + (float)((i * 37) % 1601) / 8.0f;
  for (int64_t i = 0; i < n; i++) dy[i] = 0.5f + (float)(i % 7) / 4.0f;
  const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, 87.3f, -87.4f,
                      88.7f, -104.0f, 17.0f, -17.0f};
  for (int i = 0; i < (int)(sizeof sp / sizeof sp[0]) && i < n; i++) x[n - 1 - i] = sp[i];
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_int_equal(c.op->backward(&c), OPF_OK);
  const float *y = c.out[0].data, *dx = c.gin[0].data;
  for (int64_t i = 0; i < n; i++) {
    const double v = x[i], g = dy[i];
    const double wy = v < 0 ? v - log1p(exp(v)) : -log1p(exp(-v)), wd = g / (1 + exp(v));
    int ok;
    if (isnan(v)) ok = isnan(y[i]) && isnan(dx[i]);
    else if (isinf(v)) ok = y[i] == (v < 0 ? -INFINITY : 0) && dx[i] == (v < 0 ? (float)g : 0);
    else ok = fabs(y[i] - wy) <= 4e-7 * fabs(wy) + 1e-37 && fabs(dx[i] - wd) <= 4e-7 * fabs(wd) + 1.2e-38 * g;
    if (!ok)
      fail_msg("log_sigmoid n=%lld threads=%d: x = %.9g: y %.9g (want %.9g), dx %.9g (want %.9g)",
               (long long)n, threads, v, y[i], wy, dx[i], wd);
  }
  opf_case_release(&c);
  omp_set_num_threads(saved);
}

static void test_log_sigmoid_accuracy(void **state) {
  (void)state;
  const int64_t ns[] = {1, 15, 16, 17, 33, 1601, 70001};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
    for (int t = 1; t <= 2; t++) log_sigmoid_check(ns[k], t);
}

/* Parameter gradients (sums over many rows) must not change with the thread count: the
 * partial sums are cut by the shape only (dense_relu: its db; its GEMMs are OpenBLAS's). */
static void test_param_grads_thread_invariant(void **state) {
  (void)state;
  struct {
    const char *name, *spec;
    int in;
  } cases[] = {{"prelu", "x=3000x77", 1},     {"prelu", "x=20000x10", 1},
               {"prelu", "x=9x64x30x30", 1},  {"prelu", "x=300000 alpha=1", 1},
               {"bias_gelu", "x=5000x300", 1}, {"bias_gelu", "x=70000x3", 1},
               {"dense_relu", "x=700x96 units=80", 2}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    opf_case a, b;
    run_threads(&a, cases[k].name, OPF_F32, cases[k].spec, 1);
    run_threads(&b, cases[k].name, OPF_F32, cases[k].spec, 2);
    const opf_tensor *ga = &a.gin[cases[k].in], *gb = &b.gin[cases[k].in];
    if (memcmp(ga->data, gb->data, ga->nbytes))
      fail_msg("%s [%s]: results differ between 1 and 2 threads", cases[k].name, cases[k].spec);
    opf_case_release(&a);
    opf_case_release(&b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_maps),
      cmocka_unit_test(test_golden_prelu),
      cmocka_unit_test(test_golden_softmax_ext),
      cmocka_unit_test(test_golden_fused),
      cmocka_unit_test(test_derived_shapes),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_gelu_accuracy),
      cmocka_unit_test(test_masked_semantics),
      cmocka_unit_test(test_param_grads_thread_invariant),
      cmocka_unit_test(test_log_sigmoid_accuracy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

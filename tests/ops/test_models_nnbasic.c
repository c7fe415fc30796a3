/* test_models_nnbasic.c: embedding, dropout, layer/instance/group norm, l2_normalization and
 * lrn: golden flops and bytes at a standard shape (derived by hand below), the infer and
 * forward error paths the generic driver cannot see, and properties of the threaded kernels:
 * results identical for 1 and 2 threads (dropout mask, embedding scatter with duplicates,
 * layer_norm's gamma gradient) and dropout's drop fraction and scale. */
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

static void test_golden_models(void **state) {
  (void)state;
  /* embedding, 1024 int64 indices into (10000, 512) float32: the forward gathers, no flops;
   * the backward adds 1024*512 = 524288 gradient elements. Bytes fwd: indices 8*1024 = 8192,
   * rows read and y written 2*1024*512*4 = 4194304: 4202496. bwd: indices 8192, dy
   * 1024*512*4 = 2097152, dweight written 10000*512*4 = 20480000: 22585344. */
  ts_expect_models("embedding", OPF_F32, "indices=1024 input_dim=10000 output_dim=512", 0, 524288.0, 4202496.0,
         22585344.0);
  /* dropout (1024, 1024) float32, n = 1048576: train one multiply per element and pass;
   * inference a copy, no flops. Bytes either way 2*n*4 = 8388608 per pass. */
  ts_expect_models("dropout", OPF_F32, "x=1024x1024 p=0.5 mode=train", 1048576.0, 1048576.0, 8388608.0, 8388608.0);
  ts_expect_models("dropout", OPF_F32, "x=1024x1024 mode=inference", 0, 0, 8388608.0, 8388608.0);
  /* layer_norm (32, 1024) float32, n = 32768, gamma/beta 1024: 7n = 229376 fwd, 14n = 458752
   * bwd (per-element gamma). Bytes (2n + 2*1024)*4 = 270336 fwd, (3n + 3*1024)*4 = 405504. */
  ts_expect_models("layer_norm", OPF_F32, "x=32x1024", 229376.0, 458752.0, 270336.0, 405504.0);
  /* instance_norm and group_norm (32, 64, 56, 56) float32, n = 6422528, gamma/beta 64:
   * 7n = 44957696, 9n = 57802752; bytes (2n + 128)*4 = 51380736, (3n + 192)*4 = 77071104. */
  ts_expect_models("instance_norm", OPF_F32, "x=32x64x56x56", 44957696.0, 57802752.0, 51380736.0, 77071104.0);
  ts_expect_models("group_norm", OPF_F32, "x=32x64x56x56 groups=32", 44957696.0, 57802752.0, 51380736.0,
         77071104.0);
  /* l2_normalization (32, 64, 56, 56) float32: 3n = 19267584, 5n = 32112640; bytes 2n*4 =
   * 51380224 (x, y), 3n*4 = 77070336 (g, x, dx); the same in every mode. */
  ts_expect_models("l2_normalization", OPF_F32, "x=32x64x56x56 mode=instance", 19267584.0, 32112640.0, 51380224.0,
         77070336.0);
  ts_expect_models("l2_normalization", OPF_F32, "x=32x64x56x56 mode=channel", 19267584.0, 32112640.0, 51380224.0,
         77070336.0);
  /* lrn (32, 64, 56, 56) nsize 5 float32: (5 + 4)n = 57802752 fwd, (2*5 + 9)n = 122028032 bwd;
   * bytes as l2_normalization. */
  ts_expect_models("lrn", OPF_F32, "x=32x64x56x56 nsize=5", 57802752.0, 122028032.0, 51380224.0, 77070336.0);
}

static void test_derived_shapes(void **state) {
  (void)state;
  ts_expect_shape("embedding", "indices=4x3 input_dim=10 output_dim=5", 1, 1, "10x5");
  ts_expect_shape("embedding", "indices=4x3 input_dim=10 output_dim=5", 0, 0, "4x3x5");
  ts_expect_shape("embedding", "indices=7 weight=9x2", 0, 0, "7x2");
  ts_expect_shape("layer_norm", "x=2x3x4x5 axes=2", 1, 1, "4x5");
  ts_expect_shape("layer_norm", "x=2x3x4x5", 1, 2, "5");
  ts_expect_shape("instance_norm", "x=2x3x4x5", 1, 1, "3");
  ts_expect_shape("group_norm", "x=2x6x4 groups=3", 1, 2, "6");
}

static void test_errors(void **state) {
  (void)state;
  ts_expect_einval("embedding", "indices=8", "needs input_dim and output_dim");
  ts_expect_einval("embedding", "input_dim=10 output_dim=4", "'indices' needs a shape");
  ts_expect_einval("embedding", "indices=8 weight=10", "must be (input_dim, output_dim)");
  ts_expect_einval("embedding", "indices=8 input_dim=10 output_dim=4 weight=12x4",
                   "input_dim=10 output_dim=4 disagree with weight 12x4");
  ts_expect_einval("embedding", "indices=2x2x2x2x2x2x2x2 input_dim=3 output_dim=2", "at most 8");
  ts_expect_einval("dropout", "x=4x4 p=1", "p < 1 (p=1)");
  ts_expect_einval("layer_norm", "x=4x8 axes=3", "axes=3 normalises more dims than x 4x8");
  ts_expect_einval("layer_norm", "x=4x8 gamma=4", "'gamma' 4 must have shape 8");
  ts_expect_einval("layer_norm", "x=4x2x3 axes=2 beta=6", "'beta' 6 must have shape 2x3");
  ts_expect_einval("layer_norm", "x=0x8", "empty dimension");
  ts_expect_einval("instance_norm", "x=4x8", "must be (N, C, spatial...), got 4x8");
  ts_expect_einval("instance_norm", "x=2x3x4 gamma=4", "'gamma' 4 must have shape 3");
  ts_expect_einval("group_norm", "x=2x6x4 groups=4",
                   "channels 6 of x 2x6x4 are not divisible by groups=4");
  ts_expect_einval("group_norm", "x=8 groups=1", "must be (N, C, ...), got 8");
  ts_expect_einval("l2_normalization", "x=8", "mode=instance needs x (N, C, ...)");
  ts_expect_einval("l2_normalization", "x=4x8 mode=spatial",
                   "mode=spatial needs x (N, C, spatial...)");
  ts_expect_einval("l2_normalization", "x=4x0x3 mode=channel", "empty dimension");
  ts_expect_einval("lrn", "x=2x3x4x4 nsize=4", "nsize=4 must be odd");
  ts_expect_einval("lrn", "x=2x3x4x4 k=0", "k=0 must be > 0");
  ts_expect_einval("lrn", "x=4x8", "must be (N, C, spatial...), got 4x8");
}

/* Indices from a user's file may be out of range: forward and backward refuse them. */
static void test_embedding_bad_index(void **state) {
  (void)state;
  opf_case c;
  ts_case_ready(&c, ts_op("embedding"), OPF_F32, "indices=6 input_dim=5 output_dim=3", 1, 3);
  ((int64_t *)c.in[0].data)[4] = 5;
  assert_int_equal(c.op->forward(&c), OPF_EINVAL);
  assert_non_null(strstr(c.err.msg, "indices[4] = 5 is outside [0, 5)"));
  ((int64_t *)c.in[0].data)[4] = -1;
  assert_int_equal(c.op->backward(&c), OPF_EINVAL);
  opf_case_release(&c);
}

/* Forward (and backward with with_grad) of spec on `threads` threads; the case is returned. */
static void run_threads(opf_case *c, const char *name, const char *spec, int threads, int bwd) {
  ts_case_ready(c, ts_op(name), OPF_F32, spec, bwd, 5);
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  int rc = c->op->forward(c);
  if (!rc && bwd) rc = c->op->backward(c);
  omp_set_num_threads(saved);
  if (rc) fail_msg("%s [%s]: %s", name, spec, c->err.msg);
}

/* Tensor t of a and b bitwise equal. */
static void expect_same(const opf_tensor *a, const opf_tensor *b, const char *what) {
  assert_int_equal(a->nbytes, b->nbytes);
  if (memcmp(a->data, b->data, a->nbytes)) fail_msg("%s differs between 1 and 2 threads", what);
}

static void test_thread_independence(void **state) {
  (void)state;
  struct { const char *op, *spec; int gin; } cases[] = {
      {"dropout", "x=301x517 p=0.3", 0},
      {"embedding", "indices=3001 input_dim=517 output_dim=67", 1},  /* many duplicates */
      {"layer_norm", "x=301x517", 1},                                /* chunked dgamma */
      {"group_norm", "x=5x12x61x67 groups=4", 1},
      {"l2_normalization", "x=5x7x61x67 mode=channel", 0},
      {"lrn", "x=5x17x61x67 alpha=0.5", 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    opf_case a, b;
    run_threads(&a, cases[k].op, cases[k].spec, 1, 1);
    run_threads(&b, cases[k].op, cases[k].spec, 2, 1);
    char what[128];
    snprintf(what, sizeof what, "%s [%s] output", cases[k].op, cases[k].spec);
    expect_same(&a.out[0], &b.out[0], what);
    snprintf(what, sizeof what, "%s [%s] gradient of input %d", cases[k].op, cases[k].spec,
             cases[k].gin);
    expect_same(&a.gin[cases[k].gin], &b.gin[cases[k].gin], what);
    opf_case_release(&a);
    opf_case_release(&b);
  }
}

/* Dropout drops a fraction p, scales the rest by 1/(1-p), and its backward applies the same
 * mask to dy. */
static void test_dropout_mask(void **state) {
  (void)state;
  opf_case c;
  run_threads(&c, "dropout", "x=1024x1024 p=0.3", 2, 1);
  int64_t n = opf_numel(&c.in[0]), zeros = 0;
  const float *x = c.in[0].data, *y = c.out[0].data, *g = c.gout[0].data, *dx = c.gin[0].data;
  float s = (float)(1.0 / 0.7);
  for (int64_t i = 0; i < n; i++) {
    int dropped = y[i] == 0 && x[i] != 0;
    zeros += dropped;
    if (!dropped && y[i] != x[i] * s)
      fail_msg("y[%lld] = %g, want %g", (long long)i, y[i], x[i] * s);
    float want = dropped ? 0.f : g[i] * s;
    if (dx[i] != want) fail_msg("dx[%lld] = %g, want %g", (long long)i, dx[i], want);
  }
  double frac = (double)zeros / (double)n; /* sd of the fraction: sqrt(.21/n) = 4.5e-4 */
  if (fabs(frac - 0.3) > 0.003) fail_msg("dropped fraction %g, expected 0.3", frac);
  opf_case_release(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),   cmocka_unit_test(test_derived_shapes),
      cmocka_unit_test(test_errors),          cmocka_unit_test(test_embedding_bad_index),
      cmocka_unit_test(test_thread_independence), cmocka_unit_test(test_dropout_mask),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

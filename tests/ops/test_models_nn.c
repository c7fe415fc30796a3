/* test_models_nn.c: conv2d, max/avg_pool2d, batch_norm: golden flops and bytes (derived by
 * hand below), derived shapes, the error paths the generic driver cannot see, batch_norm
 * leaving its running statistics alone, and the blocked, threaded conv2d backward (row blocks,
 * images split between threads) against a direct evaluation of its gradient sums. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

static void test_golden_models(void **state) {
  (void)state;
  /* conv2d x=(32,64,56,56), 64 filters 3x3, pad 1, float32: output (32,64,56,56), 6422528
   * elements, each a dot of length C*KH*KW = 576: 2*6422528*576 = 7398752256, plus one bias
   * add per output: fwd 7405174784; bwd 2*7398752256 (dw and dx) + 6422528 (db) =
   * 14803927040. Bytes (default model): x 25690112, w 64*64*9*4 = 147456, b 256, y 25690112;
   * fwd x+w+b+y = 51527936; bwd g + (x+w+b) read + (dx+dw+db) written = 77365760. */
  ts_expect_models("conv2d", OPF_F32, "x=32x64x56x56 filters=64 kernel=3 pad=1", 7405174784.0,
         14803927040.0, 51527936.0, 77365760.0);
  /* without the bias: no adds, no b */
  ts_expect_models("conv2d", OPF_F32, "x=32x64x56x56 filters=64 kernel=3 pad=1 b=none", 7398752256.0,
         14797504512.0, 51527680.0, 77365248.0);
  /* max_pool2d x=(32,64,56,56) 2x2 stride 2, float32: 1605632 outputs of 4 taps: 6422528
   * compares fwd; 1605632 adds (the scatter) bwd. Bytes: x 6422528 and y 1605632 elements,
   * 4 bytes each, plus the int32 argmax (4 per output) written fwd / read bwd: 38535168. */
  ts_expect_models("max_pool2d", OPF_F32, "x=32x64x56x56 kernel=2 stride=2", 6422528.0, 1605632.0,
         38535168.0, 38535168.0);
  /* avg_pool2d x=(32,64,56,56) 3x3 stride 1 pad 1, float32: 6422528 outputs of 9 taps plus
   * one scale each: 64225280 both ways. Bytes: x and y, 6422528 elements each: 51380224. */
  ts_expect_models("avg_pool2d", OPF_F32, "x=32x64x56x56 kernel=3 stride=1 pad=1", 64225280.0,
         64225280.0, 51380224.0, 51380224.0);
  /* batch_norm x=(32,64,56,56) float32, n = 6422528 elements, C = 64. train: 7n fwd, 9n bwd;
   * bytes fwd (2n + 4C)*4 = 51381248 (x, y, gamma, beta, running mean and var), bwd
   * (3n + 3C)*4 = 77071104 (g, x, dx; gamma, dgamma, dbeta). inference: 3n fwd, 5n bwd; bwd
   * also reads the running mean and var: (3n + 5C)*4 = 77071616. */
  ts_expect_models("batch_norm", OPF_F32, "x=32x64x56x56 mode=train", 44957696.0, 57802752.0, 51381248.0,
         77071104.0);
  ts_expect_models("batch_norm", OPF_F32, "x=32x64x56x56 mode=inference", 19267584.0, 32112640.0,
         51381248.0, 77071616.0);
  /* 2-D float64 (32,1024): n = 32768, C = 1024: 7n = 229376, 9n = 294912; bytes
   * (2n + 4C)*8 = 557056, (3n + 3C)*8 = 811008. */
  ts_expect_models("batch_norm", OPF_F64, "x=32x1024", 229376.0, 294912.0, 557056.0, 811008.0);
}

static void test_derived_shapes(void **state) {
  (void)state;
  /* w (F, C/groups, KH, KW) and b (F) from the params; y (N, F, OH, OW) */
  ts_expect_shape("conv2d", "x=2x6x9x9 filters=4 kernel=3 groups=2", 1, 1, "4x3x3x3");
  ts_expect_shape("conv2d", "x=2x6x9x9 filters=4 kernel=3 groups=2", 1, 2, "4");
  ts_expect_shape("conv2d", "x=2x6x9x9 filters=4 kernel=3 groups=2", 0, 0, "2x4x7x7");
  /* kh/kw override the square kernel: OH = 6+2-2+1, OW = 5+2-3+1 */
  ts_expect_shape("conv2d", "x=1x2x6x5 filters=3 kh=2 kw=3 pad=1", 1, 1, "3x2x2x3");
  ts_expect_shape("conv2d", "x=1x2x6x5 filters=3 kh=2 kw=3 pad=1", 0, 0, "1x3x7x5");
  /* a given w decides F and the kernel: (16 + 2 - 2*(5-1) - 1)/3 + 1 = 4 */
  ts_expect_shape("conv2d", "x=1x4x16x16 w=10x4x5x5 stride=3 pad=1 dilation=2", 0, 0, "1x10x4x4");
  /* pooling: stride defaults to the kernel; (7 + 2 - 3)/2 + 1 = 4 */
  ts_expect_shape("max_pool2d", "x=2x3x9x8 kernel=2", 0, 0, "2x3x4x4");
  ts_expect_shape("avg_pool2d", "x=2x3x7x7 kernel=3 stride=2 pad=1", 0, 0, "2x3x4x4");
  /* batch_norm: the per-channel vectors from x's channel axis */
  ts_expect_shape("batch_norm", "x=4x7x3x3", 1, 1, "7");
  ts_expect_shape("batch_norm", "x=4x7x3x3", 1, 4, "7");
  ts_expect_shape("batch_norm", "x=32x1024", 0, 0, "32x1024");
}

static void test_conv_errors(void **state) {
  (void)state;
  ts_expect_einval("conv2d", "x=1x3x4x4 kernel=7", "window 7x7 (dilation 1x1) is larger than the padded input 4x4");
  ts_expect_einval("conv2d", "x=1x1x5x5 kernel=3 dilation=3", "dilation 3x3) is larger than the padded input 5x5");
  ts_expect_einval("conv2d", "x=1x3x8x8 groups=2", "input channels 3 of x 1x3x8x8 are not divisible by groups=2");
  ts_expect_einval("conv2d", "x=1x4x8x8 filters=3 groups=2", "filters 3 are not divisible by groups=2");
  ts_expect_einval("conv2d", "x=1x4x8x8 w=8x3x3x3", "needs C/groups = 4 input channels");
  ts_expect_einval("conv2d", "x=1x4x8x8 w=8x4x3", "must be 4-D");
  ts_expect_einval("conv2d", "x=1x4x8x8 w=8x4x3x3 b=7", "bias 'b' 7 must have shape (8)");
  ts_expect_einval("conv2d", "x=4x8x8", "must be 4-D NCHW, got 4x8x8");
  ts_expect_einval("conv2d", "x=0x3x8x8", "empty dimension");
  ts_expect_einval("conv2d", "x=1x3x8x8 stride=0", "stride");
  ts_expect_einval("conv2d", "x=1x3x8x8 kernel=0", "kernel");
}

static void test_pool_errors(void **state) {
  (void)state;
  const char *ops[] = {"max_pool2d", "avg_pool2d"};
  for (int k = 0; k < 2; k++) {
    ts_expect_einval(ops[k], "x=1x1x8x8 kernel=3 pad=2", "pad 2 must be at most half the kernel 3");
    ts_expect_einval(ops[k], "x=1x1x3x3 kernel=6 pad=1", "larger than the padded input 5x5");
    ts_expect_einval(ops[k], "x=8x8", "must be 4-D NCHW");
    ts_expect_einval(ops[k], "x=1x1x8x0 kernel=1", "empty dimension");
  }
}

static void test_bn_errors(void **state) {
  (void)state;
  ts_expect_einval("batch_norm", "x=4x3x5x5 gamma=4", "'gamma' 4 must have shape (3)");
  ts_expect_einval("batch_norm", "x=4x3x5x5 running_var=3x1", "'running_var' 3x1 must have shape (3)");
  ts_expect_einval("batch_norm", "x=16", "x must be (N, C) or (N, C, ...), got 16");
  ts_expect_einval("batch_norm", "x=4x3 mode=test", "mode");
}

/* Train mode must not update running_mean / running_var in place: repeated calls would
 * otherwise measure drifting inputs. */
static void test_bn_running_stats_untouched(void **state) {
  (void)state;
  const opf_op *op = ts_op("batch_norm");
  opf_case c;
  ts_case_ready(&c, op, OPF_F64, "x=8x5x6x7 mode=train momentum=0.5", 1, 11);
  double rm[5], rv[5];
  memcpy(rm, c.in[3].data, sizeof rm);
  memcpy(rv, c.in[4].data, sizeof rv);
  assert_int_equal(op->forward(&c), OPF_OK);
  assert_int_equal(op->backward(&c), OPF_OK);
  assert_memory_equal(rm, c.in[3].data, sizeof rm);
  assert_memory_equal(rv, c.in[4].data, sizeof rv);
  opf_case_release(&c);
}

/* Direct evaluation of the conv2d gradients in float64: db[f] = sum g, dw = sum g * x at the
 * tap, dx = sum g * w over every (output, tap) that reads the element. */
static void conv_grads_direct(const opf_case *c, double *dx, double *dw, double *db) {
  const opf_tensor *x = &c->in[0], *w = &c->in[1], *y = &c->out[0];
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  int64_t F = w->shape[0], Cg = w->shape[1], KH = w->shape[2], KW = w->shape[3];
  int64_t OH = y->shape[2], OW = y->shape[3], Fg = F / (C / Cg);
  int64_t s = (int64_t)opf_case_param(c, "stride"), p = (int64_t)opf_case_param(c, "pad");
  int64_t d = (int64_t)opf_case_param(c, "dilation");
  const double *xd = x->data, *wd = w->data, *g = c->gout[0].data;
  memset(dx, 0, sizeof(double) * (size_t)opf_numel(x));
  memset(dw, 0, sizeof(double) * (size_t)opf_numel(w));
  memset(db, 0, sizeof(double) * (size_t)F);
  for (int64_t n = 0; n < N; n++)
    for (int64_t f = 0; f < F; f++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double gv = g[((n * F + f) * OH + oh) * OW + ow];
          db[f] += gv;
          for (int64_t cl = 0; cl < Cg; cl++)
            for (int64_t kh = 0; kh < KH; kh++)
              for (int64_t kw = 0; kw < KW; kw++) {
                int64_t ih = oh * s - p + kh * d, iw = ow * s - p + kw * d;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t xi = ((n * C + f / Fg * Cg + cl) * H + ih) * W + iw;
                int64_t wi = ((f * Cg + cl) * KH + kh) * KW + kw;
                dw[wi] += gv * xd[xi];
                dx[xi] += gv * wd[wi];
              }
        }
}

static void expect_close(const char *what, const char *spec, int threads, const opf_tensor *t,
                         const double *want) {
  int64_t n = opf_numel(t);
  double scale = 0;
  for (int64_t k = 0; k < n; k++) scale = fmax(scale, fabs(want[k]));
  for (int64_t k = 0; k < n; k++) {
    double got = ((const double *)t->data)[k];
    if (!(fabs(got - want[k]) <= 1e-10 * (scale + 1)))
      fail_msg("conv2d [%s] %d threads: %s[%lld] = %.12g, direct %.12g", spec, threads, what,
               (long long)k, got, want[k]);
  }
}

/* Shapes with several output-row blocks per image, an image split between threads (N = 1,
 * N = 3 on 2 threads) and groups, stride and dilation; 1 and 2 threads. */
static void test_conv_backward_blocked(void **state) {
  (void)state;
  const char *specs[] = {"x=1x16x160x150 filters=8 kernel=3 pad=1",
                         "x=3x6x200x180 filters=6 kernel=3 stride=2 pad=2 dilation=2 groups=3",
                         "x=3x8x30x31 filters=12 kernel=1 groups=2"};
  const opf_op *op = ts_op("conv2d");
  int saved = omp_get_max_threads();
  for (size_t k = 0; k < sizeof specs / sizeof *specs; k++)
    for (int threads = 1; threads <= 2; threads++) {
      omp_set_num_threads(threads);
      opf_case c;
      ts_case_ready(&c, op, OPF_F64, specs[k], 1, 5);
      assert_int_equal(op->forward(&c), OPF_OK);
      assert_int_equal(op->backward(&c), OPF_OK);
      double *dx = opf_alloc(sizeof(double) * (size_t)opf_numel(&c.in[0]));
      double *dw = opf_alloc(sizeof(double) * (size_t)opf_numel(&c.in[1]));
      double *db = opf_alloc(sizeof(double) * (size_t)c.in[1].shape[0]);
      conv_grads_direct(&c, dx, dw, db);
      expect_close("dx", specs[k], threads, &c.gin[0], dx);
      expect_close("dw", specs[k], threads, &c.gin[1], dw);
      expect_close("db", specs[k], threads, &c.gin[2], db);
      opf_free(dx);
      opf_free(dw);
      opf_free(db);
      opf_case_release(&c);
    }
  omp_set_num_threads(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),
      cmocka_unit_test(test_derived_shapes),
      cmocka_unit_test(test_conv_errors),
      cmocka_unit_test(test_pool_errors),
      cmocka_unit_test(test_bn_errors),
      cmocka_unit_test(test_bn_running_stats_untouched),
      cmocka_unit_test(test_conv_backward_blocked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

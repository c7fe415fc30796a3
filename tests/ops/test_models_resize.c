/* test_models_resize.c: adaptive_avg_pool2d, upsample_nearest, upsample_bilinear, roi_pooling
 * and depthwise_conv2d: golden flops and bytes (derived by hand below), hand-computed PyTorch
 * values for the resizing semantics (bins, nearest indices, bilinear with and without
 * align_corners) in both layouts, the infer error paths, roi_pooling's run-time batch-index
 * check, and depthwise_conv2d against conv2d with groups = C (an independent im2col + GEMM
 * implementation) forward and backward, on several row bands and 1 and 2 threads. */
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
  /* upsample x=(32,64,56,56) x2 float32: y (32,64,112,112) = 25690112 elements, x 6422528.
   * nearest moves data: 0 flops forward, one add per gradient element backward; bilinear
   * weighs 4 taps (4 multiplies + 3 adds) per output both ways: 179830784. Bytes: x and y,
   * 4 each: (6422528 + 25690112) * 4 = 128450560 both ways. */
  ts_expect_models("upsample_nearest", OPF_F32, "x=32x64x56x56 scale=2", 0, 25690112.0, 128450560.0, 128450560.0);
  ts_expect_models("upsample_bilinear", OPF_F32, "x=32x64x56x56 scale=2", 179830784.0, 179830784.0, 128450560.0,
         128450560.0);
  /* NHWC moves the same data */
  ts_expect_models("upsample_nearest", OPF_F32, "x=32x56x56x64 scale=2 layout=NHWC", 0, 25690112.0, 128450560.0,
         128450560.0);
  /* adaptive x=(32,64,56,56) -> 7x7: 2048 planes, bins of 8 rows and 8 columns: every element
   * added once (56*56) plus one scale per output (49): 2048 * 3185 = 6522880 both ways.
   * Bytes: (6422528 + 100352) * 4 = 26091520. */
  ts_expect_models("adaptive_avg_pool2d", OPF_F32, "x=32x64x56x56 output_size=7", 6522880.0, 6522880.0, 26091520.0,
         26091520.0);
  /* global: (32,512,7,7) -> 1x1: 16384 planes of 49 adds + 1 scale = 819200; bytes
   * (802816 + 16384) * 4 = 3276800. */
  ts_expect_models("adaptive_avg_pool2d", OPF_F32, "x=32x512x7x7 output_size=1", 819200.0, 819200.0, 3276800.0,
         3276800.0);
  /* adaptive 5 -> 3 rows (bins 0-2, 1-4, 3-5: 2+3+2 = 7 row-taps) x 4 -> 4 columns (4): 7*4
   * adds + 12 scales = 40 per plane, 2 planes: 80; bytes (40 + 24) * 4 = 256. */
  ts_expect_models("adaptive_avg_pool2d", OPF_F32, "x=1x2x5x4 output_size=3,4", 80.0, 80.0, 256.0, 256.0);
  /* roi_pooling data (1,512,38,50), 128 rois 7x7: 3211264 outputs, one max forward and one
   * add backward each. Bytes: data 972800 + rois 640 + y 3211264 elements * 4, plus the int32
   * arg-max 4 * 3211264: 16738816 + 12845056 = 29583872 both ways. */
  ts_expect_models("roi_pooling", OPF_F32, "data=1x512x38x50 rois=128x5 pooled_size=7 spatial_scale=0.0625",
         3211264.0, 3211264.0, 29583872.0, 29583872.0);
  /* depthwise x=(32,32,112,112) 3x3 pad 1 with bias: 12845056 outputs of 9 taps: 2*9 flops
   * each = 231211008, + 12845056 bias adds = 244056064; backward dx and dw (2 * 231211008)
   * + db 12845056 = 475267072. Bytes fwd: x 12845056 + w 288 + b 32 + y 12845056, * 4 =
   * 102761728; bwd g + x + w read, dx + dw + db written: (3 * 12845056 + 2 * 288 + 32) * 4
   * = 154143104. */
  ts_expect_models("depthwise_conv2d", OPF_F32, "x=32x32x112x112 kernel=3 pad=1", 244056064.0, 475267072.0,
         102761728.0, 154143104.0);
  /* without the bias; multiplier 2 doubles the outputs: 2 * 12845056 * 18 = 462422016 fwd,
   * twice that backward; bytes: w 576, y 25690112: (12845056 + 576 + 25690112) * 4 =
   * 154142976 fwd, (25690112 + 2 * 12845056 + 2 * 576) * 4 = 205524992 bwd. */
  ts_expect_models("depthwise_conv2d", OPF_F32, "x=32x32x112x112 kernel=3 pad=1 multiplier=2 b=none", 462422016.0,
         924844032.0, 154142976.0, 205525504.0);
}

/* Runs forward on x filled with 1, 2, 3, ... (in memory order) and compares y with want. */
static void expect_values(const char *name, const char *spec, const double *want, int64_t n) {
  const opf_op *op = ts_op(name);
  for (int d = 0; d < 2; d++) {
    opf_dtype dt = d ? OPF_F64 : OPF_F32;
    opf_case c;
    ts_case_ready(&c, op, dt, spec, 0, 1);
    for (int64_t k = 0; k < opf_numel(&c.in[0]); k++) ts_set(&c.in[0], k, (double)(k + 1));
    assert_int_equal(op->forward(&c), OPF_OK);
    assert_int_equal(opf_numel(&c.out[0]), n);
    for (int64_t k = 0; k < n; k++)
      if (fabs(ts_get(&c.out[0], k) - want[k]) > 1e-6 * (1 + fabs(want[k])))
        fail_msg("%s [%s] %s: y[%lld] = %.9g, expected %.9g", name, spec, opf_dtype_name(dt),
                 (long long)k, ts_get(&c.out[0], k), want[k]);
    opf_case_release(&c);
  }
}

static void test_semantics(void **state) {
  (void)state;
  /* bilinear x2, align_corners=false, [[1,2],[3,4]]: source coordinates (o+0.5)/2-0.5 =
   * -0.25 (clamped to 0), 0.25, 0.75, 1.25 (i0 = 1 at the last row/column): columns 1, 1.25,
   * 1.75, 2 along the first row; rows blend 3 - 1 = 2 per row step the same way. */
  const double bl[16] = {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5,
                         2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4};
  expect_values("upsample_bilinear", "x=1x1x2x2 scale=2", bl, 16);
  expect_values("upsample_bilinear", "x=1x1x2x2 size=4", bl, 16); /* the same ratio from a size */
  /* align_corners=true: coordinates o*(2-1)/(4-1) = 0, 1/3, 2/3, 1 */
  const double ac[16] = {1, 4. / 3, 5. / 3, 2, 5. / 3, 2, 7. / 3, 8. / 3,
                         7. / 3, 8. / 3, 3, 10. / 3, 3, 10. / 3, 11. / 3, 4};
  expect_values("upsample_bilinear", "x=1x1x2x2 scale=2 align_corners=true", ac, 16);
  /* NHWC, 2 channels [1,3 | 5,7] and [2,4 | 6,8] interleaved: each channel resizes as above
   * (channel 0 holds 1,3,5,7: 2 * the NCHW values - 1) */
  double nh[32];
  for (int k = 0; k < 16; k++) nh[2 * k] = 2 * bl[k] - 1, nh[2 * k + 1] = 2 * bl[k];
  expect_values("upsample_bilinear", "x=1x2x2x2 scale=2 layout=NHWC", nh, 32);
  /* nearest 2x3 -> 3x5: rows floor(o*2/3) = 0 0 1, columns floor(o*3/5) = 0 0 1 1 2 */
  const double nn[15] = {1, 1, 2, 2, 3, 1, 1, 2, 2, 3, 4, 4, 5, 5, 6};
  expect_values("upsample_nearest", "x=1x1x2x3 size=3,5", nn, 15);
  /* nearest with a non-integer scale 1.5 on 1x2: 3 outputs, floor(o/1.5) = 0 0 1 */
  const double ns[3] = {1, 1, 2};
  expect_values("upsample_nearest", "x=1x1x1x2 scale=1.5", ns, 3);
  /* adaptive 5 -> 3 rows of one column: bins [0,2) [1,4) [3,5): means 1.5, 3, 4.5 */
  const double ad[3] = {1.5, 3, 4.5};
  expect_values("adaptive_avg_pool2d", "x=1x1x5x1 output_size=3,1", ad, 3);
  /* adaptive upsampling 2 -> 3: bins [0,1) [0,2) [1,2): 1, 1.5, 2 */
  const double au[3] = {1, 1.5, 2};
  expect_values("adaptive_avg_pool2d", "x=1x1x1x2 output_size=1,3", au, 3);
  /* global pooling NHWC: x (1,2,2,3) = 1..12, channel c holds c+1, c+4, c+7, c+10 */
  const double ag[3] = {5.5, 6.5, 7.5};
  expect_values("adaptive_avg_pool2d", "x=1x2x2x3 output_size=1 layout=NHWC", ag, 3);
}

/* roi_pooling on given boxes: x (1,1,4,4) = 1..16. */
static void test_roi_values(void **state) {
  (void)state;
  const opf_op *op = ts_op("roi_pooling");
  opf_case c;
  ts_case_ready(&c, op, OPF_F64, "data=1x1x4x4 rois=2x5 pooled_size=2 spatial_scale=0.5", 1, 3);
  for (int k = 0; k < 16; k++) ts_set(&c.in[0], k, k + 1);
  /* roi 0: image box (0,0)-(7,7) -> feature (0,0)-(4,4) after rounding 3.5 up: 5x5, clipped
   * to the 4x4 map; bins rows [0,3) [2,5)->[2,4): maxima 11, 12, 15, 16. roi 1: (2,2)-(2,2)
   * -> the 1x1 box at (1,1): every bin is that element, 6. */
  const double rois[10] = {0, 0, 0, 7, 7, 0, 2, 2, 2, 2};
  for (int k = 0; k < 10; k++) ts_set(&c.in[1], k, rois[k]);
  assert_int_equal(op->forward(&c), OPF_OK);
  const double want[8] = {11, 12, 15, 16, 6, 6, 6, 6};
  for (int k = 0; k < 8; k++) assert_float_equal(ts_get(&c.out[0], k), want[k], 0);
  /* backward routes each bin's gradient to its arg-max: element 5 (value 6) gets roi 1's four */
  for (int k = 0; k < 8; k++) ts_set(&c.gout[0], k, k + 1);
  assert_int_equal(op->backward(&c), OPF_OK);
  assert_float_equal(ts_get(&c.gin[0], 10), 1, 0);
  assert_float_equal(ts_get(&c.gin[0], 15), 4, 0);
  assert_float_equal(ts_get(&c.gin[0], 5), 5 + 6 + 7 + 8, 0);
  assert_float_equal(ts_get(&c.gin[0], 0), 0, 0);
  /* a batch index outside [0, N) is rejected at run time (infer cannot see the values) */
  ts_set(&c.in[1], 5, 3);
  opf_err_clear(&c.err);
  assert_int_equal(op->forward(&c), OPF_EINVAL);
  if (!strstr(c.err.msg, "roi 1 has batch index 3, not an integer in [0, 1)"))
    fail_msg("unexpected message: %s", c.err.msg);
  ts_set(&c.in[1], 5, 0.5);
  assert_int_equal(op->forward(&c), OPF_EINVAL);
  opf_case_release(&c);
}

static void test_errors(void **state) {
  (void)state;
  const char *up[] = {"upsample_nearest", "upsample_bilinear"};
  for (int k = 0; k < 2; k++) {
    ts_expect_einval(up[k], "x=1x1x4x4 scale=0.1", "output size 0x0 for x 1x1x4x4 with scale=0.1 has a zero side");
    ts_expect_einval(up[k], "x=1x1x4x4 size=0,4", "output size 0x4 for x 1x1x4x4 has a zero side");
    ts_expect_einval(up[k], "x=1x1x4x4 size=2,3,4", "size needs 1 or 2 values");
    ts_expect_einval(up[k], "x=1x1x4x4 scale=0", "scale=0 must be positive");
    ts_expect_einval(up[k], "x=4x4", "must be 4-D NCHW, got 4x4");
    ts_expect_einval(up[k], "x=1x4x4 layout=NHWC", "must be 4-D NHWC");
    ts_expect_einval(up[k], "x=1x0x4x4", "empty dimension");
  }
  ts_expect_einval("adaptive_avg_pool2d", "x=1x1x4x4 output_size=0", "output size 0x0 for x 1x1x4x4 has a zero side");
  ts_expect_einval("adaptive_avg_pool2d", "x=1x1x4x4 output_size=3,0", "output size 3x0");
  ts_expect_einval("adaptive_avg_pool2d", "x=1x1x4x4 output_size=none", "output_size needs 1 or 2 values");
  ts_expect_einval("adaptive_avg_pool2d", "x=1x1x4x4 output_size=1,2,3", "output_size needs 1 or 2 values");
  ts_expect_einval("roi_pooling", "data=1x8x6x6 rois=4x4", "rois must be (R, 5) rows [batch_index, x1, y1, x2, y2] with R >= 1, got 4x4");
  ts_expect_einval("roi_pooling", "data=1x8x6x6 rois=5", "rois must be (R, 5)");
  ts_expect_einval("roi_pooling", "data=1x8x6x6 rois=0x5", "with R >= 1, got 0x5");
  ts_expect_einval("roi_pooling", "data=1x8x6x6 rois=4x5 pooled_size=0", "pooled_size needs 1 or 2 positive values");
  ts_expect_einval("roi_pooling", "data=1x8x6x6 rois=4x5 pooled_size=2,3,4", "pooled_size needs 1 or 2");
  ts_expect_einval("roi_pooling", "data=1x8x6x6 rois=4x5 spatial_scale=0", "spatial_scale=0 must be positive");
  ts_expect_einval("roi_pooling", "data=8x6x6 rois=4x5", "must be 4-D NCHW");
  ts_expect_einval("depthwise_conv2d", "x=1x32x8x8 w=64x1x3x3", "weight 'w' 64x1x3x3 has 64 filters, but x 1x32x8x8 (NCHW) has C=32 channels and multiplier=1: needs 32");
  ts_expect_einval("depthwise_conv2d", "x=1x32x8x8 w=32x1x3x3 multiplier=2", "multiplier=2: needs 64");
  ts_expect_einval("depthwise_conv2d", "x=1x8x8x16 w=32x1x3x3 layout=NHWC", "(NHWC) has C=16 channels");
  ts_expect_einval("depthwise_conv2d", "x=1x32x8x8 w=32x2x3x3", "weight 'w' must be (C*multiplier, 1, kh, kw), got 32x2x3x3");
  ts_expect_einval("depthwise_conv2d", "x=1x32x8x8 w=32x1x3", "weight 'w' must be (C*multiplier, 1, kh, kw)");
  ts_expect_einval("depthwise_conv2d", "x=1x32x8x8 b=31", "bias 'b' 31 must have shape (32)");
  ts_expect_einval("depthwise_conv2d", "x=1x4x3x3 kernel=5", "window 5x5 (dilation 1x1) is larger than the padded input 3x3");
  ts_expect_einval("depthwise_conv2d", "x=1x4x9x9 kernel=3 dilation=5", "larger than the padded input 9x9");
  ts_expect_einval("depthwise_conv2d", "x=1x4x16x16 stride=5", "at most 1024 taps and stride 4");
  ts_expect_einval("depthwise_conv2d", "x=4x16x16", "must be 4-D NCHW");
}

/* depthwise_conv2d against conv2d with groups = C (w (C*M, 1, KH, KW): filter f reads input
 * channel f / M in both): outputs and all three gradients, float64 and float32 (runs 3 and 4
 * below), 1 and 2 threads. */
static void test_depthwise_vs_grouped(void **state) {
  (void)state;
  const opf_op *dw = ts_op("depthwise_conv2d"), *cv = opf_op_find("conv2d");
  if (!cv) skip(); /* a build without conv2d */
  const char *specs[][2] = {
      {"x=2x3x150x131 kernel=3 pad=1", "x=2x3x150x131 filters=3 groups=3 kernel=3 pad=1"},
      {"x=1x4x97x70 kernel=3 stride=2 pad=1 multiplier=2",
       "x=1x4x97x70 filters=8 groups=4 kernel=3 stride=2 pad=1"},
      {"x=2x6x33x40 kernel=5 pad=4 dilation=2", "x=2x6x33x40 filters=6 groups=6 kernel=5 pad=4 dilation=2"},
      {"x=3x24x14x14 kernel=3 pad=1 b=none", "x=3x24x14x14 filters=24 groups=24 kernel=3 pad=1 b=none"},
      /* NHWC, multiplier 1, at least one vector of channels: the direct path (float64
       * vectors of 8, float32 of 16): channel tails, pixel blocks of 8 / 4 / 1 and their
       * remainders, strides above the kernel (rows and columns without taps), padding
       * beyond the window, dilation */
      {"x=2x13x11x20 kernel=3 stride=2 pad=1 layout=NHWC",
       "x=2x13x11x20 filters=20 groups=20 kernel=3 stride=2 pad=1 layout=NHWC"},
      {"x=2x14x14x16 kernel=3 pad=1 layout=NHWC",
       "x=2x14x14x16 filters=16 groups=16 kernel=3 pad=1 layout=NHWC"},
      {"x=1x17x19x33 kernel=5 stride=3 pad=2 dilation=2 layout=NHWC b=none",
       "x=1x17x19x33 filters=33 groups=33 kernel=5 stride=3 pad=2 dilation=2 layout=NHWC b=none"},
      {"x=2x9x23x8 kernel=2 stride=4 layout=NHWC",
       "x=2x9x23x8 filters=8 groups=8 kernel=2 stride=4 layout=NHWC"},
      {"x=1x6x5x24 kh=2 kw=4 pad=3 layout=NHWC",
       "x=1x6x5x24 filters=24 groups=24 kh=2 kw=4 pad=3 layout=NHWC"},
      {"x=2x9x40x16 kernel=3 stride=2 pad=1 layout=NHWC",
       "x=2x9x40x16 filters=16 groups=16 kernel=3 stride=2 pad=1 layout=NHWC"},
      {"x=1x3x37x48 kernel=3 pad=1 layout=NHWC",
       "x=1x3x37x48 filters=48 groups=48 kernel=3 pad=1 layout=NHWC"}};
  int saved = omp_get_max_threads();
  for (size_t k = 0; k < sizeof specs / sizeof *specs; k++)
    for (int threads = 1; threads <= 4; threads++) {
      /* threads 3 and 4: float32 (its own vector width), 1 and 2 threads */
      opf_dtype dt = threads <= 2 ? OPF_F64 : OPF_F32;
      double tol = dt == OPF_F64 ? 1e-10 : 1e-4;
      omp_set_num_threads(threads <= 2 ? threads : threads - 2);
      opf_case a, b;
      ts_case_ready(&a, dw, dt, specs[k][0], 1, 21);
      ts_case_ready(&b, cv, dt, specs[k][1], 1, 21);
      /* the same inputs and output gradient */
      for (int i = 0; i < 3; i++)
        if (a.in[i].data) memcpy(b.in[i].data, a.in[i].data, a.in[i].nbytes);
      memcpy(b.gout[0].data, a.gout[0].data, a.gout[0].nbytes);
      assert_int_equal(dw->forward(&a), OPF_OK);
      assert_int_equal(cv->forward(&b), OPF_OK);
      assert_int_equal(dw->backward(&a), OPF_OK);
      assert_int_equal(cv->backward(&b), OPF_OK);
      char msg[256];
      if (ts_compare(&a.out[0], &b.out[0], tol, msg, sizeof msg))
        fail_msg("[%s] %d threads: y: %s", specs[k][0], threads, msg);
      for (int i = 0; i < 3; i++) {
        if (!a.gin[i].data) continue;
        if (ts_compare(&a.gin[i], &b.gin[i], tol, msg, sizeof msg))
          fail_msg("[%s] %d threads: grad %d: %s", specs[k][0], threads, i, msg);
      }
      opf_case_release(&a);
      opf_case_release(&b);
    }
  omp_set_num_threads(saved);
}

/* NHWC results are the NCHW ones transposed, for every family member (same values fed). */
static void test_layouts_agree(void **state) {
  (void)state;
  const char *cases[][3] = {
      {"upsample_bilinear", "x=2x5x9x7 size=13,4", "x=2x9x7x5 size=13,4 layout=NHWC"},
      {"upsample_nearest", "x=2x5x9x7 scale=2.5", "x=2x9x7x5 scale=2.5 layout=NHWC"},
      {"adaptive_avg_pool2d", "x=2x20x9x7 output_size=4,3", "x=2x9x7x20 output_size=4,3 layout=NHWC"},
      {"depthwise_conv2d", "x=2x20x9x10 kernel=3 stride=2 pad=1 multiplier=2",
       "x=2x9x10x20 kernel=3 stride=2 pad=1 multiplier=2 layout=NHWC"}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const opf_op *op = ts_op(cases[k][0]);
    opf_case a, b;
    ts_case_ready(&a, op, OPF_F64, cases[k][1], 0, 5);
    ts_case_ready(&b, op, OPF_F64, cases[k][2], 0, 5);
    const opf_tensor *x = &a.in[0];
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < H * W; i++)
          ts_set(&b.in[0], (n * H * W + i) * C + c, ts_get(x, (n * C + c) * H * W + i));
    for (int i = 1; i < op->n_in; i++)
      if (a.in[i].data) memcpy(b.in[i].data, a.in[i].data, a.in[i].nbytes);
    assert_int_equal(op->forward(&a), OPF_OK);
    assert_int_equal(op->forward(&b), OPF_OK);
    const opf_tensor *y = &a.out[0];
    int64_t F = y->shape[1], P = y->shape[2] * y->shape[3];
    for (int64_t n = 0; n < N; n++)
      for (int64_t f = 0; f < F; f++)
        for (int64_t i = 0; i < P; i++) {
          double u = ts_get(y, (n * F + f) * P + i), v = ts_get(&b.out[0], (n * P + i) * F + f);
          if (fabs(u - v) > 1e-12 * (1 + fabs(u)))
            fail_msg("%s: NCHW %.12g vs NHWC %.12g at (%lld, %lld, %lld)", cases[k][0], u, v,
                     (long long)n, (long long)f, (long long)i);
        }
    opf_case_release(&a);
    opf_case_release(&b);
  }
}

/* Global average pooling (output_size=1, NCHW) sums each plane as one vector accumulator of
 * 64 bytes (16 floats, 8 doubles) folded by halves, plus the scalar tail, times 1/(H*W) in
 * the dtype; whole groups of a vector's lanes in planes go through a kernel of their own
 * (rs_sumv: the folds of the group together, prefetches) and must give those sums bit for
 * bit, and the reference's within rounding. Cases: planes of exactly one vector, of one plus
 * a tail of one, of a vector's lanes minus one (float32: 15, no vector: the scalar sum), tails
 * of every length class, plane counts with and without a partial group, more planes than
 * one row block (496 rows of 49 floats), output (H, 1) (rows of W), on 1 and 2 threads. */
static double global_avg_formula(const opf_tensor *x, int64_t r, int64_t n, opf_dtype dt) {
  double lane[16] = {0}, t = 0, s = 1.0 / (double)n;
  const int V = dt == OPF_F32 ? 16 : 8;
  int64_t nv = n / V * V;
  for (int64_t i = 0; i < nv; i++) { /* each lane's sum in the dtype's rounding */
    double v = lane[i % V] + ts_get(x, r * n + i);
    lane[i % V] = dt == OPF_F32 ? (double)(float)v : v;
  }
  for (int64_t j = nv; j < n; j++) t = dt == OPF_F32 ? (double)(float)(t + ts_get(x, r * n + j))
                                                     : t + ts_get(x, r * n + j);
  if (nv) {
    for (int w = V / 2; w >= 1; w /= 2)
      for (int i = 0; i < w; i++)
        lane[i] = dt == OPF_F32 ? (double)(float)(lane[i] + lane[i + w]) : lane[i] + lane[i + w];
    t = dt == OPF_F32 ? (double)(float)(t + lane[0]) : t + lane[0];
  }
  return dt == OPF_F32 ? (double)((float)s * (float)t) : s * t;
}

static void test_global_avg_exact(void **state) {
  (void)state;
  const opf_op *op = ts_op("adaptive_avg_pool2d");
  const char *specs[] = {"x=2x16x4x4 output_size=1",     "x=3x17x7x7 output_size=1",
                         "x=1x33x4x5 output_size=1",     "x=2x9x1x17 output_size=1",
                         "x=1x40x3x5 output_size=1",     "x=1x21x16x16 output_size=1",
                         "x=2x19x37x41 output_size=1",   "x=3x700x7x7 output_size=1",
                         "x=2x24x9x31 output_size=9,1",  "x=1x16x1x7 output_size=1"};
  int saved = omp_get_max_threads();
  for (int th = 1; th <= 2; th++)
    for (int d = 0; d < 2; d++)
      for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
        omp_set_num_threads(th);
        opf_dtype dt = d ? OPF_F64 : OPF_F32;
        opf_case c;
        ts_case_ready(&c, op, dt, specs[k], 0, 11 + k);
        assert_int_equal(op->forward(&c), OPF_OK);
        const opf_tensor *x = &c.in[0], *y = &c.out[0];
        int64_t rows = opf_numel(y), n = opf_numel(x) / rows;
        for (int64_t r = 0; r < rows; r++) {
          double want = global_avg_formula(x, r, n, dt), got = ts_get(y, r);
          if (memcmp(&got, &want, sizeof got))
            fail_msg("%s %s, %d threads: y[%lld] = %.17g, the per-plane sum gives %.17g",
                     specs[k], opf_dtype_name(dt), th, (long long)r, got, want);
        }
        char msg[256];
        if (ts_compare_reference(&c, dt == OPF_F32 ? 1e-5 : 1e-12, msg, sizeof msg))
          fail_msg("%s %s: %s", specs[k], opf_dtype_name(dt), msg);
        opf_case_release(&c);
      }
  omp_set_num_threads(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),     cmocka_unit_test(test_semantics),
      cmocka_unit_test(test_roi_values),        cmocka_unit_test(test_errors),
      cmocka_unit_test(test_depthwise_vs_grouped), cmocka_unit_test(test_layouts_agree),
      cmocka_unit_test(test_global_avg_exact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

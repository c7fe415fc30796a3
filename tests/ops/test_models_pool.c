/* test_models_pool.c: the pooling family (pool.c, pool_global.c): golden flops and bytes at one
 * standard shape per operator (derived by hand below), output shapes in both layouts and with
 * per-axis windows, the infer error paths, and max pooling's tie rule (the gradient of a
 * window whose maximum repeats goes to the first maximum in row-major window order) on every
 * kernel path: direct, staged (padded short rows), transposed (narrow planes), channels-last
 * (vector chunks and narrow C), global. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* Window pools. Let O = outputs, T = O * window volume, X = input elements, e = element size.
 * max: fwd T compares, bwd O adds (the scatter); bytes (X + O) * e + 4 O (int32 argmax) per pass.
 * avg: T + O (adds plus one scale per output) both passes; bytes (X + O) * e.
 * sum: T both passes; bytes (X + O) * e. */
static void test_golden_window(void **state) {
  (void)state;
  /* X = 32*64*4096 = 8388608, O = 32*64*2048 = 4194304, T = 2 O = 8388608;
   * bytes (8388608 + 4194304) * 4 + 4 * 4194304 = 67108864 */
  ts_expect_models("max_pool1d", OPF_F32, "x=32x64x4096 kernel=2 stride=2", 8388608.0,
                   4194304.0, 67108864.0, 67108864.0);
  /* O = X = 8388608, T = 3 O = 25165824, T + O = 33554432; bytes 2 * 8388608 * 4 */
  ts_expect_models("avg_pool1d", OPF_F32, "x=32x64x4096 kernel=3 stride=1 pad=1", 33554432.0,
                   33554432.0, 67108864.0, 67108864.0);
  /* NWC: O = 32*2048*64 = 4194304, T = 8388608; bytes (8388608 + 4194304) * 4 = 50331648 */
  ts_expect_models("sum_pool1d", OPF_F32, "x=32x4096x64 kernel=2 stride=2 layout=NWC",
                   8388608.0, 8388608.0, 50331648.0, 50331648.0);
  /* O = 32*64*28*28 = 1605632, T = 4 O = 6422528; (6422528 + 1605632) * 4 + 4 O = 38535168 */
  ts_expect_models("max_pool2d", OPF_F32, "x=32x64x56x56 kernel=2 stride=2", 6422528.0,
                   1605632.0, 38535168.0, 38535168.0);
  /* NHWC 3x3 pad 1: O = X = 6422528, T = 9 O = 57802752, T + O = 64225280; bytes 2 X * 4 */
  ts_expect_models("avg_pool2d", OPF_F32, "x=32x56x56x64 kernel=3 stride=1 pad=1 layout=NHWC",
                   64225280.0, 64225280.0, 51380224.0, 51380224.0);
  /* O = 1605632, T = 6422528; bytes (6422528 + 1605632) * 4 = 32112640 */
  ts_expect_models("sum_pool2d", OPF_F32, "x=32x64x56x56 kernel=2 stride=2", 6422528.0,
                   6422528.0, 32112640.0, 32112640.0);
  /* X = 8*64*16*56*56 = 25690112, O = 8*64*8*28*28 = 3211264, T = 8 O = 25690112;
   * bytes (25690112 + 3211264) * 4 + 4 O = 128450560 */
  ts_expect_models("max_pool3d", OPF_F32, "x=8x64x16x56x56 kernel=2 stride=2", 25690112.0,
                   3211264.0, 128450560.0, 128450560.0);
  /* NDHWC 3x3x3 pad 1: O = X = 25690112, T = 27 O = 693633024, T + O = 719323136;
   * bytes 2 X * 4 = 205520896 */
  ts_expect_models("avg_pool3d", OPF_F32,
                   "x=8x16x56x56x64 kernel=3 stride=1 pad=1 layout=NDHWC", 719323136.0,
                   719323136.0, 205520896.0, 205520896.0);
  /* per-axis window 1x3x3, stride 1x2x2, pad 0x1x1, float64: O = 8*64*16*28*28 = 6422528,
   * T = 9 O = 57802752; bytes (25690112 + 6422528) * 8 = 256901120 */
  ts_expect_models("sum_pool3d", OPF_F64, "x=8x64x16x56x56 kernel=1,3,3 stride=1,2,2 pad=0,1,1",
                   57802752.0, 57802752.0, 256901120.0, 256901120.0);
}

/* Global pools: the window is the whole input (T = X), O = N * C. max: fwd X, bwd O;
 * avg: fwd X + O, bwd X (one scaled copy per input element); bytes as the window pools. */
static void test_golden_global(void **state) {
  (void)state;
  /* X = 8388608, O = 2048: bytes (8388608 + 2048) * 4 + 4 * 2048 = 33570816 */
  ts_expect_models("global_max_pool1d", OPF_F32, "x=32x64x4096", 8388608.0, 2048.0, 33570816.0,
                   33570816.0);
  ts_expect_models("global_avg_pool1d", OPF_F32, "x=32x4096x64 layout=NWC", 8390656.0, 8388608.0,
                   33562624.0, 33562624.0);
  /* X = 32*2048*49 = 3211264, O = 65536: (3211264 + 65536) * 4 + 4 * 65536 = 13369344 */
  ts_expect_models("global_max_pool2d", OPF_F32, "x=32x2048x7x7", 3211264.0, 65536.0,
                   13369344.0, 13369344.0);
  /* X = 6422528, O = 2048: (6422528 + 2048) * 4 = 25698304 */
  ts_expect_models("global_avg_pool2d", OPF_F32, "x=32x64x56x56", 6424576.0, 6422528.0,
                   25698304.0, 25698304.0);
  /* X = 25690112, O = 512: (25690112 + 512) * 4 + 4 * 512 = 102764544 */
  ts_expect_models("global_max_pool3d", OPF_F32, "x=8x16x56x56x64 layout=NDHWC", 25690112.0,
                   512.0, 102764544.0, 102764544.0);
  ts_expect_models("global_avg_pool3d", OPF_F32, "x=8x64x16x56x56", 25690624.0, 25690112.0,
                   102762496.0, 102762496.0);
}

static void test_shapes(void **state) {
  (void)state;
  /* stride 0 (the default) means stride = kernel: (9 - 2) / 2 + 1 = 4, (8 - 2) / 2 + 1 = 4 */
  ts_expect_shape("max_pool2d", "x=2x3x9x8 kernel=2", 0, 0, "2x3x4x4");
  ts_expect_shape("max_pool2d", "x=2x9x8x3 kernel=2 layout=NHWC", 0, 0, "2x4x4x3");
  /* (10 + 2 - 3) / 2 + 1 = 5 */
  ts_expect_shape("avg_pool1d", "x=2x3x10 kernel=3 stride=2 pad=1", 0, 0, "2x3x5");
  ts_expect_shape("sum_pool1d", "x=2x10x3 kernel=3 stride=2 pad=1 layout=NWC", 0, 0, "2x5x3");
  /* per axis: D 4, H (9 + 2 - 3) / 2 + 1 = 5, W (8 - 2) / 2 + 1 = 4 */
  ts_expect_shape("max_pool3d", "x=1x2x4x9x8 kernel=1,3,2 stride=1,2,2 pad=0,1,0", 0, 0,
                  "1x2x4x5x4");
  ts_expect_shape("avg_pool3d", "x=1x4x9x8x2 kernel=1,3,2 stride=1,2,2 pad=0,1,0 layout=NDHWC",
                  0, 0, "1x4x5x4x2");
  ts_expect_shape("global_avg_pool2d", "x=2x3x4x5", 0, 0, "2x3x1x1");
  ts_expect_shape("global_max_pool2d", "x=2x4x5x3 layout=NHWC", 0, 0, "2x1x1x3");
  ts_expect_shape("global_max_pool1d", "x=2x3x7", 0, 0, "2x3x1");
  ts_expect_shape("global_avg_pool3d", "x=1x2x3x4x5 layout=NDHWC", 0, 0, "1x1x1x1x5");
}

static void test_errors(void **state) {
  (void)state;
  const char *win[] = {"max_pool2d", "avg_pool2d", "sum_pool2d"};
  for (int k = 0; k < 3; k++) {
    ts_expect_einval(win[k], "x=1x1x8x8 kernel=3 pad=2", "pad 2 must be at most half the kernel 3");
    ts_expect_einval(win[k], "x=1x1x3x3 kernel=6 pad=1",
                     "window 6x6 is larger than the padded input 5x5 (input 3x3, pad 1x1)");
    ts_expect_einval(win[k], "x=8x8", "input 'x' must be 4-D NCHW, got 8x8 (2-D)");
    ts_expect_einval(win[k], "x=1x8x8 layout=NHWC", "must be 4-D NHWC");
    ts_expect_einval(win[k], "x=1x1x8x0 kernel=1", "1x1x8x0 has an empty dimension");
    ts_expect_einval(win[k], "x=1x1x8x8 kernel=2,2,2",
                     "kernel has 3 values; give 1 (every axis) or 2");
    ts_expect_einval(win[k], "x=1x1x8x8 stride=1,1,1", "stride has 3 values");
    ts_expect_einval(win[k], "x=1x1x8x8 kernel=0", "kernel");
    ts_expect_einval(win[k], "x=1x1x8x8 layout=NWHC", "layout");
  }
  /* one axis of a per-axis window */
  ts_expect_einval("max_pool3d", "x=1x1x4x8x8 kernel=3 pad=0,2,1",
                   "pad 2 must be at most half the kernel 3 (axis H)");
  ts_expect_einval("avg_pool3d", "x=1x1x1x8x8 kernel=4,2,2 pad=1,0,0",
                   "window 4x2x2 is larger than the padded input 3x8x8 (input 1x8x8, pad 1x0x0)");
  ts_expect_einval("sum_pool3d", "x=1x1x8x8", "must be 5-D NCDHW");
  ts_expect_einval("max_pool1d", "x=1x2x4 kernel=5", "window 5 is larger than the padded input 4");
  ts_expect_einval("avg_pool1d", "x=1x2x8 kernel=2 pad=2", "pad 2 must be at most half the kernel 2");
  ts_expect_einval("max_pool1d", "x=1x2x3x4", "must be 3-D NCW");
  ts_expect_einval("max_pool1d", "x=1x8x2x4 layout=NWC", "must be 3-D NWC");
  /* global pools have no window: only the input's rank and sizes */
  ts_expect_einval("global_max_pool2d", "x=2x3x4", "must be 4-D NCHW");
  ts_expect_einval("global_avg_pool3d", "x=2x3x4x5 layout=NDHWC", "must be 5-D NDHWC");
  ts_expect_einval("global_avg_pool1d", "x=2x0x4", "empty dimension");
}

/* Element offset of (n, c, spatial s) in layout cl. */
static int64_t at(int cl, int64_t C, int64_t S, int64_t n, int64_t c, int64_t s) {
  return cl ? (n * S + s) * C + c : (n * C + c) * S + s;
}

/* Max pooling of a constant input: every window ties, so with g = 1 each window sends 1 to its
 * first real element in row-major order (the one of smallest index). Checks forward and that
 * rule on the case spec (spatial dims in[3], window k/s/p per axis, 1-D/2-D with unit leading
 * axes; global: the whole input). */
static void check_ties(const char *name, const char *spec, int cl, int64_t N, int64_t C,
                       const int64_t *in, const int64_t *k, const int64_t *st, const int64_t *p) {
  opf_case c;
  ts_case_ready(&c, ts_op(name), OPF_F64, spec, 1, 5);
  int64_t X = opf_numel(&c.in[0]), O = opf_numel(&c.out[0]);
  for (int64_t i = 0; i < X; i++) ts_set(&c.in[0], i, 0.25);
  for (int64_t i = 0; i < O; i++) ts_set(&c.gout[0], i, 1.0);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_int_equal(c.op->backward(&c), OPF_OK);
  for (int64_t i = 0; i < O; i++) assert_float_equal(ts_get(&c.out[0], i), 0.25, 0);
  int64_t out[3], S = in[0] * in[1] * in[2];
  for (int a = 0; a < 3; a++) out[a] = (in[a] + 2 * p[a] - k[a]) / st[a] + 1;
  static double want[1 << 16];
  assert_true(X <= (int64_t)(sizeof want / sizeof want[0]));
  memset(want, 0, sizeof want);
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++)
      for (int64_t od = 0; od < out[0]; od++)
        for (int64_t oh = 0; oh < out[1]; oh++)
          for (int64_t ow = 0; ow < out[2]; ow++) {
            int64_t d = od * st[0] - p[0], h = oh * st[1] - p[1], w = ow * st[2] - p[2];
            d = d < 0 ? 0 : d, h = h < 0 ? 0 : h, w = w < 0 ? 0 : w; /* first real element */
            want[at(cl, C, S, n, ch, (d * in[1] + h) * in[2] + w)] += 1;
          }
  for (int64_t i = 0; i < X; i++)
    if (ts_get(&c.gin[0], i) != want[i])
      fail_msg("%s [%s]: dx[%lld] = %g, expected %g (ties go to the first maximum)", name, spec,
               (long long)i, ts_get(&c.gin[0], i), want[i]);
  opf_case_release(&c);
}

static void test_max_ties(void **state) {
  (void)state;
  const int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
  /* 2-D direct (stride 2 chunks), staged (pad 1, short rows), transposed (narrow plane) */
  check_ties("max_pool2d", "x=2x3x12x40 kernel=2 stride=2", 0, 2, 3, (int64_t[]){1, 12, 40},
             (int64_t[]){1, 2, 2}, (int64_t[]){1, 2, 2}, zero);
  check_ties("max_pool2d", "x=1x2x9x37 kernel=3 stride=1 pad=1", 0, 1, 2, (int64_t[]){1, 9, 37},
             (int64_t[]){1, 3, 3}, one, (int64_t[]){0, 1, 1});
  check_ties("max_pool2d", "x=1x2x70x5 kernel=3 stride=1 pad=1", 0, 1, 2, (int64_t[]){1, 70, 5},
             (int64_t[]){1, 3, 3}, one, (int64_t[]){0, 1, 1});
  check_ties("max_pool2d", "x=1x2x70x7 kernel=2 stride=2 pad=1", 0, 1, 2, (int64_t[]){1, 70, 7},
             (int64_t[]){1, 2, 2}, (int64_t[]){1, 2, 2}, (int64_t[]){0, 1, 1});
  /* channels-last: vector chunks (C = 35) and fewer channels than a chunk (C = 3) */
  check_ties("max_pool2d", "x=1x9x10x35 kernel=3 stride=2 pad=1 layout=NHWC", 1, 1, 35,
             (int64_t[]){1, 9, 10}, (int64_t[]){1, 3, 3}, (int64_t[]){1, 2, 2},
             (int64_t[]){0, 1, 1});
  check_ties("max_pool2d", "x=2x7x6x3 kernel=3 stride=1 pad=1 layout=NHWC", 1, 2, 3,
             (int64_t[]){1, 7, 6}, (int64_t[]){1, 3, 3}, one, (int64_t[]){0, 1, 1});
  /* 1-D and 3-D with a per-axis window */
  check_ties("max_pool1d", "x=2x2x100 kernel=4 stride=3 pad=2", 0, 2, 2, (int64_t[]){1, 1, 100},
             (int64_t[]){1, 1, 4}, (int64_t[]){1, 1, 3}, (int64_t[]){0, 0, 2});
  check_ties("max_pool3d", "x=1x2x5x6x33 kernel=3,2,3 stride=2,1,1 pad=1,1,1", 0, 1, 2,
             (int64_t[]){5, 6, 33}, (int64_t[]){3, 2, 3}, (int64_t[]){2, 1, 1},
             (int64_t[]){1, 1, 1});
  /* global: the whole plane (vector and shorter-than-a-chunk paths) or image */
  check_ties("global_max_pool2d", "x=2x3x9x11", 0, 2, 3, (int64_t[]){1, 9, 11},
             (int64_t[]){1, 9, 11}, one, zero);
  check_ties("global_max_pool1d", "x=2x3x5", 0, 2, 3, (int64_t[]){1, 1, 5}, (int64_t[]){1, 1, 5},
             one, zero);
  check_ties("global_max_pool3d", "x=1x2x3x4x20 layout=NDHWC", 1, 1, 20, (int64_t[]){2, 3, 4},
             (int64_t[]){2, 3, 4}, one, zero);
  check_ties("global_max_pool3d", "x=2x9x2x7x7", 0, 2, 9, (int64_t[]){2, 7, 7},
             (int64_t[]){2, 7, 7}, one, zero);
}

/* Long float32 planes (one pass in blocks, gmax_long): ties go to the first maximum, across
 * blocks too (plane 0 constant, plane 1 with its maximum at 3000 and again at 4500, in two
 * different blocks, and a NaN past the first block that is ignored). */
static void test_global_long_ties(void **state) {
  (void)state;
  opf_case c;
  ts_case_ready(&c, ts_op("global_max_pool1d"), OPF_F32, "x=1x2x5000", 1, 5);
  float *x = c.in[0].data;
  for (int i = 0; i < 10000; i++) x[i] = 0.5f;
  x[5000 + 3000] = 2.0f, x[5000 + 4500] = 2.0f, x[5000 + 2100] = NAN;
  for (int i = 0; i < 2; i++) ts_set(&c.gout[0], i, 1.0);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_int_equal(c.op->backward(&c), OPF_OK);
  assert_float_equal(ts_get(&c.out[0], 0), 0.5, 0);
  assert_float_equal(ts_get(&c.out[0], 1), 2.0, 0);
  for (int i = 0; i < 10000; i++)
    assert_float_equal(ts_get(&c.gin[0], i), i == 0 || i == 8000 ? 1.0 : 0.0, 0);
  opf_case_release(&c);
}

/* Without an input gradient (no backward follows) the AVX-512 float32 kernels (16 planes at
 * once, long planes in blocks) skip the argmax: the values must be the bits the argmax path
 * gives, on planes whose maximum is a zero of either sign first (the first zero's sign), with
 * a NaN among the first 16 elements or later (skipped, as the reference's sequential max
 * does), and random planes; 1 and 2 threads. The float64 kernels (gmaxv, gmax_run) on the
 * same planes against the reference. */
static void test_global_max_values_only(void **state) {
  (void)state;
  static const char *const specs[] = {"x=2x37x98", "x=1x19x16", "x=2x3x5003", "x=1x33x1024",
                                      "x=1x4x2048"};
  const int saved = omp_get_max_threads();
  char msg[256];
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    for (int nt = 1; nt <= 2; nt++) {
      omp_set_num_threads(nt);
      opf_case a, b;
      ts_case_ready(&a, ts_op("global_max_pool1d"), OPF_F32, specs[i], 1, 29);
      ts_case_ready(&b, ts_op("global_max_pool1d"), OPF_F32, specs[i], 0, 29);
      assert_null(b.gin[0].data);
      float *xa = a.in[0].data, *xb = b.in[0].data;
      const int64_t P = opf_numel(&a.out[0]), S = opf_numel(&a.in[0]) / P;
      for (int64_t q = 0; q < P; q++) {
        float *pl = xa + q * S;
        if (q % 5 == 0) { /* all negative but two zeros: -0.0 first, then +0.0 */
          for (int64_t k = 0; k < S; k++) pl[k] = -1.0f - (float)k;
          pl[S / 3] = -0.0f, pl[S / 2] = 0.0f;
        } else if (q % 5 == 1) { /* +0.0 first, -0.0 late (another block of a long plane) */
          for (int64_t k = 0; k < S; k++) pl[k] = -1.0f - (float)(k % 7);
          pl[1] = 0.0f, pl[S - 1] = -0.0f;
        } else if (q % 5 == 2) {
          pl[3] = NAN; /* among the first 16: the scalar lanes (gmax_run), whose lane 3 kept
                        * its later elements out before the NaN was skipped at the start */
        } else if (q % 5 == 3) {
          pl[S - 2] = NAN; /* later: ignored, as the argmax path does */
        }
      }
      memcpy(xb, xa, (size_t)a.in[0].nbytes);
      assert_int_equal(a.op->forward(&a), OPF_OK);
      assert_int_equal(b.op->forward(&b), OPF_OK);
      if (memcmp(a.out[0].data, b.out[0].data, (size_t)a.out[0].nbytes)) {
        const float *ya = a.out[0].data, *yb = b.out[0].data;
        for (int64_t q = 0; q < P; q++)
          if (memcmp(ya + q, yb + q, 4))
            fail_msg("global_max_pool1d [%s] %d threads: values-only y[%lld] = %g, with the argmax %g",
                     specs[i], nt, (long long)q, yb[q], ya[q]);
      }
      if (ts_compare_reference(&b, 1e-6, msg, sizeof msg))
        fail_msg("global_max_pool1d [%s] values only, %d threads: %s", specs[i], nt, msg);
      opf_case d; /* float64: the same planes */
      ts_case_ready(&d, ts_op("global_max_pool1d"), OPF_F64, specs[i], 1, 29);
      for (int64_t k = 0; k < P * S; k++) ts_set(&d.in[0], k, (double)xa[k]);
      assert_int_equal(d.op->forward(&d), OPF_OK);
      if (ts_compare_reference(&d, 1e-13, msg, sizeof msg))
        fail_msg("global_max_pool1d float64 [%s], %d threads: %s", specs[i], nt, msg);
      opf_case_release(&d);
      opf_case_release(&a);
      opf_case_release(&b);
    }
  omp_set_num_threads(saved);
}

/* Channels-first planes shorter than a vector are reduced 16 at a time (gshort): plane counts
 * that leave a remainder, plane lengths 1 to 15, on 1 and 2 threads. Forward against the
 * reference; backward: max sends g to the first maximum of the plane, avg g / S everywhere. */
static void test_global_short_planes(void **state) {
  (void)state;
  static const struct { const char *op, *spec; int64_t S; } cases[] = {
      {"global_max_pool1d", "x=3x13x1", 1},   {"global_avg_pool1d", "x=3x13x1", 1},
      {"global_max_pool1d", "x=3x13x2", 2},   {"global_avg_pool1d", "x=5x7x7", 7},
      {"global_max_pool1d", "x=4x64x12", 12}, {"global_avg_pool1d", "x=4x64x12", 12},
      {"global_max_pool2d", "x=2x41x3x5", 15}, {"global_avg_pool2d", "x=2x41x3x5", 15},
      {"global_max_pool3d", "x=1x33x2x2x2", 8}, {"global_avg_pool3d", "x=1x33x2x2x2", 8},
      /* planes of a vector or more, a vector's lanes of planes at once (gmaxv) plus the rest */
      {"global_max_pool3d", "x=2x37x2x7x7", 98}, {"global_max_pool2d", "x=1x19x4x4", 16},
      {"global_max_pool1d", "x=3x11x29", 29},
      {"global_avg_pool3d", "x=2x37x2x7x7", 98}, {"global_avg_pool1d", "x=3x11x29", 29},
      {"global_avg_pool2d", "x=1x19x4x4", 16},
      /* long planes: blocks of 2048 with a ragged last one (gmax_long) */
      {"global_max_pool1d", "x=2x3x5003", 5003}, {"global_max_pool2d", "x=1x2x64x64", 4096},
  };
  /* channels-last global max: whole register blocks of 4 vectors of channels plus a remainder
   * (141 = 2 blocks of 64 float32 lanes + 13; 32 = exactly one float64 block of 4x8) */
  static const struct { const char *spec; int64_t S, C; } cl[] = {
      {"x=2x3x5x141 layout=NHWC", 15, 141}, {"x=3x7x7x32 layout=NHWC", 49, 32},
      {"x=1x1x1x200 layout=NHWC", 1, 200},
  };
  const int saved = omp_get_max_threads();
  char msg[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int d = OPF_F32; d <= OPF_F64; d++)
      for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        const opf_op *op = ts_op(cases[i].op);
        const int max = strstr(cases[i].op, "max") != NULL;
        opf_case c;
        ts_case_ready(&c, op, (opf_dtype)d, cases[i].spec, 1, 17);
        assert_int_equal(op->forward(&c), OPF_OK);
        assert_int_equal(op->backward(&c), OPF_OK);
        if (ts_compare_reference(&c, d == OPF_F32 ? 1e-6 : 1e-13, msg, sizeof msg))
          fail_msg("%s %s [%s] on %d threads: %s", cases[i].op, opf_dtype_name((opf_dtype)d),
                   cases[i].spec, nt, msg);
        const int64_t S = cases[i].S, P = opf_numel(&c.out[0]);
        for (int64_t q = 0; q < P; q++) {
          int64_t first = 0;
          for (int64_t k = 1; k < S; k++)
            if (ts_get(&c.in[0], q * S + k) > ts_get(&c.in[0], q * S + first)) first = k;
          const double g = ts_get(&c.gout[0], q);
          for (int64_t k = 0; k < S; k++) {
            const double want = max ? (k == first ? g : 0) : g / (double)S;
            const double got = ts_get(&c.gin[0], q * S + k);
            if (!(fabs(got - want) <= 1e-6 * (1 + fabs(want))))
              fail_msg("%s %s [%s] on %d threads: dx[%lld] = %.9g, want %.9g", cases[i].op,
                       opf_dtype_name((opf_dtype)d), cases[i].spec, nt, (long long)(q * S + k),
                       got, want);
          }
        }
        opf_case_release(&c);
      }
  for (size_t i = 0; i < sizeof cl / sizeof cl[0]; i++)
    for (int d = OPF_F32; d <= OPF_F64; d++)
      for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        opf_case c;
        ts_case_ready(&c, ts_op("global_max_pool2d"), (opf_dtype)d, cl[i].spec, 1, 23);
        assert_int_equal(c.op->forward(&c), OPF_OK);
        assert_int_equal(c.op->backward(&c), OPF_OK);
        const int64_t S = cl[i].S, C = cl[i].C, N = opf_numel(&c.out[0]) / C;
        for (int64_t n = 0; n < N; n++)
          for (int64_t ch = 0; ch < C; ch++) {
            int64_t first = 0; /* the reference: the first maximum down the rows */
            for (int64_t k = 1; k < S; k++)
              if (ts_get(&c.in[0], (n * S + k) * C + ch) > ts_get(&c.in[0], (n * S + first) * C + ch)) first = k;
            const double want = ts_get(&c.in[0], (n * S + first) * C + ch);
            if (ts_get(&c.out[0], n * C + ch) != want)
              fail_msg("global_max_pool2d %s [%s] %d threads: y[%lld,%lld] = %g, want %g",
                       opf_dtype_name((opf_dtype)d), cl[i].spec, nt, (long long)n, (long long)ch,
                       ts_get(&c.out[0], n * C + ch), want);
            for (int64_t k = 0; k < S; k++) {
              const double g = k == first ? ts_get(&c.gout[0], n * C + ch) : 0;
              if (ts_get(&c.gin[0], (n * S + k) * C + ch) != g)
                fail_msg("global_max_pool2d %s [%s] %d threads: dx row %lld channel %lld = %g, want %g",
                         opf_dtype_name((opf_dtype)d), cl[i].spec, nt, (long long)k, (long long)ch,
                         ts_get(&c.gin[0], (n * S + k) * C + ch), g);
            }
          }
        opf_case_release(&c);
      }
  omp_set_num_threads(saved);
  /* ties in short planes: the first maximum */
  const int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
  check_ties("global_max_pool1d", "x=3x13x7", 0, 3, 13, (int64_t[]){1, 1, 7},
             (int64_t[]){1, 1, 7}, one, zero);
  /* ties channels-last, across the register blocks and the remainder */
  check_ties("global_max_pool2d", "x=2x3x5x141 layout=NHWC", 1, 2, 141, (int64_t[]){1, 3, 5},
             (int64_t[]){1, 3, 5}, one, zero);
}

/* 1-D channels-first pooling of short rows runs an image's C rows as one (C, W) plane
 * (pool_merge_rows): forward against the reference on 1 and 2 threads, max ties to the first
 * maximum of each window, avg/sum backward as the forward's adjoint (<y, g> = <x, dx>). */
static void test_pool1d_merged_rows(void **state) {
  (void)state;
  static const char *const ops[] = {"max_pool1d", "avg_pool1d", "sum_pool1d"};
  static const char *const specs[] = {"x=5x37x12 kernel=3 stride=1 pad=1", "x=3x9x15 kernel=2 stride=2",
                                      "x=2x3x1 kernel=1", "x=4x17x7 kernel=3 stride=2 pad=1"};
  const int saved = omp_get_max_threads();
  char msg[256];
  for (size_t o = 0; o < 3; o++)
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
      for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        const opf_op *op = ts_op(ops[o]);
        opf_case c;
        ts_case_ready(&c, op, OPF_F64, specs[i], 1, 29);
        assert_int_equal(op->forward(&c), OPF_OK);
        assert_int_equal(op->backward(&c), OPF_OK);
        if (ts_compare_reference(&c, 1e-13, msg, sizeof msg))
          fail_msg("%s [%s] on %d threads: %s", ops[o], specs[i], nt, msg);
        if (o > 0) {
          double yg = 0, xd = 0, sc = 0;
          for (int64_t k = 0; k < opf_numel(&c.out[0]); k++)
            yg += ts_get(&c.out[0], k) * ts_get(&c.gout[0], k), sc += fabs(ts_get(&c.out[0], k));
          for (int64_t k = 0; k < opf_numel(&c.in[0]); k++)
            xd += ts_get(&c.in[0], k) * ts_get(&c.gin[0], k);
          if (!(fabs(yg - xd) <= 1e-10 * (1 + sc)))
            fail_msg("%s [%s] on %d threads: <y, g> = %.17g, <x, dx> = %.17g", ops[o], specs[i],
                     nt, yg, xd);
        }
        opf_case_release(&c);
      }
  omp_set_num_threads(saved);
  const int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
  check_ties("max_pool1d", "x=2x37x12 kernel=3 stride=1 pad=1", 0, 2, 37, (int64_t[]){1, 1, 12},
             (int64_t[]){1, 1, 3}, one, (int64_t[]){0, 0, 1});
  check_ties("max_pool1d", "x=3x20x9 kernel=2 stride=2", 0, 3, 20, (int64_t[]){1, 1, 9},
             (int64_t[]){1, 1, 2}, (int64_t[]){1, 1, 2}, zero);
}

/* Max backward with windows along W only, stride 1, as many outputs as inputs, runs as a
 * gather (pool_gather: each input sums the outputs whose argmax it is, over a flat index that
 * crosses row ends). Inputs of few distinct values (ties inside windows and neighbouring
 * windows sharing their argmax) and gradients of halves (exact sums): dx must equal the
 * scatter of g to each window's first maximum, exactly, in both layouts, both dtypes, on 1
 * and 2 threads; planes shorter than a vector, ragged vector tails, merged short rows. */
static void test_max_gather_backward(void **state) {
  (void)state;
  static const struct { const char *op, *spec; int cl; int64_t N, C, R, W, k; } cases[] = {
      {"max_pool1d", "x=3x5x40 kernel=3 stride=1 pad=1", 0, 3, 5, 1, 40, 3},
      {"max_pool1d", "x=2x3x37 kernel=5 stride=1 pad=2", 0, 2, 3, 1, 37, 5},
      {"max_pool1d", "x=2x3x9 kernel=7 stride=1 pad=3", 0, 2, 3, 1, 9, 7},
      {"max_pool1d", "x=4x64x12 kernel=3 stride=1 pad=1", 0, 4, 64, 1, 12, 3},
      {"max_pool1d", "x=3x17x5 kernel=1", 0, 3, 17, 1, 5, 1},
      {"max_pool1d", "x=2x40x3 kernel=3 stride=1 pad=1 layout=NWC", 1, 2, 3, 1, 40, 3},
      {"max_pool1d", "x=2x13x37 kernel=5 stride=1 pad=2 layout=NWC", 1, 2, 37, 1, 13, 5},
      {"max_pool2d", "x=2x3x6x21 kernel=1,3 stride=1 pad=0,1", 0, 2, 3, 6, 21, 3},
      {"max_pool3d", "x=1x2x3x4x19 kernel=1,1,5 stride=1 pad=0,0,2", 0, 1, 2, 12, 19, 5},
  };
  const int saved = omp_get_max_threads();
  static double want[1 << 14];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int d = OPF_F32; d <= OPF_F64; d++)
      for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        const int64_t N = cases[i].N, C = cases[i].C, R = cases[i].R, W = cases[i].W,
                      k = cases[i].k, p = k / 2, cl = cases[i].cl, S = R * W;
        opf_case c;
        ts_case_ready(&c, ts_op(cases[i].op), (opf_dtype)d, cases[i].spec, 1, 31);
        const int64_t X = opf_numel(&c.in[0]);
        assert_int_equal(X, opf_numel(&c.out[0]));
        assert_true(X <= (int64_t)(sizeof want / sizeof want[0]));
        for (int64_t j = 0; j < X; j++) {
          ts_set(&c.in[0], j, (double)((j * 7 + j / 5) % 4));
          ts_set(&c.gout[0], j, 0.5 * (double)(j % 9) - 2);
        }
        assert_int_equal(c.op->forward(&c), OPF_OK);
        assert_int_equal(c.op->backward(&c), OPF_OK);
        memset(want, 0, sizeof want);
        for (int64_t n = 0; n < N; n++)
          for (int64_t ch = 0; ch < C; ch++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t o = 0; o < W; o++) {
                int64_t a = o - p < 0 ? 0 : o - p, b = o - p + k > W ? W : o - p + k, best = a;
                for (int64_t w = a; w < b; w++)
                  if (ts_get(&c.in[0], at((int)cl, C, S, n, ch, r * W + w)) >
                      ts_get(&c.in[0], at((int)cl, C, S, n, ch, r * W + best)))
                    best = w;
                want[at((int)cl, C, S, n, ch, r * W + best)] +=
                    ts_get(&c.gout[0], at((int)cl, C, S, n, ch, r * W + o));
              }
        for (int64_t j = 0; j < X; j++)
          if (ts_get(&c.gin[0], j) != want[j])
            fail_msg("%s %s [%s] on %d threads: dx[%lld] = %g, want %g", cases[i].op,
                     opf_dtype_name((opf_dtype)d), cases[i].spec, nt, (long long)j,
                     ts_get(&c.gin[0], j), want[j]);
        opf_case_release(&c);
      }
  omp_set_num_threads(saved);
}

/* Without an input gradient (no backward follows: include/op.h) window max pooling skips the
 * argmax (pool.c: cf_chunks values only; transposed planes and channels-last keep it). The
 * values must be the bits of the argmax path and equal the reference on every kernel path
 * (direct strides 1, 2 and 3, staged, transposed, channels-last chunks and narrow C, merged
 * short rows), on inputs with
 * ties, windows whose maximum is a zero of either sign first (the first zero's sign stays),
 * and NaNs (skipped, as the reference's sequential max); both dtypes, 1 and 2 threads. */
static void test_max_values_only(void **state) {
  (void)state;
  static const struct { const char *op, *spec; } cases[] = {
      {"max_pool1d", "x=2x3x100 kernel=3 stride=1 pad=1"},
      {"max_pool1d", "x=2x3x101 kernel=2 stride=2"},
      {"max_pool1d", "x=2x2x97 kernel=4 stride=3 pad=2"},
      {"max_pool1d", "x=3x37x12 kernel=3 stride=1 pad=1"},
      {"max_pool1d", "x=2x40x19 kernel=3 stride=1 pad=1 layout=NWC"},
      {"max_pool2d", "x=2x3x12x40 kernel=2 stride=2"},
      {"max_pool2d", "x=1x2x9x37 kernel=3 stride=1 pad=1"},
      {"max_pool2d", "x=1x2x70x5 kernel=3 stride=1 pad=1"},
      {"max_pool2d", "x=1x9x10x35 kernel=3 stride=2 pad=1 layout=NHWC"},
      {"max_pool2d", "x=2x7x6x3 kernel=3 stride=1 pad=1 layout=NHWC"},
      {"max_pool3d", "x=1x2x5x6x33 kernel=3,2,3 stride=2,1,1 pad=1,1,1"},
      {"max_pool3d", "x=1x4x4x3x20 kernel=2 stride=2 layout=NDHWC"},
  };
  const int saved = omp_get_max_threads();
  char msg[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int d = OPF_F32; d <= OPF_F64; d++)
      for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        opf_case a, b;
        ts_case_ready(&a, ts_op(cases[i].op), (opf_dtype)d, cases[i].spec, 1, 37);
        ts_case_ready(&b, ts_op(cases[i].op), (opf_dtype)d, cases[i].spec, 0, 37);
        assert_null(b.gin[0].data);
        const int64_t X = opf_numel(&a.in[0]);
        for (int64_t j = 0; j < X; j++) {
          double v = (double)((j * 7 + j / 3) % 5) - 4; /* ties; maxima 0 */
          if (j % 11 == 0) v = (j / 11) % 2 ? -0.0 : 0.0;
          if (j % 23 == 5) v = NAN;
          ts_set(&a.in[0], j, v);
          ts_set(&b.in[0], j, v);
        }
        assert_int_equal(a.op->forward(&a), OPF_OK);
        assert_int_equal(b.op->forward(&b), OPF_OK);
        if (memcmp(a.out[0].data, b.out[0].data, (size_t)a.out[0].nbytes)) {
          for (int64_t j = 0; j < opf_numel(&a.out[0]); j++) {
            const double ya = ts_get(&a.out[0], j), yb = ts_get(&b.out[0], j);
            if (memcmp(&ya, &yb, sizeof ya))
              fail_msg("%s %s [%s] %d threads: values-only y[%lld] = %g, with the argmax %g",
                       cases[i].op, opf_dtype_name((opf_dtype)d), cases[i].spec, nt,
                       (long long)j, yb, ya);
          }
        }
        if (ts_compare_reference(&b, 0, msg, sizeof msg))
          fail_msg("%s %s [%s] values only, %d threads: %s", cases[i].op,
                   opf_dtype_name((opf_dtype)d), cases[i].spec, nt, msg);
        for (int64_t j = 0; j < opf_numel(&b.out[0]); j++) /* signed zeros as the reference */
          if (ts_get(&b.out[0], j) == 0) {
            opf_case r;
            ts_case_ready(&r, ts_op(cases[i].op), (opf_dtype)d, cases[i].spec, 0, 37);
            for (int64_t k = 0; k < X; k++) ts_set(&r.in[0], k, ts_get(&b.in[0], k));
            assert_int_equal(r.op->reference(&r), OPF_OK);
            for (int64_t k = j; k < opf_numel(&b.out[0]); k++)
              if (signbit(ts_get(&r.out[0], k)) != signbit(ts_get(&b.out[0], k)))
                fail_msg("%s %s [%s] values only, %d threads: y[%lld] = %g, reference %g",
                         cases[i].op, opf_dtype_name((opf_dtype)d), cases[i].spec, nt,
                         (long long)k, ts_get(&b.out[0], k), ts_get(&r.out[0], k));
            opf_case_release(&r);
            break;
          }
        opf_case_release(&a);
        opf_case_release(&b);
      }
  }
  omp_set_num_threads(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_window), cmocka_unit_test(test_golden_global),
      cmocka_unit_test(test_shapes),        cmocka_unit_test(test_errors),
      cmocka_unit_test(test_max_ties),      cmocka_unit_test(test_global_short_planes),
      cmocka_unit_test(test_global_max_values_only),
      cmocka_unit_test(test_global_long_ties),
      cmocka_unit_test(test_pool1d_merged_rows),
      cmocka_unit_test(test_max_gather_backward),
      cmocka_unit_test(test_max_values_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

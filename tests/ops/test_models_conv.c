/* test_models_conv.c: the convolution family (conv1d/2d/3d, grouped/dilated conv2d, the
 * transposed convolutions, im2col/col2im, the fused conv2d + bias/relu/batch-norm operators):
 * golden flops and bytes at one standard shape each (derived by hand below), derived shapes,
 * the infer error paths, and the blocked, threaded backward of every layout and rank against
 * directional derivatives of the reference (the operators are linear in each input, so the
 * central difference is exact up to rounding, whatever the step). */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"
#include "nn/conv_core.h"

/* Bytes follow the default model: fwd = inputs + outputs; bwd = gout (= outputs) + inputs +
 * the gradients of the differentiable inputs. float32 throughout. */
static void test_golden_conv(void **state) {
  (void)state;
  /* conv1d x=(32,256,1024), 256 filters of 3, pad 1: y (32,256,1024), 8388608 outputs, each a
   * dot of C*K = 768: 2*8388608*768 = 12884901888 (+8388608 bias adds) fwd; bwd twice the
   * GEMM work + db = 25778192384. Bytes: x, y 33554432 each, w 256*256*3*4 = 786432, b 1024:
   * fwd 67896320, bwd 33554432 + 2*(33554432 + 786432 + 1024) = 102238208. */
  ts_expect_models("conv1d", OPF_F32, "x=32x256x1024 filters=256 kernel=3 pad=1", 12893290496.0, 25778192384.0,
         67896320.0, 102238208.0);
  /* conv2d NHWC: the same work and traffic as NCHW (test_models_nn): 2*6422528*576 + 6422528
   * fwd, 2*7398752256 + 6422528 bwd; bytes 51527936 / 77365760. */
  ts_expect_models("conv2d", OPF_F32, "x=32x56x56x64 filters=64 kernel=3 pad=1 layout=NHWC", 7405174784.0,
         14803927040.0, 51527936.0, 77365760.0);
  /* dilated_conv2d (32,64,56,56) 3x3 dilation 2 pad 2: 56x56 outputs again: as conv2d. */
  ts_expect_models("dilated_conv2d", OPF_F32, "x=32x64x56x56 filters=64 kernel=3 pad=2 dilation=2", 7405174784.0,
         14803927040.0, 51527936.0, 77365760.0);
  /* grouped_conv2d (32,128,56,56), 128 filters 3x3 pad 1, groups 32: 12845056 outputs, each a
   * dot of C/groups*9 = 36: 2*12845056*36 = 924844032 + 12845056 = 937689088 fwd,
   * 1849688064 + 12845056 = 1862533120 bwd. x, y 51380224 bytes, w 128*4*9*4 = 18432, b 512:
   * fwd 102779392, bwd 51380224 + 2*51399168 = 154178560. */
  ts_expect_models("grouped_conv2d", OPF_F32, "x=32x128x56x56 filters=128 kernel=3 pad=1 groups=32", 937689088.0,
         1862533120.0, 102779392.0, 154178560.0);
  /* conv3d (8,64,16,56,56), 64 filters 3x3x3 pad 1: 25690112 outputs, dots of 64*27 = 1728:
   * 2*25690112*1728 = 88785027072 + 25690112 = 88810717184 fwd; 177570054144 + 25690112 =
   * 177595744256 bwd. x, y 102760448 bytes, w 64*64*27*4 = 442368, b 256: fwd 205963520,
   * bwd 102760448 + 2*103203072 = 309166592. */
  ts_expect_models("conv3d", OPF_F32, "x=8x64x16x56x56 filters=64 kernel=3 pad=1", 88810717184.0, 177595744256.0,
         205963520.0, 309166592.0);
}

static void test_golden_transpose(void **state) {
  (void)state;
  /* conv1d_transpose x=(32,256,512), 256 filters of 4, stride 2, pad 1: y (32,256,1024)
   * ((512-1)*2 - 2 + 3 + 1). The GEMM of the convolution it transposes: every input element
   * meets F*K = 1024 weights: 2*32*256*512*1024 = 8589934592, + 8388608 bias adds on y
   * = 8598323200 fwd; bwd 2*8589934592 + 8388608 (db) = 17188257792. Bytes: x 16777216,
   * w 256*256*4*4 = 1048576, b 1024, y 33554432: fwd 51381248, bwd 33554432 + 2*17826816
   * = 69208064. */
  ts_expect_models("conv1d_transpose", OPF_F32, "x=32x256x512 filters=256 kernel=4 stride=2 pad=1", 8598323200.0,
         17188257792.0, 51381248.0, 69208064.0);
  /* conv2d_transpose x=(32,64,28,28), 64 filters 4x4, stride 2, pad 1: y (32,64,56,56).
   * 2*32*64*784*(64*16) = 3288334336 + 6422528 = 3294756864 fwd; 6576668672 + 6422528 =
   * 6583091200 bwd. x 6422528 bytes, w 262144, b 256, y 25690112: fwd 32375040, bwd
   * 25690112 + 2*6684928 = 39059968. */
  ts_expect_models("conv2d_transpose", OPF_F32, "x=32x64x28x28 filters=64 kernel=4 stride=2 pad=1", 3294756864.0,
         6583091200.0, 32375040.0, 39059968.0);
  /* conv3d_transpose x=(8,64,8,28,28), 64 filters 4x4x4, stride 2, pad 1: y (8,64,16,56,56).
   * 2*8*64*6272*(64*64) = 26306674688 + 25690112 = 26332364800 fwd; 52613349376 + 25690112 =
   * 52639039488 bwd. x 12845056 bytes, w 64*64*64*4 = 1048576, b 256, y 102760448: fwd
   * 116654336, bwd 102760448 + 2*13893888 = 130548224. */
  ts_expect_models("conv3d_transpose", OPF_F32, "x=8x64x8x28x28 filters=64 kernel=4 stride=2 pad=1", 26332364800.0,
         52639039488.0, 116654336.0, 130548224.0);
}

static void test_golden_cols(void **state) {
  (void)state;
  /* im2col x=(32,64,56,56) 3x3 pad 1: y (32,576,3136), 57802752 elements; data movement fwd
   * (0 flops), one add per col element bwd (the fold). Bytes: x 25690112, y 231211008: fwd
   * 256901120; bwd y + 2x = 282591232. */
  ts_expect_models("im2col", OPF_F32, "x=32x64x56x56 kernel=3,3 pad=1", 0.0, 57802752.0, 256901120.0, 282591232.0);
  /* col2im, its adjoint: the adds fwd, none bwd; bwd bytes y + 2x = 25690112 + 462422016. */
  ts_expect_models("col2im", OPF_F32, "x=32x576x3136 output_size=56,56 kernel=3,3 pad=1", 57802752.0, 0.0,
         256901120.0, 488112128.0);
}

static void test_golden_fused(void **state) {
  (void)state;
  /* conv2d_bias_relu (32,64,56,56), 64 filters 3x3 pad 1: conv2d's 7398752256 GEMM flops,
   * 6422528 bias adds and 6422528 relu compares fwd = 7411597312; bwd 14797504512 + 6422528
   * (mask) + 6422528 (db) = 14810349568. Bytes as conv2d: 51527936 / 77365760. */
  ts_expect_models("conv2d_bias_relu", OPF_F32, "x=32x64x56x56 filters=64 kernel=3 pad=1", 7411597312.0,
         14810349568.0, 51527936.0, 77365760.0);
  /* conv2d_batch_norm: 7398752256 + 2*6422528 (scale, shift) fwd = 7411597312 (+6422528 with
   * a conv bias); bwd 14797504512 + 6422528 (channel sums) + 3*64*576 (dgamma dots, dw
   * scaling) = 14804037632. Bytes: x, y 25690112, w 147456, four (64) vectors 1024 (+256 for
   * b): fwd 51528704, bwd y + inputs + (dx, dw, dgamma, dbeta) = 25690112 + 25838592 +
   * 25838080 = 77366784 (+512 with b). The relu adds 6422528 both ways. */
#if OPF_MAX_IN > 6
  const double bias = 6422528.0, bb = 256.0;
#else
  const double bias = 0, bb = 0;
#endif
  ts_expect_models("conv2d_batch_norm", OPF_F32, "x=32x64x56x56 filters=64 kernel=3 pad=1", 7411597312.0 + bias,
         14804037632.0, 51528704.0 + bb, 77366784.0 + 2 * bb);
  ts_expect_models("conv2d_batch_norm_relu", OPF_F32, "x=32x64x56x56 filters=64 kernel=3 pad=1",
         7418019840.0 + bias, 14810460160.0, 51528704.0 + bb, 77366784.0 + 2 * bb);
}

static void test_derived_shapes(void **state) {
  (void)state;
  /* conv1d: (10 + 2 - 2*(3-1) - 1)/2 + 1 = 4 */
  ts_expect_shape("conv1d", "x=2x6x10 filters=4 kernel=3 stride=2 pad=1 dilation=2 groups=2", 1, 1, "4x3x3");
  ts_expect_shape("conv1d", "x=2x6x10 filters=4 kernel=3 stride=2 pad=1 dilation=2 groups=2", 0, 0, "2x4x4");
  ts_expect_shape("conv1d", "x=2x10x6 filters=4 kernel=3 layout=NWC", 0, 0, "2x8x4");
  /* channels-last keeps the (F, C/groups, k...) weight */
  ts_expect_shape("conv2d", "x=2x9x8x6 filters=4 kernel=3 groups=2 layout=NHWC", 1, 1, "4x3x3x3");
  ts_expect_shape("conv2d", "x=2x9x8x6 filters=4 kernel=3 groups=2 layout=NHWC", 0, 0, "2x7x6x4");
  ts_expect_shape("conv3d", "x=1x2x5x6x7 filters=3 kd=1 kh=2 kw=3", 1, 1, "3x2x1x2x3");
  ts_expect_shape("conv3d", "x=1x2x5x6x7 filters=3 kd=1 kh=2 kw=3", 0, 0, "1x3x5x5x5");
  ts_expect_shape("conv3d", "x=1x5x6x7x2 filters=3 kernel=3 pad=1 layout=NDHWC", 0, 0, "1x5x6x7x3");
  ts_expect_shape("grouped_conv2d", "x=2x64x8x8", 1, 1, "128x2x3x3");
  ts_expect_shape("dilated_conv2d", "x=2x16x20x20", 0, 0, "2x64x20x20");
  /* transposes: (in-1)*s - 2p + d(k-1) + output_padding + 1; w (C, F/groups, k...) */
  ts_expect_shape("conv2d_transpose", "x=32x64x28x28 filters=64 kernel=4 stride=2 pad=1", 0, 0, "32x64x56x56");
  ts_expect_shape("conv2d_transpose", "x=1x4x3x5 filters=6 kernel=3 groups=2", 1, 1, "4x3x3x3");
  ts_expect_shape("conv1d_transpose", "x=1x4x5 filters=2 kernel=3 stride=2 pad=1 output_padding=1 dilation=2", 0, 0, "1x2x12");
  ts_expect_shape("conv3d_transpose", "x=1x2x2x3x2 filters=2 kd=2 kh=3 kw=2 stride=2 pad=1 output_padding=1 dilation=2", 0, 0, "1x2x4x8x4");
  ts_expect_shape("conv2d_transpose", "x=1x3x4x4 filters=6 kernel=4 stride=2 pad=1 layout=NHWC", 0, 0, "1x6x8x6");
  /* im2col / col2im */
  ts_expect_shape("im2col", "x=32x64x56x56 kernel=3,3 pad=1", 0, 0, "32x576x3136");
  ts_expect_shape("im2col", "x=1x2x6x5 kernel=2,3 stride=2,1 pad=1,0 dilate=1,2", 0, 0, "1x12x4");
  ts_expect_shape("col2im", "x=1x24x80 output_size=3,4,4 kernel=2,2,3 pad=1", 0, 0, "1x2x3x4x4");
  /* the batch-norm vectors from the filters */
  ts_expect_shape("conv2d_batch_norm", "x=2x3x8x8 filters=5", 1, 2, "5");
  ts_expect_shape("conv2d_batch_norm_relu", "x=2x3x8x8 filters=5", 1, 5, "5");
}

static void test_conv_errors(void **state) {
  (void)state;
  ts_expect_einval("conv1d", "x=2x3x5x5", "conv1d input 'x' must be 3-D NCW, got 2x3x5x5 (4-D)");
  ts_expect_einval("conv1d", "x=2x5x5x3 layout=NWC", "must be 3-D NWC");
  ts_expect_einval("conv1d", "x=1x4x10 kernel=11", "window 11 (dilation 1) is larger than the padded input 10");
  ts_expect_einval("conv1d", "x=1x4x10 kernel=4 dilation=4 pad=1", "window 4 (dilation 4) is larger than the padded input 12");
  ts_expect_einval("conv1d", "x=1x10x4 layout=NWC groups=3", "input channels 4 of x 1x10x4 are not divisible by groups=3");
  ts_expect_einval("conv1d", "x=1x10x4 layout=NWC w=8x3x3", "needs C/groups = 4 input channels");
  ts_expect_einval("conv1d", "x=1x4x10 w=8x4x3x3", "weight 'w' must be 3-D (filters, C/groups, kw)");
  ts_expect_einval("conv1d", "x=1x4x0", "empty dimension");
  ts_expect_einval("conv1d", "x=1x4x10 layout=NCHW", "layout");
  ts_expect_einval("conv2d", "x=1x8x8x3 layout=NHWC groups=2", "input channels 3 of x 1x8x8x3 are not divisible by groups=2");
  ts_expect_einval("conv2d", "x=1x8x8x4 layout=NHWC filters=6 groups=4", "filters 6 are not divisible by groups=4");
  ts_expect_einval("conv2d", "x=1x4x8x8 w=8x4x3x0", "with positive sizes");
  ts_expect_einval("conv3d", "x=1x2x3x4", "must be 5-D NCDHW, got 1x2x3x4");
  ts_expect_einval("conv3d", "x=1x2x2x8x8 kernel=3", "window 3x3x3 (dilation 1x1x1) is larger than the padded input 2x8x8");
  ts_expect_einval("conv3d", "x=1x4x4x4x4 layout=NDHWC filters=3 groups=2", "filters 3 are not divisible by groups=2");
  ts_expect_einval("conv3d", "x=1x2x4x4x4 b=3", "bias 'b' 3 must have shape (64)");
  ts_expect_einval("grouped_conv2d", "x=1x16x8x8", "input channels 16 of x 1x16x8x8 are not divisible by groups=32");
  ts_expect_einval("dilated_conv2d", "x=1x3x3x3 pad=0", "window 3x3 (dilation 2x2) is larger than the padded input 3x3");
}

static void test_transpose_errors(void **state) {
  (void)state;
  ts_expect_einval("conv1d_transpose", "x=1x4x5 w=3x4x3", "needs 4 rows, one per input channel of x 1x4x5, not 3");
  ts_expect_einval("conv1d_transpose", "x=1x4x5 stride=2 output_padding=2", "output_padding 2 must be smaller than the stride 2 or the dilation 1");
  ts_expect_einval("conv1d_transpose", "x=1x4x2 kernel=1 pad=1", "output size is empty for input 2");
  ts_expect_einval("conv1d_transpose", "x=1x4x5 filters=3 groups=2", "filters 3 are not divisible by groups=2");
  ts_expect_einval("conv1d_transpose", "x=1x3x5 filters=4 groups=2", "input channels 3 of x 1x3x5 are not divisible by groups=2");
  ts_expect_einval("conv1d_transpose", "x=1x4x5 filters=6 b=5", "bias 'b' 5 must have shape (6)");
  ts_expect_einval("conv2d_transpose", "x=1x4x5x5 w=4x2x3", "weight 'w' must be 4-D (C, filters/groups, kh, kw)");
  ts_expect_einval("conv2d_transpose", "x=4x5x5", "must be 4-D NCHW");
  ts_expect_einval("conv3d_transpose", "x=1x2x3x3x3x2 layout=NDHWC", "must be 5-D NDHWC");
}

static void test_cols_errors(void **state) {
  (void)state;
  ts_expect_einval("im2col", "x=1x3x8x8 kernel=3", "x 1x3x8x8 must be (N, C) plus 1 spatial dims for a 1-D kernel");
  ts_expect_einval("im2col", "x=1x3x4x4 kernel=5,5", "window 5 (dilate 1) is larger than the padded input 4 in dim 0");
  ts_expect_einval("im2col", "x=1x3x8x8 kernel=3,3 stride=1,1,1", "stride has 3 values, kernel has 2 dims");
  ts_expect_einval("im2col", "x=1x1x2x2x2x2 kernel=1,1,1,1", "kernel must have 1 to 3 values, got 4");
  ts_expect_einval("im2col", "x=1x3x8x8 kernel=none", "kernel must have 1 to 3 values, got 0");
  ts_expect_einval("col2im", "x=1x27x9 output_size=5,5,5 kernel=3,3", "output_size has 3 values, kernel has 2");
  ts_expect_einval("col2im", "x=1x28x9 output_size=5,5 kernel=3,3", "dim 1 (28) is not a multiple of prod(kernel) = 9");
  ts_expect_einval("col2im", "x=1x27x10 output_size=5,5 kernel=3,3", "has L = 10 columns, but output_size and the window give 9 positions");
  ts_expect_einval("col2im", "x=27x9 output_size=5,5 kernel=3,3", "must be (N, C*prod(kernel), L)");
  ts_expect_einval("col2im", "x=1x27x9 output_size=2,2 kernel=3,3", "window 3 (dilate 1) is larger than the padded input 2 in dim 0");
}

static void test_fused_errors(void **state) {
  (void)state;
  ts_expect_einval("conv2d_bias_relu", "x=1x4x8x8 w=8x3x3x3", "needs C/groups = 4 input channels");
  ts_expect_einval("conv2d_bias_relu", "x=1x4x8x8 w=8x4x3x3 b=4", "bias 'b' 4 must have shape (8)");
  ts_expect_einval("conv2d_batch_norm", "x=1x4x8x8 filters=8 gamma=4", "'gamma' 4 must have shape (8)");
  ts_expect_einval("conv2d_batch_norm_relu", "x=1x4x8x8 filters=8 running_var=8x1", "'running_var' 8x1 must have shape (8)");
  ts_expect_einval("conv2d_batch_norm", "x=1x4x2x2 kernel=3", "window 3x3 (dilation 1x1) is larger than the padded input 2x2");
}

/* ---- backward of multi-block, threaded cases against the reference ----
 * L(in) = <reference(in), gout>. Each operator here is linear in every input (the fused relu
 * ones only piecewise: they are left to the generic driver), so for a direction v of input
 * i, (L(in + v) - L(in - v)) / 2 = <grad_i, v> exactly up to rounding. */
static double loss(opf_case *r, const opf_case *c) {
  memset(r->out[0].data, 0, r->out[0].nbytes);
  if (r->op->reference(r)) fail_msg("%s: reference failed", r->op->name);
  double L = 0;
  for (int64_t k = 0; k < opf_numel(&r->out[0]); k++) L += ts_get(&r->out[0], k) * ts_get(&c->gout[0], k);
  return L;
}

static void check_directional(const char *name, const char *spec, int threads) {
  const opf_op *op = ts_op(name);
  opf_case c, r;
  ts_case_ready(&c, op, OPF_F64, spec, 1, 9);
  assert_int_equal(op->forward(&c), OPF_OK);
  assert_int_equal(op->backward(&c), OPF_OK);
  r = c; /* the reference reads c's inputs and writes its own output */
  r.ws = NULL, r.ws_bytes = 0;
  opf_tensor_set_shape(&r.out[0], OPF_F64, c.out[0].ndim, c.out[0].shape);
  r.out[0].data = NULL, r.out[0].owned = 0;
  opf_err e;
  if (opf_tensor_alloc(&r.out[0], &e)) fail_msg("%s", e.msg);
  opf_rng rng;
  opf_rng_init(&rng, 3, 0);
  for (int i = 0; i < op->n_in; i++) {
    if (!c.gin[i].data) continue;
    int64_t n = opf_numel(&c.in[i]);
    double *x0 = opf_alloc(sizeof(double) * (size_t)n), *v = opf_alloc(sizeof(double) * (size_t)n);
    double *x = c.in[i].data, dot = 0, scale = 0;
    for (int64_t k = 0; k < n; k++) {
      x0[k] = x[k], v[k] = opf_rng_uniform(&rng) - 0.5;
      dot += ((double *)c.gin[i].data)[k] * v[k];
      scale += fabs(((double *)c.gin[i].data)[k] * v[k]);
    }
    for (int64_t k = 0; k < n; k++) x[k] = x0[k] + v[k];
    double lp = loss(&r, &c);
    for (int64_t k = 0; k < n; k++) x[k] = x0[k] - v[k];
    double lm = loss(&r, &c);
    memcpy(x, x0, sizeof(double) * (size_t)n);
    double fd = (lp - lm) / 2;
    if (!(fabs(fd - dot) <= 1e-9 * (scale + fabs(lp) + fabs(lm) + 1)))
      fail_msg("%s [%s] %d threads: <d%s, v> = %.12g, reference %.12g", name, spec, threads,
               op->in[i].name, dot, fd);
    opf_free(x0);
    opf_free(v);
  }
  opf_tensor_free(&r.out[0]);
  opf_case_release(&c);
}

/* Several blocks per image, images split between threads (N = 1, odd N), both layouts, each
 * rank, strides, dilation, groups, 1x1, the transposes with output_padding. */
static void test_backward_blocked(void **state) {
  (void)state;
  static const char *cases[][2] = {
      {"conv1d", "x=1x8x20001 filters=6 kernel=5 stride=2 pad=2"},
      {"conv1d", "x=3x9999x6 filters=8 kernel=3 pad=2 dilation=2 groups=2 layout=NWC"},
      {"conv2d", "x=1x120x100x6 filters=8 kernel=3 pad=1 layout=NHWC"},
      {"conv2d", "x=3x100x90x6 filters=6 kernel=3 stride=2 pad=2 dilation=2 groups=3 layout=NHWC"},
      {"conv2d", "x=3x30x31x8 filters=12 kernel=1 groups=2 layout=NHWC"},
      {"conv3d", "x=1x4x12x30x28 filters=5 kernel=3 pad=1"},
      {"conv3d", "x=3x9x20x17x4 filters=4 kernel=3 stride=2 pad=1 groups=2 layout=NDHWC"},
      {"conv1d_transpose", "x=1x6x1500 filters=4 kernel=4 stride=2 pad=1"},
      {"conv2d_transpose", "x=3x5x40x33 filters=6 kernel=3 stride=2 pad=1 output_padding=1 groups=1"},
      {"conv2d_transpose", "x=1x45x41x6 filters=4 kernel=4 stride=2 pad=1 groups=2 layout=NHWC"},
      {"conv3d_transpose", "x=3x4x6x15x13 filters=4 kernel=3 stride=2 pad=1 groups=2"},
      {"grouped_conv2d", "x=3x12x40x37 filters=24 kernel=3 stride=2 pad=1 groups=12"},
      {"grouped_conv2d", "x=1x32x60x50 filters=32 kernel=3 pad=1 groups=8"},
      {"conv1d", "x=1x6x9001 filters=6 kernel=5 pad=4 dilation=2 groups=6"},
      {"conv2d_transpose", "x=2x6x30x29 filters=6 kernel=4 stride=2 pad=1 groups=6"},
      /* strided data gradients by phases (from 16 input channels): odd sizes, pad, N = 1, 3 */
      {"conv2d", "x=3x16x23x21 filters=12 kernel=3 stride=2 pad=1"},
      {"conv2d", "x=1x17x30x25 filters=8 kernel=5 stride=3 pad=2 b=none"},
      {"conv1d", "x=1x16x3001 filters=8 kernel=4 stride=2 pad=1"},
      {"conv3d", "x=2x16x7x9x8 filters=4 kernel=3 stride=2 pad=1"},
      {"im2col", "x=3x5x70x61 kernel=3,3 stride=2 pad=1"},
      {"col2im", "x=1x45x4556 output_size=67,68 kernel=3,3 pad=1"},
  };
  int saved = omp_get_max_threads();
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    for (int threads = 1; threads <= 2; threads++) {
      omp_set_num_threads(threads);
      check_directional(cases[k][0], cases[k][1], threads);
    }
  omp_set_num_threads(saved);
}

/* The convolutions' own float32 GEMM (conv_gemm.c) against a double-precision product on
 * sizes that cross every blocking boundary (register tile 14 x 32, KC 256, MC 224, NC 1024),
 * each transpose, beta 0 (C never read: prefilled with NaN), 1 and 0.5, leading dimensions
 * wider than the matrices (op(A) read in place, or packed when its rows are 2 KiB apart); an
 * operand prepacked whole and by strip ranges; a bias per row or per column in the kernel's
 * stores. On a CPU without AVX-512 this checks the OpenBLAS fallback. */
static void test_gemm_own(void **state) {
  (void)state;
  static const int64_t sizes[][3] = {{15, 33, 257}, {14, 32, 256}, {225, 1025, 300}, {64, 64, 64},
                                     {229, 47, 513}, {5, 1100, 30},
                                     {30, 64, 509}}; /* lda 512: op(A) packed, not in place */
  void *ws = opf_alloc(nn_gemm_ws_bytes());
  int own = 0;
  opf_rng rng;
  opf_rng_init(&rng, 17, 0);
  for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
    for (int tr = 0; tr < 4; tr++)
      for (int bi = 0; bi < 3; bi++) {
        int ta = tr & 1, tb = tr >> 1;
        int64_t M = sizes[z][0], N = sizes[z][1], K = sizes[z][2];
        int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
        double beta = bi == 0 ? 0 : bi == 1 ? 1 : 0.5;
        float *A = opf_alloc(sizeof(float) * (size_t)((ta ? K : M) * lda));
        float *B = opf_alloc(sizeof(float) * (size_t)((tb ? N : K) * ldb));
        float *C = opf_alloc(sizeof(float) * (size_t)(M * ldc));
        double *R = opf_alloc(sizeof(double) * (size_t)(M * N));
        for (int64_t i = 0; i < (ta ? K : M) * lda; i++) A[i] = (float)(opf_rng_uniform(&rng) - 0.5);
        for (int64_t i = 0; i < (tb ? N : K) * ldb; i++) B[i] = (float)(opf_rng_uniform(&rng) - 0.5);
        for (int64_t i = 0; i < M * ldc; i++) C[i] = beta == 0 ? NAN : (float)(opf_rng_uniform(&rng) - 0.5);
        for (int64_t i = 0; i < M; i++)
          for (int64_t j = 0; j < N; j++) {
            double acc = beta == 0 ? 0 : beta * C[i * ldc + j];
            for (int64_t k = 0; k < K; k++)
              acc += (double)(ta ? A[k * lda + i] : A[i * lda + k]) *
                     (tb ? B[j * ldb + k] : B[k * ldb + j]);
            R[i * N + j] = acc;
          }
        own |= nn_gemm_own(OPF_F32, M, N, K);
        float *C0 = opf_alloc(sizeof(float) * (size_t)(M * ldc)), *pk = NULL;
        float *Cin = opf_alloc(sizeof(float) * (size_t)(M * ldc));
        float *C1 = opf_alloc(sizeof(float) * (size_t)(M * ldc));
        memcpy(C0, C, sizeof(float) * (size_t)(M * ldc));
        memcpy(Cin, C, sizeof(float) * (size_t)(M * ldc));
        nn_gemm(OPF_F32, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, ws);
        if (nn_gemm_own(OPF_F32, M, N, K)) { /* A or B packed once: the same product */
          int side = (int)(z + (size_t)tr) % 2;
          int64_t MN = side ? N : M, ns = nn_gemm_pack_strips(side, MN);
          size_t pkb = nn_gemm_pack_bytes(MN, K);
          pk = opf_alloc(pkb);
          float *pk2 = opf_alloc(pkb);
          memset(pk, 0, pkb), memset(pk2, 0, pkb);
          if (side) nn_gemm_pack(1, tb, N, K, B, ldb, pk);
          else nn_gemm_pack(0, ta, M, K, A, lda, pk);
          /* the same packing in three uneven strip ranges (threads sharing it) */
          for (int part = 0; part < 3; part++)
            nn_gemm_pack_part(side, side ? tb : ta, MN, K, side ? (const void *)B : A,
                              side ? ldb : lda, pk2, part * ns / 3 + (part > 0),
                              part == 2 ? ns : (part + 1) * ns / 3 + 1);
          if (memcmp(pk, pk2, pkb)) fail_msg("gemm %lldx%lldx%lld: packing by strip ranges differs",
                                             (long long)M, (long long)N, (long long)K);
          opf_free(pk2);
          nn_gemm_pre(ta, tb, M, N, K, A, lda, B, ldb, beta, C0, ldc, ws, side ? NULL : pk,
                      side ? pk : NULL);
          for (int64_t i = 0; i < M * ldc; i++)
            if (memcmp(&C0[i], &C[i], sizeof(float)))
              fail_msg("gemm %lldx%lldx%lld ta=%d tb=%d: prepacked %s gives %.8g at %lld, not %.8g",
                       (long long)M, (long long)N, (long long)K, ta, tb, side ? "B" : "A", C0[i],
                       (long long)i, C[i]);
          /* a bias in the kernel's stores, per column then per row, added once whatever
           * the number of K blocks */
          for (int brow = 0; brow < 2; brow++) {
            float *bias = opf_alloc(sizeof(float) * (size_t)(brow ? M : N));
            for (int64_t i = 0; i < (brow ? M : N); i++) bias[i] = (float)(i % 7) - 3.25f;
            memcpy(C1, Cin, sizeof(float) * (size_t)(M * ldc));
            nn_gemm_pre_bias(ta, tb, M, N, K, A, lda, B, ldb, beta, C1, ldc, ws,
                             side ? NULL : pk, side ? pk : NULL, bias, brow);
            for (int64_t i = 0; i < M; i++)
              for (int64_t j = 0; j < ldc; j++) {
                double want = j < N ? R[i * N + j] + bias[brow ? i : j] : Cin[i * ldc + j];
                if (j >= N ? memcmp(&C1[i * ldc + j], &Cin[i * ldc + j], sizeof(float))
                           : !(fabs(C1[i * ldc + j] - want) <= 1e-5 * sqrt((double)K) + 1e-5))
                  fail_msg("gemm %lldx%lldx%lld ta=%d tb=%d beta=%g bias %s: C[%lld,%lld] = "
                           "%.8g, expected %.8g",
                           (long long)M, (long long)N, (long long)K, ta, tb, beta,
                           brow ? "per row" : "per column", (long long)i, (long long)j,
                           C1[i * ldc + j], want);
              }
            opf_free(bias);
          }
          opf_free(pk);
        }
        opf_free(C0), opf_free(C1), opf_free(Cin);
        for (int64_t i = 0; i < M; i++)
          for (int64_t j = 0; j < N; j++)
            if (!(fabs(C[i * ldc + j] - R[i * N + j]) <= 1e-5 * sqrt((double)K) + 1e-6))
              fail_msg("gemm %lldx%lldx%lld ta=%d tb=%d beta=%g: C[%lld,%lld] = %.8g, expected %.8g",
                       (long long)M, (long long)N, (long long)K, ta, tb, beta, (long long)i,
                       (long long)j, C[i * ldc + j], R[i * N + j]);
        for (int64_t i = 0; i < M; i++) /* the columns past N are the caller's */
          for (int64_t j = N; j < ldc; j++)
            if (beta == 0 ? !isnan(C[i * ldc + j]) : isnan(C[i * ldc + j]))
              fail_msg("gemm %lldx%lldx%lld wrote C[%lld,%lld] past N", (long long)M, (long long)N,
                       (long long)K, (long long)i, (long long)j);
        opf_free(A), opf_free(B), opf_free(C), opf_free(R);
      }
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) assert_true(own); /* the own kernel ran somewhere */
#else
  assert_false(own); /* no own kernel off x86: every product went to OpenBLAS */
#endif
  opf_free(ws);
}

/* The float32 kernels the float64 checks cannot reach (conv_gemm.c's kernel with the weight
 * packed once per call, inside the im2col core, Winograd and the phase decomposition):
 * forward and backward in float32 against float64 on the same generated inputs, 1 and 2
 * threads, shapes where those paths run (channels above the small products' limits, stride
 * 2 with odd sizes, padding, both layouts, N = 1 and odd N). */
/* float32 by algo (NN_ALGO_AUTO: the operator's default) against float64; f32_expect (when
 * not NULL) must accept the case's geometry first, so a test fails rather than passes on
 * another algorithm when the one it means stops taking its shapes */
static int f32_algo;
static int (*f32_expect)(const nn_conv_geom *g, opf_dtype dt);
static int run_f32(const opf_op *op, opf_case *c) {
  if (f32_expect) {
    nn_conv_geom g;
    nn_conv_op_geom(c, &g);
    if (!f32_expect(&g, OPF_F32)) fail_msg("%s: the tested algorithm does not take the case", op->name);
  }
  if (f32_algo == NN_ALGO_AUTO) return op->forward(c) || op->backward(c);
  return nn_conv_op_run_fwd(c, f32_algo) || nn_conv_op_run_bwd(c, f32_algo);
}
static void check_f32(const char *name, const char *spec, int algo) {
  f32_algo = algo;
  ts_check_f32_by(name, spec, 1e-3, run_f32);
}

static void test_float32_paths(void **state) {
  (void)state;
  static const char *cases[][2] = {
      {"conv2d", "x=3x40x15x13 filters=70 kernel=3 stride=2 pad=1"},
      {"conv2d", "x=1x15x13x40 filters=40 kernel=3 stride=2 pad=1 layout=NHWC"},
      {"conv2d", "x=3x70x9x7 filters=48 kernel=1"},
      {"conv2d", "x=2x9x7x40 filters=48 kernel=1 layout=NHWC b=none"},
      {"conv2d", "x=2x33x17x15 filters=35 kernel=3 pad=1"},
      {"conv2d", "x=1x17x15x33 filters=35 kernel=3 pad=1 layout=NHWC"},
      {"conv2d_transpose", "x=3x40x7x9 filters=36 kernel=4 stride=2 pad=1"},
      {"conv2d_transpose", "x=1x7x9x40 filters=36 kernel=4 stride=2 pad=1 layout=NHWC"},
      {"conv2d", "x=2x20x22x32 filters=40 kernel=3 pad=1 layout=NHWC"},
      /* 1x1 through nn_gemm's kernel with the weight packed by the threads together and the
       * bias in its stores: M, N and K remainders of the 14 x 32 tile and of KC 256 (63
       * positions, 70 filters, 300 channels), both layouts, bias on and off, with relu */
      {"conv2d", "x=2x9x7x300 filters=70 kernel=1 layout=NHWC"},
      {"conv2d", "x=2x9x7x300 filters=70 kernel=1 layout=NHWC b=none"},
      {"conv2d", "x=3x300x9x7 filters=70 kernel=1"},
      {"conv2d", "x=1x300x9x7 filters=70 kernel=1 b=none"},
      {"conv2d_bias_relu", "x=1x9x15x40 filters=96 kernel=1 layout=NHWC"},
      /* the fused operators' Winograd path: epilogue, relu mask, scaled weight, gy sums */
      {"conv2d_bias_relu", "x=3x17x13x11 filters=19 kernel=3 pad=1"},
      {"conv2d_bias_relu", "x=1x13x11x17 filters=20 kernel=3 pad=1 layout=NHWC"},
      {"conv2d_bias_relu", "x=2x9x21x24 filters=16 kernel=3 layout=NHWC b=none"},
      {"conv2d_batch_norm", "x=3x17x13x11 filters=19 kernel=3 pad=1"},
      {"conv2d_batch_norm_relu", "x=1x24x9x21 filters=16 kernel=3 pad=2"},
      {"conv1d", "x=2x48x301 filters=40 kernel=3 stride=2 pad=1"},
      /* either side of the small products' limit (Fg x Kc <= 64 x 160): 64 x 192 on the
       * packed GEMM, 64 x 144 on the small products */
      {"conv1d", "x=2x64x301 filters=64 kernel=3 pad=1"},
      {"conv1d", "x=1x48x301 filters=64 kernel=3 pad=1 b=none"},
      {"conv3d", "x=1x20x5x9x7 filters=40 kernel=3 stride=2 pad=1"},
      /* 3-D Winograd (conv_wino3d.c; forced below where the default would not take it):
       * partial tiles, pads 0-2, a 2-deep window, channels last, odd N, depth chunks (64
       * channels on 28x29 planes: several chunks per image, the last one shorter), weight
       * transforms in several chunks of output channels, the transposed convolution's passes */
      {"conv3d", "x=3x17x6x9x11 filters=19 kernel=3 pad=1"},
      {"conv3d", "x=1x6x9x11x18 filters=17 kernel=3 pad=1 layout=NDHWC"},
      {"conv3d", "x=2x16x5x10x7 filters=16 kernel=3 kd=2 pad=0"},
      {"conv3d", "x=1x16x4x7x6 filters=18 kernel=3 pad=2 b=none"},
      {"conv3d", "x=1x64x10x28x29 filters=32 kernel=3 pad=1"},
      {"conv3d_transpose", "x=2x20x5x9x7 filters=18 kernel=3 pad=1"},
      {"conv3d_transpose", "x=1x5x6x9x20 filters=16 kernel=3 pad=1 layout=NDHWC"},
      /* thin images (fewer than 32 positions each): one product over the whole batch, the
       * forward with its bias, the transposed convolutions' dx, dw and db */
      {"conv2d", "x=5x33x9x7 filters=30 kernel=3 stride=2 pad=1"},
      {"conv2d_transpose", "x=3x40x3x5 filters=36 kernel=4 stride=2 pad=1"},
      {"conv1d_transpose", "x=6x40x7 filters=64 kernel=3 stride=2 pad=1 b=none"},
  };
  int saved = omp_get_max_threads();
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    for (int threads = 1; threads <= 2; threads++) {
      omp_set_num_threads(threads);
      check_f32(cases[k][0], cases[k][1], NN_ALGO_AUTO);
      if (!strncmp(cases[k][0], "conv3d", 6)) check_f32(cases[k][0], cases[k][1], NN_ALGO_FAST);
    }
  /* groups by the core: each group's bias, the packing's strip ranges across groups (9 and
   * 21 strips over 2 threads) */
  static const char *grouped[] = {"x=2x7x9x192 filters=288 kernel=1 groups=3 layout=NHWC",
                                  "x=1x192x7x9 filters=288 kernel=1 groups=3"};
  for (size_t k = 0; k < sizeof grouped / sizeof *grouped; k++)
    for (int threads = 1; threads <= 2; threads++) {
      omp_set_num_threads(threads);
      check_f32("conv2d", grouped[k], NN_ALGO_CORE);
    }
  omp_set_num_threads(saved);
}

/* The direct kernel of conv_group.c, float32 against float64 (which runs the im2col core):
 * channels per group 1, 2, 4, 8, 16 (permuted and broadcast vectors), filters per group above
 * the channels, the wide blocks (64 filters and more: dilated one-group convolutions, groups
 * of 64), rows narrower than the register blocks, stride 2 (strided data gradient by
 * phases, channels first, else by the core), pads beyond the window, 5x5 windows, dilation
 * with groups, both layouts, N = 1 and odd N, 1 and 2 threads; the 8-pixel blocks
 * (NN_ALGO_GROUP8) on the same cases. */
static void test_float32_group_dilation(void **state) {
  (void)state;
  static const char *cases[][2] = {
      {"grouped_conv2d", "x=3x13x11x32 filters=32 kernel=3 pad=1 groups=8 layout=NHWC"},
      {"grouped_conv2d", "x=2x64x9x7 filters=64 kernel=3 pad=1 groups=4"},
      {"grouped_conv2d", "x=1x32x10x9 filters=32 kernel=3 pad=1 groups=32"},
      {"grouped_conv2d", "x=2x32x15x13 filters=32 kernel=3 stride=2 pad=1 groups=4"},
      {"grouped_conv2d", "x=2x9x11x16 filters=32 kernel=3 pad=1 groups=8 layout=NHWC"},
      {"grouped_conv2d", "x=2x21x19x64 filters=64 kernel=3 pad=2 dilation=2 groups=16 layout=NHWC"},
      {"grouped_conv2d", "x=1x16x7x8 filters=64 kernel=3 pad=1 groups=2 b=none"},
      {"grouped_conv2d", "x=1x11x12x32 filters=32 kernel=5 groups=8 layout=NHWC"},
      {"grouped_conv2d", "x=3x32x5x6 filters=32 kernel=3 pad=1 groups=8"},
      {"grouped_conv2d", "x=2x48x18x37 filters=48 kernel=3 pad=1 groups=12"},
      {"grouped_conv2d", "x=1x32x6x7 filters=32 kernel=3 pad=3 groups=8"},
      {"conv2d", "x=3x64x17x15 filters=64 kernel=3 pad=2 dilation=2 groups=4"},
      {"dilated_conv2d", "x=3x16x21x19 filters=24 kernel=3 pad=2 dilation=2"},
      {"dilated_conv2d", "x=2x23x18x17 filters=16 kernel=3 pad=1 dilation=3 layout=NHWC"},
      {"dilated_conv2d", "x=1x20x30x29 filters=16 kernel=3 pad=5 dilation=4 b=none"},
      {"dilated_conv2d", "x=2x13x14x16 filters=20 kernel=3 dilation=2 layout=NHWC"},
      {"dilated_conv2d", "x=1x17x16x15 filters=16 kernel=3 pad=8 dilation=8"},
      {"dilated_conv2d", "x=2x64x13x15 filters=64 kernel=3 pad=2 dilation=2"},
      {"dilated_conv2d", "x=1x19x17x64 filters=128 kernel=3 pad=3 dilation=3 layout=NHWC"},
      {"dilated_conv2d", "x=2x12x11x8 filters=64 kernel=3 pad=1 dilation=2 layout=NHWC"},
      {"dilated_conv2d", "x=1x64x9x5 filters=64 kernel=3 pad=2 dilation=2"},
      {"grouped_conv2d", "x=1x16x9x10 filters=128 kernel=3 pad=1 groups=2"},
      /* the register blocks' widths: 14 (broadcast) or 12 (permuted) pixels, then 8, 4, 2, 1
       * (29 = 14+14+1, 31 = 12+12+4+2+1...): 16, 8 (permuted), 4 of 8 filters, 2 (in-lane) */
      {"grouped_conv2d", "x=2x64x6x29 filters=64 kernel=3 pad=1 groups=4"},
      {"grouped_conv2d", "x=2x64x7x43 filters=64 kernel=3 pad=2 dilation=2 groups=4 b=none"},
      {"grouped_conv2d", "x=1x6x31x64 filters=64 kernel=3 pad=1 groups=8 layout=NHWC"},
      {"grouped_conv2d", "x=1x32x5x27 filters=64 kernel=3 pad=1 groups=8"},
      {"grouped_conv2d", "x=1x16x5x23 filters=16 kernel=3 pad=1 groups=8"},
      {"grouped_conv2d", "x=1x128x6x30 filters=128 kernel=3 stride=2 pad=1 groups=32"},
      /* planar rows (channels first, stride 1, 8 filters a block): 5x5, pads beyond the
       * window (the data gradient by the core), one-row images, 16 and 32 filters a group */
      {"grouped_conv2d", "x=1x32x9x11 filters=32 kernel=5 pad=1 groups=4"},
      {"grouped_conv2d", "x=2x16x12x70 filters=32 kernel=3 pad=3 groups=2"},
      {"grouped_conv2d", "x=3x32x1x40 filters=32 kernel=3 pad=1 groups=4"},
      {"grouped_conv2d", "x=2x32x3x5 filters=64 kernel=3 pad=2 dilation=2 groups=2 b=none"},
      /* strided data gradients by phases: dilation, stride 3 with a 5x5 window, a 1x1 window
       * (phases without taps: zeros), no padding, phases of unequal sizes */
      {"grouped_conv2d", "x=2x32x17x16 filters=32 kernel=3 stride=2 pad=2 dilation=2 groups=4"},
      {"grouped_conv2d", "x=1x16x14x19 filters=32 kernel=5 stride=3 pad=2 groups=2"},
      {"grouped_conv2d", "x=2x64x9x10 filters=64 kernel=1 stride=2 groups=8"},
      {"grouped_conv2d", "x=1x32x12x13 filters=32 kernel=3 stride=2 groups=8 b=none"},
  };
  int saved = omp_get_max_threads();
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    for (int threads = 1; threads <= 2; threads++) {
      omp_set_num_threads(threads);
      check_f32(cases[k][0], cases[k][1], NN_ALGO_AUTO);
      /* the default now takes Winograd for most dilated ones: the direct kernels as well */
      if (!strcmp(cases[k][0], "dilated_conv2d")) check_f32(cases[k][0], cases[k][1], NN_ALGO_DIRECT);
      else check_f32(cases[k][0], cases[k][1], NN_ALGO_GROUP8); /* the 8-pixel blocks */
    }
  omp_set_num_threads(saved);
}

/* Does the implicit GEMM take the forward (and, stride 1, the data gradient)? (x86 only: it
 * needs AVX-512) */
#if defined(__x86_64__)
static int gemm_fits(const nn_conv_geom *g, opf_dtype dt) { return nn_group_gemm_fits(g, dt, 0); }
#endif
/* Does the default take the dilated Winograd phases? */
static int dil_wino(const nn_conv_geom *g, opf_dtype dt) {
  return nn_wino_dil_fits(g, dt) && g->C >= NN_WINO_MIN_CH && g->F >= NN_WINO_MIN_CH;
}

/* A dilated window's float32 paths against float64 (forward, data and weight gradients), 1
 * and 2 threads. Winograd on the dilation phases (the default): pads 0 to 2*dilation (phase
 * pads 0-2, different per phase with an odd pad), dilations 2, 3, 4, 8 (8 column phases side
 * by side), widths giving phases of 1-2 tiles (element paths) and wider ones (the stride-2
 * vector gathers and blends), odd widths and heights (phases of unequal sizes), channels not
 * multiples of 8 (planar copies' remainders), both layouts, N = 1 and 3, bias or none; the
 * weight-gradient-free path runs dw direct or by the core. The implicit GEMM (forced): widths
 * not multiples of its 14-row tile, filters past its 32-wide strips (70: a remainder strip),
 * channels giving 1, 2 and 4 taps per product (300, 100, 64: several products accumulated),
 * rows whose window lies in the padding (bias only), stride 2 and a 5x5 window (data
 * gradient by the core), pads beyond the flipped window (likewise). */
static void test_float32_dilated(void **state) {
  (void)state;
  static const char *wino[] = {
      "x=3x16x21x19 filters=24 kernel=3 pad=2 dilation=2",
      "x=1x19x23x17 filters=20 kernel=3 pad=3 dilation=3",
      "x=2x21x19x33 filters=17 kernel=3 pad=1 dilation=2 layout=NHWC",
      "x=1x17x40x37 filters=16 kernel=3 pad=0 dilation=2 layout=NHWC",
      "x=1x70x70x20 filters=24 kernel=3 pad=8 dilation=8 layout=NHWC",
      "x=3x24x11x9 filters=16 kernel=3 pad=4 dilation=2 b=none",
      "x=1x24x5x6 filters=16 kernel=3 pad=2 dilation=2",
      "x=1x32x30x29 filters=48 kernel=3 pad=4 dilation=4",
      "x=2x18x40x36 filters=16 kernel=3 pad=2 dilation=2",
      "x=2x23x37x64 filters=64 kernel=3 pad=2 dilation=2 layout=NHWC b=none",
  };
  static const char *implicit[] = {
      "x=3x17x29x23 filters=19 kernel=3 pad=2 dilation=2",
      "x=1x29x31x100 filters=70 kernel=3 pad=3 dilation=3 layout=NHWC",
      "x=2x300x9x13 filters=40 kernel=3 pad=4 dilation=2",
      "x=1x13x12x16 filters=32 kernel=3 pad=6 dilation=2 layout=NHWC",
      "x=2x20x15x17 filters=24 kernel=5 stride=2 pad=4 dilation=2",
      "x=1x14x28x48 filters=33 kernel=3 pad=1 dilation=2 layout=NHWC b=none",
      "x=2x64x13x15 filters=64 kernel=3 pad=2 dilation=2",
      "x=1x9x30x64 filters=8 kernel=3 pad=4 dilation=4 layout=NHWC",
  };
  int saved = omp_get_max_threads();
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    f32_expect = dil_wino;
    for (size_t k = 0; k < sizeof wino / sizeof *wino; k++)
      check_f32("dilated_conv2d", wino[k], NN_ALGO_AUTO);
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) f32_expect = gemm_fits; /* else the core runs */
    else f32_expect = NULL;
#else
    f32_expect = NULL;
#endif
    for (size_t k = 0; k < sizeof implicit / sizeof *implicit; k++)
      check_f32("dilated_conv2d", implicit[k], NN_ALGO_TAPS);
    f32_expect = NULL;
  }
  omp_set_num_threads(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_conv),      cmocka_unit_test(test_golden_transpose),
      cmocka_unit_test(test_golden_cols),      cmocka_unit_test(test_golden_fused),
      cmocka_unit_test(test_derived_shapes),   cmocka_unit_test(test_conv_errors),
      cmocka_unit_test(test_transpose_errors), cmocka_unit_test(test_cols_errors),
      cmocka_unit_test(test_fused_errors),     cmocka_unit_test(test_backward_blocked),
      cmocka_unit_test(test_gemm_own),         cmocka_unit_test(test_float32_paths),
      cmocka_unit_test(test_float32_group_dilation), cmocka_unit_test(test_float32_dilated),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

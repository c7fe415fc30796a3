/* conv_transpose.c: transposed convolutions (deconvolution) conv1d_transpose, conv2d_transpose,
 * conv3d_transpose: the adjoint of the convolution with the same weight, stride, padding,
 * dilation and groups, so the N-d core's passes swap roles: forward y = col2im(W^T x) + b
 * (a convolution's data gradient), backward dx = W im2col(gy) (a convolution's forward, one
 * im2col shared with dw = x im2col(gy)^T) and db = sums of gy. Weight (C, F/groups, k...). */
#include "conv_core.h"

enum { IN_X, IN_W, IN_B };

static int convt_infer_nd(opf_case *c, int nd) {
  nn_conv_spec sp = {c->op->name, nd, 1, IN_X, IN_W, IN_B};
  nn_conv_geom g;
  return nn_conv_infer(c, &sp, &g);
}
static int convt1d_infer(opf_case *c) { return convt_infer_nd(c, 1); }
static int convt2d_infer(opf_case *c) { return convt_infer_nd(c, 2); }
static int convt3d_infer(opf_case *c) { return convt_infer_nd(c, 3); }

static void convt_geom(const opf_case *c, nn_conv_geom *g) {
  nn_conv_spec sp = {c->op->name, c->in[IN_X].ndim - 2, 1, IN_X, IN_W, IN_B};
  nn_conv_geom_of(c, &sp, g);
}

static const void *convt_bias(const opf_case *c) {
  return c->present[IN_B] ? c->in[IN_B].data : NULL;
}

/* y (the big side) = col2im(W^T x) + b */
static int convt_forward(opf_case *c) {
  nn_conv_geom g;
  convt_geom(c, &g);
  nn_conv_job j = {.g = &g, .dt = c->dtype, .ws = c->ws, .ws_bytes = c->ws_bytes,
                   .w = c->in[IN_W].data, .gsmall = c->in[IN_X].data, .dbig = c->out[0].data,
                   .bigshift = convt_bias(c)};
  nn_conv_backward(&j);
  return OPF_OK;
}

/* dx = W im2col(gy), dw = x im2col(gy)^T (the same col blocks), db = sums of gy */
static int convt_backward(opf_case *c) {
  nn_conv_geom g;
  convt_geom(c, &g);
  nn_conv_job j = {.g = &g, .dt = c->dtype, .ws = c->ws, .ws_bytes = c->ws_bytes,
                   .w = c->in[IN_W].data, .big = c->gout[0].data, .small = c->gin[IN_X].data,
                   .gsmall = c->in[IN_X].data, .dw = c->gin[IN_W].data,
                   .dbig_sum = c->present[IN_B] ? c->gin[IN_B].data : NULL};
  nn_conv_forward(&j);
  return OPF_OK;
}

static int convt_reference(opf_case *c) {
  nn_conv_geom g;
  convt_geom(c, &g);
  nn_conv_ref_tfwd(&g, c->dtype, c->in[IN_X].data, c->in[IN_W].data, convt_bias(c),
                   c->out[0].data);
  return OPF_OK;
}

/* The GEMM work of the convolution it transposes: 2*N*C*P*(F/groups)*KK with P the input
 * positions and KK taps, fwd; twice that bwd (dx and dw). Plus one add per output for the
 * bias (fwd) and for db (bwd). */
static double convt_flops(const opf_case *c, opf_pass p) {
  nn_conv_geom g;
  convt_geom(c, &g);
  double mm = 2 * nn_conv_macs(&g), bias = c->present[IN_B] ? nn_conv_big_elems(&g) : 0;
  return opf_pass_sum(p, mm + bias, 2 * mm + bias);
}

#define CONVT_INPUTS(xhelp, whelp)                                                             \
  .n_in = 3,                                                                                   \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,          \
          .help = xhelp},                                                                      \
         {.name = "w", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -0.5, .hi = 0.5,      \
          .help = whelp "; derived from filters/kernel when omitted"},                         \
         {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL,           \
          .lo = -1, .hi = 1, .help = "bias (F); b=none drops it"}},                            \
  .n_out = 1, .out = {"y"}
#define CONVT_HOOKS                                                                            \
  .forward = convt_forward, .backward = convt_backward, .reference = convt_reference,         \
  .flops = convt_flops, .bytes = opf_default_bytes

OPPERF_OP(conv1d_transpose) = {
    .abi = OPF_OP_ABI,
    .name = "conv1d_transpose",
    .category = "nn.conv",
    .summary = "1-D transposed convolution (deconvolution), NCW or NWC",
    .dtypes = OPF_DT_FLOAT,
    CONVT_INPUTS("input (N, C, W), or (N, W, C) with layout=NWC", "filters (C, F/groups, K)"),
    .n_params = 8,
    .params = {NN_CONV_P_FILTERS(256), NN_CONV_P_KERNEL, NN_CONV_P_STRIDE, NN_CONV_P_PAD(0),
               NN_CONV_P_OUTPAD, NN_CONV_P_DILATION(1), NN_CONV_P_GROUPS(1),
               NN_CONV_P_LAYOUT("NCW|NWC")},
    .shapes = {{"standard", "x=32x256x512 filters=256 kernel=4 stride=2 pad=1"},
               {"skewed", "x=32x512x256 filters=256 kernel=4 stride=2 pad=1 layout=NWC"},
               {"skewed", "x=32x256x1024 filters=256 kernel=3 pad=1"},
               {"skewed", "x=32x64x4096 filters=3 kernel=7 pad=3"},
               {"small", "x=2x3x5 filters=4 kernel=3"},
               {"small", "x=2x3x5 filters=4 kernel=3 b=none"},
               {"small", "x=2x4x6 filters=6 kernel=4 stride=2 pad=1 groups=2"},
               {"small", "x=1x4x5 filters=2 kernel=3 stride=2 pad=1 output_padding=1 dilation=2"},
               {"small", "x=2x3x4 filters=4 kernel=1"},
               {"small", "x=1x2x5 filters=2 kernel=3 dilation=2 output_padding=1"},
               {"small", "x=1x4x6 filters=4 kernel=3 stride=2 groups=4"},
               {"small", "x=2x6x3 filters=4 kernel=3 stride=2 layout=NWC"},
               {"small", "x=1x5x4 filters=6 kernel=3 stride=3 pad=1 output_padding=2 groups=2 layout=NWC"},
               {"test", "x=3x9x777 filters=7 kernel=4 stride=2 pad=1"},
               {"test", "x=1x6x2001 filters=5 kernel=5 stride=3 pad=2 output_padding=1"},
               {"test", "x=2x501x12 filters=8 kernel=3 stride=2 pad=1 groups=4 layout=NWC"},
               {"large", "x=32x512x4096 filters=256 kernel=4 stride=2 pad=1"}},
    .infer = convt1d_infer,
    CONVT_HOOKS,
};

OPPERF_OP(conv2d_transpose) = {
    .abi = OPF_OP_ABI,
    .name = "conv2d_transpose",
    .category = "nn.conv",
    .summary = "2-D transposed convolution (deconvolution), NCHW or NHWC",
    .dtypes = OPF_DT_FLOAT,
    CONVT_INPUTS("input (N, C, H, W), or (N, H, W, C) with layout=NHWC",
                 "filters (C, F/groups, KH, KW)"),
    .n_params = 10,
    .params = {NN_CONV_P_FILTERS(64), NN_CONV_P_KERNEL, NN_CONV_P_K("kh", "height"),
               NN_CONV_P_K("kw", "width"), NN_CONV_P_STRIDE, NN_CONV_P_PAD(0), NN_CONV_P_OUTPAD,
               NN_CONV_P_DILATION(1), NN_CONV_P_GROUPS(1), NN_CONV_P_LAYOUT("NCHW|NHWC")},
    .shapes = {{"standard", "x=32x64x28x28 filters=64 kernel=4 stride=2 pad=1"},
               {"skewed", "x=32x28x28x64 filters=64 kernel=4 stride=2 pad=1 layout=NHWC"},
               {"skewed", "x=32x64x56x56 filters=64 kernel=3 pad=1"},
               {"skewed", "x=32x512x4x4 filters=256 kernel=4 stride=2 pad=1"},
               {"skewed", "x=8x64x128x128 filters=3 kernel=4 stride=2 pad=1"},
               {"small", "x=2x3x4x4 filters=4 kernel=3"},
               {"small", "x=2x3x4x4 filters=4 kernel=3 b=none"},
               {"small", "x=1x4x3x4 filters=6 kernel=4 stride=2 pad=1 groups=2"},
               {"small", "x=1x2x3x3 filters=3 kernel=3 stride=2 pad=1 output_padding=1 dilation=2"},
               {"small", "x=1x2x3x4 filters=3 kh=2 kw=3 stride=2"},
               {"small", "x=2x3x3x5 filters=2 kernel=1"},
               {"small", "x=1x3x4x4 filters=6 kernel=3 stride=2 pad=1 groups=3"},
               {"small", "x=1x4x3x4 filters=4 kernel=4 stride=2 pad=1 layout=NHWC"},
               {"small", "x=1x3x3x4 filters=6 kernel=3 stride=2 output_padding=1 groups=2 layout=NHWC"},
               {"test", "x=2x9x31x27 filters=7 kernel=4 stride=2 pad=1"},
               {"test", "x=1x6x45x41 filters=4 kernel=5 stride=3 pad=2 output_padding=2"},
               {"test", "x=2x23x19x12 filters=6 kernel=3 stride=2 pad=1 groups=3 layout=NHWC"},
               {"large", "x=32x128x64x64 filters=64 kernel=4 stride=2 pad=1"}},
    .infer = convt2d_infer,
    CONVT_HOOKS,
};

OPPERF_OP(conv3d_transpose) = {
    .abi = OPF_OP_ABI,
    .name = "conv3d_transpose",
    .category = "nn.conv",
    .summary = "3-D transposed convolution (deconvolution), NCDHW or NDHWC",
    .dtypes = OPF_DT_FLOAT,
    CONVT_INPUTS("input (N, C, D, H, W), or (N, D, H, W, C) with layout=NDHWC",
                 "filters (C, F/groups, KD, KH, KW)"),
    .n_params = 11,
    .params = {NN_CONV_P_FILTERS(64), NN_CONV_P_KERNEL, NN_CONV_P_K("kd", "depth"),
               NN_CONV_P_K("kh", "height"), NN_CONV_P_K("kw", "width"), NN_CONV_P_STRIDE,
               NN_CONV_P_PAD(0), NN_CONV_P_OUTPAD, NN_CONV_P_DILATION(1), NN_CONV_P_GROUPS(1),
               NN_CONV_P_LAYOUT("NCDHW|NDHWC")},
    .shapes = {{"standard", "x=8x64x8x28x28 filters=64 kernel=4 stride=2 pad=1"},
               {"skewed", "x=8x8x28x28x64 filters=64 kernel=4 stride=2 pad=1 layout=NDHWC"},
               {"skewed", "x=1x64x16x56x56 filters=3 kernel=3 pad=1"},
               {"skewed", "x=8x256x2x7x7 filters=128 kernel=4 stride=2 pad=1"},
               {"small", "x=1x3x3x3x4 filters=4 kernel=3"},
               {"small", "x=2x3x2x3x3 filters=2 kernel=3 b=none"},
               {"small", "x=1x4x2x3x3 filters=4 kernel=4 stride=2 pad=1 groups=2"},
               {"small", "x=1x2x2x3x2 filters=2 kd=2 kh=3 kw=2 stride=2 pad=1 output_padding=1 dilation=2"},
               {"small", "x=1x3x3x2x4 filters=4 kernel=3 stride=2 pad=1 layout=NDHWC"},
               {"test", "x=2x5x7x13x11 filters=6 kernel=4 stride=2 pad=1"},
               {"test", "x=1x9x8x7x6 filters=4 kernel=3 stride=2 pad=1 output_padding=1 groups=2 layout=NDHWC"},
               {"large", "x=4x128x16x56x56 filters=64 kernel=4 stride=2 pad=1"}},
    .infer = convt3d_infer,
    CONVT_HOOKS,
};

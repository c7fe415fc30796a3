/* conv.c: convolutions conv1d, conv2d, conv3d (channels first or last, stride, padding,
 * dilation, groups), and grouped_conv2d / dilated_conv2d: registrations of the same kernels
 * with ResNeXt / dilated-network defaults. All run on the N-d core of conv_core.c: forward
 * im2col + GEMM per L2 block with the bias as epilogue; backward dw = g col^T,
 * dx = col2im(W^T g), db = sums of g. */
#include "conv_core.h"

enum { IN_X, IN_W, IN_B };

static int conv_infer_nd(opf_case *c, int nd) {
  nn_conv_spec sp = {c->op->name, nd, 0, IN_X, IN_W, IN_B};
  nn_conv_geom g;
  return nn_conv_infer(c, &sp, &g);
}
static int conv1d_infer(opf_case *c) { return conv_infer_nd(c, 1); }
static int conv2d_infer(opf_case *c) { return conv_infer_nd(c, 2); }
static int conv3d_infer(opf_case *c) { return conv_infer_nd(c, 3); }

/* Geometry of an accepted case: its rank is x's. */
static void conv_geom(const opf_case *c, nn_conv_geom *g) {
  nn_conv_spec sp = {c->op->name, c->in[IN_X].ndim - 2, 0, IN_X, IN_W, IN_B};
  nn_conv_geom_of(c, &sp, g);
}

static const void *conv_bias(const opf_case *c) {
  return c->present[IN_B] ? c->in[IN_B].data : NULL;
}

static int conv_forward(opf_case *c) {
  nn_conv_geom g;
  conv_geom(c, &g);
  nn_conv_job j = {.g = &g, .dt = c->dtype, .ws = c->ws, .ws_bytes = c->ws_bytes,
                   .w = c->in[IN_W].data, .big = c->in[IN_X].data, .small = c->out[0].data,
                   .shift = conv_bias(c)};
  nn_conv_forward(&j);
  return OPF_OK;
}

static int conv_backward(opf_case *c) {
  nn_conv_geom g;
  conv_geom(c, &g);
  nn_conv_job j = {.g = &g, .dt = c->dtype, .ws = c->ws, .ws_bytes = c->ws_bytes,
                   .w = c->in[IN_W].data, .big = c->in[IN_X].data, .gsmall = c->gout[0].data,
                   .dbig = c->gin[IN_X].data, .dw = c->gin[IN_W].data,
                   .dsmall_sum = c->present[IN_B] ? c->gin[IN_B].data : NULL};
  nn_conv_backward(&j);
  return OPF_OK;
}

static int conv_reference(opf_case *c) {
  nn_conv_geom g;
  conv_geom(c, &g);
  nn_conv_ref_fwd(&g, c->dtype, c->in[IN_X].data, c->in[IN_W].data, conv_bias(c),
                  c->out[0].data);
  return OPF_OK;
}

/* fwd: 2*N*F*P*(C/groups)*KK multiply-adds (P output positions, KK taps), plus one add per
 * output with a bias; bwd: twice the GEMM work (dw and dx), plus one add per output for db. */
static double conv_flops(const opf_case *c, opf_pass p) {
  nn_conv_geom g;
  conv_geom(c, &g);
  double mm = 2 * nn_conv_macs(&g), bias = c->present[IN_B] ? nn_conv_small_elems(&g) : 0;
  return opf_pass_sum(p, mm + bias, 2 * mm + bias);
}

#define CONV_INPUTS(xhelp, whelp)                                                              \
  .n_in = 3,                                                                                   \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,          \
          .help = xhelp},                                                                      \
         {.name = "w", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -0.5, .hi = 0.5,      \
          .help = whelp "; derived from filters/kernel when omitted"},                         \
         {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL,           \
          .lo = -1, .hi = 1, .help = "bias (F); b=none drops it"}},                            \
  .n_out = 1, .out = {"y"}
#define CONV_HOOKS                                                                             \
  .forward = conv_forward, .backward = conv_backward, .reference = conv_reference,            \
  .flops = conv_flops, .bytes = opf_default_bytes

OPPERF_OP(conv1d) = {
    .abi = OPF_OP_ABI,
    .name = "conv1d",
    .category = "nn.conv",
    .summary = "1-D convolution, NCW or NWC, with stride, padding, dilation and groups",
    .dtypes = OPF_DT_FLOAT,
    CONV_INPUTS("input (N, C, W), or (N, W, C) with layout=NWC", "filters (F, C/groups, K)"),
    .n_params = 7,
    .params = {NN_CONV_P_FILTERS(256), NN_CONV_P_KERNEL, NN_CONV_P_STRIDE, NN_CONV_P_PAD(0),
               NN_CONV_P_DILATION(1), NN_CONV_P_GROUPS(1), NN_CONV_P_LAYOUT("NCW|NWC")},
    .shapes = {{"standard", "x=32x256x1024 filters=256 kernel=3 pad=1"},
               {"skewed", "x=32x1024x256 filters=256 kernel=3 pad=1 layout=NWC"},
               {"skewed", "x=32x3x16384 filters=64 kernel=7 pad=3"},
               {"skewed", "x=32x16x16384 filters=16 kernel=5 pad=2"},
               {"skewed", "x=1x64x65536 filters=64 kernel=3 pad=1"},
               {"skewed", "x=32x256x1024 filters=512 kernel=3 stride=2 pad=1"},
               {"skewed", "x=32x256x1024 filters=256 kernel=3 pad=1 groups=256"},
               {"small", "x=2x3x9 filters=4 kernel=3"},
               {"small", "x=2x3x9 filters=4 kernel=3 b=none"},
               {"small", "x=2x4x11 filters=6 kernel=3 stride=2 pad=1 dilation=2 groups=2"},
               {"small", "x=2x4x7 filters=3 kernel=1"},
               {"small", "x=1x4x13 filters=4 kernel=3 pad=1 groups=4"},
               {"small", "x=2x9x3 filters=4 kernel=3 pad=1 layout=NWC"},
               {"small", "x=2x11x4 filters=6 kernel=3 stride=2 pad=2 dilation=2 groups=2 layout=NWC"},
               {"small", "x=1x7x4 filters=2 kernel=1 layout=NWC"},
               {"test", "x=3x7x1001 filters=12 kernel=5 pad=2"},
               {"test", "x=1x5x3001 filters=8 kernel=3 stride=2"},
               {"test", "x=2x16x513 filters=16 kernel=3 pad=1 groups=16"},
               {"test", "x=2x999x6 filters=9 kernel=3 pad=1 groups=3 layout=NWC"},
               {"large", "x=32x512x4096 filters=512 kernel=3 pad=1"}},
    .infer = conv1d_infer,
    CONV_HOOKS,
};

#define CONV2D_PARAMS(filters, pad, dilation, groups)                                          \
  .n_params = 9,                                                                               \
  .params = {NN_CONV_P_FILTERS(filters), NN_CONV_P_KERNEL, NN_CONV_P_K("kh", "height"),        \
             NN_CONV_P_K("kw", "width"), NN_CONV_P_STRIDE, NN_CONV_P_PAD(pad),                 \
             NN_CONV_P_DILATION(dilation), NN_CONV_P_GROUPS(groups),                           \
             NN_CONV_P_LAYOUT("NCHW|NHWC")}
#define CONV2D_INPUTS                                                                          \
  CONV_INPUTS("input (N, C, H, W), or (N, H, W, C) with layout=NHWC",                         \
              "filters (F, C/groups, KH, KW)")

OPPERF_OP(conv2d) = {
    .abi = OPF_OP_ABI,
    .name = "conv2d",
    .category = "nn.conv",
    .summary = "2-D convolution, NCHW or NHWC, with stride, padding, dilation and groups",
    .dtypes = OPF_DT_FLOAT,
    CONV2D_INPUTS,
    CONV2D_PARAMS(64, 0, 1, 1),
    .shapes = {{"standard", "x=32x64x56x56 filters=64 kernel=3 pad=1"},
               {"skewed", "x=32x3x256x256 filters=64 kernel=3"},
               {"skewed", "x=1x3x1024x1024 filters=64 kernel=3"},
               {"skewed", "x=256x3x32x32 filters=64 kernel=3"},
               {"skewed", "x=32x256x14x14 filters=1024 kernel=1"},
               {"skewed", "x=32x128x56x56 filters=256 kernel=3 stride=2 pad=1"},
               {"skewed", "x=32x64x56x56 filters=64 kernel=3 pad=2 dilation=2 groups=4"},
               {"skewed", "x=32x56x56x64 filters=64 kernel=3 pad=1 layout=NHWC"},
               {"skewed", "x=32x14x14x256 filters=1024 kernel=1 layout=NHWC"},
               {"small", "x=2x3x5x5 filters=4 kernel=3"},
               {"small", "x=2x3x5x5 filters=4 kernel=3 b=none"},
               {"small", "x=2x3x7x6 filters=4 kernel=3 stride=2 pad=1"},
               {"small", "x=1x4x7x7 filters=4 kernel=3 pad=1 dilation=2 groups=2"},
               {"small", "x=2x4x4x5 filters=6 kernel=1"},
               {"small", "x=2x4x6x5 filters=2 kernel=1 stride=2"},
               {"small", "x=1x2x6x5 filters=3 kh=2 kw=3 pad=1"},
               {"small", "x=2x5x5x3 filters=4 kernel=3 pad=1 layout=NHWC"},
               {"small", "x=1x7x6x4 filters=4 kernel=3 stride=2 pad=1 dilation=2 groups=2 layout=NHWC"},
               {"small", "x=2x4x5x4 filters=6 kernel=1 groups=2 layout=NHWC b=none"},
               {"small", "x=1x6x5x2 filters=3 kh=2 kw=3 pad=1 layout=NHWC"},
               {"test", "x=4x7x37x41 filters=12 kernel=3 pad=1"},
               {"test", "x=1x5x150x133 filters=8 kernel=5 stride=2 pad=2"},
               {"test", "x=3x24x19x23 filters=36 kernel=1 groups=3"},
               {"test", "x=2x6x61x67 filters=9 kernel=3 stride=3 pad=1 dilation=2 groups=3"},
               {"test", "x=3x37x41x7 filters=12 kernel=3 pad=1 layout=NHWC"},
               {"test", "x=1x150x133x6 filters=8 kernel=5 stride=2 pad=2 groups=2 layout=NHWC"},
               {"test", "x=3x19x23x24 filters=36 kernel=1 layout=NHWC"},
               {"large", "x=64x128x112x112 filters=128 kernel=3 pad=1"}},
    .infer = conv2d_infer,
    CONV_HOOKS,
};

OPPERF_OP(grouped_conv2d) = {
    .abi = OPF_OP_ABI,
    .name = "grouped_conv2d",
    .category = "nn.conv",
    .summary = "grouped 2-D convolution (ResNeXt, depthwise): conv2d's kernels, groups=32 default",
    .dtypes = OPF_DT_FLOAT,
    CONV2D_INPUTS,
    CONV2D_PARAMS(128, 1, 1, 32),
    .shapes = {{"standard", "x=32x128x56x56 filters=128 kernel=3 pad=1 groups=32"},
               {"skewed", "x=32x56x56x128 filters=128 kernel=3 pad=1 groups=32 layout=NHWC"},
               {"skewed", "x=32x512x14x14 filters=512 kernel=3 pad=1 groups=32"},
               {"skewed", "x=32x128x56x56 filters=128 kernel=3 pad=1 groups=128"},
               {"skewed", "x=32x256x56x56 filters=256 kernel=3 stride=2 pad=1 groups=32"},
               {"small", "x=2x8x6x6 filters=8 kernel=3 pad=1 groups=4"},
               {"small", "x=1x6x7x5 filters=6 kernel=3 pad=1 groups=6"},
               {"small", "x=1x4x9x9 filters=8 kernel=3 stride=2 groups=2 b=none"},
               {"small", "x=2x6x6x8 filters=8 kernel=3 pad=1 groups=4 layout=NHWC"},
               {"small", "x=1x7x5x6 filters=6 kernel=3 pad=1 groups=6 layout=NHWC"},
               {"test", "x=3x64x23x19 filters=64 kernel=3 pad=1 groups=16"},
               {"test", "x=2x17x29x32 filters=32 kernel=3 pad=1 groups=32 layout=NHWC"},
               {"large", "x=64x256x56x56 filters=256 kernel=3 pad=1 groups=32"}},
    .infer = conv2d_infer,
    CONV_HOOKS,
};

OPPERF_OP(dilated_conv2d) = {
    .abi = OPF_OP_ABI,
    .name = "dilated_conv2d",
    .category = "nn.conv",
    .summary = "dilated (atrous) 2-D convolution: conv2d's kernels, dilation=2 pad=2 default",
    .dtypes = OPF_DT_FLOAT,
    CONV2D_INPUTS,
    CONV2D_PARAMS(64, 2, 2, 1),
    .shapes = {{"standard", "x=32x64x56x56 filters=64 kernel=3 pad=2 dilation=2"},
               {"skewed", "x=32x56x56x64 filters=64 kernel=3 pad=2 dilation=2 layout=NHWC"},
               {"skewed", "x=8x256x64x64 filters=256 kernel=3 pad=4 dilation=4"},
               {"skewed", "x=1x64x256x256 filters=64 kernel=3 pad=8 dilation=8"},
               {"small", "x=1x3x9x9 filters=4 kernel=3 pad=2 dilation=2"},
               {"small", "x=2x2x11x10 filters=3 kernel=3 dilation=3"},
               {"small", "x=1x4x12x12 filters=4 kernel=3 stride=2 pad=3 dilation=3 groups=2"},
               {"small", "x=1x9x9x3 filters=4 kernel=3 pad=2 dilation=2 layout=NHWC"},
               {"test", "x=2x16x45x47 filters=16 kernel=3 pad=2 dilation=2"},
               {"test", "x=2x33x35x16 filters=8 kernel=3 pad=4 dilation=4 layout=NHWC"},
               {"large", "x=32x256x64x64 filters=256 kernel=3 pad=2 dilation=2"}},
    .infer = conv2d_infer,
    CONV_HOOKS,
};

OPPERF_OP(conv3d) = {
    .abi = OPF_OP_ABI,
    .name = "conv3d",
    .category = "nn.conv",
    .summary = "3-D convolution, NCDHW or NDHWC, with stride, padding, dilation and groups",
    .dtypes = OPF_DT_FLOAT,
    CONV_INPUTS("input (N, C, D, H, W), or (N, D, H, W, C) with layout=NDHWC",
                "filters (F, C/groups, KD, KH, KW)"),
    .n_params = 10,
    .params = {NN_CONV_P_FILTERS(64), NN_CONV_P_KERNEL, NN_CONV_P_K("kd", "depth"),
               NN_CONV_P_K("kh", "height"), NN_CONV_P_K("kw", "width"), NN_CONV_P_STRIDE,
               NN_CONV_P_PAD(0), NN_CONV_P_DILATION(1), NN_CONV_P_GROUPS(1),
               NN_CONV_P_LAYOUT("NCDHW|NDHWC")},
    .shapes = {{"standard", "x=8x64x16x56x56 filters=64 kernel=3 pad=1"},
               {"skewed", "x=1x3x16x112x112 filters=64 kernel=3 pad=1"},
               {"skewed", "x=8x16x56x56x64 filters=64 kernel=3 pad=1 layout=NDHWC"},
               {"skewed", "x=8x64x16x56x56 filters=128 kernel=3 stride=2 pad=1"},
               {"skewed", "x=8x256x8x14x14 filters=256 kernel=1"},
               {"small", "x=2x3x4x5x5 filters=4 kernel=3"},
               {"small", "x=2x3x4x5x5 filters=4 kernel=3 b=none"},
               {"small", "x=1x4x5x6x5 filters=4 kernel=3 stride=2 pad=1 groups=2"},
               {"small", "x=1x2x5x5x5 filters=3 kd=1 kh=2 kw=3 pad=1"},
               {"small", "x=1x2x7x6x6 filters=2 kernel=2 pad=1 dilation=2"},
               {"small", "x=2x4x3x3x3 filters=2 kernel=1"},
               {"small", "x=1x3x4x5x5 filters=6 kernel=3 pad=1 groups=3"},
               {"small", "x=1x4x5x6x3 filters=4 kernel=3 pad=1 layout=NDHWC"},
               {"small", "x=1x7x7x5x4 filters=4 kernel=3 stride=2 pad=2 dilation=2 groups=2 layout=NDHWC"},
               {"test", "x=2x5x9x23x21 filters=7 kernel=3 pad=1"},
               {"test", "x=1x3x16x40x40 filters=8 kernel=3 stride=2 pad=1"},
               {"test", "x=3x11x13x6x6 filters=6 kernel=3 pad=1 groups=3 layout=NDHWC"},
               {"large", "x=8x64x32x64x64 filters=64 kernel=3 pad=1"}},
    .infer = conv3d_infer,
    CONV_HOOKS,
};

/* conv_impls.c: the built-in alternative implementations of the convolutions (--impl), so
 * each algorithm can be measured beside the default on the same inputs: "im2col" (conv2d:
 * im2col + GEMM forward, col2im data gradient, the algorithm conv2d had before Winograd;
 * conv3d: the im2col core with the own GEMM, its default before 3-D Winograd), "winograd"
 * (conv2d/3d and their transposes: Winograd F(4x4, 3x3), in (h, w) for 3-D, wherever it fits,
 * whatever the channel counts; elsewhere the phase decomposition (transposed) or the im2col
 * core) and
 * "col2im" (the transposed convolutions as they were: forward GEMM + col2im, backward
 * im2col + GEMM), "im2col" of grouped_conv2d and dilated_conv2d (the im2col core with the
 * own GEMM kernel, as they ran before the direct kernel of conv_group.c), "direct" of
 * dilated_conv2d (the direct kernels of conv_group.c, before its implicit GEMM), "block8" of
 * grouped_conv2d and "group8" of conv2d (conv_group.c's 8-pixel channels-last blocks, before
 * its register blocks and planar rows). The default
 * (native) picks per case. "openblas" (every convolution): the
 * default's algorithms with OpenBLAS GEMMs instead of the float32 AVX-512 kernel of
 * conv_gemm.c ("im2col" and "col2im" use OpenBLAS too, as before that kernel). */
#include "conv_core.h"

static int gemm_fwd(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_GEMM); }
static int gemm_bwd(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_GEMM); }
static int blas_fwd(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_BLAS); }
static int blas_bwd(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_BLAS); }
static int core_fwd(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_CORE); }
static int core_bwd(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_CORE); }
static int fast_fwd(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_FAST); }
static int fast_bwd(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_FAST); }
static int nowino_fwd(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_NOWINO); }
static int nowino_bwd(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_NOWINO); }
static int direct_fwd(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_DIRECT); }
static int direct_bwd(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_DIRECT); }
static int taps_fwd(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_TAPS); }
static int taps_bwd(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_TAPS); }
static int group8_fwd(opf_case *c) { return nn_conv_op_run_fwd(c, NN_ALGO_GROUP8); }
static int group8_bwd(opf_case *c) { return nn_conv_op_run_bwd(c, NN_ALGO_GROUP8); }

#define CONV_IMPL(op, nm, what, f, b)                                                          \
  {.abi = OPF_OP_ABI, .name = nm, .implements = op, .summary = what, .forward = f, .backward = b}

OPPERF_IMPL(conv2d_im2col) = CONV_IMPL("conv2d", "im2col", "im2col + GEMM, col2im data gradient",
                                       gemm_fwd, gemm_bwd);
OPPERF_IMPL(conv2d_winograd) = CONV_IMPL("conv2d", "winograd",
                                         "Winograd F(4x4,3x3) where it fits (3x3, stride 1, NCHW, "
                                         "f32), else im2col", fast_fwd, fast_bwd);
OPPERF_IMPL(conv2d_transpose_winograd) = CONV_IMPL("conv2d_transpose", "winograd",
                                                   "Winograd F(4x4,3x3) where it fits (3x3, stride "
                                                   "1), else the phase decomposition or col2im",
                                                   fast_fwd, fast_bwd);
OPPERF_IMPL(conv3d_im2col) = CONV_IMPL("conv3d", "im2col", "im2col + GEMM core (the default "
                                       "before 3-D Winograd), phases for strided data gradients",
                                       nowino_fwd, nowino_bwd);
OPPERF_IMPL(conv3d_winograd) = CONV_IMPL("conv3d", "winograd",
                                         "Winograd F(4x4,3x3) in (h, w), depth taps summed "
                                         "transformed, where it fits (KDx3x3, stride 1, f32)",
                                         fast_fwd, fast_bwd);
OPPERF_IMPL(conv3d_transpose_winograd) = CONV_IMPL("conv3d_transpose", "winograd",
                                                   "3-D Winograd where it fits (KDx3x3, stride "
                                                   "1), else the phase decomposition or col2im",
                                                   fast_fwd, fast_bwd);
OPPERF_IMPL(conv1d_transpose_col2im) = CONV_IMPL("conv1d_transpose", "col2im",
                                                 "GEMM + col2im forward", gemm_fwd, gemm_bwd);
OPPERF_IMPL(conv2d_transpose_col2im) = CONV_IMPL("conv2d_transpose", "col2im",
                                                 "GEMM + col2im forward", gemm_fwd, gemm_bwd);
OPPERF_IMPL(conv3d_transpose_col2im) = CONV_IMPL("conv3d_transpose", "col2im",
                                                 "GEMM + col2im forward", gemm_fwd, gemm_bwd);

OPPERF_IMPL(grouped_conv2d_im2col) = CONV_IMPL("grouped_conv2d", "im2col",
                                               "the im2col core with per-group GEMMs (before "
                                               "the direct group kernel)", core_fwd, core_bwd);
#define GROUP8_WHAT                                                                            \
  "conv_group.c's 8-pixel channels-last blocks (before its register blocks and planar rows)"
OPPERF_IMPL(grouped_conv2d_block8) = CONV_IMPL("grouped_conv2d", "block8", GROUP8_WHAT,
                                               group8_fwd, group8_bwd);
OPPERF_IMPL(conv2d_group8) = CONV_IMPL("conv2d", "group8", GROUP8_WHAT, group8_fwd, group8_bwd);
OPPERF_IMPL(dilated_conv2d_im2col) = CONV_IMPL("dilated_conv2d", "im2col",
                                               "the im2col core with dilated taps (before the "
                                               "direct kernel)", core_fwd, core_bwd);
OPPERF_IMPL(dilated_conv2d_direct) = CONV_IMPL("dilated_conv2d", "direct",
                                               "the direct wide blocks of conv_group.c where "
                                               "they fit (before Winograd and the implicit "
                                               "GEMM)", direct_fwd, direct_bwd);
OPPERF_IMPL(dilated_conv2d_implicit) = CONV_IMPL("dilated_conv2d", "implicit",
                                                 "implicit GEMM: the taps' shifted rows on the "
                                                 "14x32 GEMM tile (forward, data gradient)",
                                                 taps_fwd, taps_bwd);

#define BLAS_IMPL(op) CONV_IMPL(op, "openblas", "the default's algorithms, OpenBLAS GEMMs", blas_fwd, blas_bwd)
OPPERF_IMPL(conv1d_openblas) = BLAS_IMPL("conv1d");
OPPERF_IMPL(conv2d_openblas) = BLAS_IMPL("conv2d");
OPPERF_IMPL(conv3d_openblas) = BLAS_IMPL("conv3d");
OPPERF_IMPL(grouped_conv2d_openblas) = BLAS_IMPL("grouped_conv2d");
OPPERF_IMPL(dilated_conv2d_openblas) = BLAS_IMPL("dilated_conv2d");
OPPERF_IMPL(conv1d_transpose_openblas) = BLAS_IMPL("conv1d_transpose");
OPPERF_IMPL(conv2d_transpose_openblas) = BLAS_IMPL("conv2d_transpose");
OPPERF_IMPL(conv3d_transpose_openblas) = BLAS_IMPL("conv3d_transpose");

/* softmax.c: softmax and log_softmax over one axis, numerically stable (the max is subtracted
 * before exp), with backward dx = y * (dy - sum(dy * y)) and dx = dy - exp(y) * sum(dy).
 * Kernels are in ops/reduction/softmax_drv.h (shared geometry and lane kernels with the
 * reductions), driven through softmax_common.h (shared with softmax_ext.c): contiguous rows in
 * parallel, outer axes by column blocks. */
#include "activation/softmax_common.h"

static int softmax_forward(opf_case *c) { return sm_run(c, 0, 0); }
static int softmax_backward(opf_case *c) { return sm_run(c, 0, 1); }
static int log_softmax_forward(opf_case *c) { return sm_run(c, 1, 0); }
static int log_softmax_backward(opf_case *c) { return sm_run(c, 1, 1); }

static int softmax_reference(opf_case *c) { return sm_reference_gen(c, 0, 1, NULL, 0); }
static int log_softmax_reference(opf_case *c) { return sm_reference_gen(c, 1, 1, NULL, 0); }

#define SM_COMMON                                                                             \
  .abi = OPF_OP_ABI, .category = "nn.activation", .dtypes = OPF_DT_FLOAT, .n_in = 1,          \
  .in = {SM_X_INPUT}, .n_out = 1, .out = {"y"}, .n_params = 1, .params = {SM_AXIS_PARAM},     \
  .shapes = {SM_SHAPES}, .infer = sm_infer, .flops = sm_flops, .bytes = sm_bytes

OPPERF_OP(softmax) = {
    SM_COMMON,
    .name = "softmax",
    .summary = "softmax over an axis: exp(x - max) / sum",
    .forward = softmax_forward,
    .backward = softmax_backward,
    .reference = softmax_reference,
};

OPPERF_OP(log_softmax) = {
    SM_COMMON,
    .name = "log_softmax",
    .summary = "log of softmax over an axis: x - max - log(sum(exp(x - max)))",
    .forward = log_softmax_forward,
    .backward = log_softmax_backward,
    .reference = log_softmax_reference,
};

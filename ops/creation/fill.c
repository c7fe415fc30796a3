/* fill.c: constant creation: zeros, ones, full, empty and zeros_like, ones_like, full_like.
 * Pure store bandwidth: one bit pattern written over the output (memset for all-zero bits),
 * threaded, and with streaming stores when the output is larger than the L3 (create_common.h's
 * cr_fill). empty measures what it costs in a framework: the allocation. */
#include "creation/create_common.h"

static int fill_run(opf_case *c, double v) {
  cr_filler f = {c->out[0].data, opf_dtype_size(c->out[0].dtype), 0, cr_large(&c->out[0])};
  cr_store(&f.bits, c->out[0].dtype, 0, v); /* low bytes on little-endian x86 */
  opf_parallel_range(opf_numel(&c->out[0]), OPF_PAR_MIN, cr_fill_range, &f);
  return OPF_OK;
}

static int fill_ref(opf_case *c, double v) {
  for (int64_t i = 0; i < opf_numel(&c->out[0]); i++) cr_store(c->out[0].data, c->dtype, i, v);
  return OPF_OK;
}

/* ---- infer: output from the shape param (param 0) or from x; the fill value (if any) must be
 * representable in an integer output dtype ---- */
static int fill_infer_shape(opf_case *c) { return cr_shape_out(c, 0, c->dtype); }

static int fill_infer_like(opf_case *c) {
  int rc = cr_need_input(c, 0);
  if (rc) return rc;
  opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

static int full_infer(opf_case *c) {
  int rc = cr_check_int(c, c->dtype, "value", c->p[1]);
  return rc ? rc : fill_infer_shape(c);
}

static int full_like_infer(opf_case *c) {
  int rc = cr_check_int(c, c->dtype, "value", c->p[0]);
  return rc ? rc : fill_infer_like(c);
}

/* Entry points: the value is a constant or a param. */
#define FILL_ENTRIES(NAME, VALUE)                                                             \
  static int NAME##_forward(opf_case *c) { return fill_run(c, VALUE); }                       \
  static int NAME##_reference(opf_case *c) { return fill_ref(c, VALUE); }
FILL_ENTRIES(zeros, 0.0)
FILL_ENTRIES(ones, 1.0)
FILL_ENTRIES(full, c->p[1])
FILL_ENTRIES(zeros_like, 0.0)
FILL_ENTRIES(ones_like, 1.0)
FILL_ENTRIES(full_like, c->p[0])

/* empty: allocate and free an output-sized block without touching it (the output tensor
 * itself stays as the harness allocated it). */
static int empty_forward(opf_case *c) {
  void *p = opf_alloc(c->out[0].nbytes);
  if (!p) return opf_case_error(c, OPF_ENOMEM, "empty: cannot allocate %zu bytes", c->out[0].nbytes);
  opf_free(p);
  return OPF_OK;
}
static int empty_reference(opf_case *c) {
  (void)c;
  return OPF_OK;
}

/* Models: no arithmetic; the minimum traffic is the output written once (x is not read: only
 * its shape matters). empty writes only the allocator's 64-byte block header. */
static double fill_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}
static double fill_bytes(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, cr_tbytes(&c->out[0]));
}
static double empty_bytes(const opf_case *c, opf_pass p) {
  (void)c;
  return cr_fwd_only(p, 64);
}

#define FILL_VALUE_PARAM                                                                      \
  {.name = "value", .type = OPF_P_FLOAT, .def = 7, .min = -1e300, .max = 1e300,               \
   .help = "fill value (integer dtypes: must be an integer in range)"}
#define FILL_X_INPUT                                                                          \
  {.name = "x", .dtype = OPF_DT_CASE, .help = "tensor whose shape and dtype the output takes (not read)"}
#define FILL_COMMON                                                                           \
  .abi = OPF_OP_ABI, .category = "creation", .dtypes = OPF_DT_ALL, .n_out = 1, .out = {"y"},  \
  .flops = fill_flops
#define FILL_SHAPE_OP(NAME, SUMMARY)                                                          \
  FILL_COMMON, .name = #NAME, .summary = SUMMARY, .forward = NAME##_forward,                  \
  .reference = NAME##_reference, .bytes = fill_bytes, .shapes = CR_SHAPE_SETS
#define FILL_LIKE_OP(NAME, SUMMARY)                                                           \
  FILL_COMMON, .name = #NAME, .summary = SUMMARY, .forward = NAME##_forward,                  \
  .reference = NAME##_reference, .bytes = fill_bytes, .shapes = CR_X_SETS, .n_in = 1,         \
  .in = {FILL_X_INPUT}

OPPERF_OP(zeros) = {
    FILL_SHAPE_OP(zeros, "tensor of zeros of the given shape"),
    .n_params = 1,
    .params = {CR_SHAPE_PARAM},
    .infer = fill_infer_shape,
};

OPPERF_OP(ones) = {
    FILL_SHAPE_OP(ones, "tensor of ones of the given shape"),
    .n_params = 1,
    .params = {CR_SHAPE_PARAM},
    .infer = fill_infer_shape,
};

OPPERF_OP(full) = {
    FILL_SHAPE_OP(full, "tensor of the given shape filled with value"),
    .n_params = 2,
    .params = {CR_SHAPE_PARAM, FILL_VALUE_PARAM},
    .infer = full_infer,
};

OPPERF_OP(empty) = {
    FILL_COMMON,
    .name = "empty",
    .summary = "uninitialised tensor: forward allocates and frees an output-sized block through "
               "the tracked allocator without touching it (a framework's cost is the allocation)",
    .n_params = 1,
    .params = {CR_SHAPE_PARAM},
    .shapes = CR_SHAPE_SETS,
    .infer = fill_infer_shape,
    .forward = empty_forward,
    .reference = empty_reference,
    .bytes = empty_bytes,
};

OPPERF_OP(zeros_like) = {
    FILL_LIKE_OP(zeros_like, "zeros with the shape and dtype of x"),
    .infer = fill_infer_like,
};

OPPERF_OP(ones_like) = {
    FILL_LIKE_OP(ones_like, "ones with the shape and dtype of x"),
    .infer = fill_infer_like,
};

OPPERF_OP(full_like) = {
    FILL_LIKE_OP(full_like, "value with the shape and dtype of x"),
    .n_params = 1,
    .params = {FILL_VALUE_PARAM},
    .infer = full_like_infer,
};

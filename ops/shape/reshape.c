/* reshape.c: reshape, flatten, expand_dims and squeeze. Frameworks make these views of the
 * same storage; here every output is its own contiguous tensor, so the forward is one threaded
 * memcpy of the data (x -> y) and that copy is what is measured. The backward hands dx back
 * as a view of g (implementation materialize: the copy g -> dx).
 * The operators differ only in the output shape their infer derives. */
#include "shape/shape.h"

enum { P_SHAPE = 0 };   /* reshape */
enum { P_AXIS = 0 };    /* flatten, expand_dims, squeeze */

static int rs_need(opf_case *c) { return shp_need(c, 0, "x=1024x1024"); }

/* reshape: one -1 takes the remaining size; 0 is a zero-size axis. */
static int reshape_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  const opf_list *l = &c->list[P_SHAPE];
  char s[96];
  int rc = rs_need(c), free_at = -1;
  if (rc) return rc;
  int64_t shape[OPF_MAX_DIMS], known = 1, n = opf_numel(x);
  for (int k = 0; k < l->n; k++) {
    shape[k] = l->v[k];
    if (l->v[k] == -1) {
      if (free_at >= 0)
        return opf_case_error(c, OPF_EINVAL, "shape has more than one -1 (entries %d and %d)",
                              free_at, k);
      free_at = k;
    } else if (l->v[k] < 0) {
      return opf_case_error(c, OPF_EINVAL, "shape entry %d is %lld: sizes are >= 0 (or -1)", k,
                            (long long)l->v[k]);
    } else {
      known *= l->v[k];
    }
  }
  if (free_at >= 0) {
    if (!known || n % known)
      return opf_case_error(c, OPF_EINVAL, "cannot reshape x=%s (%lld elements) to shape with "
                            "-1: the other entries' product %lld does not divide it",
                            opf_shape_str(x, s, sizeof s), (long long)n, (long long)known);
    shape[free_at] = n / known, known = n;
  }
  if (known != n)
    return opf_case_error(c, OPF_EINVAL, "cannot reshape x=%s (%lld elements) to a shape of "
                          "%lld elements", opf_shape_str(x, s, sizeof s), (long long)n,
                          (long long)known);
  opf_set_out(c, 0, c->dtype, l->n, shape);
  return OPF_OK;
}

/* flatten: (prod of axes before axis, prod of the rest), as ONNX Flatten. */
static int flatten_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  char s[96];
  int rc = rs_need(c);
  if (rc) return rc;
  int a = (int)c->p[P_AXIS];
  if (c->p[P_AXIS] == OPF_AXIS_ALL)
    return opf_case_error(c, OPF_EINVAL, "axis=all is not allowed: flatten splits at one axis");
  if (a < -x->ndim || a > x->ndim)
    return opf_case_error(c, OPF_EINVAL, "axis=%d is out of range for x=%s (%d..%d)", a,
                          opf_shape_str(x, s, sizeof s), -x->ndim, x->ndim);
  if (a < 0) a += x->ndim;
  int64_t shape[2] = {opf_shape_numel(a, x->shape), opf_shape_numel(x->ndim - a, x->shape + a)};
  opf_set_out(c, 0, c->dtype, 2, shape);
  return OPF_OK;
}

/* expand_dims: a unit axis inserted at position axis of the output (-1: last). */
static int expand_dims_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  char s[96];
  int rc = rs_need(c);
  if (rc) return rc;
  if (x->ndim >= OPF_MAX_DIMS)
    return opf_case_error(c, OPF_EINVAL, "x=%s already has the maximum rank %d",
                          opf_shape_str(x, s, sizeof s), OPF_MAX_DIMS);
  int a = (int)c->p[P_AXIS];
  if (c->p[P_AXIS] == OPF_AXIS_ALL)
    return opf_case_error(c, OPF_EINVAL, "axis=all is not allowed: expand_dims inserts one axis");
  if (a < -(x->ndim + 1) || a > x->ndim)
    return opf_case_error(c, OPF_EINVAL, "axis=%d is out of range for x=%s: the new axis goes "
                          "at %d..%d", a, opf_shape_str(x, s, sizeof s), -(x->ndim + 1), x->ndim);
  if (a < 0) a += x->ndim + 1;
  int64_t shape[OPF_MAX_DIMS];
  for (int k = 0, j = 0; k <= x->ndim; k++) shape[k] = k == a ? 1 : x->shape[j++];
  opf_set_out(c, 0, c->dtype, x->ndim + 1, shape);
  return OPF_OK;
}

/* squeeze: drop the unit axis given, or every unit axis (axis=all). */
static int squeeze_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  char s[96];
  int rc = rs_need(c), a = -1;
  if (rc) return rc;
  if (c->p[P_AXIS] != OPF_AXIS_ALL) {
    if ((rc = shp_axis(c, "axis", c->p[P_AXIS], x, x->ndim, &a))) return rc;
    if (x->shape[a] != 1)
      return opf_case_error(c, OPF_EINVAL, "cannot squeeze axis %d of x=%s: it has %lld "
                            "elements, not 1", a, opf_shape_str(x, s, sizeof s),
                            (long long)x->shape[a]);
  }
  int64_t shape[OPF_MAX_DIMS];
  int nd = 0;
  for (int k = 0; k < x->ndim; k++)
    if (a >= 0 ? k != a : x->shape[k] != 1) shape[nd++] = x->shape[k];
  opf_set_out(c, 0, c->dtype, nd, shape);
  return OPF_OK;
}

/* Same bytes in the same order: forward copies x into y, backward g into dx. */
static int rs_forward(opf_case *c) {
  shp_copy(c->out[0].data, c->in[0].data, c->in[0].nbytes);
  return OPF_OK;
}
static int rs_backward(opf_case *c) {
  if (!opf_grad_is_view(c, 0)) shp_copy(c->gin[0].data, c->gout[0].data, c->gin[0].nbytes);
  return OPF_OK;
}
/* dx is g read in x's shape: the same elements in the same order, a view (alias) of g. */
static int rs_grad_view(const opf_case *c, int i, opf_view *v) { return opf_view_alias(c, i, 0, v); }
/* By the definition: row-major element k of x is element k of y. */
static int rs_reference(opf_case *c) {
  const size_t es = opf_dtype_size(c->dtype);
  for (int64_t k = 0; k < opf_numel(&c->in[0]); k++)
    memcpy((char *)c->out[0].data + k * (int64_t)es, (const char *)c->in[0].data + k * (int64_t)es, es);
  return OPF_OK;
}
/* Each pass reads and writes the tensor once. */
static double rs_bytes(const opf_case *c, opf_pass p) {
  return lin_move_bytes(c, opf_numel(&c->in[0]), p);
}

#define RS_X {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1, \
              .help = "input tensor"}
#define RS_AXIS(d, lo, h) {.name = "axis", .type = OPF_P_AXIS, .def = d, .min = lo, \
                           .max = OPF_MAX_DIMS, .help = h}
#define RS_COMMON                                                                           \
  .abi = OPF_OP_ABI, .category = "shape", .dtypes = OPF_DT_ALL, .n_in = 1, .in = {RS_X},    \
  .n_out = 1, .out = {"y"}, .forward = rs_forward, .backward = rs_backward,      \
  .grad_view = rs_grad_view,                  \
  .reference = rs_reference, .flops = lin_move_flops, .bytes = rs_bytes

OPPERF_OP(reshape) = {
    RS_COMMON,
    .name = "reshape",
    .summary = "same elements in a new shape (one -1 entry takes the rest); a contiguous copy",
    .n_params = 1,
    .params = {{.name = "shape", .type = OPF_P_LIST, .defs = "-1", .min = -1, .max = 1e15,
                .help = "target shape, e.g. 512,-1 (one -1: the remaining size)"}},
    .shapes = {{"standard", "x=1024x1024 shape=512,-1"},
               {"standard", "x=32x64x56x56 shape=32,-1"},
               {"skewed", "x=10000x10 shape=10,-1"},
               {"skewed", "x=10x10000 shape=-1,10"},
               {"skewed", "x=32x3x256x256 shape=96,256,256"},
               {"small", "x=16x16 shape=256"},
               {"small", "x=1x64 shape=8,-1"},
               {"small", "x=37x3 shape=3,37"},
               {"small", "x=2x3x4 shape=4,1,-1"},
               {"small", "x=() shape=1,1"},
               {"test", "x=301x517 shape=-1"},
               {"test", "x=3x67x45x37 shape=201,1665"},
               {"large", "x=8192x8192 shape=4096,-1"},
               {"huge", "x=46341x46341 shape=-1"}},
    .infer = reshape_infer,
};

OPPERF_OP(flatten) = {
    RS_COMMON,
    .name = "flatten",
    .summary = "collapse to 2-D (axes before axis, the rest); a contiguous copy",
    .n_params = 1,
    .params = {RS_AXIS(1, -OPF_MAX_DIMS, "output rows are the product of the axes before it")},
    .shapes = {{"standard", "x=32x64x56x56"},
               {"standard", "x=1024x32x32"},
               {"skewed", "x=10000x10 axis=0"},
               {"skewed", "x=32x3x256x256 axis=2"},
               {"small", "x=16x16 axis=0"},
               {"small", "x=2x3x4"},
               {"small", "x=2x3x4 axis=-1"},
               {"small", "x=5 axis=1"},
               {"test", "x=7x61x67x5 axis=2"},
               {"large", "x=64x128x128x64"},
               {"huge", "x=2x46341x46341"}},
    .infer = flatten_infer,
};

OPPERF_OP(expand_dims) = {
    RS_COMMON,
    .name = "expand_dims",
    .summary = "insert a unit axis; a contiguous copy",
    .n_params = 1,
    .params = {RS_AXIS(0, -OPF_MAX_DIMS - 1, "position of the new axis in the output (-1: last)")},
    .shapes = {{"standard", "x=1024x1024 axis=0"},
               {"standard", "x=64x56x56 axis=1"},
               {"skewed", "x=10000x10 axis=-1"},
               {"skewed", "x=10x10000 axis=1"},
               {"small", "x=16x16 axis=1"},
               {"small", "x=37x3 axis=-1"},
               {"small", "x=() axis=0"},
               {"test", "x=301x517 axis=2"},
               {"large", "x=8192x8192 axis=0"},
               {"huge", "x=46341x46341 axis=0"}},
    .infer = expand_dims_infer,
};

OPPERF_OP(squeeze) = {
    RS_COMMON,
    .name = "squeeze",
    .summary = "drop a unit axis (or all of them); a contiguous copy",
    .n_params = 1,
    .params = {RS_AXIS(OPF_AXIS_ALL, -OPF_MAX_DIMS, "unit axis to drop, or all unit axes")},
    .shapes = {{"standard", "x=1024x1x1024"},
               {"standard", "x=32x64x56x56x1 axis=-1"},
               {"skewed", "x=10000x10x1"},
               {"skewed", "x=1x10x10000 axis=0"},
               {"small", "x=16x1x16"},
               {"small", "x=1x64 axis=0"},
               {"small", "x=1x1x1"},
               {"small", "x=37x1x3x1 axis=3"},
               {"test", "x=301x1x517"},
               {"large", "x=8192x1x8192"},
               {"huge", "x=46341x1x46341"}},
    .infer = squeeze_infer,
};

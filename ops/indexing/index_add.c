/* index_add.c: y = x with y[o, idx[j], :] += values[o, j, :] along an axis (PyTorch's
 * index_add; repeated indices accumulate). Forward is the family's destination-owned
 * scatter-add seeded with x; backward is dx = g (handed back as g itself: a gradient view,
 * as torch's autograd does) and dvalues = g gathered at the indices (the family's row
 * gather). */
#include "indexing.h"

enum { IN_X = 0, IN_IDX = 1, IN_V = 2 };
enum { P_AXIS = 0 };

static int ia_axis(const opf_case *c) {
  return c->p[P_AXIS] == OPF_AXIS_ALL ? -1 : opf_axis(c->p[P_AXIS], c->in[IN_X].ndim);
}

static ix_dims ia_dims(const opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  return ix_dims_at(x->ndim, x->shape, ia_axis(c), opf_numel(&c->in[IN_IDX]),
                    opf_dtype_size(c->dtype));
}

static int ia_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *idx = &c->in[IN_IDX], *v = &c->in[IN_V];
  char sx[96], si[96], sv[96];
  if (x->ndim < 1)
    return opf_case_error(c, OPF_EINVAL, "x needs a shape of rank >= 1 (e.g. x=1024x1024 indices=1024)");
  int axis = 0, rc = ix_axis_param(c, c->p[P_AXIS], x, "index_add adds along one axis", &axis);
  if (rc) return rc;
  if (idx->ndim < 0) opf_tensor_set_shape(idx, OPF_I64, 1, &x->shape[axis]);
  if (idx->ndim != 1)
    return opf_case_error(c, OPF_EINVAL, "indices=%s must be 1-D", opf_shape_str(idx, si, sizeof si));
  opf_tensor want = *x; /* values: x's shape with the axis replaced by the index count */
  want.shape[axis] = idx->shape[0];
  opf_tensor_set_shape(&want, c->dtype, x->ndim, want.shape);
  if (v->ndim < 0) *v = want;
  if (opf_same_shape(c, v, &want, "values", "want"))
    return opf_case_error(c, OPF_EINVAL, "values=%s must be x=%s with axis %d of size %lld (indices=%s)",
                          opf_shape_str(v, sv, sizeof sv), opf_shape_str(x, sx, sizeof sx), axis,
                          (long long)idx->shape[0], opf_shape_str(idx, si, sizeof si));
  if (x->shape[axis] == 0 && idx->shape[0] > 0)
    return opf_case_error(c, OPF_EINVAL, "cannot add at indices=%s into the empty axis %d of x=%s",
                          opf_shape_str(idx, si, sizeof si), axis, opf_shape_str(x, sx, sizeof sx));
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  return OPF_OK;
}

static int fill_indices(opf_case *c, int i, opf_rng *r) {
  (void)r;
  ix_fill(c, i, c->in[IN_X].shape[ia_axis(c)]);
  return OPF_OK;
}

static int ia_forward(opf_case *c) {
  ix_dims d = ia_dims(c);
  int rc = ix_check(c, c->in[IN_IDX].data, d.n, d.A, "index");
  if (rc) return rc;
  ix_scatter_add(&d, c->dtype, c->in[IN_IDX].data, c->in[IN_V].data, c->out[0].data,
                 c->in[IN_X].data);
  return OPF_OK;
}

static int ia_backward(opf_case *c) {
  ix_dims d = ia_dims(c);
  int rc = ix_check(c, c->in[IN_IDX].data, d.n, d.A, "index");
  if (rc) return rc;
  if (c->gin[IN_X].data && !opf_grad_is_view(c, IN_X)) /* materialize: dx written */
    ix_bulk(c->gin[IN_X].data, c->gout[0].data, c->gin[IN_X].nbytes);
  if (c->gin[IN_V].data) ix_gather(&d, c->in[IN_IDX].data, c->gout[0].data, c->gin[IN_V].data);
  return OPF_OK;
}

/* dx is g itself (same shape): a view, no data moves. */
static int ia_grad_view(const opf_case *c, int i, opf_view *v) {
  return i == IN_X && opf_view_alias(c, i, 0, v);
}

/* By the definition: copy x, then add values element by element in index order. */
static int ia_reference(opf_case *c) {
  ix_dims d = ia_dims(c);
  const int64_t *idx = c->in[IN_IDX].data;
  char *y = c->out[0].data;
  const char *v = c->in[IN_V].data;
  memcpy(y, c->in[IN_X].data, c->out[0].nbytes);
  for (int64_t j = 0; j < d.n; j++)
    if (idx[j] < 0 || idx[j] >= d.A)
      return opf_case_error(c, OPF_EINVAL, "index %lld out of range", (long long)idx[j]);
  for (int64_t o = 0; o < d.outer; o++)
    for (int64_t j = 0; j < d.n; j++)
      for (int64_t i = 0; i < d.inner; i++)
        ix_add_elem(c->dtype, y + (size_t)((o * d.A + idx[j]) * d.inner + i) * d.es,
                    v + (size_t)((o * d.n + j) * d.inner + i) * d.es);
  return OPF_OK;
}

/* Forward adds each value once, reading x, values and the indices and writing y; backward
 * gathers g's rows into dvalues, and copies g to dx unless dx is a view of g. */
static double ia_flops(const opf_case *c, opf_pass p) {
  return opf_pass_sum(p, (double)opf_numel(&c->in[IN_V]), 0);
}

static double ia_bytes(const opf_case *c, opf_pass p) {
  double es = (double)opf_dtype_size(c->dtype), idx = 8.0 * (double)opf_numel(&c->in[IN_IDX]);
  double x = es * (double)opf_numel(&c->in[IN_X]), v = es * (double)opf_numel(&c->in[IN_V]);
  double dx = opf_case_grad_view(c, IN_X, NULL) ? 0 : 2 * x;
  return opf_pass_sum(p, idx + 2 * x + v, idx + dx + 2 * v);
}

OPPERF_OP(index_add) = {
    .abi = OPF_OP_ABI,
    .name = "index_add",
    .category = "indexing",
    .summary = "y = x; y[..., idx[j], ...] += values[..., j, ...] along an axis (repeats accumulate)",
    .dtypes = OPF_DT_ALL,
    .n_in = 3,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,
            .help = "data added into"},
           {.name = "indices", .dtype = OPF_I64, .fill = fill_indices,
            .help = "int64 1-D positions along axis, uniform in [0, x.shape[axis]) so repeats "
                    "occur (default: x.shape[axis] of them)"},
           {.name = "values", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,
            .help = "rows to add: x's shape with the axis of size len(indices) (default)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "axis", .type = OPF_P_AXIS, .def = 0, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "axis the indices select along"}},
    .shapes = {{"standard", "x=1024x1024 indices=1024"},
               {"standard", "x=1024x1024 indices=1024 axis=1"},
               {"skewed", "x=10000x10 indices=10000"},
               {"skewed", "x=10x10000 indices=10000 axis=1"},
               {"skewed", "x=100000x16 indices=1000"},
               {"small", "x=16x16 indices=8"},
               {"small", "x=1x64 indices=20 axis=1"},
               {"small", "x=37x3 indices=50"},
               {"small", "x=3x4x5 indices=6 axis=1"},
               {"small", "x=7 indices=9"},
               {"test", "x=301x517 indices=700"},
               {"test", "x=517x301 indices=517 axis=1"},
               {"test", "x=3x401x71 indices=211 axis=1"},
               {"large", "x=8192x8192 indices=8192"}},
    .infer = ia_infer,
    .forward = ia_forward,
    .backward = ia_backward,
    .grad_view = ia_grad_view,
    .reference = ia_reference,
    .flops = ia_flops,
    .bytes = ia_bytes,
};

/* take.c: gather along an axis, y = x[..., indices, ...] (y's shape is x.shape[:axis] +
 * indices.shape + x.shape[axis+1:]), and its gradient, a scatter-add of g into dx that is
 * correct with repeated indices. Threads own disjoint destination rows in both passes, so the
 * scatter needs no atomics. */
#include "indexing.h"

enum { IN_X = 0, IN_IDX = 1 };
enum { P_AXIS = 0 };

static int take_axis(const opf_case *c) {
  return c->p[P_AXIS] == OPF_AXIS_ALL ? -1 : opf_axis(c->p[P_AXIS], c->in[IN_X].ndim);
}

static ix_dims take_dims_of(const opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  return ix_dims_at(x->ndim, x->shape, take_axis(c), opf_numel(&c->in[IN_IDX]),
                    opf_dtype_size(c->dtype));
}

static int take_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *idx = &c->in[IN_IDX];
  char sx[96], si[96];
  if (x->ndim < 1)
    return opf_case_error(c, OPF_EINVAL, "x needs a shape of rank >= 1 (e.g. x=1024x1024 indices=1024)");
  int axis = 0, rc = ix_axis_param(c, c->p[P_AXIS], x, "take gathers along one axis", &axis);
  if (rc) return rc;
  if (idx->ndim < 0) opf_tensor_set_shape(idx, OPF_I64, 1, &x->shape[axis]); /* one per row */
  if (x->ndim - 1 + idx->ndim > OPF_MAX_DIMS)
    return opf_case_error(c, OPF_EINVAL, "x=%s with indices=%s gives rank %d, above %d",
                          opf_shape_str(x, sx, sizeof sx), opf_shape_str(idx, si, sizeof si),
                          x->ndim - 1 + idx->ndim, OPF_MAX_DIMS);
  if (x->shape[axis] == 0 && opf_numel(idx) > 0)
    return opf_case_error(c, OPF_EINVAL, "cannot take indices=%s from the empty axis %d of x=%s",
                          opf_shape_str(idx, si, sizeof si), axis, opf_shape_str(x, sx, sizeof sx));
  int64_t shape[OPF_MAX_DIMS];
  int nd = 0;
  for (int k = 0; k < axis; k++) shape[nd++] = x->shape[k];
  for (int k = 0; k < idx->ndim; k++) shape[nd++] = idx->shape[k];
  for (int k = axis + 1; k < x->ndim; k++) shape[nd++] = x->shape[k];
  opf_set_out(c, 0, c->dtype, nd, shape);
  return OPF_OK;
}

static int fill_indices(opf_case *c, int i, opf_rng *r) {
  (void)r;
  ix_fill(c, i, c->in[IN_X].shape[take_axis(c)]);
  return OPF_OK;
}

/* Forward: a gather of rows of `inner` elements, threaded over output rows. */
static int take_forward(opf_case *c) {
  ix_dims d = take_dims_of(c);
  int rc = ix_check(c, c->in[IN_IDX].data, d.n, d.A, "index");
  if (rc) return rc;
  ix_gather(&d, c->in[IN_IDX].data, c->in[IN_X].data, c->out[0].data);
  return OPF_OK;
}

/* Backward: dx = 0, then dx[o, idx[j], :] += g[o, j, :], threads owning dx rows. */
static int take_backward(opf_case *c) {
  ix_dims d = take_dims_of(c);
  int rc = ix_check(c, c->in[IN_IDX].data, d.n, d.A, "index");
  if (rc) return rc;
  ix_scatter_add(&d, c->dtype, c->in[IN_IDX].data, c->gout[0].data, c->gin[IN_X].data, NULL);
  return OPF_OK;
}

/* By the definition, element by element. */
static int take_reference(opf_case *c) {
  ix_dims d = take_dims_of(c);
  const int64_t *idx = c->in[IN_IDX].data;
  for (int64_t j = 0; j < d.n; j++)
    if (idx[j] < 0 || idx[j] >= d.A)
      return opf_case_error(c, OPF_EINVAL, "index %lld out of range", (long long)idx[j]);
  for (int64_t o = 0; o < d.outer; o++)
    for (int64_t j = 0; j < d.n; j++)
      for (int64_t i = 0; i < d.inner; i++) {
        int64_t src = (o * d.A + idx[j]) * d.inner + i, dst = (o * d.n + j) * d.inner + i;
        memcpy((char *)c->out[0].data + (size_t)dst * d.es,
               (const char *)c->in[IN_X].data + (size_t)src * d.es, d.es);
      }
  return OPF_OK;
}

static double take_flops(const opf_case *c, opf_pass p) {
  double adds = (double)opf_numel(&c->out[0]); /* backward: one add per element of g */
  return opf_pass_sum(p, 0, adds);
}

/* Forward reads the indices and the gathered rows and writes y; backward reads the indices
 * and g and writes all of dx (zeroed, then added into). */
static double take_bytes(const opf_case *c, opf_pass p) {
  double es = (double)opf_dtype_size(c->dtype);
  double idx = 8.0 * (double)opf_numel(&c->in[IN_IDX]), y = es * (double)opf_numel(&c->out[0]);
  double x = es * (double)opf_numel(&c->in[IN_X]);
  double fwd = idx + 2 * y, bwd = idx + y + x;
  return opf_pass_sum(p, fwd, bwd);
}

OPPERF_OP(take) = {
    .abi = OPF_OP_ABI,
    .name = "take",
    .category = "indexing",
    .summary = "gather along an axis: y = x[..., indices, ...]",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "data to gather from"},
           {.name = "indices", .dtype = OPF_I64, .fill = fill_indices,
            .help = "int64 positions along axis, valid in [0, x.shape[axis]); default one per row"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "axis", .type = OPF_P_AXIS, .def = 0, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "axis of x the indices select along"}},
    .shapes = {{"standard", "x=1024x1024 indices=1024"},
               {"skewed", "x=10000x10 indices=10000"},
               {"skewed", "x=10x10000 indices=10000 axis=1"},
               {"skewed", "x=10000x10 indices=10 axis=1"},
               {"skewed", "x=100000x16 indices=1000"},
               {"small", "x=16x16 indices=8"},
               {"small", "x=1x64 indices=5"},
               {"small", "x=37x3 indices=50"},
               {"small", "x=4x5 indices=3 axis=1"},
               {"small", "x=3x4x5 indices=2x3 axis=1"},
               {"small", "x=7 indices=4"},
               {"small", "x=5x6 indices=2x2 axis=-1"},
               {"test", "x=301x517 indices=700"},
               {"test", "x=517x301 indices=517 axis=1"},
               {"test", "x=3x401x71 indices=211 axis=1"},
               {"large", "x=8192x8192 indices=8192"}},
    .infer = take_infer,
    .forward = take_forward,
    .backward = take_backward,
    .reference = take_reference,
    .flops = take_flops,
    .bytes = take_bytes,
};

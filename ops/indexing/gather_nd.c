/* gather_nd.c: gather_nd, y[m, ...] = x[idx[0, m], ..., idx[K-1, m], ...] with indices (K, M...)
 * addressing the first K dims of x, and its adjoint scatter_nd, y = zeros(shape) with
 * y[idx[:, m], ...] += values[m, ...] (duplicates accumulate). Both first turn the K
 * coordinates into flat row numbers of the (prod(dims[:K]), prod(dims[K:])) view (threaded,
 * checked, kept in the workspace for backward), then reuse the family's row gather and
 * destination-owned scatter-add. */
#include "indexing.h"

enum { IN_X = 0, IN_IDX = 1 };          /* gather_nd: x, indices; scatter_nd: values, indices */
enum { P_SHAPE = 0 };                   /* scatter_nd */

/* The K-dim target and how it is addressed. */
typedef struct nd_geom {
  int K;
  int64_t dims[OPF_MAX_DIMS]; /* the addressed dims */
  ix_dims d;                  /* outer 1, A = prod(dims), inner = row elements, n = M */
} nd_geom;

static int nd_scatter(const opf_case *c) { return !strcmp(c->op->name, "scatter_nd"); }

/* The tensor the indices address: x for gather_nd, the output shape for scatter_nd. */
static nd_geom nd_geom_of(const opf_case *c) {
  const opf_tensor *idx = &c->in[IN_IDX];
  nd_geom g;
  int nd = nd_scatter(c) ? c->list[P_SHAPE].n : c->in[IN_X].ndim;
  const int64_t *shape = nd_scatter(c) ? c->list[P_SHAPE].v : c->in[IN_X].shape;
  g.K = (int)idx->shape[0];
  memcpy(g.dims, shape, sizeof(int64_t) * (size_t)g.K);
  g.d.outer = 1;
  g.d.A = opf_shape_numel(g.K, shape);
  g.d.inner = opf_shape_numel(nd - g.K, shape + g.K);
  g.d.n = opf_shape_numel(idx->ndim - 1, idx->shape + 1);
  g.d.es = opf_dtype_size(c->dtype);
  return g;
}

/* Flat rows into ws; a coordinate outside its dim is an error naming it. */
static int nd_flatten(opf_case *c, const nd_geom *g) {
  return ix_flatten(c, c->in[IN_IDX].data, g->K, g->d.n, g->dims, c->ws, "indices");
}

static int gnd_forward(opf_case *c) {
  nd_geom g = nd_geom_of(c);
  int rc = nd_flatten(c, &g);
  if (rc) return rc;
  ix_gather(&g.d, c->ws, c->in[IN_X].data, c->out[0].data);
  return OPF_OK;
}

/* dx = 0; dx[flat[m], :] += g[m, :] (flat rows from forward's workspace). */
static int gnd_backward(opf_case *c) {
  nd_geom g = nd_geom_of(c);
  ix_scatter_add(&g.d, c->dtype, c->ws, c->gout[0].data, c->gin[IN_X].data, NULL);
  return OPF_OK;
}

static int snd_forward(opf_case *c) {
  nd_geom g = nd_geom_of(c);
  int rc = nd_flatten(c, &g);
  if (rc) return rc;
  ix_scatter_add(&g.d, c->dtype, c->ws, c->in[IN_X].data, c->out[0].data, NULL);
  return OPF_OK;
}

/* dvalues[m, :] = g[flat[m], :]. */
static int snd_backward(opf_case *c) {
  nd_geom g = nd_geom_of(c);
  ix_gather(&g.d, c->ws, c->gout[0].data, c->gin[IN_X].data);
  return OPF_OK;
}

/* By the definition, element by element (scatter_nd: zero, then add in index order). */
static int nd_reference(opf_case *c) {
  nd_geom g = nd_geom_of(c);
  const int64_t *idx = c->in[IN_IDX].data;
  const int sc = nd_scatter(c);
  const size_t es = g.d.es;
  char *src = c->in[IN_X].data, *dst = c->out[0].data;
  if (sc) memset(dst, 0, c->out[0].nbytes);
  for (int64_t m = 0; m < g.d.n; m++) {
    int64_t f = 0;
    for (int k = 0; k < g.K; k++) {
      int64_t v = idx[k * g.d.n + m];
      if (v < 0 || v >= g.dims[k]) return opf_case_error(c, OPF_EINVAL, "index %lld out of range", (long long)v);
      f = f * g.dims[k] + v;
    }
    for (int64_t i = 0; i < g.d.inner; i++) {
      size_t a = (size_t)(f * g.d.inner + i) * es, b = (size_t)(m * g.d.inner + i) * es;
      if (sc) ix_add_elem(c->dtype, dst + a, src + b);
      else memcpy(dst + b, src + a, es);
    }
  }
  return OPF_OK;
}

/* Shared checks: indices (K, M...) with 1 <= K <= rank of the addressed shape. */
static int nd_check_idx(opf_case *c, int rank, const char *what) {
  const opf_tensor *idx = &c->in[IN_IDX];
  char si[96];
  if (idx->ndim < 1 || idx->shape[0] < 1 || idx->shape[0] > rank)
    return opf_case_error(c, OPF_EINVAL, "indices=%s must be (K, M...) with 1 <= K <= %d (the rank of %s)",
                          opf_shape_str(idx, si, sizeof si), rank, what);
  return OPF_OK;
}

static int gnd_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *idx = &c->in[IN_IDX];
  char sx[96], si[96];
  if (x->ndim < 1) return opf_case_error(c, OPF_EINVAL, "x needs a shape of rank >= 1 (e.g. x=1024x1024)");
  if (idx->ndim < 0) { /* default: row gather, one index per row of x */
    int64_t s[2] = {x->ndim > 1 ? x->ndim - 1 : 1, x->shape[0]};
    opf_tensor_set_shape(idx, OPF_I64, 2, s);
  }
  int rc = nd_check_idx(c, x->ndim, "x");
  if (rc) return rc;
  int K = (int)idx->shape[0], nd = 0;
  if (idx->ndim - 1 + x->ndim - K > OPF_MAX_DIMS)
    return opf_case_error(c, OPF_EINVAL, "x=%s with indices=%s gives rank above %d",
                          opf_shape_str(x, sx, sizeof sx), opf_shape_str(idx, si, sizeof si), OPF_MAX_DIMS);
  if (opf_shape_numel(K, x->shape) == 0 && opf_numel(idx) > 0)
    return opf_case_error(c, OPF_EINVAL, "cannot gather from x=%s: its first %d dims are empty",
                          opf_shape_str(x, sx, sizeof sx), K);
  int64_t shape[OPF_MAX_DIMS];
  for (int k = 1; k < idx->ndim; k++) shape[nd++] = idx->shape[k];
  for (int k = K; k < x->ndim; k++) shape[nd++] = x->shape[k];
  opf_set_out(c, 0, c->dtype, nd, shape);
  c->ws_bytes = sizeof(int64_t) * (size_t)opf_shape_numel(idx->ndim - 1, idx->shape + 1);
  return OPF_OK;
}

static int snd_infer(opf_case *c) {
  opf_tensor *v = &c->in[IN_X], *idx = &c->in[IN_IDX];
  const opf_list *shape = &c->list[P_SHAPE];
  char sv[96], si[96];
  if (shape->n < 1)
    return opf_case_error(c, OPF_EINVAL, "scatter_nd needs the output shape (e.g. shape=1024x1024)");
  if (v->ndim < 0) return opf_case_error(c, OPF_EINVAL, "input 'values' needs a shape (e.g. values=1024x1024)");
  if (idx->ndim < 0) { /* default: values (M, rest) scattered over the leading dims */
    int64_t s[2] = {shape->n - (v->ndim > 0 ? v->ndim - 1 : 0), v->ndim > 0 ? v->shape[0] : 1};
    if (s[0] < 1) s[0] = 1;
    opf_tensor_set_shape(idx, OPF_I64, 2, s);
  }
  int rc = nd_check_idx(c, shape->n, "shape");
  if (rc) return rc;
  int K = (int)idx->shape[0];
  opf_tensor want; /* values: indices' M dims + shape[K:] */
  int64_t ws[OPF_MAX_DIMS * 2];
  int nd = 0;
  for (int k = 1; k < idx->ndim; k++) ws[nd++] = idx->shape[k];
  for (int k = K; k < shape->n; k++) ws[nd++] = shape->v[k];
  if (nd > OPF_MAX_DIMS)
    return opf_case_error(c, OPF_EINVAL, "indices=%s with %d-D shape gives values of rank above %d",
                          opf_shape_str(idx, si, sizeof si), shape->n, OPF_MAX_DIMS);
  opf_tensor_set_shape(&want, c->dtype, nd, ws);
  char sw[96];
  if (opf_same_shape(c, v, &want, "values", "want"))
    return opf_case_error(c, OPF_EINVAL, "values=%s must be %s (indices' M dims %s + shape[%d:])",
                          opf_shape_str(v, sv, sizeof sv), opf_shape_str(&want, sw, sizeof sw),
                          opf_shape_str(idx, si, sizeof si), K);
  if (opf_shape_numel(K, shape->v) == 0 && opf_numel(idx) > 0)
    return opf_case_error(c, OPF_EINVAL, "cannot scatter into shape with empty leading dims");
  opf_set_out(c, 0, c->dtype, shape->n, shape->v);
  c->ws_bytes = sizeof(int64_t) * (size_t)opf_shape_numel(idx->ndim - 1, idx->shape + 1);
  return OPF_OK;
}

static int fill_indices(opf_case *c, int i, opf_rng *r) {
  (void)r;
  nd_geom g = nd_geom_of(c);
  ix_fill_coords(c, i, g.dims);
  return OPF_OK;
}

/* The moved rows count once each way; the indices are K int64 per row. The gathering pass
 * (gather_nd forward, scatter_nd backward) reads and writes M rows; the scattering pass reads
 * M rows and writes the whole destination, adding each row once. */
static double nd_model(const opf_case *c, opf_pass p, int bytes) {
  nd_geom g = nd_geom_of(c);
  double es = (double)g.d.es, rows = (double)g.d.n * (double)g.d.inner;
  double dst = es * (double)g.d.A * (double)g.d.inner, idx = 8.0 * g.K * (double)g.d.n;
  double gather = bytes ? idx + 2 * es * rows : 0, scatter = bytes ? idx + es * rows + dst : rows;
  return nd_scatter(c) ? opf_pass_sum(p, scatter, gather) : opf_pass_sum(p, gather, scatter);
}
static double nd_flops(const opf_case *c, opf_pass p) { return nd_model(c, p, 0); }
static double nd_bytes(const opf_case *c, opf_pass p) { return nd_model(c, p, 1); }

OPPERF_OP(gather_nd) = {
    .abi = OPF_OP_ABI,
    .name = "gather_nd",
    .category = "indexing",
    .summary = "gather by K-dim coordinates: y[m, ...] = x[idx[0, m], ..., idx[K-1, m], ...]",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,
            .help = "data to gather from"},
           {.name = "indices", .dtype = OPF_I64, .fill = fill_indices,
            .help = "int64 (K, M...): coordinates into x's first K dims (default (rank-1, x.shape[0]))"}},
    .n_out = 1,
    .out = {"y"},
    .shapes = {{"standard", "x=1024x1024 indices=1x1024"},
               {"standard", "x=1024x1024 indices=2x1024"},
               {"skewed", "x=10000x10 indices=1x10000"},
               {"skewed", "x=10x10000 indices=2x10000"},
               {"skewed", "x=100000x16 indices=1x1000"},
               {"skewed", "x=32x64x56x56 indices=2x1024"},
               {"small", "x=16x16 indices=1x8"},
               {"small", "x=16x16 indices=2x20"},
               {"small", "x=1x64 indices=2x5"},
               {"small", "x=37x3 indices=1x50"},
               {"small", "x=3x4x5 indices=2x2x3"},
               {"small", "x=7 indices=1x4"},
               {"small", "x=5x6 indices=2"},
               {"test", "x=301x517 indices=1x700"},
               {"test", "x=3x401x71 indices=2x50001"},
               {"large", "x=8192x8192 indices=1x8192"},
               {"large", "x=8192x8192 indices=2x8388608"}},
    .infer = gnd_infer,
    .forward = gnd_forward,
    .backward = gnd_backward,
    .reference = nd_reference,
    .flops = nd_flops,
    .bytes = nd_bytes,
};

OPPERF_OP(scatter_nd) = {
    .abi = OPF_OP_ABI,
    .name = "scatter_nd",
    .category = "indexing",
    .summary = "y = zeros(shape); y[idx[:, m], ...] += values[m, ...] (duplicates accumulate)",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "values", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,
            .help = "rows to scatter: indices' M dims + shape[K:]"},
           {.name = "indices", .dtype = OPF_I64, .fill = fill_indices,
            .help = "int64 (K, M...): coordinates into shape's first K dims, uniform, so "
                    "repeats occur and accumulate"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "shape", .type = OPF_P_LIST, .defs = "none", .min = 0, .max = 1e15,
                .help = "output shape (required)"}},
    .shapes = {{"standard", "values=1024x1024 indices=1x1024 shape=1024x1024"},
               {"standard", "values=1024 indices=2x1024 shape=1024x1024"},
               {"skewed", "values=10000x10 indices=1x10000 shape=10000x10"},
               {"skewed", "values=10000 indices=2x10000 shape=10x10000"},
               {"skewed", "values=1000x16 indices=1x1000 shape=100000x16"},
               {"small", "values=8x16 indices=1x8 shape=16x16"},
               {"small", "values=20 indices=2x20 shape=16x16"},
               {"small", "values=5 indices=2x5 shape=1x64"},
               {"small", "values=50x3 indices=1x50 shape=37x3"},
               {"small", "values=2x3x5 indices=2x2x3 shape=3x4x5"},
               {"small", "values=4 indices=1x4 shape=7"},
               {"test", "values=700x517 indices=1x700 shape=301x517"},
               {"test", "values=50001x71 indices=2x50001 shape=3x401x71"},
               {"large", "values=8192x8192 indices=1x8192 shape=8192x8192"},
               {"large", "values=8388608 indices=2x8388608 shape=8192x8192"}},
    .infer = snd_infer,
    .forward = snd_forward,
    .backward = snd_backward,
    .reference = nd_reference,
    .flops = nd_flops,
    .bytes = nd_bytes,
};

/* take.c: gather along an axis, y = x[..., indices, ...] (y's shape is x.shape[:axis] +
 * indices.shape + x.shape[axis+1:]), and its gradient, a scatter-add of g into dx that is
 * correct with repeated indices. Threads own disjoint destination rows in both passes, so the
 * scatter needs no atomics. */
#include "linalg/linalg.h"

enum { IN_X = 0, IN_IDX = 1 };
enum { P_AXIS = 0 };

/* x seen as (outer, A, inner) around the axis; n indices. */
typedef struct {
  int64_t outer, A, inner, n;
  size_t es;
} take_dims;

static int take_axis(const opf_case *c) {
  return c->p[P_AXIS] == OPF_AXIS_ALL ? -1 : opf_axis(c->p[P_AXIS], c->in[IN_X].ndim);
}

static take_dims take_dims_of(const opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  int axis = take_axis(c);
  take_dims d = {opf_shape_numel(axis, x->shape), x->shape[axis],
                 opf_shape_numel(x->ndim - axis - 1, x->shape + axis + 1),
                 opf_numel(&c->in[IN_IDX]), opf_dtype_size(c->dtype)};
  return d;
}

static int take_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *idx = &c->in[IN_IDX];
  char sx[96], si[96];
  if (x->ndim < 1)
    return opf_case_error(c, OPF_EINVAL, "x needs a shape of rank >= 1 (e.g. x=1024x1024 indices=1024)");
  if (c->p[P_AXIS] == OPF_AXIS_ALL)
    return opf_case_error(c, OPF_EINVAL, "axis=all is not allowed: take gathers along one axis");
  int axis = take_axis(c);
  if (axis < 0)
    return opf_case_error(c, OPF_EINVAL, "axis=%d is out of range for x=%s (rank %d)",
                          (int)c->p[P_AXIS], opf_shape_str(x, sx, sizeof sx), x->ndim);
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
  opf_fill_index(&c->in[i], c->seed, (uint64_t)i, c->in[IN_X].shape[take_axis(c)]);
  return OPF_OK;
}

/* Indices come from the user's data in general: a bad one is an error, never a stray read. */
static int take_check(opf_case *c, const take_dims *d) {
  const int64_t *idx = c->in[IN_IDX].data;
  int64_t bad = -1;
  for (int64_t j = 0; j < d->n; j++)
    if ((uint64_t)idx[j] >= (uint64_t)d->A) bad = bad < 0 ? j : bad;
  if (bad >= 0)
    return opf_case_error(c, OPF_EINVAL, "index %lld at position %lld is outside [0, %lld)",
                          (long long)idx[bad], (long long)bad, (long long)d->A);
  return OPF_OK;
}

/* ---- forward: a gather of rows of `inner` elements ---- */
typedef struct {
  const opf_case *c;
  take_dims d;
} take_ctx;

/* inner == 1 (the last axis): a pure element gather per outer row, vectorised with gathers. */
#define TAKE_GATHER(T, sfx)                                                                    \
  OPF_VEC static void gather_##sfx(const T *restrict x, const int64_t *restrict idx,          \
                                   T *restrict y, int64_t n) {                                 \
    for (int64_t j = 0; j < n; j++) y[j] = x[idx[j]];                                          \
  }
TAKE_GATHER(uint32_t, 4)
TAKE_GATHER(uint64_t, 8)

/* Output rows [lo, hi) of the (outer * n) rows of `inner` elements. */
static void take_rows(int64_t lo, int64_t hi, void *p) {
  const take_ctx *t = p;
  const take_dims *d = &t->d;
  const int64_t *idx = t->c->in[IN_IDX].data;
  const char *x = t->c->in[IN_X].data;
  char *y = t->c->out[0].data;
  const size_t es = d->es, row = (size_t)d->inner * es;
  int64_t o = lo / d->n, j0 = lo % d->n; /* one division per range, not per row */
  for (int64_t r = lo; r < hi; o++, j0 = 0) {
    int64_t j1 = d->n < j0 + (hi - r) ? d->n : j0 + (hi - r);
    const char *xo = x + (size_t)(o * d->A) * row;
    char *yo = y + (size_t)(o * d->n) * row;
    if (d->inner == 1 && j1 - j0 < 16 && es == 4) /* a few elements: inline, no call */
      for (int64_t j = j0; j < j1; j++) ((uint32_t *)yo)[j] = ((const uint32_t *)xo)[idx[j]];
    else if (d->inner == 1 && j1 - j0 < 16)
      for (int64_t j = j0; j < j1; j++) ((uint64_t *)yo)[j] = ((const uint64_t *)xo)[idx[j]];
    else if (d->inner == 1 && es == 4)
      gather_4((const uint32_t *)xo, idx + j0, (uint32_t *)yo + j0, j1 - j0);
    else if (d->inner == 1)
      gather_8((const uint64_t *)xo, idx + j0, (uint64_t *)yo + j0, j1 - j0);
    else
      for (int64_t j = j0; j < j1; j++) lin_copy(yo + (size_t)j * row, xo + (size_t)idx[j] * row, row);
    r += j1 - j0;
  }
}

static int take_forward(opf_case *c) {
  take_ctx t = {c, take_dims_of(c)};
  int rc = take_check(c, &t.d);
  if (rc) return rc;
  int64_t rows = t.d.outer * t.d.n;
  opf_parallel_range(rows, OPF_PAR_MIN / (t.d.inner ? t.d.inner : 1) + 1, take_rows, &t);
  return OPF_OK;
}

/* ---- backward: dx = 0, then dx[o, idx[j], :] += g[o, j, :] ---- */

/* For one outer row: add g's rows whose index is in [alo, ahi) into dx's rows (one call per
 * outer row, the row adds vectorised). */
#define TAKE_SCATTER(T, sfx)                                                                   \
  OPF_VEC static void scatter_##sfx(T *restrict dx, const T *restrict g,                      \
                                    const int64_t *restrict idx, int64_t n, int64_t inner,    \
                                    int64_t alo, int64_t ahi) {                                \
    for (int64_t j = 0; j < n; j++) {                                                          \
      int64_t a = idx[j];                                                                      \
      if (a < alo || a >= ahi) continue;                                                       \
      T *restrict dst = dx + a * inner;                                                        \
      const T *restrict src = g + j * inner;                                                   \
      for (int64_t i = 0; i < inner; i++) dst[i] += src[i];                                    \
    }                                                                                          \
  }
TAKE_SCATTER(float, f32)
TAKE_SCATTER(double, f64)

/* inner == 1: single elements, added inline (a call per element cost 3x the add). `own`
 * says the thread owns the whole row; else only indices in [alo, ahi) are its. */
#define TAKE_SCATTER1(T, sfx)                                                                  \
  static void scatter1_##sfx(T *restrict dx, const T *restrict g, const int64_t *restrict idx, \
                             int64_t n, int own, int64_t alo, int64_t ahi) {                   \
    if (own)                                                                                   \
      for (int64_t j = 0; j < n; j++) dx[idx[j]] += g[j];                                     \
    else                                                                                       \
      for (int64_t j = 0; j < n; j++)                                                          \
        if (idx[j] >= alo && idx[j] < ahi) dx[idx[j]] += g[j];                                \
  }
TAKE_SCATTER1(float, f32)
TAKE_SCATTER1(double, f64)

/* Destination rows [lo, hi) of the (outer * A) rows of dx: this thread zeroes them and adds
 * every g row whose index lands in them, so no two threads write the same row. Each thread
 * scans the indices of the outer rows it covers (n checks per outer row, cheap next to the
 * rows it adds). */
static void take_scatter(int64_t lo, int64_t hi, void *p) {
  const take_ctx *t = p;
  const take_dims *d = &t->d;
  const int64_t *idx = t->c->in[IN_IDX].data;
  const char *g = t->c->gout[0].data;
  char *dx = t->c->gin[IN_X].data;
  const size_t es = d->es, row = (size_t)d->inner * es;
  const int f32 = t->c->dtype == OPF_F32;
  memset(dx + (size_t)lo * row, 0, (size_t)(hi - lo) * row);
  for (int64_t o = lo / d->A; o * d->A < hi; o++) {
    int64_t alo = lo - o * d->A, ahi = hi - o * d->A; /* rows of this o we own: [alo, ahi) */
    char *dxo = dx + (size_t)(o * d->A) * row;
    const char *go = g + (size_t)(o * d->n) * row;
    if (d->inner == 1) {
      int own = alo <= 0 && ahi >= d->A;
      if (f32) scatter1_f32((float *)dxo, (const float *)go, idx, d->n, own, alo, ahi);
      else scatter1_f64((double *)dxo, (const double *)go, idx, d->n, own, alo, ahi);
      continue;
    }
    if (f32) scatter_f32((float *)dxo, (const float *)go, idx, d->n, d->inner, alo, ahi);
    else scatter_f64((double *)dxo, (const double *)go, idx, d->n, d->inner, alo, ahi);
  }
}

static int take_backward(opf_case *c) {
  take_ctx t = {c, take_dims_of(c)};
  int rc = take_check(c, &t.d);
  if (rc) return rc;
  int64_t rows = t.d.outer * t.d.A, work = opf_numel(&c->in[IN_X]) + opf_numel(&c->out[0]);
  if (rows == 0) return OPF_OK; /* dx is empty */
  opf_parallel_range(rows, work < OPF_PAR_MIN ? rows + 1 : 2, take_scatter, &t);
  return OPF_OK;
}

/* By the definition, element by element. */
static int take_reference(opf_case *c) {
  take_dims d = take_dims_of(c);
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

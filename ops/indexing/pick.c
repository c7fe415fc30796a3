/* pick.c: one element per position along an axis, MXNet's pick: y[o, i] = x[o, idx[o, i], i]
 * with x seen as (outer, A, inner) around the axis, and batch_take, its 2-D special case
 * y[b] = x[b, idx[b]]. The gradient puts g back at the picked positions of a zeroed dx: every
 * (o, i) owns a distinct element, so threads owning blocks of dx need no atomics. */
#include "indexing.h"

enum { IN_X = 0, IN_IDX = 1 };
enum { P_AXIS = 0, P_KEEPDIMS = 1 };

static int pk_axis(const opf_case *c) {
  if (!strcmp(c->op->name, "batch_take")) return 1;
  return c->p[P_AXIS] == OPF_AXIS_ALL ? -1 : opf_axis(c->p[P_AXIS], c->in[IN_X].ndim);
}

static ix_dims pk_dims(const opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  int axis = pk_axis(c);
  ix_dims d = ix_dims_at(x->ndim, x->shape, axis, 1, opf_dtype_size(c->dtype));
  d.n = d.outer * d.inner; /* one index per output element */
  return d;
}

static int pk_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *idx = &c->in[IN_IDX];
  char sx[96], si[96];
  const int bt = !strcmp(c->op->name, "batch_take");
  if (x->ndim < 0) return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (e.g. x=1024x1024)");
  if (bt && x->ndim != 2)
    return opf_case_error(c, OPF_EINVAL, "batch_take needs a 2-D x=(B,N), not x=%s",
                          opf_shape_str(x, sx, sizeof sx));
  if (x->ndim < 1) return opf_case_error(c, OPF_EINVAL, "x=() has no axis to pick along");
  int axis = 1;
  if (!bt && ix_axis_param(c, c->p[P_AXIS], x, "pick selects along one axis", &axis)) return OPF_EINVAL;
  opf_tensor want; /* the index has x's shape without the axis */
  int64_t shape[OPF_MAX_DIMS];
  int nd = 0;
  for (int k = 0; k < x->ndim; k++)
    if (k != axis) shape[nd++] = x->shape[k];
  opf_tensor_set_shape(&want, OPF_I64, nd, shape);
  if (idx->ndim < 0) *idx = want;
  if (opf_same_shape(c, idx, &want, "indices", "x without the axis"))
    return opf_case_error(c, OPF_EINVAL, "indices=%s must have x=%s's shape without axis %d",
                          opf_shape_str(idx, si, sizeof si), opf_shape_str(x, sx, sizeof sx), axis);
  if (x->shape[axis] == 0 && opf_numel(idx) > 0)
    return opf_case_error(c, OPF_EINVAL, "cannot pick from the empty axis %d of x=%s", axis,
                          opf_shape_str(x, sx, sizeof sx));
  if (!bt && c->p[P_KEEPDIMS]) {
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = 1;
    nd = x->ndim;
  }
  opf_set_out(c, 0, c->dtype, nd, shape);
  return OPF_OK;
}

static int fill_indices(opf_case *c, int i, opf_rng *r) {
  (void)r;
  ix_fill(c, i, c->in[IN_X].shape[pk_axis(c)]);
  return OPF_OK;
}

/* ---- forward: output elements [lo, hi) of (outer, inner) ---- */
#define PK_AHEAD 32              /* rows a prefetch runs ahead of the gather */
#define PK_PREFETCH_MIN 33554432 /* x bytes beyond the 32 MiB L3 */
#define PK_GATHER(T, sfx)                                                                      \
  OPF_VEC static void pk_gather_##sfx(const T *restrict x, const int64_t *restrict idx,       \
                                      T *restrict y, int64_t lo, int64_t hi, int64_t A,        \
                                      int64_t inner, int pf) {                                 \
    if (inner == 1 && !pf) { /* batch_take, pick on the last axis: a gather down the rows */  \
      for (int64_t o = lo; o < hi; o++) y[o] = x[o * A + idx[o]];                              \
      return;                                                                                  \
    }                                                                                          \
    if (inner == 1) { /* x beyond the caches: prefetch PK_AHEAD rows ahead (1.5x at 256 MiB) */ \
      int64_t o = lo;                                                                          \
      for (; o + PK_AHEAD < hi; o++) {                                                         \
        __builtin_prefetch(x + (o + PK_AHEAD) * A + idx[o + PK_AHEAD]);                        \
        y[o] = x[o * A + idx[o]];                                                              \
      }                                                                                        \
      for (; o < hi; o++) y[o] = x[o * A + idx[o]];                                            \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t k = lo; k < hi;) {                                                            \
      int64_t o = k / inner, i0 = k - o * inner, i1 = inner < i0 + hi - k ? inner : i0 + hi - k; \
      const T *restrict xo = x + o * A * inner;                                                \
      for (int64_t i = i0; i < i1; i++) y[o * inner + i] = xo[idx[o * inner + i] * inner + i]; \
      k += i1 - i0;                                                                            \
    }                                                                                          \
  }
PK_GATHER(uint32_t, 4)
PK_GATHER(uint64_t, 8)

typedef struct {
  const opf_case *c;
  ix_dims d;
  int zeroed; /* backward: dx already zeroed, put elements [lo, hi) only */
} pk_ctx;

static void pk_fwd_range(int64_t lo, int64_t hi, void *p) {
  const pk_ctx *t = p;
  const opf_case *c = t->c;
  const int pf = (double)t->d.outer * (double)t->d.A * (double)t->d.es > PK_PREFETCH_MIN;
  if (t->d.es == 4)
    pk_gather_4(c->in[IN_X].data, c->in[IN_IDX].data, c->out[0].data, lo, hi, t->d.A, t->d.inner, pf);
  else
    pk_gather_8(c->in[IN_X].data, c->in[IN_IDX].data, c->out[0].data, lo, hi, t->d.A, t->d.inner, pf);
}

static int pk_forward(opf_case *c) {
  pk_ctx t = {c, pk_dims(c), 0};
  int rc = ix_check(c, c->in[IN_IDX].data, t.d.n, t.d.A, "index");
  if (rc) return rc;
  opf_parallel_range(t.d.n, 8192, pk_fwd_range, &t); /* a gather is a cache miss per element */
  return OPF_OK;
}

/* ---- backward: dx = 0, dx[o, idx[o, i], i] = g[o, i] ---- */
#define PK_PUT(T, sfx)                                                                         \
  static void pk_put_##sfx(T *restrict dx, const int64_t *restrict idx, const T *restrict g,  \
                           int64_t A, int64_t inner, int64_t lo, int64_t hi) {                 \
    if (inner == 1) {                                                                          \
      for (int64_t o = lo; o < hi; o++) dx[o * A + idx[o]] = g[o];                             \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t k = lo; k < hi;) { /* one division per outer row, not per element */         \
      int64_t o = k / inner, i0 = k - o * inner, i1 = inner < i0 + hi - k ? inner : i0 + hi - k; \
      T *restrict dxo = dx + o * A * inner;                                                    \
      for (int64_t i = i0; i < i1; i++) dxo[idx[o * inner + i] * inner + i] = g[o * inner + i]; \
      k += i1 - i0;                                                                            \
    }                                                                                          \
  }
PK_PUT(uint32_t, 4)
PK_PUT(uint64_t, 8)

/* Outer rows [lo, hi) (or, once dx is zeroed, elements [lo, hi)): zero the rows, then put the
 * picked elements while the rows are still in cache. */
static void pk_bwd_range(int64_t lo, int64_t hi, void *p) {
  const pk_ctx *t = p;
  const ix_dims *d = &t->d;
  const opf_case *c = t->c;
  char *dx = c->gin[IN_X].data;
  const size_t plane = (size_t)(d->A * d->inner) * d->es;
  int64_t e0 = lo, e1 = hi;
  if (!t->zeroed) {
    memset(dx + (size_t)lo * plane, 0, (size_t)(hi - lo) * plane);
    e0 = lo * d->inner, e1 = hi * d->inner;
  }
  if (d->es == 4) pk_put_4((uint32_t *)dx, c->in[IN_IDX].data, c->gout[0].data, d->A, d->inner, e0, e1);
  else pk_put_8((uint64_t *)dx, c->in[IN_IDX].data, c->gout[0].data, d->A, d->inner, e0, e1);
}

static int pk_backward(opf_case *c) {
  pk_ctx t = {c, pk_dims(c), 0};
  int rc = ix_check(c, c->in[IN_IDX].data, t.d.n, t.d.A, "index");
  if (rc) return rc;
  int64_t work = t.d.outer * t.d.A * t.d.inner;
  if (work == 0) return OPF_OK;
  if (t.d.outer >= 64) { /* threads own whole outer rows: zero and put in one pass */
    opf_parallel_range(t.d.outer, work < OPF_PAR_MIN ? t.d.outer + 1 : 2, pk_bwd_range, &t);
    return OPF_OK;
  }
  /* Few outer rows (pick on axis 0): zero dx in bulk, then split the puts, which land on
   * distinct elements. */
  ix_bulk(c->gin[IN_X].data, NULL, c->gin[IN_X].nbytes);
  t.zeroed = 1;
  opf_parallel_range(t.d.n, 8192, pk_bwd_range, &t);
  return OPF_OK;
}

/* By the definition, element by element. */
static int pk_reference(opf_case *c) {
  ix_dims d = pk_dims(c);
  const int64_t *idx = c->in[IN_IDX].data;
  for (int64_t o = 0; o < d.outer; o++)
    for (int64_t i = 0; i < d.inner; i++) {
      int64_t a = idx[o * d.inner + i];
      if (a < 0 || a >= d.A) return opf_case_error(c, OPF_EINVAL, "index %lld out of range", (long long)a);
      memcpy((char *)c->out[0].data + (size_t)(o * d.inner + i) * d.es,
             (const char *)c->in[IN_X].data + (size_t)((o * d.A + a) * d.inner + i) * d.es, d.es);
    }
  return OPF_OK;
}

static double pk_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0; /* pure data movement: no element is added twice */
}

/* Forward reads the indices and one element per index and writes y; backward reads the
 * indices and g and writes all of dx. */
static double pk_bytes(const opf_case *c, opf_pass p) {
  double es = (double)opf_dtype_size(c->dtype), n = (double)opf_numel(&c->out[0]);
  double x = es * (double)opf_numel(&c->in[IN_X]);
  return opf_pass_sum(p, 8 * n + 2 * es * n, 8 * n + es * n + x);
}

OPPERF_OP(pick) = {
    .abi = OPF_OP_ABI,
    .name = "pick",
    .category = "indexing",
    .summary = "one element per position along an axis: y[o, i] = x[o, idx[o, i], i]",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,
            .help = "data to pick from"},
           {.name = "indices", .dtype = OPF_I64, .fill = fill_indices,
            .help = "int64 positions along axis, x's shape without the axis (default)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{.name = "axis", .type = OPF_P_AXIS, .def = -1, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "axis the indices select along"},
               {.name = "keepdims", .type = OPF_P_BOOL, .def = 0,
                .help = "keep the axis with size 1 in y"}},
    .shapes = {{"standard", "x=1024x1024 axis=-1"},
               {"standard", "x=1024x1024 axis=0"},
               {"skewed", "x=10000x10 axis=1"},
               {"skewed", "x=10x10000 axis=1"},
               {"skewed", "x=10x10000 axis=0"},
               {"skewed", "x=100000x16 axis=1"},
               {"small", "x=16x16"},
               {"small", "x=1x64"},
               {"small", "x=37x3 axis=0"},
               {"small", "x=3x4x5 axis=1 keepdims=true"},
               {"small", "x=7 axis=0"},
               {"test", "x=301x517 axis=1"},
               {"test", "x=3x517x1201 axis=1"},
               {"test", "x=517x1301 axis=0"},
               {"large", "x=8192x8192 axis=1"},
               {"large", "x=8192x8192 axis=0"}},
    .infer = pk_infer,
    .forward = pk_forward,
    .backward = pk_backward,
    .reference = pk_reference,
    .flops = pk_flops,
    .bytes = pk_bytes,
};

OPPERF_OP(batch_take) = {
    .abi = OPF_OP_ABI,
    .name = "batch_take",
    .category = "indexing",
    .summary = "one element per row: y[b] = x[b, idx[b]] for x (B,N), idx (B,)",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,
            .help = "data (B,N)"},
           {.name = "indices", .dtype = OPF_I64, .fill = fill_indices,
            .help = "int64 column per row, (B,) (default), valid in [0, N)"}},
    .n_out = 1,
    .out = {"y"},
    .shapes = {{"standard", "x=1024x1024"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=100000x16"},
               {"small", "x=16x16"},
               {"small", "x=1x64"},
               {"small", "x=37x3"},
               {"small", "x=64x1"},
               {"test", "x=40000x3"},
               {"large", "x=8192x8192"},
               {"large", "x=1048576x64"}},
    .infer = pk_infer,
    .forward = pk_forward,
    .backward = pk_backward,
    .reference = pk_reference,
    .flops = pk_flops,
    .bytes = pk_bytes,
};

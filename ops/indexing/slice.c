/* slice.c: basic slicing with NumPy semantics: slice (begin/end lists), slice_axis (one axis),
 * strided_slice (begin/end/step lists, negative steps), getitem (x[i] along axis 0) and
 * setitem (x[i] = v, in place). All are one strided copy between a view of x and a contiguous
 * tensor, run by the family's row walker (merged dims, long rows in pieces over the threads). */
#include <stdio.h>

#include "indexing.h"

enum { IN_X = 0, IN_V = 1 };

/* A basic slice of x: per dim the first index, the step and the count taken. */
typedef struct sl_plan {
  int nd;
  int64_t begin[OPF_MAX_DIMS], step[OPF_MAX_DIMS], len[OPF_MAX_DIMS];
} sl_plan;

/* NumPy's start/stop adjustment (PySlice_AdjustIndices) for a dim of n with step s != 0:
 * negative values count from the end, and out-of-range values clamp. */
static void sl_adjust(int64_t n, int64_t b, int64_t e, int64_t s, int64_t *begin, int64_t *len) {
  if (b < 0) {
    b += n;
    if (b < 0) b = s < 0 ? -1 : 0;
  } else if (b >= n) {
    b = s < 0 ? n - 1 : n;
  }
  if (e < 0) {
    e += n;
    if (e < 0) e = s < 0 ? -1 : 0;
  } else if (e >= n) {
    e = s < 0 ? n - 1 : n;
  }
  *begin = b;
  if (s < 0) *len = e < b ? (b - e - 1) / (-s) + 1 : 0;
  else *len = b < e ? (e - b - 1) / s + 1 : 0;
}

static void sl_full(sl_plan *p, const opf_tensor *x) {
  p->nd = x->ndim;
  for (int k = 0; k < x->ndim; k++) p->begin[k] = 0, p->step[k] = 1, p->len[k] = x->shape[k];
}

/* ---- the plans of each operator (params are checked by infer) ---- */
enum { P_BEGIN = 0, P_END = 1, P_STEP = 2 }; /* slice, strided_slice */
enum { PA_AXIS = 0, PA_BEGIN = 1, PA_END = 2 }; /* slice_axis */
enum { PI_INDEX = 0 };                          /* getitem, setitem */

/* begin/end/step lists (step may be absent: all 1); fewer entries than dims leave the
 * trailing dims whole. */
static int sl_plan_lists(opf_case *c, sl_plan *p, int with_step) {
  const opf_tensor *x = &c->in[IN_X];
  const opf_list *b = &c->list[P_BEGIN], *e = &c->list[P_END];
  const opf_list *s = with_step ? &c->list[P_STEP] : NULL;
  char sx[96];
  if (b->n != e->n)
    return opf_case_error(c, OPF_EINVAL, "begin and end must have the same length (got %d and %d)",
                          b->n, e->n);
  if (s && s->n && s->n != b->n)
    return opf_case_error(c, OPF_EINVAL, "step has %d entries but begin/end have %d", s->n, b->n);
  if (b->n > x->ndim)
    return opf_case_error(c, OPF_EINVAL, "begin/end have %d entries but x=%s has rank %d", b->n,
                          opf_shape_str(x, sx, sizeof sx), x->ndim);
  sl_full(p, x);
  for (int k = 0; k < b->n; k++) {
    int64_t st = s && s->n ? s->v[k] : 1;
    if (st == 0) return opf_case_error(c, OPF_EINVAL, "step %d is 0 (a slice step must be nonzero)", k);
    p->step[k] = st;
    sl_adjust(x->shape[k], b->v[k], e->v[k], st, &p->begin[k], &p->len[k]);
  }
  return OPF_OK;
}

static int sl_plan_axis(opf_case *c, sl_plan *p) {
  const opf_tensor *x = &c->in[IN_X];
  int axis = 0, rc = ix_axis_param(c, c->p[PA_AXIS], x, "slice_axis slices one axis", &axis);
  if (rc) return rc;
  sl_full(p, x);
  sl_adjust(x->shape[axis], (int64_t)c->p[PA_BEGIN], (int64_t)c->p[PA_END], 1, &p->begin[axis],
            &p->len[axis]);
  return OPF_OK;
}

/* x[i]: plane i of axis 0 (negative i counts from the end, as in NumPy). */
static int sl_plan_item(opf_case *c, sl_plan *p) {
  const opf_tensor *x = &c->in[IN_X];
  char sx[96];
  int64_t i = (int64_t)c->p[PI_INDEX], n = x->ndim > 0 ? x->shape[0] : 0;
  if (x->ndim < 1)
    return opf_case_error(c, OPF_EINVAL, "cannot index a scalar x=(): x needs rank >= 1");
  if (i < -n || i >= n)
    return opf_case_error(c, OPF_EINVAL, "index %lld is out of range for axis 0 of x=%s (size %lld)",
                          (long long)i, opf_shape_str(x, sx, sizeof sx), (long long)n);
  sl_full(p, x);
  p->begin[0] = i < 0 ? i + n : i;
  p->len[0] = 1;
  return OPF_OK;
}

static int sl_plan_of(opf_case *c, sl_plan *p) {
  const char *n = c->op->name;
  if (!strcmp(n, "slice")) return sl_plan_lists(c, p, 0);
  if (!strcmp(n, "strided_slice")) return sl_plan_lists(c, p, 1);
  if (!strcmp(n, "slice_axis")) return sl_plan_axis(c, p);
  return sl_plan_item(c, p);
}

/* ---- kernels ---- */

static void sl_copy_fn(char *const *p, const int64_t *is, const int64_t *os, int64_t rows,
                       int64_t n, void *ctx) {
  for (int64_t r = 0; r < rows; r++)
    ix_copy_row(p[0] + r * os[0], is[0], p[1] + r * os[1], is[1], n, *(const size_t *)ctx);
}

/* Walk the slice: operand 0 is the view of the strided tensor (base at view), operand 1 the
 * contiguous one; put copies contiguous -> view, else view -> contiguous. */
static void sl_move(const sl_plan *p, const opf_tensor *full, char *view, char *dense, int put) {
  size_t es = opf_dtype_size(full->dtype);
  int64_t st[2][OPF_MAX_DIMS], s = (int64_t)es;
  int64_t off = 0;
  for (int k = p->nd - 1; k >= 0; k--) {
    st[put ? 0 : 1][k] = full->strides[k] * p->step[k] * (int64_t)es;
    st[put ? 1 : 0][k] = s;
    s *= p->len[k];
    off += p->begin[k] * full->strides[k] * (int64_t)es;
  }
  ix_walk w;
  ix_walk_init(&w, p->nd, p->len, 2, st);
  char *base[2] = {put ? view + off : dense, put ? dense : view + off};
  ix_walk_run(&w, base, sl_copy_fn, &es, 1);
}

static int sl_forward(opf_case *c) {
  sl_plan p;
  int rc = sl_plan_of(c, &p);
  if (rc) return rc;
  sl_move(&p, &c->in[IN_X], c->in[IN_X].data, c->out[0].data, 0);
  return OPF_OK;
}

/* dx = 0 outside the slice, g inside: zero dx (threaded), then put g into its view. */
static int sl_backward(opf_case *c) {
  sl_plan p;
  int rc = sl_plan_of(c, &p);
  if (rc) return rc;
  opf_tensor *dx = &c->gin[IN_X];
  if (opf_numel(&c->out[0]) != opf_numel(dx)) /* a whole-tensor slice overwrites all of dx */
    ix_bulk(dx->data, NULL, dx->nbytes);
  sl_move(&p, dx, dx->data, c->gout[0].data, 1);
  return OPF_OK;
}

/* setitem: x[i] = v, in place (output 0 is x). */
static int setitem_forward(opf_case *c) {
  sl_plan p;
  int rc = sl_plan_item(c, &p);
  if (rc) return rc;
  sl_move(&p, &c->in[IN_X], c->out[0].data, c->in[IN_V].data, 1);
  return OPF_OK;
}

/* By the definition, element by element: out[k] = x[begin + idx(k) * step]. For setitem the
 * roles swap: out (= x) at the view takes v. */
static int sl_reference(opf_case *c) {
  sl_plan p;
  int rc = sl_plan_of(c, &p);
  if (rc) return rc;
  const int put = !strcmp(c->op->name, "setitem");
  const opf_tensor *x = &c->in[IN_X];
  const size_t es = opf_dtype_size(x->dtype);
  const int64_t n = opf_shape_numel(p.nd, p.len);
  char *view = put ? c->out[0].data : x->data;
  char *dense = put ? c->in[IN_V].data : c->out[0].data;
  for (int64_t k = 0; k < n; k++) {
    int64_t r = k, off = 0;
    for (int d = p.nd - 1; d >= 0; d--) {
      off += (p.begin[d] + (r % p.len[d]) * p.step[d]) * x->strides[d];
      r /= p.len[d];
    }
    if (put) memcpy(view + (size_t)off * es, dense + (size_t)k * es, es);
    else memcpy(dense + (size_t)k * es, view + (size_t)off * es, es);
  }
  return OPF_OK;
}

static int sl_infer(opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  sl_plan p;
  if (x->ndim < 0) return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (e.g. x=1024x1024)");
  int rc = sl_plan_of(c, &p);
  if (rc) return rc;
  if (strcmp(c->op->name, "getitem")) opf_set_out(c, 0, c->dtype, p.nd, p.len);
  else opf_set_out(c, 0, c->dtype, x->ndim - 1, x->shape + 1);
  return OPF_OK;
}

static int setitem_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *v = &c->in[IN_V];
  sl_plan p;
  if (x->ndim < 0) return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (e.g. x=1024x1024)");
  int rc = sl_plan_item(c, &p);
  if (rc) return rc;
  if (v->ndim < 0) opf_tensor_set_shape(v, c->dtype, x->ndim - 1, x->shape + 1);
  opf_tensor plane;
  opf_tensor_set_shape(&plane, c->dtype, x->ndim - 1, x->shape + 1);
  rc = opf_same_shape(c, v, &plane, "v", "x[i]");
  if (rc) return rc;
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  return OPF_OK;
}

/* A copy moves each element once: read the slice, write the output; backward reads g and
 * writes all of dx (zeros outside the slice). setitem reads v and writes one plane. */
static double sl_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}

static double sl_bytes(const opf_case *c, opf_pass p) {
  double es = (double)opf_dtype_size(c->dtype);
  if (!strcmp(c->op->name, "setitem")) /* forward-only: every pass is the forward */
    return 2 * es * (double)opf_numel(&c->in[IN_V]);
  double y = es * (double)opf_numel(&c->out[0]), x = es * (double)opf_numel(&c->in[IN_X]);
  return opf_pass_sum(p, 2 * y, y + x);
}

#define SL_X_INPUT                                                                             \
  {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,            \
   .help = "data to slice"}
#define SL_LIST(nm, d, h)                                                                      \
  {.name = nm, .type = OPF_P_LIST, .defs = d, .min = -1e15, .max = 1e15, .help = h}
#define SL_BEGIN SL_LIST("begin", "none", "first index per leading dim (negative: from the end)")
#define SL_END                                                                                 \
  SL_LIST("end", "none", "stop index per leading dim, exclusive (negative: from the end; "     \
                         "beyond the dim: clamped)")

OPPERF_OP(slice) = {
    .abi = OPF_OP_ABI,
    .name = "slice",
    .category = "indexing",
    .summary = "basic slice x[b0:e0, b1:e1, ...] with NumPy index rules",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {SL_X_INPUT},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {SL_BEGIN, SL_END},
    .shapes = {{"standard", "x=1024x1024 begin=128,128 end=-128,-128"},
               {"skewed", "x=10000x10 begin=100,2 end=9900,8"},
               {"skewed", "x=10x10000 begin=2,100 end=8,9900"},
               {"skewed", "x=100000x16 begin=50000 end=51000"},
               {"small", "x=16x16 begin=2,3 end=-2,13"},
               {"small", "x=1x64 begin=0,5 end=1,-5"},
               {"small", "x=37x3 begin=-30,1 end=100,3"},
               {"small", "x=4x5x6 begin=1 end=3"},
               {"small", "x=7 begin=5 end=-1"},
               {"small", "x=3x4x5 begin=-2,-3,-4 end=-1,4,5"},
               {"test", "x=301x517 begin=7,3 end=-5,500"},
               {"test", "x=3x211x301 begin=1,0,1 end=3,211,300"},
               {"large", "x=8192x8192 begin=0,1024 end=8192,-1024"},
               {"huge", "x=46341x46341 begin=1 end=46341"}},
    .infer = sl_infer,
    .forward = sl_forward,
    .backward = sl_backward,
    .reference = sl_reference,
    .flops = sl_flops,
    .bytes = sl_bytes,
};

OPPERF_OP(strided_slice) = {
    .abi = OPF_OP_ABI,
    .name = "strided_slice",
    .category = "indexing",
    .summary = "strided slice x[b0:e0:s0, ...] with NumPy index rules (negative steps too)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {SL_X_INPUT},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {SL_BEGIN, SL_END,
               SL_LIST("step", "none", "step per leading dim, nonzero (negative: backwards); "
                                       "none: all 1")},
    .shapes = {{"standard", "x=1024x1024 begin=0,0 end=1024,1024 step=2,2"},
               {"standard", "x=1024x1024 begin=-1,0 end=-2000,1024 step=-1,1"},
               {"skewed", "x=10000x10 begin=0,9 end=10000,-2000 step=3,-2"},
               {"skewed", "x=10x10000 begin=0,0 end=10,10000 step=2,3"},
               {"skewed", "x=100000x16 begin=99999 end=-100001 step=-100"},
               {"small", "x=16x16 begin=1,15 end=16,-100 step=2,-3"},
               {"small", "x=1x64 begin=0,60 end=1,2 step=1,-7"},
               {"small", "x=37x3 begin=36,0 end=-100,3 step=-1,2"},
               {"small", "x=4x5x6 begin=3,0,5 end=-100,5,-100 step=-2,1,-1"},
               {"small", "x=7 begin=0 end=7 step=3"},
               {"small", "x=6x5 begin=2,1 end=3,4 step=1,1"},
               {"test", "x=301x517 begin=300,1 end=-1000,517 step=-1,2"},
               {"test", "x=517x301 begin=0,300 end=517,-1000 step=3,-1"},
               {"large", "x=8192x8192 begin=-1,0 end=-10000,8192 step=-1,1"},
               {"large", "x=8192x8192 begin=0,0 end=8192,8192 step=1,2"}},
    .infer = sl_infer,
    .forward = sl_forward,
    .backward = sl_backward,
    .reference = sl_reference,
    .flops = sl_flops,
    .bytes = sl_bytes,
};

OPPERF_OP(slice_axis) = {
    .abi = OPF_OP_ABI,
    .name = "slice_axis",
    .category = "indexing",
    .summary = "slice one axis, x[..., begin:end, ...] with NumPy index rules",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {SL_X_INPUT},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {{.name = "axis", .type = OPF_P_AXIS, .def = 0, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "the axis to slice"},
               {.name = "begin", .type = OPF_P_INT, .def = 0, .min = -1e15, .max = 1e15,
                .help = "first index (negative: from the end)"},
               {.name = "end", .type = OPF_P_INT, .def = 2147483647, .min = -1e15, .max = 1e15,
                .help = "stop index, exclusive (negative: from the end; default and values "
                        "beyond the axis: its end)"}},
    .shapes = {{"standard", "x=1024x1024 axis=0 begin=256 end=768"},
               {"standard", "x=1024x1024 axis=1 begin=256 end=768"},
               {"skewed", "x=10000x10 axis=1 begin=2 end=-2"},
               {"skewed", "x=10x10000 axis=1 begin=100 end=-100"},
               {"skewed", "x=100000x16 axis=0 begin=1000 end=2000"},
               {"small", "x=16x16 axis=1 begin=3 end=-3"},
               {"small", "x=1x64 axis=-1 begin=-10"},
               {"small", "x=37x3 axis=0 begin=5 end=100"},
               {"small", "x=3x4x5 axis=1 begin=1 end=3"},
               {"small", "x=5x4 axis=0 begin=4 end=9"},
               {"test", "x=301x517 axis=1 begin=11 end=-11"},
               {"test", "x=517x301 axis=0 begin=-500 end=517"},
               {"large", "x=8192x8192 axis=1 begin=1024 end=-1024"}},
    .infer = sl_infer,
    .forward = sl_forward,
    .backward = sl_backward,
    .reference = sl_reference,
    .flops = sl_flops,
    .bytes = sl_bytes,
};

#define SL_INDEX_PARAM                                                                         \
  {.name = "index", .type = OPF_P_INT, .def = 0, .min = -1e15, .max = 1e15,                   \
   .help = "position along axis 0 (negative: from the end)"}

OPPERF_OP(getitem) = {
    .abi = OPF_OP_ABI,
    .name = "getitem",
    .category = "indexing",
    .summary = "x[i]: one row (plane) along axis 0",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {SL_X_INPUT},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {SL_INDEX_PARAM},
    .shapes = {{"standard", "x=1024x1024 index=512"},
               {"standard", "x=32x64x56x56 index=-1"},
               {"skewed", "x=10000x10 index=5000"},
               {"skewed", "x=10x10000 index=5"},
               {"skewed", "x=100000x16 index=-1000"},
               {"small", "x=16x16 index=3"},
               {"small", "x=1x64 index=-1"},
               {"small", "x=37x3 index=36"},
               {"small", "x=7 index=-7"},
               {"small", "x=3x4x5 index=1"},
               {"test", "x=5x301x517 index=2"},
               {"large", "x=4x8192x8192 index=1"}},
    .infer = sl_infer,
    .forward = sl_forward,
    .backward = sl_backward,
    .reference = sl_reference,
    .flops = sl_flops,
    .bytes = sl_bytes,
};

OPPERF_OP(setitem) = {
    .abi = OPF_OP_ABI,
    .name = "setitem",
    .category = "indexing",
    .summary = "x[i] = v along axis 0, in place",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -100, .hi = 100,
            .help = "data updated in place (output 0 is x)"},
           {.name = "v", .dtype = OPF_DT_CASE, .lo = -100, .hi = 100,
            .help = "the new plane, shape x.shape[1:] (default)"}},
    .n_out = 1,
    .out = {"x"},
    .n_params = 1,
    .params = {SL_INDEX_PARAM},
    .shapes = {{"standard", "x=1024x1024 index=512"},
               {"standard", "x=32x64x56x56 index=-1"},
               {"skewed", "x=10000x10 index=5000"},
               {"skewed", "x=10x10000 index=5"},
               {"skewed", "x=100000x16 index=-1000"},
               {"small", "x=16x16 index=3"},
               {"small", "x=1x64 index=-1"},
               {"small", "x=37x3 index=36"},
               {"small", "x=7 index=-7"},
               {"small", "x=3x4x5 index=1"},
               {"test", "x=5x301x517 index=2"},
               {"large", "x=4x8192x8192 index=1"}},
    .infer = setitem_infer,
    .forward = setitem_forward,
    .reference = sl_reference,
    .flops = sl_flops,
    .bytes = sl_bytes,
    .inplace = {1},
};

/* concat.c: joins 2-4 tensors along an axis (shapes agree elsewhere); the gradient splits g
 * back into the inputs' gradients. Both passes are the same walk: the output seen as rows of
 * the per-input runs [a_run | b_run | ...], split into equal element ranges per thread and
 * moved with memcpy (long runs on axis 0, short inlined moves per row on inner axes). */
#include "linalg/linalg.h"

#define CAT_MAX 4
enum { P_AXIS = 0 };

typedef struct {
  int n;                     /* inputs taking part */
  const char *src[CAT_MAX];  /* forward: the inputs; backward: unused */
  char *dst[CAT_MAX];        /* backward: the gradients (NULL: skip) */
  int64_t len[CAT_MAX];      /* elements per outer row, per input */
  int64_t off[CAT_MAX];      /* their offsets in an output row */
  int64_t row;               /* elements per output row (sum of len) */
  char *out;                 /* forward: the output */
  const char *gout;          /* backward: the output gradient */
  size_t es;
  int bwd;
} cat_ctx;

static int cat_axis(const opf_case *c, int ndim) {
  return c->p[P_AXIS] == OPF_AXIS_ALL ? -1 : opf_axis(c->p[P_AXIS], ndim);
}

static int cat_infer(opf_case *c) {
  const opf_tensor *ref = &c->in[0];
  char s0[96], s1[96];
  for (int i = 0; i < CAT_MAX; i++)
    if (c->present[i] && c->in[i].ndim < 0) {
      if (!(c->op->in[i].flags & OPF_IN_OPTIONAL))
        return opf_case_error(c, OPF_EINVAL, "input '%s' needs a shape (e.g. a=1024x1024 "
                              "b=1024x1024 axis=0)", c->op->in[i].name);
      c->present[i] = 0; /* an optional input the spec leaves out takes no part */
    }
  if (ref->ndim < 1)
    return opf_case_error(c, OPF_EINVAL, "cannot concatenate scalars");
  if (c->p[P_AXIS] == OPF_AXIS_ALL)
    return opf_case_error(c, OPF_EINVAL, "axis=all is not allowed: concat joins along one axis");
  int axis = cat_axis(c, ref->ndim);
  if (axis < 0)
    return opf_case_error(c, OPF_EINVAL, "axis=%d is out of range for a=%s (rank %d)",
                          (int)c->p[P_AXIS], opf_shape_str(ref, s0, sizeof s0), ref->ndim);
  int64_t shape[OPF_MAX_DIMS];
  memcpy(shape, ref->shape, sizeof shape);
  for (int i = 1; i < CAT_MAX; i++) {
    if (!c->present[i]) continue;
    const opf_tensor *t = &c->in[i];
    if (t->ndim != ref->ndim)
      return opf_case_error(c, OPF_EINVAL, "'%s' %s and 'a' %s differ in rank (%d vs %d)",
                            c->op->in[i].name, opf_shape_str(t, s0, sizeof s0),
                            opf_shape_str(ref, s1, sizeof s1), t->ndim, ref->ndim);
    for (int k = 0; k < ref->ndim; k++)
      if (k != axis && t->shape[k] != ref->shape[k])
        return opf_case_error(c, OPF_EINVAL,
                              "'%s' %s does not match 'a' %s outside axis %d (dim %d: %lld vs %lld)",
                              c->op->in[i].name, opf_shape_str(t, s0, sizeof s0),
                              opf_shape_str(ref, s1, sizeof s1), axis, k,
                              (long long)t->shape[k], (long long)ref->shape[k]);
    shape[axis] += t->shape[axis];
  }
  opf_set_out(c, 0, c->dtype, ref->ndim, shape);
  return OPF_OK;
}

static void cat_setup(opf_case *c, cat_ctx *x, int bwd) {
  const opf_tensor *ref = &c->in[0];
  int axis = cat_axis(c, ref->ndim);
  int64_t inner = opf_shape_numel(ref->ndim - axis - 1, ref->shape + axis + 1);
  memset(x, 0, sizeof *x);
  x->es = opf_dtype_size(c->dtype);
  x->bwd = bwd;
  x->out = c->out[0].data;
  x->gout = c->gout[0].data;
  for (int i = 0; i < CAT_MAX; i++) {
    if (!c->present[i]) continue;
    x->src[x->n] = c->in[i].data;
    x->dst[x->n] = c->gin[i].data;
    x->len[x->n] = c->in[i].shape[axis] * inner;
    x->off[x->n] = x->row;
    x->row += x->len[x->n];
    x->n++;
  }
}

static inline void cat_move(const cat_ctx *x, int k, size_t in_at, size_t out_at, size_t bytes) {
  if (!x->bwd) lin_copy(x->out + out_at, x->src[k] + in_at, bytes);
  else if (x->dst[k]) lin_copy(x->dst[k] + in_at, x->gout + out_at, bytes);
}

/* Output elements [lo, hi) within one outer row o: each piece lying in one input's run is
 * one move, in the direction of the pass. */
static void cat_partial(const cat_ctx *x, int64_t o, int64_t lo, int64_t hi) {
  for (int k = 0; k < x->n; k++) {
    int64_t a = o * x->row + x->off[k], b = a + x->len[k];
    a = a > lo ? a : lo, b = b < hi ? b : hi;
    if (a < b)
      cat_move(x, k, (size_t)(o * x->len[k] + (a - o * x->row - x->off[k])) * x->es,
               (size_t)a * x->es, (size_t)(b - a) * x->es);
  }
}

/* Output elements [lo, hi): ragged first and last rows piece by piece, whole rows in between
 * as one move per input and row. */
static void cat_range(int64_t lo, int64_t hi, void *p) {
  const cat_ctx *x = p;
  const size_t es = x->es;
  int64_t oa = (lo + x->row - 1) / x->row, ob = hi / x->row; /* whole rows [oa, ob) */
  if (oa > ob) { /* inside a single row */
    cat_partial(x, lo / x->row, lo, hi);
    return;
  }
  if (lo < oa * x->row) cat_partial(x, oa - 1, lo, oa * x->row);
  for (int64_t o = oa; o < ob; o++)
    for (int k = 0; k < x->n; k++)
      cat_move(x, k, (size_t)(o * x->len[k]) * es, (size_t)(o * x->row + x->off[k]) * es,
               (size_t)x->len[k] * es);
  if (ob * x->row < hi) cat_partial(x, ob, ob * x->row, hi);
}

static int cat_run(opf_case *c, int bwd) {
  cat_ctx x;
  cat_setup(c, &x, bwd);
  int64_t n = opf_numel(&c->out[0]);
  if (n > 0) opf_parallel_range(n, OPF_PAR_MIN, cat_range, &x);
  return OPF_OK;
}

static int cat_forward(opf_case *c) { return cat_run(c, 0); }
static int cat_backward(opf_case *c) { return cat_run(c, 1); }

/* By the definition: output element (o, j, t) comes from the input whose range along the
 * axis holds j. */
static int cat_reference(opf_case *c) {
  const opf_tensor *y = &c->out[0];
  int axis = cat_axis(c, y->ndim);
  int64_t outer = opf_shape_numel(axis, y->shape);
  int64_t inner = opf_shape_numel(y->ndim - axis - 1, y->shape + axis + 1);
  size_t es = opf_dtype_size(c->dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < y->shape[axis]; j++) {
      int64_t base = 0;
      int i = 0;
      for (;; i++) {
        if (!c->present[i]) continue;
        if (j < base + c->in[i].shape[axis]) break;
        base += c->in[i].shape[axis];
      }
      for (int64_t t = 0; t < inner; t++) {
        int64_t src = (o * c->in[i].shape[axis] + (j - base)) * inner + t;
        int64_t dst = (o * y->shape[axis] + j) * inner + t;
        memcpy((char *)y->data + (size_t)dst * es, (const char *)c->in[i].data + (size_t)src * es, es);
      }
    }
  return OPF_OK;
}

/* Forward reads the inputs and writes the output; backward reads g and writes the gradients:
 * the output's elements once each way. */
static double cat_bytes(const opf_case *c, opf_pass p) {
  return lin_move_bytes(c, opf_numel(&c->out[0]), p);
}

#define CAT_IN(nm, fl)                                                                         \
  {.name = nm, .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | (fl), .lo = -1, .hi = 1,          \
   .help = "tensor to join (shape agrees with a's except on axis)"}

OPPERF_OP(concat) = {
    .abi = OPF_OP_ABI,
    .name = "concat",
    .category = "join",
    .summary = "join 2-4 tensors along an axis",
    .dtypes = OPF_DT_ALL,
    .n_in = 4,
    .in = {CAT_IN("a", 0), CAT_IN("b", 0), CAT_IN("c", OPF_IN_OPTIONAL),
           CAT_IN("d", OPF_IN_OPTIONAL)},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "axis", .type = OPF_P_AXIS, .def = 0, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "axis to join along (negative from the end)"}},
    .shapes = {{"standard", "a=1024x1024 b=1024x1024 axis=0"},
               {"standard", "a=1024x1024 b=1024x1024 axis=1"},
               {"standard", "a=1024x1024 b=1024x1024 c=1024x1024 d=1024x1024 axis=0"},
               {"standard", "a=1024x1024 b=1024x1024 c=1024x1024 d=1024x1024 axis=1"},
               {"skewed", "a=10000x10 b=10000x10 c=10000x10 axis=0"},
               {"skewed", "a=10000x10 b=10000x10 c=10000x10 axis=1"},
               {"small", "a=16x16 b=16x16"},
               {"small", "a=1x64 b=3x64 c=2x64"},
               {"small", "a=37x3 b=37x5 axis=1"},
               {"small", "a=2x3x4 b=2x1x4 c=2x2x4 d=2x3x4 axis=1"},
               {"small", "a=5 b=7"},
               {"small", "a=2x3 b=2x3 axis=-1"},
               {"small", "a=3x4 b=3x4 d=3x4"},
               {"small", "a=3x0 b=3x2 c=3x1 axis=1"},
               {"test", "a=301x517 b=301x517 c=301x3 axis=1"},
               {"test", "a=173x211 b=97x211 c=301x211 d=5x211 axis=0"},
               {"test", "a=7x300x31 b=7x1x31 c=7x257x31 axis=1"},
               {"large", "a=4096x8192 b=4096x8192 axis=1"}},
    .infer = cat_infer,
    .forward = cat_forward,
    .backward = cat_backward,
    .reference = cat_reference,
    .flops = lin_move_flops,
    .bytes = cat_bytes,
};

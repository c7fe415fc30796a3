/* concat.c: the join family: concat and stack (2-4 tensors into one along an axis) and
 * split / split_sections (one tensor into up to 4 pieces along an axis); each one's gradient
 * is the other direction. All are one walk: the joined tensor seen as rows of the pieces' runs
 * [a_run | b_run | ...], split into equal element ranges per thread and moved with memcpy
 * (long runs on axis 0, short inlined moves per row on inner axes, and interleaving kernels
 * when every run is one element, as stacking on the last axis). */
#include "shape/shape.h"

#define CAT_MAX 4
enum { P_AXIS = 0 };

typedef struct {
  int n;                     /* pieces taking part */
  char *part[CAT_MAX];       /* the pieces (NULL: skip, a missing gradient) */
  int64_t len[CAT_MAX];      /* elements per outer row, per piece */
  int64_t off[CAT_MAX];      /* their offsets in a joined row */
  int64_t row;               /* elements per joined row (sum of len) */
  char *joined;
  size_t es;
  int gather;                /* 1: pieces -> joined (concat, stack, split's backward) */
  int nt, avx512;            /* nt: stream the destination (moves beyond the LLC) */
} cat_ctx;

/* Rows of one element per piece: out[i*n + k] = piece_k[i] and back, with a compile-time n
 * so the compiler vectorises them with permutes (stacking two (1024,1024) on axis 2). */
#define CAT_WEAVE(T, sfx)                                                                      \
  __attribute__((always_inline)) static inline void cat_il_##sfx(                              \
      T *restrict o, const T *restrict p0, const T *restrict p1, const T *restrict p2,         \
      const T *restrict p3, int64_t m, int n) {                                                \
    for (int64_t i = 0; i < m; i++) {                                                          \
      o[i * n] = p0[i], o[i * n + 1] = p1[i];                                                  \
      if (n > 2) o[i * n + 2] = p2[i];                                                         \
      if (n > 3) o[i * n + 3] = p3[i];                                                         \
    }                                                                                          \
  }                                                                                            \
  __attribute__((always_inline)) static inline void cat_dl_##sfx(                              \
      const T *restrict o, T *restrict p0, T *restrict p1, T *restrict p2, T *restrict p3,     \
      int64_t m, int n) {                                                                      \
    for (int64_t i = 0; i < m; i++) {                                                          \
      p0[i] = o[i * n], p1[i] = o[i * n + 1];                                                  \
      if (n > 2) p2[i] = o[i * n + 2];                                                         \
      if (n > 3) p3[i] = o[i * n + 3];                                                         \
    }                                                                                          \
  }                                                                                            \
  OPF_VEC static void cat_weave_##sfx(T *o, T *p0, T *p1, T *p2, T *p3, int64_t m, int n,      \
                                      int gather) {                                            \
    if (gather) {                                                                              \
      if (n == 2) cat_il_##sfx(o, p0, p1, p2, p3, m, 2);                                       \
      else if (n == 3) cat_il_##sfx(o, p0, p1, p2, p3, m, 3);                                  \
      else cat_il_##sfx(o, p0, p1, p2, p3, m, 4);                                              \
    } else {                                                                                   \
      if (n == 2) cat_dl_##sfx(o, p0, p1, p2, p3, m, 2);                                       \
      else if (n == 3) cat_dl_##sfx(o, p0, p1, p2, p3, m, 3);                                  \
      else cat_dl_##sfx(o, p0, p1, p2, p3, m, 4);                                              \
    }                                                                                          \
  }
CAT_WEAVE(uint32_t, 4)
CAT_WEAVE(uint64_t, 8)

/* ---- the walk ---- */
static void cat_add(cat_ctx *x, void *part, int64_t len) {
  x->part[x->n] = part;
  x->len[x->n] = len;
  x->off[x->n] = x->row;
  x->row += len;
  x->n++;
}

static inline void cat_move(const cat_ctx *x, int k, int64_t part_at, int64_t joined_at,
                            int64_t n) {
  const size_t es = x->es;
  if (x->gather)
    shp_move(x->nt, x->avx512, x->joined + joined_at * es, x->part[k] + part_at * es, (size_t)n * es);
  else if (x->part[k])
    shp_move(x->nt, x->avx512, x->part[k] + part_at * es, x->joined + joined_at * es, (size_t)n * es);
}

/* Joined elements [lo, hi) within one outer row o: each piece lying in one run is one move. */
static void cat_partial(const cat_ctx *x, int64_t o, int64_t lo, int64_t hi) {
  for (int k = 0; k < x->n; k++) {
    int64_t a = o * x->row + x->off[k], b = a + x->len[k];
    a = a > lo ? a : lo, b = b < hi ? b : hi;
    if (a < b) cat_move(x, k, o * x->len[k] + (a - o * x->row - x->off[k]), a, b - a);
  }
}

/* Joined elements [lo, hi): ragged first and last rows piece by piece, whole rows in between
 * as one move per piece and row (or one interleaving pass when every run is one element). */
static void cat_range(int64_t lo, int64_t hi, void *p) {
  const cat_ctx *x = p;
  int64_t oa = (lo + x->row - 1) / x->row, ob = hi / x->row; /* whole rows [oa, ob) */
  if (oa > ob) { /* inside a single row */
    cat_partial(x, lo / x->row, lo, hi);
    return;
  }
  if (lo < oa * x->row) cat_partial(x, oa - 1, lo, oa * x->row);
  int weave = x->n >= 2;
  for (int k = 0; k < x->n; k++) weave &= x->part[k] != NULL && x->len[k] == 1;
  if (weave && ob > oa) {
    char *q[CAT_MAX] = {0};
    for (int k = 0; k < x->n; k++) q[k] = x->part[k] + oa * (int64_t)x->es;
    char *j = x->joined + oa * x->row * (int64_t)x->es;
    if (x->es == 4)
      cat_weave_4((uint32_t *)j, (uint32_t *)q[0], (uint32_t *)q[1], (uint32_t *)q[2],
                  (uint32_t *)q[3], ob - oa, x->n, x->gather);
    else
      cat_weave_8((uint64_t *)j, (uint64_t *)q[0], (uint64_t *)q[1], (uint64_t *)q[2],
                  (uint64_t *)q[3], ob - oa, x->n, x->gather);
  } else {
    for (int64_t o = oa; o < ob; o++)
      for (int k = 0; k < x->n; k++) cat_move(x, k, o * x->len[k], o * x->row + x->off[k], x->len[k]);
  }
  if (ob * x->row < hi) cat_partial(x, ob, ob * x->row, hi);
  if (x->nt) shp_sfence();
}

static void cat_go(cat_ctx *x, int64_t joined_n) {
  x->avx512 = shp_have_avx512();
  x->nt = shp_streams(2.0 * (double)joined_n * (double)x->es);
  if (joined_n > 0 && x->row > 0) opf_parallel_range(joined_n, OPF_PAR_MIN, cat_range, x);
}

/* Elements per outer row of a piece whose extent along the axis is n. */
static int64_t cat_inner(const opf_tensor *t, int axis) {
  return opf_shape_numel(t->ndim - axis - 1, t->shape + axis + 1);
}

/* ---- concat and stack: inputs a, b, optional c, d ---- */
static int cat_axis(const opf_case *c, int ndim) {
  return c->p[P_AXIS] == OPF_AXIS_ALL ? -1 : opf_axis(c->p[P_AXIS], ndim);
}

/* Present inputs need shapes; an optional one the spec leaves out takes no part. */
static int join_inputs(opf_case *c, const char *example) {
  for (int i = 0; i < CAT_MAX; i++)
    if (c->present[i] && c->in[i].ndim < 0) {
      if (!(c->op->in[i].flags & OPF_IN_OPTIONAL))
        return opf_case_error(c, OPF_EINVAL, "input '%s' needs a shape (e.g. %s)",
                              c->op->in[i].name, example);
      c->present[i] = 0;
    }
  return OPF_OK;
}

static int cat_infer(opf_case *c) {
  const opf_tensor *ref = &c->in[0];
  char s0[96], s1[96];
  int rc = join_inputs(c, "a=1024x1024 b=1024x1024 axis=0");
  if (rc) return rc;
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

/* stack: every input has a's shape; the output has a new axis of their count at axis
 * (0..rank, negative from the end of the output). */
static int stack_axis(const opf_case *c) {
  int a = (int)c->p[P_AXIS], nd = c->in[0].ndim + 1;
  return a < 0 ? a + nd : a;
}

static int stack_infer(opf_case *c) {
  const opf_tensor *ref = &c->in[0];
  char s0[96], s1[96];
  int rc = join_inputs(c, "a=1024x1024 b=1024x1024 axis=0"), n = 0;
  if (rc) return rc;
  if (c->p[P_AXIS] == OPF_AXIS_ALL)
    return opf_case_error(c, OPF_EINVAL, "axis=all is not allowed: stack inserts one axis");
  if (ref->ndim >= OPF_MAX_DIMS)
    return opf_case_error(c, OPF_EINVAL, "a=%s already has the maximum rank %d",
                          opf_shape_str(ref, s0, sizeof s0), OPF_MAX_DIMS);
  int axis = stack_axis(c);
  if (axis < 0 || axis > ref->ndim)
    return opf_case_error(c, OPF_EINVAL, "axis=%d is out of range for stacking a=%s: the new "
                          "axis goes at %d..%d", (int)c->p[P_AXIS], opf_shape_str(ref, s0, sizeof s0),
                          -(ref->ndim + 1), ref->ndim);
  for (int i = 0; i < CAT_MAX; i++) {
    if (!c->present[i]) continue;
    n++;
    const opf_tensor *t = &c->in[i];
    int same = t->ndim == ref->ndim;
    for (int k = 0; same && k < ref->ndim; k++) same = t->shape[k] == ref->shape[k];
    if (!same)
      return opf_case_error(c, OPF_EINVAL, "stack needs equal shapes: '%s' is %s, 'a' is %s",
                            c->op->in[i].name, opf_shape_str(t, s0, sizeof s0),
                            opf_shape_str(ref, s1, sizeof s1));
  }
  int64_t shape[OPF_MAX_DIMS];
  for (int k = 0, j = 0; k <= ref->ndim; k++) shape[k] = k == axis ? n : ref->shape[j++];
  opf_set_out(c, 0, c->dtype, ref->ndim + 1, shape);
  return OPF_OK;
}

/* Pieces of concat / stack: the inputs (forward) or their gradients (backward). A stacked
 * input is a concat piece of extent 1 along the new axis. */
static int join_run(opf_case *c, int stack, int bwd) {
  cat_ctx x = {.es = opf_dtype_size(c->dtype), .gather = !bwd,
               .joined = bwd ? c->gout[0].data : c->out[0].data};
  const int axis = stack ? stack_axis(c) : cat_axis(c, c->in[0].ndim);
  for (int i = 0; i < CAT_MAX; i++) {
    if (!c->present[i]) continue;
    const opf_tensor *t = &c->in[i];
    int64_t len = stack ? opf_shape_numel(t->ndim - axis, t->shape + axis)
                        : t->shape[axis] * cat_inner(t, axis);
    /* a gradient handed back as a view of g is not written (NULL: the walk skips it) */
    cat_add(&x, !bwd ? t->data : opf_grad_is_view(c, i) ? NULL : c->gin[i].data, len);
  }
  int moves = 0;
  for (int k = 0; k < x.n; k++) moves += x.part[k] != NULL;
  if (moves) cat_go(&x, opf_numel(&c->out[0])); /* every gradient a view: nothing to move */
  return OPF_OK;
}

/* Gradient views: each piece's gradient is its slice of g, narrowed along the axis from the
 * piece's start (concat) or the piece's index on the new axis (stack). */
static int join_grad_view(const opf_case *c, int i, opf_view *v, int stack) {
  const int axis = stack ? stack_axis(c) : cat_axis(c, c->in[0].ndim);
  int64_t start = 0;
  for (int k = 0; k < i; k++)
    if (c->present[k]) start += stack ? 1 : c->in[k].shape[axis];
  return opf_view_narrow(c, i, 0, axis, start, !stack, v);
}
static int cat_grad_view(const opf_case *c, int i, opf_view *v) { return join_grad_view(c, i, v, 0); }
static int stack_grad_view(const opf_case *c, int i, opf_view *v) { return join_grad_view(c, i, v, 1); }

static int cat_forward(opf_case *c) { return join_run(c, 0, 0); }
static int cat_backward(opf_case *c) { return join_run(c, 0, 1); }
static int stack_forward(opf_case *c) { return join_run(c, 1, 0); }
static int stack_backward(opf_case *c) { return join_run(c, 1, 1); }

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

/* y[o, k, t] = k-th present input [o, t], o over the axes before the new one. */
static int stack_reference(opf_case *c) {
  const int axis = stack_axis(c);
  const opf_tensor *a = &c->in[0];
  const int64_t outer = opf_shape_numel(axis, a->shape), inner = opf_numel(a) / (outer ? outer : 1);
  const size_t es = opf_dtype_size(c->dtype);
  int64_t n = c->out[0].shape[axis];
  for (int64_t o = 0; o < outer; o++)
    for (int i = 0, k = 0; i < CAT_MAX; i++) {
      if (!c->present[i]) continue;
      for (int64_t t = 0; t < inner; t++)
        memcpy((char *)c->out[0].data + ((o * n + k) * inner + t) * (int64_t)es,
               (const char *)c->in[i].data + (o * inner + t) * (int64_t)es, es);
      k++;
    }
  return OPF_OK;
}

/* ---- split and split_sections: x into outputs y0..y3 ---- */
enum { P_SPLIT_SECTIONS = 0, P_SPLIT_AXIS = 1 };

/* Section sizes along the axis: equal (split) or listed (split_sections, one -1 takes the
 * rest). Outputs past the count are empty. */
static int split_sizes(opf_case *c, int equal, int64_t dim, int64_t *size, int *count) {
  if (equal) {
    int n = (int)c->p[P_SPLIT_SECTIONS];
    for (int k = 0; k < n; k++) size[k] = dim / n;
    *count = n;
    return dim % n ? -1 : OPF_OK;
  }
  const opf_list *l = &c->list[P_SPLIT_SECTIONS];
  int64_t known = 0;
  int free_at = -1;
  for (int k = 0; k < l->n; k++) {
    size[k] = l->v[k];
    if (l->v[k] == -1) {
      if (free_at >= 0) return -2;
      free_at = k;
    } else {
      known += l->v[k];
    }
  }
  if (free_at >= 0) size[free_at] = dim - known;
  *count = l->n;
  return (free_at >= 0 ? known > dim : known != dim) ? -1 : OPF_OK;
}

static int split_axis_of(const opf_case *c) { return opf_axis(c->p[P_SPLIT_AXIS], c->in[0].ndim); }

static int split_common_infer(opf_case *c, int equal) {
  const opf_tensor *x = &c->in[0];
  const opf_list *l = &c->list[P_SPLIT_SECTIONS];
  char s[96];
  int rc = shp_need(c, 0, "x=1024x1024 axis=0"), axis = 0, n;
  if (rc || (rc = shp_axis(c, "axis", c->p[P_SPLIT_AXIS], x, x->ndim, &axis))) return rc;
  if (!equal && (l->n < 1 || l->n > OPF_MAX_OUT))
    return opf_case_error(c, OPF_EINVAL, "sections lists %d sizes: give 1 to %d", l->n, OPF_MAX_OUT);
  int64_t size[OPF_MAX_OUT], dim = x->shape[axis];
  rc = split_sizes(c, equal, dim, size, &n);
  if (rc == -2) return opf_case_error(c, OPF_EINVAL, "sections has more than one -1");
  if (rc && equal)
    return opf_case_error(c, OPF_EINVAL, "axis %d of x=%s has %lld elements, not divisible into "
                          "%d equal sections", axis, opf_shape_str(x, s, sizeof s),
                          (long long)dim, n);
  if (rc)
    return opf_case_error(c, OPF_EINVAL, "sections do not add up to axis %d of x=%s (%lld "
                          "elements)", axis, opf_shape_str(x, s, sizeof s), (long long)dim);
  for (int k = 0; k < OPF_MAX_OUT; k++) {
    int64_t shape[OPF_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = k < n ? size[k] : 0;
    opf_set_out(c, k, c->dtype, x->ndim, shape);
  }
  return OPF_OK;
}

static int split_infer(opf_case *c) { return split_common_infer(c, 1); }
static int sections_infer(opf_case *c) { return split_common_infer(c, 0); }

/* Forward scatters x's rows into the outputs; backward gathers their gradients into dx. */
static int split_run(opf_case *c, int bwd) {
  const int axis = split_axis_of(c);
  cat_ctx x = {.es = opf_dtype_size(c->dtype), .gather = bwd,
               .joined = bwd ? c->gin[0].data : c->in[0].data};
  for (int k = 0; k < OPF_MAX_OUT; k++)
    if (c->out[k].shape[axis])
      cat_add(&x, bwd ? c->gout[k].data : c->out[k].data,
              c->out[k].shape[axis] * cat_inner(&c->out[k], axis));
  cat_go(&x, opf_numel(&c->in[0]));
  return OPF_OK;
}
static int split_forward(opf_case *c) { return split_run(c, 0); }
static int split_backward(opf_case *c) { return split_run(c, 1); }

/* y_k[o, j, t] = x[o, start_k + j, t]. */
static int split_reference(opf_case *c) {
  const int axis = split_axis_of(c);
  const opf_tensor *x = &c->in[0];
  const int64_t outer = opf_shape_numel(axis, x->shape), inner = cat_inner(x, axis);
  const size_t es = opf_dtype_size(c->dtype);
  int64_t start = 0;
  for (int k = 0; k < OPF_MAX_OUT; k++) {
    const int64_t n = c->out[k].shape[axis];
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t t = 0; t < inner; t++)
          memcpy((char *)c->out[k].data + ((o * n + j) * inner + t) * (int64_t)es,
                 (const char *)x->data + ((o * x->shape[axis] + start + j) * inner + t) * (int64_t)es, es);
    start += n;
  }
  return OPF_OK;
}

/* ---- models ---- */
/* Every element of the joined tensor is read once and written once per pass. */
static double cat_bytes(const opf_case *c, opf_pass p) {
  int64_t moved = 0; /* backward: the pieces whose gradient is not a view of g */
  for (int i = 0; i < CAT_MAX; i++)
    if (c->present[i] && !opf_case_grad_view(c, i, NULL)) moved += opf_numel(&c->in[i]);
  const double es = (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, 2.0 * (double)opf_numel(&c->out[0]) * es, 2.0 * (double)moved * es);
}
static double split_bytes(const opf_case *c, opf_pass p) {
  return lin_move_bytes(c, opf_numel(&c->in[0]), p);
}

#define CAT_IN(nm, fl)                                                                         \
  {.name = nm, .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | (fl), .lo = -1, .hi = 1,          \
   .help = "tensor to join (shape agrees with a's except on axis)"}
#define STACK_IN(nm, fl)                                                                       \
  {.name = nm, .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | (fl), .lo = -1, .hi = 1,          \
   .help = "tensor to stack (same shape as a)"}

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
               {"small", "a=6x1 b=6x1 c=6x1 axis=1"},
               {"test", "a=301x517 b=301x517 c=301x3 axis=1"},
               {"test", "a=173x211 b=97x211 c=301x211 d=5x211 axis=0"},
               {"test", "a=7x300x31 b=7x1x31 c=7x257x31 axis=1"},
               {"test", "a=40001x1 b=40001x1 axis=1"},
               {"large", "a=4096x8192 b=4096x8192 axis=1"},
               {"huge", "a=46341x23171 b=46341x23171 axis=1"}},
    .infer = cat_infer,
    .forward = cat_forward,
    .backward = cat_backward,
    .grad_view = cat_grad_view,
    .reference = cat_reference,
    .flops = lin_move_flops,
    .bytes = cat_bytes,
};

OPPERF_OP(stack) = {
    .abi = OPF_OP_ABI,
    .name = "stack",
    .category = "join",
    .summary = "stack 2-4 same-shaped tensors along a new axis",
    .dtypes = OPF_DT_ALL,
    .n_in = 4,
    .in = {STACK_IN("a", 0), STACK_IN("b", 0), STACK_IN("c", OPF_IN_OPTIONAL),
           STACK_IN("d", OPF_IN_OPTIONAL)},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "axis", .type = OPF_P_AXIS, .def = 0, .min = -OPF_MAX_DIMS - 1,
                .max = OPF_MAX_DIMS, .help = "position of the new axis in the output "
                                             "(negative from the end)"}},
    .shapes = {{"standard", "a=1024x1024 b=1024x1024 axis=0"},
               {"standard", "a=1024x1024 b=1024x1024 axis=-1"},
               {"standard", "a=1024x1024 b=1024x1024 c=1024x1024 d=1024x1024 axis=0"},
               {"standard", "a=1024x1024 b=1024x1024 c=1024x1024 d=1024x1024 axis=1"},
               {"skewed", "a=10000x10 b=10000x10 c=10000x10 axis=0"},
               {"skewed", "a=10000x10 b=10000x10 c=10000x10 axis=1"},
               {"skewed", "a=10000x10 b=10000x10 c=10000x10 axis=2"},
               {"small", "a=16x16 b=16x16"},
               {"small", "a=1x64 b=1x64 c=1x64 axis=1"},
               {"small", "a=37x3 b=37x3 axis=2"},
               {"small", "a=2x3x4 b=2x3x4 c=2x3x4 d=2x3x4 axis=-1"},
               {"small", "a=5 b=5 c=5 axis=1"},
               {"small", "a=() b=()"},
               {"small", "a=3x4 b=3x4 d=3x4 axis=1"},
               {"test", "a=301x517 b=301x517 c=301x517 axis=1"},
               {"test", "a=70001 b=70001 c=70001 axis=1"},
               {"test", "a=5x3001x7 b=5x3001x7 c=5x3001x7 d=5x3001x7 axis=3"},
               {"test", "a=40001 b=40001 axis=-1"},
               {"large", "a=8192x8192 b=8192x8192 axis=0"},
               {"huge", "a=46341x23171 b=46341x23171 axis=2"}},
    .infer = stack_infer,
    .forward = stack_forward,
    .backward = stack_backward,
    .grad_view = stack_grad_view,
    .reference = stack_reference,
    .flops = lin_move_flops,
    .bytes = cat_bytes,
};

#define SPLIT_COMMON                                                                           \
  .abi = OPF_OP_ABI, .category = "join", .dtypes = OPF_DT_ALL, .n_in = 1,                     \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,         \
          .help = "tensor to split"}},                                                         \
  .n_out = OPF_MAX_OUT, .out = {"y0", "y1", "y2", "y3"}, .forward = split_forward,            \
  .backward = split_backward, .reference = split_reference, .flops = lin_move_flops,          \
  .bytes = split_bytes
#define SPLIT_AXIS                                                                             \
  {.name = "axis", .type = OPF_P_AXIS, .def = 0, .min = -OPF_MAX_DIMS, .max = OPF_MAX_DIMS - 1, \
   .help = "axis to split along (negative from the end)"}

OPPERF_OP(split) = {
    SPLIT_COMMON,
    .name = "split",
    .summary = "split into 1-4 equal sections along an axis (outputs past them are empty)",
    .n_params = 2,
    .params = {{.name = "sections", .type = OPF_P_INT, .def = 2, .min = 1, .max = OPF_MAX_OUT,
                .help = "number of equal sections"},
               SPLIT_AXIS},
    .shapes = {{"standard", "x=1024x1024 sections=2 axis=0"},
               {"standard", "x=1024x1024 sections=2 axis=1"},
               {"standard", "x=1024x1024 sections=4 axis=0"},
               {"standard", "x=1024x1024 sections=4 axis=1"},
               {"skewed", "x=30000x10 sections=3 axis=0"},
               {"skewed", "x=10000x30 sections=3 axis=1"},
               {"small", "x=16x16"},
               {"small", "x=16x16 sections=4 axis=1"},
               {"small", "x=37x3 sections=3 axis=1"},
               {"small", "x=6x5 sections=3"},
               {"small", "x=2x8x3 sections=4 axis=-2"},
               {"small", "x=5 sections=1"},
               {"test", "x=301x516 sections=4 axis=1"},
               {"test", "x=40001x3 sections=3 axis=1"},
               {"test", "x=300x517 sections=3"},
               {"large", "x=8192x8192 sections=2 axis=1"},
               {"huge", "x=46341x46342 sections=2 axis=1"}},
    .infer = split_infer,
};

OPPERF_OP(split_sections) = {
    SPLIT_COMMON,
    .name = "split_sections",
    .summary = "split into 1-4 sections of listed sizes along an axis (one -1: the rest)",
    .n_params = 2,
    .params = {{.name = "sections", .type = OPF_P_LIST, .defs = "1,-1", .min = -1, .max = 1e15,
                .help = "section sizes along the axis, e.g. 256,768 or 100,-1,300"},
               SPLIT_AXIS},
    .shapes = {{"standard", "x=1024x1024 sections=256,768 axis=0"},
               {"standard", "x=1024x1024 sections=100,200,300,-1 axis=1"},
               {"skewed", "x=10000x30 sections=5,10,15 axis=1"},
               {"skewed", "x=30000x10 sections=10000,5000,-1 axis=0"},
               {"small", "x=16x16 sections=3,13"},
               {"small", "x=16x16 sections=1,-1,2 axis=1"},
               {"small", "x=37x3 sections=1,2 axis=1"},
               {"small", "x=2x9x3 sections=2,3,0,4 axis=1"},
               {"small", "x=7 sections=7"},
               {"test", "x=301x517 sections=100,-1,17 axis=1"},
               {"test", "x=301x517 sections=1,299,1"},
               {"test", "x=40001x4 sections=1,1,1,1 axis=1"},
               {"large", "x=8192x8192 sections=1000,-1 axis=1"},
               {"huge", "x=46341x46341 sections=10000,-1 axis=1"}},
    .infer = sections_infer,
};

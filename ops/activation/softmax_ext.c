/* softmax_ext.c: softmin (softmax of -x) and masked_softmax / masked_log_softmax over one
 * axis, with a bool mask broadcastable to x (1 keeps an element; MXNet's npx.masked_softmax):
 * the softmax runs over the kept elements only, masked elements get probability 0, and
 * masked_log_softmax gives them -inf (MXNet, JAX, PyTorch's masked log_softmax) or 0 with
 * masked_value=zero. A line with no kept element gives 0 (softmax) or the masked value (log),
 * never NaN, and gradient 0. Gradients: softmin dx = -y (dy - sum(dy y)); masked_softmax the
 * plain softmax gradient (exact, since y = 0 where masked); masked_log_softmax
 * dx = m (dy - exp(y) sum(m dy)).
 * The kernels are softmax.c's (softmax_common.h), unchanged: each block of rows or columns is
 * first transformed into a per-thread buffer while it is read (-x; x with masked elements at
 * -inf, which exp turns into 0; m dy), the softmax kernel runs from the buffer, and the
 * outputs are fixed while the block is still in cache (masked values; softmin's backward
 * negates dx there instead of transforming dy). */
#include "activation/softmax_common.h"

enum { SMX_SOFTMIN, SMX_MASKED, SMX_MASKED_LOG };
enum { IN_X = 0, IN_MASK = 1 };
enum { P_AXIS = 0, P_MASKED_VALUE = 1 };
/* Rows (inner 1) go through the buffer in blocks of about this many bytes (at least one row),
 * so buffer, source and output blocks stay in L1 (measured on (1024, 1024), cycles per call
 * against 64 KiB blocks: masked_log_softmax float64 forward 0.8x, backward 0.8x; 4 KiB is
 * no better). */
#define SMX_BLK_BYTES 8192
static int64_t smx_block_rows(const opf_case *c, int64_t n) {
  const int64_t r = SMX_BLK_BYTES / (n * (int64_t)opf_dtype_size(c->dtype));
  return r > 1 ? r : 1;
}

/* ---- mask addressing: element (o, k, j) of the (outer, n, inner) view of x reads mask byte
 * off(o) + k * sk + mj(j), with stride 0 along broadcast dims ---- */
enum { SMX_J_CONTIG, SMX_J_ZERO, SMX_J_TABLE }; /* mj(j) = j, 0, or jt[j] */

typedef struct smx_mask {
  const uint8_t *m;
  int nod;                                    /* outer dims */
  int64_t od[OPF_MAX_DIMS], os[OPF_MAX_DIMS]; /* their sizes and mask strides */
  int64_t sk;                                 /* mask stride along the axis */
  int jk;                                     /* SMX_J_* */
  int64_t *jt;                                /* SMX_J_TABLE: offsets per inner index */
  int flat; /* the mask has x's shape (up to dims of 1): its offsets are x's */
} smx_mask;

/* Broadcast strides of the mask for each dim of x (0 where the mask has size 1 or no dim). */
static void smx_bstrides(const opf_tensor *x, const opf_tensor *m, int64_t *bs) {
  int64_t st = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    const int e = d - (x->ndim - m->ndim);
    bs[d] = e >= 0 && m->shape[e] != 1 ? st : 0;
    if (e >= 0) st *= m->shape[e];
  }
}

static void smx_mask_init(const opf_case *c, smx_mask *mk, int64_t *jt) {
  const opf_tensor *x = &c->in[IN_X];
  const int axis = opf_axis(c->p[P_AXIS], x->ndim);
  int64_t bs[OPF_MAX_DIMS], xs = 1, inner = 1;
  smx_bstrides(x, &c->in[IN_MASK], bs);
  mk->flat = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    if (x->shape[d] > 1) mk->flat &= bs[d] == xs;
    xs *= x->shape[d];
  }
  xs = 1;
  mk->m = c->in[IN_MASK].data;
  mk->nod = axis;
  for (int d = 0; d < axis; d++) mk->od[d] = x->shape[d], mk->os[d] = bs[d];
  mk->sk = bs[axis];
  int contig = 1, zero = 1;
  for (int d = x->ndim - 1; d > axis; d--) {
    if (x->shape[d] > 1) contig &= bs[d] == xs, zero &= bs[d] == 0;
    xs *= x->shape[d];
  }
  inner = xs;
  mk->jk = contig ? SMX_J_CONTIG : zero ? SMX_J_ZERO : SMX_J_TABLE;
  mk->jt = jt;
  if (mk->jk != SMX_J_TABLE) return;
  for (int64_t j = 0; j < inner; j++) { /* decompose j over the inner dims */
    int64_t r = j, off = 0;
    for (int d = x->ndim - 1; d > axis; d--) off += (r % x->shape[d]) * bs[d], r /= x->shape[d];
    jt[j] = off;
  }
}

/* Mask offset of outer index o (decomposed over the outer dims). */
static int64_t smx_outer_off(const smx_mask *mk, int64_t o) {
  int64_t off = 0;
  for (int d = mk->nod - 1; d >= 0; d--) off += (o % mk->od[d]) * mk->os[d], o /= mk->od[d];
  return off;
}

/* Consecutive outer indices without divisions: the multi-index and its mask offset. */
typedef struct smx_iter {
  int64_t idx[OPF_MAX_DIMS], off;
} smx_iter;
static void smx_iter_set(const smx_mask *mk, smx_iter *it, int64_t o) {
  it->off = smx_outer_off(mk, o);
  for (int d = mk->nod - 1; d >= 0; d--) it->idx[d] = o % mk->od[d], o /= mk->od[d];
}
static void smx_iter_next(const smx_mask *mk, smx_iter *it) {
  for (int d = mk->nod - 1; d >= 0; d--) {
    it->off += mk->os[d];
    if (++it->idx[d] < mk->od[d]) return;
    it->off -= mk->od[d] * mk->os[d];
    it->idx[d] = 0;
  }
}

/* ---- segment kernels: cnt elements, mask bytes m[i] (contiguous), m[jt[i]] (table) or one
 * byte for all ---- */
#define SMX_KERNELS(T, S)                                                                     \
  /* t = -a (a NULL: in place) */                                                            \
  OPF_VEC static void smx_neg_##S(const T *restrict a, T *restrict t, int64_t cnt) {         \
    if (a)                                                                                    \
      for (int64_t i = 0; i < cnt; i++) t[i] = -a[i];                                         \
    else                                                                                      \
      for (int64_t i = 0; i < cnt; i++) t[i] = -t[i];                                         \
  }                                                                                           \
  /* t = m ? a : v */                                                                         \
  OPF_VEC static void smx_sel_##S(const uint8_t *restrict m, const T *restrict a,            \
                                  T *restrict t, int64_t cnt, const T v) {                    \
    for (int64_t i = 0; i < cnt; i++) t[i] = m[i] ? a[i] : v;                                 \
  }                                                                                           \
  /* y = m ? y : v, in place */                                                               \
  OPF_VEC static void smx_set_##S(const uint8_t *restrict m, T *restrict y, int64_t cnt,     \
                                  const T v) {                                                \
    for (int64_t i = 0; i < cnt; i++) y[i] = m[i] ? y[i] : v;                                 \
  }                                                                                           \
  static void smx_seg_##S(int jk, const uint8_t *m, const int64_t *jt, const T *a, T *t,     \
                          int64_t cnt, T v) {                                                 \
    if (jk == SMX_J_CONTIG) {                                                                 \
      if (a) smx_sel_##S(m, a, t, cnt, v);                                                    \
      else smx_set_##S(m, t, cnt, v);                                                         \
    } else if (jk == SMX_J_ZERO) {                                                            \
      if (a && *m) memcpy(t, a, (size_t)cnt * sizeof(T));                                     \
      else if (!*m)                                                                           \
        for (int64_t i = 0; i < cnt; i++) t[i] = v;                                           \
    } else {                                                                                  \
      for (int64_t i = 0; i < cnt; i++) t[i] = m[jt[i]] ? (a ? a[i] : t[i]) : v;              \
    }                                                                                         \
  }
SMX_KERNELS(float, f32)
SMX_KERNELS(double, f64)

/* ---- the per-block pipeline ---- */
typedef struct smx_job {
  opf_case *c;
  const sm_plan *p;
  int kind, bwd;
  smx_mask mk;
  size_t slot;        /* buffer bytes per thread */
  char *buf;          /* the threads' buffers */
  double v_in, v_out; /* masked value of the buffer (-inf fwd, 0 bwd) and of the output */
  int pro, epi;       /* transform into the buffer before the kernel, fix outputs after */
} smx_job;

/* One segment of cnt elements: a (NULL: in place on t) through the mask at byte offset mo
 * (inner kind jk, table from j0) into t with masked value v; softmin: t = -a. */
static void smx_apply(const smx_job *jb, int jk, int64_t mo, int64_t j0, const void *a, void *t,
                      int64_t cnt, double v) {
  if (jb->kind == SMX_SOFTMIN) {
    if (jb->c->dtype == OPF_F32) smx_neg_f32(a, t, cnt);
    else smx_neg_f64(a, t, cnt);
    return;
  }
  const int64_t *jt = jk == SMX_J_TABLE ? jb->mk.jt + j0 : NULL;
  const uint8_t *m = jb->mk.m + mo + (jk == SMX_J_CONTIG ? j0 : 0);
  if (jb->c->dtype == OPF_F32) {
    smx_seg_f32(jk, m, jt, a, t, cnt, (float)v);
  } else {
    smx_seg_f64(jk, m, jt, a, t, cnt, v);
  }
}

/* The pass's source (transformed into the buffer) and destination tensors. */
static const opf_tensor *smx_src(const smx_job *jb) {
  return jb->bwd ? &jb->c->gout[0] : &jb->c->in[IN_X];
}
static opf_tensor *smx_dst(const smx_job *jb) {
  return jb->bwd ? &jb->c->gin[IN_X] : &jb->c->out[0];
}

static void *smx_buffer(const smx_job *jb) {
  return jb->buf + jb->slot * (size_t)omp_get_thread_num();
}

/* Contiguous rows [lo, hi): blocks of rows through the buffer. Softmin and masks of x's shape
 * transform a block in one call; other masks go row by row. */
static void smx_rows(int64_t lo, int64_t hi, void *v) {
  const smx_job *jb = v;
  const opf_case *c = jb->c;
  const int64_t n = jb->p->g.n, es = (int64_t)opf_dtype_size(c->dtype);
  const int64_t rb = smx_block_rows(c, n);
  const int jk = jb->mk.sk ? SMX_J_CONTIG : SMX_J_ZERO; /* along a row */
  const int whole = jb->kind == SMX_SOFTMIN || jb->mk.flat;
  const char *src = smx_src(jb)->data;
  char *dst = smx_dst(jb)->data, *t = smx_buffer(jb);
  smx_iter it;
  if (!whole) smx_iter_set(&jb->mk, &it, lo);
  for (int64_t r0 = lo; r0 < hi; r0 += rb) {
    const int64_t nr = hi - r0 < rb ? hi - r0 : rb, o = r0 * n * es;
    smx_iter first = it;
    if (jb->pro && whole)
      smx_apply(jb, SMX_J_CONTIG, r0 * n, 0, src + o, t, nr * n, jb->v_in);
    else if (jb->pro)
      for (int64_t r = 0; r < nr; r++, smx_iter_next(&jb->mk, &it))
        smx_apply(jb, jk, it.off, 0, src + o + r * n * es, t + r * n * es, n, jb->v_in);
    const char *in = jb->pro ? t : src + o;
    if (jb->bwd)
      sm_rows_kernel(c->dtype, 1, (const char *)c->out[0].data + o, in, dst + o, nr, n, jb->p->lg);
    else
      sm_rows_kernel(c->dtype, 0, in, NULL, dst + o, nr, n, jb->p->lg);
    if (!jb->epi) continue;
    if (whole)
      smx_apply(jb, SMX_J_CONTIG, r0 * n, 0, NULL, dst + o, nr * n, jb->v_out);
    else
      for (int64_t r = 0; r < nr; r++, smx_iter_next(&jb->mk, &first))
        smx_apply(jb, jk, first.off, 0, NULL, dst + o + r * n * es, n, jb->v_out);
  }
}

/* Outer-axis task: its n x w block through a buffer of the same strides (one segment when
 * the block is a whole contiguous slab and the mask has x's layout). */
static void smx_task(int64_t t, void *v) {
  const smx_job *jb = v;
  const sm_plan *p = jb->p;
  const opf_case *c = jb->c;
  const int64_t es = (int64_t)opf_dtype_size(c->dtype), inner = p->g.inner;
  int64_t w;
  const int64_t off = sm_task_off(p, t, &w), o = off / (p->g.n * inner), j0 = off % inner;
  const int slab = w == inner && (jb->kind == SMX_SOFTMIN || jb->mk.flat);
  const int64_t mo = jb->kind == SMX_SOFTMIN ? 0 : smx_outer_off(&jb->mk, o);
  const int64_t segs = slab ? 1 : p->g.n, len = slab ? p->g.n * inner : w;
  const char *src = (const char *)smx_src(jb)->data + off * es;
  char *dst = (char *)smx_dst(jb)->data + off * es, *buf = smx_buffer(jb);
  for (int64_t k = 0; k < segs && jb->pro; k++)
    smx_apply(jb, jb->mk.jk, mo + k * jb->mk.sk, j0, src + k * inner * es, buf + k * inner * es,
              len, jb->v_in);
  const char *in = jb->pro ? buf : src;
  if (jb->bwd)
    sm_cols_kernel(c->dtype, 1, (const char *)c->out[0].data + off * es, in, dst, p->g.n, inner,
                   p->m, w, p->lg);
  else
    sm_cols_kernel(c->dtype, 0, in, NULL, dst, p->g.n, inner, p->m, w, p->lg);
  if (!jb->epi) return;
  for (int64_t k = 0; k < segs; k++)
    smx_apply(jb, jb->mk.jk, mo + k * jb->mk.sk, j0, NULL, dst + k * inner * es, len, jb->v_out);
}

/* Buffer elements per thread: a block of rows, or one task's footprint (n rows of stride
 * inner, w wide). */
static size_t smx_slot_bytes(const opf_case *c) {
  const sm_plan p = sm_make_plan(c, 0);
  const int64_t n = p.g.n > 0 ? p.g.n : 1;
  const int64_t e = p.g.inner == 1 ? smx_block_rows(c, n) * n
                                   : (n - 1) * p.g.inner + p.cbw;
  return ((size_t)e * opf_dtype_size(c->dtype) + 63) & ~(size_t)63;
}

/* Bytes of the mask's inner offset table at the start of the workspace (masked operators). */
static size_t smx_table_bytes(const opf_case *c, int kind) {
  if (kind == SMX_SOFTMIN) return 0;
  return ((size_t)sm_make_plan(c, 0).g.inner * sizeof(int64_t) + 63) & ~(size_t)63;
}

static int smx_run(opf_case *c, int kind, int bwd) {
  if (bwd && !c->gin[IN_X].data) return OPF_OK;
  if (kind == SMX_MASKED && bwd) return sm_run(c, 0, 1); /* y = 0 where masked: exact */
  const sm_plan p = sm_make_plan(c, kind == SMX_MASKED_LOG);
  if (p.g.n == 0 || p.g.outer * p.g.inner == 0) return OPF_OK;
  const size_t tb = smx_table_bytes(c, kind);
  const int neginf = kind == SMX_MASKED_LOG && c->p[P_MASKED_VALUE] == 0;
  smx_job jb = {.c = c, .p = &p, .kind = kind, .bwd = bwd, .slot = smx_slot_bytes(c),
                .buf = (char *)c->ws + tb};
  /* Softmin: forward negates x into the buffer; backward runs softmax's gradient on dy and
   * negates dx in cache (dx = -y (dy - sum(dy y))), so y and dy stream together as in the
   * one-pass kernel (negating dy first measured 2.1x softmax's cycles in float64, this 1.05x).
   * Masked forward: masked inputs at -inf, outputs set to the masked value (this also covers
   * lines with nothing kept, whose kernel output is NaN). Masked backward (log): dy masked to
   * 0; dx is then 0 where y = -inf already, and must be set where y = 0. */
  jb.v_in = bwd ? 0 : -INFINITY;
  jb.v_out = bwd ? 0 : neginf ? -INFINITY : 0;
  jb.pro = !(kind == SMX_SOFTMIN && bwd);
  jb.epi = kind == SMX_SOFTMIN ? bwd : !(bwd && neginf);
  if (kind != SMX_SOFTMIN) smx_mask_init(c, &jb.mk, c->ws);
  const int64_t slots = (int64_t)((c->ws_bytes - tb) / jb.slot);
  int nt = omp_get_max_threads();
  nt = nt < slots ? nt : (int)slots;
  sm_drive(c, &p, nt, smx_rows, smx_task, &jb);
  return OPF_OK;
}

static int softmin_forward(opf_case *c) { return smx_run(c, SMX_SOFTMIN, 0); }
static int softmin_backward(opf_case *c) { return smx_run(c, SMX_SOFTMIN, 1); }
static int masked_softmax_forward(opf_case *c) { return smx_run(c, SMX_MASKED, 0); }
static int masked_softmax_backward(opf_case *c) { return smx_run(c, SMX_MASKED, 1); }
static int masked_log_softmax_forward(opf_case *c) { return smx_run(c, SMX_MASKED_LOG, 0); }
static int masked_log_softmax_backward(opf_case *c) { return smx_run(c, SMX_MASKED_LOG, 1); }

/* ---- shapes ---- */
/* The mask's inner offset table, then one buffer slot per thread. */
static void smx_set_ws(opf_case *c, int kind) {
  c->ws_bytes = smx_table_bytes(c, kind) + (size_t)omp_get_max_threads() * smx_slot_bytes(c);
}

static int softmin_infer(opf_case *c) {
  int rc = sm_infer(c);
  if (rc || c->in[IN_X].ndim < 0) return rc;
  smx_set_ws(c, SMX_SOFTMIN);
  return OPF_OK;
}

static int masked_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *m = &c->in[IN_MASK];
  if (x->ndim < 0) return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape");
  int rc = sm_infer(c);
  if (rc) return rc;
  if (m->ndim < 0) opf_tensor_set_shape(m, m->dtype, x->ndim, x->shape);
  char sx[96], sm[96];
  for (int e = 0; e < m->ndim; e++) {
    const int d = e - (m->ndim - x->ndim);
    if (d < 0 || (m->shape[e] != 1 && m->shape[e] != x->shape[d]))
      return opf_case_error(c, OPF_EINVAL,
                            "mask=%s cannot be broadcast to x=%s (it must have x's shape or "
                            "size 1 in some dims)",
                            opf_shape_str(m, sm, sizeof sm), opf_shape_str(x, sx, sizeof sx));
  }
  smx_set_ws(c, SMX_MASKED);
  return OPF_OK;
}

/* ---- references (softmax_common.h's, with a sign and a mask) ---- */
static int smx_kept(const opf_case *c, int64_t flat) {
  const opf_tensor *x = &c->in[IN_X];
  int64_t bs[OPF_MAX_DIMS], off = 0;
  smx_bstrides(x, &c->in[IN_MASK], bs);
  for (int d = x->ndim - 1; d >= 0; d--) off += (flat % x->shape[d]) * bs[d], flat /= x->shape[d];
  return ((const uint8_t *)c->in[IN_MASK].data)[off] != 0;
}

static int softmin_reference(opf_case *c) { return sm_reference_gen(c, 0, -1, NULL, 0); }
static int masked_softmax_reference(opf_case *c) {
  return sm_reference_gen(c, 0, 1, smx_kept, 0);
}
static int masked_log_softmax_reference(opf_case *c) {
  return sm_reference_gen(c, 1, 1, smx_kept, c->p[P_MASKED_VALUE] == 0 ? -INFINITY : 0);
}

/* ---- models ----
 * softmin: softmax's plus a negation per element each way. masked: a select per element into
 * the buffer and one on the output (forward); masked_log_softmax's backward selects dy and dx.
 * Bytes: softmax's, plus the mask (one byte per mask element) read by forward, and by
 * masked_log_softmax's backward. */
static double softmin_flops(const opf_case *c, opf_pass p) { return sm_flops_extra(c, p, 1, 1); }
static double masked_softmax_flops(const opf_case *c, opf_pass p) {
  return sm_flops_extra(c, p, 2, 0);
}
static double masked_log_softmax_flops(const opf_case *c, opf_pass p) {
  return sm_flops_extra(c, p, 2, 2);
}
static double masked_bytes(const opf_case *c, opf_pass p, int bwd_mask) {
  const double mb = (double)opf_numel(&c->in[IN_MASK]);
  return sm_bytes(c, p) + opf_pass_sum(p, mb, bwd_mask ? mb : 0);
}
static double masked_softmax_bytes(const opf_case *c, opf_pass p) {
  return masked_bytes(c, p, 0);
}
static double masked_log_softmax_bytes(const opf_case *c, opf_pass p) {
  return masked_bytes(c, p, 1);
}

#define SMX_COMMON                                                                            \
  .abi = OPF_OP_ABI, .category = "nn.activation", .dtypes = OPF_DT_FLOAT, .n_out = 1,         \
  .out = {"y"}
#define SMX_MASK_INPUT                                                                        \
  {.name = "mask", .dtype = OPF_BOOL, .help = "1 keeps an element; x's shape or broadcastable " \
                                              "to it (derived: x's shape, a fair coin)"}
/* Broadcast masks: row-wise, column-wise, over the outer dims, mixed inner dims. */
#define SMX_MASK_SHAPES(S)                                                                    \
  {"small", "x=16x16 mask=1x16 axis=-1" S}, {"small", "x=16x16 mask=16x1 axis=-1" S},         \
      {"small", "x=16x16 mask=16x1 axis=0" S}, {"small", "x=37x3 mask=3 axis=0" S},           \
      {"small", "x=4x5x6 mask=5x1 axis=1" S}, {"small", "x=3x4x5x2 mask=3x1x5x1 axis=1" S},   \
      {"test", "x=301x517 mask=1x517 axis=-1"}, {"test", "x=3x1000x7 mask=3x1x7 axis=1"},     \
      {"test", "x=20x30x40 mask=30x1 axis=0"}

OPPERF_OP(softmin) = {
    SMX_COMMON,
    .name = "softmin",
    .summary = "softmin over an axis: softmax(-x)",
    .n_in = 1,
    .in = {SM_X_INPUT},
    .n_params = 1,
    .params = {SM_AXIS_PARAM},
    .shapes = {SM_SHAPES},
    .infer = softmin_infer,
    .forward = softmin_forward,
    .backward = softmin_backward,
    .reference = softmin_reference,
    .flops = softmin_flops,
    .bytes = sm_bytes,
};

OPPERF_OP(masked_softmax) = {
    SMX_COMMON,
    .name = "masked_softmax",
    .summary = "softmax over the kept elements of a bool mask; masked elements give 0",
    .n_in = 2,
    .in = {SM_X_INPUT, SMX_MASK_INPUT},
    .n_params = 1,
    .params = {SM_AXIS_PARAM},
    .shapes = {SM_SHAPES, SMX_MASK_SHAPES("")},
    .infer = masked_infer,
    .forward = masked_softmax_forward,
    .backward = masked_softmax_backward,
    .reference = masked_softmax_reference,
    .flops = masked_softmax_flops,
    .bytes = masked_softmax_bytes,
};

/* The "small" entries use masked_value=zero: -inf outputs make the finite-difference loss
 * infinite (the gradient is the same); the "test" entries check -inf. */
OPPERF_OP(masked_log_softmax) = {
    SMX_COMMON,
    .name = "masked_log_softmax",
    .summary = "log_softmax over the kept elements of a bool mask; masked elements give -inf",
    .n_in = 2,
    .in = {SM_X_INPUT, SMX_MASK_INPUT},
    .n_params = 2,
    .params = {SM_AXIS_PARAM,
               {.name = "masked_value", .type = OPF_P_ENUM, .def = 0, .choices = "neginf|zero",
                .help = "output at masked elements: -inf (MXNet, JAX) or 0"}},
    .shapes = {SM_SHAPES_SFX(" masked_value=zero"), SMX_MASK_SHAPES(" masked_value=zero"),
               {"test", "x=37x3 axis=0 masked_value=zero"}},
    .infer = masked_infer,
    .forward = masked_log_softmax_forward,
    .backward = masked_log_softmax_backward,
    .reference = masked_log_softmax_reference,
    .flops = masked_log_softmax_flops,
    .bytes = masked_log_softmax_bytes,
};

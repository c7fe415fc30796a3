/* gradview.c: gradients handed back as views of an output gradient (opf_view, op.h): whether a
 * case's input gradient is one, the builders operators declare them with, and the view tensor
 * the case allocation puts in c->gin[i] instead of new memory. */
#include <stdio.h>
#include <string.h>

#include "opperf/harness.h"

int opf_case_grad_view(const opf_case *c, int i, opf_view *v) {
  opf_view tmp;
  if (!v) v = &tmp;
  memset(v, 0, sizeof *v);
  /* Only the operator's own kernels know to skip a view: materialize writes it, the unfused
   * chain and plugins' kernels are other code. */
  if (c->impl != OPF_IMPL_NATIVE || !c->op->grad_view || !opf_case_wants_grad(c, i)) return 0;
  if (!c->op->grad_view(c, i, v) || v->of < 1 || v->of > c->op->n_out ||
      !opf_dtype_is_float(c->out[v->of - 1].dtype) || c->out[v->of - 1].dtype != c->in[i].dtype) {
    memset(v, 0, sizeof *v);
    return 0;
  }
  return 1;
}

/* Contiguous row-major strides of a shape. */
static void contig(int ndim, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int k = ndim - 1; k >= 0; k--) strides[k] = s, s *= shape[k];
}

int opf_view_alias(const opf_case *c, int i, int out, opf_view *v) {
  memset(v, 0, sizeof *v);
  v->of = out + 1;
  contig(c->in[i].ndim, c->in[i].shape, v->strides);
  return opf_numel(&c->in[i]) == opf_numel(&c->out[out]);
}

int opf_view_narrow(const opf_case *c, int i, int out, int axis, int64_t start, int keep_axis,
                    opf_view *v) {
  const opf_tensor *y = &c->out[out];
  int64_t ys[OPF_MAX_DIMS];
  memset(v, 0, sizeof *v);
  if (axis < 0 || axis >= y->ndim || y->ndim != c->in[i].ndim + (keep_axis ? 0 : 1)) return 0;
  contig(y->ndim, y->shape, ys);
  v->of = out + 1;
  v->offset = start * ys[axis];
  for (int k = 0, j = 0; k < y->ndim; k++)
    if (keep_axis || k != axis) v->strides[j++] = ys[k];
  return 1;
}

const char *opf_view_kind(const opf_case *c, int i, const opf_view *v) {
  const opf_tensor *x = &c->in[i];
  int64_t s[OPF_MAX_DIMS];
  contig(x->ndim, x->shape, s);
  int dense = v->offset == 0 && opf_numel(x) == opf_numel(&c->out[v->of - 1]);
  for (int k = 0; k < x->ndim; k++) {
    if (x->shape[k] != 1 && v->strides[k] == 0) return "broadcast";
    if (x->shape[k] != 1 && v->strides[k] != s[k]) dense = 0;
  }
  return dense ? "alias" : "strided";
}

int opf_case_grad_views_bind(opf_case *c) {
  int n = 0;
  for (int i = 0; i < c->op->n_in; i++) {
    opf_view v;
    if (!opf_case_grad_view(c, i, &v)) continue;
    const opf_tensor *g = &c->gout[v.of - 1];
    opf_tensor *t = &c->gin[i];
    opf_tensor_set_shape(t, c->in[i].dtype, c->in[i].ndim, c->in[i].shape);
    memcpy(t->strides, v.strides, sizeof t->strides);
    t->data = (char *)g->data + v.offset * (int64_t)opf_dtype_size(g->dtype);
    t->nbytes = opf_tensor_is_contiguous(t) ? opf_tensor_bytes(t, NULL) : 0;
    t->owned = 0;
    c->gview[i] = v;
    n++;
  }
  return n;
}

int opf_case_grad_views(const opf_case *c, char *buf, size_t n) {
  size_t off = 0;
  int k = 0;
  buf[0] = '\0';
  for (int i = 0; i < c->op->n_in && off < n; i++) {
    opf_view v;
    if (!opf_case_grad_view(c, i, &v)) continue;
    off += (size_t)snprintf(buf + off, n - off, "%s%s:%s", k++ ? " " : "", c->op->in[i].name,
                            opf_view_kind(c, i, &v));
  }
  return k;
}

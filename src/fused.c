/* fused.c: the "unfused" implementation of fused operators. A descriptor's .unfused text
 * ("conv2d x=x w=w b=b | relu x=_") becomes a chain of sub-cases of registered operators,
 * resolved on the fused case's shapes and params; the stages read the fused case's inputs,
 * the last one writes its outputs, and backward runs the stages in reverse with each
 * intermediate's gradient bound to the next stage's input gradient, so no copies are made
 * and the timing is exactly that of the separate kernels plus their intermediate traffic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fused.h"
#include "opperf/case.h"

#define CHAIN_MAX 8
#define ITEM_MAX 24

enum { BIND_NONE = -2, BIND_PREV = -1 }; /* else: index of the fused case's input */

typedef struct chain_stage {
  opf_case c;
  int bind[OPF_MAX_IN];
} chain_stage;

struct opf_chain {
  int n;
  int n_out; /* the fused operator's outputs: the last stage's first n_out */
  chain_stage st[CHAIN_MAX];
};

static int find_input(const opf_op *op, const char *name) {
  for (int i = 0; i < op->n_in; i++)
    if (!strcmp(op->in[i].name, name)) return i;
  return -1;
}

static int find_param(const opf_op *op, const char *name) {
  for (int i = 0; i < op->n_params; i++)
    if (!strcmp(op->params[i].name, name)) return i;
  return -1;
}

/* Append "name=value" to a spec under construction. */
static int spec_add(char *spec, size_t n, size_t *off, const char *item) {
  int w = snprintf(spec + *off, n - *off, "%s%s", *off ? " " : "", item);
  if (w < 0 || (size_t)w >= n - *off) return -1;
  *off += (size_t)w;
  return 0;
}

/* Resolve one stage ("OP NAME=VALUE ...", tokenised in place) of fused case c. */
static int plan_stage(const opf_case *c, int s, char *text, const chain_stage *prev,
                      chain_stage *st, int *used, opf_err *err) {
  const char *fname = c->op->name;
  char *save = NULL, *tok[ITEM_MAX + 1];
  int nt = 0;
  for (char *t = strtok_r(text, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
    if (nt == ITEM_MAX + 1) return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d has too many items", fname, s + 1);
    tok[nt++] = t;
  }
  if (!nt) return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d is empty", fname, s + 1);
  const opf_op *op = opf_op_find(tok[0]);
  if (!op)
    return opf_err_set(err, OPF_ENOTFOUND, "%s: unfused stage %d: operator '%s' is not in this build",
                       fname, s + 1, tok[0]);
  char spec[1024], item[320], shape[128];
  size_t off = 0;
  int given[OPF_MAX_PARAMS] = {0}, nprev = 0;
  for (int i = 0; i < OPF_MAX_IN; i++) st->bind[i] = BIND_NONE;
  for (int k = 1; k < nt; k++) {
    char *eq = strchr(tok[k], '=');
    if (!eq) return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d: '%s' is not NAME=VALUE", fname, s + 1, tok[k]);
    *eq = '\0';
    const char *name = tok[k], *val = eq + 1;
    int i = find_input(op, name), p = find_param(op, name);
    if (i >= 0) {
      if (!strcmp(val, "none")) continue;
      if (!strcmp(val, "_")) {
        if (!prev) return opf_err_set(err, OPF_EINVAL, "%s: the first unfused stage has no previous output '_'", fname);
        st->bind[i] = BIND_PREV;
        nprev++;
        continue;
      }
      int b = find_input(c->op, val);
      if (b < 0) return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d binds %s.%s to '%s', which is not an input of %s",
                                    fname, s + 1, op->name, name, val, fname);
      if (used[b]++) return opf_err_set(err, OPF_EINVAL, "%s: input '%s' feeds more than one unfused stage", fname, val);
      if (c->present[b]) st->bind[i] = b;
    } else if (p >= 0) {
      snprintf(item, sizeof item, "%s=%s", name, val);
      if (spec_add(spec, sizeof spec, &off, item)) return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d: spec too long", fname, s + 1);
      given[p] = 1;
    } else {
      return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d: '%s' is neither an input nor a param of %s", fname, s + 1, name, op->name);
    }
  }
  if (prev && nprev != 1)
    return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d must use the previous stage's output '_' exactly once", fname, s + 1);
  for (int i = 0; i < op->n_in; i++) {
    const opf_tensor *src = st->bind[i] == BIND_PREV ? &prev->c.out[0] : st->bind[i] >= 0 ? &c->in[st->bind[i]] : NULL;
    if (src) snprintf(item, sizeof item, "%s=%s", op->in[i].name, opf_shape_str(src, shape, sizeof shape));
    else if (op->in[i].flags & OPF_IN_OPTIONAL) snprintf(item, sizeof item, "%s=none", op->in[i].name);
    else return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d leaves input '%s' of %s unbound", fname, s + 1, op->in[i].name, op->name);
    if (spec_add(spec, sizeof spec, &off, item)) return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d: spec too long", fname, s + 1);
  }
  for (int p = 0; p < op->n_params; p++) { /* the fused op's params of the same name */
    int q = find_param(c->op, op->params[p].name);
    if (given[p] || q < 0) continue;
    opf_case_param_str(c, q, item, sizeof item);
    if (spec_add(spec, sizeof spec, &off, item)) return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d: spec too long", fname, s + 1);
  }
  opf_err e;
  int rc = opf_case_init(&st->c, op, c->dtype, spec, &e);
  if (rc) return opf_err_set(err, rc, "%s: unfused stage %d: %s", fname, s + 1, e.msg);
  for (int i = 0; i < op->n_in; i++) {
    const opf_tensor *src = st->bind[i] == BIND_PREV ? &prev->c.out[0] : st->bind[i] >= 0 ? &c->in[st->bind[i]] : NULL;
    if (src && src->dtype != st->c.in[i].dtype)
      return opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d: input '%s' of %s is %s, but is bound to a %s tensor", fname,
                         s + 1, op->in[i].name, op->name, opf_dtype_name(st->c.in[i].dtype), opf_dtype_name(src->dtype));
  }
  return OPF_OK;
}

int opf_chain_plan(const opf_case *c, struct opf_chain **out, opf_err *err) {
  *out = NULL;
  const opf_op *op = c->op;
  if (!op->unfused) return opf_err_set(err, OPF_EUNSUPPORTED, "%s is not a fused operator (no unfused implementation)", op->name);
  struct opf_chain *ch = calloc(1, sizeof *ch);
  char *text = strdup(op->unfused);
  if (!ch || !text) {
    free(ch);
    free(text);
    return opf_err_set(err, OPF_ENOMEM, "out of memory");
  }
  int used[OPF_MAX_IN] = {0}, rc = OPF_OK;
  char *save = NULL;
  for (char *s = strtok_r(text, "|", &save); s && !rc; s = strtok_r(NULL, "|", &save)) {
    if (ch->n == CHAIN_MAX) rc = opf_err_set(err, OPF_EINVAL, "%s: more than %d unfused stages", op->name, CHAIN_MAX);
    else rc = plan_stage(c, ch->n, s, ch->n ? &ch->st[ch->n - 1] : NULL, &ch->st[ch->n], used, err);
    if (!rc) ch->n++;
  }
  free(text);
  if (!rc && !ch->n) rc = opf_err_set(err, OPF_EINVAL, "%s: empty unfused chain", op->name);
  const opf_case *last = rc ? NULL : &ch->st[ch->n - 1].c;
  if (!rc && last->op->n_out < op->n_out)
    rc = opf_err_set(err, OPF_EINVAL, "%s: the last unfused stage (%s) has %d outputs, the operator %d", op->name,
                     last->op->name, last->op->n_out, op->n_out);
  for (int j = 0; !rc && j < op->n_out; j++) {
    const opf_tensor *a = &c->out[j], *b = &last->out[j];
    if (a->dtype != b->dtype || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim)) {
      char sa[128], sb[128];
      rc = opf_err_set(err, OPF_EINVAL, "%s: output '%s' is %s %s, the unfused chain gives %s %s", op->name, op->out[j],
                       opf_dtype_name(a->dtype), opf_shape_str(a, sa, sizeof sa), opf_dtype_name(b->dtype),
                       opf_shape_str(b, sb, sizeof sb));
    }
  }
  /* Every input that gets a gradient must get it from its stage, and the gradient must flow
   * back through every later stage's '_'. */
  int upstream = 0; /* some earlier stage has an input that gets a gradient */
  for (int s = 0; !rc && s < ch->n; s++) {
    const opf_case *sc = &ch->st[s].c;
    for (int i = 0; !rc && i < sc->op->n_in; i++) {
      int b = ch->st[s].bind[i];
      if (b == BIND_PREV && upstream && (!opf_case_wants_grad(sc, i) || !sc->op->backward))
        rc = opf_err_set(err, OPF_EINVAL, "%s: unfused stage %d (%s) passes no gradient back to the stage before it",
                         op->name, s + 1, sc->op->name);
      if (b < 0 || !(op->in[b].flags & OPF_IN_DIFF) || !opf_dtype_is_float(c->in[b].dtype)) continue;
      if (!opf_case_wants_grad(sc, i) || !sc->op->backward)
        rc = opf_err_set(err, OPF_EINVAL, "%s: input '%s' has a gradient, but unfused stage %d (%s) computes none for it",
                         op->name, op->in[b].name, s + 1, sc->op->name);
      upstream = 1;
    }
  }
  if (rc) {
    opf_chain_free(ch);
    return rc;
  }
  ch->n_out = op->n_out;
  *out = ch;
  return OPF_OK;
}

static int is_fused_out(const struct opf_chain *ch, int s, int j) {
  return s == ch->n - 1 && j < ch->n_out;
}

uint64_t opf_chain_footprint(const struct opf_chain *ch, int with_grad) {
  /* Everything of the stages except the tensors they share with the fused case. */
  uint64_t total = 0;
  for (int s = 0; s < ch->n; s++) {
    const opf_case *sc = &ch->st[s].c;
    int ovf = 0;
    total += sc->ws_bytes;
    for (int j = 0; j < sc->op->n_out; j++) {
      if (sc->op->inplace[j]) continue;
      uint64_t b = opf_tensor_bytes(&sc->out[j], &ovf);
      int grad = with_grad && opf_dtype_is_float(sc->out[j].dtype);
      if (!is_fused_out(ch, s, j)) total += b * (grad ? 2 : 1);
    }
    if (ovf) return UINT64_MAX;
  }
  return total;
}

/* A zeroed tensor of src's shape (gradients nobody writes, intermediates before the first call). */
static int alloc_zero(opf_tensor *t, const opf_tensor *like, opf_err *err) {
  opf_tensor_set_shape(t, like->dtype, like->ndim, like->shape);
  int rc = opf_tensor_alloc(t, err);
  if (!rc) memset(t->data, 0, t->nbytes);
  return rc;
}

static void view_of(opf_tensor *dst, const opf_tensor *src) {
  *dst = *src;
  dst->owned = 0;
}

int opf_chain_alloc(struct opf_chain *ch, opf_case *c, int with_grad, opf_err *err) {
  int rc = OPF_OK;
  for (int s = 0; s < ch->n && !rc; s++) {
    chain_stage *st = &ch->st[s];
    opf_case *sc = &st->c;
    for (int i = 0; i < sc->op->n_in; i++)
      if (sc->present[i]) view_of(&sc->in[i], st->bind[i] == BIND_PREV ? &ch->st[s - 1].c.out[0] : &c->in[st->bind[i]]);
    for (int j = 0; j < sc->op->n_out && !rc; j++) {
      if (sc->op->inplace[j]) view_of(&sc->out[j], &sc->in[sc->op->inplace[j] - 1]);
      else if (is_fused_out(ch, s, j)) view_of(&sc->out[j], &c->out[j]);
      else rc = alloc_zero(&sc->out[j], &sc->out[j], err);
    }
    if (!rc && sc->ws_bytes && !(sc->ws = opf_alloc(sc->ws_bytes)))
      rc = opf_err_set(err, OPF_ENOMEM, "cannot allocate %zu bytes of workspace", sc->ws_bytes);
  }
  /* Gradients from the last stage back: stage s's output gradient is stage s+1's input gradient. */
  for (int s = ch->n - 1; with_grad && s >= 0 && !rc; s--) {
    chain_stage *st = &ch->st[s];
    opf_case *sc = &st->c;
    for (int i = 0; i < sc->op->n_in && !rc; i++) {
      if (!opf_case_wants_grad(sc, i)) continue;
      int b = st->bind[i];
      if (b >= 0 && c->gin[b].data) view_of(&sc->gin[i], &c->gin[b]);
      else rc = alloc_zero(&sc->gin[i], &sc->in[i], err);
    }
    for (int j = 0; j < sc->op->n_out && !rc; j++) {
      if (!opf_dtype_is_float(sc->out[j].dtype)) continue;
      if (is_fused_out(ch, s, j)) {
        view_of(&sc->gout[j], &c->gout[j]);
        continue;
      }
      const opf_tensor *next = NULL;
      if (j == 0 && s < ch->n - 1)
        for (int k = 0; k < ch->st[s + 1].c.op->n_in; k++)
          if (ch->st[s + 1].bind[k] == BIND_PREV && ch->st[s + 1].c.gin[k].data) next = &ch->st[s + 1].c.gin[k];
      if (next) view_of(&sc->gout[j], next);
      else rc = alloc_zero(&sc->gout[j], &sc->out[j], err);
    }
  }
  return rc;
}

int opf_chain_call(opf_case *c, opf_pass p) {
  struct opf_chain *ch = c->chain;
  if (p != OPF_PASS_BWD)
    for (int s = 0; s < ch->n; s++) {
      opf_case *sc = &ch->st[s].c;
      sc->seed = c->seed;
      int rc = sc->op->forward(sc);
      if (rc) return opf_case_error(c, rc, "unfused stage %d (%s): %s", s + 1, sc->op->name, sc->err.msg);
    }
  if (p != OPF_PASS_FWD)
    for (int s = ch->n - 1; s >= 0; s--) {
      opf_case *sc = &ch->st[s].c;
      if (!sc->op->backward) continue; /* planned: none of its inputs needs a gradient */
      sc->seed = c->seed;
      int rc = sc->op->backward(sc);
      if (rc) return opf_case_error(c, rc, "unfused stage %d (%s): %s", s + 1, sc->op->name, sc->err.msg);
    }
  return OPF_OK;
}

void opf_chain_free(struct opf_chain *ch) {
  if (!ch) return;
  for (int s = 0; s < ch->n; s++) opf_case_release(&ch->st[s].c);
  free(ch);
}

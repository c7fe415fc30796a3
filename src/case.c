/* case.c: resolving an operator into a case (spec parsing, params, infer), allocating and
 * filling its tensors, and calling its passes. Shared by the harness, the CLI and the tests. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/case.h"
#include "opperf/npy.h"
#include "fused.h"

int opf_case_error(opf_case *c, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  opf_err_vset(&c->err, code, fmt, ap);
  va_end(ap);
  return code;
}

static int param_index(const opf_op *op, const char *name) {
  for (int i = 0; i < op->n_params; i++)
    if (!strcmp(op->params[i].name, name)) return i;
  return -1;
}

static int input_index(const opf_op *op, const char *name) {
  for (int i = 0; i < op->n_in; i++)
    if (!strcmp(op->in[i].name, name)) return i;
  return -1;
}

double opf_case_param(const opf_case *c, const char *name) {
  int i = param_index(c->op, name);
  return i < 0 ? NAN : c->p[i];
}

int opf_axis(double axis, int ndim) {
  int a = (int)axis;
  if (a < 0) a += ndim;
  return (a < 0 || a >= ndim) ? -1 : a;
}

int opf_list_parse(const char *s, opf_list *l, opf_err *err) {
  l->n = 0;
  if (!s || !*s || !strcmp(s, "none") || !strcmp(s, "[]") || !strcmp(s, "()")) return OPF_OK;
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno)
      return opf_err_set(err, OPF_EINVAL, "malformed list '%s': expected integers like 2x3 or 2,-1", s);
    if (l->n == OPF_MAX_DIMS)
      return opf_err_set(err, OPF_EINVAL, "list '%s' has more than %d values", s, OPF_MAX_DIMS);
    l->v[l->n++] = v;
    p = end;
    if (!*p) return OPF_OK;
    if (*p != 'x' && *p != 'X' && *p != ',')
      return opf_err_set(err, OPF_EINVAL, "malformed list '%s': expected integers like 2x3 or 2,-1", s);
    p++;
  }
}

/* Parse one param value by its declared type, checking the range. */
static int parse_param(const opf_op *op, const opf_param_desc *pd, const char *v, double *out,
                       opf_err *err) {
  char *end;
  errno = 0;
  switch (pd->type) {
  case OPF_P_BOOL:
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "on")) *out = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "off")) *out = 0;
    else
      return opf_err_set(err, OPF_EINVAL, "param '%s' of '%s' must be true or false, not '%s'",
                         pd->name, op->name, v);
    return OPF_OK;
  case OPF_P_ENUM: {
    const char *p = pd->choices;
    size_t vl = strlen(v);
    for (int k = 0; p && *p; k++) {
      const char *bar = strchr(p, '|');
      size_t l = bar ? (size_t)(bar - p) : strlen(p);
      if (l == vl && !strncmp(p, v, l)) {
        *out = k;
        return OPF_OK;
      }
      p = bar ? bar + 1 : p + l;
    }
    return opf_err_set(err, OPF_EINVAL, "param '%s' of '%s' must be one of %s, not '%s'",
                       pd->name, op->name, pd->choices, v);
  }
  case OPF_P_AXIS:
    if (!strcmp(v, "all") || !strcmp(v, "none")) {
      *out = OPF_AXIS_ALL;
      return OPF_OK;
    }
    /* fall through */
  case OPF_P_INT: {
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno)
      return opf_err_set(err, OPF_EINVAL, "param '%s' of '%s' must be an integer%s, not '%s'",
                         pd->name, op->name, pd->type == OPF_P_AXIS ? " or 'all'" : "", v);
    *out = (double)x;
    break;
  }
  case OPF_P_LIST: return OPF_EINVAL; /* parse_list_param */
  case OPF_P_FLOAT:
    /* A range with one infinite end (clip's min and max) makes the param optional: "none"
     * (absent, torch's None) is that end, and an infinity inside the range is a value. */
    if (!strcmp(v, "none") && isinf(pd->min) != isinf(pd->max)) {
      *out = isinf(pd->min) ? pd->min : pd->max;
      return OPF_OK;
    }
    *out = strtod(v, &end);
    if (end == v || *end || (errno && !isinf(*out)) || isnan(*out) ||
        (isinf(*out) && *out != pd->min && *out != pd->max))
      return opf_err_set(err, OPF_EINVAL, "param '%s' of '%s' must be a number%s, not '%s'",
                         pd->name, op->name,
                         isinf(pd->min) != isinf(pd->max) ? " or none" : "", v);
    break;
  }
  if (*out < pd->min || *out > pd->max)
    return opf_err_set(err, OPF_EINVAL, "param '%s' of '%s' is %s, outside its range [%g, %g]",
                       pd->name, op->name, v, pd->min, pd->max);
  return OPF_OK;
}

static int parse_list_param(const opf_op *op, const opf_param_desc *pd, const char *v,
                            opf_list *l, double *count, opf_err *err) {
  opf_err e2;
  if (opf_list_parse(v, l, &e2))
    return opf_err_set(err, OPF_EINVAL, "param '%s' of '%s': %s", pd->name, op->name, e2.msg);
  for (int k = 0; k < l->n; k++)
    if (l->v[k] < pd->min || l->v[k] > pd->max)
      return opf_err_set(err, OPF_EINVAL, "param '%s' of '%s': value %lld outside its range [%g, %g]",
                         pd->name, op->name, (long long)l->v[k], pd->min, pd->max);
  *count = l->n;
  return OPF_OK;
}

static void list_names(const opf_op *op, char *buf, size_t n) {
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < op->n_in && off < n; i++)
    off += snprintf(buf + off, n - off, "%s%s", off ? ", " : "", op->in[i].name);
  for (int i = 0; i < op->n_params && off < n; i++)
    off += snprintf(buf + off, n - off, "%s%s", off ? ", " : "", op->params[i].name);
}

int opf_case_init(opf_case *c, const opf_op *op, opf_dtype dt, const char *spec, opf_err *err) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->dtype = dt;
  if (!(op->dtypes & OPF_DT_BIT(dt)))
    return opf_err_set(err, OPF_EUNSUPPORTED, "operator '%s' does not support dtype %s",
                       op->name, opf_dtype_name(dt));
  for (int i = 0; i < op->n_params; i++) {
    c->p[i] = op->params[i].def;
    if (op->params[i].type == OPF_P_LIST) {
      int rc = parse_list_param(op, &op->params[i], op->params[i].defs, &c->list[i], &c->p[i], err);
      if (rc) return rc;
    }
  }
  for (int i = 0; i < op->n_in; i++) {
    c->present[i] = 1;
    c->in[i].ndim = -1; /* unset: infer may derive it */
    c->in[i].dtype = op->in[i].dtype == OPF_DT_CASE ? dt : (opf_dtype)op->in[i].dtype;
  }
  for (int i = 0; i < op->n_out; i++) c->out[i].ndim = -1;

  char buf[1024];
  if (!spec) spec = "";
  if (strlen(spec) >= sizeof buf)
    return opf_err_set(err, OPF_EINVAL, "spec for '%s' is too long", op->name);
  strcpy(buf, spec);
  char *save = NULL;
  for (char *tok = strtok_r(buf, " \t\n;", &save); tok; tok = strtok_r(NULL, " \t\n;", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok || !eq[1])
      return opf_err_set(err, OPF_EINVAL, "malformed item '%s' for '%s': expected NAME=VALUE",
                         tok, op->name);
    *eq = '\0';
    const char *name = tok, *val = eq + 1;
    int ii = input_index(op, name), pi = param_index(op, name);
    if (ii >= 0) {
      if (!strcmp(val, "none")) {
        if (!(op->in[ii].flags & OPF_IN_OPTIONAL))
          return opf_err_set(err, OPF_EINVAL, "input '%s' of '%s' is required", name, op->name);
        c->present[ii] = 0;
        continue;
      }
      int nd;
      int64_t shape[OPF_MAX_DIMS];
      opf_err e2;
      if (val[0] == '@') { /* real data: the shape and dtype come from the .npy file */
        opf_dtype fdt;
        if (strlen(val + 1) >= sizeof c->in_file[ii])
          return opf_err_set(err, OPF_EINVAL, "input '%s' of '%s': file name too long", name, op->name);
        if (opf_npy_header(val + 1, &fdt, &nd, shape, &e2))
          return opf_err_set(err, e2.code, "input '%s' of '%s': %s", name, op->name, e2.msg);
        if (fdt != c->in[ii].dtype)
          return opf_err_set(err, OPF_EINVAL, "input '%s' of '%s': '%s' holds %s but the input is %s%s",
                             name, op->name, val + 1, opf_dtype_name(fdt), opf_dtype_name(c->in[ii].dtype),
                             op->in[ii].dtype == OPF_DT_CASE ? " (choose it with --dtype)" : "");
        strcpy(c->in_file[ii], val + 1);
      } else if (opf_shape_parse(val, &nd, shape, &e2))
        return opf_err_set(err, OPF_EINVAL, "input '%s' of '%s': %s", name, op->name, e2.msg);
      for (int d = 0; d < nd; d++)
        if (shape[d] < 0)
          return opf_err_set(err, OPF_EINVAL, "input '%s' of '%s': negative size", name,
                             op->name);
      opf_tensor_set_shape(&c->in[ii], c->in[ii].dtype, nd, shape);
    } else if (pi >= 0) {
      int rc = op->params[pi].type == OPF_P_LIST
                   ? parse_list_param(op, &op->params[pi], val, &c->list[pi], &c->p[pi], err)
                   : parse_param(op, &op->params[pi], val, &c->p[pi], err);
      if (rc) return rc;
    } else {
      char names[400];
      list_names(op, names, sizeof names);
      return opf_err_set(err, OPF_ENOTFOUND, "operator '%s' has no input or param '%s' (it has: %s)",
                         op->name, name, names);
    }
  }
  opf_err_clear(&c->err);
  int rc = op->infer(c);
  if (rc) {
    return opf_err_set(err, rc ? rc : OPF_EINVAL, "%s: %s", op->name,
                       c->err.msg[0] ? c->err.msg : "invalid shapes or params");
  }
  for (int i = 0; i < op->n_in; i++)
    if (c->present[i] && c->in[i].ndim < 0)
      return opf_err_set(err, OPF_EINVAL, "%s: input '%s' needs a shape (e.g. %s=1024x1024)",
                         op->name, op->in[i].name, op->in[i].name);
  for (int i = 0; i < op->n_out; i++) {
    if (c->out[i].ndim < 0)
      return opf_err_set(err, OPF_EKERNEL, "%s: infer did not set output '%s'", op->name,
                         op->out[i]);
    const opf_tensor *src = op->inplace[i] ? &c->in[op->inplace[i] - 1] : NULL;
    if (src && (src->dtype != c->out[i].dtype || opf_numel(src) != opf_numel(&c->out[i]) ||
                !c->present[op->inplace[i] - 1]))
      return opf_err_set(err, OPF_EKERNEL, "%s: in-place output '%s' must match input '%s'",
                         op->name, op->out[i], op->in[op->inplace[i] - 1].name);
  }
  return OPF_OK;
}

/* The descriptor whose kernels the case runs: the operator's or a registered implementation's. */
static const opf_op *kernels(const opf_case *c) {
  const opf_op *k = c->impl >= OPF_IMPL_ALT ? opf_impl_kernels(c->op, c->impl) : NULL;
  return k ? k : c->op;
}

int opf_case_has_backward(const opf_case *c) {
  if (!c->op->backward || !kernels(c)->backward) return 0;
  for (int i = 0; i < c->op->n_out; i++)
    if (opf_dtype_is_float(c->out[i].dtype)) return 1;
  return 0;
}

/* Inputs that get a gradient in this case: differentiable, present and floating point. */
int opf_case_wants_grad(const opf_case *c, int i) {
  return c->present[i] && (c->op->in[i].flags & OPF_IN_DIFF) && opf_dtype_is_float(c->in[i].dtype);
}

int opf_case_set_impl(opf_case *c, int impl, opf_err *err) {
  if (impl == OPF_IMPL_MATERIALIZE && !c->op->grad_view)
    return opf_err_set(err, OPF_EUNSUPPORTED, "%s hands back no gradient views: implementation "
                       "'materialize' is its native one", c->op->name);
  if (impl >= OPF_IMPL_ALT && !opf_impl_kernels(c->op, impl))
    return opf_err_set(err, OPF_EUNSUPPORTED, "%s has no implementation '%s'", c->op->name,
                       opf_impl_name(impl));
  if (impl == OPF_IMPL_UNFUSED) {
    struct opf_chain *ch;
    int rc = opf_chain_plan(c, &ch, err); /* reject a chain that does not fit the case now */
    if (rc) return rc;
    opf_chain_free(ch);
  }
  c->impl = impl;
  return OPF_OK;
}

uint64_t opf_case_footprint(const opf_case *c, int with_grad) {
  uint64_t total = c->impl == OPF_IMPL_UNFUSED ? 0 : c->ws_bytes;
  if (c->impl == OPF_IMPL_UNFUSED) {
    struct opf_chain *ch;
    opf_err e;
    if (!opf_chain_plan(c, &ch, &e)) {
      total = opf_chain_footprint(ch, with_grad);
      opf_chain_free(ch);
    }
    if (total == UINT64_MAX) return total;
  }
  int ovf = 0;
  for (int i = 0; i < c->op->n_in; i++) {
    if (!c->present[i]) continue;
    uint64_t b = opf_tensor_bytes(&c->in[i], &ovf);
    if (ovf) return UINT64_MAX;
    /* a gradient handed back as a view of an output gradient takes no memory of its own */
    total += b * (with_grad && opf_case_wants_grad(c, i) && !opf_case_grad_view(c, i, NULL) ? 2 : 1);
  }
  for (int i = 0; i < c->op->n_out; i++) {
    if (c->op->inplace[i]) continue; /* shares its input's storage */
    uint64_t b = opf_tensor_bytes(&c->out[i], &ovf);
    if (ovf) return UINT64_MAX;
    total += b * (with_grad && opf_dtype_is_float(c->out[i].dtype) ? 2 : 1);
  }
  return total;
}

static int alloc_like(opf_tensor *dst, const opf_tensor *src, opf_err *err) {
  opf_tensor_set_shape(dst, src->dtype, src->ndim, src->shape);
  return opf_tensor_alloc(dst, err);
}

int opf_case_alloc(opf_case *c, int with_grad, opf_err *err) {
  const opf_op *op = c->op;
  int rc = OPF_OK;
  for (int i = 0; i < op->n_in && !rc; i++)
    if (c->present[i]) rc = opf_tensor_alloc(&c->in[i], err);
  for (int i = 0; i < op->n_out && !rc; i++) {
    if (op->inplace[i]) { /* the output is its input, updated in place */
      const opf_tensor *src = &c->in[op->inplace[i] - 1];
      c->out[i] = *src;
      c->out[i].owned = 0;
    } else {
      rc = opf_tensor_alloc(&c->out[i], err);
    }
  }
  if (!rc && c->ws_bytes && c->impl != OPF_IMPL_UNFUSED) { /* the chain's stages have their own */
    c->ws = opf_alloc(c->ws_bytes);
    if (!c->ws) rc = opf_err_set(err, OPF_ENOMEM, "cannot allocate %zu bytes of workspace",
                                 c->ws_bytes);
  }
  if (with_grad) {
    for (int i = 0; i < op->n_out && !rc; i++)
      if (opf_dtype_is_float(c->out[i].dtype)) rc = alloc_like(&c->gout[i], &c->out[i], err);
    if (!rc) opf_case_grad_views_bind(c); /* views of the output gradients: no memory */
    for (int i = 0; i < op->n_in && !rc; i++)
      if (opf_case_wants_grad(c, i) && !opf_grad_is_view(c, i)) rc = alloc_like(&c->gin[i], &c->in[i], err);
  }
  if (!rc && c->impl == OPF_IMPL_UNFUSED) {
    rc = opf_chain_plan(c, &c->chain, err);
    if (!rc) rc = opf_chain_alloc(c->chain, c, with_grad, err);
  }
  if (rc) opf_case_release(c);
  return rc;
}

int opf_case_fill(opf_case *c, uint64_t seed, opf_err *err) {
  const opf_op *op = c->op;
  c->seed = seed; /* fill hooks derive their streams from it */
  for (int i = 0; i < op->n_in; i++) {
    if (!c->present[i] || !c->in[i].data) continue;
    if (c->in_file[i][0]) {
      int rc = opf_npy_load(c->in_file[i], &c->in[i], err);
      if (rc) return rc;
    } else if (op->in[i].fill) {
      opf_rng r;
      opf_rng_init(&r, seed, (uint64_t)i);
      opf_err_clear(&c->err);
      int rc = op->in[i].fill(c, i, &r);
      if (rc)
        return opf_err_set(err, rc, "%s: generating input '%s': %s", op->name, op->in[i].name,
                           c->err.msg);
    } else {
      double lo = op->in[i].lo, hi = op->in[i].hi;
      if (lo == 0 && hi == 0) lo = -1, hi = 1;
      opf_fill_uniform(&c->in[i], seed, (uint64_t)i, lo, hi);
    }
  }
  for (int i = 0; i < op->n_out; i++) {
    /* Outputs start defined (not garbage) so a kernel that skips elements is caught. */
    if (c->out[i].data && !op->inplace[i]) memset(c->out[i].data, 0, c->out[i].nbytes);
    if (c->gout[i].data) opf_fill_uniform(&c->gout[i], seed, 100u + (uint64_t)i, -1, 1);
  }
  return OPF_OK;
}

void opf_case_release(opf_case *c) {
  opf_chain_free(c->chain);
  c->chain = NULL;
  for (int i = 0; i < OPF_MAX_IN; i++) {
    opf_tensor_free(&c->in[i]);
    opf_tensor_free(&c->gin[i]);
  }
  for (int i = 0; i < OPF_MAX_OUT; i++) {
    opf_tensor_free(&c->out[i]);
    opf_tensor_free(&c->gout[i]);
  }
  opf_free(c->ws);
  c->ws = NULL;
  memset(c->gview, 0, sizeof c->gview);
}

int opf_case_param_str(const opf_case *c, int i, char *buf, size_t n) {
  const opf_param_desc *pd = &c->op->params[i];
  if (pd->type == OPF_P_ENUM) {
    const char *p = pd->choices;
    for (int k = 0; k < (int)c->p[i] && p; k++) {
      p = strchr(p, '|');
      if (p) p++;
    }
    return snprintf(buf, n, "%s=%.*s", pd->name, p ? (int)strcspn(p, "|") : 0, p ? p : "");
  }
  if (pd->type == OPF_P_AXIS && c->p[i] == OPF_AXIS_ALL) return snprintf(buf, n, "%s=all", pd->name);
  if (pd->type == OPF_P_LIST) {
    int off = snprintf(buf, n, "%s=%s", pd->name, c->list[i].n ? "" : "none");
    for (int k = 0; k < c->list[i].n && off < (int)n; k++)
      off += snprintf(buf + off, n - (size_t)off, "%s%lld", k ? "," : "", (long long)c->list[i].v[k]);
    return off;
  }
  if (pd->type == OPF_P_BOOL) return snprintf(buf, n, "%s=%s", pd->name, c->p[i] ? "true" : "false");
  return snprintf(buf, n, "%s=%.10g", pd->name, c->p[i]);
}

static int is_default(const opf_case *c, int i) {
  const opf_param_desc *pd = &c->op->params[i];
  if (pd->type != OPF_P_LIST) return c->p[i] == pd->def;
  opf_list d;
  opf_err e;
  if (opf_list_parse(pd->defs, &d, &e) || d.n != c->list[i].n) return 0;
  return !memcmp(d.v, c->list[i].v, sizeof d.v[0] * (size_t)d.n);
}

static char *params_str(const opf_case *c, char *buf, size_t n, size_t off, int only_changed) {
  char one[128];
  for (int i = 0; i < c->op->n_params && off < n; i++) {
    if (only_changed && is_default(c, i)) continue;
    opf_case_param_str(c, i, one, sizeof one);
    off += snprintf(buf + off, n - off, "%s%s", off ? " " : "", one);
  }
  return buf;
}

char *opf_case_spec_str(const opf_case *c, char *buf, size_t n) {
  size_t off = 0;
  char sb[96];
  buf[0] = '\0';
  for (int i = 0; i < c->op->n_in && off < n; i++)
    off += snprintf(buf + off, n - off, "%s%s=%s", off ? " " : "", c->op->in[i].name,
                    c->present[i] ? opf_shape_str(&c->in[i], sb, sizeof sb) : "none");
  return params_str(c, buf, n, off < n ? off : n, 0);
}

char *opf_case_params_str(const opf_case *c, char *buf, size_t n) {
  buf[0] = '\0';
  return params_str(c, buf, n, 0, 1);
}

int opf_case_call(opf_case *c, opf_pass p) {
  int rc;
  if (c->chain) return opf_chain_call(c, p);
  const opf_op *k = kernels(c);
  switch (p) {
  case OPF_PASS_FWD: return k->forward(c);
  case OPF_PASS_BWD: return k->backward ? k->backward(c) : OPF_EUNSUPPORTED;
  case OPF_PASS_BOTH:
    rc = k->forward(c);
    return rc ? rc : k->backward ? k->backward(c) : OPF_EUNSUPPORTED;
  default: return OPF_EINVAL;
  }
}

uint64_t opf_mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024;
}

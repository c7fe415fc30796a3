/* registry.c: lookup over the generated operator list (cmake/gen_registry.cmake), run-time
 * registration (plugins, embedders), "did you mean" suggestions, the registry's self-check (each
 * descriptor through src/validate.c, names unique), and the default flops/bytes models. */
#include <stdio.h>
#include <string.h>

#include "opperf/harness.h"

extern const opf_op *const opf_registry_list[];
extern const opf_op *const opf_registry_impls[];

/* Operators registered at run time (test builds, plugins), after the built-in ones. */
#define MAX_EXTRA 256
static const opf_op *extra[MAX_EXTRA];
static int n_extra;

#ifdef OPPERF_TEST_SLOWDOWN_OP
/* Test build option (-DOPPERF_TEST_SLOWDOWN=name): that operator's forward runs twice per
 * call, a deliberate regression for checking the gate (`opperf compare`) end to end. */
static opf_op slowed;
static const opf_op *slowed_orig;
static int slowed_forward(opf_case *c) {
  int rc = slowed_orig->forward(c);
  return rc ? rc : slowed_orig->forward(c);
}
#endif

static const opf_op *builtin(int i) {
#ifdef OPPERF_TEST_SLOWDOWN_OP
  const opf_op *op = opf_registry_list[i];
  if (op && !strcmp(op->name, OPPERF_TEST_SLOWDOWN_OP)) {
    if (!slowed.forward) {
      slowed_orig = op;
      slowed = *op;
      slowed.forward = slowed_forward;
    }
    return &slowed;
  }
  return op;
#else
  return opf_registry_list[i];
#endif
}

static int n_builtin(void) { /* the generated list is constant: count it once */
  static int n = -1;
  if (n < 0) {
    int k = 0;
    while (opf_registry_list[k]) k++;
    n = k;
  }
  return n;
}

int opf_op_count(void) { return n_builtin() + n_extra; }
const opf_op *opf_op_at(int i) {
  int nb = n_builtin();
  if (i < 0) return NULL;
  return i < nb ? builtin(i) : i < nb + n_extra ? extra[i - nb] : NULL;
}

const opf_op *opf_op_find(const char *name) {
  for (int i = 0; i < opf_op_count(); i++)
    if (!strcmp(opf_op_at(i)->name, name)) return opf_op_at(i);
  return NULL;
}

int opf_op_register(const opf_op *op, opf_err *err) {
  int rc = opf_op_validate(op, err);
  if (rc) return rc;
  if (opf_op_find(op->name))
    return opf_err_set(err, OPF_EINVAL, "operator '%s' is already registered", op->name);
  if (n_extra == MAX_EXTRA) return opf_err_set(err, OPF_ENOMEM, "too many registered operators");
  extra[n_extra++] = op;
  return OPF_OK;
}

/* Other implementations of registered operators (plugins). An implementation id (OPF_IMPL_ALT
 * and up) is a name; one name may implement several operators ("mylib" for relu and for add),
 * each with its own descriptor. */
#define MAX_ALT (OPF_MAX_IMPLS - OPF_IMPL_ALT)
static const char *alt_names[MAX_ALT];
static int n_alt_names;
static struct alt {
  int id;
  const opf_op *op, *desc;
} alts[MAX_EXTRA];
static int n_alts;

static int n_builtin_names = -1; /* names of built-in implementations: the first ids */
static opf_err builtin_err;       /* the first built-in implementation refused, if any */
static int builtin_rc;
static int impl_add(const opf_op *d, int *id, opf_err *err);

/* The built-in implementations (OPPERF_IMPL in ops/) take the first ids, before any plugin's;
 * registered on first use. A descriptor refused here is a bug in ops/: opf_registry_check
 * reports it. */
static void builtin_impls(void) {
  if (n_builtin_names >= 0) return;
  n_builtin_names = 0;
  for (int i = 0; opf_registry_impls[i]; i++) {
    opf_err e;
    int rc = impl_add(opf_registry_impls[i], NULL, &e);
    if (rc && !builtin_rc) builtin_rc = rc, builtin_err = e;
  }
  n_builtin_names = n_alt_names;
}

int opf_impl_count(void) {
  builtin_impls();
  return OPF_IMPL_ALT + n_alt_names;
}

int opf_impl_builtin(int impl) {
  builtin_impls();
  return impl < OPF_IMPL_ALT + n_builtin_names;
}

const char *opf_impl_name(int impl) {
  if (impl >= OPF_IMPL_ALT && impl < opf_impl_count()) return alt_names[impl - OPF_IMPL_ALT];
  return impl == OPF_IMPL_UNFUSED ? "unfused" : impl == OPF_IMPL_MATERIALIZE ? "materialize" : "native";
}

int opf_impl_find(const char *name) {
  for (int i = 0; i < opf_impl_count(); i++)
    if (!strcmp(opf_impl_name(i), name)) return i;
  return -1;
}

const opf_op *opf_impl_kernels(const opf_op *op, int impl) {
  builtin_impls();
  for (int i = 0; i < n_alts; i++)
    if (alts[i].id == impl && alts[i].op == op) return alts[i].desc;
  return NULL;
}

int opf_op_has_impl(const opf_op *op, int impl) {
  if (impl == OPF_IMPL_NATIVE) return 1;
  if (impl == OPF_IMPL_UNFUSED) return op->unfused != NULL;
  if (impl == OPF_IMPL_MATERIALIZE) return op->grad_view != NULL; /* views to materialise */
  return opf_impl_kernels(op, impl) != NULL;
}

int opf_impl_register(const opf_op *d, int *id, opf_err *err) {
  builtin_impls();
  return impl_add(d, id, err);
}

static int impl_add(const opf_op *d, int *id, opf_err *err) {
  const char *n = d->name ? d->name : "(null)";
  if (d->abi != OPF_OP_ABI)
    return opf_err_set(err, OPF_EINVAL, "%s: ABI version %u, expected %u", n, d->abi, OPF_OP_ABI);
  const opf_op *op = d->implements ? opf_op_find(d->implements) : NULL;
  if (!op)
    return opf_err_set(err, OPF_ENOTFOUND, "%s: implements unknown operator '%s'", n,
                       d->implements ? d->implements : "(null)");
  /* The name is a column value and an --impl item: short, lower case, not already taken. */
  if (!d->name || !d->name[0] || strlen(d->name) > 15 ||
      strspn(d->name, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(d->name))
    return opf_err_set(err, OPF_EINVAL, "%s: an implementation name must be 1-15 characters [a-z0-9_]", n);
  int k = opf_impl_find(d->name);
  if ((k >= 0 && k < OPF_IMPL_ALT) || (k >= 0 && opf_op_has_impl(op, k)))
    return opf_err_set(err, OPF_EINVAL, "%s: %s already has an implementation named '%s'", n, op->name, n);
  if (!d->forward) return opf_err_set(err, OPF_EINVAL, "%s: forward is required", n);
  if (d->backward && !op->backward)
    return opf_err_set(err, OPF_EINVAL, "%s: backward given but %s has no backward pass", n, op->name);
  /* Everything else is the operator's: a value here would be silently ignored, so refuse it. */
  if (d->category || d->dtypes || d->n_in || d->n_out || d->n_params || d->shapes[0].set ||
      d->infer || d->reference || d->flops || d->bytes || d->tol != 0 || d->unfused || d->inplace[0] ||
      d->grad_view)
    return opf_err_set(err, OPF_EINVAL, "%s: an implementation of %s sets only name, implements, "
                       "summary, forward and backward (the rest is %s's)", n, op->name, op->name);
  if (n_alts == MAX_EXTRA || (k < 0 && n_alt_names == MAX_ALT))
    return opf_err_set(err, OPF_ENOMEM, "too many implementations (at most %d names)", MAX_ALT);
  if (k < 0) {
    k = opf_impl_count();
    alt_names[n_alt_names++] = d->name;
  }
  alts[n_alts++] = (struct alt){k, op, d};
  if (id) *id = k;
  return OPF_OK;
}

static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int d[64][64];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
  return d[la][lb];
}

const char *opf_op_suggest(const char *name) {
  const char *best = NULL;
  int bd = 3; /* suggest only names at most 2 edits away */
  for (int i = 0; i < opf_op_count(); i++) {
    int d = edit_distance(name, opf_op_at(i)->name);
    if (d < bd) bd = d, best = opf_op_at(i)->name;
  }
  return best;
}

const char *opf_pass_name(opf_pass p) {
  static const char *names[] = {"fwd", "bwd", "both"};
  return (unsigned)p < OPF_NPASSES ? names[p] : "?";
}

int opf_registry_check(opf_err *err) {
  builtin_impls();
  if (builtin_rc) {
    *err = builtin_err;
    return builtin_rc;
  }
  int n = opf_op_count();
  for (int i = 0; i < n; i++) {
    int rc = opf_op_validate(opf_registry_list[i], err);
    if (rc) return rc;
    for (int j = 0; j < i; j++)
      if (!strcmp(opf_registry_list[i]->name, opf_registry_list[j]->name))
        return opf_err_set(err, OPF_EINVAL, "duplicate operator name '%s'",
                           opf_registry_list[i]->name);
  }
  return OPF_OK;
}

static double tensor_bytes(const opf_tensor *t) {
  return t->data || t->ndim >= 0 ? (double)opf_numel(t) * (double)opf_dtype_size(t->dtype) : 0;
}

double opf_default_flops(const opf_case *c, opf_pass p) {
  double fwd = 0, bwd = 0;
  for (int i = 0; i < c->op->n_out; i++) fwd += (double)opf_numel(&c->out[i]);
  for (int i = 0; i < c->op->n_in; i++)
    if (c->present[i] && (c->op->in[i].flags & OPF_IN_DIFF)) bwd += (double)opf_numel(&c->in[i]);
  return opf_pass_sum(p, fwd, bwd);
}

double opf_default_bytes(const opf_case *c, opf_pass p) {
  double in = 0, out = 0, gin = 0;
  for (int i = 0; i < c->op->n_in; i++) {
    if (!c->present[i]) continue;
    in += tensor_bytes(&c->in[i]);
    if (c->op->in[i].flags & OPF_IN_DIFF) gin += tensor_bytes(&c->in[i]);
  }
  for (int i = 0; i < c->op->n_out; i++) out += tensor_bytes(&c->out[i]);
  double fwd = in + out, bwd = out /* gout */ + in + gin;
  return opf_pass_sum(p, fwd, bwd);
}

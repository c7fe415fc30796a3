/* test_ops.c: registry-driven correctness of every operator. For each operator: the registry
 * self-check; forward against its reference for every dtype on the "small" and "test" shape
 * sets; backward against central finite differences in float64 (a sample of coordinates of
 * every differentiable input); backward overwrites rather than accumulates; gradients handed
 * back as views agree with the materialised ones; forward leaves its
 * inputs alone (in-place operators: reference on a pristine copy); flops/bytes models finite. OPPERF_TEST_OPS=name,name restricts the operators (for development). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

static int selected(const char *name) {
  const char *f = getenv("OPPERF_TEST_OPS");
  if (!f || !*f) return 1;
  size_t l = strlen(name);
  for (const char *p = f; *p;) {
    size_t k = strcspn(p, ",");
    if (k == l && !strncmp(p, name, l)) return 1;
    p += k + (p[k] == ',');
  }
  return 0;
}

static int in_test_sets(const char *set) { return !strcmp(set, "small") || !strcmp(set, "test"); }

/* A copy of c with fresh outputs, for running the reference on the same inputs. With snap (the
 * inputs as they were before forward), the copy reads those instead, and an in-place output
 * shares its snapshot input, as the kernel's does. */
static void ref_case(opf_case *r, const opf_case *c, opf_tensor *snap) {
  *r = *c;
  r->ws = NULL;
  r->ws_bytes = 0;
  r->state = NULL;
  for (int i = 0; i < OPF_MAX_IN; i++) memset(&r->gin[i], 0, sizeof r->gin[i]);
  if (snap)
    for (int i = 0; i < c->op->n_in; i++) r->in[i] = snap[i];
  for (int i = 0; i < c->op->n_out; i++) {
    memset(&r->gout[i], 0, sizeof r->gout[i]);
    if (snap && c->op->inplace[i]) {
      r->out[i] = snap[c->op->inplace[i] - 1];
      r->out[i].owned = 0;
      continue;
    }
    opf_tensor_set_shape(&r->out[i], c->out[i].dtype, c->out[i].ndim, c->out[i].shape);
    r->out[i].data = NULL;
    r->out[i].nbytes = 0;
    r->out[i].owned = 0;
    opf_err e;
    if (opf_tensor_alloc(&r->out[i], &e)) fail_msg("%s", e.msg);
    memset(r->out[i].data, 0, r->out[i].nbytes);
  }
}

static void ref_case_release(opf_case *r) {
  for (int i = 0; i < r->op->n_out; i++) opf_tensor_free(&r->out[i]);
}

/* Owned copies of c's present inputs. */
static void snapshot_inputs(opf_tensor *snap, const opf_case *c) {
  for (int i = 0; i < c->op->n_in; i++) {
    snap[i] = c->in[i];
    snap[i].owned = 0;
    if (!c->in[i].data) continue;
    snap[i].data = NULL;
    opf_err e;
    if (opf_tensor_alloc(&snap[i], &e)) fail_msg("%s", e.msg);
    memcpy(snap[i].data, c->in[i].data, c->in[i].nbytes);
  }
}

static void check_forward(const opf_op *op, opf_dtype dt, const char *spec) {
  opf_case c, r;
  opf_tensor snap[OPF_MAX_IN];
  ts_case_ready(&c, op, dt, spec, 0, 42);
  snapshot_inputs(snap, &c);
  int rc = op->forward(&c);
  if (rc) fail_msg("%s %s [%s]: forward failed: %s", op->name, opf_dtype_name(dt), spec, c.err.msg);
  /* Forward must not touch its inputs, except one it is declared to update in place. */
  for (int i = 0; i < op->n_in; i++) {
    int updated = 0;
    for (int j = 0; j < op->n_out; j++) updated |= op->inplace[j] == i + 1;
    if (c.in[i].data && !updated && memcmp(c.in[i].data, snap[i].data, c.in[i].nbytes))
      fail_msg("%s %s [%s]: forward modified input '%s'", op->name, opf_dtype_name(dt), spec,
               op->in[i].name);
  }
  ref_case(&r, &c, snap);
  rc = op->reference(&r);
  if (rc) fail_msg("%s %s [%s]: reference failed: %s", op->name, opf_dtype_name(dt), spec, r.err.msg);
  double rtol = dt == OPF_F64 ? 1e-9 : (op->tol > 0 ? op->tol : 1e-4);
  for (int i = 0; i < op->n_out; i++) {
    char msg[256];
    if (ts_compare(&c.out[i], &r.out[i], rtol, msg, sizeof msg))
      fail_msg("%s %s [%s]: output '%s' differs from reference: %s", op->name, opf_dtype_name(dt),
               spec, op->out[i], msg);
  }
  for (int p = 0; p < (op->backward ? OPF_NPASSES : 1); p++) { /* forward-only: fwd */
    double f = (op->flops ? op->flops : opf_default_flops)(&c, (opf_pass)p);
    double b = (op->bytes ? op->bytes : opf_default_bytes)(&c, (opf_pass)p);
    char views[96]; /* a backward whose gradients are all views of g moves nothing */
    int none_moved = p == OPF_PASS_BWD && opf_case_grad_views(&c, views, sizeof views) > 0;
    if (!(isfinite(f) && f >= 0 && isfinite(b) && (b > 0 || (b == 0 && none_moved))))
      fail_msg("%s [%s]: flops %g / bytes %g for pass %s", op->name, spec, f, b,
               opf_pass_name((opf_pass)p));
  }
  ref_case_release(&r);
  for (int i = 0; i < op->n_in; i++) opf_tensor_free(&snap[i]);
  opf_case_release(&c);
}

/* L(x) = sum over float outputs of <reference(x), gout>. */
static double loss(opf_case *r, const opf_case *c) {
  for (int i = 0; i < r->op->n_out; i++) memset(r->out[i].data, 0, r->out[i].nbytes);
  if (r->op->reference(r)) fail_msg("%s: reference failed: %s", r->op->name, r->err.msg);
  double L = 0;
  for (int i = 0; i < r->op->n_out; i++) {
    if (!c->gout[i].data) continue;
    int64_t n = opf_numel(&r->out[i]);
    for (int64_t k = 0; k < n; k++) L += ts_get(&r->out[i], k) * ts_get(&c->gout[i], k);
  }
  return L;
}

static void check_gradient(const opf_op *op, const char *spec) {
  opf_case c, r;
  ts_case_ready(&c, op, OPF_F64, spec, 1, 7);
  if (!opf_case_has_backward(&c)) {
    opf_case_release(&c);
    return;
  }
  if (op->forward(&c) || op->backward(&c))
    fail_msg("%s [%s]: forward/backward failed: %s", op->name, spec, c.err.msg);
  /* Backward must overwrite its gradients: poison them and run it again. (A gradient handed
   * back as a view of g is not written: the finite differences below read it through its
   * strides, and check_grad_views compares it with the materialised one.) */
  opf_tensor first[OPF_MAX_IN];
  for (int i = 0; i < op->n_in; i++) {
    memset(&first[i], 0, sizeof first[i]);
    if (!c.gin[i].data || opf_grad_is_view(&c, i)) continue;
    opf_tensor_set_shape(&first[i], OPF_F64, c.gin[i].ndim, c.gin[i].shape);
    opf_err e;
    if (opf_tensor_alloc(&first[i], &e)) fail_msg("%s", e.msg);
    memcpy(first[i].data, c.gin[i].data, c.gin[i].nbytes);
    for (int64_t k = 0; k < opf_numel(&c.gin[i]); k++) ts_set(&c.gin[i], k, 12345.0);
  }
  if (op->backward(&c)) fail_msg("%s [%s]: second backward failed", op->name, spec);
  for (int i = 0; i < op->n_in; i++) {
    if (!c.gin[i].data || opf_grad_is_view(&c, i)) continue;
    char msg[256];
    if (ts_compare(&c.gin[i], &first[i], 1e-12, msg, sizeof msg))
      fail_msg("%s [%s]: backward does not overwrite grad of '%s': %s", op->name, spec,
               op->in[i].name, msg);
    opf_tensor_free(&first[i]);
  }

  ref_case(&r, &c, NULL);
  opf_rng rng;
  opf_rng_init(&rng, 99, 0);
  for (int i = 0; i < op->n_in; i++) {
    if (!c.gin[i].data) continue;
    int64_t n = opf_numel(&c.in[i]);
    int probes = n < 24 ? (int)n : 24;
    for (int t = 0; t < probes; t++) {
      int64_t k = n <= 24 ? t : (int64_t)(opf_rng_u64(&rng) % (uint64_t)n);
      double x = ts_get(&c.in[i], k);
      double h = 1e-6 * (fabs(x) > 1 ? fabs(x) : 1);
      ts_set(&c.in[i], k, x + h);
      double lp = loss(&r, &c);
      ts_set(&c.in[i], k, x - h);
      double lm = loss(&r, &c);
      ts_set(&c.in[i], k, x);
      double num = (lp - lm) / (2 * h), ana = ts_get(&c.gin[i], k);
      double scale = fabs(num) > fabs(ana) ? fabs(num) : fabs(ana);
      if (!(fabs(num - ana) <= 1e-5 * (scale > 1 ? scale : 1) + 1e-9 * (fabs(lp) + fabs(lm))))
        fail_msg("%s [%s]: d/d%s[%lld]: backward %.10g, finite differences %.10g", op->name,
                 spec, op->in[i].name, (long long)k, ana, num);
    }
  }
  ref_case_release(&r);
  opf_case_release(&c);
}

/* float32 backward kernels are not covered by the float64 gradient check: run both dtypes on
 * the same generated inputs (the generator draws the same values, rounded to each dtype) and
 * compare the float32 gradients with the float64 ones. */
static void check_backward_f32(const opf_op *op, const char *spec) {
  opf_case c32, c64;
  ts_case_ready(&c32, op, OPF_F32, spec, 1, 11);
  ts_case_ready(&c64, op, OPF_F64, spec, 1, 11);
  if (!opf_case_has_backward(&c32)) goto out;
  if (op->forward(&c32) || op->backward(&c32) || op->forward(&c64) || op->backward(&c64))
    fail_msg("%s [%s]: forward/backward failed: %s%s", op->name, spec, c32.err.msg, c64.err.msg);
  for (int i = 0; i < op->n_in; i++) {
    if (!c32.gin[i].data) continue;
    opf_tensor widened;
    opf_err e;
    opf_tensor_set_shape(&widened, OPF_F64, c32.gin[i].ndim, c32.gin[i].shape);
    if (opf_tensor_alloc(&widened, &e)) fail_msg("%s", e.msg);
    for (int64_t k = 0; k < opf_numel(&widened); k++) ts_set(&widened, k, ts_get(&c32.gin[i], k));
    char msg[256];
    double rtol = 10 * (op->tol > 0 ? op->tol : 1e-4);
    if (ts_compare(&widened, &c64.gin[i], rtol, msg, sizeof msg))
      fail_msg("%s [%s]: float32 grad of '%s' differs from float64: %s", op->name, spec,
               op->in[i].name, msg);
    opf_tensor_free(&widened);
  }
out:
  opf_case_release(&c32);
  opf_case_release(&c64);
}

/* An operator with gradient views: each view (read through its strides) against the gradient
 * implementation materialize writes, on the same inputs (src/check.c). */
static void check_grad_views(const opf_op *op, opf_dtype dt, const char *spec) {
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, dt, spec, &e)) fail_msg("%s [%s]: %s", op->name, spec, e.msg);
  if (opf_case_check_grad_views(&c, 13, &e))
    fail_msg("%s [%s] %s: %s", op->name, spec, opf_dtype_name(dt), e.msg);
}

/* A fused operator against its own unfused chain (the stages' registered kernels) on the same
 * inputs: outputs, and with a backward every input gradient. */
static void check_unfused(const opf_op *op, opf_dtype dt, const char *spec) {
  opf_case c, u;
  opf_err e;
  ts_case_ready(&c, op, dt, spec, 1, 5);
  if (opf_case_init(&u, op, dt, spec, &e) || opf_case_set_impl(&u, OPF_IMPL_UNFUSED, &e) ||
      opf_case_alloc(&u, 1, &e) || opf_case_fill(&u, 5, &e))
    fail_msg("%s [%s]: unfused chain: %s", op->name, spec, e.msg);
  opf_pass pass = opf_case_has_backward(&c) ? OPF_PASS_BOTH : OPF_PASS_FWD;
  if (opf_case_call(&c, pass) || opf_case_call(&u, pass))
    fail_msg("%s [%s]: %s%s", op->name, spec, c.err.msg, u.err.msg);
  double rtol = dt == OPF_F32 ? 10 * (op->tol > 0 ? op->tol : 1e-4) : 1e-9;
  char msg[256];
  for (int j = 0; j < op->n_out; j++)
    if (ts_compare(&c.out[j], &u.out[j], rtol, msg, sizeof msg))
      fail_msg("%s [%s] %s: output '%s' differs from the unfused chain's: %s", op->name, spec,
               opf_dtype_name(dt), op->out[j], msg);
  for (int i = 0; pass == OPF_PASS_BOTH && i < op->n_in; i++)
    if (c.gin[i].data && ts_compare(&c.gin[i], &u.gin[i], rtol, msg, sizeof msg))
      fail_msg("%s [%s] %s: gradient of '%s' differs from the unfused chain's: %s", op->name, spec,
               opf_dtype_name(dt), op->in[i].name, msg);
  opf_case_release(&c);
  opf_case_release(&u);
}

/* The checks of one operator's kernels on its test sets (op may be a built-in alternative
 * implementation's view of the operator: same descriptor, that implementation's kernels). */
static int check_sets(const opf_op *op) {
  int n = 0;
  for (int k = 0; k < OPF_MAX_SETS && op->shapes[k].set; k++) {
    if (!in_test_sets(op->shapes[k].set)) continue;
    for (int d = 0; d < OPF_NDTYPES; d++)
      if (op->dtypes & OPF_DT_BIT(d)) {
        check_forward(op, (opf_dtype)d, op->shapes[k].spec), n++;
        if (op->unfused) check_unfused(op, (opf_dtype)d, op->shapes[k].spec);
      }
    if (op->backward && !strcmp(op->shapes[k].set, "small") && (op->dtypes & OPF_DT_BIT(OPF_F64))) {
      check_gradient(op, op->shapes[k].spec);
      if (op->dtypes & OPF_DT_BIT(OPF_F32)) check_backward_f32(op, op->shapes[k].spec);
    }
    if (op->grad_view) {
      if (op->dtypes & OPF_DT_BIT(OPF_F64)) check_grad_views(op, OPF_F64, op->shapes[k].spec);
      if (op->dtypes & OPF_DT_BIT(OPF_F32)) check_grad_views(op, OPF_F32, op->shapes[k].spec);
    }
  }
  return n;
}

static void test_op(void **state) {
  const opf_op *op = *state;
  opf_err e;
  if (opf_op_validate(op, &e)) fail_msg("%s", e.msg);
  assert_true(check_sets(op) > 0);
  /* every built-in alternative implementation (OPPERF_IMPL) against the same references */
  for (int id = OPF_IMPL_ALT; id < opf_impl_count(); id++) {
    const opf_op *k = opf_impl_kernels(op, id);
    if (!k || !opf_impl_builtin(id)) continue;
    opf_op view = *op;
    view.forward = k->forward;
    view.backward = k->backward; /* none: the implementation has no backward pass */
    if (check_sets(&view) == 0) fail_msg("%s: implementation %s checked nothing", op->name, k->name);
  }
}

static void test_registry(void **state) {
  (void)state;
  opf_err e;
  if (opf_registry_check(&e)) fail_msg("%s", e.msg);
  assert_true(opf_op_count() >= 1);
  assert_null(opf_op_find("no_such_operator"));
  assert_non_null(opf_op_find(opf_op_at(0)->name));
}

int main(void) {
  int n = opf_op_count();
  struct CMUnitTest *tests = calloc((size_t)n + 1, sizeof *tests);
  int k = 0;
  /* OPPERF_TEST_OPS_SHARD=I/N: only the operators whose registry index is I mod N (the registry
   * check in shard 0), so that an emulated run (tests/CMakeLists.txt, cross builds) spreads
   * them over several ctest processes. */
  int shard = 0, nshards = 1;
  const char *sh = getenv("OPPERF_TEST_OPS_SHARD");
  if (sh && (sscanf(sh, "%d/%d", &shard, &nshards) != 2 || nshards < 1 || shard < 0 ||
             shard >= nshards)) {
    fprintf(stderr, "test_ops: bad OPPERF_TEST_OPS_SHARD '%s' (want I/N, 0 <= I < N)\n", sh);
    return 2;
  }
  if (shard == 0)
    tests[k++] = (struct CMUnitTest){.name = "registry", .test_func = test_registry};
  for (int i = 0; i < n; i++) {
    const opf_op *op = opf_op_at(i);
    if (i % nshards != shard || !selected(op->name)) continue;
    tests[k++] = (struct CMUnitTest){.name = op->name, .test_func = test_op,
                                     .initial_state = (void *)op};
  }
  int rc = _cmocka_run_group_tests("ops", tests, (size_t)k, NULL, NULL);
  free(tests);
  return rc;
}

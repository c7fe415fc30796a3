/* test_support.c: shared helpers for the cmocka tests (see test_support.h). */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <omp.h>

#include "test_support.h"

/* The library's accessors (src/check.c): --check and the tests compare the same way. */
double ts_get(const opf_tensor *t, int64_t k) { return opf_tensor_get(t, k); }

void ts_set(opf_tensor *t, int64_t k, double v) {
  switch (t->dtype) {
  case OPF_F32: ((float *)t->data)[k] = (float)v; break;
  case OPF_F64: ((double *)t->data)[k] = v; break;
  case OPF_I32: ((int32_t *)t->data)[k] = (int32_t)v; break;
  case OPF_I64: ((int64_t *)t->data)[k] = (int64_t)v; break;
  case OPF_BOOL: ((uint8_t *)t->data)[k] = v != 0; break;
  default: break;
  }
}

int ts_compare(const opf_tensor *got, const opf_tensor *want, double rtol, char *msg, size_t n) {
  return opf_tensor_compare(got, want, rtol, msg, n);
}

void ts_case_ready(opf_case *c, const opf_op *op, opf_dtype dt, const char *spec, int with_grad,
                   uint64_t seed) {
  opf_err e;
  if (opf_case_init(c, op, dt, spec, &e)) fail_msg("%s [%s]: init: %s", op->name, spec, e.msg);
  if (opf_case_alloc(c, with_grad, &e)) fail_msg("%s [%s]: alloc: %s", op->name, spec, e.msg);
  if (opf_case_fill(c, seed, &e)) fail_msg("%s [%s]: fill: %s", op->name, spec, e.msg);
}

void ts_check_f32(const char *name, const char *spec, double rtol) {
  ts_check_f32_by(name, spec, rtol, NULL);
}

void ts_check_f32_by(const char *name, const char *spec, double rtol,
                     int (*run32)(const opf_op *, opf_case *)) {
  const opf_op *op = ts_op(name);
  opf_case c32, c64;
  ts_case_ready(&c32, op, OPF_F32, spec, 1, 21);
  ts_case_ready(&c64, op, OPF_F64, spec, 1, 21);
  int bad32 = run32 ? run32(op, &c32) : op->forward(&c32) || op->backward(&c32);
  if (bad32 || op->forward(&c64) || op->backward(&c64))
    fail_msg("%s [%s]: %s%s", name, spec, c32.err.msg, c64.err.msg);
  char msg[256];
  for (int i = -1; i < op->n_in; i++) {
    const opf_tensor *a = i < 0 ? &c32.out[0] : &c32.gin[i], *b = i < 0 ? &c64.out[0] : &c64.gin[i];
    if (!a->data) continue;
    opf_tensor wide;
    opf_err e;
    opf_tensor_set_shape(&wide, OPF_F64, a->ndim, a->shape);
    if (opf_tensor_alloc(&wide, &e)) fail_msg("%s", e.msg);
    for (int64_t k = 0; k < opf_numel(&wide); k++) ts_set(&wide, k, ts_get(a, k));
    if (ts_compare(&wide, b, rtol, msg, sizeof msg))
      fail_msg("%s [%s] %d threads: float32 %s%s differs from float64: %s", name, spec,
               omp_get_max_threads(), i < 0 ? "output" : "gradient of ", i < 0 ? "" : op->in[i].name, msg);
    opf_tensor_free(&wide);
  }
  opf_case_release(&c32);
  opf_case_release(&c64);
}

const opf_op *ts_op(const char *name) {
  const opf_op *op = opf_op_find(name);
  if (!op) fail_msg("operator '%s' is not registered", name);
  return op;
}

void ts_expect_einval(const char *name, const char *spec, const char *want) {
  opf_case c;
  opf_err e;
  int rc = opf_case_init(&c, ts_op(name), OPF_F32, spec, &e);
  if (rc != OPF_EINVAL) fail_msg("%s [%s]: expected OPF_EINVAL, got %d", name, spec, rc);
  if (!strstr(e.msg, want)) fail_msg("%s [%s]: message '%s' does not mention '%s'", name, spec, e.msg, want);
}

void ts_expect_models(const char *name, opf_dtype dt, const char *spec, double f_fwd, double f_bwd,
                      double b_fwd, double b_bwd) {
  const opf_op *op = ts_op(name);
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, dt, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  double (*fl)(const opf_case *, opf_pass) = op->flops ? op->flops : opf_default_flops;
  double (*by)(const opf_case *, opf_pass) = op->bytes ? op->bytes : opf_default_bytes;
  const double want[6] = {f_fwd, f_bwd, f_fwd + f_bwd, b_fwd, b_bwd, b_fwd + b_bwd};
  const double got[6] = {fl(&c, OPF_PASS_FWD), fl(&c, OPF_PASS_BWD), fl(&c, OPF_PASS_BOTH),
                         by(&c, OPF_PASS_FWD), by(&c, OPF_PASS_BWD), by(&c, OPF_PASS_BOTH)};
  static const char *what[6] = {"flops fwd", "flops bwd", "flops both", "bytes fwd", "bytes bwd", "bytes both"};
  for (int k = 0; k < 6; k++)
    if (got[k] != want[k]) fail_msg("%s [%s] %s: %s is %.17g, expected %.17g", name, spec, opf_dtype_name(dt), what[k], got[k], want[k]);
}

void ts_expect_shape(const char *name, const char *spec, int in, int idx, const char *want) {
  opf_case c;
  opf_err e;
  char got[96];
  if (opf_case_init(&c, ts_op(name), OPF_F32, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  opf_shape_str(in ? &c.in[idx] : &c.out[idx], got, sizeof got);
  if (strcmp(got, want))
    fail_msg("%s [%s]: %s %d is %s, expected %s", name, spec, in ? "input" : "output", idx, got, want);
}

static opf_pmu_snap *g_snaps[4096];
static int g_n_snaps;
static void free_snaps(void) {
  for (int i = 0; i < g_n_snaps; i++) opf_pmu_snap_free(g_snaps[i]);
  g_n_snaps = 0;
}

opf_pmu_snap *ts_snap(void) {
  if (g_n_snaps == 0) atexit(free_snaps);
  assert_true(g_n_snaps < (int)(sizeof g_snaps / sizeof g_snaps[0]));
  opf_pmu_snap *s = opf_pmu_snap_new();
  assert_non_null(s);
  g_snaps[g_n_snaps++] = s;
  return s;
}

uint64_t ts_raw(const opf_pmu_snap *s, size_t i, int what) {
  uint64_t v[3] = {0, 0, 0};
  assert_int_equal(opf_pmu_snap_raw(s, i, &v[0], &v[1], &v[2]), OPF_OK);
  return v[what];
}

int ts_foreign_threads(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n > 1 ? n - 1 : 0;
}

int ts_compare_reference(const opf_case *c, double rtol, char *msg, size_t n) {
  opf_case r = *c; /* the reference reads c's inputs and writes its own output */
  r.ws = NULL, r.ws_bytes = 0;
  opf_tensor_set_shape(&r.out[0], c->out[0].dtype, c->out[0].ndim, c->out[0].shape);
  opf_err e;
  if (opf_tensor_alloc(&r.out[0], &e)) fail_msg("%s", e.msg);
  assert_int_equal(c->op->reference(&r), OPF_OK);
  int rc = ts_compare(&c->out[0], &r.out[0], rtol, msg, n);
  opf_tensor_free(&r.out[0]);
  return rc;
}

void ts_measure_small(const opf_settings *s, opf_result *r) {
  opf_case c;
  opf_err e;
  const opf_op *op = opf_op_find("relu");
  assert_non_null(op);
  assert_int_equal(opf_case_init(&c, op, OPF_F32, "x=64x64", &e), OPF_OK);
  assert_int_equal(opf_measure(s, &c, "custom", OPF_PASS_FWD, NULL, r), OPF_OK);
  assert_int_equal(r->status, OPF_ST_OK);
}

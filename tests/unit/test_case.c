/* test_case.c: resolving cases from specs (params of every type, optional inputs, errors with
 * clear messages), the descriptor self-check, and the harness on private test operators:
 * batch calibration, statuses for failing kernels and missing backward passes, memory figures. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <time.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/harness.h"
#include "test_support.h"

/* A test operator: y = scale * x (+ b); params of every type; fails when asked to. */
static int t_infer(opf_case *c) {
  if (c->in[0].ndim < 1) return opf_case_error(c, OPF_EINVAL, "x must have at least one dimension");
  if (c->present[1] && c->in[1].ndim < 0) opf_tensor_set_shape(&c->in[1], c->dtype, 1, &c->in[0].shape[c->in[0].ndim - 1]);
  opf_tensor_set_shape(&c->out[0], c->dtype, c->in[0].ndim, c->in[0].shape);
  c->ws_bytes = 4096;
  return OPF_OK;
}
static int t_forward(opf_case *c) {
  if (c->p[3] == 1) return opf_case_error(c, OPF_EKERNEL, "asked to fail");
  const double *x = c->in[0].data;
  double *y = c->out[0].data;
  for (int64_t i = 0; i < opf_numel(&c->in[0]); i++) y[i] = c->p[1] * x[i];
  return OPF_OK;
}
static int t_alloc_forward(opf_case *c) { /* allocates per call: must show in the figures */
  void *p = opf_alloc(1000);
  opf_free(p);
  return t_forward(c);
}

#define T_OP_FIELDS                                                                          \
  .abi = OPF_OP_ABI, .category = "test", .summary = "test operator", .dtypes = OPF_DT_BIT(OPF_F64), \
  .n_in = 2,                                                                                  \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -1, .hi = 1},                              \
         {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_OPTIONAL}},                      \
  .n_out = 1, .out = {"y"}, .n_params = 5,                                                    \
  .params = {{"n", OPF_P_INT, 3, 1, 10, NULL, "an int"},                                      \
             {"scale", OPF_P_FLOAT, 2.0, -5, 5, NULL, "a float"},                             \
             {"mode", OPF_P_ENUM, 1, 0, 0, "edge|constant|reflect", "an enum"},              \
             {"fail", OPF_P_BOOL, 0, 0, 1, NULL, "fail in forward"},                          \
             {"axis", OPF_P_AXIS, -1, -8, 7, NULL, "an axis"}},                               \
  .shapes = {{"standard", "x=64x64"}, {"small", "x=4x4 b=none"}}, .infer = t_infer,           \
  .reference = t_forward

static const opf_op t_op = {T_OP_FIELDS, .name = "t_op", .forward = t_forward};
static const opf_op t_alloc_op = {T_OP_FIELDS, .name = "t_alloc", .forward = t_alloc_forward};

static void test_spec_params(void **state) {
  (void)state;
  opf_case c;
  opf_err e;
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F64, "x=8x16 n=5 scale=-1.5 mode=reflect axis=all", &e), OPF_OK);
  assert_float_equal(c.p[0], 5, 0);
  assert_float_equal(c.p[1], -1.5, 0);
  assert_float_equal(c.p[2], 2, 0);
  assert_float_equal(c.p[4], OPF_AXIS_ALL, 0);
  assert_int_equal(c.in[1].ndim, 1); /* derived by infer */
  assert_int_equal(c.in[1].shape[0], 16);
  assert_int_equal(c.out[0].shape[0], 8);
  char buf[256];
  opf_case_params_str(&c, buf, sizeof buf);
  assert_string_equal(buf, "n=5 scale=-1.5 mode=reflect axis=all");
  opf_case_spec_str(&c, buf, sizeof buf);
  assert_string_equal(buf, "x=8x16 b=16 n=5 scale=-1.5 mode=reflect fail=false axis=all");
  /* a later item overrides an earlier one (how --param applies over a default entry) */
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F64, "x=8x16 n=5 n=7 b=none", &e), OPF_OK);
  assert_float_equal(c.p[0], 7, 0);
  assert_int_equal(c.present[1], 0);
}

static void expect_error(const char *spec, int code, const char *needle) {
  opf_case c;
  opf_err e;
  int rc = opf_case_init(&c, &t_op, OPF_F64, spec, &e);
  if (rc != code || !strstr(e.msg, needle))
    fail_msg("spec '%s': got %d '%s', expected %d containing '%s'", spec, rc, e.msg, code, needle);
}

static void test_spec_errors(void **state) {
  (void)state;
  expect_error("x=8x16 n=11", OPF_EINVAL, "outside its range");
  expect_error("x=8x16 n=2.5", OPF_EINVAL, "must be an integer");
  expect_error("x=8x16 mode=wrap", OPF_EINVAL, "edge|constant|reflect");
  expect_error("x=8x16 fail=maybe", OPF_EINVAL, "true or false");
  expect_error("x=8x16 scale=nan", OPF_EINVAL, "must be a number");
  expect_error("x=8xq", OPF_EINVAL, "malformed shape");
  expect_error("x=8x16 y=3", OPF_ENOTFOUND, "has no input or param 'y'");
  expect_error("x=8x16 n", OPF_EINVAL, "expected NAME=VALUE");
  expect_error("x=none", OPF_EINVAL, "is required");
  expect_error("n=3", OPF_EINVAL, "x must have"); /* infer's own message */
  opf_case c;
  opf_err e;
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F32, "x=8x16", &e), OPF_EUNSUPPORTED);
}

static void test_validate(void **state) {
  (void)state;
  opf_err e;
  assert_int_equal(opf_op_validate(&t_op, &e), OPF_OK);
  opf_op bad = t_op;
  bad.forward = NULL;
  assert_int_equal(opf_op_validate(&bad, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "forward"));
  bad = t_op;
  bad.params[0].def = 20;
  assert_int_equal(opf_op_validate(&bad, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "outside"));
  bad = t_op;
  bad.shapes[0].spec = "x=8x8 n=100";
  assert_int_equal(opf_op_validate(&bad, &e), OPF_EINVAL);
  bad = t_op;
  bad.in[0].flags = OPF_IN_DIFF; /* differentiable input without a backward */
  assert_int_equal(opf_op_validate(&bad, &e), OPF_EINVAL);
  bad = t_op;
  bad.abi = 99;
  assert_int_equal(opf_op_validate(&bad, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "ABI"));
}

static void quick(opf_settings *s) {
  opf_settings_default(s);
  s->warmup = 0.001;
  s->min_time = 0.01;
  s->sample_time = 0.0005;
  s->min_runs = 5;
  s->events[0] = '\0';
}

static void test_measure_ok(void **state) {
  (void)state;
  opf_settings s;
  quick(&s);
  opf_case c;
  opf_err e;
  opf_result r;
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F64, "x=4x4", &e), OPF_OK);
  assert_int_equal(opf_measure(&s, &c, "small", OPF_PASS_FWD, NULL, &r), OPF_OK);
  assert_int_equal(r.status, OPF_ST_OK);
  assert_true(r.batch > 1); /* a 16-element op is far below the 0.5 ms sample time */
  assert_true(r.n_samples >= 5);
  assert_true(r.time.min > 0 && r.time.min <= r.time.median && r.time.median <= r.time.max);
  /* x 128 B + b 32 B + y 128 B + workspace 4096 B, in 4 allocations */
  assert_int_equal(r.setup_bytes, 128 + 32 + 128 + 4096);
  assert_int_equal(r.setup_allocs, 4);
  assert_float_equal(r.call_alloc_bytes, 0, 0);
  assert_int_equal(r.n_tensors, 3);
  assert_string_equal(r.tensors[0].shape, "4x4");
  opf_result_release(&r);
}

static void test_measure_per_call_alloc(void **state) {
  (void)state;
  opf_settings s;
  quick(&s);
  opf_case c;
  opf_err e;
  opf_result r;
  assert_int_equal(opf_case_init(&c, &t_alloc_op, OPF_F64, "x=4x4", &e), OPF_OK);
  assert_int_equal(opf_measure(&s, &c, "small", OPF_PASS_FWD, NULL, &r), OPF_OK);
  assert_int_equal(r.status, OPF_ST_OK);
  assert_float_equal(r.call_alloc_bytes, 1000, 1e-9);
  assert_float_equal(r.call_allocs, 1, 1e-9);
  opf_result_release(&r);
}

static void test_measure_statuses(void **state) {
  (void)state;
  opf_settings s;
  quick(&s);
  opf_case c;
  opf_err e;
  opf_result r;
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F64, "x=4x4 fail=true", &e), OPF_OK);
  opf_measure(&s, &c, "small", OPF_PASS_FWD, NULL, &r);
  assert_int_equal(r.status, OPF_ST_ERROR);
  assert_non_null(strstr(r.message, "asked to fail"));
  opf_result_release(&r);
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F64, "x=4x4", &e), OPF_OK);
  opf_measure(&s, &c, "small", OPF_PASS_BWD, NULL, &r);
  assert_int_equal(r.status, OPF_ST_SKIPPED);
  assert_non_null(strstr(r.message, "no backward"));
  opf_result_release(&r);
  /* 2^55 elements cannot fit: skipped with the sizes, never allocated (2^60 is not even a
   * valid shape: more than 2^56 elements) */
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F64, "x=1073741824x1073741824", &e), OPF_EINVAL);
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F64, "x=268435456x134217728", &e), OPF_OK);
  opf_measure(&s, &c, "large", OPF_PASS_FWD, NULL, &r);
  assert_int_equal(r.status, OPF_ST_SKIPPED);
  assert_non_null(strstr(r.message, "GiB"));
  opf_result_release(&r);
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Counters opened after opf_runtime_setup must cover the OpenMP workers: task-clock over a
 * parallel region is compared with the CPU time each thread measures for itself, so the check
 * holds however loaded the machine is (wall time would not). */
static void test_counters_cover_omp_workers(void **state) {
  (void)state;
  opf_settings s;
  opf_settings_default(&s);
  s.threads = 2;
  opf_err e;
  opf_pmu *p;
  assert_int_equal(opf_runtime_setup(&s, &e), OPF_OK);
  assert_int_equal(opf_pmu_create(&p, "task-clock", NULL, &e), OPF_OK);
  assert_int_equal(opf_pmu_open(p, &e), OPF_OK);
  if (opf_pmu_event_at(p, 0)->status == OPF_EV_NOT_SUPPORTED) {
    /* no perf_event_open at all (ENOSYS: qemu-user does not emulate it), nothing to cover */
    print_message("task-clock not supported here (%s): skipping\n", opf_pmu_event_at(p, 0)->reason);
    opf_pmu_free(p);
    skip();
  }
  opf_pmu_snap *a = ts_snap();
  opf_pmu_snap *b = ts_snap();
  double cpu[2] = {0, 0};
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
#pragma omp parallel num_threads(2)
  {
    double t0 = thread_cpu(), t;
    volatile double x = 0;
    do {
      for (int i = 0; i < 10000; i++) x += i;
      t = thread_cpu();
    } while (t - t0 < 0.03);
    cpu[omp_get_thread_num()] = t - t0;
  }
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  double v, frac;
  assert_int_equal(opf_pmu_delta(p, 0, a, b, &v, &frac), 1);
  assert_true(cpu[0] >= 0.03 && cpu[1] >= 0.03); /* both threads really ran */
  if (!(v * 1e-9 >= 0.9 * (cpu[0] + cpu[1])))
    fail_msg("task-clock %.1f ms covers less than the threads' own CPU time %.1f + %.1f ms",
             v * 1e-6, cpu[0] * 1e3, cpu[1] * 1e3);
  opf_pmu_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec_params), cmocka_unit_test(test_spec_errors),
      cmocka_unit_test(test_validate), cmocka_unit_test(test_measure_ok),
      cmocka_unit_test(test_measure_per_call_alloc), cmocka_unit_test(test_measure_statuses),
      cmocka_unit_test(test_counters_cover_omp_workers)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

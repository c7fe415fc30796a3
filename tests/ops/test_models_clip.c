/* test_models_clip.c: what the generic driver cannot see for clip and its alias clamp: golden
 * flops/bytes (with absent bounds), bad params, torch.clamp's semantics on chosen values (NaN
 * and infinities pass through, min > max gives max, absent bounds), the backward at the bounds
 * (torch's clamp_backward passes dy where min <= x <= max), integer bounds and saturation, and
 * the alias computing the same as clip. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

static void test_models(void **state) {
  (void)state;
  const double N = 1048576;
  /* one compare-select per present bound and element in each pass; fwd moves x and y, bwd
   * x, dy and dx */
  ts_expect_models("clip", OPF_F32, "x=1024x1024", 2 * N, 2 * N, 8 * N, 12 * N);
  ts_expect_models("clamp", OPF_F32, "x=1024x1024", 2 * N, 2 * N, 8 * N, 12 * N);
  ts_expect_models("clip", OPF_F64, "x=1024x1024 min=none", N, N, 16 * N, 24 * N);
  ts_expect_models("clip", OPF_F32, "x=1024x1024 max=none", N, N, 8 * N, 12 * N);
  ts_expect_models("clip", OPF_F32, "x=1024x1024 min=none max=none", 0, 0, 8 * N, 12 * N);
  ts_expect_models("clip", OPF_I64, "x=1024x1024 min=0 max=5", 2 * N, 2 * N, 16 * N, 24 * N);
}

static void test_errors(void **state) {
  (void)state;
  ts_expect_einval("clip", "x=4 min=abc", "param 'min' of 'clip' must be a number or none");
  ts_expect_einval("clip", "x=4 min=nan", "must be a number or none");
  /* an infinity only at the param's open end: min=+inf is no bound at all */
  ts_expect_einval("clip", "x=4 min=inf", "must be a number or none");
  ts_expect_einval("clip", "x=4 max=-inf", "must be a number or none");
  ts_expect_einval("clamp", "x=4 min=1e301", "outside its range");
  /* other float params keep refusing none and infinities */
  ts_expect_einval("leaky_relu", "x=4 alpha=none", "must be a number, not 'none'");
  ts_expect_einval("leaky_relu", "x=4 alpha=inf", "must be a number, not 'inf'");
  /* integer inputs take integer bounds */
  opf_case c;
  opf_err e;
  for (int d = OPF_I32; d <= OPF_I64; d++) {
    assert_int_equal(opf_case_init(&c, ts_op("clip"), (opf_dtype)d, "x=4 min=0.5", &e), OPF_EINVAL);
    assert_non_null(strstr(e.msg, "min=0.5 must be an integer (or none)"));
  }
  assert_int_equal(opf_case_init(&c, ts_op("clip"), OPF_I32, "x=4 min=none max=3", &e), OPF_OK);
  opf_case_release(&c);
  /* the explicit infinities equal none */
  assert_int_equal(opf_case_init(&c, ts_op("clip"), OPF_F32, "x=4 min=-inf max=inf", &e), OPF_OK);
  assert_true(isinf(c.p[0]) && c.p[0] < 0 && isinf(c.p[1]) && c.p[1] > 0);
  opf_case_release(&c);
}

/* Run forward (and backward with dy = 1 + k) on values v under spec; check y and dx. */
static void run_values(const char *op, opf_dtype dt, const char *spec, const double *v,
                       const double *want_y, const double *want_dx, int n) {
  opf_case c;
  char full[128];
  snprintf(full, sizeof full, "x=%d %s", n, spec);
  ts_case_ready(&c, ts_op(op), dt, full, want_dx != NULL, 3);
  for (int k = 0; k < n; k++) ts_set(&c.in[0], k, v[k]);
  if (c.op->forward(&c)) fail_msg("%s [%s]: %s", op, full, c.err.msg);
  for (int k = 0; k < n; k++) {
    double y = ts_get(&c.out[0], k);
    if (!(y == want_y[k] || (isnan(y) && isnan(want_y[k]))))
      fail_msg("%s %s [%s]: y[%d] = clip(%g) = %g, want %g", op, opf_dtype_name(dt), full, k, v[k],
               y, want_y[k]);
  }
  if (want_dx) {
    for (int k = 0; k < n; k++) ts_set(&c.gout[0], k, 1 + k);
    if (c.op->backward(&c)) fail_msg("%s [%s]: %s", op, full, c.err.msg);
    for (int k = 0; k < n; k++)
      if (ts_get(&c.gin[0], k) != want_dx[k] * (1 + k))
        fail_msg("%s %s [%s]: dx[%d] at x = %g is %g, want %g", op, opf_dtype_name(dt), full, k,
                 v[k], ts_get(&c.gin[0], k), want_dx[k] * (1 + k));
  }
  opf_case_release(&c);
}

static void test_semantics(void **state) {
  (void)state;
  enum { N = 9 };
  const double x[N] = {-3, -1, -0.999, 0, 0.5, 1, 1.25, INFINITY, NAN};
  const double y[N] = {-1, -1, -0.999, 0, 0.5, 1, 1, 1, NAN};
  /* torch.clamp's gradient: 1 at the bounds themselves, 0 outside and for NaN */
  const double g[N] = {0, 1, 1, 1, 1, 1, 0, 0, 0};
  const double y_lo[N] = {-1, -1, -0.999, 0, 0.5, 1, 1.25, INFINITY, NAN};
  const double g_lo[N] = {0, 1, 1, 1, 1, 1, 1, 1, 0};
  const double y_hi[N] = {-3, -1, -0.999, 0, 0.5, 0.5, 0.5, 0.5, NAN};
  const double g_hi[N] = {1, 1, 1, 1, 1, 0, 0, 0, 0};
  const double y_swap[N] = {-1, -1, -1, -1, -1, -1, -1, -1, NAN}; /* min 1 > max -1: max */
  const double g_swap[N] = {0};
  const double none[N] = {-3, -1, -0.999, 0, 0.5, 1, 1.25, INFINITY, NAN};
  const double g_none[N] = {1, 1, 1, 1, 1, 1, 1, 1, 0};
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    const opf_dtype dt = (opf_dtype)d;
    double xv[N], yv[N], lo[N], sw[N], nn[N];
    for (int k = 0; k < N; k++) { /* -0.999 rounded to the dtype on both sides */
      xv[k] = dt == OPF_F32 ? (double)(float)x[k] : x[k];
      yv[k] = dt == OPF_F32 ? (double)(float)y[k] : y[k];
      lo[k] = dt == OPF_F32 ? (double)(float)y_lo[k] : y_lo[k];
      sw[k] = y_swap[k];
      nn[k] = dt == OPF_F32 ? (double)(float)none[k] : none[k];
    }
    double hi[N];
    for (int k = 0; k < N; k++) hi[k] = dt == OPF_F32 ? (double)(float)y_hi[k] : y_hi[k];
    run_values("clip", dt, "", xv, yv, g, N);
    run_values("clamp", dt, "min=-1 max=1", xv, yv, g, N);
    run_values("clip", dt, "min=-1 max=none", xv, lo, g_lo, N);
    run_values("clip", dt, "min=none max=0.5", xv, hi, g_hi, N);
    run_values("clip", dt, "min=1 max=-1", xv, sw, g_swap, N);
    run_values("clip", dt, "min=none max=none", xv, nn, g_none, N);
    const double ninf[2] = {-INFINITY, -5}, ninf_y[2] = {-1, -1}, ninf_g[2] = {0, 0};
    run_values("clip", dt, "", ninf, ninf_y, ninf_g, 2);
  }
}

static void test_integers(void **state) {
  (void)state;
  const double x[6] = {-2147483648.0, -7, -1, 0, 3, 2147483647.0};
  const double y[6] = {-1, -1, -1, 0, 2, 2};
  run_values("clip", OPF_I32, "min=-1 max=2", x, y, NULL, 6);
  run_values("clamp", OPF_I64, "min=-1 max=2", x, y, NULL, 6);
  /* bounds beyond int32 saturate: no lower bound, and every element raised to INT32_MAX */
  const double y_wide[6] = {-2147483648.0, -7, -1, 0, 3, 2147483647.0};
  run_values("clip", OPF_I32, "min=-1e10 max=none", x, y_wide, NULL, 6);
  const double y_top[6] = {2147483647.0, 2147483647.0, 2147483647.0, 2147483647.0,
                           2147483647.0, 2147483647.0};
  run_values("clip", OPF_I32, "min=5e9 max=none", x, y_top, NULL, 6);
  const double y64[6] = {-2147483648.0, -7, -1, 0, 3, 5e9};
  const double x64[6] = {-2147483648.0, -7, -1, 0, 3, 6e9};
  run_values("clip", OPF_I64, "min=none max=5e9", x64, y64, NULL, 6);
}

/* The alias runs the same kernels: identical bits on the same generated inputs, and the
 * kernels do not depend on the thread count. */
static void test_alias(void **state) {
  (void)state;
  opf_case a, b;
  ts_case_ready(&a, ts_op("clip"), OPF_F32, "x=100003 min=-0.3 max=0.7", 1, 5);
  ts_case_ready(&b, ts_op("clamp"), OPF_F32, "x=100003 min=-0.3 max=0.7", 1, 5);
  assert_memory_equal(a.in[0].data, b.in[0].data, a.in[0].nbytes);
  assert_int_equal(a.op->forward(&a), OPF_OK);
  assert_int_equal(b.op->forward(&b), OPF_OK);
  assert_memory_equal(a.out[0].data, b.out[0].data, a.out[0].nbytes);
  int below = 0, above = 0;
  for (int64_t k = 0; k < 100003; k++) {
    const double y = ts_get(&a.out[0], k);
    assert_true(y >= (double)-0.3f && y <= (double)0.7f);
    below += y == (double)-0.3f;
    above += y == (double)0.7f;
  }
  assert_true(below > 20000 && above > 20000); /* x in [-2, 2): both bounds bite */
  assert_string_equal(a.op->category, b.op->category);
  assert_int_equal(a.op->dtypes, b.op->dtypes);
  opf_case_release(&a);
  opf_case_release(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_models),    cmocka_unit_test(test_errors),
      cmocka_unit_test(test_semantics), cmocka_unit_test(test_integers),
      cmocka_unit_test(test_alias),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

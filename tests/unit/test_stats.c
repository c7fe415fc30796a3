/* test_stats.c: statistics on known samples (values checked against NumPy's defaults:
 * np.percentile linear interpolation, ddof=1 standard deviation). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "opperf/harness.h"

static void test_one_to_ten(void **state) {
  (void)state;
  double x[10] = {7, 1, 10, 3, 2, 9, 4, 8, 6, 5}; /* unsorted on purpose */
  opf_stats s;
  assert_int_equal(opf_stats_compute(x, 10, &s), OPF_OK);
  assert_int_equal(s.n, 10);
  assert_float_equal(s.min, 1, 1e-12);
  assert_float_equal(s.max, 10, 1e-12);
  assert_float_equal(s.median, 5.5, 1e-12);
  assert_float_equal(s.mean, 5.5, 1e-12);
  assert_float_equal(s.p90, 9.1, 1e-12);  /* np.percentile(range(1,11), 90) */
  assert_float_equal(s.p99, 9.91, 1e-12);
  assert_float_equal(s.stddev, 3.0276503540974917, 1e-12);
  assert_float_equal(s.cv, 3.0276503540974917 / 5.5, 1e-12);
  assert_int_equal(s.outliers, 0);
  assert_float_equal(x[0], 7, 0); /* input untouched */
}

static void test_outliers(void **state) {
  (void)state;
  /* median 10, MAD 0.5 -> scaled 0.7413; 3 scaled MADs = 2.22: 20 and 1 are outliers. */
  double x[9] = {10, 10.5, 9.5, 10, 10.5, 9.5, 10, 20, 1};
  opf_stats s;
  assert_int_equal(opf_stats_compute(x, 9, &s), OPF_OK);
  assert_float_equal(s.median, 10, 1e-12);
  assert_float_equal(s.mad, 1.4826 * 0.5, 1e-12);
  assert_int_equal(s.outliers, 2);
}

static void test_single_and_empty(void **state) {
  (void)state;
  double x = 3;
  opf_stats s;
  assert_int_equal(opf_stats_compute(&x, 1, &s), OPF_OK);
  assert_float_equal(s.median, 3, 0);
  assert_float_equal(s.p99, 3, 0);
  assert_float_equal(s.stddev, 0, 0);
  assert_int_equal(s.outliers, 0);
  assert_int_equal(opf_stats_compute(&x, 0, &s), OPF_EINVAL);
}

static void test_constant_samples(void **state) {
  (void)state;
  double x[5] = {2, 2, 2, 2, 2};
  opf_stats s;
  assert_int_equal(opf_stats_compute(x, 5, &s), OPF_OK);
  assert_float_equal(s.cv, 0, 0);
  assert_int_equal(s.outliers, 0); /* MAD 0: only values different from the median count */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_to_ten), cmocka_unit_test(test_outliers),
      cmocka_unit_test(test_single_and_empty), cmocka_unit_test(test_constant_samples)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

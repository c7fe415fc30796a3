/* test_abtest.c: paired A/B measurement (src/abtest.c): the estimate (geometric mean of the
 * round ratios, Student t interval on their logarithms) against hand-computed values, and a
 * real interleaved measurement of a fused operator's two implementations (rounds, merged
 * repetitions on both sides, a ratio inside its interval). Also: a merged result's median
 * interval covers the pooled samples (it was the first repetition's). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opperf/abtest.h"

static void test_ratio_by_hand(void **state) {
  (void)state;
  double r[3] = {1.1, 0.9, 1.0}, ratio, lo, hi;
  assert_int_equal(opf_ab_ratio(r, 3, &ratio, &lo, &hi), OPF_OK);
  double m = (log(1.1) + log(0.9) + log(1.0)) / 3;
  double ss = pow(log(1.1) - m, 2) + pow(log(0.9) - m, 2) + pow(log(1.0) - m, 2);
  double half = 4.303 * sqrt(ss / 2 / 3); /* t(0.975, 2 df) */
  assert_true(fabs(ratio - exp(m)) < 1e-12);
  assert_true(fabs(lo - exp(m - half)) < 1e-12 && fabs(hi - exp(m + half)) < 1e-12);
  /* identical rounds: a zero-width interval at the ratio */
  double same[4] = {0.8, 0.8, 0.8, 0.8};
  assert_int_equal(opf_ab_ratio(same, 4, &ratio, &lo, &hi), OPF_OK);
  assert_true(fabs(ratio - 0.8) < 1e-12 && fabs(lo - 0.8) < 1e-12 && fabs(hi - 0.8) < 1e-12);
  /* too few rounds: a ratio, no interval; bad input refused */
  assert_int_equal(opf_ab_ratio(r, 2, &ratio, &lo, &hi), OPF_OK);
  assert_true(lo == 0 && hi == 0 && ratio > 0);
  assert_int_equal(opf_ab_ratio(r, 0, &ratio, &lo, &hi), OPF_EINVAL);
  double neg[3] = {1, -1, 1};
  assert_int_equal(opf_ab_ratio(neg, 3, &ratio, &lo, &hi), OPF_EINVAL);
}

static void test_interleaved_measurement(void **state) {
  (void)state;
  const opf_op *op = opf_op_find("bias_gelu");
  assert_non_null(op);
  opf_case a, b;
  opf_err e;
  assert_int_equal(opf_case_init(&a, op, OPF_F32, "x=64x64 bias=64", &e), OPF_OK);
  assert_int_equal(opf_case_init(&b, op, OPF_F32, "x=64x64 bias=64", &e), OPF_OK);
  assert_int_equal(opf_case_set_impl(&b, OPF_IMPL_UNFUSED, &e), OPF_OK);
  opf_settings s;
  opf_settings_default(&s);
  s.min_runs = s.max_runs = 5;
  s.min_time = 0;
  s.warmup = 0.005;
  s.threads = 1;
  s.events[0] = '\0';
  opf_result ra, rb;
  assert_int_equal(opf_measure_ab(&s, &a, &b, "custom", OPF_PASS_FWD, NULL, 6, &ra, &rb), OPF_OK);
  assert_int_equal(ra.status, OPF_ST_OK);
  assert_int_equal(rb.status, OPF_ST_OK);
  assert_string_equal(ra.ab_vs, "unfused");
  assert_int_equal(ra.ab_rounds, 6);
  assert_int_equal(ra.n_reps, 6);
  assert_int_equal(rb.n_reps, 6);
  assert_int_equal(ra.n_samples, 30);
  for (int k = 0; k < 6; k++) assert_true(fabs(ra.ab_round[k] - ra.rep_median[k] / rb.rep_median[k]) < 1e-12);
  assert_true(ra.ab_lo > 0 && ra.ab_lo <= ra.ab_ratio && ra.ab_ratio <= ra.ab_hi);
  /* the merged interval is over all 30 samples: it lies within their range and around
   * the pooled median */
  assert_true(ra.ci_lo <= ra.time.median && ra.time.median <= ra.ci_hi);
  assert_true(ra.ci_lo >= ra.time.min && ra.ci_hi <= ra.time.max);
  opf_result_release(&ra);
  opf_result_release(&rb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ratio_by_hand),
      cmocka_unit_test(test_interleaved_measurement),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

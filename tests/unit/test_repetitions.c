/* test_repetitions.c: merging repetitions of a case into one result (opf_result_merge, behind
 * `opperf run --repetitions`): samples and counter samples concatenated, statistics over all,
 * one median per repetition, memory maxima, and a failed repetition failing the case. */
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opperf/harness.h"
#include "test_support.h"

static void fake(opf_result *r, double base, int n, uint64_t peak) {
  memset(r, 0, sizeof *r);
  r->status = OPF_ST_OK;
  r->n_samples = n;
  r->samples = malloc(sizeof(double) * (size_t)n);
  r->cpu_samples = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; i++) r->samples[i] = r->cpu_samples[i] = base + 1e-9 * i;
  opf_stats_compute(r->samples, n, &r->time);
  r->n_reps = 1;
  r->rep_median[0] = r->time.median;
  r->total_time = base * n;
  r->peak_live_bytes = peak;
  r->n_events = 1;
  r->events[0].has_value = 1;
  r->events[0].n_raw = n;
  r->events[0].raw = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; i++) r->events[0].raw[i] = 1000 * base * 1e6;
  r->events[0].per_call = r->events[0].mean_per_call = 1000 * base * 1e6;
  r->events[0].running_pct = 100;
}

static void test_merge(void **state) {
  (void)state;
  opf_result a, b, c;
  fake(&a, 1e-6, 5, 100);
  fake(&b, 2e-6, 5, 300);
  fake(&c, 3e-6, 3, 200);
  opf_result_merge(&a, &b);
  opf_result_merge(&a, &c);
  assert_int_equal(a.n_reps, 3);
  assert_int_equal(a.n_samples, 13);
  assert_true(a.rep_median[0] == 1e-6 + 2e-9 && a.rep_median[1] == 2e-6 + 2e-9 && a.rep_median[2] == 3e-6 + 1e-9);
  assert_true(a.time.min == 1e-6 && a.time.max == 3e-6 + 2e-9);
  assert_true(fabs(a.time.median - (2e-6 + 1e-9)) < 1e-15); /* the 7th of 13 samples: b's 2nd */
  assert_true(a.cpu_samples[12] == 3e-6 + 2e-9);
  assert_int_equal(a.peak_live_bytes, 300);
  assert_int_equal(a.events[0].n_raw, 13);
  assert_true(a.events[0].per_call == 2000);              /* median of 5x1000, 5x2000, 3x3000 */
  assert_true(fabs(a.events[0].mean_per_call - 24000.0 / 13) < 1e-9);
  /* the median's interval is over the 13 pooled samples (it stayed the first repetition's) */
  assert_true(a.ci_lo > 0 && a.ci_lo <= a.time.median && a.time.median <= a.ci_hi);
  assert_true(a.ci_hi >= 2e-6); /* beyond every sample of the first repetition */
  assert_null(b.samples); /* the merged repetition is released */
  opf_result_release(&a);
}

static void test_failed_repetition(void **state) {
  (void)state;
  opf_result a, b, c;
  fake(&a, 1e-6, 4, 100);
  memset(&b, 0, sizeof b);
  b.status = OPF_ST_CRASHED;
  snprintf(b.message, sizeof b.message, "killed by SIGSEGV");
  opf_result_merge(&a, &b);
  assert_int_equal(a.status, OPF_ST_CRASHED);
  assert_string_equal(a.message, "killed by SIGSEGV");
  assert_null(a.samples);
  fake(&c, 1e-6, 4, 100);
  opf_result_merge(&a, &c); /* a failed case stays failed */
  assert_int_equal(a.status, OPF_ST_CRASHED);
  opf_result_release(&a);
}

/* Two real measurements of one case, merged. */
static void test_measure_twice(void **state) {
  (void)state;
  opf_settings s;
  opf_settings_default(&s);
  s.min_time = s.max_time = s.warmup = 0.002;
  opf_result r[2];
  for (int k = 0; k < 2; k++) {
    opf_case c;
    opf_err e;
    assert_int_equal(opf_case_init(&c, ts_op("relu"), OPF_F32, "x=1000", &e), OPF_OK);
    assert_int_equal(opf_measure(&s, &c, "small", OPF_PASS_FWD, NULL, &r[k]), OPF_OK);
    assert_int_equal(r[k].status, OPF_ST_OK);
    assert_int_equal(r[k].n_reps, 1);
  }
  int n0 = r[0].n_samples, n1 = r[1].n_samples;
  double m1 = r[1].time.median;
  opf_result_merge(&r[0], &r[1]);
  assert_int_equal(r[0].n_samples, n0 + n1);
  assert_int_equal(r[0].n_reps, 2);
  assert_true(r[0].rep_median[1] == m1);
  opf_result_release(&r[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_failed_repetition),
      cmocka_unit_test(test_measure_twice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

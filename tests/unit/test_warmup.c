/* test_warmup.c: the harness's warm-up (opf_measure): it ends early once two consecutive
 * chunks of calls agree per call (warmup_settle), never later than --warmup, runs the full
 * --warmup when settling is off, makes exactly warmup_calls calls when those are set, and its
 * length is recorded in the result. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opperf/harness.h"
#include "test_support.h"
#include "opperf/op.h"

static void measure(double warmup, double settle, int calls, opf_result *r) {
  opf_settings s;
  opf_settings_default(&s);
  s.warmup = warmup;
  s.warmup_settle = settle;
  s.warmup_calls = calls;
  s.min_runs = s.max_runs = 3;
  s.min_time = 0;
  s.threads = 1;
  s.events[0] = '\0';
  ts_measure_small(&s, r);
}

static void test_settles_early(void **state) {
  (void)state;
  opf_result r;
  /* A steady small operator agrees within 50% chunk to chunk long before 2 s (a chunk lasts
   * about 2 ms; the earliest end is after 10 ms). */
  measure(2.0, 0.5, 0, &r);
  assert_true(r.warmup_s >= OPF_WARMUP_MIN);
  assert_true(r.warmup_s < 1.0);
  assert_true(r.warmup_calls > 2);
  opf_result_release(&r);
}

static void test_full_without_settling(void **state) {
  (void)state;
  opf_result r;
  measure(0.1, 0, 0, &r);
  assert_true(r.warmup_s >= 0.1);
  opf_result_release(&r);
}

static void test_exact_calls(void **state) {
  (void)state;
  opf_result r;
  measure(5.0, 0.5, 7, &r);
  assert_int_equal(r.warmup_calls, 7);
  opf_result_release(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_settles_early),
      cmocka_unit_test(test_full_without_settling),
      cmocka_unit_test(test_exact_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

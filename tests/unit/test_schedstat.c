/* test_schedstat.c: the CPU contention figures (src/schedstat.c, opf_measure): the per-thread
 * schedstat sum of this process, a reader that fails (no schedstat: a kernel without
 * CONFIG_SCHED_INFO, injected through opf_sched_set_root) giving status "not available" with
 * the reason rather than a 0, and the figures crossing the wire. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "opperf/harness.h"
#include "test_support.h"
#include "opperf/op.h"
#include "opperf/schedstat.h"
#include "opperf/wire.h"

static void measure(int retries, opf_result *r) {
  opf_settings s;
  opf_settings_default(&s);
  s.warmup = 0.005;
  s.min_runs = s.max_runs = 3;
  s.min_time = 0;
  s.threads = 1;
  s.events[0] = '\0';
  s.contention_retries = retries;
  ts_measure_small(&s, r);
}

static void test_read_self(void **state) {
  (void)state;
  opf_sched_totals a, b;
  opf_err e;
  if (access("/proc/self/task", R_OK) || opf_sched_read(&a, &e)) {
    /* a kernel without schedstat: the error says why */
    assert_true(strlen(e.msg) > 0);
    skip();
  }
  assert_true(a.tasks >= 1);
  volatile double x = 0;
  for (int i = 0; i < 3000000; i++) x += i;
  assert_int_equal(opf_sched_read(&b, &e), OPF_OK);
  assert_true(b.oncpu_s > a.oncpu_s); /* the loop ran on a CPU */
  assert_true(b.runq_s >= a.runq_s);
  assert_true(b.slices >= a.slices);
}

static void test_unavailable_is_a_status(void **state) {
  (void)state;
  char dir[] = "/tmp/opf_sched_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char sub[64];
  snprintf(sub, sizeof sub, "%s/1234", dir); /* a "thread" without a schedstat file */
  assert_int_equal(mkdir(sub, 0700), 0);
  opf_sched_set_root(dir);
  opf_sched_totals t;
  opf_err e;
  assert_int_equal(opf_sched_read(&t, &e), OPF_ESYS);
  assert_non_null(strstr(e.msg, "schedstat"));
  opf_result r;
  measure(2, &r);
  opf_sched_set_root(NULL);
  rmdir(sub);
  rmdir(dir);
  assert_int_equal(r.sched_ok, 0);
  assert_true(strlen(r.sched_reason) > 0);
  assert_int_equal(r.contended, 0);
  assert_int_equal(r.attempts, 1); /* unknown contention is no reason to retry */
  assert_true(r.attempt_contention[0] < 0); /* "not available", not a 0 */
  assert_true(r.time.median > 0);       /* the measurement itself stands */
  opf_result_release(&r);
}

static void test_measured_and_on_the_wire(void **state) {
  (void)state;
  opf_result r, back;
  measure(0, &r);
  if (!r.sched_ok) {
    assert_true(strlen(r.sched_reason) > 0);
    opf_result_release(&r);
    skip();
  }
  assert_int_equal(r.attempts, 1);
  assert_true(r.oncpu_s > 0);
  assert_true(r.contention >= 0 && r.contention <= 1.01);
  assert_int_equal(r.contention_threads, 1);
  char *buf;
  size_t len, used;
  opf_err e;
  assert_int_equal(opf_wire_encode(&r, &buf, &len, &e), OPF_OK);
  assert_int_equal(opf_wire_decode(buf, len, &back, &used, &e), OPF_OK);
  free(buf);
  assert_int_equal(back.sched_ok, 1);
  assert_true(back.contention == r.contention && back.runq_wait_s == r.runq_wait_s &&
              back.oncpu_s == r.oncpu_s && back.attempts == 1);
  assert_true(back.attempt_median[0] == r.attempt_median[0]);
  opf_result_release(&back);
  opf_result_release(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_read_self),
      cmocka_unit_test(test_unavailable_is_a_status),
      cmocka_unit_test(test_measured_and_on_the_wire),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

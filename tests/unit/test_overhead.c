/* test_overhead.c: unit tests of opf_overhead_measure (src/overhead.c): the harness's cost per
 * sample on an empty operator is a positive, finite, plausible figure for the timer alone and
 * with the software counters, and absent (-1) for a counter set that does not open (failures
 * injected through the default opf_pmu_sys, and topdown without a table), never made up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opperf/harness.h"
#include "opperf/pmu.h"
#include "pmu_internal.h"

enum { T_SOFTWARE = 1 };

/* Can this environment open software counters at all (seccomp may forbid it)? */
static int sw_opens(void) {
  opf_pmu *p = NULL;
  assert_int_equal(opf_pmu_create(&p, "task-clock", NULL, NULL), OPF_OK);
  opf_pmu_open(p, NULL);
  int ok = opf_pmu_n_open(p) == 1;
  if (!ok) print_message("task-clock does not open here: %s\n", opf_pmu_event_at(p, 0)->reason);
  opf_pmu_free(p);
  return ok;
}

static void test_timer_and_sw(void **state) {
  (void)state;
  const char *const lists[] = {"timer", "sw", ""};
  double out[3] = {0, 0, 0};
  opf_err err = {0};
  assert_int_equal(opf_overhead_measure(lists, 3, out, &err), OPF_OK);
  print_message("per sample: timer %.1f ns, timer + sw snapshots %.1f ns\n", out[0] * 1e9,
                out[1] * 1e9);
  /* two clock reads: more than nothing, far less than a system call-heavy 10 us */
  assert_true(isfinite(out[0]) && out[0] > 0 && out[0] < 1e-5);
  assert_true(isfinite(out[2]) && out[2] > 0 && out[2] < 1e-5); /* "" is timer only too */
  if (!sw_opens()) {
    assert_true(out[1] < 0); /* cannot open here: absent, not a figure */
    return;
  }
  assert_true(isfinite(out[1]) && out[1] > 0 && out[1] < 1e-3);
  /* two group reads (system calls) on top of the same two clock reads cost more */
  assert_true(out[1] > out[0]);
}

/* A fake kernel: page-faults (or everything) refused with ENOENT, the rest accepted. */
static int g_fail_all;
static int g_next_fd = 3000;
static int g_open_fds;

static long fake_open(void *attr, int pid, int cpu, int group_fd, unsigned long flags) {
  (void)pid, (void)cpu, (void)group_fd, (void)flags;
  opf_pmu_attr_view v;
  opf_pmu_attr_view_decode(attr, &v);
  if (g_fail_all || (v.type == T_SOFTWARE && v.config == 2)) {
    errno = ENOENT;
    return -1;
  }
  g_open_fds++;
  return g_next_fd++;
}

static long fake_read(int fd, void *buf, size_t n) {
  (void)fd;
  /* task-clock leader with context-switches and cpu-migrations: 3 events, ids 0 */
  uint64_t w[3 + 2 * 3] = {3, 1000, 1000, 5, 0, 6, 0, 7, 0};
  if (n < sizeof w) {
    errno = ENOSPC;
    return -1;
  }
  memcpy(buf, w, sizeof w);
  return (long)sizeof w;
}

static int fake_close(int fd) {
  (void)fd;
  g_open_fds--;
  return 0;
}

static void test_absent_when_nothing_opens(void **state) {
  (void)state;
  static const opf_pmu_sys fake = {fake_open, fake_read, fake_close};
  opf_pmu_set_default_sys(&fake);
  const char *const lists[] = {"timer", "sw", "core", "cycles,instructions"};
  double out[4];
  opf_err err = {0};
  g_fail_all = 1;
  g_open_fds = 0;
  assert_int_equal(opf_overhead_measure(lists, 4, out, &err), OPF_OK);
  assert_true(out[0] > 0);
  assert_true(out[1] == -1.0);
  assert_true(out[2] == -1.0);
  assert_true(out[3] == -1.0);
  /* Some events open: a figure, for what opened (page-faults refused, 3 of 4 sw events). */
  g_fail_all = 0;
  assert_int_equal(opf_overhead_measure(lists, 2, out, &err), OPF_OK);
  assert_true(out[0] > 0 && out[1] > 0 && isfinite(out[1]));
  assert_int_equal(g_open_fds, 0); /* every counter set was closed again */
  opf_pmu_set_default_sys(NULL);
}

static void test_absent_topdown_without_table(void **state) {
  (void)state;
  opf_pmu_set_topdown_pmu(""); /* as on this project's Zen 5 VM: no table */
  const char *const lists[] = {"topdown"};
  double out[1] = {0};
  assert_int_equal(opf_overhead_measure(lists, 1, out, NULL), OPF_OK);
  assert_true(out[0] == -1.0);
  opf_pmu_set_topdown_pmu(NULL);
}

static void test_bad_input(void **state) {
  (void)state;
  const char *const lists[] = {"timer", "nosuchevent", "sw"};
  double out[3] = {1, 1, 1};
  opf_err err = {0};
  assert_int_equal(opf_overhead_measure(lists, 3, out, &err), OPF_ECONFIG);
  assert_non_null(strstr(err.msg, "unknown event 'nosuchevent'"));
  for (int i = 0; i < 3; i++) assert_true(out[i] == -1.0); /* nothing measured */
  assert_int_equal(opf_overhead_measure(lists, 0, NULL, &err), OPF_OK);
  assert_int_equal(opf_overhead_measure(lists, -1, out, &err), OPF_EINVAL);
  assert_int_equal(opf_overhead_measure(NULL, 2, out, &err), OPF_EINVAL);
  assert_int_equal(opf_overhead_measure(lists, 1, NULL, &err), OPF_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_timer_and_sw),
      cmocka_unit_test(test_absent_when_nothing_opens),
      cmocka_unit_test(test_absent_topdown_without_table),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

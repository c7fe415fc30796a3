/* test_pmu_rdpmc.c: unit tests of reading counters with rdpmc through the perf_event_mmap_page:
 * the page arithmetic (sign extension, TSC time deltas, when to fall back) on synthetic pages
 * on any machine, and, where the kernel allows rdpmc, agreement with read() on real hardware
 * counters (with and without context switches in between), the OPPERF_NO_RDPMC / OPPERF_RDPMC
 * switches, other threads and forked children. Skips, not fails, without a usable PMU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opperf/pmu.h"
#include "pmu_internal.h"
#include "test_support.h"

/* ---- page arithmetic ---------------------------------------------------------------------- */

static opf_upage page(uint32_t index, int64_t offset, uint64_t en, uint64_t run) {
  opf_upage u;
  memset(&u, 0, sizeof u);
  u.index = index;
  u.offset = offset;
  u.time_enabled = en;
  u.time_running = run;
  u.pmc_width = 48;
  u.cap_user_rdpmc = 1;
  return u;
}

static void test_upage_sign_extension(void **state) {
  (void)state;
  uint64_t v, en, run;
  /* a 48-bit counter at -16 (the kernel programs counters to negative values) */
  opf_upage u = page(1, 1000, 0, 0);
  u.cap_user_time = 1;
  u.pmc = 0xFFFFFFFFFFF0ULL;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(v, 984);
  /* bits above pmc_width are not part of the counter */
  u.pmc = 0xABCD000000000005ULL;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(v, 1005);
  /* largest positive 48-bit value */
  u.pmc = 0x7FFFFFFFFFFFULL;
  u.offset = 0;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(v, 0x7FFFFFFFFFFFULL);
  /* 64-bit wide counter: taken as is */
  u.pmc_width = 64;
  u.pmc = 5;
  u.offset = -3;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(v, 2);
  /* 40 bits (older AMD): -1 */
  u.pmc_width = 40;
  u.pmc = 0xFFFFFFFFFFULL;
  u.offset = 10;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(v, 9);
  /* nonsense widths: fall back */
  u.pmc_width = 0;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_FALLBACK);
  u.pmc_width = 65;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_FALLBACK);
}

static void test_upage_time(void **state) {
  (void)state;
  uint64_t v = 0, en = 0, run = 0;
  /* 2 ns per cycle: mult 2048, shift 10; 1000 cycles + offset 100 -> +2100 ns */
  opf_upage u = page(3, 50, 10000, 8000);
  u.cap_user_time = 1;
  u.time_mult = 2048;
  u.time_shift = 10;
  u.time_offset = 100;
  u.tsc = 1000;
  u.pmc = 7;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(v, 57);
  assert_int_equal(en, 12100);
  assert_int_equal(run, 10100); /* on a counter: running advances too */
  /* quotient and remainder parts: tsc 3000 = 2*1024 + 952 -> 2*2048 + 952*2 = 6000 */
  u.tsc = 3000;
  u.time_offset = 0;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(en, 16000);
  /* off its counter (multiplexed out): the count is the offset, running does not advance */
  u.index = 0;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(v, 50);
  assert_int_equal(en, 16000);
  assert_int_equal(run, 8000);
  /* cap_user_time_short: the cycle count is rebuilt from time_cycles and time_mask */
  u.index = 3;
  u.cap_user_time_short = 1;
  u.time_cycles = 0x1000;
  u.time_mask = 0xFFF;
  u.tsc = 0x5000 + 1000; /* (tsc - cycles) & mask = 1000 -> cyc = 0x1000 + 1000 */
  u.time_mult = 1 << 10; /* 1 ns per cycle */
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_EXACT);
  assert_int_equal(en, 10000 + 0x1000 + 1000);
}

static void test_upage_without_time(void **state) {
  (void)state;
  uint64_t v = 0, en = 0, run = 0;
  /* never multiplexed, on a counter: value exact, times as of the page */
  opf_upage u = page(2, 100, 5000, 5000);
  u.pmc = 25;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_STALE_TIME);
  assert_int_equal(v, 125);
  assert_int_equal(en, 5000);
  assert_int_equal(run, 5000);
  /* multiplexed once: the ratio needs the current times -> read() */
  u.time_running = 4000;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_FALLBACK);
  /* not on a counter now */
  u = page(0, 100, 5000, 5000);
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_FALLBACK);
  /* the kernel does not allow rdpmc */
  u = page(2, 100, 5000, 5000);
  u.cap_user_rdpmc = 0;
  assert_int_equal(opf_upage_eval(&u, &v, &en, &run), OPF_UPAGE_FALLBACK);
}

/* ---- real counters ------------------------------------------------------------------------ */

static _Thread_local volatile uint64_t g_sink;

static void busy_ns(int64_t ns) {
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  do {
    for (int i = 0; i < 20000; i++) g_sink += (uint64_t)i * 7;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  } while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < ns);
}

/* "cycles,instructions" opened with rdpmc forced; NULL (test skipped) where the hardware or
 * the kernel does not allow it. */
static opf_pmu *open_forced(void) {
  setenv("OPPERF_RDPMC", "1", 1);
  unsetenv("OPPERF_NO_RDPMC");
  opf_pmu *p = NULL;
  opf_err err = {0};
  assert_int_equal(opf_pmu_create(&p, "cycles,instructions", NULL, &err), OPF_OK);
  assert_int_equal(opf_pmu_open(p, &err), OPF_OK);
  unsetenv("OPPERF_RDPMC");
  const opf_pmu_event *e = opf_pmu_event_at(p, 1);
  if (e->status != OPF_EV_COUNTED) {
    print_message("instructions not counted here (%s): skipping\n", e->reason);
    opf_pmu_free(p);
    return NULL;
  }
  if (opf_pmu_n_rdpmc(p) == 0) {
    print_message("%s: skipping\n", opf_pmu_rdpmc_note(p));
    opf_pmu_free(p);
    return NULL;
  }
  assert_int_equal(opf_pmu_n_rdpmc(p), 2);
  assert_non_null(strstr(opf_pmu_rdpmc_note(p), "OPPERF_RDPMC"));
  return p;
}

/* Interleaved reads through the page and through read(): every value and time of the
 * calling thread's events is monotonic across both paths. */
static void test_rdpmc_interleaved(void **state) {
  (void)state;
  opf_pmu *p = open_forced();
  if (!p) skip();
  opf_pmu_snap *s[9];
  for (int si_ = 0; si_ < 9; si_++) s[si_] = ts_snap();
  for (int r = 0; r < 9; r++) {
    if (r % 2)
      assert_int_equal(opf_pmu_read_syscall(p, s[r]), OPF_OK);
    else
      assert_int_equal(opf_pmu_read(p, s[r]), OPF_OK);
    if (r == 4) usleep(2000); /* a context switch: the page is rewritten */
    else busy_ns(200000);
  }
  for (int r = 1; r < 9; r++)
    for (int i = 0; i < 2; i++) {
      if (ts_raw(s[r], i, 0) < ts_raw(s[r - 1], i, 0) || ts_raw(s[r], i, 1) < ts_raw(s[r - 1], i, 1) ||
          ts_raw(s[r], i, 2) < ts_raw(s[r - 1], i, 2))
        fail_msg("event %d not monotonic at read %d: value %llu -> %llu, enabled %llu -> %llu",
                 i, r, (unsigned long long)ts_raw(s[r - 1], i, 0), (unsigned long long)ts_raw(s[r], i, 0),
                 (unsigned long long)ts_raw(s[r - 1], i, 1), (unsigned long long)ts_raw(s[r], i, 1));
      /* 200 us of busy loop in between: counted and timed */
      assert_true(ts_raw(s[r], i, 0) > ts_raw(s[r - 1], i, 0));
    }
  opf_pmu_free(p);
}

/* The same work measured through both paths: counts within 2 %, scaling 1, running within
 * 5 % of each other; also across sleeps (context switches rewrite the page). */
static void test_rdpmc_agrees_with_read(void **state) {
  (void)state;
  opf_pmu *p = open_forced();
  if (!p) skip();
  for (int with_sleep = 0; with_sleep <= 1; with_sleep++) {
    opf_pmu_snap *ra = ts_snap();
    opf_pmu_snap *ya = ts_snap();
    opf_pmu_snap *rb = ts_snap();
    opf_pmu_snap *yb = ts_snap();
    assert_int_equal(opf_pmu_read(p, ra), OPF_OK);
    assert_int_equal(opf_pmu_read_syscall(p, ya), OPF_OK);
    busy_ns(10000000);
    if (with_sleep) {
      usleep(3000);
      busy_ns(10000000);
    }
    assert_int_equal(opf_pmu_read_syscall(p, yb), OPF_OK);
    assert_int_equal(opf_pmu_read(p, rb), OPF_OK);
    for (size_t i = 0; i < 2; i++) {
      double vr, fr, vy, fy;
      assert_int_equal(opf_pmu_delta(p, i, ra, rb, &vr, &fr), 1);
      assert_int_equal(opf_pmu_delta(p, i, ya, yb, &vy, &fy), 1);
      double dr = (double)(ts_raw(rb, i, 2) - ts_raw(ra, i, 2));
      double dy = (double)(ts_raw(yb, i, 2) - ts_raw(ya, i, 2));
      print_message("%s%s: rdpmc %.0f (running %.3f ms, x%.4f), read() %.0f (running %.3f ms, "
                    "x%.4f)\n", opf_pmu_event_at(p, i)->name, with_sleep ? " (with sleep)" : "",
                    vr, dr / 1e6, fr, vy, dy / 1e6, fy);
      assert_true(vr > 1e6 && vy > 1e6);
      assert_true(fabs(vr - vy) <= 0.02 * vy);
      assert_true(fr > 0.999 && fy > 0.999); /* nothing else competes for 2 counters */
      assert_true(fabs(dr - dy) <= 0.05 * dy);
    }
  }
  opf_pmu_free(p);
}

/* Another thread's opf_pmu_read never uses the opener's pages: same counts as read(). */
typedef struct other_arg {
  opf_pmu *p;
  opf_pmu_snap *via_read, *via_other;
  int rc;
} other_arg;

static void *other_main(void *arg) {
  other_arg *o = arg;
  o->rc = opf_pmu_read(o->p, o->via_other);
  return NULL;
}

static void test_rdpmc_other_thread_and_fork(void **state) {
  (void)state;
  opf_pmu *p = open_forced();
  if (!p) skip();
  other_arg o;
  memset(&o, 0, sizeof o);
  o.p = p;
  o.rc = -1;
  o.via_read = ts_snap();
  o.via_other = ts_snap();
  opf_pmu_snap *before = ts_snap();
  assert_int_equal(opf_pmu_read(p, before), OPF_OK);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, other_main, &o), 0);
  pthread_join(th, NULL); /* the opener is blocked in join: its counters stand still */
  assert_int_equal(opf_pmu_read_syscall(p, o.via_read), OPF_OK);
  assert_int_equal(o.rc, OPF_OK);
  for (int i = 0; i < 2; i++) {
    /* other thread's read() happened between two reads of ours */
    assert_true(ts_raw(o.via_other, i, 0) >= ts_raw(before, i, 0));
    assert_true(ts_raw(o.via_other, i, 0) <= ts_raw(o.via_read, i, 0));
    assert_true(ts_raw(o.via_other, i, 2) <= ts_raw(o.via_read, i, 2));
  }
  /* A forked child has no mapping of the pages (VM_DONTCOPY): reading must not touch them. */
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    opf_pmu_snap *s = ts_snap();
    _exit(opf_pmu_read(p, s) == OPF_OK ? 0 : 3);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (!WIFEXITED(st)) fail_msg("child reading counters died (signal %d)", WTERMSIG(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  opf_pmu_free(p);
}

static void test_rdpmc_switches(void **state) {
  (void)state;
  /* software events never go through rdpmc */
  opf_pmu *p = NULL;
  setenv("OPPERF_RDPMC", "1", 1);
  assert_int_equal(opf_pmu_create(&p, "task-clock,page-faults", NULL, NULL), OPF_OK);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_n_rdpmc(p), 0);
  if (opf_pmu_n_open(p) > 0) assert_non_null(strstr(opf_pmu_rdpmc_note(p), "no hardware"));
  opf_pmu_free(p);
  unsetenv("OPPERF_RDPMC");

  /* OPPERF_NO_RDPMC wins over OPPERF_RDPMC */
  setenv("OPPERF_NO_RDPMC", "1", 1);
  setenv("OPPERF_RDPMC", "1", 1);
  assert_int_equal(opf_pmu_create(&p, "cycles", NULL, NULL), OPF_OK);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_n_rdpmc(p), 0);
  if (opf_pmu_n_open(p) == 1) {
    assert_non_null(strstr(opf_pmu_rdpmc_note(p), "OPPERF_NO_RDPMC"));
    opf_pmu_snap *a = ts_snap();
    opf_pmu_snap *b = ts_snap();
    assert_int_equal(opf_pmu_read(p, a), OPF_OK);
    busy_ns(1000000);
    assert_int_equal(opf_pmu_read(p, b), OPF_OK);
    double v = 0, f = 0;
    assert_int_equal(opf_pmu_delta(p, 0, a, b, &v, &f), 1);
    assert_true(v > 1e5);
  }
  opf_pmu_free(p);
  unsetenv("OPPERF_NO_RDPMC");
  unsetenv("OPPERF_RDPMC");

  /* auto (default): either every hardware event of ours or none, and a note that says so */
  assert_int_equal(opf_pmu_create(&p, "cycles,instructions,task-clock", NULL, NULL), OPF_OK);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  size_t n = opf_pmu_n_rdpmc(p);
  print_message("auto: %s\n", opf_pmu_rdpmc_note(p));
  assert_true(n == 0 || n == 2);
  assert_true(strncmp(opf_pmu_rdpmc_note(p), "rdpmc: ", 7) == 0);
  opf_pmu_close(p);
  assert_int_equal(opf_pmu_n_rdpmc(p), 0);
  opf_pmu_free(p);
}

/* The gain: ns per snapshot of the core preset on this thread, both paths. */
static double ns_per_read(opf_pmu *p, int syscall_only) {
  opf_pmu_snap *s = ts_snap();
  enum { N = 2000 };
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < N; i++) {
    if (syscall_only) opf_pmu_read_syscall(p, s);
    else opf_pmu_read(p, s);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / N;
}

static void test_rdpmc_cost(void **state) {
  (void)state;
  setenv("OPPERF_RDPMC", "1", 1);
  opf_pmu *p = NULL;
  assert_int_equal(opf_pmu_create(&p, "core", NULL, NULL), OPF_OK);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  unsetenv("OPPERF_RDPMC");
  if (opf_pmu_n_rdpmc(p) == 0) {
    print_message("%s: skipping\n", opf_pmu_rdpmc_note(p));
    opf_pmu_free(p);
    skip();
  }
  double r = ns_per_read(p, 0), y = ns_per_read(p, 1);
  print_message("core preset (%zu events) snapshot: rdpmc %.0f ns, read() %.0f ns\n",
                opf_pmu_n_rdpmc(p), r, y);
  assert_true(r > 0 && r < 1e6 && y > 0 && y < 1e6);
  opf_pmu_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_upage_sign_extension),
      cmocka_unit_test(test_upage_time),
      cmocka_unit_test(test_upage_without_time),
      cmocka_unit_test(test_rdpmc_interleaved),
      cmocka_unit_test(test_rdpmc_agrees_with_read),
      cmocka_unit_test(test_rdpmc_other_thread_and_fork),
      cmocka_unit_test(test_rdpmc_switches),
      cmocka_unit_test(test_rdpmc_cost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_pmu.c: unit tests of the performance-counter module (pmu/): event parsing and libpfm4
 * spellings, real software counters on this process (one and several threads), hardware events
 * on a machine that may have no PMU, and perf stat-like fallbacks driven by a fake kernel
 * plugged in through opf_pmu_sys. Self-contained: needs only pmu/, src/error.c and cmocka. */
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "opperf/pmu.h"
#include "test_support.h"
#include "pmu_internal.h"
#include "test_support.h"

/* Kernel ABI numbers (include/uapi/linux/perf_event.h), spelled out because only pmu/ may
 * include that header. */
enum { T_HARDWARE = 0, T_SOFTWARE = 1, T_HW_CACHE = 3, T_RAW = 4 };
#define READ_FORMAT_EXPECTED 0xfULL /* TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID|GROUP */

/* ---- helpers ---------------------------------------------------------------------------- */

static int64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static _Thread_local volatile uint64_t g_sink; /* keeps busy loops from being optimised out */

/* Burn ns of this thread's CPU time; returns the CPU time actually used. */
static int64_t busy_cpu_ns(int64_t ns) {
  int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t;
  do {
    for (int i = 0; i < 20000; i++) g_sink += (uint64_t)i * 7;
    t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  } while (t - t0 < ns);
  return t - t0;
}

static int my_tid(void) { return (int)syscall(SYS_gettid); }

static size_t find_ev(const opf_pmu *p, const char *name) {
  for (size_t i = 0; i < opf_pmu_count(p); i++)
    if (strcmp(opf_pmu_event_at(p, i)->name, name) == 0) return i;
  fail_msg("event %s not in the set", name);
  return (size_t)-1;
}

static opf_pmu *create_ok(const char *events, const opf_pmu_sys *sys) {
  opf_pmu *p = NULL;
  opf_err err = {0};
  int rc = opf_pmu_create(&p, events, sys, &err);
  if (rc != OPF_OK) fail_msg("create '%s': %d %s", events, rc, err.msg);
  assert_non_null(p);
  return p;
}

/* Threads parked on a barrier so they exist while counters are opened. */
typedef struct parked {
  pthread_barrier_t go, done, leave;
  int64_t busy_ns;  /* how long each worker burns CPU between go and done */
  int64_t used[64]; /* CPU time each worker used */
  int tid[64];
  int n;
  int idx;
  pthread_mutex_t mu;
} parked;

static void *parked_main(void *arg) {
  parked *pk = arg;
  pthread_mutex_lock(&pk->mu);
  int me = pk->idx++;
  pk->tid[me] = my_tid();
  pthread_mutex_unlock(&pk->mu);
  pthread_barrier_wait(&pk->go);
  pk->used[me] = pk->busy_ns ? busy_cpu_ns(pk->busy_ns) : 0;
  pthread_barrier_wait(&pk->done);
  pthread_barrier_wait(&pk->leave);
  return NULL;
}

/* Starts n parked threads; pk->go etc. count the caller too. Waits until all have a tid. */
static void park_start(parked *pk, pthread_t *th, int n, int64_t busy_ns) {
  memset(pk, 0, sizeof *pk);
  pk->n = n;
  pk->busy_ns = busy_ns;
  pthread_mutex_init(&pk->mu, NULL);
  pthread_barrier_init(&pk->go, NULL, (unsigned)n + 1);
  pthread_barrier_init(&pk->done, NULL, (unsigned)n + 1);
  pthread_barrier_init(&pk->leave, NULL, (unsigned)n + 1);
  pthread_attr_t at;
  pthread_attr_init(&at);
  /* small stacks for many threads, but not below what ASan's pthread_create accepts (it
   * refuses 64 KiB with EINVAL) */
  pthread_attr_setstacksize(&at, 1 << 18);
  for (int i = 0; i < n; i++) assert_int_equal(pthread_create(&th[i], &at, parked_main, pk), 0);
  pthread_attr_destroy(&at);
  for (;;) {
    pthread_mutex_lock(&pk->mu);
    int started = pk->idx;
    pthread_mutex_unlock(&pk->mu);
    if (started == n) break;
    usleep(1000);
  }
}

static void park_finish(parked *pk, pthread_t *th) {
  for (int i = 0; i < pk->n; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&pk->go);
  pthread_barrier_destroy(&pk->done);
  pthread_barrier_destroy(&pk->leave);
  pthread_mutex_destroy(&pk->mu);
}

/* Release parked threads all the way (go, done, leave) and join them. */
static void park_release_all(parked *pk, pthread_t *th) {
  pthread_barrier_wait(&pk->go);
  pthread_barrier_wait(&pk->done);
  pthread_barrier_wait(&pk->leave);
  park_finish(pk, th);
}

/* ---- parsing and spellings --------------------------------------------------------------- */

static void test_status_names(void **state) {
  (void)state;
  assert_string_equal(opf_ev_status_name(OPF_EV_COUNTED), "counted");
  assert_string_equal(opf_ev_status_name(OPF_EV_SCALED), "scaled");
  assert_string_equal(opf_ev_status_name(OPF_EV_NOT_COUNTED), "not counted");
  assert_string_equal(opf_ev_status_name(OPF_EV_NOT_SUPPORTED), "not supported");
  assert_string_equal(opf_ev_status_name(OPF_EV_CONFIG_ERROR), "config error");
}

static void test_empty_lists(void **state) {
  (void)state;
  const char *lists[] = {NULL, "", " , ,"};
  for (size_t k = 0; k < 3; k++) {
    opf_pmu *p = create_ok(lists[k], NULL);
    assert_int_equal(opf_pmu_count(p), 0);
    assert_null(opf_pmu_event_at(p, 0));
    assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
    assert_int_equal(opf_pmu_n_open(p), 0);
    opf_pmu_snap *s = ts_snap();
    assert_int_equal(opf_pmu_read(p, s), OPF_OK);
    assert_int_equal(opf_pmu_snap_raw(s, 0, NULL, NULL, NULL), OPF_EINVAL); /* no event 0 */
    double v = 1, f = 1;
    assert_int_equal(opf_pmu_delta(p, 0, s, s, &v, &f), 0);
    assert_true(v == 0.0 && f == 0.0);
    opf_pmu_free(p);
  }
  opf_pmu_free(NULL);
  assert_int_equal(opf_pmu_create(NULL, "sw", NULL, NULL), OPF_EINVAL);
}

static void test_presets_and_dedup(void **state) {
  (void)state;
  static const struct {
    const char *preset;
    int n;
    const char *names[5];
  } want[] = {
      {"sw", 4, {"task-clock", "page-faults", "context-switches", "cpu-migrations"}},
#if defined(__aarch64__) /* Arm common events (pmu.c, arm64 presets) */
      {"core", 4, {"CPU_CYCLES", "INST_RETIRED", "BR_RETIRED", "BR_MIS_PRED_RETIRED"}},
      {"cache", 5,
       {"CPU_CYCLES", "L1D_CACHE_REFILL", "L2D_CACHE_REFILL", "LL_CACHE_MISS_RD", "L1D_TLB_REFILL"}},
#else
      {"core", 4, {"cycles", "instructions", "branches", "branch-misses"}},
      {"cache", 4, {"cycles", "L1-dcache-load-misses", "LLC-load-misses", "dTLB-load-misses"}},
#endif
      {"tlb", 2, {"dTLB-load-misses", "iTLB-load-misses"}},
      {"branch", 2, {"branches", "branch-misses"}},
  };
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    opf_pmu *p = create_ok(want[k].preset, NULL);
    assert_int_equal(opf_pmu_count(p), want[k].n);
    for (int j = 0; j < want[k].n; j++) {
      const opf_pmu_event *e = opf_pmu_event_at(p, (size_t)j);
      assert_string_equal(e->name, want[k].names[j]);
      assert_true(e->fstr[0] != '\0');
      assert_int_equal(e->status, OPF_EV_COUNTED);
      assert_int_equal(e->group, 0); /* one kind only: its group is 0 */
    }
    opf_pmu_free(p);
  }
  /* cycles appears in core and cache, dTLB in cache and tlb, branch is inside core. */
  opf_pmu *p = create_ok("sw,core,cache,tlb,branch, task-clock ,page-faults", NULL);
#if defined(__aarch64__) /* raw common events in core and cache; tlb and branch stay generic */
  assert_int_equal(opf_pmu_count(p), 4 + 4 + 4 + 2 + 2);
  assert_int_equal(opf_pmu_event_at(p, find_ev(p, "CPU_CYCLES"))->group, 1);
#else
  assert_int_equal(opf_pmu_count(p), 4 + 4 + 3 + 1);
  assert_int_equal(opf_pmu_event_at(p, find_ev(p, "cycles"))->group, 1);
#endif
  assert_int_equal(opf_pmu_event_at(p, find_ev(p, "task-clock"))->group, 0);
  assert_int_equal(opf_pmu_event_at(p, find_ev(p, "iTLB-load-misses"))->group, 1);
  opf_pmu_free(p);
  /* Spellings of one event are one event; the first spelling names it. */
  p = create_ok("cycles,perf::CYCLES,perf::PERF_COUNT_HW_CPU_CYCLES,cpu-cycles,CYCLES:u", NULL);
  assert_int_equal(opf_pmu_count(p), 1);
  assert_string_equal(opf_pmu_event_at(p, 0)->name, "cycles");
  opf_pmu_free(p);
  /* ... but a different privilege level is a different event. */
  p = create_ok("cycles,cycles:k", NULL);
  assert_int_equal(opf_pmu_count(p), 2);
  opf_pmu_free(p);
}

static void test_spellings(void **state) {
  (void)state;
  static const struct {
    const char *name;
    uint32_t type;
    uint64_t config;
    int exclude_user, exclude_kernel;
  } t[] = {
      /* software events: libpfm4 takes the perf(1) names, its own and the kernel's */
      {"task-clock", T_SOFTWARE, 1, 0, 1},
      {"TASK-CLOCK", T_SOFTWARE, 1, 0, 1},
      {"perf::TASK-CLOCK", T_SOFTWARE, 1, 0, 1},
      {"perf::PERF_COUNT_SW_TASK_CLOCK", T_SOFTWARE, 1, 0, 1},
      {"PERF_COUNT_SW_TASK_CLOCK", T_SOFTWARE, 1, 0, 1},
      {"cpu-clock", T_SOFTWARE, 0, 0, 1},
      {"page-faults", T_SOFTWARE, 2, 0, 1},
      {"faults", T_SOFTWARE, 2, 0, 1},
      /* raised in kernel mode: counted with the kernel (user-only they read 0 for ever) */
      {"context-switches", T_SOFTWARE, 3, 0, 0},
      {"cs", T_SOFTWARE, 3, 0, 0},
      {"cpu-migrations", T_SOFTWARE, 4, 0, 0},
      {"migrations", T_SOFTWARE, 4, 0, 0},
      {"context-switches:u", T_SOFTWARE, 3, 0, 1}, /* unless a modifier was written */
      {"minor-faults", T_SOFTWARE, 5, 0, 1},
      {"major-faults", T_SOFTWARE, 6, 0, 1},
      /* not in libpfm4 4.13: encoded by pfm_encode.c */
      {"alignment-faults", T_SOFTWARE, 7, 0, 1},
      {"emulation-faults", T_SOFTWARE, 8, 0, 1},
      {"alignment-faults:k", T_SOFTWARE, 7, 1, 0},
      /* hardware and cache events */
      {"cycles", T_HARDWARE, 0, 0, 1},
      {"cpu-cycles", T_HARDWARE, 0, 0, 1},
      {"instructions", T_HARDWARE, 1, 0, 1},
      {"cache-references", T_HARDWARE, 2, 0, 1},
      {"cache-misses", T_HARDWARE, 3, 0, 1},
      {"branches", T_HARDWARE, 4, 0, 1},
      {"branch-instructions", T_HARDWARE, 4, 0, 1},
      {"branch-misses", T_HARDWARE, 5, 0, 1},
      {"ref-cycles", T_HARDWARE, 9, 0, 1},
      {"L1-dcache-load-misses", T_HW_CACHE, 0x10000, 0, 1},
      {"perf::L1-DCACHE-LOAD-MISSES", T_HW_CACHE, 0x10000, 0, 1},
      {"LLC-load-misses", T_HW_CACHE, 0x10002, 0, 1},
      {"dTLB-load-misses", T_HW_CACHE, 0x10003, 0, 1},
      {"iTLB-load-misses", T_HW_CACHE, 0x10004, 0, 1},
      {"r003c", T_RAW, 0x3c, 0, 1},
      {"cpu/cycles/", T_HARDWARE, 0, 0, 1},
      /* privilege modifiers: libpfm4's ":u"/":k" and perf(1)'s ":uk" */
      {"cycles:u", T_HARDWARE, 0, 0, 1},
      {"cycles:k", T_HARDWARE, 0, 1, 0},
      {"cycles:u:k", T_HARDWARE, 0, 0, 0},
      {"cycles:uk", T_HARDWARE, 0, 0, 0},
      {"instructions:ku", T_HARDWARE, 1, 0, 0},
      {"cpu/instructions/k", T_HARDWARE, 1, 1, 0},
      {"task-clock:k", T_SOFTWARE, 1, 1, 0},
  };
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    opf_pmu *p = create_ok(t[k].name, NULL);
    assert_int_equal(opf_pmu_count(p), 1);
    const opf_pmu_event *e = opf_pmu_event_at(p, 0);
    opf_pmu_attr_view v;
    assert_int_equal(opf_pmu_attr_view_of(p, 0, &v), OPF_OK);
    if (e->type != t[k].type || e->config != t[k].config || v.type != e->type ||
        v.config != e->config || v.exclude_user != t[k].exclude_user ||
        v.exclude_kernel != t[k].exclude_kernel)
      fail_msg("%s: type %u config %#llx eu %d ek %d", t[k].name, e->type,
               (unsigned long long)e->config, v.exclude_user, v.exclude_kernel);
    assert_string_equal(e->name, t[k].name);
    assert_true(strlen(e->fstr) > 0);
    opf_pmu_free(p);
  }
}

static void test_unknown_event(void **state) {
  (void)state;
  const char *bad[] = {"cycels", "sw,cycels", "cycels:u", "task-clock,cpu/cycels/"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    opf_pmu *p = (opf_pmu *)1;
    opf_err err = {0};
    assert_int_equal(opf_pmu_create(&p, bad[k], NULL, &err), OPF_ECONFIG);
    assert_null(p);
    assert_int_equal(err.code, OPF_ECONFIG);
    if (!strstr(err.msg, "unknown event '") || !strstr(err.msg, "cycels") ||
        !strstr(err.msg, "event not found"))
      fail_msg("message for %s: %s", bad[k], err.msg);
  }
  opf_err err = {0};
  opf_pmu *p = NULL;
  assert_int_equal(opf_pmu_create(&p, "cycles:zz", NULL, &err), OPF_ECONFIG);
  assert_non_null(strstr(err.msg, "'cycles:zz'"));
  assert_null(p);
}

static void test_too_many_events(void **state) {
  (void)state;
  char list[1024] = "";
  for (int i = 1; i <= OPF_PMU_MAX_EVENTS; i++) /* distinct raw events r1 .. r20 (hex) */
    snprintf(list + strlen(list), sizeof list - strlen(list), "%sr%x", i > 1 ? "," : "", i);
  opf_pmu *p = create_ok(list, NULL);
  assert_int_equal(opf_pmu_count(p), OPF_PMU_MAX_EVENTS);
  opf_pmu_free(p);
  strcat(list, ",task-clock");
  opf_err err = {0};
  p = NULL;
  assert_int_equal(opf_pmu_create(&p, list, NULL, &err), OPF_ECONFIG);
  assert_null(p);
  assert_non_null(strstr(err.msg, "at most 32"));
}

static void test_detected(void **state) {
  (void)state;
  char buf[512];
  assert_int_equal(opf_pmu_detected(buf, sizeof buf), OPF_OK);
  /* libpfm4's generic perf_events PMU is present on every Linux. */
  assert_non_null(strstr(buf, "perf"));
  char small[3];
  assert_int_equal(opf_pmu_detected(small, sizeof small), OPF_EINVAL);
  assert_true(strlen(small) < sizeof small);
  assert_int_equal(opf_pmu_detected(NULL, 10), OPF_EINVAL);
}

/* ---- real counters ------------------------------------------------------------------------ */

/* Skip when this environment forbids perf_event_open altogether (seccomp, paranoid 3). */
static int sw_unusable(const opf_pmu *p, size_t i) {
  const opf_pmu_event *e = opf_pmu_event_at(p, i);
  if (e->status == OPF_EV_COUNTED) return 0;
  if (e->err == EACCES || e->err == EPERM || e->err == ENOSYS) {
    print_message("perf_event_open refused here (%s): skipping\n", e->reason);
    return 1;
  }
  fail_msg("%s not counted: err %d %s", e->name, e->err, e->reason);
  return 1;
}

static void test_real_sw_counts(void **state) {
  (void)state;
  opf_pmu *p = create_ok("sw", NULL);
  opf_err err = {0};
  assert_int_equal(opf_pmu_open(p, &err), OPF_OK);
  size_t tc = find_ev(p, "task-clock"), pf = find_ev(p, "page-faults");
  if (sw_unusable(p, tc)) {
    opf_pmu_free(p);
    skip();
  }
  assert_int_equal(opf_pmu_n_open(p), 4);
  for (size_t i = 0; i < 4; i++) {
    const opf_pmu_event *e = opf_pmu_event_at(p, i);
    assert_int_equal(e->status, OPF_EV_COUNTED);
    assert_int_equal(e->group, 0);
    assert_int_equal(e->err, 0);
  }

  /* page-faults, straight after open: every fresh page first touched is one fault. Checked
   * first because members of a group opened on the calling thread count only once it has
   * been scheduled in again (opf_pmu_open takes care of that). No huge pages, or 2 MiB would
   * take one fault. */
  opf_pmu_snap *a = ts_snap();
  opf_pmu_snap *b = ts_snap();
  double v = 0, f = 0;
  size_t len = 4u << 20, pg = (size_t)sysconf(_SC_PAGESIZE);
  char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  madvise(m, len, MADV_NOHUGEPAGE);
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  for (size_t off = 0; off < len; off += pg) m[off] = 1;
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  munmap(m, len);
  assert_int_equal(opf_pmu_delta(p, pf, a, b, &v, &f), 1);
  print_message("page-faults %.0f for %zu fresh pages\n", v, len / pg);
  assert_true(v >= (double)(len / pg));

  /* task-clock follows the thread's CPU clock. */
  int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  busy_cpu_ns(20 * 1000 * 1000);
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  int64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  assert_int_equal(opf_pmu_delta(p, tc, a, b, &v, &f), 1);
  double cpu = (double)(c1 - c0);
  print_message("task-clock %.0f ns, thread CPU time %.0f ns\n", v, cpu);
  assert_true(fabs(v - cpu) <= 0.2 * cpu);
  assert_true(f > 0.999 && f <= 1.0); /* software events are never multiplexed */
  opf_pmu_free(p);
}

/* Two threads that exist before open, busy concurrently afterwards: counted only if open()
 * really opened the events on every thread. */
/* One measurement of two parked workers burning 50 ms each: 1 when task-clock summed the
 * threads (more than one worker, within 20% of workers + main), 0 otherwise; -1: no task-clock. */
static int threads_counted_once(void) {
  parked pk;
  pthread_t th[2];
  park_start(&pk, th, 2, 50 * 1000 * 1000);
  opf_pmu *p = create_ok("task-clock", NULL);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  if (sw_unusable(p, 0)) {
    park_release_all(&pk, th);
    opf_pmu_free(p);
    return -1;
  }
  opf_pmu_snap *a = ts_snap();
  opf_pmu_snap *b = ts_snap();
  opf_pmu_snap *c = ts_snap();
  int64_t m0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  pthread_barrier_wait(&pk.go);   /* workers burn 50 ms each */
  pthread_barrier_wait(&pk.done); /* workers finished, still alive */
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  int64_t m1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  double v = 0, f = 0;
  assert_int_equal(opf_pmu_delta(p, 0, a, b, &v, &f), 1);
  double one = (double)(pk.used[0] > pk.used[1] ? pk.used[0] : pk.used[1]);
  double all = (double)(pk.used[0] + pk.used[1] + (m1 - m0));
  print_message("task-clock %.0f ns; workers %lld + %lld ns, main %lld ns\n", v,
                (long long)pk.used[0], (long long)pk.used[1], (long long)(m1 - m0));
  /* Exited threads keep their final counts readable. */
  pthread_barrier_wait(&pk.leave);
  park_finish(&pk, th);
  assert_int_equal(opf_pmu_read(p, c), OPF_OK);
  assert_true(ts_raw(c, 0, 0) >= ts_raw(b, 0, 0));
  opf_pmu_free(p);
  return v > 1.5 * one && fabs(v - all) <= 0.2 * all;
}

/* A shared 2-core VM under a parallel test run once counted 34% more than the threads' own
 * CPU clocks (unexplained; never reproduced alone): up to three measurements, one must agree.
 * Counting only one thread, or every thread twice, fails all three. */
static void test_real_threads_counted(void **state) {
  (void)state;
  int ok = 0;
  for (int attempt = 0; attempt < 3 && ok == 0; attempt++) ok = threads_counted_once();
  if (ok < 0) skip();
  assert_int_equal(ok, 1);
}

/* On this VM type "cycles" may or may not have a PMU behind it: the assertion follows what an
 * actual open says. */
static void test_real_hw_event(void **state) {
  (void)state;
  opf_pmu *p = create_ok("cycles,task-clock", NULL);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  size_t cy = find_ev(p, "cycles"), tc = find_ev(p, "task-clock");
  const opf_pmu_event *e = opf_pmu_event_at(p, cy);
  if (sw_unusable(p, tc)) {
    opf_pmu_free(p);
    skip();
  }
  /* software and hardware never share a group */
  if (e->status == OPF_EV_COUNTED) {
    print_message("hardware PMU present: cycles counted (NOT_SUPPORTED check skipped)\n");
    assert_int_not_equal(e->group, opf_pmu_event_at(p, tc)->group);
    opf_pmu_snap *a = ts_snap();
    opf_pmu_snap *b = ts_snap();
    assert_int_equal(opf_pmu_read(p, a), OPF_OK);
    busy_cpu_ns(20 * 1000 * 1000);
    assert_int_equal(opf_pmu_read(p, b), OPF_OK);
    double v = 0, f = 0;
    assert_int_equal(opf_pmu_delta(p, cy, a, b, &v, &f), 1);
    assert_true(v > 1e6); /* 20 ms at any plausible clock */
  } else {
    print_message("cycles: %s (errno %d): %s\n", opf_ev_status_name(e->status), e->err, e->reason);
    assert_int_equal(e->status, OPF_EV_NOT_SUPPORTED);
    assert_int_not_equal(e->err, 0);
    assert_true(strlen(e->reason) > 0);
    assert_int_equal(e->group, -1);
    if (e->err == ENOENT || e->err == EOPNOTSUPP) assert_non_null(strstr(e->reason, "PMU"));
    assert_int_equal(opf_pmu_n_open(p), 1);
    double v = 1, f = 1;
    opf_pmu_snap *a = ts_snap();
    opf_pmu_snap *b = ts_snap();
    assert_int_equal(opf_pmu_read(p, a), OPF_OK);
    assert_int_equal(opf_pmu_read(p, b), OPF_OK);
    assert_int_equal(opf_pmu_delta(p, cy, a, b, &v, &f), 0);
  }
  opf_pmu_free(p);
}

/* Cost of one opf_pmu_read of the sw group, measured by a loop, on 1 and 2 threads. */
static double read_cost_ns(opf_pmu *p) {
  opf_pmu_snap *s = ts_snap();
  enum { N = 20000 };
  assert_int_equal(opf_pmu_read(p, s), OPF_OK);
  int64_t t0 = clock_ns(CLOCK_MONOTONIC);
  for (int i = 0; i < N; i++) opf_pmu_read(p, s);
  return (double)(clock_ns(CLOCK_MONOTONIC) - t0) / N;
}

static void test_read_overhead(void **state) {
  (void)state;
  opf_pmu *p = create_ok("sw", NULL);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  if (sw_unusable(p, 0)) {
    opf_pmu_free(p);
    skip();
  }
  double one = read_cost_ns(p);
  parked pk;
  pthread_t th[1];
  park_start(&pk, th, 1, 0);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK); /* reopen: now on 2 threads */
  double two = read_cost_ns(p);
  park_release_all(&pk, th);
  print_message("opf_pmu_read of the sw group (4 events): %.0f ns on 1 thread, %.0f ns on 2\n",
                one, two);
  assert_true(one < 1e6 && two < 1e6);
  opf_pmu_free(p);
}

/* ---- fake kernel -------------------------------------------------------------------------- */

#define FAKE_BASE 1000
#define FAKE_MAX 512

typedef struct fake_fd {
  int used;
  int leader; /* fd number of the group leader (itself for a leader) */
  int tid;
  long seq; /* creation order = order of values in a group read */
  uint64_t id;
  opf_pmu_attr_view v;
} fake_fd;

typedef struct fake_call {
  opf_pmu_attr_view v;
  int tid, group_fd, fd, err;
} fake_call;

static struct {
  fake_fd fd[FAKE_MAX];
  int n_open_now;
  int max_open; /* 0: no fd limit */
  long seq;
  uint64_t next_id;
  /* returns the errno to fail with, 0 to succeed */
  int (*policy)(const opf_pmu_attr_view *v, int tid, int group_fd, int call);
  int n_calls;
  fake_call calls[1024];
  /* read script */
  uint64_t value, enabled, running;
  int short_read, read_errno, read_eintr, reads;
} F;

static void fake_reset(void) {
  memset(&F, 0, sizeof F);
  F.next_id = 100;
}

static long fake_open(void *attr, int pid, int cpu, int group_fd, unsigned long flags) {
  (void)flags;
  assert_int_equal(cpu, -1); /* per thread, any CPU */
  opf_pmu_attr_view v;
  opf_pmu_attr_view_decode(attr, &v);
  int e = F.policy ? F.policy(&v, pid, group_fd, F.n_calls) : 0;
  if (!e && F.max_open && F.n_open_now >= F.max_open) e = EMFILE;
  int fd = -1;
  if (!e) {
    int slot = 0;
    while (slot < FAKE_MAX && F.fd[slot].used) slot++;
    assert_true(slot < FAKE_MAX);
    fd = FAKE_BASE + slot;
    if (group_fd != -1) {
      assert_true(group_fd >= FAKE_BASE && F.fd[group_fd - FAKE_BASE].used);
      assert_int_equal(F.fd[group_fd - FAKE_BASE].leader, group_fd);
      assert_int_equal(F.fd[group_fd - FAKE_BASE].tid, pid); /* groups never span threads */
    }
    F.fd[slot] = (fake_fd){1, group_fd == -1 ? fd : group_fd, pid, F.seq++, F.next_id++, v};
    F.n_open_now++;
  }
  if (F.n_calls < (int)(sizeof F.calls / sizeof F.calls[0]))
    F.calls[F.n_calls] = (fake_call){v, pid, group_fd, fd, e};
  F.n_calls++;
  if (e) {
    errno = e;
    return -1;
  }
  return fd;
}

static long fake_read(int fd, void *buf, size_t n) {
  F.reads++;
  if (F.read_eintr > 0) {
    F.read_eintr--;
    errno = EINTR;
    return -1;
  }
  if (F.read_errno) {
    errno = F.read_errno;
    return -1;
  }
  assert_true(fd >= FAKE_BASE && fd < FAKE_BASE + FAKE_MAX && F.fd[fd - FAKE_BASE].used);
  assert_int_equal(F.fd[fd - FAKE_BASE].leader, fd); /* group reads go to the leader */
  uint64_t w[3 + 2 * FAKE_MAX];
  int k = 0;
  long last = -1;
  for (;;) { /* members in creation order */
    int best = -1;
    for (int s = 0; s < FAKE_MAX; s++)
      if (F.fd[s].used && F.fd[s].leader == fd && F.fd[s].seq > last &&
          (best < 0 || F.fd[s].seq < F.fd[best].seq))
        best = s;
    if (best < 0) break;
    last = F.fd[best].seq;
    w[3 + 2 * k] = F.value;
    w[4 + 2 * k] = F.fd[best].id;
    k++;
  }
  w[0] = (uint64_t)k;
  w[1] = F.enabled;
  w[2] = F.running;
  size_t bytes = (3 + 2 * (size_t)k) * sizeof(uint64_t);
  if (F.short_read) bytes = 2 * sizeof(uint64_t);
  if (n < bytes) {
    errno = ENOSPC;
    return -1;
  }
  memcpy(buf, w, bytes);
  return (long)bytes;
}

static int fake_close(int fd) {
  assert_true(fd >= FAKE_BASE && fd < FAKE_BASE + FAKE_MAX && F.fd[fd - FAKE_BASE].used);
  F.fd[fd - FAKE_BASE].used = 0;
  F.n_open_now--;
  return 0;
}

static const opf_pmu_sys k_fake = {fake_open, fake_read, fake_close};

static int setup_fake(void **state) {
  (void)state;
  fake_reset();
  return 0;
}

/* Every test must give back every fd it got. */
static int teardown_fake(void **state) {
  (void)state;
  assert_int_equal(F.n_open_now, 0);
  return 0;
}

static int is_ev(const opf_pmu_attr_view *v, uint32_t type, uint64_t config) {
  return v->type == type && v->config == config;
}

/* index of the n-th call (0-based) that opened type/config, or -1 */
static int find_call(uint32_t type, uint64_t config, int nth) {
  for (int c = 0; c < F.n_calls; c++)
    if (is_ev(&F.calls[c].v, type, config) && nth-- == 0) return c;
  return -1;
}

static int pol_cycles_enoent(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)tid, (void)gfd, (void)call;
  return is_ev(v, T_HARDWARE, 0) ? ENOENT : 0;
}

static void test_fake_attrs_and_groups(void **state) {
  (void)state;
  opf_pmu *p = create_ok("task-clock,cycles,page-faults,instructions", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_n_open(p), 4);
  int tc = opf_pmu_event_at(p, 0)->group, cy = opf_pmu_event_at(p, 1)->group;
  assert_int_not_equal(tc, cy);
  assert_int_equal(opf_pmu_event_at(p, 2)->group, tc);
  assert_int_equal(opf_pmu_event_at(p, 3)->group, cy);
  for (int c = 0; c < F.n_calls; c++) {
    assert_int_equal(F.calls[c].v.read_format, READ_FORMAT_EXPECTED);
    assert_int_equal(F.calls[c].v.disabled, 0); /* counting runs continuously */
    assert_int_equal(F.calls[c].v.inherit, 1);  /* per thread, and threads created later */
    assert_int_equal(F.calls[c].v.exclude_kernel, 1);
    assert_int_equal(F.calls[c].v.exclude_hv, 1);
    assert_int_equal(F.calls[c].tid, my_tid());
  }
  /* page-faults joins task-clock's group, instructions joins cycles' group */
  int c_tc = find_call(T_SOFTWARE, 1, 0), c_pf = find_call(T_SOFTWARE, 2, 0);
  int c_cy = find_call(T_HARDWARE, 0, 0), c_in = find_call(T_HARDWARE, 1, 0);
  assert_int_equal(F.calls[c_tc].group_fd, -1);
  assert_int_equal(F.calls[c_pf].group_fd, F.calls[c_tc].fd);
  assert_int_equal(F.calls[c_cy].group_fd, -1);
  assert_int_equal(F.calls[c_in].group_fd, F.calls[c_cy].fd);
  opf_pmu_close(p);
  assert_int_equal(F.n_open_now, 0);
  assert_int_equal(opf_pmu_n_open(p), 0);
  opf_pmu_free(p);
}

static void test_fake_leader_enoent(void **state) {
  (void)state;
  F.policy = pol_cycles_enoent;
  opf_pmu *p = create_ok("cycles,instructions,branches", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  const opf_pmu_event *cy = opf_pmu_event_at(p, 0), *in = opf_pmu_event_at(p, 1),
                      *br = opf_pmu_event_at(p, 2);
  assert_int_equal(cy->status, OPF_EV_NOT_SUPPORTED);
  assert_int_equal(cy->err, ENOENT);
  assert_int_equal(cy->group, -1);
  /* the cycles probe fails too: no PMU at all */
  assert_string_equal(cy->reason, "no hardware PMU driver (virtual machine?)");
  assert_int_equal(in->status, OPF_EV_COUNTED);
  assert_int_equal(br->status, OPF_EV_COUNTED);
  assert_int_equal(in->group, br->group);
  /* instructions became the leader, branches joined it */
  int c_in = find_call(T_HARDWARE, 1, 0), c_br = find_call(T_HARDWARE, 4, 0);
  assert_int_equal(F.calls[c_in].group_fd, -1);
  assert_int_equal(F.calls[c_br].group_fd, F.calls[c_in].fd);
  assert_int_equal(opf_pmu_n_open(p), 2);
  opf_pmu_free(p);
}

static int pol_llc_enoent(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)tid, (void)gfd, (void)call;
  return is_ev(v, T_HW_CACHE, 0x10002) ? ENOENT : 0;
}

static void test_fake_event_unknown_to_pmu(void **state) {
  (void)state;
  F.policy = pol_llc_enoent; /* the PMU exists (cycles opens), LLC misses do not */
  opf_pmu *p = create_ok("cache", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  const opf_pmu_event *llc = opf_pmu_event_at(p, find_ev(p, "LLC-load-misses"));
  assert_int_equal(llc->status, OPF_EV_NOT_SUPPORTED);
  assert_int_equal(llc->err, ENOENT);
  assert_non_null(strstr(llc->reason, "not supported by this CPU's PMU"));
  assert_int_equal(opf_pmu_n_open(p), 3);
  opf_pmu_free(p);
}

static int pol_member_einval(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)tid, (void)call;
  return is_ev(v, T_HARDWARE, 1) && gfd != -1 ? EINVAL : 0;
}

static void test_fake_member_einval_alone(void **state) {
  (void)state;
  F.policy = pol_member_einval;
  opf_pmu *p = create_ok("cycles,instructions,branches", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  const opf_pmu_event *cy = opf_pmu_event_at(p, 0), *in = opf_pmu_event_at(p, 1),
                      *br = opf_pmu_event_at(p, 2);
  assert_int_equal(opf_pmu_n_open(p), 3);
  assert_int_equal(in->status, OPF_EV_COUNTED);
  assert_int_equal(cy->group, br->group);
  assert_int_not_equal(in->group, cy->group);
  int c1 = find_call(T_HARDWARE, 1, 0), c2 = find_call(T_HARDWARE, 1, 1);
  assert_int_equal(F.calls[c1].err, EINVAL);
  assert_int_equal(F.calls[c1].group_fd, F.calls[find_call(T_HARDWARE, 0, 0)].fd);
  assert_int_equal(F.calls[c2].err, 0);
  assert_int_equal(F.calls[c2].group_fd, -1);
  /* reads cover the singleton group as well */
  F.value = 5, F.enabled = 10, F.running = 10;
  opf_pmu_snap *s = ts_snap();
  assert_int_equal(opf_pmu_read(p, s), OPF_OK);
  assert_int_equal(ts_raw(s, 1, 0), 5);
  assert_int_equal(ts_raw(s, 2, 0), 5);
  opf_pmu_free(p);
}

static int pol_all_einval(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)v, (void)tid, (void)gfd, (void)call;
  return EINVAL;
}

static void test_fake_leader_einval_not_retried(void **state) {
  (void)state;
  F.policy = pol_all_einval;
  opf_pmu *p = create_ok("instructions", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_NOT_SUPPORTED);
  assert_int_equal(opf_pmu_event_at(p, 0)->err, EINVAL);
  assert_int_equal(F.n_calls, 2); /* once more without inherit (old kernels), then given up */
  assert_int_equal(F.calls[0].v.inherit, 1);
  assert_int_equal(F.calls[1].v.inherit, 0);
  assert_int_equal(opf_pmu_n_open(p), 0);
  opf_pmu_free(p);
}

static int pol_kernel_eacces(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)tid, (void)gfd, (void)call;
  return v->exclude_kernel ? 0 : EACCES;
}

static void test_fake_eacces_user_only(void **state) {
  (void)state;
  F.policy = pol_kernel_eacces;
  opf_pmu *p = create_ok("cycles:u:k,instructions", &k_fake);
  opf_pmu_attr_view v;
  assert_int_equal(opf_pmu_attr_view_of(p, 0, &v), OPF_OK);
  assert_int_equal(v.exclude_kernel, 0);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  const opf_pmu_event *cy = opf_pmu_event_at(p, 0);
  assert_int_equal(cy->status, OPF_EV_COUNTED);
  assert_int_equal(opf_pmu_n_open(p), 2);
  assert_int_equal(opf_pmu_attr_view_of(p, 0, &v), OPF_OK);
  assert_int_equal(v.exclude_kernel, 1);
  assert_int_equal(v.exclude_user, 0);
  assert_non_null(strstr(cy->reason, "user space only"));
  int c1 = find_call(T_HARDWARE, 0, 0), c2 = find_call(T_HARDWARE, 0, 1);
  assert_int_equal(F.calls[c1].err, EACCES);
  assert_int_equal(F.calls[c1].v.exclude_kernel, 0);
  assert_int_equal(F.calls[c2].err, 0);
  assert_int_equal(F.calls[c2].v.exclude_kernel, 1);
  /* instructions (user-only already) joined the retried leader */
  assert_int_equal(F.calls[find_call(T_HARDWARE, 1, 0)].group_fd, F.calls[c2].fd);
  opf_pmu_free(p);
}

static int pol_all_eperm(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)v, (void)tid, (void)gfd, (void)call;
  return EPERM;
}

static void test_fake_eperm_not_permitted(void **state) {
  (void)state;
  F.policy = pol_all_eperm;
  opf_pmu *p = create_ok("task-clock,cycles:u:k,instructions:k", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  for (size_t i = 0; i < 3; i++) {
    const opf_pmu_event *e = opf_pmu_event_at(p, i);
    assert_int_equal(e->status, OPF_EV_NOT_SUPPORTED);
    assert_int_equal(e->err, EPERM);
    assert_non_null(strstr(e->reason, "not permitted (perf_event_paranoid="));
  }
  /* cycles:u:k was retried user-only once */
  assert_int_equal(find_call(T_HARDWARE, 0, 2), -1);
  assert_int_equal(F.calls[find_call(T_HARDWARE, 0, 1)].v.exclude_kernel, 1);
  /* the reported attr is the one asked for */
  opf_pmu_attr_view v;
  opf_pmu_attr_view_of(p, 1, &v);
  assert_int_equal(v.exclude_kernel, 0);
  /* instructions:k is kernel only: user space instead would be a different event, no retry */
  assert_int_equal(find_call(T_HARDWARE, 1, 1), -1);
  assert_int_equal(opf_pmu_n_open(p), 0);
  opf_pmu_free(p);
}

static void test_fake_emfile_stops(void **state) {
  (void)state;
  F.max_open = 2;
  opf_pmu *p = create_ok("sw,cycles", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_n_open(p), 2);
  for (size_t i = 0; i < 5; i++) {
    const opf_pmu_event *e = opf_pmu_event_at(p, i);
    if (i < 2) {
      assert_int_equal(e->status, OPF_EV_COUNTED);
    } else {
      assert_int_equal(e->status, OPF_EV_NOT_SUPPORTED);
      assert_int_equal(e->err, EMFILE);
      assert_string_equal(e->reason, "too many open files (fd limit)");
    }
  }
  /* after the first EMFILE nothing more is tried */
  assert_int_equal(F.n_calls, 3);
  opf_pmu_free(p);
}

static int pol_eintr_twice(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)v, (void)tid, (void)gfd;
  return call % 3 != 2 ? EINTR : 0;
}

static void test_fake_eintr_retried(void **state) {
  (void)state;
  F.policy = pol_eintr_twice;
  opf_pmu *p = create_ok("task-clock,page-faults", &k_fake);
  F.enabled = F.running = 1;
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_n_open(p), 2);
  assert_int_equal(F.n_calls, 6);
  assert_int_equal(opf_pmu_event_at(p, 1)->group, opf_pmu_event_at(p, 0)->group);
  opf_pmu_free(p);
}

static void test_fake_scaling(void **state) {
  (void)state;
  opf_pmu *p = create_ok("cycles,instructions", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  opf_pmu_snap *a = ts_snap();
  opf_pmu_snap *b = ts_snap();
  F.value = 1000, F.enabled = 1000, F.running = 500;
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  assert_int_equal(ts_raw(a, 0, 0), 1000);
  assert_int_equal(ts_raw(a, 1, 1), 1000);
  assert_int_equal(ts_raw(a, 1, 2), 500);
  F.value = 3000, F.enabled = 3000, F.running = 1000;
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  double v = 0, f = 0;
  /* raw 2000 over d_enabled 2000, d_running 500: 2000 * 2000 / 500 */
  assert_int_equal(opf_pmu_delta(p, 1, a, b, &v, &f), 1);
  assert_true(fabs(v - 8000.0) < 1e-9);
  assert_true(fabs(f - 0.25) < 1e-12);
  /* counted all the time: no scaling */
  opf_pmu_snap_copy(a, b);
  F.value = 3500, F.enabled = 4000, F.running = 2000;
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  assert_int_equal(opf_pmu_delta(p, 0, a, b, &v, &f), 1);
  assert_true(fabs(v - 500.0) < 1e-9 && fabs(f - 1.0) < 1e-12);
  /* never scheduled: running does not move */
  opf_pmu_snap_copy(a, b);
  F.value = 3500, F.enabled = 9000, F.running = 2000;
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  v = f = 7;
  assert_int_equal(opf_pmu_delta(p, 0, a, b, &v, &f), 0);
  assert_true(v == 0.0 && f == 0.0);
  /* bad index, swapped snapshots */
  assert_int_equal(opf_pmu_delta(p, 5, a, b, &v, &f), 0);
  F.value = 4000, F.enabled = 9500, F.running = 2500;
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  assert_int_equal(opf_pmu_delta(p, 0, b, a, &v, &f), 0);
  opf_pmu_free(p);
}

static void test_fake_not_open_delta_zero(void **state) {
  (void)state;
  F.policy = pol_cycles_enoent;
  opf_pmu *p = create_ok("cycles,task-clock", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  opf_pmu_snap *a = ts_snap();
  opf_pmu_snap *b = ts_snap();
  F.value = 1, F.enabled = 1, F.running = 1;
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  F.value = 100, F.enabled = 200, F.running = 200;
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  double v = 0, f = 0;
  assert_int_equal(opf_pmu_delta(p, 0, a, b, &v, &f), 0); /* cycles: not open */
  assert_int_equal(ts_raw(b, 0, 0), 0);
  assert_int_equal(opf_pmu_delta(p, 1, a, b, &v, &f), 1);
  assert_true(v == 99.0);
  opf_pmu_free(p);
}

static void test_fake_short_read(void **state) {
  (void)state;
  opf_pmu *p = create_ok("task-clock,page-faults", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  opf_pmu_snap *s = ts_snap();
  F.short_read = 1;
  int rc = opf_pmu_read(p, s);
  assert_true(rc < 0);
  assert_int_equal(rc, OPF_EKERNEL);
  F.short_read = 0;
  F.read_errno = EIO;
  assert_int_equal(opf_pmu_read(p, s), OPF_ESYS);
  F.read_errno = 0;
  F.read_eintr = 3; /* interrupted reads are retried */
  F.value = 9, F.enabled = F.running = 1;
  assert_int_equal(opf_pmu_read(p, s), OPF_OK);
  assert_int_equal(F.read_eintr, 0);
  assert_int_equal(ts_raw(s, 1, 0), 9);
  opf_pmu_free(p);
  /* a group that cannot be read at open time is not counted */
  F.short_read = 1;
  p = create_ok("task-clock", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_NOT_SUPPORTED);
  assert_non_null(strstr(opf_pmu_event_at(p, 0)->reason, "group read failed"));
  assert_int_equal(opf_pmu_n_open(p), 0);
  opf_pmu_free(p);
}

/* Several threads through the fake: who is opened, and sums. */
static int g_helper_tid;

static int pol_helper_esrch(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)v, (void)gfd, (void)call;
  return tid == g_helper_tid ? ESRCH : 0;
}

static int pol_helper_pf_ebusy(const opf_pmu_attr_view *v, int tid, int gfd, int call) {
  (void)gfd, (void)call;
  return tid == g_helper_tid && is_ev(v, T_SOFTWARE, 2) ? EBUSY : 0;
}

static void test_fake_threads(void **state) {
  (void)state;
  parked pk;
  pthread_t th[1];
  park_start(&pk, th, 1, 0);
  g_helper_tid = pk.tid[0];

  /* every thread gets every group, values are summed */
  opf_pmu *p = create_ok("task-clock,page-faults", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_n_open(p), 2);
  assert_int_equal(F.n_calls, 4);
  int seen_self = 0, seen_helper = 0;
  for (int c = 0; c < F.n_calls; c++) {
    seen_self += F.calls[c].tid == my_tid();
    seen_helper += F.calls[c].tid == g_helper_tid;
  }
  assert_int_equal(seen_self, 2);
  assert_int_equal(seen_helper, 2);
  assert_int_equal(F.calls[0].tid, my_tid()); /* the caller decides the groups first */
  F.value = 7, F.enabled = 10, F.running = 10;
  opf_pmu_snap *s = ts_snap();
  int reads0 = F.reads;
  assert_int_equal(opf_pmu_read(p, s), OPF_OK);
  assert_int_equal(F.reads - reads0, 2); /* one read per group per thread */
  assert_int_equal(ts_raw(s, 0, 0), 14);
  assert_int_equal(ts_raw(s, 1, 0), 14);
  assert_int_equal(ts_raw(s, 0, 1), 20);
  assert_int_equal(ts_raw(s, 1, 2), 20);
  opf_pmu_free(p);

  /* a thread that vanished while opening is left out, the events still count */
  fake_reset();
  F.policy = pol_helper_esrch;
  p = create_ok("task-clock,page-faults", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_n_open(p), 2);
  F.value = 7, F.enabled = 10, F.running = 10;
  assert_int_equal(opf_pmu_read(p, s), OPF_OK);
  assert_int_equal(ts_raw(s, 0, 0), 7);
  opf_pmu_free(p);
  assert_int_equal(F.n_open_now, 0);

  /* fd limit reached on the second thread: the later event goes, the rest still covers all */
  fake_reset();
  F.max_open = 3;
  p = create_ok("task-clock,page-faults", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_COUNTED);
  assert_int_equal(opf_pmu_event_at(p, 1)->status, OPF_EV_NOT_SUPPORTED);
  assert_string_equal(opf_pmu_event_at(p, 1)->reason, "too many open files (fd limit)");
  assert_int_equal(F.n_open_now, 2);
  F.value = 7, F.enabled = 10, F.running = 10;
  assert_int_equal(opf_pmu_read(p, s), OPF_OK);
  assert_int_equal(ts_raw(s, 0, 0), 14);
  assert_int_equal(ts_raw(s, 1, 0), 0);
  opf_pmu_free(p);
  assert_int_equal(F.n_open_now, 0);

  /* another error on a later thread: that event is not supported, with the thread named */
  fake_reset();
  F.policy = pol_helper_pf_ebusy;
  p = create_ok("task-clock,page-faults", &k_fake);
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_COUNTED);
  const opf_pmu_event *pf = opf_pmu_event_at(p, 1);
  assert_int_equal(pf->status, OPF_EV_NOT_SUPPORTED);
  assert_int_equal(pf->err, EBUSY);
  char want[64];
  snprintf(want, sizeof want, "on thread %d: counter busy", g_helper_tid);
  assert_non_null(strstr(pf->reason, want));
  assert_int_equal(F.n_open_now, 2);
  opf_pmu_free(p);
  park_release_all(&pk, th);
}

int main(void) {
  /* Under qemu-user the process shows a thread it did not create (the emulator's own), which
   * per-thread opening counts as one of ours: the fake-syscall tests expect one open per event. */
  if (ts_foreign_threads() > 0) {
    print_message("%d thread(s) in /proc/self/task that this test did not start (qemu-user?): "
                  "skipping test_fake_*\n", ts_foreign_threads());
    cmocka_set_skip_filter("test_fake_*");
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_empty_lists),
      cmocka_unit_test(test_presets_and_dedup),
      cmocka_unit_test(test_spellings),
      cmocka_unit_test(test_unknown_event),
      cmocka_unit_test(test_too_many_events),
      cmocka_unit_test(test_detected),
      cmocka_unit_test(test_real_sw_counts),
      cmocka_unit_test(test_real_threads_counted),
      cmocka_unit_test(test_real_hw_event),
      cmocka_unit_test(test_read_overhead),
      cmocka_unit_test_setup_teardown(test_fake_attrs_and_groups, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_leader_enoent, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_event_unknown_to_pmu, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_member_einval_alone, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_leader_einval_not_retried, setup_fake,
                                      teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_eacces_user_only, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_eperm_not_permitted, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_emfile_stops, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_eintr_retried, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_scaling, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_not_open_delta_zero, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_short_read, setup_fake, teardown_fake),
      cmocka_unit_test_setup_teardown(test_fake_threads, setup_fake, teardown_fake),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

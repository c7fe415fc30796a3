/* test_pmu_sched.c: the counter path against a fake kernel that schedules counters: a core PMU
 * with a fixed number of counters, an NMI watchdog holding some at run time, other perf users
 * holding counters on one thread's CPU, multiplexing by rotation, inherited counters of threads
 * created after the open, and a per-read cost. Each test is a defect of issue 21 ("counters that
 * are right on real hardware") that the previous counter code had: weak groups that never ran,
 * refused members in groups of one, pooled scaling, threads created later, the fixed thread
 * table, kernel-mode software events, hybrid CPUs, the harness's own counts. */
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opperf/harness.h"
#include "opperf/pmu.h"
#include "opperf/topdown.h"
#include "pmu_internal.h"
#include "test_support.h"

enum { T_HARDWARE = 0, T_SOFTWARE = 1, T_HW_CACHE = 3, T_RAW = 4 };

/* ---- the fake kernel ----------------------------------------------------------------------
 * Time moves in ticks, only when fk_run(tid, n) says that thread ran n ticks (or, with
 * auto_tid set, one tick per group read of that thread: the caller "ran" between reads). In a
 * tick every group of the thread is enabled; software groups always run; hardware groups are
 * tried in rotation order while counters are free (counters - watchdog - held[tid]); the first
 * that does not fit stops the rest (the kernel's flexible groups), and the rotation advances.
 * A running event adds rate(config) * mul[tid] per tick. Group validation at open is against
 * all counters (the kernel ignores the watchdog then). */

#define FK_MAX 1024
#define FK_BASE 5000
#define FK_TIDS 8

typedef struct fk_ev {
  int used, hidden; /* hidden: an inherited copy in a child thread */
  int leader;       /* fd of the leader (itself for a leader) */
  int parent;       /* hidden: the fd it was inherited from; -1 otherwise */
  int tid, hw, inherit;
  long seq;
  uint64_t id, value, enabled, running;
  uint64_t config;
} fk_ev;

static struct {
  fk_ev ev[FK_MAX];
  long seq;
  uint64_t next_id;
  int counters, watchdog;
  int held_tid[FK_TIDS], held_n[FK_TIDS];
  int mul_tid[FK_TIDS];
  uint64_t mul_v[FK_TIDS];
  int rot_tid[FK_TIDS];
  unsigned rot[FK_TIDS];
  int auto_tid;
  uint64_t read_cost; /* added to every member's value at each group read */
  int n_opens, n_open_now;
  int refuse_inherit;  /* EINVAL for inherit=1 (an old kernel) */
  int eacces_kernel;   /* EACCES for exclude_kernel=0 (paranoid 2, no CAP_PERFMON) */
} K;

static void fk_reset(int counters, int watchdog) {
  memset(&K, 0, sizeof K);
  K.next_id = 1000;
  K.counters = counters;
  K.watchdog = watchdog;
}

static int tid_slot(int *tids, int tid, int create) {
  for (int i = 0; i < FK_TIDS; i++)
    if (tids[i] == tid) return i;
  if (!create) return -1;
  for (int i = 0; i < FK_TIDS; i++)
    if (tids[i] == 0) {
      tids[i] = tid;
      return i;
    }
  fail_msg("fake kernel: too many thread ids");
  return -1;
}

static void fk_hold(int tid, int n) { K.held_n[tid_slot(K.held_tid, tid, 1)] = n; }
static void fk_mul(int tid, uint64_t m) { K.mul_v[tid_slot(K.mul_tid, tid, 1)] = m; }
static uint64_t mul_of(int tid) {
  int s = tid_slot(K.mul_tid, tid, 0);
  return s < 0 || K.mul_v[s] == 0 ? 1 : K.mul_v[s];
}
static int held_of(int tid) {
  int s = tid_slot(K.held_tid, tid, 0);
  return s < 0 ? 0 : K.held_n[s];
}

static int group_size(int leader, int hw_only) {
  int n = 0;
  for (int s = 0; s < FK_MAX; s++)
    if (K.ev[s].used && K.ev[s].leader == leader && (!hw_only || K.ev[s].hw)) n++;
  return n;
}

static uint64_t rate_of(const fk_ev *e) { return e->hw ? 10 + e->config : 1; }

/* Leaders (slots) of tid's groups, software or hardware as asked, in creation order. */
static int fk_groups(int tid, int hw, int *out) {
  int n = 0;
  for (int s = 0; s < FK_MAX; s++)
    if (K.ev[s].used && K.ev[s].tid == tid && K.ev[s].leader == FK_BASE + s && K.ev[s].hw == hw)
      out[n++] = s;
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && K.ev[out[j]].seq < K.ev[out[j - 1]].seq; j--) {
      int x = out[j];
      out[j] = out[j - 1];
      out[j - 1] = x;
    }
  return n;
}

static void fk_tick_group(int lead, int runs, int tid) {
  for (int s = 0; s < FK_MAX; s++) {
    fk_ev *e = &K.ev[s];
    if (!e->used || e->leader != FK_BASE + lead) continue;
    e->enabled++;
    if (runs) {
      e->running++;
      e->value += rate_of(e) * mul_of(tid);
    }
  }
}

static void fk_run(int tid, int ticks) {
  int sw[FK_MAX], hw[FK_MAX];
  int rs = tid_slot(K.rot_tid, tid, 1);
  for (int t = 0; t < ticks; t++) {
    int nsw = fk_groups(tid, 0, sw), nhw = fk_groups(tid, 1, hw);
    for (int k = 0; k < nsw; k++) fk_tick_group(sw[k], 1, tid);
    int avail = K.counters - K.watchdog - held_of(tid), can = 1, missed = 0;
    for (int k = 0; k < nhw; k++) {
      int lead = hw[((unsigned)k + K.rot[rs]) % (unsigned)nhw];
      int size = group_size(FK_BASE + lead, 1);
      int runs = can && size <= avail;
      if (runs)
        avail -= size;
      else
        can = 0, missed = 1;
      fk_tick_group(lead, runs, tid);
    }
    if (missed) K.rot[rs]++;
  }
}

/* A hardware group of size events of another perf user on tid's CPU (never read by us). */
static void fk_foreign(int tid, int size) {
  int leader = -1;
  for (int k = 0; k < size; k++) {
    int s = 0;
    while (s < FK_MAX && K.ev[s].used) s++;
    assert_true(s < FK_MAX);
    if (leader < 0) leader = FK_BASE + s;
    K.ev[s] = (fk_ev){1, 1, leader, -1, tid, 1, 0, K.seq++, K.next_id++, 0, 0, 0, 0x99};
  }
}

static long fk_open(void *attr, int pid, int cpu, int group_fd, unsigned long flags) {
  (void)flags;
  assert_int_equal(cpu, -1);
  opf_pmu_attr_view v;
  opf_pmu_attr_view_decode(attr, &v);
  int hw = v.type != T_SOFTWARE;
  if (K.refuse_inherit && v.inherit) {
    errno = EINVAL;
    return -1;
  }
  if (K.eacces_kernel && !v.exclude_kernel) {
    errno = EACCES;
    return -1;
  }
  if (hw && K.counters == 0) {
    errno = ENOENT;
    return -1;
  }
  if (hw && group_fd != -1 && group_size(group_fd, 1) + 1 > K.counters) {
    errno = EINVAL; /* validate_group: does not fit the PMU at all */
    return -1;
  }
  int s = 0;
  while (s < FK_MAX && K.ev[s].used) s++;
  assert_true(s < FK_MAX);
  int fd = FK_BASE + s;
  K.ev[s] = (fk_ev){1, 0, group_fd == -1 ? fd : group_fd, -1, pid, hw, v.inherit, K.seq++,
                    K.next_id++, 0, 0, 0, v.config};
  K.n_opens++;
  K.n_open_now++;
  return fd;
}

/* The values read for event s: its own plus every inherited copy's, recursively. */
static void fk_sum(int s, uint64_t *v, uint64_t *en, uint64_t *run) {
  *v += K.ev[s].value, *en += K.ev[s].enabled, *run += K.ev[s].running;
  for (int c = 0; c < FK_MAX; c++)
    if (K.ev[c].used && K.ev[c].hidden && K.ev[c].parent == FK_BASE + s) fk_sum(c, v, en, run);
}

static long fk_read(int fd, void *buf, size_t n) {
  int ls = fd - FK_BASE;
  assert_true(ls >= 0 && ls < FK_MAX && K.ev[ls].used && K.ev[ls].leader == fd);
  if (K.auto_tid && K.ev[ls].tid == K.auto_tid) fk_run(K.auto_tid, 1);
  uint64_t w[3 + 2 * 64];
  int k = 0;
  long last = -1;
  uint64_t en0 = 0, run0 = 0;
  for (;;) {
    int best = -1;
    for (int s = 0; s < FK_MAX; s++)
      if (K.ev[s].used && !K.ev[s].hidden && K.ev[s].leader == fd && K.ev[s].seq > last &&
          (best < 0 || K.ev[s].seq < K.ev[best].seq))
        best = s;
    if (best < 0) break;
    last = K.ev[best].seq;
    K.ev[best].value += K.read_cost;
    uint64_t v = 0, en = 0, run = 0;
    fk_sum(best, &v, &en, &run);
    if (k == 0) en0 = en, run0 = run;
    w[3 + 2 * k] = v;
    w[4 + 2 * k] = K.ev[best].id;
    k++;
  }
  w[0] = (uint64_t)k;
  w[1] = en0;
  w[2] = run0;
  size_t bytes = (3 + 2 * (size_t)k) * sizeof(uint64_t);
  assert_true(n >= bytes);
  memcpy(buf, w, bytes);
  return (long)bytes;
}

static int fk_close(int fd) {
  int s = fd - FK_BASE;
  assert_true(s >= 0 && s < FK_MAX && K.ev[s].used && !K.ev[s].hidden);
  for (int c = 0; c < FK_MAX; c++) /* inherited copies go with their parent */
    if (K.ev[c].used && K.ev[c].hidden && K.ev[c].parent == fd) {
      K.ev[c].used = 0;
    }
  K.ev[s].used = 0;
  K.n_open_now--;
  return 0;
}

/* Thread child is created by thread parent: inherited copies of parent's inherit events. */
static void fk_clone(int parent, int child) {
  int src[FK_MAX], n = 0;
  for (int s = 0; s < FK_MAX; s++)
    if (K.ev[s].used && !K.ev[s].hidden && K.ev[s].tid == parent && K.ev[s].inherit) src[n++] = s;
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && K.ev[src[j]].seq < K.ev[src[j - 1]].seq; j--) {
      int x = src[j];
      src[j] = src[j - 1];
      src[j - 1] = x;
    }
  int map_from[FK_MAX], map_to[FK_MAX];
  for (int i = 0; i < n; i++) {
    const fk_ev *e = &K.ev[src[i]];
    int d = 0;
    while (d < FK_MAX && K.ev[d].used) d++;
    assert_true(d < FK_MAX);
    int leader = FK_BASE + d;
    for (int m = 0; m < i; m++)
      if (map_from[m] == e->leader) leader = map_to[m];
    K.ev[d] = (fk_ev){1, 1, leader, FK_BASE + src[i], child, e->hw, 1, K.seq++, K.next_id++,
                      0, 0, 0, e->config};
    map_from[i] = FK_BASE + src[i];
    map_to[i] = FK_BASE + d;
  }
}

static const opf_pmu_sys k_sys = {fk_open, fk_read, fk_close};
static int g_foreign; /* threads of this process it did not create (qemu-user's own) */

static int my_tid(void) { return (int)syscall(SYS_gettid); }

static opf_pmu *open_set(const char *events) {
  opf_pmu *p = NULL;
  opf_err err;
  assert_int_equal(opf_pmu_create(&p, events, &k_sys, &err), OPF_OK);
  K.auto_tid = my_tid(); /* the opener "runs" while opf_pmu_open probes its groups */
  assert_int_equal(opf_pmu_open(p, &err), OPF_OK);
  K.auto_tid = 0;
  return p;
}

static int setup(void **state) {
  (void)state;
  fk_reset(4, 0);
  opf_pmu_set_hw_capacity(-1, 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  assert_int_equal(K.n_open_now, 0);
  opf_pmu_set_hw_capacity(-1, 0);
  opf_pmu_set_sysfs_root(NULL);
  return 0;
}

/* Raw events r01..r08: distinct configs, all hardware. */
static const char *k_eight = "r01,r02,r03,r04,r05,r06,r07,r08";

/* ---- tests -------------------------------------------------------------------------------- */

/* A group that validates at open (4 counters) but never runs (the watchdog holds one): it is
 * split and every event counts. Before: one group, every event "not counted" for ever. */
static void test_weak_group_split(void **state) {
  (void)state;
  fk_reset(4, 1);
  opf_pmu_set_hw_capacity(4, 0); /* opperf does not know about the watchdog */
  opf_pmu *p = open_set("r01,r02,r03,r04");
  for (size_t i = 0; i < 4; i++) assert_int_equal(opf_pmu_event_at(p, i)->status, OPF_EV_COUNTED);
  assert_true(opf_pmu_event_at(p, 0)->group != opf_pmu_event_at(p, 3)->group);
  assert_non_null(strstr(opf_pmu_group_note(p), "split"));
  opf_pmu_snap *a = ts_snap(), *b = ts_snap();
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  fk_run(my_tid(), 100);
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  for (size_t i = 0; i < 4; i++) {
    double v, f;
    assert_int_equal(opf_pmu_delta(p, i, a, b, &v, &f), 1);
    /* two groups of 2 on 3 free counters: each runs half the ticks, scaled back exactly */
    assert_true(fabs(v - 100.0 * (double)(11 + i)) < 1e-9);
    assert_true(fabs(f - 0.5) < 1e-12);
  }
  opf_pmu_free(p);
}

/* The plan follows the counters less the watchdog: 8 events on 6 counters with the watchdog
 * are groups of 5 and 3, without a refused open. */
static void test_capacity_plan(void **state) {
  (void)state;
  fk_reset(6, 1);
  opf_pmu_set_hw_capacity(6, 1);
  opf_pmu *p = open_set(k_eight);
  int g0 = opf_pmu_event_at(p, 0)->group;
  for (size_t i = 0; i < 8; i++) {
    assert_int_equal(opf_pmu_event_at(p, i)->status, OPF_EV_COUNTED);
    assert_int_equal(opf_pmu_event_at(p, i)->group == g0, i < 5);
  }
  assert_int_equal(K.n_opens, 8 * (1 + g_foreign)); /* nothing refused, nothing reopened */
  assert_non_null(strstr(opf_pmu_group_note(p), "at most 5 events"));
  opf_pmu_free(p);
}

/* Members the kernel refuses for lack of room go to one further group together, not to a
 * group each (pairwise ratios stay derivable). */
static void test_refused_members_share_a_group(void **state) {
  (void)state;
  fk_reset(4, 0);
  opf_pmu_set_hw_capacity(0, 0); /* unknown: plan everything in one group */
  opf_pmu *p = open_set("r01,r02,r03,r04,r05,r06");
  const opf_pmu_event *e4 = opf_pmu_event_at(p, 4), *e5 = opf_pmu_event_at(p, 5);
  assert_int_equal(e4->status, OPF_EV_COUNTED);
  assert_int_equal(e4->group, e5->group);
  assert_true(e4->group != opf_pmu_event_at(p, 0)->group);
  opf_pmu_free(p);
}

/* One event that can never get a counter: not counted, with the reason, never a value. */
static void test_single_never_runs(void **state) {
  (void)state;
  fk_reset(1, 1);
  opf_pmu_set_hw_capacity(1, 0);
  opf_pmu *p = open_set("r01,task-clock");
  size_t i = strcmp(opf_pmu_event_at(p, 0)->name, "r01") == 0 ? 0 : 1;
  assert_int_equal(opf_pmu_event_at(p, i)->status, OPF_EV_NOT_COUNTED);
  assert_non_null(strstr(opf_pmu_event_at(p, i)->reason, "never scheduled"));
  assert_int_equal(opf_pmu_event_at(p, 1 - i)->status, OPF_EV_COUNTED);
  opf_pmu_free(p);
}

/* Scaling is per thread: thread A counts all the time at rate 1x, thread B half the time (its
 * CPU has 2 counters held by another user) at rate 3x. Truth: 10*r + 30*r. Pooled scaling
 * (sum of values * sum of enabled / sum of running) would give 33.3*r. */
static int g_tid_b;
static pthread_barrier_t g_bar;
static void *park_main(void *arg) {
  (void)arg;
  g_tid_b = my_tid();
  pthread_barrier_wait(&g_bar);
  pthread_barrier_wait(&g_bar);
  return NULL;
}

static void test_per_thread_scaling(void **state) {
  (void)state;
  pthread_t th;
  pthread_barrier_init(&g_bar, NULL, 2);
  pthread_create(&th, NULL, park_main, NULL);
  pthread_barrier_wait(&g_bar);
  fk_reset(2, 0);
  opf_pmu_set_hw_capacity(2, 0);
  opf_pmu *p = open_set("r01");
  assert_int_equal(opf_pmu_n_threads(p), 2 + g_foreign); /* qemu-user adds a thread of its own */
  fk_foreign(g_tid_b, 2); /* B's CPU: another user's group of 2 competes with ours */
  fk_mul(g_tid_b, 3);
  opf_pmu_snap *a = ts_snap(), *b = ts_snap();
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  fk_run(my_tid(), 10); /* A: alone, on a counter every tick */
  fk_run(g_tid_b, 10);  /* B: takes turns with the foreign group: 5 of 10 ticks */
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  opf_pmu_dval d;
  assert_int_equal(opf_pmu_delta_ex(p, 0, a, b, &d), OPF_DV_OK);
  const double r = 11; /* rate of r01 per tick */
  if (fabs(d.value - (10 * r + 30 * r)) > 1e-9)
    fail_msg("scaled %.3f, truth %.3f", d.value, 40 * r);
  assert_true(fabs(d.main_value - 10 * r) < 1e-9);
  assert_true(fabs(d.frac_running - 15.0 / 20.0) < 1e-12);
  assert_int_equal(d.threads, 2);
  opf_pmu_free(p);
  pthread_barrier_wait(&g_bar);
  pthread_join(th, NULL);
  pthread_barrier_destroy(&g_bar);
}

/* A thread whose group never ran while it ran makes the delta partial: the value holds the
 * other threads only, and opf_pmu_delta gives no value. */
static void test_partial_thread(void **state) {
  (void)state;
  pthread_t th;
  pthread_barrier_init(&g_bar, NULL, 2);
  pthread_create(&th, NULL, park_main, NULL);
  pthread_barrier_wait(&g_bar);
  fk_reset(4, 0);
  opf_pmu_set_hw_capacity(4, 0);
  opf_pmu *p = open_set("r01");
  fk_hold(g_tid_b, 4); /* B's CPU: every counter taken */
  opf_pmu_snap *a = ts_snap(), *b = ts_snap();
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  fk_run(my_tid(), 10);
  fk_run(g_tid_b, 10);
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  opf_pmu_dval d;
  assert_int_equal(opf_pmu_delta_ex(p, 0, a, b, &d), OPF_DV_PARTIAL);
  assert_true(fabs(d.value - 110.0) < 1e-9);
  assert_int_equal(d.threads_not_run, 1);
  double v = 1, f = 1;
  assert_int_equal(opf_pmu_delta(p, 0, a, b, &v, &f), 0);
  assert_true(v == 0 && f == 0);
  opf_pmu_free(p);
  pthread_barrier_wait(&g_bar);
  pthread_join(th, NULL);
  pthread_barrier_destroy(&g_bar);
}

/* A thread created after the open is counted through inherit (its counts come back in its
 * creator's read). Before: inherit was 0 and the new thread's work was missing. */
static void test_thread_created_later(void **state) {
  (void)state;
  fk_reset(4, 0);
  opf_pmu *p = open_set("task-clock,r01");
  opf_pmu_attr_view v;
  assert_int_equal(opf_pmu_attr_view_of(p, 0, &v), OPF_OK);
  assert_int_equal(v.inherit, 1);
  assert_non_null(strstr(opf_pmu_group_note(p), "threads created later are counted"));
  opf_pmu_snap *a = ts_snap(), *b = ts_snap();
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  fk_clone(my_tid(), 424242);
  fk_run(my_tid(), 5);
  fk_run(424242, 7);
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  for (size_t i = 0; i < 2; i++) {
    double val, f;
    assert_int_equal(opf_pmu_delta(p, i, a, b, &val, &f), 1);
    double rate = opf_pmu_event_at(p, i)->type == T_SOFTWARE ? 1 : 11;
    assert_true(fabs(val - 12 * rate) < 1e-9);
  }
  opf_pmu_free(p);
  /* a kernel that refuses inherit with the group read format: counted without it, and said */
  fk_reset(4, 0);
  K.refuse_inherit = 1;
  p = open_set("task-clock");
  assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_COUNTED);
  assert_non_null(strstr(opf_pmu_group_note(p), "not counted"));
  opf_pmu_free(p);
}

/* More than 64 threads: counters open on all of them (the table was fixed at 64). */
static void *sleeper(void *arg) {
  pthread_barrier_wait(arg);
  pthread_barrier_wait(arg);
  return NULL;
}

static void test_many_threads(void **state) {
  (void)state;
  enum { N = 80 };
  pthread_t th[N];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, N + 1);
  for (int i = 0; i < N; i++) assert_int_equal(pthread_create(&th[i], NULL, sleeper, &bar), 0);
  pthread_barrier_wait(&bar);
  fk_reset(4, 0);
  opf_pmu *p = open_set("task-clock,page-faults");
  assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_COUNTED);
  assert_true(opf_pmu_n_threads(p) >= N + 1);
  assert_int_equal(K.n_open_now, 2 * opf_pmu_n_threads(p));
  opf_pmu_free(p);
  pthread_barrier_wait(&bar);
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
}

/* context-switches and cpu-migrations count in kernel mode: opened with exclude_kernel=0
 * (they read 0 for ever user-only), unless a modifier was written; where kernel counting is
 * refused they are not supported with the reason, never a user-only 0. */
static void test_kernel_mode_sw_events(void **state) {
  (void)state;
  fk_reset(4, 0);
  opf_pmu *p = open_set("context-switches,cpu-migrations,page-faults,context-switches:u");
  opf_pmu_attr_view v;
  for (size_t i = 0; i < opf_pmu_count(p); i++) {
    const opf_pmu_event *e = opf_pmu_event_at(p, i);
    assert_int_equal(opf_pmu_attr_view_of(p, i, &v), OPF_OK);
    int user_only = strcmp(e->name, "page-faults") == 0 || strstr(e->name, ":u") != NULL;
    assert_int_equal(v.exclude_kernel, user_only);
    assert_string_equal(opf_pmu_event_plm(p, i), user_only ? "user" : "user+kernel");
  }
  opf_pmu_free(p);
  fk_reset(4, 0);
  K.eacces_kernel = 1;
  p = open_set("context-switches,page-faults");
  assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_NOT_SUPPORTED);
  assert_int_equal(opf_pmu_event_at(p, 0)->err, EACCES);
  assert_int_equal(opf_pmu_event_at(p, 1)->status, OPF_EV_COUNTED);
  opf_pmu_free(p);
}

/* Hybrid CPU: a generic event is bound to the core PMU the process is pinned to (extended
 * type in config's upper half), refused with the reason when the CPUs span both types. */
static void write_file(const char *dir, const char *pmu, const char *file, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, pmu);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%s/%s", dir, pmu, file);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_hybrid(void **state) {
  (void)state;
  char dir[] = "/tmp/opperf_sysfs_XXXXXX";
  assert_non_null(mkdtemp(dir));
  long ncpu = sysconf(_SC_NPROCESSORS_CONF);
  char all[64], none[64];
  snprintf(all, sizeof all, "0-%ld\n", ncpu - 1);
  snprintf(none, sizeof none, "%ld-%ld\n", ncpu + 4, ncpu + 7);
  write_file(dir, "cpu_core", "type", "8\n");
  write_file(dir, "cpu_atom", "type", "10\n");
  /* pinned (every allowed CPU) to P-cores: bound to type 8 */
  write_file(dir, "cpu_core", "cpus", all);
  write_file(dir, "cpu_atom", "cpus", none);
  opf_pmu_set_sysfs_root(dir);
  fk_reset(4, 0);
  opf_pmu *p = open_set("cycles,task-clock");
  opf_pmu_attr_view v;
  assert_int_equal(opf_pmu_attr_view_of(p, 0, &v), OPF_OK);
  assert_int_equal(v.config >> 32, 8);
  assert_int_equal(v.config & 0xffffffffu, 0); /* PERF_COUNT_HW_CPU_CYCLES */
  assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_COUNTED);
  opf_pmu_free(p);
  /* allowed CPUs on both types: refused */
  if (ncpu >= 2) {
    write_file(dir, "cpu_core", "cpus", "0\n");
    char rest[64];
    snprintf(rest, sizeof rest, "1-%ld\n", ncpu - 1);
    write_file(dir, "cpu_atom", "cpus", rest);
    fk_reset(4, 0);
    p = open_set("cycles,task-clock");
    assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_NOT_SUPPORTED);
    assert_non_null(strstr(opf_pmu_event_at(p, 0)->reason, "hybrid CPU"));
    assert_int_equal(opf_pmu_event_at(p, 1)->status, OPF_EV_COUNTED);
    opf_pmu_free(p);
  }
  opf_pmu_set_sysfs_root(NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* The harness subtracts its own counts: each read of the caller's group charges one tick of
 * the caller (1 count) and 7 counts of read cost, an operator call nothing, so every sample's
 * count (8 between the begin and the end read) is all harness; after the subtraction measured
 * on empty windows the per-call figure is exactly 0. Before: 8 per call, shown as the
 * operator's. */
static void test_harness_residual(void **state) {
  (void)state;
  fk_reset(4, 0);
  K.read_cost = 7;
  opf_pmu *p = open_set("task-clock");
  opf_settings s;
  opf_settings_default(&s);
  s.warmup = 0.001;
  s.min_runs = 5;
  s.max_runs = 5;
  s.min_time = 0;
  s.batch = 1;
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, ts_op("relu"), OPF_F32, "x=8x8", &e) != OPF_OK) fail_msg("%s", e.msg);
  opf_result r;
  K.auto_tid = my_tid();
  assert_int_equal(opf_measure(&s, &c, "test", OPF_PASS_FWD, p, &r), OPF_OK);
  K.auto_tid = 0;
  if (r.status != OPF_ST_OK) fail_msg("measure: %s", r.message);
  assert_int_equal(r.events[0].status, OPF_EV_COUNTED);
  assert_true(r.events[0].has_value);
  assert_true(fabs(r.events[0].residual - 8.0) < 1e-9);
  assert_true(fabs(r.events[0].per_call) < 1e-9);
  opf_result_release(&r);
  opf_pmu_free(p);
}

/* ---- top-down: one group or nothing ---------------------------------------------------- */

/* A result from the counters of this open, as the harness fills it (names, groups, privilege,
 * statuses, per-thread scaled deltas as the value per call). */
static void td_result(opf_pmu *p, const opf_pmu_snap *a, const opf_pmu_snap *b, opf_result *r) {
  memset(r, 0, sizeof *r);
  r->status = OPF_ST_OK;
  for (size_t i = 0; i < opf_pmu_count(p); i++) {
    const opf_pmu_event *e = opf_pmu_event_at(p, i);
    opf_event_result *o = &r->events[r->n_events++];
    snprintf(o->name, sizeof o->name, "%s", e->name);
    snprintf(o->plm, sizeof o->plm, "%s", e->plm);
    o->status = e->status;
    o->group = e->group;
    double v, f;
    if (opf_pmu_delta(p, i, a, b, &v, &f)) {
      o->has_value = 1;
      o->mean_per_call = o->per_call = v;
      if (f < 1) o->status = OPF_EV_SCALED;
    }
  }
}

static double rate_cfg(uint64_t config) { return 10.0 + (double)config; }

/* The Zen 5 row (raw PPR codes, opened through perf_raw): on 6 counters less the watchdog its
 * 5 events form one group and level 1 is the row's formula of the counts; on 4 counters the
 * planner splits them and top-down is absent with the reason, never combined across groups;
 * a group that validates but never runs (the watchdog) is split as a weak group: absent too. */
static void test_topdown_one_group(void **state) {
  (void)state;
  opf_pmu_set_topdown_pmu("amd64_fam1ah_zen5");
  fk_reset(6, 1);
  opf_pmu_set_hw_capacity(6, 1);
  opf_pmu *p = open_set("topdown");
  assert_int_equal(opf_pmu_count(p), 5);
  for (size_t i = 0; i < 5; i++) {
    assert_int_equal(opf_pmu_event_at(p, i)->status, OPF_EV_COUNTED);
    assert_int_equal(opf_pmu_event_at(p, i)->group, opf_pmu_event_at(p, 0)->group);
  }
  opf_pmu_snap *a = ts_snap(), *b = ts_snap();
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  fk_run(my_tid(), 100);
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  opf_result r;
  td_result(p, a, b, &r);
  opf_td_result t;
  assert_int_equal(opf_td_eval(&r, 5, 0, &t), 1);
  assert_true(t.has_l1);
  double slots = 8 * 100 * rate_cfg(0x76);
  assert_true(fabs(t.slots - slots) < 1e-6);
  assert_true(fabs(t.l1[OPF_TD_FE] - 100 * rate_cfg(0x1000001a0) / slots) < 1e-9);
  assert_true(fabs(t.l1[OPF_TD_BE] - 100 * rate_cfg(0x100001ea0) / slots) < 1e-9);
  assert_true(fabs(t.l1[OPF_TD_BAD] - 100 * (rate_cfg(0x7aa) - rate_cfg(0xc1)) / slots) < 1e-9);
  assert_true(fabs(t.l1[OPF_TD_RET] - 100 * rate_cfg(0xc1) / slots) < 1e-9);
  opf_pmu_free(p);

  /* 4 counters: groups of 4 and 1, multiplexed; each ratio would be of other instructions */
  fk_reset(4, 0);
  opf_pmu_set_hw_capacity(4, 0);
  p = open_set("topdown");
  assert_true(opf_pmu_event_at(p, 0)->group != opf_pmu_event_at(p, 4)->group);
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  fk_run(my_tid(), 100);
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  td_result(p, a, b, &r);
  for (int i = 0; i < 5; i++) assert_true(r.events[i].has_value); /* every count exists ... */
  assert_int_equal(opf_td_eval(&r, opf_td_counters_from_note(opf_pmu_group_note(p)), 0, &t), 1);
  assert_false(t.has_l1); /* ... but not in one group */
  assert_non_null(strstr(t.reason, "top-down not available on amd64_fam1ah_zen5: needs its 5 "
                                   "events in one group; this CPU gives 4 counters per group"));
  opf_pmu_free(p);

  /* 5 counters, the watchdog holding one, opperf not knowing: the group never runs, is split */
  fk_reset(5, 1);
  opf_pmu_set_hw_capacity(5, 0);
  p = open_set("topdown");
  assert_non_null(strstr(opf_pmu_group_note(p), "split"));
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  fk_run(my_tid(), 100);
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  td_result(p, a, b, &r);
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_false(t.has_l1);
  assert_non_null(strstr(t.reason, "needs its 5 events in one group"));
  opf_pmu_free(p);
  opf_pmu_set_topdown_pmu(NULL);
}

/* The ratio estimate over many short samples (what a multiplexed event reports): sums of
 * value, enabled and running per thread across the samples whose delta is valid, then one
 * scaling. Two groups of 2 on 2 counters take turns tick by tick; of 6 one-tick samples r01
 * ran in some: exactly those are added, 11 counts each. */
static void test_ratio_over_samples(void **state) {
  (void)state;
  fk_reset(2, 0);
  opf_pmu_set_hw_capacity(2, 0);
  opf_pmu *p = open_set("r01,r02,r03,r04");
  assert_true(opf_pmu_event_at(p, 0)->group != opf_pmu_event_at(p, 2)->group);
  opf_pmu_acc *acc = opf_pmu_acc_new();
  assert_non_null(acc);
  opf_pmu_snap *a = ts_snap(), *b = ts_snap();
  int ran = 0;
  for (int s = 0; s < 6; s++) {
    assert_int_equal(opf_pmu_read(p, a), OPF_OK);
    fk_run(my_tid(), 1);
    assert_int_equal(opf_pmu_read(p, b), OPF_OK);
    ran += opf_pmu_delta_ex(p, 0, a, b, NULL) == OPF_DV_OK;
    assert_int_equal(opf_pmu_acc_add(p, acc, a, b), OPF_OK);
  }
  opf_pmu_dval d;
  int n = 0;
  assert_int_equal(opf_pmu_acc_value(p, acc, 0, &d, &n), OPF_DV_OK);
  assert_int_equal(n, ran);
  assert_true(ran >= 1 && ran < 6);
  /* value sums ran * 11, enabled sums ran (only the samples where it ran are added), so the
   * estimate is per added sample: 11 each */
  assert_true(fabs(d.value - 11.0 * ran) < 1e-9);
  opf_pmu_acc_free(acc);
  opf_pmu_free(p);
}

int main(void) {
  g_foreign = ts_foreign_threads();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_weak_group_split, setup, teardown),
      cmocka_unit_test_setup_teardown(test_capacity_plan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused_members_share_a_group, setup, teardown),
      cmocka_unit_test_setup_teardown(test_single_never_runs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_per_thread_scaling, setup, teardown),
      cmocka_unit_test_setup_teardown(test_partial_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_thread_created_later, setup, teardown),
      cmocka_unit_test_setup_teardown(test_many_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kernel_mode_sw_events, setup, teardown),
      cmocka_unit_test_setup_teardown(test_hybrid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_harness_residual, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ratio_over_samples, setup, teardown),
      cmocka_unit_test_setup_teardown(test_topdown_one_group, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

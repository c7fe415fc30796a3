/* test_pmu_list.c: unit tests of what `opperf events` lists: the presets and their members
 * (as opf_pmu_create expands them), the topdown preset where libpfm4 has no table for the CPU
 * (one NOT_SUPPORTED entry, never a substitute), and the libpfm4 PMU / event iteration.
 * Runs the same on machines with and without a hardware PMU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/pmu.h"
#include "opperf/topdown.h"
#include "test_support.h"
#include "pmu_internal.h"
#include "test_support.h"

static opf_pmu *create_ok(const char *events, const opf_pmu_sys *sys) {
  opf_pmu *p = NULL;
  opf_err err = {0};
  int rc = opf_pmu_create(&p, events, sys, &err);
  if (rc != OPF_OK) fail_msg("create '%s': %d %s", events, rc, err.msg);
  assert_non_null(p);
  return p;
}

/* ---- presets ------------------------------------------------------------------------------ */

static void test_preset_table(void **state) {
  (void)state;
  static const char *names[] = {"sw", "core", "cache", "tlb", "branch", "topdown"};
  assert_int_equal(opf_pmu_preset_count(), 6);
  for (int k = 0; k < 6; k++) {
    opf_pmu_preset_info pi;
    assert_int_equal(opf_pmu_preset_at(k, &pi), OPF_OK);
    assert_string_equal(pi.name, names[k]);
    assert_true(strlen(pi.summary) > 10);
    assert_int_equal(opf_pmu_preset_find(names[k]), k);
  }
  assert_int_equal(opf_pmu_preset_find("CORE"), 1);
  assert_int_equal(opf_pmu_preset_find("cycles"), -1);
  assert_int_equal(opf_pmu_preset_find(NULL), -1);
  opf_pmu_preset_info pi;
  assert_int_equal(opf_pmu_preset_at(-1, &pi), OPF_EINVAL);
  assert_int_equal(opf_pmu_preset_at(6, &pi), OPF_EINVAL);
  assert_int_equal(opf_pmu_preset_at(0, NULL), OPF_EINVAL);
}

/* What `opperf events` prints as a preset's members is exactly what a run counts: the events
 * opf_pmu_create makes of the preset name, in order, each one encoded. */
static void test_presets_expand_to_members(void **state) {
  (void)state;
  for (int k = 0; k < opf_pmu_preset_count(); k++) {
    opf_pmu_preset_info pi;
    assert_int_equal(opf_pmu_preset_at(k, &pi), OPF_OK);
    opf_pmu *p = create_ok(pi.name, NULL);
    if (pi.n == 0) { /* topdown on a CPU without a table: one placeholder */
      assert_string_equal(pi.name, "topdown");
      assert_int_equal(opf_pmu_count(p), 1);
      assert_string_equal(opf_pmu_event_at(p, 0)->reason, pi.note);
    } else {
      assert_int_equal(opf_pmu_count(p), (size_t)pi.n);
      for (int j = 0; j < pi.n; j++) {
        const opf_pmu_event *e = opf_pmu_event_at(p, (size_t)j);
        assert_string_equal(e->name, pi.member[j]);
        assert_true(e->fstr[0] != '\0');
      }
    }
    opf_pmu_free(p);
  }
  /* the fixed ones, spelled out */
  opf_pmu_preset_info pi;
  assert_int_equal(opf_pmu_preset_at(opf_pmu_preset_find("cache"), &pi), OPF_OK);
#if defined(__aarch64__) /* Arm common events */
  assert_int_equal(pi.n, 5);
  assert_string_equal(pi.member[3], "LL_CACHE_MISS_RD");
#else
  assert_int_equal(pi.n, 4);
  assert_string_equal(pi.member[2], "LLC-load-misses");
#endif
}

/* A fake kernel that accepts everything and counts the calls. */
static int g_opens;
static int g_next_fd = 2000;
static long ok_open(void *attr, int pid, int cpu, int group_fd, unsigned long flags) {
  (void)attr, (void)pid, (void)cpu, (void)group_fd, (void)flags;
  g_opens++;
  return g_next_fd++;
}
static long ok_read(int fd, void *buf, size_t n) {
  (void)fd;
  uint64_t w[3 + 2 * OPF_PMU_MAX_EVENTS] = {0};
  (void)n;
  w[0] = 4; /* the sw group: 4 events */
  for (int k = 0; k < 4; k++) w[4 + 2 * k] = 0; /* ids: learnt as read */
  memcpy(buf, w, (3 + 2 * 4) * sizeof(uint64_t));
  return (long)((3 + 2 * 4) * sizeof(uint64_t));
}
static int ok_close(int fd) {
  (void)fd;
  return 0;
}

static void test_topdown_without_table(void **state) {
  (void)state;
  opf_pmu_set_topdown_pmu(""); /* as on Zen 5 with libpfm4 4.13: no core PMU detected */
  opf_pmu_preset_info pi;
  assert_int_equal(opf_pmu_preset_at(opf_pmu_preset_find("topdown"), &pi), OPF_OK);
  assert_int_equal(pi.n, 0);
  assert_non_null(strstr(pi.note, "detects no core PMU"));

  opf_pmu *p = create_ok("topdown", NULL);
  assert_int_equal(opf_pmu_count(p), 1);
  const opf_pmu_event *e = opf_pmu_event_at(p, 0);
  assert_string_equal(e->name, "topdown");
  assert_int_equal(e->status, OPF_EV_NOT_SUPPORTED); /* from creation on */
  assert_int_equal(e->err, 0);
  assert_int_equal(e->group, -1);
  assert_string_equal(e->fstr, "");
  assert_string_equal(e->reason, pi.note);
  opf_pmu_free(p);

  /* Next to other events: they open, topdown stays not supported and is never opened. */
  g_opens = 0;
  const opf_pmu_sys fake = {ok_open, ok_read, ok_close};
  p = create_ok("sw,topdown,topdown", &fake);
  assert_int_equal(opf_pmu_count(p), 5); /* named twice: one entry */
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_n_open(p), 4);
  assert_int_equal(g_opens, 4);
  e = opf_pmu_event_at(p, 4);
  assert_string_equal(e->name, "topdown");
  assert_int_equal(e->status, OPF_EV_NOT_SUPPORTED);
  assert_string_equal(e->reason, pi.note);
  opf_pmu_snap *a = ts_snap();
  opf_pmu_snap *b = ts_snap();
  assert_int_equal(opf_pmu_read(p, a), OPF_OK);
  assert_int_equal(opf_pmu_read(p, b), OPF_OK);
  double v = 1, f = 1;
  assert_int_equal(opf_pmu_delta(p, 4, a, b, &v, &f), 0);
  /* a second open keeps the reason */
  assert_int_equal(opf_pmu_open(p, NULL), OPF_OK);
  assert_int_equal(opf_pmu_event_at(p, 4)->status, OPF_EV_NOT_SUPPORTED);
  assert_string_equal(opf_pmu_event_at(p, 4)->reason, pi.note);
  opf_pmu_free(p);

  /* A core PMU without top-down events gets its own reason, still no substitute. */
  opf_pmu_set_topdown_pmu("amd64_fam19h_zen3");
  p = create_ok("topdown", NULL);
  assert_int_equal(opf_pmu_count(p), 1);
  assert_non_null(strstr(opf_pmu_event_at(p, 0)->reason,
                          "top-down not available on amd64_fam19h_zen3: not in opperf's top-down table"));
  opf_pmu_free(p);
  opf_pmu_set_topdown_pmu(NULL);
}

/* On this machine, whatever it is: the preset and its creation agree with the detection. */
static void test_topdown_detected(void **state) {
  (void)state;
  opf_pfm_pmu_desc d[32];
  int n = opf_pfm_pmus(d, 32);
  assert_true(n > 0);
  int has_table = 0, has_core = 0;
  char m[OPF_PMU_PRESET_MAX][96];
  for (int i = 0; i < n && i < 32; i++) {
    has_core |= d[i].is_core;
    if (d[i].is_core && opf_pmu_topdown_members(d[i].name, m, OPF_PMU_PRESET_MAX) > 0)
      has_table = 1;
  }
  /* no core PMU known to libpfm4 (AMD Zen 5 with libpfm4 4.13): the row CPUID names */
  if (!has_core && opf_td_cpuid_model()) has_table = 1;
  opf_pmu_preset_info pi;
  assert_int_equal(opf_pmu_preset_at(opf_pmu_preset_find("topdown"), &pi), OPF_OK);
  print_message("topdown here: %d members; %s\n", pi.n, pi.note);
  assert_int_equal(pi.n > 0, has_table);
}

/* ---- libpfm4 listing --------------------------------------------------------------------- */

static void test_pfm_pmus(void **state) {
  (void)state;
  opf_pfm_pmu_desc d[32];
  int n = opf_pfm_pmus(d, 32);
  assert_true(n >= 1);
  int perf = -1;
  for (int i = 0; i < n && i < 32; i++) {
    assert_true(d[i].name[0] != '\0');
    if (!strcmp(d[i].name, "perf")) perf = i;
  }
  assert_true(perf >= 0); /* libpfm4's perf_events PMU is there on every Linux */
  assert_true(d[perf].n_events > 20);
  assert_int_equal(d[perf].is_core, 0);
  /* count only, and a short buffer: the full count comes back, only max are written */
  assert_int_equal(opf_pfm_pmus(NULL, 0), n);
  opf_pfm_pmu_desc one[1];
  assert_int_equal(opf_pfm_pmus(one, 1), n);
  assert_string_equal(one[0].name, d[0].name);
  assert_int_equal(opf_pfm_pmus(NULL, 3), OPF_EINVAL);
  /* opf_pmu_detected names the same PMUs */
  char buf[512];
  assert_int_equal(opf_pmu_detected(buf, sizeof buf), OPF_OK);
  for (int i = 0; i < n && i < 32; i++) assert_non_null(strstr(buf, d[i].name));
}

typedef struct collect {
  int n, stop_at;
  int cycles;
  char names[256][96];
} collect;

static int collect_fn(const opf_pfm_event_desc *ev, void *ctx) {
  collect *c = ctx;
  assert_non_null(ev->pmu);
  assert_non_null(ev->name);
  assert_non_null(ev->desc);
  if (!strcmp(ev->name, "PERF_COUNT_HW_CPU_CYCLES")) c->cycles++;
  if (c->n < 256) snprintf(c->names[c->n], sizeof c->names[0], "%s::%s", ev->pmu, ev->name);
  c->n++;
  return c->stop_at && c->n >= c->stop_at;
}

static void test_pfm_events_of_perf(void **state) {
  (void)state;
  static collect c;
  memset(&c, 0, sizeof c);
  int visited = opf_pfm_foreach_event("perf", collect_fn, &c);
  assert_true(visited > 20);
  assert_int_equal(visited, c.n);
  assert_int_equal(c.cycles, 1);
  /* the listing matches the PMU's event count */
  opf_pfm_pmu_desc d[32];
  int n = opf_pfm_pmus(d, 32);
  for (int i = 0; i < n && i < 32; i++)
    if (!strcmp(d[i].name, "perf")) assert_int_equal(d[i].n_events, visited);
  /* every listed name is one a user can write: it encodes */
  for (int i = 0; i < c.n && i < 256; i++) {
    opf_pmu *p = NULL;
    opf_err err = {0};
    if (opf_pmu_create(&p, c.names[i], NULL, &err) != OPF_OK)
      fail_msg("listed event %s does not encode: %s", c.names[i], err.msg);
    assert_int_equal(opf_pmu_count(p), 1);
    opf_pmu_free(p);
  }
  /* early stop */
  memset(&c, 0, sizeof c);
  c.stop_at = 3;
  assert_int_equal(opf_pfm_foreach_event("perf", collect_fn, &c), 3);
  /* every present PMU: at least the perf ones */
  memset(&c, 0, sizeof c);
  assert_true(opf_pfm_foreach_event(NULL, collect_fn, &c) >= visited);
  /* errors */
  assert_int_equal(opf_pfm_foreach_event("no_such_pmu", collect_fn, &c), OPF_ENOTFOUND);
  assert_int_equal(opf_pfm_foreach_event("perf", NULL, NULL), OPF_EINVAL);
}

/* Unknown names are rejected with libpfm4's reason: what `opperf events X` prints (exit 2). */
static void test_unknown_names(void **state) {
  (void)state;
  const char *bad[] = {"topdwon", "cycels", "perf::NO_SUCH", "no_such_pmu::X"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    opf_pmu *p = NULL;
    opf_err err = {0};
    assert_int_equal(opf_pmu_create(&p, bad[k], NULL, &err), OPF_ECONFIG);
    assert_null(p);
    char want[64];
    snprintf(want, sizeof want, "unknown event '%s': ", bad[k]);
    if (strncmp(err.msg, want, strlen(want)) != 0) fail_msg("%s: %s", bad[k], err.msg);
    assert_true(strlen(err.msg) > strlen(want)); /* libpfm4's reason follows */
  }
}

int main(void) {
  /* Under qemu-user the process shows a thread it did not create (the emulator's own), which
   * per-thread opening counts as one of ours: test_topdown_without_table's counts expect one open per event. */
  if (ts_foreign_threads() > 0) {
    print_message("%d thread(s) in /proc/self/task that this test did not start (qemu-user?): "
                  "skipping test_topdown_without_table\n", ts_foreign_threads());
    cmocka_set_skip_filter("test_topdown_without_table");
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_preset_table),
      cmocka_unit_test(test_presets_expand_to_members),
      cmocka_unit_test(test_topdown_without_table),
      cmocka_unit_test(test_topdown_detected),
      cmocka_unit_test(test_pfm_pmus),
      cmocka_unit_test(test_pfm_events_of_perf),
      cmocka_unit_test(test_unknown_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

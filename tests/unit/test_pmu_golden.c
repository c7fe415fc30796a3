/* test_pmu_golden.c: golden libpfm4 encodings of model-specific events (Intel Skylake, AMD
 * Zen; on arm64, Arm Neoverse / Cortex) through opf_pmu_create, on any machine. A separate
 * executable because LIBPFM_ENCODE_INACTIVE must be set before libpfm4 initialises, which
 * happens once per process. Self-contained: needs only pmu/, src/error.c and cmocka. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/pmu.h"
#include "opperf/topdown.h"
#include "pmu_internal.h"

enum { T_HARDWARE = 0, T_SOFTWARE = 1, T_HW_CACHE = 3, T_RAW = 4 }; /* kernel ABI */

/* Where the numbers come from. libpfm4's tests/validate_x86.c (perfmon2 libpfm4, as mirrored in
 * the wcohen/libpfm4 and sempiternal-aurora/libpfm4 repositories) lists codes[0] of
 * pfm_get_event_encoding(name, PFM_PLM0|PFM_PLM3) for each name marked [v] below, e.g.
 *   skl::MEM_LOAD_RETIRED:L3_MISS          codes[0] = 0x5320d1
 *   amd64_fam19h_zen3::cycles_not_in_halt  codes[0] = 0x530076
 * That raw PERFEVTSEL value carries the enable (bit 22), interrupt (20), OS (17) and USR (16)
 * bits, 0x530000 together. The perf_events encoding (PFM_OS_PERF_EVENT_EXT) leaves those to
 * the kernel and expresses the privilege level through exclude_kernel/exclude_user instead,
 * so attr.config = codes[0] & ~0x530000 (0x510000 for ":u"), and attr.type = PERF_TYPE_RAW for
 * x86 core PMUs. Extra registers (codes[1], e.g. the FRONTEND_RETIRED MSR) go to config1.
 * Names marked [t] are not in validate_x86.c; their codes are the vendors' event tables: Intel's
 * Skylake event list (INST_RETIRED.ANY_P = event C0H umask 00H, L1D.REPLACEMENT = 51H umask
 * 01H) and AMD's family 19h PPR (Retired Instructions = PMCx0C0). libpfm4 4.13 (Debian 12)
 * produced exactly these values when this test was written. */
static const struct golden {
  const char *name;
  uint32_t type;
  uint64_t config, config1;
  int exclude_user, exclude_kernel;
} k_golden[] = {
#if defined(__aarch64__)
    /* libpfm4 carries only the PMU tables of the architecture it is built for: the arm64 build
     * knows arm_ac53 ... arm_v2 and no x86 model. ARMv8 PMUv3 common events have fixed
     * numbers (Arm Architecture Reference Manual, "Common event numbers"): L1D_CACHE_REFILL
     * 0x03, INST_RETIRED 0x08, CPU_CYCLES 0x11, L2D_CACHE_REFILL 0x17, BR_MIS_PRED_RETIRED
     * 0x22, STALL_FRONTEND 0x23, STALL_BACKEND 0x24; perf_event's raw config is that number. */
    {"arm_n1::INST_RETIRED", T_RAW, 0x08, 0, 0, 1},
    {"arm_n1::CPU_CYCLES", T_RAW, 0x11, 0, 0, 1},
    {"arm_n1::L1D_CACHE_REFILL", T_RAW, 0x03, 0, 0, 1},
    {"arm_n1::BR_MIS_PRED_RETIRED", T_RAW, 0x22, 0, 0, 1},
    {"arm_v1::STALL_BACKEND", T_RAW, 0x24, 0, 0, 1},
    {"arm_n2::STALL_FRONTEND", T_RAW, 0x23, 0, 0, 1},
    {"arm_ac57::L2D_CACHE_REFILL", T_RAW, 0x17, 0, 0, 1},
    /* ":k" gives kernel only: the privilege level moves to the exclude bits, not config */
    {"arm_n1::INST_RETIRED:k", T_RAW, 0x08, 0, 1, 0},
#else
    {"skl::INST_RETIRED:ANY_P", T_RAW, 0xc0, 0, 0, 1},                      /* [t] */
    {"skl::L1D:REPLACEMENT", T_RAW, 0x151, 0, 0, 1},                        /* [t] */
    {"skl::MEM_LOAD_RETIRED:L3_MISS", T_RAW, 0x20d1, 0, 0, 1},              /* [v] 0x5320d1 */
    {"skl::uops_dispatched_port:port_0", T_RAW, 0x1a1, 0, 0, 1},            /* [v] 0x5301a1 */
    /* [v] 0x1530449 */
    {"skl::dtlb_store_misses:walk_completed_2m_4m:c=1", T_RAW, 0x1000449, 0, 0, 1},
    {"skl::cycle_activity:0x6:c=6", T_RAW, 0x60006a3, 0, 0, 1},             /* [v] 0x65306a3 */
    {"skl::FRONTEND_RETIRED:DSB_MISS", T_RAW, 0x1c6, 0x11, 0, 1},           /* [v] 0x5301c6, 0x11 */
    {"skl::FRONTEND_RETIRED:L2_MISS:u", T_RAW, 0x1c6, 0x13, 0, 1},          /* [v] 0x5101c6, 0x13 */
    {"icl::inst_retired:any_p", T_RAW, 0xc0, 0, 0, 1},                      /* [v] 0x5300c0 */
    {"amd64_fam19h_zen3::RETIRED_INSTRUCTIONS", T_RAW, 0xc0, 0, 0, 1},      /* [t] */
    {"amd64_fam19h_zen3::retired_ops", T_RAW, 0xc1, 0, 0, 1},               /* [v] 0x5300c1 */
    {"amd64_fam19h_zen3::cycles_not_in_halt", T_RAW, 0x76, 0, 0, 1},        /* [v] 0x530076 */
    /* [v] 0x1005300d0: AMD keeps event-select bits 11:8 at 35:32 */
    {"amd64_fam19h_zen3::RETIRED_FUSED_INSTRUCTIONS", T_RAW, 0x1000000d0, 0, 0, 1},
    /* [v] 0x510845 */
    {"amd64_fam19h_zen3::L1_DTLB_MISS:TLB_RELOAD_1G_L2_HIT:u", T_RAW, 0x845, 0, 0, 1},
    /* [v] 0x510203 */
    {"amd64_fam19h_zen3::RETIRED_SSE_AVX_FLOPS:MULT_FLOPS:u", T_RAW, 0x203, 0, 0, 1},
    {"amd64_fam17h_zen2::retired_uops", T_RAW, 0xc1, 0, 0, 1},              /* [v] 0x5300c1 */
    /* ":k" gives kernel only: the privilege level moves to the exclude bits, not config */
    {"skl::INST_RETIRED:ANY_P:k", T_RAW, 0xc0, 0, 1, 0},
#endif
    /* generic events are not affected by LIBPFM_ENCODE_INACTIVE */
    {"perf::L1-DCACHE-LOAD-MISSES", T_HW_CACHE, 0x10000, 0, 0, 1},
    {"perf::PERF_COUNT_SW_TASK_CLOCK", T_SOFTWARE, 1, 0, 0, 1},
};

static void test_golden_encodings(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof k_golden / sizeof k_golden[0]; k++) {
    const struct golden *g = &k_golden[k];
    opf_pmu *p = NULL;
    opf_err err = {0};
    int rc = opf_pmu_create(&p, g->name, NULL, &err);
    if (rc != OPF_OK) fail_msg("%s: %d %s", g->name, rc, err.msg);
    assert_int_equal(opf_pmu_count(p), 1);
    const opf_pmu_event *e = opf_pmu_event_at(p, 0);
    opf_pmu_attr_view v;
    assert_int_equal(opf_pmu_attr_view_of(p, 0, &v), OPF_OK);
    if (e->type != g->type || e->config != g->config || v.config1 != g->config1 ||
        v.exclude_user != g->exclude_user || v.exclude_kernel != g->exclude_kernel)
      fail_msg("%s: type %u config %#llx config1 %#llx eu %d ek %d", g->name, e->type,
               (unsigned long long)e->config, (unsigned long long)v.config1, v.exclude_user,
               v.exclude_kernel);
    assert_int_equal(v.type, e->type);
    assert_int_equal(v.config, e->config);
    /* libpfm4's fully qualified name starts with the PMU it used */
    const char *colons = strstr(g->name, "::");
    assert_non_null(colons);
    assert_memory_equal(e->fstr, g->name, (size_t)(colons - g->name) + 2);
    opf_pmu_free(p);
  }
}

/* Encoding inactive PMUs does not make everything valid: a name no table has is still a
 * configuration error, and the message names it. */
static void test_unknown_model_event(void **state) {
  (void)state;
#if defined(__aarch64__)
  const char *bad = "arm_n1::NO_SUCH_EVENT";
#else
  const char *bad = "skl::NO_SUCH_EVENT";
#endif
  char quoted[64];
  snprintf(quoted, sizeof quoted, "'%s'", bad);
  opf_pmu *p = NULL;
  opf_err err = {0};
  assert_int_equal(opf_pmu_create(&p, bad, NULL, &err), OPF_ECONFIG);
  assert_non_null(strstr(err.msg, quoted));
  assert_null(p);
}

static int pmu_present(const char *name) {
  opf_pfm_pmu_desc d[32];
  int n = opf_pfm_pmus(d, 32);
  for (int i = 0; i < n && i < 32; i++)
    if (!strcmp(d[i].name, name)) return 1;
  return 0;
}

/* An event of a PMU this CPU does not have (encodable only because LIBPFM_ENCODE_INACTIVE is
 * set) never reaches perf_event_open: its raw code would count another event on the real PMU.
 * Before: it was opened as PERF_TYPE_RAW with that code, status "counted". */
static int g_raw_opens;
static long raw_watch_open(void *attr, int pid, int cpu, int group_fd, unsigned long flags) {
  (void)pid, (void)cpu, (void)group_fd, (void)flags;
  opf_pmu_attr_view v;
  opf_pmu_attr_view_decode(attr, &v);
  if (v.type == T_RAW) g_raw_opens++;
  return 900 + g_raw_opens; /* never read: nothing opens below */
}
static long raw_watch_read(int fd, void *buf, size_t n) {
  (void)fd, (void)buf, (void)n;
  return -1;
}
static int raw_watch_close(int fd) {
  (void)fd;
  return 0;
}

static void test_inactive_pmu_never_opened(void **state) {
  (void)state;
#if defined(__aarch64__) /* libpfm4's arm64 build knows Arm PMUs only */
  const char *names[] = {"arm_v2::INST_RETIRED", "arm_n2::CPU_CYCLES"};
  const char *pmu[] = {"arm_v2", "arm_n2"};
#else
  const char *names[] = {"skl::INST_RETIRED:ANY_P", "amd64_fam19h_zen3::RETIRED_INSTRUCTIONS"};
  const char *pmu[] = {"skl", "amd64_fam19h_zen3"};
#endif
  for (int k = 0; k < 2; k++) {
    if (pmu_present(pmu[k])) continue; /* this CPU really has it */
    opf_pmu *p = NULL;
    opf_err err;
    opf_pmu_sys sys = {raw_watch_open, raw_watch_read, raw_watch_close};
    assert_int_equal(opf_pmu_create(&p, names[k], &sys, &err), OPF_OK);
    const opf_pmu_event *e = opf_pmu_event_at(p, 0);
    assert_int_equal(e->status, OPF_EV_NOT_SUPPORTED);
    assert_non_null(strstr(e->reason, "is not this CPU's"));
    assert_true(strlen(e->fstr) > 0); /* the encoding stays visible */
    g_raw_opens = 0;
    assert_int_equal(opf_pmu_open(p, &err), OPF_OK);
    assert_int_equal(g_raw_opens, 0);
    assert_int_equal(opf_pmu_event_at(p, 0)->status, OPF_EV_NOT_SUPPORTED);
    assert_int_equal(opf_pmu_n_open(p), 0);
    opf_pmu_free(p);
  }
}

/* arm64 presets (issue 22): Arm common-event names, encoded through libpfm4's Neoverse tables
 * where the PMU has the event, else raw common-event numbers. The names and raw numbers are
 * checked everywhere; libpfm4's arm64 tables exist only in its arm64 build, so the golden
 * encodings are checked there (the arm64 test run, under qemu-user). Codes: Arm ARM common
 * events: CPU_CYCLES 0x11, INST_RETIRED 0x08, BR_RETIRED 0x21, BR_MIS_PRED_RETIRED 0x22,
 * L1D_CACHE_REFILL 0x03, L2D_CACHE_REFILL 0x17, LL_CACHE_MISS_RD 0x37, L1D_TLB_REFILL 0x05. */
static void test_arm64_presets(void **state) {
  (void)state;
  static const struct {
    const char *preset;
    int n;
    const char *name[5];
    unsigned code[5];
  } want[] = {
      {"core", 4, {"CPU_CYCLES", "INST_RETIRED", "BR_RETIRED", "BR_MIS_PRED_RETIRED"},
       {0x11, 0x08, 0x21, 0x22}},
      {"cache", 5,
       {"CPU_CYCLES", "L1D_CACHE_REFILL", "L2D_CACHE_REFILL", "LL_CACHE_MISS_RD", "L1D_TLB_REFILL"},
       {0x11, 0x03, 0x17, 0x37, 0x05}},
  };
  char names[8][96], encs[8][96];
  for (size_t w = 0; w < 2; w++) {
    /* no core PMU known: raw common-event numbers */
    assert_int_equal(opf_pmu_arm_preset(want[w].preset, "", names, encs, 8), want[w].n);
    for (int j = 0; j < want[w].n; j++) {
      char raw[16];
      snprintf(raw, sizeof raw, "r%x", want[w].code[j]);
      assert_string_equal(names[j], want[w].name[j]);
      assert_string_equal(encs[j], raw);
    }
  }
  assert_int_equal(opf_pmu_arm_preset("tlb", "", names, encs, 8), 0);
#if defined(__aarch64__)
  static const char *pmus[] = {"arm_n1", "arm_n2", "arm_v1", "arm_v2"};
  for (size_t k = 0; k < sizeof pmus / sizeof pmus[0]; k++)
    for (size_t w = 0; w < 2; w++) {
      int n = opf_pmu_arm_preset(want[w].preset, pmus[k], names, encs, 8);
      assert_int_equal(n, want[w].n);
      for (int j = 0; j < n; j++) {
        char full[128];
        snprintf(full, sizeof full, "%s::%s", pmus[k], want[w].name[j]);
        if (strcmp(encs[j], full) != 0) fail_msg("%s %s: encoded as %s", pmus[k], names[j], encs[j]);
        opf_pmu *p = NULL;
        opf_err err;
        assert_int_equal(opf_pmu_create(&p, encs[j], NULL, &err), OPF_OK);
        const opf_pmu_event *e = opf_pmu_event_at(p, 0);
        if (e->type != T_RAW || e->config != want[w].code[j])
          fail_msg("%s: type %u config %#llx, want raw %#x", full, e->type,
                   (unsigned long long)e->config, want[w].code[j]);
        opf_pmu_free(p);
      }
    }
#else
  print_message("arm64 golden encodings: checked in the arm64 build only (libpfm4's x86 build "
                "has no Arm tables); names and raw numbers checked here\n");
#endif
}

/* The topdown preset's table (pmu/topdown.c): for every x86 row, the preset resolves to the
 * row's events, which libpfm4 encodes for that PMU. Spot checks from the vendors' tables:
 * UOPS_ISSUED.ANY = event 0EH umask 01H (Intel SDM vol. 3B, Skylake; Sapphire Rapids moved it
 * to AEH), TOPDOWN.SLOTS = event 00H umask 04H (fixed counter 3, Ice Lake),
 * INT_MISC.RECOVERY_CYCLES = 0DH umask 01H (with cmask 1 on Haswell/Broadwell),
 * IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE = 9CH umask 01H with cmask = the pipeline
 * width (5 Ice Lake, 6 Sapphire Rapids), BR_MISP_RETIRED.ALL_BRANCHES = C5H umask 00H,
 * MACHINE_CLEARS.COUNT = C3H umask 01H edge cmask 1, AMD Zen 4 PMCx1A0 umask 01H (dispatch
 * slots with no ops from the front end; event-select bits 11:8 at config bits 35:32), umask
 * 1EH (back-end stalls) and PMCx0AA umask 07H (ops dispatched from any source); Zen 5 (not in
 * libpfm4 4.13): the same codes raw, from the PPR as the kernel's amdzen5 files carry them. */
static void test_topdown_tables(void **state) {
  (void)state;
#if !defined(__x86_64__) && !defined(__i386__)
  /* libpfm4 carries only its own architecture's tables: the x86 rows cannot be encoded here
   * (the Arm rows' names and numbers are checked on x86 too). */
  print_message("top-down rows are checked in the x86 build (libpfm4 tables): skipped\n");
  skip();
#endif
  static const struct {
    const char *pmu;
    int idx;
    uint64_t config;
  } spot[] = {
      {"skx", 1, 0x10e},         {"hsw", 4, 0x100030d},         {"skl", 4, 0x10d},
      {"icl", 0, 0x400},         {"spr", 2, 0x2c2},             {"spr", 1, 0x1ae},
      {"icl", 5, 0x500019c},     {"spr", 5, 0x600019c},         {"icx", 6, 0xc5},
      {"icx", 7, 0x10401c3},
      {"amd64_fam19h_zen4", 1, 0x1000001a0},                    {"amd64_fam19h_zen4", 3, 0x7aa},
      {"amd64_fam19h_zen4", 2, 0x100001ea0},
      {"amd64_fam1ah_zen5", 0, 0x76},         {"amd64_fam1ah_zen5", 1, 0x1000001a0},
      {"amd64_fam1ah_zen5", 2, 0x100001ea0},  {"amd64_fam1ah_zen5", 3, 0x7aa},
      {"amd64_fam1ah_zen5", 4, 0xc1},
  };
  int n_x86 = 0;
  for (int k = 0; k < opf_td_model_count(); k++) {
    const opf_td_model *md = opf_td_model_at(k);
    const char *pmu = md->pmu;
    char m[OPF_PMU_PRESET_MAX][96];
    int n = opf_pmu_topdown_members(pmu, m, OPF_PMU_PRESET_MAX);
    assert_int_equal(n, md->n);
    if (md->method == OPF_TD_ARM_SLOTS) {
      /* libpfm4's Arm tables exist only in its arm64 build: names and common numbers here */
      for (int j = 0; j < n; j++) assert_memory_equal(m[j], "arm_", 4);
      continue;
    }
    n_x86++;
    opf_pmu_set_topdown_pmu(pmu);
    opf_pmu_preset_info pi;
    assert_int_equal(opf_pmu_preset_at(opf_pmu_preset_find("topdown"), &pi), OPF_OK);
    assert_int_equal(pi.n, n);
    opf_pmu *p = NULL;
    opf_err err = {0};
    if (opf_pmu_create(&p, "topdown", NULL, &err) != OPF_OK)
      fail_msg("topdown for %s: %s", pmu, err.msg);
    assert_int_equal(opf_pmu_count(p), (size_t)n);
    int raw_row = md->name[0] != NULL; /* Zen 5: kernel names, raw PPR codes */
    for (size_t i = 0; i < (size_t)n; i++) {
      const opf_pmu_event *e = opf_pmu_event_at(p, i);
      assert_string_equal(e->name, m[i]);
      assert_string_equal(e->name, pi.member[i]);
      if (!strncmp(e->name, "perf::", 6)) {
        assert_int_equal(e->status, OPF_EV_COUNTED); /* generic: to be opened */
        assert_int_equal(e->type, T_HARDWARE);
        continue;
      }
      assert_int_equal(e->type, T_RAW);
      if (raw_row) {
        assert_memory_equal(e->fstr, "perf_raw::", 10);
        continue;
      }
      /* a PMU this CPU lacks: encoded for inspection, never to be opened */
      if (!pmu_present(pmu)) assert_int_equal(e->status, OPF_EV_NOT_SUPPORTED);
      /* encoded by the named PMU, not by whatever libpfm4 would pick first */
      assert_memory_equal(e->fstr, pmu, strlen(pmu));
      assert_memory_equal(e->fstr + strlen(pmu), "::", 2);
    }
    for (size_t j = 0; j < sizeof spot / sizeof spot[0]; j++)
      if (!strcmp(spot[j].pmu, pmu) &&
          opf_pmu_event_at(p, (size_t)spot[j].idx)->config != spot[j].config)
        fail_msg("%s: %s config %#llx, want %#llx", pmu, m[spot[j].idx],
                 (unsigned long long)opf_pmu_event_at(p, (size_t)spot[j].idx)->config,
                 (unsigned long long)spot[j].config);
    opf_pmu_free(p);
  }
  assert_int_equal(n_x86, 12);
  opf_pmu_set_topdown_pmu(NULL);
  char m[OPF_PMU_PRESET_MAX][96];
  assert_int_equal(opf_pmu_topdown_members("amd64_fam19h_zen3", m, OPF_PMU_PRESET_MAX), 0);
  assert_int_equal(opf_pmu_topdown_members("perf", m, OPF_PMU_PRESET_MAX), 0);
  assert_int_equal(opf_pmu_topdown_members(NULL, m, OPF_PMU_PRESET_MAX), 0);
  assert_int_equal(opf_pmu_topdown_members("skx", m, 2), 2); /* max respected */
  /* Arm rows on x86: the members fall back to the common event numbers for the encoding */
  opf_pmu_set_topdown_pmu("arm_v1");
  opf_pmu *p = NULL;
  opf_err err = {0};
  assert_int_equal(opf_pmu_create(&p, "topdown", NULL, &err), OPF_OK);
  assert_int_equal(opf_pmu_count(p), 6);
  static const uint64_t arm_codes[] = {0x11, 0x3e, 0x3d, 0x3f, 0x3b, 0x3a};
  for (size_t i = 0; i < 6; i++) {
#if !defined(__aarch64__)
    assert_int_equal(opf_pmu_event_at(p, i)->type, T_RAW);
    assert_int_equal(opf_pmu_event_at(p, i)->config, arm_codes[i]);
#else
    (void)arm_codes;
#endif
    assert_memory_equal(opf_pmu_event_at(p, i)->name, "arm_v1::", 8);
  }
  opf_pmu_free(p);
  opf_pmu_set_topdown_pmu(NULL);
}

int main(void) {
  /* Before the first opf_pmu_create: libpfm4 reads it in pfm_initialize(). */
  setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_encodings),
      cmocka_unit_test(test_unknown_model_event),
      cmocka_unit_test(test_topdown_tables),
      cmocka_unit_test(test_inactive_pmu_never_opened),
      cmocka_unit_test(test_arm64_presets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

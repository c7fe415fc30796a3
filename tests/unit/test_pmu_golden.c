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

/* The topdown preset's table: for every core PMU it names, the preset resolves to events
 * libpfm4 encodes, for that PMU. Spot checks from the vendors' tables: UOPS_ISSUED.ANY = event
 * 0EH umask 01H (Intel SDM vol. 3B, Skylake; Sapphire Rapids moved it to AEH), TOPDOWN.SLOTS =
 * event 00H umask 04H (fixed counter 3, Ice Lake), INT_MISC.RECOVERY_CYCLES = 0DH umask 01H
 * (with cmask 1 on Haswell/Broadwell), AMD Zen 4 PMCx1A0 umask 01H (dispatch slots with no
 * ops from the frontend; event-select bits 11:8 at config bits 35:32) and PMCx0AA umask 07H
 * (ops dispatched from any source). */
static void test_topdown_tables(void **state) {
  (void)state;
#if !defined(__x86_64__) && !defined(__i386__)
  /* The topdown table names x86 PMUs only (pmu/pmu.c k_topdown), which a non-x86 build of
   * libpfm4 cannot encode; there is no arm64 topdown preset yet. */
  print_message("topdown tables are x86 PMUs, absent from this architecture's libpfm4: skipped\n");
  skip();
#endif
  static const char *pmus[] = {"hsw", "hsw_ep", "bdw", "bdw_ep", "skl", "skx", "clx",
                               "icl", "icx", "spr", "amd64_fam19h_zen4"};
  static const struct {
    const char *pmu;
    int idx;
    uint64_t config;
  } spot[] = {
      {"skx", 1, 0x10e},         {"hsw", 4, 0x100030d},         {"skl", 4, 0x10d},
      {"icl", 0, 0x400},         {"spr", 2, 0x2c2},             {"spr", 1, 0x1ae},
      {"amd64_fam19h_zen4", 1, 0x1000001a0},                    {"amd64_fam19h_zen4", 3, 0x7aa},
  };
  for (size_t k = 0; k < sizeof pmus / sizeof pmus[0]; k++) {
    char m[OPF_PMU_PRESET_MAX][96];
    int n = opf_pmu_topdown_members(pmus[k], m, OPF_PMU_PRESET_MAX);
    assert_int_equal(n, 5); /* fits the general-purpose counters in one group */
    opf_pmu_set_topdown_pmu(pmus[k]);
    opf_pmu_preset_info pi;
    assert_int_equal(opf_pmu_preset_at(opf_pmu_preset_find("topdown"), &pi), OPF_OK);
    assert_int_equal(pi.n, 5);
    opf_pmu *p = NULL;
    opf_err err = {0};
    if (opf_pmu_create(&p, "topdown", NULL, &err) != OPF_OK)
      fail_msg("topdown for %s: %s", pmus[k], err.msg);
    assert_int_equal(opf_pmu_count(p), 5);
    for (size_t i = 0; i < 5; i++) {
      const opf_pmu_event *e = opf_pmu_event_at(p, i);
      assert_string_equal(e->name, m[i]);
      assert_string_equal(e->name, pi.member[i]);
      assert_int_equal(e->status, OPF_EV_COUNTED); /* encoded, to be opened */
      if (!strncmp(e->name, "perf::", 6)) {
        assert_int_equal(e->type, T_HARDWARE);
        continue;
      }
      assert_int_equal(e->type, T_RAW);
      /* encoded by the named PMU, not by whatever libpfm4 would pick first */
      assert_memory_equal(e->fstr, pmus[k], strlen(pmus[k]));
      assert_memory_equal(e->fstr + strlen(pmus[k]), "::", 2);
    }
    for (size_t j = 0; j < sizeof spot / sizeof spot[0]; j++)
      if (!strcmp(spot[j].pmu, pmus[k]) && opf_pmu_event_at(p, (size_t)spot[j].idx)->config !=
                                                spot[j].config)
        fail_msg("%s: %s config %#llx, want %#llx", pmus[k], m[spot[j].idx],
                 (unsigned long long)opf_pmu_event_at(p, (size_t)spot[j].idx)->config,
                 (unsigned long long)spot[j].config);
    opf_pmu_free(p);
  }
  opf_pmu_set_topdown_pmu(NULL);
  char m[OPF_PMU_PRESET_MAX][96];
  assert_int_equal(opf_pmu_topdown_members("amd64_fam19h_zen3", m, OPF_PMU_PRESET_MAX), 0);
  assert_int_equal(opf_pmu_topdown_members("perf", m, OPF_PMU_PRESET_MAX), 0);
  assert_int_equal(opf_pmu_topdown_members(NULL, m, OPF_PMU_PRESET_MAX), 0);
  assert_int_equal(opf_pmu_topdown_members("skx", m, 2), 2); /* max respected */
}

int main(void) {
  /* Before the first opf_pmu_create: libpfm4 reads it in pfm_initialize(). */
  setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_encodings),
      cmocka_unit_test(test_unknown_model_event),
      cmocka_unit_test(test_topdown_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

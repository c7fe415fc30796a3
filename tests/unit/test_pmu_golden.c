/* test_pmu_golden.c: golden libpfm4 encodings of model-specific events (Intel Skylake, AMD Zen)
 * through opf_pmu_create, on any machine. A separate executable because LIBPFM_ENCODE_INACTIVE
 * must be set before libpfm4 initialises, which happens once per process. Self-contained:
 * needs only pmu/, src/error.c and cmocka. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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
  opf_pmu *p = NULL;
  opf_err err = {0};
  assert_int_equal(opf_pmu_create(&p, "skl::NO_SUCH_EVENT", NULL, &err), OPF_ECONFIG);
  assert_non_null(strstr(err.msg, "'skl::NO_SUCH_EVENT'"));
  assert_null(p);
}

int main(void) {
  /* Before the first opf_pmu_create: libpfm4 reads it in pfm_initialize(). */
  setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_encodings),
      cmocka_unit_test(test_unknown_model_event),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

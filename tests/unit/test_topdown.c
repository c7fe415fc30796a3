/* test_topdown.c: the top-down table (pmu/topdown.c) and its formulas against hand-computed
 * shares from fixed counts in a fake opf_result, per family (Intel classic and slots with level
 * 2, AMD Zen 4 / Zen 5, Arm Neoverse); the one-group / one-privilege rules and every "not
 * available" path (split group, event not counted, placeholder preset, no slot count); the
 * verdict rule. No PMU needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opperf/topdown.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-12)

/* A result carrying model m's events with the given counts per call, all counted in group 1,
 * user space. */
static void fake(opf_result *r, const char *pmu, const double *v, int n) {
  memset(r, 0, sizeof *r);
  r->status = OPF_ST_OK;
  const opf_td_model *m = opf_td_model_find(pmu);
  assert_non_null(m);
  assert_true(n <= m->n);
  for (int j = 0; j < n; j++) {
    opf_event_result *e = &r->events[r->n_events++];
    opf_td_event_name(m, j, e->name, sizeof e->name);
    e->status = OPF_EV_COUNTED;
    e->has_value = 1;
    e->group = 1;
    snprintf(e->plm, sizeof e->plm, "user");
    e->mean_per_call = v[j];
    e->per_call = v[j];
  }
}

static void test_table_rows(void **state) {
  (void)state;
  assert_true(opf_td_model_count() >= 15);
  for (int i = 0; i < opf_td_model_count(); i++) {
    const opf_td_model *m = opf_td_model_at(i);
    assert_non_null(m->source);
    assert_true(strlen(m->source) > 20); /* cites something */
    assert_non_null(m->formula);
    assert_true(m->n1 >= 5 && m->n1 <= m->n && m->n <= OPF_TD_MAX_EV);
    assert_true(m->width > 0 || m->method == OPF_TD_ARM_SLOTS);
    assert_ptr_equal(opf_td_model_find(m->pmu), m);
    for (int j = 0; j < m->n; j++) assert_non_null(m->enc[j]);
    /* level 2 only where a row has its formula, and then the reason covers what is missing */
    assert_int_equal(m->n > m->n1, m->formula2 != NULL);
  }
  assert_ptr_equal(opf_td_model_find("SKX"), opf_td_model_find("skx"));
  assert_null(opf_td_model_find("amd64_fam19h_zen3")); /* no dispatch-slot events */
  assert_null(opf_td_model_find("arm_n1"));             /* no cited slot count */
  assert_null(opf_td_model_find(NULL));
  char list[512];
  opf_td_model_list(list, sizeof list);
  assert_non_null(strstr(list, "skx, clx, icl"));
  assert_non_null(strstr(list, "amd64_fam1ah_zen5"));
  assert_non_null(strstr(list, "arm_v2"));
  /* widths from the sources: 4 Skylake, 5 Ice Lake, 6 Sapphire Rapids / Zen 4, 8 Zen 5 */
  assert_int_equal(opf_td_model_find("skl")->width, 4);
  assert_int_equal(opf_td_model_find("icx")->width, 5);
  assert_int_equal(opf_td_model_find("spr")->width, 6);
  assert_int_equal(opf_td_model_find("amd64_fam19h_zen4")->width, 6);
  assert_int_equal(opf_td_model_find("amd64_fam1ah_zen5")->width, 8);
  char b[128];
  opf_td_event_name(opf_td_model_find("skx"), 1, b, sizeof b);
  assert_string_equal(b, "skx::UOPS_ISSUED:ANY");
  opf_td_event_name(opf_td_model_find("amd64_fam1ah_zen5"), 1, b, sizeof b);
  assert_string_equal(b, "de_no_dispatch_per_slot.no_ops_from_frontend");
  opf_td_event_enc(opf_td_model_find("amd64_fam1ah_zen5"), 1, b, sizeof b);
  assert_string_equal(b, "r1000001a0"); /* PMCx1A0 umask 01H: event[11:8] at bit 32 */
  opf_td_event_enc(opf_td_model_find("amd64_fam1ah_zen5"), 2, b, sizeof b);
  assert_string_equal(b, "r100001ea0"); /* PMCx1A0 umask 1EH */
  opf_td_event_name(opf_td_model_find("arm_v1"), 3, b, sizeof b);
  assert_string_equal(b, "arm_v1::STALL_SLOT");
  assert_string_equal(opf_td_model_find("arm_v1")->raw[3], "r3f");
}

/* Skylake-SP: cycles 1000 -> 4000 slots; issued 2600, retired 2000, fe 800, recovery 50:
 * fe 0.2, bad (2600 - 2000 + 4*50) / 4000 = 0.2, ret 0.5, be 0.1. Verdict: retiring 50%. */
static void test_intel_classic(void **state) {
  (void)state;
  opf_result r;
  const double v[] = {1000, 2600, 2000, 800, 50};
  fake(&r, "skx", v, 5);
  opf_td_result t;
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_true(t.has_l1);
  assert_string_equal(t.model->pmu, "skx");
  NEAR(t.slots, 4000);
  NEAR(t.l1[OPF_TD_FE], 0.2);
  NEAR(t.l1[OPF_TD_BAD], 0.2);
  NEAR(t.l1[OPF_TD_RET], 0.5);
  NEAR(t.l1[OPF_TD_BE], 0.1);
  for (int k = 0; k < OPF_TD_N2; k++) assert_false(t.has_l2[k]);
  assert_non_null(strstr(t.reason2, "level 2 not in the table"));
  assert_string_equal(t.verdict, "retiring 50% of slots");
  assert_int_equal(t.group, 1);
}

/* Ice Lake: TOPDOWN.SLOTS 5000; issued 1500, retired 1000, fe 500, recovery 20: fe 0.1,
 * bad (500 + 5*20) / 5000 = 0.12, ret 0.2, be 0.58. Level 2: fe0 cycles 40 -> latency
 * 5*40/5000 = 0.04, bandwidth 0.06; mispredicts 30, clears 10 -> 0.09 and 0.03. */
static void test_intel_slots_level2(void **state) {
  (void)state;
  opf_result r;
  const double v[] = {5000, 1500, 1000, 500, 20, 40, 30, 10};
  fake(&r, "icl", v, 8);
  opf_td_result t;
  assert_int_equal(opf_td_eval(&r, 11, 0, &t), 1);
  assert_true(t.has_l1);
  NEAR(t.slots, 5000);
  NEAR(t.l1[OPF_TD_FE], 0.1);
  NEAR(t.l1[OPF_TD_BAD], 0.12);
  NEAR(t.l1[OPF_TD_RET], 0.2);
  NEAR(t.l1[OPF_TD_BE], 0.58);
  assert_true(t.has_l2[OPF_TD_FE_LATENCY] && t.has_l2[OPF_TD_BAD_CLEARS]);
  NEAR(t.l2[OPF_TD_FE_LATENCY], 0.04);
  NEAR(t.l2[OPF_TD_FE_BANDWIDTH], 0.06);
  NEAR(t.l2[OPF_TD_BAD_MISPREDICT], 0.09);
  NEAR(t.l2[OPF_TD_BAD_CLEARS], 0.03);
  assert_false(t.has_l2[OPF_TD_BE_MEMORY]); /* not in the table: absent, not 0 */
  assert_string_equal(t.verdict, "back-end bound 58% of slots");

  /* front end dominating with level 2: the larger half is named */
  const double w[] = {5000, 1200, 1000, 3000, 20, 500, 30, 10};
  fake(&r, "icl", w, 8);
  assert_int_equal(opf_td_eval(&r, 11, 0, &t), 1);
  NEAR(t.l1[OPF_TD_FE], 0.6);
  NEAR(t.l2[OPF_TD_FE_LATENCY], 0.5);
  assert_string_equal(t.verdict, "front-end bound 60% of slots: latency 50%");

  /* level-2 events in another group: level 1 stays, level 2 is absent with the reason */
  fake(&r, "icl", v, 8);
  r.events[6].group = 2;
  assert_int_equal(opf_td_eval(&r, 7, 0, &t), 1);
  assert_true(t.has_l1);
  for (int k = 0; k < OPF_TD_N2; k++) assert_false(t.has_l2[k]);
  assert_non_null(strstr(t.reason2, "level 2 needs its 8 events in one group; this CPU gives "
                                    "7 counters per group"));
}

/* Zen 4: cycles 1000 -> 6000 slots; fe 600, be 3600, dispatched 1500, retired 1200: fe 0.1,
 * be 0.6, bad 0.05, ret 0.2. Zen 5 the same counts over 8000 slots. */
static void test_amd(void **state) {
  (void)state;
  opf_result r;
  const double v[] = {1000, 600, 3600, 1500, 1200};
  opf_td_result t;
  fake(&r, "amd64_fam19h_zen4", v, 5);
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_true(t.has_l1);
  NEAR(t.l1[OPF_TD_FE], 0.1);
  NEAR(t.l1[OPF_TD_BE], 0.6);
  NEAR(t.l1[OPF_TD_BAD], 0.05);
  NEAR(t.l1[OPF_TD_RET], 0.2);
  assert_string_equal(t.verdict, "back-end bound 60% of slots");
  fake(&r, "amd64_fam1ah_zen5", v, 5);
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_string_equal(t.model->pmu, "amd64_fam1ah_zen5");
  NEAR(t.slots, 8000);
  NEAR(t.l1[OPF_TD_FE], 0.075);
  NEAR(t.l1[OPF_TD_BE], 0.45);
  NEAR(t.l1[OPF_TD_BAD], 0.0375);
  NEAR(t.l1[OPF_TD_RET], 0.15);
  assert_string_equal(t.verdict, ""); /* no bucket at 50%: no verdict */
}

/* Neoverse V1 with 8 slots per cycle: cycles 1000 -> 8000; STALL_SLOT_FRONTEND 800,
 * STALL_SLOT_BACKEND 4000, STALL_SLOT 5600, OP_SPEC 3000, OP_RETIRED 2400: fe 0.1, be 0.5,
 * used 1 - 0.7 = 0.3, ret 0.8 * 0.3 = 0.24, bad 0.2 * 0.3 = 0.06. */
static void test_arm(void **state) {
  (void)state;
  opf_result r;
  const double v[] = {1000, 800, 4000, 5600, 3000, 2400};
  opf_td_result t;
  fake(&r, "arm_v1", v, 6);
  assert_int_equal(opf_td_eval(&r, 0, 8, &t), 1);
  assert_true(t.has_l1);
  NEAR(t.l1[OPF_TD_FE], 0.1);
  NEAR(t.l1[OPF_TD_BE], 0.5);
  NEAR(t.l1[OPF_TD_RET], 0.24);
  NEAR(t.l1[OPF_TD_BAD], 0.06);
  assert_string_equal(t.verdict, "back-end bound 50% of slots");
#if !defined(__aarch64__)
  /* no Arm PMU here: the slot count the kernel would give is absent, so is top-down */
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_false(t.has_l1);
  assert_non_null(strstr(t.reason, "no slot count"));
#endif
}

/* The rules: one group, one privilege level, every event counted; else absent with why. */
static void test_not_available(void **state) {
  (void)state;
  opf_result r;
  const double v[] = {1000, 2600, 2000, 800, 50};
  opf_td_result t;
  fake(&r, "skx", v, 5);
  r.events[4].group = 2; /* split by the planner: never combined */
  assert_int_equal(opf_td_eval(&r, 4, 0, &t), 1);
  assert_false(t.has_l1);
  assert_non_null(strstr(t.reason, "top-down not available on skx: needs its 5 events in one "
                                   "group; this CPU gives 4 counters per group"));
  assert_string_equal(t.verdict, "");

  fake(&r, "skx", v, 5);
  r.events[2].has_value = 0;
  r.events[2].status = OPF_EV_NOT_COUNTED;
  snprintf(r.events[2].reason, sizeof r.events[2].reason, "never scheduled");
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_false(t.has_l1);
  assert_non_null(strstr(t.reason, "skx::UOPS_RETIRED:RETIRE_SLOTS: not counted: never scheduled"));

  fake(&r, "skx", v, 5);
  snprintf(r.events[0].plm, sizeof r.events[0].plm, "user+kernel");
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_false(t.has_l1);
  assert_non_null(strstr(t.reason, "different privilege levels"));

  fake(&r, "skx", v, 4); /* an event missing from the run */
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_false(t.has_l1);
  assert_non_null(strstr(t.reason, "INT_MISC:RECOVERY_CYCLES was not counted"));

  const double z[] = {0, 2600, 2000, 800, 50};
  fake(&r, "skx", z, 5);
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_false(t.has_l1);
  assert_non_null(strstr(t.reason, "no slots counted"));

  /* the preset on a CPU without a row: its placeholder's reason */
  memset(&r, 0, sizeof r);
  r.n_events = 1;
  snprintf(r.events[0].name, sizeof r.events[0].name, "topdown");
  r.events[0].status = OPF_EV_NOT_SUPPORTED;
  snprintf(r.events[0].reason, sizeof r.events[0].reason,
           "top-down not available on amd64_fam19h_zen3: not in opperf's top-down table");
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 1);
  assert_null(t.model);
  assert_false(t.has_l1);
  assert_non_null(strstr(t.reason, "amd64_fam19h_zen3"));

  /* no top-down asked: nothing */
  memset(&r, 0, sizeof r);
  r.n_events = 1;
  snprintf(r.events[0].name, sizeof r.events[0].name, "cycles");
  assert_int_equal(opf_td_eval(&r, 0, 0, &t), 0);
  assert_false(opf_td_requested(NULL, 0));
  opf_pmu_event ev[2];
  memset(ev, 0, sizeof ev);
  snprintf(ev[0].name, sizeof ev[0].name, "cycles");
  assert_false(opf_td_requested(ev, 1));
  snprintf(ev[1].name, sizeof ev[1].name, "icl::UOPS_ISSUED:ANY");
  assert_true(opf_td_requested(ev, 2));

  assert_int_equal(opf_td_counters_from_note("hardware groups of at most 5 events (x)"), 5);
  assert_int_equal(opf_td_counters_from_note("hardware groups: counter count unknown"), 0);
  assert_int_equal(opf_td_counters_from_note(NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_rows),   cmocka_unit_test(test_intel_classic),
      cmocka_unit_test(test_intel_slots_level2), cmocka_unit_test(test_amd),
      cmocka_unit_test(test_arm),          cmocka_unit_test(test_not_available),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

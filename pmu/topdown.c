/* topdown.c: the top-down data table (one row per CPU family, each citing its source) and the
 * evaluation of a result's counters into level-1 / level-2 shares of slots and a verdict
 * (include/opperf/topdown.h). The `topdown` preset of pmu.c opens a row's events. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opperf/topdown.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* Sources, cited by the rows.
 * - Yasin, "A Top-Down Method for Performance Analysis and Counters Architecture" (ISPASS 2014)
 *   and Intel's TMA metrics (TMA_Metrics.xlsx, as transcribed in the kernel's
 *   tools/perf/pmu-events/arch/x86/<model>/<model>-metrics.json): level 1 with
 *   SLOTS = Pipeline_Width * CPU_CLK_UNHALTED.THREAD, Frontend_Bound =
 *   IDQ_UOPS_NOT_DELIVERED.CORE / SLOTS, Bad_Speculation = (UOPS_ISSUED.ANY -
 *   UOPS_RETIRED.RETIRE_SLOTS + Pipeline_Width * INT_MISC.RECOVERY_CYCLES) / SLOTS, Retiring =
 *   UOPS_RETIRED.RETIRE_SLOTS / SLOTS, Backend_Bound = 1 - the others; level 2 Fetch_Latency =
 *   Pipeline_Width * IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE / SLOTS, Branch_Mispredicts
 *   = BR_MISP_RETIRED.ALL_BRANCHES / (BR_MISP_RETIRED.ALL_BRANCHES + MACHINE_CLEARS.COUNT) *
 *   Bad_Speculation. Pipeline_Width: 4 (Skylake and earlier), 5 (Sunny Cove: Ice Lake), 6
 *   (Golden Cove: Sapphire Rapids); libpfm4 4.13 encodes IDQ_UOPS_NOT_DELIVERED:
 *   CYCLES_0_UOPS_DELIV_CORE with cmask 4 / 5 / 6 on skx / icl / spr, the same widths.
 * - Counters are per thread (perf_event_open on each thread of the process), so the Intel rows
 *   use TMA's per-thread (SMT off) form: CPU_CLK_UNHALTED.THREAD and INT_MISC.RECOVERY_CYCLES,
 *   not the *_ANY core-wide variants; with a busy Hyper-Threading sibling the shares are the
 *   thread's view, approximate.
 * - Ice Lake and later count slots in fixed counter 3 (TOPDOWN.SLOTS, event 00H umask 04H, Intel
 *   SDM vol. 3B). The kernel's own topdown-* events read the PERF_METRICS MSR; libpfm4 4.13 has
 *   no encoding for them (they are not in its icl/icx/spr tables), so these rows use the
 *   classic events over TOPDOWN.SLOTS.
 * - AMD: PPR for Family 19h Model 11h (55901, Zen 4) and Family 1Ah Model 02h (57238, Zen 5),
 *   "Pipeline utilization" / the kernel's tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json
 *   and amdzen5/pipeline.json: total_dispatch_slots = 6 (Zen 4) / 8 (Zen 5) *
 *   ls_not_halted_cyc, frontend_bound = de_no_dispatch_per_slot.no_ops_from_frontend / slots,
 *   bad_speculation = (de_src_op_disp.all - ex_ret_ops) / slots, backend_bound =
 *   de_no_dispatch_per_slot.backend_stalls / slots, retiring = ex_ret_ops / slots (and
 *   smt_contention, not opened: see the row). Codes (amdzen5/decode.json, execution.json,
 *   load-store.json): PMCx1A0 umask 01H / 1EH, PMCx0AA umask 07H, PMCx0C1, PMCx076.
 * - Arm: the kernel's tools/perf/pmu-events/arch/arm64/sbsa.json (TopdownL1): frontend_bound =
 *   STALL_SLOT_FRONTEND / (#slots * CPU_CYCLES), backend_bound = STALL_SLOT_BACKEND / (#slots *
 *   CPU_CYCLES), retiring = OP_RETIRED / OP_SPEC * (1 - STALL_SLOT / (#slots * CPU_CYCLES)),
 *   bad_speculation = (1 - OP_RETIRED / OP_SPEC) * (1 - STALL_SLOT / (#slots * CPU_CYCLES));
 *   #slots is the PMU's caps/slots (PMMIR_EL1.SLOTS). Common event numbers (Arm ARM):
 *   CPU_CYCLES 0x11, OP_RETIRED 0x3A, OP_SPEC 0x3B, STALL_SLOT_BACKEND 0x3D,
 *   STALL_SLOT_FRONTEND 0x3E, STALL_SLOT 0x3F. */

#define SRC_INTEL_OLD                                                                          \
  "Yasin, ISPASS 2014; Intel TMA metrics as in linux tools/perf/pmu-events/arch/x86/"          \
  "skylake*/*metrics.json (Pipeline_Width 4)"
#define SRC_ICL                                                                                \
  "Intel TMA metrics (classic events; Pipeline_Width 5); TOPDOWN.SLOTS: Intel SDM vol. 3B; "   \
  "linux tools/perf/pmu-events/arch/x86/icelake*/"
#define SRC_SPR                                                                                \
  "Intel TMA metrics (classic events; Pipeline_Width 6); TOPDOWN.SLOTS: Intel SDM vol. 3B; "   \
  "linux tools/perf/pmu-events/arch/x86/sapphirerapids/"
#define SRC_ZEN4                                                                               \
  "AMD PPR 19h model 11h (55901); linux tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json"
#define SRC_ZEN5                                                                               \
  "AMD PPR 1Ah model 02h (57238); linux tools/perf/pmu-events/arch/x86/amdzen5/pipeline.json, " \
  "decode.json, execution.json"
#define SRC_ARM "linux tools/perf/pmu-events/arch/arm64/sbsa.json (TopdownL1); Arm ARM common events"

#define F_INTEL_OLD                                                                            \
  "slots = 4 * cycles; fe = IDQ_UOPS_NOT_DELIVERED.CORE / slots; bad = (UOPS_ISSUED.ANY - "     \
  "UOPS_RETIRED.RETIRE_SLOTS + 4 * INT_MISC.RECOVERY_CYCLES) / slots; ret = "                   \
  "UOPS_RETIRED.RETIRE_SLOTS / slots; be = 1 - fe - bad - ret"
#define F_INTEL_SLOTS(w)                                                                       \
  "slots = TOPDOWN.SLOTS; fe = IDQ_UOPS_NOT_DELIVERED.CORE / slots; bad = (UOPS_ISSUED.ANY - "  \
  "UOPS_RETIRED.SLOTS + " w " * INT_MISC.RECOVERY_CYCLES) / slots; ret = UOPS_RETIRED.SLOTS / " \
  "slots; be = 1 - fe - bad - ret"
#define F2_INTEL(w)                                                                            \
  "fe_latency = " w " * IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE / slots; "             \
  "fe_bandwidth = fe - fe_latency (TMA 4.x also subtracts INT_MISC.UOP_DROPPING: not here); bad_mispredict = bad * BR_MISP_RETIRED.ALL_BRANCHES / "     \
  "(BR_MISP_RETIRED.ALL_BRANCHES + MACHINE_CLEARS.COUNT); bad_clears = bad - bad_mispredict"
#define F_AMD(w)                                                                               \
  "slots = " w " * ls_not_halted_cyc (PMCx076); fe = de_no_dispatch_per_slot.no_ops_from_"     \
  "frontend (PMCx1A0 umask 01H) / slots; bad = (de_src_op_disp.all (PMCx0AA umask 07H) - "      \
  "ex_ret_ops (PMCx0C1)) / slots; be = de_no_dispatch_per_slot.backend_stalls (PMCx1A0 umask "  \
  "1EH) / slots; ret = ex_ret_ops / slots"
#define F_ARM                                                                                  \
  "slots = #slots * CPU_CYCLES; fe = STALL_SLOT_FRONTEND / slots; be = STALL_SLOT_BACKEND / "   \
  "slots; ret = OP_RETIRED / OP_SPEC * (1 - STALL_SLOT / slots); bad = (1 - OP_RETIRED / "      \
  "OP_SPEC) * (1 - STALL_SLOT / slots)"

#define NO_L2_INTEL_OLD                                                                        \
  "level 2 not in the table: its 3 more events would not fit one group with level 1 (4 "       \
  "general-purpose counters per thread with Hyper-Threading on)"
#define NO_L2_INTEL_NEW                                                                        \
  "back end memory/core and retiring heavy/light not in the table: they need more events "     \
  "than one group holds next to level 1"
#define NO_L2_AMD                                                                              \
  "level 2 not in the table: the kernel's PipelineL2 metrics need 6 more events, one group "   \
  "holds 6 (level 1 takes 5); the smt_contention bucket (PMCx1A0 umask 60H) is not opened "     \
  "either (6 events would not fit next to the NMI watchdog), so with a busy SMT sibling the "   \
  "four shares sum to less than 100%"
#define NO_L2_ARM "level 2 not in the table (sbsa.json defines level 1 only)"

/* Intel level-1 events (classic) and level 2 for cores with 8 general-purpose counters. */
#define INTEL_L1(slots, retired)                                                               \
  slots, "P::UOPS_ISSUED:ANY", retired, "P::IDQ_UOPS_NOT_DELIVERED:CORE",                      \
      "P::INT_MISC:RECOVERY_CYCLES"
#define INTEL_L2                                                                               \
  "P::IDQ_UOPS_NOT_DELIVERED:CYCLES_0_UOPS_DELIV_CORE", "P::BR_MISP_RETIRED:ALL_BRANCHES",      \
      "P::MACHINE_CLEARS:COUNT"

#define ROW_INTEL_OLD(p, c)                                                                    \
  {p, c, OPF_TD_INTEL_CLASSIC, 4, 5, 5, {0},                                                   \
   {INTEL_L1("perf::CYCLES", "P::UOPS_RETIRED:RETIRE_SLOTS")}, {0}, F_INTEL_OLD, NULL,          \
   NO_L2_INTEL_OLD, SRC_INTEL_OLD}
#define ROW_INTEL_NEW(p, c, w, src)                                                            \
  {p, c, OPF_TD_INTEL_SLOTS, w, 5, 8, {0},                                                     \
   {INTEL_L1("P::TOPDOWN:SLOTS", "P::UOPS_RETIRED:SLOTS"), INTEL_L2}, {0},                     \
   F_INTEL_SLOTS(#w), F2_INTEL(#w), NO_L2_INTEL_NEW, src}
#define ROW_ARM(p, c)                                                                          \
  {p, c, OPF_TD_ARM_SLOTS, 0, 6, 6, {0},                                                       \
   {"P::CPU_CYCLES", "P::STALL_SLOT_FRONTEND", "P::STALL_SLOT_BACKEND", "P::STALL_SLOT",        \
    "P::OP_SPEC", "P::OP_RETIRED"},                                                            \
   {"r11", "r3e", "r3d", "r3f", "r3b", "r3a"}, F_ARM, NULL, NO_L2_ARM, SRC_ARM}

/* Event order per method (evaluation relies on it):
 * Intel: slots-or-cycles, issued, retired, fe-undelivered, recovery [, fe-0-cycles, br-misp,
 *        clears];
 * AMD:   cycles, fe-no-ops, be-stalls, dispatched, retired;
 * Arm:   cycles, stall-slot-frontend, stall-slot-backend, stall-slot, op-spec, op-retired. */
static const opf_td_model k_models[] = {
    ROW_INTEL_OLD("hsw", "Intel Haswell"),
    ROW_INTEL_OLD("hsw_ep", "Intel Haswell-EP"),
    ROW_INTEL_OLD("bdw", "Intel Broadwell"),
    ROW_INTEL_OLD("bdw_ep", "Intel Broadwell-EP"),
    ROW_INTEL_OLD("skl", "Intel Skylake client (and Kaby/Coffee/Comet Lake)"),
    ROW_INTEL_OLD("skx", "Intel Skylake-SP"),
    ROW_INTEL_OLD("clx", "Intel Cascade Lake"),
    ROW_INTEL_NEW("icl", "Intel Ice Lake client", 5, SRC_ICL),
    ROW_INTEL_NEW("icx", "Intel Ice Lake-SP", 5, SRC_ICL),
    ROW_INTEL_NEW("spr", "Intel Sapphire Rapids", 6, SRC_SPR),
    {"amd64_fam19h_zen4", "AMD Zen 4", OPF_TD_AMD_PIPE, 6, 5, 5,
     {0},
     {"P::CYCLES_NOT_IN_HALT", "P::DISPATCH_STALLS_1:FE_NO_OPS", "P::DISPATCH_STALLS_1:BE_STALLS",
      "P::OPS_SOURCE_DISPATCHED_FROM_DECODER:DECODER:OPCACHE:LOOP_BUFFER", "P::RETIRED_OPS"},
     {"r76", "r1000001a0", "r100001ea0", "r7aa", "rc1"}, F_AMD("6"), NULL, NO_L2_AMD, SRC_ZEN4},
    /* Not in libpfm4 4.13: raw codes from the PPR (as the kernel's amdzen5 files carry them),
     * config = event[7:0] | umask << 8 | event[11:8] << 32. Names as the kernel's. */
    {"amd64_fam1ah_zen5", "AMD Zen 5", OPF_TD_AMD_PIPE, 8, 5, 5,
     {"ls_not_halted_cyc", "de_no_dispatch_per_slot.no_ops_from_frontend",
      "de_no_dispatch_per_slot.backend_stalls", "de_src_op_disp.all", "ex_ret_ops"},
     {"r76", "r1000001a0", "r100001ea0", "r7aa", "rc1"},
     {"r76", "r1000001a0", "r100001ea0", "r7aa", "rc1"}, F_AMD("8"), NULL, NO_L2_AMD, SRC_ZEN5},
    ROW_ARM("arm_v1", "Arm Neoverse V1"),
    ROW_ARM("arm_n2", "Arm Neoverse N2"),
    ROW_ARM("arm_v2", "Arm Neoverse V2"),
};
#define N_MODELS ((int)(sizeof k_models / sizeof k_models[0]))

int opf_td_model_count(void) { return N_MODELS; }
const opf_td_model *opf_td_model_at(int i) { return i >= 0 && i < N_MODELS ? &k_models[i] : NULL; }

const opf_td_model *opf_td_model_find(const char *pmu) {
  if (!pmu) return NULL;
  for (int i = 0; i < N_MODELS; i++)
    if (!strcasecmp(pmu, k_models[i].pmu)) return &k_models[i];
  return NULL;
}

void opf_td_model_list(char *buf, size_t n) {
  size_t l = 0;
  if (n) buf[0] = '\0';
  for (int i = 0; i < N_MODELS && l + 1 < n; i++) {
    int w = snprintf(buf + l, n - l, "%s%s", i ? ", " : "", k_models[i].pmu);
    if (w < 0) break;
    l += (size_t)w;
  }
}

static void expand(const opf_td_model *m, const char *s, char *buf, size_t n) {
  if (!strncmp(s, "P::", 3)) snprintf(buf, n, "%s::%s", m->pmu, s + 3);
  else snprintf(buf, n, "%s", s);
}

void opf_td_event_enc(const opf_td_model *m, int j, char *buf, size_t n) {
  if (!m || j < 0 || j >= m->n) {
    if (n) buf[0] = '\0';
    return;
  }
  expand(m, m->enc[j], buf, n);
}

void opf_td_event_name(const opf_td_model *m, int j, char *buf, size_t n) {
  if (!m || j < 0 || j >= m->n) {
    if (n) buf[0] = '\0';
    return;
  }
  expand(m, m->name[j] ? m->name[j] : m->enc[j], buf, n);
}

const char *opf_td_cpuid_model(void) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541) return NULL; /* "Auth" */
  if (!__get_cpuid(1, &a, &b, &c, &d)) return NULL;
  unsigned fam = (a >> 8) & 0xf;
  if (fam == 0xf) fam += (a >> 20) & 0xff;
  /* The kernel's mapfile.csv maps every family 1Ah model to amdzen5. */
  if (fam == 0x1a) return "amd64_fam1ah_zen5";
#endif
  return NULL;
}

static const char *const k_l1[OPF_TD_N1] = {"retiring", "bad_speculation", "frontend_bound",
                                            "backend_bound"};
static const char *const k_l2[OPF_TD_N2] = {
    "frontend_latency", "frontend_bandwidth", "bad_speculation_mispredicts",
    "bad_speculation_machine_clears", "backend_memory", "backend_core", "retiring_heavy",
    "retiring_light"};
const char *opf_td_l1_name(int k) { return k >= 0 && k < OPF_TD_N1 ? k_l1[k] : ""; }
const char *opf_td_l2_name(int k) { return k >= 0 && k < OPF_TD_N2 ? k_l2[k] : ""; }

const char *opf_td_verdict_rule(void) {
  return "a verdict is given when the largest level-1 bucket holds at least 50% of the slots; "
         "where level 2 splits that bucket, the larger half is named";
}

int opf_td_counters_from_note(const char *note) {
  const char *s = note ? strstr(note, "at most ") : NULL;
  int v = 0;
  if (s && sscanf(s, "at most %d", &v) == 1 && v > 0) return v;
  return 0;
}

/* The model whose events the result carries (matched by its first model-specific name). */
static const opf_td_model *model_of(const opf_result *r) {
  for (int k = 0; k < N_MODELS; k++) {
    char nm[128];
    opf_td_event_name(&k_models[k], 1, nm, sizeof nm);
    for (int i = 0; i < r->n_events && i < OPF_PMU_MAX_EVENTS; i++)
      if (!strcmp(r->events[i].name, nm)) return &k_models[k];
  }
  return NULL;
}

int opf_td_requested(const opf_pmu_event *ev, int n) {
  for (int i = 0; i < n; i++) {
    if (!strcmp(ev[i].name, "topdown")) return 1;
    for (int k = 0; k < N_MODELS; k++) {
      char nm[128];
      opf_td_event_name(&k_models[k], 1, nm, sizeof nm);
      if (!strcmp(ev[i].name, nm)) return 1;
    }
  }
  return 0;
}

static const opf_event_result *find_ev(const opf_result *r, const char *name) {
  for (int i = 0; i < r->n_events; i++)
    if (!strcmp(r->events[i].name, name)) return &r->events[i];
  return NULL;
}

/* Arm slots per cycle from the kernel (caps/slots of the core PMU), 0 if it gives none. */
static int kernel_slots(void) {
  static const char *const dirs[] = {"armv8_pmuv3_0", "armv8_pmuv3", "armv9_pmuv3_0"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    char path[128];
    snprintf(path, sizeof path, "/sys/bus/event_source/devices/%s/caps/slots", dirs[i]);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    unsigned v = 0;
    int ok = fscanf(f, "%x", &v) == 1; /* the kernel prints it as 0x%x */
    fclose(f);
    if (ok && v > 0) return (int)v;
  }
  return 0;
}

/* Values of events [from, to) of m in r, all counted in group g (g < 0: the first one's) and
 * privilege plm ("" : the first one's). Returns 1, or 0 with the reason. */
static int collect(const opf_result *r, const opf_td_model *m, int from, int to, int *g,
                   char *plm, size_t plm_n, double *v, int counters, char *why, size_t why_n) {
  int n_groups = 0, seen[OPF_TD_MAX_EV];
  for (int j = from; j < to; j++) {
    char nm[128];
    opf_td_event_name(m, j, nm, sizeof nm);
    const opf_event_result *e = find_ev(r, nm);
    if (!e) {
      snprintf(why, why_n, "%s was not counted (not in this run)", nm);
      return 0;
    }
    if (!e->has_value) {
      snprintf(why, why_n, "%s: %s%s%s", nm, opf_ev_status_name(e->status),
               e->reason[0] ? ": " : "", e->reason);
      return 0;
    }
    int dup = 0;
    for (int k = 0; k < n_groups; k++) dup |= seen[k] == e->group;
    if (!dup) seen[n_groups++] = e->group;
    if (*g < 0) *g = e->group;
    if (!plm[0]) snprintf(plm, plm_n, "%s", e->plm);
    if (strcmp(plm, e->plm) != 0) {
      snprintf(why, why_n, "its events were counted at different privilege levels (%s, %s)",
               plm, e->plm);
      return 0;
    }
    v[j] = e->mean_per_call;
  }
  int other = 0;
  for (int k = 0; k < n_groups; k++) other |= seen[k] != *g;
  if (other || *g < 0) {
    char cnt[64] = "";
    if (counters > 0) snprintf(cnt, sizeof cnt, "; this CPU gives %d counters per group", counters);
    snprintf(why, why_n, "needs its %d events in one group%s (they were counted in %d groups: "
             "never combined across groups; the NMI watchdog and other perf users hold counters)",
             to == m->n1 ? m->n1 : m->n, cnt, n_groups);
    return 0;
  }
  return 1;
}

static const char *const k_l1_text[OPF_TD_N1] = {"retiring", "bad speculation",
                                                 "front-end bound", "back-end bound"};
static const char *const k_l2_text[OPF_TD_N2] = {"latency", "bandwidth", "mispredicts",
                                                 "machine clears", "memory", "core", "heavy ops",
                                                 "light ops"};

static void make_verdict(opf_td_result *o) {
  int best = 0;
  for (int k = 1; k < OPF_TD_N1; k++)
    if (o->l1[k] > o->l1[best]) best = k;
  if (!(o->l1[best] >= 0.5)) return;
  /* level-2 pair splitting this bucket: FE -> 0/1, BAD -> 2/3, BE -> 4/5, RET -> 6/7 */
  int pair = best == OPF_TD_FE ? 0 : best == OPF_TD_BAD ? 2 : best == OPF_TD_BE ? 4 : 6;
  char sub[48] = "";
  if (o->has_l2[pair] && o->has_l2[pair + 1]) {
    int s = o->l2[pair] >= o->l2[pair + 1] ? pair : pair + 1;
    snprintf(sub, sizeof sub, ": %s %.0f%%", k_l2_text[s], 100 * o->l2[s]);
  }
  snprintf(o->verdict, sizeof o->verdict, "%s %.0f%% of slots%s", k_l1_text[best],
           100 * o->l1[best], sub);
}

int opf_td_eval(const opf_result *r, int counters, int arm_slots, opf_td_result *out) {
  memset(out, 0, sizeof *out);
  out->group = -1;
  if (!r) return 0;
  const opf_td_model *m = model_of(r);
  if (!m) {
    const opf_event_result *ph = find_ev(r, "topdown");
    if (!ph) return 0;
    snprintf(out->reason, sizeof out->reason, "%s", ph->reason[0] ? ph->reason : "not available");
    return 1;
  }
  out->model = m;
  if (r->status != OPF_ST_OK) {
    snprintf(out->reason, sizeof out->reason, "the case did not run");
    return 1;
  }
  double v[OPF_TD_MAX_EV] = {0};
  char why[240];
  if (!collect(r, m, 0, m->n1, &out->group, out->plm, sizeof out->plm, v, counters, why,
               sizeof why)) {
    snprintf(out->reason, sizeof out->reason, "top-down not available on %s: %s", m->pmu, why);
    return 1;
  }
  double w = m->width;
  if (m->method == OPF_TD_ARM_SLOTS && w <= 0) w = arm_slots > 0 ? arm_slots : kernel_slots();
  if (!(w > 0)) {
    snprintf(out->reason, sizeof out->reason,
             "top-down not available on %s: the kernel gives no slot count (caps/slots of the "
             "core PMU)", m->pmu);
    return 1;
  }
  double slots = m->method == OPF_TD_INTEL_SLOTS ? v[0] : w * v[0];
  if (!(slots > 0)) {
    snprintf(out->reason, sizeof out->reason, "top-down not available on %s: no slots counted",
             m->pmu);
    return 1;
  }
  out->slots = slots;
  double *l = out->l1;
  switch (m->method) {
  case OPF_TD_INTEL_CLASSIC:
  case OPF_TD_INTEL_SLOTS:
    l[OPF_TD_FE] = v[3] / slots;
    l[OPF_TD_BAD] = (v[1] - v[2] + w * v[4]) / slots;
    l[OPF_TD_RET] = v[2] / slots;
    l[OPF_TD_BE] = 1 - l[OPF_TD_FE] - l[OPF_TD_BAD] - l[OPF_TD_RET];
    break;
  case OPF_TD_AMD_PIPE:
    l[OPF_TD_FE] = v[1] / slots;
    l[OPF_TD_BE] = v[2] / slots;
    l[OPF_TD_BAD] = (v[3] - v[4]) / slots;
    l[OPF_TD_RET] = v[4] / slots;
    break;
  case OPF_TD_ARM_SLOTS: {
    if (!(v[4] > 0)) {
      snprintf(out->reason, sizeof out->reason, "top-down not available on %s: no OP_SPEC counted",
               m->pmu);
      return 1;
    }
    double used = 1 - v[3] / slots, ret = v[5] / v[4];
    l[OPF_TD_FE] = v[1] / slots;
    l[OPF_TD_BE] = v[2] / slots;
    l[OPF_TD_RET] = ret * used;
    l[OPF_TD_BAD] = (1 - ret) * used;
    break;
  }
  }
  out->has_l1 = 1;
  if (m->n > m->n1) {
    int g = out->group;
    char plm[12];
    snprintf(plm, sizeof plm, "%s", out->plm);
    if (collect(r, m, m->n1, m->n, &g, plm, sizeof plm, v, counters, why, sizeof why)) {
      /* Intel: 5 fe-0-cycles, 6 br-misp, 7 clears */
      out->l2[OPF_TD_FE_LATENCY] = w * v[5] / slots;
      out->l2[OPF_TD_FE_BANDWIDTH] = l[OPF_TD_FE] - out->l2[OPF_TD_FE_LATENCY];
      out->has_l2[OPF_TD_FE_LATENCY] = out->has_l2[OPF_TD_FE_BANDWIDTH] = 1;
      if (v[6] + v[7] > 0) {
        out->l2[OPF_TD_BAD_MISPREDICT] = l[OPF_TD_BAD] * v[6] / (v[6] + v[7]);
        out->l2[OPF_TD_BAD_CLEARS] = l[OPF_TD_BAD] - out->l2[OPF_TD_BAD_MISPREDICT];
        out->has_l2[OPF_TD_BAD_MISPREDICT] = out->has_l2[OPF_TD_BAD_CLEARS] = 1;
      }
      if (m->no_level2) snprintf(out->reason2, sizeof out->reason2, "%s", m->no_level2);
    } else {
      snprintf(out->reason2, sizeof out->reason2, "level 2 %s", why);
    }
  } else if (m->no_level2) {
    snprintf(out->reason2, sizeof out->reason2, "%s", m->no_level2);
  }
  make_verdict(out);
  return 1;
}

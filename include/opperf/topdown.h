/* topdown.h: top-down analysis ("why is it slow"): the per-CPU-family data table of the events
 * the `topdown` preset opens and the formulas that turn their counts into shares of the
 * pipeline's slots (level 1: retiring, bad speculation, front-end bound, back-end bound; level 2
 * where the table has it), evaluated for one result from counters of ONE group and one privilege
 * level only, with a one-line verdict. Every row cites its source. A CPU without a row gets
 * "top-down not available on <model>: <reason>", never a guess. (pmu/topdown.c) */
#ifndef OPPERF_TOPDOWN_H
#define OPPERF_TOPDOWN_H

#include <stddef.h>

#include "opperf/harness.h"

#define OPF_TD_MAX_EV 8

typedef enum opf_td_method {
  OPF_TD_INTEL_CLASSIC = 0, /* slots = W * cycles (Skylake era) */
  OPF_TD_INTEL_SLOTS,       /* slots = TOPDOWN.SLOTS (Ice Lake and later) */
  OPF_TD_AMD_PIPE,          /* AMD Zen 4 / Zen 5 pipeline utilisation: slots = W * cycles */
  OPF_TD_ARM_SLOTS          /* Arm Neoverse: slots = #slots * CPU_CYCLES (kernel sbsa.json) */
} opf_td_method;

/* Level-1 buckets, in the order of opf_td_result.l1. */
enum { OPF_TD_RET = 0, OPF_TD_BAD, OPF_TD_FE, OPF_TD_BE, OPF_TD_N1 };
/* Level-2 buckets, in the order of opf_td_result.l2 (pairs that split one level-1 bucket). */
enum {
  OPF_TD_FE_LATENCY = 0, OPF_TD_FE_BANDWIDTH, OPF_TD_BAD_MISPREDICT, OPF_TD_BAD_CLEARS,
  OPF_TD_BE_MEMORY, OPF_TD_BE_CORE, OPF_TD_RET_HEAVY, OPF_TD_RET_LIGHT, OPF_TD_N2
};

typedef struct opf_td_model {
  const char *pmu;      /* libpfm4 core PMU name ("skx", "amd64_fam19h_zen4"), the model key */
  const char *cpu;      /* "Intel Skylake-SP / Cascade Lake" */
  opf_td_method method;
  int width;            /* slots per cycle; 0: the kernel's count (Arm: caps/slots) */
  int n1;               /* level-1 events: ev[0 .. n1-1] */
  int n;                /* all events; level-2 events follow at n1 .. n-1 */
  const char *name[OPF_TD_MAX_EV]; /* shown (and matched in results); NULL: as enc */
  const char *enc[OPF_TD_MAX_EV];  /* libpfm4 strings, "P::" = this row's PMU */
  const char *raw[OPF_TD_MAX_EV];  /* the raw code ("r3e") where the source gives it, or NULL */
  const char *formula;  /* level 1, as text */
  const char *formula2; /* level 2, as text */
  const char *no_level2; /* why the row has no (or only partial) level 2 */
  const char *source;
} opf_td_model;

int opf_td_model_count(void);
const opf_td_model *opf_td_model_at(int i);
/* The row for a model name (libpfm4 PMU name, case-insensitive), NULL if none. */
const opf_td_model *opf_td_model_find(const char *pmu);
/* The supported model names, comma-separated. */
void opf_td_model_list(char *buf, size_t n);
/* Event j of a row as shown and as encoded, "P::" replaced by the row's PMU. */
void opf_td_event_name(const opf_td_model *m, int j, char *buf, size_t n);
void opf_td_event_enc(const opf_td_model *m, int j, char *buf, size_t n);
/* The model of this CPU when libpfm4 detects no core PMU of it (libpfm4 4.13 does not know
 * AMD Zen 5): from CPUID (AMD family 1Ah -> "amd64_fam1ah_zen5"); NULL when none. */
const char *opf_td_cpuid_model(void);

typedef struct opf_td_result {
  const opf_td_model *model; /* NULL when the run asked for top-down on a CPU without a row */
  int has_l1;
  double l1[OPF_TD_N1];      /* shares of slots (0..1), valid when has_l1 */
  int has_l2[OPF_TD_N2];
  double l2[OPF_TD_N2];
  double slots;              /* slots per call */
  int group;                 /* the group the level-1 events were counted in */
  char plm[12];
  char reason[320];          /* !has_l1: why */
  char reason2[320];         /* level-2 buckets absent: why */
  char verdict[128];         /* "" when no bucket dominates (see opf_td_verdict_rule) */
} opf_td_result;

/* Top-down of result r: returns 0 when r carries no top-down events (the preset was not asked
 * for), else 1 with *out filled: level 1 when all its events counted in one group and one
 * privilege level, level 2 buckets when their events counted in that same group too; otherwise
 * the reasons. counters: the most hardware events one group holds in this run (0: unknown),
 * for the reason text. arm_slots: slots per cycle for rows whose width comes from the kernel
 * (0: read /sys/bus/event_source/devices/<pmu>/caps/slots). */
int opf_td_eval(const opf_result *r, int counters, int arm_slots, opf_td_result *out);
/* Whether an event list (a run's counters) holds top-down events. */
int opf_td_requested(const opf_pmu_event *ev, int n);
/* "at most N events" from a pmu group note, 0 if it says nothing. */
int opf_td_counters_from_note(const char *note);
/* The verdict rule, one line (for documentation and --explain). */
const char *opf_td_verdict_rule(void);
const char *opf_td_l1_name(int k); /* "retiring", "bad_speculation", ... (JSON keys) */
const char *opf_td_l2_name(int k); /* "frontend_latency", ... */

#endif

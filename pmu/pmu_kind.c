/* pmu_kind.c: names the generic event an encoding counts ("cycles", "l1d-load-misses", ...)
 * from its perf_event_attr type and config, whatever spelling the user chose, so derived
 * metrics (src/metrics.c) can find their inputs. Model-specific raw events have no kind. Also
 * says what a generic event really counts on each vendor's CPUs (opf_pmu_kind_note). */
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "opperf/pmu.h"

static const char *cache_kind(uint64_t config) {
  unsigned id = config & 0xff, op = (config >> 8) & 0xff, res = (config >> 16) & 0xff;
  if (op != PERF_COUNT_HW_CACHE_OP_READ) return NULL;
  static const char *names[][2] = {
      [PERF_COUNT_HW_CACHE_L1D] = {"l1d-loads", "l1d-load-misses"},
      [PERF_COUNT_HW_CACHE_LL] = {"llc-loads", "llc-load-misses"},
      [PERF_COUNT_HW_CACHE_DTLB] = {"dtlb-loads", "dtlb-load-misses"},
      [PERF_COUNT_HW_CACHE_ITLB] = {"itlb-loads", "itlb-load-misses"},
  };
  if (id >= sizeof names / sizeof names[0] || !names[id][0] || res > 1) return NULL;
  return names[id][res];
}

const char *opf_pmu_kind(uint32_t type, uint64_t config) {
  switch (type) {
  case PERF_TYPE_HARDWARE:
    switch (config) {
    case PERF_COUNT_HW_CPU_CYCLES: return "cycles";
    case PERF_COUNT_HW_INSTRUCTIONS: return "instructions";
    case PERF_COUNT_HW_BRANCH_INSTRUCTIONS: return "branches";
    case PERF_COUNT_HW_BRANCH_MISSES: return "branch-misses";
    case PERF_COUNT_HW_CACHE_REFERENCES: return "cache-references";
    case PERF_COUNT_HW_CACHE_MISSES: return "cache-misses";
    default: return NULL;
    }
  case PERF_TYPE_HW_CACHE: return cache_kind(config);
#if defined(__aarch64__)
  case PERF_TYPE_RAW: /* Arm common events (the arm64 presets): the same on every core */
    switch (config) {
    case 0x11: return "cycles";
    case 0x08: return "instructions";
    case 0x21: return "branches";
    case 0x22: return "branch-misses";
    case 0x03: return "l1d-load-misses";
    case 0x04: return "l1d-loads";
    case 0x37: return "llc-load-misses";
    case 0x05: return "dtlb-load-misses";
    default: return NULL;
    }
#endif
  case PERF_TYPE_SOFTWARE:
    switch (config) {
    case PERF_COUNT_SW_TASK_CLOCK: return "task-clock";
    case PERF_COUNT_SW_CPU_CLOCK: return "cpu-clock";
    case PERF_COUNT_SW_PAGE_FAULTS: return "page-faults";
    case PERF_COUNT_SW_CONTEXT_SWITCHES: return "context-switches";
    case PERF_COUNT_SW_CPU_MIGRATIONS: return "cpu-migrations";
    default: return NULL;
    }
  default: return NULL;
  }
}

/* ---- what a generic event counts, per vendor ---------------------------------------------
 * From the kernel's generic-event tables (arch/x86/events/intel/core.c skl_hw_cache_event_ids
 * and its extra registers, arch/x86/events/amd/core.c amd_f17h_hw_cache_event_ids and
 * amd_zen*_perfmon_event_map, arch/arm64/kernel/perf_event.c armv8_pmuv3_perf_map and
 * armv8_pmuv3_perf_cache_map). Only where the generic name misleads. */
static const struct {
  const char *vendor, *kind, *note;
} k_notes[] = {
    {"intel", "l1d-load-misses",
     "L1D.REPLACEMENT: lines brought into the L1D (demand loads and stores, and L1 hardware "
     "prefetches), not load misses only"},
    {"intel", "llc-load-misses",
     "OFFCORE_RESPONSE: demand data reads that miss the L3 only; lines the hardware prefetchers "
     "bring in are not counted, so streaming operators show about 0; needs the offcore MSRs, "
     "which many virtual PMUs lack (ENXIO/EINVAL)"},
    {"intel", "llc-loads", "OFFCORE_RESPONSE: demand data reads that reach the L3"},
    {"intel", "dtlb-load-misses", "DTLB_LOAD_MISSES.WALK_COMPLETED: page walks that completed"},
    {"intel", "cycles",
     "CPU_CLK_UNHALTED.THREAD: core cycles at the actual frequency (turbo and throttling move "
     "it); with the NMI watchdog on, it takes a general-purpose counter"},
    {"amd", "l1d-load-misses",
     "L2 requests from data-cache misses (0xC860 on Zen): demand misses and L1 prefetch "
     "misses that go to the L2"},
    {"amd", "llc-load-misses",
     "not available: AMD Zen has no generic last-level-cache event (the L3 is counted by the "
     "amd_l3 uncore PMU, per CCX, not per thread)"},
    {"amd", "llc-loads", "not available: AMD Zen has no generic last-level-cache event"},
    {"amd", "dtlb-load-misses", "L1 DTLB misses (0xFF45): includes those the L2 DTLB serves"},
    {"amd", "branches", "retired branch instructions (Ex_Ret_Brn), including unconditional ones"},
    {"arm", "cycles", "CPU_CYCLES (0x11)"},
    {"arm", "instructions", "INST_RETIRED (0x08): architecturally executed instructions"},
    {"arm", "branches",
     "BR_RETIRED (0x21) where the core implements it, else PC_WRITE_RETIRED (0x0C)"},
    {"arm", "branch-misses", "BR_MIS_PRED_RETIRED (0x22), else BR_MIS_PRED (0x10)"},
    {"arm", "l1d-load-misses",
     "L1D_CACHE_REFILL (0x03): refills of the L1D from loads and stores, not loads only"},
    {"arm", "llc-load-misses",
     "LL_CACHE_MISS_RD (0x37) where the core implements it (Neoverse N1/V1/V2 do); else not "
     "supported"},
    {"arm", "dtlb-load-misses", "L1D_TLB_REFILL (0x05): refills of the L1 data TLB"},
};

static const char *machine_vendor(void) {
#if defined(__aarch64__) || defined(__arm__)
  return "arm";
#else
  static char v[16];
  if (v[0]) return v;
  FILE *f = fopen("/proc/cpuinfo", "re");
  snprintf(v, sizeof v, "unknown");
  if (!f) return v;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "vendor_id", 9) != 0) continue;
    if (strstr(line, "GenuineIntel")) snprintf(v, sizeof v, "intel");
    else if (strstr(line, "AuthenticAMD") || strstr(line, "HygonGenuine"))
      snprintf(v, sizeof v, "amd");
    break;
  }
  fclose(f);
  return v;
#endif
}

const char *opf_pmu_kind_note(const char *kind, const char *vendor) {
  if (!kind) return NULL;
  if (!vendor) vendor = machine_vendor();
  for (size_t i = 0; i < sizeof k_notes / sizeof k_notes[0]; i++)
    if (!strcmp(k_notes[i].vendor, vendor) && !strcmp(k_notes[i].kind, kind)) return k_notes[i].note;
  return NULL;
}

/* pmu_kind.c: names the generic event an encoding counts ("cycles", "l1d-load-misses", ...)
 * from its perf_event_attr type and config, whatever spelling the user chose, so derived
 * metrics (src/metrics.c) can find their inputs. Model-specific raw events have no kind. */
#include <linux/perf_event.h>
#include <stddef.h>

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

/* metrics.c: the derived-metric table and its evaluation (see metrics.h). Adding a metric is
 * one row: its inputs are event kinds (from pmu_kind.c) or the model terms starting with '@'. */
#include <string.h>

#include "opperf/metrics.h"

static const opf_metric_def defs[] = {
    {"gflops", "GFLOP/s", "@flops", "@time", 1e-9, "GFLOP/s", "model flops per second at the median time"},
    {"gbps", "GB/s", "@bytes", "@time", 1e-9, "GB/s", "model minimum traffic per second at the median time"},
    {"intensity", "FLOP/B", "@flops", "@bytes", 1, "FLOP/byte", "arithmetic intensity of the models"},
    {"roofline_pct", "roofline", "@mintime", "@time", 100, "%", "roofline's shortest time (compute or memory bound) as a share of the median time"},
    {"ipc", "IPC", "instructions", "cycles", 1, "", "instructions per cycle"},
    {"cpi", "CPI", "cycles", "instructions", 1, "", "cycles per instruction"},
    {"branch_miss_pct", "br-miss", "branch-misses", "branches", 100, "%", "mispredicted share of branches"},
    {"l1d_miss_pct", "L1D miss", "l1d-load-misses", "l1d-loads", 100, "%", "L1 data misses over loads (Intel: L1D.REPLACEMENT, every line brought in, prefetches and stores too; Arm: L1D_CACHE_REFILL; AMD Zen: L2 requests from L1D misses)"},
    {"l1d_mpki", "L1D MPKI", "l1d-load-misses", "instructions", 1000, "", "L1 data misses (as l1d_miss_pct counts them) per 1000 instructions"},
    {"llc_miss_pct", "LLC miss", "llc-load-misses", "llc-loads", 100, "%", "last-level cache load miss ratio (Intel: demand data reads only, prefetched lines not counted; AMD Zen: no such event)"},
    {"llc_mpki", "LLC MPKI", "llc-load-misses", "instructions", 1000, "", "LLC load misses per 1000 instructions (Intel: demand data reads only)"},
    {"dtlb_mpki", "dTLB MPKI", "dtlb-load-misses", "instructions", 1000, "", "dTLB load misses per 1000 instructions"},
};

int opf_metric_count(void) { return (int)(sizeof defs / sizeof defs[0]); }
const opf_metric_def *opf_metric_at(int i) { return i >= 0 && i < opf_metric_count() ? &defs[i] : NULL; }

static const opf_event_result *find_kind(const opf_result *r, const char *kind) {
  for (int i = 0; i < r->n_events; i++)
    if (r->events[i].has_value && !strcmp(r->events[i].kind, kind)) return &r->events[i];
  return NULL;
}

/* Model terms: work, traffic, time per call, and the roofline's shortest time per call (so
 * that mintime / time is the achieved share of the roofline). 0 when unknown. */
static double model_term(const opf_result *r, const char *t) {
  if (!strcmp(t, "@flops")) return r->flops;
  if (!strcmp(t, "@bytes")) return r->bytes;
  /* Times taken under valgrind (--backend callgrind) are not real: no time-based metric. */
  if (!strcmp(t, "@time")) return r->simulated ? 0 : r->time.median;
  if (!strcmp(t, "@mintime")) return r->simulated ? 0 : r->roofline_time;
  return 0;
}

int opf_metric_value(const opf_result *r, int i, double *v) {
  const opf_metric_def *d = opf_metric_at(i);
  if (!d || r->status != OPF_ST_OK) return 0;
  if (d->num[0] == '@') {
    double a = model_term(r, d->num), b = model_term(r, d->den);
    if (!(a > 0) || !(b > 0)) return 0;
    *v = a / b * d->scale;
    return 1;
  }
  const opf_event_result *n = find_kind(r, d->num), *m = find_kind(r, d->den);
  /* Ratios of counters only within one group (counts scheduled at different times do not
   * describe the same instructions) and of one privilege level, as a ratio of sums over the
   * same samples (a group's members are read in the same samples), not of two medians. */
  if (!n || !m || n->group != m->group || n->group < 0 || !(m->mean_per_call > 0)) return 0;
  if (strcmp(n->plm, m->plm) != 0) return 0;
  *v = n->mean_per_call / m->mean_per_call * d->scale;
  return 1;
}

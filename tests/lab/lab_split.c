/* lab_split.c: PMU lab (b) and (c) through opperf's API. (b) More hardware events than the PMU
 * has counters (cycle counter + 6 here): opperf must split them into groups that all get
 * scheduled, so every event ends counted or scaled with a value, never "not counted" for ever.
 * (c) Many groups multiplexed: every instructions-counting event (instructions, r08), scaled
 * by enabled/running, lands within 1% of the truth, and says it ran part of the time. */
#include "lab.h"

#define N 50000000ULL /* 100M instructions = 100 ms of guest time = ~25 mux rotations (4 ms) */

static void run(const char *name, const char *events, uint64_t truth, int want_scaled) {
  opf_pmu *p = lab_opf_open(name, events);
  if (!p) return;
  uint64_t n = N;
  lab_meas m;
  /* up to 3 measurements: a split decided at the first read may only take effect later */
  int round, all_ran = 0;
  for (round = 1; round <= 3 && !all_ran; round++) {
    if (lab_measure(p, lab_work_loop, &n, &m) != OPF_OK) {
      LAB_FAIL(name, "opf_pmu_read failed");
      goto out;
    }
    all_ran = 1;
    for (size_t i = 0; i < opf_pmu_count(p); i++) all_ran &= m.ok[i];
  }
  lab_note_events(name, p, &m);
  size_t n_ev = opf_pmu_count(p), n_grp = 0, n_scaled = 0, n_ins = 0;
  int groups[OPF_PMU_MAX_EVENTS + 1] = {0};
  for (size_t i = 0; i < n_ev; i++) {
    const opf_pmu_event *ev = opf_pmu_event_at(p, i);
    if (ev->group >= 0 && ev->group < OPF_PMU_MAX_EVENTS && !groups[ev->group]++) n_grp++;
  }
  for (size_t i = 0; i < n_ev; i++) {
    const opf_pmu_event *ev = opf_pmu_event_at(p, i);
    if (!m.ok[i]) {
      LAB_FAIL(name, "%zu events in %zu groups: '%s' (group %d, %s) never ran in 3 measurements "
               "(not counted)", n_ev, n_grp, ev->name, ev->group, opf_ev_status_name(ev->status));
      goto out;
    }
    if (m.frac[i] < 1.0) n_scaled++;
    if (lab_is_insns(p, i)) {
      n_ins++;
      if (lab_rel(m.value[i], (double)truth) > 0.01) {
        LAB_FAIL(name, "'%s' scaled to %.0f (running %.1f%%), truth %llu: off by %.2f%% (> 1%%)",
                 ev->name, m.value[i], 100 * m.frac[i], (unsigned long long)truth,
                 100 * lab_rel(m.value[i], (double)truth));
        goto out;
      }
    }
  }
  if (n_ins == 0) {
    LAB_FAIL(name, "no instructions event in the set: nothing to compare with the truth");
    goto out;
  }
  if (want_scaled && n_scaled < n_ev) {
    LAB_FAIL(name, "%zu of %zu events ran all the time with more events than counters", n_ev - n_scaled, n_ev);
    goto out;
  }
  double worst = 0;
  for (size_t i = 0; i < n_ev; i++)
    if (lab_is_insns(p, i) && lab_rel(m.value[i], (double)truth) > worst)
      worst = lab_rel(m.value[i], (double)truth);
  LAB_PASS(name, "%zu events in %zu groups all ran (measurement %d); %zu scaled; %zu instructions "
           "events within %.3f%% of the truth %llu", n_ev, n_grp, round - 1, n_scaled, n_ins,
           100 * worst, (unsigned long long)truth);
out:
  opf_pmu_free(p);
}

int main(void) {
  uint64_t truth = lab_raw_loop_insns(N);
  if (!truth) {
    LAB_FAIL("split", "no ground truth: instructions does not count (%s)", strerror(errno));
    return lab_exit();
  }
  LAB_NOTE("split: truth (one raw instructions counter) = %llu", (unsigned long long)truth);
  /* (b) 8 events: cycles + instructions + 6 raw (0x11 on a general counter when the cycle
   * counter is taken); the group of 8 does not fit the cycle counter + 6 counters. */
  run("split_8", "cycles,instructions,r03,r04,r08,r11,r1b,r00", truth, 1);
  /* (b) 10 events */
  run("split_10", "cycles,instructions,r03,r04,r08,r11,r1b,r00,r01,r02", truth, 1);
  /* (c) 16 events: many groups multiplexed */
  run("mux_16", "cycles,instructions,r00,r01,r02,r03,r04,r05,r08,r10,r11,r12,r13,r1b,r21,r22",
      truth, 1);
  return lab_exit();
}

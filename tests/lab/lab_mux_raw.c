/* lab_mux_raw.c: PMU lab (c), the kernel's ground truth of multiplexing: 12 one-event groups
 * counting instructions on a PMU with 6 event counters each run about half the time, and
 * value * enabled / running lands within 1% of the loop's exact count. */
#include "lab.h"

#define N 50000000ULL
#define K 12

int main(void) {
  const char *name = "mux_raw";
  uint64_t truth = lab_raw_loop_insns(N);
  if (!truth) {
    LAB_FAIL(name, "no ground truth: instructions does not count (%s)", strerror(errno));
    return lab_exit();
  }
  int fd[K];
  lab_count a[K], b[K];
  for (int k = 0; k < K; k++) {
    struct perf_event_attr at = lab_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0);
    fd[k] = lab_perf_open(&at, 0, -1, -1);
    if (fd[k] < 0) {
      LAB_FAIL(name, "event %d of %d did not open: %s", k + 1, K, strerror(errno));
      return lab_exit();
    }
  }
  for (int k = 0; k < K; k++) lab_read1(fd[k], &a[k]);
  lab_loop(N);
  for (int k = 0; k < K; k++) lab_read1(fd[k], &b[k]);
  double worst = 0, fmin = 1, fmax = 0;
  for (int k = 0; k < K; k++) {
    uint64_t dv = b[k].value - a[k].value, de = b[k].enabled - a[k].enabled,
             dr = b[k].running - a[k].running;
    double f = de ? (double)dr / (double)de : 0;
    double v = dr ? (double)dv * (double)de / (double)dr : 0;
    LAB_NOTE("mux_raw: group %2d raw %llu running %.1f%% scaled %.0f", k, (unsigned long long)dv,
             100 * f, v);
    if (f < fmin) fmin = f;
    if (f > fmax) fmax = f;
    if (lab_rel(v, (double)truth) > worst) worst = lab_rel(v, (double)truth);
  }
  if (fmax >= 1.0 || fmin <= 0.0)
    LAB_FAIL(name, "%d groups on 6 counters should all multiplex: running %.1f%%..%.1f%%", K,
             100 * fmin, 100 * fmax);
  else if (worst > 0.01)
    LAB_FAIL(name, "a scaled count is %.2f%% off the truth %llu (> 1%%)", 100 * worst,
             (unsigned long long)truth);
  else
    LAB_PASS(name, "%d one-event groups ran %.1f%%..%.1f%% of the time; scaled counts within "
             "%.3f%% of the truth %llu", K, 100 * fmin, 100 * fmax, 100 * worst,
             (unsigned long long)truth);
  return lab_exit();
}

/* overhead.c: the harness's own cost per sample, measured on an empty operator: the two clock
 * reads around a sample, and those plus the two counter snapshots of a preset (the work
 * opf_measure adds to every sample). Medians over many samples; a counter set that does not
 * open is reported absent (-1), not estimated. Fills opf_context.overhead for the run command. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/harness.h"
#include "opperf/pmu.h"

enum { PER_ROUND = 16, MIN_ROUNDS = 15, MAX_ROUNDS = 201 };
#define ROUND_BUDGET_S 0.05 /* per list: stop adding rounds after this, once MIN_ROUNDS ran */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One sample of the harness on an empty operator, as opf_measure does it: snapshot, clock,
 * (no call), clock, snapshot. */
static inline double empty_sample(opf_pmu *pmu, opf_pmu_snap *sa, opf_pmu_snap *sb) {
  if (pmu) opf_pmu_read_begin(pmu, sa);
  double b = opf_now();
  double e = opf_now();
  if (pmu) opf_pmu_read(pmu, sb);
  return e - b;
}

/* Median over rounds of the mean time of PER_ROUND consecutive samples. */
static double per_sample(opf_pmu *pmu) {
  opf_pmu_snap *sa = pmu ? opf_pmu_snap_new() : NULL, *sb = pmu ? opf_pmu_snap_new() : NULL;
  if (pmu && (!sa || !sb)) {
    opf_pmu_snap_free(sa);
    opf_pmu_snap_free(sb);
    return NAN;
  }
  volatile double sink = 0;
  for (int i = 0; i < PER_ROUND; i++) sink += empty_sample(pmu, sa, sb); /* warm up */
  double per[MAX_ROUNDS];
  int n = 0;
  double start = opf_now();
  while (n < MAX_ROUNDS && (n < MIN_ROUNDS || opf_now() - start < ROUND_BUDGET_S)) {
    double t0 = opf_now();
    for (int i = 0; i < PER_ROUND; i++) sink += empty_sample(pmu, sa, sb);
    per[n++] = (opf_now() - t0) / PER_ROUND;
  }
  (void)sink;
  opf_pmu_snap_free(sa);
  opf_pmu_snap_free(sb);
  qsort(per, (size_t)n, sizeof per[0], cmp_double);
  return n % 2 ? per[n / 2] : 0.5 * (per[n / 2 - 1] + per[n / 2]);
}

static int is_timer_only(const char *s) {
  return !s || !*s || strcmp(s, "timer") == 0;
}

int opf_overhead_measure(const char *const *presets, int n, double *out_per_sample, opf_err *err) {
  if (n < 0 || (n > 0 && (!presets || !out_per_sample)))
    return opf_err_set(err, OPF_EINVAL, "opf_overhead_measure: bad arguments");
  for (int i = 0; i < n; i++) out_per_sample[i] = -1.0;
  /* Names first, so a typo costs no measuring. */
  for (int i = 0; i < n; i++) {
    if (is_timer_only(presets[i])) continue;
    opf_pmu *p = NULL;
    int rc = opf_pmu_create(&p, presets[i], NULL, err);
    opf_pmu_free(p);
    if (rc != OPF_OK) return rc;
  }
  for (int i = 0; i < n; i++) {
    if (is_timer_only(presets[i])) {
      out_per_sample[i] = per_sample(NULL);
      continue;
    }
    opf_pmu *p = NULL;
    int rc = opf_pmu_create(&p, presets[i], NULL, err);
    if (rc != OPF_OK) return rc;
    opf_err oerr;
    if (opf_pmu_open(p, &oerr) == OPF_OK && opf_pmu_n_open(p) > 0) {
      opf_pmu_snap *s = opf_pmu_snap_new();
      if (s && opf_pmu_read(p, s) == OPF_OK) { /* a set that cannot be read is absent too */
        double v = per_sample(p);
        if (isfinite(v) && v > 0) out_per_sample[i] = v;
      }
      opf_pmu_snap_free(s);
    }
    opf_pmu_free(p);
  }
  return OPF_OK;
}

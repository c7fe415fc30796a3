/* abtest.c: paired A/B measurement (include/opperf/abtest.h). Each round measures A and B
 * once each, alternating which goes first (A B, B A, ...), with the run's own settings; the
 * per-round ratio of medians pairs measurements taken a moment apart under the same load, so
 * slow machine-wide drift (other tenants, frequency, thermal) divides out. The estimate is the
 * geometric mean of the round ratios with a Student t interval on their logarithms (rounds
 * are few, 10 by default: an order-statistics interval of 10 values spans most of them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/abtest.h"

/* Student's t, 97.5% quantile, for 1..30 degrees of freedom (then the normal 1.96 is within 4%;
 * a table, not a guess: any statistics text has it). */
static const double t975[31] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                2.201,  2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                2.080,  2.074,  2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};

int opf_ab_ratio(const double *r, int n, double *ratio, double *lo, double *hi) {
  if (n < 1) return OPF_EINVAL;
  double m = 0, ss = 0;
  for (int i = 0; i < n; i++) {
    if (!(r[i] > 0)) return OPF_EINVAL;
    m += log(r[i]);
  }
  m /= n;
  for (int i = 0; i < n; i++) ss += (log(r[i]) - m) * (log(r[i]) - m);
  *ratio = exp(m);
  *lo = *hi = 0;
  if (n >= OPF_AB_MIN_ROUNDS) {
    double half = (n - 1 <= 30 ? t975[n - 1] : 1.96) * sqrt(ss / (n - 1) / n);
    *lo = exp(m - half);
    *hi = exp(m + half);
  }
  return OPF_OK;
}

static int measure_into(const opf_settings *s, opf_case *c, const char *set, opf_pass pass, opf_pmu *pmu,
                        int first, opf_result *acc) {
  opf_result r;
  if (first) opf_result_release(acc);
  opf_measure(s, c, set, pass, pmu, first ? acc : &r);
  if (!first) opf_result_merge(acc, &r); /* releases r */
  return acc->status == OPF_ST_OK ? 0 : -1;
}

int opf_measure_ab(const opf_settings *s, opf_case *a, opf_case *b, const char *set, opf_pass pass,
                   opf_pmu *pmu, int rounds, opf_result *ra, opf_result *rb) {
  if (rounds < 2) rounds = 2;
  if (rounds > OPF_MAX_REPS) rounds = OPF_MAX_REPS;
  double ratios[OPF_MAX_REPS];
  int n = 0, fail = 0;
  opf_result_init(ra, a, set, pass, pmu);
  opf_result_init(rb, b, set, pass, pmu); /* named even when A fails before B runs */
  for (int k = 0; k < rounds && !fail; k++) {
    if (k % 2 == 0) fail = measure_into(s, a, set, pass, pmu, k == 0, ra) || measure_into(s, b, set, pass, pmu, k == 0, rb);
    else fail = measure_into(s, b, set, pass, pmu, 0, rb) || measure_into(s, a, set, pass, pmu, 0, ra);
    if (fail) break;
    double ma = ra->rep_median[ra->n_reps - 1], mb = rb->rep_median[rb->n_reps - 1];
    if (ma > 0 && mb > 0) ratios[n++] = ma / mb;
  }
  snprintf(ra->ab_vs, sizeof ra->ab_vs, "%s", rb->impl);
  ra->ab_rounds = n;
  memcpy(ra->ab_round, ratios, sizeof ratios[0] * (size_t)n);
  if (n) opf_ab_ratio(ratios, n, &ra->ab_ratio, &ra->ab_lo, &ra->ab_hi);
  return OPF_OK;
}

/* abtest.h: paired A/B measurement on a noisy machine. Two implementations of one case are
 * measured in interleaved rounds (A B, B A, A B, ...: each round a short measurement of each,
 * so both see the same machine state and drift cancels); the ratio of their medians is taken
 * per round and reported as the rounds' geometric mean with a 95% confidence interval. See
 * src/abtest.c. */
#ifndef OPPERF_ABTEST_H
#define OPPERF_ABTEST_H

#include "opperf/harness.h"

#define OPF_AB_MIN_ROUNDS 3 /* fewer rounds give a ratio but no interval */

/* The paired estimate from n per-round ratios: their geometric mean and its 95% interval
 * (Student t on the logarithms; 0 and 0 when n < OPF_AB_MIN_ROUNDS). OPF_EINVAL when n < 1
 * or a ratio is not positive. */
int opf_ab_ratio(const double *round_ratios, int n, double *ratio, double *lo, double *hi);

/* Measure a and b (the same case under two implementations, initialised, not allocated) in
 * `rounds` interleaved rounds (2..OPF_MAX_REPS) with settings s; ra and rb receive the merged
 * results of each side (samples of every round, rep_median per round) and ra the paired ratio
 * A/B (ab_* members: the paired estimate, and what two separate runs would have said). A
 * failed round fails its side (status and message) and stops. */
int opf_measure_ab(const opf_settings *s, opf_case *a, opf_case *b, const char *set, opf_pass pass,
                   opf_pmu *pmu, int rounds, opf_result *ra, opf_result *rb);

#endif

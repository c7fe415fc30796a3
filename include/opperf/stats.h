/* stats.h: statistics over per-call sample times (src/stats.c): the summary (min, median,
 * mean, percentiles, spread, MAD outliers) and the distribution-free interval of the median. */
#ifndef OPPERF_STATS_H
#define OPPERF_STATS_H

/* The distribution-free 95% confidence interval of the median of n samples (order statistics
 * around n/2 +- 0.98 sqrt(n), the binomial's normal approximation; sorted must be ascending).
 * Returns 0, or -1 when n is too small (< 8) for one. */
int opf_median_ci95(const double *sorted, int n, double *lo, double *hi);
/* Sort n doubles ascending in place. */
void opf_sort_doubles(double *v, int n);

typedef struct opf_stats {
  int n;
  double min, median, mean, p90, p99, max, stddev, cv;
  double mad;   /* 1.4826 x median absolute deviation: a robust standard deviation */
  int outliers; /* samples further than 3 scaled MADs from the median */
} opf_stats;
/* x is not modified; returns OPF_EINVAL for n == 0. */
int opf_stats_compute(const double *x, int n, opf_stats *s);

#endif

/* stats.c: per-case statistics over per-call sample times: min, median, mean, p90, p99, max,
 * standard deviation, coefficient of variation, and a MAD-based outlier count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/error.h"
#include "opperf/stats.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void opf_sort_doubles(double *v, int n) {
  if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_double);
}

/* Linear interpolation between closest ranks (NumPy's default "linear" percentile). */
static double percentile(const double *sorted, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)floor(pos);
  int hi = lo + 1 < n ? lo + 1 : lo;
  double f = pos - lo;
  return sorted[lo] + (sorted[hi] - sorted[lo]) * f;
}

int opf_stats_compute(const double *x, int n, opf_stats *s) {
  memset(s, 0, sizeof *s);
  if (n <= 0) return OPF_EINVAL;
  double *v = malloc(sizeof *v * (size_t)n * 2);
  if (!v) return OPF_ENOMEM;
  memcpy(v, x, sizeof *v * (size_t)n);
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  s->n = n;
  s->min = v[0];
  s->max = v[n - 1];
  s->median = percentile(v, n, 0.5);
  s->p90 = percentile(v, n, 0.9);
  s->p99 = percentile(v, n, 0.99);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += v[i];
  s->mean = sum / n;
  double ss = 0;
  for (int i = 0; i < n; i++) ss += (v[i] - s->mean) * (v[i] - s->mean);
  s->stddev = n > 1 ? sqrt(ss / (n - 1)) : 0;
  s->cv = s->mean > 0 ? s->stddev / s->mean : 0;
  /* Outliers: further than 3 scaled MADs (1.4826 * MAD estimates sigma for normal data). */
  double *dev = v + n;
  for (int i = 0; i < n; i++) dev[i] = fabs(v[i] - s->median);
  qsort(dev, (size_t)n, sizeof *dev, cmp_double);
  double mad = 1.4826 * percentile(dev, n, 0.5);
  s->mad = mad;
  for (int i = 0; i < n; i++)
    if (mad > 0 ? fabs(v[i] - s->median) > 3 * mad : v[i] != s->median) s->outliers++;
  free(v);
  return OPF_OK;
}

int opf_median_ci95(const double *sorted, int n, double *lo, double *hi) {
  /* ranks (1-based) j = floor((n - 1.96 sqrt n) / 2), k = ceil(1 + (n + 1.96 sqrt n) / 2):
   * P(x_(j) <= median <= x_(k)) >= 0.95 for any continuous distribution (normal approximation
   * of the binomial; e.g. n = 25: [x_7, x_19]). */
  if (!sorted || n < 8) return -1;
  double h = 1.96 * sqrt((double)n);
  int j = (int)floor(((double)n - h) / 2), k = (int)ceil(1 + ((double)n + h) / 2);
  if (j < 1 || k > n) return -1;
  *lo = sorted[j - 1];
  *hi = sorted[k - 1];
  return 0;
}

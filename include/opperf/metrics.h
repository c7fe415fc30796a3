/* metrics.h: derived metrics from one data table: IPC, CPI, branch-miss ratio, L1D/LLC miss
 * ratios and MPKI, dTLB MPKI (from counters measured in the same group), and GFLOP/s, GB/s,
 * arithmetic intensity and % of roofline (from the operator's models and the machine's
 * ceilings). A metric whose inputs are absent is absent: never a fake 0 or NaN. */
#ifndef OPPERF_METRICS_H
#define OPPERF_METRICS_H

#include "opperf/harness.h"

typedef struct opf_metric_def {
  const char *name;     /* "ipc" (also the JSON key and CSV column) */
  const char *label;    /* "IPC" (table header) */
  const char *num;      /* event kind of the numerator, or "@flops" / "@bytes" */
  const char *den;      /* event kind of the denominator, or "@time" / "@bytes" / "@bound" */
  double scale;         /* 100 for percentages, 1000 for MPKI, 1e-9 for G-units */
  const char *unit;
  const char *help;
} opf_metric_def;

int opf_metric_count(void);
const opf_metric_def *opf_metric_at(int i);

/* Value of metric i for a result: 1 with *v set when its inputs are present (counters
 * counted or scaled in one group, a positive time, a model, a roofline bound), else 0. */
int opf_metric_value(const opf_result *r, int i, double *v);

#endif

/* changepoint.h: change points in a series of per-run medians, each with its own spread (the
 * width of its confidence interval): PELT (Killick, Fearnhead and Eckley 2012) on a weighted
 * Gaussian mean-shift cost in log space. Pure functions: no I/O, no allocation visible to the
 * caller beyond the output array it passes. Used by the results store (opperf history
 * --changes) and tested on synthetic series (tests/unit/test_changepoint.c). */
#ifndef OPPERF_CHANGEPOINT_H
#define OPPERF_CHANGEPOINT_H

#include "opperf/error.h"

typedef struct opf_cp_opts {
  double penalty;   /* cost of one change, in units of the chi-square cost; <= 0: 4 ln n
                     * (above the modified BIC's 3 ln n: see src/changepoint.c) */
  int min_seg;      /* shortest segment in points; <= 0: 2 (a one-run blip is not a step) */
  double min_change; /* smallest relative step reported (0.05 = 5%); < 0: 0.05; 0: any */
} opf_cp_opts;

typedef struct opf_cp_change {
  int index;        /* first point of the new segment */
  double before, after; /* weighted geometric means of the segments on either side */
  double change;    /* after / before - 1 */
} opf_cp_change;

/* Find the change points of n values (> 0: times) with 95% confidence intervals lo[i]..hi[i]
 * (NULL, or lo = hi = 0 for a point without one). Writes at most max changes into out, in
 * order, and their number into *n_out. OPF_EINVAL for n < 0, a non-positive or non-finite
 * value; OPF_ENOMEM when the work arrays cannot be allocated. */
int opf_changepoints(const double *x, const double *lo, const double *hi, int n,
                     const opf_cp_opts *o, opf_cp_change *out, int max, int *n_out, opf_err *err);

/* A robust estimate of the run-to-run noise: the standard deviation in log space of one point
 * around its segment mean from successive differences (1.4826 x median |ln x[i+1] - ln x[i]| /
 * sqrt 2, Hall, Kay and Titterington 1990), which a step barely moves. */
double opf_cp_noise(const double *x, int n);

#endif

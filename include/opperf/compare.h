/* compare.h: comparing two opperf JSON reports (a stored baseline and a new run) case by case,
 * with a Mann-Whitney U test on the raw samples and a change threshold, raised to the
 * run-to-run spread when the runs measured repetitions (--repetitions): the regression gate
 * behind `opperf compare` and `opperf run --compare-baseline`. */
#ifndef OPPERF_COMPARE_H
#define OPPERF_COMPARE_H

#include "opperf/error.h"

/* Two-sided Mann-Whitney U test of samples a and b: U of a, and the p-value (exact for small
 * samples without ties, normal approximation with tie and continuity corrections otherwise).
 * OPF_EINVAL when either sample is empty. */
int opf_mann_whitney(const double *a, int na, const double *b, int nb, double *u, double *p);

typedef enum opf_verdict {
  OPF_V_UNCHANGED = 0,
  OPF_V_IMPROVED,
  OPF_V_REGRESSED,
  OPF_V_NOISE,     /* beyond the threshold but not significant */
  OPF_V_MISSING,   /* in the baseline only */
  OPF_V_NEW,       /* in the new run only */
  OPF_V_BROKEN,    /* ok in the baseline, failed (error, crashed, timeout) in the new run */
  OPF_V_FAILED,    /* not ok in the baseline (nothing to compare) */
  OPF_NVERDICTS
} opf_verdict;
const char *opf_verdict_name(opf_verdict v);

typedef struct opf_cmp_row {
  char op[64], category[32], impl[16], set[16], spec[256], params[160], dtype[12], pass[8];
  opf_verdict verdict;
  double base, cur;  /* metric medians (time: s/call) */
  double change;     /* cur / base - 1 */
  double p;          /* Mann-Whitney p-value; NaN when there are no samples to test */
  int n_base, n_cur; /* samples */
  double noise;      /* run-to-run spread of the time: the larger relative range (max - min) /
                      * median of either side's repetition medians; 0 without repetitions */
  char note[96];     /* e.g. the new run's failure status */
  int rounds;        /* opf_compare_paired: rounds that gave a ratio (0: not paired) */
  double ci_lo, ci_hi; /* ... and the 95% interval of the change (cur/base - 1) */
} opf_cmp_row;

typedef struct opf_cmp_opts {
  const char *metric; /* "time" (default), "instructions", "cycles" or a counter name */
  double threshold;   /* relative change, e.g. 0.05 */
  double alpha;       /* significance level, e.g. 0.05 */
  int force;          /* compare even when the contexts differ */
  int paired;         /* the CLI's --paired: lists of reports measured in alternating rounds */
} opf_cmp_opts;

typedef struct opf_cmp_cat {
  char name[32];
  int n;
  double geomean; /* geometric mean of cur/base over the compared cases */
} opf_cmp_cat;

typedef struct opf_cmp_report {
  int n_rows;
  opf_cmp_row *rows;
  int counts[OPF_NVERDICTS];
  int n_cats;
  opf_cmp_cat cats[64];
  double geomean; /* over all compared cases */
  char base_cpu[128], cur_cpu[128];
  char warning[256]; /* context differences that were allowed (--force) */
} opf_cmp_report;

/* Compare two report files. OPF_EINVAL (with a message) for unreadable or non-opperf files,
 * an unknown metric, and contexts that differ in CPU model, threads, backend or dtypes unless
 * o->force. */
int opf_compare_files(const char *base, const char *cur, const opf_cmp_opts *o,
                      opf_cmp_report *rep, opf_err *err);
/* Paired comparison of two builds measured in alternating rounds: base[k] and cur[k] ran back
 * to back (k < n, n >= 2). Each case's change is the geometric mean of its round ratios
 * (cur/base of the metric's medians) with a Student t interval (opf_ab_ratio): regressed when
 * the change exceeds the threshold and the interval lies above no change, improved likewise
 * below, noise when beyond the threshold with an interval that includes no change. base and
 * cur of a row are the geometric means of the rounds' medians. Errors as opf_compare_files,
 * for any pair. */
int opf_compare_paired(const char *const *base, const char *const *cur, int n, const opf_cmp_opts *o,
                       opf_cmp_report *rep, opf_err *err);
void opf_cmp_report_free(opf_cmp_report *rep);

#endif

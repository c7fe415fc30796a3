/* profile.h: the in-process sampling profiler (`opperf run --profile`). A sampler (pmu/sampler.c)
 * takes perf_event samples with user call chains on every thread, enabled only inside measured
 * samples through the region hooks; the profiler (src/profile.c) resolves them to function names
 * (/proc/self/maps and ELF symbol tables, src/elfinfo.c) and summarises each case and pass. */
#ifndef OPPERF_PROFILE_H
#define OPPERF_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/error.h"
#include "opperf/harness.h"
#include "opperf/pmu.h" /* the sampler */

/* ---- the profiler ---- */
#define OPF_PROFILE_DEFAULT_HZ 4000
#define OPF_PROFILE_DEFAULT_TOP 10

typedef struct opf_profile_opts {
  const char *event; /* "cpu-clock" (default when NULL) or "cycles" */
  int hz;            /* 0: OPF_PROFILE_DEFAULT_HZ */
  int top;           /* functions kept per result, 0: OPF_PROFILE_DEFAULT_TOP */
  int folded;        /* also keep folded stacks (opf_result.folded) */
} opf_profile_opts;

typedef struct opf_profile opf_profile;
int opf_profile_open(opf_profile **out, const opf_profile_opts *o, opf_err *err);
/* The hooks to add to the run's chain: sample_begin/sample_end enable/disable sampling (and
 * drain ring buffers more than half full), case_end drains and resolves the case's samples. */
opf_region_hooks opf_profile_hooks(opf_profile *p);
/* After opf_measure: move the case's profile (r->profile, r->folded) into r and start afresh
 * for the next case (a case that failed before case_end gets none). Also opens events on
 * threads created meanwhile. */
int opf_profile_attach(opf_profile *p, opf_result *r, opf_err *err);
void opf_profile_close(opf_profile *p);

/* Folded stacks: merge the lines of b into *a (identical stacks add their counts; lines sorted).
 * *a may be NULL. OPF_ENOMEM or OPF_EINVAL (a line without a count). */
int opf_folded_merge(char **a, size_t *a_len, const char *b, size_t b_len);
/* Merge repetition rep's profile into acc's (opf_result_merge): shares weighted by samples,
 * counts added, folded stacks merged. rep keeps its own (released by the caller). */
void opf_profile_merge(opf_result *acc, opf_result *rep);
/* The order of a profile's function list (qsort): self share, then total share, descending. */
int opf_profile_func_cmp(const void *a, const void *b);

#endif

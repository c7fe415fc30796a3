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

/* ---- the sampler: raw samples from the kernel's ring buffers ---- */
typedef struct opf_sampler opf_sampler;
/* Open one sampling event per thread of this process that exists now (/proc/self/task), each
 * with its own ring buffer, disabled. event: "cpu-clock" (software: works without a PMU) or
 * "cycles" (hardware); hz samples per second of a thread's CPU time. User space only
 * (exclude_kernel): time a thread spends in the kernel is sampled at the user-space
 * instruction that entered it. OPF_EINVAL for a bad event or rate; OPF_EUNSUPPORTED (with the
 * errno's reason: perf_event_paranoid, CAP_PERFMON, no PMU) when the kernel refuses. */
int opf_sampler_open(opf_sampler **out, const char *event, int hz, opf_err *err);
/* Open events on threads created since the last open or refresh (call between cases). */
int opf_sampler_refresh(opf_sampler *s, opf_err *err);
void opf_sampler_enable(opf_sampler *s);
void opf_sampler_disable(opf_sampler *s);
/* One sample: its call chain, leaf first (kernel context markers dropped), n >= 1. */
typedef void (*opf_sample_fn)(void *ctx, const uint64_t *ips, int n);
/* Read every ring buffer (only those more than half full when half_full), calling fn per sample. */
void opf_sampler_drain(opf_sampler *s, int half_full, opf_sample_fn fn, void *ctx);
/* Totals since open: samples the kernel lost (ring buffer full) and throttling events. */
void opf_sampler_counts(const opf_sampler *s, uint64_t *lost, uint64_t *throttled);
int opf_sampler_threads(const opf_sampler *s);
void opf_sampler_close(opf_sampler *s);

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

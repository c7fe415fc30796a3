/* harness.h: run settings, results, and the measurement of one case and pass (src/harness.c):
 * warm-up, batch calibration, samples, statistics, memory and counters; the harness's own cost
 * (src/overhead.c). Cases (case.h), statistics (stats.h) and the timer (timer.h) have headers
 * of their own, included here for the programs that include this one. */
#ifndef OPPERF_HARNESS_H
#define OPPERF_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/case.h"
#include "opperf/machine.h"
#include "opperf/op.h"
#include "opperf/pmu.h"
#include "opperf/stats.h"
#include "opperf/timer.h"

/* ---- settings ---- */
typedef enum opf_cache_mode { OPF_CACHE_WARM = 0, OPF_CACHE_COLD = 1 } opf_cache_mode;
typedef enum opf_alloc_mode { OPF_ALLOC_SETUP = 0, OPF_ALLOC_PER_CALL = 1 } opf_alloc_mode;

typedef struct opf_result opf_result;

/* Hooks around the measured region (callgrind client requests, perf record control): called
 * right around each sample's calls (not around warm-up, calibration or counter reads), and
 * once when a case's measurement ends. Any member may be NULL. */
typedef struct opf_region_hooks {
  void (*sample_begin)(void *ctx);
  void (*sample_end)(void *ctx);
  void (*case_end)(void *ctx, const opf_result *r);
  void *ctx;
} opf_region_hooks;

/* Several consumers of the measured region at once (callgrind, perf record control, the
 * sampling profiler): a chain calls its members' begin hooks in the order added and their end
 * hooks in reverse, so the first added brackets all others. opf_hook_chain_hooks gives the
 * combined hooks for opf_settings.hooks (ctx = the chain, which must outlive the measurement). */
#define OPF_MAX_HOOKS 4
typedef struct opf_hook_chain {
  opf_region_hooks h[OPF_MAX_HOOKS];
  int n;
} opf_hook_chain;
/* OPF_OK, or OPF_EINVAL when the chain is full. */
int opf_hook_chain_add(opf_hook_chain *ch, const opf_region_hooks *h);
opf_region_hooks opf_hook_chain_hooks(opf_hook_chain *ch);

#define OPF_WARMUP_MIN 0.01 /* seconds of warm-up before it may end as settled */
/* CPU contention (src/schedstat.c): run-queue wait / (sampling loop wall time x threads in
 * use). Quiet machine: 0-1% (2 threads) and 0% (1 thread); both threads pinned to one CPU or a
 * busy-loop co-runner: 25-50% (README, "adaptive stop"). */
#define OPF_CONTENTION_THRESHOLD 0.05
#define OPF_CONTENTION_RETRIES 2   /* default --contention-retries */
#define OPF_MAX_ATTEMPTS 8         /* 1 + the most retries */
#define OPF_CONTENTION_PAUSE 0.02  /* seconds between attempts (the scheduler may spread the
                                      threads again meanwhile) */

typedef struct opf_settings {
  double warmup;      /* at most this many seconds of warm-up calls (at least one call) ... */
  double warmup_settle; /* ... ending early once two consecutive chunks of calls agree per call
                         within this share, after OPF_WARMUP_MIN (0: always the full warmup) */
  double min_time;    /* measure at least this many seconds per case and pass */
  double max_time;    /* ... and stop after this many (when min_runs are reached) */
  double ci_target;   /* adaptive stop: once min_runs and min_time are reached, stop when the
                         95% confidence interval of the median is at most this wide relative to
                         the median (0: off: stop at min_time) ... */
  double ci_time;     /* ... or, if it never gets that tight, after this many seconds */
  double sample_time; /* calibrate calls per sample so a sample lasts at least this */
  int min_runs;       /* minimum samples */
  int max_runs;       /* maximum samples */
  int threads;        /* OpenMP and OpenBLAS threads */
  char cpus[128];     /* CPU pinning list ("0-1"), "" for none */
  opf_cache_mode cache;
  opf_alloc_mode alloc;
  uint64_t seed;
  char events[512];   /* counter list given to opf_pmu_create */
  int64_t batch;      /* calls per sample; 0 calibrates from the warm-up */
  int warmup_calls;   /* > 0: exactly this many warm-up calls instead of warmup seconds */
  const opf_region_hooks *hooks; /* NULL: none */
  char backend[16];   /* "" (native) or "callgrind": counters simulated, times not real */
  char save_dir[256]; /* "": off; else write each case's tensors there as .npy files */
  int case_index;     /* number of the case in the run (file names under save_dir) */
  int check;          /* --check: each case's outputs are checked against the reference */
  int contention_retries; /* --contention-retries: measure a case again (fresh sample windows,
                             same process, after OPF_CONTENTION_PAUSE) while its contention is
                             above contention_threshold, at most this often (0: off); the
                             attempt with the least contention is kept; off with hooks or a
                             backend, whose records must hold the reported samples only */
  double contention_threshold; /* share of the threads' loop time spent waiting on a run queue
                                  above which a case counts as contended (OPF_CONTENTION_THRESHOLD) */
} opf_settings;
void opf_settings_default(opf_settings *s);

/* ---- results ---- */
typedef enum opf_status {
  OPF_ST_OK = 0,
  OPF_ST_SKIPPED,     /* not run: would not fit in memory, pass not available */
  OPF_ST_ERROR,       /* set-up or kernel failure */
  OPF_ST_CRASHED,     /* --isolate: the case's process died (signal in message) */
  OPF_ST_TIMEOUT,     /* --isolate: the case exceeded --timeout and was killed */
} opf_status;
const char *opf_status_name(opf_status s);

#define OPF_MAX_REPS 16 /* --repetitions: independent measurements of a case merged into one */

typedef struct opf_tensor_info {
  char name[32];
  char role[8];       /* "in" or "out" */
  char shape[96];
  opf_dtype dtype;
  uint64_t bytes;
} opf_tensor_info;

typedef struct opf_event_result {
  char name[128];
  char kind[24];        /* generic event counted ("cycles"), "" for model-specific events */
  opf_ev_status status;
  int group;
  int err;
  char reason[192];
  int has_value;
  double per_call;      /* scaled count per call: median over the samples (like the time) */
  double mean_per_call; /* total count / calls, over the samples that read it */
  double running_pct;   /* share of the measured time the event was counting */
  double *raw;          /* count per call of each sample that read it (owned), n_raw of them */
  int n_raw;
  double main_per_call; /* the calling thread alone (plus threads it created after the open):
                           median per call; excludes the OpenMP workers' share (their spinning) */
  double residual;      /* the harness's own count per sample: the median of an empty window
                           (same eviction, clocks and reads, no call) taken after every sample;
                           subtracted from every sample before the per-call division */
  int n_partial;        /* samples left out: a thread ran while this event's group had no
                           counter (never extrapolated); status OPF_EV_PARTIAL when > 0 */
  char plm[12];         /* privilege level counted: "user", "user+kernel", "kernel" */
} opf_event_result;

/* --profile (src/profile.c): the hottest functions of a case's measured samples. */
#define OPF_PROFILE_MAX_FUNCS 32
typedef struct opf_profile_func {
  char name[112];    /* function, or "[libfoo internal]" / "[unknown]" when no symbol covers it */
  char module[48];   /* "libopenblas", the executable's name, "" when unknown */
  double self;       /* share of the samples taken in this function */
  double total;      /* share of the samples with this function anywhere on the stack */
  int resolved;      /* 0: a group of unresolved addresses */
  int in_lib;        /* in a shared library: shown as "name (module)" */
} opf_profile_func;
typedef struct opf_profile_summary {
  char event[16];    /* "cpu-clock", "cycles"; "" when the case was not profiled */
  int hz, threads;   /* sampling rate per thread, threads sampled */
  int64_t samples, lost, throttled;
  int64_t unresolved; /* samples whose leaf address has no symbol */
  int n_funcs;       /* the top functions by self share */
  opf_profile_func funcs[OPF_PROFILE_MAX_FUNCS];
} opf_profile_summary;

struct opf_result {
  char op[64];
  char category[32];
  char impl[16];
  char set[16];
  char spec[256];
  char params[160];     /* params that differ from the defaults */
  opf_dtype dtype;
  opf_pass pass;
  opf_status status;
  char message[OPF_ERR_MSG_MAX];
  char saved[320];      /* --save-tensors: path prefix of this case's .npy files, else "" */
  char check[8];        /* --check: "passed" (a failed check is status error), else "" */
  char grad_views[96];  /* bwd, both: input gradients handed back as views, "a:alias b:alias"
                         * (opf_case_grad_views; they move no data), else "" */
  int n_tensors;
  opf_tensor_info tensors[OPF_MAX_IN + OPF_MAX_OUT];
  /* time */
  int64_t batch;        /* calls per sample */
  int n_samples;
  double ci_lo, ci_hi;  /* 95% confidence interval of the median time per call (0: none) */
  char stop[12];        /* why sampling stopped: "ci", "min-time", "ci-time", "max-time", "runs" */
  double *samples;      /* seconds per call, one per sample (owned) */
  double *cpu_samples;  /* process CPU seconds (all threads) per call, per sample (owned) */
  double *sample_start; /* CLOCK_MONOTONIC_RAW seconds (opf_now) at each sample's start (owned;
                         * NULL when unknown): the trace format's timeline */
  opf_stats time;       /* seconds per call (over the samples of every repetition) */
  int n_reps;           /* repetitions merged into this result (--repetitions; 1 by default) */
  double rep_median[OPF_MAX_REPS]; /* median time per call of each repetition */
  double total_time;    /* seconds spent in measured samples */
  double warmup_s;      /* seconds of warm-up before the samples (ended early once settled) */
  int64_t warmup_calls; /* calls made in it */
  double flops, bytes;  /* model, per call */
  double roofline;      /* attainable FLOP/s for this case, cache-aware (0: unknown) */
  double roofline_time; /* roofline's shortest time per call (s; 0: unknown) */
  opf_roofline roof;    /* the cache-aware placement behind both (level, ceiling; src/roofline.c) */
  /* memory */
  uint64_t setup_bytes;       /* tensors and workspace allocated before timing */
  uint64_t setup_allocs;
  double call_alloc_bytes;    /* bytes allocated per call inside the timed region */
  double call_allocs;         /* allocations per call inside the timed region */
  uint64_t peak_live_bytes;   /* tracked allocator high-water mark over the case */
  uint64_t max_rss_bytes;     /* process peak resident set size after the case */
  double minor_faults;        /* page faults per call inside the timed region */
  double major_faults;
  /* counters */
  int n_events;
  opf_event_result events[OPF_PMU_MAX_EVENTS];
  /* --backend callgrind: the counters are simulated ("sim:Ir", ...) and the times were taken
   * under valgrind, so they are not real (time-based metrics are absent). */
  int simulated;
  /* --baseline torch|numpy: the peer's answer joined to this result (not owned; NULL: none) */
  const struct opf_peer_result *peer;
  opf_profile_summary profile; /* --profile */
  /* --interleave (src/abtest.c): this implementation against ab_vs in paired rounds */
  char ab_vs[16];       /* the other implementation; "" when this was not an A/B run */
  int ab_rounds;        /* rounds that gave a ratio */
  double ab_round[OPF_MAX_REPS]; /* each round's median(this) / median(other) */
  double ab_ratio, ab_lo, ab_hi; /* geometric mean over rounds of this/other and its 95%
                                    interval (0: fewer than OPF_AB_MIN_ROUNDS rounds) */
  char *folded;         /* --profile-folded: this case's folded stacks (owned), NULL when none */
  size_t folded_len;
  /* CPU contention over the kept attempt's sampling loop (/proc/self/task/<tid>/schedstat,
   * summed over every thread of the process, read before the first and after the last sample
   * window) */
  int sched_ok;          /* 1: the figures below were measured; 0: not available (sched_reason) */
  char sched_reason[160]; /* why not, when sched_ok is 0 */
  double runq_wait_s;    /* seconds per call the threads waited on a run queue (summed) */
  double oncpu_s;        /* seconds per call the threads ran (summed) */
  double contention;     /* run-queue wait / (loop wall time x contention_threads) */
  int contention_threads; /* threads in use: min(--threads, threads of the process) */
  int contended;         /* contention above the run's threshold (after the retries) */
  int attempts;          /* measurement attempts made (1 + retries) */
  int attempt_kept;      /* index of the attempt reported */
  double attempt_contention[OPF_MAX_ATTEMPTS]; /* each attempt's contention (-1: not available) */
  double attempt_median[OPF_MAX_ATTEMPTS];     /* each attempt's median time per call */
};
void opf_result_release(opf_result *r);
/* Merge repetition rep (a new measurement of acc's case and pass, e.g. in a fresh process)
 * into acc: samples, counter samples and statistics over both, acc->rep_median gains rep's
 * median, memory figures take the larger. A failed rep makes acc failed. rep is released. */
void opf_result_merge(opf_result *acc, opf_result *rep);
/* A result's identity (operator, spec, dtype, pass, tensors, models, requested counters) without
 * a measurement: what opf_measure starts from, and what a crashed case is reported with. */
void opf_result_init(opf_result *r, const opf_case *c, const char *set, opf_pass pass,
                     const opf_pmu *pmu);

/* Measure one pass of an initialised (not yet allocated) case; fills r. The case is
 * allocated, filled and released inside. Failures become r->status / r->message. pmu may be
 * NULL. Returns OPF_OK unless r itself could not be produced. */
int opf_measure(const opf_settings *s, opf_case *c, const char *set, opf_pass pass,
                opf_pmu *pmu, opf_result *r);
/* The harness's own cost per sample on an empty operator (src/overhead.c), in seconds, median
 * over many samples: for each presets[i], two opf_now() reads plus, unless presets[i] is
 * "timer" (or "" / NULL: no counters), two opf_pmu_read() snapshots of that counter list
 * (a preset or any opf_pmu_create list) opened on every thread that exists now. A list none
 * of whose events opens gives -1 (absent), never a made-up figure. Unknown names: OPF_ECONFIG
 * with the message in err (out_per_sample all -1). Call after opf_runtime_setup so the
 * counters cover the same threads as the run's. */
int opf_overhead_measure(const char *const *presets, int n, double *out_per_sample, opf_err *err);
/* Apply threads and CPU pinning (call once before anything creates threads). */
int opf_runtime_setup(const opf_settings *s, opf_err *err);

#endif

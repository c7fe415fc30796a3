/* backend.h: the deterministic measurement back-end (valgrind callgrind): region hooks that put
 * client requests around each measured sample, the parser of callgrind dump files, and the
 * simulated counters ("sim:Ir", "sim:D1mr", ...) it attaches to results. Re-running the program
 * under valgrind is the CLI's job (src/cli/backend.c). */
#ifndef OPPERF_BACKEND_H
#define OPPERF_BACKEND_H

#include <stdint.h>
#include <stdio.h>

#include "opperf/harness.h"
#include "opperf/pmu.h"

/* Simulated cache geometry (size in bytes, associativity, line size), pinned so that results
 * do not depend on the host; passed to valgrind as --I1/--D1/--LL and checked in every dump. */
#define OPF_CG_I1 "32768,8,64"
#define OPF_CG_D1 "32768,8,64"
#define OPF_CG_LL "8388608,16,64"

/* Events reported, in this order, as "sim:<callgrind name>". */
#define OPF_CG_NREPORT 11
extern const char *const opf_cg_report_events[OPF_CG_NREPORT]; /* "Ir", "D1mr", ... */

#define OPF_CG_MAX_EVENTS 24

typedef struct opf_cg_cache {
  uint64_t size;
  int line, assoc; /* 0 when the dump does not describe this cache */
} opf_cg_cache;

/* One callgrind dump file (one part: callgrind writes each dump to its own file unless
 * --combine-dumps=yes, which is not supported). */
typedef struct opf_cg_dump {
  char creator[64];      /* "callgrind-3.19.0" */
  char trigger[192];     /* "Client Request: opperf-r3-s1", "Program termination" */
  int part;
  opf_cg_cache i1, d1, ll;
  int n_events;
  char events[OPF_CG_MAX_EVENTS][16];
  uint64_t totals[OPF_CG_MAX_EVENTS]; /* from "totals:", else "summary:"; trailing zeros may be omitted */
} opf_cg_dump;

/* Parse a dump. OPF_EINVAL (message names the file and line) when it is not a callgrind dump,
 * has no events or totals line, or holds several parts; OPF_EIO when it cannot be read. */
int opf_cg_parse_stream(FILE *f, const char *name, opf_cg_dump *d, opf_err *err);
int opf_cg_parse_file(const char *path, opf_cg_dump *d, opf_err *err);
/* Index of an event in the dump, -1 when absent. */
int opf_cg_event_index(const opf_cg_dump *d, const char *event);
/* 1 when the dump's I1/D1/LL match OPF_CG_I1/D1/LL. */
int opf_cg_geometry_ok(const opf_cg_dump *d);

/* The reported events of several dumps (the counted samples of one case): sums, and each
 * dump's values (for the median). Start from all zeros; release with opf_cg_totals_release. */
typedef struct opf_cg_totals {
  int n_dumps;
  uint64_t v[OPF_CG_NREPORT];        /* sums over the dumps */
  int present[OPF_CG_NREPORT];       /* in every dump */
  uint64_t *per_dump;                /* n_dumps x OPF_CG_NREPORT (owned) */
  int cap;
} opf_cg_totals;
/* OPF_ENOMEM when the per-dump values cannot grow. */
int opf_cg_totals_add(opf_cg_totals *t, const opf_cg_dump *d);
void opf_cg_totals_release(opf_cg_totals *t);

/* Region hooks. Callgrind runs with --instr-atstart=no. The first sample of a case switches
 * instrumentation on (which empties the simulated caches) and is not counted: it warms the
 * simulated caches as the uninstrumented warm-up warmed the real ones. Every sample is
 * bracketed by CALLGRIND_ZERO_STATS and CALLGRIND_DUMP_STATS_AT("opperf-r<case>-s<i>", or
 * "-warm" for the first), so a dump holds exactly one sample's calls, summed over every thread
 * (--separate-threads=no); harness work between samples is zeroed away. case_end switches
 * instrumentation off. */
typedef struct opf_cg_region {
  char prefix[256];   /* --callgrind-out-file; dump n goes to "<prefix>.<n>" */
  int active;         /* running under valgrind: the hooks issue client requests */
  int keep;           /* keep the dump files after reading them (for callgrind_annotate) */
  int result;         /* index of the current case (labels the dumps) */
  int sample;         /* samples begun in the current case */
  int instr_on;
  int n_dumps;        /* dumps requested so far (callgrind numbers them 1, 2, ...) */
  int case_first;     /* first dump number of the current case */
  int case_dumps;     /* dumps of the current case */
  int case_ended;     /* case_end ran: the next sample belongs to a case not yet collected */
  int overlap;        /* samples begun after case_end and before collect (a caller's error) */
  char label[64];     /* prepared before ZERO_STATS so formatting it is not counted */
  char creator[64];   /* "callgrind-3.19.0", from the last dump read */
} opf_cg_region;

/* 1 when this process runs under valgrind (RUNNING_ON_VALGRIND); 0 in a build without the
 * valgrind headers. */
int opf_cg_running(void);
/* prefix: the --callgrind-out-file given to valgrind. */
void opf_cg_region_init(opf_cg_region *g, const char *prefix);
/* Hooks for opf_settings.hooks; ctx is g. */
opf_region_hooks opf_cg_hooks(opf_cg_region *g);
/* After each case (also a failed one), before the hooks run the next one (e.g. a case's fwd,
 * then its bwd: collect between the two opf_measure calls): switch instrumentation off, read, sum into t (overwritten;
 * release it even on error) and (unless keep) delete the dumps of its counted samples, and get ready for the next case. counted: number of dumps
 * summed. OPF_EIO / OPF_EINVAL when a dump is missing or malformed, with the geometry or
 * label checked; OPF_EINVAL when samples of a next case began before this collect. */
int opf_cg_region_collect(opf_cg_region *g, opf_cg_totals *t, int *counted, opf_err *err);

/* Harness cost inside one counted sample when the operator does nothing: the hooks and the
 * two timer reads around the calls. Measured once with the same hooks (a pseudo case of
 * 1 + n samples) and subtracted from each sample's values. per_sample gets the median sample
 * in v[] (no per-dump values, nothing to release). */
int opf_cg_measure_overhead(opf_cg_region *g, int n, opf_cg_totals *per_sample, opf_err *err);

/* Context entries for the simulated counters (status counted, encoding "callgrind:<event>",
 * reason describing the simulation: tool, geometry, the harness overhead subtracted per sample
 * (may be NULL)). Appends up to max - *n entries. */
void opf_cg_context_events(opf_pmu_event *ev, int *n, int max, const char *creator,
                           const opf_cg_totals *overhead);

/* Turn a measured result into a simulated one: drop the first (cache-warming) sample from the
 * samples and statistics, subtract overhead (per sample, may be NULL), and append one event per
 * opf_cg_report_events ("sim:Ir" ...) with per_call the median over the counted samples and
 * mean_per_call the total over the calls, as for measured counters; absent events get
 * OPF_EV_NOT_COUNTED. counted: samples in t. r->message gets a note that times were measured
 * under valgrind. Returns OPF_EINVAL when counted does not match the result's samples or t. */
int opf_cg_attach(opf_result *r, const opf_cg_totals *t, int counted, const opf_cg_totals *overhead);

/* 1 when a name is a simulated counter ("sim:" prefix). */
int opf_event_is_simulated(const char *name);

#endif

/* report.h: the context block every output carries, and the emitters (table, JSON, CSV,
 * Markdown) behind one begin / record / end interface. Files are written atomically: the
 * whole output goes to a temporary file that is renamed over the target only on success. */
#ifndef OPPERF_REPORT_H
#define OPPERF_REPORT_H

#include <stdint.h>

#include "opperf/harness.h"
#include "opperf/pmu.h"

#define OPF_SCHEMA_VERSION 1

typedef struct opf_cache_info {
  int level;
  char type[16];
  uint64_t size;
  char shared_cpus[32];
  int num_sharing;           /* CPUs in shared_cpus */
} opf_cache_info;

typedef struct opf_context {
  char tool_version[32], git_hash[32], build_type[32], compiler[64], cflags[256];
  char cpu_model[128];
  int cpus_online;
  double mhz;                /* nominal (base) frequency, MHz; 0 when unknown */
  char mhz_source[64];       /* where mhz came from (cpufreq base, model name, TSC rate) */
  int n_caches;
  opf_cache_info caches[8];
  uint64_t mem_total;
  char kernel[256];
  char hostname[64];
  int perf_event_paranoid;   /* -99 when unreadable */
  char pmus[256];            /* PMUs libpfm4 detects */
  char blas_config[160];
  int blas_threads;
  char blas_parallel[16];    /* "sequential", "pthreads", "openmp" */
  char blas_library[160];
  char blas_core[32];        /* kernel family the run used (openblas_get_corename) */
  char blas_core_source[16]; /* who chose it: "openblas", "environment", "opperf", "option" */
  char blas_core_openblas[32]; /* the core OpenBLAS chose by itself (or took from the environment) */
  char blas_cpu_family[32];  /* the best core family this CPU can run ("" when not x86) */
  char blas_core_note[128];  /* "chosen by opperf: OpenBLAS detected Prescott", ... */
  char env[384];             /* environment that changes results: OPENBLAS_*, OMP_*, GOMP_* */
  double loadavg_start, loadavg_end; /* 1-minute load: a busy machine makes noisy figures */
  int omp_threads;
  double timer_resolution, timer_overhead;
  char timestamp[32];        /* ISO 8601 UTC */
  char command[512];         /* the command line, for reproduction */
  opf_settings settings;
  int have_machine;          /* roofline ceilings were available (opperf machine) */
  int interrupted;           /* SIGINT/SIGTERM stopped the run: the results are partial */
  char peer[64];             /* --baseline: the peer library and version ("torch 1.13.0a0"), "" none */
  int n_overhead;            /* harness cost per sample on an empty operator */
  struct {
    char what[32];           /* "timer", "sw", "core", ... */
    double per_sample_s;
  } overhead[8];
  char pmu_note[256];        /* how the counters were grouped and which threads they cover */
  char omp_wait[160];        /* OpenMP wait policy: spinning workers add to summed counters */
  int n_events;              /* counters requested, and whether they opened */
  opf_pmu_event events[OPF_PMU_MAX_EVENTS];
  int n_build_ids;           /* GNU build-ids: the executable, libopenblas, every plugin */
  struct {
    char path[256];
    char build_id[129];      /* lowercase hex (OPF_BUILD_ID_MAX); "" when the file has none */
  } build_ids[20];
} opf_context;

/* Collect the context (after opf_runtime_setup and opf_pmu_open). pmu may be NULL. */
void opf_context_collect(opf_context *ctx, const opf_settings *s, const opf_pmu *pmu,
                         const char *command);
/* The build-ids of the executable (/proc/self/exe), the loaded libopenblas and every loaded
 * plugin, read with libelf (src/buildids.c; opf_context_collect calls it). */
void opf_context_build_ids(opf_context *ctx);
/* Record what happened during the run (load average at the end). */
void opf_context_finish(opf_context *ctx);
/* "model name" of /proc/cpuinfo ("unknown" when absent). */
void opf_cpu_model(char *buf, size_t n);
/* Size of the last-level cache in bytes (sysfs), 32 MiB when unknown. */
uint64_t opf_llc_bytes(void);
/* cpu0's caches as sysfs lists them (every index: data, instruction, unified); count filled. */
int opf_cache_list(opf_cache_info *out, int max);

typedef enum opf_format {
  OPF_FMT_TABLE, OPF_FMT_JSON, OPF_FMT_CSV, OPF_FMT_MD,
  OPF_FMT_JSONL,  /* JSON lines, written as results arrive (not atomic: survives a kill) */
  OPF_FMT_GBENCH, /* Google Benchmark-compatible JSON */
  OPF_FMT_TRACE,  /* Chrome trace-event JSON (Perfetto, chrome://tracing): one event per sample */
  OPF_NFORMATS
} opf_format;
int opf_format_parse(const char *s);       /* -1 when unknown */
const char *opf_format_name(opf_format f);
const char *opf_format_ext(opf_format f);  /* ".txt", ".json", ".csv", ".md" */

typedef struct opf_emitter opf_emitter;
/* path NULL or "-" writes to standard output at end. Nothing touches path before end. */
int opf_emitter_begin(opf_emitter **e, opf_format f, const char *path, const opf_context *ctx,
                      opf_err *err);
int opf_emitter_record(opf_emitter *e, const opf_result *r);
/* commit: write the output (atomically for files). !commit: discard. Frees e either way. */
int opf_emitter_end(opf_emitter *e, int commit, opf_err *err);

/* Helpers shared by emitters and the CLI. */
char *opf_fmt_time(double seconds, char *buf, size_t n); /* "1.23 ms" */
char *opf_fmt_bytes(double bytes, char *buf, size_t n);  /* "4.00 MiB" */
/* A whole file as a NUL-terminated malloc'd string; NULL with OPF_EINVAL ("cannot read 'PATH'")
 * or OPF_ENOMEM in err. */
char *opf_read_text(const char *path, opf_err *err);
/* Write data to path atomically (temp file in the same directory, fsync, rename). */
int opf_write_atomic(const char *path, const void *data, size_t n, opf_err *err);
/* The same for data in several pieces (header and payload), written in order. */
int opf_write_atomic_parts(const char *path, const void *const *parts, const size_t *lens,
                           int nparts, opf_err *err);

#endif

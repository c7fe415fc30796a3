/* store.h: the results store: every run of `opperf run --store URL` (its context and every record
 * with raw samples and counters, statuses included) in SQLite (a file: the embedded default) or
 * PostgreSQL (postgresql://...: one store for a fleet), behind one interface; the read API that
 * `opperf history` and reports use (runs; one case's series per machine; change points with
 * the counters that moved). The schema is versioned (OPF_STORE_VERSION) and migrated on open.
 * Writes: one transaction per run, so concurrent writers are safe and a writer killed mid-run
 * loses only that run. Library code: returns errors in an opf_err, never prints. */
#ifndef OPPERF_STORE_H
#define OPPERF_STORE_H

#include <stddef.h>

#include "opperf/changepoint.h"
#include "opperf/error.h"

#define OPF_STORE_VERSION 2

typedef struct opf_store opf_store;

/* Open (and create, when create != 0 and it does not exist) the store at url:
 * "postgresql://..." or "postgres://..." (libpq connection URI), "sqlite:PATH" or a plain path
 * (an SQLite file). Migrates an older schema to OPF_STORE_VERSION. OPF_EINVAL: not a store, a
 * newer schema, no such file (create == 0), or PostgreSQL asked of a build without libpq;
 * OPF_EIO: the database refused (the message says why). */
int opf_store_open(opf_store **st, const char *url, int create, opf_err *err);
void opf_store_close(opf_store *st);
const char *opf_store_backend(const opf_store *st); /* "sqlite" or "postgresql" */
/* The schema version of the open store (after migration: OPF_STORE_VERSION). */
int opf_store_version(opf_store *st, int *version, opf_err *err);

/* The machine a run belongs to: $OPPERF_MACHINE when set (a fleet's pool of identical hosts),
 * else "HOSTNAME (CPU MODEL, N CPUs)". Trends never mix machines unless asked. */
void opf_store_machine_key(const char *hostname, const char *cpu_model, int cpus, char *buf,
                           size_t n);

typedef struct opf_store_add_opts {
  const char *shard;   /* "K/N" or NULL */
  const char *machine; /* NULL: from the report's context (opf_store_machine_key) */
} opf_store_add_opts;

/* Add one run from an opperf JSON report (the text of `--format json`): the context JSON and
 * its indexed columns, every record, its raw samples and every counter with status and reason
 * (a counter that did not run has no value, never 0). One transaction: all or nothing.
 * *run_id (may be NULL) gets the new run's id. OPF_EINVAL for a malformed report. */
int opf_store_add_report(opf_store *st, const char *report_json, const opf_store_add_opts *o,
                         long long *run_id, opf_err *err);

/* ---- read API ---------------------------------------------------------------------------- */
typedef struct opf_store_run {
  long long id;
  char started[32];     /* the report's timestamp, ISO 8601 UTC */
  char machine[256], hostname[64], cpu_model[128];
  char git_hash[32], build_type[32], tool_version[32];
  char shard[16];       /* "" unless --shard */
  int threads, n_records, n_failed, interrupted;
} opf_store_run;
/* Runs, oldest first; machine NULL: every machine. Free *runs with free(). */
int opf_store_runs(opf_store *st, const char *machine, opf_store_run **runs, int *n,
                   opf_err *err);

typedef struct opf_store_counter {
  char name[64];
  char status[24];      /* "counted", "scaled", "not-supported", ... (opf_ev_status_name) */
  char reason[200];     /* why it did not count, "" when it did */
  int has_value;
  double per_call;      /* only when has_value */
} opf_store_counter;

typedef struct opf_store_point {
  long long run_id;
  char started[32], git_hash[32];
  char status[16];      /* the record's status: only "ok" points have a median */
  double median, ci_lo, ci_hi; /* s/call; ci 0 when the run had no interval */
  int n_samples, n_counters;
  opf_store_counter *counters;
} opf_store_point;

/* One case on one machine (or on every machine, all_machines), oldest run first. The case key
 * is "OP IMPL DTYPE PASS SPEC" (the spec last: it may hold spaces). */
typedef struct opf_store_series {
  char key[600];
  char machine[256];    /* "(all machines)" when merged */
  int n;
  opf_store_point *p;
} opf_store_series;

/* Series of every case whose key or operator matches the glob selector (NULL: all), one per
 * (case, machine), restricted to machine when not NULL; all_machines joins machines into one
 * series per case. Sorted by key then machine. Free with opf_store_series_free. */
int opf_store_series_load(opf_store *st, const char *selector, const char *machine,
                          int all_machines, opf_store_series **s, int *n, opf_err *err);
void opf_store_series_free(opf_store_series *s, int n);

#define OPF_STORE_MAX_MOVED 6
typedef struct opf_store_change {
  char key[600], machine[256];
  long long run_id;     /* the first run after the step */
  char started[32], git_hash[32];
  int index, n_points;  /* position of that run in the series, and its length */
  double before, after, change; /* segment medians (s/call) and after / before - 1 */
  int n_moved;          /* counters whose median moved by at least min_change with it */
  struct {
    char name[64];
    double change;
  } moved[OPF_STORE_MAX_MOVED];
} opf_store_change;

/* Change points (opperf/changepoint.h, PELT) of every selected series' ok medians, each named by
 * the first run after the step and the counters that moved across it (largest first). Free
 * *ch with free(). */
int opf_store_changes(opf_store *st, const char *selector, const char *machine, int all_machines,
                      const opf_cp_opts *o, opf_store_change **ch, int *n, opf_err *err);

/* The change points of one loaded series (no database access): what opf_store_changes does
 * for each series it loads. Free *ch with free(). */
int opf_store_series_changes(const opf_store_series *s, const opf_cp_opts *o,
                             opf_store_change **ch, int *n, opf_err *err);

/* Integrity: SQLite's integrity and foreign-key checks (PostgreSQL: records without a run).
 * OPF_EIO with the first problem in the message when the store is damaged. */
int opf_store_check(opf_store *st, opf_err *err);

#endif

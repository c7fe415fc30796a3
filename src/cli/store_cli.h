/* store_cli.h (CLI): `opperf run --store URL` and `--shard K/N` glue: the options, resolving the
 * shard (also from GTEST_* and JOB_COMPLETION_INDEX), keeping only this shard's cases, checking
 * the store before measuring, and adding the run's JSON report to it at the end (src/store.c).
 * Also the file reading shared by `opperf history --import` and `opperf merge`. */
#ifndef OPPERF_CLI_STORE_H
#define OPPERF_CLI_STORE_H

#include <getopt.h>

#include "cli.h"
#include "opts.h"
#include "opperf/shard.h"

typedef struct cli_store {
  const char *url;        /* --store */
  const char *shard_opt;  /* --shard K/N */
  const char *shards;     /* --shards N (with JOB_COMPLETION_INDEX) */
  opf_shard shard;
  char json_fmt[4200];    /* "json=TMP" : the report the store reads */
} cli_store;

#define CLI_STORE_NOPTS 3
#define CLI_STORE_ROWS(base)                                                                      \
  {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "results store and shards (see opperf(1) RESULTS STORE, opperf history):"}, \
  {"store", (base), "URL", CLI_O_CUSTOM, 0, 0, 0,                                                   \
   "also add this run to a results store: an SQLite file, or\npostgresql://... (one transaction per run)"}, \
  {"shard", (base) + 1, "K/N", CLI_O_CUSTOM, 0, 0, 0,                                               \
   "run only shard K (0 .. N-1) of the cases, split by case key\n(default: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS when set)"}, \
  {"shards", (base) + 2, "N", CLI_O_CUSTOM, 0, 0, 0,                                                \
   "N shards, this one JOB_COMPLETION_INDEX (Kubernetes Indexed\nJobs; also OPPERF_SHARDS)"}
/* Option `which` (0 .. CLI_STORE_NOPTS - 1). */
void cli_store_arg(cli_store *s, int which, const char *arg);
/* Resolve the shard from the options and the environment (--shard, GTEST_*, --shards or
 * OPPERF_SHARDS with JOB_COMPLETION_INDEX). Prints the error and returns 2, else 0. */
int cli_store_shard(cli_store *s);
/* When a store is asked for: open it once (creating or migrating it) so a bad URL fails before
 * anything is measured, and prepare the temporary JSON report the store will read (s->json_fmt,
 * for the caller to add as a --format item). Prints the error and returns 2, else 0. */
int cli_store_setup(cli_store *s);
/* Does this shard own the case (always when not sharded)? */
int cli_store_owns(const cli_store *s, const opf_case *c);
/* After the reports were written (ok: the run succeeded): add the JSON report to the store and
 * remove it. On failure the report is kept and named. Returns 0, or prints and returns 2. */
int cli_store_finish(cli_store *s, int ok);

/* The whole file, NUL-terminated (NULL and errno set when unreadable). */
char *cli_read_text(const char *path);

#endif

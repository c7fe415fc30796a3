/* cli_backend.h: `opperf run --backend callgrind`. The parent re-runs the same command under
 * valgrind's callgrind and returns its status; the child (running under valgrind) measures with
 * client requests around each sample and attaches simulated counters to its results. */
#ifndef OPPERF_CLI_BACKEND_H
#define OPPERF_CLI_BACKEND_H

#include "opperf/backend.h"
#include "opperf/report.h"

typedef enum cli_backend_kind { CLI_BK_NATIVE = 0, CLI_BK_CALLGRIND = 1 } cli_backend_kind;

/* Returned by cli_backend_setup when this process should go on and measure. */
#define CLI_BACKEND_MEASURE (-1)

typedef struct cli_backend {
  cli_backend_kind kind;
  int child;                 /* this process runs under valgrind for a parent */
  char dir[256];             /* the parent's temporary directory (dumps, log, marker) */
  opf_cg_region region;
  opf_region_hooks hooks;
  opf_cg_totals overhead;    /* harness cost per counted sample, subtracted */
  char creator[64];          /* "callgrind-3.19.0", from the dumps */
  int runs;                  /* counted samples per case (after the cache-warming one) */
} cli_backend;

/* --backend NAME: native (default) or callgrind. Prints the usage error and returns 2 when
 * unknown, else 0. */
int cli_backend_parse(const char *name, cli_backend_kind *kind);
/* Keep a copy of the run command's arguments as given (option parsing modifies some in place):
 * the callgrind parent passes them on to the child. */
void cli_backend_save_args(int argc, char **argv);
/* After the cases are validated, before anything is measured or any output is touched.
 * Native: returns CLI_BACKEND_MEASURE. Callgrind parent: runs the child under valgrind and
 * returns the exit status for the command. Callgrind child: makes the settings deterministic,
 * installs the hooks in s and returns CLI_BACKEND_MEASURE. */
int cli_backend_setup(cli_backend *b, cli_backend_kind kind, opf_settings *s);
/* Child: measure the harness overhead, add the simulated counters to the context. An error
 * code and message when callgrind does not behave as expected; else 0. */
int cli_backend_context(cli_backend *b, opf_context *ctx, opf_err *err);
/* Child: after each opf_measure: attach the simulated counters (or turn the result into an
 * error naming what went wrong with the dumps). */
void cli_backend_result(cli_backend *b, opf_result *r);
#endif

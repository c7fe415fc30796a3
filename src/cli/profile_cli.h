/* profile_cli.h (CLI): `opperf run --profile` options and glue: opens the sampling profiler,
 * adds its hooks to the run's region chain, attaches each case's profile to its result and
 * writes --profile-folded FILE at the end. See src/profile.c. */
#ifndef OPPERF_CLI_PROFILE_H
#define OPPERF_CLI_PROFILE_H

#include <getopt.h>

#include "cli.h"
#include "opts.h"
#include "opperf/profile.h"

typedef struct cli_profile {
  int on;
  opf_profile_opts o;
  const char *folded_path; /* --profile-folded FILE */
  opf_profile *p;
  char *folded;            /* every result's folded stacks, for the file */
  size_t folded_len;
  int lost_folded;         /* stacks that could not be kept (out of memory) */
} cli_profile;

/* The option-table rows (opts.h); option keys base .. base + CLI_PROFILE_NOPTS - 1. */
#define CLI_PROFILE_NOPTS 5
#define CLI_PROFILE_ROWS(base)                                                                    \
  {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "profile (sampling inside the measured samples only; see opperf(1) PROFILES):"}, \
  {"profile", (base), NULL, CLI_O_CUSTOM, 0, 0, 0,                                                \
   "hottest functions per case: self and total share, samples, lost,\nunresolved (table section, JSON \"profile\", Markdown)"}, \
  {"profile-folded", (base) + 1, "F", CLI_O_CUSTOM, 0, 0, 0,                                      \
   "also write folded stacks to F (any flame-graph renderer;\nimplies --profile)"},                \
  {"profile-top", (base) + 2, "N", CLI_O_CUSTOM, 0, 0, 0, "functions shown per case (default 10, at most 32)"}, \
  {"profile-freq", (base) + 3, "HZ", CLI_O_CUSTOM, 0, 0, 0, "samples per second per thread (default 4000)"}, \
  {"profile-event", (base) + 4, "E", CLI_O_CUSTOM, 0, 0, 0, "cpu-clock (default: works without a PMU) or cycles"}
/* Option `which` (0 .. CLI_PROFILE_NOPTS - 1) with its argument; prints and returns 2 if bad. */
int cli_profile_arg(cli_profile *cp, int which, const char *arg);
/* Open the profiler (after opf_runtime_setup) and add its hooks to reg's chain (before
 * cli_region_install). Prints the error and returns 2 when sampling is refused. */
int cli_profile_setup(cli_profile *cp, cli_region *reg);
/* After each opf_measure: the case's profile into r. */
void cli_profile_attach(cli_profile *cp, opf_result *r);
/* Keep r's folded stacks for the file (parent side, before r is released). */
void cli_profile_collect(cli_profile *cp, const opf_result *r);
/* Write the folded file when commit (atomically), close. Prints and returns 2 on failure. */
int cli_profile_finish(cli_profile *cp, int commit);

#endif

/* profile_cli.h (CLI): `opperf run --profile` options and glue: opens the sampling profiler,
 * adds its hooks to the run's region chain, attaches each case's profile to its result and
 * writes --profile-folded FILE at the end. See src/profile.c. */
#ifndef OPPERF_CLI_PROFILE_H
#define OPPERF_CLI_PROFILE_H

#include <getopt.h>

#include "cli.h"
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

/* The getopt_long entries; option codes base .. base + CLI_PROFILE_NOPTS - 1. */
#define CLI_PROFILE_NOPTS 5
#define CLI_PROFILE_OPTIONS(base)                                                              \
  {"profile", no_argument, 0, (base)}, {"profile-folded", required_argument, 0, (base) + 1},  \
      {"profile-top", required_argument, 0, (base) + 2},                                      \
      {"profile-freq", required_argument, 0, (base) + 3},                                     \
      {"profile-event", required_argument, 0, (base) + 4}
#define CLI_PROFILE_USAGE                                                                      \
  "profile (sampling inside the measured samples only; see opperf(1) PROFILES):\n"            \
  "  --profile            hottest functions per case: self and total share, samples, lost,\n" \
  "                       unresolved (table section, JSON \"profile\", Markdown)\n"           \
  "  --profile-folded F   also write folded stacks to F (any flame-graph renderer;\n"         \
  "                       implies --profile)\n"                                               \
  "  --profile-top N      functions shown per case (default 10, at most 32)\n"                \
  "  --profile-freq HZ    samples per second per thread (default 4000)\n"                     \
  "  --profile-event E    cpu-clock (default: works without a PMU) or cycles\n"
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

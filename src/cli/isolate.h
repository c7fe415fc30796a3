/* isolate.h: running each case in its own process (--isolate, --timeout); see isolate.c. */
#ifndef OPPERF_CLI_ISOLATE_H
#define OPPERF_CLI_ISOLATE_H

#include <signal.h>

#include "cli.h"

/* Keep the `run` arguments (argv[0] = "run") for re-running this executable per case. */
void cli_isolate_save_args(int argc, char **argv);
/* Measure case `index` (c, for naming results if it fails) in a child process, for the np
 * passes given: fills out[0..np) and returns np. A crash gives OPF_ST_CRASHED, a case past
 * timeout seconds (0: none) OPF_ST_TIMEOUT; *stop > 1 kills the child at once. */
int cli_isolate_run(int index, const opf_case *c, const char *set, const opf_pass *passes,
                    int np, double timeout, const opf_pmu *pmu, volatile sig_atomic_t *stop,
                    opf_result *out);
/* Child side: send one result to the parent. */
int cli_child_send(int fd, const opf_result *r);

#endif

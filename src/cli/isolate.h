/* isolate.h: running each case in its own process (--isolate, --timeout); see isolate.c. */
#ifndef OPPERF_CLI_ISOLATE_H
#define OPPERF_CLI_ISOLATE_H

#include <signal.h>

#include "cli.h"
#include "opperf/caseserver.h"

/* Start the case server (before anything starts threads or opens counters); job runs in each
 * case's process. 0, or the usage-error status after printing why. */
int cli_isolate_start(opf_case_server **s, opf_case_job job, void *ctx);
/* Measure case `index` (c, for naming results if it fails) in a process of its own, for the
 * np passes given: fills out[0..np) and returns np. A crash gives OPF_ST_CRASHED, a case past
 * timeout seconds (0: none) OPF_ST_TIMEOUT; *stop > 1 kills the process at once. */
int cli_isolate_run(opf_case_server *srv, int index, const opf_case *c, const char *set,
                    const opf_pass *passes, int np, double timeout, const opf_pmu *pmu,
                    volatile sig_atomic_t *stop, opf_result *out);
/* Case process side: send one result (wire format). 0, or -1 when the pipe broke. */
int cli_child_send(int fd, const opf_result *r);

#endif

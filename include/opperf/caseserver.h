/* caseserver.h: isolated case processes without re-executing the program. A server process is
 * forked once, before the run creates any thread pool or counter; for each case it forks a
 * fresh child from that pristine state, which runs a job (measure the case, write its results
 * to a pipe) and exits. The caller reads the pipe, enforces the timeout and learns how the
 * child ended (exit code or signal). See src/caseserver.c. */
#ifndef OPPERF_CASESERVER_H
#define OPPERF_CASESERVER_H

#include <signal.h>
#include <stddef.h>

#include "opperf/error.h"

/* Runs in the case's process: do the work for index and write the output to out_fd. Its
 * return value is the process's exit status (0: fine). The server's memory at fork time (the
 * planned cases, loaded plugins, encoded counters) is the job's, copy on write. */
typedef int (*opf_case_job)(void *ctx, int index, int out_fd);

typedef struct opf_case_server opf_case_server;

/* How a case process ended. */
typedef struct opf_case_exit {
  int exited, code;   /* exited normally with code */
  int signaled, sig;  /* killed by signal sig */
  int timed_out;      /* ran past the timeout: killed with SIGKILL */
  int interrupted;    /* *stop > 1 while it ran: killed with SIGKILL */
} opf_case_exit;

/* Fork the server. Call before anything starts threads (OpenMP, OpenBLAS's pool) or opens
 * counters: the children start from this state. The server ignores SIGINT/SIGTERM (the
 * caller decides when to stop) and exits when the caller closes it or dies. */
int opf_case_server_start(opf_case_server **s, opf_case_job job, void *ctx, opf_err *err);
/* Run job(index) in a fresh child; *out and *out_len receive everything it wrote (malloc'd, may be
 * NULL when empty); timeout in seconds (0: none); *stop > 1 (a second Ctrl-C) kills it.
 * OPF_ESYS when the server is gone or a system call failed (err says which). */
int opf_case_server_run(opf_case_server *s, int index, double timeout, volatile sig_atomic_t *stop,
                        char **out, size_t *out_len, opf_case_exit *how, opf_err *err);
/* Stop the server and wait for it. s may be NULL. */
void opf_case_server_stop(opf_case_server *s);

#endif

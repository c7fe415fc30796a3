/* session.h: one run of the harness, the pipeline `opperf run` uses and a program embedding
 * opperf uses the same way: plan (settings, counters encoded), set up (threads and pinning,
 * counters opened, the context block, the harness's own cost, the roofline ceilings), measure
 * each case and pass (post-processed: the roofline bound), emit to every output format, end.
 *
 *   opf_session *s;
 *   opf_session_new(&s, &settings, "my-benchmark", &err);
 *   opf_session_add_output(s, OPF_FMT_JSON, "out.json", &err);   (NULL path: stdout)
 *   opf_session_start(s, &err);            counters opened, context collected
 *   opf_session_begin(s, &err);            headers written
 *   for each case and pass: opf_session_measure(s, &c, "custom", OPF_PASS_FWD, &r);
 *                           opf_session_record(s, &r); opf_result_release(&r);
 *   opf_session_end(s, 1, &err);           reports committed (JSON written atomically)
 *   opf_session_free(s);
 */
#ifndef OPPERF_SESSION_H
#define OPPERF_SESSION_H

#include "opperf/harness.h"
#include "opperf/report.h"

#define OPF_SESSION_MAX_OUTPUTS 8

typedef struct opf_session opf_session;

/* Plan: copy the settings, encode their counter list (OPF_ECONFIG for an unknown event). */
int opf_session_new(opf_session **s, const opf_settings *settings, const char *command, opf_err *err);
/* Another report: format f to path (NULL: stdout). Before opf_session_begin. */
int opf_session_add_output(opf_session *s, opf_format f, const char *path, opf_err *err);
/* Set up: threads and pinning, open the counters on this process's threads, collect the
 * context (machine, build, settings, counters, the harness's own cost per sample on an empty
 * operator), load the roofline ceilings `opperf machine` cached (absent: no roofline). */
int opf_session_start(opf_session *s, opf_err *err);
/* Write every output's header (after any change to the context). */
int opf_session_begin(opf_session *s, opf_err *err);
/* Measure one pass of case c (opf_measure with the session's settings and counters) and
 * post-process the result (opf_session_finish_result). */
int opf_session_measure(opf_session *s, opf_case *c, const char *set, opf_pass pass, opf_result *r);
/* Post-processing of a result measured elsewhere (an isolated case's process): the roofline
 * bound and time from the session's machine ceilings. */
void opf_session_finish_result(const opf_session *s, opf_result *r);
/* Emit r to every output (r stays the caller's). OPF_EIO when an output fails. */
int opf_session_record(opf_session *s, const opf_result *r);
/* End: finish the context (load at the end, ...) and every output; commit = 0 discards files
 * being written atomically (a failed run leaves no half-written report). */
int opf_session_end(opf_session *s, int commit, opf_err *err);
void opf_session_free(opf_session *s);

/* The session's parts, for a caller that adds to them (the CLI's BLAS and back-end context,
 * region hooks, the peer join). */
opf_settings *opf_session_settings(opf_session *s);
opf_context *opf_session_context(opf_session *s);
opf_pmu *opf_session_pmu(opf_session *s);
/* The roofline ceilings the session loaded (NULL: none; `opperf machine` measures them). */
const opf_machine *opf_session_machine(const opf_session *s);
opf_emitter **opf_session_emitters(opf_session *s, int *n);

#endif

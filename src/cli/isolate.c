/* isolate.c: `opperf run --isolate`: each case runs in a process of its own, forked by the
 * library's case server (src/caseserver.c) from a state planned once, before any thread pool
 * or counter exists; the case's process sends its results back in the wire format
 * (src/wire.c). A crash (any fatal signal), an early exit or a case running past --timeout
 * becomes a result with status crashed, error or timeout, and the run goes on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isolate.h"
#include "opperf/wire.h"

int cli_isolate_start(opf_case_server **s, opf_case_job job, void *ctx) {
  opf_err e;
  if (opf_case_server_start(s, job, ctx, &e)) return cli_usage_error("%s", e.msg);
  return 0;
}

int cli_child_send(int fd, const opf_result *r) {
  char *buf;
  size_t len;
  if (opf_wire_encode(r, &buf, &len, NULL)) return -1;
  int rc = 0;
  for (size_t off = 0; off < len && !rc;) {
    ssize_t w = write(fd, buf + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) rc = -1;
    else off += (size_t)w;
  }
  free(buf);
  return rc;
}

int cli_isolate_run(opf_case_server *srv, int index, const opf_case *c, const char *set,
                    const opf_pass *passes, int np, double timeout, const opf_pmu *pmu,
                    volatile sig_atomic_t *stop, opf_result *out) {
  char *buf = NULL;
  size_t len = 0;
  opf_case_exit how;
  opf_err e = {0};
  char msg[OPF_ERR_MSG_MAX] = "";
  int got = 0;
  opf_status st = OPF_ST_ERROR;
  if (opf_case_server_run(srv, index, timeout, stop, &buf, &len, &how, &e)) {
    snprintf(msg, sizeof msg, "%s", e.msg);
  } else {
    for (size_t pos = 0, used = 0; got < np && pos < len; pos += used, got++)
      if (opf_wire_decode(buf + pos, len - pos, &out[got], &used, &e)) break;
    if (got == np) {
      free(buf);
      return np;
    }
    if (how.timed_out) {
      st = OPF_ST_TIMEOUT;
      snprintf(msg, sizeof msg, "exceeded --timeout %g s and was killed", timeout);
    } else if (how.interrupted) {
      snprintf(msg, sizeof msg, "interrupted (killed by a second Ctrl-C)");
    } else if (how.signaled) {
      st = OPF_ST_CRASHED;
      snprintf(msg, sizeof msg, "killed by signal %d (%s)", how.sig, strsignal(how.sig));
    } else if (how.exited && how.code) {
      /* e.g. a sanitizer caught the fault and exited, or the kernel called exit() */
      st = OPF_ST_CRASHED;
      snprintf(msg, sizeof msg, "the case's process exited with status %d before reporting", how.code);
    } else {
      snprintf(msg, sizeof msg, "the case's process sent a damaged result: %.400s", e.msg[0] ? e.msg : "results missing");
    }
  }
  free(buf);
  for (int i = got; i < np; i++) {
    opf_result_init(&out[i], c, set, passes[i], pmu);
    out[i].status = i == got ? st : OPF_ST_SKIPPED;
    snprintf(out[i].message, sizeof out[i].message, "%s", i == got ? msg : "not run: an earlier pass of this case failed");
  }
  return np;
}

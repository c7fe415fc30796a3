/* perfctl.h: bracketing the measured region for `perf record --control`. When opperf runs under
 * `perf record -D -1 --control=fifo:CTL,ACK` (or fd:CTL,ACK), these hooks send "enable" right
 * before each measured sample and "disable" right after it, and wait for perf's "ack" each time,
 * so the profile holds exactly the operator's measured calls (no warm-up, calibration or set-up). */
#ifndef OPPERF_PERFCTL_H
#define OPPERF_PERFCTL_H

#include "opperf/error.h"
#include "opperf/harness.h"

typedef struct opf_perfctl {
  int ctl_fd, ack_fd;   /* -1 when absent (no ack: commands are not confirmed) */
  int owns_fds;         /* fifo: opened here, closed by opf_perfctl_close */
  double ack_timeout;   /* seconds to wait for each ack (default 10) */
  int enabled;          /* perf is counting (an enable was acknowledged) */
  long commands;        /* enable/disable commands sent (and acknowledged when acked) */
  opf_err err;          /* the first failure inside a hook (err.code != 0): no further commands */
} opf_perfctl;

/* spec: "fifo:CTL[,ACK]" (paths perf was given) or "fd:CTL[,ACK]" (descriptors inherited from
 * the shell that started perf). OPF_EINVAL for a malformed spec, OPF_EIO when the control fifo
 * has no reader (perf is not running with it) or a descriptor is not open; message in err. */
int opf_perfctl_open(opf_perfctl *p, const char *spec, opf_err *err);
/* Sends "enable" or "disable" and waits for the ack (when an ack channel exists). */
int opf_perfctl_send(opf_perfctl *p, const char *cmd, opf_err *err);
/* Hooks for opf_settings.hooks (usually through an opf_hook_chain); ctx is p. A failed command
 * is recorded in p->err and stops further commands; the measurement itself goes on. */
opf_region_hooks opf_perfctl_hooks(opf_perfctl *p);
/* Leaves perf disabled (when this side enabled it) and closes the fifos opened here. */
void opf_perfctl_close(opf_perfctl *p);

#endif

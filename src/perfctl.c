/* perfctl.c: the client side of perf record's control protocol (perf-record(1), --control):
 * commands are lines ("enable\n", "disable\n") written to the control channel; perf answers
 * each with "ack\n" (followed by a NUL) on the ack channel once the events are switched. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opperf/perfctl.h"

static int parse_fd(const char *s, int *fd) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0 || v > 65535) return -1;
  *fd = (int)v;
  return 0;
}

int opf_perfctl_open(opf_perfctl *p, const char *spec, opf_err *err) {
  memset(p, 0, sizeof *p);
  p->ctl_fd = p->ack_fd = -1;
  p->ack_timeout = 10.0;
  char buf[1024];
  if (!spec || strlen(spec) >= sizeof buf)
    return opf_err_set(err, OPF_EINVAL, "perf control: missing or too long spec (use fifo:CTL,ACK or fd:CTL,ACK)");
  snprintf(buf, sizeof buf, "%s", spec);
  char *colon = strchr(buf, ':');
  if (!colon) return opf_err_set(err, OPF_EINVAL, "perf control '%s': use fifo:CTL,ACK or fd:CTL,ACK", spec);
  *colon = '\0';
  char *ctl = colon + 1, *ack = strchr(ctl, ',');
  if (ack) *ack++ = '\0';
  if (!*ctl || (ack && !*ack))
    return opf_err_set(err, OPF_EINVAL, "perf control '%s': empty control or ack channel", spec);
  if (!strcmp(buf, "fd")) {
    if (parse_fd(ctl, &p->ctl_fd) || (ack && parse_fd(ack, &p->ack_fd)))
      return opf_err_set(err, OPF_EINVAL, "perf control '%s': descriptors must be numbers", spec);
    if (fcntl(p->ctl_fd, F_GETFD) < 0 || (ack && fcntl(p->ack_fd, F_GETFD) < 0)) {
      p->ctl_fd = p->ack_fd = -1;
      return opf_err_set(err, OPF_EIO, "perf control '%s': descriptor not open (start opperf from the shell that opened them for perf)", spec);
    }
    return OPF_OK;
  }
  if (strcmp(buf, "fifo"))
    return opf_err_set(err, OPF_EINVAL, "perf control '%s': unknown kind '%s' (use fifo: or fd:)", spec, buf);
  /* Write-only and non-blocking: fails with ENXIO unless perf holds the fifo open for reading. */
  p->ctl_fd = open(ctl, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (p->ctl_fd < 0) {
    int e = errno;
    return opf_err_set(err, OPF_EIO, "perf control fifo '%s': %s", ctl,
                       e == ENXIO ? "no reader (is perf record running with --control on it?)" : strerror(e));
  }
  if (ack) {
    /* Read-write: poll never reports a hang-up before perf's first write. */
    p->ack_fd = open(ack, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (p->ack_fd < 0) {
      int e = errno;
      close(p->ctl_fd);
      p->ctl_fd = -1;
      return opf_err_set(err, OPF_EIO, "perf ack fifo '%s': %s", ack, strerror(e));
    }
  }
  p->owns_fds = 1;
  return OPF_OK;
}

static int wait_fd(int fd, short ev, double deadline) {
  for (;;) {
    double left = deadline - opf_now();
    if (left <= 0) return 0;
    struct pollfd pf = {fd, ev, 0};
    int n = poll(&pf, 1, (int)(left * 1000) + 1);
    if (n > 0) return (pf.revents & (ev | POLLERR | POLLHUP)) ? 1 : 0;
    if (n < 0 && errno != EINTR) return -1;
  }
}

int opf_perfctl_send(opf_perfctl *p, const char *cmd, opf_err *err) {
  if (p->ctl_fd < 0) return opf_err_set(err, OPF_EINVAL, "perf control is not open");
  double deadline = opf_now() + p->ack_timeout;
  char line[32];
  int len = snprintf(line, sizeof line, "%s\n", cmd);
  for (int off = 0; off < len;) {
    ssize_t w = write(p->ctl_fd, line + off, (size_t)(len - off));
    if (w > 0) {
      off += (int)w;
    } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (wait_fd(p->ctl_fd, POLLOUT, deadline) <= 0)
        return opf_err_set(err, OPF_EIO, "perf control: cannot write '%s' (perf not reading)", cmd);
    } else {
      return opf_err_set(err, OPF_EIO, "perf control: writing '%s': %s", cmd, w < 0 ? strerror(errno) : "short write");
    }
  }
  if (p->ack_fd >= 0) {
    /* Collect bytes until "ack\n"; a NUL perf sends after it may arrive with the next answer. */
    char got[64];
    size_t n = 0;
    while (!memmem(got, n, "ack\n", 4)) {
      int w = wait_fd(p->ack_fd, POLLIN, deadline);
      if (w <= 0)
        return opf_err_set(err, OPF_EIO, "perf control: no ack for '%s' within %.0f s", cmd, p->ack_timeout);
      if (n == sizeof got) { /* keep the tail, where a split "ack\n" would be */
        memmove(got, got + n - 3, 3);
        n = 3;
      }
      ssize_t r = read(p->ack_fd, got + n, sizeof got - n);
      if (r > 0) n += (size_t)r;
      else if (r == 0 || (errno != EAGAIN && errno != EINTR))
        return opf_err_set(err, OPF_EIO, "perf control: ack channel closed while waiting for '%s'", cmd);
    }
  }
  p->commands++;
  p->enabled = !strcmp(cmd, "enable");
  return OPF_OK;
}

static void hook_cmd(opf_perfctl *p, const char *cmd) {
  if (p->err.code || p->ctl_fd < 0) return;
  opf_perfctl_send(p, cmd, &p->err);
}

static void hook_begin(void *ctx) { hook_cmd(ctx, "enable"); }
static void hook_end(void *ctx) { hook_cmd(ctx, "disable"); }

opf_region_hooks opf_perfctl_hooks(opf_perfctl *p) {
  opf_region_hooks h = {hook_begin, hook_end, NULL, p};
  return h;
}

void opf_perfctl_close(opf_perfctl *p) {
  if (p->enabled && p->ctl_fd >= 0 && !p->err.code) opf_perfctl_send(p, "disable", &p->err);
  if (p->owns_fds) {
    if (p->ctl_fd >= 0) close(p->ctl_fd);
    if (p->ack_fd >= 0) close(p->ack_fd);
  }
  p->ctl_fd = p->ack_fd = -1;
  p->owns_fds = 0;
}

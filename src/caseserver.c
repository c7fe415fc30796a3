/* caseserver.c: the isolated-case server (include/opperf/caseserver.h). The caller and the
 * server talk over a SOCK_SEQPACKET socket pair, one message per step:
 *   caller -> server  int32 index                  run the job for this case
 *   server -> caller  int32 pid + the pipe's read end (SCM_RIGHTS)
 *   server -> caller  int32 wait status            once the child is gone
 * The server forks the child, which writes into the pipe; the caller reads it (with its
 * timeout, killing the child by pid when it expires) while the server waits for the child
 * and reports its status. Forking from the server instead of re-executing the program saves
 * the start-up of every case (loading, planning every case, encoding the counters); the
 * server itself never runs an operator, so the children fork from a state without thread
 * pools (libgomp's and OpenBLAS's are not fork-safe once started). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opperf/caseserver.h"

struct opf_case_server {
  int sock; /* the caller's end */
  pid_t pid;
};

static int send_msg(int sock, int32_t v, int fd) {
  struct iovec iov = {.iov_base = &v, .iov_len = sizeof v};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    memset(&u, 0, sizeof u);
    m.msg_control = u.buf;
    m.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t w;
  do w = sendmsg(sock, &m, MSG_NOSIGNAL);
  while (w < 0 && errno == EINTR);
  return w == (ssize_t)sizeof v ? 0 : -1;
}

/* One message: its int32, and the fd it carries (-1 when none). 0, or -1 (EOF or error). */
static int recv_msg(int sock, int32_t *v, int *fd) {
  struct iovec iov = {.iov_base = v, .iov_len = sizeof *v};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  ssize_t r;
  do r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  while (r < 0 && errno == EINTR);
  if (fd) *fd = -1;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); r > 0 && c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int got;
      memcpy(&got, CMSG_DATA(c), sizeof got);
      if (fd) *fd = got;
      else close(got);
    }
  return r == (ssize_t)sizeof *v ? 0 : -1;
}

/* The server's loop: one child at a time, until the caller closes its end. */
static void serve(int sock, opf_case_job job, void *ctx) {
  int32_t index;
  while (recv_msg(sock, &index, NULL) == 0) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) {
      send_msg(sock, -1, -1);
      continue;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(sock);
      close(fds[0]);
      signal(SIGINT, SIG_IGN); /* the caller decides when the run stops */
      signal(SIGTERM, SIG_IGN);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int rc = job(ctx, index, fds[1]);
      fflush(NULL); /* its own output only: the server started with empty buffers */
      _exit(rc & 0xff);
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      send_msg(sock, -1, -1);
      continue;
    }
    int sent = send_msg(sock, (int32_t)pid, fds[0]);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (sent || send_msg(sock, (int32_t)status, -1)) break;
  }
  close(sock);
}

int opf_case_server_start(opf_case_server **out, opf_case_job job, void *ctx, opf_err *err) {
  *out = NULL;
  opf_case_server *s = calloc(1, sizeof *s);
  if (!s) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
    free(s);
    return opf_err_set(err, OPF_ESYS, "cannot start the case server: socketpair: %s", strerror(errno));
  }
  pid_t parent = getpid();
  fflush(NULL); /* or every child would write the caller's pending output again */
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    free(s);
    return opf_err_set(err, OPF_ESYS, "cannot start the case server: fork: %s", strerror(errno));
  }
  if (pid == 0) {
    close(sv[0]);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0); /* the caller died before the line above */
    serve(sv[1], job, ctx);
    _exit(0);
  }
  close(sv[1]);
  s->sock = sv[0];
  s->pid = pid;
  *out = s;
  return OPF_OK;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int opf_case_server_run(opf_case_server *s, int index, double timeout, volatile sig_atomic_t *stop,
                        char **out, size_t *out_len, opf_case_exit *how, opf_err *err) {
  *out = NULL;
  *out_len = 0;
  memset(how, 0, sizeof *how);
  int32_t pid, status;
  int fd = -1;
  if (!s || send_msg(s->sock, index, -1) || recv_msg(s->sock, &pid, &fd))
    return opf_err_set(err, OPF_ESYS, "the case server is gone");
  if (pid < 0 || fd < 0) {
    if (fd >= 0) close(fd);
    return opf_err_set(err, OPF_ESYS, "the case server could not start the case's process");
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  double deadline = timeout > 0 ? now_s() + timeout : 0;
  int rc = OPF_OK;
  for (;;) {
    int wait_ms = 200;
    if (deadline > 0) {
      double left = deadline - now_s();
      if (left <= 0) {
        how->timed_out = 1;
        break;
      }
      if (left * 1000 < wait_ms) wait_ms = (int)(left * 1000) + 1;
    }
    if (stop && *stop > 1) {
      how->interrupted = 1;
      break;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int pr = poll(&p, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) continue;
    if (len + 65536 > cap) {
      size_t nc = cap ? 2 * cap : 1 << 16;
      char *nb = realloc(buf, nc);
      if (!nb) {
        rc = opf_err_set(err, OPF_ENOMEM, "out of memory reading a case's results");
        how->interrupted = 1;
        break;
      }
      buf = nb;
      cap = nc;
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
  }
  if (how->timed_out || how->interrupted) kill(pid, SIGKILL);
  close(fd);
  if (recv_msg(s->sock, &status, NULL)) {
    free(buf);
    return opf_err_set(err, OPF_ESYS, "the case server is gone");
  }
  if (WIFEXITED(status)) {
    how->exited = 1;
    how->code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    how->signaled = 1;
    how->sig = WTERMSIG(status);
  }
  *out = buf;
  *out_len = len;
  return rc;
}

void opf_case_server_stop(opf_case_server *s) {
  if (!s) return;
  close(s->sock);
  while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  free(s);
}

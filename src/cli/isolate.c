/* isolate.c: `opperf run --isolate`: each case runs in a child process, this executable re-run
 * with the same arguments plus "--child-case I --child-fd FD" (exec, not a bare fork: the
 * OpenMP and OpenBLAS thread pools are not fork-safe), which measures case I and sends its
 * results back through a pipe. A crash (any fatal signal) or a case running past --timeout
 * becomes a result with status crashed or timeout, and the run goes on. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "isolate.h"

#define MAGIC 0x6f706672u /* "opfr" */

static char **saved;
static int n_saved;
/* OPPERF_EXEC_WRAPPER: a program that runs the re-executed child, as `WRAPPER EXE ARGS...`:
 * qemu-aarch64-static when opperf itself runs under qemu-user on a host without binfmt_misc
 * (there the kernel cannot exec the arm64 binary that /proc/self/exe names). EXE is this
 * program's path, read before any fork. */
static char self_exe[4096];

void cli_isolate_save_args(int argc, char **argv) {
  saved = calloc((size_t)argc + 6, sizeof *saved);
  if (!saved) return;
  saved[0] = "opperf";
  for (int i = 0; i < argc; i++) saved[i + 1] = strdup(argv[i]);
  n_saved = argc + 1;
  ssize_t l = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  self_exe[l > 0 ? l : 0] = '\0';
}

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int cli_child_send(int fd, const opf_result *r) {
  unsigned magic = MAGIC;
  int rc = write_all(fd, &magic, sizeof magic) || write_all(fd, r, sizeof *r);
  if (r->samples) rc |= write_all(fd, r->samples, sizeof *r->samples * (size_t)r->n_samples);
  if (r->cpu_samples) rc |= write_all(fd, r->cpu_samples, sizeof *r->cpu_samples * (size_t)r->n_samples);
  if (r->sample_start) rc |= write_all(fd, r->sample_start, sizeof *r->sample_start * (size_t)r->n_samples);
  for (int i = 0; i < r->n_events; i++)
    if (r->events[i].raw) rc |= write_all(fd, r->events[i].raw, sizeof(double) * (size_t)r->events[i].n_raw);
  if (r->folded) rc |= write_all(fd, r->folded, r->folded_len); /* --profile-folded */
  return rc ? -1 : 0;
}

/* A copy of n doubles at *pos, advancing it; NULL (and *ok = 0) when the buffer is short. */
static double *take(const char *buf, size_t len, size_t *pos, int n, int *ok) {
  size_t b = sizeof(double) * (size_t)n;
  if (n < 0 || *pos + b > len) {
    *ok = 0;
    return NULL;
  }
  double *d = malloc(b ? b : 1);
  if (!d) {
    *ok = 0;
    return NULL;
  }
  memcpy(d, buf + *pos, b);
  *pos += b;
  return d;
}

/* A NUL-terminated copy of n bytes at *pos (folded stacks), advancing it; like take. */
static char *take_text(const char *buf, size_t len, size_t *pos, size_t n, int *ok) {
  char *s = n <= len - *pos ? malloc(n + 1) : NULL;
  if (!s) {
    *ok = 0;
    return NULL;
  }
  memcpy(s, buf + *pos, n);
  s[n] = '\0';
  *pos += n;
  return s;
}

/* Parse the results a child sent; returns how many complete ones were read. */
static int parse(const char *buf, size_t len, opf_result *out, int max) {
  size_t pos = 0;
  int n = 0;
  while (n < max && pos + sizeof(unsigned) + sizeof(opf_result) <= len) {
    unsigned magic;
    memcpy(&magic, buf + pos, sizeof magic);
    if (magic != MAGIC) break;
    pos += sizeof magic;
    opf_result *r = &out[n];
    memcpy(r, buf + pos, sizeof *r);
    pos += sizeof *r;
    int ok = 1, has_s = r->samples != NULL, has_c = r->cpu_samples != NULL;
    int has_t = r->sample_start != NULL, has_f = r->folded != NULL;
    r->samples = r->cpu_samples = r->sample_start = NULL;
    r->folded = NULL;
    int has_raw[OPF_PMU_MAX_EVENTS];
    for (int i = 0; i < r->n_events && i < OPF_PMU_MAX_EVENTS; i++) {
      has_raw[i] = r->events[i].raw != NULL;
      r->events[i].raw = NULL;
    }
    if (has_s) r->samples = take(buf, len, &pos, r->n_samples, &ok);
    if (has_c && ok) r->cpu_samples = take(buf, len, &pos, r->n_samples, &ok);
    if (has_t && ok) r->sample_start = take(buf, len, &pos, r->n_samples, &ok);
    for (int i = 0; ok && i < r->n_events && i < OPF_PMU_MAX_EVENTS; i++)
      if (has_raw[i]) r->events[i].raw = take(buf, len, &pos, r->events[i].n_raw, &ok);
    if (has_f && ok) r->folded = take_text(buf, len, &pos, r->folded_len, &ok);
    if (!ok) {
      opf_result_release(r);
      break;
    }
    n++;
  }
  return n;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cli_isolate_run(int index, const opf_case *c, const char *set, const opf_pass *passes,
                    int np, double timeout, const opf_pmu *pmu, volatile sig_atomic_t *stop,
                    opf_result *out) {
  int fds[2];
  char idx[24], fdarg[24];
  const char *why = NULL;
  char msg[160] = "";
  opf_status st = OPF_ST_ERROR;
  if (!saved || pipe(fds)) {
    why = "cannot start the case's process (no pipe)";
    goto fill_rest_early;
  }
  snprintf(idx, sizeof idx, "%d", index);
  snprintf(fdarg, sizeof fdarg, "%d", fds[1]);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    why = "cannot start the case's process (fork failed)";
    goto fill_rest_early;
  }
  if (pid == 0) {
    close(fds[0]);
    /* Ctrl-C stops the run after the current case: the child finishes it (the parent decides). */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    char **argv = saved;
    argv[n_saved] = "--child-case";
    argv[n_saved + 1] = idx;
    argv[n_saved + 2] = "--child-fd";
    argv[n_saved + 3] = fdarg;
    argv[n_saved + 4] = NULL;
    const char *wrap = getenv("OPPERF_EXEC_WRAPPER");
    if (wrap && *wrap && self_exe[0]) {
      char *wargv[n_saved + 6]; /* on the stack: no malloc between fork and exec */
      wargv[0] = (char *)wrap;
      wargv[1] = self_exe;
      for (int i = 1; i <= n_saved + 4; i++) wargv[i + 1] = argv[i];
      execvp(wrap, wargv);
      _exit(127);
    }
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(fds[1]);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  double deadline = timeout > 0 ? now_s() + timeout : 0;
  int timed_out = 0, killed = 0;
  for (;;) {
    int wait_ms = -1;
    if (deadline > 0) {
      double left = deadline - now_s();
      if (left <= 0) {
        timed_out = 1;
        break;
      }
      wait_ms = (int)(left * 1000) + 1;
    }
    if (*stop > 1) { /* a second Ctrl-C: do not wait for the case */
      killed = 1;
      break;
    }
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    int pr = poll(&p, 1, wait_ms < 0 || wait_ms > 200 ? 200 : wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) continue;
    if (len + 65536 > cap) {
      cap = cap ? 2 * cap : 1 << 20;
      char *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    ssize_t r = read(fds[0], buf + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
  }
  if (timed_out || killed) kill(pid, SIGKILL);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int got = buf ? parse(buf, len, out, np) : 0;
  free(buf);
  if (got == np) return np;
  if (timed_out) {
    st = OPF_ST_TIMEOUT;
    snprintf(msg, sizeof msg, "exceeded --timeout %g s and was killed", timeout);
  } else if (killed) {
    snprintf(msg, sizeof msg, "interrupted (killed by a second Ctrl-C)");
  } else if (WIFSIGNALED(status)) {
    st = OPF_ST_CRASHED;
    snprintf(msg, sizeof msg, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else {
    /* e.g. a sanitizer caught the fault and exited, or the kernel called exit() */
    st = OPF_ST_CRASHED;
    snprintf(msg, sizeof msg, "the case's process exited with status %d before reporting",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  for (int i = got; i < np; i++) {
    opf_result_init(&out[i], c, set, passes[i], pmu);
    out[i].status = i == got ? st : OPF_ST_SKIPPED;
    snprintf(out[i].message, sizeof out[i].message, "%s", i == got ? msg : "not run: an earlier pass of this case failed");
  }
  return np;

fill_rest_early:
  for (int i = 0; i < np; i++) {
    opf_result_init(&out[i], c, set, passes[i], pmu);
    out[i].status = OPF_ST_ERROR;
    snprintf(out[i].message, sizeof out[i].message, "%s", why);
  }
  return np;
}

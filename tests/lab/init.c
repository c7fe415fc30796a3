/* init.c: /init of the PMU lab's initramfs (statically linked for aarch64, see scripts/pmu-lab).
 * Mounts /proc, /sys, /dev and debugfs, runs each line of /lab/plan ("<timeout-s> <program>
 * [args...]") in turn, turns crashes, timeouts and stray exit codes into "LAB <name> FAIL"
 * lines on the console, prints "LAB-DONE" and powers the machine off. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void console(void) {
  int fd = open("/dev/console", O_RDWR | O_NOCTTY);
  if (fd < 0) return;
  dup2(fd, 0);
  dup2(fd, 1);
  dup2(fd, 2);
  if (fd > 2) close(fd);
}

static void mnt(const char *src, const char *dir, const char *type) {
  mkdir(dir, 0755);
  if (mount(src, dir, type, 0, NULL) != 0 && errno != EBUSY)
    printf("NOTE init: mount %s on %s: %s\n", type, dir, strerror(errno));
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Run one plan line; returns after the program ended or was killed at its timeout. */
static void run_line(char *line) {
  char *argv[32];
  int argc = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " \t\n", &save); t && argc < 31; t = strtok_r(NULL, " \t\n", &save))
    argv[argc++] = t;
  argv[argc] = NULL;
  if (argc < 2 || argv[0][0] == '#') return;
  int timeout = atoi(argv[0]);
  const char *prog = argv[1];
  const char *name = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
  printf("LABRUN %s\n", name);
  fflush(stdout);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    printf("LAB %s FAIL init could not fork: %s\n", name, strerror(errno));
    return;
  }
  if (pid == 0) {
    execv(prog, &argv[1]);
    printf("LAB %s FAIL cannot execute %s: %s\n", name, prog, strerror(errno));
    fflush(stdout);
    _exit(127);
  }
  int st = 0, timed_out = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (now_s() - t0 > timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      timed_out = 1;
      break;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  /* Exit 0: passed; 1: the program printed its FAIL lines; 77: it printed SKIP lines. */
  if (timed_out)
    printf("LAB %s FAIL timed out after %d s (guest time)\n", name, timeout);
  else if (WIFSIGNALED(st))
    printf("LAB %s FAIL killed by signal %d (%s)\n", name, WTERMSIG(st), strsignal(WTERMSIG(st)));
  else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1 && WEXITSTATUS(st) != 77)
    printf("LAB %s FAIL exit status %d\n", name, WEXITSTATUS(st));
  printf("LABEND %s status=%d guest_s=%.2f\n", name, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
         now_s() - t0);
  fflush(stdout);
}

int main(void) {
  mnt("devtmpfs", "/dev", "devtmpfs");
  console();
  mnt("proc", "/proc", "proc");
  mnt("sysfs", "/sys", "sysfs");
  mnt("debugfs", "/sys/kernel/debug", "debugfs");
  mnt("tmpfs", "/tmp", "tmpfs");
  setenv("PATH", "/bin", 1);
  setenv("LD_LIBRARY_PATH", "/lib", 1);
  setenv("HOME", "/tmp", 1);
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("LAB-START\n");
  FILE *f = fopen("/lab/plan", "re");
  if (!f) {
    printf("LAB init FAIL cannot open /lab/plan: %s\n", strerror(errno));
  } else {
    char line[1024];
    while (fgets(line, sizeof line, f)) run_line(line);
    fclose(f);
  }
  printf("LAB-DONE\n");
  fflush(stdout);
  sync();
  reboot(RB_POWER_OFF);
  for (;;) pause(); /* init must not exit: the kernel would panic */
}

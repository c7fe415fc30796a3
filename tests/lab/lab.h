/* lab.h: helpers shared by the PMU lab programs (tests/lab/lab_*.c), which run as root inside an
 * emulated aarch64 machine (qemu -cpu max,pmu=on -icount shift=0, see scripts/pmu-lab) where the
 * PMUv3 counts are exact. A loop of known length, raw perf_event_open, and the result line the
 * lab's /init and scripts/pmu-lab parse: "LAB <name> PASS|FAIL|SKIP <detail>". */
#ifndef OPPERF_LAB_H
#define OPPERF_LAB_H

#include <linux/perf_event.h>

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opperf/pmu.h"

/* ---- the known loop ----------------------------------------------------------------------
 * Exactly LAB_INSNS_PER_ITER instructions per iteration ("subs; b.ne"); n must be >= 1.
 * Everything around it (call, return) is a constant, so count(2n) - count(n) == 2n exactly. */
#define LAB_INSNS_PER_ITER 2
static __attribute__((noinline, unused)) void lab_loop(uint64_t n) {
#if defined(__aarch64__)
  __asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
#else
#error "the PMU lab programs are aarch64 only (they run in qemu-system-aarch64)"
#endif
}

/* ---- result lines ------------------------------------------------------------------------ */
static int lab_failed; /* any FAIL printed by this program: its exit status is 1 */

static inline void lab_result(const char *name, const char *verdict, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void lab_result(const char *name, const char *verdict, const char *fmt, ...) {
  char detail[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  for (char *c = detail; *c; c++)
    if (*c == '\n') *c = ' '; /* one line per result */
  printf("LAB %s %s %s\n", name, verdict, detail);
  fflush(stdout);
  if (strcmp(verdict, "FAIL") == 0) lab_failed = 1;
}
#define LAB_PASS(name, ...) lab_result(name, "PASS", __VA_ARGS__)
#define LAB_FAIL(name, ...) lab_result(name, "FAIL", __VA_ARGS__)
#define LAB_SKIP(name, ...) lab_result(name, "SKIP", __VA_ARGS__)
/* Free-form evidence (counts, fractions) for the log; not parsed as a result. */
#define LAB_NOTE(...)                                                                          \
  do {                                                                                         \
    printf("NOTE " __VA_ARGS__);                                                               \
    printf("\n");                                                                              \
    fflush(stdout);                                                                            \
  } while (0)

/* ---- raw perf_event_open ----------------------------------------------------------------- */
static inline int lab_perf_open(struct perf_event_attr *a, int pid, int cpu, int group_fd) {
  return (int)syscall(SYS_perf_event_open, a, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

/* A user-space-only counting attribute (type, config), read with enabled/running times. */
static inline struct perf_event_attr lab_attr(uint32_t type, uint64_t config, int group_fmt) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                  (group_fmt ? PERF_FORMAT_GROUP : 0);
  return a;
}

/* One non-group counter: value, enabled, running. Returns 0 or -errno. */
typedef struct lab_count {
  uint64_t value, enabled, running;
} lab_count;
static inline int lab_read1(int fd, lab_count *c) {
  uint64_t buf[3];
  if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return errno ? -errno : -EIO;
  c->value = buf[0];
  c->enabled = buf[1];
  c->running = buf[2];
  return 0;
}

/* Count user-space instructions of lab_loop(n) on this thread with one raw counter (the ground
 * truth of the other tests). Returns the count, or 0 with errno set. */
static inline uint64_t lab_raw_loop_insns(uint64_t n) {
  struct perf_event_attr a = lab_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0);
  a.disabled = 1;
  int fd = lab_perf_open(&a, 0, -1, -1);
  if (fd < 0) return 0;
  ioctl(fd, PERF_EVENT_IOC_RESET, 0);
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  lab_loop(n);
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  lab_count c = {0, 0, 0};
  int rc = lab_read1(fd, &c);
  close(fd);
  if (rc < 0 || c.running != c.enabled) {
    errno = rc < 0 ? -rc : EAGAIN;
    return 0;
  }
  return c.value;
}

/* ---- opperf's snapshot type --------------------------------------------------------------
 * opf_pmu_snap is a plain struct in the first pmu.c and an opaque type with
 * opf_pmu_snap_new/opf_pmu_snap_free after the rewrite (issue 22). scripts/pmu-lab defines
 * LAB_SNAP_OPAQUE when include/opperf/pmu.h declares opf_pmu_snap_new. */
#ifdef LAB_SNAP_OPAQUE
static inline opf_pmu_snap *lab_snap_new(void) { return opf_pmu_snap_new(); }
static inline void lab_snap_free(opf_pmu_snap *s) { opf_pmu_snap_free(s); }
#else
static inline opf_pmu_snap *lab_snap_new(void) { return calloc(1, sizeof(opf_pmu_snap)); }
static inline void lab_snap_free(opf_pmu_snap *s) { free(s); }
#endif

/* |a - b| / b */
static inline double lab_rel(double a, double b) { return b != 0 ? (a > b ? a - b : b - a) / b : 1e9; }

static inline int lab_exit(void) { return lab_failed ? 1 : 0; }

#endif

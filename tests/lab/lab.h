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

/* ---- a measurement through opperf's API --------------------------------------------------
 * One opf_pmu_read before and after work(arg); per event: ok (opf_pmu_delta returned 1, i.e.
 * it ran), the scaled value and the running fraction. Returns 0, or the opf_pmu_read error. */
typedef struct lab_meas {
  int ok[OPF_PMU_MAX_EVENTS];
  double value[OPF_PMU_MAX_EVENTS];
  double frac[OPF_PMU_MAX_EVENTS];
} lab_meas;
static inline int lab_measure(opf_pmu *p, void (*work)(void *), void *arg, lab_meas *m) {
  memset(m, 0, sizeof *m);
  opf_pmu_snap *a = lab_snap_new(), *b = lab_snap_new();
  int rc = a && b ? OPF_OK : OPF_ENOMEM;
  if (rc == OPF_OK) rc = opf_pmu_read(p, b); /* sizes b: its first read would allocate */
  if (rc == OPF_OK) rc = opf_pmu_read(p, a);
  if (rc == OPF_OK) {
    work(arg);
    rc = opf_pmu_read(p, b);
  }
  for (size_t i = 0; rc == OPF_OK && i < opf_pmu_count(p) && i < OPF_PMU_MAX_EVENTS; i++)
    m->ok[i] = opf_pmu_delta(p, i, a, b, &m->value[i], &m->frac[i]);
  lab_snap_free(a);
  lab_snap_free(b);
  return rc;
}
static inline void lab_work_loop(void *n) { lab_loop(*(const uint64_t *)n); }

/* Create and open an opperf counter set; NULL (after a FAIL line for name) on failure. */
static inline opf_pmu *lab_opf_open(const char *name, const char *events) {
  opf_err err = {0, ""};
  opf_pmu *p = NULL;
  if (opf_pmu_create(&p, events, NULL, &err) != OPF_OK) {
    LAB_FAIL(name, "opf_pmu_create(\"%s\"): %s", events, err.msg);
    return NULL;
  }
  if (opf_pmu_open(p, &err) != OPF_OK || opf_pmu_n_open(p) == 0) {
    LAB_FAIL(name, "opf_pmu_open(\"%s\"): %s (%zu open)", events, err.msg, opf_pmu_n_open(p));
    opf_pmu_free(p);
    return NULL;
  }
  return p;
}

/* Log every event of p with its group, status and (if m) the measured value and fraction. */
static inline void lab_note_events(const char *name, const opf_pmu *p, const lab_meas *m) {
#ifdef LAB_SNAP_OPAQUE
  LAB_NOTE("%s: %s", name, opf_pmu_group_note(p));
#endif
  for (size_t i = 0; i < opf_pmu_count(p); i++) {
    const opf_pmu_event *ev = opf_pmu_event_at(p, i);
    if (m && m->ok[i])
      LAB_NOTE("%s: %-14s group %2d %-13s value %.0f running %.1f%%", name, ev->name, ev->group,
               opf_ev_status_name(ev->status), m->value[i], 100.0 * m->frac[i]);
    else
      LAB_NOTE("%s: %-14s group %2d %-13s %s%s%s", name, ev->name, ev->group,
               opf_ev_status_name(ev->status), m ? "DID NOT RUN" : "", ev->reason[0] ? ": " : "",
               ev->reason);
  }
}

/* Is event i of p one that counts user-space instructions (instructions, r08)? */
static inline int lab_is_insns(const opf_pmu *p, size_t i) {
  const opf_pmu_event *ev = opf_pmu_event_at(p, i);
  return (ev->type == PERF_TYPE_HARDWARE && ev->config == PERF_COUNT_HW_INSTRUCTIONS) ||
         (ev->type == PERF_TYPE_RAW && ev->config == 0x08);
}

static inline int lab_exit(void) { return lab_failed ? 1 : 0; }

#endif

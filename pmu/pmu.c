/* pmu.c: performance counters of opperf (include/opperf/pmu.h). Parses the event list, opens
 * the events in groups (software / hardware) on every thread of the process with
 * perf_event_open, reads group snapshots and scales deltas by time enabled / running.
 * Failures are per event statuses with errno and a plain reason, modelled on perf stat. */
#include <linux/perf_event.h>
#include <perfmon/pfmlib.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "opperf/error.h"
#include "opperf/pmu.h"
#include "pmu_internal.h"

/* Why one group per thread and not inherit=1: inherit only follows threads created AFTER the
 * event is opened, and the harness opens counters after the OpenMP / OpenBLAS pools exist, so
 * their workers would be missed. Opening on each tid of /proc/self/task covers them.
 * Experiment on this project's VM (kernel 6.18.44, paranoid 2, as root and as nobody):
 * inherit=1 with PERF_FORMAT_GROUP is accepted (software leader and member, and a hardware
 * leader, all open),
 * and a group read of the parent's fd includes the counts of threads created after the open
 * (task-clock of two 50 ms threads appeared once they were joined). Older kernels were not
 * tried. Either way inherit cannot see threads that already exist, so it is not used. */

#define OPF_READ_FORMAT                                                                        \
  (PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |                       \
   PERF_FORMAT_TOTAL_TIME_RUNNING)

/* Group read layout: nr, time_enabled, time_running, then {value, id} per event. */
#define OPF_READ_WORDS (3 + 2 * OPF_PMU_MAX_EVENTS)

#define OPF_REASON_FD_LIMIT "too many open files (fd limit)"

enum { KIND_SW = 0, KIND_HW = 1 };

typedef struct pmu_ev {
  opf_pmu_event pub;
  struct perf_event_attr enc;  /* as encoded by libpfm4 */
  struct perf_event_attr attr; /* as opened: enc plus our read format and any fallback */
  int kind;                    /* KIND_SW or KIND_HW: which group it starts in */
  int open;                    /* open on every counted thread */
  int dropped;                 /* given up for this open(): NOT_SUPPORTED */
  int user_retry;              /* EACCES/EPERM fallback to user-only was tried and failed too */
} pmu_ev;

/* Events in the order of a group read: leader first, then members in the order attached. */
typedef struct pmu_group {
  int n;
  int ev[OPF_PMU_MAX_EVENTS];
} pmu_group;

typedef struct pmu_thread {
  int tid;
  int fd[OPF_PMU_MAX_EVENTS]; /* by event index, -1 if not open on this thread */
  uint64_t id[OPF_PMU_MAX_EVENTS];
} pmu_thread;

struct opf_pmu {
  opf_pmu_sys sys; /* never NULL members: real calls filled in */
  size_t n_ev;
  pmu_ev ev[OPF_PMU_MAX_EVENTS];
  int n_grp;
  pmu_group grp[OPF_PMU_MAX_EVENTS];
  int n_th;
  pmu_thread th[OPF_PMU_MAX_THREADS];
  size_t n_open;
  int hw_probe; /* per open(): -1 not probed, 0 no hardware PMU, 1 a PMU answers */
};

/* ---- system calls ---------------------------------------------------------------------- */

static long real_perf_event_open(void *attr, int pid, int cpu, int group_fd, unsigned long flags) {
  return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}
static long real_read(int fd, void *buf, size_t n) { return (long)read(fd, buf, n); }
static int real_close(int fd) { return close(fd); }

static int my_tid(void) { return (int)syscall(SYS_gettid); }

/* perf_event_open through the table, retrying EINTR. Returns the fd, or -1 with *e = errno. */
static int sys_open(opf_pmu *p, struct perf_event_attr *a, int tid, int group_fd, int *e) {
  for (int tries = 0;; tries++) {
    errno = 0;
    long fd = p->sys.perf_event_open(a, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0 && fd <= INT_MAX) return (int)fd;
    *e = errno ? errno : EINVAL;
    if (*e == EINTR && tries < 1000) continue;
    return -1;
  }
}

/* ---- reasons ---------------------------------------------------------------------------- */

static const char *err_text(int e, char *buf, size_t n) { return strerror_r(e, buf, n); }

/* /proc/sys/kernel/perf_event_paranoid, or INT_MIN if it cannot be read. */
static int read_paranoid(void) {
  FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
  if (!f) return INT_MIN;
  int v;
  int ok = fscanf(f, "%d", &v) == 1;
  fclose(f);
  return ok ? v : INT_MIN;
}

/* The paranoid level as text for messages ("2", or "unreadable"); returns the level. */
static int paranoid_str(char *buf, size_t n) {
  int par = read_paranoid();
  if (par == INT_MIN)
    snprintf(buf, n, "unreadable");
  else
    snprintf(buf, n, "%d", par);
  return par;
}

/* A field of /proc/self/status as an unsigned number (base 16 for Cap*, else 10); 0 if absent. */
static unsigned long long status_field(const char *key, int base) {
  FILE *f = fopen("/proc/self/status", "re");
  if (!f) return 0;
  char line[256];
  size_t kl = strlen(key);
  unsigned long long v = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
      v = strtoull(line + kl + 1, NULL, base);
      break;
    }
  }
  fclose(f);
  return v;
}

/* Would the kernel's perf_event_paranoid check let this per-thread event through? Privileged
 * processes (CAP_PERFMON = 38, CAP_SYS_ADMIN = 21) pass any level; otherwise level 2 allows
 * user-only counting and levels <= 1 allow kernel counting too (Debian's 3 allows nothing). */
static int paranoid_allows(int paranoid, int exclude_kernel) {
  unsigned long long cap = status_field("CapEff", 16);
  if (cap & ((1ULL << 38) | (1ULL << 21))) return 1;
  if (paranoid == INT_MIN) return 0;
  if (paranoid <= 1) return 1;
  return paranoid == 2 && exclude_kernel;
}

/* Does any hardware PMU answer? Probed once per open() with a user-only cycles counter, so
 * ENOENT for a hardware event can be told apart: no PMU driver vs. event unknown to the PMU. */
static int hw_pmu_present(opf_pmu *p, int tid) {
  if (p->hw_probe >= 0) return p->hw_probe;
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_CPU_CYCLES;
  a.disabled = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  int e = 0;
  int fd = sys_open(p, &a, tid, -1, &e);
  if (fd >= 0) {
    p->sys.close(fd);
    p->hw_probe = 1;
  } else {
    p->hw_probe = (e == ENOENT || e == EOPNOTSUPP || e == ENODEV) ? 0 : 1;
  }
  return p->hw_probe;
}

static void reason_for(opf_pmu *p, const pmu_ev *ev, int e, int tid, char *out, size_t n) {
  char eb[96];
  const struct perf_event_attr *a = &ev->attr;
  switch (e) {
  case ENOENT:
  case EOPNOTSUPP:
    if (a->type == PERF_TYPE_SOFTWARE) {
      snprintf(out, n, "software event not supported by this kernel (%s)",
               err_text(e, eb, sizeof eb));
    } else if (a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE ||
               a->type == PERF_TYPE_RAW) {
      if (!hw_pmu_present(p, tid))
        snprintf(out, n, "no hardware PMU driver (virtual machine?)");
      else
        snprintf(out, n, "event not supported by this CPU's PMU (%s)", err_text(e, eb, sizeof eb));
    } else {
      snprintf(out, n, "event or PMU not available here (%s)", err_text(e, eb, sizeof eb));
    }
    break;
  case EACCES:
  case EPERM: {
    char ps[16];
    int par = paranoid_str(ps, sizeof ps);
    /* Judge by the most modest attempt: user space only if the fallback was tried. */
    if (paranoid_allows(par, a->exclude_kernel || ev->user_retry)) {
      /* The paranoid level is not the cause: a seccomp filter (Docker's default profile
       * blocks perf_event_open) or a security module is. */
      snprintf(out, n, "not permitted (perf_event_paranoid=%s allows it: blocked by %s?)", ps,
               status_field("Seccomp", 10) == 2 ? "the active seccomp filter (container)"
                                                 : "seccomp or a security module");
    } else {
      snprintf(out, n, "not permitted (perf_event_paranoid=%s)", ps);
    }
    break;
  }
  case EMFILE:
  case ENFILE:
    snprintf(out, n, OPF_REASON_FD_LIMIT);
    break;
  case EBUSY:
    snprintf(out, n, "counter busy: in use by another tool or the NMI watchdog");
    break;
  case EINVAL:
    snprintf(out, n, "invalid for this kernel or PMU (EINVAL)");
    break;
  case ENODEV:
    snprintf(out, n, "this PMU cannot count per thread (ENODEV)");
    break;
  case E2BIG:
    snprintf(out, n, "perf_event_attr is newer than this kernel (E2BIG)");
    break;
  case ENOSYS:
    snprintf(out, n, "perf_event_open is not available (kernel without perf events?)");
    break;
  case ESRCH:
    snprintf(out, n, "thread %d exited while opening", tid);
    break;
  default:
    snprintf(out, n, "perf_event_open failed: %s", err_text(e, eb, sizeof eb));
    break;
  }
}

static void drop_event(opf_pmu *p, int i, int e, const char *reason) {
  pmu_ev *ev = &p->ev[i];
  ev->dropped = 1;
  ev->pub.err = e;
  snprintf(ev->pub.reason, sizeof ev->pub.reason, "%s", reason);
}

/* ---- create ----------------------------------------------------------------------------- */

typedef struct preset_ev {
  const char *name; /* shown to the user: perf(1) spelling */
  const char *enc;  /* given to libpfm4 */
} preset_ev;

static const struct {
  const char *name;
  int n;
  preset_ev ev[4];
} k_presets[] = {
    {"sw", 4, {{"task-clock", "perf::TASK-CLOCK"}, {"page-faults", "perf::PAGE-FAULTS"},
               {"context-switches", "perf::CONTEXT-SWITCHES"},
               {"cpu-migrations", "perf::CPU-MIGRATIONS"}}},
    {"core", 4, {{"cycles", "perf::CYCLES"}, {"instructions", "perf::INSTRUCTIONS"},
                 {"branches", "perf::BRANCHES"}, {"branch-misses", "perf::BRANCH-MISSES"}}},
    {"cache", 4, {{"cycles", "perf::CYCLES"},
                  {"L1-dcache-load-misses", "perf::L1-DCACHE-LOAD-MISSES"},
                  {"LLC-load-misses", "perf::LLC-LOAD-MISSES"},
                  {"dTLB-load-misses", "perf::DTLB-LOAD-MISSES"}}},
    {"tlb", 2, {{"dTLB-load-misses", "perf::DTLB-LOAD-MISSES"},
                {"iTLB-load-misses", "perf::ITLB-LOAD-MISSES"}}},
    {"branch", 2, {{"branches", "perf::BRANCHES"}, {"branch-misses", "perf::BRANCH-MISSES"}}},
};

static int add_event(opf_pmu *p, const char *name, const char *enc, opf_err *err) {
  struct perf_event_attr a;
  char fstr[sizeof p->ev[0].pub.fstr];
  char why[192];
  int r = opf_pfm_encode(enc, &a, fstr, sizeof fstr, why, sizeof why);
  if (r == PFM_ERR_NOTFOUND || r == PFM_ERR_NOTSUPP)
    return opf_err_set(err, OPF_ECONFIG, "unknown event '%s': %s", name, why);
  if (r == PFM_ERR_NOINIT) /* why holds opf_pfm_init's message */
    return opf_err_set(err, OPF_EUNSUPPORTED, "cannot encode event '%s': %s", name, why);
  if (r != PFM_SUCCESS) return opf_err_set(err, OPF_ECONFIG, "invalid event '%s': %s", name, why);
  /* Same encoding twice (a preset and its member, "cycles" and "perf::CYCLES"): keep the first.
   * Both attrs were cleared before encoding, so comparing bytes compares every field. */
  for (size_t i = 0; i < p->n_ev; i++)
    if (memcmp(&p->ev[i].enc, &a, sizeof a) == 0) return OPF_OK;
  if (p->n_ev >= OPF_PMU_MAX_EVENTS)
    return opf_err_set(err, OPF_ECONFIG, "too many events at '%s': at most %d distinct events",
                       name, OPF_PMU_MAX_EVENTS);
  pmu_ev *ev = &p->ev[p->n_ev++];
  memset(ev, 0, sizeof *ev);
  snprintf(ev->pub.name, sizeof ev->pub.name, "%s", name);
  snprintf(ev->pub.fstr, sizeof ev->pub.fstr, "%s", fstr);
  ev->pub.type = a.type;
  ev->pub.config = a.config;
  ev->pub.status = OPF_EV_COUNTED;
  ev->enc = a;
  ev->attr = a;
  ev->kind = a.type == PERF_TYPE_SOFTWARE ? KIND_SW : KIND_HW;
  return OPF_OK;
}

static int add_token(opf_pmu *p, const char *tok, opf_err *err) {
  for (size_t k = 0; k < sizeof k_presets / sizeof k_presets[0]; k++) {
    if (strcasecmp(tok, k_presets[k].name) != 0) continue;
    for (int j = 0; j < k_presets[k].n; j++) {
      int rc = add_event(p, k_presets[k].ev[j].name, k_presets[k].ev[j].enc, err);
      if (rc != OPF_OK) return rc;
    }
    return OPF_OK;
  }
  if (strlen(tok) >= sizeof p->ev[0].pub.name)
    return opf_err_set(err, OPF_ECONFIG, "event name too long: '%.40s...'", tok);
  return add_event(p, tok, tok, err);
}

/* Planned group numbers before open(): software events 0, the others 1 (0 if no software). */
static void plan_groups(opf_pmu *p) {
  int has_sw = 0;
  for (size_t i = 0; i < p->n_ev; i++) has_sw |= p->ev[i].kind == KIND_SW;
  for (size_t i = 0; i < p->n_ev; i++)
    p->ev[i].pub.group = p->ev[i].kind == KIND_SW ? 0 : has_sw;
}

int opf_pmu_create(opf_pmu **out, const char *events, const opf_pmu_sys *sys, opf_err *err) {
  if (!out) return opf_err_set(err, OPF_EINVAL, "opf_pmu_create: out is NULL");
  *out = NULL;
  opf_pmu *p = calloc(1, sizeof *p);
  if (!p) return opf_err_set(err, OPF_ENOMEM, "out of memory for the counter set");
  p->sys.perf_event_open =
      sys && sys->perf_event_open ? sys->perf_event_open : real_perf_event_open;
  p->sys.read = sys && sys->read ? sys->read : real_read;
  p->sys.close = sys && sys->close ? sys->close : real_close;
  p->hw_probe = -1;
  if (events && *events) {
    char *list = strdup(events);
    if (!list) {
      free(p);
      return opf_err_set(err, OPF_ENOMEM, "out of memory for the event list");
    }
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      while (*tok == ' ' || *tok == '\t') tok++;
      size_t l = strlen(tok);
      while (l && (tok[l - 1] == ' ' || tok[l - 1] == '\t')) tok[--l] = '\0';
      if (!l) continue; /* "a,,b" or a trailing comma: nothing to count */
      int rc = add_token(p, tok, err);
      if (rc != OPF_OK) {
        free(list);
        free(p);
        return rc;
      }
    }
    free(list);
  }
  plan_groups(p);
  *out = p;
  return OPF_OK;
}

/* ---- open ------------------------------------------------------------------------------- */

static void close_thread(opf_pmu *p, pmu_thread *t) {
  for (size_t i = 0; i < p->n_ev; i++) {
    if (t->fd[i] >= 0) p->sys.close(t->fd[i]);
    t->fd[i] = -1;
    t->id[i] = 0;
  }
}

static void close_all(opf_pmu *p) {
  for (int t = 0; t < p->n_th; t++) close_thread(p, &p->th[t]);
  p->n_grp = 0;
}

/* Open event i on tid, with the EACCES/EPERM fallback of perf stat: kernel counting refused ->
 * retry user space only. The fallback stays in ev->attr for the other threads. Not for a
 * kernel-only event (":k"): without the kernel it would count nothing, a silent substitute. */
static int open_event(opf_pmu *p, int i, int tid, int group_fd, int *e) {
  pmu_ev *ev = &p->ev[i];
  int fd = sys_open(p, &ev->attr, tid, group_fd, e);
  if (fd >= 0 || (*e != EACCES && *e != EPERM) || ev->attr.exclude_kernel ||
      ev->attr.exclude_user)
    return fd;
  struct perf_event_attr keep = ev->attr;
  ev->attr.exclude_kernel = 1;
  ev->attr.exclude_hv = 1;
  int e2 = 0;
  fd = sys_open(p, &ev->attr, tid, group_fd, &e2);
  if (fd >= 0) { /* counted, but say what is missing: reason doubles as a note here */
    char ps[16];
    paranoid_str(ps, sizeof ps);
    snprintf(ev->pub.reason, sizeof ev->pub.reason,
             "kernel-mode counting not permitted (perf_event_paranoid=%s): user space only", ps);
    return fd;
  }
  ev->attr = keep; /* report the refusal of what was asked for */
  ev->user_retry = 1;
  *e = e2 == EACCES || e2 == EPERM ? *e : e2;
  return -1;
}

/* Thread 0 (the caller): decide the groups the way perf stat does. A failed leader hands the
 * group to the next event; a member refused with EINVAL gets a group of its own; EMFILE stops
 * adding events. Fills p->grp and t->fd. */
static void open_first(opf_pmu *p, pmu_thread *t) {
  int q_n[OPF_PMU_MAX_EVENTS + 2];
  int q_ev[OPF_PMU_MAX_EVENTS + 2][OPF_PMU_MAX_EVENTS];
  int nq = 0;
  for (int kind = KIND_SW; kind <= KIND_HW; kind++) {
    q_n[nq] = 0;
    for (size_t i = 0; i < p->n_ev; i++)
      if (!p->ev[i].dropped && p->ev[i].kind == kind) q_ev[nq][q_n[nq]++] = (int)i;
    if (q_n[nq]) nq++;
  }
  int emfile = 0;
  char reason[sizeof p->ev[0].pub.reason];
  p->n_grp = 0;
  for (int qi = 0; qi < nq; qi++) {
    pmu_group *g = &p->grp[p->n_grp];
    g->n = 0;
    for (int k = 0; k < q_n[qi]; k++) {
      int i = q_ev[qi][k];
      if (emfile) {
        drop_event(p, i, EMFILE, OPF_REASON_FD_LIMIT);
        continue;
      }
      int e = 0;
      int fd = open_event(p, i, t->tid, g->n ? t->fd[g->ev[0]] : -1, &e);
      if (fd >= 0) {
        t->fd[i] = fd;
        g->ev[g->n++] = i;
        continue;
      }
      if (e == EMFILE || e == ENFILE) {
        emfile = 1;
        drop_event(p, i, e, OPF_REASON_FD_LIMIT);
      } else if (e == EINVAL && g->n > 0 && nq < OPF_PMU_MAX_EVENTS + 2) {
        q_n[nq] = 1; /* the group refused it (e.g. too many for the counters): alone */
        q_ev[nq][0] = i;
        nq++;
      } else {
        reason_for(p, &p->ev[i], e, t->tid, reason, sizeof reason);
        drop_event(p, i, e, reason);
      }
    }
    if (g->n) p->n_grp++;
  }
}

/* Other threads: the same groups with the attrs thread 0 settled on. On failure returns -1 with
 * the event and errno; fds opened so far stay in t->fd for the caller to close. */
static int open_other(opf_pmu *p, pmu_thread *t, int *bad_ev, int *bad_e) {
  for (int g = 0; g < p->n_grp; g++) {
    const pmu_group *gr = &p->grp[g];
    for (int k = 0; k < gr->n; k++) {
      int i = gr->ev[k];
      int e = 0;
      int fd = sys_open(p, &p->ev[i].attr, t->tid, k ? t->fd[gr->ev[0]] : -1, &e);
      if (fd < 0) {
        *bad_ev = i;
        *bad_e = e;
        return -1;
      }
      t->fd[i] = fd;
    }
  }
  return 0;
}

/* Read one group of one thread into buf. Returns the word count, or a negative OPF_E* code. */
static int read_group(const opf_pmu *p, const pmu_thread *t, const pmu_group *g, uint64_t *buf) {
  long n;
  do {
    errno = 0;
    n = p->sys.read(t->fd[g->ev[0]], buf, OPF_READ_WORDS * sizeof(uint64_t));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return OPF_ESYS;
  if ((size_t)n < 3 * sizeof(uint64_t) || buf[0] != (uint64_t)g->n ||
      (size_t)n != (3 + 2 * (size_t)g->n) * sizeof(uint64_t))
    return OPF_EKERNEL; /* short or unexpected read: the group is not what we opened */
  return (int)(n / sizeof(uint64_t));
}

/* Learn the kernel's event ids (PERF_FORMAT_ID) from one read per group and thread, so later
 * reads can check that value k really belongs to the event we think. */
static int learn_ids(opf_pmu *p, int *bad_grp) {
  uint64_t buf[OPF_READ_WORDS];
  for (int t = 0; t < p->n_th; t++) {
    for (int g = 0; g < p->n_grp; g++) {
      const pmu_group *gr = &p->grp[g];
      int rc = read_group(p, &p->th[t], gr, buf);
      if (rc < 0) {
        *bad_grp = g;
        return rc;
      }
      for (int k = 0; k < gr->n; k++) p->th[t].id[gr->ev[k]] = buf[4 + 2 * k];
    }
  }
  return 0;
}

/* Thread ids of this process, the caller first. Returns the number found (may exceed max;
 * only max are stored), or -errno. */
static int list_threads(int *tids, int max) {
  int self = my_tid();
  int n = 0;
  tids[n++] = self;
  DIR *d = opendir("/proc/self/task");
  if (!d) return -errno;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    int tid = atoi(de->d_name);
    if (tid == self) continue;
    if (n < max) tids[n] = tid;
    n++;
  }
  closedir(d);
  return n;
}

static void remove_thread(opf_pmu *p, int t) {
  close_thread(p, &p->th[t]);
  memmove(&p->th[t], &p->th[t + 1], (size_t)(p->n_th - t - 1) * sizeof p->th[0]);
  p->n_th--;
}

/* Drop event i and every event after it in group order (EMFILE: stop adding events). */
static void drop_from(opf_pmu *p, int i, int e, const char *reason) {
  int seen = 0;
  for (int g = 0; g < p->n_grp; g++)
    for (int k = 0; k < p->grp[g].n; k++) {
      int j = p->grp[g].ev[k];
      if (j == i) seen = 1;
      if (seen) drop_event(p, j, e, reason);
    }
}

int opf_pmu_open(opf_pmu *p, opf_err *err) {
  if (!p) return opf_err_set(err, OPF_EINVAL, "opf_pmu_open: no counter set");
  opf_pmu_close(p);
  p->hw_probe = -1;
  for (size_t i = 0; i < p->n_ev; i++) {
    pmu_ev *ev = &p->ev[i];
    ev->attr = ev->enc;
    ev->attr.size = sizeof ev->attr;
    ev->attr.read_format = OPF_READ_FORMAT;
    ev->attr.disabled = 0; /* counting runs from open on; samples are snapshot differences */
    ev->attr.inherit = 0;
    ev->open = 0;
    ev->dropped = 0;
    ev->user_retry = 0;
    ev->pub.err = 0;
    ev->pub.reason[0] = '\0';
    ev->pub.status = OPF_EV_NOT_SUPPORTED;
    ev->pub.group = -1;
  }
  if (p->n_ev == 0) return OPF_OK;

  int tids[OPF_PMU_MAX_THREADS];
  int n_tids = list_threads(tids, OPF_PMU_MAX_THREADS);
  if (n_tids < 0) {
    char eb[96];
    const char *why = err_text(-n_tids, eb, sizeof eb);
    for (size_t i = 0; i < p->n_ev; i++) drop_event(p, (int)i, -n_tids, "threads not listable");
    return opf_err_set(err, OPF_ESYS, "cannot list the threads in /proc/self/task: %s", why);
  }
  if (n_tids > OPF_PMU_MAX_THREADS) {
    char reason[sizeof p->ev[0].pub.reason];
    snprintf(reason, sizeof reason, "process has %d threads; counters support at most %d",
             n_tids, OPF_PMU_MAX_THREADS);
    for (size_t i = 0; i < p->n_ev; i++) drop_event(p, (int)i, 0, reason);
    return OPF_OK;
  }

  /* Each failure on a later thread drops at least one event and starts over, so this ends. */
  int done = 0;
  for (size_t attempt = 0; attempt <= p->n_ev + 1; attempt++) {
    close_all(p);
    p->n_th = n_tids;
    for (int t = 0; t < n_tids; t++) {
      p->th[t].tid = tids[t];
      for (int i = 0; i < OPF_PMU_MAX_EVENTS; i++) p->th[t].fd[i] = -1;
    }
    open_first(p, &p->th[0]);
    if (p->n_grp == 0) {
      done = 1;
      break;
    }
    int restart = 0;
    for (int t = 1; t < p->n_th && !restart;) {
      int bad_ev = -1, bad_e = 0;
      if (open_other(p, &p->th[t], &bad_ev, &bad_e) == 0) {
        t++;
        continue;
      }
      if (bad_e == ESRCH) { /* the thread exited meanwhile: nothing of it to count */
        remove_thread(p, t);
        continue;
      }
      if (bad_e == EMFILE || bad_e == ENFILE) {
        drop_from(p, bad_ev, bad_e, OPF_REASON_FD_LIMIT);
      } else {
        char r0[sizeof p->ev[0].pub.reason - 32], reason[sizeof p->ev[0].pub.reason];
        reason_for(p, &p->ev[bad_ev], bad_e, p->th[t].tid, r0, sizeof r0);
        snprintf(reason, sizeof reason, "on thread %d: %s", p->th[t].tid, r0);
        drop_event(p, bad_ev, bad_e, reason);
      }
      restart = 1;
    }
    if (restart) continue;
    int bad_grp = -1;
    int rc = learn_ids(p, &bad_grp);
    if (rc < 0) {
      int e = rc == OPF_ESYS ? errno : 0;
      char eb[96];
      char reason[sizeof p->ev[0].pub.reason];
      snprintf(reason, sizeof reason, "group read failed: %s",
               e ? err_text(e, eb, sizeof eb) : "unexpected size or event count");
      for (int k = 0; k < p->grp[bad_grp].n; k++) drop_event(p, p->grp[bad_grp].ev[k], e, reason);
      continue;
    }
    done = 1;
    break;
  }
  if (!done) { /* unreachable by the argument above; never leave half-open groups behind */
    for (int g = 0; g < p->n_grp; g++)
      for (int k = 0; k < p->grp[g].n; k++)
        drop_event(p, p->grp[g].ev[k], 0, "could not open on every thread");
    close_all(p);
  }

  p->n_open = 0;
  for (int g = 0; g < p->n_grp; g++)
    for (int k = 0; k < p->grp[g].n; k++) {
      pmu_ev *ev = &p->ev[p->grp[g].ev[k]];
      ev->open = 1;
      ev->pub.status = OPF_EV_COUNTED;
      ev->pub.group = g;
      p->n_open++;
    }
  if (p->n_open == 0) {
    close_all(p);
    return OPF_OK;
  }
  /* Kernel quirk seen on 6.18: in a group opened on the calling thread itself, members on
   * another software PMU than the leader (page-faults under task-clock, task-clock under
   * page-faults) count nothing until that thread is next scheduled in; other threads are not
   * affected. One short sleep schedules the caller out and in, so every member counts from
   * here on (it costs one context switch, before any snapshot). */
  struct timespec ts = {0, 1000};
  nanosleep(&ts, NULL);
  return OPF_OK;
}

void opf_pmu_close(opf_pmu *p) {
  if (!p) return;
  close_all(p);
  p->n_th = 0;
  p->n_open = 0;
  for (size_t i = 0; i < p->n_ev; i++) p->ev[i].open = 0;
}

void opf_pmu_free(opf_pmu *p) {
  if (!p) return;
  opf_pmu_close(p);
  free(p);
}

/* ---- queries and reads ------------------------------------------------------------------ */

size_t opf_pmu_count(const opf_pmu *p) { return p ? p->n_ev : 0; }

const opf_pmu_event *opf_pmu_event_at(const opf_pmu *p, size_t i) {
  return p && i < p->n_ev ? &p->ev[i].pub : NULL;
}

size_t opf_pmu_n_open(const opf_pmu *p) { return p ? p->n_open : 0; }

int opf_pmu_read(opf_pmu *p, opf_pmu_snap *s) {
  if (!p || !s) return OPF_EINVAL;
  memset(s, 0, sizeof *s);
  uint64_t buf[OPF_READ_WORDS];
  for (int t = 0; t < p->n_th; t++) {
    const pmu_thread *th = &p->th[t];
    for (int g = 0; g < p->n_grp; g++) {
      const pmu_group *gr = &p->grp[g];
      int rc = read_group(p, th, gr, buf);
      if (rc < 0) return rc;
      uint64_t en = buf[1], run = buf[2];
      for (int k = 0; k < gr->n; k++) {
        int i = gr->ev[k];
        uint64_t id = buf[4 + 2 * k];
        if (th->id[i] != id) { /* not in the order attached: find it by id */
          i = -1;
          for (int j = 0; j < gr->n; j++)
            if (th->id[gr->ev[j]] == id) i = gr->ev[j];
          if (i < 0) return OPF_EKERNEL;
        }
        s->value[i] += buf[3 + 2 * k];
        s->enabled[i] += en;
        s->running[i] += run;
      }
    }
  }
  return OPF_OK;
}

int opf_pmu_delta(const opf_pmu *p, size_t i, const opf_pmu_snap *a, const opf_pmu_snap *b,
                  double *value, double *frac_running) {
  if (value) *value = 0.0;
  if (frac_running) *frac_running = 0.0;
  if (!p || !a || !b || i >= p->n_ev || !p->ev[i].open) return 0;
  if (b->value[i] < a->value[i] || b->running[i] < a->running[i] ||
      b->enabled[i] < a->enabled[i])
    return 0; /* snapshots out of order: no meaningful delta */
  uint64_t dv = b->value[i] - a->value[i];
  uint64_t de = b->enabled[i] - a->enabled[i];
  uint64_t dr = b->running[i] - a->running[i];
  if (dr == 0) return 0;
  if (de < dr) de = dr; /* cannot run longer than enabled; guards clock granularity */
  if (value) *value = (double)dv * ((double)de / (double)dr);
  if (frac_running) *frac_running = (double)dr / (double)de;
  return 1;
}

const char *opf_ev_status_name(opf_ev_status s) {
  switch (s) {
  case OPF_EV_COUNTED: return "counted";
  case OPF_EV_SCALED: return "scaled";
  case OPF_EV_NOT_COUNTED: return "not counted";
  case OPF_EV_NOT_SUPPORTED: return "not supported";
  case OPF_EV_CONFIG_ERROR: return "config error";
  }
  return "unknown";
}

/* ---- test support (pmu_internal.h) ------------------------------------------------------ */

void opf_pmu_attr_view_decode(const void *attr, opf_pmu_attr_view *v) {
  const struct perf_event_attr *a = attr;
  memset(v, 0, sizeof *v);
  if (!a) return;
  v->type = a->type;
  v->config = a->config;
  v->config1 = a->config1;
  v->config2 = a->config2;
  v->read_format = a->read_format;
  v->disabled = a->disabled;
  v->inherit = a->inherit;
  v->exclude_user = a->exclude_user;
  v->exclude_kernel = a->exclude_kernel;
  v->exclude_hv = a->exclude_hv;
}

int opf_pmu_attr_view_of(const opf_pmu *p, size_t i, opf_pmu_attr_view *v) {
  if (!p || !v || i >= p->n_ev) return OPF_EINVAL;
  opf_pmu_attr_view_decode(&p->ev[i].attr, v);
  return OPF_OK;
}

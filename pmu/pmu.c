/* pmu.c: performance counters of opperf (include/opperf/pmu.h). Parses the event list and
 * presets (topdown resolved for the detected core PMU), opens the events in groups (software /
 * hardware) on every thread of the process with perf_event_open, reads group snapshots (rdpmc
 * for the calling thread's hardware events where allowed and worth it, else read()) and scales
 * deltas by time enabled / running. Failures are per event statuses with errno and a plain
 * reason, modelled on perf stat. */
#include <linux/perf_event.h>
#include <perfmon/pfmlib.h>

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "opperf/error.h"
#include "opperf/pmu.h"
#include "opperf/topdown.h"
#include "pmu_internal.h"

/* Thread coverage: counters are opened on every thread of /proc/self/task (inherit cannot reach
 * threads that already exist) AND with inherit=1, so a thread created later by a counted thread
 * (libgomp regrowing its pool after a smaller team let workers exit) is counted in its
 * creator's counter: a group read of an inherited event includes its live and exited children
 * (kernel perf_read_group walks child_list). Verified on this project's x86 VMs (6.18) and in
 * the emulated arm64 PMU lab (Debian 6.1). A kernel that refuses inherit with the group read
 * format gets it without inherit, and the plan note says threads created later are missed.
 * The rdpmc path reads only the thread's own counter, never its children: it is used only when
 * asked for (OPPERF_RDPMC=1), which turns inherit off. */

#define OPF_READ_FORMAT                                                                        \
  (PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |                       \
   PERF_FORMAT_TOTAL_TIME_RUNNING)

/* Group read layout: nr, time_enabled, time_running, then {value, id} per event. */
#define OPF_READ_WORDS (3 + 2 * OPF_PMU_MAX_EVENTS)

#define OPF_REASON_FD_LIMIT "too many open files (fd limit)"

/* KIND_NONE: a preset that has no events on this machine (topdown without a table): it
 * stays NOT_SUPPORTED with its reason and is never opened. */
enum { KIND_SW = 0, KIND_HW = 1, KIND_NONE = 2 };

typedef struct pmu_ev {
  opf_pmu_event pub;
  int plan;                    /* planned group (open order); a refused member moves on */
  int drop_status;             /* status when dropped: NOT_SUPPORTED or NOT_COUNTED */
  int kernel_only;             /* counted by the kernel in kernel mode only (context-switches,
                                  cpu-migrations): opened with exclude_kernel=0, never user-only */
  int downgraded;              /* kernel counting refused: fell back to user space only */
  struct perf_event_attr enc;  /* as encoded by libpfm4 */
  struct perf_event_attr attr; /* as opened: enc plus our read format and any fallback */
  int kind;                    /* KIND_SW, KIND_HW or KIND_NONE: which group it starts in */
  int open;                    /* open on every counted thread */
  int dropped;                 /* given up for this open(): NOT_SUPPORTED */
  int user_retry;              /* EACCES/EPERM fallback to user-only was tried and failed too */
  char unavail[192];           /* KIND_NONE: why the preset has no events here */
  /* rdpmc, for the opening thread's (th[0]) fd of a hardware event */
  volatile struct perf_event_mmap_page *page; /* NULL: not mapped */
  int est_valid;               /* STALE_TIME extension: page seq it applies to and when it */
  uint32_t est_seq;            /* was first seen (CLOCK_MONOTONIC_RAW ns) */
  uint64_t est_t0;
  uint64_t last_en, last_run;  /* last times returned for th[0]: keeps them monotonic */
} pmu_ev;
/* unavail is copied whole into pub.reason (memcpy: snprintf between two members of one
 * struct reads as overlapping to -Wrestrict in -O0 sanitizer builds) */
_Static_assert(sizeof ((pmu_ev *)0)->unavail == sizeof ((pmu_ev *)0)->pub.reason, "reason sizes");

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

/* Per (thread, event): raw value, enabled, running. gen ties it to one open. */
struct opf_pmu_snap {
  unsigned gen;
  int n_th;
  size_t n_ev;
  size_t cap; /* entries of w (3 words each) */
  uint64_t *w;
};

struct opf_pmu {
  opf_pmu_sys sys; /* never NULL members: real calls filled in */
  size_t n_ev;
  pmu_ev ev[OPF_PMU_MAX_EVENTS];
  int n_grp;
  pmu_group grp[OPF_PMU_MAX_EVENTS];
  int n_th, cap_th;
  pmu_thread *th; /* dynamic: as many as the process has */
  unsigned gen;   /* open generation: snapshots of another open are not compared */
  int inherit;    /* events opened with inherit=1 */
  int hw_cap;     /* planned hardware events per group (0: unknown, no limit planned) */
  int n_splits;   /* groups split because they never ran */
  char group_note[384];
  size_t n_open;
  int hw_probe; /* per open(): -1 not probed, 0 no hardware PMU, 1 a PMU answers */
  /* rdpmc */
  int grp_rdpmc[OPF_PMU_MAX_EVENTS]; /* group g of th[0] is read through its pages */
  size_t n_rdpmc;
  pthread_t owner;                   /* the thread that opened: th[0] */
  unsigned fork_gen;                 /* g_fork_gen at open: a forked child must not rdpmc */
  char rdpmc_note[160];
};

static void rdpmc_setup(opf_pmu *p);
static uint64_t *snap_at(const opf_pmu_snap *s, int t, size_t i);
static uint64_t mono_raw_ns(void);
static int env_on(const char *name);

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
  case ENXIO:
    snprintf(out, n, "needs an extra register (e.g. Intel's offcore-response MSRs) that this "
             "PMU does not provide, as virtual PMUs often do not (ENXIO)");
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
  ev->drop_status = OPF_EV_NOT_SUPPORTED;
  ev->pub.err = e;
  snprintf(ev->pub.reason, sizeof ev->pub.reason, "%s", reason);
}

/* ---- create ----------------------------------------------------------------------------- */

typedef struct preset_ev {
  const char *name; /* shown to the user: perf(1) spelling */
  const char *enc;  /* given to libpfm4 */
} preset_ev;

/* n == -1: resolved per machine (topdown). */
static const struct {
  const char *name;
  const char *summary;
  int n;
  preset_ev ev[4];
} k_presets[] = {
    {"sw", "software events (always available where perf_event_open is)", 4,
     {{"task-clock", "perf::TASK-CLOCK"}, {"page-faults", "perf::PAGE-FAULTS"},
      {"context-switches", "perf::CONTEXT-SWITCHES"},
      {"cpu-migrations", "perf::CPU-MIGRATIONS"}}},
    {"core", "cycles, instructions, branches (IPC, branch-miss ratio)", 4,
     {{"cycles", "perf::CYCLES"}, {"instructions", "perf::INSTRUCTIONS"},
      {"branches", "perf::BRANCHES"}, {"branch-misses", "perf::BRANCH-MISSES"}}},
    {"cache", "L1D, LLC and dTLB load misses per cycle", 4,
     {{"cycles", "perf::CYCLES"},
      {"L1-dcache-load-misses", "perf::L1-DCACHE-LOAD-MISSES"},
      {"LLC-load-misses", "perf::LLC-LOAD-MISSES"},
      {"dTLB-load-misses", "perf::DTLB-LOAD-MISSES"}}},
    {"tlb", "data and instruction TLB load misses", 2,
     {{"dTLB-load-misses", "perf::DTLB-LOAD-MISSES"},
      {"iTLB-load-misses", "perf::ITLB-LOAD-MISSES"}}},
    {"branch", "branches and branch misses", 2,
     {{"branches", "perf::BRANCHES"}, {"branch-misses", "perf::BRANCH-MISSES"}}},
    {"topdown", "top-down slots (level 1, level 2 where known) for this CPU's model", -1, {{0, 0}}},
};
#define N_PRESETS ((int)(sizeof k_presets / sizeof k_presets[0]))

/* Top-down events per core PMU: the rows of pmu/topdown.c (include/opperf/topdown.h), which
 * cite their sources and carry the formulas. Each row's level-1 events fit one group of its
 * CPU's counters; a CPU without a row gets the preset as one NOT_SUPPORTED event, never some
 * other set. Every string is checked against libpfm4 by tests/unit/test_pmu_golden.c. */
static int td_members(const char *pmu, char names[][96], char encs[][96], int max) {
  const opf_td_model *m = opf_td_model_find(pmu);
  if (!m) return 0;
  int n = 0;
  for (int j = 0; j < m->n && n < max; j++, n++) {
    opf_td_event_name(m, j, names[n], 96);
    opf_td_event_enc(m, j, encs[n], 96);
    /* Arm rows: libpfm4's table of that core where it has the event, else the common event
     * number (the PMUv3 driver takes it raw whatever the core), as the arm64 presets do. */
    if (m->method == OPF_TD_ARM_SLOTS && m->raw[j]) {
      struct perf_event_attr a;
      char why[64];
      if (opf_pfm_init(NULL, 0) != OPF_OK ||
          opf_pfm_encode(encs[n], &a, NULL, 0, why, sizeof why) != PFM_SUCCESS)
        snprintf(encs[n], 96, "%s", m->raw[j]);
    }
  }
  return n;
}

int opf_pmu_topdown_members(const char *pmu, char out[][96], int max) {
  char encs[OPF_TD_MAX_EV][96];
  if (max > OPF_TD_MAX_EV) max = OPF_TD_MAX_EV;
  return pmu ? td_members(pmu, out, encs, max) : 0;
}

static pthread_mutex_t g_td_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_td_forced;
static char g_td_pmu[64];

void opf_pmu_set_topdown_pmu(const char *pmu) {
  pthread_mutex_lock(&g_td_mu);
  g_td_forced = pmu != NULL;
  snprintf(g_td_pmu, sizeof g_td_pmu, "%s", pmu ? pmu : "");
  pthread_mutex_unlock(&g_td_mu);
}

/* Appends sep (unless buf is empty) and s to buf, cutting at the buffer's end. */
static void list_append(char *buf, size_t n, const char *sep, const char *s) {
  size_t l = strlen(buf);
  if (l)
    while (*sep && l + 1 < n) buf[l++] = *sep++;
  while (*s && l + 1 < n) buf[l++] = *s++;
  buf[l] = '\0';
}

/* The top-down model of this machine (or the one a test forced) in model: 1, or 0 with a
 * reason in why when there is none. */
static int topdown_model(char *model, size_t model_n, char *why, size_t why_n) {
  char forced[64];
  pthread_mutex_lock(&g_td_mu);
  int is_forced = g_td_forced;
  snprintf(forced, sizeof forced, "%s", g_td_pmu);
  pthread_mutex_unlock(&g_td_mu);
  char cores[128] = "", all[128] = "";
  if (is_forced) {
    snprintf(cores, sizeof cores, "%s", forced);
    snprintf(all, sizeof all, "%s (forced)", forced[0] ? forced : "none");
  } else {
    opf_pfm_pmu_desc d[16];
    int n = opf_pfm_pmus(d, 16);
    if (n < 0) {
      snprintf(why, why_n, "libpfm4 is not usable here");
      return 0;
    }
    for (int i = 0; i < n && i < 16; i++) {
      list_append(all, sizeof all, ", ", d[i].name);
      if (d[i].is_core) list_append(cores, sizeof cores, ",", d[i].name);
    }
  }
  /* The first detected core PMU with a table (hybrid CPUs list more than one). */
  char list[128];
  snprintf(list, sizeof list, "%s", cores);
  char *save = NULL;
  for (char *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
    if (opf_td_model_find(c)) {
      snprintf(why, why_n, "for %s", c);
      snprintf(model, model_n, "%s", c);
      return 1;
    }
  }
  /* libpfm4 4.13 does not know AMD Zen 5: the row's raw PPR codes, by CPUID. */
  const char *cm = is_forced ? NULL : opf_td_cpuid_model();
  if (!cores[0] && cm && opf_td_model_find(cm)) {
    snprintf(why, why_n, "for %s (CPUID; raw codes: libpfm4 has no table for it)", cm);
    snprintf(model, model_n, "%s", cm);
    return 1;
  }
  if (cores[0])
    snprintf(why, why_n, "top-down not available on %s: not in opperf's top-down table "
             "(supported: see opperf events --explain topdown --pmu x)", cores);
  else
    snprintf(why, why_n,
             "top-down not available: libpfm4 detects no core PMU for this CPU (detected: %s)",
             all[0] ? all : "none");
  return 0;
}

/* ---- arm64 presets ------------------------------------------------------------------------
 * On arm64 the core and cache presets are Arm's architectural (common) events, named as the
 * Arm ARM and the Neoverse guides name them, so the figures mean the same on Graviton, Grace
 * and Ampere: encoded through libpfm4's table for the detected core PMU (arm_n1, arm_n2,
 * arm_v1, arm_v2, ...) where it has the event, else as the raw common-event number, which the
 * kernel's PMUv3 driver takes as is (PERF_TYPE_RAW) whatever the core. */
typedef struct arm_ev {
  const char *name;
  unsigned code; /* common event number (Arm ARM D17.11 / K3) */
} arm_ev;
static const arm_ev k_arm_core[] = {
    {"CPU_CYCLES", 0x11}, {"INST_RETIRED", 0x08}, {"BR_RETIRED", 0x21},
    {"BR_MIS_PRED_RETIRED", 0x22}};
static const arm_ev k_arm_cache[] = {
    {"CPU_CYCLES", 0x11},       {"L1D_CACHE_REFILL", 0x03}, {"L2D_CACHE_REFILL", 0x17},
    {"LL_CACHE_MISS_RD", 0x37}, {"L1D_TLB_REFILL", 0x05}};

int opf_pmu_arm_preset(const char *preset, const char *pmu, char names[][96], char encs[][96],
                       int max) {
  const arm_ev *t;
  int n;
  if (!preset) return 0;
  if (!strcmp(preset, "core")) {
    t = k_arm_core;
    n = (int)(sizeof k_arm_core / sizeof k_arm_core[0]);
  } else if (!strcmp(preset, "cache")) {
    t = k_arm_cache;
    n = (int)(sizeof k_arm_cache / sizeof k_arm_cache[0]);
  } else {
    return 0;
  }
  if (n > max) n = max;
  for (int j = 0; j < n; j++) {
    snprintf(names[j], 96, "%s", t[j].name);
    snprintf(encs[j], 96, "r%x", t[j].code);
    if (pmu && *pmu) {
      char s[96];
      struct perf_event_attr a;
      char why[64];
      snprintf(s, sizeof s, "%.48s::%s", pmu, t[j].name);
      if (opf_pfm_encode(s, &a, NULL, 0, why, sizeof why) == PFM_SUCCESS)
        snprintf(encs[j], 96, "%s", s);
    }
  }
  return n;
}

/* The core PMU libpfm4 detects here ("" when none). */
static void detected_core_pmu(char *out, size_t n) {
  out[0] = '\0';
  opf_pfm_pmu_desc d[16];
  int np = opf_pfm_pmus(d, 16);
  for (int i = 0; i < np && i < 16; i++)
    if (d[i].is_core) {
      snprintf(out, n, "%s", d[i].name);
      return;
    }
}

#if defined(__aarch64__)
#define OPF_ARM_PRESETS 1
#else
#define OPF_ARM_PRESETS 0
#endif

int opf_pmu_preset_count(void) { return N_PRESETS; }

int opf_pmu_preset_find(const char *name) {
  if (!name) return -1;
  for (int k = 0; k < N_PRESETS; k++)
    if (strcasecmp(name, k_presets[k].name) == 0) return k;
  return -1;
}

int opf_pmu_preset_at(int k, opf_pmu_preset_info *out) {
  if (!out || k < 0 || k >= N_PRESETS) return OPF_EINVAL;
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", k_presets[k].name);
  snprintf(out->summary, sizeof out->summary, "%s", k_presets[k].summary);
  if (OPF_ARM_PRESETS && k_presets[k].n >= 0 && opf_pfm_init(NULL, 0) == OPF_OK) {
    char pmu[64], encs[OPF_PMU_PRESET_MAX][96];
    detected_core_pmu(pmu, sizeof pmu);
    int n = opf_pmu_arm_preset(k_presets[k].name, pmu, out->member, encs, OPF_PMU_PRESET_MAX);
    if (n > 0) {
      out->n = n;
      snprintf(out->note, sizeof out->note, "Arm common events%s%s", pmu[0] ? ", libpfm4 " : "",
               pmu);
      return OPF_OK;
    }
  }
  if (k_presets[k].n >= 0) {
    out->n = k_presets[k].n;
    for (int j = 0; j < out->n; j++)
      snprintf(out->member[j], sizeof out->member[j], "%s", k_presets[k].ev[j].name);
    return OPF_OK;
  }
  if (opf_pfm_init(out->note, sizeof out->note) != OPF_OK) return OPF_OK;
  char model[64];
  if (topdown_model(model, sizeof model, out->note, sizeof out->note)) {
    char encs[OPF_PMU_PRESET_MAX][96];
    out->n = td_members(model, out->member, encs, OPF_PMU_PRESET_MAX);
  }
  return OPF_OK;
}

/* Did the user write a privilege-level modifier (":u", ":k", ":uk", "u=1", ...)? */
static int has_plm_modifier(const char *name) {
  const char *c = strrchr(name, ':');
  if (!c || c == name || c[-1] == ':') return 0;
  for (const char *m = name; (m = strchr(m, ':')) != NULL; m++) {
    if (m[1] == ':') {
      m++;
      continue;
    }
    const char *t = m + 1;
    if ((t[0] == 'u' || t[0] == 'k') && (t[1] == '\0' || t[1] == ':' || t[1] == '=' ||
                                         ((t[1] == 'u' || t[1] == 'k') && (t[2] == '\0'))))
      return 1;
  }
  return 0;
}

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
  /* context-switches and cpu-migrations are raised by the scheduler in kernel mode: a
   * user-only counter (libpfm4's default privilege level) reads 0 for ever. Count them with
   * exclude_kernel=0 unless the user wrote a privilege modifier. */
  int kernel_only = 0;
  if (a.type == PERF_TYPE_SOFTWARE &&
      (a.config == PERF_COUNT_SW_CONTEXT_SWITCHES || a.config == PERF_COUNT_SW_CPU_MIGRATIONS) &&
      !has_plm_modifier(enc)) {
    a.exclude_kernel = 0;
    kernel_only = 1;
  }
  /* Same encoding twice (a preset and its member, "cycles" and "perf::CYCLES"): keep the first.
   * Both attrs were cleared before encoding, so comparing bytes compares every field. */
  for (size_t i = 0; i < p->n_ev; i++)
    if (memcmp(&p->ev[i].enc, &a, sizeof a) == 0) return OPF_OK;
  if (p->n_ev >= OPF_PMU_MAX_EVENTS)
    return opf_err_set(err, OPF_ECONFIG, "too many events at '%s': at most %d distinct events",
                       name, OPF_PMU_MAX_EVENTS);
  char pmu[64];
  int present = 1;
  int inactive = opf_pfm_event_pmu(enc, pmu, sizeof pmu, &present) == PFM_SUCCESS && !present;
  pmu_ev *ev = &p->ev[p->n_ev++];
  memset(ev, 0, sizeof *ev);
  snprintf(ev->pub.name, sizeof ev->pub.name, "%s", name);
  snprintf(ev->pub.fstr, sizeof ev->pub.fstr, "%s", fstr);
  ev->kernel_only = kernel_only;
  char *k0 = kernel_only ? strstr(ev->pub.fstr, ":k=0") : NULL;
  if (k0) k0[3] = '1'; /* libpfm4's name said user only: say what is opened */
  ev->pub.type = a.type;
  ev->pub.config = a.config;
  ev->pub.status = OPF_EV_COUNTED;
  ev->enc = a;
  ev->attr = a;
  ev->kind = a.type == PERF_TYPE_SOFTWARE ? KIND_SW : KIND_HW;
  if (inactive) { /* the encoding stays visible (golden tests), it never reaches the kernel */
    snprintf(ev->unavail, sizeof ev->unavail,
             "PMU %.24s is not this CPU's (encoded only because LIBPFM_ENCODE_INACTIVE is "
             "set): its code would count another event here", pmu);
    memcpy(ev->pub.reason, ev->unavail, sizeof ev->pub.reason);
    ev->pub.status = OPF_EV_NOT_SUPPORTED;
    ev->kind = KIND_NONE;
  }
  return OPF_OK;
}

/* A preset with no events here: one NOT_SUPPORTED entry carrying the reason. */
static int add_unavailable(opf_pmu *p, const char *name, const char *why, opf_err *err) {
  for (size_t i = 0; i < p->n_ev; i++)
    if (p->ev[i].kind == KIND_NONE && strcmp(p->ev[i].pub.name, name) == 0) return OPF_OK;
  if (p->n_ev >= OPF_PMU_MAX_EVENTS)
    return opf_err_set(err, OPF_ECONFIG, "too many events at '%s': at most %d distinct events",
                       name, OPF_PMU_MAX_EVENTS);
  pmu_ev *ev = &p->ev[p->n_ev++];
  memset(ev, 0, sizeof *ev);
  snprintf(ev->pub.name, sizeof ev->pub.name, "%s", name);
  snprintf(ev->unavail, sizeof ev->unavail, "%s", why);
  snprintf(ev->pub.reason, sizeof ev->pub.reason, "%s", why);
  ev->pub.status = OPF_EV_NOT_SUPPORTED;
  ev->pub.group = -1;
  ev->kind = KIND_NONE;
  return OPF_OK;
}

static int add_token(opf_pmu *p, const char *tok, opf_err *err) {
  int k = opf_pmu_preset_find(tok);
  if (OPF_ARM_PRESETS && k >= 0 && k_presets[k].n >= 0) {
    char pmu[64], names[OPF_PMU_PRESET_MAX][96], encs[OPF_PMU_PRESET_MAX][96];
    detected_core_pmu(pmu, sizeof pmu);
    int n = opf_pmu_arm_preset(k_presets[k].name, pmu, names, encs, OPF_PMU_PRESET_MAX);
    for (int j = 0; j < n; j++) {
      int rc = add_event(p, names[j], encs[j], err);
      if (rc != OPF_OK) return rc;
    }
    if (n > 0) return OPF_OK;
  }
  if (k >= 0 && k_presets[k].n >= 0) {
    for (int j = 0; j < k_presets[k].n; j++) {
      int rc = add_event(p, k_presets[k].ev[j].name, k_presets[k].ev[j].enc, err);
      if (rc != OPF_OK) return rc;
    }
    return OPF_OK;
  }
  if (k >= 0) { /* topdown */
    char model[64], why[192], names[OPF_TD_MAX_EV][96], encs[OPF_TD_MAX_EV][96];
    int n = 0;
    if (opf_pfm_init(why, sizeof why) == OPF_OK && topdown_model(model, sizeof model, why, sizeof why))
      n = td_members(model, names, encs, OPF_TD_MAX_EV);
    if (n == 0) return add_unavailable(p, k_presets[k].name, why, err);
    for (int j = 0; j < n; j++) {
      int rc = add_event(p, names[j], encs[j], err);
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
    p->ev[i].pub.group = p->ev[i].kind == KIND_SW ? 0 : p->ev[i].kind == KIND_HW ? has_sw : -1;
}

static pthread_mutex_t g_sys_mu = PTHREAD_MUTEX_INITIALIZER;
static const opf_pmu_sys *g_default_sys;

void opf_pmu_set_default_sys(const opf_pmu_sys *sys) {
  pthread_mutex_lock(&g_sys_mu);
  g_default_sys = sys;
  pthread_mutex_unlock(&g_sys_mu);
}

int opf_pmu_create(opf_pmu **out, const char *events, const opf_pmu_sys *sys, opf_err *err) {
  if (!out) return opf_err_set(err, OPF_EINVAL, "opf_pmu_create: out is NULL");
  *out = NULL;
  if (!sys) {
    pthread_mutex_lock(&g_sys_mu);
    sys = g_default_sys;
    pthread_mutex_unlock(&g_sys_mu);
  }
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

static void unmap_pages(opf_pmu *p) {
  long pg = sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < p->n_ev; i++) {
    if (p->ev[i].page) munmap((void *)p->ev[i].page, (size_t)pg);
    p->ev[i].page = NULL;
  }
  memset(p->grp_rdpmc, 0, sizeof p->grp_rdpmc);
  p->n_rdpmc = 0;
}

static void close_all(opf_pmu *p) {
  unmap_pages(p); /* before the fds: a page belongs to its fd */
  for (int t = 0; t < p->n_th; t++) close_thread(p, &p->th[t]);
  p->n_grp = 0;
}

/* Open event i on tid, with the EACCES/EPERM fallback of perf stat: kernel counting refused ->
 * retry user space only. The fallback stays in ev->attr for the other threads. Not for a
 * kernel-only event (":k") nor one that counts only in kernel mode (context-switches,
 * cpu-migrations): without the kernel it would count nothing, a silent substitute. A kernel
 * that refuses inherit with the group read format (EINVAL) gets the event without inherit. */
static int open_event(opf_pmu *p, int i, int tid, int group_fd, int *e) {
  pmu_ev *ev = &p->ev[i];
  int fd = sys_open(p, &ev->attr, tid, group_fd, e);
  if (fd < 0 && *e == EINVAL && ev->attr.inherit && group_fd < 0) {
    ev->attr.inherit = 0; /* only a leader can tell: a member's EINVAL means "no room" */
    int e2 = 0;
    fd = sys_open(p, &ev->attr, tid, group_fd, &e2);
    if (fd >= 0) {
      p->inherit = 0;
      return fd;
    }
    ev->attr.inherit = 1;
  }
  if (fd >= 0 || (*e != EACCES && *e != EPERM) || ev->attr.exclude_kernel ||
      ev->attr.exclude_user || ev->kernel_only)
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
    ev->downgraded = 1;
    return fd;
  }
  ev->attr = keep; /* report the refusal of what was asked for */
  ev->user_retry = 1;
  *e = e2 == EACCES || e2 == EPERM ? *e : e2;
  return -1;
}

/* Thread 0 (the caller): open the planned groups in plan order, the way perf stat does. A
 * failed leader hands the group to the next event; a member refused with EINVAL (no room in
 * the group) moves to a further plan, opened after the others; EMFILE stops adding events.
 * Fills p->grp and t->fd. */
static void open_first(opf_pmu *p, pmu_thread *t) {
  int emfile = 0;
  char reason[sizeof p->ev[0].pub.reason];
  p->n_grp = 0;
  int max_plan = -1;
  for (size_t i = 0; i < p->n_ev; i++)
    if (!p->ev[i].dropped && p->ev[i].plan > max_plan) max_plan = p->ev[i].plan;
  for (int plan = 0; plan <= max_plan && p->n_grp < OPF_PMU_MAX_EVENTS; plan++) {
    pmu_group *g = &p->grp[p->n_grp];
    g->n = 0;
    int overflow = -1; /* the further plan this plan's refused members go to, together */
    for (size_t ii = 0; ii < p->n_ev; ii++) {
      int i = (int)ii;
      if (p->ev[i].dropped || p->ev[i].plan != plan) continue;
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
      } else if (e == EINVAL && g->n > 0) {
        if (overflow < 0) overflow = ++max_plan;
        p->ev[i].plan = overflow; /* the group refused it (no room): a further group */
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

/* Thread ids of this process, the caller first, into a growing array. Returns the number, or
 * -errno. */
static int list_threads(int **tids_out) {
  int self = my_tid();
  int cap = 64, n = 0;
  int *tids = malloc(sizeof *tids * (size_t)cap);
  if (!tids) return -ENOMEM;
  tids[n++] = self;
  DIR *d = opendir("/proc/self/task");
  if (!d) {
    int e = errno;
    free(tids);
    return -e;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    int tid = atoi(de->d_name);
    if (tid == self) continue;
    if (n == cap) {
      int *nt = realloc(tids, sizeof *tids * (size_t)cap * 2);
      if (!nt) {
        closedir(d);
        free(tids);
        return -ENOMEM;
      }
      tids = nt;
      cap *= 2;
    }
    tids[n++] = tid;
  }
  closedir(d);
  *tids_out = tids;
  return n;
}

static int ensure_threads(opf_pmu *p, int n) {
  if (n <= p->cap_th) return 0;
  pmu_thread *nt = realloc(p->th, sizeof *nt * (size_t)n);
  if (!nt) return -1;
  p->th = nt;
  p->cap_th = n;
  return 0;
}

/* One fd per event and thread is needed: raise the soft fd limit to the hard one if short. */
static void raise_fd_limit(opf_pmu *p, int n_threads) {
  size_t n_hw = 0;
  for (size_t i = 0; i < p->n_ev; i++) n_hw += p->ev[i].kind != KIND_NONE;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rlim_t need = (rlim_t)(n_hw * (size_t)n_threads) + 64;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need * 4 ? need * 4 : rl.rlim_max;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max) rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
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

/* ---- group planning ----------------------------------------------------------------------
 * How many hardware events one group can hold: the core PMU's counters, less the one the NMI
 * watchdog holds at run time (x86: /proc/sys/kernel/nmi_watchdog = 1 takes a general-purpose
 * counter on AMD, the fixed cycles counter on Intel; the kernel validates a group at open
 * against the whole PMU, so a group that needs the watchdog's counter opens and never runs).
 * Counters come from CPUID (Intel leaf 0xA: general-purpose + fixed; AMD: leaf 0x80000022
 * with PerfMonV2, else 6 with PerfCtrExtCore, else 4), or from libpfm4's core PMU table. */

static pthread_mutex_t g_cap_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_cap_forced = 0, g_cap_counters = 0, g_cap_watchdog = 0;

void opf_pmu_set_hw_capacity(int counters, int watchdog) {
  pthread_mutex_lock(&g_cap_mu);
  g_cap_forced = counters >= 0;
  g_cap_counters = counters;
  g_cap_watchdog = watchdog;
  pthread_mutex_unlock(&g_cap_mu);
}

static int read_int_file(const char *path, int dflt) {
  FILE *f = fopen(path, "re");
  if (!f) return dflt;
  int v;
  int ok = fscanf(f, "%d", &v) == 1;
  fclose(f);
  return ok ? v : dflt;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
static int cpuid_counters(char *src, size_t n) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
  unsigned maxleaf = a;
  int intel = b == 0x756e6547; /* "Genu" */
  int amd = b == 0x68747541;   /* "Auth" */
  if (intel && maxleaf >= 0xA) {
    __cpuid_count(0xA, 0, a, b, c, d);
    int gp = (int)((a >> 8) & 0xff), fixed = (int)(d & 0x1f);
    if ((a & 0xff) == 0) return 0; /* no architectural PMU (virtual machine) */
    snprintf(src, n, "CPUID 0xA: %d general-purpose + %d fixed counters", gp, fixed);
    return gp + fixed;
  }
  if (amd) {
    __get_cpuid(0x80000000, &a, &b, &c, &d);
    unsigned maxext = a;
    if (maxext >= 0x80000022) {
      __cpuid_count(0x80000022, 0, a, b, c, d);
      if (a & 1) { /* PerfMonV2 */
        int gp = (int)(b & 0xf);
        snprintf(src, n, "CPUID 0x80000022: %d core counters", gp);
        return gp;
      }
    }
    __get_cpuid(0x80000001, &a, &b, &c, &d);
    int gp = (c >> 23) & 1 ? 6 : 4;
    snprintf(src, n, "AMD %s: %d core counters", gp == 6 ? "PerfCtrExtCore" : "legacy", gp);
    return gp;
  }
  return 0;
}
#else
static int cpuid_counters(char *src, size_t n) {
  (void)src, (void)n;
  return 0;
}
#endif

/* Sets p->hw_cap and a note on where it came from. */
static void plan_capacity(opf_pmu *p, char *note, size_t n) {
  pthread_mutex_lock(&g_cap_mu);
  int forced = g_cap_forced, fc = g_cap_counters, fw = g_cap_watchdog;
  pthread_mutex_unlock(&g_cap_mu);
  char src[128] = "";
  int counters = 0, watchdog = 0;
  if (forced) {
    counters = fc;
    watchdog = fw;
    snprintf(src, sizeof src, "%d counters (set by a test)", counters);
  } else {
    counters = cpuid_counters(src, sizeof src);
    if (counters == 0 && opf_pfm_init(NULL, 0) == OPF_OK) {
      opf_pfm_pmu_desc d[16];
      int np = opf_pfm_pmus(d, 16);
      for (int i = 0; i < np && i < 16 && !counters; i++)
        if (d[i].is_core && d[i].n_counters > 0) {
          counters = d[i].n_counters;
          snprintf(src, sizeof src, "libpfm4 %s: %d counters", d[i].name, counters);
        }
    }
#if defined(__x86_64__) || defined(__i386__)
    watchdog = read_int_file("/proc/sys/kernel/nmi_watchdog", 0) > 0;
#endif
  }
  p->hw_cap = counters > watchdog ? counters - watchdog : 0;
  if (counters <= 0)
    snprintf(note, n, "hardware groups: counter count unknown here, none planned");
  else
    snprintf(note, n, "hardware groups of at most %d events (%s%s)", p->hw_cap, src,
             watchdog ? ", 1 held by the NMI watchdog" : "");
}

/* Plans before the first attempt: software events plan 0, hardware events in chunks of
 * hw_cap (all in one when unknown) on the following plans. */
static void plan_initial(opf_pmu *p) {
  int has_sw = 0;
  for (size_t i = 0; i < p->n_ev; i++) has_sw |= p->ev[i].kind == KIND_SW && !p->ev[i].dropped;
  int plan = has_sw ? 1 : 0, in_plan = 0;
  for (size_t i = 0; i < p->n_ev; i++) {
    pmu_ev *ev = &p->ev[i];
    if (ev->kind == KIND_SW) {
      ev->plan = 0;
    } else if (ev->kind == KIND_HW) {
      if (p->hw_cap > 0 && in_plan == p->hw_cap) {
        plan++;
        in_plan = 0;
      }
      ev->plan = plan;
      in_plan++;
    } else {
      ev->plan = -1;
    }
  }
}

static void spin_us(unsigned us) {
  uint64_t t0 = mono_raw_ns();
  volatile unsigned x = 0;
  while (mono_raw_ns() - t0 < (uint64_t)us * 1000u)
    for (int i = 0; i < 256; i++) x += (unsigned)i;
}

/* Do the caller's hardware groups get a counter? Burns CPU on this thread over a window: after
 * a short settling spin, a first read of every hardware group, then spins and reads until the
 * window has passed (1 ms for one group; with several, one multiplexing rotation per group,
 * perf_event_mux_interval_ms, plus 1 ms). A group whose time enabled advanced over the window
 * while its time running did not never got a counter (its first moments after the open do not
 * count: a group can run briefly while it is installed and then never again, as the PMU lab
 * saw with a pinned CPU-wide event). Returns the index of such a group, or -1. */
static int probe_groups(opf_pmu *p) {
  int n_hw = 0;
  for (int g = 0; g < p->n_grp; g++) n_hw += p->ev[p->grp[g].ev[0]].kind == KIND_HW;
  if (!n_hw) return -1;
  int mux_ms = read_int_file("/sys/bus/event_source/devices/cpu/perf_event_mux_interval_ms", 4);
  if (mux_ms < 1 || mux_ms > 100) mux_ms = 4;
  uint64_t window = n_hw == 1 ? 1000000u : ((uint64_t)n_hw * (uint64_t)mux_ms + 1) * 1000000u;
  uint64_t buf[OPF_READ_WORDS];
  uint64_t en0[OPF_PMU_MAX_EVENTS] = {0}, run0[OPF_PMU_MAX_EVENTS] = {0};
  uint64_t en1[OPF_PMU_MAX_EVENTS] = {0}, run1[OPF_PMU_MAX_EVENTS] = {0};
  int ok0[OPF_PMU_MAX_EVENTS] = {0}, ok1[OPF_PMU_MAX_EVENTS] = {0};
  spin_us(100);
  for (int g = 0; g < p->n_grp; g++)
    if (p->ev[p->grp[g].ev[0]].kind == KIND_HW && read_group(p, &p->th[0], &p->grp[g], buf) > 0)
      ok0[g] = 1, en0[g] = buf[1], run0[g] = buf[2];
  uint64_t t0 = mono_raw_ns();
  for (int iter = 0; iter < n_hw + 1 || mono_raw_ns() - t0 < window; iter++) {
    spin_us(100);
    for (int g = 0; g < p->n_grp; g++)
      if (ok0[g] && read_group(p, &p->th[0], &p->grp[g], buf) > 0)
        ok1[g] = 1, en1[g] = buf[1], run1[g] = buf[2];
  }
  for (int g = 0; g < p->n_grp; g++)
    if (ok0[g] && ok1[g] && en1[g] > en0[g] && run1[g] == run0[g]) return g;
  return -1;
}

/* Group g never ran: split it in two (first half keeps its plan, the rest a new one), or, for
 * a single event, drop it as NOT_COUNTED with the reason. */
static void split_group(opf_pmu *p, int g) {
  const pmu_group *gr = &p->grp[g];
  if (gr->n == 1) {
    pmu_ev *ev = &p->ev[gr->ev[0]];
    drop_event(p, gr->ev[0], 0,
               "never scheduled on a counter: another user holds the counter it needs (the NMI "
               "watchdog, /proc/sys/kernel/nmi_watchdog, or another perf session)");
    ev->drop_status = OPF_EV_NOT_COUNTED;
    return;
  }
  int max_plan = 0;
  for (size_t i = 0; i < p->n_ev; i++)
    if (p->ev[i].plan > max_plan) max_plan = p->ev[i].plan;
  int half = (gr->n + 1) / 2;
  for (int k = half; k < gr->n; k++) p->ev[gr->ev[k]].plan = max_plan + 1;
  if (p->hw_cap == 0 || p->hw_cap > half) p->hw_cap = half; /* later plans: what worked */
  p->n_splits++;
}

/* ---- hybrid CPUs -------------------------------------------------------------------------
 * Intel hybrid parts (Alder Lake and later) have two core PMUs, cpu_core (P-cores) and
 * cpu_atom (E-cores), each with its own perf type in sysfs. A generic hardware or cache event
 * opened with type PERF_TYPE_HARDWARE binds to one of them only, so a thread that moves to the
 * other core type is silently not counted there. opperf binds a generic event to the core PMU
 * the process is pinned to (extended type: config | pmu_type << 32, kernel 5.18+), and refuses
 * it with the reason when the allowed CPUs span both types. */

#define OPF_PMU_TYPE_SHIFT 32

static pthread_mutex_t g_sysfs_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_sysfs_root[256];

void opf_pmu_set_sysfs_root(const char *dir) {
  pthread_mutex_lock(&g_sysfs_mu);
  snprintf(g_sysfs_root, sizeof g_sysfs_root, "%s", dir ? dir : "");
  pthread_mutex_unlock(&g_sysfs_mu);
}

static void sysfs_path(char *out, size_t n, const char *pmu, const char *file) {
  pthread_mutex_lock(&g_sysfs_mu);
  snprintf(out, n, "%s/%s/%s", g_sysfs_root[0] ? g_sysfs_root : "/sys/bus/event_source/devices",
           pmu, file);
  pthread_mutex_unlock(&g_sysfs_mu);
}

/* Parses a sysfs CPU list ("0-15,32-47") into set. Returns 0, or -1 if unreadable. */
static int read_cpulist(const char *path, cpu_set_t *set) {
  CPU_ZERO(set);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  char buf[1024];
  int ok = fgets(buf, sizeof buf, f) != NULL;
  fclose(f);
  if (!ok) return -1;
  for (char *s = buf; *s && *s != '\n';) {
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s) return -1;
    long b = a;
    if (*end == '-') {
      s = end + 1;
      b = strtol(s, &end, 10);
      if (end == s) return -1;
    }
    for (long c = a; c <= b && c < CPU_SETSIZE; c++) CPU_SET((int)c, set);
    s = end;
    if (*s == ',') s++;
  }
  return 0;
}

/* 0: not hybrid, or ev bound to the core type of the allowed CPUs (attr.config extended);
 * -1: refused, reason in why. */
static int hybrid_bind(pmu_ev *ev, char *why, size_t n) {
  if (ev->attr.type != PERF_TYPE_HARDWARE && ev->attr.type != PERF_TYPE_HW_CACHE) return 0;
  char path[320];
  const char *names[2] = {"cpu_core", "cpu_atom"};
  cpu_set_t cpus[2];
  int type[2];
  for (int k = 0; k < 2; k++) {
    sysfs_path(path, sizeof path, names[k], "type");
    type[k] = read_int_file(path, -1);
    if (type[k] < 0) return 0; /* not a hybrid CPU */
    sysfs_path(path, sizeof path, names[k], "cpus");
    if (read_cpulist(path, &cpus[k]) != 0) return 0;
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 0;
  for (int k = 0; k < 2; k++) {
    cpu_set_t in;
    CPU_AND(&in, &allowed, &cpus[k]);
    if (CPU_EQUAL(&in, &allowed)) {
      ev->attr.config = (ev->attr.config & 0xffffffffULL) |
                        ((uint64_t)(unsigned)type[k] << OPF_PMU_TYPE_SHIFT);
      return 0;
    }
  }
  snprintf(why, n,
           "hybrid CPU (cpu_core + cpu_atom): a generic event counts on one core type only; "
           "pin the run to one type with --cpu");
  return -1;
}

int opf_pmu_open(opf_pmu *p, opf_err *err) {
  if (!p) return opf_err_set(err, OPF_EINVAL, "opf_pmu_open: no counter set");
  opf_pmu_close(p);
  p->hw_probe = -1;
  p->rdpmc_note[0] = '\0';
  p->group_note[0] = '\0';
  p->n_splits = 0;
  p->gen++;
  /* rdpmc reads a thread's own counter, never its inherited children: asking for rdpmc
   * (OPPERF_RDPMC=1) turns inherit off. */
  p->inherit = !env_on("OPPERF_RDPMC");
  for (size_t i = 0; i < p->n_ev; i++) {
    pmu_ev *ev = &p->ev[i];
    ev->drop_status = OPF_EV_NOT_SUPPORTED;
    ev->downgraded = 0;
    if (ev->kind == KIND_NONE) { /* stays as created: NOT_SUPPORTED with its reason */
      ev->dropped = 1;
      ev->pub.status = OPF_EV_NOT_SUPPORTED;
      ev->pub.group = -1;
      memcpy(ev->pub.reason, ev->unavail, sizeof ev->pub.reason); /* (same size, NUL inside) */
      continue;
    }
    ev->attr = ev->enc;
    ev->attr.size = sizeof ev->attr;
    ev->attr.read_format = OPF_READ_FORMAT;
    ev->attr.disabled = 0; /* counting runs from open on; samples are snapshot differences */
    ev->attr.inherit = (unsigned)p->inherit;
    ev->open = 0;
    ev->dropped = 0;
    ev->user_retry = 0;
    ev->pub.err = 0;
    ev->pub.reason[0] = '\0';
    ev->pub.status = OPF_EV_NOT_SUPPORTED;
    ev->pub.group = -1;
    char why[192];
    if (hybrid_bind(ev, why, sizeof why) != 0) drop_event(p, (int)i, 0, why);
  }
  if (p->n_ev == 0) return OPF_OK;

  char cap_note[256];
  plan_capacity(p, cap_note, sizeof cap_note);
  plan_initial(p);

  int *tids = NULL;
  int n_tids = list_threads(&tids);
  if (n_tids < 0) {
    char eb[96];
    const char *why = err_text(-n_tids, eb, sizeof eb);
    for (size_t i = 0; i < p->n_ev; i++)
      if (p->ev[i].kind != KIND_NONE) drop_event(p, (int)i, -n_tids, "threads not listable");
    return opf_err_set(err, OPF_ESYS, "cannot list the threads in /proc/self/task: %s", why);
  }
  if (ensure_threads(p, n_tids) != 0) {
    free(tids);
    for (size_t i = 0; i < p->n_ev; i++)
      if (p->ev[i].kind != KIND_NONE) drop_event(p, (int)i, ENOMEM, "out of memory");
    return opf_err_set(err, OPF_ENOMEM, "out of memory for %d threads' counters", n_tids);
  }
  raise_fd_limit(p, n_tids);

  /* Each failure on a later thread drops at least one event and starts over, and each split
   * makes a group smaller, so this ends. */
  int done = 0;
  for (size_t attempt = 0; attempt <= 4 * p->n_ev + 4; attempt++) {
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
    int never = probe_groups(p);
    if (never >= 0) { /* a weak group: validated at open, never on the counters */
      split_group(p, never);
      continue;
    }
    done = 1;
    break;
  }
  free(tids);
  if (!done) { /* unreachable by the argument above; never leave half-open groups behind */
    for (int g = 0; g < p->n_grp; g++)
      for (int k = 0; k < p->grp[g].n; k++)
        drop_event(p, p->grp[g].ev[k], 0, "could not open on every thread");
    close_all(p);
  }

  p->n_open = 0;
  for (size_t i = 0; i < p->n_ev; i++) {
    if (p->ev[i].dropped) p->ev[i].pub.status = (opf_ev_status)p->ev[i].drop_status;
    snprintf(p->ev[i].pub.plm, sizeof p->ev[i].pub.plm, "%s", opf_pmu_event_plm(p, i));
    p->ev[i].pub.downgraded = p->ev[i].downgraded;
  }
  for (int g = 0; g < p->n_grp; g++)
    for (int k = 0; k < p->grp[g].n; k++) {
      pmu_ev *ev = &p->ev[p->grp[g].ev[k]];
      ev->open = 1;
      ev->pub.status = OPF_EV_COUNTED;
      ev->pub.group = g;
      p->n_open++;
    }
  snprintf(p->group_note, sizeof p->group_note, "%s%s%s", cap_note,
           p->n_splits ? "; split after a group never ran" : "",
           p->inherit ? "; inherit: threads created later are counted"
                      : "; no inherit: threads created after the open are not counted");
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
  rdpmc_setup(p);
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
  free(p->th);
  free(p);
}

/* ---- rdpmc -------------------------------------------------------------------------------
 * The perf_event_mmap_page of an event lets its own thread read the count without a system
 * call: under the page's seqlock, count = offset + the hardware counter (rdpmc index - 1,
 * sign-extended from pmc_width bits), and with cap_user_time the TSC gives how far enabled and
 * running have moved since the page was written (perf_event_open(2), "Memory-mapped layout").
 *
 * Without cap_user_time (kernels whose sched_clock is not the TSC: KVM guests using kvm-clock,
 * such as this project's VMs) the page's times are those of its last update. The kernel
 * rewrites the page whenever the event is (re)started on a counter, i.e. at every
 * schedule-in of the thread and every multiplexing rotation. So while the page's seq does not
 * change and the event is on a counter (index != 0), the thread has been running and counting
 * without a break, and both times grew by the wall time since the page was first seen with
 * that seq. And when enabled == running on the page the event has never been multiplexed: its
 * scaling factor is exactly 1 whatever the unknown part. That is the only case read through
 * the page without cap_user_time (OPF_UPAGE_STALE_TIME); anything else goes to read(). The
 * extension slightly under-states both times (by the time between the update and its first
 * observation), never their ratio, and they are kept monotonic per event. */

#if defined(__x86_64__) || defined(__i386__)
#define OPF_HAVE_RDPMC 1
static inline uint64_t hw_rdpmc(uint32_t c) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"(c));
  return lo | (uint64_t)hi << 32;
}
static inline uint64_t hw_rdtsc(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return lo | (uint64_t)hi << 32;
}
#else
#define OPF_HAVE_RDPMC 0
static inline uint64_t hw_rdpmc(uint32_t c) { (void)c; return 0; }
static inline uint64_t hw_rdtsc(void) { return 0; }
#endif

#define OPF_BARRIER() __asm__ __volatile__("" ::: "memory")

int opf_upage_eval(const opf_upage *u, uint64_t *value, uint64_t *enabled, uint64_t *running) {
  uint64_t count = (uint64_t)u->offset;
  if (u->index) {
    if (!u->cap_user_rdpmc || u->pmc_width == 0 || u->pmc_width > 64) return OPF_UPAGE_FALLBACK;
    int64_t pmc = (int64_t)u->pmc;
    if (u->pmc_width < 64) { /* sign extension from pmc_width bits, without signed overflow */
      uint64_t m = 1ULL << (u->pmc_width - 1);
      uint64_t x = u->pmc & ((m << 1) - 1);
      pmc = (int64_t)(x ^ m) - (int64_t)m;
    }
    count += (uint64_t)pmc;
  }
  uint64_t en = u->time_enabled, run = u->time_running;
  if (u->cap_user_time) {
    uint64_t cyc = u->tsc;
    if (u->cap_user_time_short) cyc = u->time_cycles + ((cyc - u->time_cycles) & u->time_mask);
    if (u->time_shift >= 64) return OPF_UPAGE_FALLBACK;
    uint64_t quot = cyc >> u->time_shift;
    uint64_t rem = cyc & ((1ULL << u->time_shift) - 1);
    uint64_t delta = u->time_offset + quot * u->time_mult + ((rem * u->time_mult) >> u->time_shift);
    en += delta;
    if (u->index) run += delta;
    *value = count;
    *enabled = en;
    *running = run;
    return OPF_UPAGE_EXACT;
  }
  if (!u->index || en != run) return OPF_UPAGE_FALLBACK;
  *value = count;
  *enabled = en;
  *running = run;
  return OPF_UPAGE_STALE_TIME;
}

static uint64_t mono_raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Count and times of event ev of th[0] from its page. Returns 0, or -1 to use read(). */
static int page_read(pmu_ev *ev, uint64_t *value, uint64_t *enabled, uint64_t *running) {
  volatile struct perf_event_mmap_page *pc = ev->page;
  opf_upage u;
  uint32_t seq;
  int tries = 0;
  do {
    if (++tries > 100) return -1; /* the page keeps changing: let the kernel read it */
    seq = pc->lock;
    OPF_BARRIER();
    memset(&u, 0, sizeof u);
    u.time_enabled = pc->time_enabled;
    u.time_running = pc->time_running;
    u.cap_user_rdpmc = pc->cap_user_rdpmc;
    u.cap_user_time = pc->cap_user_time;
    u.cap_user_time_short = pc->cap_user_time_short;
    if (u.cap_user_time) {
      u.tsc = hw_rdtsc();
      u.time_offset = pc->time_offset;
      u.time_mult = pc->time_mult;
      u.time_shift = pc->time_shift;
      if (u.cap_user_time_short) {
        u.time_cycles = pc->time_cycles;
        u.time_mask = pc->time_mask;
      }
    }
    u.index = pc->index;
    u.offset = pc->offset;
    u.pmc_width = pc->pmc_width;
    if (u.cap_user_rdpmc && u.index) u.pmc = hw_rdpmc(u.index - 1);
    OPF_BARRIER();
  } while (pc->lock != seq);
  uint64_t v, en, run;
  int how = opf_upage_eval(&u, &v, &en, &run);
  if (how == OPF_UPAGE_FALLBACK) return -1;
  if (how == OPF_UPAGE_STALE_TIME) {
    uint64_t now = mono_raw_ns();
    if (!ev->est_valid || ev->est_seq != seq) {
      ev->est_valid = 1;
      ev->est_seq = seq;
      ev->est_t0 = now;
    }
    en += now - ev->est_t0;
    run += now - ev->est_t0;
  }
  if (en < ev->last_en) en = ev->last_en;
  if (run < ev->last_run) run = ev->last_run;
  ev->last_en = en;
  ev->last_run = run;
  *value = v;
  *enabled = en;
  *running = run;
  return 0;
}

/* Group g of th[0] through the pages, added to s only if every member could be read. */
static int rdpmc_group(opf_pmu *p, int g, opf_pmu_snap *s) {
  const pmu_group *gr = &p->grp[g];
  uint64_t v[OPF_PMU_MAX_EVENTS], en[OPF_PMU_MAX_EVENTS], run[OPF_PMU_MAX_EVENTS];
  for (int k = 0; k < gr->n; k++)
    if (page_read(&p->ev[gr->ev[k]], &v[k], &en[k], &run[k]) != 0) return -1;
  for (int k = 0; k < gr->n; k++) {
    uint64_t *x = snap_at(s, 0, (size_t)gr->ev[k]);
    x[0] = v[k];
    x[1] = en[k];
    x[2] = run[k];
  }
  return 0;
}

static unsigned g_fork_gen;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
/* mmaps of perf fds are not inherited (VM_DONTCOPY): a forked child must not touch them. */
static void on_fork_child(void) { __atomic_add_fetch(&g_fork_gen, 1, __ATOMIC_RELAXED); }
static void atfork_register(void) { pthread_atfork(NULL, NULL, on_fork_child); }

static int rdpmc_usable_now(const opf_pmu *p) {
  return p->n_rdpmc && pthread_equal(pthread_self(), p->owner) &&
         p->fork_gen == __atomic_load_n(&g_fork_gen, __ATOMIC_RELAXED);
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

static int read_impl(opf_pmu *p, opf_pmu_snap *s, int allow_rdpmc, int self_last);

/* Median of 7 timed snapshots, in ns. */
static double time_reads(opf_pmu *p, int allow_rdpmc) {
  double t[7] = {0};
  opf_pmu_snap *s = opf_pmu_snap_new();
  if (!s) return 0;
  read_impl(p, s, allow_rdpmc, 0);
  for (int r = 0; r < 7; r++) {
    uint64_t a = mono_raw_ns();
    read_impl(p, s, allow_rdpmc, 0);
    t[r] = (double)(mono_raw_ns() - a);
  }
  opf_pmu_snap_free(s);
  for (int i = 1; i < 7; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t[3];
}

/* After a successful open: map the pages of th[0]'s hardware events and decide per group. */
static void rdpmc_setup(opf_pmu *p) {
  unmap_pages(p);
  p->owner = pthread_self();
  p->fork_gen = __atomic_load_n(&g_fork_gen, __ATOMIC_RELAXED);
  int has_hw = 0;
  for (int g = 0; g < p->n_grp; g++) has_hw |= p->ev[p->grp[g].ev[0]].kind == KIND_HW;
  if (!has_hw) {
    snprintf(p->rdpmc_note, sizeof p->rdpmc_note, "rdpmc: no hardware events open");
    return;
  }
  if (!OPF_HAVE_RDPMC) {
    snprintf(p->rdpmc_note, sizeof p->rdpmc_note, "rdpmc: not on this architecture");
    return;
  }
  if (p->inherit) {
    snprintf(p->rdpmc_note, sizeof p->rdpmc_note,
             "rdpmc: off (counters are inherited by threads created after the open, which only "
             "read() returns; OPPERF_RDPMC=1 turns inherit off and rdpmc on)");
    return;
  }
  if (env_on("OPPERF_NO_RDPMC")) {
    snprintf(p->rdpmc_note, sizeof p->rdpmc_note, "rdpmc: off (OPPERF_NO_RDPMC)");
    return;
  }
  if (p->sys.perf_event_open != real_perf_event_open) { /* injected fds cannot be mapped */
    snprintf(p->rdpmc_note, sizeof p->rdpmc_note, "rdpmc: off (system calls replaced)");
    return;
  }
  pthread_once(&g_atfork_once, atfork_register);
  long pg = sysconf(_SC_PAGESIZE);
  const pmu_thread *t0 = &p->th[0];
  int mapped = 0, capable = 0, map_err = 0;
  for (int g = 0; g < p->n_grp; g++) {
    const pmu_group *gr = &p->grp[g];
    int ok = 1;
    for (int k = 0; k < gr->n; k++) {
      pmu_ev *ev = &p->ev[gr->ev[k]];
      ev->est_valid = 0;
      ev->last_en = ev->last_run = 0;
      if (ev->kind != KIND_HW || t0->fd[gr->ev[k]] < 0) {
        ok = 0;
        continue;
      }
      void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, t0->fd[gr->ev[k]], 0);
      if (m == MAP_FAILED) {
        map_err = errno;
        ok = 0;
        continue;
      }
      ev->page = m;
      mapped++;
      if (ev->page->cap_user_rdpmc)
        capable++;
      else
        ok = 0;
    }
    p->grp_rdpmc[g] = ok;
    if (ok) p->n_rdpmc += (size_t)gr->n;
  }
  if (p->n_rdpmc == 0) {
    char eb[96];
    if (!mapped)
      snprintf(p->rdpmc_note, sizeof p->rdpmc_note, "rdpmc: cannot map the event pages (%s)",
               map_err ? err_text(map_err, eb, sizeof eb) : "no hardware group");
    else
      snprintf(p->rdpmc_note, sizeof p->rdpmc_note,
               "rdpmc: not allowed by the kernel (cap_user_rdpmc = 0 on %d of %d pages)",
               mapped - capable, mapped);
    unmap_pages(p);
    return;
  }
  if (env_on("OPPERF_RDPMC")) {
    snprintf(p->rdpmc_note, sizeof p->rdpmc_note, "rdpmc: %zu event%s (OPPERF_RDPMC)",
             p->n_rdpmc, p->n_rdpmc == 1 ? "" : "s");
    return;
  }
  /* auto: keep rdpmc only where it beats read(); a hypervisor may trap every rdpmc */
  double t_sys = time_reads(p, 0), t_pmc = time_reads(p, 1);
  if (t_pmc < t_sys) {
    snprintf(p->rdpmc_note, sizeof p->rdpmc_note,
             "rdpmc: %zu event%s (auto: %.0f ns vs %.0f ns per snapshot with read())",
             p->n_rdpmc, p->n_rdpmc == 1 ? "" : "s", t_pmc, t_sys);
    return;
  }
  snprintf(p->rdpmc_note, sizeof p->rdpmc_note,
           "rdpmc: allowed but slower here (auto: %.0f ns vs %.0f ns per snapshot with read()): "
           "read() used; OPPERF_RDPMC=1 forces it", t_pmc, t_sys);
  unmap_pages(p);
}

size_t opf_pmu_n_rdpmc(const opf_pmu *p) { return p ? p->n_rdpmc : 0; }

const char *opf_pmu_rdpmc_note(const opf_pmu *p) {
  if (!p) return "";
  return p->rdpmc_note[0] ? p->rdpmc_note : "rdpmc: counters not open";
}

/* ---- queries and reads ------------------------------------------------------------------ */

size_t opf_pmu_count(const opf_pmu *p) { return p ? p->n_ev : 0; }

const opf_pmu_event *opf_pmu_event_at(const opf_pmu *p, size_t i) {
  return p && i < p->n_ev ? &p->ev[i].pub : NULL;
}

size_t opf_pmu_n_open(const opf_pmu *p) { return p ? p->n_open : 0; }

int opf_pmu_n_threads(const opf_pmu *p) { return p ? p->n_th : 0; }

const char *opf_pmu_group_note(const opf_pmu *p) { return p ? p->group_note : ""; }

const char *opf_pmu_event_plm(const opf_pmu *p, size_t i) {
  if (!p || i >= p->n_ev) return "";
  const struct perf_event_attr *a = &p->ev[i].attr;
  if (a->exclude_user) return a->exclude_kernel ? "none" : "kernel";
  return a->exclude_kernel ? "user" : "user+kernel";
}

opf_pmu_snap *opf_pmu_snap_new(void) { return calloc(1, sizeof(opf_pmu_snap)); }

void opf_pmu_snap_free(opf_pmu_snap *s) {
  if (!s) return;
  free(s->w);
  free(s);
}

static int snap_reserve(opf_pmu_snap *s, size_t entries) {
  if (entries <= s->cap) return OPF_OK;
  uint64_t *w = realloc(s->w, entries * 3 * sizeof *w);
  if (!w) return OPF_ENOMEM;
  s->w = w;
  s->cap = entries;
  return OPF_OK;
}

int opf_pmu_snap_copy(opf_pmu_snap *dst, const opf_pmu_snap *src) {
  if (!dst || !src) return OPF_EINVAL;
  size_t n = (size_t)src->n_th * src->n_ev;
  if (snap_reserve(dst, n) != OPF_OK) return OPF_ENOMEM;
  dst->gen = src->gen;
  dst->n_th = src->n_th;
  dst->n_ev = src->n_ev;
  if (n) memcpy(dst->w, src->w, n * 3 * sizeof *dst->w);
  return OPF_OK;
}

static uint64_t *snap_at(const opf_pmu_snap *s, int t, size_t i) {
  return s->w + ((size_t)t * s->n_ev + i) * 3;
}

int opf_pmu_snap_raw(const opf_pmu_snap *s, size_t i, uint64_t *value, uint64_t *enabled,
                     uint64_t *running) {
  if (!s || i >= s->n_ev) return OPF_EINVAL;
  uint64_t v = 0, e = 0, r = 0;
  for (int t = 0; t < s->n_th; t++) {
    const uint64_t *x = snap_at(s, t, i);
    v += x[0], e += x[1], r += x[2];
  }
  if (value) *value = v;
  if (enabled) *enabled = e;
  if (running) *running = r;
  return OPF_OK;
}

/* Group g of thread t by read(), into s. */
static int read_one(opf_pmu *p, opf_pmu_snap *s, int t, int g, int own) {
  uint64_t buf[OPF_READ_WORDS];
  const pmu_thread *th = &p->th[t];
  const pmu_group *gr = &p->grp[g];
  int rc = read_group(p, th, gr, buf);
  if (rc < 0) return rc;
  uint64_t en = buf[1], run = buf[2];
  if (t == 0 && own && p->grp_rdpmc[g]) /* later page reads stay monotonic after this */
    for (int k = 0; k < gr->n; k++) {
      pmu_ev *ev = &p->ev[gr->ev[k]];
      if (en > ev->last_en) ev->last_en = en;
      if (run > ev->last_run) ev->last_run = run;
    }
  for (int k = 0; k < gr->n; k++) {
    int i = gr->ev[k];
    uint64_t id = buf[4 + 2 * k];
    if (th->id[i] != id) { /* not in the order attached: find it by id */
      i = -1;
      for (int j = 0; j < gr->n; j++)
        if (th->id[gr->ev[j]] == id) i = gr->ev[j];
      if (i < 0) return OPF_EKERNEL;
    }
    uint64_t *x = snap_at(s, t, (size_t)i);
    x[0] = buf[3 + 2 * k];
    x[1] = en;
    x[2] = run;
  }
  return OPF_OK;
}

/* self_last: read the other threads first and the caller's (th[0]) groups last (the start of
 * a window); otherwise the caller's first (the end of a window). */
static int read_impl(opf_pmu *p, opf_pmu_snap *s, int allow_rdpmc, int self_last) {
  size_t n = (size_t)p->n_th * p->n_ev;
  if (snap_reserve(s, n) != OPF_OK) return OPF_ENOMEM;
  s->gen = p->gen;
  s->n_th = p->n_th;
  s->n_ev = p->n_ev;
  if (n) memset(s->w, 0, n * 3 * sizeof *s->w);
  int own = rdpmc_usable_now(p);
  for (int step = 0; step < p->n_th; step++) {
    int t = self_last ? (step + 1) % p->n_th : step;
    for (int g = 0; g < p->n_grp; g++) {
      if (t == 0 && own && allow_rdpmc && p->grp_rdpmc[g] && rdpmc_group(p, g, s) == 0) continue;
      int rc = read_one(p, s, t, g, own);
      if (rc < 0) return rc;
    }
  }
  return OPF_OK;
}

int opf_pmu_read(opf_pmu *p, opf_pmu_snap *s) {
  if (!p || !s) return OPF_EINVAL;
  return read_impl(p, s, 1, 0);
}

int opf_pmu_read_begin(opf_pmu *p, opf_pmu_snap *s) {
  if (!p || !s) return OPF_EINVAL;
  return read_impl(p, s, 1, 1);
}

int opf_pmu_read_syscall(opf_pmu *p, opf_pmu_snap *s) {
  if (!p || !s) return OPF_EINVAL;
  return read_impl(p, s, 0, 0);
}

opf_pmu_dstate opf_pmu_delta_ex(const opf_pmu *p, size_t i, const opf_pmu_snap *a,
                                const opf_pmu_snap *b, opf_pmu_dval *d) {
  opf_pmu_dval z = {0};
  if (d) *d = z;
  if (!p || !a || !b || i >= p->n_ev || !p->ev[i].open) return OPF_DV_NONE;
  if (a->gen != p->gen || b->gen != p->gen || a->n_th != b->n_th || a->n_ev != p->n_ev ||
      b->n_ev != p->n_ev)
    return OPF_DV_NONE; /* snapshots of another open */
  double sum = 0, main = 0, sum_en = 0, sum_run = 0;
  int threads = 0, not_run = 0;
  for (int t = 0; t < a->n_th; t++) {
    const uint64_t *x = snap_at(a, t, i), *y = snap_at(b, t, i);
    if (y[0] < x[0] || y[1] < x[1] || y[2] < x[2]) return OPF_DV_NONE; /* out of order */
    uint64_t dv = y[0] - x[0], de = y[1] - x[1], dr = y[2] - x[2];
    if (de == 0 && dr == 0) continue; /* the thread did not run in the window */
    if (de < dr) de = dr; /* cannot run longer than enabled; guards clock granularity */
    threads++;
    sum_en += (double)de;
    sum_run += (double)dr;
    if (dr == 0) { /* ran, but this event's group never had a counter: unknown, not 0 */
      not_run++;
      continue;
    }
    double v = (double)dv * ((double)de / (double)dr);
    sum += v;
    if (t == 0) main = v;
  }
  if (threads == 0 || sum_run == 0) return OPF_DV_NONE;
  if (d) {
    d->value = sum;
    d->main_value = main;
    d->frac_running = sum_run / sum_en;
    d->threads = threads;
    d->threads_not_run = not_run;
  }
  return not_run ? OPF_DV_PARTIAL : OPF_DV_OK;
}

struct opf_pmu_acc {
  unsigned gen;
  int n_th;
  size_t n_ev, cap;
  double *w; /* per (thread, event): value, enabled, running sums */
  int n[OPF_PMU_MAX_EVENTS];
};

opf_pmu_acc *opf_pmu_acc_new(void) { return calloc(1, sizeof(opf_pmu_acc)); }

void opf_pmu_acc_free(opf_pmu_acc *acc) {
  if (!acc) return;
  free(acc->w);
  free(acc);
}

int opf_pmu_acc_add(const opf_pmu *p, opf_pmu_acc *acc, const opf_pmu_snap *a,
                    const opf_pmu_snap *b) {
  if (!p || !acc || !a || !b) return OPF_EINVAL;
  size_t n = (size_t)a->n_th * p->n_ev;
  if (acc->gen != p->gen || acc->n_th != a->n_th || acc->n_ev != p->n_ev) { /* a new open */
    if (n > acc->cap) {
      double *w = realloc(acc->w, n * 3 * sizeof *w);
      if (!w) return OPF_ENOMEM;
      acc->w = w;
      acc->cap = n;
    }
    if (n) memset(acc->w, 0, n * 3 * sizeof *acc->w);
    memset(acc->n, 0, sizeof acc->n);
    acc->gen = p->gen;
    acc->n_th = a->n_th;
    acc->n_ev = p->n_ev;
  }
  for (size_t i = 0; i < p->n_ev; i++) {
    if (opf_pmu_delta_ex(p, i, a, b, NULL) != OPF_DV_OK) continue;
    for (int t = 0; t < a->n_th; t++) {
      const uint64_t *x = snap_at(a, t, i), *y = snap_at(b, t, i);
      double *s = acc->w + ((size_t)t * acc->n_ev + i) * 3;
      s[0] += (double)(y[0] - x[0]);
      s[1] += (double)(y[1] - x[1]);
      s[2] += (double)(y[2] - x[2]);
    }
    acc->n[i]++;
  }
  return OPF_OK;
}

opf_pmu_dstate opf_pmu_acc_value(const opf_pmu *p, const opf_pmu_acc *acc, size_t i,
                                 opf_pmu_dval *d, int *n_samples) {
  opf_pmu_dval z = {0};
  if (d) *d = z;
  if (n_samples) *n_samples = 0;
  if (!p || !acc || i >= p->n_ev || acc->gen != p->gen || acc->n_ev != p->n_ev || !acc->n[i])
    return OPF_DV_NONE;
  double sum = 0, main = 0, en = 0, run = 0;
  int threads = 0;
  for (int t = 0; t < acc->n_th; t++) {
    const double *s = acc->w + ((size_t)t * acc->n_ev + i) * 3;
    if (s[2] <= 0) continue; /* never ran in the added samples: nothing of it was counted */
    double e = s[1] < s[2] ? s[2] : s[1];
    double v = s[0] * e / s[2];
    sum += v;
    if (t == 0) main = v;
    en += e;
    run += s[2];
    threads++;
  }
  if (!threads) return OPF_DV_NONE;
  if (d) {
    d->value = sum;
    d->main_value = main;
    d->frac_running = run / en;
    d->threads = threads;
  }
  if (n_samples) *n_samples = acc->n[i];
  return OPF_DV_OK;
}

int opf_pmu_delta(const opf_pmu *p, size_t i, const opf_pmu_snap *a, const opf_pmu_snap *b,
                  double *value, double *frac_running) {
  opf_pmu_dval d;
  opf_pmu_dstate st = opf_pmu_delta_ex(p, i, a, b, &d);
  if (value) *value = st == OPF_DV_OK ? d.value : 0.0;
  if (frac_running) *frac_running = st == OPF_DV_OK ? d.frac_running : 0.0;
  return st == OPF_DV_OK;
}

const char *opf_ev_status_name(opf_ev_status s) {
  switch (s) {
  case OPF_EV_COUNTED: return "counted";
  case OPF_EV_SCALED: return "scaled";
  case OPF_EV_NOT_COUNTED: return "not counted";
  case OPF_EV_NOT_SUPPORTED: return "not supported";
  case OPF_EV_CONFIG_ERROR: return "config error";
  case OPF_EV_PARTIAL: return "partial";
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

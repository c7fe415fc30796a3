/* pmu.h: performance counters for measured regions (perf_event_open, events encoded by libpfm4).
 * Events are opened in groups on every thread of the process, read as snapshots at sample begin
 * and end, and each event carries a status: counted, scaled, not counted, not supported (with
 * the errno and a plain reason) or config error. Nothing is silently substituted. */
#ifndef OPPERF_PMU_H
#define OPPERF_PMU_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/error.h"

#define OPF_PMU_MAX_EVENTS 32

typedef enum opf_ev_status {
  OPF_EV_COUNTED = 0,   /* counted for the whole measured time */
  OPF_EV_SCALED,        /* multiplexed: value scaled by enabled/running */
  OPF_EV_NOT_COUNTED,   /* opened, but never scheduled while measuring (running == 0) */
  OPF_EV_NOT_SUPPORTED, /* could not be opened here: see err and reason */
  OPF_EV_CONFIG_ERROR,  /* libpfm4 could not encode the name */
  OPF_EV_PARTIAL        /* some samples or threads were not counted: the value comes from the
                           samples where every thread that ran was counted (see n_partial) */
} opf_ev_status;
const char *opf_ev_status_name(opf_ev_status s); /* "counted", "scaled", ... */

typedef struct opf_pmu_event {
  char name[128];      /* as the user wrote it (or the preset's name) */
  char fstr[256];      /* libpfm4's fully qualified name, "" if not encoded */
  uint32_t type;       /* perf_event_attr.type/config as encoded */
  uint64_t config;
  int group;           /* group index (ratios are derived only within one group) */
  opf_ev_status status; /* set by open; COUNTED until a measurement says otherwise */
  int err;             /* errno of the failed perf_event_open, 0 otherwise */
  char reason[192];    /* plain reason when not supported / config error */
  char plm[12];        /* privilege level counted, after open: "user", "user+kernel", "kernel" */
  int downgraded;      /* kernel counting was refused: counts user space only (see reason) */
} opf_pmu_event;

/* A snapshot of every event on every counted thread: raw value, time enabled and time running
 * per (thread, event), as the kernel returned them. Opaque: its size follows the number of
 * threads of the open (no fixed thread limit). Allocate once, reuse for every read; the first
 * read into a snapshot allocates its storage, so read both snapshots of a pair once before the
 * first measured window (the harness does), or that window holds a malloc. */
typedef struct opf_pmu_snap opf_pmu_snap;
opf_pmu_snap *opf_pmu_snap_new(void);
void opf_pmu_snap_free(opf_pmu_snap *s);
/* Copies src into dst (dst grows as needed). Returns OPF_OK or OPF_ENOMEM. */
int opf_pmu_snap_copy(opf_pmu_snap *dst, const opf_pmu_snap *src);
/* Event i's raw value, enabled and running summed over threads (diagnostics; never scale these:
 * scaling is per thread, see opf_pmu_delta_ex). Returns OPF_OK or OPF_EINVAL. */
int opf_pmu_snap_raw(const opf_pmu_snap *s, size_t i, uint64_t *value, uint64_t *enabled,
                     uint64_t *running);

/* The difference of one event between two snapshots. */
typedef enum opf_pmu_dstate {
  OPF_DV_NONE = 0,    /* not open, snapshots of another open, out of order, or never ran */
  OPF_DV_OK = 1,      /* every thread that ran had the event on a counter part of the time */
  OPF_DV_PARTIAL = 2  /* a thread ran while this event's group was never on a counter: value
                         holds the other threads only, never extrapolated to the missing one */
} opf_pmu_dstate;
typedef struct opf_pmu_dval {
  double value;        /* sum over threads of delta_t * enabled_t / running_t */
  double main_value;   /* the same for thread 0 alone: the thread that opened (the harness's
                          caller) plus threads it created after the open (inherited) */
  double frac_running; /* sum of running / sum of enabled over threads (1: never multiplexed) */
  int threads;         /* threads whose event was enabled in the window */
  int threads_not_run; /* of those, threads where it never ran (PARTIAL) */
} opf_pmu_dval;

/* Replaceable system calls, for fault-injection tests (NULL members use the real ones). */
typedef struct opf_pmu_sys {
  long (*perf_event_open)(void *attr, int pid, int cpu, int group_fd, unsigned long flags);
  long (*read)(int fd, void *buf, size_t n);
  int (*close)(int fd);
} opf_pmu_sys;

typedef struct opf_pmu opf_pmu;

/* Parse a comma-separated list of presets (sw, core, cache, ...) and libpfm4 event strings
 * ("cycles", "perf::PERF_COUNT_SW_TASK_CLOCK", "INST_RETIRED:ANY_P:u"). An empty list or NULL
 * means no counters. A name libpfm4 cannot encode: returns OPF_ECONFIG with a message naming
 * it and libpfm4's reason. sys may be NULL. */
int opf_pmu_create(opf_pmu **out, const char *events, const opf_pmu_sys *sys, opf_err *err);
/* Open the events on every thread of this process that exists now (/proc/self/task), with
 * inherit set so threads those threads create later are counted too (their counts are added to
 * their creator's). Hardware events are planned in groups no larger than the core PMU's
 * counters (less the NMI watchdog's); a member the kernel refuses (EINVAL) moves to a further
 * group; after the open, hardware groups are probed on the calling thread, and a group that is
 * enabled but never gets a counter (time_running stays 0, as when the NMI watchdog holds one)
 * is split in two and reopened, as perf stat does with weak groups; a single event that never
 * runs ends OPF_EV_NOT_COUNTED with the reason. Events that fail get OPF_EV_NOT_SUPPORTED with
 * errno and reason; never an error for that alone. Raises RLIMIT_NOFILE's soft limit to the hard
 * one when the thread count needs it. */
int opf_pmu_open(opf_pmu *p, opf_err *err);
void opf_pmu_close(opf_pmu *p);
void opf_pmu_free(opf_pmu *p);
size_t opf_pmu_count(const opf_pmu *p);
const opf_pmu_event *opf_pmu_event_at(const opf_pmu *p, size_t i);
/* Number of events that opened (0: nothing to read). */
size_t opf_pmu_n_open(const opf_pmu *p);
/* Number of threads the counters were opened on (threads created later are inherited). */
int opf_pmu_n_threads(const opf_pmu *p);
/* Snapshot all open groups, as the end of a measured window: the calling thread's groups are
 * read first, then the other threads'. opf_pmu_read_begin reads the other threads first and
 * the caller's last, so the caller's own counts hold as little of the reading as possible.
 * (From the thread that opened, hardware groups may be read with rdpmc: see "rdpmc" below.) */
int opf_pmu_read(opf_pmu *p, opf_pmu_snap *s);
int opf_pmu_read_begin(opf_pmu *p, opf_pmu_snap *s);
/* Event i between two snapshots of the same open, scaled per thread. Returns the state; d may
 * be NULL. */
opf_pmu_dstate opf_pmu_delta_ex(const opf_pmu *p, size_t i, const opf_pmu_snap *a,
                                const opf_pmu_snap *b, opf_pmu_dval *d);
/* Shorthand: *value and *frac_running of opf_pmu_delta_ex; returns 1 for OPF_DV_OK only (a
 * partial delta is not a value), else 0 with both set to 0. */
int opf_pmu_delta(const opf_pmu *p, size_t i, const opf_pmu_snap *a, const opf_pmu_snap *b,
                  double *value, double *frac_running);
/* Sums over many samples of one open, per thread and event, for ratio estimates: with
 * multiplexing a sample shorter than the rotation holds a group for part of it only, and its
 * own enabled/running extrapolation is noisy and biased; perf stat scales over the whole run.
 * opf_pmu_acc_add adds the per-thread deltas of every event whose delta is OPF_DV_OK (partial
 * samples stay out, as for single deltas); opf_pmu_acc_value gives sum_t V_t * E_t / R_t over
 * the added samples (d->value; d->main_value for thread 0) and how many samples it holds. */
typedef struct opf_pmu_acc opf_pmu_acc;
opf_pmu_acc *opf_pmu_acc_new(void);
void opf_pmu_acc_free(opf_pmu_acc *acc);
int opf_pmu_acc_add(const opf_pmu *p, opf_pmu_acc *acc, const opf_pmu_snap *a,
                    const opf_pmu_snap *b);
opf_pmu_dstate opf_pmu_acc_value(const opf_pmu *p, const opf_pmu_acc *acc, size_t i,
                                 opf_pmu_dval *d, int *n_samples);

/* The plan of the last open, one line: hardware group capacity and where it came from, e.g.
 * "hardware groups of at most 5 events (amd64_fam1ah_zen5: 6 counters, 1 held by the NMI
 * watchdog)"; splits made; inherit. "" before an open. */
const char *opf_pmu_group_note(const opf_pmu *p);
/* What an event's privilege level counts: "user" (exclude_kernel, the default), "user+kernel",
 * "kernel". */
const char *opf_pmu_event_plm(const opf_pmu *p, size_t i);
/* What a generic event counts on this CPU's vendor ("L1D.REPLACEMENT: lines brought into the
 * L1D, demand and prefetch"), or NULL when opperf has nothing to add. vendor: "intel", "amd",
 * "arm"; NULL means this machine's. */
const char *opf_pmu_kind_note(const char *kind, const char *vendor);
/* The generic event an encoding counts: "cycles", "instructions", "branches",
 * "branch-misses", "l1d-loads", "l1d-load-misses", "llc-load-misses", "dtlb-load-misses",
 * "task-clock", ...; NULL for model-specific events. */
const char *opf_pmu_kind(uint32_t type, uint64_t config);
/* Names the PMUs libpfm4 detects as present, comma-separated ("perf,perf_raw,amd64_fam1ah_zen5"). */
int opf_pmu_detected(char *buf, size_t n);

/* ---- presets ------------------------------------------------------------------------------
 * sw, core, cache, tlb, branch: fixed perf(1) generic events. topdown: the events of this
 * CPU's row in the top-down table (include/opperf/topdown.h, pmu/topdown.c: Intel hsw..clx
 * classic, icl/icx/spr over TOPDOWN.SLOTS with level 2, AMD Zen 4 dispatch slots, Zen 5 by
 * CPUID with raw PPR codes as libpfm4 4.13 lacks it, Arm Neoverse V1/N2/V2), level-1 events
 * first. Where there is no row (no core PMU detected and CPUID names none, or a core PMU
 * without one) the preset is ONE event named "topdown" whose status is OPF_EV_NOT_SUPPORTED
 * from creation on (err 0, reason "top-down not available on MODEL: ..."): never a substitute
 * set. */
#define OPF_PMU_PRESET_MAX 8
typedef struct opf_pmu_preset_info {
  char name[16];                          /* "sw", "core", ..., "topdown" */
  char summary[96];
  int n;                                  /* members on this machine; 0: not available here */
  char member[OPF_PMU_PRESET_MAX][96];    /* as the user would write them */
  char note[192];                         /* topdown: the PMU it resolved for, or why none */
} opf_pmu_preset_info;
int opf_pmu_preset_count(void);
/* Fill *out for preset k (0 <= k < count). Returns OPF_OK or OPF_EINVAL. */
int opf_pmu_preset_at(int k, opf_pmu_preset_info *out);
/* Index of the preset named name (case-insensitive), -1 if it is not a preset. */
int opf_pmu_preset_find(const char *name);

/* ---- what libpfm4 knows (pmu/pfm_list.c) ------------------------------------------------ */
typedef struct opf_pfm_pmu_desc {
  char name[64];   /* libpfm4 PMU name: "perf", "perf_raw", "skx", "amd64_fam19h_zen4" */
  char desc[128];
  int n_events;
  int is_core;     /* PFM_PMU_TYPE_CORE: the CPU's core PMU */
  int n_counters;  /* libpfm4's generic + fixed counters (0 if it does not say) */
} opf_pfm_pmu_desc;
/* The PMUs libpfm4 detects as present, in libpfm4's order. Stores up to max in out and
 * returns how many there are (may exceed max), or a negative OPF_E* code. */
int opf_pfm_pmus(opf_pfm_pmu_desc *out, int max);

typedef struct opf_pfm_event_desc {
  const char *pmu;   /* "perf" */
  const char *name;  /* "PERF_COUNT_HW_CPU_CYCLES": write it as pmu::name */
  const char *desc;  /* libpfm4's description (may be "" ) */
  int n_attrs;       /* unit masks and modifiers */
} opf_pfm_event_desc;
/* Calls fn for every event of the present PMU named pmu (NULL: of every present PMU), in
 * libpfm4's order, until fn returns non-zero. Returns the number of events visited, or
 * OPF_ENOTFOUND when no present PMU has that name, or another negative OPF_E* code. */
int opf_pfm_foreach_event(const char *pmu, int (*fn)(const opf_pfm_event_desc *ev, void *ctx),
                          void *ctx);

/* ---- rdpmc -------------------------------------------------------------------------------
 * opf_pmu_open maps the perf_event_mmap_page of the calling thread's hardware events. Where
 * the kernel allows user-space reads (cap_user_rdpmc), opf_pmu_read called from that same
 * thread reads them with the rdpmc instruction (seqlock protocol of perf_event_open(2)) rather
 * than read(); other threads, software events and groups the page cannot describe use read().
 * Environment, read at each opf_pmu_open:
 *   OPPERF_NO_RDPMC=1   never use rdpmc;
 *   OPPERF_RDPMC=1      use it whenever the kernel allows;
 *   (default: auto)     use it only if a short calibration at open finds it faster than
 *                       read(): in virtual machines rdpmc traps to the hypervisor and can
 *                       cost more than the system call. */
/* Number of events opf_pmu_read reads with rdpmc (0: all with read()). */
size_t opf_pmu_n_rdpmc(const opf_pmu *p);
/* One line on the rdpmc decision of the last open ("rdpmc: 4 events (auto: 180 ns vs 900 ns
 * per read)", "rdpmc: off (OPPERF_NO_RDPMC)", "rdpmc: not allowed by the kernel", ...). */
const char *opf_pmu_rdpmc_note(const opf_pmu *p);

/* ---- the sampler (pmu/sampler.c): raw samples with call chains from the kernel's ring
 * buffers, for the profiler (opperf/profile.h) ---- */
typedef struct opf_sampler opf_sampler;
/* Open one sampling event per thread of this process that exists now (/proc/self/task), each
 * with its own ring buffer, disabled. event: "cpu-clock" (software: works without a PMU) or
 * "cycles" (hardware); hz samples per second of a thread's CPU time. User space only
 * (exclude_kernel): time a thread spends in the kernel is sampled at the user-space
 * instruction that entered it. OPF_EINVAL for a bad event or rate; OPF_EUNSUPPORTED (with the
 * errno's reason: perf_event_paranoid, CAP_PERFMON, no PMU) when the kernel refuses. */
int opf_sampler_open(opf_sampler **out, const char *event, int hz, opf_err *err);
/* Open events on threads created since the last open or refresh (call between cases). */
int opf_sampler_refresh(opf_sampler *s, opf_err *err);
void opf_sampler_enable(opf_sampler *s);
void opf_sampler_disable(opf_sampler *s);
/* One sample: its call chain, leaf first (kernel context markers dropped), n >= 1. */
typedef void (*opf_sample_fn)(void *ctx, const uint64_t *ips, int n);
/* Read every ring buffer (only those more than half full when half_full), calling fn per sample. */
void opf_sampler_drain(opf_sampler *s, int half_full, opf_sample_fn fn, void *ctx);
/* Totals since open: samples the kernel lost (ring buffer full) and throttling events. */
void opf_sampler_counts(const opf_sampler *s, uint64_t *lost, uint64_t *throttled);
int opf_sampler_threads(const opf_sampler *s);
void opf_sampler_close(opf_sampler *s);

#endif

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
#define OPF_PMU_MAX_THREADS 64

typedef enum opf_ev_status {
  OPF_EV_COUNTED = 0,   /* counted for the whole measured time */
  OPF_EV_SCALED,        /* multiplexed: value scaled by enabled/running */
  OPF_EV_NOT_COUNTED,   /* opened, but never scheduled while measuring (running == 0) */
  OPF_EV_NOT_SUPPORTED, /* could not be opened here: see err and reason */
  OPF_EV_CONFIG_ERROR   /* libpfm4 could not encode the name */
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
} opf_pmu_event;

/* A snapshot of every event: raw value summed over threads, and time enabled / running. */
typedef struct opf_pmu_snap {
  uint64_t value[OPF_PMU_MAX_EVENTS];
  uint64_t enabled[OPF_PMU_MAX_EVENTS];
  uint64_t running[OPF_PMU_MAX_EVENTS];
} opf_pmu_snap;

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
/* Open the events on every thread of this process that exists now (/proc/self/task). Events
 * that fail get OPF_EV_NOT_SUPPORTED with errno and reason; never an error for that alone. */
int opf_pmu_open(opf_pmu *p, opf_err *err);
void opf_pmu_close(opf_pmu *p);
void opf_pmu_free(opf_pmu *p);
size_t opf_pmu_count(const opf_pmu *p);
const opf_pmu_event *opf_pmu_event_at(const opf_pmu *p, size_t i);
/* Number of events that opened (0: nothing to read). */
size_t opf_pmu_n_open(const opf_pmu *p);
/* Snapshot all open groups; cheap enough to call at every sample begin and end. */
int opf_pmu_read(opf_pmu *p, opf_pmu_snap *s);
/* Scaled delta of event i between two snapshots: raw delta * d_enabled / d_running.
 * *frac_running gets d_running / d_enabled (1 = counted all the time). Returns 0 when the event
 * did not run (running delta 0) or is not open, 1 when *value is valid. */
int opf_pmu_delta(const opf_pmu *p, size_t i, const opf_pmu_snap *a, const opf_pmu_snap *b,
                  double *value, double *frac_running);
/* The generic event an encoding counts: "cycles", "instructions", "branches",
 * "branch-misses", "l1d-loads", "l1d-load-misses", "llc-load-misses", "dtlb-load-misses",
 * "task-clock", ...; NULL for model-specific events. */
const char *opf_pmu_kind(uint32_t type, uint64_t config);
/* Names the PMUs libpfm4 detects as present, comma-separated ("perf,perf_raw,amd64_fam1ah_zen5"). */
int opf_pmu_detected(char *buf, size_t n);

#endif

/* pmu_internal.h: internals shared by pmu/pmu.c, pmu/pfm_encode.c and the pmu unit tests.
 * Free of <linux/perf_event.h> and libpfm4 headers on purpose (only the .c files of pmu/ include
 * them), so the tests inspect encoded attributes through a plain view, not the kernel struct. */
#ifndef OPPERF_PMU_INTERNAL_H
#define OPPERF_PMU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/pmu.h"

struct perf_event_attr; /* complete only inside the .c files of pmu/ */

/* Initialise libpfm4 once per process (pthread_once). Returns 0, or a negative OPF_E* code with
 * libpfm4's reason in why. The LIBPFM_ENCODE_INACTIVE environment variable is read here, once. */
int opf_pfm_init(char *why, size_t why_n);

/* Encode one event name into attr (attr is cleared first; attr->size is set). Accepts libpfm4
 * strings and the perf(1) spellings libpfm4 4.13 lacks (see pfm_encode.c). fstr receives the
 * fully qualified name. Returns 0, or a libpfm4 PFM_ERR_* code (< 0) with the libpfm4 text of
 * that code in why. User space only unless the name carries a ":k" modifier. */
int opf_pfm_encode(const char *name, struct perf_event_attr *attr, char *fstr, size_t fstr_n,
                   char *why, size_t why_n);
/* The libpfm4 PMU an encoded name belongs to ("perf", "skl", ...) and whether libpfm4 detects it
 * as present on this CPU (an event of an absent PMU encodes only with LIBPFM_ENCODE_INACTIVE=1,
 * and its raw code would mean another event on the real PMU). Returns 0, or a PFM_ERR_* code. */
int opf_pfm_event_pmu(const char *name, char *pmu, size_t pmu_n, int *present);

/* The attribute fields that matter to opperf, decoded from a struct perf_event_attr. The fault
 * injection tests receive attr as void * in opf_pmu_sys.perf_event_open and read it with this. */
typedef struct opf_pmu_attr_view {
  uint32_t type;
  uint64_t config, config1, config2;
  uint64_t read_format;
  int disabled, inherit, exclude_user, exclude_kernel, exclude_hv;
} opf_pmu_attr_view;

void opf_pmu_attr_view_decode(const void *attr, opf_pmu_attr_view *v);
/* The attribute event i was (or will be) opened with. Returns 0, OPF_EINVAL for a bad index. */
int opf_pmu_attr_view_of(const opf_pmu *p, size_t i, opf_pmu_attr_view *v);

/* ---- test hooks ------------------------------------------------------------------------- */
/* System calls opf_pmu_create uses when given sys == NULL (NULL: the real ones). Lets tests
 * inject failures into code that creates its own counter sets (src/overhead.c). */
void opf_pmu_set_default_sys(const opf_pmu_sys *sys);
/* Plan hardware groups as if the core PMU had this many counters, the NMI watchdog holding
 * `watchdog` of them (counters < 0: detect from CPUID / libpfm4 and /proc again). */
void opf_pmu_set_hw_capacity(int counters, int watchdog);
/* Read hybrid-CPU PMU descriptions (cpu_core, cpu_atom) under this directory instead of
 * /sys/bus/event_source/devices (NULL: the real one). */
void opf_pmu_set_sysfs_root(const char *dir);
/* The arm64 form of preset "core" or "cache": Arm common-event names in names[], and in
 * encs[] "PMU::NAME" where libpfm4's table for pmu encodes it, else the raw number "r11".
 * Returns how many (0: not a preset with an arm64 form). Used on arm64; testable anywhere. */
int opf_pmu_arm_preset(const char *preset, const char *pmu, char names[][96], char encs[][96],
                       int max);
/* Pretend libpfm4 detected this core PMU when resolving the topdown preset ("skx", "icl",
 * "amd64_fam19h_zen4"; "" = none detected; NULL = use what libpfm4 really detects). */
void opf_pmu_set_topdown_pmu(const char *pmu);
/* The topdown members for a model of the top-down table (libpfm4 PMU name), as shown (the
 * libpfm4 strings; the kernel's names for Zen 5's raw codes) into out. Returns how many (0:
 * no row for that PMU). */
int opf_pmu_topdown_members(const char *pmu, char out[][96], int max);
/* opf_pmu_read through read() only, never rdpmc (to compare the two paths). */
int opf_pmu_read_syscall(opf_pmu *p, opf_pmu_snap *s);

/* The fields of a perf_event_mmap_page read under its seqlock, plus the raw rdpmc and rdtsc
 * values read in the same pass (pmc only when index != 0 and cap_user_rdpmc). */
typedef struct opf_upage {
  uint32_t index;
  int64_t offset;
  uint64_t time_enabled, time_running;
  uint16_t pmc_width;
  int cap_user_rdpmc, cap_user_time, cap_user_time_short;
  uint16_t time_shift;
  uint32_t time_mult;
  uint64_t time_offset, time_cycles, time_mask;
  uint64_t pmc, tsc;
} opf_upage;
enum {
  OPF_UPAGE_FALLBACK = 0, /* the page cannot give the count now: use read() */
  OPF_UPAGE_EXACT = 1,    /* value, enabled and running are current (cap_user_time) */
  OPF_UPAGE_STALE_TIME = 2 /* value current, times as of the page's last update: only
                             returned when the event is on a counter and never multiplexed
                             (enabled == running), so time ran for both since that update */
};
/* The count and times from a page, as perf_event_open(2) describes: offset plus the counter
 * sign-extended from pmc_width bits; time deltas from the TSC when cap_user_time. */
int opf_upage_eval(const opf_upage *u, uint64_t *value, uint64_t *enabled, uint64_t *running);

#endif

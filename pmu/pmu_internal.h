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

#endif

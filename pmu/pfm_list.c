/* pfm_list.c: what libpfm4 knows on this machine: the PMUs it detects as present and every
 * event of those PMUs (pfm_get_pmu_info / pfm_get_event_next / pfm_get_event_info), for
 * `opperf events` and the topdown preset. Lists only; encoding is pfm_encode.c's job. */
#include <perfmon/pfmlib.h>

#include <stdio.h>
#include <string.h>

#include "opperf/error.h"
#include "opperf/pmu.h"
#include "pmu_internal.h"

static int pmu_info(int i, pfm_pmu_info_t *info) {
  memset(info, 0, sizeof *info);
  info->size = sizeof *info;
  return pfm_get_pmu_info((pfm_pmu_t)i, info) == PFM_SUCCESS && info->is_present && info->name;
}

int opf_pfm_pmus(opf_pfm_pmu_desc *out, int max) {
  if (max < 0 || (max > 0 && !out)) return OPF_EINVAL;
  int rc = opf_pfm_init(NULL, 0);
  if (rc != OPF_OK) return rc;
  int n = 0;
  int i;
  pfm_for_all_pmus(i) {
    pfm_pmu_info_t info;
    if (!pmu_info(i, &info)) continue;
    if (n < max) {
      opf_pfm_pmu_desc *d = &out[n];
      memset(d, 0, sizeof *d);
      snprintf(d->name, sizeof d->name, "%s", info.name);
      snprintf(d->desc, sizeof d->desc, "%s", info.desc ? info.desc : "");
      d->n_events = info.nevents;
      d->is_core = info.type == PFM_PMU_TYPE_CORE;
      d->n_counters = info.num_cntrs + info.num_fixed_cntrs;
    }
    n++;
  }
  return n;
}

int opf_pfm_foreach_event(const char *pmu, int (*fn)(const opf_pfm_event_desc *ev, void *ctx),
                          void *ctx) {
  if (!fn) return OPF_EINVAL;
  int rc = opf_pfm_init(NULL, 0);
  if (rc != OPF_OK) return rc;
  int visited = 0, found = 0;
  int i;
  pfm_for_all_pmus(i) {
    pfm_pmu_info_t info;
    if (!pmu_info(i, &info)) continue;
    if (pmu && strcmp(pmu, info.name) != 0) continue;
    found = 1;
    for (int e = info.first_event; e != -1; e = pfm_get_event_next(e)) {
      pfm_event_info_t ei;
      memset(&ei, 0, sizeof ei);
      ei.size = sizeof ei;
      if (pfm_get_event_info(e, PFM_OS_NONE, &ei) != PFM_SUCCESS || !ei.name) continue;
      opf_pfm_event_desc d = {info.name, ei.name, ei.desc ? ei.desc : "", ei.nattrs};
      visited++;
      if (fn(&d, ctx)) return visited;
    }
  }
  if (pmu && !found) return OPF_ENOTFOUND;
  return visited;
}

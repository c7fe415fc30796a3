/* pfm_encode.c: turns event names into perf_event_attr with libpfm4 (PFM_OS_PERF_EVENT_EXT) and
 * lists the PMUs libpfm4 detects. Also accepts the few perf(1) spellings libpfm4 4.13 lacks, so
 * users can write what `perf stat -e` takes. Only this file and pmu.c see libpfm4 and the kernel
 * perf header; <linux/perf_event.h> comes first so libpfm4 uses the kernel's struct. */
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opperf/error.h"
#include "opperf/pmu.h"
#include "pmu_internal.h"

/* Experiments with libpfm4 4.13 (Debian 12), PFM_OS_PERF_EVENT_EXT, PFM_PLM3:
 * - the "perf" PMU of libpfm4 matches names case-insensitively and has the perf(1) aliases, so
 *   "task-clock", "TASK-CLOCK", "perf::TASK-CLOCK", "perf::PERF_COUNT_SW_TASK_CLOCK" and
 *   "PERF_COUNT_SW_TASK_CLOCK" all give type=1 (software) config=1; likewise page-faults/faults,
 *   context-switches/cs, cpu-migrations/migrations, minor-faults, major-faults, cpu-clock,
 *   cgroup-switches, cycles/cpu-cycles, instructions, branches/branch-instructions,
 *   branch-misses, cache-references, cache-misses, ref-cycles, bus-cycles,
 *   stalled-cycles-frontend/backend and the cache events (L1-dcache-load-misses,
 *   LLC-load-misses, dTLB-load-misses, iTLB-load-misses, branch-loads, ...);
 * - perf(1) raw syntax "r003c" is taken by libpfm4's perf_raw PMU (type=4 PERF_TYPE_RAW);
 * - ":u" and ":k" work, and PFM_PLM3 gives exclude_kernel=1, exclude_hv=1 when neither is given;
 * - missing: "alignment-faults", "emulation-faults" (no such entries in libpfm4's perf table),
 *   perf(1)'s combined modifiers ":uk"/":ku" (PFM_ERR_ATTR) and the "cpu/NAME/" PMU syntax.
 *   Those are handled below. */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_init_rc = PFM_ERR_NOINIT;

static void pfm_init_once(void) { g_init_rc = pfm_initialize(); }

int opf_pfm_init(char *why, size_t why_n) {
  pthread_once(&g_once, pfm_init_once);
  if (g_init_rc != PFM_SUCCESS) {
    if (why && why_n)
      snprintf(why, why_n, "libpfm4 initialisation failed: %s", pfm_strerror(g_init_rc));
    return OPF_EUNSUPPORTED;
  }
  return OPF_OK;
}

static void copy_str(char *dst, size_t n, const char *src) {
  if (!dst || !n) return;
  snprintf(dst, n, "%s", src ? src : "");
}

/* One libpfm4 encoding attempt. attr is cleared first so nothing stale survives. */
static _Thread_local int g_last_idx = -1; /* event index of the last successful pfm_try (this thread) */
static int pfm_try(const char *s, struct perf_event_attr *attr, char *fstr, size_t fstr_n) {
  memset(attr, 0, sizeof *attr);
  attr->size = sizeof *attr;
  pfm_perf_encode_arg_t arg;
  memset(&arg, 0, sizeof arg);
  arg.size = sizeof arg;
  arg.attr = attr;
  char *f = NULL;
  arg.fstr = &f;
  int r = pfm_get_os_event_encoding(s, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
  if (r == PFM_SUCCESS) copy_str(fstr, fstr_n, f);
  if (r == PFM_SUCCESS) g_last_idx = arg.idx;
  free(f);
  if (r == PFM_SUCCESS) {
    /* We count, never sample: a ":period=" or ":freq=" from the user would only add overflow
     * interrupts to the measured code. libpfm4 may have written a smaller struct size. */
    attr->sample_period = 0;
    attr->freq = 0;
    attr->size = sizeof *attr;
  }
  return r;
}

/* Expands a perf(1) modifier string ("u", "k", "uk", "ku") into libpfm4 form (":u:k").
 * Returns 0 if mods has any other letter: then it is not ours to translate. */
static int expand_mods(const char *mods, char *out, size_t n) {
  size_t len = strlen(mods);
  if (len == 0 || len > 2) return 0;
  out[0] = '\0';
  for (size_t i = 0; i < len; i++) {
    if (mods[i] != 'u' && mods[i] != 'k') return 0;
    if (i == 1 && mods[0] == mods[1]) return 0;
    size_t l = strlen(out);
    snprintf(out + l, n - l, ":%c", mods[i]);
  }
  return 1;
}

/* perf(1) spellings libpfm4 lacks, rewritten to a libpfm4 string. Returns 1 if rewritten. */
static int perf_alias(const char *name, char *out, size_t n) {
  char mods[16];
  /* "cpu/cycles/" or "cpu/cycles/u": perf's PMU-qualified form of a generic event. Terms with
   * '=' (event=0x3c,umask=...) contain commas, which the event list cannot carry anyway. */
  if (strncmp(name, "cpu/", 4) == 0) {
    const char *in = name + 4;
    const char *slash = strchr(in, '/');
    if (!slash || slash == in || memchr(in, '=', (size_t)(slash - in))) return 0;
    const char *after = slash + 1;
    if (*after && !expand_mods(after, mods, sizeof mods)) return 0;
    snprintf(out, n, "%.*s%s", (int)(slash - in), in, *after ? mods : "");
    return 1;
  }
  /* "cycles:uk" / "instructions:ku": libpfm4 wants ":u:k". */
  const char *colon = strrchr(name, ':');
  if (colon && colon > name && colon[-1] != ':' && expand_mods(colon + 1, mods, sizeof mods) &&
      strlen(colon + 1) == 2) {
    snprintf(out, n, "%.*s%s", (int)(colon - name), name, mods);
    return 1;
  }
  return 0;
}

/* Software events the kernel has but libpfm4 4.13's perf table lacks. Encoded by hand with the
 * same privilege-level rules as PFM_PLM3 (user only unless ":k" is given). */
static const struct {
  const char *name;
  const char *fq;
  uint64_t config;
} k_extra_sw[] = {
    {"alignment-faults", "perf::PERF_COUNT_SW_ALIGNMENT_FAULTS", PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", "perf::PERF_COUNT_SW_EMULATION_FAULTS", PERF_COUNT_SW_EMULATION_FAULTS},
};

static int extra_sw(const char *name, struct perf_event_attr *attr, char *fstr, size_t fstr_n) {
  for (size_t i = 0; i < sizeof k_extra_sw / sizeof k_extra_sw[0]; i++) {
    size_t l = strlen(k_extra_sw[i].name);
    const char *s = name;
    if (strncmp(s, "perf::", 6) == 0) s += 6;
    if (strncasecmp(s, k_extra_sw[i].name, l) != 0) continue;
    const char *rest = s + l;
    int u = 1, k = 0;
    if (*rest == ':') {
      char mods[16];
      if (!expand_mods(rest + 1, mods, sizeof mods)) return 0;
      u = strchr(rest + 1, 'u') != NULL;
      k = strchr(rest + 1, 'k') != NULL;
    } else if (*rest) {
      continue;
    }
    memset(attr, 0, sizeof *attr);
    attr->size = sizeof *attr;
    attr->type = PERF_TYPE_SOFTWARE;
    attr->config = k_extra_sw[i].config;
    attr->exclude_user = !u;
    attr->exclude_kernel = !k;
    attr->exclude_hv = 1;
    if (fstr && fstr_n) snprintf(fstr, fstr_n, "%s:u=%d:k=%d", k_extra_sw[i].fq, u, k);
    return 1;
  }
  return 0;
}

int opf_pfm_encode(const char *name, struct perf_event_attr *attr, char *fstr, size_t fstr_n,
                   char *why, size_t why_n) {
  copy_str(fstr, fstr_n, "");
  copy_str(why, why_n, "");
  int rc = opf_pfm_init(why, why_n);
  if (rc != OPF_OK) return PFM_ERR_NOINIT;
  if (extra_sw(name, attr, fstr, fstr_n)) return PFM_SUCCESS;
  int r = pfm_try(name, attr, fstr, fstr_n);
  if (r == PFM_SUCCESS) return r;
  char alias[256];
  if (perf_alias(name, alias, sizeof alias) && pfm_try(alias, attr, fstr, fstr_n) == PFM_SUCCESS)
    return PFM_SUCCESS;
  /* The first error is the one about what the user wrote. */
  memset(attr, 0, sizeof *attr);
  copy_str(why, why_n, pfm_strerror(r));
  return r;
}

int opf_pmu_detected(char *buf, size_t n) {
  if (!buf || n == 0) return OPF_EINVAL;
  buf[0] = '\0';
  int rc = opf_pfm_init(NULL, 0);
  if (rc != OPF_OK) return rc;
  size_t len = 0;
  int fits = 1;
  int i;
  pfm_for_all_pmus(i) {
    pfm_pmu_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (pfm_get_pmu_info((pfm_pmu_t)i, &info) != PFM_SUCCESS || !info.is_present || !info.name)
      continue;
    size_t need = strlen(info.name) + (len ? 1 : 0);
    if (len + need + 1 > n) { /* keep whole names only: a cut name would mislead */
      fits = 0;
      break;
    }
    snprintf(buf + len, n - len, "%s%s", len ? "," : "", info.name);
    len += need;
  }
  return fits ? OPF_OK : OPF_EINVAL;
}

int opf_pfm_event_pmu(const char *name, char *pmu, size_t pmu_n, int *present) {
  copy_str(pmu, pmu_n, "");
  if (present) *present = 0;
  struct perf_event_attr a;
  char why[64];
  if (extra_sw(name, &a, NULL, 0)) { /* our own software encodings: the kernel's perf PMU */
    copy_str(pmu, pmu_n, "perf");
    if (present) *present = 1;
    return PFM_SUCCESS;
  }
  g_last_idx = -1;
  int r = opf_pfm_encode(name, &a, NULL, 0, why, sizeof why);
  if (r != PFM_SUCCESS) return r;
  if (g_last_idx < 0) return PFM_ERR_NOTFOUND;
  pfm_event_info_t ei;
  memset(&ei, 0, sizeof ei);
  ei.size = sizeof ei;
  if (pfm_get_event_info(g_last_idx, PFM_OS_NONE, &ei) != PFM_SUCCESS) return PFM_ERR_NOTFOUND;
  pfm_pmu_info_t pi;
  memset(&pi, 0, sizeof pi);
  pi.size = sizeof pi;
  if (pfm_get_pmu_info(ei.pmu, &pi) != PFM_SUCCESS) return PFM_ERR_NOTFOUND;
  copy_str(pmu, pmu_n, pi.name);
  if (present) *present = pi.is_present;
  return PFM_SUCCESS;
}

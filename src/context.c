/* context.c: the context block of every report: tool and build, CPU, caches (sysfs), kernel,
 * perf_event_paranoid, PMUs libpfm4 detects, BLAS build and threads, timer, settings, counter
 * statuses and a timestamp, so a figure can always be traced to where it was measured. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "build_info.h"
#include "git_hash.h"
#include "opperf/blaskernel.h"
#include "opperf/report.h"

/* OpenBLAS extensions (declared in Debian's cblas.h as well; repeated for other builds). */
extern char *openblas_get_config(void);
extern int openblas_get_parallel(void);
extern int openblas_get_num_threads(void);
extern char *openblas_get_corename(void);
extern char **environ;

static double loadavg1(void) {
  double l[1];
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

/* Variables that change which kernels or how many threads run. */
static void relevant_env(char *buf, size_t n) {
  size_t off = 0;
  buf[0] = '\0';
  for (char **e = environ; *e && off < n; e++)
    if (!strncmp(*e, "OPENBLAS_", 9) || !strncmp(*e, "OMP_", 4) || !strncmp(*e, "GOMP_", 5) ||
        !strncmp(*e, "OPPERF_", 7))
      off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? " " : "", *e);
}

void opf_context_finish(opf_context *ctx) { ctx->loadavg_end = loadavg1(); }

/* libgomp's wait policy: idle workers spin GOMP_SPINCOUNT times before they sleep (300,000
 * by default, 30 billion with OMP_WAIT_POLICY=active, 0 with passive; libgomp 12 docs), and a
 * spinning worker's cycles and instructions land in the counters summed over threads. */
static void omp_wait_policy(char *buf, size_t n) {
  const char *pol = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
  if (spin && *spin)
    snprintf(buf, n, "GOMP_SPINCOUNT=%s%s%s: idle workers spin that long, then sleep", spin,
             pol && *pol ? ", OMP_WAIT_POLICY=" : "", pol && *pol ? pol : "");
  else if (pol && !strcasecmp(pol, "passive"))
    snprintf(buf, n, "passive (OMP_WAIT_POLICY): idle workers sleep at once, no spinning");
  else if (pol && !strcasecmp(pol, "active"))
    snprintf(buf, n, "active (OMP_WAIT_POLICY): idle workers spin for up to 30 billion spins");
  else
    snprintf(buf, n, "default: idle workers spin up to 300,000 times, then sleep");
}

static int read_line(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char *ok = fgets(buf, (int)n, f);
  fclose(f);
  if (!ok) return -1;
  buf[strcspn(buf, "\n")] = '\0';
  return 0;
}

static uint64_t parse_size(const char *s) {
  unsigned long long v = 0;
  char unit = 0;
  if (sscanf(s, "%llu%c", &v, &unit) < 1) return 0;
  if (unit == 'K') v <<= 10;
  else if (unit == 'M') v <<= 20;
  else if (unit == 'G') v <<= 30;
  return v;
}

static int read_caches(opf_cache_info *out, int max) {
  int n = 0;
  for (int i = 0; i < 16 && n < max; i++) {
    char path[128], buf[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    if (read_line(path, buf, sizeof buf)) break;
    opf_cache_info *c = &out[n++];
    c->level = atoi(buf);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if (read_line(path, c->type, sizeof c->type)) snprintf(c->type, sizeof c->type, "?");
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    c->size = read_line(path, buf, sizeof buf) ? 0 : parse_size(buf);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
    if (read_line(path, c->shared_cpus, sizeof c->shared_cpus)) c->shared_cpus[0] = '\0';
    c->num_sharing = 0; /* "0-1,4" -> 3 */
    for (const char *p = c->shared_cpus; *p;) {
      char *end;
      long a = strtol(p, &end, 10), b = a;
      if (end == p) break;
      if (*end == '-') b = strtol(end + 1, &end, 10);
      c->num_sharing += (int)(b - a + 1);
      p = *end == ',' ? end + 1 : end;
      if (!*end) break;
    }
  }
  return n;
}

int opf_cache_list(opf_cache_info *out, int max) { return out && max > 0 ? read_caches(out, max) : 0; }

uint64_t opf_llc_bytes(void) {
  opf_cache_info c[8];
  int n = read_caches(c, 8);
  uint64_t best = 0;
  int lvl = 0;
  for (int i = 0; i < n; i++)
    if (strcmp(c[i].type, "Instruction") && c[i].level >= lvl) lvl = c[i].level, best = c[i].size;
  return best ? best : 32ull << 20;
}

/* The CPU's nominal (base) frequency, not cpu0's momentary clock: cpufreq's base_frequency
 * (intel_pstate), else the "@ 2.10GHz" of Intel's model name, else, where the kernel has no
 * cpufreq (virtual machines), "cpu MHz", which is then the constant TSC rate, else cpufreq's
 * maximum. src says which. 0 when none is known. */
/* A cpufreq frequency file (kHz) in MHz; 0 when absent or unreadable. */
static double cpufreq_mhz(const char *file) {
  char path[128];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cpufreq/%s", file);
  FILE *f = fopen(path, "r");
  double khz = 0;
  if (!f) return 0;
  if (fscanf(f, "%lf", &khz) != 1) khz = 0;
  fclose(f);
  return khz > 0 ? khz / 1000 : 0;
}

static double nominal_mhz(char *src, size_t n) {
  double base = cpufreq_mhz("base_frequency");
  if (base > 0) {
    snprintf(src, n, "cpufreq base_frequency");
    return base;
  }
  char line[512];
  double mhz = 0, ghz = 0;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      const char *at = strstr(line, "@ ");
      if (!strncmp(line, "model name", 10) && at && sscanf(at, "@ %lfGHz", &ghz) == 1) break;
      if (mhz == 0) sscanf(line, "cpu MHz : %lf", &mhz);
    }
    fclose(f);
  }
  if (ghz > 0) {
    snprintf(src, n, "model name");
    return ghz * 1000;
  }
  int has_cpufreq = access("/sys/devices/system/cpu/cpu0/cpufreq", F_OK) == 0;
  if (!has_cpufreq && mhz > 0) {
    snprintf(src, n, "TSC rate (cpu MHz; no cpufreq, constant)");
    return mhz;
  }
  double max = cpufreq_mhz("cpuinfo_max_freq");
  if (max > 0) {
    snprintf(src, n, "cpufreq cpuinfo_max_freq (maximum, not base)");
    return max;
  }
  snprintf(src, n, "unknown");
  return 0;
}

/* arm64 /proc/cpuinfo has no "model name": the core is named by the implementer and part
 * fields of its MIDR_EL1 (values from the Arm and vendors' technical reference manuals). */
static const char *arm_core_name(unsigned impl, unsigned part) {
  static const struct { unsigned impl, part; const char *name; } t[] = {
      {0x41, 0xd03, "ARM Cortex-A53"},   {0x41, 0xd04, "ARM Cortex-A35"},
      {0x41, 0xd05, "ARM Cortex-A55"},   {0x41, 0xd07, "ARM Cortex-A57"},
      {0x41, 0xd08, "ARM Cortex-A72"},   {0x41, 0xd09, "ARM Cortex-A73"},
      {0x41, 0xd0a, "ARM Cortex-A75"},   {0x41, 0xd0b, "ARM Cortex-A76"},
      {0x41, 0xd0c, "ARM Neoverse-N1"},  {0x41, 0xd0d, "ARM Cortex-A77"},
      {0x41, 0xd40, "ARM Neoverse-V1"},  {0x41, 0xd41, "ARM Cortex-A78"},
      {0x41, 0xd44, "ARM Cortex-X1"},    {0x41, 0xd46, "ARM Cortex-A510"},
      {0x41, 0xd47, "ARM Cortex-A710"},  {0x41, 0xd48, "ARM Cortex-X2"},
      {0x41, 0xd49, "ARM Neoverse-N2"},  {0x41, 0xd4d, "ARM Cortex-A715"},
      {0x41, 0xd4e, "ARM Cortex-X3"},    {0x41, 0xd4f, "ARM Neoverse-V2"},
      {0x41, 0xd80, "ARM Cortex-A520"},  {0x41, 0xd81, "ARM Cortex-A720"},
      {0x41, 0xd82, "ARM Cortex-X4"},    {0x41, 0xd84, "ARM Neoverse-V3"},
      {0x41, 0xd8e, "ARM Neoverse-N3"},  {0x43, 0x0af, "Cavium ThunderX2"},
      {0x46, 0x001, "Fujitsu A64FX"},    {0x48, 0xd01, "HiSilicon Kunpeng-920"},
      {0x51, 0x800, "Qualcomm Kryo"},    {0xc0, 0xac3, "Ampere-1"},
      {0xc0, 0xac4, "Ampere-1a"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (t[i].impl == impl && t[i].part == part) return t[i].name;
  return NULL;
}

void opf_cpu_model(char *buf, size_t n) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  snprintf(buf, n, "unknown");
  if (!f) return;
  char line[512];
  unsigned impl = 0, part = 0, var = 0, rev = 0;
  int have_impl = 0, have_part = 0, named = 0;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "model name", 10)) {
      char *c = strchr(line, ':');
      if (c) {
        c += 1 + (c[1] == ' ');
        c[strcspn(c, "\n")] = '\0';
        snprintf(buf, n, "%s", c);
        named = 1;
      }
#if !defined(__aarch64__)
      break;
#endif
    }
    /* arm64: the first processor's block (all cores alike, or the boot core of a big.LITTLE) */
    if (!have_impl && sscanf(line, "CPU implementer : %x", &impl) == 1) have_impl = 1;
    else if (!have_part && sscanf(line, "CPU part : %x", &part) == 1) have_part = 1;
    else if (!var && sscanf(line, "CPU variant : %x", &var) == 1) continue;
    else if (!rev && sscanf(line, "CPU revision : %u", &rev) == 1) continue;
    if ((named || (have_impl && have_part)) && line[0] == '\n') break; /* end of the first block */
  }
  fclose(f);
#if defined(__aarch64__)
  /* An arm64 build that finds an x86 "model name" and no MIDR fields runs under qemu-user,
   * which shows the host's /proc/cpuinfo: say so rather than pass the host's CPU off as this
   * one. */
  if (named && !have_impl) {
    size_t l = strlen(buf);
    if (l < n) snprintf(buf + l, n - l, " (host CPU of an emulator)");
    return;
  }
#endif
  if (named || !have_impl || !have_part) return;
  /* MIDR_EL1 as the kernel exposes it (absent in containers without that sysfs file): the
   * full identification, revision included; otherwise rebuilt from the cpuinfo fields. */
  unsigned long long midr = 0;
  FILE *m = fopen("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "r");
  if (!m || fscanf(m, "%llx", &midr) != 1)
    midr = (unsigned long long)impl << 24 | (unsigned long long)(var & 0xf) << 20 | 0xfull << 16 |
           (unsigned long long)(part & 0xfff) << 4 | (rev & 0xf);
  if (m) fclose(m);
  const char *name = arm_core_name(impl, part);
  if (name) snprintf(buf, n, "%s (MIDR 0x%08llx)", name, midr);
  else snprintf(buf, n, "arm64 implementer 0x%02x part 0x%03x (MIDR 0x%08llx)", impl, part, midr);
}

void opf_context_collect(opf_context *ctx, const opf_settings *s, const opf_pmu *pmu,
                         const char *command) {
  memset(ctx, 0, sizeof *ctx);
  snprintf(ctx->tool_version, sizeof ctx->tool_version, "%s", OPPERF_VERSION_STR);
  snprintf(ctx->git_hash, sizeof ctx->git_hash, "%s", OPPERF_GIT_HASH);
  snprintf(ctx->build_type, sizeof ctx->build_type, "%s", OPPERF_BUILD_TYPE);
  snprintf(ctx->compiler, sizeof ctx->compiler, "%s", OPPERF_COMPILER);
  snprintf(ctx->cflags, sizeof ctx->cflags, "%s", OPPERF_CFLAGS);
  opf_cpu_model(ctx->cpu_model, sizeof ctx->cpu_model);
  ctx->cpus_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
  ctx->mhz = nominal_mhz(ctx->mhz_source, sizeof ctx->mhz_source);
  ctx->n_caches = read_caches(ctx->caches, 8);
  ctx->mem_total = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
  struct utsname u;
  if (!uname(&u)) snprintf(ctx->kernel, sizeof ctx->kernel, "%s %s %s", u.sysname, u.release, u.machine);
  gethostname(ctx->hostname, sizeof ctx->hostname - 1);
  char buf[64];
  ctx->perf_event_paranoid =
      read_line("/proc/sys/kernel/perf_event_paranoid", buf, sizeof buf) ? -99 : atoi(buf);
  if (opf_pmu_detected(ctx->pmus, sizeof ctx->pmus)) ctx->pmus[0] = '\0';
  const char *cfg = openblas_get_config();
  snprintf(ctx->blas_config, sizeof ctx->blas_config, "%s", cfg ? cfg : "unknown");
  ctx->blas_threads = openblas_get_num_threads();
  int par = openblas_get_parallel();
  snprintf(ctx->blas_parallel, sizeof ctx->blas_parallel, "%s",
           par == 0 ? "sequential" : par == 1 ? "pthreads" : par == 2 ? "openmp" : "unknown");
  snprintf(ctx->blas_library, sizeof ctx->blas_library, "%s", OPPERF_OPENBLAS_LIB);
  const char *core = openblas_get_corename();
  snprintf(ctx->blas_core, sizeof ctx->blas_core, "%s", core ? core : "unknown");
  /* OpenBLAS's choice as it stands; the CLI overrides this when it chose the core itself
   * (src/cli/blas.c re-executes with OPENBLAS_CORETYPE set). */
  opf_cpu_desc cpu;
  opf_cpu_desc_detect(&cpu);
  opf_blas_decision bd;
  opf_err berr;
  if (!opf_blas_decide(&cpu, core, getenv("OPENBLAS_CORETYPE"), "native", &bd, &berr)) {
    snprintf(ctx->blas_core_source, sizeof ctx->blas_core_source, "%s", opf_blas_source_name(bd.source));
    snprintf(ctx->blas_core_openblas, sizeof ctx->blas_core_openblas, "%s", bd.openblas);
    snprintf(ctx->blas_cpu_family, sizeof ctx->blas_cpu_family, "%s", bd.cpu_family);
    opf_blas_note(&bd, ctx->blas_core_note, sizeof ctx->blas_core_note);
  }
  relevant_env(ctx->env, sizeof ctx->env);
  ctx->loadavg_start = ctx->loadavg_end = loadavg1();
  ctx->omp_threads = omp_get_max_threads();
  ctx->timer_resolution = opf_timer_resolution();
  ctx->timer_overhead = opf_timer_overhead();
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(ctx->timestamp, sizeof ctx->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  snprintf(ctx->command, sizeof ctx->command, "%s", command ? command : "");
  if (s) ctx->settings = *s;
  for (size_t i = 0; pmu && i < opf_pmu_count(pmu) && i < OPF_PMU_MAX_EVENTS; i++)
    ctx->events[ctx->n_events++] = *opf_pmu_event_at(pmu, i);
  snprintf(ctx->pmu_note, sizeof ctx->pmu_note, "%s", pmu ? opf_pmu_group_note(pmu) : "");
  omp_wait_policy(ctx->omp_wait, sizeof ctx->omp_wait);
  opf_context_build_ids(ctx);
}

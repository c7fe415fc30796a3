/* blaskernel.c: the OpenBLAS kernel decision (opperf/blaskernel.h). Each x86 core name of
 * OpenBLAS's DYNAMIC_ARCH builds has an ISA level; the CPU's features give the best level it
 * can run; a core below that level is a fallback (a CPU newer than the library), not a choice. */
#include "opperf/blaskernel.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ISA levels, low to high. */
enum { L_NONE, L_SSE2, L_SSE3, L_SSSE3, L_SSE41, L_SSE42, L_AVX, L_AVX2, L_AVX512, L_BF16 };

/* OpenBLAS's x86 core names (driver/others/dynamic.c, corename[]) and the ISA their kernels
 * use. Zen and Excavator run AVX2 kernels (Haswell's level); SapphireRapids is a later name,
 * listed so that a newer OpenBLAS choosing it is never "upgraded". */
static const struct {
  const char *name;
  int level;
} cores[] = {
    {"Katmai", L_SSE2},      {"Coppermine", L_SSE2},   {"Northwood", L_SSE2},
    {"Banias", L_SSE2},      {"Athlon", L_SSE2},       {"Opteron", L_SSE2},
    {"Prescott", L_SSE3},    {"Opteron_SSE3", L_SSE3}, {"Barcelona", L_SSE3},
    {"Core2", L_SSSE3},      {"Atom", L_SSSE3},        {"Nano", L_SSSE3},
    {"Bobcat", L_SSSE3},     {"Penryn", L_SSE41},      {"Dunnington", L_SSE41},
    {"Nehalem", L_SSE42},    {"Sandybridge", L_AVX},   {"Bulldozer", L_AVX},
    {"Piledriver", L_AVX},   {"Steamroller", L_AVX},   {"Excavator", L_AVX2},
    {"Haswell", L_AVX2},     {"Zen", L_AVX2},          {"SkylakeX", L_AVX512},
    {"Cooperlake", L_BF16},  {"SapphireRapids", L_BF16},
};
#define N_CORES (sizeof cores / sizeof cores[0])

/* The family opperf picks for each level the CPU reaches (Intel's names: OpenBLAS's AMD
 * cores run the same kernels at these levels). */
static const char *const family_of_level[] = {
    [L_SSE3] = "Prescott", [L_SSSE3] = "Core2",       [L_SSE41] = "Penryn",
    [L_SSE42] = "Nehalem", [L_AVX] = "Sandybridge",   [L_AVX2] = "Haswell",
    [L_AVX512] = "SkylakeX", [L_BF16] = "Cooperlake",
};

static int core_level(const char *name) {
  for (size_t i = 0; name && i < N_CORES; i++)
    if (!strcasecmp(name, cores[i].name)) return cores[i].level;
  return L_NONE;
}

const char *opf_blas_core_canonical(const char *name) {
  for (size_t i = 0; name && i < N_CORES; i++)
    if (!strcasecmp(name, cores[i].name)) return cores[i].name;
  return NULL;
}

static int cpu_level(const opf_cpu_desc *cpu) {
  const unsigned f = cpu->isa, avx512 = OPF_ISA_AVX512F | OPF_ISA_AVX512BW | OPF_ISA_AVX512VL |
                                        OPF_ISA_AVX512DQ | OPF_ISA_AVX512CD;
  if (!cpu->x86) return L_NONE;
  if ((f & avx512) == avx512) return f & OPF_ISA_AVX512BF16 ? L_BF16 : L_AVX512;
  if ((f & (OPF_ISA_AVX2 | OPF_ISA_FMA)) == (OPF_ISA_AVX2 | OPF_ISA_FMA)) return L_AVX2;
  if (f & OPF_ISA_AVX) return L_AVX;
  if (f & OPF_ISA_SSE42) return L_SSE42;
  if (f & OPF_ISA_SSE41) return L_SSE41;
  if (f & OPF_ISA_SSSE3) return L_SSSE3;
  if (f & OPF_ISA_SSE3) return L_SSE3;
  return L_NONE;
}

const char *opf_blas_cpu_family(const opf_cpu_desc *cpu) {
  return family_of_level[cpu_level(cpu)];
}

void opf_cpu_desc_detect(opf_cpu_desc *cpu) {
  memset(cpu, 0, sizeof *cpu);
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  cpu->x86 = 1;
  cpu->isa = (__builtin_cpu_supports("sse3") ? OPF_ISA_SSE3 : 0) |
             (__builtin_cpu_supports("ssse3") ? OPF_ISA_SSSE3 : 0) |
             (__builtin_cpu_supports("sse4.1") ? OPF_ISA_SSE41 : 0) |
             (__builtin_cpu_supports("sse4.2") ? OPF_ISA_SSE42 : 0) |
             (__builtin_cpu_supports("avx") ? OPF_ISA_AVX : 0) |
             (__builtin_cpu_supports("avx2") ? OPF_ISA_AVX2 : 0) |
             (__builtin_cpu_supports("fma") ? OPF_ISA_FMA : 0) |
             (__builtin_cpu_supports("avx512f") ? OPF_ISA_AVX512F : 0) |
             (__builtin_cpu_supports("avx512bw") ? OPF_ISA_AVX512BW : 0) |
             (__builtin_cpu_supports("avx512vl") ? OPF_ISA_AVX512VL : 0) |
             (__builtin_cpu_supports("avx512dq") ? OPF_ISA_AVX512DQ : 0) |
             (__builtin_cpu_supports("avx512cd") ? OPF_ISA_AVX512CD : 0) |
             (__builtin_cpu_supports("avx512bf16") ? OPF_ISA_AVX512BF16 : 0);
#endif
}

void opf_cpu_desc_parse(opf_cpu_desc *cpu, int x86, const char *flags) {
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {
      {"pni", OPF_ISA_SSE3}, /* /proc/cpuinfo's name for SSE3 */
      {"sse3", OPF_ISA_SSE3},         {"ssse3", OPF_ISA_SSSE3},       {"sse4_1", OPF_ISA_SSE41},
      {"sse4_2", OPF_ISA_SSE42},      {"avx", OPF_ISA_AVX},           {"avx2", OPF_ISA_AVX2},
      {"fma", OPF_ISA_FMA},           {"avx512f", OPF_ISA_AVX512F},   {"avx512bw", OPF_ISA_AVX512BW},
      {"avx512vl", OPF_ISA_AVX512VL}, {"avx512dq", OPF_ISA_AVX512DQ}, {"avx512cd", OPF_ISA_AVX512CD},
      {"avx512_bf16", OPF_ISA_AVX512BF16},
  };
  memset(cpu, 0, sizeof *cpu);
  cpu->x86 = x86;
  for (const char *p = flags ? flags : ""; *p;) {
    p += strspn(p, " \t\n");
    const size_t l = strcspn(p, " \t\n");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (strlen(names[i].name) == l && !strncmp(p, names[i].name, l)) cpu->isa |= names[i].bit;
    p += l;
  }
}

const char *opf_blas_source_name(opf_blas_source s) {
  switch (s) {
  case OPF_BLAS_SRC_ENV: return "environment";
  case OPF_BLAS_SRC_OPPERF: return "opperf";
  case OPF_BLAS_SRC_OPTION: return "option";
  default: return "openblas";
  }
}

static void copy(char *dst, size_t n, const char *s) { snprintf(dst, n, "%s", s ? s : ""); }

int opf_blas_decide(const opf_cpu_desc *cpu, const char *openblas_core, const char *env_coretype,
                    const char *request, opf_blas_decision *d, opf_err *err) {
  memset(d, 0, sizeof *d);
  copy(d->openblas, sizeof d->openblas, openblas_core ? openblas_core : "unknown");
  copy(d->kernel, sizeof d->kernel, d->openblas);
  const int cl = cpu_level(cpu), ol = core_level(openblas_core);
  copy(d->cpu_family, sizeof d->cpu_family, family_of_level[cl]);
  /* An unknown OpenBLAS core (another architecture, a newer name) is never second-guessed. */
  d->below = cl != L_NONE && ol != L_NONE && ol < cl;
  /* OpenBLAS ignores a name it does not know and detects: only a name it took counts. */
  const int env_taken = env_coretype && *env_coretype && openblas_core &&
                        core_level(env_coretype) != L_NONE &&
                        !strcasecmp(opf_blas_core_canonical(env_coretype), openblas_core);
  d->source = env_taken ? OPF_BLAS_SRC_ENV : OPF_BLAS_SRC_OPENBLAS;
  if (!request || !*request || !strcmp(request, "auto")) {
    if (!env_taken && d->below) {
      d->set = 1;
      d->source = OPF_BLAS_SRC_OPPERF;
      copy(d->kernel, sizeof d->kernel, d->cpu_family);
    }
    return OPF_OK;
  }
  if (!strcmp(request, "native")) return OPF_OK;
  const char *name = opf_blas_core_canonical(request);
  if (!name)
    return opf_err_set(err, OPF_EINVAL,
                       "unknown BLAS kernel '%s' (auto, native, or an OpenBLAS x86 core such as "
                       "Prescott, Nehalem, Sandybridge, Haswell, Zen, SkylakeX, Cooperlake)",
                       request);
  if (!cpu->x86)
    return opf_err_set(err, OPF_EINVAL, "BLAS kernel '%s' is an x86 core and this CPU is not x86",
                       name);
  if (core_level(name) > cl)
    return opf_err_set(err, OPF_EINVAL,
                       "BLAS kernel '%s' needs instructions this CPU lacks (it can run %s at best)",
                       name, cl != L_NONE ? family_of_level[cl] : "none of OpenBLAS's x86 cores");
  copy(d->kernel, sizeof d->kernel, name);
  d->set = strcasecmp(name, d->openblas) != 0;
  d->source = OPF_BLAS_SRC_OPTION;
  return OPF_OK;
}

void opf_blas_note(const opf_blas_decision *d, char *buf, size_t n) {
  int below_kept = d->below && !strcasecmp(d->kernel, d->openblas);
  switch (d->source) {
  case OPF_BLAS_SRC_OPPERF:
    snprintf(buf, n, "chosen by opperf: OpenBLAS detected %s", d->openblas);
    return;
  case OPF_BLAS_SRC_OPTION:
    if (strcasecmp(d->kernel, d->openblas))
      snprintf(buf, n, "set by --blas-kernel: OpenBLAS chose %s", d->openblas);
    else
      snprintf(buf, n, "set by --blas-kernel");
    return;
  case OPF_BLAS_SRC_ENV:
    snprintf(buf, n, "set by the environment%s%s", below_kept ? "; this CPU can run " : "",
             below_kept ? d->cpu_family : "");
    return;
  default:
    snprintf(buf, n, "detected by OpenBLAS%s%s", below_kept ? "; this CPU can run " : "",
             below_kept ? d->cpu_family : "");
  }
}

int opf_blas_mismatch_line(const opf_blas_decision *d, char *buf, size_t n) {
  if (!d->below) return 0;
  if (d->source == OPF_BLAS_SRC_ENV)
    snprintf(buf, n,
             "BLAS: OpenBLAS %s is set by the environment (OPENBLAS_CORETYPE), below this CPU's "
             "%s; opperf respects it (--blas-kernel %s overrides it)",
             d->openblas, d->cpu_family, d->cpu_family);
  else if (d->set)
    snprintf(buf, n,
             "BLAS: OpenBLAS detected %s, below this CPU's %s: `opperf run` and `opperf sweep` use "
             "%s (--blas-kernel native keeps %s)",
             d->openblas, d->cpu_family, d->kernel, d->openblas);
  else
    snprintf(buf, n, "BLAS: OpenBLAS detected %s, below this CPU's %s; kept (--blas-kernel %s)",
             d->openblas, d->cpu_family, d->source == OPF_BLAS_SRC_OPTION ? d->kernel : "native");
  return 1;
}

/* blaskernel.h: which OpenBLAS kernel family (core) a run should use. OpenBLAS's DYNAMIC_ARCH
 * build picks a core from the CPU it recognises; on CPUs newer than the library it falls back
 * far below what the CPU can run (0.3.21 on Emerald Rapids: Prescott, SSE3). A pure decision
 * from a CPU description and OpenBLAS's choice; the CLI applies it (src/cli/blas.c). */
#ifndef OPPERF_BLASKERNEL_H
#define OPPERF_BLASKERNEL_H

#include <stddef.h>

#include "opperf/error.h"

/* ISA features of a CPU, as usable by this process (x86 only). */
enum {
  OPF_ISA_SSE3 = 1u << 0,
  OPF_ISA_SSSE3 = 1u << 1,
  OPF_ISA_SSE41 = 1u << 2,
  OPF_ISA_SSE42 = 1u << 3,
  OPF_ISA_AVX = 1u << 4,
  OPF_ISA_AVX2 = 1u << 5,
  OPF_ISA_FMA = 1u << 6,
  OPF_ISA_AVX512F = 1u << 7,
  OPF_ISA_AVX512BW = 1u << 8,
  OPF_ISA_AVX512VL = 1u << 9,
  OPF_ISA_AVX512DQ = 1u << 10,
  OPF_ISA_AVX512CD = 1u << 11,
  OPF_ISA_AVX512BF16 = 1u << 12,
};

typedef struct opf_cpu_desc {
  int x86;      /* 0: another architecture (no decision is made) */
  unsigned isa; /* OPF_ISA_* */
} opf_cpu_desc;

/* This process's CPU: cpuid through GCC's __builtin_cpu_supports, which also checks that the
 * OS saves the vector state (XGETBV), and which valgrind virtualises (no AVX-512 there). */
void opf_cpu_desc_detect(opf_cpu_desc *cpu);
/* A CPU from a /proc/cpuinfo "flags" list ("sse3 ssse3 avx2 fma avx512f ..."). */
void opf_cpu_desc_parse(opf_cpu_desc *cpu, int x86, const char *flags);

/* The x86 OpenBLAS core family that the CPU's ISA allows at best ("Cooperlake", "SkylakeX",
 * "Haswell", "Sandybridge", "Nehalem", "Core2", "Prescott"), NULL when not x86. */
const char *opf_blas_cpu_family(const opf_cpu_desc *cpu);
/* OpenBLAS's spelling of a core name given in any case ("skylakex" -> "SkylakeX"), NULL when
 * it is not an x86 core opperf knows. */
const char *opf_blas_core_canonical(const char *name);

typedef enum opf_blas_source {
  OPF_BLAS_SRC_OPENBLAS, /* OpenBLAS's own detection, kept */
  OPF_BLAS_SRC_ENV,      /* OPENBLAS_CORETYPE from the user's environment, respected */
  OPF_BLAS_SRC_OPPERF,   /* OpenBLAS fell below the CPU: opperf chose the CPU's family */
  OPF_BLAS_SRC_OPTION    /* --blas-kernel NAME / OPPERF_BLAS_KERNEL=NAME */
} opf_blas_source;
const char *opf_blas_source_name(opf_blas_source s); /* "openblas", "environment", "opperf", "option" */

typedef struct opf_blas_decision {
  int set;                /* 1: run with OPENBLAS_CORETYPE=kernel (OpenBLAS must reload) */
  char kernel[32];        /* the core the run uses (OpenBLAS's own when set == 0) */
  char openblas[32];      /* the core OpenBLAS chose by itself (or from the environment) */
  char cpu_family[32];    /* the best family this CPU can run ("" when not x86 or unknown) */
  int below;              /* OpenBLAS's core is below cpu_family (a mismatch) */
  opf_blas_source source; /* where `kernel` comes from */
} opf_blas_decision;

/* Decide. openblas_core: openblas_get_corename(); env_coretype: OPENBLAS_CORETYPE (NULL or ""
 * when unset; a name OpenBLAS did not take, i.e. different from openblas_core, counts as
 * unset); request: "auto" (NULL) upgrades a core below the CPU unless the environment set
 * one, "native" keeps OpenBLAS's choice, a core NAME forces it. OPF_EINVAL with a message for
 * an unknown NAME, or one needing an ISA the CPU lacks (it would die on an illegal
 * instruction). No side effects. */
int opf_blas_decide(const opf_cpu_desc *cpu, const char *openblas_core, const char *env_coretype,
                    const char *request, opf_blas_decision *d, opf_err *err);

/* One phrase saying where the kernel came from, for reports: "chosen by opperf: OpenBLAS
 * detected Prescott", "set by the environment", "detected by OpenBLAS", "set by
 * --blas-kernel", plus "; this CPU can run SkylakeX" when the core is below the CPU. */
void opf_blas_note(const opf_blas_decision *d, char *buf, size_t n);
/* The mismatch line of `opperf machine` / `opperf events` (no newline): returns 0 and writes
 * nothing when OpenBLAS's own choice already matches the CPU. */
int opf_blas_mismatch_line(const opf_blas_decision *d, char *buf, size_t n);

#endif

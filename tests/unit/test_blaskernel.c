/* test_blaskernel.c: the OpenBLAS kernel decision (src/blaskernel.c) on faked CPUs: the CPU's
 * best family from /proc/cpuinfo-style flags, an upgrade only when OpenBLAS fell below it, the
 * environment respected, native and forced names, bad names and names the CPU cannot run, the
 * notes and the mismatch line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/blaskernel.h"

/* Flags of real CPUs (subsets of their /proc/cpuinfo lines). */
#define F_OLD "fpu sse sse2 pni ssse3 sse4_1 sse4_2"
#define F_SNB F_OLD " avx"
#define F_HSW F_SNB " avx2 fma"
#define F_SKX F_HSW " avx512f avx512dq avx512cd avx512bw avx512vl"
#define F_EMR F_SKX " avx512_bf16 amx_tile amx_bf16 amx_int8" /* Emerald Rapids, model 207 */
#define F_ZEN5 F_SKX " avx512ifma avx512_bf16 avx512_vnni"

static opf_cpu_desc cpu_of(const char *flags) {
  opf_cpu_desc c;
  opf_cpu_desc_parse(&c, 1, flags);
  return c;
}

static void test_families(void **st) {
  (void)st;
  opf_cpu_desc c = cpu_of(F_EMR);
  assert_string_equal(opf_blas_cpu_family(&c), "Cooperlake");
  c = cpu_of(F_SKX);
  assert_string_equal(opf_blas_cpu_family(&c), "SkylakeX");
  c = cpu_of(F_HSW);
  assert_string_equal(opf_blas_cpu_family(&c), "Haswell");
  c = cpu_of(F_SNB);
  assert_string_equal(opf_blas_cpu_family(&c), "Sandybridge");
  c = cpu_of(F_OLD);
  assert_string_equal(opf_blas_cpu_family(&c), "Nehalem");
  c = cpu_of("fpu sse sse2 pni");
  assert_string_equal(opf_blas_cpu_family(&c), "Prescott");
  /* avx2 without fma is not Haswell; avx512f alone (Knights Landing) is not SkylakeX */
  c = cpu_of(F_SNB " avx2");
  assert_string_equal(opf_blas_cpu_family(&c), "Sandybridge");
  c = cpu_of(F_HSW " avx512f avx512cd");
  assert_string_equal(opf_blas_cpu_family(&c), "Haswell");
  /* a prefix is not a flag: "avx512fx" is not avx512f */
  c = cpu_of(F_HSW " avx512fx avx512dq avx512cd avx512bw avx512vl");
  assert_string_equal(opf_blas_cpu_family(&c), "Haswell");
  c = cpu_of(F_EMR);
  c.x86 = 0;
  assert_null(opf_blas_cpu_family(&c));
  assert_string_equal(opf_blas_core_canonical("skylakex"), "SkylakeX");
  assert_string_equal(opf_blas_core_canonical("HASWELL"), "Haswell");
  assert_null(opf_blas_core_canonical("armv8"));
  assert_null(opf_blas_core_canonical("Skylake"));
}

/* Emerald Rapids with OpenBLAS 0.3.21: Prescott detected -> Cooperlake. */
static void test_upgrade(void **st) {
  (void)st;
  opf_cpu_desc c = cpu_of(F_EMR);
  opf_blas_decision d;
  opf_err e;
  assert_int_equal(opf_blas_decide(&c, "Prescott", NULL, "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 1);
  assert_string_equal(d.kernel, "Cooperlake");
  assert_string_equal(d.openblas, "Prescott");
  assert_int_equal(d.below, 1);
  assert_int_equal(d.source, OPF_BLAS_SRC_OPPERF);
  char note[128];
  opf_blas_note(&d, note, sizeof note);
  assert_string_equal(note, "chosen by opperf: OpenBLAS detected Prescott");
  char line[320];
  assert_int_equal(opf_blas_mismatch_line(&d, line, sizeof line), 1);
  assert_non_null(strstr(line, "OpenBLAS detected Prescott, below this CPU's Cooperlake"));
  /* NULL and "" requests are auto; an empty OPENBLAS_CORETYPE is unset */
  assert_int_equal(opf_blas_decide(&c, "Prescott", "", NULL, &d, &e), OPF_OK);
  assert_int_equal(d.set, 1);
  assert_string_equal(d.kernel, "Cooperlake");
  /* an AVX-512 CPU without bf16 gets SkylakeX; Zen 5 (bf16) Cooperlake from Haswell */
  c = cpu_of(F_SKX);
  assert_int_equal(opf_blas_decide(&c, "Prescott", NULL, "", &d, &e), OPF_OK);
  assert_string_equal(d.kernel, "SkylakeX");
  c = cpu_of(F_ZEN5);
  assert_int_equal(opf_blas_decide(&c, "Haswell", NULL, "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 1);
  assert_string_equal(d.kernel, "Cooperlake");
  /* an AVX2 CPU on Prescott: Haswell */
  c = cpu_of(F_HSW);
  assert_int_equal(opf_blas_decide(&c, "Prescott", NULL, "auto", &d, &e), OPF_OK);
  assert_string_equal(d.kernel, "Haswell");
}

/* Nothing to do: OpenBLAS at or above the CPU's family, an equivalent AMD core, an unknown
 * core, another architecture. */
static void test_keep(void **st) {
  (void)st;
  opf_blas_decision d;
  opf_err e;
  char line[320] = "untouched", note[128];
  opf_cpu_desc c = cpu_of(F_ZEN5);
  assert_int_equal(opf_blas_decide(&c, "Cooperlake", NULL, "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
  assert_int_equal(d.below, 0);
  assert_string_equal(d.kernel, "Cooperlake");
  assert_int_equal(d.source, OPF_BLAS_SRC_OPENBLAS);
  assert_int_equal(opf_blas_mismatch_line(&d, line, sizeof line), 0);
  assert_string_equal(line, "untouched");
  opf_blas_note(&d, note, sizeof note);
  assert_string_equal(note, "detected by OpenBLAS");
  c = cpu_of(F_HSW " avx512f"); /* Zen 3 plus a stray flag: still AVX2 */
  assert_int_equal(opf_blas_decide(&c, "Zen", NULL, "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
  assert_int_equal(d.below, 0);
  c = cpu_of(F_EMR);
  assert_int_equal(opf_blas_decide(&c, "SapphireRapids", NULL, "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
  assert_int_equal(opf_blas_decide(&c, "SomethingNew", NULL, "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
  assert_int_equal(d.below, 0);
  assert_string_equal(d.kernel, "SomethingNew");
  opf_cpu_desc arm = cpu_of("fp asimd sve");
  arm.x86 = 0;
  assert_int_equal(opf_blas_decide(&arm, "NEOVERSEN1", NULL, "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
  assert_int_equal(d.below, 0);
  assert_string_equal(d.cpu_family, "");
  /* even a Prescott name on a non-x86 description is never second-guessed */
  assert_int_equal(opf_blas_decide(&arm, "Prescott", NULL, "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
}

/* OPENBLAS_CORETYPE from the environment is respected when OpenBLAS took it. */
static void test_environment(void **st) {
  (void)st;
  opf_blas_decision d;
  opf_err e;
  char note[128], line[320];
  opf_cpu_desc c = cpu_of(F_ZEN5);
  assert_int_equal(opf_blas_decide(&c, "Haswell", "Haswell", "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
  assert_int_equal(d.below, 1);
  assert_string_equal(d.kernel, "Haswell");
  assert_int_equal(d.source, OPF_BLAS_SRC_ENV);
  opf_blas_note(&d, note, sizeof note);
  assert_string_equal(note, "set by the environment; this CPU can run Cooperlake");
  assert_int_equal(opf_blas_mismatch_line(&d, line, sizeof line), 1);
  assert_non_null(strstr(line, "set by the environment (OPENBLAS_CORETYPE)"));
  /* case-insensitive, as OpenBLAS reads it */
  assert_int_equal(opf_blas_decide(&c, "Haswell", "haswell", "auto", &d, &e), OPF_OK);
  assert_int_equal(d.source, OPF_BLAS_SRC_ENV);
  assert_int_equal(d.set, 0);
  /* at the CPU's family: no "can run" remark */
  assert_int_equal(opf_blas_decide(&c, "Cooperlake", "Cooperlake", "auto", &d, &e), OPF_OK);
  opf_blas_note(&d, note, sizeof note);
  assert_string_equal(note, "set by the environment");
  /* a name OpenBLAS did not take (it detected instead) does not count */
  c = cpu_of(F_EMR);
  assert_int_equal(opf_blas_decide(&c, "Prescott", "Bogus", "auto", &d, &e), OPF_OK);
  assert_int_equal(d.set, 1);
  assert_int_equal(d.source, OPF_BLAS_SRC_OPPERF);
  /* an explicit NAME overrides the environment */
  c = cpu_of(F_ZEN5);
  assert_int_equal(opf_blas_decide(&c, "Haswell", "Haswell", "skylakex", &d, &e), OPF_OK);
  assert_int_equal(d.set, 1);
  assert_string_equal(d.kernel, "SkylakeX");
  assert_int_equal(d.source, OPF_BLAS_SRC_OPTION);
  opf_blas_note(&d, note, sizeof note);
  assert_string_equal(note, "set by --blas-kernel: OpenBLAS chose Haswell");
}

static void test_native_and_names(void **st) {
  (void)st;
  opf_blas_decision d;
  opf_err e;
  char note[128], line[320];
  opf_cpu_desc c = cpu_of(F_EMR);
  assert_int_equal(opf_blas_decide(&c, "Prescott", NULL, "native", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
  assert_int_equal(d.below, 1);
  assert_string_equal(d.kernel, "Prescott");
  assert_int_equal(d.source, OPF_BLAS_SRC_OPENBLAS);
  opf_blas_note(&d, note, sizeof note);
  assert_string_equal(note, "detected by OpenBLAS; this CPU can run Cooperlake");
  assert_int_equal(opf_blas_mismatch_line(&d, line, sizeof line), 1);
  assert_non_null(strstr(line, "kept (--blas-kernel native)"));
  /* forcing a lower core, and the same core (nothing to reload) */
  assert_int_equal(opf_blas_decide(&c, "Cooperlake", NULL, "haswell", &d, &e), OPF_OK);
  assert_int_equal(d.set, 1);
  assert_string_equal(d.kernel, "Haswell");
  assert_int_equal(opf_blas_decide(&c, "Cooperlake", NULL, "Cooperlake", &d, &e), OPF_OK);
  assert_int_equal(d.set, 0);
  assert_int_equal(d.source, OPF_BLAS_SRC_OPTION);
  opf_blas_note(&d, note, sizeof note);
  assert_string_equal(note, "set by --blas-kernel");
  /* errors: unknown name, a core the CPU cannot run, a core on another architecture */
  assert_int_equal(opf_blas_decide(&c, "Prescott", NULL, "Skylake", &d, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "unknown BLAS kernel 'Skylake'"));
  c = cpu_of(F_HSW);
  assert_int_equal(opf_blas_decide(&c, "Haswell", NULL, "SkylakeX", &d, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "needs instructions this CPU lacks (it can run Haswell at best)"));
  c.x86 = 0;
  assert_int_equal(opf_blas_decide(&c, "ARMV8", NULL, "Haswell", &d, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "not x86"));
  assert_string_equal(opf_blas_source_name(OPF_BLAS_SRC_ENV), "environment");
  assert_string_equal(opf_blas_source_name(OPF_BLAS_SRC_OPPERF), "opperf");
}

/* This machine: a family exists on x86 and the detection agrees with /proc/cpuinfo's flags
 * at least on AVX2 (the kernel may hide AVX-512 state, never add it). */
static void test_detect(void **st) {
  (void)st;
  opf_cpu_desc c;
  opf_cpu_desc_detect(&c);
#if defined(__x86_64__)
  assert_int_equal(c.x86, 1);
  assert_true(c.isa & OPF_ISA_SSE3);
  assert_non_null(opf_blas_cpu_family(&c));
#else
  assert_int_equal(c.x86, 0);
  assert_null(opf_blas_cpu_family(&c));
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_families),   cmocka_unit_test(test_upgrade),
      cmocka_unit_test(test_keep),       cmocka_unit_test(test_environment),
      cmocka_unit_test(test_native_and_names), cmocka_unit_test(test_detect),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

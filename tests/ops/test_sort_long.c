/* test_sort_long.c: sort and argsort on long lines against their references (stable merge
 * sorts), for every dtype the vector and radix sorts serve, ascending and descending: lengths
 * around the thresholds between them (SRT_VEC64 = 16384 packed words, SRT_BIG = 65536) and up to
 * 200000, with heavy duplicates, all keys equal, sorted and reverse-sorted input, and NaN, inf
 * and -0.0 mixed in; long lines with one thread (the vector sorts) and two (the
 * threaded radix sort). Sorted values must match exactly, argsort indices exactly (both are
 * stable: equal keys in index order). */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

enum { P_DUP, P_EQUAL, P_ASC, P_DESC, P_SPECIAL, NPAT };
static const char *pat_name[NPAT] = {"few distinct", "all equal", "ascending", "descending",
                                     "NaN/inf/-0"};

/* Element k of n under pattern pat (integers get the same values, NaN and inf excepted). */
static double pat_value(int pat, int64_t k, int64_t n, int is_float) {
  switch (pat) {
  case P_DUP: return (double)((k * 7919) % 11) - 5;
  case P_EQUAL: return 3;
  case P_ASC: return (double)(k % 1000000) - 500;
  case P_DESC: return (double)((n - k) % 1000000) - 500;
  default: {
    const int64_t r = (k * 2654435761u) % 17;
    if (!is_float) return (double)r - 8;
    switch (r) {
    case 0: return NAN;
    case 1: return -NAN;
    case 2: return INFINITY;
    case 3: return -INFINITY;
    case 4: return -0.0; /* (no +0.0 beside it: argsort orders -0 before +0, the reference
                          * keeps them in index order as equal values) */
    case 5: return 1e-30;
    default: return (double)((k * 40503) % 1001) * 0.25 - 100.125; /* never 0 */
    }
  }
  }
}

/* Forward and reference of op on spec with pattern pat; the outputs must be equal. */
static void check(const char *op, opf_dtype dt, const char *spec, int pat) {
  opf_case f, r;
  ts_case_ready(&f, ts_op(op), dt, spec, 0, 7);
  ts_case_ready(&r, ts_op(op), dt, spec, 0, 7);
  const int64_t n = opf_numel(&f.in[0]);
  for (int64_t k = 0; k < n; k++) {
    const double v = pat_value(pat, k, n, dt == OPF_F32 || dt == OPF_F64);
    ts_set(&f.in[0], k, v), ts_set(&r.in[0], k, v);
  }
  if (f.op->forward(&f)) fail_msg("%s %s [%s]: forward failed: %s", op, opf_dtype_name(dt), spec, f.err.msg);
  if (r.op->reference(&r)) fail_msg("%s %s [%s]: reference failed: %s", op, opf_dtype_name(dt), spec, r.err.msg);
  char msg[256];
  if (ts_compare(&f.out[0], &r.out[0], 0, msg, sizeof msg))
    fail_msg("%s %s [%s], %s, %d thread(s): %s", op, opf_dtype_name(dt), spec, pat_name[pat],
             omp_get_max_threads(), msg);
  opf_case_release(&f), opf_case_release(&r);
}

static const opf_dtype dts[] = {OPF_F32, OPF_F64, OPF_I32, OPF_I64};

static void run_all(const char *const *specs, size_t ns, int threads) {
  const int was = omp_get_max_threads();
  omp_set_num_threads(threads);
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
    for (size_t s = 0; s < ns; s++)
      for (int pat = 0; pat < NPAT; pat++) {
        check("sort", dts[d], specs[s], pat);
        check("argsort", dts[d], specs[s], pat);
      }
  omp_set_num_threads(was);
}

/* Around the packed-word threshold and the vector quicksort's first partitions. */
static void test_mid(void **state) {
  (void)state;
  static const char *const specs[] = {"x=1x129", "x=2x2047", "x=1x16384 descending=true",
                                      "x=1x16385", "x=3x5000 descending=true", "x=4100x2 axis=0"};
  run_all(specs, sizeof specs / sizeof *specs, 1);
}

/* Beyond SRT_BIG: one thread (vector sorts) and two (threaded radix for one long line). */
static void test_long(void **state) {
  (void)state;
  static const char *const specs[] = {"x=1x65536", "x=1x65537 descending=true", "x=1x200000",
                                      "x=200000 axis=all descending=true"};
  run_all(specs, sizeof specs / sizeof *specs, 1);
  run_all(specs, sizeof specs / sizeof *specs, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_mid), cmocka_unit_test(test_long)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

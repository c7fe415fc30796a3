/* test_sort_keys.c: the key-only vector sort of 32-bit keys (srt_vsort32, srt_vsort32_mt: the
 * first partitions split across threads) and the values-only forward of sort that rides on
 * it (no input gradient: no permutation kept), against qsort. Lengths around every threshold
 * (the networks' 16 and 256, the partition's 128-key steps, SRT_BIG, SRT_VMT_MIN, 2^20),
 * patterns random, all equal, ascending, descending, few distinct, and for float32 NaNs of
 * both signs and payloads, +-0.0 and +-inf; ascending and descending, rows and columns, one
 * and two threads. Expected values: x at the positions a stable sort gives (NaN after +inf,
 * -0.0 equal to +0.0, so zeros keep their signs in index order); a NaN may come back as any
 * NaN. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sort/vsort.h"
#include "test_support.h"

static uint64_t xs = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
  xs ^= xs << 13, xs ^= xs >> 7, xs ^= xs << 17;
  return (uint32_t)(xs >> 16);
}

enum { P_RANDOM, P_SPECIAL, P_EQUAL, P_ASC, P_DESC, P_FEW, NPAT };
static const char *pat_name[NPAT] = {"random", "specials", "all equal", "ascending", "descending",
                                     "few distinct"};

/* Bits of element i of n (float32 when fl, else int32) for pattern pat. */
static uint32_t pattern(int pat, int64_t i, int64_t n, int fl) {
  float v;
  switch (pat) {
  case P_RANDOM:
    if (!fl) return rnd() * 2654435761u;
    v = (float)((int32_t)rnd() % 100000) / 64.0f;
    break;
  case P_SPECIAL: {
    static const uint32_t sp[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u, /* NaNs */
                                  0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, /* 0, inf */
                                  0x00000001u, 0x80000001u};                            /* denormals */
    const uint32_t r = rnd();
    if (fl && r % 3 == 0) return sp[(r >> 8) % 10];
    if (!fl && r % 3 == 0) return r % 2 ? 0x80000000u : 0x7fffffffu;
    return fl ? (uint32_t)0 | (uint32_t)(rnd() & 0x807fffffu) | 0x3f000000u : rnd();
  }
  case P_EQUAL: v = 3.25f; break;
  case P_ASC: v = (float)i - (float)n / 2; break;
  case P_DESC: v = (float)(n - i) - (float)n / 2; break;
  default: v = (float)(rnd() % 4) - 1.5f; break;
  }
  if (!fl) return (uint32_t)(int32_t)v;
  uint32_t u;
  memcpy(&u, &v, 4);
  return u;
}

static int cmpu32(const void *a, const void *b) {
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* ---- the kernel: srt_vsort32_mt on 1 and 2 threads against qsort (unsigned keys) ---- */
static void test_kernel(void **state) {
  (void)state;
  if (!srt_vsort_ok()) {
    uint32_t a[4] = {3, 1, 2, 0}, t[4];
    assert_int_equal(srt_vsort32_mt(a, t, 4, 2), 0);
    assert_int_equal(a[0], 3); /* untouched */
    skip();
  }
  static const int64_t lens[] = {0,   1,   2,    15,   16,    17,    127,   128,    129,    255,
                                 256, 257, 1000, 4097, 65536, 65537, 131071, 131072, 300001, 1 << 20};
  const int64_t most = 1 << 20;
  uint32_t *a = malloc((size_t)most * 4), *b = malloc((size_t)most * 4), *t = malloc((size_t)most * 4);
  assert_non_null(a), assert_non_null(b), assert_non_null(t);
  for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
    const int64_t n = lens[li];
    for (int pat = 0; pat < NPAT; pat++)
      for (int nt = 1; nt <= 2; nt++) {
        for (int64_t i = 0; i < n; i++) a[i] = b[i] = pattern(pat, i, n, pat != P_RANDOM) ^ 0x80000000u;
        if (pat == P_SPECIAL) /* the largest key (the networks' padding) among the keys */
          for (int64_t i = 0; i < n; i += 7) a[i] = b[i] = UINT32_MAX;
        assert_int_equal(srt_vsort32_mt(a, t, n, nt), 1);
        qsort(b, (size_t)n, 4, cmpu32);
        for (int64_t i = 0; i < n; i++)
          if (a[i] != b[i])
            fail_msg("srt_vsort32_mt n=%lld %s, %d thread(s): key %lld is %u, qsort has %u",
                     (long long)n, pat_name[pat], nt, (long long)i, a[i], b[i]);
      }
  }
  free(a), free(b), free(t);
}

/* ---- the operator: sort's values-only forward against a stable sort of (value, index) ---- */
static int g_fl, g_desc;
/* -1, 0, 1: a before, equal to, after b in ascending order (NaN largest, zeros equal) */
static int vcmp(uint32_t a, uint32_t b) {
  if (!g_fl) return ((int32_t)a > (int32_t)b) - ((int32_t)a < (int32_t)b);
  float x, y;
  memcpy(&x, &a, 4), memcpy(&y, &b, 4);
  if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
  return (x > y) - (x < y);
}
typedef struct {
  uint32_t v;
  int64_t i;
} pair;
static int pcmp(const void *pa, const void *pb) {
  const pair *a = pa, *b = pb;
  const int c = g_desc ? vcmp(b->v, a->v) : vcmp(a->v, b->v);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

static void check_op(opf_dtype dt, int64_t outer, int64_t n, int axis0, int desc, int pat, int grad) {
  char spec[128];
  const int fl = dt == OPF_F32;
  if (axis0) snprintf(spec, sizeof spec, "x=%lldx%lld axis=0%s", (long long)n, (long long)outer, desc ? " descending=true" : "");
  else snprintf(spec, sizeof spec, "x=%lldx%lld axis=1%s", (long long)outer, (long long)n, desc ? " descending=true" : "");
  opf_case c;
  ts_case_ready(&c, ts_op("sort"), dt, spec, grad, 5);
  uint32_t *x = c.in[0].data;
  const uint32_t *y = c.out[0].data;
  const int64_t inner = axis0 ? outer : 1;
  for (int64_t l = 0; l < outer; l++)
    for (int64_t k = 0; k < n; k++) x[axis0 ? k * inner + l : l * n + k] = pattern(pat, k, n, fl);
  if (c.op->forward(&c)) fail_msg("sort [%s]: %s", spec, c.err.msg);
  pair *p = malloc((size_t)(n + 1) * sizeof *p);
  assert_non_null(p);
  g_fl = fl, g_desc = desc;
  for (int64_t l = 0; l < outer; l++) {
    const int64_t base = axis0 ? l : l * n;
    for (int64_t k = 0; k < n; k++) p[k].v = x[base + k * inner], p[k].i = k;
    qsort(p, (size_t)n, sizeof *p, pcmp);
    for (int64_t k = 0; k < n; k++) {
      const uint32_t got = y[base + k * inner], want = p[k].v;
      float fg, fw;
      memcpy(&fg, &got, 4), memcpy(&fw, &want, 4);
      if (got == want || (fl && isnan(fg) && isnan(fw))) continue;
      fail_msg("sort %s [%s] %s%s, %d thread(s): line %lld position %lld: bits %08x, want %08x",
               opf_dtype_name(dt), spec, pat_name[pat], grad ? " (with gradient)" : "",
               omp_get_max_threads(), (long long)l, (long long)k, got, want);
    }
  }
  free(p);
  opf_case_release(&c);
}

static void test_sort_values(void **state) {
  (void)state;
  static const int64_t lens[] = {1, 2, 15, 16, 17, 255, 256, 257, 1000, 65537};
  const int was = omp_get_max_threads();
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    for (int d = 0; d < 2; d++) {
      const opf_dtype dt = d ? OPF_I32 : OPF_F32;
      for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (int pat = 0; pat < NPAT; pat++)
          for (int desc = 0; desc < 2; desc++) {
            const int64_t n = lens[li], outer = n > 5000 ? 2 : 3;
            check_op(dt, outer, n, 0, desc, pat, 0);
            check_op(dt, n > 5000 ? 17 : 19, n, 1, desc, pat, 0); /* columns: a group and a rest */
          }
      for (int pat = 0; pat < NPAT; pat++) /* short rows to threads in batches */
        check_op(dt, 5001, pat + 10, 0, pat & 1, pat, 0);
      for (int pat = 0; pat < NPAT; pat++) { /* narrow column units (split for threads) */
        check_op(dt, 10, 100003, 1, pat & 1, pat, 0);
        check_op(dt, 2, 1000, 1, pat & 1, pat, 0);
      }
      for (int pat = 0; pat < NPAT; pat++) /* the threaded split */
        check_op(dt, 1, 1 << 20, 0, pat & 1, pat, 0);
      check_op(dt, 3, 1000, 0, 1, P_SPECIAL, 1); /* the permutation-keeping paths agree */
      for (int pat = 0; pat < NPAT; pat++) {
        check_op(dt, 5001, 16 - pat, 0, pat & 1, pat, 1);
        check_op(dt, 19, 257 + 300 * pat, 1, pat & 1, pat, 1); /* columns, kept permutation */
        check_op(dt, 35, 129, 1, 1, pat, 1);
      }
    }
  }
  omp_set_num_threads(was);
}

/* sort's backward (dx[perm[e]] = dy[e]) with dy = y gives x back: lines along the first axis
 * wide enough to go to threads by columns, and the element split, on 1 and 2 threads. */
static void test_sort_backward(void **state) {
  (void)state;
  static const char *const specs[] = {"x=7x5100 axis=0", "x=3x40x300 axis=1",
                                      "x=2x10x2000 axis=1", "x=50x30 axis=0",
                                      "x=10x1000 axis=1 descending=true", "x=4000x10 axis=1",
                                      "x=3000x13 axis=1 descending=true", "x=7x1 axis=1",
                                      "x=300x40 axis=0", "x=1000x20 axis=0 descending=true"};
  const int was = omp_get_max_threads();
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
      opf_case c;
      ts_case_ready(&c, ts_op("sort"), OPF_F32, specs[k], 1, 9);
      if (c.op->forward(&c)) fail_msg("sort [%s]: %s", specs[k], c.err.msg);
      memcpy(c.gout[0].data, c.out[0].data, c.out[0].nbytes);
      memset(c.gin[0].data, 0, c.gin[0].nbytes);
      if (c.op->backward(&c)) fail_msg("sort backward [%s]: %s", specs[k], c.err.msg);
      char msg[256];
      if (ts_compare(&c.gin[0], &c.in[0], 0, msg, sizeof msg))
        fail_msg("sort backward [%s], %d thread(s): dx is not x: %s", specs[k], threads, msg);
      opf_case_release(&c);
    }
  }
  omp_set_num_threads(was);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_kernel), cmocka_unit_test(test_sort_values),
                                     cmocka_unit_test(test_sort_backward)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

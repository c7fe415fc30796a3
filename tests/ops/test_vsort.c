/* test_vsort.c: the vector sorts of ops/sort/vsort.c against qsort, on every length from 0 to
 * 300 (every network size and padding, the first partitions) and longer ones up to 10^5
 * (deep recursion), for random keys, few distinct keys (the equal-run handling), all equal,
 * ascending, descending, organ-pipe and keys at the type's maximum (the padding value); the
 * key-index sorts (64- and 32-bit keys) likewise against a stable sort (equal keys in index
 * order), and lines of 10^6 (the partition's deep levels). Where the CPU lacks AVX-512 the functions must say so
 * (return 0) and leave the data untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sort/vsort.h"

static int cmp64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
static int cmp32(const void *a, const void *b) {
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static uint64_t xs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  xs ^= xs << 13, xs ^= xs >> 7, xs ^= xs << 17;
  return xs;
}

enum { P_RANDOM, P_FEW, P_EQUAL, P_ASC, P_DESC, P_PIPE, P_MAXES, NPAT };
static const char *pat_name[NPAT] = {"random", "few distinct", "all equal", "ascending",
                                     "descending", "organ pipe", "many maxima"};

static uint64_t key(int pat, int64_t i, int64_t n, int wide) {
  const uint64_t top = wide ? UINT64_MAX : UINT32_MAX;
  switch (pat) {
  case P_RANDOM: return rnd() & top;
  case P_FEW: return rnd() % 5;
  case P_EQUAL: return 77;
  case P_ASC: return (uint64_t)i;
  case P_DESC: return (uint64_t)(n - i);
  case P_PIPE: return (uint64_t)(i < n / 2 ? i : n - i);
  default: return i % 3 ? top : rnd() & top;
  }
}

static void check(int64_t n, int pat) {
  uint64_t *a = malloc((size_t)(n + 1) * 8), *b = malloc((size_t)(n + 1) * 8),
           *t = malloc((size_t)(n + 1) * 8);
  uint32_t *a3 = malloc((size_t)(n + 1) * 4), *b3 = malloc((size_t)(n + 1) * 4),
           *t3 = malloc((size_t)(n + 1) * 4);
  assert_non_null(a), assert_non_null(b), assert_non_null(t);
  assert_non_null(a3), assert_non_null(b3), assert_non_null(t3);
  for (int64_t i = 0; i < n; i++) {
    a[i] = b[i] = key(pat, i, n, 1);
    a3[i] = b3[i] = (uint32_t)key(pat, i, n, 0);
  }
  a[n] = 0x5a5a5a5a5a5a5a5aull, a3[n] = 0x5a5a5a5au; /* a guard past the end */
  const int ok64 = srt_vsort64(a, t, n), ok32 = srt_vsort32(a3, t3, n);
  assert_int_equal(ok64, srt_vsort_ok());
  assert_int_equal(ok32, srt_vsort_ok());
  if (ok64) qsort(b, (size_t)n, 8, cmp64);
  if (ok32) qsort(b3, (size_t)n, 4, cmp32);
  if (memcmp(a, b, (size_t)n * 8) || a[n] != 0x5a5a5a5a5a5a5a5aull)
    fail_msg("64-bit keys, %s, n=%lld: not sorted like qsort (or past the end)", pat_name[pat], (long long)n);
  if (memcmp(a3, b3, (size_t)n * 4) || a3[n] != 0x5a5a5a5au)
    fail_msg("32-bit keys, %s, n=%lld: not sorted like qsort (or past the end)", pat_name[pat], (long long)n);
  free(a), free(b), free(t), free(a3), free(b3), free(t3);
}

typedef struct {
  uint64_t k;
  uint32_t v;
} kvp;
static int cmp_kv(const void *a, const void *b) {
  const kvp *x = a, *y = b;
  return x->k != y->k ? (x->k > y->k) - (x->k < y->k) : (x->v > y->v) - (x->v < y->v);
}

/* srt_vsort_kv with v = 0, 1, ...: the stable order by key. */
static void check_kv(int64_t n, int pat) {
  uint64_t *k = malloc((size_t)(n + 1) * 8), *tk = malloc((size_t)(n + 1) * 8);
  uint32_t *v = malloc((size_t)(n + 1) * 4), *tv = malloc((size_t)(n + 1) * 4);
  kvp *w = malloc((size_t)(n + 1) * sizeof *w);
  assert_non_null(k), assert_non_null(tk), assert_non_null(v), assert_non_null(tv), assert_non_null(w);
  for (int64_t i = 0; i < n; i++) w[i].k = k[i] = key(pat, i, n, 1), w[i].v = v[i] = (uint32_t)i;
  k[n] = 0x5a5a5a5a5a5a5a5aull, v[n] = 0x5a5a5a5au;
  const int ok = srt_vsort_kv(k, v, tk, tv, n);
#if defined(__x86_64__)
  assert_int_equal(ok != 0, srt_vsort_ok() && __builtin_cpu_supports("avx512vl"));
#else
  assert_int_equal(ok, 0); /* the vector sorts are x86 (AVX-512) only */
#endif
  if (ok) qsort(w, (size_t)n, sizeof *w, cmp_kv); /* else: untouched */
  for (int64_t i = 0; i < n; i++)
    if (k[i] != w[i].k || v[i] != w[i].v)
      fail_msg("key-index pairs, %s, n=%lld: position %lld holds (%llu, %u), want (%llu, %u)",
               pat_name[pat], (long long)n, (long long)i, (unsigned long long)k[i], v[i],
               (unsigned long long)w[i].k, w[i].v);
  if (k[n] != 0x5a5a5a5a5a5a5a5aull || v[n] != 0x5a5a5a5au)
    fail_msg("key-index pairs, %s, n=%lld: written past the end", pat_name[pat], (long long)n);
  free(k), free(tk), free(v), free(tv), free(w);
}

/* srt_vsort_kv32 (32-bit keys) likewise. */
static void check_kv32(int64_t n, int pat) {
  uint32_t *k = malloc((size_t)(n + 1) * 4), *tk = malloc((size_t)(n + 1) * 4);
  uint32_t *v = malloc((size_t)(n + 1) * 4), *tv = malloc((size_t)(n + 1) * 4);
  kvp *w = malloc((size_t)(n + 1) * sizeof *w);
  assert_non_null(k), assert_non_null(tk), assert_non_null(v), assert_non_null(tv), assert_non_null(w);
  for (int64_t i = 0; i < n; i++) w[i].k = k[i] = (uint32_t)key(pat, i, n, 0), w[i].v = v[i] = (uint32_t)i;
  k[n] = 0x5a5a5a5au, v[n] = 0x5a5a5a5au;
  const int ok = srt_vsort_kv32(k, v, tk, tv, n);
#if defined(__x86_64__)
  assert_int_equal(ok != 0, srt_vsort_ok() && __builtin_cpu_supports("avx512vl"));
#else
  assert_int_equal(ok, 0);
#endif
  if (ok) qsort(w, (size_t)n, sizeof *w, cmp_kv);
  for (int64_t i = 0; i < n; i++)
    if (k[i] != w[i].k || v[i] != w[i].v)
      fail_msg("32-bit key-index pairs, %s, n=%lld: position %lld holds (%u, %u), want (%llu, %u)",
               pat_name[pat], (long long)n, (long long)i, k[i], v[i], (unsigned long long)w[i].k, w[i].v);
  if (k[n] != 0x5a5a5a5au || v[n] != 0x5a5a5a5au)
    fail_msg("32-bit key-index pairs, %s, n=%lld: written past the end", pat_name[pat], (long long)n);
  free(k), free(tk), free(v), free(tv), free(w);
}

static void test_short(void **state) {
  (void)state;
  for (int pat = 0; pat < NPAT; pat++)
    for (int64_t n = 0; n <= 300; n++) check(n, pat), check_kv(n, pat), check_kv32(n, pat);
}

static void test_long(void **state) {
  (void)state;
  static const int64_t ns[] = {511, 512, 1000, 1024, 2049, 4096, 10000, 65537, 100000};
  for (int pat = 0; pat < NPAT; pat++)
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) check(ns[i], pat), check_kv(ns[i], pat), check_kv32(ns[i], pat);
}

static void test_million(void **state) {
  (void)state;
  static const int pats[] = {P_RANDOM, P_FEW, P_EQUAL, P_DESC};
  for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) check(1000000, pats[i]), check_kv(1000000, pats[i]), check_kv32(1000000, pats[i]);
}

int main(void) {
  printf("vector sorts %s on this CPU\n", srt_vsort_ok() ? "run" : "do not run (no AVX-512)");
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_short), cmocka_unit_test(test_long),
                                     cmocka_unit_test(test_million)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

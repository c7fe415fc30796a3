/* test_sort_zero.c: signed zeros in the sorting family. -0.0 and +0.0 are equal values (as
 * NumPy and torch compare them): argsort (stable) gives their positions in index order, not
 * the -0.0 ones first; sort gives each zero back with its own sign in that order (y[k] is
 * bitwise x[indices[k]]); topk's ties go to the lower position; unique keeps one zero. Lines
 * are short (the vector networks), medium (the vector quicksort) and long (the radix sorts,
 * one and two threads), along the last axis and along the first (column groups); the
 * references (stable merge sorts with <) agree. Before the keys mapped -0.0 to +0.0, argsort
 * put every -0.0 before every +0.0. */
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

#include "test_support.h"

/* x[k]: a zero of either sign at two of every five elements (the signs alternate
 * irregularly), else a small number of either sign, some equal. */
static double value(int64_t k) {
  const int64_t r = (k * 2654435761u) % 5;
  if (r == 1) return (k / 5) % 3 == 0 ? 0.0 : -0.0;
  if (r == 3) return (k / 5) % 2 ? -0.0 : 0.0;
  return (double)((k * 40503) % 23) - 11.0 + (r == 0 ? 0.5 : 0); /* never 0 */
}

static void ready(opf_case *c, const char *op, opf_dtype dt, const char *spec, int ref) {
  ts_case_ready(c, ts_op(op), dt, spec, 0, 3);
  for (int64_t k = 0; k < opf_numel(&c->in[0]); k++) ts_set(&c->in[0], k, value(k));
  if ((ref ? c->op->reference : c->op->forward)(c))
    fail_msg("%s [%s]: %s failed: %s", op, spec, ref ? "reference" : "forward", c->err.msg);
}

/* Bit pattern of element k of a float tensor. */
static uint64_t bits(const opf_tensor *t, int64_t k) {
  uint64_t u = 0;
  memcpy(&u, (const char *)t->data + (size_t)k * opf_dtype_size(t->dtype), opf_dtype_size(t->dtype));
  return u;
}

/* Line l of an (outer, n, inner) walk: element j's flat offset. */
static int64_t at(int64_t l, int64_t j, int64_t n, int64_t inner) {
  return (l / inner * n + j) * inner + l % inner;
}

/* argsort equals its reference exactly (both stable, zeros equal), and in every line the
 * zeros' positions ascend; sort's values are bitwise x at those positions. */
static void check(opf_dtype dt, const char *spec, int64_t outer, int64_t n, int64_t inner,
                  int desc) {
  opf_case a, r, s;
  char msg[256];
  ready(&a, "argsort", dt, spec, 0);
  ready(&r, "argsort", dt, spec, 1);
  ready(&s, "sort", dt, spec, 0);
  if (ts_compare(&a.out[0], &r.out[0], 0, msg, sizeof msg))
    fail_msg("argsort %s [%s], %d thread(s): %s", opf_dtype_name(dt), spec, omp_get_max_threads(), msg);
  const int64_t *ix = a.out[0].data;
  int zeros = 0;
  for (int64_t l = 0; l < outer * inner; l++) {
    int64_t prev = -1;
    for (int64_t j = 0; j < n; j++) {
      const int64_t i = ix[at(l, j, n, inner)], xi = at(l, i, n, inner);
      if (bits(&s.out[0], at(l, j, n, inner)) != bits(&s.in[0], xi))
        fail_msg("sort %s [%s]%s, %d thread(s): line %lld position %lld: %g, x[%lld] is %g",
                 opf_dtype_name(dt), spec, desc ? " descending" : "", omp_get_max_threads(),
                 (long long)l, (long long)j, ts_get(&s.out[0], at(l, j, n, inner)), (long long)i,
                 ts_get(&s.in[0], xi));
      if (ts_get(&a.in[0], xi) != 0) continue;
      zeros++;
      if (i < prev)
        fail_msg("argsort %s [%s]: line %lld: zero at %lld after the zero at %lld",
                 opf_dtype_name(dt), spec, (long long)l, (long long)i, (long long)prev);
      prev = i;
    }
  }
  assert_true(zeros > 0);
  opf_case_release(&a), opf_case_release(&r), opf_case_release(&s);
}

static void test_sort_argsort(void **state) {
  (void)state;
  static const struct {
    const char *spec;
    int64_t outer, n, inner;
    int desc;
  } cs[] = {{"x=3x40 axis=1", 3, 40, 1, 0},
            {"x=3x40 axis=1 descending=true", 3, 40, 1, 1},
            {"x=2x3000 axis=1", 2, 3000, 1, 0},
            {"x=2x3000 axis=1 descending=true", 2, 3000, 1, 1},
            {"x=1x70001 axis=1", 1, 70001, 1, 0},
            {"x=5000x10 axis=0", 1, 5000, 10, 0},
            {"x=300x37 axis=0 descending=true", 1, 300, 37, 1}};
  const int was = omp_get_max_threads();
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    for (int d = 0; d < 2; d++)
      for (size_t k = 0; k < sizeof cs / sizeof *cs; k++)
        check(d ? OPF_F64 : OPF_F32, cs[k].spec, cs[k].outer, cs[k].n, cs[k].inner, cs[k].desc);
  }
  omp_set_num_threads(was);
}

/* topk and unique: forward equals the reference (topk's indices exactly: zeros tie). */
static void test_topk_unique(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    const opf_dtype dt = d ? OPF_F64 : OPF_F32;
    static const char *const specs[] = {"x=4x300 k=200 axis=1", "x=4x300 k=150 axis=1 largest=false",
                                        "x=3000x4 k=1200 axis=0 largest=false"};
    for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
      opf_case f, r;
      char msg[256];
      ready(&f, "topk", dt, specs[k], 0);
      ready(&r, "topk", dt, specs[k], 1);
      if (ts_compare(&f.out[1], &r.out[1], 0, msg, sizeof msg))
        fail_msg("topk %s [%s]: indices: %s", opf_dtype_name(dt), specs[k], msg);
      opf_case_release(&f), opf_case_release(&r);
    }
    opf_case f;
    ready(&f, "unique", dt, "x=50x41", 0);
    const int64_t m = *(const int64_t *)f.out[1].data;
    int zeros = 0;
    for (int64_t k = 0; k < m; k++) zeros += ts_get(&f.out[0], k) == 0;
    if (zeros != 1) fail_msg("unique %s: %d zeros among %lld values", opf_dtype_name(dt), zeros, (long long)m);
    opf_case_release(&f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sort_argsort),
                                     cmocka_unit_test(test_topk_unique)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

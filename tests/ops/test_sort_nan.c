/* test_sort_nan.c: NaN ordering of the sorting family, as NumPy and torch order them: NaN
 * above every number, whatever its sign bit or payload. sort puts a line's NaNs last (first
 * when descending), argsort gives their positions last in index order (stable), topk's
 * largest take them first, unique keeps one NaN after the numbers; the references agree.
 * Lines are short (the vector sorts) and long (the radix sorts), along both axes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* x[k] of a case's input: NaN (positive or negative sign) at every 5th and 7th element. */
static void put_nans(opf_tensor *t) {
  for (int64_t k = 0; k < opf_numel(t); k++) {
    if (k % 5 == 2) ts_set(t, k, NAN);
    else if (k % 7 == 3) ts_set(t, k, -NAN);
  }
}

/* Line l of an (outer, n, inner) walk: element j's flat offset. */
static int64_t at(int64_t l, int64_t j, int64_t n, int64_t inner) {
  return (l / inner * n + j) * inner + l % inner;
}

static void run(opf_case *c, const char *name, opf_dtype dt, const char *spec, int ref) {
  ts_case_ready(c, ts_op(name), dt, spec, 0, 5);
  put_nans(&c->in[0]);
  if ((ref ? c->op->reference : c->op->forward)(c))
    fail_msg("%s [%s]: %s failed: %s", name, spec, ref ? "reference" : "forward", c->err.msg);
}

/* sort: in each line the NaN count of the input, at the end (desc: the start), the numbers
 * in order. */
static void check_sort(opf_dtype dt, const char *spec, int64_t outer, int64_t n, int64_t inner,
                       int desc, int ref) {
  opf_case c;
  run(&c, "sort", dt, spec, ref);
  for (int64_t l = 0; l < outer * inner; l++) {
    int64_t nans = 0;
    for (int64_t j = 0; j < n; j++) nans += isnan(ts_get(&c.in[0], at(l, j, n, inner)));
    for (int64_t j = 0; j < n; j++) {
      const int want_nan = desc ? j < nans : j >= n - nans;
      const double y = ts_get(&c.out[0], at(l, j, n, inner));
      if ((isnan(y) != 0) != want_nan)
        fail_msg("sort %s [%s]%s: line %lld position %lld: %g (%lld NaNs in the line)",
                 opf_dtype_name(dt), spec, ref ? " reference" : "", (long long)l, (long long)j, y,
                 (long long)nans);
      if (j > 0 && !isnan(y)) {
        const double p = ts_get(&c.out[0], at(l, j - 1, n, inner));
        if (!isnan(p) && (desc ? p < y : p > y))
          fail_msg("sort %s [%s]: line %lld out of order at %lld", opf_dtype_name(dt), spec,
                   (long long)l, (long long)j);
      }
    }
  }
  opf_case_release(&c);
}

static void test_sort(void **state) {
  (void)state;
  for (int ref = 0; ref < 2; ref++)
    for (int d = 0; d < 2; d++) {
      const opf_dtype dt = d ? OPF_F64 : OPF_F32;
      check_sort(dt, "x=9x37 axis=1", 9, 37, 1, 0, ref);
      check_sort(dt, "x=9x37 axis=1 descending=true", 9, 37, 1, 1, ref);
      check_sort(dt, "x=300x20 axis=0", 1, 300, 20, 0, ref);
      check_sort(dt, "x=3x5000 axis=1", 3, 5000, 1, 0, ref);
      check_sort(dt, "x=3x5000 axis=1 descending=true", 3, 5000, 1, 1, ref);
    }
}

/* Lines of one element (x=(37, 1) along axis 1, 37 lines: two whole vectors and a masked
 * tail of the vector path): each output is its input, bit for bit (-0 keeps its sign), a NaN
 * a NaN, in both directions and both float dtypes (a line of one went through the 16-lane
 * sorting network before: 8.5 ns a line). */
static void test_lines_of_one(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++)
    for (int desc = 0; desc < 2; desc++) {
      const opf_dtype dt = d ? OPF_F64 : OPF_F32;
      const char *spec = desc ? "x=37x1 axis=1 descending=true" : "x=37x1 axis=1";
      opf_case c;
      run(&c, "sort", dt, spec, 0);
      ts_set(&c.in[0], 0, -0.0), ts_set(&c.in[0], 1, INFINITY), ts_set(&c.in[0], 36, -INFINITY);
      if (c.op->forward(&c)) fail_msg("sort [%s]: %s", spec, c.err.msg);
      for (int64_t k = 0; k < 37; k++) {
        const double x = ts_get(&c.in[0], k), y = ts_get(&c.out[0], k);
        if (isnan(x) ? !isnan(y) : (x != y || signbit(x) != signbit(y)))
          fail_msg("sort %s [%s]: line %lld: %g, not its input %g", opf_dtype_name(dt), spec,
                   (long long)k, y, x);
      }
      opf_case_release(&c);
    }
}

/* argsort: the NaN positions last, in increasing order; topk largest: NaN first. */
static void test_argsort_topk(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    const opf_dtype dt = d ? OPF_F64 : OPF_F32;
    static const char *specs[] = {"x=4x40 axis=1", "x=2x3000 axis=1"};
    for (int s = 0; s < 2; s++) {
      opf_case c;
      run(&c, "argsort", dt, specs[s], 0);
      const int64_t n = c.in[0].shape[1];
      for (int64_t l = 0; l < c.in[0].shape[0]; l++) {
        const int64_t *ix = (const int64_t *)c.out[0].data + l * n;
        int64_t nans = 0, prev = -1;
        for (int64_t j = 0; j < n; j++) nans += isnan(ts_get(&c.in[0], l * n + j));
        for (int64_t j = n - nans; j < n; j++) {
          if (!isnan(ts_get(&c.in[0], l * n + ix[j])) || ix[j] <= prev)
            fail_msg("argsort %s [%s]: line %lld: position %lld is %lld, not the next NaN",
                     opf_dtype_name(dt), specs[s], (long long)l, (long long)j, (long long)ix[j]);
          prev = ix[j];
        }
      }
      opf_case_release(&c);
    }
    opf_case c;
    run(&c, "topk", dt, "x=4x300 k=5 axis=1", 0);
    for (int64_t k = 0; k < opf_numel(&c.out[0]); k++)
      if (!isnan(ts_get(&c.out[0], k)))
        fail_msg("topk %s: value %lld is %g, not a NaN (each line has more than 5)",
                 opf_dtype_name(dt), (long long)k, ts_get(&c.out[0], k));
    opf_case_release(&c);
  }
}

/* unique: the numbers, then one NaN; forward and reference agree on the count. */
static void test_unique(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++)
    for (int ref = 0; ref < 2; ref++) {
      const opf_dtype dt = d ? OPF_F64 : OPF_F32;
      opf_case c;
      run(&c, "unique", dt, "x=50x41", ref);
      const int64_t m = *(const int64_t *)c.out[1].data;
      for (int64_t k = 0; k < m; k++)
        if ((isnan(ts_get(&c.out[0], k)) != 0) != (k == m - 1))
          fail_msg("unique %s%s: value %lld of %lld is %g", opf_dtype_name(dt),
                   ref ? " reference" : "", (long long)k, (long long)m, ts_get(&c.out[0], k));
      opf_case_release(&c);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sort), cmocka_unit_test(test_lines_of_one),
                                     cmocka_unit_test(test_argsort_topk),
                                     cmocka_unit_test(test_unique)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

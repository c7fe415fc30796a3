/* test_models_reduce2.c: what the generic operator driver cannot see for the second batch of
 * reductions (prod, min, argmin, nansum, nanprod, norm, var, std, logsumexp, cumsum, cumprod,
 * all, any) and the sort family (sort, argsort, topk, searchsorted, unique): golden flops and
 * bytes at a standard shape, error paths with their messages, gradients through zeros (which
 * the random inputs never hold), segmented scans, tie rules, bool inputs, data-dependent
 * outputs, and results independent of the thread count. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* ---- golden models ---- */
typedef struct golden {
  const char *op, *spec;
  double flops[OPF_NPASSES], bytes[OPF_NPASSES];
} golden;

/* All float32 (4-byte elements), x = 1024x1024: N = 1048576 input elements, X = 4N = 4194304
 * input bytes; y per axis has 1024 elements (4096 bytes), axis=all one.
 * prod axis=0: fwd N muls; bwd N divides + 1024 (dy*y) = 1049600; bytes fwd X + 4096 =
 *   4198400, bwd reads x, dy and y, writes dx: X + 8192 + X = 8396800.
 * min axis=0: as max: fwd N, bwd N compares; bytes bwd X + 4096 + X = 8392704.
 * argmin axis=1: fwd N compares, no backward; default bytes x + int64 y (8192) = 4202496 for
 *   both passes.
 * nansum axis=1: fwd N adds, bwd N selects; bytes bwd X + 4096 + X = 8392704.
 * nanprod axis=1: as prod.
 * norm (l2) axis=0: fwd 2N (square, add) + 1024 sqrt = 2098176; bwd N muls + 1024 divides =
 *   1049600; bytes bwd reads y too: 8396800.
 * norm ord=l1 axis=all: fwd 2N (abs, add), bwd N; y is 4 bytes: fwd X + 4 = 4194308, bwd
 *   X + 4 + X = 8388612.
 * var axis=1: fwd 4N + 5 * 1024 = 4199424; bwd 2N + 2 * 1024 = 2099200; bytes bwd reads the
 *   mean: X + 8192 + X = 8396800.
 * std axis=0: fwd 4N + 6 * 1024 = 4200448; bwd 2099200; bytes bwd reads y and the mean:
 *   X + 12288 + X = 8400896.
 * logsumexp axis=1: fwd 4N + 2 * 1024 = 4196352; bwd 3N = 3145728; bytes bwd reads y:
 *   8396800.
 * all axis=0: fwd N compares; y is 1024 bools: X + 1024 = 4195328 (bwd: the model's y + x).
 * any axis=all: one bool: X + 1 = 4194305.
 * cumsum axis=0: N adds each way; bytes fwd x + y = 8388608, bwd dy + dx = 8388608.
 * cumprod axis=1: fwd N muls, bwd 3N (mul, add, divide); bytes bwd dy, y, x, dx = 16777216.
 * sort axis=1: 1024 lines of n = 1024: n log2 n per line = 1024 * 1024 * 10 = 10485760 forward,
 *   the backward a scatter through the kept permutation (0); bytes fwd x + y = 8388608, bwd
 *   dy, the 4-byte permutation, dx = 12582912.
 * argsort axis=0: fwd 10485760, no backward; bytes fwd x + int64 y = 12582912, bwd 3X.
 * topk k=10 axis=1: N compares + 1024 lines * 10 log2 10; bytes x + 10240 * (4 + 8) =
 *   4317184 each way.
 * searchsorted sorted=1024 values=1024x1024: (floor(log2 1025) + 1) = 11 compares per value =
 *   11534336; bytes sequence 4096 + values and int64 positions N * 12 = 12587008.
 * unique return_counts: N log2 N + N = 22020096; bytes x + values 2X + count 8 + counts 8N =
 *   16777224. */
static const golden goldens[] = {
    {"prod", "x=1024x1024 axis=0", {1048576, 1049600, 2098176}, {4198400, 8396800, 12595200}},
    {"min", "x=1024x1024 axis=0", {1048576, 1048576, 2097152}, {4198400, 8392704, 12591104}},
    {"argmin", "x=1024x1024 axis=1", {1048576, 0, 1048576}, {4202496, 4202496, 8404992}},
    {"nansum", "x=1024x1024 axis=1", {1048576, 1048576, 2097152}, {4198400, 8392704, 12591104}},
    {"nanprod", "x=1024x1024 axis=1", {1048576, 1049600, 2098176}, {4198400, 8396800, 12595200}},
    {"norm", "x=1024x1024 axis=0", {2098176, 1049600, 3147776}, {4198400, 8396800, 12595200}},
    {"norm", "x=1024x1024 axis=all ord=l1", {2097152, 1048576, 3145728}, {4194308, 8388612, 12582920}},
    {"var", "x=1024x1024 axis=1", {4199424, 2099200, 6298624}, {4198400, 8396800, 12595200}},
    {"std", "x=1024x1024 axis=0", {4200448, 2099200, 6299648}, {4198400, 8400896, 12599296}},
    {"logsumexp", "x=1024x1024 axis=1", {4196352, 3145728, 7342080}, {4198400, 8396800, 12595200}},
    {"all", "x=1024x1024 axis=0", {1048576, 0, 1048576}, {4195328, 4195328, 8390656}},
    {"any", "x=1024x1024 axis=all", {1048576, 0, 1048576}, {4194305, 4194305, 8388610}},
    {"cumsum", "x=1024x1024 axis=0", {1048576, 1048576, 2097152}, {8388608, 8388608, 16777216}},
    {"cumprod", "x=1024x1024 axis=1", {1048576, 3145728, 4194304}, {8388608, 16777216, 25165824}},
    {"sort", "x=1024x1024 axis=1", {10485760, 0, 10485760}, {8388608, 12582912, 20971520}},
    {"argsort", "x=1024x1024 axis=0", {10485760, 0, 10485760}, {12582912, 12582912, 25165824}},
    {"searchsorted", "sorted=1024 values=1024x1024", {11534336, 0, 11534336}, {12587008, 12587008, 25174016}},
    {"unique", "x=1024x1024 return_counts=true", {22020096, 0, 22020096}, {16777224, 16777224, 33554448}},
};

static void check_models(const opf_op *op, const char *spec, const double *flops,
                         const double *bytes) {
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, OPF_F32, spec, &e)) fail_msg("%s", e.msg);
  for (int p = 0; p < OPF_NPASSES; p++) {
    double f = op->flops(&c, (opf_pass)p), b = op->bytes(&c, (opf_pass)p);
    if (f != flops[p] || b != bytes[p])
      fail_msg("%s [%s] pass %s: flops %.17g bytes %.17g, want %.17g and %.17g", op->name, spec,
               opf_pass_name((opf_pass)p), f, b, flops[p], bytes[p]);
  }
}

static void test_golden_models(void **state) {
  (void)state;
  for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++)
    check_models(ts_op(goldens[g].op), goldens[g].spec, goldens[g].flops, goldens[g].bytes);
  /* topk's ordering term is not an integer: the same expression the model evaluates */
  const double tk = 1048576 + 10240 * log2(10.0);
  check_models(ts_op("topk"), "x=1024x1024 k=10 axis=1", (const double[]){tk, 0, tk},
               (const double[]){4317184, 4317184, 8634368});
}

/* ---- error paths ---- */
typedef struct bad_spec {
  const char *op, *spec, *needle; /* the message must contain needle */
} bad_spec;

static const bad_spec bad_specs[] = {
    {"var", "x=4x5 axis=1 ddof=5", "ddof 5 must be less than the reduced size 5"},
    {"std", "x=4x5 ddof=-1", "outside its range"},
    {"logsumexp", "x=0x5 axis=0", "empty axis"},
    {"min", "x=4x5 axis=3", "axis 3 is out of range"},
    {"argmin", "x=7x0 axis=1", "empty axis"},
    {"norm", "x=4x5 ord=l3", "l1|l2"},
    {"prod", "x=4x5 keepdims=maybe", "true or false"},
    {"cumsum", "x=4x5 axis=2", "axis 2 is out of range"},
    {"cumprod", "axis=0", "needs a shape"},
    {"sort", "x=4x5 axis=-3", "axis -3 is out of range"},
    {"argsort", "x=4x5 descending=maybe", "true or false"},
    {"topk", "x=4x5 k=6", "k 6 is larger than the size 5 of axis 1"},
    {"topk", "x=4x5 k=2 axis=2", "axis 2 is out of range"},
    {"topk", "x=4x5 k=-1", "outside its range"},
    {"topk", "x=4x5 k=2 axis=all", "axis 'all' is not supported by topk"},
    {"searchsorted", "sorted=4x4 values=3", "'sorted' must be 1-D"},
    {"searchsorted", "sorted=4 values=3 side=middle", "left|right"},
    {"searchsorted", "sorted=4", "needs a shape"},
    {"unique", "x=4 return_counts=2", "true or false"},
};

static void test_bad_specs(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof bad_specs / sizeof bad_specs[0]; k++)
    ts_expect_einval(bad_specs[k].op, bad_specs[k].spec, bad_specs[k].needle);
}

/* ---- values the random inputs never produce ---- */
static void case_with(opf_case *c, const char *op, opf_dtype dt, const char *spec,
                      const double *vals, int with_grad) {
  ts_case_ready(c, ts_op(op), dt, spec, with_grad, 3);
  for (int64_t k = 0; k < opf_numel(&c->in[0]); k++) ts_set(&c->in[0], k, vals[k]);
}

static void expect_vec(const opf_tensor *t, const double *want, int64_t n, const char *what) {
  for (int64_t k = 0; k < n; k++) {
    const double g = ts_get(t, k);
    if (!(fabs(g - want[k]) <= 1e-5 * (1 + fabs(want[k]))))
      fail_msg("%s: element %lld is %.9g, want %.9g", what, (long long)k, g, want[k]);
  }
}

/* Run forward and backward with dy = 1 everywhere. */
static void fwd_bwd_ones(opf_case *c) {
  for (int64_t k = 0; k < opf_numel(&c->gout[0]); k++) ts_set(&c->gout[0], k, 1);
  assert_int_equal(c->op->forward(c), OPF_OK);
  assert_int_equal(c->op->backward(c), OPF_OK);
}

/* prod / nanprod: one zero gets the product of the others, two zeros give 0 everywhere; as
 * rows (axis 1) and as columns (axis 0, the transposed data). */
static void test_prod_zero_gradient(void **state) {
  (void)state;
  const double rows[12] = {2, 0, 3, 4, 0, 2, 0, 3, 1, 2, 3, 4};
  const double want[12] = {0, 24, 0, 0, 0, 0, 0, 0, 24, 12, 8, 6};
  double cols[12], wcols[12];
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 4; k++) cols[k * 3 + r] = rows[r * 4 + k], wcols[k * 3 + r] = want[r * 4 + k];
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    opf_case c;
    case_with(&c, "prod", (opf_dtype)d, "x=3x4 axis=1", rows, 1);
    fwd_bwd_ones(&c);
    expect_vec(&c.gin[0], want, 12, "prod rows backward");
    opf_case_release(&c);
    case_with(&c, "prod", (opf_dtype)d, "x=4x3 axis=0", cols, 1);
    fwd_bwd_ones(&c);
    expect_vec(&c.gin[0], wcols, 12, "prod columns backward");
    opf_case_release(&c);
    /* nanprod: NaN counts as 1 and gets 0; the zero gets 2 * 3 */
    case_with(&c, "nanprod", (opf_dtype)d, "x=1x4 axis=1", (const double[]){2, NAN, 0, 3}, 1);
    fwd_bwd_ones(&c);
    expect_vec(&c.out[0], (const double[]){0}, 1, "nanprod forward");
    expect_vec(&c.gin[0], (const double[]){0, 0, 6, 0}, 4, "nanprod backward");
    opf_case_release(&c);
  }
}

/* cumprod through a zero: x = (2, 3, 0, 5, 7), dy = 1: y = (2, 6, 0, 0, 0);
 * dx0 = (y0 + y1) / x0 = 4, dx1 = y1 / x1 = 2, dx2 = y1 * (1 + 5 + 5 * 7) = 246, dx3 = dx4 = 0. */
static void test_cumprod_zero_gradient(void **state) {
  (void)state;
  const double x[5] = {2, 3, 0, 5, 7}, want[5] = {4, 2, 246, 0, 0};
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    opf_case c;
    case_with(&c, "cumprod", (opf_dtype)d, "x=1x5 axis=1", x, 1);
    fwd_bwd_ones(&c);
    expect_vec(&c.out[0], (const double[]){2, 6, 0, 0, 0}, 5, "cumprod forward");
    expect_vec(&c.gin[0], want, 5, "cumprod backward");
    opf_case_release(&c);
    case_with(&c, "cumprod", (opf_dtype)d, "x=5x1 axis=0", x, 1);
    fwd_bwd_ones(&c);
    expect_vec(&c.gin[0], want, 5, "cumprod backward (columns)");
    opf_case_release(&c);
  }
}

/* Long rows are scanned in segments (two passes); forward is checked by the driver's "test"
 * set, the backward here against double sums: cumsum dx[k] = sum_{j>=k} dy[j], cumprod
 * dx[k] = sum_{j>=k} dy[j] y[j] / x[k]. */
static void test_segmented_scan_backward(void **state) {
  (void)state;
  for (int prod = 0; prod < 2; prod++)
    for (int d = OPF_F32; d <= OPF_F64; d++) {
      opf_case c;
      ts_case_ready(&c, ts_op(prod ? "cumprod" : "cumsum"), (opf_dtype)d, "x=2x70001 axis=1", 1, 9);
      assert_int_equal(c.op->forward(&c), OPF_OK);
      assert_int_equal(c.op->backward(&c), OPF_OK);
      const double tol = d == OPF_F32 ? 1e-3 : 1e-9;
      for (int64_t o = 0; o < 2; o++) {
        double acc = 0;
        for (int64_t k = 70000; k >= 0; k--) {
          const int64_t i = o * 70001 + k;
          acc += ts_get(&c.gout[0], i) * (prod ? ts_get(&c.out[0], i) : 1);
          const double want = prod ? acc / ts_get(&c.in[0], i) : acc, got = ts_get(&c.gin[0], i);
          /* float32 sums of 70000 terms: an absolute slack of the rounding's random walk */
          if (!(fabs(got - want) <= tol * (1 + fabs(want)) + (d == OPF_F32 ? 0.05 : 0)))
            fail_msg("%s %s: dx[%lld, %lld] = %.9g, want %.9g", c.op->name,
                     opf_dtype_name((opf_dtype)d), (long long)o, (long long)k, got, want);
        }
      }
      opf_case_release(&c);
    }
}

/* Short rows on the inner axis are scanned many at a time as one flat array with row marks
 * (scan_seg): row lengths around the vector widths (8 and 16 lanes), row counts that leave a
 * partial vector, on 1 and 2 threads. Forward against the reference (every dtype), backward
 * against double sums: cumsum dx[k] = sum_{j>=k} dy[j], cumprod dx[k] = sum_{j>=k} dy[j] y[j]
 * / x[k]. */
static void test_short_row_scan(void **state) {
  (void)state;
  static const char *const specs[] = {"x=37x2 axis=1",  "x=5x3 axis=1",   "x=41x7 axis=1",
                                      "x=9x8 axis=-1",  "x=23x9 axis=1",  "x=3x15 axis=1",
                                      "x=29x16 axis=1", "x=31x17 axis=1", "x=7x33 axis=1",
                                      "x=13x63 axis=1", "x=4001x10 axis=1", "x=3x5x11 axis=2",
                                      "x=1x10 axis=1"};
  const int saved = omp_get_max_threads();
  char msg[256];
  for (int prod = 0; prod < 2; prod++)
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++)
      for (int d = 0; d < OPF_BOOL; d++)
        for (int nt = 1; nt <= 2; nt++) {
          const opf_op *op = ts_op(prod ? "cumprod" : "cumsum");
          const int fl = d == OPF_F32 || d == OPF_F64;
          omp_set_num_threads(nt);
          opf_case c;
          ts_case_ready(&c, op, (opf_dtype)d, specs[si], fl, 11);
          assert_int_equal(op->forward(&c), OPF_OK);
          if (ts_compare_reference(&c, d == OPF_F32 ? 1e-5 : 1e-12, msg, sizeof msg))
            fail_msg("%s %s [%s] on %d threads: %s", op->name, opf_dtype_name((opf_dtype)d),
                     specs[si], nt, msg);
          if (fl) {
            assert_int_equal(op->backward(&c), OPF_OK);
            const int64_t n = c.in[0].shape[c.in[0].ndim - 1], rows = opf_numel(&c.in[0]) / n;
            for (int64_t o = 0; o < rows; o++) {
              double acc = 0;
              for (int64_t k = n - 1; k >= 0; k--) {
                const int64_t i = o * n + k;
                acc += ts_get(&c.gout[0], i) * (prod ? ts_get(&c.out[0], i) : 1);
                const double want = prod ? acc / ts_get(&c.in[0], i) : acc;
                const double got = ts_get(&c.gin[0], i);
                if (!(fabs(got - want) <= (d == OPF_F32 ? 1e-5 : 1e-12) * (1 + fabs(want))))
                  fail_msg("%s backward %s [%s] on %d threads: dx[%lld] = %.9g, want %.9g",
                           op->name, opf_dtype_name((opf_dtype)d), specs[si], nt,
                           (long long)i, got, want);
              }
            }
          }
          opf_case_release(&c);
        }
  omp_set_num_threads(saved);
}

/* argmin and the gradient of min go to the first minimal element in every kernel path
 * (short rows, long rows, segments, column blocks, wide rows). */
static void check_first_min(const char *spec, int64_t n, int64_t inner, int64_t outer) {
  const int64_t total = outer * n * inner;
  double *v = test_malloc((size_t)total * sizeof(double));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < n; k++)
      for (int64_t j = 0; j < inner; j++)
        v[(o * n + k) * inner + j] = (k == 3 || k == n - 2) ? -5 : 1;
  opf_case c;
  for (int d = 0; d < OPF_BOOL; d++) {
    case_with(&c, "argmin", (opf_dtype)d, spec, v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    for (int64_t e = 0; e < outer * inner; e++)
      if (((int64_t *)c.out[0].data)[e] != 3)
        fail_msg("argmin %s [%s]: output %lld is %lld, want 3", opf_dtype_name((opf_dtype)d),
                 spec, (long long)e, (long long)((int64_t *)c.out[0].data)[e]);
    opf_case_release(&c);
  }
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    case_with(&c, "min", (opf_dtype)d, spec, v, 1);
    for (int64_t e = 0; e < outer * inner; e++) ts_set(&c.gout[0], e, 2.0 + (double)e);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_int_equal(c.op->backward(&c), OPF_OK);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < inner; j++) {
          const double want = k == 3 ? 2.0 + (double)(o * inner + j) : 0;
          const double got = ts_get(&c.gin[0], (o * n + k) * inner + j);
          if (got != want)
            fail_msg("min backward [%s]: dx[%lld,%lld,%lld] = %g, want %g", spec, (long long)o,
                     (long long)k, (long long)j, got, want);
        }
    opf_case_release(&c);
  }
  test_free(v);
}

static void test_min_first_occurrence(void **state) {
  (void)state;
  check_first_min("x=2x10 axis=1", 10, 1, 2);
  check_first_min("x=70x10 axis=1", 10, 1, 70);
  check_first_min("x=3x700 axis=1", 700, 1, 3);
  check_first_min("x=1x300000 axis=1", 300000, 1, 1);
  check_first_min("x=40x300 axis=0", 40, 300, 1);
  check_first_min("x=500x3 axis=0", 500, 3, 1);
  check_first_min("x=2x90000x3 axis=1", 90000, 3, 2);
}

/* all / any: bool and numeric inputs, NaN counts as nonzero, outputs are bool. */
static void test_all_any(void **state) {
  (void)state;
  const double v[8] = {1, 1, 1, 1, 0, 1, 0, 0};
  const double all_rows[2] = {1, 0}, any_rows[2] = {1, 1}, all_cols[4] = {0, 1, 0, 0},
               any_cols[4] = {1, 1, 1, 1};
  for (int d = 0; d <= OPF_BOOL; d++) {
    opf_case c;
    case_with(&c, "all", (opf_dtype)d, "x=2x4 axis=1", v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_int_equal(c.out[0].dtype, OPF_BOOL);
    expect_vec(&c.out[0], all_rows, 2, "all rows");
    opf_case_release(&c);
    case_with(&c, "any", (opf_dtype)d, "x=2x4 axis=1", v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[0], any_rows, 2, "any rows");
    opf_case_release(&c);
    case_with(&c, "all", (opf_dtype)d, "x=2x4 axis=0", v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[0], all_cols, 4, "all columns");
    opf_case_release(&c);
    case_with(&c, "any", (opf_dtype)d, "x=2x4 axis=0", v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[0], any_cols, 4, "any columns");
    opf_case_release(&c);
  }
  opf_case c;
  case_with(&c, "all", OPF_F64, "x=3", (const double[]){NAN, 2, -1}, 0);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_int_equal(((uint8_t *)c.out[0].data)[0], 1);
  opf_case_release(&c);
  /* empty: all is true, any false */
  opf_err e;
  if (opf_case_init(&c, ts_op("all"), OPF_F32, "x=3x0 axis=1", &e)) fail_msg("%s", e.msg);
  if (opf_tensor_alloc(&c.out[0], &e)) fail_msg("%s", e.msg);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  for (int k = 0; k < 3; k++) assert_int_equal(((uint8_t *)c.out[0].data)[k], 1);
  opf_tensor_free(&c.out[0]);
}

/* unique: sorted values, count and counts, zeros after the count. */
static void test_unique(void **state) {
  (void)state;
  for (int d = 0; d < OPF_BOOL; d++) {
    opf_case c;
    case_with(&c, "unique", (opf_dtype)d, "x=6 return_counts=true", (const double[]){3, 1, 3, -2, 1, 3}, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[0], (const double[]){-2, 1, 3, 0, 0, 0}, 6, "unique values");
    assert_int_equal(*(int64_t *)c.out[1].data, 3);
    expect_vec(&c.out[2], (const double[]){1, 2, 3, 0, 0, 0}, 6, "unique counts");
    opf_case_release(&c);
  }
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, ts_op("unique"), OPF_F32, "x=7", &e)) fail_msg("%s", e.msg);
  assert_int_equal(opf_numel(&c.out[2]), 0); /* counts are empty without return_counts */
}

/* searchsorted: left and right around runs of equal elements and outside the range. */
static void test_searchsorted(void **state) {
  (void)state;
  const double seq[5] = {1, 2, 2, 2, 5}, vals[5] = {2, 0, 6, 5, 1.5};
  const double left[5] = {1, 0, 5, 4, 1}, right[5] = {4, 0, 5, 5, 1};
  for (int d = OPF_F32; d <= OPF_F64; d++)
    for (int side = 0; side < 2; side++) {
      opf_case c;
      ts_case_ready(&c, ts_op("searchsorted"), (opf_dtype)d,
                    side ? "sorted=5 values=5 side=right" : "sorted=5 values=5", 0, 1);
      for (int k = 0; k < 5; k++) ts_set(&c.in[0], k, seq[k]), ts_set(&c.in[1], k, vals[k]);
      assert_int_equal(c.op->forward(&c), OPF_OK);
      expect_vec(&c.out[0], side ? right : left, 5, "searchsorted");
      opf_case_release(&c);
    }
}

/* topk: ties go to the lower position, for the largest and the smallest, on the heap path
 * (k small against the line) and the sort path. */
static void test_topk_ties(void **state) {
  (void)state;
  double v[200];
  for (int k = 0; k < 200; k++) v[k] = k % 7 == 3 ? 9 : k % 5 == 1 ? -9 : 0;
  for (int d = 0; d < OPF_BOOL; d++) {
    opf_case c;
    case_with(&c, "topk", (opf_dtype)d, "x=1x200 k=3", v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[0], (const double[]){9, 9, 9}, 3, "topk values");
    expect_vec(&c.out[1], (const double[]){3, 10, 17}, 3, "topk indices");
    opf_case_release(&c);
    case_with(&c, "topk", (opf_dtype)d, "x=1x200 k=2 largest=false", v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[1], (const double[]){1, 6}, 2, "topk smallest indices");
    opf_case_release(&c);
    case_with(&c, "topk", (opf_dtype)d, "x=1x5 k=2", (const double[]){1, 3, 3, 2, 3}, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[1], (const double[]){1, 2}, 2, "topk short line indices");
    opf_case_release(&c);
  }
  /* backward: dy lands on the selected positions, 0 elsewhere */
  opf_case c;
  case_with(&c, "topk", OPF_F64, "x=1x5 k=2", (const double[]){1, 3, 0, 7, 2}, 1);
  ts_set(&c.gout[0], 0, 10), ts_set(&c.gout[0], 1, 20);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_int_equal(c.op->backward(&c), OPF_OK);
  expect_vec(&c.gin[0], (const double[]){0, 20, 0, 10, 0}, 5, "topk backward");
  opf_case_release(&c);
}

/* argsort is stable in both directions; sort's backward permutes dy back. */
static void test_sort_stable(void **state) {
  (void)state;
  const double v[6] = {2, 1, 2, 0, 1, 2};
  for (int d = 0; d < OPF_BOOL; d++) {
    opf_case c;
    case_with(&c, "argsort", (opf_dtype)d, "x=6", v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[0], (const double[]){3, 1, 4, 0, 2, 5}, 6, "argsort");
    opf_case_release(&c);
    case_with(&c, "argsort", (opf_dtype)d, "x=6 descending=true", v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    expect_vec(&c.out[0], (const double[]){0, 2, 5, 1, 4, 3}, 6, "argsort descending");
    opf_case_release(&c);
  }
  opf_case c;
  case_with(&c, "sort", OPF_F32, "x=4", (const double[]){3, -1, 2, 0}, 1);
  for (int k = 0; k < 4; k++) ts_set(&c.gout[0], k, 10 * (k + 1));
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_int_equal(c.op->backward(&c), OPF_OK);
  expect_vec(&c.out[0], (const double[]){-1, 0, 2, 3}, 4, "sort");
  expect_vec(&c.gin[0], (const double[]){40, 10, 30, 20}, 4, "sort backward");
  opf_case_release(&c);
}

/* ---- the same result at 1 and 2 threads (work splits depend on the shape only) ---- */
static const char *const thread_specs[][2] = {
    {"var", "x=1x300000 axis=1"},     {"logsumexp", "x=300000x3 axis=0"},
    {"prod", "x=1x300000 axis=all"},  {"cumsum", "x=2x100000 axis=1"},
    {"cumprod", "x=600x700 axis=0"},  {"sort", "x=300x301 axis=0"},
    {"topk", "x=300x500 k=10"},       {"unique", "x=200000"},
    {"searchsorted", "sorted=1000 values=300x300"},
};

static void test_thread_independent(void **state) {
  (void)state;
  const int saved = omp_get_max_threads();
  for (size_t k = 0; k < sizeof thread_specs / sizeof thread_specs[0]; k++) {
    const opf_op *op = ts_op(thread_specs[k][0]);
    opf_case a, b;
    ts_case_ready(&a, op, OPF_F32, thread_specs[k][1], 0, 5);
    ts_case_ready(&b, op, OPF_F32, thread_specs[k][1], 0, 5);
    omp_set_num_threads(1);
    assert_int_equal(op->forward(&a), OPF_OK);
    omp_set_num_threads(2);
    assert_int_equal(op->forward(&b), OPF_OK);
    for (int i = 0; i < op->n_out; i++)
      if (memcmp(a.out[i].data, b.out[i].data, a.out[i].nbytes))
        fail_msg("%s [%s]: output '%s' differs between 1 and 2 threads", op->name,
                 thread_specs[k][1], op->out[i]);
    opf_case_release(&a);
    opf_case_release(&b);
  }
  omp_set_num_threads(saved);
}

/* float32 rows of 1..33 elements reduced over the last axis (sum, mean, prod, nansum, nanprod,
 * norm L1 and L2): rows of 2..16 take reduce.c's 16-rows-per-step AVX-512 kernel where the
 * CPU has it, the others the transposed column path. 1, 15, 16, 17 and 37 rows (the masked
 * last block), 1 and 2 threads, against a double fold of each row: a row with a NaN, one
 * with +inf, one with -inf and one of zeros of both signs among the filler's values. */
static void short_rows_check(const char *name, const char *extra, int64_t rows, int64_t n,
                             int nt) {
  const opf_op *op = ts_op(name);
  char spec[64];
  snprintf(spec, sizeof spec, "x=%lldx%lld axis=1%s", (long long)rows, (long long)n, extra);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(nt);
  opf_case c;
  ts_case_ready(&c, op, OPF_F32, spec, 0, 13);
  float *x = c.in[0].data;
  const float sp[4] = {NAN, INFINITY, -INFINITY, -0.0f};
  for (int64_t r = 1; r < rows && r < 5; r++) x[r * n + (r * 7) % n] = sp[r - 1];
  if (rows > 4)
    for (int64_t k = 0; k < n; k++) x[4 * n + k] = k % 2 ? -0.0f : 0.0f;
  assert_int_equal(op->forward(&c), OPF_OK);
  const int prod = strstr(name, "prod") != NULL, nan = strncmp(name, "nan", 3) == 0;
  const int l1 = strstr(extra, "l1") != NULL, l2 = !strcmp(name, "norm") && !l1;
  const float *y = c.out[0].data;
  for (int64_t r = 0; r < rows; r++) {
    double a = prod ? 1 : 0, m = 0; /* m: the sum of |terms|, the scale of a sum's error */
    for (int64_t k = 0; k < n; k++) {
      double v = x[r * n + k];
      if (nan && isnan(v)) continue;
      v = l1 ? fabs(v) : l2 ? v * v : v;
      a = prod ? a * v : a + v;
      m += fabs(v);
    }
    const int mean = !strcmp(name, "mean");
    const double want = l2 ? sqrt(a) : mean ? a / (double)n : a, got = y[r];
    /* float32 folds of at most 33 terms: n roundings of the running value (a sum's relative
     * to the sum of magnitudes) */
    const double scale = prod || l2 ? fabs(want) : mean ? m / (double)n : m;
    const double tol = 6e-8 * (double)(n + 1) * scale;
    const int ok = isnan(want) ? isnan(got)
                   : isinf(want) ? got == want
                                 : fabs(got - want) <= tol + 1e-30;
    if (!ok)
      fail_msg("%s [%s] %d threads: row %lld: got %.9g, want %.9g", name, spec, nt, (long long)r,
               got, want);
  }
  opf_case_release(&c);
  omp_set_num_threads(saved);
}

static void test_short_rows_f32(void **state) {
  (void)state;
  const char *const ops[][2] = {{"sum", ""},    {"mean", ""},    {"prod", ""},
                                {"nansum", ""}, {"nanprod", ""}, {"norm", " ord=l1"},
                                {"norm", " ord=l2"}};
  const int64_t rows[] = {1, 15, 16, 17, 37};
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
    for (int64_t n = 1; n <= 33; n++)
      for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
        for (int nt = 1; nt <= 2; nt++) short_rows_check(ops[o][0], ops[o][1], rows[k], n, nt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),
      cmocka_unit_test(test_bad_specs),
      cmocka_unit_test(test_prod_zero_gradient),
      cmocka_unit_test(test_cumprod_zero_gradient),
      cmocka_unit_test(test_segmented_scan_backward),
      cmocka_unit_test(test_short_row_scan),
      cmocka_unit_test(test_min_first_occurrence),
      cmocka_unit_test(test_all_any),
      cmocka_unit_test(test_unique),
      cmocka_unit_test(test_searchsorted),
      cmocka_unit_test(test_topk_ties),
      cmocka_unit_test(test_sort_stable),
      cmocka_unit_test(test_thread_independent),
      cmocka_unit_test(test_short_rows_f32),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_models_reduce.c: what the generic operator driver cannot see for the reduction family
 * (sum, mean, max, argmax), softmax, log_softmax and softmax_cross_entropy: golden flops and
 * bytes at a standard shape, error paths with their messages, output shapes and dtypes, integer
 * wrap-around, tie rules, results independent of the thread count, and the float32 backward
 * kernels (the driver's gradient check runs in float64 only). */
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

/* All float32 (4-byte elements), N = 1024 * 1024 = 1048576 input elements.
 * sum axis=0: y has 1024 elements. fwd one add per input element: 1048576 flops; bytes read x
 *   4194304 + write y 4096 = 4198400. bwd is a broadcast, a view of dy (stride 0): 0 flops,
 *   0 bytes. both = the sums.
 * mean axis=1: fwd 1048576 adds + 1024 scales = 1049600; bwd one scale per output = 1024;
 *   bytes as sum.
 * max axis=0: fwd 1048576 compares; bwd 1048576 compares (argmax again); bytes fwd 4198400,
 *   bwd read x 4194304 + dy 4096 + write dx 4194304 = 8392704.
 * argmax axis=all: fwd 1048576 compares, no backward (0); bytes fwd read x 4194304 + one
 *   int64 index 8 = 4194312; bwd (default model, not run) out 8 + in 4194304.
 * softmax / log_softmax: fwd 5 per element = 5242880, bwd 4 per element = 4194304; bytes fwd
 *   x + y = 8388608, bwd y + dy + dx = 12582912.
 * softmax_cross_entropy logits 32x1000, mean: fwd 4*32000 + 4*32 = 128128, bwd 3*32000 + 32
 *   = 96032; bytes fwd logits 128000 + labels 256 + scalar loss 4 = 128260, bwd logits twice
 *   256000 + labels 256 + loss gradient 4 = 256260. */
static const golden goldens[] = {
    {"sum", "x=1024x1024 axis=0", {1048576, 0, 1048576}, {4198400, 0, 4198400}}, /* dx: a view */
    {"mean", "x=1024x1024 axis=1", {1049600, 1024, 1050624}, {4198400, 4198400, 8396800}},
    {"max", "x=1024x1024 axis=0", {1048576, 1048576, 2097152}, {4198400, 8392704, 12591104}},
    {"argmax", "x=1024x1024 axis=all", {1048576, 0, 1048576}, {4194312, 4194312, 8388624}},
    {"softmax", "x=1024x1024 axis=-1", {5242880, 4194304, 9437184}, {8388608, 12582912, 20971520}},
    {"log_softmax", "x=1024x1024 axis=-1", {5242880, 4194304, 9437184}, {8388608, 12582912, 20971520}},
    {"softmax_cross_entropy", "logits=32x1000", {128128, 96032, 224160}, {128260, 256260, 384520}},
};

static void test_golden_models(void **state) {
  (void)state;
  for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++) {
    const opf_op *op = ts_op(goldens[g].op);
    opf_case c;
    opf_err e;
    if (opf_case_init(&c, op, OPF_F32, goldens[g].spec, &e)) fail_msg("%s", e.msg);
    for (int p = 0; p < OPF_NPASSES; p++) {
      double f = op->flops(&c, (opf_pass)p), b = op->bytes(&c, (opf_pass)p);
      if (f != goldens[g].flops[p] || b != goldens[g].bytes[p])
        fail_msg("%s [%s] pass %s: flops %.0f bytes %.0f, want %.0f and %.0f", op->name,
                 goldens[g].spec, opf_pass_name((opf_pass)p), f, b, goldens[g].flops[p],
                 goldens[g].bytes[p]);
    }
  }
}

/* ---- error paths ---- */
typedef struct bad_spec {
  const char *op, *spec, *needle; /* the message must contain needle */
} bad_spec;

static const bad_spec bad_specs[] = {
    {"sum", "x=4x5 axis=2", "axis 2 is out of range"},
    {"mean", "x=4x5 axis=-3", "axis -3 is out of range"},
    {"max", "x=0x5 axis=0", "empty axis"},
    {"argmax", "x=7x0 axis=1", "empty axis"},
    {"argmax", "x=4x5 axis=9", "outside its range"},
    {"sum", "x=4x5 keepdims=maybe", "true or false"},
    {"sum", "x=() axis=0", "out of range"},
    {"sum", "axis=0", "needs a shape"},
    {"softmax", "x=4x5 axis=all", "must be an integer"},
    {"log_softmax", "x=4x5 axis=2", "axis 2 is out of range"},
    {"softmax_cross_entropy", "logits=2x3x4", "must be 2-D"},
    {"softmax_cross_entropy", "logits=4x0", "at least one class"},
    {"softmax_cross_entropy", "logits=4x5 labels=3", "one label per row"},
    {"softmax_cross_entropy", "logits=4x5 labels=4x1", "one label per row"},
    {"softmax_cross_entropy", "logits=4x5 reduction=avg", "mean|sum|none"},
};

static void test_bad_specs(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof bad_specs / sizeof bad_specs[0]; k++) {
    opf_case c;
    opf_err e;
    int rc = opf_case_init(&c, ts_op(bad_specs[k].op), OPF_F32, bad_specs[k].spec, &e);
    if (rc != OPF_EINVAL) fail_msg("%s [%s]: rc %d, want OPF_EINVAL", bad_specs[k].op, bad_specs[k].spec, rc);
    if (!strstr(e.msg, bad_specs[k].needle))
      fail_msg("%s [%s]: message '%s' does not mention '%s'", bad_specs[k].op, bad_specs[k].spec,
               e.msg, bad_specs[k].needle);
  }
}

/* A label outside [0, C) (e.g. given by a user) is an error of the forward, not a wild read. */
static void test_sce_bad_label(void **state) {
  (void)state;
  const opf_op *op = ts_op("softmax_cross_entropy");
  opf_case c;
  ts_case_ready(&c, op, OPF_F64, "logits=4x5", 0, 1);
  ((int64_t *)c.in[1].data)[2] = 5;
  assert_int_equal(op->forward(&c), OPF_EINVAL);
  assert_non_null(strstr(c.err.msg, "label 5 of row 2 is outside [0, 5)"));
  ((int64_t *)c.in[1].data)[2] = -1;
  assert_int_equal(op->reference(&c), OPF_EINVAL);
  opf_case_release(&c);
}

/* ---- shapes and dtypes of outputs ---- */
static void expect_out(const char *op, opf_dtype dt, const char *spec, const char *shape,
                       opf_dtype out_dt) {
  opf_case c;
  opf_err e;
  char s[96];
  if (opf_case_init(&c, ts_op(op), dt, spec, &e)) fail_msg("%s [%s]: %s", op, spec, e.msg);
  opf_shape_str(&c.out[0], s, sizeof s);
  if (strcmp(s, shape) || c.out[0].dtype != out_dt)
    fail_msg("%s [%s]: output (%s) %s, want (%s) %s", op, spec, s, opf_dtype_name(c.out[0].dtype),
             shape, opf_dtype_name(out_dt));
}

static void test_output_shapes(void **state) {
  (void)state;
  expect_out("sum", OPF_I32, "x=4x5x6 axis=1", "4x6", OPF_I32);
  expect_out("sum", OPF_F32, "x=4x5x6 axis=1 keepdims=true", "4x1x6", OPF_F32);
  expect_out("mean", OPF_F64, "x=4x5x6 axis=-1", "4x5", OPF_F64);
  expect_out("max", OPF_I64, "x=4x5x6", "()", OPF_I64); /* default axis: all, a scalar */
  expect_out("max", OPF_F32, "x=4x5x6 axis=all keepdims=true", "1x1x1", OPF_F32);
  expect_out("argmax", OPF_F32, "x=4x5x6 axis=0", "5x6", OPF_I64);
  expect_out("softmax", OPF_F32, "x=4x5x6 axis=1", "4x5x6", OPF_F32);
  expect_out("softmax_cross_entropy", OPF_F32, "logits=8x3", "()", OPF_F32);
  expect_out("softmax_cross_entropy", OPF_F64, "logits=8x3 reduction=none", "8", OPF_F64);
  /* labels omitted: derived from logits */
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, ts_op("softmax_cross_entropy"), OPF_F32, "logits=8x3", &e))
    fail_msg("%s", e.msg);
  assert_int_equal(c.in[1].ndim, 1);
  assert_int_equal(c.in[1].shape[0], 8);
  assert_int_equal(c.in[1].dtype, OPF_I64);
}

/* ---- values the random inputs never produce ---- */
/* Build a case of op on spec with input 0 set to vals (as doubles). */
static void case_with(opf_case *c, const char *op, opf_dtype dt, const char *spec,
                      const double *vals, int with_grad) {
  ts_case_ready(c, ts_op(op), dt, spec, with_grad, 3);
  for (int64_t k = 0; k < opf_numel(&c->in[0]); k++) ts_set(&c->in[0], k, vals[k]);
}

static void test_integer_sum_wraps(void **state) {
  (void)state;
  opf_case c;
  const double v32[4] = {2147483647.0, 1, 2147483647.0, 2147483647.0};
  case_with(&c, "sum", OPF_I32, "x=1x4 axis=1", v32, 0);
  /* exact sum 3*(2^31-1)+1 = 6442450942 = 2^32 + 2147483646: wraps to 2147483646 */
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_int_equal(((int32_t *)c.out[0].data)[0], 2147483646);
  opf_case_release(&c);

  case_with(&c, "sum", OPF_I64, "x=3", (const double[]){0, 0, 0}, 0);
  int64_t *x = c.in[0].data;
  x[0] = INT64_MAX;
  x[1] = 2;
  x[2] = -1;
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_true(((int64_t *)c.out[0].data)[0] == INT64_MIN); /* 2^63 - 1 + 1 wraps */
  opf_case_release(&c);
}

/* argmax and the gradient of max go to the first maximal element, in every kernel path:
 * contiguous rows (long and short), column blocks, the wide-row view and segments. */
static void check_first_max(const char *spec, int64_t n, int64_t inner, int64_t outer) {
  /* every line along the axis holds 1 except two 5s at positions 3 and n-2 */
  const int64_t total = outer * n * inner;
  double *v = test_malloc((size_t)total * sizeof(double));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < n; k++)
      for (int64_t j = 0; j < inner; j++)
        v[(o * n + k) * inner + j] = (k == 3 || k == n - 2) ? 5 : 1;
  opf_case c;
  for (int d = 0; d < OPF_BOOL; d++) { /* the numeric dtypes */
    case_with(&c, "argmax", (opf_dtype)d, spec, v, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    for (int64_t e = 0; e < outer * inner; e++)
      if (((int64_t *)c.out[0].data)[e] != 3)
        fail_msg("argmax %s [%s]: output %lld is %lld, want 3", opf_dtype_name(d), spec,
                 (long long)e, (long long)((int64_t *)c.out[0].data)[e]);
    opf_case_release(&c);
  }
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    case_with(&c, "max", (opf_dtype)d, spec, v, 1);
    for (int64_t e = 0; e < outer * inner; e++) ts_set(&c.gout[0], e, 2.0 + (double)e);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_int_equal(c.op->backward(&c), OPF_OK);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < inner; j++) {
          double want = k == 3 ? 2.0 + (double)(o * inner + j) : 0;
          double got = ts_get(&c.gin[0], (o * n + k) * inner + j);
          if (got != want)
            fail_msg("max backward %s [%s]: dx[%lld,%lld,%lld] = %g, want %g", opf_dtype_name(d),
                     spec, (long long)o, (long long)k, (long long)j, got, want);
        }
    opf_case_release(&c);
  }
  test_free(v);
}

static void test_ties_first_occurrence(void **state) {
  (void)state;
  check_first_max("x=2x10 axis=1", 10, 1, 2);           /* short rows */
  check_first_max("x=70x10 axis=1", 10, 1, 70);         /* short rows, per-row backward */
  check_first_max("x=3x700 axis=1", 700, 1, 3);         /* long rows */
  check_first_max("x=1x300000 axis=1", 300000, 1, 1);   /* long row cut into segments */
  check_first_max("x=40x300 axis=0", 40, 300, 1);       /* column blocks */
  check_first_max("x=500x3 axis=0", 500, 3, 1);         /* wide rows of 86 x 3 */
  check_first_max("x=2x90000x3 axis=1", 90000, 3, 2);   /* wide rows, segments */
  check_first_max("x=5x6x4 axis=1", 6, 4, 5);           /* fewer rows than a wide row */
}

/* argmax and argmin of float32 rows of 64 elements and more (the AVX-512 one-pass kernel:
 * four accumulators of 16 lanes, a masked tail of 1..63) against a plain first-occurrence
 * scan: values drawn from five levels so every row has ties spread over lanes and
 * accumulators, lengths around each boundary, a row of zeros of both signs (index 0), a row
 * of -inf (argmax 0) and +inf (argmin 0), the extreme in the last element only. */
static void test_arg_rows_f32(void **state) {
  (void)state;
  const int64_t ns[] = {64, 65, 79, 80, 127, 128, 129, 191, 192, 200, 1061};
  const int64_t rows = 9;
  for (size_t q = 0; q < sizeof ns / sizeof ns[0]; q++) {
    const int64_t n = ns[q];
    double *v = test_malloc((size_t)(rows * n) * sizeof(double));
    uint64_t st = 0x9e3779b97f4a7c15ull * (uint64_t)(q + 1);
    for (int64_t k = 0; k < rows * n; k++) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      v[k] = (double)((st >> 33) % 5) - 2;
    }
    for (int64_t k = 0; k < n; k++) { /* rows 0..3: the special rows */
      v[k] = (k % 3) ? 0.0 : -0.0;
      v[n + k] = -INFINITY;
      v[2 * n + k] = INFINITY;
      v[3 * n + k] = k == n - 1 ? 7 : 1;
    }
    char spec[48];
    snprintf(spec, sizeof spec, "x=%lldx%lld axis=1", (long long)rows, (long long)n);
    for (int mn = 0; mn < 2; mn++) {
      opf_case c;
      case_with(&c, mn ? "argmin" : "argmax", OPF_F32, spec, v, 0);
      assert_int_equal(c.op->forward(&c), OPF_OK);
      for (int64_t r = 0; r < rows; r++) {
        int64_t want = 0;
        for (int64_t k = 1; k < n; k++)
          if (mn ? v[r * n + k] < v[r * n + want] : v[r * n + k] > v[r * n + want]) want = k;
        const int64_t got = ((int64_t *)c.out[0].data)[r];
        if (got != want)
          fail_msg("%s [%s]: row %lld: %lld, want %lld", mn ? "argmin" : "argmax", spec,
                   (long long)r, (long long)got, (long long)want);
      }
      opf_case_release(&c);
    }
    test_free(v);
  }
}

/* The empty input is not even allocated: the kernels must not read it. */
static void run_empty(const char *op, opf_dtype dt, opf_case *c) {
  opf_err e;
  if (opf_case_init(c, ts_op(op), dt, "x=3x0 axis=1", &e)) fail_msg("%s", e.msg);
  if (opf_tensor_alloc(&c->out[0], &e)) fail_msg("%s", e.msg);
  memset(c->out[0].data, 0x5a, c->out[0].nbytes);
  assert_int_equal(c->op->forward(c), OPF_OK);
}

static void test_empty_axis(void **state) {
  (void)state;
  opf_case c;
  run_empty("mean", OPF_F32, &c);
  for (int k = 0; k < 3; k++) assert_true(isnan(((float *)c.out[0].data)[k]));
  opf_tensor_free(&c.out[0]);
  run_empty("sum", OPF_I64, &c);
  for (int k = 0; k < 3; k++) assert_int_equal(((int64_t *)c.out[0].data)[k], 0);
  opf_tensor_free(&c.out[0]);
}

/* ---- the same result at 1 and 2 threads (tasks depend on the shape only) ---- */
static const char *const thread_specs[][2] = {
    {"sum", "x=301x517 axis=all"},  {"sum", "x=200000x3 axis=0"}, {"mean", "x=1024x700 axis=0"},
    {"max", "x=3x1000x70 axis=1"},  {"argmax", "x=2x300001 axis=1"},
    {"softmax", "x=700x300 axis=0"}, {"log_softmax", "x=20000x10 axis=-1"},
    {"softmax_cross_entropy", "logits=3000x100"},
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
    if (memcmp(a.out[0].data, b.out[0].data, a.out[0].nbytes))
      fail_msg("%s [%s]: 1 and 2 threads give different results", op->name, thread_specs[k][1]);
    opf_case_release(&a);
    opf_case_release(&b);
  }
  omp_set_num_threads(saved);
}

/* ---- float32 backward against float64 backward on the same (float32-representable) inputs,
 * through the short-row, long-row, column-block and wide-row paths ---- */
static const char *const bwd_specs[][2] = {
    {"sum", "x=100x10 axis=1"},       {"sum", "x=400x3 axis=0"},
    {"mean", "x=37x300 axis=0"},      {"mean", "x=5x70 axis=all"},
    {"max", "x=100x10 axis=1"},       {"max", "x=50x300 axis=0"},
    {"softmax", "x=100x10 axis=-1"},  {"softmax", "x=9x300 axis=-1"},
    {"softmax", "x=400x3 axis=0"},    {"softmax", "x=20x300 axis=0"},
    {"log_softmax", "x=100x10 axis=-1"}, {"log_softmax", "x=9x300 axis=-1"},
    {"log_softmax", "x=400x3 axis=0"},   {"log_softmax", "x=20x300 axis=0"},
    {"softmax_cross_entropy", "logits=100x10"},
    {"softmax_cross_entropy", "logits=9x300 reduction=none"},
    {"softmax_cross_entropy", "logits=9x70 reduction=sum"},
};

static void test_float32_backward(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof bwd_specs / sizeof bwd_specs[0]; k++) {
    const opf_op *op = ts_op(bwd_specs[k][0]);
    opf_case s, d;
    ts_case_ready(&s, op, OPF_F32, bwd_specs[k][1], 1, 11);
    ts_case_ready(&d, op, OPF_F64, bwd_specs[k][1], 1, 11);
    /* same values: the float64 case gets the float32 inputs and output gradients */
    for (int i = 0; i < op->n_in; i++)
      for (int64_t e = 0; e < opf_numel(&s.in[i]); e++) ts_set(&d.in[i], e, ts_get(&s.in[i], e));
    for (int64_t e = 0; e < opf_numel(&s.gout[0]); e++) ts_set(&d.gout[0], e, ts_get(&s.gout[0], e));
    assert_int_equal(op->forward(&s), OPF_OK);
    assert_int_equal(op->forward(&d), OPF_OK);
    assert_int_equal(op->backward(&s), OPF_OK);
    assert_int_equal(op->backward(&d), OPF_OK);
    opf_tensor want;
    opf_err e;
    opf_tensor_set_shape(&want, OPF_F32, d.gin[0].ndim, d.gin[0].shape);
    if (opf_tensor_alloc(&want, &e)) fail_msg("%s", e.msg);
    for (int64_t i = 0; i < opf_numel(&want); i++) ts_set(&want, i, ts_get(&d.gin[0], i));
    char msg[256];
    if (ts_compare(&s.gin[0], &want, 1e-4, msg, sizeof msg))
      fail_msg("%s [%s]: float32 backward differs from float64: %s", op->name, bwd_specs[k][1], msg);
    opf_tensor_free(&want);
    opf_case_release(&s);
    opf_case_release(&d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),     cmocka_unit_test(test_bad_specs),
      cmocka_unit_test(test_sce_bad_label),     cmocka_unit_test(test_output_shapes),
      cmocka_unit_test(test_integer_sum_wraps), cmocka_unit_test(test_ties_first_occurrence),
      cmocka_unit_test(test_arg_rows_f32),
      cmocka_unit_test(test_empty_axis),        cmocka_unit_test(test_thread_independent),
      cmocka_unit_test(test_float32_backward),
  };
  return cmocka_run_group_tests_name("models_reduce", tests, NULL, NULL);
}

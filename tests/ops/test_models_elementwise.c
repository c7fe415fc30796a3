/* test_models_elementwise.c: what the generic operator driver cannot see for add, sub, mul,
 * div, exp, log, sigmoid and mse_loss: golden flops/bytes models, the error paths of bad shapes
 * and params, the threaded gradient reductions at sizes above the parallel threshold, special
 * values of the vectorised exp/log, and integer division semantics. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* flops and bytes of one pass at spec must equal the hand-derived values. */
static void check_models(const char *name, opf_dtype dt, const char *spec, double ffwd,
                         double fbwd, double bfwd, double bbwd) {
  const opf_op *op = ts_op(name);
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, dt, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  const double want[2][3] = {{ffwd, fbwd, ffwd + fbwd}, {bfwd, bbwd, bfwd + bbwd}};
  for (int p = 0; p < OPF_NPASSES; p++) {
    double f = op->flops(&c, (opf_pass)p), b = op->bytes(&c, (opf_pass)p);
    if (f != want[0][p] || b != want[1][p])
      fail_msg("%s [%s] %s: flops %.0f bytes %.0f, want %.0f and %.0f", name, spec,
               opf_pass_name((opf_pass)p), f, b, want[0][p], want[1][p]);
  }
}

static void test_models(void **state) {
  (void)state;
  const double N = 1048576; /* 1024 x 1024 */
  /* add, row broadcast, float32: fwd one add per output. bwd: da = g needs no arithmetic,
   * db sums 1024 rows into 1024 columns: N - 1024 adds. Bytes: fwd a + b + y; bwd g + db
   * (add's terms do not read a or b; da is g itself, a view: nothing written). */
  check_models("add", OPF_F32, "a=1024x1024 b=1x1024", N, N - 1024, (2 * N + 1024) * 4,
               (N + 1024) * 4);
  /* sub, both broadcast (10000x1 - 1x100 -> 10000x100), float32: fwd 1e6. bwd: da sums rows,
   * 1e6 - 1e4 adds; db negates 1e6 terms and sums them into 100, 1e6 + 1e6 - 100. */
  check_models("sub", OPF_F32, "a=10000x1 b=1x100", 1e6, (1e6 - 1e4) + (2e6 - 100),
               (1e6 + 1e4 + 100) * 4, (1e6 + 1e4 + 100) * 4);
  /* mul, same shape, float32: bwd one multiply per element per input, nothing to reduce;
   * bytes bwd g + a + b + da + db. */
  check_models("mul", OPF_F32, "a=1024x1024 b=1024x1024", N, 2 * N, 3 * N * 4, 5 * N * 4);
  /* div, column broadcast, float64: bwd da = g/b (N), db = -(g a)/(b b) (3N) summed into 1024
   * (N - 1024). Bytes bwd g + a + b + da + db with a, b and da, db N and 1024 elements. */
  check_models("div", OPF_F64, "a=1024x1024 b=1024x1", N, 5 * N - 1024, (2 * N + 1024) * 8,
               (3 * N + 2048) * 8);
  /* Scalar b: db sums all N terms into one element (N - 1 adds). */
  check_models("add", OPF_F32, "a=1024x1024 b=()", N, N - 1, (2 * N + 1) * 4, (N + 1) * 4);
  /* exp, log: one transcendental fwd, one multiply/divide bwd; bytes x + y fwd, dy + x-or-y +
   * dx bwd. sigmoid: 3 and 3 per element. */
  check_models("exp", OPF_F32, "x=1024x1024", N, N, 2 * N * 4, 3 * N * 4);
  check_models("log", OPF_F64, "x=1024x1024", N, N, 2 * N * 8, 3 * N * 8);
  check_models("sigmoid", OPF_F32, "x=1024x1024", 3 * N, 3 * N, 2 * N * 4, 3 * N * 4);
  /* mse_loss mean: fwd subtract, square, accumulate (3N), reads pred and target, writes one
   * scalar; bwd 3N, reads pred, target and the scalar gradient, writes two gradients. */
  check_models("mse_loss", OPF_F32, "pred=1024x1024 target=1024x1024", 3 * N, 3 * N,
               (2 * N + 1) * 4, (4 * N + 1) * 4);
  check_models("mse_loss", OPF_F32, "pred=1024x1024 target=1024x1024 reduction=none", 2 * N,
               3 * N, 3 * N * 4, 5 * N * 4);
}

/* spec must fail in opf_case_init with code and a message containing what. */
static void check_rejects(const char *name, opf_dtype dt, const char *spec, int code,
                          const char *what) {
  opf_case c;
  opf_err e;
  int rc = opf_case_init(&c, ts_op(name), dt, spec, &e);
  if (rc != code) fail_msg("%s [%s]: returned %d, want %d (%s)", name, spec, rc, code, e.msg);
  if (!strstr(e.msg, what))
    fail_msg("%s [%s]: message '%s' does not mention '%s'", name, spec, e.msg, what);
}

static void test_errors(void **state) {
  (void)state;
  for (const char *const *n = (const char *const[]){"add", "sub", "mul", "div", NULL}; *n; n++) {
    check_rejects(*n, OPF_F32, "a=1024x1024 b=1023x1024", OPF_EINVAL, "1024x1024 and 1023x1024");
    check_rejects(*n, OPF_I32, "a=3x4 b=5", OPF_EINVAL, "cannot be broadcast");
    check_rejects(*n, OPF_F64, "a=2x3x4 b=3x1x5", OPF_EINVAL, "cannot be broadcast");
    check_rejects(*n, OPF_F32, "a=16x16", OPF_EINVAL, "'b' needs a shape");
  }
  check_rejects("mse_loss", OPF_F32, "pred=16x16 target=16x15", OPF_EINVAL,
                "'pred' 16x16 and 'target' 16x15 must have the same shape");
  check_rejects("mse_loss", OPF_F32, "pred=16x16 target=1x16", OPF_EINVAL, "same shape");
  check_rejects("mse_loss", OPF_F32, "pred=4 target=4 reduction=avg", OPF_EINVAL,
                "mean|sum|none");
  check_rejects("exp", OPF_I32, "x=16", OPF_EUNSUPPORTED, "does not support dtype");
  check_rejects("log", OPF_F32, "y=16", OPF_ENOTFOUND, "no input or param 'y'");
  check_rejects("sigmoid", OPF_F32, "", OPF_EINVAL, "'x' needs a shape");
}

/* ---- gradient reductions above the parallel threshold, against direct sums ---- */
/* Index into t (broadcast to y's shape) of flat output index i. */
static int64_t bcast_index(const opf_tensor *t, const opf_tensor *y, int64_t i) {
  int64_t off = 0, stride = 1;
  for (int k = y->ndim - 1; k >= 0; k--) {
    int64_t ik = i % y->shape[k];
    i /= y->shape[k];
    int kt = t->ndim - y->ndim + k;
    if (kt < 0) break;
    if (t->shape[kt] != 1) off += ik * stride;
    stride *= t->shape[kt];
  }
  return off;
}

static double el(const opf_tensor *t, const opf_tensor *y, int64_t i) {
  return ((const double *)t->data)[bcast_index(t, y, i)];
}

static void check_reduction(const char *name, const char *spec, int threads) {
  const opf_op *op = ts_op(name);
  opf_case c;
  omp_set_num_threads(threads);
  ts_case_ready(&c, op, OPF_F64, spec, 1, 5);
  if (op->forward(&c) || op->backward(&c)) fail_msg("%s [%s]: %s", name, spec, c.err.msg);
  const opf_tensor *y = &c.out[0], *g = &c.gout[0];
  for (int i = 0; i < 2; i++) {
    int64_t nx = opf_numel(&c.in[i]), ny = opf_numel(y);
    double *want = calloc((size_t)nx, sizeof *want);
    for (int64_t k = 0; k < ny; k++) {
      double gk = ((const double *)g->data)[k], a = el(&c.in[0], y, k), b = el(&c.in[1], y, k);
      double t = !strcmp(name, "add") ? gk
                 : !strcmp(name, "sub") ? (i ? -gk : gk)
                 : !strcmp(name, "mul") ? (i ? gk * a : gk * b)
                                        : (i ? -gk * a / (b * b) : gk / b);
      want[bcast_index(&c.in[i], y, k)] += t;
    }
    for (int64_t k = 0; k < nx; k++) {
      double got = ts_get(&c.gin[i], k); /* through the strides of a gradient view */
      if (!(fabs(got - want[k]) <= 1e-9 * (1 + fabs(want[k]))))
        fail_msg("%s [%s] %d threads: d%c[%lld] = %.12g, want %.12g", name, spec, threads,
                 "ab"[i], (long long)k, got, want[k]);
    }
    free(want);
  }
  opf_case_release(&c);
}

static void test_threaded_reductions(void **state) {
  (void)state;
  /* row, column, scalar, both-broadcast and 3-D patterns; every split strategy of bcast.h:
   * rows split with whole-row sums, row blocks into partial sums, inner-dim partials. */
  static const char *specs[] = {"a=301x517 b=1x517", "a=301x517 b=301x1", "a=301x517 b=()",
                                "a=600x1 b=1x333",   "a=5x1x7001 b=5x9x1", "a=3x40000 b=3x1",
                                "a=70000 b=70000"};
  static const char *ops[] = {"add", "sub", "mul", "div"};
  int maxt = omp_get_max_threads();
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
    for (size_t o = 0; o < 4; o++)
      for (int t = 1; t <= 2; t++) check_reduction(ops[o], specs[s], t);
  omp_set_num_threads(maxt);
}

/* ---- special values through the vectorised exp / log / sigmoid ---- */
static void check_specials(const char *name, opf_dtype dt, double (*ref)(double)) {
  static const double xs[] = {0.0,   -0.0,   INFINITY, -INFINITY, NAN,  -1.0,    1e-310,
                              1e-40, 1e-320, 88.72,    88.73,     -103, -745.1,  709.7,
                              710.0, -800.0, 800.0,    0.5,       2.0,  1e300,   -87.5};
  const int n = (int)(sizeof xs / sizeof *xs);
  const opf_op *op = ts_op(name);
  char spec[32];
  snprintf(spec, sizeof spec, "x=%d", n);
  opf_case c;
  ts_case_ready(&c, op, dt, spec, 0, 1);
  for (int i = 0; i < n; i++) ts_set(&c.in[0], i, xs[i]);
  if (op->forward(&c)) fail_msg("%s: %s", name, c.err.msg);
  for (int i = 0; i < n; i++) {
    double x = ts_get(&c.in[0], i); /* as rounded to the dtype */
    double want = dt == OPF_F32 ? (double)(float)ref(x) : ref(x), got = ts_get(&c.out[0], i);
    double rtol = dt == OPF_F32 ? 3e-7 : 5e-16; /* 2.5 ulp */
    int ok = isnan(want)                 ? isnan(got)
             : isinf(want) || want == 0 ? got == want
                                        : fabs(got - want) <= rtol * fabs(want);
    /* results in the subnormal range have fewer bits: allow one subnormal ulp */
    if (!ok && dt == OPF_F32 && fabs(want) < 1.2e-38) ok = fabs(got - want) <= 1.5e-45;
    if (!ok && dt == OPF_F64 && fabs(want) < 2.3e-308) ok = fabs(got - want) <= 5e-324;
    if (!ok) fail_msg("%s %s: f(%.9g) = %.17g, want %.17g", name, opf_dtype_name(dt), x, got, want);
  }
  opf_case_release(&c);
}

static double sigmoid_ref(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }

static void test_special_values(void **state) {
  (void)state;
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    check_specials("exp", (opf_dtype)d, exp);
    check_specials("log", (opf_dtype)d, log);
    check_specials("sigmoid", (opf_dtype)d, sigmoid_ref);
  }
}

/* ---- integer division truncates toward zero (C and NumPy's trunc-divide semantics) ---- */
static void test_int_division(void **state) {
  (void)state;
  static const int64_t a[] = {7, -7, 7, -7, 2147483647, -2147483647, 0, 9};
  static const int64_t b[] = {2, 2, -2, -2, 3, 7, -5, 9};
  static const int64_t q[] = {3, -3, -3, 3, 715827882, -306783378, 0, 1};
  for (int d = OPF_I32; d <= OPF_I64; d++) {
    opf_case c;
    ts_case_ready(&c, ts_op("div"), (opf_dtype)d, "a=8 b=8", 0, 1);
    for (int i = 0; i < 8; i++) {
      ts_set(&c.in[0], i, (double)a[i]);
      ts_set(&c.in[1], i, (double)b[i]);
    }
    if (c.op->forward(&c)) fail_msg("div: %s", c.err.msg);
    for (int i = 0; i < 8; i++)
      if (ts_get(&c.out[0], i) != (double)q[i])
        fail_msg("div %s: %lld / %lld = %.0f, want %lld", opf_dtype_name((opf_dtype)d),
                 (long long)a[i], (long long)b[i], ts_get(&c.out[0], i), (long long)q[i]);
    opf_case_release(&c);
  }
}

/* int64 quotients at the edges of the float64 fast path: below 2^53 it must stay exact, a
 * block with a larger operand must fall back to the integer divide. */
static void test_int64_division_range(void **state) {
  (void)state;
  const int64_t big = INT64_C(1) << 53, huge = INT64_C(4611686018427387905); /* 2^62 + 1 */
  const int64_t a[] = {big - 1, -(big - 1), big - 1, 12345, huge, -huge, huge, 7};
  const int64_t b[] = {3, big - 2, big - 1, big - 3, 3, 7, huge - 2, -7};
  for (int blocks = 0; blocks < 2; blocks++) {
    /* blocks 0: the first four (all < 2^53) alone; 1: all eight in one block */
    int n = blocks ? 8 : 4;
    char spec[32];
    snprintf(spec, sizeof spec, "a=%d b=%d", n, n);
    opf_case c;
    ts_case_ready(&c, ts_op("div"), OPF_I64, spec, 0, 1);
    memcpy(c.in[0].data, a, sizeof(int64_t) * (size_t)n);
    memcpy(c.in[1].data, b, sizeof(int64_t) * (size_t)n);
    if (c.op->forward(&c)) fail_msg("div: %s", c.err.msg);
    for (int i = 0; i < n; i++) {
      int64_t got = ((const int64_t *)c.out[0].data)[i];
      if (got != a[i] / b[i])
        fail_msg("div int64: %lld / %lld = %lld, want %lld", (long long)a[i], (long long)b[i],
                 (long long)got, (long long)(a[i] / b[i]));
    }
    opf_case_release(&c);
  }
}

/* The divisor generator keeps |b| away from zero in every dtype. */
static void test_div_divisor_range(void **state) {
  (void)state;
  for (int d = 0; d < OPF_BOOL; d++) { /* the numeric dtypes */
    opf_case c;
    ts_case_ready(&c, ts_op("div"), (opf_dtype)d, "a=1 b=100000", 0, 3);
    double lo = d <= OPF_F64 ? 0.5 : 1, hi = d <= OPF_F64 ? 2 : 9;
    int neg = 0;
    for (int64_t k = 0; k < 100000; k++) {
      double v = ts_get(&c.in[1], k);
      if (!(fabs(v) >= lo && fabs(v) <= hi))
        fail_msg("div divisor %g outside +-[%g, %g]", v, lo, hi);
      neg += v < 0;
    }
    assert_true(neg > 40000 && neg < 60000); /* both signs */
    opf_case_release(&c);
  }
}

/* An empty broadcast (0x16 + 1x16): nothing to compute forward, and the gradient of the
 * broadcast input is a sum over no rows: zero, not left as it was. */
static void test_empty_broadcast(void **state) {
  (void)state;
  opf_case c;
  ts_case_ready(&c, ts_op("mul"), OPF_F64, "a=0x16 b=1x16", 1, 2);
  for (int k = 0; k < 16; k++) ts_set(&c.gin[1], k, 12345.0);
  if (c.op->forward(&c) || c.op->backward(&c)) fail_msg("mul: %s", c.err.msg);
  for (int k = 0; k < 16; k++) assert_true(ts_get(&c.gin[1], k) == 0.0);
  /* opf_tensor_free treats nbytes == 0 as a view and does not free the unique pointer that
   * opf_alloc(0) returned; free the empty tensors here so the sanitizer build stays clean. */
  opf_tensor *empty[] = {&c.in[0], &c.out[0], &c.gin[0], &c.gout[0]};
  for (int i = 0; i < 4; i++) {
    opf_free(empty[i]->data);
    empty[i]->data = NULL;
  }
  opf_case_release(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_models),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_threaded_reductions),
      cmocka_unit_test(test_special_values),
      cmocka_unit_test(test_int_division),
      cmocka_unit_test(test_int64_division_range),
      cmocka_unit_test(test_div_divisor_range),
      cmocka_unit_test(test_empty_broadcast),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

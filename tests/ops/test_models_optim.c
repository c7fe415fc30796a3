/* test_models_optim.c: what the generic operator driver cannot see for the optimizer updates
 * (sgd ... lamb) and the sequence operators: golden flops/bytes models, shape inference and
 * the error paths of bad shapes and params, the runtime check of the sequence lengths, the
 * generated lengths, and that 100000 repeated in-place updates stay finite and normal. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* flops and bytes of each pass at spec must equal the hand-derived values. */
static void check_models(const char *name, opf_dtype dt, const char *spec, const double *flops,
                         const double *bytes) {
  const opf_op *op = ts_op(name);
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, dt, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  for (int p = 0; p < OPF_NPASSES; p++) {
    double f = op->flops(&c, (opf_pass)p), b = op->bytes(&c, (opf_pass)p);
    if (f != flops[p] || b != bytes[p])
      fail_msg("%s [%s] %s: flops %.0f bytes %.0f, want %.0f and %.0f", name, spec,
               opf_pass_name((opf_pass)p), f, b, flops[p], bytes[p]);
  }
}

/* An optimizer update: per_elem flops and `arrays` sweeps of N elements of es bytes, reported
 * for every pass (there is no backward; the update is the whole training step). */
static void check_update(const char *name, opf_dtype dt, const char *spec, double per_elem,
                         double arrays) {
  const double N = 1048576, es = dt == OPF_F32 ? 4 : 8; /* 1024 x 1024 */
  const double f[3] = {per_elem * N, per_elem * N, per_elem * N};
  const double b[3] = {arrays * N * es, arrays * N * es, arrays * N * es};
  check_models(name, dt, spec, f, b);
}

static void test_optimizer_models(void **state) {
  (void)state;
  const char *w = "weight=1024x1024";
  /* sgd: rescale, (1 - lr wd) w, lr g, subtract = 4; reads weight and grad, writes weight:
   * 3 sweeps. Clipping adds a min and a max. */
  check_update("sgd", OPF_F32, w, 4, 3);
  check_update("sgd", OPF_F32, "weight=1024x1024 clip_gradient=0.1", 6, 3);
  check_update("sgd", OPF_F64, w, 4, 3);
  /* sgd_momentum: rescale, mu mom, (lr wd) w, lr g, 2 subtracts, w + mom = 7; reads weight,
   * grad, mom and writes weight, mom: 5 sweeps. */
  check_update("sgd_momentum", OPF_F32, w, 7, 5);
  /* nag: rescale, wd w, add, lr g, mu mom, subtract, mu mom, add, subtract = 9; 5 sweeps. */
  check_update("nag", OPF_F32, w, 9, 5);
  /* adam: g = rescale grad + wd w (3), mean (3), var (4), w: sqrt, + eps, divide, lr *,
   * subtract (5) = 15; reads 4 arrays, writes weight, mean, var: 7 sweeps. */
  check_update("adam", OPF_F32, w, 15, 7);
  check_update("adam", OPF_F64, "weight=1024x1024 clip_gradient=1", 17, 7);
  /* adamw: rescale (1), mean 3, var 4, w: sqrt, + eps, divide, lr *, wd w, add, eta *,
   * subtract (8) = 16; 7 sweeps. */
  check_update("adamw", OPF_F32, w, 16, 7);
  /* lamb: rescale (1), mean 3, var 4, d: 2 bias corrections, sqrt, + eps, divide, wd w, add
   * (7), both squared norms (4), update (2) = 21; two passes: 6 + 4 = 10 sweeps. */
  check_update("lamb", OPF_F32, w, 21, 10);
  check_update("lamb", OPF_F64, "weight=1024x1024 clip_gradient=0.5", 23, 10);
  /* rmsprop: g (3), n (4), w: + eps, sqrt, divide, lr *, subtract (5) = 12; reads weight,
   * grad, n, writes weight, n: 5 sweeps. Both clippings on: +4. */
  check_update("rmsprop", OPF_F32, w, 12, 5);
  check_update("rmsprop", OPF_F32, "weight=1024x1024 clip_gradient=1 clip_weights=2", 16, 5);
  /* rmsprop_centered: g 3, n 4, gm 3, delta 8, w + delta 1 = 19; 5 read, 4 written: 9. */
  check_update("rmsprop_centered", OPF_F32, w, 19, 9);
  /* adagrad: rescale 1, history 2, w 7 = 10; 5 sweeps. */
  check_update("adagrad", OPF_F32, w, 10, 5);
  /* ftrl: rescale 1, g^2 / n + g^2 / two roots 4, z 5, w 10 = 20; 4 read, 3 written: 7. */
  check_update("ftrl", OPF_F32, w, 20, 7);
}

static void test_sequence_models(void **state) {
  (void)state;
  /* data 32x32x512 float32: N = 524288 elements = 2097152 bytes; 32 int64 lengths = 256 B. */
  const double n = 2097152, len = 256, zero[3] = {0, 0, 0};
  /* mask: each pass writes N and reads the valid rows, (T + 1) / 2T = 33/64 of N on average
   * for lengths uniform in [1, 32]. */
  const double mask = n + n * 33 / 64 + len;
  check_models("sequence_mask", OPF_F32, "data=32x32x512", zero,
               (const double[]){mask, mask, 2 * mask});
  /* without lengths: all of N read, no lengths. */
  check_models("sequence_mask", OPF_F32, "data=32x32x512 use_sequence_length=false", zero,
               (const double[]){2 * n, 2 * n, 4 * n});
  /* float lengths are 4 bytes each in float32. */
  const double maskf = n + n * 33 / 64 + 128;
  check_models("sequence_mask", OPF_F32, "data=32x32x512 length_dtype=float", zero,
               (const double[]){maskf, maskf, 2 * maskf});
  /* last: fwd reads 32 rows of 512 and writes them (2 x 65536 B); bwd reads the 65536-byte
   * gradient and writes all of d data. */
  const double bc = 65536, lf = 2 * bc + len, lb = bc + n + len;
  check_models("sequence_last", OPF_F32, "data=32x32x512", zero, (const double[]){lf, lb, lf + lb});
  /* reverse: each pass reads and writes N. float64 doubles the data bytes. */
  const double rv = 2 * 2 * n + len;
  check_models("sequence_reverse", OPF_F64, "data=32x32x512", zero,
               (const double[]){rv, rv, 2 * rv});
}

/* The case's output shape as a string. */
static void expect_out(const char *name, const char *spec, int out, const char *want) {
  opf_case c;
  opf_err e;
  char buf[96];
  if (opf_case_init(&c, ts_op(name), OPF_F32, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  assert_string_equal(opf_shape_str(&c.out[out], buf, sizeof buf), want);
}

static void test_shapes(void **state) {
  (void)state;
  /* Every optimizer input follows the first one given, so one shape resizes the update. */
  expect_out("adam", "weight=7x9", 2, "7x9");
  expect_out("adam", "var=8x3", 0, "8x3");
  expect_out("rmsprop_centered", "delta=5", 3, "5");
  expect_out("sequence_last", "data=32x8x512", 0, "8x512");
  expect_out("sequence_last", "data=8x32x512 axis=1", 0, "8x512");
  expect_out("sequence_last", "data=6x4", 0, "4");
  expect_out("sequence_last", "data=6x4x2x3", 0, "4x2x3");
  expect_out("sequence_reverse", "data=6x4x2x3 axis=1", 0, "6x4x2x3");
  /* The length input's dtype follows length_dtype. */
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, ts_op("sequence_mask"), OPF_F64, "data=4x3x2 length_dtype=float", &e))
    fail_msg("%s", e.msg);
  assert_int_equal(c.in[1].dtype, OPF_F64);
  assert_int_equal(c.in[1].shape[0], 3);
  if (opf_case_init(&c, ts_op("sequence_mask"), OPF_F32, "data=4x3x2 axis=1", &e))
    fail_msg("%s", e.msg);
  assert_int_equal(c.in[1].dtype, OPF_I64);
  assert_int_equal(c.in[1].shape[0], 4);
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

static const char *const optimizers[] = {"sgd",     "sgd_momentum",     "nag",
                                         "adam",    "adamw",            "lamb",
                                         "rmsprop", "rmsprop_centered", "adagrad",
                                         "ftrl",    NULL};

static void test_errors(void **state) {
  (void)state;
  for (const char *const *o = optimizers; *o; o++) {
    ts_expect_einval(*o, "weight=16x16 grad=16x15",
                     "'weight' 16x16 and 'grad' 16x15 must have the same shape");
    ts_expect_einval(*o, "weight=16x16 grad=16", "same shape");
    ts_expect_einval(*o, "", "'weight' needs a shape");
    ts_expect_einval(*o, "weight=4 lr=-1", "param 'lr'");
    ts_expect_einval(*o, "weight=4 wd=11", "outside its range");
    check_rejects(*o, OPF_I32, "weight=4", OPF_EUNSUPPORTED, "does not support dtype");
  }
  ts_expect_einval("adam", "weight=4x4 mean=4x4 var=4x5", "'weight' 4x4 and 'var' 4x5");
  ts_expect_einval("adam", "weight=4 beta1=1.5",
                   "param 'beta1' of 'adam' is 1.5, outside its range [0, 1]");
  ts_expect_einval("rmsprop_centered", "weight=3x3 delta=3x3x1", "'delta' 3x3x1");
  ts_expect_einval("lamb", "weight=4 lower_bound=2 upper_bound=1",
                   "lower_bound 2 is above upper_bound 1");
  ts_expect_einval("lamb", "weight=4 beta1=1",
                   "bias_correction needs beta1 and beta2 below 1");
  ts_expect_einval("lamb", "weight=4 beta2=1 t=3", "1 - beta^t would be 0");
  ts_expect_einval("lamb", "weight=4 t=0", "param 't'");
  ts_expect_einval("lamb", "weight=4 bias_correction=maybe", "must be true or false");
  ts_expect_einval("ftrl", "weight=4 lr=0", "ftrl divides by lr: lr must be positive");
  check_rejects("sgd", OPF_F32, "weight=4 momentum=0.9", OPF_ENOTFOUND,
                "no input or param 'momentum'");
  /* Accepted corner cases. */
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, ts_op("lamb"), OPF_F32, "weight=4 beta1=1 bias_correction=false", &e) ||
      opf_case_init(&c, ts_op("lamb"), OPF_F32, "weight=4 lower_bound=1 upper_bound=1", &e))
    fail_msg("%s", e.msg);

  for (const char *const *s = (const char *const[]){"sequence_mask", "sequence_last",
                                                     "sequence_reverse", NULL};
       *s; s++) {
    ts_expect_einval(*s, "data=16", "'data' 16 must have at least 2 dims (T, B, ...)");
    ts_expect_einval(*s, "data=4x3x2 sequence_length=4",
                     "'sequence_length' 4 must be (B,) = (3) for 'data' 4x3x2 with axis=0");
    ts_expect_einval(*s, "data=4x3x2 axis=1 sequence_length=3", "must be (B,) = (4)");
    ts_expect_einval(*s, "data=4x3x2 sequence_length=3x1", "'sequence_length' 3x1");
    ts_expect_einval(*s, "data=0x3x2", "'data' 0x3x2 has no time steps on axis 0");
    ts_expect_einval(*s, "data=4x3 sequence_length=none",
                     "use_sequence_length=true needs the 'sequence_length' input");
    ts_expect_einval(*s, "data=4x3 axis=2", "param 'axis'");
    ts_expect_einval(*s, "data=4x3 axis=-1", "outside its range [0, 1]");
    ts_expect_einval(*s, "data=4x3 length_dtype=int32", "int64|float");
    ts_expect_einval(*s, "", "'data' needs a shape");
    if (opf_case_init(&c, ts_op(*s), OPF_F32,
                      "data=4x3 sequence_length=none use_sequence_length=false", &e))
      fail_msg("%s: %s", *s, e.msg);
  }
  ts_expect_einval("sequence_mask", "data=4x3 value=1e31", "param 'value'");
}

/* Generated lengths are integers in [1, T], in the requested dtype, and not all equal. */
static void test_lengths(void **state) {
  (void)state;
  for (int f = 0; f < 2; f++) {
    opf_case c;
    ts_case_ready(&c, ts_op("sequence_reverse"), OPF_F32,
                  f ? "data=9x500x2 length_dtype=float" : "data=9x500x2", 0, 3);
    int64_t lo = 100, hi = -1;
    for (int64_t b = 0; b < 500; b++) {
      double v = f ? ((const float *)c.in[1].data)[b] : (double)((const int64_t *)c.in[1].data)[b];
      assert_true(v == floor(v));
      lo = (int64_t)v < lo ? (int64_t)v : lo;
      hi = (int64_t)v > hi ? (int64_t)v : hi;
    }
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 9);
    opf_case_release(&c);
  }
}

/* Set sequence_length[0] of a ready case to v (int64 lengths). */
static void set_len0(opf_case *c, int64_t v) { ((int64_t *)c->in[1].data)[0] = v; }

/* Lengths outside the valid range are an error of the call, not an out-of-bounds access;
 * length 0 is valid for mask and reverse (nothing kept / nothing reversed), not for last. */
static void test_bad_lengths(void **state) {
  (void)state;
  const char *names[] = {"sequence_mask", "sequence_last", "sequence_reverse"};
  for (int k = 0; k < 3; k++) {
    const opf_op *op = ts_op(names[k]);
    opf_case c;
    ts_case_ready(&c, op, OPF_F32, "data=5x3x4", 1, 1);
    set_len0(&c, 6);
    assert_int_equal(op->forward(&c), OPF_EINVAL);
    assert_non_null(strstr(c.err.msg, "sequence_length[0] = 6 is outside"));
    assert_int_equal(op->backward(&c), OPF_EINVAL);
    set_len0(&c, -1);
    assert_int_equal(op->forward(&c), OPF_EINVAL);
    set_len0(&c, 0);
    int want = k == 1 ? OPF_EINVAL : OPF_OK;
    assert_int_equal(op->forward(&c), want);
    assert_int_equal(op->backward(&c), want);
    if (k == 1) assert_non_null(strstr(c.err.msg, "outside [1, 5]"));
    set_len0(&c, 5);
    assert_int_equal(op->forward(&c), OPF_OK);
    opf_case_release(&c);
  }
  /* Empty batches and empty parameter tensors are valid no-ops. */
  for (int k = 0; k < 3; k++) {
    const opf_op *op = ts_op(names[k]);
    opf_case c;
    ts_case_ready(&c, op, OPF_F32, k == 1 ? "data=0x4x3 axis=1" : "data=4x0x3", 1, 1);
    assert_int_equal(op->forward(&c), OPF_OK);
    assert_int_equal(op->backward(&c), OPF_OK);
    opf_case_release(&c);
  }
  for (const char *const *o = optimizers; *o; o++) {
    opf_case c;
    ts_case_ready(&c, ts_op(*o), OPF_F64, "weight=0x7", 0, 1);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    opf_case_release(&c);
  }
  /* A mask with every length 0 writes the value everywhere. */
  opf_case c;
  ts_case_ready(&c, ts_op("sequence_mask"), OPF_F64, "data=3x2x2 value=-7", 0, 1);
  for (int b = 0; b < 2; b++) ((int64_t *)c.in[1].data)[b] = 0;
  assert_int_equal(c.op->forward(&c), OPF_OK);
  for (int i = 0; i < 12; i++) assert_true(((const double *)c.out[0].data)[i] == -7);
  opf_case_release(&c);
}

/* Outputs beyond the LLC take the streaming-store path (the generic driver's shapes are all
 * smaller): check forward and backward of each operator element by element against the
 * definitions, on rows of 2050 float32 (8200 bytes: longer than the fill block, and every
 * other row starts off a 16-byte boundary). */
static void test_streaming(void **state) {
  (void)state;
  const int64_t T = 65, B = 64, C = 2050; /* 34.1 MB */
  for (int k = 0; k < 3; k++) {
    const char *name = (const char *[]){"sequence_mask", "sequence_last", "sequence_reverse"}[k];
    const opf_op *op = ts_op(name);
    opf_case c;
    ts_case_ready(&c, op, OPF_F32, k ? "data=65x64x2050" : "data=65x64x2050 value=-3", 1, 9);
    memset(c.out[0].data, 0xff, c.out[0].nbytes); /* NaN: every element must be written */
    memset(c.gin[0].data, 0xff, c.gin[0].nbytes);
    if (op->forward(&c) || op->backward(&c)) fail_msg("%s: %s", name, c.err.msg);
    const float *x = c.in[0].data, *y = c.out[0].data, *g = c.gout[0].data, *dx = c.gin[0].data;
    const int64_t *len = c.in[1].data;
    for (int64_t t = 0; t < T; t++)
      for (int64_t b = 0; b < B; b++) {
        const int64_t L = len[b], row = (t * B + b) * C, rev = ((L - 1 - t) * B + b) * C;
        for (int64_t i = 0; i < C; i++) {
          float want_y, want_dx;
          if (k == 0) {
            want_y = t < L ? x[row + i] : -3, want_dx = t < L ? g[row + i] : 0;
          } else if (k == 1) { /* y is (B, C): checked at the last valid step only */
            want_dx = t == L - 1 ? g[b * C + i] : 0;
            if (t == L - 1 && y[b * C + i] != x[row + i])
              fail_msg("%s: y at b=%lld i=%lld", name, (long long)b, (long long)i);
            want_y = 0;
          } else {
            want_y = x[t < L ? rev + i : row + i], want_dx = g[t < L ? rev + i : row + i];
          }
          if (k != 1 && y[row + i] != want_y)
            fail_msg("%s: y at t=%lld b=%lld i=%lld", name, (long long)t, (long long)b,
                     (long long)i);
          if (dx[row + i] != want_dx)
            fail_msg("%s: dx at t=%lld b=%lld i=%lld", name, (long long)t, (long long)b,
                     (long long)i);
        }
      }
    opf_case_release(&c);
  }
}

/* Long runs: the harness calls an update thousands of times on the same buffers, so with the
 * default params and generated inputs every state must stay finite and normal (zero allowed:
 * ftrl's L1 produces exact zeros); variances and accumulators stay >= 0. */
static int is_sane(double x) {
  int k = fpclassify(x);
  return k == FP_NORMAL || k == FP_ZERO;
}

static void test_long_runs(void **state) {
  (void)state;
  for (const char *const *o = optimizers; *o; o++)
    for (int d = 0; d < 2; d++) {
      const opf_op *op = ts_op(*o);
      opf_case c;
      ts_case_ready(&c, op, (opf_dtype)d, "weight=256", 0, 5);
      for (int it = 0; it < 100000; it++)
        if (op->forward(&c)) fail_msg("%s: %s", *o, c.err.msg);
      for (int j = 0; j < op->n_out; j++)
        for (int64_t i = 0; i < 256; i++) {
          double x = ts_get(&c.out[j], i);
          if (!is_sane(x))
            fail_msg("%s %s after 100000 updates: %s[%lld] = %g", *o, opf_dtype_name((opf_dtype)d),
                     op->out[j], (long long)i, x);
          const char *nm = op->out[j];
          if ((!strcmp(nm, "var") || !strcmp(nm, "n") || !strcmp(nm, "history")) && x < 0)
            fail_msg("%s: %s[%lld] = %g < 0", *o, nm, (long long)i, x);
        }
      opf_case_release(&c);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_optimizer_models), cmocka_unit_test(test_sequence_models),
      cmocka_unit_test(test_shapes),           cmocka_unit_test(test_errors),
      cmocka_unit_test(test_lengths),          cmocka_unit_test(test_bad_lengths),
      cmocka_unit_test(test_streaming),        cmocka_unit_test(test_long_runs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

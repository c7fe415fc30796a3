/* test_models_create.c: what the generic operator driver cannot see for the creation,
 * conversion and random families: golden flops/bytes models at the standard shape (all three
 * passes: these operators are forward-only, so every pass is the forward), the error paths of
 * bad shapes and params, empty and zero-size outputs, the streaming-store paths of outputs
 * beyond the L3, and empty's tracked allocation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

static const double N = 1048576; /* 1024 x 1024 */

/* flops and bytes of every pass at spec must equal the hand-derived forward values. */
static void check_models(const char *name, opf_dtype dt, const char *spec, double flops, double bytes) {
  const opf_op *op = ts_op(name);
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, dt, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  for (int p = 0; p < OPF_NPASSES; p++) {
    double f = op->flops(&c, (opf_pass)p), b = op->bytes(&c, (opf_pass)p);
    if (f != flops || b != bytes)
      fail_msg("%s %s [%s] %s: flops %.0f bytes %.0f, want %.0f and %.0f", name,
               opf_dtype_name(dt), spec, opf_pass_name((opf_pass)p), f, b, flops, bytes);
  }
}

static void test_models(void **state) {
  (void)state;
  /* Fills write the output once and compute nothing; x of the *_like operators is not read.
   * float32 1024x1024: 4N bytes; int64: 8N. */
  const char *fills[] = {"zeros", "ones", "full"};
  for (int i = 0; i < 3; i++) check_models(fills[i], OPF_F32, "shape=1024x1024", 0, 4 * N);
  const char *likes[] = {"zeros_like", "ones_like", "full_like"};
  for (int i = 0; i < 3; i++) check_models(likes[i], OPF_I64, "x=1024x1024", 0, 8 * N);
  /* empty: allocation only; the allocator writes one 64-byte header */
  check_models("empty", OPF_F32, "shape=1024x1024", 0, 64);
  /* arange and linspace: one multiply-add (2 flops) per element; eye: stores only */
  check_models("arange", OPF_I32, "shape=1024x1024", 2 * N, 4 * N);
  check_models("linspace", OPF_F64, "shape=1024x1024", 2 * N, 8 * N);
  check_models("eye", OPF_F32, "N=1024", 0, 4 * N);
  check_models("eye", OPF_F64, "N=1024 M=512 k=3", 0, 8 * N / 2);
  /* copy: x read and y written, no flops; cast f32 -> f64: one conversion per element, 4N read
   * and 8N written; contiguous: the view read once and y written (2 x 4N for float32) */
  check_models("copy", OPF_F32, "x=1024x1024", 0, 8 * N);
  check_models("cast", OPF_F32, "x=1024x1024 to=float64", N, 12 * N);
  check_models("cast", OPF_I64, "x=1024x1024 to=float32", N, 12 * N);
  check_models("contiguous", OPF_F32, "x=1024x1024 perm=1,0", 0, 8 * N);
  check_models("contiguous", OPF_F32, "x=1024x2048 step=1,2", 0, 8 * N);
  /* Samplers: one "flop" per sample (GFLOP/s reads as Gsamples/s), the output written. */
  const char *samplers[] = {"uniform", "normal", "exponential", "bernoulli", "dropout_mask",
                            "random_gamma", "poisson", "negative_binomial"};
  for (int i = 0; i < 8; i++) {
    check_models(samplers[i], OPF_F32, "shape=1024x1024", N, 4 * N);
    check_models(samplers[i], OPF_F64, "shape=1024x1024", N, 8 * N);
  }
  check_models("randint", OPF_I64, "shape=1024x1024", N, 8 * N);
  /* multinomial: a prefix sum over the N weights plus one per sample (1024 rows x 1024
   * samples); float32 weights read (4N), int64 indices written (8N) */
  check_models("multinomial", OPF_F32, "probs=1024x1024 num_samples=1024", 2 * N, 12 * N);
  /* shuffle: one draw per row (1024); x read and y written */
  check_models("shuffle", OPF_F32, "x=1024x1024", 1024, 8 * N);
}

/* spec must fail in opf_case_init with OPF_EINVAL and a message containing what. */
static void check_rejects(const char *name, opf_dtype dt, const char *spec, const char *what) {
  opf_case c;
  opf_err e;
  int rc = opf_case_init(&c, ts_op(name), dt, spec, &e);
  if (rc != OPF_EINVAL) fail_msg("%s [%s]: returned %d, want OPF_EINVAL (%s)", name, spec, rc, e.msg);
  if (!strstr(e.msg, what))
    fail_msg("%s [%s]: message '%s' does not mention '%s'", name, spec, e.msg, what);
}

static void test_errors(void **state) {
  (void)state;
  /* creation */
  check_rejects("zeros", OPF_F32, "shape=4x-1", "outside its range");
  check_rejects("zeros", OPF_F32, "shape=4xq", "malformed list");
  check_rejects("full", OPF_I32, "shape=4x4 value=3.5", "value 3.5 is not representable in int32");
  check_rejects("full", OPF_I32, "shape=4x4 value=3e9", "value 3000000000 is not representable in int32");
  check_rejects("full_like", OPF_I64, "x=4x4 value=0.25", "not representable in int64");
  check_rejects("zeros_like", OPF_F32, "", "input 'x' needs a shape");
  check_rejects("arange", OPF_I64, "shape=10 step=0.5", "step 0.5 is not representable in int64");
  check_rejects("arange", OPF_I32, "shape=100000 start=2147480000",
                "last value start+(n-1)*step 2147579999 is not representable in int32");
  check_rejects("eye", OPF_F32, "N=-3", "outside its range");
  check_rejects("eye", OPF_F32, "N=4 M=-2", "outside its range");
  /* conversion */
  check_rejects("cast", OPF_F32, "x=4x4 to=float16", "must be one of float32|float64|int32|int64");
  check_rejects("copy", OPF_F32, "", "input 'x' needs a shape");
  check_rejects("contiguous", OPF_F32, "x=4x5 perm=0", "perm has 1 axes but x 4x5 has 2");
  check_rejects("contiguous", OPF_F32, "x=4x5 perm=1,1", "perm is not a permutation of the 2 axes of x 4x5");
  check_rejects("contiguous", OPF_F32, "x=4x5x6 perm=0,3,1", "perm is not a permutation");
  check_rejects("contiguous", OPF_F32, "x=4x5 step=1,2,3", "step has 3 values but x 4x5 has 2 axes");
  check_rejects("contiguous", OPF_F32, "x=4x5 step=1,0", "outside its range");
  /* random */
  check_rejects("uniform", OPF_F32, "shape=4 low=1 high=1", "uniform needs low < high (low=1, high=1)");
  check_rejects("normal", OPF_F32, "shape=4 std=-1", "outside its range");
  check_rejects("exponential", OPF_F64, "shape=4 rate=0", "exponential needs rate > 0");
  check_rejects("randint", OPF_I32, "shape=4 low=5 high=5", "randint needs low < high");
  check_rejects("randint", OPF_I64, "shape=4 low=0 high=8589934592", "high - low <= 2^32");
  check_rejects("randint", OPF_I32, "shape=4 low=0 high=3000000000", "high - 1 2999999999 is not representable in int32");
  check_rejects("bernoulli", OPF_F32, "shape=4 p=1.5", "outside its range");
  check_rejects("dropout_mask", OPF_F32, "shape=4 p=1", "dropout_mask needs p < 1 (p=1)");
  check_rejects("random_gamma", OPF_F32, "shape=4 alpha=0", "random_gamma needs alpha > 0 and scale > 0 (alpha=0, scale=1)");
  check_rejects("random_gamma", OPF_F64, "shape=4 scale=0", "random_gamma needs alpha > 0 and scale > 0");
  check_rejects("poisson", OPF_I64, "shape=4 lam=-1", "outside its range");
  check_rejects("negative_binomial", OPF_I64, "shape=4 p=0", "negative_binomial needs n > 0 and 0 < p <= 1");
  check_rejects("negative_binomial", OPF_I64, "shape=4 n=0", "negative_binomial needs n > 0");
  check_rejects("multinomial", OPF_F32, "probs=2x3x4", "probs 2x3x4 must be 1-D or 2-D");
  check_rejects("multinomial", OPF_F32, "probs=4x0", "at least one category");
  check_rejects("multinomial", OPF_F32, "", "input 'probs' needs a shape");
  check_rejects("shuffle", OPF_F32, "x=()", "shuffle permutes the rows (dim 0) of x");
  check_rejects("shuffle", OPF_F32, "x=4 seed=-1", "outside its range");
}

/* Run op's forward and reference on spec; their outputs must agree exactly. */
static void run_pair(const char *name, opf_dtype dt, const char *spec) {
  opf_case c, r;
  ts_case_ready(&c, ts_op(name), dt, spec, 0, 1);
  ts_case_ready(&r, ts_op(name), dt, spec, 0, 1);
  if (c.op->forward(&c) || c.op->reference(&r)) fail_msg("%s [%s]: %s%s", name, spec, c.err.msg, r.err.msg);
  if (memcmp(c.out[0].data, r.out[0].data, c.out[0].nbytes))
    fail_msg("%s [%s]: forward and reference differ", name, spec);
  opf_case_release(&c);
  opf_case_release(&r);
}

/* Zero-size outputs and inputs run (nothing to write), and a few exact values. */
static void test_edges(void **state) {
  (void)state;
  const char *zero_ops[] = {"zeros", "full", "arange", "linspace", "uniform", "normal", "random_gamma",
                            "poisson", "negative_binomial"};
  for (int i = 0; i < 9; i++) run_pair(zero_ops[i], OPF_F64, "shape=0x5");
  run_pair("eye", OPF_F32, "N=0");
  run_pair("eye", OPF_F32, "N=3 M=0");
  run_pair("copy", OPF_F32, "x=0x7");
  run_pair("contiguous", OPF_F32, "x=0x7 perm=1,0");
  run_pair("multinomial", OPF_F32, "probs=3x4 num_samples=0");
  run_pair("shuffle", OPF_F32, "x=0x3");
  /* linspace hits stop exactly; arange of integers is exact; eye's diagonal offsets */
  opf_case c;
  ts_case_ready(&c, ts_op("linspace"), OPF_F32, "shape=7 start=-1 stop=0.3", 0, 1);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_true(((float *)c.out[0].data)[6] == 0.3f && ((float *)c.out[0].data)[0] == -1.0f);
  opf_case_release(&c);
  ts_case_ready(&c, ts_op("arange"), OPF_I64, "shape=3x1000 start=-7 step=3", 0, 1);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_true(((int64_t *)c.out[0].data)[2999] == -7 + 2999 * 3);
  opf_case_release(&c);
  ts_case_ready(&c, ts_op("eye"), OPF_I32, "N=3 M=4 k=-1", 0, 1);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  static const int32_t want[12] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0};
  assert_memory_equal(c.out[0].data, want, sizeof want);
  opf_case_release(&c);
  /* cast truncates toward zero like NumPy's astype */
  ts_case_ready(&c, ts_op("cast"), OPF_F32, "x=4 to=int32", 0, 1);
  const float xs[4] = {-2.75f, -0.5f, 0.5f, 2.75f};
  memcpy(c.in[0].data, xs, sizeof xs);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  static const int32_t trunc[4] = {-2, 0, 0, 2};
  assert_memory_equal(c.out[0].data, trunc, sizeof trunc);
  opf_case_release(&c);
}

/* Outputs above the streaming threshold (32 MB) take the streaming-store paths: they must
 * write exactly what the references write (the driver's sets are far smaller). */
static void test_streaming(void **state) {
  (void)state;
  run_pair("zeros", OPF_F32, "shape=4096x2049");
  run_pair("full", OPF_I64, "shape=4200001 value=-3");
  run_pair("arange", OPF_I64, "shape=4200001 start=5 step=-2");
  run_pair("eye", OPF_F64, "N=2051 k=7");
  run_pair("copy", OPF_F32, "x=4096x2049");
  run_pair("cast", OPF_F32, "x=4096x1025 to=float64");
  run_pair("contiguous", OPF_F32, "x=2049x4096 perm=1,0");
  run_pair("contiguous", OPF_I64, "x=3x1400001 perm=1,0");
}

/* empty allocates and frees one output-sized block per call through the tracked allocator. */
static void test_empty_allocates(void **state) {
  (void)state;
  opf_case c;
  ts_case_ready(&c, ts_op("empty"), OPF_F64, "shape=1000x100", 0, 1);
  opf_alloc_stats s0, s1;
  opf_alloc_stats_reset();
  opf_alloc_stats_get(&s0);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  opf_alloc_stats_get(&s1);
  assert_true(s1.n_allocs - s0.n_allocs == 1 && s1.n_frees - s0.n_frees == 1);
  assert_true(s1.bytes_allocated - s0.bytes_allocated == 800000);
  assert_true(s1.peak_live_bytes >= s0.live_bytes + 800000 && s1.live_bytes == s0.live_bytes);
  opf_case_release(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_models),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_streaming),
      cmocka_unit_test(test_empty_allocates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_tensor.c: dtypes, shape parsing, the tracked allocator's figures and alignment, and
 * reproducibility of generated inputs (same seed -> same bits, whatever the thread count). */
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/harness.h"

static void test_dtypes(void **state) {
  (void)state;
  assert_int_equal(opf_dtype_parse("float32"), OPF_F32);
  assert_int_equal(opf_dtype_parse("f64"), OPF_F64);
  assert_int_equal(opf_dtype_parse("int32"), OPF_I32);
  assert_int_equal(opf_dtype_parse("i64"), OPF_I64);
  assert_int_equal(opf_dtype_parse("float16"), -1);
  assert_int_equal(opf_dtype_size(OPF_F64), 8);
  assert_int_equal(opf_dtype_size(OPF_I32), 4);
}

static void test_shape_parse(void **state) {
  (void)state;
  int nd;
  int64_t s[OPF_MAX_DIMS];
  opf_err e;
  assert_int_equal(opf_shape_parse("1024x1024", &nd, s, &e), OPF_OK);
  assert_int_equal(nd, 2);
  assert_int_equal(s[0], 1024);
  assert_int_equal(opf_shape_parse("(32,3,256,256)", &nd, s, &e), OPF_OK);
  assert_int_equal(nd, 4);
  assert_int_equal(s[3], 256);
  assert_int_equal(opf_shape_parse("()", &nd, s, &e), OPF_OK);
  assert_int_equal(nd, 0);
  assert_int_equal(opf_shape_parse("12xab", &nd, s, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "12xab"));
  assert_int_equal(opf_shape_parse("", &nd, s, &e), OPF_EINVAL);
  /* each dim is plausible, the product is not: rejected before any operator multiplies them */
  assert_int_equal(opf_shape_parse("100000000000x100000000000", &nd, s, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "more than 2^56 elements"));
  assert_int_equal(opf_shape_parse("0x100000000000x100000000000", &nd, s, &e), OPF_OK);
  assert_int_equal(opf_shape_parse("1x2x3x4x5x6x7x8x9", &nd, s, &e), OPF_EINVAL);
  assert_int_equal(opf_shape_parse("99999999999999999999", &nd, s, &e), OPF_EINVAL);
  assert_int_equal(opf_shape_parse("-3x4", &nd, s, &e), OPF_EINVAL);
}

static void test_overflow(void **state) {
  (void)state;
  opf_tensor t;
  int64_t shape[3] = {1LL << 40, 1LL << 40, 4};
  opf_tensor_set_shape(&t, OPF_F32, 3, shape);
  int ovf = 0;
  assert_int_equal(opf_tensor_bytes(&t, &ovf), 0);
  assert_int_equal(ovf, 1);
  opf_err e;
  assert_int_equal(opf_tensor_alloc(&t, &e), OPF_ENOMEM);
}

static void test_allocator(void **state) {
  (void)state;
  opf_alloc_stats s;
  opf_alloc_stats_reset();
  void *a = opf_alloc(1000), *b = opf_alloc(3000);
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal((uintptr_t)a % 64, 0);
  assert_int_equal((uintptr_t)b % 64, 0);
  opf_alloc_stats_get(&s);
  assert_int_equal(s.bytes_allocated, 4000);
  assert_int_equal(s.n_allocs, 2);
  opf_free(a);
  void *c = opf_alloc(500);
  opf_alloc_stats_get(&s);
  assert_int_equal(s.peak_live_bytes - (s.live_bytes - 3500), 4000); /* peak: a + b */
  assert_int_equal(s.n_frees, 1);
  opf_free(b);
  opf_free(c);
  opf_alloc_stats_reset();
  opf_alloc_stats_get(&s);
  assert_int_equal(s.bytes_allocated, 0);
  assert_int_equal(s.peak_live_bytes, s.live_bytes);
}

static void fill_with_threads(opf_tensor *t, int threads, uint64_t seed) {
  omp_set_num_threads(threads);
  opf_fill_uniform(t, seed, 3, -1, 1);
}

static void test_rng_reproducible(void **state) {
  (void)state;
  int64_t shape[1] = {200000}; /* above the fill's threading threshold */
  opf_tensor a, b, c;
  opf_err e;
  opf_tensor_set_shape(&a, OPF_F32, 1, shape);
  opf_tensor_set_shape(&b, OPF_F32, 1, shape);
  opf_tensor_set_shape(&c, OPF_F32, 1, shape);
  assert_int_equal(opf_tensor_alloc(&a, &e) | opf_tensor_alloc(&b, &e) | opf_tensor_alloc(&c, &e), 0);
  fill_with_threads(&a, 1, 42);
  fill_with_threads(&b, 2, 42);
  fill_with_threads(&c, 2, 43);
  assert_memory_equal(a.data, b.data, a.nbytes);
  assert_memory_not_equal(a.data, c.data, a.nbytes);
  const float *v = a.data;
  double sum = 0;
  for (int64_t i = 0; i < shape[0]; i++) {
    assert_true(v[i] >= -1 && v[i] < 1);
    sum += v[i];
  }
  assert_true(sum / (double)shape[0] < 0.01 && sum / (double)shape[0] > -0.01);
  /* indices stay in range */
  opf_tensor idx;
  opf_tensor_set_shape(&idx, OPF_I64, 1, shape);
  assert_int_equal(opf_tensor_alloc(&idx, &e), 0);
  opf_fill_index(&idx, 1, 0, 7);
  const int64_t *iv = idx.data;
  int seen[7] = {0};
  for (int64_t i = 0; i < shape[0]; i++) {
    assert_true(iv[i] >= 0 && iv[i] < 7);
    seen[iv[i]] = 1;
  }
  for (int k = 0; k < 7; k++) assert_true(seen[k]);
  opf_tensor_free(&a);
  opf_tensor_free(&b);
  opf_tensor_free(&c);
  opf_tensor_free(&idx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtypes), cmocka_unit_test(test_shape_parse),
      cmocka_unit_test(test_overflow), cmocka_unit_test(test_allocator),
      cmocka_unit_test(test_rng_reproducible)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

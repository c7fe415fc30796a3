/* test_tensor.c: dtypes, shape parsing, the tracked allocator's figures and alignment, and
 * reproducibility of generated inputs (same seed -> same bits, whatever the thread count). */
#include <math.h>
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

/* Large blocks (4 MiB and more) start on a 2 MiB boundary, and one freed large block is kept
 * for the next large allocation it can hold (src/alloc.c; not under AddressSanitizer): the
 * reuse keeps the alignment and the byte accounting, a bigger request gets a new block, a
 * block over 64 MiB is not kept. */
static void test_allocator_large_reuse(void **state) {
  (void)state;
  const size_t mib = (size_t)1 << 20;
  opf_alloc_stats s;
  opf_alloc_stats_reset();
  opf_alloc_stats_get(&s);
  const uint64_t live0 = s.live_bytes;
  unsigned char *a = opf_alloc(6 * mib);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % (2 * mib), 0);
  memset(a, 1, 6 * mib);
  opf_free(a);
  unsigned char *b = opf_alloc(5 * mib); /* fits the kept block */
  assert_non_null(b);
  assert_int_equal((uintptr_t)b % (2 * mib), 0);
#if !defined(__SANITIZE_ADDRESS__)
  assert_ptr_equal(a, b);
  assert_true(b[0] == 1 && b[5 * mib - 1] == 1); /* the same pages, not a fresh zeroed map */
#endif
  memset(b, 2, 5 * mib);
  unsigned char *c = opf_alloc(9 * mib); /* the kept block is in use: a new one */
  assert_non_null(c);
  assert_true(c != b);
  memset(c, 3, 9 * mib);
  opf_alloc_stats_get(&s);
  assert_int_equal(s.live_bytes - live0, 14 * mib);
  assert_int_equal(s.bytes_allocated, 20 * mib);
  opf_free(b);
  opf_free(c);
  unsigned char *d = opf_alloc(9 * mib); /* c (9 MiB) was kept last, b went back */
  assert_non_null(d);
#if !defined(__SANITIZE_ADDRESS__)
  assert_ptr_equal(d, c);
  assert_true(d[0] == 3 && d[9 * mib - 1] == 3);
#endif
  memset(d, 4, 9 * mib);
  opf_free(d);
  unsigned char *e = opf_alloc(80 * mib); /* over 64 MiB: freed for real, not kept */
  assert_non_null(e);
  e[0] = 5, e[80 * mib - 1] = 5;
  opf_free(e);
  opf_alloc_stats_get(&s);
  assert_int_equal(s.live_bytes, live0);
  assert_int_equal(s.n_frees, 5);
  opf_alloc_stats_reset();
}

static void fill_with_threads(opf_tensor *t, int threads, uint64_t seed) {
  omp_set_num_threads(threads);
  opf_fill_uniform(t, seed, 3, -1, 1);
}

/* The definition of the fill (src/rng.c), written out scalar: element k of stream s under seed
 * S. The library's vectorised, threaded loops must give exactly these values. */
static uint64_t ref_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off"))) /* two roundings, as the definition says */
#endif
static double ref_draw(uint64_t seed, uint64_t stream, uint64_t k, double lo, double hi) {
  uint64_t key = ref_mix(seed * 0x9e3779b97f4a7c15ULL + ref_mix(stream + 0x632be59bd9b4e019ULL));
  uint64_t x = ref_mix(key ^ ref_mix(k + 0x9e3779b97f4a7c15ULL));
  return lo + (hi - lo) * ((double)(x >> 11) * 0x1.0p-53);
}

static void test_fill_matches_definition(void **state) {
  (void)state;
  const opf_dtype dts[] = {OPF_F32, OPF_F64, OPF_I32, OPF_I64, OPF_BOOL};
  int64_t shape[1] = {200003}; /* threaded, and not a multiple of any vector width */
  for (int threads = 1; threads <= 3; threads += 2)
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++) {
      opf_tensor t;
      opf_err e;
      opf_tensor_set_shape(&t, dts[i], 1, shape);
      assert_int_equal(opf_tensor_alloc(&t, &e), 0);
      omp_set_num_threads(threads);
      const double lo = dts[i] == OPF_BOOL ? -1 : -3, hi = dts[i] == OPF_BOOL ? 1 : 7;
      opf_fill_uniform(&t, 42, 5, dts[i] == OPF_BOOL ? 0 : lo, dts[i] == OPF_BOOL ? 0 : hi);
      int64_t bad = -1;
      for (int64_t k = 0; k < shape[0] && bad < 0; k++) {
        double v = ref_draw(42, 5, (uint64_t)k, lo, hi);
        switch (dts[i]) {
        case OPF_F32: bad = ((float *)t.data)[k] == (float)v ? -1 : k; break;
        case OPF_F64: bad = ((double *)t.data)[k] == v ? -1 : k; break;
        case OPF_I32: bad = ((int32_t *)t.data)[k] == (int32_t)floor(v) ? -1 : k; break;
        case OPF_I64: bad = ((int64_t *)t.data)[k] == (int64_t)floor(v) ? -1 : k; break;
        default: bad = ((uint8_t *)t.data)[k] == (v > 0) ? -1 : k; break;
        }
      }
      assert_int_equal(bad, -1);
      opf_tensor_free(&t);
    }
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
      cmocka_unit_test(test_allocator_large_reuse),
      cmocka_unit_test(test_rng_reproducible), cmocka_unit_test(test_fill_matches_definition)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

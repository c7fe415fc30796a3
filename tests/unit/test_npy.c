/* test_npy.c: the .npy reader against files NumPy wrote (tests/fixtures/npy), write/read
 * round trips for every dtype and rank, and the errors for malformed, truncated, Fortran-order,
 * big-endian and mismatched files; also the case-level "x=@file.npy" input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/harness.h"
#include "opperf/npy.h"
#include "test_support.h"

static char fixture_path[512];
static const char *fixture(const char *name) {
  const char *src = getenv("OPPERF_SOURCE_DIR");
  snprintf(fixture_path, sizeof fixture_path, "%s/tests/fixtures/npy/%s", src ? src : ".", name);
  return fixture_path;
}

/* Load a fixture into a freshly allocated tensor of its header's shape. */
static void load(const char *name, opf_tensor *t) {
  opf_err e;
  opf_dtype dt;
  int nd;
  int64_t shape[OPF_MAX_DIMS];
  if (opf_npy_header(fixture(name), &dt, &nd, shape, &e)) fail_msg("%s", e.msg);
  opf_tensor_set_shape(t, dt, nd, shape);
  t->data = NULL;
  t->owned = 0;
  assert_int_equal(opf_tensor_alloc(t, &e), OPF_OK);
  if (opf_npy_load(fixture(name), t, &e)) fail_msg("%s", e.msg);
}

static void test_numpy_files(void **state) {
  (void)state;
  opf_tensor t;
  load("f32_2x3.npy", &t);
  assert_int_equal(t.dtype, OPF_F32);
  assert_int_equal(t.ndim, 2);
  assert_int_equal(t.shape[0], 2);
  assert_int_equal(t.shape[1], 3);
  for (int k = 0; k < 6; k++) assert_true(ts_get(&t, k) == k - 2.5);
  opf_tensor_free(&t);

  load("i64_4.npy", &t);
  assert_int_equal(t.dtype, OPF_I64);
  assert_int_equal(t.ndim, 1);
  const int64_t want[4] = {1, -2, 3, 1LL << 40};
  assert_memory_equal(t.data, want, sizeof want);
  opf_tensor_free(&t);

  load("bool_2x2.npy", &t);
  assert_int_equal(t.dtype, OPF_BOOL);
  const uint8_t wb[4] = {1, 0, 0, 1};
  assert_memory_equal(t.data, wb, 4);
  opf_tensor_free(&t);

  load("f64_scalar.npy", &t);
  assert_int_equal(t.ndim, 0);
  assert_true(ts_get(&t, 0) == 3.25);
  opf_tensor_free(&t);

  load("i32_3_v2.npy", &t); /* format version 2.0: 4-byte header length */
  assert_int_equal(t.dtype, OPF_I32);
  assert_int_equal(t.shape[0], 3);
  assert_true(ts_get(&t, 2) == 9);
  opf_tensor_free(&t);
}

static void test_round_trip(void **state) {
  (void)state;
  char dir[] = "/tmp/opperf_npy_XXXXXX";
  assert_non_null(mkdtemp(dir));
  const int64_t shapes[3][3] = {{0}, {7}, {3, 4, 5}};
  const int ranks[3] = {0, 1, 3};
  for (int d = 0; d < OPF_NDTYPES; d++)
    for (int s = 0; s < 3; s++) {
      opf_tensor a, b;
      opf_err e;
      memset(&a, 0, sizeof a);
      opf_tensor_set_shape(&a, (opf_dtype)d, ranks[s], shapes[s]);
      assert_int_equal(opf_tensor_alloc(&a, &e), OPF_OK);
      opf_fill_uniform(&a, 3, 1, -100, 100);
      char path[600];
      snprintf(path, sizeof path, "%s/t%d_%d.npy", dir, d, s);
      if (opf_npy_save(path, &a, &e)) fail_msg("%s", e.msg);
      FILE *f = fopen(path, "rb");
      assert_non_null(f);
      unsigned char h[10];
      assert_int_equal(fread(h, 1, 10, f), 10);
      fclose(f);
      assert_int_equal((10 + (h[8] | h[9] << 8)) % 64, 0); /* data 64-byte aligned, as NumPy does */
      b = a;
      b.data = NULL;
      b.owned = 0;
      assert_int_equal(opf_tensor_alloc(&b, &e), OPF_OK);
      if (opf_npy_load(path, &b, &e)) fail_msg("%s", e.msg);
      assert_memory_equal(a.data, b.data, a.nbytes);
      /* A tensor of another shape or dtype does not accept the file. */
      opf_tensor c = b;
      c.shape[0] = ranks[s] ? b.shape[0] + 1 : 0;
      c.ndim = ranks[s] ? b.ndim : 1;
      assert_int_equal(opf_npy_load(path, &c, &e), OPF_EINVAL);
      assert_non_null(strstr(e.msg, "expected"));
      unlink(path);
      opf_tensor_free(&a);
      opf_tensor_free(&b);
    }
  rmdir(dir);
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

static void expect_bad(const char *path, const char *needle) {
  opf_err e;
  opf_dtype dt;
  int nd;
  int64_t shape[OPF_MAX_DIMS];
  int rc = opf_npy_header(path, &dt, &nd, shape, &e);
  assert_true(rc == OPF_EINVAL || rc == OPF_EIO);
  if (!strstr(e.msg, needle)) fail_msg("'%s' lacks '%s'", e.msg, needle);
}

static void test_bad_files(void **state) {
  (void)state;
  const char *p = "/tmp/opperf_npy_bad.npy";
  write_file(p, "hello world\n", 12);
  expect_bad(p, "not a .npy file");
  const char fortran[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }              \n";
  write_file(p, fortran, sizeof fortran - 1);
  expect_bad(p, "Fortran");
  const char big[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }               \n";
  write_file(p, big, sizeof big - 1);
  expect_bad(p, "not supported");
  const char trunc[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }           \n";
  write_file(p, trunc, sizeof trunc - 1);
  expect_bad(p, "truncated");
  const char noshape[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False}                              \n";
  write_file(p, noshape, sizeof noshape - 1);
  expect_bad(p, "malformed");
  write_file(p, "\x93NUMPY\x01\x00\xff\x00{'de", 14);
  expect_bad(p, "truncated");
  unlink(p);
  expect_bad("/nonexistent/x.npy", "cannot read");
}

/* "x=@file.npy" in a case spec: shape and data from the file; a dtype mismatch is an error. */
static void test_case_input(void **state) {
  (void)state;
  const opf_op *relu = opf_op_find("relu");
  if (!relu) skip();
  char spec[600];
  snprintf(spec, sizeof spec, "x=@%s", fixture("f32_2x3.npy"));
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, relu, OPF_F32, spec, &e)) fail_msg("%s", e.msg);
  assert_int_equal(c.in[0].shape[1], 3);
  assert_int_equal(opf_case_alloc(&c, 0, &e), OPF_OK);
  assert_int_equal(opf_case_fill(&c, 1, &e), OPF_OK);
  assert_true(ts_get(&c.in[0], 5) == 2.5);
  opf_case_release(&c);
  assert_int_equal(opf_case_init(&c, relu, OPF_F64, spec, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "holds float32"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_numpy_files),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_case_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

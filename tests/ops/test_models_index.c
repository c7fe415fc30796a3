/* test_models_index.c: what the generic operator driver cannot see for the indexing family
 * (take, slices, getitem/setitem, pick/batch_take, gather_nd/scatter_nd, index_add, one_hot,
 * where, boolean_mask, ravel/unravel): golden flops and bytes at a standard shape, error paths
 * and their messages, output shapes, NumPy slicing results checked by hand, bad indices caught
 * by the forward, duplicates accumulating, empty slices, and results independent of the
 * thread count. */
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
  const char *op;
  opf_dtype dt;
  const char *spec;
  double flops[OPF_NPASSES], bytes[OPF_NPASSES];
} golden;

/* float32 (4-byte elements) unless said; X = 1024*1024 = 1048576 elements = 4194304 bytes.
 * take indices=1024: y = X elements. fwd 0 flops, bytes idx 8192 + read and write y 2*4194304
 *   = 8396800; bwd one add per y element = 1048576, bytes idx + g 4194304 + dx 4194304.
 * slice 128..-128 on both dims: y 768x768 = 589824 elements = 2359296 bytes; fwd 2y = 4718592;
 *   bwd g + all of dx = 2359296 + 4194304 = 6553600. Data movement: 0 flops.
 * strided_slice step 2,2: y 512x512 = 1048576 bytes; fwd 2097152, bwd 1048576 + 4194304.
 * slice_axis 256..768 on axis 0: y 512x1024 = 2097152 bytes; fwd 4194304, bwd 6291456.
 * getitem index 512: y 1024 elements = 4096 bytes; fwd 8192, bwd 4096 + 4194304 = 4198400.
 * setitem (forward-only, every pass the forward): read v 4096 + write the plane 4096 = 8192.
 * batch_take / pick axis 0: 1024 picks: fwd idx 8192 + read 4096 + write 4096 = 16384; bwd idx
 *   8192 + g 4096 + dx 4194304 = 4206592.
 * gather_nd indices=2x1024 (element gather): idx 2*1024*8 = 16384; fwd 16384 + 2*4096 = 24576;
 *   bwd adds 1024, bytes idx + g 4096 + dx 4194304 = 4214784.
 * scatter_nd values=1024x1024 indices=1x1024: fwd adds 1048576, bytes idx 8192 + values
 *   4194304 + y 4194304 = 8396800; bwd gather: idx + 2*4194304 = 8396800.
 * index_add axis 0, 1024 indices: fwd adds 1048576, bytes idx 8192 + x 4194304 + y 4194304 +
 *   values 4194304 = 12591104; bwd: dx is a view of g (0 bytes), the gather 8192 + 2*4194304
 *   = 8396800.
 * one_hot 1024 x depth 1024 (forward-only): idx 8192 + y 4194304 = 4202496.
 * where (all 1024x1024): fwd one select per element 1048576, bwd two per element 2097152;
 *   bytes cond 1048576 + x, y 8388608 + out 4194304 = 13631488, the same backward (cond, g,
 *   dx, dy).
 * boolean_mask (worst case, forward-only): mask 1024 + read x + write y 2*4194304 + count 8.
 * ravel_multi_index int64 coords=2x1048576: 2 flops per coordinate = 4194304; bytes
 *   8*(2097152 + 1048576) = 25165824. unravel_index, its inverse: the same. */
static const golden goldens[] = {
    {"take", OPF_F32, "x=1024x1024 indices=1024", {0, 1048576, 1048576}, {8396800, 8396800, 16793600}},
    {"slice", OPF_F32, "x=1024x1024 begin=128,128 end=-128,-128", {0, 0, 0}, {4718592, 6553600, 11272192}},
    {"strided_slice", OPF_F32, "x=1024x1024 begin=0,0 end=1024,1024 step=2,2", {0, 0, 0},
     {2097152, 5242880, 7340032}},
    {"slice_axis", OPF_F32, "x=1024x1024 axis=0 begin=256 end=768", {0, 0, 0}, {4194304, 6291456, 10485760}},
    {"getitem", OPF_F32, "x=1024x1024 index=512", {0, 0, 0}, {8192, 4198400, 4206592}},
    {"setitem", OPF_F32, "x=1024x1024 index=512", {0, 0, 0}, {8192, 8192, 8192}},
    {"batch_take", OPF_F32, "x=1024x1024", {0, 0, 0}, {16384, 4206592, 4222976}},
    {"pick", OPF_F32, "x=1024x1024 axis=0", {0, 0, 0}, {16384, 4206592, 4222976}},
    {"gather_nd", OPF_F32, "x=1024x1024 indices=2x1024", {0, 1024, 1024}, {24576, 4214784, 4239360}},
    {"scatter_nd", OPF_F32, "values=1024x1024 indices=1x1024 shape=1024x1024", {1048576, 0, 1048576},
     {8396800, 8396800, 16793600}},
    {"index_add", OPF_F32, "x=1024x1024 indices=1024", {1048576, 0, 1048576},
     {12591104, 8396800, 20987904}},
    {"one_hot", OPF_F32, "indices=1024 depth=1024", {0, 0, 0}, {4202496, 4202496, 4202496}},
    {"where", OPF_F32, "condition=1024x1024 x=1024x1024 y=1024x1024", {1048576, 2097152, 3145728},
     {13631488, 13631488, 27262976}},
    {"boolean_mask", OPF_F32, "x=1024x1024", {0, 0, 0}, {8389640, 8389640, 8389640}},
    {"ravel_multi_index", OPF_I64, "coords=2x1048576 shape=1024x1024", {4194304, 4194304, 4194304},
     {25165824, 25165824, 25165824}},
    {"unravel_index", OPF_I64, "indices=1048576 shape=1024x1024", {4194304, 4194304, 4194304},
     {25165824, 25165824, 25165824}},
};

static void test_golden_models(void **state) {
  (void)state;
  for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++) {
    const opf_op *op = ts_op(goldens[g].op);
    opf_case c;
    opf_err e;
    if (opf_case_init(&c, op, goldens[g].dt, goldens[g].spec, &e)) fail_msg("%s", e.msg);
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
  const char *op;
  opf_dtype dt;
  const char *spec, *needle; /* the message must contain needle */
} bad_spec;

static const bad_spec bad_specs[] = {
    {"take", OPF_F32, "x=4x5 axis=2", "axis=2 is out of range"},
    {"slice", OPF_F32, "x=4x5 begin=1 end=2,3", "same length"},
    {"slice", OPF_F32, "x=4x5 begin=1,1,1 end=2,3,4", "has rank 2"},
    {"slice", OPF_F32, "begin=1 end=2", "needs a shape"},
    {"slice", OPF_F32, "x=4x5 begin=1,a end=2,3", "malformed list"},
    {"strided_slice", OPF_F32, "x=4x5 begin=0,0 end=4,5 step=1,0", "step 1 is 0"},
    {"strided_slice", OPF_F32, "x=4x5 begin=0,0 end=4,5 step=1", "step has 1 entries"},
    {"slice_axis", OPF_F32, "x=4x5 axis=2", "axis=2 is out of range"},
    {"slice_axis", OPF_F32, "x=4x5 axis=all", "axis=all is not allowed"},
    {"getitem", OPF_F32, "x=4x5 index=4", "index 4 is out of range for axis 0"},
    {"getitem", OPF_F32, "x=4x5 index=-5", "index -5 is out of range"},
    {"getitem", OPF_F32, "x=() index=0", "cannot index a scalar"},
    {"setitem", OPF_F32, "x=4x5 v=4 index=1", "must have the same shape"},
    {"setitem", OPF_F32, "x=4x5 index=9", "out of range"},
    {"batch_take", OPF_F32, "x=4x5x6", "needs a 2-D x"},
    {"batch_take", OPF_F32, "x=4x5 indices=5", "must have x=4x5's shape without axis 1"},
    {"pick", OPF_F32, "x=4x5 indices=4x5", "shape without axis 1"},
    {"pick", OPF_F32, "x=4x5 axis=3", "axis=3 is out of range"},
    {"pick", OPF_F32, "x=4x0", "empty axis"},
    {"gather_nd", OPF_F32, "x=4x5 indices=3x2", "1 <= K <= 2"},
    {"gather_nd", OPF_F32, "x=4x5 indices=()", "1 <= K <= 2"},
    {"scatter_nd", OPF_F32, "values=8x5 indices=1x8", "needs the output shape"},
    {"scatter_nd", OPF_F32, "values=8x6 indices=1x8 shape=4x5", "values=8x6 must be 8x5"},
    {"scatter_nd", OPF_F32, "values=8 indices=3x8 shape=4x5", "1 <= K <= 2"},
    {"scatter_nd", OPF_F32, "values=8 indices=2x8 shape=4x-5", "outside its range"},
    {"index_add", OPF_F32, "x=4x5 indices=3 values=3x4", "values=3x4 must be x=4x5 with axis 0 of size 3"},
    {"index_add", OPF_F32, "x=4x5 indices=2x3", "must be 1-D"},
    {"index_add", OPF_F32, "x=0x5 indices=3", "empty axis"},
    {"one_hot", OPF_F32, "indices=4 depth=0", "outside its range"},
    {"one_hot", OPF_I32, "indices=4 on_value=0.5", "must be integers"},
    {"one_hot", OPF_F32, "depth=3", "needs a shape"},
    {"where", OPF_F32, "condition=4x5 x=4x6 y=4x5", "cannot be broadcast"},
    {"where", OPF_F32, "condition=4x5 x=4x5 y=3x5", "cannot be broadcast"},
    {"where", OPF_F32, "condition=4x5 x=4x5", "need shapes"},
    {"boolean_mask", OPF_F32, "x=4x5 mask=5", "mask=5 must be 1-D with x=4x5's first dim"},
    {"boolean_mask", OPF_F32, "x=()", "rank >= 1"},
    {"ravel_multi_index", OPF_I64, "coords=3x10 shape=4x5", "K = 2"},
    {"ravel_multi_index", OPF_I64, "coords=2x10", "needs shape="},
    {"ravel_multi_index", OPF_I64, "coords=2x10 shape=4x0", "outside its range"},
    {"unravel_index", OPF_I64, "indices=10 shape=1048576x1048576x1048576", "more than 2^50"},
    {"unravel_index", OPF_I64, "shape=4x5", "needs a shape"},
};

static void test_bad_specs(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof bad_specs / sizeof bad_specs[0]; k++) {
    opf_case c;
    opf_err e;
    int rc = opf_case_init(&c, ts_op(bad_specs[k].op), bad_specs[k].dt, bad_specs[k].spec, &e);
    if (rc != OPF_EINVAL)
      fail_msg("%s [%s]: rc %d, want OPF_EINVAL", bad_specs[k].op, bad_specs[k].spec, rc);
    if (!strstr(e.msg, bad_specs[k].needle))
      fail_msg("%s [%s]: message '%s' does not mention '%s'", bad_specs[k].op, bad_specs[k].spec,
               e.msg, bad_specs[k].needle);
  }
}

/* ravel/unravel are int64 operators: another dtype is unsupported, not invalid. */
static void test_index_dtypes(void **state) {
  (void)state;
  opf_case c;
  opf_err e;
  assert_int_equal(opf_case_init(&c, ts_op("unravel_index"), OPF_F32, "indices=4 shape=2x2", &e),
                   OPF_EUNSUPPORTED);
}

/* ---- output shapes and dtypes ---- */
static void expect_out(const char *op, opf_dtype dt, const char *spec, int out, const char *shape,
                       opf_dtype out_dt) {
  opf_case c;
  opf_err e;
  char s[96];
  if (opf_case_init(&c, ts_op(op), dt, spec, &e)) fail_msg("%s [%s]: %s", op, spec, e.msg);
  opf_shape_str(&c.out[out], s, sizeof s);
  if (strcmp(s, shape) || c.out[out].dtype != out_dt)
    fail_msg("%s [%s]: output %d (%s) %s, want (%s) %s", op, spec, out, s,
             opf_dtype_name(c.out[out].dtype), shape, opf_dtype_name(out_dt));
}

static void test_output_shapes(void **state) {
  (void)state;
  expect_out("slice", OPF_F32, "x=10x20 begin=-3,5 end=100,-5", 0, "3x10", OPF_F32);
  expect_out("slice", OPF_I32, "x=10x20x4 begin=2 end=-2", 0, "6x20x4", OPF_I32);
  expect_out("slice", OPF_F32, "x=10x20 begin=5,0 end=2,20", 0, "0x20", OPF_F32); /* empty */
  expect_out("strided_slice", OPF_F32, "x=10x20 begin=9,0 end=-100,20 step=-3,7", 0, "4x3", OPF_F32);
  expect_out("strided_slice", OPF_F64, "x=10 begin=100 end=-100 step=-1", 0, "10", OPF_F64);
  expect_out("slice_axis", OPF_F32, "x=10x20 axis=-1 begin=-4", 0, "10x4", OPF_F32);
  expect_out("getitem", OPF_I64, "x=10x20x4 index=-1", 0, "20x4", OPF_I64);
  expect_out("getitem", OPF_F32, "x=10 index=3", 0, "()", OPF_F32);
  expect_out("setitem", OPF_F32, "x=10x20 index=3", 0, "10x20", OPF_F32);
  expect_out("pick", OPF_F32, "x=3x4x5 axis=1", 0, "3x5", OPF_F32);
  expect_out("pick", OPF_F32, "x=3x4x5 axis=1 keepdims=true", 0, "3x1x5", OPF_F32);
  expect_out("batch_take", OPF_I32, "x=6x5", 0, "6", OPF_I32);
  expect_out("gather_nd", OPF_F32, "x=3x4x5 indices=2x7x2", 0, "7x2x5", OPF_F32);
  expect_out("gather_nd", OPF_F32, "x=3x4x5", 0, "3x5", OPF_F32); /* default (2, x.shape[0]) */
  expect_out("scatter_nd", OPF_F32, "values=7x5 shape=3x4x5", 0, "3x4x5", OPF_F32);
  expect_out("index_add", OPF_F32, "x=3x4x5 indices=9 axis=1", 0, "3x4x5", OPF_F32);
  expect_out("one_hot", OPF_I64, "indices=3x4 depth=6", 0, "3x4x6", OPF_I64);
  expect_out("where", OPF_F64, "condition=4x1 x=() y=1x5", 0, "4x5", OPF_F64);
  expect_out("boolean_mask", OPF_F32, "x=8x3", 0, "8x3", OPF_F32);
  expect_out("boolean_mask", OPF_F32, "x=8x3", 1, "()", OPF_I64);
  expect_out("ravel_multi_index", OPF_I64, "coords=3x4x5 shape=2x3x4", 0, "4x5", OPF_I64);
  expect_out("unravel_index", OPF_I64, "indices=4x5 shape=2x3x4", 0, "3x4x5", OPF_I64);
}

/* ---- values checked by hand (NumPy's answers), independent of the references ---- */
static void set_arange(opf_tensor *t) {
  for (int64_t k = 0; k < opf_numel(t); k++) ts_set(t, k, (double)k);
}

static void expect_values(const opf_tensor *t, const double *want, int64_t n, const char *what) {
  if (opf_numel(t) != n) fail_msg("%s: %lld elements, want %lld", what, (long long)opf_numel(t), (long long)n);
  for (int64_t k = 0; k < n; k++)
    if (ts_get(t, k) != want[k])
      fail_msg("%s: element %lld is %g, want %g", what, (long long)k, ts_get(t, k), want[k]);
}

/* Run op's forward on x = arange and compare output 0 with want. */
static void slice_case(const char *op, opf_dtype dt, const char *spec, const double *want, int64_t n) {
  opf_case c;
  ts_case_ready(&c, ts_op(op), dt, spec, 0, 3);
  set_arange(&c.in[0]);
  if (c.op->forward(&c)) fail_msg("%s [%s]: %s", op, spec, c.err.msg);
  char what[160];
  snprintf(what, sizeof what, "%s [%s]", op, spec);
  expect_values(&c.out[0], want, n, what);
  opf_case_release(&c);
}

static void test_numpy_slices(void **state) {
  (void)state;
  /* np.arange(10)[8:1:-3] == [8, 5, 2]; [-3:100] == [7, 8, 9]; [::-4] == [9, 5, 1] */
  slice_case("strided_slice", OPF_F32, "x=10 begin=8 end=1 step=-3", (double[]){8, 5, 2}, 3);
  slice_case("slice", OPF_I64, "x=10 begin=-3 end=100", (double[]){7, 8, 9}, 3);
  slice_case("strided_slice", OPF_I32, "x=10 begin=-1 end=-100 step=-4", (double[]){9, 5, 1}, 3);
  /* np.arange(12).reshape(3, 4)[::-2, 1:-1] == [[9, 10], [1, 2]] */
  slice_case("strided_slice", OPF_F64, "x=3x4 begin=-1,1 end=-100,-1 step=-2,1",
             (double[]){9, 10, 1, 2}, 4);
  /* np.arange(12).reshape(3, 4)[:, -1:0:-2] == [[3, 1], [7, 5], [11, 9]] */
  slice_case("strided_slice", OPF_F32, "x=3x4 begin=0,-1 end=3,0 step=1,-2",
             (double[]){3, 1, 7, 5, 11, 9}, 6);
  slice_case("slice_axis", OPF_F32, "x=3x4 axis=1 begin=1 end=3", (double[]){1, 2, 5, 6, 9, 10}, 6);
  slice_case("getitem", OPF_F32, "x=3x4 index=-2", (double[]){4, 5, 6, 7}, 4);
  /* empty slices run (nothing to move) and give empty outputs */
  slice_case("slice", OPF_F32, "x=10 begin=5 end=2", NULL, 0);
  slice_case("strided_slice", OPF_F32, "x=4x5 begin=1,0 end=3,5 step=1,-1", NULL, 0);
}

/* setitem updates x itself (output 0 shares its storage) and only plane i. */
static void test_setitem_in_place(void **state) {
  (void)state;
  opf_case c;
  ts_case_ready(&c, ts_op("setitem"), OPF_F32, "x=3x4 index=-2", 0, 3);
  set_arange(&c.in[0]);
  for (int k = 0; k < 4; k++) ts_set(&c.in[1], k, -1 - k);
  assert_ptr_equal(c.out[0].data, c.in[0].data);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  expect_values(&c.in[0], (double[]){0, 1, 2, 3, -1, -2, -3, -4, 8, 9, 10, 11}, 12, "setitem");
  opf_case_release(&c);
}

/* scatter_nd and index_add accumulate repeated indices; one_hot leaves rows of out-of-range
 * indices off; boolean_mask keeps rows in order and counts them. */
static void test_accumulate_and_masks(void **state) {
  (void)state;
  opf_case c;
  ts_case_ready(&c, ts_op("scatter_nd"), OPF_F32, "values=4x2 indices=1x4 shape=3x2", 0, 3);
  int64_t *idx = c.in[1].data;
  idx[0] = 2, idx[1] = 0, idx[2] = 2, idx[3] = 2;
  set_arange(&c.in[0]); /* rows (0,1) (2,3) (4,5) (6,7) */
  assert_int_equal(c.op->forward(&c), OPF_OK);
  expect_values(&c.out[0], (double[]){2, 3, 0, 0, 10, 13}, 6, "scatter_nd duplicates");
  opf_case_release(&c);

  ts_case_ready(&c, ts_op("index_add"), OPF_I32, "x=2x3 indices=4 values=2x4 axis=1", 0, 3);
  idx = c.in[1].data;
  idx[0] = 1, idx[1] = 1, idx[2] = 0, idx[3] = 1;
  set_arange(&c.in[0]);
  set_arange(&c.in[2]); /* values rows (0 1 2 3) (4 5 6 7) */
  assert_int_equal(c.op->forward(&c), OPF_OK);
  expect_values(&c.out[0], (double[]){2, 5, 2, 3 + 6, 4 + 16, 5}, 6, "index_add duplicates");
  opf_case_release(&c);

  ts_case_ready(&c, ts_op("one_hot"), OPF_F64, "indices=4 depth=3 on_value=5 off_value=-1", 0, 3);
  idx = c.in[0].data;
  idx[0] = 2, idx[1] = 3, idx[2] = -1, idx[3] = 0;
  assert_int_equal(c.op->forward(&c), OPF_OK);
  expect_values(&c.out[0], (double[]){-1, -1, 5, -1, -1, -1, -1, -1, -1, 5, -1, -1}, 12, "one_hot");
  opf_case_release(&c);

  ts_case_ready(&c, ts_op("boolean_mask"), OPF_I64, "x=5x2", 0, 3);
  set_arange(&c.in[0]);
  uint8_t *m = c.in[1].data;
  m[0] = 0, m[1] = 1, m[2] = 0, m[3] = 1, m[4] = 1;
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_int_equal(*(int64_t *)c.out[1].data, 3);
  expect_values(&c.out[0], (double[]){2, 3, 6, 7, 8, 9, 0, 0, 0, 0}, 10, "boolean_mask");
  opf_case_release(&c);

  /* unravel's reciprocal quotient against integer division at a shape of about 2^40
   * elements, where a plain double quotient would round wrongly. */
  ts_case_ready(&c, ts_op("unravel_index"), OPF_I64, "indices=4096 shape=1000003x999983", 0, 3);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  for (int64_t k = 0; k < 4096; k++) {
    int64_t f = ((int64_t *)c.in[0].data)[k], *o = c.out[0].data;
    if (o[k] != f / 999983 || o[4096 + k] != f % 999983)
      fail_msg("unravel_index of %lld: (%lld, %lld)", (long long)f, (long long)o[k], (long long)o[4096 + k]);
  }
  opf_case_release(&c);
}

/* ---- indices from the user's data: a bad one is an error of the forward, not a wild access ---- */
static void expect_bad_index(const char *op, const char *spec, int input, int64_t k, int64_t v,
                             const char *needle) {
  opf_case c;
  opf_dtype dt = strstr(op, "ravel") ? OPF_I64 : OPF_F32;
  ts_case_ready(&c, ts_op(op), dt, spec, 0, 5);
  ((int64_t *)c.in[input].data)[k] = v;
  assert_int_equal(c.op->forward(&c), OPF_EINVAL);
  if (!strstr(c.err.msg, needle)) fail_msg("%s [%s]: '%s' does not mention '%s'", op, spec, c.err.msg, needle);
  opf_case_release(&c);
}

static void test_bad_indices(void **state) {
  (void)state;
  expect_bad_index("take", "x=6x5 indices=4", 1, 2, 6, "index 6 at position 2 is outside [0, 6)");
  expect_bad_index("pick", "x=6x5", 1, 3, -1, "index -1 at position 3 is outside [0, 5)");
  expect_bad_index("batch_take", "x=6x5", 1, 0, 5, "index 5 at position 0");
  expect_bad_index("gather_nd", "x=6x5 indices=2x3", 1, 4, 5, "indices[1, 1] = 5 is outside [0, 5)");
  expect_bad_index("scatter_nd", "values=3 indices=2x3 shape=6x5", 1, 0, 6, "indices[0, 0] = 6");
  expect_bad_index("index_add", "x=6x5 indices=4", 1, 3, 100, "index 100 at position 3");
  expect_bad_index("ravel_multi_index", "coords=2x3 shape=6x5", 0, 5, -2, "coords[1, 2] = -2");
  expect_bad_index("unravel_index", "indices=3 shape=6x5", 0, 1, 30, "index 30 at position 1 is outside [0, 30)");
}

/* ---- threads: scatter-adds and reductions give bit-identical results at 1 and 2 threads ---- */
static void same_at_thread_counts(const char *op, const char *spec, int pass_bwd) {
  opf_case c1, c2;
  const int nt = omp_get_max_threads();
  ts_case_ready(&c1, ts_op(op), OPF_F32, spec, pass_bwd, 9);
  ts_case_ready(&c2, ts_op(op), OPF_F32, spec, pass_bwd, 9);
  omp_set_num_threads(1);
  int rc = c1.op->forward(&c1) || (pass_bwd && c1.op->backward(&c1));
  omp_set_num_threads(2);
  rc |= c2.op->forward(&c2) || (pass_bwd && c2.op->backward(&c2));
  omp_set_num_threads(nt);
  assert_int_equal(rc, 0);
  assert_memory_equal(c1.out[0].data, c2.out[0].data, c1.out[0].nbytes);
  for (int i = 0; pass_bwd && i < c1.op->n_in; i++)
    if (c1.gin[i].data) assert_memory_equal(c1.gin[i].data, c2.gin[i].data, c1.gin[i].nbytes);
  opf_case_release(&c1);
  opf_case_release(&c2);
}

static void test_thread_independence(void **state) {
  (void)state;
  same_at_thread_counts("index_add", "x=301x517 indices=700", 1);
  same_at_thread_counts("index_add", "x=517x301 indices=517 axis=1", 1);
  same_at_thread_counts("scatter_nd", "values=50001x71 indices=2x50001 shape=3x401x71", 1);
  same_at_thread_counts("gather_nd", "x=3x401x71 indices=2x50001", 1);
  same_at_thread_counts("take", "x=301x517 indices=700", 1);
  same_at_thread_counts("where", "condition=517x1 x=517x301 y=1x301", 1);
  same_at_thread_counts("boolean_mask", "x=100003", 0);
  same_at_thread_counts("pick", "x=517x1301 axis=0", 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),   cmocka_unit_test(test_bad_specs),
      cmocka_unit_test(test_index_dtypes),    cmocka_unit_test(test_output_shapes),
      cmocka_unit_test(test_numpy_slices),    cmocka_unit_test(test_setitem_in_place),
      cmocka_unit_test(test_accumulate_and_masks), cmocka_unit_test(test_bad_indices),
      cmocka_unit_test(test_thread_independence),
  };
  return cmocka_run_group_tests_name("models_index", tests, NULL, NULL);
}

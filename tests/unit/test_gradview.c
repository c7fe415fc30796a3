/* test_gradview.c: gradients handed back as views of an output gradient (op.h, opf_view;
 * src/gradview.c): add's gradients are the incoming gradient itself (no memory, no bytes in
 * the model), sum's a stride-0 broadcast, concat's and stack's narrowed slices, transpose's a
 * permuted (non-contiguous) view, broadcast add's full-shape input a view and the reduced one
 * written; every view read through its strides equals what implementation materialize writes;
 * the check catches a wrong view; views are saved row-major; the harness reports them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "opperf/harness.h"
#include "opperf/metrics.h"
#include "opperf/npy.h"
#include "test_support.h"

/* A case of name on spec with gradients, filled, for implementation impl, and both passes run. */
static void ready(opf_case *c, const char *name, opf_dtype dt, const char *spec, int impl) {
  opf_err e;
  if (opf_case_init(c, ts_op(name), dt, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  if (impl != OPF_IMPL_NATIVE && opf_case_set_impl(c, impl, &e)) fail_msg("%s: %s", name, e.msg);
  if (opf_case_alloc(c, 1, &e) || opf_case_fill(c, 3, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  if (opf_case_call(c, OPF_PASS_BOTH)) fail_msg("%s [%s]: %s", name, spec, c->err.msg);
}

/* The native case (views) against materialize on the same inputs: input i's gradient is a view
 * (want_view) or written, and equals the materialised one element by element. */
static void expect_grad(const char *name, opf_dtype dt, const char *spec, int i, int want_view,
                        const char *kind) {
  opf_case v, m; /* an operator without views has no materialize: its native kernels write */
  ready(&v, name, dt, spec, OPF_IMPL_NATIVE);
  ready(&m, name, dt, spec,
        opf_op_has_impl(ts_op(name), OPF_IMPL_MATERIALIZE) ? OPF_IMPL_MATERIALIZE : OPF_IMPL_NATIVE);
  if (opf_grad_is_view(&v, i) != want_view)
    fail_msg("%s [%s]: gradient %d is %sa view", name, spec, i, want_view ? "not " : "");
  assert_false(opf_grad_is_view(&m, i)); /* materialize writes every gradient */
  assert_true(m.gin[i].owned);
  if (want_view) {
    assert_false(v.gin[i].owned);
    opf_view gv = v.gview[i];
    assert_string_equal(opf_view_kind(&v, i, &gv), kind);
    /* the view points into the output gradient it names */
    const char *g0 = v.gout[gv.of - 1].data, *p = v.gin[i].data;
    assert_true(p >= g0 && p < g0 + v.gout[gv.of - 1].nbytes + 1);
  }
  char msg[256];
  if (ts_compare(&v.gin[i], &m.gin[i], dt == OPF_F64 ? 1e-12 : 1e-6, msg, sizeof msg))
    fail_msg("%s [%s] grad %d: %s", name, spec, i, msg);
  opf_case_release(&v);
  opf_case_release(&m);
}

/* Fails on the code before gradient views: add's backward wrote both gradients into memory
 * of their own (4 MiB each here) and the model counted 12 MiB moved. */
static void test_add_aliases_g(void **state) {
  (void)state;
  opf_case c;
  ready(&c, "add", OPF_F32, "a=1024x1024 b=1024x1024", OPF_IMPL_NATIVE);
  assert_ptr_equal(c.gin[0].data, c.gout[0].data);
  assert_ptr_equal(c.gin[1].data, c.gout[0].data);
  const opf_op *op = ts_op("add");
  assert_true(op->bytes(&c, OPF_PASS_BWD) == 0);
  assert_true(op->flops(&c, OPF_PASS_BWD) == 0);
  assert_true(op->bytes(&c, OPF_PASS_BOTH) == op->bytes(&c, OPF_PASS_FWD));
  /* the footprint counts no gradient memory for the inputs: a, b, y and dy */
  assert_int_equal(opf_case_footprint(&c, 1), 4u * 1024 * 1024 * 4);
  char views[96];
  assert_int_equal(opf_case_grad_views(&c, views, sizeof views), 2);
  assert_string_equal(views, "a:alias b:alias");
  opf_case_release(&c);

  opf_case m; /* materialize: the old behaviour, kept for comparison */
  ready(&m, "add", OPF_F32, "a=1024x1024 b=1024x1024", OPF_IMPL_MATERIALIZE);
  assert_ptr_not_equal(m.gin[0].data, m.gout[0].data);
  assert_true(op->bytes(&m, OPF_PASS_BWD) == 3.0 * 4 * 1024 * 1024);
  assert_int_equal(opf_case_footprint(&m, 1), 6u * 1024 * 1024 * 4);
  assert_int_equal(opf_case_grad_views(&m, views, sizeof views), 0);
  opf_case_release(&m);
}

static void test_binary(void **state) {
  (void)state;
  expect_grad("add", OPF_F64, "a=7x5 b=7x5", 1, 1, "alias");
  expect_grad("sub", OPF_F64, "a=7x5 b=7x5", 0, 1, "alias");
  expect_grad("sub", OPF_F64, "a=7x5 b=7x5", 1, 0, NULL); /* -g: computed */
  /* broadcast from [N,1] and [1,M]: the full-shape input a view, the reduced one written */
  expect_grad("add", OPF_F32, "a=300x70 b=300x1", 0, 1, "alias");
  expect_grad("add", OPF_F32, "a=300x70 b=300x1", 1, 0, NULL);
  expect_grad("add", OPF_F32, "a=300x70 b=1x70", 0, 1, "alias");
  expect_grad("add", OPF_F32, "a=300x70 b=1x70", 1, 0, NULL);
  expect_grad("sub", OPF_F64, "a=1x70 b=300x70", 1, 0, NULL);
  expect_grad("add", OPF_F64, "a=16x1 b=1x16", 0, 0, NULL); /* both broadcast: both written */
  expect_grad("add", OPF_F64, "a=1x64 b=64", 1, 1, "alias"); /* same elements, other rank */
  expect_grad("mul", OPF_F64, "a=7x5 b=7x5", 0, 0, NULL);
  /* the model: a view is neither written nor reads g; b's reduction still does */
  opf_case c;
  opf_err e;
  assert_int_equal(opf_case_init(&c, ts_op("add"), OPF_F32, "a=1024x1024 b=1x1024", &e), OPF_OK);
  assert_true(ts_op("add")->bytes(&c, OPF_PASS_BWD) == 4.0 * (1024 * 1024 + 1024)); /* g, db */
}

static void test_sum_broadcast(void **state) {
  (void)state;
  expect_grad("sum", OPF_F64, "x=6x9 axis=0", 0, 1, "broadcast");
  expect_grad("sum", OPF_F64, "x=6x9 axis=1 keepdims=true", 0, 1, "broadcast");
  expect_grad("sum", OPF_F32, "x=4x5x6 axis=1", 0, 1, "broadcast");
  expect_grad("sum", OPF_F32, "x=4x5x6 axis=all", 0, 1, "broadcast");
  expect_grad("mean", OPF_F32, "x=4x5x6 axis=1", 0, 0, NULL); /* dy / n: a fused fill */
  opf_case c;
  ready(&c, "sum", OPF_F64, "x=4x5x6 axis=1", OPF_IMPL_NATIVE);
  assert_true(c.gin[0].strides[0] == 6 && c.gin[0].strides[1] == 0 && c.gin[0].strides[2] == 1);
  assert_true(c.gin[0].nbytes == 0); /* a broadcast view owns no bytes */
  assert_true(ts_op("sum")->bytes(&c, OPF_PASS_BWD) == 0);
  /* element (i, j, k) of dx is dy[i, k] for every j */
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 6; k++)
        assert_true(ts_get(&c.gin[0], (i * 5 + j) * 6 + k) == ts_get(&c.gout[0], i * 6 + k));
  opf_case_release(&c);
}

static void test_join(void **state) {
  (void)state;
  expect_grad("concat", OPF_F64, "a=3x4 b=5x4 axis=0", 1, 1, "strided");
  expect_grad("concat", OPF_F64, "a=4x3 b=4x5 axis=1", 0, 1, "strided");
  expect_grad("concat", OPF_F32, "a=4x3 b=4x5 c=4x2 axis=1", 2, 1, "strided");
  expect_grad("concat", OPF_F32, "a=2x3x4 b=2x1x4 axis=1", 1, 1, "strided");
  expect_grad("stack", OPF_F64, "a=4x3 b=4x3 axis=1", 1, 1, "strided");
  expect_grad("stack", OPF_F64, "a=4x3 b=4x3 axis=0", 1, 1, "strided");
  expect_grad("split", OPF_F64, "x=8x4 sections=2 axis=0", 0, 0, NULL); /* gathers 2 gradients */
  opf_case c; /* concat on axis 1: b's gradient starts 3 elements into each row of 8 */
  ready(&c, "concat", OPF_F32, "a=4x3 b=4x5 axis=1", OPF_IMPL_NATIVE);
  assert_ptr_equal(c.gin[1].data, (float *)c.gout[0].data + 3);
  assert_true(c.gin[1].strides[0] == 8 && c.gin[1].strides[1] == 1);
  assert_false(opf_tensor_is_contiguous(&c.gin[1]));
  assert_true(ts_op("concat")->bytes(&c, OPF_PASS_BWD) == 0);
  opf_case_release(&c);
}

static void test_shape(void **state) {
  (void)state;
  expect_grad("reshape", OPF_F64, "x=6x4 shape=3,8", 0, 1, "alias");
  expect_grad("flatten", OPF_F32, "x=2x3x4 axis=1", 0, 1, "alias");
  expect_grad("expand_dims", OPF_F32, "x=5x4 axis=1", 0, 1, "alias");
  expect_grad("squeeze", OPF_F32, "x=5x1x4", 0, 1, "alias");
  expect_grad("transpose", OPF_F64, "x=5x7", 0, 1, "strided");
  expect_grad("swapaxes", OPF_F32, "x=2x3x4 axis1=0 axis2=2", 0, 1, "strided");
  expect_grad("depth_to_space", OPF_F32, "x=1x8x3x3 block=2", 0, 0, NULL);
  opf_case c; /* transpose: dx[i, j] = g[j, i], strides (1, 5) over x's 5x7 */
  ready(&c, "transpose", OPF_F64, "x=5x7", OPF_IMPL_NATIVE);
  assert_true(c.gin[0].strides[0] == 1 && c.gin[0].strides[1] == 5);
  assert_true(ts_get(&c.gin[0], 2 * 7 + 3) == ts_get(&c.gout[0], 3 * 5 + 2));
  /* saved row-major: the .npy holds dx as materialize writes it */
  char dir[] = "/tmp/opf_gradview_XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/dx.npy", dir);
  opf_err e;
  assert_int_equal(opf_npy_save(path, &c.gin[0], &e), OPF_OK);
  opf_tensor t;
  opf_tensor_set_shape(&t, OPF_F64, 2, c.gin[0].shape);
  assert_int_equal(opf_tensor_alloc(&t, &e), OPF_OK);
  assert_int_equal(opf_npy_load(path, &t, &e), OPF_OK);
  for (int64_t k = 0; k < 35; k++) assert_true(ts_get(&t, k) == ts_get(&c.gin[0], k));
  opf_tensor_free(&t);
  unlink(path);
  rmdir(dir);
  opf_case_release(&c);
}

/* ---- a test operator whose declared view is wrong: the check must say so ---- */
static int id_infer(opf_case *c) {
  opf_tensor_set_shape(&c->out[0], c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}
static int id_fwd(opf_case *c) {
  memcpy(c->out[0].data, c->in[0].data, c->in[0].nbytes);
  return OPF_OK;
}
static int id_bwd(opf_case *c) {
  if (!opf_grad_is_view(c, 0)) memcpy(c->gin[0].data, c->gout[0].data, c->gin[0].nbytes);
  return OPF_OK;
}
static int bad_view(const opf_case *c, int i, opf_view *v) { /* row 0 broadcast: wrong */
  int r = opf_view_alias(c, i, 0, v);
  v->strides[0] = 0;
  return r;
}
static const opf_op t_bad_view = {
    .abi = OPF_OP_ABI, .name = "t_bad_view", .category = "test", .summary = "identity, wrong view",
    .dtypes = OPF_DT_FLOAT, .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1}},
    .n_out = 1, .out = {"y"}, .infer = id_infer, .forward = id_fwd, .backward = id_bwd,
    .reference = id_fwd, .grad_view = bad_view,
    .shapes = {{"standard", "x=64x64"}, {"small", "x=4x4"}}};

static void test_check_catches_wrong_view(void **state) {
  (void)state;
  opf_err e;
  if (!opf_op_find("t_bad_view") && opf_op_register(&t_bad_view, &e)) fail_msg("%s", e.msg);
  opf_case c;
  assert_int_equal(opf_case_init(&c, &t_bad_view, OPF_F32, "x=4x4", &e), OPF_OK);
  assert_int_equal(opf_case_check_grad_views(&c, 1, &e), OPF_EKERNEL);
  assert_non_null(strstr(e.msg, "differs from the materialised one"));
  /* a right view passes */
  assert_int_equal(opf_case_init(&c, ts_op("concat"), OPF_F32, "a=4x3 b=4x5 axis=1", &e), OPF_OK);
  assert_int_equal(opf_case_check_grad_views(&c, 1, &e), OPF_OK);
  /* materialize is refused where the operator has no views */
  assert_int_equal(opf_case_init(&c, ts_op("mul"), OPF_F32, "a=4x3 b=4x3", &e), OPF_OK);
  assert_int_equal(opf_case_set_impl(&c, OPF_IMPL_MATERIALIZE, &e), OPF_EUNSUPPORTED);
  assert_int_equal(opf_impl_find("materialize"), OPF_IMPL_MATERIALIZE);
  assert_true(opf_op_has_impl(ts_op("add"), OPF_IMPL_MATERIALIZE));
  assert_false(opf_op_has_impl(ts_op("mul"), OPF_IMPL_MATERIALIZE));
}

/* The harness: the result names the views, the bwd model is 0 bytes (no GB/s, no roofline
 * from it), the setup allocates no gradient memory, and --check compares the views. */
static void test_measure(void **state) {
  (void)state;
  opf_settings s;
  opf_settings_default(&s);
  s.warmup_calls = 1, s.batch = 1, s.min_runs = 3, s.max_runs = 3, s.min_time = 0, s.check = 1;
  opf_result r[2];
  for (int k = 0; k < 2; k++) {
    opf_case c;
    opf_err e;
    assert_int_equal(opf_case_init(&c, ts_op("sum"), OPF_F32, "x=256x256 axis=0", &e), OPF_OK);
    if (k) assert_int_equal(opf_case_set_impl(&c, OPF_IMPL_MATERIALIZE, &e), OPF_OK);
    assert_int_equal(opf_measure(&s, &c, "custom", OPF_PASS_BWD, NULL, &r[k]), OPF_OK);
    if (r[k].status != OPF_ST_OK) fail_msg("%s", r[k].message);
  }
  assert_string_equal(r[0].check, "passed"); /* the view against the materialised gradient */
  assert_string_equal(r[1].check, "");       /* bwd without views: nothing to check */
  assert_string_equal(r[0].grad_views, "x:broadcast");
  assert_string_equal(r[1].grad_views, "");
  assert_string_equal(r[1].impl, "materialize");
  assert_true(r[0].bytes == 0 && r[1].bytes > 0);
  double v;
  int gbps = 0;
  while (strcmp(opf_metric_at(gbps)->name, "gbps")) gbps++;
  assert_int_equal(opf_metric_value(&r[0], gbps, &v), 0); /* nothing to divide */
  assert_int_equal(opf_metric_value(&r[1], gbps, &v), 1);
  /* dx's 256 KiB are allocated by materialize only */
  assert_int_equal(r[1].setup_bytes - r[0].setup_bytes, 256u * 256 * 4);
  opf_result_release(&r[0]);
  opf_result_release(&r[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_aliases_g),   cmocka_unit_test(test_binary),
      cmocka_unit_test(test_sum_broadcast),   cmocka_unit_test(test_join),
      cmocka_unit_test(test_shape),           cmocka_unit_test(test_check_catches_wrong_view),
      cmocka_unit_test(test_measure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

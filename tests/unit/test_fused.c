/* test_fused.c: the unfused implementation of fused operators (src/fused.c): chains of
 * registered operators bound to a fused case's inputs, params forwarded by name, gradients
 * flowing back through the stages, footprints, and every malformed chain rejected with a
 * message. The fused operators here are test-only, registered at run time. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "opperf/harness.h"
#include "test_support.h"

/* ---- t_relu2: relu(relu(x)), natively one pass ---- */
static int same_infer(opf_case *c) {
  opf_tensor_set_shape(&c->out[0], c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}
static int relu2_fwd(opf_case *c) {
  if (c->chain) /* the harness must run an unfused case's chain, never the native kernels */
    return opf_case_error(c, OPF_EKERNEL, "native forward called on an unfused case");
  for (int64_t k = 0; k < opf_numel(&c->in[0]); k++) ts_set(&c->out[0], k, fmax(ts_get(&c->in[0], k), 0));
  return OPF_OK;
}
static int relu2_bwd(opf_case *c) {
  for (int64_t k = 0; k < opf_numel(&c->in[0]); k++)
    ts_set(&c->gin[0], k, ts_get(&c->in[0], k) > 0 ? ts_get(&c->gout[0], k) : 0);
  return OPF_OK;
}

#define RELU2(id, chain)                                                                      \
  static const opf_op id = {.abi = OPF_OP_ABI, .name = #id, .category = "test",              \
                            .summary = "test fused relu(relu(x))", .dtypes = OPF_DT_FLOAT,   \
                            .n_in = 1, .in = {{.name = "x", .dtype = OPF_DT_CASE,            \
                                               .flags = OPF_IN_DIFF, .lo = -1, .hi = 1}},    \
                            .n_out = 1, .out = {"y"}, .infer = same_infer,                   \
                            .forward = relu2_fwd, .backward = relu2_bwd,                     \
                            .reference = relu2_fwd, .unfused = chain,                     \
                            .shapes = {{"standard", "x=8x8"}, {"small", "x=4x4"}}}
RELU2(t_relu2, "relu x=x | relu x=_");
RELU2(t_bad_op, "no_such_op x=x");
RELU2(t_bad_bind, "relu x=y");
RELU2(t_bad_twice, "relu x=x | relu x=x");
RELU2(t_bad_unbound, "relu x=x | relu");
RELU2(t_bad_first, "relu x=_");
RELU2(t_bad_item, "relu x=x | relu x=_ nosuch=3");
RELU2(t_bad_empty, "relu x=x | ");

/* ---- t_dense_relu: relu(x w^T + b) with dense's params forwarded by name ---- */
static int dr_infer(opf_case *c) {
  int64_t units = c->p[0] > 0 ? (int64_t)c->p[0] : 4;
  if (c->in[1].ndim < 0) {
    int64_t ws[2] = {units, c->in[0].shape[1]};
    opf_tensor_set_shape(&c->in[1], c->dtype, 2, ws);
  }
  if (c->present[2] && c->in[2].ndim < 0) opf_tensor_set_shape(&c->in[2], c->dtype, 1, &c->in[1].shape[0]);
  int64_t ys[2] = {c->in[0].shape[0], c->in[1].shape[0]};
  opf_tensor_set_shape(&c->out[0], c->dtype, 2, ys);
  return OPF_OK;
}
static double dr_pre(const opf_case *c, int64_t i, int64_t j) {
  int64_t K = c->in[0].shape[1];
  double s = c->present[2] ? ts_get(&c->in[2], j) : 0;
  for (int64_t k = 0; k < K; k++) s += ts_get(&c->in[0], i * K + k) * ts_get(&c->in[1], j * K + k);
  return s;
}
static int dr_fwd(opf_case *c) {
  int64_t N = c->out[0].shape[0], U = c->out[0].shape[1];
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < U; j++) ts_set(&c->out[0], i * U + j, fmax(dr_pre(c, i, j), 0));
  return OPF_OK;
}
static int dr_bwd(opf_case *c) {
  int64_t N = c->out[0].shape[0], U = c->out[0].shape[1], K = c->in[0].shape[1];
  for (int i = 0; i < 3; i++)
    if (c->gin[i].data) memset(c->gin[i].data, 0, c->gin[i].nbytes);
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < U; j++) {
      double g = ts_get(&c->out[0], i * U + j) > 0 ? ts_get(&c->gout[0], i * U + j) : 0;
      if (c->gin[2].data) ts_set(&c->gin[2], j, ts_get(&c->gin[2], j) + g);
      for (int64_t k = 0; k < K; k++) {
        ts_set(&c->gin[0], i * K + k, ts_get(&c->gin[0], i * K + k) + g * ts_get(&c->in[1], j * K + k));
        ts_set(&c->gin[1], j * K + k, ts_get(&c->gin[1], j * K + k) + g * ts_get(&c->in[0], i * K + k));
      }
    }
  return OPF_OK;
}
static const opf_op t_dense_relu = {
    .abi = OPF_OP_ABI, .name = "t_dense_relu", .category = "test", .summary = "test fused dense+relu",
    .dtypes = OPF_DT_FLOAT, .n_in = 3,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1},
           {.name = "w", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1},
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL, .lo = -1, .hi = 1}},
    .n_out = 1, .out = {"y"}, .n_params = 1,
    .params = {{"units", OPF_P_INT, 0, 0, 1000, NULL, "output features (0: from w, else 4)"}},
    .infer = dr_infer, .forward = dr_fwd, .backward = dr_bwd, .reference = dr_fwd,
    .shapes = {{"standard", "x=8x8"}, {"small", "x=4x4"}},
    .unfused = "dense x=x w=w b=b | relu x=_"};

static int setup(void **state) {
  (void)state;
  const opf_op *ops[] = {&t_relu2, &t_dense_relu}; /* the bad ones would not register */
  opf_err e;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!opf_op_find(ops[i]->name) && opf_op_register(ops[i], &e)) {
      print_error("registering %s: %s\n", ops[i]->name, e.msg); /* e.g. no dense in this build */
      return -1;
    }
  return 0;
}

/* Native and unfused on the same spec and seed: same outputs and gradients. */
static void expect_same(const char *name, opf_dtype dt, const char *spec) {
  const opf_op *op = ts_op(name);
  opf_case c, u;
  opf_err e;
  ts_case_ready(&c, op, dt, spec, 1, 3);
  assert_int_equal(opf_case_init(&u, op, dt, spec, &e), OPF_OK);
  if (opf_case_set_impl(&u, OPF_IMPL_UNFUSED, &e)) fail_msg("%s %s: %s", name, spec, e.msg);
  assert_int_equal(u.impl, OPF_IMPL_UNFUSED);
  /* the chain's intermediates (and their gradients) count in the footprint */
  assert_true(opf_case_footprint(&u, 1) > opf_case_footprint(&c, 1) - c.ws_bytes);
  assert_int_equal(opf_case_alloc(&u, 1, &e), OPF_OK);
  assert_int_equal(opf_case_fill(&u, 3, &e), OPF_OK);
  assert_int_equal(opf_case_call(&c, OPF_PASS_BOTH), OPF_OK);
  assert_int_equal(opf_case_call(&u, OPF_PASS_BOTH), OPF_OK);
  /* and a backward alone after that reuses the chain's stored intermediates */
  assert_int_equal(opf_case_call(&u, OPF_PASS_BWD), OPF_OK);
  char msg[256];
  double rtol = dt == OPF_F32 ? 1e-5 : 1e-12;
  if (ts_compare(&u.out[0], &c.out[0], rtol, msg, sizeof msg)) fail_msg("%s %s: %s", name, spec, msg);
  int ngrad = 0;
  for (int i = 0; i < op->n_in; i++) {
    if (!c.gin[i].data) continue;
    ngrad++;
    if (ts_compare(&u.gin[i], &c.gin[i], rtol, msg, sizeof msg))
      fail_msg("%s %s: gradient of %s: %s", name, spec, op->in[i].name, msg);
  }
  assert_true(ngrad > 0);
  opf_case_release(&c);
  opf_case_release(&u);
  assert_null(u.chain);
}

static void test_chains_match_native(void **state) {
  (void)state;
  expect_same("t_relu2", OPF_F64, "x=7x9");
  expect_same("t_relu2", OPF_F32, "x=33");
  expect_same("t_dense_relu", OPF_F64, "x=5x6 units=4");
  expect_same("t_dense_relu", OPF_F64, "x=3x8 units=2 b=none"); /* dropped input: dense b=none */
  expect_same("t_dense_relu", OPF_F32, "x=4x5 w=3x5");
}

static void test_chain_errors(void **state) {
  (void)state;
  static const struct {
    const opf_op *op;
    const char *want;
    int code;
  } bad[] = {{&t_bad_op, "operator 'no_such_op' is not in this build", OPF_ENOTFOUND},
             {&t_bad_bind, "'y', which is not an input of t_bad_bind", OPF_EINVAL},
             {&t_bad_twice, "input 'x' feeds more than one unfused stage", OPF_EINVAL},
             {&t_bad_unbound, "stage 2 must use the previous stage's output '_' exactly once", OPF_EINVAL},
             {&t_bad_first, "the first unfused stage has no previous output", OPF_EINVAL},
             {&t_bad_item, "'nosuch' is neither an input nor a param of relu", OPF_EINVAL},
             {&t_bad_empty, "stage 2 is empty", OPF_EINVAL},
             {&t_relu2, "", OPF_OK}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    opf_case c;
    opf_err e;
    e.msg[0] = '\0';
    assert_int_equal(opf_case_init(&c, bad[i].op, OPF_F32, "x=4x4", &e), OPF_OK);
    int rc = opf_case_set_impl(&c, OPF_IMPL_UNFUSED, &e);
    if (rc != bad[i].code || !strstr(e.msg, bad[i].want))
      fail_msg("%s: got %d '%s', want %d '%s'", bad[i].op->name, rc, e.msg, bad[i].code, bad[i].want);
    assert_int_equal(c.impl, rc ? OPF_IMPL_NATIVE : OPF_IMPL_UNFUSED);
  }
  opf_case c;
  opf_err e;
  assert_int_equal(opf_case_init(&c, ts_op("relu"), OPF_F32, "x=4x4", &e), OPF_OK);
  assert_int_equal(opf_case_set_impl(&c, OPF_IMPL_UNFUSED, &e), OPF_EUNSUPPORTED);
  assert_non_null(strstr(e.msg, "relu is not a fused operator"));
  /* a registered fused operator's chain is checked on every default entry */
  assert_int_not_equal(opf_op_register(&t_bad_bind, &e), OPF_OK);
  assert_non_null(strstr(e.msg, "unfused"));
  assert_string_equal(opf_impl_name(OPF_IMPL_UNFUSED), "unfused");
  assert_string_equal(opf_impl_name(OPF_IMPL_NATIVE), "native");
}

/* The result of an unfused case says so (compare keys cases by impl). */
static void test_result_impl(void **state) {
  (void)state;
  opf_case c;
  opf_err e;
  assert_int_equal(opf_case_init(&c, ts_op("t_relu2"), OPF_F32, "x=64", &e), OPF_OK);
  assert_int_equal(opf_case_set_impl(&c, OPF_IMPL_UNFUSED, &e), OPF_OK);
  opf_settings s;
  opf_settings_default(&s);
  s.min_time = s.max_time = 0.001;
  s.warmup = 0.001;
  opf_result r;
  assert_int_equal(opf_measure(&s, &c, "small", OPF_PASS_FWD, NULL, &r), OPF_OK);
  assert_int_equal(r.status, OPF_ST_OK);
  assert_string_equal(r.impl, "unfused");
  assert_true(r.setup_bytes >= 3 * 64 * sizeof(float)); /* x, y and the intermediate */
  opf_result_release(&r);
  /* backward alone: the forward it needs first is the chain's too */
  assert_int_equal(opf_case_init(&c, ts_op("t_relu2"), OPF_F32, "x=64", &e), OPF_OK);
  assert_int_equal(opf_case_set_impl(&c, OPF_IMPL_UNFUSED, &e), OPF_OK);
  assert_int_equal(opf_measure(&s, &c, "small", OPF_PASS_BWD, NULL, &r), OPF_OK);
  if (r.status != OPF_ST_OK) fail_msg("%s", r.message);
  opf_result_release(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chains_match_native),
      cmocka_unit_test(test_chain_errors),
      cmocka_unit_test(test_result_impl),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}

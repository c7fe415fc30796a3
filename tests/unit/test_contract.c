/* test_contract.c: the parts of the operator contract that the registered operators only use
 * indirectly: list params (parsing, ranges, defaults, canonical spec), in-place outputs (shared
 * storage, footprint, fill), bool inputs, large-tensor alignment, and --random-shapes draws (valid for every registered
 * operator, reproducible per seed). Uses a private test operator, not in the registry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/harness.h"
#include "test_support.h"

/* y = x * k in place, with a list param "shift" and a bool mask input. */
static int t_infer(opf_case *c) {
  opf_tensor_set_shape(&c->out[0], c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}
static int t_fwd(opf_case *c) {
  for (int64_t k = 0; k < opf_numel(&c->out[0]); k++)
    ts_set(&c->out[0], k, ts_get(&c->in[0], k) * (ts_get(&c->in[1], k) ? 2 : 1));
  return OPF_OK;
}

static const opf_op t_op = {
    .abi = OPF_OP_ABI,
    .name = "t_inplace",
    .category = "test",
    .summary = "test operator",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = 1, .hi = 2},
           {.name = "mask", .dtype = OPF_BOOL, .lo = -0.5, .hi = 0.5}},
    .n_out = 1,
    .out = {"x"},
    .inplace = {1},
    .n_params = 1,
    .params = {{.name = "shift", .type = OPF_P_LIST, .min = -10, .max = 10, .defs = "1,-1",
                .help = "test list"}},
    .shapes = {{"standard", "x=64x64 mask=64x64"}, {"small", "x=4x4 mask=4x4"}},
    .infer = t_infer,
    .forward = t_fwd,
    .reference = t_fwd,
};

static void test_list_params(void **state) {
  (void)state;
  opf_list l;
  opf_err e;
  assert_int_equal(opf_list_parse("2x3", &l, &e), OPF_OK);
  assert_int_equal(l.n, 2);
  assert_int_equal(opf_list_parse("-1,512,0", &l, &e), OPF_OK);
  assert_int_equal(l.n, 3);
  assert_int_equal(l.v[0], -1);
  assert_int_equal(opf_list_parse("none", &l, &e), OPF_OK);
  assert_int_equal(l.n, 0);
  assert_int_equal(opf_list_parse("2,,3", &l, &e), OPF_EINVAL);
  assert_int_equal(opf_list_parse("1,2,3,4,5,6,7,8,9", &l, &e), OPF_EINVAL);
  assert_int_equal(opf_list_parse("2;3", &l, &e), OPF_EINVAL);

  opf_case c;
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F32, "x=4x4 mask=4x4", &e), OPF_OK);
  assert_int_equal(c.list[0].n, 2); /* the default */
  assert_int_equal(c.list[0].v[1], -1);
  assert_true(c.p[0] == 2);
  char buf[256];
  assert_string_equal(opf_case_params_str(&c, buf, sizeof buf), "");
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F32, "x=4x4 mask=4x4 shift=3x-2x5", &e), OPF_OK);
  assert_string_equal(opf_case_params_str(&c, buf, sizeof buf), "shift=3,-2,5");
  assert_string_equal(opf_case_spec_str(&c, buf, sizeof buf), "x=4x4 mask=4x4 shift=3,-2,5");
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F32, "x=4x4 mask=4x4 shift=11", &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "outside its range"));
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F32, "x=4x4 mask=4x4 shift=a", &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "malformed list"));
}

static void test_inplace(void **state) {
  (void)state;
  opf_case c;
  opf_err e;
  assert_int_equal(opf_case_init(&c, &t_op, OPF_F64, "x=8x8 mask=8x8", &e), OPF_OK);
  /* x, mask; the output adds nothing: 8*8*8 + 8*8 bytes. */
  assert_int_equal(opf_case_footprint(&c, 0), 8 * 8 * 8 + 64);
  assert_int_equal(opf_case_alloc(&c, 0, &e), OPF_OK);
  assert_ptr_equal(c.out[0].data, c.in[0].data);
  assert_int_equal(opf_case_fill(&c, 5, &e), OPF_OK);
  int ones = 0;
  for (int k = 0; k < 64; k++) {
    assert_true(ts_get(&c.out[0], k) >= 1); /* filling did not zero the shared storage */
    double m = ts_get(&c.in[1], k);
    assert_true(m == 0 || m == 1);
    ones += m == 1;
  }
  assert_true(ones > 10 && ones < 54); /* P(1) = 0.5 for a draw in [-0.5, 0.5) */
  double before = ts_get(&c.in[0], 0);
  assert_int_equal(opf_case_call(&c, OPF_PASS_FWD), OPF_OK);
  assert_true(ts_get(&c.in[0], 0) == before * (ts_get(&c.in[1], 0) ? 2 : 1));
  opf_case_release(&c); /* frees x once (the output does not own it): ASan checks */
  opf_alloc_stats st;
  opf_alloc_stats_get(&st);
  assert_int_equal(st.live_bytes, 0);
}

/* Tensors of 4 MiB and more start on a 2 MiB boundary (the same huge-page layout in every
 * process); smaller ones keep the 64-byte alignment; the accounting is unchanged. */
static void test_large_alignment(void **state) {
  (void)state;
  opf_alloc_stats a, b;
  opf_alloc_stats_get(&a);
  const size_t sizes[] = {0, 100, (size_t)4 << 20, ((size_t)5 << 20) + 12345};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned char *p = opf_alloc(sizes[i]);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % OPF_ALIGN, 0);
    if (sizes[i] >= ((size_t)4 << 20)) assert_int_equal((uintptr_t)p % ((size_t)2 << 20), 0);
    if (sizes[i]) p[0] = p[sizes[i] - 1] = 1; /* both ends are usable (ASan checks) */
    opf_free(p);
  }
  opf_alloc_stats_get(&b);
  assert_int_equal(b.live_bytes, a.live_bytes);
  assert_int_equal(b.n_allocs - a.n_allocs, 4);
}

static void test_random_shapes(void **state) {
  (void)state;
  int failures = 0, varied = 0;
  for (int i = 0; i < opf_op_count(); i++) {
    const opf_op *op = opf_op_at(i);
    opf_dtype dt = op->dtypes & OPF_DT_BIT(OPF_F32) ? OPF_F32 : (opf_dtype)__builtin_ctz(op->dtypes);
    char a[1024], b[1024], prev[1024] = "";
    int distinct = 0;
    for (int k = 0; k < 4; k++) {
      opf_err e;
      if (opf_random_spec(op, dt, 7, k, a, sizeof a, &e)) {
        print_message("no random shape: %s\n", e.msg);
        failures++;
        break;
      }
      assert_int_equal(opf_random_spec(op, dt, 7, k, b, sizeof b, &e), OPF_OK);
      assert_string_equal(a, b); /* same seed and index, same spec */
      opf_case c;
      if (opf_case_init(&c, op, dt, a, &e)) fail_msg("%s [%s]: %s", op->name, a, e.msg);
      distinct += strcmp(a, prev) != 0;
      snprintf(prev, sizeof prev, "%s", a);
    }
    varied += distinct >= 2;
  }
  assert_int_equal(failures, 0);
  /* The draws really vary: 4 draws give at least 2 different specs for nearly every operator
   * (an operator whose entries are all tiny dims may draw the same spec each time). */
  if (varied < opf_op_count() * 9 / 10)
    fail_msg("only %d of %d operators drew 2 different specs in 4 draws", varied, opf_op_count());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_params),
      cmocka_unit_test(test_inplace),
      cmocka_unit_test(test_large_alignment),
      cmocka_unit_test(test_random_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

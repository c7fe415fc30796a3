/* test_plugin.c: the plugin loader (src/plugin.c) and implementation registry: the example
 * plugin's operator and relu implementation register and pass the reference check, a wrong
 * implementation fails it, malformed plugins are refused with the right code and message,
 * implementation descriptors are validated against their operator, and the context block
 * lists the plugin's build-id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/elfinfo.h"
#include "opperf/report.h"
#include "plugin_loader.h"

#ifndef OPF_PLUGIN_DIR
#error "OPF_PLUGIN_DIR: where the build puts the plugins (set by tests/fixtures/CMakeLists.txt)"
#endif

static const char *plugin(const char *name) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/lib%s.so", OPF_PLUGIN_DIR, name);
  return path;
}

/* Checks op's implementation impl against the reference on one spec. */
static int check(const char *op_name, int impl, const char *spec, opf_err *err) {
  const opf_op *op = opf_op_find(op_name);
  assert_non_null(op);
  opf_case c;
  assert_int_equal(opf_case_init(&c, op, OPF_F32, spec, err), OPF_OK);
  assert_int_equal(opf_case_set_impl(&c, impl, err), OPF_OK);
  return opf_case_check_reference(&c, 42, err);
}

static void test_example_plugin(void **state) {
  (void)state;
  opf_err e = {0};
  int n0 = opf_op_count();
  assert_int_equal(opf_plugin_load(plugin("example"), &e), OPF_OK);
  assert_int_equal(opf_op_count(), n0 + 1);
  assert_non_null(opf_op_find("example_saxpy"));
  int id = opf_impl_find("example");
  assert_true(id >= OPF_IMPL_ALT);
  assert_string_equal(opf_impl_name(id), "example");
  assert_true(opf_op_has_impl(opf_op_find("relu"), id));
  assert_false(opf_op_has_impl(opf_op_find("example_saxpy"), id));
  /* Loading the same file again changes nothing. */
  assert_int_equal(opf_plugin_load(plugin("example"), &e), OPF_OK);
  assert_int_equal(opf_op_count(), n0 + 1);
  assert_int_equal(opf_plugin_count(), 1);

  /* Both the plugin's implementation and the built-in agree with relu's reference, on sizes
   * below and above the example's threading threshold. */
  assert_int_equal(check("relu", id, "x=37x3", &e), OPF_OK);
  assert_int_equal(check("relu", id, "x=301x517", &e), OPF_OK);
  assert_int_equal(check("relu", OPF_IMPL_NATIVE, "x=301x517", &e), OPF_OK);
  assert_int_equal(check("example_saxpy", OPF_IMPL_NATIVE, "x=7x3 y=7x3 a=-0.5", &e), OPF_OK);
  assert_int_equal(check("example_saxpy", OPF_IMPL_NATIVE, "x=100000 y=100000", &e), OPF_OK);

  /* The implementation's kernels are what runs: bwd through opf_case_call as well. */
  opf_case c;
  assert_int_equal(opf_case_init(&c, opf_op_find("relu"), OPF_F64, "x=5x5", &e), OPF_OK);
  assert_int_equal(opf_case_set_impl(&c, id, &e), OPF_OK);
  assert_true(opf_case_has_backward(&c));
  assert_int_equal(opf_case_alloc(&c, 1, &e), OPF_OK);
  assert_int_equal(opf_case_fill(&c, 1, &e), OPF_OK);
  assert_int_equal(opf_case_call(&c, OPF_PASS_BOTH), OPF_OK);
  for (int k = 0; k < 25; k++) {
    double x = ((double *)c.in[0].data)[k], dy = ((double *)c.gout[0].data)[k];
    assert_true(((double *)c.out[0].data)[k] == (x > 0 ? x : 0));
    assert_true(((double *)c.gin[0].data)[k] == (x > 0 ? dy : 0));
  }
  opf_case_release(&c);

  /* An implementation id that is not the operator's. */
  assert_int_equal(opf_case_init(&c, opf_op_find("example_saxpy"), OPF_F32, "x=4 y=4", &e), OPF_OK);
  assert_int_equal(opf_case_set_impl(&c, id, &e), OPF_EUNSUPPORTED);
  assert_non_null(strstr(e.msg, "no implementation 'example'"));

  /* The context block records the plugin's build-id. */
  static opf_context ctx;
  memset(&ctx, 0, sizeof ctx);
  opf_context_build_ids(&ctx);
  int found = 0;
  for (int i = 0; i < ctx.n_build_ids; i++)
    if (strstr(ctx.build_ids[i].path, "libexample.so")) {
      char want[OPF_BUILD_ID_MAX];
      assert_int_equal(opf_elf_build_id(ctx.build_ids[i].path, want, sizeof want, &e), OPF_OK);
      assert_string_equal(ctx.build_ids[i].build_id, want);
      found = 1;
    }
  assert_true(found);
}

static void test_wrong_implementation_fails_check(void **state) {
  (void)state;
  opf_err e = {0};
  assert_int_equal(opf_plugin_load(plugin("wrong_relu"), &e), OPF_OK);
  int id = opf_impl_find("wrong");
  assert_true(id >= OPF_IMPL_ALT);
  assert_int_equal(check("relu", id, "x=16x16", &e), OPF_EKERNEL);
  assert_non_null(strstr(e.msg, "output 'y' differs from the reference"));
}

static void test_refused_plugins(void **state) {
  (void)state;
  opf_err e = {0};
  int n0 = opf_op_count(), i0 = opf_impl_count();
  assert_int_equal(opf_plugin_load(plugin("bad_abi"), &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "ABI version 3, this opperf needs 2"));
  assert_non_null(strstr(e.msg, "libbad_abi.so"));
  assert_int_equal(opf_plugin_load(plugin("no_forward"), &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "no forward hook"));
  assert_int_equal(opf_plugin_load(plugin("no_desc"), &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "no operator descriptors"));
  assert_int_equal(opf_plugin_load(OPF_PLUGIN_DIR "/missing.so", &e), OPF_EIO);
  assert_int_equal(opf_plugin_load("/proc/self/status", &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "not an ELF shared library"));
  /* Nothing of a refused plugin was registered. */
  assert_int_equal(opf_op_count(), n0);
  assert_int_equal(opf_impl_count(), i0);
  assert_null(opf_op_find("no_forward"));
}

static int kernel(opf_case *c) {
  (void)c;
  return OPF_OK;
}

static int same_shape(opf_case *c) {
  opf_tensor_set_shape(&c->out[0], c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

/* An operator without backward, for the implementation checks below. */
static const opf_op fwd_only = {
    .abi = OPF_OP_ABI, .name = "t_fwd_only", .category = "test", .summary = "forward only",
    .dtypes = OPF_DT_FLOAT, .n_in = 1, .in = {{.name = "x", .dtype = OPF_DT_CASE}},
    .n_out = 1, .out = {"y"}, .shapes = {{"standard", "x=8"}, {"small", "x=2"}},
    .infer = same_shape, .forward = kernel, .reference = same_shape};

static void test_impl_validation(void **state) {
  (void)state;
  opf_err e = {0};
  assert_int_equal(opf_op_register(&fwd_only, &e), OPF_OK);
  int id = -1, n = opf_impl_count();
  opf_op d = {.abi = OPF_OP_ABI, .name = "mine", .implements = "t_fwd_only", .forward = kernel};

  d.abi = OPF_OP_ABI + 1;
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_EINVAL);
  d.abi = OPF_OP_ABI;
  d.implements = "no_such_op";
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_ENOTFOUND);
  d.implements = "t_fwd_only";
  d.name = "Not-valid";
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_EINVAL);
  d.name = "a_name_longer_than_15";
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_EINVAL);
  d.name = "native"; /* every operator has it */
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_EINVAL);
  d.name = "mine";
  d.forward = NULL;
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "forward is required"));
  d.forward = kernel;
  d.backward = kernel; /* the operator has none */
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "no backward pass"));
  d.backward = NULL;
  d.n_in = 1; /* the operator's, not the implementation's */
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "sets only name, implements"));
  d.n_in = 0;
  assert_int_equal(opf_impl_count(), n); /* nothing registered so far */

  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_OK);
  assert_int_equal(id, n);
  assert_int_equal(opf_impl_count(), n + 1);
  assert_int_equal(opf_impl_register(&d, &id, &e), OPF_EINVAL); /* the name is taken for it */
  /* One name may implement another operator: the same id. */
  opf_op r = d;
  r.implements = "relu";
  int id2 = -1;
  assert_int_equal(opf_impl_register(&r, &id2, &e), OPF_OK);
  assert_int_equal(id2, id);
  assert_ptr_equal(opf_impl_kernels(opf_op_find("relu"), id), &r);
  assert_ptr_equal(opf_impl_kernels(opf_op_find("t_fwd_only"), id), &d);
  opf_case c;
  assert_int_equal(opf_case_init(&c, opf_op_find("relu"), OPF_F32, "x=4", &e), OPF_OK);
  assert_int_equal(opf_case_set_impl(&c, id, &e), OPF_OK);
  assert_false(opf_case_has_backward(&c)); /* relu has one, this implementation does not */
  assert_int_equal(opf_impl_find("unfused"), OPF_IMPL_UNFUSED);
  assert_int_equal(opf_impl_find("nothing"), -1);
  /* The built-in alternatives (OPPERF_IMPL) take the first ids; a plugin's name is not one. */
  int im2col = opf_impl_find("im2col");
  assert_true(im2col >= OPF_IMPL_ALT && im2col < id);
  assert_true(opf_impl_builtin(im2col));
  assert_non_null(opf_impl_kernels(opf_op_find("conv2d"), im2col));
  assert_null(opf_impl_kernels(opf_op_find("relu"), im2col));
  assert_false(opf_impl_builtin(id));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_example_plugin),
      cmocka_unit_test(test_wrong_implementation_fails_check),
      cmocka_unit_test(test_refused_plugins),
      cmocka_unit_test(test_impl_validation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

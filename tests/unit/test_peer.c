/* test_peer.c: the library side of --baseline (src/peer.c): the request's content for a few
 * cases, the parsing of fixed answers (ok, no-equivalent, error, missing, fatal, malformed),
 * the ratio join, the --check comparison with dtype tolerances, geometric means and worst
 * ratios. No timing is asserted: the answers are fixed documents. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "opperf/peer.h"
#include "test_support.h"

static cJSON *request_for(const char *op, const char *spec, opf_pass pass, const char *files, int check,
                          opf_case *c) {
  opf_err e;
  if (opf_case_init(c, ts_op(op), OPF_F32, spec, &e)) fail_msg("%s", e.msg);
  opf_settings s;
  opf_settings_default(&s);
  s.threads = 2;
  s.min_time = 0.125;
  opf_peer_req_case rq = {c, pass, files, check};
  char *json = NULL;
  assert_int_equal(opf_peer_request(OPF_PEER_TORCH, &s, &rq, 1, &json, &e), OPF_OK);
  cJSON *root = cJSON_Parse(json);
  free(json);
  assert_non_null(root);
  assert_string_equal(cJSON_GetObjectItem(root, "library")->valuestring, "torch");
  cJSON *st = cJSON_GetObjectItem(root, "settings");
  assert_int_equal(cJSON_GetObjectItem(st, "threads")->valueint, 2);
  assert_true(cJSON_GetObjectItem(st, "min_time")->valuedouble == 0.125);
  return root;
}

static cJSON *first_case(cJSON *root) { return cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0); }

static void test_request_sum_bwd(void **state) {
  (void)state;
  opf_case c;
  cJSON *root = request_for("sum", "x=4x5 axis=1", OPF_PASS_BWD, "/tmp/p_", 1, &c);
  cJSON *k = first_case(root);
  assert_int_equal(cJSON_GetObjectItem(k, "id")->valueint, 0);
  assert_string_equal(cJSON_GetObjectItem(k, "op")->valuestring, "sum");
  assert_string_equal(cJSON_GetObjectItem(k, "dtype")->valuestring, "float32");
  assert_string_equal(cJSON_GetObjectItem(k, "pass")->valuestring, "bwd");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(k, "check")));
  /* sum's dx is a view of dy in opperf's native implementation: the peer keeps autograd's */
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(k, "materialize")));
  cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItem(k, "inputs"), 0);
  assert_string_equal(cJSON_GetObjectItem(x, "name")->valuestring, "x");
  cJSON *shape = cJSON_GetObjectItem(x, "shape");
  assert_int_equal(cJSON_GetArraySize(shape), 2);
  assert_int_equal(cJSON_GetArrayItem(shape, 0)->valueint, 4);
  assert_int_equal(cJSON_GetArrayItem(shape, 1)->valueint, 5);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(x, "diff")));
  assert_string_equal(cJSON_GetObjectItem(x, "file")->valuestring, "/tmp/p_in_x.npy");
  assert_string_equal(cJSON_GetObjectItem(x, "peer_grad_file")->valuestring, "/tmp/p_peer_gin_x.npy");
  cJSON *y = cJSON_GetArrayItem(cJSON_GetObjectItem(k, "outputs"), 0);
  assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(y, "shape"), 0)->valueint, 4);
  assert_string_equal(cJSON_GetObjectItem(y, "grad_file")->valuestring, "/tmp/p_gout_y.npy");
  assert_string_equal(cJSON_GetObjectItem(y, "peer_file")->valuestring, "/tmp/p_peer_out_y.npy");
  cJSON *ps = cJSON_GetObjectItem(k, "params");
  assert_string_equal(cJSON_GetObjectItem(ps, "axis")->valuestring, "1");
  assert_string_equal(cJSON_GetObjectItem(ps, "keepdims")->valuestring, "false");
  cJSON_Delete(root);
}

static void test_request_conv_fwd_no_files(void **state) {
  (void)state;
  opf_case c;
  cJSON *root = request_for("conv2d", "x=2x3x5x5 filters=4 kernel=3 b=none layout=NCHW", OPF_PASS_FWD, NULL, 0, &c);
  cJSON *k = first_case(root);
  cJSON *ins = cJSON_GetObjectItem(k, "inputs");
  assert_int_equal(cJSON_GetArraySize(ins), 3);
  cJSON *w = cJSON_GetArrayItem(ins, 1), *b = cJSON_GetArrayItem(ins, 2);
  assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(w, "shape"), 0)->valueint, 4); /* (F, C, KH, KW) */
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(b, "present")));
  assert_null(cJSON_GetObjectItem(b, "shape"));
  assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(ins, 0), "file")); /* no files asked for */
  cJSON *y = cJSON_GetArrayItem(cJSON_GetObjectItem(k, "outputs"), 0);
  assert_null(cJSON_GetObjectItem(y, "grad_file")); /* forward: no output gradient */
  assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(y, "shape"), 3)->valueint, 3);
  cJSON *ps = cJSON_GetObjectItem(k, "params");
  assert_string_equal(cJSON_GetObjectItem(ps, "layout")->valuestring, "NCHW");
  assert_string_equal(cJSON_GetObjectItem(ps, "filters")->valuestring, "4");
  cJSON_Delete(root);
}

static void test_answer_parsing(void **state) {
  (void)state;
  const char *ans =
      "{\"library\": \"torch 9.9\", \"cases\": ["
      "{\"id\": 0, \"status\": \"ok\", \"peer_op\": \"torch.sum\", \"median\": 0.002, \"samples\": 7, \"batch\": 3},"
      "{\"id\": 2, \"status\": \"no-equivalent: reasons\"},"
      "{\"id\": 3, \"status\": \"error: RuntimeError: boom\"},"
      "{\"id\": 4, \"status\": \"ok\", \"peer_op\": \"torch.rand\", \"median\": 0.001, \"check_skip\": \"random\"},"
      "{\"id\": 99, \"status\": \"ok\"}]}";
  opf_peer_result r[5];
  double ours[5] = {0.004, 1, 1, 1, 0};
  opf_err e;
  assert_int_equal(opf_peer_answer(ans, ours, r, 5, &e), OPF_OK);
  assert_true(opf_peer_ok(&r[0]));
  assert_string_equal(r[0].name, "torch.sum");
  assert_string_equal(r[0].library, "torch 9.9");
  assert_true(r[0].ratio == 2.0);
  assert_int_equal(r[0].n_samples, 7);
  assert_int_equal((int)r[0].batch, 3);
  assert_false(opf_peer_ok(&r[1])); /* not mentioned */
  assert_non_null(strstr(r[1].status, "no answer"));
  assert_true(opf_peer_no_equivalent(&r[2]));
  assert_true(r[2].ratio == 0);
  assert_false(opf_peer_ok(&r[3]));
  assert_false(opf_peer_no_equivalent(&r[3]));
  assert_string_equal(r[4].check.what, "random");
  assert_true(r[4].ratio == 0); /* ours unknown */
  assert_string_equal(r[1].library, "torch 9.9");

  assert_int_equal(opf_peer_answer("{\"fatal\": \"PyTorch is not importable\"}", NULL, r, 1, &e), OPF_EUNSUPPORTED);
  assert_string_equal(e.msg, "PyTorch is not importable");
  assert_int_equal(opf_peer_answer("Traceback (most", NULL, r, 1, &e), OPF_EINVAL);
  assert_int_equal(opf_peer_answer("{\"library\": \"x\"}", NULL, r, 1, &e), OPF_EINVAL);
}

static void tensor(opf_tensor *t, opf_dtype d, int nd, const int64_t *shape, const double *v) {
  opf_err e;
  memset(t, 0, sizeof *t);
  opf_tensor_set_shape(t, d, nd, shape);
  assert_int_equal(opf_tensor_alloc(t, &e), OPF_OK);
  for (int64_t k = 0; k < opf_numel(t); k++) ts_set(t, k, v[k]);
}

static opf_peer_check compare(opf_dtype da, opf_dtype db, int nda, const int64_t *sa, int ndb, const int64_t *sb,
                              const double *a, const double *b) {
  opf_tensor ta, tb;
  tensor(&ta, da, nda, sa, a);
  tensor(&tb, db, ndb, sb, b);
  opf_peer_check chk = {.done = 1, .agree = 1};
  opf_peer_compare(&ta, &tb, 1e-4, "y", &chk);
  opf_tensor_free(&ta);
  opf_tensor_free(&tb);
  return chk;
}

static void test_compare(void **state) {
  (void)state;
  const int64_t s4[1] = {4}, s22[2] = {2, 2}, s1[1] = {1};
  const double a[4] = {1, 100, -3, NAN}, close[4] = {1.00005, 100.001, -3, NAN}, far[4] = {1.05, 100, -3, NAN};
  opf_peer_check c = compare(OPF_F32, OPF_F32, 1, s4, 1, s4, a, close);
  assert_true(c.agree);
  assert_int_equal(c.n_tensors, 1);
  assert_true(c.max_abs > 0 && c.max_abs < 2e-3);
  c = compare(OPF_F32, OPF_F32, 1, s4, 1, s4, a, far);
  assert_false(c.agree);
  assert_non_null(strstr(c.what, "y: "));
  /* float64 is tighter: the float32-close answer disagrees there */
  c = compare(OPF_F64, OPF_F64, 1, s4, 1, s4, a, close);
  assert_false(c.agree);
  /* NaN on one side only */
  const double nan1[4] = {1, 100, -3, 0};
  c = compare(OPF_F32, OPF_F32, 1, s4, 1, s4, a, nan1);
  assert_false(c.agree);
  assert_non_null(strstr(c.what, "NaN"));
  /* integers: exact, across widths (our int32, the peer's int64) */
  const double i1[4] = {1, 2, 3, 4}, i2[4] = {1, 2, 3, 5};
  assert_true(compare(OPF_I32, OPF_I64, 1, s4, 1, s4, i1, i1).agree);
  assert_false(compare(OPF_I32, OPF_I64, 1, s4, 1, s4, i1, i2).agree);
  /* shapes: a scalar and (1,) are the same; (4) and (2,2) are not */
  const double one[1] = {5};
  assert_true(compare(OPF_F32, OPF_F32, 0, s1, 1, s1, one, one).agree);
  c = compare(OPF_F32, OPF_F32, 1, s4, 2, s22, i1, i1);
  assert_false(c.agree);
  assert_non_null(strstr(c.what, "shape"));
  double atol, rtol;
  opf_peer_tolerance(OPF_I64, 1e-4, &atol, &rtol);
  assert_true(atol == 0 && rtol == 0);
  opf_peer_tolerance(OPF_F32, 1e-3, &atol, &rtol);
  assert_true(rtol == 1e-3);
}

static opf_peer_result peers[6];

static void row(opf_result *r, const char *cat, const char *impl, double ratio, int k) {
  memset(r, 0, sizeof *r);
  snprintf(r->op, sizeof r->op, "op%d", k);
  snprintf(r->category, sizeof r->category, "%s", cat);
  snprintf(r->impl, sizeof r->impl, "%s", impl);
  r->status = OPF_ST_OK;
  memset(&peers[k], 0, sizeof peers[k]);
  snprintf(peers[k].status, sizeof peers[k].status, ratio > 0 ? "ok" : "no-equivalent: x");
  peers[k].median = 1;
  peers[k].ratio = ratio;
  r->peer = &peers[k];
}

static void test_geomean_worst(void **state) {
  (void)state;
  opf_result rows[6];
  row(&rows[0], "a", "native", 2, 0);
  row(&rows[1], "b", "native", 1, 1);
  row(&rows[2], "a", "native", 8, 2);
  row(&rows[3], "a", "unfused", 100, 3); /* the unfused chain is not opperf's operator */
  row(&rows[4], "b", "native", 0, 4);    /* no equivalent: no ratio */
  row(&rows[5], "c", "native", 0.5, 5);
  rows[5].status = OPF_ST_ERROR;         /* ours failed: no ratio */
  opf_peer_geomean g[8];
  int n = opf_peer_geomeans(rows, 6, g, 8);
  assert_int_equal(n, 3);
  assert_string_equal(g[0].category, "a");
  assert_int_equal(g[0].n, 2);
  assert_true(fabs(g[0].geomean - 4) < 1e-12);
  assert_true(g[0].min == 2 && g[0].max == 8);
  assert_string_equal(g[1].category, "b");
  assert_true(fabs(g[1].geomean - 1) < 1e-12);
  assert_string_equal(g[2].category, "all");
  assert_int_equal(g[2].n, 3);
  assert_true(fabs(g[2].geomean - cbrt(16)) < 1e-12);
  int idx[2];
  assert_int_equal(opf_peer_worst(rows, 6, idx, 2), 2);
  assert_int_equal(idx[0], 2);
  assert_int_equal(idx[1], 0);
  assert_int_equal(opf_peer_lib_parse("numpy"), OPF_PEER_NUMPY);
  assert_int_equal(opf_peer_lib_parse("tensorflow"), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_request_sum_bwd),    cmocka_unit_test(test_request_conv_fwd_no_files),
      cmocka_unit_test(test_answer_parsing),     cmocka_unit_test(test_compare),
      cmocka_unit_test(test_geomean_worst),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

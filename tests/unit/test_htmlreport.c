/* test_htmlreport.c: the library side of `opperf report` (src/report_html.c): JSON made safe
 * for a <script> element, checking inputs (missing, not JSON, not opperf, other schema version,
 * sweep without points), the trend model from runs (matching, absent cases, CIs, change points
 * by key, by fields and by run index), the regressions of the last two runs (order, CI
 * separation) and the rendered page (markers filled, data once, raw samples left out). */
#include <cjson/cJSON.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/htmlreport.h"

static char dir[] = "/tmp/opperf_htmlreport_XXXXXX";

static const char *write_file(const char *name, const char *text) {
  static char path[8][256];
  static int k;
  char *p = path[k++ % 8];
  snprintf(p, 256, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return p;
}

/* A run document with cases "op:median[:lo:hi]" (median 0: failed). */
static cJSON *make_run(const char *ts, const char *const *cases, int n) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddNumberToObject(d, "schema_version", 1);
  cJSON *ctx = cJSON_AddObjectToObject(d, "context");
  cJSON_AddStringToObject(ctx, "timestamp", ts);
  cJSON_AddStringToObject(cJSON_AddObjectToObject(ctx, "tool"), "git_hash", "abc");
  cJSON *res = cJSON_AddArrayToObject(d, "results");
  for (int i = 0; i < n; i++) {
    char op[64];
    double med = 0, lo = 0, hi = 0;
    sscanf(cases[i], "%63[^:]:%lf:%lf:%lf", op, &med, &lo, &hi);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "op", op);
    cJSON_AddStringToObject(r, "impl", "native");
    cJSON_AddStringToObject(r, "spec", "x=8");
    cJSON_AddStringToObject(r, "params", "");
    cJSON_AddStringToObject(r, "dtype", "float32");
    cJSON_AddStringToObject(r, "pass", "fwd");
    cJSON_AddStringToObject(r, "status", med > 0 ? "ok" : "failed");
    if (med > 0) {
      cJSON *t = cJSON_AddObjectToObject(r, "time");
      cJSON_AddNumberToObject(t, "median", med);
      if (hi > 0) {
        double ci[2] = {lo, hi};
        cJSON_AddItemToObject(t, "median_ci95", cJSON_CreateDoubleArray(ci, 2));
      }
      double raw[3] = {med, med, med};
      cJSON_AddItemToObject(t, "raw", cJSON_CreateDoubleArray(raw, 3));
    }
    cJSON_AddItemToArray(res, r);
  }
  return d;
}

static void test_script_escaping(void **state) {
  (void)state;
  char *s = opf_json_for_script("{\"m\":\"</script><b>&\xe2\x80\xa8|\xe2\x80\xa9|\xe2\x80\x99\"}");
  assert_non_null(s);
  assert_string_equal(s, "{\"m\":\"\\u003c/script\\u003e\\u003cb\\u003e\\u0026\\u2028|\\u2029|\xe2\x80\x99\"}");
  /* what the browser parses back is the original string */
  cJSON *j = cJSON_Parse(s);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItem(j, "m")->valuestring, "</script><b>&\xe2\x80\xa8|\xe2\x80\xa9|\xe2\x80\x99");
  cJSON_Delete(j);
  free(s);
  s = opf_json_for_script("");
  assert_string_equal(s, "");
  free(s);
}

static void test_load_errors(void **state) {
  (void)state;
  cJSON *doc = NULL;
  int sweep = -1;
  opf_err e = {0};
  char missing[300];
  snprintf(missing, sizeof missing, "%s/missing.json", dir);
  assert_int_equal(opf_report_load(missing, &doc, &sweep, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "cannot read"));
  assert_null(doc);
  assert_int_equal(opf_report_load(write_file("t.json", "hello"), &doc, &sweep, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "not an opperf JSON report"));
  assert_int_equal(opf_report_load(write_file("a.json", "[1, 2]"), &doc, &sweep, &e), OPF_EINVAL);
  assert_int_equal(opf_report_load(write_file("o.json", "{\"a\": 1}"), &doc, &sweep, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "no schema_version"));
  assert_int_equal(opf_report_load(write_file("n.json", "{\"schema_version\": 1, \"results\": []}"), &doc, &sweep, &e),
                   OPF_EINVAL);
  assert_non_null(strstr(e.msg, "neither a run"));
  assert_int_equal(opf_report_load(write_file("s.json", "{\"schema_version\": 1, \"kind\": \"sweep\"}"), &doc, &sweep, &e),
                   OPF_EINVAL);
  assert_non_null(strstr(e.msg, "a sweep without points"));
  assert_int_equal(opf_report_load(write_file("v.json", "{\"schema_version\": 2, \"context\": {}, \"results\": []}"),
                                   &doc, &sweep, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "schema version 2; this opperf reads version 1"));
  assert_int_equal(opf_report_load(write_file("v3.json", "{\"schema_version\": 3, \"rows\": []}"), &doc, &sweep, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "schema version 3"));
  assert_null(doc);
  assert_int_equal(opf_report_load(write_file("ok.json", "{\"schema_version\": 1, \"context\": {}, \"results\": []}"),
                                   &doc, &sweep, &e), OPF_OK);
  assert_non_null(doc);
  assert_int_equal(sweep, 0);
  cJSON_Delete(doc);
  assert_int_equal(opf_report_load(write_file("sw.json", "{\"schema_version\": 1, \"kind\": \"sweep\", \"points\": []}"),
                                   &doc, &sweep, &e), OPF_OK);
  assert_int_equal(sweep, 1);
  cJSON_Delete(doc);
}

static void test_trend(void **state) {
  (void)state;
  const char *r0[] = {"a:1:0.9:1.1", "b:2:1.9:2.1", "c:3"};
  const char *r1[] = {"b:2.2:2.15:2.25", "a:1.5:1.4:1.6", "d:1:0.9:1.1", "c:0"};
  const char *r2[] = {"a:1.2:1.1:1.3", "b:6:5.9:6.1", "d:0.5:0.45:0.55", "c:3.3:3.2:3.4"};
  cJSON *runs[3] = {make_run("t0", r0, 3), make_run("t1", r1, 4), make_run("t2", r2, 4)};
  /* change points: b at run "t2" by key, a at run index 1 by fields; unknown ones ignored */
  cJSON *ch = cJSON_AddArrayToObject(runs[2], "changes");
  cJSON *k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "key", "b|native|x=8||float32|fwd");
  cJSON_AddStringToObject(k, "run", "t2");
  cJSON_AddItemToArray(ch, k);
  k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "op", "a"), cJSON_AddStringToObject(k, "impl", "native");
  cJSON_AddStringToObject(k, "spec", "x=8"), cJSON_AddStringToObject(k, "params", "");
  cJSON_AddStringToObject(k, "dtype", "float32"), cJSON_AddStringToObject(k, "pass", "fwd");
  cJSON_AddNumberToObject(k, "run", 1);
  cJSON_AddItemToArray(ch, k);
  k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "key", "zzz|native|x=8||float32|fwd");
  cJSON_AddNumberToObject(k, "run", 7);
  cJSON_AddItemToArray(ch, k);
  const char *labels[3] = {"t0", "t1", "t2"};
  opf_trend t;
  opf_err e = {0};
  assert_int_equal(opf_trend_from_runs(runs, labels, 3, &t, &e), OPF_OK);
  assert_int_equal(t.n_runs, 3);
  assert_int_equal(t.n_cases, 4); /* a, b, c, then d (first seen in run 1) */
  assert_string_equal(t.cases[0].key, "a|native|x=8||float32|fwd");
  assert_string_equal(t.cases[0].label, "a float32 fwd x=8");
  assert_string_equal(t.cases[3].key, "d|native|x=8||float32|fwd");
  assert_false(t.cases[3].pts[0].present); /* d: absent from run 0 */
  assert_true(t.cases[3].pts[1].present);
  assert_false(t.cases[2].pts[1].present); /* c failed in run 1 */
  assert_true(t.cases[2].pts[0].present && t.cases[2].pts[0].hi == 0); /* no CI recorded */
  assert_true(t.cases[0].pts[1].median == 1.5 && t.cases[0].pts[1].lo == 1.4 && t.cases[0].pts[1].hi == 1.6);
  assert_true(t.cases[1].pts[2].change && !t.cases[1].pts[1].change);
  assert_true(t.cases[0].pts[1].change && !t.cases[0].pts[2].change);
  assert_false(t.cases[2].pts[2].change || t.cases[3].pts[2].change);

  opf_trend_reg reg[8];
  int n = opf_trend_regressions(&t, reg, 8);
  assert_int_equal(n, 3); /* c is not in run 1 */
  assert_int_equal(reg[0].c, 1); /* b: 2.2 -> 6 */
  assert_true(fabs(reg[0].ratio - 6 / 2.2) < 1e-12);
  assert_true(reg[0].separated);
  assert_int_equal(reg[1].c, 0); /* a: 1.5 -> 1.2, CIs [1.4,1.6] and [1.1,1.3] apart */
  assert_true(reg[1].separated);
  assert_int_equal(reg[2].c, 3); /* d: 1 -> 0.5 */
  assert_int_equal(opf_trend_regressions(&t, reg, 1), 1);
  assert_int_equal(reg[0].c, 1);
  opf_trend_free(&t);

  /* One run: no regressions; overlapping CIs are not separated. */
  const char *q0[] = {"a:1:0.9:1.1"}, *q1[] = {"a:1.05:0.95:1.15"};
  cJSON *two[2] = {make_run("u0", q0, 1), make_run("u1", q1, 1)};
  const char *l2[2] = {"u0", "u1"};
  assert_int_equal(opf_trend_from_runs(two, l2, 1, &t, &e), OPF_OK);
  assert_int_equal(opf_trend_regressions(&t, reg, 8), 0);
  opf_trend_free(&t);
  assert_int_equal(opf_trend_from_runs(two, l2, 2, &t, &e), OPF_OK);
  assert_int_equal(opf_trend_regressions(&t, reg, 8), 1);
  assert_false(reg[0].separated);
  opf_trend_free(&t);
  for (int i = 0; i < 3; i++) cJSON_Delete(runs[i]);
  cJSON_Delete(two[0]), cJSON_Delete(two[1]);
}

/* The data block of a rendered page, parsed. */
static cJSON *page_data(const char *html) {
  const char *tag = "<script type=\"application/json\" id=\"opperf-data\">";
  const char *a = strstr(html, tag);
  assert_non_null(a);
  a += strlen(tag);
  const char *b = strstr(a, "</script>");
  assert_non_null(b);
  char *s = strndup(a, (size_t)(b - a));
  cJSON *d = cJSON_Parse(s);
  free(s);
  assert_non_null(d);
  return d;
}

static void test_render(void **state) {
  (void)state;
  const char *r0[] = {"a:1:0.9:1.1", "b:2:1.9:2.1"}, *r1[] = {"a:3:2.9:3.1", "b:2:1.9:2.1"};
  cJSON *d0 = make_run("t0", r0, 2), *d1 = make_run("t1", r1, 2);
  cJSON *rb = cJSON_GetArrayItem(cJSON_GetObjectItem(d1, "results"), 1);
  cJSON_AddStringToObject(rb, "message", "</script><x>");
  cJSON *ctrs = cJSON_AddArrayToObject(rb, "counters");
  cJSON *k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "name", "cycles"), cJSON_AddStringToObject(k, "status", "not supported");
  cJSON_AddStringToObject(k, "reason", "no PMU");
  cJSON_AddItemToArray(ctrs, k);
  k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "name", "task-clock"), cJSON_AddStringToObject(k, "status", "counted");
  cJSON_AddNumberToObject(k, "per_call", 5), cJSON_AddNumberToObject(k, "running_pct", 100);
  double raw[2] = {5, 5};
  cJSON_AddItemToObject(k, "raw", cJSON_CreateDoubleArray(raw, 2));
  cJSON_AddItemToArray(ctrs, k);
  char *s0 = cJSON_Print(d0), *s1 = cJSON_Print(d1);
  const char *paths[3] = {write_file("r0.json", s0), write_file("r1.json", s1),
                          write_file("sw.json", "{\"schema_version\": 1, \"kind\": \"sweep\", \"op\": \"a\", \"points\": [{\"x\": 1}]}")};
  free(s0), free(s1);
  char *html;
  size_t len;
  opf_err e = {0};
  opf_html_opts o = {.title = "T <&>"};
  assert_int_equal(opf_html_render(paths, 3, &o, &html, &len, &e), OPF_OK);
  assert_int_equal(strlen(html), len);
  assert_null(strstr(html, "@DATA@"));
  assert_null(strstr(html, "/*@CSS@*/"));
  assert_null(strstr(html, "/*@JS@*/"));
  assert_null(strstr(html, "</script><x>"));
  assert_null(strstr(html, "\"raw\""));
  assert_non_null(strstr(html, "<!DOCTYPE html>"));
  assert_non_null(strstr(html, "Content-Security-Policy"));
  cJSON *d = page_data(html);
  assert_string_equal(cJSON_GetObjectItem(d, "title")->valuestring, "T <&>");
  cJSON *cases = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "run"), "cases");
  assert_int_equal(cJSON_GetArraySize(cases), 2); /* the last run's cases */
  cJSON *a = cJSON_GetArrayItem(cases, 0);
  assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(a, "t"), 0)->valuedouble == 3);
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cases, 1), "msg")->valuestring, "</script><x>");
  /* counters: [name, status, per call, running %, reason, privilege], strings by index; an
   * event that did not count has null for its value, not 0 */
  cJSON *strs = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "run"), "strings");
  cJSON *ctr = cJSON_GetObjectItem(cJSON_GetArrayItem(cases, 1), "ctr");
  assert_int_equal(cJSON_GetArraySize(ctr), 2);
  cJSON *c0 = cJSON_GetArrayItem(ctr, 0), *c1 = cJSON_GetArrayItem(ctr, 1);
  assert_string_equal(cJSON_GetArrayItem(strs, cJSON_GetArrayItem(c0, 0)->valueint)->valuestring, "cycles");
  assert_string_equal(cJSON_GetArrayItem(strs, cJSON_GetArrayItem(c0, 1)->valueint)->valuestring, "not supported");
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(c0, 2)));
  assert_string_equal(cJSON_GetArrayItem(strs, cJSON_GetArrayItem(c0, 4)->valueint)->valuestring, "no PMU");
  assert_string_equal(cJSON_GetArrayItem(strs, cJSON_GetArrayItem(c1, 0)->valueint)->valuestring, "task-clock");
  assert_true(cJSON_GetArrayItem(c1, 2)->valuedouble == 5);
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(c1, 4)));
  assert_int_equal(cJSON_GetArraySize(strs), 5); /* cycles, not supported, no PMU, task-clock, counted */
  cJSON *tr = cJSON_GetObjectItem(d, "trend");
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(tr, "runs")), 2);
  cJSON *reg = cJSON_GetArrayItem(cJSON_GetObjectItem(tr, "regressions"), 0);
  assert_int_equal(cJSON_GetObjectItem(reg, "c")->valueint, 0);
  assert_true(cJSON_GetObjectItem(reg, "ratio")->valuedouble == 3);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "sweeps")), 1);
  cJSON_Delete(d);
  free(html);

  /* A failing input anywhere: an error, no page; the output file is not created. */
  const char *bad[2] = {paths[0], write_file("v.json", "{\"schema_version\": 9, \"context\": {}, \"results\": []}")};
  char out[300];
  snprintf(out, sizeof out, "%s/out.html", dir);
  assert_int_equal(opf_html_report(bad, 2, NULL, out, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "schema version 9"));
  assert_int_equal(access(out, F_OK), -1);
  assert_int_equal(opf_html_report(paths, 1, NULL, out, &e), OPF_OK);
  assert_int_equal(access(out, F_OK), 0);
  cJSON_Delete(d0), cJSON_Delete(d1);
}

/* A trend from elsewhere (a results store): the page shows it instead of the runs' own. */
static void test_render_given_trend(void **state) {
  (void)state;
  const char *r0[] = {"a:1:0.9:1.1"};
  cJSON *d0 = make_run("t0", r0, 1);
  char *s0 = cJSON_Print(d0);
  const char *paths[1] = {write_file("g0.json", s0)};
  free(s0);
  cJSON_Delete(d0);
  char *runs[3] = {"s1", "s2", "s3"}, key[] = "a|native|x=8||float32|fwd", label[] = "a float32 fwd x=8";
  opf_trend_point pts[3] = {{1, 1.0, 0.9, 1.1, 0}, {0, 0, 0, 0, 0}, {1, 2.0, 1.9, 2.1, 1}};
  opf_trend_case tc = {key, label, pts};
  opf_trend t = {3, runs, 1, &tc};
  opf_html_opts o = {.trend = &t};
  char *html;
  size_t len;
  opf_err e = {0};
  assert_int_equal(opf_html_render(paths, 1, &o, &html, &len, &e), OPF_OK);
  cJSON *d = page_data(html);
  cJSON *tr = cJSON_GetObjectItem(d, "trend");
  assert_non_null(tr);
  assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(tr, "runs"), 2)->valuestring, "s3");
  cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(tr, "cases"), 0);
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "pts"), 1)));
  assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "changes"), 0)->valueint, 2);
  /* the last two runs: s2 lacks the case, so there is no regression to list */
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(tr, "regressions")), 0);
  cJSON_Delete(d);
  free(html);
}

static int teardown(void **state) {
  (void)state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_script_escaping),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_trend),
      cmocka_unit_test(test_render),
      cmocka_unit_test(test_render_given_trend),
  };
  int rc = cmocka_run_group_tests(tests, NULL, teardown);
  return rc;
}

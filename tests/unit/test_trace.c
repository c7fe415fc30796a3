/* test_trace.c: the Chrome trace-event emitter (--format trace): valid JSON with one complete
 * ("X") event per sample at its recorded start, the case in the args, counter ("C") events per
 * sample, metadata names, an instant event for a failed case; and the sample start times kept
 * consistent by opf_result_merge. */
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/report.h"

static opf_context ctx;

static double *dupd(const double *v, int n) {
  double *d = malloc(sizeof *d * (size_t)n);
  memcpy(d, v, sizeof *d * (size_t)n);
  return d;
}

static void fake(opf_result *r, const char *op, opf_status st, double t0) {
  memset(r, 0, sizeof *r);
  snprintf(r->op, sizeof r->op, "%s", op);
  snprintf(r->impl, sizeof r->impl, "native");
  snprintf(r->set, sizeof r->set, "sweep");
  snprintf(r->spec, sizeof r->spec, "x=4x\"8\"");
  r->status = st;
  r->pass = OPF_PASS_FWD;
  r->n_tensors = 1;
  snprintf(r->tensors[0].name, 32, "x");
  snprintf(r->tensors[0].role, 8, "in");
  snprintf(r->tensors[0].shape, 96, "4x8");
  if (st != OPF_ST_OK) {
    snprintf(r->message, sizeof r->message, "fwd failed: \"bad\"\n");
    return;
  }
  double s[3] = {1e-6, 2e-6, 1.5e-6}, start[3] = {t0, t0 + 0.01, t0 + 0.02}, raw[3] = {100, 200, 150};
  r->n_samples = 3;
  r->batch = 10;
  r->samples = dupd(s, 3);
  r->sample_start = dupd(start, 3);
  opf_stats_compute(r->samples, 3, &r->time);
  r->n_events = 2;
  snprintf(r->events[0].name, 128, "cycles");
  r->events[0].has_value = 1;
  r->events[0].raw = dupd(raw, 3);
  r->events[0].n_raw = 3;
  snprintf(r->events[1].name, 128, "LLC-load-misses"); /* not supported: no track */
  r->events[1].status = OPF_EV_NOT_SUPPORTED;
}

static void test_trace_json(void **state) {
  (void)state;
  char path[] = "/tmp/opperf-trace-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  opf_emitter *em;
  opf_err e;
  snprintf(ctx.command, sizeof ctx.command, "opperf run \"x\"");
  assert_int_equal(opf_format_parse("trace"), OPF_FMT_TRACE);
  assert_int_equal(opf_emitter_begin(&em, OPF_FMT_TRACE, path, &ctx, &e), OPF_OK);
  opf_result a, b, c;
  fake(&a, "relu", OPF_ST_OK, 100.0);
  fake(&b, "sum", OPF_ST_OK, 100.5);
  fake(&c, "bad", OPF_ST_ERROR, 0);
  assert_int_equal(opf_emitter_record(em, &a), 0);
  assert_int_equal(opf_emitter_record(em, &b), 0);
  assert_int_equal(opf_emitter_record(em, &c), 0);
  assert_int_equal(opf_emitter_end(em, 1, &e), OPF_OK);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  unlink(path);
  cJSON *root = cJSON_Parse(buf);
  assert_non_null(root);
  cJSON *evs = cJSON_GetObjectItem(root, "traceEvents");
  assert_true(cJSON_IsArray(evs));
  int nx = 0, nc = 0, nm = 0, ni = 0, ncyc = 0;
  double ts_relu[3], ts_sum0 = -1;
  cJSON *ev;
  cJSON_ArrayForEach(ev, evs) {
    const char *ph = cJSON_GetObjectItem(ev, "ph")->valuestring;
    if (!strcmp(ph, "X")) {
      cJSON *args = cJSON_GetObjectItem(ev, "args");
      const char *op = cJSON_GetObjectItem(args, "op")->valuestring;
      assert_string_equal(cJSON_GetObjectItem(args, "pass")->valuestring, "fwd");
      assert_string_equal(cJSON_GetObjectItem(args, "dtype")->valuestring, "float32");
      assert_string_equal(cJSON_GetObjectItem(args, "inputs")->valuestring, "4x8");
      assert_string_equal(cJSON_GetObjectItem(args, "spec")->valuestring, "x=4x\"8\"");
      int k = cJSON_GetObjectItem(args, "sample")->valueint;
      double ts = cJSON_GetObjectItem(ev, "ts")->valuedouble, dur = cJSON_GetObjectItem(ev, "dur")->valuedouble;
      if (!strcmp(op, "relu")) ts_relu[k] = ts;
      else if (k == 0) ts_sum0 = ts;
      double want = (k == 0 ? 1e-6 : k == 1 ? 2e-6 : 1.5e-6) * 10 * 1e6;
      assert_true(dur > want * 0.999 && dur < want * 1.001);
      nx++;
    } else if (!strcmp(ph, "C")) {
      nc++;
      ncyc += !strcmp(cJSON_GetObjectItem(ev, "name")->valuestring, "cycles per call");
      assert_null(strstr(cJSON_GetObjectItem(ev, "name")->valuestring, "LLC"));
    } else if (!strcmp(ph, "M")) {
      nm++;
    } else if (!strcmp(ph, "i")) {
      ni++;
      cJSON *args = cJSON_GetObjectItem(ev, "args");
      assert_string_equal(cJSON_GetObjectItem(args, "status")->valuestring, "error");
    }
  }
  assert_int_equal(nx, 6);      /* one per sample */
  assert_int_equal(ncyc, 6);    /* the cycles track: one value per sample */
  assert_int_equal(nc, 12);     /* + the time-per-call track */
  assert_int_equal(nm, 1 + 2 * 3); /* process name; thread name and order per case */
  assert_int_equal(ni, 1);
  assert_true(ts_relu[0] == 0);
  assert_true(ts_relu[1] > 9999 && ts_relu[1] < 10001); /* microseconds since the first sample */
  assert_true(ts_relu[2] > 19999 && ts_relu[2] < 20001);
  assert_true(ts_sum0 > 499999 && ts_sum0 < 500001);
  cJSON_Delete(root);
  opf_result_release(&a);
  opf_result_release(&b);
  opf_result_release(&c);
}

static void test_merge_sample_start(void **state) {
  (void)state;
  opf_result a, b;
  fake(&a, "relu", OPF_ST_OK, 1.0);
  fake(&b, "relu", OPF_ST_OK, 2.0);
  a.n_reps = 1;
  opf_result_merge(&a, &b);
  assert_int_equal(a.n_samples, 6);
  assert_non_null(a.sample_start);
  assert_true(a.sample_start[3] == 2.0 && a.sample_start[5] == 2.02);
  fake(&b, "relu", OPF_ST_OK, 3.0);
  free(b.sample_start); /* a repetition without start times: none for the merged samples */
  b.sample_start = NULL;
  opf_result_merge(&a, &b);
  assert_int_equal(a.n_samples, 9);
  assert_null(a.sample_start);
  opf_result_release(&a);
  assert_null(a.samples);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_trace_json), cmocka_unit_test(test_merge_sample_start)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

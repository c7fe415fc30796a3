/* test_report.c: the report back-ends: JSON parses and carries the context and raw samples;
 * CSV rows have as many fields as the header; tables align; files appear only on commit and
 * atomically (no temporary files left behind, nothing written on failure); a device or FIFO
 * target is written in place, never replaced. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/report.h"

static opf_context ctx;
static double samples[3] = {1e-3, 1.2e-3, 1.1e-3};

static void fake_result(opf_result *r, opf_status st) {
  memset(r, 0, sizeof *r);
  snprintf(r->op, sizeof r->op, "relu");
  snprintf(r->category, sizeof r->category, "nn.activation");
  snprintf(r->impl, sizeof r->impl, "native");
  snprintf(r->set, sizeof r->set, "standard");
  snprintf(r->spec, sizeof r->spec, "x=1024x1024");
  snprintf(r->params, sizeof r->params, "alpha=0.1, \"quoted\"");
  r->status = st;
  if (st != OPF_ST_OK) snprintf(r->message, sizeof r->message, "needs 9 GiB, 1 GiB available");
  r->n_tensors = 1;
  snprintf(r->tensors[0].name, 32, "x");
  snprintf(r->tensors[0].role, 8, "in");
  snprintf(r->tensors[0].shape, 96, "1024x1024");
  r->tensors[0].bytes = 4 << 20;
  r->samples = samples;
  r->n_samples = 3;
  r->batch = 2;
  opf_stats_compute(samples, 3, &r->time);
  r->flops = 1 << 20;
  r->bytes = 8 << 20;
  r->n_events = 1;
  snprintf(r->events[0].name, 128, "task-clock");
  r->events[0].has_value = st == OPF_ST_OK;
  r->events[0].per_call = 1.1e6;
  if (st == OPF_ST_OK) { /* a case measured twice: the kept attempt waited 12.5% on a run queue */
    r->attempts = 2;
    r->sched_ok = 1;
    r->contention = 0.125;
  }
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static char dir[64];

static int setup(void **state) {
  (void)state;
  opf_settings s;
  opf_settings_default(&s);
  opf_context_collect(&ctx, &s, NULL, "opperf run relu");
  ctx.n_events = 1;
  snprintf(ctx.events[0].name, 128, "task-clock");
  snprintf(dir, sizeof dir, "/tmp/opperf-test-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int files_in_dir(void) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void emit(opf_format f, const char *path, int commit) {
  opf_emitter *e;
  opf_err err;
  opf_result ok, skipped;
  fake_result(&ok, OPF_ST_OK);
  fake_result(&skipped, OPF_ST_SKIPPED);
  assert_int_equal(opf_emitter_begin(&e, f, path, &ctx, &err), OPF_OK);
  assert_int_equal(opf_emitter_record(e, &ok), 0);
  assert_int_equal(opf_emitter_record(e, &skipped), 0);
  assert_int_equal(opf_emitter_end(e, commit, &err), OPF_OK);
}

static void test_json(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/out.json", dir);
  emit(OPF_FMT_JSON, path, 1);
  cJSON *root = cJSON_Parse(slurp(path));
  assert_non_null(root);
  assert_int_equal(cJSON_GetObjectItem(root, "schema_version")->valueint, OPF_SCHEMA_VERSION);
  cJSON *c = cJSON_GetObjectItem(root, "context");
  assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "host"), "cpu_model"));
  assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "blas"), "parallel"));
  assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "settings"), "seed"));
  cJSON *res = cJSON_GetObjectItem(root, "results");
  assert_int_equal(cJSON_GetArraySize(res), 2);
  cJSON *r0 = cJSON_GetArrayItem(res, 0), *t = cJSON_GetObjectItem(r0, "time");
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t, "raw")), 3);
  assert_float_equal(cJSON_GetObjectItem(t, "median")->valuedouble, 1.1e-3, 1e-15);
  assert_string_equal(cJSON_GetObjectItem(r0, "params")->valuestring, "alpha=0.1, \"quoted\"");
  cJSON *r1 = cJSON_GetArrayItem(res, 1);
  assert_string_equal(cJSON_GetObjectItem(r1, "status")->valuestring, "skipped");
  assert_null(cJSON_GetObjectItem(r1, "time")); /* no fake numbers for a case that did not run */
  cJSON_Delete(root);
  assert_int_equal(files_in_dir(), 1); /* no temporary file left */
}

static int count_fields(const char *line) { /* RFC 4180: commas outside quotes */
  int n = 1, q = 0;
  for (; *line && *line != '\n'; line++) {
    if (*line == '"') q = !q;
    else if (*line == ',' && !q) n++;
  }
  return n;
}

static void test_csv(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/out.csv", dir);
  emit(OPF_FMT_CSV, path, 1);
  char *s = slurp(path);
  assert_non_null(s);
  assert_int_equal(strncmp(s, "op,category,impl,set,dtype,pass,status,", 39), 0);
  int hdr = count_fields(s), lines = 0;
  for (char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    assert_int_equal(count_fields(l), hdr);
    lines++;
  }
  assert_int_equal(lines, 3);
  assert_non_null(strstr(s, "task-clock_per_call"));
  /* contention and attempts: measured on the ok record, empty on the skipped one */
  assert_non_null(strstr(s, ",minor_faults_per_call,contention,attempts,message"));
  char *ok = strchr(s, '\n') + 1, *sk = strchr(ok, '\n') + 1;
  assert_non_null(strstr(ok, ",0.125,2,"));
  assert_true(strstr(sk, ",,,needs 9 GiB") || strstr(sk, ",,,\"needs 9 GiB"));
}

/* Google Benchmark JSON: the contention of the kept attempt and the attempts as user counters
 * of a measured case. */
static void test_gbench(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/out.gbench.json", dir);
  emit(OPF_FMT_GBENCH, path, 1);
  char *s = slurp(path);
  assert_non_null(s);
  cJSON *root = cJSON_Parse(s);
  assert_non_null(root);
  cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "benchmarks"), 0);
  assert_non_null(b);
  assert_float_equal(cJSON_GetObjectItem(b, "contention")->valuedouble, 0.125, 1e-12);
  assert_int_equal(cJSON_GetObjectItem(b, "attempts")->valueint, 2);
  cJSON_Delete(root);
}

static void test_table_and_md(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/out.md", dir);
  emit(OPF_FMT_MD, path, 1);
  char *s = slurp(path);
  assert_non_null(strstr(s, "| op"));
  assert_non_null(strstr(s, "| relu"));
  assert_non_null(strstr(s, "skipped: needs 9 GiB"));
  snprintf(path, sizeof path, "%s/out.txt", dir);
  emit(OPF_FMT_TABLE, path, 1);
  s = slurp(path);
  assert_non_null(strstr(s, "1.10 ms")); /* median, with its unit */
  assert_non_null(strstr(s, "task-clock/call"));
}

/* The topdown preset's figures in every format, from fixed counts of the skx row in one group:
 * cycles 1000 (4000 slots), issued 1000, retired 800, fe 200, recovery 0: ret 20%, bad 5%,
 * fe 5%, be 70%, verdict "back-end bound 70% of slots". Without the preset: none of it. */
static void emit_td(opf_format f, const char *path) {
  static const char *const names[] = {"perf::CYCLES", "skx::UOPS_ISSUED:ANY",
                                      "skx::UOPS_RETIRED:RETIRE_SLOTS",
                                      "skx::IDQ_UOPS_NOT_DELIVERED:CORE",
                                      "skx::INT_MISC:RECOVERY_CYCLES"};
  static const double v[] = {1000, 1000, 800, 200, 0};
  opf_context saved = ctx;
  ctx.n_events = 5;
  opf_result r;
  fake_result(&r, OPF_ST_OK);
  r.n_events = 5;
  for (int i = 0; i < 5; i++) {
    memset(&ctx.events[i], 0, sizeof ctx.events[i]);
    snprintf(ctx.events[i].name, 128, "%s", names[i]);
    ctx.events[i].group = 1;
    opf_event_result *e = &r.events[i];
    memset(e, 0, sizeof *e);
    snprintf(e->name, 128, "%s", names[i]);
    snprintf(e->plm, sizeof e->plm, "user");
    e->has_value = 1;
    e->group = 1;
    e->per_call = e->mean_per_call = v[i];
  }
  opf_emitter *e;
  opf_err err;
  assert_int_equal(opf_emitter_begin(&e, f, path, &ctx, &err), OPF_OK);
  assert_int_equal(opf_emitter_record(e, &r), 0);
  assert_int_equal(opf_emitter_end(e, 1, &err), OPF_OK);
  ctx = saved;
}

static void test_topdown_formats(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/td.txt", dir);
  emit_td(OPF_FMT_TABLE, path);
  char *s = slurp(path);
  assert_non_null(strstr(s, "td:ret"));
  assert_non_null(strstr(s, "td:be"));
  assert_non_null(strstr(s, "70%"));
  assert_non_null(strstr(s, "back-end bound 70% of slots"));
  assert_non_null(strstr(s, "top-down (td:* = % of slots): Intel Skylake-SP"));

  snprintf(path, sizeof path, "%s/td.json", dir);
  emit_td(OPF_FMT_JSON, path);
  cJSON *root = cJSON_Parse(slurp(path));
  assert_non_null(root);
  cJSON *t = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "results"), 0),
                                 "topdown");
  assert_non_null(t);
  assert_string_equal(cJSON_GetObjectItem(t, "model")->valuestring, "skx");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(t, "available")));
  cJSON *l1 = cJSON_GetObjectItem(t, "level1");
  assert_float_equal(cJSON_GetObjectItem(l1, "backend_bound")->valuedouble, 0.7, 1e-12);
  assert_float_equal(cJSON_GetObjectItem(l1, "retiring")->valuedouble, 0.2, 1e-12);
  assert_float_equal(cJSON_GetObjectItem(l1, "bad_speculation")->valuedouble, 0.05, 1e-12);
  assert_float_equal(cJSON_GetObjectItem(l1, "frontend_bound")->valuedouble, 0.05, 1e-12);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t, "level2")), 0);
  assert_string_equal(cJSON_GetObjectItem(t, "verdict")->valuestring, "back-end bound 70% of slots");
  assert_non_null(strstr(cJSON_GetObjectItem(t, "source")->valuestring, "Yasin"));
  cJSON_Delete(root);

  snprintf(path, sizeof path, "%s/td.csv", dir);
  emit_td(OPF_FMT_CSV, path);
  s = slurp(path);
  assert_non_null(strstr(s, ",td_retiring,td_bad_speculation,td_frontend_bound,td_backend_bound,td_verdict\n"));
  assert_non_null(strstr(s, ",0.2,0.05,0.05,0.7,back-end bound 70% of slots\n"));
  int hdr = count_fields(s);
  assert_int_equal(count_fields(strchr(s, '\n') + 1), hdr);

  /* without the preset (the default context: task-clock): no td columns, no topdown object */
  snprintf(path, sizeof path, "%s/plain.csv", dir);
  emit(OPF_FMT_CSV, path, 1);
  assert_null(strstr(slurp(path), "td_"));
  snprintf(path, sizeof path, "%s/plain.json", dir);
  emit(OPF_FMT_JSON, path, 1);
  assert_null(strstr(slurp(path), "\"topdown\""));
  snprintf(path, sizeof path, "%s/plain.txt", dir);
  emit(OPF_FMT_TABLE, path, 1);
  assert_null(strstr(slurp(path), "td:"));
}

static void test_no_file_without_commit(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/never.json", dir);
  emit(OPF_FMT_JSON, path, 0);
  assert_int_equal(access(path, F_OK), -1);
  opf_err err;
  opf_emitter *e;
  assert_int_equal(opf_emitter_begin(&e, OPF_FMT_JSON, "/nonexistent-dir/x.json", &ctx, &err), OPF_OK);
  assert_int_equal(opf_emitter_end(e, 1, &err), OPF_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent-dir/x.json"));
}

/* -o /dev/null, a FIFO: written in place. Renaming the temporary file over it replaced the
 * node with a regular file (as root: /dev/null itself, for every later redirection). */
static void test_special_file_in_place(void **state) {
  (void)state;
  char fifo[128];
  snprintf(fifo, sizeof fifo, "%s/pipe", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader, so the writer's open does not block */
  assert_true(rd >= 0);
  opf_err err;
  assert_int_equal(opf_write_atomic(fifo, "hello\n", 6, &err), OPF_OK);
  struct stat sb;
  assert_int_equal(stat(fifo, &sb), 0);
  assert_true(S_ISFIFO(sb.st_mode));
  char buf[16] = {0};
  assert_int_equal(read(rd, buf, sizeof buf), 6);
  assert_string_equal(buf, "hello\n");
  close(rd);
  /* no temporary file left next to it */
  DIR *d = opendir(dir);
  struct dirent *de;
  while ((de = readdir(d))) assert_null(strstr(de->d_name, ".tmp."));
  closedir(d);
  unlink(fifo);
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_json), cmocka_unit_test(test_csv), cmocka_unit_test(test_gbench),
                                     cmocka_unit_test(test_table_and_md),
                                     cmocka_unit_test(test_topdown_formats),
                                     cmocka_unit_test(test_no_file_without_commit),
                                     cmocka_unit_test(test_special_file_in_place)};
  return cmocka_run_group_tests(tests, setup, teardown);
}

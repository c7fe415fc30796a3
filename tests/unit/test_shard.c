/* test_shard.c: shards (src/shard.c): K/N parsing and the environment's GTEST_* and
 * JOB_COMPLETION_INDEX; every case in exactly one shard (union = all, disjoint) for several N,
 * the split by key (a case keeps its shard when others are added); and merging shard reports:
 * records joined, "shards" listed, mismatched settings, builds or CPUs and overlapping shards
 * refused with a one-line reason. */
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/shard.h"

static void test_parse(void **state) {
  (void)state;
  opf_shard s;
  opf_err e;
  assert_int_equal(opf_shard_parse("0/4", &s, &e), OPF_OK);
  assert_true(s.index == 0 && s.count == 4);
  assert_int_equal(opf_shard_parse("3/4", &s, &e), OPF_OK);
  const char *bad[] = {"4/4", "-1/4", "1/0", "1", "a/b", "1/", "/2", "1/2/3", "1 /2", NULL};
  for (int i = 0; bad[i]; i++) assert_int_equal(opf_shard_parse(bad[i], &s, &e), OPF_EINVAL);
  /* precedence: option, then GTEST_*, then JOB_COMPLETION_INDEX with a total */
  assert_int_equal(opf_shard_resolve("1/3", "0", "2", "5", "9", &s, &e), OPF_OK);
  assert_true(s.index == 1 && s.count == 3);
  assert_int_equal(opf_shard_resolve(NULL, "1", "2", "5", "9", &s, &e), OPF_OK);
  assert_true(s.index == 1 && s.count == 2);
  assert_int_equal(opf_shard_resolve(NULL, NULL, NULL, "5", "9", &s, &e), OPF_OK);
  assert_true(s.index == 5 && s.count == 9);
  assert_int_equal(opf_shard_resolve(NULL, NULL, NULL, "5", NULL, &s, &e), OPF_OK);
  assert_int_equal(s.count, 0); /* an Indexed Job without a total: not sharding */
  assert_int_equal(opf_shard_resolve(NULL, NULL, NULL, NULL, NULL, &s, &e), OPF_OK);
  assert_int_equal(s.count, 0);
  assert_int_equal(opf_shard_resolve(NULL, NULL, NULL, NULL, "4", &s, &e), OPF_EINVAL);
  assert_int_equal(opf_shard_resolve(NULL, "2", "2", NULL, NULL, &s, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "GTEST_SHARD_INDEX"));
  assert_int_equal(opf_shard_resolve(NULL, "1", NULL, NULL, NULL, &s, &e), OPF_EINVAL);
  assert_int_equal(opf_shard_resolve(NULL, NULL, NULL, "9", "9", &s, &e), OPF_EINVAL);
}

static void test_coverage(void **state) {
  (void)state;
  enum { NK = 500 };
  static char keys[NK][64];
  for (int i = 0; i < NK; i++) snprintf(keys[i], sizeof keys[i], "op%d native float32 x=%dx%d", i % 37, i, i % 7);
  const int counts[] = {1, 2, 3, 7, 16};
  for (int c = 0; c < 5; c++) {
    int n = counts[c], per[16] = {0};
    for (int i = 0; i < NK; i++) {
      int owners = 0;
      for (int k = 0; k < n; k++) {
        opf_shard s = {k, n};
        if (opf_shard_owns(&s, keys[i])) owners++, per[k]++;
      }
      assert_int_equal(owners, 1); /* union = all, disjoint */
    }
    for (int k = 0; k < n; k++) assert_true(per[k] > NK / n / 2); /* no shard starves */
  }
  /* by key, not position: the same key, the same shard, whatever else is in the list */
  opf_shard s = {2, 5};
  assert_int_equal(opf_shard_owns(&s, keys[10]), opf_shard_owns(&s, "op10 native float32 x=10x3"));
  opf_shard none = {0, 0};
  assert_true(opf_shard_owns(&none, "anything"));
  assert_true(opf_shard_hash("a") != opf_shard_hash("b"));
}

static char *shard_report(const char *host, const char *when, int threads, const char *commit,
                          const char *ops) {
  char buf[4096];
  int o = snprintf(buf, sizeof buf,
                   "{\"schema_version\": 1, \"context\": {\"tool\": {\"version\": \"0.1.0\", "
                   "\"git_hash\": \"%s\"}, \"host\": {\"hostname\": \"%s\", \"cpu_model\": \"CPU\"}, "
                   "\"settings\": {\"threads\": %d, \"seed\": 42}, \"perf\": {\"counters\": "
                   "[{\"name\": \"task-clock\", \"status\": \"counted\"}]}, \"timestamp\": \"%s\", "
                   "\"command\": \"opperf run\"}, \"results\": [",
                   commit, host, threads, when);
  char list[256];
  snprintf(list, sizeof list, "%s", ops);
  int first = 1;
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save), first = 0)
    o += snprintf(buf + o, sizeof buf - (size_t)o,
                  "%s{\"op\": \"%s\", \"impl\": \"native\", \"spec\": \"x=4\", \"dtype\": \"float32\", "
                  "\"pass\": \"fwd\", \"status\": \"ok\"}", first ? "" : ", ", t);
  snprintf(buf + o, sizeof buf - (size_t)o, "]}");
  return strdup(buf);
}

static void test_merge(void **state) {
  (void)state;
  char *a = shard_report("pod-a", "2026-11-28T01:00:05Z", 1, "abc", "relu,add"),
       *b = shard_report("pod-b", "2026-11-28T01:00:01Z", 1, "abc", "mul"),
       *c = shard_report("pod-c", "2026-11-28T01:00:09Z", 2, "abc", "exp"),
       *d = shard_report("pod-d", "2026-11-28T01:00:09Z", 1, "xyz", "exp"),
       *o = shard_report("pod-e", "2026-11-28T01:00:09Z", 1, "abc", "sum,add");
  const char *names[] = {"a.json", "b.json"}, *texts[] = {a, b};
  char *out;
  opf_err e;
  assert_int_equal(opf_reports_merge(texts, names, 2, &out, &e), OPF_OK);
  cJSON *m = cJSON_Parse(out);
  assert_non_null(m);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(m, "results")), 3);
  cJSON *ctx = cJSON_GetObjectItem(m, "context");
  assert_string_equal(cJSON_GetObjectItem(ctx, "timestamp")->valuestring, "2026-11-28T01:00:01Z");
  cJSON *sh = cJSON_GetObjectItem(ctx, "shards");
  assert_int_equal(cJSON_GetArraySize(sh), 2);
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sh, 1), "hostname")->valuestring, "pod-b");
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sh, 0), "records")->valueint, 2);
  cJSON_Delete(m);
  free(out);
  /* settings differ: refused, one line naming the files and the field */
  texts[1] = c, names[1] = "c.json";
  assert_int_equal(opf_reports_merge(texts, names, 2, &out, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "context.settings"));
  assert_non_null(strstr(e.msg, "c.json"));
  assert_null(strchr(e.msg, '\n'));
  texts[1] = d, names[1] = "d.json";
  assert_int_equal(opf_reports_merge(texts, names, 2, &out, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "git_hash"));
  /* a case in two reports: overlapping shards */
  texts[1] = o, names[1] = "o.json";
  assert_int_equal(opf_reports_merge(texts, names, 2, &out, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "overlapping"));
  assert_non_null(strstr(e.msg, "add native"));
  texts[1] = "[1, 2]", names[1] = "x.json";
  assert_int_equal(opf_reports_merge(texts, names, 2, &out, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "x.json is not an opperf JSON report"));
  free(a), free(b), free(c), free(d), free(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse), cmocka_unit_test(test_coverage),
                                     cmocka_unit_test(test_merge)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_store.c: the results store (src/store*.c) on synthetic opperf JSON reports: a run's
 * context, records, raw samples and counters round-trip (a counter that did not run keeps its
 * status and reason and has no value); trends are per machine unless asked; change points name
 * the first run after a step and the counters that moved; a v1 file migrates to v2; two
 * concurrent writers lose nothing; a writer killed with SIGKILL in the middle of its
 * transaction leaves the store intact with only its run missing (and while it is stopped there,
 * a reader opens the store at once and sees the committed runs only); bad files are refused.
 * SQLite always; the same tests against PostgreSQL when OPPERF_TEST_PG_URL is set (the CLI test
 * test_store_pg.sh starts a server and sets it). */
#include <cjson/cJSON.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/store.h"
#include "store_impl.h"

static char url[600];
static const char *pg_url; /* OPPERF_TEST_PG_URL */

/* A fresh store for each test: a new file, or the PostgreSQL database emptied. */
static int fresh(void **state) {
  (void)state;
  static int k;
  if (pg_url) {
    snprintf(url, sizeof url, "%s", pg_url);
    opf_store *st;
    opf_err e;
    if (store_open_version(&st, url, 0, &e)) {
      fprintf(stderr, "%s\n", e.msg);
      return -1;
    }
    int rc = st->ops->exec(st, "DROP TABLE IF EXISTS counters, records, runs, schema_version CASCADE", 0, NULL, NULL, &e);
    opf_store_close(st);
    return rc;
  }
  snprintf(url, sizeof url, "%s/opperf-test-store-%d-%d.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), k++);
  return 0;
}

static int cleanup(void **state) {
  (void)state;
  if (!pg_url) {
    char p[700];
    unlink(url);
    snprintf(p, sizeof p, "%s-wal", url), unlink(p);
    snprintf(p, sizeof p, "%s-shm", url), unlink(p);
  }
  return 0;
}

/* A report: host, commit, n_ops cases "op0".."opN" with median time[i] (+-2%), 5 raw samples,
 * counters: task-clock counted (= time x 1e9), cache-misses counted (= misses[i]) and
 * LLC-load-misses unsupported with a reason. */
static char *report(const char *host, const char *commit, const char *when, int n_ops,
                    const double *time, const double *misses) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddNumberToObject(d, "schema_version", 1);
  cJSON *c = cJSON_AddObjectToObject(d, "context");
  cJSON *tool = cJSON_AddObjectToObject(c, "tool");
  cJSON_AddStringToObject(tool, "version", "0.1.0");
  cJSON_AddStringToObject(tool, "git_hash", commit);
  cJSON_AddStringToObject(tool, "build_type", "RelWithDebInfo");
  cJSON *h = cJSON_AddObjectToObject(c, "host");
  cJSON_AddStringToObject(h, "hostname", host);
  cJSON_AddStringToObject(h, "cpu_model", "Test CPU");
  cJSON_AddNumberToObject(h, "cpus_online", 2);
  cJSON *s = cJSON_AddObjectToObject(c, "settings");
  cJSON_AddNumberToObject(s, "threads", 1);
  cJSON_AddStringToObject(c, "timestamp", when);
  cJSON *rs = cJSON_AddArrayToObject(d, "results");
  for (int i = 0; i < n_ops; i++) {
    cJSON *r = cJSON_CreateObject();
    char op[16];
    snprintf(op, sizeof op, "op%d", i);
    cJSON_AddStringToObject(r, "op", op);
    cJSON_AddStringToObject(r, "impl", "native");
    cJSON_AddStringToObject(r, "set", "standard");
    cJSON_AddStringToObject(r, "spec", "x=64x64");
    cJSON_AddStringToObject(r, "dtype", "float32");
    cJSON_AddStringToObject(r, "pass", "fwd");
    cJSON_AddStringToObject(r, "status", "ok");
    cJSON *t = cJSON_AddObjectToObject(r, "time");
    cJSON_AddNumberToObject(t, "median", time[i]);
    double ci[2] = {time[i] * 0.98, time[i] * 1.02}, raw[5];
    for (int k = 0; k < 5; k++) raw[k] = time[i] * (0.98 + 0.01 * k);
    cJSON_AddItemToObject(t, "median_ci95", cJSON_CreateDoubleArray(ci, 2));
    cJSON_AddItemToObject(t, "raw", cJSON_CreateDoubleArray(raw, 5));
    cJSON *cs = cJSON_AddArrayToObject(r, "counters");
    const char *names[3] = {"task-clock", "cache-misses", "LLC-load-misses"};
    for (int k = 0; k < 3; k++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "name", names[k]);
      cJSON_AddStringToObject(e, "status", k < 2 ? "counted" : "not-supported");
      if (k < 2) {
        cJSON_AddNumberToObject(e, "per_call", k ? misses[i] : time[i] * 1e9);
        double rv[2] = {1, 2};
        cJSON_AddItemToObject(e, "raw", cJSON_CreateDoubleArray(rv, 2));
      } else {
        cJSON_AddStringToObject(e, "reason", "no such event on this PMU");
      }
      cJSON_AddItemToArray(cs, e);
    }
    cJSON_AddItemToArray(rs, r);
  }
  /* a failed case: stored with its status, no median */
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "op", "broken");
  cJSON_AddStringToObject(f, "impl", "native");
  cJSON_AddStringToObject(f, "spec", "x=1");
  cJSON_AddStringToObject(f, "dtype", "float32");
  cJSON_AddStringToObject(f, "pass", "fwd");
  cJSON_AddStringToObject(f, "status", "crashed");
  cJSON_AddStringToObject(f, "message", "signal 11");
  cJSON_AddItemToArray(rs, f);
  char *txt = cJSON_Print(d);
  cJSON_Delete(d);
  return txt;
}

static opf_store *open_ok(void) {
  opf_store *st = NULL;
  opf_err e;
  int rc = opf_store_open(&st, url, 1, &e);
  if (rc) fprintf(stderr, "open: %s\n", e.msg);
  assert_int_equal(rc, OPF_OK);
  return st;
}

static long long add(opf_store *st, const char *host, const char *commit, int day, int n_ops,
                     const double *time, const double *misses, const char *shard) {
  char when[32];
  snprintf(when, sizeof when, "2026-11-%02dT10:00:00Z", day);
  char *txt = report(host, commit, when, n_ops, time, misses);
  opf_err e;
  long long id = -1;
  opf_store_add_opts o = {.shard = shard};
  int rc = opf_store_add_report(st, txt, &o, &id, &e);
  if (rc) fprintf(stderr, "add: %s\n", e.msg);
  assert_int_equal(rc, OPF_OK);
  free(txt);
  return id;
}

static void test_roundtrip(void **state) {
  (void)state;
  opf_store *st = open_ok();
  int v;
  assert_int_equal(opf_store_version(st, &v, NULL), OPF_OK);
  assert_int_equal(v, OPF_STORE_VERSION);
  double t[2] = {1e-3, 2e-5}, m[2] = {100, 7};
  long long a = add(st, "hostA", "abc123", 1, 2, t, m, NULL);
  t[0] = 1.1e-3;
  long long b = add(st, "hostA", "def456", 2, 2, t, m, "1/4");
  assert_true(b > a);
  opf_store_run *r;
  int n;
  assert_int_equal(opf_store_runs(st, NULL, &r, &n, NULL), OPF_OK);
  assert_int_equal(n, 2);
  assert_true(r[0].id == a && r[1].id == b);
  assert_string_equal(r[0].git_hash, "abc123");
  assert_string_equal(r[1].shard, "1/4");
  assert_string_equal(r[0].shard, "");
  assert_int_equal(r[0].n_records, 3);
  assert_int_equal(r[0].n_failed, 1);
  assert_string_equal(r[0].machine, "hostA (Test CPU, 2 CPUs)");
  free(r);
  opf_store_series *s;
  assert_int_equal(opf_store_series_load(st, "op0", NULL, 0, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 1);
  assert_string_equal(s[0].key, "op0 native float32 fwd x=64x64");
  assert_int_equal(s[0].n, 2);
  assert_true(fabs(s[0].p[0].median - 1e-3) < 1e-15 && fabs(s[0].p[1].median - 1.1e-3) < 1e-15);
  assert_true(fabs(s[0].p[1].ci_lo - 1.1e-3 * 0.98) < 1e-15);
  assert_int_equal(s[0].p[0].n_samples, 5);
  assert_int_equal(s[0].p[0].n_counters, 3);
  const opf_store_counter *c = s[0].p[0].counters;
  assert_string_equal(c[1].name, "cache-misses");
  assert_true(c[1].has_value && c[1].per_call == 100);
  assert_string_equal(c[2].status, "not-supported");
  assert_string_equal(c[2].reason, "no such event on this PMU");
  assert_false(c[2].has_value); /* never a 0 */
  opf_store_series_free(s, n);
  /* the failed case is stored with its status */
  assert_int_equal(opf_store_series_load(st, "broken*", NULL, 0, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 1);
  assert_string_equal(s[0].p[0].status, "crashed");
  opf_store_series_free(s, n);
  /* every case, glob on the key */
  assert_int_equal(opf_store_series_load(st, "* float32 fwd *", NULL, 0, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 3);
  opf_store_series_free(s, n);
  assert_int_equal(opf_store_check(st, NULL), OPF_OK);
  opf_store_close(st);
}

static void test_machines(void **state) {
  (void)state;
  opf_store *st = open_ok();
  double t[1] = {1e-3}, m[1] = {5};
  add(st, "hostA", "c1", 1, 1, t, m, NULL);
  add(st, "hostB", "c1", 2, 1, t, m, NULL);
  add(st, "hostA", "c2", 3, 1, t, m, NULL);
  opf_store_series *s;
  int n;
  assert_int_equal(opf_store_series_load(st, "op0", NULL, 0, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 2); /* one trend per machine */
  assert_int_equal(s[0].n + s[1].n, 3);
  assert_true(strstr(s[0].machine, "hostA") && s[0].n == 2);
  opf_store_series_free(s, n);
  assert_int_equal(opf_store_series_load(st, "op0", "hostB (Test CPU, 2 CPUs)", 0, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 1);
  assert_int_equal(s[0].n, 1);
  opf_store_series_free(s, n);
  assert_int_equal(opf_store_series_load(st, "op0", NULL, 1, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 1); /* asked: one trend over every machine */
  assert_int_equal(s[0].n, 3);
  opf_store_series_free(s, n);
  opf_store_run *r;
  assert_int_equal(opf_store_runs(st, "hostA (Test CPU, 2 CPUs)", &r, &n, NULL), OPF_OK);
  assert_int_equal(n, 2);
  free(r);
  opf_store_close(st);
}

static void test_changes(void **state) {
  (void)state;
  opf_store *st = open_ok();
  long long first_after = 0;
  /* op0: +30% time and +28% cache-misses from run 8 on; op1 flat (the 3% wiggle is noise) */
  for (int i = 0; i < 14; i++) {
    double wig = 1 + 0.03 * ((i * 7) % 5 - 2) / 2.0;
    double t[2] = {(i < 8 ? 1e-3 : 1.3e-3) * wig, 2e-5 * wig}, m[2] = {i < 8 ? 1000 : 1280, 50};
    long long id = add(st, "hostA", i < 8 ? "old" : "new", i + 1, 2, t, m, NULL);
    if (i == 8) first_after = id;
  }
  opf_store_change *ch;
  int n;
  opf_cp_opts o = {.min_change = -1};
  opf_err e;
  assert_int_equal(opf_store_changes(st, NULL, NULL, 0, &o, &ch, &n, &e), OPF_OK);
  assert_int_equal(n, 1);
  assert_string_equal(ch[0].key, "op0 native float32 fwd x=64x64");
  assert_true(ch[0].run_id == first_after);
  assert_string_equal(ch[0].git_hash, "new");
  assert_int_equal(ch[0].index, 8);
  assert_true(fabs(ch[0].change - 0.30) < 0.04);
  /* the counters that moved with it: cache-misses +28% and task-clock (= time) */
  assert_int_equal(ch[0].n_moved, 2);
  int mi = !strcmp(ch[0].moved[0].name, "cache-misses") ? 0 : 1;
  assert_string_equal(ch[0].moved[mi].name, "cache-misses");
  assert_true(fabs(ch[0].moved[mi].change - 0.28) < 1e-9);
  assert_string_equal(ch[0].moved[1 - mi].name, "task-clock");
  assert_true(fabs(ch[0].moved[0].change) >= fabs(ch[0].moved[1].change)); /* largest first */
  free(ch);
  opf_store_close(st);
}

/* A v1 store (counters inside the record JSON) opened by this version: migrated to v2 with the
 * counters in their table, statuses and reasons kept. */
static void test_migrate_v1(void **state) {
  (void)state;
  opf_store *st;
  opf_err e;
  assert_int_equal(store_open_version(&st, url, 1, &e), OPF_OK);
  int v;
  assert_int_equal(opf_store_version(st, &v, NULL), OPF_OK);
  assert_int_equal(v, 1);
  const char *run[] = {"2026-01-01T00:00:00Z", "old-host (Old CPU, 4 CPUs)", "old-host", "{}"};
  store_res id = {0};
  assert_int_equal(st->ops->exec(st, "INSERT INTO runs (started, machine, hostname, n_records, n_failed, context)"
                                     " VALUES (?, ?, ?, 1, 0, ?) RETURNING id", 4, run, &id, &e), OPF_OK);
  const char *rec[] = {store_cell(&id, 0, 0),
                       "{\"op\":\"relu\",\"status\":\"ok\",\"counters\":[{\"name\":\"cycles\",\"status\":\"counted\","
                       "\"per_call\":1234},{\"name\":\"LLC-misses\",\"status\":\"not-supported\","
                       "\"reason\":\"no PMU\"}]}"};
  assert_int_equal(st->ops->exec(st, "INSERT INTO records (run_id, case_key, op, status, median, record)"
                                     " VALUES (?, 'relu native float32 fwd x=8', 'relu', 'ok', 0.001, ?)", 2, rec, NULL, &e), OPF_OK);
  store_res_free(&id);
  opf_store_close(st);
  /* opening migrates */
  assert_int_equal(opf_store_open(&st, url, 0, &e), OPF_OK);
  assert_int_equal(opf_store_version(st, &v, NULL), OPF_OK);
  assert_int_equal(v, 2);
  opf_store_series *s;
  int n;
  assert_int_equal(opf_store_series_load(st, "relu", NULL, 0, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 1);
  assert_int_equal(s[0].p[0].n_counters, 2);
  assert_true(s[0].p[0].counters[0].has_value && s[0].p[0].counters[0].per_call == 1234);
  assert_false(s[0].p[0].counters[1].has_value);
  assert_string_equal(s[0].p[0].counters[1].reason, "no PMU");
  opf_store_series_free(s, n);
  /* the counters left the record JSON */
  store_res r = {0};
  assert_int_equal(st->ops->exec(st, "SELECT record FROM records", 0, NULL, &r, &e), OPF_OK);
  assert_null(strstr(store_cell(&r, 0, 0), "counters"));
  store_res_free(&r);
  /* new runs go in as v2 */
  double t[1] = {1e-3}, m[1] = {1};
  add(st, "hostA", "x", 2, 1, t, m, "0/2");
  assert_int_equal(opf_store_check(st, NULL), OPF_OK);
  opf_store_close(st);
}

/* Two processes add 12 runs each at the same time: all 24 arrive, none half. */
static void test_concurrent_writers(void **state) {
  (void)state;
  opf_store *st = open_ok(); /* created before the writers start */
  opf_store_close(st);
  pid_t kids[2];
  for (int w = 0; w < 2; w++) {
    kids[w] = fork();
    assert_true(kids[w] >= 0);
    if (kids[w] == 0) {
      opf_store *s2;
      opf_err e;
      int bad = opf_store_open(&s2, url, 1, &e);
      double t[3] = {1e-3, 2e-3, 3e-3}, m[3] = {1, 2, 3};
      for (int i = 0; !bad && i < 12; i++) {
        char host[16], when[32];
        snprintf(host, sizeof host, "writer%d", w);
        snprintf(when, sizeof when, "2026-11-01T10:00:%02dZ", i);
        char *txt = report(host, "c", when, 3, t, m);
        bad = opf_store_add_report(s2, txt, NULL, NULL, &e);
        free(txt);
      }
      if (bad) fprintf(stderr, "writer %d: %s\n", w, e.msg);
      if (!bad) opf_store_close(s2);
      _exit(bad ? 1 : 0);
    }
  }
  for (int w = 0; w < 2; w++) {
    int status;
    assert_int_equal(waitpid(kids[w], &status, 0), kids[w]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  st = open_ok();
  opf_store_run *r;
  int n;
  assert_int_equal(opf_store_runs(st, NULL, &r, &n, NULL), OPF_OK);
  assert_int_equal(n, 24);
  for (int i = 0; i < n; i++) assert_int_equal(r[i].n_records, 4);
  free(r);
  opf_store_series *s;
  assert_int_equal(opf_store_series_load(st, NULL, NULL, 1, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 4);
  for (int i = 0; i < n; i++) assert_int_equal(s[i].n, 24);
  opf_store_series_free(s, n);
  assert_int_equal(opf_store_check(st, NULL), OPF_OK);
  opf_store_close(st);
}

/* kill -9 in the middle of a run's transaction (stopped by the test hook after 2 of its 4
 * records): the store opens intact, the earlier runs are whole, nothing of the killed run. */
static void test_killed_writer(void **state) {
  (void)state;
  opf_store *st = open_ok();
  double t[3] = {1e-3, 2e-3, 3e-3}, m[3] = {1, 2, 3};
  add(st, "hostA", "c1", 1, 3, t, m, NULL);
  add(st, "hostA", "c2", 2, 3, t, m, NULL);
  opf_store_close(st);
  pid_t kid = fork();
  assert_true(kid >= 0);
  if (kid == 0) {
    setenv(STORE_TEST_STOP_ENV, "2", 1);
    opf_store *s2;
    opf_err e;
    if (opf_store_open(&s2, url, 1, &e)) _exit(3);
    char *txt = report("hostA", "killed", "2026-11-03T10:00:00Z", 3, t, m);
    opf_store_add_report(s2, txt, NULL, NULL, &e); /* stops itself inside */
    _exit(4);
  }
  int status;
  assert_int_equal(waitpid(kid, &status, WUNTRACED), kid);
  assert_true(WIFSTOPPED(status)); /* stopped mid-transaction, 2 records written */
  /* meanwhile a reader opens the store at once and sees only committed runs */
  st = open_ok();
  opf_store_run *r;
  int n;
  assert_int_equal(opf_store_runs(st, NULL, &r, &n, NULL), OPF_OK);
  assert_int_equal(n, 2);
  free(r);
  opf_store_close(st);
  assert_int_equal(kill(kid, SIGKILL), 0);
  assert_int_equal(waitpid(kid, &status, 0), kid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  st = open_ok();
  opf_err e;
  assert_int_equal(opf_store_check(st, &e), OPF_OK);
  assert_int_equal(opf_store_runs(st, NULL, &r, &n, NULL), OPF_OK);
  assert_int_equal(n, 2);
  assert_string_equal(r[1].git_hash, "c2");
  free(r);
  opf_store_series *s;
  assert_int_equal(opf_store_series_load(st, NULL, NULL, 0, &s, &n, NULL), OPF_OK);
  assert_int_equal(n, 4);
  for (int i = 0; i < n; i++) assert_int_equal(s[i].n, 2);
  opf_store_series_free(s, n);
  /* and the store takes new runs */
  add(st, "hostA", "c3", 3, 3, t, m, NULL);
  opf_store_close(st);
}

static void test_bad_input(void **state) {
  (void)state;
  opf_store *st = open_ok();
  opf_err e;
  assert_int_equal(opf_store_add_report(st, "{not json", NULL, NULL, &e), OPF_EINVAL);
  assert_int_equal(opf_store_add_report(st, "{\"results\": []}", NULL, NULL, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "not an opperf JSON report"));
  opf_store_run *r;
  int n;
  assert_int_equal(opf_store_runs(st, NULL, &r, &n, NULL), OPF_OK);
  assert_int_equal(n, 0);
  free(r);
  /* a schema newer than this opperf: refused */
  assert_int_equal(st->ops->exec(st, "UPDATE schema_version SET version = 99", 0, NULL, NULL, &e), OPF_OK);
  opf_store_close(st);
  assert_int_equal(opf_store_open(&st, url, 1, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "schema version 99"));
  if (pg_url) return;
  /* SQLite only: a file that is not a database, and no file at all without create */
  FILE *f = fopen(url, "w");
  assert_non_null(f);
  fputs("{\"this is\": \"json, not a database\"}                                    \n", f);
  fclose(f);
  char p[700];
  snprintf(p, sizeof p, "%s-wal", url), unlink(p);
  snprintf(p, sizeof p, "%s-shm", url), unlink(p);
  assert_int_not_equal(opf_store_open(&st, url, 1, &e), OPF_OK);
  assert_non_null(strstr(e.msg, url));
  assert_int_equal(opf_store_open(&st, "/nonexistent/dir/x.db", 0, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "no store"));
}

int main(void) {
  pg_url = getenv("OPPERF_TEST_PG_URL");
  if (pg_url && !*pg_url) pg_url = NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_roundtrip, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_machines, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_changes, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_migrate_v1, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_concurrent_writers, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_killed_writer, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_bad_input, fresh, cleanup),
  };
  return cmocka_run_group_tests_name(pg_url ? "store (postgresql)" : "store (sqlite)", tests, NULL, NULL);
}

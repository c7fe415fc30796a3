/* test_compare.c: the regression gate. Mann-Whitney U against values from SciPy 1.10
 * (scipy.stats.mannwhitneyu, two-sided), and opf_compare_files on the fixture reports in
 * tests/fixtures/compare: regression, improvement, noise, missing, new and crashed cases,
 * category geometric means, and refusal of runs from another CPU or thread count. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/compare.h"

static void test_mann_whitney(void **state) {
  (void)state;
  double u, p;
  const double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
  assert_int_equal(opf_mann_whitney(a, 5, b, 5, &u, &p), OPF_OK);
  assert_true(u == 0);
  assert_true(fabs(p - 0.007936507936507936) < 1e-12); /* exact: 2/252 */
  assert_int_equal(opf_mann_whitney(a, 3, b, 3, &u, &p), OPF_OK);
  assert_true(fabs(p - 0.1) < 1e-12);
  const double c[] = {3.1, 1.2, 5.5, 2.2, 4.8, 0.3}, d[] = {2.5, 6.1, 7.7, 4.9, 8.8, 3.3, 9.1};
  assert_int_equal(opf_mann_whitney(c, 6, d, 7, &u, &p), OPF_OK);
  assert_true(u == 6);
  assert_true(fabs(p - 0.03496503496503496) < 1e-12);
  /* Ties: normal approximation with tie and continuity corrections. */
  double e[30], f[30];
  const double e0[10] = {1, 2, 2, 3, 3, 3, 4, 5, 5, 6}, f0[10] = {2, 3, 4, 4, 5, 6, 6, 7, 7, 8};
  for (int i = 0; i < 30; i++) e[i] = e0[i % 10], f[i] = f0[i % 10];
  assert_int_equal(opf_mann_whitney(e, 30, f, 30, &u, &p), OPF_OK);
  assert_true(u == 211.5);
  assert_true(fabs(p - 0.0003723827481789191) / 0.000372 < 1e-6);
  /* Symmetric in the p-value; identical samples give p = 1. */
  double p2;
  assert_int_equal(opf_mann_whitney(f, 30, e, 30, &u, &p2), OPF_OK);
  assert_true(fabs(p - p2) < 1e-15);
  assert_int_equal(opf_mann_whitney(e, 30, e, 30, &u, &p), OPF_OK);
  assert_true(p > 0.99);
  assert_int_equal(opf_mann_whitney(e, 0, f, 3, &u, &p), OPF_EINVAL);
}

static char path_buf[4][512];
static const char *fx(int slot, const char *name) {
  const char *src = getenv("OPPERF_SOURCE_DIR");
  snprintf(path_buf[slot], sizeof path_buf[slot], "%s/tests/fixtures/compare/%s", src ? src : ".", name);
  return path_buf[slot];
}

static const opf_cmp_row *row(const opf_cmp_report *r, const char *op) {
  for (int i = 0; i < r->n_rows; i++)
    if (!strcmp(r->rows[i].op, op)) return &r->rows[i];
  fail_msg("no row for %s", op);
  return NULL;
}

static void test_compare_fixtures(void **state) {
  (void)state;
  opf_cmp_opts o = {.metric = "time", .threshold = 0.05, .alpha = 0.05};
  opf_cmp_report r;
  opf_err e;
  if (opf_compare_files(fx(0, "base.json"), fx(1, "new.json"), &o, &r, &e)) fail_msg("%s", e.msg);
  assert_int_equal(row(&r, "add")->verdict, OPF_V_REGRESSED);
  assert_true(fabs(row(&r, "add")->change - 0.2) < 0.03);
  assert_true(row(&r, "add")->p < 1e-6);
  assert_int_equal(row(&r, "mul")->verdict, OPF_V_IMPROVED);
  assert_int_equal(row(&r, "exp")->verdict, OPF_V_UNCHANGED);
  assert_int_equal(row(&r, "sum")->verdict, OPF_V_UNCHANGED);
  assert_int_equal(row(&r, "gone")->verdict, OPF_V_MISSING);
  assert_int_equal(row(&r, "fresh")->verdict, OPF_V_NEW);
  assert_int_equal(row(&r, "crashy")->verdict, OPF_V_BROKEN);
  assert_string_equal(row(&r, "crashy")->note, "crashed");
  assert_int_equal(row(&r, "noisy")->verdict, OPF_V_NOISE);
  assert_int_equal(r.counts[OPF_V_REGRESSED], 1);
  assert_int_equal(r.counts[OPF_V_IMPROVED], 1);
  /* Geometric means per category: binary holds add (x1.2) and mul (x0.8). */
  int found = 0;
  for (int i = 0; i < r.n_cats; i++)
    if (!strcmp(r.cats[i].name, "binary")) {
      found = 1;
      assert_int_equal(r.cats[i].n, 2);
      assert_true(fabs(r.cats[i].geomean - sqrt(1.2 * 0.8)) < 0.03);
    }
  assert_true(found);
  opf_cmp_report_free(&r);

  /* A larger threshold: the +20% regression no longer counts. */
  o.threshold = 0.25;
  if (opf_compare_files(fx(0, "base.json"), fx(1, "new.json"), &o, &r, &e)) fail_msg("%s", e.msg);
  assert_int_equal(r.counts[OPF_V_REGRESSED], 0);
  opf_cmp_report_free(&r);
  o.threshold = 0.05;

  /* Noise only: same medians, fresh samples: nothing regresses. */
  if (opf_compare_files(fx(0, "base.json"), fx(1, "same.json"), &o, &r, &e)) fail_msg("%s", e.msg);
  assert_int_equal(r.counts[OPF_V_REGRESSED] + r.counts[OPF_V_IMPROVED], 0);
  opf_cmp_report_free(&r);
}

static void test_context_mismatch(void **state) {
  (void)state;
  opf_cmp_opts o = {.metric = "time", .threshold = 0.05, .alpha = 0.05};
  opf_cmp_report r;
  opf_err e;
  assert_int_equal(opf_compare_files(fx(0, "same.json"), fx(1, "other_cpu.json"), &o, &r, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "CPU model differs"));
  assert_non_null(strstr(e.msg, "--force"));
  assert_int_equal(opf_compare_files(fx(0, "same.json"), fx(1, "one_thread.json"), &o, &r, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "thread count differs"));
  o.force = 1;
  assert_int_equal(opf_compare_files(fx(0, "same.json"), fx(1, "other_cpu.json"), &o, &r, &e), OPF_OK);
  assert_non_null(strstr(r.warning, "CPU model differs"));
  opf_cmp_report_free(&r);
  o.force = 0;
  o.metric = "instructions";
  assert_int_equal(opf_compare_files(fx(0, "base.json"), fx(1, "new.json"), &o, &r, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "no case has the metric 'instructions'"));
  o.metric = "time";
  assert_int_equal(opf_compare_files(fx(0, "README"), fx(1, "new.json"), &o, &r, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "not an opperf JSON report"));
  assert_int_equal(opf_compare_files(fx(0, "nonexistent.json"), fx(1, "new.json"), &o, &r, &e), OPF_EINVAL);
}

/* A report with one case per op: 20 samples spread +-1% around median m, and repetition
 * medians m * reps[k]. */
static void write_report(const char *path, const char *const *ops, const double *m,
                         const double (*reps)[3], int n) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "{\"schema_version\": 1, \"context\": {\"host\": {\"cpu_model\": \"X\"}, \"omp_threads\": 1, "
             "\"settings\": {\"backend\": \"native\"}}, \"results\": [");
  for (int i = 0; i < n; i++) {
    fprintf(f, "%s{\"op\": \"%s\", \"category\": \"c\", \"impl\": \"native\", \"spec\": \"x=8\", "
               "\"dtype\": \"float32\", \"pass\": \"fwd\", \"status\": \"ok\", \"time\": {\"median\": %.17g, \"raw\": [",
            i ? ", " : "", ops[i], m[i]);
    for (int k = 0; k < 20; k++) fprintf(f, "%s%.17g", k ? ", " : "", m[i] * (1 + 0.001 * (k - 10)));
    fprintf(f, "], \"repetitions\": 3, \"repetition_medians\": [%.17g, %.17g, %.17g]}}", m[i] * reps[i][0],
            m[i] * reps[i][1], m[i] * reps[i][2]);
  }
  fputs("]}\n", f);
  fclose(f);
}

/* With repetitions, a significant change beyond the threshold but inside the run-to-run spread
 * of the repetitions' medians is noise, not a regression. */
static void test_repetition_noise_floor(void **state) {
  (void)state;
  char base[] = "/tmp/opperf_cmp_baseXXXXXX", cur[] = "/tmp/opperf_cmp_curXXXXXX";
  int fb = mkstemp(base), fc = mkstemp(cur);
  assert_true(fb >= 0 && fc >= 0);
  close(fb);
  close(fc);
  const char *ops[] = {"steady", "jumpy"};
  const double mb[] = {1e-3, 1e-3}, mc[] = {1.1e-3, 1.1e-3};
  const double rb[2][3] = {{1.0, 1.01, 0.99}, {1.0, 1.2, 0.9}}, rc[2][3] = {{1.0, 1.01, 0.995}, {1.0, 0.95, 1.05}};
  write_report(base, ops, mb, rb, 2);
  write_report(cur, ops, mc, rc, 2);
  opf_cmp_opts o = {.metric = "time", .threshold = 0.05, .alpha = 0.05};
  opf_cmp_report r;
  opf_err e;
  assert_int_equal(opf_compare_files(base, cur, &o, &r, &e), OPF_OK);
  const opf_cmp_row *st = row(&r, "steady"), *j = row(&r, "jumpy");
  assert_int_equal(st->verdict, OPF_V_REGRESSED); /* +10%, spread 2% */
  assert_true(fabs(st->noise - 0.02) < 1e-9);
  assert_int_equal(j->verdict, OPF_V_NOISE);      /* +10%, spread 30% (base: 0.9 .. 1.2) */
  assert_true(fabs(j->noise - 0.3) < 1e-9);
  assert_true(j->p < 0.05);                        /* significant within the runs ... */
  assert_non_null(strstr(j->note, "within the run-to-run spread (30.0%)")); /* ... but not beyond */
  opf_cmp_report_free(&r);
  unlink(base);
  unlink(cur);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_repetition_noise_floor),
      cmocka_unit_test(test_mann_whitney),
      cmocka_unit_test(test_compare_fixtures),
      cmocka_unit_test(test_context_mismatch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

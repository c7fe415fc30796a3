/* test_metrics.c: derived metrics: counter ratios only from counted events of one group,
 * model metrics from flops/bytes and the median time, % of roofline only with a bound, and
 * absent inputs giving absent metrics (never 0 or NaN). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/metrics.h"

static int idx(const char *name) {
  for (int i = 0; i < opf_metric_count(); i++)
    if (!strcmp(opf_metric_at(i)->name, name)) return i;
  fail_msg("no metric %s", name);
  return -1;
}

static void add_event(opf_result *r, const char *kind, int group, double v) {
  opf_event_result *e = &r->events[r->n_events++];
  snprintf(e->name, sizeof e->name, "%s", kind);
  snprintf(e->kind, sizeof e->kind, "%s", kind);
  e->group = group;
  e->has_value = 1;
  e->per_call = v;
  e->mean_per_call = v;
  snprintf(e->plm, sizeof e->plm, "user");
  e->status = OPF_EV_COUNTED;
}

static void base(opf_result *r) {
  memset(r, 0, sizeof *r);
  r->status = OPF_ST_OK;
  r->time.median = 2e-3;
  r->flops = 4e9;
  r->bytes = 1e9;
}

static void test_model_metrics(void **state) {
  (void)state;
  opf_result r;
  double v;
  base(&r);
  assert_int_equal(opf_metric_value(&r, idx("gflops"), &v), 1);
  assert_float_equal(v, 2000, 1e-9); /* 4e9 flops in 2 ms */
  assert_int_equal(opf_metric_value(&r, idx("gbps"), &v), 1);
  assert_float_equal(v, 500, 1e-9);
  assert_int_equal(opf_metric_value(&r, idx("intensity"), &v), 1);
  assert_float_equal(v, 4, 1e-12);
  assert_int_equal(opf_metric_value(&r, idx("roofline_pct"), &v), 0); /* no bound known */
  r.roofline_time = 1e-3;
  assert_int_equal(opf_metric_value(&r, idx("roofline_pct"), &v), 1);
  assert_float_equal(v, 50, 1e-9); /* a 1 ms bound, measured 2 ms */
  r.flops = 0;
  assert_int_equal(opf_metric_value(&r, idx("roofline_pct"), &v), 1); /* data movement too */
  assert_int_equal(opf_metric_value(&r, idx("gflops"), &v), 0);
  assert_int_equal(opf_metric_value(&r, idx("intensity"), &v), 0);
  r.status = OPF_ST_SKIPPED;
  assert_int_equal(opf_metric_value(&r, idx("gbps"), &v), 0);
}

static void test_counter_ratios(void **state) {
  (void)state;
  opf_result r;
  double v;
  base(&r);
  add_event(&r, "cycles", 1, 1000);
  add_event(&r, "instructions", 1, 2500);
  add_event(&r, "branches", 1, 400);
  add_event(&r, "branch-misses", 1, 10);
  add_event(&r, "l1d-load-misses", 1, 50);
  add_event(&r, "dtlb-load-misses", 2, 5); /* another group */
  assert_int_equal(opf_metric_value(&r, idx("ipc"), &v), 1);
  assert_float_equal(v, 2.5, 1e-12);
  assert_int_equal(opf_metric_value(&r, idx("cpi"), &v), 1);
  assert_float_equal(v, 0.4, 1e-12);
  assert_int_equal(opf_metric_value(&r, idx("branch_miss_pct"), &v), 1);
  assert_float_equal(v, 2.5, 1e-12);
  assert_int_equal(opf_metric_value(&r, idx("l1d_mpki"), &v), 1);
  assert_float_equal(v, 20, 1e-12);
  /* dTLB misses were counted in another group than instructions: no ratio */
  assert_int_equal(opf_metric_value(&r, idx("dtlb_mpki"), &v), 0);
  /* absent denominators or numerators: absent */
  assert_int_equal(opf_metric_value(&r, idx("l1d_miss_pct"), &v), 0);
  assert_int_equal(opf_metric_value(&r, idx("llc_mpki"), &v), 0);
  /* an event that did not count has no value, so the metric disappears */
  r.events[0].has_value = 0;
  assert_int_equal(opf_metric_value(&r, idx("ipc"), &v), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_metrics),
                                     cmocka_unit_test(test_counter_ratios)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

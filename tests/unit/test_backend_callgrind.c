/* test_backend_callgrind.c: the callgrind back-end's library side: parsing a recorded dump
 * (tests/fixtures/callgrind) with known totals, malformed dumps, summing dumps, attaching the
 * simulated per-call counters to a result, and the hooks outside valgrind (no-ops). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/backend.h"
#include "opperf/metrics.h"

static const char *fixture(char *buf, size_t n) {
  const char *src = getenv("OPPERF_SOURCE_DIR");
  snprintf(buf, n, "%s/tests/fixtures/callgrind/sum_3x1Mi.cg.out", src ? src : ".");
  return buf;
}

static uint64_t total(const opf_cg_dump *d, const char *ev) {
  int i = opf_cg_event_index(d, ev);
  assert_true(i >= 0);
  return d->totals[i];
}

/* The recorded dump: three sums of 1 Mi floats (see gen_sum_fixture.c). */
static void test_parse_fixture(void **state) {
  (void)state;
  char path[512];
  opf_cg_dump d;
  opf_err e = {0};
  assert_int_equal(opf_cg_parse_file(fixture(path, sizeof path), &d, &e), OPF_OK);
  assert_string_equal(d.creator, "callgrind-3.19.0");
  assert_string_equal(d.trigger, "Client Request: fixture-sum-3x1Mi");
  assert_int_equal(d.part, 1);
  assert_int_equal(d.n_events, 13);
  assert_string_equal(d.events[0], "Ir");
  assert_string_equal(d.events[12], "Bim");
  assert_true(opf_cg_geometry_ok(&d));
  assert_int_equal(d.d1.size, 32768);
  assert_int_equal(d.d1.assoc, 8);
  assert_int_equal(d.ll.line, 64);
  /* The "totals:" line wins over the header's "summary:" (which differs in this file). */
  assert_int_equal(total(&d, "Ir"), 12582949);
  assert_int_equal(total(&d, "Dr"), 3145734);
  assert_int_equal(total(&d, "D1mr"), 196616);   /* 3 x 65,536 lines + 8 */
  assert_int_equal(total(&d, "DLmr"), 65538);    /* only the first sum misses the 8 MiB LL */
  assert_int_equal(total(&d, "Bc"), 3145731);
  assert_int_equal(total(&d, "Bcm"), 24);
  /* Trailing zeros are omitted in the file: Bi and Bim are 0. */
  assert_int_equal(total(&d, "Bi"), 0);
  assert_int_equal(total(&d, "Bim"), 0);
  assert_int_equal(opf_cg_event_index(&d, "nosuch"), -1);
}

static int parse_text(const char *text, opf_cg_dump *d, opf_err *e) {
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  assert_non_null(f);
  int rc = opf_cg_parse_stream(f, "mem", d, e);
  fclose(f);
  return rc;
}

#define HEAD "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npart: 1\n"

static void test_parse_summary_only(void **state) {
  (void)state;
  opf_cg_dump d;
  opf_err e = {0};
  assert_int_equal(parse_text(HEAD "events: Ir D1mr\nsummary: 100 7\n", &d, &e), OPF_OK);
  assert_int_equal(total(&d, "Ir"), 100);
  assert_int_equal(total(&d, "D1mr"), 7);
  assert_false(opf_cg_geometry_ok(&d)); /* no desc: lines */
}

static void test_parse_errors(void **state) {
  (void)state;
  opf_cg_dump d;
  opf_err e = {0};
  assert_int_equal(parse_text("hello\nworld\n", &d, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "not a callgrind output file"));
  assert_int_equal(parse_text(HEAD "totals: 5\n", &d, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "before the 'events:' line"));
  assert_int_equal(parse_text(HEAD "events: Ir\n", &d, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "no 'totals:' or 'summary:'"));
  assert_int_equal(parse_text(HEAD "events: Ir\ntotals: 12x\n", &d, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "mem:6: malformed cost line"));
  assert_int_equal(parse_text(HEAD "events: Ir\ntotals: 1 2\n", &d, &e), OPF_EINVAL); /* too many */
  assert_int_equal(parse_text(HEAD "events: Ir\ntotals: 1\npart: 2\nevents: Ir\ntotals: 2\n", &d, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "several dump parts"));
  assert_int_equal(opf_cg_parse_file("/nonexistent/cg.out.1", &d, &e), OPF_EIO);
  assert_non_null(strstr(e.msg, "/nonexistent/cg.out.1"));
}

static void test_totals_add(void **state) {
  (void)state;
  opf_cg_dump a, b;
  opf_err e = {0};
  assert_int_equal(parse_text(HEAD "events: Ir D1mr Bc\ntotals: 10 2 3\n", &a, &e), OPF_OK);
  assert_int_equal(parse_text(HEAD "events: Ir D1mr\ntotals: 5 1\n", &b, &e), OPF_OK);
  opf_cg_totals t = {0};
  assert_int_equal(opf_cg_totals_add(&t, &a), OPF_OK);
  assert_int_equal(opf_cg_totals_add(&t, &b), OPF_OK);
  assert_int_equal(t.n_dumps, 2);
  assert_int_equal(t.per_dump[0], 10); /* dump 0's Ir */
  assert_int_equal(t.per_dump[OPF_CG_NREPORT], 5); /* dump 1's Ir */
  assert_int_equal(t.v[0], 15); /* Ir */
  assert_true(t.present[0]);
  assert_int_equal(t.v[1], 3);  /* D1mr */
  /* Bc is missing from the second dump: not present (a partial sum would be wrong). */
  int bc = -1;
  for (int k = 0; k < OPF_CG_NREPORT; k++)
    if (!strcmp(opf_cg_report_events[k], "Bc")) bc = k;
  assert_true(bc >= 0);
  assert_false(t.present[bc]);
  opf_cg_totals_release(&t);
  assert_null(t.per_dump);
}

static const opf_event_result *find_ev(const opf_result *r, const char *name) {
  for (int i = 0; i < r->n_events; i++)
    if (!strcmp(r->events[i].name, name)) return &r->events[i];
  return NULL;
}

static void test_attach(void **state) {
  (void)state;
  char path[512];
  opf_cg_dump d;
  opf_err e = {0};
  assert_int_equal(opf_cg_parse_file(fixture(path, sizeof path), &d, &e), OPF_OK);
  opf_cg_totals t = {0}, over = {0};
  for (int i = 0; i < 3; i++) /* 3 counted samples of 1 call, each like the fixture */
    assert_int_equal(opf_cg_totals_add(&t, &d), OPF_OK);
  over.present[0] = 1;
  over.v[0] = 3; /* 3 Ir of harness per sample */

  opf_result r;
  memset(&r, 0, sizeof r);
  r.status = OPF_ST_OK;
  r.batch = 1;
  r.n_samples = 4; /* the first one warmed the simulated caches */
  r.samples = malloc(4 * sizeof *r.samples);
  assert_non_null(r.samples);
  double s[4] = {9.0, 1.0, 2.0, 3.0};
  memcpy(r.samples, s, sizeof s);
  r.total_time = 15.0;
  assert_int_equal(opf_cg_attach(&r, &t, 3, &over), OPF_OK);
  assert_true(r.simulated);
  assert_int_equal(r.n_samples, 3);
  assert_true(r.samples[0] == 1.0 && r.samples[2] == 3.0);
  assert_true(r.time.median == 2.0);
  assert_true(r.total_time == 6.0);
  assert_int_equal(r.n_events, OPF_CG_NREPORT);
  const opf_event_result *ir = find_ev(&r, "sim:Ir"), *d1 = find_ev(&r, "sim:D1mr"),
                         *bi = find_ev(&r, "sim:Bi");
  assert_non_null(ir);
  assert_non_null(d1);
  assert_non_null(bi);
  assert_true(ir->has_value && ir->status == OPF_EV_COUNTED);
  assert_true(ir->per_call == 12582949.0 - 3.0);      /* one sample of one call, minus overhead */
  assert_true(ir->mean_per_call == 12582949.0 - 3.0);
  assert_true(d1->per_call == 196616.0 && d1->mean_per_call == 196616.0);
  assert_true(bi->has_value && bi->per_call == 0.0);
  assert_non_null(strstr(r.message, "not real"));
  /* Metrics that need a time are absent for simulated results; model-only ones stay. */
  r.flops = 1e6;
  r.bytes = 4e6;
  for (int m = 0; m < opf_metric_count(); m++) {
    double v;
    const char *name = opf_metric_at(m)->name;
    if (!strcmp(name, "gflops") || !strcmp(name, "gbps") || !strcmp(name, "roofline_pct"))
      assert_false(opf_metric_value(&r, m, &v));
    if (!strcmp(name, "intensity")) assert_true(opf_metric_value(&r, m, &v) && v == 0.25);
  }
  r.simulated = 0;
  for (int m = 0; m < opf_metric_count(); m++) {
    double v;
    if (!strcmp(opf_metric_at(m)->name, "gflops")) assert_true(opf_metric_value(&r, m, &v));
  }
  free(r.samples);

  /* Samples and dumps that do not match are refused; failed results are left alone. */
  memset(&r, 0, sizeof r);
  r.status = OPF_ST_OK;
  r.batch = 1;
  r.n_samples = 3;
  double s2[3] = {1, 2, 3};
  r.samples = s2;
  assert_int_equal(opf_cg_attach(&r, &t, 3, NULL), OPF_EINVAL); /* no cache-warming sample */
  r.n_samples = 3;
  assert_int_equal(opf_cg_attach(&r, &t, 2, NULL), OPF_EINVAL); /* 2 counted, 3 dumps */
  r.status = OPF_ST_ERROR;
  assert_int_equal(opf_cg_attach(&r, &t, 3, NULL), OPF_OK);
  assert_int_equal(r.n_events, 0);
  assert_false(r.simulated);
  opf_cg_totals_release(&t);
}

/* Samples that differ (threads interleaving): per_call is the median, mean_per_call the mean. */
static void test_attach_median(void **state) {
  (void)state;
  static const char *dumps[] = {HEAD "events: Ir Bcm\ntotals: 100 9\n", HEAD "events: Ir Bcm\ntotals: 60 1\n",
                                HEAD "events: Ir Bcm\ntotals: 20 2\n"};
  opf_cg_totals t = {0};
  for (int i = 0; i < 3; i++) {
    opf_cg_dump d;
    opf_err e = {0};
    assert_int_equal(parse_text(dumps[i], &d, &e), OPF_OK);
    assert_int_equal(opf_cg_totals_add(&t, &d), OPF_OK);
  }
  opf_result r;
  memset(&r, 0, sizeof r);
  r.status = OPF_ST_OK;
  r.batch = 2;
  r.n_samples = 4;
  double s[4] = {1, 1, 1, 1};
  r.samples = s;
  opf_cg_totals over = {0};
  over.present[0] = 1;
  over.v[0] = 30; /* more than the smallest sample: clamped at 0, never negative */
  assert_int_equal(opf_cg_attach(&r, &t, 3, &over), OPF_OK);
  const opf_event_result *ir = find_ev(&r, "sim:Ir"), *bcm = find_ev(&r, "sim:Bcm");
  assert_true(ir->per_call == (60.0 - 30.0) / 2);              /* median of 70, 30, 0 over 2 calls */
  assert_true(ir->mean_per_call == (180.0 - 90.0) / 6);        /* total over 6 calls */
  assert_true(bcm->per_call == 1.0 && bcm->mean_per_call == 2.0);
  opf_cg_totals_release(&t);
}

static void test_attach_absent_event(void **state) {
  (void)state;
  opf_cg_dump d;
  opf_err e = {0};
  assert_int_equal(parse_text(HEAD "events: Ir\ntotals: 400\n", &d, &e), OPF_OK);
  opf_cg_totals t = {0};
  assert_int_equal(opf_cg_totals_add(&t, &d), OPF_OK);
  assert_int_equal(opf_cg_totals_add(&t, &d), OPF_OK);
  opf_result r;
  memset(&r, 0, sizeof r);
  double s[3] = {1, 1, 1};
  r.samples = s;
  r.n_samples = 3;
  r.batch = 4;
  assert_int_equal(opf_cg_attach(&r, &t, 2, NULL), OPF_OK);
  const opf_event_result *ir = find_ev(&r, "sim:Ir"), *d1 = find_ev(&r, "sim:D1mr");
  assert_true(ir->has_value && ir->per_call == 100.0); /* 400 per sample of 4 calls */
  assert_false(d1->has_value);
  assert_int_equal(d1->status, OPF_EV_NOT_COUNTED);
  assert_non_null(strstr(d1->reason, "D1mr"));
  opf_cg_totals_release(&t);
}

static void test_context_events(void **state) {
  (void)state;
  opf_pmu_event ev[OPF_PMU_MAX_EVENTS];
  int n = 2;
  opf_cg_totals over;
  memset(&over, 0, sizeof over);
  over.present[0] = 1;
  over.v[0] = 73;
  opf_cg_context_events(ev, &n, OPF_PMU_MAX_EVENTS, "callgrind-3.19.0", &over);
  assert_int_equal(n, 2 + OPF_CG_NREPORT);
  assert_string_equal(ev[2].name, "sim:Ir");
  assert_string_equal(ev[2].fstr, "callgrind:Ir");
  assert_true(opf_event_is_simulated(ev[2].name));
  assert_false(opf_event_is_simulated("instructions"));
  assert_non_null(strstr(ev[2].reason, "callgrind-3.19.0"));
  assert_non_null(strstr(ev[2].reason, "LL=" OPF_CG_LL));
  assert_non_null(strstr(ev[2].reason, "73/sample subtracted"));
  assert_null(strstr(ev[3].reason, "subtracted")); /* no overhead on D1mr */
  /* A full table takes no more than it has room for. */
  n = OPF_PMU_MAX_EVENTS - 1;
  opf_cg_context_events(ev, &n, OPF_PMU_MAX_EVENTS, NULL, NULL);
  assert_int_equal(n, OPF_PMU_MAX_EVENTS);
}

/* Outside valgrind the hooks are harmless no-ops and no dump is expected. */
static void test_hooks_outside_valgrind(void **state) {
  (void)state;
  if (opf_cg_running()) skip();
  opf_cg_region g;
  opf_cg_region_init(&g, "/nonexistent/cg.out");
  assert_false(g.active);
  opf_region_hooks h = opf_cg_hooks(&g);
  for (int i = 0; i < 4; i++) {
    h.sample_begin(h.ctx);
    h.sample_end(h.ctx);
  }
  h.case_end(h.ctx, NULL);
  opf_cg_totals t = {0};
  int counted = -1;
  opf_err e = {0};
  assert_int_equal(opf_cg_region_collect(&g, &t, &counted, &e), OPF_OK);
  assert_int_equal(counted, 0);
  assert_int_equal(g.result, 1);
  assert_int_equal(g.sample, 0);
  assert_int_equal(opf_cg_measure_overhead(&g, 3, &t, &e), OPF_OK);
  assert_int_equal(t.v[0], 0);
}

/* A case's fwd then its bwd measured before the fwd's dumps are collected (what `run` did
 * before: all passes of a case, then one collect per result): the fwd's collect must fail
 * naming the overlap rather than count the bwd's dumps, and the region recovers after it. */
static void test_hooks_overlapping_cases(void **state) {
  (void)state;
  if (opf_cg_running()) skip();
  opf_cg_region g;
  opf_cg_region_init(&g, "/nonexistent/cg.out");
  opf_region_hooks h = opf_cg_hooks(&g);
  for (int c = 0; c < 2; c++) { /* two cases, no collect between them */
    for (int i = 0; i < 3; i++) {
      h.sample_begin(h.ctx);
      h.sample_end(h.ctx);
    }
    h.case_end(h.ctx, NULL);
  }
  opf_cg_totals t = {0};
  int counted = -1;
  opf_err e = {0};
  assert_int_equal(opf_cg_region_collect(&g, &t, &counted, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "3 samples of the next case began before"));
  opf_cg_totals_release(&t);
  /* The next case, collected in turn, is fine again. */
  h.sample_begin(h.ctx);
  h.sample_end(h.ctx);
  h.case_end(h.ctx, NULL);
  assert_int_equal(opf_cg_region_collect(&g, &t, &counted, &e), OPF_OK);
  assert_int_equal(counted, 0);
  opf_cg_totals_release(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_fixture),
      cmocka_unit_test(test_parse_summary_only),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_totals_add),
      cmocka_unit_test(test_attach),
      cmocka_unit_test(test_attach_median),
      cmocka_unit_test(test_attach_absent_event),
      cmocka_unit_test(test_context_events),
      cmocka_unit_test(test_hooks_outside_valgrind),
      cmocka_unit_test(test_hooks_overlapping_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

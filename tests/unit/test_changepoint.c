/* test_changepoint.c: PELT change points (src/changepoint.c) on synthetic series of per-run
 * medians with confidence intervals: one step found at its index, noise alone gives none (over
 * many seeds), two steps found, a one-run blip is not a step (two slow runs are), wide
 * intervals down-weight points, steps below min_change are merged away, bad input is refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "opperf/changepoint.h"

static uint64_t rng_state;
static double uniform(void) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}
static double gauss(void) { return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform()); }

/* n medians around level(i) with relative run-to-run noise sd and +-ci relative intervals. */
static void series(double *x, double *lo, double *hi, int n, const double *level, double sd,
                   double ci, uint64_t seed) {
  rng_state = seed;
  for (int i = 0; i < n; i++) {
    x[i] = level[i] * exp(sd * gauss());
    lo[i] = x[i] * (1 - ci);
    hi[i] = x[i] * (1 + ci);
  }
}

static void test_one_step(void **state) {
  (void)state;
  double lvl[40], x[40], lo[40], hi[40];
  for (int i = 0; i < 40; i++) lvl[i] = i < 23 ? 1e-3 : 1.3e-3; /* +30% at run 23 */
  series(x, lo, hi, 40, lvl, 0.05, 0.03, 7);
  opf_cp_change ch[8];
  int n;
  opf_err e;
  assert_int_equal(opf_changepoints(x, lo, hi, 40, NULL, ch, 8, &n, &e), OPF_OK);
  assert_int_equal(n, 1);
  assert_int_equal(ch[0].index, 23);
  assert_true(ch[0].change > 0.2 && ch[0].change < 0.4);
  /* the same step downwards, on another seed */
  for (int i = 0; i < 40; i++) lvl[i] = i < 11 ? 2.0 : 1.5;
  series(x, lo, hi, 40, lvl, 0.05, 0.03, 99);
  assert_int_equal(opf_changepoints(x, lo, hi, 40, NULL, ch, 8, &n, &e), OPF_OK);
  assert_int_equal(n, 1);
  assert_int_equal(ch[0].index, 11);
  assert_true(ch[0].change < -0.15 && ch[0].change > -0.35);
}

static void test_noise_only(void **state) {
  (void)state;
  double lvl[60], x[60], lo[60], hi[60];
  for (int i = 0; i < 60; i++) lvl[i] = 5e-6;
  int found = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    /* noise 7% between runs (our VMs) with 3% intervals that do not cover it */
    series(x, lo, hi, 60, lvl, 0.07, 0.03, seed);
    opf_cp_change ch[8];
    int n;
    assert_int_equal(opf_changepoints(x, lo, hi, 60, NULL, ch, 8, &n, NULL), OPF_OK);
    found += n > 0;
  }
  /* a false alarm in at most 2% of 200 noise-only series */
  assert_true(found <= 4);
}

static void test_two_steps(void **state) {
  (void)state;
  double lvl[50], x[50], lo[50], hi[50];
  for (int i = 0; i < 50; i++) lvl[i] = i < 15 ? 1.0 : i < 32 ? 1.25 : 0.9;
  series(x, lo, hi, 50, lvl, 0.04, 0.02, 3);
  opf_cp_change ch[8];
  int n;
  assert_int_equal(opf_changepoints(x, lo, hi, 50, NULL, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 2);
  assert_int_equal(ch[0].index, 15);
  assert_int_equal(ch[1].index, 32);
  assert_true(ch[0].change > 0 && ch[1].change < 0);
}

static void test_blip_and_weights(void **state) {
  (void)state;
  double x[30], lo[30], hi[30];
  for (int i = 0; i < 30; i++) x[i] = 1.0 + 0.01 * (i % 3), lo[i] = x[i] * 0.98, hi[i] = x[i] * 1.02;
  x[12] = 2.0, lo[12] = 1.96, hi[12] = 2.04; /* one run twice as slow: a blip */
  opf_cp_change ch[8];
  int n;
  assert_int_equal(opf_changepoints(x, lo, hi, 30, NULL, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 0);
  /* min_seg 1 lets it be its own segment: two changes around it */
  opf_cp_opts o = {.min_seg = 1, .min_change = -1};
  assert_int_equal(opf_changepoints(x, lo, hi, 30, &o, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 2);
  assert_int_equal(ch[0].index, 12);
  assert_int_equal(ch[1].index, 13);
  /* ... unless its interval says it knows nothing (0.2 .. 20): then it barely counts */
  lo[12] = 0.2, hi[12] = 20;
  assert_int_equal(opf_changepoints(x, lo, hi, 30, &o, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 0);
  /* two slow runs in a row are a (short) regression that was fixed: both steps found */
  for (int i = 12; i < 14; i++) x[i] = 2.0, lo[i] = 1.96, hi[i] = 2.04;
  assert_int_equal(opf_changepoints(x, lo, hi, 30, NULL, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 2);
  assert_int_equal(ch[0].index, 12);
  assert_int_equal(ch[1].index, 14);
  assert_true(ch[0].change > 0.9 && ch[1].change < -0.45);
  /* ... and with intervals that say nothing, they do not count */
  for (int i = 12; i < 14; i++) lo[i] = 0.2, hi[i] = 20;
  assert_int_equal(opf_changepoints(x, lo, hi, 30, NULL, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 0);
}

static void test_min_change(void **state) {
  (void)state;
  double x[40];
  for (int i = 0; i < 40; i++) x[i] = i < 20 ? 1.0 : 1.03; /* exact 3% step, no noise */
  opf_cp_change ch[8];
  int n;
  assert_int_equal(opf_changepoints(x, NULL, NULL, 40, NULL, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 0); /* below the default 5% */
  opf_cp_opts o = {.min_change = 0.01};
  assert_int_equal(opf_changepoints(x, NULL, NULL, 40, &o, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 1);
  assert_int_equal(ch[0].index, 20);
  assert_true(fabs(ch[0].change - 0.03) < 1e-9);
  /* too short for two segments: nothing, not an error */
  assert_int_equal(opf_changepoints(x, NULL, NULL, 3, NULL, ch, 8, &n, NULL), OPF_OK);
  assert_int_equal(n, 0);
}

static void test_bad_input(void **state) {
  (void)state;
  double x[4] = {1, 2, 0, 1};
  opf_cp_change ch[2];
  int n;
  opf_err e;
  assert_int_equal(opf_changepoints(x, NULL, NULL, 4, NULL, ch, 2, &n, &e), OPF_EINVAL);
  x[2] = NAN;
  assert_int_equal(opf_changepoints(x, NULL, NULL, 4, NULL, ch, 2, &n, &e), OPF_EINVAL);
  /* the noise estimate: steps barely move it */
  double y[40];
  for (int i = 0; i < 40; i++) y[i] = (i < 20 ? 1.0 : 2.0) * (i % 2 ? 1.01 : 0.99);
  double s = opf_cp_noise(y, 40);
  assert_true(s > 0.01 && s < 0.03);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_step),   cmocka_unit_test(test_noise_only),
      cmocka_unit_test(test_two_steps),  cmocka_unit_test(test_blip_and_weights),
      cmocka_unit_test(test_min_change), cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

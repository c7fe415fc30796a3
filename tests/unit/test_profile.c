/* test_profile.c: the sampling profiler end to end on software cpu-clock: a test operator whose
 * forward spends ~4/5 of its time in profile_test_hot_loop and ~1/5 in profile_test_cold_loop,
 * measured through opf_measure with the profiler's hooks: the hot loop is the hottest function,
 * shares add up, functions run only in set-up or warm-up get no sample, the folded stacks sum
 * to the sample count; plus folded-stack and repetition merging, and bad options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/profile.h"

/* noipa: no inlining, cloning or identical-code folding, so each keeps its own symbol. */
__attribute__((noipa)) static double profile_test_hot_loop(long n) {
  double x = 1.0;
  for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
  return x;
}
__attribute__((noipa)) static double profile_test_cold_loop(long n) {
  double x = 2.0;
  for (long i = 0; i < n; i++) x = x * 0.9999999 + 2e-9;
  return x;
}
__attribute__((noipa)) static double profile_test_setup_only(long n) {
  double x = 3.0;
  for (long i = 0; i < n; i++) x = x * 1.0000002 - 1e-9;
  return x;
}
__attribute__((noipa)) static double profile_test_warmup_only(long n) {
  double x = 4.0;
  for (long i = 0; i < n; i++) x = x * 0.9999998 - 2e-9;
  return x;
}

#define HOT_ITERS 2000000L
#define WARMUP_CALLS 5
static int calls; /* forward calls so far: the first WARMUP_CALLS are the harness's warm-up */

static int t_infer(opf_case *c) {
  opf_tensor_set_shape(&c->out[0], c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}
static int t_forward(opf_case *c) {
  double *y = c->out[0].data;
  if (calls++ < WARMUP_CALLS) y[0] = profile_test_warmup_only(HOT_ITERS);
  y[0] = profile_test_hot_loop(HOT_ITERS) + profile_test_cold_loop(HOT_ITERS / 4);
  return OPF_OK;
}
static int t_fill(opf_case *c, int i, opf_rng *r) { /* runs in set-up only */
  double *x = c->in[i].data;
  x[0] = profile_test_setup_only(3 * HOT_ITERS) + opf_rng_uniform(r);
  for (int64_t k = 1; k < opf_numel(&c->in[i]); k++) x[k] = opf_rng_uniform(r);
  return OPF_OK;
}

static const opf_op t_profile = {
    .abi = OPF_OP_ABI, .name = "t_profile", .category = "test", .summary = "profiler test",
    .dtypes = OPF_DT_BIT(OPF_F64), .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = 0, .hi = 1, .fill = t_fill}},
    .n_out = 1, .out = {"y"}, .shapes = {{"small", "x=16"}}, .infer = t_infer,
    .forward = t_forward, .reference = t_forward};

static const opf_profile_func *find(const opf_profile_summary *s, const char *name) {
  for (int i = 0; i < s->n_funcs; i++)
    if (!strcmp(s->funcs[i].name, name)) return &s->funcs[i];
  return NULL;
}

/* Measure t_profile with the profiler; skips when this machine refuses perf_event sampling. */
static void measure(opf_result *r) {
  opf_profile *p;
  opf_err e;
  opf_profile_opts o = {.event = "cpu-clock", .hz = 4000, .top = OPF_PROFILE_MAX_FUNCS, .folded = 1};
  int rc = opf_profile_open(&p, &o, &e);
  if (rc == OPF_EUNSUPPORTED) {
    fprintf(stderr, "skipped: %s\n", e.msg);
    skip();
  }
  assert_int_equal(rc, OPF_OK);
  opf_settings s;
  opf_settings_default(&s);
  s.warmup_calls = WARMUP_CALLS;
  s.batch = 1;
  s.min_runs = s.max_runs = 40;
  s.min_time = 0;
  s.max_time = 1e9;
  opf_region_hooks h = opf_profile_hooks(p);
  s.hooks = &h;
  opf_case c;
  assert_int_equal(opf_case_init(&c, &t_profile, OPF_F64, "x=16", &e), OPF_OK);
  calls = 0;
  assert_int_equal(opf_measure(&s, &c, "small", OPF_PASS_FWD, NULL, r), OPF_OK);
  assert_int_equal(r->status, OPF_ST_OK);
  assert_int_equal(opf_profile_attach(p, r, &e), OPF_OK);
  opf_profile_close(p);
}

static void test_hot_function(void **state) {
  (void)state;
  opf_result r;
  measure(&r);
  const opf_profile_summary *s = &r.profile;
  assert_string_equal(s->event, "cpu-clock");
  /* 40 calls of ~5 ms of CPU at 4000 Hz: some 800 samples; far fewer means sampling is broken */
  assert_true(s->samples >= 100);
  assert_true(s->threads >= 1);
  assert_true(s->n_funcs >= 2);
  assert_string_equal(s->funcs[0].name, "profile_test_hot_loop");
  assert_int_equal(s->funcs[0].resolved, 1);
  assert_int_equal(s->funcs[0].in_lib, 0);
  const opf_profile_func *hot = &s->funcs[0], *cold = find(s, "profile_test_cold_loop");
  assert_non_null(cold);
  assert_true(cold->self > 0 && cold->self < hot->self);
  /* Shares: self over every function is 1, over the resolved ones 1 - unresolved share. */
  double all = 0, resolved = 0;
  for (int i = 0; i < s->n_funcs; i++) {
    const opf_profile_func *f = &s->funcs[i];
    assert_true(f->total >= f->self - 1e-12 && f->total <= 1 + 1e-12);
    all += f->self;
    if (f->resolved) resolved += f->self;
  }
  assert_true(s->n_funcs < OPF_PROFILE_MAX_FUNCS); /* nothing cut off, so the sums are complete */
  assert_float_equal(all, 1.0, 1e-9);
  assert_float_equal(resolved, 1.0 - (double)s->unresolved / (double)s->samples, 1e-9);
  /* Never sampled: outside the measured samples. */
  assert_null(find(s, "profile_test_setup_only"));
  assert_null(find(s, "profile_test_warmup_only"));
  opf_result_release(&r);
}

static void test_folded(void **state) {
  (void)state;
  opf_result r;
  measure(&r);
  assert_non_null(r.folded);
  assert_int_equal(strlen(r.folded), r.folded_len);
  assert_null(strstr(r.folded, "profile_test_setup_only"));
  assert_null(strstr(r.folded, "profile_test_warmup_only"));
  long long sum = 0, hot = 0;
  int lines = 0;
  char *save = NULL, *copy = strdup(r.folded);
  for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    char *sp = strrchr(l, ' ');
    assert_non_null(sp);
    char *end;
    long long c = strtoll(sp + 1, &end, 10);
    assert_true(c > 0 && *end == '\0');
    /* root first: operator, pass, case; the leaf last */
    assert_memory_equal(l, "t_profile;fwd;float64,x=16;", 27);
    *sp = '\0';
    const char *leaf = strrchr(l, ';') + 1;
    if (!strcmp(leaf, "profile_test_hot_loop")) {
      hot += c;
      /* the call chain reaches the harness (the kernel itself may be missing: GCC sets up no
       * frame in a leaf like the hot loop, so the frame-pointer walk skips its caller) */
      assert_non_null(strstr(l, ";opf_measure;"));
    }
    sum += c;
    lines++;
  }
  free(copy);
  assert_true(lines >= 2);
  assert_int_equal(sum, r.profile.samples);
  assert_float_equal((double)hot / (double)sum, r.profile.funcs[0].self, 1e-9);
  opf_result_release(&r);
}

static void test_folded_merge(void **state) {
  (void)state;
  char *a = NULL;
  size_t n = 0;
  const char *x = "op;fwd;c;f;g 2\nop;fwd;c;h 1\n", *y = "op;fwd;c;f;g 3\nop;bwd;c;f 4\n";
  assert_int_equal(opf_folded_merge(&a, &n, x, strlen(x)), OPF_OK);
  assert_int_equal(opf_folded_merge(&a, &n, y, strlen(y)), OPF_OK);
  assert_string_equal(a, "op;bwd;c;f 4\nop;fwd;c;f;g 5\nop;fwd;c;h 1\n");
  assert_int_equal(n, strlen(a));
  assert_int_equal(opf_folded_merge(&a, &n, "no-count\n", 9), OPF_EINVAL);
  assert_int_equal(opf_folded_merge(&a, &n, "x;y 1z\n", 7), OPF_EINVAL);
  assert_string_equal(a, "op;bwd;c;f 4\nop;fwd;c;f;g 5\nop;fwd;c;h 1\n"); /* unchanged */
  free(a);
}

static void fake_profile(opf_result *r, int64_t samples, double hot, const char *other) {
  memset(r, 0, sizeof *r);
  opf_profile_summary *s = &r->profile;
  snprintf(s->event, sizeof s->event, "cpu-clock");
  s->samples = samples;
  s->lost = 1;
  s->n_funcs = 2;
  snprintf(s->funcs[0].name, sizeof s->funcs[0].name, "hot");
  s->funcs[0].self = s->funcs[0].total = hot;
  snprintf(s->funcs[1].name, sizeof s->funcs[1].name, "%s", other);
  s->funcs[1].self = s->funcs[1].total = 1 - hot;
}

static void test_profile_merge(void **state) {
  (void)state;
  opf_result a, b;
  fake_profile(&a, 100, 0.8, "x");
  fake_profile(&b, 300, 0.4, "y");
  opf_profile_merge(&a, &b);
  const opf_profile_summary *s = &a.profile;
  assert_int_equal(s->samples, 400);
  assert_int_equal(s->lost, 2);
  assert_int_equal(s->n_funcs, 2); /* as many as either kept */
  assert_string_equal(s->funcs[0].name, "hot");
  assert_float_equal(s->funcs[0].self, (80 + 120) / 400.0, 1e-12);
  assert_string_equal(s->funcs[1].name, "y"); /* 180/400 beats x's 20/400 */
  assert_float_equal(s->funcs[1].self, 180 / 400.0, 1e-12);
}

static void test_bad_options(void **state) {
  (void)state;
  opf_profile *p = NULL;
  opf_err e;
  opf_profile_opts o = {.event = "instructions"};
  assert_int_equal(opf_profile_open(&p, &o, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "'instructions'"));
  o = (opf_profile_opts){.hz = 1000000};
  assert_int_equal(opf_profile_open(&p, &o, &e), OPF_EINVAL);
  o = (opf_profile_opts){.top = OPF_PROFILE_MAX_FUNCS + 1};
  assert_int_equal(opf_profile_open(&p, &o, &e), OPF_EINVAL);
  assert_null(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hot_function), cmocka_unit_test(test_folded),
      cmocka_unit_test(test_folded_merge), cmocka_unit_test(test_profile_merge),
      cmocka_unit_test(test_bad_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_machine.c: the machine ceilings: roofline arithmetic on a hand-made opf_machine, the
 * cache file (round trip, default path, malformed, other CPU model or size, absent) and a short
 * real measurement whose figures must be positive, finite and plausible (no speed-up asserted:
 * the machines are shared and noisy). */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/machine.h"
#include "opperf/report.h"

static char dir[64];
static char here_model[128];
static int here_cpus;

/* The figures of an imaginary machine on this CPU: ridge points 5 (1 thread) and 6 (all)
 * FLOP/byte for float32, 2.5 and 3 for float64. */
static void fake_machine(opf_machine *m) {
  memset(m, 0, sizeof *m);
  snprintf(m->cpu_model, sizeof m->cpu_model, "%s", here_model);
  m->cpus = here_cpus;
  m->threads_all = here_cpus;
  snprintf(m->isa, sizeof m->isa, "avx2");
  snprintf(m->timestamp, sizeof m->timestamp, "2025-01-02T03:04:05Z");
  m->peak_flops[OPF_F32][0] = 100e9;
  m->peak_flops[OPF_F32][1] = 180e9;
  m->peak_flops[OPF_F64][0] = 50e9;
  m->peak_flops[OPF_F64][1] = 90e9;
  m->bandwidth[0] = 20e9;
  m->bandwidth[1] = 30e9;
}

static int setup(void **state) {
  (void)state;
  /* The context block's CPU identification: the cache file must agree with it. */
  opf_context ctx;
  opf_context_collect(&ctx, NULL, NULL, "test_machine");
  snprintf(here_model, sizeof here_model, "%s", ctx.cpu_model);
  here_cpus = ctx.cpus_online;
  snprintf(dir, sizeof dir, "/tmp/opperf-machine-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* ---- roofline ---- */

static void test_roofline_memory_bound(void **state) {
  (void)state;
  opf_machine m;
  fake_machine(&m);
  /* 1 FLOP/byte: well below every ridge point, the bound is intensity x bandwidth. */
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 1, 1e6, 1e6), 20e9, 1);
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 2, 1e6, 1e6), 30e9, 1);
  assert_float_equal(opf_roofline_bound(&m, OPF_F64, 1, 1e6, 1e6), 20e9, 1);
  assert_float_equal(opf_roofline_bound(&m, OPF_F64, 64, 1e6, 1e6), 30e9, 1);
  /* 0.25 FLOP/byte (an elementwise add on float32 is 1/12) */
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 1, 1e6, 4e6), 5e9, 1);
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 4, 1e6, 4e6), 7.5e9, 1);
}

static void test_roofline_compute_bound(void **state) {
  (void)state;
  opf_machine m;
  fake_machine(&m);
  /* 100 FLOP/byte: above every ridge point, the bound is the peak of the dtype. */
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 1, 1e8, 1e6), 100e9, 1);
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 2, 1e8, 1e6), 180e9, 1);
  assert_float_equal(opf_roofline_bound(&m, OPF_F64, 1, 1e8, 1e6), 50e9, 1);
  assert_float_equal(opf_roofline_bound(&m, OPF_F64, 8, 1e8, 1e6), 90e9, 1);
  /* 4 FLOP/byte: compute-bound for float64 on 1 thread (ridge 2.5), memory-bound for float32
   * (ridge 5): the dtype matters. */
  assert_float_equal(opf_roofline_bound(&m, OPF_F64, 1, 4e6, 1e6), 50e9, 1);
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 1, 4e6, 1e6), 80e9, 1);
  /* Exactly at the ridge both limits agree. */
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 1, 5e6, 1e6), 100e9, 1);
}

static void test_roofline_time(void **state) {
  (void)state;
  opf_machine m;
  fake_machine(&m);
  /* time = max(flops / peak, bytes / bandwidth); data movement and integers: memory only */
  assert_float_equal(opf_roofline_time(&m, OPF_F32, 1, 1e6, 1e6), 1e6 / opf_roofline_bound(&m, OPF_F32, 1, 1e6, 1e6), 1e-15);
  assert_float_equal(opf_roofline_time(&m, OPF_F32, 1, 1e8, 1e6), 1e8 / 100e9, 1e-15);
  assert_float_equal(opf_roofline_time(&m, OPF_F32, 1, 0, 2e6), 2e6 / m.bandwidth[0], 1e-15);
  assert_float_equal(opf_roofline_time(&m, OPF_I32, 2, 5e6, 2e6), 2e6 / m.bandwidth[1], 1e-15);
  assert_true(opf_roofline_time(&m, OPF_F32, 1, 1e6, 0) == 0);
  assert_true(opf_roofline_time(NULL, OPF_F32, 1, 1e6, 1e6) == 0);
}

static void test_roofline_missing(void **state) {
  (void)state;
  opf_machine m;
  fake_machine(&m);
  assert_true(opf_roofline_bound(&m, OPF_F32, 1, 1e6, 1e6) > 0);
  assert_true(opf_roofline_bound(&m, OPF_I32, 1, 1e6, 1e6) == 0);
  assert_true(opf_roofline_bound(&m, OPF_I64, 2, 1e6, 1e6) == 0);
  assert_true(opf_roofline_bound(&m, OPF_F32, 1, 0, 1e6) == 0);
  assert_true(opf_roofline_bound(&m, OPF_F32, 1, 1e6, 0) == 0);
  assert_true(opf_roofline_bound(&m, OPF_F32, 1, -1e6, 1e6) == 0);
  assert_true(opf_roofline_bound(&m, OPF_F32, 1, 1e6, -1) == 0);
  assert_true(opf_roofline_bound(&m, OPF_F32, 1, NAN, 1e6) == 0);
  assert_true(opf_roofline_bound(&m, OPF_F32, 1, 1e6, INFINITY) == 0);
  assert_true(opf_roofline_bound(NULL, OPF_F32, 1, 1e6, 1e6) == 0);
  /* A missing all-threads bandwidth voids the all-threads bound only. */
  m.bandwidth[1] = 0;
  assert_true(opf_roofline_bound(&m, OPF_F32, 2, 1e6, 1e6) == 0);
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 1, 1e6, 1e6), 20e9, 1);
  /* A missing peak voids that dtype only. */
  m.peak_flops[OPF_F64][0] = 0;
  assert_true(opf_roofline_bound(&m, OPF_F64, 1, 1e8, 1e6) == 0);
  assert_float_equal(opf_roofline_bound(&m, OPF_F32, 1, 1e8, 1e6), 100e9, 1);
  opf_machine zero;
  memset(&zero, 0, sizeof zero);
  assert_true(opf_roofline_bound(&zero, OPF_F32, 1, 1e6, 1e6) == 0);
}

/* ---- cache file ---- */

static char *env_save(const char *name) {
  const char *v = getenv(name);
  return v ? strdup(v) : NULL;
}

static void env_restore(const char *name, char *v) {
  if (v) setenv(name, v, 1);
  else unsetenv(name);
  free(v);
}

static void test_path(void **state) {
  (void)state;
  char buf[512];
  char *file = env_save("OPPERF_MACHINE_FILE"), *xdg = env_save("XDG_CACHE_HOME"), *home = env_save("HOME");
  setenv("OPPERF_MACHINE_FILE", "/some/where/m.json", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  assert_non_null(opf_machine_path(buf, sizeof buf));
  assert_string_equal(buf, "/some/where/m.json");   /* the variable wins */
  assert_null(opf_machine_path(buf, 8));             /* does not fit: no truncated path */
  unsetenv("OPPERF_MACHINE_FILE");
  assert_string_equal(opf_machine_path(buf, sizeof buf), "/xdg/opperf/machine.json");
  setenv("XDG_CACHE_HOME", "relative", 1);   /* ignored, as the XDG spec says */
  setenv("HOME", "/home/someone", 1);
  assert_string_equal(opf_machine_path(buf, sizeof buf), "/home/someone/.cache/opperf/machine.json");
  unsetenv("XDG_CACHE_HOME");
  assert_string_equal(opf_machine_path(buf, sizeof buf), "/home/someone/.cache/opperf/machine.json");
  env_restore("OPPERF_MACHINE_FILE", file);
  env_restore("XDG_CACHE_HOME", xdg);
  env_restore("HOME", home);
}

static void test_save_load_round_trip(void **state) {
  (void)state;
  char path[256], buf[256];
  /* Through the environment variable, into directories that do not exist yet. */
  snprintf(path, sizeof path, "%s/a/b/machine.json", dir);
  setenv("OPPERF_MACHINE_FILE", path, 1);
  assert_string_equal(opf_machine_path(buf, sizeof buf), path);
  opf_machine m, back;
  fake_machine(&m);
  m.peak_flops[OPF_F32][0] = 123456789.123456789;   /* not a round number */
  m.bandwidth[1] = 1.0 / 3.0 * 1e10;
  opf_err err = {0};
  assert_int_equal(opf_machine_save(&m, buf, &err), OPF_OK);
  memset(&back, 0x55, sizeof back);
  assert_int_equal(opf_machine_load(&back, buf, &err), OPF_OK);
  assert_string_equal(back.cpu_model, m.cpu_model);
  assert_string_equal(back.isa, m.isa);
  assert_string_equal(back.timestamp, m.timestamp);
  assert_int_equal(back.cpus, m.cpus);
  assert_int_equal(back.threads_all, m.threads_all);
  for (int d = 0; d < 2; d++)
    for (int t = 0; t < 2; t++) assert_true(back.peak_flops[d][t] == m.peak_flops[d][t]);
  assert_true(back.bandwidth[0] == m.bandwidth[0]);
  assert_true(back.bandwidth[1] == m.bandwidth[1]);
  /* Saved again over itself: still one file, no temporary left behind. */
  assert_int_equal(opf_machine_save(&m, buf, &err), OPF_OK);
  char sub[256];
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  DIR *dd = opendir(sub);
  assert_non_null(dd);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dd))) n += e->d_name[0] != '.';
  closedir(dd);
  assert_int_equal(n, 1);
  unsetenv("OPPERF_MACHINE_FILE");
}

static void test_load_absent(void **state) {
  (void)state;
  char path[256];
  snprintf(path, sizeof path, "%s/nothing-here.json", dir);
  opf_machine m;
  opf_err err = {0};
  assert_int_equal(opf_machine_load(&m, path, &err), OPF_ENOTFOUND);
  assert_non_null(strstr(err.msg, path));
}

static void expect_einval(const char *text, const char *needle) {
  char path[256];
  snprintf(path, sizeof path, "%s/bad.json", dir);
  write_file(path, text);
  opf_machine m;
  opf_err err = {0};
  assert_int_equal(opf_machine_load(&m, path, &err), OPF_EINVAL);
  if (!strstr(err.msg, needle) || !strstr(err.msg, path)) fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static void test_load_malformed(void **state) {
  (void)state;
  expect_einval("{\"cpu_model\": \"x\", ", "malformed");
  expect_einval("", "malformed");
  expect_einval("[1, 2]", "malformed");
  expect_einval("{\"schema_version\": 1}", "cpu_model");
  /* A valid file with one field broken at a time. */
  opf_machine m;
  fake_machine(&m);
  char path[256];
  snprintf(path, sizeof path, "%s/good.json", dir);
  opf_err err = {0};
  assert_int_equal(opf_machine_save(&m, path, &err), OPF_OK);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char good[8192];
  good[fread(good, 1, sizeof good - 1, f)] = '\0';
  fclose(f);
  assert_non_null(strstr(good, "\"bandwidth\""));
  /* Negative bandwidth */
  static char text[8192];
  snprintf(text, sizeof text, "%s", good);
  char *p = strstr(text, "\"bandwidth\"");
  p = strchr(p, '[');
  memmove(p + 2, p + 1, strlen(p + 1) + 1);
  p[1] = '-';
  expect_einval(text, "bandwidth");
  /* Unknown schema version */
  snprintf(text, sizeof text, "%s", good);
  p = strstr(text, "\"schema_version\":");
  p = strchr(p, '1');
  *p = '9';
  expect_einval(text, "schema_version");
  /* A missing dtype in peak_flops */
  snprintf(text, sizeof text, "%s", good);
  p = strstr(text, "\"float64\"");
  memcpy(p, "\"float65\"", 9);
  expect_einval(text, "peak_flops");
}

static void test_load_other_cpu(void **state) {
  (void)state;
  char path[256];
  snprintf(path, sizeof path, "%s/other.json", dir);
  opf_machine m, back;
  fake_machine(&m);
  snprintf(m.cpu_model, sizeof m.cpu_model, "Imaginary CPU 9000 @ 9.99GHz");
  opf_err err = {0};
  assert_int_equal(opf_machine_save(&m, path, &err), OPF_OK);
  assert_int_equal(opf_machine_load(&back, path, &err), OPF_EINVAL);
  char want[512];
  snprintf(want, sizeof want, "measured on 'Imaginary CPU 9000 @ 9.99GHz', this is '%s'; run opperf machine --refresh",
           here_model);
  if (!strstr(err.msg, want)) fail_msg("message '%s' lacks '%s'", err.msg, want);
  /* Same model, another number of CPUs (a resized VM): the all-threads figures are stale. */
  fake_machine(&m);
  m.cpus = here_cpus + 3;
  assert_int_equal(opf_machine_save(&m, path, &err), OPF_OK);
  assert_int_equal(opf_machine_load(&back, path, &err), OPF_EINVAL);
  assert_non_null(strstr(err.msg, "CPUs"));
  assert_non_null(strstr(err.msg, "--refresh"));
}

/* ---- a real (short) measurement ---- */

/* The relations a measurement must show, or why not. The all-threads figures need the whole
 * team on CPUs at once, which a loaded shared machine may not grant in a short measurement. */
static int implausible(const opf_machine *m, char *why, size_t n) {
  for (int t = 0; t < 2; t++) {
    /* float32 has twice the lanes of float64 per vector: expect ~2x, accept 1.5x. */
    if (!(m->peak_flops[OPF_F32][t] >= 1.5 * m->peak_flops[OPF_F64][t]))
      return snprintf(why, n, "float32 %.3g FLOP/s < 1.5 x float64 %.3g FLOP/s on %d threads",
                      m->peak_flops[OPF_F32][t], m->peak_flops[OPF_F64][t], t ? m->threads_all : 1);
  }
  /* More threads must not be much slower; no speed-up is asserted (noisy, shared machine). */
  if (!(m->bandwidth[1] >= 0.5 * m->bandwidth[0]))
    return snprintf(why, n, "bandwidth %.3g B/s on %d threads < half of %.3g B/s on 1", m->bandwidth[1],
                    m->threads_all, m->bandwidth[0]);
  if (!(m->peak_flops[OPF_F64][1] >= 0.5 * m->peak_flops[OPF_F64][0]))
    return snprintf(why, n, "float64 %.3g FLOP/s on %d threads < half of %.3g on 1", m->peak_flops[OPF_F64][1],
                    m->threads_all, m->peak_flops[OPF_F64][0]);
  return 0;
}

static void test_measure_quick(void **state) {
  (void)state;
  opf_machine m;
  opf_err err = {0};
  char why[256] = "";
  /* Short first; on a loaded machine try twice more with longer measurements. */
  static const double times[] = {0.02, 0.1, 0.3};
  int attempt, ok = 0;
  for (attempt = 0; attempt < 3 && !ok; attempt++) {
    int rc = opf_machine_measure(&m, times[attempt], &err);
    if (rc != OPF_OK) fail_msg("measure: %s", err.msg);
    /* Hard requirements, whatever the load. */
    assert_string_equal(m.cpu_model, here_model);
    assert_int_equal(m.cpus, here_cpus);
    assert_true(m.threads_all >= 1);
    assert_true(!strcmp(m.isa, "avx512") || !strcmp(m.isa, "avx2") || !strcmp(m.isa, "sse2") ||
                !strcmp(m.isa, "neon") || !strcmp(m.isa, "generic128"));
    assert_int_equal(strlen(m.timestamp), 20);
    for (int d = 0; d < 2; d++)
      for (int t = 0; t < 2; t++) assert_true(isfinite(m.peak_flops[d][t]) && m.peak_flops[d][t] > 1e8);
    for (int t = 0; t < 2; t++) assert_true(isfinite(m.bandwidth[t]) && m.bandwidth[t] > 1e8);
    ok = !implausible(&m, why, sizeof why);
    if (!ok) print_message("attempt %d (%.2f s): %s\n", attempt + 1, times[attempt], why);
  }
  if (!ok) fail_msg("%s", why);

  /* The measured figures survive the file. */
  char path[256];
  snprintf(path, sizeof path, "%s/measured.json", dir);
  opf_machine back;
  assert_int_equal(opf_machine_save(&m, path, &err), OPF_OK);
  assert_int_equal(opf_machine_load(&back, path, &err), OPF_OK);
  assert_true(back.bandwidth[1] == m.bandwidth[1]);
  assert_true(back.peak_flops[OPF_F64][0] == m.peak_flops[OPF_F64][0]);
  assert_string_equal(back.isa, m.isa);
  /* And the bound of a 1 FLOP/byte kernel is inside both ceilings. */
  double b = opf_roofline_bound(&m, OPF_F32, 2, 1e9, 1e9);
  assert_true(b > 0 && b <= m.peak_flops[OPF_F32][1] && b <= m.bandwidth[1] * (1 + 1e-12));

  /* Bad time */
  assert_int_equal(opf_machine_measure(&m, 0, &err), OPF_EINVAL);
  assert_int_equal(opf_machine_measure(&m, NAN, &err), OPF_EINVAL);
  assert_int_equal(opf_machine_measure(&m, -1, &err), OPF_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roofline_memory_bound), cmocka_unit_test(test_roofline_compute_bound),
      cmocka_unit_test(test_roofline_missing),
      cmocka_unit_test(test_roofline_time),
      cmocka_unit_test(test_path),
      cmocka_unit_test(test_save_load_round_trip),  cmocka_unit_test(test_load_absent),
      cmocka_unit_test(test_load_malformed),        cmocka_unit_test(test_load_other_cpu),
      cmocka_unit_test(test_measure_quick),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

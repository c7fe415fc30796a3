/* test_flamegraph.c: stack folding of `perf script` output (a handmade excerpt with every form
 * the folder handles, and a real recording of opperf committed as test data), folded-stack
 * reading and its errors, and the SVG flame graph: well-formed, one frame per tree node, widths
 * proportional to the samples. The SVG is also parsed by an XML parser in tests/cli. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/flamegraph.h"

static FILE *fixture(const char *name) {
  const char *dir = getenv("OPPERF_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/fixtures/perf/%s", dir ? dir : ".", name);
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s (set OPPERF_SOURCE_DIR)", path);
  return f;
}

static char *folded_text(opf_folded *f) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  assert_int_equal(opf_folded_write(f, m), OPF_OK);
  fclose(m);
  return buf;
}

static void test_fold_handmade(void **state) {
  (void)state;
  opf_folded f = {0};
  opf_err e;
  FILE *in = fixture("handmade.perf-script");
  assert_int_equal(opf_fold_perf_script(in, &f, &e), OPF_OK);
  fclose(in);
  assert_int_equal(f.total, 5);
  assert_int_equal(f.skipped, 1); /* the sample without a call stack */
  char *got = folded_text(&f);
  in = fixture("handmade.folded");
  char want[4096];
  size_t n = fread(want, 1, sizeof want - 1, in);
  want[n] = '\0';
  fclose(in);
  assert_string_equal(got, want);
  free(got);
  opf_folded_free(&f);
}

/* A real `perf record -g -e cpu-clock` of `opperf run relu` bracketed by --perf-control,
 * printed by perf script (scripts/opperf-flamegraph's pipeline; tests/fixtures/perf/README). */
static void test_fold_recorded(void **state) {
  (void)state;
  opf_folded f = {0};
  opf_err e;
  FILE *in = fixture("relu.perf-script");
  int headers = 0;
  char line[4096];
  while (fgets(line, sizeof line, in))
    if (line[0] && line[0] != '\t' && line[0] != ' ' && line[0] != '\n' && line[0] != '#') headers++;
  rewind(in);
  assert_int_equal(opf_fold_perf_script(in, &f, &e), OPF_OK);
  fclose(in);
  assert_int_equal(f.total + f.skipped, headers);
  /* Every sample lies inside the measured region: the operator's kernel is on most stacks and
   * no warm-up-only or set-up function (input generation) appears. */
  int64_t relu = 0;
  for (size_t i = 0; i < f.n; i++) {
    if (strstr(f.stack[i], "relu")) relu += f.count[i];
    assert_null(strstr(f.stack[i], "opf_case_alloc"));
    assert_null(strstr(f.stack[i], "fill_inputs"));
  }
  assert_true(relu * 2 > f.total);
  /* Folding its own output again gives the same stacks. */
  char *text = folded_text(&f);
  FILE *m = fmemopen(text, strlen(text), "r");
  opf_folded g = {0};
  assert_int_equal(opf_folded_read(m, &g, &e), OPF_OK);
  fclose(m);
  assert_int_equal(g.total, f.total);
  char *text2 = folded_text(&g);
  assert_string_equal(text, text2);
  free(text);
  free(text2);
  opf_folded_free(&f);
  opf_folded_free(&g);
}

static void test_bad_input(void **state) {
  (void)state;
  const char *bad_folded[] = {"a;b\n", "a;b x\n", "a;b -3\n", " 5\n", "a;b 1\nc;d 2 zz\n", NULL};
  for (int i = 0; bad_folded[i]; i++) {
    opf_folded f = {0};
    opf_err e;
    FILE *m = fmemopen((void *)bad_folded[i], strlen(bad_folded[i]), "r");
    if (opf_folded_read(m, &f, &e) != OPF_EINVAL) fail_msg("folded '%s' accepted", bad_folded[i]);
    assert_non_null(strstr(e.msg, "line"));
    fclose(m);
    opf_folded_free(&f);
  }
  const char *bad_perf[] = {"\tdeadbeef foo (bar)\n", "hello world\n", "x 1 2: 3 cpu-clock:\n\tnot a frame\n", NULL};
  for (int i = 0; bad_perf[i]; i++) {
    opf_folded f = {0};
    opf_err e;
    FILE *m = fmemopen((void *)bad_perf[i], strlen(bad_perf[i]), "r");
    if (opf_fold_perf_script(m, &f, &e) != OPF_EINVAL) fail_msg("perf script '%s' accepted", bad_perf[i]);
    fclose(m);
    opf_folded_free(&f);
  }
}

/* Frames as the tree: all, a (6), a;b (4), a;b;c (1), a;c (2), d (2): 6 frames. */
static void test_svg(void **state) {
  (void)state;
  opf_folded f = {0};
  opf_err e;
  assert_int_equal(opf_folded_add(&f, "a;b", 3, &e), OPF_OK);
  assert_int_equal(opf_folded_add(&f, "a;c", 2, &e), OPF_OK);
  assert_int_equal(opf_folded_add(&f, "d", 2, &e), OPF_OK);
  assert_int_equal(opf_folded_add(&f, "a;b;c", 1, &e), OPF_OK);
  assert_int_equal(opf_folded_add(&f, "a;b", 0, &e), OPF_OK); /* merges */
  assert_int_equal(f.n, 4);
  assert_int_equal(f.total, 8);
  char *svg = NULL;
  size_t len = 0;
  assert_int_equal(opf_flamegraph_svg(&f, "t <&> \"x\"", 1020, &svg, &len, &e), OPF_OK);
  assert_int_equal(strlen(svg), len);
  assert_int_equal(opf_flamegraph_frames(svg), 6);
  assert_non_null(strstr(svg, "t &lt;&amp;&gt; &quot;x&quot;"));
  /* 1000 px for 8 samples: a is 750 wide, d 250, a;b 500; the root starts at the padding. */
  assert_non_null(strstr(svg, "<title>a (6 samples, 75.00%)</title><rect x=\"10.00\""));
  assert_non_null(strstr(svg, "width=\"750.00\""));
  assert_non_null(strstr(svg, "<title>d (2 samples, 25.00%)</title><rect x=\"760.00\""));
  assert_non_null(strstr(svg, "<title>b (4 samples, 50.00%)</title><rect x=\"10.00\""));
  assert_non_null(strstr(svg, "<title>c (2 samples, 25.00%)</title><rect x=\"510.00\""));
  assert_non_null(strstr(svg, "</svg>"));
  free(svg);
  assert_int_equal(opf_flamegraph_svg(&f, "x", 50, &svg, &len, &e), OPF_EINVAL);
  opf_folded_free(&f);
  opf_folded empty = {0};
  assert_int_equal(opf_flamegraph_svg(&empty, "x", 0, &svg, &len, &e), OPF_EINVAL);
}

/* Tiny frames (below 0.1 px) are left out, like flamegraph.pl's minwidth. */
static void test_svg_min_width(void **state) {
  (void)state;
  opf_folded f = {0};
  opf_err e;
  assert_int_equal(opf_folded_add(&f, "big", 1000000, &e), OPF_OK);
  assert_int_equal(opf_folded_add(&f, "tiny", 1, &e), OPF_OK);
  char *svg = NULL;
  size_t len = 0;
  assert_int_equal(opf_flamegraph_svg(&f, "x", 1200, &svg, &len, &e), OPF_OK);
  assert_int_equal(opf_flamegraph_frames(svg), 2); /* all and big */
  assert_null(strstr(svg, "tiny"));
  free(svg);
  opf_folded_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold_handmade),
      cmocka_unit_test(test_fold_recorded),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_svg),
      cmocka_unit_test(test_svg_min_width),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

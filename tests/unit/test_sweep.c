/* test_sweep.c: `opperf sweep`'s shape generation (exact --vary and --aspect lists, --vary
 * parsing and its errors) and the SVG plot writer (points per line, escaping, log axes). The
 * SVG's well-formedness is also checked with python3's XML parser in tests/cli/test_sweep.sh. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "opperf/svg.h"
#include "opperf/sweep.h"

static void test_vary_geometric(void **state) {
  (void)state;
  opf_sweep_vary v;
  opf_err e;
  assert_int_equal(opf_sweep_parse_vary("x.dim0=16:65536:x2", &v, &e), OPF_OK);
  assert_string_equal(v.input, "x");
  assert_int_equal(v.dim, 0);
  assert_true(v.geometric);
  int64_t out[64];
  int n = opf_sweep_vary_values(&v, out, 64);
  assert_int_equal(n, 13); /* 2^4 .. 2^16 */
  for (int i = 0; i < n; i++) assert_int_equal(out[i], INT64_C(16) << i);
  /* a stop that is not on the grid: nothing past it */
  assert_int_equal(opf_sweep_parse_vary("a.dim2=3:100:x3", &v, &e), OPF_OK);
  n = opf_sweep_vary_values(&v, out, 64);
  int64_t want[] = {3, 9, 27, 81};
  assert_int_equal(n, 4);
  for (int i = 0; i < n; i++) assert_int_equal(out[i], want[i]);
}

static void test_vary_arithmetic(void **state) {
  (void)state;
  opf_sweep_vary v;
  opf_err e;
  assert_int_equal(opf_sweep_parse_vary("dim1=8:40:+8", &v, &e), OPF_OK);
  assert_string_equal(v.input, ""); /* the first input */
  assert_int_equal(v.dim, 1);
  assert_false(v.geometric);
  int64_t out[8];
  int n = opf_sweep_vary_values(&v, out, 8);
  int64_t want[] = {8, 16, 24, 32, 40};
  assert_int_equal(n, 5);
  for (int i = 0; i < n; i++) assert_int_equal(out[i], want[i]);
  /* too many for the buffer: the count says so, the buffer is not overrun */
  assert_int_equal(opf_sweep_parse_vary("x.dim0=1:1000:+1", &v, &e), OPF_OK);
  out[7] = -1;
  assert_int_equal(opf_sweep_vary_values(&v, out, 7), 1000);
  assert_int_equal(out[6], 7);
  assert_int_equal(out[7], -1);
  /* a single point */
  assert_int_equal(opf_sweep_parse_vary("x.dim0=5:5:x2", &v, &e), OPF_OK);
  assert_int_equal(opf_sweep_vary_values(&v, out, 7), 1);
}

static void test_vary_errors(void **state) {
  (void)state;
  const char *bad[] = {"x.dim0", "x.dim0=16:65536", "x.dim0=16:65536:2", "x.dim0=16:8:x2",
                       "x.dim0=0:8:x2", "x.dim0=16:64:x1", "x.dim0=16:64:+0", "x.dimA=1:2:x2",
                       "x.dim9=1:2:x2", "x.row0=1:2:x2", ".dim0=1:2:x2", "x.dim0=a:8:x2",
                       "x.dim0=1:8:x2:4", "x.dim0=-4:8:+2", "x.dim0=1:8:x", NULL};
  for (int i = 0; bad[i]; i++) {
    opf_sweep_vary v;
    opf_err e = {0};
    int rc = opf_sweep_parse_vary(bad[i], &v, &e);
    if (rc != OPF_EINVAL) fail_msg("'%s' accepted", bad[i]);
    assert_non_null(strstr(e.msg, "--vary"));
  }
}

static void test_aspect(void **state) {
  (void)state;
  int64_t n, r[64], c[64];
  opf_err e;
  assert_int_equal(opf_sweep_parse_count("2^20", &n, &e), OPF_OK);
  assert_int_equal(n, INT64_C(1) << 20);
  assert_int_equal(opf_sweep_parse_count("2**10", &n, &e), OPF_OK);
  assert_int_equal(n, 1024);
  assert_int_equal(opf_sweep_parse_count("4096", &n, &e), OPF_OK);
  assert_int_equal(n, 4096);
  int k = opf_sweep_aspect(INT64_C(1) << 20, r, c, 64);
  assert_int_equal(k, 21);
  for (int i = 0; i < k; i++) {
    assert_int_equal(r[i], INT64_C(1) << i);
    assert_int_equal(c[i], INT64_C(1) << (20 - i));
  }
  k = opf_sweep_aspect(8, r, c, 64); /* (1,8) (2,4) (4,2) (8,1) */
  int64_t wr[] = {1, 2, 4, 8}, wc[] = {8, 4, 2, 1};
  assert_int_equal(k, 4);
  for (int i = 0; i < k; i++) assert_int_equal(r[i], wr[i]), assert_int_equal(c[i], wc[i]);
  assert_int_equal(opf_sweep_aspect(8, r, c, 3), -1);
  const char *bad[] = {"1000", "1", "0", "2^", "^20", "2^x", "abc", "2^41", "3^5", "-8", "", NULL};
  for (int i = 0; bad[i]; i++)
    if (opf_sweep_parse_count(bad[i], &n, &e) != OPF_EINVAL) fail_msg("--aspect '%s' accepted", bad[i]);
}

/* Count the "x,y" pairs of the index-th polyline's points attribute. */
static int polyline_points(const char *svg, int index) {
  const char *p = svg;
  for (int i = 0; i <= index; i++) {
    p = strstr(p, "<polyline");
    if (!p) return -1;
    p++;
  }
  p = strstr(p, "points=\"");
  if (!p) return -1;
  p += 8;
  int n = 0;
  for (; *p && *p != '"'; p++) n += *p == ',';
  return n;
}

static void test_svg(void **state) {
  (void)state;
  double x[5] = {1, 2, 4, 8, 16}, y1[5] = {1, 2, 3, NAN, 5}, y2[5] = {0.5, 0.25, 2, 3, 4};
  opf_svg_series s[2] = {{"fwd, warm <cache> & \"x\"", 5, x, y1}, {"fwd, cold cache", 5, x, y2}};
  opf_svg_plot p = {.title = "sum: aspect sweep", .xlabel = "rows (elements)", .ylabel = "time per element (ns)",
                    .xlog = 1, .ylog = 0, .n_series = 2, .series = s};
  char *buf;
  size_t len;
  opf_err e;
  assert_int_equal(opf_svg_render(&p, &buf, &len, &e), OPF_OK);
  assert_int_equal(len, strlen(buf));
  assert_non_null(strstr(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  assert_non_null(strstr(buf, "</svg>"));
  assert_int_equal(polyline_points(buf, 0), 4); /* the NaN point is left out */
  assert_int_equal(polyline_points(buf, 1), 5);
  assert_int_equal(polyline_points(buf, 2), -1);
  assert_int_equal(opf_svg_drawn_points(&p, 0), 4);
  assert_non_null(strstr(buf, "fwd, warm &lt;cache&gt; &amp; &quot;x&quot;"));
  assert_null(strstr(buf, "<cache>"));
  assert_non_null(strstr(buf, "rows (elements) (log scale)"));
  assert_non_null(strstr(buf, "time per element (ns)"));
  free(buf);
  /* log y: a non-positive value cannot be placed and is left out */
  p.ylog = 1;
  y2[1] = 0;
  assert_int_equal(opf_svg_render(&p, &buf, &len, &e), OPF_OK);
  assert_int_equal(polyline_points(buf, 1), 4);
  free(buf);
  /* categorical x (explicit shapes): labels become the ticks */
  const char *cats[3] = {"1024x1024", "10000x10", "10x10000"};
  double cx[3] = {0, 1, 2}, cy[3] = {1, 2, 3};
  opf_svg_series s3 = {"fwd", 3, cx, cy};
  opf_svg_plot q = {.title = "t", .xlabel = "shape", .ylabel = "ns", .xcat = cats, .n_xcat = 3, .n_series = 1, .series = &s3};
  assert_int_equal(opf_svg_render(&q, &buf, &len, &e), OPF_OK);
  assert_int_equal(polyline_points(buf, 0), 3);
  assert_non_null(strstr(buf, ">10000x10</text>"));
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vary_geometric), cmocka_unit_test(test_vary_arithmetic),
      cmocka_unit_test(test_vary_errors),    cmocka_unit_test(test_aspect),
      cmocka_unit_test(test_svg),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

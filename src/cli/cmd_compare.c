/* cmd_compare.c: `opperf compare BASE.json NEW.json`: the regression gate. Prints the cases that
 * changed (all with --all), counts per verdict and geometric means per category, as a table,
 * Markdown or JSON; exits 1 when a case regressed significantly or broke, 0 otherwise. Also
 * used by `opperf run --compare-baseline`. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "opperf/compare.h"
#include "opperf/harness.h" /* OPF_MAX_REPS */
#include "textable.h"

static void fmt_metric(const char *metric, double v, char *b, size_t n) {
  if (isnan(v)) snprintf(b, n, "-");
  else if (!strcmp(metric, "time")) opf_fmt_time(v, b, n);
  else snprintf(b, n, "%.4g", v);
}

static char *render_text(const opf_cmp_report *r, const opf_cmp_opts *o, int all, int md, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  const char *metric = o->metric;
  enum { C_OP, C_DT, C_PASS, C_IN, C_BASE, C_NEW, C_CH, C_P, C_V, NC };
  opf_textable *t = opf_textable_new(NC);
  const char *hd[NC] = {"operator", "dtype", "pass", "case", "base", "new", "change", "p", "verdict"};
  for (int c = 0; c < NC; c++) opf_textable_header(t, c, hd[c], c >= C_BASE && c <= C_P);
  int shown = 0;
  for (int i = 0; i < r->n_rows; i++) {
    const opf_cmp_row *w = &r->rows[i];
    if (!all && w->verdict == OPF_V_UNCHANGED) continue;
    char b[32], c[32];
    opf_textable_row(t);
    opf_textable_cell(t, C_OP, "%s", w->op);
    opf_textable_cell(t, C_DT, "%s", w->dtype);
    opf_textable_cell(t, C_PASS, "%s", w->pass);
    opf_textable_cell(t, C_IN, "%.60s", w->spec);
    fmt_metric(metric, w->base, b, sizeof b);
    fmt_metric(metric, w->cur, c, sizeof c);
    opf_textable_cell(t, C_BASE, "%s", b);
    opf_textable_cell(t, C_NEW, "%s", c);
    if (isnan(w->change)) opf_textable_cell(t, C_CH, "-");
    else opf_textable_cell(t, C_CH, "%+.1f%%", 100 * w->change);
    if (isnan(w->p)) opf_textable_cell(t, C_P, "-");
    else opf_textable_cell(t, C_P, "%.3g", w->p);
    opf_textable_cell(t, C_V, "%s%s%s", opf_verdict_name(w->verdict), w->note[0] ? ": " : "", w->note);
    shown++;
  }
  fprintf(f, "%scompare %s: threshold %.3g%%, alpha %g%s\n", md ? "## opperf " : "", metric,
          100 * o->threshold, o->alpha, md ? "" : "");
  if (r->warning[0]) fprintf(f, "%swarning: %s\n", md ? "\n" : "", r->warning);
  fprintf(f, "\n");
  if (shown) opf_textable_print(t, f, md);
  else fprintf(f, "every matched case is unchanged\n");
  opf_textable_free(t);
  fprintf(f, "\n");
  for (int v = 0; v < OPF_NVERDICTS; v++)
    if (r->counts[v] || v <= OPF_V_REGRESSED) fprintf(f, "%s%d %s", v ? ", " : "", r->counts[v], opf_verdict_name((opf_verdict)v));
  fprintf(f, "\n\n");
  if (r->n_cats) {
    opf_textable *g = opf_textable_new(3);
    opf_textable_header(g, 0, "category", 0);
    opf_textable_header(g, 1, "cases", 1);
    opf_textable_header(g, 2, "geomean new/base", 1);
    for (int i = 0; i < r->n_cats; i++) {
      opf_textable_row(g);
      opf_textable_cell(g, 0, "%s", r->cats[i].name);
      opf_textable_cell(g, 1, "%d", r->cats[i].n);
      opf_textable_cell(g, 2, "%.3f", r->cats[i].geomean);
    }
    opf_textable_row(g);
    opf_textable_cell(g, 0, "all");
    opf_textable_cell(g, 1, "%d", r->counts[OPF_V_UNCHANGED] + r->counts[OPF_V_IMPROVED] +
                                      r->counts[OPF_V_REGRESSED] + r->counts[OPF_V_NOISE]);
    opf_textable_cell(g, 2, "%.3f", r->geomean);
    opf_textable_print(g, f, md);
    opf_textable_free(g);
  }
  fclose(f);
  return buf;
}

static char *render_json(const opf_cmp_report *r, const opf_cmp_opts *o, size_t *len) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "metric", o->metric);
  cJSON_AddNumberToObject(root, "threshold", o->threshold);
  cJSON_AddNumberToObject(root, "alpha", o->alpha);
  if (r->warning[0]) cJSON_AddStringToObject(root, "warning", r->warning);
  cJSON *cnt = cJSON_AddObjectToObject(root, "counts");
  for (int v = 0; v < OPF_NVERDICTS; v++) cJSON_AddNumberToObject(cnt, opf_verdict_name((opf_verdict)v), r->counts[v]);
  if (!isnan(r->geomean)) cJSON_AddNumberToObject(root, "geomean", r->geomean);
  cJSON *cats = cJSON_AddObjectToObject(root, "categories");
  for (int i = 0; i < r->n_cats; i++) {
    cJSON *c = cJSON_AddObjectToObject(cats, r->cats[i].name);
    cJSON_AddNumberToObject(c, "cases", r->cats[i].n);
    cJSON_AddNumberToObject(c, "geomean", r->cats[i].geomean);
  }
  cJSON *rows = cJSON_AddArrayToObject(root, "cases");
  for (int i = 0; i < r->n_rows; i++) {
    const opf_cmp_row *w = &r->rows[i];
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "op", w->op);
    cJSON_AddStringToObject(c, "category", w->category);
    cJSON_AddStringToObject(c, "impl", w->impl);
    cJSON_AddStringToObject(c, "spec", w->spec);
    cJSON_AddStringToObject(c, "dtype", w->dtype);
    cJSON_AddStringToObject(c, "pass", w->pass);
    cJSON_AddStringToObject(c, "verdict", opf_verdict_name(w->verdict));
    if (!isnan(w->base)) cJSON_AddNumberToObject(c, "base", w->base);
    if (!isnan(w->cur)) cJSON_AddNumberToObject(c, "new", w->cur);
    if (!isnan(w->change)) cJSON_AddNumberToObject(c, "change", w->change);
    if (!isnan(w->p)) cJSON_AddNumberToObject(c, "p", w->p);
    if (w->noise > 0) cJSON_AddNumberToObject(c, "noise", w->noise);
    if (w->rounds) cJSON_AddNumberToObject(c, "rounds", w->rounds);
    if (w->rounds && !isnan(w->ci_lo)) cJSON_AddItemToObject(c, "change_ci95", cJSON_CreateDoubleArray((double[]){w->ci_lo, w->ci_hi}, 2));
    if (w->note[0]) cJSON_AddStringToObject(c, "note", w->note);
    cJSON_AddItemToArray(rows, c);
  }
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  if (s) *len = strlen(s);
  return s;
}

int cli_compare_print(const char *base, const char *cur, const opf_cmp_opts *o, int all,
                      const char *fmt, const char *out) {
  opf_cmp_report rep;
  opf_err e;
  if (o->paired) {
    char *lists[2] = {strdup(base), strdup(cur)}, *save = NULL;
    const char *files[2][OPF_MAX_REPS];
    int n[2] = {0, 0}, rc = 0;
    for (int s = 0; s < 2 && !rc; s++) {
      if (!lists[s] || cli_check_list(lists[s], "--paired")) rc = EXIT_USAGE;
      for (char *t = rc ? NULL : strtok_r(lists[s], ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (n[s] < OPF_MAX_REPS) files[s][n[s]++] = t;
        else rc = cli_usage_error("--paired: at most %d rounds", OPF_MAX_REPS);
    }
    if (!rc && n[0] != n[1]) rc = cli_usage_error("--paired: %d base reports but %d new ones (one of each per round)", n[0], n[1]);
    if (!rc && opf_compare_paired(files[0], files[1], n[0], o, &rep, &e)) rc = cli_usage_error("%s", e.msg);
    free(lists[0]);
    free(lists[1]);
    if (rc) return rc;
  } else if (opf_compare_files(base, cur, o, &rep, &e)) {
    return cli_usage_error("%s", e.msg);
  }
  size_t len = 0;
  char *text = !strcmp(fmt, "json") ? render_json(&rep, o, &len) : render_text(&rep, o, all, !strcmp(fmt, "md"), &len);
  int regressed = rep.counts[OPF_V_REGRESSED] + rep.counts[OPF_V_BROKEN];
  opf_cmp_report_free(&rep);
  if (!text) return cli_usage_error("out of memory");
  int rc = 0;
  if (out) rc = opf_write_atomic(out, text, len, &e);
  else fwrite(text, 1, len, stdout);
  free(text);
  if (rc) return cli_usage_error("%s", e.msg);
  return regressed ? EXIT_FAILED : EXIT_OK;
}

typedef struct compare_cli {
  opf_cmp_opts o;
  const char *fmt, *out;
  int all;
} compare_cli;

#define M(f) offsetof(compare_cli, f)
static const cli_opt compare_table[] = {
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "options:"},
    {"metric", 256, "M", CLI_O_STR, M(o.metric), 0, 0, "time (default), instructions, cycles, or a counter name"},
    {"threshold", 257, "T", CLI_O_FRACTION, M(o.threshold), 0, 0, "smallest change that counts, e.g. 5% or 0.05 (default 5%)"},
    {"alpha", 258, "A", CLI_O_CUSTOM, 0, 0, 0, "significance level of the U test (default 0.05)"},
    {"force", 259, NULL, CLI_O_FLAG, M(o.force), 1, 0, "compare runs from different CPUs, thread counts or cache modes"},
    {"all", 260, NULL, CLI_O_FLAG, M(all), 1, 0, "list every case (default: only those not unchanged)"},
    {"paired", 261, NULL, CLI_O_FLAG, M(o.paired), 1, 0, "two builds measured in alternating rounds (B1 N1, N2 B2, ...):\neach case's change is the geometric mean of its round ratios\nwith a 95% interval; regressed when beyond the threshold and\nthe interval excludes no change"},
    {"format", 262, "F", CLI_O_CUSTOM, 0, 0, 0, "table (default), md or json"},
    {"output", 'o', "FILE", CLI_O_STR, M(out), 0, 0, "write the report to FILE (atomically)"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};
#undef M

static const cli_cmd_opts compare_cmd = {
    "compare",
    "usage: opperf compare [options] BASE.json NEW.json\n"
    "       opperf compare --paired B1.json,B2.json,... N1.json,N2.json,...",
    "Matches the cases of two JSON reports (operator, implementation, shapes, params,\n"
    "dtype, pass) and reports the change of a metric with a Mann-Whitney U test on the raw\n"
    "samples. Exits 1 when a case regressed beyond the threshold with significance (or\n"
    "failed in NEW), 0 otherwise, 2 on bad input or incomparable runs.",
    compare_table, (int)(sizeof compare_table / sizeof compare_table[0]), ""};

int cmd_compare(int argc, char **argv) {
  compare_cli c = {.o = {.metric = "time", .threshold = 0.05, .alpha = 0.05}, .fmt = "table"};
  const char *arg;
  int ch;
  optind = 1;
  while ((ch = cli_opts_next(&compare_cmd, argc, argv, &c, &arg)) > 0) {
    if (ch == 258) {
      if (!cli_parse_double(arg, &c.o.alpha) || !(c.o.alpha > 0 && c.o.alpha < 1))
        return cli_usage_error("--alpha needs a level in (0, 1), not '%s'", arg);
    } else { /* --format */
      if (strcmp(arg, "table") && strcmp(arg, "md") && strcmp(arg, "json"))
        return cli_usage_error("compare: unknown format '%s' (use table, md or json)", arg);
      c.fmt = arg;
    }
  }
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch < 0) return EXIT_USAGE;
  if (argc - optind != 2) return cli_usage_error("compare: expected two reports (opperf compare BASE.json NEW.json)");
  return cli_compare_print(argv[optind], argv[optind + 1], &c.o, c.all, c.fmt, c.out);
}

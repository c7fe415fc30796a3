/* cmd_history.c: `opperf history --store URL`: the runs of a results store (src/store.c), one
 * case's trend (per-run median with its 95% interval, steps marked), or --changes: the change
 * points of every case's series (PELT, src/changepoint.c) each named by the first run after the
 * step and the counters that moved with it. --import adds existing JSON reports first. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "opperf/store.h"
#include "store_cli.h"
#include "textable.h"

#define MAX_IMPORTS 256

static void fmt_t(double s, char *b, size_t n) {
  if (!(s > 0)) snprintf(b, n, "-");
  else opf_fmt_time(s, b, n);
}

static int list_runs(opf_store *st, const char *machine) {
  opf_store_run *r;
  int n;
  opf_err e;
  if (opf_store_runs(st, machine, &r, &n, &e)) return cli_usage_error("%s", e.msg);
  enum { C_ID, C_WHEN, C_MACH, C_GIT, C_BUILD, C_THR, C_SHARD, C_REC, C_FAIL, C_NOTE, NC };
  opf_textable *t = opf_textable_new(NC);
  const char *hd[NC] = {"run", "started", "machine", "commit", "build", "threads", "shard",
                        "records", "failed", ""};
  for (int c = 0; c < NC; c++) opf_textable_header(t, c, hd[c], c == C_ID || c == C_REC || c == C_FAIL || c == C_THR);
  for (int i = 0; i < n; i++) {
    opf_textable_row(t);
    opf_textable_cell(t, C_ID, "%lld", r[i].id);
    opf_textable_cell(t, C_WHEN, "%s", r[i].started);
    opf_textable_cell(t, C_MACH, "%.70s", r[i].machine);
    opf_textable_cell(t, C_GIT, "%s", r[i].git_hash);
    opf_textable_cell(t, C_BUILD, "%s", r[i].build_type);
    opf_textable_cell(t, C_THR, "%d", r[i].threads);
    opf_textable_cell(t, C_SHARD, "%s", r[i].shard);
    opf_textable_cell(t, C_REC, "%d", r[i].n_records);
    opf_textable_cell(t, C_FAIL, "%d", r[i].n_failed);
    if (r[i].interrupted) opf_textable_cell(t, C_NOTE, "interrupted");
  }
  opf_textable_print(t, stdout, 0);
  opf_textable_free(t);
  printf("%d runs in %s store\n", n, opf_store_backend(st));
  free(r);
  return EXIT_OK;
}

/* "+31% time (1.20 ms -> 1.57 ms), +28% LLC-misses" */
static void change_text(const opf_store_change *c, char *b, size_t n) {
  char t0[32], t1[32];
  fmt_t(c->before, t0, sizeof t0);
  fmt_t(c->after, t1, sizeof t1);
  size_t o = (size_t)snprintf(b, n, "%+.0f%% time (%s -> %s)", 100 * c->change, t0, t1);
  for (int k = 0; k < c->n_moved && o < n; k++)
    o += (size_t)snprintf(b + o, n - o, ", %+.0f%% %s", 100 * c->moved[k].change, c->moved[k].name);
}

static int show_trends(opf_store *st, const char *sel, const char *machine, int all, const opf_cp_opts *cpo) {
  opf_store_series *s;
  int ns;
  opf_err e;
  if (opf_store_series_load(st, sel, machine, all, &s, &ns, &e)) return cli_usage_error("%s", e.msg);
  if (!ns) {
    opf_store_series_free(s, ns);
    return cli_usage_error("no case in the store matches '%s'%s%s", sel, machine ? " on machine " : "", machine ? machine : "");
  }
  for (int i = 0; i < ns; i++) {
    opf_store_change *ch = NULL;
    int nch = 0;
    if (opf_store_series_changes(&s[i], cpo, &ch, &nch, &e)) {
      opf_store_series_free(s, ns);
      return cli_usage_error("%s", e.msg);
    }
    printf("%s%s\n  on %s\n", i ? "\n" : "", s[i].key, s[i].machine);
    enum { C_ID, C_WHEN, C_GIT, C_MED, C_LO, C_HI, C_N, C_ST, C_STEP, NC };
    opf_textable *t = opf_textable_new(NC);
    const char *hd[NC] = {"run", "started", "commit", "median", "ci95 low", "ci95 high", "samples", "status", "step"};
    for (int c = 0; c < NC; c++) opf_textable_header(t, c, hd[c], c == C_ID || (c >= C_MED && c <= C_N));
    for (int k = 0; k < s[i].n; k++) {
      const opf_store_point *p = &s[i].p[k];
      char b[32];
      opf_textable_row(t);
      opf_textable_cell(t, C_ID, "%lld", p->run_id);
      opf_textable_cell(t, C_WHEN, "%s", p->started);
      opf_textable_cell(t, C_GIT, "%s", p->git_hash);
      fmt_t(p->median, b, sizeof b);
      opf_textable_cell(t, C_MED, "%s", b);
      fmt_t(p->ci_lo, b, sizeof b);
      opf_textable_cell(t, C_LO, "%s", b);
      fmt_t(p->ci_hi, b, sizeof b);
      opf_textable_cell(t, C_HI, "%s", b);
      opf_textable_cell(t, C_N, "%d", p->n_samples);
      opf_textable_cell(t, C_ST, "%s", p->status);
      for (int j = 0; j < nch; j++)
        if (ch[j].run_id == p->run_id) {
          char txt[512];
          change_text(&ch[j], txt, sizeof txt);
          opf_textable_cell(t, C_STEP, "<- %s", txt);
        }
    }
    opf_textable_print(t, stdout, 0);
    opf_textable_free(t);
    free(ch);
  }
  opf_store_series_free(s, ns);
  return EXIT_OK;
}

static int show_changes(opf_store *st, const char *sel, const char *machine, int all, const opf_cp_opts *cpo) {
  opf_store_change *ch;
  int n;
  opf_err e;
  if (opf_store_changes(st, sel, machine, all, cpo, &ch, &n, &e)) return cli_usage_error("%s", e.msg);
  for (int i = 0; i < n; i++) {
    char txt[512];
    change_text(&ch[i], txt, sizeof txt);
    printf("%s\n  on %s: from run %lld (%s, commit %s, point %d of %d): %s\n", ch[i].key,
           ch[i].machine, ch[i].run_id, ch[i].started, ch[i].git_hash[0] ? ch[i].git_hash : "?",
           ch[i].index + 1, ch[i].n_points, txt);
  }
  printf("%d change point%s (PELT, min change %.0f%%)\n", n, n == 1 ? "" : "s",
         100 * (cpo->min_change >= 0 ? cpo->min_change : 0.05));
  free(ch);
  return EXIT_OK;
}

enum { O_STORE = 256, O_CHANGES, O_MACHINE, O_ALL, O_MIN, O_PEN, O_IMPORT, O_SHARD, O_CHECK };
typedef struct history_opts {
  const char *url, *machine, *shard;
  int changes, all, check;
  double min_change;
} history_opts;

#define M(f) offsetof(history_opts, f)
static const cli_opt history_table[] = {
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "options:"},
    {"store", O_STORE, "URL", CLI_O_STR, M(url), 0, 0, "an SQLite file or postgresql://... (see opperf run --store)"},
    {"changes", O_CHANGES, NULL, CLI_O_FLAG, M(changes), 1, 0, "list change points instead of trends"},
    {"machine", O_MACHINE, "M", CLI_O_STR, M(machine), 0, 0, "only runs of machine M (as listed; default: each machine apart)"},
    {"all-machines", O_ALL, NULL, CLI_O_FLAG, M(all), 1, 0, "join the machines' runs into one trend (default: never mixed)"},
    {"min-change", O_MIN, "PCT", CLI_O_FRACTION, M(min_change), 0, 0, "smallest step reported (default 5%)"},
    {"penalty", O_PEN, "P", CLI_O_CUSTOM, 0, 0, 0, "PELT's cost per change (default 4 ln n)"},
    {"import", O_IMPORT, "FILE", CLI_O_CUSTOM, 0, 0, 0, "add a JSON report (opperf run --format json) to the store\nfirst (repeatable; --shard K/N records it as a shard)"},
    {"shard", O_SHARD, "K/N", CLI_O_STR, M(shard), 0, 0, "with --import: the shard the reports were"},
    {"check", O_CHECK, NULL, CLI_O_FLAG, M(check), 1, 0, "check the store's integrity and exit (0 intact, 1 damaged)"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};
#undef M

static const cli_cmd_opts history_cmd = {
    "history", "usage: opperf history --store URL [options] [CASE]",
    "Without CASE: the runs in the store, oldest first. With CASE (a glob over the case key\n"
    "\"OP IMPL DTYPE PASS SPEC\", or an operator name or glob): each matching case's trend,\n"
    "per-run median and 95% interval, one trend per machine. --changes: the steps in every\n"
    "(matching) case's trend, found with PELT on the per-run medians weighted by their\n"
    "spread, each named by the first run after it and the counters that moved with it.",
    history_table, (int)(sizeof history_table / sizeof history_table[0]), ""};

int cmd_history(int argc, char **argv) {
  history_opts ho = {.min_change = 0.05};
  const char *imports[MAX_IMPORTS], *arg;
  int n_imp = 0, ch;
  opf_cp_opts cpo = {.penalty = 0, .min_seg = 0, .min_change = 0.05};
  optind = 1;
  while ((ch = cli_opts_next(&history_cmd, argc, argv, &ho, &arg)) > 0) {
    if (ch == O_PEN) {
      if (!cli_parse_double(arg, &cpo.penalty) || !(cpo.penalty > 0) || cpo.penalty > 1e6)
        return cli_usage_error("--penalty needs a positive number, not '%s'", arg);
    } else { /* --import */
      if (n_imp == MAX_IMPORTS) return cli_usage_error("too many --import files (at most %d)", MAX_IMPORTS);
      imports[n_imp++] = arg;
    }
  }
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch < 0) return EXIT_USAGE;
  cpo.min_change = ho.min_change;
  const char *url = ho.url, *machine = ho.machine, *shard = ho.shard;
  int changes = ho.changes, all = ho.all, check = ho.check;
  if (!url) return cli_usage_error("history needs --store URL (an SQLite file or postgresql://...)");
  if (optind + 1 < argc) return cli_usage_error("history takes one CASE selector, not %d", argc - optind);
  if (machine && all) return cli_usage_error("--machine and --all-machines exclude each other");
  opf_shard sh;
  opf_err e;
  char shard_txt[32] = "";
  if (shard) {
    if (!n_imp) return cli_usage_error("--shard goes with --import (opperf run has its own --shard)");
    if (opf_shard_parse(shard, &sh, &e)) return cli_usage_error("%s", e.msg);
    snprintf(shard_txt, sizeof shard_txt, "%d/%d", sh.index, sh.count);
  }
  /* every import is read and parsed before the store sees any */
  char *texts[MAX_IMPORTS];
  for (int i = 0; i < n_imp; i++) {
    texts[i] = cli_read_text(imports[i]);
    if (!texts[i]) {
      for (int k = 0; k < i; k++) free(texts[k]);
      return cli_usage_error("--import: cannot read %s", imports[i]);
    }
  }
  opf_store *st;
  int rc = opf_store_open(&st, url, n_imp > 0, &e) ? cli_usage_error("%s", e.msg) : EXIT_OK;
  opf_store_add_opts ao = {.shard = shard_txt[0] ? shard_txt : NULL, .machine = NULL};
  for (int i = 0; !rc && i < n_imp; i++) {
    long long id;
    if (opf_store_add_report(st, texts[i], &ao, &id, &e)) rc = cli_usage_error("--import %s: %s", imports[i], e.msg);
    else fprintf(stderr, "opperf: %s: stored as run %lld\n", imports[i], id);
  }
  for (int i = 0; i < n_imp; i++) free(texts[i]);
  const char *sel = optind < argc ? argv[optind] : NULL;
  if (!rc && check) {
    rc = opf_store_check(st, &e) ? EXIT_FAILED : EXIT_OK;
    if (rc) fprintf(stderr, "opperf: %s\n", e.msg);
    else printf("store intact (%s, schema version %d)\n", opf_store_backend(st), OPF_STORE_VERSION);
  } else if (!rc && changes) {
    rc = show_changes(st, sel, machine, all, &cpo);
  } else if (!rc && sel) {
    rc = show_trends(st, sel, machine, all, &cpo);
  } else if (!rc && !n_imp) {
    rc = list_runs(st, machine);
  }
  opf_store_close(st);
  return rc;
}

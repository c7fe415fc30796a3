/* cmd_report.c: `opperf report RUN.json|SWEEP.json... -o report.html`: one self-contained HTML
 * page from JSON files that `opperf run` and `opperf sweep` wrote (src/report_html.c builds it).
 * Several runs, oldest first, add trend lines and the regressions between the last two. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "opperf/htmlreport.h"

typedef struct report_cli {
  const char *out, *title, *store, *select, *machine;
  int all_machines;
} report_cli;

#define M(f) offsetof(report_cli, f)
static const cli_opt report_table[] = {
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "options:"},
    {"output", 'o', "FILE", CLI_O_STR, M(out), 0, 0, "the page to write (required; written atomically)"},
    {"title", 256, "TEXT", CLI_O_STR, M(title), 0, 0, "the page's title (default: opperf report)"},
    {"store", 257, "URL", CLI_O_STR, M(store), 0, 0, "take the trends from a results store (SQLite file or\npostgresql://...; see opperf history): every case's runs with\nits change points, and the regressions between the last two"},
    {"select", 258, "GLOB", CLI_O_STR, M(select), 0, 0, "with --store: only the cases matching GLOB (as opperf history)"},
    {"machine", 259, "M", CLI_O_STR, M(machine), 0, 0, "with --store: only runs of machine M"},
    {"all-machines", 260, NULL, CLI_O_FLAG, M(all_machines), 1, 0, "with --store: join the machines' runs into one trend"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};
#undef M

static const cli_cmd_opts report_cmd = {
    "report", "usage: opperf report [options] FILE.json... -o REPORT.html",
    "Writes one self-contained HTML page (no network needed to view it) from JSON files\n"
    "written by `opperf run --format json` and `opperf sweep --format json`: the context\n"
    "block, a sortable and filterable table of the last run's cases (with ours/peer ratios\n"
    "for --baseline runs), per case its operator's roofline against the ceilings the run\n"
    "recorded, its counters and top-down, and the sweep plots. Several runs, oldest first,\n"
    "or a results store (--store) add a trend line per case and the biggest regressions\n"
    "between the last two runs.",
    report_table, (int)(sizeof report_table / sizeof report_table[0]), ""};

int cmd_report(int argc, char **argv) {
  report_cli rc_ = {0};
  const char *arg;
  optind = 1;
  int ch = cli_opts_next(&report_cmd, argc, argv, &rc_, &arg);
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch != 0) return EXIT_USAGE;
  if (optind >= argc)
    return cli_usage_error("report needs at least one JSON file (see opperf report -h)%s",
                           rc_.store ? ": the run to show; the store adds the trends" : "");
  if (!rc_.out || !*rc_.out) return cli_usage_error("report needs -o FILE.html");
  if (!rc_.store && (rc_.select || rc_.machine || rc_.all_machines))
    return cli_usage_error("report: --select, --machine and --all-machines go with --store");
  if (rc_.machine && rc_.all_machines) return cli_usage_error("--machine and --all-machines exclude each other");
  opf_html_opts o = {.title = rc_.title};
  opf_err e;
  memset(&e, 0, sizeof e);
  opf_trend trend;
  if (rc_.store) {
    if (opf_trend_from_store(rc_.store, rc_.select, rc_.machine, rc_.all_machines, &trend, &e))
      return cli_usage_error("report: %s", e.msg);
    o.trend = &trend;
  }
  int rc = opf_html_report((const char *const *)argv + optind, argc - optind, &o, rc_.out, &e);
  if (rc_.store) opf_trend_free(&trend);
  return rc ? cli_usage_error("report: %s", e.msg) : EXIT_OK;
}

/* cmd_report.c: `opperf report RUN.json|SWEEP.json... -o report.html`: one self-contained HTML
 * page from JSON files that `opperf run` and `opperf sweep` wrote (src/report_html.c builds it).
 * Several runs, oldest first, add trend lines and the regressions between the last two. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opperf/htmlreport.h"

static void usage(void) {
  printf("usage: opperf report [options] FILE.json... -o REPORT.html\n\n"
         "Writes one self-contained HTML page (no network needed to view it) from JSON files\n"
         "written by `opperf run --format json` and `opperf sweep --format json`: the context\n"
         "block, a sortable and filterable table of the last run's cases (with ours/peer ratios\n"
         "for --baseline runs), per case its operator's roofline against the ceilings the run\n"
         "recorded, its counters and top-down, and the sweep plots. Several runs, oldest first,\n"
         "add a trend line per case and the biggest regressions between the last two runs.\n\n"
         "options:\n"
         "  -o, --output FILE    the page to write (required; written atomically)\n"
         "  --title TEXT         the page's title (default: opperf report)\n");
}

int cmd_report(int argc, char **argv) {
  enum { O_TITLE = 256 };
  static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                       {"title", required_argument, 0, O_TITLE},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *out = NULL;
  opf_html_opts o = {0};
  int ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (ch) {
    case 'h': usage(); return EXIT_OK;
    case 'o': out = optarg; break;
    case O_TITLE: o.title = optarg; break;
    case ':': return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
    default: return cli_usage_error("unknown option '%s' (see opperf report -h)", argv[optind - 1]);
    }
  }
  if (optind >= argc) return cli_usage_error("report needs at least one JSON file (see opperf report -h)");
  if (!out || !*out) return cli_usage_error("report needs -o FILE.html");
  opf_err e;
  memset(&e, 0, sizeof e);
  int rc = opf_html_report((const char *const *)argv + optind, argc - optind, &o, out, &e);
  return rc ? cli_usage_error("report: %s", e.msg) : EXIT_OK;
}

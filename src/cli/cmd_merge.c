/* cmd_merge.c: `opperf merge A.json B.json ... -o ALL.json`: joins the JSON reports of the shards
 * of one suite (opperf run --shard K/N) into one report (src/shard.c); refuses reports whose
 * build, CPU, settings or counters differ, or that share a case, with exit 2 and one line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "opperf/shard.h"
#include "store_cli.h"

typedef struct merge_opts {
  const char *out;
} merge_opts;

static const cli_opt merge_table[] = {
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "options:"},
    {"output", 'o', "FILE", CLI_O_STR, offsetof(merge_opts, out), 0, 0, "write the merged report to FILE, atomically (default: standard output)"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};

static const cli_cmd_opts merge_cmd = {
    "merge", "usage: opperf merge [-o ALL.json] A.json B.json ...",
    "Joins the JSON reports of the shards of one run (opperf run --shard K/N --format json)\n"
    "into one report: the first report's context with the earliest start, a \"shards\" list\n"
    "(file, host, start, command, records) and every record. Refuses (exit 2) reports of\n"
    "different builds, CPU models, settings, counters or environments, and a case present\n"
    "in two reports.",
    merge_table, (int)(sizeof merge_table / sizeof merge_table[0]), ""};

int cmd_merge(int argc, char **argv) {
  merge_opts mo = {0};
  const char *arg;
  optind = 1;
  int ch = cli_opts_next(&merge_cmd, argc, argv, &mo, &arg);
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch != 0) return EXIT_USAGE;
  const char *out = mo.out;
  int n = argc - optind;
  if (n < 1) return cli_usage_error("merge needs the shards' JSON reports (opperf merge A.json B.json -o ALL.json)");
  char **texts = calloc((size_t)n, sizeof *texts);
  if (!texts) return cli_usage_error("out of memory");
  int rc = EXIT_OK;
  for (int i = 0; i < n && !rc; i++)
    if (!(texts[i] = cli_read_text(argv[optind + i]))) rc = cli_usage_error("merge: cannot read %s", argv[optind + i]);
  char *merged = NULL;
  opf_err e;
  if (!rc && opf_reports_merge((const char *const *)texts, (const char *const *)argv + optind, n, &merged, &e))
    rc = cli_usage_error("%s", e.msg);
  if (!rc && out && strcmp(out, "-")) {
    const void *parts[2] = {merged, "\n"};
    size_t lens[2] = {strlen(merged), 1};
    if (opf_write_atomic_parts(out, parts, lens, 2, &e)) rc = cli_usage_error("%s", e.msg);
  } else if (!rc) {
    puts(merged);
  }
  free(merged);
  for (int i = 0; i < n; i++) free(texts[i]);
  free(texts);
  return rc;
}

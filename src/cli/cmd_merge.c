/* cmd_merge.c: `opperf merge A.json B.json ... -o ALL.json`: joins the JSON reports of the shards
 * of one suite (opperf run --shard K/N) into one report (src/shard.c); refuses reports whose
 * build, CPU, settings or counters differ, or that share a case, with exit 2 and one line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opperf/shard.h"
#include "store_cli.h"

static void usage(void) {
  printf("usage: opperf merge [-o ALL.json] A.json B.json ...\n\n"
         "Joins the JSON reports of the shards of one run (opperf run --shard K/N --format json)\n"
         "into one report: the first report's context with the earliest start, a \"shards\" list\n"
         "(file, host, start, command, records) and every record. Refuses (exit 2) reports of\n"
         "different builds, CPU models, settings, counters or environments, and a case present\n"
         "in two reports.\n\n"
         "options:\n"
         "  -o FILE    write the merged report to FILE, atomically (default: standard output)\n");
}

int cmd_merge(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  const char *out = NULL;
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (ch) {
    case 'h': usage(); return EXIT_OK;
    case 'o': out = optarg; break;
    case ':': return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
    default: return cli_usage_error("unknown option '%s' (see opperf merge -h)", argv[optind - 1]);
    }
  }
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

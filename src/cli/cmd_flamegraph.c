/* cmd_flamegraph.c: `opperf flamegraph [FILE]`: folds `perf script` output (or reads folded
 * stacks with --folded) and writes an interactive SVG flame graph and/or the folded stacks.
 * scripts/opperf-flamegraph records the profile (perf record with --perf-control) and calls this. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "opperf/flamegraph.h"

typedef struct flame_opts {
  const char *out, *fold_out, *title;
  int folded, width;
} flame_opts;

#define M(f) offsetof(flame_opts, f)
static const cli_opt flame_table[] = {
    {"output", 'o', "FILE.svg", CLI_O_STR, M(out), 0, 0, "write the flame graph here (default: standard output, unless\nonly --fold-out is asked for)"},
    {"folded", 256, NULL, CLI_O_FLAG, M(folded), 1, 0, "FILE holds folded stacks (\"a;b;c COUNT\" lines), not perf script"},
    {"fold-out", 257, "FILE", CLI_O_STR, M(fold_out), 0, 0, "also write the folded stacks (for other renderers)"},
    {"title", 258, "TEXT", CLI_O_STR, M(title), 0, 0, "the graph's title (default: Flame graph)"},
    {"width", 259, "PX", CLI_O_INT, M(width), 200, 100000, "width in pixels (default 1200)"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};
#undef M

static const cli_cmd_opts flame_cmd = {
    "flamegraph", "usage: opperf flamegraph [options] [FILE]",
    "Turns `perf script` output (FILE, or standard input when FILE is - or absent) into\n"
    "an interactive SVG flame graph: hover a frame for its samples, click to zoom, Search.\n"
    "scripts/opperf-flamegraph OP [run options] records and draws in one step.",
    flame_table, (int)(sizeof flame_table / sizeof flame_table[0]), ""};

int cmd_flamegraph(int argc, char **argv) {
  flame_opts fo = {.title = "Flame graph", .width = 1200};
  const char *arg;
  optind = 1;
  int ch = cli_opts_next(&flame_cmd, argc, argv, &fo, &arg);
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch != 0) return EXIT_USAGE; /* no custom rows: an error, printed */
  const char *out = fo.out, *fold_out = fo.fold_out, *title = fo.title;
  int folded = fo.folded;
  long long width = fo.width;
  if (argc - optind > 1) return cli_usage_error("flamegraph takes one input file, not %d", argc - optind);
  const char *in_path = optind < argc ? argv[optind] : "-";
  FILE *in = strcmp(in_path, "-") ? fopen(in_path, "r") : stdin;
  if (!in) return cli_usage_error("cannot open '%s'", in_path);

  opf_folded f;
  memset(&f, 0, sizeof f);
  opf_err e;
  memset(&e, 0, sizeof e);
  int rc = folded ? opf_folded_read(in, &f, &e) : opf_fold_perf_script(in, &f, &e);
  if (in != stdin) fclose(in);
  if (!rc && !f.total)
    rc = opf_err_set(&e, OPF_EINVAL, "%s: no samples with call stacks (was perf record run with -g and did the region run?)",
                     in_path);
  char *svg = NULL, *fold = NULL;
  size_t svg_len = 0, fold_len = 0;
  if (!rc && fold_out) {
    FILE *m = open_memstream(&fold, &fold_len);
    if (!m || opf_folded_write(&f, m)) rc = opf_err_set(&e, OPF_ENOMEM, "cannot render the folded stacks");
    if (m) fclose(m);
  }
  if (!rc && (out || !fold_out)) rc = opf_flamegraph_svg(&f, title, (int)width, &svg, &svg_len, &e);
  /* Outputs are written only when everything rendered: no half-written files. */
  if (!rc && fold_out) rc = opf_write_atomic(fold_out, fold, fold_len, &e);
  if (!rc && svg) {
    if (out && strcmp(out, "-")) rc = opf_write_atomic(out, svg, svg_len, &e);
    else if (fwrite(svg, 1, svg_len, stdout) != svg_len) rc = opf_err_set(&e, OPF_EIO, "cannot write to standard output");
  }
  if (!rc && f.skipped)
    fprintf(stderr, "opperf: flamegraph: %lld samples had no call stack and were left out\n", (long long)f.skipped);
  free(svg);
  free(fold);
  opf_folded_free(&f);
  return rc ? cli_usage_error("flamegraph: %s", e.msg) : EXIT_OK;
}

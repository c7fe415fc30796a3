/* cmd_flamegraph.c: `opperf flamegraph [FILE]`: folds `perf script` output (or reads folded
 * stacks with --folded) and writes an interactive SVG flame graph and/or the folded stacks.
 * scripts/opperf-flamegraph records the profile (perf record with --perf-control) and calls this. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opperf/flamegraph.h"

static void usage(void) {
  printf("usage: opperf flamegraph [options] [FILE]\n\n"
         "Turns `perf script` output (FILE, or standard input when FILE is - or absent) into\n"
         "an interactive SVG flame graph: hover a frame for its samples, click to zoom, Search.\n"
         "scripts/opperf-flamegraph OP [run options] records and draws in one step.\n\n"
         "  -o FILE.svg          write the flame graph here (default: standard output, unless\n"
         "                       only --fold-out is asked for)\n"
         "  --folded             FILE holds folded stacks (\"a;b;c COUNT\" lines), not perf script\n"
         "  --fold-out FILE      also write the folded stacks (for other renderers)\n"
         "  --title TEXT         the graph's title (default: Flame graph)\n"
         "  --width PX           width in pixels (default 1200)\n");
}

int cmd_flamegraph(int argc, char **argv) {
  enum { O_FOLDED = 256, O_FOLD_OUT, O_TITLE, O_WIDTH };
  static const struct option opts[] = {{"folded", no_argument, 0, O_FOLDED},
                                       {"fold-out", required_argument, 0, O_FOLD_OUT},
                                       {"title", required_argument, 0, O_TITLE},
                                       {"width", required_argument, 0, O_WIDTH},
                                       {"output", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *out = NULL, *fold_out = NULL, *title = "Flame graph";
  int folded = 0, ch;
  long long width = 1200;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (ch) {
    case 'h': usage(); return EXIT_OK;
    case 'o': out = optarg; break;
    case O_FOLDED: folded = 1; break;
    case O_FOLD_OUT: fold_out = optarg; break;
    case O_TITLE: title = optarg; break;
    case O_WIDTH:
      if (!cli_parse_int(optarg, &width) || width < 200 || width > 100000)
        return cli_usage_error("--width takes a number of pixels from 200 to 100000, not '%s'", optarg);
      break;
    case ':': return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
    default: return cli_usage_error("unknown option '%s' (see opperf flamegraph -h)", argv[optind - 1]);
    }
  }
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

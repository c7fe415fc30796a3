/* cmd_list.c: `opperf list [--category C]`: the registered operators with their category,
 * dtypes, passes and summary. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "textable.h"

static void dtypes_str(unsigned mask, char *buf, size_t n) {
  size_t off = 0;
  buf[0] = '\0';
  for (int d = 0; d < OPF_NDTYPES; d++)
    if (mask & OPF_DT_BIT(d))
      off += snprintf(buf + off, n - off, "%s%s", off ? "," : "", opf_dtype_name((opf_dtype)d));
}

int cmd_list(int argc, char **argv) {
  const char *category = NULL;
  static const struct option opts[] = {{"category", required_argument, 0, 'c'},
                                       {"plugin", required_argument, 0, 'p'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
    switch (ch) {
    case 'c': category = optarg; break;
    case 'p': if (cli_plugin_load(optarg)) return EXIT_USAGE; break;
    case 'h':
      printf("usage: opperf list [--category C] [--plugin LIB.so]\n\n"
             "Lists the operators opperf ships. --category takes a category (\"reduction\") or\n"
             "a prefix of one (\"nn\" matches nn.conv, nn.pool, ...). --plugin adds a plugin's\n"
             "operators (repeatable).\n");
      return EXIT_OK;
    default: return cli_usage_error("list: unknown option '%s' (see opperf list -h)", argv[optind - 1]);
    }
  }
  if (optind < argc) return cli_usage_error("list: unexpected argument '%s'", argv[optind]);
  opf_textable *t = opf_textable_new(5);
  if (!t) return cli_usage_error("out of memory");
  opf_textable_header(t, 0, "operator", 0);
  opf_textable_header(t, 1, "category", 0);
  opf_textable_header(t, 2, "dtypes", 0);
  opf_textable_header(t, 3, "passes", 0);
  opf_textable_header(t, 4, "summary", 0);
  int n = 0;
  for (int i = 0; i < opf_op_count(); i++) {
    const opf_op *op = opf_op_at(i);
    if (category && !cli_category_matches(op->category, category)) continue;
    char dt[64];
    dtypes_str(op->dtypes, dt, sizeof dt);
    opf_textable_row(t);
    opf_textable_cell(t, 0, "%s", op->name);
    opf_textable_cell(t, 1, "%s", op->category);
    opf_textable_cell(t, 2, "%s", dt);
    opf_textable_cell(t, 3, "%s", op->backward ? "fwd,bwd,both" : "fwd");
    opf_textable_cell(t, 4, "%s", op->summary);
    n++;
  }
  if (!n) {
    opf_textable_free(t);
    return cli_usage_error("no operator in category '%s' (see opperf list)", category);
  }
  opf_textable_print(t, stdout, 0);
  printf("\n%d operators\n", n);
  opf_textable_free(t);
  return EXIT_OK;
}

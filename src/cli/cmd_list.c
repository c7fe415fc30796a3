/* cmd_list.c: `opperf list [--category C]`: the registered operators with their category,
 * dtypes, passes and summary. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "textable.h"

static void dtypes_str(unsigned mask, char *buf, size_t n) {
  size_t off = 0;
  buf[0] = '\0';
  for (int d = 0; d < OPF_NDTYPES; d++)
    if (mask & OPF_DT_BIT(d))
      off += snprintf(buf + off, n - off, "%s%s", off ? "," : "", opf_dtype_name((opf_dtype)d));
}

typedef struct list_opts {
  const char *category;
} list_opts;

static const cli_opt list_table[] = {
    {"category", 'c', "C", CLI_O_STR, offsetof(list_opts, category), 0, 0, "a category (\"reduction\") or a prefix of one (\"nn\" matches\nnn.conv, nn.pool, ...)"},
    {"plugin", 256, "LIB.so", CLI_O_CUSTOM, 0, 0, 0, "add a plugin's operators (repeatable)"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};

static const cli_cmd_opts list_cmd = {"list", "usage: opperf list [--category C] [--plugin LIB.so]",
                                      "Lists the operators opperf ships.", list_table,
                                      (int)(sizeof list_table / sizeof list_table[0]), ""};

int cmd_list(int argc, char **argv) {
  list_opts lo = {0};
  const char *arg;
  int ch;
  optind = 1;
  while ((ch = cli_opts_next(&list_cmd, argc, argv, &lo, &arg)) > 0)
    if (cli_plugin_load(arg)) return EXIT_USAGE;
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch < 0) return EXIT_USAGE;
  const char *category = lo.category;
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

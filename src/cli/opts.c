/* opts.c: declarative option tables (opts.h): getopt_long's option array built from a
 * command's table, generic kinds applied to the command's options struct, and the usage text
 * printed from the same rows. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"

#define HELP_COL 23 /* where the help text starts in the usage */
#define MAX_OPTS 96

/* getopt_long's arrays for table c (rebuilt when the table changes: one command per process). */
static const cli_cmd_opts *built;
static struct option longs[MAX_OPTS + 1];
static char shorts[2 * MAX_OPTS + 2];

static void build(const cli_cmd_opts *c) {
  if (built == c) return;
  int n = 0, s = 0;
  shorts[s++] = ':'; /* a missing value is ':' (not '?') */
  for (int i = 0; i < c->n && n < MAX_OPTS; i++) {
    const cli_opt *o = &c->opts[i];
    if (o->kind == CLI_O_TEXT) continue;
    longs[n++] = (struct option){o->name, o->arg ? required_argument : no_argument, 0, o->key};
    if (o->key > 0 && o->key < 128) {
      shorts[s++] = (char)o->key;
      if (o->arg) shorts[s++] = ':';
    }
  }
  longs[n] = (struct option){0, 0, 0, 0};
  shorts[s] = '\0';
  built = c;
}

static const cli_opt *find(const cli_cmd_opts *c, int key) {
  for (int i = 0; i < c->n; i++)
    if (c->opts[i].kind != CLI_O_TEXT && c->opts[i].key == key) return &c->opts[i];
  return NULL;
}

static int apply(const cli_cmd_opts *c, const cli_opt *o, const char *v, void *target) {
  char *m = (char *)target + o->off;
  char opt[64];
  snprintf(opt, sizeof opt, "--%s", o->name);
  long long n;
  switch (o->kind) {
  case CLI_O_FLAG: *(int *)m = (int)o->lo; return 0;
  case CLI_O_LIST:
    if (cli_check_list(v, opt)) return CLI_OPT_USAGE;
    /* fall through */
  case CLI_O_STR: *(const char **)m = v; return 0;
  case CLI_O_SECONDS: return cli_parse_seconds(opt, v, (double *)m) ? CLI_OPT_USAGE : 0;
  case CLI_O_FRACTION:
    if (!cli_parse_fraction(v, (double *)m))
      return cli_usage_error("%s needs a share such as 5%% or 0.05, not '%s'", opt, v);
    return 0;
  case CLI_O_INT:
    if (!cli_parse_int(v, &n) || n < o->lo || n > o->hi)
      return cli_usage_error("%s needs a count between %ld and %ld, not '%s'", opt, o->lo, o->hi, v);
    *(int *)m = (int)n;
    return 0;
  default: break;
  }
  (void)c;
  return 0;
}

int cli_opts_next(const cli_cmd_opts *c, int argc, char **argv, void *target, const char **arg) {
  build(c);
  opterr = 0;
  for (;;) {
    int ch = getopt_long(argc, argv, shorts, longs, NULL);
    if (ch == -1) return 0;
    if (ch == ':') {
      cli_usage_error("option '%s' needs a value", argv[optind - 1]);
      return -CLI_OPT_USAGE;
    }
    const cli_opt *o = ch == '?' ? NULL : find(c, ch);
    if (!o) {
      cli_usage_error("%s: unknown option '%s' (see opperf %s -h)", c->cmd, argv[optind - 1], c->cmd);
      return -CLI_OPT_USAGE;
    }
    if (o->kind == CLI_O_HELP) {
      cli_opts_usage(c, stdout);
      return CLI_OPT_HELP_DONE;
    }
    if (o->kind == CLI_O_CUSTOM) {
      *arg = optarg;
      return ch;
    }
    if (apply(c, o, optarg, target)) return -CLI_OPT_USAGE;
  }
}

void cli_opts_usage(const cli_cmd_opts *c, FILE *f) {
  fprintf(f, "%s\n", c->synopsis);
  if (c->intro && *c->intro) fprintf(f, "\n%s\n", c->intro);
  fputc('\n', f);
  for (int i = 0; i < c->n; i++) {
    const cli_opt *o = &c->opts[i];
    if (o->kind == CLI_O_TEXT) {
      fprintf(f, "%s\n", o->help);
      continue;
    }
    char lead[64];
    int l;
    if (o->key > 0 && o->key < 128 && o->name)
      l = snprintf(lead, sizeof lead, "  -%c, --%s%s%s", o->key, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    else
      l = snprintf(lead, sizeof lead, "  --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    fputs(lead, f);
    const char *h = o->help;
    if (l + 1 > HELP_COL) {
      fputc('\n', f);
      l = 0;
    }
    for (int first = 1; h;) {
      const char *nl = strchr(h, '\n');
      int len = nl ? (int)(nl - h) : (int)strlen(h);
      fprintf(f, "%*s%.*s\n", first ? HELP_COL - l : HELP_COL, "", len, h);
      first = 0;
      h = nl ? nl + 1 : NULL;
    }
  }
  if (c->outro && *c->outro) fprintf(f, "%s", c->outro);
}

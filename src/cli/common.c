/* common.c: helpers shared by the subcommands: error printing, operator selection by name,
 * category or glob, and strict number parsing. */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("opperf: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return EXIT_USAGE;
}

int cli_status(int code) { return code == OPF_OK ? EXIT_OK : code == OPF_EKERNEL ? EXIT_FAILED : EXIT_USAGE; }

int cli_unknown_op(const char *name) {
  const char *s = opf_op_suggest(name);
  if (s) return cli_usage_error("unknown operator '%s'; did you mean '%s'?", name, s);
  return cli_usage_error("unknown operator or category '%s' (see opperf list)", name);
}

int cli_category_matches(const char *category, const char *filter) {
  size_t l = strlen(filter);
  return !strcmp(category, filter) || (!strncmp(category, filter, l) && category[l] == '.');
}

int cli_match_ops(const char *pattern, const opf_op **out, int max, int *n) {
  int found = 0, glob = strpbrk(pattern, "*?[") != NULL;
  /* An operator's exact name wins over a category of the same name ("sort" the operator, not
   * the sort category); "category:sort" asks for the category. */
  const opf_op *exact = glob ? NULL : opf_op_find(pattern);
  int force_cat = !strncmp(pattern, "category:", 9);
  if (force_cat) pattern += 9;
  for (int i = 0; i < opf_op_count(); i++) {
    const opf_op *op = opf_op_at(i);
    int hit = glob ? !fnmatch(pattern, op->name, 0)
                   : exact ? op == exact
                           : (!force_cat && !strcmp(op->name, pattern)) ||
                                 cli_category_matches(op->category, pattern);
    if (!hit) continue;
    found++;
    int dup = 0;
    for (int k = 0; k < *n; k++) dup |= out[k] == op;
    if (!dup && *n < max) out[(*n)++] = op;
  }
  return found;
}

int cli_parse_double(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return end != s && !*end && !errno;
}

int cli_parse_int(const char *s, long long *v) {
  char *end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return end != s && !*end && !errno;
}

int cli_parse_fraction(const char *s, double *v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  size_t l = strlen(buf);
  int pct = l && buf[l - 1] == '%';
  if (pct) buf[l - 1] = '\0';
  if (!cli_parse_double(buf, v) || *v < 0) return 0;
  if (pct) *v /= 100;
  return *v < 100;
}

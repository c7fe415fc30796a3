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

int cli_check_list(const char *list, const char *opt) {
  if (!list || !*list) return cli_usage_error("%s: empty list", opt);
  for (const char *s = list;; s++) {
    const char *e = strchr(s, ',');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    size_t k = 0;
    while (k < l && (s[k] == ' ' || s[k] == '\t')) k++;
    if (k == l) return cli_usage_error("%s: empty item in '%s'", opt, list);
    if (!e) return 0;
    s = e;
  }
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

int cli_parse_passes(const char *list, int *mask) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s", list);
  *mask = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!strcmp(t, "fwd") || !strcmp(t, "forward")) *mask |= 1 << OPF_PASS_FWD;
    else if (!strcmp(t, "bwd") || !strcmp(t, "backward")) *mask |= 1 << OPF_PASS_BWD;
    else if (!strcmp(t, "both")) *mask |= 1 << OPF_PASS_BOTH;
    else return cli_usage_error("unknown pass '%s' (use fwd, bwd or both)", t);
  }
  return *mask ? 0 : cli_usage_error("--pass needs at least one of fwd, bwd, both");
}

int cli_parse_seconds(const char *opt, const char *v, double *out) {
  if (!cli_parse_double(v, out) || !(*out >= 0) || *out > 1e6)
    return cli_usage_error("%s needs a non-negative number of seconds, not '%s'", opt, v);
  return 0;
}

void cli_join_argv(int argc, char **argv, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "opperf");
  for (int i = 0; i < argc && off < n; i++) off += (size_t)snprintf(buf + off, n - off, " %s", argv[i]);
}

int cli_verbose_env(void) {
  const char *v = getenv("OPPERF_VERBOSE");
  return v && *v && strcmp(v, "0");
}

/* A field without the separators of the line (',' and newlines). */
static void vfield(FILE *f, const char *s) {
  for (; *s; s++) fputc(*s == ',' ? ';' : *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

void cli_verbose_line(const char *cmd, const opf_result *r, const opf_settings *s) {
  /* Built in memory and written with one call so lines of concurrent writers do not mix. */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return;
  fprintf(f, "opperf_verbose,%s,", cmd);
  vfield(f, r->op);
  fprintf(f, ",%s,", r->impl[0] ? r->impl : "native");
  int first = 1;
  for (int i = 0; i < r->n_tensors; i++) {
    if (strcmp(r->tensors[i].role, "in")) continue;
    fprintf(f, "%s%s=", first ? "" : ";", r->tensors[i].name);
    vfield(f, r->tensors[i].shape);
    first = 0;
  }
  fprintf(f, ",%s,%s,%s", opf_dtype_name(r->dtype), opf_pass_name(r->pass), opf_status_name(r->status));
  if (r->params[0]) {
    fputs(",params=", f);
    for (const char *p = r->params; *p; p++) fputc(*p == ' ' ? ';' : *p == ',' ? ':' : *p, f);
  }
  fprintf(f, ",cache=%s", s && s->cache == OPF_CACHE_COLD ? "cold" : "warm");
  if (r->status == OPF_ST_OK) {
    if (!r->simulated) {
      fprintf(f, ",median_s=%.4g,min_s=%.4g,mad_pct=%.3g", r->time.median, r->time.min,
              r->time.median > 0 ? 100 * r->time.mad / r->time.median : 0.0);
      if (r->time.median > 0 && r->flops > 0) fprintf(f, ",gflops=%.4g", r->flops / r->time.median / 1e9);
      if (r->time.median > 0 && r->bytes > 0) fprintf(f, ",gbps=%.4g", r->bytes / r->time.median / 1e9);
    }
    fprintf(f, ",samples=%d,calls_per_sample=%lld", r->n_samples, (long long)r->batch);
    for (int i = 0; i < r->n_events; i++) {
      const opf_event_result *ev = &r->events[i];
      if (!ev->has_value) continue;
      if (!strcmp(ev->kind, "cycles")) fprintf(f, ",cycles=%.6g", ev->per_call);
      else if (!strcmp(ev->kind, "instructions")) fprintf(f, ",instructions=%.6g", ev->per_call);
    }
    for (int i = 0; i < r->n_events; i++) {
      const opf_event_result *ev = &r->events[i];
      if (!ev->has_value) continue;
      fputs(",ev:", f);
      vfield(f, ev->name);
      fprintf(f, "=%.6g", ev->per_call);
    }
  } else {
    fputs(",message=", f);
    vfield(f, r->message);
  }
  fputc('\n', f);
  if (!fclose(f) && buf) {
    fwrite(buf, 1, len, stderr);
    fflush(stderr);
  }
  free(buf);
}

volatile sig_atomic_t cli_stop_requested;
static int stop_isolating;
static void on_stop(int sig) {
  if (++cli_stop_requested > 1 && !stop_isolating) {
    signal(sig, SIG_DFL);
    raise(sig); /* in-process: nothing else can stop a hung case */
  }
}

void cli_stop_install(int isolating) {
  stop_isolating = isolating;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* progress.c: what `opperf run` shows while a long run goes on and after it: on a terminal a
 * redrawn line (done/total, the case, elapsed, an estimate of what is left), elsewhere a short
 * line every few seconds; one line per finished operator once a run is long; and a summary at
 * the end (the slowest cases, the lowest roofline shares, errors and skips, where the reports
 * were written). Everything goes to stderr, so the report on stdout stays clean. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define TOP 5
#define LONG_RUN 20      /* case passes from which per-operator lines and the summary appear */
#define LINE_EVERY_S 5.0 /* progress lines when stderr is not a terminal */

static void fmt_dur(double s, char *b, size_t n) {
  if (s < 60)
    snprintf(b, n, "%.0fs", s);
  else if (s < 3600)
    snprintf(b, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
  else
    snprintf(b, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

static void describe(const opf_result *r, char *b, size_t n) {
  snprintf(b, n, "%.40s %s %s %.180s", r->op, opf_dtype_name(r->dtype), opf_pass_name(r->pass),
           r->spec); /* the spec carries the params */
}

void cli_progress_start(cli_progress *p, int total, int tty) {
  memset(p, 0, sizeof *p);
  p->total = total;
  p->tty = tty;
  p->t0 = p->last_line = opf_now();
  p->long_run = total >= LONG_RUN;
}

static void status_text(const cli_progress *p, char *b, size_t n) {
  double el = opf_now() - p->t0;
  char e[32], left[48] = "";
  fmt_dur(el, e, sizeof e);
  if (p->done > 0 && p->done < p->total) {
    char l[32];
    fmt_dur(el / p->done * (p->total - p->done), l, sizeof l);
    snprintf(left, sizeof left, ", about %s left", l);
  }
  snprintf(b, n, "[%d/%d] %s elapsed%s", p->done, p->total, e, left);
}

void cli_progress_case(cli_progress *p, const char *op, const char *dtype, int passes) {
  char st[128];
  status_text(p, st, sizeof st);
  if (p->tty) {
    fprintf(stderr, "\r\033[K%s: %s %s", st, op, dtype);
  } else if (p->long_run && opf_now() - p->last_line >= LINE_EVERY_S) {
    fprintf(stderr, "opperf: %s\n", st);
    p->last_line = opf_now();
  }
  p->done += passes;
}

/* The finished operator's line: records, and the range of medians. */
static void flush_op(cli_progress *p) {
  if (!p->long_run || !p->op[0]) return;
  char lo[32], hi[32], extra[64] = "";
  if (p->op_bad) snprintf(extra, sizeof extra, ", %d not ok", p->op_bad);
  if (p->tty) fputs("\r\033[K", stderr);
  if (p->op_ok)
    fprintf(stderr, "  %-28s %3d record%s, median %s .. %s%s\n", p->op, p->op_n,
            p->op_n == 1 ? "" : "s", opf_fmt_time(p->op_min, lo, sizeof lo),
            opf_fmt_time(p->op_max, hi, sizeof hi), extra);
  else
    fprintf(stderr, "  %-28s %3d record%s%s\n", p->op, p->op_n, p->op_n == 1 ? "" : "s", extra);
  p->op[0] = '\0';
}

static void keep_top(cli_progress_item *v, int *n, double key, int worst_high, const char *what) {
  int pos = *n;
  while (pos > 0 && (worst_high ? key > v[pos - 1].key : key < v[pos - 1].key)) pos--;
  if (pos >= TOP) return;
  int last = *n < TOP ? *n : TOP - 1;
  memmove(&v[pos + 1], &v[pos], sizeof *v * (size_t)(last - pos));
  v[pos].key = key;
  snprintf(v[pos].what, sizeof v[pos].what, "%s", what);
  if (*n < TOP) (*n)++;
}

void cli_progress_result(cli_progress *p, const opf_result *r) {
  if (strcmp(p->op, r->op) != 0) {
    flush_op(p);
    snprintf(p->op, sizeof p->op, "%s", r->op);
    p->op_n = p->op_ok = p->op_bad = 0;
  }
  p->op_n++;
  p->records++;
  char d[240];
  describe(r, d, sizeof d);
  if (r->status == OPF_ST_OK && !r->simulated) {
    double m = r->time.median;
    if (!p->op_ok || m < p->op_min) p->op_min = m;
    if (!p->op_ok || m > p->op_max) p->op_max = m;
    p->op_ok++;
    keep_top(p->slow, &p->n_slow, m, 1, d);
    if (r->roofline_time > 0 && m > 0) keep_top(p->low, &p->n_low, r->roofline_time / m, 0, d);
  } else if (r->status == OPF_ST_SKIPPED) {
    p->skipped++;
    p->op_bad++;
  } else if (r->status != OPF_ST_OK) {
    p->errors++;
    p->op_bad++;
    if (p->n_err < TOP) {
      snprintf(p->err[p->n_err].what, sizeof p->err[0].what, "%.120s: %s: %.150s", d,
               opf_status_name(r->status), r->message);
      p->n_err++;
    }
  }
}

void cli_progress_finish(cli_progress *p, char *const *paths, int n_paths) {
  flush_op(p);
  if (p->tty) fputs("\r\033[K", stderr);
  if (!p->long_run) return;
  char el[32], b[32];
  fmt_dur(opf_now() - p->t0, el, sizeof el);
  fprintf(stderr, "\nopperf: %d records in %s: %d ok, %d skipped, %d failed\n", p->records, el,
          p->records - p->skipped - p->errors, p->skipped, p->errors);
  if (p->n_slow) {
    fprintf(stderr, "slowest cases (median per call):\n");
    for (int i = 0; i < p->n_slow; i++)
      fprintf(stderr, "  %10s  %s\n", opf_fmt_time(p->slow[i].key, b, sizeof b), p->slow[i].what);
  }
  if (p->n_low) {
    fprintf(stderr, "lowest share of the roofline (shortest possible time / median):\n");
    for (int i = 0; i < p->n_low; i++)
      fprintf(stderr, "  %9.1f%%  %s\n", 100 * p->low[i].key, p->low[i].what);
  }
  if (p->n_err) {
    fprintf(stderr, "failed:\n");
    for (int i = 0; i < p->n_err; i++) fprintf(stderr, "  %s\n", p->err[i].what);
    if (p->errors > p->n_err) fprintf(stderr, "  ... and %d more\n", p->errors - p->n_err);
  }
  for (int i = 0; i < n_paths; i++)
    if (paths[i]) fprintf(stderr, "report written: %s\n", paths[i]);
}

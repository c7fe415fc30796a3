/* store_trend.c: the HTML report's trends from a results store (opf_trend_from_store,
 * declared in opperf/htmlreport.h): every selected case's series (per machine unless joined)
 * becomes a trend line over the store's runs, oldest first, with the change points that
 * opf_store_series_changes finds (PELT, opperf/changepoint.h) marked at the first run after
 * each step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/htmlreport.h"
#include "opperf/store.h"

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

static int run_index(const long long *ids, int n, long long id) {
  const long long *p = bsearch(&id, ids, (size_t)n, sizeof *ids, cmp_ll);
  return p ? (int)(p - ids) : -1;
}

int opf_trend_from_store(const char *url, const char *selector, const char *machine, int all_machines,
                         opf_trend *t, opf_err *err) {
  memset(t, 0, sizeof *t);
  opf_store *st;
  int rc = opf_store_open(&st, url, 0, err);
  if (rc) return rc;
  opf_store_series *s = NULL;
  int ns = 0;
  rc = opf_store_series_load(st, selector, machine, all_machines, &s, &ns, err);
  opf_store_close(st);
  if (rc) return rc;
  if (!ns) {
    opf_store_series_free(s, ns);
    return opf_err_set(err, OPF_EINVAL, "the store has no run of the selected cases%s%s", machine ? " on " : "",
                       machine ? machine : "");
  }
  /* the runs: every run id any series has, in order */
  int total = 0;
  for (int i = 0; i < ns; i++) total += s[i].n;
  long long *ids = malloc(sizeof *ids * (size_t)(total ? total : 1));
  char (*started)[32] = malloc(sizeof *started * (size_t)(total ? total : 1));
  int nr = 0;
  if (!ids || !started) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < ns; i++)
    for (int k = 0; k < s[i].n; k++) ids[nr++] = s[i].p[k].run_id;
  if (!rc) qsort(ids, (size_t)nr, sizeof *ids, cmp_ll);
  int u = 0;
  for (int i = 0; !rc && i < nr; i++)
    if (!u || ids[u - 1] != ids[i]) ids[u++] = ids[i];
  nr = u;
  for (int i = 0; !rc && i < ns; i++)
    for (int k = 0; k < s[i].n; k++) snprintf(started[run_index(ids, nr, s[i].p[k].run_id)], 32, "%s", s[i].p[k].started);
  t->runs = rc ? NULL : calloc((size_t)nr, sizeof *t->runs);
  t->cases = rc ? NULL : calloc((size_t)ns, sizeof *t->cases);
  if (!rc && (!t->runs || !t->cases)) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  for (int r = 0; !rc && r < nr; r++) {
    char label[64];
    snprintf(label, sizeof label, "run %lld %.19s", ids[r], started[r]);
    if (!(t->runs[r] = strdup(label))) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
    else t->n_runs++;
  }
  opf_cp_opts cpo = {0};
  for (int i = 0; !rc && i < ns; i++) {
    opf_trend_case *c = &t->cases[t->n_cases];
    char key[900];
    snprintf(key, sizeof key, "%s @ %s", s[i].key, s[i].machine);
    c->key = strdup(key);
    c->label = strdup(all_machines || machine ? s[i].key : key);
    c->pts = calloc((size_t)nr, sizeof *c->pts);
    t->n_cases++;
    if (!c->key || !c->label || !c->pts) {
      rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
      break;
    }
    for (int k = 0; k < s[i].n; k++) {
      const opf_store_point *p = &s[i].p[k];
      if (strcmp(p->status, "ok") || !(p->median > 0)) continue;
      opf_trend_point *q = &c->pts[run_index(ids, nr, p->run_id)];
      q->present = 1;
      q->median = p->median;
      q->lo = p->ci_lo;
      q->hi = p->ci_hi;
    }
    opf_store_change *ch = NULL;
    int nch = 0;
    if (opf_store_series_changes(&s[i], &cpo, &ch, &nch, err) == OPF_OK)
      for (int k = 0; k < nch; k++) {
        int r = run_index(ids, nr, ch[k].run_id);
        if (r >= 0) c->pts[r].change = 1;
      }
    free(ch);
  }
  free(ids);
  free(started);
  opf_store_series_free(s, ns);
  if (rc) opf_trend_free(t);
  return rc;
}

/* compare.c: the regression gate (see compare.h). Cases are matched by operator,
 * implementation, canonical spec (shapes and every param), dtype and pass; a case regressed when
 * its median moved beyond the threshold AND the Mann-Whitney U test on the raw samples says the
 * shift is significant, which keeps one noisy sample from failing a CI job; with repetitions
 * the change must also exceed the run-to-run spread of the repetitions' medians. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/abtest.h"
#include "opperf/compare.h"
#include "opperf/harness.h" /* opf_stats_compute */
#include "opperf/report.h"  /* opf_read_text */

const char *opf_verdict_name(opf_verdict v) {
  static const char *n[] = {"unchanged", "improved", "regressed", "noise", "missing", "new",
                            "broken", "failed"};
  return (unsigned)v < OPF_NVERDICTS ? n[v] : "?";
}

/* ---- Mann-Whitney U ---- */
typedef struct ranked {
  double v;
  int from_a;
} ranked;

static int cmp_ranked(const void *x, const void *y) {
  double a = ((const ranked *)x)->v, b = ((const ranked *)y)->v;
  return (a > b) - (a < b);
}

/* P(U <= u) under H0 for sample sizes m, n (no ties): counts of arrangements, by the
 * recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u). */
static double exact_cdf(int m, int n, int u) {
  int maxu = m * n;
  double *f = calloc((size_t)(m + 1) * (size_t)(n + 1) * (size_t)(maxu + 1), sizeof *f);
  if (!f) return NAN;
#define F(i, j, k) f[((size_t)(i) * (size_t)(n + 1) + (size_t)(j)) * (size_t)(maxu + 1) + (size_t)(k)]
  for (int i = 0; i <= m; i++)
    for (int j = 0; j <= n; j++)
      for (int k = 0; k <= i * j; k++) {
        if (i == 0 || j == 0) {
          F(i, j, k) = k == 0;
          continue;
        }
        F(i, j, k) = (k >= j ? F(i - 1, j, k - j) : 0) + F(i, j - 1, k);
      }
  double total = 0, below = 0;
  for (int k = 0; k <= maxu; k++) {
    total += F(m, n, k);
    if (k <= u) below += F(m, n, k);
  }
#undef F
  free(f);
  return below / total;
}

int opf_mann_whitney(const double *a, int na, const double *b, int nb, double *u, double *p) {
  if (na < 1 || nb < 1) return OPF_EINVAL;
  int n = na + nb;
  ranked *r = malloc(sizeof *r * (size_t)n);
  if (!r) return OPF_ENOMEM;
  for (int i = 0; i < na; i++) r[i] = (ranked){a[i], 1};
  for (int i = 0; i < nb; i++) r[na + i] = (ranked){b[i], 0};
  qsort(r, (size_t)n, sizeof *r, cmp_ranked);
  double ra = 0, ties = 0;
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && r[j + 1].v == r[i].v) j++;
    double rank = (i + j) / 2.0 + 1, t = j - i + 1;
    for (int k = i; k <= j; k++)
      if (r[k].from_a) ra += rank;
    ties += t * t * t - t;
    i = j + 1;
  }
  free(r);
  double ua = ra - na * (na + 1) / 2.0, ub = (double)na * nb - ua;
  *u = ua;
  double umin = ua < ub ? ua : ub, umax = ua < ub ? ub : ua;
  if (ties == 0 && na <= 40 && nb <= 40 && (double)na * nb <= 1600) {
    double pv = 2 * exact_cdf(na, nb, (int)umin);
    *p = pv > 1 ? 1 : pv;
    return OPF_OK;
  }
  double mu = na * (double)nb / 2;
  double var = na * (double)nb / 12 * ((n + 1) - ties / ((double)n * (n - 1)));
  if (var <= 0) {
    *p = 1; /* every value equal: no evidence of a shift */
    return OPF_OK;
  }
  double z = (umax - mu - 0.5) / sqrt(var);
  double pv = erfc(z / sqrt(2)); /* 2 * (1 - Phi(z)) */
  *p = pv > 1 ? 1 : pv;
  return OPF_OK;
}

/* ---- reading reports ---- */
static cJSON *load_report(const char *path, opf_err *err) {
  char *buf = opf_read_text(path, err);
  if (!buf) return NULL;
  cJSON *root = cJSON_Parse(buf);
  free(buf);
  if (!root || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "results")) ||
      !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "context"))) {
    cJSON_Delete(root);
    opf_err_set(err, OPF_EINVAL, "'%s' is not an opperf JSON report (run with --format json)", path);
    return NULL;
  }
  return root;
}

static const char *str_at(const cJSON *o, const char *k1, const char *k2) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k1);
  if (k2) v = cJSON_GetObjectItemCaseSensitive(v, k2);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static double num_at(const cJSON *o, const char *k1, const char *k2) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k1);
  if (k2) v = cJSON_GetObjectItemCaseSensitive(v, k2);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The metric's median and raw samples of one result; 0 when the result does not have it. */
static int metric_of(const cJSON *res, const char *metric, double *median, double **raw, int *n) {
  *raw = NULL;
  *n = 0;
  const cJSON *arr = NULL;
  if (!strcmp(metric, "time")) {
    *median = num_at(res, "time", "median");
    arr = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "time"), "raw");
  } else {
    const cJSON *c, *found = NULL;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(res, "counters")) {
      if (!strcmp(str_at(c, "name", NULL), metric) || !strcmp(str_at(c, "kind", NULL), metric)) {
        found = c;
        break;
      }
    }
    if (!found) return 0;
    *median = num_at(found, "per_call", NULL);
    arr = cJSON_GetObjectItemCaseSensitive(found, "raw");
  }
  if (!isfinite(*median)) return 0;
  int k = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
  if (k > 0 && (*raw = malloc(sizeof **raw * (size_t)k))) {
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) if (cJSON_IsNumber(v)) (*raw)[(*n)++] = v->valuedouble;
  }
  return 1;
}

/* Relative range of a result's repetition medians ((max - min) / median), 0 with fewer than 2. */
static double rep_spread(const cJSON *res) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "time"), "repetition_medians");
  double v[64], lo = INFINITY, hi = -INFINITY;
  int n = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, arr) if (cJSON_IsNumber(x) && n < 64) v[n++] = x->valuedouble;
  if (n < 2) return 0;
  for (int i = 0; i < n; i++) lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
  opf_stats s;
  if (opf_stats_compute(v, n, &s) || !(s.median > 0)) return 0;
  return (hi - lo) / s.median;
}

static void key_of(const cJSON *r, char *buf, size_t n) {
  snprintf(buf, n, "%s|%s|%s|%s|%s", str_at(r, "op", NULL), str_at(r, "impl", NULL),
           str_at(r, "spec", NULL), str_at(r, "dtype", NULL), str_at(r, "pass", NULL));
}

static void row_from(opf_cmp_row *row, const cJSON *r) {
  snprintf(row->op, sizeof row->op, "%s", str_at(r, "op", NULL));
  snprintf(row->category, sizeof row->category, "%s", str_at(r, "category", NULL));
  snprintf(row->impl, sizeof row->impl, "%s", str_at(r, "impl", NULL));
  snprintf(row->set, sizeof row->set, "%s", str_at(r, "set", NULL));
  snprintf(row->spec, sizeof row->spec, "%s", str_at(r, "spec", NULL));
  snprintf(row->params, sizeof row->params, "%s", str_at(r, "params", NULL));
  snprintf(row->dtype, sizeof row->dtype, "%s", str_at(r, "dtype", NULL));
  snprintf(row->pass, sizeof row->pass, "%s", str_at(r, "pass", NULL));
  row->base = row->cur = row->change = row->p = NAN;
}

/* Context differences that invalidate a comparison. */
static int check_context(const cJSON *a, const cJSON *b, const opf_cmp_opts *o,
                         opf_cmp_report *rep, opf_err *err) {
  const cJSON *ca = cJSON_GetObjectItemCaseSensitive(a, "context"),
              *cb = cJSON_GetObjectItemCaseSensitive(b, "context");
  snprintf(rep->base_cpu, sizeof rep->base_cpu, "%s", str_at(ca, "host", "cpu_model"));
  snprintf(rep->cur_cpu, sizeof rep->cur_cpu, "%s", str_at(cb, "host", "cpu_model"));
  char why[256] = "";
  if (strcmp(rep->base_cpu, rep->cur_cpu))
    snprintf(why, sizeof why, "CPU model differs ('%.100s' vs '%.100s')", rep->base_cpu, rep->cur_cpu);
  else if (num_at(ca, "omp_threads", NULL) != num_at(cb, "omp_threads", NULL))
    snprintf(why, sizeof why, "thread count differs (%g vs %g)", num_at(ca, "omp_threads", NULL),
             num_at(cb, "omp_threads", NULL));
  else if (strcmp(str_at(cJSON_GetObjectItemCaseSensitive(ca, "settings"), "backend", NULL),
                  str_at(cJSON_GetObjectItemCaseSensitive(cb, "settings"), "backend", NULL)))
    snprintf(why, sizeof why, "backend differs (native vs callgrind)");
  else if (strcmp(str_at(cJSON_GetObjectItemCaseSensitive(ca, "settings"), "cache", NULL),
                  str_at(cJSON_GetObjectItemCaseSensitive(cb, "settings"), "cache", NULL)))
    snprintf(why, sizeof why, "cache mode differs (warm vs cold)");
  if (!why[0]) { /* dtypes: a run of other dtypes has nothing comparable */
    unsigned da = 0, db = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(a, "results")) da |= 1u << (str_at(r, "dtype", NULL)[0] & 31);
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(b, "results")) db |= 1u << (str_at(r, "dtype", NULL)[0] & 31);
    if (da && db && !(da & db)) snprintf(why, sizeof why, "the runs share no dtype");
  }
  if (!why[0]) return OPF_OK;
  if (o->force) {
    /* why is cut, not the note, when both do not fit */
    snprintf(rep->warning, sizeof rep->warning, "%.*s (compared anyway: --force)",
             (int)(sizeof rep->warning - sizeof " (compared anyway: --force)"), why);
    return OPF_OK;
  }
  return opf_err_set(err, OPF_EINVAL, "cannot compare: %s; use --force to compare anyway", why);
}

static void add_cat(opf_cmp_report *rep, const char *cat, double ratio) {
  int i = 0;
  while (i < rep->n_cats && strcmp(rep->cats[i].name, cat)) i++;
  if (i == rep->n_cats) {
    if (rep->n_cats == (int)(sizeof rep->cats / sizeof rep->cats[0])) return;
    snprintf(rep->cats[rep->n_cats].name, sizeof rep->cats[0].name, "%s", cat);
    rep->n_cats++;
  }
  rep->cats[i].n++;
  rep->cats[i].geomean += log(ratio); /* summed logs until the end */
}

int opf_compare_files(const char *base, const char *cur, const opf_cmp_opts *o,
                      opf_cmp_report *rep, opf_err *err) {
  memset(rep, 0, sizeof *rep);
  const char *metric = o->metric && *o->metric ? o->metric : "time";
  cJSON *a = load_report(base, err);
  if (!a) return err->code;
  cJSON *b = load_report(cur, err);
  if (!b) {
    cJSON_Delete(a);
    return err->code;
  }
  int rc = check_context(a, b, o, rep, err);
  const cJSON *ra = cJSON_GetObjectItemCaseSensitive(a, "results"),
              *rb = cJSON_GetObjectItemCaseSensitive(b, "results");
  int na = cJSON_GetArraySize(ra), nb = cJSON_GetArraySize(rb);
  rep->rows = calloc((size_t)(na + nb) + 1, sizeof *rep->rows);
  char *used = calloc((size_t)nb + 1, 1);
  if (!rc && (!rep->rows || !used)) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  int have_metric = 0;
  double logsum = 0;
  int nlog = 0;
  for (int i = 0; !rc && i < na; i++) {
    const cJSON *x = cJSON_GetArrayItem(ra, i), *y = NULL;
    char kx[800], ky[800];
    key_of(x, kx, sizeof kx);
    int j;
    for (j = 0; j < nb; j++) {
      if (used[j]) continue;
      key_of(cJSON_GetArrayItem(rb, j), ky, sizeof ky);
      if (!strcmp(kx, ky)) break;
    }
    opf_cmp_row *row = &rep->rows[rep->n_rows++];
    row_from(row, x);
    if (j == nb) {
      row->verdict = OPF_V_MISSING;
      continue;
    }
    used[j] = 1;
    y = cJSON_GetArrayItem(rb, j);
    const char *sx = str_at(x, "status", NULL), *sy = str_at(y, "status", NULL);
    if (strcmp(sx, "ok")) {
      row->verdict = OPF_V_FAILED;
      snprintf(row->note, sizeof row->note, "baseline: %s", sx);
      continue;
    }
    if (strcmp(sy, "ok")) {
      row->verdict = OPF_V_BROKEN;
      snprintf(row->note, sizeof row->note, "%s", sy);
      continue;
    }
    double *sa, *sb;
    int nsa, nsb;
    int ha = metric_of(x, metric, &row->base, &sa, &nsa), hb = metric_of(y, metric, &row->cur, &sb, &nsb);
    if (!ha || !hb) {
      row->verdict = OPF_V_FAILED;
      snprintf(row->note, sizeof row->note, "no %s figure", metric);
      free(sa);
      free(sb);
      continue;
    }
    have_metric = 1;
    row->n_base = nsa;
    row->n_cur = nsb;
    row->change = row->base > 0 ? row->cur / row->base - 1 : (row->cur > 0 ? INFINITY : 0);
    double u;
    if (nsa > 0 && nsb > 0) opf_mann_whitney(sa, nsa, sb, nsb, &u, &row->p);
    free(sa);
    free(sb);
    /* Without samples (e.g. a counter report without raw values) the threshold decides alone.
     * Samples of one process do not see the variance between processes (memory placement,
     * frequency, neighbours): with repetitions (each a fresh allocation or process) a time
     * change must also exceed the spread the repetitions showed on either side. */
    int sig = isnan(row->p) ? 1 : row->p < o->alpha;
    if (!strcmp(metric, "time")) row->noise = fmax(rep_spread(x), rep_spread(y));
    int beyond_noise = fabs(row->change) > row->noise;
    if (fabs(row->change) > o->threshold && sig && !beyond_noise)
      snprintf(row->note, sizeof row->note, "within the run-to-run spread (%.1f%%)", 100 * row->noise);
    if (row->change > o->threshold) row->verdict = sig && beyond_noise ? OPF_V_REGRESSED : OPF_V_NOISE;
    else if (row->change < -o->threshold) row->verdict = sig && beyond_noise ? OPF_V_IMPROVED : OPF_V_NOISE;
    else row->verdict = OPF_V_UNCHANGED;
    if (row->base > 0 && row->cur > 0) {
      add_cat(rep, row->category, row->cur / row->base);
      logsum += log(row->cur / row->base);
      nlog++;
    }
  }
  for (int j = 0; !rc && j < nb; j++) {
    if (used[j]) continue;
    opf_cmp_row *row = &rep->rows[rep->n_rows++];
    row_from(row, cJSON_GetArrayItem(rb, j));
    row->verdict = OPF_V_NEW;
  }
  if (!rc && !have_metric && rep->n_rows && strcmp(metric, "time")) {
    int matched = 0;
    for (int i = 0; i < rep->n_rows; i++) matched |= rep->rows[i].verdict == OPF_V_FAILED;
    if (matched)
      rc = opf_err_set(err, OPF_EINVAL, "no case has the metric '%s' in both reports (use time, "
                       "or a counter both runs measured)", metric);
  }
  for (int i = 0; i < rep->n_rows; i++) rep->counts[rep->rows[i].verdict]++;
  for (int i = 0; i < rep->n_cats; i++) rep->cats[i].geomean = exp(rep->cats[i].geomean / rep->cats[i].n);
  rep->geomean = nlog ? exp(logsum / nlog) : NAN;
  free(used);
  cJSON_Delete(a);
  cJSON_Delete(b);
  if (rc) opf_cmp_report_free(rep);
  return rc;
}

static int same_case(const opf_cmp_row *a, const opf_cmp_row *b) {
  return !strcmp(a->op, b->op) && !strcmp(a->impl, b->impl) && !strcmp(a->set, b->set) &&
         !strcmp(a->spec, b->spec) && !strcmp(a->params, b->params) && !strcmp(a->dtype, b->dtype) &&
         !strcmp(a->pass, b->pass);
}

int opf_compare_paired(const char *const *base, const char *const *cur, int n, const opf_cmp_opts *o,
                       opf_cmp_report *rep, opf_err *err) {
  memset(rep, 0, sizeof *rep);
  if (n < 2 || n > OPF_MAX_REPS)
    return opf_err_set(err, OPF_EINVAL, "a paired comparison needs 2 to %d rounds, not %d", OPF_MAX_REPS, n);
  opf_cmp_report r[OPF_MAX_REPS];
  int rc = OPF_OK, got = 0;
  for (; got < n && !rc; got++) rc = opf_compare_files(base[got], cur[got], o, &r[got], err);
  if (rc) got--;
  if (!rc) {
    *rep = r[0]; /* the first round's rows, verdicts and context checks; re-judged below */
    memset(rep->counts, 0, sizeof rep->counts);
    memset(rep->cats, 0, sizeof rep->cats);
    rep->n_cats = 0;
    double logsum = 0;
    int nlog = 0;
    for (int i = 0; i < rep->n_rows; i++) {
      opf_cmp_row *w = &rep->rows[i];
      if (w->verdict == OPF_V_MISSING || w->verdict == OPF_V_NEW || w->verdict == OPF_V_FAILED ||
          w->verdict == OPF_V_BROKEN)
        goto counted;
      double ratios[OPF_MAX_REPS], lb = 0, lc = 0;
      int m = 0;
      for (int k = 0; k < n; k++) {
        const opf_cmp_row *x = NULL;
        for (int j = 0; j < r[k].n_rows && !x; j++)
          if (same_case(&r[k].rows[j], w)) x = &r[k].rows[j];
        if (!x || x->verdict == OPF_V_BROKEN || x->verdict == OPF_V_FAILED || x->verdict == OPF_V_MISSING) {
          w->verdict = x && x->verdict != OPF_V_MISSING ? x->verdict : OPF_V_MISSING;
          snprintf(w->note, sizeof w->note, "round %d: %.80s", k + 1, x && x->note[0] ? x->note : "case absent");
          goto counted;
        }
        if (x->base > 0 && x->cur > 0) {
          ratios[m++] = x->cur / x->base;
          lb += log(x->base);
          lc += log(x->cur);
        }
      }
      double ratio, lo, hi;
      if (!m || opf_ab_ratio(ratios, m, &ratio, &lo, &hi)) {
        w->verdict = OPF_V_FAILED;
        snprintf(w->note, sizeof w->note, "no %s figure in the rounds", o->metric ? o->metric : "time");
        goto counted;
      }
      w->rounds = m;
      w->base = exp(lb / m);
      w->cur = exp(lc / m);
      w->change = ratio - 1;
      w->ci_lo = lo > 0 ? lo - 1 : NAN;
      w->ci_hi = hi > 0 ? hi - 1 : NAN;
      w->p = NAN;
      w->noise = 0;
      w->note[0] = '\0';
      if (hi > 0) snprintf(w->note, sizeof w->note, "paired, %d rounds: [%+.1f%%, %+.1f%%]", m, 100 * w->ci_lo, 100 * w->ci_hi);
      if (w->change > o->threshold) w->verdict = lo > 1 ? OPF_V_REGRESSED : OPF_V_NOISE;
      else if (w->change < -o->threshold) w->verdict = hi > 0 && hi < 1 ? OPF_V_IMPROVED : OPF_V_NOISE;
      else w->verdict = OPF_V_UNCHANGED;
      add_cat(rep, w->category, ratio);
      logsum += log(ratio);
      nlog++;
    counted:
      rep->counts[w->verdict]++;
    }
    for (int i = 0; i < rep->n_cats; i++) rep->cats[i].geomean = exp(rep->cats[i].geomean / rep->cats[i].n);
    rep->geomean = nlog ? exp(logsum / nlog) : NAN;
  }
  for (int k = rc ? 0 : 1; k < got; k++) opf_cmp_report_free(&r[k]);
  return rc;
}

void opf_cmp_report_free(opf_cmp_report *rep) {
  free(rep->rows);
  rep->rows = NULL;
  rep->n_rows = 0;
}

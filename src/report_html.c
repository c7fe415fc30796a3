/* report_html.c: `opperf report`: reads run and sweep JSON files, checks them, builds the page's
 * data (the last run's cases in a compact form, the context block, sweeps, the trend of every
 * case across the runs and the biggest regressions between the last two) and writes one
 * self-contained HTML file: the template, CSS and JavaScript under src/html/, compiled in as C
 * strings at build time (cmake/embed_text.cmake), with the data as JSON made safe for a
 * <script> element. The page draws its tables and SVG charts itself: no network needed. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/htmlreport.h"
#include "opperf/machine.h"
#include "opperf/report.h"

/* Generated from src/html/ by cmake/embed_text.cmake. */
extern const unsigned char opf_html_report_html[], opf_html_report_css[], opf_html_report_js[];

/* ---- reading the inputs ---- */
int opf_report_load(const char *path, cJSON **doc, int *is_sweep, opf_err *err) {
  *doc = NULL;
  char *text = opf_read_text(path, err);
  if (!text) return err ? err->code : OPF_EINVAL;
  cJSON *root = cJSON_Parse(text);
  free(text);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return opf_err_set(err, OPF_EINVAL, "'%s' is not an opperf JSON report (not a JSON object)", path);
  }
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
  int sweep = cJSON_IsString(kind) && !strcmp(kind->valuestring, "sweep");
  int run = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "results")) &&
            cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "context"));
  const char *bad = NULL;
  /* The version first: another version may well be laid out otherwise. */
  if (cJSON_IsNumber(ver) && ver->valuedouble != OPF_SCHEMA_VERSION) {
    double v = ver->valuedouble;
    cJSON_Delete(root);
    return opf_err_set(err, OPF_EINVAL, "'%s' has schema version %g; this opperf reads version %d",
                       path, v, OPF_SCHEMA_VERSION);
  }
  if (!cJSON_IsNumber(ver)) bad = "no schema_version";
  else if (sweep && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "points"))) bad = "a sweep without points";
  else if (!sweep && !run) bad = "neither a run (context, results) nor a sweep";
  if (bad) {
    cJSON_Delete(root);
    return opf_err_set(err, OPF_EINVAL, "'%s' is not an opperf JSON report (%s; write one with "
                       "opperf run --format json)", path, bad);
  }
  *doc = root;
  if (is_sweep) *is_sweep = sweep;
  return OPF_OK;
}

/* ---- small JSON helpers ---- */
static const char *jstr(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

static int jnum(const cJSON *o, const char *k, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return 0;
  *out = v->valuedouble;
  return 1;
}

/* Numbers rounded to 6 significant digits: cJSON then prints them short (it tries 15 digits
 * first and keeps them when they read back), which keeps a default-suite page small. */
static double r6(double v) {
  char b[40];
  snprintf(b, sizeof b, "%.6g", v);
  return strtod(b, NULL);
}

static void put_num(cJSON *o, const char *k, const cJSON *src, const char *sk) {
  double v;
  if (jnum(src, sk, &v)) cJSON_AddNumberToObject(o, k, r6(v));
}

static void put_str(cJSON *o, const char *k, const cJSON *src, const char *sk) {
  const char *s = jstr(src, sk);
  if (*s) cJSON_AddStringToObject(o, k, s);
}

static void copy_item(cJSON *o, const char *k, const cJSON *src, const char *sk) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, sk);
  if (v) cJSON_AddItemToObject(o, k, cJSON_Duplicate(v, 1));
}

void opf_report_case_key(const cJSON *rec, char *buf, size_t n) {
  snprintf(buf, n, "%s|%s|%s|%s|%s|%s", jstr(rec, "op"), jstr(rec, "impl"), jstr(rec, "spec"),
           jstr(rec, "params"), jstr(rec, "dtype"), jstr(rec, "pass"));
}

/* Median and CI of a record's time; 0 when it has none. */
static int rec_time(const cJSON *rec, double *med, double *lo, double *hi) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(rec, "time");
  if (!jnum(t, "median", med) || !(*med > 0)) return 0;
  const cJSON *ci = cJSON_GetObjectItemCaseSensitive(t, "median_ci95");
  *lo = *hi = 0;
  if (cJSON_IsArray(ci) && cJSON_GetArraySize(ci) == 2) {
    *lo = cJSON_GetArrayItem(ci, 0)->valuedouble;
    *hi = cJSON_GetArrayItem(ci, 1)->valuedouble;
  }
  return 1;
}

/* The page's string table: the strings that repeat across thousands of cases (counter names,
 * statuses and reasons, top-down models and reasons) are written once, in run.strings, and
 * referred to by index. An open-addressing hash keeps interning linear. */
typedef struct strtab {
  cJSON *arr;   /* the strings, in order of first use */
  const char **str; /* [n]: arr's strings (a cJSON array is a list: no indexing) */
  int *slot;    /* index + 1 into str, 0 empty */
  size_t cap;   /* power of 2, at least twice n */
  int n;
} strtab;

static size_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return (size_t)h;
}

static void strtab_free(strtab *t) {
  free(t->slot);
  free(t->str);
}

/* The index of s in the table (added when new); -1 when out of memory. */
static int intern(strtab *t, const char *s) {
  if ((size_t)(t->n + 1) * 2 > t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 256;
    int *ns = calloc(nc, sizeof *ns);
    const char **nstr = ns ? realloc(t->str, nc / 2 * sizeof *nstr) : NULL;
    if (!nstr) {
      free(ns);
      return -1;
    }
    t->str = nstr;
    for (size_t i = 0; i < t->cap; i++)
      if (t->slot[i]) {
        size_t j = str_hash(t->str[t->slot[i] - 1]) & (nc - 1);
        while (ns[j]) j = (j + 1) & (nc - 1);
        ns[j] = t->slot[i];
      }
    free(t->slot);
    t->slot = ns;
    t->cap = nc;
  }
  size_t j = str_hash(s) & (t->cap - 1);
  while (t->slot[j]) {
    if (!strcmp(t->str[t->slot[j] - 1], s)) return t->slot[j] - 1;
    j = (j + 1) & (t->cap - 1);
  }
  cJSON *item = cJSON_CreateString(s);
  if (!item) return -1;
  cJSON_AddItemToArray(t->arr, item);
  t->str[t->n] = item->valuestring;
  t->slot[j] = ++t->n;
  return t->n - 1;
}

/* Append the interned index of src[sk] to array a (null when absent). */
static void push_str(cJSON *a, strtab *t, const cJSON *src, const char *sk) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, sk);
  int i = cJSON_IsString(v) && v->valuestring ? intern(t, v->valuestring) : -1;
  cJSON_AddItemToArray(a, i >= 0 ? cJSON_CreateNumber(i) : cJSON_CreateNull());
}

static void push_num(cJSON *a, const cJSON *src, const char *sk) {
  double v;
  cJSON_AddItemToArray(a, jnum(src, sk, &v) ? cJSON_CreateNumber(r6(v)) : cJSON_CreateNull());
}

/* The record's top-down object with its repeated strings interned; the model's formulas and
 * source (the same for every case) go once into models, keyed by the model's name. */
static cJSON *compact_topdown(const cJSON *td, strtab *t, cJSON *models) {
  cJSON *o = cJSON_Duplicate(td, 1);
  if (!o) return NULL;
  static const char *const moved[] = {"cpu", "formula", "formula_level2", "slots_per_cycle", "source"};
  const char *model = jstr(td, "model");
  cJSON *m = *model && !cJSON_GetObjectItemCaseSensitive(models, model) ? cJSON_AddObjectToObject(models, model) : NULL;
  for (size_t k = 0; k < sizeof moved / sizeof *moved; k++) {
    if (m) copy_item(m, moved[k], td, moved[k]);
    cJSON_DeleteItemFromObjectCaseSensitive(o, moved[k]);
  }
  static const char *const strs[] = {"model", "reason", "verdict", "level2_absent", "privilege"};
  for (size_t k = 0; k < sizeof strs / sizeof *strs; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, strs[k]);
    int i = cJSON_IsString(v) ? intern(t, v->valuestring) : -1;
    if (i >= 0) cJSON_ReplaceItemInObjectCaseSensitive(o, strs[k], cJSON_CreateNumber(i));
  }
  return o;
}

/* One case for the page: what the table, the charts and the detail panel show (the raw
 * samples stay in the JSON file). Keys are short: a default suite has thousands of cases.
 * Counters are arrays [name, status, per call, running %, reason, privilege], strings as
 * indexes into the string table (report.js decodes them). */
/* A field of the page's case: key in the page, key in the run JSON, 's' string or 'n' number. */
typedef struct field {
  const char *dst, *src;
  char kind;
} field;

#define NFIELDS(a) (sizeof(a) / sizeof *(a))
static const field case_fields[] = {
    {"op", "op", 's'}, {"cat", "category", 's'}, {"impl", "impl", 's'}, {"spec", "spec", 's'},
    {"params", "params", 's'}, {"dtype", "dtype", 's'}, {"pass", "pass", 's'}, {"status", "status", 's'},
    {"msg", "message", 's'}, {"check", "reference_check", 's'},
    {"threads", "threads", 'n'}}; /* per-case thread count, when a run records one */
static const field time_fields[] = {{"cv", "cv", 'n'}, {"n", "samples", 'n'}, {"min", "min", 'n'},
                                    {"p90", "p90", 'n'}, {"stop", "stop", 's'}};
static const field model_fields[] = {{"flops", "flops_per_call", 'n'}, {"bytes", "bytes_per_call", 'n'},
                                     {"roof", "roofline_bound_flops_per_s", 'n'}};
static const field peer_fields[] = {{"lib", "library", 's'}, {"name", "name", 's'}, {"status", "status", 's'},
                                    {"t", "median", 'n'}, {"ratio", "ratio", 'n'}};
static const field mem_fields[] = {{"setup", "setup_bytes", 'n'}, {"alloc_call", "bytes_allocated_per_call", 'n'},
                                   {"peak", "peak_live_bytes", 'n'}};

static void put_fields(cJSON *o, const cJSON *src, const field *f, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (f[i].kind == 's') put_str(o, f[i].dst, src, f[i].src);
    else put_num(o, f[i].dst, src, f[i].src);
}

/* src[key], when an object, as a new object named dst in o holding the fields. */
static cJSON *put_object(cJSON *o, const char *dst, const cJSON *src, const char *key, const field *f, size_t n) {
  const cJSON *from = cJSON_GetObjectItemCaseSensitive(src, key);
  if (!cJSON_IsObject(from)) return NULL;
  cJSON *to = cJSON_AddObjectToObject(o, dst);
  put_fields(to, from, f, n);
  return to;
}

static cJSON *compact_case(const cJSON *rec, strtab *strs, cJSON *td_models) {
  cJSON *c = cJSON_CreateObject();
  if (!c) return NULL;
  put_fields(c, rec, case_fields, NFIELDS(case_fields));
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "simulated"))) cJSON_AddTrueToObject(c, "sim");
  double med, lo, hi;
  if (rec_time(rec, &med, &lo, &hi)) {
    double t[3] = {r6(med), r6(lo), r6(hi)};
    cJSON_AddItemToObject(c, "t", cJSON_CreateDoubleArray(t, 3));
    put_fields(c, cJSON_GetObjectItemCaseSensitive(rec, "time"), time_fields, NFIELDS(time_fields));
  }
  put_fields(c, cJSON_GetObjectItemCaseSensitive(rec, "model"), model_fields, NFIELDS(model_fields));
  const cJSON *mets = cJSON_GetObjectItemCaseSensitive(rec, "metrics");
  if (cJSON_IsObject(mets) && mets->child) {
    cJSON *m = cJSON_AddObjectToObject(c, "m");
    for (const cJSON *k = mets->child; k; k = k->next)
      if (cJSON_IsNumber(k) && isfinite(k->valuedouble)) cJSON_AddNumberToObject(m, k->string, r6(k->valuedouble));
  }
  cJSON *p = put_object(c, "peer", rec, "peer", peer_fields, NFIELDS(peer_fields));
  const cJSON *chk = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rec, "peer"), "check");
  if (p && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(chk, "done")))
    cJSON_AddBoolToObject(p, "agree", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(chk, "agree")));
  const cJSON *ctrs = cJSON_GetObjectItemCaseSensitive(rec, "counters");
  if (cJSON_IsArray(ctrs) && cJSON_GetArraySize(ctrs)) {
    cJSON *a = cJSON_AddArrayToObject(c, "ctr");
    const cJSON *k;
    cJSON_ArrayForEach(k, ctrs) {
      cJSON *e = cJSON_CreateArray();
      push_str(e, strs, k, "name");
      push_str(e, strs, k, "status");
      push_num(e, k, "per_call");
      push_num(e, k, "running_pct");
      push_str(e, strs, k, "reason");
      push_str(e, strs, k, "privilege");
      cJSON_AddItemToArray(a, e);
    }
  }
  const cJSON *td = cJSON_GetObjectItemCaseSensitive(rec, "topdown");
  if (cJSON_IsObject(td)) cJSON_AddItemToObject(c, "td", compact_topdown(td, strs, td_models));
  put_object(c, "mem", rec, "memory", mem_fields, NFIELDS(mem_fields));
  return c;
}

/* The context block as the page shows it: the run's context less its long provenance lists
 * (build-ids, the harness's counting sentence), which stay in the JSON file. */
static cJSON *compact_context(const cJSON *ctx) {
  cJSON *c = cJSON_Duplicate(ctx, 1);
  if (!c) return NULL;
  cJSON_DeleteItemFromObjectCaseSensitive(c, "build_ids");
  cJSON *perf = cJSON_GetObjectItemCaseSensitive(c, "perf");
  if (perf) cJSON_DeleteItemFromObjectCaseSensitive(perf, "counting");
  return c;
}

static void run_label(const cJSON *run, const char *path, char *buf, size_t n) {
  const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(run, "context");
  const char *ts = jstr(ctx, "timestamp");
  const char *git = jstr(cJSON_GetObjectItemCaseSensitive(ctx, "tool"), "git_hash");
  if (*ts) snprintf(buf, n, "%s%s%s", ts, *git ? " " : "", git);
  else {
    const char *b = strrchr(path, '/');
    snprintf(buf, n, "%s", b ? b + 1 : path);
  }
}

/* ---- trends ---- */
void opf_trend_free(opf_trend *t) {
  if (!t) return;
  for (int i = 0; i < t->n_runs && t->runs; i++) free(t->runs[i]);
  for (int i = 0; i < t->n_cases && t->cases; i++) {
    free(t->cases[i].key);
    free(t->cases[i].label);
    free(t->cases[i].pts);
  }
  free(t->runs);
  free(t->cases);
  memset(t, 0, sizeof *t);
}

static int find_case(const opf_trend *t, int from, const char *key) {
  for (int i = t->n_cases - 1; i >= from; i--)
    if (!strcmp(t->cases[i].key, key)) return i;
  return -1;
}

/* Cases keep their order of first appearance; the cases of earlier runs are found through a
 * sorted index (binary search), those new in the current run by a search among them. */
typedef struct key_ix {
  const char *key;
  int c;
} key_ix;

static int cmp_key_ix(const void *a, const void *b) {
  return strcmp(((const key_ix *)a)->key, ((const key_ix *)b)->key);
}

static int lookup(const key_ix *ix, int n, const char *key) {
  key_ix k = {key, 0};
  const key_ix *f = n ? bsearch(&k, ix, (size_t)n, sizeof *ix, cmp_key_ix) : NULL;
  return f ? f->c : -1;
}

static int add_case(opf_trend *t, int *cap, const char *key, const cJSON *rec) {
  if (t->n_cases == *cap) {
    int nc = *cap ? *cap * 2 : 256;
    opf_trend_case *p = realloc(t->cases, (size_t)nc * sizeof *p);
    if (!p) return -1;
    t->cases = p;
    *cap = nc;
  }
  opf_trend_case *c = &t->cases[t->n_cases];
  memset(c, 0, sizeof *c);
  char label[600];
  snprintf(label, sizeof label, "%s %s %s %s%s%s", jstr(rec, "op"), jstr(rec, "dtype"), jstr(rec, "pass"),
           jstr(rec, "spec"), *jstr(rec, "params") ? " " : "", jstr(rec, "params"));
  c->key = strdup(key);
  c->label = strdup(label);
  c->pts = calloc((size_t)t->n_runs, sizeof *c->pts);
  if (!c->key || !c->label || !c->pts) {
    free(c->key), free(c->label), free(c->pts);
    return -1;
  }
  return t->n_cases++;
}

static int run_index(const cJSON *v, const opf_trend *t) {
  if (cJSON_IsNumber(v)) return v->valueint >= 0 && v->valueint < t->n_runs ? v->valueint : -1;
  if (cJSON_IsString(v))
    for (int r = 0; r < t->n_runs; r++)
      if (!strcmp(t->runs[r], v->valuestring)) return r;
  return -1;
}

static void mark_changes(opf_trend *t, const cJSON *changes) {
  const cJSON *ch;
  cJSON_ArrayForEach(ch, changes) {
    char key[1200];
    const char *k = jstr(ch, "key");
    if (!*k) {
      opf_report_case_key(ch, key, sizeof key);
      k = key;
    }
    int c = find_case(t, 0, k), r = run_index(cJSON_GetObjectItemCaseSensitive(ch, "run"), t);
    if (c >= 0 && r >= 0) t->cases[c].pts[r].change = 1;
  }
}

int opf_trend_from_runs(cJSON *const *runs, const char *const *labels, int n, opf_trend *t, opf_err *err) {
  memset(t, 0, sizeof *t);
  t->runs = calloc((size_t)(n > 0 ? n : 1), sizeof *t->runs);
  if (!t->runs) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  t->n_runs = n;
  for (int r = 0; r < n; r++)
    if (!(t->runs[r] = strdup(labels[r]))) goto oom;
  int cap = 0, nix = 0;
  key_ix *ix = NULL;
  for (int r = 0; r < n; r++) {
    const cJSON *rec;
    int before = t->n_cases;
    cJSON_ArrayForEach(rec, cJSON_GetObjectItemCaseSensitive(runs[r], "results")) {
      char key[1200];
      opf_report_case_key(rec, key, sizeof key);
      int c = lookup(ix, nix, key);
      if (c < 0) c = find_case(t, before, key); /* added earlier in this run */
      if (c < 0 && (c = add_case(t, &cap, key, rec)) < 0) {
        free(ix);
        goto oom;
      }
      opf_trend_point *p = &t->cases[c].pts[r];
      p->present = rec_time(rec, &p->median, &p->lo, &p->hi);
    }
    /* Re-index after each run: the next run's lookups are a binary search. */
    key_ix *nx = realloc(ix, (size_t)(t->n_cases ? t->n_cases : 1) * sizeof *nx);
    if (!nx) {
      free(ix);
      goto oom;
    }
    ix = nx;
    nix = t->n_cases;
    for (int i = 0; i < nix; i++) ix[i] = (key_ix){t->cases[i].key, i};
    qsort(ix, (size_t)nix, sizeof *ix, cmp_key_ix);
  }
  free(ix);
  for (int r = 0; r < n; r++) mark_changes(t, cJSON_GetObjectItemCaseSensitive(runs[r], "changes"));
  return OPF_OK;
oom:
  opf_trend_free(t);
  return opf_err_set(err, OPF_ENOMEM, "out of memory");
}

static int cmp_reg(const void *a, const void *b) {
  double x = ((const opf_trend_reg *)a)->ratio, y = ((const opf_trend_reg *)b)->ratio;
  return (x < y) - (x > y);
}

int opf_trend_regressions(const opf_trend *t, opf_trend_reg *out, int max) {
  if (t->n_runs < 2 || max <= 0) return 0;
  opf_trend_reg *all = malloc((size_t)(t->n_cases ? t->n_cases : 1) * sizeof *all);
  if (!all) return 0;
  int n = 0;
  for (int c = 0; c < t->n_cases; c++) {
    const opf_trend_point *a = &t->cases[c].pts[t->n_runs - 2], *b = &t->cases[c].pts[t->n_runs - 1];
    if (!a->present || !b->present) continue;
    int ci = a->hi > 0 && b->hi > 0;
    all[n++] = (opf_trend_reg){c, b->median / a->median, ci && (b->lo > a->hi || b->hi < a->lo)};
  }
  qsort(all, (size_t)n, sizeof *all, cmp_reg);
  if (n > max) n = max;
  memcpy(out, all, (size_t)n * sizeof *out);
  free(all);
  return n;
}

/* The trend for the page: runs, and per case its points [median, lo, hi] or null, the runs
 * where a change point was detected, and the regressions of the last two runs. */
static cJSON *trend_json(const opf_trend *t) {
  cJSON *o = cJSON_CreateObject();
  cJSON *runs = cJSON_AddArrayToObject(o, "runs");
  for (int r = 0; r < t->n_runs; r++) cJSON_AddItemToArray(runs, cJSON_CreateString(t->runs[r]));
  cJSON *cases = cJSON_AddArrayToObject(o, "cases");
  for (int c = 0; c < t->n_cases; c++) {
    const opf_trend_case *tc = &t->cases[c];
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "key", tc->key);
    cJSON_AddStringToObject(k, "label", tc->label);
    cJSON *pts = cJSON_AddArrayToObject(k, "pts");
    cJSON *chg = NULL;
    for (int r = 0; r < t->n_runs; r++) {
      const opf_trend_point *p = &tc->pts[r];
      if (!p->present) {
        cJSON_AddItemToArray(pts, cJSON_CreateNull());
      } else {
        double v[3] = {r6(p->median), r6(p->lo), r6(p->hi)};
        cJSON_AddItemToArray(pts, cJSON_CreateDoubleArray(v, 3));
      }
      if (p->change) {
        if (!chg) chg = cJSON_AddArrayToObject(k, "changes");
        cJSON_AddItemToArray(chg, cJSON_CreateNumber(r));
      }
    }
    cJSON_AddItemToArray(cases, k);
  }
  opf_trend_reg *reg = malloc((size_t)(t->n_cases ? t->n_cases : 1) * sizeof *reg);
  int nr = reg ? opf_trend_regressions(t, reg, t->n_cases) : 0;
  cJSON *ra = cJSON_AddArrayToObject(o, "regressions");
  for (int i = 0; i < nr; i++) {
    cJSON *k = cJSON_CreateObject();
    cJSON_AddNumberToObject(k, "c", reg[i].c);
    cJSON_AddNumberToObject(k, "ratio", r6(reg[i].ratio));
    cJSON_AddBoolToObject(k, "sep", reg[i].separated);
    cJSON_AddItemToArray(ra, k);
  }
  free(reg);
  return o;
}

/* ---- the page ---- */
static int line_sep(const unsigned char *p) { /* U+2028 or U+2029 in UTF-8 */
  return p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9);
}

char *opf_json_for_script(const char *json) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)json; *p; p++) {
    if (line_sep(p)) p += 2, n += 6;
    else n += (*p == '<' || *p == '>' || *p == '&') ? 6 : 1;
  }
  char *out = malloc(n + 1), *q = out;
  if (!out) return NULL;
  for (const unsigned char *p = (const unsigned char *)json; *p; p++) {
    if (*p == '<' || *p == '>' || *p == '&') {
      q += sprintf(q, "\\u%04x", *p);
    } else if (line_sep(p)) {
      q += sprintf(q, "\\u%04x", p[2] == 0xa8 ? 0x2028 : 0x2029);
      p += 2;
    } else {
      *q++ = (char)*p;
    }
  }
  *q = '\0';
  return out;
}

static cJSON *sweep_json(cJSON *doc, const char *path) {
  cJSON *s = cJSON_Duplicate(doc, 1);
  if (s) cJSON_AddStringToObject(s, "file", path);
  return s;
}

static int build_data(const char *const *paths, int n, const opf_html_opts *o, cJSON **out, opf_err *err) {
  cJSON **runs = calloc((size_t)(n > 0 ? n : 1), sizeof *runs);
  char **labels = calloc((size_t)(n > 0 ? n : 1), sizeof *labels);
  const char **rpaths = calloc((size_t)(n > 0 ? n : 1), sizeof *rpaths);
  cJSON *data = cJSON_CreateObject(), *sweeps = NULL;
  int nruns = 0, rc = OPF_OK;
  if (!runs || !labels || !rpaths || !data) {
    rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
    goto out;
  }
  sweeps = cJSON_AddArrayToObject(data, "sweeps");
  for (int i = 0; i < n && !rc; i++) {
    cJSON *doc;
    int is_sweep;
    if ((rc = opf_report_load(paths[i], &doc, &is_sweep, err))) break;
    if (is_sweep) {
      cJSON_AddItemToArray(sweeps, sweep_json(doc, paths[i]));
      cJSON_Delete(doc);
      continue;
    }
    char lb[200];
    run_label(doc, paths[i], lb, sizeof lb);
    runs[nruns] = doc;
    rpaths[nruns] = paths[i];
    if (!(labels[nruns++] = strdup(lb))) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  }
  if (rc) goto out;
  cJSON_AddStringToObject(data, "title", o && o->title ? o->title : "opperf report");
  cJSON_AddStringToObject(data, "generator", "opperf report");
  if (nruns) {
    const cJSON *last = runs[nruns - 1];
    cJSON *run = cJSON_AddObjectToObject(data, "run");
    cJSON_AddStringToObject(run, "label", labels[nruns - 1]);
    cJSON_AddStringToObject(run, "file", rpaths[nruns - 1]);
    cJSON_AddItemToObject(run, "context", compact_context(cJSON_GetObjectItemCaseSensitive(last, "context")));
    cJSON *cases = cJSON_AddArrayToObject(run, "cases");
    strtab strs = {.arr = cJSON_AddArrayToObject(run, "strings")};
    cJSON *td_models = cJSON_AddObjectToObject(run, "td_models");
    const cJSON *rec;
    cJSON_ArrayForEach(rec, cJSON_GetObjectItemCaseSensitive(last, "results")) {
      cJSON *c = compact_case(rec, &strs, td_models);
      if (!c) {
        strtab_free(&strs);
        rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
        goto out;
      }
      char key[1200];
      opf_report_case_key(rec, key, sizeof key);
      cJSON_AddStringToObject(c, "key", key);
      cJSON_AddItemToArray(cases, c);
    }
    strtab_free(&strs);
  }
  if (o && o->trend) {
    cJSON_AddItemToObject(data, "trend", trend_json(o->trend));
  } else if (nruns > 1) {
    opf_trend t;
    if ((rc = opf_trend_from_runs(runs, (const char *const *)labels, nruns, &t, err))) goto out;
    cJSON_AddItemToObject(data, "trend", trend_json(&t));
    opf_trend_free(&t);
  }
  if (!nruns && !cJSON_GetArraySize(sweeps))
    rc = opf_err_set(err, OPF_EINVAL, "report: no input files");
out:
  for (int i = 0; i < nruns; i++) {
    cJSON_Delete(runs[i]);
    free(labels[i]);
  }
  free(runs);
  free(labels);
  free(rpaths);
  if (rc) cJSON_Delete(data);
  else *out = data;
  return rc;
}

/* The template's three markers, in order: the CSS, the data and the JavaScript go there. */
static const char *const markers[3] = {"/*@CSS@*/", "@DATA@", "/*@JS@*/"};

int opf_html_render(const char *const *paths, int n, const opf_html_opts *o, char **html, size_t *len,
                    opf_err *err) {
  *html = NULL;
  *len = 0;
  cJSON *data = NULL;
  int rc = build_data(paths, n, o, &data, err);
  if (rc) return rc;
  char *json = cJSON_PrintUnformatted(data);
  cJSON_Delete(data);
  char *safe = json ? opf_json_for_script(json) : NULL;
  cJSON_free(json);
  if (!safe) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  const char *fill[3] = {(const char *)opf_html_report_css, safe, (const char *)opf_html_report_js};
  char *buf = NULL;
  size_t blen = 0;
  FILE *f = open_memstream(&buf, &blen);
  if (!f) {
    free(safe);
    return opf_err_set(err, OPF_ENOMEM, "out of memory");
  }
  const char *p = (const char *)opf_html_report_html;
  for (int m = 0; m < 3; m++) {
    const char *at = strstr(p, markers[m]);
    if (!at) break; /* the template is ours: a test checks the markers */
    fwrite(p, 1, (size_t)(at - p), f);
    fputs(fill[m], f);
    p = at + strlen(markers[m]);
  }
  fputs(p, f);
  int bad = ferror(f);
  fclose(f);
  free(safe);
  if (bad || !buf) {
    free(buf);
    return opf_err_set(err, OPF_ENOMEM, "out of memory");
  }
  *html = buf;
  *len = blen;
  return OPF_OK;
}

int opf_html_report(const char *const *paths, int n, const opf_html_opts *o, const char *out_path,
                    opf_err *err) {
  char *html;
  size_t len;
  int rc = opf_html_render(paths, n, o, &html, &len, err);
  if (rc) return rc;
  rc = opf_write_atomic(out_path, html, len, err);
  free(html);
  return rc;
}

/* ---- the run JSON's machine block ---- */
cJSON *opf_machine_file_json(void) {
  char path[4096];
  opf_machine m;
  if (!opf_machine_path(path, sizeof path) || opf_machine_load(&m, path, NULL) != OPF_OK) return NULL;
  char *text = opf_read_text(path, NULL);
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (j && !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    j = NULL;
  }
  if (j) cJSON_AddStringToObject(j, "file", path);
  return j;
}

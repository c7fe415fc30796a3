/* store.c: the results store's back-end-independent part (see opperf/store.h): opening by URL,
 * the schema and its migrations, adding a run from a JSON report in one transaction, and the
 * read API (runs, per-case series, change points with the counters that moved). SQL here is
 * the common subset of SQLite and PostgreSQL; src/store_sqlite.c and src/store_pg.c run it. */
#include <cjson/cJSON.h>
#include <fnmatch.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"

void store_res_free(store_res *r) {
  if (!r || !r->cell) return;
  for (size_t i = 0; i < (size_t)r->nrows * (size_t)r->ncols; i++) free(r->cell[i]);
  free(r->cell);
  r->cell = NULL;
  r->nrows = r->ncols = 0;
}

static int run_sql(opf_store *st, const char *sql, opf_err *err) {
  return st->ops->exec(st, sql, 0, NULL, NULL, err);
}

static void rollback(opf_store *st) {
  opf_err ignored;
  run_sql(st, "ROLLBACK", &ignored);
}

/* ---- schema ------------------------------------------------------------------------------
 * Version 1: runs (context JSON and the columns queried by) and records (the record JSON with
 * its counters inside, the raw samples apart). Version 2: counters get their own table (one row
 * per counter and record: status, reason, value or NULL, raw values) so trends and change
 * points can read them; runs get the shard they ran. A migration is a list of statements plus,
 * for 1 -> 2, moving the counters out of every stored record. */
static const char *const v1_ddl[] = {
    "CREATE TABLE runs (id %ID%, started TEXT NOT NULL, machine TEXT NOT NULL, hostname TEXT,"
    " cpu_model TEXT, git_hash TEXT, build_type TEXT, tool_version TEXT, threads INTEGER,"
    " interrupted INTEGER NOT NULL DEFAULT 0, n_records INTEGER NOT NULL,"
    " n_failed INTEGER NOT NULL, context TEXT NOT NULL)",
    "CREATE INDEX runs_machine ON runs (machine, started)",
    "CREATE TABLE records (id %ID%, run_id %REF% NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " case_key TEXT NOT NULL, op TEXT NOT NULL, impl TEXT, dtype TEXT, pass TEXT, set_name TEXT,"
    " spec TEXT, status TEXT NOT NULL, median %REAL%, ci_lo %REAL%, ci_hi %REAL%,"
    " n_samples INTEGER, samples TEXT, record TEXT NOT NULL)",
    "CREATE INDEX records_case ON records (case_key, run_id)",
    "CREATE INDEX records_run ON records (run_id)",
    NULL};
static const char *const v2_ddl[] = {
    "ALTER TABLE runs ADD COLUMN shard TEXT",
    "CREATE TABLE counters (record_id %REF% NOT NULL REFERENCES records (id) ON DELETE CASCADE,"
    " pos INTEGER NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL, reason TEXT,"
    " per_call %REAL%, raw TEXT, PRIMARY KEY (record_id, pos))",
    NULL};

/* The statement with the back-end's spellings of %ID%, %REF% and %REAL%. */
static char *ddl_for(const opf_store *st, const char *sql) {
  size_t cap = strlen(sql) * 2 + 256, o = 0;
  char *b = malloc(cap);
  if (!b) return NULL;
  for (const char *p = sql; *p;) {
    const char *rep = NULL;
    size_t skip = 0;
    if (!strncmp(p, "%ID%", 4)) rep = st->ops->id_type, skip = 4;
    else if (!strncmp(p, "%REF%", 5)) rep = st->ops->ref_type, skip = 5;
    else if (!strncmp(p, "%REAL%", 6)) rep = st->ops->real_type, skip = 6;
    if (rep) {
      o += (size_t)snprintf(b + o, cap - o, "%s", rep);
      p += skip;
    } else {
      b[o++] = *p++;
    }
  }
  b[o] = '\0';
  return b;
}

static int run_ddl(opf_store *st, const char *const *ddl, opf_err *err) {
  for (int i = 0; ddl[i]; i++) {
    char *s = ddl_for(st, ddl[i]);
    if (!s) return opf_err_set(err, OPF_ENOMEM, "out of memory");
    int rc = run_sql(st, s, err);
    free(s);
    if (rc) return rc;
  }
  return OPF_OK;
}

static char *json_text(const cJSON *j) { return j ? cJSON_PrintUnformatted(j) : NULL; }

/* The counters of one record (an array of report counter objects) as rows of the counters
 * table: status and reason always, the value only when it counted (NULL otherwise). */
static int insert_counters(opf_store *st, const char *record_id, const cJSON *counters,
                           opf_err *err) {
  int pos = 0, rc = OPF_OK;
  const cJSON *c;
  cJSON_ArrayForEach(c, counters) {
    const cJSON *name = cJSON_GetObjectItem(c, "name"), *status = cJSON_GetObjectItem(c, "status"),
                *reason = cJSON_GetObjectItem(c, "reason"), *pc = cJSON_GetObjectItem(c, "per_call");
    if (!cJSON_IsString(name) || !cJSON_IsString(status))
      return opf_err_set(err, OPF_EINVAL, "a counter without a name or status");
    char spos[16], sval[32];
    snprintf(spos, sizeof spos, "%d", pos++);
    int has = cJSON_IsNumber(pc) && isfinite(pc->valuedouble);
    if (has) snprintf(sval, sizeof sval, "%.17g", pc->valuedouble);
    char *raw = json_text(cJSON_GetObjectItem(c, "raw"));
    const char *q[7] = {record_id, spos, name->valuestring, status->valuestring,
                        cJSON_IsString(reason) ? reason->valuestring : NULL, has ? sval : NULL, raw};
    rc = st->ops->exec(st,
                       "INSERT INTO counters (record_id, pos, name, status, reason, per_call, raw)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?)",
                       7, q, NULL, err);
    free(raw);
    if (rc) return rc;
  }
  return rc;
}

/* 1 -> 2: move the counters out of every record's JSON into the counters table. */
static int migrate_v2_data(opf_store *st, opf_err *err) {
  store_res r = {0};
  int rc = st->ops->exec(st, "SELECT id, record FROM records ORDER BY id", 0, NULL, &r, err);
  for (int i = 0; !rc && i < r.nrows; i++) {
    cJSON *rec = cJSON_Parse(store_cell(&r, i, 1) ? store_cell(&r, i, 1) : "");
    if (!rec) {
      rc = opf_err_set(err, OPF_EINVAL, "record %s: its stored JSON does not parse", store_cell(&r, i, 0));
      break;
    }
    cJSON *cs = cJSON_DetachItemFromObject(rec, "counters");
    rc = insert_counters(st, store_cell(&r, i, 0), cs, err);
    char *txt = rc ? NULL : json_text(rec);
    if (!rc && !txt) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
    const char *p[2] = {txt, store_cell(&r, i, 0)};
    if (!rc) rc = st->ops->exec(st, "UPDATE records SET record = ? WHERE id = ?", 2, p, NULL, err);
    free(txt);
    cJSON_Delete(cs);
    cJSON_Delete(rec);
  }
  store_res_free(&r);
  return rc;
}

static int set_version(opf_store *st, int v, opf_err *err) {
  char s[16];
  snprintf(s, sizeof s, "%d", v);
  const char *p[1] = {s};
  int rc = run_sql(st, "DELETE FROM schema_version", err);
  return rc ? rc : st->ops->exec(st, "INSERT INTO schema_version (version) VALUES (?)", 1, p, NULL, err);
}

static int read_version(opf_store *st, int *v, opf_err *err) {
  store_res r = {0};
  int rc = st->ops->exec(st, "SELECT MAX(version) FROM schema_version", 0, NULL, &r, err);
  *v = !rc && r.nrows && store_cell(&r, 0, 0) ? atoi(store_cell(&r, 0, 0)) : 0;
  store_res_free(&r);
  return rc;
}

/* Create or migrate to `target` in one transaction, serialised against other processes. A
 * store already at `target` is only read (readers never wait for a writer's lock). */
static int migrate(opf_store *st, int target, opf_err *err) {
  int v0;
  opf_err ignored;
  if (!read_version(st, &v0, &ignored) && v0 == target) return OPF_OK;
  int rc = run_sql(st, st->ops->begin_write, err);
  if (rc) return rc;
  if (st->ops->schema_lock) rc = run_sql(st, st->ops->schema_lock, err);
  if (!rc) rc = run_sql(st, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", err);
  int v = 0;
  if (!rc) rc = read_version(st, &v, err);
  if (!rc && v > OPF_STORE_VERSION)
    rc = opf_err_set(err, OPF_EINVAL, "store %s has schema version %d; this opperf knows up to %d",
                     st->where, v, OPF_STORE_VERSION);
  if (!rc && v == 0 && target >= 1) rc = run_ddl(st, v1_ddl, err), v = rc ? v : 1;
  if (!rc && v == 1 && target >= 2) {
    rc = run_ddl(st, v2_ddl, err);
    if (!rc) rc = migrate_v2_data(st, err);
    v = rc ? v : 2;
  }
  if (!rc) rc = set_version(st, v, err);
  if (!rc) rc = run_sql(st, "COMMIT", err);
  if (rc) rollback(st);
  return rc;
}

int store_open_version(opf_store **out, const char *url, int version, opf_err *err) {
  *out = NULL;
  opf_store *st = calloc(1, sizeof *st);
  if (!st) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  int rc;
  if (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11)) {
    rc = store_pg_open(st, url, err);
  } else {
    const char *path = !strncmp(url, "sqlite:", 7) ? url + 7 : url;
    if (!*path) rc = opf_err_set(err, OPF_EINVAL, "--store: empty file name");
    else rc = store_sqlite_open(st, path, version > 0, err);
  }
  if (!rc && version > 0) rc = migrate(st, version, err);
  if (rc) {
    if (st->ops) st->ops->close(st);
    free(st);
    return rc;
  }
  *out = st;
  return OPF_OK;
}

int opf_store_open(opf_store **st, const char *url, int create, opf_err *err) {
  if (!create) {
    /* an existing store: open without creating, then migrate whatever version it has */
    int rc = store_open_version(st, url, 0, err);
    if (rc) return rc;
    rc = migrate(*st, OPF_STORE_VERSION, err);
    if (rc) {
      opf_store_close(*st);
      *st = NULL;
    }
    return rc;
  }
  return store_open_version(st, url, OPF_STORE_VERSION, err);
}

void opf_store_close(opf_store *st) {
  if (!st) return;
  st->ops->close(st);
  free(st);
}

const char *opf_store_backend(const opf_store *st) { return st->ops->name; }

int opf_store_version(opf_store *st, int *version, opf_err *err) {
  return read_version(st, version, err);
}

int opf_store_check(opf_store *st, opf_err *err) { return st->ops->check(st, err); }

void opf_store_machine_key(const char *hostname, const char *cpu_model, int cpus, char *buf,
                           size_t n) {
  const char *env = getenv("OPPERF_MACHINE");
  if (env && *env) snprintf(buf, n, "%s", env);
  else snprintf(buf, n, "%s (%s, %d CPUs)", hostname, cpu_model, cpus);
}

/* ---- adding a run ------------------------------------------------------------------------ */
static const char *jstr(const cJSON *o, const char *path) {
  char part[64];
  const cJSON *cur = o;
  while (cur && *path) {
    size_t l = strcspn(path, ".");
    snprintf(part, sizeof part, "%.*s", (int)l, path);
    cur = cJSON_GetObjectItem(cur, part);
    path += l + (path[l] == '.');
  }
  return cJSON_IsString(cur) ? cur->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *name, double dflt) {
  const cJSON *v = cJSON_GetObjectItem(o, name);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static double jnum_at(const cJSON *a, int i) {
  const cJSON *v = cJSON_GetArrayItem(a, i);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void case_key(const cJSON *r, char *buf, size_t n) {
  snprintf(buf, n, "%s %s %s %s %s", jstr(r, "op") ? jstr(r, "op") : "?",
           jstr(r, "impl") && *jstr(r, "impl") ? jstr(r, "impl") : "native",
           jstr(r, "dtype") ? jstr(r, "dtype") : "?", jstr(r, "pass") ? jstr(r, "pass") : "?",
           jstr(r, "spec") ? jstr(r, "spec") : "");
}

static void num_text(char *buf, size_t n, int has, double v) {
  if (has && isfinite(v)) snprintf(buf, n, "%.17g", v);
  else buf[0] = '\0';
}

/* INSERT ... RETURNING id: the new row's id in *id (free with store_res_free). */
static int insert_returning(opf_store *st, const char *sql, int np, const char *const *p,
                            const char *what, store_res *id, opf_err *err) {
  int rc = st->ops->exec(st, sql, np, p, id, err);
  if (!rc && (id->nrows != 1 || !store_cell(id, 0, 0)))
    rc = opf_err_set(err, OPF_EIO, "the database returned no %s id", what);
  return rc;
}

static int insert_record(opf_store *st, const char *run_id, cJSON *r, opf_err *err) {
  char key[600];
  case_key(r, key, sizeof key);
  const char *op = jstr(r, "op"), *status = jstr(r, "status");
  if (!op || !status) return opf_err_set(err, OPF_EINVAL, "a result without op or status");
  cJSON *t = cJSON_GetObjectItem(r, "time");
  cJSON *raw = t ? cJSON_DetachItemFromObject(t, "raw") : NULL;
  cJSON *counters = cJSON_DetachItemFromObject(r, "counters");
  const cJSON *ci = t ? cJSON_GetObjectItem(t, "median_ci95") : NULL;
  char med[32], lo[32], hi[32], ns[16];
  num_text(med, sizeof med, t != NULL, jnum(t, "median", NAN));
  int has_ci = cJSON_IsArray(ci) && cJSON_GetArraySize(ci) == 2;
  num_text(lo, sizeof lo, has_ci, has_ci ? jnum_at(ci, 0) : 0);
  num_text(hi, sizeof hi, has_ci, has_ci ? jnum_at(ci, 1) : 0);
  snprintf(ns, sizeof ns, "%d", raw ? cJSON_GetArraySize(raw) : 0);
  char *samples = json_text(raw), *rec = json_text(r);
  const char *p[15] = {run_id, key, op, jstr(r, "impl"), jstr(r, "dtype"), jstr(r, "pass"),
                       jstr(r, "set"), jstr(r, "spec"), status, med[0] ? med : NULL,
                       lo[0] ? lo : NULL, hi[0] ? hi : NULL, ns, samples, rec};
  store_res id = {0};
  int rc = rec ? OPF_OK : opf_err_set(err, OPF_ENOMEM, "out of memory");
  if (!rc)
    rc = insert_returning(st,
                          "INSERT INTO records (run_id, case_key, op, impl, dtype, pass, set_name,"
                          " spec, status, median, ci_lo, ci_hi, n_samples, samples, record)"
                          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                          15, p, "record", &id, err);
  if (!rc && counters) rc = insert_counters(st, store_cell(&id, 0, 0), counters, err);
  store_res_free(&id);
  free(samples), free(rec);
  cJSON_Delete(raw), cJSON_Delete(counters);
  return rc;
}

int opf_store_add_report(opf_store *st, const char *report_json, const opf_store_add_opts *o,
                         long long *run_id, opf_err *err) {
  cJSON *doc = cJSON_Parse(report_json);
  if (!doc) return opf_err_set(err, OPF_EINVAL, "the report is not JSON");
  cJSON *ctx = cJSON_GetObjectItem(doc, "context"), *results = cJSON_GetObjectItem(doc, "results");
  const cJSON *ver = cJSON_GetObjectItem(doc, "schema_version");
  if (!cJSON_IsObject(ctx) || !cJSON_IsArray(results) || !cJSON_IsNumber(ver)) {
    cJSON_Delete(doc);
    return opf_err_set(err, OPF_EINVAL, "not an opperf JSON report (no schema_version, context or results)");
  }
  const cJSON *host = cJSON_GetObjectItem(ctx, "host"), *set = cJSON_GetObjectItem(ctx, "settings");
  char machine[256];
  if (o && o->machine && *o->machine) snprintf(machine, sizeof machine, "%s", o->machine);
  else opf_store_machine_key(jstr(ctx, "host.hostname") ? jstr(ctx, "host.hostname") : "?",
                             jstr(ctx, "host.cpu_model") ? jstr(ctx, "host.cpu_model") : "?",
                             (int)jnum(host, "cpus_online", 0), machine, sizeof machine);
  int n = cJSON_GetArraySize(results), failed = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, results) failed += !jstr(r, "status") || strcmp(jstr(r, "status"), "ok");
  char threads[16], nrec[16], nfail[16];
  snprintf(threads, sizeof threads, "%d", (int)jnum(set, "threads", 0));
  snprintf(nrec, sizeof nrec, "%d", n);
  snprintf(nfail, sizeof nfail, "%d", failed);
  char *ctx_text = json_text(ctx);
  const char *p[13] = {jstr(ctx, "timestamp") ? jstr(ctx, "timestamp") : "", machine,
                       jstr(ctx, "host.hostname"), jstr(ctx, "host.cpu_model"),
                       jstr(ctx, "tool.git_hash"), jstr(ctx, "tool.build_type"),
                       jstr(ctx, "tool.version"), threads,
                       cJSON_IsTrue(cJSON_GetObjectItem(ctx, "interrupted")) ? "1" : "0",
                       nrec, nfail, ctx_text, o && o->shard ? o->shard : NULL};
  store_res id = {0};
  int rc = ctx_text ? run_sql(st, st->ops->begin_write, err) : opf_err_set(err, OPF_ENOMEM, "out of memory");
  if (!rc)
    rc = insert_returning(st,
                          "INSERT INTO runs (started, machine, hostname, cpu_model, git_hash, build_type,"
                          " tool_version, threads, interrupted, n_records, n_failed, context, shard)"
                          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                          13, p, "run", &id, err);
  const char *stop = getenv(STORE_TEST_STOP_ENV);
  int k = 0;
  cJSON *rr;
  cJSON_ArrayForEach(rr, results) {
    if (rc) break;
    rc = insert_record(st, store_cell(&id, 0, 0), rr, err);
    if (stop && ++k == atoi(stop)) raise(SIGSTOP); /* test hook: kill -9 me here */
  }
  if (!rc) rc = run_sql(st, "COMMIT", err);
  else if (ctx_text) rollback(st);
  if (!rc && run_id) *run_id = strtoll(store_cell(&id, 0, 0), NULL, 10);
  store_res_free(&id);
  free(ctx_text);
  cJSON_Delete(doc);
  return rc;
}

/* ---- reading ----------------------------------------------------------------------------- */
static void copy(char *dst, size_t n, const char *src) { snprintf(dst, n, "%s", src ? src : ""); }
static double dbl(const char *s) { return s ? strtod(s, NULL) : 0; }

int opf_store_runs(opf_store *st, const char *machine, opf_store_run **runs, int *n, opf_err *err) {
  *runs = NULL;
  *n = 0;
  store_res r = {0};
  const char *p[1] = {machine};
  int rc = st->ops->exec(st,
                         machine ? "SELECT id, started, machine, hostname, cpu_model, git_hash,"
                                   " build_type, tool_version, shard, threads, n_records, n_failed,"
                                   " interrupted FROM runs WHERE machine = ? ORDER BY started, id"
                                 : "SELECT id, started, machine, hostname, cpu_model, git_hash,"
                                   " build_type, tool_version, shard, threads, n_records, n_failed,"
                                   " interrupted FROM runs ORDER BY started, id",
                         machine ? 1 : 0, p, &r, err);
  if (rc) return rc;
  *runs = calloc((size_t)r.nrows + 1, sizeof **runs);
  if (!*runs) {
    store_res_free(&r);
    return opf_err_set(err, OPF_ENOMEM, "out of memory");
  }
  for (int i = 0; i < r.nrows; i++) {
    opf_store_run *u = &(*runs)[i];
    u->id = strtoll(store_cell(&r, i, 0), NULL, 10);
    copy(u->started, sizeof u->started, store_cell(&r, i, 1));
    copy(u->machine, sizeof u->machine, store_cell(&r, i, 2));
    copy(u->hostname, sizeof u->hostname, store_cell(&r, i, 3));
    copy(u->cpu_model, sizeof u->cpu_model, store_cell(&r, i, 4));
    copy(u->git_hash, sizeof u->git_hash, store_cell(&r, i, 5));
    copy(u->build_type, sizeof u->build_type, store_cell(&r, i, 6));
    copy(u->tool_version, sizeof u->tool_version, store_cell(&r, i, 7));
    copy(u->shard, sizeof u->shard, store_cell(&r, i, 8));
    u->threads = (int)dbl(store_cell(&r, i, 9));
    u->n_records = (int)dbl(store_cell(&r, i, 10));
    u->n_failed = (int)dbl(store_cell(&r, i, 11));
    u->interrupted = (int)dbl(store_cell(&r, i, 12));
  }
  *n = r.nrows;
  store_res_free(&r);
  return OPF_OK;
}

void opf_store_series_free(opf_store_series *s, int n) {
  for (int i = 0; s && i < n; i++) {
    for (int k = 0; k < s[i].n; k++) free(s[i].p[k].counters);
    free(s[i].p);
  }
  free(s);
}

static int selected(const char *sel, const char *key, const char *op) {
  return !sel || !fnmatch(sel, key, 0) || !fnmatch(sel, op, 0) || !strcmp(sel, key);
}

typedef struct rec_ref {
  long long record_id;
  opf_store_point *p;
} rec_ref;

static int cmp_ref(const void *a, const void *b) {
  long long x = ((const rec_ref *)a)->record_id, y = ((const rec_ref *)b)->record_id;
  return (x > y) - (x < y);
}

/* A glob of '*' and '?' only as a LIKE pattern (escape '\\'), so the database narrows the rows
 * first (fnmatch still decides: SQLite's LIKE ignores case). 0 when the glob has classes. */
static int glob_to_like(const char *g, char *buf, size_t n) {
  size_t o = 0;
  for (; *g && o + 3 < n; g++) {
    if (*g == '[' || *g == '\\') return 0;
    if (*g == '*') buf[o++] = '%';
    else if (*g == '?') buf[o++] = '_';
    else {
      if (*g == '%' || *g == '_') buf[o++] = '\\';
      buf[o++] = *g;
    }
  }
  if (*g) return 0;
  buf[o] = '\0';
  return 1;
}

/* " WHERE ..." for the machine and the selector over records r and runs u, with its params. */
static void series_where(const char *selector, const char *machine, char *like, size_t nlike,
                         char *sql, size_t n, const char **p, int *np) {
  *np = 0;
  sql[0] = '\0';
  if (machine) {
    snprintf(sql, n, " WHERE u.machine = ?");
    p[(*np)++] = machine;
  }
  if (selector && glob_to_like(selector, like, nlike)) {
    size_t l = strlen(sql);
    snprintf(sql + l, n - l, "%s (r.case_key LIKE ? ESCAPE '\\' OR r.op LIKE ? ESCAPE '\\')",
             *np ? " AND" : " WHERE");
    p[(*np)++] = like;
    p[(*np)++] = like;
  }
}

int opf_store_series_load(opf_store *st, const char *selector, const char *machine,
                          int all_machines, opf_store_series **out, int *n_out, opf_err *err) {
  *out = NULL;
  *n_out = 0;
  char sql[1024], where[256], like[700];
  const char *p[3];
  int np;
  series_where(selector, machine, like, sizeof like, where, sizeof where, p, &np);
  snprintf(sql, sizeof sql,
           "SELECT r.id, r.run_id, u.started, u.git_hash, u.machine, r.case_key, r.op, r.status,"
           " r.median, r.ci_lo, r.ci_hi, r.n_samples FROM records r JOIN runs u ON u.id = r.run_id"
           "%s ORDER BY r.case_key, %su.started, u.id",
           where, all_machines ? "" : "u.machine, ");
  store_res r = {0}, c = {0};
  int rc = st->ops->exec(st, sql, np, p, &r, err);
  if (rc) return rc;
  opf_store_series *s = calloc((size_t)r.nrows + 1, sizeof *s);
  rec_ref *refs = calloc((size_t)r.nrows + 1, sizeof *refs);
  int ns = 0, nref = 0;
  if (!s || !refs) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  /* rows -> series: consecutive rows of one key (and machine) */
  for (int i = 0; !rc && i < r.nrows; i++) {
    const char *key = store_cell(&r, i, 5), *mach = store_cell(&r, i, 4);
    if (!key || !selected(selector, key, store_cell(&r, i, 6) ? store_cell(&r, i, 6) : "")) continue;
    opf_store_series *cur = ns ? &s[ns - 1] : NULL;
    if (!cur || strcmp(cur->key, key) || (!all_machines && strcmp(cur->machine, mach ? mach : ""))) {
      cur = &s[ns++];
      copy(cur->key, sizeof cur->key, key);
      copy(cur->machine, sizeof cur->machine, all_machines ? "(all machines)" : mach);
      /* points: at most the rows left */
      cur->p = calloc((size_t)(r.nrows - i), sizeof *cur->p);
      if (!cur->p) {
        rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
        break;
      }
    }
    opf_store_point *pt = &cur->p[cur->n++];
    pt->run_id = strtoll(store_cell(&r, i, 1), NULL, 10);
    copy(pt->started, sizeof pt->started, store_cell(&r, i, 2));
    copy(pt->git_hash, sizeof pt->git_hash, store_cell(&r, i, 3));
    copy(pt->status, sizeof pt->status, store_cell(&r, i, 7));
    pt->median = dbl(store_cell(&r, i, 8));
    pt->ci_lo = dbl(store_cell(&r, i, 9));
    pt->ci_hi = dbl(store_cell(&r, i, 10));
    pt->n_samples = (int)dbl(store_cell(&r, i, 11));
    refs[nref].record_id = strtoll(store_cell(&r, i, 0), NULL, 10);
    refs[nref++].p = pt;
  }
  store_res_free(&r);
  /* counters, matched to their points by record id */
  if (!rc && nref) {
    snprintf(sql, sizeof sql,
             "SELECT c.record_id, c.name, c.status, c.reason, c.per_call FROM counters c"
             " JOIN records r ON r.id = c.record_id JOIN runs u ON u.id = r.run_id%s"
             " ORDER BY c.record_id, c.pos",
             where);
    rc = st->ops->exec(st, sql, np, p, &c, err);
  }
  if (!rc && nref) {
    qsort(refs, (size_t)nref, sizeof *refs, cmp_ref);
    for (int i = 0; !rc && i < c.nrows;) {
      rec_ref want = {strtoll(store_cell(&c, i, 0), NULL, 10), NULL};
      int j = i;
      while (j < c.nrows && strtoll(store_cell(&c, j, 0), NULL, 10) == want.record_id) j++;
      rec_ref *hit = bsearch(&want, refs, (size_t)nref, sizeof *refs, cmp_ref);
      if (hit) {
        opf_store_point *pt = hit->p;
        pt->counters = calloc((size_t)(j - i), sizeof *pt->counters);
        if (!pt->counters) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
        for (int k = i; !rc && k < j; k++) {
          opf_store_counter *sc = &pt->counters[pt->n_counters++];
          copy(sc->name, sizeof sc->name, store_cell(&c, k, 1));
          copy(sc->status, sizeof sc->status, store_cell(&c, k, 2));
          copy(sc->reason, sizeof sc->reason, store_cell(&c, k, 3));
          sc->has_value = store_cell(&c, k, 4) != NULL;
          sc->per_call = dbl(store_cell(&c, k, 4));
        }
      }
      i = j;
    }
  }
  store_res_free(&c);
  free(refs);
  if (rc) {
    opf_store_series_free(s, ns);
    return rc;
  }
  *out = s;
  *n_out = ns;
  return OPF_OK;
}

/* ---- change points ----------------------------------------------------------------------- */
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of counter `name` over points [a, b) of pts; 0 when no point counted it. */
static int counter_median(opf_store_point *const *pts, int a, int b, const char *name, double *m) {
  double *v = malloc(sizeof *v * (size_t)(b - a + 1));
  int k = 0;
  for (int i = a; v && i < b; i++)
    for (int c = 0; c < pts[i]->n_counters; c++)
      if (pts[i]->counters[c].has_value && !strcmp(pts[i]->counters[c].name, name)) {
        v[k++] = pts[i]->counters[c].per_call;
        break;
      }
  if (k) {
    qsort(v, (size_t)k, sizeof *v, cmp_d);
    *m = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
  }
  free(v);
  return k > 0;
}

static void moved_counters(opf_store_change *ch, opf_store_point *const *pts, int a, int idx, int b,
                           double min_change) {
  const opf_store_point *at = pts[idx];
  for (int c = 0; c < at->n_counters; c++) {
    const char *name = at->counters[c].name;
    double m0, m1;
    if (!at->counters[c].has_value || !counter_median(pts, a, idx, name, &m0) ||
        !counter_median(pts, idx, b, name, &m1) || !(fabs(m0) > 0))
      continue;
    double d = m1 / m0 - 1;
    if (!(fabs(d) >= min_change)) continue;
    /* keep the largest moves, in order */
    int pos = ch->n_moved;
    while (pos > 0 && fabs(ch->moved[pos - 1].change) < fabs(d)) pos--;
    if (pos >= OPF_STORE_MAX_MOVED) continue;
    int last = ch->n_moved < OPF_STORE_MAX_MOVED ? ch->n_moved : OPF_STORE_MAX_MOVED - 1;
    memmove(&ch->moved[pos + 1], &ch->moved[pos], sizeof ch->moved[0] * (size_t)(last - pos));
    copy(ch->moved[pos].name, sizeof ch->moved[pos].name, name);
    ch->moved[pos].change = d;
    if (ch->n_moved < OPF_STORE_MAX_MOVED) ch->n_moved++;
  }
}

int opf_store_series_changes(const opf_store_series *s, const opf_cp_opts *o,
                             opf_store_change **out, int *n_out, opf_err *err) {
  *out = NULL;
  *n_out = 0;
  double min_change = o && o->min_change >= 0 ? o->min_change : 0.05;
  int m = s->n, k = 0, ncp = 0, rc = OPF_OK;
  opf_store_point **pts = malloc(sizeof *pts * (size_t)(m + 1));
  double *x = malloc(sizeof *x * (size_t)(3 * m + 1));
  opf_cp_change *cp = malloc(sizeof *cp * (size_t)(m + 1));
  if (!pts || !x || !cp) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  for (int j = 0; !rc && j < m; j++)
    if (!strcmp(s->p[j].status, "ok") && s->p[j].median > 0) pts[k++] = &s->p[j];
  for (int j = 0; !rc && j < k; j++) {
    x[j] = pts[j]->median;
    x[k + j] = pts[j]->ci_lo;
    x[2 * k + j] = pts[j]->ci_hi;
  }
  if (!rc) rc = opf_changepoints(x, x + k, x + 2 * k, k, o, cp, m, &ncp, err);
  opf_store_change *ch = !rc && ncp ? calloc((size_t)ncp, sizeof *ch) : NULL;
  if (!rc && ncp && !ch) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  for (int j = 0; !rc && j < ncp; j++) {
    opf_store_change *c = &ch[j];
    const opf_store_point *at = pts[cp[j].index];
    copy(c->key, sizeof c->key, s->key);
    copy(c->machine, sizeof c->machine, s->machine);
    c->run_id = at->run_id;
    copy(c->started, sizeof c->started, at->started);
    copy(c->git_hash, sizeof c->git_hash, at->git_hash);
    c->index = cp[j].index;
    c->n_points = k;
    c->before = cp[j].before;
    c->after = cp[j].after;
    c->change = cp[j].change;
    int a = j ? cp[j - 1].index : 0, b = j + 1 < ncp ? cp[j + 1].index : k;
    moved_counters(c, pts, a, cp[j].index, b, min_change);
  }
  free(pts), free(x), free(cp);
  if (rc) {
    free(ch);
    return rc;
  }
  *out = ch;
  *n_out = ncp;
  return OPF_OK;
}

int opf_store_changes(opf_store *st, const char *selector, const char *machine, int all_machines,
                      const opf_cp_opts *o, opf_store_change **out, int *n_out, opf_err *err) {
  *out = NULL;
  *n_out = 0;
  opf_store_series *s;
  int ns, rc = opf_store_series_load(st, selector, machine, all_machines, &s, &ns, err), n = 0;
  if (rc) return rc;
  opf_store_change *all = NULL;
  for (int i = 0; !rc && i < ns; i++) {
    opf_store_change *ch;
    int nc;
    rc = opf_store_series_changes(&s[i], o, &ch, &nc, err);
    opf_store_change *g = !rc && nc ? realloc(all, sizeof *all * (size_t)(n + nc)) : NULL;
    if (!rc && nc && !g) {
      rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
    } else if (!rc && nc) {
      all = g;
      memcpy(all + n, ch, sizeof *ch * (size_t)nc);
      n += nc;
    }
    free(ch);
  }
  opf_store_series_free(s, ns);
  if (rc) {
    free(all);
    return rc;
  }
  *out = all;
  *n_out = n;
  return OPF_OK;
}

/* store_pg.c: the PostgreSQL back-end of the results store (src/store_impl.h), through libpq:
 * one server for a fleet of machines and the shards of a suite. The same schema and SQL as
 * SQLite; '?' placeholders become $1, $2, ...; schema creation and migration are serialised
 * with a transaction-scoped advisory lock. Built only when libpq is found (OPPERF_HAVE_LIBPQ);
 * otherwise opening a postgresql:// store says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"

#ifdef OPPERF_HAVE_LIBPQ
#include <libpq-fe.h>

/* "?" -> "$n" (our SQL has no '?' inside literals) */
static char *pg_sql(const char *sql) {
  size_t n = strlen(sql), q = 0;
  for (size_t i = 0; i < n; i++) q += sql[i] == '?';
  char *b = malloc(n + q * 6 + 1), *o = b;
  if (!b) return NULL;
  int k = 0;
  for (size_t i = 0; i < n; i++) {
    if (sql[i] == '?') o += sprintf(o, "$%d", ++k);
    else *o++ = sql[i];
  }
  *o = '\0';
  return b;
}

/* libpq's messages end in a newline (sometimes several lines): keep the first line. */
static int pg_fail(opf_store *st, const char *msg, opf_err *err) {
  char line[400];
  snprintf(line, sizeof line, "%s", msg ? msg : "unknown error");
  line[strcspn(line, "\n")] = '\0';
  return opf_err_set(err, OPF_EIO, "store %s: %s", st->where, line);
}

static int pg_exec(opf_store *st, const char *sql, int np, const char *const *params,
                   store_res *res, opf_err *err) {
  char *q = pg_sql(sql);
  if (!q) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  PGresult *r = PQexecParams(st->db, q, np, NULL, params, NULL, NULL, 0);
  free(q);
  ExecStatusType s = PQresultStatus(r);
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
    int e = pg_fail(st, PQresultErrorMessage(r), err);
    PQclear(r);
    return e;
  }
  if (res) {
    memset(res, 0, sizeof *res);
    res->nrows = PQntuples(r);
    res->ncols = PQnfields(r);
    res->cell = calloc((size_t)res->nrows * (size_t)res->ncols + 1, sizeof *res->cell);
    if (!res->cell) {
      PQclear(r);
      return opf_err_set(err, OPF_ENOMEM, "out of memory");
    }
    for (int i = 0; i < res->nrows; i++)
      for (int c = 0; c < res->ncols; c++)
        if (!PQgetisnull(r, i, c)) res->cell[(size_t)i * (size_t)res->ncols + (size_t)c] = strdup(PQgetvalue(r, i, c));
  }
  PQclear(r);
  return OPF_OK;
}

static int pg_check(opf_store *st, opf_err *err) {
  store_res r = {0};
  int rc = pg_exec(st,
                   "SELECT (SELECT COUNT(*) FROM records x LEFT JOIN runs u ON u.id = x.run_id"
                   " WHERE u.id IS NULL) + (SELECT COUNT(*) FROM counters c LEFT JOIN records x"
                   " ON x.id = c.record_id WHERE x.id IS NULL)",
                   0, NULL, &r, err);
  if (!rc && r.nrows == 1 && store_cell(&r, 0, 0) && strcmp(store_cell(&r, 0, 0), "0"))
    rc = opf_err_set(err, OPF_EIO, "store %s: %s rows refer to missing rows", st->where, store_cell(&r, 0, 0));
  store_res_free(&r);
  return rc;
}

static void pg_close(opf_store *st) {
  PQfinish(st->db);
  st->db = NULL;
}

static const store_ops pg_ops = {
    .name = "postgresql",
    .id_type = "BIGSERIAL PRIMARY KEY",
    .ref_type = "BIGINT",
    .real_type = "DOUBLE PRECISION",
    .begin_write = "BEGIN",
    .exec = pg_exec,
    .schema_lock = "SELECT pg_advisory_xact_lock(7353857251)", /* any constant: opperf's schema */
    .check = pg_check,
    .close = pg_close,
};

int store_pg_open(opf_store *st, const char *url, opf_err *err) {
  /* for messages: the URL without a password (user:password@) */
  const char *at = strchr(url, '@'), *scheme = strstr(url, "://");
  if (at && scheme && at > scheme) snprintf(st->where, sizeof st->where, "%.*s%s", (int)(scheme + 3 - url), url, at + 1);
  else snprintf(st->where, sizeof st->where, "%s", url);
  st->where[strcspn(st->where, "?")] = '\0'; /* parameters may hold password=... */
  PGconn *c = PQconnectdb(url);
  if (!c || PQstatus(c) != CONNECTION_OK) {
    int e = pg_fail(st, c ? PQerrorMessage(c) : "out of memory", err);
    PQfinish(c);
    return e;
  }
  st->db = c;
  st->ops = &pg_ops;
  return pg_exec(st, "SET client_min_messages = warning", 0, NULL, NULL, err);
}

#else

int store_pg_open(opf_store *st, const char *url, opf_err *err) {
  (void)st;
  (void)url;
  return opf_err_set(err, OPF_EINVAL, "this opperf was built without PostgreSQL (libpq): "
                                      "install libpq-dev and rebuild, or use an SQLite file");
}

#endif

/* store_sqlite.c: the SQLite back-end of the results store (src/store_impl.h): one file, no
 * server. Write-ahead logging so readers never block the writer, a busy timeout so concurrent
 * writers wait for each other's transaction (one per run) instead of failing, foreign keys on.
 * A writer killed mid-transaction leaves its changes in the WAL uncommitted: the next opener
 * rolls them back, so the file stays consistent and only that run is lost. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store_impl.h"

#define BUSY_TIMEOUT_MS 120000 /* a writer waits this long for another's run to commit */

static int sq_fail(opf_store *st, int code, opf_err *err) {
  return opf_err_set(err, code == SQLITE_NOTADB ? OPF_EINVAL : OPF_EIO, "store %s: %s", st->where,
                     sqlite3_errmsg(st->db));
}

static int sq_exec(opf_store *st, const char *sql, int np, const char *const *params,
                   store_res *res, opf_err *err) {
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
  if (rc != SQLITE_OK) return sq_fail(st, rc, err);
  for (int i = 0; i < np; i++) {
    rc = params[i] ? sqlite3_bind_text(s, i + 1, params[i], -1, SQLITE_STATIC)
                   : sqlite3_bind_null(s, i + 1);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(s);
      return sq_fail(st, rc, err);
    }
  }
  int ncols = sqlite3_column_count(s), cap = 0, out = OPF_OK;
  if (res) memset(res, 0, sizeof *res), res->ncols = ncols;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (!res) continue;
    if (res->nrows == cap) {
      cap = cap ? 2 * cap : 16;
      char **g = realloc(res->cell, sizeof *g * (size_t)cap * (size_t)ncols);
      if (!g) {
        out = opf_err_set(err, OPF_ENOMEM, "out of memory");
        break;
      }
      res->cell = g;
    }
    for (int c = 0; c < ncols; c++) {
      const unsigned char *t = sqlite3_column_text(s, c);
      char *v = t ? strdup((const char *)t) : NULL;
      res->cell[(size_t)res->nrows * (size_t)ncols + (size_t)c] = v;
    }
    res->nrows++;
  }
  if (!out && rc != SQLITE_DONE) out = sq_fail(st, rc, err);
  sqlite3_finalize(s);
  if (out && res) store_res_free(res);
  return out;
}

static int sq_check(opf_store *st, opf_err *err) {
  store_res r = {0};
  int rc = sq_exec(st, "PRAGMA integrity_check", 0, NULL, &r, err);
  if (!rc && (r.nrows != 1 || !store_cell(&r, 0, 0) || strcmp(store_cell(&r, 0, 0), "ok")))
    rc = opf_err_set(err, OPF_EIO, "store %s is damaged: %s", st->where,
                     r.nrows && store_cell(&r, 0, 0) ? store_cell(&r, 0, 0) : "?");
  store_res_free(&r);
  if (!rc) rc = sq_exec(st, "PRAGMA foreign_key_check", 0, NULL, &r, err);
  if (!rc && r.nrows)
    rc = opf_err_set(err, OPF_EIO, "store %s: %d rows refer to missing rows (table %s)", st->where,
                     r.nrows, store_cell(&r, 0, 0) ? store_cell(&r, 0, 0) : "?");
  store_res_free(&r);
  return rc;
}

static void sq_close(opf_store *st) {
  sqlite3_close(st->db);
  st->db = NULL;
}

static const store_ops sqlite_ops = {
    .name = "sqlite",
    .id_type = "INTEGER PRIMARY KEY",
    .ref_type = "INTEGER",
    .real_type = "REAL",
    .begin_write = "BEGIN IMMEDIATE",
    .exec = sq_exec,
    .schema_lock = NULL,
    .check = sq_check,
    .close = sq_close,
};

int store_sqlite_open(opf_store *st, const char *path, int create, opf_err *err) {
  snprintf(st->where, sizeof st->where, "%s", path);
  struct stat sb;
  if (!create && stat(path, &sb)) return opf_err_set(err, OPF_EINVAL, "no store %s (%s)", path, strerror(errno));
  if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) return opf_err_set(err, OPF_EINVAL, "store %s is a directory", path);
  if (create && stat(path, &sb)) { /* a new file: its directory must exist */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    if (slash && dir[0] && stat(dir, &sb))
      return opf_err_set(err, OPF_EINVAL, "cannot create store %s: %s: %s", path, dir, strerror(errno));
  }
  sqlite3 *db = NULL;
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path, &db, flags, NULL);
  if (rc != SQLITE_OK) {
    int e = opf_err_set(err, OPF_EIO, "cannot open store %s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return e;
  }
  st->db = db;
  st->ops = &sqlite_ops;
  sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
  /* WAL: readers and one writer at a time; NORMAL sync is durable against a killed process
   * (the case here), not against power loss within the last commit. */
  store_res r = {0};
  rc = sq_exec(st, "PRAGMA journal_mode=WAL", 0, NULL, &r, err);
  store_res_free(&r);
  if (!rc) rc = sq_exec(st, "PRAGMA synchronous=NORMAL", 0, NULL, NULL, err);
  if (!rc) rc = sq_exec(st, "PRAGMA foreign_keys=ON", 0, NULL, NULL, err);
  return rc; /* "store F: file is not a database" */
}

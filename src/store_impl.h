/* store_impl.h: what the results store (src/store.c) needs of a database back-end
 * (src/store_sqlite.c, src/store_pg.c): run one SQL statement with text parameters ('?'
 * placeholders, NULL for SQL NULL) and get text rows back (NULL for SQL NULL), plus the few
 * spellings that differ. Private to the library and its tests. */
#ifndef OPPERF_STORE_IMPL_H
#define OPPERF_STORE_IMPL_H

#include "opperf/store.h"

typedef struct store_res {
  int nrows, ncols;
  char **cell; /* row-major; NULL for SQL NULL */
} store_res;

static inline const char *store_cell(const store_res *r, int row, int col) {
  return r->cell[(size_t)row * (size_t)r->ncols + (size_t)col];
}
void store_res_free(store_res *r);

typedef struct store_ops {
  const char *name;        /* "sqlite", "postgresql" */
  const char *id_type;     /* an auto-increment 64-bit primary key */
  const char *ref_type;    /* a column referencing one */
  const char *real_type;   /* a double */
  const char *begin_write; /* start a write transaction (SQLite takes the write lock at once) */
  /* One statement; res (may be NULL) gets the rows. OPF_EIO with the database's message. */
  int (*exec)(opf_store *st, const char *sql, int np, const char *const *params, store_res *res,
              opf_err *err);
  /* Inside the schema transaction: serialise concurrent creators/migrators (NULL: begin_write
   * already does). */
  const char *schema_lock;
  int (*check)(opf_store *st, opf_err *err);
  void (*close)(opf_store *st);
} store_ops;

struct opf_store {
  const store_ops *ops;
  void *db;
  char where[256]; /* the file or server, for messages (no password) */
};

int store_sqlite_open(opf_store *st, const char *path, int create, opf_err *err);
int store_pg_open(opf_store *st, const char *url, opf_err *err);

/* Tests: open (creating) and migrate only up to schema version `version` (a v1 file to migrate). */
int store_open_version(opf_store **st, const char *url, int version, opf_err *err);

/* Test hook: $OPPERF_STORE_TEST_STOP_AFTER=N stops the writing process (SIGSTOP) after it
 * inserted N records of a run, inside the run's transaction, so a test can kill -9 it there. */
#define STORE_TEST_STOP_ENV "OPPERF_STORE_TEST_STOP_AFTER"

#endif

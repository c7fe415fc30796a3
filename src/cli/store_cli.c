/* store_cli.c (CLI): the `opperf run --store/--shard` glue (see store_cli.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opperf/store.h"
#include "store_cli.h"

void cli_store_arg(cli_store *s, int which, const char *arg) {
  if (which == 0) s->url = arg;
  else if (which == 1) s->shard_opt = arg;
  else s->shards = arg;
}

static void case_key(const opf_case *c, char *buf, size_t n) {
  char spec[512];
  snprintf(buf, n, "%s %s %s %s", c->op->name, opf_impl_name(c->impl), opf_dtype_name(c->dtype),
           opf_case_spec_str(c, spec, sizeof spec));
}

int cli_store_owns(const cli_store *s, const opf_case *c) {
  if (s->shard.count <= 0) return 1;
  char key[700];
  case_key(c, key, sizeof key);
  return opf_shard_owns(&s->shard, key);
}

int cli_store_shard(cli_store *s) {
  opf_err e;
  const char *total = s->shards ? s->shards : getenv("OPPERF_SHARDS");
  if (opf_shard_resolve(s->shard_opt, getenv("GTEST_SHARD_INDEX"), getenv("GTEST_TOTAL_SHARDS"),
                        getenv("JOB_COMPLETION_INDEX"), total, &s->shard, &e))
    return cli_usage_error("%s", e.msg);
  return 0;
}

int cli_store_setup(cli_store *s) {
  opf_err e;
  if (!s->url) return 0;
  opf_store *st;
  if (opf_store_open(&st, s->url, 1, &e)) return cli_usage_error("%s", e.msg);
  opf_store_close(st);
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/opperf-store-XXXXXX.json", dir && *dir ? dir : "/tmp");
  int fd = mkstemps(path, 5);
  if (fd < 0) return cli_usage_error("--store: cannot create a temporary report in %s: %s", path, strerror(errno));
  close(fd);
  snprintf(s->json_fmt, sizeof s->json_fmt, "json=%s", path);
  return 0;
}

char *cli_read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t r = fread(buf + len, 1, cap - len - 1, f);
    len += r;
    if (len < cap - 1) break;
    char *g = realloc(buf, cap *= 2);
    if (!g) free(buf);
    buf = g;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    errno = bad ? EIO : ENOMEM;
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

int cli_store_finish(cli_store *s, int ok) {
  if (!s->json_fmt[0]) return 0;
  const char *path = s->json_fmt + 5;
  if (!ok) { /* the run failed before its report: nothing to store */
    unlink(path);
    return 0;
  }
  char *text = cli_read_text(path);
  if (!text) return cli_usage_error("--store: cannot read the run's report %s: %s", path, strerror(errno));
  opf_err e;
  opf_store *st;
  char shard[32] = "";
  if (s->shard.count > 0) snprintf(shard, sizeof shard, "%d/%d", s->shard.index, s->shard.count);
  opf_store_add_opts o = {.shard = shard[0] ? shard : NULL, .machine = NULL};
  long long id = 0;
  int rc = opf_store_open(&st, s->url, 1, &e);
  if (!rc) {
    rc = opf_store_add_report(st, text, &o, &id, &e);
    if (!rc) fprintf(stderr, "opperf: stored as run %lld (%s store)\n", id, opf_store_backend(st));
    opf_store_close(st);
  }
  free(text);
  if (rc)
    return cli_usage_error("%s; the run's report is kept in %s (add it with: opperf history --store "
                           "URL --import %s)", e.msg, path, path);
  unlink(path);
  return 0;
}

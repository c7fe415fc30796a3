/* shard.c: shard selection by case key and the merging of shard reports (see opperf/shard.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/shard.h"

static int parse_int(const char *s, long *v) {
  char *end;
  if (!s || !*s) return 0;
  *v = strtol(s, &end, 10);
  return *end == '\0' && s[0] != '-' && s[0] != '+' && s[0] != ' ';
}

int opf_shard_parse(const char *s, opf_shard *sh, opf_err *err) {
  char k[32], n[32];
  const char *slash = strchr(s, '/');
  long a, b;
  if (!slash || (size_t)(slash - s) >= sizeof k || strlen(slash + 1) >= sizeof n)
    return opf_err_set(err, OPF_EINVAL, "--shard '%s': expected K/N, e.g. 0/4 (K counts from 0)", s);
  snprintf(k, sizeof k, "%.*s", (int)(slash - s), s);
  snprintf(n, sizeof n, "%s", slash + 1);
  if (!parse_int(k, &a) || !parse_int(n, &b) || b < 1 || b > 100000 || a >= b)
    return opf_err_set(err, OPF_EINVAL, "--shard '%s': expected K/N with 0 <= K < N <= 100000", s);
  sh->index = (int)a;
  sh->count = (int)b;
  return OPF_OK;
}

static int from_pair(const char *what_i, const char *i, const char *what_n, const char *n,
                     opf_shard *sh, opf_err *err) {
  long a, b;
  if (!parse_int(n, &b) || b < 1 || b > 100000)
    return opf_err_set(err, OPF_EINVAL, "%s='%s': expected a shard count from 1 to 100000", what_n, n);
  if (!parse_int(i, &a) || a >= b)
    return opf_err_set(err, OPF_EINVAL, "%s='%s': expected a shard index from 0 to %ld", what_i, i ? i : "", b - 1);
  sh->index = (int)a;
  sh->count = (int)b;
  return OPF_OK;
}

int opf_shard_resolve(const char *opt, const char *gtest_index, const char *gtest_total,
                      const char *job_index, const char *total, opf_shard *sh, opf_err *err) {
  sh->index = sh->count = 0;
  if (opt) return opf_shard_parse(opt, sh, err);
  if (gtest_index && *gtest_index && gtest_total && *gtest_total)
    return from_pair("GTEST_SHARD_INDEX", gtest_index, "GTEST_TOTAL_SHARDS", gtest_total, sh, err);
  if ((gtest_index && *gtest_index) != (gtest_total && *gtest_total))
    return opf_err_set(err, OPF_EINVAL, "GTEST_SHARD_INDEX and GTEST_TOTAL_SHARDS must be set together");
  if (total && *total) {
    if (!job_index || !*job_index)
      return opf_err_set(err, OPF_EINVAL, "a shard count (--shards or OPPERF_SHARDS) needs a shard "
                                          "index: --shard K/N or JOB_COMPLETION_INDEX");
    return from_pair("JOB_COMPLETION_INDEX", job_index, "the shard count", total, sh, err);
  }
  return OPF_OK;
}

uint64_t opf_shard_hash(const char *key) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = (h ^ *p) * 1099511628211ULL;
  return h;
}

int opf_shard_owns(const opf_shard *sh, const char *case_key) {
  return sh->count <= 0 || opf_shard_hash(case_key) % (uint64_t)sh->count == (uint64_t)sh->index;
}

/* ---- merge ------------------------------------------------------------------------------- */
static const cJSON *at(const cJSON *o, const char *path) {
  char part[64];
  while (o && *path) {
    size_t l = strcspn(path, ".");
    snprintf(part, sizeof part, "%.*s", (int)l, path);
    o = cJSON_GetObjectItem(o, part);
    path += l + (path[l] == '.');
  }
  return o;
}

/* The counters requested: names in order (statuses may differ between hosts). */
static int same_counters(const cJSON *a, const cJSON *b) {
  if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return 0;
  for (int i = 0; i < cJSON_GetArraySize(a); i++)
    if (!cJSON_Compare(cJSON_GetObjectItem(cJSON_GetArrayItem(a, i), "name"),
                       cJSON_GetObjectItem(cJSON_GetArrayItem(b, i), "name"), 1))
      return 0;
  return 1;
}

static void rkey(const cJSON *r, char *buf, size_t n) {
  const char *f[5] = {"op", "impl", "dtype", "pass", "spec"};
  size_t o = 0;
  for (int i = 0; i < 5 && o < n; i++) {
    const cJSON *v = cJSON_GetObjectItem(r, f[i]);
    o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? " " : "", cJSON_IsString(v) ? v->valuestring : "");
  }
}

typedef struct seen {
  char key[600];
  int file;
} seen;

static int cmp_seen(const void *a, const void *b) {
  return strcmp(((const seen *)a)->key, ((const seen *)b)->key);
}

int opf_reports_merge(const char *const *texts, const char *const *names, int n, char **out,
                      opf_err *err) {
  *out = NULL;
  if (n < 1) return opf_err_set(err, OPF_EINVAL, "merge: no reports");
  static const char *must_match[] = {"tool.version", "tool.git_hash", "tool.build_type",
                                     "tool.compiler", "tool.cflags", "host.cpu_model",
                                     "host.cpus_online", "settings", "blas.core", "blas.library",
                                     "omp_threads", "environment", NULL};
  cJSON **doc = calloc((size_t)n, sizeof *doc);
  if (!doc) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  int rc = OPF_OK, total = 0;
  for (int i = 0; i < n && !rc; i++) {
    doc[i] = cJSON_Parse(texts[i]);
    const cJSON *ctx = at(doc[i], "context");
    if (!doc[i] || !cJSON_IsObject(ctx) || !cJSON_IsArray(at(doc[i], "results")) ||
        !cJSON_IsNumber(at(doc[i], "schema_version"))) {
      rc = opf_err_set(err, OPF_EINVAL, "merge: %s is not an opperf JSON report", names[i]);
      break;
    }
    total += cJSON_GetArraySize(at(doc[i], "results"));
    if (!i) continue;
    const cJSON *c0 = at(doc[0], "context");
    if (!cJSON_Compare(at(doc[0], "schema_version"), at(doc[i], "schema_version"), 1))
      rc = opf_err_set(err, OPF_EINVAL, "merge: %s and %s have different report schema versions", names[0], names[i]);
    for (int k = 0; !rc && must_match[k]; k++) {
      const cJSON *a = at(c0, must_match[k]), *b = at(ctx, must_match[k]);
      if ((a || b) && !cJSON_Compare(a, b, 1)) {
        char *sa = a ? cJSON_PrintUnformatted(a) : NULL, *sb = b ? cJSON_PrintUnformatted(b) : NULL;
        rc = opf_err_set(err, OPF_EINVAL, "merge: %s and %s differ in context.%s (%.60s vs %.60s): not shards of one run",
                         names[0], names[i], must_match[k], sa ? sa : "absent", sb ? sb : "absent");
        cJSON_free(sa), cJSON_free(sb);
      }
    }
    if (!rc && !same_counters(at(c0, "perf.counters"), at(ctx, "perf.counters")))
      rc = opf_err_set(err, OPF_EINVAL, "merge: %s and %s asked for different counters: not shards of one run",
                       names[0], names[i]);
  }
  /* a case in two shards: overlapping shards or the same shard twice */
  seen *keys = rc ? NULL : calloc((size_t)total + 1, sizeof *keys);
  if (!rc && !keys) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  int nk = 0;
  for (int i = 0; i < n && !rc; i++) {
    const cJSON *r;
    cJSON_ArrayForEach(r, at(doc[i], "results")) {
      rkey(r, keys[nk].key, sizeof keys[nk].key);
      keys[nk++].file = i;
    }
  }
  if (!rc) qsort(keys, (size_t)nk, sizeof *keys, cmp_seen);
  for (int i = 1; !rc && i < nk; i++)
    if (!strcmp(keys[i].key, keys[i - 1].key))
      rc = opf_err_set(err, OPF_EINVAL, "merge: case '%.200s' is in %s and in %s: overlapping shards",
                       keys[i].key, names[keys[i - 1].file], names[keys[i].file]);
  free(keys);
  cJSON *root = NULL;
  if (!rc) {
    root = doc[0];
    doc[0] = NULL;
    cJSON *ctx = cJSON_GetObjectItem(root, "context"), *res = cJSON_GetObjectItem(root, "results");
    cJSON *shards = cJSON_CreateArray();
    int interrupted = 0;
    const char *earliest = NULL;
    for (int i = 0; i < n; i++) {
      cJSON *d = i ? doc[i] : root, *c = cJSON_GetObjectItem(d, "context");
      const cJSON *ts = at(c, "timestamp");
      if (cJSON_IsString(ts) && (!earliest || strcmp(ts->valuestring, earliest) < 0)) earliest = ts->valuestring;
      interrupted |= cJSON_IsTrue(at(c, "interrupted"));
      cJSON *s = cJSON_CreateObject();
      cJSON_AddStringToObject(s, "file", names[i]);
      const char *f[3] = {"host.hostname", "timestamp", "command"};
      for (int k = 0; k < 3; k++) {
        const cJSON *v = at(c, f[k]);
        cJSON_AddStringToObject(s, strchr(f[k], '.') ? strchr(f[k], '.') + 1 : f[k], cJSON_IsString(v) ? v->valuestring : "");
      }
      cJSON_AddNumberToObject(s, "records", cJSON_GetArraySize(cJSON_GetObjectItem(d, "results")));
      cJSON_AddItemToArray(shards, s);
    }
    char first[64];
    snprintf(first, sizeof first, "%s", earliest ? earliest : "");
    for (int i = 1; i < n; i++) {
      cJSON *rs = cJSON_DetachItemFromObject(doc[i], "results"), *r;
      while ((r = cJSON_DetachItemFromArray(rs, 0))) cJSON_AddItemToArray(res, r);
      cJSON_Delete(rs);
    }
    cJSON_ReplaceItemInObject(ctx, "timestamp", cJSON_CreateString(first));
    if (interrupted && !cJSON_GetObjectItem(ctx, "interrupted")) cJSON_AddTrueToObject(ctx, "interrupted");
    cJSON_AddItemToObject(ctx, "shards", shards);
    *out = cJSON_Print(root);
    if (!*out) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  }
  cJSON_Delete(root);
  for (int i = 0; i < n; i++) cJSON_Delete(doc[i]);
  free(doc);
  return rc;
}

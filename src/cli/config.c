/* config.c: custom cases from a JSON file (--config FILE.json):
 *   [{"op": "add", "inputs": {"a": "64x64", "b": [1, 64]}, "params": {}, "dtype": "float64"}]
 * or {"cases": [...]}. Every problem is reported with the case index and the field. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int append(char *spec, size_t n, const char *name, const char *val) {
  size_t l = strlen(spec);
  int w = snprintf(spec + l, n - l, "%s%s=%s", l ? " " : "", name, val);
  return w < 0 || (size_t)w >= n - l ? -1 : 0;
}

static int value_str(const cJSON *v, char *buf, size_t n) {
  if (cJSON_IsString(v)) return snprintf(buf, n, "%s", v->valuestring) < (int)n ? 0 : -1;
  if (cJSON_IsBool(v)) return snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false"), 0;
  if (cJSON_IsNumber(v)) return snprintf(buf, n, "%.17g", v->valuedouble), 0;
  if (cJSON_IsArray(v)) { /* a shape as a list of sizes */
    size_t off = 0;
    buf[0] = '\0';
    const cJSON *d;
    if (cJSON_GetArraySize(v) == 0) return snprintf(buf, n, "()"), 0;
    cJSON_ArrayForEach(d, v) {
      if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble != (double)(long long)d->valuedouble)
        return -1;
      off += snprintf(buf + off, n - off, "%s%lld", off ? "x" : "", (long long)d->valuedouble);
      if (off >= n) return -1;
    }
    return 0;
  }
  return -1;
}

static int load_case(const cJSON *item, int idx, cli_case *cc, opf_err *err) {
  if (!cJSON_IsObject(item))
    return opf_err_set(err, OPF_ECONFIG, "case %d is not an object", idx);
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(item, "op");
  if (!cJSON_IsString(op))
    return opf_err_set(err, OPF_ECONFIG, "case %d: \"op\" must be an operator name", idx);
  cc->op = opf_op_find(op->valuestring);
  if (!cc->op) {
    const char *s = opf_op_suggest(op->valuestring);
    return opf_err_set(err, OPF_ENOTFOUND, "case %d: unknown operator '%s'%s%s%s", idx,
                       op->valuestring, s ? "; did you mean '" : "", s ? s : "", s ? "'?" : "");
  }
  cc->dtype = -1;
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  if (dt) {
    if (!cJSON_IsString(dt) || (cc->dtype = opf_dtype_parse(dt->valuestring)) < 0)
      return opf_err_set(err, OPF_ECONFIG, "case %d: unknown dtype (use float32, float64, int32, int64)", idx);
  }
  const char *groups[] = {"inputs", "params"};
  for (int g = 0; g < 2; g++) {
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(item, groups[g]), *v;
    if (!obj) continue;
    if (!cJSON_IsObject(obj))
      return opf_err_set(err, OPF_ECONFIG, "case %d: \"%s\" must be an object", idx, groups[g]);
    cJSON_ArrayForEach(v, obj) {
      char val[256];
      if (value_str(v, val, sizeof val))
        return opf_err_set(err, OPF_ECONFIG, "case %d: %s.%s has an unusable value", idx,
                           groups[g], v->string);
      if (append(cc->spec, sizeof cc->spec, v->string, val))
        return opf_err_set(err, OPF_ECONFIG, "case %d: too many inputs/params", idx);
    }
  }
  const cJSON *k;
  cJSON_ArrayForEach(k, item) {
    if (strcmp(k->string, "op") && strcmp(k->string, "dtype") && strcmp(k->string, "inputs") &&
        strcmp(k->string, "params"))
      return opf_err_set(err, OPF_ECONFIG, "case %d: unknown field \"%s\" (fields: op, inputs, params, dtype)",
                         idx, k->string);
  }
  return OPF_OK;
}

int cli_config_load(const char *path, cli_case **cases, int *n, opf_err *err) {
  *cases = NULL;
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return opf_err_set(err, OPF_EIO, "cannot read config '%s'", path);
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 8192;
      if (cap > (64u << 20)) {
        free(text);
        fclose(f);
        return opf_err_set(err, OPF_ECONFIG, "config '%s' is larger than 64 MiB", path);
      }
      char *t = realloc(text, cap);
      if (!t) break;
      text = t;
    }
    size_t r = fread(text + len, 1, 4096, f);
    len += r;
    if (r < 4096) break;
  }
  fclose(f);
  if (!text) return opf_err_set(err, OPF_ENOMEM, "out of memory reading '%s'", path);
  text[len] = '\0';
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
  if (!root) {
    size_t off = end ? (size_t)(end - text) : 0;
    int line = 1;
    for (size_t i = 0; i < off && i < len; i++) line += text[i] == '\n';
    free(text);
    return opf_err_set(err, OPF_ECONFIG, "config '%s' is not valid JSON (near line %d)", path, line);
  }
  free(text);
  const cJSON *list = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "cases") : root;
  int rc = OPF_OK;
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
    rc = opf_err_set(err, OPF_ECONFIG, "config '%s': expected a non-empty list of cases", path);
  } else {
    int cnt = cJSON_GetArraySize(list);
    *cases = calloc((size_t)cnt, sizeof **cases);
    if (!*cases) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, list) {
      if (rc) break;
      rc = load_case(it, i, &(*cases)[i], err);
      i++;
    }
    if (!rc) *n = cnt;
    else {
      free(*cases);
      *cases = NULL;
      if (rc != OPF_ENOMEM) {
        char m[OPF_ERR_MSG_MAX];
        snprintf(m, sizeof m, "config '%.100s': %.380s", path, err->msg);
        opf_err_set(err, rc, "%s", m);
      }
    }
  }
  cJSON_Delete(root);
  return rc;
}

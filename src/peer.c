/* peer.c: the library side of `--baseline torch|numpy` (include/opperf/peer.h): the JSON
 * request for scripts/opperf-peer.py, its answer joined to our results, the --check
 * comparison with dtype tolerances, and the per-category geometric means of ours/peer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "opperf/peer.h"

static const char *const lib_names[] = {"torch", "numpy"};

int opf_peer_lib_parse(const char *s) {
  for (int i = 0; i < 2; i++)
    if (s && !strcmp(s, lib_names[i])) return i;
  return -1;
}

const char *opf_peer_lib_name(opf_peer_lib l) { return (unsigned)l < 2 ? lib_names[l] : "?"; }

int opf_peer_ok(const opf_peer_result *p) { return p && !strcmp(p->status, "ok") && p->median > 0; }

int opf_peer_no_equivalent(const opf_peer_result *p) {
  return p && !strncmp(p->status, "no-equivalent", 13);
}

int opf_peer_file(char *buf, size_t n, const char *prefix, const char *kind, const char *name) {
  int k = snprintf(buf, n, "%s%s_%s.npy", prefix, kind, name);
  return k < 0 || (size_t)k >= n ? -1 : 0;
}

static cJSON *shape_json(const opf_tensor *t) {
  cJSON *a = cJSON_CreateArray();
  for (int d = 0; a && d < t->ndim; d++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)t->shape[d]));
  return a;
}

/* Adds "KEY": path of (prefix, kind, name) to o when files are exchanged. */
static void add_file(cJSON *o, const char *key, const char *prefix, const char *kind, const char *name) {
  char p[600];
  if (prefix && !opf_peer_file(p, sizeof p, prefix, kind, name)) cJSON_AddStringToObject(o, key, p);
}

static cJSON *case_json(const opf_peer_req_case *rc, int id) {
  const opf_case *c = rc->c;
  const opf_op *op = c->op;
  const int grad = rc->pass != OPF_PASS_FWD;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", id);
  cJSON_AddStringToObject(o, "op", op->name);
  cJSON_AddStringToObject(o, "category", op->category);
  cJSON_AddStringToObject(o, "dtype", opf_dtype_name(c->dtype));
  cJSON_AddStringToObject(o, "pass", opf_pass_name(rc->pass));
  cJSON_AddBoolToObject(o, "check", rc->check);
  if (grad) { /* where opperf hands gradients back as views, the peer keeps autograd's views */
    char views[96];
    cJSON_AddBoolToObject(o, "materialize", opf_case_grad_views(c, views, sizeof views) == 0);
  }
  cJSON *ins = cJSON_AddArrayToObject(o, "inputs");
  for (int i = 0; i < op->n_in; i++) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "name", op->in[i].name);
    cJSON_AddBoolToObject(t, "present", c->present[i]);
    if (c->present[i]) {
      int diff = (op->in[i].flags & OPF_IN_DIFF) && opf_dtype_is_float(c->in[i].dtype);
      cJSON_AddItemToObject(t, "shape", shape_json(&c->in[i]));
      cJSON_AddStringToObject(t, "dtype", opf_dtype_name(c->in[i].dtype));
      cJSON_AddBoolToObject(t, "diff", diff);
      add_file(t, "file", rc->files, "in", op->in[i].name);
      if (rc->check && grad && diff) add_file(t, "peer_grad_file", rc->files, "peer_gin", op->in[i].name);
    }
    cJSON_AddItemToArray(ins, t);
  }
  cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
  for (int i = 0; i < op->n_out; i++) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "name", op->out[i]);
    cJSON_AddItemToObject(t, "shape", shape_json(&c->out[i]));
    cJSON_AddStringToObject(t, "dtype", opf_dtype_name(c->out[i].dtype));
    cJSON_AddBoolToObject(t, "inplace", op->inplace[i] != 0);
    if (grad && opf_dtype_is_float(c->out[i].dtype)) add_file(t, "grad_file", rc->files, "gout", op->out[i]);
    if (rc->check) add_file(t, "peer_file", rc->files, "peer_out", op->out[i]);
    cJSON_AddItemToArray(outs, t);
  }
  cJSON *ps = cJSON_AddObjectToObject(o, "params");
  for (int i = 0; i < op->n_params; i++) {
    char kv[320];
    opf_case_param_str(c, i, kv, sizeof kv);
    char *eq = strchr(kv, '=');
    if (eq) cJSON_AddStringToObject(ps, op->params[i].name, eq + 1);
  }
  return o;
}

int opf_peer_request(opf_peer_lib lib, const opf_settings *s, const opf_peer_req_case *cases,
                     int n, char **json, opf_err *err) {
  *json = NULL;
  cJSON *root = cJSON_CreateObject();
  if (!root) return opf_err_set(err, OPF_ENOMEM, "out of memory building the peer request");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddStringToObject(root, "library", opf_peer_lib_name(lib));
  cJSON *st = cJSON_AddObjectToObject(root, "settings");
  cJSON_AddNumberToObject(st, "threads", s->threads);
  cJSON_AddNumberToObject(st, "warmup", s->warmup);
  cJSON_AddNumberToObject(st, "warmup_calls", s->warmup_calls);
  cJSON_AddNumberToObject(st, "min_time", s->min_time);
  cJSON_AddNumberToObject(st, "max_time", s->max_time);
  cJSON_AddNumberToObject(st, "sample_time", s->sample_time);
  cJSON_AddNumberToObject(st, "min_runs", s->min_runs);
  cJSON_AddNumberToObject(st, "max_runs", s->max_runs);
  cJSON_AddNumberToObject(st, "batch", (double)s->batch);
  cJSON_AddNumberToObject(st, "seed", (double)s->seed);
  cJSON *arr = cJSON_AddArrayToObject(root, "cases");
  for (int i = 0; arr && i < n; i++) cJSON_AddItemToArray(arr, case_json(&cases[i], i));
  *json = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return *json ? OPF_OK : opf_err_set(err, OPF_ENOMEM, "out of memory printing the peer request");
}

static void copy_str(char *dst, size_t n, const cJSON *o, const char *key, const char *def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  snprintf(dst, n, "%s", cJSON_IsString(v) ? v->valuestring : def);
}

static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

int opf_peer_answer(const char *json, const double *ours, opf_peer_result *res, int n,
                    opf_err *err) {
  for (int i = 0; i < n; i++) {
    memset(&res[i], 0, sizeof res[i]);
    snprintf(res[i].status, sizeof res[i].status, "error: no answer for this case");
  }
  cJSON *root = cJSON_Parse(json ? json : "");
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return opf_err_set(err, OPF_EINVAL, "the peer script's answer is not a JSON object");
  }
  const cJSON *fatal = cJSON_GetObjectItemCaseSensitive(root, "fatal");
  if (cJSON_IsString(fatal)) {
    opf_err_set(err, OPF_EUNSUPPORTED, "%s", fatal->valuestring);
    cJSON_Delete(root);
    return OPF_EUNSUPPORTED;
  }
  char library[48];
  copy_str(library, sizeof library, root, "library", "?");
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases"), *c;
  if (!cJSON_IsArray(cases)) {
    cJSON_Delete(root);
    return opf_err_set(err, OPF_EINVAL, "the peer script's answer has no \"cases\" array");
  }
  cJSON_ArrayForEach(c, cases) {
    const cJSON *idv = cJSON_GetObjectItemCaseSensitive(c, "id");
    if (!cJSON_IsNumber(idv) || idv->valuedouble < 0 || idv->valuedouble >= n) continue;
    opf_peer_result *p = &res[(int)idv->valuedouble];
    copy_str(p->status, sizeof p->status, c, "status", "error: no status");
    copy_str(p->name, sizeof p->name, c, "peer_op", "");
    snprintf(p->library, sizeof p->library, "%s", library);
    p->median = num(c, "median");
    p->n_samples = (int)num(c, "samples");
    p->batch = (int64_t)num(c, "batch");
    copy_str(p->check.what, sizeof p->check.what, c, "check_skip", "");
    int i = (int)idv->valuedouble;
    p->ratio = opf_peer_ok(p) && ours && ours[i] > 0 ? ours[i] / p->median : 0;
  }
  for (int i = 0; i < n; i++)
    if (!res[i].library[0]) snprintf(res[i].library, sizeof res[i].library, "%s", library);
  cJSON_Delete(root);
  return OPF_OK;
}

void opf_peer_tolerance(opf_dtype d, double op_tol, double *atol, double *rtol) {
  if (d == OPF_F32) *rtol = op_tol > 1e-4 ? op_tol : 1e-4;
  else if (d == OPF_F64) *rtol = op_tol > 1e-4 ? op_tol * 1e-5 : 1e-9;
  else *rtol = 0;
  *atol = *rtol;
}

static double elem(const opf_tensor *t, int64_t k) {
  switch (t->dtype) {
  case OPF_F32: return ((const float *)t->data)[k];
  case OPF_F64: return ((const double *)t->data)[k];
  case OPF_I32: return ((const int32_t *)t->data)[k];
  case OPF_I64: return (double)((const int64_t *)t->data)[k];
  default: return ((const uint8_t *)t->data)[k];
  }
}

static void mismatch(opf_peer_check *chk, const char *fmt, const char *name, double a, double b) {
  if (chk->agree) snprintf(chk->what, sizeof chk->what, fmt, name, a, b);
  chk->agree = 0;
}

/* Same shape once unit axes are dropped (a peer's scalar may come back as shape (1,)). */
static int same_shape(const opf_tensor *a, const opf_tensor *b) {
  int i = 0, j = 0;
  for (;;) {
    while (i < a->ndim && a->shape[i] == 1) i++;
    while (j < b->ndim && b->shape[j] == 1) j++;
    if (i == a->ndim || j == b->ndim) return i == a->ndim && j == b->ndim;
    if (a->shape[i++] != b->shape[j++]) return 0;
  }
}

void opf_peer_compare(const opf_tensor *ours, const opf_tensor *peer, double op_tol,
                      const char *name, opf_peer_check *chk) {
  chk->n_tensors++;
  if (!same_shape(ours, peer)) {
    char a[96], b[96];
    if (chk->agree)
      snprintf(chk->what, sizeof chk->what, "%s: shape %s vs the peer's %s", name,
               opf_shape_str(ours, a, sizeof a), opf_shape_str(peer, b, sizeof b));
    chk->agree = 0;
    return;
  }
  /* The wider of the two dtypes sets the tolerance (an int64 answer for our int32 is exact). */
  opf_dtype d = opf_dtype_is_float(ours->dtype) ? ours->dtype : peer->dtype;
  double atol, rtol, scale = 0;
  opf_peer_tolerance(d, op_tol, &atol, &rtol);
  int64_t n = opf_numel(ours);
  for (int64_t k = 0; k < n; k++) {
    double b = fabs(elem(peer, k));
    if (isfinite(b) && b > scale) scale = b;
  }
  atol *= scale > 1 ? scale : 1;
  chk->atol = atol > chk->atol ? atol : chk->atol;
  chk->rtol = rtol > chk->rtol ? rtol : chk->rtol;
  for (int64_t k = 0; k < n; k++) {
    double a = elem(ours, k), b = elem(peer, k);
    if (isnan(a) || isnan(b)) {
      if (!(isnan(a) && isnan(b))) mismatch(chk, "%s: %g vs the peer's %g (NaN on one side)", name, a, b);
      continue;
    }
    if (isinf(a) || isinf(b)) {
      if (a != b) mismatch(chk, "%s: %g vs the peer's %g", name, a, b);
      continue;
    }
    /* relative to the element, floored at 1e-3 of the tensor's scale: an element that
     * cancels to ~0 would otherwise give a meaningless huge relative error */
    double diff = fabs(a - b), floor = 1e-3 * (scale > 0 ? scale : 1);
    double rel = diff / (fabs(b) > floor ? fabs(b) : floor);
    if (diff > chk->max_abs) chk->max_abs = diff;
    if (diff > 0 && rel > chk->max_rel) chk->max_rel = rel;
    if (diff > atol + rtol * fabs(b)) mismatch(chk, "%s: %.7g vs the peer's %.7g", name, a, b);
  }
}

static int ratio_ok(const opf_result *r) {
  return r->peer && r->status == OPF_ST_OK && !strcmp(r->impl, "native") && r->peer->ratio > 0;
}

int opf_peer_geomeans(const opf_result *rows, int n, opf_peer_geomean *out, int max) {
  int m = 0;
  double logs[64] = {0}, all_log = 0;
  opf_peer_geomean all = {"all", 0, 0, INFINITY, 0};
  for (int i = 0; i < n; i++) {
    const opf_result *r = &rows[i];
    if (!ratio_ok(r)) continue;
    double x = r->peer->ratio;
    int k = 0;
    while (k < m && strcmp(out[k].category, r->category)) k++;
    if (k == m && m < max - 1 && m < 64) {
      memset(&out[m], 0, sizeof out[m]);
      snprintf(out[m].category, sizeof out[m].category, "%s", r->category);
      out[m].min = INFINITY;
      m++;
    }
    if (k < m) {
      logs[k] += log(x);
      out[k].n++;
      out[k].min = x < out[k].min ? x : out[k].min;
      out[k].max = x > out[k].max ? x : out[k].max;
    }
    all_log += log(x);
    all.n++;
    all.min = x < all.min ? x : all.min;
    all.max = x > all.max ? x : all.max;
  }
  for (int k = 0; k < m; k++) out[k].geomean = exp(logs[k] / out[k].n);
  if (all.n && m < max) {
    all.geomean = exp(all_log / all.n);
    out[m++] = all;
  }
  return m;
}

int opf_peer_worst(const opf_result *rows, int n, int *idx, int k) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (!ratio_ok(&rows[i])) continue;
    /* insertion into the top-k list, largest ratio first */
    int pos = m < k ? m++ : k;
    while (pos > 0 && rows[idx[pos - 1]].peer->ratio < rows[i].peer->ratio) {
      if (pos < k) idx[pos] = idx[pos - 1];
      pos--;
    }
    if (pos < k) idx[pos] = i;
  }
  return m;
}

/* random_shapes.c: --random-shapes: valid random cases drawn from an operator's own default
 * entries. The entries encode the operator's shape constraints by example (equal dims across
 * inputs, broadcast 1s, kernel sizes), so a draw rescales them consistently and lets infer()
 * be the judge: dims of 8 or more get new values (one value per distinct size, so equal dims
 * stay equal), smaller ones (1s, kernel sizes, channels of 3) are kept. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/case.h"

#define MAX_MAP 32
#define MAX_NUMEL (1LL << 24)      /* per input: random cases stay quick to run */
#define MAX_TOTAL (1LL << 26)

typedef struct dim_map {
  int n;
  int64_t from[MAX_MAP], to[MAX_MAP];
  int mode;  /* 0: independent log-uniform sizes; 1: one power-of-two factor for all */
  int shift; /* mode 1: factor 2^shift */
} dim_map;

static int64_t map_dim(dim_map *m, opf_rng *r, int64_t v, int create) {
  if (v < 8) return v;
  for (int i = 0; i < m->n; i++)
    if (m->from[i] == v) return m->to[i];
  int64_t t = v;
  if (m->mode == 1) {
    if (m->shift >= 0) t = v << m->shift;
    else if (v % ((int64_t)1 << -m->shift) == 0) t = v >> -m->shift;
  } else if (create) {
    double lo = log(v / 16.0 > 1 ? v / 16.0 : 1), hi = log(4.0 * (double)v);
    t = (int64_t)llround(exp(lo + (hi - lo) * opf_rng_uniform(r)));
    if (t < 1) t = 1;
  } else {
    return v; /* a list value that is not an input dim: left alone */
  }
  if (m->n < MAX_MAP) {
    m->from[m->n] = v;
    m->to[m->n++] = t;
  }
  return t;
}

static int is_input(const opf_op *op, const char *name, size_t l) {
  for (int i = 0; i < op->n_in; i++)
    if (strlen(op->in[i].name) == l && !strncmp(op->in[i].name, name, l)) return 1;
  return 0;
}

static int is_list_param(const opf_op *op, const char *name, size_t l) {
  for (int i = 0; i < op->n_params; i++)
    if (strlen(op->params[i].name) == l && !strncmp(op->params[i].name, name, l))
      return op->params[i].type == OPF_P_LIST;
  return 0;
}

/* Rewrite one template spec with the map; 0 on success, -1 when over the size budget. */
static int rewrite(const opf_op *op, const char *tmpl, dim_map *m, opf_rng *r, char *out, size_t n) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", tmpl);
  size_t off = 0;
  int64_t total = 0;
  out[0] = '\0';
  char *save = NULL;
  /* Two passes: inputs first (they create the mapping), then list params (which follow it). */
  for (int pass = 0; pass < 2; pass++) {
    snprintf(buf, sizeof buf, "%s", tmpl);
    for (char *tok = strtok_r(buf, " \t\n;", &save); tok; tok = strtok_r(NULL, " \t\n;", &save)) {
      char *eq = strchr(tok, '=');
      size_t nl = eq ? (size_t)(eq - tok) : 0;
      int in = eq && is_input(op, tok, nl) && isdigit((unsigned char)eq[1]);
      int lst = eq && !in && is_list_param(op, tok, nl);
      if ((pass == 0) != in) continue;
      if (!in && !lst) {
        off += (size_t)snprintf(out + off, n > off ? n - off : 0, "%s%s", off ? " " : "", tok);
        continue;
      }
      /* A shape ("AxB") or a list ("A,B"): map every number, keep the separators. */
      off += (size_t)snprintf(out + off, n > off ? n - off : 0, "%s%.*s=", off ? " " : "", (int)nl, tok);
      int64_t numel = 1;
      for (const char *p = eq + 1; *p;) {
        if (isdigit((unsigned char)*p)) {
          char *end;
          int64_t v = strtoll(p, &end, 10), t = map_dim(m, r, v, in);
          numel = numel > MAX_NUMEL ? numel : numel * (t > 0 ? t : 1);
          off += (size_t)snprintf(out + off, n > off ? n - off : 0, "%lld", (long long)t);
          p = end;
        } else {
          off += (size_t)snprintf(out + off, n > off ? n - off : 0, "%c", *p++);
        }
      }
      if (in) {
        if (numel > MAX_NUMEL) return -1;
        total += numel;
      }
    }
  }
  return off < n && total <= MAX_TOTAL ? 0 : -1;
}

int opf_random_spec(const opf_op *op, opf_dtype dt, uint64_t seed, int index, char *spec,
                    size_t n, opf_err *err) {
  const char *tmpl[OPF_MAX_SETS];
  int nt = 0;
  for (int k = 0; k < OPF_MAX_SETS && op->shapes[k].set; k++)
    if (!strcmp(op->shapes[k].set, "standard") || !strcmp(op->shapes[k].set, "skewed") ||
        !strcmp(op->shapes[k].set, "small"))
      tmpl[nt++] = op->shapes[k].spec;
  if (!nt) return opf_err_set(err, OPF_EUNSUPPORTED, "%s has no default shapes to draw from", op->name);
  uint64_t h = 1469598103934665603ULL; /* FNV-1a of the name: each operator its own stream */
  for (const char *p = op->name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  opf_rng r;
  opf_rng_init(&r, seed ^ h, 0x5eed0000u + (uint64_t)index);
  for (int attempt = 0; attempt < 96; attempt++) {
    dim_map m = {.mode = attempt % 3 == 2, .shift = (int)(opf_rng_u64(&r) % 5) - 3};
    if (m.shift >= 0) m.shift++; /* 2^-3 .. 2^2, never 1 */
    const char *t = tmpl[opf_rng_u64(&r) % (uint64_t)nt];
    if (rewrite(op, t, &m, &r, spec, n)) continue;
    opf_case c;
    opf_err e;
    if (opf_case_init(&c, op, dt, spec, &e) == OPF_OK &&
        opf_case_footprint(&c, 1) < (uint64_t)MAX_TOTAL * 16)
      return OPF_OK;
  }
  return opf_err_set(err, OPF_EUNSUPPORTED,
                     "%s: no valid random shape found from its default entries", op->name);
}

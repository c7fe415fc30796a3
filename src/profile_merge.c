/* profile_merge.c: combining profiles: folded stacks (identical stacks add their counts, lines
 * sorted, as flame-graph renderers expect) and the summaries of repetitions of one case
 * (--repetitions), weighted by their sample counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/profile.h"

typedef struct fline {
  const char *s; /* the stack, up to the last space */
  size_t n;
  long long count;
} fline;

static int cmp_line(const void *a, const void *b) {
  const fline *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  int c = memcmp(x->s, y->s, n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Split text into lines "STACK COUNT"; returns how many, or -1 for a line without a count. */
static int split(const char *t, size_t len, fline *out) {
  int n = 0;
  for (size_t i = 0; i < len;) {
    size_t e = i;
    while (e < len && t[e] != '\n') e++;
    if (e > i) {
      size_t sp = e;
      while (sp > i && t[sp - 1] != ' ') sp--;
      char *end;
      long long c = sp > i + 1 ? strtoll(t + sp, &end, 10) : 0;
      if (sp <= i + 1 || end != t + e || c < 0) return -1;
      if (out) out[n] = (fline){t + i, sp - 1 - i, c};
      n++;
    }
    i = e + 1;
  }
  return n;
}

int opf_folded_merge(char **a, size_t *a_len, const char *b, size_t b_len) {
  const char *old = *a ? *a : "";
  size_t old_len = *a ? *a_len : 0;
  int na = split(old, old_len, NULL), nb = split(b, b_len, NULL);
  if (na < 0 || nb < 0) return OPF_EINVAL;
  fline *v = malloc(sizeof *v * (size_t)(na + nb + 1));
  if (!v) return OPF_ENOMEM;
  split(old, old_len, v);
  split(b, b_len, v + na);
  int n = na + nb;
  qsort(v, (size_t)n, sizeof *v, cmp_line);
  char *out = malloc(old_len + b_len + 1), *w = out;
  if (!out) {
    free(v);
    return OPF_ENOMEM;
  }
  for (int i = 0; i < n;) {
    long long c = v[i].count;
    int j = i + 1;
    for (; j < n && !cmp_line(&v[i], &v[j]); j++) c += v[j].count;
    memcpy(w, v[i].s, v[i].n);
    w += v[i].n;
    /* A merged line is never longer than the two it replaces. */
    w += sprintf(w, " %lld\n", c);
    i = j;
  }
  *w = '\0';
  free(v);
  free(*a);
  *a = out;
  *a_len = (size_t)(w - out);
  return OPF_OK;
}

static opf_profile_func *find_func(opf_profile_func *v, int n, const opf_profile_func *f) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i].name, f->name) && !strcmp(v[i].module, f->module)) return &v[i];
  return NULL;
}

int opf_profile_func_cmp(const void *a, const void *b) {
  const opf_profile_func *x = a, *y = b;
  if (x->self != y->self) return x->self < y->self ? 1 : -1;
  if (x->total != y->total) return x->total < y->total ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* A function beyond one repetition's top list counts as 0 there: the merged shares of functions
 * near the cut are lower bounds. */
void opf_profile_merge(opf_result *acc, opf_result *rep) {
  opf_profile_summary *a = &acc->profile;
  const opf_profile_summary *b = &rep->profile;
  if (!b->event[0]) return;
  if (!a->event[0] || !a->samples) {
    int64_t lost = a->lost;
    *a = *b;
    a->lost += lost;
  } else if (b->samples) {
    double wa = (double)a->samples / (double)(a->samples + b->samples), wb = 1 - wa;
    opf_profile_func all[2 * OPF_PROFILE_MAX_FUNCS];
    int n = a->n_funcs, keep = a->n_funcs > b->n_funcs ? a->n_funcs : b->n_funcs;
    memcpy(all, a->funcs, sizeof *all * (size_t)n);
    for (int i = 0; i < n; i++) all[i].self *= wa, all[i].total *= wa;
    for (int i = 0; i < b->n_funcs; i++) {
      opf_profile_func *f = find_func(all, n, &b->funcs[i]);
      if (!f) {
        f = &all[n++];
        *f = b->funcs[i];
        f->self = f->total = 0;
      }
      f->self += wb * b->funcs[i].self;
      f->total += wb * b->funcs[i].total;
    }
    qsort(all, (size_t)n, sizeof *all, opf_profile_func_cmp);
    a->n_funcs = n < keep ? n : keep;
    memcpy(a->funcs, all, sizeof *all * (size_t)a->n_funcs);
    a->samples += b->samples;
    a->lost += b->lost;
    a->throttled += b->throttled;
    a->unresolved += b->unresolved;
  } else {
    a->lost += b->lost;
    a->throttled += b->throttled;
  }
  /* On failure acc keeps its own stacks: the repetition's are then missing from the file. */
  if (rep->folded) (void)opf_folded_merge(&acc->folded, &acc->folded_len, rep->folded, rep->folded_len);
}

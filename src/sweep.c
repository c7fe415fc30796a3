/* sweep.c: the shape lists of `opperf sweep`: --vary ranges on one dimension (geometric or
 * arithmetic steps) and --aspect sweeps at a fixed element count. No printing: errors go to
 * opf_err for the CLI to report. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/sweep.h"

static int parse_i64(const char *s, const char *end, int64_t *v) {
  if (s == end || !isdigit((unsigned char)*s)) return 0;
  char buf[32];
  size_t l = (size_t)(end - s);
  if (l >= sizeof buf) return 0;
  memcpy(buf, s, l);
  buf[l] = '\0';
  char *e;
  errno = 0;
  long long x = strtoll(buf, &e, 10);
  if (*e || errno) return 0;
  *v = x;
  return 1;
}

int opf_sweep_parse_vary(const char *s, opf_sweep_vary *v, opf_err *err) {
  memset(v, 0, sizeof *v);
  const char *eq = strchr(s, '=');
  if (!eq) return opf_err_set(err, OPF_EINVAL, "--vary '%s': expected NAME.dimK=START:STOP:xF or :+N", s);
  const char *dot = memchr(s, '.', (size_t)(eq - s));
  const char *d = dot ? dot + 1 : s;
  if (dot) {
    size_t l = (size_t)(dot - s);
    if (!l || l >= sizeof v->input) return opf_err_set(err, OPF_EINVAL, "--vary '%s': bad input name", s);
    memcpy(v->input, s, l);
    v->input[l] = '\0';
  }
  int64_t dim;
  if (strncmp(d, "dim", 3) || !parse_i64(d + 3, eq, &dim) || dim > 7)
    return opf_err_set(err, OPF_EINVAL, "--vary '%s': expected dimK (K from 0 to 7) before '='", s);
  v->dim = (int)dim;
  const char *a = eq + 1, *c1 = strchr(a, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c1 || !c2 || strchr(c2 + 1, ':'))
    return opf_err_set(err, OPF_EINVAL, "--vary '%s': expected START:STOP:xF or START:STOP:+N after '='", s);
  if (!parse_i64(a, c1, &v->start) || !parse_i64(c1 + 1, c2, &v->stop))
    return opf_err_set(err, OPF_EINVAL, "--vary '%s': START and STOP must be positive integers", s);
  const char *st = c2 + 1;
  if (*st != 'x' && *st != '+' && *st != '*')
    return opf_err_set(err, OPF_EINVAL, "--vary '%s': the step must be xF (multiply) or +N (add)", s);
  v->geometric = *st != '+';
  if (!parse_i64(st + 1, st + strlen(st), &v->step))
    return opf_err_set(err, OPF_EINVAL, "--vary '%s': the step must be xF or +N with an integer", s);
  if (v->start < 1) return opf_err_set(err, OPF_EINVAL, "--vary '%s': START must be at least 1", s);
  if (v->stop < v->start) return opf_err_set(err, OPF_EINVAL, "--vary '%s': STOP is below START", s);
  if (v->geometric ? v->step < 2 : v->step < 1)
    return opf_err_set(err, OPF_EINVAL, "--vary '%s': the step must be x2 or more, or +1 or more", s);
  return OPF_OK;
}

int opf_sweep_vary_values(const opf_sweep_vary *v, int64_t *out, int max) {
  if (v->start < 1 || v->stop < v->start || v->step < 1 || (v->geometric && v->step < 2)) return OPF_EINVAL;
  int n = 0;
  for (int64_t x = v->start; x <= v->stop;) {
    if (n < max) out[n] = x;
    n++;
    if (n > 1000000) break; /* far more than anyone can measure: the caller reports it */
    if (v->geometric) {
      if (x > v->stop / v->step) break;
      x *= v->step;
    } else {
      if (x > v->stop - v->step) break;
      x += v->step;
    }
  }
  return n;
}

int opf_sweep_parse_count(const char *s, int64_t *n, opf_err *err) {
  const char *p = strstr(s, "**"), *c = strchr(s, '^');
  int64_t base, e;
  if (p || c) {
    const char *op = p ? p : c;
    if (!parse_i64(s, op, &base) || !parse_i64(op + (p ? 2 : 1), s + strlen(s), &e) || e > 62)
      return opf_err_set(err, OPF_EINVAL, "--aspect '%s': expected an element count such as 1048576 or 2^20", s);
    int64_t x = 1;
    for (int64_t i = 0; i < e; i++) {
      if (x > (INT64_C(1) << 62) / (base ? base : 1)) return opf_err_set(err, OPF_EINVAL, "--aspect '%s': too large", s);
      x *= base;
    }
    *n = x;
  } else if (!parse_i64(s, s + strlen(s), n)) {
    return opf_err_set(err, OPF_EINVAL, "--aspect '%s': expected an element count such as 1048576 or 2^20", s);
  }
  if (*n < 2 || (*n & (*n - 1)))
    return opf_err_set(err, OPF_EINVAL, "--aspect '%s': the element count must be a power of two of at least 2", s);
  if (*n > INT64_C(1) << 40)
    return opf_err_set(err, OPF_EINVAL, "--aspect '%s': more than 2^40 elements", s);
  return OPF_OK;
}

int opf_sweep_aspect(int64_t n, int64_t *rows, int64_t *cols, int max) {
  if (n < 1 || (n & (n - 1))) return OPF_EINVAL;
  int k = 0;
  for (int64_t r = 1; r <= n; r *= 2, k++) {
    if (k >= max) return -1;
    rows[k] = r;
    cols[k] = n / r;
  }
  return k;
}

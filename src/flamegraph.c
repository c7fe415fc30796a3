/* flamegraph.c: folding `perf script` call stacks, reading and writing folded stacks, and an
 * interactive SVG flame graph of our own (Debian packages no FlameGraph scripts). The SVG is
 * self-contained: frames with <title> tooltips, and a small script for click-to-zoom and search. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/flamegraph.h"
#include "opperf/svg.h"

/* ---- folded stacks: arrays plus an open-addressing hash index over the stack strings ---- */

typedef struct fold_index {
  size_t *slot; /* 1 + position in f->stack, 0: empty */
  size_t cap;   /* power of two */
} fold_index;

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* (Re)build the index at cap slots (a power of two above 2n). */
static int index_build(opf_folded *f, size_t cap) {
  fold_index *ix = f->index;
  size_t *slot = calloc(cap, sizeof *slot);
  if (!slot) return OPF_ENOMEM;
  for (size_t i = 0; i < f->n; i++) {
    size_t h = (size_t)fnv1a(f->stack[i]) & (cap - 1);
    while (slot[h]) h = (h + 1) & (cap - 1);
    slot[h] = i + 1;
  }
  if (!ix && !(ix = f->index = calloc(1, sizeof *ix))) {
    free(slot);
    return OPF_ENOMEM;
  }
  free(ix->slot);
  ix->slot = slot;
  ix->cap = cap;
  return OPF_OK;
}

int opf_folded_add(opf_folded *f, const char *stack, int64_t count, opf_err *err) {
  fold_index *cur = f->index;
  if ((!cur || (f->n + 1) * 2 > cur->cap) && index_build(f, cur ? cur->cap * 2 : 1024))
    return opf_err_set(err, OPF_ENOMEM, "out of memory folding stacks");
  fold_index *ix = f->index;
  size_t h = (size_t)fnv1a(stack) & (ix->cap - 1);
  for (; ix->slot[h]; h = (h + 1) & (ix->cap - 1))
    if (!strcmp(f->stack[ix->slot[h] - 1], stack)) {
      f->count[ix->slot[h] - 1] += count;
      f->total += count;
      return OPF_OK;
    }
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 256;
    char **s = realloc(f->stack, cap * sizeof *s);
    if (s) f->stack = s;
    int64_t *c = s ? realloc(f->count, cap * sizeof *c) : NULL;
    if (!c) return opf_err_set(err, OPF_ENOMEM, "out of memory folding stacks");
    f->count = c;
    f->cap = cap;
  }
  if (!(f->stack[f->n] = strdup(stack))) return opf_err_set(err, OPF_ENOMEM, "out of memory folding stacks");
  f->count[f->n] = count;
  ix->slot[h] = ++f->n;
  f->total += count;
  return OPF_OK;
}

void opf_folded_free(opf_folded *f) {
  for (size_t i = 0; i < f->n; i++) free(f->stack[i]);
  free(f->stack);
  free(f->count);
  if (f->index) free(((fold_index *)f->index)->slot);
  free(f->index);
  memset(f, 0, sizeof *f);
}

/* Frames compare one by one: ';' sorts before every other character, so "a;b;x" and "a;b;y"
 * stay next to each other ahead of "a;b2". */
static int cmp_stack(const void *a, const void *b) {
  const unsigned char *x = *(const unsigned char *const *)a, *y = *(const unsigned char *const *)b;
  for (;; x++, y++) {
    int cx = *x == ';' ? 1 : *x, cy = *y == ';' ? 1 : *y;
    if (cx != cy || !cx) return cx - cy;
  }
}

static void sort_stacks(opf_folded *f) {
  /* Sort (stack, count) pairs together through an order array. */
  size_t *ord = malloc(f->n * sizeof *ord);
  char **keys = malloc(f->n * sizeof *keys);
  int64_t *cnt = malloc(f->n * sizeof *cnt);
  if (!ord || !keys || !cnt) goto out; /* unsorted output is still valid folded output */
  for (size_t i = 0; i < f->n; i++) keys[i] = f->stack[i];
  qsort(keys, f->n, sizeof *keys, cmp_stack);
  /* The count of each sorted key: the index maps a string back to its position. */
  fold_index *ix = f->index;
  for (size_t i = 0; i < f->n; i++) {
    size_t h = (size_t)fnv1a(keys[i]) & (ix->cap - 1);
    while (f->stack[ix->slot[h] - 1] != keys[i]) h = (h + 1) & (ix->cap - 1);
    ord[i] = ix->slot[h] - 1;
  }
  for (size_t i = 0; i < f->n; i++) cnt[i] = f->count[ord[i]];
  memcpy(f->stack, keys, f->n * sizeof *keys);
  memcpy(f->count, cnt, f->n * sizeof *cnt);
  index_build(f, ix->cap); /* positions changed */
out:
  free(ord);
  free(keys);
  free(cnt);
}

int opf_folded_write(opf_folded *f, FILE *out) {
  if (f->n) sort_stacks(f);
  for (size_t i = 0; i < f->n; i++)
    if (fprintf(out, "%s %" PRId64 "\n", f->stack[i], f->count[i]) < 0) return OPF_EIO;
  return OPF_OK;
}

/* ---- reading ---- */

static char *read_line(FILE *in, char **buf, size_t *cap) {
  ssize_t n = getline(buf, cap, in);
  if (n < 0) return NULL;
  while (n > 0 && ((*buf)[n - 1] == '\n' || (*buf)[n - 1] == '\r')) (*buf)[--n] = '\0';
  return *buf;
}

int opf_folded_read(FILE *in, opf_folded *f, opf_err *err) {
  char *buf = NULL;
  size_t cap = 0;
  int rc = OPF_OK;
  long line = 0;
  for (char *s; !rc && (s = read_line(in, &buf, &cap));) {
    line++;
    if (!*s) continue;
    char *sp = strrchr(s, ' '), *end;
    long long v = sp ? strtoll(sp + 1, &end, 10) : -1;
    if (!sp || sp == s || end == sp + 1 || *end || v < 0) {
      rc = opf_err_set(err, OPF_EINVAL, "folded stacks, line %ld: expected 'frame;frame;... COUNT'", line);
      break;
    }
    *sp = '\0';
    rc = opf_folded_add(f, s, v, err);
  }
  free(buf);
  return rc;
}

/* "libopenblas.so.0" -> "libopenblas"; "libopenblasp-r0.3.21.so" -> "libopenblasp" (the
 * version suffix dropped); "/usr/bin/x" -> "x"; "[unknown]" stays. */
static void module_name(const char *dso, char *out, size_t n) {
  const char *b = strrchr(dso, '/');
  b = b ? b + 1 : dso;
  const char *so = strstr(b, ".so");
  size_t len = so ? (size_t)(so - b) : strlen(b);
  const char *dash = so ? memchr(b, '-', len) : NULL;
  if (dash && (isdigit((unsigned char)dash[1]) || (dash[1] == 'r' && isdigit((unsigned char)dash[2]))))
    len = (size_t)(dash - b);
  snprintf(out, n, "%.*s", (int)len, b);
}

/* One frame line of perf script: "<ws>ADDR SYMBOL+0xOFF (DSO)". Writes the folded frame name;
 * 0 when the line is not a frame. */
static int parse_frame(const char *s, char *out, size_t n) {
  while (*s == ' ' || *s == '\t') s++;
  const char *a = s;
  while (isxdigit((unsigned char)*s)) s++;
  if (s == a || *s != ' ') return 0;
  while (*s == ' ') s++;
  char sym[512], dso[512] = "";
  size_t len = strlen(s);
  const char *open = NULL;
  if (len && s[len - 1] == ')')
    for (const char *p = s + len - 1; p > s; p--)
      if (*p == '(' && p[-1] == ' ') {
        open = p;
        break;
      }
  if (open) {
    snprintf(dso, sizeof dso, "%.*s", (int)(s + len - 1 - open - 1), open + 1);
    len = (size_t)(open - 1 - s);
  }
  snprintf(sym, sizeof sym, "%.*s", (int)len, s);
  char *plus = strstr(sym, "+0x"); /* the offset perf adds with symoff */
  if (plus) *plus = '\0';
  char mod[256];
  module_name(dso, mod, sizeof mod);
  int kernel = dso[0] == '[' && strstr(dso, "kernel");
  if (!strcmp(sym, "[unknown]") || !sym[0]) {
    snprintf(out, n, mod[0] == '[' ? "%s" : "[%s]", mod[0] ? mod : "unknown");
  } else if (kernel) {
    snprintf(out, n, "%s_[k]", sym);
  } else if (strstr(dso, ".so")) {
    snprintf(out, n, "%s (%s)", sym, mod);
  } else {
    snprintf(out, n, "%s", sym);
  }
  for (char *p = out; *p; p++)
    if (*p == ';') *p = ':'; /* ';' separates frames in folded stacks */
  return 1;
}

/* Header "COMM PID[/TID] [CPU] TIME: PERIOD EVENT:": the command is every word before the
 * first all-digit (or digits/digits) word. 0 when the line has no such word. */
static int parse_header(const char *s, char *comm, size_t n) {
  const char *p = s;
  while (*p) {
    const char *w = p;
    while (*p && *p != ' ' && *p != '\t') p++;
    const char *q = w;
    while (q < p && isdigit((unsigned char)*q)) q++;
    if (q < p && *q == '/')
      for (q++; q < p && isdigit((unsigned char)*q);) q++;
    if (w != s && q == p && isdigit((unsigned char)*w)) {
      const char *e = w;
      while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
      snprintf(comm, n, "%.*s", (int)(e - s), s);
      for (char *c = comm; *c; c++)
        if (*c == ';') *c = ':';
      return 1;
    }
    while (*p == ' ' || *p == '\t') p++;
  }
  return 0;
}

/* Emit the sample gathered so far (frames leaf first) as one root-first stack. */
static int flush_sample(opf_folded *f, const char *comm, char **frames, int nf, opf_err *err) {
  if (nf == 0) {
    f->skipped++;
    return OPF_OK;
  }
  size_t len = strlen(comm) + 1;
  for (int i = 0; i < nf; i++) len += strlen(frames[i]) + 1;
  char *st = malloc(len), *p = st;
  if (!st) return opf_err_set(err, OPF_ENOMEM, "out of memory folding stacks");
  p += sprintf(p, "%s", comm);
  for (int i = nf - 1; i >= 0; i--) p += sprintf(p, ";%s", frames[i]);
  int rc = opf_folded_add(f, st, 1, err);
  free(st);
  return rc;
}

#define MAX_FRAMES 512

int opf_fold_perf_script(FILE *in, opf_folded *f, opf_err *err) {
  char *buf = NULL, comm[256] = "";
  size_t cap = 0;
  char *frames[MAX_FRAMES];
  int nf = 0, in_sample = 0, rc = OPF_OK, samples = 0;
  long line = 0;
  for (char *s; !rc && (s = read_line(in, &buf, &cap));) {
    line++;
    if (!*s) { /* a blank line ends a sample */
      if (in_sample) rc = flush_sample(f, comm, frames, nf, err);
      for (int i = 0; i < nf; i++) free(frames[i]);
      nf = in_sample = 0;
      continue;
    }
    if (*s == ' ' || *s == '\t') {
      char name[1024];
      if (!in_sample || !parse_frame(s, name, sizeof name)) {
        rc = opf_err_set(err, OPF_EINVAL, "perf script output, line %ld: unexpected '%.60s'", line, s);
        break;
      }
      if (nf < MAX_FRAMES && !(frames[nf++] = strdup(name))) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
      continue;
    }
    if (*s == '#') continue; /* perf's comment lines */
    if (in_sample) { /* a header right after another sample (no call graph): a one-line sample */
      rc = flush_sample(f, comm, frames, nf, err);
      for (int i = 0; i < nf; i++) free(frames[i]);
      nf = 0;
    }
    if (!parse_header(s, comm, sizeof comm)) {
      rc = opf_err_set(err, OPF_EINVAL, "perf script output, line %ld: not a sample header: '%.60s'", line, s);
      break;
    }
    in_sample = 1;
    samples++;
  }
  if (!rc && in_sample) rc = flush_sample(f, comm, frames, nf, err);
  for (int i = 0; i < nf; i++) free(frames[i]);
  free(buf);
  if (!rc && !samples && line)
    rc = opf_err_set(err, OPF_EINVAL, "perf script output: no samples found");
  return rc;
}

/* ---- the flame graph ---- */

typedef struct fnode {
  const char *name; /* points into a stack string of f (not terminated at ';'): len */
  size_t len;
  int64_t total;
  int parent, child, next, last, depth;
} fnode;

typedef struct ftree {
  fnode *v;
  int n, cap, maxdepth;
} ftree;

static int tree_child(ftree *t, int p, const char *name, size_t len) {
  for (int c = t->v[p].child; c >= 0; c = t->v[c].next)
    if (t->v[c].len == len && !memcmp(t->v[c].name, name, len)) return c;
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 1024;
    fnode *v = realloc(t->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    t->v = v;
    t->cap = cap;
  }
  int c = t->n++;
  t->v[c] = (fnode){name, len, 0, p, -1, -1, -1, t->v[p].depth + 1};
  if (t->v[p].last >= 0) t->v[t->v[p].last].next = c;
  else t->v[p].child = c;
  t->v[p].last = c;
  if (t->v[c].depth > t->maxdepth) t->maxdepth = t->v[c].depth;
  return c;
}

static void color(const char *name, size_t len, char *out, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
  double v1 = (double)(h & 0xffff) / 65535.0, v2 = (double)(h >> 16 & 0xffff) / 65535.0;
  int kernel = len > 4 && !memcmp(name + len - 4, "_[k]", 4);
  int lib = !kernel && len > 0 && (name[len - 1] == ')' || name[0] == '[');
  unsigned char r, g, b; /* flamegraph.pl's palettes: hot (own code), aqua (libraries), orange (kernel) */
  if (kernel) r = (unsigned char)(190 + 65 * v1), g = (unsigned char)(90 + 65 * v1), b = 0;
  else if (lib) r = (unsigned char)(50 + 60 * v1), g = (unsigned char)(165 + 55 * v2), b = (unsigned char)(165 + 55 * v2);
  else r = (unsigned char)(205 + 50 * v2), g = (unsigned char)(230 * v1), b = (unsigned char)(55 * v2);
  snprintf(out, n, "rgb(%u,%u,%u)", r, g, b);
}

#define FG_PAD 10
#define FG_FRAME 16
#define FG_TOP 54
#define FG_FONT_W 7.0

static void esc_n(FILE *o, const char *s, size_t len) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%.*s", (int)(len < sizeof tmp ? len : sizeof tmp - 1), s);
  opf_svg_escape(o, tmp);
}

static const char fg_script[] =
    "var svg, frames, details, matched, W, PAD = 10;\n"
    "function init(evt) {\n"
    "  svg = document.documentElement; frames = document.getElementById('frames');\n"
    "  details = document.getElementById('details').firstChild;\n"
    "  matched = document.getElementById('matched').firstChild;\n"
    "  W = +svg.getAttribute('width') - 2 * PAD;\n"
    "  for (const g of frames.children) {\n"
    "    const r = g.querySelector('rect');\n"
    "    g.dataset.x = r.getAttribute('x'); g.dataset.w = r.getAttribute('width');\n"
    "    g.dataset.y = r.getAttribute('y'); g.dataset.fill = r.getAttribute('fill');\n"
    "    g.onmouseover = function () { details.nodeValue = g.querySelector('title').textContent; };\n"
    "    g.onmouseout = function () { details.nodeValue = ' '; };\n"
    "    g.onclick = function () { zoom(g); };\n"
    "  }\n"
    "}\n"
    "function place(g, x, w) {\n"
    "  const r = g.querySelector('rect'), t = g.querySelector('text');\n"
    "  r.setAttribute('x', x); r.setAttribute('width', w); t.setAttribute('x', x + 3);\n"
    "  const name = g.getAttribute('data-name'), fit = Math.floor((w - 6) / 7);\n"
    "  t.textContent = fit < 3 ? '' : name.length <= fit ? name : name.substring(0, fit - 2) + '..';\n"
    "  g.style.display = ''; g.style.opacity = '';\n"
    "}\n"
    "function zoom(z) {\n"
    "  const x0 = +z.dataset.x, w0 = +z.dataset.w, y0 = +z.dataset.y, s = W / w0, e = 1e-6;\n"
    "  for (const g of frames.children) {\n"
    "    const x = +g.dataset.x, w = +g.dataset.w, y = +g.dataset.y;\n"
    "    if (y <= y0 && x >= x0 - e && x + w <= x0 + w0 + e) place(g, PAD + (x - x0) * s, w * s);\n"
    "    else if (y > y0 && x <= x0 + e && x + w >= x0 + w0 - e) { place(g, PAD, W); g.style.opacity = '0.6'; }\n"
    "    else g.style.display = 'none';\n"
    "  }\n"
    "  document.getElementById('unzoom').style.display = '';\n"
    "}\n"
    "function unzoom() {\n"
    "  for (const g of frames.children) place(g, +g.dataset.x, +g.dataset.w);\n"
    "  document.getElementById('unzoom').style.display = 'none';\n"
    "}\n"
    "function search() {\n"
    "  const term = prompt('Search frames (regular expression); empty clears', '');\n"
    "  if (term === null) return;\n"
    "  const re = term ? new RegExp(term) : null, spans = [];\n"
    "  for (const g of frames.children) {\n"
    "    const hit = re && re.test(g.getAttribute('data-name'));\n"
    "    g.querySelector('rect').setAttribute('fill', hit ? 'rgb(230,0,230)' : g.dataset.fill);\n"
    "    if (hit) spans.push([+g.dataset.x, +g.dataset.x + +g.dataset.w]);\n"
    "  }\n"
    "  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
    "  let sum = 0, end = -1;\n"
    "  for (const s of spans) { if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }\n"
    "    else if (s[1] > end) { sum += s[1] - end; end = s[1]; } }\n"
    "  matched.nodeValue = re ? 'matched: ' + (100 * sum / W).toFixed(1) + '%' : ' ';\n"
    "}\n";

int opf_flamegraph_svg(opf_folded *f, const char *title, int width, char **out, size_t *len, opf_err *err) {
  if (width <= 0) width = 1200;
  if (width < 200 || width > 100000) return opf_err_set(err, OPF_EINVAL, "flame graph width %d out of range (200-100000)", width);
  if (!f->total) return opf_err_set(err, OPF_EINVAL, "no samples to draw");
  sort_stacks(f);
  ftree t = {0};
  t.maxdepth = 0;
  int rc = OPF_OK;
  t.v = malloc(1024 * sizeof *t.v);
  if (!t.v) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  t.cap = 1024;
  t.n = 1;
  t.v[0] = (fnode){"all", 3, 0, -1, -1, -1, -1, 0};
  for (size_t i = 0; i < f->n && !rc; i++) {
    int node = 0;
    t.v[0].total += f->count[i];
    for (const char *s = f->stack[i]; *s;) {
      const char *e = strchr(s, ';');
      size_t l = e ? (size_t)(e - s) : strlen(s);
      if ((node = tree_child(&t, node, s, l)) < 0) {
        rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
        break;
      }
      t.v[node].total += f->count[i];
      s += l + (e != NULL);
    }
  }
  FILE *o = rc ? NULL : open_memstream(out, len);
  if (!rc && !o) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  if (rc) {
    free(t.v);
    return rc;
  }
  int height = FG_TOP + (t.maxdepth + 1) * FG_FRAME + 30;
  double scale = (double)(width - 2 * FG_PAD) / (double)t.v[0].total;
  fprintf(o, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
             "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
             "xmlns=\"http://www.w3.org/2000/svg\" onload=\"init(evt)\">\n",
          width, height, width, height);
  fprintf(o, "<style>text { font-family: monospace; font-size: 12px; fill: #000; } "
             "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; } "
             ".btn { cursor: pointer; fill: #1f4e9c; }</style>\n");
  fprintf(o, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n", fg_script);
  fprintf(o, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f4\"/>\n", width, height);
  fprintf(o, "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" style=\"font-size:16px\">", width / 2);
  opf_svg_escape(o, title && *title ? title : "Flame graph");
  fprintf(o, "</text>\n<text x=\"%d\" y=\"40\">%" PRId64 " samples; hover for counts, click a frame to zoom</text>\n",
          FG_PAD, t.v[0].total);
  fprintf(o, "<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"40\" style=\"display:none\" onclick=\"unzoom()\">Reset zoom</text>\n",
          FG_PAD + 420);
  fprintf(o, "<text id=\"searchbtn\" class=\"btn\" x=\"%d\" y=\"40\" text-anchor=\"end\" onclick=\"search()\">Search</text>\n",
          width - FG_PAD);
  fprintf(o, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n", width - FG_PAD, height - 10);
  fprintf(o, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n<g id=\"frames\">\n", FG_PAD, height - 10);
  /* Depth-first: each child starts where its previous sibling ended. */
  double *x = malloc((size_t)t.n * sizeof *x);
  if (!x) rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < t.n; i++) {
    const fnode *nd = &t.v[i];
    if (i == 0) x[i] = FG_PAD;
    if (nd->child >= 0) {
      double cx = x[i];
      for (int c = nd->child; c >= 0; c = t.v[c].next) {
        x[c] = cx;
        cx += (double)t.v[c].total * scale;
      }
    }
    double w = (double)nd->total * scale;
    if (w < 0.1) continue;
    double y = FG_TOP + (double)(t.maxdepth - nd->depth) * FG_FRAME;
    char fill[32];
    if (i == 0) snprintf(fill, sizeof fill, "rgb(200,200,200)");
    else color(nd->name, nd->len, fill, sizeof fill);
    fprintf(o, "<g class=\"f\" data-name=\"");
    esc_n(o, nd->name, nd->len);
    fprintf(o, "\"><title>");
    esc_n(o, nd->name, nd->len);
    fprintf(o, " (%" PRId64 " samples, %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
            nd->total, 100.0 * (double)nd->total / (double)t.v[0].total, x[i], y, w, FG_FRAME - 1, fill);
    int fit = (int)((w - 6) / FG_FONT_W);
    char label[1024] = "";
    if (fit >= 3) {
      if ((int)nd->len <= fit) snprintf(label, sizeof label, "%.*s", (int)nd->len, nd->name);
      else snprintf(label, sizeof label, "%.*s..", fit - 2 < (int)sizeof label - 3 ? fit - 2 : (int)sizeof label - 3, nd->name);
    }
    fprintf(o, "<text x=\"%.2f\" y=\"%.1f\">", x[i] + 3, y + FG_FRAME - 4.5);
    opf_svg_escape(o, label);
    fprintf(o, "</text></g>\n");
  }
  fprintf(o, "</g>\n</svg>\n");
  free(x);
  free(t.v);
  if (fclose(o) && !rc) rc = opf_err_set(err, OPF_ENOMEM, "cannot render the flame graph");
  if (rc) {
    free(*out);
    *out = NULL;
  }
  return rc;
}

size_t opf_flamegraph_frames(const char *svg) {
  size_t n = 0;
  for (const char *p = svg; (p = strstr(p, "<g class=\"f\"")); p++) n++;
  return n;
}

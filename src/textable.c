/* textable.c: aligned plain-text / Markdown tables (see textable.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "textable.h"

struct opf_textable {
  int ncols, nrows, cap;
  char **head;
  int *right;
  char **cells; /* nrows * ncols */
};

opf_textable *opf_textable_new(int ncols) {
  opf_textable *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->ncols = ncols;
  t->head = calloc((size_t)ncols, sizeof *t->head);
  t->right = calloc((size_t)ncols, sizeof *t->right);
  if (!t->head || !t->right) {
    opf_textable_free(t);
    return NULL;
  }
  return t;
}

void opf_textable_free(opf_textable *t) {
  if (!t) return;
  for (int i = 0; i < t->ncols; i++) free(t->head ? t->head[i] : NULL);
  for (int i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
  free(t->cells);
  free(t->head);
  free(t->right);
  free(t);
}

void opf_textable_header(opf_textable *t, int col, const char *name, int right) {
  free(t->head[col]);
  t->head[col] = strdup(name);
  t->right[col] = right;
}

int opf_textable_row(opf_textable *t) {
  if (t->nrows == t->cap) {
    int cap = t->cap ? t->cap * 2 : 64;
    char **c = realloc(t->cells, sizeof *c * (size_t)cap * (size_t)t->ncols);
    if (!c) return -1;
    t->cells = c;
    t->cap = cap;
  }
  memset(t->cells + (size_t)t->nrows * (size_t)t->ncols, 0, sizeof *t->cells * (size_t)t->ncols);
  t->nrows++;
  return 0;
}

void opf_textable_cell(opf_textable *t, int col, const char *fmt, ...) {
  if (!t->nrows || col < 0 || col >= t->ncols) return;
  char **cell = &t->cells[(size_t)(t->nrows - 1) * (size_t)t->ncols + (size_t)col];
  free(*cell);
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(cell, fmt, ap) < 0) *cell = NULL;
  va_end(ap);
}

static int used(const opf_textable *t, int c) {
  for (int r = 0; r < t->nrows; r++) {
    const char *s = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
    if (s && *s) return 1;
  }
  return 0;
}

void opf_textable_print(const opf_textable *t, FILE *f, int markdown) {
  int *w = calloc((size_t)t->ncols, sizeof *w);
  int *on = calloc((size_t)t->ncols, sizeof *on);
  if (!w || !on) goto out;
  for (int c = 0; c < t->ncols; c++) {
    on[c] = t->head[c] && used(t, c);
    if (!on[c]) continue;
    w[c] = (int)strlen(t->head[c]);
    for (int r = 0; r < t->nrows; r++) {
      const char *s = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
      int l = s ? (int)strlen(s) : 0;
      if (l > w[c]) w[c] = l;
    }
  }
  int last = -1;
  for (int c = 0; c < t->ncols; c++)
    if (on[c]) last = c;
  for (int r = -1; r < t->nrows; r++) {
    int first = 1;
    for (int c = 0; c < t->ncols; c++) {
      if (!on[c]) continue;
      const char *s = r < 0 ? t->head[c] : t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
      if (!s) s = "";
      if (markdown) fprintf(f, "%s %-*s", first ? "|" : " |", w[c], s);
      else if (t->right[c] && r >= 0) fprintf(f, "%s%*s", first ? "" : "  ", w[c], s);
      else fprintf(f, "%s%-*s", first ? "" : "  ", c == last ? 0 : w[c], s);
      first = 0;
    }
    fputs(markdown ? " |\n" : "\n", f);
    if (r < 0 && markdown) {
      first = 1;
      for (int c = 0; c < t->ncols; c++) {
        if (!on[c]) continue;
        fprintf(f, "%s", first ? "|" : "|");
        for (int k = 0; k < w[c] + 2 - (t->right[c] ? 1 : 0); k++) fputc('-', f);
        if (t->right[c]) fputc(':', f);
        first = 0;
      }
      fputs("|\n", f);
    }
  }
out:
  free(w);
  free(on);
}

/* textable.h: aligned plain-text and Markdown tables built cell by cell (used by the table
 * and Markdown reports and by `opperf list`). Internal to opperf. */
#ifndef OPPERF_TEXTABLE_H
#define OPPERF_TEXTABLE_H
#include <stdio.h>

typedef struct opf_textable opf_textable;
opf_textable *opf_textable_new(int ncols);
void opf_textable_free(opf_textable *t);
/* Header cell text; right = 1 right-aligns the column (numbers). */
void opf_textable_header(opf_textable *t, int col, const char *name, int right);
/* Start a new row, then set cells (printf-style); unset cells print empty. */
int opf_textable_row(opf_textable *t);
void opf_textable_cell(opf_textable *t, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Drop columns whose cells are all empty (keeps headers of non-empty ones). */
void opf_textable_print(const opf_textable *t, FILE *f, int markdown);
#endif

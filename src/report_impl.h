/* report_impl.h: the emitter object shared by the report back-ends (report_*.c). Each
 * back-end renders into an in-memory stream; report.c writes it out atomically at the end. */
#ifndef OPPERF_REPORT_IMPL_H
#define OPPERF_REPORT_IMPL_H
#include <stdio.h>

#include "opperf/metrics.h"
#include "opperf/report.h"

typedef struct emitter_ops {
  int (*begin)(opf_emitter *e);
  int (*record)(opf_emitter *e, const opf_result *r);
  int (*end)(opf_emitter *e); /* render everything still pending into e->out */
  void (*release)(opf_emitter *e);
  int stream; /* writes straight to the destination as records arrive (JSON lines) */
} emitter_ops;

struct opf_emitter {
  const emitter_ops *ops;
  opf_format fmt;
  char *path;                /* NULL: stdout */
  const opf_context *ctx;
  FILE *out;                 /* memory stream */
  char *buf;
  size_t len;
  void *priv;
};

extern const emitter_ops opf_emit_table, opf_emit_md, opf_emit_json, opf_emit_csv, opf_emit_jsonl,
    opf_emit_gbench, opf_emit_trace;

/* Shared by back-ends: input shapes "1024x1024, 1x1024". */
void opf_result_inputs(const opf_result *r, char *buf, size_t n);
/* --profile (report_profile.c): the hottest-functions section after a table, and the JSON object. */
void opf_profile_print(FILE *f, const opf_result *rows, int n, int md);
struct cJSON *opf_profile_json(const opf_profile_summary *p);
#endif

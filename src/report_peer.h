/* report_peer.h: the peer columns (--baseline torch|numpy) shared by the report back-ends:
 * table/Markdown cells and the summary after the table, the JSON "peer" object and the
 * CSV verdict. Internal to opperf; report_*.c call these only when a result carries a peer. */
#ifndef OPPERF_REPORT_PEER_H
#define OPPERF_REPORT_PEER_H
#include <stdio.h>

#include <cjson/cJSON.h>

#include "opperf/peer.h"
#include "textable.h"

/* Cells of columns col (peer median), col + 1 (ours/peer) and col + 2 (agreement). */
void opf_peer_cells(opf_textable *t, int col, const opf_result *r);
/* Headers of those three columns. */
void opf_peer_headers(opf_textable *t, int col);
/* The legend, the per-category geometric means, the ten worst ratios and the --check
 * mismatches, after the table (nothing when no row has a peer). */
void opf_peer_summary(FILE *f, const opf_result *rows, int n, int md);
/* The "peer" object of a JSON result. */
void opf_peer_json(cJSON *o, const opf_result *r);
/* The agreement verdict of a result's --check: "ok", "MISMATCH", or "" when not checked. */
const char *opf_peer_verdict(const opf_peer_result *p);
#endif

/* report_peer.c: how the reports show a peer (--baseline torch|numpy): the peer, ours/peer
 * and agreement columns of the table and Markdown report, the summary after the table
 * (legend, per-category geometric means, worst ratios, mismatches) and the JSON object. */
#include <string.h>

#include "report_impl.h"
#include "report_peer.h"

const char *opf_peer_verdict(const opf_peer_result *p) {
  if (!p || !p->checked || !p->check.done) return "";
  return p->check.agree ? "ok" : "MISMATCH";
}

void opf_peer_headers(opf_textable *t, int col) {
  opf_textable_header(t, col, "peer", 1);
  opf_textable_header(t, col + 1, "ours/peer", 1);
  opf_textable_header(t, col + 2, "agree (max abs/rel err)", 0);
}

void opf_peer_cells(opf_textable *t, int col, const opf_result *r) {
  const opf_peer_result *p = r->peer;
  if (!p) return;
  char b[32];
  if (opf_peer_ok(p)) opf_textable_cell(t, col, "%s", opf_fmt_time(p->median, b, sizeof b));
  else if (opf_peer_no_equivalent(p)) opf_textable_cell(t, col, "no equivalent");
  else opf_textable_cell(t, col, "error");
  if (p->ratio > 0) opf_textable_cell(t, col + 1, "%.3g", p->ratio);
  if (p->checked && p->check.done)
    opf_textable_cell(t, col + 2, "%s (%.1e/%.1e)", opf_peer_verdict(p), p->check.max_abs, p->check.max_rel);
  else if (p->checked && opf_peer_ok(p))
    opf_textable_cell(t, col + 2, "not checked%s%s", p->check.what[0] ? ": " : "", p->check.what);
}

static const char *pass_label(const opf_result *r, char *b, size_t n) {
  char in[160];
  opf_result_inputs(r, in, sizeof in);
  snprintf(b, n, "%s %s %s %s%s%s", r->op, opf_dtype_name(r->dtype), opf_pass_name(r->pass), in,
           r->params[0] ? " " : "", r->params);
  return b;
}

void opf_peer_summary(FILE *f, const opf_result *rows, int n, int md) {
  const opf_peer_result *any = NULL;
  for (int i = 0; i < n && !any; i++) any = rows[i].peer;
  if (!any) return;
  const char *li = md ? "- " : "  ";
  fprintf(f, "\n%speer: %s via scripts/opperf-peer.py on the same inputs and settings; ours/peer > 1 means "
             "opperf is slower, < 1 faster%s\n", md ? "**" : "", any->library, md ? "**" : "");
  if (md) fputc('\n', f);
  opf_peer_geomean g[64];
  int ng = opf_peer_geomeans(rows, n, g, 64);
  if (ng) {
    opf_textable *t = opf_textable_new(5);
    if (t) {
      opf_textable_header(t, 0, "category", 0);
      opf_textable_header(t, 1, "cases", 1);
      opf_textable_header(t, 2, "geomean ours/peer", 1);
      opf_textable_header(t, 3, "min", 1);
      opf_textable_header(t, 4, "max", 1);
      for (int k = 0; k < ng; k++) {
        if (opf_textable_row(t)) break;
        opf_textable_cell(t, 0, "%s", g[k].category);
        opf_textable_cell(t, 1, "%d", g[k].n);
        opf_textable_cell(t, 2, "%.3g", g[k].geomean);
        opf_textable_cell(t, 3, "%.3g", g[k].min);
        opf_textable_cell(t, 4, "%.3g", g[k].max);
      }
      opf_textable_print(t, f, md);
      opf_textable_free(t);
    }
  }
  int worst[10], nw = opf_peer_worst(rows, n, worst, 10), noeq = 0, err = 0, bad = 0;
  char b[512];
  if (nw) fprintf(f, "\n%sworst ratios (opperf slowest relative to the peer):\n", md ? "" : "");
  if (nw && md) fputc('\n', f);
  for (int k = 0; k < nw; k++)
    fprintf(f, "%s%.3g  %s\n", li, rows[worst[k]].peer->ratio, pass_label(&rows[worst[k]], b, sizeof b));
  for (int i = 0; i < n; i++) {
    const opf_peer_result *p = rows[i].peer;
    if (!p) continue;
    noeq += opf_peer_no_equivalent(p);
    err += !opf_peer_ok(p) && !opf_peer_no_equivalent(p);
    bad += p->checked && p->check.done && !p->check.agree;
  }
  if (noeq) fprintf(f, "\n%d case passes have no %s equivalent (the status column says why)\n", noeq, any->library);
  if (err) {
    fprintf(f, "\n%d case passes failed on the peer side:\n", err);
    for (int i = 0; i < n; i++) {
      const opf_peer_result *p = rows[i].peer;
      if (p && !opf_peer_ok(p) && !opf_peer_no_equivalent(p))
        fprintf(f, "%s%s: %s\n", li, pass_label(&rows[i], b, sizeof b), p->status);
    }
  }
  if (bad) {
    fprintf(f, "\n%d case passes DISAGREE with the peer:\n", bad);
    for (int i = 0; i < n; i++) {
      const opf_peer_result *p = rows[i].peer;
      if (p && p->checked && p->check.done && !p->check.agree)
        fprintf(f, "%s%s: %s (max abs err %.3g, max rel err %.3g; atol %.3g, rtol %.3g)\n", li,
                pass_label(&rows[i], b, sizeof b), p->check.what, p->check.max_abs, p->check.max_rel,
                p->check.atol, p->check.rtol);
    }
  }
}

void opf_peer_json(cJSON *o, const opf_result *r) {
  const opf_peer_result *p = r->peer;
  if (!p) return;
  cJSON *j = cJSON_AddObjectToObject(o, "peer");
  cJSON_AddStringToObject(j, "library", p->library);
  cJSON_AddStringToObject(j, "name", p->name);
  cJSON_AddStringToObject(j, "status", p->status);
  if (opf_peer_ok(p)) {
    cJSON_AddNumberToObject(j, "median", p->median);
    cJSON_AddNumberToObject(j, "samples", p->n_samples);
    cJSON_AddNumberToObject(j, "calls_per_sample", (double)p->batch);
  }
  if (p->ratio > 0) cJSON_AddNumberToObject(j, "ratio", p->ratio);
  if (!p->checked) return;
  cJSON *c = cJSON_AddObjectToObject(j, "check");
  cJSON_AddBoolToObject(c, "done", p->check.done);
  if (p->check.done) {
    cJSON_AddBoolToObject(c, "agree", p->check.agree);
    cJSON_AddNumberToObject(c, "tensors", p->check.n_tensors);
    cJSON_AddNumberToObject(c, "max_abs_err", p->check.max_abs);
    cJSON_AddNumberToObject(c, "max_rel_err", p->check.max_rel);
    cJSON_AddNumberToObject(c, "atol", p->check.atol);
    cJSON_AddNumberToObject(c, "rtol", p->check.rtol);
  }
  if (p->check.what[0]) cJSON_AddStringToObject(c, "detail", p->check.what);
}

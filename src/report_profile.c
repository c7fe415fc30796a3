/* report_profile.c: the --profile part of the reports: a "hottest functions" section after the
 * table (text and Markdown), one per profiled case and pass, and the "profile" object of a
 * JSON result. Unresolved addresses and lost samples are always shown, never hidden. */
#include <cjson/cJSON.h>
#include <string.h>

#include "report_impl.h"

static const char *func_label(const opf_profile_func *f, char *buf, size_t n) {
  if (f->in_lib && f->resolved) snprintf(buf, n, "%s (%s)", f->name, f->module);
  else snprintf(buf, n, "%s", f->name);
  return buf;
}

void opf_profile_print(FILE *f, const opf_result *rows, int n, int md) {
  int any = 0;
  for (int k = 0; k < n; k++) {
    const opf_result *r = &rows[k];
    const opf_profile_summary *p = &r->profile;
    if (r->status != OPF_ST_OK || !p->event[0]) continue;
    if (!any++)
      fprintf(f, "\n%shottest functions (--profile: %s samples at %d Hz per thread, user space, "
                 "measured samples only; self: in the function, total: anywhere on the stack)%s\n",
              md ? "**" : "", p->event, p->hz, md ? "**" : "");
    char in[256], lbl[200];
    opf_result_inputs(r, in, sizeof in);
    double unres = p->samples ? 100.0 * (double)p->unresolved / (double)p->samples : 0;
    int alt = strcmp(r->impl, "native") != 0;
    fprintf(f, "\n%s%s%s%s%s %s %s %s%s%s: %lld samples on %d thread%s, %lld lost, %lld throttled, "
               "%lld unresolved (%.1f%%)\n",
            md ? "- " : "", r->op, alt ? " [" : "", alt ? r->impl : "", alt ? "]" : "",
            opf_pass_name(r->pass), opf_dtype_name(r->dtype), in, r->params[0] ? " " : "",
            r->params, (long long)p->samples, p->threads, p->threads == 1 ? "" : "s", (long long)p->lost,
            (long long)p->throttled, (long long)p->unresolved, unres);
    if (!p->n_funcs) continue;
    if (md) fprintf(f, "\n| self | total | function |\n|---:|---:|:---|\n");
    else fprintf(f, "  %6s  %6s  %s\n", "self", "total", "function");
    for (int i = 0; i < p->n_funcs; i++) {
      const opf_profile_func *fn = &p->funcs[i];
      func_label(fn, lbl, sizeof lbl);
      if (md) fprintf(f, "| %.1f%% | %.1f%% | `%s` |\n", 100 * fn->self, 100 * fn->total, lbl);
      else fprintf(f, "  %5.1f%%  %5.1f%%  %s\n", 100 * fn->self, 100 * fn->total, lbl);
    }
  }
}

cJSON *opf_profile_json(const opf_profile_summary *p) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "event", p->event);
  cJSON_AddNumberToObject(o, "frequency_hz", p->hz);
  cJSON_AddNumberToObject(o, "threads", p->threads);
  cJSON_AddNumberToObject(o, "samples", (double)p->samples);
  cJSON_AddNumberToObject(o, "lost", (double)p->lost);
  cJSON_AddNumberToObject(o, "throttled", (double)p->throttled);
  cJSON_AddNumberToObject(o, "unresolved", (double)p->unresolved);
  cJSON *fs = cJSON_AddArrayToObject(o, "functions");
  for (int i = 0; i < p->n_funcs; i++) {
    const opf_profile_func *fn = &p->funcs[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", fn->name);
    cJSON_AddStringToObject(j, "module", fn->module);
    cJSON_AddNumberToObject(j, "self", fn->self);
    cJSON_AddNumberToObject(j, "total", fn->total);
    if (!fn->resolved) cJSON_AddFalseToObject(j, "resolved");
    cJSON_AddItemToArray(fs, j);
  }
  return o;
}

/* htmlreport.h: `opperf report`: one self-contained HTML page (table, rooflines, counters,
 * sweeps, trends, peer ratios) from JSON files that `opperf run` and `opperf sweep` wrote; and the
 * trend model behind its trend lines (one median and CI per case per run), which any source of
 * runs can fill (the JSON files here; a results store later). */
#ifndef OPPERF_HTMLREPORT_H
#define OPPERF_HTMLREPORT_H

#include <stddef.h>

#include "opperf/error.h"

struct cJSON;

/* One case in one run: median time per call and its 95% CI (seconds). present 0: the case was
 * not in that run or has no time (failed, skipped). */
typedef struct opf_trend_point {
  int present;
  double median, lo, hi; /* lo/hi 0 when the run recorded no CI */
  int change;            /* 1: a change point was detected at this run (input's "changes") */
} opf_trend_point;

typedef struct opf_trend_case {
  char *key;   /* "op|impl|spec|params|dtype|pass": how runs are matched */
  char *label; /* "op dtype pass spec" for people */
  opf_trend_point *pts; /* [n_runs], oldest first */
} opf_trend_case;

typedef struct opf_trend {
  int n_runs;
  char **runs; /* label of each run, oldest first */
  int n_cases;
  opf_trend_case *cases;
} opf_trend;

/* The regression of one case between the last two runs: cur / prev median. */
typedef struct opf_trend_reg {
  int c;          /* index in cases */
  double ratio;   /* > 1: slower */
  int separated;  /* the two 95% CIs do not overlap */
} opf_trend_reg;

/* The case key of a run record (object of "results"): written to buf (NUL-terminated,
 * truncated to n). */
void opf_report_case_key(const struct cJSON *rec, char *buf, size_t n);

/* Fill t from n run documents (parsed `opperf run --format json`), oldest first; labels[i]
 * names run i. A case's change points come from a top-level "changes" array of any run:
 * objects {"key": CASE_KEY, "run": LABEL} (or the case's op/impl/spec/params/dtype/pass fields
 * instead of "key"; "run" may also be the index of the run). */
int opf_trend_from_runs(struct cJSON *const *runs, const char *const *labels, int n, opf_trend *t,
                        opf_err *err);
void opf_trend_free(opf_trend *t);
/* The trends of a results store (src/store_trend.c): every case matching selector (a glob; NULL:
 * all), per machine (only machine when given; all_machines joins them), over the store's runs,
 * oldest first, change points marked. OPF_EINVAL when nothing matches; store errors as
 * opf_store_open. Free with opf_trend_free. */
int opf_trend_from_store(const char *url, const char *selector, const char *machine, int all_machines,
                         opf_trend *t, opf_err *err);
/* The cases present in both of the last two runs, slowest change first (ratio descending);
 * returns how many were written to out (at most max). */
int opf_trend_regressions(const opf_trend *t, opf_trend_reg *out, int max);

/* Read and check one input file: a run report (schema_version, context, results) or a sweep
 * (kind "sweep", points). *is_sweep says which. OPF_EINVAL with a one-line message for a missing
 * file, a file that is not an opperf JSON report, or an unknown schema version. */
int opf_report_load(const char *path, struct cJSON **doc, int *is_sweep, opf_err *err);

typedef struct opf_html_opts {
  const char *title;        /* NULL: "opperf report" */
  const opf_trend *trend;   /* the trend to show (e.g. from a results store); NULL: from the
                               input runs when there are two or more */
} opf_html_opts;

/* Render the page from the input files (runs in order, oldest first, and sweeps in any order)
 * into a malloc'd buffer (*html, *len). */
int opf_html_render(const char *const *paths, int n, const opf_html_opts *o, char **html, size_t *len,
                    opf_err *err);
/* Render and write to out_path atomically (a temporary file renamed: no partial file). */
int opf_html_report(const char *const *paths, int n, const opf_html_opts *o, const char *out_path,
                    opf_err *err);

/* JSON text made safe inside an HTML <script> element: '<', '>' and '&' written as \u003c,
 * \u003e and \u0026 (they only occur in JSON strings, where the escapes mean the same), and
 * U+2028/U+2029 escaped. Returns a malloc'd string, NULL when out of memory. */
char *opf_json_for_script(const char *json);

/* The run JSON's "machine" object: the file `opperf machine` cached (its ceilings as measured,
 * whatever levels it has), parsed, plus its path as "file"; NULL when there is none or it does
 * not load (another CPU, malformed). */
struct cJSON *opf_machine_file_json(void);

#endif

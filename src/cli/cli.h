/* cli.h: shared pieces of the `opperf` executable: the subcommand signature, error printing
 * (the only place that prints library errors) and exit codes. */
#ifndef OPPERF_CLI_H
#define OPPERF_CLI_H

#include "opperf/opperf.h"

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

typedef int (*cli_cmd_fn)(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_describe(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_machine(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_history(int argc, char **argv); /* results store: cmd_history.c */
int cmd_merge(int argc, char **argv);   /* shard reports: cmd_merge.c */
int cmd_report(int argc, char **argv); /* cmd_report.c */

/* The comparison report of two JSON reports (cmd_compare.c); returns the exit status. */
struct opf_cmp_opts;
int cli_compare_print(const char *base, const char *cur, const struct opf_cmp_opts *o, int all,
                      const char *fmt, const char *out);

/* Print "opperf: <message>" to stderr and return EXIT_USAGE. */
/* `events --explain topdown [--pmu MODEL]` (explain.c): LIBPFM_ENCODE_INACTIVE must be set
 * before libpfm4 initialises. Returns the exit code. */
int cli_explain_topdown(const char *what, const char *pmu);
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A comma-separated option value with no empty item ("", "a,,b", "a," are refused): 0, or
 * prints the usage error naming opt and returns EXIT_USAGE. */
int cli_check_list(const char *list, const char *opt);
/* Exit status for a library error code: bad input of any kind is a usage error (2). */
int cli_status(int code);
/* "unknown operator 'ad'; did you mean 'add'?" */
int cli_unknown_op(const char *name);
/* Operators matching a name, a category (or category prefix such as "nn") or a glob. */
int cli_match_ops(const char *pattern, const opf_op **out, int max, int *n);
/* Strict number parsing: 1 on success. */
int cli_parse_double(const char *s, double *v);
int cli_parse_int(const char *s, long long *v);
/* A relative change: "5%" or "0.05" (>= 0 and below 100); 0 when malformed. */
int cli_parse_fraction(const char *s, double *v);
/* --pass LIST (fwd, bwd, both) as a mask of 1 << OPF_PASS_*; prints the usage error and
 * returns 2 when malformed, else 0. */
int cli_parse_passes(const char *list, int *mask);
/* A non-negative number of seconds (at most 1e6) for option opt; usage error (2) otherwise. */
int cli_parse_seconds(const char *opt, const char *v, double *out);
/* "opperf ARG..." for the context block. */
void cli_join_argv(int argc, char **argv, char *buf, size_t n);
/* Verbose mode (-v, OPPERF_VERBOSE=1): is the environment asking for it? */
int cli_verbose_env(void);
/* One machine-readable line per measured case pass on stderr (documented in opperf(1)):
 * opperf_verbose,CMD,OP,IMPL,INPUTS,DTYPE,PASS,STATUS,key=value,... */
void cli_verbose_line(const char *cmd, const opf_result *r, const opf_settings *s);
/* Does the category match the filter (exact, or prefix followed by '.')? */
int cli_category_matches(const char *category, const char *filter);

/* SIGINT/SIGTERM (run, sweep): the first sets cli_stop_requested (the command stops after the
 * current case and writes what it has, exit 130); the second stops at once, except when
 * isolating (the isolated loop kills its child itself). */
#include <signal.h>
extern volatile sig_atomic_t cli_stop_requested;
void cli_stop_install(int isolating);

/* The measured-region hooks of a run (src/cli/region.c): whatever the back-end installed in
 * s->hooks (callgrind's client requests) first, then perf record control (--perf-control SPEC
 * or $OPPERF_PERF_CONTROL), then any the caller adds to chain. */
#include "opperf/perfctl.h"
typedef struct cli_region {
  opf_hook_chain chain;
  opf_region_hooks combined;
  opf_perfctl perf;
  int perf_on;
} cli_region;
/* spec NULL: $OPPERF_PERF_CONTROL if set. Opens the perf channels; prints the error and
 * returns 2 when the spec is malformed or perf is not listening, else 0. */
int cli_region_setup(cli_region *r, opf_settings *s, const char *perf_spec);
/* Point s->hooks at the chain (after every member is added). */
void cli_region_install(cli_region *r, opf_settings *s);
/* Closes the perf channels; prints one line when a perf command failed during the run. */
void cli_region_finish(cli_region *r);

/* Plugins and implementations (src/cli/plugin_cli.c). --plugin PATH: load it (no-op when loaded);
 * prints the error and returns 2 when the plugin is refused, else 0. */
int cli_plugin_load(const char *path);
#define CLI_IMPLS_ALL (~0u)
/* Without --impl: every implementation but materialize (named, or with all, it runs too). */
#define CLI_IMPLS_DEFAULT (~(1u << OPF_IMPL_MATERIALIZE))
/* --impl LIST (native, unfused, materialize, all, a plugin's implementation name) as a mask of 1 << id;
 * prints the usage error and returns 2 for an unknown name. */
int cli_impls_parse(const char *list, unsigned *mask);
/* The mask without --impl: every implementation but the built-in alternatives (OPPERF_IMPL,
 * e.g. conv2d's im2col), which run only when named or with all. */
unsigned cli_impls_default(void);
/* The implementations of op a run with mask measures (op's own kernels when none applies). */
unsigned cli_impls_for(const opf_op *op, unsigned mask);

/* Custom cases from a JSON config file: [{"op": ..., "inputs": {...}, "params": {...},
 * "dtype": ...}, ...] or {"cases": [...]}. Each case becomes (op, dtype, spec). */
typedef struct cli_case {
  const opf_op *op;
  int dtype;          /* -1: use the run's dtypes */
  char spec[512];
} cli_case;
int cli_config_load(const char *path, cli_case **cases, int *n, opf_err *err);


/* ---- progress.c: progress, per-operator lines and the end-of-run summary (stderr) ---------- */
typedef struct cli_progress_item {
  double key;
  char what[288];
} cli_progress_item;
typedef struct cli_progress {
  int total, done, tty, long_run;
  double t0, last_line;
  char op[64];                 /* the operator whose records are coming in */
  int op_n, op_ok, op_bad;
  double op_min, op_max;
  int records, skipped, errors;
  int n_slow, n_low, n_err;
  cli_progress_item slow[5], low[5], err[5];
} cli_progress;
void cli_progress_start(cli_progress *p, int total, int tty);
/* Before a case of `passes` case passes: redraw (terminal) or a line every few seconds. */
void cli_progress_case(cli_progress *p, const char *op, const char *dtype, int passes);
/* After each record: per-operator line when the operator changes, summary bookkeeping. */
void cli_progress_result(cli_progress *p, const opf_result *r);
/* The last operator's line and, for a long run, the summary naming the report files. */
void cli_progress_finish(cli_progress *p, char *const *paths, int n_paths);

/* The OpenBLAS kernel (src/cli/blas.c, opperf/blaskernel.h). Save the command's arguments
 * before option parsing tokenises them; then cli_blas_setup(request, exec_ok): request is
 * --blas-kernel's value (NULL: $OPPERF_BLAS_KERNEL, else "auto"). When OpenBLAS's core is below
 * the CPU (or NAME differs from it) and exec_ok, the command re-executes itself with
 * OPENBLAS_CORETYPE set and does not return; otherwise returns 0, or prints the error and
 * returns 2 for a bad request. */
#include <stdio.h>
void cli_blas_save_args(int argc, char **argv);
int cli_blas_setup(const char *request, int exec_ok);
/* Fill the context's BLAS core fields from what cli_blas_setup decided (after collect). */
void cli_blas_context(opf_context *ctx);
/* `opperf machine` / `opperf events`: one line on f when OpenBLAS's core is below the CPU. */
void cli_blas_mismatch_print(FILE *f);

#endif

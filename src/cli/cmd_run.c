/* cmd_run.c: `opperf run [OP|CATEGORY|GLOB ...]`: builds the list of cases (default shape sets,
 * custom --input/--param cases or a --config file), validates all of them before measuring
 * anything (bad input exits 2 and no output file is touched), measures every case and pass,
 * and writes the requested reports. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_backend.h" /* --backend callgrind */
#include "isolate.h" /* --isolate, --timeout */
#include "cli_peer.h"    /* --baseline torch|numpy, --check */
#include "profile_cli.h" /* --profile */
#include "opperf/abtest.h"
#include "store_cli.h"   /* --store, --shard */
#include "opperf/compare.h"
#include "cli.h"
#include "opts.h"

#define MAX_ITEMS 64
#define MAX_OUTPUTS 8

typedef struct run_case {
  opf_case c;
  char set[16];
  int user; /* built from the user's inputs/params/config: its errors are usage errors */
} run_case;

typedef struct run_opts {
  opf_settings s;
  const char *sets;
  const char *dtypes;
  const char *passes;
  int passes_explicit;
  const char *inputs[MAX_ITEMS];
  int n_inputs;
  const char *params[MAX_ITEMS];
  int n_params;
  const char *config;
  const char *output;
  int n_out;
  opf_format fmt[MAX_OUTPUTS];
  const char *fmt_path[MAX_OUTPUTS];
  int dry_run;
  int random_shapes;      /* --random-shapes N: N drawn cases per operator instead of the sets */
  const char *save_baseline, *compare_baseline, *baseline_dir;
  double threshold;       /* --compare-baseline: smallest change that counts */
  int isolate;            /* -1: default (on for runs of several operators), 0 off, 1 on */
  double timeout;         /* --timeout: seconds per case (isolated), 0: none */
  cli_backend_kind backend; /* --backend: src/cli/backend.c */
  const char *metric;     /* --metric: what --compare-baseline compares (time by default) */
  int reps;               /* --repetitions: independent measurements per case, merged */
  unsigned impls;         /* --impl: mask of 1 << implementation id (default all but materialize) */
  const char *impl_list;  /* --impl as given: parsed once every --plugin is loaded */
  int verbose;            /* -v / OPPERF_VERBOSE: one opperf_verbose line per case pass */
  const char *perf_ctl;   /* --perf-control SPEC (NULL: $OPPERF_PERF_CONTROL) */
  int peer_lib, peer_check; /* --baseline torch|numpy (-1: none), --check */
  cli_profile prof;       /* --profile, --profile-*: src/cli/profile_cli.c */
  const char *blas_kernel; /* --blas-kernel auto|native|NAME (NULL: $OPPERF_BLAS_KERNEL) */
  int interleave;         /* --interleave: --impl A,B measured in paired rounds (src/abtest.c) */
  int impl_a, impl_b;     /* ... the two implementations, in the order given */
  cli_store store;        /* --store, --shard: src/cli/store_cli.c */
} run_opts;

static int parse_dtypes(const char *list, unsigned *mask) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", list);
  *mask = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!strcmp(t, "all")) {
      *mask = OPF_DT_ALL | OPF_DT_BOOL;
      continue;
    }
    int d = opf_dtype_parse(t);
    if (d < 0) return cli_usage_error("unknown dtype '%s' (use float32, float64, int32, int64, bool or all)", t);
    *mask |= OPF_DT_BIT(d);
  }
  return 0;
}

static const char *known_sets[] = {"standard", "skewed", "small", "large", "huge", "test", NULL};

static int check_sets(const char *list) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int ok = !strcmp(t, "all");
    for (int i = 0; known_sets[i]; i++) ok |= !strcmp(t, known_sets[i]);
    if (!ok) return cli_usage_error("unknown shape set '%s' (use standard, skewed, small, large, huge, test or all)", t);
  }
  return 0;
}

static int set_selected(const char *list, const char *set) {
  size_t l = strlen(set);
  for (const char *p = list; *p;) {
    size_t k = strcspn(p, ",");
    if ((k == l && !strncmp(p, set, l)) || (k == 3 && !strncmp(p, "all", 3) && strcmp(set, "huge")))
      return 1;
    p += k + (p[k] == ',');
  }
  return 0;
}

static int add_format(run_opts *o, const char *item) {
  char name[32];
  const char *eq = strpbrk(item, "=:");
  size_t l = eq ? (size_t)(eq - item) : strlen(item);
  if (l >= sizeof name) l = sizeof name - 1;
  memcpy(name, item, l);
  name[l] = '\0';
  int f = opf_format_parse(name);
  if (f < 0) return cli_usage_error("unknown format '%s' (use table, json, jsonl, csv, md, gbench or trace)", name);
  if (eq && !eq[1]) return cli_usage_error("--format %s: missing file name after '%c'", name, *eq);
  if (o->n_out == MAX_OUTPUTS) return cli_usage_error("too many --format entries");
  o->fmt[o->n_out] = (opf_format)f;
  o->fmt_path[o->n_out] = eq ? eq + 1 : NULL;
  o->n_out++;
  return 0;
}

/* Tokenises the argument in place: argv strings live as long as the run and may be modified,
 * so the FMT=FILE paths can point into them. */
static int parse_formats(run_opts *o, char *list) {
  char *save = NULL;
  int rc = 0;
  for (char *t = strtok_r(list, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save))
    rc = add_format(o, t);
  return rc;
}

static char base_save_path[1024], base_cmp_path[1024], base_run_path[1024];

static int valid_name(const char *n) {
  if (!*n || *n == '.') return 0;
  for (; *n; n++)
    if (!(isalnum((unsigned char)*n) || *n == '-' || *n == '_' || *n == '.')) return 0;
  return 1;
}

/* mkdir -p */
static int make_dirs(const char *path) {
  char b[1024];
  snprintf(b, sizeof b, "%s", path);
  for (char *p = b + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(b, 0777) && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(b, 0777) && errno != EEXIST ? -1 : 0;
}

/* --save-baseline / --compare-baseline: resolve the directory, check names and that the baseline
 * to compare with exists, and add the JSON outputs the gate needs. */
static int setup_baselines(run_opts *o) {
  if (!o->save_baseline && !o->compare_baseline) return 0;
  char dir[900];
  const char *env = getenv("OPPERF_BASELINE_DIR"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
  if (o->baseline_dir) snprintf(dir, sizeof dir, "%s", o->baseline_dir);
  else if (env && *env) snprintf(dir, sizeof dir, "%s", env);
  else if (xdg && *xdg) snprintf(dir, sizeof dir, "%.800s/opperf/baselines", xdg);
  else snprintf(dir, sizeof dir, "%.800s/.local/share/opperf/baselines", home && *home ? home : ".");
  const char *names[2] = {o->save_baseline, o->compare_baseline};
  for (int i = 0; i < 2; i++)
    if (names[i] && !valid_name(names[i]))
      return cli_usage_error("baseline name '%s' must be letters, digits, '-', '_' or '.'", names[i]);
  if (make_dirs(dir)) return cli_usage_error("cannot create the baseline directory '%s'", dir);
  if (o->compare_baseline) {
    snprintf(base_cmp_path, sizeof base_cmp_path, "%s/%s.json", dir, o->compare_baseline);
    if (access(base_cmp_path, R_OK))
      return cli_usage_error("no baseline '%s' in %s (store one with --save-baseline %s)",
                             o->compare_baseline, dir, o->compare_baseline);
    snprintf(base_run_path, sizeof base_run_path, "%s/.%s.latest.json", dir, o->compare_baseline);
    if (add_format(o, "json")) return 2;
    o->fmt_path[o->n_out - 1] = base_run_path;
  }
  if (o->save_baseline) {
    snprintf(base_save_path, sizeof base_save_path, "%s/%s.json", dir, o->save_baseline);
    if (add_format(o, "json")) return 2;
    o->fmt_path[o->n_out - 1] = base_save_path;
  }
  return 0;
}

enum { O_SHAPES = 256, O_INPUT, O_PARAM, O_PASS, O_RUNS, O_CPU, O_CACHE, O_SEED, O_EVENTS,
       O_FORMAT, O_SAVE, O_TIMEOUT, O_PEER, O_PLUGIN, O_CHECK, O_BACKEND,
       O_PROFILE, O_PROFILE_LAST = O_PROFILE + CLI_PROFILE_NOPTS - 1,
       O_STORE, O_STORE_LAST = O_STORE + CLI_STORE_NOPTS - 1,
       O_CONFIG, O_DTYPE, O_IMPL, O_WARMUP, O_SETTLE, O_MINTIME, O_TARGETCI, O_CITIME, O_MAXTIME, O_CRETRY,
       O_SAMPLE, O_THREADS, O_RANDOM, O_DRY, O_ISOLATE, O_NO_ISOLATE, O_REPS, O_METRIC,
       O_SAVE_BASE, O_CMP_BASE, O_BASE_DIR, O_THRESH, O_PERF_CTL, O_BLAS, O_INTERLEAVE };

#define M(f) offsetof(run_opts, f)
static const cli_opt run_table[] = {
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "cases:"},
    {"shapes", O_SHAPES, "SETS", CLI_O_CUSTOM, 0, 0, 0, "shape sets: standard,skewed (default), small, large, huge, test, all"},
    {"input", O_INPUT, "NAME=SHAPE", CLI_O_CUSTOM, 0, 0, 0, "custom input shape, e.g. --input x=64x3x32x32 (repeatable);\nreplaces the default shape sets with one custom case"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "  --input NAME=@F.npy  real data from a NumPy .npy file (its shape and dtype)"},
    {"random-shapes", O_RANDOM, "N", CLI_O_INT, M(random_shapes), 1, 10000, "N valid random cases per operator (drawn from its default\nentries; --seed S picks them: same seed, same shapes and data)"},
    {"param", O_PARAM, "KEY=VALUE", CLI_O_CUSTOM, 0, 0, 0, "param for every case, e.g. --param axis=0 (repeatable)"},
    {"config", O_CONFIG, "FILE.json", CLI_O_STR, M(config), 0, 0, "custom cases: [{\"op\":..., \"inputs\":{...}, \"params\":{...}, \"dtype\":...}]"},
    {"dtype", O_DTYPE, "LIST", CLI_O_LIST, M(dtypes), 0, 0, "float32 (default), float64, int32, int64, bool, or all"},
    {"pass", O_PASS, "LIST", CLI_O_CUSTOM, 0, 0, 0, "fwd, bwd, both (forward+backward); default fwd,bwd"},
    {"impl", O_IMPL, "LIST", CLI_O_LIST, M(impl_list), 0, 0, "implementations to run side by side: native (the operator's\nkernels), unfused (a fused operator's chain of separate\noperators), materialize (every gradient written, where native\nhands views back; bwd and both only), a built-in alternative\n(conv2d, conv3d: im2col, winograd; conv2d_transpose,\nconv3d_transpose: winograd; transposed convolutions: col2im), a plugin's name, or all\n(default: all but materialize and the built-in alternatives)"},
    {"plugin", O_PLUGIN, "LIB.so", CLI_O_CUSTOM, 0, 0, 0, "load operators and implementations from a plugin (repeatable;\nsee opperf(1), PLUGINS)"},
    {"check", O_CHECK, NULL, CLI_O_CUSTOM, 0, 0, 0, "check each case's forward outputs against the operator's\nreference first (a mismatch fails the case: status error),\nand gradients handed back as views against written ones;\nwith --baseline also against the peer (see below)"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "measurement:"},
    {"warmup", O_WARMUP, "SEC", CLI_O_SECONDS, M(s.warmup), 0, 0, "warm-up per case and pass: at most SEC (default 0.05), ending\nonce two consecutive chunks of calls agree (--warmup-settle)"},
    {"warmup-settle", O_SETTLE, "PCT", CLI_O_FRACTION, M(s.warmup_settle), 0, 0, "... within PCT per call, after 10 ms (default 5%; 0: always\nthe full --warmup)"},
    {"min-time", O_MINTIME, "SEC", CLI_O_SECONDS, M(s.min_time), 0, 0, "measure at least this long per case and pass (default 0.03)"},
    {"target-ci", O_TARGETCI, "PCT", CLI_O_FRACTION, M(s.ci_target), 0, 0, "then stop once the 95% confidence interval of the median is\nat most PCT of it wide (default 3%; 0: stop at --min-time)"},
    {"ci-time", O_CITIME, "SEC", CLI_O_SECONDS, M(s.ci_time), 0, 0, "... or after this long if it never gets that tight (default 0.15)"},
    {"contention-retries", O_CRETRY, "N", CLI_O_INT, M(s.contention_retries), 0, OPF_MAX_ATTEMPTS - 1, "when a case's threads waited on a run queue for over 5% of its\nsampling time (CPU contention: status \"contended N%\"), measure\nit again after a pause, at most N times, and keep the attempt\nwith the least contention (default 2; 0: off)"},
    {"max-time", O_MAXTIME, "SEC", CLI_O_SECONDS, M(s.max_time), 0, 0, "stop after this long once 3 samples exist (default 3)"},
    {"runs", O_RUNS, "N", CLI_O_CUSTOM, 0, 0, 0, "exactly N samples per case (overrides the time limits)"},
    {"sample-time", O_SAMPLE, "SEC", CLI_O_SECONDS, M(s.sample_time), 0, 0, "calibrate calls per sample to last this long (default 0.002)"},
    {"threads", O_THREADS, "N", CLI_O_INT, M(s.threads), 1, 1024, "OpenMP and OpenBLAS threads (default: all CPUs)"},
    {"cpu", O_CPU, "LIST", CLI_O_CUSTOM, 0, 0, 0, "pin to CPUs, e.g. 0 or 0-1"},
    {"cache", O_CACHE, "warm|cold", CLI_O_CUSTOM, 0, 0, 0, "cold evicts caches before every sample (1 call per sample)"},
    {"seed", O_SEED, "N", CLI_O_CUSTOM, 0, 0, 0, "seed of all generated inputs (default 42)"},
    {"events", O_EVENTS, "LIST", CLI_O_CUSTOM, 0, 0, 0, "counters: sw (default), core, cache, tlb, branch, any libpfm4\nevent name, or none"},
    {"backend", O_BACKEND, "callgrind", CLI_O_CUSTOM, 0, 0, 0, "re-run under valgrind's callgrind: simulated, deterministic\ncounters per call (sim:Ir, sim:D1mr, ...); times are not real"},
    {"blas-kernel", O_BLAS, "K", CLI_O_STR, M(blas_kernel), 0, 0, "OpenBLAS kernel family: auto (default, also $OPPERF_BLAS_KERNEL):\nwhen OpenBLAS fell back below what the CPU runs (a CPU newer\nthan the library), use the CPU's family (SkylakeX, Cooperlake,\nHaswell, ...); an OPENBLAS_CORETYPE of the environment is kept;\nnative: OpenBLAS's own choice; NAME: that core (e.g. Haswell)"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "output:"},
    {"format", O_FORMAT, "LIST", CLI_O_CUSTOM, 0, 0, 0, "table (default), json, jsonl (streamed), csv, md, gbench (Google\nBenchmark JSON), trace (Chrome trace events: Perfetto,\nchrome://tracing); FMT=FILE writes that format to FILE"},
    {"verbose", 'v', NULL, CLI_O_FLAG, M(verbose), 1, 0, "one machine-readable line per case pass on stderr as it ends\n(also OPPERF_VERBOSE=1; fields in opperf(1))"},
    {"perf-control", O_PERF_CTL, "SPEC", CLI_O_STR, M(perf_ctl), 0, 0, "under `perf record -D -1 --control=SPEC`: enable perf around each\nmeasured sample only (SPEC fifo:CTL,ACK or fd:CTL,ACK; also\n$OPPERF_PERF_CONTROL); see scripts/opperf-flamegraph"},
    {"output", 'o', "FILE", CLI_O_STR, M(output), 0, 0, "write the (non-table) report to FILE, atomically"},
    {"save-tensors", O_SAVE, "DIR", CLI_O_CUSTOM, 0, 0, 0, "write each case's inputs and outputs as .npy files into DIR"},
    CLI_PROFILE_ROWS(O_PROFILE),
    CLI_STORE_ROWS(O_STORE),
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "isolation:"},
    {"isolate", O_ISOLATE, NULL, CLI_O_FLAG, M(isolate), 1, 0, "run each case in its own process: a crash or hang becomes a\nresult (crashed/timeout) and the run goes on (default when\nseveral operators run)"},
    {"no-isolate", O_NO_ISOLATE, NULL, CLI_O_FLAG, M(isolate), 0, 0, "run every case in this process"},
    {"timeout", O_TIMEOUT, "SEC", CLI_O_CUSTOM, 0, 0, 0, "kill a case after SEC seconds (implies --isolate)"},
    {"repetitions", O_REPS, "N", CLI_O_INT, M(reps), 1, OPF_MAX_REPS, "measure each case N times (each in a fresh process when\nisolated, else on fresh allocations) and merge; the gate then\nalso requires a change beyond the repetitions' spread"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "  Ctrl-C (SIGINT/SIGTERM) stops after the current case and writes the finished results,\n  marked interrupted (exit 130); a second Ctrl-C stops at once."},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "paired A/B (a noisy machine):"},
    {"interleave", O_INTERLEAVE, NULL, CLI_O_FLAG, M(interleave), 1, 0, "with --impl A,B: measure A and B of each case in interleaved\nrounds (A B, B A, ...; --repetitions rounds, default 10) in this\nprocess, and report the ratio A/B per case with its 95%\ninterval"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "regression gate:"},
    {"save-baseline", O_SAVE_BASE, "NAME", CLI_O_STR, M(save_baseline), 0, 0, "also store this run's JSON report as baseline NAME"},
    {"compare-baseline", O_CMP_BASE, "NAME", CLI_O_STR, M(compare_baseline), 0, 0, "compare with baseline NAME (see opperf compare); exit 1\nwhen a case regressed significantly"},
    {"threshold", O_THRESH, "T", CLI_O_FRACTION, M(threshold), 0, 0, "smallest change that counts (default 5%)"},
    {"metric", O_METRIC, "M", CLI_O_STR, M(metric), 0, 0, "what to compare: time (default), instructions, cycles or\nany counter of the run (see opperf compare)"},
    {"baseline-dir", O_BASE_DIR, "DIR", CLI_O_STR, M(baseline_dir), 0, 0, "where baselines live (default $OPPERF_BASELINE_DIR, else\n$XDG_DATA_HOME/opperf/baselines or ~/.local/share/...)"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "side by side (scripts/opperf-peer.py under /usr/bin/python3, or $OPPERF_PYTHON):"},
    {"baseline", O_PEER, "torch|numpy", CLI_O_CUSTOM, 0, 0, 0, "also time the same cases with PyTorch or NumPy on the same\ninputs, after ours; adds columns peer, ours/peer (> 1: opperf\nslower) and per-category geometric means (--check also compares\noutputs and input gradients with the peer's: exit 1 on a mismatch)"},
    {"dry-run", O_DRY, NULL, CLI_O_FLAG, M(dry_run), 1, 0, "list the cases that would run (with --baseline: each case's\npeer equivalent, or why it has none), and exit"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};
#undef M

static const cli_cmd_opts run_cmd = {
    "run", "usage: opperf run [options] [OP|CATEGORY|GLOB ...]",
    "Measures each operator on its own. Without names, every operator runs.", run_table,
    (int)(sizeof run_table / sizeof run_table[0]), ""};

static int parse_args(int argc, char **argv, run_opts *o) {
  opf_settings_default(&o->s);
  o->threshold = 0.05;
  o->isolate = -1;
  o->sets = "standard,skewed";
  o->dtypes = NULL;
  o->passes = "fwd,bwd";
  o->impls = cli_impls_default();
  o->reps = 1;
  o->metric = "time";
  o->peer_lib = -1;
  optind = 1;
  int ch;
  long long v;
  const char *arg;
  while ((ch = cli_opts_next(&run_cmd, argc, argv, o, &arg)) > 0) {
    switch (ch) {
    case O_PROFILE ... O_PROFILE_LAST: if (cli_profile_arg(&o->prof, ch - O_PROFILE, arg)) return 2; break;
    case O_STORE ... O_STORE_LAST: cli_store_arg(&o->store, ch - O_STORE, arg); break;
    case O_SHAPES:
      if (cli_check_list(arg, "--shapes")) return EXIT_USAGE;
      o->sets = arg;
      break;
    case O_INPUT:
    case O_PARAM: {
      if (!strchr(arg, '=') || arg[0] == '=')
        return cli_usage_error("--%s expects NAME=VALUE, not '%s'", ch == O_INPUT ? "input" : "param", arg);
      if (ch == O_INPUT && o->n_inputs < MAX_ITEMS) o->inputs[o->n_inputs++] = arg;
      else if (ch == O_PARAM && o->n_params < MAX_ITEMS) o->params[o->n_params++] = arg;
      else return cli_usage_error("too many --input/--param items");
      break;
    }
    case O_PLUGIN: if (cli_plugin_load(arg)) return 2; break;
    case O_CHECK: o->s.check = o->peer_check = 1; break; /* the reference, and the peer if any */
    case O_PASS:
      if (cli_check_list(arg, "--pass")) return EXIT_USAGE;
      o->passes = arg;
      o->passes_explicit = 1;
      break;
    case O_RUNS:
      if (!cli_parse_int(arg, &v) || v < 1 || v > 1000000)
        return cli_usage_error("--runs needs a count between 1 and 1000000, not '%s'", arg);
      o->s.min_runs = o->s.max_runs = (int)v;
      o->s.min_time = 0;
      o->s.max_time = 1e9;
      break;
    case O_CPU: snprintf(o->s.cpus, sizeof o->s.cpus, "%s", arg); break;
    case O_CACHE:
      if (!strcmp(arg, "warm")) o->s.cache = OPF_CACHE_WARM;
      else if (!strcmp(arg, "cold")) o->s.cache = OPF_CACHE_COLD;
      else return cli_usage_error("--cache must be warm or cold, not '%s'", arg);
      break;
    case O_SEED:
      if (!cli_parse_int(arg, &v) || v < 0)
        return cli_usage_error("--seed needs a non-negative integer, not '%s'", arg);
      o->s.seed = (uint64_t)v;
      break;
    case O_EVENTS:
      if (strlen(arg) >= sizeof o->s.events) return cli_usage_error("--events list is too long");
      if (cli_check_list(arg, "--events")) return EXIT_USAGE;
      snprintf(o->s.events, sizeof o->s.events, "%s", strcmp(arg, "none") ? arg : "");
      break;
    case O_FORMAT:
      if (cli_check_list(arg, "--format") || parse_formats(o, (char *)arg)) return 2;
      break;
    case O_TIMEOUT:
      if (!cli_parse_double(arg, &o->timeout) || !(o->timeout > 0) || o->timeout > 1e6)
        return cli_usage_error("--timeout needs a positive number of seconds, not '%s'", arg);
      break;
    case O_SAVE:
      if (strlen(arg) >= sizeof o->s.save_dir - 64) return cli_usage_error("--save-tensors: directory name too long");
      snprintf(o->s.save_dir, sizeof o->s.save_dir, "%s", arg);
      break;
    case O_BACKEND: if (cli_backend_parse(arg, &o->backend)) return 2; break;
    case O_PEER: if (cli_peer_parse(arg, &o->peer_lib)) return 2; break;
    default: return cli_usage_error("run: unhandled option");
    }
  }
  if (ch == CLI_OPT_HELP_DONE) return -1;
  if (ch < 0) return 2;
  if (o->s.max_time < o->s.min_time) o->s.max_time = o->s.min_time;
  if (check_sets(o->sets)) return 2;
  if (o->impl_list && cli_impls_parse(o->impl_list, &o->impls)) return 2; /* after --plugin */
  if (o->interleave) {
    char a[64] = "", b[64] = "";
    if (!o->impl_list || sscanf(o->impl_list, "%63[^,],%63[^,]", a, b) != 2 || strchr(strchr(o->impl_list, ',') + 1, ','))
      return cli_usage_error("--interleave needs --impl A,B (two implementations)");
    o->impl_a = opf_impl_find(a);
    o->impl_b = opf_impl_find(b);
    if (o->impl_a < 0 || o->impl_b < 0 || o->impl_a == o->impl_b)
      return cli_usage_error("--interleave: '%s' and '%s' must be two different implementations", a, b);
    if (o->isolate == 1 || o->timeout > 0)
      return cli_usage_error("--interleave measures both implementations in one process: drop --isolate/--timeout");
    if (o->backend != CLI_BK_NATIVE) return cli_usage_error("--interleave compares times: not with --backend callgrind");
    o->isolate = 0;
    if (o->reps == 1) o->reps = 10;
  }
  if (o->config && o->n_inputs) return cli_usage_error("--config and --input cannot be combined");
  if (o->random_shapes && (o->config || o->n_inputs))
    return cli_usage_error("--random-shapes cannot be combined with --input or --config");
  if (o->s.save_dir[0]) {
    struct stat st;
    if (stat(o->s.save_dir, &st) && mkdir(o->s.save_dir, 0777))
      return cli_usage_error("--save-tensors: cannot create directory '%s'", o->s.save_dir);
    if (!stat(o->s.save_dir, &st) && !S_ISDIR(st.st_mode))
      return cli_usage_error("--save-tensors: '%s' is not a directory", o->s.save_dir);
  }
  if (!o->n_out) add_format(o, "table");
  if (o->timeout > 0 && o->isolate == 0) return cli_usage_error("--timeout needs isolation (drop --no-isolate)");
  if (o->prof.on && o->backend != CLI_BK_NATIVE) return cli_usage_error("--profile cannot be combined with --backend callgrind");
  if (o->timeout > 0) o->isolate = 1;
  /* The callgrind child reads its dumps after each measurement in its own process, and its
   * counts are deterministic: no isolated case processes, no repetitions to merge. */
  if (o->isolate == 1 && o->backend != CLI_BK_NATIVE)
    return cli_usage_error("--isolate and --timeout cannot be combined with --backend callgrind (its cases run in the one process valgrind runs)");
  if (o->reps > 1 && o->backend != CLI_BK_NATIVE)
    return cli_usage_error("--repetitions cannot be combined with --backend callgrind (its counts are deterministic)");
  if (o->peer_lib >= 0 && o->backend != CLI_BK_NATIVE)
    return cli_usage_error("--baseline compares times: it cannot be combined with --backend callgrind");
  return setup_baselines(o);
}

/* Build a spec from a base and the user's items (later items override earlier ones). */
static int build_spec(char *out, size_t n, const char *base, const char *const *items, int ni) {
  size_t off = (size_t)snprintf(out, n, "%s", base ? base : "");
  for (int i = 0; i < ni && off < n; i++)
    off += (size_t)snprintf(out + off, n - off, "%s%s", off ? " " : "", items[i]);
  return off < n ? 0 : -1;
}

typedef struct case_list {
  run_case *v;
  int n, cap;
  unsigned impls; /* --impl: 1 << implementation id */
} case_list;

static int add_one(case_list *l, const opf_op *op, opf_dtype dt, const char *set, const char *spec,
                   int user, int impl) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 128;
    run_case *v = realloc(l->v, sizeof *v * (size_t)cap);
    if (!v) return cli_usage_error("out of memory");
    l->v = v;
    l->cap = cap;
  }
  run_case *rc = &l->v[l->n];
  memset(rc, 0, sizeof *rc);
  snprintf(rc->set, sizeof rc->set, "%s", set);
  rc->user = user;
  opf_err e;
  int r = opf_case_init(&rc->c, op, dt, spec, &e);
  if (r) {
    if (user || r != OPF_EUNSUPPORTED) return cli_usage_error("%s", e.msg);
    return 0; /* a default entry for a dtype the op does not have: nothing to run */
  }
  if (impl != OPF_IMPL_NATIVE && opf_case_set_impl(&rc->c, impl, &e)) return cli_usage_error("%s", e.msg);
  if (user) {
    uint64_t need = opf_case_footprint(&rc->c, 1), avail = opf_mem_available();
    if (need == UINT64_MAX || (avail && need > avail)) {
      char a[32], b[32];
      return cli_usage_error("%s: the case needs %s but only %s of memory is available", op->name,
                             need == UINT64_MAX ? "more than 2^62 bytes" : opf_fmt_bytes((double)need, a, sizeof a),
                             opf_fmt_bytes((double)avail, b, sizeof b));
    }
  }
  l->n++;
  return 0;
}

/* A case of op for each of its implementations --impl selects (a fused operator's unfused
 * chain, a plugin's kernels), on the same spec. */
static int add_case(case_list *l, const opf_op *op, opf_dtype dt, const char *set, const char *spec,
                    int user) {
  unsigned impls = cli_impls_for(op, l->impls);
  for (int impl = OPF_IMPL_NATIVE; impl < opf_impl_count(); impl++) {
    if (!(impls >> impl & 1)) continue;
    int n0 = l->n, rc = add_one(l, op, dt, set, spec, user, impl);
    if (rc || l->n == n0) return rc; /* an error, or nothing to run for this dtype */
  }
  return 0;
}

static unsigned op_dtypes(const opf_op *op, unsigned requested, int explicit_dt) {
  if (!explicit_dt)
    return op->dtypes & OPF_DT_BIT(OPF_F32) ? OPF_DT_BIT(OPF_F32) : op->dtypes & (~op->dtypes + 1);
  return op->dtypes & requested;
}

static int build_cases(run_opts *o, const opf_op **ops, int nops, int named, case_list *l) {
  unsigned req = 0;
  if (o->dtypes && parse_dtypes(o->dtypes, &req)) return 2;
  char spec[1024];
  if (o->config) {
    cli_case *cc;
    int n;
    opf_err e;
    if (cli_config_load(o->config, &cc, &n, &e)) return cli_usage_error("%s", e.msg);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
      unsigned dts = cc[i].dtype >= 0 ? OPF_DT_BIT(cc[i].dtype) : op_dtypes(cc[i].op, req, o->dtypes != NULL);
      if (!dts) {
        rc = cli_usage_error("config case %d: operator '%s' does not support the requested dtype", i, cc[i].op->name);
        break;
      }
      if (build_spec(spec, sizeof spec, cc[i].spec, o->params, o->n_params)) {
        rc = cli_usage_error("config case %d: spec too long", i);
        break;
      }
      for (int d = 0; d < OPF_NDTYPES && !rc; d++)
        if (dts & OPF_DT_BIT(d)) rc = add_case(l, cc[i].op, (opf_dtype)d, "config", spec, 1);
    }
    free(cc);
    return rc;
  }
  for (int i = 0; i < nops; i++) {
    const opf_op *op = ops[i];
    unsigned dts = op_dtypes(op, req, o->dtypes != NULL);
    if (!dts) {
      if (named) {
        char have[64] = "";
        for (int d = 0, off = 0; d < OPF_NDTYPES; d++)
          if (op->dtypes & OPF_DT_BIT(d))
            off += snprintf(have + off, sizeof have - (size_t)off, "%s%s", off ? ", " : "", opf_dtype_name((opf_dtype)d));
        return cli_usage_error("operator '%s' does not support dtype %s (it supports %s)", op->name, o->dtypes, have);
      }
      continue;
    }
    for (int d = 0; d < OPF_NDTYPES; d++) {
      if (!(dts & OPF_DT_BIT(d))) continue;
      if (o->n_inputs) {
        if (build_spec(spec, sizeof spec, NULL, o->inputs, o->n_inputs) ||
            build_spec(spec + strlen(spec), sizeof spec - strlen(spec), strlen(spec) ? " " : "", o->params, o->n_params))
          return cli_usage_error("too many --input/--param items");
        if (add_case(l, op, (opf_dtype)d, "custom", spec, 1)) return 2;
        continue;
      }
      for (int k = 0; k < o->random_shapes; k++) {
        opf_err e;
        if (opf_random_spec(op, (opf_dtype)d, o->s.seed, k, spec, sizeof spec, &e)) {
          fprintf(stderr, "opperf: %s (skipped)\n", e.msg);
          break;
        }
        if (build_spec(spec + strlen(spec), sizeof spec - strlen(spec), " ", o->params, o->n_params))
          return cli_usage_error("too many --param items");
        if (add_case(l, op, (opf_dtype)d, "random", spec, o->n_params > 0)) return 2;
      }
      for (int k = 0; !o->random_shapes && k < OPF_MAX_SETS && op->shapes[k].set; k++) {
        if (!set_selected(o->sets, op->shapes[k].set)) continue;
        if (build_spec(spec, sizeof spec, op->shapes[k].spec, o->params, o->n_params))
          return cli_usage_error("too many --param items");
        if (add_case(l, op, (opf_dtype)d, op->shapes[k].set, spec, o->n_params > 0)) return 2;
      }
    }
  }
  return 0;
}

/* Where each format goes: FMT=FILE wins; -o FILE takes the non-table formats (one: FILE as
 * given; several: FILE with each format's extension); everything else goes to stdout. */
static void resolve_paths(run_opts *o, char **paths) {
  int n_nontable = 0;
  for (int i = 0; i < o->n_out; i++) n_nontable += o->fmt[i] != OPF_FMT_TABLE && !o->fmt_path[i];
  for (int i = 0; i < o->n_out; i++) {
    paths[i] = NULL;
    if (o->fmt_path[i]) paths[i] = strdup(o->fmt_path[i]);
    else if (o->output && (o->fmt[i] != OPF_FMT_TABLE || o->n_out == 1)) {
      if (n_nontable <= 1) paths[i] = strdup(o->output);
      else {
        const char *dot = strrchr(o->output, '.'), *slash = strrchr(o->output, '/');
        int stem = dot && (!slash || dot > slash) ? (int)(dot - o->output) : (int)strlen(o->output);
        if (asprintf(&paths[i], "%.*s%s", stem, o->output, opf_format_ext(o->fmt[i])) < 0) paths[i] = NULL;
      }
    }
  }
}

/* The passes case c runs, in order (into passes when not NULL); returns how many. */
static int case_passes(const run_opts *o, const run_case *c, int pass_mask, opf_pass *passes) {
  int n = 0;
  for (int p = 0; p < OPF_NPASSES; p++) {
    if (!(pass_mask >> p & 1)) continue;
    /* Default passes: operators without a backward just run forward. */
    if (p != OPF_PASS_FWD && !o->passes_explicit && !opf_case_has_backward(&c->c)) continue;
    if (p == OPF_PASS_FWD && c->c.impl == OPF_IMPL_MATERIALIZE) continue; /* native's forward */
    if (passes) passes[n] = (opf_pass)p;
    n++;
  }
  return n;
}

/* The isolated case's process (forked by the case server, src/caseserver.c, from the state
 * before any counter or thread pool existed): sets up the run time, counters and region hooks
 * as a non-isolated run does, measures every pass of case `index` and sends the results. */
typedef struct case_job_ctx {
  run_opts *o;
  case_list *cl;
  int pass_mask;
  opf_pmu *pmu; /* encoded, not opened */
} case_job_ctx;

static int case_job(void *ctx, int index, int fd) {
  case_job_ctx *j = ctx;
  run_opts *o = j->o;
  opf_err e;
  if (index < 0 || index >= j->cl->n) return EXIT_USAGE;
  if (opf_runtime_setup(&o->s, &e) || opf_pmu_open(j->pmu, &e)) return cli_usage_error("%s", e.msg);
  cli_region reg;
  if (cli_region_setup(&reg, &o->s, o->perf_ctl)) return EXIT_USAGE;
  if (cli_profile_setup(&o->prof, &reg)) {
    cli_region_finish(&reg);
    return EXIT_USAGE;
  }
  cli_region_install(&reg, &o->s);
  run_case *c = &j->cl->v[index];
  opf_pass passes[OPF_NPASSES];
  int np = case_passes(o, c, j->pass_mask, passes), rc = 0;
  o->s.case_index = index;
  for (int k = 0; k < np && !rc; k++) {
    opf_result r;
    opf_measure(&o->s, &c->c, c->set, passes[k], j->pmu, &r);
    cli_profile_attach(&o->prof, &r);
    rc = cli_child_send(fd, &r);
    opf_result_release(&r);
  }
  cli_region_finish(&reg);
  cli_profile_finish(&o->prof, 0);
  return rc ? EXIT_FAILED : EXIT_OK;
}

/* --interleave: the other implementation's case of case i (same operator, dtype, set and
 * spec: add_case puts an operator's implementations next to each other), else -1. */
static int ab_partner(const case_list *cl, int i, const run_opts *o) {
  const opf_case *c = &cl->v[i].c;
  int want = c->impl == o->impl_a ? o->impl_b : c->impl == o->impl_b ? o->impl_a : -1;
  for (int j = i - 2; want >= 0 && j <= i + 2; j++) {
    if (j < 0 || j >= cl->n || j == i) continue;
    const opf_case *d = &cl->v[j].c;
    char s1[512], s2[512];
    if (d->impl == want && d->op == c->op && d->dtype == c->dtype && !strcmp(cl->v[i].set, cl->v[j].set) &&
        !strcmp(opf_case_spec_str(c, s1, sizeof s1), opf_case_spec_str(d, s2, sizeof s2)))
      return j;
  }
  return -1;
}

/* One line of the A/B summary: the paired ratio and its interval. */
static void ab_line(FILE *f, const opf_result *r) {
  char iv[64] = "no interval: too few rounds";
  if (r->ab_hi > 0) snprintf(iv, sizeof iv, "[%.3f, %.3f]", r->ab_lo, r->ab_hi);
  if (r->status != OPF_ST_OK || !r->ab_rounds) {
    fprintf(f, "  %s %s %s %s: no ratio (%s)\n", r->op, r->spec, opf_dtype_name(r->dtype), opf_pass_name(r->pass),
            r->message[0] ? r->message : "a side failed");
    return;
  }
  fprintf(f, "  %s %s %s %s: %s/%s %.3f %s\n", r->op, r->spec, opf_dtype_name(r->dtype), opf_pass_name(r->pass),
          r->impl, r->ab_vs, r->ab_ratio, iv);
}

int cmd_run(int argc, char **argv) {
  run_opts o;
  memset(&o, 0, sizeof o);
  cli_backend_save_args(argc, argv); /* before parse_args tokenises --format in place */
  cli_blas_save_args(argc, argv);
  char command[512]; /* for the context block, also taken before the tokenising */
  cli_join_argv(argc, argv, command, sizeof command);
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc < 0 ? EXIT_OK : EXIT_USAGE;
  o.verbose |= cli_verbose_env();
  int pass_mask;
  if (cli_parse_passes(o.passes, &pass_mask)) return EXIT_USAGE;
  /* OpenBLAS's kernel family: may re-execute this command with OPENBLAS_CORETYPE set. */
  if (cli_blas_setup(o.blas_kernel, !o.dry_run && o.backend == CLI_BK_NATIVE)) return EXIT_USAGE;

  int max_ops = opf_op_count() + 1, nops = 0;
  const opf_op **ops = calloc((size_t)max_ops, sizeof *ops);
  if (!ops) return cli_usage_error("out of memory");
  int named = 0;
  for (int i = optind; i < argc; i++) {
    if (!cli_match_ops(argv[i], ops, max_ops, &nops)) {
      free(ops);
      return cli_unknown_op(argv[i]);
    }
    named |= opf_op_find(argv[i]) != NULL;
  }
  if (optind == argc)
    for (int i = 0; i < opf_op_count(); i++) ops[nops++] = opf_op_at(i);
  /* The default suite (no names, no inputs, no --format or -o) also writes its JSON report to
   * opperf-results/run-<UTC time>.json, so a long run is never only on a terminal. */
  static char default_json[96];
  if (optind == argc && !o.config && !o.n_inputs && !o.random_shapes && o.n_out == 1 &&
      o.fmt[0] == OPF_FMT_TABLE && !o.fmt_path[0] && !o.output &&
      o.backend == CLI_BK_NATIVE) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm);
    if (mkdir("opperf-results", 0777) == 0 || errno == EEXIST) {
      snprintf(default_json, sizeof default_json, "json=opperf-results/run-%s.json", ts);
      add_format(&o, default_json);
    }
  }

  case_list cl = {0};
  cl.impls = o.impls;
  rc = build_cases(&o, ops, nops, named, &cl);
  if (o.isolate < 0) o.isolate = nops > 1 && o.backend == CLI_BK_NATIVE;
  free(ops);
  if (!rc && !cl.n)
    rc = cli_usage_error("nothing to run: no case of the selected operators is in shape sets '%s'", o.sets);
  if (!rc) rc = cli_store_shard(&o.store); /* --shard: this shard's cases only */
  int kept = 0;
  for (int i = 0; !rc && i < cl.n; i++)
    if (cli_store_owns(&o.store, &cl.v[i].c)) cl.v[kept++] = cl.v[i];
  if (!rc) cl.n = kept;
  if (rc) {
    free(cl.v);
    return EXIT_USAGE;
  }
  if (o.dry_run && o.peer_lib >= 0) { /* each case's peer equivalent */
    const opf_case **cs = malloc(sizeof *cs * (size_t)cl.n);
    for (int i = 0; cs && i < cl.n; i++) cs[i] = &cl.v[i].c;
    rc = cs ? cli_peer_dry_run(o.peer_lib, &o.s, cs, cl.n) : cli_usage_error("out of memory");
    free(cs);
    free(cl.v);
    return rc;
  }
  if (o.dry_run) {
    for (int i = 0; i < cl.n; i++) {
      char spec[512];
      char name[96];
      snprintf(name, sizeof name, "%s%s%s%s", cl.v[i].c.op->name, cl.v[i].c.impl ? " [" : "",
               cl.v[i].c.impl ? opf_impl_name(cl.v[i].c.impl) : "", cl.v[i].c.impl ? "]" : "");
      printf("%-22s %-8s %-8s %s\n", name, opf_dtype_name(cl.v[i].c.dtype), cl.v[i].set,
             opf_case_spec_str(&cl.v[i].c, spec, sizeof spec));
    }
    printf("%d cases\n", cl.n);
    free(cl.v);
    return EXIT_OK;
  }

  /* --backend callgrind (src/cli/backend.c): the parent re-runs this command under valgrind and
   * returns its status here; the child gets deterministic settings and client-request hooks. */
  cli_backend bk;
  rc = cli_backend_setup(&bk, o.backend, &o.s);
  if (rc != CLI_BACKEND_MEASURE) {
    free(cl.v);
    return rc;
  }
  rc = 0;
  /* --store: checked (created, migrated) now; the run's JSON report goes to it at the end */
  if (cli_store_setup(&o.store) || (o.store.json_fmt[0] && add_format(&o, o.store.json_fmt))) {
    free(cl.v);
    return EXIT_USAGE;
  }

  /* The run pipeline (src/session.c): plan now (counters encoded), set up after the case
   * server has forked. */
  opf_err e;
  opf_session *ses = NULL;
  char *paths[MAX_OUTPUTS];
  resolve_paths(&o, paths);
  if (opf_session_new(&ses, &o.s, command, &e)) {
    for (int i = 0; i < o.n_out; i++) free(paths[i]);
    free(cl.v);
    return cli_usage_error("%s", e.msg);
  }
  for (int i = 0; i < o.n_out; i++) opf_session_add_output(ses, o.fmt[i], paths[i], &e);
  opf_pmu *pmu = opf_session_pmu(ses);
  opf_settings *ss = opf_session_settings(ses);
  /* --isolate: the case server forks now, before this process opens counters or starts
   * threads; every case's process starts from here. */
  opf_case_server *srv = NULL;
  case_job_ctx job = {&o, &cl, pass_mask, pmu};
  cli_region reg;
  int setup = EXIT_OK;
  if (o.isolate && cli_isolate_start(&srv, case_job, &job)) setup = EXIT_USAGE;
  else if (opf_session_start(ses, &e)) setup = cli_usage_error("%s", e.msg);
  /* The measured-region hooks: the back-end's, then perf record control. */
  else if (cli_region_setup(&reg, ss, o.perf_ctl)) setup = EXIT_USAGE;
  else if (cli_profile_setup(&o.prof, &reg)) { /* --profile: sampling inside the measured samples */
    cli_region_finish(&reg);
    setup = EXIT_USAGE;
  }
  if (setup) {
    opf_case_server_stop(srv);
    opf_session_free(ses);
    for (int i = 0; i < o.n_out; i++) free(paths[i]);
    free(cl.v);
    return setup;
  }
  cli_region_install(&reg, ss);
  opf_context *ctx = opf_session_context(ses);
  cli_blas_context(ctx);
  rc = cli_backend_context(&bk, ctx, &e); /* callgrind child: simulated counters */
  cli_peer *peer = o.peer_lib >= 0 ? cli_peer_new(o.peer_lib, o.peer_check) : NULL;
  if (peer) snprintf(ctx->peer, sizeof ctx->peer, "%s", opf_peer_lib_name((opf_peer_lib)o.peer_lib));
  if (!rc) rc = opf_session_begin(ses, &e);

  int failed = 0, total = 0, done = 0, tty = isatty(2);
  for (int i = 0; i < cl.n; i++) total += case_passes(&o, &cl.v[i], pass_mask, NULL);
  cli_progress prog;
  cli_progress_start(&prog, total, tty);
  cli_stop_install(o.isolate);
  char *ab_lines = NULL; /* --interleave: the per-case A/B summary, printed after the report */
  size_t ab_len = 0;
  FILE *ab_out = o.interleave ? open_memstream(&ab_lines, &ab_len) : NULL;
  for (int i = 0; !rc && i < cl.n && !cli_stop_requested; i++) {
    run_case *c = &cl.v[i];
    opf_pass passes[OPF_NPASSES];
    opf_result res[2 * OPF_NPASSES], more[OPF_NPASSES];
    int np = case_passes(&o, c, pass_mask, passes), nres = np;
    int partner = o.interleave ? ab_partner(&cl, i, &o) : -1;
    if (partner >= 0 && c->c.impl == o.impl_b) continue; /* measured with its A */
    cli_progress_case(&prog, c->c.op->name, opf_dtype_name(c->c.dtype), np);
    done += np;
    ss->case_index = i;
    if (partner >= 0) { /* --interleave: A and B in paired rounds, B's results after A's */
      for (int k = 0; k < np; k++)
        opf_measure_ab(ss, &c->c, &cl.v[partner].c, c->set, passes[k], pmu, o.reps, &res[k], &res[np + k]);
      nres = 2 * np;
      done += np;
      for (int k = 0; k < np && ab_out; k++) ab_line(ab_out, &res[k]);
    }
    for (int rep = 0; partner < 0 && rep < o.reps && (rep == 0 || !cli_stop_requested); rep++) {
      opf_result *into = rep ? more : res; /* repetitions after the first merge into res */
      if (o.isolate) {
        cli_isolate_run(srv, i, &c->c, c->set, passes, np, o.timeout, pmu, &cli_stop_requested, into);
      } else {
        for (int k = 0; k < np; k++) {
          /* post-processed below, once, with the isolated and merged results */
          opf_measure(ss, &c->c, c->set, passes[k], pmu, &into[k]);
          /* callgrind child: this pass's dumps, before the next pass (bwd after fwd) makes its own */
          cli_backend_result(&bk, &into[k]);
          cli_profile_attach(&o.prof, &into[k]);
        }
      }
      for (int k = 0; rep && k < np; k++) opf_result_merge(&res[k], &more[k]);
    }
    for (int k = 0; k < nres; k++) {
      opf_result *r = &res[k];
      const opf_case *rc_case = k < np ? &c->c : &cl.v[partner].c;
      opf_session_finish_result(ses, r); /* isolated and merged results too */
      failed += r->status >= OPF_ST_ERROR;
      cli_progress_result(&prog, r);
      if (o.verbose) {
        if (tty) fputs("\r\033[K", stderr); /* the progress indicator is redrawn next case */
        cli_verbose_line("run", r, &o.s);
      }
      cli_profile_collect(&o.prof, r);
      /* --baseline: kept until the peer has run, then joined and recorded (peer.c) */
      if (peer && !cli_peer_keep(peer, rc_case, r)) continue;
      opf_session_record(ses, r);
      opf_result_release(r);
    }
  }
  if (tty && peer) fprintf(stderr, "\r\033[K[peer] %s", opf_peer_lib_name((opf_peer_lib)o.peer_lib));
  int n_em;
  opf_emitter **em = opf_session_emitters(ses, &n_em);
  int mismatches = peer ? cli_peer_finish(peer, &o.s, ctx, em, n_em, cli_stop_requested > 0) : 0;
  if (cli_stop_requested) ctx->interrupted = 1;
  if (tty) fprintf(stderr, "\r\033[K");
  cli_region_finish(&reg);
  opf_case_server_stop(srv);
  if (opf_session_end(ses, !rc, &e) && !rc) rc = OPF_EIO;
  if (ab_out) { /* --interleave: after the reports */
    fclose(ab_out);
    if (!rc && ab_len) {
      fflush(stdout);
      printf("\npaired A/B (%d interleaved rounds per case; ratio > 1: %s slower):\n%s", o.reps,
             opf_impl_name(o.impl_a), ab_lines);
    }
    free(ab_lines);
  }
  if (!rc) cli_progress_finish(&prog, paths, o.n_out - (o.store.json_fmt[0] != 0)); /* not the store's */
  for (int i = 0; i < o.n_out; i++) free(paths[i]);
  int store_rc = cli_store_finish(&o.store, !rc);
  int prof_rc = cli_profile_finish(&o.prof, !rc); /* --profile-folded FILE */
  opf_session_free(ses);
  free(cl.v);
  cli_peer_free(peer);
  if (rc) return cli_usage_error("%s", e.msg[0] ? e.msg : "cannot write the report");
  if (prof_rc || store_rc) return EXIT_USAGE;
  int gate = EXIT_OK;
  if (o.compare_baseline) {
    opf_cmp_opts co = {.metric = o.metric, .threshold = o.threshold, .alpha = 0.05};
    fflush(stdout);
    printf("\nbaseline '%s':\n", o.compare_baseline);
    gate = cli_compare_print(base_cmp_path, base_run_path, &co, 0, "table", NULL);
  }
  if (gate == EXIT_USAGE) return gate;
  if (cli_stop_requested) {
    fprintf(stderr, "opperf: interrupted: %d of %d case passes done, results written\n", done, total);
    return 130;
  }
  return failed || gate || mismatches ? EXIT_FAILED : EXIT_OK;
}

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

#include "backend.h" /* --backend callgrind */
#include "isolate.h" /* --isolate, --timeout */
#include "peer.h"    /* --baseline torch|numpy, --check */
#include "profile_cli.h" /* --profile */
#include "opperf/compare.h"
#include "cli.h"

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
  int child_case, child_fd; /* internal: this process measures one case for an isolating parent */
  cli_backend_kind backend; /* --backend: src/cli/backend.c */
  const char *metric;     /* --metric: what --compare-baseline compares (time by default) */
  int reps;               /* --repetitions: independent measurements per case, merged */
  unsigned impls;         /* --impl: mask of 1 << implementation id (default all) */
  const char *impl_list;  /* --impl as given: parsed once every --plugin is loaded */
  int verbose;            /* -v / OPPERF_VERBOSE: one opperf_verbose line per case pass */
  const char *perf_ctl;   /* --perf-control SPEC (NULL: $OPPERF_PERF_CONTROL) */
  int peer_lib, peer_check; /* --baseline torch|numpy (-1: none), --check */
  cli_profile prof;       /* --profile, --profile-*: src/cli/profile_cli.c */
  const char *blas_kernel; /* --blas-kernel auto|native|NAME (NULL: $OPPERF_BLAS_KERNEL) */
} run_opts;

static void usage(void) {
  printf(
      "usage: opperf run [options] [OP|CATEGORY|GLOB ...]\n\n"
      "Measures each operator on its own. Without names, every operator runs.\n\n"
      "cases:\n"
      "  --shapes SETS        shape sets: standard,skewed (default), small, large, huge, test, all\n"
      "  --input NAME=SHAPE   custom input shape, e.g. --input x=64x3x32x32 (repeatable);\n"
      "                       replaces the default shape sets with one custom case\n"
      "  --input NAME=@F.npy  real data from a NumPy .npy file (its shape and dtype)\n"
      "  --random-shapes N    N valid random cases per operator (drawn from its default\n"
      "                       entries; --seed S picks them: same seed, same shapes and data)\n"
      "  --param KEY=VALUE    param for every case, e.g. --param axis=0 (repeatable)\n"
      "  --config FILE.json   custom cases: [{\"op\":..., \"inputs\":{...}, \"params\":{...}, \"dtype\":...}]\n"
      "  --dtype LIST         float32 (default), float64, int32, int64, bool, or all\n"
      "  --pass LIST          fwd, bwd, both (forward+backward); default fwd,bwd\n"
      "  --impl LIST          implementations to run side by side: native (the operator's\n"
      "                       kernels), unfused (a fused operator's chain of separate\n"
      "                       operators), a built-in alternative (conv2d: im2col, winograd;\n"
      "                       conv2d_transpose: winograd; transposed convolutions: col2im),\n"
      "                       a plugin's name, or all (default: all but the built-in\n"
      "                       alternatives)\n"
      "  --plugin LIB.so      load operators and implementations from a plugin (repeatable;\n"
      "                       see opperf(1), PLUGINS)\n"
      "  --check              check each case's forward outputs against the operator's\n"
      "                       reference first (a mismatch fails the case: status error);\n"
      "                       with --baseline also against the peer (see below)\n"
      "measurement:\n"
      "  --warmup SEC         warm-up time per case (default 0.05)\n"
      "  --min-time SEC       measure at least this long per case and pass (default 0.05)\n"
      "  --target-ci PCT      then stop once the 95%% confidence interval of the median is\n"
      "                       at most PCT of it wide (default 3%%; 0: stop at --min-time)\n"
      "  --ci-time SEC        ... or after this long if it never gets that tight (default 0.25)\n"
      "  --max-time SEC       stop after this long once 3 samples exist (default 3)\n"
      "  --runs N             exactly N samples per case (overrides the time limits)\n"
      "  --sample-time SEC    calibrate calls per sample to last this long (default 0.002)\n"
      "  --threads N          OpenMP and OpenBLAS threads (default: all CPUs)\n"
      "  --cpu LIST           pin to CPUs, e.g. 0 or 0-1\n"
      "  --cache warm|cold    cold evicts caches before every sample (1 call per sample)\n"
      "  --seed N             seed of all generated inputs (default 42)\n"
      "  --events LIST        counters: sw (default), core, cache, tlb, branch, any libpfm4\n"
      "                       event name, or none\n"
      "  --backend callgrind  re-run under valgrind's callgrind: simulated, deterministic\n"
      "                       counters per call (sim:Ir, sim:D1mr, ...); times are not real\n"
      "  --blas-kernel K      OpenBLAS kernel family: auto (default, also $OPPERF_BLAS_KERNEL):\n"
      "                       when OpenBLAS fell back below what the CPU runs (a CPU newer\n"
      "                       than the library), use the CPU's family (SkylakeX, Cooperlake,\n"
      "                       Haswell, ...); an OPENBLAS_CORETYPE of the environment is kept;\n"
      "                       native: OpenBLAS's own choice; NAME: that core (e.g. Haswell)\n"
      "output:\n"
      "  --format LIST        table (default), json, jsonl (streamed), csv, md, gbench (Google\n"
      "                       Benchmark JSON), trace (Chrome trace events: Perfetto,\n"
      "                       chrome://tracing); FMT=FILE writes that format to FILE\n"
      "  -v, --verbose        one machine-readable line per case pass on stderr as it ends\n"
      "                       (also OPPERF_VERBOSE=1; fields in opperf(1))\n"
      "  --perf-control SPEC  under `perf record -D -1 --control=SPEC`: enable perf around each\n"
      "                       measured sample only (SPEC fifo:CTL,ACK or fd:CTL,ACK; also\n"
      "                       $OPPERF_PERF_CONTROL); see scripts/opperf-flamegraph\n"
      "  -o FILE              write the (non-table) report to FILE, atomically\n"
      "  --save-tensors DIR   write each case's inputs and outputs as .npy files into DIR\n"
      CLI_PROFILE_USAGE
      "isolation:\n"
      "  --isolate            run each case in its own process: a crash or hang becomes a\n"
      "                       result (crashed/timeout) and the run goes on (default when\n"
      "                       several operators run)\n"
      "  --no-isolate         run every case in this process\n"
      "  --timeout SEC        kill a case after SEC seconds (implies --isolate)\n"
      "  --repetitions N      measure each case N times (each in a fresh process when\n"
      "                       isolated, else on fresh allocations) and merge; the gate then\n"
      "                       also requires a change beyond the repetitions' spread\n"
      "  Ctrl-C (SIGINT/SIGTERM) stops after the current case and writes the finished results,\n"
      "  marked interrupted (exit 130); a second Ctrl-C stops at once.\n"
      "regression gate:\n"
      "  --save-baseline NAME     also store this run's JSON report as baseline NAME\n"
      "  --compare-baseline NAME  compare with baseline NAME (see opperf compare); exit 1\n"
      "                           when a case regressed significantly\n"
      "  --threshold T            smallest change that counts (default 5%%)\n"
      "  --metric M               what to compare: time (default), instructions, cycles or\n"
      "                           any counter of the run (see opperf compare)\n"
      "  --baseline-dir DIR       where baselines live (default $OPPERF_BASELINE_DIR, else\n"
      "                           $XDG_DATA_HOME/opperf/baselines or ~/.local/share/...)\n"
      "side by side (scripts/opperf-peer.py under /usr/bin/python3, or $OPPERF_PYTHON):\n"
      "  --baseline torch|numpy  also time the same cases with PyTorch or NumPy on the same\n"
      "                       inputs, after ours; adds columns peer, ours/peer (> 1: opperf\n"
      "                       slower) and per-category geometric means\n"
      "  --check              also compare outputs (and input gradients) with the peer's;\n"
      "                       exit 1 on a mismatch\n"
      "  --dry-run            list the cases that would run (with --baseline: each case's\n"
      "                       peer equivalent, or why it has none), and exit\n");
}

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

static int parse_args(int argc, char **argv, run_opts *o) {
  enum { O_SHAPES = 256, O_INPUT, O_PARAM, O_CONFIG, O_DTYPE, O_PASS, O_WARMUP, O_MINTIME,
         O_TARGETCI, O_CITIME,
         O_MAXTIME, O_RUNS, O_SAMPLE, O_THREADS, O_CPU, O_CACHE, O_SEED, O_EVENTS, O_FORMAT,
         O_DRY, O_BACKEND, O_RANDOM, O_SAVE, O_SAVE_BASE, O_CMP_BASE, O_BASE_DIR, O_THRESH,
         O_ISOLATE, O_NO_ISOLATE, O_TIMEOUT, O_CHILD_CASE, O_CHILD_FD, O_IMPL, O_REPS, O_METRIC,
         O_PERF_CTL, O_PEER, O_PLUGIN, O_CHECK, O_BLAS,
         O_PROFILE, O_PROFILE_LAST = O_PROFILE + CLI_PROFILE_NOPTS - 1 };
  static const struct option opts[] = {
      {"shapes", required_argument, 0, O_SHAPES}, {"input", required_argument, 0, O_INPUT},
      {"param", required_argument, 0, O_PARAM},   {"config", required_argument, 0, O_CONFIG},
      {"dtype", required_argument, 0, O_DTYPE},   {"pass", required_argument, 0, O_PASS},
      {"warmup", required_argument, 0, O_WARMUP}, {"min-time", required_argument, 0, O_MINTIME},
      {"target-ci", required_argument, 0, O_TARGETCI}, {"ci-time", required_argument, 0, O_CITIME},
      {"max-time", required_argument, 0, O_MAXTIME}, {"runs", required_argument, 0, O_RUNS},
      {"sample-time", required_argument, 0, O_SAMPLE}, {"threads", required_argument, 0, O_THREADS},
      {"cpu", required_argument, 0, O_CPU},       {"cache", required_argument, 0, O_CACHE},
      {"seed", required_argument, 0, O_SEED},     {"events", required_argument, 0, O_EVENTS},
      {"format", required_argument, 0, O_FORMAT}, {"output", required_argument, 0, 'o'},
      {"dry-run", no_argument, 0, O_DRY},         {"help", no_argument, 0, 'h'},
      {"backend", required_argument, 0, O_BACKEND},
      {"random-shapes", required_argument, 0, O_RANDOM}, {"save-tensors", required_argument, 0, O_SAVE},
      {"save-baseline", required_argument, 0, O_SAVE_BASE}, {"compare-baseline", required_argument, 0, O_CMP_BASE},
      {"baseline-dir", required_argument, 0, O_BASE_DIR}, {"threshold", required_argument, 0, O_THRESH},
      {"isolate", no_argument, 0, O_ISOLATE}, {"no-isolate", no_argument, 0, O_NO_ISOLATE},
      {"timeout", required_argument, 0, O_TIMEOUT}, {"child-case", required_argument, 0, O_CHILD_CASE},
      {"child-fd", required_argument, 0, O_CHILD_FD}, {"impl", required_argument, 0, O_IMPL},
      {"repetitions", required_argument, 0, O_REPS}, {"metric", required_argument, 0, O_METRIC},
      {"verbose", no_argument, 0, 'v'}, {"perf-control", required_argument, 0, O_PERF_CTL},
      {"baseline", required_argument, 0, O_PEER}, {"check", no_argument, 0, O_CHECK},
      {"plugin", required_argument, 0, O_PLUGIN}, {"blas-kernel", required_argument, 0, O_BLAS},
      CLI_PROFILE_OPTIONS(O_PROFILE), {0, 0, 0, 0}};
  opf_settings_default(&o->s);
  o->threshold = 0.05;
  o->isolate = -1;
  o->child_case = o->child_fd = -1;
  o->sets = "standard,skewed";
  o->dtypes = NULL;
  o->passes = "fwd,bwd";
  o->impls = cli_impls_default();
  o->reps = 1;
  o->metric = "time";
  o->peer_lib = -1;
  optind = 1;
  opterr = 0;
  int ch;
  long long v;
  while ((ch = getopt_long(argc, argv, ":o:hv", opts, NULL)) != -1) {
    switch (ch) {
    case 'h': usage(); return -1;
    case 'v': o->verbose = 1; break;
    case O_PERF_CTL: o->perf_ctl = optarg; break;
    case O_PROFILE ... O_PROFILE_LAST: if (cli_profile_arg(&o->prof, ch - O_PROFILE, optarg)) return 2; break;
    case O_SHAPES: o->sets = optarg; break;
    case O_INPUT:
    case O_PARAM: {
      if (!strchr(optarg, '=') || optarg[0] == '=')
        return cli_usage_error("--%s expects NAME=VALUE, not '%s'", ch == O_INPUT ? "input" : "param", optarg);
      if (ch == O_INPUT && o->n_inputs < MAX_ITEMS) o->inputs[o->n_inputs++] = optarg;
      else if (ch == O_PARAM && o->n_params < MAX_ITEMS) o->params[o->n_params++] = optarg;
      else return cli_usage_error("too many --input/--param items");
      break;
    }
    case O_CONFIG: o->config = optarg; break;
    case O_IMPL: o->impl_list = optarg; break;
    case O_PLUGIN: if (cli_plugin_load(optarg)) return 2; break;
    case O_CHECK: o->s.check = o->peer_check = 1; break; /* the reference, and the peer if any */
    case O_DTYPE: o->dtypes = optarg; break;
    case O_PASS: o->passes = optarg; o->passes_explicit = 1; break;
    case O_WARMUP: if (cli_parse_seconds("--warmup", optarg, &o->s.warmup)) return 2; break;
    case O_MINTIME: if (cli_parse_seconds("--min-time", optarg, &o->s.min_time)) return 2; break;
    case O_CITIME: if (cli_parse_seconds("--ci-time", optarg, &o->s.ci_time)) return 2; break;
    case O_TARGETCI:
      if (!cli_parse_fraction(optarg, &o->s.ci_target))
        return cli_usage_error("--target-ci needs a share such as 2%% or 0.02 (0: off), not '%s'", optarg);
      break;
    case O_MAXTIME: if (cli_parse_seconds("--max-time", optarg, &o->s.max_time)) return 2; break;
    case O_SAMPLE: if (cli_parse_seconds("--sample-time", optarg, &o->s.sample_time)) return 2; break;
    case O_METRIC: o->metric = optarg; break;
    case O_REPS:
      if (!cli_parse_int(optarg, &v) || v < 1 || v > OPF_MAX_REPS)
        return cli_usage_error("--repetitions needs a count between 1 and %d, not '%s'", OPF_MAX_REPS, optarg);
      o->reps = (int)v;
      break;
    case O_RUNS:
      if (!cli_parse_int(optarg, &v) || v < 1 || v > 1000000)
        return cli_usage_error("--runs needs a count between 1 and 1000000, not '%s'", optarg);
      o->s.min_runs = o->s.max_runs = (int)v;
      o->s.min_time = 0;
      o->s.max_time = 1e9;
      break;
    case O_THREADS:
      if (!cli_parse_int(optarg, &v) || v < 1 || v > 1024)
        return cli_usage_error("--threads needs a count between 1 and 1024, not '%s'", optarg);
      o->s.threads = (int)v;
      break;
    case O_CPU: snprintf(o->s.cpus, sizeof o->s.cpus, "%s", optarg); break;
    case O_CACHE:
      if (!strcmp(optarg, "warm")) o->s.cache = OPF_CACHE_WARM;
      else if (!strcmp(optarg, "cold")) o->s.cache = OPF_CACHE_COLD;
      else return cli_usage_error("--cache must be warm or cold, not '%s'", optarg);
      break;
    case O_SEED:
      if (!cli_parse_int(optarg, &v) || v < 0)
        return cli_usage_error("--seed needs a non-negative integer, not '%s'", optarg);
      o->s.seed = (uint64_t)v;
      break;
    case O_EVENTS:
      if (strlen(optarg) >= sizeof o->s.events) return cli_usage_error("--events list is too long");
      if (cli_check_list(optarg, "--events")) return EXIT_USAGE;
      snprintf(o->s.events, sizeof o->s.events, "%s", strcmp(optarg, "none") ? optarg : "");
      break;
    case O_FORMAT: if (parse_formats(o, optarg)) return 2; break;
    case 'o': o->output = optarg; break;
    case O_DRY: o->dry_run = 1; break;
    case O_RANDOM:
      if (!cli_parse_int(optarg, &v) || v < 1 || v > 10000)
        return cli_usage_error("--random-shapes needs a count between 1 and 10000, not '%s'", optarg);
      o->random_shapes = (int)v;
      break;
    case O_ISOLATE: o->isolate = 1; break;
    case O_NO_ISOLATE: o->isolate = 0; break;
    case O_TIMEOUT:
      if (!cli_parse_double(optarg, &o->timeout) || !(o->timeout > 0) || o->timeout > 1e6)
        return cli_usage_error("--timeout needs a positive number of seconds, not '%s'", optarg);
      break;
    case O_CHILD_CASE:
    case O_CHILD_FD:
      if (!cli_parse_int(optarg, &v) || v < 0 || v > 1 << 30) return cli_usage_error("bad internal option");
      if (ch == O_CHILD_CASE) o->child_case = (int)v;
      else o->child_fd = (int)v;
      break;
    case O_SAVE_BASE: o->save_baseline = optarg; break;
    case O_CMP_BASE: o->compare_baseline = optarg; break;
    case O_BASE_DIR: o->baseline_dir = optarg; break;
    case O_THRESH:
      if (!cli_parse_fraction(optarg, &o->threshold))
        return cli_usage_error("--threshold needs a change such as 5%% or 0.05, not '%s'", optarg);
      break;
    case O_SAVE:
      if (strlen(optarg) >= sizeof o->s.save_dir - 64) return cli_usage_error("--save-tensors: directory name too long");
      snprintf(o->s.save_dir, sizeof o->s.save_dir, "%s", optarg);
      break;
    case O_BACKEND: if (cli_backend_parse(optarg, &o->backend)) return 2; break;
    case O_PEER: if (cli_peer_parse(optarg, &o->peer_lib)) return 2; break;
    case O_BLAS: o->blas_kernel = optarg; break;
    case ':': return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
    default: return cli_usage_error("run: unknown option '%s' (see opperf run -h)", argv[optind - 1]);
    }
  }
  if (o->s.max_time < o->s.min_time) o->s.max_time = o->s.min_time;
  if (check_sets(o->sets)) return 2;
  if (o->impl_list && cli_impls_parse(o->impl_list, &o->impls)) return 2; /* after --plugin */
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
  if (o->child_case >= 0) return 0; /* a case process: no outputs of its own */
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
    if (passes) passes[n] = (opf_pass)p;
    n++;
  }
  return n;
}

/* --child-case: measure one case for an isolating parent and send the results down the pipe. */
static int run_child(run_opts *o, case_list *cl, int pass_mask, opf_pmu *pmu, cli_region *reg) {
  int rc = 0;
  if (o->child_case < cl->n) {
    run_case *c = &cl->v[o->child_case];
    opf_pass passes[OPF_NPASSES];
    int np = case_passes(o, c, pass_mask, passes);
    o->s.case_index = o->child_case;
    for (int k = 0; k < np && !rc; k++) {
      opf_result r;
      opf_measure(&o->s, &c->c, c->set, passes[k], pmu, &r);
      cli_profile_attach(&o->prof, &r);
      rc = cli_child_send(o->child_fd, &r);
      opf_result_release(&r);
    }
  } else {
    rc = -1;
  }
  cli_region_finish(reg);
  cli_profile_finish(&o->prof, 0);
  opf_pmu_free(pmu);
  free(cl->v);
  return rc ? EXIT_FAILED : EXIT_OK;
}

int cmd_run(int argc, char **argv) {
  run_opts o;
  memset(&o, 0, sizeof o);
  cli_backend_save_args(argc, argv); /* before parse_args tokenises --format in place */
  cli_blas_save_args(argc, argv);
  cli_isolate_save_args(argc, argv);
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
      o.fmt[0] == OPF_FMT_TABLE && !o.fmt_path[0] && !o.output && o.child_case < 0 &&
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

  opf_err e;
  opf_pmu *pmu = NULL;
  if (opf_pmu_create(&pmu, o.s.events, NULL, &e)) {
    free(cl.v);
    return cli_usage_error("%s", e.msg);
  }
  if (opf_runtime_setup(&o.s, &e) || opf_pmu_open(pmu, &e)) {
    opf_pmu_free(pmu);
    free(cl.v);
    return cli_usage_error("%s", e.msg);
  }
  /* The measured-region hooks: the back-end's, then perf record control. */
  cli_region reg;
  if (cli_region_setup(&reg, &o.s, o.perf_ctl)) {
    opf_pmu_free(pmu);
    free(cl.v);
    return EXIT_USAGE;
  }
  if (cli_profile_setup(&o.prof, &reg)) { /* --profile: sampling inside the measured samples */
    cli_region_finish(&reg);
    opf_pmu_free(pmu);
    free(cl.v);
    return EXIT_USAGE;
  }
  cli_region_install(&reg, &o.s);
  if (o.child_case >= 0) return run_child(&o, &cl, pass_mask, pmu, &reg);
  opf_context *ctx = malloc(sizeof *ctx);
  char *paths[MAX_OUTPUTS];
  opf_emitter *em[MAX_OUTPUTS] = {0};
  resolve_paths(&o, paths);
  if (ctx) {
    opf_context_collect(ctx, &o.s, pmu, command);
    cli_blas_context(ctx);
    /* The harness's own cost per sample, on an empty operator: timer only, and with the
     * run's counters (absent when none of them opens: never a made-up figure). */
    const char *what[2] = {"timer", o.s.events};
    double per[2];
    if (opf_overhead_measure(what, o.s.events[0] ? 2 : 1, per, &e) == OPF_OK)
      for (int i = 0; i < 2 && i < (o.s.events[0] ? 2 : 1); i++)
        if (per[i] >= 0) {
          snprintf(ctx->overhead[ctx->n_overhead].what, sizeof ctx->overhead[0].what, "%s",
                   i ? "timer+counters" : "timer");
          ctx->overhead[ctx->n_overhead++].per_sample_s = per[i];
        }
  }
  if (ctx) rc = cli_backend_context(&bk, ctx, &e); /* callgrind child: simulated counters */
  cli_peer *peer = o.peer_lib >= 0 && o.child_case < 0 ? cli_peer_new(o.peer_lib, o.peer_check) : NULL;
  if (ctx && peer) snprintf(ctx->peer, sizeof ctx->peer, "%s", opf_peer_lib_name((opf_peer_lib)o.peer_lib));
  for (int i = 0; ctx && !rc && i < o.n_out; i++) rc = opf_emitter_begin(&em[i], o.fmt[i], paths[i], ctx, &e);

  /* Roofline: from the figures `opperf machine` cached; absent (no % column) otherwise. */
  opf_machine mach;
  char mpath[512];
  int have_machine = opf_machine_load(&mach, opf_machine_path(mpath, sizeof mpath), &e) == OPF_OK;
  if (ctx) ctx->have_machine = have_machine;

  int failed = 0, total = 0, done = 0, tty = isatty(2);
  for (int i = 0; i < cl.n; i++) total += case_passes(&o, &cl.v[i], pass_mask, NULL);
  cli_progress prog;
  cli_progress_start(&prog, total, tty);
  cli_stop_install(o.isolate);
  for (int i = 0; ctx && !rc && i < cl.n && !cli_stop_requested; i++) {
    run_case *c = &cl.v[i];
    opf_pass passes[OPF_NPASSES];
    opf_result res[OPF_NPASSES], more[OPF_NPASSES];
    int np = case_passes(&o, c, pass_mask, passes);
    cli_progress_case(&prog, c->c.op->name, opf_dtype_name(c->c.dtype), np);
    done += np;
    o.s.case_index = i;
    for (int rep = 0; rep < o.reps && (rep == 0 || !cli_stop_requested); rep++) {
      opf_result *into = rep ? more : res; /* repetitions after the first merge into res */
      if (o.isolate) {
        cli_isolate_run(i, &c->c, c->set, passes, np, o.timeout, pmu, &cli_stop_requested, into);
      } else {
        for (int k = 0; k < np; k++) {
          opf_measure(&o.s, &c->c, c->set, passes[k], pmu, &into[k]);
          /* callgrind child: this pass's dumps, before the next pass (bwd after fwd) makes its own */
          cli_backend_result(&bk, &into[k]);
          cli_profile_attach(&o.prof, &into[k]);
        }
      }
      for (int k = 0; rep && k < np; k++) opf_result_merge(&res[k], &more[k]);
    }
    for (int k = 0; k < np; k++) {
      opf_result *r = &res[k];
      if (have_machine) {
        r->roofline = opf_roofline_bound(&mach, r->dtype, o.s.threads, r->flops, r->bytes);
        r->roofline_time = opf_roofline_time(&mach, r->dtype, o.s.threads, r->flops, r->bytes);
      }
      failed += r->status >= OPF_ST_ERROR;
      cli_progress_result(&prog, r);
      if (o.verbose) {
        if (tty) fputs("\r\033[K", stderr); /* the progress indicator is redrawn next case */
        cli_verbose_line("run", r, &o.s);
      }
      cli_profile_collect(&o.prof, r);
      /* --baseline: kept until the peer has run, then joined and recorded (peer.c) */
      if (peer && !cli_peer_keep(peer, &c->c, r)) continue;
      for (int f = 0; f < o.n_out; f++) opf_emitter_record(em[f], r);
      opf_result_release(r);
    }
  }
  if (tty && peer) fprintf(stderr, "\r\033[K[peer] %s", opf_peer_lib_name((opf_peer_lib)o.peer_lib));
  int mismatches = peer && ctx ? cli_peer_finish(peer, &o.s, ctx, em, o.n_out, cli_stop_requested > 0) : 0;
  if (ctx && cli_stop_requested) ctx->interrupted = 1;
  if (tty) fprintf(stderr, "\r\033[K");
  cli_region_finish(&reg);
  if (ctx) opf_context_finish(ctx);
  for (int i = 0; i < o.n_out; i++) {
    if (em[i] && opf_emitter_end(em[i], !rc, &e) && !rc) rc = OPF_EIO;
    if (o.n_out > 1 && o.fmt[i] == OPF_FMT_TABLE && i + 1 < o.n_out && !paths[i]) fputc('\n', stdout);
  }
  if (!rc) cli_progress_finish(&prog, paths, o.n_out);
  for (int i = 0; i < o.n_out; i++) free(paths[i]);
  int prof_rc = cli_profile_finish(&o.prof, !rc); /* --profile-folded FILE */
  opf_pmu_free(pmu);
  free(ctx);
  free(cl.v);
  cli_peer_free(peer);
  if (rc) return cli_usage_error("%s", e.msg[0] ? e.msg : "cannot write the report");
  if (prof_rc) return EXIT_USAGE;
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

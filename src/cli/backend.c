/* backend.c: `opperf run --backend callgrind`. The parent validates as usual, then re-runs the
 * same command (/proc/self/exe) under valgrind's callgrind with a pinned cache geometry and
 * returns the child's status. The child makes its settings deterministic, brackets samples with
 * client requests, and reads its own dumps after each case to attach simulated counters. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_backend.h"
#include "cli.h"

/* The parent's temporary directory; its presence (together with RUNNING_ON_VALGRIND) makes a
 * process the child. An environment variable rather than a hidden option keeps the command
 * line recorded in the child's report exactly the one the user typed. */
#define ENV_DIR "OPPERF_CALLGRIND_DIR"
/* Set (to anything): keep the dumps of every counted sample for callgrind_annotate. */
#define ENV_KEEP "OPPERF_CALLGRIND_KEEP"
#define DEFAULT_RUNS 3

/* AddressSanitizer's shadow memory and valgrind exclude each other. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZER_BUILD 1
#endif
#endif
#ifndef SANITIZER_BUILD
#define SANITIZER_BUILD 0
#endif

static char **saved_argv;
static int saved_argc;

static void free_args(void) {
  for (int i = 0; saved_argv && i < saved_argc; i++) free(saved_argv[i]);
  free(saved_argv);
  saved_argv = NULL;
  saved_argc = 0;
}

void cli_backend_save_args(int argc, char **argv) {
  free_args();
  saved_argv = calloc((size_t)argc + 1, sizeof *saved_argv);
  if (!saved_argv) return;
  for (int i = 0; i < argc; i++)
    if (!(saved_argv[i] = strdup(argv[i]))) {
      saved_argc = i;
      free_args();
      return;
    }
  saved_argc = argc;
}

int cli_backend_parse(const char *name, cli_backend_kind *kind) {
  if (!strcmp(name, "native")) *kind = CLI_BK_NATIVE;
  else if (!strcmp(name, "callgrind")) *kind = CLI_BK_CALLGRIND;
  else return cli_usage_error("unknown backend '%s' (use native or callgrind)", name);
  return 0;
}

static int find_in_path(const char *prog, char *out, size_t n) {
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path;;) {
    size_t l = strcspn(p, ":");
    if (l && (size_t)snprintf(out, n, "%.*s/%s", (int)l, p, prog) < n) {
      struct stat st;
      if (!stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK)) return 1;
    }
    if (!p[l]) break;
    p += l + 1;
  }
  return 0;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[PATH_MAX];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path) unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

/* The lines of valgrind's log that say why the child failed (on stderr, after our message). */
static void print_log_excerpt(const char *dir) {
  char path[PATH_MAX], line[512];
  snprintf(path, sizeof path, "%s/valgrind.log", dir);
  FILE *f = fopen(path, "r");
  if (!f) return;
  static const char *keys[] = {"unhandled instruction", "Process terminating", "valgrind:",
                               "Illegal", "Fatal", "rror", "Unrecognised", "at 0x", NULL};
  int shown = 0;
  while (shown < 8 && fgets(line, sizeof line, f)) {
    int hit = 0;
    for (int i = 0; keys[i]; i++) hit |= strstr(line, keys[i]) != NULL;
    if (!hit) continue;
    char *s = line;
    if (s[0] == '=' && s[1] == '=') { /* "==1234== " */
      char *q = strstr(s + 2, "== ");
      if (q) s = q + 3;
    }
    fprintf(stderr, "  %s", s);
    shown++;
  }
  fclose(f);
  fprintf(stderr, "  (valgrind's full log: %s)\n", path);
}

/* OpenBLAS cores whose kernels use AVX-512 (valgrind 3.19 cannot decode it). */
static int avx512_core(const char *core) {
  static const char *cores[] = {"skylakex", "cooperlake", "sapphirerapids", NULL};
  for (int i = 0; cores[i]; i++)
    if (!strcasecmp(core, cores[i])) return 1;
  return 0;
}

static int run_parent(char **argv, int argc) {
  char vg[PATH_MAX], exe[PATH_MAX];
  if (SANITIZER_BUILD)
    return cli_usage_error("--backend callgrind does not work in a sanitizer build (AddressSanitizer and valgrind exclude each other)");
  if (!find_in_path("valgrind", vg, sizeof vg))
    return cli_usage_error("--backend callgrind needs valgrind (apt-get install valgrind)");
  ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (l <= 0) return cli_usage_error("--backend callgrind: cannot find this program (/proc/self/exe): %s", strerror(errno));
  exe[l] = '\0';
  const char *tmp = getenv("TMPDIR");
  char dir[256];
  snprintf(dir, sizeof dir, "%s/opperf-cg.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return cli_usage_error("--backend callgrind: cannot create a directory in '%s': %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));

  char out_opt[PATH_MAX + 32], log_opt[PATH_MAX + 32];
  snprintf(out_opt, sizeof out_opt, "--callgrind-out-file=%s/cg.out", dir);
  snprintf(log_opt, sizeof log_opt, "--log-file=%s/valgrind.log", dir);
  const char *fixed[] = {vg, "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=yes",
                         "--separate-threads=no", "--cache-sim=yes", "--branch-sim=yes",
                         "--I1=" OPF_CG_I1, "--D1=" OPF_CG_D1, "--LL=" OPF_CG_LL, "--dump-line=no",
                         out_opt, log_opt, exe};
  size_t nfixed = sizeof fixed / sizeof fixed[0];
  char **args = calloc(nfixed + (size_t)argc + 1, sizeof *args);
  if (!args) {
    remove_dir(dir);
    return cli_usage_error("out of memory");
  }
  for (size_t i = 0; i < nfixed; i++) args[i] = (char *)fixed[i];
  for (int i = 0; i < argc; i++) args[nfixed + (size_t)i] = argv[i]; /* argv[0] is "run" */

  /* Idle OpenMP threads must sleep, not spin: under valgrind a spinning thread's instructions
   * would be counted as the operator's, and would differ from run to run. */
  setenv(ENV_DIR, dir, 1);
  setenv("OMP_WAIT_POLICY", "passive", 1);
  /* valgrind's CPUID hides AVX-512, so OpenBLAS's DYNAMIC_ARCH picks an AVX2 core by itself
   * (Haswell); only a core forced to an AVX-512 one would die on its first instruction. */
  const char *core = getenv("OPENBLAS_CORETYPE");
  if (core && avx512_core(core)) {
    fprintf(stderr, "opperf: OPENBLAS_CORETYPE=%s uses AVX-512, which valgrind cannot run: Haswell under callgrind\n", core);
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  }
  fflush(NULL);
  struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGINT, &ign, &old_int); /* Ctrl-C reaches the child; we wait and clean up */
  sigaction(SIGQUIT, &ign, &old_quit);
  pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    execv(vg, args);
    fprintf(stderr, "opperf: cannot run '%s': %s\n", vg, strerror(errno));
    _exit(127);
  }
  int status = 0, werr = 0;
  if (pid < 0) werr = errno;
  else
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) {
        werr = errno;
        break;
      }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  unsetenv(ENV_DIR);
  free(args);
  if (werr) {
    remove_dir(dir);
    return cli_usage_error("--backend callgrind: cannot run valgrind: %s", strerror(werr));
  }

  char marker[PATH_MAX];
  snprintf(marker, sizeof marker, "%s/started", dir);
  int started = !access(marker, F_OK);
  if (WIFEXITED(status) && started) {
    /* The child printed its own messages and wrote the reports. */
    if (getenv(ENV_KEEP)) fprintf(stderr, "opperf: callgrind dumps kept in %s (callgrind_annotate %s/cg.out.N)\n", dir, dir);
    else remove_dir(dir);
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGINT) {
      remove_dir(dir);
      return 130;
    }
    fprintf(stderr, "opperf: the callgrind run died with signal %d (%s); no report was written:\n", sig, strsignal(sig));
    print_log_excerpt(dir);
#if defined(__x86_64__) || defined(__i386__)
    if (sig == SIGILL)
      fprintf(stderr, "  valgrind cannot decode some instruction (3.19 has no AVX-512): kernels need runtime "
                      "dispatch (OPF_VEC) or a build without -march=native\n");
#else
    if (sig == SIGILL)
      fprintf(stderr, "  valgrind cannot decode some instruction: a build without -march=native may help\n");
#endif
    return EXIT_FAILED;
  }
  fprintf(stderr, "opperf: valgrind could not run opperf (exit status %d):\n", WEXITSTATUS(status));
  print_log_excerpt(dir);
  return EXIT_USAGE;
}

int cli_backend_setup(cli_backend *b, cli_backend_kind kind, opf_settings *s) {
  memset(b, 0, sizeof *b);
  b->kind = kind;
  int rc = CLI_BACKEND_MEASURE;
  const char *dir = getenv(ENV_DIR);
  if (kind == CLI_BK_NATIVE) {
  } else if (s->events[0] && strcmp(s->events, "sw")) {
    rc = cli_usage_error("--events cannot be combined with --backend callgrind (its counters are simulated: sim:Ir, sim:D1mr, ...)");
  } else if (!dir || !opf_cg_running()) {
    if (saved_argv) rc = run_parent(saved_argv, saved_argc);
    else rc = cli_usage_error("out of memory");
  }
  free_args();
  if (kind == CLI_BK_NATIVE || rc != CLI_BACKEND_MEASURE) return rc;

  /* The child, under valgrind. */
  b->child = 1;
  snprintf(b->dir, sizeof b->dir, "%s", dir);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/started", dir);
  FILE *f = fopen(path, "w");
  if (f) fclose(f);
  /* Deterministic settings: one warm-up call, one call per sample, exactly N counted samples
   * (--runs, default 3) after one sample that warms the simulated caches; no perf counters. */
  int n = s->min_runs == s->max_runs ? s->min_runs : DEFAULT_RUNS;
  b->runs = n;
  s->min_runs = s->max_runs = n + 1;
  s->min_time = 0;
  s->max_time = 1e9;
  s->warmup_calls = 1;
  s->batch = 1;
  s->events[0] = '\0';
  snprintf(s->backend, sizeof s->backend, "callgrind");
  snprintf(path, sizeof path, "%s/cg.out", dir);
  opf_cg_region_init(&b->region, path);
  b->region.keep = getenv(ENV_KEEP) != NULL;
  b->hooks = opf_cg_hooks(&b->region);
  s->hooks = &b->hooks;
  return CLI_BACKEND_MEASURE;
}

int cli_backend_context(cli_backend *b, opf_context *ctx, opf_err *err) {
  if (!b->child) return OPF_OK;
  opf_err e;
  int rc = opf_cg_measure_overhead(&b->region, 3, &b->overhead, &e);
  if (rc) return opf_err_set(err, rc, "--backend callgrind: %s", e.msg);
  snprintf(b->creator, sizeof b->creator, "%s", b->region.creator);
  int n = ctx->n_events;
  opf_cg_context_events(ctx->events, &n, OPF_PMU_MAX_EVENTS, b->creator, &b->overhead);
  ctx->n_events = n;
  ctx->n_overhead = 0; /* the harness's time overhead, measured under valgrind: not real */
  snprintf(ctx->settings.events, sizeof ctx->settings.events, "callgrind");
  ctx->settings.min_runs = ctx->settings.max_runs = b->runs; /* the counted samples */
  return OPF_OK;
}

void cli_backend_result(cli_backend *b, opf_result *r) {
  if (!b->child) return;
  opf_cg_totals t = {0};
  int counted;
  opf_err e;
  int rc = opf_cg_region_collect(&b->region, &t, &counted, &e);
  int arc = !rc && r->status == OPF_ST_OK ? opf_cg_attach(r, &t, counted, &b->overhead) : OPF_OK;
  if (arc)
    rc = opf_err_set(&e, arc, "cannot attach %d callgrind dumps to %d samples (%s)", counted,
                     r->n_samples, opf_strerror(arc));
  opf_cg_totals_release(&t);
  if (rc && r->status == OPF_ST_OK) {
    r->status = OPF_ST_ERROR;
    snprintf(r->message, sizeof r->message, "--backend callgrind: %.480s", e.msg);
  }
}

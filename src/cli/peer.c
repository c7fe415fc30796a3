/* peer.c: `opperf run --baseline torch|numpy [--check]`: after our own measurements (so the
 * two never compete for the cores), writes the cases' inputs as .npy files (after our fill:
 * both sides compute on identical data), runs scripts/opperf-peer.py under /usr/bin/python3
 * (OPPERF_PYTHON) once per batch of about 1 GiB of tensors, compares outputs with --check, and
 * joins the answers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opperf/npy.h"
#include "cli_peer.h"

extern char **environ;

typedef struct kept {
  opf_case *c;
  opf_result r;
  int job; /* index of the request case that answers for this result */
} kept;

struct cli_peer {
  int lib, check;
  kept *v;
  int n, cap;
  opf_peer_result *joined; /* one per kept result: the reports point at them until they end */
};

int cli_peer_parse(const char *name, int *lib) {
  *lib = opf_peer_lib_parse(name);
  if (*lib < 0) return cli_usage_error("--baseline takes torch or numpy, not '%s'", name);
  return 0;
}

cli_peer *cli_peer_new(int lib, int check) {
  cli_peer *p = calloc(1, sizeof *p);
  if (p) {
    p->lib = lib;
    p->check = check;
  }
  return p;
}

int cli_peer_keep(cli_peer *p, const opf_case *c, opf_result *r) {
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 64;
    kept *v = realloc(p->v, sizeof *v * (size_t)cap);
    if (!v) return -1;
    p->v = v;
    p->cap = cap;
  }
  p->v[p->n].c = (opf_case *)c; /* the run's case list: re-allocated here for the inputs */
  p->v[p->n].r = *r;
  memset(r, 0, sizeof *r);
  p->n++;
  return 0;
}

void cli_peer_free(cli_peer *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++) opf_result_release(&p->v[i].r);
  free(p->v);
  free(p->joined);
  free(p);
}

/* ---- the script and its interpreter ---- */
static const char *python_path(void) {
  const char *e = getenv("OPPERF_PYTHON");
  return e && *e ? e : "/usr/bin/python3";
}

/* OPPERF_PEER_SCRIPT, else next to the executable: ../scripts (a build directory in the source
 * tree) or ../share/opperf (an installed opperf). */
static int script_path(char *buf, size_t n) {
  const char *e = getenv("OPPERF_PEER_SCRIPT");
  if (e && *e) return snprintf(buf, n, "%s", e) < (int)n && !access(buf, R_OK) ? 0 : -1;
  char exe[PATH_MAX];
  ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (l <= 0) return -1;
  exe[l] = '\0';
  const char *dir = dirname(exe);
  static const char *const rel[] = {"../scripts/opperf-peer.py", "../share/opperf/opperf-peer.py"};
  for (int i = 0; i < 2; i++)
    if (snprintf(buf, n, "%s/%s", dir, rel[i]) < (int)n && !access(buf, R_OK)) return 0;
  return -1;
}

/* Delete the files in dir (and dir itself unless keep_dir); OPPERF_PEER_KEEP keeps them all. */
static void clear_dir(const char *dir, int keep_dir) {
  if (getenv("OPPERF_PEER_KEEP")) {
    if (!keep_dir) fprintf(stderr, "opperf: --baseline: exchanged files kept in %s\n", dir);
    return;
  }
  DIR *d = opendir(dir);
  struct dirent *de;
  char p[PATH_MAX];
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.' && snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < (int)sizeof p) unlink(p);
  if (d) closedir(d);
  if (!keep_dir) rmdir(dir);
}

static void remove_dir(const char *dir) { clear_dir(dir, 0); }

/* Run PYTHON SCRIPT ARGS... with stdout to out_path and stderr to err_path; waits at most
 * timeout seconds (then kills it). Returns the exit status, -1 when it could not start, -2 on
 * timeout. */
static int run_script(const char *script, const char *arg, const char *arg2, const char *out_path,
                      const char *err_path, double timeout) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const char *py = python_path();
  char *argv[] = {(char *)py, (char *)script, (char *)arg, (char *)arg2, NULL};
  pid_t pid;
  fflush(NULL);
  int rc = posix_spawn(&pid, py, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) return -1;
  int status = 0;
  struct timespec tick = {0, 20 * 1000 * 1000};
  for (double waited = 0;; waited += 0.02) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return -1;
    if (waited > timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -2;
    }
    nanosleep(&tick, NULL);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The whole of a (small) file written by the script, NUL-terminated; NULL when unreadable. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  long size = -1;
  if (f && !fseek(f, 0, SEEK_END)) size = ftell(f);
  char *buf = size >= 0 ? malloc((size_t)size + 1) : NULL;
  if (buf) {
    rewind(f);
    buf[fread(buf, 1, (size_t)size, f)] = '\0';
  }
  if (f) fclose(f);
  return buf;
}

/* The last non-empty line of the script's stderr (a traceback's verdict), for a one-line error. */
static void last_line(const char *path, char *out, size_t n) {
  char *s = slurp(path);
  out[0] = '\0';
  if (!s) return;
  size_t l = strlen(s);
  while (l && (s[l - 1] == '\n' || s[l - 1] == ' ')) s[--l] = '\0';
  char *nl = strrchr(s, '\n');
  snprintf(out, n, "%s", nl ? nl + 1 : s);
  free(s);
}

/* Run the script on the request in dir; answer text (caller frees) or NULL with a one-line
 * reason in why. */
static char *ask_peer(const char *dir, const char *request, int dry, double timeout, char *why, size_t wn) {
  char script[PATH_MAX], req[PATH_MAX], ans[PATH_MAX], err[PATH_MAX], tail[200];
  if (script_path(script, sizeof script)) {
    snprintf(why, wn, "cannot find scripts/opperf-peer.py (set OPPERF_PEER_SCRIPT)");
    return NULL;
  }
  snprintf(req, sizeof req, "%s/request.json", dir);
  snprintf(ans, sizeof ans, "%s/answer.json", dir);
  snprintf(err, sizeof err, "%s/stderr.txt", dir);
  opf_err e;
  if (opf_write_atomic(req, request, strlen(request), &e)) {
    snprintf(why, wn, "%s", e.msg);
    return NULL;
  }
  if (access(python_path(), X_OK)) {
    snprintf(why, wn, "%s not found (apt-get install python3 python3-torch python3-numpy, or set OPPERF_PYTHON)",
             python_path());
    return NULL;
  }
  int rc = run_script(script, req, dry ? "--dry-run" : NULL, ans, err, timeout);
  if (rc == -1) snprintf(why, wn, "cannot run %s", python_path());
  else if (rc == -2) snprintf(why, wn, "the peer script did not finish within %.0f s and was killed", timeout);
  char *answer = rc >= 0 ? slurp(ans) : NULL;
  if (rc > 0 && (!answer || !strstr(answer, "\"fatal\""))) {
    last_line(err, tail, sizeof tail);
    snprintf(why, wn, "the peer script failed (exit status %d%s%.150s)", rc, tail[0] ? ": " : "", tail);
    free(answer);
    return NULL;
  }
  return answer;
}

/* A fresh private directory for the exchanged files: 1, or 0 with the reason in why. */
static int make_dir(char *dir, size_t n, char *why, size_t wn) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  snprintf(dir, n, "%s/opperf-peer.XXXXXX", tmp);
  if (mkdtemp(dir)) return 1;
  snprintf(why, wn, "cannot create a directory in %s: %s", tmp, strerror(errno));
  return 0;
}

/* ---- the exchanged tensors ---- */
static int save(const char *prefix, const char *kind, const char *name, const opf_tensor *t, opf_err *e) {
  char path[PATH_MAX];
  if (opf_peer_file(path, sizeof path, prefix, kind, name)) return opf_err_set(e, OPF_EINVAL, "path too long");
  return opf_npy_save(path, t, e);
}

/* Inputs (and output gradients) after our fill; with check, also our outputs (and input
 * gradients) of one call of the pass from those pristine inputs (in-place and stateful
 * operators: the state after one call, not after the measurement's many). */
static int write_case(opf_case *c, opf_pass pass, const char *prefix, int check, uint64_t seed, opf_err *e) {
  const opf_op *op = c->op;
  int grad = pass != OPF_PASS_FWD, rc;
  if ((rc = opf_case_alloc(c, grad, e)) || (rc = opf_case_fill(c, seed, e))) goto out;
  for (int i = 0; i < op->n_in && !rc; i++)
    if (c->present[i]) rc = save(prefix, "in", op->in[i].name, &c->in[i], e);
  for (int i = 0; grad && i < op->n_out && !rc; i++)
    if (c->gout[i].data) rc = save(prefix, "gout", op->out[i], &c->gout[i], e);
  if (rc || !check) goto out;
  rc = pass == OPF_PASS_BWD ? opf_case_call(c, OPF_PASS_FWD) : 0;
  if (!rc) rc = opf_case_call(c, pass);
  if (rc) {
    opf_err_set(e, rc, "our %s pass failed: %s", opf_pass_name(pass), c->err.msg);
    goto out;
  }
  for (int i = 0; i < op->n_out && !rc; i++) rc = save(prefix, "out", op->out[i], &c->out[i], e);
  for (int i = 0; grad && i < op->n_in && !rc; i++)
    if (c->gin[i].data) rc = save(prefix, "gin", op->in[i].name, &c->gin[i], e);
out:
  opf_case_release(c);
  return rc;
}

static int load(const char *prefix, const char *kind, const char *name, opf_tensor *t) {
  char path[PATH_MAX];
  opf_err e;
  int ndim;
  int64_t shape[OPF_MAX_DIMS];
  opf_dtype dt;
  memset(t, 0, sizeof *t);
  if (opf_peer_file(path, sizeof path, prefix, kind, name) || access(path, R_OK)) return -1;
  if (opf_npy_header(path, &dt, &ndim, shape, &e)) return -1;
  opf_tensor_set_shape(t, dt, ndim, shape);
  if (opf_tensor_alloc(t, &e)) return -1;
  if (opf_npy_load(path, t, &e)) {
    opf_tensor_free(t);
    return -1;
  }
  return 0;
}

/* Compare our tensor kind/name with the peer's peer_kind/name into chk. */
static void compare_one(const char *prefix, const char *kind, const char *name, double tol, opf_peer_check *chk) {
  opf_tensor a, b;
  char peer_kind[16], label[64];
  snprintf(peer_kind, sizeof peer_kind, "peer_%s", kind);
  snprintf(label, sizeof label, "%s%s", strcmp(kind, "gin") ? "" : "grad_", name);
  if (load(prefix, kind, name, &a)) return;
  if (!load(prefix, peer_kind, name, &b)) {
    opf_peer_compare(&a, &b, tol, label, chk);
    opf_tensor_free(&b);
  }
  opf_tensor_free(&a);
}

static void check_case(const opf_case *c, opf_pass pass, const char *prefix, opf_peer_check *chk) {
  const opf_op *op = c->op;
  memset(chk, 0, sizeof *chk);
  chk->agree = 1;
  double tol = op->tol > 0 ? op->tol : 1e-4;
  for (int i = 0; i < op->n_out; i++) compare_one(prefix, "out", op->out[i], tol, chk);
  for (int i = 0; pass != OPF_PASS_FWD && i < op->n_in; i++) compare_one(prefix, "gin", op->in[i].name, tol, chk);
  chk->done = chk->n_tensors > 0;
  if (!chk->done) {
    chk->agree = 0;
    snprintf(chk->what, sizeof chk->what, "no output to compare");
  }
}

/* ---- the run ---- */
static int same_case(const kept *a, const kept *b) {
  return a->r.pass == b->r.pass && a->r.dtype == b->r.dtype && !strcmp(a->r.op, b->r.op) &&
         !strcmp(a->r.spec, b->r.spec) &&
         !strcmp(a->r.grad_views, b->r.grad_views); /* views: the peer keeps autograd's */
}

static double script_timeout(const opf_settings *s, int n) {
  double per = s->warmup + (s->max_time < 1e8 ? s->max_time : 60) + 2;
  return 120 + 3 * per * n;
}

static void record_all(cli_peer *p, opf_emitter **em, int n_em) {
  for (int i = 0; i < p->n; i++) {
    for (int f = 0; f < n_em; f++) opf_emitter_record(em[f], &p->v[i].r);
    opf_result_release(&p->v[i].r);
  }
  p->n = 0;
}

int cli_peer_finish(cli_peer *p, const opf_settings *s, opf_context *ctx, opf_emitter **em, int n_em,
                    int skip) {
  const char *lib = opf_peer_lib_name(p->lib);
  int njobs = 0, mismatches = 0;
  if (!p->n) return 0; /* nothing measured (e.g. an output could not be opened) */
  opf_peer_req_case *jobs = calloc((size_t)p->n + 1, sizeof *jobs);
  char (*prefix)[PATH_MAX] = calloc((size_t)p->n + 1, sizeof *prefix);
  opf_peer_result *ans = calloc((size_t)p->n + 1, sizeof *ans), *joined = calloc((size_t)p->n + 1, sizeof *joined);
  p->joined = joined;
  int made = 0;
  char dir[PATH_MAX - 32], why[OPF_ERR_MSG_MAX + 64] = "", *request = NULL, *answer = NULL;
  if (skip) snprintf(why, sizeof why, "the run was interrupted");
  else if (!jobs || !prefix || !ans || !joined) snprintf(why, sizeof why, "out of memory");
  else made = make_dir(dir, sizeof dir, why, sizeof why);
  /* One request case per distinct case pass (repetitions and impls share it). */
  for (int i = 0; !why[0] && i < p->n; i++) {
    kept *k = &p->v[i];
    int j = 0;
    while (j < i && !same_case(&p->v[j], k)) j++;
    if (j < i) {
      k->job = p->v[j].job;
      continue;
    }
    k->job = njobs;
    jobs[njobs].c = k->c;
    jobs[njobs].pass = k->r.pass;
    jobs[njobs].check = p->check;
    njobs++;
  }
  /* In batches of at most OPPERF_PEER_BATCH_MB (default 1024) MiB of tensors: the exchanged
   * files of a whole default suite at once came to 36 GB of /tmp. Each batch is written, asked,
   * checked and deleted before the next. */
  const char *mb = getenv("OPPERF_PEER_BATCH_MB");
  double budget = (mb && atof(mb) > 0 ? atof(mb) : 1024.0) * 1048576.0;
  opf_err e;
  for (int b0 = 0, b1; !why[0] && b0 < njobs; b0 = b1) {
    double bytes = 0;
    for (b1 = b0; b1 < njobs; b1++) {
      double fp = (double)opf_case_footprint(jobs[b1].c, jobs[b1].pass != OPF_PASS_FWD);
      if (b1 > b0 && bytes + fp > budget) break;
      bytes += fp;
    }
    for (int j = b0; j < b1; j++) {
      opf_peer_req_case *rq = &jobs[j];
      snprintf(prefix[j], sizeof prefix[0], "%s/%04d_", dir, j);
      /* A case we could not set up again (e.g. memory) still goes: the peer reports it. */
      rq->files = write_case((opf_case *)rq->c /* the run's case, kept non-const */, rq->pass, prefix[j], p->check,
                             s->seed, &e) ? NULL : prefix[j];
      if (!rq->files) rq->check = 0;
    }
    if (opf_peer_request((opf_peer_lib)p->lib, s, jobs + b0, b1 - b0, &request, &e)) snprintf(why, sizeof why, "%s", e.msg);
    if (!why[0]) answer = ask_peer(dir, request, 0, script_timeout(s, b1 - b0), why, sizeof why);
    if (answer && opf_peer_answer(answer, NULL, ans + b0, b1 - b0, &e)) snprintf(why, sizeof why, "%s", e.msg);
    /* The script skips the comparison of random operators (their values cannot agree):
     * check.what then says why. */
    for (int j = b0; !why[0] && j < b1; j++)
      if (jobs[j].check && opf_peer_ok(&ans[j]) && !ans[j].check.what[0])
        check_case(jobs[j].c, jobs[j].pass, jobs[j].files, &ans[j].check);
    free(request);
    free(answer);
    request = answer = NULL;
    if (made) clear_dir(dir, 1);
  }
  if (why[0]) {
    fprintf(stderr, "opperf: --baseline %s: %s; showing opperf's figures only\n", lib, why);
    snprintf(ctx->peer, sizeof ctx->peer, "%s (unavailable)", lib);
  } else {
    snprintf(ctx->peer, sizeof ctx->peer, "%s", njobs ? ans[0].library : lib);
    for (int i = 0; i < p->n; i++) {
      kept *k = &p->v[i];
      joined[i] = ans[k->job];
      joined[i].checked = p->check;
      joined[i].ratio = opf_peer_ok(&joined[i]) && k->r.status == OPF_ST_OK && k->r.time.median > 0
                            ? k->r.time.median / joined[i].median : 0;
      k->r.peer = &joined[i];
      mismatches += p->check && joined[i].check.done && !joined[i].check.agree;
    }
  }
  record_all(p, em, n_em);
  if (made) remove_dir(dir);
  free(jobs);
  free(prefix);
  free(ans);
  return mismatches;
}

int cli_peer_dry_run(int lib, const opf_settings *s, const opf_case *const *cases, int n) {
  opf_peer_req_case *jobs = calloc((size_t)n + 1, sizeof *jobs);
  opf_peer_result *ans = calloc((size_t)n + 1, sizeof *ans);
  char dir[PATH_MAX], why[OPF_ERR_MSG_MAX + 64] = "", *request = NULL, *answer = NULL;
  int made = 0, noeq = 0;
  opf_err e;
  if (!jobs || !ans || !(made = make_dir(dir, sizeof dir, why, sizeof why))) {
    if (!why[0]) snprintf(why, sizeof why, "out of memory");
  }
  for (int i = 0; made && i < n; i++) {
    jobs[i].c = cases[i];
    jobs[i].pass = OPF_PASS_FWD;
  }
  if (!why[0] && opf_peer_request((opf_peer_lib)lib, s, jobs, n, &request, &e)) snprintf(why, sizeof why, "%s", e.msg);
  if (!why[0]) answer = ask_peer(dir, request, 1, 120 + 0.1 * n, why, sizeof why);
  if (answer && opf_peer_answer(answer, NULL, ans, n, &e)) snprintf(why, sizeof why, "%s", e.msg);
  if (made) remove_dir(dir);
  if (why[0]) fprintf(stderr, "opperf: --baseline %s: %s\n", opf_peer_lib_name((opf_peer_lib)lib), why);
  for (int i = 0; !why[0] && i < n; i++) {
    char spec[512], name[96];
    snprintf(name, sizeof name, "%s%s%s%s", cases[i]->op->name, cases[i]->impl ? " [" : "",
             cases[i]->impl ? opf_impl_name(cases[i]->impl) : "", cases[i]->impl ? "]" : "");
    noeq += !!strcmp(ans[i].status, "ok");
    printf("%-22s %-8s %-40s %s\n", name, opf_dtype_name(cases[i]->dtype),
           strcmp(ans[i].status, "ok") ? ans[i].status : ans[i].name, opf_case_spec_str(cases[i], spec, sizeof spec));
  }
  if (!why[0]) printf("%d cases, %d with a %s equivalent (%s)\n", n, n - noeq, opf_peer_lib_name((opf_peer_lib)lib),
                      n ? ans[0].library : "");
  free(request);
  free(answer);
  free(jobs);
  free(ans);
  return why[0] ? EXIT_USAGE : EXIT_OK;
}

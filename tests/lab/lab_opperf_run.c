/* lab_opperf_run.c: PMU lab (g), `opperf run` itself in the emulated machine. Runs
 *   opperf run add relu sum --shapes small --pass forward --events instructions,cycles
 *          --threads 1 --runs 3 --format json -o /tmp/runN.json
 * twice and checks the JSON: every record ok; `instructions` and `cycles` counted with a value;
 * instructions per call of each case the same in both runs within REPEAT_ABS (see below). Then
 * one run with more events than counters: `instructions` says scaled with its running
 * percentage, and its per-call value stays within SCALED_TOL (2%) of the counted one (when
 * this test was written, `instructions` fell from 43% running to "not counted" case after
 * case: the harness scaled each short sample on its own). Skips (exit 77) when
 * the initramfs has no aarch64 opperf (scripts/pmu-lab could not cross-build it). */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <sys/personality.h>
#include <sys/wait.h>

#include "lab.h"

#define OPPERF "/bin/opperf"
/* Instructions per call are per-sample counts (user space, exact under -icount) divided by the
 * calls per sample; the harness calibrates that batch from elapsed time, and the harness's own
 * per-sample instructions are amortised over it (and its measured residual subtracted), so
 * two runs differ by a fraction of an instruction per call (seen: at most 0.011 with address
 * randomisation off). Not timing noise: bounded, hence an absolute tolerance of REPEAT_ABS. */
#define REPEAT_ABS 0.05 /* instructions per call */
/* A scaled count is an estimate: each sample's count times enabled / running, the event on a
 * counter 30-65% of the time. Over the 13 small add cases the worst case was 0.56%, 0.85% and
 * 1.27% off the counted run in three lab runs of the same build (2026-11-28): 2% keeps the
 * test about the scaling being right, not about that spread. */
#define SCALED_TOL 0.02

static int run_opperf(const char *out, const char *events, const char *ops[], int n_ops) {
  char *argv[40];
  int a = 0;
  argv[a++] = (char *)OPPERF;
  argv[a++] = (char *)"run";
  for (int i = 0; i < n_ops; i++) argv[a++] = (char *)ops[i];
  const char *rest[] = {"--shapes", "small", "--pass", "forward", "--events", events,
                        "--threads", "1", "--runs", "3", "--warmup", "0.01", "--min-time",
                        "0.05", "--max-time", "0.5", "--format", "json", "-o", out, NULL};
  for (int i = 0; rest[i]; i++) argv[a++] = (char *)rest[i];
  argv[a] = NULL;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    /* Same addresses in every run: kernels whose vector loops peel to an alignment run a few
     * more or fewer instructions per call with another buffer address (seen: sum of 1x64,
     * 1061.3 vs 1057.3 with address randomisation on). */
    personality(ADDR_NO_RANDOMIZE);
    /* its progress lines (\r, escapes) would garble the console's result lines */
    int fd = open("/tmp/opperf.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(OPPERF, argv);
    _exit(127);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static cJSON *load_json(const char *path) {
  FILE *f = fopen(path, "re");
  if (!f) return NULL;
  static char buf[4 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return cJSON_Parse(buf);
}

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}
static const cJSON *counter(const cJSON *rec, const char *name) {
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(rec, "counters"))
    if (!strcmp(str_of(c, "name"), name)) return c;
  return NULL;
}
static int num_of(const cJSON *o, const char *k, double *v) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsNumber(x)) return 0;
  *v = x->valuedouble;
  return 1;
}
static void case_key(const cJSON *rec, char *key, size_t n) {
  snprintf(key, n, "%s[%s %s %s %s]", str_of(rec, "op"), str_of(rec, "spec"),
           str_of(rec, "params"), str_of(rec, "dtype"), str_of(rec, "pass"));
}
/* The record of run doc with the same case as rec, or NULL. */
static const cJSON *same_case(const cJSON *doc, const cJSON *rec) {
  char k1[512], k2[512];
  case_key(rec, k1, sizeof k1);
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "results")) {
    case_key(r, k2, sizeof k2);
    if (!strcmp(k1, k2)) return r;
  }
  return NULL;
}

/* Every record ok, each named event with status want (or "counted"/"scaled" if want is NULL)
 * and a per-call value. Returns the number of records, or -1 after a FAIL line. */
static int check_doc(const char *name, const cJSON *doc, const char *const evs[], int n_ev) {
  const cJSON *res = cJSON_GetObjectItemCaseSensitive(doc, "results");
  int n = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, res) {
    char key[512];
    case_key(r, key, sizeof key);
    if (strcmp(str_of(r, "status"), "ok")) {
      LAB_FAIL(name, "%s: status %s: %s", key, str_of(r, "status"), str_of(r, "message"));
      return -1;
    }
    for (int e = 0; e < n_ev; e++) {
      const cJSON *c = counter(r, evs[e]);
      double v = 0, pct = 0;
      const char *st = c ? str_of(c, "status") : "absent";
      if (!c || (strcmp(st, "counted") && strcmp(st, "scaled")) || !num_of(c, "per_call", &v) ||
          !num_of(c, "running_pct", &pct) || v <= 0) {
        LAB_FAIL(name, "%s: counter %s is %s%s%s, not counted with a value", key, evs[e], st,
                 c && *str_of(c, "reason") ? ": " : "", c ? str_of(c, "reason") : "");
        return -1;
      }
    }
    n++;
  }
  if (n == 0) LAB_FAIL(name, "no records in the JSON output");
  return n ? n : -1;
}

int main(void) {
  const char *name = "opperf_run";
  if (access(OPPERF, X_OK) != 0) {
    LAB_SKIP(name, "no aarch64 opperf in the initramfs (scripts/pmu-lab builds it with "
             "cmake/toolchain-aarch64.cmake, or takes --opperf PATH)");
    return 77;
  }
  const char *ops[] = {"add", "relu", "sum"};
  const char *const evs[] = {"instructions", "cycles"};
  const char *out[2] = {"/tmp/run1.json", "/tmp/run2.json"};
  cJSON *doc[2] = {NULL, NULL}, *many = NULL;
  for (int k = 0; k < 2; k++) {
    int rc = run_opperf(out[k], "instructions,cycles", ops, 3);
    if (rc != 0 || !(doc[k] = load_json(out[k]))) {
      LAB_FAIL(name, "run %d: opperf exited %d%s", k + 1, rc, rc == 0 ? " but its JSON does not parse" : "");
      goto out;
    }
  }
  int n1 = check_doc(name, doc[0], evs, 2), n2 = n1 > 0 ? check_doc(name, doc[1], evs, 2) : -1;
  if (n1 < 0 || n2 < 0) goto out;
  /* repeatability of instructions per call, case by case */
  double worst = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc[0], "results")) {
    char key[512];
    case_key(r, key, sizeof key);
    const cJSON *r2 = same_case(doc[1], r);
    double v1 = 0, v2 = 0, p1 = 0;
    if (!r2) {
      LAB_FAIL(name, "%s is missing from run 2", key);
      goto out;
    }
    num_of(counter(r, "instructions"), "per_call", &v1);
    num_of(counter(r2, "instructions"), "per_call", &v2);
    num_of(counter(r, "instructions"), "running_pct", &p1);
    LAB_NOTE("opperf_run: %s instructions/call %.3f and %.3f (%s, running %.1f%%)", key, v1, v2,
             str_of(counter(r, "instructions"), "status"), p1);
    if (fabs(v2 - v1) > worst) worst = fabs(v2 - v1);
  }
  if (worst > REPEAT_ABS) {
    LAB_FAIL(name, "instructions per call differ by %.3f between two runs (> %.2f)", worst,
             REPEAT_ABS);
    goto out;
  }
  LAB_PASS(name, "%d records ok in two runs; instructions and cycles counted with values; "
           "instructions per call repeat within %.3f instructions (tolerance %.2f)", n1, worst,
           REPEAT_ABS);

  /* more events than counters: scaled, with the running percentage, and still right */
  const char *name2 = "opperf_run_scaled";
  const char *add[] = {"add"};
  int rc = run_opperf("/tmp/run3.json", "cycles,instructions,r03,r04,r08,r11,r1b,r00,r01,r02",
                      add, 1);
  if (rc != 0 || !(many = load_json("/tmp/run3.json"))) {
    LAB_FAIL(name2, "opperf with 10 events exited %d", rc);
    goto out;
  }
  worst = 0;
  const char *bad = NULL;
  char bad_key[1200] = "";
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(many, "results")) {
    char key[512];
    case_key(r, key, sizeof key);
    const cJSON *c = counter(r, "instructions"), *r1 = same_case(doc[0], r);
    double v = 0, vm = 0, v1 = 0, pct = 0;
    num_of(c, "per_call", &v);
    num_of(c, "mean_per_call", &vm);
    num_of(c, "running_pct", &pct);
    if (r1) num_of(counter(r1, "instructions"), "per_call", &v1);
    LAB_NOTE("opperf_run_scaled: %s instructions %s, running %.1f%%, %.3f/call (mean %.3f; "
             "counted alone: %.3f)", key, str_of(c, "status"), pct, v, vm, v1);
    if (!bad && strcmp(str_of(r, "status"), "ok"))
      bad = "record";
    else if (!bad && (strcmp(str_of(c, "status"), "scaled") || !(pct > 0 && pct < 100))) {
      bad = "status";
      snprintf(bad_key, sizeof bad_key, "%s: instructions %s, running %.1f%%", key,
               str_of(c, "status"), pct);
    }
    else if (!bad && !r1)
      bad = "missing";
    if (!bad && r1 && lab_rel(v, v1) > worst) {
      worst = lab_rel(v, v1);
      snprintf(bad_key, sizeof bad_key, "%s: %.3f vs %.3f", key, v, v1);
    }
  }
  if (bad && !strcmp(bad, "status"))
    LAB_FAIL(name2, "10 events on 7 counters, instructions not 'scaled' with a value at %s",
             bad_key);
  else if (bad && !strcmp(bad, "record"))
    LAB_FAIL(name2, "a record of the 10-event run is not ok");
  else if (bad)
    LAB_FAIL(name2, "a case of the 10-event run is missing from the first run");
  else if (worst > SCALED_TOL)
    LAB_FAIL(name2, "scaled instructions per call off the counted run by %.2f%% (> %.0f%%) at %s",
             100 * worst, 100 * SCALED_TOL, bad_key);
  else
    LAB_PASS(name2, "10 events: instructions status scaled with its running %%, per call within "
             "%.3f%% of the counted run", 100 * worst);
out:
  cJSON_Delete(doc[0]);
  cJSON_Delete(doc[1]);
  cJSON_Delete(many);
  return lab_exit();
}

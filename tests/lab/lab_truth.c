/* lab_truth.c: PMU lab (a), the ground truth. The user-space `instructions` of a loop of known
 * length are exact under qemu -icount: count(2N) - count(N) == 2N * LAB_INSNS_PER_ITER, and a
 * count repeats to the instruction. Checked once with raw perf_event_open and once through
 * opperf's pmu API (opf_pmu_create / open / read / delta). */
#include "lab.h"

#define N 10000000ULL

static void raw_truth(void) {
  const char *name = "truth_raw";
  uint64_t c1[3], c2[3];
  for (int r = 0; r < 3; r++) {
    c1[r] = lab_raw_loop_insns(N);
    c2[r] = lab_raw_loop_insns(2 * N);
    if (!c1[r] || !c2[r]) {
      LAB_FAIL(name, "instructions (user) did not count: %s", strerror(errno));
      return;
    }
  }
  LAB_NOTE("truth_raw: count(N=%llu) = %llu %llu %llu; count(2N) = %llu %llu %llu",
           (unsigned long long)N, (unsigned long long)c1[0], (unsigned long long)c1[1],
           (unsigned long long)c1[2], (unsigned long long)c2[0], (unsigned long long)c2[1],
           (unsigned long long)c2[2]);
  uint64_t want = N * LAB_INSNS_PER_ITER;
  for (int r = 0; r < 3; r++) {
    if (c1[r] != c1[0] || c2[r] != c2[0]) {
      LAB_FAIL(name, "counts not repeatable: count(N) %llu vs %llu, count(2N) %llu vs %llu",
               (unsigned long long)c1[r], (unsigned long long)c1[0], (unsigned long long)c2[r],
               (unsigned long long)c2[0]);
      return;
    }
  }
  if (c2[0] - c1[0] != want) {
    LAB_FAIL(name, "count(2N) - count(N) = %llu, expected exactly %llu",
             (unsigned long long)(c2[0] - c1[0]), (unsigned long long)want);
    return;
  }
  if (c1[0] < want || c1[0] - want > 100) {
    LAB_FAIL(name, "count(N) = %llu: more than 100 instructions beside the loop's %llu",
             (unsigned long long)c1[0], (unsigned long long)want);
    return;
  }
  LAB_PASS(name, "count(2N)-count(N) = %llu = 2N exactly; count(N) = %llu (loop + %llu), "
           "same in 3 repeats", (unsigned long long)(c2[0] - c1[0]), (unsigned long long)c1[0],
           (unsigned long long)(c1[0] - want));
}

/* opperf's scaled delta of lab_loop(n) for event 0. Returns 1 with *v, *frac; 0 on failure. */
static int api_loop(opf_pmu *p, opf_pmu_snap *a, opf_pmu_snap *b, uint64_t n, double *v,
                    double *frac) {
  if (opf_pmu_read(p, a) != OPF_OK) return 0;
  lab_loop(n);
  if (opf_pmu_read(p, b) != OPF_OK) return 0;
  return opf_pmu_delta(p, 0, a, b, v, frac);
}

static void api_truth(void) {
  const char *name = "truth_opperf";
  opf_err err = {0, ""};
  opf_pmu *p = NULL;
  if (opf_pmu_create(&p, "instructions", NULL, &err) != OPF_OK) {
    LAB_FAIL(name, "opf_pmu_create: %s", err.msg);
    return;
  }
  opf_pmu_snap *a = lab_snap_new(), *b = lab_snap_new();
  if (!a || !b || opf_pmu_open(p, &err) != OPF_OK || opf_pmu_n_open(p) != 1) {
    const opf_pmu_event *ev = opf_pmu_event_at(p, 0);
    LAB_FAIL(name, "instructions did not open: %s %s", err.msg, ev ? ev->reason : "");
    goto out;
  }
  double v1[3], v2[3], f = 0;
  /* the first read into a snapshot allocates it: not inside the first measured window */
  opf_pmu_read(p, a);
  opf_pmu_read(p, b);
  for (int r = 0; r < 3; r++) {
    int ok1 = api_loop(p, a, b, N, &v1[r], &f);
    double f1 = f;
    int ok2 = api_loop(p, a, b, 2 * N, &v2[r], &f);
    if (!ok1 || !ok2 || f1 != 1.0 || f != 1.0) {
      LAB_FAIL(name, "delta not valid or not counted all the time (ok %d %d, running %.4f %.4f)",
               ok1, ok2, f1, f);
      goto out;
    }
  }
  LAB_NOTE("truth_opperf: delta(N) = %.0f %.0f %.0f; delta(2N) = %.0f %.0f %.0f", v1[0], v1[1],
           v1[2], v2[0], v2[1], v2[2]);
  double want = (double)(N * LAB_INSNS_PER_ITER);
  for (int r = 0; r < 3; r++)
    if (v1[r] != v1[0] || v2[r] != v2[0]) {
      LAB_FAIL(name, "deltas not repeatable: %.0f vs %.0f, %.0f vs %.0f", v1[r], v1[0], v2[r],
               v2[0]);
      goto out;
    }
  if (v2[0] - v1[0] != want) {
    LAB_FAIL(name, "delta(2N) - delta(N) = %.0f, expected exactly %.0f", v2[0] - v1[0], want);
    goto out;
  }
  if (v1[0] < want || v1[0] - want > 20000) {
    LAB_FAIL(name, "delta(N) = %.0f: more than 20000 instructions of opperf's reads beside the "
             "loop's %.0f", v1[0], want);
    goto out;
  }
  LAB_PASS(name, "delta(2N)-delta(N) = %.0f = 2N exactly; delta(N) = %.0f (loop + %.0f of the "
           "two reads), status counted (running 100%%), same in 3 repeats", v2[0] - v1[0], v1[0],
           v1[0] - want);
out:
  lab_snap_free(a);
  lab_snap_free(b);
  opf_pmu_free(p);
}

int main(void) {
  raw_truth();
  api_truth();
  return lab_exit();
}

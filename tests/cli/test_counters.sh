#!/usr/bin/env bash
# test_counters.sh: the counter path seen from the CLI (issue 21): empty event-list items are
# refused, `opperf events -e LIST` probes the run's exact set, the JSON says what each figure
# includes (privilege, thread coverage, subtracted harness cost, wait policy), kernel-mode
# software events are counted with the kernel; and a long run's progress lines and summary go
# to stderr, leaving the report on stdout alone.
. "$(dirname "$0")/lib.sh"

# --- lists with empty items: exit 2, one line, no file -----------------------------------------
out="$tmp/bad.json"
bad() { expect 2 "$1" -- "${@:2}" -o "$out"; [ ! -e "$out" ] || fail "output file written for: ${*:2}"; }
bad "--events: empty list" run relu --events ""
bad "--events: empty item in 'task-clock,,page-faults'" run relu --events task-clock,,page-faults
bad "--events: empty item in 'task-clock,'" run relu --events task-clock,
bad "--events: empty item" sweep relu --events ,task-clock
expect 2 "--events: empty list" -- events -e ""
expect 2 "either with -e or as arguments" -- events -e sw core

# Without perf_event_open at all (qemu-user: ENOSYS) every counter is "not supported": the
# checks of counted values below do not apply there (tests/cli/test_cli.sh checks that status).
if [ "$no_perf" = 1 ]; then
  echo "perf_event_open is not available here (ENOSYS): counted-value checks skipped"
else
# --- events -e: one set, as a run opens it ----------------------------------------------------
"$OPPERF" events -e sw,cycles,LLC-load-misses >"$tmp/ev" 2>&1 || fail "events -e exited $?"
grep -q "privilege" "$tmp/ev" || fail "events: no privilege column: $(head -c 400 "$tmp/ev")"
# LLC-load-misses has a note on every vendor (Intel: demand reads only; AMD: none; Arm)
grep -q "what it counts here" "$tmp/ev" || fail "events: no per-vendor column"
[ "$(grep -c '^sw,cycles,LLC-load-misses ' "$tmp/ev")" -eq 6 ] ||
  fail "events -e: not probed as one set of 6: $(cat "$tmp/ev")"

# --- JSON: what the counter figures include ----------------------------------------------------
"$OPPERF" run add --input a=64x64 --input b=64x64 --pass fwd --threads 2 --events sw \
  "${quick[@]}" --format json -o "$tmp/c.json" 2>"$tmp/err" || fail "run --events sw: $(cat "$tmp/err")"
/usr/bin/python3 - "$tmp/c.json" "$(id -u)" <<'PY' || fail "counter JSON checks"
import json, sys
d = json.load(open(sys.argv[1]))
root = sys.argv[2] == "0"
perf = d["context"]["perf"]
for k in ("counting", "groups", "omp_wait_policy"):
    assert perf.get(k), "context.perf lacks " + k
assert "user space only" in perf["counting"], perf["counting"]
assert "inherit" in perf["groups"], perf["groups"]
byname = {c["name"]: c for c in perf["counters"]}
if root:  # kernel-mode software events: counted with the kernel (never a user-only 0)
    for n in ("context-switches", "cpu-migrations"):
        assert byname[n]["status"] == "counted" and byname[n]["privilege"] == "user+kernel", byname[n]
assert byname["task-clock"]["privilege"] == "user", byname["task-clock"]
r = d["results"][0]
tc = [c for c in r["counters"] if c["name"] == "task-clock"][0]
assert tc["status"] in ("counted", "scaled"), tc
for k in ("main_thread_per_call", "harness_residual_per_sample", "privilege"):
    assert k in tc, "task-clock lacks " + k
assert tc["harness_residual_per_sample"] > 0, tc  # reading counters costs CPU time
assert tc["main_thread_per_call"] <= tc["per_call"] * 1.0001, tc
assert r["time"]["process_cpu_median"] > 0
PY

fi

# --- progress and summary: stderr only ---------------------------------------------------------
"$OPPERF" run reduction --shapes small --pass fwd --runs 1 --warmup 0.001 --sample-time 0.0002 \
  >"$tmp/stdout" 2>"$tmp/stderr" || fail "run reduction exited $?: $(tail -3 "$tmp/stderr")"
grep -q "records in .*ok, 0 skipped, 0 failed" "$tmp/stderr" || fail "no summary: $(tail -5 "$tmp/stderr")"
grep -q "^slowest cases" "$tmp/stderr" || fail "no slowest cases in the summary"
grep -qE "^  sum +[0-9]+ records, median" "$tmp/stderr" || fail "no per-operator line for sum"
grep -q "slowest cases\|records in" "$tmp/stdout" && fail "summary lines on stdout"
head -1 "$tmp/stdout" | grep -q "^opperf " || fail "stdout does not start with the report header"

if [ "$fails" -ne 0 ]; then
  echo "$fails counter CLI check(s) failed"
  exit 1
fi
echo "all counter CLI checks passed"

#!/usr/bin/env bash
# test_gate.sh: the CI side of the real binary: crash and hang isolation (with the test-only
# operators of $OPPERF_FAULTS), Ctrl-C leaving valid partial reports, streamed JSON lines,
# Google Benchmark JSON read back field by field, `opperf compare` exit codes on fixtures, and
# named baselines. No check depends on how fast anything ran.
set -u
OPPERF=${OPPERF:-./build/opperf}
FAULTS=${OPPERF_FAULTS:-./build/tests/opperf_faults}
SRC=${OPPERF_SOURCE_DIR:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
quick=(--warmup 0.001 --min-time 0.005 --sample-time 0.0005 --runs 3)
# perf_event_open missing altogether (ENOSYS: qemu-user does not emulate it), so not even the
# software counters can count: the checks of counted values check the honest status instead.
no_perf=0
"$OPPERF" events 2>/dev/null | grep -q 'task-clock .*ENOSYS' && no_perf=1
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# --- isolation: crashes and a hang become results, the other cases finish ----------------
"$FAULTS" run relu fault_segv fault_fpe fault_abort fault_hang --shapes standard --pass fwd \
  --timeout 3 "${quick[@]}" --format json -o "$tmp/iso.json" >/dev/null 2>"$tmp/iso.err"
rc=$?
[ "$rc" -eq 1 ] || fail "isolated run with crashing cases exited $rc, expected 1: $(cat "$tmp/iso.err")"
python3 - "$tmp/iso.json" "${OPPERF_SANITIZE:-OFF}" <<'PY' || fail "isolation results"
import json, sys
d = json.load(open(sys.argv[1]))
st = {r["op"]: (r["status"], r.get("message", "")) for r in d["results"]}
assert st["relu"][0] == "ok", st
# Under AddressSanitizer its own handler reports SIGSEGV/SIGFPE and exits with status 1.
san = sys.argv[2] == "ON"
for op, sig in (("fault_segv", "signal 11"), ("fault_fpe", "signal 8"), ("fault_abort", "signal 6")):
    assert st[op][0] == "crashed", st
    assert sig in st[op][1] or (san and "exited with status" in st[op][1]), st
assert st["fault_hang"][0] == "timeout" and "--timeout 3" in st["fault_hang"][1], st
# the isolated relu still has its samples and memory figures, per case
r = [r for r in d["results"] if r["op"] == "relu"][0]
assert len(r["time"]["raw"]) == 3 and r["memory"]["peak_live_bytes"] > 0, r
PY
"$OPPERF" run relu --timeout 5 --no-isolate >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--timeout with --no-isolate accepted"
"$OPPERF" run relu --timeout 0 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--timeout 0 accepted"

# --- Ctrl-C: stops after the current case, writes what finished, marked interrupted ------
for mode in isolate no-isolate; do
  "$OPPERF" run relu exp add --shapes standard,skewed --min-time 0.4 --max-time 0.5 --warmup 0.01 \
    --"$mode" --format json="$tmp/int.json",jsonl="$tmp/int.jsonl" >/dev/null 2>"$tmp/int.err" &
  pid=$!
  sleep 2.5
  kill -INT "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" -eq 130 ] || fail "$mode: interrupted run exited $rc, expected 130: $(cat "$tmp/int.err")"
  python3 - "$tmp/int.json" "$tmp/int.jsonl" <<'PY' || fail "$mode: interrupted reports"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["context"].get("interrupted") is True, d["context"]
n = len(d["results"])
assert 1 <= n < 22, n                       # some cases finished, not all of them
lines = [json.loads(l) for l in open(sys.argv[2])]
assert "context" in lines[0] and lines[-1]["end"]["interrupted"] is True, lines[-1]
assert sum("result" in l for l in lines) == n == lines[-1]["end"]["results"]
PY
done

# --- JSON lines survive a kill -9: every line written is valid ----------------------------
"$OPPERF" run relu exp --shapes standard,skewed --min-time 0.3 --format jsonl -o "$tmp/k.jsonl" >/dev/null 2>&1 &
pid=$!
sleep 2
kill -9 "$pid"
wait "$pid" 2>/dev/null
python3 - "$tmp/k.jsonl" <<'PY' || fail "jsonl after kill -9"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.endswith("\n")]
assert "context" in lines[0] and all("result" in l for l in lines[1:]), lines[-1]
PY

# --- Google Benchmark JSON, field by field --------------------------------------------------
"$OPPERF" run relu --shapes standard "${quick[@]}" --format gbench -o "$tmp/g.json" >/dev/null ||
  fail "gbench run"
python3 - "$tmp/g.json" "$no_perf" <<'PY' || fail "gbench fields"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["context"]
for k in ("date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled",
          "caches", "load_avg", "library_build_type"):
    assert k in c, k
assert c["num_cpus"] >= 1 and all({"type", "level", "size", "num_sharing"} <= set(x) for x in c["caches"])
b = d["benchmarks"]
it = [x for x in b if x["run_type"] == "iteration"]
ag = {x["aggregate_name"]: x for x in b if x["run_type"] == "aggregate" and x["run_name"] == it[0]["run_name"]}
assert len(it) == 6 and set(ag) == {"mean", "median", "stddev", "cv"}, (len(it), set(ag))
x = it[0]
assert x["name"] == "relu/fwd/float32/x=1024x1024" and x["time_unit"] == "ns", x
assert x["iterations"] >= 1 and x["real_time"] > 0 and x["cpu_time"] > 0 and x["repetitions"] == 3
assert {x["repetition_index"] for x in it if x["run_name"] == x["run_name"]} >= {0, 1, 2}
assert ag["median"]["aggregate_unit"] == "time" and ag["cv"]["aggregate_unit"] == "percentage"
assert "bytes_per_second" in x and ("task-clock" in x) == (sys.argv[2] != "1"), sorted(x)
PY

# --- compare: exit codes on fixture reports -------------------------------------------------
fx="$SRC/tests/fixtures/compare"
"$OPPERF" compare "$fx/base.json" "$fx/new.json" >"$tmp/c.out" 2>&1
[ $? -eq 1 ] || fail "compare with a regression did not exit 1"
grep -q "regressed" "$tmp/c.out" && grep -q "broken: crashed" "$tmp/c.out" || fail "compare output: $(cat "$tmp/c.out")"
"$OPPERF" compare "$fx/base.json" "$fx/same.json" >/dev/null || fail "noise-only compare did not exit 0"
"$OPPERF" compare "$fx/same.json" "$fx/other_cpu.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "CPU model differs" "$tmp/err" || fail "compare across CPUs: $(cat "$tmp/err")"
"$OPPERF" compare --force "$fx/same.json" "$fx/other_cpu.json" >/dev/null || fail "compare --force"
"$OPPERF" compare --format json -o "$tmp/c.json" "$fx/base.json" "$fx/new.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['counts']['regressed']==1" "$tmp/c.json" ||
  fail "compare --format json"
"$OPPERF" compare --threshold 30% "$fx/base.json" "$fx/new.json" >/dev/null 2>&1
[ $? -eq 1 ] || fail "compare: a crash in the new run must still fail the gate"
"$OPPERF" compare "$fx/base.json" >/dev/null 2>&1
[ $? -eq 2 ] || fail "compare with one file"

# --- named baselines -------------------------------------------------------------------------
export OPPERF_BASELINE_DIR="$tmp/baselines"
"$OPPERF" run relu --shapes standard "${quick[@]}" --save-baseline ci >/dev/null || fail "--save-baseline"
[ -s "$tmp/baselines/ci.json" ] || fail "baseline file missing"
"$OPPERF" run relu --shapes standard "${quick[@]}" --compare-baseline ci >"$tmp/b.out" 2>&1
rc=$?
{ [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; } && grep -q "baseline 'ci'" "$tmp/b.out" || fail "--compare-baseline: $rc $(cat "$tmp/b.out")"
"$OPPERF" run relu --compare-baseline nosuch >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "no baseline 'nosuch'" "$tmp/err" || fail "missing baseline: $(cat "$tmp/err")"
"$OPPERF" run relu --save-baseline "../x" >/dev/null 2>&1
[ $? -eq 2 ] || fail "baseline name with a slash accepted"

# --- repetitions: each in its own process when isolated, merged; --metric for the gate -------
"$OPPERF" run relu exp --shapes standard --pass fwd "${quick[@]}" --repetitions 3 --format json -o "$tmp/rep.json" \
  --save-baseline reps >/dev/null 2>"$tmp/err" || fail "--repetitions 3: $(cat "$tmp/err")"
python3 - "$tmp/rep.json" <<'PY' || fail "repetitions in the report"
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    t = r["time"]
    assert t["repetitions"] == 3 and len(t["repetition_medians"]) == 3, t
    assert len(t["raw"]) == t["samples"] == 9, t      # --runs 3 in each of the 3 processes
PY
"$OPPERF" run relu exp --shapes standard --pass fwd "${quick[@]}" --repetitions 2 --compare-baseline reps \
  --metric task-clock --events task-clock >"$tmp/b.out" 2>&1
rc=$?
if [ "$no_perf" = 1 ]; then # task-clock never counted: the comparison has nothing to compare
  [ "$rc" -eq 2 ] && grep -q "no case has the metric 'task-clock' in both reports" "$tmp/b.out" ||
    fail "--compare-baseline --metric task-clock without perf events: $rc $(cat "$tmp/b.out")"
else
  { [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; } && grep -q "task-clock" "$tmp/b.out" || fail "--compare-baseline --metric task-clock: $rc $(cat "$tmp/b.out")"
fi
"$OPPERF" run relu --shapes standard "${quick[@]}" --compare-baseline reps --metric nosuch >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--metric nosuch: $(cat "$tmp/err")"
for bad in "--repetitions 0" "--repetitions 17" "--repetitions x" "--impl bogus"; do
  # shellcheck disable=SC2086
  "$OPPERF" run relu $bad >/dev/null 2>"$tmp/err"
  [ $? -eq 2 ] || fail "$bad accepted"
done

if [ "$fails" -ne 0 ]; then
  echo "$fails gate check(s) failed"
  exit 1
fi
echo "all gate checks passed"

#!/usr/bin/env bash
# test_peer.sh: `opperf run --baseline torch|numpy [--check]` with the real binary: usage
# errors (exit 2), the join with a fake peer script answering fixed JSON (no timing asserted),
# a deliberately wrong answer under --check (exit 1), a crashing script and a python without
# torch (one line, opperf's own figures, exit 0), and real PyTorch agreeing on a few operators.
set -u
OPPERF=${OPPERF:-./build/opperf}
SRC=${OPPERF_SOURCE_DIR:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
quick=(--warmup 0.001 --min-time 0.005 --sample-time 0.0005 --runs 3)
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run CODE -- args...: exit status CODE; stdout in $tmp/out, stderr in $tmp/err
run() {
  local code=$1
  shift 2
  "$OPPERF" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$code" ] || fail "opperf $* exited $rc, expected $code: $(head -c 600 "$tmp/err")"
}
one_line() { # NEEDLE: stderr is exactly one line containing NEEDLE
  grep -qF -- "$1" "$tmp/err" || fail "stderr lacks '$1': $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "expected one line on stderr, got: $(cat "$tmp/err")"
}

# --- usage errors -------------------------------------------------------------------------
run 2 -- run relu --baseline tensorflow
one_line "--baseline takes torch or numpy, not 'tensorflow'"
# --check without a peer is the reference check alone (plugins' and built-ins' outputs)
run 0 -- run relu --check --shapes small --runs 3 --warmup 0.001 --min-time 0 --pass fwd --format json -o "$tmp/chk.json"
grep -q '"reference_check":[[:space:]]*"passed"' "$tmp/chk.json" || fail "--check alone: no passed reference check"

# --- a fake peer: fixed answers, no timing asserted ------------------------------------------
# Answers case 0 "ok" with a median of 1 ms, every other case "no-equivalent"; with --check it
# writes a wrong output (the input itself: relu(x) != x for negative x).
cat >"$tmp/fake.py" <<'EOF'
import json, shutil, sys
req = json.load(open(sys.argv[1]))
cases = []
for c in req["cases"]:
    if c["id"] == 0:
        for o in c["outputs"]:
            if "peer_file" in o:
                shutil.copy(c["inputs"][0]["file"], o["peer_file"])
        cases.append({"id": 0, "status": "ok", "peer_op": "fake.relu", "median": 1e-3, "samples": 3, "batch": 1})
    else:
        cases.append({"id": c["id"], "status": "no-equivalent: the fake knows one case"})
json.dump({"library": "fake 1.0", "cases": cases}, sys.stdout)
EOF
export OPPERF_PYTHON=${OPPERF_TEST_PYTHON:-$(command -v python3)}
export OPPERF_PEER_SCRIPT="$tmp/fake.py"
run 0 -- run relu --shapes small --pass fwd "${quick[@]}" --baseline torch --format table,json="$tmp/r.json",csv="$tmp/r.csv"
grep -q 'ours/peer' "$tmp/out" || fail "table lacks the ours/peer column"
grep -q 'no equivalent' "$tmp/out" || fail "table does not list the cases without an equivalent"
grep -q 'geomean ours/peer' "$tmp/out" || fail "no geometric-mean summary after the table"
"$OPPERF_PYTHON" - "$tmp/r.json" <<'PY' || fail "JSON peer fields wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["context"]["peer"] == "fake 1.0", d["context"].get("peer")
rs = d["results"]
first = rs[0]["peer"]
assert first["status"] == "ok" and first["name"] == "fake.relu" and first["library"] == "fake 1.0"
# the ratio is ours / peer: our median over the fake's 1 ms
assert abs(first["ratio"] - rs[0]["time"]["median"] / 1e-3) <= 1e-9 * first["ratio"], first
assert all("no-equivalent" in r["peer"]["status"] and "ratio" not in r["peer"] for r in rs[1:])
assert len(rs) > 1
PY
head -1 "$tmp/r.csv" | grep -q 'ratio_ours_over_peer' || fail "CSV lacks the peer columns"
[ "$(awk -F, 'NR == 1 {print NF}' "$tmp/r.csv")" -le "$(awk -F, 'NR == 2 {print NF}' "$tmp/r.csv")" ] ||
  fail "CSV rows have fewer fields than the header"

# --check with the wrong answer: a per-case mismatch line and exit 1
run 1 -- run relu --input x=64 --pass fwd "${quick[@]}" --baseline torch --check
grep -q 'MISMATCH' "$tmp/out" || fail "--check with a wrong peer output does not say MISMATCH"
grep -q 'DISAGREE' "$tmp/out" || fail "--check with a wrong peer output lists no disagreeing case"

# --- scripts/opperf-peer-report: the target's re-runs of the cases above the line -----------
# End to end with a fake peer that is very fast on its first call (every case above the line)
# and very slow later: a slower peer in the re-runs must not discount a case.
cat >"$tmp/flaky.py" <<'EOF'
import json, os, sys
req = json.load(open(sys.argv[1]))
state = os.environ["FLAKY_STATE"]
first = not os.path.exists(state)
open(state, "a").write("x")
med = 1e-9 if first else 10.0
json.dump({"library": "fake 1.0", "cases": [{"id": c["id"], "status": "ok", "peer_op": "fake", "median": med,
           "samples": 3, "batch": 1} for c in req["cases"]]}, sys.stdout)
EOF
OPPERF_PEER_SCRIPT="$tmp/flaky.py" FLAKY_STATE="$tmp/st1" bash "$SRC/scripts/opperf-peer-report" --opperf "$OPPERF" \
  --threads 1 --shapes small --pass fwd --min-time 0.002 --max-time 0.01 --warmup 0.001 \
  --floor-us 0 --reruns 2 "$tmp/pr1.md" -- relu >"$tmp/pr.log" 2>&1 || fail "opperf-peer-report failed: $(tail -3 "$tmp/pr.log")"
n=$("$OPPERF" run relu --shapes small --pass fwd --dry-run 2>/dev/null | grep -c '^relu ')
[ "$n" -gt 0 ] || fail "relu has no small cases"
grep -q "\*\*$n\*\* above 1.1 in the first run, \*\*$n\*\* of them still above it after 2 re-run" "$tmp/pr1.md" ||
  fail "a slower peer in the re-runs discounted a case: $(grep -m1 Target "$tmp/pr1.md")"
! grep -q "| none |" "$tmp/pr1.md" || fail "a listed case has no re-run result"
[ "$(grep -c '^| .* | relu | fwd |' "$tmp/pr1.md")" -eq "$n" ] || fail "the target table does not list every case"
# The rule itself on made-up reports: A is faster in its re-runs (discounted), B's re-run ratios
# are low only because the peer got slower (kept), C has no re-run (kept), D is below the line.
cat >"$tmp/mk.py" <<'EOF'
import json, sys
def rec(op, ours, peer):
    return {"op": op, "pass": "fwd", "dtype": "float32", "spec": "x=64", "status": "ok",
            "tensors": [{"name": "x", "role": "in", "shape": "64"}], "time": {"median": ours},
            "peer": {"status": "ok", "median": peer, "ratio": ours / peer}}
first = [rec("A", 1.5e-3, 1e-3), rec("B", 1.5e-3, 1e-3), rec("C", 1.5e-3, 1e-3), rec("D", 0.5e-3, 1e-3)]
r1 = [rec("A", 1.0e-3, 1e-3), rec("B", 1.4e-3, 2e-3)]
r2 = [rec("A", 1.05e-3, 1e-3), rec("B", 1.4e-3, 2e-3)]
for name, rs in (("first", first), ("r1", r1), ("r2", r2)):
    json.dump({"context": {"peer": "fake 1.0"}, "results": rs}, open(f"{sys.argv[1]}/{name}.json", "w"))
EOF
python3 "$tmp/mk.py" "$tmp"
python3 "$SRC/scripts/opperf_peer_target.py" report "$tmp/first.json" 100 1.1 2 "$tmp/r1.json" "$tmp/r2.json" >"$tmp/tc.md" ||
  fail "opperf_peer_target.py report failed"
grep -q '\*\*3\*\* above 1.1 in the first run, \*\*2\*\* of them still above' "$tmp/tc.md" ||
  fail "the re-run rule: $(head -1 "$tmp/tc.md")"
grep -q '| 1.02 | .* | A |' "$tmp/tc.md" && grep -q '| \*\*1.40\*\* | .* | B |' "$tmp/tc.md" && grep -q '| none | .* | C |' "$tmp/tc.md" ||
  fail "the re-run table: $(cat "$tmp/tc.md")"
! grep -q '| D |' "$tmp/tc.md" || fail "a case below the line is listed"
python3 "$SRC/scripts/opperf_peer_target.py" configs "$tmp/first.json" 100 1.1 "$tmp/cfg" >"$tmp/passes" || fail "configs failed"
[ "$(cat "$tmp/passes")" = fwd ] && python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert [x["op"] for x in c]==["A","B","C"] and c[0]["inputs"]=={"x":"64"} and c[0]["params"]=={}, c' "$tmp/cfg-fwd.json" ||
  fail "configs: wrong --config file for the listed cases"
bash "$SRC/scripts/opperf-peer-report" --opperf "$OPPERF" --reruns x "$tmp/pr3.md" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "reruns takes a count" "$tmp/err" || fail "--reruns x: not a usage error"
[ ! -e "$tmp/pr3.md" ] || fail "--reruns x left an output file"

# --- a crashing script: one line, our figures, exit 0 ---------------------------------------
printf 'import sys\nsys.stderr.write("Traceback\\nValueError: boom\\n")\nsys.exit(3)\n' >"$tmp/crash.py"
OPPERF_PEER_SCRIPT="$tmp/crash.py" run 0 -- run relu --input x=64 "${quick[@]}" --baseline torch
one_line "the peer script failed (exit status 3: ValueError: boom); showing opperf's figures only"
grep -q 'median' "$tmp/out" || fail "opperf's own figures are missing after a peer failure"

# --- the real script with a python that cannot import torch (a shadowing torch.py) ----------
unset OPPERF_PEER_SCRIPT
mkdir -p "$tmp/notorch"
echo 'raise ImportError("no torch here")' >"$tmp/notorch/torch.py"
OPPERF_PYTHON=/usr/bin/python3 PYTHONPATH="$tmp/notorch" run 0 -- run relu --input x=64 "${quick[@]}" --baseline torch
one_line "--baseline torch: PyTorch is not importable by"
grep -qF "(apt-get install python3-torch); showing opperf's figures only" "$tmp/err" || fail "no install hint: $(cat "$tmp/err")"
grep -q 'relu' "$tmp/out" || fail "opperf's own figures are missing without torch"
# a missing interpreter: the same kind of line
OPPERF_PYTHON="$tmp/no-such-python" run 0 -- run relu --input x=64 "${quick[@]}" --baseline numpy
one_line "not found (apt-get install python3"

# --- real PyTorch (/usr/bin/python3, as the set-up installs it) -------------------------------
export OPPERF_PYTHON=/usr/bin/python3
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  ops=()
  for op in relu sum add softmax conv2d dense; do "$OPPERF" describe "$op" >/dev/null 2>&1 && ops+=("$op"); done
  run 0 -- run "${ops[@]}" --shapes small "${quick[@]}" --baseline torch --check --format table,json="$tmp/t.json"
  grep -q 'MISMATCH' "$tmp/out" && fail "real torch disagrees: $(grep MISMATCH "$tmp/out" | head -3)"
  /usr/bin/python3 - "$tmp/t.json" <<'PY' || fail "real torch: not every case was checked and agreed"
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
assert rs
for r in rs:
    p = r["peer"]
    assert p["status"] == "ok", (r["op"], r["spec"], p["status"])
    assert p["library"].startswith("torch "), p["library"]
    assert p["check"]["done"] and p["check"]["agree"], (r["op"], r["spec"], r["pass"], p["check"])
PY
  run 0 -- run "${ops[@]}" --baseline torch --dry-run
  grep -q 'torch.nn.functional.relu' "$tmp/out" || fail "--dry-run does not show relu's equivalent"
  grep -q 'cases, .* with a torch equivalent' "$tmp/out" || fail "--dry-run prints no count"
  if "$OPPERF" describe hard_sigmoid >/dev/null 2>&1; then
    run 0 -- run hard_sigmoid --baseline torch --dry-run
    grep -q 'no-equivalent: ' "$tmp/out" || fail "--dry-run does not list hard_sigmoid as without an equivalent"
  fi
else
  echo "skipping the real-PyTorch checks: /usr/bin/python3 cannot import torch (scripts/install-deps.sh installs it)"
fi

if [ "$fails" -ne 0 ]; then
  echo "$fails peer check(s) failed"
  exit 1
fi
echo "all peer checks passed"

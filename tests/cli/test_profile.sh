#!/usr/bin/env bash
# test_profile.sh: `opperf run --profile` with the real binary: the hottest-functions section in
# the table and Markdown, the JSON "profile" object (shares add up, counts present), folded
# stacks whose counts sum to the samples, profiles carried back from isolated case processes,
# and bad --profile options (one line, exit 2, no output file).
set -u
OPPERF=${OPPERF:-./build/opperf}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
# Measured time, not a sample count: with --runs a batch calibrated on one stalled warm-up call
# (OpenMP on a loaded VM) can leave well under a millisecond to sample, and rightly no sample.
quick=(--warmup 0.001 --min-time 0.05)
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Sampling refused here (perf_event_paranoid 3, seccomp): nothing else can be checked.
if ! "$OPPERF" run relu --shapes small --runs 1 --profile >/dev/null 2>"$tmp/err"; then
  grep -q "cannot sample" "$tmp/err" && { echo "skipped: $(cat "$tmp/err")"; exit 77; }
fi

# --- one operator in this process: table, Markdown, JSON, folded ---------------------------
"$OPPERF" run relu --shapes standard --pass fwd "${quick[@]}" --profile --profile-top 5 \
  --profile-folded "$tmp/f.folded" --format table,json="$tmp/r.json",md="$tmp/r.md" >"$tmp/out" 2>"$tmp/err" ||
  fail "run relu --profile exited $?: $(cat "$tmp/err")"
grep -q "^hottest functions (--profile: cpu-clock" "$tmp/out" || fail "table lacks the profile section"
grep -q "unresolved" "$tmp/out" || fail "table does not show the unresolved count"
grep -q "| self | total | function |" "$tmp/r.md" || fail "Markdown lacks the profile table"
python3 - "$tmp/r.json" "$tmp/f.folded" <<'PY' || fail "JSON profile or folded stacks wrong"
import json, sys
d = json.load(open(sys.argv[1]))
total = 0
for r in d["results"]:
    p = r["profile"]
    assert p["event"] == "cpu-clock" and p["samples"] > 0, p
    for k in ("lost", "unresolved", "throttled", "threads", "frequency_hz"):
        assert k in p, k
    fs = p["functions"]
    assert 1 <= len(fs) <= 5, fs
    assert all(f["total"] >= f["self"] - 1e-9 for f in fs)
    assert sum(f["self"] for f in fs) <= 1 + 1e-9
    assert fs == sorted(fs, key=lambda f: -f["self"])
    total += p["samples"]
n = 0
for line in open(sys.argv[2]):
    stack, count = line.rstrip("\n").rsplit(" ", 1)
    assert stack.startswith("relu;fwd;float32,x="), stack
    n += int(count)
assert n == total, (n, total)
PY

# --- several operators: each case in its own process; the profile comes through the pipe ---
"$OPPERF" run relu add --shapes small --pass fwd "${quick[@]}" --profile --profile-folded "$tmp/g.folded" \
  --format json="$tmp/i.json" >/dev/null 2>"$tmp/err" || fail "isolated --profile run failed: $(cat "$tmp/err")"
python3 - "$tmp/i.json" "$tmp/g.folded" <<'PY' || fail "isolated profiles missing"
import json, sys
d = json.load(open(sys.argv[1]))
ops = {r["op"] for r in d["results"] if r["profile"]["samples"] > 0}
assert ops == {"relu", "add"}, ops
roots = {l.split(";", 1)[0] for l in open(sys.argv[2])}
assert roots == {"relu", "add"}, roots
PY

# --- bad options -----------------------------------------------------------------------------
expect2() {
  local needle=$1
  shift
  "$OPPERF" run relu --shapes small --runs 1 "$@" --profile-folded "$tmp/bad.folded" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "opperf run $* exited $rc, expected 2"
  grep -qF -- "$needle" "$tmp/err" || fail "opperf run $*: stderr lacks '$needle': $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "opperf run $*: not one line: $(cat "$tmp/err")"
  [ ! -e "$tmp/bad.folded" ] || fail "opperf run $* left an output file"
}
expect2 "--profile-top needs a count between 1 and 32" --profile-top 0
expect2 "--profile-freq needs a rate" --profile-freq 0
expect2 "--profile-event must be cpu-clock or cycles, not 'instructions'" --profile-event instructions
expect2 "--profile cannot be combined with --backend callgrind" --backend callgrind --profile
"$OPPERF" run relu --shapes small --runs 1 --profile-folded "$tmp/nodir/x.folded" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "^opperf: --profile-folded: cannot write" "$tmp/err" ||
  fail "unwritable --profile-folded: $(cat "$tmp/err")"

if [ "$fails" -ne 0 ]; then
  echo "$fails profile check(s) failed"
  exit 1
fi
echo "all profile checks passed"

#!/usr/bin/env bash
# test_cli.sh: runs the real `opperf` binary ($OPPERF): every subcommand's -h, --version, a
# small run in every format (JSON must parse), custom cases and config files, and bad inputs:
# each must print one clear line, exit 2, leave no output file, and never crash.
set -u
# $OPPERF, $tmp, fail, expect and the quick settings:
source "$(dirname "$0")/lib.sh"

# --- help and version -------------------------------------------------------------------
expect 0 "" -- --version
grep -q '^opperf [0-9]' "$tmp/out" || fail "--version output: $(cat "$tmp/out")"
for cmd in list describe run events machine; do
  expect 0 "" -- "$cmd" -h
  grep -q "usage: opperf $cmd" "$tmp/out" || fail "$cmd -h prints no usage"
done
expect 0 "" -- -h
expect 2 "unknown command 'frobnicate'" -- frobnicate

# --- list and describe ------------------------------------------------------------------
expect 0 "" -- list
grep -q '^relu ' "$tmp/out" || fail "list lacks relu"
expect 0 "" -- list --category nn
grep -q 'nn\.activation' "$tmp/out" || fail "list --category nn lacks nn.activation"
! awk '$2 == "binary"' "$tmp/out" | grep -q . || fail "list --category nn shows a binary operator"
expect 2 "no operator in category 'nosuch'" -- list --category nosuch
expect 0 "" -- describe relu
grep -q 'shape sets' "$tmp/out" || fail "describe relu lacks shape sets"
expect 2 "did you mean 'relu'?" -- describe reluu

# --- events ---------------------------------------------------------------------------
expect 0 "" -- events sw
grep -q 'task-clock' "$tmp/out" || fail "events sw lacks task-clock"
grep -q '^hardware counters: ' "$tmp/out" || fail "events prints no verdict"
expect 2 "unknown event 'cycels'" -- events cycels

# --- runs ---------------------------------------------------------------------------------
expect 0 "" -- run relu --shapes small "${quick[@]}" --format table,json=$tmp/r.json,csv=$tmp/r.csv,md=$tmp/r.md
grep -q 'median' "$tmp/out" || fail "table lacks the median column"
python3 - "$tmp/r.json" <<'PY' || fail "JSON report invalid or incomplete"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == 1
c = d["context"]
for k in ("tool", "host", "perf", "blas", "timer", "settings", "timestamp"):
    assert k in c, k
res = d["results"]
assert len(res) >= 3 * 2, len(res)          # 3 small entries x (fwd, bwd)
for r in res:
    assert r["status"] == "ok", r
    t = r["time"]
    assert t["samples"] == 3 and len(t["raw"]) == 3
    assert t["min"] <= t["median"] <= t["max"]
    assert "memory" in r and r["memory"]["peak_live_bytes"] > 0
    names = [e["name"] for e in r["counters"]]
    assert "task-clock" in names, names
assert "timer" in c["harness_overhead_per_sample_s"]
PY
head -1 "$tmp/r.csv" | grep -q '^op,category,impl,set,dtype,pass,status,' || fail "CSV header"
[ "$(wc -l <"$tmp/r.csv")" -ge 7 ] || fail "CSV rows"
grep -q '^| op' "$tmp/r.md" || fail "Markdown table"

# -o with one format writes exactly that file; nothing else appears
expect 0 "" -- run relu --shapes small --pass fwd "${quick[@]}" --format json -o "$tmp/only.json"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/only.json" || fail "-o JSON invalid"
[ -z "$(ls "$tmp" | grep -v -E '^(r\.|only\.json|out|err)')" ] || fail "stray files: $(ls "$tmp")"

# custom cases: --input replaces the shape sets; --param applies; --dry-run lists
expect 0 "" -- run relu --input x=3x5 --pass fwd --dry-run
grep -q 'x=3x5' "$tmp/out" || fail "dry run lacks the custom case"
grep -q '^1 cases' "$tmp/out" || fail "dry run count: $(cat "$tmp/out")"
expect 0 "" -- run relu --input x=3x5 --pass both "${quick[@]}"
grep -q 'both' "$tmp/out" || fail "--pass both row missing"

# list options reject empty items (perf does too): exit 2, one line naming the option
for bad_list in "--format json," "--dtype float32,,float64" "--pass fwd," "--shapes ,standard" "--impl native," "--events cycles,,instructions"; do
  # shellcheck disable=SC2086
  expect 2 "${bad_list%% *}: empty item" -- run relu --input x=4 "${quick[@]}" $bad_list
done
expect 2 "--pass: empty item" -- sweep relu --shapes 16,32 --pass fwd,

# config file
cat >"$tmp/ok.json" <<'JSON'
[{"op": "relu", "inputs": {"x": [7, 9]}, "dtype": "float64"},
 {"op": "relu", "inputs": {"x": "2x3"}}]
JSON
expect 0 "" -- run --config "$tmp/ok.json" --pass fwd "${quick[@]}" --format csv
[ "$(grep -c '^relu,' "$tmp/out")" -eq 2 ] || fail "config cases: $(cat "$tmp/out")"
grep -q '7x9' "$tmp/out" || fail "config shape from a list"
# Isolated cases are planned once: their processes fork from a case server and never read the
# command line's inputs again, so a config from a pipe (read once) runs isolated (a re-executed
# case process read an empty pipe and failed).
cat "$tmp/ok.json" | "$OPPERF" run --config /dev/stdin --isolate --pass fwd "${quick[@]}" --format csv >"$tmp/out" 2>"$tmp/err" ||
  fail "isolated run of a config from a pipe: $(cat "$tmp/err")"
[ "$(grep -c '^relu,.*,ok,' "$tmp/out")" -eq 2 ] || fail "isolated config cases from a pipe: $(cat "$tmp/out")"

# counters: software events count; an unsupported hardware event is reported, not faked
expect 0 "" -- run relu --input x=64x64 --pass fwd "${quick[@]}" --events sw,cycles --format json -o "$tmp/ev.json"
python3 - "$tmp/ev.json" "$no_perf" <<'PY' || fail "counter statuses"
import errno, json, sys
d = json.load(open(sys.argv[1]))
ev = {e["name"]: e for e in d["results"][0]["counters"]}
t = ev["task-clock"]
if sys.argv[2] == "1":                      # no perf_event_open at all (qemu-user)
    assert t["status"] == "not supported" and "per_call" not in t and t["errno"] == errno.ENOSYS, t
    assert t["reason"], t
else:
    assert t["status"] in ("counted", "scaled") and t["per_call"] > 0, t
c = ev["cycles"]
if c["status"] == "not supported":          # this VM: no hardware PMU
    assert "per_call" not in c and c.get("reason"), c
else:                                       # a machine with a PMU
    assert c["per_call"] > 0, c
PY

# --random-shapes: same seed, same cases; another seed, others; they run
expect 0 "" -- run relu add --random-shapes 3 --seed 9 --dry-run
cp "$tmp/out" "$tmp/r1"
expect 0 "" -- run relu add --random-shapes 3 --seed 9 --dry-run
cmp -s "$tmp/out" "$tmp/r1" || fail "--random-shapes is not reproducible"
grep -c ' random ' "$tmp/r1" | grep -qx 6 || fail "--random-shapes 3 on two operators: $(cat "$tmp/r1")"
expect 0 "" -- run relu add --random-shapes 3 --seed 10 --dry-run
cmp -s "$tmp/out" "$tmp/r1" && fail "--random-shapes ignores --seed"
expect 0 "" -- run relu --random-shapes 2 "${quick[@]}"

# --save-tensors writes .npy files; --input x=@file.npy runs on them and gives the same output
expect 0 "" -- run relu --input x=5x7 --pass fwd --save-tensors "$tmp/st" "${quick[@]}"
[ -f "$tmp/st/0000_relu_float32_fwd_x.npy" ] && [ -f "$tmp/st/0000_relu_float32_fwd_y.npy" ] ||
  fail "--save-tensors files: $(ls "$tmp/st")"
expect 0 "" -- run relu --input x=@"$tmp/st/0000_relu_float32_fwd_x.npy" --seed 99 --pass fwd --save-tensors "$tmp/st2" "${quick[@]}"
cmp -s "$tmp/st/0000_relu_float32_fwd_y.npy" "$tmp/st2/0000_relu_float32_fwd_y.npy" ||
  fail "a run on saved inputs gives another output"

# --- bad input: one line, exit 2, no output file, no crash -------------------------------
out="$tmp/bad.json"
bad() { expect 2 "$1" -- "${@:2}" -o "$out"; [ ! -e "$out" ] || fail "output file written for: ${*:2}"; }
bad "unknown operator 'reluu'; did you mean 'relu'?" run reluu
bad "unknown operator or category 'zzzzzz'" run zzzzzz
bad "malformed shape '12xab'" run relu --input x=12xab
bad "has no input or param 'y'" run relu --input y=3x3
bad "cannot be broadcast" run add --input a=3x4 --input b=5x6
bad "unknown event 'cycels'" run relu --events cycels
bad "only" run relu --input x=100000000x100000000
bad "absurdly large" run relu --input x=99999999999999999999
printf '[{"op": "relu", "inputs": {"x": "3x3"}' >"$tmp/broken.json"
bad "not valid JSON (near line 1)" run --config "$tmp/broken.json"
printf '[{"op": "relu", "shapes": {}}]' >"$tmp/field.json"
bad "unknown field \"shapes\"" run --config "$tmp/field.json"
printf '{"cases": []}' >"$tmp/empty.json"
bad "expected a non-empty list of cases" run --config "$tmp/empty.json"
bad "does not support dtype int32" run relu --dtype int32
bad "unknown dtype 'float16'" run relu --dtype float16
bad "unknown pass 'sideways'" run relu --pass sideways
bad "unknown shape set 'medium'" run relu --shapes medium
bad "unknown format 'xml'" run relu --format xml
bad "--threads needs a count" run relu --threads 0
bad "--cache must be warm or cold" run relu --cache tepid
bad "this machine has CPUs" run relu --cpu 4096
bad "--param expects NAME=VALUE" run relu --param oops
bad "unknown option" run relu --frobnicate
bad "cannot read '$tmp/none.npy'" run relu --input x=@"$tmp/none.npy"
echo "not numpy" >"$tmp/bad.npy"
bad "is not a .npy file" run relu --input x=@"$tmp/bad.npy"
bad "holds float32 but the input is float64" run relu --dtype float64 --input x=@"$tmp/st/0000_relu_float32_fwd_x.npy"
bad "cannot be broadcast" run add --input a=@"$tmp/st/0000_relu_float32_fwd_x.npy" --input b=3x3
bad "--random-shapes needs a count" run relu --random-shapes 0
bad "cannot be combined" run relu --random-shapes 2 --input x=3x3
bad "is not a directory" run relu --save-tensors "$tmp/bad.npy"
expect 2 "needs a value" -- run relu --threads
expect 2 "cannot read config" -- run --config "$tmp/nope.json"

if [ "$fails" -ne 0 ]; then
  echo "$fails CLI check(s) failed"
  exit 1
fi
echo "all CLI checks passed"

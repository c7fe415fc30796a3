#!/usr/bin/env bash
# test_sweep.sh: `opperf sweep` on the real binary (needs the sum and relu operators): the shape
# lists it measures (aspect, vary, explicit), the SVG plot parsed as XML with one point per shape
# on each line, csv/json/md output, bad input (exit 2, no files), `--format trace` of run and
# sweep (one X event per sample, counter tracks) and -v / OPPERF_VERBOSE lines. No timing checks.
set -u
OPPERF=${OPPERF:-./build/opperf}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
quick=(--warmup 0.001 --min-time 0 --sample-time 0.0002 --runs 3)
# perf_event_open missing altogether (ENOSYS: qemu-user does not emulate it), so not even the
# software counters can count: the checks of counted values check the honest status instead.
no_perf=0
"$OPPERF" events 2>/dev/null | grep -q 'task-clock .*ENOSYS' && no_perf=1
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$OPPERF" sweep -h | grep -q -- '--aspect' || fail "sweep -h"
"$OPPERF" -h | grep -q '^  sweep ' || fail "opperf -h does not list sweep"
"$OPPERF" run -h | grep -q 'trace' || fail "run -h does not mention --format trace"

# --- aspect sweep: exact shapes, plot with one line and 11 points ------------------------
"$OPPERF" sweep sum --aspect 2^10 --pass fwd "${quick[@]}" --format json -o "$tmp/a.json" \
  --plot "$tmp/a.svg" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "aspect sweep exited $rc: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "sweep -o wrote to stdout too"
python3 - "$tmp/a.json" "$tmp/a.svg" <<'PY' || fail "aspect sweep json/svg"
import json, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
assert d["kind"] == "sweep" and d["op"] == "sum", d
shapes = [p["shape"] for p in d["points"]]
assert shapes == ["%dx%d" % (2**i, 2**(10 - i)) for i in range(11)], shapes
for p in d["points"]:
    assert p["status"] == "ok" and p["elements"] == 1024 and p["pass"] == "fwd" and p["cache"] == "warm", p
    assert p["time_per_call_s"] > 0 and abs(p["ns_per_elem"] - p["time_per_call_s"] * 1e9 / 1024) < 1e-6 * p["ns_per_elem"]
    assert p["gbps"] > 0
    # cycles: from a counter or task-clock x MHz, never without a source
    assert (p["cycles_per_elem"] is None) == ("cycles_source" not in p), p
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[2]).getroot()
assert root.tag == ns + "svg", root.tag
lines = root.findall(".//" + ns + "polyline")
assert len(lines) == 1, len(lines)
pts = lines[0].get("points").split()
assert len(pts) == 11, pts
xs = [float(p.split(",")[0]) for p in pts]
assert xs == sorted(xs) and len(set(xs)) == 11, xs     # log axis: evenly spaced, increasing
gaps = [b - a for a, b in zip(xs, xs[1:])]
assert max(gaps) - min(gaps) < 0.5, gaps
texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
for want in ("rows of x", "log scale", "time per element (ns)", "fwd, warm cache", "opperf sweep sum"):
    assert want in texts, (want, texts)
PY

# --- vary: geometric range, warm and cold, fwd and bwd: 4 lines of 4 points --------------
"$OPPERF" sweep relu --vary x.dim0=8:64:x2 --input x=8x16 --pass fwd,bwd --cache warm,cold "${quick[@]}" \
  --format csv -o "$tmp/v.csv" --plot "$tmp/v.svg" 2>"$tmp/err"
[ $? -eq 0 ] || fail "vary sweep: $(cat "$tmp/err")"
python3 - "$tmp/v.csv" "$tmp/v.svg" <<'PY' || fail "vary sweep csv/svg"
import csv, sys, xml.etree.ElementTree as ET
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 16, len(rows)
assert [r["shape"] for r in rows[:8:2]] == ["8x16", "16x16", "32x16", "64x16"], rows
assert {(r["cache"], r["pass"]) for r in rows} == {(c, p) for c in ("warm", "cold") for p in ("fwd", "bwd")}
assert all(r["status"] == "ok" and int(r["elements"]) == int(r["shape"].split("x")[0]) * 16 for r in rows)
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[2]).getroot()
lines = root.findall(".//" + ns + "polyline")
assert len(lines) == 4 and all(len(l.get("points").split()) == 4 for l in lines), [l.get("points") for l in lines]
legend = [t.text for g in root.iter(ns + "g") if g.get("class") == "legend" for t in g.iter(ns + "text")]
assert sorted(legend) == sorted(["fwd, warm cache", "bwd, warm cache", "fwd, cold cache", "bwd, cold cache"]), legend
PY
"$OPPERF" sweep relu --vary dim1=4:16:+4 --input x=2x4 "${quick[@]}" --format csv 2>"$tmp/err" >"$tmp/v2.csv"
[ $? -eq 0 ] || fail "arithmetic vary: $(cat "$tmp/err")"
python3 -c "
import csv,sys; r=list(csv.DictReader(open('$tmp/v2.csv')))
assert [x['shape'] for x in r]==['2x4','2x8','2x12','2x16'], r" || fail "arithmetic vary shapes"

# --- explicit shapes, markdown and table -------------------------------------------------
"$OPPERF" sweep relu --shapes "1024x16,16x1024, x=4x4" "${quick[@]}" --format md >"$tmp/s.md" 2>"$tmp/err"
[ $? -eq 0 ] || fail "shapes sweep: $(cat "$tmp/err")"
grep -q '^| warm  | fwd  | 1024x16 ' "$tmp/s.md" && grep -q '| 16x1024 ' "$tmp/s.md" && grep -q '| x=4x4 ' "$tmp/s.md" \
  || fail "shapes sweep markdown: $(cat "$tmp/s.md")"
"$OPPERF" sweep sum --shapes "64x64" --events cache,tlb "${quick[@]}" >"$tmp/t.txt" 2>"$tmp/err"
[ $? -eq 0 ] || fail "sweep with --events cache,tlb: $(cat "$tmp/err")"
grep -q "ns/elem" "$tmp/t.txt" || fail "sweep table: $(cat "$tmp/t.txt")"

# --- bad input: one line, exit 2, no files ------------------------------------------------
bad() {
  rm -f "$tmp/bad.out" "$tmp/bad.svg"
  "$OPPERF" sweep "$@" "${quick[@]}" -o "$tmp/bad.out" --plot "$tmp/bad.svg" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "sweep $* exited $rc, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "sweep $*: expected one line, got: $(cat "$tmp/err")"
  grep -q '^opperf: ' "$tmp/err" || fail "sweep $*: message: $(cat "$tmp/err")"
  [ -e "$tmp/bad.out" ] || [ -e "$tmp/bad.svg" ] && fail "sweep $* wrote a file"
  ls "$tmp" | grep -q '\.tmp\.' && fail "sweep $* left a temporary file"
  return 0
}
bad summ --aspect 2^10
bad sum --aspect 1000
bad sum --aspect 2^x
bad sum --vary x.dim0=16:8:x2
bad sum --vary x.dim0=16:64
bad sum --vary x.dim5=1:4:x2
bad sum --vary w.dim0=1:4:x2
bad sum --shapes "10xq"
bad relu --shapes "100000000000x100000000000"   # (sum: reduce.c overflows in infer under UBSan)
bad sum --aspect 2^40
bad sum
bad sum --aspect 2^4 --vary x.dim0=1:2:x2
bad sum --aspect 2^4 --cache lukewarm
bad sum --aspect 2^4 --events nosuchevent
bad sum --aspect 2^4 --format xml
bad sum --aspect 2^4 --pass sideways
bad sum --aspect 2^4 --plot-metric joules
grep -q "did you mean 'sum'" <("$OPPERF" sweep summ --aspect 2^4 2>&1) || fail "no suggestion for summ"

# --- trace: run and sweep ------------------------------------------------------------------
"$OPPERF" run relu sum --shapes small --pass fwd "${quick[@]}" --events sw --format trace -o "$tmp/run.trace.json" \
  2>"$tmp/err" >/dev/null
[ $? -eq 0 ] || fail "run --format trace: $(cat "$tmp/err")"
"$OPPERF" run relu --shapes small --pass fwd "${quick[@]}" --no-isolate --format json -o "$tmp/run.json" 2>/dev/null
"$OPPERF" sweep sum --aspect 2^6 "${quick[@]}" --format trace -o "$tmp/sweep.trace.json" 2>"$tmp/err"
[ $? -eq 0 ] || fail "sweep --format trace: $(cat "$tmp/err")"
python3 - "$tmp/run.trace.json" "$tmp/sweep.trace.json" "$no_perf" <<'PY' || fail "trace JSON"
import json, sys
from collections import Counter
for path, cases in ((sys.argv[1], None), (sys.argv[2], 7)):
    d = json.load(open(path))
    ev = d["traceEvents"]
    x = [e for e in ev if e["ph"] == "X"]
    c = [e for e in ev if e["ph"] == "C"]
    m = [e for e in ev if e["ph"] == "M"]
    per_case = Counter((e["args"]["op"], e["args"]["spec"], e["args"]["pass"]) for e in x)
    assert all(n == 3 for n in per_case.values()), per_case      # --runs 3: one X per sample
    if cases: assert len(per_case) == cases, per_case
    for e in x:
        assert e["dur"] > 0 and e["ts"] >= 0 and e["pid"] == 1
        for k in ("op", "inputs", "dtype", "pass", "params", "time_per_call_s"): assert k in e["args"], e
    names = {e["name"] for e in c}
    assert "time per call (ns)" in names, names
    assert len([e for e in c if e["name"] == "time per call (ns)"]) == len(x)
    assert any(e["name"] == "process_name" for e in m) and any(e["name"] == "thread_name" for e in m)
    if path == sys.argv[1]:
        assert ("task-clock per call" in names) == (sys.argv[3] != "1"), names
        assert {e["args"]["op"] for e in x} == {"relu", "sum"}
PY

# --- verbose ---------------------------------------------------------------------------------
OPPERF_VERBOSE=1 "$OPPERF" run relu --shapes small --pass fwd "${quick[@]}" >/dev/null 2>"$tmp/verbose"
n_records=$("$OPPERF" run relu --shapes small --pass fwd --dry-run | tail -1 | cut -d' ' -f1)
"$OPPERF" sweep sum --aspect 2^4 --pass fwd "${quick[@]}" -v >/dev/null 2>"$tmp/verbose2"
"$OPPERF" run relu --shapes small --pass fwd "${quick[@]}" >/dev/null 2>"$tmp/quiet"
python3 - "$tmp/verbose" "$n_records" "$tmp/verbose2" "$tmp/quiet" <<'PY' || fail "verbose lines"
import sys
def parse(path):
    out = []
    for line in open(path):
        if not line.startswith("opperf_verbose,"): continue
        f = line.rstrip("\n").split(",")
        kv = dict(x.split("=", 1) for x in f[8:])
        out.append((f, kv))
    return out
v = parse(sys.argv[1])
assert len(v) == int(sys.argv[2]), (len(v), sys.argv[2])
for f, kv in v:
    assert f[1] == "run" and f[2] == "relu" and f[3] == "native" and f[4].startswith("x=") and f[5] == "float32"
    assert f[6] == "fwd" and f[7] == "ok" and kv["cache"] == "warm"
    assert float(kv["median_s"]) > 0 and float(kv["gbps"]) > 0 and int(kv["samples"]) == 3
v2 = parse(sys.argv[3])
assert [f[4] for f, _ in v2] == ["x=%dx%d" % (2**i, 2**(4 - i)) for i in range(5)], v2
assert all(f[1] == "sweep" and f[2] == "sum" for f, _ in v2)
assert not parse(sys.argv[4])
PY

[ "$fails" -eq 0 ] && echo "test_sweep: all passed"
exit $((fails > 0))

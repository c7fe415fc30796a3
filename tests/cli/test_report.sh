#!/usr/bin/env bash
# test_report.sh: `opperf report` on the real binary: pages from real runs (roofline ceilings
# from a short `opperf machine`, counters that did not count, the top-down preset, a numpy peer),
# a sweep and three runs (trend, regressions, change points); the data block parsed back from
# the page; a `</script>` inside the data; the size bound at default-suite scale; bad input (one
# line, exit 2, no file left, an existing file untouched); and the page in headless Chromium
# through chromedriver (tests/cli/report_browser.py): no console error, sorting, filtering,
# a case's roofline, counters and top-down on click. The browser part is skipped only under an
# emulator (cross builds); a missing Chromium elsewhere is a failure (scripts/install-deps.sh).
set -u
# $OPPERF, $tmp, fail, expect and the quick settings:
source "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
export OPPERF_MACHINE_FILE="$tmp/machine.json"

expect 0 "" -- report -h
grep -q "usage: opperf report" "$tmp/out" || fail "report -h prints no usage"
"$OPPERF" -h | grep -q '^  report ' || fail "opperf -h does not list report"

# --- real inputs --------------------------------------------------------------------------
"$OPPERF" machine --time 0.05 >/dev/null 2>"$tmp/err" || fail "opperf machine: $(cat "$tmp/err")"
run() { # OUT ARGS...: one real run of exp and dot (both have a numpy peer; 10 samples: a CI), JSON
  local out=$1
  shift
  "$OPPERF" run exp dot --shapes small --pass fwd,bwd "${quick[@]}" --runs 10 --format json -o "$out" "$@" 2>"$tmp/err" ||
    fail "opperf run $*: $(cat "$tmp/err")"
}
run "$tmp/r1.json" --events sw,cycles
run "$tmp/r2.json" --events topdown --baseline numpy
"$OPPERF" sweep relu --vary x.dim0=64:512:x2 --input x=64x32 --pass fwd "${quick[@]}" --format json \
  -o "$tmp/sweep.json" 2>"$tmp/err" || fail "opperf sweep: $(cat "$tmp/err")"
# Run 3: run 2 with one case three times slower and a change point there (what a results
# store with change-point detection gives), a top-down breakdown on one case (no PMU here: the
# figures are made up, marked so) and a hostile message.
$PY - "$tmp" <<'PY' || fail "making run 3"
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/r2.json"))
ok = [r for r in d["results"] if r["status"] == "ok"]
slow = ok[0]
for k in ("min", "median", "mean", "p90", "p99", "max"):
    slow["time"][k] *= 3
slow["time"]["median_ci95"] = [v * 3 for v in slow["time"]["median_ci95"]]
ok[1]["topdown"] = {"model": "synthetic (test)", "available": True, "slots_per_call": 1000,
                    "level1": {"retiring": 0.2, "bad_speculation": 0.05, "frontend_bound": 0.15, "backend_bound": 0.6},
                    "level2": {"memory_bound": 0.45, "core_bound": 0.15}, "verdict": "backend bound (memory)"}
ok[2]["message"] = "</script><script>window.__opperf_injected=1</script>\u2028 & <b>"
ctx = d["context"]
ctx["timestamp"] = ctx["timestamp"][:-1] + "9Z"  # another label than run 2's
d["changes"] = [{"op": slow["op"], "impl": slow["impl"], "spec": slow["spec"], "params": slow["params"],
                 "dtype": slow["dtype"], "pass": slow["pass"], "run": 2}]
json.dump(d, open(t + "/r3.json", "w"))
print(json.dumps({"op": slow["op"], "spec": slow["spec"], "dtype": slow["dtype"], "pass": slow["pass"]}),
      file=open(t + "/slow.json", "w"))
PY

# Page data back from a page: the one JSON block.
data() {
  $PY - "$@" <<'PY'
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script type="application/json" id="opperf-data">(.*?)</script>', html, re.S)
assert m, "no data block"
d = json.loads(m.group(1))
exec(sys.argv[2])
PY
}

# --- one run with a peer and ceilings -------------------------------------------------------
expect 0 "" -- report "$tmp/r2.json" -o "$tmp/one.html"
[ -s "$tmp/one.html" ] || fail "report wrote no page"
[ -s "$tmp/out" ] && fail "report -o also wrote to stdout"
grep -q 'http' "$tmp/one.html" && grep -Eo '(src|href)="https?:[^"]*"' "$tmp/one.html" | grep -q . &&
  fail "the page loads something from the network: $(grep -Eo '(src|href)="https?:[^"]*"' "$tmp/one.html" | head -3)"
data "$tmp/one.html" '
src = json.load(open(sys.argv[3]))
cases = d["run"]["cases"]
assert len(cases) == len(src["results"]), (len(cases), len(src["results"]))
for c, r in zip(cases, src["results"]):
    assert c["op"] == r["op"] and c["spec"] == r["spec"] and c["pass"] == r["pass"], (c, r)
    if r["status"] == "ok":
        assert abs(c["t"][0] / r["time"]["median"] - 1) < 1e-5, (c["t"], r["time"]["median"])
    S = d["run"]["strings"]  # counters: [name, status, per call, running %, reason, privilege]
    assert len(c.get("ctr", [])) == len(r["counters"])
    for k, rk in zip(c.get("ctr", []), r["counters"]):
        assert S[k[0]] == rk["name"] and S[k[1]] == rk["status"], (k, rk)
        assert (k[2] is None) == ("per_call" not in rk), (k, rk)  # no value: null, never 0
        assert (k[4] is None and "reason" not in rk) or S[k[4]] == rk["reason"], (k, rk)
    assert ("peer" in c) == ("peer" in r)
    assert ("td" in c) == ("topdown" in r)
    if "topdown" in r:
        td, rt = c["td"], r["topdown"]
        assert td["available"] == rt["available"], (td, rt)
        assert td["available"] or S[td["reason"]] == rt["reason"]
        if "model" in rt:  # absent where no counter opens at all (qemu-user: ENOSYS)
            assert S[td["model"]] == rt["model"], (td, rt)
            assert d["run"]["td_models"][rt["model"]]["formula"] == rt["formula"]
m = d["run"]["context"]["machine"]
assert m["peak_flops"]["float32"][0] > 0 and m["bandwidth"][0] > 0, m
assert any("peer" in c and c["peer"].get("ratio", 0) > 0 for c in cases), "no peer ratio"
' "$tmp/r2.json" || fail "the page data does not match run 2"

# --- three runs and a sweep: trend, regressions, change points -----------------------------
expect 0 "" -- report "$tmp/r1.json" "$tmp/r2.json" "$tmp/r3.json" "$tmp/sweep.json" -o "$tmp/trend.html" --title "three runs"
data "$tmp/trend.html" '
slow = json.load(open(sys.argv[3]))
t = d["trend"]
assert len(t["runs"]) == 3, t["runs"]
assert d["title"] == "three runs"
top = t["cases"][t["regressions"][0]["c"]]
assert top["label"].startswith("%s %s %s %s" % (slow["op"], slow["dtype"], slow["pass"], slow["spec"])), (top["label"], slow)
assert abs(t["regressions"][0]["ratio"] - 3) < 1e-3, t["regressions"][0]
# CIs separate: computed from the CIs of the two runs (a loaded machine can give wide ones)
r2, r3 = (json.load(open(sys.argv[k])) for k in (4, 5))
pick = lambda d: [r for r in d["results"] if (r["op"], r["spec"], r["dtype"], r["pass"]) ==
                  (slow["op"], slow["spec"], slow["dtype"], slow["pass"])][0]["time"]["median_ci95"]
(a_lo, a_hi), (b_lo, b_hi) = pick(r2), pick(r3)
assert t["regressions"][0]["sep"] is (b_lo > a_hi or b_hi < a_lo), (t["regressions"][0], pick(r2), pick(r3))
ratios = [r["ratio"] for r in t["regressions"]]
assert ratios == sorted(ratios, reverse=True), ratios
assert top["changes"] == [2], top
assert sum(1 for c in t["cases"] if c.get("changes")) == 1
assert len(d["sweeps"]) == 1 and d["sweeps"][0]["op"] == "relu" and len(d["sweeps"][0]["points"]) == 4
' "$tmp/slow.json" "$tmp/r2.json" "$tmp/r3.json" || fail "trend data"

# --- </script> and U+2028 in a string: escaped, the page still one document -----------------
[ "$(grep -o '</script>' "$tmp/trend.html" | wc -l)" -eq 2 ] ||
  fail "a </script> in the data is in the page verbatim ($(grep -o '</script>' "$tmp/trend.html" | wc -l) closing tags)"
grep -q 'window.__opperf_injected' "$tmp/trend.html" || fail "the hostile message is missing from the page"
data "$tmp/trend.html" '
assert any(c.get("msg", "").startswith("</script><script>window.__opperf_injected=1</script>\u2028 & <b>") for c in d["run"]["cases"])
' || fail "the hostile message did not survive escaping"

# --- size: a default suite is ~2,600 cases; the page stays well under 5 MB ------------------
$PY - "$tmp" <<'PY' || fail "making the large input"
import copy, json, sys
t = sys.argv[1]
d = json.load(open(t + "/r2.json"))
base = d["results"]
d["results"] = []
for i in range(2600):
    r = copy.deepcopy(base[i % len(base)])
    r["spec"] += " #%d" % i
    d["results"].append(r)
json.dump(d, open(t + "/big.json", "w"))
PY
expect 0 "" -- report "$tmp/big.json" -o "$tmp/big.html"
size=$(stat -c %s "$tmp/big.html")
[ "$size" -lt 3000000 ] || fail "a 2,600-case page is $size bytes (bound 3 MB, to stay well under 5 MB)"

# --- bad input: one line, exit 2, no output file (and an existing one untouched) ----------
echo "hello" >"$tmp/text.json"
echo '{"a": 1}' >"$tmp/other.json"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); d["schema_version"]=99; json.dump(d, open(sys.argv[2], "w"))' \
  "$tmp/r1.json" "$tmp/v99.json"
echo '{"schema_version": 1, "kind": "sweep"}' >"$tmp/nopoints.json"
expect 2 "cannot read '$tmp/missing.json'" -- report "$tmp/missing.json" -o "$tmp/bad.html"
expect 2 "is not an opperf JSON report" -- report "$tmp/text.json" -o "$tmp/bad.html"
expect 2 "is not an opperf JSON report" -- report "$tmp/other.json" -o "$tmp/bad.html"
expect 2 "a sweep without points" -- report "$tmp/nopoints.json" -o "$tmp/bad.html"
expect 2 "schema version 99" -- report "$tmp/r1.json" "$tmp/v99.json" -o "$tmp/bad.html"
expect 2 "needs -o" -- report "$tmp/r1.json"
expect 2 "at least one JSON file" -- report -o "$tmp/bad.html"
expect 2 "unknown option" -- report --frobnicate "$tmp/r1.json" -o "$tmp/bad.html"
expect 2 "cannot write" -- report "$tmp/r1.json" -o "$tmp/no/such/dir/x.html"
ls "$tmp"/bad.html* >/dev/null 2>&1 && fail "a failed report left a file: $(ls "$tmp"/bad.html*)"
echo old >"$tmp/keep.html"
expect 2 "schema version 99" -- report "$tmp/v99.json" -o "$tmp/keep.html"
[ "$(cat "$tmp/keep.html")" = old ] || fail "a failed report overwrote the existing output"
ls "$tmp"/keep.html.tmp* >/dev/null 2>&1 && fail "a failed report left a temporary file"

# --- in the browser ------------------------------------------------------------------------
if [ -n "${OPPERF_EMULATOR:-}" ]; then
  echo "skipped: the browser checks (a cross build under ${OPPERF_EMULATOR})"
else
  export REPORT_BROWSER_LOG="$tmp/chromedriver.log"
  b() { # PAGE ARGS...
    timeout 300 $PY "$here/report_browser.py" "$@" >"$tmp/b.out" 2>&1 || fail "browser, $*: $(cat "$tmp/b.out")"
  }
  b "$tmp/one.html" --expect peer,roofline --ceiling float32 --ceiling DRAM --select dot
  b "$tmp/trend.html" --expect trend,changes,sweep,topdown,escape --select exp
  b "$tmp/big.html" --select exp
  # Cache levels when the machine data has them: a machine file with per-level bandwidths
  # (the cache-aware roofline's), under whatever key names bandwidth, gives one line each.
  $PY - "$tmp" <<'PY' || fail "making the cache-level run"
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/r2.json"))
m = d["context"]["machine"]
bw = m["bandwidth"]
m["cache_bandwidth"] = {"L1": [bw[0] * 20, bw[1] * 20], "L2": [bw[0] * 8, bw[1] * 8], "L3": [bw[0] * 3, bw[1] * 3]}
json.dump(d, open(t + "/levels.json", "w"))
PY
  expect 0 "" -- report "$tmp/levels.json" -o "$tmp/levels.html"
  b "$tmp/levels.html" --expect roofline --ceiling L1 --ceiling L2 --ceiling L3 --ceiling DRAM --select dot
fi

[ "$fails" -eq 0 ] && echo "test_report: all passed" || echo "test_report: $fails failure(s)"
[ "$fails" -eq 0 ]

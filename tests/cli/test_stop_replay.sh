#!/usr/bin/env bash
# test_stop_replay.sh: scripts/opperf-stop-replay mirrors the harness's adaptive stop rule: on a
# real run, replaying the run's own rule over its raw samples stops every case after exactly
# the samples the harness kept and sums to the time it measured; a looser floor keeps fewer
# samples; bad arguments exit 2 with one line.
source "$(dirname "$0")/lib.sh"
src=${OPPERF_SOURCE_DIR:-.}
replay="$src/scripts/opperf-stop-replay"

"$OPPERF" run abs relu sum softmax --pass fwd,bwd --threads 1 --warmup 0.005 --min-time 0.02 \
  --ci-time 0.06 --target-ci 3 --sample-time 0.0005 --format json -o "$tmp/run.json" 2>"$tmp/err" \
  || fail "the run failed: $(tail -3 "$tmp/err")"
python3 - "$replay" "$tmp/run.json" <<'PY' || fail "the replay does not reproduce the harness's stops"
import importlib.machinery, importlib.util, json, sys
loader = importlib.machinery.SourceFileLoader("replay", sys.argv[1])
spec = importlib.util.spec_from_loader("replay", loader)
m = importlib.util.module_from_spec(spec); loader.exec_module(m)
d = json.load(open(sys.argv[2]))
checked = looser = 0
for r in d["results"]:
    t = r["time"]
    if r["status"] != "ok" or t["stop"] not in ("ci", "ci-time"):
        continue
    n, total = m.replay(t["raw"], t["calls_per_sample"], 0.02, 0.06, 0.03)
    assert n == t["samples"], (r["op"], r["pass"], n, t["samples"])
    assert abs(total - t["measured_s"]) <= 1e-9 * max(1.0, total), (r["op"], total, t["measured_s"])
    checked += 1
    n2, _ = m.replay(t["raw"], t["calls_per_sample"], 0.001, 0.002, 0.03)
    assert n2 <= n
    looser += n2 < n
assert checked >= 10, checked
assert looser >= 1, "a 1 ms floor never stopped earlier than a 20 ms one"
print("replayed", checked, "cases;", looser, "stop earlier under a 1 ms floor")
PY
python3 "$replay" "$tmp/run.json" "$tmp/run.json" >"$tmp/out" || fail "the replay of two runs failed"
grep -q "0.03, 0.15, 0.03" "$tmp/out" || fail "the default rule is not in the output: $(cat "$tmp/out")"
python3 "$replay" --rule 1,2 "$tmp/run.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "a bad --rule: exit $rc, $(cat "$tmp/err")"
python3 "$replay" "$tmp/missing.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "cannot read" "$tmp/err" || fail "a missing file: exit $rc, $(cat "$tmp/err")"
exit $((fails > 0))

#!/usr/bin/env bash
# test_paired.sh: comparing two builds measured in alternating rounds (`compare --paired`,
# `scripts/opperf-ci.sh --against`): a consistent slowdown is a regression with its interval,
# round-to-round jitter around no change is not, bad round lists are usage errors, and the CI
# script runs both binaries in alternating order and gates on the paired comparison.
source "$(dirname "$0")/lib.sh"
src=${OPPERF_SOURCE_DIR:-.}
"$OPPERF" run relu sigmoid --input x=64x64 --pass fwd "${quick[@]}" --no-isolate --format json -o "$tmp/t.json" 2>"$tmp/err" ||
  fail "template run: $(cat "$tmp/err")"
python3 - "$tmp" <<'PY' || fail "making the rounds"
import json, sys, copy
tmp = sys.argv[1]
t = json.load(open(f"{tmp}/t.json"))
for k in range(1, 5):
    for side in ("base", "cur"):
        d = copy.deepcopy(t)
        for r in d["results"]:
            m = 1e-6 * (1 + 0.05 * k)  # the machine drifts from round to round: both sides alike
            if side == "cur":
                m *= 1.30 * (1 + 0.01 * k) if r["op"] == "relu" else 1 + 0.02 * (-1) ** k
            r["time"]["median"] = m
            r["time"]["raw"] = [m] * len(r["time"]["raw"])
        json.dump(d, open(f"{tmp}/{side}{k}.json", "w"))
PY
b=$tmp/base1.json,$tmp/base2.json,$tmp/base3.json,$tmp/base4.json
c=$tmp/cur1.json,$tmp/cur2.json,$tmp/cur3.json,$tmp/cur4.json
"$OPPERF" compare --paired --all --format json -o "$tmp/cmp.json" "$b" "$c" 2>"$tmp/err"
[ $? -eq 1 ] || fail "a paired 30% slowdown did not fail the gate: $(cat "$tmp/err")"
python3 - "$tmp/cmp.json" <<'PY' || fail "paired verdicts"
import json, sys
cs = {c["op"]: c for c in json.load(open(sys.argv[1]))["cases"]}
r, s = cs["relu"], cs["sigmoid"]
assert r["verdict"] == "regressed" and r["rounds"] == 4, r
assert 0.30 < r["change"] < 0.36 and r["change_ci95"][0] > 0.05, r
assert s["verdict"] == "unchanged" and abs(s["change"]) < 0.01, s
assert s["change_ci95"][0] < 0 < s["change_ci95"][1], s
PY
expect 2 "2 base reports but 1 new" -- compare --paired "$tmp/base1.json,$tmp/base2.json" "$tmp/cur1.json"
expect 2 "needs 2 to 16 rounds" -- compare --paired "$tmp/base1.json" "$tmp/cur1.json"
expect 2 "--paired: empty item" -- compare --paired "$tmp/base1.json,,$tmp/base2.json" "$b"

# The CI step against another build (here the same binary: nothing may regress).
if [ -z "${OPPERF_EMULATOR:-}" ]; then
  OPPERF=${OPPERF_TARGET:-$OPPERF} OUT=$tmp/ci bash "$src/scripts/opperf-ci.sh" --against "${OPPERF_TARGET:-$OPPERF}" --rounds 2 \
    -- relu --input x=64x64 --pass fwd --warmup 0.001 --min-time 0.005 --runs 5 >"$tmp/ci.out" 2>&1 ||
    fail "opperf-ci.sh --against the same build: $(tail -5 "$tmp/ci.out")"
  grep -q 'round 2/2: cur' "$tmp/ci.out" || fail "rounds not alternated: $(cat "$tmp/ci.out")"
  [ -f "$tmp/ci/base-2.json" ] && [ -f "$tmp/ci/cur-1.json" ] || fail "round reports missing"
  grep -q 'no significant time regression' "$tmp/ci.out" || fail "no verdict line: $(tail -3 "$tmp/ci.out")"
fi
exit $((fails > 0))

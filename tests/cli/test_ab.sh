#!/usr/bin/env bash
# test_ab.sh: paired A/B runs (`run --impl A,B --interleave`): the usage errors, the JSON ab
# object on A's records (rounds, ratio inside its interval, the round ratios), both sides'
# merged rounds, and the summary after the report.
source "$(dirname "$0")/lib.sh"
q=(--warmup 0.001 --min-time 0.005 --sample-time 0.0005 --runs 5 --threads 1)
expect 2 "--interleave needs --impl A,B" -- run bias_gelu --interleave "${q[@]}"
expect 2 "--interleave needs --impl A,B" -- run bias_gelu --impl native --interleave "${q[@]}"
expect 2 "must be two different implementations" -- run bias_gelu --impl native,native --interleave "${q[@]}"
expect 2 "drop --isolate" -- run bias_gelu --impl native,unfused --interleave --isolate "${q[@]}"
"$OPPERF" run bias_gelu --input x=32x32 --input bias=32 --pass fwd --impl unfused,native --interleave \
  --repetitions 4 "${q[@]}" --format table,json="$tmp/ab.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "interleaved run failed: $(cat "$tmp/err")"
grep -q '^paired A/B (4 interleaved rounds per case; ratio > 1: unfused slower)' "$tmp/out" || fail "no A/B summary: $(cat "$tmp/out")"
grep -q 'bias_gelu .*: unfused/native [0-9.]* \[' "$tmp/out" || fail "no A/B line: $(cat "$tmp/out")"
python3 - "$tmp/ab.json" <<'PY' || fail "A/B JSON"
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
assert [r["impl"] for r in rs] == ["unfused", "native"], [r["impl"] for r in rs]
a, b = rs
ab = a["ab"]
assert ab["vs"] == "native" and ab["rounds"] == 4 and len(ab["round_ratios"]) == 4, ab
lo, hi = ab["ci95"]
assert 0 < lo <= ab["ratio"] <= hi, ab
assert a["time"]["repetitions"] == 4 and b["time"]["repetitions"] == 4
assert "ab" not in b
PY
exit $((fails > 0))

#!/usr/bin/env bash
# test_topdown.sh: top-down from the CLI without a PMU (issue 15): `events --explain topdown
# --pmu MODEL` prints the events, their libpfm4 encodings and the formulas of any model of the
# table; a bad model exits 2 with one line listing the supported ones; a run with the topdown
# preset carries a "topdown" object per record in JSON (absent with its reason here, never a
# number that was not counted) and td_* CSV columns, and a run without it keeps the CSV header.
. "$(dirname "$0")/lib.sh"

# --- --explain: any model, this machine or not -------------------------------------------------
# libpfm4 carries only its own architecture's tables: x86 encodings are checked in x86 builds
# (an arm64 build under qemu-user checks the formulas and names only).
x86=0
readelf -h "${OPPERF_TARGET:-$OPPERF}" 2>/dev/null | grep -q 'Machine:.*X86-64' && x86=1
"$OPPERF" events --explain topdown --pmu skx >"$tmp/skx" 2>"$tmp/err" || fail "explain skx exited $?: $(cat "$tmp/err")"
wants=("top-down on skx (Intel Skylake-SP)" "slots per cycle: 4"
  "bad = (UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS + 4 * INT_MISC.RECOVERY_CYCLES) / slots"
  "source: Yasin" "verdict: a verdict is given when the largest level-1 bucket holds at least 50%")
[ $x86 -eq 1 ] && wants+=("skx::UOPS_ISSUED:ANY" "4:0x10e" "skx::INT_MISC:RECOVERY_CYCLES" "4:0x10d")
for want in "${wants[@]}"; do
  grep -qF -- "$want" "$tmp/skx" || fail "explain skx lacks '$want': $(cat "$tmp/skx")"
done
[ "$(grep -c '^  1 ' "$tmp/skx")" -eq 5 ] || fail "explain skx: not 5 level-1 events: $(cat "$tmp/skx")"
"$OPPERF" events --explain topdown --pmu icl >"$tmp/icl" 2>&1 || fail "explain icl exited $?"
[ $x86 -eq 0 ] || grep -qF "4:0x500019c" "$tmp/icl" ||
  fail "explain icl: no level-2 CYCLES_0_UOPS_DELIV (cmask 5): $(cat "$tmp/icl")"
[ "$(grep -c '^  2 ' "$tmp/icl")" -eq 3 ] || fail "explain icl: not 3 level-2 events"
"$OPPERF" events --explain topdown --pmu amd64_fam1ah_zen5 >"$tmp/z5" 2>&1 || fail "explain zen5 exited $?"
grep -qF "de_no_dispatch_per_slot.backend_stalls" "$tmp/z5" && grep -qF "slots per cycle: 8" "$tmp/z5" &&
  { [ $x86 -eq 0 ] || grep -qF "4:0x100001ea0" "$tmp/z5"; } || fail "explain zen5: $(cat "$tmp/z5")"
"$OPPERF" events --explain topdown --pmu arm_v1 >"$tmp/v1" 2>&1 || fail "explain arm_v1 exited $?"
grep -qF "raw r3e" "$tmp/v1" || grep -qF "arm_v1::STALL_SLOT_FRONTEND" "$tmp/v1" || fail "explain arm_v1: $(cat "$tmp/v1")"
"$OPPERF" events --explain topdown >"$tmp/here" 2>&1 || fail "explain (this machine) exited $?"

expect 2 "no top-down model 'no_such_cpu' (supported: hsw, hsw_ep" -- events --explain topdown --pmu no_such_cpu
expect 2 "amd64_fam1ah_zen5, arm_v1" -- events --explain topdown --pmu arm_n1
expect 2 "only 'topdown' can be explained" -- events --explain cache
expect 2 "--pmu goes with --explain topdown" -- events --pmu skx
expect 2 "td:ret|td:bad|td:fe|td:be" -- sweep abs --plot-metric td:xx

# --- a run with the preset: JSON topdown object, CSV columns ---------------------------------
run=(run abs --dtype float32 --pass fwd --input x=256 "${quick[@]}")
"$OPPERF" "${run[@]}" --events topdown,task-clock --format json -o "$tmp/td.json" 2>"$tmp/err" ||
  fail "run --events topdown: $(cat "$tmp/err")"
/usr/bin/python3 - "$tmp/td.json" <<'PY' || fail "topdown JSON checks"
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["results"]
assert rs, "no results"
for r in rs:
    t = r.get("topdown")
    assert t is not None, "no topdown object"
    if t["available"]:
        l1 = t["level1"]
        assert set(l1) == {"retiring", "bad_speculation", "frontend_bound", "backend_bound"}, l1
        assert t["model"] and t["source"] and t["formula"], t
    else:
        # never a number that was not counted: no level1 at all, a reason instead
        assert "level1" not in t and t["reason"], t
PY
"$OPPERF" "${run[@]}" --events topdown --format csv -o "$tmp/td.csv" 2>"$tmp/err" || fail "csv: $(cat "$tmp/err")"
head -1 "$tmp/td.csv" | grep -q ",td_retiring,td_bad_speculation,td_frontend_bound,td_backend_bound,td_verdict" ||
  fail "csv: no td_* columns: $(head -1 "$tmp/td.csv")"
"$OPPERF" "${run[@]}" --events task-clock --format csv -o "$tmp/plain.csv" 2>"$tmp/err" || fail "csv: $(cat "$tmp/err")"
head -1 "$tmp/plain.csv" | grep -q "td_" && fail "csv without topdown has td_* columns"
"$OPPERF" "${run[@]}" --events task-clock --format json -o "$tmp/plain.json" 2>/dev/null
grep -q '"topdown"' "$tmp/plain.json" && fail "json without the topdown preset has a topdown object"
# the table: with a model here, the header names it and where it comes from
"$OPPERF" "${run[@]}" --events topdown >"$tmp/td.txt" 2>"$tmp/err" || fail "table: $(cat "$tmp/err")"
if grep -q "detected here" "$tmp/here"; then
  grep -qF "top-down (td:* = % of slots)" "$tmp/td.txt" || fail "table: no top-down header: $(head -20 "$tmp/td.txt")"
fi

[ "$fails" -eq 0 ] || exit 1
echo "ok"

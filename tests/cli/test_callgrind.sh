#!/usr/bin/env bash
# test_callgrind.sh: `opperf run --backend callgrind` end to end under the real valgrind:
# identical simulated counts in two runs, L1 misses close to the exact line count, threads
# counted, labels ("simulated") in every format, clean errors, no temporary files left behind.
# Exit 77 (skipped) in a sanitizer build (ASan and valgrind exclude each other), without valgrind,
# or for a cross build run under an emulator (OPPERF_EMULATOR).
set -u
OPPERF=${OPPERF:-./build/opperf}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export TMPDIR="$tmp/vgtmp" # the backend's temporary directory goes here: checked to be empty
mkdir -p "$TMPDIR"
sum=(run sum --input x=1024x1024 --param axis=all --pass fwd --backend callgrind)

# --- clean refusals (no valgrind needed) -------------------------------------------------
# expect CODE NEEDLE -- args...: exit status CODE, stderr is one line containing NEEDLE.
expect() {
  local code=$1 needle=$2
  shift 3
  "$OPPERF" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$code" ] || { fail "opperf $* exited $rc, expected $code: $(cat "$tmp/err")"; return; }
  grep -qF -- "$needle" "$tmp/err" || fail "opperf $*: stderr lacks '$needle': $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "opperf $*: expected a one-line message, got: $(cat "$tmp/err")"
}
expect 2 "unknown backend 'cachegrind' (use native or callgrind)" -- run sum --backend cachegrind
expect 2 "unknown operator 'smu'" -- run smu --backend callgrind
expect 2 "--events cannot be combined with --backend callgrind" -- "${sum[@]}" --events core
expect 2 "--isolate and --timeout cannot be combined with --backend callgrind" -- "${sum[@]}" --isolate
expect 2 "--isolate and --timeout cannot be combined with --backend callgrind" -- "${sum[@]}" --timeout 60
expect 2 "--repetitions cannot be combined with --backend callgrind" -- "${sum[@]}" --repetitions 2

if [ "${OPPERF_SANITIZE:-OFF}" = "ON" ] || ldd "$OPPERF" 2>/dev/null | grep -q libasan; then
  expect 2 "does not work in a sanitizer build" -- "${sum[@]}" --format json -o "$tmp/no.json"
  [ ! -e "$tmp/no.json" ] || fail "a refused run wrote its output file"
  echo "sanitizer build: the runs under valgrind are skipped"
  [ "$fails" -eq 0 ] || exit 1
  exit 77
fi

env PATH=/nonexistent "$OPPERF" "${sum[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "without valgrind: exit $rc, expected 2"
[ "$(cat "$tmp/err")" = "opperf: --backend callgrind needs valgrind (apt-get install valgrind)" ] ||
  fail "missing valgrind message: $(cat "$tmp/err")"

# A valgrind that cannot start the program, and one that dies: clear messages, no report.
mkdir -p "$tmp/fakebin"
cat >"$tmp/fakebin/valgrind" <<'SH'
#!/bin/sh
for a; do case $a in --log-file=*) log=${a#--log-file=} ;; esac; done
echo "==1== valgrind: fake failure for the test" >"$log"
[ -n "${FAKE_SIGNAL:-}" ] && kill -s "$FAKE_SIGNAL" $$
exit 1
SH
chmod +x "$tmp/fakebin/valgrind"
PATH="$tmp/fakebin:$PATH" "$OPPERF" "${sum[@]}" --format json -o "$tmp/f.json" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "fake valgrind failing to start: exit $rc"
grep -q "valgrind could not run opperf" "$tmp/err" || fail "fake valgrind: $(cat "$tmp/err")"
grep -q "fake failure for the test" "$tmp/err" || fail "fake valgrind: log excerpt missing: $(cat "$tmp/err")"
FAKE_SIGNAL=SEGV PATH="$tmp/fakebin:$PATH" "$OPPERF" "${sum[@]}" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "fake valgrind dying: exit $rc"
grep -q "died with signal 11" "$tmp/err" || fail "fake valgrind dying: $(cat "$tmp/err")"
FAKE_SIGNAL=ILL PATH="$tmp/fakebin:$PATH" "$OPPERF" "${sum[@]}" 2>"$tmp/err"
hint="3.19 has no AVX-512" # the x86 hint; a cross build's target (arm64) has the generic one
[ -z "${OPPERF_EMULATOR:-}" ] || hint="valgrind cannot decode some instruction"
grep -q "$hint" "$tmp/err" || fail "SIGILL under valgrind: no hint: $(cat "$tmp/err")"
[ ! -e "$tmp/f.json" ] || fail "a failed callgrind run wrote its output file"
rm -rf "$TMPDIR"/opperf-cg.* # the failure paths keep the log for the user

if [ -n "${OPPERF_EMULATOR:-}" ]; then
  # A cross build run under qemu-user: this host's valgrind is for the host's architecture and
  # cannot run the target's binary (valgrind under the emulator is no option either).
  echo "cross build under $OPPERF_EMULATOR: the runs under valgrind are skipped"
  [ "$fails" -eq 0 ] || exit 1
  exit 77
fi
if ! command -v valgrind >/dev/null; then
  echo "valgrind not installed: the runs under valgrind are skipped"
  [ "$fails" -eq 0 ] || exit 1
  exit 77
fi

# --- two runs of sum: identical counts; D1 read misses close to the line count ------------
for i in 1 2; do
  "$OPPERF" "${sum[@]}" --threads 1 --format json -o "$tmp/sum$i.json" 2>"$tmp/err" ||
    fail "sum run $i failed: $(cat "$tmp/err")"
done
python3 - "$tmp/sum1.json" "$tmp/sum2.json" <<'PY' || fail "sum: determinism / L1 misses / labels"
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
vals = []
for d in runs:
    assert d["context"]["settings"]["backend"] == "callgrind"
    ctxc = {c["name"]: c for c in d["context"]["perf"]["counters"]}
    assert ctxc["sim:Ir"]["simulated"] is True
    assert "D1=32768,8,64" in ctxc["sim:D1mr"]["reason"] and "LL=8388608,16,64" in ctxc["sim:D1mr"]["reason"], ctxc
    (r,) = d["results"]
    assert r["status"] == "ok" and r["simulated"] is True, r
    assert r["time"]["samples"] == 3 and r["time"]["calls_per_sample"] == 1, r["time"]
    assert "not a real time" in r["time"]["note"]
    assert "gflops" not in r["metrics"] and "gbps" not in r["metrics"], r["metrics"]
    c = {e["name"]: e for e in r["counters"]}
    for n in ("Ir", "D1mr", "D1mw", "DLmr", "DLmw", "I1mr", "ILmr", "Bc", "Bcm", "Bi", "Bim"):
        e = c["sim:" + n]
        assert e["simulated"] is True and e["status"] == "counted" and "per_call" in e, e
    vals.append({k: v["per_call"] for k, v in c.items()})
a, b = vals
assert a == b, ("two runs differ", a, b)
# 1 Mi floats = 4 MiB = 65,536 lines of 64 B through a 32 KiB L1: one read miss per line
# (no prefetcher is simulated); a few hundred more come from the reduction's own state.
d1 = a["sim:D1mr"]
assert abs(d1 - 65536) / 65536 < 0.02, d1
# warm: the 4 MiB input stays in the 8 MiB simulated LL after the cache-warming sample
assert a["sim:DLmr"] < 0.01 * 65536, a["sim:DLmr"]
assert a["sim:Ir"] > 1048576 / 16, a["sim:Ir"]   # at least one instruction per 16 floats
print("sum: sim:Ir %.0f, sim:D1mr %.0f per call in both runs" % (a["sim:Ir"], d1))
PY

# --- every pass of a case: fwd, bwd (after its own forward) and both, of two operators -------
# Each pass's dumps are read before the next pass runs: reading them only after all the passes
# of a case gave every bwd and both "cannot attach 0 callgrind dumps to N samples".
"$OPPERF" run sum add --shapes small --pass fwd,bwd,both --backend callgrind --threads 1 --runs 2 \
  --format json -o "$tmp/passes.json" 2>"$tmp/err" || fail "fwd,bwd,both under callgrind: $(cat "$tmp/err")"
python3 - "$tmp/passes.json" <<'PY' || fail "fwd,bwd,both: every pass simulated"
import json, sys
res = json.load(open(sys.argv[1]))["results"]
seen = set()
for r in res:
    assert r["status"] == "ok" and r["simulated"] is True, (r["op"], r["pass"], r.get("message"))
    assert r["time"]["samples"] == 2, (r["op"], r["pass"], r["time"])
    c = {e["name"]: e for e in r["counters"]}
    assert c["sim:Ir"]["status"] == "counted" and c["sim:Ir"]["per_call"] > 0, (r["op"], r["pass"], c["sim:Ir"])
    seen.add((r["op"], r["pass"]))
for op in ("sum", "add"):
    for p in ("fwd", "bwd", "both"):
        assert (op, p) in seen, (op, p, sorted(seen))
# A training step does at least the work of its backward.
ir = {(r["op"], r["pass"], r["spec"]): {e["name"]: e.get("per_call") for e in r["counters"]}["sim:Ir"] for r in res}
for (op, p, spec), v in ir.items():
    if p == "both":
        assert v >= ir[(op, "bwd", spec)], (op, spec, v, ir[(op, "bwd", spec)])
print("fwd,bwd,both: %d results ok under callgrind" % len(res))
PY

# --- relu: one read and one write miss per line; table, CSV and Markdown labels -------------
"$OPPERF" run relu --input x=1024x1024 --pass fwd --backend callgrind --threads 1 --runs 2 \
  --format "table,json=$tmp/relu.json,csv=$tmp/relu.csv,md=$tmp/relu.md" >"$tmp/table" 2>"$tmp/err" ||
  fail "relu run failed: $(cat "$tmp/err")"
python3 - "$tmp/relu.json" <<'PY' || fail "relu: L1 read/write misses"
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
c = {e["name"]: e.get("per_call") for e in r["counters"]}
assert r["time"]["samples"] == 2, r["time"]   # --runs is respected
for k in ("sim:D1mr", "sim:D1mw"):
    assert abs(c[k] - 65536) / 65536 < 0.02, (k, c[k])
PY
grep -q 'sim:Ir/call' "$tmp/table" || fail "table lacks the sim:Ir column"
grep -q 'simulated' "$tmp/table" || fail "table lacks the 'simulated' note"
grep -q 'ok, simulated' "$tmp/table" || fail "table rows are not marked simulated"
! grep -qw 'median' "$tmp/table" || fail "table shows valgrind times as if real"
head -1 "$tmp/relu.csv" | grep -q 'sim:D1mr_per_call' || fail "CSV lacks sim:D1mr_per_call"
grep -q 'times were measured under valgrind' "$tmp/relu.csv" || fail "CSV rows lack the note"
grep -q 'sim:Ir/call' "$tmp/relu.md" || fail "Markdown lacks the sim:Ir column"

# --- threads: both threads are counted -----------------------------------------------------
# With 2 threads the work is split, not halved: the total must stay close to the 1-thread one.
"$OPPERF" "${sum[@]}" --threads 2 --format json -o "$tmp/sum_t2a.json" 2>"$tmp/err" || fail "2 threads: $(cat "$tmp/err")"
OPPERF_CALLGRIND_KEEP=1 "$OPPERF" "${sum[@]}" --threads 2 --format json -o "$tmp/sum_t2b.json" 2>"$tmp/keep" ||
  fail "2 threads (kept): $(cat "$tmp/keep")"
python3 - "$tmp/sum1.json" "$tmp/sum_t2a.json" "$tmp/sum_t2b.json" <<'PY' || fail "threads: counts"
import json, sys
ir = [{e["name"]: e.get("per_call") for e in json.load(open(p))["results"][0]["counters"]}["sim:Ir"]
      for p in sys.argv[1:]]
one, two_a, two_b = ir
assert 0.95 < two_a / one < 1.3, ("2 threads vs 1", two_a, one)
# Threads interleave under valgrind's scheduler: libgomp's barrier paths differ by a few
# instructions from run to run, nothing more.
assert abs(two_a - two_b) / two_a < 1e-3, (two_a, two_b)
print("threads: sim:Ir 1 thread %.0f, 2 threads %.0f and %.0f" % (one, two_a, two_b))
PY
# The kept dumps show where the work ran: with 2 threads only about half of it is under the
# main thread's opf_measure, the rest is the OpenMP worker's.
kept=$(sed -n 's/^opperf: callgrind dumps kept in \([^ ]*\) .*/\1/p' "$tmp/keep")
if [ -n "$kept" ] && command -v callgrind_annotate >/dev/null; then
  # case 0 is the harness-overhead calibration, case 1 the sum: its last counted sample
  last=$(grep -l "Trigger: Client Request: opperf-r1-s3\$" "$kept"/cg.out.*)
  callgrind_annotate --inclusive=yes "$last" >"$tmp/annot" 2>/dev/null
  python3 - "$tmp/annot" <<'PY' || fail "threads: the worker thread's share is missing"
import re, sys
total = main = None
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d,]+)", line)
    if not m: continue
    v = int(m.group(1).replace(",", ""))
    if "PROGRAM TOTALS" in line: total = v
    elif re.search(r":opf_measure\b", line) and main is None: main = v
assert total and main, (total, main)
share = main / total
assert 0.3 < share < 0.75, share
print("threads: main thread's share of sim:Ir %.0f%%" % (100 * share))
PY
  rm -rf "$kept"
else
  fail "OPPERF_CALLGRIND_KEEP did not report the kept dumps: $(cat "$tmp/keep")"
fi

# --- OpenBLAS under valgrind: DYNAMIC_ARCH must pick a core without AVX-512 by itself ----------
env -u OPENBLAS_CORETYPE "$OPPERF" run dot --input a=64x64 --input b=64x64 --pass fwd --backend callgrind \
  --threads 1 --format json -o "$tmp/dot.json" 2>"$tmp/err" || fail "dot under callgrind: $(cat "$tmp/err")"
python3 - "$tmp/dot.json" <<'PY' || fail "dot: OpenBLAS core under valgrind"
import json, sys
d = json.load(open(sys.argv[1]))
core = d["context"]["blas"]["core"]
assert core.lower() not in ("skylakex", "cooperlake", "sapphirerapids"), core
(r,) = d["results"]
assert r["status"] == "ok" and r["simulated"] is True, r
print("dot: OpenBLAS core under valgrind: %s" % core)
PY
# A core forced to AVX-512 would die under valgrind: replaced, with a note.
OPENBLAS_CORETYPE=SkylakeX "$OPPERF" run dot --input a=16x16 --input b=16x16 --pass fwd --backend callgrind \
  --threads 1 --runs 1 --format json -o "$tmp/dot2.json" 2>"$tmp/err" || fail "dot with SkylakeX: $(cat "$tmp/err")"
grep -q "OPENBLAS_CORETYPE=SkylakeX uses AVX-512" "$tmp/err" || fail "no note for an AVX-512 OpenBLAS core: $(cat "$tmp/err")"

[ -z "$(ls -A "$TMPDIR")" ] || fail "temporary files left behind: $(ls -A "$TMPDIR")"
[ "$fails" -eq 0 ] && echo "all callgrind CLI tests passed"
[ "$fails" -eq 0 ]

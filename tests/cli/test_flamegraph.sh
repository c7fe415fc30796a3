#!/usr/bin/env bash
# test_flamegraph.sh: `opperf flamegraph` on committed perf script text (SVG parsed as XML, frame
# counts, folded output, bad input: exit 2 and no file), --perf-control errors, Ctrl-C during a
# sweep (partial report, exit 130), and scripts/opperf-flamegraph end to end when perf may
# sample here (else its one-line refusal, also with perf missing). No timing checks.
set -u
source "$(dirname "$0")/lib.sh" # $OPPERF, $tmp, fail
SRC=${OPPERF_SOURCE_DIR:-.}
fx="$SRC/tests/fixtures/perf"

"$OPPERF" -h | grep -q '^  flamegraph ' || fail "opperf -h does not list flamegraph"
"$OPPERF" flamegraph -h | grep -q -- '--fold-out' || fail "flamegraph -h"

# --- perf script -> SVG + folded; folded -> the same SVG -----------------------------------
"$OPPERF" flamegraph -o "$tmp/a.svg" --fold-out "$tmp/a.folded" --title 'relu <test>' "$fx/relu.perf-script" \
  2>"$tmp/err" || fail "flamegraph exited $?: $(cat "$tmp/err")"
"$OPPERF" flamegraph --folded -o "$tmp/b.svg" --title 'relu <test>' "$tmp/a.folded" || fail "flamegraph --folded"
cmp -s "$tmp/a.svg" "$tmp/b.svg" || fail "the SVG from perf script and from its folded stacks differ"
"$OPPERF" flamegraph <"$fx/handmade.perf-script" >"$tmp/c.svg" 2>"$tmp/err" || fail "flamegraph from stdin"
grep -q "1 samples had no call stack" "$tmp/err" || fail "the stack-less sample is not reported: $(cat "$tmp/err")"
python3 - "$tmp/a.svg" "$tmp/a.folded" "$tmp/c.svg" <<'PY' || fail "flamegraph SVG"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg"
total = sum(int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[2]))
frames = root.findall(".//" + ns + "g[@class='f']")
names = [g.get("data-name") for g in frames]
assert names[0] == "all", names[:3]
title = frames[0].find(ns + "title").text
assert title == "all (%d samples, 100.00%%)" % total, title
# the kernel of the recorded operator is drawn, by name, with its share
assert any(n.startswith("relu") for n in names), names
assert root.find(".//" + ns + "script") is not None             # interactive: zoom and search
assert "relu <test>" in "".join(t.text or "" for t in root.iter(ns + "text"))
# every frame's width is its samples' share of the root's
w0 = float(frames[0].find(ns + "rect").get("width"))
for g in frames:
    n = int(g.find(ns + "title").text.rsplit("(", 1)[1].split()[0])
    w = float(g.find(ns + "rect").get("width"))
    assert abs(w - w0 * n / total) < 0.02, (g.get("data-name"), w, n)
c = ET.parse(sys.argv[3]).getroot()
assert len(c.findall(".//" + ns + "g[@class='f']")) == 13, len(c.findall(".//" + ns + "g[@class='f']"))
PY

# --- bad input: exit 2, one line, no file ----------------------------------------------------
printf 'not perf output\n' >"$tmp/bad.txt"
"$OPPERF" flamegraph -o "$tmp/bad.svg" "$tmp/bad.txt" 2>"$tmp/err"
[ $? -eq 2 ] || fail "malformed perf script accepted"
[ -e "$tmp/bad.svg" ] && fail "a malformed input left an SVG"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one line: $(cat "$tmp/err")"
printf 'a;b 3\na;c x\n' >"$tmp/bad.folded"
"$OPPERF" flamegraph --folded -o "$tmp/bad.svg" --fold-out "$tmp/bad2.folded" "$tmp/bad.folded" 2>"$tmp/err"
[ $? -eq 2 ] || fail "malformed folded stacks accepted"
grep -q "line 2" "$tmp/err" || fail "no line number: $(cat "$tmp/err")"
[ -e "$tmp/bad.svg" ] || [ -e "$tmp/bad2.folded" ] && fail "malformed folded stacks left a file"
"$OPPERF" flamegraph "$tmp/missing" 2>/dev/null
[ $? -eq 2 ] || fail "missing input file accepted"
"$OPPERF" flamegraph --width 10 "$fx/relu.perf-script" >/dev/null 2>&1
[ $? -eq 2 ] || fail "--width 10 accepted"
: | "$OPPERF" flamegraph >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "empty input accepted"

# --- --perf-control: malformed, or no perf behind the fifo: exit 2, nothing measured ---------
for spec in bogus "fifo:" "fd:x,y" "fd:900,901" "fifo:$tmp/nofifo,$tmp/noack"; do
  "$OPPERF" run relu --shapes small --perf-control "$spec" -o "$tmp/pc.json" --format json >/dev/null 2>"$tmp/err"
  [ $? -eq 2 ] || fail "--perf-control '$spec' accepted"
  [ -e "$tmp/pc.json" ] && fail "--perf-control '$spec' wrote a report"
done
mkfifo "$tmp/lonely"
OPPERF_PERF_CONTROL="fifo:$tmp/lonely" "$OPPERF" sweep relu --shapes 64 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "sweep with a control fifo nobody reads accepted"
grep -q "no reader" "$tmp/err" || fail "no 'no reader' message: $(cat "$tmp/err")"

# --- Ctrl-C during a sweep: the shapes measured so far, marked interrupted, exit 130 ----------
"$OPPERF" sweep relu --vary x.dim0=1024:1048576:x2 --input x=1024 --min-time 0.3 --max-time 0.4 --warmup 0.01 \
  -v --format json -o "$tmp/int.json" --plot "$tmp/int.svg" >/dev/null 2>"$tmp/int.err" &
pid=$!
for _ in $(seq 1 300); do grep -q '^opperf_verbose' "$tmp/int.err" 2>/dev/null && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "interrupted sweep exited $rc, expected 130: $(cat "$tmp/int.err")"
grep -q "interrupted: .* sweep points done" "$tmp/int.err" || fail "no interruption line: $(cat "$tmp/int.err")"
python3 - "$tmp/int.json" "$tmp/int.svg" <<'PY' || fail "interrupted sweep reports"
import json, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
assert d["context"].get("interrupted") is True, d["context"]
assert 1 <= len(d["points"]) < 11, len(d["points"])
ET.parse(sys.argv[2])
PY

# --- scripts/opperf-flamegraph ------------------------------------------------------------
script="$SRC/scripts/opperf-flamegraph"
PERF=/nonexistent/perf OPPERF="$OPPERF" "$script" relu >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "opperf-flamegraph without perf did not exit 2"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "perf is not installed" "$tmp/err" || fail "missing perf: $(cat "$tmp/err")"
OPPERF="$OPPERF" "$script" --freq abc relu >/dev/null 2>&1
[ $? -eq 2 ] || fail "opperf-flamegraph --freq abc accepted"
if [ "${OPPERF_SANITIZE:-OFF}" = ON ]; then
  echo "skipping the perf recording in a sanitizer build"
elif [ -n "${OPPERF_EMULATOR:-}" ]; then
  # a cross build under qemu-user: the host's perf would sample the emulator, not opperf's code
  echo "skipping the perf recording of a cross build run under $OPPERF_EMULATOR"
elif ! command -v perf >/dev/null 2>&1 || ! perf record -q -e cpu-clock -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
  OPPERF="$OPPERF" "$script" relu >/dev/null 2>"$tmp/err"
  [ $? -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "perf unavailable: not one line and exit 2: $(cat "$tmp/err")"
  echo "perf cannot sample here: end-to-end recording skipped ($(cat "$tmp/err"))"
else
  OPPERF="$OPPERF" "$script" -o "$tmp/r.svg" --folded "$tmp/r.folded" relu --input x=65536 --threads 1 \
    --min-time 0.1 --max-time 0.2 >/dev/null 2>"$tmp/err" || fail "opperf-flamegraph relu: $(cat "$tmp/err")"
  OPPERF="$OPPERF" "$script" relu --input x=1x2x3x >/dev/null 2>"$tmp/err2"
  [ $? -eq 2 ] || fail "opperf-flamegraph with a bad shape did not exit 2"
  python3 - "$tmp/r.svg" "$tmp/r.folded" <<'PY' || fail "opperf-flamegraph output"
import sys, xml.etree.ElementTree as ET
ET.parse(sys.argv[1])
stacks = [l.rsplit(" ", 1) for l in open(sys.argv[2])]
total = sum(int(c) for _, c in stacks)
in_op = sum(int(c) for s, c in stacks if "relu" in s)
assert total > 20, total
# perf was enabled around the measured samples only: the operator dominates, and nothing
# from input generation or report writing was recorded
assert in_op > 0.5 * total, (in_op, total)
# (a rare sample of set-up code was seen once in a full parallel test run and never reproduced
# alone or under load: up to 2% is tolerated and printed, so a regression of the control,
# which records whole phases, still fails)
bad = [(s[-160:], int(c)) for s, c in stacks if "fill" in s or "emitter" in s or "opf_case_init" in s]
if bad:
    print("samples outside the measured calls:", bad[:5], file=sys.stderr)
assert sum(c for _, c in bad) <= 0.02 * total, (sum(c for _, c in bad), total)
PY
fi

[ "$fails" -eq 0 ] && echo "test_flamegraph: all passed"
exit "$fails"

#!/usr/bin/env bash
# test_roofline.sh: the cache-aware roofline from the CLI (issue 15 item 6): `opperf machine`
# writes the bandwidth of every level (L1.. DRAM, read and triad, 1 and all threads) in its
# cache file and JSON; a cache file of the older DRAM-only schema is ignored with a message and
# measured again; `run` places a small case in L1 and a large one (or a cold-cache one) in DRAM,
# in JSON (roofline_level, time, ceiling), CSV (roofline_level) and the table (bound); `sweep
# --plot-metric roofline` draws one ceiling per level, and exits 2 without machine figures.
. "$(dirname "$0")/lib.sh"

export OPPERF_MACHINE_FILE="$tmp/machine.json"

# --- opperf machine: the levels, in the file and in --format json ------------------------------
"$OPPERF" machine --time 0.02 --format json >"$tmp/m.json" 2>"$tmp/m.err" || fail "machine exited $?: $(cat "$tmp/m.err")"
python3 - "$tmp/m.json" "$OPPERF_MACHINE_FILE" <<'PY' || fail "machine: levels"
import json, sys
out, saved = (json.load(open(p)) for p in sys.argv[1:3])
assert saved["schema_version"] == 2, saved.get("schema_version")
for doc in (out, saved):
    lv = doc["levels"]
    names = [l["name"] for l in lv]
    assert names[-1] == "DRAM" and names[:-1] == ["L%d" % (i + 1) for i in range(len(names) - 1)], names
    for l in lv:
        for k in ("read", "triad", "working_set_bytes"):
            assert len(l[k]) == 2 and all(v > 0 for v in l[k]), (l["name"], k, l[k])
        if l["name"] != "DRAM":
            assert l["size_bytes"] > 0 and l["shared_by_cpus"] >= 1, l
            assert max(l["working_set_bytes"]) <= l["size_bytes"] / 2, l
    assert lv[-1]["triad"] == doc["bandwidth"], (lv[-1]["triad"], doc["bandwidth"])
print("levels:", " ".join("%s %.0f/%.0f GB/s" % (l["name"], l["read"][0] / 1e9, l["triad"][0] / 1e9) for l in out["levels"]))
PY
"$OPPERF" machine >"$tmp/m.txt" 2>&1 || fail "machine (cached) exited $?"
grep -q "^L1 (.*KiB) read" "$tmp/m.txt" && grep -q "^DRAM triad" "$tmp/m.txt" || fail "machine table: $(cat "$tmp/m.txt")"
grep -q "(cached)" "$tmp/m.txt" || fail "machine table: not read from the cache: $(cat "$tmp/m.txt")"

# --- an older (schema 1, DRAM only) file: refused by run, measured again by machine -----------
cp "$OPPERF_MACHINE_FILE" "$tmp/v2.json"
python3 - "$OPPERF_MACHINE_FILE" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["schema_version"] = 1
del d["levels"]
json.dump(d, open(sys.argv[1], "w"))
PY
"$OPPERF" run relu --input x=64x64 --pass fwd "${quick[@]}" >"$tmp/old.txt" 2>&1 || fail "run with an old file exited $?"
grep -q "no roofline %" "$tmp/old.txt" || fail "run with an old file: roofline shown: $(head -5 "$tmp/old.txt")"
"$OPPERF" machine --time 0.02 >"$tmp/m2.txt" 2>"$tmp/m2.err" || fail "machine over an old file exited $?"
grep -q "ignoring the cached figures: .*older opperf (schema 1" "$tmp/m2.err" || fail "machine: no message about the old file: $(cat "$tmp/m2.err")"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["schema_version"] == 2' "$OPPERF_MACHINE_FILE" ||
  fail "machine: the old file was not replaced"
cp "$tmp/v2.json" "$OPPERF_MACHINE_FILE"

# --- run: level per case in JSON, CSV and the table -------------------------------------------
# relu over 64x64 float32 (32 KiB with its output: L1 of any CPU this runs on has that much?
# not all: the expected level is computed from the machine file) and over 4096x4096 (128 MiB).
"$OPPERF" run relu --input x=64x64 --pass fwd --threads 1 "${quick[@]}" --format json -o "$tmp/small.json" 2>"$tmp/run.err" ||
  fail "run exited $?: $(cat "$tmp/run.err")"
"$OPPERF" run relu --input x=4096x4096 --pass fwd --threads 1 "${quick[@]}" --format json -o "$tmp/big.json" 2>"$tmp/run.err" ||
  fail "run exited $?: $(cat "$tmp/run.err")"
"$OPPERF" run relu --input x=64x64 --pass fwd --threads 1 --cache cold "${quick[@]}" --format json -o "$tmp/cold.json" 2>"$tmp/cold.err" ||
  fail "run cold exited $?: $(cat "$tmp/cold.err")"
python3 - "$OPPERF_MACHINE_FILE" "$tmp/small.json" "$tmp/big.json" "$tmp/cold.json" <<'PY' || fail "run: roofline placement"
import json, sys
m = json.load(open(sys.argv[1]))
recs = [r for p in sys.argv[2:5] for r in json.load(open(p))["results"]]
assert len(recs) == 3, len(recs)
def expect(ws):   # the innermost level whose size holds the working set (1 thread)
    for l in m["levels"][:-1]:
        if ws <= l["size_bytes"]:
            return l
    return m["levels"][-1]
for r, cold in zip(recs, (False, False, True)):
    md = r["model"]
    ws = md["working_set_bytes"]
    lv = m["levels"][-1] if cold else expect(ws)
    assert md["roofline_memory_level"] == lv["name"], (r["inputs"] if "inputs" in r else "", ws, md, lv["name"])
    assert md["roofline_level"] in (lv["name"], "compute"), md
    assert md["roofline_ceiling_kernel"] == "triad", md          # relu writes half its working set
    # the run's JSON prints 15 significant digits, the machine file 17
    assert abs(md["roofline_ceiling_bytes_per_s"] / lv["triad"][0] - 1) < 1e-12, (md, lv)
    want = max(md["bytes_per_call"] / lv["triad"][0], md["flops_per_call"] / m["peak_flops"]["float32"][0])
    assert abs(md["roofline_time_s"] - want) <= 1e-9 * want, (md["roofline_time_s"], want)
    pct = r["metrics"]["roofline_pct"]
    assert abs(pct - 100 * want / r["time"]["median"]) <= 1e-6 * pct, (pct, want, r["time"]["median"])
assert recs[1]["model"]["roofline_memory_level"] == "DRAM"      # 128 MiB
assert recs[2]["model"]["roofline_memory_level"] == "DRAM"      # cold
print("placed:", [(r["model"]["working_set_bytes"], r["model"]["roofline_level"], round(r["metrics"]["roofline_pct"], 1)) for r in recs])
PY
"$OPPERF" run relu --input x=64x64 --pass fwd --threads 1 "${quick[@]}" --format csv -o "$tmp/run.csv" 2>/dev/null || fail "run csv exited $?"
python3 - "$tmp/run.csv" <<'PY' || fail "csv: roofline_level column"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and rows[0]["roofline_level"] in ("L1", "L2", "L3", "DRAM", "compute"), rows[0].get("roofline_level")
assert float(rows[0]["roofline_pct"]) > 0
PY
"$OPPERF" run relu --input x=64x64 --pass fwd --threads 1 "${quick[@]}" >"$tmp/run.txt" 2>&1 || fail "run table exited $?"
grep -q " bound " "$tmp/run.txt" && grep -q "roofline %: cache-aware" "$tmp/run.txt" || fail "table: no bound column or note: $(cat "$tmp/run.txt")"
# without a machine file: no level column in CSV
OPPERF_MACHINE_FILE="$tmp/none.json" "$OPPERF" run relu --input x=64x64 --pass fwd "${quick[@]}" --format csv -o "$tmp/none.csv" 2>/dev/null
head -1 "$tmp/none.csv" | grep -q roofline_level && fail "csv: a level column without machine figures"

# --- sweep: the roofline chart ----------------------------------------------------------------
"$OPPERF" sweep sum --vary x.dim0=16:4096:x16 --input x=16x1024 --pass fwd --threads 1 "${quick[@]}" \
  --plot "$tmp/roof.svg" --plot-metric roofline --format json -o "$tmp/sweep.json" 2>"$tmp/sw.err" || fail "sweep roofline exited $?: $(cat "$tmp/sw.err")"
grep -q 'class="roofs"' "$tmp/roof.svg" || fail "chart: no ceilings"
for name in $(python3 -c 'import json,sys; print(" ".join(l["name"] for l in json.load(open(sys.argv[1]))["levels"]))' "$OPPERF_MACHINE_FILE"); do
  grep -q ">$name [0-9]* GB/s<" "$tmp/roof.svg" || fail "chart: no $name ceiling label"
done
grep -q "float32 peak [0-9]* GFLOP/s (1 thread)" "$tmp/roof.svg" || fail "chart: no peak label"
grep -q '"roofline_level"' "$tmp/sweep.json" && grep -q '"roofline_pct"' "$tmp/sweep.json" || fail "sweep json: no roofline fields"
"$OPPERF" sweep sum --vary x.dim0=16:256:x16 --input x=16x1024 --pass fwd "${quick[@]}" --plot "$tmp/pct.svg" --plot-metric roofline-pct >/dev/null 2>&1 ||
  fail "sweep roofline-pct exited $?"
grep -q "% of the attainable" "$tmp/pct.svg" || fail "roofline-pct: no axis label"
OPPERF_MACHINE_FILE="$tmp/none.json" expect 2 "needs this machine's ceilings: run \`opperf machine\` first" -- \
  sweep sum --vary x.dim0=16:256:x16 --input x=16x1024 --pass fwd "${quick[@]}" --plot "$tmp/x.svg" --plot-metric roofline
[ -e "$tmp/x.svg" ] && fail "sweep without ceilings wrote a plot"
expect 2 "roofline or roofline-pct" -- sweep sum --plot-metric roofline-x

[ "$fails" -eq 0 ] || exit 1
echo "ok"

#!/usr/bin/env bash
# test_store.sh: the results store and shards through the real binary: `run --store` twice and
# `history` (runs, a trend, counters that did not count stored without a value), bad stores exit
# 2 before measuring, a writer killed with SIGKILL mid-run (OPPERF_STORE_TEST_STOP_AFTER) leaves
# the store intact, `history --changes` on imported reports with a +30% step, shard coverage of
# the default suite (--shard, GTEST_*, JOB_COMPLETION_INDEX: union = all, disjoint), shards
# writing into one store, and `merge` (joined, mismatches and overlaps refused with exit 2).
set -u
SRC=${OPPERF_SOURCE_DIR:-.}
. "$SRC/tests/cli/lib.sh"
db="$tmp/s.db"
q=(--shapes test --pass fwd --no-isolate "${quick[@]}")

# --- two runs, the run list and one case's trend -------------------------------------------
for i in 1 2; do
  "$OPPERF" run relu "${q[@]}" --events sw,cycles --store "$db" --format json -o "$tmp/r$i.json" \
    >/dev/null 2>"$tmp/err" || fail "run --store $i: $(cat "$tmp/err")"
done
"$OPPERF" history --store "$db" >"$tmp/runs" 2>"$tmp/err" || fail "history: $(cat "$tmp/err")"
grep -q '^2 runs in sqlite store' "$tmp/runs" || fail "history lists 2 runs: $(cat "$tmp/runs")"
"$OPPERF" history --store "$db" 'relu' >"$tmp/trend" 2>"$tmp/err" || fail "history relu: $(cat "$tmp/err")"
[ "$(grep -c ' ok' "$tmp/trend")" -ge 2 ] || fail "trend has the 2 runs: $(cat "$tmp/trend")"
grep -q '^relu native float32 fwd ' "$tmp/trend" || fail "trend names the case key: $(cat "$tmp/trend")"
# every counter stored with its status; one that did not count has no value (never 0)
python3 - "$db" "$tmp/r1.json" <<'PY' || fail "stored counters and samples"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rep = json.load(open(sys.argv[2]))
runs = db.execute("SELECT id, context FROM runs ORDER BY id").fetchall()
assert len(runs) == 2
assert json.loads(runs[0][1])["host"]["cpu_model"] == rep["context"]["host"]["cpu_model"]
rows = db.execute("SELECT c.name, c.status, c.reason, c.per_call FROM counters c JOIN records r"
                  " ON r.id = c.record_id WHERE r.run_id = ? ORDER BY r.id, c.pos", (runs[0][0],)).fetchall()
want = [(c["name"], c["status"], c.get("per_call")) for r in rep["results"] for c in r["counters"]]
assert [(n, s) for n, s, _, _ in rows] == [(n, s) for n, s, _ in want], (rows, want)
for (n, s, reason, v), (_, _, pv) in zip(rows, want):
    if s in ("counted", "scaled", "partial"):
        assert v is not None and abs(v - pv) <= 1e-9 * max(1, abs(pv)), (n, v, pv)
    else:
        assert v is None and reason, (n, s, reason, v)  # status and reason, no value
samples = db.execute("SELECT samples FROM records WHERE run_id = ? ORDER BY id", (runs[0][0],)).fetchall()
assert [json.loads(s[0]) for s in samples] == [r["time"]["raw"] for r in rep["results"]]
PY

# --- bad stores: exit 2 with one line, before anything is measured -------------------------
expect 2 "/nonexistent/dir/x.db" -- run relu "${q[@]}" --store /nonexistent/dir/x.db
printf 'not a database, just text that is long enough to be a header.........\n' >"$tmp/text.db"
expect 2 "text.db" -- run relu "${q[@]}" --store "$tmp/text.db"
expect 2 "no store" -- history --store "$tmp/absent.db"
expect 2 "needs --store" -- history
expect 2 "--shard" -- run relu "${q[@]}" --shard 3/3

# --- a writer killed in the middle of its transaction ---------------------------------------
mkdir "$tmp/killed"
TMPDIR="$tmp/killed" OPPERF_STORE_TEST_STOP_AFTER=1 "$OPPERF" run relu abs "${q[@]}" --store "$db" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" = T ] && break
  sleep 0.1
done
[ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" = T ] || fail "the writer did not stop mid-transaction"
kill -9 $pid
wait $pid 2>/dev/null
"$OPPERF" history --store "$db" --check >/dev/null 2>"$tmp/err" || fail "store damaged after kill -9: $(cat "$tmp/err")"
"$OPPERF" history --store "$db" >"$tmp/runs" 2>&1
grep -q '^2 runs in sqlite store' "$tmp/runs" || fail "after kill -9: the 2 earlier runs, not the killed one: $(cat "$tmp/runs")"
# the killed run's report is still in its temporary file: importing it recovers the run
"$OPPERF" history --store "$db" --import "$tmp"/killed/opperf-store-*.json >/dev/null 2>&1 \
  || fail "importing the killed run's report"
"$OPPERF" history --store "$db" 2>&1 | grep -q '^3 runs in sqlite store' || fail "the killed run recovered"

# --- change points on imported reports: +30% time and task-clock from the 7th run ----------
python3 - "$tmp/r1.json" "$tmp" <<'PY' || fail "making the step reports"
import json, sys
rep = json.load(open(sys.argv[1]))
for i in range(12):
    d = json.loads(json.dumps(rep))
    d["context"]["timestamp"] = "2026-01-%02dT00:00:00Z" % (i + 1)
    d["context"]["tool"]["git_hash"] = "commit%02d" % i
    f = (1.3 if i >= 6 else 1.0) * (1 + 0.01 * ((i * 7) % 3 - 1))
    for r in d["results"]:
        t = r["time"]
        for k in ("median", "min", "mean", "max"):
            t[k] *= f
        t["median_ci95"] = [x * f for x in t["median_ci95"]] if "median_ci95" in t else [t["median"] * 0.98, t["median"] * 1.02]
        t["raw"] = [x * f for x in t["raw"]]
        for c in r["counters"]:
            if c["name"] == "task-clock" and "per_call" in c:
                c["per_call"] *= f
    json.dump(d, open("%s/step%02d.json" % (sys.argv[2], i), "w"))
PY
imports=()
for i in $(seq -w 0 11); do imports+=(--import "$tmp/step$i.json"); done
"$OPPERF" history --store "$tmp/step.db" "${imports[@]}" 2>"$tmp/err" >/dev/null || fail "import: $(cat "$tmp/err")"
[ "$(grep -c 'stored as run' "$tmp/err")" -eq 12 ] || fail "12 imports: $(cat "$tmp/err")"
"$OPPERF" history --store "$tmp/step.db" --changes >"$tmp/ch" 2>"$tmp/err" || fail "--changes: $(cat "$tmp/err")"
grep -q 'from run 7 (2026-01-07T00:00:00Z, commit commit06' "$tmp/ch" || fail "step at run 7: $(cat "$tmp/ch")"
grep -q '+3[01]% time' "$tmp/ch" || fail "+30% time: $(cat "$tmp/ch")"
# (no counter counts where perf_event_open does not exist: qemu-user)
[ "$no_perf" = 1 ] || grep -q '+3[01]% task-clock' "$tmp/ch" || fail "task-clock moved with it: $(cat "$tmp/ch")"
grep -q '^1 change point' "$tmp/ch" || fail "exactly one change point: $(cat "$tmp/ch")"
"$OPPERF" history --store "$tmp/step.db" 'relu*' >"$tmp/trend" 2>&1
grep -q '<- +3[01]% time' "$tmp/trend" || fail "the trend marks the step: $(cat "$tmp/trend")"
# the HTML report's trends from the store: 12 runs, the step marked at run 7 (index 6)
"$OPPERF" report --store "$tmp/step.db" "$tmp/step11.json" -o "$tmp/store.html" 2>"$tmp/err" ||
  fail "report --store: $(cat "$tmp/err")"
/usr/bin/python3 - "$tmp/store.html" <<'PY' || fail "report --store: trend data"
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script type="application/json" id="opperf-data">(.*?)</script>', html, re.S).group(1))
t = d["trend"]
assert len(t["runs"]) == 12 and t["runs"][6].startswith("run 7 "), t["runs"]
steps = [c for c in t["cases"] if c.get("changes")]
assert len(steps) == 1 and steps[0]["changes"] == [6], [(c["label"], c.get("changes")) for c in t["cases"]]
PY
expect 2 "go with --store" -- report --machine x "$tmp/step11.json" -o "$tmp/x.html"
expect 2 "the run to show" -- report --store "$tmp/step.db" -o "$tmp/x.html"
[ ! -e "$tmp/x.html" ] || fail "a failed report left a file"
# another machine's runs are a trend of their own: no step across machines
OPPERF_MACHINE=other-pool "$OPPERF" history --store "$tmp/step.db" --import "$tmp/step11.json" 2>/dev/null
"$OPPERF" history --store "$tmp/step.db" 'relu*' >"$tmp/trend" 2>&1
grep -q '^  on other-pool' "$tmp/trend" || fail "a trend per machine: $(cat "$tmp/trend")"
"$OPPERF" history --store "$tmp/step.db" --all-machines 'relu*' >"$tmp/trend" 2>&1
grep -q '^  on (all machines)' "$tmp/trend" || fail "--all-machines joins them: $(cat "$tmp/trend")"

# --- shards of the default suite: union = the whole list, disjoint --------------------------
"$OPPERF" run --dry-run | grep -v ' cases$' | sort >"$tmp/all" || fail "dry-run"
: >"$tmp/union"
for k in 0 1 2; do
  "$OPPERF" run --dry-run --shard $k/3 | grep -v ' cases$' | sort >"$tmp/s$k"
  [ -s "$tmp/s$k" ] || fail "shard $k/3 is empty"
  cat "$tmp/s$k" >>"$tmp/union"
done
sort "$tmp/union" | cmp -s - "$tmp/all" || fail "the 3 shards are not the whole list, each case once ($(wc -l <"$tmp/union") vs $(wc -l <"$tmp/all"))"
[ -z "$(sort "$tmp/union" | uniq -d)" ] || fail "a case in two shards"
GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=3 "$OPPERF" run --dry-run | grep -v ' cases$' | sort | cmp -s - "$tmp/s1" \
  || fail "GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=3 differs from --shard 1/3"
JOB_COMPLETION_INDEX=2 OPPERF_SHARDS=3 "$OPPERF" run --dry-run | grep -v ' cases$' | sort | cmp -s - "$tmp/s2" \
  || fail "JOB_COMPLETION_INDEX=2 OPPERF_SHARDS=3 differs from --shard 2/3"
JOB_COMPLETION_INDEX=0 "$OPPERF" run --dry-run | grep -v ' cases$' | sort | cmp -s - "$tmp/all" \
  || fail "JOB_COMPLETION_INDEX without a shard count must not shard"

# --- shards into one store, and merge --------------------------------------------------------
ops=(relu abs exp add cbrt ceil clip)
for k in 0 1; do
  "$OPPERF" run "${ops[@]}" "${q[@]}" --shard $k/2 --store "$tmp/sh.db" --format json -o "$tmp/sh$k.json" \
    >/dev/null 2>"$tmp/err" || fail "shard $k/2: $(cat "$tmp/err")"
done
"$OPPERF" run "${ops[@]}" "${q[@]}" --format json -o "$tmp/full.json" >/dev/null 2>&1
"$OPPERF" history --store "$tmp/sh.db" >"$tmp/runs" 2>&1
grep -q ' 0/2 ' "$tmp/runs" && grep -q ' 1/2 ' "$tmp/runs" || fail "both shards in the store: $(cat "$tmp/runs")"
"$OPPERF" merge "$tmp/sh0.json" "$tmp/sh1.json" -o "$tmp/all.json" 2>"$tmp/err" || fail "merge: $(cat "$tmp/err")"
python3 - "$tmp/all.json" "$tmp/full.json" <<'PY' || fail "merged report"
import json, sys
m, f = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
key = lambda r: (r["op"], r["impl"], r["dtype"], r["pass"], r["spec"])
assert sorted(map(key, m["results"])) == sorted(map(key, f["results"])), "merged cases != full run"
assert len(m["context"]["shards"]) == 2
PY
"$OPPERF" run relu "${q[@]}" --seed 7 --format json -o "$tmp/seed7.json" >/dev/null 2>&1
expect 2 "context.settings" -- merge "$tmp/sh0.json" "$tmp/seed7.json" -o "$tmp/bad.json"
[ -e "$tmp/bad.json" ] && fail "a refused merge wrote its output"
expect 2 "overlapping shards" -- merge "$tmp/sh0.json" "$tmp/sh0.json"
expect 2 "cannot read" -- merge "$tmp/nothing.json"

exit $((fails > 0))

#!/usr/bin/env bash
# test_plugin.sh: plugins (--plugin) with the real binary: the example plugin's operator runs
# and passes the reference check (--check), its relu implementation runs next to the built-in
# (--impl native,example) and passes opperf's relu reference, a wrong implementation fails the
# check, malformed plugins are refused (exit 2, one line naming the problem), and the JSON
# context's build-ids equal `readelf -n` for the binary, libopenblas and the plugin.
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
PLUGINS=$(dirname "$OPPERF")/plugins
EXAMPLE=$PLUGINS/libexample.so
[ -f "$EXAMPLE" ] || { echo "FAIL: $EXAMPLE not built"; exit 1; }

# --- the example plugin: list, describe, its operator against its reference --------------
expect 0 "" -- list --plugin "$EXAMPLE" --category example
grep -q '^example_saxpy ' "$tmp/out" || fail "list --plugin lacks example_saxpy: $(cat "$tmp/out")"
expect 0 "" -- describe --plugin "$EXAMPLE" relu
grep -q '^  example ' "$tmp/out" || fail "describe relu lacks the example implementation"
expect 0 "" -- run example_saxpy --plugin "$EXAMPLE" --shapes small --pass fwd,bwd --check \
  "${quick[@]}" --format json -o "$tmp/saxpy.json"
# Isolated (several operators: each case in a child process that loads the plugin itself).
expect 0 "" -- run example_saxpy relu --plugin "$EXAMPLE" --shapes small --pass fwd --check \
  --impl native,example "${quick[@]}" --format json -o "$tmp/iso.json"

# --- the example relu next to the built-in ----------------------------------------------
expect 0 "" -- run relu --plugin "$EXAMPLE" --impl native,example --shapes small,test --pass fwd,bwd \
  --check "${quick[@]}" --format table,json="$tmp/relu.json"
grep -q '^relu \[example\] ' "$tmp/out" || fail "table lacks the relu [example] rows: $(cat "$tmp/out")"
grep -q '^relu  ' "$tmp/out" || fail "table lacks the native relu rows"
python3 - "$tmp/saxpy.json" "$tmp/iso.json" "$tmp/relu.json" <<'PY' || fail "plugin results"
import json, sys
saxpy, iso, relu = (json.load(open(p)) for p in sys.argv[1:])
def ok_checked(rs, what):
    assert rs, what + ": no results"
    for r in rs:
        assert r["status"] == "ok", (what, r["status"], r.get("message"))
        if r["pass"] == "fwd":
            assert r.get("reference_check") == "passed", (what, r)
s = saxpy["results"]
ok_checked(s, "saxpy")
assert {r["pass"] for r in s} == {"fwd", "bwd"}, s
ok_checked(iso["results"], "isolated")
assert {(r["op"], r["impl"]) for r in iso["results"]} == {("example_saxpy", "native"), ("relu", "native"), ("relu", "example")}
rs = relu["results"]
ok_checked(rs, "relu")
impls = {r["impl"] for r in rs}
assert impls == {"native", "example"}, impls
# Same cases for both implementations, side by side.
key = lambda r: (r["spec"], r["pass"])
nat = sorted(str(key(r)) for r in rs if r["impl"] == "native")
ex = sorted(str(key(r)) for r in rs if r["impl"] == "example")
assert nat == ex and nat, (nat, ex)
PY

# --- the check can fail: a plugin relu that copies negatives --------------------------------
"$OPPERF" run relu --plugin "$PLUGINS/libwrong_relu.so" --impl wrong --shapes small --pass fwd --check \
  "${quick[@]}" --format json -o "$tmp/wrong.json" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "a wrong implementation under --check exited $rc, expected 1"
python3 - "$tmp/wrong.json" <<'PY' || fail "the wrong implementation's failed check"
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
assert rs and all(r["status"] == "error" and "differs from the reference" in r["message"] for r in rs), rs
PY

# --- refused plugins: exit 2, one line naming the plugin and the problem ---------------------
expect 2 "ABI version" -- run relu --plugin "$PLUGINS/libbad_abi.so"
grep -qF "libbad_abi.so" "$tmp/err" || fail "bad ABI message does not name the plugin"
expect 2 "no forward hook" -- run relu --plugin "$PLUGINS/libno_forward.so"
expect 2 "no operator descriptors" -- run relu --plugin "$PLUGINS/libno_desc.so"
expect 2 "No such file" -- run relu --plugin "$tmp/missing.so"
echo "not a library" >"$tmp/text.so"
expect 2 "not an ELF shared library" -- run relu --plugin "$tmp/text.so"
expect 2 "unknown implementation 'example'" -- run relu --impl native,example
# Refused before anything is written.
expect 2 "no forward hook" -- run relu --plugin "$PLUGINS/libno_forward.so" --format json -o "$tmp/none.json"
[ ! -e "$tmp/none.json" ] || fail "a refused plugin left an output file"
expect 2 "ABI version" -- list --plugin "$PLUGINS/libbad_abi.so"
expect 2 "no operator descriptors" -- describe --plugin "$PLUGINS/libno_desc.so" relu

# --- build-ids in the context block equal readelf -n ---------------------------------------
if command -v readelf >/dev/null; then
  # OPPERF_TARGET: the binary itself when $OPPERF is an emulator wrapper (cross build)
  python3 - "$tmp/relu.json" "${OPPERF_TARGET:-$OPPERF}" "$EXAMPLE" <<'PY' || fail "build-ids"
import json, os, subprocess, sys
ctx = json.load(open(sys.argv[1]))["context"]
ids = {e["path"]: e["build_id"] for e in ctx["build_ids"]}
def readelf(p):
    out = subprocess.run(["readelf", "-n", p], capture_output=True, text=True).stdout
    return next(l.split("Build ID:")[1].strip() for l in out.splitlines() if "Build ID:" in l)
want = [os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])]
blas = [p for p in ids if "libopenblas" in p]
assert blas, ("no libopenblas entry", ids)
for p in want + blas:
    assert p in ids, (p, ids)
    assert ids[p] == readelf(p), (p, ids[p], readelf(p))
PY
else
  echo "readelf not found (binutils): build-id comparison skipped"
fi

[ "$fails" -eq 0 ] && echo "test_plugin: all passed"
exit $((fails > 0))

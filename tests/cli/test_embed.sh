#!/usr/bin/env bash
# test_embed.sh: libopperf as an embedder gets it: `cmake --install` into a fresh prefix, the
# example program (examples/embed/embed.c) compiled against the installed headers and library
# through pkg-config alone, run, and its JSON report checked (its own operator, measured,
# counters with statuses); and the opperf executable exports exactly the public API to plugins
# (every exported opf_* function is declared in include/opperf, no internal or test seam is).
source "$(dirname "$0")/lib.sh"
[ -n "${OPPERF_EMULATOR:-}" ] && { echo "cross build: the host compiler cannot build the example (skipped)"; exit 77; }
build=$(dirname "${OPPERF_TARGET:-$OPPERF}")
src=${OPPERF_SOURCE_DIR:-.}

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || fail "cmake --install: $(tail -5 "$tmp/install.log")"
for f in lib/libopperf.a include/opperf/opperf.h include/opperf/session.h lib/pkgconfig/opperf.pc; do
  [ -f "$tmp/prefix/$f" ] || fail "not installed: $f"
done
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$src/examples/embed/embed.c" $(pkg-config --cflags --libs opperf) \
  -o "$tmp/embed" 2>"$tmp/cc.err" || fail "the example does not build against the install: $(head -5 "$tmp/cc.err")"
"$tmp/embed" "$tmp/embed.json" 2>"$tmp/err" || fail "the example failed: $(cat "$tmp/err")"
python3 - "$tmp/embed.json" <<'PY' || fail "the example's report"
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["results"]
assert [r["op"] for r in rs] == ["my_scale", "my_scale"], rs
assert all(r["status"] == "ok" and r["time"]["median"] > 0 for r in rs)
assert d["context"]["command"] == "embed"
for r in rs:  # counters come with a status, never a bare number
    assert r["counters"], r
    for c in r["counters"]:
        assert c["status"] in ("counted", "scaled", "not counted", "not supported", "partial", "config error"), c
PY

# The plugin ABI: exported opf_* symbols are the public headers' functions, nothing else.
if command -v nm >/dev/null; then
  nm -D --defined-only "${OPPERF_TARGET:-$OPPERF}" | awk '$3 ~ /^opf_/ {print $3}' | sort -u >"$tmp/exported"
  [ -s "$tmp/exported" ] || fail "the executable exports no opf_ function"
  sed -e 's|/\*.*\*/||g' "$src"/include/opperf/*.h | grep -o 'opf_[a-z0-9_]*[[:space:]]*(' | tr -d ' (' | sort -u >"$tmp/declared"
  extra=$(comm -23 "$tmp/exported" "$tmp/declared")
  [ -z "$extra" ] || fail "exported but not in the public headers: $extra"
  grep -qx 'opf_pmu_set_sysfs_root' "$tmp/exported" && fail "a test seam (opf_pmu_set_sysfs_root) is exported"
fi
exit $((fails > 0))

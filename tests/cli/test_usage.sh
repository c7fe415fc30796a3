#!/usr/bin/env bash
# test_usage.sh: every command answers -h (exit 0, a usage line on stdout), and the options
# the usage texts name and the options the man page documents are the same set (a new option
# missing from man/opperf.1, or a documented one that no command has, fails).
source "$(dirname "$0")/lib.sh"
src=${OPPERF_SOURCE_DIR:-.}
"$OPPERF" --help >"$tmp/usage.txt" 2>&1 || fail "opperf --help exited $?"
cmds=$(awk '/^commands:/ {on=1; next} on && /^  [a-z]/ {print $1}' "$tmp/usage.txt")
[ -n "$cmds" ] || cmds=$(awk '/^  [a-z]+ +[a-z]/ {print $1}' "$tmp/usage.txt")
[ "$(echo "$cmds" | wc -w)" -ge 8 ] || fail "commands not found in opperf --help: $cmds"
for c in $cmds; do
  "$OPPERF" "$c" -h >"$tmp/h_$c.txt" 2>"$tmp/err" || fail "opperf $c -h exited $?: $(cat "$tmp/err")"
  grep -q "^usage: opperf $c" "$tmp/h_$c.txt" || fail "opperf $c -h: no usage line"
  cat "$tmp/h_$c.txt" >>"$tmp/usage.txt"
done
"$src/scripts/opperf-flamegraph" --help >>"$tmp/usage.txt" 2>&1 || fail "scripts/opperf-flamegraph --help exited $?"
grep -o -- '--[a-z][a-z0-9-]*' "$tmp/usage.txt" | sort -u >"$tmp/usage_opts"
sed 's/\\-/-/g' "$src/man/opperf.1" | grep -o -- '--[a-z][a-z0-9-]*' | sort -u >"$tmp/man_opts"
missing=$(comm -23 "$tmp/usage_opts" "$tmp/man_opts" | tr '\n' ' ')
[ -z "$missing" ] || fail "in a usage text but not in man/opperf.1: $missing"
extra=$(comm -13 "$tmp/usage_opts" "$tmp/man_opts" | tr '\n' ' ')
[ -z "$extra" ] || fail "in man/opperf.1 but in no usage text: $extra"
exit $((fails > 0))

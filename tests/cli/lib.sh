# lib.sh: helpers shared by the CLI tests (source it; not a test itself): $OPPERF, a temporary
# directory $tmp removed on exit, fail() counting failures in $fails, expect() for one
# invocation's exit status and one-line error message, the quick measurement settings, and
# $no_perf (1 where perf_event_open does not exist).
OPPERF=${OPPERF:-./build/opperf}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
quick=(--warmup 0.001 --min-time 0.005 --sample-time 0.0005 --runs 3)
# perf_event_open missing altogether (ENOSYS: qemu-user does not emulate it), so not even the
# software counters can count: the checks of counted values check the honest status instead.
no_perf=0
"$OPPERF" events 2>/dev/null | grep -q 'task-clock .*ENOSYS' && no_perf=1

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE NEEDLE -- args...: exit status CODE, stderr contains NEEDLE, one line only.
expect() {
  local code=$1 needle=$2
  shift 3
  "$OPPERF" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$code" ] || { fail "opperf $* exited $rc, expected $code: $(cat "$tmp/err")"; return; }
  if [ -n "$needle" ]; then
    grep -qF -- "$needle" "$tmp/err" || fail "opperf $*: stderr lacks '$needle': $(cat "$tmp/err")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "opperf $*: expected a one-line message, got: $(cat "$tmp/err")"
  fi
}

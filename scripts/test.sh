#!/usr/bin/env bash
# test.sh: the README's second command: every test. Installs the packages if needed, builds
# with warnings as errors, runs all ctest labels (unit, pmu, ops, cli), then repeats them in an
# AddressSanitizer + UndefinedBehaviorSanitizer build. --quick skips the sanitizer build.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
scripts/install-deps.sh
jobs=$(nproc)
run_suite() { # build-dir, extra cmake args...
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPPERF_WERROR=ON "$@" >/dev/null
  # -Werror (OPPERF_WERROR) makes any warning a build failure: the exit status says it all.
  if ! cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1; then
    grep -E '(warning|error):' "$dir/build.log" | head -n 40 >&2
    echo "opperf: the build in $dir failed (log: $dir/build.log)" >&2
    return 1
  fi
  ctest --test-dir "$dir" --output-on-failure -j"$jobs"
}
echo "== tests (build/)" >&2
run_suite build
if [ $quick -eq 0 ]; then
  echo "== tests under ASan + UBSan (build-asan/)" >&2
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite build-asan -DOPPERF_SANITIZE=ON
fi
echo "opperf: all tests passed" >&2

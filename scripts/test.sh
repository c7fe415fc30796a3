#!/usr/bin/env bash
# test.sh: the README's second command: every test. Installs the packages if needed, builds
# build/ with warnings as errors and runs all ctest labels (unit, pmu, ops, cli), then builds
# build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer at -O1 and runs all the labels
# again (warnings are checked once, in build/). --quick skips the sanitizer build. Prints the
# time of each step: wall and CPU seconds since the start, and the load average. The PMU lab
# (label lab: an emulated arm64 machine) and the arm64 tests under qemu-user have scripts of
# their own (scripts/pmu-lab, scripts/test-arm64.sh), which .ci/run runs after this one.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
scripts/install-deps.sh
jobs=$(nproc)
t_start=$SECONDS
# cpu: the CPU seconds (user + system) of every finished child of this script so far: cutime
# and cstime of /proc/$$/stat ($$ is this shell even inside $(...), where `times` would report
# the subshell's own children: 0).
hz=$(getconf CLK_TCK)
cpu() { awk -v hz="$hz" '{ sub(/^.*\) /, ""); printf "%.0f", ($14 + $15) / hz }' "/proc/$$/stat"; }
step() { echo "== $* ($((SECONDS - t_start)) s, CPU $(cpu) s, load $(cut -d' ' -f1 /proc/loadavg))" >&2; }

build() { # build-dir, strict (1: warnings and notes fail the build), extra cmake args...
  local dir=$1 strict=$2
  shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPPERF_WERROR=$([ "$strict" = 1 ] && echo ON || echo OFF) \
    "$@" >/dev/null
  # -Werror (OPPERF_WERROR) makes any warning a build failure: the exit status says it all.
  if ! cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1; then
    grep -E '(warning|error):' "$dir/build.log" | head -n 40 >&2
    echo "opperf: the build in $dir failed (log: $dir/build.log)" >&2
    return 1
  fi
  # Notes are not errors under -Werror, but a clean build prints none either.
  if [ "$strict" = 1 ] && grep -qE '(note|warning):' "$dir/build.log"; then
    grep -E '(note|warning):' "$dir/build.log" | head -n 20 >&2
    echo "opperf: the build in $dir printed diagnostics (log: $dir/build.log)" >&2
    return 1
  fi
}

step "build (build/, -O3, -Werror)"
build build 1 -DOPPERF_SANITIZE=OFF -DOPPERF_OPT=-O3
step "tests (build/)"
ctest --test-dir build --output-on-failure -j"$jobs" -LE lab
if [ $quick -eq 0 ]; then
  # The sanitizer build checks memory and undefined behaviour, not speed: -O1 compiles in a
  # fraction of -O3's time and keeps the stack traces exact. Every label runs under it.
  # Warnings are build/'s gate: some (-Wformat-truncation, -Wmaybe-uninitialized) depend on
  # the optimiser's range analysis and differ at -O1, without saying more about the code.
  # Each kernel is built once, without its AVX-512 and AVX2 clones (OPPERF_ISA_CLONES): the
  # clones compile the same source, and were two thirds of this build's compile time.
  step "build (build-asan/, ASan + UBSan, -O1)"
  build build-asan 0 -DOPPERF_SANITIZE=ON -DOPPERF_OPT=-O1 -DOPPERF_ISA_CLONES=OFF
  step "tests under ASan + UBSan (build-asan/)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE lab
fi
step "done"
echo "opperf: all tests passed" >&2

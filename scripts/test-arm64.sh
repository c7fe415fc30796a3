#!/usr/bin/env bash
# test-arm64.sh: the arm64 (aarch64) flow in one script, on a Debian 12 x86-64 host: installs the
# cross toolchain, qemu-user and the :arm64 libraries (scripts/install-deps.sh --arm64), cross
# builds opperf with -Werror into build-arm64/ (cmake/toolchain-aarch64.cmake), and runs the
# unit, pmu, ops and cli ctest labels under qemu-user (qemu-aarch64-static; no binfmt_misc needed).
#
# Output layout (build-arm64/, all arm64 ELF, dynamically linked):
#   opperf                    the CLI; tests/opperf_faults: the CLI with the crash/hang test ops
#   plugins/*.so              the example plugin and the malformed test plugins
#   tests/test_*              the cmocka test executables (run from build-arm64/tests)
#   opperf-emu, opperf_faults-emu  host wrappers: `qemu-aarch64-static opperf "$@"`
# Shared libraries they need on an arm64 Debian 12 system (or under qemu with the :arm64
# packages): libopenblas0-openmp (found through the RPATH /usr/lib/aarch64-linux-gnu/openblas-
# openmp), libgomp1, libpfm4, libelf1, libcjson1, libcmocka0 (tests only), libc6.
# `readelf -d build-arm64/opperf | grep NEEDED` lists them.
#
# Under qemu-user perf_event_open is not emulated (ENOSYS): the PMU tests that need a counter
# skip (cmocka skip / exit 77) and say so, the CLI tests check the honest "not supported"
# status instead of counted values, valgrind and perf recordings are skipped, and test_ops runs
# as four shards (tests/CMakeLists.txt). Timing figures are the emulator's, not an arm64 CPU's.
# Options: --no-tests (build only), -j N (build and ctest jobs).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=1
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case $1 in
    --no-tests) tests=0 ;;
    -j) jobs=$2; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "test-arm64.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
scripts/install-deps.sh --arm64
dir=build-arm64
t0=$(date +%s)
cmake --no-warn-unused-cli -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPPERF_WERROR=ON >/dev/null
if ! cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1; then
  grep -E '(warning|error):' "$dir/build.log" | head -n 40 >&2
  echo "opperf: the arm64 build in $dir failed (log: $dir/build.log)" >&2
  exit 1
fi
t1=$(date +%s)
echo "opperf: arm64 cross build in $((t1 - t0)) s ($dir/opperf)" >&2
[ $tests -eq 1 ] || exit 0
# The emulated CPU: a Neoverse N1 (Graviton2, Ampere Altra), so OpenBLAS picks its NEOVERSEN1
# kernels as on such a server (qemu's default "max" CPU makes it fall back to generic ARMV8).
# OPENBLAS_CORETYPE names an x86 core on the x86 CI machines: meaningless (and warned about)
# for the arm64 OpenBLAS.
export QEMU_CPU=${QEMU_CPU:-neoverse-n1}
unset OPENBLAS_CORETYPE
"$dir/opperf-emu" run dot --input a=8x8 --input b=8x8 --pass fwd --runs 1 --no-isolate 2>/dev/null |
  grep -m1 '^BLAS:' >&2 || true
ctest --test-dir "$dir" -L 'unit|pmu|ops|cli' --output-on-failure -j"$jobs"
echo "opperf: arm64 tests passed under qemu-user in $(($(date +%s) - t1)) s" >&2

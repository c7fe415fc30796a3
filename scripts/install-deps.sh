#!/usr/bin/env bash
# install-deps.sh: installs the Debian packages opperf needs to build, test and compare
# (idempotent: does nothing when they are all present). Uses sudo when not root.
# linux-perf is for scripts/opperf-flamegraph; python3-torch and python3-numpy are the peers of
# `opperf run --baseline torch|numpy` (scripts/opperf-peer.py); Debian's builds import only
# under /usr/bin/python3. libsqlite3-dev and libpq-dev are the results store's (`--store`: SQLite
# files, PostgreSQL servers); postgresql is the server tests/cli/test_store_pg.sh starts.
# under /usr/bin/python3. chromium and chromium-driver: tests/cli/test_report.sh loads the
# page of `opperf report` in headless Chromium (through chromedriver's WebDriver API).
# --arm64: the packages of scripts/test-arm64.sh instead (cross compiler, qemu-user and the
# multiarch :arm64 libraries; adds the arm64 architecture to dpkg first).
set -euo pipefail
pkgs=(build-essential cmake ccache pkg-config git libpfm4-dev libopenblas-dev libopenblas-openmp-dev
      libelf-dev libcjson-dev libcmocka-dev libsqlite3-dev libpq-dev postgresql python3 valgrind
      linux-perf python3-numpy python3-torch chromium chromium-driver)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ "${1:-}" = "--arm64" ]; then
  pkgs=(cmake ccache pkg-config git python3 binutils gcc-aarch64-linux-gnu libc6-dev-arm64-cross
        qemu-user-static libc6:arm64 libpfm4-dev:arm64 libopenblas-openmp-dev:arm64
        libelf-dev:arm64 libcjson-dev:arm64 libcmocka-dev:arm64 libsqlite3-dev:arm64 libgomp1:arm64)
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "opperf: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

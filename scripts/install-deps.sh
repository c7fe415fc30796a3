#!/usr/bin/env bash
# install-deps.sh: installs the Debian packages opperf needs to build, test and compare
# (idempotent: does nothing when they are all present; linux-perf is for scripts/opperf-flamegraph).
# Uses sudo when not root.
set -euo pipefail
pkgs=(build-essential cmake pkg-config git libpfm4-dev libopenblas-dev libopenblas-openmp-dev
      libelf-dev libcjson-dev libcmocka-dev python3 valgrind linux-perf)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "opperf: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

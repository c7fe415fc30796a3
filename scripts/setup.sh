#!/usr/bin/env bash
# setup.sh: the README's first command. Installs the Debian packages, builds opperf (build/)
# and runs the default benchmark suite on built-in inputs. Extra arguments go to `opperf run`
# (e.g. scripts/setup.sh softmax --format json -o softmax.json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "opperf: built build/opperf; running the default suite (standard and skewed shapes, fwd and bwd)" >&2
exec build/opperf run "$@"

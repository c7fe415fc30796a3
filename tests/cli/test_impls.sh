#!/usr/bin/env bash
# test_impls.sh: the built-in alternative implementations (OPPERF_IMPL in ops/): conv2d's
# im2col and winograd and the transposed convolutions' col2im run only when --impl names them
# (or says all), pass the reference check side by side with the native kernels on odd
# shapes, and describe lists them.
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

expect 0 "" -- describe conv2d
grep -q '^  im2col ' "$tmp/out" || fail "describe conv2d lacks im2col: $(cat "$tmp/out")"
grep -q '^  winograd ' "$tmp/out" || fail "describe conv2d lacks winograd"

# By default only the native kernels run.
expect 0 "" -- run conv2d --shapes small --pass fwd "${quick[@]}" --no-isolate
grep -q '^conv2d \[' "$tmp/out" && fail "a built-in alternative ran without --impl: $(cat "$tmp/out")"

# Named (and all): every implementation, each checked against the reference.
expect 0 "" -- run conv2d --input x=2x17x13x11 --param filters=19 --param pad=1 --impl all \
  --pass fwd,bwd --check "${quick[@]}" --no-isolate
for i in im2col winograd; do
  grep -q "^conv2d \[$i\] .*reference ok" "$tmp/out" || fail "conv2d [$i] not run or not checked: $(cat "$tmp/out")"
done
expect 0 "" -- run conv2d_transpose --input x=2x5x9x7 --param kernel=4 --param stride=2 \
  --param pad=1 --param filters=16 --impl native,col2im --pass fwd --check "${quick[@]}" --no-isolate
grep -q '^conv2d_transpose \[col2im\] .*reference ok' "$tmp/out" || fail "col2im not run: $(cat "$tmp/out")"
expect 2 "unknown implementation 'nope'" -- run conv2d --impl native,nope

[ "$fails" -eq 0 ] || exit 1
echo "ok"

#!/usr/bin/env bash
# test_githash.sh: the git hash a binary reports follows its source tree at every build, not at
# configure time: cmake/git_hash.cmake on a scratch repository names a commit, adds "-dirty" for
# uncommitted edits, follows a new commit, leaves the header untouched (no recompilation) when
# nothing changed, and says "unknown" outside git; and this build's `opperf --version` names the
# source tree's `git describe --dirty` when the source is a git checkout.
source "$(dirname "$0")/lib.sh"
src=${OPPERF_SOURCE_DIR:-.}
script="$src/cmake/git_hash.cmake"
command -v git >/dev/null || { echo "no git here (skipped)"; exit 77; }

repo="$tmp/repo"
mkdir -p "$repo" && cd "$repo" || exit 1
git init -q . && git config user.email t@example.org && git config user.name t
echo one >f && git add f && git commit -qm one
gen() { cmake -DSRC="$repo" -DOUT="$tmp/git_hash.h" -P "$script" || fail "the script failed"; }
hash_of() { sed -n 's/^#define OPPERF_GIT_HASH "\(.*\)"$/\1/p' "$tmp/git_hash.h"; }

gen
h1=$(git rev-parse --short=12 HEAD)
[ "$(hash_of)" = "$h1" ] || fail "clean tree: '$(hash_of)', expected '$h1'"
touch -d '2000-01-01' "$tmp/git_hash.h"
gen
[ "$(stat -c %Y "$tmp/git_hash.h")" = "$(date -d 2000-01-01 +%s)" ] || fail "the header was rewritten with the same hash"
echo two >f
gen
[ "$(hash_of)" = "$h1-dirty" ] || fail "edited tree: '$(hash_of)', expected '$h1-dirty'"
git commit -qam two
gen
h2=$(git rev-parse --short=12 HEAD)
[ "$h2" != "$h1" ] && [ "$(hash_of)" = "$h2" ] || fail "after a commit: '$(hash_of)', expected '$h2'"
rm -rf "$repo/.git"
gen
[ "$(hash_of)" = "unknown" ] || fail "outside git: '$(hash_of)', expected 'unknown'"

# This build: when the source is a clean git checkout, `opperf --version` names its HEAD (a
# binary built before the last commit and not rebuilt since would name the previous one).
cd "$src" || exit 1
if git rev-parse --git-dir >/dev/null 2>&1 && git diff --quiet HEAD 2>/dev/null; then
  want=$(git rev-parse --short=12 HEAD)
  got=$("$OPPERF" --version | sed -n 's/.*(git \([^,]*\),.*/\1/p')
  case "$got" in "$want"*) ;; *) fail "opperf --version names '$got', the source tree's HEAD is '$want' (rebuild)" ;; esac
fi
[ "$fails" -eq 0 ] || exit 1
echo "git hash: OK"

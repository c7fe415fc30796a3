#!/usr/bin/env bash
# test_blas.sh: the OpenBLAS kernel choice with the real binary: the header and the JSON context
# say which core ran and who chose it (OpenBLAS, the environment's OPENBLAS_CORETYPE, opperf,
# --blas-kernel / OPPERF_BLAS_KERNEL), with OPENBLAS_CORETYPE set and unset; the re-execution
# that loads another core (and runs once); bad names exit 2; machine/events name a mismatch.
# The expectations follow this machine's CPU family (read from the first report).
set -u
# $OPPERF, $tmp, fail, expect and the quick settings:
source "$(dirname "$0")/lib.sh"

small=(dot --input a=8x8 --input b=8x8 --pass fwd --no-isolate --threads 1 "${quick[@]}")

# blas FILE: "core|source|openblas|family|note|environment" of a JSON report
blas() {
  python3 - "$1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["context"]
b = c["blas"]
print("|".join([b["core"], b["core_source"], b["core_openblas"], b["cpu_family"], b["core_note"],
                c["environment"]]))
PY
}

# check NAME WANT_CORE WANT_SOURCE WANT_NOTE -- env/opperf args...: run, then compare the JSON
# context and the table header (which must print the same core and note).
check() {
  local name=$1 core=$2 source=$3 note=$4
  shift 5
  if ! "$@" --format "json=$tmp/$name.json,table" >"$tmp/out" 2>"$tmp/err"; then
    fail "$name: exit $?: $(cat "$tmp/err")"
    return
  fi
  IFS='|' read -r got_core got_source got_ob got_family got_note got_env < <(blas "$tmp/$name.json")
  [ "$got_core" = "$core" ] || fail "$name: core '$got_core', want '$core'"
  [ "$got_source" = "$source" ] || fail "$name: core_source '$got_source', want '$source'"
  [ "$got_note" = "$note" ] || fail "$name: core_note '$got_note', want '$note'"
  grep -qF "BLAS: OpenBLAS $core, $note (" "$tmp/out" ||
    fail "$name: header lacks 'BLAS: OpenBLAS $core, $note': $(grep BLAS "$tmp/out")"
}

# --- OpenBLAS's own choice (OPENBLAS_CORETYPE unset) -------------------------------------
env -u OPENBLAS_CORETYPE -u OPPERF_BLAS_KERNEL -u OPPERF_BLAS_REEXEC "$OPPERF" run "${small[@]}" \
  --format "json=$tmp/own.json" >/dev/null 2>"$tmp/err" || fail "plain run: $(cat "$tmp/err")"
IFS='|' read -r own_core own_source detected family own_note own_env < <(blas "$tmp/own.json")
echo "this machine: CPU family '$family', OpenBLAS detects '$detected', runs '$own_core' ($own_source)"
case "$own_source" in
openblas)
  [ "$own_core" = "$detected" ] || fail "kept core '$own_core' is not OpenBLAS's '$detected'"
  case "$own_note" in "detected by OpenBLAS"*) ;; *) fail "own note: '$own_note'" ;; esac ;;
opperf)
  [ "$own_core" = "$family" ] || fail "opperf chose '$own_core', not the CPU's family '$family'"
  [ "$own_note" = "chosen by opperf: OpenBLAS detected $detected" ] || fail "own note: '$own_note'"
  case "$own_env" in *"OPPERF_BLAS_REEXEC=opperf:$detected"*) ;; *) fail "no re-execution marker: '$own_env'" ;; esac ;;
*) fail "core_source '$own_source' without OPENBLAS_CORETYPE" ;;
esac
# native keeps whatever OpenBLAS detected, and never re-executes
check native "$detected" openblas "$(
  if [ "$own_source" = opperf ]; then echo "detected by OpenBLAS; this CPU can run $family"; else echo "$own_note"; fi
)" -- env -u OPENBLAS_CORETYPE -u OPPERF_BLAS_REEXEC "$OPPERF" run "${small[@]}" --blas-kernel native
grep -q OPPERF_BLAS_REEXEC "$tmp/native.json" && fail "--blas-kernel native re-executed"

if [ -z "$family" ]; then
  echo "not x86: the core is never changed; the x86 checks are skipped"
  expect 2 "is an x86 core and this CPU is not x86" -- run "${small[@]}" --blas-kernel Haswell
  [ "$fails" -eq 0 ] || exit 1
  exit 0
fi

# --- the environment's OPENBLAS_CORETYPE is respected ------------------------------------
can_run=""
[ "$family" != Prescott ] && can_run="; this CPU can run $family"
check env_prescott Prescott environment "set by the environment$can_run" -- \
  env -u OPPERF_BLAS_KERNEL -u OPPERF_BLAS_REEXEC OPENBLAS_CORETYPE=Prescott "$OPPERF" run "${small[@]}"
grep -q OPPERF_BLAS_REEXEC "$tmp/env_prescott.json" && fail "re-executed although the environment set the core"
case "$family" in Haswell | SkylakeX | Cooperlake)
  can_run=""
  [ "$family" != Haswell ] && can_run="; this CPU can run $family"
  check env_haswell Haswell environment "set by the environment$can_run" -- \
    env -u OPPERF_BLAS_REEXEC OPENBLAS_CORETYPE=Haswell "$OPPERF" run "${small[@]}" ;;
esac

# --- a forced core: re-executes once, with OpenBLAS's own choice in the note --------------
check forced Prescott option "set by --blas-kernel: OpenBLAS chose $detected" -- \
  env -u OPENBLAS_CORETYPE -u OPPERF_BLAS_REEXEC "$OPPERF" run "${small[@]}" --blas-kernel prescott
grep -q "OPPERF_BLAS_REEXEC=option:$detected" "$tmp/forced.json" || fail "forced: no marker of the re-execution"
check forced_env Prescott option "set by --blas-kernel: OpenBLAS chose $detected" -- \
  env -u OPENBLAS_CORETYPE -u OPPERF_BLAS_REEXEC OPPERF_BLAS_KERNEL=Prescott "$OPPERF" run "${small[@]}"
# an explicit name overrides the environment's
check over_env "$family" option "set by --blas-kernel: OpenBLAS chose Prescott" -- \
  env -u OPPERF_BLAS_REEXEC OPENBLAS_CORETYPE=Prescott "$OPPERF" run "${small[@]}" --blas-kernel "$family"
# isolated cases (one process each) inherit the core
env -u OPENBLAS_CORETYPE -u OPPERF_BLAS_REEXEC "$OPPERF" run dot gemv --shapes small --pass fwd --threads 1 \
  "${quick[@]}" --blas-kernel Prescott --format "json=$tmp/iso.json" >/dev/null 2>"$tmp/err" ||
  fail "isolated run with --blas-kernel: $(cat "$tmp/err")"
[ "$(blas "$tmp/iso.json" | cut -d'|' -f1)" = Prescott ] || fail "isolated run: $(blas "$tmp/iso.json")"
# sweep takes the option too
env -u OPENBLAS_CORETYPE -u OPPERF_BLAS_REEXEC "$OPPERF" sweep dot --shapes "a=8x8 b=8x8,a=16x16 b=16x16" \
  --pass fwd --threads 1 "${quick[@]}" --blas-kernel Prescott --format json -o "$tmp/sweep.json" \
  >/dev/null 2>"$tmp/err" || fail "sweep --blas-kernel: $(cat "$tmp/err")"
[ "$(blas "$tmp/sweep.json" | cut -d'|' -f1-2)" = "Prescott|option" ] || fail "sweep: $(blas "$tmp/sweep.json")"

# --- after opperf's re-execution (the marker it sets): the child reports opperf's choice ----
if [ "$family" != Prescott ]; then
  check child "$family" opperf "chosen by opperf: OpenBLAS detected Prescott" -- \
    env -u OPPERF_BLAS_KERNEL OPENBLAS_CORETYPE="$family" OPPERF_BLAS_REEXEC=opperf:Prescott \
    "$OPPERF" run "${small[@]}"
fi

# --- bad names: one line, exit 2 -----------------------------------------------------------
expect 2 "--blas-kernel: unknown BLAS kernel 'Skylake'" -- run "${small[@]}" --blas-kernel Skylake
OPPERF_BLAS_KERNEL=bogus expect 2 "OPPERF_BLAS_KERNEL: unknown BLAS kernel 'bogus'" -- run "${small[@]}"
expect 2 "needs a value" -- run "${small[@]}" --blas-kernel
if [ "$family" != Cooperlake ]; then
  expect 2 "needs instructions this CPU lacks (it can run $family at best)" -- run "${small[@]}" --blas-kernel Cooperlake
fi

# --- machine and events: one line when OpenBLAS's own core is below the CPU's ---------------
if [ "$family" != Prescott ]; then
  OPENBLAS_CORETYPE=Prescott "$OPPERF" events sw >"$tmp/ev" 2>&1 || fail "events: $(cat "$tmp/ev")"
  [ "$(grep -c "^BLAS: OpenBLAS Prescott is set by the environment (OPENBLAS_CORETYPE), below this CPU's $family" "$tmp/ev")" -eq 1 ] ||
    fail "events: no mismatch line: $(grep BLAS "$tmp/ev")"
  OPENBLAS_CORETYPE=Prescott OPPERF_MACHINE_FILE="$tmp/m.json" "$OPPERF" machine --time 0.02 >"$tmp/m" 2>&1 ||
    fail "machine: $(cat "$tmp/m")"
  grep -q "^BLAS: OpenBLAS Prescott is set by the environment" "$tmp/m" || fail "machine: no mismatch line: $(cat "$tmp/m")"
fi
if [ "$own_source" = openblas ] && [ "$detected" = "$family" ]; then
  env -u OPENBLAS_CORETYPE "$OPPERF" events sw >"$tmp/ev" 2>&1 || fail "events: $(cat "$tmp/ev")"
  grep -q "^BLAS:" "$tmp/ev" && fail "events: a mismatch line without a mismatch: $(grep BLAS "$tmp/ev")"
fi

if [ "$fails" -ne 0 ]; then
  echo "$fails BLAS kernel check(s) failed"
  exit 1
fi
echo "all BLAS kernel checks passed"

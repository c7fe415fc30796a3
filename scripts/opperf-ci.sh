#!/usr/bin/env bash
# opperf-ci.sh: the regression gate as one CI step. On the main branch (--update, or when no
# baseline exists yet) it runs the suite and stores it as the baseline; on a pull request it
# runs the same suite, compares with the baseline (Mann-Whitney U + threshold) and fails the
# job only on significant regressions or on cases that crashed. Artifacts go to $OUT.
#
#   scripts/opperf-ci.sh [--update] [--baseline NAME] [--threshold 5%] [--metric M]
#                        [--repetitions N] [-- RUN ARGS]
#   scripts/opperf-ci.sh --against OLD_OPPERF [--rounds R] [--threshold 5%] [-- RUN ARGS]
#
# --against compares two builds on this machine now instead of a stored baseline: the old
# binary and this one run the suite in alternating rounds (old new, new old, ...; R = 6), and
# `opperf compare --paired` judges each case by the geometric mean of its round ratios and a
# 95% interval, so load that comes and goes hits both builds alike.
# The metric defaults to retired instructions where the hardware counts them (stable from run
# to run: 0 false positives in our measurements) and to time otherwise. Time varies between
# processes on shared machines more than within one, so for time every case is measured in
# 3 separate processes (--repetitions) and a change must also exceed their spread.
# Environment: OPPERF (binary, default build/opperf), OPPERF_BASELINE_DIR (where baselines
# live; cache it between CI jobs), OUT (artifact directory, default opperf-ci).
set -euo pipefail
OPPERF=${OPPERF:-build/opperf}
OUT=${OUT:-opperf-ci}
name=ci
threshold=5%
metric=
reps=
update=0
against=
rounds=6
while [ $# -gt 0 ]; do
  case "$1" in
    --update) update=1 ;;
    --against) against=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --baseline) name=$2; shift ;;
    --threshold) threshold=$2; shift ;;
    --metric) metric=$2; shift ;;
    --repetitions) reps=$2; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "opperf-ci: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$OPPERF" ] || { echo "opperf-ci: no opperf binary at $OPPERF (build first, or set OPPERF)" >&2; exit 2; }
if [ -z "$metric" ]; then
  if "$OPPERF" events instructions 2>/dev/null | grep -q '^hardware counters: available'; then
    metric=instructions
  else
    metric=time
  fi
fi
events=sw
[ "$metric" = time ] || events="sw,$metric"
[ -n "$reps" ] || { [ "$metric" = time ] && reps=3 || reps=1; }
mkdir -p "$OUT"
dir=${OPPERF_BASELINE_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/opperf/baselines}
mkdir -p "$dir"
# Pinned, repeatable settings: one thread avoids scheduler stalls on shared runners; the same
# seed and shapes on both sides. Extra arguments (operators, --shapes, ...) come after --.
common=(--threads 1 --seed 42 --min-time 0.2 --events "$events" --isolate --repetitions "$reps" "$@")
if [ -n "$against" ]; then
  [ -x "$against" ] || { echo "opperf-ci: --against: no opperf binary at $against" >&2; exit 2; }
  case "$rounds" in ''|*[!0-9]*) echo "opperf-ci: --rounds needs a count, not '$rounds'" >&2; exit 2 ;; esac
  [ "$rounds" -ge 2 ] && [ "$rounds" -le 16 ] || { echo "opperf-ci: --rounds must be 2-16" >&2; exit 2; }
  paired=(--threads 1 --seed 42 --min-time 0.2 --events "$events" --isolate "$@")
  bases=() curs=()
  for k in $(seq "$rounds"); do
    order=(base cur)
    [ $((k % 2)) -eq 0 ] && order=(cur base)
    for side in "${order[@]}"; do
      bin=$OPPERF
      [ "$side" = base ] && bin=$against
      echo "opperf-ci: round $k/$rounds: $side ($bin)"
      "$bin" run "${paired[@]}" --format json="$OUT/$side-$k.json" >/dev/null || true
    done
    bases+=("$OUT/base-$k.json") curs+=("$OUT/cur-$k.json")
  done
  set +e
  "$OPPERF" compare --paired --metric "$metric" --threshold "$threshold" --format md -o "$OUT/compare.md" \
    "$(IFS=,; echo "${bases[*]}")" "$(IFS=,; echo "${curs[*]}")"
  rc=$?
  set -e
  [ -f "$OUT/compare.md" ] && cat "$OUT/compare.md"
  case $rc in
    0) echo "opperf-ci: no significant $metric regression against $against ($rounds paired rounds)" ;;
    1) echo "opperf-ci: regressions or failed cases against $against (see $OUT/compare.md)" ;;
    *) echo "opperf-ci: opperf exited $rc" ;;
  esac
  exit $rc
fi
if [ "$update" -eq 1 ] || [ ! -f "$dir/$name.json" ]; then
  echo "opperf-ci: storing baseline '$name' ($metric) in $dir"
  exec "$OPPERF" run "${common[@]}" --format table,json="$dir/$name.json"
fi
set +e
"$OPPERF" run "${common[@]}" --format table,json="$OUT/run.json",jsonl="$OUT/run.jsonl" >"$OUT/run.txt"
run_rc=$?
"$OPPERF" compare --metric "$metric" --threshold "$threshold" --format md -o "$OUT/compare.md" "$dir/$name.json" "$OUT/run.json"
rc=$?
set -e
cat "$OUT/run.txt"
[ -f "$OUT/compare.md" ] && cat "$OUT/compare.md"
[ "$rc" -eq 0 ] && [ "$run_rc" -ne 0 ] && rc=$run_rc
case $rc in
  0) echo "opperf-ci: no significant $metric regression against '$name'" ;;
  1) echo "opperf-ci: regressions or failed cases against '$name' (see $OUT/compare.md)" ;;
  *) echo "opperf-ci: opperf exited $rc" ;;
esac
exit $rc

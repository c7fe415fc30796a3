#!/usr/bin/env bash
# test_store_pg.sh: the results store in PostgreSQL, against a real server this test starts:
# initdb into a temporary directory (as the postgres user when run as root: root cannot run
# postgres), a free TCP port on 127.0.0.1, trust authentication; then the store's unit tests
# (test_store, OPPERF_TEST_PG_URL: round trip, machines, change points, migration of a v1
# schema, two concurrent writers, a writer killed mid-transaction, bad input) and the CLI
# (`run --store postgresql://...`, shards, history, --changes, --check, a refused URL). The
# server is stopped and its directory removed on exit. Skipped (77) only when PostgreSQL's
# server binaries are absent (scripts/install-deps.sh installs them).
set -u
SRC=${OPPERF_SOURCE_DIR:-.}
. "$SRC/tests/cli/lib.sh"
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "SKIP: no PostgreSQL server binaries (apt-get install postgresql)"
  exit 77
fi
if [ -n "${OPPERF_EMULATOR:-}" ]; then
  echo "SKIP: a cross build's opperf has no libpq of the host"
  exit 77
fi
"$OPPERF" history --store postgresql://127.0.0.1:1/x 2>&1 | grep -q "built without PostgreSQL" && {
  echo "SKIP: this opperf was built without libpq"
  exit 77
}
as=()
pgdir="$tmp/pg"
mkdir -p "$pgdir"
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || { echo "FAIL: running as root and there is no postgres user"; exit 1; }
  as=(runuser -u postgres --)
  chmod 755 "$tmp"
  chown postgres "$pgdir"
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as[@]}" "$bindir/initdb" -D "$pgdir/data" -A trust -U opperf --no-sync -E UTF8 >"$tmp/initdb.log" 2>&1 \
  || { echo "FAIL: initdb: $(tail -3 "$tmp/initdb.log")"; exit 1; }
stop_pg() { "${as[@]}" "$bindir/pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1; rm -rf "$tmp"; }
trap stop_pg EXIT
"${as[@]}" "$bindir/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w -t 60 \
  -o "-p $port -k $pgdir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40" start >/dev/null 2>&1 \
  || { echo "FAIL: the server did not start: $(tail -3 "$pgdir/log")"; exit 1; }
url="postgresql://opperf@127.0.0.1:$port/postgres"

# --- the store's unit tests against this server -----------------------------------------------
test_store=$(dirname "${OPPERF_TARGET:-$OPPERF}")/tests/test_store
if [ -x "$test_store" ]; then
  OPPERF_TEST_PG_URL="$url" "$test_store" >"$tmp/unit.log" 2>&1 || fail "test_store against PostgreSQL: $(tail -20 "$tmp/unit.log")"
  grep -q 'PASSED.*7 test' "$tmp/unit.log" || fail "test_store ran 7 tests against PostgreSQL: $(tail -5 "$tmp/unit.log")"
else
  fail "no test_store binary at $test_store"
fi

# --- the CLI --------------------------------------------------------------------------------
"${as[@]}" "$bindir/psql" -q -h 127.0.0.1 -p "$port" -U opperf -d postgres -c 'CREATE DATABASE cli' >/dev/null 2>&1 \
  || fail "CREATE DATABASE cli"
curl="postgresql://opperf@127.0.0.1:$port/cli"
q=(--shapes test --pass fwd --no-isolate "${quick[@]}")
for k in 0 1; do
  "$OPPERF" run relu abs exp add "${q[@]}" --shard $k/2 --store "$curl" --format json -o "$tmp/r$k.json" \
    >/dev/null 2>"$tmp/err" || fail "run --store postgresql shard $k: $(cat "$tmp/err")"
done
"$OPPERF" history --store "$curl" >"$tmp/runs" 2>"$tmp/err" || fail "history: $(cat "$tmp/err")"
grep -q '^2 runs in postgresql store' "$tmp/runs" || fail "2 runs: $(cat "$tmp/runs")"
grep -q ' 1/2 ' "$tmp/runs" || fail "shard recorded: $(cat "$tmp/runs")"
"$OPPERF" history --store "$curl" --import "$tmp/r0.json" --import "$tmp/r1.json" >/dev/null 2>&1 || fail "--import"
"$OPPERF" history --store "$curl" '*' >"$tmp/trend" 2>&1 || fail "trends: $(cat "$tmp/trend")"
"$OPPERF" history --store "$curl" --changes >"$tmp/ch" 2>&1 || fail "--changes: $(cat "$tmp/ch")"
grep -q 'change point' "$tmp/ch" || fail "--changes output: $(cat "$tmp/ch")"
"$OPPERF" history --store "$curl" --check >/dev/null 2>&1 || fail "--check"
# the same numbers as SQLite would hold: every record of the reports, every counter status
n_rec=$(python3 -c 'import json,sys; print(sum(len(json.load(open(f))["results"]) for f in sys.argv[1:]))' "$tmp/r0.json" "$tmp/r1.json")
got=$("${as[@]}" "$bindir/psql" -At -h 127.0.0.1 -p "$port" -U opperf -d cli -c 'SELECT COUNT(*) FROM records' 2>&1)
[ "$got" = "$((2 * n_rec))" ] || fail "records in PostgreSQL: $got, expected $((2 * n_rec))"
bad=$("${as[@]}" "$bindir/psql" -At -h 127.0.0.1 -p "$port" -U opperf -d cli \
  -c "SELECT COUNT(*) FROM counters WHERE (status IN ('counted','scaled','partial')) <> (per_call IS NOT NULL)" 2>&1)
[ "$bad" = 0 ] || fail "counters: a value exactly when counted ($bad rows differ)"
# a refused connection: exit 2 with one line, nothing measured
expect 2 "store postgresql://127.0.0.1:1/x" -- run relu "${q[@]}" --store postgresql://127.0.0.1:1/x
# no password in messages
expect 2 "postgresql://127.0.0.1:1/x" -- history --store postgresql://u:secret@127.0.0.1:1/x
grep -q secret "$tmp/err" && fail "the password appears in the message"

exit $((fails > 0))

#!/usr/bin/env bash
# One upload, timed, for comparing two builds side by side: starts BINARY
# on a fresh database, uploads FILE to MODULE with `Prefer: wait`, and
# prints the wall time of upload + validation, the server's own time for
# the stage (the wall minus it is the upload's part), the server's CPU and
# the whole machine's (PostgreSQL's backends included) in clock ticks.
#
#   bash bench/once.sh BINARY sqlite|postgres FILE [MODULE] [CONTENT-TYPE] [perf]
#
# e.g. alternating two builds on the harness's 1M-row orders file:
#   for b in /tmp/old/importgate target/release/importgate; do
#     bash bench/once.sh $b sqlite "$TMPDIR/importgate-bench/orders-1000000-v0-b0.csv"; done
# With `perf` last, `perf record -a` runs during the upload (perf.data in
# the work directory; per thread: perf script -F tid,comm | sort | uniq -c);
# IMPORTGATE_ONCE_PERF_ARGS replaces its `-a -F 999`, e.g. with
# '-a -F 499 --call-graph dwarf,16384' to see who calls what.
# With IMPORTGATE_ONCE_PREFILL=CSV (a file with the module's columns as its
# header), the module's table is first filled with that file by the
# database's own loader, untimed: FILE then times an upsert validation,
# e.g. the harness's orders-1000000-v1-b0.csv over its v0, uploaded with
# `?mode=upsert` (the upload's query is IMPORTGATE_ONCE_QUERY, if set).
set -euo pipefail
bin=$(realpath "$1"); backend=$2; file=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
prefill=${IMPORTGATE_ONCE_PREFILL:+$(realpath "$IMPORTGATE_ONCE_PREFILL")}
module=${4:-orders}; type=${5:-text/csv}; perf=${6:-}
pg=${IMPORTGATE_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
dir=${TMPDIR:-/tmp}/importgate-once
mkdir -p "$dir" && cd "$dir"
rm -f once.db* ledger-*
cat > once.toml <<EOF
uploads_per_minute = 0
requests_per_minute = 0
ledger_key_file = "$dir/ledger-key"
ledger_checkpoint_file = "$dir/ledger-checkpoint"
EOF
if [ "$backend" = postgres ]; then
  psql "$pg/postgres" -qc "DROP DATABASE IF EXISTS igonce" -qc "CREATE DATABASE igonce" >/dev/null
  db="$pg/igonce"
else
  db="sqlite://$dir/once.db"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --database "$db" --config once.toml >server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
until curl -s "http://127.0.0.1:$port/healthz" >/dev/null; do sleep 0.1; done
if [ -n "$prefill" ]; then
  table=$(grep -A1 "^key = \"$module\"$" "$here/../src/catalog/modules.toml" | sed -n 's/^table = "\(.*\)"/\1/p')
  columns=$(head -1 "$prefill")
  if [ "$backend" = postgres ]; then
    psql "$db" -qc "\\copy $table ($columns) FROM '$prefill' CSV HEADER" -qc "ANALYZE $table"
  else
    sqlite3 "$dir/once.db" ".import --csv '$prefill' prefill" \
      "INSERT INTO $table ($columns) SELECT $columns FROM prefill" "DROP TABLE prefill"
  fi
fi
key=$("$bin" keys create --name "Budi Santoso" --role submitter --database "$db" --config once.toml | tail -n1)
ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
if [ -n "$perf" ]; then perf record ${IMPORTGATE_ONCE_PERF_ARGS:--a -F 999} -o perf.data 2>/dev/null & recorder=$!; fi
t0=$(ticks); b0=$(busy); start=$(date +%s.%N)
curl -s -X POST "http://127.0.0.1:$port/api/import/$module?${IMPORTGATE_ONCE_QUERY:-}" -H "X-API-Key: $key" \
  -H "Content-Type: $type" -H 'Prefer: wait=600' --data-binary "@$file" -o job.json
end=$(date +%s.%N); t1=$(ticks); b1=$(busy)
if [ -n "$perf" ]; then kill -INT $recorder; wait $recorder || true; fi
state=$(python3 -c 'import json; j = json.load(open("job.json")); print(j["state"], j["counts"]["rows"], "rows")')
# The server's own time for the stage; the wall minus it is the upload's part.
stage=$(sed 's/\x1b\[[0-9;]*m//g' server.log | sed -n 's/.*stage finished stage="validate".* ms=\([0-9]*\).*/\1/p' | head -n1)
echo "validate $(echo "$end - $start" | bc) s (stage ${stage:-?} ms), server $((t1 - t0)) ticks, machine $((b1 - b0)) ticks: $state"

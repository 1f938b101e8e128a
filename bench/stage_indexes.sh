#!/usr/bin/env bash
# What the stage tables' (job, row_no) and (job, nkey) indexes cost a validation:
# the same 1M-row orders CSV uploaded to a fresh database with them and with
# them dropped, side by side, on SQLite and PostgreSQL (BENCHMARKS.md, Revisions).
# Needs a release build and the file the harness writes:
#   cargo build --release && target/release/examples/bench --rows 1000000 --runs 1 --modules orders --backends sqlite
set -e
BIN="$(cd "$(dirname "$0")/.." && pwd)/target/release/importgate"
FILE=/tmp/importgate-bench/orders-1000000-v0-b0.csv
run() { # backend drop
  local backend=$1 drop=$2 dir=$(mktemp -d) db
  if [ $backend = sqlite ]; then db="sqlite://$dir/ig.db"; else psql postgres://postgres@127.0.0.1:5432/postgres -qc "DROP DATABASE IF EXISTS igidx" -c "CREATE DATABASE igidx" >/dev/null; db="postgres://postgres@127.0.0.1:5432/igidx"; fi
  printf 'ledger_key_file = "%s/key"\nledger_checkpoint_file = "%s/cp"\n' $dir $dir > $dir/cfg.toml
  $BIN serve --listen 127.0.0.1:18555 --database "$db" --config $dir/cfg.toml > $dir/log 2>&1 &
  local pid=$!
  for i in $(seq 1 100); do curl -sf http://127.0.0.1:18555/healthz >/dev/null && break; sleep 0.1; done
  local key=$($BIN keys create --name Budi --role submitter --database "$db" --config $dir/cfg.toml 2>/dev/null | tail -1)
  if [ $drop = yes ]; then
    if [ $backend = sqlite ]; then sqlite3 $dir/ig.db 'DROP INDEX ig_stage_orders_row; DROP INDEX ig_stage_orders_nkey;'; else psql $db -qc 'DROP INDEX ig_stage_orders_row' -c 'DROP INDEX ig_stage_orders_nkey'; fi
  fi
  local t0=$(date +%s.%N)
  local id=$(curl -s -X POST "http://127.0.0.1:18555/api/import/orders?on_error=skip" -H "X-API-Key: $key" -H 'Content-Type: text/csv' --data-binary @$FILE | grep -o '"id":"job_[A-Z0-9]*"' | head -1 | cut -d'"' -f4)
  while :; do s=$(curl -s http://127.0.0.1:18555/api/jobs/$id -H "X-API-Key: $key" | grep -o '"state":"[a-z_]*"'); case $s in *validating*) sleep 0.05;; *) break;; esac; done
  local t1=$(date +%s.%N)
  echo "$backend drop_indexes=$drop $(echo "$t1 - $t0" | bc) s $s"
  kill $pid; wait $pid 2>/dev/null || true; rm -rf $dir
}
for r in 1 2; do for b in sqlite postgres; do run $b no; run $b yes; done; done

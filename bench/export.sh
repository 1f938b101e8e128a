#!/usr/bin/env bash
# The CSV export of N products (API.md section 15), timed against the
# database's own CSV of the same rows in natural-key order (`sqlite3 -csv`,
# PostgreSQL's `\copy (SELECT … ORDER BY sku) TO`): starts BINARY on a
# fresh database, fills `uc_products` with the database's own loader,
# then ROUNDS (default 3) rounds of the database's CSV and the export (curl's time to
# the first byte and to the last), then one XLSX export (rows a second)
# and the server's peak resident memory (VmHWM): run it at 100000 and at
# 1000000 rows to see that memory does not grow with the rows.
#
#   bash bench/export.sh BINARY sqlite|postgres [ROWS]
#
# With PERF=1, one export runs under `perf record -g` of the server
# instead (perf.data in the work directory).
set -euo pipefail
bin=$(realpath "$1"); backend=$2; rows=${3:-1000000}
dir=${TMPDIR:-/tmp}/importgate-export; mkdir -p "$dir"; cd "$dir"; rm -f b.db* ledger-*
pg=${IMPORTGATE_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
cat > b.toml <<EOT
uploads_per_minute = 0
requests_per_minute = 0
ledger_key_file = "$dir/ledger-key"
ledger_checkpoint_file = "$dir/ledger-checkpoint"
EOT
if [ ! -f "prefill-$rows.csv" ]; then
python3 - "$rows" > "prefill-$rows.csv" <<'PY'
import sys
n=int(sys.argv[1])
print("sku,product_name,category,unit,cost_idr,price_idr,stock_qty")
for i in range(n):
    j=(i*7919)%n
    print(f"P-{j:07d},Product {j} name,cat{j%17},pcs,{1000+j},{2000+j},{j%500}")
PY
fi
if [ "$backend" = postgres ]; then
  psql "$pg/postgres" -qc "DROP DATABASE IF EXISTS igxb" -qc "CREATE DATABASE igxb" >/dev/null
  db="$pg/igxb"
else
  db="sqlite://$dir/b.db"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --database "$db" --config b.toml >server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
until curl -s "http://127.0.0.1:$port/healthz" >/dev/null; do sleep 0.1; done
cols=$(head -1 "prefill-$rows.csv")
if [ "$backend" = postgres ]; then
  psql "$db" -qc "\\copy uc_products ($cols) FROM 'prefill-$rows.csv' CSV HEADER" -qc "VACUUM ANALYZE uc_products"
else
  sqlite3 "$dir/b.db" ".import --csv 'prefill-$rows.csv' prefill" \
    "INSERT INTO uc_products ($cols) SELECT $cols FROM prefill" "DROP TABLE prefill"
fi
key=$("$bin" keys create --name "Budi Santoso" --role submitter --database "$db" --config b.toml | tail -n1)
all="sku,product_name,category,print_method,material,unit,cost_idr,price_idr,stock_qty"
if [ -n "${PERF:-}" ]; then
  perf record -F 999 -g -p $server -o perf.data 2>/dev/null & rec=$!
  sleep 0.5
  curl -s -H "X-API-Key: $key" "http://127.0.0.1:$port/api/modules/products/export" -o out.csv \
    -w "export first byte %{time_starttransfer} s, whole %{time_total} s\n"
  kill -INT $rec; wait $rec || true
  exit 0
fi
for i in $(seq "${ROUNDS:-3}"); do
  s=$(date +%s.%N)
  if [ "$backend" = postgres ]; then
    psql "$db" -qc "\\copy (SELECT $all FROM uc_products ORDER BY sku) TO 'db.csv' CSV HEADER"
  else
    sqlite3 -csv -header "$dir/b.db" "SELECT $all FROM uc_products ORDER BY sku" > db.csv
  fi
  e=$(date +%s.%N)
  echo "database $(echo "$e - $s" | bc) s"
  curl -s -H "X-API-Key: $key" "http://127.0.0.1:$port/api/modules/products/export" -o out.csv \
    -w "export first byte %{time_starttransfer} s, whole %{time_total} s\n"
done
wc -l db.csv out.csv
head -3 out.csv
curl -s -H "X-API-Key: $key" "http://127.0.0.1:$port/api/modules/products/export?format=xlsx" -o out.xlsx \
  -w "xlsx export whole %{time_total} s, %{size_download} bytes\n" | tee xlsx.txt
python3 -c "import sys; t=float(open('xlsx.txt').read().split()[3]); print(f'xlsx {int(sys.argv[1])/t:,.0f} rows/s')" "$rows"
# The server's peak resident memory over its whole run (every export).
grep VmHWM "/proc/$server/status"

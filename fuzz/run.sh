#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (docs/fuzzing.md):
#
#   bash fuzz/run.sh [seconds-per-target] [target ...]
#
# Each target starts from its seeds (fuzz/seeds/<target>), the corpus of
# earlier runs on this machine (fuzz/corpus/<target>, not committed) and the
# inputs earlier runs failed on (tests/fuzz-regressions/<target>). A new
# crash, out-of-memory or timeout input is copied to
# tests/fuzz-regressions/<target>/, where the normal test suite replays it,
# and the script exits 1 once every target has run.
set -euo pipefail
cd "$(dirname "$0")"

# All in one function, parsed before it runs: editing this file during a
# long run cannot change what the run does.
main() {
  SECONDS_PER_TARGET="${1:-60}"
  shift || true
  ALL=(csv decode xlsx xls ods json ndjson values)
  TARGETS=("$@")
  [ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")

  # The largest input each target tries. The text formats go past the 64 KiB
  # the CSV reader sniffs (its two paths join there); workbooks need room for
  # a zip or OLE2 container; a cell for the value parsers is short.
  max_len() {
    case "$1" in
      csv | decode) echo 80000 ;;
      xlsx | xls | ods) echo 65536 ;;
      json | ndjson) echo 32768 ;;
      values) echo 512 ;;
    esac
  }

  # The most memory a target's process may hold. An XLS sheet within the
  # 4,194,304-cell limit may cost calamine up to ~230 MB (its grid of every
  # cell), on top of what earlier inputs left in the allocator.
  rss_limit() {
    case "$1" in
      xls) echo 1024 ;;
      *) echo 512 ;;
    esac
  }

  # One line from libFuzzer's final statistics: runs, coverage, memory.
  summary() {
    awk -F': *' '
      /^stat::number_of_executed_units/ { runs = $NF }
      /^stat::new_units_added/ { added = $NF }
      /^stat::peak_rss_mb/ { rss = $NF }
      /DONE +cov: / { for (i = 1; i <= NF; i++) if ($i ~ /cov$/) { split($(i + 1), c, " "); cov = c[1] } }
      END { printf "   %s runs, coverage %s, %s new inputs kept, peak RSS %s MB\n", runs, cov, added, rss }
    ' "$1"
  }

  if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
  fi

  # libFuzzer's instrumentation flags are unstable rustc flags. This machine
  # has the stable toolchain only; RUSTC_BOOTSTRAP lets it take them.
  # No sanitizer: the code under test is safe Rust, where AddressSanitizer
  # finds little and costs half the speed. Panics, hangs and memory growth
  # are what the targets look for. -O: debug assertions and overflow checks
  # come from fuzz/Cargo.toml's release profile (all crates but calamine).
  export RUSTC_BOOTSTRAP=1
  BUILD=(-O --sanitizer none)
  # FUZZ_TARGET_DIR: where the instrumented build goes (default fuzz/target).
  if [ -n "${FUZZ_TARGET_DIR:-}" ]; then
    BUILD+=(--target-dir "$FUZZ_TARGET_DIR")
  fi

  echo "== building the fuzz targets"
  build_start=$(date +%s)
  cargo fuzz build "${BUILD[@]}"
  echo "built in $(($(date +%s) - build_start)) s"

  failed=()
  for target in "${TARGETS[@]}"; do
    corpus="corpus/$target"
    regressions="../tests/fuzz-regressions/$target"
    artifacts="artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    inputs=("$corpus" "seeds/$target")
    [ -d "$regressions" ] && inputs+=("$regressions")
    before=$(find "$artifacts" -type f | sort)
    echo "== $target: ${SECONDS_PER_TARGET} s"
    status=0
    # One process on one core: the machine is shared. -timeout is per input,
    # -rss_limit_mb bounds the whole process (memory must not follow the file).
    # libFuzzer prints a line for every input it keeps, thousands a run:
    # they go to logs/<target>.log, and the run's own log shows one line a
    # target, or the log's end when the target failed.
    log="logs/$target.log"
    mkdir -p logs
    cargo fuzz run "${BUILD[@]}" "$target" "${inputs[@]}" -- \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb="$(rss_limit "$target")" \
      -max_len="$(max_len "$target")" -print_final_stats=1 >"$log" 2>&1 || status=$?
    summary "$log"
    after=$(find "$artifacts" -type f | sort)
    new=$(comm -13 <(echo "$before") <(echo "$after") | grep -E '/(crash|oom|timeout|leak)-' || true)
    if [ -n "$new" ] || [ "$status" -ne 0 ]; then
      failed+=("$target")
      echo "!! $target exited $status; the end of fuzz/$log:"
      tail -n 60 "$log"
      mkdir -p "$regressions"
      for file in $new; do
        cp "$file" "$regressions/"
        echo "!! $target: $(basename "$file") kept in tests/fuzz-regressions/$target/"
      done
    fi
  done

  if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing found failures in: ${failed[*]} (inputs in tests/fuzz-regressions/; fix them, see docs/fuzzing.md)" >&2
    exit 1
  fi
  echo "fuzzing: no failures in ${TARGETS[*]}"
}

main "$@"

#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang++, ASan + UBSan) in build-fuzz/ and runs each on its seed
# corpus for a while; fails when any run finds a crash, a sanitizer report, a leak, a timeout or an
# out-of-memory input (docs/fuzzing.md). Usage:
#   tests/fuzz/run.sh [--seconds S] [--max-len BYTES] [--parallel N] [--build DIR] [--structure] [CORPUS...]
# CORPUS names a folder of tests/fuzz/corpus/ (default: all). Defaults: 20 s per corpus, inputs up
# to 65536 bytes, 2 runs at a time, build folder build-fuzz. --structure adds the structure-aware
# mutator (harness/structure_mutator.hpp: JSON edits, extreme numbers) to libFuzzer's own.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=20 max_len=65536 parallel=2 build=build-fuzz structure=0
corpora=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --max-len) max_len=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --structure) structure=1; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
    *) corpora+=("$1"); shift ;;
  esac
done
[[ ${#corpora[@]} -gt 0 ]] || mapfile -t corpora < <(ls tests/fuzz/corpus)
if [[ $structure == 1 ]]; then export SYNCPLAN_FUZZ_STRUCTURE=1; else unset SYNCPLAN_FUZZ_STRUCTURE; fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
start=$(date +%s)
mkdir -p "$build"
cmake -S tests/fuzz/harness -B "$build" -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" >"$build/build.log" 2>&1 || { tail -40 "$build/build.log" >&2; exit 1; }
echo "fuzz: harnesses built in $(( $(date +%s) - start )) s"

# The harness of a corpus: its name, except the two nccl-tests corpora that share one reader.
harness_of() { case "$1" in nccl_tests_*) echo nccl_tests ;; *) echo "$1" ;; esac; }

run_one() {
  local name=$1 work="$build/work/$1" log="$build/logs/$1.log"
  mkdir -p "$work" "$build/crashes" "$build/logs"
  # New inputs go to the first folder (build-fuzz/work/NAME); the seeds are only read.
  # -timeout: an input that takes over 10 s is a hang; -rss_limit_mb: over 2 GiB is a failure.
  if "$build/fuzz_$(harness_of "$name")" "$work" "tests/fuzz/corpus/$name" -max_total_time="$seconds" \
       -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$build/crashes/$name-" >"$log" 2>&1; then
    echo "fuzz: $name ok: $(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$log" | cut -d' ' -f2) runs," \
         "$(grep -o 'cov: [0-9]*' "$log" | tail -1)"
  else
    echo "fuzz: $name FAILED (log $log, input in $build/crashes/):" >&2
    grep -m5 -E 'ERROR|fuzz:|SUMMARY|terminate|what\(\)' "$log" >&2 || tail -20 "$log" >&2
    return 1
  fi
}

failed=0 running=0
for name in "${corpora[@]}"; do
  [[ -d "tests/fuzz/corpus/$name" ]] || { echo "run.sh: no corpus tests/fuzz/corpus/$name" >&2; exit 2; }
  run_one "$name" &
  running=$((running + 1))
  if [[ $running -ge $parallel ]]; then wait -n || failed=1; running=$((running - 1)); fi
done
while [[ $running -gt 0 ]]; do wait -n || failed=1; running=$((running - 1)); done
echo "fuzz: ${#corpora[@]} corpora in $(( $(date +%s) - start )) s, $( [[ $failed -eq 0 ]] && echo 'no failures' || echo 'FAILURES')"
exit $failed

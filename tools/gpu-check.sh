#!/usr/bin/env bash
# The GPU check (issue 5, docs/profiler.md section 7): on a machine with an NVIDIA GPU (H100/H200,
# sm_90), the CUDA toolkit, cmake and g++, build syncplan with CUDA, compare every CUDA kernel with
# the CPU reference, profile GPT-2 small at batch 8 x 1024 in bf16 with the GEMM-ceiling check,
# sweep a one-rank NCCL all-reduce, and plan and simulate the measured profile. Everything goes
# under one folder: $OUT when set, else out/gpu-check. It stops at the first failing step and says
# which. Runs from the repository root in about 3-5 minutes (most of it the build).
#
# usage: tools/gpu-check.sh [--dry-run]
#   --dry-run   check the tools and headers, then print every step's command without running it
#
# Nothing is downloaded: the build needs the Debian packages of tools/install-deps.sh (headers of
# nlohmann-json, CLI11, Catch2 v2, Eigen 3, Boost, and Open MPI); the first step lists what is missing.
set -euo pipefail

dry_run=0
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=1 ;;
  -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu-check.sh: unknown argument '$1' (usage: tools/gpu-check.sh [--dry-run])" >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
out="${OUT:-$repo/out/gpu-check}"
build="$repo/build-gpu"
syncplan="$build/bin/syncplan"
cluster="$repo/data/clusters/8nodes-1gpu-10gbps.json"
profile="$out/gpt2-bf16-b8-s1024.profile.json"
mkdir -p "$out"
log="$out/gpu-check.log"
: >"$log"
started=$(date +%s)

current_step="(none)"
fail() {
  echo "gpu-check: FAILED at step: $current_step${1:+ ($1)}; log in $log" | tee -a "$log" >&2
  exit 1
}
trap 'fail "command exited with status $?"' ERR

step() {
  current_step="$1"
  echo "== $(date +%H:%M:%S) step: $1" | tee -a "$log"
}

# Runs a command, its output both on the terminal and in the log (and in a file of its own when
# the first argument is --to FILE). Under --dry-run it only prints the command.
run() {
  local to=""
  if [[ "$1" == "--to" ]]; then to="$2"; shift 2; fi
  echo "\$ $*" | tee -a "$log"
  ((dry_run)) && return 0
  if [[ -n "$to" ]]; then "$@" 2>&1 | tee -a "$log" "$to"; else "$@" 2>&1 | tee -a "$log"; fi
}

# --- 1. what the build needs ----------------------------------------------------------------------
step "1/8 tools and headers (nothing can be downloaded here)"
missing=()
for tool in cmake g++ nvcc; do
  command -v "$tool" >/dev/null || missing+=("program '$tool'")
done
if command -v g++ >/dev/null; then
  # Where CMake's find modules would look: Eigen's and Debian's MPI folders, the MPI wrapper's own
  # flags when there is one, the CUDA toolkit beside nvcc.
  multiarch="$(g++ -print-multiarch 2>/dev/null || true)"
  include_flags=(-I/usr/include/eigen3 -I"/usr/lib/${multiarch:-x86_64-linux-gnu}/openmpi/include"
                 -I"/usr/include/${multiarch:-x86_64-linux-gnu}/mpich")
  if command -v mpicxx >/dev/null; then
    read -r -a wrapper_flags <<<"$(mpicxx --showme:compile 2>/dev/null || mpicxx -compile_info 2>/dev/null || true)"
    for flag in "${wrapper_flags[@]}"; do
      if [[ "$flag" == -I* ]]; then include_flags+=("$flag"); fi
    done
  fi
  if command -v nvcc >/dev/null; then include_flags+=(-I"$(dirname "$(dirname "$(command -v nvcc)")")/include"); fi
  # header : the Debian package that provides it
  for pair in "nlohmann/json.hpp:nlohmann-json3-dev" "CLI/CLI.hpp:libcli11-dev" "catch2/catch.hpp:catch2 (v2)" \
              "Eigen/Core:libeigen3-dev" "boost/graph/adjacency_list.hpp:libboost-graph-dev" \
              "mpi.h:libopenmpi-dev" "nccl.h:libnccl-dev (or NCCL in the CUDA toolkit)" \
              "cublas_v2.h:the CUDA toolkit's cuBLAS"; do
    header="${pair%%:*}" package="${pair#*:}"
    if ! echo "#include <$header>" | g++ -std=c++20 -E -x c++ - "${include_flags[@]}" >/dev/null 2>&1; then
      missing+=("header <$header> ($package)")
    fi
  done
fi
if ((${#missing[@]})); then
  printf 'gpu-check: missing: %s\n' "${missing[@]}" | tee -a "$log" >&2
  echo "gpu-check: install them (tools/install-deps.sh lists the Debian packages) and rerun" | tee -a "$log" >&2
  fail "${#missing[@]} missing"
fi
echo "ok: cmake, g++, nvcc and every header found" | tee -a "$log"
if ((dry_run == 0)); then
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | tee -a "$log" | grep -q '^GPU '; then
    fail "no GPU visible: nvidia-smi -L lists none"
  fi
  # A driver runs programs of its own CUDA major version and older only (NVIDIA's compatibility
  # rules): a CUDA 13 toolkit needs a CUDA 13 driver (R580 or later).
  driver_cuda="$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9]*' | grep -o '[0-9]*$' || true)"
  toolkit_cuda="$(nvcc --version | grep -o 'release [0-9]*' | grep -o '[0-9]*$' || true)"
  echo "driver supports CUDA ${driver_cuda:-?}, toolkit is CUDA ${toolkit_cuda:-?}" | tee -a "$log"
  if [[ -n "$driver_cuda" && -n "$toolkit_cuda" ]] && ((driver_cuda < toolkit_cuda)); then
    fail "the driver supports CUDA $driver_cuda only: programs built with the CUDA $toolkit_cuda toolkit cannot run"
  fi
fi

# --- 2. build -------------------------------------------------------------------------------------
step "2/8 configure and build with CUDA for sm_90 into build-gpu"
run --to "$out/configure.txt" cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSYNCPLAN_WITH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DSYNCPLAN_BUILD_BENCHMARKS=OFF
# Only what the check runs: the command, the CUDA-versus-CPU test and the CPU kernel tests.
run --to "$out/build.txt" cmake --build "$build" -j "$(nproc)" --target syncplan test_cuda_kernels test_kernels

# --- 3. the kernels -------------------------------------------------------------------------------
step "3/8 GPU tests: every CUDA kernel against the CPU reference (fp32, bf16), the CUDA profiler"
# Run directly, not through ctest: here a skip (exit 77: no device) fails the check like a failure.
# Every GPU step has a time limit (timeout exits 124): a hang fails the check instead of holding it.
run --to "$out/test_cuda_kernels.txt" timeout 300 "$build/tests/kernels/test_cuda_kernels"
if ((dry_run == 0)) && ! grep -q '^PASS' "$out/test_cuda_kernels.txt"; then
  fail "test_cuda_kernels did not print PASS (see $out/test_cuda_kernels.txt)"
fi
run --to "$out/test_kernels.txt" "$build/tests/kernels/test_kernels"

# --- 4. GPT-2 small on the GPU --------------------------------------------------------------------
step "4/8 profile GPT-2 small, batch 8 x seq 1024, bf16, on the GPU, with the GEMM-ceiling check"
# --gemm-ceiling measures square cuBLAS GEMMs (n = 4096, 8192, 16384) in bf16 and exits 1 if any
# layer's FLOP/s (the spec's FLOPs over its median time) exceeds the best of them.
run --to "$out/profile.txt" timeout 300 "$syncplan" profile --model gpt2 --batch 8 --seq 1024 --dtype bf16 --device cuda \
  --gemm-ceiling --report "$out/gpt2-bf16-b8-s1024.report.json" -o "$profile"

# --- 5. the same on the roofline, for comparison --------------------------------------------------
step "5/8 the roofline estimate for the H200 at the same size (an estimate, for comparison)"
run --to "$out/estimate.txt" "$syncplan" profile --model gpt2 --batch 8 --seq 1024 --dtype bf16 --device estimate \
  --gpu H200-SXM -o "$out/gpt2-bf16-b8-s1024.estimate.json"

# --- 6. NCCL ----------------------------------------------------------------------------------------
step "6/8 one-rank NCCL all-reduce sweep (profile-link --backend nccl)"
if command -v mpirun >/dev/null; then
  mpirun_flags=()  # Open MPI refuses to start as root without this; other MPIs do not know it
  if mpirun --version 2>&1 | grep -q "Open MPI"; then mpirun_flags=(--allow-run-as-root); fi
  run --to "$out/profile-link.txt" timeout 180 mpirun "${mpirun_flags[@]}" -np 1 "$syncplan" profile-link \
    --backend nccl -o "$out/link-nccl-1rank.json"
else
  echo "mpirun not found: running as an MPI singleton (one rank)" | tee -a "$log"
  run --to "$out/profile-link.txt" timeout 180 "$syncplan" profile-link --backend nccl -o "$out/link-nccl-1rank.json"
fi

# --- 7. plan and simulate ---------------------------------------------------------------------------
step "7/8 plan and simulate the measured profile on 8 workers at 10 Gbit/s"
run --to "$out/plan.txt" "$syncplan" plan --profile "$profile" --cluster "$cluster" --period 10 \
  -o "$out/plan.json" --report "$out/plan-report.json"
run --to "$out/simulate.txt" "$syncplan" simulate --profile "$profile" --plan "$out/plan.json" --cluster "$cluster" \
  -o "$out/simulate.json"

# --- 8. summary -------------------------------------------------------------------------------------
step "8/8 summary"
if ((dry_run == 0)); then
  {
    echo "gpu-check passed in $(($(date +%s) - started)) s on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
    grep -h -E '^(device:|PASS|FAIL)' "$out/test_cuda_kernels.txt" || true
    grep -h -E '^(spread|GEMM ceiling|ceiling check|gpt2:)' "$out/profile.txt" || true
    grep -h -E '^gpt2:' "$out/estimate.txt" | sed 's/^/roofline: /' || true
    grep -h -E '^# alpha-beta fit' "$out/profile-link.txt" || true
    echo "measured profile: $profile (copy it to data/profiles/ to ship it; its source names the GPU)"
  } | tee "$out/summary.txt" | tee -a "$log"
fi
trap - ERR
echo "gpu-check: done; everything is in $out" | tee -a "$log"

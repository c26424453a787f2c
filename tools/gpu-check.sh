#!/usr/bin/env bash
# The GPU check (docs/profiler.md section 7): on a machine with an NVIDIA GPU (H100/H200,
# sm_90), the CUDA toolkit, cmake and g++, build syncplan with CUDA, compare every CUDA kernel with
# the CPU reference, profile GPT-2 small at batch 8 x 1024 in bf16 with the GEMM-ceiling check,
# sweep a one-rank NCCL all-reduce, test the NCCL communicator, plan and simulate the measured
# profile, and train GPT-2 small on the GPU (run --device cuda, one rank, NCCL) against the DES
# prediction from an fp32 profile of the same size (compare), and, when a python3 has a CUDA torch,
# the PyTorch executor with NCCL (syncplan.torch_train, step 6d). Everything goes
# under one folder: $OUT when set, else out/gpu-check, in at most 8 files (summary.txt first).
# A failing step is recorded and the steps that do not need it still run; the exit status is 1
# when any step failed. About 3-4 minutes on an H200 machine with 16 cores, most of it the build.
#
# usage: tools/gpu-check.sh [--dry-run]
#   --dry-run   check the tools and headers, then print every step's command; runs and writes nothing
#
# Nothing is downloaded: the build needs the Debian packages of tools/install-deps.sh (headers of
# nlohmann-json, CLI11, Catch2 v2, Eigen 3, and Open MPI); the first step lists what is missing.
# SYNCPLAN_DEPS_PREFIX (folders separated by ':') names extra install prefixes to search for them;
# .gpu-deps/syncplan-deps.tar.gz (made by tools/gpu-deps.sh, carried to the machine) is used too.
# GPU_CHECK_BUILD names the build folder (default: build-gpu in the repository).
set -uo pipefail  # not -e: each step's status is recorded, and the steps that do not need it go on

dry_run=0
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=1 ;;
  -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu-check.sh: unknown argument '$1' (usage: tools/gpu-check.sh [--dry-run])" >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo" || exit 1
out="${OUT:-$repo/out/gpu-check}"
build="${GPU_CHECK_BUILD:-$repo/build-gpu}"
syncplan="$build/bin/syncplan"
test_cuda="$build/tests/kernels/test_cuda_kernels"
test_cpu="$build/tests/kernels/test_kernels"
cluster="$repo/data/clusters/8nodes-1gpu-10gbps.json"
name="gpt2-bf16-b8-s1024"
profile="$out/$name.profile.json"
report="$out/$name.report.json"
link="$out/link-nccl-1rank.json"
# A device run sends back at most 8 files from $OUT, so it gets 7: summary.txt, gpu-check.log,
# test_cuda_kernels.txt, the three above and more.tar.gz, which packs this folder at the end.
more="$build/gpu-check-more"
jobs=16  # the H200 machine's cores
started=$(date +%s)

if ((dry_run)); then
  log=/dev/null
else
  mkdir -p "$out" "$more" || exit 1
  rm -f "$more"/* "$out/more.tar.gz"
  log="$out/gpu-check.log"
  : >"$log"
  : >"$out/summary.txt"
fi

# --- bookkeeping ----------------------------------------------------------------------------------
declare -A verdict=()  # step id -> ok | FAILED | skipped
failed_steps=()

# Writes one line to the terminal and the log (and, with --summary, to summary.txt).
say() {
  local to_summary=0
  if [[ "$1" == "--summary" ]]; then to_summary=1; shift; fi
  echo "$*" | tee -a "$log"
  if ((to_summary && !dry_run)); then echo "$*" >>"$out/summary.txt"; fi
}

step() { say "== $(date +%H:%M:%S) step $1: $2"; }

# record ID ok|FAILED|skipped [DETAIL]: the step's verdict, in summary.txt as soon as it is known.
record() {
  verdict[$1]="$2"
  [[ "$2" == FAILED ]] && failed_steps+=("$1")
  say --summary "$(printf '%-9s %-8s %s' "$1" "$2" "${3:-}")"
}

# needs ID...: true when every step named has passed; else records the calling step as skipped.
needs() {
  local self="$1"; shift
  ((dry_run)) && return 0  # a dry run prints every command
  for id in "$@"; do
    if [[ "${verdict[$id]:-}" != ok ]]; then
      record "$self" skipped "(needs step $id, which is ${verdict[$id]:-not run})"
      return 1
    fi
  done
}

# run [--to FILE] COMMAND...: prints the command, runs it with its output on the terminal, in the
# log and in FILE; returns its exit status (timeout's 124 when it ran out of time). Under --dry-run
# it only prints the command.
run() {
  local to=/dev/null
  if [[ "$1" == "--to" ]]; then to="$2"; shift 2; fi
  say "\$ $*"
  ((dry_run)) && return 0
  "$@" 2>&1 | tee -a "$log" "$to"
  return "${PIPESTATUS[0]}"
}

# check ID STATUS [DETAIL]: records ok for status 0, else FAILED with the status and DETAIL.
check() {
  local id="$1" status="$2" detail="${3:-}"
  if ((dry_run)); then record "$id" printed "(dry run: not run)"; return 0; fi
  if ((status == 0)); then record "$id" ok "$detail"; return 0; fi
  local why="exit status $status"
  ((status == 124)) && why="timed out"
  record "$id" FAILED "($why) $detail"
  return 1
}

finish() {
  trap - EXIT
  if ((dry_run)); then
    say "gpu-check: dry run: nothing was run or written. A real run writes summary.txt, gpu-check.log," \
        "test_cuda_kernels.txt, $name.profile.json, $name.report.json, $(basename "$link") and more.tar.gz" \
        "(every other output) under $out"
  else
    tar -czf "$out/more.tar.gz" -C "$more" . 2>>"$log" || say "gpu-check: could not pack $more"
    local seconds=$(($(date +%s) - started))
    if ((${#failed_steps[@]})); then
      say --summary "gpu-check: FAILED steps: ${failed_steps[*]} (in $seconds s); every output is under $out"
    else
      say --summary "gpu-check: passed in $seconds s; every output is under $out"
    fi
  fi
  ((${#failed_steps[@]} == 0))
  exit
}
trap finish EXIT
trap 'say "gpu-check: interrupted"; failed_steps+=(interrupted); exit 1' INT TERM

# --- 1. what the build needs ----------------------------------------------------------------------
step 1 "tools and headers (nothing can be downloaded here), and the GPU"
# A carried bundle (tools/gpu-deps.sh) is unpacked into the build folder and searched too; its
# Open MPI is used only when the machine has no MPI compiler wrapper of its own.
bundle="$repo/.gpu-deps/syncplan-deps.tar.gz"
if [[ -f "$bundle" ]] && ((dry_run == 0)); then
  arch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
  bundled="$build/deps/usr"
  if ! { rm -rf "$build/deps" && mkdir -p "$build" && tar -xzf "$bundle" -C "$build"; }; then
    say "deps: could not unpack $bundle"
  else
    say "deps: $bundle unpacked into $build/deps"
    SYNCPLAN_DEPS_PREFIX="${SYNCPLAN_DEPS_PREFIX:+$SYNCPLAN_DEPS_PREFIX:}$bundled"
    if ! command -v mpicxx >/dev/null && ! command -v mpicc >/dev/null; then
      # Debian's Open MPI and PMIx find their plugins and data below the relocated prefix; of the
      # shared libraries they need, only those the machine lacks are taken from the bundle.
      pmix="$bundled/lib/$arch/pmix2"
      export OPAL_PREFIX="$bundled" PMIX_INSTALL_PREFIX="$pmix" PMIX_PKGDATADIR="$pmix/share/pmix" \
             PMIX_PKGLIBDIR="$pmix/lib/pmix"
      known_libraries="$(ldconfig -p 2>/dev/null | awk '{print $1}')"
      for library in "$bundled/lib/$arch/syncplan-extra"/*; do
        if grep -qxF "$(basename "$library")" <<<"$known_libraries"; then rm -f "$library"; fi
      done
      export LD_LIBRARY_PATH="$bundled/lib/$arch:$bundled/lib/$arch/syncplan-extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      lacking="$(find "$bundled/lib/$arch/syncplan-extra" -type f -printf '%f ')"
      say "deps: Open MPI from the bundle (OPAL_PREFIX=$OPAL_PREFIX); libraries the machine lacks:" \
          "${lacking:-none}"
    fi
  fi
fi
if [[ -f "$bundle" ]] && ((dry_run)); then
  say "deps: a dry run does not unpack $bundle (a real run does): headers only it holds show as missing"
fi
IFS=: read -r -a deps_prefixes <<<"${SYNCPLAN_DEPS_PREFIX:-}"
for prefix in "${deps_prefixes[@]}"; do
  [[ -d "$prefix/bin" ]] && PATH="$prefix/bin:$PATH"
done
missing=()
for tool in cmake g++ nvcc; do
  command -v "$tool" >/dev/null || missing+=("program '$tool'")
done
nccl_flags=()
if command -v g++ >/dev/null; then
  # Where CMake's find modules would look: Eigen's and Debian's MPI folders, the MPI wrapper's own
  # flags when there is one, the CUDA toolkit beside nvcc, and SYNCPLAN_DEPS_PREFIX.
  multiarch="$(g++ -print-multiarch 2>/dev/null || true)"
  include_flags=(-I/usr/include/eigen3 -I"/usr/lib/${multiarch:-x86_64-linux-gnu}/openmpi/include"
                 -I"/usr/include/${multiarch:-x86_64-linux-gnu}/mpich")
  for prefix in "${deps_prefixes[@]}"; do include_flags+=(-I"$prefix/include" -I"$prefix/include/eigen3"); done
  if command -v mpicxx >/dev/null; then
    read -r -a wrapper_flags <<<"$(mpicxx --showme:compile 2>/dev/null || mpicxx -compile_info 2>/dev/null || true)"
    for flag in "${wrapper_flags[@]}"; do
      if [[ "$flag" == -I* ]]; then include_flags+=("$flag"); fi
    done
  fi
  if command -v nvcc >/dev/null; then include_flags+=(-I"$(dirname "$(dirname "$(command -v nvcc)")")/include"); fi
  header_found() { echo "#include <$1>" | g++ -std=c++20 -E -x c++ - "${include_flags[@]}" >/dev/null 2>&1; }
  # NCCL outside the toolkit: the nvidia-nccl wheel of the machine's Python (PyTorch's), given to
  # CMake by path (its libnccl.so.2 has no unversioned name for find_library).
  if ! header_found nccl.h && command -v python3 >/dev/null; then
    read -r nccl_header nccl_library < <(python3 - 2>/dev/null <<'EOF'
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
for base in nvidia.__path__:
    headers = glob.glob(os.path.join(base, "**", "nccl.h"), recursive=True)
    libraries = sorted(glob.glob(os.path.join(base, "**", "libnccl.so*"), recursive=True))
    if headers and libraries:
        print(os.path.dirname(headers[0]), libraries[0])
        break
EOF
    ) || true
    if [[ -n "${nccl_header:-}" && -n "${nccl_library:-}" ]]; then
      include_flags+=(-I"$nccl_header")
      nccl_flags=(-DSYNCPLAN_NCCL_INCLUDE_DIR="$nccl_header" -DSYNCPLAN_NCCL_LIBRARY="$nccl_library")
      say "NCCL from Python's nvidia packages: $nccl_header, $nccl_library"
    fi
  fi
  # header : the Debian package that provides it
  for pair in "nlohmann/json.hpp:nlohmann-json3-dev" "CLI/CLI.hpp:libcli11-dev" "catch2/catch.hpp:catch2 (v2)" \
              "Eigen/Core:libeigen3-dev" \
              "mpi.h:libopenmpi-dev" "nccl.h:libnccl-dev (or NCCL in the CUDA toolkit)" \
              "cublas_v2.h:the CUDA toolkit's cuBLAS"; do
    header="${pair%%:*}" package="${pair#*:}"
    header_found "$header" || missing+=("header <$header> ($package)")
  done
fi
if ((${#missing[@]})); then
  for item in "${missing[@]}"; do say --summary "gpu-check: missing: $item"; done
  say "gpu-check: install them (tools/install-deps.sh lists the Debian packages) or name their prefix" \
      "in SYNCPLAN_DEPS_PREFIX, and rerun"
  record tools FAILED "(${#missing[@]} missing)"
else
  record tools ok "cmake, g++, nvcc and every header"
fi
# The GPU steps below fail by themselves without a GPU; this only says why up front.
if ((dry_run == 0)); then
  # grep reads all of nvidia-smi's list (no -q: an early exit would break the pipe under pipefail).
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>&1 | tee -a "$log" | grep '^GPU ' >/dev/null; then
    record gpu FAILED "(nvidia-smi -L lists no GPU)"
  else
    # A driver runs programs of its own CUDA major version and older only (NVIDIA's compatibility
    # rules): a CUDA 13 toolkit needs a CUDA 13 driver (R580 or later).
    driver_cuda="$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9]*' | grep -o '[0-9]*$' || true)"
    toolkit_cuda="$(nvcc --version 2>/dev/null | grep -o 'release [0-9]*' | grep -o '[0-9]*$' || true)"
    if [[ -n "$driver_cuda" && -n "$toolkit_cuda" ]] && ((driver_cuda < toolkit_cuda)); then
      record gpu FAILED "(the driver supports CUDA $driver_cuda only: the CUDA $toolkit_cuda toolkit's programs cannot run)"
    else
      record gpu ok "driver for CUDA ${driver_cuda:-?}, toolkit CUDA ${toolkit_cuda:-?}"
    fi
  fi
fi

# --- 2. build -------------------------------------------------------------------------------------
step 2 "configure with CUDA for sm_90 into $build, build syncplan and the CUDA test"
if needs configure tools; then
  prefix_path="${SYNCPLAN_DEPS_PREFIX:-}"
  run --to "$more/configure.txt" timeout -k 10 180 cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DSYNCPLAN_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DSYNCPLAN_BUILD_BENCHMARKS=OFF \
    ${prefix_path:+-DCMAKE_PREFIX_PATH="${prefix_path//:/;}"} "${nccl_flags[@]}"
  check configure $?
fi
if needs build configure; then
  run --to "$more/build.txt" timeout -k 10 400 cmake --build "$build" -j "$jobs" --target syncplan test_cuda_kernels test_comm_nccl
  check build $?
fi
if ((dry_run == 0)) && [[ "${verdict[build]:-}" == ok ]] && grep -q 'syncplan: NCCL .*NOTFOUND' "$more/configure.txt"; then
  say "note: CMake found no NCCL; profile-link --backend nccl will say it was built without it"
fi

# --- 3. the kernels -------------------------------------------------------------------------------
step 3 "every CUDA kernel against the CPU reference (fp32, bf16), then the CUDA profiler on tiny-gpt"
if needs kernels build; then
  # Run directly, not through ctest: here a skip (exit 77: no device) fails the check like a failure.
  run --to "$out/test_cuda_kernels.txt" timeout -k 10 180 "$test_cuda"
  status=$?
  if ((status == 0 && !dry_run)) && ! grep -q '^PASS' "$out/test_cuda_kernels.txt"; then status=1; fi
  check kernels "$status" "$(grep -h -E '^(PASS|FAIL)' "$out/test_cuda_kernels.txt" 2>/dev/null | tail -1)"
fi

# --- 4. GPT-2 small on the GPU --------------------------------------------------------------------
step 4 "profile GPT-2 small, batch 8 x seq 1024, bf16, on the GPU, with the GEMM-ceiling check"
# --gemm-ceiling measures square cuBLAS GEMMs (n = 4096, 8192, 16384) in bf16 and exits 1, writing
# nothing, if any layer's FLOP/s (the spec's FLOPs over its median time) exceeds the best of them.
if needs profile build; then
  run --to "$more/profile.txt" timeout -k 10 240 "$syncplan" profile --model gpt2 --batch 8 --seq 1024 --dtype bf16 \
    --device cuda --gemm-ceiling --report "$report" -o "$profile"
  check profile $? "$(grep -h '^ceiling check' "$more/profile.txt" 2>/dev/null)"
fi
if [[ "${verdict[profile]:-}" == FAILED ]] && grep -q 'gemm-ceiling' "$more/profile.txt" 2>/dev/null; then
  # Only the ceiling failed: measure again without it, so that the numbers can be looked at.
  # These files are named "unchecked" and are not the profile to ship.
  profile="$out/$name.unchecked.profile.json"
  report="$out/$name.unchecked.report.json"
  run --to "$more/profile-unchecked.txt" timeout -k 10 240 "$syncplan" profile --model gpt2 --batch 8 --seq 1024 \
    --dtype bf16 --device cuda --report "$report" -o "$profile"
  check profile-unchecked $? "(for diagnosis: the ceiling check failed)"
fi

# --- 5. NCCL ----------------------------------------------------------------------------------------
step 5 "one-rank NCCL all-reduce sweep (profile-link --backend nccl), and the NCCL communicator test"
# one_rank SECONDS COMMAND...: COMMAND as one MPI rank (mpirun -np 1, or an MPI singleton without
# mpirun), ended after SECONDS (exit 124).
one_rank() {
  local seconds="$1"
  shift
  if command -v mpirun >/dev/null; then
    local flags=()  # Open MPI refuses to start as root without this; other MPIs do not know it
    if mpirun --version 2>&1 | grep 'Open MPI' >/dev/null; then flags=(--allow-run-as-root); fi
    timeout -k 10 "$seconds" mpirun "${flags[@]}" -np 1 "$@"
  else
    timeout -k 10 "$seconds" "$@"
  fi
}
command -v mpirun >/dev/null || say "mpirun not found: one-rank steps run as an MPI singleton"
if needs nccl build; then
  run --to "$more/profile-link.txt" one_rank 150 "$syncplan" profile-link --backend nccl -o "$link"
  check nccl $? "$(grep -h '^# alpha-beta fit' "$more/profile-link.txt" 2>/dev/null)"
fi

# The communicator's NCCL backend through the GPU backend library: buckets averaged, abort.
if needs comm-nccl build; then
  run --to "$more/test_comm_nccl.txt" env SYNCPLAN_GPU_BACKEND="$build/lib/libsyncplan_gpu.so" \
    timeout -k 10 120 "$build/tests/link/test_comm_nccl"
  status=$?
  if ((status == 0 && !dry_run)) && ! grep -q '^PASS' "$more/test_comm_nccl.txt"; then status=1; fi
  check comm-nccl "$status" "$(grep -h -E '^(PASS|FAIL|skipped)' "$more/test_comm_nccl.txt" 2>/dev/null | tail -1)"
fi

# --- 6. plan and simulate ---------------------------------------------------------------------------
step 6 "plan and simulate the measured profile on 8 workers at 10 Gbit/s"
measured="profile"  # the step whose profile to plan with: the checked one, else the unchecked one
[[ "${verdict[profile]:-}" != ok && "${verdict[profile-unchecked]:-}" == ok ]] && measured="profile-unchecked"
if needs plan "$measured"; then
  run --to "$more/plan.txt" timeout -k 10 120 "$syncplan" plan --profile "$profile" --cluster "$cluster" --period 10 \
    -o "$more/plan.json" --report "$more/plan-report.json"
  check plan $?
fi
if needs simulate plan; then
  run --to "$more/simulate.txt" timeout -k 10 120 "$syncplan" simulate --profile "$profile" --plan "$more/plan.json" \
    --cluster "$cluster" -o "$more/simulate.json"
  check simulate $?
fi

# --- 6b. train on the GPU ----------------------------------------------------------------------------
step 6b "train GPT-2 small on the GPU (run --device cuda, one rank, NCCL, fp32, 4 x 256) against the DES prediction"
train_name="gpt2-fp32-b4-s256"
train_profile="$more/$train_name.profile.json"
if needs train-profile build; then
  run --to "$more/train-profile.txt" timeout -k 10 240 "$syncplan" profile --model gpt2 --batch 4 --seq 256 --dtype fp32 \
    --device cuda -o "$train_profile"
  check train-profile $?
fi
if needs train build; then
  # Bytes as tokens: the repository's own prose is text enough (a step needs 4 x 256 + 1 bytes).
  ((dry_run)) || cat "$repo"/README.md "$repo"/docs/*.md >"$more/train-text.txt"
  run --to "$more/train.txt" one_rank 240 "$syncplan" run --device cuda --model gpt2 --strategy ssgd \
    --period 1 --data "$more/train-text.txt" --batch 4 --seq 256 --iterations 30 --seed 1 --lr 3e-4 \
    --log "$more/train.jsonl" --trace "$more/train.trace.json"
  check train $? "$(grep -h '^run:' "$more/train.txt" 2>/dev/null)"
fi
if needs train-compare train train-profile; then
  # One worker: the all-reduce over a group of one costs nothing, so the prediction is the profile's
  # compute (forward, backward, update) as the DES times it.
  ((dry_run)) || printf '%s\n' '{"format": "syncplan.cluster/v1", "name": "one GPU", "workers": 1, "workers_per_node": 1,' \
    '"intra_node": {"bandwidth_Gbps": 3600, "latency_us": 5}, "inter_node": {"bandwidth_Gbps": 10, "latency_us": 50},' \
    '"allreduce": "ring"}' >"$more/one-gpu.json"
  run --to "$more/train-simulate.txt" timeout -k 10 120 "$syncplan" simulate --profile "$train_profile" --strategy ssgd \
    --period 1 --cluster "$more/one-gpu.json" --iterations 30 -o "$more/train.des.json" &&
    run --to "$more/train-compare.txt" timeout -k 10 120 "$syncplan" compare "$more/train.des.json" "$more/train.jsonl" \
      --skip 3 --json "$more/train.compare.json"
  check train-compare $? "$(grep -h '^MAPE' "$more/train-compare.txt" 2>/dev/null | head -1)"
fi

# --- 6c. a delayed-averaging plan on the GPU --------------------------------------------------------
step 6c "train with a delayed-averaging plan on the GPU (snapshots and corrections on the device, docs/runtime.md section 11)"
if needs train-delayed train; then
  # One rank: the all-reduce of a group of one returns the snapshot, so every correction adds
  # m - s = 0; the step runs the device's copies, the ready event and the correction kernel, and
  # the log must list the applied syncs and a finite loss.
  run --to "$more/train-delayed-plan.txt" timeout -k 10 120 "$syncplan" plan --model gpt2 --batch 4 --seq 256 \
    --cluster "$cluster" --period 4 --max-delay 2 -o "$more/train-delayed.plan.json" &&
    run --to "$more/train-delayed.txt" one_rank 240 "$syncplan" run --device cuda --model gpt2 \
      --plan "$more/train-delayed.plan.json" --data "$more/train-text.txt" --batch 4 --seq 256 --iterations 8 --seed 1 \
      --lr 3e-4 --log "$more/train-delayed.jsonl" &&
    { ((dry_run)) || python3 -c 'import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
applied = sum(len(l.get("applied", [])) for l in lines)
assert len(lines) == 8 and applied > 0 and all(math.isfinite(l["loss"]) for l in lines), (len(lines), applied)
first, last = lines[0]["loss"], lines[-1]["loss"]
print(f"delayed plan on the GPU: {applied} corrections applied over 8 steps, loss {first:.4f} -> {last:.4f}")' \
      "$more/train-delayed.jsonl" >"$more/train-delayed-check.txt" 2>&1; }
  status=$?
  ((dry_run)) || tee -a "$log" <"$more/train-delayed-check.txt"
  check train-delayed "$status" "$(tail -n 1 "$more/train-delayed-check.txt" 2>/dev/null)"
fi

# --- 6d. the PyTorch executor on the GPU -------------------------------------------------------------
step 6d "the PyTorch example on the GPU: python -m syncplan.torch_train with NCCL (PlanExecutor on CUDA tensors)"
# The first python3 whose torch is a CUDA build that sees the GPU; without one the step says so
# plainly and is skipped (the C++ runtime's NCCL steps above do not need torch).
torch_python=""
for candidate in python3 /usr/bin/python3; do
  ((dry_run)) && { torch_python=python3; break; }
  if command -v "$candidate" >/dev/null &&
     "$candidate" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    torch_python=$candidate
    break
  fi
done
if [[ -z $torch_python ]]; then
  record torch-gpu skipped "(no python3 here has a CUDA build of torch that sees a GPU; the PyTorch example needs one)"
elif needs torch-gpu build; then
  # Two ranks when there are two GPUs, else one (NCCL needs a GPU per rank); plsgd-even H = 2 so
  # that some iterations sync and some do not; the log must have every rank's lines, finite losses.
  torch_ranks=1
  ((dry_run)) || { (($(nvidia-smi -L 2>/dev/null | wc -l) >= 2)) && torch_ranks=2; }
  ((dry_run)) || cat "$repo"/README.md "$repo"/docs/*.md >"$more/torch-text.txt"
  run --to "$more/torch-gpu.txt" timeout -k 10 300 env PYTHONPATH="$repo/python" "$torch_python" -m syncplan.torch_train \
    --backend nccl --nproc "$torch_ranks" --strategy plsgd-even --period 2 --iterations 8 --batch 4 --seq 32 \
    --data "$more/torch-text.txt" --log "$more/torch-gpu.jsonl" --trace "$more/torch-gpu.trace.json" &&
    run --to "$more/torch-gpu-loss.txt" timeout -k 10 60 "$syncplan" report --loss "nccl=$more/torch-gpu.jsonl" \
      --svg "$more/torch-gpu-loss.svg" &&
    { ((dry_run)) || "$torch_python" -c 'import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ranks = int(sys.argv[2])
assert len(lines) == 8 * ranks and all(l["loss"] is not None and math.isfinite(l["loss"]) for l in lines), len(lines)
first, last = lines[0]["loss"], lines[-1]["loss"]
print(f"torch_train on the GPU (NCCL, {ranks} rank(s)): 8 steps, loss {first:.4f} -> {last:.4f}")' \
      "$more/torch-gpu.jsonl" "$torch_ranks" >"$more/torch-gpu-check.txt" 2>&1; }
  status=$?
  ((dry_run)) || tee -a "$log" <"$more/torch-gpu-check.txt"
  check torch-gpu "$status" "$(tail -n 1 "$more/torch-gpu-check.txt" 2>/dev/null)"
fi

# --- 7. the roofline, for comparison ----------------------------------------------------------------
step 7 "the roofline estimate for the H200 at the same size (an estimate, for comparison)"
if needs estimate build; then
  run --to "$more/estimate.txt" timeout -k 10 120 "$syncplan" profile --model gpt2 --batch 8 --seq 1024 --dtype bf16 \
    --device estimate --gpu H200-SXM -o "$more/$name.estimate.json"
  check estimate $?
fi

# --- 8. the CPU kernel tests (last: they need no GPU) ----------------------------------------------
step 8 "the CPU kernel tests (test_kernels)"
if needs cpu-tests configure; then
  run --to "$more/build-test_kernels.txt" timeout -k 10 300 cmake --build "$build" -j "$jobs" --target test_kernels &&
    run --to "$more/test_kernels.txt" timeout -k 10 180 "$test_cpu"
  check cpu-tests $?
fi

# --- summary ----------------------------------------------------------------------------------------
if ((dry_run == 0)); then
  {
    echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    grep -h -E '^(device:|PASS|FAIL)' "$out/test_cuda_kernels.txt" 2>/dev/null
    grep -h -E '^(spread|GEMM ceiling|ceiling check|gpt2:)' "$more/profile.txt" "$more/profile-unchecked.txt" 2>/dev/null
    grep -h -E '^gpt2:' "$more/estimate.txt" 2>/dev/null | sed 's/^/roofline: /'
    grep -h -E '^# alpha-beta fit' "$more/profile-link.txt" 2>/dev/null
    grep -h -E '^run:' "$more/train.txt" 2>/dev/null
    grep -h -E '^MAPE' "$more/train-compare.txt" 2>/dev/null | sed 's/^/GPU run against the DES: /'
    [[ -f "$profile" ]] && echo "measured profile: $profile (copy it to data/profiles/ to ship it, unless it is" \
      "the unchecked one; its source names the GPU)"
  } | tee -a "$out/summary.txt" "$log"
fi

#!/usr/bin/env bash
# The GPU libraries are loaded only when a command needs a GPU (docs/comm.md section 4):
# tests/kernels/CMakeLists.txt registers each case with CTest.
#
# usage: gpu_backend_cases.sh CASE SYNCPLAN PYTHON WORKDIR [GPU_BACKEND_LIBRARY]
#   ldd             ldd syncplan lists none of libcudart, libcublas, libcublasLt, libnccl (77 without
#                   ldd); when the backend library was built, ldd of it does list libcudart and libcublas
#                   (the check sees them where they are linked)
#   version_memory  syncplan --version peaks under 40 MB (40,000,000 bytes) of resident memory
#                   (/usr/bin/time's maximum RSS); prints the share of Open MPI's libraries, loaded alone
#   auto_fallback   with no backend library ($SYNCPLAN_GPU_BACKEND naming a missing file), the
#                   commands that would use a GPU when asked "auto" quietly do without: profile-link
#                   --backend auto runs MPI, plan --model --device auto estimates
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4" library="${5:-}"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
gpu_libraries='lib(cudart|cublas|cublasLt|nccl)\.so'

case "$case_name" in
  ldd)
    command -v ldd >/dev/null || { echo "SKIP: no ldd"; exit 77; }
    ldd "$syncplan" | tee ldd.txt
    if grep -E "$gpu_libraries" ldd.txt; then echo "FAIL: syncplan links GPU libraries (above)"; exit 1; fi
    if [[ -n "$library" ]]; then
      ldd "$library" | tee ldd-backend.txt
      grep -q 'libcudart\.so' ldd-backend.txt && grep -q 'libcublas\.so' ldd-backend.txt ||
        { echo "FAIL: the backend library $library does not list libcudart and libcublas: is ldd's output read right?"; exit 1; }
      if grep -q 'libmpi\.so' ldd-backend.txt; then echo "FAIL: the backend library needs libmpi"; exit 1; fi
    fi
    ;;
  version_memory)
    # /usr/bin/time's maximum resident set size (KiB), forked from a small process; without it, the
    # child's ru_maxrss seen from Python, an upper bound (a fork starts with Python's own pages).
    if [[ -x /usr/bin/time ]]; then
      peak_kib=$(/usr/bin/time -f '%M' "$syncplan" --version 2>&1 >/dev/null | tail -1)
      how="/usr/bin/time -f %M"
    else
      peak_kib=$("$python" -c 'import resource, subprocess, sys; subprocess.run([sys.argv[1], "--version"], check=True, stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$syncplan")
      how="ru_maxrss from Python (an upper bound)"
    fi
    echo "syncplan --version: peak resident memory ${peak_kib} KiB ($how); limit 40,000,000 bytes"
    "$python" - <<'EOF_PY' || true
import ctypes, resource
def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()
before = resident_bytes()
try:
    ctypes.CDLL("libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
    print(f"Open MPI's libmpi and the libraries it needs, loaded (not initialized): {(resident_bytes() - before) / 1e6:.1f} MB")
except OSError as error:
    print(f"(libmpi.so.40 not loadable here: {error})")
EOF_PY
    ((peak_kib * 1024 < 40000000)) || { echo "FAIL: over 40 MB"; exit 1; }
    ;;
  auto_fallback)
    export SYNCPLAN_GPU_BACKEND="$workdir/missing/libsyncplan_gpu.so"
    "$syncplan" profile-link --backend auto -b 8 -e 64K -w 2 -n 10 -o link.json | tee link.txt
    grep -q "backend mpi (auto: no GPU backend on rank 0)" link.txt || { echo "FAIL: profile-link auto"; exit 1; }
    repo_data="$(cd "$here/../../data" && pwd)"
    SYNCPLAN_DATA_DIR="$here/../cli/data/datadir_round" "$syncplan" plan --model "$repo_data/models/tiny-gpt.json" \
      --batch 1 --seq 8 --gpu round --link "$here/../cli/data/link_8workers.json" --period 2 -o plan.json | tee plan.txt
    grep -q "roofline estimate for round, not a measurement" plan.txt || { echo "FAIL: plan --model auto"; exit 1; }
    ;;
  *) echo "gpu_backend_cases.sh: unknown case '$case_name'" >&2; exit 1 ;;
esac
echo "ok: $case_name"

#!/usr/bin/env bash
# The link commands run as users run them (tests/link/CMakeLists.txt registers each case):
#
# usage: link_cases.sh CASE SYNCPLAN PYTHON WORKDIR [MPIEXEC]
#   import_text       import nccl-tests on allreduce_8gpu.log: 8 ranks, alpha 30 us, beta 5e-11 s/B
#   import_json       import nccl-tests on allreduce_16gpu.json: 16 ranks, alpha 45 us, beta 1/12e9 s/B
#   mpi_np2           mpirun -np 2 profile-link --backend mpi, 8 B .. 4 MiB: the file's samples
#   singleton         profile-link without mpirun: 1 rank, busbw 0, and the note that says so
#   nccl_no_gpu       --backend nccl without a GPU: exit 2 naming the missing device (77 with a GPU)
#   nccl_run          mpirun -np 1 profile-link --backend nccl on a GPU (77 without one)
#   too_large         sizes whose host buffers exceed the memory (an address-space limit here): exit 2
#                     naming --max-bytes before anything is allocated; a size past 64 bits: exit 2
#   mismatched_np2    two ranks started with different options: exit 2 naming the rank, no hang, no file
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4" mpiexec="${5:-mpirun}"
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/data"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
check() { "$python" "$here/check_link.py" "$@"; }
run() { echo "\$ ${*}"; "$@"; }
# Open MPI refuses root without these, and 2 ranks on fewer cores without --oversubscribe.
mpi() { run "$mpiexec" --allow-run-as-root --oversubscribe "$@"; }
sizes_8_to_64k="8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536"
sizes_8_to_4m=$("$python" -c 'print(",".join(str(8 << i) for i in range(20)))')
sizes_8_to_128m=$("$python" -c 'print(",".join(str(8 << i) for i in range(25)))')
# expect_refused MESSAGE COMMAND...: COMMAND exits 2 (not 124: a hang ended by a timeout) with
# MESSAGE on stderr (kept in err.txt), and no link.json is written.
expect_refused() {
  local message="$1" rc
  shift
  set +e
  "$@" 2>err.txt
  rc=$?
  set -e
  cat err.txt
  [[ $rc -eq 2 ]] || { echo "FAIL: exit code $rc, expected 2 (124: it hung)"; exit 1; }
  grep -qF -- "$message" err.txt || { echo "FAIL: stderr does not say: $message"; exit 1; }
  [[ ! -e link.json ]] || { echo "FAIL: link.json written"; exit 1; }
}
has_gpu() { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }

case "$case_name" in
  import_text)
    run "$syncplan" import nccl-tests "$data/allreduce_8gpu.log" -o link.json | tee out.txt
    grep -q "25 sizes of an all-reduce across 8 ranks" out.txt
    check link.json --workers 8 --source imported:nccl-tests --sizes "$sizes_8_to_128m" --alpha-us 30 --beta 5e-11
    ;;
  import_json)
    run "$syncplan" import nccl-tests "$data/allreduce_16gpu.json" -o link.json
    check link.json --workers 16 --source imported:nccl-tests --sizes "$sizes_8_to_128m" --alpha-us 45 \
      --beta 8.333333333333333e-11
    ;;
  mpi_np2)
    # Up to 4 MiB: four decades of sizes, so that the fit's beta stays positive when a busy machine
    # (two ranks polling on two shared cores) adds milliseconds of noise to the small sizes.
    mpi -np 2 "$syncplan" profile-link --backend mpi -b 8 -e 4M -w 2 -n 10 -o link.json | tee out.txt
    grep -q "across 2 ranks, backend mpi" out.txt
    check link.json --workers 2 --source measured:mpi --sizes "$sizes_8_to_4m"
    ;;
  singleton)
    run "$syncplan" profile-link --backend mpi -b 8 -e 64K -w 2 -n 10 -o link.json | tee out.txt
    grep -q "note: 1 rank: the all-reduce is a local copy (busbw 0)" out.txt
    check link.json --workers 1 --source measured:mpi --sizes "$sizes_8_to_64k"
    "$python" -c 'import json,sys; s=json.load(open("link.json"))["samples"]; sys.exit(any(x["busbw_GBps"] for x in s))'
    ;;
  nccl_no_gpu)
    if has_gpu; then echo "SKIP: a GPU is visible (nccl_run covers it)"; exit 77; fi
    expect_refused "backend nccl: rank 0 has no visible CUDA device" "$syncplan" profile-link --backend nccl -e 64K -o link.json
    ;;
  nccl_run)
    if ! has_gpu; then echo "SKIP: no GPU visible (nvidia-smi -L lists none)"; exit 77; fi
    mpi -np 1 "$syncplan" profile-link --backend nccl -b 8 -e 64M -o link.json | tee out.txt
    grep -q "backend nccl" out.txt
    check link.json --workers 1 --source measured:nccl \
      --sizes "$("$python" -c 'print(",".join(str(8 << i) for i in range(24)))')"
    ;;
  too_large)
    # 2 GiB sweeps need about 6 GiB of buffers (3 per rank): more than a 3 GB address space holds.
    expect_refused "--max-bytes 2147483648: the MPI sweep needs about 6" \
      bash -c 'ulimit -v 3000000 && exec "$0" profile-link --backend mpi -b 2G -e 2G -o link.json' "$syncplan"
    [[ $(wc -l <err.txt) -eq 1 ]] || { echo "FAIL: more than one line"; exit 1; }
    expect_refused "--max-bytes: '999999999999G' is more bytes than a 64-bit count holds" \
      "$syncplan" profile-link --backend mpi -e 999999999999G -o link.json
    # A plain number of 13 or more digits is a size too (it was "expected bytes as a whole number"):
    # 2^50 + 1 bytes is past the limit, 2^64 past a 64-bit count.
    expect_refused "--max-bytes: '1125899906842625' is 1125899906842625 bytes, more than the limit" \
      "$syncplan" profile-link --backend mpi -e 1125899906842625 -o link.json
    expect_refused "--max-bytes: '18446744073709551616' is more bytes than a 64-bit count holds" \
      "$syncplan" profile-link --backend mpi -e 18446744073709551616 -o link.json
    ;;
  mismatched_np2)
    # MPMD launch: rank 1 gets other --iters and --min-bytes than rank 0. Each would sweep its own
    # sizes and wait in a collective forever; the options are compared first.
    expect_refused "profile-link: rank 1 was started with other options than rank 0" \
      timeout -k 5 60 "$mpiexec" --allow-run-as-root --oversubscribe \
      -np 1 "$syncplan" profile-link --backend mpi -e 64K -n 5 -o link.json : \
      -np 1 "$syncplan" profile-link --backend mpi -b 16 -e 64K -n 6 -o link.json
    ;;
  *) echo "link_cases.sh: unknown case '$case_name'" >&2; exit 1 ;;
esac
echo "ok: $case_name"

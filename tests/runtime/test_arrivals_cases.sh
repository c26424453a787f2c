#!/usr/bin/env bash
# Runs test_arrivals_mpi under mpirun (tests/runtime/CMakeLists.txt registers each case) and
# checks its lines across ranks: arrive, missing, checkpoint and fingerprint must exit 0 with
# their "ok:" lines on every rank (the refusals word for word the same on every rank); signal must
# end within 15 s, not 0, with rank 0's one fatal-signal line.
#
# usage: test_arrivals_cases.sh arrive|missing|checkpoint|fingerprint|signal RANKS PROGRAM WORKDIR [MPIEXEC]
set -uo pipefail

mode="$1" ranks="$2" program="$3" workdir="$4" mpiexec="${5:-mpirun}"
mkdir -p "$workdir"
# Open MPI refuses root without these, and more ranks than cores without --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
started=$(date +%s)
output="$("$mpiexec" --oversubscribe -np "$ranks" "$program" "$mode" "$workdir/checkpoints" 2>&1)"
rc=$?
elapsed=$(($(date +%s) - started))
echo "$output"
echo "exit status $rc after ${elapsed} s"
die() { echo "FAIL: $*"; exit 1; }
! grep -q '^FAIL' <<<"$output" || die "a rank failed"

# Every rank printed the same text after "ok: rank R: " for the refusal WHAT (one line each).
same_refusal() {
  local what="$1" lines distinct
  lines=$(grep "^ok: rank [0-9]*: refused $what: " <<<"$output")
  [[ $(grep -c . <<<"$lines") -eq $ranks ]] || die "'$what': $(grep -c . <<<"$lines") ranks refused, expected $ranks"
  distinct=$(sed 's/^ok: rank [0-9]*: //' <<<"$lines" | sort -u)
  [[ $(grep -c . <<<"$distinct") -eq 1 ]] || die "'$what': the ranks' messages differ"
  echo "$distinct"
}

case "$mode" in
  arrive)
    [[ $rc -eq 0 ]] || die "exit status $rc"
    [[ $(grep -c '^ok: rank [0-9]*: 100 buckets, every rank arrived, 0 requests' <<<"$output") -eq $ranks ]] ||
      die "expected every rank's ok line"
    ;;
  missing)
    [[ $rc -eq 0 ]] || die "exit status $rc"
    last=$((ranks - 1))
    expected="bucket 3: rank $last did not arrive"
    [[ $(grep -c "^ok: rank [0-9]*: $expected" <<<"$output") -eq $last ]] || die "expected '$expected' on the $last other ranks"
    [[ $(grep -c '^ok: rank [0-9]*: released in' <<<"$output") -eq $ranks ]] || die "a rank did not release its requests"
    ;;
  checkpoint)
    [[ $rc -eq 0 ]] || die "exit status $rc"
    [[ $(grep -c '^ok: rank [0-9]*: resumed step 30 bit for bit' <<<"$output") -eq $ranks ]] || die "a rank did not resume"
    grep -q 'from another plan' <<<"$(same_refusal 'another plan')" || die "another plan: not named"
    grep -q 'no such checkpoint folder' <<<"$(same_refusal 'a missing folder')" || die "missing folder: not named"
    grep -q "rank-$((ranks - 1)).ckpt: corrupt (checksum" <<<"$(same_refusal 'a corrupt file')" || die "corrupt file: not named"
    grep -q "rank-$((ranks - 1)).ckpt: cannot write file" <<<"$(same_refusal 'a failed save')" || die "failed save: not named"
    ;;
  fingerprint)
    [[ $rc -eq 0 ]] || die "exit status $rc"
    [[ $(grep -c '^ok: rank [0-9]*: the same run passes' <<<"$output") -eq $ranks ]] || die "the matching check did not pass everywhere"
    message=$(same_refusal 'different runs')
    if [[ $ranks -eq 2 ]]; then
      expected="rank 1's plan differs from rank 0's"
    else
      expected="rank 1's plan differs from rank 0's; rank 3's plan and model differ from rank 0's"
    fi
    [[ "$message" == "refused different runs: $expected" ]] || die "message '$message', expected '$expected'"
    ;;
  signal)
    [[ $rc -ne 0 ]] || die "exit status 0: rank 1 was killed"
    ((elapsed < 15)) || die "took $elapsed s: rank 0 was not ended by mpirun's SIGTERM"
    expected='test_arrivals_mpi: rank 0: ended by a signal in iteration 5, bucket lm_head (another rank failed or mpirun stopped the job)'
    [[ $(grep -cxF "$expected" <<<"$output") -eq 1 ]] || die "expected rank 0's line once: $expected"
    ;;
  *) echo "test_arrivals_cases.sh: unknown case '$mode'" >&2; exit 2 ;;
esac
echo "ok: $mode on $ranks ranks"

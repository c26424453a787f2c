#!/usr/bin/env bash
# The fault tests against `syncplan run` under mpirun: kill -9 of one rank
# mid-run and SIGSTOP of one rank mid-run must each end every other rank (and mpirun) within
# --timeout-s + 10 s, each surviving rank printing exactly one "syncplan run: rank R: ..." line
# (the stopped rank's peers naming it: it did not arrive at the bucket, or arrived and then gave
# no sign of life, comm/arrivals.hpp); a run stopped after a
# checkpoint and resumed must end with rank files bit-identical to an uninterrupted run's (the
# whole file: parameters, AdamW moments, step, cursor and RNG state). `selftest` checks this
# script's own helpers on a plain `mpirun ... sleep` job (no syncplan needed), and measures what
# the fault tests rely on: mpirun ends the other ranks about a second after one is killed, and
# waits forever for a stopped one.
#
# `setup_stall` runs one `syncplan run` rank beside a rank that joins MPI and then stalls (the
# test_arrivals_mpi given in STALL_PARTNER, mode stall): the syncplan rank must give up at its
# setup's first agreement within --timeout-s + 10 s, with one line.
#
# usage: fault_cases.sh selftest|kill9|sigstop|resume|setup_stall SYNCPLAN WORKDIR [MPIEXEC]
#   RANKS (environment, default 2): ranks of the job; the victim is rank 1.
#   STALL_PARTNER (environment, setup_stall only): the test_arrivals_mpi program.
#   FAULT_SCHEDULE (environment, default "--strategy wfbp --period 1"): what the runs execute,
#     e.g. "--plan delayed.json" (no spaces in the path; the period must divide 20, the steps
#     checkpointed).
set -uo pipefail

case_name="$1" syncplan="$2" workdir="$3" mpiexec="${4:-mpirun}"
ranks="${RANKS:-2}" victim=1 timeout_s=5
data="$(cd "$(dirname "$0")" && pwd)/data/training.txt"  # the project's own text, in the checkout
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$workdir" && mkdir -p "$workdir" || exit 1

job=""  # the mpirun started in the background
cleanup() {
  # Leave nothing behind: a stopped rank is continued, then every process of the job killed.
  [[ -n "$job" ]] || return 0
  local pid
  for pid in $(job_ranks "$job"); do kill -CONT "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null; done
  kill -KILL "$job" 2>/dev/null
  wait "$job" 2>/dev/null
}
trap cleanup EXIT
die() { echo "FAIL: $*"; [[ -f "$workdir/stderr" ]] && { echo "--- stderr:"; tail -30 "$workdir/stderr"; }; exit 1; }
now_ms() { date +%s%3N; }

# The descendants of process $1 (children first), one pid per line.
descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}

# The pid of rank $2 of the mpirun job $1: the descendant whose environment has
# OMPI_COMM_WORLD_RANK=$2 (Open MPI sets it in every rank); empty when there is none (yet).
rank_pid() {
  local job_pid="$1" rank="$2" pid
  for pid in $(descendants "$job_pid"); do
    { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" || continue
    echo "$pid"
    return 0
  done
  return 0
}

# Every rank's pid of job $1, one per line.
job_ranks() {
  local rank
  for ((rank = 0; rank < ranks; ++rank)); do rank_pid "$1" "$rank"; done
}

# Waits until file $1 exists or $2 seconds passed; fails (returns 1) at the limit or when the
# job ended first.
wait_for_file() {
  local path="$1" limit_ms=$(($2 * 1000)) start
  start=$(now_ms)
  until [[ -e "$path" ]]; do
    (($(now_ms) - start > limit_ms)) && return 1
    [[ -n "$job" ]] && ! kill -0 "$job" 2>/dev/null && return 1
    sleep 0.05
  done
}

# Waits for the job to end, at most $1 seconds; sets job_rc (its exit status) and job_took (the
# seconds it took, 3 decimals). Returns 1, leaving the job running, when it did not end in time.
job_rc="" job_took=""
wait_for_job_end() {
  local limit_ms=$(($1 * 1000)) start elapsed
  start=$(now_ms)
  while kill -0 "$job" 2>/dev/null; do
    # An ended but unreaped job is still there for kill -0: a zombie has ended.
    [[ "$(awk '{print $3}' "/proc/$job/stat" 2>/dev/null)" == Z ]] && break
    (($(now_ms) - start > limit_ms)) && return 1
    sleep 0.05
  done
  wait "$job"
  job_rc=$?
  elapsed=$(($(now_ms) - start))
  job_took=$(printf '%d.%03d' $((elapsed / 1000)) $((elapsed % 1000)))
  job=""
}

# Starts `mpirun -np RANKS "$@"` in the background, its output in WORKDIR/stdout and stderr.
start_job() {
  "$mpiexec" --oversubscribe -np "$ranks" "$@" >"$workdir/stdout" 2>"$workdir/stderr" &
  job=$!
}

# The run of the acceptance, checkpointing every 20 iterations into $1 (a manifest is how the
# test knows the ranks are mid-run), with further arguments after it.
run_args() {
  local checkpoints="$1"
  shift
  echo run ${FAULT_SCHEDULE:---strategy wfbp --period 1} --model tiny-gpt --data "$data" --batch 2 --seq 32 --seed 1 \
    --timeout-s "$timeout_s" --checkpoint "$checkpoints" --checkpoint-every 20 "$@"
}

# Every rank but the victim printed exactly one "syncplan run: rank R: " line matching $1 (a grep -E pattern).
every_survivor_said() {
  local pattern="$1" rank count
  for ((rank = 0; rank < ranks; ++rank)); do
    [[ $rank -eq $victim ]] && continue
    count=$(grep -c "^syncplan run: rank $rank: " "$workdir/stderr")
    [[ $count -eq 1 ]] || die "rank $rank printed $count 'syncplan run: rank $rank:' lines, expected 1"
    grep "^syncplan run: rank $rank: " "$workdir/stderr" | grep -qE "$pattern" ||
      die "rank $rank's line does not match '$pattern': $(grep "^syncplan run: rank $rank: " "$workdir/stderr")"
    grep "^syncplan run: rank $rank: " "$workdir/stderr"
  done
}

# Starts the long run, waits for its first checkpoint, signals the victim with $1, and checks
# that the job ends within --timeout-s + 10 s with each survivor's line matching $2.
fault_case() {
  local signal="$1" pattern="$2" pid
  mkdir -p "$workdir/checkpoints"
  # shellcheck disable=SC2046
  start_job "$syncplan" $(run_args "$workdir/checkpoints" --iterations 100000 --log "$workdir/log.jsonl" --trace "$workdir/trace.json")
  wait_for_file "$workdir/checkpoints/step-00000020/manifest.json" 120 || die "no checkpoint of step 20 within 120 s"
  pid=$(rank_pid "$job" "$victim")
  [[ -n "$pid" ]] || die "rank $victim's process not found"
  kill "-$signal" "$pid" || die "kill -$signal $pid"
  echo "kill -$signal rank $victim (pid $pid) after the checkpoint of step 20"
  wait_for_job_end $((timeout_s + 10)) || die "the job still runs $((timeout_s + 10)) s after kill -$signal of rank $victim"
  echo "mpirun ended $job_took s after the signal, exit status $job_rc"
  [[ $job_rc -ne 0 ]] || die "exit status 0 after kill -$signal of a rank"
  every_survivor_said "$pattern"
}

case "$case_name" in
  selftest)
    # Helpers on a job of plain processes: each rank found, distinct; kill -9 of one ends the
    # job within 10 s (Open MPI: about 1 s); SIGSTOP of one leaves the job waiting.
    start_job bash -c 'exec sleep 30'
    sleep 1
    pids=$(job_ranks "$job")
    [[ $(sort -u <<<"$pids" | grep -c .) -eq $ranks ]] || die "found ranks '$pids', expected $ranks distinct"
    victim_pid=$(rank_pid "$job" "$victim")
    tr '\0' '\n' <"/proc/$victim_pid/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$victim" || die "pid $victim_pid is not rank $victim"
    [[ -z "$(rank_pid "$job" "$ranks")" ]] || die "found a rank $ranks in a job of $ranks"
    ! wait_for_file "$workdir/never" 1 || die "wait_for_file found a file that is not there"
    kill -KILL "$victim_pid"
    wait_for_job_end 10 || die "mpirun still runs 10 s after kill -9 of rank $victim"
    echo "selftest: mpirun ended the job $job_took s after kill -9 of rank $victim (exit status $job_rc)"
    [[ $job_rc -ne 0 ]] || die "exit status 0 after kill -9 of a rank"

    start_job bash -c 'exec sleep 2'
    sleep 1
    victim_pid=$(rank_pid "$job" "$victim")
    [[ -n "$victim_pid" ]] || die "rank $victim not found"
    kill -STOP "$victim_pid"
    ! wait_for_job_end 5 || die "the job ended although rank $victim was stopped"
    [[ -z "$(rank_pid "$job" 0)" ]] || die "rank 0 still runs 6 s into its 2-s sleep"
    echo "selftest: rank 0 ended after its 2 s; with rank $victim stopped, mpirun still waits 5 s after the stop"
    kill -CONT "$victim_pid"
    wait_for_job_end 10 || die "the job did not end after SIGCONT"
    [[ $job_rc -eq 0 ]] || die "exit status $job_rc after SIGCONT"
    echo "ok: selftest on $ranks ranks"
    ;;
  kill9)
    # The victim dies; mpirun sends SIGTERM to the others (about 1 s later), which print their
    # fatal-signal line, or a survivor's deadline fires first and names the victim.
    fault_case KILL 'ended by a signal in iteration [0-9]+|did not arrive'
    echo "ok: kill9 on $ranks ranks"
    ;;
  sigstop)
    # The victim hangs; only the survivors' deadline (--timeout-s) can end the job.
    fault_case STOP "iteration [0-9]+.*ranks? ([0-9]+(, | and ))*$victim (did not arrive|arrived but ha(s|ve) given no sign of life)"
    echo "ok: sigstop on $ranks ranks"
    ;;
  resume)
    iterations=200 final=$(printf 'step-%08d' 200)
    # A: uninterrupted.
    mkdir -p "$workdir/a" "$workdir/b"
    # shellcheck disable=SC2046
    start_job "$syncplan" $(run_args "$workdir/a" --iterations $iterations --log "$workdir/a.jsonl" --trace "$workdir/a.json")
    wait_for_job_end 170 || die "the uninterrupted run did not end within 170 s"
    [[ $job_rc -eq 0 ]] || die "the uninterrupted run: exit status $job_rc"
    # B: killed once its first checkpoint is complete, then resumed from its folder.
    # shellcheck disable=SC2046
    start_job "$syncplan" $(run_args "$workdir/b" --iterations $iterations --log "$workdir/b1.jsonl" --trace "$workdir/b1.json")
    wait_for_file "$workdir/b/step-00000020/manifest.json" 120 || die "no checkpoint of step 20 within 120 s"
    kill -KILL "$(rank_pid "$job" "$victim")"
    wait_for_job_end 30 || die "the interrupted run did not end"
    [[ ! -e "$workdir/b/$final/manifest.json" ]] || die "the run ended before it was stopped: raise the iterations"
    resumed_from=$(ls "$workdir/b" | grep '^step-' | sort | tail -1)
    # shellcheck disable=SC2046
    start_job "$syncplan" $(run_args "$workdir/b" --iterations $iterations --resume "$workdir/b" --log "$workdir/b2.jsonl" --trace "$workdir/b2.json")
    wait_for_job_end 170 || die "the resumed run did not end within 170 s"
    [[ $job_rc -eq 0 ]] || die "the resumed run: exit status $job_rc"
    for ((rank = 0; rank < ranks; ++rank)); do
      file="$final/rank-$rank.ckpt"
      cmp "$workdir/a/$file" "$workdir/b/$file" || die "rank $rank: $file differs between the uninterrupted and the resumed run"
    done
    echo "resumed from the newest folder at the kill ($resumed_from); step $iterations's rank files are bit-identical"
    # The resumed log and trace continue the iteration numbers: they start at the resumed step.
    resumed_step=$((10#${resumed_from#step-}))
    first_logged() { grep -oE '"iteration": *[0-9]+' "$1" | grep -oE '[0-9]+$' | sort -n | head -1; }
    [[ "$(first_logged "$workdir/b2.jsonl")" == "$resumed_step" ]] ||
      die "the resumed log starts at iteration $(first_logged "$workdir/b2.jsonl"), expected $resumed_step"
    [[ "$(first_logged "$workdir/b2.json")" == "$resumed_step" ]] ||
      die "the resumed trace starts at iteration $(first_logged "$workdir/b2.json"), expected $resumed_step"
    last_logged=$(grep -oE '"iteration": *[0-9]+' "$workdir/b2.jsonl" | grep -oE '[0-9]+$' | sort -n | tail -1)
    [[ "$last_logged" == $((iterations - 1)) ]] || die "the resumed log ends at iteration $last_logged, expected $((iterations - 1))"
    echo "the resumed log and trace run from iteration $resumed_step to $last_logged"
    echo "ok: resume on $ranks ranks"
    ;;
  setup_stall)
    [[ -x "${STALL_PARTNER:-}" ]] || die "STALL_PARTNER is not an executable"
    # shellcheck disable=SC2046
    "$mpiexec" --oversubscribe -np 1 "$syncplan" $(run_args "$workdir/checkpoints" --iterations 10 --log "$workdir/log.jsonl") \
      : -np 1 "$STALL_PARTNER" stall >"$workdir/stdout" 2>"$workdir/stderr" &
    job=$!
    wait_for_job_end $((timeout_s + 10)) || die "the job still runs $((timeout_s + 10)) s after its start, rank 1 stalled in the setup"
    echo "mpirun ended $job_took s after the start, exit status $job_rc"
    [[ $job_rc -ne 0 ]] || die "exit status 0 with a stalled rank"
    ranks=2 every_survivor_said "rank 0: before the first iteration: .*did not complete within its deadline of $timeout_s(\.0+)? s"
    [[ ! -e "$workdir/log.jsonl" && ! -e "$workdir/checkpoints/step-00000020" ]] || die "an output was written"
    echo "ok: setup_stall"
    ;;
  *) echo "fault_cases.sh: unknown case '$case_name'" >&2; exit 2 ;;
esac

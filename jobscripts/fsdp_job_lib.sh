# SPDX-License-Identifier: MIT
# Shared by gpu_job.sbatch and cpu_job.sbatch (sourced, not run): paths, the fsdp-train
# arguments of this attempt, and the preemptible launch: ranks in the background, USR1/TERM
# forwarded to them, exit code 75 ("preempted, checkpoint written") turned into a requeue.
#
# In:  FSDP_ROOT (source tree: inputs/, jobscripts/), FSDP_BUILD (holds fsdp-train),
#      FSDP_RUN_DIR (checkpoints and metrics; default $SLURM_SUBMIT_DIR/runs/$SLURM_JOB_ID).
# Out: FSDP_TRAIN_ARGS (array), FSDP_ATTEMPT; fsdp_launch's exit code is the job's.

# fsdp-train's exit codes (apps/fsdp_train.cpp documents the same).
FSDP_EXIT_OK=0
FSDP_EXIT_ERROR=1
FSDP_EXIT_BAD_DECK=2
FSDP_EXIT_BAD_DATA=3
FSDP_EXIT_PREEMPTED=75
FSDP_EXIT_CKPT_WRITE=7  # a checkpoint could not be written: requeueing would fail the same way

fsdp_log() { echo "fsdp-job $(date '+%F %T'): $*"; }

# fsdp_prepare [DECK] [fsdp-train options...]: checks what the job needs without launching
# anything (a missing binary or deck fails the job at once, with no requeue), creates the run
# folder and fills FSDP_TRAIN_ARGS. The job's own --set keys come first, so the caller's win.
fsdp_prepare() {
  FSDP_TRAIN=$FSDP_BUILD/fsdp-train
  if [ ! -x "$FSDP_TRAIN" ]; then
    fsdp_log "no fsdp-train in FSDP_BUILD=$FSDP_BUILD; build it first (scripts/fsdp.sh build)," \
      "jobs never compile. Not requeueing."
    exit $FSDP_EXIT_ERROR
  fi
  local deck=$FSDP_ROOT/inputs/default.toml
  if [ $# -gt 0 ] && [[ $1 != -* ]]; then
    deck=$1
    shift
  fi
  if [ ! -r "$deck" ]; then
    fsdp_log "run deck $deck: cannot read it. Not requeueing."
    exit $FSDP_EXIT_BAD_DECK
  fi
  FSDP_ATTEMPT=${SLURM_RESTART_COUNT:-0}
  mkdir -p "$FSDP_RUN_DIR/checkpoints" || exit $FSDP_EXIT_ERROR
  # One metrics file per attempt (never overwritten); a later attempt's records supersede an
  # earlier one's for the same step (steps after the last checkpoint run again on resume).
  FSDP_METRICS=$FSDP_RUN_DIR/metrics.$SLURM_JOB_ID.$FSDP_ATTEMPT.jsonl
  # --resume auto: the newest checkpoint in checkpoint.dir if there is one, else a fresh start;
  # so a requeued attempt, or a new job given the same FSDP_RUN_DIR, continues the run.
  FSDP_TRAIN_ARGS=(--config "$deck" --set "checkpoint.dir=$FSDP_RUN_DIR/checkpoints" "$@"
    --metrics "$FSDP_METRICS" --resume auto)
  fsdp_log "job $SLURM_JOB_ID attempt $FSDP_ATTEMPT on ${SLURM_JOB_NODELIST:-?}" \
    "(${SLURM_NNODES:-?} nodes, ${SLURM_NTASKS:-?} ranks), launcher ${FSDP_LAUNCHER:-srun}"
  fsdp_log "deck $deck, run folder $FSDP_RUN_DIR, metrics $FSDP_METRICS"
}

# The batch shell's trap: ask every rank to stop after its current step. Always USR1: srun and
# OpenMPI's mpirun both forward USR1 to the ranks, whereas mpirun answers TERM by killing them.
fsdp_forward_stop() {
  local sig=$1
  fsdp_log "batch shell got SIG$sig; asking the ranks to checkpoint and stop (USR1 to pid $FSDP_LAUNCH_PID)"
  FSDP_STOP_SIGNAL=$sig
  kill -USR1 "$FSDP_LAUNCH_PID" 2>/dev/null || true
}

# fsdp_launch LAUNCHER...: runs the launcher (srun/mpirun and its fsdp-train command line) in
# the background so the traps can run while it works, then decides the job's fate from its code.
fsdp_launch() {
  FSDP_STOP_SIGNAL=
  "$@" &
  FSDP_LAUNCH_PID=$!
  trap 'fsdp_forward_stop USR1' USR1
  trap 'fsdp_forward_stop TERM' TERM
  local rc
  while :; do
    wait "$FSDP_LAUNCH_PID"
    rc=$?
    # A trap interrupts `wait` with a code above 128 while the launcher still runs (or is an
    # unreaped zombie, which kill -0 still finds): wait again for its real exit code.
    if [ $rc -gt 128 ] && kill -0 "$FSDP_LAUNCH_PID" 2>/dev/null; then continue; fi
    break
  done
  trap - USR1 TERM
  case $rc in
    "$FSDP_EXIT_OK")
      fsdp_log "training finished (exit 0)"
      return 0 ;;
    "$FSDP_EXIT_PREEMPTED")
      fsdp_log "ranks stopped with a checkpoint written (exit 75)${FSDP_STOP_SIGNAL:+ after SIG$FSDP_STOP_SIGNAL}; requeueing job $SLURM_JOB_ID"
      if scontrol requeue "$SLURM_JOB_ID"; then
        # Slurm now ends this attempt and queues the next, which resumes with --resume auto.
        return $FSDP_EXIT_PREEMPTED
      fi
      fsdp_log "scontrol requeue failed (job cancelled, or not requeueable); resubmit with" \
        "FSDP_RUN_DIR=$FSDP_RUN_DIR to resume from the checkpoint"
      return $FSDP_EXIT_PREEMPTED ;;
    "$FSDP_EXIT_CKPT_WRITE")
      fsdp_log "a checkpoint could not be written (exit 7: no space, or $FSDP_RUN_DIR in use or" \
        "unwritable; the error is above). Not requeueing; the previous checkpoint stands: free" \
        "space and resubmit with FSDP_RUN_DIR=$FSDP_RUN_DIR to resume from it."
      return $rc ;;
    "$FSDP_EXIT_BAD_DECK" | "$FSDP_EXIT_BAD_DATA")
      fsdp_log "bad run deck or data (exit $rc; the error is above). Not requeueing."
      return $rc ;;
    *)
      fsdp_log "fsdp-train failed (exit $rc). Not requeueing; resubmit with" \
        "FSDP_RUN_DIR=$FSDP_RUN_DIR to resume from the last periodic checkpoint."
      return $rc ;;
  esac
}

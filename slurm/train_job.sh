#!/usr/bin/env bash
# Body of train_sft.sbatch and train_prm.sbatch: one training run on one node, resumed when OUT already holds
# checkpoints (a requeued or re-submitted job continues where it stopped, with the same data order).
#   bash slurm/train_job.sh train-sft|train-prm      (inside a SLURM allocation or on a workstation)
# Environment: DATA, OUT (required); RECIPE, MODEL, GPUS, VENV, EXTRA (optional, see the .sbatch files).
set -euo pipefail
command=${1:?train-sft or train-prm}
: "${DATA:?set DATA to the dataset folder (sft-data / prm-data output)}"
: "${OUT:?set OUT to the output folder}"
GPUS=${GPUS:-${SLURM_GPUS_ON_NODE:-1}}
VENV=${VENV:-.venv}
[ -f "$VENV/bin/activate" ] && source "$VENV/bin/activate"
export HF_HUB_ENABLE_HF_TRANSFER=${HF_HUB_ENABLE_HF_TRANSFER:-0} TOKENIZERS_PARALLELISM=false
args=(--data "$DATA" --output-dir "$OUT")
[ -n "${RECIPE:-}" ] && args+=(--config "$RECIPE")
[ -n "${MODEL:-}" ] && args+=(--model "$MODEL")
if compgen -G "$OUT/checkpoint-*" > /dev/null; then args+=(--resume); fi
# EXTRA holds further settings, e.g. EXTRA="--max-steps 200 --learning-rate 1e-4"; word splitting is wanted
# shellcheck disable=SC2206
args+=(${EXTRA:-})
echo "playprm $command on $(hostname), $GPUS GPU(s): ${args[*]}"
# one process per GPU; torchrun with one process is plain single-GPU training
torchrun --standalone --nproc_per_node "$GPUS" -m playprm "$command" "${args[@]}" &
child=$!
# pre-emption warning (--signal=B:USR1@300): requeue; the restarted job resumes from the last checkpoint
trap 'echo "USR1: requeueing $SLURM_JOB_ID"; scontrol requeue "$SLURM_JOB_ID"; kill -TERM "$child"' USR1
wait "$child"

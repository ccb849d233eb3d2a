#!/usr/bin/env bash
# Submit a sharded evaluation and its report: SHARDS array tasks of eval_array.sbatch, then report.sbatch once
# every task has succeeded.
#   POLICY=Qwen3.5-27B-sft-ep1 REGISTRY_DIR=runs/Qwen3.5-27B-sft-ep1 PRM=runs/Qwen3.5-27B-prm \
#     RESULTS=results/bon8 SHARDS=8 bash slurm/submit_eval.sh
# Every variable of eval_array.sbatch is passed on (sbatch --export=ALL).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${POLICY:?}" "${RESULTS:?}"
shards=${SHARDS:-8}
mkdir -p logs
array=$(sbatch --parsable --export=ALL --array=0-$((shards - 1)) slurm/eval_array.sbatch)
report=$(sbatch --parsable --export=ALL --dependency=afterok:"${array%%;*}" slurm/report.sbatch)
echo "eval array $array ($shards shards into $RESULTS/shard_*), report $report -> $RESULTS/report"

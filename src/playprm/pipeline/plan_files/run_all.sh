#!/usr/bin/env bash
# The model card's pipeline for Qwen/Qwen3.5-27B, written by `playprm pipeline --preset qwen3.5-27b`.
# Stages are the tiny pipeline's; run them one by one, or submit the sbatch files under slurm/.
set -euo pipefail
cd "$(dirname "$0")"
# recipes/ and slurm/ stay in the playprm repository (sbatch and the docs use them there); a wheel does not carry them
[ -d recipes ] && [ -d slurm ] || { echo "recipes/ and slurm/ are missing here: copy them from the playprm repository into $PWD" >&2; exit 1; }
BASE=${BASE:-Qwen/Qwen3.5-27B}
N_SHARDS=${N_SHARDS:-8}

# 1. rollouts of the base model on all games (vLLM on one GPU node; resumable)
cat > model_registry.json <<JSON
[{"model_name": "qwen3.5-27b-base", "backend": "playprm", "huggingface_id": "$BASE",
  "model_config": {"engine": "vllm", "chat_template_kwargs": {"enable_thinking": false}}}]
JSON
playprm collect --policy-model qwen3.5-27b-base --game-all --samples-per-instance 4 --temperature 1.0 \
  --branch-factor 2 --branch-at policy-turns --branch-depth 2 --max-tokens 2048 --results-dir rollouts

# 2. positive-only SFT data and turn-level PRM labels
playprm sft-data --results-dir rollouts --out sft-data --tokenizer "$BASE" --max-length 1024
playprm prm-data --results-dir rollouts --labels both --out prm-data

# 3. QLoRA SFT and PRM training on the GPU nodes (slurm/train_*.sbatch run the recipes under recipes/qwen3.5-27b)
mkdir -p logs
sbatch --wait --export=ALL,DATA=sft-data,OUT=runs/Qwen3.5-27B-sft-ep1 slurm/train_sft.sbatch
sbatch --wait --export=ALL,DATA=prm-data,OUT=runs/Qwen3.5-27B-prm slurm/train_prm.sbatch

# 4. evaluation as SLURM array shards, each mode in its own results folder; 5. the side-by-side report
for MODE in greedy best-of-n beam-search; do
  sbatch --wait --array=0-$((N_SHARDS - 1)) --export=ALL,MODE=$MODE,N_CANDIDATES=4,POLICY=Qwen3.5-27B-sft-ep1,REGISTRY_DIR=runs/Qwen3.5-27B-sft-ep1,PRM=runs/Qwen3.5-27B-prm,RESULTS=results/$MODE slurm/eval_array.sbatch
  playprm merge --results-dir results/$MODE/shard_* --out results/$MODE/all
done
playprm report --compare results/greedy/all results/best-of-n/all results/beam-search/all --out report

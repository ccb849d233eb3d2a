#!/usr/bin/env bash
# Time and peak memory of QLoRA training steps (SFT and PRM) on one NVIDIA GPU (sized for an H200):
# the card's Qwen3.5 layout at ~2.4B with random weights (no download), batch 4 x 1024 tokens, the model card's
# settings, through the trainers train-sft and train-prm use. About 4 minutes; stops itself after 7 min 50 s.
#   bash benchmarks/gpu_train_step.sh                 # Qwen3.5 layout, ~2.4B
#   bash benchmarks/gpu_train_step.sh --qwen3-8b      # also Qwen3-8B's shape
#   bash benchmarks/gpu_train_step.sh --qwen35-27b    # also Qwen3.5-27B's text model (~50 GiB of free disk)
# Prints one line per job and writes benchmarks/out/gpu_train_step.json (OUT=... to change the folder).
# Without CUDA or bitsandbytes it prints one SKIP line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false MPLBACKEND=Agg
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi
if ! "$python" -c "import torch, transformers, trl, peft, datasets, accelerate" 2>/dev/null; then
  echo "SKIP gpu_train_step: $python lacks torch/transformers/trl/peft/datasets/accelerate (pip install -e '.[gpu]')"
  exit 0
fi
exec timeout 470 "$python" benchmarks/gpu_train_step.py --out "${OUT:-benchmarks/out}" "$@"

#!/usr/bin/env bash
# Decode throughput on one NVIDIA H200 (see benchmarks/gpu_generation.py). Self-contained: no network, no
# download, under 8 minutes. Figures go to $OUT when set (the device tool's output folder), else benchmarks/out/.
# Usage, from anywhere: bash benchmarks/gpu_generation.sh [--batches 1 16 64] [--new-tokens 128] [--rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 TOKENIZERS_PARALLELISM=false
PYTHON=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
timeout 470 "$PYTHON" benchmarks/gpu_generation.py "$@"

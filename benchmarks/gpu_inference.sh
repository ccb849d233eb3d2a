#!/usr/bin/env bash
# Best-of-N overhead and PRM scoring throughput on one NVIDIA H200 (see benchmarks/gpu_inference.py).
# Self-contained: no network, no download, under 8 minutes. Figures go to $OUT when set, else benchmarks/out/.
# Usage, from anywhere: bash benchmarks/gpu_inference.sh [--contexts 32] [--new-tokens 64] [--rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 TOKENIZERS_PARALLELISM=false
PYTHON=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
timeout 470 "$PYTHON" benchmarks/gpu_inference.py "$@"

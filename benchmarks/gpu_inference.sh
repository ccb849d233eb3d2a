#!/usr/bin/env bash
# Best-of-N overhead and PRM scoring throughput on one NVIDIA H200 (see benchmarks/gpu_inference.py).
# Self-contained: no network, no download, under 8 minutes. Figures go to $OUT when set, else benchmarks/out/.
# Usage, from anywhere: bash benchmarks/gpu_inference.sh [--contexts 32] [--new-tokens 64] [--rounds 3]
set -euo pipefail
source "$(dirname "$0")/gpu_env.sh"
timeout 470 "$PYTHON" benchmarks/gpu_inference.py "$@"

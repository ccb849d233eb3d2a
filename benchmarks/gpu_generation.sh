#!/usr/bin/env bash
# Decode throughput on one NVIDIA H200 (see benchmarks/gpu_generation.py). Self-contained: no network, no
# download, under 8 minutes. Figures go to $OUT when set (the device tool's output folder), else benchmarks/out/.
# Usage, from anywhere: bash benchmarks/gpu_generation.sh [--batches 1 16 64] [--new-tokens 128] [--rounds 3]
set -euo pipefail
source "$(dirname "$0")/gpu_env.sh"
timeout 470 "$PYTHON" benchmarks/gpu_generation.py "$@"

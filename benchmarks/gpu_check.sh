#!/usr/bin/env bash
# One GPU check for a GPU node, offline (see benchmarks/gpu_check.py): every import first (a missing module is
# named within seconds, exit 1), then a QLoRA SFT and a PRM training step, best-of-4 with the PRM against greedy,
# decode throughput at batch 1 and 64 against the HBM roofline, a train-dpo step, and (where disk and time allow)
# the Qwen3.5-27B text shape. Under 8 minutes; without CUDA one SKIP line per step and exit 0.
# Writes gpu_check.json and gpu_check.md to $OUT when set (the device tool's output folder), else benchmarks/out/.
# Usage, from anywhere: bash benchmarks/gpu_check.sh [--imports-only] [--steps train inference ...] [--budget 450]
# On a node without playprm's dependencies, install the folder of scripts/gpu_wheels.sh first (docs/real-run.md).
set -euo pipefail
source "$(dirname "$0")/gpu_env.sh"
export HF_DATASETS_OFFLINE=1 MPLBACKEND=Agg
# each step has its own limit inside --budget (default 450 s); this one only guards against a hang elsewhere
timeout "${GPU_CHECK_TIMEOUT:-1800}" "$PYTHON" benchmarks/gpu_check.py "$@"

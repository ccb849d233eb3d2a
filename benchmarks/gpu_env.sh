# Sourced by benchmarks/gpu_*.sh: run from the repository root with src/ importable, offline, and show the GPU.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 TOKENIZERS_PARALLELISM=false
PYTHON=${PYTHON:-python3}
if command -v nvidia-smi > /dev/null; then nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true; fi

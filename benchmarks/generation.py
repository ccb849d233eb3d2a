"""Figures 0-1: torch threads (whole eval processes, idle and beside a busy process), and N candidates per context (HFPolicy, one call per candidate, transformers num_return_sequences, clemcore HuggingfaceLocalModel).

Usage: python benchmarks/generation.py [--quick] [--work DIR] [--json PATH]
The same code runs in `playprm bench` (which also writes BENCHMARKS.md); see playprm/bench/.
"""

import sys

from playprm.bench.suite import script_main

if __name__ == "__main__":
    sys.exit(script_main(["threads", "generation"], __doc__.splitlines()[0]))

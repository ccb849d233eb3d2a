"""Figures 3-4 on multi-turn episodes: playprm eval against clem run (whole processes), and best-of-N against greedy.

Usage: python benchmarks/episodes.py [--quick] [--work DIR] [--json PATH]
The same code runs in `playprm bench` (which also writes BENCHMARKS.md); see playprm/bench/.
"""

import sys

from playprm.bench.suite import script_main

if __name__ == "__main__":
    sys.exit(script_main(["episodes", "best_of_n"], __doc__.splitlines()[0]))

"""Figure 5: beam-search time against B x N (linear fit), and memory over a 500-episode run.

Usage: python benchmarks/growth.py [--quick] [--work DIR] [--json PATH]
The same code runs in `playprm bench` (which also writes BENCHMARKS.md); see playprm/bench/.
"""

import sys

from playprm.bench.suite import script_main

if __name__ == "__main__":
    sys.exit(script_main(["beam_growth", "memory"], __doc__.splitlines()[0]))

"""Figure 5: prefill tokens against turns with and without cross-turn reuse, beam-search time against B x N (linear fit), and memory over a 500-episode multi-turn run.

Usage: python benchmarks/growth.py [--quick] [--work DIR] [--json PATH]
The same code runs in `playprm bench` (which also writes BENCHMARKS.md); see playprm/bench/.
"""

import sys

from playprm.bench.suite import script_main

if __name__ == "__main__":
    sys.exit(script_main(["prefill", "beam_growth", "memory"], __doc__.splitlines()[0]))

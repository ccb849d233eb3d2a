"""Figure 2: shared-context PRM scoring against one candidate and the naive full-sequence path, at the tiny width and at hidden 1024.

Usage: python benchmarks/prm_scoring.py [--quick] [--work DIR] [--json PATH]
The same code runs in `playprm bench` (which also writes BENCHMARKS.md); see playprm/bench/.
"""

import sys

from playprm.bench.suite import script_main

if __name__ == "__main__":
    sys.exit(script_main(["prm"], __doc__.splitlines()[0]))

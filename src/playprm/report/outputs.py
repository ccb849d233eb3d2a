"""The files ``playprm report`` writes: CSV (clemcore columns first), Markdown and PNG, each atomically."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from playprm.atomic import write_text
from playprm.report.compare import comparison_markdown
from playprm.report.plots import plot_clemscore, plot_compute
from playprm.report.render import results_markdown


def write_results(table: pd.DataFrame, out: Path) -> list[Path]:
    """Write OUT/results.csv (readable by anything that reads clem eval's), results.md, clemscore.png."""
    written = [out / "results.csv", out / "results.md"]
    write_text(written[0], table.to_csv())
    write_text(written[1], results_markdown(table))
    written.append(plot_clemscore(table, out / "clemscore.png"))
    return written


def write_comparison(comparison: pd.DataFrame, out: Path) -> list[Path]:
    """Write OUT/compare.csv (``section`` and ``env_lookahead`` mark lookahead runs), compare.md, compute.png."""
    written = [out / "compare.csv", out / "compare.md"]
    write_text(written[0], comparison.to_csv())
    write_text(written[1], comparison_markdown(comparison))
    written.append(plot_compute(comparison, out / "compute.png"))
    return written

"""The Evaluation section of a model card, from what ``playprm report`` wrote.

A report is a folder (or one of its CSV files): ``compare.csv`` (``report --compare``: one row per run with its
decoding mode and ``section``) or ``results.csv`` (``report --results-dir``: one row per model folder; the mode is
read from ``<folder>/<model>/playprm_run.json`` where the report sits beside its results, as it does by default).
clemscore and statscore come with their bootstrap 95% CIs where the report has them.
"""

from __future__ import annotations

import math
from pathlib import Path

from playprm.errors import UsageError
from playprm.report.clemscore import (
    AVERAGE_PLAYED,
    AVERAGE_QUALITY,
    CI_HIGH,
    CI_LOW,
    CLEMSCORE,
    EPISODES,
    STATSCORE,
)
from playprm.results.layout import RUN_METADATA_FILE
from playprm.results.run_record import RunRecord

REPORT_FILES = ("compare.csv", "results.csv")
COLUMNS = {  # row key -> report column
    "clemscore": CLEMSCORE, "clemscore_low": CLEMSCORE + CI_LOW, "clemscore_high": CLEMSCORE + CI_HIGH,
    "statscore": STATSCORE, "statscore_low": STATSCORE + CI_LOW, "statscore_high": STATSCORE + CI_HIGH,
    "played": AVERAGE_PLAYED, "quality": AVERAGE_QUALITY,
}


def report_file(path: Path) -> Path:
    """The CSV of a report folder (compare.csv first) or the CSV given; UsageError when there is none."""
    if path.is_file() and path.name in REPORT_FILES:
        return path
    if path.is_dir():
        for name in REPORT_FILES:
            if (path / name).is_file():
                return path / name
    raise UsageError(f"--report {path} holds no compare.csv or results.csv; give the folder `playprm report` "
                     "wrote (its --out, or the results folder it read)")


def _value(row, column: str):
    value = row.get(column) if column in row else None
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def read_report(path: Path) -> list[dict]:
    """One row per run: ``run``, ``mode``, ``n_candidates``, ``env_lookahead``, clemscore and statscore with
    their CI bounds, ``played``, ``quality``, ``episodes`` (None where the report leaves a value blank)."""
    import pandas as pd

    csv = report_file(Path(path))
    try:
        table = pd.read_csv(csv, index_col=0)
    except (OSError, ValueError) as error:
        raise UsageError(f"--report {csv} cannot be read as a report table ({error})") from None
    if CLEMSCORE not in table.columns:
        raise UsageError(f"--report {csv} has no '{CLEMSCORE}' column; it is not a `playprm report` table")
    rows = []
    for label, row in table.iterrows():
        row = row.to_dict()
        if csv.name == "compare.csv":
            mode, n = str(row.get("mode") if isinstance(row.get("mode"), str) else ""), _value(row, "n_candidates")
            lookahead = str(row.get("env_lookahead")).lower() == "true"
            episodes = _value(row, EPISODES)
        else:
            metadata_file = csv.parent / str(label) / RUN_METADATA_FILE
            record = RunRecord.read(metadata_file) if metadata_file.is_file() else RunRecord()
            mode, n, lookahead = record.mode, record.n_candidates, record.env_lookahead
            episodes = _value(row, f"-, {EPISODES}")
        rows.append({"run": str(label), "mode": mode, "n_candidates": n, "env_lookahead": lookahead,
                     **{key: _value(row, column) for key, column in COLUMNS.items()},
                     "episodes": int(episodes) if episodes is not None else None, "report": str(csv)})
    return rows


def render_evaluation(rows: list[dict], sources: list[str]) -> str:
    """The Evaluation section: honest decoding modes first, environment-lookahead runs apart."""
    from playprm.report.render import number, with_interval
    from playprm.tables import markdown_table

    headers = ["run", "mode", "N", "clemscore [95% CI]", "statscore [95% CI]", "% played", "quality", "episodes"]

    def cells(row: dict) -> list[str]:
        return [row["run"], row["mode"] or "not recorded", number(row["n_candidates"], 0) or "–",
                with_interval(row["clemscore"], row["clemscore_low"], row["clemscore_high"]) or "–",
                with_interval(row["statscore"], row["statscore_low"], row["statscore_high"]) or "–",
                number(row["played"]) or "–", number(row["quality"]) or "–", str(row["episodes"] or 0)]

    parts = [
        "## Evaluation",
        "Played on clembench games through clemcore and scored as clemcore scores them: clemscore (the average % "
        "played × the average quality score / 100, averages over the games) and statscore (the same aggregate over the static games, Playpen's "
        "static benchmark aggregate). 95% CIs: stratified percentile bootstrap over episodes. From "
        + ", ".join(f"`{source}`" for source in sources) + ".",
    ]
    honest = [row for row in rows if not row["env_lookahead"]]
    lookahead = [row for row in rows if row["env_lookahead"]]
    if honest:
        parts += ["### Honest decoding modes", markdown_table(headers, [cells(row) for row in honest])]
    if lookahead:
        parts += ["### Environment-lookahead runs",
                  "These searches saw the game's answers to actions they did not finally play; their numbers are not "
                  "comparable to benchmark numbers.", markdown_table(headers, [cells(row) for row in lookahead])]
    if any(row["statscore"] is None for row in rows):
        parts.append("statscore is `–` where a run played no static game.")
    return "\n\n".join(parts)

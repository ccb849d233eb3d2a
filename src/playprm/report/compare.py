"""Runs side by side: one row per model-pair folder of each results dir, with its decoding mode and cost.

A run's mode comes from ``<model-pair>/playprm_run.json`` (``mode``, ``env_lookahead``, ``n_candidates``,
...), its cost from the per-episode ``cost.json`` beside each scores.json (``generated_tokens``,
``prm_tokens``, ``wall_seconds``; averaged over the episodes that have one). Runs whose search saw the
game's answers to actions it did not finally play (``env_lookahead: true``, e.g. beam search over game
copies) are not honest benchmark numbers; they get their own section and ``section = env-lookahead``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from playprm.report.clemscore import (
    AVERAGE_PLAYED,
    AVERAGE_QUALITY,
    CI_HIGH,
    CI_LOW,
    CLEMSCORE,
    EPISODES,
    ERRORED,
    INTERACTIVE,
    PLAYED,
    QUALITY,
    STATSCORE,
    UNREADABLE,
    game_names,
    score_errored_as_aborted,
    table_from_episodes,
)
from playprm.report.episodes import EpisodeScores, load_episode_scores, validate_results_dirs
from playprm.report.render import HONEST_TITLE, LOOKAHEAD_TITLE, number, score_columns, scored
from playprm.results import read_json
from playprm.results.layout import COST_FILE, RUN_METADATA_FILE
from playprm.results.run_record import MODE_FIELDS, RunRecord
from playprm.search.modes import MODES
from playprm.tables import markdown_table, text_table

# cost.json field -> comparison column
COST_COLUMNS = {
    "generated_tokens": "generated tokens / episode",
    "prm_tokens": "PRM tokens / episode",
    "wall_seconds": "wall seconds / episode",
}
HONEST = "honest"
LOOKAHEAD = "env-lookahead"
UNKNOWN = "unknown"
UNKNOWN_MODE = "unknown (not played by playprm)"
UNKNOWN_TITLE = "Runs not played by playprm (no playprm_run.json: decoding mode unknown)"


def run_record(model_dirs: list[Path]) -> RunRecord | None:
    """The first ``playprm_run.json`` among a model's folders (shards), or None where none exists."""
    for model_dir in model_dirs:
        if (model_dir / RUN_METADATA_FILE).is_file():
            return RunRecord.read(model_dir / RUN_METADATA_FILE)
    return None


def mean_costs(episode_dirs: list[Path]) -> tuple[dict[str, float], int, int]:
    """Mean of each cost.json field over the episodes that have it.

    Returns ``({field: mean or NaN}, episodes with a cost.json, unreadable cost.json files)``.
    """
    values: dict[str, list[float]] = {name: [] for name in COST_COLUMNS}
    with_cost = unreadable = 0
    for episode_dir in episode_dirs:
        path = episode_dir / COST_FILE
        if not path.is_file():
            continue
        cost, reason = read_json(path)
        if reason or not isinstance(cost, dict):
            unreadable += 1
            continue
        with_cost += 1
        for name in COST_COLUMNS:
            value = cost.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                values[name].append(float(value))
    means = {name: (sum(v) / len(v) if v else float("nan")) for name, v in values.items()}
    return means, with_cost, unreadable


def _run_rows(results_dir: Path, episodes: EpisodeScores, table: pd.DataFrame) -> list[dict]:
    rows = []
    models = list(table.index) + sorted({m for m, _ in episodes.errored} - set(table.index))
    games = [game for game in game_names(table) if f"{game}, {QUALITY}" in table.columns]
    for model in models:
        record = run_record(episodes.model_dirs.get(model, []))
        costs, with_cost, bad_costs = mean_costs([d for k, d in episodes.episode_dirs.items() if k[0] == model])
        scored = model in table.index
        row = {
            "results dir": str(results_dir),
            "model": model,
            "mode": record.mode if record else UNKNOWN_MODE,
            "env_lookahead": bool(record and record.env_lookahead),
            "n_candidates": record.n_candidates if record and record.n_candidates is not None else float("nan"),
            "temperature": record.settings.get("temperature", float("nan")) if record else float("nan"),
        }
        for column in (CLEMSCORE, CLEMSCORE + CI_LOW, CLEMSCORE + CI_HIGH, INTERACTIVE, INTERACTIVE + CI_LOW,
                       INTERACTIVE + CI_HIGH, STATSCORE, STATSCORE + CI_LOW, STATSCORE + CI_HIGH,
                       AVERAGE_PLAYED, AVERAGE_QUALITY):
            row[column] = table.at[model, column] if scored else float("nan")
        for game in games:
            for metric in (PLAYED, QUALITY):
                row[f"{game}, {metric}"] = table.at[model, f"{game}, {metric}"] if scored else float("nan")
        for name, column in COST_COLUMNS.items():
            row[column] = costs[name]
        row["cost episodes"] = with_cost
        row["unreadable cost.json"] = bad_costs
        row[EPISODES] = int(table.at[model, f"-, {EPISODES}"]) if scored else 0
        row[ERRORED] = sum(n for (m, _), n in episodes.errored.items() if m == model)
        row[UNREADABLE] = sum(n for (m, _), n in episodes.unreadable_counts().items() if m == model)
        unread = MODES[record.mode].unread_settings if record and record.mode in MODES else ()
        for key, value in (record.to_json() if record else {}).items():
            # a setting the run's mode never reads (a greedy run's beam width) stays blank
            if key not in MODE_FIELDS and key not in unread and isinstance(value, (str, int, float, bool)):
                row[f"run {key}"] = value
        row["static games"] = ", ".join(table.attrs["static_games"])
        gate = record.settings.get("gate") if record else None  # per-game gating: which games the run guided and why
        row["gate"] = "; ".join(f"{game}: {why}" for game, why in gate.items()) if isinstance(gate, dict) else ""
        row["section"] = LOOKAHEAD if row["env_lookahead"] else HONEST if record else UNKNOWN
        rows.append(row)
    return rows


def compare_runs(
    results_dirs: list[Path],
    static_games: set[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    errored_as_aborted: bool = False,
    games_dir: Path | None = None,
) -> pd.DataFrame:
    """One row per model-pair folder of each results dir: honest runs, runs playprm did not play (mode
    unknown), env-lookahead runs last.

    Inputs: the dirs (each read on its own); ``static_games`` and ``games_dir`` as in ``compute_table``;
    bootstrap settings; ``errored_as_aborted`` as in ``compute_table``. Output: a DataFrame indexed by run label
    (``run_labels``) with mode metadata, clemscore and its CI, Playpen's clemscore and statscore, averages,
    per-game % Played and Quality Score, mean costs per episode (NaN where no cost.json), counts, ``section``
    (``honest``, ``unknown`` or ``env-lookahead``) and ``results dir`` as the user gave it.
    ``table.attrs["summary"]`` holds notes on skipped files and on which games are static.
    """
    roots = validate_results_dirs(list(results_dirs))
    rows, summary, kinds = [], [], []
    for root in roots:
        episodes = load_episode_scores([root])
        if errored_as_aborted:
            episodes = score_errored_as_aborted(episodes)
        table = table_from_episodes(episodes, static_games, n_resamples, seed, games_dir)
        kinds.append(table.attrs["game_kinds"])
        rows += _run_rows(root, episodes, table)
        summary += [f"{root}: {line}" for line in table.attrs["summary"]]
    summary += sorted(set(kinds))
    comparison = pd.DataFrame(rows, index=run_labels(rows))
    comparison.index.name = "run"
    rank = {HONEST: 0, UNKNOWN: 1, LOOKAHEAD: 2}
    order = sorted(range(len(rows)), key=lambda i: rank[rows[i]["section"]])
    comparison = comparison.iloc[order]
    comparison.attrs["summary"] = summary
    return comparison


def run_labels(rows: list[dict]) -> list[str]:
    """A label per run as a user would type it: the results dir's folder name where the dir holds one
    model-pair folder (or is one), ``<folder>/<model-pair>`` where it holds several, the whole path where
    folder names collide."""
    per_dir: dict[str, int] = {}
    for row in rows:
        per_dir[row["results dir"]] = per_dir.get(row["results dir"], 0) + 1
    labels = [Path(row["results dir"]).name if per_dir[row["results dir"]] == 1
              else f"{Path(row['results dir']).name}/{row['model']}" for row in rows]
    if len(set(labels)) < len(labels):
        labels = [row["results dir"] if per_dir[row["results dir"]] == 1 else f"{row['results dir']}/{row['model']}"
                  for row in rows]
    return labels


def _comparison_rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    # columns that say nothing for these runs (no playprm metadata, no cost.json) are left out: compare.csv has all
    columns = score_columns(bool((table["static games"] != "").any()))
    played_by_playprm = bool((table["section"] != UNKNOWN).any())
    costs = [(header, column) for header, column in zip(("gen tok/ep", "PRM tok/ep", "wall s/ep"),
                                                         COST_COLUMNS.values(), strict=True)
             if table[column].notna().any()]
    headers = ["run", *(["mode", "N"] if played_by_playprm else []),
               *[f"{header} [95% CI]" for header, _ in columns], "% played", "quality",
               *[header for header, _ in costs], "episodes", "errored", "unreadable"]
    rows = []
    for label, row in table.iterrows():
        cells = [label, *([str(row["mode"]), number(row["n_candidates"], 0)] if played_by_playprm else []),
                 *[scored(table, row, column) for _, column in columns],
                 number(row[AVERAGE_PLAYED]), number(row[AVERAGE_QUALITY])]
        cells += [number(row[column], 1) for _, column in costs]
        cells += [str(int(row[EPISODES])), str(int(row[ERRORED])), str(int(row.get(UNREADABLE, 0)))]
        rows.append(cells)
    return headers, rows


def _quality_rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    # one row per game, one column per run: a long game list stays readable (Quality Score per game)
    static = {game.strip() for games in table["static games"] for game in str(games).split(",") if game.strip()}
    headers = ["game", *table.index]
    rows = [[f"{game} (static)" if game in static else game,
             *[number(table.at[label, f"{game}, {QUALITY}"]) for label in table.index]]
            for game in game_names(table) if f"{game}, {QUALITY}" in table.columns]
    return headers, rows


def _sections(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    sections = [(HONEST_TITLE, table[table["section"] == HONEST]),
                (UNKNOWN_TITLE, table[table["section"] == UNKNOWN]),
                (LOOKAHEAD_TITLE, table[table["section"] == LOOKAHEAD])]
    return [(title, part) for title, part in sections if len(part)]


QUALITY_TITLE = "Quality Score per game (mean Main Score of the episodes played to the end)"


def render_comparison(table: pd.DataFrame) -> str:
    """The comparison from ``compare_runs`` as plain text: honest runs, runs of unknown mode, then env-lookahead
    runs apart; then the Quality Score per game and run."""
    parts = []
    for title, part in _sections(table):
        parts += [title, text_table(*_comparison_rows(part)), ""]
    parts += [QUALITY_TITLE, text_table(*_quality_rows(table)), ""]
    parts += table.attrs.get("summary", [])
    return "\n".join(parts).rstrip() + "\n"


def comparison_markdown(table: pd.DataFrame) -> str:
    """The comparison as a Markdown document (compare.md), one section per kind of run, then the Quality Score per
    game and run."""
    parts = ["# Run comparison", ""]
    for title, part in _sections(table):
        parts += [f"## {title}", "", markdown_table(*_comparison_rows(part)), ""]
    parts += [f"## {QUALITY_TITLE}", "", markdown_table(*_quality_rows(table)), ""]
    parts += [f"- {line}" for line in table.attrs.get("summary", [])]
    return "\n".join(parts).rstrip() + "\n"

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
    PLAYED,
    QUALITY,
    STATSCORE,
    game_names,
    resolve_static_games,
    score_errored_as_aborted,
    table_from_episodes,
)
from playprm.report.episodes import EpisodeScores, load_episode_scores, validate_results_dirs
from playprm.report.render import number, statscore_note, with_interval
from playprm.report.run_metadata import MODE_FIELDS, RUN_METADATA_FILE, is_env_lookahead, read_run_metadata
from playprm.results import read_json
from playprm.results.layout import COST_FILE
from playprm.tables import markdown_table, text_table

# cost.json field -> comparison column
COST_COLUMNS = {
    "generated_tokens": "generated tokens / episode",
    "prm_tokens": "PRM tokens / episode",
    "wall_seconds": "wall seconds / episode",
}
HONEST = "honest"
LOOKAHEAD = "env-lookahead"
LOOKAHEAD_TITLE = (
    "Environment-lookahead runs (the search saw game answers to actions it did not play; "
    "not comparable to benchmark numbers)"
)
HONEST_TITLE = "Honest decoding modes"


def run_metadata(model_dirs: list[Path]) -> dict:
    """The first ``playprm_run.json`` among a model's folders (shards), or {} where none exists."""
    for model_dir in model_dirs:
        if (model_dir / RUN_METADATA_FILE).is_file():
            return read_run_metadata(model_dir / RUN_METADATA_FILE)
    return {}


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
        metadata = run_metadata(episodes.model_dirs.get(model, []))
        costs, with_cost, bad_costs = mean_costs([d for k, d in episodes.episode_dirs.items() if k[0] == model])
        scored = model in table.index
        row = {
            "results dir": str(results_dir),
            "model": model,
            "mode": metadata.get("mode", ""),
            "env_lookahead": is_env_lookahead(metadata),
            "n_candidates": metadata.get("n_candidates", float("nan")),
            "temperature": metadata.get("temperature", float("nan")),
        }
        for column in (CLEMSCORE, CLEMSCORE + CI_LOW, CLEMSCORE + CI_HIGH, STATSCORE,
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
        for key, value in metadata.items():
            if key not in MODE_FIELDS and isinstance(value, (str, int, float, bool)):
                row[f"run {key}"] = value
        row["section"] = LOOKAHEAD if row["env_lookahead"] else HONEST
        rows.append(row)
    return rows


def compare_runs(
    results_dirs: list[Path],
    static_games: set[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    errored_as_aborted: bool = False,
) -> pd.DataFrame:
    """One row per model-pair folder of each results dir, honest runs first, env-lookahead runs after.

    Inputs: the dirs (each read on its own); ``static_games`` (None: ask the game registry); bootstrap
    settings; ``errored_as_aborted`` as in ``compute_table``. Output: a DataFrame indexed by run label
    (``<dir name>/<model-pair>``) with mode metadata, clemscore and its CI, statscore, averages, per-game
    % Played and Quality Score, mean costs per episode (NaN where no cost.json), counts and ``section``
    (``honest`` or ``env-lookahead``).
    ``table.attrs["summary"]`` holds notes on skipped files.
    """
    roots = validate_results_dirs(list(results_dirs))
    static_games, reason = resolve_static_games(static_games)
    rows, summary, played_static = [], [], set()
    for root in roots:
        episodes = load_episode_scores([root])
        if errored_as_aborted:
            episodes = score_errored_as_aborted(episodes)
        table = table_from_episodes(episodes, static_games, n_resamples, seed)
        played_static |= set(table.attrs["static_games"])
        rows += _run_rows(root, episodes, table)
        summary += [f"{root}: {line}" for line in episodes.summary_lines()]
    if reason:
        summary.append(f"statscore left blank: {reason}")
    elif not played_static:
        summary.append(statscore_note([]))
    labels = [f"{Path(row['results dir']).name}/{row['model']}" for row in rows]
    if len(set(labels)) < len(labels):
        labels = [f"{row['results dir']}/{row['model']}" for row in rows]
    comparison = pd.DataFrame(rows, index=labels)
    comparison.index.name = "run"
    order = sorted(range(len(rows)), key=lambda i: rows[i]["env_lookahead"])
    comparison = comparison.iloc[order]
    comparison.attrs["summary"] = summary
    return comparison


def _comparison_rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    games = game_names(table)
    headers = ["run", "mode", "N", "clemscore [95% CI]", "statscore", "% played", "quality"]
    headers += [f"{game} quality" for game in games]
    headers += ["gen tok/ep", "PRM tok/ep", "wall s/ep", "episodes", "errored"]
    rows = []
    for label, row in table.iterrows():
        cells = [
            label, str(row["mode"]), number(row["n_candidates"], 0),
            with_interval(row[CLEMSCORE], row[CLEMSCORE + CI_LOW], row[CLEMSCORE + CI_HIGH]),
            number(row[STATSCORE]), number(row[AVERAGE_PLAYED]), number(row[AVERAGE_QUALITY]),
        ]
        cells += [number(row[f"{game}, {QUALITY}"]) for game in games]
        cells += [number(row[column], 1) for column in COST_COLUMNS.values()]
        cells += [str(int(row[EPISODES])), str(int(row[ERRORED]))]
        rows.append(cells)
    return headers, rows


def _sections(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    sections = [(HONEST_TITLE, table[table["section"] == HONEST]),
                (LOOKAHEAD_TITLE, table[table["section"] == LOOKAHEAD])]
    return [(title, part) for title, part in sections if len(part)]


def render_comparison(table: pd.DataFrame) -> str:
    """The comparison from ``compare_runs`` as plain text: honest runs, then env-lookahead runs apart."""
    parts = []
    for title, part in _sections(table):
        parts += [title, text_table(*_comparison_rows(part)), ""]
    parts += table.attrs.get("summary", [])
    return "\n".join(parts).rstrip() + "\n"


def comparison_markdown(table: pd.DataFrame) -> str:
    """The comparison as a Markdown document (compare.md), one section per kind of run."""
    parts = ["# Run comparison", ""]
    for title, part in _sections(table):
        parts += [f"## {title}", "", markdown_table(*_comparison_rows(part)), ""]
    parts += [f"- {line}" for line in table.attrs.get("summary", [])]
    return "\n".join(parts).rstrip() + "\n"

"""Readable renderings of the clemscore table: aligned plain text for the terminal, Markdown for files."""

from __future__ import annotations

import math

import pandas as pd

from playprm.report.clemscore import (
    AVERAGE_PLAYED,
    AVERAGE_QUALITY,
    CI_HIGH,
    CI_LOW,
    CLEMSCORE,
    ENV_LOOKAHEAD,
    EPISODES,
    ERRORED,
    INTERACTIVE,
    PLAYED,
    QUALITY,
    STATSCORE,
    UNREADABLE,
    game_names,
)
from playprm.tables import markdown_table, text_table

METHOD_NOTE = (
    "95% CI: stratified percentile bootstrap — episodes resampled with replacement within each game "
    "(seeded), per-game means and the clemscore / statscore macro-averages recomputed per resample."
)


HONEST_TITLE = "Honest decoding modes"
LOOKAHEAD_TITLE = (
    "Environment-lookahead runs (the search saw game answers to actions it did not play; "
    "not comparable to benchmark numbers)"
)


def number(value, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals; blank for NaN/None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return f"{float(value):.{digits}f}"


def with_interval(point, low, high) -> str:
    """``"33.66 [26.62, 41.00]"``; the point alone where the interval is blank, blank for no point."""
    text = number(point)
    if text and number(low) and number(high):
        text += f" [{number(low)}, {number(high)}]"
    return text


def _cell(table: pd.DataFrame, model: str, column: str):
    return table.at[model, column] if column in table.columns else float("nan")


def mixes_kinds(table: pd.DataFrame) -> bool:
    """Whether the table's games include static tasks, so that Playpen's clemscore (interactive games) and
    clemcore's clemscore (all games) differ."""
    return bool(table.attrs.get("static_games"))


def score_columns(mixed: bool) -> list[tuple[str, str]]:
    """``(header, column)`` of the aggregate scores to show, each named: where the games mix both kinds (``mixed``)
    Playpen's clemscore (interactive games) and statscore, then clemcore's all-games clemscore; else clemcore's
    clemscore, the only number (no static task: statscore is blank and left out)."""
    if not mixed:
        return [("clemscore (all games; none static)", CLEMSCORE)]
    return [("Playpen clemscore (interactive games)", INTERACTIVE), ("statscore (static tasks)", STATSCORE),
            ("clemcore clemscore (all games)", CLEMSCORE)]


def scored(table: pd.DataFrame, row, column: str) -> str:
    """``row``'s ``column`` with its CI (``row``: a model label of ``table``, or a Series)."""
    cell = (lambda name: _cell(table, row, name)) if isinstance(row, str) else (lambda name: row.get(name))
    return with_interval(cell(column), cell(column + CI_LOW), cell(column + CI_HIGH))


def lookahead_sections(table: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """``(title, models)`` of the table's rows kept apart: honest decoding, then environment-lookahead runs
    (``env_lookahead``); one untitled section where no run looked ahead."""
    flags = table[ENV_LOOKAHEAD].fillna(False).astype(bool) if ENV_LOOKAHEAD in table.columns else {}
    lookahead = [model for model in table.index if model in flags and flags[model]]
    if not lookahead:
        return [("", list(table.index))]
    honest = [model for model in table.index if model not in lookahead]
    return [(title, models) for title, models in ((HONEST_TITLE, honest), (LOOKAHEAD_TITLE, lookahead)) if models]


def overview_rows(table: pd.DataFrame, models: list[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the per-model overview (``models``, default all): clemscore and statscore with CIs,
    averages, counts."""
    columns = score_columns(mixes_kinds(table))
    headers = ["model", *[f"{header} [95% CI]" for header, _ in columns], "% played", "quality", "episodes",
               "errored", "unreadable"]
    rows = []
    for model in table.index if models is None else models:
        rows.append([
            model,
            *[scored(table, model, column) for _, column in columns],
            number(_cell(table, model, AVERAGE_PLAYED)),
            number(_cell(table, model, AVERAGE_QUALITY)),
            str(int(_cell(table, model, f"-, {EPISODES}"))),
            str(int(_cell(table, model, f"-, {ERRORED}"))),
            str(int(_cell(table, model, f"-, {UNREADABLE}"))),
        ])
    return headers, rows


def game_rows(table: pd.DataFrame, models: list[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the per-(model, game) breakdown with CIs (``models``, default all)."""
    headers = ["model", "game", "% played [95% CI]", "quality [95% CI]", "episodes", "errored", "unreadable"]
    rows = []
    static = set(table.attrs.get("static_games") or [])
    for model in table.index if models is None else models:
        for game in game_names(table):
            episodes = int(_cell(table, model, f"{game}, {EPISODES}"))
            errored = int(_cell(table, model, f"{game}, {ERRORED}"))
            unreadable = int(_cell(table, model, f"{game}, {UNREADABLE}"))
            if not episodes and not errored and not unreadable:
                continue
            cells = [model, f"{game} (static)" if game in static else game]
            for metric in (PLAYED, QUALITY):
                base = f"{game}, {metric}"
                cells.append(with_interval(_cell(table, model, base), _cell(table, model, base + CI_LOW),
                                           _cell(table, model, base + CI_HIGH)))
            rows.append([*cells, str(episodes), str(errored), str(unreadable)])
    return headers, rows


def render_table(table: pd.DataFrame) -> str:
    """The clemscore table as plain text for the terminal: overview, then per game (environment-lookahead runs
    apart in each), then notes."""
    parts = []
    for rows in (overview_rows, game_rows):
        for title, models in lookahead_sections(table):
            parts += [*([title] if title else []), text_table(*rows(table, models)), ""]
    parts += _notes(table)
    return "\n".join(parts).rstrip() + "\n"


def results_markdown(table: pd.DataFrame) -> str:
    """The clemscore table as a Markdown document (results.md), environment-lookahead runs apart."""
    parts = ["# Scores", ""]
    for heading, level, rows in (("", "##", overview_rows), ("## Per game", "###", game_rows)):
        parts += [heading, ""] if heading else []
        for title, models in lookahead_sections(table):
            parts += [*([f"{level} {title}", ""] if title else []), markdown_table(*rows(table, models)), ""]
    parts += [f"- {note}" for note in _notes(table)]
    return "\n".join(parts).rstrip() + "\n"


def _notes(table: pd.DataFrame) -> list[str]:
    notes = [table.attrs.get("game_kinds", "")]
    if mixes_kinds(table):
        notes.append("clemcore clemscore (all games): clemcore's `clem eval` over every game read, static tasks "
                     "included; Playpen (`playpen eval`) reports clemscore over the interactive games and statscore "
                     "over the static tasks apart")
    notes.append("errored: an error.json and no scores.json (clemcore leaves them out); unreadable: a scores.json "
                 "that holds no countable scores, left out as clemcore cannot count it either")
    notes.append(METHOD_NOTE)
    notes += table.attrs.get("summary", [])
    return notes


CHANCE_LABEL = "chance (a random guess)"  # the row a policy is paired against a game's chance level as


def run_name(label: str) -> str:
    """The run's folder name of a comparison row label (``"sft-greedy/..."`` -> ``"sft-greedy"``)."""
    return str(label).split("/", 1)[0]


def finite_number(value) -> float | None:
    """``value`` as a float rounded to 4 places for results.json, or None where it is missing or not a number."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else round(value, 4)


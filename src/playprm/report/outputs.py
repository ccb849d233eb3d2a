"""The files ``playprm report`` writes: CSV (clemcore columns first), Markdown and PNG, each atomically."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from playprm.atomic import write_json, write_text
from playprm.report.compare import COST_COLUMNS, comparison_markdown
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
    """Write OUT/compare.csv (``section`` and ``env_lookahead`` mark lookahead runs), compare.md, and
    compute.png where a run has cost.json files (runs played elsewhere have none: no empty plot)."""
    written = [out / "compare.csv", out / "compare.md"]
    write_text(written[0], comparison.to_csv())
    write_text(written[1], comparison_markdown(comparison))
    if comparison[COST_COLUMNS["generated_tokens"]].notna().any():
        written.append(plot_compute(comparison, out / "compute.png"))
    return written


NO_COMPUTE_PLOT = ("no compute.png: no run has cost.json files (playprm eval writes one per episode; runs played "
                   "elsewhere have none)")


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "run"


def short_names(a: str, b: str) -> tuple[str, str]:
    """The shortest trailing parts of two run labels (paths, ``..`` dropped) that tell them apart, for file names:
    ``../data/qwen3.5-27b`` and ``../x/playpen_runs/qwen3.5-27b`` give ``data/qwen3.5-27b`` and
    ``playpen_runs/qwen3.5-27b``."""
    parts = [[p for p in Path(label).parts if p not in ("..", ".", "/")] or [label] for label in (a, b)]
    for length in range(1, max(map(len, parts)) + 1):
        names = ["/".join(p[-length:]) for p in parts]
        if names[0] != names[1]:
            return names[0], names[1]
    return a, b


def write_paired(comparison: pd.DataFrame, pairs: list[tuple[str, str]], out: Path, *, n_resamples: int,
                 seed: int) -> tuple[str, list[Path]]:
    """The paired differences of ``pairs`` (run labels of ``comparison``): OUT/paired.md and paired.json with each
    clemscore's paired difference (``paired.paired_scores``: Playpen's clemscore and statscore, clemcore's
    all-games clemscore, each named) and the per-game table of each pair, and OUT/forest_<A>_vs_<B>.png per pair.
    Returns the Markdown text and the files written."""
    from playprm.report.paired import paired_scores, render_paired, run_frame, static_games
    from playprm.report.paired_games import (
        game_differences_json,
        per_game_differences,
        render_game_differences,
    )
    from playprm.report.plots import plot_game_differences

    totals, sections, documents, written = [], [], [], []
    for a, b in pairs:
        frames = run_frame(comparison, a), run_frame(comparison, b)
        scores = paired_scores(comparison, a, b, n_resamples=n_resamples, seed=seed)
        static = static_games(comparison, a, b)
        games = []  # each game's points within its own score: interactive games in clemscore, static in statscore
        for is_static in (False, True):
            games += per_game_differences(*[frame[frame["game"].isin(static) == is_static] for frame in frames],
                                          n_resamples=n_resamples, seed=seed)
        totals += scores
        sections += [f"## Where {a} and {b} differ, per game", "", render_game_differences(a, b, games, static), ""]
        documents.append({**scores[0].as_dict(), "scores": [d.as_dict() for d in scores],
                          **game_differences_json(a, b, games)})
        if games:
            names = short_names(a, b)
            path = out / f"forest_{_slug(names[0])}_vs_{_slug(names[1])}.png"
            written.append(plot_game_differences(a, b, games, path, static=static, totals=scores))
    text = "\n".join(["# Paired differences (same instances)", "", render_paired(totals), "", PAIRED_NOTE, "",
                      *sections])
    written = [write_text(out / "paired.md", text), write_json(out / "paired.json", documents), *written]
    return text, written


PAIRED_NOTE = ("A (whole run) and B (whole run): the report's scores of each run over all its episodes; A - B: over "
               "the instances both played, with a paired bootstrap 95% CI (instances resampled within each game, the "
               "same draw for both runs). Playpen clemscore averages the interactive games, statscore the static "
               "tasks; clemcore clemscore (all games) is `clem eval`'s number over every game read.")


def write_turns(comparison: pd.DataFrame, out: Path) -> tuple[str, list[Path]]:
    """What the turns of each compared run did (``guided_turns``): OUT/turns.md and turns.json. Returns the
    rows worth a look (repeats of rejected replies, guided turns) as Markdown, and the files written."""
    from playprm.report.guided_turns import guided_turns, render_guided_turns

    label_of = {(row["results dir"], row["model"]): label for label, row in comparison.iterrows()}
    table = {}
    for results_dir in dict.fromkeys(comparison["results dir"]):
        for (model, game), counts in guided_turns(Path(results_dir)).items():
            table[(label_of.get((results_dir, model), model), game)] = counts
    text = ("# What the turns did\n\n" + render_guided_turns(table) + "\n\n" + TURNS_NOTE + "\n")
    written = [write_text(out / "turns.md", text),
               write_json(out / "turns.json", [{"run": run, "game": game, **counts.as_dict()}
                                               for (run, game), counts in sorted(table.items())])]
    return render_guided_turns(table, only_notable=True), written


TURNS_NOTE = ("A reply counts as rejected when the game asks the same player again in the same round (some games "
              "ask several times per round by design, e.g. matchit_ascii); a repeat is a later reply of the same "
              "player with the same text. Switches, margins and chosen-rejected counts come from candidates.jsonl "
              "(guided playprm runs only).")

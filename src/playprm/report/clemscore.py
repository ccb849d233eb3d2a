"""clemscore and statscore tables, computed exactly as clemcore's ``clem eval`` computes clemscore.

The clemcore columns come from clemcore itself: the episode scores read by ``playprm.report.episodes`` go
through ``clemcore.clemeval.save_clem_table``, so ``-, clemscore``, every ``<game>, % Played`` /
``<game>, Quality Score`` and the ``all, Average ...`` columns are clemcore's numbers, names and order
(clemcore sorts the game columns by name, ``all`` among them). Only after those come playprm's extras:

- ``-, clemscore (interactive)`` and ``-, statscore``: Playpen's two numbers, the same aggregate over the
  interactive games and over the static tasks (which game is which: ``playprm.report.game_kinds``): per-game
  values rounded to 2, averaged, rounded, multiplied. Where no static game was played, the first equals
  clemcore's clemscore and statscore is blank, with the reason in the notes.
- bootstrap 95% intervals (``... CI low`` / ``... CI high``) for clemscore, statscore and every game's
  % Played and Quality Score; see ``playprm.report.bootstrap`` for the method.
- ``episodes`` (scored episodes), ``errored`` (an ``error.json`` and no scores.json: counted apart,
  never scored, as clemcore leaves them out) and ``unreadable`` (a scores.json without countable scores, left
  out) per game and in total. With ``errored_as_aborted`` they are
  scored as aborted episodes instead (Aborted 1, no Main Score), so ``% Played`` counts them.
- ``env_lookahead``: the run's search saw the game's answers to actions it did not play (``playprm_run.json``);
  reports keep such rows apart from honest decoding.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import pandas as pd
from clemcore.clemgame import metrics as clemmetrics

from playprm.errors import UsageError
from playprm.report.bootstrap import bootstrap_intervals
from playprm.report.episodes import EpisodeScores, load_episode_scores, per_episode
from playprm.report.game_kinds import classify_games
from playprm.results.layout import RUN_METADATA_FILE
from playprm.results.run_record import RunRecord

CLEMSCORE = "-, clemscore"  # clemcore's: every game read, static tasks included
INTERACTIVE = "-, clemscore (interactive)"  # Playpen's clemscore: the interactive games only
STATSCORE = "-, statscore"
AVERAGE_PLAYED = "all, Average % Played"
AVERAGE_QUALITY = "all, Average Quality Score"
PLAYED = "% Played"
QUALITY = "Quality Score"
CI_LOW = " CI low"
CI_HIGH = " CI high"
EPISODES = "episodes"
ERRORED = "errored"
UNREADABLE = "unreadable"  # a scores.json with no countable scores: left out, as clemcore cannot count it
ENV_LOOKAHEAD = "env_lookahead"  # the run's search saw game answers to actions it did not play (not honest)


def clemcore_table(frame: pd.DataFrame) -> pd.DataFrame:
    """clemcore's results table for clemeval's raw episode-scores frame (``Played`` rows included).

    Runs ``clemeval.save_clem_table`` in a scratch folder (it always writes results.csv/.html and prints),
    so the numbers are clemcore's own.
    """
    metrics_present = set(frame["metric"])
    for needed in (clemmetrics.METRIC_ABORTED, clemmetrics.BENCH_SCORE):
        if needed not in metrics_present:
            raise UsageError(
                f"no scores.json holds a '{needed}' episode score, so clemcore cannot compute clemscore; "
                "rescore the episodes with the game's scorer (`clem score -r DIR`)"
            )
    from clemcore import clemeval

    with tempfile.TemporaryDirectory() as scratch, contextlib.redirect_stdout(io.StringIO()):
        return clemeval.save_clem_table(frame, scratch)


def score_errored_as_aborted(episodes: EpisodeScores) -> EpisodeScores:
    """``episodes`` with every errored episode added to the frame as an aborted one (``--errored-as-aborted``):
    Aborted 1, Success 0, Lose 0, Played 0 and no Main Score, as a game scores an abort."""
    values = ((clemmetrics.METRIC_ABORTED, 1), (clemmetrics.METRIC_SUCCESS, 0), (clemmetrics.METRIC_LOSE, 0),
              (clemmetrics.BENCH_SCORE, float("nan")), (clemmetrics.METRIC_PLAYED, 0))
    rows = [[game, model, experiment, episode, metric, value]
            for model, game, experiment, episode in episodes.errored_episodes for metric, value in values]
    if rows:
        episodes.frame = pd.concat([episodes.frame, pd.DataFrame(rows, columns=episodes.frame.columns)],
                                   ignore_index=True)
    episodes.errored_as_aborted = True
    return episodes


def _subset_clemscore(table: pd.DataFrame, games: list[str]) -> pd.Series:
    # clemcore's recipe on a subset: per-game values (already rounded), mean, round, product, round
    if not games:
        return pd.Series(float("nan"), index=table.index)
    played = table[[f"{game}, {PLAYED}" for game in games]].mean(axis=1).round(2)
    quality = table[[f"{game}, {QUALITY}" for game in games]].mean(axis=1).round(2)
    return (played / 100 * quality).round(2)


def table_from_episodes(
    episodes: EpisodeScores,
    static_games: set[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    games_dir: Path | None = None,
) -> pd.DataFrame:
    """The full table (clemcore columns, then playprm's) for already loaded episodes.

    ``static_games``: the user's list (an empty set: no static game); None decides each game's kind as
    ``playprm.report.game_kinds`` does (with ``games_dir`` for the registry). Rows: one per model name, sorted
    like clemcore. ``-, clemscore`` is clemcore's (all games); ``-, clemscore (interactive)`` and ``-, statscore``
    are Playpen's two numbers (equal to clemcore's where no game is static; statscore then blank).
    """
    table = clemcore_table(episodes.frame)
    games = game_names(table)
    kinds = classify_games(episodes, static_games, games_dir)
    static = [game for game in games if game in kinds.static]
    rows = per_episode(episodes.frame)
    intervals = bootstrap_intervals(rows, set(static), n_resamples, seed)
    counts = rows.groupby(["model", "game"]).size()
    totals = rows.groupby("model").size()
    unreadable = episodes.unreadable_counts()
    errored_games = sorted({game for _, game in episodes.errored} | {game for _, game in unreadable})
    interactive = kinds.interactive(games)
    extras: dict[str, list] = {
        INTERACTIVE: list(_subset_clemscore(table, interactive) if static else table[CLEMSCORE]),
        STATSCORE: list(_subset_clemscore(table, static)),
    }
    for column, name in ((CLEMSCORE, "clemscore"), (INTERACTIVE, "interactive"), (STATSCORE, "statscore")):
        extras[f"{column}{CI_LOW}"] = [getattr(intervals[m], name).low for m in table.index]
        extras[f"{column}{CI_HIGH}"] = [getattr(intervals[m], name).high for m in table.index]
    extras[f"-, {EPISODES}"] = [int(totals.get(m, 0)) for m in table.index]
    extras[f"-, {ERRORED}"] = [
        sum(n for (model, _), n in episodes.errored.items() if model == m) for m in table.index
    ]
    extras[f"-, {UNREADABLE}"] = [sum(n for (model, _), n in unreadable.items() if model == m) for m in table.index]
    for game in sorted(set(games) | set(errored_games)):
        for metric, attribute in ((PLAYED, "played"), (QUALITY, "quality")):
            for suffix, bound in ((CI_LOW, "low"), (CI_HIGH, "high")):
                extras[f"{game}, {metric}{suffix}"] = [
                    _bound(getattr(intervals[m], attribute), game, bound) for m in table.index
                ]
        extras[f"{game}, {EPISODES}"] = [int(counts.get((m, game), 0)) for m in table.index]
        extras[f"{game}, {ERRORED}"] = [episodes.errored.get((m, game), 0) for m in table.index]
        extras[f"{game}, {UNREADABLE}"] = [unreadable.get((m, game), 0) for m in table.index]
    extras[ENV_LOOKAHEAD] = [env_lookahead(episodes.model_dirs.get(m, [])) for m in table.index]
    extra_frame = pd.DataFrame(extras, index=table.index)
    bounds = [column for column in extra_frame.columns if column.endswith((CI_LOW, CI_HIGH))]
    extra_frame[bounds] = extra_frame[bounds].round(2)  # clemcore's precision
    result = pd.concat([table, extra_frame], axis=1)
    result.attrs["static_games"] = sorted(static)
    result.attrs["game_kinds"] = kinds.describe()
    result.attrs["summary"] = (episodes.summary_lines() + kinds.notes
                               + _unscored_errored_lines(episodes, table.index))
    return result


def env_lookahead(model_dirs: list[Path]) -> bool:
    """Whether a model's run (its folders, one per shard) is an environment-lookahead search, as the first
    ``playprm_run.json`` among them records; False for runs playprm did not play."""
    for model_dir in model_dirs:
        if (model_dir / RUN_METADATA_FILE).is_file():
            return RunRecord.read(model_dir / RUN_METADATA_FILE).env_lookahead
    return False


def _bound(per_game: dict, game: str, bound: str) -> float:
    interval = per_game.get(game)
    return float("nan") if interval is None else getattr(interval, bound)


def _unscored_errored_lines(episodes: EpisodeScores, models: pd.Index) -> list[str]:
    unscored = sorted({model for model, _ in episodes.errored} - set(models))
    if not unscored:
        return []
    return [f"model(s) with errored episodes only, so no row: {', '.join(unscored)}"]


def compute_table(
    results_dirs: list[Path],
    static_games: set[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    errored_as_aborted: bool = False,
    games_dir: Path | None = None,
) -> pd.DataFrame:
    """clemscore table of one or more results dirs (shards are read as one run set).

    Inputs: the dirs; ``static_games`` (None: each game's kind decided as ``playprm.report.game_kinds`` does,
    ``games_dir`` an extra games folder for it; an empty set: no statscore);
    bootstrap ``n_resamples`` and ``seed``; ``errored_as_aborted`` (score errored episodes as aborted ones
    instead of leaving them out as clemcore does). Output: a DataFrame indexed by model-pair folder name whose
    first columns equal clemcore's ``clem eval`` results.csv (names, order, values), followed by
    statscore, CIs and episode counts. ``table.attrs["summary"]`` lists skipped files and errored episodes;
    ``table.attrs["static_games"]`` the static games used. Raises UsageError for unusable input.
    """
    if n_resamples < 1:
        raise UsageError(f"--resamples must be at least 1, got {n_resamples}")
    episodes = load_episode_scores(list(results_dirs))
    if errored_as_aborted:
        episodes = score_errored_as_aborted(episodes)
    return table_from_episodes(episodes, static_games, n_resamples, seed, games_dir)


def game_names(table: pd.DataFrame) -> list[str]:
    """The games of a table (or comparison), sorted: every ``<game>, Quality Score`` / ``<game>, errored``."""
    names = {
        column.rsplit(", ", 1)[0]
        for column in table.columns
        if column.endswith((f", {QUALITY}", f", {ERRORED}"))
    }
    return sorted(names - {"all", "-"})

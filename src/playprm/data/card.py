"""Pieces of the README.md dataset cards: what went in, what was filtered out or skipped, and why.

The front matter names the split files, so ``datasets.load_dataset(OUT)`` finds train and validation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from playprm import tables
from playprm.data.records import instance_of
from playprm.results import OUTCOMES, EpisodeRecord

MAX_LISTED = 20  # skipped episodes or dropped samples named one by one in a card; the rest are counted


def front_matter(files: dict[str, str]) -> str:
    """YAML front matter mapping split names to files (``{"train": "train.jsonl", ...}``)."""
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split, path in files.items():
        lines += [f"  - split: {split}", f"    path: {path}"]
    return "\n".join(lines + ["---"])


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A card's Markdown table: columns of whole numbers right-aligned."""
    return tables.markdown_table(header, list(rows), align="numbers")


def outcome_table(episodes: Sequence[EpisodeRecord]) -> str:
    """Episodes seen per game and outcome ("unknown": unscored or ended with error.json), with a total."""
    return outcome_counts_table([(episode.game, episode.outcome) for episode in episodes], OUTCOMES, "episodes")


def no_outcome_line(episodes: Sequence[EpisodeRecord], hint: str = "") -> str:
    """One console line on the episodes that have no outcome, by reason and game ("" when every episode has
    one): unscored ones (no scores.json, which clemcore's report leaves out too), games whose flags name no
    outcome (TextArena's), flags that contradict each other. ``hint`` ends the line (what the user can do)."""
    reasons: dict[str, Counter] = {}
    for episode in episodes:
        if episode.outcome is None and episode.error is None:
            reasons.setdefault(episode.outcome_problem, Counter())[episode.game] += 1
    if not reasons:
        return ""
    parts = []
    for reason, games in sorted(reasons.items()):
        listed = ", ".join(f"{game} {count}" for game, count in sorted(games.items())[:6])
        more = f", +{len(games) - 6} games" if len(games) > 6 else ""
        parts.append(f"{sum(games.values())} {reason} ({listed}{more})")
    total = sum(sum(games.values()) for games in reasons.values())
    return f"{total} episode(s) have no outcome and were left out: {'; '.join(parts)}" + (f"; {hint}" if hint else "")


def outcome_counts_table(seen: Sequence[tuple[str, str | None]], outcomes: Sequence[str], unit: str) -> str:
    """``(game, outcome)`` pairs counted per game and outcome (None: "unknown"), with a total; ``unit`` names
    the last column ("episodes", "records")."""
    columns = [*outcomes, None]
    counts = Counter(seen)
    games = sorted({game for game, _ in seen})
    rows = [[game, *(counts[game, outcome] for outcome in columns),
             sum(counts[game, outcome] for outcome in columns)] for game in games]
    rows.append(["**total**", *(sum(counts[game, outcome] for game in games) for outcome in columns),
                 len(seen)])
    return markdown_table(["game", *outcomes, "unknown", unit], rows)


def split_table(train: Sequence[dict], validation: Sequence[dict]) -> str:
    """Records per game in each split, with a total."""
    in_train = Counter(record["meta"]["game"] for record in train)
    in_validation = Counter(record["meta"]["game"] for record in validation)
    games = sorted(set(in_train) | set(in_validation))
    rows = [[game, in_train[game], in_validation[game]] for game in games]
    rows.append(["**total**", len(train), len(validation)])
    return markdown_table(["game", "train", "validation"], rows)


def split_note(train: Sequence[dict], validation: Sequence[dict], *, seed: int, val_fraction: float) -> str:
    """One paragraph saying how the split was made and how many instances each side holds."""
    def instances(records):
        return len({instance_of(record) for record in records})

    return (
        f"Split by game instance (game, experiment, game_id) with seed {seed} and val-fraction {val_fraction}: "
        f"{instances(train)} instances in train, {instances(validation)} in validation, none in both. "
        "An instance's side depends only on the seed and the instance, so datasets built from the same runs "
        "agree, except that a run with no instance drawn for validation moves its lowest draw there. Older "
        "records without instance.json identify instances by episode folder (`meta.game_id_source`)."
    )


def skipped_section(skipped: Sequence[tuple[Path, str]]) -> str:
    """How many episodes could not be read, and the first ones with their reasons."""
    if not skipped:
        return "Skipped as unreadable: 0 episodes."
    lines = [f"Skipped as unreadable: {len(skipped)} episodes."]
    lines += [f"- `{path}`: {reason}" for path, reason in skipped[:MAX_LISTED]]
    if len(skipped) > MAX_LISTED:
        lines.append(f"- … and {len(skipped) - MAX_LISTED} more")
    return "\n".join(lines)

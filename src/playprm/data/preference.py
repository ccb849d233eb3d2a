"""Preference pairs for DPO, in TRL's conversational preference format, split by instance.

A record is ``{"prompt": [messages the player saw, ending with a user turn], "chosen": [{"role": "assistant",
"content": reply}], "rejected": [{"role": "assistant", "content": reply}], "chosen_value", "rejected_value",
"source", "meta": {game, experiment, game_id, player, game_role, turn, ...}}``: what ``datasets`` reads and TRL's
``DPOTrainer`` takes (extra columns are ignored there). Both replies of a pair answer the same context; replies of
different contexts are never paired.

Sources:

- ``mc``: sibling replies in the rollout trees of ``collect --branch-factor`` (``turns.jsonl``), valued by their
  Monte-Carlo labels (the share of won leaves below each reply, ``data.rollout_tree``); a pair needs values that
  differ by at least ``min_gap``.
- ``candidates``: the N candidates a best-of-N run scored at each guided turn (``candidates.jsonl``), the
  best-scored one chosen over the worst-scored one when their scores differ by at least ``min_gap``. The scorer is
  the run's (``--scorer``: prm, logprob, or the programmatic expert, which is an oracle: the card says so).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from playprm.atomic import write_jsonl, write_text
from playprm.data import card
from playprm.data.prm import find_rollout_trees, tree_records
from playprm.data.records import episode_meta, instance_of
from playprm.data.split import split_by_instance
from playprm.results import ResultsScan
from playprm.results.layout import CANDIDATES_FILE, RUN_METADATA_FILE

SOURCES = ("mc", "candidates")
ORACLE_SCORERS = ("expert",)  # scorers that see what the policy cannot: their pairs are oracle data


@dataclass
class PreferenceDataset:
    """The pairs of one ``pref-data`` run and what its card reports."""

    train: list[dict]
    validation: list[dict]
    source: str
    min_gap: float
    scan: ResultsScan
    trees: list[Path] = field(default_factory=list)
    scorers: Counter = field(default_factory=Counter)  # candidates source: turns per scorer
    below_gap: int = 0  # pairs of replies whose values differ by less than min_gap: left out
    skipped: list[tuple[str, str]] = field(default_factory=list)


def preference_record(context: list[dict], chosen: str, rejected: str, chosen_value: float, rejected_value: float,
                      source: str, meta: dict) -> dict:
    """One pair in TRL's conversational preference format (see the module docstring)."""
    return {"prompt": context, "chosen": [{"role": "assistant", "content": chosen}],
            "rejected": [{"role": "assistant", "content": rejected}], "chosen_value": chosen_value,
            "rejected_value": rejected_value, "source": source, "meta": meta}


def mc_pairs(trees: Sequence[Path], scan: ResultsScan, min_gap: float, dataset: PreferenceDataset) -> list[dict]:
    """Sibling pairs of the rollout ``trees`` whose Monte-Carlo values differ by at least ``min_gap``."""
    records = []
    for tree in trees:
        found = tree_records(tree, scan, dataset.skipped)
        for meta, chosen, rejected, chosen_label, rejected_label in found.pairs:
            if chosen_label.value - rejected_label.value < min_gap:
                dataset.below_gap += 1
                continue
            pair_meta = {key: meta[key] for key in ("game", "experiment", "game_id", "player", "game_role", "model",
                                                    "model_folder", "turn", "parent_id")}
            pair_meta.update(chosen_rollouts=chosen_label.rollouts, rejected_rollouts=rejected_label.rollouts,
                             chosen_turn_id=chosen.turn_id, rejected_turn_id=rejected.turn_id)
            records.append(preference_record(chosen.context, chosen.response, rejected.response, chosen_label.value,
                                             rejected_label.value, "mc", pair_meta))
    return records


def candidate_pairs(scan: ResultsScan, min_gap: float, dataset: PreferenceDataset) -> list[dict]:
    """At each logged turn with scored candidates, the best-scored against the worst-scored distinct reply, where
    the scores differ by at least ``min_gap``; the context is the player's at that turn (``interactions.json``)."""
    records = []
    for episode in scan.episodes:
        path = episode.path / CANDIDATES_FILE
        if not path.is_file():
            continue
        scorer = _run_scorer(episode)
        turns = {player.name: episode.llm_turns(player.name) for player in episode.llm_players()}
        logged = Counter()  # the k-th logged turn of a player is its k-th recorded reply ("turn" counts the game's)
        players = {player.name: player for player in episode.llm_players()}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                log = json.loads(line)
            except json.JSONDecodeError as error:
                dataset.skipped.append((f"{path}:{number}", f"not valid JSON ({error.msg})"))
                continue
            scored = {c["text"]: c["score"] for c in log.get("candidates", [])
                      if isinstance(c.get("score"), int | float) and isinstance(c.get("text"), str)}
            player_turns = turns.get(log.get("player"), [])
            index = logged[log.get("player")]
            logged[log.get("player")] += 1
            turn = player_turns[index] if index < len(player_turns) else None
            candidates, chosen = log.get("candidates") or [], log.get("chosen")
            played = candidates[chosen].get("text") if isinstance(chosen, int) and 0 <= chosen < len(candidates) else None
            # the logged turn must be the recorded one (the same reply played), or its context is another's
            if len(scored) < 2 or turn is None or not turn.context or turn.response.strip() != str(played).strip():
                continue
            best, worst = max(scored, key=scored.get), min(scored, key=scored.get)
            if scored[best] - scored[worst] < min_gap or scored[best] == scored[worst]:
                dataset.below_gap += 1
                continue
            dataset.scorers[scorer] += 1
            meta = {**episode_meta(episode, players[log["player"]]), "turn": log["turn"], "scorer": scorer,
                    "oracle": scorer in ORACLE_SCORERS}
            records.append(preference_record(turn.context, best, worst, scored[best], scored[worst], "candidates",
                                             meta))
    return records


def _run_scorer(episode) -> str:
    """The scorer of the run the episode belongs to, from playprm's run record beside it (``scorer`` in its
    fingerprint), "prm" where it names only a PRM, else "unknown"."""
    try:
        record = json.loads((episode.model_dir / RUN_METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "unknown"
    if not isinstance(record, dict):
        return "unknown"
    fingerprint = record.get("fingerprint") if isinstance(record.get("fingerprint"), dict) else {}
    return str(record.get("scorer") or fingerprint.get("scorer") or ("prm" if record.get("prm_path") else "unknown"))


def build_preference_dataset(scan: ResultsScan, *, source: str, results_dirs: Sequence[Path], min_gap: float,
                             val_fraction: float, seed: int) -> PreferenceDataset:
    """The pairs of ``source`` from ``results_dirs`` (already scanned as ``scan``), split by instance."""
    dataset = PreferenceDataset(train=[], validation=[], source=source, min_gap=min_gap, scan=scan)
    if source == "mc":
        dataset.trees = find_rollout_trees(results_dirs)
        records = mc_pairs(dataset.trees, scan, min_gap, dataset)
    else:
        records = candidate_pairs(scan, min_gap, dataset)
    dataset.train, dataset.validation = split_by_instance(records, instance_of, val_fraction=val_fraction, seed=seed)
    return dataset


def context_count(records: Sequence[dict]) -> int:
    """How many distinct contexts the pairs answer."""
    return len({json.dumps(record["prompt"], sort_keys=True) for record in records})


def write_preference_dataset(dataset: PreferenceDataset, out: Path, *, sources: Sequence[Path], val_fraction: float,
                             seed: int) -> None:
    """``out/train.jsonl``, ``out/validation.jsonl`` and the ``out/README.md`` card, each written atomically."""
    write_jsonl(out / "train.jsonl", dataset.train, allow_nan=False)
    write_jsonl(out / "validation.jsonl", dataset.validation, allow_nan=False)
    write_text(out / "README.md", preference_card(dataset, sources=sources, val_fraction=val_fraction, seed=seed))


def preference_card(dataset: PreferenceDataset, *, sources: Sequence[Path], val_fraction: float, seed: int) -> str:
    """The dataset card: source and its values, the gap, pairs per game and split, contexts, what was left out."""
    records = dataset.train + dataset.validation
    gaps = [record["chosen_value"] - record["rejected_value"] for record in records]
    if dataset.source == "mc":
        what = ("sibling replies of one context in the rollout trees " + ", ".join(f"`{t}`" for t in dataset.trees)
                + ", valued by their Monte-Carlo labels (the share of won leaves below each reply); the "
                "higher-valued reply is `chosen`")
    else:
        oracle = sum(count for scorer, count in dataset.scorers.items() if scorer in ORACLE_SCORERS)
        what = ("the best- against the worst-scored candidate of each guided turn of best-of-N runs "
                f"(`{CANDIDATES_FILE}`), scored by " + ", ".join(f"{s} ({n} turns)" for s, n in
                                                                   sorted(dataset.scorers.items())))
        if oracle:
            what += (f". **{oracle} pairs are ranked by the programmatic expert, an oracle** (it knows the game's "
                     "rules and plays its moves; not a scorer a policy has at play): oracle data, not self-play")
    parts = [
        card.front_matter({"train": "train.jsonl", "validation": "validation.jsonl"}),
        "# Preference pairs from clemcore game episodes",
        f"Built by `playprm pref-data --source {dataset.source} --min-gap {dataset.min_gap:g}` from "
        + ", ".join(f"`{source}`" for source in sources) + ". TRL's conversational preference format: `prompt` (the "
        "messages the player saw), `chosen` and `rejected` (one assistant message each, two replies to that same "
        "context), `chosen_value` / `rejected_value`, `source` and `meta`. Pairs: " + what + ".",
        f"Left out: {dataset.below_gap} pairs whose values differ by less than {dataset.min_gap:g}; unreadable "
        f"lines {len(dataset.skipped)}.",
        "## Episodes seen",
        card.outcome_table(dataset.scan.episodes),
        "## Pairs",
        card.split_table(dataset.train, dataset.validation),
        card.split_note(dataset.train, dataset.validation, seed=seed, val_fraction=val_fraction),
        f"Distinct contexts: {context_count(dataset.train)} in train, {context_count(dataset.validation)} in "
        f"validation. Value gap chosen − rejected: mean {sum(gaps) / len(gaps):.3f}, min {min(gaps):.3f}, "
        f"max {max(gaps):.3f}." if gaps else "No pairs.",
    ]
    return "\n\n".join(parts) + "\n"

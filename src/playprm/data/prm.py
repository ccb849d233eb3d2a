"""PRM dataset from clemcore results: one labelled record per LLM turn, plus preference pairs.

A record is ``{"messages": <context the player saw>, "response": <its reply>, "label": float in [0, 1],
"label_kind": "outcome" | "mc", "n_rollouts": int, "meta": {...}}``.

- ``outcome`` labels give every turn of an episode that episode's outcome (success 1; lose and abort
  configurable, 0 by default): one rollout per turn.
- ``mc`` labels come from the rollout trees of ``collect --branch-factor`` (``turns.jsonl``): the share of
  successful finished leaves below the node, over ``n_rollouts`` leaves. Siblings with different labels also
  give ``pairs.jsonl`` records ``{"messages", "chosen", "rejected", "chosen_label", "rejected_label", "meta"}``.
- ``advantage`` labels (Setlur et al. 2024, "Rewarding Progress"): a reply's mc value minus the mean mc value of
  every reply to the same context (its siblings and itself: the value of the context), A in [-1, 1], stored as
  ``label = (1 + A) / 2`` so the soft-label losses and the [0, 1] scores apply unchanged (0.5: as good as the
  average sibling) with ``"advantage": A`` and ``"value"`` (the mc value) beside it. Why: best-of-N compares replies
  to one context, and an mc label mostly says how winnable the context is, which is the same for every sibling;
  the advantage keeps only what separates them. A reply with no different sibling has no estimate and gives no
  record. Pairs are those of ``mc``.

Turns a prover played (``collect --prover``) are not the policy's replies: they give no record, only leaves.

All files share one split by instance (see ``playprm.data.split``); pairs carry theirs in ``meta.split``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from playprm.atomic import write_jsonl, write_text
from playprm.data import card
from playprm.data.records import episode_meta, instance_of
from playprm.data.rollout_tree import (
    MonteCarloLabel,
    RolloutNode,
    context_key,
    monte_carlo_labels,
    read_rollout_tree,
    sibling_pairs,
)
from playprm.data.split import split_by_instance
from playprm.results import EpisodeRecord, ResultsScan
from playprm.results.layout import TURNS_FILE, instance_key


@dataclass
class PrmDataset:
    """The records of one ``prm-data`` run and what the card reports about them."""

    train: list[dict]
    validation: list[dict]
    pairs: list[dict] | None  # None when no mc labels were asked for
    scan: ResultsScan
    trees: list[Path] = field(default_factory=list)
    tree_lines_skipped: list[tuple[str, str]] = field(default_factory=list)
    unfinished_nodes: int = 0  # tree nodes without a finished leaf below: no mc label
    unknown_leaves: int = 0  # leaves whose outcome is unknown: not counted
    replies_without_context: int = 0
    provers: set = field(default_factory=set)  # models that played continuations in the policy's place
    without_siblings: int = 0  # advantage labels: mc records with no different sibling reply (no record)


UNFLAGGED = ("none", "main-score")  # --unflagged-label: what episodes whose flags name no outcome get


def outcome_label(episode: EpisodeRecord, *, lose_label: float = 0.0, abort_label: float = 0.0,
                  unflagged: str = "none") -> tuple[float | None, str]:
    """``(label, kind)`` of an episode's turns: its outcome (success 1, lose / abort as given, kind "outcome"),
    or with ``unflagged="main-score"`` for a scored episode whose flags name no outcome (TextArena's games set
    none; contradicting flags) its Main Score / 100 clipped to [0, 1] (kind "main-score"); None where neither."""
    value = {"success": 1.0, "lose": lose_label, "aborted": abort_label}
    if episode.outcome is not None:
        return value[episode.outcome], "outcome"
    if unflagged == "main-score" and episode.outcome_problem != "unscored" and episode.main_score is not None:
        return min(1.0, max(0.0, episode.main_score / 100.0)), "main-score"
    return None, ""


def outcome_records(episodes: Sequence[EpisodeRecord], *, lose_label: float = 0.0,
                    abort_label: float = 0.0, unflagged: str = "none") -> tuple[list[dict], int]:
    """``(records, replies_without_context)``: an outcome-labelled record per LLM turn of every episode
    with a label (``outcome_label``), and how many replies had no context to score them in (left out)."""
    records, without_context = [], 0
    for episode in episodes:
        label, kind = outcome_label(episode, lose_label=lose_label, abort_label=abort_label, unflagged=unflagged)
        if label is None:
            continue
        for player in episode.llm_players():
            meta = episode_meta(episode, player)
            for turn in episode.llm_turns(player.name):
                if not turn.context:
                    without_context += 1
                    continue
                records.append({
                    "messages": turn.context, "response": turn.response, "label": label,
                    "label_kind": kind, "n_rollouts": 1,
                    "meta": {**meta, "turn": turn.index, "round": turn.round},
                })
    return records, without_context


def find_rollout_trees(results_dirs: Sequence[Path]) -> list[Path]:
    """The turns.jsonl files of ``results_dirs``: in a folder given directly (a model folder) or one level
    below (a results root)."""
    found: dict[Path, Path] = {}
    for results_dir in results_dirs:
        for path in [Path(results_dir) / TURNS_FILE, *sorted(Path(results_dir).glob(f"*/{TURNS_FILE}"))]:
            if path.is_file():
                found.setdefault(path.resolve(), path)
    return list(found.values())


@dataclass
class TreeRecords:
    """What one turns.jsonl gives: mc records, ``(meta, chosen, rejected, chosen label, rejected label)``
    pairs, and the counts the card reports."""

    records: list[dict]
    pairs: list[tuple[dict, RolloutNode, RolloutNode, MonteCarloLabel, MonteCarloLabel]]
    unfinished_nodes: int
    unknown_leaves: int
    provers: set = field(default_factory=set)


def tree_records(tree: Path, scan: ResultsScan, skipped: list[tuple[str, str]]) -> TreeRecords:
    """Mc-labelled records and sibling pairs of one turns.jsonl.

    A leaf without an outcome of its own takes the outcome of its episode (``leaf_episode``) once scored;
    the player's model is looked up in the episodes of the same model folder.
    """
    model_dir = tree.parent.resolve()
    nodes = read_rollout_tree(tree, on_skip=lambda where, reason: skipped.append((where, reason)))
    episodes = {episode.path.resolve().relative_to(model_dir).as_posix(): episode
                for episode in scan.episodes if episode.model_dir == model_dir}
    models = {(*episode.instance_key, player.name): player.model_name
              for episode in episodes.values() for player in episode.llm_players()}

    def leaf_outcome(node: RolloutNode) -> str | None:
        episode = episodes.get(str(node.leaf_episode).strip("/"))
        return node.outcome or (episode.outcome if episode else None)

    def episode_name(leaf: str | None) -> str | None:
        # named as outcome records name it: the episode folder below the experiment
        if leaf is None:
            return None
        episode = episodes.get(leaf.strip("/"))
        return episode.episode if episode else Path(leaf).name

    labels = monte_carlo_labels(nodes, leaf_outcome)
    metas = {}
    records = []
    for node in nodes.values():
        metas[node.turn_id] = {
            "game": node.game, "experiment": node.experiment, "game_id": node.game_id,
            "episode": episode_name(node.leaf_episode), "player": node.player, "game_role": node.game_role,
            "model": models.get((*instance_key(node.game, node.experiment, node.game_id), node.player)),
            "outcome": leaf_outcome(node) if node.leaf_episode else None, "model_folder": model_dir.name,
            "game_id_source": TURNS_FILE, "turn": node.turn, "turn_id": node.turn_id,
            "parent_id": node.parent_id, "sample": node.sample,
        }
        label = labels.get(node.turn_id)
        if label is not None and node.context and node.prover is None:
            records.append({"messages": node.context, "response": node.response, "label": label.value,
                            "label_kind": "mc", "n_rollouts": label.rollouts, "meta": metas[node.turn_id]})
    pairs = [(metas[chosen.turn_id], chosen, rejected, labels[chosen.turn_id], labels[rejected.turn_id])
             for chosen, rejected in sibling_pairs(nodes, labels)]
    unknown = sum(1 for node in nodes.values() if node.leaf_episode and leaf_outcome(node) is None)
    pairs = [pair for pair in pairs if pair[1].prover is None and pair[2].prover is None]
    return TreeRecords(records, pairs, unfinished_nodes=len(nodes) - len(labels), unknown_leaves=unknown,
                       provers={node.prover for node in nodes.values() if node.prover})


def build_prm_dataset(
    scan: ResultsScan, *, labels: str, trees: Sequence[Path] = (), val_fraction: float, seed: int,
    lose_label: float = 0.0, abort_label: float = 0.0, unflagged: str = "none",
) -> PrmDataset:
    """Records of the kinds ``labels`` names ("outcome", "mc", "both" (outcome and mc) or "advantage") from
    ``scan`` and the rollout ``trees``, split by instance; pairs with mc and advantage labels."""
    records: list[dict] = []
    dataset = PrmDataset(train=[], validation=[], pairs=None, scan=scan, trees=list(trees))
    if labels in ("outcome", "both"):
        records, dataset.replies_without_context = outcome_records(
            scan.episodes, lose_label=lose_label, abort_label=abort_label, unflagged=unflagged)
    tree_pairs = []
    if labels in TREE_LABELS:
        for tree in trees:
            found = tree_records(tree, scan, dataset.tree_lines_skipped)
            if labels == "advantage":
                advantage = advantage_records(found.records)
                dataset.without_siblings += len(found.records) - len(advantage)
                records += advantage
            else:
                records += found.records
            tree_pairs += found.pairs
            dataset.unfinished_nodes += found.unfinished_nodes
            dataset.unknown_leaves += found.unknown_leaves
            dataset.provers |= found.provers
    # the split hashes each instance, so advantage and mc data of the same trees hold out the same instances
    dataset.train, dataset.validation = split_by_instance(records, instance_of, val_fraction=val_fraction,
                                                          seed=seed)
    if labels in TREE_LABELS:
        held_out = {instance_of(record) for record in dataset.validation}
        dataset.pairs = [_pair_record(*pair, held_out) for pair in tree_pairs]
    return dataset


TREE_LABELS = ("mc", "both", "advantage")  # label kinds read from rollout trees


def sibling_advantages(records: list[dict]) -> list[tuple[list[dict], list[float] | None]]:
    """Mc ``records`` grouped by the context they answer (in first-seen order), each group with its members'
    advantages (value minus the mean value of every reply in the group), or None where the group holds fewer than
    two different replies (no estimate of what separates them)."""
    from playprm.models.replies import move

    groups: dict[tuple, list[dict]] = {}
    for record in records:
        groups.setdefault(context_key(record), []).append(record)
    out = []
    for members in groups.values():
        if len({move(record["response"]) for record in members}) < 2:
            out.append((members, None))
            continue
        mean = sum(record["label"] for record in members) / len(members)
        out.append((members, [record["label"] - mean for record in members]))
    return out


def advantage_records(records: list[dict]) -> list[dict]:
    """Advantage-labelled copies of mc ``records`` (module doc): value minus the mean value of every reply to the
    same context; contexts with fewer than two different replies give none."""
    return [{**record, "label": (1 + advantage) / 2, "label_kind": "advantage", "advantage": advantage,
             "value": record["label"]}
            for members, advantages in sibling_advantages(records) if advantages is not None
            for record, advantage in zip(members, advantages, strict=True)]


def _pair_record(meta: dict, chosen: RolloutNode, rejected: RolloutNode, chosen_label: MonteCarloLabel,
                 rejected_label: MonteCarloLabel, held_out: set) -> dict:
    pair_meta = {key: meta[key] for key in ("game", "experiment", "game_id", "player", "game_role", "model",
                                            "model_folder", "turn", "parent_id")}
    pair_meta.update(
        chosen_turn_id=chosen.turn_id, rejected_turn_id=rejected.turn_id,
        chosen_rollouts=chosen_label.rollouts, rejected_rollouts=rejected_label.rollouts,
        split="validation" if instance_of({"meta": meta}) in held_out else "train",
    )
    return {"messages": chosen.context, "chosen": chosen.response, "rejected": rejected.response,
            "chosen_label": chosen_label.value, "rejected_label": rejected_label.value, "meta": pair_meta}


def write_prm_dataset(dataset: PrmDataset, out: Path, *, sources: Sequence[Path], labels: str,
                      val_fraction: float, seed: int, lose_label: float, abort_label: float,
                      unflagged: str = "none") -> None:
    """Write ``out/train.jsonl``, ``out/validation.jsonl``, ``out/pairs.jsonl`` (mc labels only) and the
    ``out/README.md`` card, each atomically."""
    write_jsonl(out / "train.jsonl", dataset.train, allow_nan=False)
    write_jsonl(out / "validation.jsonl", dataset.validation, allow_nan=False)
    if dataset.pairs is not None:
        write_jsonl(out / "pairs.jsonl", dataset.pairs, allow_nan=False)
    text = prm_card(dataset, sources=sources, labels=labels, val_fraction=val_fraction, seed=seed,
                    lose_label=lose_label, abort_label=abort_label, unflagged=unflagged)
    write_text(out / "README.md", text)


def prm_card(dataset: PrmDataset, *, sources: Sequence[Path], labels: str, val_fraction: float, seed: int,
             lose_label: float, abort_label: float, unflagged: str = "none") -> str:
    """The dataset card: sources, label kinds and their definitions, episodes, records, trees and pairs."""
    records = dataset.train + dataset.validation
    parts = [
        card.front_matter({"train": "train.jsonl", "validation": "validation.jsonl"}),
        "# PRM dataset from clemcore game episodes",
        "Built by `playprm prm-data --labels " + labels + "` from "
        + ", ".join(f"`{source}`" for source in sources) + ". One record per LLM turn: `messages` (the "
        "context the player saw), `response` (its reply), `label` in [0, 1], `label_kind`, `n_rollouts` and "
        "`meta` (game, experiment, game_id, episode, player, game_role, model, outcome, turn).",
        "## Episodes seen",
        card.outcome_table(dataset.scan.episodes),
        card.skipped_section(dataset.scan.skipped),
        "## Records",
        card.split_table(dataset.train, dataset.validation),
        card.split_note(dataset.train, dataset.validation, seed=seed, val_fraction=val_fraction),
        label_table(records),
    ]
    if labels in ("outcome", "both"):
        parts.append(
            f"Outcome labels: every turn of an episode gets its outcome: success 1.0, lose {lose_label}, "
            f"aborted {abort_label}. Unscored episodes (no scores.json; clemcore's report leaves them out too) give "
            "no records. "
            + ("Scored episodes whose flags name no outcome (no Success/Lose/Aborted set, or Success and Lose "
               "both set) are labelled Main Score / 100 (`label_kind` main-score). " if unflagged == "main-score"
               else "Scored episodes whose flags name no outcome (no Success/Lose/Aborted set, as in TextArena's "
                    "games, or Success and Lose both set) give no records (`--unflagged-label main-score` labels "
                    "them by Main Score). ")
            + f"Replies with no context before them (left out): {dataset.replies_without_context}.")
    if labels in TREE_LABELS:
        parts.append(tree_section(dataset))
    if labels == "advantage":
        parts.append(
            "## Advantage labels\n\nA reply's label is (1 + A) / 2 with A its Monte-Carlo value minus the mean "
            "Monte-Carlo value of every reply to the same context (game, experiment, instance, player and the "
            "messages it saw; the reply itself included): what separates it from its siblings, not how winnable "
            "the context is (Setlur et al. 2024). 0.5: as good as the average sibling. `advantage` and `value` "
            "(the Monte-Carlo value) are in every record. Replies with no different sibling have no estimate and "
            f"give no record: {dataset.without_siblings}.")
    if dataset.provers:
        names = ", ".join(f"`{name}`" for name in sorted(dataset.provers))
        oracle = any(name.startswith("programmatic:") for name in dataset.provers)
        parts.append(
            f"## Prover\n\nThe turns after each branch point that did not branch were played by {names} "
            "(`collect --prover`), not by the policy: every Monte-Carlo value is a reply's chance of success when "
            "that prover continues. Those turns give no record. "
            + ("**The prover is an oracle**: the programmatic expert plays by the game's rules and its hidden "
               "state, so these values measure a reply under an expert continuation, not under the policy, and no "
               "policy could reach them." if oracle else ""))
    return "\n\n".join(parts) + "\n"


def label_table(records: Sequence[dict]) -> str:
    """Records per label kind: how many, their mean label, and how many are exactly 0, between, exactly 1."""
    rows = []
    for kind in sorted({record["label_kind"] for record in records}):
        values = [record["label"] for record in records if record["label_kind"] == kind]
        rows.append([kind, len(values), f"{sum(values) / len(values):.3f}", sum(v == 0 for v in values),
                     sum(0 < v < 1 for v in values), sum(v == 1 for v in values)])
    return card.markdown_table(["label kind", "records", "mean label", "= 0", "between", "= 1"], rows)


def tree_section(dataset: PrmDataset) -> str:
    """The card's account of the rollout trees: files, unlabelled nodes, unreadable lines, pairs."""
    lines = [
        "## Monte-Carlo labels",
        "Read from " + (", ".join(f"`{tree}`" for tree in dataset.trees) or "no turns.jsonl") + ". A node's "
        "label is the share of successful leaves among the finished leaves of its subtree (`n_rollouts`), "
        "i.e. the estimated value of the state after its reply.",
        f"Nodes without a finished leaf below (no mc label): {dataset.unfinished_nodes}. Leaves with no known "
        f"outcome (not counted): {dataset.unknown_leaves}. Unreadable turns.jsonl lines: "
        f"{len(dataset.tree_lines_skipped)}.",
    ]
    lines += [f"- `{where}`: {reason}" for where, reason in dataset.tree_lines_skipped[:card.MAX_LISTED]]
    pairs = dataset.pairs or []
    splits = Counter(pair["meta"]["split"] for pair in pairs)
    lines.append(f"`pairs.jsonl`: {len(pairs)} preference pairs of sibling turns (same parent state and "
                 f"player) whose mc labels differ, the higher-valued reply `chosen` ({splits['train']} train, "
                 f"{splits['validation']} validation by `meta.split`).")
    return "\n\n".join(lines)

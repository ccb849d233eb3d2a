"""Rollout trees written by ``playprm collect --branch-factor``, and their Monte-Carlo turn labels.

``<results>/<model-pair>/turns.jsonl`` holds one node per played turn::

    {"turn_id", "parent_id" (null at the root), "game", "experiment", "game_id", "sample", "player",
     "game_role", "turn", "context": [messages], "response",
     "leaf_episode": "<episode dir relative to the model folder>" | null, "outcome": "success"|"lose"|"aborted"|null,
     "prover": <model> (only on turns a prover played, ``collect --prover``)}

A branched state has several children with the same parent; a node with ``leaf_episode`` is the last turn
of a finished episode. The Monte-Carlo label of a node is the share of successful leaves among the finished
leaves of its subtree: an estimate of the value of the state after that turn's reply (Math-Shepherd).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

REQUIRED_FIELDS = ("turn_id", "parent_id", "game", "experiment", "game_id", "player", "turn", "context",
                   "response")


@dataclass(frozen=True)
class RolloutNode:
    """One turn of the rollout tree, as one line of turns.jsonl."""

    turn_id: str
    parent_id: str | None
    game: str
    experiment: str
    game_id: int | str
    sample: int | None
    player: str
    game_role: str | None
    turn: int
    context: list[dict]
    response: str
    leaf_episode: str | None
    outcome: str | None
    prover: str | None = None  # the model that played this turn in the policy's place (collect --prover)


@dataclass(frozen=True)
class MonteCarloLabel:
    """``successes`` of ``rollouts`` finished leaves below a node; ``value`` is their ratio."""

    successes: int
    rollouts: int

    @property
    def value(self) -> float:
        return self.successes / self.rollouts


def read_rollout_tree(
    path: Path, *, on_skip: Callable[[str, str], None] | None = None
) -> dict[str, RolloutNode]:
    """The nodes of ``path`` (a turns.jsonl) by ``turn_id``.

    A line that is not a JSON object with the required fields, or repeats a turn_id, is left out and
    reported through ``on_skip("<path>:<line>", reason)``; a half-written last line after a crash is such a
    line.
    """
    report = on_skip or (lambda where, reason: None)
    nodes: dict[str, RolloutNode] = {}
    with Path(path).open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                report(where, f"not valid JSON ({error})")
                continue
            missing = [key for key in REQUIRED_FIELDS if not isinstance(record, dict) or key not in record]
            if missing:
                report(where, f"missing {', '.join(missing)}")
                continue
            if not isinstance(record["context"], list) or not isinstance(record["response"], str) \
                    or not isinstance(record["turn"], int):
                report(where, "context must be a list of messages, response a string and turn an integer")
                continue
            turn_id = str(record["turn_id"])
            if turn_id in nodes:
                report(where, f"repeats turn_id {turn_id!r}")
                continue
            parent = record["parent_id"]
            nodes[turn_id] = RolloutNode(
                turn_id=turn_id, parent_id=None if parent is None else str(parent), game=record["game"],
                experiment=record["experiment"], game_id=record["game_id"], sample=record.get("sample"),
                player=record["player"], game_role=record.get("game_role"), turn=record["turn"],
                context=record["context"], response=record["response"],
                leaf_episode=record.get("leaf_episode"), outcome=record.get("outcome"),
                prover=record.get("prover"),
            )
    return nodes


def monte_carlo_labels(
    nodes: dict[str, RolloutNode], leaf_outcome: Callable[[RolloutNode], str | None] | None = None
) -> dict[str, MonteCarloLabel]:
    """The label of every node with at least one finished leaf in its subtree (a node is in its own subtree).

    ``leaf_outcome(node)`` gives a leaf's outcome (default: its ``outcome`` field); leaves whose outcome is
    None are not counted at all, "lose" and "aborted" count as failures.
    """
    outcome_of = leaf_outcome or (lambda node: node.outcome)
    successes: dict[str, int] = defaultdict(int)
    rollouts: dict[str, int] = defaultdict(int)
    for leaf in nodes.values():
        if leaf.leaf_episode is None:
            continue
        outcome = outcome_of(leaf)
        if outcome is None:
            continue
        turn_id: str | None = leaf.turn_id
        visited: set[str] = set()  # a malformed file with a parent cycle must not loop forever
        while turn_id is not None and turn_id in nodes and turn_id not in visited:
            visited.add(turn_id)
            rollouts[turn_id] += 1
            successes[turn_id] += outcome == "success"
            turn_id = nodes[turn_id].parent_id
    return {turn_id: MonteCarloLabel(successes[turn_id], count) for turn_id, count in rollouts.items()}


def sibling_pairs(
    nodes: dict[str, RolloutNode], labels: dict[str, MonteCarloLabel]
) -> list[tuple[RolloutNode, RolloutNode]]:
    """``(chosen, rejected)`` for every two labelled siblings whose labels differ, the higher one chosen.

    Siblings share the parent, the player and the context they answered (roots: the instance too); two
    siblings that gave the same response are the same action and make no pair.
    """
    groups: dict[tuple, list[RolloutNode]] = defaultdict(list)
    for node in nodes.values():
        if node.turn_id in labels:
            key = (node.parent_id, node.game, node.experiment, str(node.game_id), node.player,
                   json.dumps(node.context, sort_keys=True))
            groups[key].append(node)
    pairs = []
    for siblings in groups.values():
        for first, second in combinations(sorted(siblings, key=lambda node: node.turn_id), 2):
            first_value, second_value = labels[first.turn_id].value, labels[second.turn_id].value
            if first_value == second_value or first.response == second.response:
                continue
            pairs.append((first, second) if first_value > second_value else (second, first))
    return pairs


def context_key(record: dict) -> tuple:
    """The context a turn record's reply answers: game, experiment, instance, player and the messages the player
    saw. Replies with one key are siblings (advantage labels, sibling metrics)."""
    meta = record.get("meta") or {}
    return (meta.get("game"), meta.get("experiment"), str(meta.get("game_id")), meta.get("player"),
            json.dumps(record["messages"], sort_keys=True))

"""Train / validation split by game instance, so that no instance is seen in both.

An instance ``(game, experiment, game_id)`` goes to validation when a hash of the seed and the instance
falls below ``val_fraction``. The draw depends on nothing else, so the SFT and PRM datasets built from the
same runs (and from more runs later) put every shared instance on the same side.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

Record = TypeVar("Record")
InstanceKey = tuple[str, str, str]


def instance_draw(key: InstanceKey, seed: int) -> float:
    """A uniform number in [0, 1) fixed by ``seed`` and the instance ``key`` (game, experiment, game_id)."""
    digest = hashlib.sha256(repr((seed, *map(str, key))).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def validation_instances(keys: Iterable[InstanceKey], *, val_fraction: float, seed: int) -> set[InstanceKey]:
    """The instances of ``keys`` that belong to validation.

    With ``val_fraction > 0`` and at least two instances, validation holds at least one and train at least
    one instance, so a small run still yields both files with content.
    """
    unique = sorted(set(keys))
    if val_fraction <= 0 or len(unique) < 2:
        return set()
    draws = {key: instance_draw(key, seed) for key in unique}
    chosen = {key for key in unique if draws[key] < val_fraction}
    by_draw = sorted(unique, key=draws.__getitem__)
    if not chosen:
        chosen = {by_draw[0]}
    if len(chosen) == len(unique):
        chosen.discard(by_draw[-1])
    return chosen


def split_by_instance(
    records: list[Record], instance_of: Callable[[Record], InstanceKey], *, val_fraction: float, seed: int
) -> tuple[list[Record], list[Record]]:
    """``(train, validation)``: ``records`` (order kept) divided by the instance ``instance_of`` names."""
    held_out = validation_instances(map(instance_of, records), val_fraction=val_fraction, seed=seed)
    train = [record for record in records if instance_of(record) not in held_out]
    validation = [record for record in records if instance_of(record) in held_out]
    return train, validation

"""Playpen's dataset format, read: one record per player per episode, as ``colab-potsdam/playpen-data`` (config
``interactions``) holds them and Playpen's ``examples/trl/data_utils.py`` writes them from clemcore results.

A record is ``{"messages": [{"role", "content"}, ...], "meta": {"game", "experiment", "game_id", "player_name",
"game_role", "model", "outcome"}}`` with outcome ``success``, ``failure`` or ``aborted``. It comes from a hub id
(``datasets.load_dataset(id, "interactions", split=...)``, where the network allows), a local JSONL or Parquet
file, or a ``datasets.save_to_disk`` folder. A record that is not usable (not an object, no or empty messages, a
message without a user/assistant role and string content, a meta field missing (only game_role may be null), an
outcome outside the three) is left out and counted by reason, never fatal.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from playprm.data.records import PLAYPEN_META
from playprm.errors import UsageError

HUB_CONFIG = "interactions"  # the config of colab-potsdam/playpen-data that Playpen's SFT example loads
PLAYPEN_OUTCOMES = ("success", "failure", "aborted")
MESSAGE_ROLES = ("user", "assistant")  # a player's view of a game: the GM's messages and its own replies
JSONL_SUFFIXES = (".jsonl", ".json")
NULLABLE_META = ("game_role", "outcome")
_NOT_JSON = object()  # stands for a JSONL line that does not parse


@dataclass
class PlaypenRecords:
    """The usable records of one source and what was left out.

    ``kind`` is ``hub``, ``jsonl``, ``parquet`` or ``disk``; ``left_out`` counts records by reason and
    ``examples`` names the first record of each reason (``"<where>: <reason>"``).
    """

    source: str
    kind: str
    config: str | None = None
    split: str | None = None
    records: list[dict] = field(default_factory=list)
    seen: int = 0
    left_out: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """``colab-potsdam/playpen-data`` (hub, config interactions, split train) or a local file's kind."""
        if self.kind == "hub":
            return f"the Hugging Face dataset `{self.source}` (config `{self.config}`, split `{self.split}`)"
        if self.kind == "disk":
            return f"the `datasets.save_to_disk` folder `{self.source}` (split `{self.split}`)"
        return f"the {'JSONL' if self.kind == 'jsonl' else 'Parquet'} file `{self.source}`"


def record_problem(record) -> str | None:
    """Why ``record`` cannot be a Playpen sample, or None (the reason is also the counting key)."""
    if not isinstance(record, dict):
        return "not a JSON object"
    messages = record.get("messages")
    if messages is None:
        return "no messages"
    if not isinstance(messages, list):
        return "messages is not a list"
    if not messages:
        return "empty message list"
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in MESSAGE_ROLES \
                or not isinstance(message.get("content"), str):
            return "a message without a user/assistant role and string content"
    meta = record.get("meta")
    if not isinstance(meta, dict):
        return "no meta object"
    for name in PLAYPEN_META:
        # a role may be unknown (None), as older clemcore records do not say it; outcome None is handled below
        if name not in meta or (meta[name] is None and name not in NULLABLE_META):
            return f"meta field {name!r} missing"
    if meta.get("outcome") not in PLAYPEN_OUTCOMES:
        return f"unknown outcome {meta.get('outcome')!r}"
    return None


def read_playpen(source: str, *, config: str = HUB_CONFIG, split: str = "train") -> PlaypenRecords:
    """Every record of ``source`` (a local file or folder, else a hub id), checked one by one.

    Raises ``UsageError`` (one line) when the source itself cannot be read: a path that does not exist, a file of
    another kind, a folder that is not a ``save_to_disk`` dataset, a split it lacks, or a hub id that cannot be
    reached (offline).
    """
    kind, rows = _open_source(source, config=config, split=split)
    found = PlaypenRecords(source=source, kind=kind, config=config if kind == "hub" else None,
                           split=split if kind in ("hub", "disk") else None)
    for where, record in rows:
        found.seen += 1
        problem = "not valid JSON" if record is _NOT_JSON else record_problem(record)
        if problem:
            found.left_out[problem] += 1
            found.examples.setdefault(problem, where)
            continue
        found.records.append({"messages": [{"role": m["role"], "content": m["content"]} for m in record["messages"]],
                              "meta": dict(record["meta"])})
    return found


def _open_source(source: str, *, config: str, split: str) -> tuple[str, Iterator[tuple[str, object]]]:
    """``(kind, rows)``: rows are ``(where, record)``, the record ``_NOT_JSON`` for a line that does not parse."""
    path = Path(source).expanduser()
    if path.is_file():
        if path.suffix.lower() in JSONL_SUFFIXES:
            return "jsonl", _jsonl_rows(path)
        if path.suffix.lower() == ".parquet":
            return "parquet", _parquet_rows(path)
        raise UsageError(f"--dataset {source}: a file must be JSONL (.jsonl) or Parquet (.parquet), one Playpen "
                         "record {\"messages\", \"meta\"} per row")
    if path.is_dir():
        return "disk", _disk_rows(path, split)
    if source.startswith((".", "/", "~")) or path.suffix.lower() in (*JSONL_SUFFIXES, ".parquet") \
            or source.count("/") != 1:
        raise UsageError(f"--dataset {source} does not exist; give a JSONL or Parquet file, a "
                         "datasets.save_to_disk folder, or a hub id such as colab-potsdam/playpen-data")
    return "hub", _hub_rows(source, config, split)


def _jsonl_rows(path: Path) -> Iterator[tuple[str, object]]:
    with path.open("rb") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past Python's limit
                record = _NOT_JSON
            yield f"{path}:{number}", record


def _parquet_rows(path: Path) -> Iterator[tuple[str, object]]:
    import pyarrow.parquet

    try:
        table = pyarrow.parquet.read_table(path)
    except Exception as error:  # pyarrow raises ArrowInvalid, OSError, ... for a file it cannot read
        raise UsageError(f"--dataset {path} cannot be read as Parquet ({_first_line(error)})") from None
    for number, row in enumerate(table.to_pylist()):
        yield f"{path} row {number}", row


def _disk_rows(path: Path, split: str) -> Iterator[tuple[str, object]]:
    from datasets import DatasetDict, load_from_disk

    try:
        dataset = load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as error:
        raise UsageError(f"--dataset {path} is a folder but not one `datasets.save_to_disk` wrote "
                         f"({_first_line(error)})") from None
    if isinstance(dataset, DatasetDict):
        if split not in dataset:
            raise UsageError(f"--dataset {path} has no split {split!r}; --split one of {', '.join(dataset)}")
        dataset = dataset[split]
    return ((f"{path} row {number}", row) for number, row in enumerate(dataset))


def _hub_rows(source: str, config: str, split: str) -> Iterator[tuple[str, object]]:
    from datasets import load_dataset

    try:
        dataset = load_dataset(source, config, split=split)
    except Exception as error:  # offline (ConnectionError), unknown id or config, gated: all say the same
        raise UsageError(f"--dataset {source}: cannot load config {config!r} split {split!r} from the Hugging "
                         f"Face Hub ({_first_line(error)}); without network, pass a local JSONL or Parquet file "
                         "or a datasets.save_to_disk folder") from None
    return ((f"{source} row {number}", row) for number, row in enumerate(dataset))


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__

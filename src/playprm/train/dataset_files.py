"""Reading the dataset folders that ``playprm sft-data`` and ``prm-data`` write, checked line by line.

Every problem is a one-line ``UsageError`` naming the file and line, raised before any model loads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from playprm.errors import UsageError

SPLITS = ("train", "validation")
ROLES = ("system", "user", "assistant")


def read_jsonl(path: Path, check: Callable[[dict], str | None], *, producer: str) -> list[dict]:
    """The records of ``path``, one JSON object per line; ``check(record)`` returns a problem or None.

    ``producer`` is the command that writes such files, named in the fix. Blank lines are skipped.
    """
    if not path.is_file():
        raise UsageError(f"{path} does not exist; write the dataset with `playprm {producer}`")
    records = []
    with path.open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise UsageError(f"{path}:{number}: not valid JSON ({json_problem(error, number)}); "
                                 f"every line must be one JSON object, as `playprm {producer}` writes") from None
            problem = "not a JSON object" if not isinstance(record, dict) else check(record)
            if problem:
                raise UsageError(f"{path}:{number}: {problem}")
            records.append(record)
    if not records:
        raise UsageError(f"{path} is empty; it needs at least one record (re-run `playprm {producer}` with more "
                         "episodes)")
    return records


def json_problem(error: json.JSONDecodeError, line: int) -> str:
    """What the decoder says and where, as a sentence: "invalid control character at line 2 column 9" (``msg`` is
    "Invalid control character at" or "Expecting value"; ``line`` is the file's, the decoder saw one line)."""
    what = error.msg.removesuffix(" at")
    return f"{what[:1].lower()}{what[1:]} at line {line} column {error.colno}"


def check_data_dir(data_dir: Path, producer: str) -> None:
    if not data_dir.is_dir():
        raise UsageError(f"--data {data_dir} is not a directory; give the folder `playprm {producer}` wrote "
                         "(it holds train.jsonl and validation.jsonl)")


def messages_problem(messages, last_role: str) -> str | None:
    """What is wrong with a chat message list that must end with ``last_role``, or None."""
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list of {\"role\", \"content\"} objects"
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            return f"messages[{index}] needs a 'role' of {', '.join(ROLES)}"
        if not isinstance(message.get("content"), str):
            return f"messages[{index}] needs a string 'content'"
    if messages[-1]["role"] != last_role:
        return (f"'messages' must end with {_a(last_role)} {last_role} message, not {_a(messages[-1]['role'])} "
                f"{messages[-1]['role']} one")
    return None


def _a(word: str) -> str:
    return "an" if word in ("assistant",) else "a"  # the roles: system, user, assistant


def reply_problem(reply, key: str, producer: str) -> str | None:
    """What is wrong with ``record[key]`` where it must be one assistant message (a completion, a preference reply),
    or None."""
    if not (isinstance(reply, list) and len(reply) == 1 and isinstance(reply[0], dict)
            and reply[0].get("role") == "assistant" and isinstance(reply[0].get("content"), str)):
        return f"'{key}' must be a list of one assistant message, as `playprm {producer}` writes"
    return None


def sft_record_problem(record: dict) -> str | None:
    """Checks an SFT line: a dialogue ``{"messages": [... ending with assistant], "meta": {...}}`` (sft-data), or
    one turn ``{"prompt": [... ending with user], "completion": [one assistant message]}`` (sft-data --weights);
    an optional ``weight`` must be a finite number >= 0."""
    if "messages" in record or "prompt" not in record:
        problem = messages_problem(record.get("messages"), "assistant")
    else:
        problem = messages_problem(record["prompt"], "user")
        problem = problem.replace("'messages'", "'prompt'") if problem else reply_problem(
            record.get("completion"), "completion", "sft-data --weights")
    if problem or "weight" not in record:
        return problem
    weight = record["weight"]
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight < 0:
        return f"'weight' must be a finite number >= 0, not {weight!r}"
    return None


def prm_record_problem(record: dict) -> str | None:
    """Checks a PRM line: context ``messages`` ending with user, ``response``, ``label`` in [0, 1]."""
    problem = messages_problem(record.get("messages"), "user")
    if problem:
        return problem
    if not isinstance(record.get("response"), str):
        return "needs a string 'response' (the scored reply)"
    label = record.get("label")
    if isinstance(label, bool) or not isinstance(label, int | float) or not math.isfinite(label) or not 0 <= label <= 1:
        return f"'label' must be a number in [0, 1], not {label!r}"
    if "meta" in record and not isinstance(record["meta"], dict):
        return "'meta' must be an object"
    return None


def pair_record_problem(record: dict) -> str | None:
    """Checks a pairs.jsonl line: context ``messages`` ending with user, ``chosen`` and ``rejected`` replies."""
    problem = messages_problem(record.get("messages"), "user")
    if problem:
        return problem
    for key in ("chosen", "rejected"):
        if not isinstance(record.get(key), str):
            return f"needs a string '{key}' reply"
    if "meta" in record and not isinstance(record["meta"], dict):
        return "'meta' must be an object"
    return None


def read_splits(data_dir: Path, check: Callable[[dict], str | None], producer: str) -> dict[str, list[dict]]:
    """``{"train": [...], "validation": [...]}`` from ``data_dir/train.jsonl`` and ``validation.jsonl``."""
    check_data_dir(data_dir, producer)
    return {split: read_jsonl(data_dir / f"{split}.jsonl", check, producer=producer) for split in SPLITS}

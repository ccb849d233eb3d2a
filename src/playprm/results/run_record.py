"""The run record, a run's ``<model-pair>/playprm_run.json``: which decoding mode produced the episodes beside
it, and the run's fingerprint; ``RunRecord`` is the one reader and writer of the file.

Written when a run starts, e.g. ``{"mode": "best-of-n", "env_lookahead": false, "n_candidates": 8, ...}``.
``env_lookahead: true`` marks searches that saw the game's answers to actions they did not play.

``fingerprint`` holds everything that changes the run's numbers: the policy (model id or folder, adapter,
backend), the decoding settings its mode reads, the PRM folder, and a digest of every game instance (with
its experiment's settings), keyed ``<game>/<experiment>/<game_id>``. A run folder holds one fingerprint:
resuming or merging into it with other settings is refused, naming what differs. Instances are compared
where both sides have them, so a rerun with a larger ``--limit`` (or another shard) adds to the run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from playprm import __version__, atomic
from playprm.errors import UsageError
from playprm.results.layout import RUN_METADATA_FILE

# the fields that define what a run's number means
MODE_FIELDS = ("mode", "env_lookahead", "n_candidates")
FINGERPRINT = "fingerprint"
INSTANCES = "instances"
VERSION = "playprm_version"


@dataclass(frozen=True)
class RunRecord:
    """A run's ``playprm_run.json``. The mode fields are the fingerprint's own (written once, by the command's
    decoding settings); ``settings`` holds the rest the command records, in its order (``temperature``,
    ``policy``, ``broken_games``, eval's ``game_benchmarks`` and ``gate``, collect's branching, ...)."""

    mode: str = ""  # a decoding mode of search/modes.py, or "collect"; "" where the file names none
    env_lookahead: bool = False
    n_candidates: int | None = None  # candidates per guided turn (1 in unguided modes); None: not recorded (collect)
    settings: dict = field(default_factory=dict)
    fingerprint: dict = field(default_factory=dict)
    playprm_version: str | None = None

    @classmethod
    def of_run(cls, fingerprint: dict, settings: dict) -> RunRecord:
        """The record of a run about to play: its mode fields taken from its ``fingerprint``."""
        return cls(mode=fingerprint["mode"], env_lookahead=fingerprint["env_lookahead"],
                   n_candidates=fingerprint.get("n_candidates"), settings=settings, fingerprint=fingerprint,
                   playprm_version=__version__)

    @classmethod
    def from_json(cls, data: dict) -> RunRecord:
        """The record a ``playprm_run.json`` object holds, files of every playprm version (before fingerprints:
        the fingerprint is their mode fields)."""
        mode, n_candidates, version = data.get("mode"), data.get("n_candidates"), data.get(VERSION)
        return cls(
            mode=mode if isinstance(mode, str) else "" if mode is None else str(mode),
            env_lookahead=_is_env_lookahead(data),
            n_candidates=n_candidates if isinstance(n_candidates, int) and not isinstance(n_candidates, bool)
            else None,
            settings={k: v for k, v in data.items() if k not in (*MODE_FIELDS, FINGERPRINT, VERSION)},
            fingerprint=_recorded_fingerprint(data),
            playprm_version=version if isinstance(version, str) else None,
        )

    @classmethod
    def read(cls, path: Path) -> RunRecord:
        """The record in ``path`` (a ``playprm_run.json``); UsageError where it cannot be read."""
        return cls.from_json(_read_object(path))

    def to_json(self) -> dict:
        """The file's object: version, mode fields, the settings in their order, the fingerprint."""
        head = {} if self.playprm_version is None else {VERSION: self.playprm_version}
        head.update(mode=self.mode, env_lookahead=self.env_lookahead)
        if self.n_candidates is not None:
            head["n_candidates"] = self.n_candidates
        return {**head, **self.settings, FINGERPRINT: self.fingerprint}

    def write(self, run_dir: Path) -> Path:
        """Write ``run_dir/playprm_run.json`` (atomically)."""
        return atomic.write_json(run_dir / RUN_METADATA_FILE, self.to_json())


def _read_object(path: Path) -> dict:
    """The JSON object in ``path``; UsageError where it cannot be read (a mode must never be guessed)."""
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"cannot read {path} ({error}); fix or rewrite it (it records the decoding mode)") from error
    if not isinstance(metadata, dict):
        raise UsageError(f"{path} is not a JSON object; it should hold the run's mode and env_lookahead")
    return metadata


def _is_env_lookahead(metadata: dict) -> bool:
    """True when the run metadata says the search looked at game answers to unplayed actions."""
    flag = metadata.get("env_lookahead", False)
    return flag is True or str(flag).strip().lower() in {"true", "1", "yes"}


def policy_fingerprint(spec) -> dict:
    """The parts of a resolved ``PolicySpec`` that decide which weights answer (a local folder by its full path)."""
    fingerprint = {"model": spec.model_id, "adapter": spec.peft_model, "backend": spec.backend,
                   "load_in_4bit": spec.load_in_4bit, "chat_template_kwargs": spec.chat_template_kwargs,
                   "base_url": spec.base_url}
    if getattr(spec, "dtype", None):  # model_config.dtype: fp32 and bf16 weights answer differently
        fingerprint["dtype"] = str(spec.dtype)
    return fingerprint


def run_fingerprint(spec, settings: dict, instances: dict) -> dict:
    """A run's fingerprint: the policy (``policy_fingerprint``), the command's ``settings`` that change its
    numbers (decoding, PRM) and a digest of each game instance it plays (``instance_digests``)."""
    return {**policy_fingerprint(spec), **settings, INSTANCES: instance_digests(instances)}


def instance_digests(instances: dict) -> dict[str, str]:
    """``{"<game>/<experiment>/<game_id>": digest}`` for ``instances[game] = [(experiment, instance), ...]``."""
    digests, settings = {}, {}
    for game, rows in instances.items():
        for experiment, instance in rows:
            if id(experiment) not in settings:  # an experiment's settings (its instances left out) once each
                settings[id(experiment)] = _canonical({k: v for k, v in experiment.items() if k != "game_instances"})
            text = settings[id(experiment)] + _canonical(instance)
            key = f"{game}/{experiment.get('name')}/{instance.get('game_id')}"
            digests[key] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return digests


def _canonical(data) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


def _recorded_fingerprint(metadata: dict) -> dict:
    """The fingerprint in a ``playprm_run.json``; for files written before fingerprints, their mode fields."""
    recorded = metadata.get(FINGERPRINT)
    if isinstance(recorded, dict):
        return recorded
    return {name: metadata[name] for name in MODE_FIELDS if name in metadata}


def fingerprint_differences(first: dict, second: dict) -> list[str]:
    """What differs between two fingerprints, one phrase each (``"max_tokens 16 vs 32"``); [] when they agree.

    Fields only one side has are not compared (an older file, or a setting one mode does not read).
    """
    differences = [f"{name} {first[name]!r} vs {second[name]!r}" for name in first
                   if name != INSTANCES and name in second and first[name] != second[name]]
    ours, theirs = first.get(INSTANCES) or {}, second.get(INSTANCES) or {}
    changed = sorted(key for key in ours.keys() & theirs.keys() if ours[key] != theirs[key])
    if changed:
        differences.append(f"{len(changed)} game instance(s) with other content (first: {changed[0]})")
    return differences


def claim_fingerprint(run_dir: Path, fingerprint: dict) -> dict:
    """Check that ``run_dir`` holds no other run than ``fingerprint`` describes; returns the fingerprint to
    record (its instances joined with those recorded). UsageError, one line, when anything differs."""
    path = run_dir / RUN_METADATA_FILE
    if not path.is_file():
        return fingerprint
    recorded = RunRecord.read(path).fingerprint
    differences = fingerprint_differences(recorded, fingerprint)
    if differences:
        hint = ("; two model folders of one name share a run folder: give one its own model_name in "
                "model_registry.json" if recorded.get("model") not in (None, fingerprint.get("model")) else "")
        raise UsageError(f"{run_dir} holds a run with other settings (recorded vs now: {'; '.join(differences)}); "
                         f"rerun with its settings to resume it, or pass another --results-dir{hint}")
    return {**fingerprint, INSTANCES: {**(recorded.get(INSTANCES) or {}), **fingerprint.get(INSTANCES, {})}}

"""Recipes and command-line overrides for the trainers: YAML files and ``--kebab-case VALUE`` options mapped
onto the fields of a config dataclass (``SFTTrainingConfig``, ``PRMTrainingConfig``).

Precedence: the dataclass defaults (the model card's settings), then the recipe (``--config recipe.yaml``), then
the command line. Every ``TrainingArguments`` / ``SFTConfig`` field is reachable as ``--field-name VALUE``
(``--max-steps 2``, ``--learning-rate 1e-4``, ``--report-to tensorboard``); a value is parsed with the field's
declared type, and an unknown name is a one-line ``UsageError`` that names the closest fields.

Why not TRL's ``TrlParser`` (YAML ``--config`` + ``HfArgumentParser``, the same precedence; checked with TRL 1.16,
transformers 5.24): it cannot build a parser for these configs (``HfArgumentParser`` takes only ``X | None`` or
``X | str`` unions: ``report_to`` and ``lora_exclude_modules``, ``str | list[str] | None``, raise ``TypeError``), and
it would read ``--lora-target-modules all-linear`` as the list ``["all-linear"]`` where PEFT wants the string. It
also needs the config classes (transformers and TRL imported, seconds) when the ``playprm`` parser is built, which
``--help`` and every other command would pay; answers a typo with argparse's usage text rather than one line that
names the closest fields and the deprecated aliases above; and has no place for a recipe's ``model`` / ``data``.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import json
import types
import typing
from pathlib import Path
from typing import Any

from playprm.atomic import check_output_path
from playprm.errors import UsageError

# Deprecated transformers names that silently lose against their successors when both are set.
ALIASES = {
    "gradient_checkpointing": "activation_checkpointing",
    "gradient_checkpointing_kwargs": "activation_checkpointing_kwargs",
}
_NONE_WORDS = ("none", "null")
_TRUE_WORDS = ("true", "yes", "1", "on")
_FALSE_WORDS = ("false", "no", "0", "off")


def accept_overrides(parser) -> None:
    """Let the sub-command ``parser`` take ``--any-field VALUE`` options it does not declare itself.

    They are collected, unparsed, into ``args.overrides`` (and checked later against the config dataclass, where
    the field types are known), instead of making argparse reject them as unrecognised.
    """
    declared = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):
        namespace, extras = declared(args, namespace)
        namespace.overrides = list(getattr(namespace, "overrides", None) or []) + list(extras)
        return namespace, []

    parser.parse_known_args = parse_known_args
    parser.set_defaults(overrides=[])


def field_types(config_class) -> dict[str, Any]:
    """``{field name: type}`` of every init field of the dataclass ``config_class``."""
    try:
        hints = typing.get_type_hints(config_class)
    except Exception:  # an annotation that cannot be resolved: fall back to the raw field types
        hints = {}
    return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(config_class) if f.init}


def check_field(name: str, known: dict[str, Any], where: str) -> str:
    """The field ``name`` stands for (aliases resolved); unknown names raise a UsageError with close matches."""
    name = ALIASES.get(name, name)
    if name in known:
        return name
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(_flag(c) for c in close)}?" if close else "; see docs/training.md for the fields"
    raise UsageError(f"unknown setting {_flag(name)} ({where}){hint}")


def parse_overrides(tokens: list[str], config_class) -> dict[str, Any]:
    """``["--max-steps", "2", "--bf16"]`` -> ``{"max_steps": 2, "bf16": True}`` typed by ``config_class``'s fields.

    ``--name=value`` works too; a boolean field given without a value means true.
    """
    known = field_types(config_class)
    values: dict[str, Any] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if not token.startswith("--") or token == "--":
            raise UsageError(f"unexpected argument {token!r}; settings are given as --field-name VALUE")
        name, has_value, raw = token[2:].partition("=")
        index += 1
        if not has_value:
            if index < len(tokens) and not tokens[index].startswith("--"):
                raw = tokens[index]
                index += 1
            else:
                raw = None
        field = check_field(name.replace("-", "_"), known, "command line")
        values[field] = parse_value(field, raw, known[field])
    return values


def load_recipe(path: Path, config_class, fixed: tuple[str, ...] = ()) -> dict[str, Any]:
    """The settings of a YAML recipe (a flat mapping of field names, or of ``fixed`` names such as ``model``)."""
    import yaml

    if not path.is_file():
        raise UsageError(f"--config {path} does not exist; give a recipe such as recipes/tiny/sft.yaml")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise UsageError(f"--config {path} is not valid YAML ({' '.join(str(error).split())})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"--config {path} must be a mapping of setting: value, not a {type(data).__name__}")
    known = field_types(config_class)
    settings: dict[str, Any] = {}
    for key, value in data.items():
        key = str(key).replace("-", "_")
        settings[key if key in fixed else check_field(key, known, str(path))] = value
    return settings


def parse_value(name: str, raw: str | None, kind: Any) -> Any:
    """Parse the command-line text ``raw`` as the type ``kind`` of field ``name`` (``None``: a bare flag)."""
    options = _union_members(kind)
    if raw is None:
        if bool in options:
            return True
        raise UsageError(f"{_flag(name)} needs a value ({_describe(options)})")
    # a single word is a one-element list only where the field cannot hold a plain string
    single_word_list = str not in options
    for option in options:
        parsed = _parse_as(option, raw, single_word_list)
        if parsed is not _NO_MATCH:
            return parsed
    raise UsageError(f"{_flag(name)} expects {_describe(options)}, not {raw!r}")


_NO_MATCH = object()


def true_or_false(raw: str) -> bool:
    """An argparse ``type`` for a boolean flag given as ``--name true|false`` (as overrides take it)."""
    import argparse

    value = _parse_as(bool, raw, False)
    if value is _NO_MATCH:
        raise argparse.ArgumentTypeError(f"{raw!r} is not true or false")
    return value


def _parse_as(option: Any, raw: str, single_word_list: bool) -> Any:
    origin = typing.get_origin(option) or option
    lowered = raw.strip().lower()
    if option is bool:
        return True if lowered in _TRUE_WORDS else False if lowered in _FALSE_WORDS else _NO_MATCH
    if option in (int, float):
        try:
            return option(raw)
        except ValueError:
            return _NO_MATCH
    if origin in (dict, list):
        if raw.strip().startswith(("{", "[")):
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                return _NO_MATCH
            return value if isinstance(value, origin) else _NO_MATCH
        if origin is list and ("," in raw or single_word_list):
            return [part.strip() for part in raw.split(",") if part.strip()]
        return _NO_MATCH
    if origin is typing.Literal:
        return raw if raw in typing.get_args(option) else _NO_MATCH
    if isinstance(option, type) and issubclass(option, enum.Enum):
        return raw if raw in {member.value for member in option} else _NO_MATCH
    if option is type(None):
        return None if lowered in _NONE_WORDS else _NO_MATCH
    if option is str:
        return raw
    if option is Any:
        import yaml

        return yaml.safe_load(raw)
    return _NO_MATCH


def _union_members(kind: Any) -> list[Any]:
    """The members of a union type, strictest parse first; ``none`` is a string where the field takes strings
    (``--report-to none``) and null otherwise (``--max-length none``)."""
    members = list(typing.get_args(kind)) if typing.get_origin(kind) in (typing.Union, types.UnionType) else [kind]

    def rank(member: Any) -> int:
        origin = typing.get_origin(member) or member
        if member is type(None):
            return 9 if str in members else 6
        if isinstance(member, type) and issubclass(member, enum.Enum):
            return 5
        return {bool: 0, int: 1, float: 2, dict: 3, list: 4, typing.Literal: 5, str: 7}.get(origin, 8)

    return sorted(members, key=rank)


def _describe(options: list[Any]) -> str:
    names = []
    for option in options:
        origin = typing.get_origin(option) or option
        if origin is typing.Literal:
            names.append(" | ".join(map(str, typing.get_args(option))))
        elif isinstance(option, type) and issubclass(option, enum.Enum):
            names.append(" | ".join(str(member.value) for member in option))
        elif option is type(None):
            names.append("none")
        else:
            names.append({bool: "true/false", int: "an integer", float: "a number", dict: "a JSON object",
                          list: "a comma-separated list"}.get(origin, getattr(origin, "__name__", str(origin))))
    return " or ".join(dict.fromkeys(names))


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def build_config(config_class, settings: dict[str, Any]):
    """``config_class(**settings)``; a ``ValueError`` from its validation becomes a one-line UsageError."""
    try:
        return config_class(**settings)
    except (ValueError, TypeError) as error:
        raise UsageError(" ".join(str(error).split())) from None


RUN_INPUTS = ("model", "data")  # recipe keys that are not config fields


def command_settings(args, config_class, explicit: dict[str, Any],
                     needed: tuple[str, ...] = RUN_INPUTS) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(config settings, run inputs)`` of a train command: the recipe, then ``--field`` overrides, then the
    command's own flags (``explicit``, unset ones left out); ``run inputs`` are ``model`` and ``data``, of which
    ``needed`` must be given (train-grpo plays games instead of reading data)."""
    recipe = load_recipe(args.config, config_class, fixed=RUN_INPUTS) if args.config else {}
    settings = {**recipe, **parse_overrides(args.overrides, config_class)}
    settings.update({key: value for key, value in explicit.items() if value is not None})
    inputs = {key: settings.pop(key, None) for key in RUN_INPUTS}
    inputs.update({key: getattr(args, key) for key in RUN_INPUTS if getattr(args, key, None) is not None})
    missing = [f"--{key}" for key in needed if inputs[key] is None]
    if not settings.get("output_dir"):
        missing.append("--output-dir")
    if missing:
        raise UsageError(f"missing {', '.join(missing)}; give them on the command line or in the --config recipe")
    return settings, inputs


def add_run_arguments(parser, *, data_help: str | None, recipe_example: str,
                      model_help: str = "base model: a Hugging Face folder, a model_registry.json name or a hub id"
                      ) -> None:
    """The flags the train commands declare (``--data`` where ``data_help`` is given); every other
    ``--field VALUE`` is collected as an override."""
    parser.add_argument("--model", help=model_help)
    if data_help is not None:
        parser.add_argument("--data", type=Path, help=data_help)
    parser.add_argument("--output-dir", type=Path, help="folder for checkpoints, the trained model and metrics")
    parser.add_argument("--config", type=Path, help=f"YAML recipe, e.g. {recipe_example}")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --output-dir")
    parser.add_argument("--require-cuda", action="store_true", help="fail instead of falling back to CPU")
    accept_overrides(parser)


def prepare_run(args, config_class, explicit: dict[str, Any] | None = None, resolve=None,
                needed: tuple[str, ...] = RUN_INPUTS):
    """``(config, base model, data folder)`` of a train command, all checked (the trainer, which reads the data,
    prints the CPU-fallback line after its own checks: ``qlora.announce_cpu_fallback``).
    ``needed``: the run inputs the command requires (without ``data`` the data folder is None).

    Nothing is loaded yet: the config validates the settings (``--require-cuda`` included) and ``--model`` is
    resolved to a folder, registry entry or hub id (by ``resolve``, default ``resolve_base_model``; train-dpo's
    also takes an adapter).
    """
    from playprm.train.base_model import resolve_base_model

    settings, inputs = command_settings(args, config_class, {
        "output_dir": str(args.output_dir) if args.output_dir else None,
        "require_cuda": True if args.require_cuda else None,
        **(explicit or {}),
    }, needed)
    check_output_path(settings["output_dir"], "--output-dir")
    config = build_config(config_class, settings)
    base = (resolve or resolve_base_model)(str(inputs["model"]))
    return config, base, Path(inputs["data"]) if inputs["data"] is not None else None

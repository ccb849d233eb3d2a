"""Resolve ``--policy-model`` to a ``PolicySpec``: a clemcore model-registry name or a local model directory.

Registry files are clemcore's ``model_registry.json`` format and are looked up with clemcore's precedence: the
working directory's file first, then the one packaged with clemcore. Entries are checked here (clemcore would
skip bad ones silently or fail deep inside a backend); every problem is a one-line ``UsageError``.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from pathlib import Path

from playprm.errors import UsageError
from playprm.models import gguf
from playprm.models.base import PolicySpec
from playprm.results.names import check_component

logger = logging.getLogger(__name__)

REGISTRY_FILE = "model_registry.json"

# clemcore backend name -> playprm engine
BACKENDS = {
    "huggingface_local": "hf",
    "hf": "hf",
    "vllm": "vllm",
    "openai_compatible": "openai",
    "openai": "openai",
    "playprm": None,  # engine chosen by model_config["engine"]
}

_CONFIG_TYPES = {
    "premade_chat_template": bool,
    "load_in_4bit": bool,
    "chat_template_kwargs": dict,
    "peft_model": str,
    "trust_remote_code": bool,
    "engine": str,
    "tensor_parallel_size": int,
    "base_url": str,
    "api_key_env": str,
    "dtype": str,
}

# model_config.dtype: what transformers and vLLM both accept as ``dtype`` (fp32 / bf16 / fp16 as short names)
DTYPES = {"auto": "auto", "float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
          "float16": "float16", "fp16": "float16"}

# model_config keys that clemcore 3.7.2's backends read or its packaged model_registry.json uses: entries in
# clemcore's format carry them, so they are accepted (playprm ignores them)
CLEMCORE_CONFIG_KEYS = frozenset({
    "additional_files", "attn_implementation", "bos_string", "chat_template_language", "cot_bypass", "cot_effort",
    "cot_end_tag", "cot_output", "cot_start_tag", "custom_chat_template", "do_sample", "eos_string", "eos_to_cull",
    "execute_on", "extra_body", "filename", "gpu_layers_offloaded", "load_in_8bit", "multimodal", "multimodality",
    "output_split_prefix", "padding_side", "reasoning_model", "requires_api_key", "thinking_mode",
})
PLAYPRM_CONFIG_KEYS = frozenset(_CONFIG_TYPES) | {"model_id"}  # model_id: the served name (openai engine)

SCRIPTED = "scripted:random-valid"  # random valid moves of the built-in games (tests, tiny pipeline)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def read_registry_file(path: Path) -> list[dict]:
    """Entries of one ``model_registry.json``; a corrupt file is a UsageError naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{path} is not valid JSON (line {error.lineno}: {error.msg}); fix or remove it") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        raise UsageError(f"{path} must hold a list of model entries ({{'model_name': ..., 'backend': ...}})")
    return data


def write_registry_entry(directory: Path, entry: dict) -> Path:
    """Add ``entry`` to ``directory/model_registry.json`` atomically, replacing an entry of the same
    ``model_name`` and keeping the others; returns the file's path."""
    from playprm import atomic

    path = Path(directory) / REGISTRY_FILE
    entries = read_registry_file(path) if path.exists() else []
    entries = [other for other in entries if other.get("model_name") != entry["model_name"]]
    return atomic.write_json(path, [*entries, entry])


def registry_entries(cwd: Path | None = None) -> list[tuple[dict, str]]:
    """(entry, lookup source) pairs: the working directory's file first, then clemcore's packaged one."""
    cwd = Path.cwd() if cwd is None else cwd
    entries: list[tuple[dict, str]] = []
    local = cwd / REGISTRY_FILE
    if local.is_file():
        entries += [(entry, str(local.resolve())) for entry in read_registry_file(local)]
    try:
        from importlib import resources

        packaged = resources.files("clemcore.backends").joinpath(REGISTRY_FILE)
        entries += [(entry, "clemcore (packaged)") for entry in json.loads(packaged.read_text(encoding="utf-8"))]
    except (ModuleNotFoundError, FileNotFoundError, json.JSONDecodeError):
        pass
    return entries


def spec_from_entry(entry: dict, source: str, base_dir: Path | None = None) -> PolicySpec:
    """Check one registry entry and turn it into a PolicySpec."""
    name = entry.get("model_name")
    where = f"model {name!r} in {source}"
    if not isinstance(name, str) or not name:
        raise UsageError(f"an entry in {source} has no 'model_name'; every entry needs one")
    check_component(name, where=f"model_name in {source}")
    backend = entry.get("backend")
    if backend is None:
        raise UsageError(f"{where} has no 'backend'; add e.g. \"backend\": \"huggingface_local\"")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise UsageError(f"{where} uses backend {backend!r}, which playprm cannot run locally; "
                         f"use one of {', '.join(sorted(BACKENDS))}")
    config = entry.get("model_config", {})
    if not isinstance(config, dict):
        raise UsageError(f"{where}: 'model_config' must be an object, not {type(config).__name__}")
    for key, kind in _CONFIG_TYPES.items():
        if key in config and not isinstance(config[key], kind):
            raise UsageError(f"{where}: model_config.{key} must be {kind.__name__}, "
                             f"not {type(config[key]).__name__} ({config[key]!r})")
    _check_config_keys(config, where, strict=backend == "playprm")
    if "dtype" in config and config["dtype"] not in DTYPES:
        raise UsageError(f"{where}: model_config.dtype must be one of {', '.join(DTYPES)}, not {config['dtype']!r}")
    engine = BACKENDS[backend] or config.get("engine", "hf")
    if engine not in ("hf", "vllm", "openai"):
        raise UsageError(f"{where}: model_config.engine must be hf, vllm or openai, not {engine!r}")
    model_id = entry.get("huggingface_id") or entry.get("model_id") or config.get("model_id")
    if engine == "openai":
        model_id = entry.get("model_id") or model_id or name
    if not isinstance(model_id, str) or not model_id:
        raise UsageError(f"{where} has no 'huggingface_id'; say which weights to load")
    base = base_dir or Path.cwd()
    if engine != "openai" and gguf.is_gguf_path(model_id):
        model_id = str(gguf.check_file(_resolve_local(model_id, base), flag=f"{where}: huggingface_id"))
    return PolicySpec(
        name=name,
        backend=engine,
        model_id=_resolve_local(model_id, base),
        peft_model=_resolve_local(config["peft_model"], base) if config.get("peft_model") else None,
        load_in_4bit=bool(config.get("load_in_4bit", False)),
        chat_template_kwargs=dict(config.get("chat_template_kwargs", {})),
        trust_remote_code=bool(config.get("trust_remote_code", False)),
        base_url=config.get("base_url"),
        api_key_env=config.get("api_key_env"),
        tensor_parallel_size=int(config.get("tensor_parallel_size", 1)),
        dtype=DTYPES[config["dtype"]] if "dtype" in config else None,
        lookup_source=source,
        registry_entry={k: v for k, v in entry.items() if k != "lookup_source"},
    )


def _check_config_keys(config: dict, where: str, *, strict: bool) -> None:
    """Unknown ``model_config`` keys (a typo such as ``"model"`` for ``model_id`` would be ignored silently):
    refused for the playprm backend, whose keys are all playprm's; a warning for clemcore's backends, whose
    entries may carry keys of clemcore versions newer than the one listed here."""
    known = PLAYPRM_CONFIG_KEYS | CLEMCORE_CONFIG_KEYS
    for key in config:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), sorted(known), n=1)
        message = (f"{where}: model_config has an unknown key {key!r}"
                   + (f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(sorted(PLAYPRM_CONFIG_KEYS))}"))
        if strict:
            raise UsageError(message)
        logger.warning("%s (ignored)", message)


def _resolve_local(model_id: str, base: Path) -> str:
    """Relative paths in registry files are resolved against the working directory; hub ids stay as they are."""
    path = Path(model_id).expanduser()
    if not path.is_absolute():
        path = base / path
    return str(path.resolve()) if path.exists() else model_id


def resolve_policy(selector: str, *, backend: str | None = None, cwd: Path | None = None) -> PolicySpec:
    """``--policy-model``: a local HF model directory, a registered model name, or a hub id (``org/name``)."""
    cwd = Path.cwd() if cwd is None else cwd
    if selector == SCRIPTED:
        return PolicySpec(name="random-valid", backend="scripted", model_id=SCRIPTED, lookup_source="scripted")
    if selector.startswith("programmatic:"):
        from playprm.models.programmatic import spec_for

        return spec_for(selector)
    path = Path(selector).expanduser()
    local = path if path.is_absolute() else cwd / path
    if gguf.is_gguf_path(selector):  # loaded de-quantised (models.gguf); the file's name names the runs
        local = gguf.check_file(local, flag="--policy-model")
        return PolicySpec(name=local.stem, backend=backend or "hf", model_id=str(local))
    if local.is_dir():
        if not (local / "config.json").is_file() and not (local / "adapter_config.json").is_file():
            raise UsageError(f"{selector} is a directory but holds no config.json; give a Hugging Face model folder")
        return PolicySpec(name=local.resolve().name, backend=backend or "hf", model_id=str(local.resolve()))
    for entry, source in registry_entries(cwd):
        if entry.get("model_name") == selector:
            spec = spec_from_entry(entry, source, cwd)
            if backend:
                spec.backend = backend
            return spec
    first = Path(selector).parts[0] if Path(selector).parts else selector
    looks_local = selector.startswith((".", "/", "~")) or (cwd / first).exists() or not _HUB_ID.match(selector)
    if looks_local:
        raise UsageError(f"--policy-model {selector}: no such model directory and no model of that name in "
                         f"{cwd / REGISTRY_FILE} or clemcore's registry; run `playprm make-tiny --out DIR` "
                         f"for a local test model")
    return PolicySpec(name=selector.split("/")[-1], backend=backend or "hf", model_id=selector,
                      lookup_source="hub id")

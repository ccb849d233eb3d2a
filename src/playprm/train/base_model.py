"""The base model a trainer starts from: ``--model`` resolved (a local folder, a model_registry.json name or a hub
id) and loaded as the run's config asks (4-bit NF4 on CUDA, unquantized otherwise; decided in ``models.loading``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from playprm.errors import UsageError


@dataclass
class BaseModel:
    """Where the base weights come from and how the model's registry entry asks to format chats."""

    model_id: str  # absolute path of a local folder, or a hub id
    chat_template_kwargs: dict = field(default_factory=dict)
    trust_remote_code: bool = False

    def template_kwargs(self, configured: dict | None) -> dict:
        """The chat template kwargs of a run: the config's when set, else the registry entry's."""
        return dict(self.chat_template_kwargs if configured is None else configured)


def resolve_base_model(selector: str) -> BaseModel:
    """``--model``: a Hugging Face model folder, a model name of ``model_registry.json`` / clemcore's registry,
    or a hub id (``Qwen/Qwen3.5-27B``). Problems are one-line UsageErrors; nothing is downloaded here."""
    from playprm.models import gguf
    from playprm.models.registry import resolve_policy
    from playprm.prm.model import PRM_CONFIG

    if gguf.is_gguf_path(selector):  # written as a folder when training starts (import_gguf_base)
        return BaseModel(str(gguf.check_file(selector, flag="--model")))
    path = Path(selector).expanduser()
    if path.exists() or selector.startswith((".", "/", "~")):
        if not path.is_dir():
            raise UsageError(f"--model {selector} does not exist; give a Hugging Face model folder, a model name "
                             "from model_registry.json or a hub id such as Qwen/Qwen3.5-27B")
        if (path / PRM_CONFIG).is_file():
            raise UsageError(f"--model {selector} is a playprm PRM folder; train from its base model "
                             f"(for a tiny PRM: {path / 'backbone'})")
        if not (path / "config.json").is_file():
            what = "a PEFT adapter" if (path / "adapter_config.json").is_file() else "no model"
            raise UsageError(f"--model {selector} holds {what} (no config.json); give the base model's folder")
        return BaseModel(str(path.resolve()))
    try:
        spec = resolve_policy(selector)
    except UsageError as error:
        raise UsageError(str(error).replace("--policy-model", "--model", 1)) from None
    if spec.backend == "openai":
        raise UsageError(f"--model {selector} is served through an API ({spec.lookup_source}); training needs "
                         "the weights: give a Hugging Face model folder or hub id")
    if spec.peft_model:
        raise UsageError(f"--model {selector} is an adapter over {spec.model_id} ({spec.lookup_source}); "
                         f"train from the base model {spec.model_id}")
    return BaseModel(spec.model_id, dict(spec.chat_template_kwargs), spec.trust_remote_code)


GGUF_BASE_FOLDER = "base-model"


def import_gguf_base(base: BaseModel, config, announce=print) -> BaseModel:
    """``base`` itself, or for a ``.gguf`` base the same model written as a folder ``base-model/`` in the run's
    output dir (in the run's dtype), so that the trained adapter, the PRM and the registry entry name a base that
    transformers, PEFT and clemcore's ``clem run`` load by path. A resumed run finds the folder and reuses it;
    under several processes the main one writes it first."""
    from dataclasses import replace

    import torch

    from playprm.models import gguf

    if not gguf.is_gguf_path(base.model_id):
        return base
    folder = Path(config.output_dir) / GGUF_BASE_FOLDER
    with config.main_process_first(desc="import the .gguf base model"):
        if not (folder / "config.json").is_file():
            dtype = "bf16" if model_dtype(config) == torch.bfloat16 else "fp32"
            announce(f"importing {Path(base.model_id).name} into {folder} ({dtype}): the adapter's base model")
            gguf.import_folder(base.model_id, folder, dtype=dtype)
    return replace(base, model_id=str(folder.resolve()))


def model_dtype(config):
    """bf16 for CUDA runs (and the compute dtype of 4-bit weights), float32 on CPU."""
    import torch

    return torch.bfloat16 if config.bf16 or config.load_in_4bit else torch.float32


def shards_parameters(config) -> bool:
    """Whether DeepSpeed or FSDP (set by ``accelerate launch`` or the config) place the weights themselves."""
    kind = str(config.distributed_state.distributed_type)
    return bool(config.deepspeed or config.fsdp) or "DEEPSPEED" in kind or "FSDP" in kind


def load_base_model(model_class, base: BaseModel, config):
    """``model_class.from_pretrained`` as ``models.loading`` decides for a trainer: the run's dtype, 4-bit NF4 on
    this process's GPU when the config asks; under DeepSpeed / FSDP no device map, so the launcher can shard the
    weights."""
    from playprm.models.loading import pretrained_loading

    loading = pretrained_loading("train", dtype=model_dtype(config), load_in_4bit=bool(config.load_in_4bit),
                                 trust_remote_code=base.trust_remote_code,
                                 sharded=bool(config.load_in_4bit) and shards_parameters(config))
    return model_class.from_pretrained(base.model_id, **loading.kwargs())


ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


@dataclass
class StartPolicy:
    """The policy a run trains further: a base model, or a LoRA adapter over one (train-dpo keeps it as its
    reference; train-sft, value-weighted SFT after SFT, just goes on from it)."""

    base: BaseModel
    adapter: Path | None = None  # a LoRA adapter trained further; None: the weights of ``base`` themselves


def resolve_start_policy(selector: str) -> StartPolicy:
    """``--model`` of train-sft and train-dpo: a train-sft adapter folder, a model folder (a train-sft full-weight
    output or its checkpoint included), a registry name (of an adapter or a model) or a hub id. A missing or
    incomplete adapter is a one-line UsageError; nothing is loaded."""
    from playprm.models.adapter_base import recorded_base
    from playprm.models.registry import read_registry_file, resolve_policy

    path = Path(selector).expanduser()
    if path.is_dir() and (path / "adapter_config.json").is_file() and not (path / "config.json").is_file():
        entries = read_registry_file(path / "model_registry.json") if (path / "model_registry.json").is_file() else []
        entry = entries[0] if entries else {}
        base_id = entry.get("huggingface_id") or recorded_base(path)
        if not base_id:
            raise UsageError(f"--model {selector} is a LoRA adapter that names no base model (no model_registry.json, "
                             "no base_model_name_or_path); give the train-sft output folder")
        base = resolve_base_model(base_id)
        kwargs = entry.get("model_config", {}).get("chat_template_kwargs")
        return StartPolicy(BaseModel(base.model_id, dict(kwargs) if isinstance(kwargs, dict) else
                                     base.chat_template_kwargs, base.trust_remote_code), _checked_adapter(path, selector))
    if path.exists() or selector.startswith((".", "/", "~")):
        return StartPolicy(resolve_base_model(selector))
    spec = resolve_policy(selector)
    if spec.peft_model:
        return StartPolicy(BaseModel(spec.model_id, dict(spec.chat_template_kwargs), spec.trust_remote_code),
                           _checked_adapter(Path(spec.peft_model), selector))
    return StartPolicy(resolve_base_model(selector))


def _checked_adapter(folder: Path, selector: str) -> Path:
    if not (folder / "adapter_config.json").is_file() or not any((folder / n).is_file() for n in ADAPTER_WEIGHTS):
        raise UsageError(f"--model {selector}: the adapter {folder} is missing (no adapter_config.json and "
                         f"{ADAPTER_WEIGHTS[0]}); train it with `playprm train-sft` or give a model folder")
    return folder.resolve()


def check_start_policy(start: StartPolicy, config) -> None:
    """A ``UsageError`` where the config cannot train ``start`` (every weight of a LoRA adapter's run)."""
    if config.full_weights and start.adapter is not None:
        raise UsageError(f"--full-weights trains a whole model, but --model is the LoRA adapter {start.adapter}; "
                         "drop --full-weights to train the adapter further")


def load_start_policy(model_class, base: BaseModel, adapter: Path | None, config):
    """``(model, peft_config)`` for the trainer: ``base`` loaded as ``load_base_model`` does, with a start policy's
    ``adapter`` on it, trainable (no new adapter: ``peft_config`` None); without one a new LoRA's config, or None for
    a full-weight run."""
    from playprm.train.qlora import lora_config

    model = load_base_model(model_class, base, config)
    if adapter is None:
        return model, None if config.full_weights else lora_config(config, "CAUSAL_LM")
    from peft import PeftModel

    from playprm.models.adapters import key_mapping

    return PeftModel.from_pretrained(model, str(adapter), is_trainable=True,
                                     key_mapping=key_mapping(model, adapter)), None

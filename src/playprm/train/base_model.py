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

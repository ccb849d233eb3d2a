"""What a finished training run leaves beside its model so that its card can be written from files alone.

- ``trainer_state.json``: the Trainer's state at the end (log history, best checkpoint, total FLOPs), as every
  checkpoint holds it;
- ``training_config.json``: every setting of the run (the config dataclass, ``TrainingArguments.to_dict``);
- ``run_info.json``: what the config does not hold: which trainer, the base model, the training data (its folder,
  ``dataset_summary.json`` from ``sft-data`` / ``prm-data`` and the samples per game), the hardware and the
  framework versions.

``playprm.train.model_card`` renders README.md from these, ``metrics.json`` and the saved adapter's files.
"""

from __future__ import annotations

import json
import os
import platform
from collections import Counter
from importlib import metadata
from pathlib import Path

from playprm.atomic import write_json
from playprm.data.sft import SUMMARY_FILE as DATASET_SUMMARY_FILE  # the numbers of sft-data's dataset card

METRICS_FILE = "metrics.json"  # the run's final metrics, written by train-sft / train-prm / train-dpo / train-grpo
TRAINER_STATE_FILE = "trainer_state.json"
CONFIG_FILE = "training_config.json"
RUN_INFO_FILE = "run_info.json"
FRAMEWORKS = ("playprm", "peft", "trl", "transformers", "torch", "accelerate", "datasets", "bitsandbytes")


def detected_hardware(world_size: int) -> dict:
    """The devices this process sees: GPUs by name and memory, else the CPU; ``processes`` is the world size."""
    import torch

    if torch.cuda.is_available():
        names = Counter(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        memory = torch.cuda.get_device_properties(0).total_memory / 2**30
        devices = ", ".join(f"{count}× {name}" for name, count in names.items())
        return {"accelerator": "cuda", "devices": f"{devices} ({memory:.0f} GiB each)", "processes": world_size}
    cpu = platform.processor() or platform.machine()
    return {"accelerator": "cpu", "devices": f"CPU ({cpu}, {os.cpu_count()} cores, {torch.get_num_threads()} "
            "threads)", "processes": world_size}


def framework_versions() -> dict[str, str]:
    """Installed versions of the libraries a run depends on (those not installed are left out)."""
    versions = {}
    for name in FRAMEWORKS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def count_samples(data_dir: Path) -> dict[str, dict[str, int]]:
    """``{game: {"train": n, "validation": n}}`` counted from the dataset files' ``meta.game``."""
    counts: dict[str, dict[str, int]] = {}
    for split in ("train", "validation"):
        path = data_dir / f"{split}.jsonl"
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                game = str((json.loads(line).get("meta") or {}).get("game", "unknown"))
                counts.setdefault(game, {"train": 0, "validation": 0})[split] += 1
    return dict(sorted(counts.items()))


def record_run(output_dir: Path, *, kind: str, trainer, config, base, data_dir: Path | None,
               chat_template_kwargs: dict, samples_per_game: dict | None = None) -> None:
    """Write ``trainer_state.json``, ``training_config.json`` and ``run_info.json`` into ``output_dir``.

    ``kind`` is ``sft``, ``dpo``, ``grpo`` or ``prm``; ``base`` the ``BaseModel`` trained from;
    ``chat_template_kwargs`` those the run tokenised with; ``data_dir`` the training data (None: none on disk);
    ``samples_per_game`` the per-game counts where no data files say them (GRPO's rows).
    """
    output_dir = Path(output_dir)
    trainer.state.save_to_json(str(output_dir / TRAINER_STATE_FILE))
    write_json(output_dir / CONFIG_FILE, config.to_dict())
    summary_file = Path(data_dir) / DATASET_SUMMARY_FILE if data_dir is not None else None
    write_json(output_dir / RUN_INFO_FILE, {
        "kind": kind,
        "command": f"playprm train-{kind}",
        "base_model": base.model_id,
        "chat_template_kwargs": chat_template_kwargs,
        "data_dir": str(Path(data_dir).resolve()) if data_dir is not None else None,
        "dataset_summary": json.loads(summary_file.read_text(encoding="utf-8"))
        if summary_file is not None and summary_file.is_file() else None,
        "samples_per_game": samples_per_game if samples_per_game is not None else count_samples(Path(data_dir)),
        "cpu_fallback": bool(getattr(config, "cpu_fallback", False)),
        "hardware": detected_hardware(config.world_size),
        "versions": framework_versions(),
    })

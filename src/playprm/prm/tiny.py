"""The tiny pair ``make-tiny`` writes: ``out/policy`` (``playprm.models.tiny``) and ``out/prm``, a process reward
model on a second random-weight backbone of the policy's config and tokenizer."""

from __future__ import annotations

from pathlib import Path

from playprm.models.tiny import TinySize, write_tiny_policy


def make_tiny(out: str | Path, size: TinySize | None = None, seed: int = 0,
              corpus: list[str] | None = None, pieces: str | None = None) -> dict[str, Path]:
    """Write ``out/policy`` and ``out/prm`` of ``size.arch``, with a tokenizer trained on ``corpus`` when given
    (``pieces``: see ``models.tiny.build_tokenizer``); returns ``{"policy": Path, "prm": Path}``."""
    import torch

    from playprm.prm.model import ProcessRewardModel

    out = Path(out)
    config, tokenizer = write_tiny_policy(out / "policy", size, seed, corpus, pieces)
    torch.manual_seed(seed + 1)
    ProcessRewardModel.from_config(config).save(out / "prm", tokenizer=tokenizer, base_model=None)
    return {"policy": out / "policy", "prm": out / "prm"}

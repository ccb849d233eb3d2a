"""Shared fixtures: a tiny random-weight policy/PRM pair built once per session, and the shared sample."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_SAMPLE = REPO_ROOT.parent / "shared" / "data" / "clembench-v2.0-sample"


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """``{"policy": Path, "prm": Path}`` written by ``make_tiny`` (a few seconds, no network)."""
    from playprm.models.tiny import make_tiny

    return make_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="session")
def shared_sample() -> Path:
    """The real clembench v2.0 sample beside the checkout; tests skip where a user's clone lacks it."""
    if not SHARED_SAMPLE.is_dir():
        pytest.skip(f"shared data not found at {SHARED_SAMPLE} (only CI and dev machines have ../shared)")
    return SHARED_SAMPLE


@pytest.fixture(scope="module")
def one_cpu_thread():
    """The tiny model gains nothing from more threads, and on a shared CPU they only contend; restored after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tokenizer(tiny_models):
    """The tiny policy's tokenizer."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_models["policy"])

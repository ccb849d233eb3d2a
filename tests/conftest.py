"""Shared fixtures: tiny random-weight policy/PRM pairs (one per architecture) built once per session, and the
shared sample."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["real_model"]  # the real pretrained model (SmolLM2-135M-Instruct): tests/real_model.py

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_SAMPLE = REPO_ROOT.parent / "shared" / "data" / "clembench-v2.0-sample"


MAX_WORKERS = 4  # pytest-xdist processes (-n auto, pyproject.toml); each imports torch and builds its own fixtures


def pytest_xdist_auto_num_workers(config) -> int | None:
    """One test process per core, at most MAX_WORKERS: the tests run models on one thread each (run_threads), so
    the 2-core CI machine plays two files at once (--dist loadfile keeps a file's module fixtures in one process).
    PYTEST_XDIST_AUTO_NUM_WORKERS, where set, decides (xdist's own rule)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


_FIGURE = "figure"


@pytest.fixture
def report_figure(record_property):
    """``report_figure(text)``: a measured figure (a parity count, a rate) printed in the run's summary, from
    worker processes too (xdist sends ``user_properties`` back; a print would be lost)."""
    return lambda text: record_property(_FIGURE, text)


def pytest_terminal_summary(terminalreporter):
    figures = [value for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", [])
               for name, value in getattr(report, "user_properties", ()) if name == _FIGURE]
    if figures:
        terminalreporter.write_sep("-", "measured figures")
        for line in figures:
            terminalreporter.write_line(line)


_PAIRS = pytest.StashKey[dict]()  # one make_tiny pair per architecture for the whole session
ARCHS = ("qwen3.5", "qwen3")  # the model card's hybrid-attention Qwen3.5 first, then plain Qwen3


def _tiny_pair(request, tmp_path_factory, arch: str) -> dict[str, Path]:
    """The session's make_tiny pair of ``arch`` (a few seconds to build, no network), built on first use."""
    from playprm.models.tiny import TinySize
    from playprm.prm.tiny import make_tiny

    pairs = request.config.stash.setdefault(_PAIRS, {})
    if arch not in pairs:
        pairs[arch] = make_tiny(tmp_path_factory.mktemp(f"tiny-{arch}"), TinySize(arch=arch))
    return pairs[arch]


@pytest.fixture(scope="session", params=ARCHS)
def tiny_models(request, tmp_path_factory) -> dict[str, Path]:
    """``{"policy": Path, "prm": Path}`` written by ``make_tiny``, once per architecture: every test of a model
    path runs on the card's Qwen3.5 layout and on Qwen3, so neither can break unseen."""
    return _tiny_pair(request, tmp_path_factory, request.param)


@pytest.fixture(scope="session")
def card_models(request, tmp_path_factory) -> dict[str, Path]:
    """The Qwen3.5-layout pair alone, for tests whose subject is not the model (CLI errors, files, resume)."""
    return _tiny_pair(request, tmp_path_factory, ARCHS[0])


@pytest.fixture(scope="session")
def card_sft_adapter(card_models, tmp_path_factory) -> Path:
    """The one LoRA (the card's adapter kind) that ``train-sft`` writes on the Qwen3.5-layout pair for the whole
    session, shared by the tests that load, play or clem-run it (test_card_architecture, test_clem_run_entries):
    4 steps at a high learning rate, so that it changes the outputs; its registry entry names it ``sft-adapter``
    and its folder is the card's ``Qwen3.5-27B-sft-ep1``."""
    from test_train_sft import QUICK, TINY_RECIPE, write_sft_data

    from playprm.cli import main

    root = tmp_path_factory.mktemp("card-sft")
    out = root / "Qwen3.5-27B-sft-ep1"
    assert main(["train-sft", "--config", str(TINY_RECIPE), "--model", str(card_models["policy"]), "--data",
                 str(write_sft_data(root / "data")), "--output-dir", str(out), *QUICK, "--max-steps", "4",
                 "--learning-rate", "0.05", "--model-name", "sft-adapter"]) == 0
    return out


@pytest.fixture(scope="session")
def shared_sample() -> Path:
    """The real clembench v2.0 sample beside the checkout; tests skip where a user's clone lacks it."""
    if not SHARED_SAMPLE.is_dir():
        pytest.skip(f"shared data not found at {SHARED_SAMPLE} (only CI and dev machines have ../shared)")
    return SHARED_SAMPLE


# the suite runs one test process per core (above): a command a test runs in-process, or a subprocess it starts, must
# not take every core for a large model (transformers_runtime.cpu_threads), so the user's override pins one thread
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session", autouse=True)
def run_threads():
    """A test session is one run: its CPU threads are decided once, as a playprm command decides them (model
    loaders leave them alone; tests call loaders without a command in front)."""
    from playprm.transformers_runtime import choose_cpu_threads

    choose_cpu_threads()


@pytest.fixture(scope="module")
def one_cpu_thread():
    """The tiny model gains nothing from more threads, and on a shared CPU they only contend; restored after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def no_model_loading(monkeypatch):
    """Any causal LM loaded from here on fails the test: input errors must come before a model loads."""
    import transformers

    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_loading)


@pytest.fixture(scope="module")
def tokenizer(tiny_models):
    """The tiny policy's tokenizer."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_models["policy"])

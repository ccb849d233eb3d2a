"""The ZeRO-3 recipe (recipes/qwen3.5-27b/sft-zero3.yaml + recipes/deepspeed/zero3.json), checked without GPUs: the
recipe builds train-sft's config, transformers' DeepSpeed integration fills every ``auto`` of the JSON from it
without a mismatch (4 processes: 4 per GPU x 8 accumulation steps x 4 = the card's 128), and DeepSpeed's own
parser reads the filled config as stage 3 with that batch. What is not run here: a ZeRO-3 training step (it needs
CUDA devices; see docs/training.md)."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import pytest

from playprm.train.qlora import gradient_accumulation_for
from playprm.train.recipe import build_config, load_recipe
from playprm.train.sft_config import SFTTrainingConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
RECIPE = REPO_ROOT / "recipes" / "qwen3.5-27b" / "sft-zero3.yaml"
QWEN35_27B_HIDDEN = 5120  # the hidden size of Qwen/Qwen3.5-27B's text model: ZeRO-3's bucket sizes follow it
GPUS = 4  # the recipe's launch line: torchrun --nproc_per_node 4


class OnProcesses:
    """The train-sft config as ``world`` processes see it (``world_size`` is read from the launch otherwise)."""

    def __init__(self, config, world: int, steps: int):
        self._config, self.world_size, self.gradient_accumulation_steps = config, world, steps

    def __getattr__(self, name):
        return getattr(self._config, name)


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """``(recipe settings, the DeepSpeed config as the Trainer hands it to DeepSpeed on 4 processes, the same on
    1)``, after transformers' HfTrainerDeepSpeedConfig has filled it from the recipe's train-sft config."""
    pytest.importorskip("deepspeed", reason="DeepSpeed is not installed (pip install -e '.[dev]' brings it)")
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    settings = load_recipe(RECIPE, SFTTrainingConfig, fixed=("model", "data"))
    # on this CPU machine: the CUDA requirement and the DeepSpeed launch itself are what is left out
    cpu = {k: v for k, v in settings.items() if k not in ("model", "deepspeed", "require_cuda")}
    config = build_config(SFTTrainingConfig, {**cpu, "use_cpu": True,
                                              "output_dir": str(tmp_path_factory.mktemp("zero3"))})
    model = SimpleNamespace(config=SimpleNamespace(hidden_size=QWEN35_27B_HIDDEN))
    results = {}
    for world in (GPUS, 1):
        steps = gradient_accumulation_for(settings["effective_batch_size"], config.per_device_train_batch_size,
                                          world)
        args = OnProcesses(config, world, steps)
        deepspeed = HfTrainerDeepSpeedConfig(str(REPO_ROOT / settings["deepspeed"]))
        deepspeed.trainer_config_process(args)
        deepspeed.trainer_config_finalize(args, model, num_training_steps=100)  # raises on any mismatch
        results[world] = deepspeed
    return settings, results[GPUS], results[1]


def autos(node) -> list:
    if isinstance(node, dict):
        return [v for value in node.values() for v in autos(value)]
    return [node] if node == "auto" else []


def test_the_zero3_recipe_fills_every_auto_of_its_deepspeed_config_with_the_cards_batch(filled):
    settings, four, one = filled
    assert settings["deepspeed"] == "recipes/deepspeed/zero3.json" and settings["load_in_4bit"] is False
    assert four.is_zero3() and not four.is_offload()
    assert autos(four.config) == [] and four.dtype().__repr__() == "torch.bfloat16"
    assert four.config["train_micro_batch_size_per_gpu"] == 4 and four.config["gradient_accumulation_steps"] == 8
    assert four.config["train_batch_size"] == settings["effective_batch_size"] == 128
    assert one.config["gradient_accumulation_steps"] == 32 and one.config["train_batch_size"] == 128
    zero = four.config["zero_optimization"]
    assert zero["reduce_bucket_size"] == QWEN35_27B_HIDDEN ** 2
    assert zero["stage3_gather_16bit_weights_on_model_save"] is True  # the adapter is saved whole, not sharded


def test_deepspeed_parses_the_filled_zero3_config(filled):
    from deepspeed.runtime.config import DeepSpeedConfig

    _, _, one = filled
    # without a process group DeepSpeed counts one process: the single-process fill (32 accumulation steps)
    parsed = DeepSpeedConfig(copy.deepcopy(one.config))
    assert parsed.zero_optimization_stage == 3 and parsed.zero_enabled
    assert parsed.train_batch_size == 128 and parsed.gradient_accumulation_steps == 32
    assert parsed.bfloat16_config.enabled and parsed.gradient_clipping == 1.0

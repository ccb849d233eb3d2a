"""train-sft: turn-by-turn assistant masks, the effective-batch arithmetic, QLoRA SFT on the tiny policy (the loss
falls, the adapter reloads and changes the policy, an interrupted run resumes to the same weights), and one-line
errors for bad input."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import pytest
import torch

from playprm import chat
from playprm.cli import main
from playprm.train.qlora import gradient_accumulation_for
from playprm.train.sft import IGNORE, conversation_sequences

REPO_ROOT = Path(__file__).resolve().parents[1]
TINY_RECIPE = REPO_ROOT / "recipes" / "tiny" / "sft.yaml"
QUICK = ["--disable-tqdm", "true", "--logging-steps", "1"]


pytestmark = pytest.mark.usefixtures("one_cpu_thread")


@pytest.fixture(scope="module")
def tokenizer(card_models):
    """The tiny policy's tokenizer, read once: make-tiny writes the same chat template and BPE for both
    architectures (Qwen3.5 adds four vision tokens no text uses), so the label tests need no second one."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(card_models["policy"])


def conversation(index: int) -> dict:
    """A short wordle-like dialogue; the replies repeat across conversations so a tiny model can learn them."""
    return {
        "messages": [
            {"role": "user", "content": f"Let's play wordle, round {index % 3}. Reply with GUESS: word."},
            {"role": "assistant", "content": "GUESS: house"},
            {"role": "user", "content": "Feedback: h o u s e, none right. Guess again."},
            {"role": "assistant", "content": "GUESS: crane"},
        ],
        "meta": {"game": "wordle", "experiment": "easy", "game_id": index, "episode": f"episode_{index}"},
    }


def write_sft_data(folder: Path, train: int = 16, validation: int = 4) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", train), ("validation", validation)):
        lines = [json.dumps(conversation(i)) for i in range(count)]
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def train_sft_cli(models, data: Path, out: Path, *extra: str) -> int:
    return main(["train-sft", "--config", str(TINY_RECIPE), "--model", str(models["policy"]),
                 "--data", str(data), "--output-dir", str(out), *QUICK, *extra])


@pytest.fixture(scope="module")
def trained_run(tiny_models, tmp_path_factory):
    """One 15-step CPU run of the tiny recipe, through the command line; returns (output dir, printed text)."""
    import contextlib
    import io

    root = tmp_path_factory.mktemp("sft")
    data = write_sft_data(root / "data")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = train_sft_cli(tiny_models, data, root / "out", "--max-steps", "15", "--eval-steps", "5",
                             "--save-steps", "5")
    assert code == 0
    return root / "out", printed.getvalue()


def test_gradient_accumulation_reaches_the_effective_batch():
    assert gradient_accumulation_for(128, 4, 1) == 32  # the model card on one GPU
    assert gradient_accumulation_for(128, 4, 4) == 8
    assert gradient_accumulation_for(128, 4, 3) == 11  # rounds up: 132 sequences per step, never fewer than asked
    assert gradient_accumulation_for(128, 8, 32) == 1
    assert gradient_accumulation_for(2, 4, 1) == 1
    with pytest.raises(ValueError):
        gradient_accumulation_for(128, 0, 1)


def reply_spans(tokenizer, messages, kwargs):
    """(start, end) of each assistant reply's tokens as inference tokenises the turn."""
    spans = []
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            start = len(chat.prompt_ids(tokenizer, messages[:index], kwargs))
            spans.append((start, start + len(chat.response_ids(tokenizer, message["content"]))))
    return spans


def test_labels_cover_exactly_the_assistant_replies_and_their_end_of_turn_token(tokenizer):
    messages = [{"role": "system", "content": "You play games."}] + conversation(0)["messages"]
    [sequence] = conversation_sequences(tokenizer, messages, {})
    ids, labels = sequence["input_ids"], sequence["labels"]
    assert ids == chat.prompt_ids(tokenizer, messages[:-1], {}) + chat.response_ids(tokenizer, "GUESS: crane")
    spans = reply_spans(tokenizer, messages, {})
    inside = {i for start, end in spans for i in range(start, end)}
    assert [i for i, label in enumerate(labels) if label != IGNORE] == sorted(inside)
    assert all(labels[i] == ids[i] for i in inside)
    end_of_turn = chat.end_of_turn_ids(tokenizer)
    for _, end in spans:  # every reply ends with its end-of-turn token, and that token is trained
        assert labels[end - len(end_of_turn):end] == end_of_turn
    assert tokenizer.decode([ids[i] for i in sorted(inside)]).count("<|im_end|>") == 2


def test_template_that_rerenders_history_continues_in_a_new_sequence_and_labels_each_reply_once(tokenizer):
    # enable_thinking=False puts an empty think block into the generation prompt, not into the history
    kwargs = {"enable_thinking": False}
    messages = conversation(0)["messages"]
    first, second = conversation_sequences(tokenizer, messages, kwargs)
    replies = [chat.response_ids(tokenizer, m["content"]) for m in messages if m["role"] == "assistant"]
    for sequence, reply, end in ((first, replies[0], 2), (second, replies[1], 4)):
        assert sequence["input_ids"] == chat.prompt_ids(tokenizer, messages[:end - 1], kwargs) + reply
        assert [t for t in sequence["labels"] if t != IGNORE] == reply
        assert sequence["labels"][-len(reply):] == reply


def test_sft_loss_falls_and_the_cpu_fallback_is_announced_in_one_line(trained_run):
    out, printed = trained_run
    notes = [line for line in printed.splitlines() if "no CUDA device" in line]
    assert len(notes) == 1 and "adamw_torch" in notes[0] and "4-bit" in notes[0]
    state = json.loads((out / "checkpoint-15" / "trainer_state.json").read_text())
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    assert len(losses) == 15
    # a LoRA on a random tiny model cannot sharpen its near-flat output much (frozen small embeddings), but the
    # loss falls steadily and the argmax learns the replies
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.5
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["global_step"] == 15 and metrics["validation_tokens"] > 0
    assert metrics["validation_token_accuracy"] > 0.5 and metrics["validation_loss"] < losses[0]
    assert metrics["load_in_4bit"] is False and metrics["optim"] == "adamw_torch"


def test_saved_adapter_reloads_and_changes_the_policy_outputs(trained_run, tiny_models):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from playprm.models.registry import resolve_policy

    out, _ = trained_run
    [entry] = json.loads((out / "model_registry.json").read_text())
    assert entry == {
        "model_name": out.name,
        "backend": "huggingface_local",
        "huggingface_id": str(tiny_models["policy"].resolve()),
        # what clemcore's clem run reads as playprm means it: no load_in_4bit key (present, even false, clemcore
        # asks bitsandbytes for a quantization config), the end-of-turn text culled, left padding
        "model_config": {"premade_chat_template": True, "eos_to_cull": "<\\|im_end\\|>", "padding_side": "left",
                         "chat_template_kwargs": {}, "peft_model": str(out.resolve())},
    }
    spec = resolve_policy(out.name, cwd=out)  # what `playprm eval --policy-model <name>` does there
    assert spec.peft_model == str(out.resolve()) and spec.model_id == str(tiny_models["policy"].resolve())

    ids = torch.tensor([chat.prompt_ids(_tokenizer(tiny_models), conversation(1)["messages"][:1], {})])
    base = AutoModelForCausalLM.from_pretrained(tiny_models["policy"]).eval()
    with torch.no_grad():
        before = base(ids).logits
        tuned = PeftModel.from_pretrained(base, str(out)).eval()
        after = tuned(ids).logits
    assert not torch.allclose(before, after, atol=1e-4)


def _tokenizer(tiny_models):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_models["policy"])


class StopAtStep:
    """A scripted interruption: raises KeyboardInterrupt when training reaches ``step``."""

    def __init__(self, step: int):
        from transformers import TrainerCallback

        class Callback(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if state.global_step == step:
                    raise KeyboardInterrupt

        self.callback = Callback()


def sft_run(models, out: Path, *, resume=False, callbacks=()):
    from playprm.train.base_model import resolve_start_policy
    from playprm.train.recipe import build_config, command_settings
    from playprm.train.sft import train_sft
    from playprm.train.sft_config import SFTTrainingConfig

    args = Namespace(config=TINY_RECIPE, model=None, data=out.parent / "data", overrides=[
        "--output-dir", str(out), "--max-steps", "6", "--eval-steps", "3", "--save-steps", "3", *QUICK])
    settings, _ = command_settings(args, SFTTrainingConfig, {})
    config = build_config(SFTTrainingConfig, settings)
    return train_sft(config, resolve_start_policy(str(models["policy"])), out.parent / "data", resume=resume,
                     callbacks=callbacks, announce=lambda text: None)


def test_resumed_run_ends_with_the_weights_of_an_uninterrupted_run(card_models, tmp_path):
    # the Trainer's checkpoint and RNG restore do not read the architecture: the card's layout alone
    from safetensors.torch import load_file

    write_sft_data(tmp_path / "data", train=12)
    straight = sft_run(card_models, tmp_path / "straight")
    with pytest.raises(KeyboardInterrupt):
        sft_run(card_models, tmp_path / "interrupted", callbacks=[StopAtStep(4).callback])
    assert sorted(p.name for p in (tmp_path / "interrupted").glob("checkpoint-*")) == ["checkpoint-3"]
    resumed = sft_run(card_models, tmp_path / "interrupted", resume=True)
    assert resumed["global_step"] == straight["global_step"] == 6
    expected = load_file(tmp_path / "straight" / "adapter_model.safetensors")
    actual = load_file(tmp_path / "interrupted" / "adapter_model.safetensors")
    assert expected.keys() == actual.keys()
    for name in expected:
        torch.testing.assert_close(actual[name], expected[name], rtol=1e-4, atol=1e-5)
    assert resumed["validation_loss"] == pytest.approx(straight["validation_loss"], rel=1e-4)


@pytest.mark.parametrize("problem, expected", [
    ("missing", "train.jsonl does not exist"),
    ("empty", "validation.jsonl is empty"),
    ("malformed", "train.jsonl:2: not valid JSON (expecting property name enclosed in double quotes at line 2 "
                  "column 2)"),
    ("ends_with_user", "train.jsonl:1: 'messages' must end with an assistant message"),
    ("bad_role", "train.jsonl:1: messages[0] needs a 'role'"),
])
def test_bad_datasets_are_one_line_usage_errors(problem, expected, card_models, tmp_path, capsys):
    # refused before any model loads, so the architecture is never read: the card's layout alone
    data = write_sft_data(tmp_path / "data", train=3)
    train = data / "train.jsonl"
    lines = train.read_text().splitlines()
    if problem == "missing":
        train.unlink()
    elif problem == "empty":
        (data / "validation.jsonl").write_text("")
    elif problem == "malformed":
        train.write_text(lines[0] + "\n{not json\n")
    elif problem == "ends_with_user":
        record = json.loads(lines[0])
        record["messages"].append({"role": "user", "content": "bye"})
        train.write_text(json.dumps(record) + "\n")
    elif problem == "bad_role":
        record = json.loads(lines[0])
        record["messages"][0]["role"] = "gm"
        train.write_text(json.dumps(record) + "\n")
    assert train_sft_cli(card_models, data, tmp_path / "out") == 2
    captured = capsys.readouterr()
    error = captured.err.strip()
    assert error.startswith("playprm train-sft: error: ") and expected in error and "\n" not in error
    assert captured.out == ""  # the error is the only line: no CPU-fallback note before it
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, expected", [
    (["--require-cuda"], "--require-cuda is set but no CUDA device"),
    (["--max-stepz", "3"], "unknown setting --max-stepz (command line); did you mean --max-steps"),
    (["--max-steps", "three"], "--max-steps expects an integer, not 'three'"),
    (["--per-device-train-batch-size", "64"], "larger than the 3 training sequences"),
    (["--load-in-4bit", "true"], "--load-in-4bit needs a CUDA device"),
    (["--lr-scheduler-type", "cosin"], "cosin"),
])
def test_impossible_settings_are_one_line_usage_errors(extra, expected, card_models, tmp_path, capsys):
    data = write_sft_data(tmp_path / "data", train=3)
    assert train_sft_cli(card_models, data, tmp_path / "out", *extra) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm train-sft: error: ") and expected in error and "\n" not in error


def test_missing_model_and_unfinished_output_are_usage_errors(card_models, tmp_path, capsys):
    data = write_sft_data(tmp_path / "data", train=3)
    assert main(["train-sft", "--model", str(tmp_path / "nowhere"), "--data", str(data),
                 "--output-dir", str(tmp_path / "out")]) == 2
    assert "does not exist; give a Hugging Face model folder" in capsys.readouterr().err
    (tmp_path / "out" / "checkpoint-3").mkdir(parents=True)
    assert train_sft_cli(card_models, data, tmp_path / "out") == 2
    assert "already holds a run (checkpoint-3); pass --resume" in capsys.readouterr().err
    assert train_sft_cli(card_models, data, tmp_path / "fresh", "--resume") == 2
    assert "holds no checkpoint-* folder to continue from" in capsys.readouterr().err


def test_command_line_settings_win_over_the_recipe_and_the_recipe_over_the_defaults(tmp_path):
    from playprm.train.recipe import build_config, command_settings, load_recipe
    from playprm.train.sft_config import SFTTrainingConfig

    args = Namespace(config=TINY_RECIPE, model=None, data=tmp_path, overrides=["--learning-rate", "5e-4"])
    settings, inputs = command_settings(args, SFTTrainingConfig, {"output_dir": str(tmp_path / "out")})
    config = build_config(SFTTrainingConfig, settings)
    assert config.learning_rate == 5e-4  # command line over the recipe's 1e-2
    assert config.max_steps == 20 and config.lora_r == 8  # recipe over the defaults
    assert config.lora_dropout == 0.05 and config.lr_scheduler_type == "cosine"  # the card's defaults
    assert inputs == {"model": "tiny/policy", "data": tmp_path}
    card = load_recipe(REPO_ROOT / "recipes" / "qwen3.5-27b" / "sft.yaml", SFTTrainingConfig, fixed=("model",))
    assert card["model"] == "Qwen/Qwen3.5-27B" and card["chat_template_kwargs"] == {"enable_thinking": False}
    defaults = SFTTrainingConfig.__dataclass_fields__
    for name in ("learning_rate", "lr_scheduler_type", "warmup_steps", "per_device_train_batch_size",
                 "effective_batch_size", "max_length", "lora_r", "lora_alpha", "lora_dropout",
                 "lora_target_modules", "early_stopping_patience"):
        assert card[name] == defaults[name].default, name


@pytest.mark.parametrize("recipe", sorted((REPO_ROOT / "recipes").glob("*/sft*.yaml")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sft_recipes_name_only_known_settings(recipe):
    from playprm.train.recipe import load_recipe
    from playprm.train.sft_config import SFTTrainingConfig

    settings = load_recipe(recipe, SFTTrainingConfig, fixed=("model", "data"))
    assert settings["model"]
    if settings.get("deepspeed"):
        assert (REPO_ROOT / settings["deepspeed"]).is_file()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path of --bf16")
def test_bf16_on_cpu_is_accepted_and_announced(tmp_path):
    # the Trainer refuses bf16 without a GPU unless the run says it is on CPU: --bf16 true used to end in
    # transformers' "Your setup doesn't support bf16/gpu" instead of training
    from playprm.train.qlora import cpu_fallback_note
    from playprm.train.recipe import build_config, command_settings
    from playprm.train.sft_config import SFTTrainingConfig

    args = Namespace(config=TINY_RECIPE, model=None, data=tmp_path, overrides=[
        "--output-dir", str(tmp_path / "out"), "--max-steps", "1", "--bf16", "true", *QUICK])
    settings, _ = command_settings(args, SFTTrainingConfig, {})
    config = build_config(SFTTrainingConfig, settings)
    assert config.bf16 and config.use_cpu
    assert "training unquantized in bfloat16" in cpu_fallback_note(config, "train-sft")

"""train-dpo: DPO on the tiny policy of both architectures lowers its loss and changes greedy replies; starting from an
SFT adapter keeps that adapter as the reference and writes an entry clemcore's own ``clem run`` plays; an
interrupted run resumes; bad inputs (no pairs, pairs of one context, a missing adapter) are one line before any model
loads."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import torch

from playprm import chat
from playprm.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]
DPO_RECIPE = REPO_ROOT / "recipes" / "tiny" / "dpo.yaml"
SFT_RECIPE = REPO_ROOT / "recipes" / "tiny" / "sft.yaml"
QUICK = ["--disable-tqdm", "true", "--logging-steps", "1"]
CHOSEN, REJECTED = "GUESS: crane", "GUESS: house"

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


def pair(index: int) -> dict:
    """A wordle-like context (one of three) with a preferred and a dispreferred guess, in pref-data's format."""
    return {"prompt": [{"role": "user", "content": f"Let's play wordle, round {index % 3}. Reply with GUESS: word."}],
            "chosen": [{"role": "assistant", "content": CHOSEN}],
            "rejected": [{"role": "assistant", "content": REJECTED}],
            "chosen_value": 1.0, "rejected_value": 0.0, "source": "mc",
            "meta": {"game": "wordle", "experiment": "easy", "game_id": index}}


def write_pairs(folder: Path, train: int = 12, validation: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", train), ("validation", validation)):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(pair(i)) + "\n" for i in range(count)))
    return folder


def train_dpo_cli(model, data: Path, out: Path, *extra: str) -> int:
    return main(["train-dpo", "--config", str(DPO_RECIPE), "--model", str(model), "--data", str(data),
                 "--output-dir", str(out), *QUICK, *extra])


def reply_logprob(model, tokenizer, reply: str) -> float:
    """Log-probability of ``reply`` (and its end-of-turn token) after the first pair's context."""
    prompt = chat.prompt_ids(tokenizer, pair(0)["prompt"], {})
    answer = chat.response_ids(tokenizer, reply)
    ids = torch.tensor([prompt + answer])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1:-1].float()
    return logits.log_softmax(-1).gather(1, torch.tensor(answer)[:, None]).sum().item()


def greedy_reply(model, tokenizer) -> list[int]:
    ids = torch.tensor([chat.prompt_ids(tokenizer, pair(0)["prompt"], {})])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    return out[0, ids.shape[1]:].tolist()


@pytest.fixture(scope="module")
def dpo_run(tiny_models, tmp_path_factory):
    """One 12-step CPU run of the tiny recipe (a new LoRA adapter on the tiny policy), through the command line."""
    root = tmp_path_factory.mktemp("dpo")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = train_dpo_cli(tiny_models["policy"], write_pairs(root / "pairs"), root / "out")
    assert code == 0
    return root / "out", printed.getvalue()


def test_dpo_lowers_its_loss_and_changes_greedy_replies(dpo_run, tiny_models):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out, printed = dpo_run
    state = json.loads((out / "checkpoint-12" / "trainer_state.json").read_text())
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    assert len(losses) == 12
    assert losses[0] == pytest.approx(0.6931, abs=1e-3)  # log 2: the policy starts as its reference
    assert sum(losses[-3:]) / 3 < losses[0] - 0.1
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["validation_loss"] < losses[0] and metrics["validation_reward_accuracy"] == 1.0
    assert "validation DPO loss" in printed

    tokenizer = AutoTokenizer.from_pretrained(tiny_models["policy"])
    base = AutoModelForCausalLM.from_pretrained(tiny_models["policy"]).eval()
    margin_before = reply_logprob(base, tokenizer, CHOSEN) - reply_logprob(base, tokenizer, REJECTED)
    greedy_before = greedy_reply(base, tokenizer)
    tuned = PeftModel.from_pretrained(base, str(out)).eval()
    margin_after = reply_logprob(tuned, tokenizer, CHOSEN) - reply_logprob(tuned, tokenizer, REJECTED)
    assert margin_after > margin_before + 1.0  # the chosen reply gained on the rejected one
    assert greedy_reply(tuned, tokenizer) != greedy_before


def test_dpo_entry_names_the_adapter_over_its_base_and_a_policy_card(dpo_run, tiny_models):
    from playprm.models.registry import resolve_policy

    out, _ = dpo_run
    [entry] = json.loads((out / "model_registry.json").read_text())
    assert entry["huggingface_id"] == str(tiny_models["policy"].resolve())
    assert entry["model_config"]["peft_model"] == str(out.resolve()) and "load_in_4bit" not in entry["model_config"]
    assert resolve_policy(out.name, cwd=out).peft_model == str(out.resolve())
    card = (out / "README.md").read_text()
    assert "direct preference optimisation" in card and "DPOTrainer" in card and "- dpo" in card


def sft_adapter(model: Path, root: Path) -> Path:
    from test_train_sft import write_sft_data

    out = root / "sft"
    assert main(["train-sft", "--config", str(SFT_RECIPE), "--model", str(model), "--data",
                 str(write_sft_data(root / "sft-data", train=4, validation=2)), "--output-dir", str(out), *QUICK,
                 "--max-steps", "2", "--model-name", "tiny-sft"]) == 0
    return out


def test_dpo_from_an_sft_adapter_keeps_it_as_the_reference_and_plays_under_clem_run(card_models, tmp_path):
    import shutil

    from safetensors.torch import load_file
    from test_clemcore_parity import clem, episodes, workspace

    sft = sft_adapter(card_models["policy"], tmp_path)
    out = tmp_path / "dpo"
    assert train_dpo_cli(sft, write_pairs(tmp_path / "pairs"), out, "--max-steps", "3", "--eval-steps", "3",
                         "--save-steps", "3", "--model-name", "tiny-sft-dpo") == 0
    state = json.loads((out / "trainer_state.json").read_text())
    first = next(entry for entry in state["log_history"] if "loss" in entry)
    # at the first step the policy is its reference, the SFT adapter (the base would give non-zero rewards)
    assert first["rewards/chosen"] == first["rewards/rejected"] == 0.0
    assert json.loads((out / "metrics.json").read_text())["start"] == str(sft.resolve())
    assert not (out / "ref").exists()  # the frozen copy is not saved: the reference is the SFT folder itself
    trained, started = load_file(out / "adapter_model.safetensors"), load_file(sft / "adapter_model.safetensors")
    assert trained.keys() == started.keys() and any(not torch.equal(trained[k], started[k]) for k in trained)

    [entry] = json.loads((out / "model_registry.json").read_text())
    assert entry["huggingface_id"] == str(card_models["policy"].resolve())
    root = workspace(tmp_path / "clem", card_models["policy"])
    shutil.copy(out / "model_registry.json", root / "model_registry.json")  # the entry exactly as written
    clem("run", "-g", "referencegame", "-m", "tiny-sft-dpo", "-r", "res", "-t", "0.0", "-l", "6", "-b", "4", cwd=root)
    played = episodes(root / "res")
    assert len(played) == 4 and not list((root / "res").rglob("error.json"))


def test_full_weight_dpo_saves_the_model_as_its_entry(card_models, tmp_path):
    out = tmp_path / "dpo"
    assert train_dpo_cli(card_models["policy"], write_pairs(tmp_path / "pairs"), out, "--full-weights", "true",
                         "--max-steps", "2", "--eval-steps", "2", "--save-steps", "2") == 0
    [entry] = json.loads((out / "model_registry.json").read_text())
    assert entry["huggingface_id"] == str(out.resolve()) and "peft_model" not in entry["model_config"]
    assert (out / "config.json").is_file() and not (out / "adapter_config.json").exists()


def test_interrupted_dpo_resumes_to_the_weights_of_an_uninterrupted_run(card_models, tmp_path):
    from safetensors.torch import load_file
    from test_train_sft import StopAtStep

    from playprm.train.base_model import resolve_start_policy
    from playprm.train.dpo import train_dpo
    from playprm.train.dpo_config import DPOTrainingConfig
    from playprm.train.recipe import build_config, load_recipe

    data = write_pairs(tmp_path / "pairs")

    def run(out: Path, **kwargs):
        settings = {**load_recipe(DPO_RECIPE, DPOTrainingConfig, fixed=("model", "data")), "max_steps": 4,
                    "eval_steps": 2, "save_steps": 2, "output_dir": str(out)}
        settings.pop("model")
        return train_dpo(build_config(DPOTrainingConfig, settings), resolve_start_policy(str(card_models["policy"])),
                         data, announce=lambda text: None, **kwargs)

    straight = run(tmp_path / "straight")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", callbacks=[StopAtStep(3).callback])
    resumed = run(tmp_path / "cut", resume=True)
    assert resumed["global_step"] == straight["global_step"] == 4
    expected, actual = (load_file(tmp_path / name / "adapter_model.safetensors") for name in ("straight", "cut"))
    for name in expected:
        torch.testing.assert_close(actual[name], expected[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("problem, expected", [
    ("no-pairs", "train.jsonl is empty"),
    ("one-context", "all 12 pairs answer one context"),
    ("same-reply", "'chosen' and 'rejected' are the same reply"),
    ("sft-format", "'prompt' must be a non-empty list"),
    ("missing-adapter", "the adapter"),
    ("adapter-full-weights", "--full-weights trains a whole model"),
])
def test_bad_inputs_are_one_line_errors_before_any_model_loads(problem, expected, card_models, tmp_path, capsys,
                                                               no_model_loading):
    data = write_pairs(tmp_path / "pairs")
    model, extra = card_models["policy"], []
    lines = (data / "train.jsonl").read_text().splitlines()
    if problem == "no-pairs":
        (data / "train.jsonl").write_text("")
    elif problem == "one-context":
        (data / "train.jsonl").write_text("".join(json.dumps(pair(0)) + "\n" for _ in lines))
    elif problem == "same-reply":
        record = pair(0)
        record["rejected"] = record["chosen"]
        (data / "train.jsonl").write_text(json.dumps(record) + "\n")
    elif problem == "sft-format":
        (data / "train.jsonl").write_text(json.dumps({"messages": pair(0)["prompt"]}) + "\n")
    elif problem in ("missing-adapter", "adapter-full-weights"):
        model = tmp_path / "sft"
        model.mkdir()
        (model / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(card_models["policy"])}))
        if problem == "adapter-full-weights":
            (model / "adapter_model.safetensors").write_bytes(b"")
            extra = ["--full-weights", "true"]
    assert train_dpo_cli(model, data, tmp_path / "out", *extra) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm train-dpo: error: ") and expected in error and "\n" not in error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("recipe", sorted((REPO_ROOT / "recipes").glob("*/dpo*.yaml")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_dpo_recipes_name_only_known_settings(recipe):
    from playprm.train.dpo_config import DPOTrainingConfig
    from playprm.train.recipe import load_recipe

    settings = load_recipe(recipe, DPOTrainingConfig, fixed=("model", "data"))
    assert settings["model"] and settings["beta"] > 0


def test_the_final_validation_pass_is_reused_not_run_twice():
    """train-dpo's metrics come from the Trainer's evaluation at the last step where it ran one on the kept
    weights; another pass only where it did not (a SmolLM2 validation pass costs minutes)."""
    from types import SimpleNamespace

    from playprm.train.dpo import final_evaluation

    def trainer(history, step, best_at_end=False, best_step=None):
        calls = []
        return SimpleNamespace(state=SimpleNamespace(log_history=history, global_step=step,
                                                     best_global_step=best_step),
                               args=SimpleNamespace(load_best_model_at_end=best_at_end),
                               evaluate=lambda: calls.append(1) or {"eval_loss": 0.1, "fresh": True}), calls

    at_end = {"eval_loss": 0.3, "eval_rewards/accuracies": 0.75, "step": 24}
    reused, calls = trainer([{"loss": 0.6, "step": 24}, at_end], 24)
    assert final_evaluation(reused) == at_end and not calls
    # the presets' DPO evaluates once, at its last step: the best checkpoint the Trainer reloads is that step's
    reused, calls = trainer([at_end], 24, True, best_step=24)
    assert final_evaluation(reused) == at_end and not calls
    for history, step, best, best_step in (([at_end], 30, False, None), ([], 24, False, None),
                                           ([at_end], 24, True, 12)):
        fresh, calls = trainer(history, step, best, best_step)
        assert final_evaluation(fresh)["fresh"] and calls == [1]

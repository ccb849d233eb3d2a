"""Value-weighted SFT: ``sft-data --weights`` (one weighted example per policy turn of a rollout tree, each rule's
weight from the turn's Monte-Carlo value and advantage) and ``train-sft`` on a weight column (the loss is the
weighted per-example loss, a weight-0 example changes nothing, all-ones weights train as no weights do, and a run
goes on from a train-sft adapter or full-weight output)."""

from __future__ import annotations

import hashlib
import json
import math
from argparse import Namespace
from pathlib import Path

import pytest
import torch
from test_prm_data import write_tree
from test_train_sft import QUICK, TINY_RECIPE, conversation

from playprm.cli import main

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def weighted_data(tmp_path: Path, *flags: str) -> dict[str, dict]:
    """``sft-data --weights ...`` on the tree of test_prm_data (root r; a, b answer "after crane"; a1, a2 "after
    house"; b1, b2, b3 "after mouse"), every record by turn id."""
    write_tree(tmp_path / "results" / "tiny--programmatic")
    out = tmp_path / "out"
    assert main(["sft-data", "--results-dir", str(tmp_path / "results"), "--out", str(out), *flags]) == 0
    return {r["meta"]["turn_id"]: r for r in read_lines(out / "train.jsonl") + read_lines(out / "validation.jsonl")}


# Monte-Carlo values of the tree's turns and their advantages (value - mean of the replies to the same context);
# the root has no sibling: no advantage estimate
VALUES = {"r": 3 / 5, "a": 1 / 2, "b": 2 / 3, "a1": 1.0, "a2": 0.0, "b1": 1.0, "b2": 1.0, "b3": 0.0}
ADVANTAGES = {"r": None, "a": -1 / 12, "b": 1 / 12, "a1": 0.5, "a2": -0.5, "b1": 1 / 3, "b2": 1 / 3, "b3": -2 / 3}


@pytest.mark.parametrize("flags, expected", [
    (["--weights", "advantage"], lambda v, a: math.exp((a or 0) / 0.5)),
    (["--weights", "advantage", "--beta", "0.1", "--max-weight", "3"], lambda v, a: min(math.exp((a or 0) / 0.1), 3)),
    (["--weights", "filtered"], lambda v, a: 1.0 if (a or 0) > 0 else 0.0),
    (["--weights", "value"], lambda v, a: v),
])
def test_every_valued_policy_turn_is_one_example_weighted_by_its_rule(flags, expected, tmp_path):
    records = weighted_data(tmp_path, *flags)
    assert set(records) == set(VALUES)  # losing turns (a2, b3) included; unfinished u and n give none
    for turn_id, record in records.items():
        assert record["value"] == pytest.approx(VALUES[turn_id])
        assert record["advantage"] == (None if ADVANTAGES[turn_id] is None else pytest.approx(ADVANTAGES[turn_id]))
        assert record["weight"] == pytest.approx(expected(VALUES[turn_id], ADVANTAGES[turn_id]))
        assert record["prompt"][-1]["role"] == "user" and len(record["completion"]) == 1
        assert record["completion"][0]["role"] == "assistant"
    assert records["a1"]["prompt"] == [{"role": "user", "content": "after house"}]
    assert records["a1"]["completion"][0]["content"] == "guess: horse"
    summary = json.loads((tmp_path / "out" / "dataset_summary.json").read_text())
    assert summary["weights"]["rule"] == flags[1] and summary["weights"]["without_siblings"] == 1
    assert summary["weights"]["train"]["examples"] + summary["weights"]["validation"]["examples"] == 8
    card = (tmp_path / "out" / "README.md").read_text()
    assert f"`playprm sft-data --weights {flags[1]}" in card and "weight = " in card
    if flags[1] == "advantage":
        beta = flags[flags.index("--beta") + 1] if "--beta" in flags else "0.5"
        assert summary["weights"]["beta"] == float(beta) and f"beta {beta}" in card


@pytest.mark.parametrize("flags, expected", [
    (["--weights", "value", "--dataset", "x.jsonl"], "--weights needs rollout trees"),
    (["--weights", "advantage", "--outcome", "success"], "--outcome does not apply with --weights"),
    (["--beta", "0.5"], "--beta sets --weights advantage"),
    (["--weights", "value", "--max-weight", "5"], "not --weights value"),
    (["--weights", "advantage", "--beta", "0"], "--beta must be a positive number"),
    (["--weights", "advantage", "--max-weight", "-1"], "--max-weight must be positive"),
])
def test_weight_flags_that_do_not_fit_are_one_line_errors(flags, expected, tmp_path, capsys):
    write_tree(tmp_path / "results" / "tiny--programmatic")
    source = [] if "--dataset" in flags else ["--results-dir", str(tmp_path / "results")]
    assert main(["sft-data", *source, "--out", str(tmp_path / "out"), *flags]) == 2
    error = capsys.readouterr().err.strip()
    assert expected in error and "\n" not in error
    assert not (tmp_path / "out").exists()


def test_weights_without_a_rollout_tree_are_a_usage_error(shared_sample, tmp_path, capsys):
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(tmp_path / "out"), "--weights",
                 "value"]) == 2
    assert "no turns.jsonl" in capsys.readouterr().err and not (tmp_path / "out").exists()


# sha256 (first 16 hex digits) of sft-data's files before --weights existed (main c9bc2bd), paths replaced by
# <SAMPLE> and <OUT>; a deliberate change of the SFT card re-records them
UNWEIGHTED = {
    "default": ([], {"train.jsonl": "e1e29ceb9e17af4b", "validation.jsonl": "7f9bfdf283aa2e35",
                     "README.md": "b2c818e5b61ad452", "dataset_summary.json": "ba317f12988763e0"}),
    "all": (["--outcome", "success", "failure", "aborted", "--game", "referencegame", "wordle", "--val-fraction",
             "0.3", "--seed", "1"],
            {"train.jsonl": "c6fb2680ead8a1b1", "validation.jsonl": "7dcd26ab67716279",
             "README.md": "c1f189eef77267b4", "dataset_summary.json": "51339aaff4361edd"}),
}


@pytest.mark.parametrize("name", sorted(UNWEIGHTED))
def test_sft_data_without_weights_writes_the_same_bytes_as_before(name, shared_sample, tmp_path):
    flags, expected = UNWEIGHTED[name]
    out = tmp_path / "out"
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(out), *flags]) == 0
    for file, digest in expected.items():
        text = (out / file).read_text(encoding="utf-8").replace(str(shared_sample), "<SAMPLE>")
        assert hashlib.sha256(text.replace(str(out), "<OUT>").encode()).hexdigest()[:16] == digest, file


def turn(index: int, weight: float | None) -> dict:
    """One single-turn record as sft-data --weights writes it; the prompt holds an earlier reply (context only)."""
    record = {
        "prompt": [{"role": "user", "content": f"Let's play wordle, round {index % 3}. Reply with GUESS: word."},
                   {"role": "assistant", "content": "GUESS: house"},
                   {"role": "user", "content": "Feedback: h o u s e, none right. Guess again."}],
        "completion": [{"role": "assistant", "content": ["GUESS: crane", "GUESS: slate"][index % 2]}],
        "meta": {"game": "wordle", "experiment": "easy", "game_id": index},
    }
    if weight is not None:
        record["weight"] = weight
    return record


def write_records(folder: Path, train: list[dict], validation: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, records in (("train", train), ("validation", validation)):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    return folder


def sft_config(out: Path, *overrides: str):
    from playprm.train.recipe import build_config, command_settings
    from playprm.train.sft_config import SFTTrainingConfig

    args = Namespace(config=TINY_RECIPE, model=None, data=out, overrides=["--output-dir", str(out), *QUICK,
                                                                          *overrides])
    settings, _ = command_settings(args, SFTTrainingConfig, {})
    return build_config(SFTTrainingConfig, settings)


def test_weighted_loss_is_the_weighted_sum_of_example_losses_over_the_batchs_tokens(tiny_models, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.train.base_model import resolve_start_policy
    from playprm.train.sft import IGNORE, build_sft_trainer, tokenize_split

    config = sft_config(tmp_path / "out")
    tokenizer = AutoTokenizer.from_pretrained(tiny_models["policy"])
    weights = [0.5, 2.0, 0.0]
    train = tokenize_split(tokenizer, [turn(i, w) for i, w in enumerate(weights)], None, None, weighted=True)
    start = resolve_start_policy(str(tiny_models["policy"]))
    from playprm.train.base_model import load_start_policy

    model, peft_config = load_start_policy(AutoModelForCausalLM, start.base, None, config)
    trainer = build_sft_trainer(config, model, tokenizer, train, train, peft_config=peft_config)
    trainer.model.eval()  # no LoRA dropout: the same forward twice

    def batch_of(sequences):
        return trainer._prepare_inputs(trainer.data_collator([dict(sequence) for sequence in sequences]))

    def example_nll(sequence) -> tuple[torch.Tensor, int]:
        """Summed NLL of one example's labelled tokens by a plain forward (full logits, no fused head)."""
        ids, labels = torch.tensor([sequence["input_ids"]]), torch.tensor(sequence["labels"][1:])
        log_probs = torch.log_softmax(trainer.model(input_ids=ids).logits[0, :-1].float(), dim=-1)
        mask = labels != IGNORE
        return -log_probs[mask].gather(1, labels[mask][:, None]).sum(), int(mask.sum())

    loss = trainer.compute_loss(trainer.model, batch_of(train.sequences))
    per_example = [example_nll(sequence) for sequence in train.sequences]
    tokens = sum(count for _, count in per_example)
    expected = sum(w * nll for w, (nll, _) in zip(weights, per_example, strict=True)) / tokens
    assert loss.item() == pytest.approx(expected.item(), rel=1e-4)
    unweighted = sum(nll for nll, _ in per_example) / tokens
    assert abs(loss.item() - unweighted.item()) > 1e-3  # the weights did something

    # the weight-0 example's tokens do not reach the gradient: replace its reply's tokens, same length
    trainable = [p for p in trainer.model.parameters() if p.requires_grad]
    other = dict(train.sequences[2])
    other["input_ids"] = [(token + 7) % len(tokenizer) if label != IGNORE else token
                          for token, label in zip(other["input_ids"], other["labels"], strict=True)]
    other["labels"] = [token if label != IGNORE else IGNORE
                       for token, label in zip(other["input_ids"], other["labels"], strict=True)]
    first = torch.autograd.grad(trainer.compute_loss(trainer.model, batch_of(train.sequences)), trainable)
    second = torch.autograd.grad(trainer.compute_loss(trainer.model, batch_of([*train.sequences[:2], other])),
                                 trainable)
    for a, b in zip(first, second, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def train_cli(model: Path, data: Path, out: Path, *extra: str) -> int:
    return main(["train-sft", "--config", str(TINY_RECIPE), "--model", str(model), "--data", str(data),
                 "--output-dir", str(out), *QUICK, "--eval-steps", "2", "--save-steps", "2", *extra])


def test_all_ones_weights_train_exactly_as_no_weight_column(tiny_models, tmp_path):
    from safetensors.torch import load_file

    runs = {}
    for name, weight in (("plain", None), ("ones", 1.0)):
        records = [{**conversation(i), **({} if weight is None else {"weight": weight})} for i in range(8)]
        data = write_records(tmp_path / f"data-{name}", records[:6], records[6:])
        assert train_cli(tiny_models["policy"], data, tmp_path / name, "--max-steps", "4") == 0
        runs[name] = (json.loads((tmp_path / name / "metrics.json").read_text()),
                      load_file(tmp_path / name / "adapter_model.safetensors"))
    (plain_metrics, plain), (ones_metrics, ones) = runs["plain"], runs["ones"]
    assert plain.keys() == ones.keys()
    for key in plain:
        assert torch.equal(plain[key], ones[key]), key
    for key in ("train_loss", "validation_loss", "validation_token_accuracy"):
        assert plain_metrics[key] == ones_metrics[key], key


def test_weight_zero_changes_no_parameter_of_a_full_weight_run_trained_further(tiny_models, tmp_path):
    from transformers import AutoModelForCausalLM

    first, second = tmp_path / "first", tmp_path / "second"
    data = write_records(tmp_path / "data", [turn(i, 1.0) for i in range(6)], [turn(6, 1.0)])
    assert train_cli(tiny_models["policy"], data, first, "--max-steps", "2", "--full-weights", "true",
                     "--learning-rate", "0.05") == 0
    zero = write_records(tmp_path / "zero", [turn(i, 0.0) for i in range(6)], [turn(6, 1.0)])
    # --model a train-sft full-weight output, as train-dpo takes one
    assert train_cli(first, zero, second, "--max-steps", "2", "--full-weights", "true", "--learning-rate",
                     "0.05") == 0
    # positive control: the same second run with the same examples weighted 1 instead of 0 does change parameters,
    # so the equality below is the weights' doing, not a second run that trains nothing whatever its weights
    control = tmp_path / "control"
    assert train_cli(first, data, control, "--max-steps", "2", "--full-weights", "true", "--learning-rate",
                     "0.05") == 0
    before = AutoModelForCausalLM.from_pretrained(first).state_dict()
    after = AutoModelForCausalLM.from_pretrained(second).state_dict()
    trained = AutoModelForCausalLM.from_pretrained(control).state_dict()
    start = AutoModelForCausalLM.from_pretrained(tiny_models["policy"]).state_dict()
    assert before.keys() == after.keys() == trained.keys()
    for key in before:
        assert torch.equal(before[key], after[key]), key
    changed = [key for key in before if not torch.equal(before[key], trained[key])]
    assert changed, "the weight-1 control run changed no parameter: the weight-0 check above shows nothing"
    assert any(not torch.equal(before[key], start[key]) for key in before)  # the first run did train


def test_a_train_sft_adapter_is_trained_further(card_sft_adapter, card_models, tmp_path, capsys):
    from safetensors.torch import load_file

    data = write_records(tmp_path / "data", [turn(i, [0.2, 3.0][i % 2]) for i in range(6)], [turn(6, 1.0)])
    out = tmp_path / "further"
    assert train_cli(card_sft_adapter, data, out, "--max-steps", "2", "--learning-rate", "0.05") == 0
    start, further = load_file(card_sft_adapter / "adapter_model.safetensors"), load_file(
        out / "adapter_model.safetensors")
    assert start.keys() == further.keys()
    assert any(not torch.equal(start[key], further[key]) for key in start)
    entry = json.loads((out / "model_registry.json").read_text())[0]
    assert Path(entry["huggingface_id"]).resolve() == Path(card_models["policy"]).resolve()
    assert Path(entry["model_config"]["peft_model"]).resolve() == out.resolve()
    assert f"trained further from the adapter {card_sft_adapter.resolve()}" in capsys.readouterr().out
    assert train_cli(card_sft_adapter, data, tmp_path / "full", "--full-weights", "true") == 2
    assert "drop --full-weights to train the adapter further" in capsys.readouterr().err


@pytest.mark.parametrize("record, expected", [
    ({**turn(0, None), "weight": -1}, "'weight' must be a finite number >= 0, not -1"),
    ({**turn(0, None), "weight": "high"}, "'weight' must be a finite number >= 0"),
    ({**turn(0, None), "completion": "GUESS: crane"}, "'completion' must be a list of one assistant message"),
    ({**turn(0, None), "prompt": []}, "'prompt' must be a non-empty list"),
])
def test_bad_weighted_records_are_one_line_usage_errors(record, expected, card_models, tmp_path, capsys):
    data = write_records(tmp_path / "data", [turn(1, 1.0), record], [turn(2, 1.0)])
    assert train_cli(card_models["policy"], data, tmp_path / "out") == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm train-sft: error: ") and "train.jsonl:2: " + expected in error
    assert "\n" not in error and not (tmp_path / "out").exists()


def test_a_weight_column_refuses_losses_it_cannot_scale(card_models, tmp_path, capsys):
    data = write_records(tmp_path / "data", [turn(i, 1.0) for i in range(3)], [turn(3, 1.0)])
    assert train_cli(card_models["policy"], data, tmp_path / "out", "--loss-type", "dft") == 2
    error = capsys.readouterr().err
    assert "has a 'weight' column" in error and "--loss-type dft" in error and not (tmp_path / "out").exists()


def test_a_tokenizer_limit_cuts_the_oldest_context_of_a_turn_and_never_its_reply(card_models, tmp_path):
    from transformers import AutoTokenizer

    from playprm.data.sft import TRUNCATION_MARK, chat_token_counter

    long_context = "after crane " + "and then " * 120  # the middle user message: the one that can be cut
    write_tree(tmp_path / "results" / "tiny--programmatic")
    tree = tmp_path / "results" / "tiny--programmatic" / "turns.jsonl"
    nodes = [json.loads(line) for line in tree.read_text().splitlines()]
    for node in nodes:
        node["context"] = [{"role": "user", "content": "rules"}, {"role": "assistant", "content": "guess: crane"},
                           {"role": "user", "content": long_context if node["turn_id"] == "a1" else "short"}]
    tree.write_text("".join(json.dumps(node) + "\n" for node in nodes))
    out = tmp_path / "out"
    assert main(["sft-data", "--results-dir", str(tmp_path / "results"), "--out", str(out), "--weights", "value",
                 "--tokenizer", str(card_models["policy"]), "--max-length", "120"]) == 0
    records = {r["meta"]["turn_id"]: r for r in read_lines(out / "train.jsonl") + read_lines(out / "validation.jsonl")}
    cut = records["a1"]
    assert cut["completion"] == [{"role": "assistant", "content": "guess: horse"}] and cut["weight"] == 1.0
    assert cut["prompt"][:2] == nodes[0]["context"][:2] and cut["prompt"][2]["content"].startswith(TRUNCATION_MARK)
    assert cut["meta"]["shortened_messages"] == 1
    count = chat_token_counter(AutoTokenizer.from_pretrained(card_models["policy"]))
    assert count([*cut["prompt"], *cut["completion"]]) <= 120
    assert records["a2"]["meta"]["shortened_messages"] == 0

"""train-sft's ``--loss-weight-pattern P --loss-weight W``: the trained reply tokens that overlap a match of P weigh W
in the loss, every other trained token 1. The weighted tokens are exactly the matched text, the loss is the hand
computed sum_t w_t * nll_t / labelled tokens (times each example's weight), bad settings are one line before any
model loads, and a run records both settings."""

from __future__ import annotations

import json
import re

import pytest
import torch
from test_train_sft import conversation, train_sft_cli, write_sft_data
from test_weighted_sft import sft_config

from playprm import chat
from playprm.games.builtin.expert import guesser_reply
from playprm.train.sft import (
    IGNORE,
    PATTERN_MATCHED,
    TOKEN_WEIGHTS,
    WEIGHT,
    conversation_sequences,
    tokenize_split,
)

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

GUESSER = r"same|other|ANSWER: \w+"  # the reference game guesser's judgements and answer


@pytest.fixture(scope="module")
def tokenizer(card_models):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(card_models["policy"])


def guesser_turn(index: int, weight: float | None = None) -> dict:
    """A reference-game guesser turn as sft-data writes one: the prompt holds the words "same" and "other" and an
    earlier reply (context, never trained); the completion is the expert's reply."""
    rows = [["X▢X", "▢▢X", "XX▢"], ["▢X▢", "XXX", "▢X▢"]][index % 2]
    target = rows[index % 3]
    label = ("first", "second", "third")[index % 3]
    record = {
        "prompt": [{"role": "user", "content": f"Is the same row in the other grids? Expression: {target}"},
                   {"role": "assistant", "content": "ANSWER: first"},
                   {"role": "user", "content": "Wrong. Look at the rows again." + " Really." * 3 * index}],
        "completion": [{"role": "assistant", "content": guesser_reply(rows, target, label)}],
        "meta": {"game": "referencegame", "game_id": index},
    }
    if weight is not None:
        record["weight"] = weight
    return record


def weighted_runs(ids: list[int], weights: list[float]) -> list[list[int]]:
    """The token ids of each maximal run of positions whose weight is not 1."""
    runs, current = [], []
    for token, weight in zip(ids, weights, strict=True):
        if weight != 1:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


def test_the_weighted_tokens_decode_to_exactly_the_matched_reply_text(tokenizer):
    records = [guesser_turn(1)]
    split = tokenize_split(tokenizer, records, None, None, loss_weight_pattern=GUESSER, loss_weight=4.0)
    [sequence] = split.sequences
    ids, labels, weights = sequence["input_ids"], sequence["labels"], sequence[TOKEN_WEIGHTS]
    assert set(weights) == {1.0, 4.0} and len(weights) == len(ids)
    reply = records[0]["completion"][0]["content"]
    matches = [match.group() for match in re.finditer(GUESSER, reply)]
    assert matches == ["other", "same", "other", "ANSWER: second"]
    # each run of weighted tokens is one match, save the space a BPE token carries in front of a word (" s" "ame")
    assert [tokenizer.decode(run).lstrip(" ") for run in weighted_runs(ids, weights)] == matches
    # only trained tokens: the prompt's "same" / "other" and its earlier "ANSWER: first" weigh 1, as does the
    # end-of-turn token (no reply text)
    assert all(labels[i] != IGNORE for i, weight in enumerate(weights) if weight != 1)
    assert weights[-len(chat.end_of_turn_ids(tokenizer)):] == [1.0] * len(chat.end_of_turn_ids(tokenizer))
    assert split.pattern_tokens == weights.count(4.0)
    assert split.trained_tokens == sum(label != IGNORE for label in labels)


def test_a_multi_byte_character_weighs_every_token_of_its_bytes_and_each_reply_of_a_dialogue_is_matched(tokenizer):
    messages = conversation(0)["messages"]
    messages[3] = {"role": "assistant", "content": "GUESS: X▢Xne"}  # this ▢ is two byte-level tokens
    [sequence] = conversation_sequences(tokenizer, messages, {}, pattern=re.compile("▢|house"))
    matched = sequence[PATTERN_MATCHED]
    runs = weighted_runs(sequence["input_ids"], [4.0 if hit else 1.0 for hit in matched])
    assert [tokenizer.decode(run).lstrip(" ") for run in runs] == ["house", "▢"]
    assert sum(matched) == len(runs[0]) + len(runs[1]) and len(runs[1]) == 2


def fused_trainer(card_models, config, train):
    from transformers import AutoModelForCausalLM

    from playprm.train.base_model import load_start_policy, resolve_start_policy
    from playprm.train.sft import build_sft_trainer, load_tokenizer

    start = resolve_start_policy(str(card_models["policy"]))
    model, peft_config = load_start_policy(AutoModelForCausalLM, start.base, None, config)
    trainer = build_sft_trainer(config, model, load_tokenizer(start.base), train, train, peft_config=peft_config)
    trainer.model.eval()  # no LoRA dropout: the same forward each time
    return trainer


def test_token_weights_scale_each_predicted_tokens_nll_and_multiply_the_example_weight(card_models, tokenizer,
                                                                                     tmp_path):
    # the longest sequence is cut at max_length inside its reply, so the weights must follow TRL's cut too
    records = [guesser_turn(i, weight) for i, weight in enumerate([0.5, 2.0, 1.0])]
    lengths = [len(s["input_ids"]) for s in tokenize_split(tokenizer, records, None, None).sequences]
    max_length = max(lengths) - 3
    config = sft_config(tmp_path / "out", "--loss-weight-pattern", GUESSER, "--loss-weight", "3",
                        "--max-length", str(max_length))
    train = tokenize_split(tokenizer, records, None, max_length, weighted=True,
                           loss_weight_pattern=GUESSER, loss_weight=3.0)
    assert train.too_long == 1
    trainer = fused_trainer(card_models, config, train)
    rows = [trainer.train_dataset[i] for i in range(len(trainer.train_dataset))]  # as TRL prepared them (cut)
    assert sorted(len(row["input_ids"]) for row in rows) == sorted(min(n, max_length) for n in lengths)

    def batch_of(examples):
        return trainer._prepare_inputs(trainer.data_collator([dict(example) for example in examples]))

    def token_nll(row) -> tuple[torch.Tensor, torch.Tensor]:
        """NLL of each labelled token of ``row`` by a plain forward (full logits), and each token's weight."""
        ids, labels = torch.tensor([row["input_ids"]]), torch.tensor(row["labels"][1:])
        log_probs = torch.log_softmax(trainer.model(input_ids=ids).logits[0, :-1].float(), dim=-1)
        mask = labels != IGNORE
        weights = torch.tensor(row[TOKEN_WEIGHTS][:len(row["input_ids"])][1:])  # of the token each position predicts
        return -log_probs[mask].gather(1, labels[mask][:, None])[:, 0], weights[mask]

    loss = trainer.compute_loss(trainer.model, batch_of(rows))
    per_row = [(row[WEIGHT], *token_nll(row)) for row in rows]
    tokens = sum(len(nll) for _, nll, _ in per_row)
    expected = sum(example * (weights * nll).sum() for example, nll, weights in per_row) / tokens
    assert loss.item() == pytest.approx(expected.item(), rel=1e-4)
    unweighted = sum(example * nll.sum() for example, nll, _ in per_row) / tokens
    assert abs(loss.item() - unweighted.item()) > 1e-3  # the token weights did something

    # every trained token at weight 2 (end-of-turn tokens too, which no pattern reaches: they have no text):
    # exactly twice the loss without token weights (both keep the example weights)
    doubled = [{**row, TOKEN_WEIGHTS: [2.0] * len(row[TOKEN_WEIGHTS])} for row in rows]
    plain = [{key: value for key, value in row.items() if key != TOKEN_WEIGHTS} for row in rows]
    twice, once = (trainer.compute_loss(trainer.model, batch_of(examples)) for examples in (doubled, plain))
    assert twice.item() == 2 * once.item()


@pytest.mark.parametrize("flags, expected", [
    (["--loss-weight-pattern", "ANSWER: (\\w+"], "--loss-weight-pattern 'ANSWER: (\\w+' is not a valid Python "
                                                 "regular expression (missing ), unterminated subpattern"),
    (["--loss-weight-pattern", ""], "--loss-weight-pattern is empty"),
    (["--loss-weight-pattern", "crane", "--loss-weight", "0"], "--loss-weight must be a finite number > 0, not 0.0"),
    (["--loss-weight-pattern", "crane", "--loss-weight", "-2"], "--loss-weight must be a finite number > 0, not -2.0"),
    (["--loss-weight", "4"], "--loss-weight 4.0 needs --loss-weight-pattern"),
    (["--loss-weight-pattern", "crane", "--loss-weight", "4", "--loss-type", "dft"],
     "--loss-weight-pattern scales the fused LM head's per-token NLL; --loss-type dft does not keep that loss"),
    (["--loss-weight-pattern", "crane", "--loss-weight", "4", "--label-smoothing-factor", "0.1"],
     "--label-smoothing-factor (its loss is computed from the full logits) does not keep that loss"),
    # "Feedback" is in every user message, in no reply: it would weigh nothing
    (["--loss-weight-pattern", "Feedback", "--loss-weight", "4"],
     "--loss-weight-pattern 'Feedback' matches no trained token of"),
])
def test_loss_weight_settings_that_cannot_train_are_one_line_errors_before_a_model_loads(
        flags, expected, card_models, tmp_path, capsys, no_model_loading):
    data = write_sft_data(tmp_path / "data", train=3)
    assert train_sft_cli(card_models, data, tmp_path / "out", *flags) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm train-sft: error: ") and expected in error and "\n" not in error
    assert not (tmp_path / "out").exists()


def test_a_run_with_a_pattern_trains_differently_records_both_settings_and_at_weight_1_is_a_plain_run(
        card_models, tokenizer, tmp_path, capsys):
    from safetensors.torch import load_file

    data = write_sft_data(tmp_path / "data", train=6, validation=2)
    runs = {"plain": [], "weight 1": ["--loss-weight-pattern", "crane"],
            "weight 4": ["--loss-weight-pattern", "crane", "--loss-weight", "4"]}
    printed = {}
    for name, flags in runs.items():
        capsys.readouterr()
        assert train_sft_cli(card_models, data, tmp_path / name, "--max-steps", "2", "--eval-steps", "2",
                             "--save-steps", "2", *flags) == 0
        printed[name] = capsys.readouterr().out
    records = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()]
    counted = tokenize_split(tokenizer, records, None, None, loss_weight_pattern="crane", loss_weight=4.0)
    assert counted.pattern_tokens and counted.pattern_tokens % 6 == 0  # "crane": in each dialogue's second reply
    line = (f"--loss-weight-pattern weighs {counted.pattern_tokens:,} of {counted.trained_tokens:,} trained tokens "
            f"({100 * counted.pattern_tokens / counted.trained_tokens:.1f} %) at 4.0")
    assert line in printed["weight 4"] and "--loss-weight-pattern" not in printed["plain"]

    out = tmp_path / "weight 4"
    config = json.loads((out / "training_config.json").read_text())
    assert config["loss_weight_pattern"] == "crane" and config["loss_weight"] == 4.0
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["pattern_tokens"], metrics["trained_tokens"]) == (counted.pattern_tokens, counted.trained_tokens)
    assert "| Token loss weight | 4 on reply tokens matching `crane`" in (out / "README.md").read_text()

    adapters = {name: load_file(tmp_path / name / "adapter_model.safetensors") for name in runs}
    assert all(torch.equal(adapters["plain"][key], adapters["weight 1"][key]) for key in adapters["plain"])
    assert any(not torch.equal(adapters["plain"][key], adapters["weight 4"][key]) for key in adapters["plain"])

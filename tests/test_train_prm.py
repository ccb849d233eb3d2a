"""train-prm: episode chaining that scores each turn exactly as the scorer does, AUROC / Brier arithmetic, a PRM
that learns a text-dependent label, reloading with load_prm, resuming, Bradley-Terry pairs, and bad input."""

from __future__ import annotations

import json
import random
from argparse import Namespace
from pathlib import Path

import pytest
import torch

from playprm.cli import main
from playprm.train.prm import scored_sequences, split_pairs
from playprm.train.prm_metrics import auroc, brier_score, calibration_bins

REPO_ROOT = Path(__file__).resolve().parents[1]
TINY_RECIPE = REPO_ROOT / "recipes" / "tiny" / "prm.yaml"
WORDS = ["apple", "house", "river", "stone", "cloud", "bread"]


pytestmark = pytest.mark.usefixtures("one_cpu_thread")


@pytest.fixture(scope="module")
def tokenizer(card_models):
    """The tiny policy's tokenizer, read once: make-tiny writes the same chat template and BPE for both
    architectures (Qwen3.5 adds four vision tokens no text uses), so chaining needs no second one."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(card_models["policy"])


def episode_records(episode: int, rng: random.Random, turns: int = 3) -> tuple[list[dict], list[dict]]:
    """Turn records of one player's episode whose label is 1 exactly when the reply says GOOD, and pairs."""
    records, pairs = [], []
    context = [{"role": "user", "content": f"Game {episode}. Guess a five-letter word."}]
    meta = {"game": "wordle", "experiment": "easy", "game_id": episode, "episode": f"episode_{episode}",
            "player": "Player 1"}
    for turn in range(turns):
        good = rng.random() < 0.5
        reply = f"GUESS: {rng.choice(WORDS)} {'GOOD' if good else 'BAD'}"
        records.append({"messages": list(context), "response": reply, "label": float(good),
                        "label_kind": "outcome", "n_rollouts": 0, "meta": {**meta, "turn": turn}})
        pairs.append({"messages": list(context), "chosen": f"GUESS: {rng.choice(WORDS)} GOOD",
                      "rejected": f"GUESS: {rng.choice(WORDS)} BAD", "chosen_label": 1.0, "rejected_label": 0.0,
                      "meta": {**meta, "turn": turn}})
        context = context + [{"role": "assistant", "content": reply},
                             {"role": "user", "content": "Feedback: not yet. Guess again."}]
    return records, pairs


def write_prm_data(folder: Path, train: int = 30, validation: int = 10, with_pairs: bool = False) -> Path:
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    all_pairs = []
    for split, episodes in (("train", range(train)), ("validation", range(train, train + validation))):
        lines = []
        for episode in episodes:
            records, pairs = episode_records(episode, rng)
            lines += records
            all_pairs += pairs
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    if with_pairs:
        (folder / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in all_pairs))
    return folder


def train_prm_cli(models, data: Path, out: Path, *extra: str) -> int:
    return main(["train-prm", "--config", str(TINY_RECIPE), "--model", str(models["policy"]),
                 "--data", str(data), "--output-dir", str(out), *extra])


@pytest.fixture(scope="module")
def trained_prm(tiny_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("prm")
    data = write_prm_data(root / "data")
    assert train_prm_cli(tiny_models, data, root / "out") == 0
    return root / "out"


def test_auroc_is_the_share_of_correctly_ordered_positive_negative_pairs():
    assert auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert auroc([0.5, 0.5], [0.0, 1.0]) == 0.5  # a tie counts one half
    assert auroc([0.9, 0.2, 0.3], [0.7, 0.4, 0.5]) == 1.0  # soft labels: positive from 0.5 up
    assert auroc([0.3, 0.4], [1, 1]) != auroc([0.3, 0.4], [1, 1])  # undefined with one class: NaN
    assert brier_score([1.0, 0.0, 0.5], [1.0, 1.0, 0.25]) == pytest.approx((0 + 1 + 0.0625) / 3)
    bins = calibration_bins([0.05, 0.07, 0.95, 1.0], [0, 1, 1, 1], bins=10)
    assert [b["count"] for b in bins] == [2, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    assert bins[0]["mean_label"] == 0.5 and bins[9]["mean_probability"] == pytest.approx(0.975)


def test_turns_of_one_episode_share_one_sequence_when_their_tokens_line_up(tokenizer):
    records, _ = episode_records(0, random.Random(1))
    sequences, stats = scored_sequences(tokenizer, list(reversed(records)), {}, max_length=1024)
    assert (stats.records, stats.sequences, stats.chained) == (3, 1, 2)
    [sequence] = sequences
    assert sequence["labels"] == [r["label"] for r in records]  # ordered by turn, whatever the file order
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert [sequence["input_ids"][p] for p in sequence["positions"]] == [end_of_turn] * 3
    # a template that re-renders earlier turns (enable_thinking=False) cannot share: one sequence per record
    _, rerendered = scored_sequences(tokenizer, records, {"enable_thinking": False}, max_length=1024)
    assert (rerendered.sequences, rerendered.chained) == (3, 0)
    # a chain that would pass max_length is not built; records that do not fit at all are skipped and counted
    longest = len(sequence["input_ids"])
    _, short = scored_sequences(tokenizer, records, {}, max_length=longest - 1)
    assert short.too_long == 1 and short.sequences == 1


def test_a_chained_episode_scores_every_turn_as_the_scorer_scores_it_alone(tiny_models, tokenizer):
    from playprm.prm.model import load_prm
    from playprm.prm.scorer import PRMScorer

    model, prm_tokenizer, _ = load_prm(tiny_models["prm"], device="cpu")
    records, _ = episode_records(3, random.Random(2), turns=4)
    [sequence], _ = scored_sequences(prm_tokenizer, records, {}, max_length=1024)
    with torch.no_grad():
        logits = model(torch.tensor([sequence["input_ids"]])).logits[0]
    chained = torch.sigmoid(logits[sequence["positions"]]).tolist()
    scorer = PRMScorer(model, prm_tokenizer)
    alone = [scorer.score_naive([r["messages"]], [[r["response"]]])[0][0] for r in records]
    assert chained == pytest.approx(alone, abs=1e-5)


def test_prm_learns_a_label_that_depends_on_the_reply_text(trained_prm):
    metrics = json.loads((trained_prm / "metrics.json").read_text())
    assert metrics["validation_auroc"] >= 0.9
    assert metrics["validation_brier"] < 0.2
    assert metrics["validation_count"] == 30 and metrics["train_sequences"] == 30  # one pass per episode
    assert sum(b["count"] for b in metrics["calibration"]) == 30
    assert (trained_prm / "calibration.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_saved_prm_reloads_with_load_prm_and_its_adapter_changes_the_backbone(trained_prm, tiny_models):
    from playprm.prm.model import TextBackbone, load_prm
    from playprm.prm.scorer import PRMScorer

    model, tokenizer, config = load_prm(trained_prm, device="cpu")
    assert config["base_model"] == str(tiny_models["policy"].resolve()) and config["adapter"] == "adapter"
    context = [{"role": "user", "content": "Game 99. Guess a five-letter word."}]
    good, bad = PRMScorer(model, tokenizer).score([context], [["GUESS: river GOOD", "GUESS: river BAD"]])[0]
    assert good > 0.5 > bad
    ids = torch.tensor([tokenizer("GUESS: river GOOD").input_ids])
    base = TextBackbone.from_pretrained(str(tiny_models["policy"])).eval()
    # the backbone is the text stack alone, also of the card's multimodal checkpoint: no vision tower, no LM head
    assert type(base).__name__ in ("Qwen3_5TextModel", "Qwen3Model")
    assert not any("visual" in name or "lm_head" in name for name, _ in model.backbone.named_parameters())
    with torch.no_grad():
        assert not torch.allclose(base(ids).last_hidden_state, model.backbone(ids).last_hidden_state, atol=1e-4)


def test_full_weights_train_and_save_the_whole_backbone(tiny_models, tmp_path):
    # for the small pipeline's from-scratch models, as train-sft --full-weights: no adapter, every weight trained
    from playprm.prm.model import load_prm
    from playprm.prm.scorer import PRMScorer

    data = write_prm_data(tmp_path / "data")
    assert train_prm_cli(tiny_models, data, tmp_path / "out", "--full-weights", "true") == 0
    model, tokenizer, config = load_prm(tmp_path / "out", device="cpu")
    assert config["adapter"] is None and config["backbone"] == "backbone"
    assert not any("lora" in name for name, _ in model.backbone.named_parameters())
    context = [{"role": "user", "content": "Game 99. Guess a five-letter word."}]
    good, bad = PRMScorer(model, tokenizer).score([context], [["GUESS: river GOOD", "GUESS: river BAD"]])[0]
    assert good > 0.5 > bad


def prm_run(models, data: Path, out: Path, *, resume=False, callbacks=()):
    from playprm.train.base_model import resolve_base_model
    from playprm.train.prm import train_prm
    from playprm.train.prm_config import PRMTrainingConfig
    from playprm.train.recipe import build_config, command_settings

    args = Namespace(config=TINY_RECIPE, model=None, data=data, overrides=[
        "--output-dir", str(out), "--max-steps", "8", "--eval-steps", "4", "--save-steps", "4",
        "--lora-dropout", "0.1"])
    settings, _ = command_settings(args, PRMTrainingConfig, {})
    config = build_config(PRMTrainingConfig, settings)
    return train_prm(config, resolve_base_model(str(models["policy"])), data, resume=resume,
                     callbacks=callbacks, announce=lambda text: None)


def test_resumed_prm_run_ends_with_the_weights_of_an_uninterrupted_run(card_models, tmp_path):
    # the Trainer's checkpoint and RNG restore do not read the architecture: the card's layout alone
    from safetensors.torch import load_file
    from transformers import TrainerCallback

    class InterruptAtStep6(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 6:
                raise KeyboardInterrupt

    data = write_prm_data(tmp_path / "data", train=12, validation=4)
    straight = prm_run(card_models, data, tmp_path / "straight")
    with pytest.raises(KeyboardInterrupt):
        prm_run(card_models, data, tmp_path / "interrupted", callbacks=[InterruptAtStep6()])
    resumed = prm_run(card_models, data, tmp_path / "interrupted", resume=True)
    assert resumed["global_step"] == straight["global_step"] == 8
    for name in ("head.safetensors", "adapter/adapter_model.safetensors"):
        expected, actual = load_file(tmp_path / "straight" / name), load_file(tmp_path / "interrupted" / name)
        for key in expected:
            torch.testing.assert_close(actual[key], expected[key], rtol=1e-4, atol=1e-5)


def test_bradley_terry_on_pairs_orders_chosen_above_rejected(card_models, tmp_path):
    # the pair loss reads the head's scores, not the layers behind them: the card's layout alone. No --loss: the
    # default trains with both where the data holds sibling pairs (the loss that ranked siblings best)
    data = write_prm_data(tmp_path / "data", train=8, validation=4, with_pairs=True)
    assert train_prm_cli(card_models, data, tmp_path / "out", "--max-steps", "12",
                         "--eval-steps", "6", "--save-steps", "6") == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["loss"] == "both" and metrics["train_pairs"] == 24 and metrics["validation_pairs"] == 12
    assert metrics["validation_pair_accuracy"] >= 0.9 and metrics["validation_auroc"] >= 0.9


def test_the_default_loss_is_both_where_the_data_holds_pairs_and_bce_where_it_does_not(tmp_path):
    from playprm.train.prm import resolve_loss

    plain = write_prm_data(tmp_path / "plain", train=2, validation=1)
    paired = write_prm_data(tmp_path / "paired", train=2, validation=1, with_pairs=True)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "pairs.jsonl").write_text("")
    assert (resolve_loss("auto", plain), resolve_loss("auto", paired), resolve_loss("auto", tmp_path / "empty")) == (
        "bce", "both", "bce")
    assert resolve_loss("bt", plain) == "bt"  # a loss the user names is kept (and checked against the data later)


def test_pairs_follow_the_instance_split_of_the_turn_records():
    validation = [{"meta": {"game": "wordle", "experiment": "easy", "game_id": 7}}]
    pairs = [{"meta": {"game": "wordle", "experiment": "easy", "game_id": g}} for g in (7, 8)]
    split = split_pairs(pairs, validation)
    assert split["validation"] == pairs[:1] and split["train"] == pairs[1:]


@pytest.mark.parametrize("problem, extra, expected", [
    ("label", [], "train.jsonl:2: 'label' must be a number in [0, 1], not 1.5"),
    ("context", [], "train.jsonl:2: 'messages' must end with a user message, not an assistant one"),
    ("none", ["--loss", "bt"], "--loss bt needs"),
    ("none", ["--require-cuda"], "--require-cuda is set but no CUDA device"),
    ("none", ["--loss", "mse"], "--loss must be one of auto, bce, bt, both, not 'mse'"),
    ("none", ["--bt-wieght", "2"], "did you mean --bt-weight"),
])
def test_bad_prm_input_is_a_one_line_usage_error(problem, extra, expected, card_models, tmp_path, capsys):
    # refused before any model loads, so the architecture is never read: the card's layout alone
    data = write_prm_data(tmp_path / "data", train=2, validation=1)
    train = data / "train.jsonl"
    lines = train.read_text().splitlines()
    record = json.loads(lines[1])
    if problem == "label":
        record["label"] = 1.5
    elif problem == "context":
        record["messages"].append({"role": "assistant", "content": "GUESS: early"})
    lines[1] = json.dumps(record)
    train.write_text("\n".join(lines) + "\n")
    assert train_prm_cli(card_models, data, tmp_path / "out", *extra) == 2
    captured = capsys.readouterr()
    error = captured.err.strip()
    assert expected in error and "\n" not in error.splitlines()[-1]
    assert captured.out == ""  # the error is the only line: no CPU-fallback note before it
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("recipe", sorted((REPO_ROOT / "recipes").glob("*/prm*.yaml")), ids=lambda p: p.parent.name)
def test_prm_recipes_name_only_known_settings(recipe):
    from playprm.train.prm_config import PRMTrainingConfig
    from playprm.train.recipe import load_recipe

    settings = load_recipe(recipe, PRMTrainingConfig, fixed=("model", "data"))
    assert settings["model"] and settings.get("loss", "auto") in ("auto", "bce", "bt", "both")


def test_train_prm_writes_the_switch_margin_from_sibling_replies_in_validation(card_models, tmp_path):
    # each validation context also gets the opposite reply, so validation holds two different replies per context;
    # the file's quantiles are those of the saved PRM's own scores of those records (nothing held out is read)
    from playprm.play.config import EvalConfig
    from playprm.prm import switch_margin
    from playprm.prm.model import load_prm
    from playprm.prm.scorer import PRMScorer

    data = write_prm_data(tmp_path / "data", train=12, validation=4)
    validation = [json.loads(line) for line in (data / "validation.jsonl").read_text().splitlines()]
    siblings = [{**r, "response": r["response"].replace("GOOD", "X").replace("BAD", "GOOD").replace("X", "BAD"),
                 "label": 1.0 - r["label"]} for r in validation]
    (data / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in validation + siblings))
    prm_run(card_models, data, tmp_path / "out")
    written = json.loads((tmp_path / "out" / switch_margin.SWITCH_MARGIN_FILE).read_text())
    assert written["contexts"] == len(validation) and written["differences"] == len(validation)  # one not-better each
    model, tokenizer, _ = load_prm(tmp_path / "out", device="cpu")
    scorer = PRMScorer(model, tokenizer)
    records = validation + siblings
    scores = [scorer.score([r["messages"]], [[r["response"]]])[0][0] for r in records]
    differences, _ = switch_margin.null_differences(records, scores)
    assert written["quantiles"][-1] == pytest.approx(max(differences), abs=1e-4)
    assert written["quantiles"][0] == pytest.approx(min(differences), abs=1e-4)
    # the sibling metrics of metrics.json and the card are those of the saved PRM's scores of the same records
    from playprm.train.prm_metrics import sibling_metrics

    metrics, expected = json.loads((tmp_path / "out" / "metrics.json").read_text()), sibling_metrics(records, scores)
    assert metrics["validation_sibling_pairs"] == expected["sibling_pairs"] == len(validation)
    for key in ("sibling_accuracy", "sibling_delta"):
        assert metrics[f"validation_{key}"] == pytest.approx(expected[key], abs=1e-4)
    assert set(metrics["validation_sibling_games"]) == {"wordle"}
    assert "| wordle | 12 |" in (tmp_path / "out" / "README.md").read_text()  # the card's sibling table
    cfg = EvalConfig(policy_model="p", mode="best-of-n", prm_path=tmp_path / "out", games=["wordle"],
                     selection="anchored", switch_margin="auto").validate()
    # 4 validation contexts are fewer than switch_margin.MIN_CONTEXTS: auto plays greedy and says why
    assert cfg.margin.value == switch_margin.GREEDY_MARGIN and cfg.margin.rule.startswith("auto: greedy")


def test_the_calibration_plot_holds_a_long_title(tmp_path):
    """calibration.png's title names the PRM run and can be long: the saved image grows to hold it (edges blank)."""
    import matplotlib.image

    from playprm.train.prm_metrics import plot_calibration

    bins = calibration_bins([0.05, 0.07, 0.95, 1.0], [0, 1, 1, 1], bins=10)
    path = tmp_path / "calibration.png"
    plot_calibration(bins, path, "PRM calibration on the validation split of runs/a-rather-long-run-name/prm-data")
    image = matplotlib.image.imread(path)[..., :3]
    for edge in (image[:, 0], image[:, -1], image[0], image[-1]):
        assert edge.min() > 0.95  # white: the title does not run off the image

"""``playprm sft-data``: positive-only chat samples per LLM player, split by instance, fitted to length."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from playprm.cli import main
from playprm.data.sft import TRUNCATION_MARK, chat_token_counter, fit_to_length

LLAMA = "Llama-3.3-70B-Instruct-t0.0--Llama-3.3-70B-Instruct-t0.0"


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def samples_of(out: Path) -> list[dict]:
    return read_lines(out / "train.jsonl") + read_lines(out / "validation.jsonl")


def expected_sample_count(results: Path) -> int:
    """(successful episode, LLM player that replied) pairs, read straight from the files."""
    count = 0
    for scores_file in results.rglob("scores.json"):
        if json.loads(scores_file.read_text())["episode scores"].get("Success") != 1:
            continue
        interactions = json.loads((scores_file.parent / "interactions.json").read_text())
        for name, player in interactions["players"].items():
            described = json.dumps(player)
            if name == "GM" or "programmatic" in described.lower():
                continue
            spoken = name.replace("_", " ")
            count += any(e["from"] == spoken and e["action"]["type"] == "get message"
                         for round_events in interactions["turns"] for e in round_events)
    return count


def instances(records: list[dict]) -> set:
    return {(r["meta"]["game"], r["meta"]["experiment"], str(r["meta"]["game_id"])) for r in records}


def test_one_sample_per_successful_episode_and_llm_player(shared_sample, tmp_path):
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(tmp_path)]) == 0
    samples = samples_of(tmp_path)
    assert len(samples) == expected_sample_count(shared_sample) == 13
    for sample in samples:
        roles = [m["role"] for m in sample["messages"]]
        assert roles == ["user", "assistant"] * (len(roles) // 2)
        assert sample["meta"]["outcome"] == "success"
        assert set(sample["meta"]) >= {"game", "experiment", "game_id", "episode", "player", "game_role",
                                       "model", "outcome"}
    referencegame = [s["meta"]["player"] for s in samples if s["meta"]["game"] == "referencegame"]
    assert sorted(set(referencegame)) == ["Player 1", "Player 2"]  # both sides of a two-player game


def test_no_instance_is_in_both_splits_and_the_split_repeats_with_the_seed(shared_sample, tmp_path):
    for run in ("first", "second"):
        args = ["sft-data", "--results-dir", str(shared_sample), "--out", str(tmp_path / run),
                "--val-fraction", "0.4", "--seed", "3"]
        assert main(args) == 0
    train, validation = read_lines(tmp_path / "first/train.jsonl"), read_lines(tmp_path / "first/validation.jsonl")
    assert train and validation
    assert not instances(train) & instances(validation)
    for name in ("train.jsonl", "validation.jsonl"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()


def characters(messages: list[dict]) -> int:
    return sum(len(m["content"]) for m in messages)


def test_fitting_cuts_oldest_context_and_keeps_first_user_message_and_all_replies():
    messages = [{"role": "user", "content": "I" * 40}, {"role": "assistant", "content": "a" * 10},
                {"role": "user", "content": "old feedback " * 3}, {"role": "assistant", "content": "b" * 10},
                {"role": "user", "content": "0123456789" * 3}, {"role": "assistant", "content": "c" * 10}]
    fitted, shortened = fit_to_length(messages, 90, characters)
    assert characters(fitted) <= 90 and shortened == 2
    assert fitted[0] == messages[0]
    assert [m for m in fitted if m["role"] == "assistant"] == [m for m in messages if m["role"] == "assistant"]
    assert [m["role"] for m in fitted] == [m["role"] for m in messages]
    assert fitted[2]["content"] == TRUNCATION_MARK
    kept = fitted[4]["content"].removeprefix(TRUNCATION_MARK)
    assert fitted[4]["content"].startswith(TRUNCATION_MARK) and messages[4]["content"].endswith(kept)
    assert characters(fitted) + 1 > 90  # one more character of context would not have fitted


def test_fitting_leaves_short_samples_alone_and_gives_up_when_replies_alone_are_too_long():
    messages = [{"role": "user", "content": "rules"}, {"role": "assistant", "content": "x" * 50},
                {"role": "user", "content": "more"}, {"role": "assistant", "content": "y" * 50}]
    assert fit_to_length(messages, 1000, characters) == (messages, 0)
    assert fit_to_length(messages, 80, characters) is None


def test_tokenizer_limit_shortens_or_drops_and_the_card_counts_both(shared_sample, card_models, tmp_path):
    full, fitted = tmp_path / "full", tmp_path / "fitted"
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(full)]) == 0
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(fitted),
                 "--tokenizer", str(card_models["policy"]), "--max-length", "600"]) == 0
    from transformers import AutoTokenizer

    count_tokens = chat_token_counter(AutoTokenizer.from_pretrained(card_models["policy"]))
    originals = {(s["meta"]["model_folder"], s["meta"]["game"], s["meta"]["experiment"], s["meta"]["episode"],
                  s["meta"]["player"]): s["messages"] for s in samples_of(full)}
    kept = samples_of(fitted)
    over = [messages for messages in originals.values() if count_tokens(messages) > 600]
    shortened = [s for s in kept if s["meta"]["shortened_messages"]]
    assert over and shortened
    for sample in kept:
        meta = sample["meta"]
        original = originals[meta["model_folder"], meta["game"], meta["experiment"], meta["episode"],
                             meta["player"]]
        assert count_tokens(sample["messages"]) <= 600
        assert sample["messages"][0] == original[0]
        assert [m for m in sample["messages"] if m["role"] == "assistant"] == \
            [m for m in original if m["role"] == "assistant"]
    card = (fitted / "README.md").read_text()
    dropped = len(originals) - len(kept)
    assert re.search(rf"fitted by shortening the oldest context \| {len(shortened)} \|", card)
    assert re.search(rf"all assistant turns: dropped \| {dropped} \|", card)
    assert f"within max-length | {len(kept) - len(shortened)} |" in card


def test_results_without_a_success_give_empty_valid_files_and_say_so(shared_sample, tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(shared_sample / LLAMA / "privateshared", results / LLAMA / "privateshared")
    shutil.copytree(shared_sample / LLAMA / "wordle_withclue", results / LLAMA / "wordle_withclue")
    out = tmp_path / "out"
    assert main(["sft-data", "--results-dir", str(results), "--out", str(out)]) == 0
    assert "no successful episodes" in capsys.readouterr().out
    assert (out / "train.jsonl").read_text() == "" and (out / "validation.jsonl").read_text() == ""
    card = (out / "README.md").read_text()
    assert "Filtered out by outcome: 1 lose, 1 aborted" in card


def test_corrupt_episode_is_skipped_named_and_counted(shared_sample, tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(shared_sample / LLAMA / "referencegame", results / LLAMA / "referencegame")
    expected = expected_sample_count(results)
    corrupt = results / LLAMA / "referencegame" / "0_letter_grids" / "episode_0"  # a success, two players
    (corrupt / "interactions.json").write_text('{"turns": [')
    out = tmp_path / "out"
    assert main(["sft-data", "--results-dir", str(results), "--out", str(out)]) == 0
    assert f"skipped {corrupt}: interactions.json cannot be read" in capsys.readouterr().err
    assert len(samples_of(out)) == expected - 2
    assert "Skipped as unreadable: 1 episodes." in (out / "README.md").read_text()


def test_bad_inputs_are_rejected_before_anything_is_written(shared_sample, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sft-data", "--results-dir", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(out), "--val-fraction", "1"]) == 2
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(out), "--max-length", "0"]) == 2
    assert main(["sft-data", "--results-dir", str(tmp_path), "--out", str(out)]) == 2  # no episodes at all
    errors = capsys.readouterr().err
    assert "is not a directory" in errors and "--val-fraction" in errors and "no episodes found" in errors
    assert not out.exists()

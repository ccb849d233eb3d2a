"""``playprm sft-data --dataset``: Playpen's records in (JSONL, Parquet, save_to_disk, hub id), the same samples as
the results folders of the same episodes, Playpen's filters, unusable records counted; our output read by Playpen's
own filter expression."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from playprm.cli import main

PLAYPEN_KEYS = ("game", "experiment", "game_id", "player_name", "game_role", "model", "outcome")


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def samples_of(out: Path) -> list[dict]:
    return read_lines(out / "train.jsonl") + read_lines(out / "validation.jsonl")


def playpen_records(results: Path) -> list[dict]:
    """Playpen's records of every episode under ``results``, read straight from the files the way Playpen's
    ``examples/trl/data_utils.py`` writes its dataset: one per (episode, player that got a message), outcome from
    scores.json in Playpen's words, model and role from the player's description, game_id the episode folder."""
    records = []
    for interactions_file in sorted(results.rglob("interactions.json")):
        folder = interactions_file.parent
        interactions = json.loads(interactions_file.read_text(encoding="utf-8"))
        scores = json.loads((folder / "scores.json").read_text())["episode scores"]
        outcome = next((word for key, word in (("Aborted", "aborted"), ("Success", "success"), ("Lose", "failure"))
                        if scores.get(key) == 1), None)
        for key, described in interactions["players"].items():
            if key == "GM" or "programmatic" in described.lower():
                continue
            name = key.replace("_", " ")  # old records key "Player_1" but their events say "Player 1"
            role, model = None, described
            if match := re.fullmatch(r"(.*?)\s*\(([^()]*)\)", described):
                role, model = match[1], match[2]
            elif ": " in described:
                role, model = described.split(": ", 1)
            messages = [{"role": "user" if event["to"] == name else "assistant", "content": event["action"]["content"]}
                        for events in interactions["turns"] for event in events
                        if (event["to"] == name and event["action"]["type"] == "send message")
                        or (event["from"] == name and event["action"]["type"] == "get message")]
            if messages:
                records.append({"messages": messages, "meta": {
                    "game": folder.parts[-3], "experiment": folder.parts[-2], "game_id": folder.name,
                    "player_name": name, "game_role": role, "model": model, "outcome": outcome}})
    return records


def write_jsonl(path: Path, records: list[dict], extra_lines: tuple[str, ...] = ()) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records) + "".join(extra_lines))
    return path


@pytest.fixture(scope="module")
def playpen_file(shared_sample, tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("playpen") / "interactions.jsonl", playpen_records(shared_sample))


def comparable(sample: dict) -> tuple:
    return (*(sample["meta"][key] for key in PLAYPEN_KEYS), json.dumps(sample["messages"]))


def test_playpen_records_give_the_samples_the_results_folders_give(shared_sample, playpen_file, tmp_path):
    from_results, from_records = tmp_path / "results", tmp_path / "records"
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(from_results),
                 "--val-fraction", "0.3"]) == 0
    assert main(["sft-data", "--dataset", str(playpen_file), "--out", str(from_records), "--val-fraction", "0.3"]) == 0
    for split in ("train.jsonl", "validation.jsonl"):
        expected, found = read_lines(from_results / split), read_lines(from_records / split)
        assert expected and sorted(map(comparable, found)) == sorted(map(comparable, expected))
    assert len(samples_of(from_records)) == 13  # test_sft_data's count of the sample's winning LLM sides
    card = (from_records / "README.md").read_text()
    records = read_lines(playpen_file)
    assert f"| **total** | 13 | {sum(r['meta']['outcome'] == 'failure' for r in records)} |" in card  # per player
    summary = json.loads((from_records / "dataset_summary.json").read_text())
    assert summary["unit"] == "records" and summary["split"]["train"] == len(read_lines(from_records / "train.jsonl"))
    assert sum(counts.get("success", 0) for counts in summary["seen"].values()) == 13


def test_our_sft_files_pass_playpens_own_filter_expression(shared_sample, tmp_path):
    from datasets import load_dataset

    out = tmp_path / "out"
    assert main(["sft-data", "--results-dir", str(shared_sample), "--out", str(out)]) == 0
    dataset = load_dataset(str(out))  # as Playpen loads a dataset: the card's configs name the split files
    for split in ("train", "validation"):
        assert set(PLAYPEN_KEYS) <= set(dataset[split].features["meta"])
    kept = dataset["train"].filter(lambda episode: episode["meta"]["outcome"] == "success"
                                   and episode["meta"]["model"] == "Meta-Llama-3.1-8B-Instruct")
    expected = [s for s in read_lines(out / "train.jsonl") if s["meta"]["model"] == "Meta-Llama-3.1-8B-Instruct"]
    assert len(kept) == len(expected) > 0
    assert {s["meta"]["game"] for s in expected} == {"referencegame"}


def test_parquet_and_save_to_disk_sources_give_the_jsonl_samples(playpen_file, tmp_path):
    from datasets import Dataset, DatasetDict

    dataset = Dataset.from_list(read_lines(playpen_file))
    dataset.to_parquet(str(tmp_path / "interactions.parquet"))
    DatasetDict({"train": dataset}).save_to_disk(str(tmp_path / "saved"))
    outputs = {}
    for name, source in (("jsonl", playpen_file), ("parquet", tmp_path / "interactions.parquet"),
                         ("disk", tmp_path / "saved")):
        assert main(["sft-data", "--dataset", str(source), "--out", str(tmp_path / name)]) == 0
        outputs[name] = [read_lines(tmp_path / name / split) for split in ("train.jsonl", "validation.jsonl")]
    assert outputs["parquet"] == outputs["jsonl"] == outputs["disk"]
    assert main(["sft-data", "--dataset", str(tmp_path / "saved"), "--split", "test", "--out", str(tmp_path / "x")]) == 2


def test_unusable_records_are_counted_and_reported_and_never_stop_the_run(playpen_file, tmp_path, capsys):
    records = read_lines(playpen_file)
    good = records[0]
    no_role = {"messages": good["messages"], "meta": {k: v for k, v in good["meta"].items() if k != "game_role"}}
    won = {"messages": good["messages"], "meta": {**good["meta"], "outcome": "won"}}
    unscored = {"messages": good["messages"], "meta": {**good["meta"], "outcome": None}}
    empty = {"messages": [], "meta": good["meta"]}
    source = write_jsonl(tmp_path / "mixed.jsonl", records + [no_role, won, unscored, empty, empty],
                         ('{"messages": [\n', "[1, 2]\n"))
    clean, mixed = tmp_path / "clean", tmp_path / "mixed"
    assert main(["sft-data", "--dataset", str(playpen_file), "--out", str(clean)]) == 0
    capsys.readouterr()
    assert main(["sft-data", "--dataset", str(source), "--out", str(mixed)]) == 0
    printed = capsys.readouterr()
    assert samples_of(mixed) == samples_of(clean)
    assert f"{len(records) + 7} records read ({len(records)} usable)" in printed.out
    for line in ("left out 2 records: empty message list", "left out 1 records: meta field 'game_role' missing",
                 "left out 1 records: unknown outcome 'won'", "left out 1 records: unknown outcome None",
                 "left out 1 records: not valid JSON", "left out 1 records: not a JSON object"):
        assert line in printed.err
    card = (mixed / "README.md").read_text()
    assert "Left out as unusable: 7 records." in card
    assert f"- empty message list (2 records), first at `{source}:{len(records) + 4}`" in card


def test_outcome_model_game_and_role_filters_narrow_the_samples_as_playpen_does(playpen_file, tmp_path):
    records = read_lines(playpen_file)
    out = tmp_path / "failures"
    assert main(["sft-data", "--dataset", str(playpen_file), "--out", str(out), "--outcome", "failure",
                 "--model", "Llama-3.3-70B-Instruct", "--game", "wordle", "imagegame",
                 "--role", "Word Guesser"]) == 0
    samples = samples_of(out)
    games = [r for r in records if r["meta"]["outcome"] == "failure" and r["meta"]["model"] == "Llama-3.3-70B-Instruct"
             and r["meta"]["game"] in ("wordle", "imagegame")]
    expected = [r for r in games if r["meta"]["game_role"] == "Word Guesser"]
    assert len(samples) == len(expected) > 0
    assert {(s["meta"]["game"], s["meta"]["outcome"], s["meta"]["game_role"]) for s in samples} == \
        {("wordle", "failure", "Word Guesser")}
    card = (out / "README.md").read_text()
    assert f"| game in wordle, imagegame | {len(games)} |" in card and len(games) > len(expected)
    assert f"| game_role in Word Guesser | {len(expected)} |" in card


def test_an_unreachable_hub_id_and_a_missing_file_are_one_line_errors(tmp_path, monkeypatch, capsys):
    import datasets
    import huggingface_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    out = tmp_path / "out"
    assert main(["sft-data", "--dataset", "colab-potsdam/playpen-data", "--out", str(out)]) == 2
    assert main(["sft-data", "--dataset", str(tmp_path / "missing.jsonl"), "--out", str(out)]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2
    assert "cannot load config 'interactions' split 'train' from the Hugging Face Hub" in errors[0]
    assert "local JSONL or Parquet file" in errors[0]
    assert "missing.jsonl does not exist" in errors[1]
    assert not out.exists()

"""playprm eval end to end on the built-in games with the tiny model, and what clemcore's tools make of it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from playprm.cli import main
from playprm.play.config import EvalConfig
from playprm.play.wiring import run_eval

FAST = ["--limit", "1", "--max-tokens", "8"]


def episodes(run_dir: Path) -> list[Path]:
    return sorted(p.parent for p in run_dir.rglob("instance.json"))


@pytest.fixture(scope="module")
def greedy_run(tiny_models, tmp_path_factory):
    results = tmp_path_factory.mktemp("greedy")
    code = main(["eval", "--policy-model", str(tiny_models["policy"]), "--game-all", *FAST,
                 "--results-dir", str(results)])
    assert code == 0
    return results


def test_eval_writes_clemcore_layout_for_every_game(greedy_run):
    (run_dir,) = [p for p in greedy_run.iterdir() if p.is_dir()]
    assert run_dir.name == "policy-t0.0--policy-t0.0"
    games = {p.parts[-3] for p in episodes(run_dir)}
    assert games == {"wordle", "taboo", "referencegame", "arithmetic", "mastermind", "guessthenumber"}
    for episode in episodes(run_dir):
        assert episode.name.startswith("instance_")
        for name in ("instance.json", "interactions.json", "scores.json", "completed.json", "cost.json"):
            assert (episode / name).is_file(), f"{episode} lacks {name}"
        interactions = json.loads((episode / "interactions.json").read_text())
        assert interactions["meta"]["game_name"] == episode.parts[-3]
        assert (episode.parent / "experiment.json").is_file()
    meta = json.loads((run_dir / "playprm_run.json").read_text())
    assert meta["mode"] == "greedy" and meta["env_lookahead"] is False
    # the torch threads the run chose: one for a tiny policy (choose_cpu_threads), unless the user set them
    assert meta["cpu_threads"] == int(os.environ.get("OMP_NUM_THREADS") or 1)
    assert (run_dir / "run.json").is_file()


def test_clemcore_scoring_and_evaluation_accept_the_results(greedy_run, tmp_path):
    import shutil

    from clemcore import clemeval
    from clemcore.clemgame import GameBenchmark

    from playprm.games.registry import discover_games

    copy = tmp_path / "r"
    shutil.copytree(greedy_run, copy)
    for entry in discover_games().values():
        files = sorted(copy.rglob(f"*/{entry.name}/*/*/interactions.json"))
        with GameBenchmark.load_from_spec(entry.spec) as benchmark:
            benchmark.compute_scores(files)  # clem score: rewrites scores.json
    table = clemeval.perform_evaluation(str(copy), return_dataframe=True)
    assert "-, clemscore" in table.columns
    assert set(c.split(",")[0] for c in table.columns) >= {"wordle", "taboo", "referencegame"}

    from playprm.report.clemscore import compute_table

    ours = compute_table([copy], n_resamples=50)
    for column in table.columns:  # playprm report gives clemcore's numbers on every shared column
        for model in table.index:
            a, b = table.loc[model, column], ours.loc[model, column]
            assert (a != a and b != b) or abs(float(a) - float(b)) <= 0.01, (model, column, a, b)


def test_rerun_skips_finished_episodes(greedy_run, tiny_models, capsys):
    run_dir = next(p for p in greedy_run.iterdir() if p.is_dir())  # beside clembench.log
    before = {p: (p / "interactions.json").stat().st_mtime_ns for p in episodes(run_dir)}
    code = main(["eval", "--policy-model", str(tiny_models["policy"]), "--game-all", *FAST,
                 "--results-dir", str(greedy_run)])
    assert code == 0
    assert f"{len(before)} episodes planned, {len(before)} already done" in capsys.readouterr().out
    assert {p: (p / "interactions.json").stat().st_mtime_ns for p in before} == before  # nothing rewritten


def test_best_of_n_keeps_every_candidate_and_plays_the_argmax(tiny_models, tmp_path):
    cfg = EvalConfig(policy_model=str(tiny_models["policy"]), mode="best-of-n", prm_path=tiny_models["prm"],
                     games=["wordle", "referencegame"], limit=1, max_tokens=8, n_candidates=4,
                     results_dir=tmp_path)
    run_dir, summary = run_eval(cfg, progress=False)
    assert run_dir.name == "policy-t0.7-bon4--policy-t0.7-bon4"
    turns = 0
    for episode in episodes(run_dir):
        interactions = json.loads((episode / "interactions.json").read_text())
        played = [e["action"]["content"] for rnd in interactions["turns"] for e in rnd
                  if e["action"]["type"] == "get message"]
        rows = [json.loads(line) for line in (episode / "candidates.jsonl").read_text().splitlines()]
        assert len(rows) == len(played)
        for row, text in zip(rows, played):
            scores = [c["score"] for c in row["candidates"]]
            assert len(scores) == 4 and all(0 <= s <= 1 for s in scores)
            assert row["chosen"] == max(range(4), key=lambda i: (scores[i], -i))
            assert row["candidates"][row["chosen"]]["text"] == text  # the game saw the argmax
            turns += 1
        cost = json.loads((episode / "cost.json").read_text())
        assert cost["generated_tokens"] >= sum(c["tokens"] for r in rows for c in r["candidates"]) > 0
        assert cost["prm_tokens"] > 0
    assert turns > 0
    assert json.loads((run_dir / "playprm_run.json").read_text())["env_lookahead"] is False


@pytest.mark.parametrize("mode, lookahead", [("beam-search", True), ("dvts", True)])
def test_lookahead_modes_are_labelled(tiny_models, tmp_path, mode, lookahead):
    cfg = EvalConfig(policy_model=str(tiny_models["policy"]), mode=mode, prm_path=tiny_models["prm"],
                     games=["referencegame"], limit=1, max_tokens=6, n_candidates=2, beam_width=1,
                     num_beam_iterations=2, results_dir=tmp_path)
    run_dir, summary = run_eval(cfg, progress=False)
    meta = json.loads((run_dir / "playprm_run.json").read_text())
    assert meta["env_lookahead"] is lookahead and meta["mode"] == mode
    assert sum(summary.played.values()) == 2
    for episode in episodes(run_dir):
        assert (episode / "scores.json").is_file()


def test_transcribe_shows_the_alternatives_and_their_scores(tiny_models, tmp_path):
    cfg = EvalConfig(policy_model=str(tiny_models["policy"]), mode="best-of-n", prm_path=tiny_models["prm"],
                     games=["wordle"], limit=1, max_tokens=6, n_candidates=3, results_dir=tmp_path)
    run_dir, _ = run_eval(cfg, progress=False)
    pages = tmp_path.parent / f"{tmp_path.name}-pages"
    assert main(["transcribe", "--results-dir", str(tmp_path), "--out", str(pages)]) == 0
    for episode in episodes(run_dir):
        page = (pages / episode.relative_to(tmp_path) / "search.html").read_text()
        row = json.loads((episode / "candidates.jsonl").read_text().splitlines()[0])
        assert page.count(" score ") >= 3 and "&lt;- played" in page
        assert f"{row['candidates'][0]['score']:.3f}" in page
        assert (pages / episode.relative_to(tmp_path) / "transcript.html").is_file()
        assert not (episode / "transcript.html").exists()  # nothing written into the results it read
    assert (pages / "index.html").is_file()

"""The smol preset's validation split and the games it never trained on (issue 61): its stages and RESULTS.md's
sections, checked on the preset's argv and on hand-made results folders (no model is trained or played)."""

from __future__ import annotations

import json
from pathlib import Path

from playprm.pipeline import smol

OOD_GAMES = smol.SmolPreset().ood_games  # (game, instances per experiment)


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def write_run(folder: Path, episodes: dict[str, list[float | None]]) -> Path:
    """A results folder as eval writes it: per game, one episode per entry (None: aborted, else its Main
    Score)."""
    model = "policy-t0.0--policy-t0.0"
    for game, scores in episodes.items():
        for k, score in enumerate(scores):
            episode = folder / model / game / f"{k % 2}_experiment" / f"episode_{k}"
            episode.mkdir(parents=True)
            (episode / "scores.json").write_text(json.dumps({"turn scores": {}, "episode scores": {
                "Aborted": int(score is None), "Success": int(bool(score)), "Lose": int(score == 0),
                "Request Count": 1, "Main Score": float("nan") if score is None else score}}))
    (folder / model / "playprm_run.json").write_text(json.dumps({"mode": "greedy", "env_lookahead": False,
                                                                 "n_candidates": 1, "seed": 0}))
    return folder


def test_the_smol_preset_draws_a_validation_split_apart_from_train_and_held_out(tmp_path):
    work = tmp_path / "w"
    steps = dict(smol.SmolPreset(base=str(tmp_path / "base"), seed=2).steps(work))
    split = steps["instances validation"]
    assert flag(split, "--out") == str(work / smol.VALIDATION) and flag(split, "--seed") == "3002"
    assert split[split.index("--exclude") + 1:split.index("--exclude") + 3] == [str(work / smol.TRAIN),
                                                                                 str(work / smol.HELD_OUT)]
    # SFT greedy plays it as it plays the held-out games, into a folder of its own (not results/, the grid)
    play = steps["validation sft-greedy"]
    assert flag(play, "--policy-model") == flag(steps["eval sft-greedy"], "--policy-model")
    assert flag(play, "--games-dir") == str(work / smol.VALIDATION) and "--mode" not in play
    assert flag(play, "--results-dir") == str(work / "validation" / "sft-greedy")


def test_the_smol_grpo_row_is_chosen_on_validation_and_existing_stages_keep_their_argv(tmp_path):
    """New stages only add: every stage of the preset before the validation split keeps its name and argv, so that
    a work directory from before it resumes."""
    work = tmp_path / "w"
    steps = smol.SmolPreset(base=str(tmp_path / "base"), grpo=True).steps(work)
    new = {"instances validation", "validation sft-greedy", "validation sft-grpo-greedy", "ood base-greedy",
           "ood sft-greedy", "ood sft-grpo-greedy", *(f"instances ood {game}" for game, _ in OOD_GAMES)}
    before = ["instances train", "instances held-out", "collect teacher", "sft-data", "eval base-greedy", "train-sft",
              "eval sft-greedy", "collect policy", "prm-data", "train-prm", "eval sft-prm-bon4", "eval sft-oracle-bon4",
              "train-grpo", "eval sft-grpo-greedy", "summarize"]  # the preset's stages before issue 61
    assert [stage for stage, _ in steps if stage not in new] == before
    assert dict(steps)["instances held-out"] == ["instances", "--out", str(work / smol.HELD_OUT), "--seed", "2000",
                                                 "--per-experiment", "48", "--game", "referencegame", "--exclude",
                                                 str(work / smol.TRAIN)]
    without = smol.SmolPreset(base=str(tmp_path / "base"), grpo=True, ood=False).steps(work)
    assert [s for s in steps if s[0] not in new] == [s for s in without if s[0] not in new]
    assert new <= {stage for stage, _ in steps}
    play = dict(steps)["validation sft-grpo-greedy"]
    assert flag(play, "--policy-model") == str(work / "grpo" / "policy")
    assert flag(play, "--games-dir") == str(work / smol.VALIDATION)


def test_the_smol_preset_plays_base_sft_and_grpo_greedy_on_games_it_never_trained_on(tmp_path):
    work = tmp_path / "w"
    steps = dict(smol.SmolPreset(base=str(tmp_path / "base"), grpo=True).steps(work))
    games = {game for game, _ in OOD_GAMES}
    assert smol.SmolPreset().game not in games and {"wordle", "taboo", "mastermind"} == games
    for game, n in OOD_GAMES:
        split = steps[f"instances ood {game}"]
        assert (flag(split, "--out"), flag(split, "--game"), flag(split, "--per-experiment")) == (
            str(work / smol.OOD), game, str(n))
    for row, policy in (("base-greedy", str(tmp_path / "base")), ("sft-greedy", str(work / "sft-policy")),
                        ("sft-grpo-greedy", str(work / "grpo" / "policy"))):
        play = steps[f"ood {row}"]
        assert flag(play, "--policy-model") == policy and "--mode" not in play
        assert flag(play, "--games-dir") == str(work / smol.OOD)
        assert [play[i + 1] for i, a in enumerate(play) if a == "--game"] == [g for g, _ in OOD_GAMES]
        assert flag(play, "--results-dir") == str(work / "ood" / row)
    # without --grpo, no GRPO policy to play
    assert "ood sft-grpo-greedy" not in dict(smol.SmolPreset(base=str(tmp_path / "base")).steps(work))


def test_results_md_pairs_each_policy_on_the_games_it_never_trained_on(tmp_path):
    from playprm.pipeline.smol_report import ood_section

    work = tmp_path / "w"
    # taboo: the base plays half its games and wins one; SFT plays none; GRPO plays all and wins two of four.
    # mastermind: every policy plays and loses: it measures nothing at this size
    write_run(work / "ood" / "base-greedy", {"taboo": [100.0, 0.0, None, None], "mastermind": [0.0, 0.0]})
    write_run(work / "ood" / "sft-greedy", {"taboo": [None, None, None, None], "mastermind": [0.0, 0.0]})
    write_run(work / "ood" / "sft-grpo-greedy", {"taboo": [100.0, 0.0, 100.0, 0.0], "mastermind": [0.0, 0.0]})
    text, records = ood_section(work, seed=0, n_resamples=200)
    rows = {(r["game"], r["policy"]): r for r in records}
    assert rows[("taboo", "base-greedy")]["clemscore"] == 25.0 and rows[("taboo", "base-greedy")]["percent_played"] == 50
    assert rows[("taboo", "sft-greedy")]["clemscore"] is None  # played nothing to the end: no clemscore, never 0
    grpo = rows[("taboo", "sft-grpo-greedy")]["against"]
    assert grpo["base-greedy"]["clemscore"]["difference"] == 25.0
    assert grpo["base-greedy"]["played"]["difference"] == 50.0
    assert grpo["sft-greedy"]["clemscore"]["difference"] is None and grpo["sft-greedy"]["played"]["difference"] == 100
    assert all(r["measures_nothing"] == (r["game"] == "mastermind") for r in records)
    assert "## Games it never trained on" in text
    assert "| mastermind (measures nothing at this size) | base-greedy |" in text
    assert "clemscore − base-greedy [paired 95% CI]" in text and "% played − sft-greedy [paired 95% CI]" in text
    line = next(line for line in text.splitlines() if line.startswith("| taboo | sft-grpo-greedy |"))
    assert "+25.00 [" in line and "+50.00 [" in line and "no clemscore" in line


def test_results_md_names_the_split_that_chose_each_lever_and_shows_the_validation_rows(tmp_path):
    from playprm.pipeline.smol_report import levers_section, validation_section

    text, levers = levers_section(smol.SmolPreset(base="b"))
    chosen = {r["lever"]: r for r in levers}
    assert chosen["SFT steps"]["value"].startswith("192 steps") and chosen["SFT steps"]["chosen_on"] == "held-out"
    assert chosen["GRPO temperature"]["value"] == "1.0"
    assert chosen["GRPO dropout and update"]["chosen_on"] == "none"
    assert "## Levers and the split that chose them" in text and "before that split existed" in text

    work = tmp_path / "w"
    write_run(work / "validation" / "sft-greedy", {"referencegame": [100.0, 0.0, 100.0, 0.0]})
    write_run(work / "validation" / "sft-grpo-greedy", {"referencegame": [100.0, 100.0, 100.0, 0.0]})
    text, record = validation_section(work, seed=0, n_resamples=200)
    assert [r["name"] for r in record["rows"]] == ["sft-greedy", "sft-grpo-greedy"]
    assert {(d["a"], d["b"]) for d in record["paired"]} >= {("sft-grpo-greedy", "sft-greedy")}
    assert "## Validation (`splits/validation`" in text and "| sft-grpo-greedy | 75.00 [" in text
    # a work directory from before the split says so rather than showing an empty table
    assert "not run" in validation_section(tmp_path / "old", seed=0)[0]


def test_the_smol_presets_sft_saves_a_checkpoint_every_48_steps_and_keeps_the_last(tmp_path):
    """SFT is most of the preset's time: a stopped run resumes from its last checkpoint (the pipeline passes
    --resume where one exists) instead of starting its 192 steps over; its one evaluation stays at the end, so the
    model kept is the last step's (the Trainer's best-model loading would refuse checkpoints between evaluations)."""
    from playprm.pipeline.stages import resumed

    work = tmp_path / "w"
    train = dict(smol.SmolPreset(base=str(tmp_path / "base")).steps(work))["train-sft"]
    assert (flag(train, "--save-steps"), flag(train, "--eval-steps")) == ("48", "192")
    assert (flag(train, "--load-best-model-at-end"), flag(train, "--early-stopping-patience")) == ("false", "0")
    assert resumed(train) == train  # nothing to resume from yet
    (work / "sft-policy" / "checkpoint-96").mkdir(parents=True)
    assert resumed(train) == [*train, "--resume"]

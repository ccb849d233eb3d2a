"""Every stage on a real pretrained model: SmolLM2-135M-Instruct (tests/real_model.py), a Llama whose ChatML
template adds a default system prompt, loaded from its 4-bit .gguf file or the fp32 folder imported from it.

The card's setting at toy size: the base model breaks the built-in games' reply formats at its first turn; a
LoRA (the card's r 16, alpha 32, all-linear) trained for a few steps on the programmatic teacher's taboo wins
keeps them, so its episodes run several turns of real text in taboo and wordle, and clemcore's own ``clem run``
must play them as ``playprm eval`` does. Everything is sized for 2 CPU cores: one instance per experiment, short
replies, a few training steps.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_clemcore_parity import clem, compare_episodes, episodes, events, smallest_top2_gap, workspace

from playprm.cli import main

GAMES = ("taboo", "wordle")  # the multi-turn built-in games
MAX_TOKENS = 20  # a taboo clue or a wordle guess with its end-of-turn token fits
PLAY = ["--limit", "1", "--max-tokens", str(MAX_TOKENS)]  # one instance per experiment: 4 episodes


def game_flags(games=GAMES) -> list[str]:
    return [flag for game in games for flag in ("--game", game)]


def replies(results: Path) -> dict[str, list[str]]:
    """Per episode, the texts the players sent the game."""
    return {key: [event[3]["content"] for event in events(path) if event[3]["type"] == "get message"]
            for key, path in episodes(results).items()}


@pytest.fixture(scope="module")
def arena(smollm2, tmp_path_factory):
    """A working directory with taboo and wordle cut to one instance per experiment (game_registry.json) and
    the playprm teacher's data: ``collect --policy-model programmatic:expert`` on taboo, its wins as SFT data,
    all its turns with outcome labels as PRM data."""
    root = workspace(tmp_path_factory.mktemp("arena"), smollm2, games_played=GAMES, instances=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert main(["collect", "--policy-model", "programmatic:expert", "--game", "taboo", "--games-dir",
                     str(_builtin()), "--limit", "6", "--samples-per-instance", "2", "--temperature", "1.0",
                     "--results-dir", "teacher"]) == 0
        assert main(["sft-data", "--results-dir", "teacher", "--out", "sft-data"]) == 0
        assert main(["prm-data", "--results-dir", "teacher", "--labels", "outcome", "--out", "prm-data"]) == 0
    return root


def _builtin() -> Path:
    from playprm.games.registry import builtin_games_dir

    return builtin_games_dir()


def eval_in(root: Path, *argv: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert main(["eval", *argv]) == 0


@pytest.fixture(scope="module")
def base_greedy(arena, smollm2) -> Path:
    """The base model's greedy episodes (folder)."""
    eval_in(arena, "--policy-model", str(smollm2), *game_flags(), *PLAY, "--results-dir", "base-greedy")
    return arena / "base-greedy"


@pytest.fixture(scope="module")
def sft_run(arena, smollm2) -> Path:
    """train-sft with the card's LoRA defaults on the teacher's taboo wins: 6 steps of 2 conversations at a
    constant learning rate, about the least that keeps both games' formats (4 cosine-scheduled steps did not)."""
    out = arena / "sft-policy"
    assert main(["train-sft", "--model", str(smollm2), "--data", str(arena / "sft-data"), "--output-dir", str(out),
                 "--max-steps", "6", "--per-device-train-batch-size", "2", "--effective-batch-size", "2",
                 "--per-device-eval-batch-size", "2", "--learning-rate", "2e-3", "--lr-scheduler-type", "constant",
                 "--warmup-steps", "0", "--lora-dropout", "0", "--eval-steps", "6", "--save-steps", "6", "--logging-steps", "1",
                 "--max-length", "320", "--activation-checkpointing", "false", "--disable-tqdm", "true",
                 "--model-name", "smol-sft"]) == 0
    return out


@pytest.fixture(scope="module")
def sft_greedy(arena, sft_run) -> Path:
    """The LoRA policy's greedy episodes, played by the registry entry train-sft wrote (copied into the arena,
    where clemcore's ``clem run`` finds it too)."""
    (arena / "model_registry.json").write_text((sft_run / "model_registry.json").read_text())
    eval_in(arena, "--policy-model", "smol-sft", *game_flags(), *PLAY, "--results-dir", "sft-greedy")
    return arena / "sft-greedy"


@pytest.fixture(scope="module")
def prm_run(arena, smollm2_gguf, smollm2) -> Path:
    """train-prm on the SmolLM2 backbone (LoRA, the card's defaults) on the teacher's outcome labels, from the
    .gguf file: the run writes it as its base-model/ folder first. That import is the one the session's
    ``smollm2`` folder came from (``gguf.import_folder`` on the same file, fp32); the run gets a copy of that
    folder in its place, which saves the ~30 s a second de-quantisation of the file costs."""
    from playprm.models import gguf

    def imported(source, folder, *, dtype):
        assert (Path(source), dtype) == (smollm2_gguf, "fp32")
        shutil.copytree(smollm2, folder)
        return Path(folder)

    out = arena / "prm"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gguf, "import_folder", imported)
        assert main(["train-prm", "--model", str(smollm2_gguf), "--data", str(arena / "prm-data"), "--output-dir",
                     str(out),
                     "--max-steps", "2", "--per-device-train-batch-size", "1", "--effective-batch-size", "1",
                     "--per-device-eval-batch-size", "4", "--learning-rate", "1e-3", "--warmup-steps", "0",
                     "--eval-steps", "2", "--save-steps", "2", "--logging-steps", "1", "--max-length", "512",
                     "--activation-checkpointing", "false", "--disable-tqdm", "true"]) == 0
    return out


def test_the_gguf_file_plays_the_greedy_episodes_of_its_imported_folder(arena, smollm2_gguf, base_greedy):
    eval_in(arena, "--policy-model", str(smollm2_gguf), *game_flags(), *PLAY, "--results-dir", "gguf-greedy")
    ours, theirs = episodes(arena / "gguf-greedy"), episodes(base_greedy)
    assert sorted(ours) == sorted(theirs) and len(ours) == 4
    assert all(events(ours[key]) == events(theirs[key]) for key in ours)
    run = json.loads(next((arena / "gguf-greedy").glob("*/playprm_run.json")).read_text())
    assert str(smollm2_gguf.resolve()) in json.dumps(run)  # the run says which file it played (resolved)


@pytest.fixture(scope="module")
def smol_policy(smollm2):
    """The folder loaded once as playprm's transformers policy, for the tests that call it in process."""
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy

    return HFPolicy(resolve_policy(str(smollm2)))


def test_cross_turn_cache_reuse_equals_re_encoding_on_the_real_template(smol_policy):
    from playprm.models.hf import HFPolicy

    reused = smol_policy
    plain = HFPolicy(reused.spec, reused.model, reused.tokenizer, reuse_cache=False)
    openings = ["Let's play Wordle. Reply with GUESS: <word>.", "Describe a cat. Reply with CLUE: <text>."]
    runs = []
    for policy in (reused, plain):
        conversations = [[{"role": "user", "content": text}] for text in openings]
        turns = []
        for turn in range(3):
            out = policy.generate(conversations, n=1, temperature=0.0, max_tokens=8)
            turns.append(out)
            for conversation, [candidate] in zip(conversations, out):
                conversation += [{"role": "assistant", "content": candidate.text},
                                 {"role": "user", "content": f"Feedback {turn}: " + "no " * (turn + 1)}]
        runs.append(turns)
    (a, b) = runs
    for turn_a, turn_b in zip(a, b):
        for [x], [y] in zip(turn_a, turn_b):
            assert (x.raw, x.num_tokens) == (y.raw, y.num_tokens)
            assert x.logprob == pytest.approx(y.logprob, abs=1e-3)
    # the reuse was real: after the first turn each context encoded only what came since (the default system
    # prompt and earlier turns were not encoded again)
    assert all(x.prefill_tokens < y.prefill_tokens for turn_a, turn_b in zip(a[1:], b[1:])
               for [x], [y] in zip(turn_a, turn_b))


def test_lora_sft_on_teacher_wins_lowers_the_loss_and_changes_the_greedy_replies(sft_run, base_greedy, sft_greedy):
    from peft import PeftConfig

    adapter = PeftConfig.from_pretrained(str(sft_run))
    assert (adapter.r, adapter.lora_alpha) == (16, 32)  # the card's LoRA
    [checkpoint] = sft_run.glob("checkpoint-*")
    losses = [e["loss"] for e in json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
              if "loss" in e]
    # single steps of 2 conversations are noisy; the second half of the run sits well below the first step
    assert len(losses) == 6 and sum(losses[3:]) / 3 < losses[0] - 0.5
    base, tuned = replies(base_greedy), replies(sft_greedy)
    assert sorted(base) == sorted(tuned)
    assert all(base[key][0] != tuned[key][0] for key in base)  # every episode's first reply changed


def test_clem_run_plays_the_lora_smollm2_as_playprm_eval_does_on_the_multi_turn_games(arena, sft_run, sft_greedy,
                                                                                       report_figure):
    root = arena  # its model_registry.json holds the entry as train-sft wrote it (sft_greedy)
    clem("run", "-g", *GAMES, "-m", "smol-sft", "-r", "clem", "-t", "0.0", "-l", str(MAX_TOKENS), "-b", "4", cwd=root)
    clem("score", "-r", "clem", cwd=root)
    theirs, ours = episodes(root / "clem"), episodes(sft_greedy)
    entry = json.loads((sft_run / "model_registry.json").read_text())[0]
    equal, flips = compare_episodes(theirs, ours, lambda prompt: smallest_top2_gap(
        Path(entry["huggingface_id"]), prompt, adapter=sft_run, max_tokens=MAX_TOKENS))
    rounds = {key: len(json.loads((path / "interactions.json").read_text())["turns"]) for key, path in ours.items()}
    report_figure(f"clemcore parity (LoRA SmolLM2-135M-Instruct): {len(ours)} episodes, rounds "
                  f"{sorted(rounds.values())}, {equal} equal, {len(flips)} numeric flips {flips}")
    assert len(ours) == 4 and equal + len(flips) == 4
    assert sum(r > 1 for r in rounds.values()) >= 2  # real multi-turn play: the test compares more than openings


@pytest.fixture(scope="module")
def smol_prm(prm_run):
    from playprm.prm.scorer import PRMScorer

    return PRMScorer.from_path(str(prm_run))


def test_train_prm_from_the_gguf_file_trains_and_scores(prm_run, smol_prm, smollm2):
    metrics = json.loads((prm_run / "metrics.json").read_text())
    assert metrics["global_step"] == 2 and metrics["validation_records"] > 0
    # the adapter's base is the folder the run imported, the same weights as the fixture's folder
    base = prm_run / "base-model"
    assert json.loads((prm_run / "prm_config.json").read_text())["base_model"] == str(base.resolve())
    assert (base / "model.safetensors").stat().st_size == (smollm2 / "model.safetensors").stat().st_size
    scorer = smol_prm
    context = [{"role": "user", "content": "Let's play Taboo. Guess the secret word. Reply with GUESS: <word>."}]
    [scores] = scorer.score([context], [["GUESS: apple", "I do not know."]])
    assert all(0 < s < 1 for s in scores) and scores[0] != scores[1]


@pytest.mark.parametrize("mode", ["best-of-n", "beam-search", "dvts", "lf-beam"])
def test_every_decoding_mode_plays_with_smollm2_and_its_prm(arena, smol_policy, smol_prm, prm_run, mode):
    from playprm.play.config import EvalConfig
    from playprm.play.wiring import run_eval

    # the loaded policy and PRM serve every mode (eval loads them as the CLI test above does); wordle's one
    # player keeps it short
    settings = {"n_candidates": 2, "beam_width": 1, "num_beam_iterations": 2}
    cfg = EvalConfig(policy_model=smol_policy.spec.model_id, mode=mode, prm_path=prm_run, games=["wordle"],
                     limit=1, max_tokens=12, results_dir=arena / f"mode-{mode}", **settings)
    run_dir, _ = run_eval(cfg, policy=smol_policy, scorer=smol_prm, progress=False)
    played = episodes(arena / f"mode-{mode}")
    assert len(played) == 2 and all(replies(arena / f"mode-{mode}").values())
    rows = [json.loads(line) for path in run_dir.rglob("candidates.jsonl") for line in path.read_text().splitlines()]
    candidates = [c for row in rows for c in row["candidates"]]
    scores = [c["score"] for c in candidates if c["score"] is not None]  # scored by the SmolLM2 PRM
    assert len(candidates) >= 2 and scores and all(0 < score < 1 for score in scores)

"""``playprm pipeline --preset tiny``: the quick smoke run of every stage on CPU, which proves the install.

instances -> collect teacher -> sft-data -> make-tiny -> train-sft -> collect -> prm-data -> train-prm -> eval
(greedy, best-of-n, beam-search) -> report --compare -> summarize (RESULTS.md), then one line that says what it
checked (``smoke_check``): that the trained policy played interactive games to their end.

The policy learns the reference game's reply formats in seconds the way the small preset's does
(``pipeline.small``): the ε-noisy programmatic expert plays the reference game, a tokenizer trained on its texts
(``make-tiny --tokenizer-data``: a grid row is one token), full-weight SFT from random weights. The PRM is trained
on the scripted random-valid-move policy's branched rollouts of every game (a random-weight model never wins one).
The evaluation plays every game, the reference game on held-out instances (``instances --exclude``), the
first 2 instances of each experiment: the numbers show that every stage runs and connects and that the policy
keeps the reference game's reply formats on instances it never saw, not what it learned (that is ``--preset
small``).
"""

from __future__ import annotations

import json
from pathlib import Path

from playprm.pipeline.small import GridRow, beam_rows, best_of_row
from playprm.play.config import EvalConfig, field_defaults

TINY_GAMES = ["--game-all", "--limit", "2"]
TEACHER_GAME = "referencegame"
TRAIN, HELD_OUT = "splits/train", "splits/heldout"  # the reference game's instances; the other games' are built in
POLICY = "tiny-sft"


def tiny_rows(prm: str = "prm") -> list[GridRow]:
    """The evaluation grid: the policy's greedy play, the PRM's best-of-N and its beam search (environment
    lookahead, reported apart) at the card's N and beam width, the PRM read from ``prm``."""
    n = field_defaults(EvalConfig)["n_candidates"]
    return [GridRow("sft-greedy"), best_of_row(n, "prm", "argmax", prm, ""), beam_rows(prm)[0]]


def tiny_pairs() -> list[tuple[str, str]]:
    """RESULTS.md's paired comparisons: each guided row against greedy."""
    greedy, *guided = [row.name for row in tiny_rows()]
    return [(name, greedy) for name in guided]


def tiny_steps(workdir: Path) -> list[tuple[str, list[str]]]:
    """(stage, argv) for the CPU pipeline, every path under ``workdir``."""
    w = lambda path: str(Path(workdir) / path)  # noqa: E731
    policy = w("sft-policy")
    rows = tiny_rows(w("prm"))
    return [
        # not "instances train": that stage name marks a small-preset folder (stages.earlier_identity)
        ("instances teacher", ["instances", "--out", w(TRAIN), "--seed", "1000", "--per-experiment", "10",
                               "--game", TEACHER_GAME]),
        ("instances held-out", ["instances", "--out", w(HELD_OUT), "--seed", "2000", "--per-experiment", "2",
                                "--game", TEACHER_GAME, "--exclude", w(TRAIN)]),
        # 80 of the expert's reference games (10 instances per experiment, 4 samples): its wins are the SFT data
        ("collect teacher", ["collect", "--policy-model", "programmatic:expert", "--games-dir", w(TRAIN), "--game",
                             TEACHER_GAME, "--samples-per-instance", "4", "--temperature", "1.0",
                             "--results-dir", w("teacher")]),
        ("sft-data", ["sft-data", "--results-dir", w("teacher"), "--out", w("sft-data")]),
        # the smoke run uses plain Qwen3 for speed (the card's Qwen3.5 layout costs 2.2x on CPU, BENCHMARKS.md 1b;
        # it is tested on its own in tests/test_card_architecture.py); its tokenizer is trained on the SFT texts
        ("make-tiny", ["make-tiny", "--out", w("tiny"), "--arch", "qwen3", "--tokenizer-data",
                       w("sft-data/train.jsonl")]),
        # 100 steps keep both players' formats on every held-out reference game (about 10 s on one thread); 12
        # steps with make-tiny's English-word tokenizer answered with newlines only
        ("train-sft", ["train-sft", "--model", w("tiny/policy"), "--data", w("sft-data"), "--output-dir", policy,
                       "--full-weights", "true", "--max-steps", "100", "--per-device-train-batch-size", "16",
                       "--effective-batch-size", "16", "--learning-rate", "3e-3", "--warmup-steps", "0.05",
                       "--logging-steps", "25", "--activation-checkpointing", "false", "--model-name", POLICY]),
        ("collect", ["collect", "--policy-model", "scripted:random-valid", *TINY_GAMES, "--samples-per-instance",
                     "4", "--branch-factor", "2", "--branch-depth", "1", "--temperature", "1.0",
                     "--results-dir", w("rollouts")]),
        ("prm-data", ["prm-data", "--results-dir", w("rollouts"), "--labels", "both", "--out", w("prm-data")]),
        ("train-prm", ["train-prm", "--model", w("tiny/policy"), "--data", w("prm-data"), "--output-dir", w("prm"),
                       "--max-steps", "8", "--per-device-train-batch-size", "4", "--effective-batch-size", "8",
                       "--learning-rate", "1e-3", "--eval-steps", "0.5", "--save-steps", "0.5"]),
        *[(f"eval {row.flags[row.flags.index('--mode') + 1] if '--mode' in row.flags else 'greedy'}",
           ["eval", "--policy-model", policy, *row.flags, "--games-dir", w(HELD_OUT), *TINY_GAMES, "--max-tokens", "24",
            "--results-dir", w(f"results/{row.name}")]) for row in rows],
        ("report", ["report", "--compare", *(w(f"results/{row.name}") for row in rows), "--out", w("report")]),
        ("summarize", ["summarize", "--workdir", str(workdir), "--preset", "tiny"]),
    ]


def smoke_check(workdir: Path) -> tuple[bool, str]:
    """Whether the smoke run proved the install, and the line that says what it checked: RESULTS.md was
    written and the trained policy played interactive episodes to their end (not aborted), with the greedy row's
    clemscore on the game it scored best in (% played x quality / 100, clemcore's score of one game)."""
    from playprm.results import iter_episodes

    workdir = Path(workdir)
    results, document_path = workdir / "RESULTS.md", workdir / "results.json"
    if not results.is_file() or not document_path.is_file():
        return False, f"smoke run FAILED: no {results} (summarize did not write it)"
    document = json.loads(document_path.read_text(encoding="utf-8"))
    static = set(document.get("static_games") or [])
    ended: dict[str, int] = {}
    for episode in iter_episodes(workdir / "results", on_skip=lambda path, reason: None):
        if episode.game not in static and episode.outcome in ("success", "lose"):
            ended[episode.game] = ended.get(episode.game, 0) + 1
    greedy = next((row for row in document["rows"] if row["name"] == "sft-greedy"), {})
    scores = {game: played * greedy["games"][game] / 100 for game, played in (greedy.get("played") or {}).items()
              if game not in static and played and greedy["games"].get(game) is not None}
    if not ended or not scores:
        return False, ("smoke run FAILED: no interactive episode was played to the end (the trained policy broke "
                       f"every game's reply format); see {results}")
    game = max(scores, key=scores.get)
    per_game = ", ".join(f"{name} {count}" for name, count in sorted(ended.items()))
    return True, (f"smoke run OK: {sum(ended.values())} interactive episodes played to the end ({per_game}), "
                  f"sft-greedy's clemscore {scores[game]:.2f} on {game}; RESULTS.md at {results}")

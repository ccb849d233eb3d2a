"""``playprm pipeline --preset tiny``: the quick smoke run of every stage on CPU.

make-tiny -> collect -> sft-data -> train-sft -> prm-data -> train-prm -> eval (greedy, best-of-n, beam-search) ->
report --compare. A random-weight tiny model never wins a game, so its rollouts are collected with the scripted
random-valid-move policy (labelled so in the results); the numbers show that every stage runs and connects, not
that anything was learned.
"""

from __future__ import annotations

from pathlib import Path

from playprm.play.config import EvalConfig, field_defaults

TINY_GAMES = ["--game-all", "--limit", "2"]


def tiny_steps(workdir: Path) -> list[tuple[str, list[str]]]:
    """(stage, argv) for the CPU pipeline, every path under ``workdir``."""
    w = lambda path: str(Path(workdir) / path)  # noqa: E731
    policy = w("sft-policy")
    card = field_defaults(EvalConfig)  # eval's defaults: the guided runs use the card's N and beam width
    n, width = str(card["n_candidates"]), str(card["beam_width"])
    return [
        # the smoke run uses plain Qwen3 for speed (the card's Qwen3.5 layout costs 2.2x on CPU, BENCHMARKS.md 1b;
        # it is tested on its own in tests/test_card_architecture.py)
        ("make-tiny", ["make-tiny", "--out", w("tiny"), "--arch", "qwen3"]),
        ("collect", ["collect", "--policy-model", "scripted:random-valid", *TINY_GAMES, "--samples-per-instance",
                     "4", "--branch-factor", "2", "--branch-depth", "1", "--temperature", "1.0",
                     "--results-dir", w("rollouts")]),
        ("sft-data", ["sft-data", "--results-dir", w("rollouts"), "--out", w("sft-data"), "--tokenizer",
                      w("tiny/policy"), "--max-length", "1024"]),
        # a smoke run: enough steps to show the loss move, no more (40 took a minute of the test suite)
        ("train-sft", ["train-sft", "--model", w("tiny/policy"), "--data", w("sft-data"), "--output-dir", policy,
                       "--max-steps", "12", "--per-device-train-batch-size", "8", "--effective-batch-size", "8",
                       "--learning-rate", "3e-3", "--model-name", "tiny-sft"]),
        ("prm-data", ["prm-data", "--results-dir", w("rollouts"), "--labels", "both", "--out", w("prm-data")]),
        ("train-prm", ["train-prm", "--model", w("tiny/policy"), "--data", w("prm-data"), "--output-dir", w("prm"),
                       "--max-steps", "8", "--per-device-train-batch-size", "4", "--effective-batch-size", "8",
                       "--learning-rate", "1e-3"]),
        ("eval greedy", ["eval", "--policy-model", policy, "--mode", "greedy", *TINY_GAMES,
                         "--max-tokens", "24", "--results-dir", w("results")]),
        ("eval best-of-n", ["eval", "--policy-model", policy, "--mode", "best-of-n", "--n-candidates", n,
                            "--prm-path", w("prm"), *TINY_GAMES, "--max-tokens", "24", "--results-dir", w("results")]),
        ("eval beam-search", ["eval", "--policy-model", policy, "--mode", "beam-search", "--n-candidates", n,
                              "--beam-width", width, "--num-beam-iterations", "3", "--prm-path", w("prm"),
                              *TINY_GAMES, "--max-tokens", "24", "--results-dir", w("results")]),
        ("report", ["report", "--compare", w("results"), "--out", w("report")]),
    ]

"""``playprm pipeline --preset small``: the model card's claim measured at small scale, on CPU.

Every stage is an ordinary playprm command (printed as it runs). The teacher is the ε-noisy programmatic
expert (``programmatic:expert``, standing in for "the base model's winning rollouts"); the policy is a small
model trained **from random initialisation** with full-weight SFT on the teacher's winning episodes; the PRM is
trained on the policy's own branched rollouts (Monte-Carlo labels: each turn's share of won continuations).
Everything is evaluated on held-out instances that no SFT or PRM example came from (``playprm instances
--exclude``).

Game mix (``SmallPreset.games``): the reference game, whose random-grid and letter-grid instances are genuinely
new on a held-out split. Wordle can be held out too (its splits draw secret words from all 14,430 allowed
guesses, and ``--exclude`` drops any held-out target a training instance has), but the 4-layer policy trained
from scratch does not learn to spell valid words past its second guess (BENCHMARKS.md, the wordle probe), so it
is not in the default mix. Taboo's 24 card words cannot be held out; it stays in ``--preset tiny`` and the tests.

What makes a model trained from scratch learn the game in minutes (each measured, BENCHMARKS.md): the describer
sees the target grid first (clembench's layout), the tokenizer is trained on the teacher's texts (``make-tiny
--tokenizer-data``: a grid row is one token, a sequence ~70 tokens), and the teacher's guesser shows its work
(``models.programmatic``). The base model is therefore built after ``sft-data``.

Architecture: Qwen3 (4 layers, hidden 128) rather than the card's Qwen3.5 layout, for CPU time: Qwen3.5's
gated delta-net runs reference PyTorch kernels on CPU, 2.2x the time of a same-size Qwen3 for generation and PRM
scoring (BENCHMARKS.md, figure 1b, hidden 256; ~3.5x for a training step, measured when issue 11 was filed),
which would take training alone past the ~25-minute budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

POLICY = "small-sft"  # the registry name train-sft gives the policy (model_registry.json of the work directory)


@dataclass
class SmallPreset:
    """Sizes of the small pipeline (defaults: the measured preset)."""

    seed: int = 0
    # (game, training instances per experiment, held-out instances per experiment); the reference game has two
    # experiments, wordle's splits one (secret words from all allowed guesses)
    games: tuple = (("referencegame", 1500, 150),)
    layers: int = 4
    hidden: int = 128
    teacher_samples: int = 2
    sft_steps: int = 800
    sft_batch: int = 32
    # per experiment, for the PRM's rollouts: 1000 rather than 400 and Monte-Carlo labels rather than MC + outcome
    # raised the PRM's held-out AUROC on seed 0 from 0.60 to 0.71 (BENCHMARKS.md, the small pipeline)
    rollout_instances: int = 1000
    prm_labels: str = "mc"
    prm_steps: int = 1500
    prm_batch: int = 16
    max_tokens: int = 32
    ns: tuple = (2, 4, 8, 16)
    oracle_ns: tuple = (4, 16)
    rounds: int = 1  # 2: expert iteration, the round-1 policy retrained on its own PRM-guided best-of-4 wins
    round2_steps: int = 200
    round2_instances: int = 400  # per experiment, played by round 1's best-of-4 for round-2 SFT data

    def rows(self, prm: str = "prm") -> list[tuple[str, list[str]]]:
        """(row name, eval flags) of the evaluation grid, the PRM read from ``prm``; each row writes
        results/<row name>."""
        prm = ["--prm-path", prm]
        rows = [("sft-greedy", []), ("sft-sampled", ["--temperature", "0.7"])]
        rows += [(f"sft-prm-bon{n}", ["--mode", "best-of-n", "--n-candidates", str(n), *prm]) for n in self.ns]
        rows += [(f"sft-logprob-bon{n}", ["--mode", "best-of-n", "--n-candidates", str(n), "--scorer", "logprob"])
                 for n in self.ns]
        rows += [(f"sft-oracle-bon{n}", ["--mode", "best-of-n", "--n-candidates", str(n), "--scorer", "expert"])
                 for n in self.oracle_ns]
        rows += [("sft-beam", ["--mode", "beam-search", "--n-candidates", "4", "--beam-width", "2",
                               "--num-beam-iterations", "4", *prm]),
                 ("sft-lf-beam", ["--mode", "lf-beam", "--n-candidates", "4", "--beam-width", "2", *prm])]
        return rows

    def steps(self, workdir: Path) -> list[tuple[str, list[str]]]:
        """(stage, argv) of the whole pipeline, every path under ``workdir``. The evaluations name the trained
        policy by its folder, so no stage reads the working directory's model registry."""
        w = lambda path: str(Path(workdir) / path)  # noqa: E731
        train, held_out, policy = w(TRAIN), w(HELD_OUT), w("sft-policy")
        s, games = self.seed, [flag for game, _, _ in self.games for flag in ("--game", game)]
        eval_common = ["--games-dir", held_out, *games, "--max-tokens", str(self.max_tokens), "--seed", str(s)]
        steps = [(f"instances train {game}", ["instances", "--out", train, "--seed", str(1000 + s),
                                              "--per-experiment", str(n_train), "--game", game])
                 for game, n_train, _ in self.games]
        steps += [(f"instances held-out {game}", ["instances", "--out", held_out, "--seed", str(2000 + s),
                                                  "--per-experiment", str(n_held_out), "--game", game,
                                                  "--exclude", train])
                  for game, _, n_held_out in self.games]
        steps += [
            ("collect teacher", ["collect", "--policy-model", "programmatic:expert", "--games-dir", train, *games,
                                 "--samples-per-instance", str(self.teacher_samples), "--temperature", "1.0",
                                 "--seed", str(s), "--results-dir", w("teacher")]),
            ("sft-data", ["sft-data", "--results-dir", w("teacher"), "--out", w("sft-data")]),
            # a model trained from scratch gets a tokenizer trained on its training texts (see models.tiny)
            ("make-tiny", ["make-tiny", "--out", w("base"), "--arch", "qwen3", "--layers", str(self.layers),
                           "--hidden", str(self.hidden), "--seed", str(s), "--tokenizer-data",
                           w("sft-data/train.jsonl")]),
            ("eval base-greedy", ["eval", "--policy-model", w("base/policy"), *eval_common,
                                  "--results-dir", w("results/base-greedy")]),
            ("train-sft", ["train-sft", "--model", w("base/policy"), "--data", w("sft-data"), "--output-dir", policy,
                           "--full-weights", "true", "--max-steps", str(self.sft_steps),
                           "--per-device-train-batch-size", str(self.sft_batch), "--effective-batch-size",
                           str(self.sft_batch), "--per-device-eval-batch-size", str(self.sft_batch),
                           "--learning-rate", "1e-3", "--warmup-steps", "0.05", "--eval-steps", "0.5",
                           "--save-steps", "0.5", "--logging-steps", "50", "--max-length", "1024",
                           "--activation-checkpointing", "false", "--seed", str(s), "--model-name", POLICY]),
            ("collect policy", ["collect", "--policy-model", policy, "--games-dir", train, *games, "--limit",
                                str(self.rollout_instances), "--samples-per-instance", "2", "--branch-factor", "2",
                                "--branch-depth", "2", "--temperature", "1.0", "--max-tokens", str(self.max_tokens),
                                "--seed", str(s), "--results-dir", w("rollouts")]),
            ("prm-data", ["prm-data", "--results-dir", w("rollouts"), "--labels", self.prm_labels, "--out",
                          w("prm-data")]),
            ("train-prm", ["train-prm", "--model", policy, "--data", w("prm-data"), "--output-dir", w("prm"),
                           "--max-steps", str(self.prm_steps), "--per-device-train-batch-size",
                           str(self.prm_batch), "--effective-batch-size", str(self.prm_batch),
                           "--per-device-eval-batch-size", str(self.prm_batch), "--learning-rate", "1e-3",
                           "--eval-steps", "0.25", "--save-steps", "0.5", "--logging-steps", "50",
                           "--activation-checkpointing", "false", "--seed", str(s)]),
        ]
        steps += [(f"eval {row}", ["eval", "--policy-model", policy, *flags, *eval_common, "--results-dir",
                                   w(f"results/{row}")]) for row, flags in self.rows(w("prm"))]
        if self.rounds >= 2:
            steps += self.expert_iteration_steps(w, policy, games, eval_common)
        steps.append(("summarize", ["summarize", "--workdir", str(workdir), "--preset", "small", "--seed", str(s)]))
        return steps

    def expert_iteration_steps(self, w, policy: str, games: list[str], eval_common: list[str]) -> list[tuple[str, list[str]]]:
        """Expert iteration: the round-1 policy plays training instances with PRM-guided best-of-4, its wins become
        round-2 SFT data, the policy is trained on them further, and round-2 greedy is evaluated on the held-out
        instances (does the search distil back into the policy?)."""
        return [
            ("round 2 search", ["eval", "--policy-model", policy, "--mode", "best-of-n", "--n-candidates", "4",
                                "--prm-path", w("prm"), "--games-dir", w(TRAIN), *games, "--limit",
                                str(self.round2_instances), "--max-tokens", str(self.max_tokens),
                                "--seed", str(self.seed), "--results-dir", w("round2/search")]),
            ("round 2 sft-data", ["sft-data", "--results-dir", w("round2/search"), "--out", w("round2/sft-data")]),
            ("round 2 train-sft", ["train-sft", "--model", policy, "--data", w("round2/sft-data"), "--output-dir",
                                   w("round2/sft-policy"), "--full-weights", "true", "--max-steps",
                                   str(self.round2_steps), "--per-device-train-batch-size", str(self.sft_batch),
                                   "--effective-batch-size", str(self.sft_batch), "--per-device-eval-batch-size",
                                   str(self.sft_batch), "--learning-rate", "3e-4", "--warmup-steps", "0.05",
                                   "--eval-steps", "0.5", "--save-steps", "0.5", "--logging-steps", "50",
                                   "--max-length", "1024", "--activation-checkpointing", "false", "--seed",
                                   str(self.seed), "--model-name", f"{POLICY}-round2"]),
            (f"eval {ROUND2_ROW}", ["eval", "--policy-model", w("round2/sft-policy"), *eval_common,
                                     "--results-dir", w(f"results/{ROUND2_ROW}")]),
        ]

    def done_markers(self) -> dict[str, str]:
        """stage -> the file, relative to the work directory, whose presence means it finished (eval, collect
        and the rest resume on their own)."""
        markers = {f"instances {split} {game}": f"{folder}/{game}/in/instances.json"
                   for game, _, _ in self.games for split, folder in (("train", TRAIN), ("held-out", HELD_OUT))}
        return {**markers, "make-tiny": "base/prm/prm_config.json", "sft-data": "sft-data/README.md",
                "train-sft": "sft-policy/model_registry.json", "prm-data": "prm-data/README.md",
                "train-prm": "prm/prm_config.json", "round 2 sft-data": "round2/sft-data/README.md",
                "round 2 train-sft": "round2/sft-policy/model_registry.json"}


HELD_OUT = "splits/heldout"
TRAIN = "splits/train"

ROUND2_ROW = "sft-round2-greedy"  # expert iteration (--rounds 2)

# the paired comparisons RESULTS.md shows (rows of the grid); the round-2 ones where that row exists.
# expert best-of-4 - greedy is the room any scorer has at N = 4: where its CI holds 0, no PRM can show a gain
PAIRS = [("sft-greedy", "base-greedy"), ("sft-prm-bon4", "sft-greedy"), ("sft-prm-bon4", "sft-logprob-bon4"),
         ("sft-prm-bon8", "sft-prm-bon4"), ("sft-prm-bon16", "sft-prm-bon8"), ("sft-oracle-bon4", "sft-greedy"),
         ("sft-oracle-bon4", "sft-prm-bon4"),
         (ROUND2_ROW, "sft-greedy"), (ROUND2_ROW, "sft-prm-bon4")]

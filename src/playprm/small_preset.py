"""``playprm pipeline --preset small``: the model card's claim measured at small scale, on CPU.

Every stage is an ordinary playprm command (printed as it runs). The teacher is the ε-noisy programmatic
expert (``programmatic:expert``, standing in for "the base model's winning rollouts"); the policy is a small
model trained **from random initialisation** with full-weight SFT on the teacher's winning episodes; the PRM is
trained on the policy's own branched rollouts (Monte-Carlo and outcome labels). Everything is evaluated on
held-out instances that no SFT or PRM example came from (``playprm instances --exclude``).

Game mix: the reference game, whose random-grid and letter-grid instances are genuinely new on a held-out
split. The built-in wordle and taboo draw their secret words from lists of 70 and 24 words, so a held-out split
of them would repeat the training instances (``playprm instances`` drops every one); they stay in ``--preset
tiny`` and the unit tests.

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

GAMES = ["--game", "referencegame"]
HELD_OUT = "splits/heldout"
TRAIN = "splits/train"
POLICY = "small-sft"


@dataclass
class SmallPreset:
    """Sizes of the small pipeline (defaults: the measured preset)."""

    seed: int = 0
    train_per_experiment: int = 1500  # training instances per experiment (two experiments)
    heldout_per_experiment: int = 150  # held-out instances per experiment (~300 episodes per row)
    layers: int = 4
    hidden: int = 128
    teacher_samples: int = 2
    sft_steps: int = 800
    sft_batch: int = 32
    rollout_instances: int = 400  # per experiment, for the PRM's rollouts
    prm_steps: int = 1500
    prm_batch: int = 16
    max_tokens: int = 32
    ns: tuple = (2, 4, 8, 16)
    oracle_ns: tuple = (4, 16)

    def rows(self) -> list[tuple[str, list[str]]]:
        """(row name, eval flags) of the evaluation grid; each row writes results/<row name>."""
        prm = ["--prm-path", "prm"]
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

    def steps(self) -> list[tuple[str, list[str]]]:
        """(stage, argv) of the whole pipeline; paths are relative to the work directory."""
        s, eval_common = self.seed, ["--games-dir", HELD_OUT, *GAMES, "--max-tokens", str(self.max_tokens),
                                     "--seed", str(self.seed)]
        steps = [
            ("instances train", ["instances", "--out", TRAIN, "--seed", str(1000 + s), "--per-experiment",
                                 str(self.train_per_experiment), *GAMES]),
            ("instances held-out", ["instances", "--out", HELD_OUT, "--seed", str(2000 + s), "--per-experiment",
                                    str(self.heldout_per_experiment), *GAMES, "--exclude", TRAIN]),
            ("collect teacher", ["collect", "--policy-model", "programmatic:expert", "--games-dir", TRAIN, *GAMES,
                                 "--samples-per-instance", str(self.teacher_samples), "--temperature", "1.0",
                                 "--seed", str(s), "--results-dir", "teacher"]),
            ("sft-data", ["sft-data", "--results-dir", "teacher", "--out", "sft-data"]),
            # a model trained from scratch gets a tokenizer trained on its training texts (see models.tiny)
            ("make-tiny", ["make-tiny", "--out", "base", "--arch", "qwen3", "--layers", str(self.layers),
                           "--hidden", str(self.hidden), "--seed", str(s), "--tokenizer-data", "sft-data/train.jsonl"]),
            ("eval base-greedy", ["eval", "--policy-model", "base/policy", *eval_common,
                                  "--results-dir", "results/base-greedy"]),
            ("train-sft", ["train-sft", "--model", "base/policy", "--data", "sft-data", "--output-dir", "sft-policy",
                           "--full-weights", "true", "--max-steps", str(self.sft_steps),
                           "--per-device-train-batch-size", str(self.sft_batch), "--effective-batch-size",
                           str(self.sft_batch), "--per-device-eval-batch-size", str(self.sft_batch),
                           "--learning-rate", "1e-3", "--warmup-steps", "0.05", "--eval-steps", "0.5",
                           "--save-steps", "0.5", "--logging-steps", "50", "--max-length", "1024",
                           "--activation-checkpointing", "false", "--seed", str(s), "--model-name", POLICY]),
            ("collect policy", ["collect", "--policy-model", POLICY, "--games-dir", TRAIN, *GAMES, "--limit",
                                str(self.rollout_instances), "--samples-per-instance", "2", "--branch-factor", "2",
                                "--branch-depth", "2", "--temperature", "1.0", "--max-tokens", str(self.max_tokens),
                                "--seed", str(s), "--results-dir", "rollouts"]),
            ("prm-data", ["prm-data", "--results-dir", "rollouts", "--labels", "both", "--out", "prm-data"]),
            ("train-prm", ["train-prm", "--model", "sft-policy", "--data", "prm-data", "--output-dir", "prm",
                           "--max-steps", str(self.prm_steps), "--per-device-train-batch-size",
                           str(self.prm_batch), "--effective-batch-size", str(self.prm_batch),
                           "--per-device-eval-batch-size", str(self.prm_batch), "--learning-rate", "1e-3", "--eval-steps", "0.25",
                           "--save-steps", "0.5", "--logging-steps", "50", "--activation-checkpointing", "false",
                           "--seed", str(s)]),
        ]
        steps += [(f"eval {row}", ["eval", "--policy-model", POLICY, *flags, *eval_common, "--results-dir",
                                   f"results/{row}"]) for row, flags in self.rows()]
        steps.append(("summarize", ["summarize", "--workdir", ".", "--preset", "small", "--seed", str(s)]))
        return steps


# stage -> the file whose presence means it finished (eval, collect and the rest resume on their own)
DONE_MARKERS = {
    "instances train": f"{TRAIN}/split.json",
    "instances held-out": f"{HELD_OUT}/split.json",
    "make-tiny": "base/prm/prm_config.json",
    "sft-data": "sft-data/README.md",
    "train-sft": "sft-policy/model_registry.json",
    "prm-data": "prm-data/README.md",
    "train-prm": "prm/prm_config.json",
}

# the paired comparisons RESULTS.md shows (rows of the grid)
PAIRS = [("sft-greedy", "base-greedy"), ("sft-prm-bon4", "sft-greedy"), ("sft-prm-bon4", "sft-logprob-bon4"),
         ("sft-prm-bon8", "sft-prm-bon4"), ("sft-prm-bon16", "sft-prm-bon8"), ("sft-oracle-bon4", "sft-prm-bon4")]

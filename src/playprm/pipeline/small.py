"""``playprm pipeline --preset small``: the model card's claim measured at small scale, on CPU.

Every stage is an ordinary playprm command (printed as it runs). The teacher is the ε-noisy programmatic
expert (``programmatic:expert``, standing in for "the base model's winning rollouts"); the policy is a small
model trained **from random initialisation** with full-weight SFT on the teacher's winning episodes; the PRM is
trained on the policy's own branched rollouts (Monte-Carlo labels: each turn's share of won continuations).
Everything is evaluated on held-out instances that no SFT or PRM example came from (``playprm instances
--exclude``).

Game (``--game``, ``GAME_SETTINGS``): the reference game by default, whose random-grid and letter-grid instances
are genuinely new on a held-out split; ``--game wordle`` plays wordle with its small word list (the 300 most
frequent words: 200 training targets, 70 held-out, 30 validation, no target in two splits), a game of up to six
turns where each guess is answered with letter feedback the next guess should use. Wordle can be held out too (its splits draw secret words from all 14,430 allowed
guesses, and ``--exclude`` drops any held-out target a training instance has), but the 4-layer policy trained
from scratch does not learn to spell valid words past its second guess (BENCHMARKS.md, the wordle probe), so it
is not in the default mix. Taboo's 24 card words cannot be held out; it stays in ``--preset tiny`` and the tests.

What makes a model trained from scratch learn the game in minutes (each measured, BENCHMARKS.md): the describer
sees the target grid first (clembench's layout), the tokenizer is trained on the teacher's texts (``make-tiny
--tokenizer-data``: a grid row is one token, a sequence ~70 tokens), and the teacher's guesser shows its work
(``games.builtin.expert``). The base model is therefore built after ``sft-data``.

Architecture: Qwen3 (4 layers, hidden 128) rather than the card's Qwen3.5 layout, for CPU time: Qwen3.5's
gated delta-net runs reference PyTorch kernels on CPU, 2.2x the time of a same-size Qwen3 for generation and PRM
scoring (BENCHMARKS.md, figure 1b, hidden 256; ~3.5x for a training step, measured when issue 11 was filed),
which would take training alone past the ~25-minute budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from playprm.data.weighted_sft import DEFAULT_RULE
from playprm.play.config import SAMPLING_TEMPERATURE, EvalConfig, field_defaults

CARD = field_defaults(EvalConfig)  # eval's defaults, the model card's inference settings: flags spelt from them
POLICY = "small-sft"  # the registry name train-sft gives the policy (model_registry.json of the work directory)


@dataclass(frozen=True)
class GridRow:
    """One row of the evaluation grid, written once here and read back by the summary (never parsed out of its
    folder name): ``results/<name>`` holds its run."""

    name: str
    flags: tuple[str, ...] = ()  # eval flags beyond the policy, games and results folder
    n: int = 1  # candidates per turn
    scorer: str | None = None  # "prm", "logprob", "expert" (an upper bound) or None
    selection: str | None = None  # best-of-n: "argmax" (the card's) or "anchored"
    policy: str = "sft"  # "sft" (the trained policy), "weak" (its half-way checkpoint), "base", "round2", or
    # "sft-dpo" / "weak-dpo" (either trained further by DPO)
    gated: bool = False  # --guide-games auto from the validation comparison

    def as_dict(self) -> dict:
        return {"name": self.name, "n": self.n, "scorer": self.scorer, "selection": self.selection,
                "policy": self.policy, "gated": self.gated}


@dataclass
class SmallPreset:
    """Sizes of the small pipeline (defaults: the measured preset)."""

    seed: int = 0
    # (game, training instances per experiment, held-out instances per experiment); the reference game has two
    # experiments, wordle's splits one (secret words from its small list, `vocabulary`)
    games: tuple = (("referencegame", 1500, 150),)
    vocabulary: str = "full"  # wordle's word list (instances --vocabulary)
    tokenizer_pieces: str | None = None  # make-tiny --tokenizer-pieces (wordle: words and letter feedback apart)
    random_row: bool = False  # a random-valid row (scripted:random-valid, sampled) beside greedy
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
    validation_instances: int = 75  # per experiment: the split the per-game gate is decided on (not held-out)
    weak_policy: bool = True  # rows for the half-way SFT checkpoint (room above greedy for any scorer)
    # greedy-anchored best-of-N rows (--switch-margin auto), off by default: with the default PRM (--loss both) they
    # switched on 1 of 2,340 guided turns on seeds 0-1 (2026-12-06), because the margin for N = 4 (0.53-0.59, the
    # 96.5 % quantile of the PRM's score gaps between replies of equal value) is above 95 % of the observed gaps
    # between a sampled reply and greedy (0.07-0.22): a PRM whose sibling Δ/σ is below 1 cannot pass it, so the rows
    # equal greedy by construction and cost evaluation minutes (BENCHMARKS.md)
    anchored: bool = False
    # DPO (pipeline --dpo, off by default: about 17 more minutes on 2 shared cores): each policy trained further
    # on MC sibling pairs of its own branched rollouts, then played greedy. Won-against-lost siblings only (gap 1),
    # 200 steps at lr 1e-4, beta 0.1. The loss is DPO plus the chosen reply's NLL ("sigmoid,sft", RPO): plain DPO
    # ("sigmoid") lowered the chosen replies' likelihood too and broke the weaker policy's reply format on seed 2
    # (-23.7 points, 71 % played); with the NLL term the weaker policy gained on all three seeds (BENCHMARKS.md)
    dpo: bool = False
    dpo_steps: int = 200
    dpo_batch: int = 16
    dpo_learning_rate: float = 1e-4
    dpo_beta: float = 0.1
    dpo_loss: str = "sigmoid,sft"
    dpo_min_gap: float = 1.0
    dpo_weak_instances: int = 500  # per experiment: the weaker policy's own branched rollouts for its pairs
    # value-weighted SFT (pipeline --wsft, CityUoL's method): each policy trained further by SFT on every turn of the
    # same branched rollouts DPO uses, each turn weighted by its Monte-Carlo value (`sft-data --weights value`:
    # of advantage, filtered and value, the best on the validation splits of seeds 0-2, BENCHMARKS.md 2026-12-06;
    # none paid held out); DPO's step budget, so the costs compare
    wsft: bool = False
    wsft_weights: str = DEFAULT_RULE
    # online RL (pipeline --grpo): each policy trained by train-grpo on the training instances, 8 episodes per instance
    # and 8 instances per step (both players' rows), the game's Main Score as reward, then played greedy (and with
    # the PRM's best-of-4) held out. Sampling at 0.5, not 1.0: at 1.0 the weaker policy's episodes win about a
    # third, the groups carry little, and 100 steps lowered its greedy play by 5 points; at 0.5 for 200 steps it gained
    # +5.03 [+1.01, +9.40] on seed 0 (BENCHMARKS.md, train-grpo)
    grpo: bool = False
    grpo_steps: int = 200
    grpo_learning_rate: float = 5e-5  # the weaker policy's
    # the trained policy's: at 5e-5 GRPO moved it away from its play (seed 0: validation −1.39, held-out −5.37 [−9.40,
    # −1.33]). On seeds 0-2 the validation splits did not separate lr 1e-5, lr 1e-5 with a KL term (beta 0.04) and
    # lr 5e-6 (mean +0.92 / +0.92 / +0.91 over SFT greedy); the tie goes to the smallest step, for a policy that
    # already plays at 88-96. Held out (seen before this choice, so not an unbiased test of it): lower ends −1.01 /
    # −1.39 / −2.70 at 1e-5, 0.00 / −1.39 / 0.00 at 5e-6 (BENCHMARKS.md, 2026-12-06)
    grpo_trained_learning_rate: float = 5e-6
    grpo_temperature: float = 0.5
    grpo_generations: int = 8
    grpo_batch: int = 64  # episodes per step (grpo_batch / grpo_generations instances)
    # with --grpo, the weaker policy's GRPO with turn-level credit too, the same budget: tree step groups
    # (--advantage tree) and PRM shaping (--prm-path, at each λ of grpo_lambdas); rows weak-grpo-<variant>-greedy
    grpo_variants: bool = False
    grpo_lambdas: tuple = (1.0, 0.5)
    # tree step groups: forks per trained turn (None: all num_generations at the first turn, the reference game's
    # only one; on wordle 2, so that groups of siblings form at the first three guesses)
    grpo_tree_branch: int | None = None
    weak_beam: bool = False  # the PRM's beam searches (env lookahead and lookahead-free) on the weaker policy too

    def rows(self, prm: str = "prm", gate: str = "validation") -> list[GridRow]:
        """The evaluation grid on held-out instances (base greedy and round 2 come with their own stages), the
        PRM read from ``prm`` and each policy's per-game gate from ``gate/<policy>/paired.json``."""
        best_of = lambda n, scorer, selection="argmax", **kw: best_of_row(n, scorer, selection, prm, gate, **kw)  # noqa: E731
        rows = [GridRow("sft-greedy"), GridRow("sft-sampled", ("--temperature", str(SAMPLING_TEMPERATURE)))]
        rows += [RANDOM_ROW] if self.random_row else []
        rows += [best_of(n, "prm") for n in self.ns]
        rows += [best_of(n, "prm", "anchored") for n in self.ns] if self.anchored else []
        # the card's argmax best-of-4, guided only in the games where it beat greedy on the validation split (each
        # policy gated by its own validation comparison: search pays for the weaker policy, not for the trained)
        rows += [best_of_row(4, "prm", "argmax", prm, gate_of(gate, "sft"), gated=True)]
        rows += [best_of(n, "logprob") for n in self.ns]
        rows += [best_of(n, "expert") for n in self.oracle_ns]
        rows += beam_rows(prm)
        if self.weak_policy:
            rows += [GridRow("weak-greedy", policy="weak")]
            rows += [best_of(4, scorer, selection, policy="weak", prefix="weak")
                     for scorer, selection in (("prm", "argmax"), *((("prm", "anchored"),) if self.anchored else ()),
                                               ("logprob", "argmax"), ("expert", "argmax"))]
            rows += [best_of_row(4, "prm", "argmax", prm, gate_of(gate, "weak"), policy="weak", prefix="weak",
                                 gated=True)]
            rows += beam_rows(prm, "weak") if self.weak_beam else []
        return rows

    def validation_rows_at(self, prm: str) -> list[GridRow]:
        """What the per-game gates are decided on: each policy's greedy and argmax PRM best-of-4 on the validation
        split (never the held-out instances)."""
        rows = [GridRow("sft-greedy"), best_of_row(4, "prm", "argmax", prm, "")]
        if self.weak_policy:
            rows += [GridRow("weak-greedy", policy="weak"),
                     best_of_row(4, "prm", "argmax", prm, "", policy="weak", prefix="weak")]
        return rows

    def steps(self, workdir: Path) -> list[tuple[str, list[str]]]:
        """(stage, argv) of the whole pipeline, every path under ``workdir``. The evaluations name the trained
        policy by its folder, so no stage reads the working directory's model registry."""
        w = lambda path: str(Path(workdir) / path)  # noqa: E731
        train, held_out, validation, policy = w(TRAIN), w(HELD_OUT), w(VALIDATION), w("sft-policy")
        s, games = self.seed, [flag for game, _, _ in self.games for flag in ("--game", game)]
        decoding = ["--max-tokens", str(self.max_tokens), "--seed", str(s)]
        eval_common = ["--games-dir", held_out, *games, *decoding]
        # the SFT run's half-way checkpoint (train-sft saves at 0.5 and 1.0 of its steps): a weaker policy with room
        # above greedy for any scorer
        policies = {"sft": policy, "weak": w(f"sft-policy/checkpoint-{self.sft_steps // 2}"),
                    "random": RANDOM_POLICY}
        vocabulary = ["--vocabulary", self.vocabulary] if self.vocabulary != "full" else []
        steps = [(f"instances train {game}", ["instances", "--out", train, "--seed", str(1000 + s),
                                              "--per-experiment", str(n_train), "--game", game, *vocabulary])
                 for game, n_train, _ in self.games]
        steps += [(f"instances held-out {game}", ["instances", "--out", held_out, "--seed", str(2000 + s),
                                                  "--per-experiment", str(n_held_out), "--game", game,
                                                  *vocabulary, "--exclude", train])
                  for game, _, n_held_out in self.games]
        steps += [(f"instances validation {game}", ["instances", "--out", validation, "--seed", str(3000 + s),
                                                    "--per-experiment", str(self.validation_instances), "--game",
                                                    game, *vocabulary, "--exclude", train, held_out])
                  for game, _, _ in self.games]
        steps += [
            ("collect teacher", ["collect", "--policy-model", "programmatic:expert", "--games-dir", train, *games,
                                 "--samples-per-instance", str(self.teacher_samples), "--temperature", "1.0",
                                 "--seed", str(s), "--results-dir", w("teacher")]),
            ("sft-data", ["sft-data", "--results-dir", w("teacher"), "--out", w("sft-data")]),
            # a model trained from scratch gets a tokenizer trained on its training texts (see models.tiny)
            ("make-tiny", ["make-tiny", "--out", w("base"), "--arch", "qwen3", "--layers", str(self.layers),
                           "--hidden", str(self.hidden), "--seed", str(s), "--tokenizer-data",
                           w("sft-data/train.jsonl"),
                           *(["--tokenizer-pieces", self.tokenizer_pieces] if self.tokenizer_pieces else [])]),
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
        steps += [(f"validation {row.name}", ["eval", "--policy-model", policies[row.policy], *row.flags,
                                              "--games-dir", validation, *games, *decoding,
                                              "--results-dir", w(f"validation/{row.name}")])
                  for row in self.validation_rows_at(w("prm"))]
        steps += [(f"validation report {kind}", ["report", "--compare", w(f"validation/{kind}-greedy"),
                                                 w(f"validation/{kind}-prm-bon4"), "--paired", f"{kind}-prm-bon4",
                                                 f"{kind}-greedy", "--out", w(f"validation/{kind}")])
                  for kind in self.kinds()]
        steps += [(f"eval {row.name}", ["eval", "--policy-model", policies[row.policy], *row.flags, *eval_common,
                                        "--results-dir", w(f"results/{row.name}")])
                  for row in self.rows(w("prm"), w("validation"))]
        if self.dpo or self.wsft:
            steps += self.weak_rollout_steps(w, policies, games)
        if self.dpo:
            steps += self.dpo_steps_of(w, policies, games, eval_common)
        if self.wsft:
            steps += self.wsft_steps_of(w, policies, eval_common)
        if self.grpo:
            steps += self.grpo_steps_of(w, policies, games, eval_common)
        if self.rounds >= 2:
            steps += self.expert_iteration_steps(w, policy, games, eval_common)
        steps.append(("summarize", ["summarize", "--workdir", str(workdir), "--preset", "small", "--seed", str(s),
                                    *self.summary_flags()]))
        return steps

    def game(self) -> str:
        """The preset's game (``--game``): the first of its games."""
        return self.games[0][0]

    def pipeline_flags(self) -> list[str]:
        """The ``pipeline`` options beyond ``--preset small --seed --workdir`` that make this preset, so that
        RESULTS.md's command reruns it."""
        flags = ["--game", self.game()] if self.game() != DEFAULT_GAME else []
        flags += ["--rounds", "2"] if self.rounds >= 2 else []
        return flags + [f"--{name}" for name in ("dpo", "wsft", "grpo") if getattr(self, name)]

    def summary_flags(self) -> list[str]:
        """summarize's options for this preset: its game (the grid) and the pipeline flags (the command line)."""
        flags = ["--game", self.game()] if self.game() != DEFAULT_GAME else []
        return flags + [f"--pipeline-flags={' '.join(self.pipeline_flags())}"] if self.pipeline_flags() else flags

    def expert_iteration_steps(self, w, policy: str, games: list[str], eval_common: list[str]) -> list[tuple[str, list[str]]]:
        """Expert iteration: the round-1 policy plays training instances with PRM-guided best-of-4, its wins become
        round-2 SFT data, the policy is trained on them further, and round-2 greedy is evaluated on the held-out
        instances (does the search distil back into the policy?)."""
        return [
            ("round 2 search", ["eval", "--policy-model", policy, "--mode", "best-of-n", "--n-candidates",
                                str(CARD["n_candidates"]),
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

    def dpo_steps_of(self, w, policies: dict[str, str], games: list[str],
                     eval_common: list[str]) -> list[tuple[str, list[str]]]:
        """SFT + DPO: pairs of sibling replies whose Monte-Carlo values differ (the trained policy's from the PRM's
        rollouts, the weaker policy's from its own), DPO of each policy with itself as the reference (full weights,
        as it was trained), and its greedy play on the held-out instances."""
        steps = []
        rollouts = self.rollouts_of(w)
        for kind in self.kinds():
            pairs, out = w(f"dpo/{kind}-pairs"), w(f"dpo/{kind}-dpo")
            steps += [
                (f"pref-data {kind}", ["pref-data", "--results-dir", rollouts[kind], "--min-gap",
                                       str(self.dpo_min_gap), "--out", pairs]),
                (f"train-dpo {kind}", ["train-dpo", "--model", policies[kind], "--data", pairs, "--output-dir", out,
                                       "--full-weights", "true", "--max-steps", str(self.dpo_steps),
                                       "--per-device-train-batch-size", str(self.dpo_batch), "--effective-batch-size",
                                       str(self.dpo_batch), "--per-device-eval-batch-size", str(2 * self.dpo_batch),
                                       "--learning-rate", str(self.dpo_learning_rate), "--beta", str(self.dpo_beta),
                                       "--loss-type", self.dpo_loss, "--eval-steps", "0.5", "--save-steps", "0.5", "--logging-steps", "10",
                                       "--activation-checkpointing", "false", "--seed", str(self.seed),
                                       "--model-name", f"{POLICY}-{kind}-dpo"]),
                (f"eval {kind}-dpo-greedy", ["eval", "--policy-model", out, *eval_common,
                                             "--results-dir", w(f"results/{kind}-dpo-greedy")]),
                # search on top of learning: does the PRM's best-of-4 add to what DPO gained?
                (f"eval {kind}-dpo-prm-bon4", ["eval", "--policy-model", out,
                                               *best_of_row(4, "prm", "argmax", w("prm"), "").flags, *eval_common,
                                               "--results-dir", w(f"results/{kind}-dpo-prm-bon4")]),
            ]
        return steps

    def kinds(self) -> tuple[str, ...]:
        """The policies learning rows start from: the trained one and, with ``weak_policy``, its checkpoint."""
        return ("sft", "weak") if self.weak_policy else ("sft",)

    @staticmethod
    def rollouts_of(w) -> dict[str, str]:
        """Each policy's own branched rollouts on training instances, which DPO and value-weighted SFT learn from:
        the trained policy's are the PRM's, the weaker policy's are collected for them."""
        return {"sft": w("rollouts"), "weak": w("dpo/weak-rollouts")}

    def weak_rollout_steps(self, w, policies: dict[str, str], games: list[str]) -> list[tuple[str, list[str]]]:
        """The weaker policy's own branched rollouts on training instances (for DPO and value-weighted SFT)."""
        if not self.weak_policy:
            return []
        return [("collect weak", ["collect", "--policy-model", policies["weak"], "--games-dir", w(TRAIN), *games,
                                  "--limit", str(self.dpo_weak_instances), "--samples-per-instance", "2",
                                  "--branch-factor", "2", "--branch-depth", "2", "--temperature", "1.0",
                                  "--max-tokens", str(self.max_tokens), "--seed", str(self.seed),
                                  "--results-dir", self.rollouts_of(w)["weak"]])]

    def wsft_steps_of(self, w, policies: dict[str, str], eval_common: list[str]) -> list[tuple[str, list[str]]]:
        """Value-weighted SFT: every policy turn of each policy's own rollouts, weighted (``wsft_weights``), trained
        into that policy further (full weights, as it was trained; DPO's budget), then played greedy held out."""
        steps = []
        for kind in self.kinds():
            data, out = w(f"wsft/{kind}-turns"), w(f"wsft/{kind}-wsft")
            steps += [
                (f"sft-data wsft {kind}", ["sft-data", "--results-dir", self.rollouts_of(w)[kind], "--weights",
                                           self.wsft_weights, "--out", data]),
                (f"train-wsft {kind}", ["train-sft", "--model", policies[kind], "--data", data, "--output-dir", out,
                                        "--full-weights", "true", "--max-steps", str(self.dpo_steps),
                                        "--per-device-train-batch-size", str(self.dpo_batch), "--effective-batch-size",
                                        str(self.dpo_batch), "--per-device-eval-batch-size", str(2 * self.dpo_batch),
                                        "--learning-rate", str(self.dpo_learning_rate), "--eval-steps", "0.5",
                                        "--save-steps", "0.5", "--logging-steps", "10", "--max-length", "1024",
                                        "--activation-checkpointing", "false", "--seed", str(self.seed),
                                        "--model-name", f"{POLICY}-{kind}-wsft"]),
                (f"eval {kind}-wsft-greedy", ["eval", "--policy-model", out, *eval_common,
                                              "--results-dir", w(f"results/{kind}-wsft-greedy")]),
            ]
        return steps

    def grpo_steps_of(self, w, policies: dict[str, str], games: list[str],
                      eval_common: list[str]) -> list[tuple[str, list[str]]]:
        """GRPO: each policy trained online on the training instances (full weights, as it was trained), then
        played greedy and with the PRM's best-of-4 on the held-out instances."""
        steps = []
        for kind in reversed(self.kinds()):  # the weaker policy first: its rows are the ones with room to gain
            out = w(f"grpo/{kind}-grpo")
            steps += [
                (f"train-grpo {kind}", ["train-grpo", "--model", policies[kind], "--games-dir", w(TRAIN), *games,
                                        "--output-dir", out, "--full-weights", "true", "--max-steps",
                                        str(self.grpo_steps), "--num-generations", str(self.grpo_generations),
                                        "--effective-batch-size", str(self.grpo_batch),
                                        "--per-device-train-batch-size", str(min(16, self.grpo_batch)), "--learning-rate",
                                        str(self.grpo_trained_learning_rate if kind == "sft"
                                            else self.grpo_learning_rate), "--lr-scheduler-type", "constant",
                                        "--warmup-steps", "0", "--temperature", str(self.grpo_temperature),
                                        "--max-tokens", str(self.max_tokens), "--save-steps", "0.5",
                                        "--seed", str(self.seed), "--model-name", f"{POLICY}-{kind}-grpo"]),
                (f"eval {kind}-grpo-greedy", ["eval", "--policy-model", out, *eval_common,
                                              "--results-dir", w(f"results/{kind}-grpo-greedy")]),
                (f"eval {kind}-grpo-prm-bon4", ["eval", "--policy-model", out,
                                                *best_of_row(4, "prm", "argmax", w("prm"), "").flags, *eval_common,
                                                "--results-dir", w(f"results/{kind}-grpo-prm-bon4")]),
            ]
            if kind == "weak" and self.grpo_variants:  # the same run with turn-level credit, one change each
                train = dict(steps)[f"train-grpo {kind}"]
                for variant, flags in self.grpo_variant_flags(w("prm")):
                    out = w(f"grpo/{kind}-grpo-{variant}")
                    at = train.index("--output-dir") + 1
                    steps += [(f"train-grpo-{variant} {kind}", [*train[:at], out, *train[at + 1:], *flags]),
                              (f"eval {kind}-grpo-{variant}-greedy", ["eval", "--policy-model", out, *eval_common,
                                                                       "--results-dir",
                                                                       w(f"results/{kind}-grpo-{variant}-greedy")])]
        return steps

    def grpo_variant_flags(self, prm: str) -> list[tuple[str, list[str]]]:
        """(variant, train-grpo flags) of the GRPO runs with turn-level credit: tree step groups, and PRM shaping
        at each λ (``prm`` λ 1, ``prm0.5`` ...)."""
        shaped = [(f"prm{'' if lam == 1 else f'{lam:g}'}", ["--prm-path", prm, "--prm-lambda", f"{lam:g}"])
                  for lam in self.grpo_lambdas]
        branch = ["--branch-factor", str(self.grpo_tree_branch)] if self.grpo_tree_branch else []
        return [("tree", ["--advantage", "tree", *branch]), *shaped]

    def grid(self) -> list[GridRow]:
        """Every row the summary may find under ``results/``, in table order: base greedy, the evaluation grid,
        and the rows of the opt-in flags (present only where they ran: anchored, ``--rounds 2``, --dpo, --wsft,
        --grpo)."""
        from dataclasses import replace

        variants = [GridRow(f"weak-grpo-{variant}-greedy", policy=f"weak-grpo-{variant}")
                    for variant, _ in self.grpo_variant_flags("")]
        return [GridRow("base-greedy", policy="base"),
                *replace(self, anchored=True, random_row=True, weak_beam=True).rows(),
                GridRow(ROUND2_ROW, policy="round2"), *DPO_ROWS, *WSFT_ROWS, *GRPO_ROWS, *variants]


DEFAULT_GAME = "referencegame"
# pipeline --preset small --game NAME: the fields each game changes (SmallPreset's defaults are the reference game's)
GAME_SETTINGS = {
    "referencegame": {},
    # 300 targets in all, each in one split: 200 to train on, 70 held out, 30 for validation (the gates). The teacher
    # plays each training target 16 times (its noisy moves are other consistent words, so the episodes differ; 16
    # rather than 8 raised SFT greedy from 15.20 to 22.38 at 800 steps on seed 0's probe, BENCHMARKS.md) and
    # the PRM's and the weaker policy's branched rollouts cover every training target
    "wordle": {"games": (("wordle", 200, 70),), "vocabulary": "small", "tokenizer_pieces": "wordle",
               "validation_instances": 30,
               "teacher_samples": 16, "rollout_instances": 200, "dpo_weak_instances": 200, "random_row": True,
               "grpo_variants": True, "grpo_tree_branch": 2,
               # the expert's reply spells its work out (about 26 tokens); best-of-N at the card's N alone, for time
               "max_tokens": 48, "ns": (4,), "oracle_ns": (4,),
               # for time on 2 cores: a GRPO step plays 64 episodes of up to six turns (a quarter of the reference
               # game's steps, each of the five GRPO runs), and the PRM trains about half as long
               "grpo_steps": 50, "prm_steps": 800},
    # TextArena's Mastermind-v0 code (4 different digits of 1-6) in six guesses: 360 codes, each in one split (240
    # to train on, 60 held out, 60 for validation); wordle's sizes otherwise, a reply is the bare code ("[2 1 4 5]",
    # about 10 tokens) and the tokenizer reads a code digit by digit
    "mastermind": {"games": (("mastermind", 240, 60),), "tokenizer_pieces": "mastermind", "validation_instances": 60,
                   "teacher_samples": 16, "rollout_instances": 240, "dpo_weak_instances": 240, "random_row": True,
                   "grpo_variants": True, "grpo_tree_branch": 2, "max_tokens": 16, "ns": (4,), "oracle_ns": (4,),
                   "grpo_steps": 50, "prm_steps": 800},
    # TextArena's GuessTheNumber-v0 range (1-100) in ten guesses: 60 numbers to train on, 20 held out, 20 for
    # validation; the mastermind settings otherwise (the teacher plays each training number 32 times: its noisy moves
    # are other numbers inside the hints, so the episodes differ)
    "guessthenumber": {"games": (("guessthenumber", 60, 20),), "tokenizer_pieces": "guessthenumber",
                       "validation_instances": 20, "teacher_samples": 32, "rollout_instances": 60,
                       "dpo_weak_instances": 60, "random_row": True, "grpo_variants": True, "grpo_tree_branch": 2,
                       "max_tokens": 8, "ns": (4,), "oracle_ns": (4,), "grpo_steps": 50, "prm_steps": 800},
}


def small_preset(game: str = DEFAULT_GAME, **fields) -> SmallPreset:
    """The small preset on ``game`` (``GAME_SETTINGS``), with ``fields`` (seed, opt-in rows) set."""
    if game not in GAME_SETTINGS:
        from playprm.errors import UsageError

        raise UsageError(f"--game {game}: the small preset plays {', '.join(GAME_SETTINGS)}")
    return SmallPreset(**{**GAME_SETTINGS[game], **fields})


def beam_rows(prm: str, policy: str = "sft") -> list[GridRow]:
    """The PRM's beam searches at the card's settings: ``<policy>-beam`` (the card's, with the environment's
    lookahead: reported apart) and ``<policy>-lf-beam`` (lookahead-free)."""
    n, prm_flags = CARD["n_candidates"], ("--prm-path", prm)
    beam = ("--n-candidates", str(n), "--beam-width", str(CARD["beam_width"]))
    return [GridRow(f"{policy}-beam", ("--mode", "beam-search", *beam, "--num-beam-iterations", "4", *prm_flags), n,
                    "prm", policy=policy),
            GridRow(f"{policy}-lf-beam", ("--mode", "lf-beam", *beam, *prm_flags), n, "prm", policy=policy)]


def gate_of(gate: str, policy: str) -> str:
    """The paired.json a policy's gated row reads: ``gate/<policy>/paired.json`` (its validation comparison)."""
    return str(Path(gate) / policy / "paired.json")


def best_of_row(n: int, scorer: str, selection: str, prm: str, gate: str, *, policy: str = "sft", prefix: str = "sft",
             gated: bool = False) -> GridRow:
    """A best-of-N row: ``scorer`` "prm", "logprob" or "expert", ``selection`` "argmax" or "anchored" (the margin
    from the PRM's validation rollouts), ``gated`` guided only where the validation comparison ``gate`` says."""
    flags = ("--mode", "best-of-n", "--n-candidates", str(n))
    flags += ("--prm-path", prm) if scorer == "prm" else ("--scorer", scorer)
    tag = {"prm": "prm", "logprob": "logprob", "expert": "oracle"}[scorer]
    if selection == "anchored":
        flags += ("--selection", "anchored", "--switch-margin", "auto")
        tag += "-anchored"
    if gated:
        flags += ("--guide-games", "auto", "--gate-from", gate)
        tag += "-gated"
    return GridRow(f"{prefix}-{tag}-bon{n}", flags, n, scorer, selection, policy, gated)


HELD_OUT = "splits/heldout"
TRAIN = "splits/train"
VALIDATION = "splits/validation"  # the per-game gate's split: shares no instance with train or held-out

ROUND2_ROW = "sft-round2-greedy"  # expert iteration (--rounds 2)
# a player that makes random valid moves (in wordle a random word consistent with all feedback so far: a
# stronger baseline than a random word of the list), sampled; what a trained policy has to be clearly above
RANDOM_POLICY = "scripted:random-valid"
RANDOM_ROW = GridRow("random-valid", ("--temperature", "1.0"), policy="random")
DPO_ROWS = (GridRow("sft-dpo-greedy", policy="sft-dpo"), GridRow("weak-dpo-greedy", policy="weak-dpo"),  # --dpo
            GridRow("sft-dpo-prm-bon4", n=4, scorer="prm", selection="argmax", policy="sft-dpo"),
            GridRow("weak-dpo-prm-bon4", n=4, scorer="prm", selection="argmax", policy="weak-dpo"))

GRPO_ROWS = tuple(row for kind in ("sft", "weak") for row in (  # --grpo
    GridRow(f"{kind}-grpo-greedy", policy=f"{kind}-grpo"),
    GridRow(f"{kind}-grpo-prm-bon4", n=4, scorer="prm", selection="argmax", policy=f"{kind}-grpo")))
WSFT_ROWS = (GridRow("sft-wsft-greedy", policy="sft-wsft"), GridRow("weak-wsft-greedy", policy="weak-wsft"))  # --wsft

# the paired comparisons RESULTS.md shows (rows of the grid); the round-2 ones where that row exists.
# expert best-of-4 - greedy is the room any scorer has at N = 4: where its CI holds 0, no PRM can show a gain
PAIRS = [("sft-greedy", "base-greedy"), ("sft-greedy", "random-valid"), ("weak-greedy", "random-valid"),
         ("sft-greedy", "weak-greedy"), ("sft-prm-bon4", "sft-greedy"), ("sft-prm-bon4", "sft-logprob-bon4"),
         ("sft-prm-bon8", "sft-prm-bon4"), ("sft-prm-bon16", "sft-prm-bon8"), ("sft-oracle-bon4", "sft-greedy"),
         ("sft-oracle-bon4", "sft-prm-bon4"),
         # guidance that has to earn each switch (issue 24): anchored against greedy, against N = 4, and gated
         ("sft-prm-anchored-bon2", "sft-greedy"), ("sft-prm-anchored-bon4", "sft-greedy"),
         ("sft-prm-anchored-bon8", "sft-greedy"), ("sft-prm-anchored-bon16", "sft-greedy"),
         ("sft-prm-anchored-bon16", "sft-prm-anchored-bon4"), ("sft-prm-anchored-bon4", "sft-logprob-bon4"),
         ("sft-prm-anchored-bon4", "sft-prm-bon4"),
         # the card's best-of-4, guided where it beat greedy on the validation split (a gate per policy)
         ("sft-prm-gated-bon4", "sft-greedy"), ("weak-prm-gated-bon4", "weak-greedy"),
         # the weaker policy, where any scorer has room
         ("weak-oracle-bon4", "weak-greedy"), ("weak-prm-bon4", "weak-greedy"), ("weak-prm-anchored-bon4", "weak-greedy"),
         ("weak-prm-anchored-bon4", "weak-logprob-bon4"), ("weak-logprob-bon4", "weak-greedy"),
         (ROUND2_ROW, "sft-greedy"), (ROUND2_ROW, "sft-prm-bon4"),
         # SFT + DPO (--dpo), against greedy and the PRM's best-of-4 of the same policy
         ("sft-dpo-greedy", "sft-greedy"), ("weak-dpo-greedy", "weak-greedy"), ("sft-dpo-greedy", "sft-prm-bon4"),
         ("weak-dpo-greedy", "weak-prm-bon4"),
         # search on top of learning: the PRM's best-of-4 of the DPO policy, against its greedy and SFT greedy
         ("sft-dpo-prm-bon4", "sft-dpo-greedy"), ("weak-dpo-prm-bon4", "weak-dpo-greedy"),
         ("sft-dpo-prm-bon4", "sft-greedy"), ("weak-dpo-prm-bon4", "weak-greedy"),
         # value-weighted SFT (--wsft) on the same rollouts: against greedy and against DPO
         ("sft-wsft-greedy", "sft-greedy"), ("weak-wsft-greedy", "weak-greedy"), ("sft-wsft-greedy", "sft-dpo-greedy"),
         ("weak-wsft-greedy", "weak-dpo-greedy"),
         # online RL (--grpo): against greedy, against DPO, and search on top of it
         ("sft-grpo-greedy", "sft-greedy"), ("weak-grpo-greedy", "weak-greedy"), ("sft-grpo-greedy", "sft-dpo-greedy"),
         ("weak-grpo-greedy", "weak-dpo-greedy"), ("weak-grpo-greedy", "weak-wsft-greedy"),
         ("sft-grpo-prm-bon4", "sft-grpo-greedy"), ("weak-grpo-prm-bon4", "weak-grpo-greedy"),
         # the PRM's beam searches on the weaker policy, and GRPO with turn-level credit against episode GRPO
         ("weak-beam", "weak-greedy"), ("weak-lf-beam", "weak-greedy"),
         *((f"weak-grpo-{v}-greedy", b) for v in ("tree", "prm", "prm0.5") for b in ("weak-grpo-greedy", "weak-greedy"))]

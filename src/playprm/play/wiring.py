"""``playprm eval``'s wiring: a validated EvalConfig's run job (``run_job.open_run``), policy, PRM and strategy
handed to the runner (``run_eval``); ``episode_player`` is the one callable the runner takes for every mode. Used by eval,
the pipeline and the benchmarks; ``collect`` opens the same run job for its rollouts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from playprm.play.config import EvalConfig
from playprm.search import greedy
from playprm.search.base import SearchSettings
from playprm.search.modes import MODES


def guide_filter(guide_roles: list[str] | None, guided_games=None):
    """``is_guided(turn)``: whether a pending turn goes to the guided strategy: its role is among ``guide_roles``
    and its game among ``guided_games`` (None: every role, every game)."""
    roles = None if not guide_roles else {r.lower() for r in guide_roles}
    games = None if guided_games is None else set(guided_games)
    return lambda turn: (roles is None or turn.game_role.lower() in roles) and (games is None or turn.game in games)


def cached_tokens(choice) -> int | None:
    """Context tokens of a turn the policy's engine found in its prefix cache (its candidates share the context;
    vLLM says, the other backends do not: ``None``)."""
    return choice.candidates[0].cached_tokens if choice.candidates else None


def turn_player(mode: str, policy, scorer, settings: SearchSettings, is_guided, guided_games=None):
    """``play(episodes) -> episodes`` of a per-turn ``mode``: one batched call for the pending turns of all
    episodes in flight; guided turns go to the mode's strategy, the others to ``greedy`` (a plain sample at
    ``settings.temperature``), except in games outside ``guided_games`` (a per-game gate; None: no gate), which
    play at temperature 0. Every strategy takes ``choose(contexts, policy, scorer, settings, rejected=...)``."""
    ranked = MODES[mode].guided  # the mode ranks candidates with the scorer; an unguided mode plays plain turns only
    strategy = MODES[mode].strategy()
    gated_settings = replace(settings, temperature=0.0)  # replace keeps the seed stream: the same seeds as before

    def play(episodes):
        pending = [e for e in episodes if not e.done]
        guided = [e for e in pending if ranked and is_guided(e.pending)]
        rest = [e for e in pending if not (ranked and is_guided(e.pending))]
        gated_out = [guided_games is not None and e.pending.game not in guided_games for e in rest]
        if guided:
            choices = strategy.choose([e.pending.context for e in guided], policy, scorer, settings,
                                      rejected=[e.pending.rejected for e in guided])
            for e, c in zip(guided, choices):
                e.turn_scores.append(c.scores[c.chosen])
                e.play(c.text, log=c.log(mode), generated_tokens=c.generated_tokens, prm_tokens=c.prm_tokens,
                       prefill_tokens=c.prefill_tokens, cached_tokens=cached_tokens(c))
        play_plain([e for e, out in zip(rest, gated_out) if not out], settings)
        play_plain([e for e, out in zip(rest, gated_out) if out], gated_settings)
        return episodes

    def play_plain(plain, plain_settings: SearchSettings):
        if plain:
            choices = greedy.choose([e.pending.context for e in plain], policy, scorer, plain_settings,
                                    rejected=[e.pending.rejected for e in plain])
            for e, c in zip(plain, choices):
                e.play(c.text, log=c.log("greedy" if plain_settings.temperature == 0 else "sample"),
                       generated_tokens=c.generated_tokens, prefill_tokens=c.prefill_tokens,
                       cached_tokens=cached_tokens(c))

    return play


def episode_player(mode: str, policy, scorer, settings: SearchSettings, is_guided, guided_games=None):
    """``play(episodes) -> episodes`` of any ``mode``, the one callable ``runner.play`` takes: a per-turn mode
    plays one turn of each episode (``turn_player``), a per-episode mode plays each to its end and returns the
    finished trajectories in their place (``search(roots, policy, scorer, settings, is_guided=, mode=)``)."""
    if not MODES[mode].per_episode:
        return turn_player(mode, policy, scorer, settings, is_guided, guided_games)
    search = MODES[mode].strategy().search
    return lambda roots: search(roots, policy, scorer, settings, is_guided=is_guided, mode=mode)


def run_eval(cfg: EvalConfig, *, policy=None, scorer=None, progress: bool = True):
    """Validate everything, then load models and play; returns (run_dir, RunSummary)."""
    cfg.validate()  # the flags first: a wrong one is one line before clemcore's games and torch load (seconds)
    if progress and cfg.guide_games == "auto":  # the gate's decision, before the run's minutes are spent on it
        for game, reason in (cfg.gate_reasons or {}).items():
            print(f"--guide-games auto: {game} {reason}", flush=True)
    from playprm.models.registry import resolve_policy
    from playprm.models.vllm_policy import check_installed
    from playprm.play import runner
    from playprm.play.job import open_run, prepare_games
    from playprm.play.players import check_scripted_games, load_policy, load_scorer
    from playprm.transformers_runtime import choose_cpu_threads

    entries, instances = prepare_games(cfg.games, cfg.game_all, cfg.games_dir, cfg.limit, experiment=cfg.experiment,
                                       instances_file=cfg.instances)
    spec = policy.spec if policy is not None else resolve_policy(cfg.policy_model)
    cfg.validate_backend(spec.backend, spec.name)
    check_scripted_games(spec, entries)
    if policy is None:
        check_installed(spec.backend)
    prm_path = str(Path(cfg.prm_path).resolve()) if cfg.prm_path else None
    threads = choose_cpu_threads(spec.model_id)  # once per run, by the policy's size, before any model loads
    with open_run(cfg.results_dir, spec, cfg.mode_tag(), entries, instances,
                  settings={**cfg.decoding(), "prm_path": prm_path}, temperature=cfg.temperature,
                  max_tokens=cfg.max_tokens, skip_broken=cfg.skip_broken_games, shard=cfg.shard) as job:
        if policy is None:
            policy = load_policy(spec)
        if scorer is None and cfg.decoding_mode.guided:  # EvalConfig allows other scorers with best-of-n only
            scorer = load_scorer(cfg.scorer, prm_path=cfg.prm_path, load_in_4bit=spec.load_in_4bit)
        # each game's clemgame.json benchmark tags: report splits clemscore / statscore without --games-dir
        job.write_metadata({**cfg.recorded(), "policy": spec.describe(), "prm_path": prm_path,
                            "cpu_threads": threads,  # the torch threads of this process (the latest, when resumed)
                            "broken_games": job.broken_games, "game_benchmarks": job.game_benchmarks})
        play = episode_player(cfg.mode, policy, scorer, cfg.search_settings(),
                              guide_filter(cfg.guide_roles, cfg.guided_games), cfg.guided_games)
        summary = runner.play(
            job.tasks, policy_name=job.name, run_dir=job.run_dir, gen_args=job.gen_args, batch_size=cfg.batch_size,
            retry_errors=cfg.retry_errors, broken=job.broken, progress=progress, play_episodes=play)
    return job.run_dir, summary

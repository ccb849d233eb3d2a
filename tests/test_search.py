"""Search strategies with a scripted policy (random valid wordle moves) and a scripted PRM that knows the answer."""

from __future__ import annotations

import random

import pytest
from wordle_oracle import WordleOracleScorer

from playprm.episode import Episode, EpisodeTask
from playprm.games.builtin.scripted import RandomValidPolicy
from playprm.play.config import default_search_settings
from playprm.play.job import plan
from playprm.play.wiring import guide_filter, turn_player
from playprm.search import beam_search, dvts
from playprm.search.base import aggregate, argmax


@pytest.fixture(scope="module")
def wordle():
    from clemcore.clemgame import GameBenchmark

    from playprm.games.builtin.wordle import rules
    from playprm.games.registry import discover_games

    benchmark = GameBenchmark.load_from_spec(discover_games()["wordle"].spec)
    targets = random.Random(0).sample(rules.valid_words(), 60)
    yield benchmark, targets
    benchmark.close()


GUESSES = 3  # fewer than wordle's six, so that random valid guessing often loses


def start(benchmark, target, tmp_path, i):
    task = EpisodeTask(game="wordle", benchmark=benchmark, experiment={"name": "oracle", "max_guesses": GUESSES},
                       instance={"game_id": i, "target_word": target, "max_guesses": GUESSES},
                       episode_dir=tmp_path / f"instance_{i:05d}")
    return Episode.start(task, "scripted", "scripted--scripted", {})


def play_best_of_n(benchmark, target, n, tmp_path, i, seed):
    episode = start(benchmark, target, tmp_path, i)
    settings = default_search_settings(n_candidates=n, temperature=1.0, max_tokens=32, seed=seed)
    mode = "best-of-n" if n > 1 else "greedy"
    choose = turn_player(mode, RandomValidPolicy(), WordleOracleScorer(target), settings, guide_filter(None))
    while not episode.done:
        choose([episode])
    return episode


def test_best_of_n_win_rate_rises_with_n(wordle, tmp_path, report_figure):
    benchmark, targets = wordle
    rates = {}
    for n in (1, 4, 16):
        wins = [play_best_of_n(benchmark, t, n, tmp_path, i, seed=i).outcome == "success"
                for i, t in enumerate(targets)]
        rates[n] = sum(wins) / len(wins)
    report_figure(f"wordle best-of-N win rate by N, oracle scorer ({len(targets)} targets): "
                  + ", ".join(f"N={n} {rate:.2f}" for n, rate in rates.items()))
    assert rates[1] < rates[4] < rates[16], rates


def test_best_of_n_plays_the_argmax_candidate(wordle, tmp_path):
    benchmark, targets = wordle
    episode = play_best_of_n(benchmark, targets[0], 8, tmp_path, 0, seed=3)
    played = [e["action"]["content"] for rnd in episode.recorders.interactions.interactions["turns"] for e in rnd
              if e["action"]["type"] == "get message"]
    assert len(played) == len(episode.candidates)
    for row, text in zip(episode.candidates, played):
        scores = [c["score"] for c in row["candidates"]]
        assert row["chosen"] == argmax(scores)
        assert row["candidates"][row["chosen"]]["text"] == text


@pytest.mark.parametrize("search", [beam_search.search, dvts.search])
def test_lookahead_search_with_an_oracle_beats_greedy(wordle, tmp_path, search):
    benchmark, targets = wordle
    targets = targets[:30]
    greedy_wins = 0
    for i, t in enumerate(targets):
        episode = start(benchmark, t, tmp_path, i)
        plain = default_search_settings(max_tokens=32, temperature=0.0)
        choose = turn_player("greedy", RandomValidPolicy(), None, plain, guide_filter(None))
        while not episode.done:
            choose([episode])
        greedy_wins += episode.outcome == "success"
    search_wins = 0
    for i, t in enumerate(targets):
        root = start(benchmark, t, tmp_path, i)
        settings = default_search_settings(n_candidates=4, beam_width=2, temperature=1.0, max_tokens=32,
                                           num_beam_iterations=6, aggregate="last", seed=i)
        (final,) = search([root], RandomValidPolicy(), WordleOracleScorer(t), settings, is_guided=guide_filter(None))
        assert final.done
        search_wins += final.outcome == "success"
    assert search_wins > greedy_wins


def test_beam_search_keeps_the_best_trajectories_and_charges_the_whole_search(wordle, tmp_path):
    benchmark, targets = wordle
    roots = [start(benchmark, t, tmp_path, i) for i, t in enumerate(targets[:3])]
    settings = default_search_settings(n_candidates=3, beam_width=2, temperature=1.0, max_tokens=32,
                                       num_beam_iterations=2)
    finals = beam_search.search(roots, RandomValidPolicy(), WordleOracleScorer(targets[0]), settings,
                                is_guided=guide_filter(None))
    for final in finals:
        assert final.done
        played_tokens = sum(r["candidates"][r["chosen"]]["tokens"] for r in final.candidates)
        assert final.generated_tokens > played_tokens  # unplayed candidates are paid for too


def test_aggregates():
    assert aggregate([0.5, 0.2, 0.9], "last") == 0.9
    assert aggregate([0.5, 0.2, 0.9], "min") == 0.2
    assert aggregate([0.5, 0.2, 0.9], "mean") == pytest.approx(0.5333, abs=1e-3)
    assert aggregate([0.5, 0.2, 0.9], "prod") == pytest.approx(0.09)
    assert argmax([0.1, 0.7, 0.7]) == 1


def test_shards_partition_the_plan(tmp_path):
    class Entry:
        name = "g"

    instances = {"g": [({"name": "e"}, {"game_id": i}) for i in range(10)]}
    full = plan([Entry()], instances, {"g": object()}, tmp_path)
    shards = [plan([Entry()], instances, {"g": object()}, tmp_path, shard=(i, 3)) for i in range(3)]
    keys = sorted(t.key for s in shards for t in s)
    assert keys == sorted(t.key for t in full)


class ChunkPolicy:
    """Continues a reply with fixed chunks: 'A' chunks are good, 'B' chunks bad; the third chunk ends the reply."""

    def __init__(self):
        self.prefixes_seen = []

    def generate(self, contexts, *, n=1, temperature=0.0, max_tokens=8, seed=None, prefixes=None):
        from playprm.models.base import Candidate

        self.prefixes_seen.append(list(prefixes))
        out = []
        for prefix in prefixes:
            depth = prefix.count("|")
            out.append([Candidate(text=f"{'AB'[k % 2]}{depth}|", num_tokens=2, logprob=-1.0, finished=depth >= 2)
                        for k in range(n)])
        return out


class CountingScorer:
    """Scores a partial reply by its share of good chunks."""

    def __init__(self):
        from playprm.prm.scorer import ScoreStats

        self.stats = ScoreStats()

    def score_candidates(self, contexts, candidates):
        return [[c.text.count("A") / max(1, c.text.count("|")) for c in group] for group in candidates]


def test_lookahead_free_beam_grows_the_reply_the_prm_ranks_best_without_the_game():
    from playprm.search import lookahead_free_beam

    policy = ChunkPolicy()
    settings = default_search_settings(n_candidates=4, beam_width=2, max_tokens=64, num_beam_iterations=8,
                                       temperature=1.0)
    (choice,) = lookahead_free_beam.choose([[{"role": "user", "content": "go"}]], policy, CountingScorer(), settings)
    assert choice.text == "A0|A1|A2|"
    assert all(len(p) <= 2 for p in policy.prefixes_seen)  # never more than beam_width partial replies
    assert choice.generated_tokens == 2 * (2 + 4 + 4)  # all sampled continuations are charged
    assert choice.scores[choice.chosen] == max(choice.scores)


def test_lookahead_free_beam_is_an_honest_mode(tiny_models, tmp_path):
    import json

    from playprm.play.config import EvalConfig
    from playprm.play.wiring import run_eval

    cfg = EvalConfig(policy_model=str(tiny_models["policy"]), mode="lf-beam", prm_path=tiny_models["prm"],
                     games=["referencegame"], limit=1, max_tokens=16, n_candidates=4, beam_width=2,
                     num_beam_iterations=2, results_dir=tmp_path)
    run_dir, summary = run_eval(cfg, progress=False)
    meta = json.loads((run_dir / "playprm_run.json").read_text())
    assert meta["mode"] == "lf-beam" and meta["env_lookahead"] is False
    assert sum(summary.played.values()) == 2

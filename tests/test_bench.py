"""The benchmark suite measures like for like: its A/B paths produce the same outputs at tiny sizes, its
timing alternates paths, its report keeps the hand-written parts of BENCHMARKS.md. No timed assertions."""

from __future__ import annotations

import pytest
import torch

from playprm.bench import episodes, generation, report, scoring, workload
from playprm.bench.timing import alternate, linear_fit, rss_bytes
from playprm.cli import main


@pytest.fixture(scope="module")
def pair(card_models) -> workload.ModelPair:
    workload.quiet()
    return workload.ModelPair(workload.TINY, card_models["policy"], card_models["prm"])


@pytest.fixture(scope="module")
def policy(pair):
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy

    return HFPolicy(resolve_policy(str(pair.policy)))


def test_alternate_runs_every_path_once_per_round_in_turn():
    calls = []
    trial = alternate({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2}, pairs=3, warmup=1)
    assert calls == ["a", "b"] * 4  # one warm-up round, then A B A B A B
    assert [len(t) for t in trial.times.values()] == [3, 3]
    assert trial.outputs == {"a": 1, "b": 2}


def test_linear_fit_recovers_a_line_exactly():
    slope, intercept, r2 = linear_fit([2, 4, 8, 16], [1.5 + 0.25 * x for x in [2, 4, 8, 16]])
    assert slope == pytest.approx(0.25) and intercept == pytest.approx(1.5) and r2 == pytest.approx(1.0)


def test_rss_is_read_from_proc():
    assert rss_bytes() > 10 * 2**20


def test_clemcore_loader_leaves_torch_threads_as_they_were(pair, tmp_path, policy):
    before = torch.get_num_threads()
    workspace = workload.write_clem_workspace(tmp_path / "ws", "bench-test", pair.policy, policy.tokenizer)
    _, pinned = workload.load_clemcore_model(workload.clem_model_entry(workspace),
                                             {"temperature": 0.0, "max_tokens": 4})
    assert pinned == 1  # what clemcore's get_model_for sets
    assert torch.get_num_threads() == before


def test_generation_paths_give_the_same_greedy_candidates(pair, tmp_path, policy):
    workspace = workload.write_clem_workspace(tmp_path / "ws", "bench-test", pair.policy, policy.tokenizer)
    clem_model, threads = workload.load_clemcore_model(workload.clem_model_entry(workspace),
                                                       {"temperature": 0.0, "max_tokens": 6})
    contexts = workload.game_contexts(3)
    outputs = {name: call() for name, call in
               generation.paths_for(policy, clem_model, threads, contexts, 2, 0.0, 6).items()}
    assert set(outputs) == {"batched", "per_candidate", "num_return_sequences", "clemcore"}
    expected = [[text.strip() for text in group] for group in outputs["batched"].texts]
    assert all(len(set(group)) == 1 and len(group) == 2 for group in expected)  # greedy: n equal copies
    for name, output in outputs.items():
        assert [[text.strip() for text in group] for group in output.texts] == expected, name


def test_shared_prm_scores_equal_naive_scores_on_the_benchmark_workload(pair):
    from playprm.prm.scorer import PRMScorer

    scorer = PRMScorer.from_path(pair.prm)
    contexts, candidates = scoring.workload_for(scorer.tokenizer, 2, 200, 3, 12)
    shared, naive = scorer.score(contexts, candidates), scorer.score_naive(contexts, candidates)
    assert [len(group) for group in shared] == [3, 3]
    assert shared == [pytest.approx(group, abs=1e-5) for group in naive]


def test_long_context_comes_close_to_its_token_target(policy):
    from playprm import chat

    lengths = [len(chat.prompt_ids(policy.tokenizer, workload.long_context(policy.tokenizer, 600, offset=i)))
               for i in range(2)]
    assert all(500 <= n <= 600 for n in lengths)


def test_playprm_eval_and_clem_run_processes_play_the_same_greedy_turns(pair, tmp_path, policy):
    workspace = workload.write_clem_workspace(tmp_path / "ws", episodes.CLEM_MODEL, pair.policy, policy.tokenizer)
    runs = episodes.Runs(tmp_path / "runs")
    games = ["wordle"]  # clem run has no instance limit: every instance of the game, both sides
    assert episodes.playprm_eval_process(pair, runs, games=games, limit=None, max_tokens=4) > 0
    assert episodes.clem_run_process(workspace, runs, games=games, batch_size=8, max_tokens=4) > 0
    ours, theirs = episodes.replies(runs.last["playprm"]), episodes.replies(runs.last["clem-b8"])
    assert len(ours) == len(theirs) == 20
    assert episodes.same_replies(ours, theirs) == 20


def test_user_processes_run_without_the_suites_openmp_settings(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setenv(workload.SUITE_WAIT_POLICY, "1")
    env = workload.user_env()
    assert "OMP_NUM_THREADS" not in env and "OMP_WAIT_POLICY" not in env
    assert workload.user_env(threads=2)["OMP_NUM_THREADS"] == "2"
    monkeypatch.delenv(workload.SUITE_WAIT_POLICY)  # the user's own wait policy stays
    assert workload.user_env()["OMP_WAIT_POLICY"] == "PASSIVE"


def test_multiturn_workload_stages_are_playprm_commands():
    from playprm.cli import build_parser

    parser = build_parser()
    stages = workload.MultiturnRecipe().stages()
    assert [stage for stage, _ in stages] == ["collect teacher", "sft-data", "make-tiny", "train-sft"]
    for _, argv in stages:
        assert parser.parse_args(argv).command == argv[0]


def test_prefill_by_turn_averages_each_turn_index_over_the_episodes_that_reached_it():
    from playprm.bench.growth import cumulative, prefill_by_turn

    costs = {"turns": [[{"prefill_tokens": 300}, {"prefill_tokens": 30}, {"prefill_tokens": 40}],
                       [{"prefill_tokens": 100}, {"prefill_tokens": 50}], []]}
    assert prefill_by_turn(costs) == [(1, 200.0, 2), (2, 40.0, 2), (3, 40.0, 1)]
    assert cumulative(prefill_by_turn(costs)) == [200.0, 240.0, 280.0]


def test_valid_guess_policy_keeps_wordle_episodes_going_past_the_first_turn(pair, tmp_path, policy):
    from playprm.play.wiring import run_eval

    wrapped = workload.ValidGuessPolicy(policy, workload.wordle_words())
    config = episodes.eval_config(str(pair.policy), tmp_path / "r", limit=1, max_tokens=3, games=["wordle"])
    run_dir, summary = run_eval(config, policy=wrapped, progress=False)
    costs = episodes.run_costs(run_dir)
    assert costs["episodes"] == sum(summary.played.values()) == 2
    assert costs["policy_turns"] > costs["episodes"]


def test_benchmarks_md_keeps_what_lies_outside_the_generated_block(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(f"# Mine\nintro\n{report.BEGIN}\nold figures\n{report.END}\n## GPU\nnot run yet\n")
    report.write_benchmarks_md(path, f"{report.BEGIN}\nnew figures\n{report.END}")
    assert path.read_text() == f"# Mine\nintro\n{report.BEGIN}\nnew figures\n{report.END}\n## GPU\nnot run yet\n"


def test_benchmarks_md_is_created_with_intro_and_gpu_section(tmp_path):
    path = report.write_benchmarks_md(tmp_path / "B.md", f"{report.BEGIN}\nx\n{report.END}")
    text = path.read_text()
    assert text.startswith("# Benchmarks") and "not run yet: no gpu was available in this session" in text.lower()


def test_bench_quick_writes_its_figures(tmp_path, capsys):
    out = tmp_path / "B.md"
    code = main(["bench", "--quick", "--only", "prm", "--only", "memory", "--out", str(out), "--work",
                 str(tmp_path / "work"), "--json", str(tmp_path / "b.json")])
    assert code == 0
    text = out.read_text()
    assert report.BEGIN in text and "2. Shared-context PRM scoring" in text and "5b. Memory" in text
    assert "raw wall times" in text and (tmp_path / "b.json").is_file()


def test_bench_rejects_an_output_path_that_is_a_folder(tmp_path, capsys):
    assert main(["bench", "--quick", "--out", str(tmp_path)]) == 2
    assert "is a folder, choose another file name" in capsys.readouterr().err

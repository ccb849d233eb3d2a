"""`playprm report`: clemcore's clemscore table reproduced, statscore, CIs, errored episodes, --compare."""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from clemcore import clemeval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playprm.cli import main
from playprm.report.clemscore import CLEMSCORE, INTERACTIVE, STATSCORE, compute_table
from playprm.report.compare import LOOKAHEAD_TITLE, QUALITY_TITLE, compare_runs, render_comparison

RESAMPLES = 200  # enough for stable intervals, small enough for a quick test


def write_episode(root: Path, model: str, game: str, experiment: str, episode: str, scores: dict,
                  **extra: dict) -> Path:
    """Write one episode's scores.json (bare NaN allowed, as clemcore writes it) and extra JSON files."""
    folder = root / model / game / experiment / episode
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scores.json").write_text(json.dumps({"turn scores": {}, "episode scores": scores}))
    for name, content in extra.items():
        (folder / f"{name}.json").write_text(json.dumps(content))
    return folder


def episode_scores(aborted: bool, quality: float | None) -> dict:
    """clembench-style episode scores; an aborted episode's Main Score is NaN."""
    return {
        "Aborted": int(aborted), "Success": int(not aborted and bool(quality)), "Lose": 0,
        "Request Count": 3, "Main Score": float("nan") if aborted else quality,
    }


def synthetic_results(root: Path, seed: int = 0, episodes: int = 5) -> Path:
    """Three models, three games, two experiments; NaNs, a model missing a game, an all-aborted game."""
    rng = random.Random(seed)
    plan = {
        "modelA-t0.0--modelA-t0.0": ["wordle", "taboo", "referencegame"],
        "modelB-t0.0--modelB-t0.0": ["wordle", "taboo"],
        "modelC-t0.0--modelC-t0.0": ["wordle", "taboo", "referencegame"],
    }
    for model, games in plan.items():
        for game in games:
            for experiment in ("0_easy", "1_hard"):
                for k in range(episodes):
                    all_aborted = model.startswith("modelC") and game == "taboo"
                    aborted = all_aborted or rng.random() < 0.3
                    quality = rng.choice([0, 100, round(rng.uniform(0, 100), 3), 100 / 3])
                    name = f"instance_{k:05d}" if game != "referencegame" else f"episode_{k}"
                    write_episode(root, model, game, experiment, name, episode_scores(aborted, quality))
    return root


def clemcore_columns(table: pd.DataFrame) -> list[str]:
    """The leading columns of ``table``, everything before playprm's first (Playpen's interactive clemscore):
    those clemcore's own results.csv must have."""
    columns = list(table.columns)
    return columns[: columns.index(INTERACTIVE)] if INTERACTIVE in columns else columns


def clemcore_results(results_dir: Path) -> pd.DataFrame:
    """clemcore's own table: clemeval writes results.csv into the dir; read it back."""
    with contextlib.redirect_stdout(io.StringIO()):
        clemeval.perform_evaluation(str(results_dir), return_dataframe=True)
    return pd.read_csv(results_dir / "results.csv", index_col=0)


def assert_equals_clemcore(ours: pd.DataFrame, theirs: pd.DataFrame) -> None:
    assert list(ours.index) == list(theirs.index)
    assert clemcore_columns(ours) == list(theirs.columns)
    for column in theirs.columns:
        for model in theirs.index:
            expected, actual = theirs.at[model, column], ours.at[model, column]
            if pd.isna(expected):
                assert pd.isna(actual), (model, column)
            else:
                assert abs(float(actual) - float(expected)) <= 0.01 + 1e-9, (model, column, actual, expected)


def test_table_equals_clemcore_on_synthetic_results(tmp_path):
    results = synthetic_results(tmp_path / "results")
    ours = compute_table([results], static_games=set(), n_resamples=RESAMPLES)
    assert_equals_clemcore(ours, clemcore_results(results))
    assert pd.isna(ours.at["modelC-t0.0--modelC-t0.0", "taboo, Quality Score"])
    assert ours.at["modelC-t0.0--modelC-t0.0", "taboo, % Played"] == 0


def test_table_equals_clemcore_on_clembench_sample(shared_sample, tmp_path):
    results = tmp_path / "sample"
    shutil.copytree(shared_sample, results)  # clemeval writes into the dir; the sample stays untouched
    ours = compute_table([results], static_games={"wordle", "referencegame"}, n_resamples=RESAMPLES)
    assert_equals_clemcore(ours, clemcore_results(results))
    assert ours.at["Llama-3.3-70B-Instruct-t0.0--Llama-3.3-70B-Instruct-t0.0", CLEMSCORE] == 33.66


scores_strategy = st.lists(
    st.tuples(
        st.sampled_from(["m1", "m2", "m3"]), st.sampled_from(["g1", "g2", "g3"]), st.booleans(),
        st.sampled_from([0.0, 100.0, 12.345, 0.005, 100 / 3, 200 / 3, 50.0, 99.995, 1.125]),
    ),
    min_size=1, max_size=25,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes=scores_strategy)
def test_table_equals_clemcore_on_random_results(episodes):
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "results"
        for k, (model, game, aborted, quality) in enumerate(episodes):
            write_episode(root, model, game, "0_exp", f"episode_{k}", episode_scores(aborted, quality))
        has_quality = any(not aborted for *_, aborted, _ in episodes)
        if not has_quality:
            return  # clemcore has no Quality Score column to compare without a played episode
        ours = compute_table([root], static_games=set(), n_resamples=20)
        assert_equals_clemcore(ours, clemcore_results(root))


def test_clemcore_columns_come_first_then_playpens_clemscore_and_statscore(tmp_path):
    table = compute_table([synthetic_results(tmp_path)], static_games={"wordle"}, n_resamples=RESAMPLES)
    columns = list(table.columns)
    assert columns[0] == CLEMSCORE
    assert columns[len(clemcore_columns(table)):][:2] == [INTERACTIVE, STATSCORE]
    assert "all, Average % Played" in clemcore_columns(table)


def test_statscore_aggregates_only_static_games(tmp_path):
    root = tmp_path / "r"
    model = "m-t0.0--m-t0.0"
    # wordle: played 1 of 2, quality 40; taboo (not static): played 2 of 2, quality 90; referencegame: 100% / 20
    write_episode(root, model, "wordle", "e", "episode_0", episode_scores(False, 40.0))
    write_episode(root, model, "wordle", "e", "episode_1", episode_scores(True, None))
    write_episode(root, model, "taboo", "e", "episode_0", episode_scores(False, 90.0))
    write_episode(root, model, "taboo", "e", "episode_1", episode_scores(False, 90.0))
    write_episode(root, model, "referencegame", "e", "episode_0", episode_scores(False, 20.0))
    table = compute_table([root], static_games={"wordle", "referencegame"}, n_resamples=RESAMPLES)
    # static: % played (50 + 100) / 2 = 75, quality (40 + 20) / 2 = 30 -> 0.75 * 30
    assert table.at[model, STATSCORE] == 22.5
    # clemscore uses all three games: played rounded to 83.33 first, quality 50 -> 41.665 -> 41.66
    assert table.at[model, CLEMSCORE] == 41.66
    blank = compute_table([root], static_games=set(), n_resamples=RESAMPLES)
    assert pd.isna(blank.at[model, STATSCORE])


def _width(table: pd.DataFrame, model: str, column: str) -> float:
    return table.at[model, column + " CI high"] - table.at[model, column + " CI low"]


def test_intervals_contain_the_point_estimate(tmp_path):
    table = compute_table([synthetic_results(tmp_path)], static_games={"wordle"}, n_resamples=RESAMPLES)
    for model in table.index:
        for column in (CLEMSCORE, STATSCORE, "wordle, Quality Score", "wordle, % Played"):
            point = table.at[model, column]
            assert table.at[model, column + " CI low"] <= point <= table.at[model, column + " CI high"]


def test_intervals_shrink_with_more_episodes(tmp_path):
    few = compute_table([synthetic_results(tmp_path / "few", episodes=4)], static_games=set(),
                        n_resamples=RESAMPLES)
    many = compute_table([synthetic_results(tmp_path / "many", episodes=60)], static_games=set(),
                         n_resamples=RESAMPLES)
    model = "modelA-t0.0--modelA-t0.0"
    assert _width(many, model, CLEMSCORE) < _width(few, model, CLEMSCORE)
    assert _width(many, model, "wordle, % Played") < _width(few, model, "wordle, % Played")


def test_intervals_are_seeded(tmp_path):
    results = synthetic_results(tmp_path)
    first = compute_table([results], static_games=set(), n_resamples=RESAMPLES, seed=3)
    again = compute_table([results], static_games=set(), n_resamples=RESAMPLES, seed=3)
    pd.testing.assert_frame_equal(first, again)


def test_errored_episodes_are_counted_apart_and_never_scored(tmp_path):
    root = tmp_path / "r"
    model = "m-t0.0--m-t0.0"
    write_episode(root, model, "wordle", "e", "instance_00000", episode_scores(False, 60.0))
    errored = root / model / "wordle" / "e" / "instance_00001"
    errored.mkdir(parents=True)
    (errored / "error.json").write_text(json.dumps({"error": "CUDA out of memory"}))
    table = compute_table([root], static_games=set(), n_resamples=RESAMPLES)
    assert table.at[model, "wordle, errored"] == 1
    assert table.at[model, "-, errored"] == 1
    assert table.at[model, "wordle, episodes"] == 1
    assert table.at[model, "wordle, % Played"] == 100  # the errored episode is not an abort


def test_errored_episodes_are_left_out_with_a_warning_or_scored_as_aborted(tmp_path, capsys):
    root = tmp_path / "r"
    model = "m-t0.0--m-t0.0"
    for k in range(3):
        write_episode(root, model, "wordle", "e", f"instance_{k:05d}", episode_scores(False, 60.0))
    errored = root / model / "wordle" / "e" / "instance_00003"
    errored.mkdir(parents=True)
    (errored / "error.json").write_text(json.dumps({"error": "CUDA out of memory"}))
    as_clemcore = compute_table([root], static_games=set(), n_resamples=RESAMPLES)
    assert as_clemcore.at[model, CLEMSCORE] == 60  # clemcore's number: the errored episode left out
    (warning,) = [line for line in as_clemcore.attrs["summary"] if line.startswith("warning:")]
    assert "1 of 4 episode(s) errored" in warning and "--errored-as-aborted" in warning
    aborted = compute_table([root], static_games=set(), n_resamples=RESAMPLES, errored_as_aborted=True)
    assert aborted.at[model, "wordle, % Played"] == 75 and aborted.at[model, "wordle, Quality Score"] == 60
    assert aborted.at[model, CLEMSCORE] == 45
    assert main(["report", "--results-dir", str(root), "--resamples", "10", "--errored-as-aborted",
                 "--out", str(tmp_path / "o")]) == 0
    assert "1 errored episode(s) (error.json, no scores.json) scored as aborted" in capsys.readouterr().out


def test_staging_folders_of_unfinished_episodes_are_not_scored(tmp_path):
    root = tmp_path / "r"
    model = "m-t0.0--m-t0.0"
    write_episode(root, model, "wordle", "e", "instance_00000", episode_scores(False, 60.0))
    write_episode(root, model, "wordle", "e", ".instance_00001.staging-42", episode_scores(False, 0.0))
    table = compute_table([root], static_games=set(), n_resamples=RESAMPLES)
    assert table.at[model, "wordle, episodes"] == 1
    assert table.at[model, "wordle, Quality Score"] == 60
    assert any("hidden (staging) folders" in line for line in table.attrs["summary"])


def test_statscore_is_the_built_in_static_task_beside_an_interactive_game(tmp_path):
    root = tmp_path / "r"
    model = "m-t0.0--m-t0.0"
    write_episode(root, model, "arithmetic", "addition", "episode_0", episode_scores(False, 100.0))
    write_episode(root, model, "arithmetic", "addition", "episode_1", episode_scores(False, 0.0))
    write_episode(root, model, "wordle", "e", "episode_0", episode_scores(False, 90.0))
    table = compute_table([root], n_resamples=RESAMPLES)
    # arithmetic is tagged static_1.0; wordle is an interactive dialogue game and never static
    assert table.attrs["static_games"] == ["arithmetic"]
    assert table.at[model, STATSCORE] == 50  # 100% played x quality 50, over arithmetic alone
    assert table.at[model, CLEMSCORE] == 70  # clemscore still averages both games


def test_statscore_is_blank_and_the_report_says_why_without_a_static_game(tmp_path, capsys):
    root = tmp_path / "r"
    write_episode(root, "m--m", "wordle", "e", "episode_0", episode_scores(False, 90.0))
    write_episode(root, "m--m", "taboo", "e", "episode_0", episode_scores(False, 10.0))
    assert main(["report", "--results-dir", str(root), "--resamples", "20", "--out", str(tmp_path / "o")]) == 0
    assert pd.isna(pd.read_csv(tmp_path / "o" / "results.csv", index_col=0).at["m--m", STATSCORE])
    out = capsys.readouterr().out
    assert "statscore: blank, no static game in these results" in out and "static_<version>" in out


def test_games_dir_marks_clembench_static_games(tmp_path):
    clembench = tmp_path / "clembench"
    for folder, spec in (("static/mmlu_pro", {"game_name": "mmlu_pro", "players": 1,
                                              "benchmark": ["static_1.0", "standard_1.0"]}),
                         ("imagegame", {"game_name": "imagegame", "players": 2, "benchmark": ["2.0"]})):
        (clembench / folder).mkdir(parents=True)
        (clembench / folder / "clemgame.json").write_text(json.dumps(spec))  # as clembench ships them
    root = tmp_path / "r"
    write_episode(root, "m--m", "mmlu_pro", "e", "episode_0", episode_scores(False, 70.0))
    write_episode(root, "m--m", "imagegame", "e", "episode_0", episode_scores(False, 10.0))
    assert main(["report", "--results-dir", str(root), "--games-dir", str(clembench), "--resamples", "20",
                 "--out", str(tmp_path / "o")]) == 0
    assert pd.read_csv(tmp_path / "o" / "results.csv", index_col=0).at["m--m", STATSCORE] == 70


def test_unreadable_scores_are_counted_not_fatal(tmp_path):
    root = tmp_path / "r"
    model = "m-t0.0--m-t0.0"
    write_episode(root, model, "wordle", "e", "episode_0", episode_scores(False, 60.0))
    broken = write_episode(root, model, "wordle", "e", "episode_1", episode_scores(False, 0.0))
    (broken / "scores.json").write_text('{"episode scores": {"Aborted": 0,')
    table = compute_table([root], static_games=set(), n_resamples=RESAMPLES)
    assert table.at[model, "wordle, Quality Score"] == 60
    assert any("1 episode(s) left out: their scores.json holds no countable scores" in line
               for line in table.attrs["summary"])
    assert table.at[model, "-, unreadable"] == 1 and table.at[model, "wordle, unreadable"] == 1
    assert table.at[model, "-, errored"] == 0  # unreadable is not errored: each is counted in its own column


def test_several_results_dirs_are_read_as_one(tmp_path):
    union = synthetic_results(tmp_path / "union")
    shard_a, shard_b = tmp_path / "a", tmp_path / "b"
    for scores in union.rglob("scores.json"):
        relative = scores.relative_to(union)
        target = (shard_a if int(relative.parts[3].split("_")[-1]) % 2 else shard_b) / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(scores, target)
    pd.testing.assert_frame_equal(
        compute_table([shard_a, shard_b], static_games=set(), n_resamples=RESAMPLES),
        compute_table([union], static_games=set(), n_resamples=RESAMPLES),
    )


def test_conflicting_copies_of_one_episode_are_a_usage_error(tmp_path):
    for shard, quality in (("a", 10.0), ("b", 90.0)):
        write_episode(tmp_path / shard, "m--m", "wordle", "e", "episode_0", episode_scores(False, quality))
    assert main(["report", "--results-dir", str(tmp_path / "a"), str(tmp_path / "b"),
                 "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()


def test_played_in_scores_is_a_usage_error(tmp_path, capsys):
    write_episode(tmp_path / "r", "m--m", "wordle", "e", "episode_0", {**episode_scores(False, 5.0), "Played": 1})
    assert main(["report", "--results-dir", str(tmp_path / "r"), "--out", str(tmp_path / "o")]) == 2
    assert "Played" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["missing dir", "no scores", "only broken scores"])
def test_bad_input_is_one_clear_line(tmp_path, capsys, case):
    root = tmp_path / "r"
    if case != "missing dir":
        (root / "m--m" / "wordle" / "e" / "episode_0").mkdir(parents=True)
    if case == "only broken scores":
        (root / "m--m" / "wordle" / "e" / "episode_0" / "scores.json").write_text("not json")
    assert main(["report", "--results-dir", str(root), "--out", str(tmp_path / "o")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm report: error: ") and "\n" not in error


def test_report_command_writes_csv_markdown_and_plot(tmp_path, capsys):
    results = synthetic_results(tmp_path / "results")
    out = tmp_path / "out"
    assert main(["report", "--results-dir", str(results), "--out", str(out), "--static-games", "wordle",
                 "--resamples", "50"]) == 0
    printed = capsys.readouterr().out
    assert "modelA-t0.0--modelA-t0.0" in printed and "clemscore (interactive games) [95% CI]" in printed
    assert "clemcore clemscore (all games) [95% CI]" in printed
    csv = pd.read_csv(out / "results.csv", index_col=0)
    assert list(csv.columns[:len(clemcore_results(results).columns)]) == list(clemcore_results(results).columns)
    assert "| model |" in (out / "results.md").read_text()
    assert (out / "clemscore.png").read_bytes()[:4] == b"\x89PNG"


def _run_dir(root: Path, name: str, mode: str, lookahead: bool, quality: float, tokens: int | None) -> Path:
    results = root / name
    model = "policy-t0.0--policy-t0.0"
    for k in range(6):
        extra = {"cost": {"generated_tokens": tokens + k, "prm_tokens": 2 * tokens, "wall_seconds": 1.5}} \
            if tokens is not None else {}
        write_episode(results, model, "wordle", "0_e", f"instance_{k:05d}",
                      episode_scores(k == 0, quality + k), **extra)
    (results / model / "playprm_run.json").write_text(
        json.dumps({"mode": mode, "env_lookahead": lookahead, "n_candidates": 4, "seed": 1})
    )
    return results


def test_compare_reports_env_lookahead_runs_apart(tmp_path):
    greedy = _run_dir(tmp_path, "greedy", "greedy", False, 30.0, 100)
    beam = _run_dir(tmp_path, "beam", "beam-search", True, 80.0, 900)
    best = _run_dir(tmp_path, "bon", "best-of-n", False, 50.0, None)
    comparison = compare_runs([beam, greedy, best], static_games=set(), n_resamples=RESAMPLES)
    assert list(comparison["section"]) == ["honest", "honest", "env-lookahead"]
    assert list(comparison.index) == ["greedy", "bon",
                                      "beam"]
    text = render_comparison(comparison).split(QUALITY_TITLE)[0]
    honest_part, lookahead_part = text.split(LOOKAHEAD_TITLE)
    assert "greedy " in honest_part and "beam " not in honest_part
    assert "beam " in lookahead_part and "greedy " not in lookahead_part


def test_compare_averages_cost_per_episode_and_leaves_missing_blank(tmp_path):
    greedy = _run_dir(tmp_path, "greedy", "greedy", False, 30.0, 100)
    best = _run_dir(tmp_path, "bon", "best-of-n", False, 50.0, None)
    comparison = compare_runs([greedy, best], static_games=set(), n_resamples=RESAMPLES)
    assert comparison.loc["greedy", "generated tokens / episode"] == 102.5
    assert comparison.loc["greedy", "PRM tokens / episode"] == 200
    assert math.isnan(comparison.loc["bon", "generated tokens / episode"])
    assert comparison.loc["bon", "mode"] == "best-of-n"
    assert comparison.loc["bon", "run seed"] == 1


def test_compare_command_writes_table_and_compute_plot(tmp_path, capsys):
    greedy = _run_dir(tmp_path, "greedy", "greedy", False, 30.0, 100)
    beam = _run_dir(tmp_path, "beam", "beam-search", True, 80.0, 900)
    out = tmp_path / "out"
    assert main(["report", "--compare", str(greedy), str(beam), "--out", str(out), "--resamples", "50",
                 "--static-games", "wordle"]) == 0
    assert LOOKAHEAD_TITLE in capsys.readouterr().out
    csv = pd.read_csv(out / "compare.csv", index_col=0)
    assert csv.loc["beam", "section"] == "env-lookahead"
    assert bool(csv.loc["beam", "env_lookahead"]) is True
    assert LOOKAHEAD_TITLE in (out / "compare.md").read_text()
    assert (out / "compute.png").read_bytes()[:4] == b"\x89PNG"


def playpen_run(root: Path, model: str = "m") -> Path:
    """A tiny run in Playpen's layout: <run>/clem/<model>/ (an interactive game) and <run>/static/<model>/ (a static
    task named as no registry knows it, so only the layout says it is static)."""
    run = root / model
    write_episode(run / "clem", model, "referencegame", "e", "instance_00000", episode_scores(False, 100.0))
    write_episode(run / "clem", model, "referencegame", "e", "instance_00001", episode_scores(True, 0.0))
    write_episode(run / "static", model, "my_static_task", "e", "instance_00000", episode_scores(False, 40.0))
    return run


def test_playpens_layout_gives_playpens_clemscore_and_statscore_without_flags(tmp_path, capsys):
    run = playpen_run(tmp_path)
    table = compute_table([run], n_resamples=RESAMPLES)
    assert table.attrs["static_games"] == ["my_static_task"]
    assert table.at["m", INTERACTIVE] == 50  # referencegame: 50% played x quality 100
    assert table.at["m", STATSCORE] == 40
    assert table.at["m", CLEMSCORE] == 52.5  # clemcore's over both: 75% played x quality 70
    assert main(["report", "--results-dir", str(run), "--resamples", "20", "--out", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr().out
    assert "clemcore clemscore (all games)" in printed and "Playpen's static/ folder" in printed


def test_playpens_static_suite_is_known_by_name_in_a_flat_folder(tmp_path):
    root = tmp_path / "r"
    write_episode(root, "m", "bbh", "e", "instance_00000", episode_scores(False, 0.0))
    write_episode(root, "m", "referencegame", "e", "instance_00000", episode_scores(False, 80.0))
    table = compute_table([root], n_resamples=RESAMPLES)
    assert table.attrs["static_games"] == ["bbh"]
    assert (table.at["m", INTERACTIVE], table.at["m", STATSCORE], table.at["m", CLEMSCORE]) == (80, 0, 40)
    assert compute_table([root], static_games=set(), n_resamples=RESAMPLES).attrs["static_games"] == []


def test_a_run_records_its_games_benchmark_tags_so_report_needs_no_games_dir(tmp_path):
    from playprm.report.episodes import load_episode_scores
    from playprm.report.game_kinds import GAME_BENCHMARKS, classify_games

    root = tmp_path / "r"
    write_episode(root, "m", "custom_quiz", "e", "instance_00000", episode_scores(False, 30.0))
    write_episode(root, "m", "referencegame", "e", "instance_00000", episode_scores(False, 90.0))
    assert classify_games(load_episode_scores([root])).static == set()
    (root / "m" / "playprm_run.json").write_text(json.dumps({GAME_BENCHMARKS: {"custom_quiz": ["static_1.0"],
                                                                                "referencegame": ["2.0"]}}))
    kinds = classify_games(load_episode_scores([root]))
    assert kinds.static == {"custom_quiz"} and kinds.source["custom_quiz"] == "run metadata"


def test_paired_names_runs_by_folder_and_a_wrong_name_writes_nothing(tmp_path, capsys):
    greedy = _run_dir(tmp_path, "greedy", "greedy", False, 30.0, 100)
    best = _run_dir(tmp_path, "bon", "best-of-n", False, 50.0, 100)
    out = tmp_path / "out"
    assert main(["report", "--compare", str(greedy), str(best), "--paired", "bon", "gredy", "--out", str(out)]) == 2
    assert "'gredy' is none of the --compare runs" in capsys.readouterr().err and not out.exists()
    assert main(["report", "--compare", str(greedy), str(best), "--paired", "bon", str(greedy), "--out", str(out),
                 "--resamples", "50", "--static-games", ""]) == 0
    paired = json.loads((out / "paired.json").read_text())
    assert (paired[0]["a"], paired[0]["b"]) == ("bon", "greedy") and paired[0]["difference"] > 0
    assert [game["game"] for game in paired[0]["games"]] == ["wordle"]  # one game: its points are the total
    assert paired[0]["games"][0]["points"] == pytest.approx(paired[0]["difference"])
    assert paired[0]["games"][0]["quality"] == pytest.approx(20)
    assert (out / "forest_bon_vs_greedy.png").read_bytes()[:4] == b"\x89PNG"
    assert "## Where bon and greedy differ, per game" in (out / "paired.md").read_text()


def test_runs_not_played_by_playprm_say_mode_unknown_and_draw_no_empty_compute_plot(tmp_path):
    results = synthetic_results(tmp_path / "elsewhere")
    out = tmp_path / "out"
    assert main(["report", "--compare", str(results), "--out", str(out), "--resamples", "20"]) == 0
    csv = pd.read_csv(out / "compare.csv", index_col=0)
    assert set(csv["mode"]) == {"unknown (not played by playprm)"} and set(csv["section"]) == {"unknown"}
    assert "Runs not played by playprm" in (out / "compare.md").read_text()
    assert not (out / "compute.png").exists()


def test_per_game_points_add_up_to_the_paired_difference():
    from playprm.report.paired import paired_difference
    from playprm.report.paired_games import per_game_differences

    rows = []
    for game, (played_a, quality_a, quality_b) in {"g1": (1, 90.0, 40.0), "g2": (1, 20.0, 30.0)}.items():
        for k in range(10):
            rows.append({"game": game, "experiment": "e", "episode": f"instance_{k}", "played_a": played_a,
                         "quality_a": quality_a + k, "quality_b": quality_b + k})
    frame = pd.DataFrame(rows)
    a = frame.rename(columns={"played_a": "played", "quality_a": "quality"})[
        ["game", "experiment", "episode", "played", "quality"]]
    b = frame.assign(played=1).rename(columns={"quality_b": "quality"})[["game", "experiment", "episode", "played",
                                                                        "quality"]]
    games = per_game_differences(a, b, n_resamples=200)
    total = paired_difference(a, b, n_resamples=200).difference
    assert [g.game for g in games] == ["g2", "g1"]  # most lost first
    assert games[0].quality == pytest.approx(-10) and games[1].quality == pytest.approx(50)
    assert sum(g.points for g in games) == pytest.approx(total)  # additive when % played does not change
    assert games[1].points_ci[0] > 0 > games[0].points_ci[1]


def test_a_run_against_a_fixed_level_is_its_own_bootstrap_less_the_level(tmp_path):
    """SFT greedy against the game's chance level (the smol preset's RESULTS.md): the point is the run's
    clemscore less the level, the interval the run's resampling shifted by it, and a level above the run's
    whole interval shows up as a CI below 0."""
    from playprm.report.paired import against_level

    run = _run_dir(tmp_path, "greedy", "greedy", False, 40.0, None)  # 5 played episodes of 41-45, one aborted
    comparison = compare_runs([run], n_resamples=RESAMPLES, seed=3)
    (label,) = comparison.index
    clemscore = float(comparison.at[label, CLEMSCORE])
    assert clemscore == pytest.approx(5 / 6 * 43, abs=0.005)  # clemcore rounds to 2 decimals
    low = against_level(comparison, label, {"wordle": 20.0}, label="chance", n_resamples=RESAMPLES, seed=3)
    assert (low.a, low.b, low.episodes) == (label, "chance", 6)
    assert low.difference == pytest.approx(5 / 6 * 43 - 20.0) and low.value_b == 20.0
    assert low.value_a == pytest.approx(5 / 6 * 43) and low.low > 0 and low.low < low.difference < low.high
    high = against_level(comparison, label, {"wordle": 60.0}, label="chance", n_resamples=RESAMPLES, seed=3)
    assert high.high < 0 and high.high - high.low == pytest.approx(low.high - low.low)
    assert against_level(comparison, label, {"taboo": 20.0}, label="chance").episodes == 0  # no episode of it


def test_the_glance_counts_the_smol_presets_training_stages_whose_names_carry_no_policy():
    # pipeline.smol trains one policy and names its stages without a kind ("train-dpo", not "train-dpo sft"): the
    # DPO row's cost used to read "not recorded" although stage_seconds.json held every stage
    from playprm.pipeline.summary import glance

    rows = [{"name": name, "policy": policy, "clemscore": score, "ci": [score - 9, score + 9],
             "generated_tokens_per_episode": 58}
            for name, policy, score in (("sft-greedy", "sft", 68.75), ("sft-dpo-greedy", "sft-dpo", 73.95),
                                        ("sft-oracle-bon4", "sft", 76.04))]
    paired = [{"a": a, "b": "sft-greedy", "difference": d, "ci": [d - 9, d + 9], "score": "clemscore"}
              for a, d in (("sft-dpo-greedy", 5.21), ("sft-oracle-bon4", 7.29))]
    stages = {"train-sft": 1831.6, "collect policy": 105.9, "train-prm": 178.7, "collect dpo": 699.6,
              "pref-data": 0.1, "train-dpo": 1028.8, "eval sft-dpo-greedy": 146.7}
    [record] = glance(rows, paired, stages)
    assert record["best"] == "sft-dpo-greedy"
    assert record["training_seconds"] == round(699.6 + 0.1 + 1028.8, 1)  # its rollouts, pairs and training

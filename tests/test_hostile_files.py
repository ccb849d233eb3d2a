"""Hostile or odd results folders are read or skipped (with path and reason), never crash: files nested 200k
levels deep (RecursionError), Main Scores that are strings or Infinity (clemscore an error or inf), and model
folders that are symlinks (followed, loops ended). Hardening never drops what clemcore counts: a finite Main
Score out of 0-100 (eqbench's can be negative) is counted, as clemcore counts it, with a warning."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playprm.cli import main
from playprm.play.config import EvalConfig
from playprm.play.wiring import run_eval

DEEP = "[" * 200_000 + "]" * 200_000


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Path:
    """A results root with two scored wordle episodes of the scripted policy."""
    root = tmp_path_factory.mktemp("played")
    run_eval(EvalConfig(policy_model="scripted:random-valid", games=["wordle"], limit=1, results_dir=root / "r"),
             progress=False)
    return root / "r"


@pytest.fixture()
def results(played, tmp_path) -> Path:
    shutil.copytree(played, tmp_path / "r")
    return tmp_path / "r"


def first_episode(results: Path) -> Path:
    return sorted(results.rglob("scores.json"))[0].parent


def set_main_score(episode: Path, value_json: str) -> None:
    scores = json.loads((episode / "scores.json").read_text())
    scores["episode scores"]["Main Score"] = "@@"
    (episode / "scores.json").write_text(json.dumps(scores).replace('"@@"', value_json))


def report(results: Path, capsys) -> tuple[int, str, dict]:
    """Exit code, printed text and the first row of results.csv of ``playprm report``."""
    out = results.parent / f"{results.name}-report"
    code = main(["report", "--results-dir", str(results), "--resamples", "20", "--out", str(out)])
    captured = capsys.readouterr()
    err = captured.out + captured.err
    table = {}
    if (out / "results.csv").is_file():
        import pandas as pd

        table = pd.read_csv(out / "results.csv", index_col=0).iloc[0].to_dict()
    return code, err, table


def test_scores_nested_200k_levels_deep_are_skipped_with_path_and_reason(results, capsys):
    episode = first_episode(results)
    (episode / "scores.json").write_text(DEEP)
    code, err, table = report(results, capsys)
    assert code == 0
    assert f"{episode / 'scores.json'}: nested more than 100 levels deep" in err
    assert table["-, episodes"] == 1


@pytest.mark.parametrize("value, reason", [
    ('"abc"', "'Main Score' is 'abc'"),
    ("Infinity", "'Main Score' is inf"),
    ("true", "'Main Score' is True"),
])
def test_a_main_score_clemcore_cannot_count_skips_the_episode_and_clemscore_stays_finite(results, capsys, value,
                                                                                         reason):
    episode = first_episode(results)
    set_main_score(episode, value)
    code, err, table = report(results, capsys)
    assert code == 0 and reason in err and str(episode) in err and "no countable scores" in err
    assert table["-, episodes"] == 1 and 0 <= table["-, clemscore"] <= 100


@pytest.mark.parametrize("value, note", [("-13.34", "Main Score is -13.34, out of 0-100"),
                                         ("1e9", "Main Score is 1000000000.0, out of 0-100")])
def test_a_finite_main_score_out_of_0_to_100_is_counted_as_clemcore_counts_it(results, capsys, value, note):
    from playprm.report.clemscore import clemcore_table
    from playprm.report.episodes import load_episode_scores

    episode = first_episode(results)
    set_main_score(episode, value)
    code, err, table = report(results, capsys)
    assert code == 0 and table["-, episodes"] == 2
    assert "counted as clemcore counts them" in err and note in err and "could not be read" not in err
    assert table["-, clemscore"] == clemcore_table(load_episode_scores([results]).frame)["-, clemscore"].iloc[0]


def test_interactions_nested_200k_levels_deep_are_skipped_by_sft_data(results, tmp_path, capsys):
    episode = first_episode(results)
    (episode / "interactions.json").write_text(DEEP)
    code = main(["sft-data", "--results-dir", str(results), "--out", str(tmp_path / "sft")])
    err = capsys.readouterr().err
    assert code == 0
    assert f"skipped {episode}: interactions.json cannot be read (nested more than 100 levels deep)" in err


def test_a_symlinked_model_folder_is_reported_and_a_symlink_loop_ends(results, tmp_path, capsys):
    model_dir = next(path for path in results.iterdir() if path.is_dir())
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(model_dir), elsewhere)
    model_dir.symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / "wordle" / "loop").symlink_to(elsewhere, target_is_directory=True)  # a loop back up
    code, err, table = report(results, capsys)
    assert code == 0 and table["-, episodes"] == 2


# finite floats up to 1e100 in size: a finite score is counted as clemcore counts it, and past ~1e150 clemcore's
# own product of quality and % played (both from such values) overflows to infinity as ours does
score_values = (st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not math.isfinite(v) or abs(v) < 1e100)
                | st.integers(min_value=-10**12, max_value=10**12)
                | st.booleans() | st.none() | st.text(max_size=6) | st.lists(st.integers(), max_size=2))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(main_score=score_values, aborted=score_values)
def test_fuzzed_score_values_are_skipped_or_counted_with_a_finite_clemscore(played, tmp_path_factory, main_score,
                                                                           aborted):
    from playprm.report.clemscore import CLEMSCORE, clemcore_table
    from playprm.report.episodes import load_episode_scores

    results = tmp_path_factory.mktemp("fuzz") / "r"
    shutil.copytree(played, results)
    episode = first_episode(results)
    scores = json.loads((episode / "scores.json").read_text())
    scores["episode scores"].update({"Main Score": main_score, "Aborted": aborted})
    (episode / "scores.json").write_text(json.dumps(scores))  # json writes NaN and Infinity bare, as Python does
    episodes = load_episode_scores([results])
    table = clemcore_table(episodes.frame)
    value = float(table[CLEMSCORE].iloc[0])
    assert math.isfinite(value)
    in_range = all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 100 and
                   (v in (0, 1) or k == "Main Score")
                   for k, v in (("Main Score", main_score), ("Aborted", aborted)))
    if in_range:
        assert 0 <= value <= 100
    skipped = [str(path) for path, _ in episodes.unreadable]
    assert len(skipped) + len(episodes.episode_dirs) == 2

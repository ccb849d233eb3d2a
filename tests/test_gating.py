"""Per-game gating: a guided run guides only the games where guidance beat greedy on validation runs (the
per-game paired table of ``report --paired``); the other games play greedy, and the run records why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playprm.cli import main
from playprm.errors import UsageError
from playprm.play.config import EvalConfig


def paired_file(folder: Path, points: dict[str, float]) -> Path:
    """A report's paired.json: guided (A) against greedy (B), one row per game with its clemscore points."""
    folder.mkdir(parents=True, exist_ok=True)
    games = [{"game": game, "episodes": 10, "points": value, "points_ci": [value - 1, value + 1]}
             for game, value in points.items()]
    (folder / "paired.json").write_text(json.dumps([{"a": "guided", "b": "greedy", "difference": 0.0,
                                                     "games": games}]))
    return folder / "paired.json"


def test_the_gate_guides_only_games_where_guidance_won_points_on_validation(tmp_path):
    from playprm.report.gating import MIN_VALIDATION_POINTS, read_gate

    margin = MIN_VALIDATION_POINTS
    gate = read_gate(paired_file(tmp_path / "val", {"referencegame": margin + 1.5, "taboo": -2.0, "wordle": 0.0,
                                                    "imagegame": margin}))
    assert {game for game, row in gate.items() if row["guided"]} == {"referencegame"}  # above the fitted margin
    assert gate["taboo"]["reason"].startswith("greedy: guided - greedy = -2.00 clemscore points on 10 validation")
    assert read_gate(tmp_path / "val") == gate  # the folder that holds paired.json reads the same


def prm_folder(folder: Path, games: dict[str, tuple]) -> Path:
    """A train-prm folder's metrics.json with per-game validation sibling figures: game -> (Δ/σ, pairs)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text(json.dumps({"validation_sibling_games": {
        game: {"pairs": pairs, "accuracy": 0.6, "delta": 0.1, "sigma": 0.1, "delta_over_sigma": ratio}
        for game, (ratio, pairs) in games.items()}}))
    return folder


def test_the_gate_from_a_prm_guides_games_whose_sibling_signal_beats_its_noise(tmp_path):
    from playprm.report.gating import PRM_METRICS_FILE, read_gate
    from playprm.train.run_dir import METRICS_FILE

    assert PRM_METRICS_FILE == METRICS_FILE  # the gate reads the file train-prm writes
    gate = read_gate(prm_folder(tmp_path / "prm", {"referencegame": (1.2, 40), "taboo": (0.6, 400),
                                                    "wordle": (3.0, 5), "imagegame": (None, 0)}))
    assert {game for game, row in gate.items() if row["guided"]} == {"referencegame"}
    assert gate["referencegame"]["reason"] == ("guided: Δ/σ 1.200 on 40 validation sibling pairs of the PRM "
                                               "(guided from Δ/σ >= 1)")
    assert gate["taboo"]["reason"].startswith("greedy: Δ/σ 0.600 on 400")
    assert gate["wordle"]["reason"].startswith("greedy: 5 validation sibling pairs of the PRM, fewer than 20")
    assert not gate["imagegame"]["guided"]
    # a PRM without sibling figures (outcome labels) is one clear line, not a gate that guides nothing silently
    (tmp_path / "outcome").mkdir()
    (tmp_path / "outcome" / "metrics.json").write_text(json.dumps({"validation_auroc": 0.7}))
    with pytest.raises(UsageError, match="no per-game sibling figures"):
        read_gate(tmp_path / "outcome")
    config = EvalConfig(policy_model="scripted:random-valid", games=["referencegame", "taboo"], mode="best-of-n",
                        scorer="logprob", guide_games="auto", gate_from=tmp_path / "prm")
    config.validate()
    assert set(config.guided_games) == {"referencegame"}


@pytest.mark.parametrize("settings, message", [
    ({"guide_games": "auto"}, "--guide-games auto needs --gate-from"),
    ({"gate_from": Path("x")}, "--gate-from is read by --guide-games auto"),
    ({"guide_games": "auto", "gate_from": Path("missing")}, "no paired.json"),
    ({"guide_games": "taboo", "mode": "greedy", "scorer": "prm"}, "--mode greedy guides nothing"),
])
def test_impossible_gating_is_one_clear_error_before_any_model_loads(settings, message):
    values = {"policy_model": "scripted:random-valid", "games": ["taboo"], "mode": "best-of-n", "scorer": "logprob",
              **settings}
    with pytest.raises(UsageError, match=message):
        EvalConfig(**values).validate()


def test_a_gated_run_guides_the_chosen_game_plays_the_other_greedy_and_says_why(card_models, tmp_path, capsys):
    from playprm.report.gating import MIN_VALIDATION_POINTS

    gate = paired_file(tmp_path / "val", {"referencegame": MIN_VALIDATION_POINTS + 2.0, "taboo": -3.0})
    argv = ["eval", "--policy-model", str(card_models["policy"]), "--game", "referencegame", "--game", "taboo",
            "--limit", "1", "--max-tokens", "6", "--mode", "best-of-n", "--scorer", "logprob", "--n-candidates", "2",
            "--guide-games", "auto", "--gate-from", str(gate), "--results-dir", str(tmp_path / "r")]
    assert main(argv) == 0
    assert "--guide-games auto: taboo greedy: guided - greedy = -3.00" in capsys.readouterr().out  # said up front
    (run_dir,) = [p for p in (tmp_path / "r").iterdir() if p.is_dir()]
    assert run_dir.name.endswith("-gated")
    meta = json.loads((run_dir / "playprm_run.json").read_text())
    assert meta["gate"]["referencegame"].startswith("guided: ") and meta["gate"]["taboo"].startswith("greedy: ")
    assert meta["fingerprint"]["guided_games"] == ["referencegame"]
    # every game's clemgame.json tags, so that report splits clemscore / statscore without --games-dir
    assert set(meta["game_benchmarks"]) == {"referencegame", "taboo"}
    modes = {}
    for path in run_dir.rglob("candidates.jsonl"):
        game = path.relative_to(run_dir).parts[0]
        modes.setdefault(game, set()).update(json.loads(line)["mode"] for line in path.read_text().splitlines())
    assert modes["referencegame"] == {"best-of-n"} and modes["taboo"] == {"greedy"}


def test_the_gate_threshold_is_fitted_on_held_halves_of_validation_episodes_alone():
    # cross-fitting decides on one half of a validation comparison and scores the other: guidance that wins
    # everywhere is kept, guidance that loses everywhere is dropped, whatever the threshold's own half says
    import pandas as pd

    from playprm.report.gating import cross_fit

    def frame(qualities):
        return pd.DataFrame({"game": "g", "experiment": "e", "episode": [f"ep{i}" for i in range(len(qualities))],
                             "played": True, "quality": qualities})

    greedy = frame([50.0] * 40)
    comparisons = {"pays": (frame([60.0] * 40), greedy), "loses": (frame([45.0] * 40), greedy)}
    fits = cross_fit(comparisons, [-100.0, 0.0, 100.0], splits=5)
    assert fits[-100.0]["per_comparison"] == {"pays": 10.0, "loses": -5.0}  # always guide
    assert fits[0.0]["per_comparison"] == {"pays": 10.0, "loses": 0.0}  # guide where validation won
    assert fits[100.0]["gain"] == 0.0 and fits[100.0]["guided"] == 0.0  # never guide
    assert fits[0.0]["gain"] == 5.0 and fits[0.0]["guided"] == 0.5

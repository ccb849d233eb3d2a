"""Sibling metrics of a PRM (what best-of-N asks of it: order replies to one context), checked against values
computed by hand with a scripted scorer; and train-prm writes them to metrics.json and the model card."""

from __future__ import annotations

import math

import pytest

from playprm.train.prm_metrics import paired_sibling_difference, sibling_metrics, sibling_pairs


def reply(game: str, context: int, response: str, label: float) -> dict:
    return {"messages": [{"role": "user", "content": f"context {context}"}], "response": response, "label": label,
            "meta": {"game": game, "experiment": "e", "game_id": context, "player": "Player 1"}}


# a scripted scorer: a fixed score per (context, reply)
RECORDS_AND_SCORES = [
    (reply("a", 1, "r1", 1.0), 0.9), (reply("a", 1, "r2", 0.0), 0.3), (reply("a", 1, "r3", 0.0), 0.5),
    (reply("a", 1, "r4", 0.0), 0.1), (reply("a", 1, " r1 ", 0.0), 0.0),  # the same move as r1: no pair
    (reply("a", 2, "s1", 1.0), 0.4), (reply("a", 2, "s2", 0.5), 0.6),
    (reply("b", 3, "t1", 1.0), 0.5), (reply("b", 3, "t2", 0.0), 0.5),
    (reply("b", 4, "lonely", 1.0), 0.7),  # no sibling: no pair
]


def scripted():
    return [r for r, _ in RECORDS_AND_SCORES], [s for _, s in RECORDS_AND_SCORES]


def test_sibling_accuracy_and_delta_over_sigma_match_hand_computed_values():
    metrics = sibling_metrics(*scripted())
    game_a, game_b = metrics["sibling_games"]["a"], metrics["sibling_games"]["b"]
    # game a, different labels: r1>r2 (+0.6), r1>r3 (+0.4), r1>r4 (+0.8), s1>s2 (-0.2): 3 of 4 right
    assert (game_a["pairs"], game_a["accuracy"], game_a["contexts"]) == (4, 0.75, 2)
    assert game_a["delta"] == pytest.approx(1.6 / 4)
    # equal labels r2-r3 (-0.2), r2-r4 (+0.2), r3-r4 (+0.4): sigma is their root mean square
    assert game_a["equal_pairs"] == 3 and game_a["sigma"] == pytest.approx(math.sqrt(0.24 / 3))
    assert game_a["delta_over_sigma"] == pytest.approx(0.4 / math.sqrt(0.08))
    # game b: one pair, tied scores count one half; no equal-label pair, so sigma comes from all games
    assert (game_b["pairs"], game_b["accuracy"], game_b["delta"]) == (1, 0.5, 0.0)
    assert game_b["sigma_from"] == "all games" and game_b["sigma"] == pytest.approx(math.sqrt(0.08))
    assert game_b["delta_over_sigma"] == 0.0
    assert metrics["sibling_pairs"] == 5 and metrics["sibling_accuracy"] == pytest.approx(3.5 / 5)
    assert metrics["sibling_delta_over_sigma"] == pytest.approx((1.6 / 5) / math.sqrt(0.08))


def test_advantage_labels_give_the_same_sibling_pairs_as_the_values_they_come_from():
    records, scores = scripted()
    by_context = {}
    for record in records:
        by_context.setdefault(record["messages"][0]["content"], []).append(record["label"])
    advantage = [{**r, "label": 0.5 + (r["label"] - sum(by_context[r["messages"][0]["content"]])
                                      / len(by_context[r["messages"][0]["content"]])) / 2} for r in records]
    assert sibling_pairs(advantage, scores) == sibling_pairs(records, scores)


def test_without_equal_label_pairs_anywhere_delta_over_sigma_is_left_out():
    metrics = sibling_metrics([reply("a", 1, "x", 1.0), reply("a", 1, "y", 0.0)], [0.7, 0.2])
    assert metrics["sibling_accuracy"] == 1.0 and metrics["sibling_delta"] == pytest.approx(0.5)
    assert "sibling_delta_over_sigma" not in metrics and "sigma" not in metrics["sibling_games"]["a"]


def test_paired_sibling_difference_compares_two_scorers_on_the_same_pairs():
    records, scores = scripted()
    perfect = [record["label"] for record in records]  # a scorer that knows the labels orders every pair right
    difference = paired_sibling_difference(sibling_pairs(records, perfect), sibling_pairs(records, scores),
                                           n_resamples=200)
    assert difference["pairs"] == 5 and difference["contexts"] == 3
    assert difference["difference"] == pytest.approx(1.0 - 0.7)
    assert difference["low"] <= difference["difference"] <= difference["high"]


def test_results_md_states_the_prms_sibling_accuracy_and_delta_over_sigma():
    from playprm.pipeline.summary import sibling_line

    records, scores = scripted()
    metrics = sibling_metrics(records, scores)
    line = sibling_line({key: metrics.get(f"sibling_{key}") for key in ("accuracy", "pairs", "contexts",
                                                                         "delta_over_sigma", "games")})
    assert "sibling accuracy 0.700 over 5 pairs (3 contexts; 0.5 is chance), Δ/σ 1.13" in line
    assert "per game Δ/σ: a 1.41; b 0.00" in line
    assert "not measured" in sibling_line({})  # a PRM trained before train-prm reported it


def test_sibling_eval_scores_one_folders_pairs_with_every_prm_and_pairs_their_accuracies(card_models, tmp_path,
                                                                                          capsys):
    import json

    from playprm.cli import main

    data = tmp_path / "data"
    data.mkdir()
    records = [r for r, _ in RECORDS_AND_SCORES]
    (data / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    prm = str(card_models["prm"])
    assert main(["sibling-eval", "--prm-path", prm, "--prm-path", prm, "--data", str(data), "--out",
                 str(tmp_path / "out")]) == 0
    result = json.loads((tmp_path / "out" / "siblings.json").read_text())
    assert result["records"] == len(records) - 1  # the reply without a sibling is not scored
    (first,) = result["prms"].values()  # one PRM named twice: one entry
    assert first["sibling_pairs"] == 5 and 0 <= first["sibling_accuracy"] <= 1
    assert result["paired_accuracy_minus_first"][prm]["difference"] == 0  # the same scores on the same pairs
    assert "sibling accuracy" in capsys.readouterr().out


def test_sibling_eval_of_a_folder_that_is_no_prm_is_a_one_line_error(tmp_path, capsys):
    from playprm.cli import main

    assert main(["sibling-eval", "--prm-path", str(tmp_path), "--data", str(tmp_path)]) == 2
    assert "prm_config.json" in capsys.readouterr().err

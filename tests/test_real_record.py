"""The model card's system on the real games, read by playprm: the LM Playschool 2026 in-domain folders of the
card's PRM-guided system and of its base model (../shared/data/lm-playschool-2026-27b, published results).

report reproduces the published figures with no flags, says where guidance lost (per-game paired table),
counts the repeated rejected moves in the transcripts, and sft-data / prm-data read the real transcripts.
Skipped where ../shared is absent (a user's clone)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playprm.cli import main

PLAYSCHOOL = Path(__file__).resolve().parents[2] / "shared" / "data" / "lm-playschool-2026-27b"
BASE, CARD = "qwen3.5-27b", "SLED-BSU__Qwen3.5-27B-sft-ep1__prm-ep1-best_of_n"
PLAYPEN_STATIC = ["bbh", "cladder", "eqbench", "ifeval", "mmlu_pro"]


@pytest.fixture(scope="module")
def playschool() -> Path:
    if not PLAYSCHOOL.is_dir():
        pytest.skip(f"shared data not found at {PLAYSCHOOL} (only CI and dev machines have ../shared)")
    return PLAYSCHOOL


@pytest.fixture(scope="module")
def tables(playschool) -> dict:
    from playprm.report.clemscore import compute_table

    return {name: compute_table([playschool / name], n_resamples=20) for name in (BASE, CARD)}


@pytest.mark.parametrize("name, published", [(BASE, 64.34), (CARD, 56.36)])
def test_report_gives_the_published_in_domain_clemscore_without_flags(tables, name, published):
    from playprm.report.clemscore import CLEMSCORE, INTERACTIVE, STATSCORE

    table = tables[name]
    assert table.at[name, CLEMSCORE] == published  # clemcore's all-games clemscore, the workshop's column
    assert table.attrs["static_games"] == PLAYPEN_STATIC  # known by Playpen's suite names, no flag given
    assert table.at[name, INTERACTIVE] != published and table.at[name, STATSCORE] > 0


def test_a_negative_eqbench_score_is_counted_as_clemcore_counts_it(tables):
    summary = " ".join(tables[CARD].attrs["summary"])
    assert "1 episode(s) with a score out of its usual range, counted as clemcore counts them" in summary
    assert "Main Score is -13.34" in summary and "could not be read" not in summary


def test_the_per_game_paired_table_shows_where_the_card_lost(playschool):
    from playprm.report.paired import paired_difference, run_episodes
    from playprm.report.paired_games import per_game_differences

    card, base = run_episodes(playschool / CARD), run_episodes(playschool / BASE)
    total = paired_difference(card, base, n_resamples=200)
    games = {g.game: g for g in per_game_differences(card, base, n_resamples=200)}
    assert total.high < 0 and total.episodes == 1272
    assert list(games)[0] == "clean_up"  # most lost: % played 100 -> 38.9
    assert games["clean_up"].played == pytest.approx(-61.11, abs=0.01) and games["clean_up"].points_ci[1] < 0
    assert games["adventuregame"].quality == pytest.approx(48.33 - 90.83, abs=0.01)
    for gained in ("dond", "privateshared"):
        assert games[gained].points_ci[0] > 0
    assert sum(g.points for g in games.values()) == pytest.approx(total.difference, abs=0.3)


def test_turns_show_the_card_repeating_rejected_replies_until_clean_up_aborts(playschool):
    from playprm.report.guided_turns import guided_turns

    card = guided_turns(playschool / CARD / "clean_up")
    base = guided_turns(playschool / BASE / "clean_up")
    assert card[(CARD, "clean_up")].aborted == 11 and card[(CARD, "clean_up")].aborted_after_repeat == 10
    assert base[(BASE, "clean_up")].aborted_after_repeat == 0


def test_sft_and_prm_data_read_the_base_models_real_transcripts(playschool, tmp_path, capsys):
    assert main(["sft-data", "--results-dir", str(playschool / BASE), "--out", str(tmp_path / "sft")]) == 0
    samples = [json.loads(line) for split in ("train", "validation")
               for line in (tmp_path / "sft" / f"{split}.jsonl").read_text().splitlines()]
    assert len(samples) == 1064  # 722 won episodes; two-player games give a sample per LLM player
    assert all(s["meta"]["outcome"] == "success" and s["messages"][-1]["role"] == "assistant" for s in samples)
    per_game = {}
    for sample in samples:
        per_game[sample["meta"]["game"]] = per_game.get(sample["meta"]["game"], 0) + 1
    assert (per_game["referencegame"], per_game["codenames"], per_game["wordle"]) == (168, 78, 10)
    assert main(["prm-data", "--results-dir", str(playschool / BASE), "--labels", "outcome",
                 "--out", str(tmp_path / "prm")]) == 0
    assert "wrote 5782 train and 559 validation records" in capsys.readouterr().out


def test_transcribe_out_writes_pages_elsewhere_with_outcome_and_score_in_the_index(playschool, tmp_path):
    source = playschool / CARD / "wordle"
    assert main(["transcribe", "--results-dir", str(source), "--out", str(tmp_path / "pages")]) == 0
    index = (tmp_path / "pages" / "index.html").read_text()
    assert "<h1>30 episodes</h1>" in index and "<td>aborted</td>" in index and "<td>100.00</td>" in index
    assert len(list((tmp_path / "pages").rglob("transcript.html"))) == 30
    assert not list((tmp_path / "pages").rglob("search.html"))  # no candidate logs: no copy of the transcript
    assert not list(source.rglob("*.html"))  # the input folder is left as it was

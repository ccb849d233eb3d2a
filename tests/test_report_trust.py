"""Reports a researcher can trust at a glance (issue 31): `playprm report` and `playprm transcribe` never write into
what they read, say which clemscore every number is, and refuse, at once and in one line, what cannot be compared."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_report import episode_scores, write_episode

from playprm.cli import build_parser, main

README = Path(__file__).resolve().parents[1] / "README.md"
PLAYSCHOOL = Path(__file__).resolve().parents[2] / "shared" / "data" / "lm-playschool-2026-27b"
PLAYPEN_STATIC = ("bbh", "cladder", "eqbench", "ifeval", "mmlu_pro")
CLEM_EVAL_CSV = ",-, clemscore,all, Average % Played,all, Average Quality Score\nm,40.5,83.11,48.73\n"


def playpen_run(root: Path, name: str, qualities: dict[str, list[float]]) -> Path:
    """A folder as `playpen eval` writes it: <name>/clem/<name>/<game>/... for interactive games and
    <name>/static/<name>/<game>/... for Playpen's static tasks, plus clem eval's results.csv in each."""
    for game, values in qualities.items():
        kind = "static" if game in PLAYPEN_STATIC else "clem"
        for k, quality in enumerate(values):
            write_episode(root / name / kind, name, game, "e", f"instance_{k:05d}", episode_scores(False, quality))
    for kind in ("clem", "static"):
        (root / name / kind).mkdir(parents=True, exist_ok=True)
        (root / name / kind / "results.csv").write_text(CLEM_EVAL_CSV)  # as clemcore's `clem eval` wrote it
    return root / name


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """Two Playpen-shaped runs on the same instances (interactive wordle and taboo, static ifeval), and a working
    directory of their own."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    base = playpen_run(tmp_path / "published", "base", {"wordle": [100, 100, 0, 100], "taboo": [50, 50, 50, 50],
                                                        "ifeval": [100, 0, 100, 100]})
    tuned = playpen_run(tmp_path / "published", "tuned", {"wordle": [0, 100, 0, 0], "taboo": [50, 0, 50, 50],
                                                          "ifeval": [100, 100, 100, 100]})
    return base, tuned


def test_report_writes_into_its_own_folder_named_first_and_leaves_the_run_untouched(runs, capsys):
    base, _ = runs
    before = digests(base)
    assert main(["report", "--results-dir", str(base / "clem"), "--resamples", "20"]) == 0
    assert main(["report", "--results-dir", str(base), "--resamples", "20"]) == 0
    printed = capsys.readouterr().out
    assert digests(base) == before  # clem eval's results.csv and every episode file: the same bytes
    first_lines = [line for line in printed.splitlines() if line.startswith("playprm report: writing into")]
    assert first_lines == ["playprm report: writing into playprm-reports/base_clem/ (--out chooses another folder)",
                           "playprm report: writing into playprm-reports/base/ (--out chooses another folder)"]
    assert printed.startswith(first_lines[0])
    for name in ("base_clem", "base"):
        assert {p.name for p in (Path("playprm-reports") / name).iterdir()} == {"results.csv", "results.md",
                                                                               "clemscore.png"}
    assert not Path("clembench.log").exists()


def test_a_run_with_both_kinds_shows_playpens_two_numbers_by_name(runs):
    base, _ = runs
    assert main(["report", "--results-dir", str(base), "--resamples", "20", "--out", "o"]) == 0
    assert main(["report", "--results-dir", str(base / "clem"), "--resamples", "20", "--out", "c"]) == 0
    both = pd.read_csv("o/results.csv", index_col=0).loc["base"]
    clem_only = pd.read_csv("c/results.csv", index_col=0).loc["base"]
    # Playpen's clemscore is clemcore's clemscore over the interactive games (its clem/ folder) alone
    assert both["-, clemscore (interactive)"] == clem_only["-, clemscore"] == 62.5  # 100 % x (75 + 50) / 2
    assert both["-, statscore"] == 75.0 and both["-, clemscore"] == 66.67  # clemcore: all three games
    markdown = Path("o/results.md").read_text()
    for header in ("Playpen clemscore (interactive games)", "statscore (static tasks)",
                   "clemcore clemscore (all games)", "ifeval (static)"):
        assert header in markdown
    assert "in-domain" not in markdown  # what clemcore's all-games figure is on another folder is not said here
    assert "clemscore (all games; none static)" in Path("c/results.md").read_text()


def test_paired_shows_each_score_by_name_with_both_runs_values(runs, capsys):
    base, tuned = runs
    assert main(["report", "--compare", str(base), str(tuned), "--paired", "base", "tuned", "--resamples", "50"]) == 0
    out = Path("playprm-reports/base_vs_tuned")
    paired = json.loads((out / "paired.json").read_text())[0]
    compare = pd.read_csv(out / "compare.csv", index_col=0)
    assert [s["score"] for s in paired["scores"]] == ["Playpen clemscore (interactive games)",
                                                      "statscore (static tasks)", "clemcore clemscore (all games)"]
    playpen = paired["scores"][0]
    assert paired["score"] == playpen["score"] and paired["difference"] == playpen["difference"]
    assert (playpen["a_score"], playpen["b_score"]) == (compare.at["base", "-, clemscore (interactive)"],
                                                        compare.at["tuned", "-, clemscore (interactive)"])
    assert playpen["difference"] == pytest.approx(62.5 - 31.25)  # wordle and taboo only, on the same instances
    assert paired["scores"][1]["difference"] == pytest.approx(75.0 - 100.0)  # ifeval alone
    games = {row["game"]: row for row in paired["games"]}
    assert set(games) == {"wordle", "taboo", "ifeval"}
    assert games["ifeval"]["points"] == pytest.approx(-25.0)  # a static task moves statscore, not clemscore
    text = (out / "paired.md").read_text()
    assert "| base | tuned | Playpen clemscore (interactive games) | 62.50 | 31.25 | 31.25 |" in text and "ifeval (static)" in text
    assert (out / "forest_base_vs_tuned.png").read_bytes()[:4] == b"\x89PNG"


def test_the_forest_plot_is_named_by_the_runs_not_their_relative_paths(tmp_path, monkeypatch):
    for parent, values in (("data", [100, 100]), ("x/playpen_runs", [0, 100])):
        playpen_run(tmp_path / parent, "qwen", {"wordle": values})
    monkeypatch.chdir(tmp_path / "x")
    assert main(["report", "--compare", "../data/qwen", "playpen_runs/qwen", "--paired", "../data/qwen",
                 "playpen_runs/qwen", "--resamples", "20", "--out", "../o"]) == 0
    assert [p.name for p in (tmp_path / "o").glob("forest_*.png")] == ["forest_data_qwen_vs_playpen_runs_qwen.png"]


def test_compare_md_leaves_out_columns_empty_for_runs_played_elsewhere_and_says_why_no_compute_plot(runs, capsys):
    base, tuned = runs
    assert main(["report", "--compare", str(base), str(tuned), "--resamples", "20", "--out", "o"]) == 0
    printed = capsys.readouterr().out
    header = Path("o/compare.md").read_text().split("## Runs not played by playprm")[1].split("\n")[2]
    assert "mode" not in header and "tok/ep" not in header and "wall s/ep" not in header
    assert len(header.split("|")) - 2 == 9  # run, three scores, % played, quality, episodes, errored, unreadable
    assert "no compute.png: no run has cost.json files" in printed and not Path("o/compute.png").exists()
    assert "Quality Score per game" in Path("o/compare.md").read_text()


REFUSALS = {
    "a missing folder": ["report", "--results-dir", "missing"],
    "one folder twice": ["report", "--compare", "{base}", "{base}/"],
    "a run paired with itself": ["report", "--compare", "{base}", "{tuned}", "--paired", "base", "base"],
    "runs without a shared instance": ["report", "--compare", "{base}", "{other}", "--paired", "base", "other"],
    "--out inside an input": ["report", "--results-dir", "{base}", "--out", "{base}/clem/report"],
    "--out holding clem eval's results.csv": ["report", "--results-dir", "{base}/clem", "--out", "{base}/static"],
    "--paired without --compare": ["report", "--results-dir", "{base}", "--paired", "a", "b"],
    "transcribe into its input": ["transcribe", "--results-dir", "{base}", "--out", "{base}/pages"],
}


def test_refusals_are_one_line_exit_2_write_nothing_and_come_before_pandas_and_clemcores_games(runs, tmp_path):
    base, tuned = runs
    other = tmp_path / "other"
    write_episode(other, "other", "wordle", "e", "instance_00099", episode_scores(False, 10.0))
    before = digests(tmp_path)
    script = ("import json, sys\nfrom playprm.cli import main\ncases = json.loads(sys.argv[1])\nout = {}\n"
              "for name, argv in cases.items():\n    out[name] = main(argv)\n"
              "heavy = [m for m in ('pandas', 'matplotlib', 'torch', 'clemcore.clemgame') if m in sys.modules]\n"
              "print(json.dumps({'codes': out, 'heavy': heavy}))\n")
    cases = {name: [arg.format(base=base, tuned=tuned, other=other) for arg in argv] for name, argv in REFUSALS.items()}
    run = subprocess.run([sys.executable, "-c", script, json.dumps(cases)], cwd=Path.cwd(), capture_output=True,
                         text=True, timeout=300)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["codes"] == dict.fromkeys(REFUSALS, 2)
    assert result["heavy"] == []  # every check ran on names alone, before the seconds-long imports
    errors = run.stderr.strip().splitlines()
    assert len(errors) == len(REFUSALS) and all(line.startswith("playprm ") and ": error: " in line for line in errors)
    assert "share no instance" in run.stderr and "both name the same run" in run.stderr
    assert "are the same folder" in run.stderr and "inside the input folder" in run.stderr
    assert "holds a results.csv that playprm did not write" in run.stderr
    assert digests(tmp_path) == before  # nothing written anywhere, no clembench.log in the working directory


def interactions(turns: int = 1) -> dict:
    return {"meta": {"game_name": "wordle", "experiment_name": "e", "game_id": 0, "results_folder": "m--m"},
            "players": {"GM": {"game_role": "Game Master", "model_name": "programmatic"},
                        "Player 1": {"game_role": "Guesser", "model_name": "m"}},
            "turns": [[{"from": "GM", "to": "Player 1", "timestamp": "2026-12-04T00:00:00",
                        "action": {"type": "send message", "content": f"round {k}"}}] for k in range(turns)]}


def test_transcribe_shows_an_episode_whose_scores_json_is_broken_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "r"
    for k in range(2):
        folder = write_episode(results, "m--m", "wordle", "e", f"instance_{k:05d}", episode_scores(False, 50.0),
                               interactions=interactions())
    (folder / "scores.json").write_text('{"episode scores": {"Aborted": 0,')
    before = digests(results)
    assert main(["transcribe", "--results-dir", str(results)]) == 0
    printed = capsys.readouterr().out
    pages = Path("playprm-reports/r/transcripts")
    assert printed.startswith("playprm transcribe: writing into playprm-reports/r/transcripts/")
    assert "1 episode(s) shown without an outcome" in printed and "scores.json cannot be read" in printed
    assert "2 episodes (2 transcript.html, 0 search.html)" in printed
    assert (pages / "m--m/wordle/e/instance_00001/transcript.html").is_file()
    assert "no outcome: scores.json cannot be read" in (pages / "index.html").read_text()
    assert digests(results) == before and not Path("clembench.log").exists()


def test_transcribe_counts_episodes_not_pages(tmp_path, capsys):
    # a guided episode has two pages (transcript.html and search.html): 3 guided episodes are 3 episodes, 6 pages
    results = tmp_path / "r"
    for k in range(3):
        folder = write_episode(results, "m--m", "wordle", "e", f"instance_{k:05d}", episode_scores(False, 50.0),
                               interactions=interactions())
        (folder / "candidates.jsonl").write_text(json.dumps(
            {"mode": "best-of-n", "chosen": 0, "candidates": [{"text": "GUESS: crane", "score": 0.5, "tokens": 3}]})
            + "\n")
    assert main(["transcribe", "--results-dir", str(results), "--out", str(tmp_path / "pages")]) == 0
    printed = capsys.readouterr().out
    assert "3 episodes (3 transcript.html, 3 search.html)" in printed and "6 episode" not in printed
    assert len(list((tmp_path / "pages").rglob("search.html"))) == 3


def usage_lines() -> list[str]:
    return re.findall(r"^\| `playprm ([^`]+)` \|", README.read_text(), flags=re.MULTILINE)


def usage_argv(line: str) -> list[str]:
    """A usage line as one command line: every optional part taken, the first of ``a|b`` values and of
    ``--x X | --y Y`` flags, placeholders (``R``, ``DIR``, ``S``) as ``1``; ``...`` dropped."""
    tokens = line.replace("\\|", "|").replace("[", " ").replace("]", " ").split()
    argv, dropping = [], ""
    for token in tokens:
        if token == "|":
            dropping = "flag"  # the alternative flag after `|` and its values are left out
        elif dropping == "flag" or (dropping == "values" and not token.startswith("--")):
            dropping = "values"
        elif token != "...":
            dropping = ""
            token = token.split("|")[0]
            argv.append("1" if re.fullmatch(r"[A-Z][A-Z0-9]*", token) else token)
    return argv


def test_every_readme_usage_line_parses(capsys):
    parser = build_parser()
    lines = usage_lines()
    assert any(line.startswith("report ") for line in lines)
    for line in lines:
        try:
            parser.parse_args(usage_argv(line))
        except SystemExit:
            pytest.fail(f"README usage line does not parse: playprm {line}\n{capsys.readouterr().err}")


@pytest.mark.skipif(not PLAYSCHOOL.is_dir(), reason=f"shared data not found at {PLAYSCHOOL}")
def test_published_27b_folders_as_playpen_runs_keep_their_bytes_and_show_playpens_numbers(tmp_path, monkeypatch):
    # the in-domain folders laid out as `playpen eval` writes them, a few episodes per experiment to stay quick
    for name in ("qwen3.5-27b", "SLED-BSU__Qwen3.5-27B-sft-ep1__prm-ep1-best_of_n"):
        for game_dir in sorted((PLAYSCHOOL / name).iterdir()):
            if not game_dir.is_dir() or game_dir.name not in ("wordle", "taboo", "imagegame", "ifeval", "cladder"):
                continue
            kind = "static" if game_dir.name in PLAYPEN_STATIC else "clem"
            for experiment in sorted(p for p in game_dir.iterdir() if p.is_dir()):
                for episode in sorted(p for p in experiment.iterdir() if p.is_dir())[:3]:
                    shutil.copytree(episode, tmp_path / "runs" / name / kind / name / game_dir.name /
                                    experiment.name / episode.name)
    monkeypatch.chdir(tmp_path)
    before = digests(tmp_path / "runs")
    base, card = "runs/qwen3.5-27b", "runs/SLED-BSU__Qwen3.5-27B-sft-ep1__prm-ep1-best_of_n"
    assert main(["report", "--compare", base, card, "--paired", base, card, "--resamples", "20"]) == 0
    assert main(["report", "--results-dir", f"{base}/clem", "--resamples", "20"]) == 0
    assert digests(tmp_path / "runs") == before
    compare = pd.read_csv(next(Path("playprm-reports").glob("*_vs_*")) / "compare.csv", index_col=0)
    clem_only = pd.read_csv("playprm-reports/qwen3.5-27b_clem/results.csv", index_col=0)
    assert compare.at["qwen3.5-27b", "-, clemscore (interactive)"] == clem_only.at["qwen3.5-27b", "-, clemscore"]
    assert set(compare.at["qwen3.5-27b", "static games"].split(", ")) == {"cladder", "ifeval"}


# Reports say what a blank means (issue 60): lookahead rows apart, a run without a clemscore blank everywhere,
# every grid row on the cost plot, plots that fit their text


def write_run(folder: Path, scores: list[float | None], *, mode: str = "greedy", lookahead: bool = False,
              tokens: float = 40.0, model: str = "policy-t0.0--policy-t0.0", game: str = "referencegame") -> Path:
    """A results folder as eval writes it: one episode per score (None: aborted), each with a cost.json, and the
    run's playprm_run.json (a greedy run records the beam settings it never reads, as eval does)."""
    for k, score in enumerate(scores):
        episode = write_episode(folder, model, game, f"{k % 2}_e", f"episode_{k}", episode_scores(score is None, score))
        (episode / "cost.json").write_text(json.dumps({"generated_tokens": tokens}))
    (folder / model / "playprm_run.json").write_text(json.dumps({
        "mode": mode, "env_lookahead": lookahead, "n_candidates": 1 if mode == "greedy" else 4, "beam_width": 2,
        "num_beam_iterations": 4, "aggregate": "last", "seed": 0}))
    return folder


def test_report_results_dir_keeps_environment_lookahead_runs_apart(tmp_path, capsys):
    from playprm.report.render import HONEST_TITLE, LOOKAHEAD_TITLE

    results = tmp_path / "r"
    write_run(results, [100.0, 0.0], model="greedy-t0.0--greedy-t0.0")
    write_run(results, [100.0, 100.0], mode="beam-search", lookahead=True, model="beam-t0.7--beam-t0.7")
    assert main(["report", "--results-dir", str(results), "--out", str(tmp_path / "out"), "--resamples", "20"]) == 0
    printed = capsys.readouterr().out
    assert printed.index(HONEST_TITLE) < printed.index("greedy-t0.0") < printed.index(LOOKAHEAD_TITLE)
    assert printed.index(LOOKAHEAD_TITLE) < printed.index("beam-t0.7")  # overview and per game, each apart
    assert printed.count(LOOKAHEAD_TITLE) == 2
    markdown = (tmp_path / "out" / "results.md").read_text()
    assert f"## {LOOKAHEAD_TITLE}" in markdown and f"### {LOOKAHEAD_TITLE}" in markdown
    csv = pd.read_csv(tmp_path / "out" / "results.csv", index_col=0)
    assert csv["env_lookahead"].to_dict() == {"beam-t0.7--beam-t0.7": True, "greedy-t0.0--greedy-t0.0": False}


def test_paired_between_runs_without_a_clemscore_is_blank_not_zero(tmp_path, capsys):
    first, second = write_run(tmp_path / "first", [None, None]), write_run(tmp_path / "second", [None, None])
    assert main(["report", "--compare", str(first), str(second), "--paired", "first", "second", "--out",
                 str(tmp_path / "out"), "--resamples", "20"]) == 0
    text = (tmp_path / "out" / "paired.md").read_text()
    paired = text.split("\n\n")[1]  # the table of paired differences
    assert "no clemscore (first and second: no episode played to the end)" in paired
    assert "0.00" not in paired and "[" not in paired
    per_game = text.split("## Where first and second differ, per game")[1]  # its points blank too, % played 0
    assert "| referencegame | 2 |  | 0.00 -> 0.00 |" in per_game and "clemscore points are blank" in per_game


def test_compare_csv_leaves_beam_settings_blank_for_modes_that_do_not_read_them(tmp_path):
    from playprm.report.compare import compare_runs

    greedy = write_run(tmp_path / "greedy", [100.0])
    beam = write_run(tmp_path / "beam", [100.0], mode="beam-search", lookahead=True)
    best = write_run(tmp_path / "best", [100.0], mode="best-of-n")
    table = compare_runs([greedy, beam, best], n_resamples=10)
    for column in ("run beam_width", "run num_beam_iterations", "run aggregate"):
        assert table[column].isna().to_dict() == {"greedy": True, "best": True, "beam": False}
    assert table.at["beam", "run beam_width"] == 2 and table.at["greedy", "run seed"] == 0


def captured_plots(monkeypatch) -> dict[str, dict]:
    """Each plot's legend labels and figure texts by file name, in place of writing it."""
    from playprm.report import plots

    drawn = {}

    def capture(figure, path):
        legends = [legend for axes in figure.axes for legend in [axes.get_legend()] if legend]
        drawn[Path(path).name] = {"labels": [t.get_text() for legend in legends for t in legend.get_texts()],
                                  "texts": [t.get_text() for t in figure.texts]}
        return path

    monkeypatch.setattr(plots, "save_png", capture)
    return drawn


def test_results_md_leaves_a_run_that_played_nothing_blank_and_every_grid_row_is_a_point(tmp_path, monkeypatch):
    from playprm.pipeline.small import GridRow
    from playprm.pipeline.summary import write_results

    drawn = captured_plots(monkeypatch)
    grid = [GridRow("base-greedy", policy="base"), GridRow("sft-greedy"),
            GridRow("sft-prm-bon4", n=4, scorer="prm", selection="argmax"),
            GridRow("sft-grpo-greedy", policy="sft-grpo"), GridRow("sft-dpo-greedy", policy="sft-dpo"),
            GridRow("sft-beam", n=4, scorer="prm")]
    runs = {"base-greedy": ([None] * 4, "greedy", 30.0), "sft-greedy": ([100.0, 0.0, 0.0, 100.0], "greedy", 56.0),
            "sft-prm-bon4": ([100.0, 0.0, 100.0, 0.0], "best-of-n", 230.0),
            "sft-grpo-greedy": ([100.0] * 3 + [0.0], "greedy", 56.0),
            "sft-dpo-greedy": ([100.0, 100.0, 0.0, 0.0], "greedy", 58.0),
            "sft-beam": ([100.0] * 4, "beam-search", 300.0)}
    for name, (scores, mode, tokens) in runs.items():
        write_run(tmp_path / "results" / name, scores, mode=mode, lookahead=mode == "beam-search", tokens=tokens)
    write_results(tmp_path, command="playprm pipeline", seed=0, grid=[row.as_dict() for row in grid],
                  pairs=[("sft-greedy", "base-greedy"), ("sft-grpo-greedy", "sft-greedy")], n_resamples=20)
    document = json.loads((tmp_path / "results.json").read_text())
    base = next(row for row in document["rows"] if row["name"] == "base-greedy")
    assert base["clemscore"] is None and base["ci"] == [None, None] and base["percent_played"] == 0
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| base-greedy | base | greedy | 1 |  |  | no clemscore (0 % played) |" in text
    assert "| sft-greedy | base-greedy |" in text and "no clemscore (base-greedy: no episode played" in text
    # the cost plot: every row of the grid, learned rows included; the one without a clemscore named below it
    tokens = drawn["clemscore_vs_tokens.png"]
    assert {"sft-greedy", "sft-grpo-greedy", "sft-dpo-greedy", "sft-beam (env lookahead, not honest)",
            "best-of-N, PRM, argmax (the card's)"} <= set(tokens["labels"])
    assert tokens["texts"] == ["left out: base-greedy (no clemscore: no episode played to the end)"]
    # against N: each learned greedy row is a reference line beside SFT greedy
    assert {"sft-greedy", "sft-grpo-greedy", "sft-dpo-greedy"} <= set(drawn["clemscore_vs_n.png"]["labels"])


def test_compute_png_names_the_runs_it_leaves_out(tmp_path, monkeypatch):
    from playprm.report.compare import compare_runs
    from playprm.report.outputs import write_comparison

    drawn = captured_plots(monkeypatch)
    played, blank = write_run(tmp_path / "played", [100.0, 0.0]), write_run(tmp_path / "blank", [None, None])
    write_comparison(compare_runs([played, blank], n_resamples=10), tmp_path / "out")
    assert drawn["compute.png"]["texts"] == ["left out: blank (no clemscore: no episode played to the end)"]


def test_plots_fit_their_title_and_legend(tmp_path):
    """clemscore.png with static tasks has a long title and a legend below the axes: the saved image holds them,
    its edge columns blank (the figure grows to its text, rather than cutting it at the right edge)."""
    import matplotlib.image

    from playprm.report.clemscore import compute_table
    from playprm.report.plots import plot_clemscore

    results = tmp_path / "r"
    for model in ("a-rather-long-model-name-t0.0--a-rather-long-model-name-t0.0", "b-t0.0--b-t0.0"):
        write_run(results, [100.0, 0.0], model=model)
        write_run(results, [100.0, 100.0], model=model, game="bbh")  # Playpen's static suite, by name
    path = plot_clemscore(compute_table([results], n_resamples=10), tmp_path / "clemscore.png")
    image = matplotlib.image.imread(path)[..., :3]
    for edge in (image[:, 0], image[:, -1], image[0], image[-1]):
        assert edge.min() > 0.95  # white: no title, label or legend runs off the image

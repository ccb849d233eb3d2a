"""benchmarks/guesser_work.py: the checks of a reference-game guesser's written work (issue 61 item 3), on
episodes the expert plays and on one whose guesser copies the rows but judges them wrongly."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from playprm.games.builtin.expert import guesser_reply

REPO_ROOT = Path(__file__).resolve().parents[1]
GRIDS = ["X X X X X\n▢ ▢ ▢ X ▢\n▢ ▢ X ▢ ▢\n▢ X ▢ ▢ ▢\nX X X X X",
         "▢ X X X ▢\nX ▢ ▢ ▢ X\nX X X X X\nX ▢ ▢ ▢ X\nX ▢ ▢ ▢ X",
         "X X X X X\n▢ ▢ X ▢ ▢\n▢ ▢ X ▢ ▢\n▢ ▢ X ▢ ▢\nX X X X X"]


def load_script():
    spec = importlib.util.spec_from_file_location("guesser_work", REPO_ROOT / "benchmarks" / "guesser_work.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_episode(folder: Path, guesser: str, expression: str = "EXPRESSION: the first row is ▢ X X X ▢") -> None:
    folder.mkdir(parents=True)
    (folder / "instance.json").write_text(json.dumps({"guesser_grids": GRIDS, "guesser_target": "second"}))
    said = [{"from": player, "action": {"type": "get message", "content": text}}
            for player, text in (("Player 1", expression), ("Player 2", guesser))]
    (folder / "interactions.json").write_text(json.dumps({"turns": [said]}))


def test_the_experts_work_passes_every_check_and_a_guesser_that_judges_wrong_fails_the_judgement(tmp_path):
    work = load_script()
    rows = [grid.split("\n")[0] for grid in GRIDS]
    cells = "▢ X X X ▢"
    write_episode(tmp_path / "expert" / "referencegame" / "e" / "episode_0", guesser_reply(rows, cells, "second"))
    wrong = "".join(f"{label}: {row} {judged}\n" for label, row, judged in
                    zip(("first", "second", "third"), rows, ("other", "other", "same"))) + "ANSWER: third"
    write_episode(tmp_path / "wrong" / "referencegame" / "e" / "episode_0", wrong)
    expert, guessed = work.folder_table(tmp_path / "expert"), work.folder_table(tmp_path / "wrong")
    assert expert["describer names a row only the target has"] == 1
    assert (expert["rows copied right"], expert["judged right for the row written"]) == (3, 3)
    assert expert["answer follows its work"] == "1 of 1" and expert["answer is the target"] == 1
    assert guessed["rows copied right"] == 3 and guessed["judged right for the row written"] == 1  # first only
    assert guessed["answer follows its work"] == "1 of 1" and guessed["answer is the target"] == 0
    assert guessed["answers first/second/third/none"] == "0/0/1/0"

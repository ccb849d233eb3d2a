"""docs/games.md as a user meets it: every command of its code blocks runs here, in order, on a small suite this
test writes with stand-ins named after clembench's games (``external_games``' draw games), and does what the text
around it says.

``pip install -r`` installs the suite's own package (a wheel the test writes) into a folder of its own
(``PIP_TARGET``, no index), never into the shared environment. ``clem`` runs as a process in the workspace; the
``playprm`` commands run in this process. The tiny card-layout model stands in for SmolLM2.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from external_games import DRAW_MASTER, draws, write_game

from playprm.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "games.md"
MODEL = "models/SmolLM2-135M-Instruct"
PACKAGE = "clembench_solver"  # the suite's own package, as clingo is adventuregame's


def doc_commands() -> list[tuple[list[str], int]]:
    """Each command of the doc's bash blocks with the exit status it documents (``# exits N``; else 0)."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        for line in block.splitlines():
            if line.strip():
                status = re.search(r"#\s*exits (\d+)", line)
                commands.append((shlex.split(line, comments=True), int(status.group(1)) if status else 0))
    return commands


def doc_registry_entry() -> dict:
    [entry] = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)]
    return entry


def wheel(folder: Path) -> Path:
    """A pure-Python wheel of ``PACKAGE`` (pip installs it from the file, no index)."""
    path = folder / f"{PACKAGE}-0.1-py3-none-any.whl"
    info = f"{PACKAGE}-0.1.dist-info"
    files = {f"{PACKAGE}/__init__.py": "SOLVED = True\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 0.1\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def workspace(root: Path, model: Path) -> Path:
    """clembench/ with a 2.0 referencegame (two instances files), a 2.0 wordle and a 2.0 adventuregame that
    imports the suite's own package; models/ with the model folder; the doc's huggingface_local entry."""
    suite = root / "clembench"
    draws = {"letter_grids": [{"seed": 1, "turns": 2}], "number_grids": [{"seed": 2, "turns": 1}]}
    german = {"letter_grids": [{"seed": 3, "turns": 1}, {"seed": 4, "turns": 2}], "number_grids": [{"seed": 5,
                                                                                                  "turns": 1}]}
    write_game(suite, "referencegame", {"instances": draws, "instances_v2.0_de": german}, benchmark=["2.0"])
    write_game(suite, "wordle", {"instances": {"high_frequency_words_no_clue_no_critic": [{"seed": 6, "turns": 2}]}},
               benchmark=["2.0"])
    write_game(suite, "adventuregame", {"instances": {"home_deliver_three": [{"seed": 7, "turns": 1}]}},
               benchmark=["2.0"], master=f"import {PACKAGE}  # noqa\n" + DRAW_MASTER)
    (suite / "requirements.txt").write_text(f"{wheel(root)}\n")
    shutil.copytree(model, root / MODEL)
    (root / "model_registry.json").write_text(json.dumps([doc_registry_entry()]))
    return root


def test_every_command_of_the_external_suite_guide_runs_as_it_says(card_models, tmp_path, monkeypatch, capsys):
    root = workspace(tmp_path / "workspace", card_models["policy"])
    target = tmp_path / "site"  # where `pip install` puts the suite's package
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(target))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PIP_TARGET": str(target), "PIP_NO_INDEX": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PYTHONPATH": os.pathsep.join([str(target), *filter(None, [os.environ.get("PYTHONPATH")])])}
    outputs, clem_runs = [], []
    for argv, status in doc_commands():
        if argv[0] == "playprm":
            code = main(argv[1:])
            captured = capsys.readouterr()
            outputs.append((argv, status, code, captured.out + captured.err))
        elif argv[0] == "pip":
            run = subprocess.run([sys.executable, "-m", "pip", *argv[1:]], cwd=root, env=env, capture_output=True,
                                 text=True, timeout=300)
            outputs.append((argv, status, run.returncode, run.stdout + run.stderr))
            importlib.invalidate_caches()
        else:  # the clem commands come last and need nothing of each other: started side by side (~25 s each)
            clem_runs.append((argv, status, subprocess.Popen(
                [str(Path(sys.executable).parent / "clem"), *argv[1:]], cwd=root, env=env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
    for argv, status, process in clem_runs:
        output, _ = process.communicate(timeout=300)
        outputs.append((argv, status, process.returncode, output))
    for argv, status, code, output in outputs:
        assert code == status, f"{shlex.join(argv)} exited {code}:\n{output[-3000:]}"

    assert any(f"game adventuregame cannot load: it imports '{PACKAGE}'" in out and "pip install -r" in out
               for _, _, _, out in outputs)
    run = "SmolLM2-135M-Instruct-t0.0--SmolLM2-135M-Instruct-t0.0"
    played = {p.parent.relative_to(root / "results" / run).as_posix()
              for p in (root / "results" / run).rglob("interactions.json")}
    # the 2.0 games with --limit 1: adventuregame's after the install and --retry-errors
    assert played == {"adventuregame/home_deliver_three/instance_00000", "referencegame/letter_grids/instance_00000",
                      "referencegame/number_grids/instance_00000",
                      "wordle/high_frequency_words_no_clue_no_critic/instance_00000"}
    assert not list((root / "results" / run).rglob("error.json"))  # replayed after the install
    german = {p.parent.name for p in (root / "results-de" / run).rglob("interactions.json")}
    assert german == {"instance_00000", "instance_00001"}  # -e letter_grids -i instances_v2.0_de
    listed = next(out for argv, _, _, out in outputs if argv[:3] == ["clem", "list", "games"])
    assert all(f"{game}:" in listed for game in ("adventuregame", "referencegame", "wordle", "taboo"))
    # clem run -e letter_grids -i instances_v2.0_de with either entry: the draw games accept any reply, so that the
    # episodes exist shows nothing of the model; each entry's episodes hold the model folder's own greedy replies,
    # the same through playprm's backend (smol) as through clemcore's huggingface_local (smol-hf), as the doc says
    played_by = {model: {p.parent.name: p.parent for p in (root / "results" / model).glob(
        "referencegame/letter_grids/*/interactions.json")} for model in ("smol", "smol-hf")}
    assert set(played_by["smol"]) == set(played_by["smol-hf"]) == german
    for name, episode in played_by["smol"].items():
        other = played_by["smol-hf"][name]
        assert player_models(episode) == {"smol"} and player_models(other) == {"smol-hf"}
        assert draws(episode) == draws(other) == draws(root / "results-de" / run / "referencegame" / "letter_grids"
                                                        / name)  # the same German instance
        ours, theirs = replies(episode), replies(other)
        assert len(ours) == len(draws(episode)) and all(reply.strip() for reply in ours), ours  # the model spoke
        assert ours == theirs, f"{name}: the playprm entry played {ours}, clemcore's huggingface_local {theirs}"


def replies(episode: Path) -> list[str]:
    """What the player said in an episode, turn by turn (its interactions.json)."""
    turns = json.loads((episode / "interactions.json").read_text())["turns"]
    return [e["action"]["content"] for events in turns for e in events
            if e["from"] == "Player 1" and e["action"]["type"] == "get message"]


def player_models(episode: Path) -> set[str]:
    """The model names an episode's players were played by, the game master aside."""
    players = json.loads((episode / "interactions.json").read_text())["players"]
    return {player["model_name"] for name, player in players.items() if name != "GM"}

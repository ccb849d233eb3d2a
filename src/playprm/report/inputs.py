"""What ``playprm report`` and ``playprm transcribe`` check before they read a score: the input folders, the runs
``--paired`` names and the instances they share, and where the output goes.

Only folder and file names are read here (no pandas, no clemcore: importing clemcore's game package alone takes
seconds), so every refusal comes within a second. Outputs never go into a folder the command was asked to read:
without ``--out`` they go to ``./playprm-reports/<run>/``, and a file another tool wrote there (clemcore's
``results.csv``) is never replaced.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from playprm import atomic
from playprm.errors import UsageError
from playprm.results.layout import ERROR_FILE, walk_results

DEFAULT_REPORTS = Path("playprm-reports")  # playprm's own output folder, in the working directory
PLAYPEN_RUN_FOLDERS = ("clem", "static")  # what `playpen eval` writes above the model folder: not a run's name
# the first line of a file playprm wrote, by name: a results.csv column clemcore's lacks, the index page's title
WRITTEN_BY_PLAYPRM = {"results.csv": "-, clemscore (interactive)", "index.html": "<title>playprm episodes</title>"}
InstanceKey = tuple[str, str, str]  # game, experiment, episode folder


@dataclass
class RunFolder:
    """One input folder: for each model-pair folder below it, the instances that have a scores.json, and whether
    any episode (scored or errored) was found at all."""

    path: Path
    scored: dict[str, set[InstanceKey]] = field(default_factory=dict)
    errored: int = 0

    @property
    def models(self) -> list[str]:
        return sorted(set(self.scored))


def scan_folder(path: Path) -> RunFolder:
    """The episodes under ``path`` by their folder names (``<model>/<game>/<experiment>/<episode>/scores.json``,
    as clemcore's clemeval names them); dot-folders (unfinished staging) are skipped."""
    run = RunFolder(path)
    for folder, _, files in walk_results(path):
        parts = folder.parts
        if len(parts) < 4:
            continue
        if any(name.endswith("scores.json") for name in files):
            model, game, experiment, episode = parts[-4:]
            run.scored.setdefault(model, set()).add((game, experiment, episode))
        elif ERROR_FILE in files:
            run.errored += 1
            run.scored.setdefault(parts[-4], set())
    return run


def check_folder(folder: Path) -> Path:
    """``folder`` as a Path, or UsageError where it is missing or not a folder."""
    path = Path(folder)
    if not path.exists():
        raise UsageError(f"results dir {path} does not exist; pass the folder that `clem run` wrote")
    if not path.is_dir():
        raise UsageError(f"results dir {path} is not a folder; pass the folder that `clem run` wrote")
    return path


def check_input_folders(folders: list[Path], flag: str) -> list[RunFolder]:
    """Each folder scanned, or UsageError for one that is missing, not a folder, given twice or holds no episode."""
    runs, seen = [], {}
    for folder in folders:
        path = check_folder(folder)
        resolved = path.resolve()
        if resolved in seen:
            raise UsageError(f"{flag}: {seen[resolved]} and {path} are the same folder; give each run once")
        seen[resolved] = path
        run = scan_folder(path)
        if not run.scored:
            raise UsageError(f"no scores.json under {path}; score the episodes first (`clem score -r DIR`) or pass "
                             "the folder that holds <model>/<game>/<experiment>/<episode>/")
        runs.append(run)
    return runs


def run_names(results_dir: str, model: str, runs_in_dir: int) -> set[str]:
    """What a user may type for a run: the dir as given or resolved or its folder name, each with the model-pair
    folder after a slash, and without it where the dir holds one run."""
    path = Path(results_dir)
    names = {f"{base}/{model}" for base in (results_dir, path.name, str(path.resolve()))}
    if runs_in_dir == 1:
        names |= {results_dir, path.name, str(path.resolve())}
    return names


def _named_run(runs: list[RunFolder], name: str) -> tuple[RunFolder, str]:
    name = name.rstrip("/")
    matches = [(run, model) for run in runs for model in run.models
               if name in run_names(str(run.path), model, len(run.models))]
    if not matches:
        offered = ", ".join(run.path.name for run in runs)
        raise UsageError(f"--paired: {name!r} is none of the --compare runs; name a run by its folder ({offered}) "
                         "or as <folder>/<model-pair folder>")
    if len(matches) > 1:
        several = ", ".join(f"{run.path.name}/{model}" for run, model in matches)
        raise UsageError(f"--paired: {name!r} names several runs ({several}); name one as <folder>/<model-pair>")
    return matches[0]


def check_pairs(runs: list[RunFolder], pairs: list[tuple[str, str]]) -> None:
    """UsageError for a ``--paired A B`` whose A or B names no run (or several), names one run twice, or whose two
    runs share no instance with a scores.json (nothing to pair)."""
    for a, b in pairs:
        (run_a, model_a), (run_b, model_b) = _named_run(runs, a), _named_run(runs, b)
        if run_a.path.resolve() == run_b.path.resolve() and model_a == model_b:
            raise UsageError(f"--paired {a} {b}: both name the same run; pair two different runs")
        if not run_a.scored[model_a] & run_b.scored[model_b]:
            raise UsageError(f"--paired {a} {b}: the two runs share no instance (same game, experiment and episode "
                             "folder, both scored); pair runs played on the same instances")


def default_name(folders: list[Path], compare: bool) -> str:
    """The folder name of a report under ``./playprm-reports/``: the run's folder name (with its parent's for
    Playpen's ``clem``/``static`` folders), several joined by ``+`` (shards) or ``_vs_`` (``--compare``)."""
    names = []
    for folder in folders:
        path = Path(os.path.abspath(folder))  # the name the user gave, a link's own name too
        names.append(f"{path.parent.name}_{path.name}" if path.name in PLAYPEN_RUN_FOLDERS else path.name)
    name = ("_vs_" if compare else "+").join(names) or "report"
    if len(name) > 120:  # file systems allow 255 bytes; keep it readable and unique
        name = f"{name[:100]}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return name


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def check_output_folder(out: Path | None, folders: list[Path], *, compare: bool = False,
                        replaces: tuple[str, ...] = ("results.csv",)) -> Path:
    """The folder to write into: ``out``, or ``./playprm-reports/<run>/`` without it. UsageError where it is a
    file, lies inside an input folder, cannot be written, or holds a ``results.csv`` that playprm did not write
    (clemcore's ``clem eval`` writes one; ``replaces`` names the files checked, each a key of
    ``WRITTEN_BY_PLAYPRM``)."""
    out = DEFAULT_REPORTS / default_name(folders, compare) if out is None else out
    for folder in folders:
        if _inside(out, folder):
            raise UsageError(f"--out {out} is inside the input folder {folder}; playprm never writes into a folder it "
                             f"reads: pass --out to another folder (default ./{DEFAULT_REPORTS}/<run>/)")
    for name in replaces:
        if (out / name).is_file() and not _written_by_playprm(out / name):
            raise UsageError(f"--out {out} holds a {name} that playprm did not write (clemcore writes one); pass --out "
                             "to another folder")
    return atomic.check_output_path(out, "--out")


def _written_by_playprm(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as file:
            return WRITTEN_BY_PLAYPRM[path.name] in file.readline(100_000)
    except OSError:
        return False

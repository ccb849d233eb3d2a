"""Every command that writes checks its output paths with its other inputs: a path through a file, or into a folder
that cannot be written, is one line on stderr and exit 2, before any model loads, any table prints or any byte is
written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from playprm.cli import main

# command line -> the flag whose path {out} stands for; the other inputs are as far valid as the checks before the
# output check read them (no model, data or shard is ever loaded)
WRITERS = [
    (["bench", "--out", "{out}/BENCHMARKS.md"], "--out"),
    (["bench", "--json", "{out}/figures.json"], "--json"),
    (["bench", "--work", "{out}"], "--work"),
    (["card", "--model-dir", "{out}"], "--model-dir"),
    (["collect", "--policy-model", "scripted:random-valid", "--game", "wordle", "--limit", "1",
      "--results-dir", "{out}"], "--results-dir"),
    (["eval", "--policy-model", "scripted:random-valid", "--game", "wordle", "--limit", "1",
      "--results-dir", "{out}"], "--results-dir"),
    (["import-gguf", "{gguf}", "--out", "{out}"], "--out"),
    (["instances", "--out", "{out}", "--seed", "0", "--game", "wordle"], "--out"),
    (["make-tiny", "--out", "{out}"], "--out"),
    (["merge", "--results-dir", "{results}", "--out", "{out}"], "--out"),
    (["pipeline", "--preset", "tiny", "--workdir", "{out}"], "--workdir"),
    (["pref-data", "--results-dir", "{results}", "--out", "{out}"], "--out"),
    (["prm-data", "--results-dir", "{results}", "--labels", "outcome", "--out", "{out}"], "--out"),
    (["register", "--dir", "{out}"], "--dir"),
    (["report", "--results-dir", "{results}", "--out", "{out}"], "--out"),
    (["report", "--compare", "{results}", "--out", "{out}"], "--out"),
    (["sft-data", "--results-dir", "{results}", "--out", "{out}"], "--out"),
    (["sibling-eval", "--prm-path", "{results}", "--data", "{results}", "--out", "{out}"], "--out"),
    (["summarize", "--workdir", "{out}"], "--workdir"),
    (["train-sft", "--model", "some/model", "--data", "{results}", "--output-dir", "{out}"], "--output-dir"),
    (["train-prm", "--model", "some/model", "--data", "{results}", "--output-dir", "{out}"], "--output-dir"),
    (["train-dpo", "--model", "some/model", "--data", "{results}", "--output-dir", "{out}"], "--output-dir"),
    (["train-grpo", "--model", "some/model", "--output-dir", "{out}"], "--output-dir"),
    (["transcribe", "--results-dir", "{results}", "--out", "{out}"], "--out"),
]
EXISTING = {"--model-dir", "--dir"}  # flags that name a folder the command writes into, which must exist

UNWRITABLE = {
    # a regular file as a parent component
    "a file in the path": lambda tmp, flag: tmp / "afile" if flag in EXISTING else tmp / "afile" / "sub",
    # /proc takes no new folder, even from root (for whom chmod blocks nothing)
    "a folder nobody can write": lambda tmp, flag: Path("/proc") if flag in EXISTING else Path("/proc/playprm-out"),
    "a read-only folder": lambda tmp, flag: tmp / "read-only" if flag in EXISTING else tmp / "read-only" / "out",
}

CAUSES = {"a file in the path": "{tmp}/afile is a file, choose another folder",
          "a folder nobody can write": "cannot write into /proc (it takes no new folders)",
          "a read-only folder": "cannot write into {tmp}/read-only (Permission denied)"}


def files_under(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


@pytest.fixture()
def inputs(tmp_path, monkeypatch) -> dict[str, str]:
    """A scored results folder, a file named afile, a read-only folder and a .gguf file, in the working folder."""
    monkeypatch.chdir(tmp_path)
    episode = tmp_path / "results" / "m--m" / "wordle" / "0_high" / "instance_00000"
    episode.mkdir(parents=True)
    (episode / "scores.json").write_text('{"episode scores": {"Main Score": 100}}')
    (tmp_path / "afile").write_text("a file\n")
    (tmp_path / "read-only").mkdir()
    (tmp_path / "read-only").chmod(0o555)
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(60))
    yield {"results": str(tmp_path / "results"), "gguf": str(tmp_path / "m.gguf")}
    (tmp_path / "read-only").chmod(0o755)


@pytest.mark.parametrize("unwritable", list(UNWRITABLE))
@pytest.mark.parametrize("argv, flag", WRITERS, ids=[f"{argv[0]} {flag}" for argv, flag in WRITERS])
def test_an_output_path_that_cannot_be_written_is_one_line_before_anything_is_written(
        tmp_path, inputs, capsys, argv, flag, unwritable):
    if unwritable == "a folder nobody can write" and not Path("/proc/self").is_dir():
        pytest.skip("no /proc on this system")
    if unwritable == "a read-only folder" and os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder; /proc stands for it")
    out = UNWRITABLE[unwritable](tmp_path, flag)
    before = files_under(tmp_path)
    code = main([part.format(out=out, **inputs) for part in argv])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"playprm {argv[0]}: error: {flag} {out}"), err
    if not (flag in EXISTING and unwritable == "a file in the path"):  # there: "is not a folder", as before
        assert CAUSES[unwritable].format(tmp=tmp_path) in err, err
    assert captured.out == ""  # no "writing into", no table
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("case, message", [
    ("afile/sub", "afile is a file, choose another folder"),
    ("/proc/playprm-out", "cannot write into /proc"),
])
def test_report_names_the_path_that_cannot_be_written(inputs, capsys, case, message):
    assert main(["report", "--results-dir", inputs["results"], "--out", case]) == 2
    assert capsys.readouterr().err.strip() == f"playprm report: error: --out {case}: {message}" + (
        "" if case == "afile/sub" else " (it takes no new folders), choose a writable folder")

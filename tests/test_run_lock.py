"""Concurrent runs on one results folder: the second gets one line naming the first one's pid, a live run's
staging folders are never removed, and a write error fails one episode, not the run."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

from test_names import eval_argv

from playprm import atomic
from playprm.cli import main
from playprm.play.config import EvalConfig
from playprm.play.wiring import run_eval
from playprm.results.staging import clean_staging

RUN = "random-valid-t0.0--random-valid-t0.0"
HOLDER = """
import sys
from pathlib import Path
from playprm.play import lock as run_lock
with run_lock.hold(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""


def hold_in_another_process(run_dir: Path) -> subprocess.Popen:
    """A process that holds ``run_dir``'s lock until its stdin closes; returns once it holds it (no sleeping)."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def dead_pid() -> int:
    """The pid of a process that has already exited."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def test_a_second_run_on_a_held_folder_gets_one_line_naming_the_holder(tmp_path, capsys):
    results = tmp_path / "r"
    run_dir = results / RUN
    holder = hold_in_another_process(run_dir)
    half_written = run_dir / "wordle" / "high_frequency_words" / f".instance_00000.staging-{holder.pid}"
    half_written.mkdir(parents=True)
    (half_written / "instance.json").write_text("{}")
    try:
        assert main(eval_argv(results)) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"pid {holder.pid}" in err and "in use" in err
        assert half_written.is_dir()  # the live run's episode in the making is left alone
        assert not list(run_dir.rglob("instance_0*"))
    finally:
        holder.kill()  # SIGKILL: the kernel releases the lock with the process
        holder.wait()
    assert main(eval_argv(results)) == 0
    assert not half_written.exists()  # stale now: its process is gone
    assert len(list(run_dir.glob("wordle/*/instance_*"))) == 2


def test_cleanup_removes_only_stale_staging_folders(tmp_path):
    def staging(pid: int) -> Path:
        folder = tmp_path / "game" / "experiment" / f".instance_{pid}.staging-{pid}"
        folder.mkdir(parents=True)
        return folder

    dead, live, own = staging(dead_pid()), staging(os.getppid()), staging(os.getpid())
    assert clean_staging(tmp_path) == 1  # without the lock: only the one whose process is gone
    assert not dead.exists() and live.is_dir() and own.is_dir()
    assert clean_staging(tmp_path, locked=True) == 1  # holding the lock: every other process's is stale
    assert not live.exists() and own.is_dir()


def test_a_write_error_fails_that_episode_and_the_run_goes_on(tmp_path, monkeypatch):
    write_json = atomic.write_json
    failed: list[Path] = []

    def disk_full_once(path, data, **kwargs):
        if Path(path).name == "completed.json" and not failed:
            failed.append(Path(path))
            raise OSError(errno.ENOSPC, "No space left on device")
        return write_json(path, data, **kwargs)

    monkeypatch.setattr(atomic, "write_json", disk_full_once)
    run_dir, summary = run_eval(EvalConfig(policy_model="scripted:random-valid", games=["wordle"], limit=1,
                                           results_dir=tmp_path / "r"), progress=False)
    assert sum(summary.played.values()) == 1 and sum(summary.errored.values()) == 1
    (error_file,) = run_dir.rglob("error.json")
    error = json.loads(error_file.read_text())
    assert error["stage"] == "write" and "No space left" in error["message"]
    assert error_file.parent.name == failed[0].parent.name.split(".staging-")[0].lstrip(".")
    assert not list(run_dir.rglob(".*.staging-*"))

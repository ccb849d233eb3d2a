"""Nothing lost, nothing duplicated: SIGKILL playprm eval at random moments, rerun, compare with one clean run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ARGS = ["--game-all", "--limit", "2", "--max-tokens", "16", "--batch-size", "3"]


def command(policy: Path, results: Path) -> list[str]:
    return [sys.executable, "-m", "playprm", "eval", "--policy-model", str(policy), *ARGS,
            "--results-dir", str(results)]


def episode_set(results: Path) -> dict[str, dict]:
    """Every episode folder with its parsed files; fails on any unreadable file."""
    found = {}
    for folder in sorted(results.rglob("instance_*")):
        if folder.name.startswith("."):
            continue
        files = {}
        for path in folder.iterdir():
            text = path.read_text(encoding="utf-8")
            files[path.name] = [json.loads(x) for x in text.splitlines()] if path.suffix == ".jsonl" else json.loads(text)
        found[str(folder.relative_to(results))] = files
    return found


def test_killed_runs_resume_to_the_same_episodes(card_models, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    clean = tmp_path / "clean"
    subprocess.run(command(card_models["policy"], clean), check=True, capture_output=True, env=env, timeout=300)
    expected = episode_set(clean)
    assert len(expected) == 20  # 4 built-in games x 2 experiments x 2, mastermind and guessthenumber 1 x 2

    killed = tmp_path / "killed"
    rng = random.Random(7)
    kills = 0
    for _ in range(3):
        process = subprocess.Popen(command(card_models["policy"], killed), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=env)
        time.sleep(rng.uniform(3.0, 9.0))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait(timeout=60)
    subprocess.run(command(card_models["policy"], killed), check=True, capture_output=True, env=env, timeout=300)
    resumed = episode_set(killed)
    assert kills >= 1
    assert sorted(resumed) == sorted(expected)  # same episodes, none missing, none duplicated
    for key, files in expected.items():
        assert set(resumed[key]) == set(files)
        # greedy decoding is deterministic: the replayed episodes are the same games
        assert resumed[key]["scores.json"]["episode scores"] == files["scores.json"]["episode scores"]
    assert not [p for p in killed.rglob("*") if ".staging-" in p.name or p.name.endswith(".tmp")]

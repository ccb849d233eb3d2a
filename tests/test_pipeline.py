"""The main job: the tiny pipeline runs every stage on CPU; the 27B preset writes a runnable plan."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from playprm.cli import main


def test_tiny_pipeline_trains_a_policy_that_plays_to_the_end_and_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # --threads sets it for the process: undone after the test
    assert main(["--threads", "1", "pipeline", "--preset", "tiny", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for stage in ("instances held-out", "collect teacher", "make-tiny", "collect", "sft-data", "train-sft",
                  "prm-data", "train-prm", "eval greedy", "eval best-of-n", "eval beam-search", "report",
                  "summarize"):
        assert f"== {stage}" in out
    assert "Environment-lookahead runs" in out and "best-of-n" in out
    assert (tmp_path / "report" / "compute.png").is_file()
    runs = {p.parent.parent.name: json.loads(p.read_text())
            for p in (tmp_path / "results").glob("*/*/playprm_run.json")}
    assert sorted(r["mode"] for r in runs.values()) == ["beam-search", "best-of-n", "greedy"]
    # the smoke run proves the install: RESULTS.md, an interactive game played to its end, and a last line on it
    assert (tmp_path / "RESULTS.md").is_file()
    greedy = next(r for r in json.loads((tmp_path / "results.json").read_text())["rows"] if r["name"] == "sft-greedy")
    assert greedy["played"]["referencegame"] > 0 and greedy["games"]["referencegame"] is not None
    last = out.strip().splitlines()[-1]
    assert last.startswith("smoke run OK: ") and "interactive episodes played to the end" in last
    assert "clemscore" in last and "referencegame" in last and str(tmp_path / "RESULTS.md") in last
    assert json.loads((tmp_path / "model_registry.json").read_text())[0]["model_name"] == "tiny-sft"
    threads = json.loads((tmp_path / "stage_threads.json").read_text())  # each stage's threads, as --threads set
    assert {"make-tiny", "train-sft", "eval greedy"} <= set(threads) and set(threads.values()) == {1}

    # rerunning skips finished stages and resumes the rest
    assert main(["pipeline", "--preset", "tiny", "--workdir", str(tmp_path)]) == 0
    assert "train-sft: done earlier" in capsys.readouterr().out


def test_qwen_preset_writes_a_plan_with_the_model_card_settings(tmp_path, capsys):
    assert main(["pipeline", "--preset", "qwen3.5-27b", "--workdir", str(tmp_path)]) == 0
    plan = tmp_path / "qwen3.5-27b-plan"
    script = (plan / "run_all.sh").read_text()
    assert "Qwen/Qwen3.5-27B" in script and '"enable_thinking": false' in script
    assert "slurm/train_sft.sbatch" in script and "--shard" not in script  # the array script shards
    assert (plan / "slurm" / "eval_array.sbatch").is_file() and (plan / "recipes" / "qwen3.5-27b" / "sft.yaml").is_file()
    assert not (tmp_path / "results").exists()  # nothing ran


def test_a_training_stage_that_stopped_after_a_checkpoint_resumes_on_a_rerun(tmp_path):
    from playprm.pipeline.stages import resumed

    argv = ["train-grpo", "--model", "m", "--output-dir", str(tmp_path / "grpo"), "--max-steps", "32"]
    assert resumed(argv) == argv  # nothing there yet: a fresh run
    (tmp_path / "grpo").mkdir()
    assert resumed(argv) == argv
    (tmp_path / "grpo" / "checkpoint-8").mkdir()
    assert resumed(argv) == [*argv, "--resume"]
    assert resumed(["eval", "--output-dir", str(tmp_path / "grpo")]) == ["eval", "--output-dir", str(tmp_path / "grpo")]


def test_a_rerun_with_the_same_argv_and_threads_plays_the_same_episodes(tiny_models, tmp_path, monkeypatch):
    """Sampled play at temperature 1 twice with --threads 1: the same replies, turn for turn (float sums in another
    order, as another thread count gives, could change a sampled token)."""
    from test_clemcore_parity import events

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    played = []
    for name in ("a", "b"):
        assert main(["--threads", "1", "eval", "--policy-model", str(tiny_models["policy"]), "-g", "referencegame",
                     "--limit", "2", "--temperature", "1.0", "--max-tokens", "8", "--seed", "3", "--results-dir",
                     str(tmp_path / name)]) == 0
        played.append({p.parent.relative_to(tmp_path / name).as_posix(): events(p.parent)
                       for p in sorted((tmp_path / name).rglob("interactions.json"))})
    assert played[0] and played[0] == played[1]


def test_threads_must_be_a_positive_whole_number(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--threads", "0", "games"])
    assert exit_.value.code == 2 and "'0' is not a positive whole number" in capsys.readouterr().err


def test_the_smoke_check_fails_in_one_line_where_no_interactive_episode_ended(tmp_path):
    from playprm.pipeline.tiny import smoke_check

    proved, line = smoke_check(tmp_path)
    assert not proved and line.startswith("smoke run FAILED: no ") and "RESULTS.md" in line
    # the state the issue found: the static task played, every interactive episode aborted
    (tmp_path / "RESULTS.md").write_text("# Results\n")
    (tmp_path / "results.json").write_text(json.dumps({"static_games": ["arithmetic"], "rows": [
        {"name": "sft-greedy", "games": {"arithmetic": 0.0, "referencegame": None},
         "played": {"arithmetic": 100.0, "referencegame": 0.0}}]}))
    proved, line = smoke_check(tmp_path)
    assert not proved and line.startswith("smoke run FAILED: no interactive episode was played to the end")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's (Linux)")
def test_a_finished_stage_hands_the_heap_it_freed_back_to_the_system(tmp_path):
    """The stages run in the pipeline's process: memory a stage freed stays with the process unless the heap is
    trimmed (SmolLM2's train-sft left 5.16 GiB resident, 0.66 after the trim). Here 400 MB of heap buffers, freed
    with a small buffer kept after every hundred (so that the heap's top cannot shrink on its own)."""
    script = tmp_path / "heap.py"
    script.write_text(
        "import gc, os\n"
        "def rss():\n"
        "    return int(open(f'/proc/{os.getpid()}/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20\n"
        "kept, freed = [], []\n"
        "for i in range(100_000):\n"
        "    freed.append(bytearray(4096))\n"
        "    if i % 100 == 0:\n"
        "        kept.append(bytearray(4096))\n"
        "del freed\n"
        "gc.collect()\n"
        "before = rss()\n"
        "from playprm.pipeline.stages import release_memory\n"
        "release_memory()\n"
        "print(before, rss())\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=120)
    before, after = map(float, out.stdout.split())
    assert before > 350 and after < before - 300  # MiB resident: the freed buffers went back


def test_the_pipeline_releases_memory_after_every_stage(tmp_path, monkeypatch):
    from playprm.cli import build_parser
    from playprm.pipeline import stages

    calls = []
    monkeypatch.setattr(stages, "release_memory", lambda: calls.append(1))
    steps = [(f"games {i}", ["games"]) for i in range(2)]
    assert stages.run_steps(tmp_path, steps, parser=build_parser(), done="done") == 0
    assert len(calls) == 2

"""The main job: the tiny pipeline runs every stage on CPU; the 27B preset writes a runnable plan."""

from __future__ import annotations

import json

from playprm.cli import main


def test_tiny_pipeline_runs_every_stage_and_prints_the_comparison(tmp_path, capsys):
    assert main(["pipeline", "--preset", "tiny", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for stage in ("make-tiny", "collect", "sft-data", "train-sft", "prm-data", "train-prm", "eval greedy",
                  "eval best-of-n", "eval beam-search", "report"):
        assert f"== {stage}" in out
    assert "Environment-lookahead runs" in out and "best-of-n" in out
    assert (tmp_path / "report" / "compute.png").is_file()
    runs = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "results").glob("*/playprm_run.json")}
    assert sorted(r["mode"] for r in runs.values()) == ["beam-search", "best-of-n", "greedy"]
    assert json.loads((tmp_path / "model_registry.json").read_text())[0]["model_name"] == "tiny-sft"

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

"""A run folder holds one run: its fingerprint (model, adapter, decoding settings, PRM, game instances) is
recorded, and resuming or merging with another fingerprint is refused in one line, before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_names import eval_argv, wordle_copy
from wordle_oracle import WordleOracleScorer

from playprm.cli import main
from playprm.games.builtin.scripted import RandomValidPolicy
from playprm.models.registry import resolve_policy
from playprm.play.config import EvalConfig
from playprm.play.wiring import run_eval
from playprm.results.layout import RUN_METADATA_FILE

RUN = "random-valid-t0.0--random-valid-t0.0"


def refusal(capsys) -> str:
    """The one stderr line of a refused command."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def folder_state(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("first, second, differs", [
    ([], ["--max-tokens", "16"], "max_tokens 2048 vs 16"),
    (["--temperature", "0.7"], ["--temperature", "0.7", "--seed", "1"], "seed 0 vs 1"),
])
def test_resuming_with_other_decoding_settings_is_refused_naming_what_differs(tmp_path, capsys, first, second,
                                                                             differs):
    results = tmp_path / "r"
    assert main(eval_argv(results, *first)) == 0
    run_dir = next(p for p in results.iterdir() if p.is_dir())  # beside clembench.log
    before = folder_state(run_dir)
    capsys.readouterr()
    assert main(eval_argv(results, *second)) == 2
    err = refusal(capsys)
    assert differs in err and str(run_dir) in err
    assert folder_state(run_dir) == before  # neither the episodes nor playprm_run.json were touched


def test_resuming_with_the_same_settings_and_a_larger_limit_adds_to_the_run(tmp_path, capsys):
    results = tmp_path / "r"
    assert main(eval_argv(results)) == 0
    assert main([*eval_argv(results)[:-4], "--limit", "2", "--results-dir", str(results)]) == 0
    assert "4 episodes planned, 2 already done" in capsys.readouterr().out
    recorded = json.loads((results / RUN / RUN_METADATA_FILE).read_text())["fingerprint"]
    assert len(recorded["instances"]) == 4


def test_two_local_model_folders_of_one_name_do_not_share_a_run(tmp_path, capsys):
    for parent in ("a", "b"):  # two different models, both in a folder named "policy"
        (tmp_path / parent / "policy").mkdir(parents=True)
        (tmp_path / parent / "policy" / "config.json").write_text("{}")
    first = RandomValidPolicy()
    first.spec = resolve_policy(str(tmp_path / "a" / "policy"))
    results = tmp_path / "r"
    run_dir, _ = run_eval(EvalConfig(policy_model=str(tmp_path / "a" / "policy"), games=["wordle"], limit=1,
                                     results_dir=results), policy=first, progress=False)
    assert run_dir.name == "policy-t0.0--policy-t0.0"
    # the second folder's config.json is no model: had it loaded, this would be a traceback, not one line
    code = main(["eval", "--policy-model", str(tmp_path / "b" / "policy"), "--game", "wordle", "--limit", "1",
                 "--results-dir", str(results)])
    err = refusal(capsys)
    assert code == 2
    assert f"{tmp_path / 'a' / 'policy'}" in err and f"{tmp_path / 'b' / 'policy'}" in err
    assert "model_registry.json" in err
    metadata = json.loads((run_dir / RUN_METADATA_FILE).read_text())
    assert metadata["fingerprint"]["model"] == str((tmp_path / "a" / "policy").resolve())


def fake_prm(folder: Path) -> Path:
    """A folder that passes the PRM config check but holds no weights: loading it would fail loudly."""
    from playprm.prm.model import HEAD_FILE, PRM_CONFIG, PRM_FORMAT

    folder.mkdir(parents=True)
    (folder / PRM_CONFIG).write_text(json.dumps({"format": PRM_FORMAT, "head": HEAD_FILE}))
    (folder / HEAD_FILE).write_bytes(b"")
    return folder


def test_resuming_with_another_prm_is_refused_before_it_loads(tmp_path, capsys):
    results = tmp_path / "r"
    cfg = EvalConfig(policy_model="scripted:random-valid", mode="best-of-n", prm_path=fake_prm(tmp_path / "prm_a"),
                     games=["wordle"], limit=1, results_dir=results, n_candidates=2, max_tokens=32)
    run_eval(cfg, scorer=WordleOracleScorer("crane"), progress=False)
    code = main(eval_argv(results, "--mode", "best-of-n", "--n-candidates", "2", "--max-tokens", "32",
                          "--prm-path", str(fake_prm(tmp_path / "prm_b"))))
    err = refusal(capsys)
    assert code == 2 and "prm_path" in err and "prm_a" in err and "prm_b" in err


def test_resuming_after_the_instances_changed_is_refused(tmp_path, capsys):
    results = tmp_path / "r"
    original = wordle_copy(tmp_path / "v1", lambda data: None)
    assert main(eval_argv(results, "--games-dir", str(original))) == 0

    def new_target(data):
        data["experiments"][0]["game_instances"][0]["target_word"] = "zzzzz"

    changed = wordle_copy(tmp_path / "v2", new_target)
    capsys.readouterr()
    assert main(eval_argv(results, "--games-dir", str(changed))) == 2
    assert "1 game instance(s) with other content" in refusal(capsys)


def test_resuming_collect_with_another_seed_is_refused(tmp_path, capsys):
    argv = ["collect", "--policy-model", "scripted:random-valid", "--game", "wordle", "--limit", "1",
            "--samples-per-instance", "1", "--results-dir", str(tmp_path / "r")]
    assert main(argv) == 0
    capsys.readouterr()
    assert main([*argv, "--seed", "5"]) == 2
    assert "seed 0 vs 5" in refusal(capsys)


def test_merge_of_shards_run_with_other_settings_is_refused(tmp_path, capsys):
    assert main(eval_argv(tmp_path / "s0", "--shard", "0/2")) == 0
    assert main(eval_argv(tmp_path / "s1", "--shard", "1/2", "--max-tokens", "16")) == 0
    capsys.readouterr()
    code = main(["merge", "--results-dir", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(tmp_path / "m")])
    assert code == 2 and "max_tokens 2048 vs 16" in refusal(capsys)
    assert not (tmp_path / "m").exists()


def test_merge_of_shards_of_one_run_keeps_its_fingerprint(tmp_path, capsys):
    for index in (0, 1):
        assert main(eval_argv(tmp_path / f"s{index}", "--shard", f"{index}/2")) == 0
    out = tmp_path / "m"
    assert main(["merge", "--results-dir", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(out)]) == 0
    assert len(list(out.glob(f"{RUN}/wordle/*/instance_*"))) == 2
    merged = json.loads((out / RUN / RUN_METADATA_FILE).read_text())["fingerprint"]
    assert merged == json.loads((tmp_path / "s1" / RUN / RUN_METADATA_FILE).read_text())["fingerprint"]


def test_the_weights_dtype_is_part_of_the_run_fingerprint_so_fp32_and_bf16_runs_never_share_a_folder():
    from playprm.models.base import PolicySpec
    from playprm.results.run_record import fingerprint_differences, policy_fingerprint

    fp32 = policy_fingerprint(PolicySpec("m", "hf", "some/model", dtype="float32"))
    bf16 = policy_fingerprint(PolicySpec("m", "hf", "some/model", dtype="bfloat16"))
    unset = policy_fingerprint(PolicySpec("m", "hf", "some/model"))
    assert fingerprint_differences(fp32, bf16) == ["dtype 'float32' vs 'bfloat16'"]
    assert "dtype" not in unset  # runs recorded before the key existed keep their fingerprint


def test_the_run_record_reads_files_of_every_version_and_writes_n_candidates_once(tmp_path):
    from playprm.results.run_record import RunRecord

    before_fingerprints = RunRecord.from_json({"mode": "best-of-n", "env_lookahead": "true", "n_candidates": 4,
                                               "seed": 1})
    assert (before_fingerprints.mode, before_fingerprints.env_lookahead, before_fingerprints.n_candidates) == \
        ("best-of-n", True, 4)
    assert before_fingerprints.fingerprint == {"mode": "best-of-n", "env_lookahead": "true", "n_candidates": 4}
    assert before_fingerprints.settings == {"seed": 1}
    assert RunRecord.from_json({"game_benchmarks": {}}).mode == ""  # a file naming no mode

    # the mode fields come from the fingerprint: collect's has no n_candidates, so its record has none either
    collect = RunRecord.of_run({"mode": "collect", "env_lookahead": False, "seed": 0, "instances": {}},
                               {"samples_per_instance": 2})
    assert collect.n_candidates is None and "n_candidates" not in collect.to_json()
    greedy = RunRecord.of_run({"mode": "greedy", "env_lookahead": False, "n_candidates": 1, "instances": {}},
                              {"temperature": 0.0})
    greedy.write(tmp_path)
    written = json.loads((tmp_path / RUN_METADATA_FILE).read_text())
    assert list(written) == ["playprm_version", "mode", "env_lookahead", "n_candidates", "temperature", "fingerprint"]
    assert RunRecord.read(tmp_path / RUN_METADATA_FILE) == greedy


def pipeline_folder(workdir: Path, record: dict | None = None, stages: dict | None = None,
                    train_seed: int | None = None) -> dict[str, bytes]:
    """A work directory as a pipeline's first stages leave it: its run record (or, from before records, only its
    stage times and training split), an instances stage's done marker and a results/ folder; returns its files."""
    from playprm.pipeline.stages import RUN_FILE, STAGE_FILE

    (workdir / "results").mkdir(parents=True)
    (workdir / "splits" / "train" / "referencegame" / "in").mkdir(parents=True)
    (workdir / "splits" / "train" / "referencegame" / "in" / "instances.json").write_text("{}")
    if record is not None:
        (workdir / RUN_FILE).write_text(json.dumps(record))
    if stages is not None:
        (workdir / STAGE_FILE).write_text(json.dumps(stages))
    if train_seed is not None:
        (workdir / "splits" / "train" / "split.json").write_text(
            json.dumps({"games": {"referencegame": {"seed": train_seed, "per_experiment": 2}}}))
    return folder_state(workdir)


TINY = {"preset": "tiny"}
SMALL_SEED_0 = {"preset": "small", "game": "referencegame", "seed": 0}


@pytest.mark.parametrize("held, argv, message", [
    (TINY, ["summarize", "--workdir", "{w}"],
     "--workdir {w} holds a --preset tiny run; this command is --preset small --game referencegame --seed 0: "
     "choose another --workdir"),
    (SMALL_SEED_0, ["pipeline", "--preset", "small", "--seed", "7", "--workdir", "{w}"],
     "--workdir {w} holds a --preset small --game referencegame --seed 0 run; this command is --preset small "
     "--game referencegame --seed 7: choose another --workdir"),
    (TINY, ["pipeline", "--preset", "small", "--workdir", "{w}"],
     "--workdir {w} holds a --preset tiny run; this command is --preset small --game referencegame --seed 0: "
     "choose another --workdir"),
    (SMALL_SEED_0, ["summarize", "--workdir", "{w}", "--preset", "smol"], "this command is --preset smol --seed 0"),
    (SMALL_SEED_0, ["pipeline", "--preset", "small", "--game", "wordle", "--workdir", "{w}"],
     "this command is --preset small --game wordle --seed 0"),
])
def test_a_work_directory_of_another_run_is_refused_before_any_stage(tmp_path, capsys, held, argv, message):
    workdir = tmp_path / "w"
    before = pipeline_folder(workdir, record=held)
    code = main([part.format(w=workdir) for part in argv])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith(f"playprm {argv[0]}: error: --workdir {workdir} holds a ")
    assert message.format(w=workdir) in err
    assert len(err.strip().splitlines()) == 1 and "done earlier" not in out and out == ""
    assert folder_state(workdir) == before  # no stage ran, no RESULTS.md


@pytest.mark.parametrize("stages, train_seed, argv, held", [
    ({"make-tiny": 1.0, "collect": 2.0}, None, ["summarize"], "a --preset tiny run"),
    ({"make-tiny": 1.0, "collect": 2.0}, None, ["pipeline", "--preset", "small"], "a --preset tiny run"),
    ({"instances train referencegame": 1.0}, 1000, ["pipeline", "--preset", "small", "--seed", "7"],
     "a --preset small --game referencegame --seed 0 run"),
    ({"instances train": 1.0}, 1000, ["summarize", "--preset", "small"], "a --preset smol --seed 0 run"),
])
def test_a_work_directory_from_before_run_records_is_judged_by_its_stages(tmp_path, capsys, stages, train_seed,
                                                                           argv, held):
    workdir = tmp_path / "w"
    before = pipeline_folder(workdir, stages=stages, train_seed=train_seed)
    assert main([*argv, "--workdir", str(workdir)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"--workdir {workdir} holds {held}; this command is" in err and len(err.splitlines()) == 1
    assert folder_state(workdir) == before


def test_a_new_work_directory_records_its_run_at_its_first_stage_and_its_own_command_passes(tmp_path):
    from playprm.commands import build_parser
    from playprm.pipeline.stages import RUN_FILE, check_run_identity, run_identity, run_steps

    workdir = tmp_path / "w"
    identity = run_identity("small", 3, "wordle")
    assert run_steps(workdir, [("list games", ["games"])], parser=build_parser(), done="", identity=identity) == 0
    assert json.loads((workdir / RUN_FILE).read_text()) == {"preset": "small", "game": "wordle", "seed": 3}
    check_run_identity(workdir, run_identity("small", 3, "wordle"))  # the same run goes on
    assert run_identity("tiny", 7, "wordle") == {"preset": "tiny"}  # the tiny preset uses neither seed nor game
    # a folder from before run records, whose stages say it is this run, passes too
    legacy = tmp_path / "legacy"
    pipeline_folder(legacy, stages={"instances train wordle": 1.0}, train_seed=1003)
    check_run_identity(legacy, identity)

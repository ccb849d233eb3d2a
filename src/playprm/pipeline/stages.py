"""The stage runner of the pipeline presets: each stage an ordinary playprm command, printed as a user could run
it, skipped on a rerun once the file its command writes last exists, its wall time kept in ``stage_seconds.json``.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

from playprm import atomic
from playprm.errors import UsageError
from playprm.redact import redact

STAGE_FILE = "stage_seconds.json"  # wall seconds per stage, in the work directory (kept across reruns)
THREADS_FILE = "stage_threads.json"  # the torch threads each stage ran with (its last run's; "1-2": it followed)
RUN_FILE = "pipeline_run.json"  # the preset, game and seed of the run the work directory holds

# command -> the file, under its --out / --output-dir, that it writes once it has finished; collect and eval
# resume on their own, so they have none
DONE_FILES = {
    "make-tiny": "prm/prm_config.json",
    "import-gguf": "config.json",  # the folder is renamed into place once written
    "sft-data": "README.md",
    "train-sft": "model_registry.json",
    "prm-data": "README.md",
    "train-prm": "prm_config.json",
    "pref-data": "README.md",
    "train-dpo": "model_registry.json",
    "train-grpo": "model_registry.json",
}


def done_marker(argv: list[str]) -> Path | None:
    """The file whose presence means the stage ``argv`` (a playprm command line) finished in an earlier run, or
    None for a stage that always runs (it resumes on its own, or is cheap)."""
    flag = lambda name: argv[argv.index(name) + 1] if name in argv else None  # noqa: E731
    out = flag("--out") or flag("--output-dir")
    command = argv[0]
    if out is None:
        return None
    if command == "instances":
        return Path(out) / flag("--game") / "in" / "instances.json"
    if command == "report":  # a paired comparison (the per-game gate reads it); a plain --compare reruns
        return Path(out) / "paired.json" if "--paired" in argv else None
    return Path(out) / DONE_FILES[command] if command in DONE_FILES else None


def resumed(argv: list[str]) -> list[str]:
    """``argv`` with ``--resume`` where it is a training stage whose output folder holds a checkpoint from a run
    that stopped (the train commands refuse such a folder without it), so that rerunning the preset goes on from
    there."""
    if not argv[0].startswith("train-") or "--output-dir" not in argv or "--resume" in argv:
        return argv
    out = Path(argv[argv.index("--output-dir") + 1])
    return [*argv, "--resume"] if out.is_dir() and any(out.glob("checkpoint-*")) else argv


def run_identity(preset: str, seed: int, game: str) -> dict:
    """What makes a pipeline run its own, as ``RUN_FILE`` records it: the preset, and the seed and game where the
    preset uses them (small: both; smol: the seed; tiny and the plan: neither)."""
    return {"preset": preset, **({"game": game} if preset == "small" else {}),
            **({"seed": seed} if preset in ("small", "smol") else {})}


def check_run_identity(workdir: Path, identity: dict) -> None:
    """A one-line ``UsageError`` where ``workdir`` holds another run than ``identity`` (``run_identity``): its
    finished stages would be skipped as this run's, and its files read as this run's results. A new folder
    passes; one from before ``RUN_FILE`` existed is judged by what its stages left (``earlier_identity``)."""
    record = workdir / RUN_FILE
    try:
        held = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else earlier_identity(workdir)
    except (OSError, ValueError) as error:
        raise UsageError(f"--workdir {workdir}: {RUN_FILE} cannot be read ({error}); choose another --workdir") \
            from None
    if not isinstance(held, dict) or any(identity.get(key) != value for key, value in held.items()):
        flags = lambda run: " ".join(f"--{key} {value}" for key, value in run.items())  # noqa: E731
        theirs = f"a {flags(held)}" if isinstance(held, dict) else "another"
        raise UsageError(f"--workdir {workdir} holds {theirs} run; this command is {flags(identity)}: choose "
                         "another --workdir")


def earlier_identity(workdir: Path) -> dict:
    """What is known of the run in a work directory written before ``RUN_FILE`` existed: the preset (and the small
    preset's game) from the stage names of ``STAGE_FILE``, the seed from the training split's ``split.json``
    (generated with seed 1000 + the pipeline's); empty where the folder ran no stage."""
    from playprm.games.splits import SPLIT_FILE
    from playprm.pipeline.small import TRAIN

    stages_file, split_file = workdir / STAGE_FILE, workdir / TRAIN / SPLIT_FILE
    stages = list(json.loads(stages_file.read_text(encoding="utf-8"))) if stages_file.is_file() else []
    trained = [stage.removeprefix("instances train ") for stage in stages if stage.startswith("instances train ")]
    if "instances train" in stages:
        identity = {"preset": "smol"}
    elif trained:
        identity = {"preset": "small", "game": trained[0]}
    elif "make-tiny" in stages and "collect" in stages:
        return {"preset": "tiny"}
    else:
        return {}
    split = json.loads(split_file.read_text(encoding="utf-8")).get("games", {}) if split_file.is_file() else {}
    seeds = {row.get("seed") for row in split.values() if isinstance(row, dict)}
    if len(seeds) == 1 and isinstance(next(iter(seeds)), int):
        identity["seed"] = next(iter(seeds)) - 1000
    return identity


def run_steps(workdir: Path, steps: list[tuple[str, list[str]]], *, parser, done: str,
              identity: dict | None = None) -> int:
    """Run ``steps`` (stage, argv whose paths lie under ``workdir``) as playprm commands from the current
    directory, each parsed by ``parser`` (the ``playprm`` parser), printing each as a command a user could run
    and skipping stages whose done marker exists; wall seconds per stage go to ``stage_seconds.json`` there.
    ``identity`` (``run_identity``), checked against the folder's record, is recorded before the first stage."""
    workdir.mkdir(parents=True, exist_ok=True)
    if identity is not None:
        check_run_identity(workdir, identity)
        if not (workdir / RUN_FILE).is_file():
            atomic.write_json(workdir / RUN_FILE, identity)
    timings = []
    stage_file = workdir / STAGE_FILE
    for stage, argv in steps:
        marker = done_marker(argv)
        if marker is not None and marker.exists():
            print(f"\n== {stage}: done earlier ({marker} exists), skipped", flush=True)
            continue
        argv = resumed(argv)
        print(f"\n== {stage}: playprm {shlex.join(argv)}", flush=True)
        runtime = sys.modules.get("playprm.transformers_runtime")  # loaded by an earlier stage (it imports torch)
        if runtime is not None:
            runtime.start_thread_record()
        start = time.perf_counter()
        code = run_stage(parser, argv)
        timings.append((stage, time.perf_counter() - start))
        release_memory()  # after the stage's timing: its time is the stage's own
        # read again: a stage run by hand in the same work directory meanwhile keeps its time
        recorded = json.loads(stage_file.read_text()) if stage_file.is_file() else {}
        recorded[stage] = round(recorded.get(stage, 0.0) + timings[-1][1], 1)
        atomic.write_json(stage_file, recorded)
        # the stage ran in this process: the threads it chose, and those it followed the machine to, are recorded
        runtime = sys.modules.get("playprm.transformers_runtime")
        if runtime is not None:
            threads_file = workdir / THREADS_FILE
            threads = json.loads(threads_file.read_text()) if threads_file.is_file() else {}
            atomic.write_json(threads_file, {**threads, stage: runtime.thread_record()})
        if code:
            print(f"pipeline stopped: stage '{stage}' failed (exit {code}); rerun the same command "
                  f"after fixing it: finished stages are skipped, collect and eval resume")
            return code
        if stage == "train-sft":
            _register_trained_policy(workdir, Path(argv[argv.index("--output-dir") + 1]))
    print("\n== stage times")
    for stage, seconds in timings:
        print(f"  {stage:<18} {seconds:7.1f}s")
    print(f"  {'total':<18} {sum(s for _, s in timings):7.1f}s")
    print(f"\n{done}")
    return 0


def release_memory() -> None:
    """Hand the memory a finished stage freed back to the system. The stages run in this process, and glibc keeps
    freed heap pages for reuse: after SmolLM2's train-sft the process held 5.16 GiB, 4.66 after ``gc.collect()``
    and 0.66 after ``malloc_trim(0)`` (2026-12-08, BENCHMARKS.md), memory every later stage (and any job beside the
    pipeline) went without. Not glibc (macOS, musl): the garbage collection only."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def run_stage(parser, argv: list[str]) -> int:
    """One stage: its command function called with ``argv`` parsed as ``playprm`` parses it; exit status 2 and
    the command's one-line message on a usage error, as on the command line."""
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as error:
        print(f"playprm {args.command}: error: {redact(str(error))}", file=sys.stderr)
        return 2


def _register_trained_policy(workdir: Path, output_dir: Path) -> None:
    """Copy the entry train-sft wrote into the work directory's model_registry.json, so that a user working
    there can name the policy (the pipeline's own stages name its folder)."""
    from playprm.models.registry import read_registry_file, write_registry_entry

    for entry in read_registry_file(output_dir / "model_registry.json"):
        write_registry_entry(workdir, entry)

"""The smol preset's SFT on one seed, checkpoint by checkpoint, each played greedy on the validation split
(issue 61 item 3: where the guesser settles on a position).

    PYTHONPATH=src python benchmarks/smol_sft_checkpoints.py SEED WORKDIR MAX_STEPS EVERY [TRAIN-SFT FLAGS...]

runs the preset's stages up to ``train-sft`` in WORKDIR (its layout; a stage that finished is skipped), trains to
MAX_STEPS with a checkpoint every EVERY steps (the preset's argv otherwise: at its constant learning rate the
checkpoint at 192 is the preset's policy), then plays checkpoints 2 x EVERY, 3 x EVERY, ... on the validation split
(``WORKDIR/validation/ckpt-K``); read them with ``benchmarks/guesser_work.py``. One torch thread a command.

Flags after EVERY change the recipe: each replaces the preset's value of that train-sft flag or is added, e.g.
``--lr-scheduler-type linear`` (a flag and its value as two arguments). ``--loss-weight`` and
``--loss-weight-pattern`` set the preset's own fields (``sft_loss_weight``, ``sft_loss_pattern``), so
``--loss-weight 1`` trains as the preset did before it weighed the guesser's judgement (no weighting flags)."""
import subprocess
import sys
from pathlib import Path

from playprm.pipeline.smol import SmolPreset

seed, workdir, max_steps, every = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
changes = sys.argv[5:]
if len(changes) % 2:
    sys.exit(f"recipe changes come as flag and value pairs, not {changes}")
fields = {"--loss-weight": ("sft_loss_weight", float), "--loss-weight-pattern": ("sft_loss_pattern", str)}
preset = {fields[flag][0]: fields[flag][1](value) for flag, value in zip(changes[::2], changes[1::2]) if flag in fields}
changes = [arg for pair in zip(changes[::2], changes[1::2]) if pair[0] not in fields for arg in pair]
steps = dict(SmolPreset(seed=seed, **preset).steps(workdir))
pp = [sys.executable, "-m", "playprm.cli", "--threads", "1"]
def run(name, argv):
    done = workdir / "done" / name.replace(" ", "_")
    if done.exists():
        print("skip", name, flush=True)
        return
    print("==", name, " ".join(argv), flush=True)
    subprocess.run(pp + argv, check=True)
    done.parent.mkdir(parents=True, exist_ok=True)
    done.touch()
for name in ["instances train", "instances held-out", "instances validation", "collect teacher", "import-gguf",
             "sft-data"]:
    run(name, steps[name])
sft = list(steps["train-sft"])
for flag, value in (("--max-steps", max_steps), ("--save-steps", every), ("--eval-steps", max_steps)):
    sft[sft.index(flag) + 1] = str(value)
sft += ["--save-total-limit", "20", "--load-best-model-at-end", "false", "--early-stopping-patience", "0"]
for flag, value in zip(changes[::2], changes[1::2]):
    if flag in sft:
        sft[sft.index(flag) + 1] = value
    else:
        sft += [flag, value]
if any((workdir / "sft-policy").glob("checkpoint-*")):  # a stopped run goes on from its last checkpoint
    sft.append("--resume")
run("train-sft", sft)
val = steps["validation sft-greedy"]
for k in range(2 * every, max_steps + 1, every):
    argv = list(val)
    argv[argv.index("--policy-model") + 1] = str(workdir / f"sft-policy/checkpoint-{k}")
    argv[argv.index("--results-dir") + 1] = str(workdir / f"validation/ckpt-{k}")
    run(f"validation ckpt-{k}", argv)

"""The real-hardware pipeline as a runnable plan (``playprm pipeline --preset qwen3.5-27b``).

Nothing runs here: the plan is a folder with ``run_all.sh`` (the same stages as the tiny pipeline, with the model
card's settings and SLURM submission where a stage needs GPUs) and ``SETTINGS.md``, both package data in
``playprm/pipeline/plan_files``, plus the repository's recipes and sbatch templates when they are available (an editable
install or a checkout). Those stay in the repository, where the sbatch scripts and the docs use them; from a wheel
install the plan is written without them, a warning says so, and ``run_all.sh`` refuses to start in one line
until they are copied in.
"""

from __future__ import annotations

import logging
import shutil
from importlib import resources
from pathlib import Path

from playprm import atomic

logger = logging.getLogger(__name__)

PLAN_FILES = ("run_all.sh", "SETTINGS.md")  # package data under playprm/pipeline/plan_files, carried by a wheel


def checkout_folder(name: str) -> Path | None:
    """``name`` (recipes, slurm) of the repository this package runs from, or None when it is installed from a
    wheel (those folders sit beside the package in a checkout, not inside it)."""
    folder = Path(__file__).resolve().parents[3] / name  # src/playprm/pipeline/plan.py -> the checkout
    return folder if folder.is_dir() and (folder.parent / "pyproject.toml").is_file() else None


def write_plan(workdir: Path) -> Path:
    plan = workdir / "qwen3.5-27b-plan"
    plan.mkdir(parents=True, exist_ok=True)
    files = resources.files("playprm.pipeline") / "plan_files"
    for name in PLAN_FILES:
        atomic.write_text(plan / name, files.joinpath(name).read_text(encoding="utf-8"))
    (plan / "run_all.sh").chmod(0o755)
    for name in ("recipes", "slurm"):
        source = checkout_folder(name)
        if source is None:
            logger.warning("%s/ is not part of this install (a wheel); copy it from the playprm repository into %s "
                           "before running the plan", name, plan)
        else:
            shutil.copytree(source, plan / name, dirs_exist_ok=True)
    return plan

"""RESULTS.md's sections of the smol preset beyond its held-out grid (issue 61): which split chose each lever of
the recipe (``smol.LEVERS``), the greedy rows on the validation split (``validation/<row>``), and the games the
policy never trained on (``ood/<row>``). Each returns its Markdown and what results.json keeps of it.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path


def levers_section(preset) -> tuple[str, list[dict]]:
    """The levers of ``preset``'s recipe (``pipeline.smol.SmolPreset``), each with its value and the split that
    chose it."""
    from playprm.pipeline.smol import LEVERS
    from playprm.tables import markdown_table

    fields = asdict(preset)
    levers = [{"lever": lever, "value": value.format(**fields), "chosen_on": split, "how": how}
              for lever, value, split, how in LEVERS]
    table = markdown_table(["lever", "value", "chosen on", "how"],
                           [[r["lever"], r["value"], r["chosen_on"], r["how"]] for r in levers])
    return "\n".join([
        "## Levers and the split that chose them", "", table, "",
        "- `splits/validation` (seed 3000 + the seed, no instance of `splits/train` or `splits/heldout`) is where a "
        "lever of the recipe is chosen, and the held-out games read the chosen recipe once. `validation (seed 3)`: "
        "compared on seed 3's validation split, so it is unbiased on this run's held-out games (and on every other "
        "seed's splits). The other values were set before that split existed: `held-out` and `training logs, then "
        "held-out` mean the value was read on the games this table reports, so its held-out figure is not an "
        "unbiased test of it; `none`: not compared on any split (BENCHMARKS.md and `playprm.pipeline.smol` keep the "
        "history).", ""]), levers


def validation_section(workdir: Path, *, seed: int, n_resamples: int = 1000) -> tuple[str, dict]:
    """The greedy rows on the validation split, their paired differences (``smol.PAIRS`` where both rows ran) and
    SFT greedy against chance; a line saying it did not run where ``validation/`` holds no run."""
    from playprm.pipeline import smol
    from playprm.report.clemscore import AVERAGE_PLAYED, CI_HIGH, CI_LOW, CLEMSCORE
    from playprm.report.compare import compare_runs
    from playprm.report.paired import against_level, paired_from_comparison, render_paired
    from playprm.report.render import CHANCE_LABEL, number, run_name, with_interval
    from playprm.tables import markdown_table

    title = "## Validation (`splits/validation`: what a lever is chosen on)"
    folder = Path(workdir) / "validation"
    run_dirs = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    if not run_dirs:
        return "\n".join([title, "", "- not run: a work directory from before the validation split; rerun the "
                          "pipeline's command to add it (finished stages are skipped)", ""]), {"rows": [], "paired": []}
    comparison = compare_runs(run_dirs, n_resamples=n_resamples, seed=seed)
    labels = {run_name(label): label for label in comparison.index}
    order = {name: i for i, name in enumerate(smol.VALIDATION_ROWS)}
    rows = sorted(({"name": name, "clemscore": _float(comparison.at[label, CLEMSCORE]),
                    "ci": [_float(comparison.at[label, CLEMSCORE + CI_LOW]),
                           _float(comparison.at[label, CLEMSCORE + CI_HIGH])],
                    "percent_played": _float(comparison.at[label, AVERAGE_PLAYED]),
                    "episodes": int(comparison.at[label, "episodes"])} for name, label in labels.items()),
                  key=lambda r: order.get(r["name"], len(order)))
    wanted = [(labels[a], labels[b]) for a, b in smol.PAIRS if a in labels and b in labels]
    paired = [replace(d, a=run_name(d.a), b=run_name(d.b))
              for d in paired_from_comparison(comparison, wanted, n_resamples=n_resamples, seed=seed)]
    if "sft-greedy" in labels:
        paired.append(replace(against_level(comparison, labels["sft-greedy"], smol.CHANCE, label=CHANCE_LABEL,
                                            n_resamples=n_resamples, seed=seed), a="sft-greedy"))
    table = markdown_table(["row", "clemscore [95% CI]", "% played", "episodes"],
                           [[r["name"], with_interval(r["clemscore"], *r["ci"]) or "no clemscore",
                             number(r["percent_played"]), str(r["episodes"])] for r in rows])
    return "\n".join([title, "", table, "", render_paired(paired), "",
                      "- the same policies as the held-out grid's rows of these names, greedy, on instances of "
                      "neither training nor held-out; a lever's setting is compared here, never on the held-out "
                      "games above.", ""]), {"rows": rows, "paired": [d.as_dict() for d in paired]}


def ood_section(workdir: Path, *, seed: int, n_resamples: int = 1000) -> tuple[str, list[dict]]:
    """The games the policy never trained on: ``report.out_of_domain``'s table of the runs under ``ood/`` (in
    ``smol.OOD_ROWS``' order, each paired against the base and against SFT); a line saying it did not run
    where there is none."""
    from playprm.pipeline import smol
    from playprm.report.out_of_domain import out_of_domain, render_out_of_domain

    title = "## Games it never trained on (greedy; paired against the base and against SFT)"
    folder = Path(workdir) / "ood"
    runs = {name: folder / name for name in smol.OOD_ROWS if (folder / name).is_dir()}
    if not runs:
        return "\n".join([title, "", "- not run: a work directory from before these stages; rerun the pipeline's "
                          "command to add them (finished stages are skipped)", ""]), []
    records = out_of_domain(runs, n_resamples=n_resamples, seed=seed)
    nothing = sorted({r["game"] for r in records if r["measures_nothing"]})
    return "\n".join([
        title, "", render_out_of_domain(records, smol.OOD_ROWS[:2]), "",
        "- the policy trained on the reference game only; these games (`splits/ood`, built-in wordle, taboo and "
        "mastermind, new instances of seed 4000 + the seed) show what that training did to play it never "
        "learned: the same episodes for every policy, paired bootstrap 95% CIs over them. A run that played no "
        "episode of a game to the end has no clemscore there (`no clemscore`, never 0).",
        f"- measures nothing at this size (every policy scores 0): {', '.join(nothing)}" if nothing else
        "- every game has a policy that scores above 0", ""]), records


def _float(value) -> float | None:
    from playprm.report.render import finite_number

    return finite_number(value)

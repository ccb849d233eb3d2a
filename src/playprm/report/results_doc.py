"""RESULTS.md and results.json of a pipeline work directory: the evaluation grid, paired differences, the PRM's
held-out quality and the time per stage.

Inputs (paths relative to the work directory): ``results/<row>/`` (one eval run each, named as the grid's rows),
``prm/`` (the trained PRM, its ``metrics.json``), ``stage_seconds.json`` (written by ``playprm pipeline``).
The PRM's held-out AUROC and Brier score are measured here on the turns of the ``sft-sampled`` run (the SFT
policy's own play on held-out instances, outcome labels), not on the training rollouts' validation split.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from playprm import atomic
from playprm.report.clemscore import AVERAGE_PLAYED, CI_HIGH, CI_LOW, CLEMSCORE, QUALITY, game_names

ROW_KINDS = [("sft-prm-bon", "PRM"), ("sft-logprob-bon", "policy log-probability"),
             ("sft-oracle-bon", "programmatic expert (upper bound)")]
STAGE_FILE = "stage_seconds.json"


def _row_name(label: str) -> str:
    return str(label).split("/", 1)[0]


def grid_rows(comparison: pd.DataFrame, workdir: Path) -> list[dict]:
    rows = []
    for label, row in comparison.iterrows():
        name = _row_name(label)
        n = re.search(r"bon(\d+)$", name)
        scorer = ("prm" if "-prm-" in name or name in ("sft-beam", "sft-lf-beam") else "logprob"
                  if "-logprob-" in name else "expert" if "-oracle-" in name else None)
        played = _number(row.get(AVERAGE_PLAYED))
        clemscore = _number(row[CLEMSCORE])
        rows.append({
            "name": name, "mode": _mode(row["mode"], row["temperature"]), "n": int(n.group(1)) if n else int(row["n_candidates"] or 1),
            "scorer": scorer, "results_dir": str(Path(row["results dir"]).resolve().relative_to(workdir.resolve())),
            # a run that played nothing: clemcore leaves clemscore blank; 0 % played makes it 0
            "clemscore": 0.0 if clemscore is None and played == 0 else clemscore,
            "ci": [_number(row[CLEMSCORE + CI_LOW]), _number(row[CLEMSCORE + CI_HIGH])] if clemscore is not None
            else [0.0, 0.0] if played == 0 else [None, None],
            "percent_played": played,
            "episodes": int(row["episodes"]), "env_lookahead": bool(row["env_lookahead"]),
            "generated_tokens_per_episode": _number(row.get("generated tokens / episode")),
            "games": {game: _number(row.get(f"{game}, {QUALITY}")) for game in game_names(comparison)},
        })
    return rows


def _mode(mode: str, temperature) -> str:
    """The decoding mode, ``sampled (T=…)`` for a one-candidate run at a non-zero temperature (its eval mode is
    ``greedy`` either way)."""
    temperature = _number(temperature)
    return f"sampled (T={temperature:g})" if mode == "greedy" and temperature else mode


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else round(value, 4)


def heldout_prm_quality(workdir: Path, run: str = "results/sft-sampled") -> dict:
    """AUROC and Brier score of the PRM on the turns of a held-out run (outcome labels: success 1, else 0)."""
    from playprm.data.prm import build_prm_dataset
    from playprm.data.sources import read_sources
    from playprm.prm.scorer import PRMScorer
    from playprm.train.prm_metrics import auroc, brier_score

    scan = read_sources([workdir / run], require_episodes=True)
    dataset = build_prm_dataset(scan, labels="outcome", val_fraction=0.0, seed=0)
    records = dataset.train + dataset.validation
    if not records:
        return {"auroc": None, "brier": None, "turns": 0}
    scorer = PRMScorer.from_path(workdir / "prm")
    scores = [s[0] for s in scorer.score([r["messages"] for r in records], [[r["response"]] for r in records])]
    labels = [r["label"] for r in records]
    return {"auroc": _number(auroc(scores, labels)), "brier": _number(brier_score(scores, labels)),
            "turns": len(records), "positive_share": _number(sum(x >= 0.5 for x in labels) / len(labels)),
            "run": run}


def plot_against_n(rows: list[dict], path: Path) -> Path:
    """clemscore against N for the PRM, log-probability and expert scorers, with CI bands; SFT greedy as a line."""
    from playprm.report.plots import _pyplot, save_atomic

    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    by_name = {r["name"]: r for r in rows}
    for prefix, label in ROW_KINDS:
        points = sorted((r["n"], r) for r in rows if r["name"].startswith(prefix) and r["clemscore"] is not None)
        if not points:
            continue
        ns = [n for n, _ in points]
        axes.plot(ns, [r["clemscore"] for _, r in points], marker="o", label=label)
        axes.fill_between(ns, [r["ci"][0] for _, r in points], [r["ci"][1] for _, r in points], alpha=0.15)
    # greedy is the line to beat; base greedy (0 for a model trained from scratch) is left to the table, as its
    # line would stretch the axis until the scorers' differences cannot be read
    if by_name.get("sft-greedy", {}).get("clemscore") is not None:
        axes.axhline(by_name["sft-greedy"]["clemscore"], linestyle="--", color="grey", label="sft-greedy")
    axes.set_xscale("log", base=2)
    ticks = sorted({r["n"] for r in rows if any(r["name"].startswith(p) for p, _ in ROW_KINDS)})
    axes.set_xticks(ticks, [str(n) for n in ticks])
    axes.set_xlabel("N (candidates per turn)")
    axes.set_ylabel("clemscore (held-out, 95% CI)")
    axes.set_title("Best-of-N on held-out instances by scorer")
    axes.legend(fontsize=8)
    figure.tight_layout()
    save_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    plt.close(figure)
    return path


# rows drawn as single points on the compute plot (the best-of-N rows are lines), with their marker
SINGLE_ROWS = (("sft-greedy", "s"), ("sft-sampled", "v"), ("sft-lf-beam", "D"), ("sft-round2-greedy", "P"),
               ("sft-beam", "x"))


def plot_against_tokens(rows: list[dict], path: Path) -> Path:
    """clemscore against generated tokens per episode: one line per best-of-N scorer (CI bands) and one marker per
    single row, so that rows of equal cost stay apart (a label per point overlaps there)."""
    from playprm.report.plots import _pyplot, save_atomic

    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.5, 5.5))
    by_name = {r["name"]: r for r in rows if r["clemscore"] is not None and r["generated_tokens_per_episode"]}
    for prefix, label in ROW_KINDS:
        points = sorted((r["generated_tokens_per_episode"], r) for r in by_name.values() if r["name"].startswith(prefix))
        if points:
            xs = [x for x, _ in points]
            axes.plot(xs, [r["clemscore"] for _, r in points], marker="o", label=f"best-of-N, {label}")
            axes.fill_between(xs, [r["ci"][0] for _, r in points], [r["ci"][1] for _, r in points], alpha=0.15)
    for name, marker in SINGLE_ROWS:
        if name in by_name:
            r = by_name[name]
            label = name + (" (env lookahead, not honest)" if r["env_lookahead"] else "")
            axes.errorbar([r["generated_tokens_per_episode"]], [r["clemscore"]], capsize=3, fmt=marker, markersize=7,
                          yerr=[[r["clemscore"] - r["ci"][0]], [r["ci"][1] - r["clemscore"]]], label=label,
                          color="#C44E52" if r["env_lookahead"] else None)
    axes.set_xscale("log", base=2)
    costs = [r["generated_tokens_per_episode"] for r in by_name.values()]
    if costs:
        ticks = [2 ** k for k in range(math.floor(math.log2(min(costs))), math.ceil(math.log2(max(costs))) + 1)]
        axes.set_xticks(ticks, [str(t) for t in ticks])
    axes.set_xlabel("generated tokens per episode (log scale)")
    axes.set_ylabel("clemscore (held-out, 95% CI)")
    axes.set_title("clemscore against generated tokens")
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    figure.tight_layout()
    save_atomic(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    plt.close(figure)
    return path


def write_results(workdir: Path, *, command: str, seed: int, pairs: list[tuple[str, str]],
                  row_order: list[str] = (), n_resamples: int = 1000) -> tuple[Path, Path]:
    """Write ``RESULTS.md`` and ``results.json`` into ``workdir``; returns their paths."""
    from playprm.report.compare import compare_runs
    from playprm.report.paired import paired_from_comparison, render_paired

    workdir = Path(workdir)
    run_dirs = sorted(p for p in (workdir / "results").iterdir() if p.is_dir())
    comparison = compare_runs(run_dirs, n_resamples=n_resamples, seed=seed)
    rows = grid_rows(comparison, workdir)
    order = {name: i for i, name in enumerate(row_order)}
    rows.sort(key=lambda r: order.get(r["name"], len(order)))
    labels = {_row_name(label): label for label in comparison.index}
    wanted = [(labels[a], labels[b]) for a, b in pairs if a in labels and b in labels]
    paired = [replace(d, a=_row_name(d.a), b=_row_name(d.b))
              for d in paired_from_comparison(comparison, wanted, n_resamples=n_resamples, seed=seed)]
    prm_metrics_file = workdir / "prm" / "metrics.json"
    training = json.loads(prm_metrics_file.read_text()) if prm_metrics_file.is_file() else {}
    prm = {"heldout": heldout_prm_quality(workdir),
           "training_validation": {k: training.get(f"validation_{k}") for k in ("auroc", "brier")}}
    prm.update(auroc=prm["heldout"]["auroc"], brier=prm["heldout"]["brier"])
    stages = json.loads((workdir / STAGE_FILE).read_text()) if (workdir / STAGE_FILE).is_file() else {}
    document = {"command": command, "seed": seed, "rows": rows, "paired": [d.as_dict() for d in paired],
                "prm": prm, "stage_seconds": stages, "versions": _versions()}
    json_path = atomic.write_json(workdir / "results.json", document)
    plot_against_n(rows, workdir / "clemscore_vs_n.png")
    plot_against_tokens(rows, workdir / "clemscore_vs_tokens.png")
    md_path = atomic.write_text(workdir / "RESULTS.md", _markdown(document, render_paired(paired)))
    return md_path, json_path


def _versions() -> dict:
    import clemcore
    import torch
    import transformers

    from playprm import __version__

    return {"playprm": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "clemcore": getattr(clemcore, "__version__", "3.7.x"), "python": sys.version.split()[0]}


def _markdown(document: dict, paired_table: str) -> str:
    from playprm.report.render import markdown_table, number

    rows = document["rows"]
    games = sorted({g for r in rows for g in r["games"]})
    grid = markdown_table(
        ["row", "mode", "N", "scorer", "clemscore [95% CI]", "episodes", "gen tokens / episode"],
        [[r["name"], r["mode"] + (" (env lookahead)" if r["env_lookahead"] else ""), str(r["n"]), r["scorer"] or "",
          f"{number(r['clemscore'])} [{number(r['ci'][0])}, {number(r['ci'][1])}]", str(r["episodes"]),
          number(r["generated_tokens_per_episode"], 0)] for r in rows])
    per_game = markdown_table(["row", *games], [[r["name"], *(number(r["games"].get(g)) for g in games)]
                                                for r in rows])
    prm = document["prm"]
    stages = document["stage_seconds"]
    stage_table = markdown_table(["stage", "seconds"], [[k, f"{v:.0f}"] for k, v in stages.items()]
                                 + [["total", f"{sum(stages.values()):.0f}"]]) if stages else "(not recorded)"
    heldout = prm["heldout"]
    versions = ", ".join(f"{k} {v}" for k, v in document["versions"].items())
    return "\n".join([
        "# Results: the card's claim at small scale", "",
        f"- command: `{document['command']}`", f"- seed: {document['seed']}", f"- versions: {versions}",
        "- teacher: the ε-noisy programmatic expert (`programmatic:expert`, teacher data, not a language model); "
        "policy: a small model trained from random weights by full-weight SFT on the teacher's wins; PRM: trained "
        "on the policy's own branched rollouts. Every row below is on held-out instances (`splits/heldout`, "
        "generated with another seed, no instance shared with `splits/train`).",
        "- A run that played no episode to the end (`base-greedy`: a random model never keeps the reply format) has "
        "no clemscore in clemcore's table; 0 % played makes it 0 here and in the paired differences.",
        "- `sft-oracle-bon<N>` ranks candidates by agreement with the programmatic expert's move for the player's "
        "context (it sees no hidden game state): an upper bound, not a PRM.", "",
        "## Grid (held-out)", "", grid, "",
        "![clemscore against N](clemscore_vs_n.png)", "", "![clemscore against generated tokens](clemscore_vs_tokens.png)",
        "", "## Paired differences (same held-out instances, paired bootstrap 95% CI)", "", paired_table, "",
        "## The PRM", "",
        f"- held-out turns of `sft-sampled` ({heldout.get('turns', 0)} turns, outcome labels, "
        f"{number(heldout.get('positive_share'))} positive): AUROC {number(heldout.get('auroc'))}, "
        f"Brier {number(heldout.get('brier'))}",
        f"- validation split of its training rollouts: AUROC {number(prm['training_validation'].get('auroc'))}, "
        f"Brier {number(prm['training_validation'].get('brier'))}; calibration plot: `prm/calibration.png`", "",
        "## Per game (quality score)", "", per_game, "", "## Time per stage (wall seconds, 2 CPU cores)", "",
        stage_table, "",
    ])

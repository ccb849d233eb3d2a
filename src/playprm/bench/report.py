"""Figures of the benchmark suite and the BENCHMARKS.md they are written to.

BENCHMARKS.md is partly hand-written: ``playprm bench`` rewrites only what lies between the two markers below,
so an introduction above them and the GPU section below them stay as they were written.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from playprm import atomic, tables

BEGIN = "<!-- BEGIN playprm bench: generated, rewritten by `playprm bench` -->"
END = "<!-- END playprm bench -->"

DEFAULT_HEAD = """# Benchmarks

Measured by `playprm bench` (the CPU suite: about twenty minutes on two cores). Every figure comes from one
run in which the paths it compares were run alternately, pair by pair (A B, A B, ...): on a machine shared with
other work, absolute times drift, the ratio of the medians of alternated runs much less. The raw times of
every pair are listed with each figure. The one-call figures use tiny random-weight models made by
`playprm make-tiny`; the episode figures use a small policy trained by playprm's own stages just until it keeps
the reply formats of wordle and taboo, so that its episodes play several turns (`bench/workload.py`). Both
measure the machinery (batching, cache reuse, runner overhead), not model quality.

"""

DEFAULT_TAIL = """

## GPU

Prepared scripts for one NVIDIA H200 (each self-contained, no network, under 8 minutes; they write JSON and
markdown to `$OUT` when set, else to `benchmarks/out/`):

- `benchmarks/gpu_generation.sh`: decode throughput of vLLM (when importable) and transformers (`HFPolicy`) on a
  random-weight Qwen3-8B-shaped model in bf16 at batch 1, 16 and 64, against the HBM bandwidth roofline.
- `benchmarks/gpu_inference.sh`: the best-of-N overhead ratio (vLLM if installed, else transformers) on a
  random-weight real-size model, and PRM scoring throughput.

Not run yet: no GPU was available in this session.
"""


@dataclass
class Goal:
    """A target of the issue and what was measured against it."""

    text: str  # e.g. "n=4 costs <= 1.5x n=1"
    measured: float
    limit: float
    met: bool
    why_missed: str = ""  # what limits the figure, when the goal is missed


@dataclass
class Figure:
    """One benchmark's result: what was run, a summary table, the raw alternated times, goals and notes."""

    key: str
    title: str
    setup: str
    header: list[str]
    rows: list[list[str]]
    raw: dict[str, list[float]] = field(default_factory=dict)  # label -> wall seconds, one per pair
    goals: list[Goal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0  # how long the benchmark took, setup included


def seconds(value: float) -> str:
    return f"{value:.3f}"


def ratio(value: float) -> str:
    return f"{value:.2f}x"


def median(values: list[float]) -> float:
    return statistics.median(values)


def table(header: list[str], rows: list[list]) -> str:
    """A benchmark write-up's Markdown table (BENCHMARKS.md and the GPU scripts' reports), every column
    left-aligned."""
    return tables.markdown_table(header, rows, align="l" * len(header))


def render_figure(figure: Figure) -> str:
    """Markdown of one figure: setup, summary table, goals, notes, raw times."""
    lines = [f"### {figure.title}", "", figure.setup, ""]
    lines.append(table(figure.header, figure.rows))
    if figure.goals:
        lines += [""]
        for goal in figure.goals:
            verdict = "met" if goal.met else "**missed**"
            lines.append(f"- Goal {goal.text}: measured {goal.measured:.2f} (limit {goal.limit:g}), {verdict}.")
            if not goal.met and goal.why_missed:
                lines.append(f"  What limits it: {goal.why_missed}")
    if figure.notes:
        lines += [""] + [f"- {note}" for note in figure.notes]
    if figure.raw:
        lines += ["", "<details><summary>raw wall times (s), in the order they ran</summary>", ""]
        lines.append(table(["path", "times"], [[label, ", ".join(f"{t:.3f}" for t in times)]
                                               for label, times in figure.raw.items()]))
        lines += ["", "</details>"]
    lines += ["", f"_This benchmark took {figure.seconds:.0f} s._", ""]
    return "\n".join(lines)


def render_generated(figures: list[Figure], machine: dict, command: str, total_seconds: float) -> str:
    """The generated part of BENCHMARKS.md: how it was made, on what, and every figure."""
    lines = [
        BEGIN, "",
        "## CPU suite", "",
        f"- command: `{command}`",
        f"- date: {machine['date']}",
        f"- machine: {machine['nproc']} usable cores, {machine['cpu_model']}; load average at start "
        f"{', '.join(str(x) for x in machine['load_average'])}",
        f"- software: torch {machine['torch']} ({machine['torch_threads']} threads, OMP_WAIT_POLICY "
        f"{machine.get('omp_wait_policy', '(default)')}), transformers {machine['transformers']}, clemcore "
        f"{machine['clemcore']}, Python {machine['python']}",
        f"- the whole suite took {total_seconds:.0f} s", "",
    ]
    threads = next((f for f in figures if f.key == "threads"), None)
    if threads is not None and len(threads.raw) == 2:
        many, one = (median(times) for times in threads.raw.values())
        if one < many / 1.2:
            lines += [f"**This run's cores were oversubscribed**: one torch thread was {many / one:.1f}x faster "
                      f"than {machine['nproc']} (figure 0). Every path below that runs on all cores was slowed "
                      f"by other processes' load; compare ratios between such paths only, and rerun on a quiet "
                      f"machine for the rest.", ""]
    missed = [(f, g) for f in figures for g in f.goals if not g.met]
    summary = [[f.title, g.text, f"{g.measured:.2f}", "met" if g.met else "missed"] for f in figures for g in f.goals]
    if summary:
        lines += ["Goals at a glance:", "", table(["figure", "goal", "measured", "verdict"], summary), ""]
    if missed:
        lines += [f"{len(missed)} goal(s) missed; each figure below says what limits it.", ""]
    for figure in figures:
        lines += [render_figure(figure)]
    lines += [END]
    return "\n".join(lines)


def write_benchmarks_md(path: Path, generated: str) -> Path:
    """Replace the generated part of ``path`` (between the markers), keeping the hand-written rest.

    A file without markers keeps all its text above the new generated part; a missing file gets the default
    introduction and GPU section.
    """
    path = Path(path)
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if BEGIN in text and END in text.split(BEGIN, 1)[1]:
            head, rest = text.split(BEGIN, 1)
            tail = rest.split(END, 1)[1]
        else:
            head, tail = text.rstrip() + "\n\n", DEFAULT_TAIL
    else:
        head, tail = DEFAULT_HEAD, DEFAULT_TAIL
    return atomic.write_text(path, head + generated + tail)

"""The CPU benchmark suite: every figure in one process, at full size (about twenty minutes on two cores, plus
about five CPU minutes the first time, to build the multi-turn workload) or at quick size (seconds, for tests), written to
BENCHMARKS.md."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from playprm import atomic
from playprm.bench import FIGURES, architectures, episodes, generation, growth, scoring, workload
from playprm.bench.report import Figure, render_generated, write_benchmarks_md
from playprm.bench.timing import machine_info
from playprm.models.tiny import TinySize


@dataclass
class Sizes:
    """Workload sizes of every figure (defaults: the full suite)."""

    model: TinySize = field(default_factory=lambda: workload.SMALL)  # figures 1-2 (the card's Qwen3.5 layout)
    other_arch: TinySize = field(default_factory=lambda: workload.SMALL_QWEN3)  # figure 1b, beside `model`
    wide_prm: TinySize | None = field(default_factory=lambda: workload.WIDE)  # figure 2, beside `model`
    growth_model: TinySize = field(default_factory=lambda: workload.TINY)  # figure 5a
    multiturn: workload.MultiturnRecipe | workload.SmolMultiturnRecipe = field(
        default_factory=workload.MultiturnRecipe)  # figures 0, 3-5
    pairs: int = 3
    contexts: int = 16
    ns: tuple = (1, 4, 8)
    slow_ns: tuple = (1, 4)  # one call per candidate and clemcore: n-fold by construction, so not at every n
    max_tokens: int = 24
    prm_contexts: int = 4
    prm_wide_contexts: int = 1
    prm_context_tokens: int = 1000
    prm_candidates: int = 8
    prm_candidate_tokens: int = 32
    turn_tokens: int = 32  # max tokens of a multi-turn policy turn: the games' replies fit
    thread_limit: int | None = 2  # instances per experiment in figure 0's whole processes
    clem_limit: int | None = None  # figure 3: every instance (clem run has no instance limit)
    clem_batch_sizes: tuple = (1, 8, 16)
    bon_limit: int | None = 3
    bon_ns: tuple = (4, 8)
    prefill_limit: int | None = None
    beam_points: tuple = ((1, 2), (2, 2), (2, 4), (4, 4))
    beam_max_tokens: int = 8
    memory_episodes: int = 500
    memory_first: int = 50


FULL = Sizes()
QUICK = Sizes(model=workload.TINY, other_arch=TinySize(arch="qwen3"), wide_prm=None,
              multiturn=workload.MultiturnRecipe(size=workload.TINY, steps=0), pairs=1, contexts=2, ns=(1, 2),
              slow_ns=(1, 2), max_tokens=3, prm_contexts=1, prm_context_tokens=96, prm_candidates=2,
              prm_candidate_tokens=8, turn_tokens=3, thread_limit=1, clem_batch_sizes=(1, 2), bon_limit=1,
              bon_ns=(2,), prefill_limit=1, beam_points=((1, 2), (2, 2)), beam_max_tokens=2, memory_episodes=12,
              memory_first=4)

# figures 3-4 on the pretrained SmolLM2-135M-Instruct with a LoRA SFT (benchmarks/real_model.py): playprm eval
# against clem run at -b 16, best-of-4 against greedy; two alternated rounds (each round plays all 40 episodes)
REAL = Sizes(multiturn=workload.SmolMultiturnRecipe(), pairs=2, clem_batch_sizes=(16,), bon_limit=2, bon_ns=(4,),
             turn_tokens=32)


def figure_runners(sizes: Sizes, work: Path, log: Callable[[str], None]) -> dict[str, Callable[[], Figure]]:
    """Figure key -> a call that builds what the figure needs (models are made once and reused) and runs it."""
    s = sizes
    small = lambda: workload.tiny_pair(work, s.model)  # noqa: E731 - each built only when a figure needs it
    tiny = lambda: workload.tiny_pair(work, s.growth_model)  # noqa: E731
    other = lambda: workload.tiny_pair(work, s.other_arch)  # noqa: E731
    wide = lambda: workload.tiny_pair(work, s.wide_prm) if s.wide_prm is not None else None  # noqa: E731
    mt = lambda: workload.multiturn_workload(work, s.multiturn, log)  # noqa: E731
    return {
        "threads": lambda: generation.thread_sensitivity(mt(), work, limit=s.thread_limit, max_tokens=s.turn_tokens,
                                                         pairs=s.pairs),
        "generation": lambda: generation.run(small(), work, contexts=s.contexts, ns=s.ns, slow_ns=s.slow_ns,
                                             max_tokens=s.max_tokens, pairs=s.pairs),
        "prm": lambda: scoring.run(small(), wide(), contexts=s.prm_contexts, wide_contexts=s.prm_wide_contexts,
                                   context_tokens=s.prm_context_tokens, candidates=s.prm_candidates,
                                   candidate_tokens=s.prm_candidate_tokens, pairs=s.pairs),
        "architectures": lambda: architectures.run(
            {s.model.arch: small(), s.other_arch.arch: other()}, contexts=s.contexts, max_tokens=s.max_tokens,
            prm_contexts=s.prm_contexts, prm_context_tokens=s.prm_context_tokens, prm_candidates=s.prm_candidates,
            prm_candidate_tokens=s.prm_candidate_tokens, pairs=s.pairs),
        "episodes": lambda: episodes.throughput(mt(), work, limit=s.clem_limit, max_tokens=s.turn_tokens,
                                                batch_sizes=s.clem_batch_sizes, pairs=s.pairs),
        "best_of_n": lambda: episodes.best_of_n_overhead(mt(), work, limit=s.bon_limit, max_tokens=s.turn_tokens,
                                                         ns=s.bon_ns, pairs=s.pairs),
        "prefill": lambda: growth.prefill_growth(mt(), work, limit=s.prefill_limit, max_tokens=s.turn_tokens,
                                                 pairs=s.pairs),
        "beam_growth": lambda: growth.beam_growth(tiny(), work, points=s.beam_points, max_tokens=s.beam_max_tokens,
                                                  pairs=s.pairs),
        "memory": lambda: growth.memory(mt(), work, episodes=s.memory_episodes, first=s.memory_first,
                                        max_tokens=s.turn_tokens),
    }


def run_suite(*, quick: bool = False, only: list[str] | None = None, work: Path | None = None,
              log: Callable[[str], None] = print, sizes: Sizes = FULL) -> tuple[list[Figure], dict, float]:
    """Run the figures (all, or those named in ``only``, in suite order).

    Args:
        quick: tiny sizes and one round, for tests; the numbers mean nothing (overrides ``sizes``).
        only: figure keys out of ``FIGURES``.
        work: folder for models and results (reused models are kept); a temporary one when None.
        log: where progress lines go.
    Returns:
        (figures, machine info taken at the start, total seconds).
    """
    workload.quiet()
    sizes = QUICK if quick else sizes
    started = time.perf_counter()
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="playprm-bench-") as scratch:
        root = Path(work) if work is not None else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        log(f"bench: models in {root}")
        runners = figure_runners(sizes, root, log)
        figures = []
        for key in FIGURES:
            if only and key not in only:
                continue
            log(f"bench: {key} ...")
            figure = runners[key]()
            log(f"bench: {key} done in {figure.seconds:.0f} s")
            figures.append(figure)
    return figures, machine, time.perf_counter() - started


def write_outputs(figures: list[Figure], machine: dict, total: float, *, out: Path, command: str,
                  json_path: Path | None = None) -> Path:
    """BENCHMARKS.md (generated part replaced) and, when asked, every figure as JSON."""
    path = write_benchmarks_md(out, render_generated(figures, machine, command, total))
    if json_path is not None:
        write_json(json_path, figures, machine, total)
    return path


def write_json(path: Path, figures: list[Figure], machine: dict, total: float) -> Path:
    """Every figure, raw times included, with the machine it ran on."""
    from dataclasses import asdict

    return atomic.write_text(path, json.dumps({"machine": machine, "total_seconds": total,
                                               "figures": [asdict(f) for f in figures]}, indent=2))


def script_main(figures: list[str], description: str, argv: list[str] | None = None, sizes: Sizes = FULL) -> int:
    """Entry point of the ``benchmarks/*.py`` scripts: run some figures and print them as markdown.

    ``--quick`` for tiny sizes, ``--work DIR`` to keep models and results, ``--json PATH`` for the raw data.
    The figures are the same functions ``playprm bench`` runs; BENCHMARKS.md is not touched.
    """
    import argparse
    import sys

    from playprm.bench.report import render_figure

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--work", type=Path, help="folder for models and results (default: temporary)")
    parser.add_argument("--json", type=Path, help="write the figures, raw times included, as JSON here")
    args = parser.parse_args(argv)
    results, machine, total = run_suite(quick=args.quick, only=figures, work=args.work, sizes=sizes,
                                        log=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps(machine))
    for figure in results:
        print(render_figure(figure))
    if args.json is not None:
        write_json(args.json, results, machine, total)
    return 0

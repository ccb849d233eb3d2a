"""The CPU benchmark suite: every figure in one process, at full size (about five minutes on two cores) or at
quick size (seconds, for tests), written to BENCHMARKS.md."""

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

    model: TinySize = field(default_factory=lambda: workload.SMALL)  # figures 0-4 (the card's Qwen3.5 layout)
    other_arch: TinySize = field(default_factory=lambda: workload.SMALL_QWEN3)  # figure 1b, beside `model`
    growth_model: TinySize = field(default_factory=lambda: workload.TINY)  # figure 5
    pairs: int = 3
    contexts: int = 16
    ns: tuple = (1, 4, 8)
    slow_ns: tuple = (1, 4)  # one call per candidate and clemcore: n-fold by construction, so not at every n
    max_tokens: int = 24
    prm_contexts: int = 4
    prm_context_tokens: int = 1000
    prm_candidates: int = 8
    prm_candidate_tokens: int = 32
    limit: int = 2
    episode_max_tokens: int = 32
    clem_batch_sizes: tuple = (1, 8)
    bon_ns: tuple = (4, 8)
    beam_points: tuple = ((1, 2), (2, 2), (2, 4), (4, 4))
    beam_max_tokens: int = 8
    memory_episodes: int = 500
    memory_first: int = 50
    memory_max_tokens: int = 4


FULL = Sizes()
QUICK = Sizes(model=workload.TINY, other_arch=TinySize(arch="qwen3"), pairs=1, contexts=2, ns=(1, 2), slow_ns=(1, 2), max_tokens=3, prm_contexts=1,
              prm_context_tokens=96, prm_candidates=2, prm_candidate_tokens=8, limit=1, episode_max_tokens=3,
              clem_batch_sizes=(1, 2), bon_ns=(2,), beam_points=((1, 2), (2, 2)), beam_max_tokens=2,
              memory_episodes=12, memory_first=4, memory_max_tokens=2)


def figure_runners(sizes: Sizes, small: workload.ModelPair, tiny: workload.ModelPair,
                   work: Path) -> dict[str, Callable[[], Figure]]:
    s = sizes
    other = lambda: workload.tiny_pair(work, s.other_arch)  # noqa: E731 - built only when figure 1b runs
    return {
        "threads": lambda: generation.thread_sensitivity(small, contexts=s.contexts, max_tokens=s.max_tokens,
                                                         pairs=s.pairs),
        "generation": lambda: generation.run(small, work, contexts=s.contexts, ns=s.ns, slow_ns=s.slow_ns,
                                             max_tokens=s.max_tokens,
                                             pairs=s.pairs),
        "prm": lambda: scoring.run(small, contexts=s.prm_contexts, context_tokens=s.prm_context_tokens,
                                   candidates=s.prm_candidates, candidate_tokens=s.prm_candidate_tokens,
                                   pairs=s.pairs),
        "architectures": lambda: architectures.run(
            {small.size.arch: small, s.other_arch.arch: other()}, contexts=s.contexts, max_tokens=s.max_tokens,
            prm_contexts=s.prm_contexts, prm_context_tokens=s.prm_context_tokens, prm_candidates=s.prm_candidates,
            prm_candidate_tokens=s.prm_candidate_tokens, pairs=s.pairs),
        "episodes": lambda: episodes.throughput(small, work, limit=s.limit, max_tokens=s.episode_max_tokens,
                                                batch_sizes=s.clem_batch_sizes, pairs=s.pairs),
        "best_of_n": lambda: episodes.best_of_n_overhead(small, work, limit=s.limit,
                                                         max_tokens=s.episode_max_tokens, ns=s.bon_ns,
                                                         pairs=s.pairs),
        "beam_growth": lambda: growth.beam_growth(tiny, work, points=s.beam_points, max_tokens=s.beam_max_tokens,
                                                  pairs=s.pairs),
        "memory": lambda: growth.memory(tiny, work, episodes=s.memory_episodes, first=s.memory_first,
                                        max_tokens=s.memory_max_tokens),
    }


def run_suite(*, quick: bool = False, only: list[str] | None = None, work: Path | None = None,
              log: Callable[[str], None] = print) -> tuple[list[Figure], dict, float]:
    """Run the figures (all, or those named in ``only``, in suite order).

    Args:
        quick: tiny sizes and one round, for tests; the numbers mean nothing.
        only: figure keys out of ``FIGURES``.
        work: folder for models and results (reused models are kept); a temporary one when None.
        log: where progress lines go.
    Returns:
        (figures, machine info taken at the start, total seconds).
    """
    workload.quiet()
    sizes = QUICK if quick else FULL
    started = time.perf_counter()
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="playprm-bench-") as scratch:
        root = Path(work) if work is not None else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        log(f"bench: models in {root}")
        small = workload.tiny_pair(root, sizes.model)
        tiny = workload.tiny_pair(root, sizes.growth_model)
        runners = figure_runners(sizes, small, tiny, root)
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


def script_main(figures: list[str], description: str, argv: list[str] | None = None) -> int:
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
    results, machine, total = run_suite(quick=args.quick, only=figures, work=args.work,
                                        log=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps(machine))
    for figure in results:
        print(render_figure(figure))
    if args.json is not None:
        write_json(args.json, results, machine, total)
    return 0

"""Side-by-side timing: paths measured alternately in one process, reported as raw times and ratios of medians.

On a shared machine absolute times drift with the load of other processes; running path A, then B, then A
again (ABAB...) exposes both to the same drift, so the ratio of their medians is what a figure reports.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class Trial:
    """Raw wall times of each path, in the order they ran (one per pair), and each path's last output."""

    times: dict[str, list[float]]
    outputs: dict[str, Any] = field(default_factory=dict)

    def median(self, path: str) -> float:
        return statistics.median(self.times[path])

    def ratio(self, path: str, baseline: str) -> float:
        """median(path) / median(baseline)."""
        return self.median(path) / self.median(baseline)


def alternate(paths: dict[str, Callable[[], Any]], *, pairs: int, warmup: int = 1) -> Trial:
    """Run every path ``warmup`` times untimed, then ``pairs`` rounds of each path in turn (A B C, A B C, ...).

    Args:
        paths: name -> a call without arguments; its return value is kept as that path's output.
        pairs: timed rounds; each round runs every path once, in the order given.
        warmup: untimed rounds first (first calls pay for allocator growth and lazy imports).
    Returns:
        A Trial with ``pairs`` wall times per path and the output of each path's last call.
    """
    outputs: dict[str, Any] = {}
    for _ in range(warmup):
        for name, call in paths.items():
            outputs[name] = call()
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(pairs):
        for name, call in paths.items():
            gc.collect()  # a collection triggered inside one path's timing would be charged to it alone
            start = time.perf_counter()
            outputs[name] = call()
            times[name].append(time.perf_counter() - start)
    return Trial(times=times, outputs=outputs)


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least-squares line ``y = intercept + slope * x``; returns (slope, intercept, R^2)."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    slope = sxy / sxx if sxx else 0.0
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for y in ys)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    r2 = 1.0 - residual / total if total else 1.0
    return slope, intercept, r2


def rss_bytes() -> int:
    """Resident set size of this process, read from /proc/self/statm (Linux)."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        resident_pages = int(handle.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def cpu_model() -> str:
    """The processor's name from /proc/cpuinfo ('unknown' elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def usable_cpus() -> int:
    # the count the runs' thread choice uses (a lazy import: it imports torch)
    from playprm.transformers_runtime import usable_cores

    return usable_cores()


def machine_info() -> dict:
    """Date, processor, core count, load and library versions: the facts a timing depends on."""
    import clemcore
    import torch
    import transformers

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "date": datetime.now().isoformat(timespec="seconds"),
        "nproc": usable_cpus(),
        "cpu_model": cpu_model(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "transformers": transformers.__version__,
        "clemcore": getattr(clemcore, "__version__", None) or _clemcore_version(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in load],
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(default)"),
    }


def _clemcore_version() -> str:
    from importlib.metadata import version

    return version("clemcore")

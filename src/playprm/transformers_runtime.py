"""How playprm runs transformers models, shared by the policy (``models.hf``), the PRM (``prm``) and training
(``train``): CPU threads (decided where a run starts, then followed between units of work), left-padded batches and KV-cache rows across
transformers 5.x releases (``past_key_values`` was renamed ``cache``). How their weights load: ``models.loading``.
It imports neither models nor prm."""

from __future__ import annotations

import inspect
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch

from playprm.errors import UsageError

# between the tiny policies whose measurement chose one thread (issue 13: under 5M parameters) and SmolLM2-135M
LARGE_MODEL_PARAMETERS = 50_000_000


def model_parameters(model_id: str | os.PathLike | None, *, follow_adapter: bool = True) -> int | None:
    """Parameters in a local model folder's ``*.safetensors`` files, read from their headers (nothing loads); a LoRA
    adapter folder (``train-sft``'s output) counts the base its ``adapter_config.json`` names, as transformers loads
    it; a PRM folder (``train-prm``'s, with ``prm_config.json``) counts its backbone. None for a hub id, a
    non-model selector (``programmatic:...``) or a folder without safetensors weights."""
    folder = Path(model_id) if model_id else None
    if folder is None or not folder.is_dir():
        return None
    if (folder / "prm_config.json").is_file():  # its own files are the head (a few hundred numbers) and the LoRA
        import json

        return model_parameters(json.loads((folder / "prm_config.json").read_text()).get("base_model"))
    if follow_adapter and (folder / "adapter_config.json").is_file() and not (folder / "config.json").is_file():
        from peft import PeftConfig

        return model_parameters(PeftConfig.from_pretrained(str(folder)).base_model_name_or_path, follow_adapter=False)
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    from safetensors import safe_open

    total = 0
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            for name in handle.keys():
                total += math.prod(handle.get_slice(name).get_shape())
    return total


def cpu_threads(parameters: int | None, idle_cores: int | None) -> int:
    """The torch threads of a CPU run (BENCHMARKS.md, "CPU threads by model size and load"): the idle cores for a
    large model (``LARGE_MODEL_PARAMETERS``), whose forward and backward passes are compute-bound; one thread for a
    small or unknown model, and on a machine whose cores other processes keep busy (or where that is unknown),
    because OpenMP threads spin-wait for each other and lose several-fold when a core is taken: issue 13's tiny
    policy, 107.7 s on 2 threads against 21.9 s on 1 beside one busy process; SmolLM2-135M beside other jobs, 2
    threads against 1: greedy play 5.0x slower, best-of-4 play 2.5x, a LoRA SFT step 2.8x, a DPO step 2.1x
    (benchmarks/threads.py, 2026-12-06). What 2 threads gain on an idle machine is not measured yet."""
    if parameters is None or parameters < LARGE_MODEL_PARAMETERS or not idle_cores:
        return 1
    return max(1, idle_cores)


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _loadavg() -> str:
    return Path("/proc/loadavg").read_text(encoding="ascii")


def _own_running() -> int:
    """Threads of this process the kernel has runnable now (``/proc/self/task/*/stat`` state R): the reader, and
    any torch worker still spinning after a parallel region, which must not count as another process's load."""
    running = 0
    for stat in Path("/proc/self/task").glob("*/stat"):
        try:
            running += stat.read_text(encoding="ascii").rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return max(1, running)


def idle_cores(samples: int = 5, pause: float = 0.02, read=_loadavg, own=_own_running) -> int | None:
    """This process's cores that no other process is running on now: the usable cores, less the threads other
    processes have runnable (``/proc/loadavg``'s running count less this process's own runnable threads, ``own``;
    the median of a few samples: one reading catches passing daemons; ``read`` returns the file's text); None where
    it is missing. Machine-wide, so on a shared host a busy neighbour counts even off this process's cores: the safe
    side."""
    try:
        running = []
        for index in range(samples):
            running.append(int(read().split()[3].split("/")[0]) - own())
            if index + 1 < samples:
                time.sleep(pause)
    except (OSError, ValueError, IndexError):
        return None
    return max(0, min(usable_cores(), (os.cpu_count() or 1) - statistics.median_low(running)))


# how often a run whose threads playprm chose looks at the machine again (follow_cpu_threads): reading the load
# takes about 0.1 s, a SmolLM2 training step about 100 s, a generation batch of the smol preset about a second
FOLLOW_EVERY_SECONDS = 30.0


@dataclass
class _ThreadChoice:
    parameters: int | None = None
    following: bool = False  # playprm chose (no OMP_NUM_THREADS) for a large model on CPU: the choice follows
    checked: float = 0.0
    used: set[int] = field(default_factory=set)


_choice = _ThreadChoice()


def choose_cpu_threads(model: str | os.PathLike | None = None) -> int:
    """Set the process's torch threads for a CPU run and return them: ``OMP_NUM_THREADS`` when set (the user's
    override, kept to the end; a value that is not a positive whole number is a UsageError), else ``cpu_threads``
    of the parameters in ``model`` (the local folder of the base weights the run loads; None: a small model's one
    thread) and the cores idle now, a choice ``follow_cpu_threads`` revisits as the run goes on. A process-wide
    setting, so a run decides it where it starts (``play.run_eval``, ``collect``, the trainers, ``summarize``,
    ``bench``, the clemcore backend's ``get_model_for``), never a model loader. On CUDA nothing changes."""
    if torch.cuda.is_available():
        return torch.get_num_threads()
    asked = os.environ.get("OMP_NUM_THREADS", "").strip()
    parameters = None
    if asked:
        if not asked.isdigit() or int(asked) < 1:
            raise UsageError(f"OMP_NUM_THREADS={asked!r} is not a positive whole number; set it to the CPU threads "
                             "to use (e.g. OMP_NUM_THREADS=2) or unset it to let playprm choose by the model's size")
        threads = int(asked)
    else:
        parameters = model_parameters(model)
        threads = cpu_threads(parameters, idle_cores() if parameters is not None else None)
    torch.set_num_threads(threads)
    following = not asked and parameters is not None and parameters >= LARGE_MODEL_PARAMETERS
    _choice.parameters, _choice.following, _choice.checked = parameters, following, time.monotonic()
    _choice.used = {threads}
    return threads


def follow_cpu_threads(now: float | None = None) -> int:
    """Choose a large model's threads again by the cores idle now, at most every ``FOLLOW_EVERY_SECONDS``, where
    playprm made the first choice (``choose_cpu_threads`` without ``OMP_NUM_THREADS``): a stage that started
    beside a short job takes the freed core when the job ends (issue 53: ``train-sft`` kept one thread for 52
    minutes beside an idle core) and gives it back when another job starts. Call it between units of work (a
    training step, a generation batch), never inside one. Returns the threads now set."""
    if not _choice.following:
        return torch.get_num_threads()
    now = time.monotonic() if now is None else now
    if now - _choice.checked < FOLLOW_EVERY_SECONDS:
        return torch.get_num_threads()
    _choice.checked = now
    threads = cpu_threads(_choice.parameters, idle_cores())
    if threads != torch.get_num_threads():
        torch.set_num_threads(threads)
    _choice.used.add(threads)
    return threads


def start_thread_record() -> None:
    """A stage starts: its record begins with the threads set now (``thread_record``), and nothing follows the
    machine until the stage chooses for its own model (``choose_cpu_threads``)."""
    _choice.used = {torch.get_num_threads()}
    _choice.following = False


def thread_record() -> int | str:
    """The torch threads the current stage ran with: one count, or ``"1-2"`` where it followed the machine."""
    used = sorted(_choice.used or {torch.get_num_threads()})
    return used[0] if len(used) == 1 else f"{used[0]}-{used[-1]}"


def left_padded(rows: list[list[int]], pad: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask, position_ids)`` of token rows padded on the left (at least one column),
    on ``device``; positions count each row's own tokens from 0."""
    length = max(1, max(len(row) for row in rows))
    ids = torch.full((len(rows), length), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.long)
    for index, row in enumerate(rows):
        if row:
            ids[index, length - len(row):] = torch.tensor(row)
            mask[index, length - len(row):] = 1
    ids, mask = ids.to(device), mask.to(device)
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


@lru_cache(maxsize=64)
def _cache_parameter(forward_owner: type) -> str:
    parameters = inspect.signature(forward_owner.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


@lru_cache(maxsize=64)
def _keeps_logits(forward_owner: type) -> bool:
    return "logits_to_keep" in inspect.signature(forward_owner.forward).parameters


def layers_config(model):
    """The config that describes ``model``'s layers: its own (a transformers model, PEFT-wrapped or not) or, for
    the PRM (``prm.model.ProcessRewardModel``, which has none), its backbone's; a multimodal config's text part."""
    config = getattr(model, "config", None)
    if config is None:
        config = getattr(getattr(model, "backbone", None), "config", None)
    text = getattr(config, "get_text_config", None)
    return text() if callable(text) else config


def attention_only(model) -> bool:
    """Every layer of ``model`` is full attention by its config's ``layer_types`` (``layers_config``: the PRM's
    backbone's): keys and values a row can continue after any padding; not Qwen3.5's linear attention, not a
    sliding window. True where the config does not list its layers (their caches say it later)."""
    types = getattr(layers_config(model), "layer_types", None)
    return not types or all(kind == "full_attention" for kind in types)


def rotary_positions(model) -> bool:
    """``model`` places tokens by rotary position embeddings (a ``*RotaryEmbedding`` module: Qwen3, Qwen3.5,
    SmolLM2), so attention sees only the distance between tokens and a row's positions may start anywhere. False for
    learned absolute positions (GPT-2's ``wpe``) and anything else: there a row whose positions start elsewhere is
    another input."""
    return any(type(module).__name__.endswith("RotaryEmbedding") for module in model.modules())


def last_logits_kwargs(model) -> dict:
    """Keyword arguments that make ``model.forward`` compute the vocabulary head at the last position only, for a
    pass whose other logits nobody reads (a prompt's prefill: ``generate`` does the same). On SmolLM2-135M the head
    is a fifth of a token's work, and a batch of 27 prompts of 290 tokens would write 1.5 GB of float logits. Empty
    for a model without ``logits_to_keep`` (the PRM)."""
    base = getattr(model, "get_base_model", lambda: model)()
    return {"logits_to_keep": 1} if _keeps_logits(type(base)) else {}


def length_groups(lengths: list[int], slack: float = 0.2) -> list[list[int]]:
    """Indices of ``lengths`` in groups of similar length, shortest first: a group closes when padding its rows
    to its longest would add more than ``slack`` of its real tokens. Prompts encoded from scratch go one call per
    group: clembench's referencegame (277-290 tokens) and matchit_ascii (151-163) in one left-padded batch would
    pad 27 % more tokens than they hold."""
    groups: list[list[int]] = []
    current: list[int] = []
    total = 0
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if current and (len(current) + 1) * lengths[index] > (1 + slack) * (total + lengths[index]):
            groups.append(current)
            current, total = [], 0
        current.append(index)
        total += lengths[index]
    return [*groups, current] if current else groups


def cache_kwargs(model, cache) -> dict:
    """Keyword arguments that hand ``cache`` to ``model.forward``."""
    base = getattr(model, "get_base_model", lambda: model)()
    return {_cache_parameter(type(base)): cache}


def output_cache(output):
    """The cache a forward pass returned."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


def select_rows(cache, index):
    """Keep row ``index[j]`` of ``cache`` as its row ``j``, in place (repeats, reorders and drops rows).

    ``DynamicCache.batch_repeat_interleave`` / ``batch_select_indices`` only touch attention keys and values;
    Qwen3.5's hybrid cache also holds ``LinearAttentionLayer``s (gated delta-net convolution and recurrent
    states) that lack them. ``reorder_cache`` is implemented by every layer kind, both states included.
    """
    cache.reorder_cache(index)
    return cache


def repeat_rows(cache, rows: int, n: int, device=None):
    """Each of the ``rows`` rows of ``cache`` ``n`` times in a row (row i becomes rows i*n ... i*n+n-1)."""
    return select_rows(cache, torch.arange(rows, device=device).repeat_interleave(n))

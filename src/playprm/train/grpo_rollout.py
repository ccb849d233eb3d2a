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
player's history (its next context does not extend the previous one and the reply) stops the run (``RolloutError``,
raised through the runner, never retried).

A generation call that raises is retried once by the runner (``runner.with_retries``) from the state before the
turn: ``turn_player`` writes nothing into an episode until its call returns, and the retry samples with the same
seed, so a recovered rollout's rows are those of an undisturbed one. Episodes that fail anyway (the retry failed
too, the game master raised, or under ``--advantage tree`` the game could not be forked) are failed episodes:
they get no reward (no reward is read for them), their rows train nothing, each step logs their count
(``failed_episodes`` in ``trainer_state.json``: episodes, or a tree's leaves, each once), and a rollout with more
than ``--max-failed-share`` of its episodes (leaves) failed (default 0: any) stops the run with one line naming the
first failed episode's game, player and cause.

A reply cut at ``max_tokens`` has no end-of-turn token: the template's closing becomes game text (``env_mask`` 0)
and the reply is trained as sampled (its reward is what the cut reply earned). TRL's
``mask_truncated_completions`` drops a row only where its last reply was cut.

The reward of a row is the episode's outcome for the game (``REWARDS``), read from the scores clemcore's scorer
wrote into the episode folder; an episode the game aborted (a reply that broke its rules) earns 0 (clemcore scores
an aborted episode's Main Score NaN and counts it as not played). A row whose player never got a turn (the game ended
before it) trains nothing and has no reward (TRL leaves it out of its group's baseline).

With a PRM (``--prm-path``, ``Shaping``) the episode's reward is shaped turn by turn by potentials
(``shaped_advantages``): the PRM's value of each policy reply, every player's, is the potential of the state it
leads to, and each of the row player's replies is trained with its own advantage instead of the row's one.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from playprm import chat

_SENTINEL = "\u2063PLAYPRM_REPLY\u2063"


class RolloutError(RuntimeError):
    """A rollout train-grpo cannot train on: a game or chat template the token rows cannot follow (a player's
    history rewritten), or more failed episodes than ``--max-failed-share`` allows. It stops the run: the runner
    raises it at once (``stops_run``) instead of failing the episodes in flight."""

    stops_run = True


def _main_score(record) -> float:
    score = record.main_score
    return 0.0 if score is None or record.outcome == "aborted" else score / 100.0


# --reward: the record of an episode that did not fail (results.read.EpisodeRecord) -> the reward in [0, 1]
REWARDS = {
    "main-score": _main_score,
    "success": lambda record: float(record.outcome == "success"),
}


SELF_PLAY = -1  # RowSpec.player_index of a --self-play row: every player of the episode is trained


@dataclass(frozen=True)
class RowSpec:
    """One dataset row: a game instance and the index of the player (in the game master's order) trained, or
    ``SELF_PLAY`` (every player, ``--self-play``)."""

    game: str
    experiment: dict
    instance: dict
    player_index: int

    @property
    def key(self) -> str:
        who = "self-play" if self.player_index == SELF_PLAY else f"player-{self.player_index + 1}"
        return f"{self.game}/{self.experiment['name']}/{self.instance.get('game_id')}/{who}"


def players_of(entry) -> int:
    """The players of a game entry (clemgame.json's ``players``: a number, or clembench's "one", "two", ...)."""
    value = str(entry.spec.players).strip().lower()
    words = {"one": 1, "two": 2, "three": 3, "four": 4}
    return int(value) if value.isdigit() else words.get(value, 1)


def row_specs(entries, instances: dict, *, self_play: bool = False) -> list[RowSpec]:
    """One row per (instance, player) of the selected games (``play.job.prepare_games``' output), every player
    of a game being the policy's; with ``self_play`` one row per instance (all its players trained)."""
    rows = []
    for entry in entries:
        players = [SELF_PLAY] if self_play else range(players_of(entry))
        for experiment, instance in instances[entry.name]:
            rows += [RowSpec(entry.name, experiment, instance, k) for k in players]
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
    max_failed_share: float = 0.0  # a rollout with a larger share of failed episodes stops the run


def turn_player(policy, chain: TokenChain, settings: RolloutSettings, seed: int):
    """``play(episodes) -> episodes`` for the runner: one generation call for the pending turns of all episodes in
    flight, each prompted with its player's token row (kept in ``episode.tags["rows"]``, so that a fork copies it;
    ``episode.tags["spec"]`` is the episode's ``RowSpec``). A turn of the trained player is appended to
    ``episode.tags["turns"]`` as ``(start, end, branch)``: where its sampled ids lie in the completion, and the
    episode's branch index at that turn (``tags["branch"]``, set by a fork; 0 otherwise)."""
    calls = [0]  # generation calls that returned: a retried call samples with the failed one's seed

    def play(episodes):
        pending = [e for e in episodes if not e.done]
        prompts, deltas = [], []
        for episode in pending:
            tags = episode.tags
            if "trained" not in tags:
                note_trained_player(episode)
            turn = episode.pending
            row = tags["rows"].get(turn.player)
            # nothing is written into the episode before the call returns: a retry starts from the same state
            if row is None:
                delta, prompt = None, chain.first(turn.context)
            else:
                delta = chain.delta(row.context, turn.context, row.last_reply,
                                    f"game {episode.task.game}, {turn.player} ({turn.game_role})")
                prompt = row.ids() + delta
            deltas.append(delta)
            prompts.append(prompt)
        outputs = policy.generate_ids(prompts, n=1, temperature=settings.temperature,
                                      max_tokens=settings.max_tokens, seed=seed * 100_003 + calls[0] + 1,
                                      plain_sampling=True)
        calls[0] += 1
        for episode, prompt, delta, (candidate,) in zip(pending, prompts, deltas, outputs):
            player = episode.pending.player
            episode.tags["log"].append((player, episode.pending.context, candidate.text))
            row = episode.tags["rows"].setdefault(player, PlayerRow(prompt_ids=prompt))
            if delta is not None:
                row.completion_ids += delta
                row.env_mask += [0] * len(delta)
            row.context = episode.pending.context
            if player == episode.tags["trained"]:
                episode.tags["turns"].append((len(row.completion_ids), len(row.completion_ids) + len(candidate.token_ids),
                                              episode.tags.pop("branch", 0)))
            row.completion_ids += candidate.token_ids
            row.env_mask += [1] * len(candidate.token_ids)
            row.last_reply = candidate.token_ids
            row.turns += 1
            row.cut_replies += not candidate.finished
            episode.play(candidate.text, generated_tokens=candidate.num_tokens,
                         prefill_tokens=candidate.prefill_tokens)
        return episodes

    return play


def note_trained_player(episode) -> None:
    """Name the player the episode's row trains (``tags["spec"].player_index`` in the game master's order; the
    first under ``--self-play``, whose rows read ``tags["players"]``) and start its bookkeeping."""
    names = [p.name for p in episode.game_master.get_players()]
    index = max(episode.tags["spec"].player_index, 0)
    episode.tags.update(trained=names[min(index, len(names) - 1)], players=names, turns=[], rows={},
                        log=[])  # log: (player, context, reply text) of every policy turn, for --prm-path


def _fresh_run_dir(results_dir: Path) -> Path:
    if results_dir.exists():
        shutil.rmtree(results_dir)
    run_dir = results_dir / "policy--policy"
    run_dir.mkdir(parents=True)
    return run_dir


def _task(spec: RowSpec, benchmarks: dict, run_dir: Path, index: int):
    from playprm.episode import EpisodeTask
    from playprm.results.layout import sample_folder

    folder = run_dir / spec.game / spec.experiment["name"] / sample_folder(spec.instance, index)
    return EpisodeTask(game=spec.game, benchmark=benchmarks[spec.game], experiment=spec.experiment,
                       instance=spec.instance, episode_dir=folder, sample=index)


def _outcomes(run_dir: Path, reward: str) -> dict:
    """``{episode folder: reward, or the failure's cause}`` of the episodes written under ``run_dir``. A failed
    (errored) episode's record is never passed to ``REWARDS``: it has no outcome to read."""
    from playprm.results.read import iter_episodes

    reward_of, outcomes = REWARDS[reward], {}
    for record in iter_episodes(run_dir):
        if record.error is not None:
            error = record.error
            message = str(error.get("message", "")).strip().splitlines()
            outcomes[record.path.resolve()] = Failure(f"{error.get('error', 'error')} at {error.get('stage', '?')}"
                                                      + (f": {message[0][:300]}" if message else ""))
        else:
            value = reward_of(record)
            outcomes[record.path.resolve()] = value if math.isfinite(value) else 0.0
    return outcomes


@dataclass(frozen=True)
class Failure:
    """A failed episode's cause, where ``_outcomes`` holds a reward for the others."""

    cause: str


def _outcome(outcomes: dict, folder: Path):
    return outcomes.get(folder.resolve(), Failure("no episode record was written"))


def check_failures(failed: list[tuple[RowSpec, Failure]], episodes: int, max_share: float) -> None:
    """Stop the run (``RolloutError``, one line) when more than ``max_share`` of a rollout's ``episodes`` failed;
    ``failed``: (the failed row, its cause)."""
    if failed and len(failed) > max_share * episodes:
        spec, failure = failed[0]
        who = "every player (self-play)" if spec.player_index == SELF_PLAY else f"player {spec.player_index + 1}"
        raise RolloutError(f"{len(failed)} of {episodes} episodes of the rollout failed, more than --max-failed-share "
                           f"{max_share:g} allows; the first: game {spec.game}, {who} ({spec.key}): {failure.cause}")


class RolloutRows:
    """``rollout_func``'s dict, built row by row."""

    def __init__(self, filler: int):
        self.filler = filler
        self.out = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "logprobs": None, "episode_reward": [],
                    "trained_share": [], "cut_replies": [], "token_advantages": [], "episode_failed": [],
                    "failures": [], "episode": []}

    def add(self, row: PlayerRow | None, reward: float | None, token_advantages: list[float] | None = None, *,
            failed: bool = False, failures: int | None = None, folder: Path | None = None) -> None:
        """A row (None, or a row without a turn: a placeholder that trains nothing and has no reward; ``failed``:
        the row of a failed episode, a placeholder too); ``failures``: the failed episodes (tree: leaves) this row
        counts in ``failed_episodes``, each on one row only, in ``--max-failed-share``'s unit (default: 1 for a
        failed row); ``folder``: its episode's folder, where it has one."""
        out = self.out
        out["episode_failed"].append(failed)
        out["failures"].append(int(failed) if failures is None else failures)
        out["episode"].append(str(folder) if folder is not None else "")
        if failed:
            row = None
        if row is None or not row.completion_ids:
            row, reward, token_advantages = PlayerRow([self.filler], [self.filler], [0]), None, [0.0]
        out["prompt_ids"].append(row.prompt_ids)
        out["completion_ids"].append(row.completion_ids)
        out["env_mask"].append(row.env_mask)
        out["episode_reward"].append(reward)
        out["trained_share"].append(sum(row.env_mask) / len(row.env_mask))
        out["cut_replies"].append(row.cut_replies)
        out["token_advantages"].append(token_advantages or [0.0] * len(row.completion_ids))


def play_groups(specs: list[RowSpec], policy, chain: TokenChain, settings: RolloutSettings, results_dir: Path,
                benchmarks: dict, *, seed: int, progress: bool = False, shaping: Shaping | None = None,
                group_size: int | None = None, players: int = 1, scale_rewards: str = "group") -> dict:
    """Play one episode per entry of ``specs`` (TRL's batch: each row repeated G times in a row) with ``policy``
    (an ``HFPolicy`` on the model being trained) and return ``rollout_func``'s dict: ``prompt_ids``,
    ``completion_ids``, ``env_mask``, ``logprobs`` (None: no importance-sampling correction without vLLM) and the
    extra keys the reward function and the logs read: ``episode_reward`` (None where the player never played),
    ``trained_share`` (env_mask 1 over the row's completion tokens), ``cut_replies`` and ``token_advantages``
    (zeros: episode-level GRPO leaves the advantage to TRL; with ``shaping``, each trained token's advantage
    from the PRM's potentials, ``group_size`` consecutive rows being one group). The episodes are written to
    ``results_dir`` (replaced), clemcore's layout.

    ``players`` > 1 is self-play (``--self-play``, rows of ``SELF_PLAY`` specs): each group of ``group_size`` rows
    is ``group_size / players`` episodes, and row ``e * players + p`` of a group is player p's side of episode e,
    so one episode trains every player. Each player's rows are a group of their own: ``token_advantages`` holds
    each sampled token's GRPO advantage against that player's group (``self_play_advantages``), which replaces
    TRL's one advantage a row (TRL's groups would mix the players)."""
    from playprm.play import runner

    if players > 1 and (shaping is not None or not group_size or group_size % players):
        raise RolloutError(f"self-play needs groups of a multiple of {players} rows and no PRM shaping")
    run_dir = _fresh_run_dir(results_dir)
    tasks = [_task(spec, benchmarks, run_dir, index) for index, spec in enumerate(specs[::players])]
    spec_of = {task.episode_dir: spec for task, spec in zip(tasks, specs[::players])}
    episodes = {}

    def tagged(play):
        def play_tagged(batch):
            for episode in batch:
                episode.tags.setdefault("spec", spec_of[episode.task.episode_dir])
                episodes[episode.task.episode_dir] = episode
            return play(batch)
        return play_tagged

    runner.play(tasks, policy_name="policy", run_dir=run_dir, gen_args={"temperature": settings.temperature,
                "max_tokens": settings.max_tokens}, play_episodes=tagged(turn_player(policy, chain, settings, seed)),
                batch_size=settings.batch_size, progress=progress)
    written = _outcomes(run_dir, settings.reward)
    outcomes = [_outcome(written, task.episode_dir) for task in tasks]
    failed = [(spec, outcome) for spec, outcome in zip(specs[::players], outcomes) if isinstance(outcome, Failure)]
    check_failures(failed, len(tasks), settings.max_failed_share)
    rows = RolloutRows(chain.tokenizer.eos_token_id or 0)
    if players > 1:
        for task, outcome in zip(tasks, outcomes):
            episode = None if isinstance(outcome, Failure) else episodes.get(task.episode_dir)
            names = episode.tags["players"] if episode is not None else []
            for p in range(players):
                row = episode.tags["rows"].get(names[p]) if episode is not None and p < len(names) else None
                rows.add(row, None if isinstance(outcome, Failure) else outcome, failed=isinstance(outcome, Failure),
                         failures=int(isinstance(outcome, Failure) and p == 0), folder=task.episode_dir)
        rows.out["token_advantages"] = self_play_advantages(rows.out, group_size, players, scale_rewards)
        return rows.out
    played = [None if isinstance(outcome, Failure) else episodes.get(task.episode_dir)
              for task, outcome in zip(tasks, outcomes)]
    values = [None if isinstance(outcome, Failure) else outcome for outcome in outcomes]
    tokens = shaping.token_advantages(played, values, group_size) if shaping is not None else [None] * len(tasks)
    for task, episode, value, token_advantages in zip(tasks, played, values, tokens):
        tags = episode.tags if episode is not None else {}
        rows.add(tags.get("rows", {}).get(tags.get("trained")), value, token_advantages, failed=value is None,
                 folder=task.episode_dir)
    return rows.out


def self_play_advantages(out: dict, group_size: int, players: int, scale_rewards: str) -> list[list[float]]:
    """Per row of a self-play rollout (``play_groups`` with ``players`` > 1), each completion token's advantage:
    GRPO's (the row's reward against the mean of its player's rows in the group, over their standard deviation,
    TRL's ``scale_rewards``: "group", "batch" or "none", with TRL's 1e-4) on the tokens the player sampled
    (``env_mask`` 1), 0 on the game's and the other players' text. Rows without a reward (a player who never got a
    turn, a failed episode) are left out of their group's statistics and train nothing."""
    import statistics

    rewards = out["episode_reward"]
    counted = [r for r in rewards if r is not None]
    batch_std = statistics.stdev(counted) if len(counted) > 1 else 0.0
    advantage = [0.0] * len(rewards)
    for first in range(0, len(rewards), group_size):
        for p in range(players):
            members = [i for i in range(first + p, min(first + group_size, len(rewards)), players)
                       if rewards[i] is not None]
            group = [rewards[i] for i in members]
            if not group:
                continue
            mean = sum(group) / len(group)
            std = statistics.stdev(group) if len(group) > 1 else 0.0
            scale = {"group": std + 1e-4, "batch": batch_std + 1e-4}.get(scale_rewards, 1.0)
            for i in members:
                advantage[i] = (rewards[i] - mean) / scale
    return [[advantage[i] * m for m in mask] for i, mask in enumerate(out["env_mask"])]


def play_trees(specs: list[RowSpec], policy, chain: TokenChain, settings: RolloutSettings, results_dir: Path,
               benchmarks: dict, *, seed: int, group_size: int, branch_factor: int) -> dict:
    """``--advantage tree``: each group of ``group_size`` rows (one instance) is one tree of episodes, forked
    (``Episode.fork``, as collect branches) at the trained player's turns into ``branch_factor`` copies while the
    group's budget of leaves lasts, so that sibling replies answer one identical state. Returns ``play_groups``'
    dict, ``token_advantages`` holding each trained token's advantage (``tree_advantages``); a leaf that ended with
    budget left stands for one row and the rest are placeholders (no reward, nothing trained)."""
    from dataclasses import replace

    from playprm.episode import Episode
    from playprm.play.runner import with_retries

    if len(specs) % group_size or any(specs[i] != specs[i - i % group_size] for i in range(len(specs))):
        raise RolloutError("the rollout's rows do not come in groups of --num-generations copies of one row")
    run_dir = _fresh_run_dir(results_dir)
    play = turn_player(policy, chain, settings, seed)
    gen_args = {"temperature": settings.temperature, "max_tokens": settings.max_tokens}
    active, leaves = [], []
    for group in range(len(specs) // group_size):
        spec = specs[group * group_size]
        root = Episode.start(_task(spec, benchmarks, run_dir, group * group_size), "policy", run_dir.name, gen_args)
        root.tags.update(spec=spec, group=group, budget=group_size)
        if not root.done:
            note_trained_player(root)
        (leaves if root.done else active).append(root)
    while active:
        expanded = []
        for episode in active:
            tags = episode.tags
            if episode.pending.player == tags["trained"] and tags["budget"] > 1:
                width = min(branch_factor, tags["budget"])
                copies = [episode] + [episode.fork() for _ in range(width - 1)]
                for copy in copies[1:]:  # a fork that failed is a twin without tags: a failed leaf of this group
                    copy.tags.setdefault("spec", tags["spec"])
                    copy.tags.setdefault("group", tags["group"])
                shares = [tags["budget"] // width + (i < tags["budget"] % width) for i in range(width)]
                for branch, (copy, share) in enumerate(zip(copies, shares)):
                    copy.tags.update(budget=share, branch=branch)
                expanded += copies
            else:
                expanded.append(episode)
        with_retries(play, expanded)  # as the runner plays a batch: once again from the same state, then failed
        leaves += [e for e in expanded if e.done]
        active = [e for e in expanded if not e.done]
    for number, leaf in enumerate(leaves):  # each leaf its own folder, as collect names its leaves
        leaf.task = replace(leaf.task, episode_dir=leaf.task.episode_dir.parent / f"{leaf.task.episode_dir.name}_l{number:03d}")
        leaf.write()
    written = _outcomes(run_dir, settings.reward)
    outcome = {id(leaf): _outcome(written, leaf.task.episode_dir) for leaf in leaves}
    failed = [(leaf.tags["spec"], outcome[id(leaf)]) for leaf in leaves if isinstance(outcome[id(leaf)], Failure)]
    check_failures(failed, len(leaves), settings.max_failed_share)
    rows = RolloutRows(chain.tokenizer.eos_token_id or 0)
    for group in range(len(specs) // group_size):
        members = [leaf for leaf in leaves if leaf.tags["group"] == group]
        played = [leaf for leaf in members if leaf.tags.get("turns") and not isinstance(outcome[id(leaf)], Failure)]
        values = [outcome[id(leaf)] for leaf in played]
        advantages = tree_advantages([[branch for _, _, branch in leaf.tags["turns"]] for leaf in played], values)
        for leaf, value, turn_advantages in zip(played, values, advantages):
            row = leaf.tags["rows"][leaf.tags["trained"]]
            tokens = [0.0] * len(row.completion_ids)
            for (start, end, _), advantage in zip(leaf.tags["turns"], turn_advantages):
                tokens[start:end] = [advantage] * (end - start)
            rows.add(row, value, tokens, folder=leaf.task.episode_dir)
        # a failed leaf stands for the rows of its budget (the leaves it would have grown into), counted once
        failed_leaves = [leaf for leaf in members if isinstance(outcome[id(leaf)], Failure)]
        broken = sum(leaf.tags.get("budget", 1) for leaf in failed_leaves)
        for k in range(group_size - len(played)):  # a failed leaf, one that ended with budget left, or no turn
            rows.add(None, None, failed=k < broken, failures=int(k < len(failed_leaves)))
    return rows.out


def tree_advantages(paths: list[list[int]], values: list[float]) -> list[list[float]]:
    """Per leaf, the advantage of each of its trained turns (GiGPO-style step groups from a rollout tree).

    ``paths[i]`` holds leaf i's branch index at each of its trained turns, so a turn is the node
    ``tuple(paths[i][:k + 1])`` and its siblings are the nodes with the same parent (replies to one identical
    state). A node's value is the mean reward of the leaves under it; its advantage is its value minus its
    siblings' mean, over their standard deviation (GRPO's group scaling; 0 where all are equal), or its parent's
    where it has no sibling (a turn after the tree stopped branching). A node shared by n leaves appears in n rows:
    each copy carries 1/n of its advantage, so the reply is trained once.
    """
    under: dict[tuple, list[float]] = {}
    for path, value in zip(paths, values):
        for k in range(len(path)):
            under.setdefault(tuple(path[:k + 1]), []).append(value)
    value_of = {node: sum(v) / len(v) for node, v in under.items()}
    advantage: dict[tuple, float] = {}
    for node in sorted(under, key=len):
        siblings = [other for other in under if len(other) == len(node) and other[:-1] == node[:-1]]
        if len(siblings) < 2:
            advantage[node] = advantage.get(node[:-1], 0.0)
            continue
        sibling_values = [value_of[other] for other in siblings]
        mean = sum(sibling_values) / len(sibling_values)
        std = (sum((v - mean) ** 2 for v in sibling_values) / (len(sibling_values) - 1)) ** 0.5
        advantage[node] = 0.0 if std < 1e-9 else (value_of[node] - mean) / (std + 1e-4)
    return [[advantage[tuple(path[:k + 1])] / len(under[tuple(path[:k + 1])]) for k in range(len(path))]
            for path in paths]


def shaped_advantages(values: list[float], reward: float, start: float, lam: float) -> list[float]:
    """The advantage of each policy reply of one episode under potential-based shaping (Ng, Harada and Russell,
    1999), ``values[t]`` being the PRM's value of reply t (the potential of the state it leads to).

    Reply t is rewarded ``F_t = Φ(after t) − Φ(before t)``, where the potential before the first reply is
    ``start`` (the group's mean outcome: every episode of a group starts from the same state, so this is the
    GRPO baseline), before a later reply it is the previous reply's value, and after the last reply the game has
    ended: its potential is 0 and the episode's ``reward`` is paid instead. A reply's advantage is its
    λ-return of these rewards, ``A_t = Σ_{j ≥ t} λ^(j − t) F_j``. With λ = 1 the sum telescopes to ``reward −
    Φ(before t)``: the outcome against the PRM's value of the state the reply answered, an unbiased advantage
    whatever the PRM (a potential changes no return's ranking, so the optimal policy is unchanged), and for the
    first reply exactly GRPO's. With λ < 1 later outcomes count less and the PRM's values more (denser, biased
    by the PRM's errors); λ = 0 trains each reply on the PRM's change of value alone, the last on the outcome.
    """
    before = [start, *values[:-1]]
    advantages, running = [0.0] * len(values), 0.0
    for t in reversed(range(len(values))):
        step = (reward if t == len(values) - 1 else values[t]) - before[t]
        running = step + lam * running
        advantages[t] = running
    return advantages


@dataclass
class Shaping:
    """``--prm-path``: a PRM's values of the policy's replies as the potentials of ``shaped_advantages``.

    ``scorer`` is a ``prm.scorer.PRMScorer`` (``score(contexts, [[reply], ...])``), reading each reply in the
    context its player saw, as best-of-N reads a candidate. Every policy turn of an episode is scored, the other
    player's too: in a game of alternating turns, the value after the other player's reply is the potential of
    the state the row's player answers."""

    scorer: object
    lam: float = 1.0
    scale_rewards: str = "group"  # GRPOConfig.scale_rewards: "group", "batch" or "none"

    def token_advantages(self, episodes: list, rewards: list[float], group_size: int) -> list[list[float] | None]:
        """Per row (an ``Episode`` whose ``tags`` hold the trained player's token row and the turn log, or None),
        the advantage of each completion token: each of the trained player's replies gets its
        ``shaped_advantages``, centred by the group's mean outcome and divided by the group's standard deviation
        of outcomes (TRL's scaling of GRPO's advantage; the batch's where a group's outcomes are all equal, and
        none with ``scale_rewards`` "none"); game text and other players' tokens get 0. None for a row whose
        player never played (a placeholder)."""
        import statistics

        trained = [e is not None and bool(e.tags.get("turns")) for e in episodes]
        logs = [e.tags["log"] if ok else [] for e, ok in zip(episodes, trained)]
        flat = [(context, reply) for log in logs for _, context, reply in log]
        scores = self.scorer.score([c for c, _ in flat], [[r] for _, r in flat]) if flat else []
        values, offset = [], 0
        for log in logs:
            values.append([group[0] for group in scores[offset:offset + len(log)]])
            offset += len(log)
        counted = [r for r, ok in zip(rewards, trained) if ok]
        batch_scale = statistics.stdev(counted) if len(counted) > 1 else 0.0
        out: list[list[float] | None] = [None] * len(episodes)
        for first in range(0, len(episodes), group_size):
            members = [i for i in range(first, min(first + group_size, len(episodes))) if trained[i]]
            group = [rewards[i] for i in members]
            if not group:
                continue
            scale = statistics.stdev(group) if len(group) > 1 else 0.0
            scale = 1.0 if self.scale_rewards == "none" else (
                scale if scale > 1e-9 and self.scale_rewards == "group" else batch_scale)
            scale = scale if scale > 1e-9 else 1.0  # every outcome of the batch equal: the PRM's values alone
            start = sum(group) / len(group)
            for i in members:
                tags = episodes[i].tags
                turn_advantages = shaped_advantages(values[i], rewards[i], start, self.lam)
                mine = [a for (player, _, _), a in zip(logs[i], turn_advantages) if player == tags["trained"]]
                row = tags["rows"][tags["trained"]]
                tokens = [0.0] * len(row.completion_ids)
                for (begin, end, _), advantage in zip(tags["turns"], mine):
                    tokens[begin:end] = [advantage / (scale + 1e-4)] * (end - begin)
                out[i] = tokens
        return out


def episode_reward(prompts, completions, episode_reward, trained_share=None, episode_failed=None, failures=None,
                   log_metric=None, **kwargs):
    """TRL reward function: the rollout's ``episode_reward`` of each row (never scored from text; None for a row
    that trains nothing); logs the mean share of trained tokens per row and the failed episodes (``failed_episodes``:
    the rows' ``failures``, each failed episode or tree leaf once, as ``--max-failed-share`` counts them; without
    them, the rows of failed episodes)."""
    if log_metric is not None and trained_share:
        log_metric("trained_token_share", sum(trained_share) / len(trained_share))
    counted = failures if failures is not None else episode_failed
    if log_metric is not None and counted is not None:
        log_metric("failed_episodes", float(sum(counted)))
    return list(episode_reward)

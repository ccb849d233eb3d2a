"""One episode of a clemcore game, stepped from outside so that many can be batched.

An ``Episode`` wraps clemcore's ``GameMasterEnv`` with clemcore's own recorders attached (the same ones its
``clem run`` uses), so the files written at the end are exactly clemcore's. Programmatic players answer inside
``advance()``; the policy's turns are exposed as ``pending`` for the runner to batch. ``fork()`` copies the
whole game state (as clemcore's branching runner does) for beam search and rollout branching.

Files are written into a hidden staging folder (``.<episode>.staging-<pid>``) and renamed into place in one
step, so an episode folder either exists complete or not at all — which is also the resume marker. A write
that fails (a full disk, say) fails that episode, not the run.
"""

from __future__ import annotations

import logging
import random
import shutil
import time
import traceback
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy
from clemcore.backends.model_registry import Model, ModelSpec
from clemcore.clemgame import GameBenchmarkCallback, GameBenchmarkCallbackList
from clemcore.clemgame.envs.pettingzoo.master import GameMasterEnv
from clemcore.clemgame.recorder import EventCallRecorder, GameInteractionsRecorder

from playprm import atomic
from playprm.models.base import printable
from playprm.models.replies import repeats
from playprm.redact import redact
from playprm.results.layout import (
    CANDIDATES_FILE,
    COMPLETED_FILE,
    COST_FILE,
    ERROR_FILE,
    INSTANCE_FILE,
    INTERACTIONS_FILE,
    SCORES_FILE,
    requests_file,
)
from playprm.results.staging import publish, staging_folder

logger = logging.getLogger(__name__)

class PolicyModel(Model):
    """Stands in for the policy inside clemcore's game master: it only carries a name.

    Generation happens in the runner (batched across episodes), never through this object, and copying a
    game for beam search must not copy model weights, hence ``__deepcopy__`` returns the same object.
    """

    def __init__(self, name: str, gen_args: dict | None = None):
        super().__init__(ModelSpec.from_dict({"model_name": name, "backend": "playprm"}))
        self.set_gen_args(**(gen_args or {}))

    def generate_response(self, messages):  # pragma: no cover - the runner generates
        raise RuntimeError("PolicyModel does not generate; playprm's runner does")

    def __deepcopy__(self, memo):
        return self


@dataclass
class EpisodeTask:
    """What to play and where its folder goes."""

    game: str
    benchmark: Any  # clemcore GameBenchmark of the game (kept open for the whole run)
    experiment: dict
    instance: dict
    episode_dir: Path  # final folder: <results>/<pair>/<game>/<experiment>/<episode>
    sample: int = 0  # collect's repeated samples of one instance: 0, 1, ...

    @property
    def key(self) -> str:
        return f"{self.game}/{self.experiment['name']}/{self.episode_dir.name}"


class _Recorders(GameBenchmarkCallback):
    """Attaches clemcore's interaction and request recorders at game start (as clem run's savers do)."""

    def __init__(self, run_dir: str, model_infos: dict):
        self.run_dir = run_dir
        self.model_infos = model_infos
        self.interactions: GameInteractionsRecorder | None = None
        self.requests: dict[str, EventCallRecorder] = {}

    def on_game_start(self, game_master, game_instance):
        spec = game_master.game_spec
        self.interactions = GameInteractionsRecorder(
            spec.game_name, game_master.experiment["name"], game_instance["game_id"], self.run_dir, self.model_infos
        )
        for player in game_master.get_players():
            self.interactions.log_player(player.name, player.game_role, player.model.name)
        game_master.register(self.interactions)
        for player in game_master.get_players():
            recorder = EventCallRecorder(
                spec.game_name, experiment_name=game_master.experiment["name"], game_id=game_instance["game_id"],
                player_name=player.name, game_role=player.game_role, model_name=player.model.name,
            )
            game_master.register(recorder)
            player.register(recorder)
            self.requests[player.name] = recorder


@dataclass
class Turn:
    """A policy turn waiting for a reply."""

    player: str
    game_role: str
    context: list[dict]  # the messages the player sees (its perspective plus the new context)
    game: str = ""  # the game's name (per-game gating)
    rejected: list[str] = field(default_factory=list)  # this player's replies the game refused in this episode


@dataclass
class Episode:
    task: EpisodeTask
    env: GameMasterEnv
    recorders: _Recorders
    candidates: list[dict] = field(default_factory=list)  # one entry per policy turn (candidates.jsonl)
    turn_scores: list[float] = field(default_factory=list)  # PRM scores of the played replies (beam aggregate)
    generated_tokens: int = 0
    prm_tokens: int = 0
    policy_calls: int = 0
    turn_costs: list[dict] = field(default_factory=list)  # per policy turn: tokens encoded, generated, scored
    started: float = field(default_factory=time.perf_counter)
    error: dict | None = None
    tags: dict = field(default_factory=dict)  # caller's bookkeeping, copied on fork (e.g. rollout tree ids)
    pending: Turn | None = None
    # per player, the replies the game refused: it asked the player again in the round of that reply
    rejected: dict[str, list[str]] = field(default_factory=dict)
    _context: dict | None = None
    _last_reply: tuple[str, int | None, str] | None = None  # (player, round, text): the last step, a policy reply
    # the process-wide random state (Python's, numpy's) this episode's game code left behind; None: not yet run
    _random: tuple | None = None

    @classmethod
    def start(cls, task: EpisodeTask, policy_name: str, run_dir: str, gen_args: dict) -> Episode:
        """Set up ``task``'s game and play its programmatic turns up to the first policy turn. Never raises: a
        game (or playprm's bookkeeping) that fails here fails this episode, stage ``setup``."""
        episode = cls(task=task, env=None, recorders=None)  # type: ignore[arg-type]
        try:
            model = PolicyModel(policy_name, gen_args)
            players = [model] * task.benchmark.game_spec.players
            episode.recorders = _Recorders(run_dir, Model.to_infos(players))
            episode.env = GameMasterEnv(task.benchmark, callbacks=GameBenchmarkCallbackList([episode.recorders]))
            with episode._own_random():
                episode.env.reset(options={"player_models": players, "experiment": task.experiment,
                                           "game_instance": task.instance})
                episode.advance()
        except Exception as error:  # a broken game fails this episode, not the run
            episode.fail(error, stage="setup")
        return episode

    @classmethod
    def failed(cls, task: EpisodeTask, error: BaseException, *, stage: str) -> Episode:
        """An episode that could not start (its game did not load): ``error`` in its error record."""
        episode = cls(task=task, env=None, recorders=None)  # type: ignore[arg-type]
        episode.fail(error, stage=stage)
        return episode

    @contextmanager
    def _own_random(self):
        """Run game code on this episode's own process-wide random state: games seed Python's ``random`` (or
        numpy's) at setup and draw from it later, and a batch interleaves its episodes' turns, so each episode's
        state is put in place before its code runs and kept after, and draws are those of ``clem run``, which
        plays one episode after the other. A new episode starts from the process's state, as there."""
        if self._random is not None:
            random.setstate(self._random[0])
            numpy.random.set_state(self._random[1])
        try:
            yield
        finally:
            self._random = (random.getstate(), numpy.random.get_state())

    @property
    def done(self) -> bool:
        return self.error is not None or self.pending is None

    @property
    def game_master(self):
        return None if self.env is None else self.env.game_master

    @property
    def round(self) -> int | None:
        """The game's round, where its master counts them (DialogueGameMaster and the legacy master do; the base
        ``GameMaster`` promises only ``current_player``, ``get_context_for``, ``step`` and ``state``)."""
        return getattr(self.game_master, "current_round", None)

    def advance(self) -> None:
        """Play programmatic turns until a policy turn is pending or the game is over."""
        self.pending = None
        while True:
            agent = self.env.agent_selection
            if agent is None or all(self.env.terminations.values()):
                return
            context, _, terminated, truncated, _ = self.env.last(observe=True)
            if terminated or truncated:
                self.env.step(None)
                continue
            player = self.env.player_by_agent_id[agent]
            if isinstance(player.model, PolicyModel):
                self._note_rejection(player.name)
                self._context = context
                perspective = player.get_perspective() + [context]
                messages = [{"role": m["role"], "content": m["content"]} for m in perspective]
                self.pending = Turn(player=player.name, game_role=player.game_role, context=messages,
                                    rejected=list(self.rejected.get(player.name, [])), game=self.task.game)
                return
            self._last_reply = None
            self.env.step(player(context))  # programmatic or other non-policy player

    def _note_rejection(self, player: str) -> None:
        """The game asks ``player`` again: its last reply, given in this same round and answered by nobody else,
        was refused (clemcore's game masters re-prompt within the round). Games of every kind, no game code."""
        last, self._last_reply = self._last_reply, None
        round_ = self.round
        if last is not None and round_ is not None and last[:2] == (player, round_):
            self.rejected.setdefault(player, []).append(last[2])

    def play(self, text: str, *, log: dict | None = None, generated_tokens: int = 0, prm_tokens: int = 0,
             prefill_tokens: int | None = None, cached_tokens: int | None = None) -> None:
        """Send the chosen reply of the pending turn to the game and move on. The token counts are the turn's
        cost: generated (all candidates), scored by the PRM, and the context tokens the policy encoded (``None``:
        the backend does not say), and those its engine found in its prefix cache (vLLM; ``None``: not known)."""
        if self.error is not None:  # a copy whose fork failed (``fork``) plays nothing
            return
        assert self.pending is not None, "no policy turn is pending"
        try:  # anything failing here, game code or this bookkeeping, fails this episode alone
            text = printable(text)
            player = self.env.player_by_agent_id[self.env.agent_selection]
            self.generated_tokens += generated_tokens
            self.prm_tokens += prm_tokens
            self.policy_calls += 1
            self.turn_costs.append({"prefill_tokens": prefill_tokens, "generated_tokens": generated_tokens,
                                    "prm_tokens": prm_tokens})
            if cached_tokens is not None:
                self.turn_costs[-1]["cached_tokens"] = cached_tokens
            if log is not None:
                for candidate in log.get("candidates", []):
                    candidate["text"] = printable(candidate["text"])
                log["rejected"] = repeats([c["text"] for c in log.get("candidates", [])], self.pending.rejected)
                self.candidates.append({"turn": len(self.candidates), "round": self.round,
                                        "player": self.pending.player, "game_role": self.pending.game_role, **log})
            self._last_reply = (self.pending.player, self.round, text)
            with self._own_random():
                prompt = player.perceive_context(self._context)
                response_object = {"clem_player": {"response": text, "model_name": player.model.name}}
                player.perceive_response(text, metadata={"prompt": prompt, "response_object": response_object})
                self.env.step(text)
                self.advance()
        except Exception as error:
            self.fail(error, stage="step")

    def fork(self) -> Episode:
        """An independent copy of the game and its records (clemcore's GameMasterEnv is deep-copyable). Never
        raises: where the game cannot be copied, this episode fails and the copy is a failed twin of it."""
        # the task and the game benchmark (loaded game code) are shared by all copies, not copied
        memo = {id(self.task): self.task, id(self.task.benchmark): self.task.benchmark}
        try:
            return deepcopy(self, memo)
        except Exception as error:  # game state that cannot be copied fails this episode, not the batch
            self.fail(error, stage="fork")
            return Episode(task=self.task, env=self.env, recorders=self.recorders, error=dict(self.error))

    def fail(self, error: BaseException, *, stage: str) -> None:
        self.pending = None
        self.error = {
            "timestamp": datetime.now().isoformat(),
            "stage": stage,
            "error": type(error).__name__,
            "message": redact(str(error))[:2000],  # a server may echo the API key in its error
            # the error's own traceback: an error caught earlier (a game that failed to load) is recorded later
            "traceback": redact("".join(traceback.format_exception(type(error), error, error.__traceback__,
                                                                   limit=20))),
        }

    @property
    def outcome(self) -> str | None:
        state = getattr(self.game_master, "state", None)
        value = getattr(getattr(state, "outcome", None), "value", None)
        return {"success": "success", "failure": "lose", "aborted": "aborted"}.get(value)

    def write(self, *, extra_files: dict[str, Any] | None = None) -> Path | None:
        """Write the episode folder atomically: stage everything, then rename into place.

        A write that fails fails the episode (stage ``write``) and its error record is written instead; where
        even that fails, nothing is left and ``None`` is returned (a rerun plays the episode again).
        """
        try:
            return self._write(extra_files)
        except Exception as error:  # e.g. disk full, or a folder that cannot be created
            shutil.rmtree(staging_folder(self.task.episode_dir), ignore_errors=True)
            self.fail(error, stage="write")
        try:
            return self._write(None)
        except Exception as error:
            shutil.rmtree(staging_folder(self.task.episode_dir), ignore_errors=True)
            logger.error("episode %s could not be written (%s); a rerun plays it again", self.task.key, error)
            return None

    def _write(self, extra_files: dict[str, Any] | None) -> Path:
        final = self.task.episode_dir
        staging = staging_folder(final)
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        atomic.write_json(staging / INSTANCE_FILE, self.task.instance)
        wall = time.perf_counter() - self.started
        cost = {"generated_tokens": self.generated_tokens, "prm_tokens": self.prm_tokens,
                "wall_seconds": round(wall, 4), "policy_turns": self.policy_calls}
        prefill = [turn["prefill_tokens"] for turn in self.turn_costs]
        if prefill and None not in prefill:
            cost["prefill_tokens"] = sum(prefill)
        cached = [turn.get("cached_tokens") for turn in self.turn_costs]
        if cached and None not in cached:
            cost["cached_tokens"] = sum(cached)
        if self.turn_costs:
            cost["turns"] = self.turn_costs
        if self.error is None and self.recorders.interactions is not None:
            atomic.write_json(staging / INTERACTIONS_FILE, self.recorders.interactions.interactions)
            for name, recorder in self.recorders.requests.items():
                if len(recorder) > 0:
                    atomic.write_json(staging / requests_file(name), recorder.requests)
            try:
                scorer = self.task.benchmark.create_game_scorer(self.task.experiment, self.task.instance)
                scorer.compute_scores(self.recorders.interactions.interactions)
                atomic.write_json(staging / SCORES_FILE, scorer.scores)
            except Exception as error:
                self.fail(error, stage="scoring")
        if self.error is None:
            atomic.write_json(staging / COMPLETED_FILE, {"timestamp": datetime.now().isoformat()})
        else:
            atomic.write_json(staging / ERROR_FILE, self.error)
            (staging / INTERACTIONS_FILE).unlink(missing_ok=True)
        atomic.write_json(staging / COST_FILE, cost)
        atomic.write_text(staging / CANDIDATES_FILE,
                          "".join(_json_line(row) for row in self.candidates))
        for name, content in (extra_files or {}).items():
            atomic.write_json(staging / name, content)
        return publish(staging, final)


def _json_line(row: dict) -> str:
    import json

    return json.dumps(row, ensure_ascii=False) + "\n"


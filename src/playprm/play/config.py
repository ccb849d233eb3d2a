"""``EvalConfig``, the one validated config of ``playprm eval`` and the one owner of its defaults: eval's options,
the strategies' ``SearchSettings`` (``search_settings()``) and the presets' flags (``field_defaults``) are derived
from its fields. ``validate()`` is the single place that turns impossible settings into the one-line error a user
sees, before any model loads or any file is written; what it resolves (the switch margin) it keeps as a frozen
value beside the setting as given."""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

from playprm.atomic import check_output_path
from playprm.errors import UsageError
from playprm.play.players import SCORERS
from playprm.search.base import AGGREGATES, SearchSettings
from playprm.search.modes import MODES as DECODING_MODES
from playprm.search.modes import DecodingMode
from playprm.search.selection import SELECTIONS

MODES = tuple(DECODING_MODES)
SEARCH_DERIVED = ("switch_margin", "seeds")  # SearchSettings fields that are not this config's fields as they are
SAMPLING_TEMPERATURE = 0.7  # the model card's temperature of the sampling modes (--temperature left out)


def field_defaults(cls) -> dict:
    """``{field: default}`` of a config dataclass's init fields that have one (a factory's value made fresh): what
    its command's options default to (``commands``) and what presets leave out or spell from (``pipeline``)."""
    values = {}
    for f in fields(cls):
        if f.init and f.default is not MISSING:
            values[f.name] = f.default
        elif f.init and f.default_factory is not MISSING:
            values[f.name] = f.default_factory()
    return values


@dataclass(frozen=True)
class SwitchMargin:
    """The margin anchored best-of-n plays with, as ``EvalConfig.validate()`` resolved it from ``--switch-margin``."""

    value: float  # >= 0: the score a candidate must beat the greedy reply's by to replace it
    rule: str  # "given" (a number, or 0 with a scorer other than the PRM), "auto" (the PRM's switch_margin.json) or
    # "auto: greedy, ..." (measured on too few validation contexts: the margin holds greedy, and the rule says why)


def parse_switch_margin(text: str | float | None) -> float | str | None:
    """``--switch-margin auto`` or a number >= 0 (the score a candidate must beat greedy's by), as given on the
    command line or in Python."""
    if text is None or str(text).strip().lower() == "auto":
        return None if text is None else "auto"
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--switch-margin {text!r} must be a number >= 0 or auto") from None
    if not value >= 0:  # NaN too
        raise UsageError(f"--switch-margin {text} must be >= 0 (0 = argmax over a set that holds greedy) or auto")
    return value


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``--shard i/n`` with 0 <= i < n (SLURM_ARRAY_TASK_ID style, zero-based)."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise UsageError(f"--shard {text!r} must look like i/n, e.g. 0/4")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or index >= count:
        raise UsageError(f"--shard {text}: need 0 <= i < n (zero-based shard index), e.g. 0/{max(count, 1)}")
    return index, count


@dataclass
class EvalConfig:
    """``playprm eval``; defaults are the model card's inference settings."""

    policy_model: str
    mode: str = "greedy"
    prm_path: Path | None = None
    games: list[str] = field(default_factory=list)
    game_all: bool = False
    games_dir: Path | None = None
    limit: int | None = None
    experiment: str | None = None  # clem run's -e: play only this experiment
    instances: str | None = None  # clem run's -i: the instances file in each game's in/ (None: the spec's)
    skip_broken_games: bool = False  # play the games that load; a broken game's episodes become errors
    results_dir: Path = Path("results")
    n_candidates: int = 4  # model card: best-of-4
    temperature: float | None = None  # None: 0 for greedy, 0.7 for sampling modes (model card)
    max_tokens: int = 2048  # model card
    beam_width: int = 2
    num_beam_iterations: int = 20  # model card
    aggregate: str = "last"
    guide_roles: list[str] | None = None  # None: every policy player is guided
    seed: int = 0
    batch_size: int = 32  # episodes in flight
    shard: tuple[int, int] | None = None
    retry_errors: bool = False
    scorer: str = "prm"  # best-of-n only: one of SCORERS
    selection: str = "argmax"  # best-of-n only: one of search.selection.SELECTIONS (argmax: the model card's)
    # anchored only: a number >= 0, "auto" (from --prm-path's switch_margin.json, for this N) or None (auto with
    # the PRM, 0 with another scorer), as given; validate() resolves it into margin
    switch_margin: float | str | None = None
    margin: SwitchMargin | None = field(default=None, init=False)  # after validate(): None unless anchored
    # guided modes: None guides every game; "auto" the games --gate-from's validation comparison says guidance
    # pays on (report.gating); else a comma-separated list. validate() leaves guided_games resolved
    guide_games: str | None = None
    gate_from: Path | None = None
    guided_games: dict[str, str] | None = field(default=None, init=False)  # game -> why (None: every game)
    gate_reasons: dict[str, str] | None = field(default=None, init=False)  # every gated game -> why guided or not

    def validate(self) -> EvalConfig:
        if self.mode not in MODES:
            raise UsageError(f"--mode {self.mode!r} is not one of {', '.join(MODES)}")
        mode = self.decoding_mode
        if self.temperature is None:
            self.temperature = SAMPLING_TEMPERATURE if mode.guided else 0.0
        if self.temperature < 0:
            raise UsageError(f"--temperature {self.temperature} is negative; use 0 for greedy or a value > 0")
        if self.scorer not in SCORERS:
            raise UsageError(f"--scorer {self.scorer!r} is not one of {', '.join(SCORERS)}")
        if self.scorer != "prm" and self.mode != "best-of-n":
            raise UsageError(f"--scorer {self.scorer} ranks best-of-n candidates; use it with --mode best-of-n")
        if mode.guided and self.prm_path is None and self.scorer == "prm":
            raise UsageError(f"--mode {self.mode} needs a PRM: add --prm-path DIR (from train-prm or make-tiny)")
        self._validate_selection(mode)
        self._validate_gating(mode)
        if mode.guided and self.temperature == 0:
            raise UsageError(f"--mode {self.mode} with --temperature 0 yields N identical candidates; use e.g. 0.7")
        if self.n_candidates < 1:
            raise UsageError(f"--n-candidates {self.n_candidates} must be at least 1")
        if mode.beam and self.beam_width < 1:
            raise UsageError(f"--beam-width {self.beam_width} must be at least 1")
        if mode.beam and self.beam_width > self.n_candidates:
            raise UsageError(f"--beam-width {self.beam_width} is larger than --n-candidates {self.n_candidates}; "
                             f"a beam cannot keep more trajectories than it expands")
        if self.num_beam_iterations < 1:
            raise UsageError(f"--num-beam-iterations {self.num_beam_iterations} must be at least 1")
        if self.aggregate not in AGGREGATES:
            raise UsageError(f"--aggregate {self.aggregate!r} is not one of {', '.join(AGGREGATES)}")
        if self.limit is not None and self.limit < 1:
            raise UsageError(f"--limit {self.limit} must be at least 1 (it plays the first N instances of each "
                             f"experiment); leave it out to play all")
        if self.max_tokens < 1:
            raise UsageError(f"--max-tokens {self.max_tokens} must be at least 1")
        if self.batch_size < 1:
            raise UsageError(f"--batch-size {self.batch_size} must be at least 1")
        if not self.games and not self.game_all:
            raise UsageError("say which games to play: --game NAME (repeatable) or --game-all")
        check_output_path(self.results_dir, "--results-dir")
        if self.prm_path is not None:
            from playprm.prm.model import read_prm_config

            read_prm_config(self.prm_path)
        return self

    def _validate_selection(self, mode: DecodingMode) -> None:
        """``--selection`` and ``--switch-margin``: known, on best-of-n, and the margin resolved (``margin``)."""
        given = parse_switch_margin(self.switch_margin)
        if self.selection not in SELECTIONS:
            raise UsageError(f"--selection {self.selection!r} is not one of {', '.join(SELECTIONS)}")
        if given is not None and self.selection != "anchored":
            where = "--selection anchored" if mode.guided else "--mode best-of-n --selection anchored"
            raise UsageError(f"--switch-margin is how much a candidate must beat the greedy reply by, which only "
                             f"{where} keeps; add it or drop --switch-margin")
        if self.selection != "argmax" and self.mode != "best-of-n":
            raise UsageError(f"--selection {self.selection} picks among best-of-n candidates; use it with "
                             f"--mode best-of-n")
        self.margin = None
        if self.selection != "anchored":
            return
        if self.n_candidates < 2:
            raise UsageError(f"--selection anchored with --n-candidates {self.n_candidates} has nothing to switch "
                             f"to: it needs the greedy reply and at least one sample (--n-candidates >= 2)")
        if given is None:
            given = "auto" if self.scorer == "prm" else 0.0
        if given != "auto":
            self.margin = SwitchMargin(given, "given")
            return
        if self.scorer != "prm":
            raise UsageError(f"--switch-margin auto is measured on the PRM's validation rollouts; with --scorer "
                             f"{self.scorer} give a number")
        if self.prm_path is None:
            return  # the missing --prm-path is reported next
        from playprm.prm.switch_margin import auto_margin

        self.margin = SwitchMargin(*auto_margin(self.prm_path, self.n_candidates))

    def _validate_gating(self, mode: DecodingMode) -> None:
        """``--guide-games`` and ``--gate-from``: on a guided mode, together for auto; ``guided_games`` resolved."""
        if self.gate_from is not None and self.guide_games != "auto":
            raise UsageError("--gate-from is read by --guide-games auto; add it or drop --gate-from")
        if self.guide_games is None:
            return
        if not mode.guided:
            raise UsageError(f"--guide-games chooses where a guided mode guides; --mode {self.mode} guides nothing")
        if self.guide_games == "auto":
            if self.gate_from is None:
                raise UsageError("--guide-games auto needs --gate-from PAIRED (the paired.json of `playprm report "
                                 "--compare GREEDY GUIDED --paired GUIDED GREEDY` on validation runs)")
            from playprm.report.gating import read_gate

            gate = read_gate(self.gate_from)
            self.guided_games = {game: row["reason"] for game, row in gate.items() if row["guided"]}
            self.gate_reasons = {game: row["reason"] for game, row in gate.items()}
            return
        games = [name.strip() for name in self.guide_games.split(",") if name.strip()]
        if not games:
            raise UsageError("--guide-games is empty; give auto or game names such as wordle,taboo")
        self.guided_games = {game: "named by --guide-games" for game in games}
        self.gate_reasons = dict(self.guided_games)

    def validate_backend(self, backend: str, policy_name: str) -> None:
        """UsageError when the mode needs what the policy's backend cannot do (checked before it loads)."""
        mode = self.decoding_mode
        if mode.backends is not None and backend not in mode.backends:
            raise UsageError(f"--mode {self.mode} needs {mode.needs}, which only the {', '.join(mode.backends)} "
                             f"backend offers; {policy_name} runs on the {backend} backend")

    def search_settings(self) -> SearchSettings:
        """The strategies' settings: this config's fields of the same names (after ``validate()``), the only owner
        of their defaults."""
        values = {f.name: getattr(self, f.name) for f in fields(SearchSettings) if f.name not in SEARCH_DERIVED}
        return SearchSettings(**values, switch_margin=self.margin.value if self.margin else 0.0)

    def recorded(self) -> dict:
        """What ``playprm_run.json`` records of this config besides its fingerprint (``decoding()``), after
        ``validate()``: the strategies' settings (N is the fingerprint's), the guided roles, the switch margin
        and how it was chosen, the shard and the per-game gate."""
        settings = {f.name: getattr(self, f.name) for f in fields(SearchSettings)
                    if f.name not in (*SEARCH_DERIVED, "n_candidates")}
        return {**settings, "guide_roles": self.guide_roles,
                "switch_margin": self.margin.value if self.margin else None,
                "switch_margin_rule": self.margin.rule if self.margin else None,
                "shard": list(self.shard) if self.shard else None,
                "gate": self.gate_reasons}  # per-game gating: which games were guided and why (None: every game)

    @property
    def decoding_mode(self) -> DecodingMode:
        return DECODING_MODES[self.mode]

    @property
    def env_lookahead(self) -> bool:
        return self.decoding_mode.env_lookahead

    def decoding(self) -> dict:
        """The decoding settings that change this run's numbers (its fingerprint), after ``validate()``;
        those the mode does not read are left out (``--batch-size`` and ``--shard`` never change a number)."""
        mode = self.decoding_mode
        fields = {"mode": self.mode, "env_lookahead": self.env_lookahead, "temperature": float(self.temperature),
                  "max_tokens": self.max_tokens, "n_candidates": self.n_candidates if mode.guided else 1}
        if self.temperature > 0:
            fields["seed"] = self.seed
        if mode.guided:
            fields["guide_roles"] = sorted(r.lower() for r in self.guide_roles) if self.guide_roles else None
        if mode.guided and self.guided_games is not None:  # left out when every game is guided, as before
            fields["guided_games"] = sorted(self.guided_games)
        if self.scorer != "prm":
            fields["scorer"] = self.scorer
        if self.selection != "argmax":  # left out for the card's selection: earlier runs keep their fingerprint
            fields["selection"] = self.selection
        if self.selection == "anchored":
            fields["switch_margin"] = self.margin.value
        if mode.beam:
            fields.update(beam_width=self.beam_width, num_beam_iterations=self.num_beam_iterations)
        if mode.reads_aggregate:
            fields["aggregate"] = self.aggregate
        return fields

    def mode_tag(self) -> str:
        """Folder-name suffix that keeps every mode's results apart (clemcore's eval shows one row each)."""
        mode = self.decoding_mode
        tag = f"t{float(self.temperature)}"
        if mode.tag:
            tag += "-" + mode.tag.format(n_candidates=self.n_candidates, beam_width=self.beam_width,
                                         aggregate=self.aggregate)
        if self.scorer != "prm":  # validate() allows other scorers with best-of-n only
            tag += f"-{self.scorer}"
        if self.selection == "anchored":  # validate() allows other selections with best-of-n only
            tag += f"-anchored{self.margin.value:.4g}"
        elif self.selection != "argmax":
            tag += f"-{self.selection}"
        if self.guide_roles and mode.guided:
            tag += "-guide_" + "_".join(sorted(r.lower() for r in self.guide_roles))
        if self.guide_games is not None and mode.guided:
            tag += "-gated" if self.guide_games == "auto" else "-games_" + "_".join(sorted(self.guided_games or ()))
        return tag


def default_search_settings(**overrides) -> SearchSettings:
    """The strategies' settings of ``EvalConfig``'s defaults in a sampling mode (temperature 0.7, switch margin 0),
    ``overrides`` applied: for callers that play without a config (tests, benchmarks)."""
    values = {name: value for name, value in field_defaults(EvalConfig).items()
              if name in {f.name for f in fields(SearchSettings)}}
    return SearchSettings(**{**values, "temperature": SAMPLING_TEMPERATURE, "switch_margin": 0.0, **overrides})

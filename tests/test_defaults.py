"""Each setting has one owner: the config dataclasses' defaults are the command line's, the search strategies'
and the presets'; nothing restates them."""

from __future__ import annotations

from dataclasses import fields

import pytest

from playprm.cli import build_parser
from playprm.commands.collect import settings_from_args
from playprm.commands.eval import config_from_args
from playprm.play.collect import CollectSettings
from playprm.play.config import SAMPLING_TEMPERATURE, EvalConfig, default_search_settings, field_defaults
from playprm.search.base import SearchSettings


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_every_eval_option_defaults_to_its_eval_config_field():
    args = parse("eval", "--policy-model", "p")
    options = {action.dest for action in build_parser()._subparsers._group_actions[0].choices["eval"]._actions}
    assert {f.name for f in fields(EvalConfig) if f.init} <= options  # every field has an option of its name
    assert config_from_args(args) == EvalConfig(policy_model="p")
    assert field_defaults(EvalConfig)["n_candidates"] == 4  # the model card's best-of-4


def test_every_collect_option_defaults_to_its_collect_settings_field():
    assert settings_from_args(parse("collect", "--policy-model", "p")) == CollectSettings()
    given = settings_from_args(parse("collect", "--policy-model", "p", "--branch-factor", "3", "--seed", "5"))
    assert (given.branch_factor, given.seed, given.temperature) == (3, 5, CollectSettings().temperature)


@pytest.mark.parametrize("mode, temperature", [("greedy", 0.0), ("best-of-n", SAMPLING_TEMPERATURE)])
def test_the_strategies_settings_are_the_validated_configs_own_values(mode, temperature):
    cfg = EvalConfig(policy_model="p", mode=mode, games=["wordle"],
                     scorer="logprob" if mode == "best-of-n" else "prm").validate()
    settings, defaults = cfg.search_settings(), field_defaults(EvalConfig)
    for f in fields(SearchSettings):
        if f.name in defaults and f.name not in ("temperature", "switch_margin"):  # resolved by validate()
            assert getattr(settings, f.name) == defaults[f.name], f.name
    assert (settings.temperature, settings.switch_margin) == (temperature, 0.0)


def test_settings_made_without_a_config_are_a_validated_sampling_configs():
    cfg = EvalConfig(policy_model="p", mode="best-of-n", scorer="logprob", games=["wordle"]).validate()
    assert default_search_settings() == cfg.search_settings()
    assert default_search_settings(n_candidates=8).n_candidates == 8


def test_the_presets_and_the_model_card_spell_eval_defaults_from_the_config():
    from playprm.pipeline.small import SmallPreset
    from playprm.pipeline.tiny import tiny_steps
    from playprm.train.model_card import card_flags

    card = field_defaults(EvalConfig)
    assert card_flags() == (f"--n-candidates {card['n_candidates']} --temperature {SAMPLING_TEMPERATURE} "
                            f"--max-tokens {card['max_tokens']}")
    beam = next(row for row in SmallPreset().rows() if row.name == "sft-beam")
    assert beam.n == card["n_candidates"] and beam.flags[beam.flags.index("--n-candidates") + 1] == str(beam.n)
    tiny = dict(tiny_steps("w"))["eval beam-search"]
    assert tiny[tiny.index("--beam-width") + 1] == str(card["beam_width"])

"""train-grpo: GRPO of the policy on its own episodes (TRL GRPOTrainer with playprm's rollout)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from grpo_games import write_firstletter, write_relay

from playprm.cli import main

QUICK = ["--disable-tqdm", "true", "--logging-steps", "1", "--save-steps", "100"]
# what makes a random tiny model learn firstletter in a few steps: one token a reply (it alone decides the
# outcome), groups of 8, and a learning rate that lets winning tokens gain mass from one step to the next
LEARN = ["--full-weights", "true", "--max-tokens", "1", "--learning-rate", "1e-1", "--lr-scheduler-type", "constant",
         "--warmup-steps", "0", "--num-generations", "8", "--effective-batch-size", "32",
         "--per-device-train-batch-size", "16"]


def train_grpo_cli(model, games: Path, out: Path, *extra: str, game: str = "firstletter") -> int:
    return main(["train-grpo", "--model", str(model), "--games-dir", str(games), "--game", game, "--output-dir",
                 str(out), *QUICK, *extra])


def rewards(out: Path) -> list[float]:
    state = json.loads((out / "trainer_state.json").read_text())
    return [entry["reward"] for entry in state["log_history"] if "reward" in entry]


def test_mean_reward_rises_on_a_game_a_tiny_model_can_learn(tiny_models, tmp_path, one_cpu_thread):
    from safetensors.torch import load_file

    games = write_firstletter(tmp_path / "games")
    out = tmp_path / "run"
    assert train_grpo_cli(tiny_models["policy"], games, out, *LEARN, "--max-steps", "6") == 0
    seen = rewards(out)
    assert len(seen) == 6
    first, last = sum(seen[:2]) / 2, sum(seen[-2:]) / 2
    assert last >= 0.8 and last > first + 0.15, seen
    before, after = load_file(tiny_models["policy"] / "model.safetensors"), load_file(out / "model.safetensors")
    common = set(before) & set(after)
    assert common and any(not torch.equal(before[k], after[k]) for k in common)  # the update reached the weights
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["episodes_played"] == 192 and metrics["games"] == ["firstletter"]
    card = (out / "README.md").read_text()
    assert "GRPOTrainer" in card and "train-grpo" in card


class RecordingPolicy:
    """The policy, with every generation call's prompt and sampled ids kept."""

    def __init__(self, policy):
        self.policy, self.calls = policy, []

    def generate_ids(self, prompts, **kwargs):
        outputs = self.policy.generate_ids(prompts, **kwargs)
        self.calls += [(prompt, group[0].token_ids) for prompt, group in zip(prompts, outputs)]
        return outputs


def test_rows_train_exactly_the_players_sampled_tokens(card_models, tmp_path, one_cpu_thread):
    """Each row is the sequence its player was prompted with turn by turn; env_mask is 1 exactly on the ids the
    player sampled and 0 on everything the game and the other player added."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks, prepare_games
    from playprm.train.grpo_rollout import RolloutSettings, TokenChain, play_groups, row_specs

    model_dir = card_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy = RecordingPolicy(HFPolicy(PolicySpec("p", "hf", str(model_dir)),
                                      model=AutoModelForCausalLM.from_pretrained(model_dir), tokenizer=tokenizer))
    entries, instances = prepare_games(["relay"], False, write_relay(tmp_path / "games", instances=1), None)
    specs = [spec for spec in row_specs(entries, instances) for _ in range(2)]
    benchmarks, _ = load_benchmarks(entries)
    out = play_groups(specs, policy, TokenChain(tokenizer, {}), RolloutSettings(1.0, 5, "main-score"),
                      tmp_path / "rollouts", benchmarks, seed=0)
    assert len(out["prompt_ids"]) == 4 and all(0 <= reward <= 1 for reward in out["episode_reward"])
    for prompt, completion, mask in zip(out["prompt_ids"], out["completion_ids"], out["env_mask"]):
        row = prompt + completion
        turns = [(len(p), sampled) for p, sampled in policy.calls if row[:len(p) + len(sampled)] == p + sampled]
        assert len(turns) == 3  # three rounds, each prompted with the row so far
        expected = [0] * len(completion)
        for start, sampled in turns:
            expected[start - len(prompt):start - len(prompt) + len(sampled)] = [1] * len(sampled)
        assert mask == expected
        game_text = tokenizer.decode([token for token, keep in zip(completion, mask) if not keep])
        assert game_text.count("player said:") == 2 and "<|im_start|>assistant" in game_text


def test_a_history_the_game_rewrites_fails_loudly(card_models):
    from transformers import AutoTokenizer

    from playprm.train.grpo_rollout import RolloutError, TokenChain

    chain = TokenChain(AutoTokenizer.from_pretrained(card_models["policy"]), {})
    first = [{"role": "user", "content": "hello"}]
    with pytest.raises(RolloutError, match="does not extend its previous context"):
        chain.delta(first, [{"role": "user", "content": "a new game"}], [5], "game g, Player 1")
    delta = chain.delta(first, [*first, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "go"}],
                        [], "game g, Player 1")
    assert chain.tokenizer.decode(delta).startswith("<|im_end|>")  # a reply cut without its end-of-turn token


def test_interrupted_grpo_resumes_to_the_weights_of_an_uninterrupted_run(card_models, tmp_path, one_cpu_thread):
    from safetensors.torch import load_file
    from test_train_sft import StopAtStep

    from playprm.train.base_model import resolve_start_policy
    from playprm.train.grpo import train_grpo
    from playprm.train.grpo_config import GRPOTrainingConfig
    from playprm.train.recipe import build_config

    games = write_firstletter(tmp_path / "games")

    def run(out: Path, **kwargs):
        settings = {"game": ["firstletter"], "games_dir": str(games), "max_tokens": 2, "max_steps": 3,
                    "save_steps": 2, "learning_rate": 1e-2, "effective_batch_size": 8,
                    "per_device_train_batch_size": 8, "lora_r": 4, "lora_alpha": 8, "disable_tqdm": True,
                    "output_dir": str(out)}
        return train_grpo(build_config(GRPOTrainingConfig, settings), resolve_start_policy(str(card_models["policy"])),
                          announce=lambda text: None, **kwargs)

    straight = run(tmp_path / "straight")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", callbacks=[StopAtStep(3).callback])
    assert (tmp_path / "cut" / "checkpoint-2").is_dir() and not (tmp_path / "cut" / "metrics.json").exists()
    resumed = run(tmp_path / "cut", resume=True)
    assert resumed["global_step"] == straight["global_step"] == 3
    assert rewards(tmp_path / "cut") == rewards(tmp_path / "straight")
    expected, actual = (load_file(tmp_path / name / "adapter_model.safetensors") for name in ("straight", "cut"))
    for name in expected:
        torch.testing.assert_close(actual[name], expected[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("extra, expected", [
    (["--game", "nosuchgame"], "nosuchgame"),
    (["--num-generations", "1"], "--num-generations 1: GRPO needs at least 2"),
    (["--reward", "clemscore"], "--reward clemscore is not one of main-score, success"),
    (["--effective-batch-size", "64", "--per-device-train-batch-size", "8"], "more than the 8 (instance, player) rows"),
    (["--advantage", "turn"], "--advantage turn is not one of episode"),
    (["--prm-path", "no-such-prm"], "--prm-path no-such-prm is not a directory"),
    (["--prm-path", "no-such-prm", "--advantage", "tree"], "--prm-path shapes the episode advantage"),
    (["--prm-lambda", "2"], "--prm-lambda must be in [0, 1], not 2"),
])
def test_bad_inputs_are_one_line_errors_before_any_model_loads(extra, expected, card_models, tmp_path, capsys,
                                                               no_model_loading):
    games = write_firstletter(tmp_path / "games")
    argv = ["train-grpo", "--model", str(card_models["policy"]), "--games-dir", str(games), "--output-dir",
            str(tmp_path / "out"), *QUICK, *extra]
    if "--game" not in extra:
        argv += ["--game", "firstletter"]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm train-grpo: error: ") and expected in error and "\n" not in error
    assert not (tmp_path / "out").exists()


def test_clem_run_plays_the_entry_train_grpo_writes_as_written(card_models, tmp_path):
    from test_clemcore_parity import clem, episodes, workspace

    out = tmp_path / "Qwen3.5-27B-grpo"
    assert train_grpo_cli(card_models["policy"], write_firstletter(tmp_path / "games"), out, "--max-steps", "1",
                          "--max-tokens", "2", "--effective-batch-size", "8", "--lora-r", "4", "--lora-alpha", "8",
                          "--model-name", "grpo-adapter") == 0
    [entry] = json.loads((out / "model_registry.json").read_text())
    assert entry["model_config"]["peft_model"] == str(out.resolve()) and (out / "adapter_model.safetensors").is_file()
    root = workspace(tmp_path / "clem", card_models["policy"])
    shutil.copy(out / "model_registry.json", root / "model_registry.json")  # the entry exactly as written
    clem("run", "-g", "referencegame", "-m", "grpo-adapter", "-r", "res", "-t", "0.0", "-l", "6", "-b", "4", cwd=root)
    played = episodes(root / "res")
    assert len(played) == 4 and all((episode / "interactions.json").is_file() for episode in played.values())
    assert not list((root / "res").rglob("error.json"))


@pytest.mark.parametrize("recipe", sorted((Path(__file__).resolve().parents[1] / "recipes").glob("*/grpo*.yaml")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_grpo_recipes_name_only_known_settings(recipe):
    from playprm.train.grpo_config import GRPOTrainingConfig
    from playprm.train.recipe import load_recipe

    settings = load_recipe(recipe, GRPOTrainingConfig, fixed=("model", "data"))
    assert settings["model"] and settings["num_generations"] >= 2


def test_tree_advantage_is_each_replys_subtree_against_its_siblings():
    from playprm.train.grpo_rollout import tree_advantages

    # two first replies, each forked into two second replies; only leaf (0, 0) won
    paths, values = [[0, 0], [0, 1], [1, 0], [1, 1]], [1.0, 0.0, 0.0, 0.0]
    advantages = tree_advantages(paths, values)
    first = (0.5 - 0.25) / (0.5 ** 0.5 / 2 + 1e-4)  # subtree means 0.5 and 0 around their mean 0.25
    assert advantages[0][0] == pytest.approx(first / 2) and advantages[2][0] == pytest.approx(-first / 2)
    assert advantages[0][1] == pytest.approx(0.5 / (0.5 ** 0.5 + 1e-4)) == -advantages[1][1]
    assert advantages[2][1] == advantages[3][1] == 0.0  # siblings that earned the same: no signal
    # a turn after the tree stopped branching carries its parent's advantage
    assert tree_advantages([[0, 0], [1, 0]], [1.0, 0.0])[0][1] == tree_advantages([[0, 0], [1, 0]], [1.0, 0.0])[0][0]


def test_tree_rollout_forks_at_the_trained_players_turns(card_models, tmp_path, one_cpu_thread):
    """--advantage tree: a group of 4 is one tree forked at the trained player's first two turns; sibling rows
    share their prompt and the tokens before the fork, and only sampled tokens carry an advantage."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks, prepare_games
    from playprm.train.grpo_rollout import RolloutSettings, TokenChain, play_trees, row_specs

    model_dir = card_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy = HFPolicy(PolicySpec("p", "hf", str(model_dir)), model=AutoModelForCausalLM.from_pretrained(model_dir),
                      tokenizer=tokenizer)
    entries, instances = prepare_games(["relay"], False, write_relay(tmp_path / "games", instances=1), None)
    first_player = row_specs(entries, instances)[0]
    benchmarks, _ = load_benchmarks(entries)
    out = play_trees([first_player] * 4, policy, TokenChain(tokenizer, {}), RolloutSettings(1.0, 4, "main-score"),
                     tmp_path / "rollouts", benchmarks, seed=0, group_size=4, branch_factor=2)
    assert len(out["prompt_ids"]) == 4 and len({tuple(p) for p in out["prompt_ids"]}) == 1
    assert len(list((tmp_path / "rollouts").rglob("interactions.json"))) == 4  # the four leaves, written
    rows = [c for c in out["completion_ids"]]
    first_turn = [row[:next(i for i, m in enumerate(mask) if m == 0)] for row, mask in zip(rows, out["env_mask"])]
    assert first_turn[0] == first_turn[1] != first_turn[2] == first_turn[3]  # forked at the first turn into two
    for mask, advantages in zip(out["env_mask"], out["token_advantages"]):
        assert all(a == 0.0 for a, m in zip(advantages, mask) if not m)


def test_tree_grpo_trains_from_per_token_advantages(card_models, tmp_path, one_cpu_thread):
    from safetensors.torch import load_file

    out = tmp_path / "tree"
    assert train_grpo_cli(card_models["policy"], write_relay(tmp_path / "games", instances=2), out, "--advantage",
                          "tree", "--branch-factor", "2", "--max-steps", "2", "--max-tokens", "3",
                          "--effective-batch-size", "8", "--lora-r", "4", "--lora-alpha", "8", "--learning-rate",
                          "1e-2", game="relay") == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["advantage"] == "tree" and metrics["global_step"] == 2 and len(rewards(out)) == 2
    lora_b = [v for k, v in load_file(out / "adapter_model.safetensors").items() if "lora_B" in k]
    assert lora_b and any(v.abs().sum() > 0 for v in lora_b)  # LoRA B starts at 0: the advantages moved it


def test_shaped_advantages_telescope_to_the_outcome_against_the_prms_value_before_each_reply():
    from playprm.train.grpo_rollout import shaped_advantages

    values, reward, start = [0.2, 0.7, 0.4], 1.0, 0.5
    # λ = 1: Σ_{j ≥ t} F_j = reward − Φ(before t); the first reply's is GRPO's (the outcome against the mean)
    assert shaped_advantages(values, reward, start, 1.0) == pytest.approx([1.0 - 0.5, 1.0 - 0.2, 1.0 - 0.7])
    # λ = 0: each reply's change of the PRM's value; the last is paid the outcome (the end's potential is 0)
    assert shaped_advantages(values, reward, start, 0.0) == pytest.approx([0.2 - 0.5, 0.7 - 0.2, 1.0 - 0.7])
    assert shaped_advantages(values, reward, start, 0.5)[1] == pytest.approx((0.7 - 0.2) + 0.5 * (1.0 - 0.7))
    # a potential shifts no episode's return: summed over the replies (λ = 1 at the first), only the outcome moves
    assert shaped_advantages([0.9, 0.1], 0.0, 0.3, 1.0)[0] == pytest.approx(shaped_advantages([0.1, 0.9], 0.0, 0.3, 1.0)[0])


class TextScorer:
    """A PRM stand-in whose value of a reply is a function of its text; keeps what it was asked."""

    def __init__(self):
        self.seen = []

    def value(self, text: str) -> float:
        return (sum(map(ord, text)) % 97) / 97

    def score(self, contexts, candidates):
        self.seen += [(context, group[0]) for context, group in zip(contexts, candidates)]
        return [[self.value(group[0])] for group in candidates]


def test_prm_shaping_gives_each_trained_reply_its_own_advantage(card_models, tmp_path, one_cpu_thread):
    """--prm-path: every policy turn is scored in the context its player saw; each of the row player's replies
    carries (outcome − the value before it) over the group's spread, the first reply exactly GRPO's advantage,
    and nothing else in the row carries any."""
    import statistics

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks, prepare_games
    from playprm.train.grpo_rollout import RolloutSettings, Shaping, TokenChain, play_groups, row_specs

    model_dir = card_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy = RecordingPolicy(HFPolicy(PolicySpec("p", "hf", str(model_dir)),
                                      model=AutoModelForCausalLM.from_pretrained(model_dir), tokenizer=tokenizer))
    entries, instances = prepare_games(["relay"], False, write_relay(tmp_path / "games", instances=1), None)
    first, second = row_specs(entries, instances)
    scorer = TextScorer()
    out = play_groups([first] * 4 + [second] * 4, policy, TokenChain(tokenizer, {}),
                      RolloutSettings(1.0, 3, "main-score"), tmp_path / "rollouts", load_benchmarks(entries)[0],
                      seed=0, shaping=Shaping(scorer, lam=1.0), group_size=4)
    assert len(scorer.seen) == 8 * 6  # six policy turns an episode, both players', each scored once, in row order
    assert all(context[-1]["role"] == "user" for context, _ in scorer.seen)
    for group in (range(0, 4), range(4, 8)):
        rewards = [out["episode_reward"][i] for i in group]
        mean, spread = sum(rewards) / 4, statistics.stdev(rewards)
        scale = (spread if spread > 1e-9 else statistics.stdev(out["episode_reward"])) + 1e-4
        for i, reward in zip(group, rewards):
            values = [scorer.value(text) for _, text in scorer.seen[6 * i:6 * i + 6]]
            before = [mean, *values[:-1]]
            mine = range(0, 6, 2) if i < 4 else range(1, 6, 2)  # the row player's turns among the six
            expected = [(reward - before[t]) / scale for t in mine]  # λ = 1: the outcome against the value before
            mask, advantages = out["env_mask"][i], out["token_advantages"][i]
            assert all(a == 0.0 for a, m in zip(advantages, mask) if not m)
            starts = [k for k, m in enumerate(mask) if m and (k == 0 or not mask[k - 1])]
            assert [advantages[k] for k in starts] == pytest.approx(expected, abs=1e-5)
            if i < 4:  # the first reply answers the game's opening: GRPO's own advantage
                assert advantages[0] == pytest.approx((reward - mean) / scale, abs=1e-5)


def test_a_prm_of_another_tokenizer_is_a_one_line_error_before_any_model_loads(card_models, tmp_path, capsys,
                                                                              no_model_loading):
    from transformers import AutoTokenizer

    prm = tmp_path / "prm"
    shutil.copytree(card_models["prm"], prm)
    other = AutoTokenizer.from_pretrained(prm)
    other.add_tokens(["<another-vocabulary>"])
    other.save_pretrained(prm)
    code = train_grpo_cli(card_models["policy"], write_firstletter(tmp_path / "games"), tmp_path / "out",
                          "--prm-path", str(prm))
    error = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in error and "is not the policy's" in error and str(prm) in error
    assert not (tmp_path / "out").exists()


def test_grpo_with_a_prm_trains_from_the_shaped_advantages(tiny_models, tmp_path, one_cpu_thread):
    from safetensors.torch import load_file

    out = tmp_path / "shaped"
    assert train_grpo_cli(tiny_models["policy"], write_relay(tmp_path / "games", instances=2), out, "--prm-path",
                          str(tiny_models["prm"]), "--prm-lambda", "0.5", "--max-steps", "2", "--max-tokens", "3",
                          "--effective-batch-size", "8", "--lora-r", "4", "--lora-alpha", "8", "--learning-rate",
                          "1e-2", game="relay") == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["prm_path"] == str(tiny_models["prm"].resolve()) and metrics["prm_lambda"] == 0.5
    assert metrics["global_step"] == 2 and len(rewards(out)) == 2
    lora_b = [v for k, v in load_file(out / "adapter_model.safetensors").items() if "lora_B" in k]
    assert lora_b and any(v.abs().sum() > 0 for v in lora_b)  # LoRA B starts at 0: the advantages moved it

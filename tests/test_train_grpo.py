"""train-grpo: GRPO of the policy on its own episodes (TRL GRPOTrainer with playprm's rollout)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from grpo_games import write_amnesia, write_firstletter, write_relay

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


def test_a_game_that_rewrites_history_stops_an_episode_mode_run(tiny_models, tmp_path, capsys, one_cpu_thread):
    """Through the real path (train-grpo -> TRL -> the runner, which retries and fails episodes on other errors):
    the run stops in one line naming the game and the player, with no model written."""
    out = tmp_path / "run"
    code = train_grpo_cli(tiny_models["policy"], write_amnesia(tmp_path / "games"), out, "--max-steps", "1",
                          "--max-tokens", "2", "--effective-batch-size", "4", "--lora-r", "4", "--lora-alpha", "8",
                          "--max-failed-share", "1",  # were the error taken for failed episodes, the run would go on
                          game="amnesia")
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and error[-1].startswith("playprm train-grpo: stopped: game amnesia, Player 1"), error
    assert "rewrites the player's history" in error[-1]
    assert not (out / "metrics.json").exists() and not (out / "adapter_model.safetensors").exists()


def test_a_reply_cut_at_max_tokens_gets_the_whole_closing_as_game_text(card_models):
    from transformers import AutoTokenizer

    from playprm.train.grpo_rollout import TokenChain

    chain = TokenChain(AutoTokenizer.from_pretrained(card_models["policy"]), {})
    first = [{"role": "user", "content": "hello"}]
    delta = chain.delta(first, [*first, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "go"}],
                        [], "game g, Player 1")
    assert chain.tokenizer.decode(delta).startswith("<|im_end|>")  # a reply cut without its end-of-turn token


class FlakyPolicy(RecordingPolicy):
    """The policy, whose generation calls numbered in ``failing`` raise (a call counts once however often it is
    tried); ``times``: how often each of them raises before it goes through."""

    def __init__(self, policy, failing: set[int], times: int = 1):
        super().__init__(policy)
        self.failing, self.times, self.call, self.raised = failing, times, 0, 0
        self.tries: dict[int, int] = {}

    def generate_ids(self, prompts, **kwargs):
        number = self.call + 1
        self.tries[number] = self.tries.get(number, 0) + 1
        if number in self.failing and self.tries[number] <= self.times:
            self.raised += 1
            raise RuntimeError(f"out of memory in call {number}")
        self.call = number
        return super().generate_ids(prompts, **kwargs)


def relay_rollout(tiny_models, tmp_path, name: str, *, failing=(), times: int = 1, batch_size: int = 64,
                  max_failed_share: float = 0.0):
    """``play_groups`` on relay (2 copies of each player's row of one instance), with a fresh policy whose calls
    in ``failing`` raise ``times`` times; returns (rollout dict, the policy)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks, prepare_games
    from playprm.train.grpo_rollout import RolloutSettings, TokenChain, play_groups, row_specs

    model_dir = tiny_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy = FlakyPolicy(HFPolicy(PolicySpec("p", "hf", str(model_dir)),
                                  model=AutoModelForCausalLM.from_pretrained(model_dir), tokenizer=tokenizer),
                         set(failing), times)
    entries, instances = prepare_games(["relay"], False, write_relay(tmp_path / f"games-{name}", instances=1), None)
    specs = [spec for spec in row_specs(entries, instances) for _ in range(2)]
    settings = RolloutSettings(1.0, 4, "main-score", batch_size=batch_size, max_failed_share=max_failed_share)
    out = play_groups(specs, policy, TokenChain(tokenizer, {}), settings, tmp_path / f"rollouts-{name}",
                      load_benchmarks(entries)[0], seed=3)
    return out, policy


def assert_rewards_are_the_episodes_scores(out) -> int:
    """Each row's reward is its episode's Main Score / 100 as clemcore's scorer wrote it to scores.json; returns
    the rows checked."""
    checked = 0
    for folder, reward, failed in zip(out["episode"], out["episode_reward"], out["episode_failed"]):
        if failed:
            continue
        scores = json.loads((Path(folder) / "scores.json").read_text())["episode scores"]
        assert reward == pytest.approx(scores["Main Score"] / 100)
        checked += 1
    return checked


def test_a_generation_that_raises_once_recovers_with_the_rows_of_an_undisturbed_run(tiny_models, tmp_path,
                                                                                   one_cpu_thread):
    undisturbed, _ = relay_rollout(tiny_models, tmp_path, "plain")
    recovered, policy = relay_rollout(tiny_models, tmp_path, "flaky", failing={1, 4})  # the first turn and a later one
    assert policy.raised == 2 and not any(recovered["episode_failed"])
    for key in ("prompt_ids", "completion_ids", "env_mask", "episode_reward", "token_advantages"):
        assert recovered[key] == undisturbed[key], key
    assert assert_rewards_are_the_episodes_scores(recovered) == 4
    assert len(set(recovered["episode_reward"])) > 1  # rewards with a spread: a wrong reading would show


def test_failed_episodes_get_no_reward_and_stop_the_run_past_the_threshold(tiny_models, tmp_path, monkeypatch,
                                                                           one_cpu_thread):
    """Two episodes in flight whose generation fails twice are failed episodes: their records never reach the
    reward function, their rows train nothing; with the default --max-failed-share 0 the rollout stops the run."""
    from playprm.train import grpo_rollout

    read = []
    reward_of = grpo_rollout.REWARDS["main-score"]
    monkeypatch.setitem(grpo_rollout.REWARDS, "main-score", lambda record: read.append(record) or reward_of(record))
    out, policy = relay_rollout(tiny_models, tmp_path, "tolerated", failing={2}, times=2, batch_size=2,
                                max_failed_share=0.5)
    assert out["episode_failed"] == [True, True, False, False] and policy.raised == 2
    errors = [Path(folder) / "error.json" for folder in out["episode"]]
    assert [e.is_file() for e in errors] == [True, True, False, False]
    assert len(read) == 2 and all(record.error is None for record in read)  # only the two that played were read
    assert out["episode_reward"][:2] == [None, None] and all(sum(mask) == 0 for mask in out["env_mask"][:2])
    assert assert_rewards_are_the_episodes_scores(out) == 2
    with pytest.raises(grpo_rollout.RolloutError) as stopped:
        relay_rollout(tiny_models, tmp_path, "stopped", failing={2}, times=2, batch_size=2)
    message = str(stopped.value)
    assert "\n" not in message and "2 of 4 episodes of the rollout failed" in message
    assert "game relay, player 1" in message and "out of memory in call 2" in message
    assert grpo_rollout.episode_reward([], [], [None, None, 0.5, 1.0], episode_failed=out["episode_failed"],
                                       log_metric=lambda name, value: read.append((name, value))) \
        == [None, None, 0.5, 1.0] and ("failed_episodes", 2.0) in read


def test_a_tree_rollout_retries_from_the_same_state_and_counts_what_still_fails(card_models, tmp_path,
                                                                               one_cpu_thread):
    """--advantage tree plays its batches as the runner does: a call that raises once is played again from the same
    state (the rows of an undisturbed tree), a call that keeps raising fails its leaves, which stop the rollout by
    default and otherwise come back as rows that train nothing."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks, prepare_games
    from playprm.train.grpo_rollout import RolloutError, RolloutSettings, TokenChain, play_trees, row_specs

    model_dir = card_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    entries, instances = prepare_games(["relay"], False, write_relay(tmp_path / "games", instances=1), None)
    first_player = row_specs(entries, instances)[0]
    benchmarks = load_benchmarks(entries)[0]

    def tree(name, failing=(), times=1, share=0.0):
        policy = FlakyPolicy(HFPolicy(PolicySpec("p", "hf", str(model_dir)), model=model, tokenizer=tokenizer),
                             set(failing), times)
        return play_trees([first_player] * 4, policy, TokenChain(tokenizer, {}),
                          RolloutSettings(1.0, 3, "main-score", max_failed_share=share), tmp_path / name, benchmarks,
                          seed=0, group_size=4, branch_factor=2)

    plain, flaky = tree("plain"), tree("flaky", failing={2})
    for key in ("prompt_ids", "completion_ids", "env_mask", "episode_reward", "token_advantages"):
        assert flaky[key] == plain[key], key
    with pytest.raises(RolloutError, match="2 of 2 episodes of the rollout failed"):  # forked in two, then failed
        tree("stopped", failing={2}, times=2)
    kept = tree("kept", failing={2}, times=2, share=1.0)
    assert kept["episode_failed"] == [True] * 4 and kept["episode_reward"] == [None] * 4
    assert all(sum(mask) == 0 for mask in kept["env_mask"])


def test_a_fork_that_cannot_copy_the_game_fails_its_leaves_under_the_threshold(card_models, tmp_path, monkeypatch,
                                                                              one_cpu_thread):
    """--advantage tree on a game whose state cannot be deep-copied: the fork fails (``Episode.fork``'s failed twin)
    and its leaves are failed leaves under --max-failed-share: one line stops the run by default, otherwise their
    rows train nothing and each failed leaf is counted once in ``failed_episodes``."""

    from playprm import episode as episode_module
    from playprm.play.job import load_benchmarks
    from playprm.train.grpo_rollout import (
        RolloutError,
        RolloutSettings,
        TokenChain,
        episode_reward,
        play_trees,
    )

    tokenizer, policy, entries, first_player = relay_tree_setup(card_models, tmp_path)
    benchmarks = load_benchmarks(entries)[0]

    def no_copy(*args, **kwargs):
        raise TypeError("cannot pickle '_thread.lock' object")

    def tree(name, share):
        return play_trees([first_player] * 4, policy, TokenChain(tokenizer, {}),
                          RolloutSettings(1.0, 3, "main-score", max_failed_share=share), tmp_path / name, benchmarks,
                          seed=0, group_size=4, branch_factor=2)

    monkeypatch.setattr(episode_module, "deepcopy", no_copy)
    with pytest.raises(RolloutError) as stopped:  # forked in two at the first turn: both copies failed
        tree("stopped", 0.0)
    message = str(stopped.value)
    assert "\n" not in message and "2 of 2 episodes of the rollout failed" in message
    assert "game relay, player 1" in message and "TypeError at fork: cannot pickle" in message
    kept = tree("kept", 1.0)
    assert kept["episode_failed"] == [True] * 4 and kept["episode_reward"] == [None] * 4
    assert all(sum(mask) == 0 for mask in kept["env_mask"])
    logged = []
    episode_reward([], [], kept["episode_reward"], episode_failed=kept["episode_failed"], failures=kept["failures"],
                   log_metric=lambda name, value: logged.append((name, value)))
    assert ("failed_episodes", 2.0) in logged  # two failed leaves standing for four rows: leaves, as the threshold


def test_a_failed_self_play_episode_is_counted_once(card_models, tmp_path, one_cpu_thread):
    """--self-play: a failed two-player episode gives two rows that train nothing and counts one failed episode in
    ``failed_episodes``, the unit --max-failed-share counts."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks, prepare_games
    from playprm.train.grpo_rollout import RolloutSettings, TokenChain, episode_reward, play_groups, row_specs

    model_dir = card_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy = FlakyPolicy(HFPolicy(PolicySpec("p", "hf", str(model_dir)),
                                  model=AutoModelForCausalLM.from_pretrained(model_dir), tokenizer=tokenizer),
                         {2}, times=2)  # the second call fails twice: the episodes of the first batch of 2 fail
    entries, instances = prepare_games(["relay"], False, write_relay(tmp_path / "games", instances=1), None)
    [spec] = row_specs(entries, instances, self_play=True)
    out = play_groups([spec] * 8, policy, TokenChain(tokenizer, {}),
                      RolloutSettings(1.0, 3, "main-score", batch_size=2, max_failed_share=0.5),
                      tmp_path / "rollouts", load_benchmarks(entries)[0], seed=1, group_size=8, players=2)
    assert out["episode_failed"] == [True] * 4 + [False] * 4  # 2 failed episodes of 4, two rows each
    assert out["failures"] == [1, 0, 1, 0, 0, 0, 0, 0]
    logged = []
    episode_reward([], [], out["episode_reward"], episode_failed=out["episode_failed"], failures=out["failures"],
                   log_metric=lambda name, value: logged.append((name, value)))
    assert ("failed_episodes", 2.0) in logged


def test_the_rollout_samples_from_the_temperature_alone(card_models, tmp_path, one_cpu_thread):
    """The generation config's top-k (here 1: greedy) is not applied to the rollout's sampling, which TRL's loss
    scores as softmax(logits / temperature); eval's sampling keeps it, as clemcore's generate does."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks, prepare_games
    from playprm.train.grpo_rollout import RolloutSettings, TokenChain, play_groups, row_specs

    model_dir = card_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.generation_config.top_k = 1
    model.generation_config.do_sample = True
    policy = HFPolicy(PolicySpec("p", "hf", str(model_dir)), model=model, tokenizer=tokenizer)
    entries, instances = prepare_games(["firstletter"], False, write_firstletter(tmp_path / "games", 2), None)
    specs = [spec for spec in row_specs(entries, instances) for _ in range(8)]
    out = play_groups(specs, policy, TokenChain(tokenizer, {}), RolloutSettings(1.0, 1, "main-score"),
                      tmp_path / "rollouts", load_benchmarks(entries)[0], seed=0)
    assert len({tuple(row) for row in out["completion_ids"][:8]}) > 1  # top-k 1 would give one reply
    prompt = out["prompt_ids"][0]
    kept = policy.generate_ids([prompt] * 8, temperature=1.0, max_tokens=1, seed=0)
    assert len({tuple(c[0].token_ids) for c in kept}) == 1  # eval's sampling: the config's top-k applies


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
    moved = [v for k, v in load_file(tmp_path / "straight" / "adapter_model.safetensors").items() if "lora_B" in k]
    assert moved and any(v.abs().sum() > 0 for v in moved)  # LoRA B starts at 0: the three steps trained
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", callbacks=[StopAtStep(3).callback])
    assert (tmp_path / "cut" / "checkpoint-2").is_dir() and not (tmp_path / "cut" / "metrics.json").exists()
    from transformers import TrainerCallback

    class Steps(TrainerCallback):
        seen: list[int] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.seen.append(state.global_step)

    resumed = run(tmp_path / "cut", resume=True, callbacks=[Steps()])
    assert Steps.seen == [3]  # one rollout after checkpoint-2, not a fresh run of three
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
    (["--max-failed-share", "1.5"], "--max-failed-share must be in [0, 1], not 1.5"),
    (["--top-p", "0.5"], "--top-p 0.5: train-grpo's rollout samples from softmax(logits / --temperature)"),
    (["--top-k", "20"], "--top-k 20: train-grpo's rollout samples from softmax"),
    (["--repetition-penalty", "1.1"], "--repetition-penalty 1.1: train-grpo's rollout samples"),
    (["--min-p", "0.1"], "--min-p 0.1: train-grpo's rollout samples"),
    (["--generation-kwargs", '{"top_p": 0.5}'], "--generation-kwargs {'top_p': 0.5}: train-grpo's rollout samples"),
    (["--use-vllm", "true"], "--use-vllm true: train-grpo's rollout plays the episodes with playprm's own sampler"),
    (["-g", "firstletter", "relay", "--effective-batch-size", "64", "--per-device-train-batch-size", "8"],
     "more than the 12 (instance, player) rows"),  # -g takes several games, as eval does: 8 + 2 x 2 rows
])
def test_bad_inputs_are_one_line_errors_before_any_model_loads(extra, expected, card_models, tmp_path, capsys,
                                                               no_model_loading):
    games = write_relay(write_firstletter(tmp_path / "games"))
    argv = ["train-grpo", "--model", str(card_models["policy"]), "--games-dir", str(games), "--output-dir",
            str(tmp_path / "out"), *QUICK, *extra]
    if "--game" not in extra and "-g" not in extra:
        argv += ["--game", "firstletter"]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("playprm train-grpo: error: ") and expected in error and "\n" not in error
    assert not (tmp_path / "out").exists()


def test_clem_run_plays_the_entry_train_grpo_writes_as_written(card_models, tmp_path, monkeypatch):
    """clemcore's clem run, given the registry entry exactly as train-grpo wrote it, plays the trained adapter: its
    episodes are playprm eval's with that adapter (turn for turn, up to a near-tie), and the adapter's play is not
    the base model's (a large step makes sure the adapter changes the greedy replies)."""
    from test_clemcore_parity import clem, compare_episodes, episodes, events, smallest_top2_gap, workspace

    out = tmp_path / "Qwen3.5-27B-grpo"
    assert train_grpo_cli(card_models["policy"], write_firstletter(tmp_path / "games"), out, "--max-steps", "1",
                          "--max-tokens", "2", "--effective-batch-size", "8", "--lora-r", "4", "--lora-alpha", "8",
                          "--learning-rate", "1e-1", "--lr-scheduler-type", "constant", "--warmup-steps", "0",
                          "--model-name", "grpo-adapter") == 0
    [entry] = json.loads((out / "model_registry.json").read_text())
    assert entry["model_config"]["peft_model"] == str(out.resolve()) and (out / "adapter_model.safetensors").is_file()
    root = workspace(tmp_path / "clem", card_models["policy"], games_played=["referencegame"])
    shutil.copy(out / "model_registry.json", root / "model_registry.json")  # the entry exactly as written
    clem("run", "-g", "referencegame", "-m", "grpo-adapter", "-r", "res", "-t", "0.0", "-l", "6", "-b", "4", cwd=root)
    clem("score", "-r", "res", cwd=root)
    assert not list((root / "res").rglob("error.json"))
    monkeypatch.chdir(root)
    for name, model in (("ours", "grpo-adapter"), ("base", str(card_models["policy"]))):
        assert main(["eval", "--policy-model", model, "-g", "referencegame", "--max-tokens", "6", "--results-dir",
                     name]) == 0
    theirs, ours, base = episodes(root / "res"), episodes(root / "ours"), episodes(root / "base")
    equal, flips = compare_episodes(theirs, ours, lambda prompt: smallest_top2_gap(card_models["policy"], prompt,
                                                                                  adapter=out, max_tokens=6))
    assert len(ours) == 4 and equal + len(flips) == 4 and len(flips) <= 1
    assert any(events(ours[key]) != events(base[key]) for key in ours)  # the adapter is what was played


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
    # a turn after the tree stopped branching carries its parent's advantage: two first replies (values 1 and 0
    # around 0.5, spread 0.5 ** 0.5), each followed by one reply
    a = 0.5 / (0.5 ** 0.5 + 1e-4)
    assert tree_advantages([[0, 0], [1, 0]], [1.0, 0.0]) == [[pytest.approx(a), pytest.approx(a)],
                                                             [pytest.approx(-a), pytest.approx(-a)]]
    # ... shared by the leaves under it: a node's advantage is split among the rows that carry it
    split = tree_advantages([[0, 0], [0, 1], [1, 0]], [1.0, 1.0, 0.0])
    assert split[0][0] == split[1][0] == pytest.approx(a / 2) and split[2] == [pytest.approx(-a), pytest.approx(-a)]


def test_tree_rollout_forks_at_the_trained_players_turns(card_models, tmp_path, one_cpu_thread):
    """--advantage tree: a group of 4 is one tree forked at the trained player's first two turns; sibling rows
    share their prompt and the tokens before the fork, and only sampled tokens carry an advantage."""

    from playprm.play.job import load_benchmarks
    from playprm.train.grpo_rollout import RolloutSettings, TokenChain, play_trees, tree_advantages

    tokenizer, policy, entries, first_player = relay_tree_setup(card_models, tmp_path)
    benchmarks, _ = load_benchmarks(entries)
    out = play_trees([first_player] * 4, policy, TokenChain(tokenizer, {}), RolloutSettings(1.0, 4, "main-score"),
                     tmp_path / "rollouts", benchmarks, seed=0, group_size=4, branch_factor=2)
    assert len(out["prompt_ids"]) == 4 and len({tuple(p) for p in out["prompt_ids"]}) == 1
    assert len(list((tmp_path / "rollouts").rglob("interactions.json"))) == 4  # the four leaves, written
    rows = [c for c in out["completion_ids"]]
    first_turn = [row[:next(i for i, m in enumerate(mask) if m == 0)] for row, mask in zip(rows, out["env_mask"])]
    assert first_turn[0] == first_turn[1] != first_turn[2] == first_turn[3]  # forked at the first turn into two
    # each reply's advantage is tree_advantages' of its leaf's path: turn 1 forked into {0, 1} and {2, 3}, turn 2
    # into single leaves, turn 3 (no budget left to fork) carries turn 2's
    paths = [[0, 0], [0, 1], [1, 0], [1, 1]]
    expected = tree_advantages(paths, out["episode_reward"])
    assert any(value != 0 for leaf in expected for value in leaf)  # rewards with a spread: the check can fail
    for mask, advantages, turns in zip(out["env_mask"], out["token_advantages"], expected):
        assert all(a == 0.0 for a, m in zip(advantages, mask) if not m)
        starts = [k for k, m in enumerate(mask) if m and (k == 0 or not mask[k - 1])]
        assert [advantages[k] for k in starts] == pytest.approx([turns[0], turns[1], turns[1]])


@pytest.fixture
def loss_advantages(monkeypatch):
    """The advantages each of TRL's loss calls receives (the tensors ``GRPOTrainer._compute_loss`` reads)."""
    from trl import GRPOTrainer

    seen = []
    compute = GRPOTrainer._compute_loss

    def spy(self, model, inputs):
        seen.append(inputs["advantages"].detach().clone())
        return compute(self, model, inputs)

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", spy)
    return seen


def test_tree_grpo_trains_from_per_token_advantages(card_models, tmp_path, one_cpu_thread, loss_advantages):
    from safetensors.torch import load_file

    out = tmp_path / "tree"
    assert train_grpo_cli(card_models["policy"], write_relay(tmp_path / "games", instances=2), out, "--advantage",
                          "tree", "--branch-factor", "2", "--max-steps", "2", "--max-tokens", "3",
                          "--effective-batch-size", "8", "--lora-r", "4", "--lora-alpha", "8", "--learning-rate",
                          "1e-2", game="relay") == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["advantage"] == "tree" and metrics["global_step"] == 2 and len(rewards(out)) == 2
    # TRL's own advantage is one number a row; the loss saw the rollout's, one a token, varying within rows
    assert loss_advantages and all(a.dim() == 2 for a in loss_advantages)
    assert any(len(set(row.tolist()) - {0.0}) > 1 for a in loss_advantages for row in a)
    lora_b = [v for k, v in load_file(out / "adapter_model.safetensors").items() if "lora_B" in k]
    assert lora_b and any(v.abs().sum() > 0 for v in lora_b)  # LoRA B starts at 0: the advantages moved it


def test_a_step_with_only_zero_advantages_leaves_the_weights_as_they_were(card_models, tmp_path, monkeypatch,
                                                                          one_cpu_thread, loss_advantages):
    """After a step that learned (rewards 1, 0 in every group), a step whose every group earned one reward has
    nothing to learn: AdamW's momentum from the first step must not move the weights."""
    from safetensors.torch import load_file

    from playprm.train import grpo_rollout

    outcomes = grpo_rollout._outcomes
    rollouts = []

    def scripted(run_dir, reward):  # the first rollout: 1, 0, 1, 0, ...; the second: every episode 0
        played = outcomes(run_dir, reward)
        rollouts.append(played)
        return {folder: float(len(rollouts) == 1 and i % 2 == 0) for i, folder in enumerate(sorted(played))}
    monkeypatch.setattr(grpo_rollout, "_outcomes", scripted)
    out = tmp_path / "run"
    assert train_grpo_cli(card_models["policy"], write_firstletter(tmp_path / "games", instances=2), out,
                          "--max-steps", "2", "--save-steps", "1", "--max-tokens", "2", "--num-generations", "2",
                          "--effective-batch-size", "4", "--per-device-train-batch-size", "4", "--lora-r", "4",
                          "--lora-alpha", "8", "--learning-rate", "1e-2", "--warmup-steps", "0",
                          "--lr-scheduler-type", "constant") == 0
    assert len(rollouts) == 2 and [bool(a.ne(0).any()) for a in loss_advantages] == [True, False]
    first, second = (load_file(out / f"checkpoint-{step}" / "adapter_model.safetensors") for step in (1, 2))
    assert any(v.abs().sum() > 0 for k, v in first.items() if "lora_B" in k)  # the first step moved the adapter
    for key, value in first.items():
        assert torch.equal(value, second[key]), key


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
    """relay is always won: with --reward success every episode earns 1, so GRPO's own advantages are all 0 and only
    the PRM's shaped per-token advantages (λ 0: each reply's change of the PRM's value) can move the adapter."""
    from safetensors.torch import load_file

    out = tmp_path / "shaped"
    assert train_grpo_cli(tiny_models["policy"], write_relay(tmp_path / "games", instances=2), out, "--prm-path",
                          str(tiny_models["prm"]), "--prm-lambda", "0", "--reward", "success", "--max-steps", "2",
                          "--max-tokens", "3", "--effective-batch-size", "8", "--lora-r", "4", "--lora-alpha", "8",
                          "--learning-rate", "1e-2", game="relay") == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["prm_path"] == str(tiny_models["prm"].resolve()) and metrics["prm_lambda"] == 0.0
    assert metrics["global_step"] == 2 and rewards(out) == [1.0, 1.0]
    lora_b = [v for k, v in load_file(out / "adapter_model.safetensors").items() if "lora_B" in k]
    assert lora_b and any(v.abs().sum() > 0 for v in lora_b)  # LoRA B starts at 0: the advantages moved it


def test_a_launch_of_several_processes_is_a_one_line_error_before_any_model_loads(card_models, tmp_path, capsys,
                                                                                  monkeypatch, no_model_loading):
    monkeypatch.setenv("WORLD_SIZE", "2")  # what torchrun and accelerate launch set in every process
    code = train_grpo_cli(card_models["policy"], write_firstletter(tmp_path / "games"), tmp_path / "out")
    error = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in error and "train-grpo runs in one process (this launch has WORLD_SIZE=2)" in error
    assert not (tmp_path / "out").exists()


def test_help_lists_every_setting_train_grpo_adds_to_trls(capsys):
    import dataclasses

    from trl import GRPOConfig

    from playprm.train.grpo_config import GRPOTrainingConfig
    from playprm.train.qlora import ModelCardArguments

    with pytest.raises(SystemExit):
        main(["train-grpo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    inherited = {f.name for f in dataclasses.fields(GRPOConfig)} | {f.name for f in dataclasses.fields(ModelCardArguments)}
    own = [f.name for f in dataclasses.fields(GRPOTrainingConfig) if f.name not in inherited]
    assert own and all(f"--{name.replace('_', '-')} " in text for name in own), own
    assert "-g NAME|SPEC [NAME|SPEC ...]" in text and "base model" not in text


def test_the_tiny_recipe_plays_a_game_whose_rewards_vary_for_a_random_model(card_models, tmp_path, monkeypatch,
                                                                           one_cpu_thread):
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)  # the recipe names its game folder from the repository root, as its comment runs it
    out = tmp_path / "tiny-grpo"
    assert main(["train-grpo", "--config", str(root / "recipes" / "tiny" / "grpo.yaml"), "--model",
                 str(card_models["policy"]), "--output-dir", str(out), "--max-steps", "2"]) == 0
    state = json.loads((out / "trainer_state.json").read_text())
    spreads = [entry["reward_std"] for entry in state["log_history"] if "reward_std" in entry]
    assert len(spreads) == 2 and all(spread > 0 for spread in spreads)  # every step has rewards to learn from


def test_self_play_trains_every_player_of_one_episode_against_its_own_group(tiny_models, tmp_path, one_cpu_thread):
    """--self-play: a group of 4 rows of relay (two players) is 2 episodes, each giving player 1's and player 2's
    row; each row's sampled tokens carry GRPO's advantage against its own player's rows, everything else 0."""
    import statistics

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import load_benchmarks, prepare_games
    from playprm.train.grpo_rollout import RolloutSettings, TokenChain, play_groups, row_specs

    model_dir = tiny_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy = RecordingPolicy(HFPolicy(PolicySpec("p", "hf", str(model_dir)),
                                      model=AutoModelForCausalLM.from_pretrained(model_dir), tokenizer=tokenizer))
    entries, instances = prepare_games(["relay"], False, write_relay(tmp_path / "games", instances=1), None)
    [spec] = row_specs(entries, instances, self_play=True)
    assert spec.key.endswith("/self-play")
    out = play_groups([spec] * 8, policy, TokenChain(tokenizer, {}), RolloutSettings(1.0, 3, "main-score"),
                      tmp_path / "rollouts", load_benchmarks(entries)[0], seed=1, group_size=8, players=2)
    assert len(list((tmp_path / "rollouts").rglob("interactions.json"))) == 4  # 4 episodes for 8 trained rows
    assert out["episode"][0::2] == out["episode"][1::2] and len(set(out["episode"])) == 4
    assert assert_rewards_are_the_episodes_scores(out) == 8
    for row in range(8):  # player 1 opens with its own prompt, player 2 with the game's relay of player 1's reply
        prompt = tokenizer.decode(out["prompt_ids"][row])
        assert ("Talk about" in prompt) == (row % 2 == 0) and ("Answer the other player" in prompt) == (row % 2 == 1)
        assert sum(1 for k, m in enumerate(out["env_mask"][row]) if m and (k == 0 or not out["env_mask"][row][k - 1])) == 3
    for player in (0, 1):
        mine = list(range(player, 8, 2))
        group = [out["episode_reward"][i] for i in mine]
        mean, spread = statistics.mean(group), statistics.stdev(group)
        for i in mine:
            expected = (out["episode_reward"][i] - mean) / (spread + 1e-4)
            assert out["token_advantages"][i] == pytest.approx([expected * m for m in out["env_mask"][i]])
    assert any(a != 0 for row in out["token_advantages"][0::2] for a in row)  # a spread in player 1's group
    assert any(a != 0 for row in out["token_advantages"][1::2] for a in row)  # and in player 2's


def test_self_play_grpo_trains_both_players_tokens_and_no_game_text(tiny_models, tmp_path, one_cpu_thread,
                                                                     loss_advantages):
    """Through TRL: the loss weighs each row's tokens by the per-token advantages times its mask, nonzero on rows
    of both players and never on a token the game or the other player wrote (env_mask 0)."""
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    masks = []
    compute = GRPOTrainer._compute_loss

    def spy(self, model, inputs):
        masks.append((inputs["prompt_ids"], inputs["completion_mask"] * inputs["tool_mask"]))
        return compute(self, model, inputs)

    out = tmp_path / "self-play"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GRPOTrainer, "_compute_loss", spy)
        assert train_grpo_cli(tiny_models["policy"], write_relay(tmp_path / "games", instances=2), out,
                              "--self-play", "true", "--max-steps", "2", "--max-tokens", "3", "--num-generations",
                              "4", "--effective-batch-size", "8", "--per-device-train-batch-size", "4",  # 2 halves
                              "--lora-r", "4", "--lora-alpha", "8", "--learning-rate", "1e-2", game="relay") == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(masks) == 4  # each step's rollout trained in two micro-batches, advantages split with their rows
    assert metrics["self_play"] is True and metrics["episodes_played"] == 8  # 2 steps x 8 rows / 2 players
    tokenizer = AutoTokenizer.from_pretrained(tiny_models["policy"])
    trained = {0: 0, 1: 0}
    for (prompts, mask), advantages in zip(masks, loss_advantages):
        assert advantages.shape == mask.shape
        assert not (advantages * (1 - mask)).any()  # nothing the game or the other player wrote is weighed
        for prompt, weights in zip(prompts, advantages * mask):
            player = 0 if "Talk about" in tokenizer.decode(prompt) else 1
            trained[player] += int(weights.abs().sum() > 0)
    assert trained[0] > 0 and trained[1] > 0, trained


def test_trls_warning_for_rows_without_a_reward_is_dropped_and_other_warnings_kept():
    """Rows that train nothing (tree placeholders, failed episodes) have no reward by design: TRL's warning, which
    dumps the row's inputs, is noise; its other warnings are not. TRL logs through accelerate's adapter, which puts
    "[RANK 0] " before the message: the warning is sent that way here."""
    import logging

    from accelerate import PartialState
    from accelerate.logging import get_logger

    from playprm.train.grpo import NONE_REWARD_WARNING, quiet_expected_none_rewards

    quiet_expected_none_rewards()
    quiet_expected_none_rewards()  # idempotent: one filter
    trl_logger = logging.getLogger("trl.trainer.grpo_trainer")
    assert sum(getattr(f, "playprm_none_rewards", False) for f in trl_logger.filters) == 1
    seen = []

    class Recorder(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())
    recorder = Recorder(logging.WARNING)
    trl_logger.addHandler(recorder)  # TRL's loggers need not reach the root's handlers
    try:
        PartialState()  # the adapter logs only once accelerate's state exists, as it does in a trainer
        trl_adapter = get_logger("trl.trainer.grpo_trainer")  # TRL's own: grpo_trainer.logger
        trl_adapter.warning(f"{NONE_REWARD_WARNING} for the following kwargs:\n{{'episode_reward': None}}")
        trl_logger.warning(f"{NONE_REWARD_WARNING} for the following kwargs:\n{{'episode_reward': None}}")
        trl_adapter.warning("something else")
    finally:
        trl_logger.removeHandler(recorder)
    assert seen == ["[RANK 0] something else"]


def relay_tree_setup(card_models, tmp_path):
    """The tiny card policy (tokenizer, HFPolicy) and the relay game's entries and first player row, for tree
    rollouts."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy
    from playprm.play.job import prepare_games
    from playprm.train.grpo_rollout import row_specs

    model_dir = card_models["policy"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy = HFPolicy(PolicySpec("p", "hf", str(model_dir)), model=AutoModelForCausalLM.from_pretrained(model_dir),
                      tokenizer=tokenizer)
    entries, instances = prepare_games(["relay"], False, write_relay(tmp_path / "games", instances=1), None)
    return tokenizer, policy, entries, row_specs(entries, instances)[0]

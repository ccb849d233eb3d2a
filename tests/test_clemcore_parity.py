"""Same model, same game, same numbers: `playprm eval --mode greedy` plays what clemcore's own `clem run` plays.

The same tiny policy is registered as a clemcore ``huggingface_local`` entry and played greedy on every
built-in game, once by ``clem run -b 4`` (clemcore's backend, its batching and padding) and once by ``playprm
eval`` (playprm's decode loop, its own batches across games); every episode's turns (from, to, action; the
timestamps aside) and episode scores must be equal. Where a greedy choice differs, the test checks that it is a
numeric flip — the two best next tokens within float noise of each other, which differently padded batches
can order either way — and counts it; any other difference fails.

Both architectures run: the Qwen3 tiny (tied embeddings) answers with runs of newlines, which clemcore strips
to an empty reply; the Qwen3.5 tiny (the card's layout, untied) writes varied text ended by ``<|im_end|>``,
which ``eos_to_cull`` cuts. Two instances per experiment and 12 new tokens keep it to about a minute each.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from playprm.cli import main
from playprm.games.registry import builtin_games_dir

GAMES = ("arithmetic", "guessthenumber", "mastermind", "referencegame", "taboo", "wordle")  # every built-in game
INSTANCES = 2  # per experiment
EXPERIMENTS = 10  # of GAMES: two each, one of mastermind and guessthenumber
MAX_TOKENS = 12
NEAR_TIE = 1e-3  # logit gap below which float noise of another padding may flip a greedy choice


def workspace(root: Path, policy: Path, *, games_played=GAMES, instances: int = INSTANCES,
              entry: dict | None = None) -> Path:
    """A folder both CLIs run in: copies of the built-in games cut to ``instances`` per experiment (registered
    in game_registry.json, so they shadow the built-ins for both) and a clemcore model entry (``entry``, or
    ``policy`` as the entry "parity")."""
    games = root / "games"
    for name in games_played:
        shutil.copytree(builtin_games_dir() / name, games / name, ignore=shutil.ignore_patterns("__pycache__"))
        instances_file = games / name / "in" / "instances.json"
        data = json.loads(instances_file.read_text())
        for experiment in data["experiments"]:
            experiment["game_instances"] = experiment["game_instances"][:instances]
        instances_file.write_text(json.dumps(data))
    (root / "game_registry.json").write_text(json.dumps([{"benchmark_path": str(games)}]))
    # clemcore 3.7.2 cannot parse the tiny template's {% generation %} with chat_template_kwargs: none here
    entry = entry or {"model_name": "parity", "backend": "huggingface_local", "huggingface_id": str(policy),
                      "model_config": {"premade_chat_template": True, "eos_to_cull": "<\\|im_end\\|>",
                                       "padding_side": "left"}}
    (root / "model_registry.json").write_text(json.dumps([entry]))
    return root


def clem(*args: str, cwd: Path) -> None:
    binary = Path(sys.executable).with_name("clem")
    run = subprocess.run([str(binary), *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]


def episodes(results: Path) -> dict[str, Path]:
    """``game/experiment/instance_NNNNN`` -> episode folder, below the one model folder of ``results``."""
    [model_dir] = [p for p in results.iterdir() if p.is_dir()]
    return {p.parent.relative_to(model_dir).as_posix(): p.parent for p in model_dir.rglob("interactions.json")}


def events(episode: Path) -> list[tuple]:
    """Every event of every round as (round, from, to, action): what the game saw and said."""
    turns = json.loads((episode / "interactions.json").read_text())["turns"]
    return [(r, e["from"], e["to"], e["action"]) for r, events in enumerate(turns) for e in events]


def episode_scores(episode: Path) -> dict:
    scores = json.loads((episode / "scores.json").read_text())["episode scores"]
    return {k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in scores.items()}


def smallest_top2_gap(policy: Path, prompt: str, *, adapter: Path | None = None,
                      max_tokens: int = MAX_TOKENS) -> float:
    """The smallest gap between the two best next-token logits along the unpadded greedy reply to ``prompt``
    (of ``policy`` with its LoRA ``adapter`` when given)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(policy)
    model = AutoModelForCausalLM.from_pretrained(policy).eval()
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter)).eval()
    while prompt.startswith(tokenizer.pad_token):  # clemcore's recorded prompt keeps its left padding
        prompt = prompt[len(tokenizer.pad_token):]
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").input_ids
    gaps = []
    with torch.no_grad():
        for _ in range(max_tokens):
            top = model(ids).logits[0, -1].float().topk(2)
            gaps.append(float(top.values[0] - top.values[1]))
            ids = torch.cat([ids, top.indices[:1][None]], dim=1)
    return min(gaps)


def compare_episodes(theirs: dict[str, Path], ours: dict[str, Path], gap) -> tuple[int, list[str]]:
    """(equal episodes, keys of numeric flips) of clem run's ``theirs`` against playprm's ``ours``.

    An episode is equal when every event and its scores are; otherwise the first difference must be a reply to
    the same history whose greedy choice was a near-tie: ``gap(prompt)`` (the smallest top-2 logit gap along
    the reply clemcore's backend rendered the prompt for) below ``NEAR_TIE``. Anything else fails.
    """
    assert sorted(theirs) == sorted(ours)
    equal, flips = 0, []
    for key in sorted(ours):
        a, b = events(theirs[key]), events(ours[key])
        k = first_difference(a, b)
        if k is None:
            assert episode_scores(theirs[key]) == episode_scores(ours[key]), key
            equal += 1
            continue
        # only a reply can differ first, to the same history; and only by a near-tie of the greedy choice
        assert a[k][3]["type"] == b[k][3]["type"] == "get message" and a[k][:3] == b[k][:3], (key, a[k], b[k])
        smallest = gap(clem_prompt(theirs[key], a[k]))
        assert smallest < NEAR_TIE, f"{key}: {a[k][3]['content']!r} != {b[k][3]['content']!r} with no near-tie ({smallest})"
        flips.append(key)
    return equal, flips


def first_difference(a: list[tuple], b: list[tuple]) -> int | None:
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return None if len(a) == len(b) else min(len(a), len(b))


def clem_prompt(episode: Path, event: tuple) -> str:
    """The prompt clemcore's backend rendered for the reply ``event`` (from its requests file)."""
    round_index, player = event[0], event[1]
    requests = next(p for p in episode.glob("*.requests.json")
                    if json.loads(p.read_text())["meta"]["player_name"] == player)
    calls = [c for c in json.loads(requests.read_text())["calls"] if c["round"] == round_index]
    return calls[0]["call"]["manipulated_prompt_obj"]["inputs"]


def test_greedy_play_is_clemcores_play_on_every_builtin_game(tiny_models, tmp_path, monkeypatch, report_figure):
    root = workspace(tmp_path, tiny_models["policy"])
    clem("run", "-g", *GAMES, "-m", "parity", "-r", "clem", "-t", "0.0", "-l", str(MAX_TOKENS), "-b", "4", cwd=root)
    clem("score", "-r", "clem", cwd=root)
    monkeypatch.chdir(root)
    assert main(["eval", "--policy-model", "parity", "--mode", "greedy", "--game-all", "--limit", str(INSTANCES),
                 "--max-tokens", str(MAX_TOKENS), "--results-dir", "playprm"]) == 0
    theirs, ours = episodes(root / "clem"), episodes(root / "playprm")
    assert {key.split("/")[0] for key in ours} == set(GAMES)
    equal, flips = compare_episodes(theirs, ours, lambda prompt: smallest_top2_gap(tiny_models["policy"], prompt))
    report_figure(f"clemcore parity ({tiny_models['policy'].parent.name}): {len(ours)} episodes compared, "
                  f"{equal} equal, {len(flips)} numeric flips {flips}")
    assert equal + len(flips) == len(ours) == EXPERIMENTS * INSTANCES
    assert len(flips) <= 1  # a flip needs a near-tie: rare, and the note in the README says how rare


@pytest.mark.parametrize("reply", ["\n\n\n", "  GUESS: crane \n"])
def test_the_game_receives_clemcores_text_for_the_same_decoded_reply(reply):
    from playprm.models.replies import huggingface_local

    # clemcore strips first and culls after, so whitespace before the end token survives: mirrored exactly
    assert huggingface_local(reply + "<|im_end|>", eos_to_cull="<\\|im_end\\|>", pad_token="<|endoftext|>") == \
        reply.lstrip()
    assert huggingface_local(reply, eos_to_cull="<\\|im_end\\|>", pad_token="<|endoftext|>") == reply.strip()


class RecordingScorer:
    """A PRM stand-in that scores by length and keeps every text it was asked to score."""

    def __init__(self):
        from playprm.prm.scorer import ScoreStats

        self.stats = ScoreStats()
        self.seen: list[str] = []

    def score_candidates(self, contexts, candidates):
        self.seen += [c.text for group in candidates for c in group]
        return [[len(c.text) % 7 / 7 for c in group] for group in candidates]


@pytest.mark.parametrize("mode", ["best-of-n", "lf-beam", "beam-search"])
def test_every_mode_scores_and_plays_the_post_processed_reply(card_models, tmp_path, mode):
    from playprm.models.hf import HFPolicy
    from playprm.models.registry import resolve_policy
    from playprm.play.config import EvalConfig
    from playprm.play.wiring import run_eval

    policy = HFPolicy(resolve_policy(str(card_models["policy"])))
    scorer = RecordingScorer()
    cfg = EvalConfig(policy_model=str(card_models["policy"]), mode=mode, prm_path=card_models["prm"],
                     games=["arithmetic", "wordle"], limit=1, max_tokens=24, n_candidates=2, beam_width=1,
                     num_beam_iterations=2, results_dir=tmp_path)
    run_dir, _ = run_eval(cfg, policy=policy, scorer=scorer, progress=False)
    rows = [json.loads(line) for path in run_dir.rglob("candidates.jsonl") for line in path.read_text().splitlines()]
    candidates = [c for row in rows for c in row["candidates"]]
    assert candidates and all(c["text"] == policy.reply_rule(c["raw"]) for c in candidates)
    assert any(c["raw"] != c["text"] for c in candidates)  # post-processing changed a reply: the check bites
    assert not any("<|im_end|>" in text for text in scorer.seen)  # the PRM saw what the game sees
    for path in run_dir.rglob("interactions.json"):
        played = [e["action"]["content"] for r in json.loads(path.read_text())["turns"] for e in r
                  if e["action"]["type"] == "get message"]
        assert played and all(text in {c["text"] for c in candidates} for text in played)


def test_consecutive_messages_of_one_role_reach_the_model_merged_as_in_clemcore():
    from clemcore.backends.utils import ensure_alternating_roles

    from playprm.chat import clemcore_messages

    # a game's initial_prompt and first context are two user messages; clemcore's backends join them
    context = [{"role": "system", "content": ""}, {"role": "user", "content": "rules"},
               {"role": "user", "content": "the grids"}]
    assert clemcore_messages(context) == ensure_alternating_roles(context) == [
        {"role": "user", "content": "rules\n\nthe grids"}]

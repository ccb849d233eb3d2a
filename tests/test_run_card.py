"""Model cards of tiny train-sft and train-prm runs: valid Hub metadata, every section, every number read back from
the run's own files, none of TRL's generic text; ``playprm card`` adds clemscore / statscore from a report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from playprm.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--max-steps", "3", "--eval-steps", "3", "--save-steps", "3", "--logging-steps", "1"]
SFT_SECTIONS = ("## Model details", "## Training methodology", "## Training data", "## Hyperparameters",
                "## Validation results", "## Compute", "## Usage", "## Framework versions")
PLACEHOLDERS = re.compile(r"\bNone\b|\bnan\b|TODO|More Information Needed|fine-tuned version of|time machine|"
                          r"licence: license")

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


def playpen_record(index: int, outcome: str) -> dict:
    """A short Playpen-format wordle record (one player's view of one episode)."""
    return {"messages": [{"role": "user", "content": f"Wordle round {index % 3}. Reply with GUESS: word."},
                         {"role": "assistant", "content": "GUESS: house"},
                         {"role": "user", "content": "Feedback: none right. Guess again."},
                         {"role": "assistant", "content": "GUESS: crane"}],
            "meta": {"game": "wordle" if index % 4 else "taboo", "experiment": "easy", "game_id": index,
                     "player_name": "Player 1", "game_role": "Word Guesser", "model": "tiny", "outcome": outcome}}


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def front_matter(card: str) -> dict:
    match = re.match(r"---\n(.*?)\n---\n", card, re.S)
    assert match, "the card starts with YAML front matter"
    return yaml.safe_load(match[1])


def section(card: str, heading: str) -> str:
    start = card.index(heading + "\n")
    end = card.find("\n## ", start + len(heading))
    return card[start:end if end != -1 else None]


@pytest.fixture(scope="module")
def sft_run(card_models, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sft-card")
    records = [playpen_record(i, "success" if i % 5 else "failure") for i in range(20)]
    (root / "playpen.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["sft-data", "--dataset", str(root / "playpen.jsonl"), "--out", str(root / "data"),
                 "--val-fraction", "0.2"]) == 0
    assert main(["train-sft", "--config", str(REPO_ROOT / "recipes/tiny/sft.yaml"), "--model",
                 str(card_models["policy"]), "--data", str(root / "data"), "--output-dir", str(root / "out"),
                 "--chat-template-kwargs", '{"enable_thinking": false}', *QUICK]) == 0
    return root / "out"


def test_sft_card_has_hub_metadata_every_section_and_the_runs_numbers(sft_run):
    card = (sft_run / "README.md").read_text()
    metrics, state = read(sft_run / "metrics.json"), read(sft_run / "trainer_state.json")
    config, info = read(sft_run / "training_config.json"), read(sft_run / "run_info.json")
    adapter, summary = read(sft_run / "adapter_config.json"), read(sft_run / "run_info.json")["dataset_summary"]
    assert not PLACEHOLDERS.search(card)
    meta = front_matter(card)
    assert meta["library_name"] == "peft" and meta["pipeline_tag"] == "text-generation"
    assert {"playprm", "lora", "sft", "trl"} <= set(meta["tags"]) and "qlora" not in meta["tags"]  # CPU: no 4-bit
    assert meta["license"] == "unknown" and "base_model" not in meta  # a local folder is no hub id
    for heading in SFT_SECTIONS:
        assert heading + "\n" in card
    assert "## Evaluation" not in card  # only once `playprm card --report` has a report

    details = section(card, "## Model details")
    assert f"the local folder `{info['base_model']}`" in details
    assert "LoRA adapters on the unquantized float32 base (no CUDA device" in details
    assert f"TRL {info['versions']['trl']} SFTTrainer, PEFT {info['versions']['peft']}" in details

    method = section(card, "## Training methodology")
    assert "Keep the records whose outcome is success: 16 of 20 records seen." in method  # 4 failures filtered
    assert "**Positive-only filtering:**" in method
    assert f"{state['global_step']} optimizer steps" in method
    for game, counts in summary["samples"].items():
        seen = summary["seen"][game]
        assert (f"| {game} | {sum(seen.values())} | {seen.get('success', 0)} | {seen.get('failure', 0)} | "
                f"{seen.get('aborted', 0)} | 0 | {counts['train']} | {counts['validation']} |") in method

    data = section(card, "## Training data")
    split = summary["split"]
    assert f"{split['train']} train samples from {split['train_instances']} instances" in data
    assert f"{split['validation']} validation samples from {split['validation_instances']}" in data
    assert '`{"enable_thinking": false}`' in data
    assert f"{metrics['train_sequences']} train and {metrics['validation_sequences']} validation sequences" in data
    assert "Games:** taboo, wordle" in data

    table = section(card, "## Hyperparameters")
    effective = config["per_device_train_batch_size"] * metrics["gradient_accumulation_steps"] * metrics["world_size"]
    for name, value in (("Learning rate", f"{config['learning_rate']:g}"),
                        ("Per-device batch size", config["per_device_train_batch_size"]),
                        ("Gradient accumulation", metrics["gradient_accumulation_steps"]),
                        ("Max sequence length", f"{config['max_length']} tokens"),
                        ("LoRA rank (r)", adapter["r"]), ("LoRA alpha", adapter["lora_alpha"]),
                        ("LoRA dropout", f"{adapter['lora_dropout']:g}"),
                        ("LoRA target modules", ", ".join(sorted(adapter["target_modules"]))),
                        ("Quantization", "none"), ("Compute dtype", "float32"), ("Optimizer", metrics["optim"]),
                        ("Seed", config["seed"])):
        assert f"| {name} | {value} |" in table
    assert f"| Effective batch size | {effective} (" in table
    assert f"| Epochs / steps | {state['global_step']} steps ({state['epoch']:.2f} epochs) of max 3 steps" in table
    assert f"| LR scheduler | {config['lr_scheduler_type']} |" in table

    results = section(card, "## Validation results")
    assert f"| Validation loss (per assistant token) | {metrics['validation_loss']:.4f} |" in results
    assert f"| Validation token accuracy | {metrics['validation_token_accuracy']:.1%} |" in results
    assert f"`{Path(state['best_model_checkpoint']).name}`" in results

    compute = section(card, "## Compute")
    flops = float(state["total_flos"])
    exponent = len(str(int(flops))) - 1
    assert f"| Total FLOPs (Trainer estimate) | {flops / 10**exponent:.2f} × 10^{exponent} |" in compute
    assert f"| Training time | {metrics['train_runtime_s']:.1f} s" in compute
    assert f"| Hardware | {info['hardware']['devices']} |" in compute

    usage = section(card, "## Usage")
    registry = read(sft_run / "model_registry.json")[0]
    assert json.dumps(registry, indent=2) in usage
    assert f'PeftModel.from_pretrained(base, "{sft_run.resolve()}")' in usage
    assert f'"{info["base_model"]}"' in usage and "BitsAndBytesConfig" not in usage  # trained unquantized
    for mode in ("greedy", "best-of-n", "beam-search"):
        assert f"playprm eval --policy-model {registry['model_name']} --game-all --mode {mode}" in usage
    versions = section(card, "## Framework versions")
    assert all(f"{version}" in versions for version in info["versions"].values())


def test_card_command_adds_the_evaluation_from_a_report_and_names_the_hub_base(sft_run, shared_sample, tmp_path):
    import pandas as pd

    report = tmp_path / "report"
    assert main(["report", "--results-dir", str(shared_sample), "--out", str(report), "--resamples", "20"]) == 0
    assert main(["card", "--model-dir", str(sft_run), "--report", str(report), "--base-model-id",
                 "Qwen/Qwen3.5-27B", "--license", "apache-2.0", "--companion", "runs/prm"]) == 0
    card = (sft_run / "README.md").read_text()
    meta = front_matter(card)
    assert meta["base_model"] == "Qwen/Qwen3.5-27B" and meta["license"] == "apache-2.0"
    evaluation = section(card, "## Evaluation")
    assert card.index("## Evaluation") < card.index("## Usage")
    table = pd.read_csv(report / "results.csv", index_col=0)

    def scored(row, name: str) -> str:  # "–" where the report leaves the score blank (no static game played)
        if pd.isna(row[f"-, {name}"]):
            return "–"
        return f"{row[f'-, {name}']:.2f} [{row[f'-, {name} CI low']:.2f}, {row[f'-, {name} CI high']:.2f}]"

    for model, row in table.iterrows():
        assert f"| {model} | not recorded | – | {scored(row, 'clemscore')} | {scored(row, 'statscore')} |" in evaluation
        assert f"| {int(row['-, episodes'])} |" in evaluation
    assert "--prm-path runs/prm" in section(card, "## Usage")
    assert not PLACEHOLDERS.search(card)
    assert main(["card", "--model-dir", str(sft_run)]) == 0  # a later render keeps what card.json holds
    assert (sft_run / "README.md").read_text() == card


def test_prm_card_reports_auroc_brier_and_calibration_from_the_run(card_models, tmp_path):
    from test_train_prm import write_prm_data

    data = write_prm_data(tmp_path / "data", train=8, validation=4)
    out = tmp_path / "out"
    assert main(["train-prm", "--config", str(REPO_ROOT / "recipes/tiny/prm.yaml"), "--model",
                 str(card_models["policy"]), "--data", str(data), "--output-dir", str(out), *QUICK]) == 0
    card = (out / "README.md").read_text()
    metrics, state, info = read(out / "metrics.json"), read(out / "trainer_state.json"), read(out / "run_info.json")
    adapter = read(out / "adapter" / "adapter_config.json")
    assert not PLACEHOLDERS.search(card)
    meta = front_matter(card)
    assert meta["pipeline_tag"] == "text-classification" and "process-reward-model" in meta["tags"]
    for heading in SFT_SECTIONS:
        assert heading + "\n" in card
    results = section(card, "## Validation results")
    assert f"| AUROC | {metrics['validation_auroc']:.4f} |" in results
    assert f"| Brier score | {metrics['validation_brier']:.4f} |" in results
    assert f"| Labelled validation turns | {metrics['validation_count']} |" in results
    for row in (b for b in metrics["calibration"] if b["count"]):
        assert f"| {row['low']:.1f}–{row['high']:.1f} | {row['count']} | {row['mean_probability']:.3f} |" in results
    assert "![Calibration of the PRM on the validation turns](calibration.png)" in results
    assert "no `dataset_summary.json`" in section(card, "## Training data")
    wordle = info["samples_per_game"]["wordle"]
    assert f"| wordle | {wordle['train']} | {wordle['validation']} |" in section(card, "## Training methodology")
    assert wordle == {"train": 24, "validation": 12}  # 8 and 4 episodes of 3 turns
    assert f"| LoRA rank (r) | {adapter['r']} |" in section(card, "## Hyperparameters")
    assert f"| Loss | {metrics['loss']} |" in section(card, "## Hyperparameters")
    assert f"{state['global_step']} optimizer steps" in card
    assert f'PRMScorer.from_path("{out.resolve()}")' in section(card, "## Usage")

"""What a command prints besides its work: an argument error before the heavy libraries load, no third-party notice
a user can do nothing about, training logs as numbers, a JSON error that reads as a sentence."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "trl", "clemcore.clemgame")


def test_an_argument_error_is_one_line_before_torch_transformers_or_clemcores_games_load(tmp_path):
    # sys.modules of the process itself, not its time: what was imported is what costs the seconds
    script = ("import json, sys\n"
              "from playprm.cli import main\n"
              "code = main(['eval', '--policy-model', 'nope', '--game', 'wordle', '--limit', '-3', '--results-dir',"
              " sys.argv[1]])\n"
              f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]))\n")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "r")], capture_output=True, text=True,
                            timeout=120)
    assert json.loads(result.stdout.splitlines()[-1]) == [2, []]
    assert result.stderr.strip() == ("playprm eval: error: --limit -3 must be at least 1 (it plays the first N "
                                     "instances of each experiment); leave it out to play all")


def test_deepspeeds_cpu_notice_and_the_checkpointing_futurewarning_are_silenced_and_other_warnings_kept():
    # a fresh process: DeepSpeed logs its notice when it is first imported (on a machine without CUDA)
    script = """
import logging, warnings
from playprm.cli import quiet_library_notices
quiet_library_notices()
import deepspeed
logging.getLogger("DeepSpeed").warning("another DeepSpeed warning")
from transformers import GPT2Config, GPT2LMHeadModel
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=1, n_embd=4, vocab_size=8, n_positions=8))
model.is_gradient_checkpointing  # what TRL and PEFT read
warnings.warn("another FutureWarning", FutureWarning)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    printed = result.stdout + result.stderr
    assert "Setting accelerator to CPU" not in printed and "is_gradient_checkpointing" not in printed
    assert "another DeepSpeed warning" in printed and "another FutureWarning" in printed


@pytest.mark.parametrize("disable_tqdm", [False, True])  # the progress bar's printer, or PrinterCallback
def test_training_logs_print_numbers_not_strings(disable_tqdm, tmp_path, capsys):
    import torch
    from datasets import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from playprm.train.run_dir import print_logs_as_numbers

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=1, n_embd=8, vocab_size=16, n_positions=8))
    rows = [{"input_ids": [1, 2, 3, 4], "labels": [1, 2, 3, 4]}] * 2
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=1, logging_steps=1, per_device_train_batch_size=2,
                             report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=disable_tqdm)
    trainer = Trainer(model=model, args=args, train_dataset=Dataset.from_list(rows))
    print_logs_as_numbers(trainer)
    trainer.train()
    logs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert logs and isinstance(logs[0]["loss"], float) and isinstance(logs[0]["learning_rate"], float)
    assert "total_flos" not in logs[-1] and isinstance(logs[-1]["train_runtime"], float)


def test_a_broken_json_line_says_what_and_where_in_words(tmp_path):
    from playprm.errors import UsageError
    from playprm.train.dataset_files import read_jsonl

    path = tmp_path / "train.jsonl"
    path.write_text('{"messages": []}\n{"text": "a\tb"}\n')
    with pytest.raises(UsageError) as error:
        read_jsonl(path, lambda record: None, producer="sft-data")
    assert str(error.value) == (f"{path}:2: not valid JSON (invalid control character at line 2 column 12); every "
                                "line must be one JSON object, as `playprm sft-data` writes")

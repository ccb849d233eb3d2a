"""CPU threads by the model's size and the machine's load (``transformers_runtime.choose_cpu_threads``): the idle
cores for a large model, one thread for a small or unknown one or a busy machine, ``OMP_NUM_THREADS`` overrides, and
a bad override is one line before anything runs; a choice playprm made follows the idle cores between training steps
and generation batches (``follow_cpu_threads``), and the stage's record shows it."""

from __future__ import annotations

import json

import pytest
import torch

from playprm import transformers_runtime as runtime
from playprm.errors import UsageError


@pytest.fixture
def restore_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def write_weights(folder, shapes: dict[str, tuple[int, ...]]):
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file({name: torch.zeros(shape) for name, shape in shapes.items()}, str(folder / "model.safetensors"))
    return folder


def test_parameters_are_counted_from_the_weight_headers(tmp_path):
    folder = write_weights(tmp_path / "model", {"a": (3, 5), "b": (7,)})
    write_weights(tmp_path / "model-2", {"c": (2, 2)}).joinpath("model.safetensors").rename(
        folder / "model-00002.safetensors")
    assert runtime.model_parameters(folder) == 3 * 5 + 7 + 4
    # a LoRA adapter folder (train-sft's output: no config.json) counts its base, not its few adapter weights
    adapter = write_weights(tmp_path / "adapter", {"lora_A": (1, 1)})
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "base_model_name_or_path":
                                                             str(folder)}))
    assert runtime.model_parameters(adapter) == 3 * 5 + 7 + 4
    # a PRM folder (train-prm's: a head of a few numbers and a LoRA) counts the backbone it names
    prm = write_weights(tmp_path / "prm", {"head": (1, 3)})
    (prm / "prm_config.json").write_text(json.dumps({"format": "playprm-prm/1", "base_model": str(folder)}))
    assert runtime.model_parameters(prm) == 3 * 5 + 7 + 4
    # a hub id, a programmatic policy, a folder without weights: unknown
    for unknown in ("Qwen/Qwen3.5-27B", "programmatic:expert", tmp_path / "model-2", None):
        assert runtime.model_parameters(unknown) is None


def test_a_large_model_gets_the_idle_cores_and_a_small_or_unknown_one_or_a_busy_machine_one_thread():
    large, small = runtime.LARGE_MODEL_PARAMETERS, runtime.LARGE_MODEL_PARAMETERS - 1
    assert runtime.cpu_threads(large, 4) == 4
    assert runtime.cpu_threads(large, 3) == 3  # a core another process runs on is left to it
    for busy in (0, None):  # every core taken, or the load unknown
        assert runtime.cpu_threads(large, busy) == 1
    assert runtime.cpu_threads(small, 4) == 1
    assert runtime.cpu_threads(None, 4) == 1


def test_idle_cores_leave_out_what_other_processes_run(monkeypatch):
    readings = iter(["0.5 0.4 0.3 1/100 7\n", "9.0 8.0 7.0 9/100 7\n", "0.5 0.4 0.3 2/100 7\n"])
    monkeypatch.setattr(runtime.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(runtime, "usable_cores", lambda: 4)
    # running counts 1, 9, 2 (this thread included): the median is 1 other runnable thread, a passing burst ignored
    assert runtime.idle_cores(samples=3, pause=0, read=lambda: next(readings), own=lambda: 1) == 3
    # this process's own runnable threads (a torch worker still spinning) are not another process's load
    readings = iter(["0.5 0.4 0.3 3/100 7\n"] * 3)
    assert runtime.idle_cores(samples=3, pause=0, read=lambda: next(readings), own=lambda: 3) == 4
    assert 1 <= runtime._own_running() <= len(list(runtime.Path("/proc/self/task").glob("*")))

    def missing():
        raise FileNotFoundError("/proc/loadavg")
    assert runtime.idle_cores(read=missing) is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="on CUDA the CPU threads are left alone")
def test_the_choice_follows_the_model_unless_omp_num_threads_overrides_it(tmp_path, monkeypatch, restore_threads):
    folder = write_weights(tmp_path / "model", {"a": (2, 2)})
    monkeypatch.setattr(runtime, "LARGE_MODEL_PARAMETERS", 4)  # this 4-parameter model counts as large
    monkeypatch.setattr(runtime, "idle_cores", lambda: 2)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert runtime.choose_cpu_threads(folder) == 2 == torch.get_num_threads()
    assert runtime.choose_cpu_threads(tmp_path) == 1 == torch.get_num_threads()  # no weights: unknown
    monkeypatch.setattr(runtime, "idle_cores", lambda: 0)
    assert runtime.choose_cpu_threads(folder) == 1 == torch.get_num_threads()  # every core busy
    monkeypatch.setattr(runtime, "idle_cores", lambda: 2)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert runtime.choose_cpu_threads(folder) == 1 == torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert runtime.choose_cpu_threads(None) == 3 == torch.get_num_threads()


@pytest.mark.skipif(torch.cuda.is_available(), reason="on CUDA the CPU threads are left alone")
def test_a_bad_omp_num_threads_is_one_line_and_exit_2_before_anything_is_written(tmp_path, monkeypatch, capsys,
                                                                                restore_threads):
    from playprm.cli import main

    for bad in ("two", "0", "-1"):
        monkeypatch.setenv("OMP_NUM_THREADS", bad)
        with pytest.raises(UsageError, match="OMP_NUM_THREADS"):
            runtime.choose_cpu_threads(None)
    out = tmp_path / "results"
    assert main(["collect", "--policy-model", "programmatic:expert", "--game", "referencegame", "--limit", "1",
                 "--results-dir", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "OMP_NUM_THREADS" in error and "positive whole number" in error
    assert not out.exists()


@pytest.fixture
def following(tmp_path, monkeypatch, restore_threads):
    """A large model (by a lowered bar) whose threads playprm chooses, every call to ``follow_cpu_threads`` looking
    at the machine again; ``idle`` is the list of idle-core readings, the last repeated."""
    folder = write_weights(tmp_path / "model", {"a": (2, 2)})
    monkeypatch.setattr(runtime, "LARGE_MODEL_PARAMETERS", 4)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    idle = [1]
    monkeypatch.setattr(runtime, "idle_cores", lambda: idle.pop(0) if len(idle) > 1 else idle[0])
    yield folder, idle
    runtime._choice.following = False  # later tests' threads are not this model's


@pytest.mark.skipif(torch.cuda.is_available(), reason="on CUDA the CPU threads are left alone")
def test_a_choice_playprm_made_follows_the_idle_cores_and_the_record_shows_it(following, monkeypatch):
    folder, idle = following
    assert runtime.choose_cpu_threads(folder) == 1 and runtime.thread_record() == 1  # a short job holds a core
    started = runtime._choice.checked
    idle[:] = [2]  # the job ended
    assert runtime.follow_cpu_threads(now=started + 1) == 1  # not looked at again so soon
    assert runtime.follow_cpu_threads(now=started + runtime.FOLLOW_EVERY_SECONDS) == 2 == torch.get_num_threads()
    assert runtime.thread_record() == "1-2"
    idle[:] = [1]  # another job started: the core goes back
    assert runtime.follow_cpu_threads(now=started + 2 * runtime.FOLLOW_EVERY_SECONDS) == 1 == torch.get_num_threads()
    runtime.start_thread_record()  # the next stage's record starts from the threads set now
    assert runtime.thread_record() == 1
    # the user's count is kept to the end, and a small model keeps its one thread
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    runtime.choose_cpu_threads(folder)
    idle[:] = [2]
    assert runtime.follow_cpu_threads(now=started + 9 * runtime.FOLLOW_EVERY_SECONDS) == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(runtime, "LARGE_MODEL_PARAMETERS", 5)
    runtime.choose_cpu_threads(folder)
    assert runtime.follow_cpu_threads(now=started + 9 * runtime.FOLLOW_EVERY_SECONDS) == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="on CUDA the CPU threads are left alone")
def test_training_steps_and_generation_batches_follow_the_machine(following, card_models, tmp_path, monkeypatch):
    """train-sft (the trainers share ``training_callbacks``) and the policy's batched generation look again between
    units of work: with the tiny policy counted as large, the second core freed after the start is taken."""
    from test_train_sft import QUICK, TINY_RECIPE, write_sft_data
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from playprm.cli import main
    from playprm.models.base import PolicySpec
    from playprm.models.hf import HFPolicy

    _, idle = following
    monkeypatch.setattr(runtime, "LARGE_MODEL_PARAMETERS", 1)
    monkeypatch.setattr(runtime, "FOLLOW_EVERY_SECONDS", 0.0)
    idle[:] = [1, 1, 2]  # one core at the start and after the first step, two after the second
    assert main(["train-sft", "--config", str(TINY_RECIPE), "--model", str(card_models["policy"]), "--data",
                 str(write_sft_data(tmp_path / "data", train=4, validation=2)), "--output-dir", str(tmp_path / "out"),
                 *QUICK, "--max-steps", "2", "--eval-strategy", "no", "--save-strategy", "no"]) == 0
    assert runtime.thread_record() == "1-2"

    idle[:] = [1, 1, 2]  # the start, the first batch, the second batch
    runtime.choose_cpu_threads(card_models["policy"])
    policy = HFPolicy(PolicySpec("p", "hf", str(card_models["policy"])),
                      model=AutoModelForCausalLM.from_pretrained(card_models["policy"]),
                      tokenizer=AutoTokenizer.from_pretrained(card_models["policy"]))
    policy.max_batch_rows = 1  # two batches: each looks again
    policy.generate_ids([[1, 2, 3], [4, 5]], max_tokens=1)
    assert runtime.thread_record() == "1-2"

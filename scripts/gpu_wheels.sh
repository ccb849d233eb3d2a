#!/usr/bin/env bash
# Offline install for a GPU node: on a machine that reaches PyPI, download into one folder every wheel that a
# node whose Python already has PyTorch and the usual image packages needs to run playprm and its GPU check
# (playprm's own wheel, clemcore, TRL, datasets, bitsandbytes, nltk, english-words, ... and their dependencies),
# for the node's Python version and platform. A package the node has is brought too when playprm's dependencies
# need another version of it (clemcore needs pandas<3, datasets huggingface-hub<2); PyTorch and its CUDA libraries
# never are. Copy the folder to the node, then install with no network:
#   python3 -m pip install --no-index --no-deps DIR/*.whl
# (--no-deps: the folder is the whole closure; pip then never tries to reach an index or replace the node's torch).
#
# Usage, from anywhere:  bash scripts/gpu_wheels.sh [DIR]          (default DIR: gpu-wheels/ in the repository)
# Settings (environment):
#   PYTHON_VERSION  the node's Python, e.g. 3.12 (default) or 3.11
#   PLATFORMS       wheel platform tags the node accepts (default: manylinux_2_28 ... _2_17 and 2014, x86_64)
#   NODE_PACKAGES   what the node's Python already has; these and everything they depend on are left out
#                   (default: torch transformers peft accelerate numpy pandas matplotlib safetensors tokenizers)
#   NODE_FREEZE     the node's `pip freeze` output (a file): its real versions instead of NODE_PACKAGES' latest
#   EXTRA_PACKAGES  more requirements to bring (default: bitsandbytes, for the 4-bit QLoRA steps)
#   PYTHON          the Python that runs pip here (default: python3)
# Prints the folder's size at the end. Wheels (*.whl) are ignored by git.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mkdir -p "${1:-$repo/gpu-wheels}" && cd "${1:-$repo/gpu-wheels}" && pwd)
python=${PYTHON:-python3}
version=${PYTHON_VERSION:-3.12}
# every manylinux tag a glibc 2.28 node accepts (bitsandbytes publishes manylinux_2_24 only; without that tag pip
# falls back to an old pure-Python release)
default_platforms="$(for minor in $(seq 28 -1 17); do printf 'manylinux_2_%s_x86_64 ' "$minor"; done)manylinux2014_x86_64"
read -r -a platforms <<< "${PLATFORMS:-$default_platforms}"
read -r -a node <<< "${NODE_PACKAGES:-torch transformers peft accelerate numpy pandas matplotlib safetensors tokenizers}"
read -r -a extra <<< "${EXTRA_PACKAGES:-bitsandbytes}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

target=(--only-binary=:all: --python-version "$version" --implementation cp)
for platform in "${platforms[@]}"; do target+=(--platform "$platform"); done
pip() { PIP_FIND_LINKS= PIP_CONSTRAINT= "$python" -m pip --disable-pip-version-check "$@"; }

echo "playprm's wheel"
had_build=$([ -e "$repo/build" ] && echo yes || true)
rm -f "$dir"/playprm-*.whl
pip wheel --no-deps --no-build-isolation -q -w "$dir" "$repo" 2>/dev/null || pip wheel --no-deps -q -w "$dir" "$repo"
wheel=$(ls "$dir"/playprm-*.whl)
[ -n "$had_build" ] || rm -rf "$repo/build"  # setuptools' scratch folder from the build above

# What pip would install on the node for each set, resolved for its Python and platform (metadata only). A
# dependency published only as source (clemcore's pylatex) cannot be resolved for another platform: it is built
# here once (pure Python expected) and offered to the resolver from $work/built.
mkdir -p "$work/built"
resolve() {  # resolve REPORT REQUIREMENT...
  local report=$1 out requirement
  shift
  for _ in 1 2 3 4 5 6 7 8; do
    if out=$(pip install --dry-run --ignore-installed --quiet --report "$report" --target "$work/target" \
             --find-links "$work/built" "${target[@]}" "$@" 2>&1); then
      return 0
    fi
    requirement=$(sed -n 's/^ERROR: No matching distribution found for //p' <<< "$out" | head -1)
    if [ -z "$requirement" ]; then grep -v "^WARNING: Location" <<< "$out" >&2; return 1; fi
    echo "  $requirement is published as source only: building its wheel here"
    pip wheel --no-deps --quiet -w "$work/built" "$requirement" 2>&1 | grep -v "^WARNING: Location" || true
  done
  grep -v "^WARNING: Location" <<< "$out" >&2
  return 1
}
echo "resolving playprm ${extra[*]} for cp${version/./} on ${platforms[0]}"
resolve "$work/need.json" "$wheel" "${extra[@]}"
if [ -n "${NODE_FREEZE:-}" ]; then
  cp "$NODE_FREEZE" "$work/node.json"
else
  echo "resolving what the node has: ${node[*]}"
  resolve "$work/node.json" "${node[@]}"
fi

# the packages to bring: needed, not on the node; wheels built above are copied, the others downloaded
"$python" "$repo/scripts/gpu_wheels_select.py" "$work/need.json" "$work/node.json" "$work/built" "$dir" \
  > "$work/wanted.txt"
echo "downloading $(wc -l < "$work/wanted.txt") wheels"
pip download --no-deps --quiet -d "$dir" "${target[@]}" -r "$work/wanted.txt" 2>&1 | grep -v "^WARNING: Location" || true
missing=$("$python" "$repo/scripts/gpu_wheels_select.py" --check "$work/need.json" "$work/node.json" "$dir")
if [ -n "$missing" ]; then echo "not downloaded: $missing" >&2; exit 1; fi
echo "$(ls "$dir"/*.whl | wc -l) wheels in $dir: $(du -sh "$dir" | cut -f1)"
echo "on the node, offline:  python3 -m pip install --no-index --no-deps $dir/*.whl"

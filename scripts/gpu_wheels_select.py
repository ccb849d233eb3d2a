"""Part of scripts/gpu_wheels.sh: from ``pip install --report`` files (what playprm needs; what the node has, or
its ``pip freeze``), the packages to bring to the node.

  gpu_wheels_select.py NEED.json NODE.json BUILT_DIR DIR   copies wheels built in BUILT_DIR to DIR and prints
                                                            ``name==version`` for each one to download
  gpu_wheels_select.py --check NEED.json NODE.json DIR     prints the packages to bring that DIR has no wheel of
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# never brought: the node's own PyTorch build and the CUDA libraries that come with it
NEVER = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*)$")


def node_versions(path: str) -> dict[str, str]:
    """``{package: version}`` of the node: a ``pip install --report`` file (what pip would install there today),
    or the node's ``pip freeze`` output."""
    text = Path(path).read_text()
    if text.lstrip().startswith("{"):
        return {canonical(item["metadata"]["name"]): item["metadata"]["version"] for item in json.loads(text)["install"]}
    pins = (line.split("==", 1) for line in text.splitlines() if "==" in line and not line.startswith("#"))
    return {canonical(name): version.strip() for name, version in pins}


def to_bring(need_report: str, node: str) -> dict[str, dict]:
    """Items of the need report that the node lacks, or has at another version than playprm's dependencies resolve
    to (clemcore wants pandas<3, datasets huggingface-hub<2, ...); never PyTorch, never playprm's own wheel."""
    need = {canonical(item["metadata"]["name"]): item for item in json.loads(Path(need_report).read_text())["install"]}
    have = node_versions(node)
    return {name: item for name, item in sorted(need.items())
            if name != "playprm" and not NEVER.match(name) and have.get(name) != item["metadata"]["version"]}


def main(argv: list[str]) -> int:
    if argv[0] == "--check":
        wanted, folder = to_bring(argv[1], argv[2]), Path(argv[3])
        have = {canonical(path.name.split("-")[0]) for path in folder.glob("*.whl")}
        print(" ".join(name for name in wanted if name not in have))
        return 0
    wanted, built, folder = to_bring(argv[0], argv[1]), Path(argv[2]), Path(argv[3])
    for name, item in wanted.items():
        path = Path(unquote(urlparse(item["download_info"]["url"]).path))
        if path.parent == built:
            if not path.name.endswith("-none-any.whl"):
                print(f"warning: {path.name} was built for this machine, not for the node", file=sys.stderr)
            shutil.copy(path, folder)
        else:
            print(f"{name}=={item['metadata']['version']}")
    print(f"{len(wanted)} packages to bring", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

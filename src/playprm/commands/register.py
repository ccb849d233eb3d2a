"""``playprm register``: make this workspace's clemcore CLI see playprm's games, backend and a model entry."""

from __future__ import annotations

from pathlib import Path

from playprm import atomic
from playprm.errors import UsageError
from playprm.models import gguf

API_TEXT = ("# written by `playprm register`: the \"playprm\" backend for clemcore's `clem run`\n"
            "from playprm.models.clemcore_backend import PlayprmBackend  # noqa: F401\n")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "register", help="write game_registry.json, playprm_api.py (and a model entry) so `clem` sees them")
    parser.add_argument("--dir", type=Path, default=Path("."), help="workspace to write into (default: cwd)")
    parser.add_argument("--games-dir", type=Path,
                        help="also register this folder's games (e.g. a clembench checkout); they shadow built-in ones")
    parser.add_argument("--model-name", help="also add a model_registry.json entry with this name ...")
    parser.add_argument("--model-path", type=Path, help="... for this local HF model directory or .gguf file "
                        "(played by the playprm backend; clemcore's huggingface_local needs `import-gguf`'s folder)")
    parser.set_defaults(func=run)


def add_model_entry(directory: Path, name: str, model_path: Path, backend: str = "playprm") -> Path:
    """Append (or replace by name) a clemcore registry entry in ``directory/model_registry.json``."""
    from playprm.models.registry import write_registry_entry

    return write_registry_entry(directory, {
        "model_name": name, "backend": backend, "huggingface_id": str(model_path.resolve()),
        "model_config": {"engine": "hf", "premade_chat_template": True}})


def run(args) -> int:
    if not args.dir.is_dir():
        raise UsageError(f"--dir {args.dir} is not a directory")
    atomic.check_output_path(args.dir, "--dir")
    if bool(args.model_name) != bool(args.model_path):
        raise UsageError("--model-name and --model-path go together")
    if args.model_path and gguf.is_gguf_path(args.model_path):
        args.model_path = gguf.check_file(args.model_path, flag="--model-path")
    elif args.model_path and not (args.model_path / "config.json").is_file():
        raise UsageError(f"--model-path {args.model_path} holds no config.json; give a Hugging Face model folder")
    from playprm.games.registry import write_game_registry

    print(f"games:   {write_game_registry(args.dir, args.games_dir)}")
    print(f"backend: {atomic.write_text(args.dir / 'playprm_api.py', API_TEXT)}")
    if args.model_name:
        print(f"model:   {add_model_entry(args.dir, args.model_name, args.model_path)}")
    return 0

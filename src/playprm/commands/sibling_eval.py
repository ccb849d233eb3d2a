"""``playprm sibling-eval``: how well PRMs order replies to one context, all on one prm-data folder's pairs.

Best-of-N asks a PRM which of several replies to the same context is better. ``train-prm`` reports that on its own
validation split (``validation_sibling_*`` in metrics.json); two PRMs trained on different data have different
validation splits, so to compare them this command scores the same records with each: the chosen split of one
``prm-data`` folder (default ``validation.jsonl``, instances no PRM trained on when both came from data split with
the same seed; a folder built from held-out instances with ``--split all``). Only contexts with two different
replies are scored. Output: sibling accuracy and per-game Δ/σ per PRM (``prm_metrics.sibling_metrics``, also per
player role), and each PRM's sibling accuracy minus the first one's on the same pairs with a 95% bootstrap CI over
contexts (``prm_metrics.paired_sibling_difference``), printed and written to ``OUT/siblings.json``.
"""

from __future__ import annotations

from pathlib import Path

SPLIT_FILES = {"validation": ("validation.jsonl",), "train": ("train.jsonl",),
               "all": ("train.jsonl", "validation.jsonl")}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sibling-eval", help="score one prm-data folder's sibling replies with several PRMs: sibling accuracy, "
                             "per-game Δ/σ and paired differences on the same pairs")
    parser.add_argument("--prm-path", required=True, action="append", type=Path, metavar="DIR",
                        help="a train-prm output folder (repeat: every PRM scores the same pairs; the first is "
                             "the reference of the paired differences)")
    parser.add_argument("--data", required=True, type=Path, help="a prm-data folder (mc or advantage labels)")
    parser.add_argument("--split", choices=tuple(SPLIT_FILES), default="validation",
                        help="which records to score (default validation)")
    parser.add_argument("--out", type=Path, help="folder for siblings.json (default: print only)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.set_defaults(func=run)


def sibling_records(records: list[dict]) -> list[dict]:
    """The records whose context holds at least two different replies (the only ones a sibling pair can use)."""
    from playprm.data.rollout_tree import context_key
    from playprm.models.replies import move

    replies: dict[tuple, set] = {}
    for record in records:
        replies.setdefault(context_key(record), set()).add(move(record["response"]))
    return [record for record in records if len(replies[context_key(record)]) > 1]


def score_records(scorer, records: list[dict], chunk: int = 64) -> list[float]:
    """The scorer's score of every record's reply in its context, in record order (contexts batched)."""
    scores = []
    for start in range(0, len(records), chunk):
        batch = records[start:start + chunk]
        scores += [group[0] for group in scorer.score([r["messages"] for r in batch], [[r["response"]] for r in batch])]
    return scores


def run(args) -> int:
    from playprm.atomic import check_output_path, write_json
    from playprm.errors import UsageError
    from playprm.prm.model import read_prm_config
    from playprm.prm.scorer import PRMScorer
    from playprm.train.dataset_files import prm_record_problem, read_jsonl
    from playprm.train.prm_metrics import paired_sibling_difference, sibling_metrics, sibling_pairs
    from playprm.transformers_runtime import choose_cpu_threads, model_parameters

    if args.out:
        check_output_path(args.out, "--out")
    for path in args.prm_path:
        read_prm_config(path)  # a one-line error before any model loads
    records = [record for name in SPLIT_FILES[args.split]
               for record in read_jsonl(args.data / name, prm_record_problem, producer="prm-data")]
    records = sibling_records(records)
    if not records:
        raise UsageError(f"no context in {args.data} ({args.split}) holds two different replies; build the data from "
                         "branched rollouts (`playprm collect --branch-factor 2`, `playprm prm-data --labels mc`)")
    choose_cpu_threads(max(args.prm_path, key=lambda path: model_parameters(path) or 0))  # the largest backbone's
    roles = sorted({(r.get("meta") or {}).get("game_role") or "" for r in records})
    result: dict = {"data": str(args.data), "split": args.split, "records": len(records), "prms": {}}
    pairs = {}
    for path in args.prm_path:
        scores = score_records(PRMScorer.from_path(path), records)
        pairs[str(path)] = sibling_pairs(records, scores)
        by_role = {role: sibling_metrics([r for r in records if ((r.get("meta") or {}).get("game_role") or "") == role],
                                         [s for r, s in zip(records, scores)
                                          if ((r.get("meta") or {}).get("game_role") or "") == role])
                   for role in roles if role}
        result["prms"][str(path)] = {**sibling_metrics(records, scores), "by_role": by_role}
    reference = str(args.prm_path[0])
    result["paired_accuracy_minus_first"] = {
        str(path): paired_sibling_difference(pairs[str(path)], pairs[reference], seed=args.seed)
        for path in args.prm_path[1:]}
    for path, metrics in result["prms"].items():
        print(f"{path}: sibling accuracy {metrics.get('sibling_accuracy', float('nan')):.3f} over "
              f"{metrics.get('sibling_pairs', 0)} pairs ({metrics.get('sibling_contexts', 0)} contexts), "
              f"Δ/σ {metrics.get('sibling_delta_over_sigma', float('nan')):.3f}")
        for role, row in metrics["by_role"].items():
            print(f"  {role}: accuracy {row.get('sibling_accuracy', float('nan')):.3f} over "
                  f"{row.get('sibling_pairs', 0)} pairs, Δ/σ {row.get('sibling_delta_over_sigma', float('nan')):.3f}")
    for path, difference in result["paired_accuracy_minus_first"].items():
        if difference.get("pairs"):
            print(f"{path} - {reference}: {difference['difference']:+.3f} [{difference['low']:+.3f}, "
                  f"{difference['high']:+.3f}] (95% CI, bootstrap over {difference['contexts']} contexts)")
    if args.out:
        write_json(Path(args.out) / "siblings.json", result)
        print(f"wrote {Path(args.out) / 'siblings.json'}")
    return 0

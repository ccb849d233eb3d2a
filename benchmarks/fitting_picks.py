"""How often a best-of-N pick on guessthenumber keeps to the hints, when one of its N samples did (issue 62).

The room of a verifier is the turns where the policy's samples hold a move that fits all the hints so far (inside
the range the hints leave, not tried before). This reads a best-of-N run's ``candidates.jsonl`` files (``playprm
eval --mode best-of-n``) and, for each turn after the first, replays the hints from the chosen guesses: whether any
of the N candidates fits, whether the chosen one does, and the share a random pick among the N would reach.

    python benchmarks/fitting_picks.py RESULTS_DIR [RESULTS_DIR ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from playprm.games.builtin.guessthenumber import rules


def fitting_picks(results: Path) -> dict:
    """Counts over every guessthenumber episode under ``results`` (turns after the first)."""
    turns = holding = picked = 0
    chance = 0.0
    for candidates_file in sorted(results.rglob("candidates.jsonl")):
        number = json.loads((candidates_file.parent / "instance.json").read_text(encoding="utf-8"))["number"]
        history: list = []
        for line in candidates_file.read_text(encoding="utf-8").splitlines():
            turn = json.loads(line)
            left = set(rules.options(tuple(history))) - {guess for guess, _ in history}
            fits = [rules.last_guess(c["text"]) in left for c in turn["candidates"]]
            if history:
                turns += 1
                if any(fits):
                    holding += 1
                    picked += fits[turn["chosen"]]
                    chance += sum(fits) / len(fits)
            guess = rules.last_guess(turn["candidates"][turn["chosen"]]["text"])
            hint = None if guess is None or rules.invalid_reason(guess) else rules.hint(guess, number)
            if hint is None:  # the episode ended here (a win or a move the game refused)
                break
            history.append((guess, hint))
    return {"turns": turns, "holding": holding, "picked": picked, "chance": chance}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    print("| run | turns after the first | with a fitting sample | chosen fits | a random pick of the N |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for path in argv:
        c = fitting_picks(Path(path))
        picked, chance = (f"{100 * c[k] / c['holding']:.0f} %" if c["holding"] else "" for k in ("picked", "chance"))
        print(f"| {path} | {c['turns']} | {c['holding']} | {c['picked']} ({picked}) | {chance} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

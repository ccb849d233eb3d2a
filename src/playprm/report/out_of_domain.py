"""Games a policy never trained on: per game, each policy's clemscore and % played, each paired against the
policies before it (the base, then the SFT policy) on the same instances.

clemscore differences come from ``report.paired``'s paired bootstrap (blank, "no clemscore", where a run played
no episode of the game to the end), % played differences from ``report.paired_games``'. A game where every
policy's clemscore is 0 or blank measures nothing at this size, and its rows say so.
"""

from __future__ import annotations

from pathlib import Path

from playprm.report.paired import paired_difference, run_episodes
from playprm.report.paired_games import per_game_differences
from playprm.report.render import finite_number

NOTHING = "measures nothing at this size"  # every policy's clemscore 0 or blank


def out_of_domain(runs: dict[str, Path], *, n_resamples: int = 1000, seed: int = 0) -> list[dict]:
    """One record per (game, policy) of ``runs`` (policy name -> results dir, in table order: the base first):
    episodes, clemscore (None: no episode played to the end), % played, and ``against``: for each policy before
    it, the paired clemscore and % played differences with their 95% CIs. ``measures_nothing`` marks a game where
    no policy scored above 0."""
    frames = {name: run_episodes(path) for name, path in runs.items()}
    games = sorted({game for frame in frames.values() for game in frame["game"]})
    records = []
    for game in games:
        of_game = {name: frame[frame["game"] == game] for name, frame in frames.items()
                   if (frame["game"] == game).any()}
        rows = []
        for index, (name, frame) in enumerate(of_game.items()):
            played = 100.0 * float(frame["played"].mean())
            clemscore = played / 100.0 * float(frame["quality"].mean()) if played > 0 else None
            against = {}
            for other in list(of_game)[:index]:
                score = paired_difference(frame, of_game[other], names=(name, other), n_resamples=n_resamples,
                                          seed=seed)
                (share,) = per_game_differences(frame, of_game[other], n_resamples=n_resamples, seed=seed)
                against[other] = {"clemscore": _difference(score.difference, (score.low, score.high)),
                                  "played": _difference(share.played, share.played_ci), "episodes": score.episodes}
            rows.append({"game": game, "policy": name, "episodes": len(frame), "clemscore": finite_number(clemscore),
                         "percent_played": finite_number(played), "against": against})
        nothing = all(not row["clemscore"] for row in rows)
        records += [{**row, "measures_nothing": nothing} for row in rows]
    return records


def render_out_of_domain(records: list[dict], baselines: tuple[str, ...]) -> str:
    """A Markdown table of ``out_of_domain``'s records: per game and policy, clemscore and % played, each with its
    paired difference against each of ``baselines`` (run names) where that baseline came before it."""
    from playprm.report.render import number
    from playprm.tables import markdown_table

    def cell(row, baseline, kind):
        found = row["against"].get(baseline)
        if found is None:
            return ""
        d = found[kind]
        if d["difference"] is None:
            return "no clemscore"
        return f"{d['difference']:+.2f} [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}]"

    headers = ["game", "policy", "episodes", "clemscore",
               *(f"clemscore − {b} [paired 95% CI]" for b in baselines), "% played",
               *(f"% played − {b} [paired 95% CI]" for b in baselines)]
    rows = [[f"{r['game']} ({NOTHING})" if r["measures_nothing"] else r["game"], r["policy"], str(r["episodes"]),
             number(r["clemscore"]) if r["clemscore"] is not None
             else "no clemscore (0 % played)" if r["percent_played"] == 0 else "no clemscore",
             *(cell(r, b, "clemscore") for b in baselines), number(r["percent_played"]),
             *(cell(r, b, "played") for b in baselines)] for r in records]
    return markdown_table(headers, rows)


def _difference(point: float, interval) -> dict:
    return {"difference": finite_number(point), "ci": [finite_number(interval[0]), finite_number(interval[1])]}


"""The results layout, owned here: clemcore's ``<results>/<model-pair>/<game>/<experiment>/<episode>/``.

- ``layout``: every file and folder name, the finished-episode rule, the staging (dot-folder) rule and the one
  walker every reader uses;
- ``read``: episodes on disk of both generations as ``EpisodeRecord`` (``iter_episodes``, ``scan_results``), and
  each guided turn an episode logged (``candidate_records``, the one reader of ``candidates.jsonl``);
- ``staging``: writing a folder beside its place, then renaming it in one step;
- ``run_record``: a run's ``playprm_run.json`` (its decoding mode and fingerprint) and the claim of a run folder;
- ``merge``: joining shard results dirs into one.
"""

from playprm.results.read import (
    OUTCOMES,
    EpisodeRecord,
    PlayerInfo,
    RecordedTurn,
    ResultsScan,
    alternating,
    candidate_records,
    episode_scores_oddities,
    episode_scores_problem,
    iter_episodes,
    read_json,
    scan_results,
)

__all__ = ["OUTCOMES", "EpisodeRecord", "PlayerInfo", "RecordedTurn", "ResultsScan", "alternating", "candidate_records",
           "episode_scores_oddities", "episode_scores_problem",
           "iter_episodes", "read_json", "scan_results"]

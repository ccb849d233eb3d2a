"""What every dataset line carries about its origin (files are written by ``atomic.write_jsonl(..., allow_nan=False)``)."""

from __future__ import annotations

from playprm.results import EpisodeRecord, PlayerInfo
from playprm.results.layout import instance_key

# the meta keys of Playpen's records (colab-potsdam/playpen-data, examples/trl/data_utils.py), in its order
PLAYPEN_META = ("game", "experiment", "game_id", "player_name", "game_role", "model", "outcome")
CLEMCORE_TO_PLAYPEN_OUTCOME = {"success": "success", "lose": "failure", "aborted": "aborted"}  # clemcore's word -> Playpen's


def episode_meta(episode: EpisodeRecord, player: PlayerInfo) -> dict:
    """The ``meta`` block of a sample drawn from ``player``'s side of ``episode``.

    ``model`` is the player's model; ``model_folder`` the results folder it was read from; ``game_id_source``
    says whether the game id is the real instance id or, for older records without one, the episode folder.
    """
    return {
        "game": episode.game,
        "experiment": episode.experiment,
        "game_id": episode.game_id,
        "episode": episode.episode,
        "player": player.name,
        "game_role": player.game_role,
        "model": player.model_name,
        "outcome": episode.outcome,
        "model_folder": episode.model,
        "game_id_source": episode.game_id_source,
    }


def playpen_meta(episode: EpisodeRecord, player: PlayerInfo) -> dict:
    """``episode_meta`` as Playpen writes it: its seven keys first (``player_name`` the player, ``outcome`` in its
    words: clemcore's lose is ``failure``, unknown is None), then playprm's own (episode, player, model_folder,
    game_id_source), so Playpen's filters and training code read our SFT files as they read its dataset."""
    meta = episode_meta(episode, player)
    playpen = {**{key: meta.get(key) for key in PLAYPEN_META}, "player_name": player.name,
               "outcome": CLEMCORE_TO_PLAYPEN_OUTCOME.get(episode.outcome)}
    return {**playpen, **{key: value for key, value in meta.items() if key not in playpen}}


def instance_of(record: dict) -> tuple[str, str, str]:
    """The instance ``(game, experiment, game_id)`` a dataset record comes from, as the split keys it."""
    meta = record["meta"]
    return instance_key(meta["game"], meta["experiment"], meta["game_id"])


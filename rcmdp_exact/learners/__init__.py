"""The paper's six sampled learners on numpy MLPs, judged by exact evaluation.

``train(model, algorithm, ...)`` runs PG, CPG, the three RCPG variants or Adversarial
RCPG (:data:`ALGORITHMS`) and returns a :class:`TrainResult` (``policy_table()``,
``records``, ``save``); :func:`load` reads a saved result back.  The per-step loop is
compiled by numba (imported only when training starts); ``docs/learners.md`` gives
every choice, its source and the measured speed.
"""

from .base import ALGORITHMS, Algorithm, Settings
from .records import EPISODE_RECORDS, TrainResult, load
from .training import train

__all__ = ["ALGORITHMS", "EPISODE_RECORDS", "Algorithm", "Settings", "TrainResult", "load",
           "train"]

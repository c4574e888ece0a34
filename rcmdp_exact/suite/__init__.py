r"""A certified benchmark suite of robust constrained MDPs.

The instances that robust and safe RL papers use (RiverSwim, chains, machine
replacement, inventory, forest management, gridworlds, FrozenLake, CliffWalking, Taxi,
the paper's three domains, Garnets), each with a natural constraint and a budget rule
(:mod:`.instances`); a grid of uncertainty sets per instance (:mod:`.sets`); and, in a
versioned data file shipped with the package (``data/values.json.gz``), the
certified values of every (instance, set, radius): the
nominal optimum, the CMDP optimum, the robust optimum without constraints, the least
worst-case cost and the RCMDP bracket with its lower policy (:mod:`.certify`).  The
leaderboard scores learners exactly against them (:mod:`.leaderboard`).  ``docs/suite.md``
describes it all; ``rcmdp suite list | show | verify | certify | score | figure``
is its command line.

>>> from rcmdp_exact import suite
>>> "riverswim-6" in suite.names()
True
>>> model, uset, record = suite.load("riverswim-6", set="l1", radius=0.1)
>>> record["bracket"]["lower"] <= record["bracket"]["upper"]
True
"""

from __future__ import annotations

from .store import (
    BASELINES,
    DATA,
    DATA_FILE,
    NAMES,
    Loaded,
    data,
    definition,
    instance,
    load,
    names,
    policies,
    record,
)

__all__ = ["BASELINES", "DATA", "DATA_FILE", "NAMES", "Loaded", "data", "definition", "instance",
           "load", "names", "policies", "record", "score", "verify"]


def score(trainer=None, algorithms=("pg",), names=None, seeds=(0, 1, 2), episodes=1000,
          **kwargs):
    """Train and score learners on the suite exactly: :func:`.leaderboard.score`."""
    from . import leaderboard

    return leaderboard.score(trainer, algorithms, names, seeds, episodes, **kwargs)


def verify(names=None, **kwargs):
    """Re-certify the stored lower sides: :func:`.recertify.verify`."""
    from . import recertify

    return recertify.verify(names, **kwargs)

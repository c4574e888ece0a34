r"""A certified benchmark suite of robust constrained MDPs.

The instances that robust and safe RL papers use (RiverSwim, chains, machine
replacement, inventory, forest management, gridworlds, FrozenLake, CliffWalking, Taxi,
the paper's three domains, Garnets), each with a natural constraint and a budget rule
(:mod:`.instances`); a grid of uncertainty sets per instance (:mod:`.sets`); and, in a
versioned data file shipped with the package (``data/values.json.gz``), the
certified values of every (instance, set, level): the
nominal optimum, the CMDP optimum, the robust optimum without constraints, the least
worst-case cost and the RCMDP bracket with its lower policy (:mod:`.certify`).  The
leaderboard scores learners exactly against them (:mod:`.leaderboard`).  The instances
are frozen as package data with a checksum each (:mod:`.frozen`).  ``docs/suite.md``
describes it all; ``rcmdp suite list | show | verify | certify | score | figure``
is its command line.

A set of the grid is named by its kind and its **level** r (0.05, 0.1, 0.2: the radius
of the L1 ball it is matched to); its **radius** is the kind's own
(:func:`.sets.radius_of`: r^2/2 for the KL ball, r/2 for the interval set), the number
``--set KIND --radius R`` means elsewhere in the toolkit.

>>> from rcmdp_exact import suite
>>> "riverswim-6" in suite.names()
True
>>> model, uset, record = suite.load("riverswim-6", set="l1", level=0.1)
>>> record["bracket"]["lower"] <= record["bracket"]["upper"]
True
"""

from __future__ import annotations

from .store import (
    BASELINES,
    DATA,
    DATA_FILE,
    NAMES,
    ONLY_KINDS,
    Loaded,
    data,
    definition,
    instance,
    load,
    names,
    policies,
    record,
)

__all__ = ["BASELINES", "DATA", "DATA_FILE", "NAMES", "ONLY_KINDS", "Loaded", "data",
           "definition", "instance", "load", "names", "policies", "record", "score", "verify"]


def score(trainer=None, algorithms=("pg",), names=None, seeds=range(10), episodes=1000,
          **kwargs):
    """Score learners, baselines and planners on the suite exactly:
    :func:`.leaderboard.score`."""
    from . import leaderboard

    return leaderboard.score(trainer, algorithms, names, seeds, episodes, **kwargs)


def verify(names=None, **kwargs):
    """Check every field of every record by a second method: :func:`.recertify.verify`."""
    from . import recertify

    return recertify.verify(names, **kwargs)

r"""A certified benchmark suite of robust constrained MDPs.

The instances that robust and safe RL papers use (RiverSwim, chains, machine
replacement, inventory, forest management, gridworlds, FrozenLake, CliffWalking, Taxi,
the paper's three domains, Garnets), each with a natural constraint and a budget rule
(:mod:`.instances`); a grid of uncertainty sets per instance (:mod:`.sets`); and, in a
versioned data file shipped with the package (``data/values.json`` and
``data/policies.npz``), the certified values of every (instance, set, radius): the
nominal optimum, the CMDP optimum, the robust optimum without constraints, the least
worst-case cost and the RCMDP bracket with its lower policy (:mod:`.certify`).  The
leaderboard scores learners exactly against them (:mod:`.score`).  ``docs/suite.md``
describes it all; ``rcmdp suite list | show | verify | certify | score | leaderboard``
is its command line.

>>> from rcmdp_exact import suite
>>> "riverswim-6" in suite.names()
True
>>> model, uset, record = suite.load("riverswim-6", set="l1", radius=0.1)
>>> record["bracket"]["lower"] <= record["bracket"]["upper"]
True
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

__all__ = ["DATA", "Loaded", "data", "instance", "load", "names", "policies", "record"]

#: The folder of the shipped data files.
DATA = Path(__file__).parent / "data"


def names() -> list[str]:
    """The names of the suite's instances, in the order of the data file."""
    from .instances import INSTANCES

    return list(INSTANCES)


def _check_name(name: str):
    from .._checks import InputError
    from .instances import INSTANCES

    if name not in INSTANCES:
        raise InputError(f"unknown instance {name!r}; the suite has {', '.join(INSTANCES)}")
    return INSTANCES[name]


@lru_cache(maxsize=4)
def _read(path: str, stamp: float) -> dict:
    return json.loads(Path(path).read_text())


def data(path=None) -> dict:
    """The data file (``values.json``) as a dict: its header and ``records``."""
    from .._io import LoadError

    p = Path(path) if path is not None else DATA / "values.json"
    if p.is_dir():
        p = p / "values.json"
    if not p.exists():
        raise LoadError(f"no suite data file at {str(p)!r}; regenerate it with rcmdp "
                        f"suite certify")
    return _read(str(p), p.stat().st_mtime)


def record(name: str, set: str = "l1", radius: float = 0.1, *, path=None) -> dict | None:
    """The certified record of (``name``, ``set``, ``radius``), or None when the data
    file has none.  ``radius`` is the grid's r (``suite.sets.RADII``); the kind's own
    radius is the record's ``radius``."""
    _check_name(name)
    from .certify import key_of

    key = key_of(name, set, radius)
    for rec in data(path)["records"]:
        if rec["key"] == key:
            return rec
    return None


def policies(path=None) -> dict:
    """The stored policies, ``{"<key>/lower": (S, A), "<key>/free": (S, A)}``."""
    import numpy as np

    p = Path(path) if path is not None else DATA
    p = p if p.suffix == ".npz" else (p.parent if p.suffix == ".json" else p) / "policies.npz"
    with np.load(p) as f:
        return {k: f[k] for k in f.files}


class Loaded(NamedTuple):
    """What :func:`load` returns: the model (with the budget of the set), the set and
    the certified record (None when the data file has none)."""

    model: object
    set: object
    record: dict | None


def load(name: str, set: str = "l1", radius: float = 0.1, *, path=None) -> Loaded:
    """The instance ``name`` with the set ``set`` of the grid's radius ``radius``:
    ``(model, uset, record)``.

    The model's budget is the record's (the instance's rule, computed when the data
    file was generated); without a record it is computed by the rule now
    (:func:`.sets.budget`).
    """
    from .._checks import InputError
    from .sets import KINDS, RADII, budget, build_set

    inst = _check_name(name)
    if set not in KINDS:
        raise InputError(f"unknown set {set!r}; the suite's sets are {', '.join(KINDS)}")
    if not any(abs(float(radius) - r) < 1e-12 for r in RADII):
        raise InputError(f"radius {radius!r} is not on the suite's grid; give one of "
                         f"{', '.join(map(str, RADII))}")
    radius = min(RADII, key=lambda r: abs(r - float(radius)))
    base = inst.build()
    uset = build_set(base, set, radius, inst.support)
    from .._io import LoadError

    try:
        rec = record(name, set, radius, path=path)
    except LoadError:  # no data file: the budget is computed below
        rec = None
    if rec is not None:
        d = rec["budget"]
    else:
        d, _ = budget(base, uset, inst.budget_rule)
    return Loaded(base.replace(d=d), uset, rec)


def instance(name: str):
    """The model of instance ``name`` with the budget of the reference set (the L1 ball
    of radius 0.1, :data:`.sets.REFERENCE`)."""
    from .sets import REFERENCE

    return load(name, REFERENCE[0], REFERENCE[1]).model

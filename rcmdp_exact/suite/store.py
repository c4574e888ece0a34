"""The suite's store: the names of its instances, their definitions and the shipped data
file of certified values, read once and cached; the package's face
(:mod:`rcmdp_exact.suite`) shows these names, and the suite's own modules
(:mod:`.leaderboard`, :mod:`.recertify`, :mod:`.report`) take them from here, not from the
face that imports them (no import circle).  Nothing here imports numpy at load, so the
command line can check an instance's name quickly.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

__all__ = ["BASELINES", "DATA", "DATA_FILE", "NAMES", "Loaded", "data", "definition",
           "instance", "load", "names", "policies", "record"]

#: The names of the instances, in the order of the data file (the keys of
#: :data:`.instances.INSTANCES`, kept here so that the command line can check a name
#: without importing numpy).
NAMES = ("riverswim-6", "riverswim-20", "chain-10", "machine-10", "machine-20",
         "inventory-50", "forest-10", "grid-5x5", "frozenlake-4x4", "frozenlake-8x8",
         "cliffwalking", "taxi", "paper-inventory", "paper-nav1", "paper-nav2",
         "garnet-15x5-s0", "garnet-15x5-s1", "garnet-15x5-s2")
#: The plain baselines of :func:`rcmdp_exact.suite.score` besides the six learners: "tabular" (a
#: tabular Lagrangian actor-critic, :mod:`.baseline`) and "uniform" (the uniform
#: random policy, the RCMDP literature's comparison).
BASELINES = ("tabular", "uniform")

#: The folder of the shipped data file.
DATA = Path(__file__).parent / "data"
#: The shipped data file (gzip-compressed JSON; ``rcmdp suite certify`` regenerates it).
DATA_FILE = DATA / "values.json.gz"


def names() -> list[str]:
    """The names of the suite's instances, in the order of the data file."""
    return list(NAMES)


def definition(name: str):
    """The :class:`~.instances.Instance` of ``name`` (its builder, constraint, budget
    rule, support, citation), or an :class:`~rcmdp_exact.InputError` naming the
    instances."""
    from .._checks import InputError
    from .instances import INSTANCES

    if not isinstance(name, str) or name not in INSTANCES:
        raise InputError(f"unknown instance {name!r}; the suite has {', '.join(INSTANCES)} "
                         f"(rcmdp_exact.suite.names())")
    return INSTANCES[name]


@lru_cache(maxsize=4)
def _read(path: str, stamp: float, size: int) -> dict:
    import gzip

    from .._io import LoadError
    from .certify import SCHEMA

    raw = Path(path).read_bytes()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        payload = json.loads(raw)
    except (OSError, ValueError, EOFError) as exc:
        raise LoadError(f"{path!r} is not a suite data file ({exc}); give the file written "
                        f"by rcmdp suite certify") from None
    if not isinstance(payload, dict) or "records" not in payload:
        raise LoadError(f"{path!r} is not a suite data file (no records); give the file "
                        f"written by rcmdp suite certify")
    if payload.get("schema") != SCHEMA:
        raise LoadError(f"{path!r} has schema {payload.get('schema')!r}; this version reads "
                        f"schema {SCHEMA}: regenerate it with rcmdp suite certify")
    return payload


def data(path=None) -> dict:
    """The data file (default: the shipped one, :data:`DATA_FILE`) as a dict: its
    header (``schema``, ``toolkit``, ``settings``, ``wall_seconds``, ...) and
    ``records``, one per (instance, kind, r) in the grid's order.  Treat it as read-only
    (it is cached)."""
    from .._io import LoadError

    p = Path(path) if path is not None else DATA_FILE
    if not p.is_file():
        raise LoadError(f"no suite data file at {str(p)!r}; regenerate it with rcmdp "
                        f"suite certify --out FILE")
    st = p.stat()
    return _read(str(p), st.st_mtime, st.st_size)


def record(name: str, set: str = "l1", radius: float = 0.1, *, path=None) -> dict | None:
    """The certified record of (``name``, ``set``, ``radius``), or None when the data
    file has none.  ``radius`` is the grid's r (``suite.sets.RADII``); the kind's own
    radius is the record's ``radius``.  The lower policy is
    ``record["bracket"]["lower_policy"]`` (nested lists, (S, A); None when no lower
    side is certified), the unconstrained robust optimum ``record["free_policy"]``."""
    definition(name)
    from .certify import key_of

    key = key_of(name, set, radius)
    for rec in data(path)["records"]:
        if rec["key"] == key:
            return rec
    return None


def policies(path=None) -> dict:
    """The stored policies as arrays, ``{"<key>/lower": (S, A), "<key>/free": (S, A)}``."""
    import numpy as np

    out = {}
    for rec in data(path)["records"]:
        if rec["bracket"].get("lower_policy") is not None:
            out[f"{rec['key']}/lower"] = np.asarray(rec["bracket"]["lower_policy"])
        out[f"{rec['key']}/free"] = np.asarray(rec["free_policy"])
    return out


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

    inst = definition(name)
    if set not in KINDS:
        raise InputError(f"unknown set {set!r}; the suite's sets are {', '.join(KINDS)}")
    try:
        radius = float(radius)
    except (TypeError, ValueError):
        raise InputError(f"radius {radius!r} is not a number; give one of "
                         f"{', '.join(map(str, RADII))}") from None
    if not any(abs(radius - r) < 1e-12 for r in RADII):
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

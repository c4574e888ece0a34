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

__all__ = ["BASELINES", "DATA", "DATA_FILE", "NAMES", "ONLY_KINDS", "Loaded", "data",
           "definition", "instance", "load", "names", "policies", "record"]

#: The names of the instances, in the order of the data file (the keys of
#: :data:`.instances.INSTANCES`, kept here so that the command line can check a name
#: without importing numpy).
NAMES = ("riverswim-6", "riverswim-20", "chain-10", "machine-10", "machine-20",
         "inventory-50", "forest-10", "grid-5x5", "frozenlake-4x4", "frozenlake-8x8",
         "cliffwalking", "taxi", "paper-inventory", "paper-nav1", "paper-nav2",
         "garnet-15x5-s0", "garnet-15x5-s1", "garnet-15x5-s2")
#: The kinds of set of the instances certified on fewer than all four (the
#: ``Instance.kinds`` of :data:`.instances.INSTANCES`, here so that the command line can
#: check a selection without importing numpy).
ONLY_KINDS = {"taxi": ("l1",)}

#: The baselines of :func:`score` besides the six learners: "tabular" (certainty
#: equivalence, :func:`.leaderboard.tabular_baseline`), "uniform" (the uniform random
#: policy, the RCMDP literature's comparison) and "least-cost" (the policy of least
#: worst-case cost: robust-feasible on every record that is not infeasible).
BASELINES = ("tabular", "uniform", "least-cost")

#: The version of the data file's layout (``schema``).
SCHEMA = 2


def key_of(name: str, kind: str, level: float) -> str:
    """The key of a job, ``"riverswim-6/l1/0.1"`` (also its policies' key prefix)."""
    return f"{name}/{kind}/{float(level):g}"


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

    try:
        raw = Path(path).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        payload = json.loads(raw)
    except (OSError, ValueError, EOFError) as exc:
        raise LoadError(f"{path!r} is not a suite data file ({exc}); give the file written "
                        f"by rcmdp suite certify") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("records"), list):
        raise LoadError(f"{path!r} is not a suite data file (no records); give the file "
                        f"written by rcmdp suite certify")
    if payload.get("schema") != SCHEMA:
        raise LoadError(f"{path!r} has schema {payload.get('schema')!r}; this version reads "
                        f"schema {SCHEMA}: regenerate it with rcmdp suite certify")
    for i, rec in enumerate(payload["records"]):
        if not isinstance(rec, dict) or not {"key", "instance", "kind", "level", "budget",
                                             "bracket"} <= set(rec):
            raise LoadError(f"{path!r} is damaged: its record {i} lacks the fields of a "
                            f"suite record; regenerate it with rcmdp suite certify")
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


def record(name: str, set: str = "l1", level: float = 0.1, *, path=None) -> dict | None:
    """The certified record of (``name``, ``set``, ``level``), or None when the data
    file has none.  ``level`` is the grid's r (``suite.sets.LEVELS``); the set's own
    radius is the record's ``radius``.  The lower policy is
    ``record["bracket"]["lower_policy"]`` (nested lists, (S, A); None when no lower
    side is certified), the robust optimum of least cost ``record["free_policy"]``.  A
    damaged data file is a :class:`~rcmdp_exact.LoadError` naming its path."""
    definition(name)

    key = key_of(name, set, _level(level))
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


def _level(level) -> float:
    """The grid's level ``level`` (an InputError naming the levels otherwise)."""
    import numbers

    from .._checks import InputError
    from .sets import LEVELS

    try:
        if isinstance(level, bool | str) or not isinstance(level, numbers.Real):
            raise TypeError(level)
        level = float(level)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past 1.8e308
        raise InputError(f"level {level!r} is not a number; give one of "
                         f"{', '.join(map(str, LEVELS))}") from None
    if not any(abs(level - r) < 1e-12 for r in LEVELS):
        raise InputError(f"level {level!r} is not on the suite's grid; give one of "
                         f"{', '.join(map(str, LEVELS))} (the set's own radius is "
                         f"suite.sets.radius_of(kind, level))")
    return min(LEVELS, key=lambda r: abs(r - level))


def load(name: str, set: str = "l1", level: float = 0.1, *, path=None) -> Loaded:
    """The instance ``name`` with the set ``set`` at the grid's level ``level``:
    ``(model, uset, record)``.

    The model's budget is the record's (the instance's rule, computed when the data
    file was generated).  Without a record (the data file has none for this set) it
    is computed by the rule now (:func:`.sets.budget`); a data file that cannot be read
    (damaged, of another schema, missing when ``path`` is given) is a
    :class:`~rcmdp_exact.LoadError` naming its path, never a silent recomputation.
    """
    from .._checks import InputError
    from .sets import KINDS, budget, build_set

    inst = definition(name)
    if set not in KINDS:
        raise InputError(f"unknown set {set!r}; the suite's sets are {', '.join(KINDS)}")
    level = _level(level)
    base = inst.build()
    uset = build_set(base, set, level, inst.support)
    rec = record(name, set, level, path=path)
    if rec is not None:
        d = rec["budget"]
    else:
        d, _ = budget(base, uset, inst.budget_rule)
    return Loaded(base.replace(d=d), uset, rec)


def instance(name: str):
    """The model of instance ``name`` with the budget of the reference set (the L1 ball
    of level 0.1, :data:`.sets.REFERENCE`)."""
    from .sets import REFERENCE

    return load(name, REFERENCE[0], REFERENCE[1]).model

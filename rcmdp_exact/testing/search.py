"""One example of a strategy, and the search for a counterexample to a claim.

Part of :mod:`rcmdp_exact.testing` (needs hypothesis):

* :func:`example`: one example of a strategy, reproducible from a seed;
* :func:`find_counterexample`: search for an example that breaks a claim, shrink it, and
  save it as files (:func:`save_counterexample`) that :func:`load_counterexample` reads
  back.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Verbosity, given, seed, settings
from hypothesis.errors import FlakyFailure, FlakyReplay, HypothesisException
from hypothesis.strategies import SearchStrategy

from .._checks import InputError, check_int, check_out_path, check_real
from .._result import Result, decode, encode
from ..core.model import TabularCMDP
from ..uncertainty._draw import example  # the kinds' toolkit draws examples too

_seed = seed  # hypothesis.seed, before a parameter named seed hides it

__all__ = [
    "COUNTEREXAMPLE_FORMAT",
    "example",
    "find_counterexample",
    "load_counterexample",
    "save_counterexample",
]

#: Format of a saved counterexample.
COUNTEREXAMPLE_FORMAT = "rcmdp_exact.Counterexample/1"


# =========================================================================== counterexamples
class _Fails(Exception):
    """The claim failed on an example (hypothesis shrinks it)."""


def _judge(claim, value, tolerance: float):
    """(fails, residual, note) of one example."""
    try:
        out = claim(value)
    except AssertionError as exc:
        return True, math.inf, f"the claim's assertion failed: {exc}" if str(exc) else \
            "the claim's assertion failed"
    if out is None:  # a claim written with assert statements that all held
        return False, 0.0, ""
    if isinstance(out, bool | np.bool_):
        return (not bool(out)), (0.0 if out else math.inf), "the claim returned False"
    try:
        r = float(out)
    except (TypeError, ValueError):
        raise InputError(f"the claim returned a {type(out).__name__}; return a residual "
                         f"(a number that must be <= tolerance) or a bool") from None
    fails = not (r <= tolerance)  # nan fails
    return fails, r, f"residual {r!r} > tolerance {tolerance!r}"


def find_counterexample(claim, strategy: SearchStrategy, *, tolerance: float = 0.0,
                        max_examples: int = 100, time_limit: float | None = None,
                        seed: int = 0, path=None) -> Result:
    """Search for an example that breaks ``claim``, shrink it, and return it with its
    evidence.

    Parameters
    ----------
    claim : callable
        ``claim(example)`` returns a residual that must be ``<= tolerance`` (a number;
        nan fails) or a bool (False fails); a claim written with ``assert`` may return
        None, and an ``AssertionError`` counts as a failure (residual inf).  Other
        exceptions propagate (after hypothesis has shrunk the example that raises).
    strategy : hypothesis strategy
        Where examples come from (e.g.
        :func:`~rcmdp_exact.testing.strategies.robust_cmdps`).
    tolerance : float
    max_examples : int
        Examples tried before giving up (shrinking comes on top).
    time_limit : float, optional
        Seconds; past it no new example is judged (the smallest counterexample found
        so far is kept).  Default: none, so that the answer depends on the seed only;
        with a limit it may depend on the machine's speed.
    seed : int
        The search is reproducible: the same seed gives the same examples.
    path : str or path-like, optional
        A folder to save the counterexample in (:func:`save_counterexample`), checked
        before the search (an existing file, an unwritable place: an
        :class:`~rcmdp_exact.OutputPathError` before any example is judged).

    Returns
    -------
    Result
        ``found`` (bool), ``example`` (the smallest counterexample, or None),
        ``residual``, ``note`` (what failed), ``tolerance``, ``examples`` (claims
        judged), ``failures`` (failing examples met while shrinking), ``seed``,
        ``seconds``, ``files`` (the paths written, if ``path``), ``message``.

    Notes
    -----
    The search runs hypothesis with ``@seed(seed)``, no example database and no
    deadline; the shrinker keeps the failing example it found smallest.  Claims that
    call the RCMDP bracket should give it a box budget (``max_boxes``) rather than a
    time limit, so that the claim is a function of the example alone.
    """
    if not callable(claim):
        raise InputError("claim must be a function of one example")
    if not isinstance(strategy, SearchStrategy):
        raise InputError(f"strategy must be a hypothesis strategy, got "
                         f"{type(strategy).__name__}; e.g. rcmdp_exact.testing.cmdps()")
    check_real(tolerance, "tolerance")
    check_int(max_examples, "max_examples", 1)
    check_int(seed, "seed", 0)
    if time_limit is not None:
        check_real(time_limit, "time_limit", 0.0, low_open=True)
    if path is not None:  # before the search: a counterexample found is never lost
        check_out_path(path, kind="dir", name="path")
    start = time.perf_counter()
    deadline = None if time_limit is None else start + float(time_limit)
    state = {"judged": 0, "failures": 0, "best": None}

    @settings(database=None, max_examples=int(max_examples), deadline=None,
              derandomize=False, suppress_health_check=list(HealthCheck),
              verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False)
    @_seed(seed)
    @given(strategy)
    def search(value):
        if deadline is not None and time.perf_counter() > deadline:
            return
        state["judged"] += 1
        fails, residual, note = _judge(claim, value, float(tolerance))
        if fails:
            state["failures"] += 1
            state["best"] = (value, residual, note)
            raise _Fails

    try:
        search()
    except _Fails:
        pass
    except (FlakyFailure, FlakyReplay):  # a claim whose answer changed on replay
        pass
    except HypothesisException as exc:
        if state["best"] is None:
            raise InputError(f"hypothesis could not run the search: {exc}") from None
    found = state["best"] is not None
    value, residual, note = state["best"] if found else (None, None, None)
    res = Result(found=found, example=value, residual=residual, note=note,
                 tolerance=float(tolerance), examples=state["judged"],
                 failures=state["failures"], seed=int(seed),
                 seconds=time.perf_counter() - start, files=[],
                 message=(f"counterexample found ({note}) after {state['judged']} examples "
                          f"judged, shrunk through {state['failures']} failing ones"
                          if found else f"no counterexample in {state['judged']} examples"))
    if found and path is not None:
        res.files = save_counterexample(res, path)
    return res



# --------------------------------------------------------------------------- files
def save_counterexample(result: Result, path) -> list[Path]:
    """Save the counterexample of :func:`find_counterexample` in the folder ``path``.

    Models go to ``model_<i>.npz`` (:meth:`~rcmdp_exact.TabularCMDP.save`), uncertainty
    sets to ``set_<i>.npz`` (their ``save``), and the rest (the example's structure,
    arrays, numbers, the residual) to ``counterexample.json``, which refers to those
    files.  Returns the paths written; :func:`load_counterexample` reads them back.
    """
    import json

    from .._io import save_json
    from ..uncertainty import UncertaintySet

    folder = check_out_path(path, kind="dir", name="path")
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def external(obj, where):
        if isinstance(obj, TabularCMDP):
            name = f"model_{sum(p.name.startswith('model_') for p in written)}.npz"
            written.append(obj.save(folder / name))
            return {"__type__": "model", "file": name}
        if isinstance(obj, UncertaintySet):
            name = f"set_{sum(p.name.startswith('set_') for p in written)}.npz"
            written.append(obj.save(folder / name))
            return {"__type__": "set", "file": name}
        return None

    data = {"format": COUNTEREXAMPLE_FORMAT,
            "example": encode(result["example"], external, "example"),
            "residual": encode(result["residual"]), "note": result["note"],
            "tolerance": encode(result["tolerance"]), "seed": result["seed"]}
    written.append(save_json(folder / "counterexample.json",
                             json.dumps(data, indent=1, allow_nan=False)))
    return written


def load_counterexample(path) -> Result:
    """Read a counterexample saved by :func:`save_counterexample` (the folder, or its
    ``counterexample.json``): ``example`` rebuilt with its models and sets,
    ``residual``, ``note``, ``tolerance``, ``seed``."""
    from .._io import LoadError, load_json
    from ..uncertainty import load_set

    p = Path(path).expanduser()
    file = p / "counterexample.json" if p.is_dir() else p
    data = load_json(file, COUNTEREXAMPLE_FORMAT, "a counterexample saved by "
                                                  "save_counterexample")
    folder = Path(file).parent

    def external(item):
        if item["__type__"] == "model":
            return TabularCMDP.load(folder / item["file"])
        if item["__type__"] == "set":
            return load_set(folder / item["file"])
        raise LoadError(f"{str(path)!r} holds an unknown entry {item['__type__']!r}")

    return Result(example=decode(data["example"], external), residual=decode(
        data["residual"]), note=data["note"], tolerance=decode(data["tolerance"]),
        seed=data["seed"])

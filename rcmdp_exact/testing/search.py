"""One example of a strategy, and the search for a counterexample to a claim.

Part of :mod:`rcmdp_exact.testing` (needs hypothesis):

* :func:`example`: one example of a strategy, reproducible from a seed;
* :func:`find_counterexample`: search for an example that breaks a claim, shrink it, and
  save it as files (:func:`_save_counterexample`) that :func:`load_counterexample` reads
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

from .._checks import InputError, check_int, check_limit, check_out_path, check_real
from .._result import Result, decode, encode
from ..core.model import TabularCMDP
from ..uncertainty._draw import example  # the kinds' toolkit draws examples too

_seed = seed  # hypothesis.seed, before a parameter named seed hides it

__all__ = [
    "example",
    "find_counterexample",
    "load_counterexample",
]

#: Format of a saved counterexample.
_COUNTEREXAMPLE_FORMAT = "rcmdp_exact.Counterexample/1"


# =========================================================================== counterexamples
class _Fails(Exception):
    """The claim failed on an example (hypothesis shrinks it)."""


class _OutOfTime(BaseException):
    """The time limit passed: stops hypothesis at once (a BaseException, which it does
    not take for a failure of the test to shrink, as it does not Ctrl-C)."""


#: Files of a saved counterexample in its folder (:func:`_save_counterexample`).
_COUNTEREXAMPLE_FILES = ("counterexample.json", "model_*.npz", "set_*.npz")


def _existing_counterexample(folder: Path) -> list[Path]:
    """The files of a counterexample already saved in ``folder`` (sorted)."""
    if not folder.is_dir():
        return []
    return sorted(p for pattern in _COUNTEREXAMPLE_FILES for p in folder.glob(pattern))


def _refuse_overwrite(folder: Path, name: str) -> None:
    from .._checks import OutputPathError

    old = _existing_counterexample(folder)
    if old:
        shown = ", ".join(p.name for p in old[:4]) + (", ..." if len(old) > 4 else "")
        raise OutputPathError(
            f"{name} {str(folder)!r} holds a counterexample already ({shown}); give "
            f"another folder, or overwrite=True to replace it")


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


#: What a search may take beyond its ``time_limit`` (seconds): it stops at the first
#: example drawn after the limit, so the overshoot is the draw and the claim in progress
#: when the limit passed, plus hypothesis's own set-up and tear-down (well under a
#: second); a claim that runs for minutes on one example overshoots by those minutes.
_TIME_LIMIT_OVERHEAD = 1.0


def find_counterexample(claim, strategy: SearchStrategy, *, tolerance: float = 0.0,
                        max_examples: int = 100, time_limit: float | None = None,
                        seed: int = 0, path=None, overwrite: bool = False) -> Result:
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
        The work budget that decides the answer: examples tried before giving up
        (shrinking comes on top), at least 1.
    time_limit : float, optional
        Seconds (> 0), a safety net: at the first example drawn after it the search
        stops (generation and shrinking alike), keeps the smallest counterexample found
        so far, and says so (``stopped`` is ``"time_limit"`` and ``message`` says that
        the answer is not that of the budget).  It stops within the limit plus the draw
        and the claim in progress, plus :data:`_TIME_LIMIT_OVERHEAD` of hypothesis's own
        work.  Default: none, so that the answer depends on the seed only; an answer
        cut by the limit depends on the machine's speed.
    seed : int
        The search is reproducible: the same seed gives the same examples.
    path : str or path-like, optional
        A folder to save the counterexample in (:func:`_save_counterexample`), checked
        before the search (an existing file, an unwritable place, a folder that holds a
        counterexample already: an :class:`~rcmdp_exact.OutputPathError` before any
        example is judged).
    overwrite : bool
        Replace a counterexample saved in ``path`` before (default: refuse, so that a
        second search never overwrites the first one's files).

    Returns
    -------
    Result
        ``found`` (bool), ``example`` (the smallest counterexample, or None),
        ``residual``, ``note`` (what failed), ``tolerance``, ``examples`` (claims
        judged), ``failures`` (failing examples met while shrinking), ``seed``,
        ``seconds``, ``stopped`` (``"budget"``: the search ran to its end;
        ``"time_limit"``: cut by the time limit), ``files`` (the paths written, if
        ``path``), ``message``.

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
    check_limit(max_examples, "max_examples", "examples")
    seed = check_int(seed, "seed", 0)  # a plain int: hypothesis refuses numpy integers
    if time_limit is not None:
        check_real(time_limit, "time_limit", 0.0, low_open=True)
    if path is not None:  # before the search: a counterexample found is never lost
        folder = check_out_path(path, kind="dir", name="path")
        if not overwrite:
            _refuse_overwrite(folder, "path")
    start = time.perf_counter()
    deadline = None if time_limit is None else start + float(time_limit)
    state = {"judged": 0, "failures": 0, "best": None, "stopped": "budget"}

    @settings(database=None, max_examples=int(max_examples), deadline=None,
              derandomize=False, suppress_health_check=list(HealthCheck),
              verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False)
    @_seed(seed)
    @given(strategy)
    def search(value):
        if deadline is not None and time.perf_counter() > deadline:
            state["stopped"] = "time_limit"
            raise _OutOfTime
        state["judged"] += 1
        fails, residual, note = _judge(claim, value, float(tolerance))
        if fails:
            state["failures"] += 1
            state["best"] = (value, residual, note)
            raise _Fails

    try:
        search()
    except _OutOfTime:
        pass
    except _Fails:
        pass
    except (FlakyFailure, FlakyReplay):  # a claim whose answer changed on replay
        pass
    except HypothesisException as exc:
        if state["best"] is None:
            raise InputError(f"hypothesis could not run the search: {exc}") from None
    found = state["best"] is not None
    value, residual, note = state["best"] if found else (None, None, None)
    cut = state["stopped"] == "time_limit"
    if found:
        message = (f"counterexample found ({note}) after {state['judged']} examples "
                   f"judged, shrunk through {state['failures']} failing ones")
        if cut:
            message += (f"; the time limit of {float(time_limit):g} s stopped the search "
                        f"(the example may shrink further without it)")
    elif cut:
        message = (f"no counterexample in {state['judged']} examples: the time limit of "
                   f"{float(time_limit):g} s stopped the search before its budget of "
                   f"max_examples={int(max_examples)}, so this answer is the machine's, "
                   f"not the budget's")
    else:
        message = f"no counterexample in {state['judged']} examples"
    res = Result(found=found, example=value, residual=residual, note=note,
                 tolerance=float(tolerance), examples=state["judged"],
                 failures=state["failures"], seed=int(seed),
                 seconds=time.perf_counter() - start, stopped=state["stopped"], files=[],
                 message=message)
    if found and path is not None:
        res.files = _save_counterexample(res, path, overwrite=overwrite)
    return res



# --------------------------------------------------------------------------- files
def _save_counterexample(result: Result, path, *, overwrite: bool = False) -> list[Path]:
    """Save the counterexample of :func:`find_counterexample` in the folder ``path``.

    Models go to ``model_<i>.npz`` (:meth:`~rcmdp_exact.TabularCMDP.save`), uncertainty
    sets to ``set_<i>.npz`` (their ``save``), and the rest (the example's structure,
    arrays, numbers, the residual) to ``counterexample.json``, which refers to those
    files.  Returns the paths written; :func:`load_counterexample` reads them back.
    A folder that holds a counterexample already is refused
    (:class:`~rcmdp_exact.OutputPathError`) unless ``overwrite``, which replaces it
    (its files that the new one does not write are removed).
    """
    import json

    from .._io import save_json
    from ..uncertainty import UncertaintySet

    folder = check_out_path(path, kind="dir", name="path")
    old = _existing_counterexample(folder)
    if old and not overwrite:
        _refuse_overwrite(folder, "path")
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

    data = {"format": _COUNTEREXAMPLE_FORMAT,
            "example": encode(result["example"], external, "example"),
            "residual": encode(result["residual"]), "note": result["note"],
            "tolerance": encode(result["tolerance"]), "seed": result["seed"]}
    written.append(save_json(folder / "counterexample.json",
                             json.dumps(data, indent=1, allow_nan=False)))
    for stale in set(old) - set(written):  # of the counterexample replaced
        stale.unlink(missing_ok=True)
    return written


def load_counterexample(path) -> Result:
    """Read a counterexample saved by :func:`_save_counterexample` (the folder, or its
    ``counterexample.json``): ``example`` rebuilt with its models and sets,
    ``residual``, ``note``, ``tolerance``, ``seed``."""
    from .._io import LoadError, load_json
    from ..uncertainty import load_set

    p = Path(path).expanduser()
    file = p / "counterexample.json" if p.is_dir() else p
    data = load_json(file, _COUNTEREXAMPLE_FORMAT, "a counterexample saved by "
                                                  "_save_counterexample")
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

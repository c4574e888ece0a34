"""Every input check of the toolkit, once, and the error classes.

Public functions validate their arguments here, where the data enters the package;
everything behind them takes valid arrays and does not check again.  Each check raises
an :class:`InputError` (a :class:`ValueError`) whose message names the argument, the
offending entry and its value, and says how to fix it.

Error classes (importable from :mod:`rcmdp_exact`):

* :class:`InputError`: any invalid input; ``ModelError`` is the same class under its
  historical name, so ``except ModelError`` still catches every input error;
* :class:`OptionError`: an unknown name for a choice (a method, a domain, an
  algorithm); the message lists the valid names;
* :class:`ImproperPolicyError`: an undiscounted evaluation whose sums diverge (a state
  reachable from the start never terminates);
* :class:`NotFiniteError`: finite inputs whose result overflowed float64; the message
  names the input that caused it;
* :class:`OutputPathError`: an output path that exists (without ``force``), whose
  folder is missing, or that cannot be written (a read-only file or folder, a full
  disk: a results store that cannot be written says how many finished jobs it keeps);
* :class:`~rcmdp_exact._io.LoadError`: a file that cannot be loaded as the artefact
  expected (missing, a folder, truncated, not an ``.npz`` archive, pickled, of another
  kind, or a results store that is not one or is damaged); the message names the path
  and what was expected.  Defined in :mod:`rcmdp_exact._io`, where every artefact is
  saved and loaded.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Sequence
from pathlib import Path


class _Numpy:
    """numpy, imported at the first use of ``np`` in this module.

    The checks of paths and plain numbers need no numpy, and the command line runs them
    before any heavy import, so that a bad argument is refused at once; the first
    attribute read replaces this stand-in by numpy itself (no cost afterwards).
    """

    def __getattr__(self, attr):
        import numpy

        globals()["np"] = numpy
        return getattr(numpy, attr)


np = _Numpy()


def _numpy_loaded():
    """numpy if it is imported already, else None (an object of a numpy type implies
    that numpy is imported, so a check needs no import to tell)."""
    return sys.modules.get("numpy")


def _is_sparse(x) -> bool:
    """True for a scipy.sparse matrix or array (scipy.sparse is not imported for it: a
    sparse object implies that it is)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(x))

__all__ = [
    "MAX_INPUT_BYTES",
    "ImproperPolicyError",
    "InnerProblemError",
    "InputError",
    "NotFiniteError",
    "OptionError",
    "OutputPathError",
    "as_array",
    "as_float_array",
    "bytes_text",
    "check_choice",
    "check_client",
    "check_distributions",
    "check_fields",
    "check_finite",
    "check_indices",
    "check_int",
    "check_limit",
    "check_memory",
    "check_nonnegative",
    "check_out_path",
    "check_real",
    "check_room",
    "check_row_sums",
    "check_seed",
    "check_shape",
    "check_sizes",
    "check_support",
    "check_type",
    "interval_text",
    "plain",
    "readonly",
    "rng_from",
    "row_tolerance",
    "where",
]


# --------------------------------------------------------------------------- errors
class InputError(ValueError):
    """Invalid input; the message names what is wrong and how to fix it."""


class OptionError(InputError):
    """An unknown name for a choice; the message lists the valid names."""


class ImproperPolicyError(InputError):
    """An undiscounted evaluation diverges: a reachable state never terminates."""


class NotFiniteError(InputError):
    """Finite inputs gave an infinite or NaN result; the message names the input."""


class OutputPathError(InputError):
    """An output path exists, lies in a missing folder, or cannot be written."""


class InnerProblemError(RuntimeError):
    """An uncertainty set's worst case failed: its solver reported a row it could not
    solve (and a second solver could not repair), or a set returned rows that are not
    distributions of the set.  The message names the set's class, the (state, action)
    row and the cause."""


# --------------------------------------------------------------------------- messages
def plain(x):
    """A numpy scalar as the Python number it holds (for messages)."""
    numpy = _numpy_loaded()
    return x.item() if numpy is not None and isinstance(x, numpy.generic) else x


def where(axes: Sequence[str], idx) -> str:
    """``"(s=1, a=0)"`` for axis names and an index; ``""`` for a scalar (no ``[]``)."""
    idx = tuple(int(i) for i in np.atleast_1d(idx)) if np.ndim(idx) else (int(idx),)
    if not axes:
        return ""
    return "(" + ", ".join(f"{a}={i}" for a, i in zip(axes, idx, strict=False)) + ")"


def readonly(arr: np.ndarray) -> np.ndarray:
    """Mark ``arr`` read-only and return it."""
    arr.flags.writeable = False
    return arr


def row_tolerance(n: int) -> float:
    """Tolerance on ``|sum(row) - 1|`` for a distribution over ``n`` entries.

    Summing ``n`` float64 numbers loses about ``n * eps`` (eps = 2.2e-16) in the worst
    case; the tolerance is ``1e-12 * max(n, 1)``, a few thousand times that bound, so
    it scales with the size of the row as the rounding error does, and stays far below
    any difference that matters at the toolkit's 1e-8 accuracy.
    """
    return 1e-12 * max(int(n), 1)


#: The most memory (bytes) one input may ask for before any work: the arrays a model
#: holds (:class:`~rcmdp_exact.TabularCMDP`, whatever the shapes it is given declare:
#: a broadcast view or a sparse matrix costs nothing until it is copied or converted)
#: and the arrays of one archive read from a file (:func:`rcmdp_exact._io.load_npz`,
#: whatever its headers claim).  8 GiB: the largest model of the docs (a sparse grid of
#: 10^5 cells) holds about 30 MB, a dense model of S = 5000 states and A = 4 actions
#: 800 MB.
MAX_INPUT_BYTES = 8 * 2**30

#: Largest ``|sum(row) - 1|`` that ``normalize=True`` repairs: float32 rounding of a
#: row of up to 10^4 entries (about n * 6e-8 in the worst case) fits well inside it.
NORMALIZE_TOLERANCE = 1e-4


# --------------------------------------------------------------------------- arrays
def as_array(x, name: str, fix: str) -> np.ndarray:
    """``np.asarray(x)``, or an :class:`InputError` for sparse, ragged or odd input."""
    if _is_sparse(x):
        raise InputError(
            f"{name} must be a dense array here, got a scipy.sparse {type(x).__name__}; {fix}"
        )
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        raise InputError(
            f"{name} must be an array, got a {type(x).__name__} that numpy cannot turn "
            f"into one (ragged nesting?); {fix}"
        ) from None


def as_float_array(x, name: str, fix: str, *, shape: tuple | None = None,
                   axes: Sequence[str] = (), finite: bool = True) -> np.ndarray:
    """``x`` as a float64 array of real numbers, with an optional shape and finiteness.

    Parameters
    ----------
    x : array_like
    name : str
        The argument's name, used in messages.
    fix : str
        How to fix a wrong type (ends the message).
    shape : tuple, optional
        The required shape; ``axes`` names its axes in the message.
    finite : bool
        Refuse NaN and inf (naming the first such entry).
    """
    raw = as_array(x, name, fix)
    if np.iscomplexobj(raw):
        raise InputError(f"{name} must be real, got complex values; {fix}")
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            f"{name} must be an array of real numbers, got a {type(x).__name__} whose "
            f"entries cannot be converted to float64; {fix}"
        ) from None
    if shape is not None:
        check_shape(arr, shape, name, axes)
    if finite:
        check_finite(arr, name, axes)
    return arr


def check_shape(arr: np.ndarray, shape: tuple, name: str, axes: Sequence[str] = ()) -> None:
    """Raise unless ``arr.shape == shape``; the message names the axes."""
    if arr.shape != tuple(shape):
        label = f" ({', '.join(axes)})" if axes else ""
        raise InputError(
            f"{name} must have shape{label} = {tuple(shape)}, got {arr.shape}; reshape it or "
            f"check the numbers of states S, actions A and constraints K"
        )


def _first(mask: np.ndarray, positions) -> tuple:
    """The index of the first True of ``mask`` (or its row of ``positions``)."""
    k = int(np.flatnonzero(mask.ravel())[0])
    if positions is not None:
        return tuple(int(i) for i in positions[k])
    return tuple(int(i) for i in np.unravel_index(k, mask.shape))


def check_finite(arr: np.ndarray, name: str, axes: Sequence[str] = (),
                 positions=None) -> None:
    """Raise on the first NaN or inf of ``arr``, naming its position.

    ``positions`` (N, d), optional: the index to report for each entry of a flat
    ``arr`` (the stored entries of a sparse matrix, for instance).
    """
    bad = ~np.isfinite(arr)
    if bad.any():
        if arr.ndim == 0:
            raise InputError(f"{name} is {float(arr)!r}; give a finite number")
        idx = _first(bad, positions)
        value = float(arr.ravel()[int(np.flatnonzero(bad.ravel())[0])])
        at = f" at {where(axes, idx)}" if axes else ""
        raise InputError(
            f"{name}[{', '.join(map(str, idx))}] = {value!r} is not finite{at}; replace NaN "
            f"and inf by finite numbers"
        )


def check_nonnegative(arr: np.ndarray, name: str, what: str = "probabilities",
                      positions=None) -> None:
    """Raise on the first negative entry of ``arr``: ``name[i, j] = x is negative``."""
    bad = np.asarray(arr < 0)
    if bad.any():
        idx = _first(bad, positions) if bad.ndim else ()
        value = float(np.ravel(arr)[int(np.flatnonzero(bad.ravel())[0])])
        at = f"[{', '.join(map(str, idx))}]" if idx else ""
        raise InputError(f"{name}{at} = {value!r} is negative; {what} must be >= 0")


def check_row_sums(sums: np.ndarray, n: int, name: str, axes: Sequence[str] = (), *,
                   normalize: bool = False):
    """Check row sums of distributions over ``n`` entries; ``sums`` has the rows' shape.

    Returns None when every row sums to 1 within :func:`row_tolerance` (n).  With
    ``normalize=True``, rows within :data:`NORMALIZE_TOLERANCE` of 1 are accepted and
    the sums are returned for the caller to divide by; larger misses are refused.
    """
    err = np.abs(np.asarray(sums) - 1.0)
    tol = row_tolerance(n)
    if not (err > tol).any():
        return None
    worst = float(err.max())
    if normalize and worst <= NORMALIZE_TOLERANCE:
        return sums
    bad = err > tol
    idx = _first(bad, None) if bad.ndim else ()
    total = float(np.asarray(sums)[idx])
    row = "".join(f"{i}, " for i in idx)
    at = f" {where(axes, idx)}" if idx and axes else ""
    hint = (f"; or pass normalize=True to renormalise rows within "
            f"{NORMALIZE_TOLERANCE:g} of 1" if worst <= NORMALIZE_TOLERANCE else "")
    raise InputError(
        f"the row {name}[{row}:]{at} sums to {total!r}, not 1 (tolerance {tol:.1e}); "
        f"normalise every row so that {name}.sum(axis=-1) == 1{hint}"
    )


def check_distributions(arr: np.ndarray, name: str, axes: Sequence[str] = (), *,
                        normalize: bool = False, what: str = "probabilities") -> np.ndarray:
    """Check that every slice along the last axis of ``arr`` is a distribution.

    Entries >= 0 (:func:`check_nonnegative`) and rows summing to 1
    (:func:`check_row_sums`, ``axes`` names the row axes).  Returns ``arr``, or with
    ``normalize=True`` a renormalised copy when some row misses 1 by a little.
    ``arr`` must already be finite.
    """
    check_nonnegative(arr, name, what)
    sums = check_row_sums(arr.sum(axis=-1), arr.shape[-1] if arr.ndim else 1, name,
                          axes, normalize=normalize)
    return arr if sums is None else arr / sums[..., None]


def check_support(values: np.ndarray, support: np.ndarray, name: str, fix: str) -> None:
    """Raise when ``values`` puts positive mass outside a boolean ``support`` mask."""
    off = (values > 0) & ~support
    if off.any():
        idx = _first(off, None)
        at = ", ".join(map(str, idx))
        raise InputError(
            f"{name}[{at}] = {float(values[idx])!r} lies outside the support "
            f"(support[{at}] is False); {fix}"
        )


def check_indices(arr, name: str, n: int, what: str = "index") -> np.ndarray:
    """``arr`` as an int64 array of indices in 0..n-1 (any shape).

    The message names the first entry that is not an integer in range.
    """
    idx = as_array(arr, name, f"give integer {what}s in 0..{n - 1}")
    if idx.dtype.kind not in "iu" and not (idx.size == 0 and idx.dtype.kind == "f"):
        raise InputError(f"{name} must hold integer {what}s in 0..{n - 1}, got dtype {idx.dtype}")
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        pos = _first(bad, None) if bad.ndim else ()
        at = f"[{', '.join(map(str, pos))}]" if pos else ""
        raise InputError(f"{name}{at} = {int(idx[pos])} is out of range: {what}s are 0..{n - 1}")
    return idx.astype(np.int64)


# --------------------------------------------------------------------------- scalars
def check_int(value, name: str, low: int | None = None, high: int | None = None,
              hint: str = "") -> int:
    """``value`` as an int in ``[low, high]``; bools, floats and strings are refused.

    An integer of more than 1000 bits (beyond float64's range, about 1.8e308) is refused
    whatever the range: the float conversions of a count take no such integer (10**400
    was a raw ``OverflowError``).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(
            f"{name} must be an integer, got {plain(value)!r} ({type(value).__name__}){hint}"
        )
    v = int(value)
    if v.bit_length() > 1000 and (high is None or v > high):
        raise InputError(f"{name} = {'-' if v < 0 else ''}10**{len(str(abs(v))) - 1} or more "
                         f"is beyond float64's range (about 1.8e308); give a smaller "
                         f"integer{hint}")
    if (low is not None and v < low) or (high is not None and v > high):
        if high is None:
            rng = f">= {low}"
        elif low is None:
            rng = f"<= {high}"
        else:
            rng = f"in {low}..{high}"
        raise InputError(f"{name} must be an integer {rng}, got {v}{hint}")
    return v


def check_limit(value, name: str, limit: str, low: int = 1, hint: str = "") -> int:
    """``value`` as an int in ``[low, high]``, where ``high`` is the limit ``limit`` of
    :data:`rcmdp_exact.names.LIMITS` (the same limit the command line applies); the
    message above it names the limit, what it bounds and why."""
    from .names import LIMITS

    v = check_int(value, name, low, hint=hint)
    high, what, why = LIMITS[limit]
    if v > high:
        k = len(str(high)) - 1
        shown = f"10^{k}" if high == 10**k and k >= 3 else f"{high:,}"
        raise InputError(f"{name} = {v:,} is above the limit {shown} of {what} ({why}); "
                         f"give at most {high} (rcmdp_exact.names.LIMITS)")
    return v


def check_real(value, name: str, low: float | None = None, high: float | None = None, *,
               low_open: bool = False, high_open: bool = False, hint: str = "") -> float:
    """``value`` as a finite float in the interval; bools and strings are refused.

    ``low_open`` / ``high_open`` exclude the end points.
    """
    ok_type = isinstance(value, numbers.Real) and not isinstance(value, bool)
    numpy = _numpy_loaded()
    if not ok_type and numpy is not None and isinstance(value, numpy.ndarray) \
            and value.ndim == 0 and value.dtype.kind in "iuf":
        ok_type = True
    try:
        # an int or a Fraction beyond float64 (10**400) is not a finite float; -0.0 is 0
        v = float(value) + 0.0 if ok_type else None
    except OverflowError:
        v = None
    if v is None or not math.isfinite(v) \
            or (low is not None and (v < low or (low_open and v == low))) \
            or (high is not None and (v > high or (high_open and v == high))):
        interval = interval_text(low, high, low_open=low_open, high_open=high_open)
        raise InputError(f"{name} must be a number in {interval}, got {plain(value)!r}{hint}")
    return v


def interval_text(low: float | None = None, high: float | None = None, *,
                  low_open: bool = False, high_open: bool = False) -> str:
    """The interval of :func:`check_real` as text: ``[0, inf)``, ``(0, 1)``."""
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return (f"{'(' if low_open or low is None else '['}{lo}, {hi}"
            f"{')' if high_open or high is None else ']'}")


def bytes_text(n: float) -> str:
    """A number of bytes for people: ``4 GiB``, ``36 TiB``, ``6.6e+21 TiB``."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB")
    k = 0
    try:
        n = float(n)
    except OverflowError:  # an int beyond float64: more than the largest float
        return "more than 1e+308 bytes"
    while n >= 1024 and k < len(units) - 1:
        n /= 1024
        k += 1
    if n >= 1e6:
        return f"{n:.2g} {units[k]}"
    return f"{n:.0f} {units[k]}" if k == 0 or n >= 100 else f"{n:.3g} {units[k]}"


def check_memory(n: int, item_bytes: int, limit: int, name: str, what: str, fix: str,
                 limit_name: str = "") -> None:
    """Refuse, before any work, ``n`` items of ``item_bytes`` each held in memory at once
    when they exceed ``limit`` bytes.  The message names the argument ``name`` and its
    value, the memory it would need for ``what`` (the items), the limit
    (``limit_name``, where it is set) and the largest ``n`` within it; ``fix`` says how
    to work within it."""
    need = int(n) * int(item_bytes)
    if need > limit:
        most = limit // max(int(item_bytes), 1)
        where = f" ({limit_name})" if limit_name else ""
        raise InputError(
            f"{name} = {plain(n):,} would hold {bytes_text(need)} of {what} in memory "
            f"({int(item_bytes):,} bytes each), above the limit of {bytes_text(limit)}"
            f"{where}; give {name} <= {most:,}{fix}")


def check_room(need: int, who: str, of: str = "", fix: str = "") -> None:
    """Refuse, before any allocation, arrays of ``need`` bytes above
    :data:`MAX_INPUT_BYTES`: "``who`` would hold N GiB [of ``of``] in memory, above the
    limit ...; give smaller sizes``fix``" (the one message of every size limit)."""
    if int(need) > MAX_INPUT_BYTES:
        raise InputError(
            f"{who} would hold {bytes_text(need)}{f' of {of}' if of else ''} in memory, "
            f"above the limit of {bytes_text(MAX_INPUT_BYTES)} "
            f"(rcmdp_exact._checks.MAX_INPUT_BYTES); give smaller sizes{fix}")


def check_sizes(need: int, sizes: dict, what: str, fix: str = "") -> None:
    """:func:`check_room` naming every size (``{"n_states": S, ...}``) and its value."""
    check_room(need, ", ".join(f"{k} = {plain(v):,}" for k, v in sizes.items()), what, fix)


#: The longest text of a refused value a message repeats (a megabyte of it would be
#: the message).
_SHOWN = 80


def shown(value) -> str:
    """``repr`` of a refused value for a one-line message: an array by its shape and
    type, anything else cut to :data:`_SHOWN` characters."""
    numpy = _numpy_loaded()
    if numpy is not None and isinstance(value, numpy.ndarray):
        return f"an array of shape {value.shape} ({value.dtype})"
    text = repr(plain(value))
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text):,} characters)"


def check_choice(value, name: str, choices: Sequence[str], hint: str = ""):
    """``value`` if it is one of ``choices``, else an :class:`OptionError` listing them.

    An array is never a choice (numpy compares it element by element: one of one name
    would pass, one of two raise numpy's own error)."""
    numpy = _numpy_loaded()
    try:
        ok = not (numpy is not None and isinstance(value, numpy.ndarray)) \
            and value in choices
    except (TypeError, ValueError):  # unhashable, or a comparison that is no bool
        ok = False
    if not ok or isinstance(value, bool):
        raise OptionError(
            f"unknown {name} {shown(value)}; choose one of "
            f"{', '.join(repr(c) for c in choices)}{hint}"
        )
    return value


def check_type(value, name: str, cls, fix: str):
    """``value`` if it is an instance of ``cls``, else an :class:`InputError`."""
    if not isinstance(value, cls):
        what = cls.__name__ if isinstance(cls, type) else " or ".join(c.__name__ for c in cls)
        raise InputError(f"{name} must be of type {what}, got {type(value).__name__}; {fix}")
    return value


def check_fields(value, name: str, fields: Sequence[str], fix: str) -> tuple:
    """The numbers ``value[f]`` for ``f`` in ``fields`` of a result (a
    :class:`~rcmdp_exact.Result` or any mapping), as floats (inf allowed, NaN refused).

    Anything else (a list, a mapping without one of the fields, a field that is not a
    number) is an :class:`InputError` naming ``name``, what it is and what is missing;
    ``fix`` says what to give instead.
    """
    from collections.abc import Mapping

    if not isinstance(value, Mapping):
        raise InputError(f"{name} must be a result with the fields {', '.join(fields)}, "
                         f"got a {type(value).__name__}; {fix}")
    missing = [f for f in fields if f not in value]
    if missing:
        raise InputError(f"{name} has no field {', '.join(map(repr, missing))} (it has "
                         f"{', '.join(map(repr, list(value)[:8])) or 'none'}); {fix}")
    out = []
    for f in fields:
        x = value[f]
        numpy = _numpy_loaded()
        number = (isinstance(x, numbers.Real) and not isinstance(x, bool)) or (
            numpy is not None and isinstance(x, numpy.ndarray) and x.ndim == 0
            and x.dtype.kind in "iuf")
        if not number or math.isnan(float(x)):
            raise InputError(f"{name}[{f!r}] = {plain(x)!r} is not a number; {fix}")
        out.append(float(x))
    return tuple(out)


def check_client(client, name: str = "client"):
    """``client`` if it is None or a Dask client: a ``distributed.Client`` or an object
    with the methods ``scatter`` and ``submit`` that the toolkit calls; else an
    :class:`InputError` (before any work, not at the first ``scatter``)."""
    if client is None:
        return None
    distributed = sys.modules.get("distributed")
    if distributed is not None and isinstance(client, distributed.Client):
        return client
    lacks = [m for m in ("scatter", "submit") if not callable(getattr(client, m, None))]
    if lacks:
        raise InputError(
            f"{name} must be a Dask client (distributed.Client), got a "
            f"{type(client).__module__}.{type(client).__name__} without "
            f"{' and '.join(m + '()' for m in lacks)}; connect one with "
            f"distributed.Client('tcp://HOST:PORT') or give {name}=None (no cluster)")
    return client


# --------------------------------------------------------------------------- seeds
def check_seed(seed, name: str = "seed"):
    """A valid seed: None, an int >= 0, a sequence of ints >= 0 (SeedSequence entropy),
    a :class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`.

    Returns it unchanged (an int as ``int``, a sequence as a tuple of ints).
    """
    if seed is None or isinstance(seed, np.random.Generator | np.random.SeedSequence):
        return seed
    if isinstance(seed, list | tuple | np.ndarray) and len(seed) > 0 and all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool) and x >= 0
            for x in np.ravel(np.asarray(seed, dtype=object))):
        return tuple(int(x) for x in np.ravel(np.asarray(seed, dtype=object)))
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InputError(
            f"{name} must be a non-negative integer, a non-empty sequence of them (seed "
            f"entropy), a numpy.random.Generator or SeedSequence, or None, got {plain(seed)!r}"
        )
    return int(seed)


def rng_from(seed, name: str = "seed") -> np.random.Generator:
    """``numpy.random.default_rng`` of a validated seed (a Generator is returned as is)."""
    seed = check_seed(seed, name)
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


# --------------------------------------------------------------------------- paths
def check_out_path(path, *, kind: str = "dir", force: bool = False, name: str = "--out") -> Path:
    """Check an output path before any work starts.

    ``kind="dir"``: a folder to write files into; it may exist (files in it are
    replaced) or be created, but must not be an existing file.  ``kind="file"``: a file
    to write; an existing file is refused unless ``force``, and its folder must exist.
    Either way the place must be writable.
    """
    if path is None or str(path).strip() == "":
        raise OutputPathError(f"{name} is empty; give a path such as results/")
    p = Path(os.fspath(path)).expanduser()
    if kind == "dir":
        if p.exists() and not p.is_dir():
            raise OutputPathError(
                f"{name} {str(p)!r} is an existing file, not a folder; give a folder path"
            )
        probe = p
        while not probe.exists():
            probe = probe.parent
        if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
            raise OutputPathError(f"{name} {str(p)!r} cannot be created: {str(probe)!r} "
                                  f"is not writable")
        return p
    if p.is_dir():
        raise OutputPathError(f"{name} {str(p)!r} is a folder; give a file path")
    if p.exists() and not force:
        raise OutputPathError(
            f"{name} {str(p)!r} already exists; pass --force (force=True) to replace it"
        )
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputPathError(f"the folder of {name} {str(p)!r} does not exist; create "
                              f"{str(parent)!r} first")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise OutputPathError(f"{name} {str(p)!r} is not writable")
    return p

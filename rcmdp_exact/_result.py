"""Result objects shared by every solver of the toolkit.

They follow :class:`scipy.optimize.OptimizeResult` in spirit: a dictionary whose keys
are also attributes, printed as an aligned table.  Solvers that iterate or call an
external solver add ``success``, ``status`` and ``message``.

Results out
-----------
Every result goes out in five forms (the docs page "Results out"):

* :meth:`Result.to_flat`: a flat dictionary of scalars for a table row; nested results
  and dictionaries become dotted names (``dual.lo``), arrays per-element keys
  (``policy[0,1]``) or lists;
* :meth:`Result.to_json` / :meth:`Result.from_json`: JSON text and back, without pickle,
  exact: floats bit for bit (shortest round-trip decimal), arrays with their dtype and
  shape, nested results, dictionaries, lists, tuples, strings, ``None``, bools,
  statuses, ``inf`` and ``nan`` (strict JSON: non-finite numbers are written as
  tagged strings);
* :meth:`Result.to_long`: the tidy long form, one record per scalar (field, index,
  value);
* :meth:`Result.to_frame`: a :class:`pandas.DataFrame`, one row of :meth:`to_flat` or
  the frame of :meth:`to_long` (pandas is optional: the ``frames`` extra);
* :meth:`Result.save` / :meth:`Result.load`: a ``.json`` file, or an ``.npz`` archive
  whose arrays are stored as arrays (the path rule of :mod:`rcmdp_exact._io`).

:func:`encode` and :func:`decode` are the tagged JSON form behind them; a caller may
pass an ``external`` hook for objects that are saved in files of their own (models and
uncertainty sets in :func:`rcmdp_exact.testing.find_counterexample`).
"""

from __future__ import annotations

import json
import math
import os
from enum import StrEnum
from pathlib import Path, PurePath

import numpy as np

from ._checks import InputError, check_choice

__all__ = [ "FORMAT", "Result", "Status", "decode", "encode"]


class Status(StrEnum):
    """The ``status`` of every result that has one (a string: compare with ``"optimal"``).

    ``optimal``: an exact or solver-optimal answer; ``converged``: an iteration met its
    tolerance; ``not_converged``: it did not (iteration limit, or a stall below the
    rounding error; the message says which); ``optimal_inaccurate``: a solver answered
    OPTIMAL_INACCURATE or its answer failed the numpy re-check; ``infeasible``: no policy meets the
    budgets; ``unbounded``, ``solver_error``, ``check_failed`` (the solver's answer
    failed the independent re-check), ``no_feasible_policy`` (a search found none),
    ``budget_exhausted`` (a search stopped at its work budget; its bounds still hold),
    ``bracket`` (valid lower and upper bounds that have not met),
    ``tol_below_rounding`` (the method finished, but the error bound that float64 can
    certify is above the tolerance asked for; ``success`` is True, the bound holds, and
    more iterations cannot help).
    """

    OPTIMAL = "optimal"
    CONVERGED = "converged"
    NOT_CONVERGED = "not_converged"
    OPTIMAL_INACCURATE = "optimal_inaccurate"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    SOLVER_ERROR = "solver_error"
    CHECK_FAILED = "check_failed"
    NO_FEASIBLE_POLICY = "no_feasible_policy"
    BUDGET_EXHAUSTED = "budget_exhausted"
    BRACKET = "bracket"
    TOL_BELOW_ROUNDING = "tol_below_rounding"


#: The ``format`` entry of a saved result (JSON and ``.npz``).
FORMAT = "rcmdp_exact.Result/1"
#: How :meth:`Result.to_flat` writes an array: one key per element, one list, or not at all.
_FLAT_ARRAYS = ("elements", "list", "drop")
#: The forms of :meth:`Result.to_frame`: one row of columns, or one row per scalar.
FRAME_FORMS = ("wide", "long")
#: The key that marks a tagged value in the JSON form.
TAG = "__type__"
#: Array kinds the JSON form stores (bool, signed and unsigned int, float, unicode).
_KINDS = "biufU"


# =========================================================================== JSON form
def _float_out(x: float):
    """A float as JSON: itself when finite, else the string "inf", "-inf" or "nan"."""
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def _unsupported(obj, where: str) -> InputError:
    return InputError(
        f"{where or 'the value'} is a {type(obj).__module__}.{type(obj).__name__}, which "
        f"the JSON form of a result does not hold (it holds numbers, strings, None, "
        f"bools, numpy arrays of bool, int, float or str, lists, tuples, dicts and "
        f"Results); save such an object with its own save() (TabularCMDP.save, "
        f"UncertaintySet.save) and keep its path in the result instead"
    )


def encode(obj, external=None, where: str = "", arrays: dict | None = None):
    """The tagged JSON form of ``obj`` (a structure of dicts, lists, str, int, float, None).

    Python floats, ints, bools, strings and ``None`` stay themselves (a non-finite float
    becomes ``{"__type__": "float", "value": "inf"}``); everything else is a dictionary
    with the key ``"__type__"``: ``"ndarray"`` (``dtype``, ``shape`` and the flat
    ``data``, non-finite floats as strings), ``"scalar"`` (a numpy scalar: ``dtype``,
    ``value``), ``"Result"`` (``fields``), ``"dict"`` (``items``, or ``pairs`` when a key
    is not a string), ``"tuple"`` (``items``), ``"Status"`` and ``"path"`` (``value``).
    Lists are JSON lists.

    Parameters
    ----------
    obj
        The value to encode.
    external : callable, optional
        Called as ``external(obj, where)`` on any other object; it returns a JSON-able
        replacement (a dict with ``"__type__"``) or ``None`` to refuse the object.
    where : str
        The dotted name of ``obj`` in its container, for messages.
    arrays : dict, optional
        Where to put numpy arrays instead of inlining them (``.npz`` saving): each
        array is stored under a new key ``"a0"``, ``"a1"``, ... and encoded as
        ``{"__type__": "array", "key": ...}``.

    Raises
    ------
    InputError
        For an object the form does not hold (naming where it is and what to do).
    """
    if obj is None or type(obj) in (bool, str):
        return obj
    if isinstance(obj, Status):
        return {TAG: "Status", "value": obj.value}
    if isinstance(obj, np.ndarray):
        if arrays is None:
            return _encode_array(obj, where)
        key = f"a{len(arrays)}"
        arrays[key] = _native(obj, where)
        return {TAG: "array", "key": key}
    if isinstance(obj, np.generic):
        arr = _encode_array(np.asarray(obj), where)
        return {TAG: "scalar", "dtype": arr["dtype"], "value": arr["data"][0]}
    if type(obj) is int:
        return obj
    if type(obj) is float:
        return obj if math.isfinite(obj) else {TAG: "float", "value": _float_out(obj)}
    if isinstance(obj, Result):
        out = {TAG: "Result", "fields": {str(k): encode(v, external, _join(where, k), arrays)
                                         for k, v in obj._fields_out().items()}}
        if type(obj).result_name is not None:
            out["class"] = type(obj).result_name
        return out
    if isinstance(obj, dict):
        if all(type(k) is str for k in obj):
            return {TAG: "dict", "items": {k: encode(v, external, _join(where, k), arrays)
                                           for k, v in obj.items()}}
        return {TAG: "dict", "pairs": [[encode(k, external, where, arrays), encode(
            v, external, _join(where, k), arrays)] for k, v in obj.items()]}
    if isinstance(obj, list):
        return [encode(v, external, f"{where}[{i}]", arrays) for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return {TAG: "tuple", "items": [encode(v, external, f"{where}[{i}]", arrays)
                                        for i, v in enumerate(obj)]}
    if isinstance(obj, PurePath):
        return {TAG: "path", "value": str(obj)}
    if isinstance(obj, bool | int | float | str):  # subclasses of the plain types
        plain_type = next(t for t in (bool, int, float, str) if isinstance(obj, t))
        return encode(plain_type(obj), external, where, arrays)
    if external is not None:
        out = external(obj, where)
        if out is not None:
            return out
    raise _unsupported(obj, where)


def _join(where: str, key) -> str:
    return f"{where}.{key}" if where else str(key)


def _native(arr: np.ndarray, where: str) -> np.ndarray:
    """``arr`` in native byte order, or an InputError for a dtype the form does not hold."""
    if arr.dtype.kind not in _KINDS:
        raise InputError(
            f"{where or 'the array'} has dtype {arr.dtype}, which the JSON form of a "
            f"result does not hold; convert it to bool, int, float or str"
        )
    if arr.dtype.byteorder == ">":  # big-endian numbers: the same values, native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _encode_array(arr: np.ndarray, where: str) -> dict:
    arr = _native(arr, where)
    flat = arr.ravel().tolist()
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        flat = [_float_out(x) for x in flat]
    return {TAG: "ndarray", "dtype": arr.dtype.str, "shape": list(arr.shape), "data": flat}


def _decode_array(data: dict) -> np.ndarray:
    dtype = np.dtype(data["dtype"])
    flat = data["data"]
    if dtype.kind == "f":
        flat = [float(x) if isinstance(x, str) else x for x in flat]
    return np.array(flat, dtype=dtype).reshape(data["shape"])


def decode(data, external=None, arrays: dict | None = None):
    """The value of a tagged JSON form written by :func:`encode`.

    ``external(data)`` is called on a tagged dictionary of a type that :func:`encode`
    did not write itself (one written by its ``external`` hook); ``arrays`` holds the
    arrays stored apart (``encode(..., arrays=...)``).
    """
    if isinstance(data, list):
        return [decode(v, external, arrays) for v in data]
    if not isinstance(data, dict):
        return data
    kind = data.get(TAG)
    if kind == "ndarray":
        return _decode_array(data)
    if kind == "array" and arrays is not None:
        return np.array(arrays[data["key"]])
    if kind == "scalar":
        return _decode_array({"dtype": data["dtype"], "shape": [], "data": [data["value"]]})[()]
    if kind == "float":
        return float(data["value"])
    if kind == "Result":
        cls = _result_class(data.get("class"))
        return cls._from_fields({k: decode(v, external, arrays)
                                 for k, v in data["fields"].items()})
    if kind == "dict":
        if "items" in data:
            return {k: decode(v, external, arrays) for k, v in data["items"].items()}
        return {decode(k, external, arrays): decode(v, external, arrays)
                for k, v in data["pairs"]}
    if kind == "tuple":
        return tuple(decode(v, external, arrays) for v in data["items"])
    if kind == "Status":
        return Status(data["value"])
    if kind == "path":
        return Path(data["value"])
    if external is not None and kind is not None:
        return external(data)
    raise InputError(f"unknown tagged value {kind!r} in a saved result; it was written by "
                     f"another program or a newer version")


def _flat_scalar(x):
    """A scalar as a plain Python value for :meth:`Result.to_flat`."""
    if isinstance(x, Status):
        return x.value
    if isinstance(x, np.generic):
        return x.item()
    return x


#: Subclasses of :class:`Result` by their ``result_name`` (filled as they are defined).
_SUBCLASSES: dict = {}


def _result_class(name):
    """The Result class a saved result names (``None``: :class:`Result` itself).

    A class of this package whose module is not imported yet is imported (only modules
    of ``rcmdp_exact``: a file never makes the reader import anything else)."""
    if name is None:
        return Result
    if not isinstance(name, str):
        raise InputError(f"a saved result names its class {name!r}, which is not a class "
                         f"name; it was written by another program")
    if name not in _SUBCLASSES and name.startswith("rcmdp_exact."):
        import importlib

        try:
            importlib.import_module(name.rpartition(".")[0])
        except ImportError:
            pass
    if name not in _SUBCLASSES:
        raise InputError(f"a saved result is a {name}, a subclass of Result that is not "
                         f"defined in this session; import its module before reading it")
    return _SUBCLASSES[name]


class Result(dict):
    """A dictionary with attribute access, returned by the toolkit's solvers.

    A subclass (for example :class:`rcmdp_exact.learners.TrainResult`) is a Result with
    methods of its own; it round-trips through :meth:`to_json` / :meth:`from_json` and
    :meth:`save` / :meth:`load` as itself.  It gives its name in the saved form as a
    class keyword, ``class MyResult(Result, name="mypackage.MyResult")`` (default: its
    module and qualified name), and may override ``_fields_out`` (its fields as values
    the JSON form holds) and ``_from_fields`` (the instance from those fields).

    Examples
    --------
    >>> r = Result(value=1.0, success=True)
    >>> r.value
    1.0
    """

    #: The name of the class in the saved form (None for Result itself).
    result_name = None

    #: The ``format`` entry of the saved form of this class.
    result_format = FORMAT
    #: What this class is called in messages ("a result written by Result.save").
    result_kind = "result"

    def __init_subclass__(cls, name: str | None = None, kind: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.result_name = name or f"{cls.__module__}.{cls.__qualname__}"
        cls.result_format = f"{cls.result_name}/1"
        cls.result_kind = kind or cls.__name__
        _SUBCLASSES[cls.result_name] = cls

    @classmethod
    def _formats(cls) -> tuple[str, ...]:
        """The ``format`` entries this class reads: its own and its subclasses'."""
        return tuple(dict.fromkeys(
            [cls.result_format] + [c.result_format for c in _SUBCLASSES.values()
                                   if issubclass(c, cls)]))

    def _fields_out(self) -> dict:
        """The fields as the JSON form writes them (a subclass may convert some)."""
        return dict(self)

    @classmethod
    def _from_fields(cls, fields: dict) -> Result:
        """The result of the fields read back from the JSON form."""
        return cls(fields)

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as exc:  # pragma: no cover - message only
            raise AttributeError(
                f"result has no field {name!r}; available fields: {sorted(self)}"
            ) from exc

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        del self[name]

    def __dir__(self):
        return list(self.keys())

    # ----------------------------------------------------------------- results out
    def to_flat(self, arrays: str = "elements", sep: str = ".",
                max_size: int | None = None) -> dict:
        """A flat dictionary of scalars: one table row.

        Nested results and dictionaries give dotted names (``variants.value.policy``);
        lists and tuples of scalars, and numpy arrays, are written as ``arrays`` says:

        * ``"elements"`` (default): one key per element, the index in brackets:
          ``policy[0,1]``, ``costs[0]`` (a 0-d array keeps its own name);
        * ``"list"``: one key holding the nested list (``array.tolist()``);
        * ``"drop"``: left out.

        ``max_size``: arrays and lists of more elements than this are left out whatever
        ``arrays`` says (a row keeps the costs (K,) and drops the policy (S, A) and the
        occupancies); None keeps every size.

        Scalars become plain Python values (numpy scalars by ``item()``, statuses by
        their string); ``None``, strings and bools stay; any other object (a model, an
        uncertainty set) becomes its ``repr``.

        Examples
        --------
        >>> import numpy as np
        >>> Result(value=1.5, costs=np.array([0.25, 2.0]), lp=Result(status="optimal")
        ...        ).to_flat()
        {'value': 1.5, 'costs[0]': 0.25, 'costs[1]': 2.0, 'lp.status': 'optimal'}
        """
        check_choice(arrays, "arrays", _FLAT_ARRAYS,
                     hint=" (per-element keys, nested lists, or leave arrays out)")
        if max_size is not None:
            from ._checks import check_int

            max_size = check_int(max_size, "max_size", 0)
        out: dict = {}
        _flatten(self._fields_out(), "", out, arrays, sep, max_size)
        return out

    def to_long(self, sep: str = ".", max_size: int | None = None) -> list:
        """The tidy long form: one record per scalar, ``{"field", "index", "value"}``.

        ``field`` is the dotted name of the field (``dual.lo``, ``costs``), ``index``
        the element's index as a tuple (``()`` for a scalar, ``(0, 1)`` for
        ``policy[0,1]``) and ``value`` the plain value.  Every array is kept, one record
        per element, so many results of any size stack into one table with three
        columns (:meth:`to_frame` with ``form="long"``); ``max_size`` leaves out larger
        arrays.

        Examples
        --------
        >>> import numpy as np
        >>> for rec in Result(value=1.5, costs=np.array([0.25, 2.0])).to_long():
        ...     print(rec)
        {'field': 'value', 'index': (), 'value': 1.5}
        {'field': 'costs', 'index': (0,), 'value': 0.25}
        {'field': 'costs', 'index': (1,), 'value': 2.0}
        """
        if max_size is not None:
            from ._checks import check_int

            max_size = check_int(max_size, "max_size", 0)
        out: list = []
        _long(self._fields_out(), "", (), out, sep, max_size)
        return out

    def to_json(self, indent: int | None = None) -> str:
        """The result as strict JSON text (no pickle); :meth:`from_json` reads it back
        exactly (see the module notes: floats bit for bit, arrays with dtype and shape,
        nested results, ``inf`` and ``nan``).

        Raises
        ------
        InputError
            When a field holds an object the JSON form does not (a model, an
            uncertainty set: save those with their own ``save``); the message names
            the field.
        """
        return json.dumps({"format": type(self).result_format, "result": encode(self)},
                          indent=indent,
                          allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Result:
        """The result of JSON text written by :meth:`to_json` (of the class it was written
        from; called on a subclass, the text must hold that subclass)."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise InputError(f"the text is not JSON ({exc}); give the output of "
                             f"Result.to_json()") from None
        formats = cls._formats()
        fmt = data.get("format") if isinstance(data, dict) else None
        # a subclass not defined in this session: its tree says which (decode names it)
        unknown = (cls is Result and isinstance(fmt, str) and fmt.endswith("/1")
                   and fmt[:-2] not in _SUBCLASSES and "result" in data)
        if not unknown and fmt not in formats:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise InputError(f"the JSON is not a saved {cls.__name__} (format {found!r}, "
                             f"expected {' or '.join(repr(f) for f in formats)}); give the "
                             f"output of {cls.__name__}.to_json()")
        return _saved_result(data, InputError, "the JSON",
                             f"give the output of {cls.__name__}.to_json()", cls=cls)

    def to_frame(self, arrays: str = "elements", *, form: str = "wide",
                 max_size: int | None = None):
        """A :class:`pandas.DataFrame` of the result (needs pandas:
        ``pip install "rcmdp_exact[frames]"``).

        ``form="wide"`` (default): one row, the columns of :meth:`to_flat` (``arrays``,
        ``max_size`` as there; ``max_size=16`` keeps the vectors of costs and
        multipliers and leaves out the policy and the values of every state).
        ``form="long"``: the tidy form of :meth:`to_long`, columns ``field``, ``index``,
        ``value``, one row per scalar.  Stack results with
        ``pandas.concat([r.to_frame(...).assign(run=i) for i, r in enumerate(results)])``.
        """
        check_choice(form, "form", FRAME_FORMS,
                     hint=" (one row of columns, or one row per scalar)")
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Result.to_frame needs pandas, which rcmdp_exact does not "
                              "install; pip install \"rcmdp_exact[frames]\" (or use "
                              "to_flat(), a dict per row)") from None
        if form == "long":
            return pd.DataFrame(self.to_long(max_size=max_size),
                                columns=["field", "index", "value"])
        return pd.DataFrame([self.to_flat(arrays, max_size=max_size)])

    def save(self, path) -> Path:
        """Save the result (no pickle); :meth:`load` reads it back exactly.

        The format follows the suffix: ``.npz`` writes an archive (arrays stored as
        arrays, the rest as the JSON form), anything else JSON, with ``.json`` added
        unless the path already ends with it (the rule of every artefact:
        :func:`rcmdp_exact._io.suffixed`).  Returns the path written.
        """
        from ._io import save_json, save_npz

        p = Path(os.fspath(path)).expanduser()
        if p.suffix == ".npz":
            arrays: dict = {}
            tree = encode(self, arrays=arrays)
            return save_npz(p, {"structure": np.array(json.dumps(tree, allow_nan=False)),
                                **arrays}, type(self).result_format, compressed=True)
        return save_json(p, self.to_json())

    @classmethod
    def load(cls, path) -> Result:
        """Read a result written by :meth:`save` (``.json`` or ``.npz``; the path with or
        without its suffix).  A missing or foreign file is a
        :class:`~rcmdp_exact.LoadError` naming the path; called on a subclass, the file
        must hold that subclass."""
        from ._io import LoadError, load_json, load_npz, require_file

        what = f"a {cls.result_kind} written by {cls.__name__}.save"
        p = require_file(path, (".json", ".npz"), what)
        try:
            with p.open("rb") as fh:
                head = fh.read(1)
        except OSError:
            head = b""
        # an archive by its suffix or by its first byte (JSON text starts with "{"):
        # a .npy array or a pickle is then named as what it is
        if p.suffix == ".npz" or (head and head not in b"{[ \t\r\n"):
            data = load_npz(p, cls._formats(), what)
            arrays = {k: v for k, v in data.items() if k not in ("format", "structure")}
            try:
                tree = {"result": json.loads(str(data["structure"]))}
            except (KeyError, ValueError, TypeError) as exc:
                raise LoadError(f"{str(path)!r} is not {what}: its content is damaged "
                                f"({exc})") from None
            return _saved_result(tree, LoadError, repr(str(path)),
                                 f"give the path of {what}", arrays, cls=cls)
        data = load_json(p, cls._formats(), what)
        return _saved_result(data, LoadError, repr(str(path)), f"give the path of {what}",
                             cls=cls)

    def __repr__(self) -> str:
        if not self:
            return f"{type(self).__name__}()"
        width = max(len(k) for k in self) + 1
        lines = []
        for key, val in self.items():
            if isinstance(val, np.ndarray) and val.size > 8:
                text = f"array(shape={val.shape}, dtype={val.dtype})"
            else:
                text = repr(val).replace("\n", "\n" + " " * (width + 2))
            lines.append(f"{key.rjust(width)}: {text}")
        return "\n".join(lines)


def _saved_result(data: dict, error, where: str, fix: str, arrays=None, cls=None) -> Result:
    """The :class:`Result` of the ``"result"`` entry of a saved form; ``error`` (with
    ``where``, the text or the file, and ``fix``) when the entry is missing, damaged or
    holds anything but a result (``{"format": ..., "result": 5}`` is not one), or holds a
    result of another class than ``cls`` (a subclass reads only its own kind)."""
    if "result" not in data:
        raise error(f"{where} has a Result's format but no 'result' entry; {fix}")
    try:
        value = decode(data["result"], arrays=arrays)
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise error(f"{where} is not a saved Result: its content is damaged ({exc}); "
                    f"{fix}") from None
    if not isinstance(value, Result):
        raise error(f"{where} holds a {type(value).__name__} where a Result was expected "
                    f"(a tagged {{'__type__': 'Result', 'fields': {{...}}}}); {fix}")
    if cls is not None and not isinstance(value, cls):
        raise error(f"{where} holds a {type(value).__name__}, not a {cls.__name__}; {fix}")
    return value


def _is_scalar(x) -> bool:
    return x is None or isinstance(x, bool | int | float | str | np.generic)


def _flatten(obj, prefix: str, out: dict, arrays: str, sep: str, max_size=None) -> None:
    if isinstance(obj, Result):
        obj = obj._fields_out()
    if isinstance(obj, dict):
        for key, val in obj.items():
            _flatten(val, f"{prefix}{sep}{key}" if prefix else str(key), out, arrays, sep,
                     max_size)
        return
    if isinstance(obj, list | tuple):
        if all(_is_scalar(x) for x in obj):
            if arrays == "drop" or (max_size is not None and len(obj) > max_size):
                return
            if arrays == "list":
                out[prefix] = [_flat_scalar(x) for x in obj]
                return
        for i, val in enumerate(obj):
            _flatten(val, f"{prefix}[{i}]", out, arrays, sep, max_size)
        return
    if isinstance(obj, np.ndarray):
        if obj.ndim and (arrays == "drop" or (max_size is not None and obj.size > max_size)):
            return
        if arrays == "list" or obj.ndim == 0:
            out[prefix] = obj.tolist() if obj.ndim else _flat_scalar(obj[()])
            return
        for idx in np.ndindex(obj.shape):
            out[f"{prefix}[{','.join(map(str, idx))}]"] = _flat_scalar(obj[idx])
        return
    out[prefix] = _flat_scalar(obj) if _is_scalar(obj) else repr(obj)


def _long(obj, field: str, index: tuple, out: list, sep: str, max_size) -> None:
    """The records of :meth:`Result.to_long` below ``obj`` (at ``field`` and ``index``)."""
    if isinstance(obj, Result):
        obj = obj._fields_out()
    if isinstance(obj, dict):
        for key, val in obj.items():
            _long(val, f"{field}{sep}{key}" if field else str(key), (), out, sep, max_size)
        return
    if isinstance(obj, list | tuple):
        if max_size is not None and all(_is_scalar(x) for x in obj) and len(obj) > max_size:
            return
        for i, val in enumerate(obj):
            _long(val, field, (*index, i), out, sep, max_size)
        return
    if isinstance(obj, np.ndarray):
        if max_size is not None and obj.ndim and obj.size > max_size:
            return
        for idx in np.ndindex(obj.shape):
            out.append({"field": field, "index": (*index, *idx),
                        "value": _flat_scalar(obj[idx])})
        return
    out.append({"field": field, "index": index,
                "value": _flat_scalar(obj) if _is_scalar(obj) else repr(obj)})

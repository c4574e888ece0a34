r"""The uncertainty-set protocol: what the robust code needs from a set, and nothing more.

A set :math:`\mathcal P` of transition kernels around a nominal kernel :math:`\hat P`
(S, A, S) is used by the rest of the toolkit only through the classes of this module.
:class:`UncertaintySet` is what every set has:

* ``nominal`` (S, A, S), ``support`` (S, A, S) bool, ``n_states``, ``n_actions``;
* :meth:`~UncertaintySet.distance`, :meth:`~UncertaintySet.contains`,
  :meth:`~UncertaintySet.save` and :meth:`~UncertaintySet.load` (``.npz``, no pickle),
  :meth:`~UncertaintySet.absorb_terminal`;
* its registration: ``kind`` (the name of the kind on the command line and in
  :mod:`rcmdp_exact.testing`), ``note``, and the optional class methods
  ``from_counts`` (the kind built from the counts of the estimation phase) and
  ``strategy`` (a hypothesis strategy of sets of the kind).

Three protocols derive from it, one per way the adversary picks a kernel; the robust
code dispatches on these classes:

* :class:`SARectangularSet` (``rectangularity = "sa"``: one set per (s, a), the
  adversary picks each row on its own): :meth:`~SARectangularSet.worst_case` is written
  once here, for every such set: it turns the value vectors into rows, calls the set's
  row solver :meth:`~SARectangularSet._solve_rows`, and shapes the answer, with a
  success flag and a message per row;
* :class:`SRectangularSet` (``"s"``: one set per state, shared by its actions): the
  adversary depends on the policy, ``worst_case(z, policy)``, and the policy player's
  step is the set's own ``bellman_max_min(z, lo, hi)``;
* :class:`KernelSet` (``"none"``: a set of whole kernels, its ``members``): no worst
  case per row; a robust evaluation takes the worst member.

Subclassing registers a class (``__init_subclass__``): by the name of its class for
:func:`load_set`, and by its ``kind`` when it declares one.  A kind of your own is one
class in one module of yours (``docs/your_set.md``); the built-in kinds are the files of
this package that declare ``KIND`` (:mod:`.kinds`).  Only the package
:mod:`rcmdp_exact.uncertainty` knows the inside of a set (radii, weights, bounds);
everyone else calls the methods above.
"""

from __future__ import annotations

import abc
import importlib
import re
import sys

import numpy as np

from .._checks import (
    InnerProblemError,
    InputError,
    OptionError,
    as_array,
    as_float_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_real,
    check_shape,
    check_support,
    check_type,
)
from .._io import load_npz, save_npz
from .._result import Result
from ..core.model_checks import ModelError, check_transition_rows
from ..names import INNERS
from .kinds import KIND_PATTERN, builtin_class_module, builtin_kinds, kind_files

__all__ = [
    "INNERS",
    "PROTOCOLS",
    "RECTANGULARITIES",
    "KernelSet",
    "SARectangularSet",
    "SRectangularSet",
    "UncertaintySet",
    "check_set",
    "load_set",
    "nominal_kernel",
    "polyhedral_kinds",
    "radii",
    "registered_kinds",
    "set_class",
    "split_batch",
    "state_radii",
    "support_mask",
    "tile",
]

#: ``"sa"``: one set per (state, action); ``"s"``: one set per state; ``"none"``: a set
#: of whole kernels (the adversary picks one kernel, not one row per pair).
RECTANGULARITIES = ("sa", "s", "none")

#: Every set class by its class name (the format of its files).
_FORMATS: dict[str, type] = {}
#: Every kind of set by its name.
_KINDS: dict[str, type] = {}
_KIND_RE = re.compile(rf"^{KIND_PATTERN}$")


# =========================================================================== helpers
def split_batch(z, S: int, A: int, name: str = "z"):
    """``z`` as float64 with its batch axis: returns (z, batched, per_pair).

    Accepted shapes: (S,) and (J, S) (one vector per state, shared by every pair) and
    (S, A, S) and (J, S, A, S) (one vector per pair).
    """
    zz = as_float_array(z, name, f"give {name} of shape (S,), (J, S), (S, A, S) or "
                                 f"(J, S, A, S) with S={S}, A={A}")
    if zz.ndim == 1 and zz.shape == (S,):
        return zz, False, False
    if zz.ndim == 2 and zz.shape[1] == S:
        return zz, True, False
    if zz.shape == (S, A, S):
        return zz, False, True
    if zz.ndim == 4 and zz.shape[1:] == (S, A, S):
        return zz, True, True
    check_shape(zz, (S, A, S), f"{name} (or (S,), (J, S), (J, S, A, S))", ("s", "a", "s'"))
    raise AssertionError  # pragma: no cover - check_shape raised


def tile(arr: np.ndarray, J: int) -> np.ndarray:
    """A per-pair array (S, A, ...) as rows (J S A, ...) of a batch of J (a view for J=1),
    in the order of the rows a set's :meth:`SARectangularSet._solve_rows` receives."""
    S, A = arr.shape[:2]
    rest = arr.shape[2:]
    if J == 1:
        return arr.reshape(S * A, *rest)
    return np.broadcast_to(arr, (J, *arr.shape)).reshape(J * S * A, *rest)


def nominal_kernel(nominal, name: str = "nominal") -> np.ndarray:
    """A checked copy of a nominal kernel (S, A, S): finite, >= 0, rows summing to 1."""
    P = np.array(as_float_array(nominal, name, "give an array (S, A, S)", finite=False))
    if P.ndim != 3 or P.shape[0] != P.shape[2] or 0 in P.shape:
        raise InputError(
            f"{name} must have shape (S, A, S) with S, A >= 1 and {name}[s, a, s'] the "
            f"probability of s' after a in s, got shape {P.shape}"
        )
    check_transition_rows(P, name)
    return P


def radii(alpha, S: int, A: int, name: str = "alpha") -> np.ndarray:
    """Radii per pair as a float (S, A) array (a number is shared), each finite and >= 0."""
    al = as_float_array(alpha, name, "give a number or an array (S, A) of radii")
    if al.shape not in ((), (S, A)):
        check_shape(al, (S, A), f"{name} (or one number)", ("s", "a"))
    al = np.array(np.broadcast_to(al, (S, A)))
    check_nonnegative(al, name, "radii (0 gives the nominal distribution)")
    return al


def state_radii(radius, S: int, name: str = "radius") -> np.ndarray:
    """Radii per state as a float (S,) array (a number is shared), each finite and >= 0."""
    r = as_float_array(radius, name, "give a number or an array (S,) of radii, one per state")
    if r.shape not in ((), (S,)):
        check_shape(r, (S,), f"{name} (or one number)", ("s",))
    r = np.array(np.broadcast_to(r, (S,)))
    check_nonnegative(r, name, "radii (0 gives the nominal kernel)")
    return r


def support_mask(support, S: int, A: int, values=None, name: str = "",
                 fix: str = "") -> np.ndarray:
    """A copy of a boolean support mask of shape (S, A, S) (None: every next state).

    With ``values`` (S, A, S), also refuse a positive entry outside the support, naming
    it as ``name[s, a, s']`` and ending the message with ``fix``.
    """
    if support is None:
        return np.ones((S, A, S), dtype=bool)
    sup = as_array(support, "support", "give a boolean array (S, A, S)")
    if sup.dtype != bool:
        raise ModelError(f"support must be a boolean array (S, A, S), got dtype {sup.dtype}")
    check_shape(sup, (S, A, S), "support", ("s", "a", "s'"))
    if values is not None:
        check_support(values, sup, name, fix)
    return sup.copy()


# =========================================================================== the registry
def _import_builtins() -> None:
    """Import every built-in kind (they register themselves)."""
    for info in kind_files().values():
        importlib.import_module(info.module, __package__)


def registered_kinds() -> dict[str, type]:
    """Every kind of set by name: the built-in ones (imported here) and those of every
    set class of yours defined so far."""
    _import_builtins()
    order = [k for k in kind_files() if k in _KINDS]
    return {**{k: _KINDS[k] for k in order}, **_KINDS}


def polyhedral_kinds() -> list[str]:
    """The kinds of set whose rows give their vertices (:meth:`SARectangularSet.
    row_vertices`, which :func:`~rcmdp_exact.uncertainty.extreme_kernels` enumerates)."""
    return [k for k, cls in registered_kinds().items() if issubclass(cls, SARectangularSet)
            and cls.row_vertices is not SARectangularSet.row_vertices]


def _class_of_spec(text: str, what: str) -> type:
    """The class of ``MODULE:CLASS`` (imported; the working folder is searched last)."""
    mod_name, _, cls_name = text.partition(":")
    if not mod_name or not cls_name:
        raise InputError(f"{what} {text!r} is not MODULE:CLASS; give a kind's name or "
                         f"MODULE:CLASS of a set class of yours (docs/your_set.md)")
    if "" not in sys.path and "." not in sys.path:  # a module in the working folder, last
        sys.path.append("")
    try:
        cls = getattr(importlib.import_module(mod_name), cls_name)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"{what} {text!r} cannot be imported ({exc}); give MODULE:CLASS "
                         f"of an importable module") from None
    if not (isinstance(cls, type) and issubclass(cls, UncertaintySet)):
        raise InputError(f"{what} {text!r} is not a subclass of rcmdp_exact.uncertainty."
                         f"UncertaintySet; give a set class (docs/your_set.md)")
    if cls.__dict__.get("kind") is None:
        raise InputError(f"{what} {text!r} declares no kind of its own; give the class a "
                         f"class attribute kind = \"a-name\" (docs/your_set.md)")
    return cls


def set_class(kind: str, *, estimated: bool = False, what: str = "set kind") -> type:
    """The set class of a kind.

    Parameters
    ----------
    kind : str
        A kind's name (``"kl"``; :func:`registered_kinds`) or ``"MODULE:CLASS"``, a set
        class of yours with a ``kind`` of its own (the module is imported here; the
        working folder is searched after ``sys.path``).
    estimated : bool
        Also require a counts builder (``from_counts``): the kinds that ``--set`` and
        :func:`rcmdp_exact.protocol.estimation.estimate_set` build from data.
    what : str
        How messages name the argument.

    Raises
    ------
    InputError
        Naming the kind and the kinds there are.
    """
    check_type(kind, what, str, "give a kind's name or MODULE:CLASS")
    if ":" in kind:
        cls = _class_of_spec(kind, what)
    else:
        kinds = registered_kinds()
        cls = kinds.get(kind)
        if cls is None:
            names = [k for k, c in kinds.items() if c.has_counts_builder() or not estimated]
            raise OptionError(f"{what} {kind!r} is not a kind of uncertainty set; give one of "
                             f"{', '.join(names)}, or MODULE:CLASS of a set class of yours "
                             f"(docs/your_set.md)")
    if estimated and not cls.has_counts_builder():
        raise InputError(f"{what} {kind!r}: {cls.__name__} cannot be built from the counts "
                         f"of the estimation phase (it has no from_counts); give a kind "
                         f"that can ({', '.join(builtin_kinds(estimated=True))}) or add "
                         f"from_counts to the class (docs/your_set.md)")
    return cls


def membership_tol(tol) -> float:
    """The ``tol`` of a set's ``contains``: a finite number >= 0."""
    return check_real(tol, "tol", 0.0, hint=" (the tolerance of membership, e.g. 1e-9)")


def kind_radius(radius) -> float:
    """The ``radius`` of a kind's ``around(model, radius)``: a finite number >= 0."""
    return check_real(radius, "radius", 0.0, hint=" (the set's size around the model, "
                      "e.g. 0.1)")


def kind_delta(delta) -> float:
    """The ``delta`` of a kind's ``from_counts``: an error probability in (0, 1)."""
    return check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                      hint=" (the error probability of the estimated set, e.g. 0.1)")


def checked_grid(grid) -> int | None:
    """The ``grid`` of a strategy: None (any float) or an int >= 1 (multiples of
    1/grid)."""
    return None if grid is None else check_int(grid, "grid", 1)


def check_strategy(grid, **highs) -> None:
    """A kind's ``strategy`` options, before any drawing: ``grid``
    (:func:`checked_grid`) and the upper bound of each drawn value (``max_radius=2.0``):
    a finite number >= 0 named in the message."""
    checked_grid(grid)
    for name, value in highs.items():
        check_real(value, name, 0.0)


# =========================================================================== the protocol
class UncertaintySet(abc.ABC):
    """Base class of every uncertainty set (see the module docstring).

    A set derives from one of :class:`SARectangularSet`, :class:`SRectangularSet` and
    :class:`KernelSet`, implements what that class declares abstract (``nominal``,
    :meth:`distance`, :meth:`contains`, the array hooks :meth:`_arrays` /
    :meth:`_from_arrays` that :meth:`save` and :meth:`load` use, and the worst case of
    its protocol), and, to be a kind, declares ``kind``.  Sets are immutable.
    """

    #: The name of the kind (``--set KIND``, ``rcmdp_exact.testing.balls``, messages):
    #: lowercase words joined by hyphens.  A class registers its kind when it declares
    #: ``kind`` itself; None (the default): a set used from Python only.
    kind: str | None = None
    #: One line on the kind, for ``--help``, reports and :func:`rcmdp_exact.protocol.
    #: estimation.estimate_set` (how it is built from the counts).
    note: str = ""
    #: What the set is, in a few words ("sa-rectangular L1 ball"), for one-line names of
    #: a set in reports (the suite's records).
    title: str = ""
    #: "sa", "s" or "none" (see :data:`RECTANGULARITIES`), set by the three protocol
    #: classes; for messages: the code dispatches on the class.
    rectangularity: str | None = None
    #: The methods of the worst case: "sort" (the set's exact solver) and "lp" (its
    #: independent convex program, a cross-check), or only "sort".
    methods: tuple = INNERS
    #: Names of the radius arrays of :meth:`_arrays` (per pair (S, A) or per state (S,)),
    #: set to 0 on the rows of terminal states by :meth:`absorb_terminal`.
    _RADII: tuple = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _register(cls)

    # ----------------------------------------------------------------- registration
    @classmethod
    def l1_level_radius(cls, level: float) -> float | None:
        r"""The radius to give :meth:`around` so that the kind's set matches the
        sa-rectangular L1 ball of radius ``level`` (the suite's grid of sets: one level,
        one set of each kind), or None for a kind without such a match (the default)."""
        return None

    @classmethod
    def has_counts_builder(cls) -> bool:
        """True when the class builds its kind from estimation counts (``from_counts``)."""
        return callable(getattr(cls, "from_counts", None))

    @classmethod
    def has_around_builder(cls) -> bool:
        """True when the class builds its kind around a model's own kernel with one
        radius (``around(model, radius, support)``: a model judged on itself)."""
        return callable(getattr(cls, "around", None))

    @classmethod
    def has_strategy(cls) -> bool:
        """True when the class gives a hypothesis strategy of its sets (``strategy``)."""
        return callable(getattr(cls, "strategy", None))

    # ----------------------------------------------------------------- shape
    @property
    @abc.abstractmethod
    def nominal(self) -> np.ndarray:
        """The nominal kernel (S, A, S), read-only."""

    @property
    def support(self) -> np.ndarray:
        """Next states that may receive mass (S, A, S) bool (default: every state)."""
        return np.ones(self.nominal.shape, dtype=bool)

    @property
    def n_states(self) -> int:
        return self.nominal.shape[0]

    @property
    def n_actions(self) -> int:
        return self.nominal.shape[1]

    # ----------------------------------------------------------------- membership
    @abc.abstractmethod
    def distance(self, P) -> np.ndarray:
        """The set's own distance of each row (``"sa"`` and ``"none"``: (S, A); ``"s"``:
        (S,)) of a kernel ``P`` (S, A, S) from the nominal."""

    @abc.abstractmethod
    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``P`` (S, A, S) lies in the set, up to ``tol``: (S, A) for an
        ``"sa"`` set, (S,) for an ``"s"`` set; for a ``"none"`` set, (S, A) all True
        exactly when P is a member."""

    def _kernel(self, P, name: str = "P") -> np.ndarray:
        return as_float_array(P, name, "give an (S, A, S) kernel", shape=self.nominal.shape,
                              axes=("s", "a", "s'"), finite=False)

    def _rows_ok(self, P: np.ndarray, tol: float) -> np.ndarray:
        """(S, A): each row of ``P`` is a distribution on the support, up to ``tol``
        (checked: every ``contains`` of a rectangular set starts here)."""
        tol = membership_tol(tol)
        ok = P.min(axis=2) >= -tol
        ok &= np.abs(P.sum(axis=2) - 1.0) <= tol
        ok &= np.where(self.support, 0.0, np.abs(P)).max(axis=2) <= tol
        return ok

    # ----------------------------------------------------------------- terminal states
    def absorb_terminal(self, terminal):
        """The set with the rows of the terminal states (S,) bool made self-loops.

        The nominal rows (and the support, when the set has one) of those states become
        the self-loop, their radii (:data:`_RADII`) 0: the adversary cannot move them.
        The set is rebuilt from its arrays (:meth:`_arrays`, :meth:`_from_arrays`); a
        class with other arrays to change extends :meth:`_absorb_arrays`.
        """
        S = self.n_states
        term = as_array(terminal, "terminal", "give a boolean array (S,)")
        check_shape(term, (S,), "terminal", ("s",))
        term = term.astype(bool)
        if not term.any():
            return self
        data = {k: np.array(v) for k, v in self._arrays().items()}
        self._absorb_arrays(data, np.flatnonzero(term))
        return type(self)._from_arrays(data)

    def _absorb_arrays(self, data: dict, ts: np.ndarray) -> None:
        """Change the arrays ``data`` of :meth:`_arrays` in place for the terminal states
        ``ts`` (see :meth:`absorb_terminal`)."""
        for key in ("nominal", "support"):
            if key in data:
                arr = data[key]
                arr[ts] = 0
                arr[ts, :, ts] = 1
        for key in self._RADII:
            data[key][ts] = 0.0

    # ----------------------------------------------------------------- files
    @abc.abstractmethod
    def _arrays(self) -> dict:
        """The arrays that rebuild the set (saved by :meth:`save`)."""

    @classmethod
    @abc.abstractmethod
    def _from_arrays(cls, data: dict):
        """The set of the arrays of :meth:`_arrays` (validated like a new set)."""

    @classmethod
    def _format(cls) -> str:
        return f"rcmdp_exact.{cls.__name__}/1"

    def save(self, path):
        """Save to ``.npz`` (no pickle; the suffix is added if missing); returns the path."""
        return save_npz(path, self._arrays(), self._format(), compressed=True)

    @classmethod
    def load(cls, path):
        """Load a set saved by :meth:`save` (path with or without ``.npz``).

        ``UncertaintySet.load`` reads any kind of set (a class of yours once it is
        defined); ``L1Ball.load`` and the other classes read only their own kind.
        """
        if cls is UncertaintySet:
            _import_builtins()
            formats = tuple(k._format() for k in _FORMATS.values())
            what = "an uncertainty set written by save()"
        else:
            formats = (cls._format(),)
            what = f"an {cls.__name__} written by {cls.__name__}.save"
        data = load_npz(path, formats, what)
        kind = cls
        if "format" in data:
            kind = _FORMATS[str(data["format"]).split("/")[0].removeprefix("rcmdp_exact.")]
        return kind._from_arrays({k: v for k, v in data.items() if k != "format"})


def _register(cls) -> None:
    """Register a set class by its name (files) and, when it declares one, its kind."""
    if cls.__module__ == __name__:  # the protocol classes themselves
        return
    name = cls.__name__
    old = _FORMATS.get(name)
    same = lambda a: (a.__module__, a.__qualname__) == (cls.__module__, cls.__qualname__)  # noqa: E731
    builtin = builtin_class_module(name)
    home = f"{__package__}{builtin}" if builtin else None
    if (old is not None and not same(old)) or (home is not None and cls.__module__ != home):
        raise TypeError(f"a set class named {name} exists already ({(old or cls).__module__}"
                        f"{'' if old else ' in rcmdp_exact'}); files name a set by its class, "
                        f"so give yours another name")
    kind = cls.__dict__.get("kind")
    if kind is not None:
        if not isinstance(kind, str) or not _KIND_RE.match(kind):
            raise TypeError(f"{name}.kind = {kind!r} is not a kind's name: use lowercase "
                            f"words of letters and digits joined by hyphens, like "
                            f"\"weighted-l1\"")
        info = kind_files().get(kind)
        taken = _KINDS.get(kind)
        if (taken is not None and not same(taken)) or (info is not None and info.cls != name):
            owner = taken.__name__ if taken is not None else info.cls
            raise TypeError(f"the kind {kind!r} of {name} is the kind of {owner}; give "
                            f"{name} a kind of its own")
        _KINDS[kind] = cls
    _FORMATS[name] = cls


def load_set(path) -> UncertaintySet:
    """Any uncertainty set saved by :meth:`UncertaintySet.save`."""
    return UncertaintySet.load(path)


# =========================================================================== sa-rectangular
class SARectangularSet(UncertaintySet):
    r"""An sa-rectangular set: one set of rows :math:`\mathcal P_{s,a}` per pair.

    :meth:`worst_case` is the same for every such set: it takes the value vectors ``z``
    of every documented shape, checks ``method``, turns them into rows and calls the
    set's row solver :meth:`_solve_rows` (and :meth:`_solve_shared` for one vector per
    state, when the set has a faster way), then shapes the answer, with ``success``,
    ``row_success`` per row and a ``message`` naming the first row that failed.  A set
    implements :meth:`_solve_rows`, and may give the vertices of its rows
    (:meth:`row_vertices`) for brute-force checks.
    """

    rectangularity = "sa"
    #: The hint of the message that refuses an unknown ``method``.
    method_hint = " ('sort': the exact solver, batched; 'lp': one cvxpy problem per row, " \
                  "a cross-check)"

    def worst_case(self, z, policy=None, *, method: str = "sort") -> Result:
        r"""The worst case of every pair: :math:`\min_{p \in \mathcal P_{s,a}} p^\top
        z(s, a, \cdot)`.

        Parameters
        ----------
        z : array (S,), (J, S), (S, A, S) or (J, S, A, S)
            Shared by all pairs or one vector per pair, with an optional batch axis J.
        policy : None
            Not used (an sa-rectangular set does not depend on the policy).
        method : str
            One of the set's :attr:`methods`: ``"sort"`` (its exact solver) or ``"lp"``
            (its convex program, one cvxpy problem per row, a cross-check).

        Returns
        -------
        Result
            ``p`` (..., S, A, S) the minimising rows (a kernel in the set), ``value``
            (..., S, A), ``method``, ``success`` (every row solved), ``row_success``
            (..., S, A), a ``message`` naming the first row that failed (when one did),
            and the set's own fields per row (the LP's ``lp_success``, the KL ball's
            certificate ``dual`` and ``gap``, ...).
        """
        S, A = self.n_states, self.n_actions
        zz, batched, per_pair = split_batch(z, S, A)
        check_choice(method, "method", self.methods, hint=self.method_hint)
        J = zz.shape[0] if batched else 1
        if per_pair:
            Z = np.ascontiguousarray(zz).reshape(J * S * A, S)
            p, val, ok, extra = self._solve_rows(Z, J, method)
        else:
            p, val, ok, extra = self._solve_shared(zz.reshape(J, S), method)
        p, val, ok, extra = self._answer_shapes(p, val, ok, extra, J, method,
                                                "_solve_rows" if per_pair else
                                                "_solve_shared")
        lead = (J, S, A) if batched else (S, A)
        val = np.asarray(val)
        ok = np.broadcast_to(np.asarray(ok, dtype=bool), val.shape).reshape(lead)
        fields = {k: np.asarray(v).reshape(lead) for k, v in extra.items()}
        success = bool(ok.all())
        if not success:
            first = tuple(int(i) for i in np.argwhere(~ok)[0])
            names = ("j", "s", "a")[-len(lead):]
            where = ", ".join(f"{n}={i}" for n, i in zip(names, first, strict=True))
            fields["message"] = (
                f"{type(self).__name__}.worst_case (method={method!r}) did not solve "
                f"{int((~ok).sum())} of {ok.size} rows; the first is ({where})")
        return Result(p=np.asarray(p).reshape(*lead, S), value=val.reshape(lead),
                      method=method, success=success, row_success=ok, **fields)

    def _answer_shapes(self, p, val, ok, extra, J: int, method: str, solver: str):
        """The answer of a row solver with the shapes it must have (p (n, S), value
        (n,), ok one bool or (n,), extra arrays of n entries, n = J S A), or an
        :class:`~rcmdp_exact.InnerProblemError` naming the class, the solver and what it
        returned (not a raw reshape error)."""
        S, A = self.n_states, self.n_actions
        n = J * S * A
        p, val, ok = np.asarray(p), np.asarray(val), np.asarray(ok)
        wrong = []
        if p.shape != (n, S):
            wrong.append(f"p of shape {p.shape}, not ({n}, {S})")
        if val.shape != (n,):
            wrong.append(f"value of shape {val.shape}, not ({n},)")
        if ok.shape not in ((), (n,)):
            wrong.append(f"ok of shape {ok.shape}, not one bool or ({n},)")
        bad = [k for k, v in dict(extra).items() if np.size(v) != n]
        if bad:
            wrong.append(f"the fields {', '.join(map(repr, bad))} without one entry per "
                         f"row")
        if wrong:
            raise InnerProblemError(
                f"{type(self).__name__}.{solver} (method={method!r}) returned "
                f"{'; '.join(wrong)}: it must return one row of {S} probabilities and "
                f"one value per row of its {n} rows (J={J} batch elements of S={S} "
                f"states and A={A} actions, in the order (j, s, a)); fix the set's "
                f"solver (docs/your_set.md)")
        return p, val, ok, extra

    @abc.abstractmethod
    def _solve_rows(self, Z: np.ndarray, J: int, method: str):
        """Solve the rows ``Z`` (J S A, S), in the order (j, s, a): the values of batch
        element j at pair (s, a) are ``Z[(j * S + s) * A + a]`` (:func:`tile` repeats
        a per-pair array of the set in that order).

        Returns ``(p, value, ok, extra)``: the minimising rows ``p`` (J S A, S), their
        values ``value`` (J S A,), the success of every row ``ok`` ((J S A,) bool, or one
        bool for all) and a dict ``extra`` of other per-row fields ((J S A,) arrays).
        ``method`` is one of :attr:`methods`.
        """

    def _solve_shared(self, z: np.ndarray, method: str):
        """Solve one vector per state, shared by every pair: ``z`` (J, S).  The default
        repeats it for every pair and calls :meth:`_solve_rows`; a set that can do better
        (the L1 ball sorts each vector once) overrides it, with the same returns."""
        J, S = z.shape
        A = self.n_actions
        Z = np.broadcast_to(z.reshape(J, 1, 1, S), (J, S, A, S)).reshape(J * S * A, S)
        return self._solve_rows(Z, J, method)

    def compiled_rows(self):
        """The set's rows for compiled code, or None (the default: the set is solved by its
        :meth:`worst_case` alone).

        A set that returns an object here promises that its ``solve(z, f=None)`` gives
        the answer of :meth:`worst_case` with ``method="sort"`` for every row of a
        batch, in one compiled call: ``z`` (J, S), one vector per problem shared by its
        pairs, with the pair's part ``f`` (J, S, A) added to the values, or ``z`` (J, S,
        A, S) without ``f``; it returns ``(q (J, S, A), P (J, S, A, S))``.  The robust
        engine calls it in place of :meth:`worst_case` (``RobustGame(...,
        compiled=True)``, the default).  The toolkit's :class:`~rcmdp_exact.L1Ball`
        returns its :class:`~rcmdp_exact.uncertainty.L1Rows`, which the learners'
        compiled loop also reads (its per-step worst case and the adversary's penalty
        are defined on the L1 ball).
        """
        return None

    #: Why the set gives no vertices of its rows (the message of :meth:`row_vertices`).
    no_vertices = "its rows are not polytopes whose vertices it enumerates"

    def _pair(self, s, a) -> tuple[int, int]:
        """``(s, a)`` checked: a state and an action index of the set's kernel."""
        S, A = self.nominal.shape[:2]
        return check_int(s, "s", 0, S - 1), check_int(a, "a", 0, A - 1)

    def row_vertices(self, s: int, a: int) -> np.ndarray:
        """The vertices (k, S) of the set of rows of pair (s, a), for brute-force checks
        (:func:`~rcmdp_exact.uncertainty.extreme_kernels`).  Sets whose rows are
        polytopes override it; the default refuses, saying why (:attr:`no_vertices`)."""
        self._pair(s, a)
        raise InputError(
            f"{type(self).__name__} gives no vertices of its rows ({self.no_vertices}): "
            f"extreme_kernels enumerates the vertices of polyhedral sa-rectangular sets "
            f"(the kinds {', '.join(polyhedral_kinds())})")


# =========================================================================== s-rectangular
class SRectangularSet(UncertaintySet):
    r"""An s-rectangular set: one set :math:`\mathcal U_s` of the rows of all actions of
    a state, shared by them.

    The adversary of state s moves the rows of all its actions at once, so its answer
    depends on the policy (:meth:`worst_case`), and the policy player's best answer may
    randomise (:meth:`bellman_max_min`).  The robust engine calls both.
    """

    rectangularity = "s"

    @abc.abstractmethod
    def worst_case(self, z, policy, *, method: str = "sort") -> Result:
        r"""The adversary's answer to a policy: for each state,
        :math:`\min_{p \in \mathcal U_s} \sum_a \pi(a \mid s)\, p_a^\top z(s, a, \cdot)`.

        ``z`` (S,), (J, S), (S, A, S) or (J, S, A, S); ``policy`` (S, A) or (J, S, A)
        (required).  Returns ``p`` (..., S, A, S) (a kernel of the set), ``value``
        (..., S) (the per-state values of the policy's mixture), ``method``,
        ``success``.
        """

    @abc.abstractmethod
    def bellman_max_min(self, z, lo=None, hi=None, *, method: str = "sort") -> Result:
        r"""The robust Bellman optimality update, state by state:
        :math:`V(s) = \max_{\pi_s \in B_s} \min_{p \in \mathcal U_s} \sum_a \pi_s(a)\,
        p_a^\top z(s, a, \cdot)` over the policy box :math:`B_s = \{\ell_s \le \pi_s \le
        h_s\} \cap \Delta_A` (default: the simplex).

        Returns ``value`` (..., S), ``policy`` (..., S, A) (a maximiser), ``p`` (...,
        S, A, S) (the adversary's answer to it), ``success``, ``message``.
        """


# =========================================================================== whole kernels
class KernelSet(UncertaintySet):
    """A set of whole kernels (not rectangular): the adversary picks a member as a whole.

    A set implements ``members`` (M, S, A, S); a robust evaluation takes the worst
    member, and :meth:`distance` and :meth:`contains` compare a kernel with its closest
    member.  There is no worst case per row, so no robust Bellman operator.
    """

    rectangularity = "none"
    methods = ()

    @property
    @abc.abstractmethod
    def members(self) -> np.ndarray:
        """The kernels of the set (M, S, A, S), read-only; the nominal is one of them."""

    @property
    def n_members(self) -> int:
        """The number M of kernels."""
        return self.members.shape[0]

    def closest(self, P) -> int:
        """The index of the member closest to ``P`` in the largest absolute difference
        over all entries (the first of equally close ones)."""
        P = self._kernel(P)
        return int(np.argmin(np.abs(self.members - P).max(axis=(1, 2, 3))))

    def distance(self, P) -> np.ndarray:
        r"""Per pair (S, A): :math:`\max_{s'} |P(s'|s,a) - P_{m^*}(s'|s,a)|` for the
        closest member :math:`m^*` (:meth:`closest`: smallest largest difference over
        the whole kernel).  All zero exactly when P is a member."""
        P = self._kernel(P)
        return np.abs(P - self.members[self.closest(P)]).max(axis=2)

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """(S, A): the rows of ``P`` that equal, up to ``tol``, those of the closest member.

        All True exactly when P is a member up to ``tol``; otherwise the pairs where
        P differs from the closest member are False (rows taken from different members
        do not make a member: the set is not rectangular).
        """
        tol = membership_tol(tol)
        return self.distance(P) <= tol

    def worst_case(self, z, policy=None, *, method: str = "sort"):
        """Not defined: the set is not rectangular (always raises an InputError)."""
        name = type(self).__name__
        raise InputError(
            f"{name} is not rectangular (the adversary picks one of its "
            f"{self.n_members} kernels as a whole), so it has no worst case per (s, a); "
            f"evaluate a policy against it with rcmdp_exact.robust_evaluate(model, "
            f"policy, set) (the worst of the members), or use each member of "
            f"{name}.members with model.with_transitions(P); the robust Bellman "
            f"operator, robust value iteration and the bracket need a rectangular set"
        )


#: The protocol class of each rectangularity (code dispatches on these classes; the
#: strings name them in messages and options).
PROTOCOLS = {"sa": SARectangularSet, "s": SRectangularSet, "none": KernelSet}


def check_set(uset, model, rectangularity: str | None = None, what: str = "") -> None:
    """Raise unless ``uset`` is an uncertainty set of the model's (S, A), of one of the
    three protocols.

    With ``rectangularity`` (``"sa"``, ``"s"`` or ``"none"``), a set of another protocol
    is refused with a message naming the set and ``what`` needs the property.
    """
    check_type(uset, "the uncertainty set", UncertaintySet,
               "build one with rcmdp_exact.estimate(model, ...).uset, l1_ball(model, alpha) "
               "or a set class of rcmdp_exact (L1Ball, ...)")
    if not isinstance(uset, SARectangularSet | SRectangularSet | KernelSet):
        raise InputError(
            f"{type(uset).__name__} derives from UncertaintySet but from none of its "
            f"protocols; derive it from SARectangularSet, SRectangularSet or KernelSet "
            f"(rcmdp_exact.uncertainty; docs/your_set.md)")
    shape = (model.n_states, model.n_actions, model.n_states)
    if uset.nominal.shape != shape:
        check_shape(uset.nominal, shape, "the uncertainty set (its nominal kernel, for this "
                    "model)", ("s", "a", "s'"))
    if rectangularity is not None:
        check_choice(rectangularity, "rectangularity", RECTANGULARITIES)
        if not isinstance(uset, PROTOCOLS[rectangularity]):
            kind = ("not rectangular (the adversary picks a whole kernel)"
                    if isinstance(uset, KernelSet) else f"{uset.rectangularity}-rectangular")
            raise InputError(
                f"{what or 'this computation'} needs an {rectangularity}-rectangular set, "
                f"but {type(uset).__name__} is {kind}; use an {rectangularity}-rectangular "
                f"set (L1Ball, ...)"
            )

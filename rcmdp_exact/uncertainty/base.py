r"""The uncertainty-set protocol: what the robust code needs from a set, and nothing more.

A set :math:`\mathcal P` of transition kernels around a nominal kernel :math:`\hat P`
(S, A, S) is used by the rest of the toolkit only through :class:`UncertaintySet`:

* ``nominal`` (S, A, S), ``support`` (S, A, S) bool, ``n_states``, ``n_actions``;
* ``rectangularity``: ``"sa"`` when the set is a product of one set per (s, a) (the
  adversary picks each row on its own), ``"s"`` when one set per state is shared by its
  actions (the adversary's choice couples the rows of a state, and depends on the
  policy), ``"none"`` when the set is a list of whole kernels that the adversary picks
  as a whole (:class:`~rcmdp_exact.uncertainty.FiniteSet`: no per-row worst case, a
  robust evaluation takes the worst of the members);
* :meth:`UncertaintySet.worst_case` of a batch of value vectors: for
  ``"sa"`` sets :math:`\min_{p \in \mathcal P_{s,a}} p^\top z(s, a, \cdot)` for every
  pair, the values and the minimising rows;
* :meth:`~UncertaintySet.distance`, :meth:`~UncertaintySet.contains`,
  :meth:`~UncertaintySet.save` and :meth:`~UncertaintySet.load` (``.npz``, no pickle).

Only the package :mod:`rcmdp_exact.uncertainty` knows the inside of a set (radii,
weights, bounds); everyone else calls these methods.  A new set is one class that
implements :meth:`~UncertaintySet.worst_case`, :meth:`~UncertaintySet.distance` and
the two array hooks of saving (``docs/robust.md``, "Your own set").
"""

from __future__ import annotations

import abc

import numpy as np

from .._checks import InputError, as_float_array, check_choice, check_shape, check_type
from .._io import load_npz, save_npz

__all__ = ["INNERS", "RECTANGULARITIES", "UncertaintySet", "check_set", "load_set",
           "split_batch"]

#: ``"sa"``: one set per (state, action); ``"s"``: one set per state; ``"none"``: a set
#: of whole kernels (the adversary picks one kernel, not one row per pair).
RECTANGULARITIES = ("sa", "s", "none")
#: Methods of :meth:`UncertaintySet.worst_case`: the set's exact solver ("sort"; a sort
#: for the polyhedral sets) and its independent convex program through cvxpy ("lp").
INNERS = ("sort", "lp")

#: Every set class by its format name (filled by ``__init_subclass__``).
_REGISTRY: dict[str, type] = {}


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


class UncertaintySet(abc.ABC):
    """Base class of the toolkit's uncertainty sets (see the module docstring).

    Subclasses implement :meth:`worst_case`, :meth:`distance`, ``nominal`` and the
    two hooks :meth:`_arrays` / :meth:`_from_arrays` that :meth:`save` and
    :meth:`load` use.  Sets are immutable.
    """

    #: "sa", "s" or "none" (see :data:`RECTANGULARITIES`).
    rectangularity: str = "sa"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.__name__] = cls

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

    # ----------------------------------------------------------------- the inner problem
    @abc.abstractmethod
    def worst_case(self, z, policy=None, *, method: str = "sort"):
        r"""The adversary's answer to the values ``z``.

        For an ``"sa"`` set, :math:`\min_{p \in \mathcal P_{s,a}} p^\top z(s, a,
        \cdot)` for every pair.  ``z`` has shape (S,) or (J, S) (shared by every pair)
        or (S, A, S) or (J, S, A, S) (per pair); the result has ``p`` (..., S, A, S)
        (the minimising rows, a kernel in the set) and ``value`` (..., S, A).  An
        ``"s"`` set also takes the ``policy`` (S, A) whose mixture of rows it
        minimises and returns the per-state ``value`` (..., S).  ``method``: "sort"
        (the exact solver) or "lp" (the independent convex program).
        """

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
        """(S, A): each row of ``P`` is a distribution on the support, up to ``tol``."""
        ok = P.min(axis=2) >= -tol
        ok &= np.abs(P.sum(axis=2) - 1.0) <= tol
        ok &= np.where(self.support, 0.0, np.abs(P)).max(axis=2) <= tol
        return ok

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

        ``UncertaintySet.load`` reads any kind of set; ``L1Ball.load`` and the other
        classes read only their own kind.
        """
        if cls is UncertaintySet:
            formats = tuple(k._format() for k in _REGISTRY.values())
            what = "an uncertainty set written by save()"
        else:
            formats = (cls._format(),)
            what = f"an {cls.__name__} written by {cls.__name__}.save"
        data = load_npz(path, formats, what, legacy_keys=getattr(cls, "LEGACY_KEYS", ()))
        kind = cls
        if "format" in data:
            kind = _REGISTRY[str(data["format"]).split("/")[0].removeprefix("rcmdp_exact.")]
        return kind._from_arrays({k: v for k, v in data.items() if k != "format"})


def load_set(path) -> UncertaintySet:
    """Any uncertainty set saved by :meth:`UncertaintySet.save`."""
    return UncertaintySet.load(path)


def check_set(uset, model, rectangularity: str | None = None, what: str = "") -> None:
    """Raise unless ``uset`` is an uncertainty set of the model's (S, A).

    With ``rectangularity="sa"``, a set of another rectangularity is refused with a
    message naming the set and ``what`` needs the property.
    """
    check_type(uset, "the uncertainty set", UncertaintySet,
               "build one with rcmdp_exact.estimate(model, ...).ball, l1_ball(model, alpha) "
               "or a set class of rcmdp_exact (L1Ball, ...)")
    shape = (model.n_states, model.n_actions, model.n_states)
    if uset.nominal.shape != shape:
        check_shape(uset.nominal, shape, "the uncertainty set (its nominal kernel, for this "
                    "model)", ("s", "a", "s'"))
    if rectangularity is not None and uset.rectangularity != rectangularity:
        check_choice(rectangularity, "rectangularity", RECTANGULARITIES)
        kind = ("not rectangular (the adversary picks a whole kernel)"
                if uset.rectangularity == "none" else f"{uset.rectangularity}-rectangular")
        raise InputError(
            f"{what or 'this computation'} needs an {rectangularity}-rectangular set, but "
            f"{type(uset).__name__} is {kind}; use an {rectangularity}-rectangular set "
            f"(L1Ball, ...)"
        )

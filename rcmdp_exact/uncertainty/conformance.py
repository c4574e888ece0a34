r"""The conformance check of an uncertainty set: every set passes it, built-in or yours.

:func:`check_set_conformance` runs the protocol's checks on a set (in the spirit of
scikit-learn's ``check_estimator``) and raises a :class:`ConformanceError` that names
every check that failed, or returns the list of checks it passed.  The robust code
trusts a set that passes: its worst case is what the engine, the bracket and the
command line build on.  The checks (:data:`CONFORMANCE_CHECKS`):

``protocol``
    The set derives from one of the three protocols (:class:`~.SARectangularSet`,
    :class:`~.SRectangularSet`, :class:`~.KernelSet`); ``nominal`` is a kernel (S, A, S)
    on its ``support`` (S, A, S) bool; an unknown ``method`` is refused.
``kind``
    The class declares a ``kind`` registered to it and a ``note``.
``nominal``
    ``contains(nominal)`` is all True and ``distance(nominal)`` is 0 (to 1e-12), with
    the shapes of the protocol ((S, A); (S,) for an s-rectangular set).
``files``
    ``save`` and ``load`` (the class's and :func:`~.load_set`) give a set of the same
    class with equal arrays.
``worst_case``
    On value vectors of every shape ((S,), (J, S), (S, A, S), (J, S, A, S); with the
    policy (S, A) or (J, S, A) for an s-rectangular set, which must refuse a call
    without one): ``p`` and ``value`` have the documented shapes and are finite,
    ``success`` is True, the rows of ``p`` are distributions inside the set's own
    ``contains()``, ``value`` is ``p @ z`` (the policy's mixture for an s-rectangular
    set) and is at most the nominal's value (the nominal is in the set); for a set of
    whole kernels, every member is in the set and ``worst_case`` is refused.
``optimality``
    The worst case is a worst case: an independent search inside the set, which knows
    the set only through its own ``contains()`` (to :data:`MEMBER_TOL`), finds no
    member with a lower value (by more than :data:`OPTIMALITY_TOL` of the row's scale).
    It first checks that ``contains()`` refuses what no set holds (a row that is not a
    distribution, mass off the ``support``); then, from the nominal and from the set's
    own answer, it walks to the boundary of the set (bisection on ``contains()``) toward
    the vertex of the smallest value, toward the answer and beyond, toward random
    distributions on the support and, from the answer, by moving mass from a large value
    to a small one (one action at a time, and all at once, for an s-rectangular set);
    the rows of the convex program (``method="lp"``) and the vertices of a polyhedral
    set (``row_vertices``) are members too.  The values: friendly ones with ties, the
    skewed ones of :func:`skewed_values`, and rows whose values span up to 1e6.  The
    rows: the set's own, those of the set its class builds ``around`` a skewed model
    (:func:`skewed_kernel`: masses from 1e-15, exact zeros) with radii from 1e-12 to
    radii that cover the simplex (:data:`AROUND_RADII`), and (check ``counts``) those
    of the set built from skewed counts.  A failure names the row, the two values and
    the move that found the better member.
``batches``
    A batch gives what its elements give one by one, and a vector shared by every
    pair gives what it gives repeated per pair; an s-rectangular set's
    ``bellman_max_min`` returns a policy whose worst case is its value, and no policy
    does better.
``terminal``
    ``absorb_terminal`` makes the rows of a terminal state self-loops that the
    adversary cannot move, and leaves the worst case of the other rows as it was.
``lp``
    When the set offers ``method="lp"``: its convex program agrees with the exact
    solver (to 1e-6 of the row's scale, on the rows it solved).
``skewed``
    Rows of the kind estimated data gives (:func:`skewed_values`: values from 1e-3 to
    1e6, ties, the minimum on a tiny mass) do not break it: no exception, finite
    answers, and every row it reports solved is in the set with ``value = p @ z``;
    a row it could not solve is reported (``success`` False and a ``message``).
``counts``
    When the class builds its kind from counts (``from_counts``): a set built from the
    counts of a skewed kernel (:func:`skewed_kernel`, masses from 1e-15) is of the
    class, holds its nominal, and passes ``worst_case``, ``optimality`` and ``skewed``
    too.
``strategy``
    When the class gives a hypothesis strategy and hypothesis is installed: an example
    of it around the set's nominal model is of the class and holds the model's kernel.

The rows that stress a solver (:func:`skewed_kernel`, :func:`skewed_values`,
:func:`skewed_radii`; numpy only, also in :mod:`rcmdp_exact.testing`) live here.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np

from .._checks import InputError, check_choice, check_int, check_real, check_room, rng_from
from .._result import Result
from .base import (
    KernelSet,
    SARectangularSet,
    SRectangularSet,
    UncertaintySet,
    load_set,
    registered_kinds,
)

__all__ = [
    "CONFORMANCE_CHECKS",
    "SKEWED_FAMILIES",
    "ConformanceError",
    "check_set_conformance",
    "skewed_kernel",
    "skewed_radii",
    "skewed_values",
]

#: The checks of :func:`check_set_conformance`, in the order they run.
CONFORMANCE_CHECKS = ("protocol", "kind", "nominal", "files", "worst_case", "optimality",
                      "batches", "terminal", "lp", "skewed", "counts", "strategy")

#: The optimality check fails a row when a member of the set that the search found has a
#: value below the set's worst case by more than this fraction of the row's scale (its
#: largest ``|z|`` on the support).  Far above the rounding of any solver, far below
#: what a wrong answer loses (a nominal row loses about radius x range of z).
OPTIMALITY_TOL = 1e-5
#: The membership tolerance of the search's members (``contains(q, tol=...)``): tight,
#: so that a member found is a member and not a point beside the boundary (a KL ball of
#: radius rho admits a point KL-distance ``tol`` outside it whose value is lower by
#: about ``sqrt(2 tol) std(z)``).
MEMBER_TOL = 1e-12
#: Bisection steps of the search along a segment (2^-24 of its length).
SEARCH_STEPS = 24
#: Random directions of the search from each of its two starting points.
SEARCH_RANDOM = 3
#: Radii of the sets ``around`` a skewed model (near 0 up to covering the simplex).
AROUND_RADII = (1e-12, 1e-4, 0.05, 0.5, 2.0, 50.0)
#: The vertices of a row (``row_vertices``) are compared for rows of at most this many
#: states (their number grows fast with S).
VERTEX_STATES = 6


class ConformanceError(AssertionError):
    """A set failed checks of :func:`check_set_conformance`; ``failures`` maps the name
    of each failed check to what went wrong."""

    def __init__(self, name: str, failures: dict):
        self.failures = dict(failures)
        lines = "; ".join(f"[{k}] {v}" for k, v in failures.items())
        super().__init__(f"{name} fails {len(failures)} conformance check"
                         f"{'s' if len(failures) > 1 else ''}: {lines}")


class _Fail(Exception):
    """One check failed (the message says why)."""


def _require(ok, message: str) -> None:
    if not bool(np.all(ok)):
        raise _Fail(message)


def _where(mask: np.ndarray) -> str:
    idx = np.argwhere(~np.asarray(mask, dtype=bool))
    return "" if not idx.size else f" (first at index {tuple(int(i) for i in idx[0])})"


# =========================================================================== the check
#: The tolerances ``check_set_conformance`` accepts (its docstring says why).
TOL_RANGE = (1e-12, 1e-2)
#: The accuracy the check asks of a set's convex program (``method="lp"``, a conic
#: solver's): its rows' membership and its values against the exact solver, relative to
#: the values' scale, whatever the (smaller) ``tol``.
LP_TOL = 1e-6


def check_set_conformance(uset, *, seed: int = 0, tol: float = 1e-7, lp: bool = True,
                          counts: bool = True, strategy: bool = True) -> Result:
    """Check that ``uset`` follows the uncertainty-set protocol (module docstring).

    Parameters
    ----------
    uset : UncertaintySet
        Any set: one of the toolkit's or one of yours.
    seed : int
        The value vectors, policies and skewed rows are drawn from this seed.
    tol : float
        Tolerance of membership (``contains(P, tol=tol)``), of row sums and of
        ``value == p @ z`` (relative to the row's largest ``|z|``, at least 1): the
        robust engine's own check of a set that is not the toolkit's (1e-7).  In
        ``TOL_RANGE`` = [1e-12, 1e-2]: below, float64's rounding fails a correct set;
        above, the checks pass rows that are not distributions.  The rows of the set's
        convex program (check ``lp``) are held to ``max(tol, LP_TOL)`` (1e-6): a conic
        solver meets its constraints to its own accuracy.
    lp, counts, strategy : bool
        Run the checks ``lp``, ``counts`` and ``strategy`` (when the set offers them).

    Returns
    -------
    Result
        ``checks`` (every check: ``"passed"`` or ``"skipped: why"``), ``passed`` (the
        names of the checks passed), ``set_type`` (the class name), ``kind``.

    Raises
    ------
    ConformanceError
        An ``AssertionError`` naming every check that failed and why
        (``failures``: check name -> message).
    InputError
        When ``uset`` is not an uncertainty set at all.

    Examples
    --------
    >>> import numpy as np
    >>> from rcmdp_exact import KLBall
    >>> P = np.full((2, 1, 2), 0.5)
    >>> check_set_conformance(KLBall(P, 0.1), counts=False).passed[:3]
    ['protocol', 'kind', 'nominal']
    """
    if not isinstance(uset, UncertaintySet):
        raise InputError(f"check_set_conformance checks an uncertainty set, got a "
                         f"{type(uset).__name__}; give an instance of your set class")
    seed = check_int(seed, "seed", 0)  # a plain int: hypothesis refuses numpy's
    tol = check_real(tol, "tol", TOL_RANGE[0], TOL_RANGE[1], hint=(
        " (below it float64's rounding of a row sum fails a correct set; above it a "
        "row summing to 1.01 passes as a distribution)"))
    checker = _Checker(uset, seed, tol)
    options = {"lp": lp, "counts": counts, "strategy": strategy}
    checks, failures = {}, {}
    for name in CONFORMANCE_CHECKS:
        if not options.get(name, True):
            checks[name] = "skipped: turned off"
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a solver's own notes
                skipped = getattr(checker, f"check_{name}")()
        except _Fail as exc:
            failures[name] = str(exc)
            checks[name] = f"failed: {exc}"
            continue
        except Exception as exc:  # a check that raised is a failed check, by name
            failures[name] = f"raised {type(exc).__name__}: {exc}"
            checks[name] = f"failed: {failures[name]}"
            continue
        checks[name] = "passed" if skipped is None else f"skipped: {skipped}"
    if failures:
        raise ConformanceError(type(uset).__name__, failures)
    return Result(checks=checks, passed=[k for k, v in checks.items() if v == "passed"],
                  set_type=type(uset).__name__, kind=type(uset).__dict__.get("kind"))


class _Checker:
    """The checks of one set (each ``check_*`` raises :class:`_Fail`, or returns the
    reason it was skipped, or None)."""

    J = 3

    def __init__(self, uset, seed: int, tol: float):
        self.u = uset
        self.seed = seed
        self.tol = tol
        self.sa = isinstance(uset, SARectangularSet)
        self.s_rect = isinstance(uset, SRectangularSet)
        self.whole = isinstance(uset, KernelSet)

    # ----------------------------------------------------------------- helpers
    @property
    def shape(self):
        return self.u.n_states, self.u.n_actions

    def rng(self, salt: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, salt])

    def values(self, rng, shape) -> np.ndarray:
        """Values with ties (integers), a block of equal values, and plain normals."""
        z = rng.normal(size=shape)
        ties = rng.random(shape[:-1]) < 0.3
        z[ties] = np.round(2.0 * z[ties])
        return z

    def policy(self, rng, lead=(), shape=None) -> np.ndarray:
        S, A = self.shape if shape is None else shape
        pi = rng.dirichlet(np.ones(A), size=(*lead, S))
        pi[..., 0, :] = np.eye(A)[0]  # a deterministic state
        return pi

    def call(self, uset, z, pi=None, method="sort"):
        if isinstance(uset, SRectangularSet):
            return uset.worst_case(z, pi, method=method)
        return uset.worst_case(z, method=method)

    def answer(self, uset, z, pi, res, *, success=True, what="worst_case", tol=None):
        """The fields of an answer, checked (shape, finiteness, rows, values) to ``tol``
        (None: the check's own); returns (p (J, S, A, S), value (J, lead...), rows
        solved)."""
        S, A = uset.n_states, uset.n_actions
        s_rect = isinstance(uset, SRectangularSet)
        batched = np.ndim(z) in (2, 4)
        J = np.shape(z)[0] if batched else 1
        lead = ((J,) if batched else ()) + ((S,) if s_rect else (S, A))
        _require("p" in res and "value" in res, f"{what} returned no 'p' or no 'value'")
        p = np.asarray(res["p"], dtype=np.float64)
        val = np.asarray(res["value"], dtype=np.float64)
        _require(p.shape == ((J,) if batched else ()) + (S, A, S) and val.shape == lead,
                 f"{what} of z {np.shape(z)} returned p {p.shape} and value {val.shape}; "
                 f"expected {((J,) if batched else ()) + (S, A, S)} and {lead}")
        _require(np.isfinite(p).all() and np.isfinite(val).all(),
                 f"{what} of z {np.shape(z)} returned a value or row that is not finite")
        ok = np.ones(lead, dtype=bool)
        if "row_success" in res:
            rs = np.asarray(res["row_success"], dtype=bool)
            _require(rs.shape == lead, f"{what}: row_success has shape {rs.shape}, "
                     f"expected {lead}")
            ok = rs
        solved = bool(res.get("success", True))
        if success:
            _require(solved, f"{what} of z {np.shape(z)} reported success=False on "
                     f"friendly values: {res.get('message', '')}")
        elif not solved:
            _require(bool(res.get("message")), f"{what} reported success=False without a "
                     f"message naming the row")
        else:
            _require(ok.all(), f"{what} reported success=True but row_success False")
        P = p.reshape(J, S, A, S)
        zz = np.asarray(z, dtype=np.float64)
        Z = (np.broadcast_to(zz.reshape(J, 1, 1, S), (J, S, A, S)) if zz.ndim in (1, 2)
             else zz.reshape(J, S, A, S))
        okJ = ok.reshape((J, S) if s_rect else (J, S, A))
        okr = okJ[:, :, None] if s_rect else okJ  # (J, S, A) or (J, S, 1)
        tol = self.tol if tol is None else tol
        rows_ok = (np.abs(P.sum(axis=-1) - 1.0) <= tol * S) & (P.min(axis=-1) >= -tol)
        _require(rows_ok | ~okr, f"{what} returned a row that is not a distribution"
                 f"{_where(rows_ok | ~okr)}")
        for j in range(J):
            inside = np.asarray(uset.contains(P[j], tol=tol), dtype=bool)
            need = okJ[j]
            _require(inside | ~need, f"{what} returned a row outside the set: contains(p, "
                     f"tol={tol:g}) is False{_where(inside | ~need)} (batch element {j})")
        scale = np.maximum(1.0, np.abs(Z).max(axis=-1))  # (J, S, A)
        pz = np.einsum("jsat,jsat->jsa", P, Z)
        nom = np.einsum("sat,jsat->jsa", np.asarray(uset.nominal, dtype=np.float64), Z)
        if s_rect:
            pi = np.broadcast_to(pi, (J, S, A))
            want = np.einsum("jsa,jsa->js", pi, pz)
            top = np.einsum("jsa,jsa->js", pi, nom)
            sc = scale.max(axis=-1)
        else:
            want, top, sc = pz, nom, scale
        v = val.reshape(want.shape)
        okv = okJ
        good = (np.abs(v - want) <= tol * sc) | ~okv
        _require(good, f"{what} returned a value that is not p @ z{_where(good)}")
        good = (v <= top + tol * sc) | ~okv
        _require(good, f"{what} returned a value above the nominal's, which is in the set"
                 f"{_where(good)}")
        return P, v, okv

    # ----------------------------------------------------------------- checks
    def check_protocol(self):
        u = self.u
        _require(self.sa or self.s_rect or self.whole,
                 f"{type(u).__name__} derives from none of SARectangularSet, "
                 f"SRectangularSet and KernelSet")
        P = np.asarray(u.nominal)
        _require(P.ndim == 3 and P.shape[0] == P.shape[2] and 0 not in P.shape,
                 f"nominal has shape {P.shape}, not (S, A, S)")
        _require((u.n_states, u.n_actions) == P.shape[:2],
                 "n_states and n_actions are not the nominal's")
        S = P.shape[0]
        _require(np.isfinite(P).all() and (P >= 0).all()
                 and (np.abs(P.sum(axis=2) - 1.0) <= 1e-9 * S).all(),
                 "nominal is not a transition kernel (rows of probabilities summing to 1)")
        sup = np.asarray(u.support)
        _require(sup.dtype == bool and sup.shape == P.shape,
                 f"support is not a bool array (S, A, S): {sup.dtype} {sup.shape}")
        _require(~((P > 0) & ~sup), "nominal has mass off the support")
        if self.whole:
            return None
        _require("sort" in u.methods, f"methods {u.methods} has no 'sort' (the exact "
                 f"solver)")
        z = np.zeros(S)
        pi = np.full(self.shape, 1.0 / self.shape[1])
        try:
            self.call(u, z, pi, method="no-such-method")
        except InputError:
            return None
        raise _Fail("worst_case(method='no-such-method') was not refused with an "
                    "InputError")

    def check_kind(self):
        cls = type(self.u)
        kind = cls.__dict__.get("kind")
        _require(isinstance(kind, str), f"{cls.__name__} declares no kind of its own "
                 f"(class attribute kind = \"a-name\")")
        _require(registered_kinds().get(kind) is cls,
                 f"the kind {kind!r} is not registered to {cls.__name__}")
        _require(isinstance(cls.note, str) and cls.note.strip(),
                 f"{cls.__name__} has no note (one line on the kind)")

    def check_nominal(self):
        u = self.u
        S, A = self.shape
        want = (S,) if self.s_rect else (S, A)
        inside = np.asarray(u.contains(u.nominal))
        _require(inside.shape == want, f"contains(nominal) has shape {inside.shape}, "
                 f"expected {want}")
        _require(inside.astype(bool), f"contains(nominal) is False{_where(inside)}")
        dist = np.asarray(u.distance(u.nominal), dtype=np.float64)
        _require(dist.shape == want, f"distance(nominal) has shape {dist.shape}, expected "
                 f"{want}")
        _require(np.abs(dist) <= 1e-12, f"distance(nominal) is not 0: largest "
                 f"{float(np.abs(dist).max())!r}")

    def check_files(self):
        u = self.u
        with tempfile.TemporaryDirectory() as folder:
            path = u.save(Path(folder) / "set")
            back = (type(u).load(path), load_set(path))
        mine = u._arrays()
        for b in back:
            _require(type(b) is type(u), f"load gave a {type(b).__name__}")
            theirs = b._arrays()
            _require(set(theirs) == set(mine), f"load gave the arrays {sorted(theirs)}, "
                     f"saved {sorted(mine)}")
            for k in mine:
                _require(np.array_equal(np.asarray(mine[k]), np.asarray(theirs[k]),
                                        equal_nan=np.asarray(mine[k]).dtype.kind == "f"),
                         f"the array {k!r} changed in a save and load")
            _require(np.array_equal(b.nominal, u.nominal) and np.array_equal(b.support,
                                                                              u.support),
                     "nominal or support changed in a save and load")

    def check_worst_case(self):
        u = self.u
        S, A = self.shape
        if self.whole:
            M = np.asarray(u.members)
            _require(M.ndim == 4 and M.shape[1:] == (S, A, S),
                     f"members has shape {M.shape}, not (M, S, A, S)")
            for m in range(M.shape[0]):
                _require(np.asarray(u.contains(M[m])).all(), f"member {m} is not in the set")
            _require(any(np.array_equal(M[m], u.nominal) for m in range(M.shape[0])),
                     "the nominal is not a member")
            try:
                u.worst_case(np.zeros(S))
            except InputError:
                return None
            raise _Fail("worst_case of a set of whole kernels was not refused")
        rng = self.rng(1)
        J = self.J
        for shape in ((S,), (J, S), (S, A, S), (J, S, A, S)):
            z = self.values(rng, shape)
            pi = self.policy(rng, (J,) if len(shape) in (2, 4) and rng.random() < 0.5
                             else ())
            self.answer(u, z, pi, self.call(u, z, pi))
        if self.s_rect:
            try:
                u.worst_case(np.zeros(S))
            except InputError:
                return None
            raise _Fail("worst_case without a policy was not refused with an InputError "
                        "(the adversary of an s-rectangular set depends on it)")
        return None

    def check_optimality(self):
        u = self.u
        if self.whole:
            return "a set of whole kernels has no worst case"
        self.refuses_non_members(u)
        rng = self.rng(7)
        self.search_set(u, rng, "the set")
        cls = type(u)
        if not cls.has_around_builder():
            return None
        from ..core.model import TabularCMDP

        S, A = 5, 2
        P = skewed_kernel(rng, S, A)
        model = TabularCMDP(P, np.zeros((S, A)), gamma=0.9)
        for radius in AROUND_RADII:
            try:
                built = cls.around(model, radius)
            except (InputError, ValueError):  # a radius the kind does not take
                continue
            _require(isinstance(built, UncertaintySet) and not isinstance(built, KernelSet)
                     and np.asarray(built.nominal).shape == (S, A, S),
                     f"around(model, {radius:g}) of a model (5, 2, 5) gave a "
                     f"{type(built).__name__} of shape {np.shape(built.nominal)}")
            self.search_set(built, rng, f"the set around(model, {radius:g}) of a skewed "
                                        f"model")
        return None

    # ----------------------------------------------------------------- the search
    def refuses_non_members(self, uset):
        """``contains()`` refuses rows that no set holds: twice the nominal (not a
        distribution), and mass off the support."""
        P = np.asarray(uset.nominal, dtype=np.float64)
        twice = np.asarray(uset.contains(2.0 * P, tol=self.tol), dtype=bool)
        _require(~twice, f"contains() says yes to rows that are not distributions (twice "
                 f"the nominal, rows summing to 2){_where(~twice)}: it accepts what no "
                 f"set holds, so no worst case can be checked against it")
        sup = np.asarray(uset.support, dtype=bool)
        off = ~sup.all(axis=2)
        if not off.any():
            return
        Q = P.copy()
        first = np.argmax(~sup, axis=2)  # a next state off the support of each row
        _S, _A = self.shape
        ii, jj = np.nonzero(off)
        Q[ii, jj] = 0.0
        Q[ii, jj, first[ii, jj]] = 1.0
        got = np.asarray(uset.contains(Q, tol=self.tol), dtype=bool)
        moved = off if got.ndim == 2 else off.any(axis=1)
        _require(~(got & moved), f"contains() says yes to rows that put all their mass off "
                 f"the set's support{_where(~(got & moved))}")

    def value_rows(self, uset, P, Z, pi):
        """The value of a kernel's rows: (S, A), or the policy's mixture (S,)."""
        v = np.einsum("sat,sat->sa", P, Z)
        return np.einsum("sa,sa->s", pi, v) if isinstance(uset, SRectangularSet) else v

    def inside(self, uset, Q):
        """contains(Q, tol=MEMBER_TOL) as a bool array of the lead shape."""
        return np.asarray(uset.contains(Q, tol=MEMBER_TOL), dtype=bool)

    def boundary(self, uset, B, D, start):
        """The member farthest from ``B`` toward ``D`` on the segment [B, D], per row
        (per state for an s-rectangular set) by bisection on ``contains()``; rows
        where ``start`` (B inside) is False keep B.  Returns (Q, inside)."""
        s_rect = isinstance(uset, SRectangularSet)
        lead = start.shape

        def at(t):
            tt = t[:, None, None] if s_rect else t[..., None]
            return B + tt * (D - B)

        lo = np.zeros(lead)
        hi = np.ones(lead)
        whole = self.inside(uset, D) & start
        lo[whole] = 1.0
        active = start & ~whole
        for _ in range(SEARCH_STEPS):
            if not active.any():
                break
            mid = 0.5 * (lo + hi)
            ok = self.inside(uset, at(np.where(active, mid, lo)))
            lo = np.where(active & ok, mid, lo)
            hi = np.where(active & ~ok, mid, hi)
        Q = at(lo)
        return Q, self.inside(uset, Q) & start

    def moves(self, uset, B, Z, rng, base: str):
        """(name, target kernel) pairs of the search from ``B``."""
        S, A = uset.n_states, uset.n_actions
        sup = np.asarray(uset.support, dtype=bool)
        big = np.where(sup, Z, np.inf)
        low = np.argmin(big, axis=2)  # the smallest value on the support of each row
        vertex = np.zeros_like(B)
        np.put_along_axis(vertex, low[..., None], 1.0, axis=2)
        out = [(f"from the {base} toward the vertex of the smallest value", vertex)]
        for k in range(SEARCH_RANDOM):
            target = np.where(sup, rng.dirichlet(np.full(S, 0.3), size=(S, A)), 0.0)
            total = target.sum(axis=2, keepdims=True)
            target = np.where(total > 0, target / np.where(total > 0, total, 1.0), vertex)
            out.append((f"from the {base} toward a random distribution ({k})", target))
        if isinstance(uset, SRectangularSet):
            for a in range(A):
                one = B.copy()
                one[:, a] = vertex[:, a]
                out.append((f"from the {base}, the row of action {a} alone toward the "
                            f"vertex of its smallest value", one))
        return out

    def transfers(self, B, Z, sup):
        """Targets that move all the mass of a large value's entry of ``B`` to a small
        value's entry (the two largest with mass, the two smallest on the support)."""
        S = B.shape[2]
        high = np.where((B > 0) & sup, Z, -np.inf)
        low = np.where(sup, Z, np.inf)
        his = np.argsort(-high, axis=2, kind="stable")
        los = np.argsort(low, axis=2, kind="stable")
        ii, aa = np.indices(B.shape[:2])
        out = []
        for h in range(min(2, S)):
            for k in range(min(2, S)):
                i, j = his[..., h], los[..., k]
                D = B.copy()
                mass = B[ii, aa, i]
                D[ii, aa, i] = 0.0
                D[ii, aa, j] += mass  # i == j: the row stays
                out.append((f"from the answer, moving the mass of its entry of rank "
                            f"{h + 1} from the top to the entry of rank {k + 1} from the "
                            f"bottom", D))
        return out

    def search_set(self, uset, rng, label: str):
        """The optimality search on one set, on friendly, skewed and wide values."""
        S, A = uset.n_states, uset.n_actions
        s_rect = isinstance(uset, SRectangularSet)
        P0 = np.asarray(uset.nominal, dtype=np.float64)
        wide = rng.normal(size=(S, A, S)) * 10.0 ** rng.uniform(0.0, 6.0, (S, A, S))
        families = [("friendly values with ties", self.values(rng, (S, A, S))),
                    ("values spanning up to 1e6", wide)]
        families += [(f"skewed values {j}", z) for j, z in
                     enumerate(skewed_values(rng, 2, P0))]
        vertices = None
        if not s_rect and S <= VERTEX_STATES and \
                type(uset).row_vertices is not SARectangularSet.row_vertices:
            vertices = {}
            for s, a in np.ndindex(S, A):
                V = np.asarray(uset.row_vertices(s, a), dtype=np.float64)
                if V.ndim == 2 and V.shape[1] == S and len(V):
                    vertices[s, a] = V
        for k, (what, Z) in enumerate(families):
            pi = self.policy(rng, shape=(S, A)) if s_rect else None
            self.search_row(uset, Z, pi, f"{label}, {what}", rng,
                            lp=uset is self.u and k < 2, vertices=vertices)

    def search_row(self, uset, Z, pi, label: str, rng, lp: bool = False, vertices=None):
        """Search one value array ``Z`` (S, A, S) for a member better than the set's
        answer; raise :class:`_Fail` naming the row and the move that found it."""
        S, A = uset.n_states, uset.n_actions
        s_rect = isinstance(uset, SRectangularSet)
        res = self.call(uset, Z, pi)
        Pw, v, ok = self.answer(uset, Z, pi, res, success=False,
                                what=f"worst_case ({label})")
        Pw, v, ok = Pw[0], v.reshape(ok.shape[1:]), ok[0]
        sup = np.asarray(uset.support, dtype=bool)
        P0 = np.asarray(uset.nominal, dtype=np.float64)
        scale = np.abs(np.where(sup, Z, 0.0)).max(axis=2)
        if s_rect:
            scale = scale.max(axis=1)
        limit = v - OPTIMALITY_TOL * scale
        in0 = self.inside(uset, P0)
        # the answer, pulled toward the nominal by 1e-9 (inside for a convex set)
        Bw = P0 + (1.0 - 1e-9) * (Pw - P0)
        inw = self.inside(uset, Bw) & ok
        candidates = [(name, P0, D, in0) for name, D in self.moves(uset, P0, Z, rng,
                                                                   "nominal")]
        candidates.append(("from the nominal toward the answer and as far again beyond",
                           P0, P0 + 2.0 * (Pw - P0), in0))
        candidates += [(name, Bw, D, inw) for name, D in self.moves(uset, Bw, Z, rng,
                                                                    "answer")]
        candidates += [(name, Bw, D, inw) for name, D in self.transfers(Bw, Z, sup)]
        Plp = None
        if lp and "lp" in getattr(uset, "methods", ()):
            try:  # the convex program may refuse a row it cannot solve: no candidate
                Plp = np.asarray(self.call(uset, Z, pi, method="lp").p,
                                 dtype=np.float64).reshape(S, A, S)
            except InputError:
                Plp = None
            if Plp is not None and np.isfinite(Plp).all():
                candidates.append(("from the nominal toward the row of method='lp'", P0,
                                   Plp, in0))
        if vertices is not None:
            best = Pw.copy()
            for (s, a), V in vertices.items():
                best[s, a] = V[int(np.argmin(V @ Z[s, a]))]
            candidates.append(("from the nominal toward the vertex of row_vertices with "
                               "the smallest value", P0, best, in0))
        for name, B, D, start in candidates:
            Q, inside = self.boundary(uset, B, D, start)
            worse = inside & ok & (self.value_rows(uset, Q, Z, pi) < limit)
            if worse.any():
                idx = tuple(int(i) for i in np.argwhere(worse)[0])
                at = ", ".join(f"{n}={i}" for n, i in zip(("s", "a"), idx, strict=False))
                q = self.value_rows(uset, Q, Z, pi)[idx]
                row = Q[idx] if not s_rect else Q[idx[0]]
                raise _Fail(
                    f"the worst case is not a worst case at ({at}) ({label}): worst_case "
                    f"gives {float(v[idx])!r}, but the member q found {name} (contains(q, "
                    f"tol={MEMBER_TOL:g}) is True) gives {float(q)!r}, lower by "
                    f"{float(v[idx] - q):.3g} (scale {float(scale[idx]):.3g}); q = "
                    f"{np.array2string(row, precision=4, threshold=12)}")

    def check_batches(self):
        u = self.u
        S, A = self.shape
        if self.whole:
            return "a set of whole kernels has no worst case"
        rng = self.rng(2)
        J = self.J
        z = self.values(rng, (J, S, A, S))
        pi = self.policy(rng, (J,))
        batch = np.asarray(self.call(u, z, pi).value)
        scale = max(1.0, float(np.abs(z).max()))
        for j in range(J):
            one = np.asarray(self.call(u, z[j], pi[j]).value)
            _require(np.abs(batch[j] - one) <= 1e-9 * scale,
                     f"the batch (J, S, A, S) differs from its element {j} alone by "
                     f"{float(np.abs(batch[j] - one).max()):.3g}")
        zs = self.values(rng, (J, S))
        shared = np.asarray(self.call(u, zs, pi).value)
        per_pair = np.asarray(self.call(
            u, np.broadcast_to(zs[:, None, None, :], (J, S, A, S)).copy(), pi).value)
        _require(np.abs(shared - per_pair) <= 1e-9 * max(1.0, float(np.abs(zs).max())),
                 "a vector per state (J, S) differs from the same vector repeated for "
                 "every pair (J, S, A, S)")
        if not self.s_rect:
            return None
        zp = self.values(rng, (S, A, S))
        res = u.bellman_max_min(zp)
        _require(bool(res.get("success", True)), f"bellman_max_min failed: "
                 f"{res.get('message', '')}")
        best = np.asarray(res["policy"], dtype=np.float64)
        value = np.asarray(res["value"], dtype=np.float64)
        _require(best.shape == (S, A) and value.shape == (S,),
                 f"bellman_max_min returned policy {best.shape} and value {value.shape}; "
                 f"expected {(S, A)} and {(S,)}")
        _require((best >= -self.tol).all() and (np.abs(best.sum(axis=1) - 1) <= self.tol
                                                 ).all(),
                 "bellman_max_min returned a policy that is not a distribution per state")
        sc = max(1.0, float(np.abs(zp).max()))
        own = np.asarray(u.worst_case(zp, best).value)
        _require(np.abs(own - value) <= self.tol * sc,
                 "bellman_max_min's value is not the worst case of its own policy")
        for _ in range(4):
            other = np.asarray(u.worst_case(zp, self.policy(rng)).value)
            _require(other <= value + self.tol * sc,
                     "a policy does better than bellman_max_min's maximiser")
        return None

    def check_terminal(self):
        u = self.u
        S, A = self.shape
        _require(u.absorb_terminal(np.zeros(S, dtype=bool)) is u,
                 "absorb_terminal without terminal states did not return the set itself")
        t = S - 1
        term = np.arange(S) == t
        ab = u.absorb_terminal(term)
        _require(type(ab) is type(u), f"absorb_terminal gave a {type(ab).__name__}")
        loop = np.zeros((A, S))
        loop[:, t] = 1.0
        _require(np.array_equal(np.asarray(ab.nominal)[t], loop),
                 "absorb_terminal did not make the nominal rows of the terminal state "
                 "self-loops")
        keep = ~term
        _require(np.array_equal(np.asarray(ab.nominal)[keep], np.asarray(u.nominal)[keep]),
                 "absorb_terminal changed the nominal rows of other states")
        if self.whole:
            M = np.asarray(ab.members)
            _require((M[:, t] == loop).all(), "absorb_terminal left a member whose "
                     "terminal rows are not self-loops")
            return None
        rng = self.rng(3)
        z = self.values(rng, (S, A, S))
        pi = self.policy(rng)
        res = self.call(ab, z, pi)
        P, _, _ = self.answer(ab, z, pi, res, what="worst_case after absorb_terminal")
        _require(np.abs(P[0, t] - loop) <= self.tol, "the worst case moved a row of a "
                 "terminal state")
        before = np.asarray(self.call(u, z, pi).value)
        after = np.asarray(res.value)
        scale = max(1.0, float(np.abs(z).max()))
        _require(np.abs(after[keep] - before[keep]) <= 1e-9 * scale,
                 "absorb_terminal changed the worst case of the other states")
        return None

    def check_lp(self):
        u = self.u
        if self.whole or "lp" not in u.methods:
            return "the set offers no method='lp'"
        S, A = self.shape
        rng = self.rng(4)
        z = self.values(rng, (S, A, S))
        pi = self.policy(rng)
        exact = self.call(u, z, pi)
        lp = self.call(u, z, pi, method="lp")
        # a convex program's solver meets its constraints to its own accuracy, not to
        # float64's: its rows are checked at LP_TOL, as its values are
        _, v, ok = self.answer(u, z, pi, lp, success=False, what="worst_case(method='lp')",
                               tol=max(self.tol, LP_TOL))
        ve = np.asarray(exact.value, dtype=np.float64).reshape(v.shape)
        scale = max(1.0, float(np.abs(z).max()))
        close = (np.abs(v - ve) <= LP_TOL * scale) | ~ok
        _require(close, f"method='lp' and the exact solver differ by "
                 f"{float(np.abs(v - ve)[ok].max()):.3g}{_where(close)}")
        if self.s_rect:
            a = u.bellman_max_min(z)
            b = u.bellman_max_min(z, method="lp")
            _require(np.abs(np.asarray(a.value) - np.asarray(b.value)) <= LP_TOL * scale,
                     "bellman_max_min: method='lp' and the exact method differ")
        return None

    def skewed_answer(self, uset, rng, what):
        """worst_case on skewed values: nothing breaks, solved rows are right."""
        S, A = uset.n_states, uset.n_actions
        z = skewed_values(rng, 2, np.asarray(uset.nominal))
        pi = rng.dirichlet(np.ones(A), size=(2, S))
        res = self.call(uset, z, pi)
        # values up to 1e6: the tolerance is relative to each row's scale
        self.answer(uset, z, pi, res, success=False, what=what)

    def check_skewed(self):
        if self.whole:
            return "a set of whole kernels has no worst case"
        self.skewed_answer(self.u, self.rng(5), "worst_case on skewed values")
        return None

    def check_counts(self):
        cls = type(self.u)
        if not cls.has_counts_builder():
            return "the class has no from_counts"
        from .l1 import L1Ball

        rng = self.rng(6)
        S, A = 5, 2
        P = skewed_kernel(rng, S, A)
        counts = P * 10.0 ** rng.uniform(0.0, 8.0, (S, A, 1))
        hoeffding_l1 = L1Ball(P, skewed_radii(rng, P, "l1"))
        built = cls.from_counts(counts, delta=0.1, hoeffding_l1=hoeffding_l1)
        _require(isinstance(built, cls), f"from_counts gave a {type(built).__name__}, not a "
                 f"{cls.__name__}")
        _require(built.nominal.shape == (S, A, S), f"from_counts of counts (5, 2, 5) gave a "
                 f"set of shape {built.nominal.shape}")
        inside = np.asarray(built.contains(built.nominal), dtype=bool)
        _require(inside, "the set from_counts built does not contain its nominal")
        if isinstance(built, KernelSet):
            return None
        for z_shape in ((S, A, S), (2, S)):
            z = self.values(rng, z_shape)
            pi = rng.dirichlet(np.ones(A), size=S)
            self.answer(built, z, pi, self.call(built, z, pi), success=False,
                        what="worst_case of the set from_counts built")
        self.skewed_answer(built, rng, "worst_case on skewed values of the set "
                           "from_counts built")
        return None

    def check_strategy(self):
        cls = type(self.u)
        if not cls.has_strategy():
            return "the class has no strategy"
        try:
            import hypothesis  # noqa: F401
        except ImportError:
            return "hypothesis is not installed"
        from ..core.model import TabularCMDP
        from ._draw import example

        S, A = self.shape
        model = TabularCMDP(np.asarray(self.u.nominal), np.zeros((S, A)), gamma=0.9)
        drawn = example(cls.strategy(model), seed=self.seed)
        _require(isinstance(drawn, cls), f"strategy drew a {type(drawn).__name__}")
        _require(np.asarray(drawn.contains(model.P)).all(),
                 "strategy drew a set that does not hold the model's kernel")
        return None


# =========================================================================== rows of real data
#: Families of :func:`skewed_kernel` rows: a few large masses beside masses from 1e-15
#: to 1e-2 and exact zeros, as kernels estimated from counts have them.
SKEWED_FAMILIES = ("tiny", "zeros", "one_large", "uniform")


def _kernel_arg(P) -> np.ndarray:
    """``P`` as a float64 array (S, A, S) with S, A >= 1 (its rows are not checked)."""
    from .._checks import as_float_array

    arr = as_float_array(P, "P", "give a kernel (S, A, S)")
    if arr.ndim != 3 or arr.shape[0] != arr.shape[2] or 0 in arr.shape:
        raise InputError(f"P must be a kernel of shape (S, A, S) with S, A >= 1, got "
                         f"shape {arr.shape}")
    return arr


def skewed_kernel(seed, S: int, A: int) -> np.ndarray:
    """A transition kernel (S, A, S) whose rows look like estimated ones.

    Each row is drawn from one family of :data:`SKEWED_FAMILIES`: ``"tiny"`` (one to
    three large masses, the other entries from 1e-15 to 1e-2 on a log scale),
    ``"zeros"`` (the same with about a third of the entries exactly 0), ``"one_large"``
    (a mass of 1 - eps beside entries of 1e-15 to 1e-6) and ``"uniform"`` (Dirichlet(1),
    the friendly case).  Rows sum to 1 up to rounding and always have a positive entry.
    ``S, A >= 1``, checked before any draw (and S*A*S entries within
    :data:`~rcmdp_exact._checks.MAX_INPUT_BYTES`).
    """
    S, A = check_int(S, "S", 1), check_int(A, "A", 1)
    check_room(8 * S * A * S, f"skewed_kernel(S={S:,}, A={A:,})")
    rng = rng_from(seed)
    P = np.zeros((S, A, S))
    for s, a in np.ndindex(S, A):
        fam = SKEWED_FAMILIES[int(rng.integers(len(SKEWED_FAMILIES)))]
        if fam == "uniform" or S == 1:
            row = rng.dirichlet(np.ones(S))
        else:
            lo, hi = (-15.0, -6.0) if fam == "one_large" else (-15.0, -2.0)
            row = 10.0 ** rng.uniform(lo, hi, S)
            if fam == "zeros":
                row[rng.random(S) < 0.35] = 0.0
            n_big = 1 if fam == "one_large" else int(rng.integers(1, min(3, S) + 1))
            big = rng.choice(S, n_big, replace=False)
            row[big] = rng.dirichlet(np.ones(n_big)) * (1.0 - row.sum() + row[big].sum())
        row = np.maximum(row, 0.0)
        P[s, a] = row / row.sum()
    return P


def skewed_values(seed, J: int, P: np.ndarray) -> np.ndarray:
    """Value vectors z (J, S, A, S) for the rows of ``P`` that stress inner solvers.

    Scales from 1e-3 to 1e6, integer values (ties), near ties (differences of 1e-12 of
    the scale), a block of equal values, and, on half of the rows, the minimum of z on a
    next state of tiny nominal mass (where the adversary's answer is the hardest to
    compute accurately).  ``J >= 1``; ``P`` a kernel (S, A, S).
    """
    J = check_int(J, "J", 1)
    P = _kernel_arg(P)
    S, A = P.shape[:2]
    check_room(8 * J * S * A * S, f"skewed_values(J={J:,}) of a kernel {P.shape}")
    rng = rng_from(seed)
    z = np.empty((J, S, A, S))
    for j, s, a in np.ndindex(J, S, A):
        kind = int(rng.integers(5))
        scale = 10.0 ** rng.uniform(-3.0, 6.0)
        if kind == 0:
            row = rng.integers(-2, 3, S).astype(float) * scale
        elif kind == 1:
            row = scale * (1.0 + 1e-12 * rng.integers(0, 4, S))
        elif kind == 2:
            row = rng.normal(size=S) * scale
            row[: max(1, S // 2)] = row[0]
        else:
            row = rng.normal(size=S) * scale
        if rng.random() < 0.5:  # the minimum on the smallest positive nominal mass
            pos = np.flatnonzero(P[s, a] > 0)
            i = pos[np.argmin(P[s, a, pos])]
            row[i] = row.min() - scale * rng.uniform(0.1, 2.0)
        z[j, s, a] = row
    return z


def skewed_radii(seed, P: np.ndarray, kind: str) -> np.ndarray:
    """Radii (S, A) from near 0 to radii that cover the simplex, for a set ``kind``.

    ``kind`` is ``"l1"`` (radii of an L1 ball, up to 2 and beyond), ``"linf"`` (up to
    1), ``"kl"`` (up to and beyond :math:`-\\log \\min_i \\hat p_i`, where every
    distribution on the support is in the ball, including just below that limit).
    """
    check_choice(kind, "kind", ("l1", "linf", "kl"))
    P = _kernel_arg(P)
    rng = rng_from(seed)
    S, A = P.shape[:2]
    top = {"l1": 2.0, "linf": 1.0}.get(kind)
    if kind == "kl":
        top = -np.log(np.min(np.where(P > 0, P, 1.0), axis=2))
    top = np.broadcast_to(np.asarray(top, dtype=float), (S, A))
    which = rng.integers(0, 5, (S, A))
    near0 = 10.0 ** rng.uniform(-15.0, -6.0, (S, A))
    mid = 10.0 ** rng.uniform(-3.0, 0.0, (S, A)) * np.maximum(top, 1e-3)
    below = top * (1.0 - 10.0 ** rng.uniform(-12.0, -2.0, (S, A)))
    above = top * rng.uniform(1.0, 1.5, (S, A))
    out = np.choose(which, [near0, mid, mid, below, above])
    return np.where(which == 0, near0, np.maximum(out, 0.0))

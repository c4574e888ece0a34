"""Seeded numpy generators of random models, policies, sets and value vectors.

Part of :mod:`rcmdp_exact.testing` that needs numpy only (no hypothesis): importable
alone, as ``rcmdp_exact.testing.generators``, by code that does not use hypothesis.
Each takes a seed or a ``numpy.random.Generator`` (drawn from in place, so that a
caller can go on drawing from it) and gives the same draws for the same seed.

* :func:`random_cmdp` and :func:`dense_binding_cmdp`: random RCMDPs (continuous values,
  optional outcome maps and terminal states; dense models with binding budgets);
* :func:`random_model_arrays`: the arrays P, R, C of a model with a sparse support, to
  build a dense or sparse :class:`~rcmdp_exact.TabularCMDP` yourself;
* the parts of an uncertainty set or an inner problem, each with the edge cases an
  exact solver must handle (exact zeros inside a support, point masses, ties, radii of
  zero and radii that cover the simplex): :func:`random_row` (one nominal row and its
  support), :func:`random_kernel` (a nominal kernel and its support),
  :func:`random_values` (value vectors z of :data:`_VALUE_KINDS`), :func:`random_radii`,
  :func:`random_policies` (of :data:`POLICY_KINDS`) and :func:`random_box` (policy
  boxes that meet the simplex);
* :func:`skewed_kernel`, :func:`skewed_values` and :func:`skewed_radii`: seeded rows of
  the kind real data gives (masses from 1e-15 to 1e-2 beside large ones, exact zeros,
  values up to 1e6, near ties, radii near 0 and radii that cover the simplex), to test
  an inner solver where friendly random rows never reach (they live in
  :mod:`rcmdp_exact.uncertainty.conformance`, whose check of a set uses them).
"""

from __future__ import annotations

import numbers

import numpy as np

from .._checks import (
    InputError,
    check_choice,
    check_int,
    check_limit,
    check_real,
    check_room,
    rng_from,
)
from ..core.evaluation import PolicySystem
from ..core.model import TabularCMDP
from ..uncertainty.conformance import SKEWED_FAMILIES, skewed_kernel, skewed_radii, skewed_values

__all__ = [
    "POLICY_KINDS",
    "SKEWED_FAMILIES",
    "dense_binding_cmdp",
    "random_box",
    "random_cmdp",
    "random_kernel",
    "random_model_arrays",
    "random_policies",
    "random_radii",
    "random_row",
    "random_values",
    "skewed_kernel",
    "skewed_radii",
    "skewed_values",
]


def _room(entries: int, what: str, arrays: int = 1) -> None:
    """Refuse, before any draw, ``arrays`` float64 arrays of ``entries`` entries each
    (``what`` names the arguments that set them) above
    :data:`~rcmdp_exact._checks.MAX_INPUT_BYTES`."""
    check_room(8 * int(entries) * int(arrays), what)


def random_cmdp(seed, S: int, A: int, K: int, gamma: float, n_outcomes: int | None = None,
                terminal: bool = False, next_state_dependent: bool = True,
                horizon: int | None = None) -> TabularCMDP:
    """A random RCMDP from a seeded generator (continuous values, no hypothesis).

    Rewards N(0, 1), costs U(0, 1) (per transition, or per pair), budgets U(0, 3), p0
    Dirichlet(1), state features of 1 to 3 columns N(0, 1); transitions
    Dirichlet(0.7), or with ``n_outcomes`` an outcome map of that many outcomes per pair
    (repeated next states allowed, :meth:`~rcmdp_exact.TabularCMDP.from_outcomes`).
    With ``terminal`` the last state is terminal and every pair can reach it.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    S, A : int
        Numbers of states and actions (>= 1).
    K : int
        Number of constraints (>= 0).
    gamma : float
        The discount, in [0, 1].
    n_outcomes : int, optional
        Outcomes per pair (>= 1).
    terminal, next_state_dependent : bool
    horizon : int, optional
        >= 1.

    The arguments are checked before any draw, and the model's arrays (P, R and C per
    transition) within :data:`~rcmdp_exact._checks.MAX_INPUT_BYTES`.
    """
    S, A = check_int(S, "S", 1), check_int(A, "A", 1)
    K = check_int(K, "K", 0)
    gamma = check_real(gamma, "gamma", 0.0, 1.0)
    if n_outcomes is not None:
        n_outcomes = check_int(n_outcomes, "n_outcomes", 1)
        _room(S * A * n_outcomes, f"random_cmdp(S={S:,}, A={A:,}, n_outcomes={n_outcomes:,}): "
                                  f"the outcome map and masses of S*A*n_outcomes entries", 2)
    if horizon is not None:
        check_limit(horizon, "horizon", "horizon")
    _room(S * A * S, f"random_cmdp(S={S:,}, A={A:,}, K={K:,}): P, R and C of "
                     f"S*A*S = {S * A * S:,} entries each", 2 + K)
    rng = rng_from(seed)
    features = rng.normal(size=(S, int(rng.integers(1, 4))))
    kwargs = dict(d=rng.random(K) * 3, gamma=gamma, p0=rng.dirichlet(np.ones(S)),
                  horizon=horizon, state_features=features)
    if terminal:
        kwargs["terminal"] = np.arange(S) == S - 1
    if next_state_dependent:
        R = rng.normal(size=(S, A, S))
        C = rng.random(size=(S, A, S, K))
    else:
        R = rng.normal(size=(S, A))
        C = rng.random(size=(S, A, K))
    if n_outcomes is None:
        P = rng.dirichlet(0.7 * np.ones(S), size=(S, A))
        if terminal:
            P[:S - 1, :, S - 1] += 0.3
            P[S - 1] = 0.0
            P[S - 1, :, S - 1] = 1.0
            P /= P.sum(axis=2, keepdims=True)
        return TabularCMDP(P, R, C, **kwargs)
    out = rng.integers(0, S, size=(S, A, n_outcomes))
    prob = rng.dirichlet(np.ones(n_outcomes), size=(S, A))
    if terminal:
        out[:S - 1, :, 0] = S - 1  # every pair can end the episode
        out[S - 1] = S - 1
    return TabularCMDP.from_outcomes(out, prob, R, C, **kwargs)


def dense_binding_cmdp(seed, magnitudes=(1.0, 10.0)) -> TabularCMDP:
    """A dense random CMDP (not a Garnet) whose budgets bind, from a seed.

    S in 2..5, A in 2..3, K in 1..3, gamma in {0.5, 0.9, 0.95, 0.99}, rewards and costs
    of one magnitude drawn from ``magnitudes`` (value scales up to 10^3 by default),
    transitions Dirichlet(0.2 or 1), p0 a point mass or Dirichlet(1), budgets at 95-100%
    of the costs of a random stochastic policy (a dense solve): feasible, with large
    multipliers often.  The generator of the LP and bracket regression tests.
    ``magnitudes``: a non-empty sequence of positive numbers.
    """
    try:
        mags = list(magnitudes)
    except TypeError:
        raise InputError(f"magnitudes must be a sequence of positive numbers, got "
                         f"{magnitudes!r}") from None
    if not mags:
        raise InputError("magnitudes is empty; give positive numbers, e.g. (1.0, 10.0)")
    for i, m in enumerate(mags):
        check_real(m, f"magnitudes[{i}]", 0.0, low_open=True)
    rng = rng_from(seed)
    S, A, K = int(rng.integers(2, 6)), int(rng.integers(2, 4)), int(rng.integers(1, 4))
    gamma = float(rng.choice([0.5, 0.9, 0.95, 0.99]))
    mag = float(rng.choice(mags))
    P = rng.dirichlet(np.full(S, rng.choice([0.2, 1.0])), size=(S, A))
    r = mag * rng.uniform(-1, 1, size=(S, A))
    c = mag * rng.uniform(0, 1, size=(S, A, K))
    p0 = np.eye(S)[0] if rng.random() < 0.5 else rng.dirichlet(np.ones(S))
    pi = rng.dirichlet(np.ones(A), size=S)
    P_pi = np.einsum("sa,sat->st", pi, P)
    rhs = np.column_stack([np.einsum("sa,sa->s", pi, r), np.einsum("sa,sak->sk", pi, c)])
    C = PolicySystem(P_pi, gamma).solve(rhs)[:, 1:]
    d = (p0 @ C) * rng.uniform(0.95, 1.0, K)
    return TabularCMDP(P, r, c, d=d, gamma=gamma, p0=p0)


def random_model_arrays(seed, S: int, A: int, K: int, density: float = 0.6,
                        next_state_dependent: bool = True):
    """The arrays P, R, C of a random model with a sparse support, from a seed.

    Each entry of P is U(0, 1), kept with probability ``density`` (else exactly 0); one
    next state per pair, drawn uniformly, gets 0.05 more, so every row has a positive
    entry; rows are then normalised.  Rewards are N(0, 1), costs U(0, 1).  Build a
    model with ``TabularCMDP(P, R, C, ...)``, or a sparse one from
    ``scipy.sparse.csr_array(P.reshape(S * A, S))`` (then with the per-pair rewards and
    costs of ``next_state_dependent=False``).

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    S, A : int
        Numbers of states and actions (>= 1).
    K : int
        Number of costs (>= 0).
    density : float
        Probability in [0, 1] that an entry of P is kept (at 0 every row is a point mass).
    next_state_dependent : bool
        Rewards (S, A, S) and costs (S, A, S, K) per transition, else (S, A) and (S, A, K).

    Returns
    -------
    P : ndarray (S, A, S)
        Rows sum to 1; entries outside the kept ones are exactly 0.
    R : ndarray (S, A, S) or (S, A)
    C : ndarray (S, A, S, K) or (S, A, K)
    """
    S, A = check_int(S, "S", 1), check_int(A, "A", 1)
    K = check_int(K, "K", 0)
    density = check_real(density, "density", 0.0, 1.0)
    _room(S * A * S, f"random_model_arrays(S={S:,}, A={A:,}, K={K:,}): P, R and C of "
                     f"S*A*S = {S * A * S:,} entries each", 2 + K)
    rng = rng_from(seed)
    P = rng.random((S, A, S)) * (rng.random((S, A, S)) < density)
    P[np.arange(S)[:, None], np.arange(A)[None, :], rng.integers(0, S, (S, A))] += 0.05
    P /= P.sum(axis=2, keepdims=True)
    if next_state_dependent:
        R = rng.normal(size=(S, A, S))
        C = rng.random((S, A, S, K))
    else:
        R = rng.normal(size=(S, A))
        C = rng.random((S, A, K))
    return P, R, C


def random_row(seed, n: int, support_frac: float = 0.7, degenerate: bool = False):
    """One nominal row of an inner problem and its support, from a seed.

    Each of the ``n`` next states is in the support with probability ``support_frac``,
    and one of them (drawn uniformly) always is.  The row puts U(0, 1) masses on about
    70% of its support and exact zeros on the rest (the support's indicator when all
    would be 0), normalised; with ``degenerate`` it is a point mass on one state of the
    support.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    n : int
        Length of the row (>= 1).
    support_frac : float
        Probability in [0, 1] that a next state is in the support (1: all are).
    degenerate : bool
        A point mass instead of a spread row.

    Returns
    -------
    p : ndarray (n,)
        Non-negative, 0 off the support, sums to 1 (up to rounding).
    support : ndarray (n,) of bool
        At least one True.
    """
    n = check_int(n, "n", 1)
    support_frac = check_real(support_frac, "support_frac", 0.0, 1.0)
    _room(n, f"random_row(n={n:,})", 3)
    rng = rng_from(seed)
    sup = rng.random(n) < support_frac
    sup[rng.integers(n)] = True
    if degenerate:
        p = np.zeros(n)
        p[rng.choice(np.flatnonzero(sup))] = 1.0
    else:
        p = rng.random(n) * sup * (rng.random(n) < 0.7)
        if p.sum() == 0:
            p = sup.astype(float)
        p /= p.sum()
    return p, sup


def random_kernel(seed, S: int, A: int, *, density=None, point_masses: float = 0.0,
                  one_hot: bool = False):
    """A nominal kernel (S, A, S) and its support, with exact zeros inside the support.

    ``density=None``: every next state is in the support; rows are Dirichlet(0.6) with
    about a fifth of the entries set to exactly 0.  ``density`` a number or a range
    (low, high): each next state is in the support with that probability (a range: one
    probability drawn uniformly per call), and one per pair (drawn uniformly) always is;
    rows put U(0, 1) masses on about 80% of their support, 0 elsewhere.  Then a fraction
    ``point_masses`` of the pairs (each independently) become a point mass on a state of
    their support; a row left all 0 becomes uniform on its support; with ``one_hot``
    every row becomes a point mass on its first largest entry.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    S, A : int
        Numbers of states and actions (>= 1).
    density : None, float or (float, float)
        Probability in (0, 1] that a next state is in the support (see above).
    point_masses : float
        Probability in [0, 1] that a pair's row is a point mass.
    one_hot : bool
        Every row a point mass (a deterministic kernel).

    Returns
    -------
    P : ndarray (S, A, S)
        Rows sum to 1 (up to rounding), 0 off the support.
    support : ndarray (S, A, S) of bool
        All True with ``density=None``; at least one True per pair.
    """
    S, A = check_int(S, "S", 1), check_int(A, "A", 1)
    point_masses = check_real(point_masses, "point_masses", 0.0, 1.0)
    _room(S * A * S, f"random_kernel(S={S:,}, A={A:,}): S*A*S = {S * A * S:,} entries", 4)
    rng = rng_from(seed)
    if density is None:
        P = rng.dirichlet(np.full(S, 0.6), size=(S, A))
        P *= rng.random((S, A, S)) < 0.8  # some zeros inside the support
        sup = np.ones((S, A, S), dtype=bool)
    else:
        if isinstance(density, tuple | list):
            if len(density) != 2:
                raise InputError(f"density must be a number or a range (low, high), got "
                                 f"{len(density)} numbers")
            low = check_real(density[0], "density[0]", 0.0, 1.0, low_open=True)
            high = check_real(density[1], "density[1]", low, 1.0)
            u = rng.random((S, A, S))
            sup = u < rng.uniform(low, high)
        else:
            frac = check_real(density, "density", 0.0, 1.0, low_open=True)
            sup = rng.random((S, A, S)) < frac
        sup[np.arange(S)[:, None], np.arange(A)[None, :], rng.integers(0, S, (S, A))] = True
        P = rng.random((S, A, S)) * sup * (rng.random((S, A, S)) < 0.8)
    if point_masses > 0:
        point = rng.random((S, A)) < point_masses
        for s, a in zip(*np.nonzero(point), strict=True):
            P[s, a] = 0.0
            P[s, a, rng.choice(np.flatnonzero(sup[s, a]))] = 1.0
    empty = P.sum(axis=2) == 0
    P[empty] = sup[empty]
    if one_hot:
        P = np.where(P == P.max(axis=2, keepdims=True), 1.0, 0.0)
        P *= np.cumsum(P, axis=2) <= 1  # keep the first maximum only
    P /= P.sum(axis=2, keepdims=True)
    return P, sup


#: The kinds of value vectors :func:`random_values` draws.
_VALUE_KINDS = ("ties", "normal", "constant", "magnitudes", "rows", "block")
_MIXED_VALUE_KINDS = ("ties", "magnitudes", "rows", "block")


def _shape(shape) -> tuple[int, ...]:
    """A shape given as an int or a sequence of ints, checked (each >= 0)."""
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise InputError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    return tuple(check_int(n, "shape", 0) for n in dims)


def random_values(seed, shape, kind: str | None = None, scale: float = 1.0) -> np.ndarray:
    """Value vectors z of ``shape`` (rows along the last axis) of one kind, from a seed.

    Kinds (:data:`_VALUE_KINDS`): ``"ties"``, integers -2..2 (many exact ties);
    ``"normal"``, N(0, scale^2); ``"constant"``, every entry 1.5 (every distribution is
    a worst case); ``"magnitudes"``, N(0, scale^2) times one of 1e-3, 1 and 1e3;
    ``"rows"``, each row constant, N(0, scale^2); ``"block"``, N(0, scale^2) with the
    first half of each row (n // 2 entries) equal to its first entry.  ``None``: one of
    ``"ties"``, ``"magnitudes"``, ``"rows"`` and ``"block"``, drawn uniformly.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    shape : int or tuple of int
        Shape of the result; its last axis is the row (next states).
    kind : str or None
        One of :data:`_VALUE_KINDS`, or None (see above).
    scale : float
        Standard deviation (> 0) of the normal kinds.

    Returns
    -------
    ndarray of ``shape``, float64
    """
    shape = _shape(shape)
    scale = check_real(scale, "scale", 0.0, low_open=True)
    if kind is not None:
        check_choice(kind, "kind", _VALUE_KINDS)
    _room(int(np.prod(shape, dtype=object)), f"random_values(shape={shape})", 2)
    rng = rng_from(seed)
    if kind is None:
        kind = _MIXED_VALUE_KINDS[int(rng.integers(len(_MIXED_VALUE_KINDS)))]
    check_choice(kind, "kind", _VALUE_KINDS)
    if kind == "ties":
        return rng.integers(-2, 3, size=shape).astype(float)
    if kind == "constant":
        return np.full(shape, 1.5)
    if kind == "magnitudes":
        return rng.normal(size=shape) * rng.choice([1e-3, 1.0, 1e3]) * scale
    if kind == "rows":
        return np.broadcast_to(rng.normal(size=(*shape[:-1], 1)), shape).copy() * scale
    z = rng.normal(scale=scale, size=shape)
    if kind == "block" and shape:
        z[..., : shape[-1] // 2] = z[..., :1]
    return z


def random_radii(seed, shape, small: float, whole: float) -> np.ndarray:
    """Radii of ``shape`` (one per pair, or per state) across the regimes of a set.

    Each entry is, with probability 1/4 each: exactly 0 (the nominal row), small
    (U(0, ``small``)), moderate (U(0, ``whole``)) and at or beyond ``whole``
    (``whole`` times U(1, 2)), where ``whole`` is a radius at which the set covers
    every distribution on the support (2 for an L1 ball, 1 for an L-infinity ball,
    :math:`-\\log \\min_i \\hat p_i` for a KL ball).

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    shape : int or tuple of int
        (S, A) for an sa-rectangular set, (S,) for an s-rectangular one.
    small, whole : float
        ``small`` >= 0, ``whole`` > 0.

    Returns
    -------
    ndarray of ``shape``, float64, >= 0
    """
    small = check_real(small, "small", 0.0)
    whole = check_real(whole, "whole", 0.0, low_open=True)
    shape = _shape(shape)
    _room(int(np.prod(shape, dtype=object)), f"random_radii(shape={shape})", 4)
    rng = rng_from(seed)
    pick = rng.integers(0, 4, size=shape)
    r = np.where(pick == 0, 0.0, np.where(pick == 1, small * rng.random(shape),
                                          rng.uniform(0.0, whole, shape)))
    return np.where(pick == 3, whole * rng.uniform(1.0, 2.0, shape), r)


#: The kinds of policies :func:`random_policies` draws.
POLICY_KINDS = ("stochastic", "deterministic", "sparse")


def random_policies(seed, S: int, A: int, kind: str = "stochastic",
                    n: int | None = None) -> np.ndarray:
    """Random policies (S, A), or ``n`` of them (n, S, A), of one kind, from a seed.

    ``"stochastic"``: rows Dirichlet(0.7); ``"deterministic"``: one-hot rows, actions
    uniform; ``"sparse"``: Dirichlet(0.7) rows with each action kept with probability
    1/2 (exact zeros; a row left empty puts all its mass on action 0), renormalised
    (with A = 1, the stochastic kind).

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    S, A : int
        Numbers of states and actions (>= 1).
    kind : str
        One of :data:`POLICY_KINDS`.
    n : int, optional
        Number of policies (>= 1): a leading axis of that length (default: one policy,
        no leading axis).

    Returns
    -------
    ndarray (S, A) or (n, S, A)
        Rows sum to 1 (up to rounding).
    """
    S, A = check_int(S, "S", 1), check_int(A, "A", 1)
    check_choice(kind, "kind", POLICY_KINDS)
    J = 1 if n is None else check_int(n, "n", 1)
    _room(J * S * A, f"random_policies(S={S:,}, A={A:,}, n={n}): n*S*A = {J * S * A:,} "
                     f"entries", 3)
    rng = rng_from(seed)
    if kind == "deterministic":
        pi = np.eye(A)[rng.integers(0, A, size=(J, S))]
    else:
        pi = rng.dirichlet(np.full(A, 0.7), size=(J, S))
        if kind == "sparse" and A > 1:
            pi *= rng.random((J, S, A)) < 0.5
            dead = pi.sum(axis=2) == 0
            pi[dead, 0] = 1.0
            pi /= pi.sum(axis=2, keepdims=True)
    return pi[0] if n is None else pi


def random_box(seed, S: int, A: int, width: float | None = None):
    """A policy box lo <= pi <= hi (S, A) that meets the simplex in every state.

    ``width=None``: lower bounds U(0, 1/A), each set to exactly 0 with probability 0.4;
    upper bounds the larger of the lower bound and U(0, 1), and 1 for one action per
    state (drawn uniformly), so the box holds a policy; not tightened.  ``width`` a
    number: a box around a Dirichlet(1) policy, each bound moved away from it by
    ``width`` times U(0, 1), clipped to [0, 1] and tightened to the simplex (the
    tightest bounds of the box's policies, as in branch and bound); the policy lies
    in it.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        A Generator is drawn from in place (so a caller can go on drawing from it).
    S, A : int
        Numbers of states and actions (>= 1).
    width : float, optional
        >= 0 (0: the box of one policy; 1 or more: near the whole simplex).

    Returns
    -------
    lo, hi : ndarray (S, A)
        0 <= lo <= hi <= 1, ``lo.sum(axis=1) <= 1 <= hi.sum(axis=1)``.
    """
    S, A = check_int(S, "S", 1), check_int(A, "A", 1)
    if width is not None:
        width = check_real(width, "width", 0.0)
    _room(S * A, f"random_box(S={S:,}, A={A:,})", 6)
    rng = rng_from(seed)
    if width is None:
        lo = rng.uniform(0.0, 1.0 / A, (S, A)) * (rng.random((S, A)) < 0.6)
        hi = np.maximum(lo, rng.uniform(0.0, 1.0, (S, A)))
        hi[np.arange(S), rng.integers(0, A, S)] = 1.0  # every box meets the simplex
        return lo, hi
    from ..ground_truth.structure import tighten

    centre = rng.dirichlet(np.ones(A), size=S)
    lo, hi, _ = tighten(np.clip(centre - width * rng.uniform(0, 1, (S, A)), 0, 1)[None],
                        np.clip(centre + width * rng.uniform(0, 1, (S, A)), 0, 1)[None])
    return lo[0], hi[0]

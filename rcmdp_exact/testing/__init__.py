r"""Hypothesis strategies for RCMDPs, a profile for exact checks, and counterexample search.

This module needs `hypothesis <https://hypothesis.readthedocs.io>`_ (``pip install
"rcmdp_exact[testing]"``); ``import rcmdp_exact`` does not load it.  It plays the role
of ``hypothesis.extra.numpy`` for this toolkit: strategies that generate valid models,
policies, multipliers, uncertainty sets of every kind and budgets that bind, so that a
property of your own ("my theorem holds on every small RCMDP") is one ``@given`` away.

Strategies
----------
* :func:`cmdps`: tabular CMDPs with given sizes, constraints, discount, sparsity
  (``branching``), terminal states and next-state-dependent rewards; values lie on a
  grid (multiples of ``1/grid``) so that a shrunk example reads as fractions
  (``grid=None``: continuous values from a seeded generator);
* :func:`garnets`: the toolkit's Garnet models (:func:`rcmdp_exact.domains.garnet`);
* :func:`policies` (stochastic or deterministic), :func:`multipliers`;
* uncertainty sets: :func:`balls` (a set of one of the kinds named, drawn by the
  kind's own ``strategy``: ``rcmdp_exact.L1Ball.strategy(model, max_radius=1.0)`` and
  so on), and the building blocks of the sets' strategies and of yours
  (:func:`pair_radii`, :func:`state_budgets`, :func:`supports`, :func:`grid_values`,
  :func:`kernels`, :func:`sizes`);
* :func:`binding_budgets`: budgets between the worst-case costs of the least-cost
  robust policy and those of the unconstrained robust optimum (:func:`budget_levels`
  computes both): feasible, and often binding; :func:`robust_cmdps` draws a model, a
  set and such budgets together.

Every argument that sets a size accepts a number, an inclusive range (low, high) or a
strategy (as
``hypothesis.extra.numpy.arrays`` does).  Every model drawn passes the model's
validation; every set drawn contains the model's kernel.

Exact checks, counterexamples
-----------------------------
* :data:`EXACT_PROFILE`: the name of a registered settings profile for exact checks
  (derandomized, no deadline, the slow-data health checks off);
  ``hypothesis.settings.load_profile(EXACT_PROFILE)`` or :func:`exact_settings`;
* :func:`example`: one example of a strategy, reproducible from a seed;
* :func:`find_counterexample`: search for an example that breaks a claim, shrink it, and
  save it as files that :func:`load_counterexample` reads back;
* :func:`random_cmdp` and :func:`dense_binding_cmdp`: seeded numpy generators of random
  RCMDPs (continuous values, optional outcome maps and terminal states; dense models
  with binding budgets) for code that does not use hypothesis;
* :func:`skewed_kernel`, :func:`skewed_values` and :func:`skewed_radii`: seeded rows of
  the kind real data gives (masses from 1e-15 to 1e-2 beside large ones, exact zeros,
  values up to 1e6, near ties, radii near 0 and radii that cover the simplex), to test
  an inner solver where friendly random rows never reach (numpy only: they live in
  :mod:`rcmdp_exact.uncertainty.conformance`, whose check of a set uses them).

Examples
--------
>>> from hypothesis import given, settings
>>> from rcmdp_exact import evaluate
>>> from rcmdp_exact.testing import cmdps, policies
>>> @settings(max_examples=20)
... @given(cmdps().flatmap(lambda m: policies(m).map(lambda pi: (m, pi))))
... def test_values_are_bounded(case):
...     model, pi = case
...     bound = abs(model.R).max(initial=0) / (1 - model.gamma)
...     assert abs(evaluate(model, pi).value) <= bound + 1e-9
>>> test_values_are_bounded()
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import FlakyFailure, FlakyReplay, HypothesisException
from hypothesis.strategies import SearchStrategy

from .._checks import (
    InputError,
    check_choice,
    check_int,
    check_out_path,
    check_real,
    rng_from,
)
from .._result import Result, decode, encode
from ..core.evaluation import PolicySystem
from ..core.model import TabularCMDP
from ..uncertainty.conformance import SKEWED_FAMILIES, skewed_kernel, skewed_radii, skewed_values

_seed = seed  # hypothesis.seed, before a parameter named seed hides it

__all__ = [
    "EXACT_PROFILE",
    "SA_KINDS",
    "SET_KINDS",
    "SKEWED_FAMILIES",
    "balls",
    "binding_budgets",
    "budget_levels",
    "cmdps",
    "dense_binding_cmdp",
    "exact_settings",
    "example",
    "find_counterexample",
    "garnets",
    "grid_values",
    "kernels",
    "load_counterexample",
    "multipliers",
    "pair_radii",
    "policies",
    "random_cmdp",
    "robust_cmdps",
    "save_counterexample",
    "sizes",
    "skewed_kernel",
    "skewed_radii",
    "skewed_values",
    "state_budgets",
    "supports",
]

#: The name of the settings profile for exact checks (registered on import).
EXACT_PROFILE = "rcmdp_exact"
settings.register_profile(
    EXACT_PROFILE,
    derandomize=True,
    deadline=None,
    max_examples=60,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)

#: Format of a saved counterexample.
COUNTEREXAMPLE_FORMAT = "rcmdp_exact.Counterexample/1"


def exact_settings(**changes) -> settings:
    """The :data:`EXACT_PROFILE` settings, with ``changes`` (e.g. ``max_examples=20``)."""
    return settings(settings.get_profile(EXACT_PROFILE), **changes)


# =========================================================================== helpers
def _strategy(value) -> SearchStrategy:
    """A strategy as is; a tuple or list of choices (``sampled_from``); a value (``just``)."""
    if isinstance(value, SearchStrategy):
        return value
    if isinstance(value, tuple | list):
        return st.sampled_from(tuple(value))
    return st.just(value)


def _ints(value) -> SearchStrategy:
    """A size: an int, an inclusive range (low, high), or a strategy."""
    if isinstance(value, tuple) and len(value) == 2:
        return st.integers(int(value[0]), int(value[1]))
    return _strategy(value)


def _flag(value) -> SearchStrategy:
    """A bool, or None for either."""
    return st.booleans() if value is None else _strategy(value)


def _values(draw, n: int, low: float, high: float, grid: int | None, rng=None) -> np.ndarray:
    """n values in [low, high]: multiples of 1/grid (shrinking to the one nearest 0), or
    continuous draws of the generator ``rng``."""
    if grid is None:
        return rng.uniform(low, high, size=n)
    lo, hi = math.ceil(low * grid), math.floor(high * grid)
    if lo > hi:
        return np.full(n, float(low))
    ints = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    return np.array(ints, dtype=np.float64) / grid


def _composition(draw, n: int, grid: int) -> np.ndarray:
    """A distribution over n entries in multiples of 1/grid; shrinks to all mass on 0."""
    out = np.zeros(n)
    left = grid
    for j in range(n - 1, 0, -1):
        c = draw(st.integers(0, left))
        out[j] = c
        left -= c
    out[0] = left
    return out / grid


def _rows(draw, S: int, A: int, support: np.ndarray, grid: int | None, rng) -> np.ndarray:
    """A kernel (S, A, S) with every row a distribution on its support."""
    P = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            on = np.flatnonzero(support[s, a])
            if not on.size:  # a terminal row, set by the caller
                continue
            if grid is None:
                P[s, a, on] = rng.dirichlet(np.ones(on.size))
            else:
                P[s, a, on] = _composition(draw, on.size, grid)
    return P


def _generator(draw, grid):
    return None if grid is not None else np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


def _check_grid(grid) -> int | None:
    return None if grid is None else check_int(grid, "grid", 1)


# =========================================================================== models
@st.composite
def cmdps(draw, n_states=(1, 4), n_actions=(1, 3), n_constraints=(0, 2),
          gamma=(0.5, 0.75, 0.9), *, branching=None, terminal=None,
          next_state_dependent=None, rewards=(-2.0, 2.0), costs=(0.0, 2.0),
          start="state", grid: int | None = 4):
    r"""Strategy for valid :class:`~rcmdp_exact.TabularCMDP` models.

    Parameters
    ----------
    n_states, n_actions, n_constraints : int, (low, high) or strategy
        S >= 1, A >= 1, K >= 0 (a pair is an inclusive range).
    gamma : float, tuple of choices, or strategy
        The discount (default 1/2, 3/4 or 9/10).
    branching : int, (low, high) or strategy, optional
        The number of next states each pair may reach (a Garnet's b; default: any).
        The states are drawn per pair (shrinking to 0, 1, ...).
    terminal : bool, strategy or None
        Make the last state terminal (absorbing, earning nothing), when S >= 2 (None:
        either).
    next_state_dependent : bool, strategy or None
        Rewards R (S, A, S) and costs C (S, A, S, K) per transition, else per pair
        (None: either).
    rewards, costs : (low, high)
        Ranges of the rewards and costs.
    start : {"state", "distribution"}
        p0: the state 0, or a distribution drawn on the grid.
    grid : int or None
        Probabilities, rewards, costs and budgets are multiples of ``1/grid`` (default
        4, so a shrunk model reads as quarters); ``None`` draws continuous values from
        a generator seeded by the example.

    Notes
    -----
    Budgets are drawn in ``[0, costs[1] / (1 - gamma)]``; for budgets that bind, draw
    them with :func:`binding_budgets` (or use :func:`robust_cmdps`).
    """
    grid = _check_grid(grid)
    check_choice(start, "start", ("state", "distribution"))
    S = check_int(draw(_ints(n_states)), "n_states", 1)
    A = check_int(draw(_ints(n_actions)), "n_actions", 1)
    K = check_int(draw(_ints(n_constraints)), "n_constraints", 0)
    g = check_real(draw(_strategy(gamma)), "gamma", 0.0, 1.0)
    rng = _generator(draw, grid)
    term = np.zeros(S, dtype=bool)
    if S >= 2 and draw(_flag(terminal)):
        term[-1] = True
    support = np.ones((S, A, S), dtype=bool)
    if branching is not None:
        for s in range(S):
            for a in range(A):
                b = min(check_int(draw(_ints(branching)), "branching", 1), S)
                order = draw(st.permutations(range(S)))
                support[s, a] = False
                support[s, a, list(order[:b])] = True
    support[term] = False
    P = _rows(draw, S, A, support, grid, rng)
    P[term] = 0.0
    P[term, :, term] = 1.0
    nsd = bool(draw(_flag(next_state_dependent)))
    shape = (S, A, S) if nsd else (S, A)
    R = _values(draw, int(np.prod(shape)), rewards[0], rewards[1], grid, rng).reshape(shape)
    C = None
    d = None
    if K:
        C = _values(draw, int(np.prod(shape)) * K, costs[0], costs[1], grid, rng
                    ).reshape(*shape, K)
        top = max(costs[1], 0.0) / (1.0 - g) if g < 1 else max(costs[1], 0.0) * S
        d = _values(draw, K, 0.0, top, grid, rng)
    p0 = 0 if start == "state" else _composition(draw, S, grid) if grid else \
        rng.dirichlet(np.ones(S))
    return TabularCMDP(P, R, C, d=d, gamma=g, p0=p0, terminal=term)


@st.composite
def garnets(draw, n_states=(2, 6), n_actions=(1, 3), branching=None, n_constraints=(1, 2),
            gamma=(0.5, 0.9, 0.95), next_state_dependent=None):
    """Strategy for :func:`rcmdp_exact.domains.garnet` models (continuous values from a
    drawn seed; ``branching`` defaults to any b in 1..S)."""
    from ..domains import garnet

    S = check_int(draw(_ints(n_states)), "n_states", 1)
    A = check_int(draw(_ints(n_actions)), "n_actions", 1)
    b = draw(st.integers(1, S)) if branching is None else min(
        check_int(draw(_ints(branching)), "branching", 1), S)
    K = check_int(draw(_ints(n_constraints)), "n_constraints", 0)
    seed_ = draw(st.integers(0, 2**31 - 1))
    g = draw(_strategy(gamma))
    nsd = bool(draw(_flag(next_state_dependent)))
    return garnet(S, A, b, n_constraints=K, seed=seed_, gamma=g, next_state_dependent=nsd)


@st.composite
def policies(draw, model: TabularCMDP, deterministic=None, grid: int | None = 4):
    """Strategy for policies (S, A) of ``model``: one-hot rows (``deterministic=True``),
    rows on the grid of ``1/grid`` (False; continuous with ``grid=None``), or either
    (None).  Deterministic policies shrink to action 0 everywhere."""
    grid = _check_grid(grid)
    S, A = model.n_states, model.n_actions
    det = draw(st.booleans()) if deterministic is None else bool(deterministic)
    if det:
        acts = draw(st.lists(st.integers(0, A - 1), min_size=S, max_size=S))
        return np.eye(A)[acts]
    if grid is None:
        rng = _generator(draw, grid)
        return rng.dirichlet(np.ones(A), size=S)
    return np.stack([_composition(draw, A, grid) for _ in range(S)])


@st.composite
def multipliers(draw, model: TabularCMDP, max_value: float = 4.0, grid: int | None = 4):
    """Strategy for Lagrange multipliers (K,) >= 0 of ``model``, at most ``max_value``."""
    grid = _check_grid(grid)
    return _values(draw, model.n_constraints, 0.0, max_value, grid, _generator(draw, grid))


# =========================================================================== sets
@st.composite
def grid_values(draw, n: int, low: float, high: float, grid: int | None = 4):
    """Strategy for n values (n,) in [low, high]: multiples of ``1/grid`` (shrinking to
    the one nearest 0), or continuous draws from a generator seeded by the example
    (``grid=None``).  A building block of the sets' strategies."""
    grid = _check_grid(grid)
    return _values(draw, n, low, high, grid, _generator(draw, grid))


@st.composite
def pair_radii(draw, model: TabularCMDP, max_radius: float, *, grid: int | None = 4):
    """Strategy for radii (S, A) in [0, max_radius], one per pair, 0 at terminal states
    (with ``grid=None``, about a fifth of the pairs certain, radius 0)."""
    return _radii(draw, model, max_radius, _check_grid(grid), "pair")


@st.composite
def state_budgets(draw, model: TabularCMDP, max_radius: float, *, grid: int | None = 4):
    """Strategy for budgets (S,) in [0, max_radius], one per state, 0 at terminal
    states (the radii of an s-rectangular set)."""
    return _radii(draw, model, max_radius, _check_grid(grid), "state")


@st.composite
def supports(draw, model: TabularCMDP, support=("all", "nominal")):
    """Strategy for supports (S, A, S) bool: every next state (``"all"``) or those of
    the model's kernel (``"nominal"``); a name, or a tuple of names to draw from."""
    return _support(draw, model, support)


@st.composite
def kernels(draw, model: TabularCMDP, grid: int | None = 4):
    """Strategy for transition kernels (S, A, S) with rows on every next state (those
    of terminal states left 0, for the caller to set)."""
    grid = _check_grid(grid)
    S, A = model.n_states, model.n_actions
    support = np.ones((S, A, S), dtype=bool)
    support[np.asarray(model.terminal, dtype=bool)] = False
    return _rows(draw, S, A, support, grid, _generator(draw, grid))


def sizes(value) -> SearchStrategy:
    """Strategy for a size given as an int, an inclusive range (low, high) or a
    strategy."""
    return _ints(value)


def _radii(draw, model, high, grid, per="pair"):
    S, A = model.n_states, model.n_actions
    n = S * A if per == "pair" else S
    rng = _generator(draw, grid)
    r = _values(draw, n, 0.0, high, grid, rng)
    if grid is None:
        r = r * (rng.random(n) < 0.8)  # about a fifth of the rows certain
    r = r.reshape((S, A) if per == "pair" else (S,))
    term = np.asarray(model.terminal, dtype=bool)
    r[term] = 0.0
    return r


def _support(draw, model, support):
    kind = draw(_strategy(support))
    check_choice(kind, "support", ("all", "nominal"))
    P = np.asarray(model.P)
    return np.ones(P.shape, dtype=bool) if kind == "all" else P > 0


def _kinds_with_strategies() -> tuple[str, ...]:
    from ..uncertainty import builtin_kinds, set_class

    return tuple(k for k in builtin_kinds() if set_class(k).has_strategy())


#: The built-in kinds of uncertainty set :func:`balls` draws, by name (each set class's
#: ``kind``; ``rcmdp_exact.uncertainty.builtin_kinds``).
SET_KINDS = _kinds_with_strategies()


def _sa_kinds() -> tuple[str, ...]:
    from ..uncertainty import SARectangularSet, set_class

    return tuple(k for k in SET_KINDS if issubclass(set_class(k), SARectangularSet))


#: The sa-rectangular kinds (those every robust function takes): the default of
#: :func:`balls`.
SA_KINDS = _sa_kinds()


def balls(model: TabularCMDP, kinds=SA_KINDS, grid: int | None = 4,
          **options) -> SearchStrategy:
    """Strategy for an uncertainty set of one of ``kinds`` around ``model.P``.

    ``kinds``: names of kinds (:data:`SET_KINDS`: "l1", "finite", "interval", "kl",
    "linf", "s-l1", "weighted-l1"; default the sa-rectangular ones, :data:`SA_KINDS`),
    or ``"MODULE:CLASS"`` of a set class of yours, or the kind of a class of yours
    already defined; each is drawn by its class's ``strategy(model, grid=grid,
    **options)`` (``options`` such as ``max_radius`` go to every kind named).
    """
    from ..uncertainty import set_class

    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not kinds:
        raise InputError(f"kinds is empty; name some of {', '.join(SET_KINDS)}")
    classes = {}
    for k in kinds:
        cls = set_class(k)
        if not cls.has_strategy():
            raise InputError(f"the set kind {k!r} ({cls.__name__}) gives no hypothesis "
                             f"strategy; add a classmethod strategy(model, grid=...) to it")
        classes[k] = cls
    _check_grid(grid)

    def draw_kind(k):
        try:
            return classes[k].strategy(model, grid=grid, **options)
        except TypeError as exc:
            raise InputError(f"the set kind {k!r}: {exc}") from None

    return st.sampled_from(kinds).flatmap(draw_kind)


# =========================================================================== budgets
def budget_levels(model: TabularCMDP, uset=None) -> Result:
    r"""The cost levels between which budgets bind (a plain function, no hypothesis).

    Parameters
    ----------
    model : TabularCMDP
        Discounted (gamma < 1), K >= 1.
    uset : UncertaintySet, optional
        An sa-rectangular set (default: the nominal model, an L1 ball of radius 0).

    Returns
    -------
    Result
        ``least`` (K,): :math:`\min_\pi \max_P C_k(\pi, P)`, each cost's least
        worst-case value (by robust policy iteration on the reward :math:`-c_k`);
        ``joint`` (K,): the worst-case costs of the robust policy of least total
        worst-case cost :math:`\max_P \sum_k C_k`; ``free`` (K,): the worst-case costs
        of the unconstrained robust optimum (at least ``least``); ``policies``
        {"joint", "free"}.
    """
    from ..robust import robust_evaluate, robust_value_iteration
    from ..uncertainty import l1_ball

    if uset is None:
        uset = l1_ball(model, 0.0, support="all")
    C = np.asarray(model.C)
    least = np.empty(model.n_constraints)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for k in range(model.n_constraints):
            mk = model.replace(R=-C[..., k], C=None, d=None)
            least[k] = -robust_value_iteration(mk, uset, method="policy_iteration",
                                               progress=False).value
        total = model.replace(R=-C.sum(axis=3), C=None, d=None)
        joint = robust_value_iteration(total, uset, method="policy_iteration",
                                       progress=False).policy
        free = robust_value_iteration(model, uset, method="policy_iteration",
                                      progress=False).policy
        joint_costs = robust_evaluate(model, joint, uset).costs_worst
        free_costs = robust_evaluate(model, free, uset).costs_worst
    return Result(least=least, joint=np.maximum(joint_costs, least),
                  free=np.maximum(free_costs, least),
                  policies={"joint": joint, "free": free})


@st.composite
def binding_budgets(draw, model: TabularCMDP, uset=None, grid: int = 4, slack: float = 0.0):
    r"""Strategy for budgets d (K,) that bind and can be met:
    :math:`d_k = \ell_k + f_k \max(u_k - \ell_k, 0)` + slack.

    :math:`\ell` are the worst-case costs of the robust policy of least total worst-case
    cost (so that policy meets every budget: the RCMDP is feasible, and with
    ``slack > 0`` strictly, a Slater point), :math:`u` those of the unconstrained robust
    optimum (at or above :math:`u_k` for every k the constraints do not bind); both by
    :func:`budget_levels` over the sa-rectangular ``uset`` (default: the nominal model).
    :math:`f_k` is drawn from :math:`\{1, \dots, \text{grid}\}/(\text{grid} + 1)`,
    strictly inside, shrinking towards :math:`\ell`.  With K = 1, :math:`\ell` is the
    least worst-case cost.
    """
    check_int(grid, "grid", 1)
    check_real(slack, "slack", 0.0)
    levels = budget_levels(model, uset)
    low, free = levels["joint"], levels["free"]
    f = np.array(draw(st.lists(st.integers(1, grid), min_size=model.n_constraints,
                               max_size=model.n_constraints)), dtype=np.float64) / (grid + 1)
    return low + f * np.maximum(free - low, 0.0) + slack


@st.composite
def robust_cmdps(draw, n_states=(2, 3), n_actions=(2, 3), n_constraints=1,
                 gamma=(0.5, 0.75, 0.9), kinds=("l1",),
                 budgets: str = "binding", grid: int | None = 4, slack: float = 0.0,
                 **model_options):
    """Strategy for ``(model, uset)``: a model of :func:`cmdps`, a set of :func:`balls`
    (sa-rectangular ``kinds``) and, with ``budgets="binding"``, budgets of
    :func:`binding_budgets` with ``slack`` (``"drawn"`` keeps those of :func:`cmdps`).
    ``model_options`` go to :func:`cmdps` (``terminal``, ``branching``, ...)."""
    check_choice(budgets, "budgets", ("binding", "drawn"))
    model = draw(cmdps(n_states, n_actions, n_constraints, gamma, grid=grid,
                       **model_options))
    uset = draw(balls(model, kinds, grid=grid))
    if budgets == "binding" and model.n_constraints:
        model = model.replace(d=draw(binding_budgets(model, uset, grid=grid or 4,
                                                     slack=slack)))
    return model, uset


# =========================================================================== examples
#: Examples skipped by :func:`example` (the first is the simplest of the strategy).
_SKIP = 1


class _Captured(Exception):
    """Raised by :func:`example` to stop hypothesis once it has an example."""


def example(strategy: SearchStrategy, seed: int = 0):
    """One example of ``strategy``, the same for the same ``seed`` (unlike
    ``strategy.example()``, which is random and meant for the interpreter).

    It runs hypothesis, so it cannot be called inside a ``@given`` test: compose the
    strategies there instead (``cmdps().flatmap(lambda m: binding_budgets(m))``).

    Examples
    --------
    >>> m = example(cmdps(n_states=2, n_actions=2, n_constraints=1), seed=3)
    >>> m.n_states, m.n_actions, m.n_constraints
    (2, 2, 1)
    """
    check_int(seed, "seed", 0)
    box: list = []

    @settings(database=None, max_examples=_SKIP + 1, phases=[Phase.generate],
              deadline=None, suppress_health_check=list(HealthCheck),
              verbosity=Verbosity.quiet)
    @_seed(seed)
    @given(strategy)
    def run(value):
        box.append(value)
        if len(box) > _SKIP:  # hypothesis starts with the simplest example: skip it
            raise _Captured

    try:
        run()
    except _Captured:
        return box[-1]
    raise InputError("the strategy gave no example (is it empty, or filtered to nothing?)")


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
        Where examples come from (e.g. :func:`robust_cmdps`).
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


# =========================================================================== numpy generator
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
    """
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
    """
    rng = rng_from(seed)
    S, A, K = int(rng.integers(2, 6)), int(rng.integers(2, 4)), int(rng.integers(1, 4))
    gamma = float(rng.choice([0.5, 0.9, 0.95, 0.99]))
    mag = float(rng.choice(list(magnitudes)))
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

r"""Hypothesis strategies for RCMDPs, and a settings profile for exact checks.

Part of :mod:`rcmdp_exact.testing` (needs hypothesis, the ``testing`` extra): strategies
that generate valid models, policies, multipliers, uncertainty sets of every kind and
budgets that bind, so that a property of your own ("my theorem holds on every small
RCMDP") is one ``@given`` away.

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
* :func:`inner_problems`: batches of L1 inner problems (nominal rows, values, radii,
  supports) with ties, point masses, restricted supports and radii of 0 and 2, the
  input of :func:`rcmdp_exact.worst_case_l1` and of your own inner solver;
* :func:`binding_budgets`: budgets between the worst-case costs of the least-cost
  robust policy and those of the unconstrained robust optimum (:func:`budget_levels`
  computes both): feasible, and often binding; :func:`robust_cmdps` draws a model, a
  set and such budgets together;
* :data:`EXACT_PROFILE`: the name of a registered settings profile for exact checks
  (derandomized, no deadline, the slow-data health checks off);
  ``hypothesis.settings.load_profile(EXACT_PROFILE)`` or :func:`exact_settings`.

Every argument that sets a size accepts a number, an inclusive range (low, high) or a
strategy (as ``hypothesis.extra.numpy.arrays`` does).  Every model drawn passes the
model's validation; every set drawn contains the model's kernel.
"""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from .._checks import InputError, check_choice, check_int, check_real
from .._result import Result
from ..core.model import TabularCMDP
from ..uncertainty._draw import (
    checked_grid,
    draw_composition,
    draw_rows,
    draw_values,
    example_generator,
    ints_of,
    strategy_of,
)
from ..uncertainty._draw import (  # the building blocks of the kinds' strategies
    grid_values as drawn_values,
)
from ..uncertainty._draw import (
    kernels as drawn_kernels,
)
from ..uncertainty._draw import (
    pair_radii as drawn_pair_radii,
)
from ..uncertainty._draw import (
    state_budgets as drawn_state_budgets,
)
from ..uncertainty._draw import (
    supports as drawn_supports,
)

__all__ = [
    "EXACT_PROFILE",
    "SA_KINDS",
    "SET_KINDS",
    "balls",
    "binding_budgets",
    "budget_levels",
    "cmdps",
    "exact_settings",
    "garnets",
    "grid_values",
    "inner_problems",
    "kernels",
    "multipliers",
    "pair_radii",
    "policies",
    "robust_cmdps",
    "sizes",
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


def exact_settings(**changes) -> settings:
    """The :data:`EXACT_PROFILE` settings, with ``changes`` (e.g. ``max_examples=20``)."""
    return settings(settings.get_profile(EXACT_PROFILE), **changes)


# =========================================================================== helpers
def _size(value, name: str, low: int) -> tuple[SearchStrategy, int | None]:
    """A size argument checked where it is given (not where it is drawn): an int >=
    ``low``, an inclusive range ``(lo, hi)`` with ``low <= lo <= hi``, or a strategy
    (whose draws are checked, named by the argument).  Returns the strategy and the
    largest size it can draw (None for a strategy)."""
    if isinstance(value, SearchStrategy):
        def drawn(v):
            return check_int(v, f"{name} (a value its strategy drew)", low)
        return value.map(drawn), None
    if isinstance(value, tuple | list):
        if len(value) != 2:
            raise InputError(f"{name} must be an int, an inclusive range (low, high) or a "
                             f"strategy, got a {type(value).__name__} of {len(value)} "
                             f"entries: {value!r}")
        lo = check_int(value[0], f"{name}[0] (the low end of the range {tuple(value)})", low)
        hi = check_int(value[1], f"{name}[1] (the high end of the range {tuple(value)})", lo)
        return st.integers(lo, hi), hi
    v = check_int(value, name, low, hint=" (or an inclusive range (low, high), or a "
                                         "strategy)")
    return st.just(v), v


def _model_room(S: int | None, A: int | None, K: int | None, what: str) -> None:
    """Refuse sizes whose largest model (P, R and C per transition, float64) would not
    fit in :data:`~rcmdp_exact._checks.MAX_INPUT_BYTES`."""
    from .._checks import MAX_INPUT_BYTES, bytes_text

    if S is None or A is None:
        return
    K = K or 0
    need = 8 * S * A * S * (2 + K)
    if need > MAX_INPUT_BYTES:
        raise InputError(
            f"{what} may draw models of S = {S:,} states, A = {A:,} actions and K = {K:,} "
            f"constraints, whose P, R and C would hold {bytes_text(need)}, above the "
            f"limit of {bytes_text(MAX_INPUT_BYTES)} "
            f"(rcmdp_exact._checks.MAX_INPUT_BYTES); give smaller sizes")


def _pair(value, name: str) -> tuple[float, float]:
    """A range (low, high) of finite numbers with low <= high."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise InputError(f"{name} must be a range (low, high) of numbers, got {value!r}")
    lo = check_real(value[0], f"{name}[0]")
    hi = check_real(value[1], f"{name}[1] (the high end of {tuple(value)})", lo)
    return lo, hi


def _flag(value) -> SearchStrategy:
    """A bool, or None for either."""
    return st.booleans() if value is None else strategy_of(value)


def _checked(strategy, check):
    """``strategy`` (a function that makes a hypothesis strategy) whose arguments are
    checked by ``check`` (called with the same arguments) when the strategy is made,
    before any example is drawn: a bad argument is refused where it is given, named
    with its value, not when a draw happens to reach it."""
    import functools

    @functools.wraps(strategy)
    def checked(*args, **kwargs):
        check(*args, **kwargs)
        return strategy(*args, **kwargs)
    return checked


def _checked_composite(check):
    """``hypothesis.strategies.composite`` checked by ``check`` (:func:`_checked`)."""
    def deco(fn):
        return _checked(st.composite(fn), check)
    return deco


def _check_model(model, name: str = "model") -> None:
    from ..core.model import check_model

    if not isinstance(model, TabularCMDP):
        check_model(model)


def _check_gamma(gamma, name: str = "gamma") -> None:
    """A discount: a number in [0, 1], a tuple of them (choices) or a strategy."""
    if isinstance(gamma, SearchStrategy):
        return
    for i, g in enumerate(gamma if isinstance(gamma, tuple | list) else (gamma,)):
        check_real(g, f"{name}[{i}]" if isinstance(gamma, tuple | list) else name, 0.0,
                   1.0)
    if isinstance(gamma, tuple | list) and not gamma:
        raise InputError(f"{name} is an empty tuple of choices; give a discount in [0, 1] "
                         f"or a tuple of them")


def _check_cmdps(n_states=(1, 4), n_actions=(1, 3), n_constraints=(0, 2),
                 gamma=(0.5, 0.75, 0.9), *, branching=None, terminal=None,
                 next_state_dependent=None, rewards=(-2.0, 2.0), costs=(0.0, 2.0),
                 start="state", grid=4, what="cmdps") -> None:
    checked_grid(grid)
    check_choice(start, "start", ("state", "distribution"))
    _, S = _size(n_states, "n_states", 1)
    _, A = _size(n_actions, "n_actions", 1)
    _, K = _size(n_constraints, "n_constraints", 0)
    _model_room(S, A, K, f"{what}(n_states={n_states!r}, n_actions={n_actions!r}, "
                         f"n_constraints={n_constraints!r})")
    if branching is not None:
        _size(branching, "branching", 1)
    _check_gamma(gamma)
    _pair(rewards, "rewards")
    _pair(costs, "costs")


def _check_garnets(n_states=(2, 6), n_actions=(1, 3), branching=None, n_constraints=(1, 2),
                   gamma=(0.5, 0.9, 0.95), next_state_dependent=None) -> None:
    _, S = _size(n_states, "n_states", 1)
    _, A = _size(n_actions, "n_actions", 1)
    _, K = _size(n_constraints, "n_constraints", 0)
    _model_room(S, A, K, f"garnets(n_states={n_states!r}, n_actions={n_actions!r})")
    if branching is not None:
        _size(branching, "branching", 1)
    _check_gamma(gamma)


def _check_policies(model, deterministic=None, grid=4) -> None:
    _check_model(model)
    checked_grid(grid)


def _check_multipliers(model, max_value=4.0, grid=4) -> None:
    _check_model(model)
    check_real(max_value, "max_value", 0.0)
    checked_grid(grid)


def _check_grid_values(n, low, high, grid=4) -> None:
    from .._checks import MAX_INPUT_BYTES, check_memory

    check_memory(check_int(n, "n", 0), 8, MAX_INPUT_BYTES, "n", "values", "",
                 "rcmdp_exact._checks.MAX_INPUT_BYTES")
    _pair((low, high), "(low, high)")
    checked_grid(grid)


def _check_radii(model, max_radius, *, grid=4) -> None:
    _check_model(model)
    check_real(max_radius, "max_radius", 0.0)
    checked_grid(grid)


def _check_supports(model, support=("all", "nominal")) -> None:
    _check_model(model)
    if not isinstance(support, SearchStrategy):
        for kind in support if isinstance(support, tuple | list) else (support,):
            check_choice(kind, "support", ("all", "nominal"))


def _check_kernels(model, grid=4) -> None:
    _check_model(model)
    checked_grid(grid)


def _check_inner_problems(max_n=60) -> None:
    from .._checks import MAX_INPUT_BYTES, check_memory

    check_memory(check_int(max_n, "max_n", 1), 3 * 8 * 3, MAX_INPUT_BYTES, "max_n",
                 "entries of three rows (p_hat, z, support)", "",
                 "rcmdp_exact._checks.MAX_INPUT_BYTES")


def _check_binding_budgets(model, uset=None, grid=4, slack=0.0) -> None:
    _check_model(model)
    check_int(grid, "grid", 1)
    check_real(slack, "slack", 0.0)


def _check_robust_cmdps(n_states=(2, 3), n_actions=(2, 3), n_constraints=1,
                        gamma=(0.5, 0.75, 0.9), kinds=("l1",), budgets="binding",
                        grid=4, slack=0.0, **model_options) -> None:
    from ..uncertainty import SARectangularSet, set_class

    check_choice(budgets, "budgets", ("binding", "drawn"))
    check_real(slack, "slack", 0.0)
    _check_cmdps(n_states, n_actions, n_constraints, gamma, grid=grid,
                 what="robust_cmdps", **model_options)
    for k in (kinds,) if isinstance(kinds, str) else tuple(kinds):
        cls = set_class(k)
        if not issubclass(cls, SARectangularSet) or not cls.has_strategy():
            raise InputError(f"robust_cmdps draws sa-rectangular sets with a strategy; the "
                             f"kind {k!r} ({cls.__name__}) is not one: choose among "
                             f"{', '.join(SA_KINDS)}")


# =========================================================================== models
@_checked_composite(_check_cmdps)
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
    grid = checked_grid(grid)
    check_choice(start, "start", ("state", "distribution"))
    S = check_int(draw(ints_of(n_states)), "n_states", 1)
    A = check_int(draw(ints_of(n_actions)), "n_actions", 1)
    K = check_int(draw(ints_of(n_constraints)), "n_constraints", 0)
    g = check_real(draw(strategy_of(gamma)), "gamma", 0.0, 1.0)
    rng = example_generator(draw, grid)
    term = np.zeros(S, dtype=bool)
    if S >= 2 and draw(_flag(terminal)):
        term[-1] = True
    support = np.ones((S, A, S), dtype=bool)
    if branching is not None:
        for s in range(S):
            for a in range(A):
                b = min(check_int(draw(ints_of(branching)), "branching", 1), S)
                order = draw(st.permutations(range(S)))
                support[s, a] = False
                support[s, a, list(order[:b])] = True
    support[term] = False
    P = draw_rows(draw, S, A, support, grid, rng)
    P[term] = 0.0
    P[term, :, term] = 1.0
    nsd = bool(draw(_flag(next_state_dependent)))
    shape = (S, A, S) if nsd else (S, A)
    R = draw_values(draw, int(np.prod(shape)), rewards[0], rewards[1], grid, rng).reshape(shape)
    C = None
    d = None
    if K:
        C = draw_values(draw, int(np.prod(shape)) * K, costs[0], costs[1], grid, rng
                    ).reshape(*shape, K)
        top = max(costs[1], 0.0) / (1.0 - g) if g < 1 else max(costs[1], 0.0) * S
        d = draw_values(draw, K, 0.0, top, grid, rng)
    p0 = 0 if start == "state" else draw_composition(draw, S, grid) if grid else \
        rng.dirichlet(np.ones(S))
    return TabularCMDP(P, R, C, d=d, gamma=g, p0=p0, terminal=term)


@_checked_composite(_check_garnets)
def garnets(draw, n_states=(2, 6), n_actions=(1, 3), branching=None, n_constraints=(1, 2),
            gamma=(0.5, 0.9, 0.95), next_state_dependent=None):
    """Strategy for :func:`rcmdp_exact.domains.garnet` models (continuous values from a
    drawn seed; ``branching`` defaults to any b in 1..S)."""
    from ..domains import garnet

    S = check_int(draw(ints_of(n_states)), "n_states", 1)
    A = check_int(draw(ints_of(n_actions)), "n_actions", 1)
    b = draw(st.integers(1, S)) if branching is None else min(
        check_int(draw(ints_of(branching)), "branching", 1), S)
    K = check_int(draw(ints_of(n_constraints)), "n_constraints", 0)
    seed_ = draw(st.integers(0, 2**31 - 1))
    g = draw(strategy_of(gamma))
    nsd = bool(draw(_flag(next_state_dependent)))
    return garnet(S, A, b, n_constraints=K, seed=seed_, gamma=g, next_state_dependent=nsd)


@_checked_composite(_check_policies)
def policies(draw, model: TabularCMDP, deterministic=None, grid: int | None = 4):
    """Strategy for policies (S, A) of ``model``: one-hot rows (``deterministic=True``),
    rows on the grid of ``1/grid`` (False; continuous with ``grid=None``), or either
    (None).  Deterministic policies shrink to action 0 everywhere."""
    grid = checked_grid(grid)
    S, A = model.n_states, model.n_actions
    det = draw(st.booleans()) if deterministic is None else bool(deterministic)
    if det:
        acts = draw(st.lists(st.integers(0, A - 1), min_size=S, max_size=S))
        return np.eye(A)[acts]
    if grid is None:
        rng = example_generator(draw, grid)
        return rng.dirichlet(np.ones(A), size=S)
    return np.stack([draw_composition(draw, A, grid) for _ in range(S)])


@_checked_composite(_check_multipliers)
def multipliers(draw, model: TabularCMDP, max_value: float = 4.0, grid: int | None = 4):
    """Strategy for Lagrange multipliers (K,) >= 0 of ``model``, at most ``max_value``."""
    grid = checked_grid(grid)
    return draw_values(draw, model.n_constraints, 0.0, max_value, grid,
                       example_generator(draw, grid))


# =========================================================================== sets
grid_values = _checked(drawn_values, _check_grid_values)
pair_radii = _checked(drawn_pair_radii, _check_radii)
state_budgets = _checked(drawn_state_budgets, _check_radii)
supports = _checked(drawn_supports, _check_supports)
kernels = _checked(drawn_kernels, _check_kernels)


def sizes(value) -> SearchStrategy:
    """Strategy for a size given as an int >= 0, an inclusive range (low, high) or a
    strategy (checked where it is given)."""
    return _size(value, "sizes(value)", 0)[0]


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
    checked_grid(grid)

    def draw_kind(k):
        try:
            return classes[k].strategy(model, grid=grid, **options)
        except TypeError as exc:
            raise InputError(f"the set kind {k!r}: {exc}") from None

    return st.sampled_from(kinds).flatmap(draw_kind)


@_checked_composite(_check_inner_problems)
def inner_problems(draw, max_n: int = 60):
    """Strategy for batches of L1 inner problems ``(p_hat, z, alpha, support)``.

    One to three rows of length n in 1..``max_n``.  ``p_hat`` (rows, n): rows of
    :func:`~rcmdp_exact.testing.random_row`, each on a support of every next state or of
    a random fraction (at least one state), with exact zeros inside the support, and in
    half of the examples mostly point masses.  ``z``: integers -2..2 (ties), N(0, 25) or
    constant (:func:`~rcmdp_exact.testing.random_values`), of shape (rows, n) or, in
    half of the examples, (n,), shared by every row.  ``alpha`` (rows,): floats in
    [0, 3], in half of the examples one of them exactly 0, 2 or 3 (2: the whole simplex
    on the support).  ``support`` (rows, n) bool, or None when it is every next state.
    The values come from a generator seeded by the example.
    """
    from .generators import random_row, random_values

    n = draw(st.integers(1, check_int(max_n, "max_n", 1)))
    rows = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    full = draw(st.booleans())
    degenerate = draw(st.booleans())
    ps, sups = [], []
    for _ in range(rows):
        p, sup = random_row(rng, n, 1.0 if full else rng.uniform(0.1, 1.0),
                            degenerate and rng.random() < 0.7)
        ps.append(p)
        sups.append(sup)
    p_hat, support = np.array(ps), np.array(sups)
    kind = draw(st.sampled_from(["ties", "normal", "constant"]))
    z = random_values(rng, (rows, n), kind, scale=5.0)
    if draw(st.booleans()):
        z = z[0]  # shared by all rows
    alpha = np.array([draw(st.floats(0.0, 3.0)) for _ in range(rows)])
    if draw(st.booleans()):
        alpha[rng.integers(rows)] = draw(st.sampled_from([0.0, 2.0, 3.0]))
    return p_hat, z, alpha, (None if full else support)


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


@_checked_composite(_check_binding_budgets)
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


@_checked_composite(_check_robust_cmdps)
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


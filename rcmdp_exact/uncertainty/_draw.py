r"""The kinds' strategy toolkit: the hypothesis building blocks of a set's ``strategy``.

A kind of set draws its sets for property tests with a class method ``strategy(model,
grid=...)`` (:mod:`.base`); the built-in kinds build theirs from the blocks of this module:
radii per pair (:func:`pair_radii`) or per state (:func:`state_budgets`), supports
(:func:`supports`), values on a grid (:func:`grid_values`), kernels (:func:`kernels`) and
sizes (:func:`sizes`); :func:`example` draws one example of a strategy from a seed (the
conformance check draws a set of the kind's strategy with it).  The helpers they share
(:func:`draw_values`, :func:`draw_composition`, :func:`draw_rows`, ...) are the ones the
model strategies of :mod:`rcmdp_exact.testing.strategies` use too.

This module imports hypothesis at its top, and only a kind's ``strategy`` (when it is
called) and :mod:`rcmdp_exact.testing` import it, so that the package runs without
hypothesis and ``uncertainty`` needs nothing from the room above it:
:mod:`rcmdp_exact.testing` re-exports every public name of this module that its
documentation lists (``rcmdp_exact.testing.pair_radii`` and so on), and builds its model
strategies and :func:`~rcmdp_exact.testing.balls` on them.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as _seed
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from .._checks import InputError, check_choice, check_int
from ..core.model import TabularCMDP
from .base import checked_grid

__all__ = [
    "checked_grid",
    "draw_composition",
    "draw_rows",
    "draw_values",
    "example",
    "example_generator",
    "grid_values",
    "ints_of",
    "kernels",
    "pair_radii",
    "sizes",
    "state_budgets",
    "strategy_of",
    "supports",
]


# =========================================================================== helpers
def strategy_of(value) -> SearchStrategy:
    """A strategy as is; a tuple or list of choices (``sampled_from``); a value (``just``)."""
    if isinstance(value, SearchStrategy):
        return value
    if isinstance(value, tuple | list):
        return st.sampled_from(tuple(value))
    return st.just(value)


def ints_of(value) -> SearchStrategy:
    """A size: an int, an inclusive range (low, high), or a strategy."""
    if isinstance(value, tuple) and len(value) == 2:
        return st.integers(int(value[0]), int(value[1]))
    return strategy_of(value)


#: Up to this many values are drawn one by one (each shrinks on its own); more are drawn
#: from a generator seeded by the example.
DRAW_LIMIT = 256


def draw_values(draw, n: int, low: float, high: float, grid: int | None, rng=None) -> np.ndarray:
    """n values in [low, high]: multiples of 1/grid (shrinking to the one nearest 0; above
    :data:`DRAW_LIMIT` values, from a generator seeded by the example), or continuous
    draws of the generator ``rng``."""
    if grid is None:
        return rng.uniform(low, high, size=n)
    lo, hi = math.ceil(low * grid), math.floor(high * grid)
    if lo > hi:
        return np.full(n, float(low))
    if n > DRAW_LIMIT:
        # more choices than hypothesis' buffer holds (an interval set of a 25-state model
        # draws 2 x 2,500 widths: "Unsatisfiable, too large"): the grid points from a
        # generator seeded by the example (shrinking to seed 0)
        seed = draw(st.integers(0, 2**32 - 1))
        return np.random.default_rng(seed).integers(lo, hi + 1, size=n) / grid
    ints = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    return np.array(ints, dtype=np.float64) / grid


def draw_composition(draw, n: int, grid: int) -> np.ndarray:
    """A distribution over n entries in multiples of 1/grid; shrinks to all mass on 0."""
    out = np.zeros(n)
    left = grid
    for j in range(n - 1, 0, -1):
        c = draw(st.integers(0, left))
        out[j] = c
        left -= c
    out[0] = left
    return out / grid


def draw_rows(draw, S: int, A: int, support: np.ndarray, grid: int | None, rng) -> np.ndarray:
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
                P[s, a, on] = draw_composition(draw, on.size, grid)
    return P


def example_generator(draw, grid):
    return None if grid is not None else np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


def _radii(draw, model, high, grid, per="pair"):
    S, A = model.n_states, model.n_actions
    n = S * A if per == "pair" else S
    rng = example_generator(draw, grid)
    r = draw_values(draw, n, 0.0, high, grid, rng)
    if grid is None:
        r = r * (rng.random(n) < 0.8)  # about a fifth of the rows certain
    r = r.reshape((S, A) if per == "pair" else (S,))
    term = np.asarray(model.terminal, dtype=bool)
    r[term] = 0.0
    return r


def _support(draw, model, support):
    kind = draw(strategy_of(support))
    check_choice(kind, "support", ("all", "nominal"))
    P = np.asarray(model.P)
    return np.ones(P.shape, dtype=bool) if kind == "all" else P > 0


# =========================================================================== blocks
@st.composite
def grid_values(draw, n: int, low: float, high: float, grid: int | None = 4):
    """Strategy for n values (n,) in [low, high]: multiples of ``1/grid`` (shrinking to
    the one nearest 0), or continuous draws from a generator seeded by the example
    (``grid=None``).  A building block of the sets' strategies."""
    grid = checked_grid(grid)
    return draw_values(draw, n, low, high, grid, example_generator(draw, grid))


@st.composite
def pair_radii(draw, model: TabularCMDP, max_radius: float, *, grid: int | None = 4):
    """Strategy for radii (S, A) in [0, max_radius], one per pair, 0 at terminal states
    (with ``grid=None``, about a fifth of the pairs certain, radius 0)."""
    return _radii(draw, model, max_radius, checked_grid(grid), "pair")


@st.composite
def state_budgets(draw, model: TabularCMDP, max_radius: float, *, grid: int | None = 4):
    """Strategy for budgets (S,) in [0, max_radius], one per state, 0 at terminal
    states (the radii of an s-rectangular set)."""
    return _radii(draw, model, max_radius, checked_grid(grid), "state")


@st.composite
def supports(draw, model: TabularCMDP, support=("all", "nominal")):
    """Strategy for supports (S, A, S) bool: every next state (``"all"``) or those of
    the model's kernel (``"nominal"``); a name, or a tuple of names to draw from."""
    return _support(draw, model, support)


@st.composite
def kernels(draw, model: TabularCMDP, grid: int | None = 4):
    """Strategy for transition kernels (S, A, S) with rows on every next state (those
    of terminal states left 0, for the caller to set)."""
    grid = checked_grid(grid)
    S, A = model.n_states, model.n_actions
    support = np.ones((S, A, S), dtype=bool)
    support[np.asarray(model.terminal, dtype=bool)] = False
    return draw_rows(draw, S, A, support, grid, example_generator(draw, grid))


def sizes(value) -> SearchStrategy:
    """Strategy for a size given as an int, an inclusive range (low, high) or a
    strategy."""
    return ints_of(value)


# =========================================================================== examples
#: Examples skipped by :func:`example` (the first is the simplest of the strategy).
_SKIP = 1


class _Captured(Exception):
    """Raised by :func:`example` to stop hypothesis once it has an example."""


def example(strategy: SearchStrategy, seed: int = 0):
    """One example of ``strategy``, the same for the same ``seed`` (unlike
    ``strategy.example()``, which is random and meant for the interpreter).

    It runs hypothesis, so it cannot be called inside a ``@given`` test: compose the
    strategies there instead (``cmdps().flatmap(lambda m: binding_budgets(m))``, with
    the strategies of :mod:`rcmdp_exact.testing`).

    Examples
    --------
    >>> from hypothesis import strategies as st
    >>> example(st.lists(st.integers(0, 9), min_size=3), seed=3) == example(
    ...     st.lists(st.integers(0, 9), min_size=3), seed=3)
    True
    """
    seed = check_int(seed, "seed", 0)  # a plain int: hypothesis refuses numpy integers
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

r"""Uncertainty sets estimated from data: the paper's phase 1 and confidence sets.

:func:`estimate` is the paper's phase 1: counts of the uniform random policy
(:func:`collect_counts`, from the one sampler), a pseudo-count of 1,
:math:`\hat P = n / n(s, a)` and the Hoeffding radius
:math:`\alpha = \sqrt{2 \ln(2^{S'} S A / \delta) / n(s, a)}` (:func:`hoeffding_radius`),
giving an :class:`~rcmdp_exact.uncertainty.L1Ball` (:func:`estimate_l1_ball`, which
also offers the radius of Weissman et al. 2003, :func:`weissman_radius`).
Terminal rows are the model's self-loop with radius 0.  The paper's alpha ranges are in
``docs/robust.md``.

The other sets come with a confidence statement of their own
(:func:`estimate_interval_set`, :func:`estimate_linf_ball`, :func:`estimate_kl_ball`):
with :math:`n(s, a)` independent samples of each pair (the counts of a generative
model, or the first n visits of each pair), the set contains the true kernel with
probability at least :math:`1 - \delta`.  They all start from the per-entry Hoeffding
bound with a union bound over the E estimated entries (E = S S A, or the number of
supported entries),

.. math::

    P\Bigl(\exists (s, a, s'): |\hat f(s'|s,a) - P(s'|s,a)| \ge \epsilon(s,a)\Bigr)
    \le \sum 2 e^{-2 n(s,a) \epsilon(s,a)^2} = \delta
    \quad\text{for}\quad \epsilon(s, a) = \sqrt{\frac{\ln(2E/\delta)}{2 n(s, a)}},

where :math:`\hat f = \text{counts} / n` are the empirical frequencies (no
pseudo-counts: they only move the nominal point, and the radius accounts for the
move).  A pair without samples gets the whole simplex.
"""

from __future__ import annotations

import numpy as np

from .._checks import (
    as_float_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_real,
    check_shape,
)
from .._result import Result
from ..core.model import TabularCMDP
from ..core.model_checks import ModelError, check_model
from ..core.sampling import rollout
from .base import support_mask
from .interval import IntervalSet, box_simplex_projection, worst_case_interval
from .kl import KLBall
from .l1 import L1Ball, first_outcomes, outcome_map
from .linf import LInfBall

__all__ = [
    "FORMS",
    "KL_BOUNDS",
    "L1_BOUNDS",
    "collect_counts",
    "entry_radius",
    "estimate",
    "estimate_interval_set",
    "estimate_kl_ball",
    "estimate_l1_ball",
    "estimate_linf_ball",
    "hoeffding_radius",
    "weissman_radius",
]

#: Radii of :func:`estimate_l1_ball`.
L1_BOUNDS = ("hoeffding", "weissman")
#: Radii of :func:`estimate_kl_ball`.
KL_BOUNDS = ("box", "types")


def _radius_inputs(n, delta) -> tuple[np.ndarray, float]:
    """The counts (all > 0) and the error probability in (0, 1) of a radius formula."""
    d = check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                   hint=" (the error probability)")
    n = as_float_array(n, "counts n(s, a)", "give positive counts")
    if (n <= 0).any():
        raise ModelError("every count n(s, a) must be > 0 to define a radius; use a "
                         "pseudo-count")
    return n, d


def _sizes(n_outcomes, n_states, n_actions) -> tuple[int, int, int]:
    """S', S and A of a radius, each an integer >= 1."""
    return (check_int(n_outcomes, "n_outcomes", 1), check_int(n_states, "n_states", 1),
            check_int(n_actions, "n_actions", 1))


def hoeffding_radius(n, n_outcomes: int, n_states: int, n_actions: int,
                     delta: float = 0.1) -> np.ndarray:
    r"""The paper's Hoeffding radius :math:`\sqrt{\frac{2}{n} \ln \frac{2^{S'} S A}{\delta}}`.

    Computed as :math:`\sqrt{2 (S' \ln 2 + \ln(S A / \delta)) / n}` (no overflow of
    :math:`2^{S'}`).

    >>> round(float(hoeffding_radius(100, 5, 25, 4, 0.1)), 6)  # a navigation pair
    0.455489
    """
    n, d = _radius_inputs(n, delta)
    Sp, S, A = _sizes(n_outcomes, n_states, n_actions)
    log_term = Sp * np.log(2.0) + np.log(S * A / d)
    return np.sqrt(2.0 * log_term / n)


def weissman_radius(n, n_outcomes: int, n_states: int, n_actions: int,
                    delta: float = 0.1) -> np.ndarray:
    r"""The L1 radius of Weissman et al. 2003 with a union bound over the S A pairs.

    Their inequality for the empirical distribution :math:`\hat f` of n samples on
    :math:`S'` outcomes, :math:`P(\|\hat f - p\|_1 \ge \epsilon) \le (2^{S'} - 2)
    e^{-n \epsilon^2 / 2}`, set to :math:`\delta / (S A)` per pair:

    .. math::

        \epsilon = \sqrt{\frac{2}{n} \Bigl(\ln(2^{S'} - 2) + \ln\frac{S A}{\delta}
        \Bigr)},

    computed with :math:`\ln(2^{S'} - 2) = S' \ln 2 + \ln(1 - 2^{1 - S'})` (no overflow);
    0 for a single outcome (nothing to estimate).  Slightly smaller than
    :func:`hoeffding_radius` (which has :math:`2^{S'}` in place of :math:`2^{S'} - 2`).

    >>> round(float(weissman_radius(100, 5, 25, 4, 0.1)), 6)
    0.454069
    """
    n, d = _radius_inputs(n, delta)
    Sp, S, A = _sizes(n_outcomes, n_states, n_actions)
    if Sp == 1:
        return np.zeros(n.shape)
    log_term = Sp * np.log(2.0) + np.log1p(-(2.0 ** (1 - Sp))) + np.log(S * A / d)
    return np.sqrt(2.0 * log_term / n)


def estimate_l1_ball(counts, delta: float = 0.1, n_outcomes: int | None = None, *,
                     outcomes=None, pseudo_count: float = 1.0, support=None,
                     bound: str = "hoeffding") -> L1Ball:
    r"""The Hoeffding L1 ball of observed counts (the paper's phase 1).

    Parameters
    ----------
    counts : array (S, A, O)
        Observed transitions, without pseudo-counts: over outcomes when ``outcomes``
        is given, else over next states (O = S).
    delta : float in (0, 1)
        Error probability (0.1: a 90% set).
    n_outcomes : int, optional
        :math:`S'` of the radius; default O (the number of outcomes, or S).
    outcomes : int array (S, A, O), optional
        Next state of each outcome; the ball is merged into the state form and keeps
        the outcome form.
    pseudo_count : float >= 0
        Added to every outcome (every supported next state in the state form) before
        normalising; 1 in the paper.
    support : bool array (S, A, S), optional
        State form only: the next states that get the pseudo-count and may receive
        mass (default: all); counts outside it are an error.
    bound : {"hoeffding", "weissman"}
        The radius: :func:`hoeffding_radius` (the paper's, default) or
        :func:`weissman_radius` (Weissman et al. 2003, slightly smaller).  Both hold
        with probability at least :math:`1 - \delta` for the empirical frequencies of
        :math:`n(s, a)` independent samples, i.e. with ``pseudo_count=0``; with
        pseudo-counts the centre moves and n includes them (the paper's convention).

    Returns
    -------
    L1Ball
        nominal :math:`\hat P = (n + \text{pseudo}) / n(s, a)`, alpha from the chosen
        bound with :math:`n(s, a)` including the pseudo-counts.
    """
    c = as_float_array(counts, "counts", "give an array (S, A, O) of counts")
    if c.ndim != 3 or 0 in c.shape:
        raise ModelError(f"counts must have shape (S, A, O) with S, A, O >= 1, got {c.shape}")
    S, A, O = c.shape
    check_nonnegative(c, "counts", "counts")
    pc = check_real(pseudo_count, "pseudo_count", 0.0)
    if outcomes is None:
        check_shape(c, (S, A, S), "counts over next states (pass outcomes=model.outcomes "
                                  "for counts over outcomes)", ("s", "a", "s'"))
        mask = (np.ones((S, A, S), dtype=bool) if support is None else
                support_mask(support, S, A, c, "counts", "enlarge the support"))
    elif support is not None:
        raise ModelError("give either outcomes or support, not both")
    else:
        mask = np.ones((S, A, O), dtype=bool)
    total, n = _smoothed(c, pc, mask, "L1 ball")
    q = total / n[:, :, None]
    Sp = O if n_outcomes is None else check_int(n_outcomes, "n_outcomes", 1)
    check_choice(bound, "bound", L1_BOUNDS)
    radius = hoeffding_radius if bound == "hoeffding" else weissman_radius
    alpha = radius(n, Sp, S, A, delta)
    if outcomes is None:
        return L1Ball(q, alpha, None if support is None else mask)
    return L1Ball.from_outcomes(q, alpha, outcome_map(outcomes, c.shape))


# --------------------------------------------------------------------------- other sets
def entry_radius(n, n_entries: int, delta: float = 0.1) -> np.ndarray:
    r"""The per-entry Hoeffding radius :math:`\sqrt{\ln(2E/\delta) / (2n)}` (inf where
    n = 0) of the module docstring, for E estimated entries.

    >>> round(float(entry_radius(100, 5 * 25 * 4, 0.1)), 6)
    0.214597
    """
    d = check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                   hint=" (the error probability)")
    E = check_int(n_entries, "n_entries", 1)
    n = as_float_array(n, "counts n(s, a)", "give counts >= 0")
    check_nonnegative(n, "counts n(s, a)", "counts")
    with np.errstate(divide="ignore"):
        return np.sqrt(np.log(2.0 * E / d) / (2.0 * n))


def _frequencies(counts, pseudo_count, support, what: str):
    """Checked state-form counts: (counts, support, n, frequencies, smoothed)."""
    c = as_float_array(counts, "counts", "give an array (S, A, S) of counts over next "
                                         "states")
    if c.ndim != 3 or c.shape[0] != c.shape[2] or 0 in c.shape:
        raise ModelError(f"counts must have shape (S, A, S) with S, A >= 1 (counts over "
                         f"next states), got {c.shape}")
    S, A, _ = c.shape
    check_nonnegative(c, "counts", "counts")
    pc = check_real(pseudo_count, "pseudo_count", 0.0)
    sup = (np.ones(c.shape, dtype=bool) if support is None else
           support_mask(support, S, A, c, "counts", "enlarge the support"))
    n = c.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(n[:, :, None] > 0, c / n[:, :, None], 0.0)
    total, m = _smoothed(c, pc, sup, what)
    return c, sup, n, f, total / m[:, :, None]


def _smoothed(c, pc, mask, what: str):
    """Counts plus the pseudo-count on the support, and their sums n(s, a) (all > 0)."""
    total = c + pc * mask
    m = total.sum(axis=2)
    if (m <= 0).any():
        s, a = (int(i) for i in np.argwhere(m <= 0)[0])
        raise ModelError(
            f"state-action pair ({s}, {a}) has no counts and pseudo_count=0, so the "
            f"nominal distribution of the {what} is undefined; use pseudo_count > 0 or "
            f"collect more data"
        )
    return total, m


def estimate_interval_set(counts, delta: float = 0.1, pseudo_count: float = 1.0, *,
                          support=None) -> IntervalSet:
    r"""The Hoeffding interval set of observed counts (a bounded-parameter MDP).

    Each entry lies within :math:`\epsilon(s, a)` of its empirical frequency
    (:func:`entry_radius`, union bound over the E supported entries):
    :math:`\ell = \max(0, \hat f - \epsilon)`, :math:`u = \min(1, \hat f + \epsilon)`
    (0 off the support; [0, 1] for a pair without samples).  With probability at least
    :math:`1 - \delta` every true transition probability lies in its interval.

    Parameters
    ----------
    counts : array (S, A, S)
        Observed transitions over next states (no pseudo-counts).
    delta : float in (0, 1)
        Error probability.
    pseudo_count : float >= 0
        Added to every supported next state for the nominal point only: the nominal
        is the projection of :math:`(\text{counts} + \text{pseudo}) / (n +
        \text{pseudo}\,|\Sigma|)` onto the box (:func:`box_simplex_projection`).
    support : bool array (S, A, S), optional
        Next states that may be reached (default: all); counts outside it are an error.

    Returns
    -------
    IntervalSet
    """
    _c, sup, n, f, smooth = _frequencies(counts, pseudo_count, support, "interval set")
    eps = entry_radius(n, int(sup.sum()), delta)[:, :, None]
    lo = np.where(sup, np.clip(f - eps, 0.0, 1.0), 0.0)
    up = np.where(sup, np.clip(f + eps, 0.0, 1.0), 0.0)
    return IntervalSet(lo, up, nominal=box_simplex_projection(smooth, lo, up))


def estimate_linf_ball(counts, delta: float = 0.1, pseudo_count: float = 1.0, *,
                       support=None) -> LInfBall:
    r"""The Hoeffding L-infinity ball of observed counts.

    Centre: the smoothed frequencies :math:`\hat p = (\text{counts} +
    \text{pseudo}) / (n + \text{pseudo}\,|\Sigma|)`; radius
    :math:`\epsilon(s, a) + \max_{s'} |\hat p - \hat f|` (:func:`entry_radius` plus
    the move of the centre away from the empirical frequencies :math:`\hat f`, by the
    triangle inequality; exactly :math:`\epsilon` with ``pseudo_count=0``), capped at 1
    (1 allows every distribution; a pair without samples gets it).  With probability at
    least :math:`1 - \delta` the true kernel lies in the ball.

    Parameters are those of :func:`estimate_interval_set`.

    Returns
    -------
    LInfBall
    """
    _c, sup, n, f, smooth = _frequencies(counts, pseudo_count, support, "L-infinity ball")
    eps = entry_radius(n, int(sup.sum()), delta)
    move = np.where(n > 0, np.abs(smooth - f).max(axis=2), 0.0)
    radius = np.minimum(eps + move, 1.0)
    return LInfBall(smooth, radius, None if support is None else sup)


def _chord_radius(q, lo, up):
    r"""An upper bound on :math:`\mathrm{KL}(p \| q)` over the box (lo, up) of the
    simplex (every row; see :func:`estimate_kl_ball`)."""
    def psi(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0) / q), 0.0) - x + q

    a, b = psi(lo), psi(up)
    width = up - lo
    slope = np.divide(b - a, width, out=np.zeros_like(width), where=width > 0)
    S, A, n = q.shape
    best = worst_case_interval(lo.reshape(-1, n), up.reshape(-1, n),
                               -slope.reshape(-1, n)).value.reshape(S, A)
    return (a - slope * lo).sum(axis=2) - best


def estimate_kl_ball(counts, delta: float = 0.1, pseudo_count: float = 1.0, *,
                     bound: str = "box", support=None) -> KLBall:
    r"""A KL ball :math:`\mathrm{KL}(p \| \hat p) \le r` of observed counts.

    Centre: the smoothed frequencies :math:`\hat p = (\text{counts} +
    \text{pseudo}) / (n + \text{pseudo}\,|\Sigma|)` (``pseudo_count`` > 0, so that
    :math:`\hat p > 0` on the support: a KL ball contains no distribution with mass
    where its centre has none).  Radius:

    * ``bound="box"`` (default, guaranteed): the largest KL from :math:`\hat p` over the
      Hoeffding box of :func:`estimate_interval_set`, bounded above by the chords of
      the convex terms :math:`\psi_i(x) = x \log(x / \hat p_i) - x + \hat p_i`
      (:math:`\mathrm{KL}(p \| \hat p) = \sum_i \psi_i(p_i)` on the simplex):
      :math:`r = \max_{p \in \text{box} \cap \Delta} \sum_i \chi_i(p_i)` with
      :math:`\chi_i` the chord of :math:`\psi_i` over :math:`[\ell_i, u_i]`, a linear
      program solved exactly by the interval greedy.  The ball contains the box, so it
      contains the true kernel with probability at least :math:`1 - \delta`.
    * ``bound="types"``: the method-of-types radius
      :math:`r = ((|\Sigma| - 1) \ln(n + 1) + \ln(S A / \delta)) / n`.  It bounds
      the KL in the *other* direction: :math:`P(\mathrm{KL}(\hat f \| p) \ge r) \le
      (n + 1)^{|\Sigma| - 1} e^{-n r} = \delta / (S A)` (Cover and Thomas, Thm
      11.1.4, and the number of types), for the empirical frequencies
      :math:`\hat f`.  The ball uses :math:`\mathrm{KL}(p \| \hat p)` around the
      smoothed centre, for which this radius carries **no guarantee**; it is smaller
      than the box radius and a common heuristic.  A pair without samples gets the
      whole simplex, :math:`r = \max_i \ln(1/\hat p_i)`.

    Parameters
    ----------
    counts : array (S, A, S)
        Observed transitions over next states (no pseudo-counts).
    delta : float in (0, 1)
        Error probability.
    pseudo_count : float > 0
    bound : {"box", "types"}
    support : bool array (S, A, S), optional
        Next states that may be reached (default: all); counts outside it are an error.

    Returns
    -------
    KLBall
    """
    check_choice(bound, "bound", KL_BOUNDS)
    check_real(pseudo_count, "pseudo_count", 0.0, low_open=True,
               hint=" (a KL ball needs a centre > 0 on the support)")
    c, sup, n, f, smooth = _frequencies(counts, pseudo_count, support, "KL ball")
    whole = np.max(np.where(sup, -np.log(np.where(sup, smooth, 1.0)), 0.0), axis=2)
    if bound == "box":
        eps = entry_radius(n, int(sup.sum()), delta)[:, :, None]
        lo = np.where(sup, np.clip(f - eps, 0.0, 1.0), 0.0)
        up = np.where(sup, np.clip(f + eps, 0.0, 1.0), 0.0)
        radius = np.maximum(_chord_radius(smooth, lo, up), 0.0)
    else:
        S, A, _ = c.shape
        d = check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                       hint=" (the error probability)")
        k = sup.sum(axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            radius = ((k - 1) * np.log(n + 1.0) + np.log(S * A / d)) / n
    radius = np.where(n > 0, np.minimum(radius, whole), whole)
    return KLBall(smooth, radius)


FORMS = ("auto", "outcomes", "states")


def _resolve_form(model: TabularCMDP, form: str) -> bool:
    """True when counts are over outcomes."""
    check_choice(form, "form", FORMS)
    if form == "outcomes" and model.outcomes is None:
        raise ModelError("form='outcomes' needs a model with outcomes (built by "
                         "TabularCMDP.from_outcomes); use form='states'")
    return form == "outcomes" or (form == "auto" and model.outcomes is not None)


def collect_counts(model: TabularCMDP, n_episodes: int, seed=None, *,
                   horizon: int | None = None, form: str = "auto",
                   progress: bool | None = None) -> np.ndarray:
    r"""Roll out the uniform random policy and count transitions.

    The episodes come from :func:`rcmdp_exact.core.sampling.rollout`: each starts in a
    state drawn from :math:`p_0`, picks actions uniformly at random, draws next states
    from ``model.P`` and stops after ``horizon`` steps or on entering a terminal state
    (the transition into it is counted).

    Parameters
    ----------
    model : TabularCMDP
    n_episodes : int >= 1
    seed : int >= 0, numpy.random.Generator or None
        Same seed, same counts.
    horizon : int, optional
        Episode length; default ``model.horizon``.
    form : {"auto", "outcomes", "states"}
        Count outcomes (``model.outcomes``; "auto" does when the model has them) or
        next states.  An observed next state goes to the first outcome reaching it.
    progress : bool or None
        Show a progress bar (default None: only when standard error is a terminal).

    Returns
    -------
    int array (S, A, O) or (S, A, S)
        The counts, without pseudo-counts.
    """
    check_model(model)
    use_out = _resolve_form(model, form)
    S, A = model.n_states, model.n_actions
    ep = rollout(model, np.full((S, A), 1.0 / A), n_episodes, seed, horizon=horizon,
                 progress=progress)
    s, a, nxt = ep.states[ep.alive], ep.actions[ep.alive], ep.next_states[ep.alive]
    if use_out:
        out = model.outcomes
        O = out.shape[2]
        # the first outcome of (s, a) that reaches the observed next state
        o = np.argmax((out[s, a] == nxt[:, None]) & first_outcomes(out)[s, a], axis=1)
    else:
        O, o = S, nxt
    counts = np.bincount((s * A + a) * O + o, minlength=S * A * O)
    return counts.reshape(S, A, O)


def estimate(model: TabularCMDP, n_episodes: int, seed=None, delta: float = 0.1, *,
             pseudo_count: float = 1.0, horizon: int | None = None, form: str = "auto",
             n_outcomes: int | None = None, progress: bool | None = None) -> Result:
    r"""Phase 1 of the paper: estimate a nominal model and its Hoeffding L1 ball.

    Runs :func:`collect_counts` and :func:`estimate_l1_ball` (with the model's
    outcomes when it has them: :math:`S'` = the number of outcomes, 5 for navigation).

    Returns
    -------
    Result
        ``ball`` (:class:`L1Ball`), ``nominal`` (the model with the estimated
        transitions, :meth:`TabularCMDP.with_transitions`), ``counts``, ``visits``
        (S, A) observed visits (no pseudo-counts), ``alpha_range`` (min, max) of the
        radius over the non-terminal pairs, ``n_episodes``, ``delta``, ``form``.
    """
    check_model(model)
    counts = collect_counts(model, n_episodes, seed, horizon=horizon, form=form,
                            progress=progress)
    use_out = _resolve_form(model, form)
    ball = estimate_l1_ball(
        counts, delta, n_outcomes,
        outcomes=model.outcomes if use_out else None, pseudo_count=pseudo_count,
    )
    ball = ball.absorb_terminal(model.terminal)
    live = ~model.terminal
    al = ball.alpha[live]
    return Result(
        ball=ball,
        nominal=model.with_transitions(ball.nominal, outcomes=ball.outcomes),
        counts=counts,
        visits=counts.sum(axis=2),
        alpha_range=(float(al.min()), float(al.max())) if al.size else (0.0, 0.0),
        n_episodes=int(n_episodes),
        delta=float(delta),
        form="outcomes" if use_out else "states",
    )



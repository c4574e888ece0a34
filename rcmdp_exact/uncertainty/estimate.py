r"""Uncertainty sets estimated from data: the paper's phase 1 and the Hoeffding L1 ball.

:func:`estimate` is the paper's phase 1: counts of the uniform random policy
(:func:`collect_counts`, from the one sampler), a pseudo-count of 1,
:math:`\hat P = n / n(s, a)` and the Hoeffding radius
:math:`\alpha = \sqrt{2 \ln(2^{S'} S A / \delta) / n(s, a)}` (:func:`hoeffding_radius`),
giving an :class:`~rcmdp_exact.uncertainty.L1Ball` (:func:`estimate_l1_ball`).
Terminal rows are the model's self-loop with radius 0.  The paper's alpha ranges are in
``docs/robust.md``.
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
from ..model import ModelError, TabularCMDP, check_model
from ..sampling import rollout
from .l1 import L1Ball, first_outcomes, outcome_map, support_mask

__all__ = ["FORMS", "collect_counts", "estimate", "estimate_l1_ball", "hoeffding_radius"]


def hoeffding_radius(n, n_outcomes: int, n_states: int, n_actions: int,
                     delta: float = 0.1) -> np.ndarray:
    r"""The paper's Hoeffding radius :math:`\sqrt{\frac{2}{n} \ln \frac{2^{S'} S A}{\delta}}`.

    Computed as :math:`\sqrt{2 (S' \ln 2 + \ln(S A / \delta)) / n}` (no overflow of
    :math:`2^{S'}`).

    >>> round(float(hoeffding_radius(100, 5, 25, 4, 0.1)), 6)  # a navigation pair
    0.455489
    """
    d = check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                   hint=" (the error probability)")
    n = as_float_array(n, "counts n(s, a)", "give positive counts")
    if (n <= 0).any():
        raise ModelError("every count n(s, a) must be > 0 to define a radius; use a "
                         "pseudo-count")
    log_term = n_outcomes * np.log(2.0) + np.log(n_states * n_actions / d)
    return np.sqrt(2.0 * log_term / n)


def estimate_l1_ball(counts, delta: float = 0.1, n_outcomes: int | None = None, *,
                     outcomes=None, pseudo_count: float = 1.0, support=None) -> L1Ball:
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

    Returns
    -------
    L1Ball
        nominal :math:`\hat P = (n + \text{pseudo}) / n(s, a)`, alpha from
        :func:`hoeffding_radius` with :math:`n(s, a)` including the pseudo-counts.
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
    total = c + pc * mask
    n = total.sum(axis=2)
    if (n <= 0).any():
        s, a = (int(i) for i in np.argwhere(n <= 0)[0])
        raise ModelError(
            f"state-action pair ({s}, {a}) has no counts and pseudo_count=0, so its "
            f"nominal distribution is undefined; use pseudo_count > 0 or collect more data"
        )
    q = total / n[:, :, None]
    Sp = O if n_outcomes is None else check_int(n_outcomes, "n_outcomes", 1)
    alpha = hoeffding_radius(n, Sp, S, A, delta)
    if outcomes is None:
        return L1Ball(q, alpha, None if support is None else mask)
    return L1Ball.from_outcomes(q, alpha, outcome_map(outcomes, c.shape))


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
                   progress: bool = False) -> np.ndarray:
    r"""Roll out the uniform random policy and count transitions.

    The episodes come from :func:`rcmdp_exact.sampling.rollout`: each starts in a
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
    progress : bool
        Show a progress bar.

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
             n_outcomes: int | None = None, progress: bool = False) -> Result:
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



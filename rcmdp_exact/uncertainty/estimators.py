r"""The paper's phase 1: counts of the uniform random policy and their Hoeffding L1 ball.

:func:`estimate` is the paper's phase 1: counts of the uniform random policy
(:func:`collect_counts`, from the one sampler), a pseudo-count of 1,
:math:`\hat P = n / n(s, a)` and the Hoeffding radius
:math:`\alpha = \sqrt{2 \ln(2^{S'} S A / \delta) / n(s, a)}`
(:func:`~rcmdp_exact.uncertainty.hoeffding_radius`), giving an
:class:`~rcmdp_exact.uncertainty.L1Ball`
(:func:`~rcmdp_exact.uncertainty.estimate_l1_ball`).  Terminal rows are the model's
self-loop with radius 0.  The paper's alpha ranges are in ``docs/robust.md``.

Every kind of set estimates itself from these counts in its own file (its
``from_counts`` and its ``estimate_*`` function: :mod:`.l1`, :mod:`.interval`,
:mod:`.linf`, :mod:`.kl`; what they share is :mod:`._counts`); any kind is estimated by
:func:`rcmdp_exact.protocol.estimation.estimate_set`.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_choice
from .._result import Result
from ..core.model import TabularCMDP, check_model
from ..core.model_checks import ModelError
from ..core.sampling import rollout
from .l1 import estimate_l1_ball, first_outcomes

__all__ = [ "collect_counts", "estimate"]

#: The forms of the counts: over outcomes, over next states, or "auto" (outcomes when
#: the model has them).
_FORMS = ("auto", "outcomes", "states")


def _resolve_form(model: TabularCMDP, form: str) -> bool:
    """True when counts are over outcomes."""
    check_choice(form, "form", _FORMS)
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
        ``uset`` (:class:`L1Ball`), ``nominal`` (the model with the estimated
        transitions, :meth:`TabularCMDP.with_transitions`), ``counts``, ``visits``
        (S, A) observed visits (no pseudo-counts), ``alpha_range`` (min, max) of the
        radius over the non-terminal pairs, ``n_episodes``, ``delta``, ``form``.
    """
    check_model(model)
    counts = collect_counts(model, n_episodes, seed, horizon=horizon, form=form,
                            progress=progress)
    use_out = _resolve_form(model, form)
    uset = estimate_l1_ball(
        counts, delta, n_outcomes,
        outcomes=model.outcomes if use_out else None, pseudo_count=pseudo_count,
    )
    uset = uset.absorb_terminal(model.terminal)
    live = ~model.terminal
    al = uset.alpha[live]
    return Result(
        uset=uset,
        nominal=model.with_transitions(uset.nominal, outcomes=uset.outcomes),
        counts=counts,
        visits=counts.sum(axis=2),
        alpha_range=(float(al.min()), float(al.max())) if al.size else (0.0, 0.0),
        n_episodes=int(n_episodes),
        delta=float(delta),
        form="outcomes" if use_out else "states",
    )



r"""The estimation phase with any kind of uncertainty set (``--set``).

:func:`estimate_set` runs the paper's phase 1 (:func:`rcmdp_exact.estimate`: counts of
the uniform random policy, the Hoeffding L1 ball) and builds the set of the chosen kind
from the same counts, so that every kind is estimated from the same data.  How a kind is
built is its own class's ``from_counts(counts, delta=, hoeffding_l1=)`` (the counts over next
states, :func:`state_counts`, and the paper's L1 ball of the same data), and the one
line that says so is the class's ``note``; the built-in kinds:

=============== ==========================================================================
kind            the set
=============== ==========================================================================
``l1``          the paper's Hoeffding L1 ball (:func:`~rcmdp_exact.estimate_l1_ball`)
``weighted-l1`` the same ball as a :class:`~rcmdp_exact.WeightedL1Ball` with unit weights
                (the same set; it checks the weighted solver on the paper's protocol)
``linf``        :func:`~rcmdp_exact.estimate_linf_ball` (per-entry Hoeffding radius)
``interval``    :func:`~rcmdp_exact.estimate_interval_set` (per-entry Hoeffding bounds)
``kl``          :func:`~rcmdp_exact.estimate_kl_ball` (the KL ball that contains the
                per-entry Hoeffding box)
``s-l1``        a :class:`~rcmdp_exact.SRectL1Ball` whose budget per state is the sum of
                the L1 ball's radii over its actions,
                :math:`\kappa(s) = \min(2A, \sum_a \alpha(s, a))`
=============== ==========================================================================

A kind of yours is ``MODULE:CLASS`` (``docs/your_set.md``).

The sets of other kinds are estimated over next states: counts over outcomes (the
navigation grids) are added up per next state, and the support of each row is the L1
ball's (the next states its outcomes reach; a terminal state's row is its self-loop).
Their nominal kernel is their own centre (the smoothed frequencies), so the nominal
model of a run with another kind is ``model.with_transitions(set.nominal)``.

**A set around the model itself** (:func:`set_around`: your own model, judged on itself,
the default of ``--model`` without ``--estimate``): no estimation; the set of the kind is
centred on the model's own kernel with one radius R (``--radius``, default
:data:`~rcmdp_exact.names.USER_RADIUS`) on a stated support (``--support``: the model's
own next states by default, :data:`~rcmdp_exact.names.AROUND_SUPPORTS`):

=============== ==========================================================================
kind            the set around the model's kernel P
=============== ==========================================================================
``l1``          :func:`~rcmdp_exact.l1_ball` of radius R with the support given
``weighted-l1`` the same ball as a :class:`~rcmdp_exact.WeightedL1Ball` with unit weights
``linf``        the L-infinity ball of radius R (every entry within R of P)
``interval``    the interval set :math:`[\max(0, P - R), \min(1, P + R)]` on the support
``kl``          the KL ball of radius R (a KL ball never leaves the support of P, so the
                support must be ``"nominal"``)
``s-l1``        the s-rectangular L1 set of budget :math:`\min(2A, A R)` per state (the
                smallest that contains the L1 ball)
=============== ==========================================================================

A terminal state's row is its self-loop in every kind (radius 0).
:func:`support_text` says in words which next states a set allows (the reports name it).
"""

from __future__ import annotations

import numpy as np

from .._result import Result
from ..names import DEFAULT_SET_KIND

__all__ = ["check_set_kind", "estimate_set", "set_around",
           "set_from_estimate", "set_note", "state_counts", "support_text"]


def state_counts(est, model) -> np.ndarray:
    """The counts of an estimation (:func:`rcmdp_exact.estimate`) over next states
    (S, A, S): counts over outcomes added up per next state."""
    counts = np.asarray(est.counts)
    if est.form == "states":
        return counts.astype(np.float64)
    S, A = model.n_states, model.n_actions
    out = np.zeros((S, A, S))
    s, a, o = np.indices(counts.shape)
    np.add.at(out, (s, a, np.asarray(model.outcomes)[s, a, o]), counts)
    return out


def set_from_estimate(kind: str, est, model, delta: float = 0.1):
    """The set of ``kind`` (a kind's name or ``MODULE:CLASS``) from an estimation
    ``est`` of ``model`` (module notes): the class's ``from_counts`` of the counts over
    next states and the estimation's L1 ball (``"l1"`` is ``est.uset`` itself)."""
    from ..uncertainty import set_class

    cls = set_class(kind, estimated=True)
    return cls.from_counts(state_counts(est, model), delta=delta, hoeffding_l1=est.uset)


def set_note(kind: str, default: str = "a saved set") -> str:
    """The note of a kind (its class's ``note``), or ``default`` for a name that is not a
    kind (``"file"``: a set of ``--set-file``)."""
    from .._checks import InputError
    from ..uncertainty import set_class

    try:
        return set_class(kind).note or default
    except InputError:
        return default


def estimate_set(model, n_episodes: int, seed, delta: float = 0.1,
                 kind: str = DEFAULT_SET_KIND, *, progress=None) -> Result:
    """Phase 1 with a set of ``kind``: the estimation of :func:`rcmdp_exact.estimate`
    and the set built from its counts (module notes).

    Returns
    -------
    Result
        ``uset`` (the uncertainty set), ``nominal`` (the model with the set's nominal
        kernel: :func:`~rcmdp_exact.estimate`'s own nominal model for ``"l1"``),
        ``kind``, ``estimate`` (the result of :func:`~rcmdp_exact.estimate`, with the L1
        ball and the counts), ``alpha_range`` (of the L1 ball), ``n_episodes``.
    """
    from .._progress import progress_default
    from ..uncertainty import estimate, set_class

    set_class(kind, estimated=True)
    est = estimate(model, n_episodes, seed=seed, delta=delta,
                   progress=progress_default(progress))
    uset = set_from_estimate(kind, est, model, delta)
    nominal = est.nominal if uset is est.uset else model.with_transitions(uset.nominal)
    return Result(uset=uset, nominal=nominal, kind=kind, estimate=est,
                  alpha_range=est.alpha_range, n_episodes=int(n_episodes))


def set_around(kind: str, model, radius: float, support: str = "nominal"):
    """The set of ``kind`` centred on ``model``'s own kernel with radius ``radius`` on
    the support ``support`` (module notes): the kind's own ``around(model, radius,
    support)``; validated here, the one entrance."""
    from .._checks import InputError, check_choice, check_real
    from ..names import AROUND_SUPPORTS
    from ..uncertainty import set_class

    cls = set_class(kind, what="set kind")
    check_choice(support, "support", AROUND_SUPPORTS)
    radius = check_real(radius, "radius", 0.0)
    if support == "outcomes" and model.outcomes is None:
        raise InputError("support 'outcomes' needs a model with outcomes (this one has "
                         "none); give --support nominal or --support all")
    if not cls.has_around_builder():
        raise InputError(f"the set kind {kind!r} ({cls.__name__}) has no set around a model "
                         f"(its class defines no classmethod around(model, radius, "
                         f"support)); give --estimate to estimate it, or --set-file")
    return cls.around(model, radius, support)


def support_text(uset, model) -> str:
    """Which next states ``uset`` allows, in words: every state, the model's own next
    states, the states its outcomes reach, or how many of the S x S entries of the
    non-terminal rows."""
    from ..names import SUPPORT_NOTES

    sup = np.asarray(uset.support, dtype=bool)
    live = ~np.asarray(model.terminal, dtype=bool)
    if sup[live].all():
        return f"all: {SUPPORT_NOTES['all']}"
    if np.array_equal(sup[live], np.asarray(model.P)[live] > 0):
        return f"nominal: {SUPPORT_NOTES['nominal']}"
    if model.outcomes is not None:
        from ..uncertainty import l1_ball

        if np.array_equal(sup[live], np.asarray(l1_ball(model, 0.0, "outcomes").support)[live]):
            return f"outcomes: {SUPPORT_NOTES['outcomes']}"
    n = int(sup[live].sum())
    return f"{n} of the {int(live.sum()) * model.n_actions * model.n_states} next-state entries " \
           f"of the non-terminal rows"


def _example_set(kind: str, model):
    """A set of ``kind`` of the model's shape, built by the kind's ``from_counts`` from
    counts equal to ``model.P`` and the L1 ball of radius 0 around it: a set for the
    checks made before any work (what the learners and the robust solvers accept
    depends on the kind of set only), which also runs the kind's builder once."""
    from .._checks import InputError
    from ..uncertainty import L1Ball, set_class

    cls = set_class(kind, estimated=True)
    P = np.asarray(model.P)
    try:
        return cls.from_counts(np.array(P), delta=0.1, hoeffding_l1=L1Ball(P, 0.0))
    except InputError:
        raise
    except Exception as exc:  # a builder of yours that fails: one line, before any work
        raise InputError(f"set kind {kind!r}: {cls.__name__}.from_counts(counts, delta=, "
                         f"uset=) raised {type(exc).__name__}: {exc}") from None


def check_set_kind(kind: str, model, algorithms, *, critic=None, inner=None,
                   robust_checks: bool = True, flag: str = "--set", uset=None) -> None:
    """Refuse, before any work, a set kind that a computation cannot use.

    Each robust learner of ``algorithms`` is checked with
    :func:`rcmdp_exact.learners.dynamics.check_learner_set` (with the inner method its
    training will use), and, with ``robust_checks``, the set with
    :func:`rcmdp_exact.robust.check_robust_inputs` (the exact worst case and the
    bracket).  ``uset`` checks a given set (``--set-file``) in place of one of ``kind``.
    The error names the flag, the set and the alternatives.
    """
    from .._checks import InputError
    from ..learners.base import ALGORITHMS
    from ..learners.dynamics import check_learner_set
    from ..robust import check_robust_inputs
    from ..uncertainty import set_class

    if uset is None:
        set_class(kind, estimated=True, what=flag)  # a kind, before its builder runs
        uset = _example_set(kind, model)
    name = f"{flag} {kind}" if flag == "--set" else flag
    try:
        if robust_checks:
            check_robust_inputs(model, uset, f"the exact worst case of {name}")
        for a in algorithms:
            algo = ALGORITHMS[a]
            if algo.robust:
                check_learner_set(uset, algo, "lp" if (critic == "exact") else (inner or "sort"))
    except InputError as exc:
        from ..uncertainty import builtin_kinds

        others = [k for k in builtin_kinds(estimated=True) if k != kind]
        alt = f"; the other kinds of --set are {', '.join(others)}" if flag == "--set" else ""
        raise InputError(f"{name}: {exc}{alt}") from None

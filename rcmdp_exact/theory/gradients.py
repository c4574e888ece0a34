r"""Exact Lagrangian policy gradients (Theorems 1 and 2) and the robust policy gradient.

The objective is the Lagrangian of the paper (Eq. "Lagrange") at the start distribution,

.. math::

    L(\theta, \theta_{adv}) = p_0^\top V - \lambda^\top (p_0^\top C - d)
                            = p_0^\top V_\lambda + \lambda^\top d,

where :math:`V_\lambda = V - C\lambda` is the value of the Lagrangian reward
:math:`R_\lambda(s, a, s') = R(s, a, s') - \lambda^\top C(s, a, s')` (rewards and costs
may depend on the next state).  Transitions come from the model's ``P``, or from an
adversary :math:`\pi_{adv}(o \mid s, a)` over the outcomes of each pair
(:mod:`rcmdp_exact.core.parametrisations`).  Terminal states are absorbing and earn nothing.

Theorem 1 (policy gradient), with the discounted occupancy
:math:`d_\gamma^\top = p_0^\top (I - \gamma P_\pi)^{-1}` of the linear solve:

.. math::

    \nabla_\theta L = \sum_s d_\gamma(s) \sum_a \nabla_\theta \pi(a \mid s)\,
                      Q_\lambda(s, a).

Theorem 2 (adversary gradient), correct form:

.. math::

    \nabla_{\theta_{adv}} L = \sum_s d_\gamma(s) \sum_a \pi(a \mid s) \sum_o
        \nabla \pi_{adv}(o \mid s, a)\,\bigl[R_\lambda(s, a, s'_o) + \gamma V_\lambda(s'_o)\bigr],
    \qquad s'_o = \mathrm{out}(s, a, o).

:func:`robust_policy_gradient` differentiates a robust objective (the worst case over an
uncertainty set) by Danskin's theorem: Theorem 1 under the worst-case kernel.

The same quantities by other routes: central finite differences of :func:`lagrangian`
(:mod:`rcmdp_exact.theory.differences`) and the paper's sampled estimators
(:mod:`rcmdp_exact.theory.estimators`).  ``docs/gradients.md`` derives every formula.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._checks import check_choice, check_real, rng_from
from .._result import Result
from ..core.evaluation import evaluate
from ..core.model import TabularCMDP
from ..core.model_checks import ModelError
from ._context import GradientContext, check_terminates, outcome_signal, solve_lagrangian

__all__ = [
    "adversary_gradient",
    "lagrangian",
    "policy_gradient",
    "robust_policy_gradient",
]


# =========================================================================== values
def lagrangian(model: TabularCMDP, params, lam=None, parametrisation="softmax",
               adversary_params=None, adversary_parametrisation="softmax") -> float:
    """The Lagrangian :math:`L = p_0^\\top V - \\lambda^\\top (p_0^\\top C - d)`.

    Computed by a dense linear solve on the non-terminal states (independent of the
    sparse LU of :func:`~rcmdp_exact.core.evaluation.evaluate`), with transitions from the
    model or, when ``adversary_params`` is given, from the adversary.

    Parameters
    ----------
    model : TabularCMDP
    params : array
        Policy parameters: logits (S, A) for ``parametrisation="softmax"``, a flat
        vector for an MLP.
    lam : array (K,) or float, optional
    parametrisation : "softmax", "mlp" or a policy parametrisation object
    adversary_params : array, optional
    adversary_parametrisation : "softmax", "mlp" or an adversary parametrisation object
    """
    ctx = GradientContext(model, params, lam, parametrisation, adversary_params,
                          adversary_parametrisation)
    pi = ctx.policy.probs(ctx.theta)
    P = ctx.kernel()
    if ctx.gamma == 1.0:
        check_terminates(model, np.einsum("sa,sat->st", pi, P), "the Lagrangian with gamma = 1")
    return solve_lagrangian(ctx, pi, P)[0]


# =========================================================================== exact gradients
def policy_gradient(model: TabularCMDP, params, lam=None, parametrisation="softmax",
                    adversary_params=None, adversary_parametrisation="softmax") -> np.ndarray:
    """Exact gradient of the Lagrangian with respect to the policy (Theorem 1).

    .. math::

        \\nabla_\\theta L = \\sum_s d_\\gamma(s) \\sum_a \\nabla_\\theta \\pi(a \\mid s)\\,
        Q_\\lambda(s, a),

    with :math:`d_\\gamma` and :math:`Q_\\lambda` from
    :func:`~rcmdp_exact.core.evaluation.evaluate` (one sparse LU factorisation).  For the
    tabular softmax this is :math:`d_\\gamma(s)\\,\\pi(b \\mid s)(Q_\\lambda(s, b) -
    V_\\lambda(s))`; for an MLP the cotangent :math:`d_\\gamma(s) Q_\\lambda(s, a)` is pulled
    back through the hand-written backward pass.

    Parameters
    ----------
    model, params, lam, parametrisation
        As in :func:`lagrangian`.
    adversary_params, adversary_parametrisation : optional
        Take transitions from an adversary instead of the model's ``P``.

    Returns
    -------
    numpy.ndarray
        The gradient, with the shape of ``params``.

    Examples
    --------
    A one-state bandit with rewards (0, 1), gamma = 1/2 and uniform softmax logits:
    L = pi(1) / (1 - gamma), so dL/dtheta_1 = pi(0) pi(1) / (1 - gamma) = 1/2, and the
    gradient of the two logits is (-1/2, 1/2):

    >>> import numpy as np
    >>> from rcmdp_exact import TabularCMDP
    >>> bandit = TabularCMDP(np.ones((1, 2, 1)), R=[[0.0, 1.0]], gamma=0.5)
    >>> np.round(policy_gradient(bandit, np.zeros((1, 2))), 12)
    array([[-0.5,  0.5]])
    """
    ctx = GradientContext(model, params, lam, parametrisation, adversary_params,
                          adversary_parametrisation)
    pi = ctx.policy.probs(ctx.theta)
    res = evaluate(ctx.dynamics_model(), pi, ctx.lam)
    G = res.occupancy[:, None] * res.q_lagrangian
    G[~ctx.nt] = 0.0
    return ctx.policy.vjp(ctx.theta, G).reshape(ctx.params_shape)


def adversary_gradient(model: TabularCMDP, params, adversary_params, lam=None,
                       parametrisation="softmax",
                       adversary_parametrisation="softmax") -> np.ndarray:
    """Exact gradient of the Lagrangian with respect to the adversary (Theorem 2, corrected).

    .. math::

        \\nabla_{\\theta_{adv}} L = \\sum_s d_\\gamma(s) \\sum_a \\pi(a \\mid s) \\sum_o
        \\nabla \\pi_{adv}(o \\mid s, a)\\,\\bigl[R_\\lambda(s, a, s'_o) + \\gamma
        V_\\lambda(s'_o)\\bigr],

    where :math:`d_\\gamma` and :math:`V_\\lambda` are those of the adversary's kernel.
    The immediate term :math:`R_\\lambda(s, a, s'_o)` matters when rewards or costs
    depend on the next state; terminal states contribute nothing.

    Returns
    -------
    numpy.ndarray
        The gradient, with the shape of ``adversary_params``.  The adversary
        *minimises* L, so its descent direction is the negative of this.
    """
    ctx = GradientContext(model, params, lam, parametrisation, adversary_params,
                          adversary_parametrisation, need_adversary=True)
    pi = ctx.policy.probs(ctx.theta)
    res = evaluate(ctx.dynamics_model(), pi, ctx.lam)
    U = outcome_signal(ctx, res.lagrangian, "R_lam + gamma V_lam(s')")
    G = res.occupancy[:, None, None] * pi[:, :, None] * U
    G[~ctx.nt] = 0.0
    adv = ctx.adversary
    return adv.vjp(ctx.phi, G.reshape(adv.n_rows, adv.n_categories)).reshape(ctx.adv_shape)


#: What :func:`robust_policy_gradient` differentiates.
ROBUST_OBJECTIVES = ("value", "constraint", "lagrangian")


def robust_policy_gradient(model: TabularCMDP, params, uset, objective: str = "value",
                           lam=None, parametrisation="softmax", *, tie_tol: float = 1e-9,
                           seed=0) -> Result:
    r"""The gradient of a robust objective with respect to the policy (Danskin).

    The robust objective is the worst case over the set :math:`\mathcal P` of the
    quantity ``objective`` names, at the start distribution:

    * ``"value"``: :math:`J(\theta) = \min_{P} p_0^\top V(\pi_\theta, P)`;
    * ``"constraint"``: the worst-case total cost :math:`J(\theta) = \max_{P}
      \sum_k p_0^\top C_k(\pi_\theta, P)` (with K = 1 the worst-case cost);
    * ``"lagrangian"``: :math:`J(\theta) = \min_{P} p_0^\top (V - C\lambda)(\pi_\theta,
      P) + \lambda^\top d`, the paper's robust Lagrangian.

    By Danskin's theorem, where the worst case :math:`P^+` is unique the gradient is
    the policy gradient under :math:`P^+` (Theorem 1 on
    ``model.with_transitions(P_worst)``):

    .. math::

        \nabla_\theta J = \sum_s d_\gamma^{\pi, P^+}(s) \sum_a \nabla_\theta
        \pi(a \mid s)\, Q^{\pi, P^+}(s, a),

    with the Q-function of the objective's reward (:math:`r`, :math:`\sum_k c_k` or
    :math:`r - \lambda^\top c`).  Where several kernels attain the worst case, J
    need not be differentiable; the result is then the gradient under one of them:
    one supergradient of the min (value, Lagrangian: :math:`J(\theta') \le J(\theta)
    + g^\top (\theta' - \theta) + o(\|\theta' - \theta\|)`), one subgradient of
    the max (constraint), and ``unique`` is False.

    Parameters
    ----------
    model : TabularCMDP
        Dense, discounted (gamma < 1) for an sa-rectangular set.
    params : array
        Softmax logits (S, A), direct probabilities (S, A) (``parametrisation=
        "direct"``) or an MLP's parameters.
    uset : UncertaintySet
        An sa-rectangular set (:class:`~rcmdp_exact.L1Ball`, ...: the worst case by
        :func:`~rcmdp_exact.robust_evaluate`) or a :class:`~rcmdp_exact.FiniteSet`
        (the worst member, each member evaluated exactly).
    objective : {"value", "constraint", "lagrangian"}
    lam : float or array (K,), optional
        Multipliers of the Lagrangian.
    parametrisation : "softmax", "direct", "mlp" or a policy parametrisation object
    tie_tol : float
        The uniqueness test (a heuristic, below).
    seed : int
        Seeds the random direction of the uniqueness test (the answer is
        reproducible).

    Returns
    -------
    Result
        ``gradient`` (shaped like ``params``), ``value`` J, ``P_worst`` (S, A, S) the
        kernel differentiated at, ``unique`` (bool), ``ties`` (for an sa-set the
        (s, a) pairs flagged, (n, 2); for a finite set the members within ``tie_tol``
        of the worst, including it), ``objective``, ``lam``, ``message``.

    Notes
    -----
    Uniqueness test.  Finite set: another member's objective lies within ``tie_tol``
    :math:`\cdot \max(1, |J|)` of the worst.  sa-rectangular set: the inner problems
    :math:`\min_p p^\top z(s, a, \cdot)`, :math:`z = g + \gamma W^+`, are solved
    again at :math:`z \pm \epsilon u` for a random direction u (seeded) and
    :math:`\epsilon` = ``tie_tol`` :math:`\cdot \max(1, \max|z|)`; a pair that the policy visits
    (positive occupancy and probability) whose minimising row moves by more than 1e-6
    is a tie (a face of minimisers, or a minimiser within :math:`\epsilon` of one).
    A unique, well-separated minimiser does not move; a tie almost surely does.  A
    heuristic: a row that moves by less than 1e-6 under a true tie (a set of diameter
    below 1e-6) is missed, which changes the gradient by about as little.
    """
    from ..robust import robust_evaluate, worst_case_objective
    from ..robust.engine import checked_worst_case
    from ..uncertainty import KernelSet, SRectangularSet, check_set

    check_choice(objective, "objective", ROBUST_OBJECTIVES,
                 hint=" (the worst-case value, total cost, or Lagrangian)")
    check_real(tie_tol, "tie_tol", 0.0, 1.0,
               hint=" (relative to max(1, |J|) and to max|z|: 1 already flags every pair)")
    ctx = GradientContext(model, params, lam, parametrisation, None, "softmax")
    check_set(uset, model)
    if isinstance(uset, SRectangularSet):
        raise ModelError(
            "robust_policy_gradient needs an sa-rectangular set or a set of whole kernels "
            "(FiniteSet); an "
            f"s-rectangular {type(uset).__name__} couples the actions of a state (its "
            "worst case depends on the policy): use an sa-rectangular set"
        )
    pi = ctx.policy.probs(ctx.theta)
    lam_arr = ctx.lam
    if isinstance(uset, KernelSet):
        evs = [evaluate(model.with_transitions(Pm), pi, lam_arr) for Pm in uset.members]
        if objective == "value":
            J_m = np.array([e.value for e in evs])
        elif objective == "constraint":
            J_m = -np.array([np.sum(e.costs) for e in evs])
        else:
            J_m = np.array([e.lagrangian_p0 for e in evs])
        worst = int(np.argmin(J_m))
        J = float(J_m[worst])
        ties = np.flatnonzero(J_m - J <= tie_tol * max(1.0, abs(J)))
        P = np.asarray(uset.members[worst])
        unique = ties.size == 1
        where = f"member {worst} of {uset.n_members}"
        tie_note = "" if unique else f"; members {ties.tolist()} tie for the worst case"
    else:
        rng = rng_from(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            try:
                res = robust_evaluate(model, pi, uset, objective, lam_arr,
                                      per_constraint=False)
            except RuntimeWarning as exc:
                raise ModelError(f"the robust evaluation did not converge ({exc}); the "
                                 f"gradient needs its fixed point") from None
        P = res.P_worst
        J = float(model.p0 @ res.w)
        g = worst_case_objective(objective, lam_arr, model).transition_reward(model)
        z = g + model.gamma * res.w[None, None, :]
        eps = tie_tol * max(1.0, float(np.abs(z).max()))
        u = rng.standard_normal(z.shape)
        ev0 = evaluate(model.with_transitions(P, check=False), pi, lam_arr, check=False)
        live = (~np.asarray(model.terminal))[:, None] & (ev0.occupancy > 0)[:, None] \
            & (pi > 0)
        moved = np.zeros(live.shape, dtype=bool)
        if eps > 0:
            for sign in (1.0, -1.0):
                Pp = np.asarray(checked_worst_case(uset, z + sign * eps * u).p)
                moved |= np.abs(Pp - P).max(axis=2) > 1e-6
        tied = moved & live
        ties = np.argwhere(tied)
        unique = not tied.any()
        where = "the worst-case kernel"
        tie_note = "" if unique else (f"; the worst case is not unique at {len(ties)} "
                                      f"pair(s), first (s, a) = {tuple(ties[0].tolist())}")
    if objective == "constraint":
        J = -J
    elif objective == "lagrangian" and not isinstance(uset, KernelSet):
        J += float(lam_arr @ model.d)
    ev = evaluate(model.with_transitions(P, check=False), pi, lam_arr, check=False)
    signal = {"value": ev.q, "constraint": ev.qc.sum(axis=2),
              "lagrangian": ev.q_lagrangian}[objective]
    G = ev.occupancy[:, None] * signal
    G[~ctx.nt] = 0.0
    grad = ctx.policy.vjp(ctx.theta, G).reshape(ctx.params_shape)
    kind = "supergradient" if objective != "constraint" else "subgradient"
    message = (f"the gradient of the robust {objective} under {where} (Danskin)" if unique
               else f"one {kind} of the robust {objective}, under {where}{tie_note}")
    return Result(gradient=grad, value=J, P_worst=P, unique=bool(unique), ties=ties,
                  objective=objective, lam=lam_arr, message=message)

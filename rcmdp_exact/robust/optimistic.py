r"""Optimistic nature: the best case of a fixed policy over an sa-rectangular set.

Where :func:`~rcmdp_exact.robust_evaluate` lets nature minimise the value and maximise
each cost (pessimistic nature), :func:`optimistic_evaluate` lets it maximise the value
and minimise each cost, each quantity with its own kernel:

.. math::

    \overline V(\pi) = \max_{P \in \mathcal P} p_0^\top V(\pi, P), \qquad
    \underline C_k(\pi) = \min_{P \in \mathcal P} p_0^\top C_k(\pi, P).

Both are robust evaluations of the negated model: :math:`\max_P V_r = -\min_P V_{-r}`
and :math:`\min_P C_k = -\max_P C_{-c_k}`, so they inherit the exact inner solvers and
the residual certificate of :func:`~rcmdp_exact.robust_evaluate`.  A mixed nature, per
objective and per constraint (pessimistic for some quantities, optimistic for others),
takes each quantity from the evaluation it needs.
"""

from __future__ import annotations

import numpy as np

from .._result import Result
from .solvers import check_robust_inputs, robust_evaluate

__all__ = ["optimistic_evaluate"]


def optimistic_evaluate(model, policy, uset, *, method: str = "policy_iteration",
                        tol: float = 1e-12, max_iter: int = 100_000,
                        inner: str = "sort") -> Result:
    r"""Best-case evaluation of a fixed policy: nature maximises the value and minimises
    each cost (per constraint, each with its own kernel).

    Parameters
    ----------
    model : TabularCMDP
        Discounted (gamma < 1); its own transitions are not used (the set's nominal is
        the centre).
    policy : array (S, A) or int array (S,)
    uset : UncertaintySet
        An sa-rectangular set (:class:`~rcmdp_exact.L1Ball`, ...).
    method, tol, max_iter, inner
        As in :func:`~rcmdp_exact.robust_evaluate`.

    Returns
    -------
    Result
        ``value_best`` = :math:`\max_P p_0^\top V`, ``v_best`` (S,) the value under
        ``P_best`` (S, A, S), the maximising kernel; ``costs_best`` (K,) =
        :math:`\min_P p_0^\top C_k`, ``c_best`` (S, K) each cost under its own
        minimising kernel ``P_best_cost`` (K, S, A, S); ``residual`` (the largest
        Bellman residual, bounding each error by residual / (1 - gamma)),
        ``converged``, ``success``, ``status``, ``message``.

    Examples
    --------
    One state that reaches the terminal goal with probability 1/2 per step and earns 1
    per step; an L1 radius of 0.2 lets nature move 0.1 of the goal's mass back onto the
    state, so the best case stays with probability 0.6 per step and earns
    :math:`1 / (1 - 0.9 \cdot 0.6)` (the worst case, 0.4: :math:`1 / (1 - 0.9 \cdot
    0.4)`):

    >>> import numpy as np
    >>> from rcmdp_exact import TabularCMDP, l1_ball
    >>> P = np.zeros((2, 1, 2))
    >>> P[0, 0] = [0.5, 0.5]
    >>> P[1, 0, 1] = 1.0
    >>> m = TabularCMDP(P, R=[[1.0], [0.0]], gamma=0.9, terminal=[1])
    >>> res = optimistic_evaluate(m, [[1.0], [1.0]], l1_ball(m, 0.2))
    >>> round(res.value_best, 12) == round(1 / (1 - 0.9 * 0.6), 12)
    True
    """
    check_robust_inputs(model, uset, "optimistic evaluation")
    flipped = model.replace(R=-np.asarray(model.R), C=-np.asarray(model.C),
                            d=-np.asarray(model.d, dtype=np.float64))
    res = robust_evaluate(flipped, policy, uset, "value", method=method, tol=tol,
                          max_iter=max_iter, per_constraint=True, inner=inner)
    K = model.n_constraints
    return Result(
        value_best=-float(res.value), v_best=-np.asarray(res.v), P_best=res.P_worst,
        costs_best=-np.asarray(res.costs_worst, dtype=np.float64).reshape(K),
        c_best=-np.asarray(res.c_worst), P_best_cost=res.P_worst_cost,
        residual=float(res.residual), converged=bool(res.converged),
        success=bool(res.success), status=res.status,
        message=f"optimistic nature: {res.message}",
    )

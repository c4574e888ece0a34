r"""Robust evaluation and robust value iteration under an sa-rectangular L1 set.

The adversary minimises the discounted sum :math:`W` of a per-transition reward
:math:`g(s, a, s')` named by a :class:`WorstCaseObjective`: ``value`` (:math:`R`),
``constraint`` (:math:`-\sum_k C_k`, the most cost) or ``lagrangian``
(:math:`R - \lambda^\top C`, the paper's Eq. "robustlagrangian").  For a fixed policy the
robust policy Bellman operator

.. math::

    (T_\pi W)(s) = \sum_a \pi(a|s) \min_{p \in \mathcal P_{s,a}} p^\top
    \bigl(g(s, a, \cdot) + \gamma W\bigr)

is a :math:`\gamma`-contraction; :func:`robust_evaluate` finds its fixed point by the
adversary's policy iteration (default) or value iteration, reports the worst-case kernel
:math:`P^+` and the exact evaluation under it, and each constraint's own worst case.
:func:`robust_value_iteration` optimises :math:`\max_a \min_p`.  An unconverged answer is
never silent (``converged=False``, a status, a message and a RuntimeWarning).  The
details are in ``docs/robust.md``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ._checks import (
    as_float_array,
    check_choice,
    check_int,
    check_nonnegative,
    check_real,
    check_shape,
    readonly,
)
from ._result import Result, Status
from .evaluation import check_value_scale, evaluate
from .inner import INNER_METHODS, worst_case_l1
from .model import ModelError, TabularCMDP, check_model, check_policy
from .uncertainty import L1Ball, check_ball

__all__ = [
    "OBJECTIVES",
    "WorstCaseObjective",
    "robust_bellman",
    "robust_evaluate",
    "robust_value_iteration",
    "worst_case_kernel",
    "worst_case_objective",
]

#: Names of the quantities an adversary can robustify.
OBJECTIVES = ("value", "constraint", "lagrangian")
#: Largest S for which the linear solves use a dense LU.
_DENSE_SOLVE_LIMIT = 2000


# --------------------------------------------------------------------------- objective
class WorstCaseObjective:
    r"""The quantity an adversary minimises: ``value``, ``constraint`` or ``lagrangian``.

    Built by :func:`worst_case_objective`.  ``name`` and ``lam`` (K,) are read-only.
    """

    __slots__ = ("_lam", "_name")

    def __init__(self, name: str, lam: np.ndarray):
        self._name = name
        self._lam = lam

    @property
    def name(self) -> str:
        return self._name

    @property
    def lam(self) -> np.ndarray:
        return self._lam

    def __repr__(self) -> str:
        lam = "" if self._name != "lagrangian" else f", lam={self._lam.tolist()}"
        return f"WorstCaseObjective({self._name!r}{lam})"

    def _lam_for(self, model: TabularCMDP) -> np.ndarray:
        check_shape(self._lam, (model.n_constraints,),
                    "the objective's multipliers (one per constraint of the model)", ("k",))
        return self._lam

    def transition_reward(self, model: TabularCMDP) -> np.ndarray:
        r"""The reward :math:`g(s, a, s')` (S, A, S) whose discounted sum is minimised."""
        if self._name == "value":
            return np.asarray(model.R)
        if self._name == "constraint":
            check_int(model.n_constraints, "the number of constraints K of a model whose "
                      "worst 'constraint' is asked for", 1)
            return -np.asarray(model.C).sum(axis=3)
        lam = self._lam_for(model)
        return np.asarray(model.R) - np.asarray(model.C) @ lam

    def scalarise(self, v, c) -> np.ndarray:
        r""":math:`W` from a value V (...,) and costs C (..., K)."""
        v = np.asarray(v, dtype=np.float64)
        if self._name == "value":
            return v
        c = np.asarray(c, dtype=np.float64)
        if self._name == "constraint":
            return -c.sum(axis=-1)
        return v - c @ self._lam


def worst_case_objective(objective="value", lam=None, model: TabularCMDP | None = None
                         ) -> WorstCaseObjective:
    r"""Validate an objective name (or pass a :class:`WorstCaseObjective` through).

    Parameters
    ----------
    objective : {"value", "constraint", "lagrangian"} or WorstCaseObjective
    lam : float or array (K,), optional
        Multipliers of the Lagrangian (default 0); ignored by the other objectives.
    model : TabularCMDP, optional
        Checks ``lam`` against the number of constraints.
    """
    if isinstance(objective, WorstCaseObjective):
        if model is not None:
            objective._lam_for(model)
        return objective
    check_choice(objective, "objective", OBJECTIVES,
                 hint=" (worst value, worst constraint cost, or worst Lagrangian r - lam.c)")
    if model is not None:
        lam_arr = model.check_multipliers(lam)
    else:
        lam_arr = np.atleast_1d(as_float_array(0.0 if lam is None else lam, "lam",
                                               "give one multiplier per constraint"))
        check_nonnegative(lam_arr, "lam", "Lagrange multipliers")
    return WorstCaseObjective(objective, readonly(lam_arr.copy()))


# --------------------------------------------------------------------------- adversary
def check_robust_inputs(model, ball) -> None:
    """Raise unless ``model`` is discounted, its sums stay finite, and ``ball`` is an
    L1Ball of its shape."""
    check_model(model)
    check_ball(ball, model)
    check_real(model.gamma, "the model's gamma", 0.0, 1.0, high_open=True,
               hint="; robust evaluation needs a discount < 1 (the robust Bellman operator "
                    "is then a contraction): use a discounted model")
    check_value_scale(model, model.R, "R")
    check_value_scale(model, model.C, "C")


class _Adversary:
    """Solves all inner problems of a ball for z = g + gamma W, W given per state."""

    def __init__(self, model: TabularCMDP, ball: L1Ball, g: np.ndarray, inner: str):
        check_choice(inner, "inner method", INNER_METHODS)
        self.model = model
        self.gamma = model.gamma
        self.inner = inner
        self.nominal = ball.nominal
        self.alpha = ball.alpha
        self.support = None if ball.full_support else ball.support
        self.term = np.flatnonzero(model.terminal)
        self.P_term = model.P[self.term] if self.term.size else None
        g = np.asarray(g, dtype=np.float64)
        # g(s, a, s') = f(s, a) + h(s') on the non-terminal rows: one shared sort order
        live = ~model.terminal
        D = g[live] - g[live][:, :, :1]
        h = D[0, 0] if D.size else np.zeros(model.n_states)
        self.shared = bool(D.size) and bool((D == h).all())
        if self.shared:
            self.f = g[:, :, 0]
            self.h = h
            self.g = None
        else:
            self.g = g

    def step(self, w: np.ndarray):
        """Worst-case Q (S, A) and kernel (S, A, S) at the state quantity ``w``."""
        gw = self.gamma * w
        if self.shared:
            res = worst_case_l1(self.nominal, self.h + gw, self.alpha, self.support,
                                method=self.inner, check=False)
            q = res.value + self.f
        else:
            res = worst_case_l1(self.nominal, self.g + gw, self.alpha, self.support,
                                method=self.inner, check=False)
            q = np.array(res.value)
        P = res.p
        if self.term.size:
            P[self.term] = self.P_term
            q[self.term] = 0.0
        return q, P


def _policy_eval(P: np.ndarray, g: np.ndarray, pi: np.ndarray, gamma: float,
                 term: np.ndarray) -> np.ndarray:
    r"""Solve :math:`(I - \gamma P_\pi) W = g_\pi` for a kernel P (S, A, S)."""
    S = P.shape[0]
    r_sa = np.einsum("sat,sat->sa", P, g)
    if term.size:
        r_sa[term] = 0.0
    r_pi = np.einsum("sa,sa->s", pi, r_sa)
    P_pi = np.einsum("sa,sat->st", pi, P)
    if S <= _DENSE_SOLVE_LIMIT:
        M = np.eye(S) - gamma * P_pi
        return sla.solve(M, r_pi, check_finite=False)
    M = sp.identity(S, format="csc") - gamma * sp.csc_array(P_pi)
    return spla.spsolve(sp.csc_matrix(M), r_pi)


def _scale(w: np.ndarray) -> float:
    return max(1.0, float(np.abs(w).max())) if w.size else 1.0


def _fixed_point(adv: _Adversary, pi: np.ndarray, g: np.ndarray, method: str, tol: float,
                 max_iter: int, progress: bool, desc: str):
    """The robust policy fixed point W+ of T_pi (minimising adversary).

    Returns ``(w, q, P, iterations, residual, converged, stalled)``; ``stalled``: policy
    iteration met the kernel it had just evaluated again while the residual was above
    the tolerance (the same W would follow forever: the tolerance is below the rounding
    error of the linear solve).
    """
    from ._progress import tqdm

    gamma = adv.gamma
    term = adv.term
    P0 = np.array(adv.nominal)
    if term.size:
        P0[term] = adv.P_term
    w = _policy_eval(P0, g, pi, gamma, term)
    P_eval = P0  # the kernel whose evaluation is w
    residual = np.inf
    converged = stalled = False
    it = 0
    P = P0
    bar = tqdm(total=max_iter, desc=desc, disable=not progress, leave=False)
    try:
        while it < max_iter:
            it += 1
            q, P = adv.step(w)
            tw = np.einsum("sa,sa->s", pi, q)
            residual = float(np.abs(tw - w).max())
            bar.update(1)
            if residual <= tol * _scale(w):
                converged = True
                break
            if method == "value_iteration":
                w = tw
            elif np.array_equal(P, P_eval):
                stalled = True
                break
            else:
                w = _policy_eval(P, g, pi, gamma, term)
                P_eval = P
    finally:
        bar.close()
    return w, q, P, it, residual, converged, stalled


def _not_converged(method: str, it: int, residual: float, tol: float, stalled: bool,
                   max_iter: int) -> str:
    """The message of an unconverged fixed point."""
    if stalled:
        return (
            f"{method} stalled after {it} iterations: the worst-case kernel no longer "
            f"changes but the residual {residual:.2e} is above tol * max(1, max|W|) "
            f"(tol={tol:.1e}), below the rounding error of the linear solve; raise tol"
        )
    return (
        f"iteration limit {max_iter} reached (residual {residual:.2e}); raise max_iter"
        + (" or use method='policy_iteration'" if method == "value_iteration" else "")
    )


METHODS = ("policy_iteration", "value_iteration")


def _check_iteration(method: str, tol, max_iter) -> None:
    check_choice(method, "method", METHODS,
                 hint=" ('policy_iteration': exact, a few linear solves)")
    check_real(tol, "tol", 0.0, low_open=True)
    check_int(max_iter, "max_iter", 1)


# --------------------------------------------------------------------------- public API
def worst_case_kernel(model: TabularCMDP, ball: L1Ball, w=None, *, v=None, c=None,
                      objective="value", lam=None, inner: str = "sort") -> Result:
    r"""The worst-case kernel of every (s, a) for given state values.

    Solves :math:`\min_{p \in \mathcal P_{s,a}} p^\top (g(s, a, \cdot) + \gamma W)` for
    all pairs at once, with :math:`W` given directly (``w``, shape (S,)) or built from
    a value ``v`` (S,) and costs ``c`` (S, K) (e.g. a critic's estimates) by the
    objective.  This is the worst-case step of RCPG.

    Returns
    -------
    Result
        ``P_worst`` (S, A, S), ``q`` (S, A) the worst-case Q of the objective,
        ``w`` (S,) the W used, ``objective``.
    """
    check_robust_inputs(model, ball)
    obj = worst_case_objective(objective, lam, model)
    S = model.n_states
    if w is None:
        if v is None and obj.name != "constraint":
            raise ModelError("give w, or v (and c for 'constraint' and 'lagrangian')")
        if c is None and obj.name != "value":
            raise ModelError(f"objective {obj.name!r} needs the costs c (S, K)")
        w = obj.scalarise(v if v is not None else np.zeros(S), c)
    w = as_float_array(w, "w", "give one number per state", shape=(S,), axes=("s",))
    adv = _Adversary(model, ball, obj.transition_reward(model), inner)
    q, P = adv.step(w)
    return Result(P_worst=P, q=q, w=w, objective=obj.name)


def robust_bellman(model: TabularCMDP, ball: L1Ball, w, policy=None, *,
                   objective="value", lam=None, inner: str = "sort") -> Result:
    r"""One application of the robust Bellman operator to ``w`` (S,).

    With a ``policy``: :math:`(T_\pi W)(s) = \sum_a \pi(a|s) Q^+(s, a)`; without:
    the optimality operator :math:`\max_a Q^+(s, a)`, with
    :math:`Q^+(s, a) = \min_{p \in \mathcal P_{s,a}} p^\top (g + \gamma W)`.

    Returns
    -------
    Result
        ``w`` (S,) the image, ``q`` (S, A), ``P_worst`` (S, A, S); ``actions`` (S,)
        the greedy actions when no policy is given.
    """
    res = worst_case_kernel(model, ball, w, objective=objective, lam=lam, inner=inner)
    if policy is None:
        return Result(w=res.q.max(axis=1), q=res.q, P_worst=res.P_worst,
                      actions=res.q.argmax(axis=1))
    pi = check_policy(policy, model.n_states, model.n_actions)
    return Result(w=np.einsum("sa,sa->s", pi, res.q), q=res.q, P_worst=res.P_worst)


def robust_evaluate(model: TabularCMDP, policy, ball: L1Ball, objective="value", lam=None,
                    *, method: str = "policy_iteration", tol: float = 1e-12,
                    max_iter: int = 100_000, per_constraint: bool = True,
                    inner: str = "sort", progress: bool = False) -> Result:
    r"""Worst-case evaluation of a fixed stochastic policy over an L1 set.

    Parameters
    ----------
    model : TabularCMDP
        Rewards, costs, budgets, discount (< 1), start and terminal states; its own
        transitions are not used (the ball's nominal is the centre).
    policy : array (S, A) or int array (S,)
    ball : L1Ball
        The sa-rectangular uncertainty set.
    objective : {"value", "constraint", "lagrangian"} or WorstCaseObjective
        What the adversary minimises (see the module docstring); a
        :class:`WorstCaseObjective` carries its own multipliers.
    lam : float or array (K,), optional
        Multipliers (Lagrangian objective and the reported ``lagrangian``).
    method : {"policy_iteration", "value_iteration"}
        How the fixed point is found.
    tol : float
        Stop when :math:`\|T_\pi W - W\|_\infty \le` tol * max(1, max|W|).
    max_iter : int
        Iteration limit (``converged`` is False if reached).
    per_constraint : bool
        Also compute each constraint's own worst case (K more fixed points).
    inner : {"sort", "lp"}
        Inner solver (:func:`~rcmdp_exact.inner.worst_case_l1`).
    progress : bool
        Progress bar over the iterations.

    Returns
    -------
    Result
        ``w`` (S,) the robust fixed point of the objective, ``q`` (S, A) its
        worst-case Q, ``P_worst`` (S, A, S) the worst-case kernel :math:`P^+`;
        the exact evaluation under :math:`P^+`: ``v`` (S,), ``c`` (S, K),
        ``lagrangian`` (S,) = v - c @ lam, ``value`` = p0.v, ``costs`` (K,) = p0.c,
        ``lagrangian_p0`` = value - lam.(cost - d), ``evaluation`` (the full
        :func:`~rcmdp_exact.evaluation.evaluate` result: Q, occupancy, ...);
        ``converged``, ``success``, ``status`` ("converged", or "not_converged": the
        iteration limit or a stalled policy iteration, with a :class:`RuntimeWarning`), ``message``,
        ``iterations``, ``residual``, ``method``, ``objective``, ``lam``;
        with ``per_constraint``: ``c_worst`` (S, K) each cost under its own
        maximising kernel, ``costs_worst`` (K,) = p0.c_worst and ``P_worst_cost``
        (K, S, A, S).

    Examples
    --------
    One state that reaches the terminal goal with probability 1/2 per step and pays 1
    per step.  An L1 radius of 0.2 lets the adversary move 0.1 of the goal's mass back
    onto the state, so the worst case stays with probability 0.6:

    >>> import numpy as np
    >>> from rcmdp_exact import TabularCMDP, l1_ball
    >>> P = np.zeros((2, 1, 2))
    >>> P[0, 0] = [0.5, 0.5]
    >>> P[1, 0, 1] = 1.0
    >>> m = TabularCMDP(P, R=[[-1.0], [0.0]], terminal=[1], gamma=0.9)
    >>> res = robust_evaluate(m, [[1.0], [1.0]], l1_ball(m, 0.2))
    >>> str(res.status), round(res.value, 9), round(-1 / (1 - 0.9 * 0.6), 9)
    ('converged', -2.173913043, -2.173913043)
    """
    check_robust_inputs(model, ball)
    _check_iteration(method, tol, max_iter)
    obj = worst_case_objective(objective, lam, model)
    lam_arr = model.check_multipliers(lam)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    pi = check_policy(policy, S, A)
    g = obj.transition_reward(model)
    adv = _Adversary(model, ball, g, inner)
    w, q, P, it, residual, conv, stalled = _fixed_point(
        adv, pi, g, method, tol, max_iter, progress, f"robust {obj.name}"
    )
    ev = evaluate(model.with_transitions(P, check=False), pi, lam_arr, check=False)
    out = Result(
        w=w,
        q=q,
        P_worst=P,
        v=ev.v,
        c=ev.c,
        lagrangian=ev.lagrangian,
        value=ev.value,
        costs=ev.costs,
        lagrangian_p0=ev.lagrangian_p0,
        evaluation=ev,
        converged=conv,
        success=conv,
        status=Status.CONVERGED if conv else Status.NOT_CONVERGED,
        message=(
            f"robust fixed point found by {method} in {it} iterations (residual "
            f"{residual:.2e})"
            if conv
            else _not_converged(method, it, residual, tol, stalled, max_iter)
        ),
        iterations=it,
        residual=residual,
        method=method,
        objective=obj.name,
        lam=lam_arr,
    )
    if per_constraint:
        c_worst = np.empty((S, K))
        P_k = np.empty((K, S, A, S))
        notes = []  # the per-constraint fixed points that did not converge
        for k in range(K):
            if obj.name == "constraint" and K == 1:
                Pk = P
            else:
                gk = -np.asarray(model.C[..., k])
                adv_k = _Adversary(model, ball, gk, inner)
                _, _, Pk, itk, rk, ck, sk = _fixed_point(
                    adv_k, pi, gk, method, tol, max_iter, progress, f"robust cost {k}"
                )
                if not ck:
                    notes.append(f"; the fixed point of cost {k}: "
                                 + _not_converged(method, itk, rk, tol, sk, max_iter))
            P_k[k] = Pk
            c_worst[:, k] = evaluate(model.with_transitions(Pk, check=False), pi,
                                     check=False).c[:, k]
        out.update(c_worst=c_worst, costs_worst=model.p0 @ c_worst, P_worst_cost=P_k)
        if notes:
            out.update(converged=False, success=False, status=Status.NOT_CONVERGED,
                       message=out.message + "".join(notes))
    if not out.converged:
        warnings.warn(f"robust_evaluate: {out.message}", RuntimeWarning, stacklevel=2)
    return out


def robust_value_iteration(model: TabularCMDP, ball: L1Ball, lam=None, *,
                           method: str = "value_iteration", tol: float = 1e-12,
                           max_iter: int = 100_000, v0=None, inner: str = "sort",
                           progress: bool = True) -> Result:
    r"""Optimal robust policy of the Lagrangian reward :math:`r - \lambda^\top c`.

    Parameters
    ----------
    model : TabularCMDP
        Discount < 1.
    ball : L1Ball
    lam : float or array (K,), optional
        Multipliers (default 0: the robust value).
    method : {"value_iteration", "policy_iteration"}
        Robust value iteration (default) or robust policy iteration.
    tol : float
        Stop when :math:`\|T V - V\|_\infty \le` tol * max(1, max|V|).
    max_iter : int
    v0 : array (S,), optional
        Start of value iteration (default 0).
    inner : {"sort", "lp"}
    progress : bool

    Returns
    -------
    Result
        ``policy`` (S, A) deterministic greedy policy, ``actions`` (S,), ``v`` (S,)
        robust values (:math:`\max_a Q^+` at the last iterate), ``q`` (S, A),
        ``P_worst`` (S, A, S) the adversary's kernel at ``v``, ``value`` = p0.v,
        ``converged``, ``success``, ``status`` (1 and a :class:`RuntimeWarning` when not
        converged), ``message``, ``iterations``, ``residual``, ``suboptimality_bound``
        (value iteration: :math:`2\gamma\,\mathrm{residual}/(1-\gamma)`), ``lam``,
        ``method``.
    """
    from ._progress import tqdm

    check_robust_inputs(model, ball)
    _check_iteration(method, tol, max_iter)
    obj = worst_case_objective("lagrangian", lam, model)
    lam_arr = obj.lam
    S, A = model.n_states, model.n_actions
    gamma = model.gamma
    g = obj.transition_reward(model)
    adv = _Adversary(model, ball, g, inner)
    residual = np.inf
    converged = False
    stable_note = None  # policy iteration: the stable policy's evaluation did not converge
    it = 0
    if method == "value_iteration":
        w = np.zeros(S) if v0 is None else np.array(as_float_array(
            v0, "v0", "give one value per state", shape=(S,), axes=("s",)))
        bar = tqdm(total=max_iter, desc="robust value iteration", disable=not progress,
                   leave=False)
        try:
            while it < max_iter:
                it += 1
                q, P = adv.step(w)
                tw = q.max(axis=1)
                residual = float(np.abs(tw - w).max())
                w = tw
                bar.update(1)
                if residual <= tol * _scale(w):
                    converged = True
                    break
        finally:
            bar.close()
        q, P = adv.step(w)
        actions = q.argmax(axis=1)
        v = q.max(axis=1)
    else:
        q, _ = adv.step(np.zeros(S))
        actions = q.argmax(axis=1)
        bar = tqdm(total=max_iter, desc="robust policy iteration", disable=not progress,
                   leave=False)
        try:
            while it < max_iter:
                it += 1
                pi = np.zeros((S, A))
                pi[np.arange(S), actions] = 1.0
                w, _, _, it_w, res_w, ok, stall_w = _fixed_point(
                    adv, pi, g, "policy_iteration", tol, max_iter, False, ""
                )
                q, P = adv.step(w)
                best = q.max(axis=1)
                residual = float(np.abs(best - w).max())
                bar.update(1)
                # keep the current action unless another is strictly better
                cur = q[np.arange(S), actions]
                improve = best > cur + tol * _scale(w)
                if not improve.any():
                    converged = bool(ok)
                    if not ok:
                        stable_note = _not_converged("policy_iteration", it_w, res_w, tol,
                                                     stall_w, max_iter)
                    break
                actions = np.where(improve, q.argmax(axis=1), actions)
        finally:
            bar.close()
        v = w
    policy = np.zeros((S, A))
    policy[np.arange(S), actions] = 1.0
    value = float(model.p0 @ v)
    bound = 2.0 * gamma * residual / (1.0 - gamma)
    if converged:
        message = f"{method} converged in {it} iterations (residual {residual:.2e})"
    elif stable_note is not None:
        message = (f"the policy is stable after {it} iterations but its robust evaluation "
                   f"did not converge: {stable_note}")
    else:
        message = (f"iteration limit {max_iter} reached (residual {residual:.2e}); raise "
                   f"max_iter")
    if not converged:
        warnings.warn(f"robust_value_iteration: {message}", RuntimeWarning, stacklevel=2)
    return Result(
        policy=policy,
        actions=actions,
        v=v,
        q=q,
        P_worst=P,
        value=value,
        converged=converged,
        success=converged,
        status=Status.CONVERGED if converged else Status.NOT_CONVERGED,
        message=message,
        iterations=it,
        residual=residual,
        suboptimality_bound=bound,
        lam=lam_arr,
        method=method,
    )

r"""Robust evaluation and robust value iteration under an sa-rectangular uncertainty set.

The adversary minimises the discounted sum :math:`W` of a per-transition reward
:math:`g(s, a, s')` named by a :class:`~rcmdp_exact.robust.WorstCaseObjective`:
``value`` (:math:`R`), ``constraint`` (:math:`-\sum_k C_k`, the most cost) or
``lagrangian`` (:math:`R - \lambda^\top C`, the paper's Eq. "robustlagrangian").  For a
fixed policy the robust policy Bellman operator

.. math::

    (T_\pi W)(s) = \sum_a \pi(a|s) \min_{p \in \mathcal P_{s,a}} p^\top
    \bigl(g(s, a, \cdot) + \gamma W\bigr)

is a :math:`\gamma`-contraction; :func:`robust_evaluate` finds its fixed point by the
adversary's policy iteration (default) or value iteration, reports the worst-case kernel
:math:`P^+` and the exact evaluation under it, and each constraint's own worst case.
:func:`robust_value_iteration` optimises :math:`\max_a \min_p`.  Every fixed point is
found by the one engine, :class:`~rcmdp_exact.robust.engine.RobustGame`.  An
unconverged answer is never silent (``converged=False``, a status, a message and a
RuntimeWarning).  The details are in ``docs/robust.md``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._checks import InputError, as_float_array, check_choice, check_int, check_real
from .._progress import progress_default, tqdm
from .._result import Result, Status
from ..core.evaluation import check_value_scale, evaluate
from ..core.model import TabularCMDP, check_model
from ..core.model_checks import ModelError, check_policy
from ..uncertainty import (
    PROTOCOLS,
    KernelSet,
    SARectangularSet,
    SRectangularSet,
    check_set,
    registered_kinds,
)
from .engine import RobustGame
from .objectives import resolve_objective

__all__ = [
    "METHODS",
    "NATURES",
    "check_robust_inputs",
    "robust_bellman",
    "robust_evaluate",
    "robust_value_iteration",
    "worst_case_kernel",
]

#: How a robust fixed point is found.
METHODS = ("policy_iteration", "value_iteration")
#: Who chooses the kernel: an adversary ("pessimistic", the robust case) or a friendly
#: nature that maximises the objective ("optimistic", the best case over the set).
NATURES = ("pessimistic", "optimistic")


def check_robust_inputs(model, uset, what: str = "robust evaluation",
                        kinds: tuple = ("sa", "s")) -> None:
    """Raise unless ``model`` is discounted, its sums stay finite, and ``uset`` is an
    uncertainty set of its shape whose rectangularity is one of ``kinds`` (by default the
    rectangular ones, "sa" and "s", which have a robust Bellman operator)."""
    check_model(model)
    check_set(uset, model)
    if not isinstance(uset, tuple(PROTOCOLS[k] for k in kinds)):
        raise InputError(
            f"{what} needs a rectangular set ({' or '.join(repr(k) for k in kinds)}), but "
            f"{type(uset).__name__} is not rectangular (its adversary picks whole kernels, "
            f"so there is no robust Bellman operator and the robust optimum is NP-hard in "
            f"general); use robust_evaluate on a policy, or a rectangular set "
            f"({', '.join(_rectangular_sets())})")
    check_real(model.gamma, "the model's gamma", 0.0, 1.0, high_open=True,
               hint="; robust evaluation needs a discount < 1 (the robust Bellman operator "
                    "is then a contraction): use a discounted model")
    check_value_scale(model, model.R, "R")
    check_value_scale(model, model.C, "C")


def _rectangular_sets() -> list[str]:
    """The set classes of the rectangular kinds (for messages)."""
    return [c.__name__ for c in registered_kinds().values() if not issubclass(c, KernelSet)]


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


def _check_iteration(method: str, tol, max_iter) -> None:
    check_choice(method, "method", METHODS,
                 hint=" ('policy_iteration': exact, a few linear solves)")
    check_real(tol, "tol", 0.0, low_open=True)
    check_int(max_iter, "max_iter", 1)


def _state_values(obj, model, w, v, c) -> np.ndarray:
    """W (S,) given directly, or from a value v (S,) and costs c (S, K) by the objective."""
    S = model.n_states
    if w is None:
        if v is None and obj.name != "constraint":
            raise ModelError("give w, or v (and c for 'constraint' and 'lagrangian')")
        if c is None and obj.name != "value":
            raise ModelError(f"objective {obj.name!r} needs the costs c (S, K)")
        w = obj.scalarise(v if v is not None else np.zeros(S), c)
    return as_float_array(w, "w", "give one number per state", shape=(S,), axes=("s",))


# --------------------------------------------------------------------------- public API
def worst_case_kernel(model: TabularCMDP, uset, w=None, *, v=None, c=None,
                      objective="value", lam=None, inner: str = "sort",
                      policy=None, nature: str = "pessimistic") -> Result:
    r"""The worst-case kernel of every (s, a) for given state values.

    Solves :math:`\min_{p \in \mathcal P_{s,a}} p^\top (g(s, a, \cdot) + \gamma W)` for
    all pairs at once, with :math:`W` given directly (``w``, shape (S,)) or built from
    a value ``v`` (S,) and costs ``c`` (S, K) (e.g. a critic's estimates) by the
    objective.  This is the worst-case step of RCPG.  With ``nature="optimistic"`` the
    kernel maximises instead (the best case over the set); an s-rectangular set needs
    the ``policy`` its adversary answers.

    Returns
    -------
    Result
        ``P_worst`` (S, A, S), ``q`` (S, A) the worst-case Q of the objective,
        ``w`` (S,) the W used, ``objective``.
    """
    check_robust_inputs(model, uset, "worst_case_kernel")
    obj, _ = resolve_objective(objective, lam, model)
    w = _state_values(obj, model, w, v, c)
    pi = None
    if isinstance(uset, SRectangularSet):
        if policy is None:
            raise InputError(f"the adversary of the s-rectangular {type(uset).__name__} "
                             f"depends on the policy: pass policy=")
        pi = check_policy(policy, model.n_states, model.n_actions)[None]
    check_choice(nature, "nature", NATURES)
    game = RobustGame(model, uset, inner=inner)
    q, P = game.inner(obj.transition_reward(model)[None], w[None], pi,
                      optimistic=nature == "optimistic")
    return Result(P_worst=P[0], q=q[0], w=w, objective=obj.name, nature=nature)


def robust_bellman(model: TabularCMDP, uset, w, policy=None, *,
                   objective="value", lam=None, inner: str = "sort",
                   nature: str = "pessimistic") -> Result:
    r"""One application of the robust Bellman operator to ``w`` (S,).

    With a ``policy``: :math:`(T_\pi W)(s) = \sum_a \pi(a|s) Q^+(s, a)`; without:
    the optimality operator :math:`\max_a Q^+(s, a)`, with
    :math:`Q^+(s, a) = \min_{p \in \mathcal P_{s,a}} p^\top (g + \gamma W)`.  For an
    s-rectangular set the optimality operator is the set's robust max-min over the
    state's policies (``bellman_max_min``), whose maximiser may be randomised.

    Returns
    -------
    Result
        ``w`` (S,) the image, ``q`` (S, A), ``P_worst`` (S, A, S); ``actions`` (S,)
        the greedy actions when no policy is given (and, for an s-rectangular set, the
        maximising ``policy`` (S, A)).
    """
    if policy is None and isinstance(uset, SRectangularSet) and nature == "pessimistic":
        check_robust_inputs(model, uset, "robust_bellman")
        obj, _ = resolve_objective(objective, lam, model)
        w = _state_values(obj, model, w, None, None)
        game = RobustGame(model, uset, inner=inner)
        g = obj.transition_reward(model)[None]
        best, tw = game.max_min(g, w[None], np.zeros((1, *g.shape[1:3])),
                                np.ones((1, *g.shape[1:3])))
        q, P = game.inner(g, w[None], best)
        return Result(w=tw[0], q=q[0], P_worst=P[0], policy=best[0],
                      actions=best[0].argmax(axis=1))
    res = worst_case_kernel(model, uset, w, objective=objective, lam=lam, inner=inner,
                            policy=policy, nature=nature)
    if policy is None:
        return Result(w=res.q.max(axis=1), q=res.q, P_worst=res.P_worst,
                      actions=res.q.argmax(axis=1))
    pi = check_policy(policy, model.n_states, model.n_actions)
    return Result(w=np.einsum("sa,sa->s", pi, res.q), q=res.q, P_worst=res.P_worst)


def robust_evaluate(model: TabularCMDP, policy, uset, objective="value", lam=None,
                    *, method: str = "policy_iteration", tol: float = 1e-12,
                    max_iter: int = 100_000, per_constraint: bool = True,
                    inner: str = "sort", progress: bool | None = None,
                    nature: str = "pessimistic", cost_nature: str = "pessimistic") -> Result:
    r"""Worst-case evaluation of a fixed stochastic policy over an L1 set.

    Parameters
    ----------
    model : TabularCMDP
        Rewards, costs, budgets, discount (< 1), start and terminal states; its own
        transitions are not used (the ball's nominal is the centre).
    policy : array (S, A) or int array (S,)
    uset : UncertaintySet
        The sa-rectangular uncertainty set (an :class:`~rcmdp_exact.L1Ball`, ...).
    objective : {"value", "constraint", "lagrangian"} or WorstCaseObjective
        What the adversary minimises (see the module docstring); a
        :class:`WorstCaseObjective` carries its own multipliers.
    lam : float or array (K,), optional
        Multipliers (Lagrangian objective and the reported ``lagrangian``); with a
        :class:`WorstCaseObjective` they default to its own, and must equal them if
        given.
    method : {"policy_iteration", "value_iteration"}
        How the fixed point is found.
    tol : float
        Stop when :math:`\|T_\pi W - W\|_\infty \le` tol * max(1, max|W|).
    max_iter : int
        Iteration limit (``converged`` is False if reached).
    per_constraint : bool
        Also compute each constraint's own worst case (K more fixed points).
    inner : {"sort", "lp"}
        The set's exact solver, or its convex program (a cross-check).
    progress : bool or None
        Progress bar over the iterations (default None: only when standard error is a
        terminal).
    nature, cost_nature : {"pessimistic", "optimistic"}
        Who picks the kernel of the objective, and of each constraint's own worst case:
        an adversary (default: the objective minimised, each cost maximised) or an
        optimistic nature (the objective maximised, each cost minimised: the best case
        over the set, as robust MDP libraries offer it).  The optimistic case of an
        objective g is the pessimistic case of -g, negated.

    Returns
    -------
    Result
        ``w`` (S,) the robust fixed point of the objective, ``q`` (S, A) its
        worst-case Q, ``P_worst`` (S, A, S) the worst-case kernel :math:`P^+`;
        the exact evaluation under :math:`P^+`: ``v`` (S,), ``c`` (S, K),
        ``lagrangian`` (S,) = v - c @ lam, ``value`` = p0.v, ``costs`` (K,) = p0.c,
        ``lagrangian_p0`` = value - lam.(cost - d), ``evaluation`` (the full
        :func:`~rcmdp_exact.core.evaluation.evaluate` result: Q, occupancy, ...);
        ``converged``, ``success``, ``status`` ("converged", or "not_converged": the
        iteration limit or a stalled policy iteration, with a :class:`RuntimeWarning`), ``message``,
        ``iterations``, ``residual``, ``method``, ``objective``, ``lam``;
        with ``per_constraint``: ``c_worst`` (S, K) each cost under its own
        maximising kernel (minimising, with ``cost_nature="optimistic"``),
        ``costs_worst`` (K,) = p0.c_worst and ``P_worst_cost`` (K, S, A, S);
        ``nature``, ``cost_nature``.

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
    check_robust_inputs(model, uset, "robust_evaluate", kinds=("sa", "s", "none"))
    _check_iteration(method, tol, max_iter)
    check_choice(nature, "nature", NATURES)
    check_choice(cost_nature, "cost_nature", NATURES)
    obj, lam_arr = resolve_objective(objective, lam, model)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    pi = check_policy(policy, S, A)
    sign = 1.0 if nature == "pessimistic" else -1.0
    if isinstance(uset, KernelSet):
        return _evaluate_members(model, pi, uset, obj, lam_arr, per_constraint, sign,
                                 cost_nature)
    # the objective, then each constraint under its own adversary: one batch (the engine
    # minimises; an optimistic nature minimises the negated reward)
    rewards = [sign * obj.transition_reward(model)]
    own = per_constraint and not (obj.name == "constraint" and K == 1
                                  and nature == cost_nature)
    cost_sign = -1.0 if cost_nature == "pessimistic" else 1.0
    if per_constraint and own:
        rewards += [cost_sign * np.asarray(model.C[..., k]) for k in range(K)]
    g = np.stack(rewards)
    J = g.shape[0]
    game = RobustGame(model, uset, tol=tol, max_iter=max_iter, inner=inner)
    with tqdm(total=max_iter, desc=f"robust {obj.name}",
              disable=not progress_default(progress), leave=False) as bar:
        fp = game.adversary(g, np.broadcast_to(pi, (J, S, A)), method=method, bar=bar)
    P = fp.P[0]
    notes = [] if fp.converged[0] else [_not_converged(
        method, int(fp.iterations[0]), float(fp.residual[0]), tol, bool(fp.stalled[0]),
        max_iter)]
    conv = bool(fp.converged[0])
    ev = evaluate(model.with_transitions(P, check=False), pi, lam_arr, check=False)
    out = Result(
        w=sign * fp.w[0],
        q=sign * fp.q[0],
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
            f"robust fixed point found by {method} in {int(fp.iterations[0])} iterations "
            f"(residual "
            f"{float(fp.residual[0]):.2e})" if conv else notes[0]
        ),
        iterations=int(fp.iterations[0]),
        residual=float(fp.residual[0]),
        method=method,
        objective=obj.name,
        lam=lam_arr,
        nature=nature,
        cost_nature=cost_nature,
    )
    if per_constraint:
        c_worst = np.empty((S, K))
        P_k = np.empty((K, S, A, S))
        extra = []  # the per-constraint fixed points that did not converge
        for k in range(K):
            j = 1 + k if own else 0
            P_k[k] = fp.P[j]
            if own and not fp.converged[j]:
                extra.append(f"; the fixed point of cost {k}: " + _not_converged(
                    method, int(fp.iterations[j]), float(fp.residual[j]), tol,
                    bool(fp.stalled[j]), max_iter))
            c_worst[:, k] = evaluate(model.with_transitions(P_k[k], check=False), pi,
                                     check=False).c[:, k]
        out.update(c_worst=c_worst, costs_worst=model.p0 @ c_worst, P_worst_cost=P_k)
        if extra:
            out.update(converged=False, success=False, status=Status.NOT_CONVERGED,
                       message=out.message + "".join(extra))
    if not out.converged:
        warnings.warn(f"robust_evaluate: {out.message}", RuntimeWarning, stacklevel=2)
    return out


def _evaluate_members(model, pi, uset, obj, lam_arr, per_constraint: bool, sign: float,
                      cost_nature: str) -> Result:
    """robust_evaluate on a finite (not rectangular) set: the worst member of each
    objective (the best, for an optimistic nature), by the exact evaluation of the policy
    under every member."""
    evs = [evaluate(model.with_transitions(P, check=False), pi, lam_arr, check=False)
           for P in uset.members]
    p0 = model.p0
    scores = [sign * float(p0 @ obj.scalarise(ev.v, ev.c)) for ev in evs]
    m = int(np.argmin(scores))
    ev = evs[m]
    out = Result(
        w=obj.scalarise(ev.v, ev.c), q=obj.scalarise(ev.q, ev.qc),
        P_worst=np.array(uset.members[m]), v=ev.v, c=ev.c, lagrangian=ev.lagrangian,
        value=ev.value, costs=ev.costs, lagrangian_p0=ev.lagrangian_p0, evaluation=ev,
        converged=True, success=True, status=Status.CONVERGED,
        message=f"the worst of {len(evs)} members (member {m}), each evaluated exactly",
        iterations=len(evs), residual=0.0, method="enumeration", objective=obj.name,
        lam=lam_arr, member=m, nature="pessimistic" if sign > 0 else "optimistic",
        cost_nature=cost_nature)
    if per_constraint:
        K = model.n_constraints
        pick = np.argmax if cost_nature == "pessimistic" else np.argmin
        worst = [int(pick([e.costs[k] for e in evs])) for k in range(K)]
        out.update(c_worst=np.stack([evs[worst[k]].c[:, k] for k in range(K)], axis=1)
                   if K else np.zeros((model.n_states, 0)),
                   costs_worst=np.array([evs[worst[k]].costs[k] for k in range(K)]),
                   P_worst_cost=np.array([uset.members[worst[k]] for k in range(K)]).reshape(
                       K, *model.P.shape),
                   cost_members=np.array(worst, dtype=np.int64))
    return out


def robust_value_iteration(model: TabularCMDP, uset, lam=None, *,
                           method: str = "value_iteration", tol: float = 1e-12,
                           max_iter: int = 100_000, v0=None, inner: str = "sort",
                           progress: bool | None = None,
                           nature: str = "pessimistic") -> Result:
    r"""Optimal robust policy of the Lagrangian reward :math:`r - \lambda^\top c`.

    Parameters
    ----------
    model : TabularCMDP
        Discount < 1.
    uset : UncertaintySet
        An sa-rectangular uncertainty set.
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
    progress : bool or None
        Progress bar over the iterations (default None: only when standard error is a
        terminal).
    nature : {"pessimistic", "optimistic"}
        The adversary minimises (default, the robust optimum) or an optimistic nature
        maximises: :math:`\max_\pi \max_P`, the best case over the set (value iteration
        on an sa-rectangular set).

    Returns
    -------
    Result
        ``policy`` (S, A) the optimal policy (deterministic and greedy for an sa-rectangular
        set; possibly randomised for an s-rectangular one), ``actions`` (S,) its most likely
        actions, ``v`` (S,)
        robust values (:math:`\max_a Q^+` at the last iterate), ``q`` (S, A),
        ``P_worst`` (S, A, S) the adversary's kernel at ``v``, ``value`` = p0.v,
        ``converged``, ``success``, ``status`` (1 and a :class:`RuntimeWarning` when not
        converged), ``message``, ``iterations``, ``residual``, ``suboptimality_bound``
        (value iteration: :math:`2\gamma\,\mathrm{residual}/(1-\gamma)`), ``lam``,
        ``method``, ``nature``.
    """
    check_robust_inputs(model, uset, "robust_value_iteration")
    _check_iteration(method, tol, max_iter)
    check_choice(nature, "nature", NATURES)
    obj, lam_arr = resolve_objective("lagrangian", lam, model)
    S, A = model.n_states, model.n_actions
    gamma = model.gamma
    g = obj.transition_reward(model)[None]
    game = RobustGame(model, uset, tol=tol, max_iter=max_iter, inner=inner)
    optimistic = nature == "optimistic"
    if optimistic and (not isinstance(uset, SARectangularSet) or method != "value_iteration"):
        raise InputError(
            "nature='optimistic' (the best case over the set, max over policies and "
            "kernels) is solved by value iteration on an sa-rectangular set: use "
            f"method='value_iteration' and a set such as L1Ball (got {method!r} and a "
            f"{uset.rectangularity}-rectangular {type(uset).__name__})")
    stable_note = None  # policy iteration: the stable policy's evaluation did not converge
    desc = "robust value iteration" if method == "value_iteration" else \
        "robust policy iteration"
    with tqdm(total=max_iter, desc=desc, disable=not progress_default(progress),
              leave=False) as bar:
        if method == "value_iteration":
            w0 = np.zeros(S) if v0 is None else np.array(as_float_array(
                v0, "v0", "give one value per state", shape=(S,), axes=("s",)))
            vi = game.value_iteration(g, w0[None], max_iter, bar, optimistic=optimistic)
            q, P, policy, it, res, conv = (vi.q[0], vi.P[0], vi.policy[0], vi.iterations,
                                           vi.residual, vi.converged)
            v = np.einsum("sa,sa->s", policy, q) if game.s_rect else q.max(axis=1)
            actions = policy.argmax(axis=1)
            residual, converged = float(res[0]), bool(conv[0])
        else:
            sol = game.solve(g, np.zeros((1, S, A)), np.ones((1, S, A)))
            bar.update(sol.rounds)
            q, P, v, policy = sol.q[0], sol.P[0], sol.w[0], sol.pi[0]
            actions = policy.argmax(axis=1)
            it = sol.rounds
            residual = float(np.abs(q.max(axis=1) - v).max())
            adv = sol.adversary
            converged = bool(sol.stable and adv.converged[0])
            if sol.stable and not converged:
                stable_note = _not_converged("policy_iteration", int(adv.iterations[0]),
                                             float(adv.residual[0]), tol,
                                             bool(adv.stalled[0]), max_iter)
    value = float(model.p0 @ v)
    bound = 2.0 * gamma * residual / (1.0 - gamma)
    what = "optimistic value iteration" if optimistic else method
    if converged:
        message = f"{what} converged in {it} iterations (residual {residual:.2e})"
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
        nature=nature,
    )

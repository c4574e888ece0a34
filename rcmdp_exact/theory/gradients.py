r"""Exact Lagrangian policy gradients, adversary gradients, and the paper's estimators.

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

The sampled estimators of the paper and their corrections are listed in
:data:`ESTIMATORS`; :func:`estimator_expectation` gives the exact expected value of
each and :func:`monte_carlo_estimator` samples it.  ``docs/gradients.md`` derives every
formula and explains where the printed forms are biased.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._checks import (
    ImproperPolicyError,
    as_float_array,
    check_choice,
    check_int,
    check_real,
    check_shape,
    rng_from,
)
from .._progress import progress_default, tqdm
from .._result import Result
from ..core.evaluation import PolicySystem, check_proper, evaluate
from ..core.model import ModelError, TabularCMDP, check_model
from ..core.parametrisations import check_logits, make_adversary, make_policy
from ..core.sampling import kernel_outcomes, rollout_arrays

__all__ = [
    "ESTIMATORS",
    "FD_STEPS",
    "Estimator",
    "adversary_gradient",
    "central_difference",
    "cosine_similarity",
    "estimator_expectation",
    "fd_step",
    "finite_difference",
    "lagrangian",
    "monte_carlo_estimator",
    "policy_gradient",
    "relative_error",
    "resolve_horizon",
    "robust_policy_gradient",
]


# =========================================================================== estimators
@dataclass(frozen=True)
class Estimator:
    """A sampled gradient estimator of the paper, or its correction.

    ``side`` is "policy" or "adversary"; ``weight`` is the per-step weight ("one" or
    "gamma^t"); ``signal`` is what multiplies the score; ``exact`` marks the analytic
    gradients of the two theorems (no sampling).
    """

    name: str
    side: str
    weight: str
    signal: str
    exact: bool
    description: str


#: The estimators judged by :func:`estimator_expectation` and :func:`verify_theorems`.
ESTIMATORS: dict[str, Estimator] = {
    e.name: e
    for e in (
        Estimator("theorem1", "policy", "-", "Q_lam", True,
                  "Theorem 1: sum_s d_gamma(s) sum_a grad pi(a|s) Q_lam(s,a) (exact)"),
        Estimator("algorithm1", "policy", "one", "return-to-go", False,
                  "Algorithm 1 as printed: sum_{t<T} (V_t - lam.C_t) grad log pi(a_t|s_t), "
                  "no gamma^t"),
        Estimator("algorithm1_corrected", "policy", "gamma^t", "return-to-go", False,
                  "sum_{t<T} gamma^t (V_t - lam.C_t) grad log pi(a_t|s_t)"),
        Estimator("theorem2", "adversary", "-", "R_lam + gamma V_lam(s')", True,
                  "Theorem 2, correct: sum_s d_gamma(s) sum_a pi sum_o grad pi_adv "
                  "(R_lam(s,a,s') + gamma V_lam(s')) (exact)"),
        Estimator("theorem2_printed", "adversary", "one", "V_lam(s')", False,
                  "Theorem 2 as printed: sum_{k<T} V_lam(s_{k+1}) grad log pi_adv, no "
                  "discount, no immediate reward"),
        Estimator("theorem2_discounted", "adversary", "gamma^t", "gamma V_lam(s')", False,
                  "sum_{k<T} gamma^{k+1} V_lam(s_{k+1}) grad log pi_adv: discount restored, "
                  "immediate reward still missing"),
        Estimator("theorem2_corrected", "adversary", "gamma^t", "R_lam + gamma V_lam(s')", False,
                  "sum_{k<T} gamma^k (R_lam(s_k,a_k,s_{k+1}) + gamma V_lam(s_{k+1})) "
                  "grad log pi_adv"),
    )
}


def _estimator(name: str) -> Estimator:
    try:
        return ESTIMATORS[name]
    except KeyError:
        raise ModelError(
            f"unknown estimator {name!r}; choose one of {', '.join(ESTIMATORS)}"
        ) from None


# =========================================================================== context
class _Context:
    """Resolved inputs shared by the functions of this module."""

    def __init__(self, model, params, lam, parametrisation, adversary_params,
                 adversary_parametrisation, need_adversary=False):
        check_model(model)
        if model.is_sparse:
            raise ModelError(
                "the gradient tools work on dense models; this model is sparse "
                f"(S={model.n_states}); build it with a dense P"
            )
        self.model = model
        self.S, self.A, self.K = model.n_states, model.n_actions, model.n_constraints
        self.gamma = model.gamma
        self.lam = model.check_multipliers(lam)
        self.policy = make_policy(model, parametrisation, params)
        if isinstance(parametrisation, str) and self.policy.kind == "softmax":
            check_logits(params, "policy")
        if isinstance(adversary_parametrisation, str) and adversary_params is not None \
                and adversary_parametrisation.lower() in ("softmax", "tabular"):
            check_logits(adversary_params, "adversary")
        self.params_shape = np.shape(params)
        self.theta = self.policy.check_params(params)
        if adversary_params is None:
            if need_adversary:
                raise ModelError(
                    "this gradient is taken with respect to the adversary: pass "
                    "adversary_params (e.g. TabularAdversary(model).init(seed))"
                )
            self.adversary = None
            self.phi = None
            self.adv_shape = None
        else:
            self.adversary = make_adversary(model, adversary_parametrisation, adversary_params)
            self.adv_shape = np.shape(adversary_params)
            self.phi = self.adversary.check_params(adversary_params)
        self.nt = ~np.asarray(model.terminal, dtype=bool)
        self.R_lam = np.asarray(model.R) - np.asarray(model.C) @ self.lam  # (S, A, S)

    def kernel(self, phi=None) -> np.ndarray:
        if self.adversary is None:
            return np.asarray(self.model.P)
        return self.adversary.kernel(self.phi if phi is None else phi)

    def dynamics_model(self) -> TabularCMDP:
        if self.adversary is None:
            return self.model
        return self.model.with_transitions(self.kernel(), check=False)


def _solve_lagrangian(ctx: _Context, pi: np.ndarray, P: np.ndarray) -> tuple[float, np.ndarray]:
    """Dense solve of :math:`V_\\lambda` on the non-terminal states; returns (L, V_lam)."""
    r_lam = np.einsum("sat,sat->sa", P, ctx.R_lam)
    P_pi = np.einsum("sa,sat->st", pi, P)
    r_pi = np.einsum("sa,sa->s", pi, r_lam)
    try:
        V = PolicySystem(P_pi, ctx.gamma, ctx.nt).solve(r_pi)
    except np.linalg.LinAlgError:
        raise ImproperPolicyError(
            "I - gamma P_pi is singular: with gamma = 1 some state never reaches a "
            "terminal state under this policy; use gamma < 1 or a policy that terminates"
        ) from None
    return float(ctx.model.p0 @ V + ctx.lam @ ctx.model.d), V


def _check_terminates(model: TabularCMDP, P_pi: np.ndarray, what: str) -> None:
    """Raise unless every state reachable from p0 under ``P_pi`` reaches a terminal state."""
    check_proper(model, sp.csr_array(P_pi), what, message=(
        "{what} sums undiscounted visits over an unbounded episode, but state {name} is "
        "reachable from p0 and never reaches a terminal state ({n} such states), so the "
        "sum diverges; give a finite horizon T"
    ))


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
    ctx = _Context(model, params, lam, parametrisation, adversary_params,
                   adversary_parametrisation)
    pi = ctx.policy.probs(ctx.theta)
    P = ctx.kernel()
    if ctx.gamma == 1.0:
        _check_terminates(model, np.einsum("sa,sat->st", pi, P), "the Lagrangian with gamma = 1")
    return _solve_lagrangian(ctx, pi, P)[0]


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
    ctx = _Context(model, params, lam, parametrisation, adversary_params,
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
    ctx = _Context(model, params, lam, parametrisation, adversary_params,
                   adversary_parametrisation, need_adversary=True)
    pi = ctx.policy.probs(ctx.theta)
    res = evaluate(ctx.dynamics_model(), pi, ctx.lam)
    U = _outcome_signal(ctx, res.lagrangian, "R_lam + gamma V_lam(s')")
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
    check_real(tie_tol, "tie_tol", 0.0)
    ctx = _Context(model, params, lam, parametrisation, None, "softmax")
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


def _outcome_signal(ctx: _Context, V_lam: np.ndarray, signal: str) -> np.ndarray:
    """U(s, a, o) for the adversary estimators, shape (S, A, O)."""
    out = ctx.adversary.outcomes
    V_next = V_lam[out]
    if signal == "V_lam(s')":
        return V_next
    if signal == "gamma V_lam(s')":
        return ctx.gamma * V_next
    R_next = np.take_along_axis(ctx.R_lam, out, axis=2)
    return R_next + ctx.gamma * V_next


# =========================================================================== finite differences
#: Relative step of each stencil: eps**(1/3) ~ 6.1e-6 (order 2), eps**(1/5) ~ 7.4e-4 (order 4).
FD_STEPS = {2: float(np.finfo(np.float64).eps ** (1.0 / 3.0)),
            4: float(np.finfo(np.float64).eps ** (1.0 / 5.0))}

# central-difference stencils: offsets (in units of h) and weights (divided by h)
_STENCILS = {2: ((1.0, -1.0), (0.5, -0.5)),
             4: ((2.0, 1.0, -1.0, -2.0), (-1.0 / 12.0, 8.0 / 12.0, -8.0 / 12.0, 1.0 / 12.0))}


def _check_order(order) -> int:
    return check_choice(order, "finite-difference order", tuple(_STENCILS))


def fd_step(x, step: float | None = None, order: int = 4) -> np.ndarray:
    r"""The step rule :math:`h_i = \text{step} \cdot \max(1, |x_i|)`.

    The default relative step balances truncation against rounding.  A central
    difference of order p has truncation error :math:`O(h^p)` and rounding error
    :math:`\epsilon_f / h`, where :math:`\epsilon_f` is the noise of the computed f;
    their sum is smallest near :math:`h \approx \epsilon^{1/(p+1)}` times the scale of
    ``x``: eps**(1/3) ~ 6.1e-6 for order 2, eps**(1/5) ~ 7.4e-4 for order 4.  The
    Lagrangian comes out of a linear solve whose noise is about
    :math:`\kappa \epsilon |L|` with :math:`\kappa \approx 1/(1 - \gamma)`, a hundred
    times eps at gamma = 0.99, which is why order 4 with its larger step is the default.
    Each step is rounded so that ``x + h`` and ``x - h`` are exact in float64.
    """
    x = np.asarray(x, dtype=np.float64)
    s = (FD_STEPS[_check_order(order)] if step is None else
         check_real(step, "finite-difference step", 0.0, low_open=True))
    h = s * np.maximum(1.0, np.abs(x))
    return (x + h) - x


def central_difference(f, x, step: float | None = None, order: int = 4,
                       max_step=None, progress: bool | None = None) -> np.ndarray:
    """Central differences of a scalar function in float64.

    Order 2: :math:`(f(x + h e_i) - f(x - h e_i)) / 2h`; order 4 (default):
    :math:`(-f(x + 2h e_i) + 8 f(x + h e_i) - 8 f(x - h e_i) + f(x - 2h e_i)) / 12h`,
    with the step rule of :func:`fd_step`.

    Parameters
    ----------
    f : callable
        Scalar function of an array shaped like ``x``.
    x : array
    step : float, optional
        Relative step (see :func:`fd_step`).
    order : 2 or 4
    max_step : array (n,) or (n, 2), optional
        Per coordinate, how far x may move (up, down) before f stops being smooth,
        e.g. the distance to a ReLU kink (:meth:`~rcmdp_exact.core.nn.MLP.kink_free_step`).
        Where the stencil would reach past half of it, the coordinate uses the
        second-order one-sided stencil :math:`(-3 f(x) + 4 f(x + h) - f(x + 2h)) / 2h`
        towards the farther side when that side leaves room for the rule's step, and
        otherwise a central stencil shrunk to fit.
    progress : bool or None
        Show a progress bar over the coordinates (default None: only when standard
        error is a terminal).
    """
    order = _check_order(order)
    x = np.array(x, dtype=np.float64)
    flat = x.ravel()
    n = flat.size
    h = fd_step(x, step, order).ravel()
    kind = np.zeros(n, dtype=np.int8)  # 0 central, +1 forward, -1 backward
    if max_step is not None:
        bound = as_float_array(max_step, "max_step", f"give ({n},) or ({n}, 2) bounds",
                               finite=False)
        bound = np.repeat(bound[:, None], 2, axis=1) if bound.shape == (n,) else bound
        check_shape(bound, (n, 2), f"max_step (or shape ({n},))", ("i", "side"))
        reach = max(_STENCILS[order][0])
        tight = 2.0 * reach * h > bound.min(axis=1)
        h2 = fd_step(x, step, 2).ravel()
        room_up, room_down = bound[:, 0], bound[:, 1]
        side = np.where(room_up >= room_down, 1, -1).astype(np.int8)
        room = np.maximum(room_up, room_down)
        one_sided = tight & (room >= 4.0 * h2)
        kind[one_sided] = side[one_sided]
        h = np.where(one_sided, h2, h)
        shrink = tight & ~one_sided
        h = np.where(shrink, bound.min(axis=1) / (2.0 * reach), h)
        h = (flat + h) - flat
        if (h <= 0).any():
            i = int(np.flatnonzero(h <= 0)[0])
            raise ModelError(
                f"coordinate {i} sits exactly on a point where f is not differentiable "
                f"(max_step = {bound[i].tolist()}); move the parameters slightly"
            )
    grad = np.empty(n)
    for i in tqdm(range(n), disable=not progress_default(progress), desc="finite differences",
                  leave=False):
        if kind[i] == 0:
            offsets, weights = _STENCILS[order]
        else:
            offsets = (0.0, float(kind[i]), 2.0 * kind[i])
            weights = tuple(w * kind[i] for w in (-1.5, 2.0, -0.5))
        xi = flat[i]
        acc = 0.0
        for off, wgt in zip(offsets, weights, strict=True):
            flat[i] = xi + off * h[i]
            acc += wgt * f(x)
        flat[i] = xi
        grad[i] = acc / h[i]
    return grad.reshape(x.shape)


def finite_difference(model: TabularCMDP, params, lam=None, parametrisation="softmax",
                      adversary_params=None, adversary_parametrisation="softmax",
                      wrt: str = "policy", step: float | None = None, order: int = 4,
                      progress: bool | None = None) -> np.ndarray:
    """Central finite differences of :func:`lagrangian` (the independent reference).

    Parameters
    ----------
    wrt : "policy" or "adversary"
        Which parameters to perturb.
    step : float, optional
        Relative step; the rule is :func:`fd_step`.
    order : 2 or 4
        Order of the central stencil (:func:`central_difference`).  For MLPs the step
        of each coordinate is also kept below half its distance to a ReLU kink.

    Returns
    -------
    numpy.ndarray
        The gradient estimate, shaped like the perturbed parameters.
    """
    check_choice(wrt, "wrt", ("policy", "adversary"))
    ctx = _Context(model, params, lam, parametrisation, adversary_params,
                   adversary_parametrisation, need_adversary=(wrt == "adversary"))
    if ctx.gamma == 1.0:
        _check_terminates(model, np.einsum("sa,sat->st", ctx.policy.probs(ctx.theta),
                                           ctx.kernel()), "the Lagrangian with gamma = 1")
    if wrt == "policy":
        P = ctx.kernel()
        grad = central_difference(
            lambda th: _solve_lagrangian(ctx, ctx.policy.probs(th), P)[0],
            ctx.theta, step, order, _kink_bound(ctx.policy, ctx.theta), progress)
        return grad.reshape(ctx.params_shape)
    pi = ctx.policy.probs(ctx.theta)
    grad = central_difference(
        lambda ph: _solve_lagrangian(ctx, pi, ctx.kernel(ph))[0], ctx.phi, step, order,
        _kink_bound(ctx.adversary, ctx.phi), progress)
    return grad.reshape(ctx.adv_shape)


def _kink_bound(par, params):
    fn = getattr(par, "kink_free_step", None)
    return None if fn is None else fn(params)


# =========================================================================== estimators, exactly
def resolve_horizon(model: TabularCMDP, horizon) -> int | None:
    """An episode length: "model" (the model's horizon), None (unbounded) or an int >= 1."""
    if isinstance(horizon, str):
        return model.horizon if check_choice(horizon, "horizon", ("model",)) else None
    return None if horizon is None else check_int(
        horizon, "horizon", 1, hint=" (or 'model', or None for unbounded episodes)")


def _visits(ctx: _Context, P_pi: np.ndarray, T: int | None, discounted: bool, what: str):
    """Weighted state visits before termination.

    Returns ``nu`` (T, S) with :math:`\\nu_t(s) = w_t P(s_t = s, \\text{not ended})`
    (``w_t`` = 1 or :math:`\\gamma^t`) when T is finite, or their sum (S,) when T is None.
    """
    nt = ctx.nt
    p0 = ctx.model.p0 * nt
    w = ctx.gamma if discounted else 1.0
    if T is None:
        if w == 1.0:
            _check_terminates(ctx.model, P_pi, what)
        try:
            n = PolicySystem(P_pi, w, nt).solve(p0, transpose=True)
        except np.linalg.LinAlgError:
            raise ImproperPolicyError(
                f"{what}: the visit sums diverge; give a finite horizon T") from None
        return n
    nu = np.empty((T, ctx.S))
    cur = p0.copy()
    for t in range(T):
        nu[t] = cur
        cur = w * (cur @ P_pi) * nt
    return nu


def estimator_expectation(model: TabularCMDP, params, estimator: str, lam=None,
                          parametrisation="softmax", adversary_params=None,
                          adversary_parametrisation="softmax", horizon="model") -> np.ndarray:
    """The exact expected value of a sampled gradient estimator (see :data:`ESTIMATORS`).

    Episodes start from p0, follow the policy, take transitions from the adversary when
    ``adversary_params`` is given (else from the model) and end at a terminal state or
    after T steps.  With :math:`G_t` the discounted Lagrangian return-to-go within the
    episode, :math:`\\nu_t(s) = P(s_t = s, \\text{episode not ended})` and
    :math:`Q^{(h)}` the h-step discounted Lagrangian Q-function,

    * ``algorithm1`` (printed): :math:`E \\sum_{t<T} G_t \\nabla\\log\\pi(a_t|s_t) =
      \\sum_{t<T} \\sum_s \\nu_t(s) \\sum_a \\nabla\\pi(a|s)\\, Q^{(T-t)}(s, a)`;
    * ``algorithm1_corrected``: the same with :math:`\\gamma^t \\nu_t`; as
      :math:`T \\to \\infty` it is Theorem 1;
    * ``theorem2_printed``: :math:`\\sum_s n_T(s) \\sum_a \\pi(a|s) \\sum_o \\nabla
      \\pi_{adv}(o|s,a) V_\\lambda(s'_o)` with :math:`n_T = \\sum_{k<T} \\nu_k`;
    * ``theorem2_discounted``: weights :math:`\\sum_{k<T} \\gamma^k \\nu_k`, signal
      :math:`\\gamma V_\\lambda(s'_o)`;
    * ``theorem2_corrected``: weights :math:`\\sum_{k<T} \\gamma^k \\nu_k`, signal
      :math:`R_\\lambda(s, a, s'_o) + \\gamma V_\\lambda(s'_o)`;
    * ``theorem1`` / ``theorem2``: :func:`policy_gradient` / :func:`adversary_gradient`.

    :math:`V_\\lambda` in the adversary estimators is the exact (infinite-horizon,
    discounted) Lagrangian value, as the theorem states.

    Parameters
    ----------
    horizon : "model", None or int
        Episode length T: the model's horizon by default; None for unbounded episodes
        (the printed, undiscounted forms then need every reachable state to reach a
        terminal state).

    Returns
    -------
    numpy.ndarray
        Shaped like ``params`` (policy estimators) or ``adversary_params``.
    """
    est = _estimator(estimator)
    if est.name == "theorem1":
        return policy_gradient(model, params, lam, parametrisation, adversary_params,
                               adversary_parametrisation)
    if est.name == "theorem2":
        return adversary_gradient(model, params, adversary_params, lam, parametrisation,
                                  adversary_parametrisation)
    T = resolve_horizon(model, horizon)
    ctx = _Context(model, params, lam, parametrisation, adversary_params,
                   adversary_parametrisation, need_adversary=(est.side == "adversary"))
    pi = ctx.policy.probs(ctx.theta)
    P = ctx.kernel()
    P_pi = np.einsum("sa,sat->st", pi, P)
    discounted = est.weight == "gamma^t"
    what = f"the estimator {est.name!r}"
    r_lam = np.einsum("sat,sat->sa", P, ctx.R_lam) * ctx.nt[:, None]
    if est.side == "policy":
        if T is None:
            if ctx.gamma == 1.0:
                _check_terminates(model, P_pi, what)
            _, V = _solve_lagrangian(ctx, pi, P)
            G = _visits(ctx, P_pi, None, discounted, what)[:, None] * (r_lam + ctx.gamma * P @ V)
        else:
            nu = _visits(ctx, P_pi, T, discounted, what)
            G = np.zeros((ctx.S, ctx.A))
            V = np.zeros(ctx.S)
            # Q^{(h)} for h = 1..T pairs with t = T - h
            for h in range(1, T + 1):
                Q = r_lam + ctx.gamma * (P @ V)
                G += nu[T - h][:, None] * Q
                V = np.einsum("sa,sa->s", pi, Q)
        G[~ctx.nt] = 0.0
        return ctx.policy.vjp(ctx.theta, G).reshape(ctx.params_shape)
    # adversary estimators
    if ctx.gamma == 1.0:
        _check_terminates(model, P_pi, what)
    _, V = _solve_lagrangian(ctx, pi, P)
    n = _visits(ctx, P_pi, T, discounted, what)
    if T is not None:
        n = n.sum(axis=0)
    U = _outcome_signal(ctx, V, est.signal)
    G = n[:, None, None] * pi[:, :, None] * U
    G[~ctx.nt] = 0.0
    adv = ctx.adversary
    return adv.vjp(ctx.phi, G.reshape(adv.n_rows, adv.n_categories)).reshape(ctx.adv_shape)


# =========================================================================== Monte Carlo
def monte_carlo_estimator(model: TabularCMDP, params, estimator: str, n_episodes: int,
                          seed=None, lam=None, parametrisation="softmax",
                          adversary_params=None, adversary_parametrisation="softmax",
                          horizon="model", directions=None, batch_size: int = 2000,
                          progress: bool | None = None) -> Result:
    """Sample a gradient estimator over independent episodes (seeded).

    Each episode gives one sample :math:`X_i = \\sum_{t<T} w_t\\, U_t\\, \\nabla \\log
    p(c_t \\mid r_t)` (the policy's score for the policy estimators, the adversary's for
    the adversary ones); the result is their mean with its standard error.  Episodes
    come from :func:`rcmdp_exact.core.sampling.rollout` (over the adversary's outcomes when
    ``adversary_params`` is given).

    Parameters
    ----------
    n_episodes : int
    seed : int or numpy.random.Generator
    horizon : "model" or int
        A finite episode length is needed.
    directions : array (m, n_params), optional
        Fixed directions on which the samples are also projected (for a confidence
        interval on a few numbers instead of every coordinate).
    batch_size : int
        Episodes simulated at once (vectorised over episodes).

    Returns
    -------
    Result
        ``mean`` and ``sem`` (shaped like the parameters), ``n_episodes``,
        ``horizon``, ``estimator``; with ``directions`` also ``projection_mean`` and
        ``projection_sem`` (m,).
    """
    est = _estimator(estimator)
    if est.exact:
        raise ModelError(
            f"{est.name!r} is an exact formula, not a sampled estimator; sample one of "
            f"{', '.join(n for n, e in ESTIMATORS.items() if not e.exact)}"
        )
    T = resolve_horizon(model, horizon)
    check_int(T, "horizon", 1, hint=" (Monte Carlo needs a finite episode length: pass "
              "horizon=T)" if T is None else "")
    check_int(n_episodes, "n_episodes", 2)
    check_int(batch_size, "batch_size", 1)
    ctx = _Context(model, params, lam, parametrisation, adversary_params,
                   adversary_parametrisation, need_adversary=(est.side == "adversary"))
    rng = rng_from(seed)
    A = ctx.A
    pi = ctx.policy.probs(ctx.theta)
    if ctx.adversary is not None:
        outcomes = ctx.adversary.outcomes
        q_out = ctx.adversary.outcome_probs(ctx.phi)
    else:
        outcomes, q_out = kernel_outcomes(model)
    if est.side == "policy":
        par, theta = ctx.policy, ctx.theta
        V = None
    else:
        par, theta = ctx.adversary, ctx.phi
        _, V = _solve_lagrangian(ctx, pi, ctx.kernel())
    score = par.score(theta).reshape(par.n_rows * par.n_categories, par.n_params)
    RC = par.n_rows * par.n_categories
    D = None if directions is None else np.asarray(directions, dtype=np.float64)
    if D is not None and (D.ndim != 2 or D.shape[1] != par.n_params):
        check_shape(D, (max(len(D), 1), par.n_params), "directions", ("m", "n_params"))
    w = ctx.gamma ** np.arange(T) if est.weight == "gamma^t" else np.ones(T)
    total = np.zeros(par.n_params)
    total_sq = np.zeros(par.n_params)
    ptotal = None if D is None else np.zeros(D.shape[0])
    ptotal_sq = None if D is None else np.zeros(D.shape[0])
    done = 0
    bar = tqdm(total=int(n_episodes), disable=not progress_default(progress),
               desc=f"sampling {est.name}", leave=False)
    while done < n_episodes:
        N = min(batch_size, int(n_episodes) - done)
        ep = rollout_arrays(model.p0, model.terminal, pi, outcomes, q_out, N, T, rng)
        st, at, ot, nxt, alive = (x.T for x in ep[:5])  # (T, N)
        rew = np.where(alive, ctx.R_lam[st, at, nxt], 0.0)
        if est.side == "policy":
            G = np.zeros(N)
            U = np.empty((T, N))
            for t in range(T - 1, -1, -1):
                G = rew[t] + ctx.gamma * G
                U[t] = G
            rows, cats = st, at
        else:
            if est.signal == "V_lam(s')":
                U = V[nxt]
            elif est.signal == "gamma V_lam(s')":
                U = ctx.gamma * V[nxt]
            else:
                U = rew + ctx.gamma * V[nxt]
            rows, cats = st * A + at, ot
        coef = (w[:, None] * U) * alive
        flat = (np.arange(N)[None, :] * RC + rows * par.n_categories + cats)
        W = np.bincount(flat[alive], weights=coef[alive], minlength=N * RC).reshape(N, RC)
        X = W @ score
        total += X.sum(axis=0)
        total_sq += (X * X).sum(axis=0)
        if D is not None:
            Y = X @ D.T
            ptotal += Y.sum(axis=0)
            ptotal_sq += (Y * Y).sum(axis=0)
        done += N
        bar.update(N)
    bar.close()
    n = float(n_episodes)
    mean = total / n
    var = np.maximum(total_sq / n - mean**2, 0.0) * n / (n - 1.0)
    out_shape = ctx.params_shape if est.side == "policy" else ctx.adv_shape
    res = Result(
        mean=mean.reshape(out_shape),
        sem=np.sqrt(var / n).reshape(out_shape),
        n_episodes=int(n_episodes),
        horizon=T,
        estimator=est.name,
    )
    if D is not None:
        pm = ptotal / n
        pv = np.maximum(ptotal_sq / n - pm**2, 0.0) * n / (n - 1.0)
        res.projection_mean = pm
        res.projection_sem = np.sqrt(pv / n)
    return res


# =========================================================================== comparisons
def relative_error(estimate, reference) -> float:
    """:math:`\\lVert x - y\\rVert_2 / \\lVert y\\rVert_2` (inf if y = 0 and x != y)."""
    x = np.ravel(np.asarray(estimate, dtype=np.float64))
    y = np.ravel(np.asarray(reference, dtype=np.float64))
    num = float(np.linalg.norm(x - y))
    den = float(np.linalg.norm(y))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def cosine_similarity(a, b) -> float:
    """:math:`a \\cdot b / (\\lVert a\\rVert \\lVert b\\rVert)` (nan if either is zero)."""
    x = np.ravel(np.asarray(a, dtype=np.float64))
    y = np.ravel(np.asarray(b, dtype=np.float64))
    den = float(np.linalg.norm(x) * np.linalg.norm(y))
    return math.nan if den == 0.0 else float(x @ y) / den

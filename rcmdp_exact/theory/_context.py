"""What the gradient tools share: the resolved inputs of one call and the dense solve.

A private room of :mod:`rcmdp_exact.theory` (its name starts with an underscore) whose
names are public, so that :mod:`.gradients`, :mod:`.differences` and :mod:`.estimators`
import them without reaching into each other: :class:`GradientContext` (the model, the
policy and adversary parametrisations, the multipliers and the Lagrangian reward),
:func:`solve_lagrangian` (the dense solve of :math:`V_\\lambda`),
:func:`check_terminates` (undiscounted sums need every reachable state to terminate) and
:func:`outcome_signal` (what multiplies the adversary's score).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._checks import ImproperPolicyError
from ..core.evaluation import PolicySystem, check_proper
from ..core.model import TabularCMDP, check_model
from ..core.model_checks import ModelError
from ..core.parametrisations import check_logits, make_adversary, make_policy

__all__ = ["GradientContext", "check_terminates", "outcome_signal", "solve_lagrangian"]


class GradientContext:
    """Resolved inputs shared by the gradient tools of :mod:`rcmdp_exact.theory`."""

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


def solve_lagrangian(ctx: GradientContext, pi: np.ndarray,
                     P: np.ndarray) -> tuple[float, np.ndarray]:
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


def check_terminates(model: TabularCMDP, P_pi: np.ndarray, what: str) -> None:
    """Raise unless every state reachable from p0 under ``P_pi`` reaches a terminal state."""
    check_proper(model, sp.csr_array(P_pi), what, message=(
        "{what} sums undiscounted visits over an unbounded episode, but state {name} is "
        "reachable from p0 and never reaches a terminal state ({n} such states), so the "
        "sum diverges; give a finite horizon T"
    ))


def outcome_signal(ctx: GradientContext, V_lam: np.ndarray, signal: str) -> np.ndarray:
    """U(s, a, o) for the adversary estimators, shape (S, A, O)."""
    out = ctx.adversary.outcomes
    V_next = V_lam[out]
    if signal == "V_lam(s')":
        return V_next
    if signal == "gamma V_lam(s')":
        return ctx.gamma * V_next
    R_next = np.take_along_axis(ctx.R_lam, out, axis=2)
    return R_next + ctx.gamma * V_next


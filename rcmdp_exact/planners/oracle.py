r"""The exact robust oracle every planner calls: worst cases, values and gradients.

A planner sees a policy :math:`\pi` (S, A) through one call of
:meth:`RobustOracle.evaluate`, which answers, exactly, for the value and every cost,
each against its own adversary (the RCMDP's objectives):

.. math::

    V(\pi) = \min_{P \in \mathcal P} V_r(\pi, P), \qquad
    C_k(\pi) = \max_{P \in \mathcal P} C_k(\pi, P),

with the kernels :math:`P^+_0, P^+_1, \dots, P^+_K` that attain them, the discounted
occupancies :math:`d_j(s)` from :math:`p_0` and the Q-functions :math:`Q_j(s, a)` of
each objective under its own kernel.  Optionally (``lam``) also the Lagrangian
:math:`L_\lambda(\pi) = \min_P [V_r - \lambda^\top C](\pi, P) + \lambda^\top d` with
its single adversary (the combined adversary of the robust Lagrangian).

**Gradients (Danskin).**  The set does not depend on :math:`\pi`, so where the minimiser
is unique :math:`\nabla_\pi V(\pi) = \nabla_\pi V_r(\pi, P^+_0)`, and for the direct
(tabular) parametrisation the policy gradient theorem gives

.. math::

    \frac{\partial V(\pi)}{\partial \pi(a \mid s)} = d_0(s)\, Q_0(s, a),

the same for each cost under its own kernel (:meth:`Evaluation.gradient`); where the
minimiser is not unique this is one supergradient (value) or subgradient (cost).  The
mirror (natural-gradient) steps of the planners use :math:`Q_j` alone, the occupancy
cancelling against the Fisher information.  ``tests/test_planners.py`` checks every
gradient against central finite differences of the exact robust values.

The fixed points come from the toolkit's one engine (:class:`~rcmdp_exact.robust.engine.
RobustGame`: sa- and s-rectangular sets; an s-rectangular adversary answers the policy),
warm-started from the previous call's values; a set of whole kernels
(:class:`~rcmdp_exact.KernelSet`) is answered by evaluating every member exactly.  Every
fixed point is followed by the exact evaluation of the policy under the kernel it found
(as :func:`~rcmdp_exact.robust_evaluate` reports), and an unconverged fixed point is
counted (``unconverged``) so that the planner's result says so.  The oracle counts its
work: ``evaluations`` (calls), ``fixed_points`` (robust fixed points solved).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import check_int, check_real
from ..core.evaluation import PolicySystem, policy_matrix, policy_values
from ..robust.engine import RobustGame
from ..uncertainty import KernelSet

__all__ = ["Evaluation", "RobustOracle", "log_policy", "mirror_step", "project_simplex"]


@dataclass(frozen=True)
class Evaluation:
    """The exact robust quantities of one policy (see :class:`RobustOracle`)."""

    policy: np.ndarray
    """(S, A) the policy evaluated."""
    value: float
    """:math:`V(\\pi) = \\min_P V_r(\\pi, P)` from p0."""
    costs: np.ndarray
    """(K,) :math:`C_k(\\pi) = \\max_P C_k(\\pi, P)` from p0, each its own adversary."""
    occupancy: np.ndarray
    """(1 + K, S) discounted occupancy from p0 under each objective's kernel (0 at
    terminal states)."""
    q: np.ndarray
    """(1 + K, S, A) Q of the reward (row 0) and of each cost (rows 1..K), each under its
    own kernel (costs as costs: positive means expensive)."""
    kernels: np.ndarray
    """(1 + K, S, A, S) the worst-case kernels."""
    converged: bool
    """Every fixed point of this evaluation met its tolerance."""
    lam: np.ndarray | None = None
    """Multipliers of the Lagrangian evaluation (None: not asked)."""
    lagrangian: float = float("nan")
    """:math:`\\min_P [V_r - \\lambda^\\top C](\\pi, P) + \\lambda^\\top d` (single
    adversary), when ``lam`` was given."""
    lagrangian_q: np.ndarray | None = None
    """(S, A) Q of :math:`r - \\lambda^\\top c` under the Lagrangian's kernel."""
    lagrangian_occupancy: np.ndarray | None = None
    """(S,) occupancy under the Lagrangian's kernel."""
    lagrangian_costs: np.ndarray | None = None
    """(K,) the costs under the Lagrangian's kernel (what its multiplier step sees)."""
    lagrangian_kernel: np.ndarray | None = None
    """(S, A, S) the Lagrangian's worst-case kernel."""

    def gradient(self, j: int) -> np.ndarray:
        r"""Danskin's gradient (S, A) of objective ``j`` (0: the worst-case value, k + 1:
        the worst-case cost k) for the direct parametrisation: :math:`d_j(s) Q_j(s, a)`."""
        return self.occupancy[j][:, None] * self.q[j]

    def violation(self, d: np.ndarray) -> float:
        """:math:`\\max_k (C_k - d_k)^+` (0 without constraints)."""
        if self.costs.size == 0:
            return 0.0
        return float(max(0.0, np.max(self.costs - d)))


class RobustOracle:
    """Exact robust evaluations and gradients on one model and set, with work counted.

    Parameters
    ----------
    model : TabularCMDP
        Checked by the caller (:func:`~rcmdp_exact.planners.plan`).
    uset : UncertaintySet
        sa- or s-rectangular (one :class:`RobustGame`), or a set of kernels.
    tol, max_iter
        Of the robust fixed points (the engine's relative tolerance and iteration cap).
    """

    def __init__(self, model, uset, *, tol: float = 1e-12, max_iter: int = 200):
        tol = check_real(tol, "tol", 0.0, low_open=True, hint=" (of the robust fixed points)")
        max_iter = check_int(max_iter, "max_iter", 1, hint=" (of the robust fixed points)")
        self.model = model
        self.uset = uset
        self.S, self.A, self.K = model.n_states, model.n_actions, model.n_constraints
        self.gamma = float(model.gamma)
        self.p0 = np.asarray(model.p0, dtype=np.float64)
        self.d = np.asarray(model.d, dtype=np.float64)
        self.term = np.asarray(model.terminal, dtype=bool)
        self.R = np.asarray(model.R, dtype=np.float64)
        self.C = np.ascontiguousarray(np.moveaxis(np.asarray(model.C, dtype=np.float64), 3, 0))
        self.g = np.concatenate([self.R[None], -self.C], axis=0)  # rewards the adversary minimises
        self.members = None
        self.game = None
        if isinstance(uset, KernelSet):
            members = np.asarray(uset.members, dtype=np.float64)
            if self.term.any():  # terminal states keep the model's self-loop
                members = members.copy()
                members[:, self.term] = np.asarray(model.P)[self.term]
            self.members = members
        else:
            self.game = RobustGame(model, uset, tol=tol, max_iter=max_iter)
        self.evaluations = 0
        self.fixed_points = 0
        self.unconverged = 0
        self._warm = None  # the last values of the 1 + K objectives (warm start)
        self._warm_lag = None

    # ---------------------------------------------------------------- evaluation
    def evaluate(self, pi: np.ndarray, lam=None) -> Evaluation:
        """The exact robust quantities of ``pi`` (module docstring); with ``lam`` (K,) also
        the Lagrangian against its single adversary."""
        pi = np.asarray(pi, dtype=np.float64)
        self.evaluations += 1
        J = 1 + self.K
        if self.members is not None:
            P, conv = self._members_worst(self.g, pi), True
        else:
            pis = np.broadcast_to(pi, (J, self.S, self.A))
            fp = self.game.adversary(self.g, pis, w=self._warm)
            self.fixed_points += J
            P = fp.P
            conv = bool(np.all(fp.converged))
        w, q, occ = self._exact(P, self.g, pi)
        self._warm = w
        if not conv:
            self.unconverged += 1
        sign = np.ones((J, 1, 1))
        sign[1:] = -1.0  # the costs back as costs
        out = dict(policy=pi, value=float(self.p0 @ w[0]), costs=-(w[1:] @ self.p0),
                   occupancy=occ, q=sign * q, kernels=P, converged=conv)
        if lam is not None:
            lam = np.asarray(lam, dtype=np.float64)
            gl = (self.R - np.einsum("k,ksat->sat", lam, self.C))[None]
            if self.members is not None:
                PL = self._members_worst(gl, pi)
            else:
                fp = self.game.adversary(gl, pi[None], w=self._warm_lag)
                self.fixed_points += 1
                PL = fp.P
                if not bool(np.all(fp.converged)):
                    self.unconverged += 1
                    out["converged"] = False
            wl, ql, ol = self._exact(PL, gl, pi)
            self._warm_lag = wl
            cl = policy_values(np.broadcast_to(PL, (self.K, *PL.shape[1:])), self.C,
                               np.broadcast_to(pi, (self.K, self.S, self.A)), self.gamma,
                               self.term) @ self.p0 if self.K else np.zeros(0)
            out.update(lam=lam, lagrangian=float(self.p0 @ wl[0] + lam @ self.d),
                       lagrangian_q=ql[0], lagrangian_occupancy=ol[0],
                       lagrangian_costs=np.asarray(cl, dtype=np.float64),
                       lagrangian_kernel=PL[0])
        return Evaluation(**out)

    def least_costs(self) -> np.ndarray | None:
        r"""The least worst-case cost of each constraint, :math:`\min_\pi \max_P C_k(\pi,
        P)` (K,), by robust policy iteration on the reward :math:`-c_k` (K fixed points of
        the policy player; counted); None on a set of kernels (no robust Bellman operator:
        the robust problem is NP-hard there)."""
        if self.game is None or self.K == 0:
            return None if self.game is None else np.zeros(0)
        S, A = self.S, self.A
        sol = self.game.solve(-self.C, np.zeros((self.K, S, A)), np.ones((self.K, S, A)))
        self.fixed_points += self.K * int(sol.rounds)
        return -(sol.w @ self.p0)

    # ---------------------------------------------------------------- helpers
    def _exact(self, P: np.ndarray, g: np.ndarray, pi: np.ndarray):
        """Exact values (J, S), Q (J, S, A) and occupancies (J, S) of ``pi`` under the
        kernels P (J, S, A, S) for the rewards g (J, S, A, S)."""
        J = P.shape[0]
        pis = np.broadcast_to(pi, (J, self.S, self.A))
        system = PolicySystem(policy_matrix(P, pis), self.gamma)
        r_sa = np.einsum("jsat,jsat->jsa", P, g)
        r_sa[:, self.term] = 0.0
        w = system.solve(np.einsum("jsa,jsa->js", pis, r_sa))
        occ = system.solve(np.broadcast_to(self.p0, (J, self.S)), transpose=True)
        occ[:, self.term] = 0.0
        q = r_sa + self.gamma * np.einsum("jsat,jt->jsa", P, w)
        q[:, self.term] = 0.0
        return w, q, occ

    def _members_worst(self, g: np.ndarray, pi: np.ndarray) -> np.ndarray:
        """The member of a finite set that minimises each reward of g (J, S, A, S) from
        p0: every member evaluated exactly (ties: the first)."""
        M, J = self.members.shape[0], g.shape[0]
        P = np.repeat(self.members, J, axis=0)
        gg = np.tile(g, (M, 1, 1, 1))
        pis = np.broadcast_to(pi, (M * J, self.S, self.A))
        vals = (policy_values(P, gg, pis, self.gamma, self.term) @ self.p0).reshape(M, J)
        self.fixed_points += M * J
        return self.members[np.argmin(vals, axis=0)]


# -------------------------------------------------------------------- policy steps
def project_simplex(y: np.ndarray) -> np.ndarray:
    r"""Euclidean projection of each row of ``y`` (S, A) onto the probability simplex.

    :math:`\arg\min_{x \in \Delta_A} \|x - y\|_2` is :math:`x = (y - \tau)^+` with the
    threshold :math:`\tau` of the sorted rows (Held, Wolfe and Crowder 1974; Duchi et al.
    2008): :math:`\rho = \max\{j : u_j - (\sum_{i \le j} u_i - 1)/j > 0\}`,
    :math:`\tau = (\sum_{i \le \rho} u_i - 1)/\rho`, u the row sorted downwards.
    """
    y = np.asarray(y, dtype=np.float64)
    u = -np.sort(-y, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    j = np.arange(1, y.shape[1] + 1)
    rho = np.count_nonzero(u - css / j > 0, axis=1)
    tau = css[np.arange(y.shape[0]), rho - 1] / rho
    x = np.maximum(y - tau[:, None], 0.0)
    return x / x.sum(axis=1, keepdims=True)


def mirror_step(logits: np.ndarray, g: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The KL mirror (exponentiated-gradient) step :math:`\pi'(a|s) \propto \pi(a|s)
    \exp(\eta\, g(s, a))` of every row, carried on the logits :math:`\log \pi`.

    Returns ``(logits', pi')``: the logits :math:`\log \pi + \eta g`, shifted so that
    each row's largest is 0, and the policy (their softmax).  Kept as logits, a
    probability that underflows to 0 in floating point can still come back (the map is
    the same; as probabilities it could not); an action of logit :math:`-\infty`
    (probability exactly 0 at the start) stays at 0, as the step says.  ``eta``: a
    finite step >= 0.
    """
    eta = check_real(eta, "eta", 0.0, hint=" (the mirror step size)")
    z = np.asarray(logits, dtype=np.float64) + eta * np.asarray(g, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    pi = np.exp(z)
    return z, pi / pi.sum(axis=1, keepdims=True)


def log_policy(pi: np.ndarray) -> np.ndarray:
    r"""The logits :math:`\log \pi` of a policy (``-inf`` where it is 0)."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(pi, dtype=np.float64))

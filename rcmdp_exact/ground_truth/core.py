r"""Batched robust fixed points on dense arrays: the engine of the bracket and the variants.

Every quantity the bracket needs is the fixed point of one operator, for a batch of J
problems that share a model and a ball but not their reward, policy box or multiplier:

.. math::

    (T_B W)(s) = \max_{\pi_s \in B_s} \sum_a \pi_s(a)\, Q_W(s, a), \qquad
    Q_W(s, a) = \min_{p \in \mathcal P_{s,a}} p^\top \bigl(g(s, a, \cdot) + \gamma W\bigr),

with :math:`B_s = \{\pi_s \in \Delta_A : l_s \le \pi_s \le u_s\}` a box intersected with
the simplex.  A box that is one policy (l = u = pi) gives the robust evaluation of pi;
the full box (l = 0, u = 1) gives robust value iteration; a worst-case *cost* is the
fixed point with reward :math:`g = -c_k` (the adversary that minimises :math:`-C_k`
maximises :math:`C_k`).  :math:`T_B` is a :math:`\gamma`-contraction, so for any W

.. math::

    \|W^* - W\|_\infty \le \|T_B W - W\|_\infty / (1 - \gamma),

and :meth:`RobustGame.solve` returns this bound with every answer: the bracket adds it
to upper bounds and subtracts it from lower bounds, so a fixed point stopped at a
tolerance never overstates a bound.

The inner minimum is the exact sort-based solution of
:func:`rcmdp_exact.inner.worst_case_l1`, called once per iteration for the whole batch.
The fixed point is found by Howard's policy iteration for both players: the adversary's
(kernels, each evaluated by a dense linear solve) inside the policy player's (greedy in
the box, keeping the current choice unless another is better by more than the
tolerance).  The greedy maximiser over a box intersected with the simplex starts at
:math:`l_s` and fills the best actions up to :math:`u_s` (:func:`greedy_box`).

Terminal states earn nothing and keep the model's self-loop, whatever the ball says.
"""

from __future__ import annotations

import numpy as np

from ..inner import worst_case_l1

__all__ = ["RobustGame", "greedy_box", "policy_kernel_values"]


def greedy_box(q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    r"""The maximiser of :math:`\sum_a \pi(a) q(a)` over :math:`\{l \le \pi \le u\} \cap \Delta`.

    Start at ``lo`` and give the remaining mass :math:`1 - \sum_a l(a)` to the actions
    in decreasing order of q (ties to the lowest index), each up to ``hi``.  Every
    leading axis is a batch axis; the box must be non-empty (:math:`\sum l \le 1 \le
    \sum u`).
    """
    order = np.argsort(-q, axis=-1, kind="stable")
    room = np.take_along_axis(hi - lo, order, axis=-1)
    left = np.maximum(1.0 - lo.sum(axis=-1, keepdims=True), 0.0)
    before = np.cumsum(room, axis=-1) - room
    give = np.clip(left - before, 0.0, room)
    out = lo.copy()
    np.put_along_axis(out, order, np.take_along_axis(out, order, axis=-1) + give, axis=-1)
    return out


def policy_kernel_values(P: np.ndarray, g: np.ndarray, pi: np.ndarray, gamma: float,
                         term: np.ndarray) -> np.ndarray:
    r"""Solve :math:`(I - \gamma P_\pi) W = g_\pi` for a batch: P, g (J, S, A, S), pi (J, S, A)."""
    r_sa = np.einsum("jsat,jsat->jsa", P, g)
    r_sa[:, term] = 0.0
    r_pi = np.einsum("jsa,jsa->js", pi, r_sa)
    M = -gamma * np.einsum("jsa,jsat->jst", pi, P)
    idx = np.arange(P.shape[1])
    M[:, idx, idx] += 1.0
    return np.linalg.solve(M, r_pi[..., None])[..., 0]


class RobustGame:
    r"""The arrays of one model and one L1 ball, and batched fixed points of :math:`T_B`.

    Parameters
    ----------
    model : TabularCMDP
        Rewards R (S, A, S), costs C (S, A, S, K), budgets, gamma < 1, p0, terminal
        states (its transitions are used only on terminal rows).
    ball : L1Ball
        The sa-rectangular set; its nominal is the centre.
    tol : float
        Stop a fixed point when :math:`\|T W - W\|_\infty \le` tol * max(1, max|W|).
    """

    def __init__(self, model, ball, tol: float = 1e-12, max_iter: int = 200):
        S, A, K = model.n_states, model.n_actions, model.n_constraints
        self.S, self.A, self.K = S, A, K
        self.gamma = float(model.gamma)
        self.p0 = np.asarray(model.p0, dtype=np.float64)
        self.d = np.asarray(model.d, dtype=np.float64)
        self.term = np.asarray(model.terminal, dtype=bool)
        self.P_term = np.asarray(model.P)[self.term] if self.term.any() else None
        self.nominal = np.array(ball.nominal, dtype=np.float64)
        if self.P_term is not None:
            self.nominal[self.term] = self.P_term
        self.alpha = np.asarray(ball.alpha, dtype=np.float64)
        self.support = None if ball.full_support else np.asarray(ball.support)
        self.R = np.asarray(model.R, dtype=np.float64)
        self.C = np.ascontiguousarray(np.moveaxis(np.asarray(model.C, dtype=np.float64), 3, 0))
        mag = max([1.0, float(np.abs(self.R).max(initial=0.0)),
                   float(np.abs(self.C).max(initial=0.0))])
        self.scale = mag / (1.0 - self.gamma)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self._tiles: dict = {}
        self.n_inner = 0

    # ------------------------------------------------------------------ rewards
    def objectives(self) -> np.ndarray:
        """The value and every cost as rewards (1 + K, S, A, S): R, -C_1, ..., -C_K."""
        return np.concatenate([self.R[None], -self.C], axis=0)

    def lagrangian(self, lam: np.ndarray) -> np.ndarray:
        r"""Rewards :math:`R - \lambda^\top C` for a batch of multipliers (J, K)."""
        lam = np.asarray(lam, dtype=np.float64)
        lam = lam.reshape(lam.shape[0] if lam.ndim == 2 else -1, self.K)
        return self.R[None] - np.einsum("jk,ksat->jsat", lam, self.C)

    # ------------------------------------------------------------------ operators
    def _tile(self, J: int):
        if J not in self._tiles:
            if len(self._tiles) > 6:
                self._tiles.clear()
            nom = np.ascontiguousarray(np.broadcast_to(self.nominal, (J, *self.nominal.shape)))
            al = np.ascontiguousarray(np.broadcast_to(self.alpha, (J, self.S, self.A)))
            sup = None if self.support is None else np.ascontiguousarray(
                np.broadcast_to(self.support, (J, *self.support.shape)))
            self._tiles[J] = (nom, al, sup)
        return self._tiles[J]

    def inner(self, g: np.ndarray, w: np.ndarray):
        """Worst-case Q (J, S, A) and kernels (J, S, A, S) at state values w (J, S)."""
        J = g.shape[0]
        nom, al, sup = self._tile(J)
        z = g + self.gamma * w[:, None, None, :]
        res = worst_case_l1(nom, z, al, sup, check=False)
        self.n_inner += 1
        q = np.asarray(res.value).reshape(J, self.S, self.A)
        P = res.p.reshape(J, self.S, self.A, self.S)
        if self.P_term is not None:
            q[:, self.term] = 0.0
            P[:, self.term] = self.P_term
        return q, P

    def values(self, P, g, pi) -> np.ndarray:
        """Exact values (J, S) of policies pi under kernels P (no adversary)."""
        return policy_kernel_values(P, g, pi, self.gamma, self.term)

    def numbers(self, P: np.ndarray, pi: np.ndarray):
        """Exact value (J,) and costs (J, K) from p0 of policies pi under kernels P."""
        J, n = P.shape[0], 1 + self.K
        g = np.concatenate([self.R[None], self.C], axis=0)
        g = np.broadcast_to(g, (J, *g.shape)).reshape(J * n, self.S, self.A, self.S)
        vals = self.values(np.repeat(P, n, axis=0), g, np.repeat(pi, n, axis=0))
        out = (vals @ self.p0).reshape(J, n)
        return out[:, 0], out[:, 1:]

    def occupancy(self, P: np.ndarray, pi: np.ndarray) -> np.ndarray:
        r"""Discounted occupancies (J, S) from p0: :math:`(I - \gamma P_\pi)^{-\top} p_0`."""
        M = -self.gamma * np.einsum("jsa,jsat->jts", pi, P)
        idx = np.arange(self.S)
        M[:, idx, idx] += 1.0
        rhs = np.broadcast_to(self.p0, (P.shape[0], self.S))[..., None]
        return np.linalg.solve(M, rhs)[..., 0]

    def _scale(self, w: np.ndarray) -> np.ndarray:
        return np.maximum(1.0, np.abs(w).max(axis=1))

    # ------------------------------------------------------------------ fixed points
    def adversary(self, g, pi, w=None):
        """The adversary's policy iteration for fixed policies: (w, q, P).

        Returns the last evaluated ``w`` and the worst case ``q``, ``P`` at that same
        ``w`` (so that a residual computed from them is the residual of ``w``).
        """
        J = g.shape[0]
        if w is None:
            w = self.values(np.broadcast_to(self.nominal, (J, *self.nominal.shape)), g, pi)
        P_prev = None
        for it in range(self.max_iter):
            q, P = self.inner(g, w)
            res = np.abs(np.einsum("jsa,jsa->js", pi, q) - w).max(axis=1)
            if (res <= self.tol * self._scale(w)).all() or it == self.max_iter - 1:
                break
            if P_prev is not None and np.array_equal(P, P_prev):
                break  # the same kernel again: w is its exact evaluation
            w, P_prev = self.values(P, g, pi), P
        return w, q, P

    def solve(self, g: np.ndarray, lo: np.ndarray, hi: np.ndarray, w=None, pi=None):
        r"""Fixed points of :math:`T_B` for a batch: rewards g (J, S, A, S), boxes lo, hi (J, S, A).

        Returns
        -------
        dict
            ``w`` (J, S), ``pi`` (J, S, A) the box maximiser, ``q`` (J, S, A) and ``P``
            (J, S, A, S) the worst case at ``w``, ``value`` (J,) = p0.w and ``err``
            (J,) = :math:`\|T_B w - w\|_\infty / (1-\gamma)`: the fixed point lies in
            ``value -+ err``.
        """
        if pi is None:
            q0, _ = self.inner(g, np.zeros(g.shape[:2]) if w is None else w)
            pi = greedy_box(q0, lo, hi)
        for _ in range(self.max_iter):
            w, q, P = self.adversary(g, pi, w)
            best = greedy_box(q, lo, hi)
            gain = np.einsum("jsa,jsa->js", best - pi, q)
            better = gain > self.tol * self._scale(w)[:, None]
            if not better.any():
                break
            pi = np.where(better[..., None], best, pi)
        tw = np.einsum("jsa,jsa->js", greedy_box(q, lo, hi), q)
        err = np.abs(tw - w).max(axis=1) / (1.0 - self.gamma)
        return {"w": w, "pi": pi, "q": q, "P": P, "value": w @ self.p0, "err": err}

    def evaluate(self, pi: np.ndarray, w=None):
        """Certified robust numbers of policies pi (M, S, A) for the value and every cost.

        Returns ``value`` (M,) a lower bound on the worst-case value, ``costs`` (M, K)
        upper bounds on the worst-case costs, and per objective j (value, then costs):
        ``w`` (M, 1+K, S), ``q`` (M, 1+K, S, A), ``P`` (M, 1+K, S, A, S) and the
        estimates ``value_estimate``, ``costs_estimate`` (p0 . w).
        """
        M, J = pi.shape[0], 1 + self.K
        g = np.broadcast_to(self.objectives(), (M, J, self.S, self.A, self.S))
        g = g.reshape(M * J, self.S, self.A, self.S)
        pis = np.repeat(pi, J, axis=0)
        sol = self.solve(g, pis, pis, w=None if w is None else w.reshape(M * J, self.S),
                         pi=pis)
        est = sol["value"].reshape(M, J)
        err = sol["err"].reshape(M, J)
        return {"value": est[:, 0] - err[:, 0], "costs": -est[:, 1:] + err[:, 1:],
                "value_estimate": est[:, 0], "costs_estimate": -est[:, 1:],
                "w": sol["w"].reshape(M, J, self.S), "q": sol["q"].reshape(M, J, self.S, self.A),
                "P": sol["P"].reshape(M, J, self.S, self.A, self.S)}

r"""An occupancy-measure relaxation of a policy box with one kernel per objective.

For kernels :math:`P_j` of the set (one for the value, j = 0, and one per cost), every
robust-feasible policy :math:`\pi` of a box B has :math:`\min_P V_{\pi,P} \le r_0^\top
x_0` and :math:`c_k^\top x_k = C_{k,\pi,P_k} \le \max_P C_{k,\pi,P} \le d_k`, where
:math:`x_j(s, a) = d_j(s)\,\pi(a|s)` is the occupancy of :math:`(\pi, P_j)` from
:math:`p_0` and :math:`r_0`, :math:`c_k` the expected one-step reward and costs under
those kernels.  The occupancies of one kernel satisfy the flow equations

.. math::

    \sum_a x_j(s', a) - \gamma \sum_{s,a} P_j(s'|s,a)\, x_j(s, a) = p_0(s'),

and :math:`x_j(s, a) = d_j(s)\pi(a|s)` with :math:`d_j(s) = \sum_a x_j(s, a)` in a
certified interval :math:`[L, U]`
(:func:`~rcmdp_exact.ground_truth.local_bound.occupancy_intervals`) and
:math:`\pi(a|s) \in [l, u]`: the McCormick envelopes of this product,

.. math::

    x \ge L\pi + l d - L l,\quad x \ge U\pi + u d - U u,\quad
    x \le U\pi + l d - U l,\quad x \le L\pi + u d - L u,

are linear, so :math:`\max r_0^\top x_0` over them (with the shared :math:`\pi \in B` and
the cost rows) is a linear program whose optimum bounds the box from above.  The
envelopes are exact where :math:`\pi` sits at a bound and err by at most
:math:`(u-l)(U-L)/4`, so the relaxation is exact to second order in the box's width;
and, unlike the Lagrangian bound, each objective keeps its own adversary.

**Certified from the dual.**  The LP is solved by HiGHS (``highspy``, a dependency of
cvxpy; warm-started from the basis of the parent box), and its answer is not trusted:
every variable is bounded (:math:`0 \le x_j \le U u`, the value within twice the value
scale), so for any row multipliers y (the solver's, with the sign of each inequality
imposed) the weak-duality value

.. math::

    \sum_i \min(y_i \underline b_i, y_i \overline b_i)
    + \sum_j \min(\rho_j \underline z_j, \rho_j \overline z_j),
    \qquad \rho = c - A^\top y,

bounds the minimum of :math:`c^\top z = -t` from below, whatever the accuracy of y.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["OccupancyLP"]


class OccupancyLP:
    """The LP relaxation of boxes of one model (the structure is built once).

    Call :meth:`bound` per box; it returns the certified bound and the final basis (to
    warm-start the children).
    """

    def __init__(self, game):
        self.game = game
        S, A = game.S, game.A
        self.m = 1 + game.K
        self.n = S * A
        self.N = self.n * (1 + self.m) + 1
        s_of = np.repeat(np.arange(S), A)
        self.s_of = s_of
        # McCormick rows of one kernel: 4 per (s, a); entries on pi(s, a), on x(s, a')
        # for every a' of the state, and on x(s, a) itself
        self.mc_row = np.arange(4 * self.n).reshape(4, self.n)
        same = s_of[:, None] * A + np.arange(A)[None, :]  # (n, A): the pairs of the state
        self.same = same
        self.h = None
        self.last = None

    def _highs(self):
        if self.h is None:
            from .._solvers import new_highs

            self.h = new_highs(presolve="off")
        return self.h

    def matrix(self, lo, hi, kernels, dlo, dhi, objectives=None):
        """(A (csc), row lower, row upper, column lower, upper, cost) of one box.

        ``objectives`` (m,): the objective of each kernel (0 the value, k the cost k);
        default one kernel per objective, in order."""
        g, S, A, n = self.game, self.game.S, self.game.A, self.n
        objectives = np.arange(self.m) if objectives is None else np.asarray(objectives)
        m = len(objectives)
        N = n * (1 + m) + 1
        rows, cols, vals = [], [], []
        # simplex rows
        rows.append(self.s_of)
        cols.append(np.arange(n))
        vals.append(np.ones(n))
        rl, ru = [np.ones(S)], [np.ones(S)]
        r0 = S
        l, u = lo.ravel(), hi.ravel()
        xb_hi = []
        for j in range(m):
            o = int(objectives[j])
            base = n * (1 + j)
            P = kernels[j].reshape(n, S)
            flow = -g.gamma * P.T  # (S', n)
            flow[self.s_of, np.arange(n)] += 1.0
            fr, fc = np.nonzero(flow)
            rows.append(r0 + fr)
            cols.append(base + fc)
            vals.append(flow[fr, fc])
            rl.append(g.p0)
            ru.append(g.p0)
            r0 += S
            L, U = np.repeat(dlo[j], A), np.repeat(dhi[j], A)
            xb_hi.append(np.repeat(dhi[j], A) * u)
            # rows (4, n): coefficients on pi, on d (every x of the state), on x itself
            c_pi = np.stack([L, U, -U, -L])
            c_d = np.stack([l, u, -l, -u])
            c_x = np.array([-1.0, -1.0, 1.0, 1.0])[:, None] * np.ones(n)
            rhs = np.stack([L * l, U * u, -U * l, -L * u])
            mr = r0 + self.mc_row
            rows.append(mr.ravel())
            cols.append(np.tile(np.arange(n), 4))
            vals.append(c_pi.ravel())
            # d part: row (k, i) gets c_d[k, i] on x(s_i, a') for every a'
            rows.append(np.repeat(mr.ravel(), A))
            cols.append(base + np.tile(self.same, (4, 1)).ravel())
            vals.append(np.repeat(c_d.ravel(), A))
            rows.append(mr.ravel())
            cols.append(base + np.tile(np.arange(n), 4))
            vals.append(c_x.ravel())
            rl.append(np.full(4 * n, -np.inf))
            ru.append(rhs.ravel())
            r0 += 4 * n
            gj = g.R if o == 0 else g.C[o - 1]
            rew = np.einsum("sat,sat->sa", kernels[j], gj)
            rew[g.term] = 0.0
            if o == 0:  # t - r.x_0 <= 0 (for every kernel of the value)
                rows.append(np.full(n + 1, r0))
                cols.append(np.append(base + np.arange(n), N - 1))
                vals.append(np.append(-rew.ravel(), 1.0))
                ru.append(np.zeros(1))
            else:  # c_k.x_k <= d_k
                rows.append(np.full(n, r0))
                cols.append(base + np.arange(n))
                vals.append(rew.ravel())
                ru.append(np.array([g.d_bound[o - 1]]))
            rl.append(np.full(1, -np.inf))
            r0 += 1
        Amat = sp.csc_array((np.concatenate(vals), (np.concatenate(rows),
                                                     np.concatenate(cols))),
                            shape=(r0, N))
        Amat.sum_duplicates()
        clo = np.concatenate([l, np.zeros(n * m), [-2.0 * g.scale]])
        chi = np.concatenate([u, *xb_hi, [2.0 * g.scale]])
        cost = np.zeros(N)
        cost[-1] = -1.0
        return Amat, np.concatenate(rl), np.concatenate(ru), clo, chi, cost

    def bound(self, lo, hi, kernels, dlo, dhi, basis=None, objectives=None):
        r"""A certified upper bound on the robust-feasible optimum of one box (S, A).

        ``kernels`` (1 + K, S, A, S): one kernel of the set per objective (value, then
        each cost); ``dlo``, ``dhi`` (1 + K, S): certified occupancy intervals of the
        box's policies under them; ``basis``: a basis to start from (of the parent).
        ``basis`` is a pair of int8 arrays (the status of every column and row, as
        HiGHS numbers them); one of another shape is ignored.  ``objectives`` (m,): the
        objective of each kernel (0 the value, k the cost k; several kernels of one
        objective are each a valid relaxation: the value is at most the smallest of its
        kernels' values, and every kernel's cost must meet the budget).  After the call
        :attr:`last` holds the LP's policy (S, A), or None.  Returns (bound, basis); the
        bound is ``inf`` when the solver gives no duals.  The solver stops at the game's
        deadline (duals from a cut run still give a certified bound, or none).
        """
        import time

        import highspy

        self.last = None
        if self.game.late():
            return np.inf, basis

        self.last = None
        Amat, rl, ru, clo, chi, cost = self.matrix(lo, hi, kernels, dlo, dhi, objectives)
        if basis is not None and (basis[0].size != cost.size or basis[1].size != rl.size):
            basis = None
        h = self._highs()
        h.clearModel()
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = cost.size, Amat.shape[0]
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, clo, chi
        lp.row_lower_, lp.row_upper_ = rl, ru
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = Amat.indptr
        lp.a_matrix_.index_ = Amat.indices
        lp.a_matrix_.value_ = Amat.data
        h.passModel(lp)
        if basis is not None:
            b = highspy.HighsBasis()
            status = list(highspy.HighsBasisStatus.__members__.values())
            status = [dict((int(x), x) for x in status)[i] for i in range(len(status))]
            b.col_status = [status[v] for v in basis[0].tolist()]
            b.row_status = [status[v] for v in basis[1].tolist()]
            b.valid = True
            h.setBasis(b)
        if self.game.deadline is not None:
            h.setOptionValue("time_limit",
                             max(self.game.deadline - time.perf_counter(), 1e-3))
        h.run()
        sol = h.getSolution()
        if not sol.dual_valid:
            return np.inf, None
        if sol.value_valid and h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            last = np.asarray(sol.col_value[:self.n], dtype=np.float64).reshape(
                self.game.S, self.game.A)
            if np.isfinite(last).all():
                self.last = last
        y = np.asarray(sol.row_dual, dtype=np.float64)
        y = np.where(np.isneginf(rl), np.minimum(y, 0.0), y)
        y = np.where(np.isposinf(ru), np.maximum(y, 0.0), y)
        rho = cost - Amat.T @ y
        with np.errstate(invalid="ignore"):
            rows = np.minimum(np.where(y > 0, y * rl, np.inf), np.where(y < 0, y * ru, np.inf))
        rows = np.where(y == 0.0, 0.0, rows)
        terms = np.minimum(rho * clo, rho * chi)
        low = float(terms.sum() + rows.sum())
        # the rounding of those two sums (recursive summation: n eps times the sum of
        # the absolute terms) and of the matrix built from the kernels
        n_terms = terms.size + rows.size
        low -= float(n_terms * np.finfo(float).eps * (np.abs(terms).sum() + np.abs(rows).sum()))
        low -= float(self.game.rounding(1.0 + np.abs(y).sum()))
        hb = h.getBasis()
        out = None
        if hb.valid:
            out = (np.fromiter((v.value for v in hb.col_status), np.int8),
                   np.fromiter((v.value for v in hb.row_status), np.int8))
        return -low, out

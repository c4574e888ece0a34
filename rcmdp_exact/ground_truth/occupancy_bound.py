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

**Built once, filled per box.**  The LP's sparsity pattern depends only on S, A and K,
so it is built once (:class:`LPLayout`: the flow rows with
every entry of the kernels, zeros included, which HiGHS drops; the duplicates of the
McCormick rows summed in place); a box only computes the values, in the pattern's order,
and the bounds, and passes the arrays to HiGHS as they are.  :meth:`OccupancyLP.matrix`
builds the same LP from scratch (the reference the tests compare with).  The basis
handed to the children is HiGHS's own object (:class:`LPBasis`: converted to arrays only
when it is pickled, for a Dask worker), because converting a basis status by status
costs about as much as the solve.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["LPBasis", "OccupancyLP"]


class LPBasis:
    """A basis of the LP: HiGHS's own object (set as it is, no conversion), or the status
    of every column and row as int8 arrays (HiGHS's numbers; what a pickle holds).

    ``basis[0]``, ``basis[1]``: the column and row arrays (converted on first use)."""

    __slots__ = ("_arrays", "_highs", "shape")

    def __init__(self, highs=None, arrays=None, shape=None):
        self._highs, self._arrays = highs, arrays
        self.shape = shape if arrays is None else (arrays[0].size, arrays[1].size)

    @staticmethod
    def of(basis):
        """An :class:`LPBasis` from an LPBasis, a pair of int8 arrays or None."""
        if basis is None or isinstance(basis, LPBasis):
            return basis
        return LPBasis(arrays=(np.asarray(basis[0], dtype=np.int8),
                               np.asarray(basis[1], dtype=np.int8)))

    def arrays(self):
        if self._arrays is None:
            self._arrays = (
                np.fromiter((v.value for v in self._highs.col_status), np.int8),
                np.fromiter((v.value for v in self._highs.row_status), np.int8))
        return self._arrays

    def __getitem__(self, i):
        return self.arrays()[i]

    def highs(self):
        """The basis as a ``highspy.HighsBasis``."""
        if self._highs is None:
            import highspy

            table = _status_table()
            b = highspy.HighsBasis()
            b.col_status = [table[v] for v in self._arrays[0].tolist()]
            b.row_status = [table[v] for v in self._arrays[1].tolist()]
            b.valid = True
            self._highs = b
        return self._highs

    def __getstate__(self):
        return {"arrays": self.arrays(), "shape": self.shape}

    def __setstate__(self, state):
        self._highs, self._arrays, self.shape = None, state["arrays"], state["shape"]


def run_highs(h, net, what: str) -> None:
    """``h.run()`` with the time left on the safety net ``net`` (None: no limit) as
    HiGHS's time limit; a run that HiGHS stops at that limit trips the net (``what``
    names the solve in the result's message).  HiGHS compares its ``time_limit`` with
    the run time of the instance summed over all its runs (``getRunTime``), so the
    limit given is that sum plus the time left: otherwise an instance reused for every
    box would stop its LPs long before the net (the bounds then stayed certified, but the
    run was cut by the clock)."""
    import highspy

    left = None if net is None else net.remaining()
    h.setOptionValue("time_limit", np.inf if left is None
                     else h.getRunTime() + max(left, 1e-3))
    h.run()
    if left is not None and h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
        net.trip(what)


def _status_table():
    import highspy

    status = list(highspy.HighsBasisStatus.__members__.values())
    by_int = {int(x): x for x in status}
    return [by_int[i] for i in range(len(status))]


class LPLayout:
    r"""The sparsity pattern (CSC) of the LP of one kernel per objective (``objectives``
    (m,): 0 the value, k the cost k, in order), and where each value of a box goes in
    it.

    Columns: :math:`\pi` (n), then :math:`x_j` (n) per kernel, then t.  Rows: the S
    simplex rows, then per kernel its S flow rows, 4 n McCormick rows and its objective
    row (``t - r^\top x_j \le 0`` for the value, ``c_k^\top x_j \le d_k`` for a cost).
    The values of a box are produced in a fixed order (:meth:`OccupancyLP.values`) and
    summed into the CSC positions by ``pos`` (the McCormick rows' entry on
    :math:`x(s, a)` appears twice)."""

    def __init__(self, S: int, A: int, objectives):
        objectives = np.asarray(objectives, dtype=np.int64)
        n, m = S * A, objectives.size
        self.S, self.A, self.n, self.m = S, A, n, m
        self.objectives = objectives
        self.N = N = n * (1 + m) + 1
        block = S + 4 * n + 1
        self.n_rows = n_rows = S + m * block
        s_of = np.repeat(np.arange(S), A)
        same = s_of[:, None] * A + np.arange(A)[None, :]  # (n, A): the pairs of the state
        r0 = S + block * np.arange(m)  # (m,) first row of each kernel's block
        base = n * (1 + np.arange(m))  # (m,) first column of each kernel's x
        mc = (r0[:, None, None] + S + np.arange(4 * n).reshape(1, 4, n))  # (m, 4, n)
        obj = r0 + S + 4 * n
        self.value_rows = obj[objectives == 0]
        rows = [s_of,
                np.broadcast_to(r0[:, None, None] + np.arange(S)[None, :, None], (m, S, n)),
                mc,
                np.broadcast_to(mc[..., None], (m, 4, n, A)),
                mc,
                np.broadcast_to(obj[:, None], (m, n)),
                self.value_rows]
        cols = [np.arange(n),
                np.broadcast_to(base[:, None, None] + np.arange(n), (m, S, n)),
                np.broadcast_to(np.arange(n), (m, 4, n)),
                np.broadcast_to(base[:, None, None, None] + same[None, None], (m, 4, n, A)),
                np.broadcast_to(base[:, None, None] + np.arange(n), (m, 4, n)),
                base[:, None] + np.arange(n),
                np.full(self.value_rows.size, N - 1)]
        rows = np.concatenate([np.ravel(r) for r in rows])
        cols = np.concatenate([np.ravel(c) for c in cols])
        keys = cols * n_rows + rows
        uniq, self.pos = np.unique(keys, return_inverse=True)
        self.nnz = uniq.size
        self.indices = (uniq % n_rows).astype(np.int32)
        self.col_of = (uniq // n_rows).astype(np.int64)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(self.col_of, minlength=N))]
                                     ).astype(np.int32)
        self.eye = (s_of[None, :] == np.arange(S)[:, None]).astype(np.float64)  # (S, n)
        self.c_x = np.broadcast_to(np.array([-1.0, -1.0, 1.0, 1.0])[:, None], (m, 4, n))
        self.mc_rows = mc.ravel()
        self.cost_rows = obj[objectives > 0]
        self.cost_k = objectives[objectives > 0] - 1
        self.sign = np.where(objectives == 0, -1.0, 1.0)[:, None]  # (m, 1)
        self.n_value = int((objectives == 0).sum())
        self.row_lower = np.full(n_rows, -np.inf)
        self.row_lower[:S] = 1.0
        self.row_upper = np.zeros(n_rows)
        self.row_upper[:S] = 1.0
        self.flow_rows = (r0[:, None] + np.arange(S)).ravel()
        self.cost = np.zeros(N)
        self.cost[-1] = -1.0
        self.integrality = np.zeros(N, dtype=np.int32)  # every column continuous


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
        self._layout = None

    def _highs(self):
        if self.h is None:
            from .._solvers import new_highs

            self.h = new_highs(presolve="off")
        return self.h

    def matrix(self, lo, hi, kernels, dlo, dhi):
        """(A (csc), row lower, row upper, column lower, upper, cost) of one box, built from
        scratch (the reference of :meth:`values`), one kernel per objective in order."""
        g, S, A, n = self.game, self.game.S, self.game.A, self.n
        objectives = np.arange(self.m)
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

    def layout(self) -> LPLayout:
        """The (cached) :class:`LPLayout`, with the rewards of its kernels' objectives."""
        lay = self._layout
        if lay is None:
            g = self.game
            key = tuple(range(self.m))
            lay = LPLayout(g.S, g.A, np.arange(self.m))
            lay.G = np.stack([g.R if o == 0 else g.C[o - 1] for o in key])  # (m, S, A, S)
            lay.sign_m = lay.sign[:, 0].copy()
            lay.rl = lay.row_lower.copy()
            lay.rl[lay.flow_rows] = np.tile(g.p0, lay.m)
            lay.rl.flags.writeable = False  # shared by every box
            lay.ru = lay.row_upper.copy()
            lay.ru[lay.flow_rows] = lay.rl[lay.flow_rows]
            lay.clo = np.concatenate([np.zeros(lay.n * (1 + lay.m)), [-2.0 * g.scale]])
            lay.chi = np.concatenate([np.zeros(lay.n * (1 + lay.m)), [2.0 * g.scale]])
            self._layout = lay
        return lay

    def values(self, lay: LPLayout, lo, hi, kernels, dlo, dhi):
        """(CSC values, row lower, row upper, column lower, upper) of one box in the
        pattern ``lay``: the numbers of :meth:`matrix`, without building it (the values
        by :func:`~rcmdp_exact.ground_truth._compiled.lp_fill`)."""
        from ._compiled import lp_fill

        g, n, m = self.game, lay.n, lay.m
        l = np.ascontiguousarray(lo, dtype=np.float64).ravel()
        u = np.ascontiguousarray(hi, dtype=np.float64).ravel()
        data = np.empty(lay.nnz)
        rhs = np.empty((m, 4, n))
        xhi = np.empty((m, n))
        lp_fill(lay.pos, np.ascontiguousarray(kernels, dtype=np.float64), lay.G, g.term,
                lay.sign_m, l, u, np.ascontiguousarray(dlo, dtype=np.float64),
                np.ascontiguousarray(dhi, dtype=np.float64), g.gamma, lay.n_value, data,
                rhs, xhi)
        rl = lay.rl
        ru = lay.ru.copy()
        ru[lay.mc_rows] = rhs.ravel()
        ru[lay.cost_rows] = g.d_bound[lay.cost_k]
        clo = lay.clo.copy()
        clo[:n] = l
        chi = lay.chi.copy()
        chi[:n] = u
        chi[n:n * (1 + m)] = xhi.ravel()
        return data, rl, ru, clo, chi

    def bound(self, lo, hi, kernels, dlo, dhi, basis=None):
        r"""A certified upper bound on the robust-feasible optimum of one box (S, A).

        ``kernels`` (1 + K, S, A, S): kernels of the set, one per objective (value, then
        each cost); ``dlo``, ``dhi`` (1 + K, S): certified occupancy intervals of the
        box's policies under them; ``basis``: a basis to start from (of the parent), an
        :class:`LPBasis` or a pair of int8 arrays (the status of every column and row,
        as HiGHS numbers them); one of another shape is ignored.  After the call
        :attr:`last` holds the LP's policy (S, A), or None.  Returns (bound, basis: an
        :class:`LPBasis` or None); the bound is ``inf`` when the solver gives no duals.
        HiGHS is given the time left on the game's safety net, if any (duals from a run
        cut there still give a certified bound, or none; the net then records it).
        """
        import highspy

        self.last = None
        if self.game.late():
            return np.inf, basis
        lay = self.layout()
        data, rl, ru, clo, chi = self.values(lay, lo, hi, kernels, dlo, dhi)
        basis = LPBasis.of(basis)
        if basis is not None and basis.shape != (lay.N, lay.n_rows):
            basis = None
        h = self._highs()
        h.passModel(lay.N, lay.n_rows, lay.nnz, 1, 1, 0.0, lay.cost, clo, chi, rl, ru,
                    lay.indptr[:-1], lay.indices, data, lay.integrality)
        if basis is not None:
            h.setBasis(basis.highs())
        run_highs(h, self.game.net, "the occupancy LP of a box")
        sol = h.getSolution()
        if not sol.dual_valid:
            return np.inf, None
        if sol.value_valid and h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            last = np.asarray(sol.col_value[:self.n], dtype=np.float64).reshape(
                self.game.S, self.game.A)
            if np.isfinite(last).all():
                self.last = last
        y = np.asarray(sol.row_dual, dtype=np.float64)
        aty = np.bincount(lay.col_of, weights=data * y[lay.indices], minlength=lay.N)
        low = self.certify(y, lay.cost - aty, rl, ru, clo, chi)
        hb = h.getBasis()
        out = LPBasis(highs=hb, shape=(lay.N, lay.n_rows)) if hb.valid else None
        return -low, out

    def certify(self, y, rho, rl, ru, clo, chi) -> float:
        r"""The weak-duality lower bound on :math:`\min c^\top z` from row multipliers y
        (the sign of each inequality imposed) and reduced costs :math:`\rho = c - A^\top
        y` (module docstring), less the rounding of its sums and of the matrix."""
        y = np.where(np.isneginf(rl), np.minimum(y, 0.0), y)
        y = np.where(np.isposinf(ru), np.maximum(y, 0.0), y)
        # a positive multiplier meets a finite lower bound, a negative one a finite upper
        with np.errstate(invalid="ignore"):
            rows = np.where(y > 0, y * rl, np.where(y < 0, y * ru, 0.0))
        terms = np.minimum(rho * clo, rho * chi)
        low = float(terms.sum() + rows.sum())
        # the rounding of those two sums (recursive summation: n eps times the sum of
        # the absolute terms) and of the matrix built from the kernels
        n_terms = terms.size + rows.size
        low -= float(n_terms * np.finfo(float).eps * (np.abs(terms).sum() + np.abs(rows).sum()))
        low -= float(self.game.rounding(1.0 + np.abs(y).sum()))
        return low

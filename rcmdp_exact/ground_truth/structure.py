r"""Branching where the bound loses most: pseudocosts of the policy boxes' coordinates.

The branch and bound (:mod:`.boxes`) splits a box on one interval :math:`(s, a)` of its
policy bounds.  Its default rule (:func:`~.boxes.split_boxes`) takes the interval of
largest width times the occupancy of :math:`s` under the box's maximising pair.  On
long chains that rule splits the wrong coordinates: on RiverSwim-6 the start state
(occupancy about 17 of the 20 of the discounted horizon) is split to widths of 1/128
while the bound is lost elsewhere; the occupancy LP's bilinear envelopes are nearly
exact on the top boxes (the loss is the choice of one kernel per objective, and which
coordinate moves the kernels is not visible from the widths).  Splitting, on the top
boxes of a run at 2,000 boxes, each coordinate in turn showed that one (state 1)
takes the bound of the worse child from 0.284 to 0.183 where the rule's choice
(state 4) leaves it at 0.265 (docs/ground_truth.md section 3.9).

**Pseudocosts** (as in mixed-integer branch and bound): every split of a box on
:math:`(s, a)` at width :math:`w` records the loss of bound it bought per unit width,

.. math::

    \frac{U_{\text{parent}} - \max(U_{\text{child}}, \ell)}{w}

for each child (:math:`\ell` the incumbent; a child dropped as infeasible or empty
counts as :math:`U = \ell`), and a box is split on the interval of largest width times
the mean of its coordinate's records.  A coordinate not yet split uses the mean of
all records (or, before any, the default rule's weight), so every coordinate is tried;
every mean is at least :data:`FLOOR` times the largest, so a coordinate whose splits
never paid is still split once the others are narrow enough: every box still shrinks
to a point, and the bracket converges as with the default rule.  The rule changes only
the order of the search, never a bound: any split gives a valid branch and bound.

Deterministic: the records are updated after every round in the order of the
children, the same serially or on a Dask cluster.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOOR", "Pseudocosts", "ValueFormLP", "certified_lp_max", "min_min_values",
           "split_on", "value_intervals"]

#: Every coordinate's mean gain is at least this fraction of the largest.
FLOOR = 0.05


def split_on(lo, hi, s, a):
    """Split boxes (n, S, A) on the intervals (s, a) (n,) at their middle.

    Returns the children (2n, S, A) lo, hi, the index of each child's parent (2n,) and a
    mask of the non-empty children (the first n are the lower halves)."""
    from .boxes import tighten

    n = lo.shape[0]
    rows = np.arange(n)
    mid = 0.5 * (lo[rows, s, a] + hi[rows, s, a])
    lo2, hi2 = np.concatenate([lo, lo]), np.concatenate([hi, hi])
    hi2[rows, s, a] = mid
    lo2[n + rows, s, a] = mid
    lo2, hi2, ok = tighten(lo2, hi2)
    return lo2, hi2, np.concatenate([rows, rows]), ok


class Pseudocosts:
    """The records of the gains per unit width of each coordinate (S, A), and the split
    they choose (see the module docstring)."""

    def __init__(self, S: int, A: int):
        self.sum = np.zeros((S, A))
        self.count = np.zeros((S, A))
        self.pending = None

    def means(self) -> np.ndarray | None:
        """Mean gain per unit width (S, A), None before any record."""
        seen = self.count > 0
        if not seen.any():
            return None
        mean = np.where(seen, self.sum / np.maximum(self.count, 1), 0.0)
        overall = self.sum[seen].sum() / self.count[seen].sum()
        mean = np.where(seen, mean, overall)
        top = mean.max()
        if top <= 0.0:
            return None
        return np.maximum(mean, FLOOR * top)

    def split(self, lo, hi, occ, U):
        """Split boxes (n, S, A) of bounds U (n,); as :func:`~.boxes.split_boxes`."""
        n, S, A = lo.shape
        mean = self.means()
        width = hi - lo
        if mean is None:  # the default rule's weight until a split has paid
            weight = occ + 0.1 * occ.max(axis=1, keepdims=True)
            score = width * weight[..., None]
        else:
            score = width * mean[None]
        flat = np.argmax(score.reshape(n, S * A), axis=1)
        s, a = flat // A, flat % A
        rows = np.arange(n)
        self.pending = (s, a, width[rows, s, a], np.asarray(U, dtype=np.float64).copy())
        return split_on(lo, hi, s, a)

    def update(self, child_U, lower: float):
        """Record the gains of the last :meth:`split` from the children's bounds
        (2n,): -inf for a child dropped or empty, nan for one not bounded (ignored)."""
        if self.pending is None:
            return
        s, a, w, U = self.pending
        self.pending = None
        n = s.size
        cu = np.asarray(child_U, dtype=np.float64).reshape(2, n)
        for half in range(2):
            c = np.minimum(cu[half], U)  # a child is bounded by its parent's bound too
            if np.isfinite(lower):
                c = np.maximum(c, lower)
            good = np.isfinite(c) & (w > 0) & np.isfinite(U)
            if not good.any():
                continue
            gain = np.maximum(U[good] - c[good], 0.0) / w[good]
            np.add.at(self.sum, (s[good], a[good]), gain)
            np.add.at(self.count, (s[good], a[good]), 1.0)


# --------------------------------------------------------------------------------------
# The value-form relaxation: every objective with its own exact adversary
# --------------------------------------------------------------------------------------
def min_min_values(game, g, lo, hi, max_rounds: int = 50):
    r"""Certified lower bounds (J, S) on :math:`\min_{\pi \in B} \min_P V_g(\pi, P)`.

    Howard's iteration for the policy player minimising (each policy's values by the
    engine's adversary, :meth:`RobustGame.adversary`), then the residual bound of one
    more step of the min-min operator subtracted: :math:`w - \|T w - w\|_\infty /
    (1-\gamma)` is below the fixed point whatever the number of rounds.
    """
    pi = game.greedy(-game.inner(g, np.zeros(g.shape[:2]))[0], lo, hi)
    w = None
    for _ in range(max_rounds):
        adv = game.adversary(g, pi, w)
        w = adv.w
        new = game.greedy(-adv.q, lo, hi)
        gain = np.einsum("jsa,jsa->js", pi - new, adv.q)
        pi = new
        if (gain <= 1e-12 * max(1.0, float(np.abs(w).max(initial=0.0)))).all() or game.late():
            break
    q = game.inner(g, w)[0]
    tw = np.einsum("jsa,jsa->js", game.greedy(-q, lo, hi), q)
    err = np.abs(tw - w).max(axis=1) / (1.0 - game.gamma)
    return w - err[:, None] - game.rounding(1.0)


def value_intervals(game, lo, hi):
    r"""Certified intervals (J, 1+K, S) on the robust values :math:`\min_P V_{g_j}(\pi,
    P)` of every policy of the boxes (J, S, A), for the value (:math:`g_0 = r`) and each
    cost (:math:`g_k = -c_k`): above, the box's max-min fixed point
    (:meth:`RobustGame.solve`) plus its residual bound; below, :func:`min_min_values`."""
    J, K = lo.shape[0], game.K
    g = np.broadcast_to(game.objectives(), (J, 1 + K, game.S, game.A, game.S)).reshape(
        J * (1 + K), game.S, game.A, game.S)
    lo2, hi2 = np.repeat(lo, 1 + K, axis=0), np.repeat(hi, 1 + K, axis=0)
    sol = game.solve(g, lo2, hi2)
    high = sol["w"] + sol["err"][:, None] + game.rounding(1.0)
    low = min_min_values(game, g, lo2, hi2)
    low = np.minimum(low, high)
    if game.term.any():
        low[:, game.term] = 0.0
        high[:, game.term] = 0.0
    shape = (J, 1 + K, game.S)
    return low.reshape(shape), high.reshape(shape)


class ValueFormLP:
    r"""An LP relaxation of a policy box in which each objective keeps its **exact**
    adversary (the toolkit's :class:`~rcmdp_exact.L1Ball` only).

    For an objective with reward g (the value r, or :math:`-c_k`) the robust values
    :math:`w = \min_P V_g(\pi, P)` of a policy satisfy :math:`w(s) = \sum_a \pi(a|s)
    h(s,a)`, :math:`h(s, a) = \min_{p \in \mathcal P_{s,a}} p^\top(g(s,a,\cdot) +
    \gamma w)`.  Every :math:`w \le T_\pi w` is below the fixed point, so the relaxation

    .. math::

        w(s) \le \sum_a m(s, a),\quad m(s,a) \ge \pi(a|s) h(s,a) \text{ relaxed by the
        McCormick over-estimators on } [l, u] \times [\underline h, \overline h],

    with :math:`h(s,a) \le` the L1 ball's dual objective :math:`\hat p^\top z - \alpha
    \kappa - \hat p^\top \eta` (:math:`z = g(s,a,\cdot) + \gamma w`, dual feasibility
    :math:`z_t + \nu + \kappa \ge 0` on the support, :math:`\eta_t \ge z_t + \nu -
    \kappa`, :math:`\kappa, \eta \ge 0`: weak duality, exact at the dual optimum), holds
    for :math:`(\pi, w_\pi, h_\pi, \pi h_\pi)` of every policy of the box.  So
    :math:`\max p_0^\top w_0` subject to :math:`-p_0^\top w_k \le d_k` for every cost
    (all objectives sharing :math:`\pi`) bounds the robust-feasible optimum of the box
    from above.  No kernel is fixed: where the cost's adversary switches inside the box
    (RiverSwim's worst-case cost is kinked at the optimum) the relaxation loses only the
    McCormick error :math:`(u-l)(\overline h - \underline h)/4` per pair, second order in
    the box's width, where the occupancy LP with one kernel per objective loses to first
    order.

    The intervals: :math:`w \in [\underline w, \overline w]` (:func:`value_intervals`),
    :math:`h` between the ball's minima at those (monotone in w); the dual variables are
    bounded by a box that contains an optimal dual solution of every row (for a fixed
    :math:`\kappa` the best :math:`\nu = -\min_t z_t - \kappa`, so :math:`\eta_t \le
    \max z - \min z` and the objective falls for :math:`\kappa` beyond half the spread of
    z).  Every column is bounded, so the weak-duality value of the solver's multipliers
    (with their signs imposed) is a certified bound whatever their accuracy, as in
    :class:`~.occupancy_bound.OccupancyLP`.
    """

    def __init__(self, game):
        from ..uncertainty.l1 import L1Ball

        self.game = game
        self.ok = isinstance(game.uset, L1Ball) and not game.s_rect
        self.h = None
        if not self.ok:
            return
        S, A = game.S, game.A
        # the ball's radii through its public rows (the set's protocol for compiled code)
        self.radii = np.asarray(game.uset.rows().radius, dtype=np.float64).reshape(S, A)
        self.support = np.asarray(game.uset.support, dtype=bool).copy()
        self.phat = np.where(self.support, game.nominal, 0.0)
        self.live = ~game.term
        self.pos = self.phat > 0.0

    def _highs(self):
        if self.h is None:
            from .._solvers import new_highs

            self.h = new_highs(presolve="off")
        return self.h

    def matrix(self, lo, hi, wlo, whi):
        """(A (csc), row lower, row upper, column lower, upper, cost) of one box (S, A),
        with value intervals wlo, whi (1 + K, S)."""
        import scipy.sparse as sp

        g, S, A = self.game, self.game.S, self.game.A
        gam = g.gamma
        n = S * A
        G = g.objectives()  # (m, S, A, S)
        m_obj = G.shape[0]
        rows, cols, vals, rl, ru, clo, chi = [], [], [], [], [], [], []
        ncol = [0]

        def new_cols(k, low, high):
            start = ncol[0]
            ncol[0] += k
            clo.append(np.broadcast_to(np.asarray(low, dtype=np.float64), (k,)).copy())
            chi.append(np.broadcast_to(np.asarray(high, dtype=np.float64), (k,)).copy())
            return start + np.arange(k)

        nrow = [0]

        def add_row(idx, coef, upper, lower=-np.inf):
            r = nrow[0]
            nrow[0] += 1
            rows.append(np.full(len(idx), r))
            cols.append(np.asarray(idx))
            vals.append(np.asarray(coef, dtype=np.float64))
            rl.append(lower)
            ru.append(upper)

        l, u = lo.reshape(S, A), hi.reshape(S, A)
        pi_c = new_cols(n, l.ravel(), u.ravel()).reshape(S, A)
        for s in range(S):
            add_row(pi_c[s], np.ones(A), 1.0, 1.0)
        w_cols, slack = [], float(g.rounding(1.0))
        for j in range(m_obj):
            wl, wh = wlo[j], whi[j]
            wc = new_cols(S, wl, wh)
            w_cols.append(wc)
            zlo = G[j] + gam * wl[None, None, :]
            zhi = G[j] + gam * wh[None, None, :]
            big = np.where(self.support, 0.0, np.inf)
            zmin_lo = (zlo + big).min(axis=2)
            zmin_hi = (zhi + big).min(axis=2)
            zmax = (zhi - big).max(axis=2)
            span = np.maximum(zmax - zmin_lo, 0.0) + slack
            # the ball's minima at the ends of the value interval (monotone in w)
            hL = g.inner(G[j][None], wl[None])[0][0] - slack
            hU = g.inner(G[j][None], wh[None])[0][0] + slack
            prods = np.stack([l * hL, l * hU, u * hL, u * hU])
            for s in range(S):
                if not self.live[s]:
                    continue
                mcols = []
                for a in range(A):
                    T = np.flatnonzero(self.support[s, a])
                    P = np.flatnonzero(self.pos[s, a])
                    hc = new_cols(1, hL[s, a], hU[s, a])[0]
                    mc = new_cols(1, prods[:, s, a].min() - slack, prods[:, s, a].max() + slack)[0]
                    mcols.append(mc)
                    nu = new_cols(1, -zmin_hi[s, a] - 0.5 * span[s, a], -zmin_lo[s, a])[0]
                    ka = new_cols(1, 0.0, 0.5 * span[s, a])[0]
                    eta = new_cols(P.size, 0.0, span[s, a])
                    # m <= hU pi + l h - l hU ;  m <= hL pi + u h - u hL
                    add_row([mc, pi_c[s, a], hc], [1.0, -hU[s, a], -l[s, a]], -l[s, a] * hU[s, a])
                    add_row([mc, pi_c[s, a], hc], [1.0, -hL[s, a], -u[s, a]], -u[s, a] * hL[s, a])
                    # h - gam phat.w + alpha kappa + phat.eta <= phat.g
                    ph = self.phat[s, a]
                    add_row(np.concatenate([[hc, ka], wc[P], eta]),
                            np.concatenate([[1.0, self.radii[s, a]], -gam * ph[P], ph[P]]),
                            float(ph @ G[j, s, a]))
                    for t in T:  # -nu - kappa - gam w(t) <= g(t)
                        add_row([nu, ka, wc[t]], [-1.0, -1.0, -gam], float(G[j, s, a, t]))
                    for i, t in enumerate(P):  # nu - kappa - eta_t + gam w(t) <= -g(t)
                        add_row([nu, ka, eta[i], wc[t]], [1.0, -1.0, -1.0, gam],
                                -float(G[j, s, a, t]))
                # w(s) <= sum_a m(s, a)
                add_row(np.concatenate([[wc[s]], mcols]),
                        np.concatenate([[1.0], -np.ones(A)]), 0.0)
            if j > 0:  # -p0.w_k <= d_k
                add_row(wc, -g.p0, float(g.d_bound[j - 1]))
        N = ncol[0]
        Amat = sp.csc_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                            shape=(nrow[0], N))
        Amat.sum_duplicates()
        cost = np.zeros(N)
        cost[w_cols[0]] = -g.p0
        return (Amat, np.array(rl, dtype=np.float64), np.array(ru, dtype=np.float64),
                np.concatenate(clo), np.concatenate(chi), cost)

    def bound(self, lo, hi, wlo, whi) -> float:
        """A certified upper bound on the robust-feasible optimum of one box (S, A)
        (``inf`` when the set is not an L1 ball or the solver gives no duals)."""
        if not self.ok or self.game.late():
            return np.inf
        if (wlo > whi).any():
            return np.inf
        return certified_lp_max(self._highs(), self.game,
                                *self.matrix(lo, hi, wlo, whi))


def certified_lp_max(h, game, Amat, rl, ru, clo, chi, cost) -> float:
    """Solve min cost.z (rows rl <= A z <= ru, clo <= z <= chi, every column bounded) by
    HiGHS and return minus its weak-duality lower bound from the solver's multipliers
    (signs imposed): a certified upper bound on max -cost.z, whatever their accuracy."""
    import highspy

    from .occupancy_bound import run_highs

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
    run_highs(h, game.net, "the value-form LP of a box")
    sol = h.getSolution()
    if not sol.dual_valid:
        return np.inf
    y = np.asarray(sol.row_dual, dtype=np.float64)
    y = np.where(np.isneginf(rl), np.minimum(y, 0.0), y)
    y = np.where(np.isposinf(ru), np.maximum(y, 0.0), y)
    rho = cost - Amat.T @ y
    with np.errstate(invalid="ignore"):
        rows = np.minimum(np.where(y > 0, y * rl, np.inf), np.where(y < 0, y * ru, np.inf))
    rows = np.where(y == 0.0, 0.0, rows)
    terms = np.minimum(rho * clo, rho * chi)
    low = float(terms.sum() + rows.sum())
    n_terms = terms.size + rows.size
    low -= float(n_terms * np.finfo(float).eps * (np.abs(terms).sum() + np.abs(rows).sum()))
    low -= float(game.rounding(1.0 + np.abs(y).sum()))
    return -low if np.isfinite(low) else np.inf

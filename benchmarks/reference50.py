r"""Certified 50-digit references for the benchmarks (issue 44's acceptance).

A reference solution of a policy's value system, :math:`x^* = (I - \gamma P_\pi)^{-1}
r_\pi`, or of the optimal values of an MDP, :math:`v^* = T v^*`, with a rigorous bound
on its own error, computed from the float64 data taken as exact numbers (every float64
is an exact rational), so that the error of any answer (ours, numpy's, QuantEcon's)
is certified to lie in an interval, and "the answer's ``error_bound`` holds" can be
decided without trusting the code under test.

**The reference.**  ``x = hi + lo`` (two float64 arrays, ~32 digits, exact numbers in
mpmath): a float64 solve refined by corrections :math:`x \leftarrow x + \hat
M^{-1} r(x)`, each residual :math:`r(x)` computed as below (not in float64), until
the bound stops halving.

**The residual, certified.**  For the rows :math:`P_i` (a row of the model's P, or
of a given :math:`P_\pi`), the dot :math:`D_i = P_i \cdot x` is split as
:math:`P_i \cdot hi + P_i \cdot lo`.  Each product :math:`P_{it}\, hi_t` is split
exactly into two float64 numbers :math:`p + e` (Dekker's TwoProduct; exact unless
:math:`|p| < 2^{-900}`, where the whole product is counted as an error of at most
:math:`2^{-898}`); the :math:`p` of a row are summed exactly (``math.fsum`` is
correctly rounded: :math:`s_1 = \mathrm{fl}(\sum p)`, then :math:`s_2 =
\mathrm{fl}(\sum p - s_1)`, so :math:`|\sum p - s_1 - s_2| \le 2^{-53} |s_2|`); the
small parts :math:`\sum e` and :math:`P_i \cdot lo` (each about :math:`2^{-53}` of
the whole) are float64 dots, with the classical bound :math:`\gamma_n \sum |\cdot|`
doubled.  Everything after (the weights :math:`\pi(a|s)`, the rewards, gamma, the
differences) is mpmath at 50 digits (169 bits), with a margin of :math:`(4k + 8)
2^{-165}` times the sum of magnitudes for a state of k rows.  So

.. math::

    |r_s - \hat r_s| \le m_s, \qquad \|x - x^*\|_\infty \le
    \frac{\max_s (|\hat r_s| + m_s)}{1 - \beta}, \quad \beta \ge \gamma \max_s
    \sum_a \pi(a|s) \sum_t P_{s a t}

(the row sums by ``math.fsum``, rounded up).  For the optimal values the same dots
give :math:`Q = R + \gamma P v` and the Bellman residual :math:`\max_s |\max_a Q_{sa}
- v_s|`, and :math:`\|v - v^*\|_\infty \le \|Tv - v\|_\infty / (1 - \beta)` (T is a
:math:`\beta`-contraction); the reference policy is improved greedily (policy
iteration in this arithmetic) until no action is certainly better.

**An answer's certified error.**  :math:`D = \max_s |y_s - x_s|` in mpmath (exact
up to the 50-digit rounding); the true error :math:`\max_s |y_s - x^*_s|` lies in
:math:`[D - B, D + B]`, B the reference's bound.  :func:`verdict` says "holds" when
:math:`D + B \le` the answer's bound, "FAILS" when :math:`D - B >` it, else "unknown".

Cost: one residual of a dense 2,000-state, 5-action model (S A S = 20M products) takes
about 5 s; a sparse 20,000-state model with 5 entries per row well under a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import numpy as np
import scipy.sparse as sp

MP = mpmath.MPContext()
MP.dps = 50
#: relative rounding of one mpmath operation at MP.prec = 169 bits, with room
ULP50 = 2.0 ** -165
_U = 2.0 ** -53
_SPLIT = 134217729.0  # 2**27 + 1 (Veltkamp)
_TINY = 2.0 ** -900  # below it a product's low part may underflow: counted as error
_TINY_ERR = 2.0 ** -898
_BLOCK = 256  # dense rows per block


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, e) with a*b = p + e exactly (Dekker), elementwise, for |a|, |b| < 2^995 and
    |a b| >= 2^-900."""
    p = a * b
    c = _SPLIT * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLIT * b
    bh = c - (c - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _row_parts(vals: np.ndarray, hi: np.ndarray, lo: np.ndarray):
    """For rows of values (k, n) against hi/lo (k, n) gathered to them: (p (k, n),
    small (k,), err (k,)): sum_t vals hi + vals lo = sum_t p + small within err, the
    tiny products counted in err."""
    p, e = two_product(vals, hi)
    tiny = (np.abs(p) < _TINY) & (p != 0.0)
    n = vals.shape[1] + 2
    small_lo = vals * lo
    small = e.sum(axis=1) + small_lo.sum(axis=1)
    mag = np.abs(e).sum(axis=1) + np.abs(small_lo).sum(axis=1)
    # (plus an underflow of each product below 2^-1022: at most 2^-1074 each)
    err = 2.0 * n * _U * mag / (1.0 - n * _U) + 2.0 * n * 2.0 ** -1074
    if tiny.any():
        p = np.where(tiny, 0.0, p)
        err = err + _TINY_ERR * tiny.sum(axis=1)
    return p, small, err


def _fsum2(terms: list) -> tuple[float, float, float]:
    """(s1, s2, err): sum(terms) = s1 + s2 within err, exactly rounded sums."""
    s1 = math.fsum(terms)
    terms.append(-s1)
    s2 = math.fsum(terms)
    return s1, s2, _U * abs(s2) + 2.0 ** -1074


def row_dots(P, hi: np.ndarray, lo: np.ndarray):
    """The dots D_i = P_i . (hi + lo) of every row of P ((n, S) dense or CSR), as mpf,
    with float upper bounds on their errors, and the magnitudes sum_t |P_it| |x_t|
    (floats, for the mpmath margins)."""
    n = P.shape[0]
    out, errs = [None] * n, np.empty(n)
    mag = np.empty(n)
    mpf = MP.mpf
    if sp.issparse(P):
        csr = sp.csr_array(P)
        ptr, idx, data = csr.indptr, csr.indices, csr.data
        lens = np.diff(ptr)
        for L in np.unique(lens):  # rows of equal length in one block
            rows = np.flatnonzero(lens == L)
            if L == 0:
                for i in rows:
                    out[i] = mpf(0)
                errs[rows] = 0.0
                mag[rows] = 0.0
                continue
            cols = ptr[rows][:, None] + np.arange(L)[None, :]
            vals, at = data[cols], idx[cols]
            p, small, err = _row_parts(vals, hi[at], lo[at])
            mag[rows] = 2.0 * (np.abs(vals) * np.abs(hi[at])).sum(axis=1)
            for j, i in enumerate(rows):
                s1, s2, e2 = _fsum2(p[j].tolist())
                out[i] = mpf(s1) + mpf(s2) + mpf(small[j])
                errs[i] = err[j] + e2
    else:
        P = np.asarray(P, dtype=np.float64)
        for lo_row in range(0, n, _BLOCK):
            vals = P[lo_row:lo_row + _BLOCK]
            k = vals.shape[0]
            p, small, err = _row_parts(vals, np.broadcast_to(hi, vals.shape),
                                       np.broadcast_to(lo, vals.shape))
            mag[lo_row:lo_row + k] = 2.0 * (np.abs(vals) @ np.abs(hi))
            for j in range(k):
                s1, s2, e2 = _fsum2(p[j].tolist())
                out[lo_row + j] = mpf(s1) + mpf(s2) + mpf(small[j])
                errs[lo_row + j] = err[j] + e2
    return out, errs, mag


def row_sums_upper(P) -> np.ndarray:
    """Upper bounds on the exact row sums of P (correctly rounded by fsum, then up)."""
    if sp.issparse(P):
        csr = sp.csr_array(P)
        s = np.array([math.fsum(csr.data[a:b].tolist())
                      for a, b in zip(csr.indptr[:-1], csr.indptr[1:], strict=True)])
    else:
        s = np.array([math.fsum(row.tolist()) for row in np.asarray(P)])
    return s * (1.0 + 2.0 * _U) + 2.0 ** -1074


@dataclass
class System:
    r"""The value system :math:`x_s = \sum_{i \in s} w_i (R_i + \gamma P_i \cdot x)`:
    rows ``P`` (n, S) (dense or CSR), the state ``owner`` (n,) of each row, weights
    ``w`` (n,) (the policy's probabilities, or 1) and rewards ``R`` (n,), all float64
    taken as exact numbers.  ``beta`` (mpf) bounds gamma times every state's weighted
    row sum from above."""

    P: object
    owner: np.ndarray
    w: np.ndarray
    R: np.ndarray
    gamma: float

    def __post_init__(self):
        S = self.P.shape[1]
        self.S = S
        data = self.P.data if sp.issparse(self.P) else self.P
        if (np.asarray(data) < 0).any() or (self.w < 0).any():
            raise ValueError("the rows and the weights must be >= 0 (the bound "
                             "1 / (1 - beta) needs a nonnegative matrix)")
        sums = row_sums_upper(self.P)
        per_state = [MP.mpf(0)] * S
        for s, wi, si in zip(self.owner.tolist(), self.w.tolist(), sums.tolist(),
                             strict=True):
            per_state[s] += MP.mpf(wi) * MP.mpf(si)
        self.beta = MP.mpf(self.gamma) * max(per_state) * (1 + MP.mpf(ULP50) * 8)
        if self.beta >= 1:
            raise ValueError(f"gamma * max row sum = {float(self.beta)} >= 1: no bound")
        self.rows_of = np.bincount(self.owner, minlength=S)

    def residual(self, hi: np.ndarray, lo: np.ndarray):
        """(r (list of mpf, S), margin (float array, S)): the residual b - x + gamma P x
        at x = hi + lo, within margin of the exact one."""
        D, err, mag = row_dots(self.P, hi, lo)
        if not hasattr(self, "_wR"):  # w R and w gamma of every row, once (mpf)
            g = MP.mpf(self.gamma)
            self._wR = [MP.mpf(wi) * MP.mpf(Ri) for wi, Ri in zip(
                self.w.tolist(), self.R.tolist(), strict=True)]
            self._wg = [MP.mpf(wi) * g for wi in self.w.tolist()]
        acc = [MP.mpf(0)] * self.S
        size = np.zeros(self.S)
        for s, wR, wg, Di in zip(self.owner.tolist(), self._wR, self._wg, D, strict=True):
            acc[s] += wR + wg * Di
        np.add.at(size, self.owner, np.abs(self.w) * (np.abs(self.R) + self.gamma * mag))
        gerr = np.zeros(self.S)
        np.add.at(gerr, self.owner, np.abs(self.w) * err)
        r = [acc[s] - MP.mpf(float(hi[s])) - MP.mpf(float(lo[s])) for s in range(self.S)]
        size += np.abs(hi) + np.abs(lo)
        margin = (self.gamma * gerr * (1 + 1e-12)
                  + (4 * self.rows_of + 8) * ULP50 * size * 1.01 + 1e-300)
        return r, margin

    def bound(self, r, margin) -> mpmath.mpf:
        """max_s (|r_s| + margin_s) / (1 - beta), rounded up."""
        worst = max(abs(rs) + MP.mpf(float(m)) for rs, m in zip(r, margin, strict=True))
        return worst / (1 - self.beta) * (1 + MP.mpf(ULP50) * 8)


def add(hi: np.ndarray, lo: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """hi + lo + d as a new (hi, lo) pair (exact sums in mpmath, then split)."""
    x = [MP.mpf(float(h)) + MP.mpf(float(low)) + MP.mpf(float(dd))
         for h, low, dd in zip(hi, lo, d, strict=True)]
    new_hi = np.array([float(v) for v in x])
    new_lo = np.array([float(v - MP.mpf(float(h))) for v, h in zip(x, new_hi, strict=True)])
    return new_hi, new_lo


@dataclass
class Reference:
    """x = hi + lo with |x - x*| <= bound (mpf) in every state; ``steps`` refinements;
    ``policy`` (the optimal values' reference: the policy whose values these are)."""

    hi: np.ndarray
    lo: np.ndarray
    bound: object
    steps: int
    policy: np.ndarray | None = None

    def error_interval(self, y) -> tuple[float, float]:
        """[lower, upper] (floats, rounded outward) of max_s |y_s - x*_s|."""
        y = np.asarray(y, dtype=np.float64)
        D = max(abs(MP.mpf(float(ys)) - MP.mpf(float(h)) - MP.mpf(float(low)))
                for ys, h, low in zip(y, self.hi, self.lo,
                                      strict=True))
        # (D's own rounding: two operations at 169 bits on numbers up to max|y|, |x|)
        slack = self.bound + MP.mpf(2) ** -160 * (
            float(np.abs(y).max(initial=0.0)) + float(np.abs(self.hi).max(initial=0.0)))
        lower = max(D - slack, MP.mpf(0)) * (1 - MP.mpf(2) ** -50)
        upper = (D + slack) * (1 + MP.mpf(2) ** -50)
        return float(lower), float(upper)


def refine(system: System, solve, x0: np.ndarray, max_steps: int = 6) -> Reference:
    """The reference of ``system`` from a float64 solution x0, refined by corrections
    ``solve(r)`` (an approximate solver of (I - gamma P) d = r in float64) until the
    bound stops halving."""
    hi, lo = np.asarray(x0, dtype=np.float64).copy(), np.zeros_like(x0, dtype=np.float64)
    best = None
    for step in range(max_steps + 1):
        r, margin = system.residual(hi, lo)
        b = system.bound(r, margin)
        if best is not None and b > best.bound / 2:
            if b < best.bound:
                best = Reference(hi, lo, b, step)
            break
        best = Reference(hi, lo, b, step)
        if step == max_steps:
            break
        d = solve(np.array([float(v) for v in r]))
        hi, lo = add(hi, lo, np.asarray(d, dtype=np.float64))
    return best


# ------------------------------------------------------------------ the two references
def _flat(P):
    """P as rows (S*A, S): a CSR array, or the dense (S, A, S) reshaped."""
    if sp.issparse(P):
        return sp.csr_array(P)
    P = np.asarray(P, dtype=np.float64)
    return P.reshape(-1, P.shape[-1]) if P.ndim == 3 else P


def _float_solver(rows, gamma: float):
    """An approximate float64 solver of (I - gamma rows) d = r, rows (S, S)."""
    S = rows.shape[0]
    if sp.issparse(rows):
        import scipy.sparse.linalg as spla

        M = sp.csr_array(sp.eye_array(S, format="csr") - gamma * sp.csr_array(rows))

        def solve(r):
            # (a reachable relative residual: each correction gains ~11 digits)
            d, _ = spla.gmres(M, r, rtol=1e-11, atol=0.0, restart=60, maxiter=20)
            return d
    else:
        from scipy.linalg import lu_factor, lu_solve

        lu = lu_factor(np.eye(S) - gamma * np.asarray(rows))

        def solve(r):
            return lu_solve(lu, r)
    return solve


def policy_reference(P, R, pi, gamma: float, x0=None) -> Reference:
    r"""The certified reference of a policy's values: P the model's (S, A, S) or CSR
    (S*A, S), R (S, A), pi (S, A) the policy's probabilities (the exact system of the
    float data, :math:`P_\pi = \sum_a \pi(a|s) P(s, a)` in exact arithmetic); or P a
    given matrix (S, S), R its right-hand side (S,) and ``pi=None``."""
    rows = _flat(P)
    if pi is None:
        S = rows.shape[0]
        system = System(rows, np.arange(S), np.ones(S), np.asarray(R, np.float64), gamma)
        p_pi = rows
    else:
        pi = np.asarray(pi, dtype=np.float64)
        S, A = pi.shape
        keep = np.flatnonzero(pi.ravel())
        sub = rows[keep]
        system = System(sub, keep // A, pi.ravel()[keep], np.asarray(R).ravel()[keep], gamma)
        Pi = sp.csr_array((pi.ravel()[keep], (keep // A, keep)), shape=(S, S * A))
        p_pi = Pi @ rows
        p_pi = sp.csr_array(p_pi) if sp.issparse(rows) else np.asarray(p_pi)
    solve = _float_solver(p_pi, gamma)
    if x0 is None:
        b = np.zeros(S)
        np.add.at(b, system.owner, system.w * system.R)
        x0 = solve(b)
    return refine(system, solve, x0)


def optimal_reference(P, R, gamma: float, policy, v0=None, max_rounds: int = 6):
    r"""The certified reference of the optimal values :math:`v^*`: the values of
    ``policy`` (S,) (refined as :func:`policy_reference`), improved greedily while an
    action is certainly better; the bound is the Bellman residual's,
    :math:`\|T v - v\|_\infty / (1 - \beta)` with its margins, plus the values' own
    representation (module docstring).  Returns the :class:`Reference` (its
    ``policy`` the last one)."""
    rows = _flat(P)
    R = np.asarray(R, dtype=np.float64)
    S, A = R.shape
    beta = MP.mpf(gamma) * MP.mpf(float(row_sums_upper(rows).max())) * (1 + MP.mpf(ULP50) * 8)
    if beta >= 1:
        raise ValueError(f"gamma * max row sum = {float(beta)} >= 1: no bound")
    policy = np.asarray(policy, dtype=np.int64)
    for _ in range(max_rounds):
        onehot = np.zeros((S, A))
        onehot[np.arange(S), policy] = 1.0
        ref = policy_reference(P, R, onehot, gamma, x0=v0)
        D, err, mag = row_dots(rows, ref.hi, ref.lo)
        g = MP.mpf(gamma)
        Rl = R.ravel().tolist()
        q = [MP.mpf(Rl[i]) + g * D[i] for i in range(S * A)]
        qerr = gamma * err * (1 + 1e-12) + 8 * ULP50 * (np.abs(R.ravel()) + gamma * mag) \
            + 1e-300
        worst, better = MP.mpf(0), []
        for s in range(S):
            v = MP.mpf(float(ref.hi[s])) + MP.mpf(float(ref.lo[s]))
            qs = q[s * A:(s + 1) * A]
            best_a = max(range(A), key=lambda a: qs[a])
            e = max(qerr[s * A:(s + 1) * A])
            worst = max(worst, abs(qs[best_a] - v) + MP.mpf(float(e))
                        + MP.mpf(ULP50) * 8 * abs(v))
            if best_a != policy[s] and qs[best_a] - qs[policy[s]] > 2 * MP.mpf(float(e)):
                better.append((s, best_a))
        if not better:
            break
        for s, a in better:
            policy[s] = a
        v0 = ref.hi
    bound = worst / (1 - beta) * (1 + MP.mpf(ULP50) * 8)
    return Reference(ref.hi, ref.lo, bound, ref.steps, policy.copy())


def verdict(interval: tuple[float, float], bound: float | None) -> str:
    """"holds" (the certified error's upper end <= bound), "FAILS" (its lower end >
    bound) or "unknown" (the reference too loose to decide); "-" without a bound."""
    if bound is None or not math.isfinite(float(bound)):
        return "-"
    if interval[1] <= bound:
        return "holds"
    if interval[0] > bound:
        return "FAILS"
    return "unknown"

r"""Exact evaluation of a fixed stochastic policy.

Discounted (:func:`evaluate`): one sparse LU factorisation of
:math:`I - \gamma P_\pi` gives

.. math::

    V = (I - \gamma P_\pi)^{-1} r_\pi, \qquad C_k = (I - \gamma P_\pi)^{-1} c_{\pi,k},
    \qquad d_\gamma^\top = p_0^\top (I - \gamma P_\pi)^{-1},

Q-values and the Lagrangian :math:`L = p_0^\top V - \lambda^\top (p_0^\top C - d)` of the
paper's Eq. "Lagrange".  With :math:`\gamma = 1` the system is solved on the proper
states (:func:`check_proper`).

Finite horizon, undiscounted (the paper's test metric): :func:`evaluate_finite_horizon`
(and :func:`evaluate_finite_horizon_batch` for many policies and kernels) by backward
induction :math:`W_t = [r_\pi, c_\pi] + \beta P_\pi W_{t+1}`, the rescaled budget
:math:`d' = d\,T / \sum_{i<T} \gamma^i` (:func:`rescaled_budget`) and the penalised
return :math:`V - 500 \sum_k \max(0, C_k - d'_k)` (:func:`penalised_return`, Table 1).
The factorisation, the properness check and the measurements are in
``docs/evaluation.md``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._checks import (
    ImproperPolicyError,
    NotFiniteError,
    as_float_array,
    check_choice,
    check_int,
    check_limit,
    check_real,
    check_shape,
    check_type,
)
from .._result import Result
from ._rounding import ETA, WIDEN, U, gam
from .model import TabularCMDP, check_model
from .model_checks import check_p0, check_policy

__all__ = [
    "PENALTY_WEIGHT",
    "SOLVERS",
    "PolicySystem",
    "check_proper",
    "check_value_scale",
    "evaluate",
    "evaluate_finite_horizon",
    "evaluate_finite_horizon_batch",
    "evaluate_time_dependent",
    "penalised_return",
    "policy_matrix",
    "policy_transition_matrix",
    "rescaled_budget",
]

#: The evaluation weight of the penalised return (the paper's maximal multiplier).
PENALTY_WEIGHT = 500.0


def _check_finite_result(model: TabularCMDP, sol: np.ndarray, what: str) -> None:
    """Raise :class:`NotFiniteError` when ``sol`` (..., 1 + K) overflowed float64.

    Column 0 comes from the rewards, column 1 + k from cost k; the message names the
    input whose sums overflowed and its largest magnitude.
    """
    bad = ~np.isfinite(sol)
    if not bad.any():
        return
    col = int(np.argwhere(bad)[0][-1])
    name, arr = ("R", model.R) if col == 0 else (f"C[..., {col - 1}]", model.C[..., col - 1])
    raise NotFiniteError(
        f"{what} overflowed float64: the sums of {name} (largest magnitude "
        f"{float(np.abs(arr).max()):.3g}) are not finite; rescale {name.split('[')[0]} "
        f"(e.g. divide it by a constant) so that max|{name.split('[')[0]}| / (1 - gamma) "
        f"stays far below 1.8e308"
    )


def check_value_scale(model: TabularCMDP, g: np.ndarray, name: str, horizon=None) -> None:
    r"""Raise :class:`NotFiniteError` unless sums of ``g`` are sure to stay finite.

    Every discounted sum of a reward ``g`` is at most :math:`\max|g| / (1 - \gamma)`
    (:math:`\max|g| \cdot T` over T steps); when that bound passes 1e300 the sums may
    overflow float64, and iterations on them would run on inf and NaN.
    """
    top = float(np.abs(g).max()) if np.size(g) else 0.0
    steps = horizon if horizon is not None else (
        np.inf if model.gamma >= 1.0 else 1.0 / (1.0 - model.gamma))
    if top * steps > 1e300:
        raise NotFiniteError(
            f"the sums of {name} may overflow float64: max|{name}| = {top:.3g} and sums run "
            f"over up to {steps:.3g} (discounted) steps; rescale {name} (e.g. divide it by a "
            f"constant) so that max|{name}| / (1 - gamma) stays far below 1e300"
        )


# ==================================================================== the one linear solve
# Float64 facts: rcmdp_exact.core._rounding (U, ETA, WIDEN, gam).


#: How :class:`PolicySystem` solves a single system: chosen by its measured cost
#: ("auto"), or one of the others ("dense": LAPACK; "lu": SuperLU; "gmres": restarted
#: GMRES; "bicgstab": scipy's BiCGSTAB; "iteration": x <- b + gamma P x).
SOLVERS = ("auto", "dense", "lu", "gmres", "bicgstab", "iteration")
#: The accuracy an iterative solve aims at: an error bound of at most this times the value
#: scale max|b| / (1 - gamma) (values, sup norm), and :data:`ITERATIVE_TOL_T` times
#: sum|b| / (1 - gamma) for a transposed solve (the occupancy, 1 norm), or, where float64
#: cannot certify that (near gamma = 1, long rows), a residual of
#: :data:`ROUNDING_FACTOR` times the rounding of the residual itself.
ITERATIVE_TOL = 1e-12
ITERATIVE_TOL_T = 1e-12
#: The residual an iterative solve may stop at: this many times the bound on the
#: rounding error of its own computation (the floor no solver, exact factorisations
#: included, can be certified below).
ROUNDING_FACTOR = 2.0
#: Inner iterations of one GMRES cycle (its restart length).
GMRES_RESTART = 40
#: A cycle that does not halve the residual has stalled: the iteration stops at once.
STALL_RATIO = 0.5
#: Largest system factorised densely (LAPACK): 8 n^2 bytes of memory (288 MB at 6,000).
DENSE_MAX = 6000
#: :meth:`PolicySystem.updated` reuses a factorisation when at most this fraction of the
#: rows changed (k solves and a k x k system instead of a new factorisation).
UPDATE_RANK = 0.1
#: Up to this many states a system is always solved densely (a dense factorisation
#: costs less than a millisecond, less than setting up anything else).
DENSE_ALWAYS = 300
#: A sparse system whose bandwidth (natural or reverse Cuthill-McKee ordering) is at
#: most this fraction of its size is factorised by SuperLU (its factors stay banded:
#: grids, chains).
LU_BANDWIDTH = 0.1
#: The cost model of the choice, in seconds on the reference machine (one BLAS thread;
#: ``python benchmarks/bench_evaluation.py --calibrate`` measures them): a dense LU costs
#: ``COST_LU * n^3``, a product with a dense matrix ``COST_DENSE * n^2`` and with a sparse
#: one ``COST_SPARSE * nnz``, one GMRES iteration further ``COST_ORTH * n * k`` for its
#: k basis vectors and ``COST_STEP`` of interpreter work; a first guess of
#: ``KRYLOV_GUESS`` iterations decides whether GMRES is tried at all, and the rate it
#: then measures decides whether it goes on.
COST_LU = 2.8e-11
COST_DENSE = 4e-10
COST_SPARSE = 1.5e-9
COST_ORTH = 1e-9
COST_STEP = 4e-5
KRYLOV_GUESS = 15
#: Iterations an iterative solve may take when no factorisation is affordable.
ITERATION_CAP = 20_000


def _factorise(M) -> spla.SuperLU:
    r"""Sparse LU of :math:`M = I - \gamma P_\pi` (or its proper block when gamma = 1).

    M is diagonally dominant by rows (:math:`M_{ss} - \sum_{s' \ne s} |M_{ss'}| =
    1 - \gamma \ge 0`) and, restricted to the proper states with gamma = 1, a
    nonsingular M-matrix; Gaussian elimination needs no pivoting on such matrices and
    its growth factor is at most 2 (Higham, *Accuracy and Stability of Numerical
    Algorithms*, Thm. 9.9).  So the diagonal is kept as pivot (``diag_pivot_thresh=0``,
    symmetric mode) and the ordering is a minimum degree on the structure of
    :math:`M^\top + M` (``MMD_AT_PLUS_A``), which suits the nearly symmetric sparsity
    of grid models: on a 250 x 400 grid with a stochastic policy it has 40% less
    fill-in than COLAMD with partial pivoting and factorises in a fraction of the time.
    A panel size of 4 (SuperLU's default is 10) saves a further 20% on grids.
    """
    return spla.splu(
        sp.csc_matrix(M),
        permc_spec="MMD_AT_PLUS_A",
        diag_pivot_thresh=0.0,
        options={"SymmetricMode": True},
        panel_size=4,
    )


def _banded(P) -> int | None:
    """The bandwidth of the sparse matrix P in its natural order, or after a reverse
    Cuthill-McKee ordering when the graph of P is deep enough to have a narrow band;
    None when it has none (at least ``LU_BANDWIDTH * n``)."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n = P.shape[0]
    limit = LU_BANDWIDTH * n
    full = np.diff(P.indptr) > 0
    starts = P.indptr[:-1][full]
    rows = np.flatnonzero(full)
    band = int(max(np.abs(np.minimum.reduceat(P.indices, starts) - rows).max(initial=0),
                   np.abs(np.maximum.reduceat(P.indices, starts) - rows).max(initial=0)))
    if band <= limit:
        return band
    # a band of width w after any ordering needs a breadth-first search of depth >= n/w
    # from every state: if the states that state 0 reaches in ten steps (random models:
    # nearly all) reach nearly everything, there is none
    seen = np.zeros(n)
    seen[0] = 1.0
    for _ in range(int(1.0 / LU_BANDWIDTH)):
        seen = seen + P @ seen
        if np.count_nonzero(seen) >= 0.9 * n:
            return None
    sym = sp.csr_array(P + P.T, dtype=bool)
    perm = reverse_cuthill_mckee(sp.csr_matrix(sym), symmetric_mode=True)
    rank = np.empty(n, dtype=np.int64)
    rank[perm] = np.arange(n)
    band = int(np.abs(rank[np.repeat(np.arange(n), np.diff(P.indptr))]
                      - rank[P.indices]).max(initial=0))
    return band if band <= limit else None


class PolicySystem:
    r"""The linear system of a policy's values, :math:`(I - \gamma P_\pi) X = B`: the one
    place the toolkit solves it.

    Every exact quantity of a stationary policy under a kernel is a solve of this system
    or of its transpose: values and costs :math:`(I - \gamma P_\pi)^{-1} [r_\pi, c_\pi]`,
    the discounted occupancy :math:`(I - \gamma P_\pi)^{-\top} p_0`, the visits of an
    undiscounted episode (gamma = 1 on the states that terminate).

    Parameters
    ----------
    P_pi : array (S, S) or (J, S, S), or scipy.sparse (S, S)
        The policy's transition matrix (entries >= 0), or a batch of J of them (dense).
    gamma : float
        The discount (1 is allowed on a ``live`` set whose states all terminate).
    live : bool array (S,), optional
        Solve on these states only (the others get 0: terminal states, or the states
        that are not proper with gamma = 1).
    method : {"auto", "dense", "lu", "gmres", "bicgstab", "iteration"}
        How a single system is solved (a batch is always solved by LAPACK).
    matrix_error : float
        A relative bound on the error of the entries of ``P_pi`` against the exact
        matrix the bounds are about (0: ``P_pi`` is exact; :func:`evaluate` passes
        :math:`\gamma_k` when the rows mix k actions).

    Notes
    -----
    **The choice ("auto").**  A batch of dense matrices (the robust engine, the
    gradients) is solved by LAPACK (``numpy.linalg.solve``, batched).  A single system
    of n states with nnz stored entries is solved by the method of least cost in a
    model measured on the reference machine (:data:`COST_LU` and the other ``COST_``
    constants; ``benchmarks/bench_evaluation.py``):

    * up to :data:`DENSE_ALWAYS` states, or with gamma = 1: a direct factorisation;
    * a sparse matrix whose bandwidth (natural order, or reverse Cuthill-McKee) is at
      most :data:`LU_BANDWIDTH` times n: one SuperLU factorisation (:func:`_factorise`),
      its factors stay banded (grids, chains);
    * otherwise GMRES when :data:`KRYLOV_GUESS` of its iterations cost less than a dense
      LU (:math:`n^3` against :math:`\text{nnz} + n k` per iteration: random models,
      whose convergence does not depend on gamma), else a dense LU (LAPACK,
      ``scipy.linalg.lu_factor``, its factors reused for every right-hand side and for
      the transpose).

    GMRES runs in cycles of :data:`GMRES_RESTART` iterations; after each it measures the
    true residual and stops at the target (below), at once when the cycle did not halve
    the residual (a stall), or when the rate it measured says that reaching the target
    would cost more than the factorisation.  It then factorises (dense up to
    :data:`DENSE_MAX` states, else SuperLU) and says so in ``note``; beyond what can be
    factorised it keeps its best answer with that answer's error bound and a warning.

    **The target and the bounds.**  With :math:`\beta \ge \gamma \max_s \sum_{s'}
    P_\pi(s, s')` (rounded up), :math:`\|(I - \gamma P_\pi)^{-1}\|_\infty \le 1/(1 -
    \beta)`, so for any x with residual :math:`r = b - x + \gamma P_\pi x`,

    .. math::

        \|x - x^*\|_\infty \le \frac{\|r\|_\infty}{1 - \beta}, \qquad
        \|y - y^*\|_1 \le \frac{\|r^\top\|_1}{1 - \beta} \quad (\text{transposed}).

    The residual is computed in float64, so the bound adds the rounding of that
    computation, :math:`\epsilon_s = \gamma_{L+4} (|b_s| + |x_s| + \gamma \sigma_s
    \|x\|_\infty)` (L stored entries per row, :math:`\sigma_s` the row sum; the
    transposed system: the column counts and the 1 norm), and the error of the data
    (``matrix_error``, the ``rhs_error`` of :meth:`solve`): ``error_bound`` is
    :math:`\max_s (|\hat r_s| + \epsilon_s + \ldots) / (1 - \beta)`, rounded up.  It
    holds for any solution, by any method.  An iterative solve aims at an error bound of
    :data:`ITERATIVE_TOL` times the value scale :math:`\max|b| / (1 - \gamma)`; where
    float64 cannot certify that (the rounding floor :math:`\epsilon` is of order
    :math:`L u \|x\| \approx L u \max|b| / (1 - \gamma)`, divided again by
    :math:`1 - \beta` in the bound), it stops at a residual of :data:`ROUNDING_FACTOR`
    times :math:`\epsilon`, a target every solver can reach (an exact factorisation's
    residual is itself of the order of :math:`u \|x\|`).

    ``method`` says what solved the system (after a fallback, the factorisation), ``note``
    what happened before (empty when nothing failed), ``iterations`` the iterative
    work, ``error_bound`` the largest bound of the (untransposed) solves so far in the
    sup norm (computed when read, so that loops which never read it pay nothing; a dense
    batch records none, 0; nan-free: infinite when no bound can be given), and
    ``bounds[True]`` the 1-norm bound of the transposed solves (complete once
    ``error_bound`` was read).
    """

    @property
    def error_bound(self) -> float:
        """The largest error bound of the (untransposed) solves so far, in the sup norm."""
        while self._unbounded:  # the direct solves' residuals, computed once, when read
            self._bound(*self._unbounded.pop())
        return self.bounds[False]

    def __init__(self, P_pi, gamma: float, live=None, method: str = "auto", *,
                 matrix_error: float = 0.0):
        self.gamma = check_real(gamma, "gamma", 0.0, 1.0)
        self._rel = check_real(matrix_error, "matrix_error", 0.0,
                               hint="; give a relative error bound of the entries of P_pi")
        self.live = None if live is None else np.asarray(live, dtype=bool)
        if live is not None and self.live.all():
            self.live = None
        self.S = P_pi.shape[-1]
        self.bounds = {False: 0.0, True: 0.0}
        self.note = ""
        self.iterations = 0
        self._unbounded = []  # direct solves (b, x, transpose, rhs_error), bounded when read
        self._lu = self._dense_lu = self._stats = self._base = self._dinv = None
        self.batch = not sp.issparse(P_pi) and np.ndim(P_pi) == 3
        if self.batch:
            P = np.asarray(P_pi, dtype=np.float64)
            if self.live is not None:
                idx = np.flatnonzero(self.live)
                P = P[..., idx[:, None], idx]
            M = -self.gamma * P
            n = M.shape[-1]
            M[..., np.arange(n), np.arange(n)] += 1.0
            self._M, self.n, self.sparse, self.method = M, n, False, "dense"
            return
        if self.live is not None:
            idx = np.flatnonzero(self.live)
            P_pi = (sp.csr_array(P_pi)[idx][:, idx] if sp.issparse(P_pi)
                    else np.asarray(P_pi, dtype=np.float64)[np.ix_(idx, idx)])
        self.n = n = P_pi.shape[0]
        self.sparse = sp.issparse(P_pi)
        if self.sparse:  # (duplicates only make the rounding bounds larger)
            P_pi = sp.csr_array(P_pi, dtype=np.float64)
        else:
            P_pi = np.ascontiguousarray(P_pi, dtype=np.float64)
            if n > DENSE_ALWAYS and method in ("auto", "lu"):
                # a dense matrix that is mostly zeros (a grid stored densely) is solved
                # as the sparse matrix it is; a sample of rows tells
                sample = P_pi[np.linspace(0, n - 1, 32).astype(np.int64)]
                if np.count_nonzero(sample) <= 0.05 * sample.size or method == "lu":
                    P_pi, self.sparse = sp.csr_array(P_pi), True
        self._P = P_pi
        self._cap = ITERATION_CAP
        self.method = self._choose() if method == "auto" else method
        if self.method not in ("dense", "lu") and self.gamma >= 1.0:
            self.method = "lu"  # the iterations' error bound needs gamma < 1
        if self.method in ("dense", "lu"):
            self._direct(self.method)

    # ------------------------------------------------------------------ the choice
    def _choose(self) -> str:
        """The method of least cost (class docstring), and the work cap of GMRES."""
        n = self.n
        if n <= DENSE_ALWAYS or n == 0:
            return "dense" if not self.sparse or n <= DENSE_ALWAYS else "lu"
        if self.gamma >= 1.0:
            return "lu" if self.sparse else "dense"
        if self.sparse and _banded(self._P) is not None:
            return "lu"
        t_direct = COST_LU * float(n) ** 3 if n <= DENSE_MAX else np.inf
        nnz = self._P.nnz if self.sparse else n * n
        t_iter = ((COST_SPARSE if self.sparse else COST_DENSE) * nnz
                  + COST_ORTH * n * GMRES_RESTART + COST_STEP)
        if KRYLOV_GUESS * t_iter >= t_direct:
            return "dense"
        self._t_iter = t_iter
        self._cap = int(min(ITERATION_CAP, max(KRYLOV_GUESS, t_direct / t_iter)))
        return "gmres"

    def _fallback_method(self) -> str | None:
        """The factorisation a failed iterative solve falls back to, if affordable."""
        if self.n <= DENSE_MAX:
            return "dense"
        if self.sparse and _banded(self._P) is not None:
            return "lu"
        return None

    def _direct(self, method: str) -> None:
        """Prepare the factorisation ``method`` ("dense" or "lu")."""
        n, g = self.n, self.gamma
        self.method = method
        if method == "dense":
            M = (self._P.toarray() if self.sparse else self._P) * (-g)
            M.flat[::n + 1] += 1.0
            self._M = M
        else:
            P = self._P if self.sparse else sp.csr_array(self._P)
            M = sp.eye_array(n, format="csr") - (P if g == 1.0 else g * P)
            self._lu = _factorise(M) if n else None

    # ------------------------------------------------------------------ solving
    def solve(self, rhs, transpose: bool = False, *, rhs_error=None, x0=None,
              tol: float | None = None) -> np.ndarray:
        """``X`` with the shape of ``rhs`` ((..., S) or (..., S, m)), zero outside ``live``.

        Dense batches take ``rhs`` with the same leading axis J.  ``rhs_error`` (the shape
        of ``rhs``, optional) bounds the error of ``rhs`` against the exact right-hand side
        the bounds are about; ``x0`` (the shape of the answer) starts an iterative solve;
        ``tol`` replaces :data:`ITERATIVE_TOL` (or :data:`ITERATIVE_TOL_T`) as the
        relative accuracy an iterative solve aims at (a correction needs little).
        """
        if tol is not None:
            tol = check_real(tol, "tol", 0.0, low_open=True,
                             hint=" (the relative accuracy of an iterative solve) or None")
        rhs = np.asarray(rhs, dtype=np.float64)
        vector = rhs.ndim == (self._M.ndim - 1 if self.batch else 1)

        def inner(a):  # (..., n_live, m)
            if a is None:
                return None
            a = np.asarray(a, dtype=np.float64)
            a = a[..., None] if vector else a
            return a[..., self.live, :] if self.live is not None else a

        b, err, start = inner(rhs), inner(rhs_error), inner(x0)
        if self.batch:
            x = np.linalg.solve(np.swapaxes(self._M, -1, -2) if transpose else self._M, b) \
                if self.n else b
        elif self.n == 0:
            x = np.zeros_like(b)
        elif self.method in ("dense", "lu"):
            x = self._solve_direct(b, transpose)
            if self.gamma < 1.0:
                self._unbounded.append((b, x, transpose, err))
        else:
            x = np.empty_like(b)
            for j in range(b.shape[1]):
                col = None if err is None else err[:, j]
                x0j = None if start is None else start[:, j]
                if self.method in ("dense", "lu"):  # an earlier column fell back
                    x[:, j] = self._solve_direct(b[:, j:j + 1], transpose)[:, 0]
                    self._unbounded.append((b[:, j:j + 1], x[:, j:j + 1], transpose,
                                            None if col is None else col[:, None]))
                else:
                    x[:, j] = self._iterate(b[:, j], transpose, x0j, col, tol)
        if self.live is not None:
            out = np.zeros(rhs.shape if not vector else (*rhs.shape, 1))
            out[..., self.live, :] = x
            x = out
        return x[..., 0] if vector else x

    def updated(self, P_pi, changed) -> PolicySystem:
        r"""The system of ``P_pi`` (S, S), whose rows differ from this system's matrix in
        the rows ``changed`` only (a policy that switched the actions of a few states).

        When this system is factorised densely (LAPACK) and few rows changed (at most
        :data:`UPDATE_RANK` of the size), the new system is solved through these factors
        and a correction of rank k = len(changed) (Sherman-Morrison-Woodbury: with
        :math:`M' = M + U D`, U the k columns of the identity of the changed rows and
        D their change, :math:`M'^{-1} b = y - Z (I + D Z)^{-1} D y`, :math:`y = M^{-1}
        b`, :math:`Z = M^{-1} U`; k solves instead of a new factorisation: policy
        iteration changes few states once it is near the optimum); otherwise it is a new
        system.  Either way it is a :class:`PolicySystem` of ``P_pi``, its error bounds
        computed from its own residuals."""
        base = self if self._base is None else self._base
        P_pi = np.asarray(P_pi, dtype=np.float64) if not sp.issparse(P_pi) else P_pi
        rows = np.asarray(changed, dtype=np.int64)
        if self._base is not None:  # against the factorised system: the rows that differ
            rows = np.union1d(rows, self._changed)
        ok = (not base.batch and base.live is None and not base.sparse
              and base.method == "dense" and base._dense_lu is not None
              and not sp.issparse(P_pi) and P_pi.shape == base._P.shape
              and rows.size <= UPDATE_RANK * base.n)
        if ok and rows.size:
            rows = rows[np.any(P_pi[rows] != base._P[rows], axis=1)]
        if not ok:
            return PolicySystem(P_pi, self.gamma)
        new = PolicySystem.__new__(PolicySystem)
        new.__dict__.update(gamma=base.gamma, live=None, S=base.S, bounds={False: 0.0,
                            True: 0.0}, note="", iterations=0, _unbounded=[], _rel=0.0,
                            _lu=None, _dense_lu=None, _stats=None, _dinv=None,
                            batch=False, n=base.n,
                            sparse=False, _P=P_pi, _cap=base._cap, method="dense",
                            _M=None, _base=base, _changed=rows,
                            _D=(base._P[rows] - P_pi[rows]) * self.gamma, _Z=None, _W=None)
        return new

    def _woodbury(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        """A solve of an :meth:`updated` system through its base's factors."""
        base, R, D = self._base, self._changed, self._D
        y = base._solve_direct(b, transpose)
        if R.size == 0:
            return y
        k = R.size
        if not transpose:
            if self._Z is None:
                U = np.zeros((self.n, k))
                U[R, np.arange(k)] = 1.0
                Z = base._solve_direct(U, False)
                self._Z = (Z, np.eye(k) + D @ Z)
            Z, C = self._Z
            return y - Z @ np.linalg.solve(C, D @ y)
        if self._W is None:
            W = base._solve_direct(np.ascontiguousarray(D.T), True)
            self._W = (W, np.eye(k) + W[R])
        W, C = self._W
        return y - W @ np.linalg.solve(C, y[R])

    def _solve_direct(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        if self._base is not None:
            return self._woodbury(b, transpose)
        if self.method == "lu":
            return self._lu.solve(b, trans="T" if transpose else "N")
        if self._dense_lu is None and self.n <= 64:  # a tiny system: one LAPACK call
            return np.linalg.solve(self._M.T if transpose else self._M, b)
        from scipy.linalg.lapack import dgetrf, dgetrs

        if self._dense_lu is None:
            # LAPACK factorises the Fortran-ordered M^T, the C-ordered M seen transposed,
            # in place (no copy); M x = b is then the transposed solve of those factors
            lu, piv, info = dgetrf(self._M.T, overwrite_a=True)
            if info != 0:
                raise np.linalg.LinAlgError(f"singular system (LAPACK getrf info {info})")
            self._dense_lu, self._M = (lu, piv), None
        lu, piv = self._dense_lu
        x, info = dgetrs(lu, piv, b, trans=0 if transpose else 1)
        return x

    # ------------------------------------------------------------------ error bounds
    def _statistics(self):
        """(sigma (n,) upper bounds of the exact row sums, L, Lc, beta), computed once."""
        if self._stats is None:
            P = self._P
            if self.sparse:
                counts = np.diff(P.indptr)
                L = int(counts.max(initial=0))
                Lc = int(np.bincount(P.indices, minlength=1).max(initial=0))
                sums = np.asarray(P.sum(axis=1)).ravel()
            else:
                L = Lc = self.n
                sums = P.sum(axis=1)
            sigma = sums * (1.0 + gam(L + 1)) * (1.0 + self._rel) * (1.0 + 2.0 * U)
            beta = self.gamma * float(sigma.max(initial=0.0)) * (1.0 + 2.0 * U)
            self._stats = (sigma, L, Lc, beta)
        return self._stats

    def _residual(self, b: np.ndarray, x: np.ndarray | None, transpose: bool, err=None):
        """Per column of x (n, m): (the norm of the computed residual, the bound on its
        rounding and on the data's error, the bound on the exact residual's norm): the sup
        norm, or the 1 norm for the transposed system.  ``x=None`` stands for x = 0 (the
        residual is b, no product)."""
        sigma, L, Lc, _ = self._statistics()
        g = self.gamma
        P = self._P
        with np.errstate(over="ignore", invalid="ignore"):
            if x is None:
                x = np.zeros_like(b)
                r = np.abs(b)
            else:
                r = np.abs((b - x) + g * ((P.T if transpose else P) @ x))
            ax = np.abs(x)
            if transpose:
                x1 = ax.sum(axis=0)
                smax = float(sigma.max(initial=0.0))
                floor = (gam(Lc + 4) * (np.abs(b).sum(axis=0) + x1 + g * smax * x1)
                         + self._rel * g * smax * x1 + 8.0 * (Lc + 4) * self.n * ETA)
                if err is not None:
                    floor = floor + np.abs(err).sum(axis=0)
                floor = floor * (1.0 + gam(self.n + 2))
                res = r.sum(axis=0) * (1.0 + gam(self.n + 2))
                return res, floor, res + floor
            xmax = ax.max(axis=0)
            eps = (gam(L + 4) * (np.abs(b) + ax + g * sigma[:, None] * xmax)
                   + self._rel * g * sigma[:, None] * xmax + 8.0 * (L + 4) * ETA)
            if err is not None:
                eps = eps + np.abs(err)
            return r.max(axis=0), eps.max(axis=0), (r + eps).max(axis=0)

    def _bound(self, b: np.ndarray, x: np.ndarray, transpose: bool, err=None,
               record: bool = True) -> float:
        """The error bound of a solution x (n,) or (n, m) (class docstring); recorded (the
        error bound of the result) unless ``record`` is False."""
        x2 = x.reshape(x.shape[0], -1)
        b2 = b.reshape(b.shape[0], -1)
        e2 = None if err is None else err.reshape(b2.shape)
        worst = float(np.max(self._residual(b2, x2, transpose, e2)[2], initial=0.0))
        return self._record(worst, transpose, record)

    def _record(self, worst: float, transpose: bool, record: bool = True) -> float:
        """The error bound of a solution whose exact residual has norm at most ``worst``
        (recorded unless ``record`` is False)."""
        beta = self._statistics()[3]
        bound = (worst / (1.0 - beta) * WIDEN if beta < 1.0 and np.isfinite(worst)
                 else np.inf)
        if record:
            self.bounds[transpose] = max(self.bounds[transpose], bound)
        return bound

    # ------------------------------------------------------------------ iterations
    def _iterate(self, b: np.ndarray, transpose: bool, x0=None, err=None,
                 rel: float | None = None) -> np.ndarray:
        """One right-hand side (n,) by the iterative method, in cycles, until its bound
        meets the target (class docstring); a stall or a measured rate too slow falls
        back to a factorisation, which then serves every later solve."""
        P = self._P
        g = self.gamma
        if self._dinv is None:
            self._dinv = 1.0 / (1.0 - g * (P.diagonal() if self.sparse else np.diagonal(P)))
        dinv = self._dinv
        op = P.T if transpose else P
        from ._compiled import gmres_cycle, minus_gamma_csr, minus_gamma_csr_t, operands

        arrays = operands(P)
        if self.sparse:  # one compiled call per product (scipy's dispatch costs more)
            kernel = minus_gamma_csr_t if transpose else minus_gamma_csr

            def matvec(v):
                out = np.empty_like(v)
                kernel(*arrays[1:], g, v, out)
                return out
        else:
            def matvec(v):
                return v - g * (op @ v)

        e2 = None if err is None else err.reshape(-1, 1)
        norm_b = float(np.abs(b).sum() if transpose else np.abs(b).max(initial=0.0))
        if rel is None:
            rel = ITERATIVE_TOL_T if transpose else ITERATIVE_TOL
        tol = rel * norm_b
        x = np.zeros(self.n) if x0 is None else np.array(x0, dtype=np.float64)

        def check(x):  # (the residual, the target, the bound on the exact residual)
            res, floor, worst = self._residual(b[:, None], None if x is None else
                                               x[:, None], transpose, e2)
            return (float(res[0]), max(tol, ROUNDING_FACTOR * float(floor[0])),
                    float(worst[0]))

        res, target, worst = check(None if x0 is None else x)
        best, best_res = x, res
        spent, why = 0, ""
        # done when the bound on the exact residual (the computed one and its rounding)
        # meets the target, not the computed residual alone: a residual just under the
        # target beside a rounding floor near half of it left the error bound up to 1.5
        # times the accuracy the target stands for
        while worst > target:
            # the solvers are asked for half the target: a residual that lands just
            # under the target would leave the bound (the residual, its rounding, over
            # 1 - beta) just above the accuracy the target stands for
            aim = 0.5 * (target / np.sqrt(self.n) if transpose else target)
            if self.method == "gmres":
                inner = aim
                # a cycle no longer than the work the choice allows (at least
                # KRYLOV_GUESS): a system that converges slowly is handed to the
                # factorisation after about the factorisation's cost
                m = min(GMRES_RESTART, max(KRYLOV_GUESS, self._cap - spent))
                new, k = gmres_cycle(*arrays, self.sparse, transpose, g, b, x, dinv, m,
                                     inner)
            elif self.method == "bicgstab":
                jac = spla.LinearOperator((self.n, self.n), matvec=lambda v: dinv * v,
                                          dtype=np.float64)
                op_M = spla.LinearOperator((self.n, self.n), matvec=matvec, dtype=np.float64)
                new, _ = spla.bicgstab(op_M, b, x0=x, rtol=0.0, atol=aim, M=jac,
                                      maxiter=GMRES_RESTART)
                k = GMRES_RESTART
            else:  # "iteration": x <- b + gamma P x
                new = x
                for _ in range(GMRES_RESTART):
                    new = b + g * (op @ new)
                k = GMRES_RESTART
            spent += k
            self.iterations += k
            if not np.all(np.isfinite(new)):
                why = "its iterate overflowed"
                break
            new_res, new_target, new_worst = check(new)
            if new_res < best_res:
                best, best_res = new, new_res
            if new_worst <= new_target:
                x, res, target, worst = new, new_res, new_target, new_worst
                break
            if k == 0 or new_res > STALL_RATIO * res:
                why = (f"it stalled (a cycle of {k} iterations took the residual from "
                       f"{res:.2e} to {new_res:.2e})")
                x, res, worst = new, new_res, new_worst
                break
            rate = (new_res / res) ** (1.0 / k)
            ahead = np.log(new_target / new_res) / np.log(rate)
            x, res, target, worst = new, new_res, new_target, new_worst
            if self.method == "gmres" and spent + ahead > self._cap:
                why = (f"at its measured rate ({rate:.3f} per iteration) it would need "
                       f"{spent + ahead:.0f} iterations, more than a factorisation costs")
                break
            if spent >= self._cap:
                why = f"it reached its work cap of {self._cap} iterations"
                break
        if worst <= target:
            self._record(worst, transpose)
            return x
        name = self.method
        fallback = self._fallback_method()
        text = (f"{name} stopped at a residual of {best_res:.2e} (target {target:.2e}) after "
                f"{spent} iterations: {why}")
        if fallback is None:
            self.note = f"{text}; the answer is kept with its error bound"
            bound = self._bound(b, best, transpose, err)
            warnings.warn(f"PolicySystem: {self.note} ({bound:.2e}); try method='lu'",
                          RuntimeWarning, stacklevel=4)
            return best
        kind = "dense LAPACK" if fallback == "dense" else "sparse"
        self.note = f"{text}; solved by the {kind} LU"
        self._direct(fallback)
        x = self._solve_direct(b[:, None], transpose)
        self._unbounded.append((b[:, None], x, transpose, e2))
        return x[:, 0]


def policy_matrix(P: np.ndarray, pi: np.ndarray) -> np.ndarray:
    r"""Dense :math:`P_\pi(s, s') = \sum_a \pi(a|s) P(s'|s, a)` for a kernel (..., S, A, S)
    and a policy (..., S, A) (batched over the leading axes)."""
    return np.einsum("...sa,...sat->...st", pi, P)


def policy_values(P: np.ndarray, g: np.ndarray, pi: np.ndarray, gamma: float,
                  terminal: np.ndarray) -> np.ndarray:
    r"""Values :math:`W = (I - \gamma P_\pi)^{-1} g_\pi` of a reward per transition.

    Batched and dense: kernels P and rewards g (J, S, A, S), policies pi (J, S, A);
    :math:`g_\pi(s) = \sum_a \pi(a|s) \sum_{s'} P(s'|s,a) g(s,a,s')`, zero in the
    ``terminal`` states (S,) bool.  Returns (J, S).
    """
    r_sa = np.einsum("jsat,jsat->jsa", P, g)
    r_sa[:, terminal] = 0.0
    r_pi = np.einsum("jsa,jsa->js", pi, r_sa)
    return PolicySystem(policy_matrix(P, pi), gamma).solve(r_pi)


def policy_transition_matrix(model: TabularCMDP, policy) -> sp.csr_array:
    """Sparse :math:`P_\\pi` (S, S) with :math:`P_\\pi(s, s') = \\sum_a \\pi(a|s) P(s'|s,a)`."""
    check_model(model)
    pi = check_policy(policy, model.n_states, model.n_actions)
    return _p_pi(model, pi)


def _p_pi(model: TabularCMDP, pi: np.ndarray) -> sp.csr_array:
    """:math:`P_\\pi = \\Pi P` with :math:`\\Pi` (S, S*A) the sparse policy matrix.

    Only the actions with :math:`\\pi(a|s) > 0` enter, so a deterministic policy
    costs one row of P per state.
    """
    S, A = model.n_states, model.n_actions
    flat = pi.ravel()
    cols = np.flatnonzero(flat)
    Pi = sp.csr_array((flat[cols], (cols // A, cols)), shape=(S, S * A))
    return sp.csr_array(Pi @ model.P_sparse)


def _rhs(model: TabularCMDP, pi: np.ndarray, magnitude: bool = False) -> np.ndarray:
    """(S, 1 + K): column 0 is :math:`r_\\pi`, columns 1.. are :math:`c_{\\pi,k}` (with
    ``magnitude``, the same sums of :math:`|r|` and :math:`|c|`)."""
    S, K = model.n_states, model.n_constraints
    r, c = (np.abs(model.r), np.abs(model.c)) if magnitude else (model.r, model.c)
    rhs = np.empty((S, 1 + K))
    rhs[:, 0] = np.einsum("sa,sa->s", pi, r)
    rhs[:, 1:] = np.einsum("sa,sak->sk", pi, c)
    return rhs


def _dense_p_pi(P: np.ndarray, pi: np.ndarray, one_hot: bool) -> np.ndarray:
    """Dense :math:`P_\\pi` (S, S) of a dense kernel: the rows of the chosen actions for a
    one-hot policy (a copy, exact), else :func:`policy_matrix`."""
    if one_hot:
        return P[np.arange(P.shape[0]), pi.argmax(axis=1)]
    return policy_matrix(P, pi)


#: Message of :func:`check_proper` (fields ``what``, ``name`` of the state, ``n`` states).
IMPROPER_MESSAGE = (
    "{what} has no discount and no horizon, but state {name} is reachable from p0 under "
    "the policy and never reaches a terminal state, so the undiscounted sums diverge "
    "({n} such states); give a horizon (evaluate_finite_horizon), use gamma < 1, or "
    "change the policy"
)


def check_proper(model: TabularCMDP, P_pi: sp.sparray, what: str,
                 message: str = IMPROPER_MESSAGE, p0=None) -> np.ndarray:
    """Check an undiscounted evaluation and return the mask of proper states.

    A state is *proper* under the policy when every path from it reaches a terminal
    state (then it is absorbed with probability 1 and the undiscounted sums converge).
    On the support graph :math:`G` of :math:`P_\\pi` (edge :math:`s \\to s'` when
    :math:`P_\\pi(s, s') > 0`):

    * ``good`` = terminal states and their ancestors (they *can* reach a terminal);
    * ``bad`` = the other states (they never reach one);
    * proper = neither bad nor an ancestor of a bad state.

    All three are properties of the strongly connected components of :math:`G` (states
    of one component reach each other), so the reachability questions are answered by
    networkx on the condensation of :math:`G` (one node per component, found by
    ``scipy.sparse.csgraph``), with a virtual source linked to the components of the
    start states and the terminal states linked to a virtual sink.  A stochastic
    policy on a grid has a few components, a deterministic one up to S.

    Parameters
    ----------
    model : TabularCMDP
    P_pi : sparse (S, S)
        The policy's transition matrix (:func:`policy_transition_matrix`).
    what : str
        Name of the calling evaluation, used in the message.
    message : str
        Template of the error message, with fields ``what``, ``name`` (the first
        offending state and its label) and ``n`` (how many there are).
    p0 : array (S,), optional
        The start distribution whose reachable states must be proper (default: the
        model's).

    Returns
    -------
    ndarray of bool (S,)
        Proper states (terminal states included).

    Raises
    ------
    ImproperPolicyError
        If a state reachable from ``p0`` is not proper; the message names a state
        reachable from ``p0`` that never reaches a terminal state.
    """
    import networkx as nx
    from scipy.sparse.csgraph import connected_components

    S = model.n_states
    csr = sp.csr_array(P_pi)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    n_comp, comp = connected_components(csr, directed=True, connection="strong")
    comp = comp.astype(np.int64)  # pair codes below reach n_comp**2
    rows = comp[np.repeat(np.arange(S), np.diff(csr.indptr))]
    cols = comp[csr.indices]
    keep = rows != cols  # edges inside a component do not change reachability
    pairs = np.unique(rows[keep] * n_comp + cols[keep])
    G = nx.DiGraph()
    G.add_nodes_from(range(n_comp))
    G.add_edges_from(zip((pairs // n_comp).tolist(), (pairs % n_comp).tolist(), strict=True))
    source, sink = -1, -2  # virtual nodes: source -> start states, terminals -> sink
    G.add_nodes_from((source, sink))
    start = model.p0 if p0 is None else p0
    G.add_edges_from((source, int(c)) for c in np.unique(comp[start > 0]))
    G.add_edges_from((int(c), sink) for c in np.unique(comp[model.terminal]))

    def members(nodes) -> np.ndarray:
        """Mask (S,) of the states in the given components (virtual nodes ignored)."""
        mask = np.zeros(n_comp, dtype=bool)
        mask[[c for c in nodes if c >= 0]] = True
        return mask[comp]

    good = members(nx.ancestors(G, sink))
    if good.all():
        return good
    bad_reached = np.flatnonzero(members(nx.descendants(G, source)) & ~good)
    if bad_reached.size:
        s = int(bad_reached[0])
        lab = model.state_labels
        name = f"{s}" if lab is None else f"{s} ({lab[s]})"
        raise ImproperPolicyError(message.format(what=what, name=name, n=bad_reached.size))
    G.remove_edges_from([(int(c), sink) for c in np.unique(comp[model.terminal])])
    G.add_edges_from((int(c), sink) for c in np.unique(comp[~good]))
    return ~(members(nx.ancestors(G, sink)) | ~good)


def evaluate(model: TabularCMDP, policy, lam=None, *, p0=None, method: str = "auto",
             check: bool = True) -> Result:
    r"""Exact discounted evaluation of a stochastic policy (LAPACK on a small model, one
    sparse LU, or a Krylov solver when the factors would fill in).

    Solves :math:`(I - \gamma P_\pi)\,[V, C_1, \dots, C_K] = [r_\pi, c_{\pi,1}, \dots,
    c_{\pi,K}]` with one factorisation, then
    :math:`Q = r + \gamma P V`, :math:`Q^c_k = c_k + \gamma P C_k` and the occupancy
    :math:`d_\gamma = (I - \gamma P_\pi)^{-\top} p_0` from the same factors.  The dense
    ``model.P`` of a model stored sparsely is never formed.

    Parameters
    ----------
    model : TabularCMDP
    policy : array (S, A) of action probabilities, or int array (S,) of actions
    lam : array (K,) or float, optional
        Lagrange multipliers >= 0 (default 0).
    p0 : array (S,) or int, optional
        The start distribution (or a start state) of ``value``, ``costs``,
        ``lagrangian_p0`` and ``occupancy``, in place of the model's ``p0`` (e.g. the
        :math:`\mu` of the performance difference lemma).  The values per state
        (``v``, ``c``, ``q``, ...) do not depend on it.
    method : {"auto", "lu", "bicgstab", "gmres", "iteration"}
        How :math:`I - \gamma P_\pi` is solved (:class:`PolicySystem`): "auto" solves a
        model stored densely with at most :data:`EVALUATE_DENSE_LIMIT` (200) states and
        gamma < 1 by LAPACK (``solver`` "dense"; the sparse set-up would cost more than
        the solve), factorises the others when the factors stay sparse (up to 1,000
        states, banded models such as grids, gamma = 1) and otherwise iterates (BiCGSTAB,
        then GMRES) to an error bound of 1e-12 of the value scale.
    check : bool
        Validate the inputs (default).  Internal callers pass ``False`` with a valid
        model, an (S, A) float policy and a (K,) multiplier array.

    Returns
    -------
    Result
        ``v`` (S,), ``c`` (S, K), ``lagrangian`` (S,) = v - c @ lam, ``q`` (S, A),
        ``qc`` (S, A, K), ``q_lagrangian`` (S, A) = q - qc @ lam, ``occupancy`` (S,)
        (discounted visits from p0, summing to 1/(1-gamma); with gamma = 1 the expected
        visits before absorption, 0 on terminal states), ``value`` = p0.v, ``costs``
        (K,) = p0.c, ``lagrangian_p0`` = value - lam.(cost - d) (the paper's
        Eq. (Lagrange)), ``advantage`` (S, A) = q - v (:math:`A(s, a) = Q(s, a) -
        V(s)`, whose policy average is 0 in every state), ``advantage_lagrangian``
        (S, A) = q_lagrangian - lagrangian, ``p0`` (S,) the start distribution used,
        ``policy`` (S, A) and ``lam`` (K,); ``solver`` (the method
        used) and ``error_bound`` (a bound on the error of ``v`` and ``c`` in the sup norm,
        from the residual: :math:`\|r\|_\infty / (1 - \gamma)`; nan with gamma = 1).
        With gamma = 1, states
        that p0 never reaches and that do not surely reach a terminal state have
        ``nan`` values (and so have the Q-values of actions that may lead to them).

    Raises
    ------
    InputError
        On an invalid policy or multipliers.
    ImproperPolicyError
        With gamma = 1, when a state reachable from p0 never reaches a terminal state
        (see :func:`check_proper`).
    NotFiniteError
        When the values overflow float64 (rewards or costs too large for gamma).

    Examples
    --------
    A single state that earns 1 per step and loops: :math:`V = 1/(1-\gamma)`.

    >>> import numpy as np
    >>> m = TabularCMDP(np.ones((1, 1, 1)), R=np.ones((1, 1)), gamma=0.9)
    >>> round(evaluate(m, [[1.0]]).value, 12)
    10.0
    """
    # the options are checked even with check=False (which skips the arrays' checks):
    # an unknown method or a check that is not a bool is no silent default
    check = bool(check) if isinstance(check, np.bool_) else check
    check_type(check, "check", bool, "give True or False")
    check_choice(method, "method", SOLVERS,
                 hint=" ('auto' chooses by the structure of the model)")
    if check:
        check_model(model)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    if check:
        pi = check_policy(policy, S, A)
        lam = model.check_multipliers(lam)
        start = model.p0 if p0 is None else check_p0(p0, S)
    else:
        pi = policy
        lam = np.zeros(K) if lam is None else lam
        start = model.p0 if p0 is None else p0
    gamma = model.gamma
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
        rhs = _rhs(model, pi)
        p0 = start

        sol = np.zeros((S, 1 + K))
        occ = np.zeros(S)
        dense = not model.is_sparse
        note = ""
        if gamma < 1.0:
            # rows that mix k > 1 actions are sums of k products: within gamma_k of the
            # exact P_pi and r_pi of the float data (one-hot rows are exact)
            k = int(np.count_nonzero(pi, axis=1).max(initial=1))
            exact = k <= 1 and bool(np.all(pi.max(axis=1) == 1.0))
            rel = 0.0 if exact else gam(k + 1)
            P_pi = _dense_p_pi(model.P, pi, exact) if dense else _p_pi(model, pi)
            system = PolicySystem(P_pi, gamma, method=method, matrix_error=rel)
            sol[:] = system.solve(rhs, rhs_error=None if exact else rel * _rhs(
                model, pi, magnitude=True))
            occ[:] = system.solve(p0, transpose=True)
            solver, bound, note = system.method, system.error_bound, system.note
            occ_bound = system.bounds[True]
            sol[model.terminal] = 0.0  # exactly: absorbing and earning nothing
            value = float(p0 @ sol[:, 0])
            cost = p0 @ sol[:, 1:]
        else:
            P_pi = _p_pi(model, pi)
            proper = check_proper(model, P_pi, "evaluate with gamma = 1", p0=p0)
            live = proper & ~model.terminal
            sol[~proper] = np.nan
            solver, bound, occ_bound = "lu", float("nan"), float("nan")
            if live.any():
                # expected visits to each proper non-terminal state before absorption
                system = PolicySystem(P_pi, 1.0, live, method=method)
                sol[live] = system.solve(rhs)[live]
                occ[:] = system.solve(p0, transpose=True)
                solver = system.method
            # p0 is zero outside the proper states (check_proper), so skip their nan
            value = float(p0[proper] @ sol[proper, 0])
            cost = p0[proper] @ sol[proper, 1:]
    _check_finite_result(model, sol if gamma < 1.0 else sol[proper], "evaluate")
    v = sol[:, 0]
    cc = sol[:, 1:]
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
        # (gamma = 1: nan values of improper states must not reach the Q-values through
        # zero entries of a dense product)
        P_flat = model.P.reshape(S * A, S) if dense and gamma < 1.0 else model.P_sparse
        nxt = (P_flat @ sol).reshape(S, A, 1 + K)
        q = model.r + gamma * nxt[:, :, 0]
        qc = model.c + gamma * nxt[:, :, 1:]
    if model.terminal.any():
        q[model.terminal] = 0.0
        qc[model.terminal] = 0.0
    if gamma < 1.0:  # the values are finite; the Q-values must be too
        _check_finite_result(model, np.concatenate([q[..., None], qc], axis=-1), "evaluate")
    return Result(
        v=v,
        c=cc,
        lagrangian=v - cc @ lam,
        q=q,
        qc=qc,
        q_lagrangian=q - qc @ lam,
        advantage=q - v[:, None],
        advantage_lagrangian=(q - qc @ lam) - (v - cc @ lam)[:, None],
        occupancy=occ,
        value=value,
        costs=cost,
        lagrangian_p0=value - float(lam @ (cost - model.d)),
        p0=p0,
        policy=pi,
        lam=lam,
        solver=solver,
        solver_note=note,
        error_bound=bound,
        occupancy_error_bound=occ_bound,
    )


def _horizon_and_discount(model: TabularCMDP, horizon, discount):
    """Validated (T, beta) of the finite-horizon evaluations."""
    check_model(model)
    T = model.horizon if horizon is None else horizon
    T = check_limit(T, "horizon", "horizon", hint="; pass horizon=T or build the model "
                    "with horizon=T" if T is None else " (a number of steps)")
    beta = check_real(discount, "discount", 0.0, 1.0)
    return T, beta


def evaluate_finite_horizon(model: TabularCMDP, policy, horizon: int | None = None,
                            discount: float = 1.0) -> Result:
    r"""Exact T-step evaluation by backward induction (the paper's test metric).

    .. math::

        W_T = 0, \qquad W_t = [r_\pi, c_\pi] + \beta P_\pi W_{t+1}, \qquad
        \text{value} = p_0^\top W_0[:, 0], \quad \text{cost} = p_0^\top W_0[:, 1:],

    i.e. :math:`\mathbb{E}[\sum_{t<T} \beta^t r(s_t, a_t)]` with :math:`\beta` =
    ``discount``.  Terminal states earn nothing, so an episode that reaches the goal
    early simply stops earning.

    Parameters
    ----------
    model : TabularCMDP
    policy : array (S, A) or int array (S,)
        A stationary policy (the greedy policy of a learner, for instance).
    horizon : int >= 1, optional
        Number of steps T; defaults to ``model.horizon``.
    discount : float in [0, 1]
        Per-step discount :math:`\beta` (1.0, the default, gives the undiscounted
        test metric).

    Returns
    -------
    Result
        ``value`` and ``costs`` (K,) from p0, per-state ``v`` (S,) and ``c`` (S, K) at
        t = 0, ``horizon``; ``budget`` (K,) = :func:`rescaled_budget` (d, model.gamma,
        T), ``overshoot`` = costs - budget and ``penalised_return`` =
        :func:`penalised_return` (value, cost, budget).

    Examples
    --------
    The shortest path of Safe Navigation 1 makes 8 moves, each succeeding with
    probability 0.8 (else the agent stays), so it takes 8 / 0.8 = 10 steps on average;
    it enters one cost cell and pays again each time it fails to leave it, 1 / 0.8:

    >>> from rcmdp_exact import domains
    >>> nav1 = domains.paper_domain("nav1")
    >>> res = evaluate_finite_horizon(nav1, domains.shortest_path_policy())
    >>> round(res.value, 9), round(float(res.costs[0]), 9)
    (-10.0, 1.25)
    """
    T, beta = _horizon_and_discount(model, horizon, discount)
    pi = check_policy(policy, model.n_states, model.n_actions)
    P_pi = _p_pi(model, pi)
    rhs = _rhs(model, pi)
    W = np.zeros_like(rhs)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
        for _ in range(T):
            W = rhs + beta * (P_pi @ W)
    _check_finite_result(model, W, "evaluate_finite_horizon")
    value = float(model.p0 @ W[:, 0])
    cost = model.p0 @ W[:, 1:]
    budget = rescaled_budget(model.d, model.gamma, T)
    return Result(
        value=value,
        costs=cost,
        v=W[:, 0],
        c=W[:, 1:],
        horizon=T,
        budget=budget,
        overshoot=cost - budget,
        penalised_return=penalised_return(value, cost, budget),
    )


def evaluate_finite_horizon_batch(model: TabularCMDP, policies, kernels=None,
                                  horizon: int | None = None, discount: float = 1.0) -> Result:
    r""":func:`evaluate_finite_horizon` of M policies on N kernels at once.

    The same backward induction, batched: :math:`W_t = [r_\pi, c_\pi] + \beta
    P_\pi W_{t+1}` for every (kernel, policy) pair, with the rewards and costs of
    ``model`` (per transition, so they are re-weighted by each kernel) and its p0,
    terminal states and budgets.  One batched matrix product per step instead of N*M
    sparse products: the way to evaluate every policy on every test setting of a suite.

    Parameters
    ----------
    model : TabularCMDP
        Rewards, costs, budgets, p0, terminal states (and horizon by default).
    policies : array (M, S, A) or (S, A)
        Stationary policies.
    kernels : array (N, S, A, S) or (S, A, S), optional
        Transition tensors (default: ``model.P``); each must be a valid kernel of the
        model (rows are checked).
    horizon, discount :
        As in :func:`evaluate_finite_horizon`.

    Returns
    -------
    Result
        ``value`` (N, M), ``costs`` (N, M, K), ``budget`` (K,), ``overshoot`` (N, M, K),
        ``penalised_return`` (N, M), ``horizon``.
    """
    from .model_checks import check_transition_rows

    T, beta = _horizon_and_discount(model, horizon, discount)
    S, A = model.n_states, model.n_actions
    pol = as_float_array(policies, "policies", "give an (M, S, A) array of policies")
    pol = pol[None] if pol.ndim == 2 else pol
    check_shape(pol, (pol.shape[0], S, A), "policies", ("m", "s", "a"))
    for m in range(pol.shape[0]):
        check_policy(pol[m], S, A, name=f"policies[{m}]")
    if kernels is None:
        P = np.asarray(model.P)[None]
    else:
        P = as_float_array(kernels, "kernels", "give an (N, S, A, S) array of kernels")
        P = P[None] if P.ndim == 3 else P
        check_shape(P, (P.shape[0], S, A, S), "kernels", ("n", "s", "a", "s'"))
        check_transition_rows(P.reshape(-1, A, S), "kernels")
    # expected one-step reward and costs under each kernel: (N, S, A, 1 + K)
    g = np.concatenate([np.asarray(model.R)[..., None], np.asarray(model.C)], axis=-1)
    r = np.einsum("nsat,satk->nsak", P, g)
    r[:, model.terminal] = 0.0
    rhs = np.einsum("msa,nsak->nmsk", pol, r)
    P_pi = np.einsum("msa,nsat->nmst", pol, P)
    W = np.zeros_like(rhs)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
        for _ in range(T):
            W = rhs + beta * (P_pi @ W)
    _check_finite_result(model, W, "evaluate_finite_horizon_batch")
    out = np.einsum("s,nmsk->nmk", model.p0, W)
    value, cost = out[..., 0], out[..., 1:]
    budget = rescaled_budget(model.d, model.gamma, T)
    over = cost - budget
    return Result(value=value, costs=cost, budget=budget, overshoot=over,
                  penalised_return=value - PENALTY_WEIGHT * np.maximum(over, 0.0).sum(-1),
                  horizon=T)


def time_dependent_values(P, rc: np.ndarray, policy: np.ndarray,
                          discount: float = 1.0) -> np.ndarray:
    r"""Backward induction :math:`W_t = \sum_a \pi_t(a|s) (rc(s, a) + \delta P W_{t+1})`.

    The evaluation of a time-dependent policy (T, S, A) on one kernel, ``P`` sparse
    (S*A, S) and ``rc`` (S, A, J), returning :math:`W_0` (S, J); or on N kernels at once,
    ``P`` dense (N, S, A, S) and ``rc`` (N, S, A, J), returning (N, S, J).  The J columns
    are rewards and costs evaluated together.
    """
    batched = not sp.issparse(P)
    if batched:
        N, S, A, _ = P.shape
        J = rc.shape[-1]
        flat = np.asarray(P).reshape(N, S * A, S)
        W = np.zeros((N, S, J))
    else:
        S, A, J = rc.shape
        flat = P
        W = np.zeros((S, J))
    for t in range(policy.shape[0] - 1, -1, -1):
        nxt = (flat @ W).reshape(rc.shape)
        if discount != 1.0:
            nxt = discount * nxt
        W = np.einsum("sa,nsaj->nsj" if batched else "sa,saj->sj", policy[t], rc + nxt)
    return W


def evaluate_time_dependent(model: TabularCMDP, policy, discount: float = 1.0) -> Result:
    r"""Exact evaluation of a time-dependent policy :math:`\pi_t`, shape (T, S, A).

    Backward induction :math:`W_T = 0`, :math:`W_t = r_{\pi_t} + \delta P_{\pi_t}
    W_{t+1}` for the reward and every cost (the time-dependent form of
    :func:`evaluate_finite_horizon`; :func:`time_dependent_values`).

    Returns
    -------
    Result
        ``value``, ``costs`` (K,) from p0, ``v`` (S,), ``c`` (S, K) at t = 0, ``horizon``
        T; ``budget`` (K,) the rescaled budget, ``overshoot`` = costs - budget,
        ``penalised_return``.
    """
    check_model(model)
    S, A = model.n_states, model.n_actions
    pol = as_float_array(policy, "policy", "give a time-dependent policy of shape (T, S, A)")
    T = pol.shape[0] if pol.ndim == 3 else 1
    check_shape(pol, (T, S, A), "policy (time-dependent)", ("t", "s", "a"))
    T = check_int(T, "horizon of the policy (its first axis)", 1)
    disc = check_real(discount, "discount", 0.0, 1.0)
    for t in range(T):
        check_policy(pol[t], S, A, name=f"policy[{t}]")
    rc = np.concatenate([model.r[..., None], model.c], axis=2)
    W = time_dependent_values(model.P_sparse, rc, pol, disc)
    value, costs = float(model.p0 @ W[:, 0]), model.p0 @ W[:, 1:]
    budget = rescaled_budget(model.d, model.gamma, T)
    return Result(value=value, costs=costs, v=W[:, 0], c=W[:, 1:], horizon=T,
                  budget=budget, overshoot=costs - budget,
                  penalised_return=penalised_return(value, costs, budget))


def rescaled_budget(d, gamma: float, horizon: int) -> np.ndarray:
    r"""The budget of the T-step undiscounted metric: :math:`d\,T/\sum_{i<T}\gamma^i`.

    The discounted budget d bounds :math:`\sum_t \gamma^t c_t`; spread evenly over T
    steps, the same per-step cost gives the undiscounted total :math:`d' = d\,T /
    \sum_{i<T}\gamma^i = d\,T (1-\gamma)/(1-\gamma^T)` (:math:`d' = d` when
    :math:`\gamma = 1`).

    >>> round(float(rescaled_budget([3.0], 0.99, 200)[0]), 3)  # Safe Navigation 1
    6.928
    """
    d = np.atleast_1d(as_float_array(d, "budgets d", "give one number per constraint"))
    g = check_real(gamma, "gamma", 0.0, 1.0)
    T = check_limit(horizon, "horizon of a rescaled budget", "horizon")
    norm = float(T) if g == 1.0 else (1.0 - g**T) / (1.0 - g)
    return d * T / norm


def penalised_return(value, cost, budget, weight: float = PENALTY_WEIGHT) -> float:
    r""":math:`R_{pen} = V - w \sum_k \max(0, C_k - d_k)` with w = 500 by default.

    The paper's Table 1 metric, with ``budget`` the rescaled budget d' of the T-step
    metric (:func:`rescaled_budget`).
    """
    v = check_real(value, "value")
    weight = check_real(weight, "weight", 0.0, hint="; give the penalty per unit of "
                        "constraint violation (500 in the paper)")
    c = np.atleast_1d(as_float_array(cost, "cost", "give one number per constraint"))
    b = as_float_array(budget, "budget", "give one number per constraint")
    check_shape(np.atleast_1d(b), c.shape, "budget (one entry per constraint, like cost)")
    return float(v - weight * np.maximum(0.0, c - b).sum())

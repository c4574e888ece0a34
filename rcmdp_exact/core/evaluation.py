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
    check_real,
    check_shape,
)
from .._result import Result
from .model import TabularCMDP, check_model
from .model_checks import check_p0, check_policy

__all__ = [
    "PENALTY_WEIGHT",
    "SOLVERS",
    "PolicySystem",
    "check_finite_result",
    "check_proper",
    "check_value_scale",
    "evaluate",
    "evaluate_finite_horizon",
    "evaluate_finite_horizon_batch",
    "evaluate_time_dependent",
    "penalised_return",
    "policy_matrix",
    "policy_transition_matrix",
    "policy_values",
    "rescaled_budget",
    "time_dependent_values",
]

#: The evaluation weight of the penalised return (the paper's maximal multiplier).
PENALTY_WEIGHT = 500.0


def check_finite_result(model: TabularCMDP, sol: np.ndarray, what: str) -> None:
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


#: Largest number of states for which :class:`PolicySystem` solves densely by default.
DENSE_SOLVE_LIMIT = 2000
#: Largest number of states of a model stored densely that :func:`evaluate` (with
#: ``method="auto"`` and gamma < 1) solves by LAPACK instead of a sparse LU: below it
#: the sparse set-up costs more than the solve (Garnets with 4 actions: 0.3 against
#: 0.7 ms at 2 states, 1.7 against 5.4 ms at 200; a 20 x 20 grid stored densely: 5.4
#: against 1.6 ms; ``benchmarks/bench_evaluation.py --small``, docs/evaluation.md).
EVALUATE_DENSE_LIMIT = 200
#: How :class:`PolicySystem` solves a sparse system: chosen by the model's structure
#: ("auto"), or one of the others.
SOLVERS = ("auto", "lu", "bicgstab", "gmres", "iteration")
#: Up to this many states a sparse system is always factorised (a fill-in of at most
#: S^2 = 10^6 entries: a few hundredths of a second).
LU_ALWAYS = 1000
#: Above :data:`LU_ALWAYS`, the LU is kept when the bandwidth after reverse
#: Cuthill-McKee is at most this fraction of S (grids: about sqrt(S)); otherwise the
#: factors would fill in (random sparse models: nearly dense) and a Krylov solver is used.
LU_BANDWIDTH = 0.1
#: The accuracy every iterative solve reaches: an error bound of at most this times the
#: value scale max|b| / (1 - gamma) (values, sup norm), and of at most
#: :data:`ITERATIVE_TOL_T` times sum|b| / (1 - gamma) for a transposed solve (the
#: occupancy, 1 norm, whose rounding floor grows with the number of states).
ITERATIVE_TOL = 1e-12
ITERATIVE_TOL_T = 1e-10
#: Largest number of states that an iterative solve which missed its accuracy factorises
#: instead (beyond it, the answer is kept with its error bound and a warning).
LU_FALLBACK = 5000


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
        The policy's transition matrix, or a batch of J of them (dense).
    gamma : float
        The discount (1 is allowed on a ``live`` set whose states all terminate).
    live : bool array (S,), optional
        Solve on these states only (the others get 0: terminal states, or the states
        that are not proper with gamma = 1).
    method : {"auto", "lu", "bicgstab", "gmres", "iteration"}
        How a sparse system is solved (a dense batch is always solved by LAPACK).

    Notes
    -----
    Dense matrices (the batched engine of the robust code, the learners' exact mode, the
    gradients) are solved by LAPACK through ``numpy.linalg.solve`` (batched).  A sparse
    matrix, or a dense one with more than :data:`DENSE_SOLVE_LIMIT` states, is solved by
    ``method``; "auto" chooses by the structure of the matrix:

    * one SuperLU factorisation (:func:`_factorise`, reused for every right-hand side and
      the transpose) when its fill-in stays small: up to :data:`LU_ALWAYS` states, with
      gamma = 1, or when the bandwidth after a reverse Cuthill-McKee ordering is at most
      :data:`LU_BANDWIDTH` times S (grids, chains);
    * otherwise (a random sparse model, whose factors would be nearly dense) BiCGSTAB with
      a Jacobi preconditioner, then GMRES, then the LU if neither reaches the accuracy.

    Every iterative solve ends with a residual check.  With gamma < 1,
    :math:`\|(I - \gamma P_\pi)^{-1}\|_\infty = 1/(1-\gamma)` (P_pi is row-substochastic),
    so a residual r bounds the error: :math:`\|X - X^*\|_\infty \le \|r\|_\infty /
    (1 - \gamma)` (and :math:`\|\cdot\|_1` for the transposed system); iterations go on
    until this bound is at most :data:`ITERATIVE_TOL` times the value scale
    :math:`\max|B| / (1 - \gamma)`.  ``method`` and ``error_bound`` (the largest bound of
    the solves so far, from their residuals; a single dense system computes it when it is
    read, so that loops which never read it pay nothing; a dense batch records none, 0)
    say what was done (``bounds[True]`` is the 1-norm bound of the transposed solves,
    complete once ``error_bound`` was read).
    """

    @property
    def error_bound(self) -> float:
        """The largest error bound of the (untransposed) solves so far, in the sup norm."""
        while self._unbounded:  # the dense solves' residuals, computed once, when read
            self._bound(*self._unbounded.pop())
        return self.bounds[False]

    def __init__(self, P_pi, gamma: float, live=None, method: str = "auto"):
        self.gamma = float(gamma)
        self.live = None if live is None else np.asarray(live, dtype=bool)
        if live is not None and self.live.all():
            self.live = None
        self.sparse = sp.issparse(P_pi) or P_pi.shape[-1] > DENSE_SOLVE_LIMIT
        self.S = P_pi.shape[-1]
        self.bounds = {False: 0.0, True: 0.0}
        self._unbounded = []  # dense solves (b, x, transpose) whose bound is not yet known
        self._lu = None
        if self.sparse:
            if not sp.issparse(P_pi):
                if P_pi.ndim != 2:
                    raise ValueError("a batch of policy matrices is solved densely")
                P_pi = sp.csr_array(P_pi)
            if self.live is None:
                M = sp.eye_array(self.S, format="csr") - self.gamma * P_pi
            else:
                idx = np.flatnonzero(self.live)
                sub = sp.csr_array(P_pi)[idx][:, idx]
                M = sp.eye_array(idx.size, format="csr") - (sub if self.gamma == 1.0
                                                            else self.gamma * sub)
            self._A = sp.csr_array(M)
            self.method = self._choose(self._A) if method == "auto" else method
            if self.method != "lu" and self.gamma >= 1.0:
                self.method = "lu"  # the error bound needs gamma < 1
            if self.method == "lu" and M.shape[0]:
                self._lu = _factorise(M)
        else:
            P = np.asarray(P_pi, dtype=np.float64)
            if self.live is not None:
                idx = np.flatnonzero(self.live)
                P = P[..., idx[:, None], idx]
            M = -self.gamma * P
            n = M.shape[-1]
            M[..., np.arange(n), np.arange(n)] += 1.0
            self._M = M
            self.method = "dense"

    def _choose(self, M) -> str:
        n = M.shape[0]
        if n <= LU_ALWAYS or self.gamma >= 1.0:
            return "lu"
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        pattern = sp.csr_matrix(abs(M) + abs(M).T)
        perm = reverse_cuthill_mckee(pattern, symmetric_mode=True)
        rank = np.empty(n, dtype=np.int64)
        rank[perm] = np.arange(n)
        coo = M.tocoo()
        band = int(np.abs(rank[coo.row] - rank[coo.col]).max(initial=0))
        return "lu" if band <= LU_BANDWIDTH * n else "bicgstab"

    def solve(self, rhs, transpose: bool = False) -> np.ndarray:
        """``X`` with the shape of ``rhs`` ((..., S) or (..., S, m)), zero outside ``live``.

        Dense batches take ``rhs`` with the same leading axis J.
        """
        rhs = np.asarray(rhs, dtype=np.float64)
        vector = rhs.ndim == (1 if self.sparse else self._M.ndim - 1)
        b = rhs[..., None] if vector else rhs
        if self.live is not None:
            b = b[..., self.live, :]
        if self.sparse:
            if b.shape[0] == 0:
                x = np.zeros_like(b)
            elif self.method == "lu":
                x = self._lu.solve(b, trans="T" if transpose else "N")
                if self.gamma < 1.0:
                    self._bound(b, x, transpose)
            else:
                x = np.column_stack([self._iterate(b[:, j], transpose)
                                     for j in range(b.shape[1])])
        elif self._M.shape[-1] == 0:
            x = b
        else:
            M = np.swapaxes(self._M, -1, -2) if transpose else self._M
            x = np.linalg.solve(M, b)
            if self._M.ndim == 2 and self.gamma < 1.0:  # one system: bounded when read
                self._unbounded.append((b, x, transpose))
        if self.live is not None:
            out = np.zeros(rhs.shape if not vector else (*rhs.shape, 1))
            out[..., self.live, :] = x
            x = out
        return x[..., 0] if vector else x

    def _bound(self, b: np.ndarray, x: np.ndarray, transpose: bool,
               record: bool = True) -> float:
        """The error bound of a solution x (n,) or (n, m) from its residual; recorded
        (the error bound of the result) unless ``record`` is False (an attempt that may
        be refined or replaced)."""
        if self.sparse:
            A = self._A.T if transpose else self._A
        else:
            A = self._M.T if transpose else self._M
        r = b - A @ x
        ord_ = 1 if transpose else np.inf
        res = np.linalg.norm(r.reshape(r.shape[0], -1), ord=ord_, axis=0).max(initial=0.0)
        bound = float(res) / (1.0 - self.gamma)
        if record:
            self.bounds[transpose] = max(self.bounds[transpose], bound)
        return bound

    def _iterate(self, b: np.ndarray, transpose: bool) -> np.ndarray:
        """One right-hand side by the iterative methods, in order, until the bound holds."""
        import scipy.sparse.linalg as spla

        A = sp.csr_array(self._A.T) if transpose else self._A
        n = A.shape[0]
        norm = 1 if transpose else np.inf
        tol = ITERATIVE_TOL_T if transpose else ITERATIVE_TOL
        target = tol * max(np.linalg.norm(b, ord=norm), 1e-300) / (1.0 - self.gamma)
        diag = A.diagonal()
        jacobi = spla.LinearOperator((n, n), matvec=lambda v: v / diag, dtype=np.float64)
        order = {"bicgstab": ("bicgstab", "gmres"), "gmres": ("gmres",),
                 "iteration": ("iteration",)}[self.method]
        x = best = np.zeros(n)
        best_bound = np.inf
        for how in order:
            for _ in range(3):  # a restart from the last x refines a stalled solve
                if how == "iteration":
                    x = self._value_iteration(A, b, x, transpose, target)
                else:
                    solver = spla.bicgstab if how == "bicgstab" else spla.gmres
                    kw = {"restart": 100} if how == "gmres" else {}
                    # the solvers stop on the 2-norm of the residual: ||r||_inf <= ||r||_2
                    # and ||r||_1 <= sqrt(n) ||r||_2
                    atol = 0.5 * target * (1.0 - self.gamma) / (np.sqrt(n) if transpose else 1.0)
                    x, _ = solver(A, b, x0=x, rtol=1e-15, atol=atol, M=jacobi, maxiter=10 * n,
                                  **kw)
                if not np.all(np.isfinite(x)):
                    x = best
                    break
                bound = self._bound(b, x, transpose, record=False)
                if bound <= target:
                    self._bound(b, x, transpose)
                    return x
                if bound < best_bound:
                    best, best_bound = x, bound
        if n <= LU_FALLBACK:  # the iterative methods missed the accuracy: factorise
            self.method = "lu"
            self._lu = _factorise(self._A)
            trans = "T" if transpose else "N"
            x = self._lu.solve(b, trans=trans)
            for _ in range(2):  # iterative refinement: the residual to rounding level
                x = x + self._lu.solve(b - A @ x, trans=trans)
            self._bound(b, x, transpose)
            return x
        warnings.warn(f"PolicySystem: the iterative solvers stopped at an error bound of "
                      f"{best_bound:.2e} (target {target:.2e}); the answer is kept with that "
                      f"bound (error_bound); try method='lu' or 'iteration'", RuntimeWarning,
                      stacklevel=4)
        self._bound(b, best, transpose)
        return best

    def _value_iteration(self, A, b, x, transpose, target):
        """x <- b + gamma P x (P recovered from A = I - gamma P), until the bound holds."""
        step = sp.csr_array(sp.eye_array(A.shape[0], format="csr") - A)  # gamma P (or its T)
        norm = 1 if transpose else np.inf
        for _ in range(200_000):
            new = b + step @ x
            if np.linalg.norm(new - x, ord=norm) * self.gamma / (1.0 - self.gamma) \
                    <= 0.5 * target:
                return new
            x = new
        return x


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


def _rhs(model: TabularCMDP, pi: np.ndarray) -> np.ndarray:
    """(S, 1 + K): column 0 is :math:`r_\\pi`, columns 1.. are :math:`c_{\\pi,k}`."""
    S, K = model.n_states, model.n_constraints
    rhs = np.empty((S, 1 + K))
    rhs[:, 0] = np.einsum("sa,sa->s", pi, model.r)
    rhs[:, 1:] = np.einsum("sa,sak->sk", pi, model.c)
    return rhs


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
    if check:
        check_model(model)
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    if check:
        pi = check_policy(policy, S, A)
        lam = model.check_multipliers(lam)
        check_choice(method, "method", SOLVERS,
                     hint=" ('auto' chooses by the structure of the model)")
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
        dense = (gamma < 1.0 and method == "auto" and S <= EVALUATE_DENSE_LIMIT
                 and not model.is_sparse)
        if gamma < 1.0:  # a small model densely (LAPACK): the sparse set-up costs more
            P_pi = policy_matrix(model.P, pi) if dense else _p_pi(model, pi)
            system = PolicySystem(P_pi, gamma, method=method)
            sol[:] = system.solve(rhs)
            occ[:] = system.solve(p0, transpose=True)
            solver, bound = system.method, system.error_bound
            sol[model.terminal] = 0.0  # exactly: absorbing and earning nothing
            value = float(p0 @ sol[:, 0])
            cost = p0 @ sol[:, 1:]
        else:
            P_pi = _p_pi(model, pi)
            proper = check_proper(model, P_pi, "evaluate with gamma = 1", p0=p0)
            live = proper & ~model.terminal
            sol[~proper] = np.nan
            solver, bound = "lu", float("nan")
            if live.any():
                # expected visits to each proper non-terminal state before absorption
                system = PolicySystem(P_pi, 1.0, live)
                sol[live] = system.solve(rhs)[live]
                occ[:] = system.solve(p0, transpose=True)
                solver = system.method
            # p0 is zero outside the proper states (check_proper), so skip their nan
            value = float(p0[proper] @ sol[proper, 0])
            cost = p0[proper] @ sol[proper, 1:]
    check_finite_result(model, sol if gamma < 1.0 else sol[proper], "evaluate")
    v = sol[:, 0]
    cc = sol[:, 1:]
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
        P_flat = model.P.reshape(S * A, S) if dense else model.P_sparse
        nxt = (P_flat @ sol).reshape(S, A, 1 + K)
        q = model.r + gamma * nxt[:, :, 0]
        qc = model.c + gamma * nxt[:, :, 1:]
    if model.terminal.any():
        q[model.terminal] = 0.0
        qc[model.terminal] = 0.0
    if gamma < 1.0:  # the values are finite; the Q-values must be too
        check_finite_result(model, np.concatenate([q[..., None], qc], axis=-1), "evaluate")
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
        error_bound=bound,
    )


def _horizon_and_discount(model: TabularCMDP, horizon, discount):
    """Validated (T, beta) of the finite-horizon evaluations."""
    check_model(model)
    T = model.horizon if horizon is None else horizon
    T = check_int(T, "horizon", 1, hint="; pass horizon=T or build the model with "
                  "horizon=T" if T is None else " (a number of steps)")
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
    check_finite_result(model, W, "evaluate_finite_horizon")
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
    check_finite_result(model, W, "evaluate_finite_horizon_batch")
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
    T = check_int(horizon, "horizon of a rescaled budget", 1)
    norm = float(T) if g == 1.0 else (1.0 - g**T) / (1.0 - g)
    return d * T / norm


def penalised_return(value, cost, budget, weight: float = PENALTY_WEIGHT) -> float:
    r""":math:`R_{pen} = V - w \sum_k \max(0, C_k - d_k)` with w = 500 by default.

    The paper's Table 1 metric, with ``budget`` the rescaled budget d' of the T-step
    metric (:func:`rescaled_budget`).
    """
    v = check_real(value, "value")
    c = np.atleast_1d(as_float_array(cost, "cost", "give one number per constraint"))
    b = as_float_array(budget, "budget", "give one number per constraint")
    check_shape(np.atleast_1d(b), c.shape, "budget (one entry per constraint, like cost)")
    return float(v - weight * np.maximum(0.0, c - b).sum())

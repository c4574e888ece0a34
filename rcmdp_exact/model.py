r"""The tabular constrained MDP: one immutable object with axis order ``(s, a, s')``.

A :class:`TabularCMDP` holds

* ``P``  (S, A, S)   transition probabilities :math:`P(s' \mid s, a)`;
* ``R``  (S, A, S)   reward of the transition :math:`(s, a, s')`;
* ``C``  (S, A, S, K) the K constraint costs of the transition;
* ``d``  (K,)        budgets, ``gamma`` the discount, ``p0`` (S,) the start distribution;
* ``horizon``        the episode length T of the test metric (or ``None``);
* ``terminal``       (S,) bool: absorbing states in which nothing more is earned.

Rewards and costs may depend on the next state (Safe Navigation charges the cell
entered).  The expected one-step quantities are derived, never stored twice:

.. math::

    r(s, a) = \sum_{s'} P(s' \mid s, a) R(s, a, s'), \qquad
    c_k(s, a) = \sum_{s'} P(s' \mid s, a) C(s, a, s', k),

with both set to zero in terminal states.

Large sparse models (for example a grid of :math:`10^5` cells) are built from a
``scipy.sparse`` matrix of shape (S*A, S) with rewards and costs that depend on
``(s, a)`` only; the dense ``P`` view is then refused above :data:`DENSE_LIMIT`
entries and the solvers use :attr:`TabularCMDP.P_sparse`.

Every check made when a model is built raises :class:`ModelError` (a
:class:`ValueError`) whose message names the culprit and says how to fix it: shapes
and dtypes, NaN/inf, negative probabilities, rows of ``P`` that do not sum to 1 within
:func:`row_tolerance` (S) (the first bad ``(s, a)`` and its sum), ``p0`` not a
distribution, ``gamma`` outside [0, 1], budgets of the wrong length, terminal states
that are not absorbing, outcomes that do not cover the support of ``P``; policies are
checked by :func:`check_policy`.

Conversions: :meth:`TabularCMDP.to_mdptoolbox` (``P[a, s, s']``, ``R[s, a]``) and
:meth:`TabularCMDP.to_quantecon` (``R[s, a]``, ``Q[s, a, s']``, or the sparse
state-action-pair form).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "DENSE_LIMIT",
    "ModelError",
    "TabularCMDP",
    "check_policy",
    "row_tolerance",
]

#: Largest number of entries (S*A*S) for which a sparse model offers a dense ``P``.
DENSE_LIMIT = 50_000_000


class ModelError(ValueError):
    """Invalid model, policy or solver input; the message says how to fix it."""


def row_tolerance(n: int) -> float:
    """Tolerance on ``|sum(row) - 1|`` for a distribution over ``n`` entries.

    Summing ``n`` float64 numbers loses about ``n * eps`` (eps = 2.2e-16) in the worst
    case; the tolerance is ``1e-12 * max(n, 1)``, a few thousand times that bound, so
    it scales with the size of the row as the rounding error does, and stays far below
    any difference that matters at the toolkit's 1e-8 accuracy.
    """
    return 1e-12 * max(int(n), 1)


# --------------------------------------------------------------------------- helpers
def _refuse_sparse(x, name: str, fix: str) -> None:
    if sp.issparse(x):
        raise ModelError(
            f"{name} must be a dense array here, got a scipy.sparse {type(x).__name__}; "
            f"{fix}"
        )


def _asarray(x, name: str, fix: str) -> np.ndarray:
    """``np.asarray(x)`` or a :class:`ModelError` (ragged nesting, unconvertible)."""
    _refuse_sparse(x, name, fix)
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        raise ModelError(
            f"{name} must be an array, got a {type(x).__name__} that numpy cannot turn "
            f"into one (ragged nesting?); {fix}"
        ) from None


def _as_float_array(x, name: str, fix: str) -> np.ndarray:
    """``x`` as a float64 array, or a :class:`ModelError` naming ``name``."""
    _refuse_sparse(x, name, fix)
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError):
        raw = None
    if raw is not None and np.iscomplexobj(raw):
        raise ModelError(f"{name} must be real, got complex values; {fix}")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(
            f"{name} must be an array of real numbers, got a {type(x).__name__} whose "
            f"entries cannot be converted to float64; {fix}"
        ) from None
    return arr


def _check_finite(arr: np.ndarray, name: str, axes: Sequence[str]) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = ", ".join(f"{a}={i}" for a, i in zip(axes, idx, strict=False))
        raise ModelError(
            f"{name} has a non-finite entry {float(arr[idx])!r} at ({where}); replace NaN and "
            f"inf by finite numbers"
        )


def _check_row_sums(sums: np.ndarray, S: int, A: int, name: str = "P") -> None:
    """Raise unless every row sum of a flat (S*A,) array is 1 within :func:`row_tolerance`."""
    tol = row_tolerance(S)
    bad = np.abs(sums - 1.0) > tol
    if bad.any():
        s, a = divmod(int(np.flatnonzero(bad)[0]), A)
        raise ModelError(
            f"transition row {name}[{s}, {a}, :] sums to {float(sums[s * A + a])!r}, not 1 "
            f"(tolerance {tol:.1e}); normalise every row so that "
            f"{name}.sum(axis=-1) == 1"
        )


def check_transition_rows(P: np.ndarray, name: str = "P") -> None:
    """Raise a :class:`ModelError` unless ``P`` (S, A, S) holds distributions.

    Checks, in order, that every entry is finite, none is negative and every row
    ``P[s, a, :]`` sums to 1 within :func:`row_tolerance` (S); each message names the
    first offending entry or row.
    """
    _check_finite(P, name, ("s", "a", "s'"))
    if (P < 0).any():
        s, a, t = (int(i) for i in np.argwhere(P < 0)[0])
        raise ModelError(
            f"{name}[{s}, {a}, {t}] = {float(P[s, a, t])!r} is negative; transition "
            f"probabilities must be >= 0"
        )
    S, A = P.shape[0], P.shape[1]
    _check_row_sums(P.sum(axis=2).ravel(), S, A, name)


def _check_shape(arr: np.ndarray, shape: tuple, name: str, axes: str) -> None:
    if arr.shape != shape:
        raise ModelError(
            f"{name} must have shape {axes} = {shape}, got {arr.shape}; reshape it or "
            f"check the numbers of states S, actions A and constraints K"
        )


def _check_gamma(gamma) -> float:
    """``gamma`` as a float in [0, 1], or a :class:`ModelError`."""
    scalar = isinstance(gamma, numbers.Real) or (
        isinstance(gamma, np.ndarray) and gamma.ndim == 0 and gamma.dtype.kind in "iuf"
    )
    if isinstance(gamma, bool) or not scalar:
        raise ModelError(f"gamma must be a number in [0, 1], got {_plain(gamma)!r}")
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise ModelError(f"gamma must be a number in [0, 1], got {_plain(gamma)!r}") from None
    if not 0.0 <= g <= 1.0:
        raise ModelError(
            f"gamma must lie in [0, 1], got {g!r}; use e.g. 0.99 (discounted) or 1.0 "
            f"with terminal states or a horizon"
        )
    return g


def _check_p0(p0, S: int) -> np.ndarray:
    """The start distribution (S,) from a distribution or a start state index."""
    raw = _asarray(p0, "p0", "give an (S,) distribution or a start state index")
    if raw.ndim == 0 and np.issubdtype(raw.dtype, np.integer):
        s0 = int(p0)
        if not 0 <= s0 < S:
            raise ModelError(
                f"start state p0={s0} is out of range 0..{S - 1}; give a state index or "
                f"an (S,) distribution"
            )
        out = np.zeros(S)
        out[s0] = 1.0
        return out
    arr = _as_float_array(p0, "p0", "give an (S,) distribution or a start state index")
    if arr.shape != (S,):
        raise ModelError(
            f"p0 must be a start state index or a distribution of shape (S,) = ({S},), "
            f"got shape {arr.shape}"
        )
    _check_finite(arr, "p0", ("s",))
    if (arr < 0).any():
        s = int(np.flatnonzero(arr < 0)[0])
        raise ModelError(
            f"p0 must be a distribution over the {S} states, but p0[{s}] = {float(arr[s])!r} is "
            f"negative; give entries >= 0 summing to 1, or a start state index"
        )
    total = float(arr.sum())
    if abs(total - 1.0) > row_tolerance(S):
        raise ModelError(
            f"p0 must be a distribution over the {S} states, but it sums to {total!r}; "
            f"normalise it (p0 / p0.sum()) or give a start state index"
        )
    return arr.copy()


def _check_terminal(terminal, S: int) -> np.ndarray:
    """The terminal mask (S,) from a boolean mask or a list of state indices."""
    if terminal is None:
        return np.zeros(S, dtype=bool)
    term = _asarray(
        terminal, "terminal", f"give a boolean mask of shape ({S},) or a list of state indices"
    )
    if term.dtype == bool:
        if term.shape != (S,):
            raise ModelError(
                f"terminal must be a boolean mask of shape ({S},) or a list of state "
                f"indices, got a boolean array of shape {term.shape}"
            )
        return term.copy()
    if term.size == 0:
        return np.zeros(S, dtype=bool)
    if np.issubdtype(term.dtype, np.integer) and term.ndim == 1 and term.shape != (S,):
        if term.min() < 0 or term.max() >= S:
            i = int(np.flatnonzero((term < 0) | (term >= S))[0])
            raise ModelError(
                f"terminal state index {int(term[i])} is out of range 0..{S - 1}; give "
                f"state indices or a boolean mask of shape ({S},)"
            )
        mask = np.zeros(S, dtype=bool)
        mask[term] = True
        return mask
    if np.issubdtype(term.dtype, np.integer) and term.shape == (S,):
        raise ModelError(
            f"terminal is an integer array of shape ({S},), which could be a mask or "
            f"{S} state indices; give a bool mask (e.g. np.isin(np.arange({S}), "
            f"indices))"
        )
    raise ModelError(
        f"terminal must be a boolean mask of shape ({S},) or a list of state indices, "
        f"got dtype {term.dtype} and shape {term.shape}; for a mask use a bool array"
    )


def _plain(x):
    """A numpy scalar as the Python number it holds (for messages)."""
    return x.item() if isinstance(x, np.generic) else x


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def check_policy(policy, n_states: int, n_actions: int, name: str = "policy") -> np.ndarray:
    """Return ``policy`` as a validated (S, A) float64 array of distributions.

    A deterministic policy may be given as an integer array of shape (S,) with one
    action per state; it is turned into the one-hot (S, A) form.

    Raises
    ------
    ModelError
        On a wrong shape, non-finite or negative entries, or a row that does not
        sum to 1; the message names the first bad state.
    """
    arr = _asarray(policy, name, "give an (S, A) array of action probabilities")
    if arr.ndim == 1 and arr.shape == (n_states,) and np.issubdtype(arr.dtype, np.integer):
        if (arr < 0).any() or (arr >= n_actions).any():
            s = int(np.flatnonzero((arr < 0) | (arr >= n_actions))[0])
            raise ModelError(
                f"deterministic {name} picks action {int(arr[s])} in state {s}, but "
                f"actions are 0..{n_actions - 1}; give one valid action index per state"
            )
        out = np.zeros((n_states, n_actions))
        out[np.arange(n_states), arr] = 1.0
        return out
    arr = _as_float_array(policy, name, "give an (S, A) array of action probabilities")
    if arr.shape != (n_states, n_actions):
        raise ModelError(
            f"{name} must have shape (S, A) = ({n_states}, {n_actions}) with one row of "
            f"action probabilities per state (or an integer array of shape "
            f"({n_states},) with one action per state), got shape {arr.shape}"
        )
    _check_finite(arr, name, ("s", "a"))
    if (arr < 0).any():
        s, a = (int(i) for i in np.argwhere(arr < 0)[0])
        raise ModelError(
            f"{name}[{s}, {a}] = {float(arr[s, a])!r} is negative; action probabilities must "
            f"be >= 0"
        )
    sums = arr.sum(axis=1)
    bad = np.abs(sums - 1.0) > row_tolerance(n_actions)
    if bad.any():
        s = int(np.flatnonzero(bad)[0])
        raise ModelError(
            f"{name} row of state {s} sums to {float(sums[s])!r}, not 1; normalise each row "
            f"(policy / policy.sum(axis=1, keepdims=True))"
        )
    return arr.copy() if arr is policy else arr


# --------------------------------------------------------------------------- the model
class TabularCMDP:
    """An immutable finite constrained MDP with next-state-dependent rewards and costs.

    Parameters
    ----------
    P : array_like (S, A, S) or scipy.sparse matrix (S*A, S)
        Transition probabilities; row ``s*A + a`` of a sparse matrix is
        :math:`P(\\cdot \\mid s, a)`.
    R : array_like (S, A, S) or (S, A)
        Reward per transition; an (S, A) array means the reward does not depend on
        the next state (it is broadcast, not copied).
    C : array_like (S, A, S, K), (S, A, K), or ``None``
        Costs per transition; (S, A, K) means they do not depend on the next state.
        ``None`` means no constraint (K = 0).
    d : array_like (K,)
        Budgets of the discounted expected costs.
    gamma : float in [0, 1]
        Discount factor.
    p0 : array_like (S,) or int, optional
        Start distribution, or a start state index (default state 0).
    horizon : int, optional
        Episode length T used by the undiscounted test metric.
    terminal : array_like (S,) of bool, or a list of state indices, optional
        Absorbing states (``P[t, a, t] = 1`` for every action); rewards and costs
        earned in them are ignored.
    state_labels, action_labels, cost_labels : sequences of str, optional
        Names used in messages and reports.
    name : str, optional
        A short name of the model.
    outcomes : array_like (S, A, O) of int, optional
        For models built from outcomes (see :meth:`from_outcomes`): the next state of
        each outcome, kept so that uncertainty sets can be built over outcomes.
    state_features : array_like (S, F), optional
        Input features of each state for function approximators (the MLP policy and
        adversary); the learners scale them as documented there.  Default: the index.

    Raises
    ------
    ModelError
        On any invalid input; the message names the culprit and how to fix it.

    Notes
    -----
    New dynamics make a new model: :meth:`with_transitions` (or :meth:`replace` for
    any other field).  The inputs are copied, attributes cannot be reassigned and
    every array returned is read-only; copies are the model itself and pickling
    rebuilds it through the constructor.
    """

    __slots__ = (
        "_C",
        "_C_sa",
        "_P",
        "_P_sparse",
        "_R",
        "_R_sa",
        "_action_labels",
        "_cache",
        "_cost_labels",
        "_d",
        "_features",
        "_frozen",
        "_gamma",
        "_horizon",
        "_name",
        "_outcomes",
        "_p0",
        "_state_labels",
        "_terminal",
    )

    def __init__(
        self,
        P,
        R,
        C=None,
        d=None,
        gamma: float = 0.99,
        p0=0,
        horizon: int | None = None,
        terminal=None,
        state_labels=None,
        action_labels=None,
        cost_labels=None,
        name: str | None = None,
        outcomes=None,
        state_features=None,
    ):
        object.__setattr__(self, "_frozen", False)
        self._cache = {}
        # -- transitions
        if sp.issparse(P):
            S, A = self._init_sparse_transitions(P, R)
        else:
            S, A = self._init_dense_transitions(P)
        sparse = self._P is None

        # -- rewards
        R_arr = _as_float_array(R, "R", "give an (S, A) or (S, A, S) array of rewards")
        if R_arr.shape == (S, A):
            _check_finite(R_arr, "R", ("s", "a"))
            self._R_sa = _readonly(R_arr.copy())
            self._R = None
        else:
            if sparse:
                raise ModelError(
                    f"a model with sparse P takes R of shape (S, A) = ({S}, {A}), got "
                    f"{R_arr.shape}; give the expected reward of each state-action pair"
                )
            if R_arr.shape != (S, A, S):
                raise ModelError(
                    f"R must have shape (S, A) = ({S}, {A}) or (S, A, S) = ({S}, {A}, {S}), "
                    f"got {R_arr.shape}; give one reward per state-action pair or per "
                    f"transition"
                )
            _check_finite(R_arr, "R", ("s", "a", "s'"))
            self._R = _readonly(R_arr.copy())
            self._R_sa = None

        # -- costs and budgets
        if C is None:
            C_arr = np.zeros((S, A, 0))
        else:
            C_arr = _as_float_array(C, "C", "give an (S, A, S, K) or (S, A, K) array of costs")
        if C_arr.ndim == 3 and C_arr.shape[:2] == (S, A):
            K = C_arr.shape[2]
            _check_finite(C_arr, "C", ("s", "a", "k"))
            self._C_sa = _readonly(C_arr.copy())
            self._C = None
        else:
            if sparse:
                raise ModelError(
                    f"a model with sparse P takes C of shape (S, A, K) with S={S}, A={A}, "
                    f"got {C_arr.shape}; give the expected cost of each state-action pair"
                )
            if C_arr.ndim != 4 or C_arr.shape[:3] != (S, A, S):
                raise ModelError(
                    f"C must have shape (S, A, S, K) or (S, A, K) with S={S}, A={A}, got "
                    f"{C_arr.shape}; add a last axis of length K, one per constraint"
                )
            K = C_arr.shape[3]
            _check_finite(C_arr, "C", ("s", "a", "s'", "k"))
            self._C = _readonly(C_arr.copy())
            self._C_sa = None
        if d is None:
            if K:
                raise ModelError(
                    f"the model has K={K} cost functions but no budgets d; give d of "
                    f"shape ({K},), one budget per constraint"
                )
            d_arr = np.zeros(0)
        else:
            d_arr = _as_float_array(d, "d", "give one budget per constraint").reshape(-1)
        if d_arr.shape != (K,):
            raise ModelError(
                f"budgets d must have one entry per constraint: K={K} (from C), got "
                f"{d_arr.size}; give d of shape ({K},)"
            )
        _check_finite(d_arr, "d", ("k",))
        self._d = _readonly(d_arr.copy())

        # -- discount, start, horizon, terminal
        self._gamma = _check_gamma(gamma)
        self._p0 = _readonly(_check_p0(p0, S))
        if horizon is not None:
            if isinstance(horizon, bool) or not (
                isinstance(horizon, int | np.integer) and horizon >= 1
            ):
                raise ModelError(
                    f"horizon must be a positive integer number of steps or None, got "
                    f"{_plain(horizon)!r}"
                )
            horizon = int(horizon)
        self._horizon = horizon
        self._terminal = _readonly(_check_terminal(terminal, S))
        self._state_labels = _labels(state_labels, S, "state_labels", "state")
        self._action_labels = _labels(action_labels, A, "action_labels", "action")
        self._cost_labels = _labels(cost_labels, K, "cost_labels", "constraint")
        self._name = None if name is None else str(name)
        self._outcomes = None if outcomes is None else self._check_outcomes(outcomes)
        if state_features is not None:
            feat = _as_float_array(state_features, "state_features", "give an (S, F) array")
            if feat.ndim != 2 or feat.shape[0] != S:
                raise ModelError(
                    f"state_features must have shape (S, F) with S={S}, got {feat.shape}; "
                    f"give one row of features per state"
                )
            _check_finite(feat, "state_features", ("s", "f"))
            feat = _readonly(feat.copy())
        self._features = state_features if state_features is None else feat
        self._check_terminal_absorbing()
        self._frozen = True

    # ----------------------------------------------------------------- validation
    def _init_sparse_transitions(self, P, R) -> tuple[int, int]:
        if P.ndim != 2:
            raise ModelError(
                f"a sparse P must be a 2-D matrix of shape (S*A, S), got {P.ndim} "
                f"dimensions; row s*A + a holds P(. | s, a)"
            )
        if np.iscomplexobj(P.data) or P.dtype.kind not in "biuf":
            raise ModelError(
                f"P must hold real probabilities, got a sparse matrix of dtype {P.dtype}; "
                f"give a float64 scipy.sparse matrix of shape (S*A, S)"
            )
        Ps = sp.csr_array(P, dtype=np.float64, copy=True)
        n_rows, S = Ps.shape
        R_shape = _asarray(R, "R", "give an (S, A) array of rewards").shape
        if len(R_shape) < 2:
            raise ModelError(
                f"R must have shape (S, A) when P is sparse, got shape {R_shape}; give "
                f"one expected reward per state-action pair"
            )
        A = int(R_shape[1])
        if S == 0 or A == 0 or n_rows != S * A:
            raise ModelError(
                f"a sparse P must have shape (S*A, S) = ({S * A}, {S}) for S={S}, "
                f"A={A} (A read from R), got {Ps.shape}; stack the rows P(. | s, a) "
                f"in the order s*A + a"
            )
        Ps.sum_duplicates()
        Ps.sort_indices()
        nz_row = np.repeat(np.arange(n_rows), np.diff(Ps.indptr))
        bad = ~np.isfinite(Ps.data)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            s, a = divmod(int(nz_row[k]), A)
            raise ModelError(
                f"P has a non-finite entry {float(Ps.data[k])!r} at (s={s}, a={a}, "
                f"s'={int(Ps.indices[k])}); replace NaN and inf by finite numbers"
            )
        if (Ps.data < 0).any():
            k = int(np.flatnonzero(Ps.data < 0)[0])
            s, a = divmod(int(nz_row[k]), A)
            raise ModelError(
                f"P[{s}, {a}, {int(Ps.indices[k])}] = {float(Ps.data[k])!r} is negative; "
                f"transition probabilities must be >= 0"
            )
        Ps.eliminate_zeros()
        sums = np.add.reduceat(Ps.data, Ps.indptr[:-1]) if Ps.nnz else np.zeros(n_rows)
        sums[np.diff(Ps.indptr) == 0] = 0.0  # reduceat repeats an entry for empty rows
        _check_row_sums(sums, S, A)
        for arr in (Ps.data, Ps.indices, Ps.indptr):
            arr.flags.writeable = False
        self._P = None
        self._P_sparse = Ps
        return S, A

    def _init_dense_transitions(self, P) -> tuple[int, int]:
        Pd = _as_float_array(P, "P", "give an (S, A, S) array of probabilities")
        if Pd.ndim != 3 or Pd.shape[0] != Pd.shape[2]:
            raise ModelError(
                f"P must have shape (S, A, S) with P[s, a, s'] the probability of "
                f"s' after action a in s, got shape {Pd.shape}; for a sparse model give "
                f"a scipy.sparse matrix of shape (S*A, S)"
            )
        S, A, _ = Pd.shape
        if S == 0 or A == 0:
            raise ModelError(
                f"P must have at least one state and one action, got shape {Pd.shape}"
            )
        check_transition_rows(Pd)
        self._P = _readonly(Pd.copy())
        self._P_sparse = None
        return S, A

    def _check_outcomes(self, outcomes) -> np.ndarray:
        S, A = self.n_states, self.n_actions
        out = _asarray(outcomes, "outcomes", "give an integer array (S, A, O) of next states")
        if (
            out.ndim != 3
            or out.shape[:2] != (S, A)
            or out.shape[2] == 0
            or not np.issubdtype(out.dtype, np.integer)
        ):
            raise ModelError(
                f"outcomes must be an integer array (S, A, O) = ({S}, {A}, O) of next "
                f"states with O >= 1, got dtype {out.dtype} and shape {out.shape}"
            )
        if out.min() < 0 or out.max() >= S:
            s, a, o = (int(i) for i in np.argwhere((out < 0) | (out >= S))[0])
            raise ModelError(
                f"outcomes[{s}, {a}, {o}] = {int(out[s, a, o])} is not a state index in "
                f"0..{S - 1}"
            )
        out = out.astype(np.int64)
        # the support of P must lie inside the outcomes of each (s, a)
        Ps = self.P_sparse
        O = out.shape[2]
        rows = np.repeat(np.arange(S * A), np.diff(Ps.indptr))
        ok = (out.reshape(S * A, O)[rows] == Ps.indices[:, None]).any(axis=1)
        if not ok.all():
            k = int(np.flatnonzero(~ok)[0])
            s, a = divmod(int(rows[k]), A)
            t = int(Ps.indices[k])
            raise ModelError(
                f"P[{s}, {a}, {t}] = {float(Ps.data[k])!r} > 0 but state {t} is none of the "
                f"outcomes of (s={s}, a={a}), which are {out[s, a].tolist()}; add it "
                f"to the outcomes or build the model with outcomes=None"
            )
        return _readonly(out)

    # ----------------------------------------------------------------- immutability
    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(
                "TabularCMDP is immutable; build a new model, e.g. "
                "model.with_transitions(P) for new dynamics"
            )
        object.__setattr__(self, name, value)

    def _check_terminal_absorbing(self) -> None:
        if not self._terminal.any():
            return
        S, A = self.n_states, self.n_actions
        ts = np.flatnonzero(self._terminal)
        if self._P is not None:
            stay = self._P[ts, :, ts]  # (n_terminal, A)
        else:
            rows = (ts[:, None] * A + np.arange(A)[None, :]).ravel()
            stay = np.asarray(
                self._P_sparse[rows, np.repeat(ts, A)]
            ).reshape(len(ts), A)
        bad = np.abs(stay - 1.0) > row_tolerance(S)
        if bad.any():
            i, a = (int(x) for x in np.argwhere(bad)[0])
            s = int(ts[i])
            raise ModelError(
                f"terminal state {self._state_name(s)} is not absorbing: "
                f"P[{s}, {a}, {s}] = {float(stay[i, a])!r}, it must be 1 for every action; "
                f"make terminal states self-loops or drop them from `terminal`"
            )

    def _state_name(self, s: int) -> str:
        lab = self._state_labels
        return f"{s}" if lab is None else f"{s} ({lab[s]})"

    # ----------------------------------------------------------------- sizes
    @property
    def n_states(self) -> int:
        """Number of states S."""
        return (self._P if self._P is not None else self._P_sparse).shape[-1]

    @property
    def n_actions(self) -> int:
        """Number of actions A."""
        return (self._R_sa if self._R_sa is not None else self._R).shape[1]

    @property
    def n_constraints(self) -> int:
        """Number of constraints K."""
        return self._d.shape[0]

    S = n_states
    A = n_actions
    K = n_constraints

    # ----------------------------------------------------------------- stored arrays
    @property
    def P(self) -> np.ndarray:
        """Transition tensor (S, A, S), read-only."""
        if self._P is None:
            S, A = self.n_states, self.n_actions
            if S * A * S > DENSE_LIMIT:
                raise ModelError(
                    f"this sparse model has S*A*S = {S * A * S:,} entries, above the "
                    f"dense limit {DENSE_LIMIT:,}; use model.P_sparse (shape (S*A, S))"
                )
            if "P" not in self._cache:
                self._cache["P"] = _readonly(self._P_sparse.toarray().reshape(S, A, S))
            return self._cache["P"]
        return self._P

    @property
    def P_sparse(self) -> sp.csr_array:
        """Transitions as a CSR matrix (S*A, S): row ``s*A + a`` is P(.|s, a).

        Canonical (sorted indices, no duplicates, no stored zeros) and read-only.
        """
        if self._P_sparse is None:
            if "P_sparse" not in self._cache:
                S, A = self.n_states, self.n_actions
                Ps = sp.csr_array(self._P.reshape(S * A, S))
                Ps.sort_indices()
                for arr in (Ps.data, Ps.indices, Ps.indptr):
                    arr.flags.writeable = False
                self._cache["P_sparse"] = Ps
            return self._cache["P_sparse"]
        return self._P_sparse

    @property
    def R(self) -> np.ndarray:
        """Reward per transition (S, A, S), read-only (a broadcast view if R(s, a))."""
        if self._R is None:
            S, A = self.n_states, self.n_actions
            return np.broadcast_to(self._R_sa[:, :, None], (S, A, S))
        return self._R

    @property
    def C(self) -> np.ndarray:
        """Costs per transition (S, A, S, K), read-only (broadcast view if C(s, a))."""
        if self._C is None:
            S, A, K = self.n_states, self.n_actions, self.n_constraints
            return np.broadcast_to(self._C_sa[:, :, None, :], (S, A, S, K))
        return self._C

    @property
    def d(self) -> np.ndarray:
        """Budgets (K,)."""
        return self._d

    @property
    def gamma(self) -> float:
        """Discount factor."""
        return self._gamma

    @property
    def p0(self) -> np.ndarray:
        """Start distribution (S,)."""
        return self._p0

    @property
    def horizon(self) -> int | None:
        """Episode length T of the undiscounted test metric, or None."""
        return self._horizon

    @property
    def terminal(self) -> np.ndarray:
        """Boolean mask (S,) of absorbing terminal states."""
        return self._terminal

    @property
    def state_labels(self) -> tuple[str, ...] | None:
        """Names of the states (S,), or None."""
        return self._state_labels

    @property
    def action_labels(self) -> tuple[str, ...] | None:
        """Names of the actions (A,), or None."""
        return self._action_labels

    @property
    def cost_labels(self) -> tuple[str, ...] | None:
        """Names of the constraints (K,), or None."""
        return self._cost_labels

    @property
    def name(self) -> str | None:
        """A short name of the model, or None."""
        return self._name

    @property
    def outcomes(self) -> np.ndarray | None:
        """Next state of each outcome (S, A, O), for models built from outcomes."""
        return self._outcomes

    @property
    def state_features(self) -> np.ndarray:
        """Input features (S, F) of function approximators; the state index if unset."""
        if self._features is None:
            return np.arange(self.n_states, dtype=np.float64)[:, None]
        return self._features

    @property
    def is_sparse(self) -> bool:
        """True when the transitions are stored as a sparse matrix."""
        return self._P is None

    @property
    def reward_depends_on_next_state(self) -> bool:
        """True when R was given per transition (S, A, S) rather than per pair."""
        return self._R is not None

    @property
    def cost_depends_on_next_state(self) -> bool:
        """True when C was given per transition (S, A, S, K) rather than per pair."""
        return self._C is not None

    # ----------------------------------------------------------------- derived
    @property
    def r(self) -> np.ndarray:
        """Expected reward r(s, a) (S, A); zero in terminal states."""
        if "r" not in self._cache:
            if self._R is None:
                r = self._R_sa.copy()
            else:
                r = np.einsum("ijk,ijk->ij", self._P, self._R)
            r[self._terminal] = 0.0
            self._cache["r"] = _readonly(r)
        return self._cache["r"]

    @property
    def c(self) -> np.ndarray:
        """Expected costs c(s, a, k) (S, A, K); zero in terminal states."""
        if "c" not in self._cache:
            if self._C is None:
                c = self._C_sa.copy()
            else:
                c = np.einsum("ijk,ijkl->ijl", self._P, self._C)
            c[self._terminal] = 0.0
            self._cache["c"] = _readonly(c)
        return self._cache["c"]

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_outcomes(cls, next_state, prob, R, C=None, **kwargs) -> TabularCMDP:
        r"""Build a model from the outcome form.

        Outcome ``o`` of ``(s, a)`` leads to state ``next_state[s, a, o]`` with
        probability ``prob[s, a, o]``; outcomes that reach the same state (moves
        clipped at a wall) are merged:

        .. math::

            P(s' \mid s, a) = \sum_{o:\ \mathrm{next\_state}[s, a, o] = s'}
            \mathrm{prob}[s, a, o].

        Parameters
        ----------
        next_state : int array (S, A, O)
            The next state reached by each of O outcomes of ``(s, a)`` (several outcomes
            may reach the same state, e.g. moves clipped at a wall).
        prob : array (S, A, O)
            Outcome probabilities: >= 0, each (s, a) row summing to 1.
        R : array (S, A), (S, A, S) or (S,)
            Reward; an (S,) array is the reward of *entering* each state.  An
            (S, A, S) array is indexed by the next *state*, not by the outcome.
        C : array (S, A, K), (S, A, S, K), (S, K) or (S,), optional
            Costs; an (S, K) or (S,) array is the cost of *entering* each state.
        **kwargs
            Passed to :class:`TabularCMDP` (``d``, ``gamma``, ``p0``, ...).

        The outcome map is kept as :attr:`outcomes`.
        """
        ns = _asarray(next_state, "next_state", "give an integer array (S, A, O)")
        if ns.ndim != 3 or not np.issubdtype(ns.dtype, np.integer) or 0 in ns.shape:
            raise ModelError(
                f"next_state must be an integer array (S, A, O) with S, A, O >= 1, got "
                f"dtype {ns.dtype} and shape {ns.shape}"
            )
        S, A, O = ns.shape
        if ns.min() < 0 or ns.max() >= S:
            s, a, o = (int(i) for i in np.argwhere((ns < 0) | (ns >= S))[0])
            raise ModelError(
                f"next_state[{s}, {a}, {o}] = {int(ns[s, a, o])} is not a state index in "
                f"0..{S - 1}"
            )
        pr = _as_float_array(prob, "prob", "give (S, A, O) outcome probabilities")
        _check_shape(pr, (S, A, O), "prob", "(S, A, O)")
        _check_finite(pr, "prob", ("s", "a", "o"))
        if (pr < 0).any():
            s, a, o = (int(i) for i in np.argwhere(pr < 0)[0])
            raise ModelError(
                f"prob[{s}, {a}, {o}] = {float(pr[s, a, o])!r} is negative; outcome "
                f"probabilities must be >= 0"
            )
        P = np.zeros((S, A, S))
        ii, jj, _ = np.indices((S, A, O))
        np.add.at(P, (ii, jj, ns), pr)
        R_arr = _as_float_array(R, "R", "give an (S,), (S, A) or (S, A, S) array of rewards")
        if R_arr.shape == (S,):
            R_arr = np.broadcast_to(R_arr[None, None, :], (S, A, S))
        if C is not None:
            C_arr = _as_float_array(
                C, "C", "give an (S,), (S, K), (S, A, K) or (S, A, S, K) array of costs"
            )
            if C_arr.shape == (S,):
                C_arr = np.broadcast_to(C_arr[None, None, :, None], (S, A, S, 1))
            elif C_arr.ndim == 2 and C_arr.shape[0] == S:
                C_arr = np.broadcast_to(C_arr[None, None, :, :], (S, A, S, C_arr.shape[1]))
            C = C_arr
        return cls(P, R_arr, C, outcomes=ns, **kwargs)

    def _constructor_args(self) -> dict:
        return dict(
            P=self._P if self._P is not None else self._P_sparse,
            R=self._R if self._R is not None else self._R_sa,
            C=self._C if self._C is not None else self._C_sa,
            d=self._d,
            gamma=self._gamma,
            p0=self._p0,
            horizon=self._horizon,
            terminal=self._terminal,
            state_labels=self._state_labels,
            action_labels=self._action_labels,
            cost_labels=self._cost_labels,
            name=self._name,
            outcomes=self._outcomes,
            state_features=self._features,
        )

    def replace(self, **changes) -> TabularCMDP:
        """A new model equal to this one except for the given constructor arguments.

        The new model is validated like any other (``ModelError`` on bad input).
        """
        args = self._constructor_args()
        unknown = set(changes) - set(args)
        if unknown:
            raise TypeError(f"unknown model fields {sorted(unknown)}; valid: {sorted(args)}")
        args.update(changes)
        return TabularCMDP(**args)

    # immutable: copies are the object itself; pickling rebuilds (and re-validates)
    def __copy__(self) -> TabularCMDP:
        return self

    def __deepcopy__(self, memo) -> TabularCMDP:
        return self

    def __reduce__(self):
        return (_rebuild, (self._constructor_args(),))

    def with_transitions(self, P, outcomes=None) -> TabularCMDP:
        """A new model with transitions ``P`` and everything else unchanged.

        The outcome map is dropped unless given, since new dynamics need not respect it.
        """
        return self.replace(P=P, outcomes=outcomes)

    # ----------------------------------------------------------------- conversions
    def scalarised_reward(self, lam=None) -> np.ndarray:
        """The Lagrangian reward r(s, a) - lam . c(s, a) as an (S, A) array."""
        lam = self.check_multipliers(lam)
        return self.r - self.c @ lam

    def check_multipliers(self, lam) -> np.ndarray:
        """Return ``lam`` as a (K,) float64 array (zeros if None), validated."""
        K = self.n_constraints
        if lam is None:
            return np.zeros(K)
        arr = _as_float_array(lam, "lam", "give one multiplier per constraint").reshape(-1)
        if arr.size == 1 and K > 1:
            arr = np.full(K, float(arr[0]))
        if arr.shape != (K,):
            raise ModelError(
                f"lam must have one multiplier per constraint (K={K}), got {arr.size}; "
                f"give lam of shape ({K},) or one number for all constraints"
            )
        _check_finite(arr, "lam", ("k",))
        return arr

    def to_mdptoolbox(self, lam=None, sparse: bool = False):
        """Arrays in pymdptoolbox's convention: ``(P[a, s, s'], R[s, a])``.

        Parameters
        ----------
        lam : array (K,) or float, optional
            The reward is the Lagrangian reward :math:`r - \\lambda^\\top c`
            (:meth:`scalarised_reward`; plain ``r`` when ``lam`` is None), zero in
            terminal states.
        sparse : bool
            If True, ``P`` is a tuple of A ``scipy.sparse.csr_matrix`` of shape (S, S)
            (pymdptoolbox's list form), which never builds the dense tensor.

        Returns
        -------
        P : ndarray (A, S, S) or tuple of A sparse (S, S)
        R : ndarray (S, A)

        Notes
        -----
        pymdptoolbox takes the discount separately (``model.gamma``) and needs it in
        (0, 1] (and < 1 for most of its solvers).
        """
        R = np.array(self.scalarised_reward(lam))
        if sparse:
            A = self.n_actions
            Ps = self.P_sparse
            P = tuple(sp.csr_matrix(Ps[a::A]) for a in range(A))
            return P, R
        return np.ascontiguousarray(self.P.transpose(1, 0, 2)), R

    def to_quantecon(self, lam=None, sparse: bool = False):
        """Arrays in QuantEcon ``DiscreteDP``'s convention.

        Dense (default): ``(R[s, a], Q[s, a, s'], beta)`` for
        ``DiscreteDP(R, Q, beta)``.  With ``sparse=True`` the state-action-pair form
        ``(R[l], Q[l, s'], beta, s_indices, a_indices)`` with ``l = s*A + a`` and ``Q``
        a ``scipy.sparse.csr_matrix`` (S*A, S), for
        ``DiscreteDP(R, Q, beta, s_indices, a_indices)``; it never builds the dense
        tensor.  The reward is :meth:`scalarised_reward` (plain ``r`` when ``lam`` is
        None).  QuantEcon's policy evaluation needs ``beta < 1``.
        """
        R = np.array(self.scalarised_reward(lam))
        if sparse:
            S, A = self.n_states, self.n_actions
            s_idx, a_idx = np.divmod(np.arange(S * A), A)
            return R.ravel(), sp.csr_matrix(self.P_sparse), self.gamma, s_idx, a_idx
        return R, np.array(self.P), self.gamma

    def __repr__(self) -> str:
        nm = f" {self._name!r}" if self._name else ""
        return (
            f"<TabularCMDP{nm}: S={self.n_states}, A={self.n_actions}, "
            f"K={self.n_constraints}, gamma={self.gamma}, horizon={self.horizon}, "
            f"terminal={int(self._terminal.sum())}{', sparse' if self.is_sparse else ''}>"
        )


def _rebuild(args: dict) -> TabularCMDP:
    return TabularCMDP(**args)


def _labels(labels, n: int, name: str, what: str):
    if labels is None:
        return None
    if isinstance(labels, str | bytes) or _asarray(labels, name, "give strings").ndim != 1:
        raise ModelError(
            f"{name} must be a sequence of {n} strings, got {type(labels).__name__}"
        )
    out = tuple(str(x) for x in labels)
    if len(out) != n:
        raise ModelError(
            f"{name} must have {n} entries, got {len(out)}; give one label per {what}"
        )
    return out

r"""Models in from, and arrays out to, Gymnasium, QuantEcon and pymdptoolbox.

Pure array code below :mod:`rcmdp_exact.core.model`: the functions here return the keyword
arguments of :class:`~rcmdp_exact.TabularCMDP` (``*_model_args``) or another library's
arrays (``*_arrays``), and the model's classmethods
(:meth:`~rcmdp_exact.TabularCMDP.from_gymnasium`,
:meth:`~rcmdp_exact.TabularCMDP.from_quantecon`,
:meth:`~rcmdp_exact.TabularCMDP.from_mdptoolbox`) and methods
(:meth:`~rcmdp_exact.TabularCMDP.to_quantecon`,
:meth:`~rcmdp_exact.TabularCMDP.to_mdptoolbox`) call them.  No other library is
imported: environments and QuantEcon objects are read by their attributes.

The conventions:

* TabularCMDP: ``P[s, a, s']`` (or CSR (S*A, S), row ``s*A + a``), ``R[s, a, s']`` or
  ``R[s, a]``;
* Gymnasium toy-text: ``env.unwrapped.P[s][a]``, a list of ``(prob, s', reward,
  terminated)`` entries;
* QuantEcon ``DiscreteDP``: ``R[s, a]``, ``Q[s, a, s']``, or ``R[l]``, ``Q[l, s']`` over
  state-action pairs ``l`` (``s_indices``, ``a_indices``);
* pymdptoolbox: ``P[a, s, s']`` or a list of A matrices (S, S); ``R[s, a]``,
  ``R[a, s, s']`` or ``R[s]``.

**Gymnasium tables.**  An entry ``(p, s', r, terminated)`` of ``env.unwrapped.P[s][a]``
is read as follows.

* **Transitions.** Entries with the same next state are merged:
  :math:`P(s' \mid s, a) = \sum_{e \to s'} p_e`; entries with ``p = 0`` are dropped.
* **Rewards per transition.** :math:`R(s, a, s') = \sum_{e \to s'} p_e r_e /
  \sum_{e \to s'} p_e`, the probability-weighted mean of the merged entries (their
  common value, exactly, when they agree), so that the expected reward
  :math:`r(s, a) = \sum_e p_e r_e` is the environment's.
* **Terminal states.** Gymnasium ends an episode on a transition whose ``terminated``
  flag is set and never acts from the state it enters.  Every state entered by such a
  transition becomes a terminal state of the model: its rows are replaced by
  zero-reward self-loops (in FrozenLake the holes and the goal already are; in
  CliffWalking the goal's table holds ordinary moves that an episode never takes).  This
  is exact for every episode from the start distribution when no episode starts in such
  a state and no transition an episode can take (from a state reachable from the start
  without termination) enters one with ``terminated=False``; both conditions are checked
  (an :class:`~rcmdp_exact.InputError` names the start state or the two transitions
  otherwise).  A state whose rows are zero-reward self-loops with ``terminated=False``
  stays an ordinary (absorbing) state: the environment does not end the episode there
  and keeps charging whatever costs the user gives it.
* **Start and horizon.** ``p0`` is ``env.unwrapped.initial_state_distrib`` unless given;
  the horizon is ``env.spec.max_episode_steps`` (``horizon="spec"``, the
  ``TimeLimit`` of ``gymnasium.make``).
* **Size.** Up to :data:`DENSE_ENTRIES` entries S*A*S the model is dense with rewards
  and costs per transition; above it, sparse (CSR (S*A, S)) with the expected reward
  and costs per pair.

QuantEcon and pymdptoolbox describe plain MDPs: the model gets their transitions, their
expected rewards (per transition for pymdptoolbox's ``R[a, s, s']``) and their discount;
costs ``C``, budgets ``d`` and any other field (``p0``, ``horizon``, ``terminal``, ...)
are given in the model's own convention.  Arrays come in and go out unchanged, so
``TabularCMDP.from_quantecon(model.to_quantecon())`` and
``TabularCMDP.from_mdptoolbox(*model.to_mdptoolbox(), model.gamma)`` reproduce ``P``,
the expected rewards and ``gamma`` bit for bit (dense and sparse).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from .._checks import (
    InputError,
    as_array,
    as_float_array,
    check_choice,
    check_distributions,
    check_finite,
    check_indices,
    check_int,
    check_nonnegative,
    check_real,
    check_row_sums,
)

__all__ = [
    "DENSE_ENTRIES",
    "mdptoolbox_arrays",
    "mdptoolbox_model_args",
    "quantecon_model_args",
]

#: Largest S*A*S for which :func:`gymnasium_model_args` builds a dense model (2**24:
#: 128 MB per float64 tensor); larger tables give a sparse model with per-pair rewards.
DENSE_ENTRIES = 2**24


# --------------------------------------------------------------------------- out
def mdptoolbox_arrays(transitions, r: np.ndarray, sparse: bool = False):
    """Arrays in pymdptoolbox's convention: ``(P[a, s, s'], R[s, a])``.

    Parameters
    ----------
    transitions : ndarray (S, A, S), or CSR (S*A, S) when ``sparse``
        The model's transitions (row ``s*A + a`` of the CSR form is P(. | s, a)).
    r : ndarray (S, A)
        The reward per pair, copied into ``R``.
    sparse : bool
        Return ``P`` as a tuple of A ``scipy.sparse.csr_matrix`` (S, S) (pymdptoolbox's
        list form), which never builds the dense tensor.

    Returns
    -------
    P : ndarray (A, S, S) or tuple of A sparse (S, S)
    R : ndarray (S, A)
    """
    R = np.array(r)
    if sparse:
        A = R.shape[1]
        return tuple(sp.csr_matrix(transitions[a::A]) for a in range(A)), R
    return np.ascontiguousarray(transitions.transpose(1, 0, 2)), R


def quantecon_arrays(transitions, r: np.ndarray, gamma: float, sparse: bool = False):
    """Arrays in QuantEcon ``DiscreteDP``'s convention.

    Dense: ``(R[s, a], Q[s, a, s'], beta)`` from ``transitions`` (S, A, S).  With
    ``sparse=True``: the state-action-pair form ``(R[l], Q[l, s'], beta, s_indices,
    a_indices)`` with ``l = s*A + a`` and ``Q`` a ``scipy.sparse.csr_matrix`` (S*A, S),
    from ``transitions`` in CSR form (S*A, S).  ``r`` (S, A) is copied.
    """
    R = np.array(r)
    if sparse:
        S, A = R.shape
        s_idx, a_idx = np.divmod(np.arange(S * A), A)
        return R.ravel(), sp.csr_matrix(transitions), gamma, s_idx, a_idx
    return R, np.array(transitions), gamma


# --------------------------------------------------------------------------- helpers
def _check_dense_rows(P: np.ndarray, name: str, axes: tuple[str, str]) -> None:
    """A dense (X, Y, S) array of finite, non-negative rows summing to 1."""
    check_finite(P, name, (*axes, "s'"))
    check_distributions(P, name, axes, what="transition probabilities")


def _check_csr_rows(P: sp.csr_array, name: str, axes: tuple[str, str], n_second: int) -> None:
    """A CSR (X*Y, S) of finite, non-negative rows summing to 1; row i*Y + j is (i, j)."""
    rows = np.repeat(np.arange(P.shape[0]), np.diff(P.indptr))
    pos = np.column_stack([*np.divmod(rows, n_second), P.indices])
    check_finite(P.data, name, (*axes, "s'"), positions=pos)
    check_nonnegative(P.data, name, "transition probabilities", positions=pos)
    sums = np.zeros(P.shape[0])
    np.add.at(sums, rows, P.data)
    check_row_sums(sums.reshape(-1, n_second), P.shape[1], name, axes)


def _as_csr(M, name: str) -> sp.csr_array:
    """A real sparse matrix as a canonical float64 CSR array (a copy)."""
    if np.iscomplexobj(M.data) or M.dtype.kind not in "biuf":
        raise InputError(f"{name} must hold real numbers, got dtype {M.dtype}")
    out = sp.csr_array(M, dtype=np.float64, copy=True)
    out.sum_duplicates()
    out.sort_indices()
    return out


def _no_budgets_without_costs(costs, d, what: str) -> None:
    if costs is None and d is not None:
        raise InputError(
            f"budgets d were given but no {what}; give the costs too, or drop d for a "
            f"model without constraints"
        )


# --------------------------------------------------------------------------- QuantEcon
def quantecon_model_args(ddp, C=None, d=None, **kwargs) -> dict:
    r"""Constructor arguments of a model from a QuantEcon ``DiscreteDP``.

    Parameters
    ----------
    ddp : quantecon.markov.DiscreteDP, or a tuple
        Read by its attributes ``R``, ``Q``, ``beta`` (and ``s_indices``,
        ``a_indices`` in the state-action-pair form), or the tuple ``(R, Q, beta)`` /
        ``(R, Q, beta, s_indices, a_indices)`` that
        :meth:`~rcmdp_exact.TabularCMDP.to_quantecon` returns.  Dense form: ``R``
        (S, A), ``Q`` (S, A, S) give a dense model.  State-action-pair form: ``R`` (L,),
        ``Q`` (L, S) dense or sparse, pair ``l`` being state ``s_indices[l]`` and action
        ``a_indices[l]``; every pair (s, a) with a < A = ``max(a_indices) + 1`` must
        appear exactly once.  A sparse ``Q`` gives a sparse model (CSR (S*A, S), rewards
        and costs per pair), a dense one a dense model.
    C, d : arrays, optional
        Costs (S, A, K) (or (S, A, S, K) for a dense model) and budgets (K,), in the
        model's convention.
    **kwargs
        Any other argument of :class:`~rcmdp_exact.TabularCMDP` (``p0``, ``horizon``,
        ``terminal``, ``name``, ...).

    Returns
    -------
    dict
        ``P``, ``R`` (the expected reward per pair), ``gamma`` = ``beta``, ``C``, ``d``
        and ``kwargs``.

    Raises
    ------
    InputError
        On an object without these attributes, a reward of :math:`-\infty` (QuantEcon's
        mark of an infeasible action: a model has every action in every state, so give
        the action a finite reward, for example a large negative one, instead), a
        missing or repeated pair, or rows of ``Q`` that are not distributions.
    """
    if isinstance(ddp, tuple | list):
        if len(ddp) not in (3, 5):
            raise InputError(
                f"ddp as a tuple must be (R, Q, beta) or (R, Q, beta, s_indices, "
                f"a_indices), as TabularCMDP.to_quantecon returns, got {len(ddp)} items"
            )
        R, Q, beta, *idx = ddp
        s_idx, a_idx = idx if idx else (None, None)
        src = "ddp"
        names = {"R": f"{src}[0] (R)", "Q": f"{src}[1] (Q)", "beta": f"{src}[2] (beta)"}
    else:
        missing = [a for a in ("R", "Q", "beta") if not hasattr(ddp, a)]
        if missing:
            raise InputError(
                f"ddp must be a quantecon.markov.DiscreteDP (attributes R, Q, beta) or the "
                f"tuple (R, Q, beta[, s_indices, a_indices]) of TabularCMDP.to_quantecon; "
                f"a {type(ddp).__name__} has no attribute {', '.join(map(repr, missing))}"
            )
        R, Q, beta = ddp.R, ddp.Q, ddp.beta
        s_idx = getattr(ddp, "s_indices", None)
        a_idx = getattr(ddp, "a_indices", None)
        names = {"R": "ddp.R", "Q": "ddp.Q", "beta": "ddp.beta"}
    gamma = check_real(beta, f"{names['beta']} (the discount factor)", 0.0, 1.0)
    _no_budgets_without_costs(C, d, "costs C")
    if sp.issparse(Q):
        Qs = _as_csr(Q, names["Q"])
        return _quantecon_pairs(R, Qs, gamma, s_idx, a_idx, names, C, d, kwargs)
    Qd = as_float_array(Q, names["Q"], "give Q (S, A, S), or (L, S) with s_indices and "
                        "a_indices", finite=False)
    if Qd.ndim == 2:
        return _quantecon_pairs(R, Qd, gamma, s_idx, a_idx, names, C, d, kwargs)
    if Qd.ndim != 3 or Qd.shape[0] != Qd.shape[2] or 0 in Qd.shape:
        raise InputError(
            f"{names['Q']} must have shape (S, A, S) (dense form) or (L, S) (state-action "
            f"pairs), got {Qd.shape}"
        )
    S, A = Qd.shape[:2]
    Rd = as_float_array(R, names["R"], "give R (S, A)", finite=False)
    if Rd.shape != (S, A):
        raise InputError(f"{names['R']} must have shape (S, A) = ({S}, {A}) like Q "
                         f"(S, A, S) = {Qd.shape}, got {Rd.shape}")
    _refuse_infeasible(Rd.reshape(-1), np.arange(S * A), A, names["R"])
    _check_dense_rows(Qd, names["Q"], ("s", "a"))
    return dict(P=Qd, R=Rd, C=C, d=d, gamma=gamma, **kwargs)


def _refuse_infeasible(R_flat: np.ndarray, pair: np.ndarray, A: int, name: str) -> None:
    """Refuse -inf rewards (QuantEcon's infeasible actions); ``pair[l]`` = s*A + a."""
    bad = np.flatnonzero(np.isneginf(R_flat))
    if bad.size:
        s, a = divmod(int(pair[bad[0]]), A)
        raise InputError(
            f"{name} is -inf for (s={s}, a={a}) ({bad.size} such pairs): QuantEcon marks "
            f"action {a} infeasible in state {s}, but a TabularCMDP has every action in "
            f"every state; give it a finite reward (a large negative one keeps an optimal "
            f"policy away from it)"
        )


def _quantecon_pairs(R, Q, gamma, s_idx, a_idx, names, C, d, kwargs) -> dict:
    """The state-action-pair form: R (L,), Q (L, S) dense or CSR."""
    if s_idx is None or a_idx is None:
        raise InputError(
            f"{names['Q']} of shape {Q.shape} is in QuantEcon's state-action-pair form, "
            f"which needs s_indices and a_indices; give them (or Q of shape (S, A, S))"
        )
    L, S = Q.shape
    if S == 0 or L == 0:
        raise InputError(f"{names['Q']} must have shape (L, S) with L, S >= 1, got {Q.shape}")
    Rf = as_float_array(R, names["R"], "give R (L,), one reward per pair", finite=False)
    if Rf.shape != (L,):
        raise InputError(f"{names['R']} must have shape (L,) = ({L},), one reward per "
                         f"state-action pair (row of Q), got {Rf.shape}")
    s_idx = check_indices(s_idx, "s_indices", S, "state")
    a_idx = check_indices(a_idx, "a_indices", L, "action")  # A <= L when pairs are complete
    if s_idx.shape != (L,) or a_idx.shape != (L,):
        raise InputError(f"s_indices and a_indices must have shape (L,) = ({L},), got "
                         f"{s_idx.shape} and {a_idx.shape}")
    A = int(a_idx.max()) + 1
    pair = s_idx * A + a_idx
    count = np.bincount(pair, minlength=S * A)
    if (count > 1).any():
        s, a = divmod(int(np.flatnonzero(count > 1)[0]), A)
        raise InputError(f"the pair (s={s}, a={a}) appears {int(count[s * A + a])} times "
                         f"in s_indices, a_indices; each pair must appear once")
    if (count == 0).any():
        s, a = divmod(int(np.flatnonzero(count == 0)[0]), A)
        raise InputError(
            f"the pair (s={s}, a={a}) is missing from s_indices, a_indices "
            f"({int((count == 0).sum())} of {S * A} pairs missing): QuantEcon treats a "
            f"missing pair as an infeasible action, but a TabularCMDP has every action "
            f"in every state ({A} actions, from max(a_indices) + 1); add the pair with a "
            f"finite reward (a large negative one keeps an optimal policy away from it)"
        )
    _refuse_infeasible(Rf, pair, A, names["R"])
    order = np.empty(L, dtype=np.int64)
    order[pair] = np.arange(L)
    Rsa = Rf[order].reshape(S, A)
    if sp.issparse(Q):
        P = Q if np.array_equal(order, np.arange(L)) else sp.csr_array(Q[order])
        _check_csr_rows(P, names["Q"], ("s", "a"), A)
    else:
        P = Q[order].reshape(S, A, S)
        _check_dense_rows(P, names["Q"], ("s", "a"))
    return dict(P=P, R=Rsa, C=C, d=d, gamma=gamma, **kwargs)


# --------------------------------------------------------------------------- pymdptoolbox
def _matrix_list(X) -> list | None:
    """The A matrices of pymdptoolbox's list form, or None for a plain array."""
    if isinstance(X, np.ndarray) and X.dtype == object:
        return list(X)
    if isinstance(X, list | tuple) and any(sp.issparse(x) for x in X):
        return list(X)
    return None


def mdptoolbox_model_args(P, R, gamma, C=None, d=None, **kwargs) -> dict:
    r"""Constructor arguments of a model from pymdptoolbox arrays.

    Parameters
    ----------
    P : array (A, S, S), or a list / tuple / object array of A matrices (S, S)
        ``P[a][s, s']``.  Any ``scipy.sparse`` matrix in the list gives a sparse model
        (CSR (S*A, S), rewards and costs per pair); otherwise the model is dense.
    R : array (S,), (S, A) or (A, S, S), or a list of A matrices (S, S)
        pymdptoolbox's three reward forms: per state (every action of ``s`` earns
        ``R[s]``), per pair ``R[s, a]``, or per transition ``R[a][s, s']``.  Per
        transition, a dense model keeps :math:`R(s, a, s') = R[a][s, s']`; a sparse one
        stores the expected :math:`r(s, a) = \sum_{s'} P[a][s, s'] R[a][s, s']`.
    gamma : float
        The discount, which pymdptoolbox takes apart from the arrays.
    C, d : arrays, optional
        Costs (S, A, K) (or (S, A, S, K) for a dense model) and budgets (K,), in the
        model's convention.
    **kwargs
        Any other argument of :class:`~rcmdp_exact.TabularCMDP`.

    Returns
    -------
    dict
        ``P`` (S, A, S) or CSR (S*A, S) with row ``s*A + a`` = ``P[a][s, :]``, ``R``,
        ``gamma``, ``C``, ``d`` and ``kwargs``.
    """
    _no_budgets_without_costs(C, d, "costs C")
    mats = _matrix_list(P)
    if mats is not None:
        if not mats:
            raise InputError("P is an empty list; give A >= 1 matrices (S, S)")
        if not any(sp.issparse(m) for m in mats):
            P = [as_float_array(m, f"P[{a}]", "give a matrix (S, S)", finite=False)
                 for a, m in enumerate(mats)]
            for a, m in enumerate(P):
                if m.shape != P[0].shape:
                    raise InputError(f"P[{a}] has shape {m.shape} but P[0] has "
                                     f"{P[0].shape}; give A matrices (S, S) of one shape")
            P, mats = np.stack(P), None
    if mats is not None:
        A = len(mats)
        blocks = []
        for a, m in enumerate(mats):
            M = _as_csr(m, f"P[{a}]") if sp.issparse(m) else sp.csr_array(
                as_float_array(m, f"P[{a}]", "give a matrix (S, S)", finite=False))
            blocks.append(M)
        S = blocks[0].shape[1]
        for a, M in enumerate(blocks):
            if M.shape != (S, S) or S == 0:
                raise InputError(f"P[{a}] must have shape (S, S) = ({S}, {S}) like P[0], "
                                 f"got {M.shape}")
        stacked = sp.vstack(blocks, format="csr")  # row a*S + s
        perm = (np.arange(S)[:, None] + S * np.arange(A)[None, :]).ravel()
        Ps = sp.csr_array(stacked[perm])  # row s*A + a
        _check_csr_rows(sp.csr_array(stacked), "P", ("a", "s"), S)
        return dict(P=Ps, R=_mdptoolbox_reward(R, S, A, blocks, sparse=True),
                    C=C, d=d, gamma=gamma, **kwargs)
    if sp.issparse(P):
        raise InputError(
            f"P is one scipy.sparse matrix of shape {P.shape}; pymdptoolbox's sparse form "
            f"is a list of A sparse matrices (S, S), one per action"
        )
    Pd = as_float_array(P, "P", "give P[a, s, s'] (A, S, S) or a list of A matrices (S, S)",
                        finite=False)
    if Pd.ndim != 3 or Pd.shape[1] != Pd.shape[2] or 0 in Pd.shape:
        raise InputError(f"P must have shape (A, S, S) (pymdptoolbox's P[a, s, s']), got "
                         f"{Pd.shape}")
    A, S = Pd.shape[:2]
    _check_dense_rows(Pd, "P", ("a", "s"))
    return dict(P=Pd.transpose(1, 0, 2), R=_mdptoolbox_reward(R, S, A, Pd, sparse=False),
                C=C, d=d, gamma=gamma, **kwargs)


def _mdptoolbox_reward(R, S: int, A: int, P, sparse: bool) -> np.ndarray:
    """(S, A) per pair or, for a dense model, (S, A, S) per transition."""
    fix = "give R (S,), R[s, a] (S, A) or R[a, s, s'] (A, S, S)"
    mats = _matrix_list(R)
    if mats is not None:
        if len(mats) != A:
            raise InputError(f"R as a list of matrices must hold A = {A} matrices (S, S), "
                             f"one per action, got {len(mats)}")
        if sparse:
            r = np.empty((S, A))
            for a, m in enumerate(mats):
                M = _as_csr(m, f"R[{a}]") if sp.issparse(m) else sp.csr_array(
                    as_float_array(m, f"R[{a}]", fix, finite=False))
                if M.shape != (S, S):
                    raise InputError(f"R[{a}] must have shape (S, S) = ({S}, {S}), got "
                                     f"{M.shape}")
                check_finite(M.data, f"R[{a}] (stored entries)")
                r[:, a] = np.asarray(P[a].multiply(M).sum(axis=1)).ravel()
            return r
        R = [m.toarray() if sp.issparse(m) else as_float_array(m, f"R[{a}]", fix, finite=False)
             for a, m in enumerate(mats)]
        for a, m in enumerate(R):
            if m.shape != (S, S):
                raise InputError(f"R[{a}] must have shape (S, S) = ({S}, {S}), got {m.shape}")
        R = np.stack(R)
    Ra = as_float_array(R, "R", fix, finite=False)
    if Ra.shape == (S,):
        return np.repeat(Ra[:, None], A, axis=1)
    if Ra.shape == (S, A):
        return Ra
    if Ra.shape == (A, S, S):
        if not sparse:
            return Ra.transpose(1, 0, 2)
        check_finite(Ra, "R", ("a", "s", "s'"))
        return np.stack([np.asarray(P[a].multiply(Ra[a]).sum(axis=1)).ravel()
                         for a in range(A)], axis=1)
    raise InputError(f"R must have shape (S,) = ({S},), (S, A) = ({S}, {A}) or (A, S, S) = "
                     f"({A}, {S}, {S}), got {Ra.shape}")


# --------------------------------------------------------------------------- Gymnasium
def _discrete_size(env, base, attr: str) -> int:
    space = getattr(base, attr, None)
    if space is None:
        space = getattr(env, attr, None)
    if space is None:
        raise InputError(
            f"env has no {attr}; give a Gymnasium environment (gymnasium.make(...)) with "
            f"Discrete observation and action spaces"
        )
    n = getattr(space, "n", None)
    if n is None or not isinstance(n, numbers.Integral) or getattr(space, "shape", ()) != ():
        kind = "a continuous space" if type(space).__name__ == "Box" else "not Discrete(n)"
        raise InputError(
            f"env.{attr} is {space!r}, {kind}; TabularCMDP.from_gymnasium reads finite "
            f"environments with Discrete observation and action spaces and a transition "
            f"table env.unwrapped.P (the toy-text FrozenLake, CliffWalking, Taxi); "
            f"discretise a continuous environment first"
        )
    start = getattr(space, "start", 0)
    if start != 0:
        raise InputError(f"env.{attr} is {space!r}, which starts at {int(start)}; "
                         f"from_gymnasium needs spaces numbered from 0")
    return check_int(int(n), f"the size n of env.{attr}", 1)


def _read_table(table, S: int, A: int):
    """Flatten ``P[s][a] = [(p, s', r, terminated), ...]`` to arrays (one per entry)."""
    pairs, probs, nexts, rewards, dones, where_ = [], [], [], [], [], []
    for s in range(S):
        try:
            row = table[s]
        except (KeyError, IndexError, TypeError):
            raise InputError(f"env.unwrapped.P has no entry for state {s}; the table must "
                             f"list every state 0..{S - 1}") from None
        for a in range(A):
            try:
                entries = row[a]
            except (KeyError, IndexError, TypeError):
                raise InputError(f"env.unwrapped.P[{s}] has no entry for action {a}; the "
                                 f"table must list every action 0..{A - 1}") from None
            if not isinstance(entries, Sequence) or len(entries) == 0:
                raise InputError(f"env.unwrapped.P[{s}][{a}] must be a non-empty list of "
                                 f"(probability, next_state, reward, terminated) tuples, got "
                                 f"{entries!r}")
            for j, e in enumerate(entries):
                if not isinstance(e, Sequence) or len(e) != 4:
                    raise InputError(
                        f"env.unwrapped.P[{s}][{a}][{j}] = {e!r} is not a (probability, "
                        f"next_state, reward, terminated) tuple"
                    )
                pairs.append(s * A + a)
                where_.append((s, a, j))
                probs.append(e[0])
                nexts.append(e[1])
                rewards.append(e[2])
                dones.append(e[3])
    pos = np.array(where_, dtype=np.int64)
    axes = ("s", "a", "entry")
    prob = as_float_array(probs, "the probabilities of env.unwrapped.P",
                          "give numbers", finite=False)
    check_finite(prob, "env.unwrapped.P probability", axes, positions=pos)
    check_nonnegative(prob, "env.unwrapped.P probability", "transition probabilities",
                      positions=pos)
    reward = as_float_array(rewards, "the rewards of env.unwrapped.P", "give numbers",
                            finite=False)
    check_finite(reward, "env.unwrapped.P reward", axes, positions=pos)
    raw_next = np.asarray(nexts)
    if raw_next.dtype.kind not in "iu":
        k = next(i for i, x in enumerate(nexts) if not isinstance(x, numbers.Integral))
        raise InputError(f"the next state of env.unwrapped.P{list(map(int, pos[k]))} is "
                         f"{nexts[k]!r}, not a state index")
    bad = (raw_next < 0) | (raw_next >= S)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        s, a, j = (int(x) for x in pos[k])
        raise InputError(f"the next state of env.unwrapped.P[{s}][{a}][{j}] is "
                         f"{int(raw_next[k])}, outside the states 0..{S - 1}")
    done = np.array([bool(x) for x in dones])
    return np.array(pairs, dtype=np.int64), prob, raw_next.astype(np.int64), reward, done


def _weighted_mean(values, prob, first, psum):
    """Per group of entries (starting at ``first``): the probability-weighted mean of
    ``values`` (rows), exactly the common value where all entries agree."""
    vmin = np.minimum.reduceat(values, first)
    vmax = np.maximum.reduceat(values, first)
    w = prob.reshape(-1, *([1] * (values.ndim - 1)))
    mean = np.add.reduceat(w * values, first) / psum.reshape(-1, *([1] * (values.ndim - 1)))
    return np.where(vmin == vmax, vmin, mean)


def _merge_entries(pair, prob, nxt, reward, done, S: int, extra=None):
    """Merge entries with the same (s, a, s'): summed probability, weighted mean reward
    (and of the rows of ``extra`` (N, K), per-entry costs, if given)."""
    keep = prob > 0
    pair, prob, nxt, reward, done = pair[keep], prob[keep], nxt[keep], reward[keep], done[keep]
    key = pair * S + nxt
    order = np.argsort(key, kind="stable")
    key, prob, reward, done = key[order], prob[order], reward[order], done[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    psum = np.add.reduceat(prob, first)
    r = _weighted_mean(reward, prob, first, psum)
    done_any = np.logical_or.reduceat(done, first)
    done_all = np.logical_and.reduceat(done, first)
    ukey = key[first]
    out = (ukey // S, ukey % S, psum, r, done_any, done_all)
    if extra is None:
        return out
    return (*out, _weighted_mean(extra[keep][order], prob, first, psum))


def _start_distribution(p0, base, S: int) -> np.ndarray:
    if p0 is None:
        p0 = getattr(base, "initial_state_distrib", None)
        name = "env.unwrapped.initial_state_distrib"
        if p0 is None:
            raise InputError(
                "env.unwrapped has no initial_state_distrib; give the start distribution "
                "p0= ((S,) probabilities or a start state index)"
            )
    else:
        name = "p0"
    raw = as_array(p0, name, "give an (S,) distribution or a start state index")
    if raw.ndim == 0 and raw.dtype.kind in "iu":
        out = np.zeros(S)
        out[check_int(int(raw), f"start state {name}", 0, S - 1)] = 1.0
        return out
    out = as_float_array(p0, name, "give an (S,) distribution", shape=(S,), axes=("s",))
    return check_distributions(out, name, what="start probabilities")


#: How :func:`_array_costs` reads a cost array, by its number of axes.
_COST_READINGS = {1: "the cost of entering each state (S,), K = 1",
                  2: "the costs of entering each state (S, K)",
                  3: "costs per pair (S, A, K)", 4: "costs per transition (S, A, S', K)"}


def _array_costs(costs, S: int, A: int, dst, d=None):
    """Costs given as an array: (per-entry costs (N, K), None) for entering costs, or
    (None, the array) for costs per pair (S, A, K) or per transition (S, A, S', K).

    With the budgets ``d``, a number K of costs that differs from the number of budgets
    is refused with the shape received and how it was read: an (S, A, S') array of one
    cost per transition is read as (S, A, K) with K = S, an (S, A) array of one cost per
    pair as (S, K) with K = A."""
    accepted = (f"the accepted shapes are (S,) or (S, K) for the cost of entering each "
                f"state, (S, A, K) per pair and (S, A, S', K) per transition, with S={S}, "
                f"A={A} and K the number of budgets in d")
    arr = as_float_array(costs, "costs", f"give costs as an array; {accepted}", finite=False)
    want = {1: (S,), 2: (S, None), 3: (S, A, None), 4: (S, A, S, None)}.get(arr.ndim)
    if want is None or any(w is not None and w != n
                           for w, n in zip(want, arr.shape, strict=True)):
        raise InputError(f"costs has shape {arr.shape}, which is none of the shapes this "
                         f"model reads; {accepted}")
    K = 1 if arr.ndim == 1 else arr.shape[-1]
    try:
        n_d = int(np.size(np.asarray(d, dtype=np.float64))) if d is not None else K
    except (TypeError, ValueError):  # not numbers: the model's own check names d
        n_d = K
    if n_d != K:
        one = {2: ("one cost per pair (S, A)", f"({S}, {A}, 1)", A),
               3: ("one cost per transition (S, A, S')", f"({S}, {A}, {S}, 1)", S)}
        hint = ""
        if arr.ndim in one and n_d == 1 and K == one[arr.ndim][2]:  # the ambiguous shapes
            what, shape, _ = one[arr.ndim]
            hint = f"; for {what}, give costs[..., None], of shape {shape}"
        raise InputError(
            f"costs of shape {arr.shape} were read as {_COST_READINGS[arr.ndim]} with "
            f"K = {K} constraint{'s' if K != 1 else ''}, but d gives {n_d} budget"
            f"{'s' if n_d != 1 else ''}{hint}; {accepted}")
    axes = {1: ("s'",), 2: ("s'", "k"), 3: ("s", "a", "k"), 4: ("s", "a", "s'", "k")}
    check_finite(arr, "costs", axes[arr.ndim])
    if arr.ndim == 1:
        return arr[dst][:, None], None
    if arr.ndim == 2:
        return arr[dst], None
    return None, arr


#: Keyword arguments through which a cost function sees an entry of the table.
ENTRY_FIELDS = ("reward", "terminated")


def _sees_the_entry(costs: Callable) -> bool:
    """True when ``costs`` takes a keyword named in :data:`ENTRY_FIELDS` (or
    ``**kwargs``): it is then called on every entry of the table, with its reward and
    termination."""
    import inspect

    try:
        params = inspect.signature(costs).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return any(p.kind is p.VAR_KEYWORD or (p.name in ENTRY_FIELDS and p.kind in (
        p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)) for p in params)


def _call_costs(costs: Callable, S: int, A: int, src_pair, dst, reward=None, done=None):
    """Evaluate ``costs(s, a, s')`` on every listed transition: (N, K); with ``reward``
    and ``done`` (N,), ``costs(s, a, s', reward=r, terminated=t)`` on every entry."""
    out = None
    for i, (l, t) in enumerate(zip(src_pair.tolist(), dst.tolist(), strict=True)):
        s, a = divmod(l, A)
        if reward is None:
            value = costs(s, a, t)
        else:
            value = costs(s, a, t, reward=float(reward[i]), terminated=bool(done[i]))
        value = np.asarray(value, dtype=np.float64)
        if value.ndim > 1:
            raise InputError(f"costs({s}, {a}, {t}) returned shape {value.shape}; return a "
                             f"number or a (K,) array")
        value = value.reshape(-1)
        if out is None:
            out = np.empty((len(dst), value.size))
            if value.size == 0:
                raise InputError(f"costs({s}, {a}, {t}) returned no value; return a "
                                 f"number or a (K,) array with K >= 1")
        elif value.size != out.shape[1]:
            raise InputError(f"costs({s}, {a}, {t}) returned {value.size} values but "
                             f"earlier calls returned {out.shape[1]}; return the same "
                             f"number K of costs for every transition")
        if not np.isfinite(value).all():
            raise InputError(f"costs({s}, {a}, {t}) = {value.tolist()} is not finite; "
                             f"return finite costs")
        out[i] = value
    return np.zeros((0, 1)) if out is None else out


def _reachable(src, dst, follow, start, S: int) -> np.ndarray:
    """States reachable from ``start`` (S,) bool along the edges ``src -> dst`` with
    ``follow`` set: an (S,) bool mask."""
    from scipy.sparse.csgraph import breadth_first_order

    roots = np.flatnonzero(start)
    rows = np.concatenate([src[follow], np.full(roots.size, S)])
    cols = np.concatenate([dst[follow], roots])
    graph = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(S + 1, S + 1))
    seen = breadth_first_order(graph, S, directed=True, return_predecessors=False)
    mask = np.zeros(S + 1, dtype=bool)
    mask[seen] = True
    return mask[:S]


def gymnasium_model_args(env, costs=None, d=None, gamma: float = 0.99, horizon="spec",
                         p0=None, name=None) -> dict:
    r"""Constructor arguments of a model from a Gymnasium toy-text environment.

    See the module docstring for how the table is read (merged next states,
    probability-weighted rewards, terminal states, start, horizon).

    Parameters
    ----------
    env : gymnasium.Env
        An environment with ``Discrete`` observation and action spaces whose
        ``env.unwrapped.P[s][a]`` lists ``(probability, next_state, reward,
        terminated)`` tuples (FrozenLake, CliffWalking, Taxi).
    costs : array or callable, optional
        The K constraint costs, in one of these forms:

        * ``(S,)`` or ``(S, K)``: the cost of *entering* each state, C(s, a, s') = c(s');
        * ``(S, A, K)``: per pair (kept per pair);
        * ``(S, A, S, K)``: per transition;
        * a function ``costs(s, a, s_next)`` returning a number or a (K,) array.  It is
          called once for each transition (s, a, s') of the model's support, that is
          :math:`P(s' \mid s, a) > 0` after merging, with s not terminal, in the order
          of s, then a, then s' (the replaced rows of terminal states earn nothing);
        * a function that also takes the keywords ``reward`` and ``terminated``
          (``costs(s, a, s_next, reward, terminated)``, or ``**kwargs``): it is called
          on every entry of the table, with the entry's own reward and termination, and
          the costs of entries merged into one transition are averaged with their
          probabilities as weights, like the rewards.  CliffWalking's cliff, which sends
          the agent back to the start with reward -100 and ``terminated=False``, is
          ``lambda s, a, t, reward, terminated: float(reward == -100)``.

        Costs off the support and in terminal states are 0.
    d : array (K,), optional
        Budgets; required with ``costs``.
    gamma : float
        Discount factor (default 0.99).
    horizon : "spec", int or None
        ``"spec"`` (default): ``env.spec.max_episode_steps``, the ``TimeLimit`` that
        ``gymnasium.make`` adds (None when there is none, as for CliffWalking or for
        ``env.unwrapped``, which does not truncate); an int; or None for no horizon.
    p0 : array (S,) or int, optional
        Start distribution; default ``env.unwrapped.initial_state_distrib`` (an
        environment without one needs ``p0``).
    name : str, optional
        Default: ``env.spec.id``, else the environment's class name.

    Returns
    -------
    dict
        ``P``, ``R``, ``C``, ``d``, ``gamma``, ``p0``, ``horizon``, ``terminal`` (a
        boolean mask) and ``name``.
    """
    if env is None or not (hasattr(env, "unwrapped") or hasattr(env, "P")):
        raise InputError(f"env must be a Gymnasium environment (gymnasium.make(...)) or, "
                         f"for TabularCMDP.from_gymnasium, the id of one; got "
                         f"{type(env).__name__}")
    base = getattr(env, "unwrapped", env)
    S = _discrete_size(env, base, "observation_space")
    A = _discrete_size(env, base, "action_space")
    table = getattr(base, "P", None)
    if table is None or not isinstance(table, Mapping | Sequence):
        raise InputError(
            f"env.unwrapped ({type(base).__name__}) has no transition table P; "
            f"from_gymnasium needs P[s][a] = [(probability, next_state, reward, "
            f"terminated), ...] as the toy-text environments (FrozenLake, CliffWalking, "
            f"Taxi) provide"
        )
    if costs is None:
        _no_budgets_without_costs(costs, d, "costs")
    elif d is None:
        raise InputError("costs were given but no budgets d; give d, one budget per "
                         "cost function (K of them)")
    if isinstance(horizon, str):
        check_choice(horizon, "horizon", ("spec",), hint=" (or an int, or None)")
        spec = getattr(env, "spec", None) or getattr(base, "spec", None)
        horizon = getattr(spec, "max_episode_steps", None)
    spec = getattr(env, "spec", None) or getattr(base, "spec", None)
    if name is None:
        name = getattr(spec, "id", None) or type(base).__name__

    pair, prob, nxt, reward, done = _read_table(table, S, A)
    sums = np.bincount(pair, weights=prob, minlength=S * A)
    check_row_sums(sums.reshape(S, A), S, "env.unwrapped.P", ("s", "a"))
    sees = callable(costs) and _sees_the_entry(costs)
    if sees:  # the costs of every entry of the table, merged like the rewards
        per_entry = _call_costs(costs, S, A, pair, nxt, reward=reward, done=done)
        src, dst, p, r, done_any, done_all, c_merged = _merge_entries(
            pair, prob, nxt, reward, done, S, extra=per_entry)
    else:
        src, dst, p, r, done_any, done_all = _merge_entries(pair, prob, nxt, reward, done, S)
    start = _start_distribution(p0, base, S)

    # terminal states: entered by a transition with terminated=True
    terminal = np.zeros(S, dtype=bool)
    terminal[dst[done_any]] = True
    starts_in = np.flatnonzero(terminal & (start > 0))
    if starts_in.size:
        t = int(starts_in[0])
        k = int(np.flatnonzero(done_any & (dst == t))[0])
        s, a = divmod(int(src[k]), A)
        raise InputError(
            f"the start distribution puts probability {float(start[t])!r} on state {t}, "
            f"which the environment enters with terminated=True (from s={s}, a={a}); "
            f"from_gymnasium makes such states absorbing, so an episode cannot start there; "
            f"give a p0 without them"
        )
    outside = ~terminal[src // A]
    reach = _reachable(src // A, dst, outside & ~done_all, start > 0, S)
    clash = reach[src // A] & outside & terminal[dst] & ~done_all
    if clash.any():
        k = int(np.flatnonzero(clash)[0])
        t = int(dst[k])
        s2, a2 = divmod(int(src[k]), A)
        k1 = int(np.flatnonzero(done_any & (dst == t))[0])
        s1, a1 = divmod(int(src[k1]), A)
        raise InputError(
            f"state {t} is entered with terminated=True from (s={s1}, a={a1}) but with "
            f"terminated=False from (s={s2}, a={a2}), which an episode reaches from the "
            f"start; a TabularCMDP ends episodes in absorbing states, so every transition "
            f"an episode can take into {t} must end it; give the environment a separate "
            f"terminal state"
        )
    # rows of terminal states: zero-reward self-loops
    ts = np.flatnonzero(terminal)
    loops = (ts[:, None] * A + np.arange(A)[None, :]).ravel()
    src = np.concatenate([src[outside], loops])
    dst = np.concatenate([dst[outside], np.repeat(ts, A)])
    p = np.concatenate([p[outside], np.ones(loops.size)])
    r = np.concatenate([r[outside], np.zeros(loops.size)])
    order = np.argsort(src * S + dst, kind="stable")
    src, dst, p, r = src[order], dst[order], p[order], r[order]

    # costs per listed transition (N, K) or per pair (S, A, K)
    C_entry = C_pair = None
    if sees:
        C_entry = np.concatenate([c_merged[outside],
                                  np.zeros((loops.size, c_merged.shape[1]))])[order]
    elif costs is not None:
        if callable(costs):
            inner = ~terminal[src // A]
            values = _call_costs(costs, S, A, src[inner], dst[inner])
            C_entry = np.zeros((src.size, values.shape[1]))
            C_entry[inner] = values
        else:
            C_entry, C_pair = _array_costs(costs, S, A, dst, d)
            if C_entry is not None:
                C_entry[terminal[src // A]] = 0.0
            elif C_pair.ndim == 4:
                C_entry = C_pair.reshape(S * A, S, -1)[src, dst]
                C_entry[terminal[src // A]] = 0.0
                C_pair = None
    dense = S * A * S <= DENSE_ENTRIES
    if dense:
        P = np.zeros((S * A, S))
        P[src, dst] = p
        R = np.zeros((S * A, S))
        R[src, dst] = r
        P, R = P.reshape(S, A, S), R.reshape(S, A, S)
        C = C_pair
        if C_entry is not None:
            C = np.zeros((S * A, S, C_entry.shape[1]))
            C[src, dst] = C_entry
            C = C.reshape(S, A, S, -1)
    else:
        P = sp.csr_array((p, (src, dst)), shape=(S * A, S))
        R = np.bincount(src, weights=p * r, minlength=S * A).reshape(S, A)
        C = C_pair
        if C_entry is not None:
            C = np.stack([np.bincount(src, weights=p * C_entry[:, k], minlength=S * A)
                          for k in range(C_entry.shape[1])], axis=-1).reshape(S, A, -1)
    return dict(P=P, R=R, C=C, d=d, gamma=gamma, p0=start, horizon=horizon,
                terminal=terminal, name=name)

"""The input checks of the tabular CMDP: what :class:`~rcmdp_exact.TabularCMDP` validates.

The constructor of the model (:mod:`rcmdp_exact.core.model`) and every public function
that takes a model, a policy or a start distribution call these checks; each raises
:class:`ModelError` (the package's :class:`~rcmdp_exact.InputError`, a
:class:`ValueError`) with a message that names the culprit (the argument, the entry,
its value) and says how to fix it.  The facts themselves ("rows are distributions", "an
index in range", ...) are checked once, by :mod:`rcmdp_exact._checks`; this module says
which facts make a model:

* :func:`check_policy`, :func:`check_p0`, :func:`check_transition_rows`,
  :func:`check_multipliers`: the checks other modules call on their inputs (and
  :func:`~rcmdp_exact.core.model.check_model`, "this is a model", beside the class it
  names, so that this module stays below the model's);
* :func:`check_model_size` (the memory the model would hold, from the shapes it is
  given, before any copy), :func:`_check_sparse_structure` (the stored indices of a
  sparse P, before scipy reads them), :func:`check_dense_transitions`,
  :func:`check_sparse_transitions`,
  :func:`per_pair_or_transition`, :func:`check_budgets`, :func:`check_terminal`,
  :func:`check_terminal_absorbing`, :func:`check_labels`, :func:`check_outcomes`,
  :func:`check_state_features`: the constructor's, one per argument.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._checks import (
    MAX_INPUT_BYTES,
    InputError,
    as_array,
    as_float_array,
    bytes_text,
    check_distributions,
    check_finite,
    check_indices,
    check_int,
    check_nonnegative,
    check_row_sums,
    check_shape,
    readonly,
    row_tolerance,
)

__all__ = [
    "TRANSITION_AXES",
    "ModelError",
    "check_dense_transitions",
    "check_model_size",
    "check_policy",
    "check_sparse_transitions",
    "check_terminal_absorbing",
    "check_transition_rows",
    "per_pair_or_transition",
]

#: The error of invalid models, policies and solver inputs: :class:`InputError`
#: under its historical name (the same class).
ModelError = InputError

#: The axes of a transition tensor (S, A, S), as messages name them.
TRANSITION_AXES = ("s", "a", "s'")


# --------------------------------------------------------------------------- inputs of solvers
def check_transition_rows(P: np.ndarray, name: str = "P", normalize: bool = False) -> np.ndarray:
    """Check a dense (S, A, S) tensor of distributions; returns it (renormalised).

    Every entry finite and >= 0, every row ``P[s, a, :]`` summing to 1 within
    :func:`row_tolerance` (S) (or within 1e-4 and renormalised, with ``normalize``).
    """
    check_finite(P, name, TRANSITION_AXES)
    return check_distributions(P, name, TRANSITION_AXES[:2], normalize=normalize,
                               what="transition probabilities")


def check_p0(p0, S: int, name: str = "p0") -> np.ndarray:
    """The start distribution (S,) from a distribution or a start state index."""
    fix = "give an (S,) distribution or a start state index"
    raw = as_array(p0, name, fix)
    if raw.ndim == 0 and np.issubdtype(raw.dtype, np.integer):
        out = np.zeros(S)
        out[check_int(p0, f"start state {name}", 0, S - 1)] = 1.0
        return out
    arr = as_float_array(p0, name, fix, shape=(S,), axes=("s",))
    return check_distributions(arr, name, (), what="start probabilities").copy()


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
    n_states = check_int(n_states, "n_states", 1, hint=" (the number of states S)")
    n_actions = check_int(n_actions, "n_actions", 1, hint=" (the number of actions A)")
    fix = (f"give an (S, A) = ({n_states}, {n_actions}) array of action probabilities or "
           f"an integer array ({n_states},) of actions")
    arr = as_array(policy, name, fix)
    if arr.ndim == 1 and arr.shape == (n_states,) and np.issubdtype(arr.dtype, np.integer):
        check_indices(arr, f"deterministic {name}", n_actions, "action")
        out = np.zeros((n_states, n_actions))
        out[np.arange(n_states), arr] = 1.0
        return out
    arr = as_float_array(policy, name, fix, shape=(n_states, n_actions), axes=("s", "a"))
    arr = check_distributions(arr, name, ("s",), what="action probabilities")
    return arr.copy() if arr is policy else arr


def check_multipliers(lam, K: int) -> np.ndarray:
    """Return ``lam`` as a (K,) float64 array of multipliers >= 0 (zeros if None).

    One number is broadcast to every constraint (the check of
    :meth:`~rcmdp_exact.TabularCMDP.check_multipliers`).
    """
    if lam is None:
        return np.zeros(K)
    arr = as_float_array(lam, "lam", "give one multiplier per constraint",
                         finite=False).reshape(-1)
    if arr.size == 1 and K > 1:
        arr = np.full(K, float(arr[0]))
    check_shape(arr, (K,), "lam (one multiplier per constraint, or one number)", ("k",))
    check_finite(arr, "lam", ("k",))
    check_nonnegative(arr, "lam", "Lagrange multipliers")
    return arr


# --------------------------------------------------------------------------- before any copy
def _shape_of(x) -> tuple | None:
    """The shape ``x`` declares (a sparse matrix's, an array's, a nested list's), or
    None when it has none (the argument's own check then refuses it)."""
    if x is None:
        return None
    if sp.issparse(x):
        return tuple(int(n) for n in x.shape)
    try:
        return tuple(int(n) for n in np.shape(x))
    except (TypeError, ValueError):
        return None


def check_model_size(P, R, C) -> None:
    """Refuse, before any copy or conversion, a model whose arrays would hold more than
    :data:`~rcmdp_exact._checks.MAX_INPUT_BYTES` in memory.

    The shapes given declare the memory (a broadcast view, a sparse matrix of a huge
    declared shape and an archive's header cost nothing until the model copies or
    converts them): a dense P (S, A, S) holds 8 S A S bytes; a sparse P (S*A, S) holds
    8 (S A + 1) bytes of row pointers and 16 bytes per stored entry; R and C their
    entries; the expected rewards and costs 8 S A (1 + K) bytes.
    """
    shape_P, shape_R, shape_C = _shape_of(P), _shape_of(R), _shape_of(C)
    if shape_P is None or shape_R is None:
        return
    parts = []
    if sp.issparse(P):
        if len(shape_P) != 2:
            return
        n_rows, S = shape_P
        A = shape_R[1] if len(shape_R) >= 2 else 1
        parts.append((f"P {shape_P} sparse with {int(P.nnz):,} entries",
                      8 * (n_rows + 1) + 16 * int(P.nnz)))
    else:
        if len(shape_P) != 3:
            return
        S, A = shape_P[0], shape_P[1]
        parts.append((f"P {shape_P}", 8 * int(np.prod(shape_P, dtype=object))))
    parts.append((f"R {shape_R}", 8 * int(np.prod(shape_R, dtype=object))))
    K = 0
    if shape_C is not None:
        parts.append((f"C {shape_C}", 8 * int(np.prod(shape_C, dtype=object))))
        K = shape_C[-1] if len(shape_C) in (3, 4) else 0
    parts.append(("r and c", 8 * S * A * (1 + K) + 9 * S))
    need = sum(b for _, b in parts)
    if need > MAX_INPUT_BYTES:
        shown = ", ".join(f"{what}: {bytes_text(b)}" for what, b in parts if b >= 2**20)
        raise ModelError(
            f"this model would hold {bytes_text(need)} in memory ({shown}), above the "
            f"limit of {bytes_text(MAX_INPUT_BYTES)} (rcmdp_exact._checks.MAX_INPUT_BYTES)"
            f"; check the shapes it declares, give P as a scipy.sparse matrix (S*A, S) "
            f"with R and C per state-action pair, or build a smaller model")


def _check_sparse_structure(P, name: str = "P", A: int | None = None) -> None:
    """Check the stored structure of a scipy.sparse matrix before scipy reads it.

    scipy does not check the index arrays of a compressed matrix built from them, and
    its compiled code reads out of bounds (a segmentation fault) on an index beyond the
    shape.  For the CSR, CSC and BSR formats: the row (column) pointers start at 0,
    never decrease and end within the stored entries, and every stored index lies
    inside the shape; for COO: every coordinate lies inside the shape.  Other formats
    keep Python structures that scipy checks itself.  ``A`` (optional) names a row
    ``s*A + a`` as (s, a) in the message.
    """
    fmt = P.format
    shape = tuple(int(n) for n in P.shape)
    what = f"{name} (a scipy.sparse {type(P).__name__} of shape {shape})"
    fix = ("rebuild it from valid entries, e.g. scipy.sparse.csr_array((values, (rows, "
           "cols)), shape=(S*A, S)), or call its check_format(full_check=True) to see "
           "what is wrong")

    def row_name(r: int) -> str:
        return f"row {r}" + (f" (s={r // A}, a={r % A})" if A else "")

    if fmt in ("csr", "csc", "bsr"):
        block = P.blocksize if fmt == "bsr" else (1, 1)
        major, minor = (shape[0] // block[0], shape[1] // block[1]) if fmt != "csc" \
            else (shape[1], shape[0])
        ptr = np.asarray(P.indptr)
        idx = np.asarray(P.indices)
        data_len = len(P.data)
        if ptr.ndim != 1 or idx.ndim != 1 or ptr.dtype.kind not in "iu" \
                or idx.dtype.kind not in "iu":
            raise ModelError(f"{what} has index arrays that are not 1-D integer arrays "
                             f"(indptr {ptr.dtype} {ptr.shape}, indices {idx.dtype} "
                             f"{idx.shape}); {fix}")
        if len(ptr) != major + 1 or (len(ptr) and int(ptr[0]) != 0):
            raise ModelError(f"{what} has {len(ptr)} index pointers starting at "
                             f"{int(ptr[0]) if len(ptr) else None}, expected {major + 1} "
                             f"starting at 0; {fix}")
        steps = np.diff(ptr)
        if (steps < 0).any():
            k = int(np.flatnonzero(steps < 0)[0])
            raise ModelError(f"{what} has decreasing index pointers at {k} "
                             f"({int(ptr[k])} then {int(ptr[k + 1])}); {fix}")
        nnz = int(ptr[-1])
        if nnz > len(idx) or nnz > data_len:
            raise ModelError(f"{what} points to {nnz} stored entries but holds "
                             f"{len(idx)} indices and {data_len} values; {fix}")
        stored = idx[:nnz]
        bad = (stored < 0) | (stored >= minor)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            r = int(np.searchsorted(ptr, k, side="right")) - 1
            if fmt == "csr":
                where = (f"the column index {int(stored[k])} in {row_name(r)}: column "
                         f"indices are next states 0..{minor - 1} (S={minor})")
            elif fmt == "csc":
                where = (f"the row index {int(stored[k])} in column {r}: row indices are "
                         f"0..{minor - 1}")
            else:
                where = (f"the block column {int(stored[k])} in block row {r}: block "
                         f"columns are 0..{minor - 1}")
            raise ModelError(f"{what} stores {where}; {fix}")
        return
    if fmt == "coo":
        coords = getattr(P, "coords", None) or (P.row, P.col)
        n = len(P.data)
        for axis, (c, size) in enumerate(zip(coords, shape, strict=False)):
            c = np.asarray(c)
            if c.shape != (n,):
                raise ModelError(f"{what} has {c.size} {('row', 'column')[axis]} "
                                 f"coordinates for {n} values; {fix}")
            bad = (c < 0) | (c >= size)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise ModelError(f"{what} stores the {('row', 'column')[axis]} index "
                                 f"{int(c[k])} at entry {k}, outside 0..{size - 1}; {fix}")


# --------------------------------------------------------------------------- the constructor's
def check_dense_transitions(P, normalize: bool = False) -> np.ndarray:
    """A dense transition tensor (S, A, S) with S, A >= 1 and rows that are
    distributions (renormalised with ``normalize``); not yet copied."""
    Pd = as_float_array(P, "P", "give an (S, A, S) array of probabilities", finite=False)
    if Pd.ndim != 3 or Pd.shape[0] != Pd.shape[2] or 0 in Pd.shape:
        raise ModelError(
            f"P must have shape (S, A, S) with S, A >= 1 and P[s, a, s'] the "
            f"probability of s' after action a in s, got shape {Pd.shape}; for a "
            f"sparse model give a scipy.sparse matrix of shape (S*A, S)"
        )
    return check_transition_rows(Pd, normalize=normalize)


def check_sparse_transitions(P, R, normalize: bool = False) -> tuple[sp.csr_array, int, int]:
    """A sparse transition matrix (S*A, S) as a canonical, read-only CSR copy, with S
    and A (A is read from the rewards ``R``, which a sparse model takes per pair)."""
    if P.ndim != 2 or np.iscomplexobj(P.data) or P.dtype.kind not in "biuf":
        raise ModelError(
            f"a sparse P must be a real 2-D matrix of shape (S*A, S) (row s*A + a holds "
            f"P(. | s, a)), got {P.ndim} dimensions and dtype {P.dtype}"
        )
    R_shape = as_array(R, "R", "give an (S, A) array of rewards").shape
    A = int(R_shape[1]) if len(R_shape) >= 2 else 0
    _check_sparse_structure(P, "P", A or None)
    Ps = sp.csr_array(P, dtype=np.float64, copy=True)
    n_rows, S = Ps.shape
    if S == 0 or A == 0 or n_rows != S * A:
        raise ModelError(
            f"a sparse P must have shape (S*A, S) = ({S * A}, {S}) for S={S}, A={A} "
            f"(A read from R of shape {R_shape}), got {Ps.shape}; stack the rows "
            f"P(. | s, a) in the order s*A + a"
        )
    Ps.sum_duplicates()
    Ps.sort_indices()
    nz_row = np.repeat(np.arange(n_rows), np.diff(Ps.indptr))
    where_nz = np.column_stack([nz_row // A, nz_row % A, Ps.indices])
    check_finite(Ps.data, "P", TRANSITION_AXES, positions=where_nz)
    check_nonnegative(Ps.data, "P", "transition probabilities", positions=where_nz)
    Ps.eliminate_zeros()
    # (np.add.reduceat fails on empty rows at the end: a count per row instead)
    sums = np.bincount(np.repeat(np.arange(n_rows), np.diff(Ps.indptr)), weights=Ps.data,
                       minlength=n_rows).astype(np.float64)
    scale = check_row_sums(sums.reshape(S, A), S, "P", TRANSITION_AXES[:2],
                           normalize=normalize)
    if scale is not None:
        Ps.data /= np.repeat(scale.ravel(), np.diff(Ps.indptr))
    for arr in (Ps.data, Ps.indices, Ps.indptr):
        arr.flags.writeable = False
    return Ps, S, A


def per_pair_or_transition(arr, name, pair_shape, transition_shape, only):
    """(per-pair, per-transition) read-only copies of R or C; exactly one is not None.

    ``only`` is the per-pair shape when no other is accepted (a sparse model), else
    None.
    """
    if arr.shape == pair_shape:
        axes = ("s", "a", "k")[:len(pair_shape)]
        check_finite(arr, name, axes)
        return readonly(arr.copy()), None
    if only is not None:
        raise ModelError(
            f"a model with sparse P takes {name} per state-action pair, shape "
            f"{only}, got {arr.shape}; give the expected {name} of each pair"
        )
    if arr.shape != transition_shape:
        S, A = pair_shape[:2]
        k = ", K" if name == "C" else ""
        raise ModelError(
            f"{name} must have shape (S, A{k}) per pair or (S, A, S{k}) per transition, "
            f"with S={S}, A={A}, got {arr.shape}"
        )
    check_finite(arr, name, ("s", "a", "s'", "k")[:arr.ndim])
    return None, readonly(arr.copy())


def check_budgets(d, K: int) -> np.ndarray:
    """The budgets (K,), one per constraint (required when K >= 1); a copy."""
    if d is None and K:
        raise ModelError(f"the model has K={K} cost functions but no budgets d; give d "
                         f"of shape ({K},), one budget per constraint")
    d_arr = np.zeros(0) if d is None else as_float_array(
        d, "budgets d", "give one budget per constraint", finite=False).reshape(-1)
    check_shape(d_arr, (K,), "budgets d (one per constraint, K from C)", ("k",))
    check_finite(d_arr, "budgets d", ("k",))
    return d_arr.copy()


def check_terminal(terminal, S: int) -> np.ndarray:
    """The terminal mask (S,) from a boolean mask or a list of state indices."""
    if terminal is None:
        return np.zeros(S, dtype=bool)
    fix = f"give a boolean mask of shape ({S},) or a list of state indices"
    term = as_array(terminal, "terminal", fix)
    if term.dtype == bool:
        check_shape(term, (S,), "terminal (a boolean mask)", ("s",))
        return term.copy()
    mask = np.zeros(S, dtype=bool)
    if term.size == 0:
        return mask
    if not np.issubdtype(term.dtype, np.integer) or term.ndim != 1 or term.shape == (S,):
        raise ModelError(
            f"terminal must be a bool mask of shape ({S},) or a list of fewer than {S} "
            f"state indices, got dtype {term.dtype} and shape {term.shape}; for a mask "
            f"use a bool array (e.g. np.isin(np.arange({S}), indices))"
        )
    mask[check_indices(term, "terminal state index", S, "state")] = True
    return mask


def check_labels(labels, n: int, name: str):
    """A tuple of ``n`` strings naming states, actions or constraints (or None)."""
    if labels is None:
        return None
    fix = f"give a sequence of {n} strings"
    if isinstance(labels, str | bytes) or as_array(labels, name, fix).ndim != 1:
        raise ModelError(f"{name} must be a sequence of {n} strings, got "
                         f"{type(labels).__name__}")
    out = tuple(str(x) for x in labels)
    check_int(len(out), f"the number of {name}", n, n)
    return out


def check_state_features(state_features, S: int) -> np.ndarray:
    """Input features (S, F) of each state, a read-only copy."""
    feat = as_float_array(state_features, "state_features", "give an (S, F) array")
    if feat.ndim != 2 or feat.shape[0] != S:
        raise ModelError(f"state_features must have shape (S, F) with S={S}, got "
                         f"{feat.shape}; give one row of features per state")
    return readonly(feat.copy())


def check_outcomes(outcomes, P_sparse: sp.csr_array, S: int, A: int) -> np.ndarray:
    """The outcome map (S, A, O) of next states, read-only; the support of the
    transitions ``P_sparse`` (S*A, S) must lie inside the outcomes of each pair."""
    out = as_array(outcomes, "outcomes", "give an integer array (S, A, O) of next states")
    if out.ndim != 3 or out.shape[:2] != (S, A) or out.shape[2] == 0 \
            or not np.issubdtype(out.dtype, np.integer):
        raise ModelError(
            f"outcomes must be an integer array (S, A, O) = ({S}, {A}, O) of next "
            f"states with O >= 1, got dtype {out.dtype} and shape {out.shape}"
        )
    out = check_indices(out, "outcomes", S, "state")
    # the support of P must lie inside the outcomes of each (s, a)
    Ps = P_sparse
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
    return readonly(out)


def check_terminal_absorbing(P, P_sparse, terminal: np.ndarray, state_labels=None) -> None:
    """Raise unless every terminal state is absorbing under every action (``P`` dense
    (S, A, S), or None and ``P_sparse`` (S*A, S))."""
    if not terminal.any():
        return
    S = terminal.shape[0]
    ts = np.flatnonzero(terminal)
    if P is not None:
        stay = P[ts, :, ts]  # (n_terminal, A)
    else:
        A = P_sparse.shape[0] // S
        rows = (ts[:, None] * A + np.arange(A)[None, :]).ravel()
        stay = np.asarray(P_sparse[rows, np.repeat(ts, A)]).reshape(len(ts), A)
    bad = np.abs(stay - 1.0) > row_tolerance(S)
    if bad.any():
        i, a = (int(x) for x in np.argwhere(bad)[0])
        s = int(ts[i])
        name = f"{s}" if state_labels is None else f"{s} ({state_labels[s]})"
        raise ModelError(
            f"terminal state {name} is not absorbing: "
            f"P[{s}, {a}, {s}] = {float(stay[i, a])!r}, it must be 1 for every action; "
            f"make terminal states self-loops or drop them from `terminal`"
        )

"""Model files: :meth:`TabularCMDP.save <rcmdp_exact.TabularCMDP.save>` and
:meth:`TabularCMDP.load <rcmdp_exact.TabularCMDP.load>` write and read them here.

A model file is an ``.npz`` archive without pickle (:mod:`rcmdp_exact._io`: one path
rule, atomic writes, one :class:`~rcmdp_exact.LoadError` for a file that cannot be used)
of format :data:`_MODEL_FORMAT`.  Every field is stored exactly (float64 bits, labels as
strings): ``d``, ``gamma``, ``p0``, ``terminal``; ``P`` (S, A, S), or for a sparse
model its CSR arrays ``P_data``, ``P_indices``, ``P_indptr`` and ``P_shape``; ``R`` and
``C`` as given (per pair or per transition); and, when set, ``horizon``, ``name``,
``state_labels``, ``action_labels``, ``cost_labels``, ``outcomes`` and
``state_features``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._checks import NORMALIZE_TOLERANCE, InputError, row_tolerance
from .._io import LoadError, load_npz, save_npz

__all__ = [ "load_model", "save_model"]

#: The format tag of a model file.
_MODEL_FORMAT = "rcmdp_exact.TabularCMDP/1"


def save_model(fields: dict, path) -> Path:
    """Write a model, given by its constructor arguments as stored (``P`` dense or a CSR
    matrix, ``R`` and ``C`` per pair or per transition, the optional fields None when
    unset), to an ``.npz`` file; returns the path written."""
    arrays = {"d": fields["d"], "gamma": np.array(fields["gamma"]), "p0": fields["p0"],
              "terminal": fields["terminal"]}
    P = fields["P"]
    if not sp.issparse(P):
        arrays["P"] = P
    else:
        arrays.update(P_data=P.data, P_indices=P.indices, P_indptr=P.indptr,
                      P_shape=np.array(P.shape))
    arrays["R"] = fields["R"]
    arrays["C"] = fields["C"]
    for key in ("horizon", "name", "state_labels", "action_labels", "cost_labels",
                "outcomes", "state_features"):
        val = fields[key]
        if val is not None:
            arrays[key] = np.array(val) if not isinstance(val, tuple) else \
                np.array(val, dtype=str)
    return save_npz(path, arrays, _MODEL_FORMAT)


def _refuse_rounded_rows(path, what: str, P) -> None:
    """Raise the file's own error when its rows of P miss 1 by a rounding (float32
    rows, say), which the constructor repairs with ``normalize=True`` but a file
    cannot ask for: the file is to be written again."""
    try:
        sums = np.asarray(P.sum(axis=1) if sp.issparse(P) else
                          np.asarray(P, dtype=np.float64).sum(axis=-1), dtype=np.float64)
        S = int(P.shape[-1])
    except (TypeError, ValueError):
        return
    err = np.abs(sums - 1.0).ravel()
    worst = float(err.max()) if err.size else 0.0
    if row_tolerance(S) < worst <= NORMALIZE_TOLERANCE:
        k = int(np.flatnonzero(err > row_tolerance(S))[0])
        A = int(P.shape[1]) if not sp.issparse(P) else max(1, int(P.shape[0]) // S)
        raise LoadError(
            f"{str(path)!r} is not {what}: the rows of its P sum to 1 only within "
            f"{worst:.1e} (the first: P[{k // A}, {k % A}, :] sums to "
            f"{float(sums.ravel()[k])!r}; rounded in float32?), above the tolerance "
            f"{row_tolerance(S):.1e}; write the file again with rows that sum to 1 in "
            f"float64 (in Python, TabularCMDP(P, R, ..., normalize=True).save(path) "
            f"renormalises them)")


def load_model(path, build):
    """Read a model file and build the model with ``build`` (the class,
    :class:`~rcmdp_exact.TabularCMDP` or a subclass), which validates it.

    A missing, foreign, truncated or invalid file is a :class:`~rcmdp_exact.LoadError`
    naming the path.
    """
    what = "a model file written by TabularCMDP.save"
    f = load_npz(path, _MODEL_FORMAT, what)
    try:
        if "P" in f:
            P = f["P"]
        else:
            P = sp.csr_array((f["P_data"], f["P_indices"], f["P_indptr"]),
                             shape=tuple(int(x) for x in f["P_shape"]))
        kw = {key: f[key] for key in ("outcomes", "state_features") if key in f}
        for key in ("state_labels", "action_labels", "cost_labels"):
            if key in f:
                kw[key] = [str(x) for x in f[key]]
        if "horizon" in f:
            kw["horizon"] = int(f["horizon"])
        if "name" in f:
            kw["name"] = str(f["name"])
        try:
            return build(P, f["R"], f["C"], d=f["d"], gamma=float(f["gamma"]), p0=f["p0"],
                         terminal=f["terminal"], **kw)
        except InputError:
            _refuse_rounded_rows(path, what, P)
            raise
    except LoadError:
        raise
    except KeyError as exc:
        raise LoadError(f"{str(path)!r} is not {what}: it lacks the entry "
                        f"{exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:  # InputError included: invalid content
        raise LoadError(f"{str(path)!r} is not {what}: its content is invalid ({exc})") \
            from None

r"""The suite's instances frozen as package data: one archive per instance and a checksum.

An instance of the suite is a fixed table, whatever library built it: the models of
:data:`~rcmdp_exact.suite.instances.INSTANCES` are shipped in
``rcmdp_exact/suite/data/instances/<name>.npz`` (compressed, no pickle; every field of
the model exactly: float64 bits, labels as strings) with the SHA-256 of each model's
arrays in ``checksums.json`` beside them.  :func:`frozen_model` reads an archive and
refuses it (a :class:`~rcmdp_exact.LoadError` naming the path) when it is missing,
damaged or does not match its checksum, so the certified values of the data file always
refer to the same numbers, and ``pip install rcmdp_exact`` runs every suite command
without Gymnasium (FrozenLake, CliffWalking and Taxi were Gymnasium tables built at
run time; their builders now write Gymnasium's tables themselves,
:mod:`rcmdp_exact.domains.classic`).

``tests/test_suite_instances.py`` rebuilds every instance from its builder
(:meth:`~rcmdp_exact.suite.instances.Instance.rebuild`) and compares it with the
archive bit for bit, and compares the toy-text tables with Gymnasium's where Gymnasium
is installed.  :func:`rcmdp_exact.suite.instances.freeze` writes the archives and the
checksums (after a deliberate
change of an instance; the certified values must then be regenerated:
``rcmdp suite certify``).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = [
    "CHECKSUMS",
    "FORMAT",
    "FROZEN",
    "digest",
    "frozen_model",
    "model_arrays",
    "write_frozen",
]

#: The folder of the frozen instances.
FROZEN = Path(__file__).parent / "data" / "instances"
#: The checksum file: ``{"format": ..., "sha256": {name: hex digest}}``.
CHECKSUMS = FROZEN / "checksums.json"
#: The ``format`` entry of a frozen instance's archive.
FORMAT = "rcmdp_exact.suite.FrozenInstance/1"

_OPTIONAL = ("horizon", "name", "state_labels", "action_labels", "cost_labels",
             "outcomes", "state_features")


def model_arrays(model) -> dict:
    """Every field of ``model`` as arrays, as the model stores them (``P`` dense or its
    CSR arrays, ``R`` and ``C`` per pair or per transition, the optional fields when
    set)."""
    import scipy.sparse as sp

    f = model._constructor_args()
    out = {"d": np.asarray(f["d"], dtype=np.float64),
           "gamma": np.asarray(float(f["gamma"])),
           "p0": np.asarray(f["p0"], dtype=np.float64),
           "terminal": np.asarray(f["terminal"], dtype=bool)}
    P = f["P"]
    if sp.issparse(P):
        out.update(P_data=np.asarray(P.data), P_indices=np.asarray(P.indices),
                   P_indptr=np.asarray(P.indptr), P_shape=np.asarray(P.shape))
    else:
        out["P"] = np.asarray(P, dtype=np.float64)
    out["R"] = np.asarray(f["R"], dtype=np.float64)
    out["C"] = np.asarray(f["C"], dtype=np.float64)
    for key in _OPTIONAL:
        val = f[key]
        if val is not None:
            out[key] = np.asarray(val, dtype=str) if isinstance(val, list | tuple) and \
                val and isinstance(val[0], str) else np.asarray(val)
    return out


def digest(arrays: dict) -> str:
    """SHA-256 (hex) of a model's arrays: every entry's name, dtype, shape and bytes, in
    the order of the names (the ``format`` entry of an archive left out)."""
    h = hashlib.sha256()
    for name in sorted(k for k in arrays if k != "format"):
        arr = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\0{arr.dtype.str}\0{arr.shape}\0".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def _model_of(arrays: dict, path):
    import scipy.sparse as sp

    from .._io import LoadError
    from ..core.model import TabularCMDP

    try:
        if "P" in arrays:
            P = arrays["P"]
        else:
            P = sp.csr_array((arrays["P_data"], arrays["P_indices"], arrays["P_indptr"]),
                             shape=tuple(int(x) for x in arrays["P_shape"]))
        kw = {k: arrays[k] for k in ("outcomes", "state_features") if k in arrays}
        for k in ("state_labels", "action_labels", "cost_labels"):
            if k in arrays:
                kw[k] = [str(x) for x in arrays[k]]
        if "horizon" in arrays:
            kw["horizon"] = int(arrays["horizon"])
        if "name" in arrays:
            kw["name"] = str(arrays["name"])
        return TabularCMDP(P, arrays["R"], arrays["C"], d=arrays["d"],
                           gamma=float(arrays["gamma"]), p0=arrays["p0"],
                           terminal=arrays["terminal"], **kw)
    except (KeyError, TypeError, ValueError) as exc:
        raise LoadError(f"{str(path)!r} is not a frozen suite instance: its content is "
                        f"invalid ({exc}); reinstall rcmdp_exact") from None


def _checksums(folder: Path) -> dict:
    from .._io import LoadError

    path = folder / CHECKSUMS.name
    try:
        sums = json.loads(path.read_text())["sha256"]
        if not isinstance(sums, dict):
            raise TypeError("sha256 is not a mapping")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LoadError(f"{str(path)!r} is not the suite's checksum file ({exc}); "
                        f"reinstall rcmdp_exact") from None
    return sums


@lru_cache(maxsize=32)
def _frozen(name: str, folder: str):
    from .._io import LoadError, load_npz

    folder = Path(folder)
    path = folder / f"{name}.npz"
    want = _checksums(folder).get(name)
    if want is None:
        raise LoadError(f"{str(folder / CHECKSUMS.name)!r} has no checksum of instance "
                        f"{name!r}; reinstall rcmdp_exact")
    arrays = load_npz(path, FORMAT, "a frozen suite instance")
    got = digest(arrays)
    if got != want:
        raise LoadError(f"{str(path)!r} does not match its checksum (sha256 {got[:16]}... "
                        f"where {CHECKSUMS.name} says {want[:16]}...): the instance was "
                        f"changed or damaged; reinstall rcmdp_exact")
    return _model_of(arrays, path)


def frozen_model(name: str, folder=None):
    """The frozen model of instance ``name`` (read once per process), checked against
    its checksum; a :class:`~rcmdp_exact.LoadError` naming the path otherwise."""
    return _frozen(name, str(FROZEN if folder is None else folder))


def write_frozen(models: dict, order, folder=None) -> dict:
    """Write the archives of ``models`` (``{name: TabularCMDP}``) into ``folder``
    (default: the package's, :data:`FROZEN`) and their checksums into its
    ``checksums.json`` (kept for the others, listed in the order of ``order``); returns
    ``{name: sha256}``.  Every file is written atomically.
    :func:`rcmdp_exact.suite.instances.freeze` builds the models."""
    from .._io import save_json, save_npz

    folder = Path(FROZEN if folder is None else folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        sums = _checksums(folder)
    except Exception:  # a first freeze: no checksum file yet
        sums = {}
    for name, model in models.items():
        arrays = model_arrays(model)
        save_npz(folder / f"{name}.npz", arrays, FORMAT, compressed=True)
        sums[name] = digest(arrays)
    ordered = {n: sums[n] for n in order if n in sums}
    save_json(folder / CHECKSUMS.name, json.dumps(
        {"format": "rcmdp_exact.suite.FrozenChecksums/1", "sha256": ordered}, indent=1))
    _frozen.cache_clear()
    return ordered

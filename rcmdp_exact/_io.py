"""Saving and loading the toolkit's artefacts: ``.npz`` archives without pickle.

One rule for every artefact (models, uncertainty sets, training results, brackets):

* :func:`save_npz` adds the suffix ``.npz`` when the path has another one (or none),
  writes to a temporary file in the same folder and renames it into place, so an
  interrupted save never leaves half a file; it returns the path written;
* :func:`load_npz` accepts the path with or without the suffix, and answers every file
  it cannot use (missing, a folder, truncated, not an archive, an archive of another
  kind, one that needs pickle) with one :class:`LoadError` that names the path and what
  was expected.

Every archive carries a ``format`` entry, ``"rcmdp_exact.<Kind>/<version>"``; a loader
names the formats it reads (and, for files written before the entry existed, the keys
that identify them).
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from ._checks import InputError

__all__ = ["LoadError", "load_npz", "npz_path", "save_npz"]


class LoadError(InputError):
    """A file that cannot be loaded as the expected artefact; the message names the path
    and what was expected."""


def npz_path(path) -> Path:
    """``path`` with the suffix ``.npz`` (added unless it is already the suffix)."""
    p = Path(os.fspath(path)).expanduser()
    return p if p.suffix == ".npz" else p.with_name(p.name + ".npz")


def save_npz(path, arrays: dict, fmt: str, *, compressed: bool = False) -> Path:
    """Write ``arrays`` and ``format = fmt`` to ``npz_path(path)`` atomically; return it."""
    p = npz_path(path)
    data = {"format": np.array(fmt), **arrays}
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            (np.savez_compressed if compressed else np.savez)(fh, **data)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p


def _resolve(path) -> Path:
    p = Path(os.fspath(path)).expanduser()
    if p.exists():
        return p
    alt = npz_path(p)
    return alt if alt.exists() else p


def load_npz(path, formats, what: str, legacy_keys=()) -> dict:
    """Read every array of an archive written by :func:`save_npz`.

    Parameters
    ----------
    path : str or path-like
        With or without the suffix ``.npz``.
    formats : str or tuple of str
        The ``format`` entries accepted.
    what : str
        What the file should be, for messages ("a model file written by
        TabularCMDP.save", ...).
    legacy_keys : tuple of str
        Keys that identify a file of this kind written before the ``format`` entry
        existed (empty: such files are refused).

    Returns
    -------
    dict
        Every entry of the archive (``format`` included) as numpy arrays.

    Raises
    ------
    LoadError
        Naming the path and ``what``: missing, a folder, unreadable, truncated, not an
        ``.npz`` archive, pickled content, or another kind of archive.
    """
    formats = (formats,) if isinstance(formats, str) else tuple(formats)
    p = _resolve(path)
    shown = str(path)
    if not p.exists():
        raise LoadError(f"{shown!r} does not exist (nor {str(npz_path(path))!r}); give the "
                        f"path of {what}")
    if p.is_dir():
        raise LoadError(f"{shown!r} is a folder; give the path of {what}")
    try:
        with np.load(p, allow_pickle=False) as f:
            data = {key: f[key] for key in f.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        why = "it needs pickle" if "pickle" in str(exc) else \
            "it is truncated or not an .npz archive"
        raise LoadError(f"{shown!r} cannot be read: {why}; expected {what}") from None
    fmt = data.get("format")
    if fmt is not None:
        text = str(fmt) if fmt.ndim == 0 else None
        if text not in formats:
            found = f"a {text.split('/')[0].removeprefix('rcmdp_exact.')} file" \
                if isinstance(text, str) and text.startswith("rcmdp_exact.") else \
                "an archive of another kind"
            raise LoadError(f"{shown!r} is {found}, not {what}")
        return data
    if legacy_keys and all(k in data for k in legacy_keys):
        return data
    raise LoadError(f"{shown!r} is an .npz archive of another kind (no 'format' entry); "
                    f"expected {what}")

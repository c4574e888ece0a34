"""Saving and loading the toolkit's artefacts: ``.npz`` archives and JSON, without pickle.

One rule for every artefact (models, uncertainty sets, training results, results and
brackets, counterexamples):

* a save adds the artefact's suffix (``.npz`` for archives, ``.json`` for JSON) when the
  path has another one (or none) (:func:`suffixed`), writes to a temporary file in the
  same folder and renames it into place, so an interrupted save never leaves half a
  file; it returns the path written (:func:`save_npz`, :func:`save_json`);
* a load accepts the path with or without the suffix (:func:`_find_file`), and answers
  every file it cannot use (missing, a folder, truncated, not an archive or not JSON,
  of another kind, one that needs pickle) with one :class:`LoadError` that names the
  path and what was expected (:func:`load_npz`, :func:`load_json`).

JSON written into an artefact is strict (:func:`json_text`): a non-finite float (NaN,
inf), which strict parsers (``json.loads(s, parse_constant=...)``, JavaScript) refuse as
bare ``NaN``, is written as ``{"__type__": "float", "value": "nan"}`` (``"inf"``,
``"-inf"``), the tag of the JSON form of a result, and read back as the float by
:func:`json_value` (which also reads the bare constants of files written before).

Every archive and JSON file carries a ``format`` entry, ``"rcmdp_exact.<Kind>/<version>"``; a loader
names the formats it reads (and, for files written before the entry existed, the keys
that identify them).

:func:`write_atomic` is the same temporary-file-and-rename write for any output file
(the reports' tables and figures): a failed write (a full disk) leaves the file that was
there before, whole, and raises an ``OSError`` that names the file meant.
"""

from __future__ import annotations

import errno
import math
import os
import stat
import tempfile
import zipfile
from pathlib import Path

from ._checks import MAX_INPUT_BYTES, InputError, bytes_text

__all__ = ["LoadError", "json_text", "json_value",
           "load_json", "load_npz", "npz_path", "require_file", "save_json", "save_npz",
           "suffixed", "write_atomic"]


class LoadError(InputError):
    """A file that cannot be loaded as the expected artefact; the message names the path
    and what was expected."""


def _strict(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"__type__": "float",
                "value": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_strict(v) for v in obj]
    return obj


def _tagged_float(obj: dict):
    if obj.get("__type__") == "float" and set(obj) == {"__type__", "value"}:
        return float(obj["value"])
    return obj


def json_text(obj, **kwargs) -> str:
    """``obj`` as strict JSON: non-finite floats tagged (module notes); ``kwargs`` go to
    :func:`json.dumps`."""
    import json

    return json.dumps(_strict(obj), allow_nan=False, **kwargs)


def json_value(text: str):
    """The value of JSON ``text`` written by :func:`json_text` (tagged floats back to
    floats; bare ``NaN`` and ``Infinity`` of older files read too)."""
    import json

    return json.loads(text, object_hook=_tagged_float)


def suffixed(path, suffix: str) -> Path:
    """``path`` with ``suffix`` (added unless it is already the suffix): ``run`` and
    ``run.v1`` become ``run.npz`` and ``run.v1.npz``; ``run.npz`` stays."""
    p = Path(os.fspath(path)).expanduser()
    return p if p.suffix == suffix else p.with_name(p.name + suffix)


def npz_path(path) -> Path:
    """``path`` with the suffix ``.npz`` (added unless it is already the suffix)."""
    return suffixed(path, ".npz")


def _find_file(path, suffixes=(".npz",)) -> Path:
    """The file a load reads: ``path`` itself when it exists, else ``path`` with the
    first of ``suffixes`` that exists, else ``path`` (the loader then reports it
    missing)."""
    p = Path(os.fspath(path)).expanduser()
    if p.exists():
        return p
    for suffix in suffixes:
        alt = suffixed(p, suffix)
        if alt.exists():
            return alt
    return p


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path, write, *, exclusive: bool = False) -> Path:
    """Write the file ``path`` through ``write(fh)`` (a binary file object) atomically.

    The bytes go to a temporary file in the same folder, which is renamed into place
    when ``write`` returns: an interrupt or a failure (a full disk) leaves the old file
    whole, or no file, never half a file.  An ``OSError`` is raised again with
    ``filename`` set to ``path`` (not to the temporary file).  Returns ``path``.
    ``exclusive``: create ``path`` only if no file has that name (a hard link, atomic:
    of two writers one wins), else ``FileExistsError`` and nothing is changed.
    """
    p = Path(os.fspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp",
                                   dir=p.parent if str(p.parent) else ".")
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        # the permissions of a file written directly (mkstemp makes it private)
        os.chmod(tmp, stat.S_IMODE(os.stat(p).st_mode) if p.exists() else 0o666 & ~_umask())
        if exclusive:
            os.link(tmp, p)  # FileExistsError when another file has the name
        else:
            os.replace(tmp, p)
            tmp = None
    except FileExistsError:
        raise
    except OSError as exc:
        code = exc.errno if exc.errno is not None else errno.EIO
        raise OSError(code, exc.strerror or os.strerror(code), str(p)) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return p


def save_npz(path, arrays: dict, fmt: str, *, compressed: bool = False) -> Path:
    """Write ``arrays`` and ``format = fmt`` to ``npz_path(path)`` atomically; return it."""
    import numpy as np

    p = npz_path(path)
    data = {"format": np.array(fmt), **arrays}
    return write_atomic(p, lambda fh: (np.savez_compressed if compressed else np.savez)(
        fh, **data))


def save_json(path, text: str) -> Path:
    """Write JSON ``text`` (which carries its own ``format`` entry) to
    ``suffixed(path, ".json")`` atomically; return the path written."""
    p = suffixed(path, ".json")
    return write_atomic(p, lambda fh: fh.write(text.encode("utf-8")))


def require_file(path, suffixes, what: str) -> Path:
    """The file a load reads (:func:`_find_file`), or a :class:`LoadError` naming every
    path tried when there is none (or a folder)."""
    p = _find_file(path, suffixes)
    shown = str(path)
    if not p.exists():
        alts = [str(suffixed(path, s)) for s in suffixes if str(suffixed(path, s)) != shown]
        nor = f" (nor {' or '.join(repr(a) for a in alts)})" if alts else ""
        raise LoadError(f"{shown!r} does not exist{nor}; give the path of {what}")
    if p.is_dir():
        raise LoadError(f"{shown!r} is a folder; give the path of {what}")
    return p


def _format_mismatch(found, formats) -> str:
    """Why a file whose ``format`` entry is ``found`` is not one of ``formats`` (the end
    of a :class:`LoadError`): an artefact of another kind, or of a format version this
    version of the package does not read (a newer one, or an unknown one)."""
    if not isinstance(found, str) or not found.startswith("rcmdp_exact."):
        return "it is an archive of another kind" if found is None or \
            isinstance(found, str) else "its format entry is not a text"
    kind, _, version = found.partition("/")
    same = [f.partition("/")[2] for f in formats if f.partition("/")[0] == kind]
    name = kind.rsplit(".", 1)[-1]
    if same:
        return (f"it is a {name} file of format version {version!r}, and this version "
                f"of rcmdp_exact reads version{'s' if len(same) > 1 else ''} "
                f"{', '.join(repr(v) for v in same)}: a file written by a newer "
                f"rcmdp_exact (upgrade it) or an altered file (save it again)")
    return f"it is a saved {name}"


def load_json(path, formats, what: str) -> dict:
    """Read a JSON file written by :func:`save_json` whose ``format`` is one of
    ``formats``; the path with or without ``.json``.  Every file that cannot be used
    is a :class:`LoadError` naming the path and ``what``."""
    import json

    formats = (formats,) if isinstance(formats, str) else tuple(formats)
    p = require_file(path, (".json",), what)
    shown = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError(f"{shown!r} is not {what}: it cannot be read as UTF-8 text "
                        f"({exc})") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise LoadError(f"{shown!r} is not {what}: it is not JSON (truncated or another "
                        f"kind of file)") from None
    fmt = data.get("format") if isinstance(data, dict) else None
    if fmt not in formats:
        raise LoadError(f"{shown!r} is not {what}: {_format_mismatch(fmt, formats)} (its "
                        f"format is {fmt!r}, expected "
                        f"{' or '.join(repr(f) for f in formats)})")
    return data


def _member_header(zf, info):
    """(shape, dtype, header bytes) of the ``.npy`` member ``info`` of the open zip
    file ``zf``, read from its header alone (no array is allocated)."""
    import numpy as np

    fmt = np.lib.format
    with zf.open(info) as fh:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, _, dtype = fmt.read_array_header_2_0(fh)
        else:  # (3, 0): a utf-8 header, which numpy reads with the same code
            shape, _, dtype = fmt._read_array_header(fh, version)
        return shape, dtype, fh.tell()


def _check_headers(p: Path, refuse, what: str) -> None:
    """Check the ``.npy`` headers of an archive before any array is read: each entry
    holds the bytes its header declares (a header that claims more is a damaged
    file), no entry holds objects (pickle), and all of them together fit in
    :data:`~rcmdp_exact._checks.MAX_INPUT_BYTES`.  numpy allocates the array a header
    declares before it reads a byte: a forged header of 298 GiB would be a memory error,
    not an answer."""
    import math

    total, sizes = 0, []
    try:
        with zipfile.ZipFile(p) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                key = info.filename[:-4]
                try:
                    shape, dtype, head = _member_header(zf, info)
                except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError,
                        NotImplementedError):
                    raise refuse(f"its entry {key!r} has no readable .npy header "
                                 f"(truncated or damaged)") from None
                if dtype.hasobject:
                    raise refuse("it holds pickled objects (the toolkit never loads "
                                 "pickle)")
                need = math.prod(int(n) for n in shape) * dtype.itemsize
                if need > info.file_size - head:
                    raise refuse(
                        f"its entry {key!r} declares shape {tuple(shape)} of {dtype} "
                        f"({bytes_text(need)}) but holds "
                        f"{bytes_text(max(info.file_size - head, 0))} (truncated, damaged "
                        f"or forged)")
                total += need
                sizes.append((need, key, tuple(shape)))
    except zipfile.BadZipFile:
        raise refuse("it is truncated or damaged (not a readable zip archive)") from None
    except OSError as exc:
        raise refuse(f"it cannot be read ({exc.strerror or exc})") from None
    if total > MAX_INPUT_BYTES:
        need, key, shape = max(sizes)
        raise refuse(
            f"its arrays would take {bytes_text(total)} of memory ({key!r} of shape "
            f"{shape}: {bytes_text(need)}), above the limit of "
            f"{bytes_text(MAX_INPUT_BYTES)} (rcmdp_exact._checks.MAX_INPUT_BYTES)")


def load_npz(path, formats, what: str) -> dict:
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

    Returns
    -------
    dict
        Every entry of the archive (``format`` included) as numpy arrays.

    Raises
    ------
    LoadError
        Naming the path and ``what``: missing, a folder, unreadable, truncated, not an
        ``.npz`` archive, pickled content, another kind of archive, an entry whose header
        declares more than it holds, or arrays above
        :data:`~rcmdp_exact._checks.MAX_INPUT_BYTES` together (checked from the headers,
        before any array is allocated).
    """
    import numpy as np

    formats = (formats,) if isinstance(formats, str) else tuple(formats)
    p = require_file(path, (".npz",), what)
    shown = str(path)

    def refuse(why: str):
        return LoadError(f"{shown!r} is not {what}: {why}")

    try:
        with p.open("rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise refuse(f"it cannot be read ({exc.strerror})") from None
    if not head.startswith(b"PK"):  # every .npz archive is a zip file
        raise refuse(
            "it is empty" if not head else
            "it is a single .npy array, not an .npz archive" if head.startswith(b"\x93NUMPY")
            else "it is a pickle file (the toolkit never loads pickle)" if head[:1] == b"\x80"
            else "it is not an .npz archive (not a zip file)")
    _check_headers(p, refuse, what)
    try:  # the file opened here, so that it is closed whatever numpy raises
        with p.open("rb") as fh, np.load(fh, allow_pickle=False) as f:
            data = {key: f[key] for key in f.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError,
            NotImplementedError) as exc:
        raise refuse("it holds pickled objects (the toolkit never loads pickle)"
                     if "pickle" in str(exc) else "it is truncated or damaged") from None
    fmt = data.get("format")
    if fmt is not None:
        text = str(fmt) if fmt.ndim == 0 else None
        if text not in formats:
            raise refuse(_format_mismatch(text, formats))
        return data
    raise refuse("it is an .npz archive of another kind (no 'format' entry)")

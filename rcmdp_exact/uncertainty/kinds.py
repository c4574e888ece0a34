"""The built-in kinds of uncertainty set, known without importing them.

A kind of set is one file of this package: its module-level line ``KIND = "name"`` names
the kind, and the set class of the file is the one whose body says ``kind = KIND``.
This module reads those lines from the package's own files (plain text, no import, no
numpy), so that the command line can check ``--set KIND`` and list the kinds in its
help in a few milliseconds, and so that adding a built-in kind is adding a file: nothing
else lists the kinds.  A kind is *estimated* (``--set`` can build it from the counts of
the estimation phase) when its file defines ``from_counts``.  Two more lines of a kind's
file say what the command line needs to know of its set around a model (``around``):
``RADIUS = "..."``, what ``--radius R`` is for the kind, and ``AROUND_SUPPORTS = (...)``,
the ``--support`` values its ``around`` accepts when not every one (a KL ball never leaves
the support of its centre).

The registry that does the work is :mod:`.base` (every set class registers itself when
it is defined; :func:`~rcmdp_exact.uncertainty.set_class` imports a kind on demand);
``tests/test_structure.py`` checks that both agree.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import NamedTuple

from ..names import DEFAULT_SET_KIND

__all__ = ["KIND_PATTERN", "KindFile", "builtin_class_module", "builtin_kinds",
           "check_kind_name", "kind_files", "kind_name_problem"]

#: What a kind's name looks like: lowercase words of letters and digits joined by
#: hyphens ("l1", "weighted-l1", "s-l1").
KIND_PATTERN = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"

_KIND_LINE = re.compile(rf"^KIND\s*=\s*[\"']({KIND_PATTERN})[\"']\s*(?:#.*)?$", re.M)
_CLASS_LINE = re.compile(r"^class\s+([A-Za-z_]\w*)\s*[(:]")
_OWN_KIND = re.compile(r"^\s+kind\s*=\s*KIND\b")
_COUNTS = re.compile(r"^\s+def\s+from_counts\s*\(", re.M)
_RADIUS_LINE = re.compile(r"^RADIUS\s*=\s*\"([^\"]*)\"", re.M)
_SUPPORTS_LINE = re.compile(r"^AROUND_SUPPORTS\s*=\s*(\([^)]*\))", re.M)
_CLASS_SPEC = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


class KindFile(NamedTuple):
    """A built-in kind as its file declares it."""

    kind: str
    """The kind's name (``KIND``)."""
    module: str
    """The module, relative to ``rcmdp_exact.uncertainty`` (e.g. ``".kl"``)."""
    cls: str
    """The name of the set class (the class whose body says ``kind = KIND``)."""
    estimated: bool
    """The file defines ``from_counts``: the kind is built from estimation counts."""
    radius: str = ""
    """What ``--radius R`` is for the kind's set around a model (its ``RADIUS`` line)."""
    supports: tuple | None = None
    """The ``--support`` values of its set around a model (``AROUND_SUPPORTS``; None:
    every one)."""


def _read(path: Path) -> KindFile | None:
    text = path.read_text("utf-8")
    found = _KIND_LINE.search(text)
    if found is None:
        return None
    cls = None
    current = None
    for line in text.splitlines():
        head = _CLASS_LINE.match(line)
        if head:
            current = head[1]
        elif current is not None and _OWN_KIND.match(line):
            cls = current
            break
    if cls is None:
        raise RuntimeError(f"{path.name} declares KIND = {found[1]!r} but no class of it "
                           f"says `kind = KIND`")
    radius = _RADIUS_LINE.search(text)
    supports = _SUPPORTS_LINE.search(text)
    return KindFile(found[1], f".{path.stem}", cls, bool(_COUNTS.search(text)),
                    radius[1] if radius else "",
                    ast.literal_eval(supports[1]) if supports else None)


@functools.cache
def kind_files() -> dict[str, KindFile]:
    """Every built-in kind by name, the default (``l1``) first, then alphabetically."""
    found = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        info = _read(path)
        if info is None:
            continue
        if info.kind in found:
            raise RuntimeError(f"two files declare the kind {info.kind!r}: "
                               f"{found[info.kind].module} and {info.module}")
        found[info.kind] = info
    order = sorted(found, key=lambda k: (k != DEFAULT_SET_KIND, k))
    return {k: found[k] for k in order}


def builtin_kinds(*, estimated: bool = False) -> tuple[str, ...]:
    """The names of the built-in kinds (with ``estimated=True``: those that ``--set``
    builds from the counts of the estimation phase), the default first."""
    return tuple(k for k, info in kind_files().items() if info.estimated or not estimated)


def builtin_class_module(name: str) -> str | None:
    """The module (relative, ``".kl"``) of the built-in set class ``name``, or None."""
    for info in kind_files().values():
        if info.cls == name:
            return info.module
    return None


def kind_name_problem(kind) -> str | None:
    """What is wrong with ``kind`` as the name of a kind estimated from data (None: it is
    a built-in kind's name or has the form ``MODULE:CLASS``, which is not imported here;
    the class is checked where the kind enters, by
    :func:`~rcmdp_exact.uncertainty.set_class`).  No numpy: the command line uses it."""
    kinds = builtin_kinds(estimated=True)
    if isinstance(kind, str) and (kind in kinds or _CLASS_SPEC.match(kind)):
        return None
    return (f"{kind!r} is not a kind of set; give one of {', '.join(kinds)} or "
            f"MODULE:CLASS of a set class of yours (docs/your_set.md)")


def check_kind_name(kind, what: str = "set kind") -> str:
    """Raise an InputError unless :func:`kind_name_problem` finds nothing; returns
    ``kind`` (a stored run's kind is checked so, without importing a class)."""
    problem = kind_name_problem(kind)
    if problem is None:
        return kind
    from .._checks import InputError

    raise InputError(f"{what} {problem}")

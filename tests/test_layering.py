"""The rooms' layering: no room imports a room above it or beside it, and no module is in
an import circle.

The rooms and their order are written once, in the table of the section "The layers" of
``docs/architecture.md``; this test reads it.  The imports are found by parsing the
package's source with :mod:`ast`: every ``import`` and ``from ... import``, at module
level or inside a function (a lazy import is an arrow like any other).  Imports made by
``importlib.import_module`` with a computed name (the registry of set kinds, the lazy
package faces) are not arrows: they load what a table of names says, not a fixed room.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

import rcmdp_exact

PACKAGE = Path(rcmdp_exact.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
#: The one name any room may take from the package's face (``rcmdp_exact/__init__.py``):
#: the version, written there once so that the build reads it without an import.
FACE_NAMES = {"__version__"}
#: The heading of the section of docs/architecture.md whose table is read.
SECTION = "## The layers"


def read_layers(text: str) -> dict[str, int]:
    """The layer of every room, from the table of the section :data:`SECTION`: rows
    ``| N | `room`, `room` | ... |`` (layer N, higher imports lower)."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start: end if end >= 0 else len(text)]
    layers = {}
    for line in section.splitlines():
        row = re.match(r"^\|\s*(\d+)\s*\|([^|]*)\|", line)
        if not row:
            continue
        for room in re.findall(r"`([^`]+)`", row[2]):
            if room in layers:
                raise AssertionError(f"the room {room!r} is in two layers of the table")
            layers[room] = int(row[1])
    if not layers:
        raise AssertionError(f"no table of layers under {SECTION!r} in {ARCHITECTURE}")
    return layers


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room_of(module: str) -> str:
    """The room of a module: its subpackage (``rcmdp_exact.uncertainty.l1`` is in
    ``uncertainty``), or the module itself at the top (``_checks``, ``names``); the
    package's ``__init__`` is the face, ``rcmdp_exact``."""
    parts = module.split(".")
    return parts[0] if len(parts) == 1 else parts[1]


def imports(root: Path) -> list[tuple[str, str, int, tuple[str, ...]]]:
    """Every import of the package under ``root`` (the folder that holds
    ``rcmdp_exact``) of a module of the package: (importer, imported module, line,
    names taken)."""
    pkg = root / "rcmdp_exact"
    files = {module_name(p, root): p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts}

    def known(name: str) -> str:
        while name not in files and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    found = []
    for module, path in sorted(files.items()):
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "rcmdp_exact":
                        found.append((module, known(alias.name), node.lineno, ()))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != "rcmdp_exact":
                    continue
                for alias in node.names:  # a submodule taken by name is an arrow to it
                    target = f"{source}.{alias.name}"
                    found.append((module, target if target in files else known(source),
                                  node.lineno, (alias.name,)))
    return found


def problems(root: Path, layers: dict[str, int]) -> list[str]:
    """What breaks the layering under ``root``: a module in no room of the table, an
    import of a room above or beside the importer's, an import circle of modules."""
    out = []
    edges: dict[str, set[str]] = {}
    arrows = imports(root)
    modules = {module_name(p, root) for p in (root / "rcmdp_exact").rglob("*.py")
               if "__pycache__" not in p.parts}
    for module in sorted(modules):
        if room_of(module) not in layers:
            out.append(f"{module} is in no room of the table of layers "
                       f"(docs/architecture.md, {SECTION!r}): add its room")
    for src, dst, line, names in arrows:
        if src == dst:
            continue
        edges.setdefault(src, set()).add(dst)
        a, b = room_of(src), room_of(dst)
        if a == b or a not in layers or b not in layers:
            continue
        if b == "rcmdp_exact" and set(names) <= FACE_NAMES and names:
            continue
        if layers[b] >= layers[a]:
            where = "above" if layers[b] > layers[a] else "beside"
            out.append(f"{src} (line {line}) imports {dst}: the room {b} (layer "
                       f"{layers[b]}) is {where} {a} (layer {layers[a]})")
    for circle in circles(edges):
        out.append("import circle: " + " -> ".join([*circle, circle[0]]))
    return out


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def layers():
    return read_layers(ARCHITECTURE.read_text("utf-8"))


def test_no_room_imports_upward_or_in_a_circle(layers):
    found = problems(PACKAGE.parent, layers)
    assert not found, "\n".join(found)


def test_every_room_of_the_table_exists(layers):
    rooms = {room_of(module_name(p, PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
             if "__pycache__" not in p.parts}
    assert set(layers) == rooms, (set(layers) ^ rooms)


def test_testing_is_imported_by_nothing_in_the_package(layers):
    """``rcmdp_exact.testing`` is at the top: for property tests of the user's code."""
    assert layers["testing"] == max(layers.values())
    users = sorted({src for src, dst, _, _ in imports(PACKAGE.parent)
                    if room_of(dst) == "testing" and room_of(src) != "testing"})
    assert not users, users


@pytest.mark.parametrize("plant, fact", [
    ("def planted():\n    from ..protocol import spec\n", "uncertainty.base (line"),
    ("from ..ground_truth import lp\n", "imports rcmdp_exact.ground_truth.lp: the room "
                                        "ground_truth (layer"),
    ("def planted():\n    from .. import learners\n", "rcmdp_exact.learners: the room "
                                                      "learners"),
])
def test_a_planted_upward_import_fails(tmp_path, layers, plant, fact):
    """The check can fail: a copy of the package with one upward import (at module level
    or inside a function) added to uncertainty/base.py is refused, naming the line."""
    copy = tmp_path / "rcmdp_exact"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    base = copy / "uncertainty" / "base.py"
    base.write_text(base.read_text() + "\n\n" + plant)
    found = problems(tmp_path, layers)
    assert len(found) == 1 and fact in found[0] and "is above" in found[0], found


def test_a_planted_circle_and_an_import_beside_fail(tmp_path, layers):
    """Two modules of one room that import each other are a circle; a room that imports
    a room of its own layer is refused too; a module in no room is named."""
    copy = tmp_path / "rcmdp_exact"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    kinds = copy / "uncertainty" / "kinds.py"
    kinds.write_text(kinds.read_text() + "\n\ndef planted():\n    from .l1 import L1Ball\n")
    lp = copy / "ground_truth" / "lp.py"
    lp.write_text(lp.read_text() + "\n\ndef planted():\n    from ..learners import config\n")
    (copy / "newroom.py").write_text("X = 1\n")
    found = problems(tmp_path, layers)
    assert any(f.startswith("import circle:") and "rcmdp_exact.uncertainty.kinds" in f
               for f in found), found
    assert any("is beside ground_truth" in f and "ground_truth.lp" in f for f in found), found
    assert any(f.startswith("rcmdp_exact.newroom is in no room") for f in found), found


def test_the_table_is_read_as_written():
    text = ("# x\n\n## The layers\n\n| layer | rooms |\n|---|---|\n| 2 | `a`, `b` |\n"
            "| 0 | `c` |\n\n## Next\n\n| 9 | `z` |\n")
    assert read_layers(text) == {"a": 2, "b": 2, "c": 0}
    with pytest.raises(AssertionError, match="two layers"):
        read_layers(text.replace("`c`", "`a`"))

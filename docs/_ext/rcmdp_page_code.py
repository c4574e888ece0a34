"""Sphinx extension: the pages' code runs, and prints what the pages say it prints.

The README's documentation command (``sphinx-build -W --keep-going -b html docs
docs/_build/html``) runs, at the end of the build, every ``python`` code block of the
pages in :data:`RUN_PAGES` (and of the README), in order, in one namespace per page, in
a folder of its own:

* a block preceded by a MyST comment line ``% skip-test: reason`` is skipped (it must
  say why);
* a block preceded by ``% file: NAME.py`` is a module of the reader's: it is written to
  that file in the folder, which the blocks after it import from, as a reader would;
* what a page says the code prints (a ``text`` block after the word "prints", or an
  inline literal after it) must be among the lines it printed.

A block that raises, or a stated output that is not printed, fails the build and is
named (page, block, error).  The test command does not run the pages again:
``tests/test_docs.py`` checks this checker on small pages (each fault named), and
``python -m pytest -m docs`` runs the pages in pytest.  ``-D rcmdp_page_code=0``
switches the check off for a quick look at the site.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
from pathlib import Path

#: The pages whose code blocks run (other pages have tests of their own).
RUN_PAGES = ("quickstart", "model", "evaluation", "mdp", "domains", "robust", "sets",
             "your_set", "gradients", "your_learner", "theorems", "results", "README")

PRINTED = re.compile(r"^prints\n\n```text\n(?P<block>.*?)^```|prints `(?P<inline>[^`]+)`",
                     re.S | re.M)
FENCE = re.compile(r"^(?:(?P<skip>% skip-test:[^\n]+\n)|% file: (?P<file>\w+\.py)\n)?"
                   r"```python\n(?P<code>.*?)^```", re.S | re.M)


def page_path(docs: Path, name: str) -> Path:
    """The file of a page of :data:`RUN_PAGES` (the README sits beside ``docs/``)."""
    return docs.parent / "README.md" if name == "README" else docs / f"{name}.md"


def blocks(text: str) -> list[tuple[str, bool, str | None]]:
    """The page's python blocks: (code, skipped, file name or None)."""
    return [(m["code"], bool(m["skip"]), m["file"]) for m in FENCE.finditer(text)]


def same_output(stated: str, printed: str) -> bool:
    """Equal lines; a "label: x" line whose x is a rounding-level error (below 1e-6)
    matches the same label with an x of the same order of magnitude (BLAS and CPU
    change the last digits of such numbers)."""
    if stated == printed:
        return True
    a, b = stated.rpartition(": "), printed.rpartition(": ")
    try:
        x, y = float(a[2]), float(b[2])
    except ValueError:
        return False
    return a[0] == b[0] and 0 < x < 1e-6 and 0 < y < 1e-6 and 0.1 < x / y < 10


@contextlib.contextmanager
def _in_folder(folder: Path):
    """Run in ``folder`` (cwd, first on sys.path, matplotlib without a display), and
    forget afterwards the modules imported from it (another page may name its own
    module the same)."""
    cwd, path, backend = os.getcwd(), list(sys.path), os.environ.get("MPLBACKEND")
    before = set(sys.modules)
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    os.environ["MPLBACKEND"] = "Agg"
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = path
        if backend is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = backend
        for name in set(sys.modules) - before:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file.startswith(str(folder)):
                del sys.modules[name]


def run_page(text: str, label: str, folder: Path) -> tuple[list[str], list[str]]:
    """Run the python blocks of a page (its text) in ``folder``; returns (problems,
    printed lines).  The first block that raises ends the page (the blocks after it
    build on it); every stated output that was not printed is a problem."""
    namespace: dict = {"__name__": f"docs_{label}"}
    out = io.StringIO()
    problems: list[str] = []
    with _in_folder(folder), contextlib.redirect_stdout(out):
        for i, (code, skip, file) in enumerate(blocks(text)):
            if skip:
                continue
            if file:
                (folder / file).write_text(code, "utf-8")
                continue
            try:
                exec(compile(code, f"{label} block {i + 1}", "exec"), namespace)
            except Exception as err:  # report the page and the block
                problems.append(f"{label}, python block {i + 1} raised "
                                f"{type(err).__name__}: {err}")
                break
    printed = out.getvalue().splitlines()
    if not problems:
        for m in PRINTED.finditer(text):
            for line in (m["block"] or m["inline"]).strip().splitlines():
                if not any(same_output(line, p) for p in printed):
                    problems.append(f"{label} says the code prints {line!r}; it printed "
                                    f"{printed}")
    return problems, printed


def check_pages(docs: Path, names=RUN_PAGES) -> list[str]:
    """Run every page of ``names``, each in a new temporary folder; the problems."""
    problems = []
    for name in names:
        page = page_path(docs, name)
        text = page.read_text("utf-8")
        if not blocks(text):
            problems.append(f"{page.name} has no python block")
            continue
        with tempfile.TemporaryDirectory(prefix=f"rcmdp-page-{name}-") as folder:
            problems += run_page(text, page.name, Path(folder))[0]
    return problems


def _check(app, exception) -> None:
    if exception is not None or app.builder.format != "html" or not app.config.rcmdp_page_code:
        return
    problems = check_pages(Path(app.srcdir))
    if problems:
        from sphinx.errors import ExtensionError

        raise ExtensionError("the pages' code fails (docs/_ext/rcmdp_page_code.py):\n  "
                             + "\n  ".join(problems))


def setup(app):
    app.add_config_value("rcmdp_page_code", True, "env", [bool, int])
    app.connect("build-finished", _check)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

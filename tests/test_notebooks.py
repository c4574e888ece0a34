"""Execute every tutorial notebook from top to bottom; a cell that raises fails the test.

The notebooks are stored as text, in jupytext's percent format (``notebooks/NN_name.py``);
the paired ``.ipynb`` files are not kept in the repository.  Each test reads one of them
with jupytext, and executes it in memory (nothing is written back) in a fresh kernel
started from ipykernel's default "python3" kernel spec, which launches the interpreter
running the tests (``sys.executable``), so the notebooks see the same installed
``rcmdp_exact``.  Plots use the non-interactive Agg backend (``MPLBACKEND=Agg``).

Every notebook checks its own exact numbers against an independent computation with
``assert``, so executing it is the test.

The documentation build (README command 3) executes every notebook too, and fails on a
cell that raises or a solver's banner in the outputs (``docs/_ext/rcmdp_site_checks.py``),
so the test command leaves :func:`test_notebook_runs` (marked ``docs``) to it; ``python
-m pytest -m docs`` runs it here, e.g. ``-m docs -k 04_ground_truth`` for one notebook
while writing it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import jupytext
import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME
from jupyter_client.manager import KernelManager

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))

#: Seconds allowed for one cell; each notebook runs in well under a minute in total.
CELL_TIMEOUT = 120
#: Seconds allowed for the kernel to start.
STARTUP_TIMEOUT = 60


def _kernel_manager() -> KernelManager:
    """A kernel manager for ipykernel's "python3" kernel on this interpreter."""
    km = KernelManager(kernel_name=NATIVE_KERNEL_NAME)
    argv = km.format_kernel_cmd()
    if os.path.abspath(argv[0]) != os.path.abspath(sys.executable):
        pytest.fail(
            f"the {NATIVE_KERNEL_NAME!r} kernel spec would start {argv[0]!r}, not the "
            f"interpreter running the tests ({sys.executable!r}); remove the user-level "
            f"kernel spec shadowing ipykernel's default (jupyter kernelspec list)"
        )
    return km


def test_notebooks_are_text_and_numbered():
    """The first four tutorials exist, numbered in order, and no .ipynb is stored."""
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(1, len(NOTEBOOKS) + 1)), [p.name for p in NOTEBOOKS]
    assert len(NOTEBOOKS) >= 4
    stored = sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb"))
    assert not stored, f"store notebooks as jupytext .py files, not {stored}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_valid_percent_format(path: Path):
    """A jupytext header with the python3 kernel, a title, markdown and code cells."""
    text = path.read_text(encoding="utf-8")
    assert re.search(r"^#\s+format_name: percent$", text, re.M), "not in percent format"
    nb = jupytext.reads(text, fmt="py:percent")
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == NATIVE_KERNEL_NAME
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith(f"# {int(path.name[:2])}. ")
    assert {"markdown", "code"} <= {c.cell_type for c in nb.cells}


@pytest.mark.docs
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, monkeypatch, tmp_path):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # what a notebook writes goes under tmp_path, never into the checkout: its temporary
    # folders (tutorial 6 keeps its store for the reader) and hypothesis's storage
    # (tutorial 7; by default ./.hypothesis of the notebook's folder)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path / "hypothesis"))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # ipykernel captures file descriptor 1 (output printed by C code) into the notebook
    # unless it finds this variable; without it the kernel behaves as in Jupyter.
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    nb = jupytext.read(path, fmt="py:percent")
    client = nbclient.NotebookClient(
        nb,
        km=_kernel_manager(),
        kernel_name=NATIVE_KERNEL_NAME,
        timeout=CELL_TIMEOUT,
        startup_timeout=STARTUP_TIMEOUT,
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as err:
        pytest.fail(f"{path.name}: a cell raised\n{err}")
    except nbclient.exceptions.CellTimeoutError as err:
        pytest.fail(f"{path.name}: a cell ran longer than {CELL_TIMEOUT} s\n{err}")
    errors = [
        (i, out.get("ename"), out.get("evalue"))
        for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
        for out in cell.outputs if out.output_type == "error"
    ]
    assert not errors, f"{path.name}: error outputs {json.dumps(errors)}"
    # A solver's banner printed by C code reaches a notebook through the kernel's capture
    # of file descriptor 1; the toolkit's LPs must keep the outputs clean there too.
    banners = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
               for out in cell.outputs if "Running HiGHS" in str(out.get("text", ""))]
    assert not banners, f"{path.name}: a solver banner in the outputs of cells {banners}"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), (
        f"{path.name}: some code cells were not executed"
    )

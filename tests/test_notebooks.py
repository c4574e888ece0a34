"""Execute every tutorial notebook from top to bottom; a cell that raises fails the test.

Each notebook runs in a fresh kernel started from ipykernel's default "python3" kernel
spec, which launches the interpreter running the tests (``sys.executable``), so the
notebooks see the same installed ``rcmdp_exact``.  Plots use the non-interactive Agg
backend (``MPLBACKEND=Agg`` in the kernel's environment).  The notebooks are stored
without outputs; they are executed in memory and never written back.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

#: Seconds allowed for one cell; each notebook is meant to run in well under 30 s.
CELL_TIMEOUT = 180
#: Seconds allowed for the kernel to start.
STARTUP_TIMEOUT = 120


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


def test_notebooks_are_found():
    names = [p.name for p in NOTEBOOKS]
    assert names == [
        "01_model_and_exact_evaluation.ipynb",
        "02_policy_gradient_theorems.ipynb",
        "03_robust_inner_problem.ipynb",
        "04_ground_truth.ipynb",
    ], names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_clean(path: Path):
    """Valid nbformat 4, no outputs, no execution counts."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata["kernelspec"]["name"] == NATIVE_KERNEL_NAME
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have stored outputs; clear them"
    kinds = {c.cell_type for c in nb.cells}
    assert {"markdown", "code"} <= kinds


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(path, as_version=4)
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
    executed = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in executed), (
        f"{path.name}: some code cells were not executed"
    )

"""Sphinx configuration of the rcmdp_exact documentation.

Build it with ``sphinx-build -W -b html docs docs/_build/html`` after
``pip install ".[docs]"``.  The pages are MyST Markdown; the tutorials are the jupytext
notebooks of ``notebooks/``, converted here to ``docs/tutorials/*.ipynb`` (ignored by git)
and executed by myst-nb at build time; the API reference comes from the numpy-style
docstrings (autodoc + numpydoc); the command-line page is generated from the argparse
parser by the local extension ``_ext/rcmdp_cli.py``.  At the end of the build,
``_ext/rcmdp_page_code.py`` runs the python blocks of the pages (each must run and print
what its page says; ``-D rcmdp_page_code=0`` skips them) and
``_ext/rcmdp_site_checks.py`` checks the site (every tutorial executed without a solver's
banner in its outputs, MathJax served offline, the command line complete) and fails the
build otherwise: this build is where the site, the pages' code and the tutorials are tested.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))

import rcmdp_exact  # noqa: E402

project = "rcmdp_exact"
author = "the rcmdp_exact authors"
copyright = "the rcmdp_exact authors"
release = version = rcmdp_exact.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax served from _static: formulas render offline
    "sphinx.ext.viewcode",
    "numpydoc",
    "rcmdp_cli",
    "rcmdp_api",
    "rcmdp_page_code",  # the pages' code blocks run and print what the pages say
    "rcmdp_site_checks",  # the built site's checks: tutorials executed, maths offline, CLI
]

root_doc = "index"
smartquotes = False  # keep "--option" and quotes as written
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]

# --- the tutorials: jupytext notebooks converted to .ipynb -----------------------------
def _convert_notebooks() -> None:
    """Write docs/tutorials/NN_name.ipynb from notebooks/NN_name.py (only if changed)."""
    import jupytext

    out_dir = DOCS / "tutorials"
    wanted = set()
    for src in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
        nb = jupytext.read(src, fmt="py:percent")
        text = jupytext.writes(nb, fmt="ipynb")
        dst = out_dir / f"{src.stem}.ipynb"
        wanted.add(dst)
        if not dst.exists() or dst.read_text(encoding="utf-8") != text:
            dst.write_text(text, encoding="utf-8")
    for stale in out_dir.glob("[0-9][0-9]_*.ipynb"):
        if stale not in wanted:
            stale.unlink()


_convert_notebooks()

# myst-nb: execute the notebooks at build time (a cell that raises fails the build);
# outputs are cached between builds (docs/_build/.jupyter_cache) and recomputed when a
# notebook's code changes.  ``-D nb_execution_mode=force`` re-executes everything, ``off``
# renders without outputs (and skips the check that every tutorial was executed).
nb_execution_mode = "cache"
nb_execution_timeout = 180
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
# the kernels inherit this: figures must be inline PNGs whatever the caller set
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# --- API reference ---------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "show-inheritance": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

# --- HTML --------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"rcmdp_exact {release}"
html_static_path: list[str] = []
html_copy_source = False

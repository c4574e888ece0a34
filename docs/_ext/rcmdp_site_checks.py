"""Sphinx extension: checks of the built site, run at the end of every HTML build.

The README's documentation command (``sphinx-build -W --keep-going -b html docs
docs/_build/html``) is where the site and the tutorials are checked; the test command
does not build them again.  Besides Sphinx's own warnings (errors with ``-W``) and a
tutorial cell that raises (``nb_execution_raise_on_error``), the build fails when:

* a tutorial of ``notebooks/`` has no page, or was not executed (unless the build was
  asked not to execute: ``-D nb_execution_mode=off``), or its outputs show a solver's
  banner ("Running HiGHS": a solver printing from C code into a notebook);
* the formulas need a network: a page loads MathJax (or any script) from another host
  instead of the site's own ``_static/mathjax/tex-chtml.js``;
* the command-line page lacks the program's subcommands and options (generated from the
  parser by ``rcmdp_cli``).

Each check is a function of the output folder (and of what Sphinx recorded) returning a
list of problems, so that ``tests/test_docs.py`` checks the checks on small
folders without a build (and without Sphinx: it is imported only to fail the build).
"""

from __future__ import annotations

import re
from pathlib import Path

#: A script loaded from another host (``src="https://..."`` or ``src="//..."``).
REMOTE_SCRIPT = re.compile(r"<script[^>]*\ssrc=\"(?:https?:)?//[^\"]*\"", re.I)
#: What a solver prints from C code when its output reaches a notebook.
BANNERS = ("Running HiGHS",)
#: Subcommands and an option the command-line page must show.
CLI_MUST_SHOW = ("rcmdp verify", "rcmdp reproduce", "rcmdp suite", "--tol")


def check_tutorials(html: Path, tutorials: list[str], executed: dict | None) -> list[str]:
    """Every tutorial has a page without a solver's banner; ``executed`` (name ->
    myst-nb's execution record, or None when execution was switched off) says each ran
    and succeeded."""
    problems = []
    for name in tutorials:
        page = html / "tutorials" / f"{name}.html"
        if not page.is_file():
            problems.append(f"the tutorial {name} has no page {page}")
            continue
        text = page.read_text("utf-8")
        problems += [f"tutorials/{name}.html shows a solver's banner {b!r}"
                     for b in BANNERS if b in text]
        if executed is not None:
            record = executed.get(name)
            if not record:
                problems.append(f"the tutorial {name} was not executed")
            elif not record.get("succeeded"):
                problems.append(f"the tutorial {name} failed: {record.get('error')}")
    return problems


def check_offline_maths(html: Path, page: str = "sets.html") -> list[str]:
    """MathJax is served from the site itself, and no page loads a script from another
    host."""
    problems = []
    if not (html / "_static" / "mathjax" / "tex-chtml.js").is_file():
        problems.append("no _static/mathjax/tex-chtml.js (sphinx-mathjax-offline)")
    sample = html / page
    if not sample.is_file() or "_static/mathjax/tex-chtml.js" not in sample.read_text("utf-8"):
        problems.append(f"{page} does not load MathJax from _static/mathjax/tex-chtml.js")
    for path in sorted(html.rglob("*.html")):
        for m in REMOTE_SCRIPT.finditer(path.read_text("utf-8")):
            problems.append(f"{path.relative_to(html)} loads a script from the network: "
                            f"{m.group(0)}")
    return problems


def check_cli_page(html: Path) -> list[str]:
    page = html / "cli.html"
    if not page.is_file():
        return ["no cli.html"]
    text = page.read_text("utf-8")
    return [f"cli.html does not show {s!r}" for s in CLI_MUST_SHOW if s not in text]


def _execution_records(app) -> dict | None:
    """myst-nb's execution record of each tutorial (None when execution is off)."""
    if app.config.nb_execution_mode == "off":
        return None
    from myst_nb.sphinx_ import NbMetadataCollector

    out = {}
    for docname in app.env.found_docs:
        if docname.startswith("tutorials/"):
            out[docname.split("/", 1)[1]] = NbMetadataCollector.get_exec_data(app.env,
                                                                             docname)
    return out


def _check_site(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    html = Path(app.outdir)
    notebooks = Path(app.srcdir).parent / "notebooks"
    tutorials = sorted(p.stem for p in notebooks.glob("[0-9][0-9]_*.py"))
    problems = (check_tutorials(html, tutorials, _execution_records(app))
                + check_offline_maths(html) + check_cli_page(html))
    if problems:
        from sphinx.errors import ExtensionError

        raise ExtensionError("the built site fails its checks (docs/_ext/rcmdp_site_checks"
                             ".py):\n  " + "\n  ".join(problems))


def setup(app):
    app.connect("build-finished", _check_site)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

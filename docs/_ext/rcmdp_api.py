"""Sphinx directive ``rcmdp-exports``: a table of every name of ``rcmdp_exact.__all__``.

Use it in reStructuredText (in MyST pages, inside an ``eval-rst`` block): the summaries
are the docstrings' first paragraphs, written in reStructuredText.

Each row links the name to the page that documents it (the first API module page whose
module holds the same object, else the package page itself) and gives the first line of
its docstring, so the table follows the package's public contract as it is.
"""

from __future__ import annotations

import importlib
import inspect

from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

#: Modules with a page in docs/api (in the order searched for a name's home).
DOCUMENTED = (
    "rcmdp_exact.core.model", "rcmdp_exact.core.model_checks", "rcmdp_exact.core.evaluation",
    "rcmdp_exact.core.sampling",
    "rcmdp_exact.uncertainty", "rcmdp_exact.robust", "rcmdp_exact.core.mdp",
    "rcmdp_exact.theory.gradients", "rcmdp_exact.theory.differences",
    "rcmdp_exact.theory.estimators", "rcmdp_exact.core.parametrisations", "rcmdp_exact.core.nn",
    "rcmdp_exact.theory.verify", "rcmdp_exact.ground_truth", "rcmdp_exact.domains",
    "rcmdp_exact.interop",
)


def _home(name: str, obj) -> str:
    """Where ``obj`` (exported as ``rcmdp_exact.<name>``) is documented."""
    if inspect.ismodule(obj):
        return obj.__name__
    owner = getattr(obj, "__module__", None)
    order = ([owner] if owner in DOCUMENTED else []) + list(DOCUMENTED)
    for mod_name in order:
        if getattr(importlib.import_module(mod_name), name, None) is obj:
            return f"{mod_name}.{name}"
    return f"rcmdp_exact.{name}"


def _kind(obj) -> str:
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


def _summary(obj) -> str:
    if not (inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj)):
        return ""
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


class ExportsDirective(SphinxDirective):
    has_content = False

    def run(self):
        import rcmdp_exact

        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 30 12 58", "",
                 "   * - name", "     - kind", "     - summary"]
        for name in sorted(rcmdp_exact.__all__, key=str.lower):
            if name.startswith("__"):
                continue
            obj = getattr(rcmdp_exact, name)
            kind = _kind(obj)
            role = {"module": "mod", "class": "class", "exception": "exc",
                    "function": "func"}.get(kind, "data")
            target = _home(name, obj)
            summary = _summary(obj)
            lines += [f"   * - :py:{role}:`{name} <{target}>`", f"     - {kind}",
                      f"     - {summary or ' '}"]
        from docutils import nodes

        holder = nodes.container()
        self.state.nested_parse(StringList(lines, source="rcmdp_exact.__all__"), 0, holder)
        return holder.children


def setup(app):
    app.add_directive("rcmdp-exports", ExportsDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

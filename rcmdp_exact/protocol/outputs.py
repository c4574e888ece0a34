"""The files of a report folder and whose they are (light: no numpy, so that the
commands refuse a folder they would overwrite before any heavy import).

:func:`~.report.write_report` writes the files of :func:`report_files`: the three
documents, the figures of every test and training domain (:func:`figure_names`) and
the small file :data:`REPORT_MARKER` that names the store the report was written from.

**Existing outputs.**  A folder that holds report files of *another* store, or report
files without :data:`REPORT_MARKER` (whose store is unknown), holds outputs that
writing a report would replace: :func:`foreign_report` names them, and the commands
refuse them unless ``--force``.  Two cases are the store's own output, which writing
again updates and does not overwrite: the marker names this store (its report,
rewritten as ``rcmdp reproduce`` adds jobs or by ``rcmdp report``), or the folder has
no marker and this store already exists in the folder itself (a reproduction written
before the marker existed, its store beside its report).  A store that does not exist
yet has written nothing, so report files beside it are never its own: a new
reproduction into a folder that holds a ``report.md`` of the user's is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..names import DOMAIN_OF_TEST, USER_DOMAIN, USER_TEST

__all__ = [ "REPORT_MARKER", "figure_names", "foreign_report",
           "report_files", "store_id"]

#: The documents of a report.
_REPORT_DOCUMENTS = ("table1.csv", "table1.md", "report.md")
#: The file of a report folder that names the results store the report was written from
#: (JSON: ``{"store": absolute path}``).
REPORT_MARKER = ".rcmdp-report.json"
#: Every test a report can show and its domain: the paper's and your own model's.
_TEST_DOMAIN = {**DOMAIN_OF_TEST, USER_TEST: USER_DOMAIN}


def figure_names(tests=tuple(_TEST_DOMAIN)) -> list[str]:
    """The figures :func:`~.figures.all_figures` draws for ``tests``, in order (each is
    written when the store has data for it)."""
    return ([f"test_{t}" for t in _TEST_DOMAIN if t in tests]
            + [f"training_{d}" for d in dict.fromkeys(_TEST_DOMAIN[t] for t in _TEST_DOMAIN
                                                     if t in tests)])


def report_files() -> tuple[str, ...]:
    """Every file name :func:`~.report.write_report` may write (its own file set)."""
    return (_REPORT_DOCUMENTS + tuple(f"{n}.png" for n in figure_names())
            + (REPORT_MARKER,))


def store_id(store_path) -> str:
    """The name a report marker gives a store: its absolute path."""
    return str(Path(store_path).expanduser().resolve())


def foreign_report(out_dir, store_path) -> str | None:
    """What in ``out_dir`` a report of the store ``store_path`` would replace without
    being its own (module notes): None when the folder holds no report files or the
    report of this store; otherwise a sentence naming the files and their store."""
    out = Path(out_dir)
    if not out.is_dir():
        return None
    names = [n for n in report_files() if n != REPORT_MARKER and (out / n).is_file()]
    if not names:
        return None
    try:
        owner = json.loads((out / REPORT_MARKER).read_text("utf-8"))["store"]
    except (OSError, ValueError, KeyError, TypeError):
        owner = None
    store = Path(store_id(store_path))
    if owner == str(store):
        return None
    if owner is None and store.parent == out.resolve() and store.is_file():
        return None  # a reproduction's folder: its store and its report, side by side
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    if owner:
        whose = f"the report of another results store ({owner})"
    elif store.parent == out.resolve():
        whose = (f"report files that the new results store {store.name} did not write "
                 f"(an unknown store's or your own)")
    else:
        whose = "report files of an unknown results store"
    return f"{str(out)!r} holds {whose}: {shown}"

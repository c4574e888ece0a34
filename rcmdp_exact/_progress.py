"""Progress bars for long work.

:func:`tqdm` is ``tqdm.auto.tqdm`` (a widget in Jupyter) when ipywidgets is installed,
and the plain text bar otherwise, so that notebooks without ipywidgets show a text bar
instead of a warning.  Every long-running function of the toolkit takes
``progress=True/False`` and passes it as ``disable=not progress``.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("ipywidgets") is not None:  # pragma: no cover - env dependent
    from tqdm.auto import tqdm
else:
    from tqdm.std import tqdm

__all__ = ["tqdm"]

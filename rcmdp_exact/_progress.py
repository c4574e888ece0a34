"""Progress bars for long work.

:func:`tqdm` is ``tqdm.auto.tqdm`` (a widget in Jupyter) when ipywidgets is installed,
and the plain text bar otherwise, so that notebooks without ipywidgets show a text bar
instead of a warning.  Every long-running function of the toolkit takes
``progress=None`` (the default: a bar only when standard error is a terminal), ``True``
or ``False``, resolved by :func:`progress_default` and passed as ``disable=not
progress``.
"""

from __future__ import annotations

import importlib.util
import sys

if importlib.util.find_spec("ipywidgets") is not None:  # pragma: no cover - env dependent
    from tqdm.auto import tqdm
else:
    from tqdm.std import tqdm

__all__ = ["progress_default", "tqdm"]


def progress_default(progress) -> bool:
    """``progress`` as a bool: None means "when standard error is a terminal"."""
    if progress is None:
        try:
            return bool(sys.stderr.isatty())
        except (AttributeError, ValueError):  # no stderr, or a closed one
            return False
    return bool(progress)

"""Progress bars for long work, and a line per stage where no bar is shown.

:func:`tqdm` is ``tqdm.auto.tqdm`` (a widget in Jupyter) when ipywidgets is installed,
and the plain text bar otherwise, so that notebooks without ipywidgets show a text bar
instead of a warning.  Every long-running function of the toolkit takes
``progress=None`` (the default: a bar only when standard error is a terminal), ``True``
or ``False``, resolved by :func:`progress_default` and passed as ``disable=not
progress``.

**A line per stage.**  A command whose output goes to a file or a pipe shows no bar, and
used to print nothing for minutes.  The command line turns :func:`stage_lines` on when
``--progress`` was not given and standard error is not a terminal: every bar that is
then off (and would have stayed on screen: ``leave`` not False) writes plain lines to
standard error instead, ``rcmdp: <stage>: started (N)``, a line at each tenth of its
work or every 60 s, whichever comes later, and ``rcmdp: <stage>: done N in T s``.
``--no-progress`` silences them too.
"""

from __future__ import annotations

import importlib.util
import sys
import time

if importlib.util.find_spec("ipywidgets") is not None:  # pragma: no cover - env dependent
    from tqdm.auto import tqdm as _base
else:
    from tqdm.std import tqdm as _base

__all__ = ["progress_default", "stage_lines", "tqdm"]

_LINES = {"on": False, "prefix": "rcmdp"}
#: Shortest time between two lines of one stage, in seconds.
LINE_EVERY = 60.0


def stage_lines(on: bool, prefix: str = "rcmdp") -> None:
    """Write a line per stage (module notes) for the bars that are off, or stop."""
    _LINES["on"] = bool(on)
    _LINES["prefix"] = prefix


def progress_default(progress) -> bool:
    """``progress`` as a bool: None means "when standard error is a terminal"."""
    if progress is None:
        try:
            return bool(sys.stderr.isatty())
        except (AttributeError, ValueError):  # no stderr, or a closed one
            return False
    return bool(progress)


class tqdm(_base):
    """``tqdm`` that writes a line per stage when it is off and stage lines are on."""

    def __init__(self, *args, **kwargs):
        self._stage = None
        super().__init__(*args, **kwargs)
        if self.disable and _LINES["on"] and kwargs.get("leave", True) is not False:
            total = kwargs.get("total")
            if total is None and args and hasattr(args[0], "__len__"):
                total = len(args[0])
            self._stage = {"desc": kwargs.get("desc") or "working", "total": total,
                           "n": 0, "t0": time.perf_counter(), "last": time.perf_counter(),
                           "tenth": 0}
            self._say(f"started ({total})" if total else "started")

    def _say(self, text: str, desc: str | None = None) -> None:
        desc = self._stage["desc"] if desc is None else desc
        prefix = _LINES["prefix"]
        if desc == prefix or desc.startswith(prefix + " "):  # "rcmdp report" under it
            desc = desc[len(prefix):].strip() or "working"
        try:
            print(f"{_LINES['prefix']}: {desc}: {text}", file=sys.stderr, flush=True)
        except (OSError, ValueError):  # a closed stderr: nothing to say it on
            pass

    def __iter__(self):
        if self._stage is None:
            yield from super().__iter__()
            return
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def update(self, n=1):
        out = super().update(n)
        st = self._stage
        if st is not None:
            st["n"] += n
            now = time.perf_counter()
            tenth = int(10 * st["n"] / st["total"]) if st["total"] else 0
            if (tenth > st["tenth"] and now - st["last"] >= LINE_EVERY) or (
                    not st["total"] and now - st["last"] >= LINE_EVERY):
                st["tenth"], st["last"] = tenth, now
                self._say(f"{st['n']}/{st['total']}" if st["total"] else f"{st['n']}")
        return out

    def close(self):
        st = self._stage
        if st is not None:
            self._stage = None
            elapsed = time.perf_counter() - st["t0"]
            self._say(f"done {st['n']}" + (f"/{st['total']}" if st["total"] else "")
                      + f" in {elapsed:.1f} s", st["desc"])
        return super().close()

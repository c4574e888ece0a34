"""Keep HiGHS from printing its banner into the user's output.

HiGHS prints a two-line banner on standard output the first time a ``Highs`` object is
created in a process, whatever the options it is later given (cvxpy creates one before
it passes ``output_flag``).  :func:`silence_highs_banner` creates that first object with
the process's file descriptor 1 pointed at the null device, so the banner goes nowhere
and later solves print nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["silence_highs_banner"]

_done = False


def silence_highs_banner() -> None:
    """Create the process's first ``highspy.Highs`` with stdout discarded (once)."""
    global _done
    if _done:
        return
    _done = True
    try:
        import highspy
    except ImportError:  # cvxpy without HiGHS: nothing to silence
        return
    # HiGHS writes with the C library, to file descriptor 1 whatever ``sys.stdout`` is:
    # a Jupyter kernel's stream reports another descriptor (the terminal it replaced)
    # while it captures descriptor 1 into the notebook.
    fd = 1
    sys.stdout.flush()
    saved, null = os.dup(fd), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
        highspy.Highs()
        ctypes.CDLL(None).fflush(None)  # the C library's buffer, before fd 1 comes back
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(null)

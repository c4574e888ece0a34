"""Worker processes that end with their parent, however the parent ends.

A pool of local worker processes (joblib's loky workers, a
:class:`concurrent.futures.ProcessPoolExecutor`, a :mod:`multiprocessing` pool) outlives
a driver killed by SIGKILL, by the out-of-memory killer or by a closed terminal: the
workers keep computing (and holding memory) for nobody.  A worker that calls
:func:`exit_with_parent` first ends as soon as its parent does.

How to use it
-------------
Give :func:`pool_initializer` to the pool as its initializer (every worker calls it once,
before its first job); the driver's process id is read when the pool is made:

* :class:`concurrent.futures.ProcessPoolExecutor` (``suite certify``)::

      from rcmdp_exact._workers import pool_initializer

      with ProcessPoolExecutor(max_workers=n, mp_context=ctx,
                               **pool_initializer()) as pool:
          ...

* ``joblib.Parallel`` with the loky backend (the protocol's local backend,
  :mod:`rcmdp_exact.protocol.backends`)::

      Parallel(n_jobs=n, **pool_initializer(), ...)

* :class:`multiprocessing.pool.Pool`: ``Pool(n, **pool_initializer())``;
* one child process of your own: call ``exit_with_parent(parent_pid)`` first thing in
  it, with the parent's ``os.getpid()`` passed from the parent.

The function is module-level and its arguments are an integer, so it pickles with the
``spawn`` and ``forkserver`` start methods too.  It imports nothing heavy (no numpy).

How it works
------------
On Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (through :mod:`ctypes`) has the kernel kill
the worker the moment its parent thread ends, SIGKILL of the parent included, whatever
the worker is doing (a long LAPACK call, a compiled loop).  Everywhere, a daemon thread
also checks ``os.getppid()`` every :data:`_PARENT_POLL_SECONDS` and ends the worker once
it has been handed to another parent (a fallback where ``prctl`` is missing; it needs
the worker to release the GIL now and then).  A parent that died before the worker got
to the call (a race at start-up) is found by the same test at once.
"""

from __future__ import annotations

import os
import sys
import threading
import time

__all__ = [ "exit_with_parent", "pool_initializer"]

#: How often a worker's watchdog thread checks that its parent is alive (seconds).
_PARENT_POLL_SECONDS = 0.5

#: The exit status of a worker whose parent has gone.
ORPHAN_EXIT = 1

_PR_SET_PDEATHSIG = 1


def _watch_parent(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(ORPHAN_EXIT)
        time.sleep(_PARENT_POLL_SECONDS)


def exit_with_parent(parent_pid: int) -> None:
    """Make this (worker) process end when process ``parent_pid``, its parent, ends.

    Parameters
    ----------
    parent_pid : int
        The parent's ``os.getpid()``, read in the parent (a worker cannot tell its
        parent from a process that adopted it once the parent has died).

    Notes
    -----
    Linux: the kernel sends SIGKILL to this process when its parent ends
    (``PR_SET_PDEATHSIG``); every system: a daemon thread exits the process (status
    :data:`ORPHAN_EXIT`) once ``os.getppid()`` differs from ``parent_pid``, checked
    every :data:`_PARENT_POLL_SECONDS`.  Idempotent (a second call adds a second
    watchdog thread, which does no harm).
    """
    parent_pid = int(parent_pid)
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no libc symbol: the watchdog remains
            pass
    if os.getppid() != parent_pid:  # the parent died before the death signal was set
        os._exit(ORPHAN_EXIT)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True,
                     name="rcmdp-exit-with-parent").start()


def pool_initializer() -> dict:
    """``{"initializer": exit_with_parent, "initargs": (os.getpid(),)}``: the keyword
    arguments that make every worker of a pool made in this process end with it
    (``ProcessPoolExecutor(**pool_initializer())``, ``joblib.Parallel(...,
    **pool_initializer())``, ``multiprocessing.Pool(n, **pool_initializer())``)."""
    return {"initializer": exit_with_parent, "initargs": (os.getpid(),)}

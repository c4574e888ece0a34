"""``python -m rcmdp_exact`` runs the command line (see :mod:`rcmdp_exact.cli`).

A SIGINT or SIGTERM while the command line is imported (before ``main`` installs its
own handlers) is answered as ``main`` answers one: a line, and the status 130 or 143
(it was a ``KeyboardInterrupt`` traceback and the death of the process by the signal).
"""

import os
import signal


def _while_starting(signum, frame):
    for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal: no second line
        signal.signal(sig, signal.SIG_IGN)
    term = signum == signal.SIGTERM
    try:
        os.write(2, f"rcmdp: {'terminated' if term else 'interrupted'}; "
                    f"nothing was written\n".encode())
    finally:
        os._exit(143 if term else 130)


for _sig in (signal.SIGINT, signal.SIGTERM):
    if signal.getsignal(_sig) is not signal.SIG_IGN:  # a background job's stays ignored
        signal.signal(_sig, _while_starting)

from .cli import main  # noqa: E402 (after the handlers)

raise SystemExit(main())

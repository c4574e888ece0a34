"""The entry of the command line: ``rcmdp`` (the console script) and ``python -m
rcmdp_exact`` both call :func:`main`, which answers a SIGINT or SIGTERM that lands while
the command line is imported (before :func:`rcmdp_exact.cli.main` installs its own
handlers) as that ``main`` answers one: a line, and the status 130 or 143 (it was a
``KeyboardInterrupt`` traceback and the death of the process by the signal).  This
module imports nothing but ``os`` and ``signal``, so the window before its handlers is
the interpreter's own start-up.
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


def main(argv=None) -> int:
    """As the program (``argv`` None): install the start-up handlers, import the command
    line and run it; with ``argv`` (a caller's own process) the handlers are left as they
    are, as :func:`rcmdp_exact.cli.main` leaves them."""
    if argv is None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # a background job's: ignored
                signal.signal(sig, _while_starting)
    from .cli import main as cli_main

    return cli_main(argv)

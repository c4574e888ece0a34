"""The ``rcmdp`` command line (also ``python -m rcmdp_exact``).

Each subcommand lives in :mod:`rcmdp_exact.cli` and is listed in
:data:`COMMANDS`.  ``rcmdp SUBCOMMAND --help`` describes its options.

Every outcome other than success is one line on standard error (``docs/cli.md``):

* exit status 2: a bad argument (argparse, before any work), an invalid input found
  later (:class:`~rcmdp_exact.InputError`, its subclasses ``LoadError`` and
  ``OutputPathError`` included) or a file the system refuses to read or write
  (``OSError``: a full disk, a read-only folder), each naming the path;
* exit status 141, silently: the reader of the output went away (``rcmdp ... | head``);
* exit status 130: an interrupt (Ctrl-C, SIGINT) of any command, with what was kept:
  a command sets ``args._interrupted`` to that text (or to a function returning it)
  as its work progresses; the default is "nothing was written".  Wherever it lands:
  while the command line loads (:mod:`rcmdp_exact._entry`), after the command's work
  is done (its outputs are then complete, and flushed first), or as a second Ctrl-C
  while the first is answered, never the death of the process by the signal (status
  -2, no word).  The one exception is the interpreter's last moments, after
  :func:`_last_guard` (the last exit handler: no Python code runs after it, the outcome
  is written and said): a signal there is ignored and the status is the command's own;
* exit status 143: SIGTERM (``kill PID``), answered as an interrupt, with the same
  line;
* warnings are printed as one line each, ``rcmdp COMMAND: warning: ...``.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from .. import __version__

#: Modules of :mod:`rcmdp_exact.cli`, in the order ``rcmdp --help`` lists them.
COMMANDS = ("evaluate", "verify", "ground_truth", "train", "reproduce", "report", "recover",
            "suite")


#: Arguments that are numbers, not options, although they start with "-": negative
#: numbers in any notation Python's float() reads, "-inf" and "-nan" (argparse alone
#: knows only "-5" and "-.5", and reads "--entropy -inf" as a missing value).
NEGATIVE_NUMBER = re.compile(r"^-(\d[\d_]*\.?[\d_]*|\.\d[\d_]*)([eE][+-]?\d+)?$"
                             r"|^-(inf|infinity|nan)$", re.IGNORECASE)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: what is wrong, and where help is
    (argparse's default prints the whole usage first), and that reads every negative
    number (``-1e-3``, ``-inf``) as a value.  Subcommands inherit it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="rcmdp",
        description="Exact solvers and verification tools for robust constrained MDPs.",
    )
    parser.add_argument("--version", action="version", version=f"rcmdp_exact {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod_name in COMMANDS:
        mod = importlib.import_module(f"rcmdp_exact.cli.{mod_name}")
        p = sub.add_parser(mod.NAME, help=mod.HELP,
                           description=f"{mod.HELP}.  Time on an idle two-core machine: "
                                       f"{mod.TIME} (docs/cli.md).")
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _parser=p)
    return parser


_TRACKER_NOTE = "ignore:resource_tracker:UserWarning"

#: The exit status of an interrupted command (128 + SIGINT), and of a terminated one
#: (128 + SIGTERM).
INTERRUPTED, TERMINATED = 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is (as Ctrl-C raises KeyboardInterrupt), so
    that a terminated command says what it kept, as an interrupted one does."""


#: Packages in whose code an interrupt waits (:func:`_on_signal`).
_COMPILER_PACKAGES = ("numba", "llvmlite")
#: Seconds between two looks at whether the compiler is done (a pause, not a limit).
_RETRY = 0.02
#: The signal that waits for the compiler, if any (one retry at a time).
_waiting: list = []


def _in_compiler(frame) -> bool:
    """Whether ``frame`` or a frame that called it runs code of numba or llvmlite (the
    folders of those packages, as imported: none before they are)."""
    import os

    roots = tuple(os.path.dirname(module.__file__) + os.sep
                  for module in map(sys.modules.get, _COMPILER_PACKAGES)
                  if getattr(module, "__file__", None))
    while roots and frame is not None:
        if frame.f_code.co_filename.startswith(roots):
            return True
        frame = frame.f_back
    return False


def _in_callback(frame) -> bool:
    """Whether ``frame`` or a frame that called it is one where a raised exception is
    printed and dropped ("Exception ignored in ..."): a weak reference's callback (the
    standard library's weakref.py, run by the garbage collector at any moment) or a
    ``__del__`` method."""
    import weakref

    ignored = weakref.__file__
    while frame is not None:
        code = frame.f_code
        if code.co_filename == ignored or code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _ask_again(signum: int) -> None:
    """Deliver ``signum`` to the main thread's handler again in :data:`_RETRY` s."""
    import _thread
    import threading

    def again():
        if _waiting:
            _waiting.clear()
            _thread.interrupt_main(signum)  # nothing if the handler is SIG_IGN by then

    if not _waiting:
        _waiting.append(signum)
        timer = threading.Timer(_RETRY, again)
        timer.daemon = True
        timer.start()


def _on_signal(signum, frame):
    """SIGINT and SIGTERM during a command's work: ``KeyboardInterrupt`` (``Terminated``
    for SIGTERM) where the command is, unless numba is compiling: then the signal waits
    until the compiler has returned (looked at again every :data:`_RETRY` s).

    numba compiles through llvmlite, which LLVM calls back through ctypes: an exception
    raised in such a callback is printed ("Exception ignored on calling ctypes callback
    function") and dropped, so that a Ctrl-C there was lost (``rcmdp train`` then ran
    its whole budget and exited 0); and an exception between two of llvmlite's calls
    leaves LLVM objects whose owner Python no longer knows (freed twice at exit: a
    segmentation fault).  A compilation takes seconds at most.  The same wait holds in a
    weak reference's callback or a ``__del__`` (:func:`_in_callback`), where Python
    prints and drops the exception (a SIGTERM to ``rcmdp report`` was lost there and the
    command exited 0)."""
    import signal

    if _in_compiler(frame) or _in_callback(frame):
        _ask_again(signum)
        return
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _done_handler(line_of):
    """The SIGINT and SIGTERM handler once the command's outcome is decided: write its
    one line (``line_of(signum)``) and end the process at once with 130 or 143 (the
    outputs are complete and flushed; the interpreter's shutdown is skipped, since a
    signal at its very end would otherwise end the process by the signal, without a
    word)."""
    import os
    import signal

    def handler(signum, frame):
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal: no second line
            signal.signal(sig, signal.SIG_IGN)
        try:
            os.write(2, (line_of(signum) + "\n").encode())
        finally:
            os._exit(TERMINATED if signum == signal.SIGTERM else INTERRUPTED)
    return handler


def _last_guard() -> None:
    """Registered with :mod:`atexit` before anything else, so it runs last: from here
    to the end of the process no Python code runs any more, and the interpreter puts
    back the default action of signals with a Python handler (death by the signal);
    an interrupt now finds a process whose outcome is written, and is ignored."""
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)

#: What an interrupted command kept when it did not say otherwise.
NOTHING_WRITTEN = "nothing was written"


def _where(args) -> str:
    command = getattr(args, "command", None)
    return f"rcmdp {command}" if command else "rcmdp"


def _interrupted(args, what: str = "interrupted") -> str:
    """The one line of an interrupted command: what was interrupted and what was kept."""
    kept = getattr(args, "_interrupted", None) if args is not None else None
    if callable(kept):
        try:
            kept = kept()
        except Exception:  # the interrupt is the news; a failing summary must not hide it
            kept = None
    return f"{_where(args)}: {what}; {kept or NOTHING_WRITTEN}"


def _flush() -> None:
    import contextlib

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _os_error(exc: OSError) -> str:
    what = exc.strerror or str(exc) or type(exc).__name__
    path = exc.filename if exc.filename is not None else None
    return f"{what}: {str(path)!r}" if path is not None else what


def main(argv=None) -> int:
    """Run ``rcmdp`` with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    As the program (``argv`` None, in the main thread: ``rcmdp`` and ``python -m
    rcmdp_exact``), a signal after the outcome is decided is answered too (module
    notes); a call with ``argv`` from other code leaves the process's handlers as they
    were.
    """
    import signal
    import threading
    import warnings

    args = None
    shown = warnings.showwarning
    in_main = threading.current_thread() is threading.main_thread()
    program = argv is None and in_main
    if program:
        import atexit

        atexit.register(_last_guard)
    # (a SIGINT that the process was started ignoring, as a shell's background job is,
    # stays ignored)
    old = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
           if signal.getsignal(sig) is not signal.SIG_IGN} if in_main else {}

    def one_line(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"{_where(args)}: warning: {text}", file=sys.stderr)

    def done(status: int) -> int:
        """The outcome is decided: outputs flushed, then (as the program) a late signal
        is answered by one line and the status of a signal during the work."""
        _flush()
        if program:
            late = _done_handler(lambda signum: _interrupted(
                args, "terminated" if signum == signal.SIGTERM else "interrupted"))
            signal.signal(signal.SIGINT, late)
            signal.signal(signal.SIGTERM, late)
        return status

    def interrupted(term: bool) -> int:
        if program:  # a second signal while this one is answered: ignored
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        lead = "\n" if sys.stderr.isatty() and not term else ""  # after the terminal's ^C
        print(lead + _interrupted(args, "terminated" if term else "interrupted"),
              file=sys.stderr)
        _flush()
        # CPython marks an interrupt that left code run by exec() of a string (scipy's
        # and numpy's imports do that) as unhandled even once caught, and `python -m`
        # then ends by SIGINT (status -2) instead of 130; the next exec() of a string
        # clears the mark
        exec("pass")
        return TERMINATED if term else INTERRUPTED

    try:
        try:
            parser = build_parser()
            args = parser.parse_args(argv)
            if getattr(args, "_run", None) is None:
                parser.print_help()
                return done(2)
            from .._checks import InputError

            warnings.showwarning = one_line
            from .._progress import progress_default, stage_lines

            # output to a file or a pipe: no bar, but a line per stage (unless
            # --no-progress)
            stage_lines(getattr(args, "progress", False) is None and not progress_default(None),
                        f"rcmdp {getattr(args, 'command', '') or ''}".strip())
            # the multiprocessing resource tracker (a child process started by the worker
            # pools) takes its warning filters from these options: its note about the
            # semaphores of a pool stopped by Ctrl-C, which it removes itself, is not news
            if _TRACKER_NOTE not in sys.warnoptions:
                sys.warnoptions.append(_TRACKER_NOTE)
            try:
                return done(int(args._run(args) or 0))
            except InputError as exc:
                print(f"{_where(args)}: error: {exc}", file=sys.stderr)
                return done(2)
            except BrokenPipeError:  # the reader of the output left (rcmdp ... | head)
                import contextlib
                import os

                with contextlib.suppress(OSError, ValueError, AttributeError):
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, sys.stdout.fileno())  # no second error at the flush
                return done(141)
            except OSError as exc:  # a full disk, a read-only folder, a vanished file
                print(f"{_where(args)}: error: {_os_error(exc)}", file=sys.stderr)
                return done(2)
            except MemoryError:  # what no check foresaw: one line, not a traceback
                print(f"{_where(args)}: error: out of memory: the inputs ask for more "
                      f"memory than this machine has; give smaller ones (the limits: "
                      f"docs/cli.md)", file=sys.stderr)
                return done(2)
        except SystemExit as exc:  # argparse's answer: an error, --help, --version
            if not program:  # a caller of main(argv) gets it as argparse gives it
                raise
            code = exc.code
            return done(code if isinstance(code, int) else 0 if code is None else 1)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
            return interrupted(isinstance(exc, Terminated))
        finally:
            warnings.showwarning = shown
    except KeyboardInterrupt as exc:  # a signal in the few instructions just above
        return interrupted(isinstance(exc, Terminated))
    finally:
        if in_main and not program:
            for sig, handler in old.items():
                if signal.getsignal(sig) is _on_signal:
                    signal.signal(sig, handler)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

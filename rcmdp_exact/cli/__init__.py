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
  as its work progresses; the default is "nothing was written";
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

#: What an interrupted command kept when it did not say otherwise.
NOTHING_WRITTEN = "nothing was written"


def _where(args) -> str:
    command = getattr(args, "command", None)
    return f"rcmdp {command}" if command else "rcmdp"


def _interrupted(args) -> str:
    """The one line of an interrupted command: what was interrupted and what was kept."""
    kept = getattr(args, "_interrupted", None) if args is not None else None
    if callable(kept):
        try:
            kept = kept()
        except Exception:  # the interrupt is the news; a failing summary must not hide it
            kept = None
    return f"{_where(args)}: interrupted; {kept or NOTHING_WRITTEN}"


def _os_error(exc: OSError) -> str:
    what = exc.strerror or str(exc) or type(exc).__name__
    path = exc.filename if exc.filename is not None else None
    return f"{what}: {str(path)!r}" if path is not None else what


def main(argv=None) -> int:
    """Run ``rcmdp`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    import warnings

    args = None
    shown = warnings.showwarning

    def one_line(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"{_where(args)}: warning: {text}", file=sys.stderr)

    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "_run", None) is None:
            parser.print_help()
            return 2
        from .._checks import InputError

        warnings.showwarning = one_line
        from .._progress import progress_default, stage_lines

        # output to a file or a pipe: no bar, but a line per stage (unless --no-progress)
        stage_lines(getattr(args, "progress", False) is None and not progress_default(None),
                    f"rcmdp {getattr(args, 'command', '') or ''}".strip())
        # the multiprocessing resource tracker (a child process started by the worker
        # pools) takes its warning filters from these options: its note about the
        # semaphores of a pool stopped by Ctrl-C, which it removes itself, is not news
        if _TRACKER_NOTE not in sys.warnoptions:
            sys.warnoptions.append(_TRACKER_NOTE)
        try:
            return int(args._run(args) or 0)
        except InputError as exc:
            print(f"{_where(args)}: error: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # the reader of the output left (rcmdp ... | head)
            import contextlib
            import os

            with contextlib.suppress(OSError, ValueError, AttributeError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())  # no second error at the flush
            return 141
        except OSError as exc:  # a full disk, a read-only folder, a vanished file
            print(f"{_where(args)}: error: {_os_error(exc)}", file=sys.stderr)
            return 2
    except KeyboardInterrupt:
        lead = "\n" if sys.stderr.isatty() else ""  # after the terminal's ^C
        print(lead + _interrupted(args), file=sys.stderr)
        # CPython marks an interrupt that left code run by exec() of a string (scipy's
        # and numpy's imports do that) as unhandled even once caught, and `python -m`
        # then ends by SIGINT (status -2) instead of 130; the next exec() of a string
        # clears the mark
        exec("pass")
        return 130
    finally:
        warnings.showwarning = shown


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

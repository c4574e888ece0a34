"""Argument conventions shared by every subcommand.

* ``--progress / --no-progress``: one flag for every long command; the default is on
  when standard error is a terminal (:func:`add_progress`, :func:`progress_enabled`).
* Numbers are parsed by :func:`non_negative_int`, :func:`positive_int` and
  :func:`probability`, so a bad value is an argparse error (exit status 2, one line)
  before any work starts.
* Output paths are checked before any work starts (:func:`check_output`); an existing
  file is refused unless ``--force``.
* Comma-separated lists are parsed by :func:`comma_list`.
"""

from __future__ import annotations

import argparse
import sys

__all__ = [
    "add_force",
    "add_progress",
    "check_output",
    "comma_list",
    "non_negative_int",
    "positive_int",
    "probability",
    "progress_enabled",
    "seed_arg",
]


def _int(text: str, low: int, what: str) -> int:
    try:
        value = int(text, 10)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; give {what}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{value} is below {low}; give {what}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    return _int(text, 1, "an integer >= 1")


def non_negative_int(text: str) -> int:
    """An integer >= 0 (argparse type)."""
    return _int(text, 0, "an integer >= 0")


def seed_arg(text: str) -> int:
    """A seed: an integer >= 0 (argparse type)."""
    return _int(text, 0, "a seed, an integer >= 0")


def probability(text: str) -> float:
    """A number in the open interval (0, 1) (argparse type)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number in (0, 1)") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not in the open interval (0, 1)")
    return value


def comma_list(choices, what: str):
    """An argparse type: a comma-separated list of names, each one of ``choices``.

    Names are kept in the order given, without duplicates; an unknown name is an error
    listing the valid ones.
    """
    valid = tuple(choices)

    def parse(text: str) -> list[str]:
        names = [t.strip() for t in str(text).split(",") if t.strip()]
        if not names:
            raise argparse.ArgumentTypeError(f"empty list of {what}; give e.g. {valid[0]}")
        bad = [n for n in names if n not in valid]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(map(repr, bad))}; choose from {', '.join(valid)}"
            )
        return list(dict.fromkeys(names))

    parse.__name__ = what  # argparse names the type in its messages
    return parse


def add_progress(parser: argparse.ArgumentParser) -> None:
    """``--progress / --no-progress`` (default: on when stderr is a terminal)."""
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="show progress bars (default: on when the output is a terminal)",
    )


def progress_enabled(args: argparse.Namespace) -> bool:
    """The resolved value of ``--progress / --no-progress``."""
    value = getattr(args, "progress", None)
    return sys.stderr.isatty() if value is None else bool(value)


def add_force(parser: argparse.ArgumentParser) -> None:
    """``--force``: replace existing output files."""
    parser.add_argument("--force", action="store_true",
                        help="replace output files that already exist")


def check_output(parser: argparse.ArgumentParser, path, *, kind: str = "dir",
                 force: bool = False, name: str = "--out"):
    """Check an output path up front; a problem is an argparse error (exit status 2)."""
    from .._checks import InputError, check_out_path

    if path is None:
        return None
    try:
        return check_out_path(path, kind=kind, force=force, name=name)
    except InputError as exc:
        parser.error(str(exc))

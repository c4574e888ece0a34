"""Argument conventions shared by every subcommand.

* ``--progress / --no-progress``: one flag for every long command; the default is on
  when standard error is a terminal (:func:`add_progress`, :func:`progress_enabled`).
* Numbers are parsed by :func:`non_negative_int`, :func:`positive_int` and
  :func:`probability`, so a bad value is an argparse error (exit status 2, one line)
  before any work starts.  Integers that size the work or the memory are parsed by
  :func:`bounded_int` with a limit of :data:`rcmdp_exact.names.LIMITS` (the message
  names the limit and why it exists); local worker processes by :func:`workers_arg`
  (at most :data:`~rcmdp_exact.names.WORKERS_PER_CPU` per CPU).
* Output paths are checked before any work starts (:func:`check_output`); an existing
  file is refused unless ``--force``.  :func:`check_npz_output` adds the suffix
  ``.npz`` of an artefact when it is missing and refuses another one.
* Comma-separated lists are parsed by :func:`comma_list`.
* Options that act only on some algorithms are refused for the others
  (:func:`refuse_inapplicable`, :data:`rcmdp_exact.names.OPTION_ALGORITHMS`).
"""

from __future__ import annotations

import argparse
import sys

__all__ = [
    "add_force",
    "add_progress",
    "bounded_int",
    "check_npz_output",
    "check_output",
    "comma_list",
    "max_workers",
    "non_negative_int",
    "positive_int",
    "probability",
    "progress_enabled",
    "refuse_inapplicable",
    "seed_arg",
    "workers_arg",
]


def _int(text: str, low: int, what: str) -> int:
    try:
        value = int(text, 10)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; give {what}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{value} is below {low}; give {what}")
    return value


def _limit_text(n: int) -> str:
    """10**7 as "10^7", other numbers with thousands separators."""
    k = len(str(n)) - 1
    return f"10^{k}" if n == 10**k and k >= 3 else f"{n:,}"


def bounded_int(limit: str, low: int = 1):
    """An argparse type: an integer in ``[low, LIMITS[limit][0]]``.

    Above the limit, the message names it, what it bounds and why (one line, exit
    status 2), e.g. ``99999999999999999999 is above the limit 10^7 of training episodes
    (the learners keep about 64 bytes of records per episode); give at most 10000000``.
    """
    from ..names import LIMITS

    high, what, why = LIMITS[limit]
    name = "an integer >= 1" if low == 1 else f"an integer >= {low}"

    def parse(text: str) -> int:
        value = _int(text, low, name)
        if value > high:
            raise argparse.ArgumentTypeError(
                f"{value} is above the limit {_limit_text(high)} of {what} ({why}); give "
                f"at most {high}")
        return value

    parse.__name__ = name
    return parse


def max_workers() -> int:
    """The most local worker processes: ``WORKERS_PER_CPU * os.cpu_count()``."""
    import os

    from ..names import WORKERS_PER_CPU

    return WORKERS_PER_CPU * (os.cpu_count() or 1)


def workers_arg(text: str) -> int:
    """Local worker processes: an integer in ``[1, max_workers()]`` (argparse type)."""
    import os

    from ..names import WORKERS_PER_CPU

    value = _int(text, 1, "an integer >= 1")
    top = max_workers()
    if value > top:
        raise argparse.ArgumentTypeError(
            f"{value} workers is above the limit {top} ({WORKERS_PER_CPU} per CPU, "
            f"{os.cpu_count() or 1} CPUs: more processes only wait for a core, each with "
            f"its own copy of the models); give at most {top}")
    return value


def refuse_inapplicable(parser: argparse.ArgumentParser, args: argparse.Namespace,
                        algorithms, options=None) -> None:
    """Refuse every option given on the command line (its value is not None) that acts
    on none of ``algorithms`` (:data:`rcmdp_exact.names.OPTION_ALGORITHMS`).

    The message names the option, the algorithms it applies to and the ones chosen.
    """
    from ..names import OPTION_ALGORITHMS

    chosen = list(algorithms)
    for name, applies in OPTION_ALGORITHMS.items():
        if options is not None and name not in options:
            continue
        if getattr(args, name, None) is None:
            continue
        if not any(a in applies for a in chosen):
            flag = "--" + name.replace("_", "-")
            which = "algorithm " + chosen[0] if len(chosen) == 1 else \
                "algorithms " + ",".join(chosen)
            parser.error(f"{flag} does not apply to {which}: it acts only on "
                         f"{', '.join(applies)}; drop {flag}")


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


def check_npz_output(parser: argparse.ArgumentParser, path, *, force: bool = False,
                     name: str = "--out", what: str = "the result"):
    """Check the path of an ``.npz`` artefact up front: the suffix ``.npz`` is added when
    the path has none, another suffix is refused (an archive named ``a.json`` would
    mislead), then the file is checked as :func:`check_output` does."""
    from pathlib import Path

    from .._io import npz_path

    if path is None:
        return None
    p = Path(path)
    if p.suffix and p.suffix != ".npz":
        parser.error(f"{name} {str(path)!r} ends in {p.suffix!r}, but {what} is an .npz "
                     f"archive; give a path ending in .npz (or without a suffix, and .npz "
                     f"is added)")
    return check_output(parser, npz_path(p) if str(path).strip() else path, kind="file",
                        force=force, name=name)


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

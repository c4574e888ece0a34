"""The ``rcmdp`` command line (also ``python -m rcmdp_exact``).

Each subcommand lives in :mod:`rcmdp_exact.commands` and is listed in
:data:`COMMANDS`.  ``rcmdp SUBCOMMAND --help`` describes its options.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__

#: Modules of :mod:`rcmdp_exact.commands`, in the order ``rcmdp --help`` lists them.
COMMANDS = ("evaluate", "verify", "ground_truth", "train", "reproduce", "report")


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: what is wrong, and where help is
    (argparse's default prints the whole usage first).  Subcommands inherit it."""

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
        mod = importlib.import_module(f"rcmdp_exact.commands.{mod_name}")
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _parser=p)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    from ._checks import InputError

    try:
        return int(args._run(args) or 0)
    except InputError as exc:
        print(f"rcmdp {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

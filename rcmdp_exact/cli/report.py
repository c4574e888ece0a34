"""``rcmdp report``: Table 1, the figures and the report, rebuilt from a results store.

Reads the SQLite database written by ``rcmdp reproduce`` (read-only) and writes
``report.md``, ``table1.md``, ``table1.csv`` and the PNG figures into ``--out``; report
files there that this report does not write (a figure of a test the store lacks, left
by another report) are removed, and no other file is touched.  A selection of tests
the store holds no runs of is refused; damaged jobs (checksum mismatch) are named in a
warning and left out.  A folder that holds the report of another store (or report files
of an unknown store) is refused unless ``--force``; the report of the same store is
rewritten (it is this store's own output).
"""

from __future__ import annotations

import argparse

from ._args import add_progress, comma_list, progress_enabled

NAME = "report"
HELP = "rebuild Table 1, the figures and the report from a results database"

#: The time the command takes on an idle two-core machine (docs/cli.md, "Time per
#: command", measured by benchmarks/bench_commands.py); ``--help`` shows it.
TIME = 'about 3.9 s (the store of --quick)'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..names import TESTS, USER_TEST

    parser.add_argument("--db", metavar="PATH", required=True,
                        help="results database written by rcmdp reproduce")
    parser.add_argument("--out", metavar="DIR", required=True,
                        help="folder for report.md, table1.md, table1.csv and the figures")
    parser.add_argument("--tests", type=comma_list((*TESTS, USER_TEST), "tests"), default=None,
                        help="comma-separated tests (default: those the sweeps asked for)")
    parser.add_argument("--force", action="store_true",
                        help="replace the report of another results store in --out")
    add_progress(parser)


def db_error(parser, exc) -> None:
    """A store that cannot be opened, as an argparse error naming ``--db``."""
    text = str(exc)
    parser.error(f"--db {text}" if text.startswith("'") else text)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .._checks import InputError
    from ._args import check_output

    parser = args._parser
    out = check_output(parser, args.out, kind="dir")
    if not str(args.db).strip():
        parser.error("--db is empty; give the path of a results store written by rcmdp "
                     "reproduce")
    db = Path(args.db)
    from ..protocol.outputs import foreign_report
    from ..protocol.store import Store

    try:
        store = Store(db, readonly=True)
    except InputError as exc:
        db_error(parser, exc)
    with store:
        foreign = foreign_report(out, store.path)
        if foreign is not None and not args.force:
            parser.error(f"--out {foreign}; give another --out, or --force to replace it")
        if not store.has_schema():
            parser.error(f"--db {str(db)!r} is not a results store written by rcmdp "
                         f"reproduce (it has no tables); give another path")
        stored = store.stored_tests()
        if not stored:
            parser.error(f"--db {str(db)!r} holds no finished run; run rcmdp reproduce "
                         f"into it first")
        if args.tests is not None:
            missing = [t for t in args.tests if t not in stored]
            if missing:
                parser.error(f"--tests {','.join(missing)}: the store {str(db)!r} holds no "
                             f"run of {'this test' if len(missing) == 1 else 'these tests'}; "
                             f"it holds runs of {','.join(stored)}")
            tests = args.tests
        else:
            tests = [t for t in store.requested_tests() if t in stored] or stored
        args._interrupted = (f"the results store is not changed and every report file in "
                             f"{out} is whole, some perhaps from an earlier report; run the "
                             f"same command again")
        from ..protocol.reproduction_report import write_report  # every argument is checked

        rep = write_report(store, out, tests=tests, progress=progress_enabled(args))
    args._interrupted = f"the report is complete in {out} and the results store is not changed"
    for p in rep.paths:
        print(f"wrote {p}")
    for p in rep.removed:
        print(f"removed {p} (a report file this report does not write)")
    return 0

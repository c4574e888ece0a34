"""``rcmdp report``: Table 1, the figures and the report, rebuilt from a results store.

Reads the SQLite database written by ``rcmdp reproduce`` (read-only) and writes
``report.md``, ``table1.md``, ``table1.csv`` and the PNG figures into ``--out``.
"""

from __future__ import annotations

import argparse

from ._args import add_progress, comma_list, progress_enabled

NAME = "report"
HELP = "rebuild Table 1, the figures and the report from a results database"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..names import TESTS

    parser.add_argument("--db", metavar="PATH", required=True,
                        help="results database written by rcmdp reproduce")
    parser.add_argument("--out", metavar="DIR", required=True,
                        help="folder for report.md, table1.md, table1.csv and the figures")
    parser.add_argument("--tests", type=comma_list(TESTS, "tests"), default=None,
                        help="comma-separated tests (default: those the sweeps asked for)")
    add_progress(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ._args import check_output

    parser = args._parser
    db = Path(args.db)
    if not db.is_file():
        parser.error(f"--db {str(db)!r} does not exist; give the database written by "
                     f"rcmdp reproduce")
    with db.open("rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            parser.error(f"--db {str(db)!r} is not a SQLite database")
    out = check_output(parser, args.out, kind="dir")
    from ..experiments import Store, write_report

    with Store(db, readonly=True) as store:
        if not store.has_schema():
            parser.error(f"--db {str(db)!r} is not a results database of this version of "
                         f"rcmdp reproduce")
        tests = args.tests if args.tests is not None else store.requested_tests()
        rep = write_report(store, out, tests=tests, progress=progress_enabled(args))
    for p in rep.paths:
        print(f"wrote {p}")
    return 0

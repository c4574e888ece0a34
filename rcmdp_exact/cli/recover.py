"""``rcmdp recover``: keep the finished jobs of a damaged results store.

A results store whose file was damaged (truncated, partly overwritten: SQLite says
"database disk image is malformed") is answered by ``rcmdp reproduce`` and ``rcmdp
report`` with one line that names this command.  ``rcmdp recover --db PATH`` reads the
jobs that can still be read from PATH, keeps those whose payload matches its stored
checksum, writes them into a new store with this version's schema
(:func:`rcmdp_exact.protocol.store.recover_store`), then moves the damaged file
(with its ``-wal`` and ``-shm`` companions) to ``PATH.damaged`` and puts the new store
in its place.  ``rcmdp reproduce`` with the same options then recomputes exactly the
jobs that were lost.  An intact store comes out with every job.
"""

from __future__ import annotations

import argparse

NAME = "recover"
HELP = ("copy the readable, verified jobs of a damaged results store into a new store in "
        "its place (the damaged file is kept as PATH.damaged)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="PATH", required=True,
                        help="the damaged results store (written by rcmdp reproduce)")


def run(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from .._checks import InputError, OutputPathError, check_out_path

    parser = args._parser
    if not str(args.db).strip():
        parser.error("--db is empty; give the path of the damaged results store")
    from ..protocol.store import check_store_path, recover_store
    from .report import db_error

    try:
        db = check_store_path(args.db, must_exist=True)
    except InputError as exc:
        db_error(parser, exc)
    kept = db.with_name(db.name + ".damaged")
    sides = ("", "-wal", "-shm")
    for side in sides:
        if Path(str(kept) + side).exists():
            parser.error(f"{str(kept) + side!r} exists (an earlier recovery?), and the "
                         f"damaged file is kept under that name; move it away first")
    try:
        check_out_path(db.parent / ".probe", kind="file", name="the folder of --db")
    except InputError as exc:
        parser.error(str(exc))
    tmp = db.with_name(f".{db.name}.recovering.{os.getpid()}")
    args._interrupted = f"{db} is not changed"
    try:
        try:
            counts = recover_store(db, tmp)
        except (InputError, OSError) as exc:  # a full disk, a folder that turned read-only
            raise OutputPathError(
                f"the recovered store cannot be written beside {str(db)!r} ({exc}); "
                f"{str(db)!r} is not changed: fix the cause (free space, a writable "
                f"folder) and run rcmdp recover again") from None
        for side in sides:  # the damaged file with its WAL, which belongs to it
            if Path(str(db) + side).exists():
                os.replace(str(db) + side, str(kept) + side)
        os.replace(tmp, db)
    finally:
        for side in sides:
            if Path(str(tmp) + side).exists():
                os.unlink(str(tmp) + side)
    args._interrupted = f"{db} holds the recovered store, {kept} the damaged file"
    got = (f"{counts['recovered']} finished jobs ({counts['runs']} runs, "
           f"{counts['ground_truth']} ground-truth jobs)")
    if not counts["errors"] and not counts["lost"]:
        print(f"recovered every job of the store, {got}, into a new store {db}; the "
              f"damaged file is kept as {kept}")
        return 0
    lost = counts["lost"]
    unread = (f"; parts of the file could not be read ({counts['errors'][0]}), and the "
              f"jobs there are gone" if counts["errors"] else "")
    print(f"recovered {got} into a new store {db}; {lost} of the jobs read did not match "
          f"their checksum or lost rows{unread}: run rcmdp reproduce with the same "
          f"options to recompute what is missing; the damaged file is kept as {kept}")
    return 0

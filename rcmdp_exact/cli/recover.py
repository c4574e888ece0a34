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

#: The time the command takes on an idle two-core machine (docs/cli.md, "Time per
#: command", measured by benchmarks/bench_commands.py); ``--help`` shows it.
TIME = 'about 0.45 s of CPU (the store of --quick)'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="PATH", required=True,
                        help="the damaged results store (written by rcmdp reproduce)")


def _kind_of(db) -> str | None:
    """Why ``db`` (a SQLite file) is not a results store to recover, or None when it is
    one or cannot be read far enough to tell (a damaged store)."""
    import sqlite3

    from ..protocol.store import connect_readonly

    try:
        con = connect_readonly(db, timeout=5)
        try:
            names = sorted(n for (n,) in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"))
        finally:
            con.close()
    except sqlite3.Error:
        return None
    if not names:
        return "it holds no table: a results store that was never written"
    if not {"runs", "ground_truth"} <= set(names):
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        return (f"it is a SQLite database of another kind (its tables: {shown}), not a "
                f"results store written by rcmdp reproduce")
    return None


def run(args: argparse.Namespace) -> int:
    import errno
    import os
    from pathlib import Path

    from .._checks import InputError, OutputPathError

    parser = args._parser
    if not str(args.db).strip():
        parser.error("--db is empty; give the path of the damaged results store")
    from ..protocol.store import StoreLock, check_store_path, recover_store
    from .report import db_error

    try:
        db = check_store_path(args.db, must_exist=True)
    except InputError as exc:
        db_error(parser, exc)
    if db.stat().st_size == 0:
        parser.error(f"--db {str(db)!r} is empty (0 bytes): a results store that was never "
                     f"written holds no job to recover; rcmdp reproduce writes into it as "
                     f"it is")
    why = _kind_of(db)
    if why is not None:
        parser.error(f"--db {str(db)!r}: {why}; rcmdp recover leaves it as it is")
    kept = db.with_name(db.name + ".damaged")
    sides = ("", "-wal", "-shm")
    for side in sides:
        if Path(str(kept) + side).exists():
            parser.error(f"{str(kept) + side!r} exists (an earlier recovery?), and the "
                         f"damaged file is kept under that name; move it away first")
    folder = db.parent
    unwritable = (f"the folder {str(folder)!r} of --db is not writable: rcmdp recover "
                  f"writes the recovered store beside the damaged one and keeps that one "
                  f"as {kept.name}; make the folder writable, or copy the store into a "
                  f"writable folder and recover the copy")
    if not os.access(folder, os.W_OK | os.X_OK):
        parser.error(unwritable)
    lock = StoreLock(db, exclusive=True)  # StoreLockedError: a sweep or a report uses it
    tmp = db.with_name(f".{db.name}.recovering.{os.getpid()}")
    args._interrupted = f"{db} is not changed"
    try:
        try:
            counts = recover_store(db, tmp)
        except (InputError, OSError) as exc:  # a full disk, a folder that turned read-only
            reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) \
                or str(exc)
            if (isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EROFS)) or \
                    "readonly" in reason.lower() or "read-only" in reason.lower():
                raise OutputPathError(f"{unwritable}; {str(db)!r} is not changed") from None
            raise OutputPathError(
                f"the recovered store cannot be written beside {str(db)!r} ({reason}); "
                f"{str(db)!r} is not changed: free space on its disk (or fix the cause) "
                f"and run rcmdp recover again") from None
        moved = []
        try:
            for side in sides:  # the damaged file with its WAL, which belongs to it
                if Path(str(db) + side).exists():
                    os.replace(str(db) + side, str(kept) + side)
                    moved.append(side)
            os.replace(tmp, db)
        except BaseException:  # an interrupt or a failure between the renames: undo
            for side in moved:
                os.replace(str(kept) + side, str(db) + side)
            raise
    finally:
        lock.release()
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

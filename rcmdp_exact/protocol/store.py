"""The results store: one SQLite database, written by the sweep's driver only.

Tables (numbers are SQLite REAL, i.e. float64, stored and read back bit for bit):

* ``meta(name, value)``: the schema version;
* ``runs(id, key, domain, algorithm, seed, spec, info)``: one row per finished run,
  keyed by the SHA-256 of its specification's canonical JSON (``spec``, unique); ``id``
  is the integer the other tables refer to; ``info`` is JSON;
* ``tests(run, suite, grp, setting, param, mode, value, cost, budget, penalised)``: the
  test metrics of each run, one row per (test, setting, mode);
* ``curves(run, name, idx, episode, value)``: training records of each run;
* ``ground_truth(key, kind, domain, suite, spec, result)``: exact references, the
  result as JSON (floats written by ``repr``, so they round-trip exactly);
* ``checksums(key, kind, sha256)``: one checksum per job (:func:`_job_checksum`).

Writes: the database runs in WAL mode; each finished job is written in **one
transaction** (``BEGIN IMMEDIATE`` ... ``COMMIT``) that first checks its key is absent,
so a job is either entirely present or absent, and never twice (the keys are primary
keys as well).  A sweep killed at any point (Ctrl-C, SIGKILL, a power cut) leaves only
whole jobs; the next sweep computes the keys that are missing.

Checksums: the same transaction stores the SHA-256 of the job's whole payload as it
reads back from the database (the run's row with its test rows and curve points, or
the ground-truth row; :func:`_job_checksum`).  Reading verifies every job once per
:class:`Store`: a job whose payload no longer matches (a float changed by a disk or a
hand, which SQLite's own integrity check cannot see) is *damaged*: it is named in one
:class:`DamagedJobWarning` (key and kind), left out of every read (:meth:`Store.keys`,
:meth:`Store.runs`, ...), and replaced when a sweep stores it again, so ``rcmdp
reproduce`` recomputes exactly the damaged jobs.  Stores written before checksums
existed (schema version 2) are read without verification and get the checksums of
their jobs (trusted as they are) when opened for writing.

The lock: every command that opens a store takes the store's one lock
(:class:`StoreLock`, an advisory ``flock`` on the database file itself, so no other
file is made): ``rcmdp reproduce`` and ``rcmdp report`` (every :class:`Store`) a shared
one, held while the store is open (two sweeps on one store still share it, each job in
its own transaction), and ``rcmdp recover`` an exclusive one, since it replaces the
file.  The lock is tried, never waited for: a command that cannot take it stops at
once, before any work, with one line that says who holds it, and nothing is changed
(a recovery that ran beside a sweep lost the jobs the sweep wrote into the file it
had moved away).  Systems without ``flock`` (or file systems that refuse it) run
without the lock.

Errors: a path that is not a results store (a folder, a missing file where one must
exist, a file of another kind, another schema) is a :class:`~rcmdp_exact._io.LoadError`
naming the path; so is a damaged database file ("database disk image is malformed"),
whose message says how to recover: ``rcmdp recover --db PATH``
(:func:`recover_store`) copies the jobs that can still be read and verified into a new
store with this schema, through Python's own sqlite3 module (SQLite's shell command
``.recover`` needs a recent sqlite3 program and fails on the WITHOUT ROWID tables of
this schema with the sqlite3 3.40 of Debian 12).  A store that cannot be written (read-only, a full
disk, locked) is an :class:`~rcmdp_exact.OutputPathError` that says how many finished
jobs are kept.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sqlite3
import warnings
from pathlib import Path

from .._checks import OutputPathError
from .._io import LoadError

__all__ = [ "DamagedJobWarning", "Store", "StoreLock",
           "StoreLockedError", "check_store_path",
           "recover_store"]

_SCHEMA_VERSION = "3"
#: Schema versions this version reads ("2": without checksums, upgraded when opened
#: for writing).
_READABLE_VERSIONS = ("2", "3")
_TABLES = {"meta", "runs", "tests", "curves", "ground_truth"}
_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, domain TEXT NOT NULL,
    algorithm TEXT NOT NULL, seed INTEGER NOT NULL, spec TEXT NOT NULL,
    info TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tests (
    run INTEGER NOT NULL REFERENCES runs(id), suite TEXT NOT NULL, grp TEXT NOT NULL,
    setting TEXT NOT NULL, param REAL NOT NULL, mode TEXT NOT NULL, value REAL NOT NULL,
    cost REAL NOT NULL, budget REAL NOT NULL, penalised REAL NOT NULL,
    PRIMARY KEY (run, suite, setting, mode)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS curves (
    run INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, idx INTEGER NOT NULL,
    episode INTEGER, value REAL, PRIMARY KEY (run, name, idx)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ground_truth (
    key TEXT PRIMARY KEY, kind TEXT NOT NULL, domain TEXT NOT NULL, suite TEXT NOT NULL,
    spec TEXT NOT NULL, result TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checksums (
    key TEXT PRIMARY KEY, kind TEXT NOT NULL, sha256 TEXT NOT NULL);
"""

_WHAT = "a results store written by rcmdp reproduce (a SQLite file such as runs.sqlite)"


class DamagedJobWarning(UserWarning):
    """Stored jobs whose checksum does not match their payload (left out of every read;
    the next sweep recomputes them)."""


def check_store_path(path, *, must_exist: bool) -> Path:
    """``path`` as a :class:`~pathlib.Path` if it can hold a results store.

    Raises :class:`~rcmdp_exact._io.LoadError` (naming the path) for a folder, a missing
    file when ``must_exist``, an unreadable file, or a file that is not a SQLite
    database.  An empty file is a new database.
    """
    p = Path(path).expanduser()
    if p.is_dir():
        raise LoadError(f"{str(p)!r} is a folder; give the path of {_WHAT}")
    if not p.exists():
        if must_exist:
            raise LoadError(f"{str(p)!r} does not exist; give the path of {_WHAT}")
        return p
    try:
        with p.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise LoadError(f"{str(p)!r} cannot be read ({exc.strerror}); expected {_WHAT}") \
            from None
    if head and head != _MAGIC:
        raise LoadError(f"{str(p)!r} is not a SQLite database; expected {_WHAT}")
    return p


class StoreLockedError(OutputPathError):
    """The store's lock is held by another command (a recovery, or a sweep or a report
    while a recovery asks for it); nothing was changed."""


class StoreLock:
    """The one lock of a results store: an advisory ``flock`` on the database file.

    Parameters
    ----------
    path : Path
        The store's file; created (empty: a new store) when ``create`` and missing.
    exclusive : bool
        ``rcmdp recover`` (it replaces the file); shared for every :class:`Store`.
    create : bool
        Create the file when it is missing (a store opened for writing).

    The lock is tried once (``LOCK_NB``): :class:`StoreLockedError` when another
    command holds it.  After the lock is taken, the path is checked to still be the
    file locked (a recovery may have replaced it in between; the new file is locked
    instead).  :meth:`release` (or the end of the process) frees it.
    """

    def __init__(self, path, *, exclusive: bool, create: bool = False):
        self.path = Path(path)
        self.exclusive = exclusive
        self.fd = None
        try:
            import fcntl
        except ImportError:  # no flock on this system: no lock
            return
        flags = os.O_RDONLY | (os.O_CREAT if create else 0)
        for _ in range(5):
            try:
                fd = os.open(self.path, flags, 0o666)
            except OSError:  # the store's own checks report an unreadable file
                return
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                            | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise StoreLockedError(self._held_text()) from None
            except OSError:  # a file system without flock: no lock
                os.close(fd)
                return
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except OSError:
                same = False
            if same:
                self.fd = fd
                return
            os.close(fd)  # replaced in between: lock the file now at the path
        raise StoreLockedError(f"the results store {str(self.path)!r} keeps being replaced "
                               f"by another command; run this one again when it is done")

    def _held_text(self) -> str:
        p = str(self.path)
        if self.exclusive:
            return (f"the results store {p!r} is in use by another rcmdp command (rcmdp "
                    f"reproduce or rcmdp report with --db {p}), and rcmdp recover, which "
                    f"replaces the file, does not run beside them; the store is not "
                    f"changed: run rcmdp recover again when they are done")
        return (f"the results store {p!r} is being recovered by rcmdp recover, which "
                f"replaces the file: run this command again when it is done")

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # closing the descriptor frees the flock
            self.fd = None


def _digest(obj) -> str:
    text = json.dumps(obj, separators=(",", ":"), allow_nan=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _run_payload(conn, key: str):
    row = conn.execute("SELECT id, key, domain, algorithm, seed, spec, info FROM runs "
                       "WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    tests = conn.execute(
        "SELECT suite, grp, setting, param, mode, value, cost, budget, penalised FROM tests "
        "WHERE run = ? ORDER BY suite, setting, mode", (row[0],)).fetchall()
    curves = conn.execute("SELECT name, idx, episode, value FROM curves WHERE run = ? "
                          "ORDER BY name, idx", (row[0],)).fetchall()
    return ["run", list(row[1:]), [list(t) for t in tests], [list(c) for c in curves]]


def _ground_truth_payload(conn, key: str):
    row = conn.execute("SELECT key, kind, domain, suite, spec, result FROM ground_truth "
                       "WHERE key = ?", (key,)).fetchone()
    return None if row is None else ["ground_truth", list(row)]


def _job_checksum(conn, key: str, table: str) -> str | None:
    """SHA-256 (hex) of one stored job's payload as it reads back from ``conn``.

    ``table`` is "runs" (the run's row, its test rows in (suite, setting, mode) order and
    its curve points in (name, idx) order) or "ground_truth" (its row); the payload is
    written as compact JSON (floats by ``repr``, so every bit counts).  None when the key
    is not stored.
    """
    payload = (_run_payload if table == "runs" else _ground_truth_payload)(conn, key)
    return None if payload is None else _digest(payload)


def connect_readonly(path, timeout: float = 60):
    """A read-only connection to the SQLite file ``path``.

    A store in WAL mode needs its ``-shm`` file; in a folder this process cannot write
    (an archive, a read-only mount) that file cannot be made, and the file is read as
    immutable instead (nothing else can be writing it there).
    """
    uri = Path(path).resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=timeout)
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if "unable to open" not in str(exc).lower():
            raise
    return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None,
                           timeout=timeout)


def _guarded(method):
    """Run a :class:`Store` method with SQLite errors turned into one-line errors."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise self.error(exc) from None
    return wrapper


class Store:
    """A results database (created when missing).

    Parameters
    ----------
    path : str or Path
        The SQLite file.
    readonly : bool
        Open for reading only (``rcmdp report``); the file must exist.

    Raises
    ------
    LoadError
        The path is a folder, missing (``readonly``), not a SQLite database, a SQLite
        database of another kind or schema version, or damaged.
    OutputPathError
        The store cannot be written (read-only file or folder, full disk, locked);
        :class:`StoreLockedError` when ``rcmdp recover`` holds its lock.
    """

    def __init__(self, path, *, readonly: bool = False):
        self.path = check_store_path(path, must_exist=readonly)
        self.readonly = readonly
        self.conn = None
        self.lock = None
        self._damaged: dict | None = None
        try:
            self.lock = StoreLock(self.path, exclusive=False, create=not readonly)
            self._open()
        except sqlite3.Error as exc:
            err = self.error(exc)
            self.close()
            raise err from None
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        if self.readonly:
            self.conn = connect_readonly(self.path)
        else:
            self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=60)
        names = self._table_names()
        if names and not _TABLES <= names:
            raise LoadError(f"{str(self.path)!r} is a SQLite database of another kind, not "
                            f"{_WHAT}; give another path")
        version = self._version() if names else None
        if names and version not in _READABLE_VERSIONS:
            raise LoadError(f"{str(self.path)!r} is a results store of schema version "
                            f"{version!r}; this version of rcmdp_exact reads versions "
                            f"{', '.join(_READABLE_VERSIONS)}: give another path")
        if self.readonly:
            return
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        with self.conn:
            for statement in _statements(_SCHEMA):  # executescript would COMMIT
                cur.execute(statement)
            if version is None:
                cur.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)",
                            (_SCHEMA_VERSION,))
            elif version != _SCHEMA_VERSION:  # "2": every job gets its checksum, trusted
                for table in ("runs", "ground_truth"):
                    for (key,) in cur.execute(f"SELECT key FROM {table}").fetchall():
                        self._write_checksum(cur, key, table)
                cur.execute("UPDATE meta SET value = ? WHERE name = 'schema'",
                            (_SCHEMA_VERSION,))

    def _table_names(self) -> set:
        return {n for (n,) in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _version(self):
        row = self.conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
            self.conn = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ errors
    def kept_text(self) -> str:
        """"N finished jobs are kept in PATH" (read afresh; the connection may be
        broken), or a general sentence when the file cannot be read."""
        try:
            con = connect_readonly(self.path, timeout=5)
            try:
                n = con.execute("SELECT (SELECT COUNT(*) FROM runs) + "
                                "(SELECT COUNT(*) FROM ground_truth)").fetchone()[0]
            finally:
                con.close()
        except sqlite3.Error:
            return f"the jobs stored before are kept in {self.path}"
        return f"{n} finished jobs are kept in {self.path} (each whole or not at all)"

    def error(self, exc: sqlite3.Error) -> Exception:
        """A one-line error for a SQLite failure on this store: what happened to which
        file, what was kept and what to do (``reason``: SQLite's own words)."""
        err = self._error(exc)
        err.reason = str(exc) or type(exc).__name__
        return err

    def _error(self, exc: sqlite3.Error) -> Exception:
        msg = str(exc) or type(exc).__name__
        low = msg.lower()
        p = str(self.path)
        damaged = type(exc) is sqlite3.DatabaseError or any(
            word in low for word in ("malformed", "not a database", "corrupt"))
        if damaged:
            return LoadError(
                f"the results store {p!r} is damaged ({msg}): run rcmdp recover --db {p}, "
                f"which copies the finished jobs that are still readable (each checked "
                f"against its checksum) into a new store in its place and keeps the "
                f"damaged file as {p}.damaged; then run rcmdp reproduce again with the "
                f"same options, which recomputes the jobs that were lost")
        if self.readonly and ("disk i/o" in low or "full" in low):
            return LoadError(
                f"the results store {p!r} cannot be read ({msg}): SQLite needs a small "
                f"file {p}-shm beside it; free space on its disk (or make its folder "
                f"writable), then run the same command again")
        if "readonly" in low or "read-only" in low or "permission" in low:
            return OutputPathError(
                f"the results store {p!r} cannot be written ({msg}); {self.kept_text()}: "
                f"make the file and its folder writable (or copy it and pass --db COPY), "
                f"then run the same command again")
        if "full" in low or "disk i/o" in low or "no space" in low:
            return OutputPathError(
                f"the results store {p!r} cannot be written ({msg}); {self.kept_text()}: "
                f"free space on its disk, then run the same command again to resume")
        if "locked" in low or "busy" in low:
            return OutputPathError(
                f"the results store {p!r} is locked by another process ({msg}), perhaps "
                f"another rcmdp reproduce on the same --db: wait for it or give another "
                f"--db")
        if "unable to open" in low:
            if self.readonly:
                return LoadError(f"the results store {p!r} cannot be opened ({msg})")
            return OutputPathError(
                f"the results store {p!r} cannot be written ({msg}); {self.kept_text()}: "
                f"make the file and its folder writable (or copy it and pass --db COPY), "
                f"then run the same command again")
        return LoadError(f"the results store {p!r} cannot be used ({msg})")

    # ------------------------------------------------------------------ checksums
    def _write_checksum(self, cur, key: str, table: str) -> None:
        kind = "run" if table == "runs" else cur.execute(
            "SELECT kind FROM ground_truth WHERE key = ?", (key,)).fetchone()[0]
        cur.execute("INSERT OR REPLACE INTO checksums VALUES (?, ?, ?)",
                    (key, kind, _job_checksum(cur, key, table)))

    @property
    def verified(self) -> bool:
        """True when the store has checksums to verify (schema version 3)."""
        return "checksums" in self._table_names() and self._version() == _SCHEMA_VERSION

    @_guarded
    def damaged(self) -> dict:
        """The damaged jobs: key -> description (kind and what it is), verified once."""
        if self._damaged is None:
            self._damaged = self._verify() if self.verified else {}
            if self._damaged:
                names = "; ".join(f"{k} ({d})" for k, d in sorted(self._damaged.items()))
                n = len(self._damaged)
                warnings.warn(DamagedJobWarning(
                    f"the results store {str(self.path)!r} holds {n} damaged "
                    f"job{'s' if n > 1 else ''} (stored checksum does not match), left "
                    f"out: {names}; rcmdp reproduce with the same options recomputes "
                    f"{'them' if n > 1 else 'it'}"), stacklevel=3)
        return self._damaged

    def _verify(self) -> dict:
        sums = dict(self.conn.execute("SELECT key, sha256 FROM checksums"))
        bad = {}
        for key, domain, algo, seed in self.conn.execute(
                "SELECT key, domain, algorithm, seed FROM runs").fetchall():
            if sums.get(key) != _job_checksum(self.conn, key, "runs"):
                bad[key] = f"kind run: {domain} {algo} seed {seed}"
        for key, kind, domain, suite in self.conn.execute(
                "SELECT key, kind, domain, suite FROM ground_truth").fetchall():
            if sums.get(key) != _job_checksum(self.conn, key, "ground_truth"):
                bad[key] = f"kind ground truth {kind}: {domain} {suite}".rstrip()
        return bad

    def _usable(self, key: str) -> bool:
        return key not in self.damaged()

    # ------------------------------------------------------------------ reading
    @_guarded
    def has_schema(self) -> bool:
        """True when the file holds the tables of a results store of a readable version."""
        names = self._table_names()
        if not _TABLES <= names:
            return False
        return self._version() in _READABLE_VERSIONS

    @_guarded
    def keys(self) -> set[str]:
        """Keys of every stored job (runs and ground truth) that is not damaged."""
        cur = self.conn.execute("SELECT key FROM runs UNION ALL SELECT key FROM ground_truth")
        return {k for (k,) in cur if self._usable(k)}

    @_guarded
    def runs(self) -> list[dict]:
        """Every run: ``key``, ``domain``, ``algorithm``, ``seed``, ``spec``, ``info``."""
        cur = self.conn.execute(
            "SELECT key, domain, algorithm, seed, spec, info FROM runs ORDER BY key")
        return [{"key": k, "domain": d, "algorithm": a, "seed": s, "spec": json.loads(sp),
                 "info": json.loads(i)} for k, d, a, s, sp, i in cur.fetchall()
                if self._usable(k)]

    @_guarded
    def tests(self, key: str) -> list[dict]:
        """The test rows of one run, in a fixed order (suite, param, setting, mode)."""
        if not self._usable(key):
            return []
        cur = self.conn.execute(
            "SELECT suite, grp, setting, param, mode, value, cost, budget, penalised "
            "FROM tests JOIN runs ON tests.run = runs.id WHERE runs.key = ? "
            "ORDER BY suite, param, setting, mode", (key,))
        names = ("suite", "group", "setting", "param", "mode", "value", "cost", "budget",
                 "penalised")
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    @_guarded
    def curves(self, key: str) -> list[dict]:
        if not self._usable(key):
            return []
        cur = self.conn.execute(
            "SELECT name, idx, episode, value FROM curves JOIN runs ON curves.run = runs.id "
            "WHERE runs.key = ? ORDER BY name, idx", (key,))
        return [{"name": n, "idx": i, "episode": e, "value": v} for n, i, e, v in
                cur.fetchall()]

    @_guarded
    def ground_truth(self, kind: str | None = None) -> list[dict]:
        q = "SELECT key, kind, domain, suite, spec, result FROM ground_truth"
        args: tuple = ()
        if kind is not None:
            q += " WHERE kind = ?"
            args = (kind,)
        cur = self.conn.execute(q + " ORDER BY key", args)
        return [{"key": k, "kind": kd, "domain": d, "suite": s, "spec": json.loads(sp),
                 "result": json.loads(r)} for k, kd, d, s, sp, r in cur.fetchall()
                if self._usable(k)]

    @_guarded
    def stored_tests(self) -> list[str]:
        """The tests that stored runs (not damaged) have rows for (Table 1 order)."""
        from .spec import TEST_DOMAIN

        have = set()
        for key, suite in self.conn.execute(
                "SELECT DISTINCT runs.key, suite FROM tests JOIN runs ON tests.run = runs.id"
        ).fetchall():
            if self._usable(key):
                have.add(suite)
        return [t for t in TEST_DOMAIN if t in have]

    @_guarded
    def requested_tests(self) -> list[str]:
        """The tests any sweep into this store asked for (Table 1 order)."""
        from .spec import TEST_DOMAIN, TESTS

        row = self.conn.execute("SELECT value FROM meta WHERE name = 'tests'").fetchone()
        have = set(json.loads(row[0])) if row else set(TESTS)
        return [t for t in TEST_DOMAIN if t in have]

    @_guarded
    def request_tests(self, tests) -> None:
        """Add ``tests`` to the tests the report shows (the union over sweeps)."""
        from .spec import TEST_DOMAIN

        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        with self.conn:
            row = cur.execute("SELECT value FROM meta WHERE name = 'tests'").fetchone()
            have = set(json.loads(row[0])) if row else set()
            new = [t for t in TEST_DOMAIN if t in have or t in set(tests)]
            cur.execute("INSERT OR REPLACE INTO meta VALUES ('tests', ?)",
                        (json.dumps(new),))

    @_guarded
    def counts(self) -> dict:
        """Row counts per table and the number of distinct keys (for checks)."""
        out = {}
        for t in ("runs", "tests", "curves", "ground_truth"):
            out[t] = self.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
        out["distinct_test_rows"] = self.conn.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT run, suite, setting, mode FROM tests)"
        ).fetchone()[0]
        return out

    # ------------------------------------------------------------------ writing
    def _transaction(self, key: str, table: str, write) -> bool:
        """Run ``write(cursor)`` and store the job's checksum in one IMMEDIATE
        transaction unless ``key`` exists (a damaged job is replaced)."""
        damaged = self.damaged()
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        with self.conn:  # COMMIT on success, ROLLBACK on any exception
            if cur.execute(f"SELECT 1 FROM {table} WHERE key = ?", (key,)).fetchone():
                if key not in damaged:
                    return False
                if table == "runs":
                    (run,) = cur.execute("SELECT id FROM runs WHERE key = ?",
                                         (key,)).fetchone()
                    cur.execute("DELETE FROM tests WHERE run = ?", (run,))
                    cur.execute("DELETE FROM curves WHERE run = ?", (run,))
                cur.execute(f"DELETE FROM {table} WHERE key = ?", (key,))
            write(cur)
            self._write_checksum(cur, key, table)
        damaged.pop(key, None)
        return True

    @_guarded
    def add_run(self, result: dict) -> bool:
        """Store one finished run (the dict of :func:`~.run.run_one`) atomically.

        Returns False (and writes nothing) when its key is already stored.
        """
        from .spec import canonical_json

        key, spec = result["key"], result["spec"]

        def write(cur):
            cur.execute("INSERT INTO runs (key, domain, algorithm, seed, spec, info) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (key, spec["domain"], spec["algorithm"], int(spec["seed"]),
                         canonical_json(spec), json.dumps(result["info"], sort_keys=True)))
            run = cur.lastrowid
            cur.executemany(
                "INSERT INTO tests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run, r["suite"], r["group"], r["setting"], r["param"], r["mode"],
                  r["value"], r["cost"], r["budget"], r["penalised"])
                 for r in result["tests"]])
            cur.executemany(
                "INSERT INTO curves VALUES (?, ?, ?, ?, ?)",
                [(run, r["name"], r["idx"], r["episode"], r["value"])
                 for r in result["curves"]])

        return self._transaction(key, "runs", write)

    @_guarded
    def copy_job(self, table: str, row, tests=(), curves=()) -> bool:
        """Store one job exactly as another store holds it (:func:`recover_store`):
        ``table`` "runs" with ``row`` (key, domain, algorithm, seed, spec, info), its
        ``tests`` and ``curves`` rows without the run id, or "ground_truth" with its
        row.  One transaction with its checksum; False when the key is stored."""
        key = row[0]

        def write(cur):
            if table == "runs":
                cur.execute("INSERT INTO runs (key, domain, algorithm, seed, spec, info) "
                            "VALUES (?, ?, ?, ?, ?, ?)", tuple(row))
                run = cur.lastrowid
                cur.executemany("INSERT INTO tests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                [(run, *t) for t in tests])
                cur.executemany("INSERT INTO curves VALUES (?, ?, ?, ?, ?)",
                                [(run, *c) for c in curves])
            else:
                cur.execute("INSERT INTO ground_truth VALUES (?, ?, ?, ?, ?, ?)", tuple(row))

        return self._transaction(key, table, write)

    @_guarded
    def add_ground_truth(self, key: str, spec: dict, result: dict) -> bool:
        """Store one ground-truth result atomically (False if already stored)."""
        from .spec import canonical_json

        def write(cur):
            cur.execute("INSERT INTO ground_truth VALUES (?, ?, ?, ?, ?, ?)",
                        (key, spec["kind"], spec["domain"], spec.get("suite", ""),
                         canonical_json(spec), json.dumps(result, sort_keys=True)))

        return self._transaction(key, "ground_truth", write)


# --------------------------------------------------------------------------- recovery
def _rows(conn, query: str, args=(), errors=None) -> list:
    """The rows of ``query`` that a damaged file still gives: read forwards until the
    first unreadable page, then backwards (the query ends in "ORDER BY <key>", and
    " DESC" is appended) until the first from that side; SQLite errors end a side."""
    out = []
    for q in (query, query + " DESC"):
        try:
            for row in conn.execute(q, args):
                out.append(row)
            if q == query:  # the whole table was read
                break
        except sqlite3.Error as exc:
            if errors is not None:
                errors.append(str(exc))
    return list(dict.fromkeys(out))


def _one(conn, query: str, args=(), errors=None):
    try:
        return conn.execute(query, args).fetchall()
    except sqlite3.Error as exc:
        if errors is not None:
            errors.append(str(exc))
        return None


def recover_store(source, target) -> dict:
    """Copy the finished jobs of a (damaged) results store ``source`` that can still be
    read and verified into a new store ``target``, with this version's schema.

    The source is only read (a read-only connection, which sees its WAL).  A run is
    copied with its test rows and curve points, a ground-truth job with its row, each
    in one transaction as :meth:`Store.add_run` stores a job, and only when the
    payload read back matches its stored checksum (stores without checksums, schema
    version 2, are copied as they read); whatever cannot be read or does not match is
    left out, and ``rcmdp reproduce`` recomputes it.  Rows are read around damaged
    pages (forwards, then backwards), so a damaged page loses only the jobs on it.

    Returns ``{"recovered": n, "runs": n, "ground_truth": n, "seen": n, "lost": n,
    "errors": [...]}`` (``seen``: jobs whose key could be read; ``lost``: those of them
    not recovered; ``errors``: SQLite's messages on the unreadable parts, empty when
    the whole file was read, so that nothing else can be missing).  Raises
    :class:`~rcmdp_exact.OutputPathError` when ``target`` exists.
    """
    target = Path(target)
    if target.exists():
        raise OutputPathError(f"{str(target)!r} exists; recovery writes a new store")
    src = check_store_path(source, must_exist=True)
    try:
        conn = connect_readonly(src, timeout=5)
    except sqlite3.Error:
        conn = None
    runs, gts, sums, checked, errors = [], [], {}, True, []
    if conn is None:
        errors.append("the file cannot be opened")
    else:
        try:
            runs = _rows(conn, "SELECT id, key, domain, algorithm, seed, spec, info FROM "
                               "runs ORDER BY id", errors=errors)
            gts = _rows(conn, "SELECT key, kind, domain, suite, spec, result FROM "
                              "ground_truth ORDER BY rowid", errors=errors)
            tables = _one(conn, "SELECT name FROM sqlite_master WHERE type = 'table'",
                          errors=errors)
            checked = tables is None or ("checksums",) in tables
            if checked:
                sums = dict(_rows(conn, "SELECT key, sha256 FROM checksums ORDER BY rowid",
                                  errors=errors))
            requested = _one(conn, "SELECT value FROM meta WHERE name = 'tests'",
                             errors=errors)
        except BaseException:
            conn.close()
            raise
    counts = {"recovered": 0, "runs": 0, "ground_truth": 0,
              "seen": len({r[1] for r in runs} | {g[0] for g in gts}), "lost": 0,
              "errors": errors}
    with Store(target) as store:
        if conn is None:
            return counts
        try:
            if requested:
                store.request_tests(json.loads(requested[0][0]))
            for row in runs:
                run_id, key = row[0], row[1]
                tests = _one(conn, "SELECT suite, grp, setting, param, mode, value, cost, "
                                   "budget, penalised FROM tests WHERE run = ? ORDER BY "
                                   "suite, setting, mode", (run_id,), errors)
                curves = _one(conn, "SELECT name, idx, episode, value FROM curves WHERE "
                                    "run = ? ORDER BY name, idx", (run_id,), errors)
                if tests is None or curves is None:
                    continue
                payload = ["run", list(row[1:]), [list(t) for t in tests],
                           [list(c) for c in curves]]
                if checked and sums.get(key) != _digest(payload):
                    continue
                if store.copy_job("runs", row[1:], tests, curves):
                    counts["runs"] += 1
            for row in gts:
                if checked and sums.get(row[0]) != _digest(["ground_truth", list(row)]):
                    continue
                if store.copy_job("ground_truth", row):
                    counts["ground_truth"] += 1
        finally:
            conn.close()
    counts["recovered"] = counts["runs"] + counts["ground_truth"]
    counts["lost"] = counts["seen"] - counts["recovered"]
    return counts


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]

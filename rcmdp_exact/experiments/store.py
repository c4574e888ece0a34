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
  result as JSON (floats written by ``repr``, so they round-trip exactly).

Writes: the database runs in WAL mode; each finished job is written in **one
transaction** (``BEGIN IMMEDIATE`` ... ``COMMIT``) that first checks its key is absent,
so a job is either entirely present or absent, and never twice (the keys are primary
keys as well).  A sweep killed at any point (Ctrl-C, SIGKILL, a power cut) leaves only
whole jobs; the next sweep computes the keys that are missing.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

__all__ = ["SCHEMA_VERSION", "Store"]

SCHEMA_VERSION = "2"

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
"""


class Store:
    """A results database (created when missing).

    Parameters
    ----------
    path : str or Path
        The SQLite file.
    readonly : bool
        Open for reading only (``rcmdp report``); the file must exist.
    """

    def __init__(self, path, *, readonly: bool = False):
        self.path = Path(path)
        if readonly:
            self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                        isolation_level=None, timeout=60)
        else:
            self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=60)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(_SCHEMA)
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)",
                              (SCHEMA_VERSION,))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ reading
    def has_schema(self) -> bool:
        """True when the file holds the tables of a results store of this version."""
        names = {n for (n,) in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"meta", "runs", "tests", "curves", "ground_truth"} <= names:
            return False
        row = self.conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        return row is not None and row[0] == SCHEMA_VERSION

    def keys(self) -> set[str]:
        """Keys of every stored job (runs and ground truth)."""
        cur = self.conn.execute("SELECT key FROM runs UNION ALL SELECT key FROM ground_truth")
        return {k for (k,) in cur}

    def runs(self) -> list[dict]:
        """Every run: ``key``, ``domain``, ``algorithm``, ``seed``, ``spec``, ``info``."""
        cur = self.conn.execute(
            "SELECT key, domain, algorithm, seed, spec, info FROM runs ORDER BY key")
        return [{"key": k, "domain": d, "algorithm": a, "seed": s, "spec": json.loads(sp),
                 "info": json.loads(i)} for k, d, a, s, sp, i in cur]

    def tests(self, key: str) -> list[dict]:
        """The test rows of one run, in a fixed order (suite, param, setting, mode)."""
        cur = self.conn.execute(
            "SELECT suite, grp, setting, param, mode, value, cost, budget, penalised "
            "FROM tests JOIN runs ON tests.run = runs.id WHERE runs.key = ? "
            "ORDER BY suite, param, setting, mode", (key,))
        names = ("suite", "group", "setting", "param", "mode", "value", "cost", "budget",
                 "penalised")
        return [dict(zip(names, row, strict=True)) for row in cur]

    def curves(self, key: str) -> list[dict]:
        cur = self.conn.execute(
            "SELECT name, idx, episode, value FROM curves JOIN runs ON curves.run = runs.id "
            "WHERE runs.key = ? ORDER BY name, idx", (key,))
        return [{"name": n, "idx": i, "episode": e, "value": v} for n, i, e, v in cur]

    def ground_truth(self, kind: str | None = None) -> list[dict]:
        q = "SELECT key, kind, domain, suite, spec, result FROM ground_truth"
        args: tuple = ()
        if kind is not None:
            q += " WHERE kind = ?"
            args = (kind,)
        cur = self.conn.execute(q + " ORDER BY key", args)
        return [{"key": k, "kind": kd, "domain": d, "suite": s, "spec": json.loads(sp),
                 "result": json.loads(r)} for k, kd, d, s, sp, r in cur]

    def requested_tests(self) -> list[str]:
        """The tests any sweep into this store asked for (Table 1 order)."""
        from .spec import TESTS

        row = self.conn.execute("SELECT value FROM meta WHERE name = 'tests'").fetchone()
        have = set(json.loads(row[0])) if row else set(TESTS)
        return [t for t in TESTS if t in have]

    def request_tests(self, tests) -> None:
        """Add ``tests`` to the tests the report shows (the union over sweeps)."""
        from .spec import TESTS

        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        with self.conn:
            row = cur.execute("SELECT value FROM meta WHERE name = 'tests'").fetchone()
            have = set(json.loads(row[0])) if row else set()
            new = [t for t in TESTS if t in have or t in set(tests)]
            cur.execute("INSERT OR REPLACE INTO meta VALUES ('tests', ?)",
                        (json.dumps(new),))

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
        """Run ``write(cursor)`` in one IMMEDIATE transaction unless ``key`` exists."""
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        with self.conn:  # COMMIT on success, ROLLBACK on any exception
            if cur.execute(f"SELECT 1 FROM {table} WHERE key = ?", (key,)).fetchone():
                return False
            write(cur)
        return True

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

    def add_ground_truth(self, key: str, spec: dict, result: dict) -> bool:
        """Store one ground-truth result atomically (False if already stored)."""
        from .spec import canonical_json

        def write(cur):
            cur.execute("INSERT INTO ground_truth VALUES (?, ?, ?, ?, ?, ?)",
                        (key, spec["kind"], spec["domain"], spec.get("suite", ""),
                         canonical_json(spec), json.dumps(result, sort_keys=True)))

        return self._transaction(key, "ground_truth", write)

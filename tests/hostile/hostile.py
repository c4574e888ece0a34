"""Table-driven hostile-input tests: one shape for every command and public entry point.

Each test module of this folder holds one table, ``HOSTILE``, of rows: what a hostile
(or unlucky) user does, and what must come out.  One parametrised test runs every row
through :func:`run_cli` (a command, :class:`Cli` rows) or :func:`run_api` (a Python
entry point, :class:`Api` rows).  docs/hostile.md says how to add a row.

A command row runs ``python -m rcmdp_exact ARGS`` in a fresh process in a folder of its
own and checks:

* the exit status (2 for a refusal, 130 for SIGINT, 143 for SIGTERM, 0 for success);
* a refusal or an interrupt is exactly one line on standard error, with no traceback,
  and names every one of ``facts`` (the argument, the path, the limit, ...);
* the files named in ``unchanged`` have the bytes they had before;
* no file appears in the folder but those allowed (``created``): a refusal comes before
  any work, and nothing is left half-written.

Hostile conditions a row can ask for:

* ``disk="full"``: the folder lies on a full file system (a tmpfs of 4 MiB filled up
  after ``setup`` when this process may mount one, i.e. runs as root; otherwise a
  file-size limit, RLIMIT_FSIZE, makes every write beyond ``fsize`` bytes fail with
  EFBIG, as a full disk makes it fail with ENOSPC);
* ``disk="readonly"``: the folder is read-only (a tmpfs remounted read-only when
  root, which root cannot write either; otherwise ``chmod 555``);
* ``signal="INT"`` or ``"TERM"`` at a ``moment``: ``"busy"`` (the ``calls``-th time any
  process of the command enters the function ``at``, ``"name"`` or
  ``"path/of/file.py:name"``: inside its work, at the same point on any machine and
  any load; the signal goes to the command's main process), ``"ready"``
  (once ``ready(folder)`` is true, e.g. a stand-in run has started), ``"return"``
  (the moment its ``main`` returns) or ``"exit"`` (at the interpreter's exit, after
  ``main`` returned: the "very end" of a command), the last two through a
  ``sitecustomize`` that wraps ``rcmdp_exact.cli.main``;
* ``beside``: another process started first and running while the row's command runs
  (a concurrent ``reproduce``, a process holding the store's lock), ready when
  ``beside_ready(folder)`` is true; its own exit status must be ``beside_code`` (None:
  a holder, killed once the row's command is done).

Nothing here sleeps blindly: waits poll with a deadline.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal as _signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import HANG_GUARD, reference_store

TESTS_DIR = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent

#: ``sitecustomize`` of the "busy", "return" and "exit" moments.  "busy": a profile hook
#: counts the entries into the function ``HOSTILE_AT`` and, at the ``HOSTILE_CALLS``-th,
#: removes itself and sends the signal to the leader of the process group (the
#: command's main process: every command row starts a session of its own).  "return" and
#: "exit": it wraps ``rcmdp_exact.cli.main`` (which ``python -m rcmdp_exact`` calls) and
#: sends the signal to its own process when main returns, or from an ``atexit`` callback
#: registered then (it runs before the ones registered earlier, the command's own
#: included).
SIGNAL_SITE = '''
import atexit, os, signal, sys, threading
_moment = os.environ.get("HOSTILE_MOMENT")
if _moment == "busy":
    _sig = getattr(signal, "SIG" + os.environ["HOSTILE_SIGNAL"])
    _file, _, _name = os.environ["HOSTILE_AT"].rpartition(":")
    _left = [int(os.environ.get("HOSTILE_CALLS", "1"))]
    def _hook(frame, event, arg):
        code = frame.f_code
        if (event == "call" and code.co_name == _name and _left[0] > 0
                and code.co_filename.endswith(_file)):
            _left[0] -= 1
            if _left[0] == 0:
                sys.setprofile(None)
                threading.setprofile(None)
                os.kill(os.getpgid(0), _sig)
    sys.setprofile(_hook)
    threading.setprofile(_hook)
elif _moment:
    import rcmdp_exact.cli as _cli
    _sig = getattr(signal, "SIG" + os.environ["HOSTILE_SIGNAL"])
    _main = _cli.main
    def main(argv=None):
        code = _main(argv)
        if _moment == "return":
            os.kill(os.getpid(), _sig)
        else:
            atexit.register(os.kill, os.getpid(), _sig)
        return code
    _cli.main = main
'''


@dataclass(frozen=True)
class Cli:
    """One row of a command's table (module notes)."""

    id: str
    args: tuple
    code: int = 2
    facts: tuple = ()
    setup: Callable | None = None
    stdout: tuple = ()
    absent: tuple = ()
    disk: str | None = None
    fsize: int = 0
    signal: str | None = None
    moment: str | None = None
    at: str = ""
    calls: int = 1
    ready: Callable | None = None
    unchanged: tuple = ()
    created: tuple | None = ()
    env: dict = field(default_factory=dict)
    beside: tuple | None = None
    beside_ready: Callable | None = None
    beside_code: int | None = 0
    after: Callable | None = None
    timeout: float = HANG_GUARD  # a hang guard only: no verdict depends on time
    marks: tuple = ()


@dataclass(frozen=True)
class Api:
    """One row of an entry point's table: ``call(folder)`` must raise ``raises`` whose
    message names every one of ``facts`` (and ``absent`` none of them), or, with
    ``raises=None``, return a value that ``check(value, folder)`` accepts."""

    id: str
    call: Callable
    raises: type | None = None
    facts: tuple = ()
    absent: tuple = ()
    check: Callable | None = None
    marks: tuple = ()


def rows(table) -> list:
    """The rows of a table as pytest parameters (their ids and marks)."""
    return [pytest.param(r, id=r.id, marks=[getattr(pytest.mark, m) for m in r.marks])
            for r in table]


# =========================================================================== environment
def env(extra_path=(), **variables) -> dict:
    """The environment of a command: the checkout and ``tests/`` (the stand-in trainer)
    on PYTHONPATH, no stand-in sleep unless asked."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(
        [*map(str, extra_path), str(TESTS_DIR), out.get("PYTHONPATH", "")])
    out.pop("RCMDP_STANDIN_SLEEP", None)
    out.update({k: str(v) for k, v in variables.items()})
    return out


def _child(fsize: int = 0):
    """In the child: Ctrl-C's default action (a shell that started the tests in the
    background may have set it to ignore), at most 4 GB of address space (a probe that
    code without a limit lets grow fails instead of filling the machine) and, with
    ``fsize``, the file-size limit of a simulated full disk."""
    def apply():
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        if fsize:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return apply


def can_mount() -> bool:
    """True when this process may mount a tmpfs (root on Linux)."""
    return sys.platform.startswith("linux") and os.geteuid() == 0


@contextlib.contextmanager
def folder_on(kind: str | None, base: Path, setup=None):
    """A folder for a row: plain, or on a full or read-only file system (module
    notes); ``setup(folder)`` runs before the folder is filled or made read-only.
    Yields ``(folder, fsize)``: the file-size limit of a simulated full disk (0: none
    needed)."""
    folder = base / "run"
    folder.mkdir()
    mounted = False
    fsize = 0
    try:
        if kind is not None and can_mount():
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0777", "tmpfs",
                            str(folder)], check=True)
            mounted = True
        if setup is not None:
            setup(folder)
        if kind == "full":
            if mounted:
                with contextlib.suppress(OSError), open(folder / ".filler", "wb") as fh:
                    while True:
                        fh.write(b"\0" * 4096)
                        fh.flush()
            else:
                fsize = 1
        elif kind == "readonly":
            if mounted:
                subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
            else:
                for p in folder.rglob("*"):
                    p.chmod(0o444 if p.is_file() else 0o555)
                folder.chmod(0o555)
        yield folder, fsize
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)
        elif kind == "readonly":
            for p in [folder, *folder.rglob("*")]:
                with contextlib.suppress(OSError):
                    p.chmod(0o755 if p.is_dir() else 0o644)


def wait_for(condition, proc, what: str, timeout: float = HANG_GUARD) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the command ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


def files_of(folder: Path) -> dict:
    """Every file under ``folder`` (relative path -> bytes), the filler of a full disk
    and SQLite's -wal/-shm companions aside."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != ".filler" and not p.name.endswith(("-wal", "-shm")):
            with contextlib.suppress(OSError):
                out[str(p.relative_to(folder))] = p.read_bytes()
    return out


# =========================================================================== running a row
def run_cli(row: Cli, tmp_path: Path):
    """Run one command row and check it (module notes); returns the finished process."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SIGNAL_SITE)
    variables = dict(row.env)
    if row.moment in ("busy", "return", "exit"):
        variables.update(HOSTILE_MOMENT=row.moment, HOSTILE_SIGNAL=row.signal,
                         HOSTILE_AT=row.at, HOSTILE_CALLS=row.calls)
    with folder_on(row.disk, tmp_path, row.setup) as (folder, fsize):
        before = files_of(folder)
        child_env = env([site], **{k: str(v).format(folder=folder) for k, v in
                                   variables.items()})
        args = [str(a).format(folder=folder) for a in row.args]
        beside = None
        if row.beside is not None:
            beside = subprocess.Popen([str(a).format(folder=folder) for a in row.beside],
                                      cwd=folder, env=child_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True,
                                      preexec_fn=_child(), start_new_session=True)
        try:
            if beside is not None and row.beside_ready is not None:
                wait_for(lambda: row.beside_ready(folder), beside, "the process beside")
            proc = subprocess.Popen([sys.executable, "-m", "rcmdp_exact", *args], cwd=folder,
                                    env=child_env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True,
                                    preexec_fn=_child(row.fsize or fsize),
                                    start_new_session=True)
            try:
                if row.moment == "ready":
                    wait_for(lambda: row.ready(folder), proc, "the moment to send the signal")
                    proc.send_signal(getattr(_signal, f"SIG{row.signal}"))
                out, err = proc.communicate(timeout=row.timeout)
            finally:
                if proc.poll() is None:  # pragma: no cover - a hung command
                    os.killpg(proc.pid, _signal.SIGKILL)
                    proc.wait()
            if beside is not None:
                if row.beside_code is None:  # a holder: ended once the command is done
                    os.killpg(beside.pid, _signal.SIGKILL)
                _, b_err = beside.communicate(timeout=row.timeout)
                if row.beside_code is not None:
                    assert beside.returncode == row.beside_code, (beside.returncode, b_err)
        finally:
            if beside is not None and beside.poll() is None:
                os.killpg(beside.pid, _signal.SIGKILL)
                beside.wait()
        after = files_of(folder)
        if row.moment == "busy" and proc.returncode == 0:
            raise AssertionError(f"the signal's moment never came: the command ended without "
                                 f"entering {row.at!r} {row.calls} time(s); name a function "
                                 f"its work reaches (stdout: {out[-500:]!r})")
        check_outcome(row, proc.returncode, out, err)
        for name in row.unchanged:
            assert after.get(name) == before.get(name), f"{name} changed"
        if row.created is not None:
            new = sorted(set(after) - set(before) - set(row.created))
            assert not new, f"new files {new}"
        if row.after is not None:
            row.after(folder, out, err)
    return proc


def check_outcome(row: Cli, code: int, out: str, err: str) -> None:
    """The exit status, the one line of standard error and what it names."""
    assert code == row.code, (code, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    lines = err.strip().splitlines()
    if row.code != 0:
        assert len(lines) == 1, err[-3000:]
        line = lines[0]
        for fact in row.facts:
            assert fact in line, (fact, line)
        for fact in row.absent:
            assert fact not in line, (fact, line)
    for fact in row.stdout:
        assert fact in out, (fact, out[-2000:])


def run_api(row: Api, tmp_path: Path) -> None:
    """Run one entry-point row: its error (class and facts), or its value checked; and,
    for every row, no file left open (a ``ResourceWarning`` once the call's objects and
    its error's traceback are gone)."""
    import gc
    import warnings

    # the objects alive before the call are frozen (left out of the collection): the
    # collection after it walks only what the call made, where a file it left open is,
    # instead of the whole heap of the test process (a tenth of a second a row)
    gc.freeze()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            _call_api(row, tmp_path)
            gc.collect()
    finally:
        gc.unfreeze()
    left_open = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not left_open, left_open


def _call_api(row: Api, tmp_path: Path) -> None:
    if row.raises is None:
        value = row.call(tmp_path)
        if row.check is not None:
            # a check is either asserts (None) or a truth value: False fails the row
            verdict = row.check(value, tmp_path)
            assert verdict is None or bool(verdict), (row.id, value)
        return
    with pytest.raises(row.raises) as info:
        row.call(tmp_path)
    text = str(info.value)
    assert "\n" not in text.strip(), text
    for fact in row.facts:
        assert fact in text, (fact, text)
    for fact in row.absent:
        assert fact not in text, (fact, text)


# =========================================================================== hostile files
def small_model():
    """A small model with a horizon (3 states, 2 actions, 1 constraint)."""
    from rcmdp_exact import domains

    return domains.garnet(3, 2, 2, n_constraints=1, seed=0).replace(horizon=5)


def model_arrays() -> dict:
    """The arrays of :func:`small_model`'s file (as ``TabularCMDP.save`` writes them)."""
    import tempfile

    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        path = small_model().save(Path(tmp) / "m.npz")
        with np.load(path) as f:
            return {k: f[k] for k in f.files}


def write_archive(path: Path, arrays: dict, forged: dict | None = None) -> Path:
    """An ``.npz`` archive of ``arrays``; the entries of ``forged`` get only a header
    declaring the shape given (and 64 bytes of data): a file that claims far more than
    it holds."""
    import io
    import zipfile

    import numpy as np

    forged = forged or {}
    with zipfile.ZipFile(path, "w") as z:
        for key, value in arrays.items():
            buf = io.BytesIO()
            if key in forged:
                np.lib.format.write_array_header_1_0(
                    buf, {"descr": "<f8", "fortran_order": False, "shape": forged[key]})
                buf.write(b"\0" * 64)
            else:
                np.lib.format.write_array(buf, np.asarray(value))
            z.writestr(f"{key}.npy", buf.getvalue())
    return path


def sparse_model_arrays(column=10**6) -> dict:
    """The file arrays of a sparse model (3 states, 2 actions) whose last stored
    column index is ``column`` (out of range for S = 3 unless < 3)."""
    import numpy as np

    arrays = {k: v for k, v in model_arrays().items()
              if k not in ("P", "R", "C", "outcomes")}
    arrays.update(P_data=np.ones(6), P_indices=np.array([0, 1, 2, 0, 1, column]),
                  P_indptr=np.arange(7), P_shape=np.array([6, 3]),
                  R=np.zeros((3, 2)), C=np.zeros((3, 2, 1)))
    return arrays


def setup_files(folder: Path) -> None:
    """Every hostile input file of the command tables, in ``folder``."""
    import sqlite3

    import numpy as np

    small_model().save(folder / "good.npz")
    arrays = model_arrays()
    write_archive(folder / "sparse_oob.npz", sparse_model_arrays())
    write_archive(folder / "forged.npz", arrays, forged={"P": (100000, 4, 100000)})
    write_archive(folder / "v9.npz", {**arrays, "format": np.array(
        "rcmdp_exact.TabularCMDP/9")})
    P32 = np.random.default_rng(0).dirichlet(np.ones(3), size=(3, 2)).astype(np.float32)
    write_archive(folder / "f32.npz", {**arrays, "P": P32})
    (folder / "empty.npz").write_bytes(b"")
    (folder / "empty.sqlite").write_bytes(b"")
    con = sqlite3.connect(folder / "other.sqlite")
    con.execute("CREATE TABLE songs (title TEXT)")
    con.execute("INSERT INTO songs VALUES ('a song of another application')")
    con.commit()
    con.close()


#: The files :func:`setup_files` writes (a row that refuses must leave them as they were).
INPUT_FILES = ("good.npz", "sparse_oob.npz", "forged.npz", "v9.npz", "f32.npz",
               "empty.npz", "empty.sqlite", "other.sqlite")

#: A lock holder beside a row: holds the results store's lock as rcmdp recover does
#: (exclusive), prints "ready" into the file ``held``, and waits to be killed.
HOLD_LOCK = ("import sys, time, pathlib\n"
             "from rcmdp_exact.protocol.store import StoreLock\n"
             "lock = StoreLock(sys.argv[1], exclusive=True)\n"
             "pathlib.Path('held').write_text('ready')\n"
             "time.sleep(float(sys.argv[2]))\n")


def holding_lock(db: str, seconds: float = 600.0) -> tuple:
    """The ``beside`` command of a process that holds ``db``'s lock for ``seconds``."""
    return (sys.executable, "-c", HOLD_LOCK, db, str(seconds))


# =========================================================================== a results store
#: The stand-in trainer (tests/test_experiments_standin.py): exact, deterministic, no
#: numba; ``RCMDP_STANDIN_SLEEP`` slows each run, ``RCMDP_STANDIN_MARK`` marks it.
STANDIN = "test_experiments_standin:standin_train"
#: A small reproduction with the stand-in: test 1A, PG and CPG, two seeds (4 runs and 3
#: ground-truth jobs).
SMALL = ("--tests", "1A", "--algorithms", "pg,cpg", "--seeds", "2", "--episodes", "2",
         "--n-draws", "1", "--bracket-seeds", "1", "--trainer", STANDIN, "--no-progress",
         "--workers", "1")


def setup_store(folder: Path) -> None:
    """The hostile input files and a copy of the reference store, ``runs.sqlite``."""
    import shutil

    setup_files(folder)
    shutil.copy(reference_store(SMALL) / "runs.sqlite", folder / "runs.sqlite")


#: The files :func:`setup_store` writes.
STORE_FILES = (*INPUT_FILES, "runs.sqlite")
#: A stand-in run sleeps 0.5 s and marks itself in ``marks/`` (a sweep beside a row).
SLOW_STANDIN = {"RCMDP_STANDIN_SLEEP": "0.5", "RCMDP_STANDIN_MARK": "{folder}/marks"}


def setup_store_marked(folder: Path) -> None:
    """:func:`setup_store`, and the folder ``marks`` of :data:`SLOW_STANDIN`."""
    setup_store(folder)
    (folder / "marks").mkdir()


def stored_jobs(db: Path) -> int:
    """The number of jobs (runs and ground-truth jobs) in the store ``db``."""
    import sqlite3

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT (SELECT COUNT(*) FROM runs) + "
                           "(SELECT COUNT(*) FROM ground_truth)").fetchone()[0]
    finally:
        con.close()


def marked(folder: Path) -> bool:
    """True once a stand-in run has started in a process beside (``RCMDP_STANDIN_MARK``
    is ``folder/marks``)."""
    marks = folder / "marks"
    return marks.is_dir() and any(marks.iterdir())


def holder_ready(folder: Path) -> bool:
    """True once the lock holder beside (:data:`HOLD_LOCK`) holds the lock."""
    return (folder / "held").exists()

"""Hostile inputs of ``rcmdp train`` (the table's shape: tests/hostile/hostile.py)."""

from __future__ import annotations

import sys

import pytest
from hostile import INPUT_FILES, Cli, rows, run_cli, setup_files

QUICK = ("--episodes", "2", "--eval-every", "1", "--no-bracket", "--no-progress")


#: The end of both trainers below: a signal that waited (for the compiler, or until
#: ``__del__`` returned) is delivered again by a timer thread; once it has run, the next
#: instructions take the interrupt (none: it was lost).
AWAIT_THE_INTERRUPT = """\
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.join()
    total = 0
    for i in range(10000):
        total += i
    raise RuntimeError("the interrupt was lost")
"""


#: A trainer that compiles a function of its own with numba and sends itself SIGINT
#: from inside LLVM's callback to llvmlite (ctypes) that hands over the object code.
INTERRUPTED_IN_COMPILER = """\
import os, signal, threading

import numba
from numba.core.registry import cpu_target


def train(*args, **kwargs):
    engine = cpu_target.target_context.codegen()._engine._ee
    hook = engine._object_cache_notify

    def notify(module, buf):
        engine._object_cache_notify = hook
        os.kill(os.getpid(), signal.SIGINT)
        total = 0
        for i in range(10000):  # the handler runs here, inside the ctypes callback
            total += i
        return hook(module, buf)

    engine._object_cache_notify = notify

    @numba.njit(cache=False)
    def one_more(x):
        return x + 1.5

    one_more(1.0)
""" + AWAIT_THE_INTERRUPT


INTERRUPTED_IN_DEL = """\
import os, signal, threading


class Held:
    def __del__(self):  # an exception raised here is printed and dropped by Python
        os.kill(os.getpid(), signal.SIGINT)
        total = 0
        for i in range(10000):  # the handler runs here, inside __del__
            total += i


def train(*args, **kwargs):
    held = Held()
    del held
""" + AWAIT_THE_INTERRUPT


def _deleting_trainer(folder):
    """The trainer above, in the command's folder."""
    (folder / "deleting.py").write_text(INTERRUPTED_IN_DEL)


def _compiling_trainer(folder):
    """The trainer above, in the command's folder (``python -m`` imports from there)."""
    (folder / "compiling.py").write_text(INTERRUPTED_IN_COMPILER)


def _written(folder, out, err):
    assert (folder / "r.npz").exists() and "wrote r.npz" in out


HOSTILE = [
    Cli("sparse-index-out-of-range", ("train", "pg", "--model", "sparse_oob.npz", *QUICK),
        facts=("--model 'sparse_oob.npz'", "column index 1000000"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("forged-header", ("train", "pg", "--model", "forged.npz", *QUICK),
        facts=("--model 'forged.npz'", "298 GiB"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("format-version-9", ("train", "pg", "--model", "v9.npz", *QUICK),
        facts=("--model 'v9.npz'", "format version '9'"), setup=setup_files),
    Cli("episodes-above-the-limit", ("train", "nav2", "pg", "--episodes", "99999999999"),
        facts=("--episodes", "10^7")),
    Cli("out-exists", ("train", "nav2", "pg", *QUICK, "--out", "good.npz"),
        facts=("good.npz", "--force"), setup=setup_files, unchanged=INPUT_FILES),
    # the result's folder is read-only (refused before training), or its disk full
    # (one line naming the file, no half-written file)
    Cli("read-only-out", ("train", "nav2", "pg", *QUICK, "--out", "r.npz"),
        disk="readonly", facts=("--out", "r.npz", "not writable"), setup=setup_files,
        unchanged=INPUT_FILES),
    Cli("full-disk", ("train", "nav2", "pg", *QUICK, "--out", "r.npz"), disk="full",
        facts=("the trained result cannot be written", "r.npz", "no file was written"),
        setup=setup_files, unchanged=INPUT_FILES),
    Cli("sigint-busy", ("train", "nav2", "pg", "--episodes", "2000", "--no-bracket",
                        "--no-progress", "--out", "r.npz"), code=130, signal="INT",
        moment="busy", at="run_chunk", calls=2,
        facts=("rcmdp train: interrupted", "nothing was written")),
    # a Ctrl-C in numba's compiler (in a ctypes callback of LLVM) was dropped: the
    # command ran on; it waits until the compiler has returned
    Cli("sigint-while-numba-compiles", ("train", "nav1", "cpg", "--trainer",
                                        "compiling:train", "--episodes", "5",
                                        "--no-bracket", "--no-progress"),
        code=130, facts=("rcmdp train: interrupted; nothing was written",),
        setup=_compiling_trainer,
        created=(f"__pycache__/compiling.{sys.implementation.cache_tag}.pyc",)),
    # the same inside a __del__ (or a weak reference's callback, where a SIGTERM to
    # rcmdp report was lost): the exception would be printed and dropped
    Cli("sigint-inside-del", ("train", "nav1", "cpg", "--trainer", "deleting:train",
                              "--episodes", "5", "--no-bracket", "--no-progress"),
        code=130, facts=("rcmdp train: interrupted; nothing was written",),
        setup=_deleting_trainer,
        created=(f"__pycache__/deleting.{sys.implementation.cache_tag}.pyc",)),
    # a Ctrl-C while `python -m rcmdp_exact` imports the command line (the first tenth
    # of a second, before main's handlers): a KeyboardInterrupt traceback and the death
    # by the signal (status -2) before; SIGTERM there was a silent death
    Cli("sigint-while-the-command-line-imports", ("train", "nav2", "pg", *QUICK), code=130,
        signal="INT", moment="busy", at="rcmdp_exact/cli/__init__.py:<module>",
        facts=("rcmdp: interrupted; nothing was written",)),
    Cli("sigterm-while-the-command-line-imports", ("train", "nav2", "pg", *QUICK),
        code=143, signal="TERM", moment="busy", at="rcmdp_exact/cli/__init__.py:<module>",
        facts=("rcmdp: terminated; nothing was written",)),
    Cli("sigterm-at-exit", ("train", "nav2", "pg", *QUICK, "--out", "r.npz"), code=143,
        signal="TERM", moment="exit",
        facts=("rcmdp train: terminated", "the result was written to"),
        after=_written, created=("r.npz",)),
]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_cli(row, tmp_path)

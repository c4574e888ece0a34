"""Assertions shared by the tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


def raises_fact(cls, *facts: str):
    """``pytest.raises(cls)`` whose message names every one of ``facts``.

    An error test checks the class and the key facts of the message (the offending
    argument, index and value), not the whole sentence, so that rewording a message
    does not change a test.
    """
    pattern = "(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in facts)
    return pytest.raises(cls, match=pattern)


#: Seconds after which a test ends a subprocess or a wait that hangs: only a hang guard, far
#: above any load (a loaded CI machine runs a command many times slower than an idle one),
#: so that no verdict depends on elapsed time.  A test never passes a smaller timeout.
HANG_GUARD = 1800.0


#: Multiplier of every test's example count under the "thorough" hypothesis profile.
THOROUGH_FACTOR = 10


def thorough() -> bool:
    """True under ``HYPOTHESIS_PROFILE=thorough``: the run a developer makes before a
    release (ten times the hypothesis examples, and the deep cases of :func:`depth`)."""
    import os

    return os.environ.get("HYPOTHESIS_PROFILE") == "thorough"


def depth(default, deep):
    """``deep`` under the thorough profile, ``default`` otherwise.

    For a size that the test command keeps small and a release check makes large (a
    model's states, episodes, a list of cases such as ``depth([0.99, 0.999], [0.99,
    0.999, 0.99999])``): the everyday run keeps the test, cheaper, instead of skipping
    it, and ``HYPOTHESIS_PROFILE=thorough python -m pytest`` runs it at full depth.
    """
    return deep if thorough() else default


def examples(n: int) -> int:
    """``n`` hypothesis examples, or ten times as many under ``HYPOTHESIS_PROFILE=thorough``.

    Tests that set their own ``max_examples`` (to keep the default run short) use this, so
    the thorough profile scales them too.
    """
    return n * (THOROUGH_FACTOR if thorough() else 1)


def refused(cwd, *args):
    """``rcmdp ARGS`` in this process, in the folder ``cwd``, for a refusal (exit status 2
    before any work): the same ``main`` as ``python -m rcmdp_exact``, without a new interpreter's
    start-up and imports (two seconds of CPU per call), so that the tables of refusals
    stay cheap.  Warnings are filtered as in a new process (Python's default filters)."""
    import contextlib
    import io
    import subprocess
    import warnings

    from rcmdp_exact.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), warnings.catch_warnings(), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                         ResourceWarning):
            warnings.simplefilter("ignore", category)
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse's refusals
            code = exc.code
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


_REFERENCE: dict = {}


def reference_store(small) -> Path:
    """The folder ``out`` of ``rcmdp reproduce SMALL --out out`` (a small store with
    the stand-in trainer of ``test_experiments_standin.py``, and its report), made once
    per process, in a temporary folder removed at exit, and shared by the tests that
    copy it (test_probes and the hostile tables): ``small`` is the command's arguments.
    """
    import atexit
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    key = tuple(map(str, small))
    if key not in _REFERENCE:
        where = Path(tempfile.mkdtemp(prefix="rcmdp-reference-store-"))
        atexit.register(shutil.rmtree, where, True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent),
                                             env.get("PYTHONPATH", "")])
        env.pop("RCMDP_STANDIN_SLEEP", None)
        proc = subprocess.run([sys.executable, "-m", "rcmdp_exact", "reproduce", *key,
                               "--out", "out"], cwd=where, env=env, capture_output=True,
                              text=True, timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stderr
        _REFERENCE[key] = where / "out"
    return _REFERENCE[key]


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, ended but not reaped, counts as ended; reads
    /proc, Linux only)."""
    from pathlib import Path

    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")

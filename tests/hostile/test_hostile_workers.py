"""Worker processes end with their parent (``rcmdp_exact._workers``), however the
parent ends: SIGKILL of the driver leaves no worker computing for nobody."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import HANG_GUARD, process_alive

#: A driver that starts a pool of two spawned workers through ``pool_initializer``,
#: has each write its pid and sleep, prints "ready" and waits to be killed.
DRIVER = r"""
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from rcmdp_exact._workers import pool_initializer

def job(folder, i):
    Path(folder, f"{i}.pid").write_text(str(os.getpid()))
    time.sleep(600)

if __name__ == "__main__":
    folder = sys.argv[1]
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=2, mp_context=ctx, **pool_initializer())
    futs = [pool.submit(job, folder, i) for i in range(2)]
    while len(list(Path(folder).glob("*.pid"))) < 2:
        time.sleep(0.05)
    print("ready", flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_end_when_their_driver_is_killed(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        pids = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
        assert len(pids) == 2 and all(process_alive(p) for p in pids)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        end = time.monotonic() + HANG_GUARD  # a hang guard, not a measured number
        while any(process_alive(p) for p in pids) and time.monotonic() < end:
            time.sleep(0.05)
        assert not any(process_alive(p) for p in pids), "a worker outlived its driver"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in tmp_path.glob("*.pid"):
            pid = int(p.read_text())
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_parent_is_already_gone_exits_at_once():
    code = ("from rcmdp_exact._workers import exit_with_parent, ORPHAN_EXIT\n"
            "exit_with_parent(2**22 + 12345)\nprint('still running')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG_GUARD)
    assert out.returncode == 1 and "still running" not in out.stdout


def test_the_initializer_names_this_process():
    from rcmdp_exact._workers import exit_with_parent, pool_initializer

    kw = pool_initializer()
    assert kw == {"initializer": exit_with_parent, "initargs": (os.getpid(),)}


def test_the_protocol_backend_uses_the_floor_module():
    """One home: the local backend of the protocol takes its initializer from _workers
    and keeps no copy of its own."""
    import rcmdp_exact.protocol.backends as backends

    text = Path(backends.__file__).read_text()
    assert "pool_initializer()" in text and "PR_SET_PDEATHSIG" not in text \
        and "def exit_with_parent" not in text

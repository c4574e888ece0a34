"""Timings of ``rcmdp reproduce``: the ``--quick`` preset and the full protocol.

Runs the command in a fresh process on a fresh results database and prints the wall
time beside the goal (90 s for ``--quick`` from a fresh install, 45 minutes for the full
protocol with 2 workers) and the ratio goal / time, and the CPU time of the command and
its worker processes (on a shared machine the wall time depends on the other jobs; half
the CPU time is what 2 idle cores would need at least); then the compute time per phase
summed over jobs (from the store, wall-clock seconds inside each job), the environment
steps, and beside them an estimate of the published implementation's time for the same
steps (8.8 ms per step for PG and the other non-adversarial learners, 27 ms for
Adversarial RCPG, the reference's measured per-step costs) with the ratio.

A fresh install has no compiled code: by default the numba cache goes to a new empty
folder (``NUMBA_CACHE_DIR``), so compilation is included.  ``--warm`` keeps the usual
cache.

    python benchmarks/bench_reproduce.py                 # --quick
    python benchmarks/bench_reproduce.py --full --out docs/reproduction_full
    python benchmarks/bench_reproduce.py --args "--quick --workers 1"
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOALS = {"quick": 90.0, "full": 45 * 60.0}
#: The published implementation's seconds per environment step (docs/protocol.md).
REFERENCE_STEP = {"adversarial-rcpg": 27e-3}
REFERENCE_STEP_DEFAULT = 8.8e-3


def breakdown(db: Path) -> dict:
    con = sqlite3.connect(db)
    out = {"estimation": 0.0, "training": 0.0, "testing": 0.0, "steps": {}, "runs": 0,
           "train_by_algo": {}}
    for algo, info in con.execute("SELECT algorithm, info FROM runs"):
        info = json.loads(info)
        out["runs"] += 1
        for k in ("estimation", "training", "testing"):
            out[k] += info["seconds"][k]
        out["steps"][algo] = out["steps"].get(algo, 0) + (info.get("steps") or 0)
        out["train_by_algo"][algo] = (out["train_by_algo"].get(algo, 0.0)
                                      + info["seconds"]["training"])
    out["ground_truth"] = sum(json.loads(r)["seconds"] for (r,) in
                              con.execute("SELECT result FROM ground_truth"))
    out["gt_jobs"] = con.execute("SELECT COUNT(*) FROM ground_truth").fetchone()[0]
    con.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true",
                    help="the full protocol (6 x 5 x 20 x 5,000 episodes, 2 workers)")
    ap.add_argument("--args", default=None,
                    help="other arguments for rcmdp reproduce (default: --quick, or the "
                         "full protocol's defaults with --workers 2)")
    ap.add_argument("--out", default=None, help="keep the outputs in this folder")
    ap.add_argument("--warm", action="store_true", help="keep the usual numba cache")
    args = ap.parse_args()

    goal_name = "full" if args.full else "quick"
    extra = shlex.split(args.args) if args.args is not None else (
        ["--workers", "2"] if args.full else ["--quick"])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "out"
        db = out / "runs.sqlite"
        if db.exists():
            sys.exit(f"{db} exists; give a fresh --out so that everything is computed")
        env = dict(os.environ)
        if not args.warm:
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba-cache")
        cmd = [sys.executable, "-m", "rcmdp_exact", "reproduce", *extra, "--out", str(out),
               "--db", str(db), "--no-progress"]
        print("$", " ".join(cmd[1:]))
        load0 = os.getloadavg()[0]
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        load1 = os.getloadavg()[0]
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr)
            sys.exit(f"rcmdp reproduce failed with status {proc.returncode}")
        b = breakdown(db)
    goal = GOALS[goal_name]
    print(f"wall time {wall:8.1f} s   goal {goal:.0f} s ({goal_name})   ratio goal/time "
          f"{goal / wall:.2f}   load average {load0:.1f} -> {load1:.1f} (2 cores)"
          + ("" if args.warm else "   numba cache: cold"))
    print(f"CPU time of the command and its workers {cpu:.1f} s: on 2 idle cores at least "
          f"{cpu / 2:.1f} s of wall time (ratio goal / that {goal / max(cpu / 2, 1e-9):.2f})")
    print(f"runs {b['runs']}, ground-truth jobs {b['gt_jobs']}; compute seconds summed over "
          f"jobs: estimation {b['estimation']:.1f}, training {b['training']:.1f}, testing "
          f"{b['testing']:.1f}, ground truth {b['ground_truth']:.1f}")
    print("training: the reference's estimated time for the same steps beside ours "
          "(ours includes compilation, pre-fit and the periodic exact evaluations)")
    print(f"{'algorithm':<18} {'steps':>12} {'reference (est.)':>17} {'ours':>10} {'ratio':>8}")
    ref_total = 0.0
    for algo, steps in sorted(b["steps"].items()):
        ref = steps * REFERENCE_STEP.get(algo, REFERENCE_STEP_DEFAULT)
        ref_total += ref
        ours = b["train_by_algo"][algo]
        print(f"{algo:<18} {steps:12,d} {ref / 3600:15.2f} h {ours:8.1f} s "
              f"{ref / max(ours, 1e-9):7,.0f}x")
    print(f"{'all':<18} {sum(b['steps'].values()):12,d} {ref_total / 3600:15.2f} h "
          f"{b['training']:8.1f} s {ref_total / max(b['training'], 1e-9):7,.0f}x")


if __name__ == "__main__":
    main()

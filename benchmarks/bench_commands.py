"""Whole-command timings: what a user waits for, from process start to exit.

Each command runs in a fresh process (interpreter start-up and imports included), once as
a warm-up and then ``--runs`` times; the script prints the minimum, median and maximum of
the wall clock and of the CPU time of the process and its children.

Sections (``--section``, default all):

* ``refusals``: bad arguments that must be refused before any work starts (the time of
  the one-line error), one per subcommand.
* ``evaluate``: ``rcmdp evaluate`` (all three domains).
* ``verify``: ``rcmdp verify``.
* ``ground-truth``: ``rcmdp ground-truth --no-progress`` (all three domains, into a
  temporary folder).
* ``train``: ``rcmdp train nav1 cpg --no-progress`` (5,000 episodes, the paper's), first
  with an empty numba cache (``NUMBA_CACHE_DIR`` a new folder: the first run after an
  install, which compiles the learners' loop) and then with the compiled loop cached.
* ``reproduce``: ``rcmdp reproduce --quick --no-progress`` into a new folder, with an
  empty numba cache and with a warm one.
* ``report``: ``rcmdp report`` of the store that ``--quick`` wrote, and ``rcmdp recover``
  of a copy of it.
* ``suite``: ``rcmdp suite list``, ``show riverswim-6`` and ``verify`` (the shipped file).
* ``model``: the commands on a model of your own (``--model``, a saved FrozenLake 4x4
  with a cost on its holes): ``evaluate``, ``verify --tabular-only``, ``ground-truth``,
  ``train ... cpg`` and ``reproduce --quick --algorithms pg,cpg``.
* ``notebooks``: each tutorial of ``notebooks/`` run as a script (``MPLBACKEND=Agg``).
* ``quickstart``: the Python of ``docs/quickstart.md`` (its code blocks, in order, as one
  script) and the ``rcmdp train`` command of its step 5.
* ``readme`` (not in the default set: it installs the package four times and runs the
  whole test suite): the commands of README.md (its lines ``python3 -m venv .venv &&
  ...``) as a new user runs them, each run in a fresh copy of the checkout with a new
  virtual environment, once unless ``--runs`` says otherwise (the minimum, median and
  maximum are printed for several); the install (``python3 -m venv ... && pip install
  ...``) and the command after it timed apart.  pip's download cache is the machine's
  own (a first install on a new machine also downloads every wheel); ``--no-pip-cache``
  installs without it; ``--readme-commands 2`` runs only the second (numbers of the
  README's order, comma-separated).  The load average is printed before and after
  each run (the machine should be idle).

    python benchmarks/bench_commands.py [--section refusals] [--runs 5]
    python benchmarks/bench_commands.py --section readme [--readme-commands 2] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RCMDP = [sys.executable, "-m", "rcmdp_exact"]
REFUSALS = [
    ["ground-truth", "--seed", "-1"],
    ["verify", "--random", "-1"],
    ["train", "nav1", "ppo"],
    ["reproduce", "--tests", "foo"],
    ["evaluate", "--domain", "nav9"],
    ["report", "--db", "missing.sqlite", "--out", "x"],
]
SECTIONS = ("refusals", "evaluate", "verify", "ground-truth", "train", "reproduce", "report",
            "suite", "model", "notebooks", "quickstart", "readme")
#: The sections run when none is asked for (``readme`` only when asked for).
DEFAULT_SECTIONS = SECTIONS[:-1]
TRAIN = ["train", "inventory", "cpg", "--gradient", "exact", "--entropy", "0",
         "--train-on", "data", "--no-progress"]


def run_once(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, int]:
    """Wall and CPU seconds (process and children) of one run, and its exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def measure(label: str, cmd: list[str], runs: int, cwd: Path = ROOT, env=None,
            warm_up: bool = True, prepare=None) -> dict:
    """Time ``cmd`` ``runs`` times (after one warm-up run unless ``warm_up`` is False);
    ``prepare()`` runs before each timed run (to empty a folder or a cache)."""
    env = dict(os.environ, **(env or {}))
    if warm_up:
        run_once(cmd, cwd, env)  # warm-up (file caches, numba's cache)
    walls, cpus, codes = [], [], set()
    for _ in range(runs):
        if prepare is not None:
            prepare()
        wall, cpu, code = run_once(cmd, cwd, env)
        walls.append(wall)
        cpus.append(cpu)
        codes.add(code)
    row = {"label": label, "runs": runs, "exit": sorted(codes),
           "wall": (min(walls), statistics.median(walls), max(walls)),
           "cpu": (min(cpus), statistics.median(cpus), max(cpus))}
    w, c = row["wall"], row["cpu"]
    print(f"{label:58s} {w[0]:7.3f} {w[1]:7.3f} {w[2]:7.3f}   {c[1]:7.3f}   "
          f"{','.join(map(str, row['exit'])):>4s}", flush=True)
    return row


def header(title: str, runs: int) -> None:
    print(f"\n{title} (wall s: min / median / max of {runs} runs after a warm-up; "
          f"CPU s: median)")
    print(f"{'command':58s} {'min':>7s} {'median':>7s} {'max':>7s}   {'CPU':>7s}   exit")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=SECTIONS, action="append",
                        help="a section to run (repeat for several; default: all)")
    parser.add_argument("--runs", type=int, default=None,
                        help="timed runs of each command (default 5; readme: 1)")
    parser.add_argument("--no-pip-cache", action="store_true",
                        help="readme: install without pip's cache (PIP_NO_CACHE_DIR=1)")
    parser.add_argument("--readme-commands", default=None, metavar="N[,N]",
                        help="readme: only these commands, by their number in the README "
                             "(default: all)")
    args = parser.parse_args(argv)
    only = None
    if args.readme_commands is not None:
        try:
            only = {int(x) for x in args.readme_commands.split(",")}
        except ValueError:
            parser.error("--readme-commands takes numbers, e.g. 2 or 1,3")
        if not only <= set(range(1, len(readme_commands()) + 1)):
            parser.error(f"--readme-commands: the README has "
                         f"{len(readme_commands())} commands")
    sections = args.section or list(DEFAULT_SECTIONS)
    readme_runs = args.runs or 1
    args.runs = args.runs or 5
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}, Python "
          f"{sys.version.split()[0]}")
    if "refusals" in sections:
        header("Refused arguments", args.runs)
        for bad in REFUSALS:
            measure("rcmdp " + " ".join(bad), RCMDP + bad, args.runs)
    if "evaluate" in sections:
        header("rcmdp evaluate", args.runs)
        measure("rcmdp evaluate", [*RCMDP, "evaluate"], args.runs)
    if "verify" in sections:
        header("rcmdp verify", args.runs)
        measure("rcmdp verify", [*RCMDP, "verify"], args.runs)
    if "ground-truth" in sections:
        header("rcmdp ground-truth", args.runs)
        out = Path(tempfile.mkdtemp(prefix="bench-gt-"))
        try:
            measure("rcmdp ground-truth --no-progress --force --out TMP",
                    [*RCMDP, "ground-truth", "--no-progress", "--force", "--out", str(out)],
                    args.runs)
        finally:
            shutil.rmtree(out, ignore_errors=True)
    if "train" in sections or "reproduce" in sections or "report" in sections:
        tmp = Path(tempfile.mkdtemp(prefix="bench-commands-"))
        cache = tmp / "numba-cache"

        def cold():
            shutil.rmtree(cache, ignore_errors=True)

        env = {"NUMBA_CACHE_DIR": str(cache)}
        try:
            if "train" in sections:
                header("rcmdp train (5,000 episodes)", args.runs)
                cmd = [*RCMDP, "train", "nav1", "cpg", "--no-progress"]
                measure("rcmdp train nav1 cpg, empty numba cache", cmd, args.runs, env=env,
                        warm_up=False, prepare=cold)
                measure("rcmdp train nav1 cpg, compiled loop cached", cmd, args.runs,
                        env=env)
            out = tmp / "quick"

            def fresh_out():
                shutil.rmtree(out, ignore_errors=True)

            cmd = [*RCMDP, "reproduce", "--quick", "--no-progress", "--out", str(out)]
            if "reproduce" in sections:
                header("rcmdp reproduce --quick (a new store each run)", args.runs)

                def cold_and_fresh():
                    cold()
                    fresh_out()

                measure("rcmdp reproduce --quick, empty numba cache", cmd, args.runs,
                        env=env, warm_up=False, prepare=cold_and_fresh)
                measure("rcmdp reproduce --quick, compiled loop cached", cmd, args.runs,
                        env=env, prepare=fresh_out)
            if "report" in sections:
                header("rcmdp report (the store of --quick)", args.runs)
                if not (out / "runs.sqlite").exists():
                    subprocess.run(cmd, env=dict(os.environ, **env), check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                measure("rcmdp report --db QUICK/runs.sqlite --out TMP",
                        [*RCMDP, "report", "--db", str(out / "runs.sqlite"), "--out",
                         str(tmp / "rep"), "--no-progress"], args.runs, env=env)
                header("rcmdp recover (a copy of the store of --quick)", args.runs)
                copy = tmp / "recover" / "runs.sqlite"

                def fresh_copy():
                    shutil.rmtree(copy.parent, ignore_errors=True)
                    copy.parent.mkdir()
                    shutil.copy(out / "runs.sqlite", copy)

                fresh_copy()
                measure("rcmdp recover --db COPY/runs.sqlite",
                        [*RCMDP, "recover", "--db", str(copy)], args.runs, env=env,
                        prepare=fresh_copy)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if "suite" in sections:
        header("rcmdp suite", args.runs)
        for action in (["list"], ["show", "riverswim-6"], ["verify", "--no-progress"]):
            measure("rcmdp suite " + " ".join(action), [*RCMDP, "suite", *action], args.runs)
    if "model" in sections:
        _model_section(args.runs)
    if "notebooks" in sections:
        header("Tutorials as scripts", args.runs)
        for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
            measure(f"python {nb.name}", [sys.executable, nb.name], args.runs,
                    cwd=nb.parent, env={"MPLBACKEND": "Agg"})
    if "quickstart" in sections:
        header("Quickstart", args.runs)
        text = (ROOT / "docs" / "quickstart.md").read_text("utf-8")
        code = "\n".join(b.split("\n", 1)[1] for b in text.split("```")[1::2]
                         if b.startswith("python\n"))
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "quickstart.py"
            script.write_text(code)
            measure("python (the code blocks of docs/quickstart.md)",
                    [sys.executable, str(script)], args.runs, cwd=Path(tmp))
        measure("rcmdp " + " ".join(TRAIN), RCMDP + TRAIN, args.runs)
    if "readme" in sections:
        _readme_section(args.no_pip_cache, only, readme_runs)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


def readme_commands() -> list[str]:
    """The README's install-and-run lines, in their order (the lines .ci/run runs)."""
    lines = (ROOT / "README.md").read_text("utf-8").splitlines()
    return [line for line in lines if line.startswith("python3 -m venv .venv && ")]


def _fresh_copy() -> Path:
    """The checkout's files (tracked, and untracked but not ignored) in a new folder."""
    where = Path(tempfile.mkdtemp(prefix="bench-readme-"))
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / name.decode()
        if src.is_file():
            dst = where / name.decode()
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    return where


def _readme_section(no_pip_cache: bool, only=None, runs: int = 1) -> None:
    print(f"\nThe README's commands, each run in a fresh copy and a new environment (wall s: "
          f"min / median / max of {runs} run(s); CPU s of the process and its children, "
          f"median; load average before and after)")
    print(f"{'command':56s} {'install':>19s} {'command':>19s} {'CPU':>7s} {'load':>9s} exit")
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    if no_pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    logs = Path(tempfile.mkdtemp(prefix="bench-readme-logs-"))

    def spread(xs):
        return f"{min(xs):5.0f} {statistics.median(xs):6.0f} {max(xs):6.0f}"

    for i, line in enumerate(readme_commands(), start=1):
        if only is not None and i not in only:
            continue
        install, _, command = line.rpartition(" && ")
        installs, commands, cpus, loads, codes = [], [], [], [], set()
        for r in range(runs):
            where = _fresh_copy()
            log = logs / f"command{i}-run{r + 1}.log"
            load = os.getloadavg()[0]
            try:
                w_inst, c_inst, code = run_once(
                    ["bash", "-c", f"({install}) > {log} 2>&1"], where, env)
                w_cmd, c_cmd = float("nan"), float("nan")
                if code == 0:
                    w_cmd, c_cmd, code = run_once(
                        ["bash", "-c", f"(. .venv/bin/activate && {command}) >> {log} 2>&1"],
                        where, env)
            finally:
                shutil.rmtree(where, ignore_errors=True)
            installs.append(w_inst)
            commands.append(w_cmd)
            cpus.append(c_inst + c_cmd)
            loads.append(f"{load:.1f}-{os.getloadavg()[0]:.1f}")
            codes.add(code)
            if code != 0:
                tail = log.read_text("utf-8", errors="replace").splitlines()[-25:]
                print("\n".join(["    " + t for t in tail]), flush=True)
        print(f"{command[:56]:56s} {spread(installs):>19s} {spread(commands):>19s} "
              f"{statistics.median(cpus):7.0f} {','.join(loads):>9s} "
              f"{','.join(map(str, sorted(codes)))}", flush=True)
    print(f"(the output of each run: {logs})")


def _model_section(runs: int) -> None:
    """The commands on a saved FrozenLake 4x4 with a cost of 1 on entering a hole."""
    import gymnasium
    import numpy as np

    import rcmdp_exact as rx

    env = gymnasium.make("FrozenLake-v1")
    holes = env.unwrapped.desc.ravel() == b"H"
    C = np.zeros((16, 4, 16, 1))
    C[:, :, holes, 0] = 1.0
    tmp = Path(tempfile.mkdtemp(prefix="bench-model-"))
    try:
        rx.TabularCMDP.from_gymnasium(env, costs=C, d=[0.1]).save(tmp / "frozen.npz")
        header("Your own model: --model frozen.npz (FrozenLake 4x4, cost on holes)", runs)
        m = ["--model", "frozen.npz"]
        measure("rcmdp evaluate --model", [*RCMDP, "evaluate", *m], runs, cwd=tmp)
        measure("rcmdp verify --model --tabular-only",
                [*RCMDP, "verify", *m, "--tabular-only"], runs, cwd=tmp)
        measure("rcmdp ground-truth --model --force --out gt",
                [*RCMDP, "ground-truth", *m, "--no-progress", "--force", "--out", "gt"],
                runs, cwd=tmp)
        measure("rcmdp train --model cpg", [*RCMDP, "train", *m, "cpg", "--no-progress"],
                runs, cwd=tmp)
        measure("rcmdp reproduce --model --quick --algorithms pg,cpg",
                [*RCMDP, "reproduce", *m, "--quick", "--algorithms", "pg,cpg",
                 "--no-progress", "--out", "rep", "--force"], runs, cwd=tmp,
                prepare=lambda: shutil.rmtree(tmp / "rep", ignore_errors=True))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())

"""The release check: build the sdist and the wheel, then run the toolkit from the wheel alone.

README.md's fourth command runs it (``python .ci/check_release.py``, after ``pip install
build``), and so does ``.ci/run``.  In order, each step stopping the check on a failure:

1. ``python -m build`` writes the sdist and the wheel into a temporary folder; a line of
   its output with "warning" or "deprecat" in it fails the check (``PYTHONDONTWRITEBYTECODE``
   is removed from the build's environment: with it set, setuptools warns that it cannot
   byte-compile, which says something of the environment, not of the project);
2. the sdist holds exactly the project's files (``git ls-files`` in a clone, every file
   but ``.venv/`` in a copy without ``.git``), so ``MANIFEST.in`` is complete, and the
   wheel holds exactly the package's files (code and package data, e.g. the suite's
   ``suite/data/``), its license file, SPDX license, version and the ``rcmdp`` script;
3. a new virtual environment in the temporary folder gets the wheel alone (``pip install
   WHEEL``: its dependencies from the index, nothing from the checkout);
4. from a folder outside the checkout, with no ``PYTHONPATH``: ``rcmdp --version``, the
   README's main job ``rcmdp reproduce --quick``, the docstring examples (doctests) of
   the installed package's modules that need no extra (the package checked to be
   imported from the new environment) and ``rcmdp suite verify`` of every instance
   whose model needs no extra;
5. until the suite ships the models that Gymnasium builds (``SUITE_NEEDS_GYMNASIUM``),
   Gymnasium is added to that environment and ``rcmdp suite verify`` checks them too.

``--keep`` leaves the temporary folder (its path is printed) for a look at what failed.
"""

from __future__ import annotations

import argparse
import email
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "rcmdp_exact"
#: What a copy of the checkout holds besides the project's files (not in the sdist).
NOT_SOURCE = {".venv", ".git", "build", "dist", "__pycache__"}
#: The suite's instances whose model is built by Gymnasium (the ``gym`` extra): verified
#: after the others, once Gymnasium is added to the wheel's environment.  Empty this when
#: the suite ships their tables (then ``rcmdp suite verify`` needs no extra at all).
SUITE_NEEDS_GYMNASIUM = ()
#: The doctests run from the installed wheel: every module of the package whose import
#: needs no extra (the test and docs extras run all of them again from the checkout).
DOCTEST_SCRIPT = r"""
import doctest, importlib, importlib.util, pkgutil, re, sys
from pathlib import Path
import rcmdp_exact

prefix = Path(sys.prefix).resolve()
where = Path(rcmdp_exact.__file__).resolve()
if prefix not in where.parents:
    sys.exit(f"rcmdp_exact was imported from {where}, not from the new environment {prefix}")
IMPORT = re.compile(r"^\s*(?:import|from)\s+(\w+)", re.M)
finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
modules, skipped = set(), []
for info in pkgutil.walk_packages(rcmdp_exact.__path__, "rcmdp_exact."):
    if info.name.endswith("__main__"):  # the command line itself
        continue
    try:
        module = importlib.import_module(info.name)
    except ImportError as err:  # a module of an extra (gymnasium, hypothesis...)
        missing = getattr(err, "name", None) or ""
        if (isinstance(err, ModuleNotFoundError) and missing
                and missing.split(".")[0] != "rcmdp_exact"):
            skipped.append(f"{info.name} (needs {missing})")
            continue
        if "pip install rcmdp_exact[" in str(err):  # the package's own message for an extra
            skipped.append(f"{info.name} ({str(err).rpartition(' ')[2]})")
            continue
        raise
    for test in finder.find(module):
        needs = {m for ex in test.examples for m in IMPORT.findall(ex.source)
                 if importlib.util.find_spec(m) is None}
        if needs:  # an example of an extra's use (Gymnasium, hypothesis)
            skipped.append(f"{test.name} (needs {', '.join(sorted(needs))})")
        elif test.examples:
            runner.run(test)
            modules.add(info.name)
result = runner.summarize(verbose=False)
print(f"doctests of the installed package: {result.attempted} examples in {len(modules)} "
      f"modules, {result.failed} failed; not run without their extra: "
      f"{'; '.join(skipped) or 'none'}")
if result.failed or result.attempted < 50:
    sys.exit(1)
"""


def step(title: str) -> float:
    print(f"\n== {title}", flush=True)
    return time.perf_counter()


def done(t0: float) -> None:
    print(f"   ({time.perf_counter() - t0:.0f} s)", flush=True)


def fail(message: str) -> None:
    print(f"check_release: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def run(cmd: list, cwd: Path, env: dict | None = None) -> None:
    shown = " ".join(map(str, [*cmd[:2], "SCRIPT"] if cmd[1:2] == ["-c"] else cmd))
    print("$ " + shown, flush=True)
    if subprocess.run(cmd, cwd=cwd, env=env).returncode != 0:
        fail(f"{shown} failed (in {cwd})")


def project_files() -> set[str]:
    """The project's files, relative to the checkout: what the sdist must hold."""
    if (ROOT / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode()
        return {f for f in out.split("\0") if f and (ROOT / f).is_file()}
    files = set()
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in NOT_SOURCE
                       and not d.endswith(".egg-info")]
        files.update(os.path.relpath(os.path.join(dirpath, f), ROOT) for f in filenames)
    return files


def build(dist: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)]
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    print("\n".join("   " + line for line in output.splitlines()[-3:]), flush=True)
    if proc.returncode != 0:
        print(output)
        fail("python -m build failed")
    warned = [line for line in output.splitlines() if re.search(r"warn|deprecat", line, re.I)]
    if warned:
        print(output)
        fail("python -m build printed warnings:\n  " + "\n  ".join(warned))


def check_sdist(sdist: Path, source: set[str]) -> None:
    with tarfile.open(sdist) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
    top = names[0].split("/")[0]
    held = {n.split("/", 1)[1] for n in names}
    generated = {"PKG-INFO", "setup.cfg"} | {n for n in held if ".egg-info/" in n}
    missing, extra = sorted(source - held), sorted(held - source - generated)
    if missing or extra:
        fail(f"the sdist {sdist.name} is not the project's files (MANIFEST.in):\n"
             f"  missing: {missing}\n  not in the project: {extra}")
    print(f"   sdist: the project's {len(source)} files under {top}/")


def check_wheel(wheel: Path, source: set[str], version: str) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        info = f"{PACKAGE}-{version}.dist-info"
        meta = email.message_from_bytes(zf.read(f"{info}/METADATA"))
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
    package = {f for f in source if f.startswith(f"{PACKAGE}/")}
    code = {n for n in names if not n.startswith(info)}
    missing, extra = sorted(package - code), sorted(code - package)
    if missing or extra:
        fail(f"the wheel {wheel.name} is not the package's files (package data in "
             f"pyproject.toml):\n  missing: {missing}\n  not in the package: {extra}")
    problems = []
    if meta["Version"] != version:
        problems.append(f"Version {meta['Version']!r}, not {version!r}")
    if meta["License-Expression"] != "MIT":
        problems.append(f"License-Expression {meta['License-Expression']!r}, not 'MIT'")
    if meta.get_all("License-File") != ["LICENSE"] or f"{info}/licenses/LICENSE" not in names:
        problems.append(f"license file {meta.get_all('License-File')!r}, not ['LICENSE']")
    if not re.search(r"^rcmdp\s*=\s*rcmdp_exact\._entry:main$", entry_points, re.M):
        problems.append(f"no rcmdp script in entry_points.txt: {entry_points!r}")
    if problems:
        fail(f"the wheel's metadata: {'; '.join(problems)}")
    data = sorted(n for n in code if not n.endswith(".py"))
    print(f"   wheel: the package's {len(code)} files (data: {', '.join(data)}), "
          f"License-Expression MIT, rcmdp = rcmdp_exact._entry:main")


def version_of_checkout() -> str:
    text = (ROOT / PACKAGE / "__init__.py").read_text("utf-8")
    return re.search(r'^__version__ = "([^"]+)"$', text, re.M)[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rcmdp-release-"))
    print(f"check_release: working in {tmp}")
    try:
        t0 = step("1. python -m build: the sdist and the wheel, without a warning")
        source = project_files()  # before the build adds its own folders
        build(tmp / "dist")
        done(t0)
        t0 = step("2. what the sdist and the wheel hold")
        version = version_of_checkout()
        (sdist,) = (tmp / "dist").glob("*.tar.gz")
        (wheel,) = (tmp / "dist").glob("*.whl")
        check_sdist(sdist, source)
        check_wheel(wheel, source, version)
        done(t0)
        t0 = step("3. a new environment with the wheel alone")
        venv = tmp / "venv"
        run([sys.executable, "-m", "venv", str(venv)], cwd=tmp)
        run([venv / "bin" / "python", "-m", "pip", "install", "-q", str(wheel)], cwd=tmp)
        done(t0)
        work = tmp / "work"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["MPLBACKEND"] = "Agg"
        t0 = step(f"4. from {work}: the main job, the suite's certificates, the doctests")
        out = subprocess.run([venv / "bin" / "rcmdp", "--version"], cwd=work, env=env,
                             capture_output=True, text=True).stdout.strip()
        if out != f"rcmdp_exact {version}":
            fail(f"rcmdp --version printed {out!r}, not 'rcmdp_exact {version}'")
        print(f"   rcmdp --version: {out}")
        t1 = time.perf_counter()
        run(["rcmdp", "reproduce", "--quick", "--no-progress"], cwd=work, env=env)
        if not (work / "reproduction" / "report.md").is_file():
            fail("rcmdp reproduce --quick wrote no reproduction/report.md")
        done(t1)
        t1 = time.perf_counter()
        run([venv / "bin" / "python", "-c", DOCTEST_SCRIPT], cwd=work, env=env)  # doctests
        done(t1)
        t1 = time.perf_counter()
        names = subprocess.run(
            [venv / "bin" / "python", "-c", "from rcmdp_exact.suite import NAMES; "
             "print(*NAMES)"], cwd=work, env=env, capture_output=True, text=True,
            check=True).stdout.split()
        plain = [n for n in names if n not in SUITE_NEEDS_GYMNASIUM]
        run(["rcmdp", "suite", "verify", "--no-progress", *plain], cwd=work, env=env)
        done(t1)
        gym = [n for n in names if n in SUITE_NEEDS_GYMNASIUM]
        if gym:
            t1 = step(f"5. Gymnasium added: rcmdp suite verify {' '.join(gym)}")
            run([venv / "bin" / "python", "-m", "pip", "install", "-q", "gymnasium>=1.0"],
                cwd=tmp)
            run(["rcmdp", "suite", "verify", "--no-progress", *gym], cwd=work, env=env)
            done(t1)
    finally:
        if args.keep:
            print(f"check_release: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\ncheck_release: the sdist and the wheel are complete, and the wheel alone runs "
          "the main job, the suite's verification and the doctests")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The package's structure: the public/private boundary and what importing it costs."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rcmdp_exact

PACKAGE = Path(rcmdp_exact.__file__).parent


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ImportFrom reads from."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def test_no_private_name_is_imported_from_another_module():
    """A name starting with "_" belongs to its module (modules named _x may be imported)."""
    offenders = []
    for path in _modules():
        module = _module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _resolve(node, module, path.name == "__init__.py")
            if not source.startswith("rcmdp_exact") or source == module:
                continue
            for alias in node.names:
                name = alias.name
                target = f"{source}.{name}"
                is_module = (PACKAGE.parent / target.replace(".", "/")).with_suffix(
                    ".py").exists() or (PACKAGE.parent / target.replace(".", "/")).is_dir()
                dunder = name.startswith("__") and name.endswith("__")
                if name.startswith("_") and not dunder and not is_module:
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} "
                                     f"imports {name} from {source}")
    assert not offenders, "\n".join(offenders)


def test_the_checker_sees_a_private_import(tmp_path):
    """The rule above can fail: a planted private import is found."""
    tree = ast.parse("from .model import _secret\nfrom . import _checks\n")
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    assert names == ["_secret", "_checks"]
    resolved = _resolve(tree.body[0], "rcmdp_exact.robust", False)
    assert resolved == "rcmdp_exact.model"  # textual: .model from the package robust


@pytest.mark.parametrize("heavy", ["cvxpy", "matplotlib", "numba", "dask", "distributed",
                                   "joblib", "gymnasium", "hypothesis", "pandas"])
def test_importing_the_package_and_its_command_line_stays_light(heavy):
    """Heavy libraries are imported where they are used, so `rcmdp --help` is quick."""
    code = (f"import sys, rcmdp_exact, rcmdp_exact.cli; rcmdp_exact.cli.build_parser(); "
            f"print({heavy!r} in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("package", ["rcmdp_exact", "rcmdp_exact.uncertainty",
                                     "rcmdp_exact.protocol", "rcmdp_exact.planners",
                                     "rcmdp_exact.testing", "rcmdp_exact.interop",
                                     "rcmdp_exact.domains"])
def test_public_names_resolve(package):
    """A package's public names come from one table: ``__all__`` lists each name once,
    ``dir()`` shows every one, and every one resolves (in a fresh interpreter, so that
    the lazy tables are what answers, not a name an earlier test imported)."""
    code = ("import importlib, sys\n"
            f"pkg = importlib.import_module({package!r})\n"
            "names = list(pkg.__all__)\n"
            "assert len(names) == len(set(names)), 'a name twice in __all__'\n"
            "missing = sorted(set(names) - set(dir(pkg)))\n"
            "assert not missing, f'not in dir(): {missing}'\n"
            "bad = [n for n in names if getattr(pkg, n, None) is None]\n"
            "assert not bad, f'does not resolve: {bad}'\n"
            "print(len(names))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 0


def _public_modules() -> list[str]:
    """The package and every public module in it (no ``_`` part in its dotted name)."""
    import pkgutil

    import rcmdp_exact

    return ["rcmdp_exact"] + [m.name for m in pkgutil.walk_packages(rcmdp_exact.__path__,
                                                                    "rcmdp_exact.")
                              if not any(p.startswith("_") for p in m.name.split("."))
                              and m.name != "rcmdp_exact.__main__"]


def test_every_public_function_and_class_is_documented():
    """Every function and class in a public module's ``__all__`` has a docstring (the API
    pages are built from them)."""
    import importlib
    import inspect

    bare = []
    for name in _public_modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            obj = getattr(module, attr, None)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and not (
                    obj.__doc__ or "").strip():
                bare.append(f"{name}.{attr}")
    assert not bare, f"public names without a docstring: {bare}"


def test_the_top_level_names_are_one_table():
    """``rcmdp_exact.__all__`` is the table ``_EXPORTS``, ``__version__`` and the set
    classes of the built-in kinds: nothing else keeps a list of the public names."""
    from rcmdp_exact.uncertainty.kinds import kind_files

    table = set(rcmdp_exact._EXPORTS)
    classes = {info.cls for info in kind_files().values()}
    assert set(rcmdp_exact.__all__) == table | classes | {"__version__"}
    assert not hasattr(rcmdp_exact, "_STATIC_ALL")
    assert "L1Ball" in rcmdp_exact.__all__ and "estimate" in rcmdp_exact.__all__


def test_the_light_vocabulary_matches_the_registries():
    """The command line builds its choices from rcmdp_exact.names; the registries that
    do the work must list the same names in the same order."""
    from rcmdp_exact import names
    from rcmdp_exact.domains import PAPER_DOMAINS
    from rcmdp_exact.ground_truth import VARIANTS
    from rcmdp_exact.learners import ALGORITHMS

    assert tuple(ALGORITHMS) == names.ALGORITHMS
    assert tuple(VARIANTS) == names.VARIANTS
    assert tuple(PAPER_DOMAINS) == names.PAPER_DOMAINS


def test_the_light_kinds_are_the_registered_kinds():
    """The command line reads the built-in kinds from the files' KIND lines without
    importing them; the classes that register themselves must say the same: each kind
    names its class, and a kind is estimated exactly when its class builds it from
    counts."""
    from rcmdp_exact.uncertainty import kinds, registered_kinds

    registry = registered_kinds()
    builtin = {k: c for k, c in registry.items()
               if c.__module__.startswith("rcmdp_exact.uncertainty.")}
    files = kinds.kind_files()
    assert list(files) == list(builtin)
    assert next(iter(files)) == rcmdp_exact.names.DEFAULT_SET_KIND
    for kind, info in files.items():
        cls = builtin[kind]
        assert cls.kind == kind and cls.__name__ == info.cls
        assert cls.__module__ == "rcmdp_exact.uncertainty" + info.module
        assert info.estimated == cls.has_counts_builder(), kind
        assert getattr(rcmdp_exact, info.cls) is cls  # a public name of the package
    assert kinds.builtin_kinds(estimated=True) == tuple(
        k for k in files if builtin[k].has_counts_builder())


def test_the_kind_scan_reads_a_new_file(tmp_path, monkeypatch):
    """A file with a KIND line is a built-in kind: the scan finds it, its class and
    whether it is estimated, with no list to edit (and refuses a KIND without its
    class)."""
    from rcmdp_exact.uncertainty import kinds

    (tmp_path / "chi2.py").write_text(
        'KIND = "chi2"\n\n\nclass Chi2Ball(Base):\n    """A set."""\n\n    kind = KIND\n\n'
        '    @classmethod\n    def from_counts(cls, counts, *, delta, hoeffding_l1):\n'
        '        return None\n')
    (tmp_path / "helper.py").write_text("X = 1\n")
    monkeypatch.setattr(kinds, "__file__", str(tmp_path / "kinds.py"))
    kinds.kind_files.cache_clear()
    try:
        assert kinds.kind_files() == {"chi2": kinds.KindFile("chi2", ".chi2", "Chi2Ball",
                                                             True)}
        (tmp_path / "bad.py").write_text('KIND = "bad"\n\nclass Bad:\n    pass\n')
        kinds.kind_files.cache_clear()
        with pytest.raises(RuntimeError, match="bad"):
            kinds.kind_files()
    finally:
        kinds.kind_files.cache_clear()


#: Reads of a set's inside: its radii, weights, bounds, members or private fields.
INSIDE = re.compile(r"\.(alpha|kernels|weights)\b|\b(uset|kl|box)\.(radius|lower|upper|"
                    r"with_alpha|with_radius|_[a-z]\w*)\b")


def test_no_code_outside_the_sets_reads_their_inside():
    """Outside rcmdp_exact.uncertainty a set is used through its protocol (nominal,
    support, worst_case, bellman_max_min, members, contains, distance, save/load); the
    compiled learners take the L1 ball's rows from the ball itself (L1Ball.rows())."""
    found = []
    for path in _modules():
        if "uncertainty" in path.relative_to(PACKAGE).parts:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if INSIDE.search(line):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)
    assert INSIDE.search("r = est.uset.alpha[0]") and INSIDE.search("uset.radius")
    assert not INSIDE.search("pb.rows.radius[live]") and not INSIDE.search("br.lower")


def test_lp_solves_print_nothing():
    """HiGHS prints a banner on its first use in a process; the toolkit's LPs (the CMDP
    LP and the inner problem by LP) must leave the user's output clean."""
    code = ("import numpy as np, rcmdp_exact as rx\n"
            "m = rx.domains.garnet(4, 2, 2, n_constraints=1, seed=0)\n"
            "rx.solve_cmdp(m)\n"
            "uset = rx.l1_ball(m, 0.2)\n"
            "rx.robust_evaluate(m, np.full((4, 2), 0.5), uset, inner='lp')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE.parent)
    assert out.stdout == "", out.stdout


def test_every_public_module_is_an_attribute_of_a_fresh_package():
    """``import rcmdp_exact`` and then ``rcmdp_exact.ground_truth.solve_cmdp`` (any public
    module or subpackage, any of its names) works without importing the module first."""
    mods = sorted(p.stem for p in PACKAGE.iterdir() if not p.name.startswith("_")
                  and (p.suffix == ".py" or (p / "__init__.py").exists())
                  and p.stem not in ("reports", "inner", "cli"))
    code = ("import rcmdp_exact, warnings\n"
            "warnings.simplefilter('error')\n"
            "print(rcmdp_exact.ground_truth.solve_cmdp.__name__)\n"
            + "".join(f"assert rcmdp_exact.{m}.__name__ == 'rcmdp_exact.{m}'\n" for m in mods))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "solve_cmdp"


@pytest.mark.slow
def test_the_suite_passes_beside_the_main_jobs_output(tmp_path):
    """The README's two commands run in one folder, the main job first: a test that looked
    at the working folder would see ./reproduction.  The bad-arguments test, run from a
    folder that holds a reproduction/, still passes."""
    (tmp_path / "reproduction").mkdir()
    (tmp_path / "reproduction" / "runs.sqlite").write_text("from the main job")
    test = PACKAGE.parent / "tests" / "test_experiments_sweeps.py"
    # -n 0: one process (workers and the numba warm-up would cost more than the test)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p",
                          "no:cacheprovider", f"{test}::test_bad_arguments_fail_before_any_work"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:]
    assert (tmp_path / "reproduction" / "runs.sqlite").read_text() == "from the main job"


def test_lp_tolerances_are_written_in_one_place():
    """The solvers' options live in ``_solvers``, for every solver of the package (the
    sets' cross-checks included)."""
    words = ("primal_feasibility_tolerance", "tol_gap_abs", "tol_feas")
    found = [str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
             if path.name != "_solvers.py"
             and any(w in path.read_text(encoding="utf-8") for w in words)]
    assert found == []


def test_hypothesis_keeps_its_files_outside_the_folder_the_suite_starts_from(pytestconfig):
    """The example database and hypothesis's caches would be ./.hypothesis of the user's
    folder; conftest moves them under the system's temporary folder."""
    from hypothesis.configuration import storage_directory

    start = Path(pytestconfig.invocation_params.dir).resolve()
    where = Path(storage_directory("examples", intent_to_write=False).path).resolve()
    assert start != where and start not in where.parents, where


@pytest.mark.parametrize("writes", [True, False])
def test_a_run_that_writes_into_the_checkout_fails(tmp_path, writes):
    """tests/conftest.py compares the checkout's files before and after a run: a copy of
    it in a checkout of its own, beside a test that writes a file next to itself, makes
    the run fail and names the file; the same test writing under tmp_path passes."""
    tests = tmp_path / "checkout" / "tests"
    tests.mkdir(parents=True)
    (tests / "conftest.py").write_text(
        (PACKAGE.parent / "tests" / "conftest.py").read_text("utf-8"), "utf-8")
    where = "Path(__file__).parent" if writes else "tmp_path"
    (tests / "test_one.py").write_text(
        "from pathlib import Path\n\n\n"
        "def test_one(tmp_path):\n"
        f"    ({where} / 'left.txt').write_text('x')\n", "utf-8")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-n", "0", str(tests)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    if writes:
        assert out.returncode == 1, out.stdout[-2000:]
        assert "new file(s) into the checkout" in out.stdout
        assert "tests/left.txt" in out.stdout
    else:
        assert out.returncode == 0, out.stdout[-2000:]
        assert "into the checkout" not in out.stdout


def test_the_entry_installs_its_handlers_before_the_command_line_is_imported():
    """``rcmdp`` (the console script) and ``python -m rcmdp_exact`` enter through
    ``rcmdp_exact._entry:main``, which answers a signal while the command line loads:
    importing it loads no module of the command line and nothing heavy (its handlers
    would come too late otherwise), and its ``main`` as a program installs them, while
    with ``argv`` it leaves the caller's handlers alone."""
    import tomllib

    scripts = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"][
        "scripts"]
    assert scripts == {"rcmdp": "rcmdp_exact._entry:main"}
    code = ("import sys, signal, contextlib; import rcmdp_exact._entry as e\n"
            "before = signal.getsignal(signal.SIGINT)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('rcmdp_exact.cli', "
            "'numpy', 'argparse'))))\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(sys.stderr):\n"
            "    e.main(['--version'])\n"
            "print(signal.getsignal(signal.SIGINT) is before)")  # (SIG_IGN if inherited)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    loaded, untouched = out.stdout.split("\n")[:2]
    assert loaded == "[]" and untouched == "True", out.stdout
    main = (PACKAGE / "__main__.py").read_text()
    assert "from ._entry import main" in main and "from .cli" not in main


def _inner_pytest(*args, env=None) -> subprocess.CompletedProcess:
    """``python -m pytest ARGS`` in the checkout, one process, no cache (the conftest's
    own rules apply: the run fails if it left a file in the checkout)."""
    import os

    env = {**{k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"},
           **(env or {})}
    return subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider",
                           *args], capture_output=True, text=True, cwd=PACKAGE.parent,
                          env=env, timeout=600)


def test_the_slow_tests_are_left_out_unless_asked_for_or_named():
    """The everyday command leaves out the tests marked slow (tests/conftest.py
    ``runs_slow``); ``-m slow`` and the thorough profile take them, and a slow test named
    as ``path::test`` runs."""
    slow = "tests/test_structure.py::test_the_suite_passes_beside_the_main_jobs_output"
    fast = "tests/test_structure.py::test_the_top_level_names_are_one_table"

    def collected(*args, env=None) -> set:
        out = _inner_pytest("--collect-only", "-q", *args, env=env)
        return {line.strip() for line in out.stdout.splitlines() if "::" in line}

    everyday = collected("tests/test_structure.py")
    assert fast in everyday and slow not in everyday
    assert slow in collected("-m", "slow", "tests/test_structure.py")
    assert slow in collected("tests/test_structure.py",
                             env={"HYPOTHESIS_PROFILE": "thorough"})
    assert collected(slow) == {slow}


def test_cpu_times_writes_each_tests_seconds(tmp_path):
    """``--cpu-times FILE``: a tab-separated line per test (node id, CPU seconds > 0) and
    the total in the summary."""
    fast = "tests/test_structure.py::test_the_top_level_names_are_one_table"
    out = _inner_pytest(fast, "--cpu-times", str(tmp_path / "cpu.tsv"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    lines = (tmp_path / "cpu.tsv").read_text().splitlines()
    assert len(lines) == 1
    nodeid, seconds = lines[0].split("\t")
    assert nodeid == fast and float(seconds) > 0.0
    assert "CPU seconds of the tests:" in out.stdout and "in 1 tests" in out.stdout


def _numba_functions() -> set[str]:
    """``module.function`` of every function the package compiles and caches with numba
    on its own: decorated by ``numba.njit`` or by a module-level alias of it (``_jit =
    numba.njit(...)``), except those inlined into their callers (``inline="always"``)."""
    out = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        aliases = {t.id for node in tree.body if isinstance(node, ast.Assign)
                   for t in node.targets if isinstance(t, ast.Name)
                   and "njit" in ast.unparse(node.value)
                   and "inline" not in ast.unparse(node.value)}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    ("njit" in ast.unparse(d) and "inline" not in ast.unparse(d))
                    or ast.unparse(d).split("(")[0] in aliases
                    for d in node.decorator_list):
                out.add(f"{path.stem}.{node.name}")
    return out


@pytest.mark.slow
def test_the_warm_up_compiles_every_numba_function(tmp_path):
    """The test command's warm-up (tests/conftest.py ``_WARM_UP``) runs without an error
    and compiles every numba function of the package, so that no worker compiles one a
    second time; a function it misses is named (add a call that reaches it)."""
    import os

    from conftest import _WARM_UP

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-c", _WARM_UP, str(tmp_path / "done")],
                         capture_output=True, text=True, env=env, timeout=1200)
    assert run.returncode == 0 and (tmp_path / "done").exists(), run.stderr[-3000:]
    cached = {p.name.rsplit("-", 1)[0] for p in (tmp_path / "cache").rglob("*.nbi")}
    wanted = _numba_functions()
    assert len(wanted) > 25, wanted  # the scan finds the package's compiled functions
    assert wanted <= cached, sorted(wanted - cached)

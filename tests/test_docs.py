"""The documentation stays true: its code runs, what it names exists, and it builds.

* The documentation build (README command 3) runs every ``python`` code block of the
  pages of ``docs/_ext/rcmdp_page_code.py`` (``RUN_PAGES``), in order, in one namespace
  per page, in a folder of its own, and checks that what a page says the code prints is
  printed; the test command checks that checker on small pages (each fault named), and
  ``python -m pytest -m docs`` runs the pages themselves in pytest.
* Every test (``tests/test_x.py::name``), benchmark script and ``rcmdp`` subcommand
  option a page names exists.
* The pages cite no file outside the repository (the protocol facts live in
  ``docs/protocol.md``).
* The checks that the documentation build runs on the built site
  (``docs/_ext/rcmdp_site_checks.py``: every tutorial executed, MathJax offline, the
  command line complete) catch each fault.  The site itself is built, the tutorials
  executed and the pages' code run by that command, not by the test command.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md")) + sorted((DOCS / "tutorials").glob("*.md"))
#: The pages that describe the current version: all but the history of the development
#: (docs/history.md), which names the options and tests of its time.
CURRENT_PAGES = [p for p in PAGES if p.name != "history.md"]
TEXT_PAGES = [*PAGES, ROOT / "README.md", *sorted((ROOT / "notebooks").glob("*"))]


def _ext(name: str):
    """A module of the documentation build's extensions (docs/_ext)."""
    import importlib

    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(DOCS / "_ext"))


def _page_code():
    """The documentation build's extension that runs the pages' code."""
    return _ext("rcmdp_page_code")


@pytest.mark.docs
@pytest.mark.parametrize("name", _page_code().RUN_PAGES)
def test_code_blocks_run(name, tmp_path):
    """What the documentation build runs at its end (README command 3), in pytest."""
    pc = _page_code()
    text = pc.page_path(DOCS, name).read_text("utf-8")
    assert pc.blocks(text), f"{name} has no python block"
    problems, _ = pc.run_page(text, name, tmp_path)
    assert not problems, problems


GOOD_PAGE = """\
% file: helper_mod.py
```python
VALUE = 41
```

```python
import helper_mod
x = helper_mod.VALUE + 1
print('x:', x)
```

% skip-test: needs a cluster
```python
raise SystemExit('must not run')
```

```python
print(f'label: {1e-9 * x / 42}')
```

prints

```text
x: 42
label: 1.2e-09
```
"""


def test_the_page_code_check_runs_blocks_in_order_and_names_each_fault(tmp_path):
    """The build's check of the pages' code (docs/_ext/rcmdp_page_code.py), on small
    pages: a good page passes (its module file imported, its skipped block not run, a
    rounding-level number matched); a block that raises, a stated output not printed,
    and a module of one page imported by the next are each caught and named."""
    pc = _page_code()
    for sub in "abcd":
        (tmp_path / sub).mkdir()
    problems, printed = pc.run_page(GOOD_PAGE, "good.md", tmp_path / "a")
    assert problems == [] and printed[0] == "x: 42", (problems, printed)
    assert "helper_mod" not in sys.modules  # forgotten after the page
    raises = "```python\nx = 1\n```\n\n```python\n1 / 0\n```\n\n```python\nprint('never')\n```\n"
    problems, printed = pc.run_page(raises, "raises.md", tmp_path / "b")
    assert len(problems) == 1, problems
    assert "raises.md, python block 2 raised ZeroDivisionError" in problems[0]
    assert printed == []  # the blocks after a failure build on it: not run
    problems, _ = pc.run_page("```python\nprint('x: 41')\n```\n\nprints `x: 42`\n", "wrong.md",
                              tmp_path / "c")
    assert len(problems) == 1 and "wrong.md says the code prints 'x: 42'" in problems[0]
    problems, _ = pc.run_page("```python\nimport helper_mod\n```\n", "next.md", tmp_path / "d")
    assert len(problems) == 1 and "ModuleNotFoundError" in problems[0], problems
    assert not pc.same_output("label: 1e-3", "label: 1.1e-3")  # only rounding-level numbers
    assert pc.same_output("label: 1e-9", "label: 3e-9")


#: The import name of each third-party module a page may import, and its distribution.
DISTRIBUTION = {"mdptoolbox": "pymdptoolbox", "sklearn": "scikit-learn"}


def _docs_install() -> set[str]:
    """The distributions README command 3 installs: the core's and the docs extra's."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    names = project["dependencies"] + project["optional-dependencies"]["docs"]
    return {re.split(r"[<>=!~\[ ;]", n, maxsplit=1)[0].lower() for n in names}


def _page_imports(text: str) -> set[str]:
    """The top-level modules that a page's run blocks import, less the standard
    library, the toolkit and the page's own module files."""
    import ast

    pc = _page_code()
    found, own = set(), {"rcmdp_exact"}
    for code, skipped, file in pc.blocks(text):
        if file:
            own.add(file.removesuffix(".py"))
        if skipped or file:
            continue
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                found.add(node.module.split(".")[0])
    return found - own - set(sys.stdlib_module_names)


def test_the_docs_extra_installs_what_the_pages_code_imports():
    """README command 3 installs only ``.[docs]`` and runs the pages' code: every module
    a run page imports is a core dependency or in the docs extra (a page importing
    quantecon, pandas or mdptoolbox failed CI's documentation build when they were only
    in the test extra).  The check itself is checked on a planted import."""
    pc = _page_code()
    have = _docs_install()
    assert "numpy" in have and "sphinx" in have
    missing = {}
    for name in pc.RUN_PAGES:
        for mod in _page_imports(pc.page_path(DOCS, name).read_text("utf-8")):
            if DISTRIBUTION.get(mod, mod).lower() not in have:
                missing.setdefault(name, []).append(mod)
    assert not missing, f"add to the docs extra of pyproject.toml: {missing}"
    planted = "```python\nimport sklearn.linear_model\nfrom os import path\n```\n"
    assert _page_imports(planted) == {"sklearn"}
    assert DISTRIBUTION["sklearn"] not in have


def test_named_tests_and_scripts_exist():
    missing = []
    for page in CURRENT_PAGES:
        text = page.read_text("utf-8")
        for path, name in re.findall(r"(tests/test_\w+\.py)(?:::\s*(\w+))?", text):
            file = ROOT / path
            if not file.exists():
                missing.append(f"{page.name}: {path}")
            elif name and not re.search(rf"^\s*(async )?def {name}\b", file.read_text("utf-8"),
                                        re.M):
                missing.append(f"{page.name}: {path}::{name}")
        for path in re.findall(r"benchmarks/\w+\.(?:py|md)", text):
            if not (ROOT / path).exists():
                missing.append(f"{page.name}: {path}")
    assert not missing, missing


def test_named_command_options_exist():
    from rcmdp_exact.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = sub.choices
    wrong = []
    for page in [*CURRENT_PAGES, ROOT / "README.md"]:
        for line in page.read_text("utf-8").splitlines():
            for m in re.finditer(r"\brcmdp ([a-z][a-z-]*)((?: --?[a-z][a-z-]*(?: [\w.|]+)?)*)",
                                 line):
                command, options = m[1], m[2]
                if command not in commands:
                    if command in {"exact", "verify", "evaluate"}:
                        continue
                    wrong.append(f"{page.name}: rcmdp {command}")
                    continue
                known = {o for a in commands[command]._actions for o in a.option_strings}
                for opt in re.findall(r"--?[a-z][a-z-]*", options):
                    if opt not in known:
                        wrong.append(f"{page.name}: rcmdp {command} {opt}")
    assert not wrong, wrong


#: Pages that still cite the protocol file by name; each is fixed where it is written,
#: and then its entry must go (the mark is strict: a fixed page fails until removed).
CITES_PROTOCOL_FILE: set[str] = set()


@pytest.mark.parametrize("page", [
    pytest.param(p, id=p.name, marks=[pytest.mark.xfail(
        strict=True, reason=f"{p.name} still cites PROTOCOL.md: link docs/protocol.md")]
        if p.name in CITES_PROTOCOL_FILE else [])
    for p in TEXT_PAGES if p.is_file() and p.suffix in {".md", ".py"}])
def test_no_citation_of_files_outside_the_repository(page):
    """The protocol facts the docs rely on live in docs/protocol.md, not in a file
    that is not in the repository."""
    found = re.findall(r".{0,30}(?:PROTOCOL|shared/|/work/).{0,30}", page.read_text("utf-8"))
    assert not found, f"{page.name} cites {found}; link docs/protocol.md instead"


def _site_checks():
    """The documentation build's checks of the built site."""
    return _ext("rcmdp_site_checks")


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    html = tmp_path / "html"
    for name, text in pages.items():
        (html / name).parent.mkdir(parents=True, exist_ok=True)
        (html / name).write_text(text, "utf-8")
    return html


MATHJAX = '<script defer="defer" src="_static/mathjax/tex-chtml.js"></script>'


def test_the_site_checks_pass_a_good_site_and_name_each_fault(tmp_path):
    """The checks the documentation build runs on the site (docs/_ext/rcmdp_site_checks.py,
    README command 3): silent on a good site, and each fault named."""
    checks = _site_checks()
    good = {"_static/mathjax/tex-chtml.js": "", "sets.html": MATHJAX,
            "cli.html": "rcmdp verify rcmdp reproduce rcmdp suite --tol",
            "tutorials/01_a.html": "<p>out</p>", "tutorials/02_b.html": "<p>out</p>"}
    html = _site(tmp_path / "good", good)
    ran = {"01_a": {"succeeded": True}, "02_b": {"succeeded": True}}
    assert checks.check_tutorials(html, ["01_a", "02_b"], ran) == []
    assert checks.check_tutorials(html, ["01_a", "02_b"], None) == []  # execution off
    assert checks.check_offline_maths(html) == []
    assert checks.check_cli_page(html) == []

    bad = dict(good)
    del bad["tutorials/02_b.html"]
    bad["tutorials/01_a.html"] = "<pre>Running HiGHS 1.8</pre>"
    bad["sets.html"] = '<script src="https://cdn.example/mathjax/tex-chtml.js"></script>'
    del bad["_static/mathjax/tex-chtml.js"]
    bad["cli.html"] = "rcmdp verify"
    html = _site(tmp_path / "bad", bad)
    tutorials = checks.check_tutorials(html, ["01_a", "02_b", "03_c"],
                                       {"01_a": {"succeeded": False, "error": "boom"}})
    assert any("01_a" in p and "Running HiGHS" in p for p in tutorials)
    assert any("01_a failed: boom" in p for p in tutorials)
    assert any("02_b has no page" in p for p in tutorials)
    assert any("03_c has no page" in p for p in tutorials)
    maths = checks.check_offline_maths(html)
    assert any("no _static/mathjax" in p for p in maths)
    assert any("sets.html does not load MathJax" in p for p in maths)
    assert any("from the network" in p and "cdn.example" in p for p in maths)
    assert len(checks.check_cli_page(html)) == 3  # reproduce, suite, --tol
    html = _site(tmp_path / "unrun", {"tutorials/01_a.html": ""})
    assert checks.check_tutorials(html, ["01_a"], {}) == ["the tutorial 01_a was not executed"]


def test_the_documentation_build_runs_the_site_checks_and_the_tutorials():
    """README command 3 is where the site and the tutorials are tested: its build loads
    the checks, executes the notebooks and fails on a cell that raises."""
    conf = (DOCS / "conf.py").read_text("utf-8")
    assert '"rcmdp_site_checks"' in conf
    assert re.search(r"^nb_execution_mode = \"(cache|force)\"$", conf, re.M)
    assert re.search(r"^nb_execution_raise_on_error = True$", conf, re.M)
    readme = (ROOT / "README.md").read_text("utf-8")
    assert re.search(r"^python3 -m venv .*sphinx-build -W --keep-going -b html docs ", readme,
                     re.M)


def test_every_command_states_its_measured_time_in_its_help():
    """Each subcommand's --help gives its time, and each figure is a row of the measured
    table of docs/cli.md ("Time per command") for that command."""
    import importlib
    import re

    from rcmdp_exact.cli import COMMANDS, build_parser

    table = (DOCS / "cli.md").read_text("utf-8").split("## Time per command")[1]
    table = table.split("```{rcmdp-cli}")[0]
    helps = {name: p.format_help() for name, p in
             build_parser()._subparsers._group_actions[0].choices.items()}
    for mod_name in COMMANDS:
        mod = importlib.import_module(f"rcmdp_exact.cli.{mod_name}")
        flat = re.sub(r"\s+", "", helps[mod.NAME])  # argparse wraps at hyphens too
        assert "idletwo-coremachine" in flat and re.sub(r"\s+", "", mod.TIME) in flat
        figures = re.findall(r"(\d+(?:\.\d+)?) s\b", mod.TIME)
        rows = [r for r in table.splitlines() if r.startswith(f"| `rcmdp {mod.NAME}")]
        assert figures and rows, mod.NAME
        for fig in figures:
            assert any(f"| {fig} s |" in r for r in rows), (mod.NAME, fig)

"""The documentation stays true: its code runs, what it names exists, and it builds.

* Every ``python`` code block of the pages below runs, in order, in one namespace per
  page, in a folder of its own (a block preceded by a MyST comment line
  ``% skip-test: reason`` is skipped; it must say why; a block preceded by
  ``% file: NAME.py`` is a module of the reader's: it is written to that file in the
  folder, which the blocks after it import from, as a reader would), and what a page
  says the code prints (a ``text`` block or an inline literal after the word "prints")
  is what it prints.
* Every test (``tests/test_x.py::name``), benchmark script and ``rcmdp`` subcommand
  option a page names exists.
* The pages cite no file outside the repository (the protocol facts live in
  ``docs/protocol.md``).
* The checks that the documentation build (README command 3) runs on the built site
  (``docs/_ext/rcmdp_site_checks.py``: every tutorial executed, MathJax offline, the
  command line complete) catch each fault.  The site itself is built, and the
  tutorials executed, by that command, not by the test command.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Pages whose code blocks are executed (other pages have their own tests).
RUN_PAGES = ("quickstart", "model", "evaluation", "mdp", "domains", "robust", "sets", "your_set",
             "gradients", "your_learner", "theorems", "results", "README")
PAGES = sorted(DOCS.glob("*.md")) + sorted((DOCS / "tutorials").glob("*.md"))
#: The pages that describe the current version: all but the history of the development
#: (docs/history.md), which names the options and tests of its time.
CURRENT_PAGES = [p for p in PAGES if p.name != "history.md"]
TEXT_PAGES = [*PAGES, ROOT / "README.md", *sorted((ROOT / "notebooks").glob("*"))]

PRINTED = re.compile(r"^prints\n\n```text\n(?P<block>.*?)^```|prints `(?P<inline>[^`]+)`",
                     re.S | re.M)
FENCE = re.compile(r"^(?:(?P<skip>% skip-test:[^\n]+\n)|% file: (?P<file>\w+\.py)\n)?"
                   r"```python\n(?P<code>.*?)^```", re.S | re.M)


def _blocks(page: Path) -> list[tuple[str, bool, str | None]]:
    return [(m["code"], bool(m["skip"]), m["file"])
            for m in FENCE.finditer(page.read_text("utf-8"))]


@pytest.mark.parametrize("name", RUN_PAGES)
def test_code_blocks_run(name, monkeypatch, tmp_path, capsys):
    page = ROOT / "README.md" if name == "README" else DOCS / f"{name}.md"
    blocks = _blocks(page)
    assert blocks, f"{page.name} has no python block"
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": f"docs_{name}"}
    for i, (code, skip, file) in enumerate(blocks):
        if skip:
            continue
        if file:
            (tmp_path / file).write_text(code, "utf-8")
            continue
        try:
            exec(compile(code, f"{page.name} block {i + 1}", "exec"), namespace)
        except Exception as err:  # report the page and the block
            pytest.fail(f"{page.name}, python block {i + 1} raised {type(err).__name__}: {err}")
    printed = capsys.readouterr().out.splitlines()
    for m in PRINTED.finditer(page.read_text("utf-8")):
        for line in (m["block"] or m["inline"]).strip().splitlines():
            assert any(_same_output(line, out) for out in printed), (
                f"{page.name} says the code prints {line!r}: {printed}")


def _same_output(stated: str, printed: str) -> bool:
    """Equal lines; a "label: x" line whose x is a rounding-level error (below 1e-6)
    matches the same label with an x of the same order of magnitude (BLAS and CPU
    change the last digits of such numbers)."""
    if stated == printed:
        return True
    a, b = stated.rpartition(": "), printed.rpartition(": ")
    try:
        x, y = float(a[2]), float(b[2])
    except ValueError:
        return False
    return a[0] == b[0] and 0 < x < 1e-6 and 0 < y < 1e-6 and 0.1 < x / y < 10


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
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import rcmdp_site_checks
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    return rcmdp_site_checks


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

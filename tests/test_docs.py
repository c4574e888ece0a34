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
* The site builds with Sphinx and warnings as errors (notebooks not executed here: the
  notebook tests execute them).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Pages whose code blocks are executed (other pages have their own tests).
RUN_PAGES = ("quickstart", "model", "evaluation", "mdp", "domains", "robust", "sets", "your_set",
             "gradients", "your_learner", "theorems", "results")
PAGES = sorted(DOCS.glob("*.md")) + sorted((DOCS / "tutorials").glob("*.md"))
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
    page = DOCS / f"{name}.md"
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
    for page in PAGES:
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
    for page in [*PAGES, ROOT / "README.md"]:
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


@pytest.mark.slow
@pytest.mark.before_warm_up
def test_site_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    pytest.importorskip("numpydoc")
    pytest.importorskip("furo")
    # the sources are copied: the build writes the tutorials' .ipynb next to the pages,
    # and a test never writes into the checkout
    src = tmp_path / "src"
    shutil.copytree(DOCS, src / "docs", ignore=shutil.ignore_patterns(
        "_build", "[0-9][0-9]_*.ipynb", "__pycache__"))
    shutil.copytree(ROOT / "notebooks", src / "notebooks",
                    ignore=shutil.ignore_patterns(".hypothesis", ".ipynb_checkpoints"))
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-D", "nb_execution_mode=off", "-d", str(tmp_path / "doctrees"),
           str(src / "docs"), str(tmp_path / "html")]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, f"sphinx-build failed:\n{run.stdout}\n{run.stderr}"
    assert (tmp_path / "html" / "cli.html").exists()
    cli = (tmp_path / "html" / "cli.html").read_text("utf-8")
    assert "rcmdp verify" in cli and "--tol" in cli
    # formulas render without a network: MathJax is served from the site itself
    page = (tmp_path / "html" / "sets.html").read_text("utf-8")
    assert "_static/mathjax/tex-chtml.js" in page and "cdn." not in page
    assert (tmp_path / "html" / "_static" / "mathjax" / "tex-chtml.js").is_file()


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

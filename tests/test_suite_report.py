"""The generated blocks of ``docs/suite.md`` and the family pages
(``python -m rcmdp_exact.suite.report``): made from the data file, in place, and the
shipped pages agree with the shipped file (so every figure they state is the file's)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rcmdp_exact import suite
from rcmdp_exact.suite import report

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = [DOCS / "suite.md", *sorted((DOCS / "suite").glob("*.md"))]
SCORES = DOCS / "suite" / "leaderboard.json"


def _small_file(tmp_path, change=None):
    """A copy of the shipped file with ``change(records)`` applied."""
    payload = suite.data()
    payload = json.loads(json.dumps(payload))
    if change is not None:
        change(payload["records"])
    path = tmp_path / "v.json.gz"
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    return path


def test_the_shipped_pages_agree_with_the_shipped_file():
    """Every generated block of the docs is what the shipped data and score files give
    (run ``python -m rcmdp_exact.suite.report --scores docs/suite/leaderboard.json
    docs/suite.md docs/suite/*.md`` after a new file)."""
    proc = subprocess.run([sys.executable, "-m", "rcmdp_exact.suite.report", "--check",
                           "--scores", str(SCORES), *map(str, PAGES)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {m["name"] for p in PAGES for m in report.BLOCK.finditer(p.read_text())}
    assert names == {"regeneration", "table", "tightness", "open", "leaderboard",
                     "summary"}
    assert "{{" not in "".join(p.read_text() for p in PAGES)


def test_render_replaces_each_block_from_the_data_file(tmp_path):
    """A record planted open (relative gap 0.5) appears in the open problems and moves
    the tightness count; the text around the blocks is kept; rendering twice changes
    nothing; --check names a page that differs and leaves it as it was."""
    key = "riverswim-6/l1/0.1"

    def widen(records):
        rec = next(r for r in records if r["key"] == key)
        b = rec["bracket"]
        b.update(upper=b["lower"] + 0.5 * abs(b["lower"]), relative_gap=0.5,
                 gap=0.5 * abs(b["lower"]))

    path = _small_file(tmp_path, widen)
    page = tmp_path / "page.md"
    text = ("intro\n<!-- suite-report: open -->\nSTALE TEXT\n<!-- /suite-report -->\nmiddle\n"
            "<!-- suite-report: tightness -->\n<!-- /suite-report -->\n"
            "<!-- suite-report: summary riverswim-6 -->\n<!-- /suite-report -->\nend\n")
    page.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "rcmdp_exact.suite.report", "--check",
                           "--file", str(path), str(page)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1 and str(page) in proc.stdout
    assert page.read_text() == text
    assert report.main(["--file", str(path), str(page)]) == 0
    new = page.read_text()
    assert new.startswith("intro\n") and "\nmiddle\n" in new and new.endswith("end\n")
    assert "STALE TEXT" not in new
    row = next(ln for ln in new.splitlines() if ln.startswith(f"| {key} "))
    assert "| 0.5 |" in row
    shipped = report.tightness()
    n_before = int(shipped.split("**")[1].split(" of ")[0])
    n_after = int(new.split("**")[1].split(" of ")[0])
    rec = suite.record("riverswim-6", "l1", 0.1)
    assert n_after == n_before - (rec["bracket"]["relative_gap"] <= 0.01)
    assert report.render(new, path) == new


def test_an_unknown_block_and_a_leaderboard_without_scores_are_named(tmp_path):
    with pytest.raises(ValueError, match="'tables'"):
        report.render("<!-- suite-report: tables -->\n<!-- /suite-report -->")
    with pytest.raises(ValueError, match="--scores"):
        report.render("<!-- suite-report: leaderboard -->\n<!-- /suite-report -->")


def test_the_regeneration_paragraph_of_a_snapshot_counts_each_budget(tmp_path):
    """A file written by ``certify --fill`` is said to be a snapshot: how many records
    come from the run and how many from the interim file, and a count per work budget
    that adds up to the file's records; without ``filled`` the paragraph of a whole
    run."""
    payload = json.loads(json.dumps(suite.data()))
    recs = payload["records"]
    keys = [r["key"] for r in recs[:5]]
    payload["filled"] = {"file": "interim.json.gz", "generated": "2026-12-01",
                         "budget": dict(payload["budget"], schedule=[]), "keys": keys}
    for r in recs[:5]:
        r["work"] = dict(r.get("work") or payload["budget"], schedule=[])
    for r in recs[5:]:
        r["work"] = dict(r.get("work") or payload["budget"], schedule=[7, 70])
    path = tmp_path / "snap.json.gz"
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    text = report.regeneration(path)
    assert "snapshot of a certification in progress" in text
    assert f"the {len(recs) - 5} records the run had finished" in text
    assert "the 5 others from the file `interim.json.gz`" in text
    assert "made with the schedule [] (no branch and bound" in text
    assert "5 records with the schedule []" in text
    assert f"{len(recs) - 5} records with the schedule [7, 70]" in text
    # a snapshot filled from an earlier pass (a schedule of its own) is not said to
    # have had no branch and bound
    payload["filled"]["budget"] = dict(payload["budget"], schedule=[2, 20])
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    text = report.regeneration(path)
    assert "made with the schedule [2, 20] (an earlier pass" in text
    assert "no branch and bound" not in text
    del payload["filled"]
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    assert "snapshot" not in report.regeneration(path)


def _open_record(upper_method: str, runs: list) -> dict:
    return {"bracket": {"upper_method": upper_method,
                        "runs": [{"lower": lo, "upper": up} for lo, up in runs]}}


@pytest.mark.parametrize(("method", "runs", "side"), [
    # the branch and bound never cut below the Lagrangian dual: the upper side holds the
    # gap although only the lower side moved (garnet-15x5-s0/l1/0.1 said "lower")
    ("lagrangian", [(12.0, 12.39), (12.09, 12.39)], "upper (the Lagrangian dual, never cut)"),
    ("cap: robust", [(1.0, 2.0), (1.5, 2.0)], "upper (at a cap)"),
    ("branch and bound", [(1.0, 3.0), (1.1, 2.0)], "upper (still falling)"),
    ("branch and bound", [(1.0, 3.0), (2.0, 2.9)], "lower (still rising)"),
    ("branch and bound", [(1.0, 3.0), (1.5, 2.5)], "both"),
    ("branch and bound", [(1.0, 3.0)], "both"),
])
def test_the_side_that_holds_the_gap(method, runs, side):
    assert report.holder(_open_record(method, runs)) == side

"""``rcmdp suite verify`` finds every kind of fault: each test plants one in a copy of the
shipped data file and checks that verify names the record, the field and both numbers
(the stored one and the recomputed one), and passes the untouched records."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

from rcmdp_exact import suite

#: The records the faults are planted in: a bracket of a binding constraint, a record
#: closed at the robust optimum, and a record certified infeasible.
BRACKET, CLOSED, INFEASIBLE = "riverswim-6/l1/0.1", "paper-nav2/l1/0.1", "paper-nav2/s-l1/0.1"


def _payload(keys):
    payload = json.loads(gzip.decompress(suite.DATA_FILE.read_bytes()))
    payload["records"] = [r for r in payload["records"] if r["key"] in keys]
    assert [r["key"] for r in payload["records"]] == sorted(keys, key=list(
        r["key"] for r in suite.data()["records"]).index)
    return payload


def _planted(tmp_path, key, change):
    """A data file of the three records with ``change(record)`` applied to ``key``'s;
    returns (path, the untouched record)."""
    payload = _payload([BRACKET, CLOSED, INFEASIBLE])
    rec = next(r for r in payload["records"] if r["key"] == key)
    original = json.loads(json.dumps(rec))
    change(rec)
    path = tmp_path / "planted.json.gz"
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    return path, original


def _failures(path, key, field):
    res = suite.verify(path=path, progress=False)
    assert not res.success
    assert sorted({f["key"] for f in res.failures}) == [key]
    found = [f for f in res.failures if f["field"] == field]
    assert found, [f["field"] for f in res.failures]
    return found[0]


def test_the_three_records_pass_untouched(tmp_path):
    path, _ = _planted(tmp_path, BRACKET, lambda rec: None)
    res = suite.verify(path=path, progress=False)
    assert res.success and res.checked == 3 and res.infeasible == 1


@pytest.mark.parametrize("field, change, recomputed", [
    # a lower side above its policy's value, and one below it (the 17 records)
    ("bracket.lower", lambda r: r["bracket"].update(lower=r["bracket"]["lower"] + 1e-3),
     lambda o: o["bracket"]["lower"]),
    ("bracket.lower", lambda r: r["bracket"].update(lower=r["bracket"]["lower"] - 0.1),
     lambda o: o["bracket"]["lower"]),
    ("bracket.lower_costs[0]", lambda r: r["bracket"].update(
        lower_costs=[0.5 * r["bracket"]["lower_costs"][0]]),
     lambda o: o["bracket"]["lower_costs"][0]),
    # an upper side below the lower side's exact value, one above a cap
    ("bracket.upper", lambda r: r["bracket"].update(upper=r["bracket"]["lower"] - 0.01),
     lambda o: o["bracket"]["lower"]),
    ("bracket.upper", lambda r: r["bracket"].update(upper=r["caps"]["robust"] + 1.0),
     None),
    ("robust_optimum", lambda r: r.update(robust_optimum=r["robust_optimum"] + 0.01),
     lambda o: o["robust_optimum"]),
    ("nominal_optimum", lambda r: r.update(nominal_optimum=r["nominal_optimum"] - 0.01),
     lambda o: o["nominal_optimum"]),
    ("cmdp_optimum", lambda r: r.update(cmdp_optimum=r["cmdp_optimum"] + 0.01),
     lambda o: o["cmdp_optimum"]),
    ("least", lambda r: r.update(least=[r["least"][0] + 0.5]), lambda o: o["least"][0]),
    ("free", lambda r: r.update(free=[r["free"][0] - 0.5]), lambda o: o["free"][0]),
    ("budget", lambda r: r.update(budget=[r["budget"][0] * 1.5]),
     lambda o: o["budget"][0]),
    ("binds", lambda r: r.update(binds=not r["binds"]), lambda o: o["binds"]),
    ("caps.robust", lambda r: r["caps"].update(robust=r["caps"]["robust"] + 1.0),
     lambda o: o["caps"]["robust"]),
    ("bracket.relative_gap", lambda r: r["bracket"].update(relative_gap=1e-9),
     lambda o: o["bracket"]["relative_gap"]),
])
def test_a_planted_fault_is_named_with_both_numbers(tmp_path, field, change, recomputed):
    path, original = _planted(tmp_path, BRACKET, change)
    planted = json.loads(gzip.decompress(path.read_bytes()))
    rec = next(r for r in planted["records"] if r["key"] == BRACKET)
    f = _failures(path, BRACKET, field)
    stored = rec
    for part in field.replace("[0]", "").split("."):
        stored = stored[part]
    if isinstance(stored, list):
        stored = stored[0]
    assert f["stored"] == stored
    if recomputed is not None:
        want = recomputed(original)
        assert f["recomputed"] == pytest.approx(want, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("what", ["nan", "shape", "not a distribution", "another policy"])
def test_a_wrong_lower_policy_is_named(tmp_path, what):
    def change(rec):
        pol = np.asarray(rec["bracket"]["lower_policy"])
        if what == "nan":
            pol[2, 1] = np.nan
        elif what == "shape":
            pol = pol[:-1]
        elif what == "not a distribution":
            pol[3] = [0.7, 0.7]
        else:  # a robust-feasible policy, but not the one whose value is stored
            pol = np.asarray(rec["least_policy"])
        rec["bracket"]["lower_policy"] = [[None if np.isnan(x) else float(x) for x in row]
                                          for row in pol]
        if what == "nan":
            rec["bracket"]["lower_policy"][2][1] = float("nan")

    path, original = _planted(tmp_path, BRACKET, change)
    f = _failures(path, BRACKET, "bracket.lower" if what == "another policy" else
                  "bracket.lower_policy")
    if what == "nan":
        assert "non-finite" in f["why"] and "shape" not in f["why"]
    elif what == "shape":
        assert f["stored"] == [5, 2] and f["recomputed"] == [6, 2]
    elif what == "not a distribution":
        assert "state 3" in f["why"] and f["stored"] == pytest.approx(1.4)
    else:
        assert f["stored"] == original["bracket"]["lower"]
        assert f["recomputed"] < f["stored"]


def test_a_false_infeasibility_claim_is_refuted(tmp_path):
    """The infeasible record with a budget above its least worst-case cost."""
    def change(rec):
        rec["budget"] = [rec["least"][0] + 0.05]

    path, original = _planted(tmp_path, INFEASIBLE, change)
    f = _failures(path, INFEASIBLE, "bracket.status")
    assert f["stored"] == "infeasible"
    assert f["recomputed"] == pytest.approx(original["least"][0], rel=1e-8)


def test_a_false_no_feasible_policy_claim_is_refuted(tmp_path):
    """With one constraint and the least cost within the budget, the least-cost policy
    is robust-feasible: a record that says no robust-feasible policy exists is wrong."""
    def change(rec):
        rec["bracket"].update(status="no_feasible_policy", lower=None, lower_policy=None,
                              lower_costs=[None], gap=None, relative_gap=None)

    path, original = _planted(tmp_path, BRACKET, change)
    f = _failures(path, BRACKET, "bracket.status")
    assert f["stored"] == "no_feasible_policy"
    assert f["recomputed"] == pytest.approx(original["least"][0], abs=1e-9)


def test_a_free_policy_that_is_not_a_robust_optimum_is_found(tmp_path):
    def change(rec):
        rec["free_policy"] = rec["least_policy"]

    path, _ = _planted(tmp_path, CLOSED, change)
    res = suite.verify(path=path, progress=False)
    fields = {f["field"] for f in res.failures if f["key"] == CLOSED}
    assert "robust_optimum" in fields and not res.success


def test_the_command_line_names_record_field_and_both_numbers(tmp_path):
    path, original = _planted(tmp_path, BRACKET, lambda r: r["bracket"].update(
        lower=r["bracket"]["lower"] + 0.125))
    proc = subprocess.run([sys.executable, "-m", "rcmdp_exact", "suite", "verify", "--file",
                           str(path), "--no-progress"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines()
                if ln.startswith(BRACKET) and "bracket.lower " in ln + " ")
    stored = original["bracket"]["lower"] + 0.125
    assert f"{stored:.10g}" in line and f"{original['bracket']['lower']:.10g}" in line
    assert "1 failed" in proc.stdout


@pytest.mark.parametrize("a, b", [(1.0 + 2**-52, 1.0), (-76.75036271379939, -76.7503627137994),
                                  (3e-300, 3.0000000001e-300)])
def test_a_failure_never_prints_two_equal_numbers(a, b):
    """Under a tolerance of 1e-10 or less (--tol 0), a failing field printed with 10
    digits showed two equal numbers; they are printed with the digits that tell them
    apart, and read back to the numbers themselves."""
    from rcmdp_exact.cli.suite import _apart

    x, y = _apart(a, b)
    assert x != y and float(x) == a and float(y) == b


def test_a_failure_of_a_non_number_prints_it():
    from rcmdp_exact.cli.suite import _apart

    assert _apart([3, 2], [6, 2]) == ("[3, 2]", "[6, 2]")
    assert _apart(None, 1.5) == ("-", "1.5")

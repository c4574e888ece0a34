"""Tests of ``rcmdp evaluate`` against closed forms of the fixed policies.

Safe Navigation with p = 0.8: a deterministic path of k moves takes k geometric waiting
times (mean 1/p each); a step that ends on a cost cell pays, so a path entering one
cost-1 cell pays 1/p in expectation.  Discounted: with phi = p g / (1 - (1-p) g) the
value is -(1 - phi^k) / (1 - g) and a cost cell entered by the first move costs
p / (1 - (1-p) g)^2.
"""

import json
import subprocess
import sys

import pytest

from rcmdp_exact.cli import main

P, G = 0.8, 0.99


def run_json(capsys, *args):
    assert main(["evaluate", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)["domains"]


def rows(res, domain):
    return {r["policy"]: r for r in res[domain]["policies"]}


def budget(d, T, g=G):
    return d * T * (1 - g) / (1 - g**T)


def test_json_all_domains(capsys):
    res = run_json(capsys)
    assert list(res) == ["inventory", "nav1", "nav2"]
    nav1 = rows(res, "nav1")
    # the shortest path goes right first (ties by action order): 8 moves, cost cell (1,0)
    sp_ = nav1["shortest path"]
    assert sp_["value"] == pytest.approx(-8 / P, abs=1e-9)
    assert sp_["costs"][0] == pytest.approx(1 / P, abs=1e-9)
    assert sp_["budget"][0] == pytest.approx(budget(3.0, 200), rel=1e-12)
    assert sp_["overshoot"][0] == pytest.approx(1 / P - budget(3.0, 200), abs=1e-9)
    assert sp_["penalised_return"] == pytest.approx(-8 / P, abs=1e-9)
    phi = P * G / (1 - (1 - P) * G)
    assert sp_["discounted_value"] == pytest.approx(-(1 - phi**8) / (1 - G), rel=1e-10)
    assert sp_["discounted_costs"][0] == pytest.approx(P / (1 - (1 - P) * G) ** 2, rel=1e-10)
    # the cost-free detour of the reference layout has 14 moves
    lc = nav1["least-cost path"]
    assert lc["value"] == pytest.approx(-14 / P, abs=1e-9) and lc["costs"][0] == 0.0

    nav2 = rows(res, "nav2")  # p_success = 1: certain moves
    sp2 = nav2["shortest path"]  # enters (1,0) 0.1, (3,0) 1.0, (4,0) 1.0
    d2 = budget(0.4, 100)
    assert sp2["value"] == pytest.approx(-8.0) and sp2["costs"][0] == pytest.approx(2.1)
    assert sp2["penalised_return"] == pytest.approx(-8.0 - 500 * (2.1 - d2), rel=1e-12)
    lc2 = nav2["least-cost path"]  # (0,0)->(0,3)->(4,3)->(4,4): grey (3,3) only
    assert lc2["value"] == pytest.approx(-8.0) and lc2["costs"][0] == pytest.approx(0.1)
    assert lc2["penalised_return"] == pytest.approx(-8.0)

    inv = rows(res, "inventory")
    nothing = inv["order nothing"]
    assert (nothing["value"], nothing["costs"]) == (0.0, [0.0])  # stock stays 0: nothing sold
    assert nothing["discounted_value"] == pytest.approx(0.0, abs=1e-12)
    assert nothing["budget"][0] == pytest.approx(budget(6.0, 100), rel=1e-12)
    assert set(inv) == {"uniform random", "order nothing", "order up to 3 (ceil mu)",
                        "greedy argmax_a r(s,a)"}
    for r in inv.values():  # R_pen = V - 500 max(0, C - d')
        over = max(0.0, r["costs"][0] - r["budget"][0])
        assert r["penalised_return"] == pytest.approx(r["value"] - 500 * over, rel=1e-12)


def test_domain_and_variant_options(capsys):
    res = run_json(capsys, "--domain", "nav1", "--cost-layout", "paper")
    assert list(res) == ["nav1"]
    # the paper layout frees (1,3): the cost-free detour has 12 moves
    assert rows(res, "nav1")["least-cost path"]["value"] == pytest.approx(-12 / P, abs=1e-9)
    ref = rows(run_json(capsys, "--domain", "inventory"), "inventory")
    rnd = rows(run_json(capsys, "--domain", "inventory", "--demand", "rounded"), "inventory")
    assert ref["uniform random"]["value"] != pytest.approx(rnd["uniform random"]["value"])


def test_text_tables(capsys):
    assert main(["evaluate"]) == 0
    out = capsys.readouterr().out
    for title in ("Inventory Management", "Safe Navigation 1", "Safe Navigation 2"):
        assert title in out
    for col in ("value V_T", "cost C_T", "d'", "overshoot", "R_pen", "disc. value"):
        assert col in out
    line = next(x for x in out.splitlines() if x.strip().startswith("shortest path"))
    assert "-10.000" in line and "1.250" in line and "6.928" in line
    assert "-0.000" not in out


def test_bad_domain_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--domain", "nav3"])
    assert exc.value.code == 2
    assert "invalid choice: 'nav3'" in capsys.readouterr().err


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "rcmdp_exact", "evaluate", "--domain", "nav2"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert "Safe Navigation 2" in out.stdout and "least-cost path" in out.stdout

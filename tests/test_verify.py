"""The verification report: rows, the bias of the printed estimators, the CLI."""

import json

import numpy as np
import pytest
from helpers import raises_fact
from scipy.stats import norm

from rcmdp_exact import TabularCMDP, domains
from rcmdp_exact.cli import main
from rcmdp_exact.core.model_checks import ModelError
from rcmdp_exact.theory.estimators import ESTIMATORS
from rcmdp_exact.theory.verify import (
    COLUMNS,
    VerifyTable,
    expected_exact,
    lagrangian_reward_depends_on_next_state,
    suite_models,
    verify_theorems,
)


def _small_model(seed=0, gamma=0.9, horizon=30):
    rng = np.random.default_rng(seed)
    S, A, K, O = 5, 2, 2, 3
    out = rng.integers(0, S, size=(S, A, O))
    prob = rng.dirichlet(np.ones(O), size=(S, A))
    return TabularCMDP.from_outcomes(
        out, prob, rng.normal(size=(S, A, S)), rng.random((S, A, S, K)), d=[1.0, 1.0],
        gamma=gamma, p0=0, horizon=horizon, state_features=rng.normal(size=(S, 2)),
        name="small")


@pytest.fixture(scope="module")
def suite():
    return {label: (model, lam, kinds, horizons)
            for label, model, lam, kinds, horizons in suite_models(n_random=0)}


def test_rows_have_the_documented_columns_and_exact_theorems():
    table = verify_theorems(_small_model(), [1.0, 2.0], hidden=5, horizons=("model", None))
    assert isinstance(table, VerifyTable)
    n_sampled = sum(not e.exact for e in ESTIMATORS.values())
    n_exact = len(ESTIMATORS) - n_sampled
    assert len(table) == 2 * (n_exact + 2 * n_sampled)  # two forms, two horizons
    for row in table:
        assert set(row) == set(COLUMNS)
    for kind in ("softmax", "mlp"):
        for name in ("theorem1", "theorem2"):
            (row,) = table.select(parametrisation=kind, estimator=name)
            assert row["rel_error"] <= 1e-6
            assert row["cosine"] == pytest.approx(1.0, abs=1e-9)
        # with unbounded episodes the corrected estimators are the theorems
        for name in ("algorithm1_corrected", "theorem2_corrected"):
            (row,) = table.select(parametrisation=kind, estimator=name, horizon="inf")
            assert row["rel_error"] <= 1e-6
        # the printed, undiscounted forms diverge without terminal states
        (row,) = table.select(parametrisation=kind, estimator="algorithm1", horizon="inf")
        assert row["rel_error"] is None and row["note"].startswith("diverges")
    data = json.loads(table.to_json())
    assert data["columns"] == list(COLUMNS)
    assert len(data["rows"]) == len(table)
    text = table.to_text()
    assert text.splitlines()[0].split()[:3] == ["model", "gamma", "horizon"]
    assert "theorem2_printed: Theorem 2 as printed" in text


#: This Monte Carlo check is one of the nine of the test suite that share a joint 99%
#: level (see MC_LEVEL in test_gradients.py): its own family-wise level is 1 - 0.01 / 9.
MC_LEVEL = 1 - 0.01 / 9


def test_printed_theorem2_bias_on_safe_navigation_is_reported_and_confirmed_by_sampling():
    model = domains.paper_domain("nav1")
    table = verify_theorems(model, 1.0, label="nav1", parametrisations=("softmax",),
                            estimators=["theorem2", "theorem2_printed"], n_episodes=3000,
                            mc_level=MC_LEVEL)
    (exact,) = table.select(estimator="theorem2")
    (printed,) = table.select(estimator="theorem2_printed")
    assert exact["rel_error"] <= 1e-6
    assert printed["horizon"] == 200 and printed["r_next_state"] == "yes"
    # the bias is a number in the report ...
    assert printed["rel_error"] > 0.3
    assert any(line.startswith("nav1 [softmax, T=200]: printed Theorem 2 estimator off by")
               for line in table.summary())
    # ... and sampled episodes agree with the exact expectation, not with the gradient
    assert printed["mc_covers"] is True
    assert printed["mc_rel_error"] > 0.3
    # mc_covers is the Bonferroni rule over the five directions
    assert printed["mc_z_max"] <= norm.ppf(1 - (1 - MC_LEVEL) / 10)
    assert printed["mc_episodes"] == 3000


def test_mc_covers_is_the_bonferroni_rule_over_five_directions():
    """mc_covers is mc_z_max <= Phi^-1(1 - (1 - level) / 10), at every level.

    The levels are chosen so that, for any z in [0.26, 3.7], at least one of them
    puts z between the Bonferroni critical value and the uncorrected one
    Phi^-1(1 - (1 - level) / 2): a rule without the correction fails this test.
    """
    model = _small_model()
    zs = set()
    for level in (0.2, 0.5, 0.9, 0.98, 0.995, 0.999):
        t = verify_theorems(model, [1.0, 1.0], parametrisations=("softmax",),
                            estimators=["theorem2_corrected"], n_episodes=200, seed=3,
                            mc_level=level)
        (row,) = t.rows
        zs.add(row["mc_z_max"])
        assert row["mc_covers"] == (row["mc_z_max"] <= norm.ppf(1 - (1 - level) / 10)), level
    (z,) = zs  # same seed, same samples: only the verdict depends on the level
    assert 0.26 < z < 3.7


def test_where_the_printed_estimators_become_exact(suite):
    """R, C on (s, a) and gamma = 1 with episodes ending at the goal: exact.

    With the costs of the cell entered (next-state dependent) the printed Theorem 2
    stays biased at gamma = 1 (the immediate-cost term is missing), while Algorithm 1
    is exact; with gamma = 0.99 both printed forms are biased.
    """
    def run(label, **kw):
        model, lam, kinds, horizons = suite[label]
        return verify_theorems(model, lam, label=label, parametrisations=kinds,
                               horizons=horizons, **kw)

    sa1 = run("nav1 R,C(s,a) g=1")
    assert {r["r_next_state"] for r in sa1} == {"no"}
    for row in sa1:
        assert row["rel_error"] <= 1e-6, row["estimator"]
    assert ("nav1 R,C(s,a) g=1: printed Theorem 2 is exact for T = inf (episodes that end "
            "at a terminal state): gamma = 1 and R_lam does not depend on the next state"
            ) in sa1.notes
    nav_g1 = run("nav1 g=1")
    (printed,) = nav_g1.select(estimator="theorem2_printed")
    assert printed["rel_error"] > 1e-2
    (corrected,) = nav_g1.select(estimator="theorem2_corrected")
    assert corrected["rel_error"] <= 1e-6
    (alg1,) = nav_g1.select(estimator="algorithm1")
    assert alg1["rel_error"] <= 1e-6
    assert any(n.startswith("nav1 g=1: printed Theorem 2 stays biased even at gamma = 1")
               for n in nav_g1.notes)
    sa = run("nav1 R,C(s,a)")
    (printed,) = sa.select(estimator="theorem2_printed", horizon="inf")
    (disc,) = sa.select(estimator="theorem2_discounted", horizon="inf")
    assert printed["rel_error"] > 0.1  # the missing discount
    assert disc["rel_error"] <= 1e-6  # restoring it is enough without next-state rewards
    assert any("restoring the discount (theorem2_discounted) is exact for T = inf" in n
               for n in sa.notes)


def test_next_state_dependence_is_detected():
    nav = domains.paper_domain("nav1")
    assert lagrangian_reward_depends_on_next_state(nav, 1.0)
    assert not lagrangian_reward_depends_on_next_state(
        nav.replace(R=np.asarray(nav.r), C=np.asarray(nav.c)), 1.0)


def test_verify_messages():
    model = _small_model()
    with raises_fact(ModelError, "estimator", "'gpomdp'", "'theorem1'"):
        verify_theorems(model, estimators=["gpomdp"])
    with raises_fact(ModelError, "horizon", ">= 1", "0"):
        verify_theorems(model, horizons=(0,))
    with raises_fact(ModelError, "mc_level", "(0, 1)", "99"):
        verify_theorems(model, mc_level=99)
    with raises_fact(ModelError, "seed", "-3"):
        verify_theorems(model, seed=-3)


def test_rows_expected_exact_are_checked_and_a_failure_is_reported():
    """Every "exact" row gets pass/fail on rel_error <= tol; "biased" rows get "-"."""
    model = _small_model()
    table = verify_theorems(model, parametrisations=("softmax",), horizons=("model", None))
    for row in table:
        if row["expected"] == "diverges":
            assert row["check"] == "-" and "diverges" in row["note"]
            continue
        exact = expected_exact(row["estimator"], None if row["horizon"] == "inf" else 1,
                               model.gamma, row["r_next_state"] == "yes")
        if row["horizon"] == "-" or exact:
            assert row["expected"] == "exact" and row["check"] == "pass", row
        else:
            assert row["expected"] == "biased" and row["check"] == "-", row
    assert table.passed and "checks passed" in table.to_text()
    # a tolerance below what finite differences can reach makes the exact rows fail
    strict = verify_theorems(model, parametrisations=("softmax",), tol=1e-300)
    assert not strict.passed
    assert {r["estimator"] for r in strict.failures} >= {"theorem1", "theorem2"}
    assert "FAILED" in strict.to_text() and json.loads(strict.to_json())["passed"] is False


def test_expected_exact_rule():
    assert expected_exact("theorem1", 5, 0.9, True)
    assert not expected_exact("algorithm1_corrected", 100, 0.99, False)  # truncated
    assert expected_exact("algorithm1_corrected", None, 0.99, True)
    assert expected_exact("algorithm1", None, 1.0, True)
    assert not expected_exact("algorithm1", None, 0.99, False)
    assert expected_exact("theorem2_discounted", None, 0.99, False)
    assert not expected_exact("theorem2_discounted", None, 0.99, True)
    assert expected_exact("theorem2_printed", None, 1.0, False)
    assert not expected_exact("theorem2_printed", None, 1.0, True)


def test_cli_verify_exit_status_is_non_zero_on_a_failed_check(capsys):
    args = ["verify", "--domain", "none", "--random", "1", "--no-variants", "--tabular-only"]
    assert main([*args, "--tol", "1e-300"]) == 1
    assert "FAILED" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main([*args, "--random", "-1"])
    assert exc.value.code == 2


@pytest.mark.slow
def test_cli_verify_runs_and_its_json_parses(capsys):
    assert main(["verify", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    labels = {r["model"] for r in data["rows"]}
    assert {"inventory", "nav1", "nav2", "garnet seed=0", "garnet seed=1"} <= labels
    exact = [r for r in data["rows"] if r["estimator"] in ("theorem1", "theorem2")]
    assert exact and max(r["rel_error"] for r in exact) <= 1e-6
    assert any(s.startswith("nav1 [softmax, T=200]: printed Theorem 2") for s in data["summary"])


def test_cli_verify_text(capsys):
    assert main(["verify", "--domain", "none", "--random", "1", "--no-variants",
                 "--tabular-only"]) == 0
    out = capsys.readouterr().out
    assert "garnet seed=0" in out and "theorem2_corrected" in out

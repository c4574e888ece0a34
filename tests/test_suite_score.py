"""The leaderboard (rcmdp_exact.suite.leaderboard): scores exact against a robust
evaluation written here, shares only for robust-feasible runs and violations apart, a
robust-feasible entrant on every instance, confidence intervals, a user's trainer and
planner under their own names, a failing entrant keeps the finished runs, scores as a
Result (to_frame one row per run, Result.load), the shipped leaderboard recomputed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_suite import _robust

from rcmdp_exact import Result, suite
from rcmdp_exact.suite import leaderboard
from rcmdp_exact.suite.leaderboard import Scores


class _Table:
    """A trainer's result: a fixed policy table."""

    def __init__(self, table):
        self._t = np.asarray(table, dtype=np.float64)
        self.records = {}

    def policy_table(self):
        return self._t


def stored_lower_trainer(model, algorithm, *, uset=None, seed=0, episodes=1, critic=None,
                         gradient=None, inner=None, multiplier_update=None, eval_every=None,
                         true_model=None, progress=None):
    """The stored lower policy of the instance's record (found by its budget)."""
    for name in ("riverswim-6", "chain-10", "forest-10"):
        _, _, rec = suite.load(name, set="l1", level=0.1)
        if rec["S"] == model.n_states and np.allclose(rec["budget"], model.d):
            return _Table(rec["bracket"]["lower_policy"])
    raise AssertionError("unknown model")


def test_a_trainer_under_its_own_name_scores_the_certified_policy_at_share_one():
    res = suite.score(stored_lower_trainer, ["cpg"], ["riverswim-6", "chain-10"],
                      seeds=[0, 1], episodes=1, name="mine", progress=False)
    assert len(res.rows) == 4 and {r["entrant"] for r in res.rows} == {"mine"}
    for row in res.rows:
        assert row["feasible"] and row["violation"] == 0.0 and row["error"] == ""
        assert row["share_lower"] == pytest.approx(1.0, abs=1e-7)
        assert row["share_upper"] <= 1.0 + 1e-9
    assert "mine" in res.table() and res.success


def test_uniform_and_least_cost_match_our_evaluation():
    res = suite.score(None, ["uniform", "least-cost"], ["riverswim-6"], seeds=[0],
                      progress=False)
    model, _, rec = suite.load("riverswim-6")
    R, C = np.asarray(model.R), np.asarray(model.C)[..., 0]
    d = float(model.d[0])
    for row in res.rows:
        pi = np.full((6, 2), 0.5) if row["entrant"] == "uniform" else \
            np.asarray(rec["least_policy"])
        v, _ = _robust(model, R, 0.1, +1, policy=pi)
        c, _ = _robust(model, C, 0.1, -1, policy=pi)
        assert row["worst_value"] == pytest.approx(v, abs=1e-8)
        assert row["worst_costs"][0] == pytest.approx(c, abs=1e-8)
        assert row["violation"] == pytest.approx(max(0.0, c - d), abs=1e-8)
        assert row["feasible"] == (c <= d + 1e-9)
        if row["feasible"]:
            f = rec["floor_value"]
            # the share carries the 1e-8 of the two evaluations over upper - floor
            assert row["share_upper"] == pytest.approx(
                (v - f) / (rec["bracket"]["upper"] - f),
                abs=2e-8 / (rec["bracket"]["upper"] - f))
        else:  # a violating run has no share, its violation is shown apart
            assert row["share_upper"] is None and row["share_lower"] is None
            assert "violates" in row["flag"]


def test_every_scored_instance_has_a_robust_feasible_entrant():
    """The least-cost baseline is robust-feasible on every record that is not
    infeasible (the budget is at least the least worst-case cost)."""
    names = leaderboard.learnable()
    res = suite.score(None, ["least-cost"], names, seeds=[0], progress=False)
    assert all(r["feasible"] for r in res.rows)
    for s in res.summary():
        assert s["feasible"] == 1 and s["share_upper"] is not None
        # 0 and 1 up to the rounding of the floor's and the evaluation's solves
        assert -1e-9 <= s["share_upper"] <= 1.0 + 1e-9


def test_no_share_above_one_without_a_flag():
    """A policy that violates its budget may be worth more than the certified upper side
    (the tabular baseline ignores the set): it gets no share, only its violation."""
    res = suite.score(None, ["tabular"], ["riverswim-6", "frozenlake-4x4"], seeds=[0, 1],
                      episodes=200, progress=False)
    for row in res.rows:
        for side in ("share_lower", "share_upper"):
            assert row[side] is None or row[side] <= 1.0 + 1e-9 or row["flag"]
        if not row["feasible"]:
            assert row["share_upper"] is None and row["violation"] > 0


def test_the_summary_has_t_intervals_over_the_feasible_runs():
    """Ten seeds of a planner whose policy mixes the stored lower policy with the
    least-cost one by a seeded weight, or (every third seed) is the robust optimum, which
    violates the budget of a binding record: the summary's mean and 95% half-width are
    those of the t distribution over the robust-feasible runs (computed here)."""
    from scipy.stats import t

    _, _, rec = suite.load("riverswim-6")
    assert rec["binds"]

    def mix(model, uset, *, seed, episodes, record=None, **options):
        if seed % 3 == 2:
            return np.asarray(rec["free_policy"])
        w = np.random.default_rng(seed).uniform(0.0, 1.0)
        return (1 - w) * np.asarray(rec["bracket"]["lower_policy"]) + \
            w * np.asarray(rec["least_policy"])

    res = suite.score(planner=mix, name="mix", names=["riverswim-6"], seeds=range(10),
                      progress=False)
    feas = [r["share_upper"] for r in res.rows if r["feasible"]]
    assert [r["feasible"] for r in res.rows if r["seed"] % 3 == 2] == [False] * 3
    s = res.summary()[0]
    assert s["seeds"] == 10 and s["feasible"] == len(feas) >= 2
    assert s["share_upper"] == pytest.approx(np.mean(feas))
    half = t.ppf(0.975, len(feas) - 1) * np.std(feas, ddof=1) / np.sqrt(len(feas))
    assert s["share_upper_ci"] == pytest.approx(half)
    assert "+-" in res.table()


def test_a_registered_planner_is_scored_by_name():
    def cheapest(model, uset, *, seed, episodes, record=None, **options):
        return np.asarray(record["least_policy"])

    leaderboard.register("test-cheapest", cheapest, replace=True)
    try:
        res = suite.score(None, ["test-cheapest"], ["chain-10"], seeds=[0, 1],
                          progress=False)
        assert {r["entrant"] for r in res.rows} == {"test-cheapest"}
        assert all(r["feasible"] for r in res.rows)
    finally:
        leaderboard.ENTRANTS.pop("test-cheapest", None)
    with pytest.raises(ValueError, match="unknown entrant 'test-cheapest'"):
        suite.score(None, ["test-cheapest"], ["chain-10"], seeds=[0], progress=False)


def test_a_failing_entrant_keeps_the_finished_runs():
    calls = []

    def flaky(model, uset, *, seed, episodes, record=None, **options):
        calls.append(record["key"])
        if record["instance"] == "forest-10":
            raise RuntimeError("diverged")
        return np.asarray(record["least_policy"])

    res = suite.score(planner=flaky, name="flaky", names=["riverswim-6", "forest-10",
                                                         "chain-10"], seeds=[0, 1],
                      progress=False)
    assert len(res.rows) == 6 and res.failed == 2 and not res.success
    bad = [r for r in res.rows if r["error"]]
    assert {r["instance"] for r in bad} == {"forest-10"}
    assert "RuntimeError: diverged" in bad[0]["error"]
    assert sum(r["feasible"] is True for r in res.rows) == 4  # the others kept
    assert res.summary()[1]["failed"] == 2


def test_a_nan_policy_is_blamed_on_the_nan():
    def nan_policy(model, uset, *, seed, episodes, record=None, **options):
        pi = np.full((model.n_states, model.n_actions), 1.0 / model.n_actions)
        pi[1, 0] = np.nan
        return pi

    res = suite.score(planner=nan_policy, name="nan", names=["riverswim-6"], seeds=[0],
                      progress=False)
    err = res.rows[0]["error"]
    assert "non-finite" in err and "nan" in err and "shape" not in err


def test_scores_are_a_result_one_row_per_run(tmp_path):
    pd = pytest.importorskip("pandas")
    res = suite.score(None, ["uniform", "least-cost"], ["riverswim-6", "chain-10"],
                      seeds=[0, 1, 2], progress=False)
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 12
    assert {"instance", "entrant", "seed", "worst_value", "worst_costs[0]", "feasible",
            "share_upper"} <= set(frame.columns)
    assert "policy" not in frame.columns
    path = res.save(tmp_path / "scores.json")
    back = Result.load(path)
    assert isinstance(back, Scores) and back.rows == res.rows
    assert Scores.load(path).summary() == res.summary()
    # a fresh session that never imported the suite reads it as Scores too
    import subprocess
    import sys

    code = ("import sys\nfrom rcmdp_exact import Result\n"
            f"r = Result.load({str(path)!r})\n"
            "print(type(r).__name__, len(r.rows), len(r.to_frame()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == ["Scores", "12", "12"], out.stderr


def test_score_from_the_command_line_under_a_name(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_suite_trainer.py").write_text(
        "import numpy as np\n"
        "class R:\n"
        "    def __init__(self, S, A):\n"
        "        self.t = np.full((S, A), 1.0 / A); self.records = {}\n"
        "    def policy_table(self):\n"
        "        return self.t\n"
        "def train(model, algorithm, *, uset=None, seed=0, episodes=1, critic=None,\n"
        "          gradient=None, inner=None, multiplier_update=None, eval_every=None,\n"
        "          true_model=None, progress=None):\n"
        "    if model.n_states == 10 and seed == 1:\n"
        "        raise ValueError('boom')\n"
        "    return R(model.n_states, model.n_actions)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from rcmdp_exact.cli import main

    out = tmp_path / "scores.json"
    code = main(["suite", "score", "--trainer", "my_suite_trainer:train", "--name",
                 "my-uniform", "--instances", "riverswim-6,forest-10", "--seeds", "2",
                 "--episodes", "1", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1 and "boom" in captured.err  # the failing run is named
    assert "my-uniform" in captured.out and "forest-10" in captured.out
    rows = Result.load(out).rows  # the finished runs are kept
    assert [r["entrant"] for r in rows] == ["my-uniform"] * 4
    assert [bool(r["error"]) for r in rows] == [False, False, False, True]
    assert np.allclose(rows[0]["policy"], 0.5)


def test_shipped_leaderboard_is_a_result_and_its_scores_are_exact():
    """The leaderboard's stored policies, evaluated here, give its stored scores; it has
    ten seeds and a robust-feasible entrant on every instance."""
    path = Path(__file__).resolve().parents[1] / "docs" / "suite" / "leaderboard.json"
    res = Result.load(path)
    assert isinstance(res, Scores) and res.complete
    assert len(res.settings["seeds"]) == 10
    for s in res.summary():
        if s["entrant"] == "least-cost":
            assert s["feasible"] == s["seeds"]
    seen = 0
    for row in res.rows:
        if row["instance"] not in ("riverswim-6", "chain-10") or row["seed"] != 0 or \
                row["error"]:
            continue
        model, _, _rec = suite.load(row["instance"], set="l1", level=0.1)
        pi = np.asarray(row["policy"])
        v, _ = _robust(model, np.asarray(model.R), 0.1, +1, policy=pi)
        c, _ = _robust(model, np.asarray(model.C)[..., 0], 0.1, -1, policy=pi)
        assert row["worst_value"] == pytest.approx(v, abs=1e-7 * max(1, abs(v)))
        assert row["worst_costs"][0] == pytest.approx(c, abs=1e-7 * max(1, abs(c)))
        seen += 1
    assert seen > 0
    assert json.loads(path.read_text())["result"]["class"] == \
        "rcmdp_exact.suite.leaderboard.Scores"


def test_rescore_against_a_new_file_moves_the_share_and_refuses_a_new_budget(tmp_path):
    """The same runs scored against a file whose upper side is lower: the share grows by
    the ratio of the two (worst value - floor) spans; a file with another budget (the
    runs were trained for the old one) is refused, naming the record."""
    import gzip

    from rcmdp_exact import InputError

    res = suite.score(None, ["least-cost"], ["riverswim-6"], seeds=[0], progress=False)
    row = res.rows[0]
    payload = json.loads(json.dumps(suite.data()))
    rec = next(r for r in payload["records"] if r["key"] == row["key"])
    f, up, lo = rec["floor_value"], rec["bracket"]["upper"], rec["bracket"]["lower"]
    rec["bracket"]["upper"] = lo + 0.5 * (up - lo)
    path = tmp_path / "v.json.gz"
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    again = leaderboard.rescore(res, path)
    want = row["share_upper"] * (up - f) / (rec["bracket"]["upper"] - f)
    assert again.rows[0]["share_upper"] == pytest.approx(want, rel=1e-12)
    assert again.rows[0]["worst_value"] == row["worst_value"]
    rec["budget"] = [rec["budget"][0] * 1.5]
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    with pytest.raises(InputError, match=row["key"]):
        leaderboard.rescore(res, path)


def test_a_built_in_planner_is_an_entrant_of_the_command(tmp_path):
    """``rcmdp suite score --algorithm rnpg`` registers the built-in planner on first use
    (it answered "unknown entrant" when the planners package had been imported before
    the leaderboard) and scores its policy exactly: the row's worst value and cost are
    those of the independent robust evaluation of the stored policy."""
    from rcmdp_exact.cli import main

    out = tmp_path / "planner.json"
    assert main(["suite", "score", "--algorithm", "rnpg", "--instances", "riverswim-6",
                 "--seeds", "1", "--episodes", "5", "--out", str(out), "--no-progress"]) == 0
    res = Result.load(out)
    (row,) = res.rows
    assert row["entrant"] == "rnpg" and row["kind"] == "planner" and not row["error"]
    model, _, _rec = suite.load("riverswim-6")
    pi = np.asarray(row["policy"])
    v, _ = _robust(model, np.asarray(model.R), 0.1, +1, policy=pi)
    c, _ = _robust(model, np.asarray(model.C)[..., 0], 0.1, -1, policy=pi)
    assert row["worst_value"] == pytest.approx(v, abs=1e-8)
    assert row["worst_costs"][0] == pytest.approx(c, abs=1e-8)

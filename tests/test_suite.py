"""The certified benchmark suite (rcmdp_exact.suite): every instance against its cited
definition, the budgets bind (checked by a robust value iteration written here), the
shipped lower sides re-certified by a robust evaluation written here, verify fails on a
tampered file, load() round trip, the command line's refusals, score() on a trainer."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

from rcmdp_exact import suite
from rcmdp_exact.suite.instances import INSTANCES

# --------------------------------------------------------------------------- a robust
# evaluation of our own: the L1 worst case by moving mass to the lowest next value of
# the support from the highest ones, over all (s, a) rows at once


def _worst_l1(p, z, alpha, support):
    """min over q of q.z, ||q - p||_1 <= alpha, q a distribution on ``support``; rows
    (n, S).  Returns (n,)."""
    big = np.abs(z).max() + 1.0
    z_low = np.where(support, z, np.inf)
    lo = np.argmin(z_low, axis=1)
    rows = np.arange(len(p))
    eps = np.minimum(alpha / 2.0, 1.0 - p[rows, lo])
    q = p.copy()
    q[rows, lo] += eps
    donors = p.copy()
    donors[rows, lo] = 0.0
    order = np.argsort(-np.where(support, z, -big * 10), axis=1)  # highest first
    ds = np.take_along_axis(donors, order, axis=1)
    before = np.cumsum(ds, axis=1) - ds
    take = np.clip(eps[:, None] - before, 0.0, ds)
    np.put_along_axis(q, order, np.take_along_axis(q, order, axis=1) - take, axis=1)
    return np.einsum("ns,ns->n", q, z)


def _bellman_rows(m, g, w, alpha, sign):
    """(S, A) adversarial Q: sign = +1 nature minimises g + gamma w, -1 maximises."""
    S, A = m.n_states, m.n_actions
    P = np.asarray(m.P).reshape(S * A, S)
    z = sign * (g.reshape(S * A, S) + m.gamma * w[None, :])
    return sign * _worst_l1(P, z, alpha, P > 0).reshape(S, A)


def _robust(m, g, alpha, sign, policy=None, agent=max, iters=2000, tol=1e-11):
    """Robust value iteration (policy None; agent max or min) or robust evaluation of
    ``policy`` of the per-transition quantity g (S, A, S), nature's direction ``sign``,
    on the L1 ball of radius alpha on the nominal support; terminal states are worth 0."""
    term = np.asarray(m.terminal, dtype=bool)
    w = np.zeros(m.n_states)
    for _ in range(iters):
        q = _bellman_rows(m, g, w, alpha, sign)
        if policy is None:
            new = q.max(axis=1) if agent is max else q.min(axis=1)
        else:
            new = (policy * q).sum(axis=1)
        new[term] = 0.0
        if np.max(np.abs(new - w)) < tol:
            w = new
            break
        w = new
    return float(np.asarray(m.p0) @ w), q


SMALL = ["riverswim-6", "chain-10", "machine-10", "forest-10", "grid-5x5", "frozenlake-4x4",
         "garnet-15x5-s0"]


# --------------------------------------------------------------------------- definitions
def test_names_are_the_instances():
    assert tuple(INSTANCES) == suite.NAMES == tuple(suite.names())
    assert len(suite.names()) >= 12
    for inst in INSTANCES.values():
        assert inst.citation and inst.constraint and inst.support_why
        assert inst.budget_rule in ("halfway", "paper")
        assert inst.bracket or inst.skip_bracket


def test_forest_is_pymdptoolbox_example():
    """The transition and reward tables of mdptoolbox.example.forest with the suite's
    10 age classes."""
    mdptoolbox = pytest.importorskip("mdptoolbox.example")
    m = INSTANCES["forest-10"].build()
    P_ref, R_ref = mdptoolbox.forest(S=10, r1=4, r2=2, p=0.1)
    assert np.allclose(np.transpose(np.asarray(m.P), (1, 0, 2)), P_ref)
    assert np.allclose(np.asarray(m.r), R_ref)
    c = np.asarray(m.c)[..., 0]  # the expected number of fires: p after waiting
    assert np.allclose(c[:, 0], 0.1) and np.allclose(c[:, 1], 0.0)
    assert m.gamma == 0.9


def test_gridworld_slips_as_russell_and_norvig():
    m = INSTANCES["grid-5x5"].build()
    P = np.asarray(m.P)
    # from (0, 0) "up" (0): (0, 1) = state 5 with 0.8; "right" slip to (1, 0) with 0.1;
    # "left" slip into the wall stays with 0.1
    assert P[0, 0, 5] == pytest.approx(0.8)
    assert P[0, 0, 1] == pytest.approx(0.1) and P[0, 0, 0] == pytest.approx(0.1)
    # from (2, 1) = 7 "up": the puddle (2, 2) = 12 with 0.8, slips to 8 and 6
    assert (P[7, 0, 12], P[7, 0, 8], P[7, 0, 6]) == pytest.approx((0.8, 0.1, 0.1))
    C = np.asarray(m.C)[..., 0]
    assert C[7, 0, 12] == 1.0 and C[7, 0, 8] == 0.0
    assert np.asarray(m.terminal)[24] and np.asarray(m.R)[23, 0, 24] == 1.0


def test_chain_machine_and_inventory_as_cited():
    m = INSTANCES["chain-10"].build()
    P = np.asarray(m.P)
    assert (P[3, 0, 4], P[3, 0, 0], P[3, 1, 0]) == pytest.approx((0.8, 0.2, 0.8))
    m = INSTANCES["machine-20"].build()
    P = np.asarray(m.P)  # do nothing wears with 0.8; repair: R1 0.6, R2 0.1, fails 0.3
    assert (P[3, 0, 4], P[3, 0, 3]) == pytest.approx((0.8, 0.2))
    assert (P[3, 1, 18], P[3, 1, 19], P[3, 1, 4]) == pytest.approx((0.6, 0.1, 0.3))
    m = INSTANCES["inventory-50"].build()
    assert (m.n_states, m.n_actions) == (50, 50)
    # Puterman's inventory: from stock 10 ordering 5, stock 15 minus a demand
    from scipy.stats import norm

    mu, sigma = 50 / 4, 50 / 6
    P = np.asarray(m.P)
    for k in (0, 3, 7):  # demand k: next stock 15 - k, Phi(k) - Phi(k - 1)
        ref = norm.cdf(k, mu, sigma) - (norm.cdf(k - 1, mu, sigma) if k > 0 else 0.0)
        assert P[10, 5, 15 - k] == pytest.approx(ref, rel=1e-9)


def test_paper_domains_and_garnets():
    for name, d in (("paper-inventory", 6.0), ("paper-nav1", 3.0), ("paper-nav2", 0.4)):
        m = INSTANCES[name].build()
        assert np.asarray(m.d)[0] == pytest.approx(d)
    models = [INSTANCES[f"garnet-15x5-s{k}"].build() for k in range(3)]
    for m in models:
        P = np.asarray(m.P)
        assert (m.n_states, m.n_actions) == (15, 5)
        assert np.all((P > 0).sum(axis=2) == 5)  # branching 5
    assert not np.allclose(models[0].P, models[1].P)


# --------------------------------------------------------------------------- budgets
@pytest.mark.parametrize("name", SMALL)
def test_budget_binds_by_our_own_robust_iteration(name):
    """least worst-case cost < budget < worst-case cost of the unconstrained robust
    optimum, both computed here (sa-rectangular L1 ball, r = 0.1, nominal support)."""
    model, _uset, rec = suite.load(name, set="l1", radius=0.1)
    assert INSTANCES[name].support == "nominal"
    R, C = np.asarray(model.R), np.asarray(model.C)[..., 0]
    least, _ = _robust(model, C, 0.1, -1, agent=min)
    best, q = _robust(model, R, 0.1, +1)
    free_pi = np.eye(model.n_actions)[np.argmax(q, axis=1)]
    free, _ = _robust(model, C, 0.1, -1, policy=free_pi)
    d = float(np.asarray(model.d)[0])
    assert least < d < free
    assert rec["least"][0] == pytest.approx(least, rel=1e-6, abs=1e-8)
    # the record's robust optimum is one (ties: another than ours, e.g. on the grid's
    # symmetric routes), its cost is the record's level f, and d is halfway to it
    pi = np.asarray(rec["free_policy"])
    assert _robust(model, R, 0.1, +1, policy=pi)[0] == pytest.approx(best, abs=1e-7)
    f, _ = _robust(model, C, 0.1, -1, policy=pi)
    assert rec["free"][0] == pytest.approx(f, rel=1e-6, abs=1e-8)
    assert least < d < f
    assert d == pytest.approx(least + 0.5 * (f - least), rel=1e-6)


@pytest.mark.parametrize("name", SMALL)
def test_stored_lower_side_by_our_own_evaluation(name):
    """The stored lower policy of the L1 records is robust-feasible and worth at least
    the stored lower value; no random policy that is robust-feasible beats the stored
    upper side."""
    for r in (0.05, 0.1, 0.2):
        model, _uset, rec = suite.load(name, set="l1", radius=r)
        b = rec["bracket"]
        R, C = np.asarray(model.R), np.asarray(model.C)[..., 0]
        d = float(np.asarray(model.d)[0])
        if b["lower_policy"] is not None:
            pi = np.asarray(b["lower_policy"])
            v, _ = _robust(model, R, r, +1, policy=pi)
            c, _ = _robust(model, C, r, -1, policy=pi)
            assert v >= b["lower"] - 1e-7 * max(1.0, abs(v))
            assert c <= d + 1e-7 * max(1.0, d)
        if r == 0.1 and b["upper"] is not None:
            rng = np.random.default_rng(0)
            for _ in range(5):
                pi = rng.dirichlet(np.full(model.n_actions, 0.3), size=model.n_states)
                c, _ = _robust(model, C, r, -1, policy=pi, iters=400, tol=1e-7)
                if c <= d:
                    v, _ = _robust(model, R, r, +1, policy=pi, iters=400, tol=1e-7)
                    assert v <= b["upper"] + 1e-6 * max(1.0, abs(v))


# --------------------------------------------------------------------------- data file
def test_data_file_covers_the_grid():
    from rcmdp_exact.suite.certify import SCHEMA, job_keys, key_of

    payload = suite.data()
    assert payload["schema"] == SCHEMA
    keys = [r["key"] for r in payload["records"]]
    assert keys == [key_of(*j) for j in job_keys()]
    for rec in payload["records"]:
        b = rec["bracket"]
        assert b["policy_class"] == "stationary randomised"
        if b["lower"] is not None and b["upper"] is not None:
            assert b["lower"] <= b["upper"] + 1e-9 * max(1.0, abs(b["upper"]))
            gap = b["upper"] - b["lower"]
            assert b["gap"] == pytest.approx(gap, abs=1e-9)
            assert b["relative_gap"] is not None
        if b["status"] == "not_attempted":
            assert not INSTANCES[rec["instance"]].bracket and b["message"]
        if b["status"] in ("not_attempted", "bracket_failed"):
            assert b["method"] == "scaling"
        # the bracket lies below the unconstrained robust optimum and the CMDP optimum
        if b["upper"] is not None and rec["cmdp_optimum"] is not None and b["lower"]:
            assert b["lower"] <= rec["robust_optimum"] + 1e-7 * max(1, abs(b["lower"]))
            assert b["lower"] <= rec["cmdp_optimum"] + 1e-7 * max(1, abs(b["lower"]))


def test_load_round_trip():
    model, uset, rec = suite.load("garnet-15x5-s1", set="kl", radius=0.2)
    assert rec["key"] == "garnet-15x5-s1/kl/0.2"
    assert np.allclose(np.asarray(model.d), rec["budget"])
    assert rec["radius"] == pytest.approx(0.02)  # r^2 / 2
    assert np.allclose(uset.nominal, model.P)
    assert type(uset).__name__ == "KLBall"
    pols = suite.policies()
    assert np.array_equal(pols["garnet-15x5-s1/kl/0.2/free"], np.asarray(rec["free_policy"]))
    assert suite.instance("riverswim-6").n_states == 6
    with pytest.raises(ValueError, match="unknown instance 'nope'"):
        suite.load("nope")
    with pytest.raises(ValueError, match="not on the suite's grid"):
        suite.load("riverswim-6", radius=0.3)
    with pytest.raises(ValueError, match="radius 'x' is not a number"):
        suite.load("riverswim-6", radius="x")
    with pytest.raises(ValueError, match="unknown set 'l2'"):
        suite.load("riverswim-6", set="l2")


def test_verify_passes_on_the_shipped_file():
    res = suite.verify(["riverswim-6", "paper-nav1", "garnet-15x5-s2"], progress=False)
    assert res.success and res.failed == 0 and res.checked > 0


def _tampered(tmp_path, change):
    payload = json.loads(gzip.decompress(suite.DATA_FILE.read_bytes()))
    payload["records"] = [r for r in payload["records"] if r["instance"] == "riverswim-6"]
    rec = next(r for r in payload["records"] if r["bracket"]["lower_policy"] is not None)
    change(rec)
    path = tmp_path / "tampered.json.gz"
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    return path, rec["key"]


@pytest.mark.parametrize("what", ["lower", "budget", "policy"])
def test_verify_fails_on_a_tampered_record(tmp_path, what):
    def change(rec):
        b = rec["bracket"]
        if what == "lower":
            b["lower"] += 1e-4 * max(1.0, abs(b["lower"]))
        elif what == "budget":
            rec["budget"] = [rec["budget"][0] * 0.5]
        else:  # always swim upstream: too many strokes for the budget
            b["lower_policy"] = [[0.0, 1.0]] * len(b["lower_policy"])

    path, key = _tampered(tmp_path, change)
    res = suite.verify(path=path, progress=False)
    assert not res.success
    assert [r["key"] for r in res.rows if r["ok"] is False] == [key]
    proc = subprocess.run([sys.executable, "-m", "rcmdp_exact", "suite", "verify", "--file",
                           str(path), "--no-progress"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and "FAILED" in proc.stdout


def test_verify_recomputes_the_infeasibility_claims():
    """An ``infeasible`` record is confirmed by robust value iteration on -c (a second
    method); a budget raised above the least worst-case cost makes it fail."""
    res = suite.verify(["paper-nav2"], progress=False)
    rows = {r["key"]: r for r in res.rows}
    claims = [k for k, r in rows.items() if "confirmed" in r]
    assert sorted(claims) == ["paper-nav2/s-l1/0.1", "paper-nav2/s-l1/0.2"]
    assert res.infeasible == 2 and res.success
    payload = json.loads(gzip.decompress(suite.DATA_FILE.read_bytes()))
    for key in claims:
        rec = next(r for r in payload["records"] if r["key"] == key)
        stored = rec["bracket"]["lower_costs"][0]
        # the least cost of the bracket (Howard's iteration of the engine) and of
        # robust value iteration agree; both exceed the budget
        assert rows[key]["costs"][0] == pytest.approx(stored, rel=1e-8)
        assert rows[key]["costs"][0] > rec["budget"][0]


def test_verify_fails_on_a_false_infeasibility_claim(tmp_path):
    payload = json.loads(gzip.decompress(suite.DATA_FILE.read_bytes()))
    payload["records"] = [r for r in payload["records"]
                          if r["key"] in ("paper-nav2/s-l1/0.1", "paper-nav2/s-l1/0.2")]
    payload["records"][0]["budget"] = [0.6]  # above the least worst-case cost 0.5376
    path = tmp_path / "false_claim.json.gz"
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    res = suite.verify(path=path, progress=False)
    bad = [r for r in res.rows if r["ok"] is False]
    assert [r["key"] for r in bad] == ["paper-nav2/s-l1/0.1"] and not res.success
    assert "stored as infeasible" in bad[0]["why"] and res.infeasible == 1


# --------------------------------------------------------------------------- command line
@pytest.mark.parametrize("argv, fact", [
    (["show", "nope"], "'nope'"),
    (["verify", "nope"], "'nope'"),
    (["certify"], "--out"),
    (["certify", "--out", "x.json.gz", "--time-limit", "-1"], "time limit"),
    (["certify", "--out", "x.json.gz", "--workers", "2", "--scheduler", "tcp://a:1"],
     "not allowed"),
    (["score", "--algorithm", "sarsa"], "'sarsa'"),
    (["score", "--trainer", "no_such_module_xyz:f"], "cannot be imported"),
    (["score", "--radius", "0.3"], "0.3"),
])
def test_bad_arguments_fail_before_heavy_imports(argv, fact):
    code = ("import sys\nfrom rcmdp_exact.cli import main\ntry:\n"
            f"    rc = main(['suite', *{argv!r}])\n"
            "except SystemExit as e:\n    rc = e.code\n"
            "print(rc, 'numpy' in sys.modules, 'numba' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split() == ["2", "False", "False"], proc.stderr
    assert fact in proc.stderr.strip().splitlines()[-1]


def test_certify_refuses_an_existing_file(tmp_path):
    out = tmp_path / "mine.json.gz"
    out.write_bytes(b"the user's")
    from rcmdp_exact.cli import main

    with pytest.raises(SystemExit) as e:
        main(["suite", "certify", "--out", str(out), "--only", "riverswim-6"])
    assert e.value.code == 2 and out.read_bytes() == b"the user's"


def test_certify_a_small_job_and_resume(tmp_path, capsys):
    from rcmdp_exact.cli import main

    out = tmp_path / "v.json.gz"
    argv = ["suite", "certify", "--out", str(out), "--only", "riverswim-6", "--kinds",
            "interval", "--radii", "0.2", "--time-limit", "0.5", "--no-progress"]
    assert main(argv) == 0
    rec = suite.record("riverswim-6", "interval", 0.2, path=out)
    assert rec is not None and rec["settings"]["time_limit"] == 0.5
    assert main([*argv, "--force"]) == 0  # resumed: the job is kept
    assert "1 kept" in capsys.readouterr().out
    res = suite.verify(path=out, progress=False)
    assert res.success


# --------------------------------------------------------------------------- score
class _Stored:
    """A trainer's result: the stored lower policy of the instance's L1 record."""

    def __init__(self, table):
        self._t = table
        self.records = {}

    def policy_table(self):
        return self._t


def stored_lower_trainer(model, algorithm, *, ball=None, seed=0, episodes=1, critic=None,
                         gradient=None, inner=None, multiplier_update=None, eval_every=None,
                         true_model=None, progress=None):
    for name in ("riverswim-6", "chain-10"):
        _, _, rec = suite.load(name, set="l1", radius=0.1)
        if rec["S"] == model.n_states and np.allclose(rec["budget"], model.d):
            return _Stored(np.asarray(rec["bracket"]["lower_policy"]))
    raise AssertionError("unknown model")


def test_score_a_trainer_that_returns_the_certified_policy():
    res = suite.score(stored_lower_trainer, ["cpg"], ["riverswim-6", "chain-10"], seeds=[0, 1],
                      episodes=1, progress=False)
    assert len(res.rows) == 4
    for row in res.rows:
        assert row["feasible"] and row["violation"] == 0.0
        assert row["share_lower"] == pytest.approx(1.0, abs=1e-7)
        assert row["share_upper"] <= 1.0 + 1e-9
    assert "riverswim-6" in res.table()


def test_score_uniform_matches_our_evaluation():
    res = suite.score(None, ["uniform"], ["riverswim-6"], seeds=[0], progress=False)
    model, _, _rec = suite.load("riverswim-6")
    pi = np.full((6, 2), 0.5)
    v, _ = _robust(model, np.asarray(model.R), 0.1, +1, policy=pi)
    c, _ = _robust(model, np.asarray(model.C)[..., 0], 0.1, -1, policy=pi)
    row = res.rows[0]
    assert row["worst_value"] == pytest.approx(v, abs=1e-8)
    assert row["worst_costs"][0] == pytest.approx(c, abs=1e-8)
    assert row["violation"] == pytest.approx(max(0.0, c - float(model.d[0])), abs=1e-8)


def test_score_from_the_command_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_suite_trainer.py").write_text(
        "import numpy as np\n"
        "class R:\n"
        "    def __init__(self, S, A):\n"
        "        self.t = np.full((S, A), 1.0 / A); self.records = {}\n"
        "    def policy_table(self):\n"
        "        return self.t\n"
        "def train(model, algorithm, *, ball=None, seed=0, episodes=1, critic=None,\n"
        "          gradient=None, inner=None, multiplier_update=None, eval_every=None,\n"
        "          true_model=None, progress=None):\n"
        "    return R(model.n_states, model.n_actions)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from rcmdp_exact.cli import main

    out = tmp_path / "scores.json"
    assert main(["suite", "score", "--trainer", "my_suite_trainer:train", "--instances",
                 "riverswim-6,forest-10", "--seeds", "2", "--episodes", "1", "--out",
                 str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "forest-10" in text and "share (upper)" in text
    from rcmdp_exact.suite.leaderboard import read_scores

    rows = read_scores(out).rows
    assert len(rows) == 4 and np.allclose(rows[0]["policy"], 0.5)


def test_shipped_leaderboard_scores_are_exact():
    """The leaderboard's stored policies, evaluated here, give its stored scores."""
    from pathlib import Path

    from rcmdp_exact.suite.leaderboard import read_scores

    path = Path(__file__).resolve().parents[1] / "docs" / "suite" / "leaderboard.json"
    if not path.exists():
        pytest.skip("no leaderboard file")
    rows = read_scores(path).rows
    seen = 0
    for row in rows:
        if row["instance"] not in ("riverswim-6", "chain-10") or row["seed"] != 0:
            continue
        model, _, _rec = suite.load(row["instance"], set="l1", radius=0.1)
        pi = np.asarray(row["policy"])
        v, _ = _robust(model, np.asarray(model.R), 0.1, +1, policy=pi)
        c, _ = _robust(model, np.asarray(model.C)[..., 0], 0.1, -1, policy=pi)
        assert row["worst_value"] == pytest.approx(v, abs=1e-7 * max(1, abs(v)))
        assert row["worst_costs"][0] == pytest.approx(c, abs=1e-7 * max(1, abs(c)))
        seen += 1
    assert seen > 0

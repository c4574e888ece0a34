"""The certified benchmark suite (rcmdp_exact.suite): every instance against its cited
definition, the budget rule (checked by a robust value iteration written here), the
shipped records re-checked by a robust evaluation written here (lower sides, caps, the
closures), load() round trip and its refusals, verify on the shipped file.  The
leaderboard: tests/test_suite_score.py; verify's fault finding:
tests/test_suite_verify.py; certify: tests/test_suite_certify.py; hostile input:
tests/test_suite_hostile.py; the frozen instances: tests/test_suite_instances.py."""

from __future__ import annotations

import gzip
import json

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


def _robust(m, g, alpha, sign, policy=None, agent=max, iters=2000, tol=1e-11, mask=None):
    """Robust value iteration (policy None; agent max or min, over the actions of
    ``mask`` (S, A) when given) or robust evaluation of ``policy`` of the per-transition
    quantity g (S, A, S), nature's direction ``sign``, on the L1 ball of radius alpha on
    the nominal support; terminal states are worth 0."""
    term = np.asarray(m.terminal, dtype=bool)
    w = np.zeros(m.n_states)
    for _ in range(iters):
        q = _bellman_rows(m, g, w, alpha, sign)
        if policy is None:
            if mask is not None:
                q = np.where(mask, q, -np.inf if agent is max else np.inf)
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
    assert suite.ONLY_KINDS == {name: tuple(inst.kinds) for name, inst in INSTANCES.items()
                                if tuple(inst.kinds) != ('l1', 'kl', 's-l1', 'interval')}
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
def test_budget_rule_by_our_own_robust_iteration(name):
    """least = min over policies of the worst-case cost; f = the least worst-case cost
    over the actions robust-optimal at every state (the robust optimum's Q within 1e-9
    of its value, found here); d = least + (f - least)/2 (sa-rectangular L1 ball,
    level 0.1, nominal support), all computed here."""
    model, _uset, rec = suite.load(name, set="l1", level=0.1)
    assert INSTANCES[name].support == "nominal"
    R, C = np.asarray(model.R), np.asarray(model.C)[..., 0]
    least, _ = _robust(model, C, 0.1, -1, agent=min)
    best, q = _robust(model, R, 0.1, +1)
    v = q.max(axis=1)
    mask = q >= v[:, None] - 1e-9 * max(1.0, np.abs(v).max())
    f, _ = _robust(model, C, 0.1, -1, agent=min, mask=mask)
    d = float(np.asarray(model.d)[0])
    assert rec["least"][0] == pytest.approx(least, rel=1e-6, abs=1e-8)
    assert rec["free"][0] == pytest.approx(f, rel=1e-6, abs=1e-8)
    assert rec["robust_optimum"] == pytest.approx(best, rel=1e-7, abs=1e-9)
    assert d == pytest.approx(least + 0.5 * (f - least), rel=1e-6, abs=1e-9)
    assert rec["binds"] == (f > least + 1e-7)
    # the stored free policy is a robust optimum that costs f
    pi = np.asarray(rec["free_policy"])
    assert _robust(model, R, 0.1, +1, policy=pi)[0] == pytest.approx(best, abs=1e-7)
    assert _robust(model, C, 0.1, -1, policy=pi)[0] == pytest.approx(f, rel=1e-6, abs=1e-8)


def test_grid_budget_is_the_cheaper_robust_optimum():
    """On the 5x5 gridworld two routes are equally good robust optima (symmetric), and
    they differ in puddles: the budget is halfway to the cheaper one's cost, whatever the
    order of the actions (the model's actions reversed gives the same budget)."""
    from rcmdp_exact.domains.classic import cost_levels
    from rcmdp_exact.suite.sets import build_set

    base = INSTANCES["grid-5x5"].build()
    uset = build_set(base, "l1", 0.1, "nominal")
    lv = cost_levels(base, uset)
    rev = base.replace(P=np.asarray(base.P)[:, ::-1], R=np.asarray(base.R)[:, ::-1],
                       C=np.asarray(base.C)[:, ::-1], action_labels=None)
    lv_rev = cost_levels(rev, build_set(rev, "l1", 0.1, "nominal"))
    assert lv.free[0] == pytest.approx(lv_rev.free[0], abs=1e-10)
    assert (lv.box.mask.sum(axis=1) > 1).sum() >= 2  # real ties
    rec = suite.record("grid-5x5", "l1", 0.1)
    assert rec["free"][0] == pytest.approx(lv.free[0], abs=1e-9)


@pytest.mark.parametrize("name", SMALL)
def test_stored_lower_side_by_our_own_evaluation(name):
    """The stored lower policy of the L1 records is robust-feasible and worth exactly the
    stored lower value, with the stored costs; no random policy that is robust-feasible
    beats the stored upper side."""
    for r in (0.05, 0.1, 0.2):
        model, _uset, rec = suite.load(name, set="l1", level=r)
        b = rec["bracket"]
        R, C = np.asarray(model.R), np.asarray(model.C)[..., 0]
        d = float(np.asarray(model.d)[0])
        assert b["lower_policy"] is not None  # one constraint, least <= d: never none
        pi = np.asarray(b["lower_policy"])
        v, _ = _robust(model, R, r, +1, policy=pi)
        c, _ = _robust(model, C, r, -1, policy=pi)
        assert v == pytest.approx(b["lower"], abs=1e-8 * max(1.0, abs(v)))
        assert c == pytest.approx(b["lower_costs"][0], abs=1e-8 * max(1.0, abs(c)))
        assert c <= d + 1e-8 * max(1.0, d)
        if r == 0.1:
            rng = np.random.default_rng(0)
            for _ in range(5):
                pi = rng.dirichlet(np.full(model.n_actions, 0.3), size=model.n_states)
                c, _ = _robust(model, C, r, -1, policy=pi, iters=400, tol=1e-7)
                if c <= d:
                    v, _ = _robust(model, R, r, +1, policy=pi, iters=400, tol=1e-7)
                    assert v <= b["upper"] + 1e-6 * max(1.0, abs(v))


# --------------------------------------------------------------------------- data file
def test_data_file_covers_the_grid_and_every_record_is_as_tight_as_its_caps():
    from rcmdp_exact.suite.certify import SCHEMA, job_keys, key_of
    from rcmdp_exact.suite.frozen import CHECKSUMS

    payload = suite.data()
    assert payload["schema"] == SCHEMA
    assert payload["instances_sha256"] == json.loads(CHECKSUMS.read_text())["sha256"]
    keys = [r["key"] for r in payload["records"]]
    assert keys == [key_of(*j) for j in job_keys()]
    for rec in payload["records"]:
        b = rec["bracket"]
        assert b["policy_class"] == "stationary randomised"
        if b["status"] == "infeasible":
            assert rec["least"][0] > rec["budget"][0] and b["lower"] is None
            continue
        # one constraint and least <= budget: the least-cost policy is feasible
        assert b["status"] != "no_feasible_policy", rec["key"]
        assert b["lower"] is not None and b["lower_policy"] is not None, rec["key"]
        assert b["lower"] <= b["upper"] + 1e-9 * max(1.0, abs(b["upper"]))
        assert b["gap"] == pytest.approx(b["upper"] - b["lower"], abs=1e-9)
        # the upper side is at most every cap, and the caps are what they say
        caps = rec["caps"]
        assert b["upper"] <= min(c for c in caps.values() if c is not None) + 1e-12
        assert caps["robust"] >= rec["robust_optimum"] - 1e-9
        assert caps["nominal"] >= rec["nominal_optimum"] - 1e-9
        if rec["cmdp_optimum"] is not None:
            assert caps["cmdp"] == pytest.approx(rec["cmdp_optimum"], rel=1e-6, abs=1e-8)
        # the closure: a robust-feasible robust optimum closes the record there
        if rec["free"][0] <= rec["budget"][0] + 1e-9 * max(1.0, rec["budget"][0]):
            assert b["status"] == "bracket", rec["key"]
            assert b["lower"] == pytest.approx(rec["robust_optimum"], rel=1e-9, abs=1e-12)


def test_load_round_trip_and_the_level_is_not_the_radius():
    model, uset, rec = suite.load("garnet-15x5-s1", set="kl", level=0.2)
    assert rec["key"] == "garnet-15x5-s1/kl/0.2"
    assert np.allclose(np.asarray(model.d), rec["budget"])
    assert rec["level"] == 0.2 and rec["radius"] == pytest.approx(0.02)  # r^2 / 2
    # the set's own radius, what --set kl --radius means (0 on terminal rows)
    assert np.max(np.asarray(uset.radius)) == pytest.approx(0.02)
    assert np.allclose(uset.nominal, model.P)
    assert type(uset).__name__ == "KLBall"
    _, _, rec2 = suite.load("garnet-15x5-s1", set="interval", level=0.2)
    assert rec2["radius"] == pytest.approx(0.1)
    pols = suite.policies()
    assert np.array_equal(pols["garnet-15x5-s1/kl/0.2/free"], np.asarray(rec["free_policy"]))
    assert suite.instance("riverswim-6").n_states == 6
    with pytest.raises(ValueError, match="unknown instance 'nope'"):
        suite.load("nope")
    with pytest.raises(ValueError, match="not on the suite's grid"):
        suite.load("riverswim-6", level=0.3)
    with pytest.raises(ValueError, match="level 'x' is not a number"):
        suite.load("riverswim-6", level="x")
    with pytest.raises(ValueError, match="unknown set 'l2'"):
        suite.load("riverswim-6", set="l2")


@pytest.mark.parametrize("damage", ["truncated", "not gzip", "no records", "bad record"])
def test_load_refuses_a_damaged_data_file_naming_its_path(tmp_path, damage):
    """A damaged file given as ``path`` is refused with its path, never read as "no
    record" (which would recompute a budget silently)."""
    from rcmdp_exact import LoadError

    raw = suite.DATA_FILE.read_bytes()
    path = tmp_path / "values.json.gz"
    if damage == "truncated":
        path.write_bytes(raw[: len(raw) // 3])
    elif damage == "not gzip":
        path.write_bytes(b"\x1f\x8bnot really")
    elif damage == "no records":
        path.write_bytes(gzip.compress(b'{"schema": 2}'))
    else:
        payload = json.loads(gzip.decompress(raw))
        payload["records"][3] = {"key": "x"}
        path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    with pytest.raises(LoadError, match=str(path).replace(".", r"\.")):
        suite.load("riverswim-6", path=path)


def test_verify_passes_on_the_shipped_file():
    res = suite.verify(["riverswim-6", "paper-nav2", "garnet-15x5-s2"], progress=False)
    assert res.success and res.failed == 0 and res.checked == 36
    assert res.checks > 36 * 20
    assert res.infeasible >= 1  # paper-nav2's s-rectangular sets


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("level", [0.05, 0.1, 0.2, 1.5])
def test_each_kind_matches_its_level_as_its_class_says(seed, level):
    """The grid's radius of a kind comes from the kind's class (``l1_level_radius``); it
    is checked here against the geometry it claims, by worst cases: the KL set of level
    r lies inside the L1 ball of radius r (Pinsker), the interval set and the
    s-rectangular set of level r contain it, so their worst values are above (KL) and
    below (interval, s-l1) the L1 ball's, on skewed kernels and values."""
    from rcmdp_exact.domains import garnet
    from rcmdp_exact.suite.sets import KINDS, build_set, radius_of, set_text
    from rcmdp_exact.testing import skewed_values

    rng = np.random.default_rng(seed)
    m = garnet(5, 3, 4, n_constraints=1, seed=seed)
    P = np.asarray(m.P)
    tol = lambda z: 1e-9 * (1.0 + np.abs(z).max())  # noqa: E731
    l1 = build_set(m, "l1", level, "nominal")
    for z in skewed_values(seed, 3, P):  # (S, A, S): one value vector per pair
        base = l1.worst_case(z).value
        assert np.all(build_set(m, "kl", level, "nominal").worst_case(z).value
                      >= base - tol(z))
        assert np.all(build_set(m, "interval", level, "nominal").worst_case(z).value
                      <= base + tol(z))
    pi = rng.dirichlet(np.ones(3), size=5)
    s_rect = build_set(m, "s-l1", level, "nominal")
    for z in (10.0 ** rng.uniform(-3, 6, 5), np.round(rng.uniform(0, 3, 5)), np.zeros(5)):
        assert np.all(s_rect.worst_case(z, pi).value
                      <= np.einsum("sa,sa->s", pi, l1.worst_case(z).value) + tol(z))
    assert [radius_of(k, 0.2) for k in KINDS] == [0.2, 0.2 * 0.2 / 2, 0.2, 0.1]
    assert "KL ball" in set_text("kl", 0.1, "all") and "nominal" in set_text("kl", 0.1, "all")

"""Hostile inputs of the public entry points this round touched: where a model enters
(``TabularCMDP``, ``TabularCMDP.load``, every archive loader), a user's set answering
with wrong shapes, the testing tools (generators, strategies, ``find_counterexample``),
the limits the API shares with the command line, and the results store's lock.  The
table's shape: tests/hostile/hostile.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import HANG_GUARD
from hostile import (
    Api,
    model_arrays,
    rows,
    run_api,
    small_model,
    sparse_model_arrays,
    write_archive,
)

import rcmdp_exact as rx
from rcmdp_exact import InnerProblemError, InputError, LoadError, OutputPathError


# --------------------------------------------------------------------------- models
def _csr(indices, indptr=None, shape=(6, 3)):
    indices = np.asarray(indices)
    indptr = np.arange(len(indices) + 1) if indptr is None else np.asarray(indptr)
    return sp.csr_array((np.ones(len(indices)), indices, indptr), shape=shape)


def _csc_out_of_range():
    P = sp.csc_array(np.tile(np.eye(3), (2, 1)))  # (6, 3): rows s*A + a
    P.indices[-1] = 99  # a row index beyond the 6 rows
    return P


def _coo_out_of_range():
    P = sp.coo_array(np.tile(np.eye(3), (2, 1)))
    P.coords = (P.coords[0], np.where(np.arange(P.nnz) == 2, 7, P.coords[1]))
    return P


def _model(P, R=None):
    return rx.TabularCMDP(P, np.zeros((3, 2)) if R is None else R, gamma=0.9, p0=0)


def _load(arrays, forged=None):
    def call(folder):
        return rx.TabularCMDP.load(write_archive(folder / "m.npz", arrays, forged))
    return call


def _truncated(folder):
    """A model file cut short (its first 200 bytes): numpy's loader left it open."""
    whole = small_model().save(folder / "whole.npz").read_bytes()
    (folder / "m.npz").write_bytes(whole[:200])
    rx.TabularCMDP.load(folder / "m.npz")


def _over_the_limit(folder):
    small_model().save(folder / "m.npz")
    with mock.patch("rcmdp_exact._io.MAX_INPUT_BYTES", 500):
        rx.TabularCMDP.load(folder / "m.npz")


class _WrongShape(rx.L1Ball):
    """An L1 ball whose row solver returns rows one entry short."""

    kind = "test-hostile-wrong-shape"
    note = "a ball whose solver answers with rows of the wrong length"

    def _solve_rows(self, Z, J, method):
        p, value, ok, extra = super()._solve_rows(Z, J, method)
        return p[:, :-1], value, ok, extra

    def _solve_shared(self, z, method):
        return rx.SARectangularSet._solve_shared(self, z, method)


def _wrong_shape(folder):
    m = small_model()
    rx.robust_evaluate(m, np.full((3, 2), 0.5), _WrongShape(m.P, 0.2))


MODELS = [
    Api("csr-column-index-out-of-range", lambda f: _model(_csr([0, 1, 2, 0, 1, 10**6])),
        InputError, ("column index 1000000", "row 5 (s=2, a=1)", "0..2")),
    Api("csr-negative-index", lambda f: _model(_csr([0, 1, 2, 0, 1, -1])), InputError,
        ("column index -1",)),
    Api("csr-decreasing-pointers", lambda f: _model(_csr([0, 1, 2, 0, 1, 2],
                                                         [0, 2, 1, 3, 4, 5, 6])),
        InputError, ("decreasing index pointers",)),
    # rows at the end without an entry (np.add.reduceat failed on them: an IndexError)
    Api("csr-empty-rows-at-the-end", lambda f: _model(_csr([0, 1, 2], [0, 1, 2, 3, 3, 3, 3])),
        InputError, ("sums to 0.0", "(s=1, a=1)")),
    Api("csc-row-index-out-of-range", lambda f: _model(_csc_out_of_range()), InputError,
        ("row index 99",)),
    Api("coo-column-out-of-range", lambda f: _model(_coo_out_of_range()), InputError,
        ("column index 7",)),
    Api("broadcast-rewards-of-14-TiB", lambda f: rx.TabularCMDP(
        sp.eye_array(10**6, format="csr"), np.broadcast_to(0.0, (10**6, 10**6)),
        gamma=0.9), InputError, ("would hold", "TiB", "MAX_INPUT_BYTES")),
    # a view of one uniform row (80 kB): the row is about the refusal of the shape
    # before any copy, not about building a 800 MB identity first (8 s of the test)
    Api("broadcast-kernel-of-7-TiB", lambda f: rx.TabularCMDP(
        np.broadcast_to(np.full(10**4, 1e-4), (10**4, 10**4, 10**4)),
        np.zeros((10**4, 10**4)), gamma=0.9), InputError, ("would hold", "MAX_INPUT_BYTES")),
    Api("outcomes-of-a-14-TiB-kernel", lambda f: rx.TabularCMDP.from_outcomes(
        np.zeros((10**6, 2, 1), dtype=np.int64), np.ones((10**6, 2, 1)), np.zeros(10**6)),
        InputError, ("would hold", "(1000000, 2, 1000000)", "MAX_INPUT_BYTES")),
    Api("load-sparse-index-out-of-range", _load(sparse_model_arrays()), LoadError,
        ("m.npz", "column index 1000000")),
    Api("load-forged-header", _load(model_arrays(), {"P": (100000, 4, 100000)}), LoadError,
        ("m.npz", "'P'", "(100000, 4, 100000)", "298 GiB", "holds 64 bytes")),
    Api("load-forged-sparse-pointers", _load(sparse_model_arrays(2),
                                             {"P_indptr": (10**12,)}), LoadError,
        ("P_indptr", "7.28 TiB")),
    Api("load-format-version-9", _load({**model_arrays(), "format": np.array(
        "rcmdp_exact.TabularCMDP/9")}), LoadError, ("format version '9'",
                                                    "reads version '1'")),
    Api("load-float32-rows", _load({**model_arrays(), "P": np.random.default_rng(0).dirichlet(
        np.ones(3), size=(3, 2)).astype(np.float32)}), LoadError,
        ("P[0, 0, :]", "write the file again"), absent=("or pass normalize=True",)),
    # every row also checks that no file is left open (the harness's run_api)
    Api("load-truncated-file", _truncated, LoadError, ("m.npz", "truncated or damaged")),
    Api("load-above-the-memory-limit", _over_the_limit, LoadError,
        ("above the limit", "MAX_INPUT_BYTES")),
    Api("load-set-forged-header", lambda f: rx.load_set(write_archive(
        f / "s.npz", {"format": np.array("rcmdp_exact.L1Ball/1"), "nominal": np.zeros(1)},
        {"nominal": (10**6, 10**6)})), LoadError, ("'nominal'", "7.28 TiB")),
    Api("set-answers-rows-of-the-wrong-shape", _wrong_shape, InnerProblemError,
        ("_WrongShape._solve_rows", "p of shape (12, 2), not (12, 3)", "docs/your_set.md")),
]


# --------------------------------------------------------------------------- testing
def _T():
    import rcmdp_exact.testing as T

    return T


TESTING = [
    # check_seed let a sequence (or None) through and int(seed) then raised a raw
    # TypeError ("only 0-dimensional arrays can be converted to Python scalars")
    Api("verify-theorems-seed-an-array", lambda f: rx.verify_theorems(
        rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0), seed=np.array([1, 2])),
        InputError, ("seed", "integer")),
    # a tolerance of 3 let contains() pass rows summing to 2: the toolkit's own L1 ball
    # then "failed" its optimality check (a ConformanceError against a correct set)
    Api("conformance-tol-that-accepts-anything", lambda f: rx.check_set_conformance(
        rx.l1_ball(rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0), 0.2), tol=3.0),
        InputError, ("tol", "[1e-12, 0.01]", "3.0")),
    Api("conformance-tol-below-rounding", lambda f: rx.check_set_conformance(
        rx.l1_ball(rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0), 0.2), tol=5e-324),
        InputError, ("tol", "[1e-12, 0.01]", "5e-324")),
    Api("random_cmdp-negative-S", lambda f: _T().random_cmdp(0, -1, 2, 1, 0.9), InputError,
        ("S must be an integer >= 1", "-1")),
    Api("random_cmdp-fractional-S", lambda f: _T().random_cmdp(0, 2.5, 2, 1, 0.9),
        InputError, ("S must be an integer", "2.5")),
    Api("random_cmdp-14-TiB", lambda f: _T().random_cmdp(0, 10**6, 2, 1, 0.9), InputError,
        ("random_cmdp(S=1,000,000", "TiB", "MAX_INPUT_BYTES")),
    Api("random_cmdp-negative-K", lambda f: _T().random_cmdp(0, 3, 2, -1, 0.9), InputError,
        ("K must be an integer >= 0", "-1")),
    Api("random_cmdp-negative-outcomes", lambda f: _T().random_cmdp(0, 3, 2, 1, 0.9, -2),
        InputError, ("n_outcomes", "-2")),
    Api("random_cmdp-gamma", lambda f: _T().random_cmdp(0, 3, 2, 1, 1.5), InputError,
        ("gamma", "1.5")),
    Api("skewed_kernel-no-states", lambda f: _T().skewed_kernel(0, 0, 2), InputError,
        ("S must be an integer >= 1", "0")),
    Api("skewed_values-not-a-kernel", lambda f: _T().skewed_values(0, 2, np.ones(3)),
        InputError, ("P must be a kernel", "(3,)")),
    Api("cmdps-negative-range", lambda f: _T().cmdps(n_states=(-1, 3)), InputError,
        ("n_states[0]", "(-1, 3)", "-1")),
    Api("cmdps-reversed-range", lambda f: _T().cmdps(n_states=(3, 1)), InputError,
        ("n_states[1]", "(3, 1)")),
    Api("cmdps-huge", lambda f: _T().cmdps(n_states=10**6), InputError,
        ("cmdps(n_states=1000000", "TiB")),
    Api("cmdps-gamma", lambda f: _T().cmdps(gamma=(0.5, 1.5)), InputError,
        ("gamma[1]", "1.5")),
    Api("garnets-no-states", lambda f: _T().garnets(n_states=0), InputError,
        ("n_states", "0")),
    Api("inner_problems-no-rows", lambda f: _T().inner_problems(max_n=0), InputError,
        ("max_n", "0")),
    Api("pair_radii-negative", lambda f: _T().pair_radii(small_model(), -1.0), InputError,
        ("max_radius", "-1")),
    Api("random_values-huge", lambda f: _T().random_values(0, (10**12,)), InputError,
        ("random_values", "TiB")),
]


# --------------------------------------------------------------------------- counterexamples
#: A search whose claim holds on every example, each taking 50 ms, with a budget of a
#: million examples (14 hours) and a time limit of 2 s; prints what it returned.
TIME_LIMITED = """
import json, sys, time
import rcmdp_exact.testing as T
def claim(model):
    time.sleep(0.05)
    return True
res = T.find_counterexample(claim, T.cmdps(), max_examples=10**6, time_limit=2.0)
print(json.dumps({"stopped": res.get("stopped"), "examples": res.examples,
                  "message": res.message}))
"""


def _time_limited(folder):
    out = subprocess.run([sys.executable, "-c", TIME_LIMITED], capture_output=True,
                         text=True, timeout=HANG_GUARD, cwd=folder)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _stopped_by_the_limit(res, folder):
    assert res["stopped"] == "time_limit" and res["examples"] < 10**6
    assert "time limit" in res["message"] and "not the budget's" in res["message"]


def _second_claim(folder):
    T = _T()
    first = T.find_counterexample(lambda m: m.n_states < 2, T.cmdps(), max_examples=50,
                                  path=folder / "cx")
    assert first.found
    before = {p.name: p.read_bytes() for p in (folder / "cx").iterdir()}
    with pytest.raises(OutputPathError) as err:
        T.find_counterexample(lambda m: m.n_actions < 2, T.cmdps(), max_examples=50,
                              path=folder / "cx")
    after = {p.name: p.read_bytes() for p in (folder / "cx").iterdir()}
    return str(err.value), before, after


def _first_kept(res, folder):
    message, before, after = res
    assert after == before, "the first counterexample changed"
    assert "holds a counterexample already" in message and "overwrite=True" in message


def _overwritten(folder):
    T = _T()
    T.find_counterexample(lambda m: m.n_states < 2, T.cmdps(n_states=(2, 3),
                                                             n_constraints=1),
                          max_examples=50, path=folder / "cx")
    res = T.find_counterexample(lambda m: m.n_actions < 2, T.cmdps(n_actions=(2, 3)),
                                max_examples=50, path=folder / "cx", overwrite=True)
    return res, sorted(p.name for p in (folder / "cx").iterdir())


def _replaced(res, folder):
    found, names = res
    assert found.found and names == sorted(p.name for p in found.files)
    back = _T().load_counterexample(folder / "cx")
    assert back.example.n_actions >= 2


COUNTEREXAMPLES = [
    Api("time-limit-stops-the-search", _time_limited, check=_stopped_by_the_limit,
        marks=("slow",)),
    Api("second-claim-keeps-the-first", _second_claim, check=_first_kept),
    Api("overwrite-replaces-it-whole", _overwritten, check=_replaced),
    Api("max-examples-zero", lambda f: _T().find_counterexample(
        lambda m: True, _T().cmdps(), max_examples=0), InputError, ("max_examples",)),
    Api("time-limit-negative", lambda f: _T().find_counterexample(
        lambda m: True, _T().cmdps(), time_limit=-1.0), InputError, ("time_limit",)),
]


# --------------------------------------------------------------------------- limits
def _settings_episodes(folder):
    rx.learners.train(small_model(), "pg", episodes=10**15, progress=False)


def _mc_episodes(folder):
    from rcmdp_exact.theory.estimators import monte_carlo_estimator

    monte_carlo_estimator(small_model(), np.zeros((3, 2)), "algorithm1", 10**15)


LIMITS = [
    Api("plan-seeds", lambda f: rx.protocol.plan(["1A"], ["pg"], seeds=10**9), InputError,
        ("seeds = 1,000,000,000", "10^4", "LIMITS")),
    Api("runspec-episodes", lambda f: rx.protocol.RunSpec(
        domain="nav2", algorithm="pg", seed=0, episodes=10**15), InputError,
        ("episodes", "10^7")),
    Api("runspec-sampled-episodes", lambda f: rx.protocol.RunSpec(
        domain="nav2", algorithm="pg", seed=0, sampled_episodes=10**9), InputError,
        ("sampled_episodes", "10^5")),
    Api("train-episodes", _settings_episodes, InputError, ("episodes", "10^7")),
    Api("monte-carlo-episodes", _mc_episodes, InputError, ("n_episodes", "10^7")),
    Api("verify-hidden", lambda f: rx.verify_theorems(small_model(), hidden=10**6),
        InputError, ("hidden", "10^4")),
    Api("hoeffding-no-states", lambda f: rx.uncertainty.hoeffding_radius(5, 3, 0, 2),
        InputError, ("n_states", "0")),
    Api("weissman-no-outcomes", lambda f: rx.uncertainty.weissman_radius(5, 0, 3, 2),
        InputError, ("n_outcomes", "0")),
    Api("entry-radius-no-entries", lambda f: rx.uncertainty.entry_radius(5, 0),
        InputError, ("n_entries", "0")),
    Api("entry-radius-negative-count", lambda f: rx.uncertainty.entry_radius(-1, 3),
        InputError, ("counts", "-1")),
]


# --------------------------------------------------------------------------- the store's lock
def _store_while_recovering(folder):
    from rcmdp_exact.protocol.store import Store, StoreLock

    Store(folder / "runs.sqlite").close()
    lock = StoreLock(folder / "runs.sqlite", exclusive=True)
    try:
        Store(folder / "runs.sqlite", readonly=True)
    finally:
        lock.release()


def _recover_while_open(folder):
    from rcmdp_exact.protocol.store import Store, StoreLock

    with Store(folder / "runs.sqlite"):
        StoreLock(folder / "runs.sqlite", exclusive=True)


def _two_writers(folder):
    from rcmdp_exact.protocol.store import Store

    with Store(folder / "runs.sqlite") as a, Store(folder / "runs.sqlite") as b:
        return a.keys(), b.keys()


STORE = [
    Api("open-while-recovering", _store_while_recovering,
        OutputPathError, ("being recovered by rcmdp recover",)),
    Api("recover-while-open", _recover_while_open, OutputPathError,
        ("in use by another rcmdp command",)),
    Api("two-sweeps-share-the-store", _two_writers,
        check=lambda res, folder: res == (set(), set())),
]

# --------------------------------------------------------------------------- planners
def _P():
    from rcmdp_exact import planners

    return planners


def _plan(name="rnpg", **kw):
    def call(folder):
        m = rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0)
        return _P().plan(m, rx.L1Ball(m.P, 0.1), name, **{"iterations": 3, **kw})
    return call


def _nan_model(folder):
    m = rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0)
    R = np.array(m.R, dtype=float)
    R[1, 0] = np.nan
    return _P().plan(rx.TabularCMDP(m.P, R, m.C, gamma=m.gamma, d=m.d, p0=m.p0),
                     rx.L1Ball(m.P, 0.1), "rnpg", iterations=3)


def _gap_of_another_model(folder):
    from rcmdp_exact import suite

    record = suite.load("riverswim-6", set="l1", level=0.05)[2]
    m = rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0)
    return _P().record_duality_gap(m, rx.L1Ball(m.P, 0.05), record)


_SCORE_AFTER_PLANNERS = """
import rcmdp_exact.planners
from rcmdp_exact import suite
res = suite.score(algorithms=["rnpg"], names=["riverswim-6"], seeds=[0], episodes=2,
                  progress=False)
print(res.rows[0]["entrant"], res.failed)
"""


def _score_after_planners(folder):
    out = subprocess.run([sys.executable, "-c", _SCORE_AFTER_PLANNERS], capture_output=True,
                         text=True, timeout=HANG_GUARD, cwd=folder)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


PLANNERS = [
    Api("plan-iterations-zero", _plan(iterations=0), InputError, ("iterations", ">= 1")),
    Api("plan-iterations-negative", _plan(iterations=-1), InputError, ("iterations", "-1")),
    Api("plan-iterations-fractional", _plan(iterations=2.5), InputError,
        ("iterations", "2.5")),
    Api("plan-iterations-10^12", _plan(iterations=10**12), InputError,
        ("iterations", "10^7", "LIMITS")),
    Api("plan-step-zero", _plan(step=0.0), InputError, ("setting 'step'", "0")),
    Api("plan-step-negative", _plan("pmd-pd", dual_step=-1.0), InputError,
        ("setting 'dual_step'", "-1")),
    Api("plan-step-nan", _plan("rrpo", step=float("nan")), InputError,
        ("setting 'step'", "nan")),
    # a step of 1e300 overflowed the first mirror step: an error blaming the set's rows
    Api("plan-step-1e300", _plan("robust-primal-dual", policy_step=1e300), InputError,
        ("setting 'policy_step'", "1e+300", "1e+12")),
    Api("plan-epigraph-step-1e300", _plan("epirc-pgs", step=1e300), InputError,
        ("setting 'step'", "1e+12")),
    Api("plan-unknown-option", _plan(stepsize=1.0), InputError,
        ("'stepsize'", "rnpg", "step")),
    Api("plan-unknown-planner", _plan("rnpgg"), InputError, ("'rnpgg'", "rnpg")),
    Api("plan-planner-None", _plan(None), InputError, ("None", "rnpg")),
    Api("plan-unknown-start", _plan(start="warm"), InputError, ("'warm'", "uniform")),
    Api("plan-negative-start", _plan("robust-primal-dual",
                                     start=np.array([[1.5, -0.5]] * 3)),
        InputError, ("start[0, 1]", "-0.5")),
    Api("plan-nan-model", _nan_model, InputError, ("nan",)),
    Api("plan-no-set", lambda f: _P().plan(small_model(), None, "rnpg", iterations=3),
        InputError, ("UncertaintySet", "NoneType")),
    Api("planner-unknown", lambda f: _P().planner("nope"), InputError, ("'nope'",)),
    Api("register-not-a-planner", lambda f: _P().register("x"), InputError,
        ("Planner", "str")),
    Api("register-entrants-unknown", lambda f: _P().register_entrants(only=["nope"]),
        InputError, ("'nope'", "rnpg")),
    Api("register-entrants-a-name", lambda f: _P().register_entrants(only="nope"),
        InputError, ("'nope'",)),
    Api("duality-gap-not-a-record", lambda f: _P().record_duality_gap(
        small_model(), rx.L1Ball(small_model().P, 0.1), {"key": 1}), InputError,
        ("record", "'bracket'", "level=")),
    # the bracket of riverswim-6 against a garnet: "strong duality fails", silently false
    Api("duality-gap-of-another-model", _gap_of_another_model, InputError,
        ("riverswim-6/l1/0.05", "S = 6", "S = 3")),
    # rcmdp_exact.planners imported before the leaderboard: "unknown entrant 'rnpg'"
    Api("score-a-planner-after-importing-planners", _score_after_planners,
        check=lambda res, folder: res == ["rnpg", "0"]),
]

# --------------------------------------------------------------------------- solve_mdp, evaluate
def _garnet():
    return rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0)


def _big_sparse_model(S=2000, A=4):
    """S states, A actions, every action staying put (a sparse kernel built in
    milliseconds, where a garnet of this size takes seconds to draw)."""
    P = sp.csr_array((np.ones(S * A), np.repeat(np.arange(S), A), np.arange(S * A + 1)),
                     shape=(S * A, S))
    return rx.TabularCMDP(P, np.zeros((S, A)), gamma=0.9)


def _solve(method="policy_iteration", **kw):
    return lambda f: rx.solve_mdp(_garnet(), method, **kw)


def _evaluate(policy=None, **kw):
    return lambda f: rx.evaluate(_garnet(), np.full((3, 2), 0.5) if policy is None
                                 else policy, **kw)


def _one_state(method):
    def call(folder):
        m = rx.TabularCMDP(np.ones((1, 2, 1)), np.array([[1.0, 2.0]]), gamma=0.9, p0=0)
        return rx.solve_mdp(m, method)
    return call


def _sparse_near_one(folder):
    """3,000 states stored sparse, gamma = 0.99999 (values near 5e4): policy iteration
    certified, its value checked against value iteration (a second method) and against
    evaluate of its policy by the sparse LU."""
    rng = np.random.default_rng(0)
    S, A, nnz = 3000, 3, 3
    idx = np.sort(rng.integers(0, S, size=(S * A, nnz)), axis=1)
    P = sp.csr_array((rng.dirichlet(np.ones(nnz), size=S * A).ravel(), idx.ravel(),
                      np.arange(0, S * A * nnz + 1, nnz)), shape=(S * A, S))
    P.sum_duplicates()
    m = rx.TabularCMDP(P, rng.random((S, A)), gamma=0.99999, p0=0)
    a, b = rx.solve_mdp(m), rx.solve_mdp(m, "value_iteration", max_iter=5000)
    ev = rx.evaluate(m, a.policy, method="lu")
    return m.is_sparse, a, b, ev


def _agree(res, folder):
    sparse, a, b, ev = res
    assert sparse and a.success and b.success, (a.message, b.message)
    assert abs(a.value - b.value) <= a.error_bound + b.error_bound
    assert abs(ev.value - a.value) <= ev.error_bound + a.error_bound


# --------------------------------------------------------------------------- exact answers
def _exact_optimum(P, r, gamma):
    """v* of the MDP the float arrays define, each float an exact rational: policy
    iteration in exact arithmetic (Gauss-Jordan over fractions), written for this test
    (an independent method: no float, no package code)."""
    from fractions import Fraction as F
    S, A, _ = P.shape
    Pf = [[[F(float(x)) for x in P[s, a]] for a in range(A)] for s in range(S)]
    rf = [[F(float(x)) for x in r[s]] for s in range(S)]
    g = F(float(gamma))
    pol = [0] * S
    while True:
        M = [[F(int(i == j)) - g * Pf[i][pol[i]][j] for j in range(S)] + [rf[i][pol[i]]]
             for i in range(S)]
        for col in range(S):
            piv = next(i for i in range(col, S) if M[i][col] != 0)
            M[col], M[piv] = M[piv], M[col]
            for i in range(S):
                if i != col and M[i][col] != 0:
                    f = M[i][col] / M[col][col]
                    M[i] = [x - f * y for x, y in zip(M[i], M[col], strict=True)]
        v = [M[i][S] / M[i][i] for i in range(S)]
        q = [[rf[s][a] + g * sum(Pf[s][a][j] * v[j] for j in range(S)) for a in range(A)]
             for s in range(S)]
        new = [pol[s] if q[s][pol[s]] == max(q[s]) else q[s].index(max(q[s]))
               for s in range(S)]
        if new == pol:
            return v
        pol = new


def _hard_mdp(S, A, gamma, scale, seed, sparse=False):
    """Rows with exact zeros beside entries of 1e-15 (and larger ones), rewards of
    ``scale``."""
    rng = np.random.default_rng(seed)
    P = rng.random((S, A, S))
    P[P < 0.6] = 0.0
    P[..., 0] += 1e-15
    P /= P.sum(-1, keepdims=True)
    R = rng.normal(size=(S, A)) * scale
    return rx.TabularCMDP(sp.csr_array(P.reshape(S * A, S)) if sparse else P, R,
                          gamma=gamma, p0=0)


def _all_methods(S, A, gamma, scale, seed, sparse=False, **kw):
    def call(folder):
        m = _hard_mdp(S, A, gamma, scale, seed, sparse)
        P = m.P_sparse.toarray().reshape(S, A, S)
        return _exact_optimum(P, np.asarray(m.r), m.gamma), [
            rx.solve_mdp(m, meth, **kw) for meth in
            ("policy_iteration", "value_iteration", "modified_policy_iteration", "lp")]
    return call


def _within_bound(res, folder):
    """Every method's v is within its own error_bound of the exact v*, and says so."""
    from fractions import Fraction as F
    vstar, results = res
    for r in results:
        assert r.success, (r.method, r.message)
        err = max(abs(F(float(x)) - y) for x, y in zip(r.v, vstar, strict=True))
        assert err <= F(float(r.error_bound)), (r.method, float(err), r.error_bound)
        assert r.converged == (str(r.status) == "converged"), (r.method, r.status)


def _lp_capped(folder):
    return (_exact_optimum(*_arrays(_hard_mdp(7, 4, 0.995, 1.0, 5))),
            [rx.solve_mdp(_hard_mdp(7, 4, 0.995, 1.0, 5), "lp", max_iter=1)])


def _arrays(m):
    return m.P_sparse.toarray().reshape(m.n_states, m.n_actions, m.n_states), \
        np.asarray(m.r), m.gamma


def _lp_capped_says_so(res, folder):
    _within_bound(res, folder)
    assert "iteration limit max_iter=1" in res[1][0].message, res[1][0].message
    assert "certified policy iteration" in res[1][0].message, res[1][0].message


def _backward(P=None, r=None, horizon=3, **kw):
    P = np.full((3, 2, 3), 1 / 3) if P is None else P
    r = np.ones((3, 2)) if r is None else r
    return lambda f: rx.backward_induction(P, r, horizon, **kw)


SOLVERS = [
    Api("solve-unknown-method", _solve("policy-iteration"), InputError,
        ("'policy-iteration'", "'policy_iteration'")),
    Api("solve-max-iter-zero", _solve("value_iteration", max_iter=0), InputError,
        ("max_iter", "0")),
    Api("solve-max-iter-fractional", _solve("value_iteration", max_iter=2.5), InputError,
        ("max_iter", "2.5")),
    Api("solve-tol-nan", _solve(tol=float("nan")), InputError, ("tol", "nan")),
    Api("solve-tol-zero", _solve(tol=0.0), InputError, ("tol", "0")),
    # k, discount and v0 were checked only by the methods that use them; other methods
    # took k=-1, discount=nan and a v0 of NaN or of the wrong length without a word
    Api("solve-k-negative-with-value-iteration", _solve("value_iteration", k=-1),
        InputError, ("k", "-1")),
    Api("solve-discount-nan-discounted", _solve(discount=float("nan")), InputError,
        ("discount", "nan")),
    Api("solve-v0-nan-with-policy-iteration", _solve(v0=np.full(3, np.nan)), InputError,
        ("v0[0]", "nan")),
    Api("solve-v0-wrong-length", _solve(v0=np.zeros(5)), InputError, ("v0", "(5,)")),
    # a raw numpy MemoryError of 43.7 TiB
    Api("solve-horizon-10^12", _solve(horizon=10**12), InputError,
        ("horizon", "10^6", "LIMITS")),
    Api("solve-horizon-at-the-limit-of-a-big-model", lambda f: rx.solve_mdp(
        _big_sparse_model(), horizon=10**6),
        InputError, ("horizon", "would hold", "64,000 bytes each", "MAX_INPUT_BYTES")),
    Api("solve-horizon-negative", _solve(horizon=-1), InputError, ("horizon", "-1")),
    Api("solve-lam-nan", _solve(lam=np.nan), InputError, ("lam[0]", "nan")),
    Api("solve-nan-reward", lambda f: rx.TabularCMDP(
        _garnet().P, np.where(np.eye(3, 2) > 0, np.nan, 0.0), gamma=0.9), InputError,
        ("nan", "(s=0, a=0)")),
    Api("solve-inf-reward", lambda f: rx.TabularCMDP(
        _garnet().P, np.where(np.eye(3, 2) > 0, np.inf, 0.0), gamma=0.9), InputError,
        ("inf",)),
    Api("solve-one-state-lp", _one_state("lp"),
        check=lambda r, f: r.success and abs(r.value - 20.0) <= 1e-9),
    Api("solve-one-state-value-iteration", _one_state("value_iteration"),
        check=lambda r, f: r.success and abs(r.value - 20.0) <= 1e-9),
    Api("solve-3000-sparse-states-gamma-0.99999", _sparse_near_one, check=_agree,
        marks=("slow",)),
    Api("evaluate-unknown-method", _evaluate(method="direct"), InputError,
        ("'direct'", "'lu'")),
    # check=False skipped the method's check: an unknown method ran the default
    Api("evaluate-unknown-method-unchecked", _evaluate(method="direct", check=False),
        InputError, ("'direct'", "'lu'")),
    Api("evaluate-check-not-a-bool", _evaluate(check="no"), InputError,
        ("check", "str", "True or False")),
    Api("evaluate-negative-policy", _evaluate(np.array([[1.5, -0.5]] * 3)), InputError,
        ("policy[0, 1]", "-0.5")),
    Api("evaluate-nan-policy", _evaluate(np.full((3, 2), np.nan)), InputError,
        ("policy[0, 0]", "nan")),
    Api("evaluate-rows-not-summing-to-1", _evaluate(np.full((3, 2), 0.4)), InputError,
        ("policy[0, :]", "0.8")),
    Api("evaluate-action-out-of-range", _evaluate(np.array([0, 5, 0])), InputError,
        ("policy[1] = 5", "0..1")),
    Api("evaluate-one-state-one-action", lambda f: rx.evaluate(rx.TabularCMDP(
        np.ones((1, 1, 1)), np.ones((1, 1)), gamma=0.9), [[1.0]]),
        check=lambda r, f: abs(r.value - 10.0) <= 1e-12),
    Api("evaluate-finite-horizon-10^12", lambda f: rx.evaluate_finite_horizon(
        _garnet(), np.full((3, 2), 0.5), horizon=10**12), InputError,
        ("horizon", "10^6")),
    # every method against exact policy iteration over the rationals, within its own
    # error_bound: rows with exact zeros and 1e-15 entries, dense and sparse, S = 1,
    # A = 1, gamma near 1, rewards of 1e6 and of 1e-300, gamma = 0
    *[Api(f"solve-exact-{name}", _all_methods(*args, **kw), check=_within_bound)
      for name, args, kw in [
          ("dense", (4, 3, 0.9, 1.0, 0), {}),
          ("sparse", (4, 3, 0.9, 1.0, 0, True), {}),
          ("one-state", (1, 3, 0.99, 1.0, 1), {}),
          ("one-action", (3, 1, 0.999, 1.0, 2), {}),
          ("gamma-1-1e-9-sparse", (4, 2, 1 - 1e-9, 1.0, 2, True), {}),
          ("rewards-1e6-gamma-1-1e-10", (5, 3, 1 - 1e-10, 1e6, 7), {}),
          ("rewards-1e-300", (4, 3, 0.95, 1e-300, 4), {}),
          ("gamma-0", (3, 2, 0.0, 1.0, 0), {}),
          ("k-1", (5, 3, 0.99, 1.0, 3), {"k": 1}),
      ]],
    Api("solve-lp-stopped-by-max-iter-says-so", _lp_capped, check=_lp_capped_says_so),
    # values beyond float64 came back inf and NaN, marked converged with error_bound inf
    Api("solve-values-overflow", lambda f: rx.solve_mdp(_hard_mdp(3, 2, 0.999, 1e306, 1)),
        InputError, ("overflow float64", "1000", "rescale")),
    Api("solve-values-overflow-lp", lambda f: rx.solve_mdp(
        _hard_mdp(3, 2, 0.999, 1e306, 1), "lp"), InputError, ("overflow float64",)),
    Api("solve-horizon-values-overflow", lambda f: rx.solve_mdp(
        _hard_mdp(3, 2, 0.5, 1e307, 1), horizon=100), InputError,
        ("overflow float64", "100", "horizon")),
    # backward_induction checked only horizon and discount: NaN came back as values,
    # wrong shapes failed inside numpy, lam without c and policy="no" were ignored
    Api("backward-r-nan", _backward(r=np.full((3, 2), np.nan)), InputError,
        ("r[0, 0]", "nan")),
    Api("backward-r-one-dimensional", _backward(r=np.ones(3)), InputError,
        ("r", "(S, A)", "(3,)")),
    Api("backward-r-no-states", _backward(P=np.zeros((0, 2, 0)), r=np.zeros((0, 2))),
        InputError, ("r", "(0, 2)")),
    Api("backward-P-wrong-shape", _backward(P=np.ones((2, 2))), InputError,
        ("P", "(3, 2, 3)", "(2, 2)")),
    Api("backward-P-nan", _backward(P=np.full((3, 2, 3), np.nan)), InputError,
        ("P[0, 0, 0]", "nan")),
    Api("backward-P-negative", _backward(P=np.full((3, 2, 3), -1 / 3)), InputError,
        ("P[0, 0, 0]", "negative")),
    Api("backward-P-rows-not-summing-to-1", _backward(P=np.full((3, 2, 3), 0.3)),
        InputError, ("P[0, 0, :]", "not 1")),
    Api("backward-sparse-P-wrong-rows", _backward(P=sp.csr_array(np.full((5, 3), 1 / 3))),
        InputError, ("(6, 3)", "(5, 3)")),
    Api("backward-P-a-string", _backward(P="P"), InputError, ("P", "str")),
    Api("backward-c-without-cost-axis", _backward(c=np.ones((3, 2))), InputError,
        ("c", "K", "(3, 2)")),
    Api("backward-c-nan", _backward(c=np.full((3, 2, 1), np.nan), lam=1.0), InputError,
        ("c[0, 0, 0]", "nan")),
    Api("backward-lam-wrong-length", _backward(c=np.ones((3, 2, 1)), lam=[1.0, 2.0]),
        InputError, ("lam", "(2,)")),
    Api("backward-lam-nan", _backward(c=np.ones((3, 2, 1)), lam=np.nan), InputError,
        ("lam", "nan")),
    Api("backward-lam-negative", _backward(c=np.ones((3, 2, 1)), lam=-1.0), InputError,
        ("lam", "-1.0", ">= 0")),
    Api("backward-lam-without-c", _backward(lam=5.0), InputError, ("lam", "without c")),
    Api("backward-policy-not-a-bool", _backward(policy="no"), InputError,
        ("policy", "'no'", "True or False")),
    Api("backward-values-overflow", _backward(r=np.full((3, 2), 1e308)), InputError,
        ("overflow float64", "rescale")),
    Api("backward-one-state-one-action", _backward(
        P=np.ones((1, 1, 1)), r=np.full((1, 1), 2.0), horizon=5, discount=0.5,
        policy=True),
        check=lambda r, f: r.v[0] == 2.0 * (1 - 0.5 ** 5) / 0.5 and r.policy.shape == (5, 1, 1)),
]

# --------------------------------------------------------------------------- the protocol's spec
def _spec(**kw):
    from rcmdp_exact.protocol import ReproduceSpec
    return lambda f: ReproduceSpec(**kw)


def _your_model(**kw):
    from rcmdp_exact.protocol import YourModel
    return lambda f: YourModel("mine.npz", **kw)


def _reproduce(db="runs.sqlite", out=None, spec=None):
    def call(folder):
        from rcmdp_exact.protocol import ReproduceSpec, reproduce
        s = ReproduceSpec(tests=["inventory"], algorithms=["pg"], quick=True, seeds=1,
                          episodes=1, bracket_seeds=0) if spec is None else spec(folder)
        return reproduce(s, folder / db if isinstance(db, str) else db,
                         out if not isinstance(out, str) else folder / out, workers=1)
    return call


def _missing_model(folder):
    from rcmdp_exact.protocol import ReproduceSpec, YourModel
    return ReproduceSpec(model=YourModel(str(folder / "missing.npz")))


def _protocol_module():
    import rcmdp_exact.protocol as protocol

    return protocol


PROTOCOL = [
    # an empty list planned no job at all (tests) or failed in plan() with an
    # IndexError (algorithms); a number or None was a TypeError
    Api("spec-tests-empty", _spec(tests=[]), InputError, ("tests", "empty")),
    Api("spec-algorithms-empty", _spec(algorithms=[]), InputError, ("algorithms", "empty")),
    Api("spec-tests-a-number", _spec(tests=5), InputError, ("tests", "int")),
    # a list inside the list was a raw "unhashable type" TypeError
    Api("spec-tests-a-list-of-lists", _spec(tests=[["1A"]]), InputError,
        ("tests", "['1A']", "list")),
    Api("spec-algorithms-a-set-inside", _spec(algorithms=[{"pg"}]), InputError,
        ("algorithms", "set")),
    Api("spec-algorithms-none", _spec(algorithms=None), InputError,
        ("algorithms", "NoneType")),
    Api("spec-tests-unknown", _spec(tests=["1C"]), rx.OptionError, ("'1C'", "'1A'")),
    Api("spec-algorithms-twice-kept-once", _spec(tests=["1A", "1A"], algorithms="pg,pg"
                                                 .split(",")),
        check=lambda s, f: s.tests == ("1A",) and s.algorithms == ("pg",)),
    # options as a string or a list were a ValueError/TypeError of dict(); the spec's
    # own fields as options a TypeError in jobs() ("multiple values for 'seed'")
    Api("spec-options-a-string", _spec(options="critic"), InputError,
        ("options", "'critic'", "mapping")),
    Api("spec-options-set-the-seed", _spec(options={"seed": 3}), InputError,
        ("['seed']", "spec's own fields")),
    Api("spec-options-set-the-domain", _spec(options={"domain": "nav1"}), InputError,
        ("['domain']",)),
    # a bad number among the options was accepted by the spec and refused only when
    # its jobs were planned (spec.jobs(), inside reproduce); now when the spec is built
    Api("spec-options-negative-draws", _spec(options={"n_draws": -5}), InputError,
        ("n_draws", ">= 1", "-5")),
    Api("spec-options-delta-out-of-range", _spec(options={"delta": 2.0}), InputError,
        ("delta", "(0, 1)")),
    Api("spec-options-huge-sampled-episodes",
        _spec(options={"sampled_episodes": 10**18}), InputError,
        ("sampled_episodes", "limit")),
    Api("spec-options-radius-a-string", _spec(options={"radius": "0.1"}), InputError,
        ("radius", "'0.1'")),
    Api("your-model-unknown-support", _your_model(support="bogus"), rx.OptionError,
        ("support", "'bogus'", "'nominal'")),
    Api("your-model-support-a-number", _your_model(support=3), rx.OptionError,
        ("support", "3")),
    Api("your-model-missing-file", lambda f: _missing_model(f).jobs(), LoadError,
        ("missing.npz", "does not exist")),
    Api("reproduce-missing-model-file-before-any-store", lambda f: (
        _reproduce(spec=_missing_model)(f)), LoadError, ("missing.npz",)),
    # out=5 failed with a TypeError after every job had been computed and stored
    Api("reproduce-out-a-number", _reproduce(out=5), InputError, ("out", "int")),
    Api("reproduce-db-a-number", _reproduce(db=5), InputError, ("db", "int")),
    # numpy's numbers where ints are legal were accepted and kept as they came: the
    # store key's JSON then failed (a raw "Object of type int64 is not JSON
    # serializable" TypeError, after the spec had been accepted)
    Api("run-spec-numpy-seed-and-episodes-keyed", lambda f: _protocol_module().RunSpec(
        "nav1", "pg", seed=np.int64(0), episodes=np.int64(5)).key,
        check=lambda key, f: len(key) == 64),
    Api("ground-truth-spec-numpy-seed-keyed", lambda f: _protocol_module().GroundTruthSpec(
        "bracket", "nav1", seed=np.int64(3)).key, check=lambda key, f: len(key) == 64),
    Api("reproduce-spec-numpy-numbers-keyed", lambda f: [
        job.key for job in _protocol_module().ReproduceSpec(
            tests=["1A"], algorithms=["pg"], seeds=np.int64(1), episodes=np.int64(2),
            bracket_seeds=np.int64(0), options={"n_draws": np.int64(3)}).jobs()],
        check=lambda keys, f: keys and all(len(k) == 64 for k in keys)),
    Api("your-model-numbers-kept-plain", lambda f: _protocol_module().YourModel(
        "m.npz", horizon=np.int64(5), radius=-0.0),
        check=lambda m, f: type(m.horizon) is int and str(m.radius) == "0.0"),
    Api("reproduce-spec-a-string", lambda f: __import__(
        "rcmdp_exact.protocol", fromlist=["reproduce"]).reproduce("spec", f / "r.sqlite"),
        InputError, ("spec", "ReproduceSpec")),
]

# --------------------------------------------------------------------------- the bracket's options
def _bracket_case():
    m = rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0)
    return m, rx.L1Ball(m.P, 0.1)


def _bracket_refuses(**options):
    """``rcmdp_bracket`` with ``options``, where building its game (the first work)
    fails the row: a refusal must come before it."""
    def call(folder):
        m, uset = _bracket_case()
        with mock.patch("rcmdp_exact.ground_truth.bracket.RobustGame",
                        side_effect=AssertionError("the bracket started work")):
            rx.rcmdp_bracket(m, uset, progress=False, **options)
    return call


def _settings(**options):
    return lambda folder: rx.BracketSettings(**options)


def _replaced(**options):
    import dataclasses

    return lambda folder: dataclasses.replace(rx.BracketSettings(), **options)


def _bracket_saved(suffix):
    def call(folder):
        m, uset = _bracket_case()
        res = rx.rcmdp_bracket(m, uset, progress=False, split_point="incumbent",
                               max_boxes=3, dual_evaluations=0)
        return res, rx.Result.load(res.save(folder / f"bracket{suffix}"))
    return call


def _split_point_kept(pair, folder):
    res, back = pair
    assert res["split_point"] == "incumbent" and back["split_point"] == "incumbent"


def _budget_at_the_least_cost(folder):
    """The bracket of a model whose budget is the exact worst-case cost of its cheapest
    deterministic policy (found apart: every one evaluated by ``robust_evaluate``), as a
    budget rule "d = least" gives it: that policy is feasible, but costs that equal the
    budget to the last bit cannot be certified below it."""
    import itertools

    m = rx.domains.garnet(3, 2, 2, n_constraints=1, seed=9)
    uset = rx.L1Ball(m.P, 0.1)
    costs = [rx.robust_evaluate(m, np.eye(2)[list(acts)], uset).costs_worst[0]
             for acts in itertools.product(range(2), repeat=3)]
    return rx.rcmdp_bracket(m.replace(d=[min(costs)]), uset, progress=False, max_boxes=40,
                            dual_evaluations=0)


def _says_feas_tol(res, folder):
    # more boxes do not help (2,000 end the same way): the message said "raise
    # time_limit or max_boxes"
    assert res.status == "no_feasible_policy", res.message
    assert "feas_tol" in res.message and "max_boxes" not in res.message, res.message


SPLIT_POINT = ("split_point", "'middle', 'lp', 'incumbent'")

BRACKET = [
    # numpy's == compares an array element by element: an array of two names was a raw
    # "truth value of an array ... is ambiguous" ValueError that named no option, and
    # an array of one name (or a 0-d one) was accepted and kept: the settings were then
    # unhashable and a suite record's options not JSON (bracket_options)
    Api("bracket-split-point-an-array-of-two", _bracket_refuses(
        split_point=np.array(["lp", "lp"])), rx.OptionError, (*SPLIT_POINT, "array")),
    Api("bracket-split-point-an-array-of-one", _bracket_refuses(
        split_point=np.array(["lp"])), rx.OptionError, (*SPLIT_POINT, "array")),
    Api("settings-split-point-an-array-of-one", _settings(split_point=np.array(["lp"])),
        rx.OptionError, SPLIT_POINT),
    Api("settings-split-point-a-0d-array", _settings(split_point=np.array("lp")),
        rx.OptionError, SPLIT_POINT),
    Api("replace-split-point-an-array", _replaced(split_point=np.array(["lp", "x"])),
        rx.OptionError, SPLIT_POINT),
    Api("settings-split-point-an-array-of-1000", _settings(split_point=np.array(
        ["lp"] * 1000)), rx.OptionError, SPLIT_POINT),
    # a megabyte of text was repeated whole in the one-line message
    Api("settings-split-point-a-megabyte", _settings(split_point="x" * 10**6),
        rx.OptionError, SPLIT_POINT, absent=("x" * 1000,)),
    Api("bracket-split-point-bytes", _bracket_refuses(split_point=b"lp"), rx.OptionError,
        (*SPLIT_POINT, "b'lp'")),
    Api("bracket-split-point-upper-case", _bracket_refuses(split_point="LP"),
        rx.OptionError, (*SPLIT_POINT, "'LP'")),
    Api("bracket-split-point-a-list", _bracket_refuses(split_point=["lp"]), rx.OptionError,
        (*SPLIT_POINT, "['lp']")),
    Api("bracket-split-point-none", _bracket_refuses(split_point=None), rx.OptionError,
        (*SPLIT_POINT, "None")),
    Api("bracket-split-point-a-number", _bracket_refuses(split_point=3), rx.OptionError,
        (*SPLIT_POINT, "3")),
    Api("settings-split-point-numpy-str-kept-plain", _settings(split_point=np.str_("lp")),
        check=lambda s, f: type(s.split_point) is str and s.split_point == "lp"),
    # a name given as a bare string was iterated letter by letter: "unknown box_bounds
    # entry 'l'" for box_bounds="lp", "unknown variant 'v'" for variants="value"
    Api("settings-box-bounds-a-string", _settings(box_bounds="lp"), InputError,
        ("box_bounds", "'lp'", "('lp',)")),
    Api("bracket-variants-a-string", _bracket_refuses(variants="value"), InputError,
        ("variants", "'value'", "('value',)")),
    # a number was a raw "'int' object is not iterable" TypeError
    Api("settings-box-bounds-a-number", _settings(box_bounds=5), InputError,
        ("box_bounds", "int")),
    Api("settings-variants-a-number", _settings(variants=5), InputError,
        ("variants", "int")),
    # the LP split point with box bounds that solve no LP was accepted and split every
    # box at its middle, silently (and the result said split_point "lp")
    Api("settings-lp-split-point-without-the-lp-bound", _settings(
        split_point="lp", box_bounds=("local",)), InputError,
        ("split_point='lp'", "box_bounds", "('local',)", "'middle'")),
    Api("bracket-lp-split-point-with-no-box-bound", _bracket_refuses(
        split_point="lp", box_bounds=()), InputError, ("split_point='lp'", "box_bounds")),
    Api("replace-box-bounds-under-an-lp-split-point", lambda f: __import__(
        "dataclasses").replace(rx.BracketSettings(split_point="lp"), box_bounds=()),
        InputError, ("split_point='lp'", "box_bounds")),
    Api("settings-lp-split-point-with-default-bounds", _settings(split_point="lp"),
        check=lambda s, f: s.split_point == "lp" and s.box_bounds is None),
    # a variant named twice was computed twice (20 names: 20 equal targets, each a
    # tenth of a small model's bracket), and counted twice by the memory check
    Api("settings-variants-named-twice-kept-once", _settings(
        variants=["value", "lagrangian"] * 10), check=lambda s, f: s.variants == (
            "value", "lagrangian")),
    Api("settings-box-bounds-named-twice-kept-once", _settings(
        box_bounds=("lp", "local", "lp")), check=lambda s, f: s.box_bounds == (
            "lp", "local")),
    # the docstring of rcmdp_bracket says variants is None by default; None was a raw
    # "'NoneType' object is not iterable" TypeError
    Api("settings-variants-none-is-none", _settings(variants=None),
        check=lambda s, f: s.variants == ()),
    # the result said which box bounds were used but not where boxes were split, which
    # changes the bracket reached for the same budget; nor did the saved result
    Api("bracket-split-point-recorded-json", _bracket_saved(".json"),
        check=_split_point_kept),
    Api("bracket-split-point-recorded-npz", _bracket_saved(".npz"),
        check=_split_point_kept),
    Api("bracket-budget-at-the-least-cost-says-feas-tol", _budget_at_the_least_cost,
        check=_says_feas_tol),
]

HOSTILE = [*MODELS, *TESTING, *COUNTEREXAMPLES, *LIMITS, *STORE, *PLANNERS, *SOLVERS,
           *PROTOCOL, *BRACKET]


@pytest.mark.parametrize("row", rows(HOSTILE))
def test_hostile(row, tmp_path):
    run_api(row, tmp_path)


def _leaves_a_file_open(cycle):
    def call(folder):
        fh = open(folder / "left-open.txt", "w")  # the fault the row finds
        if cycle:  # only the collection after the call finalises it
            holder = {"file": fh}
            holder["self"] = holder
        raise InputError("a refusal that leaves its file open")
    return call


@pytest.mark.parametrize("cycle", [False, True])
def test_a_row_that_leaves_a_file_open_fails(cycle, tmp_path):
    """The harness's own check: a call that leaves a file open fails its row, also when
    the file is held only by a reference cycle made during the call (run_api freezes the
    objects alive before the call and collects the rest)."""
    row = Api("leaves-a-file-open", _leaves_a_file_open(cycle), InputError, ("refusal",))
    with pytest.raises(AssertionError, match=r"left-open\.txt"):
        run_api(row, tmp_path)


# --------------------------------------------------------------------------- one helper
#: Writes of output files outside rcmdp_exact/_io.py known today, in files of the suite
#: (its own helper owns them; listed so that no new one appears unseen).
KNOWN_DIRECT_WRITES = {
    "rcmdp_exact/suite/certify.py", "rcmdp_exact/suite/leaderboard.py",
    "rcmdp_exact/suite/report.py",
}


def test_every_output_is_written_by_the_one_atomic_helper():
    """No module but ``_io`` opens a file for writing, renames one into place or lets
    a library write a path (``savefig(path)``, ``np.save(path)``, ``write_text``):
    outputs go through ``write_atomic`` (``save_json``, ``save_npz``).  A temporary
    copy of a set inside a temporary folder (``ground_truth/boxes.py``) is no output."""
    import re

    root = Path(rx.__file__).resolve().parent
    pattern = re.compile(r"\.write_text\(|\.write_bytes\(|open\([^)]*[\"'][wax]b?[\"']|"
                         r"np\.save[z_]*\(|\.savefig\((?!fh)|os\.replace\(|to_csv\(")
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent))
        if rel in ("rcmdp_exact/_io.py",):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if pattern.search(code):
                found.setdefault(rel, []).append(n)
    allowed = {"rcmdp_exact/cli/recover.py": "moves the damaged store and its WAL",
               "rcmdp_exact/ground_truth/boxes.py": "a set copied through a temporary "
                                                   "folder, not an output"}
    new = {f: lines for f, lines in found.items() if f not in allowed
           and f not in KNOWN_DIRECT_WRITES}
    assert not new, f"writes that bypass rcmdp_exact._io.write_atomic: {new}"

"""The trainer protocol's worked example (docs/your_learner.md) runs as written.

The page's first code block is saved as a module and given to ``rcmdp reproduce
--trainer`` on a model saved to a file, in a fresh process; the table's cells are then
recomputed from the stored policies by an independent T-step evaluation (a plain loop
of backward induction written here), and the stored policies are the ones the example
gives when it is called again with the run's training seed.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "your_learner.md"


def example_code() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", PAGE.read_text("utf-8"), re.S | re.M)
    return blocks[0]


def t_step(model, policy, P) -> tuple[float, float]:
    """Undiscounted T-step value and summed cost from p0 of a stationary policy on the
    kernel P (terminal states earn nothing), by a plain backward loop."""
    S, A = model.n_states, model.n_actions
    R, C = np.asarray(model.R), np.asarray(model.C).sum(axis=-1)
    v, c = np.zeros(S), np.zeros(S)
    for _ in range(model.horizon):
        nv, nc = np.zeros(S), np.zeros(S)
        for s in range(S):
            if model.terminal[s]:
                continue
            for a in range(A):
                for s2 in range(S):
                    w = policy[s, a] * P[s, a, s2]
                    nv[s] += w * (R[s, a, s2] + v[s2])
                    nc[s] += w * (C[s, a, s2] + c[s2])
        v, c = nv, nc
    return float(model.p0 @ v), float(model.p0 @ c)


def test_example_is_short():
    assert len(example_code().strip().splitlines()) < 80


@pytest.mark.slow
def test_the_worked_example_runs_through_a_reproduction(tmp_path):
    import rcmdp_exact as rx
    from rcmdp_exact.protocol import RunSpec, Store

    (tmp_path / "my_learner.py").write_text(example_code())
    model = rx.domains.garnet(6, 3, 3, n_constraints=1, seed=3, gamma=0.9, horizon=12)
    model = model.replace(d=[0.8 * float(rx.solve_cmdp(model.replace(d=[1e6])).costs[0])])
    model.save(tmp_path / "m.npz")
    other = model.with_transitions(0.7 * np.asarray(model.P) + 0.3 / 6)
    other.save(tmp_path / "other.npz")
    (tmp_path / "perts.json").write_text('[{"name": "mixed", "file": "other.npz"}]')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "rcmdp_exact", "reproduce", "--model", "m.npz",
         "--perturbations", "perts.json", "--trainer", "my_learner:train", "--algorithms",
         "pg,cpg", "--seeds", "2", "--episodes", "60", "--bracket-seeds", "1", "--out",
         "rep", "--no-progress", "--workers", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader((tmp_path / "rep" / "table1.csv").open()))
    assert {(r["test"], r["algorithm"], r["mode"]) for r in rows} == {
        ("model", a, m) for a in ("pg", "cpg") for m in ("greedy", "stochastic")}
    assert "Your model" in (tmp_path / "rep" / "table1.md").read_text()

    sys.path.insert(0, str(tmp_path))
    try:
        import my_learner
    finally:
        sys.path.remove(str(tmp_path))
    settings = [model, other]
    T = model.horizon
    budget = float(model.d[0]) * T / sum(model.gamma ** i for i in range(T))
    with Store(tmp_path / "rep" / "runs.sqlite", readonly=True) as store:
        runs = store.runs()
        assert len(runs) == 4
        for r in rows:
            pens = []
            for run in (x for x in runs if x["algorithm"] == r["algorithm"]):
                pi = np.asarray(run["info"]["policy"])
                spec = RunSpec.from_fields(run["spec"])
                # the stored policy is the example's, trained on the model itself (your
                # model is judged on itself unless --estimate asks for an estimation)
                assert spec.radius == 0.1 and spec.estimation_episodes == 0
                again = my_learner.train(model, spec.algorithm, seed=spec.seeds()["training"],
                                         episodes=spec.episodes).policy_table()
                assert np.array_equal(again, pi)
                if r["mode"] == "greedy":
                    pi = np.eye(model.n_actions)[np.argmax(pi, axis=1)]
                vc = [t_step(model, pi, np.asarray(m.P)) for m in settings]
                v = np.mean([x[0] for x in vc])
                c = np.mean([x[1] for x in vc])
                pens.append(v - 500.0 * max(0.0, c - budget))
            assert float(r["mean"]) == np.float64(np.mean(pens)) or \
                abs(float(r["mean"]) - np.mean(pens)) <= 1e-9 * max(1.0, abs(np.mean(pens)))
            assert r["bound"] and float(r["bound"]) >= float(r["mean"]) - 1e-9


class _Fixed:
    """A trainer's result holding a given policy table."""

    def __init__(self, table):
        self.table, self.records = table, {}

    def policy_table(self):
        return self.table


@pytest.mark.parametrize("table, fact", [
    (np.full((3, 3), 1 / 3), "of shape (3, 3)"),
    (np.array([[0.5, 0.5], [np.nan, 0.5], [1.0, 0.0]]), "1 entries that are not finite "
                                                        "(first: state 1, action 0: nan)"),
    (np.array([[1.5, -0.5], [0.5, 0.5], [1.0, 0.0]]), "negative probability (state 0, "
                                                      "action 1: -0.5)"),
    (np.array([[0.5, 0.5], [0.5, 0.4], [1.0, 0.0]]), "row 1 sums to 0.9"),
])
def test_a_bad_policy_table_is_named_for_what_is_wrong(table, fact):
    """A NaN policy was blamed on its shape."""
    from rcmdp_exact.protocol.run import TrainerError, check_result

    with pytest.raises(TrainerError) as info:
        check_result(_Fixed(table), _Fixed, 3, 2)
    assert fact in str(info.value), str(info.value)
    assert "(S, A) = (3, 2)" in str(info.value)

"""Your own model on the command line (``--model``), any kind of set (``--set``), and
the run specifications that keep the paper's keys.

Commands run in fresh processes (``sys.executable -m rcmdp_exact``, working folder
``tmp_path``); reproductions use the deterministic stand-in trainer of
``test_experiments_standin.py`` unless the package's learners are the point.  Numbers
are checked against independent computations written here (a plain linear solve, a
plain backward loop), never against the code's own output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import examples, raises_fact, refused
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact as rx

ROOT = Path(__file__).resolve().parents[1]
TESTS_DIR = str(Path(__file__).resolve().parent)
STANDIN = "test_experiments_standin:standin_train"
SMALL = ["--trainer", STANDIN, "--algorithms", "pg,cpg", "--seeds", "2", "--episodes", "3",
         "--bracket-seeds", "1", "--no-progress", "--workers", "1"]


def rcmdp(cwd, *args, timeout=600):
    """``rcmdp ARGS`` in a fresh process (what a user runs), in the folder ``cwd``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [TESTS_DIR, str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "rcmdp_exact", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def one_line(proc, code=2) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def has(text: str, *facts: str) -> None:
    for fact in facts:
        assert fact in text, (fact, text)


def garnet_model(horizon=15, seed=2):
    g = rx.domains.garnet(6, 3, 3, n_constraints=1, seed=seed, gamma=0.9)
    return g if horizon is None else g.replace(horizon=horizon)


@pytest.fixture
def files(tmp_path):
    """A saved model with a horizon, one without, a perturbation and a set of another
    shape, in ``tmp_path``."""
    g = garnet_model()
    g.save(tmp_path / "m.npz")
    g.replace(horizon=None).save(tmp_path / "nohorizon.npz")
    g.with_transitions(0.8 * np.asarray(g.P) + 0.2 / 6).save(tmp_path / "p1.npz")
    (tmp_path / "perts.toml").write_text('[[perturbation]]\nname = "mixed"\n'
                                         'group = "mix"\nfile = "p1.npz"\n')
    rx.L1Ball(np.asarray(rx.domains.garnet(4, 2, 2, seed=0).P), 0.1).save(tmp_path / "set4")
    return tmp_path


def policy_values(model, pi):
    """Discounted value and cost from p0 by one dense linear solve, and the T-step
    value and cost by a plain backward loop (terminal states earn nothing)."""
    P = np.asarray(model.P)
    live = ~np.asarray(model.terminal)
    r = np.einsum("sat,sat->sa", P, np.asarray(model.R)) * live[:, None]
    c = np.einsum("sat,sat->sa", P, np.asarray(model.C)[..., 0]) * live[:, None]
    Ppi = np.einsum("sa,sat->st", pi, P) * live[:, None]
    A = np.eye(model.n_states) - model.gamma * Ppi
    v = np.linalg.solve(A, (pi * r).sum(1))
    cv = np.linalg.solve(A, (pi * c).sum(1))
    w, wc = np.zeros(model.n_states), np.zeros(model.n_states)
    for _ in range(model.horizon):
        w, wc = (pi * r).sum(1) + Ppi @ w, (pi * c).sum(1) + Ppi @ wc
    return model.p0 @ v, model.p0 @ cv, model.p0 @ w, model.p0 @ wc


# --------------------------------------------------------------------------- five commands
@pytest.mark.slow
def test_a_saved_model_runs_through_all_five_commands(files):
    g = rx.TabularCMDP.load(files / "m.npz")
    proc = rcmdp(files, "evaluate", "--model", "m.npz", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["policy"]: r for r in json.loads(proc.stdout)["domains"]["model"]["policies"]}
    uniform = np.full((6, 3), 1 / 3)
    v, c, vT, cT = policy_values(g, uniform)
    u = rows["uniform random"]
    assert u["discounted_value"] == pytest.approx(v, rel=1e-10)
    assert u["discounted_costs"][0] == pytest.approx(c, rel=1e-10)
    assert u["value"] == pytest.approx(vT, rel=1e-10)
    assert u["costs"][0] == pytest.approx(cT, rel=1e-10)
    # the optimum of the reward alone beats every fixed policy in discounted value
    best = rows["optimal for the reward alone"]["discounted_value"]
    assert all(best >= r["discounted_value"] - 1e-10 for r in rows.values())

    proc = rcmdp(files, "verify", "--model", "m.npz", "--tabular-only")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "m.npz", "checks passed")
    assert "nav1" not in proc.stdout  # only the model unless the paper's are asked for

    proc = rcmdp(files, "ground-truth", "--model", "m.npz", "--perturbations", "perts.toml",
                 "--max-boxes", "5", "--out", "gt", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "== model:", "uncertainty set: l1", "test model: 2 settings")
    doc = json.loads((files / "gt" / "ground_truth.json").read_text())
    settings = {r["setting"] for r in doc["domains"]["model"]["rows"]}
    assert settings == {"model", "mixed"}

    proc = rcmdp(files, "train", "--model", "m.npz", "cpg", "--episodes", "40",
                 "--eval-every", "20", "--no-progress", "--out", "run")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "--model m.npz cpg", "CMDP optimum (LP, true)", "RCMDP bracket")
    res = rx.learners.TrainResult.load(files / "run.npz")
    # the printed true-model value is the exact value of the saved policy
    v_true = policy_values(g, res.policy_table())[0]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("trained, stochastic (true)"))
    assert float(line.split()[3]) == pytest.approx(v_true, abs=5e-4)

    proc = rcmdp(files, "reproduce", "--model", "m.npz", "--perturbations", "perts.toml",
                 "--algorithms", "pg,cpg", "--seeds", "2", "--episodes", "20",
                 "--eval-every", "10", "--bracket-seeds", "1", "--out", "rep",
                 "--no-progress")
    assert proc.returncode == 0, proc.stderr
    table = (files / "rep" / "table1.csv").read_text()
    assert table.count(",model,") == 4  # pg and cpg, greedy and stochastic


def test_frozenlake_with_a_cost_on_holes_trains_cpg_from_a_saved_file(tmp_path):
    gymnasium = pytest.importorskip("gymnasium")
    env = gymnasium.make("FrozenLake-v1")
    holes = env.unwrapped.desc.ravel() == b"H"
    C = np.zeros((16, 4, 16, 1))
    C[:, :, holes, 0] = 1.0
    model = rx.TabularCMDP.from_gymnasium(env, costs=C, d=[0.1])
    model.save(tmp_path / "frozen.npz")
    proc = rcmdp(tmp_path, "train", "--model", "frozen.npz", "cpg", "--episodes", "100",
                 "--no-progress", "--no-bracket")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "--model frozen.npz cpg", "100 episodes", "trained, greedy (worst case)")
    opt = rx.solve_cmdp(model)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("CMDP optimum (LP, true)"))
    assert float(line.split()[-2]) == pytest.approx(opt.value, abs=5e-4)


# --------------------------------------------------------------------------- bad files
@pytest.mark.parametrize("kind", ["missing", "npy", "set", "truncated", "text", "pickle"])
def test_a_broken_or_foreign_model_file_is_one_line(files, kind):
    path = files / "bad.npz"
    if kind == "npy":
        path = files / "bad.npy"
        np.save(path, np.zeros(3))
    elif kind == "set":
        path = files / "set4.npz"
    elif kind == "truncated":
        path.write_bytes((files / "m.npz").read_bytes()[:200])
    elif kind == "text":
        path.write_text("not a model")
    elif kind == "pickle":
        path.write_bytes(b"\x80\x04K\x01.")
    line = one_line(refused(files, "train", "--model", path.name, "cpg"))
    facts = {"missing": "does not exist", "npy": "single .npy array",
             "set": "it is a saved L1Ball", "truncated": "truncated or damaged",
             "text": "not an .npz archive", "pickle": "pickle"}
    has(line, "rcmdp train: error: --model", repr(path.name), facts[kind])


@pytest.mark.parametrize("command", [["evaluate"], ["verify"], ["ground-truth"],
                                     ["train", "pg"], ["reproduce"]])
def test_every_command_refuses_a_foreign_model_file(files, command):
    line = one_line(refused(files, *command, "--model", "set4.npz"))
    has(line, f"rcmdp {command[0]}: error: --model 'set4.npz'", "not a model file",
        "L1Ball")


def test_a_set_file_of_another_shape_is_refused(files):
    line = one_line(refused(files, "ground-truth", "--model", "m.npz", "--set-file", "set4"))
    has(line, "--set-file 'set4'", "does not fit --model 'm.npz'", "(6, 3, 6)")


def test_models_without_a_horizon_need_one(files):
    for command in (["train", "cpg"], ["reproduce"], ["ground-truth"]):
        line = one_line(refused(files, *command, "--model", "nohorizon.npz"))
        has(line, "--model 'nohorizon.npz' has no horizon", "--horizon T")
    proc = rcmdp(files, "train", "--model", "nohorizon.npz", "pg", "--horizon", "15",
                 "--episodes", "20", "--eval-every", "10", "--no-bracket", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    # evaluate and verify work without one (discounted metrics, unbounded episodes)
    proc = rcmdp(files, "evaluate", "--model", "nohorizon.npz")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "no horizon", "T = None")


@pytest.mark.parametrize(("args", "facts"), [
    (["evaluate", "--model", "m.npz", "--domain", "nav1"], ["--domain", "--model"]),
    (["ground-truth", "--model", "m.npz", "--n-draws", "3"], ["--n-draws", "--model"]),
    (["reproduce", "--model", "m.npz", "--tests", "1A"], ["--tests", "--model"]),
    (["train", "nav1", "pg", "--horizon", "5"], ["--horizon", "--model"]),
    (["train", "pg"], ["paper domain", "--model"]),
    (["train", "nav1", "pg", "--model", "m.npz"], ["not both"]),
    (["ground-truth", "--model", "m.npz", "--set", "kl", "--set-file", "set4"],
     ["--set", "--set-file"]),
    (["train", "--model", "m.npz", "pg", "--trainer", STANDIN, "--entropy", "1"],
     ["--entropy", "--trainer"]),
])
def test_options_that_do_not_go_with_model_are_refused(files, args, facts):
    has(one_line(refused(files, *args)), *facts)


# --------------------------------------------------------------------------- perturbations
@pytest.mark.parametrize(("text", "name", "facts"), [
    ('[[perturbation]]\nfile = "p1.npz"\ncolour = "red"\n', "p.toml",
     ["entry 0", "unknown key", "colour"]),
    ('[[perturbation]]\nname = "x"\n', "p.toml", ["entry 0 has no file"]),
    ('[{"file": "absent.npz"}]', "p.json", ["'absent'", "does not exist"]),
    ('[{"file": "p1.npz", "name": "model"}]', "p.json", ["'model'", "another name"]),
    ('[{"file": "p1.npz"}, {"file": "p1.npz"}]', "p.json", ["'p1'", "twice"]),
    ('[{"file": "other.npz"}]', "p.json", ["'other'", "another R"]),
    ("[[perturbation]\n", "p.toml", ["not valid TOML"]),
    ("x", "p.yaml", ["neither .toml nor .json"]),
])
def test_a_bad_perturbations_file_is_one_line(files, text, name, facts):
    g = rx.TabularCMDP.load(files / "m.npz")
    g.replace(R=np.asarray(g.R) + 1.0).save(files / "other.npz")
    (files / name).write_text(text)
    has(one_line(refused(files, "ground-truth", "--model", "m.npz", "--perturbations", name)),
        "--perturbations", *facts)


# --------------------------------------------------------------------------- reproduce
@pytest.mark.slow
def test_reproduction_keys_follow_the_content_of_the_model_file(files):
    proc = rcmdp(files, "reproduce", "--model", "m.npz", *SMALL, "--out", "rep")
    assert proc.returncode == 0, proc.stderr
    first = (files / "rep" / "table1.csv").read_text()
    assert first.count(",model,") == 4
    # the same content under another name: everything is already stored
    (files / "copy.npz").write_bytes((files / "m.npz").read_bytes())
    proc = rcmdp(files, "reproduce", "--model", "copy.npz", *SMALL, "--out", "rep")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "0 jobs computed")
    assert (files / "rep" / "table1.csv").read_text() == first
    # a changed file: new jobs, the old results stay (two configurations)
    g = rx.TabularCMDP.load(files / "m.npz")
    g.replace(d=[float(g.d[0]) * 0.5]).save(files / "m.npz")
    proc = rcmdp(files, "reproduce", "--model", "m.npz", *SMALL, "--out", "rep")
    assert proc.returncode == 0, proc.stderr
    assert "0 jobs computed" not in proc.stdout
    table = (files / "rep" / "table1.csv").read_text()
    configs = {line.split(",")[0] for line in table.splitlines()[1:]}
    assert len(configs) == 2


@pytest.mark.slow
def test_another_stores_report_is_not_overwritten_without_force(files):
    proc = rcmdp(files, "reproduce", "--model", "m.npz", *SMALL, "--out", "rep")
    assert proc.returncode == 0, proc.stderr
    before = (files / "rep" / "table1.csv").read_bytes()
    line = one_line(refused(files, "reproduce", "--model", "m.npz", *SMALL, "--out", "rep",
                          "--db", "other.sqlite"))
    has(line, "--out 'rep' holds the report of another results store", "runs.sqlite",
        "--force")
    assert not (files / "other.sqlite").exists()
    assert (files / "rep" / "table1.csv").read_bytes() == before
    line = one_line(refused(files, "report", "--db", "rep/runs.sqlite", "--out", "rep2",
                          "--tests", "1A"))
    has(line, "no run of this test")
    # the same store's report is its own: rewriting it is not overwriting
    proc = rcmdp(files, "report", "--db", "rep/runs.sqlite", "--out", "rep")
    assert proc.returncode == 0, proc.stderr
    proc = rcmdp(files, "reproduce", "--model", "m.npz", *SMALL, "--out", "rep",
                 "--db", "other.sqlite", "--force")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_a_set_kind_is_named_in_the_spec_and_the_report(files):
    proc = rcmdp(files, "reproduce", "--model", "m.npz", *SMALL, "--set", "linf",
                 "--out", "rep")
    assert proc.returncode == 0, proc.stderr
    report = (files / "rep" / "report.md").read_text()
    has(report, "uncertainty set: `linf` (LInfBall) built around the model's own kernel")
    from rcmdp_exact.protocol import Store

    with Store(files / "rep" / "runs.sqlite", readonly=True) as store:
        assert {r["spec"]["set_kind"] for r in store.runs()} == {"linf"}
        brackets = store.ground_truth("bracket")
        assert [dict(b["spec"]["estimation"])["set"] for b in brackets] == ["linf"]


# --------------------------------------------------------------------------- --set up front
@pytest.mark.parametrize(("args", "facts"), [
    (["train", "nav1", "adversarial-rcpg", "--set", "linf"],
     ["--set linf", "adversarial-rcpg needs an L1Ball", "LInfBall", "critic='exact'",
      "weighted-l1"]),
    (["train", "nav1", "rcpg-value", "--set", "kl"],
     ["--set kl", "KLBall", "critic='exact'"]),
    (["reproduce", "--set", "interval", "--out", "rep"], ["--set interval", "IntervalSet"]),
    (["train", "nav1", "rcpg-lagrangian", "--set", "s-l1", "--out", "rep"],
     ["--set s-l1", "SRectL1Ball", "critic='exact'"]),
    (["ground-truth", "--set", "weighted_l1", "--out", "rep"],
     ["'weighted_l1' is not a kind of set", "weighted-l1", "MODULE:CLASS"]),
    (["ground-truth", "--model", "m.npz", "--set", "os:path", "--out", "rep"],
     ["--set 'os:path'", "not a subclass", "UncertaintySet"]),
    (["ground-truth", "--model", "m.npz", "--set", "rcmdp_exact:FiniteSet", "--out", "rep"],
     ["--set 'rcmdp_exact:FiniteSet'", "from_counts", "kl"]),
    (["train", "nav1", "pg", "--set", "no_such_module:MySet", "--out", "rep"],
     ["--set 'no_such_module:MySet'", "cannot be imported"]),
])
def test_an_undefined_set_is_refused_before_any_work(files, args, facts):
    has(one_line(refused(files, *args)), *facts)
    assert not (files / "rep").exists()


def test_ground_truth_under_an_s_rectangular_set(files):
    """The exact worst case and the bracket take an s-rectangular set (the adversary
    answers the policy): the command runs and names the set."""
    proc = rcmdp(files, "ground-truth", "--model", "m.npz", "--set", "s-l1", "--time-limit",
                 "5", "--no-variants", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "uncertainty set: s-l1 (SRectL1Ball", "rcmdp bracket")


def test_train_with_another_set_names_it(files):
    proc = rcmdp(files, "train", "--model", "m.npz", "cpg", "--set", "interval",
                 "--episodes", "20", "--eval-every", "10", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "uncertainty set: interval (IntervalSet", "RCMDP bracket (set, value)")


# --------------------------------------------------------------------------- former flags
def test_former_flags_are_gone(files):
    """Renamed before the first release, so not kept: --bracket-time, --episodes and
    --train-on true are refused like any unknown option or value."""
    for argv in (["ground-truth", "--model", "m.npz", "--bracket-time", "30"],
                 ["ground-truth", "--episodes", "reference"],
                 ["train", "--model", "m.npz", "pg", "--train-on", "true"]):
        proc = rcmdp(files, *argv)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, argv


# --------------------------------------------------------------------------- specs
def test_default_specs_keep_their_json_and_keys():
    import dataclasses
    import hashlib

    from rcmdp_exact.protocol.spec import OPTIONAL_FIELDS, RunSpec, canonical_json

    spec = RunSpec("nav1", "cpg", 3, episodes=10)
    fields = spec.fields()
    assert not set(OPTIONAL_FIELDS) & set(fields) and "sources" not in fields
    old = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)
           if f.name not in OPTIONAL_FIELDS and f.name != "sources"}
    old.update(extra=[], kind="run", version=1)
    text = json.dumps(old, sort_keys=True, separators=(",", ":"))
    assert canonical_json(fields) == text
    assert spec.key == hashlib.sha256(text.encode()).hexdigest()
    other = dataclasses.replace(spec, set_kind="kl")
    assert other.fields()["set_kind"] == "kl" and other.key != spec.key
    # every kind is estimated from the same episodes; the training seed differs
    assert other.seeds()["estimation"] == spec.seeds()["estimation"]
    assert other.seeds()["training"] != spec.seeds()["training"]
    assert other.estimation_fields() == {**spec.estimation_fields(), "set": "kl"}


def test_specs_of_your_model_round_trip_and_check_their_fields():
    from rcmdp_exact import InputError
    from rcmdp_exact.protocol.spec import RunSpec

    spec = RunSpec("model", "pg", 0, model="ab" * 32, horizon=7, estimation_episodes=10,
                   perturbations=(("p", "g", "cd" * 32),), sources=(("model", "x", "y"),))
    again = RunSpec.from_fields(json.loads(json.dumps(spec.fields())))
    assert again == spec and again.key == spec.key
    assert spec.settings_fields()["perturbations"] == [["p", "g", "cd" * 32]]
    assert dataclasses_replace_key(spec, sources=()) == spec.key  # sources are not the key
    with raises_fact(InputError, "model", "'model'"):
        RunSpec("model", "pg", 0, estimation_episodes=1)
    with raises_fact(InputError, "estimation_episodes"):
        RunSpec("model", "pg", 0, model="ab")
    with raises_fact(InputError, "horizon", "'nav1'"):
        RunSpec("nav1", "pg", 0, horizon=3)


def dataclasses_replace_key(spec, **changes):
    import dataclasses

    return dataclasses.replace(spec, **changes).key


def test_a_worker_refuses_a_file_changed_after_planning(tmp_path):
    from rcmdp_exact import InputError
    from rcmdp_exact.protocol.user import ensure_sources, load_model_file

    g = garnet_model()
    g.save(tmp_path / "a.npz")
    _, digest = load_model_file(tmp_path / "a.npz")
    g.replace(d=[1.0]).save(tmp_path / "b.npz")
    with raises_fact(InputError, "b.npz", "changed after the reproduction was planned",
                     "planned 000000000000"):
        ensure_sources([("model", "0" * 64, tmp_path / "b.npz")])
    ensure_sources([("model", digest, tmp_path / "missing.npz")])  # already loaded


# --------------------------------------------------------------------------- set kinds
@pytest.fixture(scope="module")
def nav_estimate():
    model = rx.domains.paper_domain("nav1")
    return model, rx.estimate(model, 100, seed=0)


def test_every_kind_is_built_from_the_same_counts(nav_estimate):
    from rcmdp_exact.protocol.estimation import set_from_estimate, state_counts
    from rcmdp_exact.uncertainty import builtin_kinds

    model, est = nav_estimate
    counts = state_counts(est, model)
    assert counts.sum() == est.counts.sum()
    nxt = np.asarray(model.outcomes)
    assert np.all(counts[~est.uset.support] == 0)
    # one outcome count lands on its next state
    s, a = 7, 2
    for t in range(model.n_states):
        assert counts[s, a, t] == est.counts[s, a][nxt[s, a] == t].sum()
    term = np.flatnonzero(model.terminal)
    for kind in builtin_kinds(estimated=True):
        uset = set_from_estimate(kind, est, model)
        nominal = np.asarray(uset.nominal)
        assert np.allclose(nominal.sum(axis=2), 1.0)
        assert np.all(nominal[~est.uset.support] == 0)  # the ball's support
        for t in term:  # terminal rows stay self-loops
            assert np.all(nominal[t, :, t] == 1.0)


def test_weighted_l1_is_the_l1_ball_and_s_l1_contains_it(nav_estimate):
    from rcmdp_exact.protocol.estimation import set_from_estimate

    model, est = nav_estimate
    rng = np.random.default_rng(0)
    z = rng.normal(size=(4, model.n_states))
    l1 = est.uset.worst_case(z)
    w = set_from_estimate("weighted-l1", est, model).worst_case(z)
    scale = np.abs(z).max()
    assert np.max(np.abs(np.asarray(w.value) - np.asarray(l1.value))) <= 1e-9 * scale
    s_l1 = set_from_estimate("s-l1", est, model)
    for j in range(4):  # every kernel of the L1 ball is in the s-rectangular set
        assert np.all(s_l1.contains(np.asarray(l1.p)[j]))
    # each state's distance is within its budget, the sum of the ball's radii
    assert np.all(np.asarray(s_l1.distance(np.asarray(l1.p)[0]))
                  <= np.minimum(est.uset.alpha.sum(axis=1), 2 * model.n_actions) + 1e-9)


def test_the_python_reproduce_takes_your_model(files):
    sys.path.insert(0, TESTS_DIR)
    try:
        from test_experiments_standin import standin_train
    finally:
        sys.path.remove(TESTS_DIR)
    from rcmdp_exact.protocol import ReproduceSpec, YourModel, reproduce

    spec = ReproduceSpec(model=YourModel(files / "m.npz", perturbations=files / "perts.toml"),
                         algorithms=("pg",), seeds=1, episodes=2, quick=True,
                         trainer=standin_train)
    summary = reproduce(spec, files / "db.sqlite", files / "out", workers=1, progress=False)
    assert not summary.failed and summary.computed == 4  # 1 run, 3 ground-truth jobs
    rows = [r for r in summary.report.rows if r["test"] == "model"]
    assert {r["algorithm"] for r in rows} == {"pg"} and rows[0]["n_settings"] == 2


def test_which_report_files_are_existing_outputs(tmp_path):
    from rcmdp_exact.protocol.reproduction_report import REPORT_MARKER, foreign_report

    out = tmp_path / "rep"
    assert foreign_report(out, tmp_path / "a.sqlite") is None  # no folder
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert foreign_report(out, tmp_path / "a.sqlite") is None  # no report files
    (out / "table1.csv").write_text("x")
    # report files of an unknown store: existing outputs, unless the store is beside them
    assert "unknown results store" in foreign_report(out, tmp_path / "a.sqlite")
    # ... and exists already: a store that does not exist has written nothing
    assert "did not write" in foreign_report(out, out / "runs.sqlite")
    (out / "runs.sqlite").write_bytes(b"")
    assert foreign_report(out, out / "runs.sqlite") is None
    (out / REPORT_MARKER).write_text(json.dumps({"store": str((tmp_path / "a.sqlite")
                                                             .resolve())}))
    assert foreign_report(out, tmp_path / "a.sqlite") is None
    assert "another results store" in foreign_report(out, out / "runs.sqlite")


@settings(max_examples=examples(15), deadline=None)
@given(S=st.integers(2, 6), A=st.integers(1, 3), seed=st.integers(0, 10_000),
       n=st.integers(1, 60), horizon=st.integers(2, 12))
def test_sets_from_one_estimation_keep_their_invariants(S, A, seed, n, horizon):
    """On random models and data: the counts keep their total, every set's nominal is a
    kernel on the ball's support, the weighted ball has the ball's worst case (a second
    solver), the s-rectangular set contains the ball's worst-case kernels, and the
    L-infinity, interval and KL sets contain their own nominal."""
    from rcmdp_exact.protocol.estimation import set_from_estimate, state_counts
    from rcmdp_exact.uncertainty import builtin_kinds

    model = rx.domains.garnet(S, A, min(S, 3), n_constraints=1, seed=seed,
                              horizon=horizon)
    est = rx.estimate(model, n, seed=seed)
    counts = state_counts(est, model)
    assert counts.sum() == est.counts.sum() == est.visits.sum()
    z = np.random.default_rng(seed).normal(size=(2, S))
    l1 = est.uset.worst_case(z)
    for kind in builtin_kinds(estimated=True):
        uset = set_from_estimate(kind, est, model)
        nominal = np.asarray(uset.nominal)
        assert np.allclose(nominal.sum(axis=2), 1.0) and np.all(nominal >= 0)
        assert np.all(nominal[~est.uset.support] == 0)
        if kind == "weighted-l1":
            got = np.asarray(uset.worst_case(z).value)
            assert np.max(np.abs(got - np.asarray(l1.value))) <= 1e-9 * np.abs(z).max()
        elif kind == "s-l1":
            for j in range(2):
                assert np.all(uset.contains(np.asarray(l1.p)[j]))
        elif kind != "l1":
            assert np.all(uset.contains(nominal))


def test_train_judges_a_trainer_of_your_own(files):
    proc = rcmdp(files, "train", "--model", "m.npz", "cpg", "--trainer", STANDIN,
                 "--episodes", "5", "--no-progress", "--no-bracket")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, f"cpg ({STANDIN})", "5 episodes", "trained, greedy (worst case)")
    # the printed value on the true model is the exact value of the trainer's policy,
    # trained on the model itself (judged on itself) with the command's seed
    sys.path.insert(0, TESTS_DIR)
    try:
        from test_experiments_standin import standin_train
    finally:
        sys.path.remove(TESTS_DIR)
    g = rx.TabularCMDP.load(files / "m.npz")
    pi = standin_train(g, "cpg", seed=0, episodes=5).policy_table()
    line = next(x for x in proc.stdout.splitlines()
                if x.startswith("trained, stochastic (true)"))
    assert float(line.split()[3]) == pytest.approx(policy_values(g, pi)[0], abs=5e-4)

def test_train_keeps_what_a_trainer_without_save_trained(files):
    """A trainer's result without save(): the output is checked before any work, and
    after the training what can always be saved is saved (the policy table, its exact
    evaluation, the numeric records, as a Result archive), with one warning line; the
    training is never lost to the missing method."""
    assert one_line(refused(files, "train", "--model", "m.npz", "pg", "--trainer", STANDIN,
                            "--out", "no/r")).count("does not exist") == 1
    proc = rcmdp(files, "train", "--model", "m.npz", "pg", "--trainer", STANDIN,
                 "--episodes", "2", "--no-bracket", "--no-progress", "--out", "r")
    assert proc.returncode == 0, proc.stderr
    warning = one_line(proc, code=0)
    has(warning, "rcmdp train: warning:", "no save(path) method", STANDIN, "r.npz",
        "Result.load")
    assert "wrote r.npz" in proc.stdout
    res = rx.Result.load(files / "r.npz")
    sys.path.insert(0, TESTS_DIR)
    try:
        from test_experiments_standin import standin_train
    finally:
        sys.path.remove(TESTS_DIR)
    pi = standin_train(rx.TabularCMDP.load(files / "m.npz"), "pg", seed=0,
                       episodes=2).policy_table()
    np.testing.assert_array_equal(res.policy, pi)
    assert res.algorithm == "pg" and res.trainer == STANDIN and res.episodes == 2
    line = next(x for x in proc.stdout.splitlines()
                if x.startswith("trained, stochastic (true)"))
    # trained on the model itself: its training model is the true one
    assert float(line.split()[3]) == pytest.approx(
        res.evaluation["train"]["stochastic"]["value"], abs=5e-4)
    assert res.records["return"].shape == (2,)


# --------------------------------------------------------------------------- no constraints
def test_a_model_without_constraints_goes_through_the_protocol(tmp_path):
    """K = 0 (a plain MDP): the ground-truth jobs failed with an IndexError and the
    command said "run again to retry".  Now the protocol runs: the penalised return is
    the value, the pooled bound and each setting's optimum are the T-step optimum of the
    reward alone (certified gap 0), the training job's optimum is the MDP optimum, and
    the bracket closes on the robust optimum."""
    from rcmdp_exact.protocol import GroundTruthSpec, plan
    from rcmdp_exact.protocol.groundtruth import run_ground_truth
    from rcmdp_exact.protocol.user import load_problem, spec_options

    g = garnet_model()
    free = rx.TabularCMDP(g.P, g.R, np.zeros((6, 3, 6, 0)), np.zeros(0), gamma=g.gamma,
                          horizon=g.horizon)
    assert free.n_constraints == 0
    free.save(tmp_path / "free.npz")
    problem = load_problem(tmp_path / "free.npz")
    jobs = plan(["model"], ["pg"], 1, 2, quick=True, **spec_options(problem))
    out = {j.kind: run_ground_truth(j) for j in jobs if isinstance(j, GroundTruthSpec)}
    P = np.asarray(free.P)
    live = ~np.asarray(free.terminal)
    r = np.einsum("sat,sat->sa", P, np.asarray(free.R)) * live[:, None]
    V = np.zeros(free.n_states)
    for _ in range(free.horizon):  # the T-step optimum of the reward, by a plain loop
        V = (r + np.einsum("sat,t->sa", P, V) * live[:, None]).max(axis=1)
    T_opt = float(free.p0 @ V)
    bound = out["suite"]["bound"]
    assert bound["lam"] == 0.0 and bound["budget"] == 0.0
    assert bound["bound"] == pytest.approx(bound["lower"], abs=1e-12)
    row = out["suite"]["rows"][0]
    assert row["optimum"] == pytest.approx(bound["bound"], abs=1e-12)
    assert row["cost"] == 0.0 and row["overshoot"] == 0.0
    assert bound["bound"] == pytest.approx(T_opt, abs=1e-9)
    assert out["training"]["value"] == pytest.approx(rx.solve_mdp(free).value, abs=1e-9)
    assert out["training"]["multiplier"] == 0.0
    br = out["bracket"]
    assert br["status"] == "bracket" and br["lower"] == pytest.approx(br["upper"], abs=1e-6)


@pytest.mark.slow
def test_a_failure_of_the_job_itself_is_not_called_retryable(tmp_path):
    """A job is a pure function of its specification: an error of its own computation
    comes back on every run, so the command does not say "run again to retry" for it;
    a failure of the machine (OSError, MemoryError, a lost worker) does."""
    (tmp_path / "failing.py").write_text(
        "def deterministic(model, algorithm, **kwargs):\n"
        "    raise ValueError('a defect of this trainer')\n\n\n"
        "def disk_full(model, algorithm, **kwargs):\n"
        "    raise OSError(28, 'No space left on device')\n")
    garnet_model().save(tmp_path / "m.npz")
    for trainer, says, never in (("deterministic", "in their own computation",
                                  "retry"),
                                 ("disk_full", "run the same command again to retry",
                                  "own computation")):
        proc = rcmdp(tmp_path, "reproduce", "--model", "m.npz", "--trainer",
                     f"failing:{trainer}", "--algorithms", "pg", "--seeds", "1",
                     "--episodes", "2", "--quick", "--no-progress", "--workers", "1",
                     "--out", f"out_{trainer}")
        assert proc.returncode == 1, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        has(last, "1 jobs failed", says)
        assert never not in last, last


# --------------------------------------------------------------------------- judged on itself
@pytest.mark.slow
def test_a_model_is_trained_and_judged_on_itself_unless_estimation_is_asked_for(files):
    """``--model`` without ``--estimate``: the learner trains on the model itself, the
    set is the L1 ball of radius 0.1 around its own kernel on its own next states, and
    the output says so; ``--estimate [N]`` restores the paper's phase 1."""
    g = rx.TabularCMDP.load(files / "m.npz")
    proc = rcmdp(files, "train", "--model", "m.npz", "cpg", "--episodes", "20",
                 "--eval-every", "10", "--no-progress", "--no-bracket")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "trained on: the model itself (m.npz)",
        "judged on: the model itself (m.npz)", "around the model itself, radius 0.1",
        "support: nominal: the model's own next states")
    assert "training model" not in proc.stdout and "estimat" not in proc.stdout
    # the LP optimum printed is the model's own, read independently of the command
    line = next(x for x in proc.stdout.splitlines() if x.startswith("CMDP optimum (LP, true)"))
    assert float(line.split()[-2]) == pytest.approx(rx.solve_cmdp(g).value, abs=5e-4)

    proc = rcmdp(files, "train", "--model", "m.npz", "cpg", "--episodes", "20",
                 "--eval-every", "10", "--no-progress", "--no-bracket", "--estimate", "30")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "trained on: the nominal model (estimated from 30 episodes",
        "trained, stochastic (training model)", "L1 radii in [")
    proc = rcmdp(files, "train", "--model", "m.npz", "cpg", "--episodes", "20",
                 "--eval-every", "10", "--no-progress", "--no-bracket", "--estimate")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "estimated from 100 episodes")


def test_the_set_around_a_model_is_the_documented_ball(files):
    """The set around the model: l1_ball(model, R, support) with the support given, and
    each kind on the model's own support (every row of each set is checked against the
    model's kernel, independently of the code's helpers)."""
    from rcmdp_exact.protocol.estimation import set_around, support_text

    g = rx.TabularCMDP.load(files / "m.npz")
    P = np.asarray(g.P)
    l1 = set_around("l1", g, 0.2, "nominal")
    assert np.array_equal(np.asarray(l1.support)[~g.terminal], (P > 0)[~g.terminal])
    np.testing.assert_array_equal(np.asarray(l1.nominal), P)
    assert np.allclose(np.asarray(l1.alpha)[~g.terminal], 0.2)
    assert np.asarray(set_around("l1", g, 0.2, "all").support)[~g.terminal].all()
    assert support_text(l1, g).startswith("nominal")
    assert support_text(set_around("l1", g, 0.2, "all"), g).startswith("all")
    for kind in ("weighted-l1", "linf", "interval", "kl", "s-l1"):
        uset = set_around(kind, g, 0.2, "nominal")
        # the model's own kernel is in the set, and nothing leaves its support
        assert np.all(np.asarray(uset.support)[P > 0])
        assert not np.any(np.asarray(uset.support)[~g.terminal][(P == 0)[~g.terminal]])
    with raises_fact(rx.InputError, "KL", "nominal"):
        set_around("kl", g, 0.2, "all")


@pytest.mark.parametrize(("args", "facts"), [
    (["train", "--model", "m.npz", "pg", "--radius", "0.2", "--estimate"],
     ["--radius", "--estimate"]),
    (["train", "--model", "m.npz", "pg", "--support", "all", "--set-file", "set4.npz"],
     ["--support", "--set-file"]),
    (["train", "nav1", "pg", "--radius", "0.2"], ["--radius", "--model"]),
    (["reproduce", "--estimate", "5"], ["--estimate", "--model"]),
    (["train", "--model", "m.npz", "pg", "--radius", "-1"], ["--radius", "'-1'"]),
    (["train", "--model", "m.npz", "pg", "--set", "kl", "--support", "all"],
     ["--set kl", "--support nominal"]),
    (["ground-truth", "--model", "m.npz", "--estimate", "0"], ["--estimate", "0"]),
    (["reproduce", "--penalty", "0"], ["--penalty", "'0'"]),
])
def test_options_of_the_set_around_the_model_are_refused_where_they_do_not_apply(
        files, args, facts):
    import time

    t0 = time.perf_counter()
    has(one_line(refused(files, *args)), *facts)
    assert time.perf_counter() - t0 < 30  # refused before any work (a fresh process)


def test_an_infeasible_robust_problem_says_why(files):
    """A budget below every policy's cost: the LP and the bracket print the reason (the
    budget and the least achievable cost), not only -inf."""
    g = rx.TabularCMDP.load(files / "m.npz")
    g.replace(d=[0.5]).save(files / "tight.npz")
    proc = rcmdp(files, "train", "--model", "tight.npz", "cpg", "--episodes", "20",
                 "--eval-every", "10", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "infeasible: no policy meets the budgets",
        "smallest achievable discounted cost of constraint 0",
        "smallest worst-case cost of constraint 0", "> budget d[0] = 0.5",
        "least worst-case costs")


@pytest.mark.slow
def test_a_reproduction_of_your_model_is_judged_on_itself_and_in_its_own_terms(files):
    """The default reproduction of your model: specs with the radius and support of the
    set around the model (no estimation), one bracket for all seeds, a report that names
    what was trained and judged on and the set's support, with gamma from the model and
    no paper wording; --estimate restores the estimation."""
    from rcmdp_exact.protocol import Store

    proc = rcmdp(files, "reproduce", "--model", "m.npz", *SMALL, "--bracket-seeds", "2",
                 "--out", "rep")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "--model m.npz: trained and judged on the model itself",
        "set l1 around it, radius 0.1", "support: nominal")
    with Store(files / "rep" / "runs.sqlite", readonly=True) as store:
        specs = [r["spec"] for r in store.runs()]
        assert {(s["radius"], s["support"]) for s in specs} == {(0.1, "nominal")}
        assert all("estimation_episodes" not in s for s in specs)
        assert len(store.ground_truth("bracket")) == 1  # no seed changes the set
    report = (files / "rep" / "report.md").read_text()
    has(report, "trained on: the model itself", "judged on: the model itself",
        "`l1` (L1Ball) built around the model's own kernel, radius 0.1",
        "support: nominal: the model's own next states",
        "RCMDP brackets of the sets (discounted values, gamma 0.9)")
    assert "gamma 0.99" not in report
    table = (files / "rep" / "table1.md").read_text()
    assert "paper" not in table.lower()
    assert table.startswith("# Your model: penalised return of the learners")
    assert "Where ours differs from the paper" not in report

    proc = rcmdp(files, "reproduce", "--model", "m.npz", *SMALL, "--estimate", "20",
                 "--out", "rep2")
    assert proc.returncode == 0, proc.stderr
    has(proc.stdout, "trained on the nominal model estimated from 20 episodes")
    with Store(files / "rep2" / "runs.sqlite", readonly=True) as store:
        specs = [r["spec"] for r in store.runs()]
        assert {s["estimation_episodes"] for s in specs} == {20}
        assert all("radius" not in s for s in specs)
    has((files / "rep2" / "report.md").read_text(),
        "trained on: the nominal model estimated from 20 episodes", "L1 radii in [")


@pytest.mark.slow
def test_the_penalty_weight_is_an_option_kept_out_of_the_paper_keys(files):
    """--penalty W: R_pen = V - W max(0, C - d') in table1.csv (a budget below every
    cost, so every run overshoots and the mean is linear in W); the spec holds the
    weight only when it is not 500, so the default keys stay those of the paper."""
    import csv
    import dataclasses

    from rcmdp_exact.protocol.spec import RunSpec

    spec = RunSpec("nav1", "cpg", 0)
    assert "penalty" not in spec.fields() and "penalty" not in spec.settings_fields()
    other = dataclasses.replace(spec, penalty=1000.0)
    assert other.fields()["penalty"] == 1000.0 and other.key != spec.key
    assert other.settings_fields()["penalty"] == 1000.0

    g = rx.TabularCMDP.load(files / "m.npz")
    g.replace(d=[0.01]).save(files / "over.npz")
    means = {}
    for w, out in ((None, "rep500"), ("1000", "rep1000")):
        proc = rcmdp(files, "reproduce", "--model", "over.npz", *SMALL, "--out", out,
                     *(["--penalty", w] if w else []))
        assert proc.returncode == 0, proc.stderr
        rows = list(csv.DictReader((files / out / "table1.csv").open()))
        for r in rows:
            v, c, b = float(r["value_mean"]), float(r["cost_mean"]), float(r["budget"])
            assert c > b
            weight = 500.0 if w is None else float(w)
            assert float(r["mean"]) == pytest.approx(v - weight * (c - b), rel=1e-12)
            means[(out, r["algorithm"], r["mode"])] = float(r["mean"])
    assert means[("rep1000", "pg", "greedy")] < means[("rep500", "pg", "greedy")]
    has((files / "rep1000" / "report.md").read_text(), "penalty weight of R_pen: 1000",
        "penalty weight w = 1000")

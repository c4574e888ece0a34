"""``rcmdp ground-truth`` on Inventory Management (the full run is the command's job).

Independent checks: the budget rescaling by hand, the overshoot and penalised-return
formulas on every row, strong duality of the reported nominal optimum against value
iteration written here, the summary's means against the rows, the consistency of the
bracket; every bad argument and output path is refused before any work.
"""

import contextlib
import csv
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import rcmdp_exact.protocol.ground_truth_table as command  # the work of the command
from rcmdp_exact.cli import main
from rcmdp_exact.core.mdp import greedy_policy
from rcmdp_exact.domains import ESTIMATION_EPISODES, paper_domain
from rcmdp_exact.uncertainty import estimate


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gt")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["ground-truth", "--domain", "inventory", "--out", str(out),
                     "--no-progress"])
    with open(out / "ground_truth_settings.csv") as fh:
        rows = list(csv.DictReader(fh))
    with open(out / "ground_truth_summary.csv") as fh:
        summary = list(csv.DictReader(fh))
    doc = json.loads((out / "ground_truth.json").read_text())
    with np.load(out / "ground_truth_policies.npz", allow_pickle=False) as npz:
        policies = {k: npz[k] for k in npz.files}
    return code, buf.getvalue(), rows, summary, doc, policies


def vi(P, reward, gamma, tol=1e-12):
    v = np.zeros(P.shape[0])
    while True:
        nv = (reward + gamma * P @ v).max(axis=1)
        if np.abs(nv - v).max() < tol * (1 - gamma):
            return nv
        v = nv


def test_runs_and_prints_the_table(run):
    code, text, _, _, doc, _ = run
    assert code == 0
    assert "== inventory: Inventory Management" in text
    assert "test inventory: 9 settings, T = 100" in text
    assert list(doc["domains"]) == ["inventory"]
    assert doc["options"]["estimation"] == "paper" and doc["options"]["seed"] == 0


def test_every_row_follows_the_metric_formulas(run):
    _, _, rows, _, _, _ = run
    budget = 6.0 * 100 * (1 - 0.99) / (1 - 0.99**100)  # d T / sum_{i<T} gamma^i
    assert budget == pytest.approx(9.464, abs=1e-3)
    policies = {r["policy"] for r in rows}
    assert len(rows) == 9 * len(policies) * 2
    for r in rows:
        value, cost, b = float(r["value"]), float(r["cost"]), float(r["budget"])
        assert b == pytest.approx(budget, rel=1e-12)
        assert float(r["overshoot"]) == pytest.approx(cost - b, abs=1e-9)
        assert float(r["penalised_return"]) == pytest.approx(
            value - 500 * max(0.0, cost - b), abs=1e-7)


def test_nominal_optimum_satisfies_strong_duality(run):
    """The reported optimum of the estimated model equals the Lagrangian dual at its mu."""
    _, _, _, _, doc, _ = run
    opt = doc["domains"]["inventory"]["optima"]["nominal_cmdp"]
    assert opt["status"] == "optimal"
    est = estimate(paper_domain("inventory"), ESTIMATION_EPISODES["inventory"]["paper"],
                   seed=0, progress=False)
    m = est.nominal
    mu = np.array(opt["lam"])
    dual = float(m.p0 @ vi(m.P, m.r - m.c @ mu, m.gamma) + mu @ m.d)
    assert dual == pytest.approx(opt["value"], abs=1e-6 * 100)
    assert opt["costs"][0] <= m.d[0] + 1e-7


def test_bracket_is_consistent(run):
    _, _, _, _, doc, _ = run
    b = doc["domains"]["inventory"]["bracket"]
    # the table's budget of 100 boxes ends before the target gap: both bounds still hold
    assert b["status"] in ("bracket", "budget_exhausted")
    assert b["lower"] <= b["upper"] + 1e-8
    assert b["gap"] == pytest.approx(b["upper"] - b["lower"])
    assert isinstance(b["lower_method"], str) and isinstance(b["upper_method"], str)
    assert b["lower_costs"][0] <= 6.0 + 1e-9  # the lower policy is robust-feasible
    # the upper bound cannot be below any robust-feasible variant's robust value
    for v in doc["domains"]["inventory"]["variants"].values():
        if v["robust_feasible"]:
            assert v["robust_value"] <= b["upper"] + 1e-8


def test_summary_means_match_the_rows(run):
    _, _, rows, summary, _, _ = run
    for s in summary:
        if s["group"] != "all" or s["mode"] != "greedy":
            continue
        vals = [float(r["penalised_return"]) for r in rows
                if r["policy"] == s["policy"] and r["mode"] == "greedy"]
        assert int(s["n"]) == 9
        assert float(s["penalised_return_mean"]) == pytest.approx(np.mean(vals), abs=1e-9)
        assert float(s["penalised_return_std"]) == pytest.approx(np.std(vals), abs=1e-9)


def test_deterministic_policies_give_equal_modes(run):
    _, _, rows, _, _, _ = run
    by = {(r["setting"], r["policy"], r["mode"]): r for r in rows}
    for (setting, pol, mode), r in by.items():
        if pol == "rcmdp_upper" and mode == "greedy":  # a robust VI policy: deterministic
            other = by[(setting, pol, "stochastic")]
            assert float(r["value"]) == float(other["value"])


def test_training_setting_reproduces_the_finite_horizon_optimum(run):
    """The T-step LP's value on the training model equals its row on that setting."""
    _, _, rows, _, doc, _ = run
    opt = doc["domains"]["inventory"]["optima"]["true_cmdp_T"]
    row = next(r for r in rows if r["setting"] == "mu=S/4, sigma=S/6"
               and r["policy"] == "true_cmdp_T" and r["mode"] == "stochastic")
    assert float(row["value"]) == pytest.approx(opt["value"], abs=1e-9)
    # and no stationary policy of the table beats it on that setting within budget
    for r in rows:
        if r["setting"] == "mu=S/4, sigma=S/6" and float(r["overshoot"]) <= 0:
            assert float(r["value"]) <= opt["value"] + 1e-7


def t_step(model, pi, T):
    """Undiscounted T-step value and cost of a stationary (S, A) or time-dependent
    (T, S, A) policy from p0, by backward induction written here."""
    S = model.n_states
    v, c = np.zeros(S), np.zeros(S)
    for t in reversed(range(T)):
        p = pi[t] if pi.ndim == 3 else pi
        v = (p * (model.r + model.P @ v)).sum(axis=1)
        c = (p * (model.c[:, :, 0] + model.P @ c)).sum(axis=1)
    return float(model.p0 @ v), float(model.p0 @ c)


def test_rows_are_the_saved_policies_evaluated_in_both_modes(run):
    """On the training setting, each saved policy and its greedy version (argmax, ties
    to the lowest action, per time step) reproduce their rows."""
    _, _, rows, _, _, policies = run
    model = paper_domain("inventory")
    by = {(r["policy"], r["mode"]): r for r in rows if r["setting"] == "mu=S/4, sigma=S/6"}
    names = {k.split("__", 1)[1] for k in policies}
    assert names == {p for p, _ in by}
    differ = 0
    for name in names:
        pi = policies[f"inventory__{name}"]
        greedy = np.eye(pi.shape[-1])[pi.argmax(axis=-1)]
        for mode, pol in (("stochastic", pi), ("greedy", greedy)):
            value, cost = t_step(model, pol, 100)
            assert float(by[(name, mode)]["value"]) == pytest.approx(value, abs=1e-8)
            assert float(by[(name, mode)]["cost"]) == pytest.approx(cost, abs=1e-8)
        differ += abs(float(by[(name, "greedy")]["cost"])
                      - float(by[(name, "stochastic")]["cost"])) > 1e-6
    assert differ >= 1  # the LP optima randomise, so the modes differ somewhere


def test_greedy_policy_breaks_ties_to_the_lowest_action():
    pol = np.array([[0.5, 0.5], [0.2, 0.8]])
    np.testing.assert_array_equal(greedy_policy(pol), [[1, 0], [0, 1]])


def test_subcommand_is_registered():
    out = subprocess.run([sys.executable, "-m", "rcmdp_exact", "ground-truth", "--help"],
                         capture_output=True, text=True, check=True)
    assert "--domain" in out.stdout and "--out" in out.stdout


def exit_code(args) -> int:
    """The exit status of ``rcmdp`` (argparse errors exit through SystemExit)."""
    try:
        return main(args)
    except SystemExit as exc:
        return exc.code


def test_bad_arguments_are_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """Each bad argument: exit status 2 and an error line naming it; nothing runs."""
    monkeypatch.setattr(command, "ground_truth_table",
                        lambda *a, **k: pytest.fail("work started before the checks"))
    afile = tmp_path / "a_file"
    afile.write_text("x")
    cases = [
        (["--seed", "-1"], "--seed"), (["--seed", "1.5"], "--seed"),
        (["--n-draws", "0"], "--n-draws"), (["--delta", "1.5"], "--delta"),
        (["--variants", "value,robust"], "'robust'"), (["--max-boxes", "0"], "--max-boxes"),
        (["--bracket-time", "0"], "--bracket-time"), (["--out", ""], "--out is empty"),
        (["--out", str(afile)], "existing file"),
        # the safety net: a number of seconds above 0, finite
        (["--time-limit", "0"], "--time-limit"), (["--time-limit", "-1"], "--time-limit"),
        (["--time-limit", "nan"], "--time-limit"), (["--time-limit", "inf"], "--time-limit"),
    ]
    for args, fact in cases:
        code = exit_code(["ground-truth", "--domain", "nav1", "--no-progress", *args])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2, args
        assert any(fact in line and "error" in line for line in err), (args, err)


def test_existing_output_files_need_force(tmp_path, capsys, monkeypatch):
    from rcmdp_exact.protocol.ground_truth_table import ground_truth_table

    table = ground_truth_table(["nav2"], n_draws=1, variants=(), progress=False,
                               max_boxes=1)
    monkeypatch.setattr(command, "ground_truth_table", lambda *a, **k: table)
    out = tmp_path / "gt"
    assert main(["ground-truth", "--domain", "nav2", "--out", str(out)]) == 0
    assert (out / "ground_truth.json").exists()
    capsys.readouterr()
    assert exit_code(["ground-truth", "--domain", "nav2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "ground_truth_settings.csv" in err and "--force" in err
    assert main(["ground-truth", "--domain", "nav2", "--out", str(out), "--force"]) == 0


@pytest.mark.parametrize("fail", ["savez", "replace"])
def test_a_full_disk_names_the_file_being_written(tmp_path, capsys, monkeypatch, fail):
    """A write that fails with ENOSPC (no file name, as the kernel reports it) is one line
    naming the file meant, exit status 2; the files of the earlier run stay whole."""
    import errno

    from rcmdp_exact.protocol.ground_truth_table import ground_truth_table

    table = ground_truth_table(["nav2"], n_draws=1, variants=(), progress=False,
                               max_boxes=1)
    monkeypatch.setattr(command, "ground_truth_table", lambda *a, **k: table)
    out = tmp_path / "gt"
    assert main(["ground-truth", "--domain", "nav2", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real_replace = os.replace
    if fail == "savez":
        monkeypatch.setattr(np, "savez_compressed", full)
        target = "ground_truth_policies.npz"
    else:
        target = "ground_truth.json"
        monkeypatch.setattr(os, "replace", lambda src, dst: full() if str(dst).endswith(
            target) else real_replace(src, dst))
    code = exit_code(["ground-truth", "--domain", "nav2", "--out", str(out), "--force"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert os.strerror(errno.ENOSPC) in err[0] and repr(str(out / target)) in err[0], err
    assert sorted(p.name for p in out.iterdir()) == sorted(before)  # no temporary file
    assert (out / target).read_bytes() == before[target]


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder this process cannot write into: a read-only folder of its own, or, for
    root (who may write into any folder of a writable file system), /proc/sys, which
    the kernel keeps read-only."""
    if os.name == "posix" and os.geteuid() == 0:
        for candidate in ("/proc/sys", "/sys/fs"):
            if os.path.isdir(candidate) and not os.access(candidate, os.W_OK):
                yield candidate
                return
        pytest.skip("running as root with no read-only folder to write into")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    yield str(locked)
    locked.chmod(0o700)


def test_unwritable_output_folder_is_refused(unwritable_folder, capsys, monkeypatch):
    monkeypatch.setattr(command, "ground_truth_table",
                        lambda *a, **k: pytest.fail("work started before the checks"))
    assert exit_code(["ground-truth", "--out", os.path.join(unwritable_folder, "gt")]) == 2
    err = capsys.readouterr().err
    assert "not writable" in err and unwritable_folder in err


def test_dask_gives_the_same_certified_bracket_as_the_serial_run(tmp_path):
    """``--dask ADDRESS``: the bracket's branch and bound runs on the cluster (a local
    one here, two threads in this process) and reports the same certified bracket as
    the serial run, for the same box budget; the bracket is checked against a search
    of robust-feasible policies written in the bracket tests."""
    import distributed
    from test_ground_truth_bracket import mid_budget_model, robust_numbers, search_policies

    m, uset = mid_budget_model(3, 0.5, n_constraints=2)
    m.replace(horizon=12).save(tmp_path / "m.npz")
    uset.save(tmp_path / "uset")
    args = ["ground-truth", "--model", str(tmp_path / "m.npz"), "--set-file",
            str(tmp_path / "uset"), "--no-variants", "--max-boxes", "40", "--time-limit",
            "600", "--no-progress"]

    def bracket(out, extra=()):
        with contextlib.redirect_stdout(io.StringIO()):
            assert main([*args, "--out", str(out), *extra]) == 0
        doc = json.loads((out / "ground_truth.json").read_text())
        (b,) = [d["bracket"] for d in doc["domains"].values()]
        return b

    serial = bracket(tmp_path / "serial")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp://", dashboard_address=None) as cluster:
        remote = bracket(tmp_path / "dask", ["--dask", cluster.scheduler_address])
    for key in ("lower", "upper", "boxes", "status"):
        assert remote[key] == serial[key], key
    assert serial["boxes"] > 1
    found = [robust_numbers(m, uset, pi) for pi in search_policies(m, 0, n_random=50)]
    assert serial["upper"] >= max(v for v, c in found if np.all(c <= m.d)) - 1e-9

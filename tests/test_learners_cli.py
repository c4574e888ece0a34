"""The ``rcmdp train`` command: every algorithm on every domain, errors, the saved file."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rcmdp_exact.cli import main
from rcmdp_exact.learners import ALGORITHMS, load


@pytest.mark.parametrize("domain", ["inventory", "nav1", "nav2"])
def test_every_algorithm_trains_from_the_command_line(domain, capsys):
    for alg in ALGORITHMS:
        code = main(["train", domain, alg, "--episodes", "2", "--eval-every", "1",
                     "--no-bracket", "--no-progress"])
        out = capsys.readouterr().out
        assert code == 0, (domain, alg)
        assert "trained, greedy (true)" in out and "CMDP optimum" in out


@pytest.mark.parametrize("argv", [
    ["nav1", "adversarial-rcpg", "--adversary-form", "mixture"],
    ["nav1", "adversarial-rcpg", "--adversary-multiplier-signal", "visited"],
    ["inventory", "cpg", "--gradient", "exact", "--multiplier-update", "augmented"],
])
def test_adversary_and_multiplier_options(argv, capsys):
    assert main(["train", *argv, "--episodes", "2", "--eval-every", "1", "--no-bracket",
                 "--no-progress"]) == 0
    assert "trained, greedy (worst case)" in capsys.readouterr().out


def test_augmented_needs_exact_gradients_on_the_command_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "inventory", "cpg", "--multiplier-update", "augmented", "--episodes",
              "1", "--no-bracket", "--no-progress"])
    assert info.value.code == 2
    assert "augmented" in capsys.readouterr().err


def test_output_file_and_bracket(tmp_path, capsys, monkeypatch):
    """The file round trip and the bracket line (the bracket itself is stubbed: its own
    tests live with the ground truth)."""
    import rcmdp_exact.ground_truth as gt
    from rcmdp_exact import Result
    from rcmdp_exact.names import BRACKET_BOXES

    calls = []

    def stub(model, uset, **kwargs):
        calls.append(kwargs)
        # the fields of a bracket's result that the command prints
        return Result(lower=1.25, upper=2.5, value_range=10.0, closed=False,
                      policy_class=gt.POLICY_CLASS, status="budget_exhausted")

    monkeypatch.setattr(gt, "rcmdp_bracket", stub)
    path = tmp_path / "cpg.npz"
    assert main(["train", "inventory", "cpg", "--episodes", "3", "--no-progress",
                 "--out", str(path)]) == 0
    out = capsys.readouterr().out
    assert "RCMDP bracket" in out and "[1.250, 2.500]" in out and str(path) in out
    # the gap absolute and relative to |lower| (1.25 of 1.25: 100%), NOT closed, the class
    assert "NOT closed" in out and "stationary randomised" in out
    assert "gap 1.25 = 100% of |lower| (1.25)" in out
    # a budget in boxes, so that every run prints the same bracket
    assert calls[0]["max_boxes"] == BRACKET_BOXES and calls[0]["variants"] == ()
    # trained on the estimated model: judged against that model's optimum and the true one
    assert "CMDP optimum (LP, training model)" in out and "CMDP optimum (LP, true)" in out
    assert "trained, stochastic (training model)" in out
    res = load(path)
    assert res.algorithm == "cpg" and res.episodes == 3
    assert np.allclose(res.policy_table().sum(axis=1), 1.0)
    with pytest.raises(SystemExit) as info:  # exists, no --force
        main(["train", "inventory", "cpg", "--episodes", "3", "--out", str(path)])
    assert info.value.code == 2
    assert "--force" in capsys.readouterr().err


@pytest.mark.parametrize("argv, fact", [
    (["nav1", "ppo"], "'ppo'"),
    (["nav1", "pg", "--episodes", "0"], "--episodes"),
    (["nav1", "pg", "--seed", "-1"], "--seed"),
    (["mars", "pg"], "'mars'"),
])
def test_bad_arguments_fail_fast(argv, fact):
    """A one-line error, exit status 2, and neither numba nor cvxpy imported."""
    code = (
        "import sys\n"
        "from rcmdp_exact.cli import main\n"
        "try:\n"
        f"    main(['train', *{argv!r}])\n"
        "except SystemExit as e:\n"
        "    print(e.code, 'numba' in sys.modules, 'cvxpy' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split() == ["2", "False", "False"]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("rcmdp train: error:") and fact in last

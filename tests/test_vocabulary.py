"""docs/vocabulary.md against the code, in both directions.

* Every row of the page's table of names is checked where the page says the name is;
  a row without a check fails (so a new row needs one).
* The package has no former names (0.1.0 is its first release): no alias module, no
  deprecation warning, no hidden renamed flag.
* The same choice has the same flag on every command.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import pkgutil
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import rcmdp_exact as rx
from rcmdp_exact.cli import build_parser

PAGE = Path(__file__).resolve().parents[1] / "docs" / "vocabulary.md"


def section_rows(title: str) -> list[list[str]]:
    text = PAGE.read_text("utf-8")
    part = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in part.splitlines() if line.startswith("|")][2:]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def ticks(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def subparsers() -> dict:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def option(command: str, flag: str):
    for action in subparsers()[command]._actions:
        if flag in action.option_strings:
            return action
    return None


@pytest.fixture(scope="module")
def model():
    return rx.domains.garnet(5, 3, 2, n_constraints=1, seed=3).replace(horizon=10)


@pytest.fixture(scope="module")
def trained(model):
    from rcmdp_exact.learners import train

    return train(model, "adversarial-rcpg", uset=rx.l1_ball(model, 0.1), seed=0,
                 episodes=4, eval_every=2, progress=False, prefit_steps=5)


# --------------------------------------------------------------------------- names
@pytest.fixture(scope="module")
def solved(model):
    """The CMDP optimum and a three-variant bracket of ``model``, computed once for every
    row of the table (each row was solving both again)."""
    opt = rx.solve_cmdp(model)
    br = rx.rcmdp_bracket(model, rx.l1_ball(model, 0.1), progress=False, max_boxes=3,
                          variants=("value", "constraint", "lagrangian"))
    return opt, br


def check_name(name: str, model, trained, solved) -> None:
    opt, br = solved
    if name == "lam":
        assert "lam" in opt and "lam" in br and "lam" in rx.solve_cmdp_finite_horizon(model)
        assert all("lam" in v for v in br.variants.values())
        assert trained.lam.shape == (1,) and trained.records["lam"].shape == (4, 1)
        assert "lam" in inspect.signature(rx.evaluate).parameters
    elif name == "lam_adv":
        assert np.isfinite(trained.lam_adv) and trained.records["lam_adv"].shape == (4,)
    elif name == "policy":
        for res in (opt, br):
            assert np.asarray(res.policy).shape == (5, 3)
        for res in (rx.solve_mdp(model), rx.policy_iteration(model)):  # one action each
            assert np.asarray(res.policy).shape in ((5,), (5, 3))
        assert np.array_equal(trained.policy, trained.policy_table())
    elif name == "penalised_return":
        pi = np.full((5, 3), 1 / 3)
        assert "penalised_return" in rx.evaluate_finite_horizon(model, pi)
        assert "eval_train_greedy_penalised_return" in trained.records
    elif name in ("costs", "costs_worst"):
        assert "costs" in rx.evaluate(model, np.full((5, 3), 1 / 3))
        res = rx.robust_evaluate(model, np.full((5, 3), 1 / 3), rx.l1_ball(model, 0.1))
        assert "costs_worst" in res
    elif name == "time_limit":
        from rcmdp_exact.protocol.ground_truth_table import GroundTruthTableSpec

        assert "time_limit" in {f.name for f in dataclasses.fields(rx.BracketSettings)}
        assert br.reproducible and br.stopped_by_time_limit is False
        spec = GroundTruthTableSpec()
        assert dataclasses.replace(spec.bracket, time_limit=7.0).time_limit == 7.0
        assert "time_limit" in inspect.signature(rx.certified_dual).parameters
        assert option("ground-truth", "--time-limit").dest == "time_limit"
    elif name == "max_boxes":
        from rcmdp_exact.protocol.ground_truth_table import GroundTruthTableSpec

        assert br.boxes <= 3 + 2 * 32 and rx.BracketSettings(max_boxes=5).boxes.max_boxes == 5
        spec = GroundTruthTableSpec()
        assert dataclasses.replace(spec.bracket, max_boxes=7).max_boxes == 7
        assert option("ground-truth", "--max-boxes").dest == "max_boxes"
    elif name == "estimation":
        for command in ("train", "ground-truth", "reproduce"):
            assert tuple(option(command, "--estimation").choices) == ("paper", "reference")
    elif name == "train_on":
        for command in ("train", "reproduce"):
            assert {"nominal", "data"} <= set(option(command, "--train-on").choices)
    elif name == "--set KIND":
        from rcmdp_exact.uncertainty import builtin_kinds

        kinds = builtin_kinds(estimated=True)
        assert kinds[0] == rx.names.DEFAULT_SET_KIND
        for command in ("ground-truth", "train", "reproduce"):
            parse = option(command, "--set").type
            assert [parse(k) for k in kinds] == list(kinds)
            assert parse("mymodule:MySet") == "mymodule:MySet"
            for bad in ("finite", "weighted_l1", "nope", "mymodule:"):
                with pytest.raises(argparse.ArgumentTypeError):
                    parse(bad)
    elif name == "progress=None":
        check_progress_defaults()
    elif name == "--force":
        for command in ("train", "ground-truth", "reproduce", "report"):
            assert option(command, "--force") is not None, command
    else:
        pytest.fail(f"docs/vocabulary.md names {name!r}, which this test does not check")


def test_every_name_is_where_the_page_says(model, trained, solved):
    rows = section_rows("Names")
    assert len(rows) >= 10
    for _idea, name, _where in rows:
        check_name(ticks(name)[0], model, trained, solved)




def check_progress_defaults() -> None:
    wrong = []
    for info in pkgutil.walk_packages(rx.__path__, "rcmdp_exact."):
        if info.name.endswith(("inner", "reports", ".core", ".report", "__main__")):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod = importlib.import_module(info.name)
        for name, fn in vars(mod).items():
            if name.startswith("_") or not inspect.isfunction(fn) or \
                    fn.__module__ != mod.__name__:
                continue
            p = inspect.signature(fn).parameters.get("progress")
            if p is not None and p.default is not None and p.default is not p.empty:
                wrong.append(f"{mod.__name__}.{name}(progress={p.default})")
    assert not wrong, wrong


# --------------------------------------------------------------------------- no former names
def test_no_deprecated_name_is_left():
    """No module of the package warns of a deprecation, no alias module is left, no
    command has a hidden (renamed) flag, and a result stores what it was given."""
    import rcmdp_exact

    root = Path(rcmdp_exact.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if "DeprecationWarning" in p.read_text(encoding="utf-8")]
    assert offenders == []
    for alias in ("reports.py", "inner.py", "ground_truth/core.py", "ground_truth/report.py",
                  "protocol/report.py"):
        assert not (root / alias).exists(), alias
    hidden = [(command, a.option_strings) for command, p in subparsers().items()
              for a in p._actions if a.help == argparse.SUPPRESS and a.option_strings
              and a.dest != "help"]
    assert hidden == []
    res = rx.Result(multipliers=np.ones(1))
    assert "multipliers" in res and "lam" not in res
    assert not (Path(rcmdp_exact.__file__).parents[1] / "docs" / "api" / "deprecated.md").exists()


def test_the_set_has_one_name():
    """An uncertainty set is ``uset`` wherever a parameter, keyword or field names it:
    no function of the package takes a parameter ``ball`` (``ball`` names a kind's
    geometry in prose and classes only), and the estimation gives its set as ``uset``."""
    import ast

    import rcmdp_exact

    root = Path(rcmdp_exact.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and node.arg == "ball":
                found.append(f"{path.relative_to(root)}:{node.lineno} parameter")
            elif isinstance(node, ast.keyword) and node.arg == "ball":
                found.append(f"{path.relative_to(root)}:{node.lineno} keyword")
            elif isinstance(node, ast.Attribute) and node.attr == "ball":
                found.append(f"{path.relative_to(root)}:{node.lineno} attribute")
    assert found == []
    model = rx.domains.garnet(3, 2, 2, n_constraints=1, seed=0)
    est = rx.estimate(model, 20, seed=0, horizon=5)
    assert isinstance(est.uset, rx.L1Ball) and "ball" not in est

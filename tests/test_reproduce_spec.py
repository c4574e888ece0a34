"""``ReproduceSpec``: what a reproduction computes, frozen and checked where it is built
(the bad-input table), and its jobs are those :func:`plan` makes of the same choices."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import raises_fact

from rcmdp_exact import InputError, OptionError
from rcmdp_exact.protocol import ReproduceSpec, YourModel, plan, reproduce
from rcmdp_exact.protocol.spec import RunSpec


@pytest.mark.parametrize(("kwargs", "error", "facts"), [
    ({"tests": ["3C"]}, OptionError, ("test", "'3C'")),
    ({"algorithms": ["ppo"]}, OptionError, ("algorithm", "'ppo'")),
    ({"seeds": 0}, InputError, ("seeds", "0")),
    ({"seeds": 10**9}, InputError, ("seeds", "limit")),
    ({"episodes": -1}, InputError, ("episodes", "-1")),
    ({"episodes": 2.5}, InputError, ("episodes",)),
    ({"bracket_seeds": -1}, InputError, ("bracket_seeds",)),
    ({"quick": "yes"}, InputError, ("quick", "str")),
    ({"trainer": "my_module:train"}, InputError, ("trainer", "str", "callable")),
    ({"options": {"colour": "red"}}, InputError, ("colour", "RunSpec")),
    ({"options": {"critic": "oracle"}}, OptionError, ("critic", "'oracle'")),
    ({"model": "m.npz"}, InputError, ("model", "YourModel")),
    ({"model": YourModel("m.npz"), "tests": ["inventory"]}, InputError,
     ("tests", "'model'")),
])
def test_a_bad_spec_is_refused_where_it_is_built(kwargs, error, facts):
    with raises_fact(error, *facts):
        ReproduceSpec(**kwargs)


@pytest.mark.parametrize(("kwargs", "facts"), [
    ({"path": 3}, ("path", "int")),
    ({"path": "m.npz", "horizon": 0}, ("horizon", "0")),
    ({"path": "m.npz", "estimate": 0}, ("estimate", "0")),
    ({"path": "m.npz", "estimate": 10, "radius": 0.1}, ("radius", "estimate")),
    ({"path": "m.npz", "set_file": "s.npz", "support": "all"}, ("support", "set_file")),
])
def test_a_bad_model_is_refused_where_it_is_built(kwargs, facts):
    with raises_fact(InputError, *facts):
        YourModel(**kwargs)


def test_reproduce_takes_a_spec():
    with raises_fact(InputError, "spec", "ReproduceSpec", "dict"):
        reproduce({"quick": True}, "runs.sqlite")


def test_the_spec_is_frozen_and_its_jobs_are_the_plan_of_its_choices():
    spec = ReproduceSpec(tests=["inventory", "1B"], algorithms=["pg", "rcpg-value"],
                         seeds=2, episodes=3, quick=True, bracket_seeds=1,
                         options={"critic": "exact", "n_draws": 4})
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seeds = 5
    assert spec.tests == ("inventory", "1B") and spec.options == (("critic", "exact"),
                                                                   ("n_draws", 4))
    hash(spec)  # every field is immutable
    direct = plan(["inventory", "1B"], ["pg", "rcpg-value"], 2, 3, quick=True,
                  bracket_seeds=1, critic="exact", n_draws=4)
    assert [j.key for j in spec.jobs()] == [j.key for j in direct]
    runs = [j for j in spec.jobs() if isinstance(j, RunSpec)]
    assert {(r.domain, r.algorithm, r.seed, r.episodes, r.critic, r.n_draws) for r in runs} \
        == {(d, a, s, 3, "exact", 4) for d in ("inventory", "nav1") for a in
            ("pg", "rcpg-value") for s in (0, 1)}


def test_a_trainer_is_named_in_the_jobs_as_the_command_line_names_it():
    from test_experiments_standin import standin_train

    spec = ReproduceSpec(tests=["inventory"], algorithms=["pg"], seeds=1, episodes=2,
                         quick=True, trainer=standin_train)
    runs = [j for j in spec.jobs() if isinstance(j, RunSpec)]
    assert runs and all(r.trainer == "test_experiments_standin:standin_train" for r in runs)

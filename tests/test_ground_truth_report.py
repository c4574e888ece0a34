"""Ground truth, part 3: the table of the paper's domains (batched test metrics, inputs).

The batched evaluation of a time-dependent policy is checked against backward induction
written here on every kernel; the table's arguments are checked before any work.
"""


import numpy as np
import pytest

from rcmdp_exact import InputError, OptionError
from rcmdp_exact.core.mdp import greedy_policy
from rcmdp_exact.domains import garnet
from rcmdp_exact.protocol.ground_truth_table import ground_truth_table, time_dependent_batch


def t_step(model, P, pi):
    """Undiscounted T-step value and costs of a time-dependent policy (T, S, A) under
    the kernel P, by backward induction written here (rewards per transition)."""
    R, C = np.asarray(model.R), np.asarray(model.C)
    v, c = np.zeros(model.n_states), np.zeros((model.n_states, model.n_constraints))
    for t in reversed(range(pi.shape[0])):
        qv = np.einsum("sat,sat->sa", P, R) + P @ v
        qc = np.einsum("sat,satk->sak", P, C) + np.einsum("sat,tk->sak", P, c)
        v = (pi[t] * qv).sum(axis=1)
        c = np.einsum("sa,sak->sk", pi[t], qc)
    return float(model.p0 @ v), model.p0 @ c


def test_time_dependent_batch_equals_backward_induction_on_every_kernel():
    m = garnet(4, 3, 3, n_constraints=2, seed=3, gamma=0.9)
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(3), size=(6, 4))
    kernels = rng.dirichlet(np.ones(4), size=(5, 4, 3))
    res = time_dependent_batch(m, pi, kernels)
    for n in range(5):
        value, costs = t_step(m, kernels[n], pi)
        assert res.value[n] == pytest.approx(value, abs=1e-12)
        np.testing.assert_allclose(res.costs[n], costs, atol=1e-12)


def test_greedy_policy_breaks_ties_to_the_lowest_action():
    pol = np.array([[0.5, 0.5], [0.2, 0.8]])
    np.testing.assert_array_equal(greedy_policy(pol), [[1, 0], [0, 1]])
    timed = np.stack([pol, pol[::-1]])
    np.testing.assert_array_equal(greedy_policy(timed)[1], [[0, 1], [1, 0]])


def test_offset_on_changes_only_test_1b():
    """Test 1B offers both readings of the protocol (offset on a failed or a successful
    move); 1A does not depend on it."""
    rows = {}
    for where in ("failure", "success"):
        table = ground_truth_table(["nav1"], n_draws=1, variants=(), offset_on=where,
                                   progress=False, max_boxes=1)
        assert table.options["offset_on"] == where
        rows[where] = {(r["suite"], r["setting"], r["policy"], r["mode"]): r["value"]
                       for r in table.domains["nav1"].rows}
    assert rows["failure"].keys() == rows["success"].keys()
    for key, value in rows["failure"].items():
        if key[0] == "1A":
            assert rows["success"][key] == value
    assert any(rows["success"][k] != v for k, v in rows["failure"].items() if k[0] == "1B")


@pytest.mark.parametrize(
    ("kwargs", "error", "facts"),
    [
        ({"domains": ["nav3"]}, OptionError, ("domain", "'nav3'", "inventory")),
        ({"estimation": "many"}, OptionError, ("estimation", "'many'", "paper")),
        ({"offset_on": "x"}, OptionError, ("offset_on", "'x'", "failure")),
        ({"n_draws": 0}, InputError, ("n_draws", "0")),
        ({"seed": -1}, InputError, ("seed", "-1")),
        ({"seed": 1.5}, InputError, ("seed", "1.5")),
        ({"delta": 1.5}, InputError, ("delta", "1.5")),
        ({"variants": ("robust",)}, OptionError, ("variant", "'robust'")),
        ({"max_boxes": 0}, InputError, ("max_boxes", "0")),
        ({"time_limit": -1.0}, InputError, ("time_limit", "-1.0")),
    ],
)
def test_bad_table_arguments(kwargs, error, facts):
    kw = {"domains": ["nav1"], "progress": False, **kwargs}
    with pytest.raises(error) as exc:
        ground_truth_table(kw.pop("domains"), **kw)
    for fact in facts:
        assert fact in str(exc.value), (fact, str(exc.value))


def test_the_table_takes_one_typed_spec():
    """A spec is one frozen, validated value: a set is a kind or a saved set, never both
    and never the former "file"; keyword options replace its fields; former parameter
    names are gone."""
    import dataclasses

    from rcmdp_exact.protocol.ground_truth_table import GroundTruthTableSpec, SetSpec
    from rcmdp_exact.uncertainty import l1_ball

    m = garnet(3, 2, 2, n_constraints=1, seed=0)
    with pytest.raises(InputError, match="not both"):
        SetSpec(kind="kl", saved=l1_ball(m, 0.1))
    with pytest.raises(OptionError, match="'file'"):
        SetSpec(kind="file")
    assert SetSpec().kind == "l1" and SetSpec(saved=l1_ball(m, 0.1)).label == "saved"
    spec = GroundTruthTableSpec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seed = 1
    with pytest.raises(TypeError, match="episodes"):
        ground_truth_table(["nav1"], episodes="paper")
    with pytest.raises(InputError, match="model_ground_truth"):
        ground_truth_table(["nav1"], spec, uset=l1_ball(m, 0.1))

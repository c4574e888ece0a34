"""TabularCMDP: validation messages, immutability, transitions, conversions, outcomes."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import raises_fact
from hypothesis import given
from hypothesis import strategies as st

from rcmdp_exact import (
    ImproperPolicyError,
    ModelError,
    TabularCMDP,
    evaluate,
    evaluate_finite_horizon,
    penalised_return,
    rescaled_budget,
)
from rcmdp_exact.core.model import DENSE_LIMIT
from rcmdp_exact.core.model_checks import check_policy, row_tolerance


# --------------------------------------------------------------------------- fixtures
def base_args(**changes) -> dict:
    """A 3-state, 2-action, 1-constraint model; state 2 is absorbing."""
    P = np.zeros((3, 2, 3))
    P[0, 0] = [0.5, 0.5, 0.0]
    P[0, 1] = [0.0, 1.0, 0.0]
    P[1, 0] = [0.0, 0.0, 1.0]
    P[1, 1] = [1.0, 0.0, 0.0]
    P[2, :, 2] = 1.0
    R = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    C = np.zeros((3, 2, 1))
    C[1, :, 0] = 1.0
    args = dict(P=P, R=R, C=C, d=[1.0], gamma=0.9)
    args.update(changes)
    return args


def make(**changes) -> TabularCMDP:
    return TabularCMDP(**base_args(**changes))


def with_entry(arr, index, value):
    out = np.array(arr, dtype=np.float64)
    out[index] = value
    return out


BASE = base_args()
P0 = BASE["P"]
SPARSE_P = sp.csr_array(P0.reshape(6, 3))


def raises(*facts: str):
    """A ModelError naming every one of ``facts``."""
    return raises_fact(ModelError, *facts)


# --------------------------------------------------------------------------- messages
BAD_MODELS = [
    # -- shapes and dtypes of P
    (dict(P=np.ones((3, 2)) / 2), ("P", "(S, A, S)", "(3, 2)")),
    (dict(P=np.zeros((0, 2, 0))), ("P", "(0, 2, 0)")),
    (dict(P=[["a", "b"]]), ("P", "real numbers", "list")),
    (dict(P=[[[1.0]], [[0.5, 0.5]]]), ("P", "list")),
    (dict(P=P0 * (1 + 0j)), ("P", "complex")),
    # -- NaN / inf
    (dict(P=with_entry(P0, (1, 0, 2), np.nan)), ("P", "nan", "(s=1, a=0, s'=2)")),
    (dict(P=with_entry(P0, (0, 1, 0), np.inf)), ("P", "inf", "(s=0, a=1, s'=0)")),
    (dict(R=with_entry(BASE["R"], (0, 1), np.nan)), ("R", "nan", "(s=0, a=1)")),
    (dict(C=with_entry(BASE["C"], (2, 0, 0), -np.inf)), ("C", "-inf", "(s=2, a=0, k=0)")),
    (dict(d=[np.nan]), ("d", "nan", "(k=0)")),
    # -- negative probabilities
    (dict(P=with_entry(with_entry(P0, (0, 1, 0), -0.25), (0, 1, 1), 1.25)),
     ("P[0, 1, 0] = -0.25", "negative")),
    # -- rows not summing to 1: the first bad (s, a) and its sum
    (dict(P=with_entry(with_entry(P0, (2, 1), [0.5, 0.25, 0.125]), (0, 0), [0.5, 0.5, 0])),
     ("P[2, 1, :]", "sums to 0.875", "tolerance 3.0e-12")),
    (  # two bad rows: the first in (s, a) order is named
        dict(P=with_entry(with_entry(P0, (2, 0), [0.0, 1.0, 1.0]), (1, 1), [0.25, 0.25, 0])),
        ("P[1, 1, :]", "sums to 0.5"),
    ),
    (dict(P=with_entry(P0, (1, 0, 2), 0.0)), ("P[1, 0, :]", "sums to 0.0")),
    # -- rewards and costs
    (dict(R=np.zeros((3, 3))), ("R", "(3, 3)", "S=3, A=2")),
    (dict(R="abc"), ("R", "real numbers", "str")),
    (dict(C=np.zeros((3, 2, 2, 1))), ("C", "(3, 2, 2, 1)", "S=3, A=2")),
    (dict(C=np.zeros(3)), ("C", "(3,)")),
    # -- budgets of the wrong length
    (dict(d=[1.0, 2.0]), ("budgets d", "(1,)", "(2,)")),
    (dict(C=np.zeros((3, 2, 2)), d=[1.0]), ("budgets d", "(2,)", "(1,)")),
    (dict(d=None), ("K=1", "no budgets d")),
    (dict(C=None, d=[3.0]), ("budgets d", "(0,)", "(1,)")),
    # -- gamma outside [0, 1]
    (dict(gamma=1.5), ("gamma", "[0, 1]", "1.5")),
    (dict(gamma=-0.1), ("gamma", "[0, 1]", "-0.1")),
    (dict(gamma=np.nan), ("gamma", "[0, 1]", "nan")),
    (dict(gamma="0.9"), ("gamma", "[0, 1]", "'0.9'")),
    (dict(gamma=[0.9]), ("gamma", "[0, 1]", "[0.9]")),
    # -- p0 not a distribution
    (dict(p0=[0.5, 0.25, 0.0]), ("p0", "sums to 0.75")),
    (dict(p0=[1.5, -0.5, 0.0]), ("p0[1] = -0.5", "negative")),
    (dict(p0=[0.5, 0.5]), ("p0", "(3,)", "(2,)")),
    (dict(p0=[np.nan, 0.5, 0.5]), ("p0", "nan", "(s=0)")),
    (dict(p0=3), ("p0", "0..2", "3")),
    # -- horizon
    (dict(horizon=0), ("horizon", ">= 1", "0")),
    (dict(horizon=2.5), ("horizon", "integer", "2.5")),
    (dict(horizon=True), ("horizon", "integer", "True")),
    # -- terminal states
    (dict(terminal=[1]), ("terminal state 1", "not absorbing", "P[1, 0, 1] = 0.0")),
    (dict(terminal=[0, 2], state_labels=["start", "middle", "goal"]),
     ("terminal state 0 (start)", "not absorbing", "P[0, 0, 0] = 0.5")),
    (dict(terminal=[5]), ("terminal state index", "0..2", "5")),
    (dict(terminal=np.array([True, False])), ("terminal", "(3,)", "(2,)")),
    (dict(terminal=np.array([0, 0, 1])), ("terminal", "bool mask", "(3,)")),
    (dict(terminal=[0.0, 0.0, 1.0]), ("terminal", "float64")),
    # -- labels, outcomes, features
    (dict(state_labels=["a", "b"]), ("state_labels", "3", "2")),
    (dict(action_labels="lr"), ("action_labels", "2 strings", "str")),
    (dict(outcomes=np.zeros((3, 2))), ("outcomes", "float64", "(3, 2)")),
    (dict(outcomes=np.full((3, 2, 1), 7)), ("outcomes[0, 0, 0]", "0..2", "7")),
    (dict(outcomes=np.array([[[0, 1], [1, 1]], [[2, 2], [0, 0]], [[2, 2], [1, 1]]])),
     ("P[2, 1, 2] = 1.0", "none of the outcomes of (s=2, a=1)", "[1, 1]")),
    (dict(state_features=np.zeros((2, 1))), ("state_features", "S=3", "(2, 1)")),
]


@pytest.mark.parametrize(("changes", "facts"), BAD_MODELS)
def test_bad_model_message(changes, facts):
    with raises(*facts):
        make(**changes)


SPARSE_BAD = [
    (dict(P=sp.csr_array(np.ones((7, 3)) / 3)), ("sparse P", "(6, 3)", "(7, 3)")),
    (dict(P=SPARSE_P, R=np.zeros(3)), ("sparse P", "R", "(3,)")),
    (dict(P=SPARSE_P, R=np.zeros((3, 2, 3))), ("sparse P", "R", "(3, 2)", "(3, 2, 3)")),
    (dict(P=SPARSE_P, C=np.zeros((3, 2, 3, 1))), ("sparse P", "C", "(3, 2, 3, 1)")),
    (dict(P=sp.csr_array(with_entry(P0, (1, 1, 0), np.nan).reshape(6, 3))),
     ("P", "nan", "(s=1, a=1, s'=0)")),
    (dict(P=sp.csr_array(
        with_entry(with_entry(P0, (1, 1, 0), 1.5), (1, 1, 2), -0.5).reshape(6, 3))),
     ("P[1, 1, 2] = -0.5", "negative")),
    (dict(P=sp.csr_array(with_entry(P0, (0, 1, 2), 0.5).reshape(6, 3))),
     ("P[0, 1, :]", "sums to 1.5")),
    (dict(P=sp.csr_array(np.zeros((6, 3)))), ("P[0, 0, :]", "sums to 0.0")),
    (dict(P=sp.csr_array(P0.reshape(6, 3) * (1 + 1j))), ("sparse P", "complex128")),
    (dict(P=sp.csr_array(P0.reshape(6, 3)), terminal=[0]),
     ("terminal state 0", "not absorbing", "P[0, 0, 0] = 0.5")),
]


@pytest.mark.parametrize(("changes", "facts"), SPARSE_BAD)
def test_bad_sparse_model_message(changes, facts):
    with raises(*facts):
        make(**changes)


def test_rows_tolerance_scales_with_number_of_states():
    assert row_tolerance(3) == pytest.approx(3e-12)
    assert row_tolerance(1000) == pytest.approx(1e-9)
    make(P=with_entry(P0, (0, 1, 1), 1.0 + 1e-12))  # within 3e-12: accepted
    with raises("P[0, 1, :]", "sums to 1.00000000001"):
        make(P=with_entry(P0, (0, 1, 1), 1.0 + 1e-11))
    # a 1000-state model accepts a deviation of 5e-10 that a 3-state model refuses
    S = 1000
    P = sp.csr_array(np.eye(S))
    P.data[0] = 1.0 + 5e-10
    TabularCMDP(P, np.zeros((S, 1)))
    with raises("sums to 1.0000000005"):
        make(P=with_entry(P0, (0, 1, 1), 1.0 + 5e-10))


# --------------------------------------------------------------------------- policies
BAD_POLICIES = [
    (np.ones((3, 3)) / 3, ("policy", "(3, 2)", "(3, 3)")),
    ([[0.5, 0.5], [0.25, 0.5], [1.0, 0.0]], ("policy[1, :]", "(s=1)", "sums to 0.75")),
    ([[0.5, 0.5], [1.5, -0.5], [1.0, 0.0]], ("policy[1, 1] = -0.5", "negative")),
    ([[0.5, 0.5], [np.nan, 0.5], [1.0, 0.0]], ("policy", "nan", "(s=1, a=0)")),
    (np.array([0, 2, 1]), ("deterministic policy[1] = 2", "0..1")),
    ("left", ("policy", "real numbers", "str")),
]


@pytest.mark.parametrize(("policy", "facts"), BAD_POLICIES)
def test_bad_policy_message(policy, facts):
    model = make()
    with raises(*facts):
        check_policy(policy, 3, 2)
    for fn in (evaluate, lambda m, p: evaluate_finite_horizon(m, p, 5)):
        with raises(*facts):
            fn(model, policy)


def test_deterministic_policy_is_one_hot():
    pi = check_policy(np.array([1, 0, 1]), 3, 2)
    np.testing.assert_array_equal(pi, [[0, 1], [1, 0], [0, 1]])


# --------------------------------------------------------------------------- evaluation inputs
def improper_model(**changes):
    """gamma = 1; state 2 is terminal, action 1 in state 1 loops back to state 0."""
    return make(gamma=1.0, terminal=[2], **changes)


def test_undiscounted_without_horizon_names_a_reachable_improper_state():
    model = improper_model(state_labels=["s0", "s1", "goal"])
    # action 1 in state 0 goes to 1, action 1 in state 1 goes to 0: never absorbed
    with raises_fact(ImproperPolicyError, "gamma = 1", "state 0 (s0)", "(2 such states)"):
        evaluate(model, np.array([1, 1, 0]))
    # the same policy is fine with a horizon
    res = evaluate_finite_horizon(model, np.array([1, 1, 0]), 4)
    assert res.value == pytest.approx(0.0 + 2.0 + 0.0 + 2.0)  # r(0,1)=0, r(1,1)=2


def test_undiscounted_improper_state_found_from_a_later_state():
    # from state 0 the policy moves to 1 (a=1), state 1 (a=0) to the goal with prob 1;
    # a start in state 1 only; then state 0 is not reachable: evaluation succeeds
    model = improper_model(p0=1)
    res = evaluate(model, np.array([1, 0, 0]))
    assert res.value == pytest.approx(0.0)
    assert res.costs == pytest.approx([1.0])
    # an unreachable state that loops forever is reported as nan, never as a number
    P = P0.copy()
    P[0, 1] = [1.0, 0.0, 0.0]
    loop = TabularCMDP(P, BASE["R"], BASE["C"], d=[1.0], gamma=1.0, terminal=[2], p0=1)
    res = evaluate(loop, np.array([1, 0, 0]))
    assert np.isnan(res.v[0]) and res.v[1] == 0.0 and res.v[2] == 0.0
    assert res.value == 0.0 and res.costs[0] == pytest.approx(1.0)
    with raises_fact(ImproperPolicyError, "state 0 is reachable", "(1 such states)"):
        evaluate(loop.replace(p0=[0.5, 0.5, 0.0]), np.array([1, 0, 0]))


def test_undiscounted_without_terminal_states():
    model = make(gamma=1.0)
    with raises_fact(ImproperPolicyError, "state 0 is reachable", "(3 such states)"):
        evaluate(model, np.array([0, 0, 0]))


OTHER_BAD_CALLS = [
    (lambda m: evaluate("model", [[1, 0]] * 3), ("model", "TabularCMDP", "str")),
    (lambda m: evaluate(m, [[1, 0]] * 3, lam=[1.0, 2.0]), ("lam", "(1,)", "(2,)")),
    (lambda m: evaluate(m, [[1, 0]] * 3, lam=[np.inf]), ("lam", "inf", "(k=0)")),
    (lambda m: evaluate(m, [[1, 0]] * 3, lam=-1), ("lam[0] = -1.0", "negative")),
    (lambda m: evaluate_finite_horizon(m, [[1, 0]] * 3), ("horizon", "None")),
    (lambda m: evaluate_finite_horizon(m, [[1, 0]] * 3, horizon=-1), ("horizon", ">= 1", "-1")),
    (lambda m: evaluate_finite_horizon(m, [[1, 0]] * 3, horizon=0), ("horizon", ">= 1", "0")),
    (lambda m: evaluate_finite_horizon(m, [[1, 0]] * 3, horizon=3, discount=1.5),
     ("discount", "[0, 1]", "1.5")),
    (lambda m: rescaled_budget([3.0], 0.99, 0), ("horizon of a rescaled budget", "0")),
    (lambda m: rescaled_budget([3.0], 1.01, 10), ("gamma", "[0, 1]", "1.01")),
    (lambda m: rescaled_budget([np.nan], 0.9, 10), ("budgets d", "nan")),
    (lambda m: rescaled_budget("three", 0.9, 10), ("budgets d", "real numbers", "str")),
    (lambda m: penalised_return("high", [1.0], [1.0]), ("value", "'high'")),
    (lambda m: penalised_return([1.0, 2.0], [1.0], [1.0]), ("value", "[1.0, 2.0]")),
    (lambda m: penalised_return(1.0, ["a"], [1.0]), ("cost", "real numbers", "list")),
    (lambda m: penalised_return(1.0, [1.0, 2.0], [1.0]), ("budget", "(2,)", "(1,)")),
    (lambda m: m.to_mdptoolbox(lam=[1.0, 1.0]), ("lam", "(1,)", "(2,)")),
]


@pytest.mark.parametrize(("call", "facts"), OTHER_BAD_CALLS)
def test_other_bad_calls(call, facts):
    with raises(*facts):
        call(make())


# --------------------------------------------------------------------------- no deep tracebacks
GARBAGE = [
    "abc",
    None,
    object(),
    [[1.0, 2.0], [3.0]],
    np.array([1 + 2j]),
    np.array([[["x"]]]),
    1e400,
    np.zeros((0,)),
    np.ones((3, 2, 3, 1, 1)),
    {"a": 1},
]
OPTIONAL = {"C", "d", "p0", "horizon", "terminal", "state_labels", "action_labels",
            "cost_labels", "name", "outcomes", "state_features"}


@pytest.mark.parametrize(
    "field",
    ["P", "R", "C", "d", "gamma", "p0", "horizon", "terminal", "outcomes",
     "state_features", "state_labels", "action_labels"],
)
@pytest.mark.parametrize("value", GARBAGE, ids=lambda v: type(v).__name__)
def test_garbage_raises_model_error_only(field, value):
    """Every bad input is a ModelError, never a TypeError/IndexError from numpy."""
    empty = isinstance(value, np.ndarray) and value.size == 0
    if field in OPTIONAL and (value is None or empty):
        # None (and an empty list) means "not given": a valid model, or a ModelError
        # when the default clashes with the rest (no budgets for costs, ...)
        try:
            make(**{field: value})
        except ModelError:
            pass
        return
    with pytest.raises(ModelError):
        make(**{field: value})


@pytest.mark.parametrize("value", GARBAGE, ids=lambda v: type(v).__name__)
def test_garbage_policy_and_lam(value):
    model = make()
    with pytest.raises(ModelError):
        evaluate(model, value)
    if value is not None:
        with pytest.raises(ModelError):
            evaluate(model, [[1.0, 0.0]] * 3, lam=value)


def test_garbage_sparse_model_inputs():
    for R in GARBAGE:
        with pytest.raises(ModelError):
            make(P=SPARSE_P, R=R)
    # integer sparse matrices are probabilities too
    model = make(P=sp.csr_array(np.eye(3, dtype=int)[[0, 0, 1, 1, 2, 2]]))
    assert model.P_sparse.dtype == np.float64


# --------------------------------------------------------------------------- immutability
def test_model_is_immutable():
    P = P0.copy()
    model = TabularCMDP(P, BASE["R"], BASE["C"], d=[1.0], gamma=0.9)
    with pytest.raises(AttributeError, match="TabularCMDP is immutable"):
        model.gamma = 0.5
    with pytest.raises(AttributeError, match="TabularCMDP is immutable"):
        model.new_field = 1
    arrays = [model.P, model.R, model.C, model.d, model.p0, model.terminal, model.r,
              model.c, model.P_sparse.data, model.P_sparse.indices]
    for arr in arrays:
        with pytest.raises(ValueError, match="read-only"):
            arr[(0,) * arr.ndim] = 7.0
    # the model copied its inputs: changing them afterwards changes nothing
    P[0, 0] = [0.0, 0.0, 1.0]
    assert model.P[0, 0, 0] == 0.5
    assert copy.copy(model) is model and copy.deepcopy(model) is model


def test_sparse_model_is_immutable_and_copies_its_input():
    Ps = sp.csr_array(P0.reshape(6, 3))
    model = TabularCMDP(Ps, BASE["R"], BASE["C"], d=[1.0])
    Ps.data[:] = 0.0
    assert model.P_sparse.sum() == pytest.approx(6.0)
    with pytest.raises(ValueError, match="read-only"):
        model.P_sparse.data[0] = 1.0


def test_pickle_round_trip_revalidates():
    model = make(terminal=[2], state_labels=["a", "b", "c"], horizon=7)
    back = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(back.P, model.P)
    assert back.state_labels == ("a", "b", "c") and back.horizon == 7
    assert back.terminal.tolist() == [False, False, True]
    assert not back.P.flags.writeable


# --------------------------------------------------------------------------- with_transitions
def test_with_transitions_builds_a_new_validated_model():
    model = make(terminal=[2], horizon=10, name="base")
    P = P0.copy()
    P[0, 0] = [0.0, 0.0, 1.0]
    new = model.with_transitions(P)
    assert new is not model
    assert model.P[0, 0, 0] == 0.5 and new.P[0, 0, 2] == 1.0
    for field in ("R", "C", "d", "p0", "terminal"):
        np.testing.assert_array_equal(getattr(new, field), getattr(model, field))
    assert (new.gamma, new.horizon, new.name) == (0.9, 10, "base")
    # a next-state-dependent reward is re-averaged under the new dynamics
    R = np.zeros((3, 2, 3))
    R[:, :, 2] = 1.0
    m2 = make(R=R)
    assert m2.r[0, 0] == 0.0 and m2.with_transitions(P).r[0, 0] == 1.0
    # the new dynamics are validated like any model
    bad = P.copy()
    bad[2, 0] = [1.0, 0.0, 0.0]
    with raises("terminal state 2", "not absorbing", "P[2, 0, 2] = 0.0"):
        model.with_transitions(bad)
    with pytest.raises(TypeError, match="unknown model fields"):
        model.replace(transitions=P)


def test_with_transitions_drops_outcomes_unless_given():
    model = corridor()
    assert model.outcomes is not None
    assert model.with_transitions(model.P).outcomes is None
    kept = model.with_transitions(model.P, outcomes=model.outcomes)
    np.testing.assert_array_equal(kept.outcomes, model.outcomes)


# --------------------------------------------------------------------------- from_outcomes
def corridor(p=0.75):
    """4 cells in a row, actions left/right; outcome 0 = stay, 1 = the move, clipped."""
    S, A = 4, 2
    x = np.arange(S)
    ns = np.empty((S, A, 2), dtype=int)
    ns[:, :, 0] = x[:, None]
    ns[:, 0, 1] = np.clip(x - 1, 0, S - 1)
    ns[:, 1, 1] = np.clip(x + 1, 0, S - 1)
    prob = np.broadcast_to([1 - p, p], (S, A, 2))
    return TabularCMDP.from_outcomes(
        ns, prob, R=-np.arange(S, dtype=float), C=np.array([0.0, 1.0, 0.0, 2.0]),
        d=[1.0], gamma=0.9,
    )


def test_from_outcomes_merges_clipped_outcomes():
    model = corridor(0.75)
    P = model.P
    # cell 0, action left: both outcomes land in cell 0 and are merged
    np.testing.assert_array_equal(P[0, 0], [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(P[3, 1], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(P[1, 1], [0.0, 0.25, 0.75, 0.0])
    np.testing.assert_array_equal(P[2, 0], [0.0, 0.75, 0.25, 0.0])
    # reward of entering a cell: r(1, right) = 0.25 * (-1) + 0.75 * (-2)
    assert model.r[1, 1] == pytest.approx(-1.75)
    assert model.c[1, 1, 0] == pytest.approx(0.25 * 1.0 + 0.0)
    assert model.c[2, 1, 0] == pytest.approx(0.25 * 0.0 + 0.75 * 2.0)
    assert model.outcomes.shape == (4, 2, 2)


@given(st.data())
def test_from_outcomes_equals_the_merge_by_hand(data):
    S = data.draw(st.integers(1, 5))
    A = data.draw(st.integers(1, 3))
    O = data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    ns = rng.integers(0, S, (S, A, O))
    prob = rng.random((S, A, O)) + 0.01
    prob /= prob.sum(axis=2, keepdims=True)
    model = TabularCMDP.from_outcomes(ns, prob, R=np.zeros((S, A)))
    expected = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            for o in range(O):
                expected[s, a, ns[s, a, o]] += prob[s, a, o]
    np.testing.assert_allclose(model.P, expected, rtol=0, atol=1e-15)


FROM_OUTCOMES_BAD = [
    (dict(next_state=np.zeros((2, 1, 2))), ("next_state", "float64", "(2, 1, 2)")),
    (dict(next_state=np.array([[[0, 2]], [[1, 1]]])), ("next_state[0, 0, 1]", "0..1", "2")),
    (  # the negative outcome would cancel in the merged row: caught before merging
        dict(prob=np.array([[[1.25, -0.25]], [[0.5, 0.5]]]),
             next_state=np.zeros((2, 1, 2), int)),
        ("prob[0, 0, 1] = -0.25", "negative"),
    ),
    (dict(prob=np.ones((2, 1, 3)) / 3), ("prob", "(2, 1, 2)", "(2, 1, 3)")),
    (dict(prob=np.array([[[np.nan, 1.0]], [[0.5, 0.5]]])), ("prob", "nan", "(s=0, a=0, o=0)")),
]


@pytest.mark.parametrize(("changes", "facts"), FROM_OUTCOMES_BAD)
def test_from_outcomes_messages(changes, facts):
    args = dict(
        next_state=np.array([[[0, 1]], [[1, 1]]]),
        prob=np.full((2, 1, 2), 0.5),
        R=np.zeros(2),
    )
    args.update(changes)
    with raises(*facts):
        TabularCMDP.from_outcomes(**args)


# --------------------------------------------------------------------------- conversions
def random_model(S=6, A=3, K=2, seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    P = rng.random((S, A, S)) ** 3
    P /= P.sum(axis=2, keepdims=True)
    return TabularCMDP(P, rng.normal(size=(S, A, S)), rng.random((S, A, S, K)),
                       d=np.ones(K), **kwargs)


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")
def test_to_mdptoolbox_convention():
    import mdptoolbox.util

    model = random_model()
    lam = np.array([0.5, 2.0])
    P, R = model.to_mdptoolbox(lam)
    S, A = model.n_states, model.n_actions
    for a in range(A):
        for s in range(S):
            np.testing.assert_array_equal(P[a, s], model.P[s, a])
            expected = sum(model.P[s, a, t] * (model.R[s, a, t] - lam @ model.C[s, a, t])
                           for t in range(S))
            assert R[s, a] == pytest.approx(expected, abs=1e-12)
    mdptoolbox.util.check(P, R)  # pymdptoolbox's own validation accepts the arrays
    Psp, Rsp = model.to_mdptoolbox(lam, sparse=True)
    assert len(Psp) == A and all(sp.issparse(m) for m in Psp)
    np.testing.assert_array_equal(np.stack([m.toarray() for m in Psp]), P)
    np.testing.assert_array_equal(Rsp, R)
    mdptoolbox.util.check(np.array(Psp, dtype=object), Rsp)


def test_to_quantecon_convention():
    from quantecon.markov import DiscreteDP

    model = random_model(K=1)
    R, Q, beta = model.to_quantecon()
    np.testing.assert_array_equal(Q, model.P)
    np.testing.assert_allclose(R, np.einsum("ijk,ijk->ij", model.P, model.R), atol=1e-13)
    assert beta == model.gamma
    DiscreteDP(R, Q, beta)  # QuantEcon's validation accepts them
    Rf, Qs, beta, s_idx, a_idx = model.to_quantecon(lam=1.0, sparse=True)
    assert Qs.shape == (18, 6) and sp.issparse(Qs)
    np.testing.assert_array_equal(Qs.toarray()[s_idx * 3 + a_idx], model.P.reshape(18, 6))
    np.testing.assert_allclose(Rf, (model.r - model.c[:, :, 0]).ravel(), atol=1e-13)
    DiscreteDP(Rf, Qs, beta, s_idx, a_idx)


def test_conversions_zero_the_reward_of_terminal_states():
    model = make(terminal=[2], R=np.ones((3, 2)))
    assert model.to_mdptoolbox()[1][2].tolist() == [0.0, 0.0]
    assert model.to_quantecon()[0][2].tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- sparse models
def test_sparse_and_dense_models_give_the_same_evaluation():
    dense = random_model(S=8, A=3, K=2, seed=3, p0=np.full(8, 1 / 8))
    sparse = TabularCMDP(
        sp.csr_array(dense.P.reshape(24, 8)), dense.r, dense.c, d=dense.d,
        gamma=dense.gamma, p0=dense.p0,
    )
    assert sparse.is_sparse and not dense.is_sparse
    np.testing.assert_array_equal(sparse.P, dense.P)
    rng = np.random.default_rng(1)
    pi = rng.dirichlet(np.ones(3), size=8)
    a, b = evaluate(dense, pi, lam=[1.0, 0.5]), evaluate(sparse, pi, lam=[1.0, 0.5])
    for key in ("v", "c", "q", "qc", "occupancy", "lagrangian", "q_lagrangian"):
        np.testing.assert_allclose(a[key], b[key], rtol=1e-12, atol=1e-12)
    fa = evaluate_finite_horizon(dense, pi, 30)
    fb = evaluate_finite_horizon(sparse, pi, 30)
    assert fa.value == pytest.approx(fb.value, rel=1e-13)


def test_huge_sparse_model_refuses_dense_view_but_evaluates():
    S, A = 4000, 4
    assert S * A * S > DENSE_LIMIT
    nxt = (np.arange(S)[:, None] + np.arange(A)[None, :]) % S  # action a: move by a
    P = sp.csr_array((np.ones(S * A), (np.arange(S * A), nxt.ravel())), shape=(S * A, S))
    R = np.zeros((S, A))
    R[0] = 1.0
    model = TabularCMDP(P, R, gamma=0.5)
    with raises("64,000,000", "50,000,000", "P_sparse"):
        model.P  # noqa: B018
    # action 0 stays in place: V(0) = 1 / (1 - gamma), every other state earns nothing
    res = evaluate(model, np.zeros(S, dtype=int))
    assert res.v[0] == pytest.approx(2.0) and np.abs(res.v[1:]).max() == 0.0
    assert res.occupancy.sum() == pytest.approx(2.0)
    Psp, _ = model.to_mdptoolbox(sparse=True)
    assert Psp[1][5, 6] == 1.0
    assert model.R.shape == (S, A, S)  # a broadcast view, not a copy
    assert model.R.base is not None


def test_repr_and_labels():
    model = make(name="toy", terminal=[2])
    assert repr(model) == "<TabularCMDP 'toy': S=3, A=2, K=1, gamma=0.9, horizon=None, terminal=1>"
    assert (model.S, model.A, model.K) == (3, 2, 1)
    np.testing.assert_array_equal(model.state_features, [[0.0], [1.0], [2.0]])


# --------------------------------------------------------------------------- files
@pytest.mark.parametrize("kind", ["dense", "sparse", "outcomes", "labelled"])
def test_save_and_load_round_trip_is_exact(tmp_path, kind):
    from rcmdp_exact import domains

    if kind == "dense":
        model = make(horizon=7, terminal=[2])
    elif kind == "sparse":
        model = make(P=SPARSE_P, p0=[0.25, 0.75, 0.0])
    elif kind == "outcomes":
        model = domains.safe_navigation_2()
    else:
        model = domains.inventory()
    path = model.save(tmp_path / "model")
    assert path.suffix == ".npz"
    back = TabularCMDP.load(path)
    for field in ("P", "R", "C", "d", "p0", "terminal", "outcomes", "state_features", "r",
                  "c"):
        a, b = getattr(model, field), getattr(back, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype, field
    for field in ("gamma", "horizon", "name", "state_labels", "action_labels", "cost_labels",
                  "is_sparse"):
        assert getattr(model, field) == getattr(back, field), field
    assert repr(back) == repr(model)
    # the file holds plain arrays: no pickle is needed to read it
    with np.load(path, allow_pickle=False) as f:
        assert "format" in f


def test_load_refuses_other_files(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, x=np.zeros(3))
    with raises("other.npz", "not a model file"):
        TabularCMDP.load(path)


def test_kernel_swap_without_checks_matches_a_fresh_model():
    from rcmdp_exact import domains

    nav = domains.safe_navigation_1()
    P = np.asarray(domains.safe_navigation_1(p_success=0.6).P)
    fast = nav.with_transitions(P, check=False)
    fresh = TabularCMDP(P, nav.R, nav.C, nav.d, gamma=nav.gamma, p0=nav.p0,
                        horizon=nav.horizon, terminal=nav.terminal)
    pi = np.full((25, 4), 0.25)
    a, b = evaluate(fast, pi, 1.0), evaluate(fresh, pi, 1.0)
    for field in ("v", "c", "q", "occupancy"):
        np.testing.assert_array_equal(a[field], b[field])
    assert fast.P is not P and not fast.P.flags.writeable  # a read-only copy
    np.testing.assert_array_equal(fast.r, fresh.r)  # derived arrays follow the new P
    assert fast.outcomes is None


def test_load_refuses_a_file_that_is_not_npz(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a model")
    with raises("notes.txt", "not a model file"):
        TabularCMDP.load(path)


def test_replace_without_costs_drops_the_cost_labels():
    """A model with named costs, made into a plain MDP with ``replace(C=None, d=None)``
    (as the least-cost searches do): the labels go with the costs unless given."""
    from rcmdp_exact import domains

    nav = domains.inventory()
    assert nav.cost_labels is not None and len(nav.cost_labels) == nav.n_constraints
    plain = nav.replace(R=-nav.r, C=None, d=None)
    assert plain.n_constraints == 0 and not plain.cost_labels
    with raises("cost_labels"):
        nav.replace(C=None, d=None, cost_labels=["x"])

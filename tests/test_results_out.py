"""Results out: flat dicts, JSON and back, DataFrames, save and load, one path rule.

The round trips are judged bit for bit (float64 by its bytes, so -0.0 and nan count),
on nested structures that hypothesis draws; the path rule on every artefact kind.
"""

import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from helpers import examples, raises_fact
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rcmdp_exact import InputError, LoadError, Result, TabularCMDP, l1_ball
from rcmdp_exact._result import Status, decode, encode


# --------------------------------------------------------------------------- equality
def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes; a nan matches any nan (its payload is not kept)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return a.tobytes() == b.tobytes()
    na, nb = np.isnan(a), np.isnan(b)
    return bool((na == nb).all()) and a[~na].tobytes() == b[~nb].tobytes()


def same(a, b) -> bool:
    """Equal in type and value, floats bit for bit (-0.0 and 0.0 differ), arrays in
    dtype, shape and bytes."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and same_bits(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return same_bits(np.array(a), np.array(b))
    if isinstance(a, np.generic):
        return same_bits(np.array(a), np.array(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


# --------------------------------------------------------------------------- strategies
floats = st.floats(allow_nan=True, allow_infinity=True)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), floats,
                    st.text(max_size=8), st.sampled_from(list(Status)))
dtypes = st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_])
arrays = st.one_of(
    dtypes.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3,
                                                               min_side=0, max_side=3))),
    hnp.arrays(np.dtype("<U3"), hnp.array_shapes(max_dims=2, max_side=3),
               elements=st.text(st.characters(blacklist_characters="\x00"), max_size=3)))
numpy_scalars = dtypes.flatmap(lambda dt: hnp.from_dtype(np.dtype(dt))).map(
    lambda x: x if isinstance(x, np.generic) else np.float64(x))
leaves = st.one_of(scalars, arrays, numpy_scalars)
keys = st.text(min_size=1, max_size=6)


def nested(children):
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=3),
        st.dictionaries(st.integers(-3, 3), children, max_size=2),
        st.dictionaries(keys, children, max_size=3).map(Result),
    )


trees = st.recursive(leaves, nested, max_leaves=12)
results = st.dictionaries(keys, trees, max_size=5).map(Result)


# --------------------------------------------------------------------------- JSON
@settings(max_examples=examples(200))
@given(results)
def test_json_round_trip_is_exact(res):
    text = res.to_json()
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    json.loads(text, parse_constant=refuse)  # strict JSON: no NaN or Infinity literals
    back = Result.from_json(text)
    assert same(back, res)


@settings(max_examples=examples(60))
@given(results)
def test_npz_round_trip_is_exact(tmp_path_factory, res):
    path = tmp_path_factory.mktemp("npz") / "r.npz"
    written = res.save(path)
    assert written == path
    assert same(Result.load(path), res)
    assert same(Result.load(path.with_suffix("")), res)  # with or without the suffix


def test_json_keeps_types_a_plain_dump_loses():
    res = Result(a=np.float32(1.5), b=(1, 2), c=np.array([[1, 2]], dtype=np.int32),
                 d=Status.OPTIMAL, e=-0.0, f=float("nan"), g=Path("x/y"), h={2: "two"})
    back = Result.from_json(res.to_json())
    assert type(back.a) is np.float32 and type(back.b) is tuple
    assert back.c.dtype == np.int32 and back.c.shape == (1, 2)
    assert type(back.d) is Status and back.d == "optimal"
    assert math.copysign(1.0, back.e) == -1.0 and math.isnan(back.f)
    assert back.g == Path("x/y") and back.h == {2: "two"}


def test_a_bracket_result_round_trips(tmp_path):
    from rcmdp_exact import rcmdp_bracket
    from rcmdp_exact.testing import example, robust_cmdps

    model, uset = example(robust_cmdps(n_states=2, n_actions=2), seed=1)
    br = rcmdp_bracket(model, uset, variants=("value",), progress=False, max_boxes=30,
                       time_limit=None)
    for name in ("b.json", "b.npz"):
        back = Result.load(br.save(tmp_path / name))
        assert same(back, br)
    assert same(Result.from_json(br.to_json()), br)


def test_objects_outside_the_form_are_refused_with_the_field_named():
    m = TabularCMDP(np.ones((1, 1, 1)), R=[[1.0]], gamma=0.5)
    res = Result(fit=Result(uset=l1_ball(m, 0.1)))
    with raises_fact(InputError, "fit.uset", "L1Ball", "save"):
        res.to_json()
    with raises_fact(InputError, "complex128"):
        Result(z=np.array([1j])).to_json()


def test_from_json_refuses_other_text():
    with raises_fact(InputError, "not JSON"):
        Result.from_json("{")
    with raises_fact(InputError, "format", "rcmdp_exact.Result/1"):
        Result.from_json(json.dumps({"format": "other"}))


@pytest.mark.parametrize("inner, facts", [
    (5, ["holds a int", "Result was expected", "Result.to_json()"]),
    ([1, 2], ["holds a list", "Result was expected"]),
    ({"__type__": "dict", "items": {"a": 1}}, ["holds a dict", "Result was expected"]),
    ({"__type__": "Result"}, ["damaged", "'fields'"]),
    (None, ["holds a NoneType"]),
])
def test_from_json_refuses_a_result_entry_that_is_not_a_result(inner, facts, tmp_path):
    """{"format": ..., "result": 5} returned the int 5; every form of a saved result
    (text, .json, .npz) names what it holds and what was expected."""
    from rcmdp_exact._io import save_json, save_npz
    from rcmdp_exact._result import FORMAT

    text = json.dumps({"format": FORMAT, "result": inner})
    with raises_fact(InputError, *facts):
        Result.from_json(text)
    save_json(tmp_path / "r.json", text)
    with raises_fact(LoadError, "r.json", *facts[:1]):
        Result.load(tmp_path / "r.json")
    save_npz(tmp_path / "r.npz", {"structure": np.array(json.dumps(inner))}, FORMAT)
    with raises_fact(LoadError, "r.npz", *facts[:1]):
        Result.load(tmp_path / "r.npz")
    with raises_fact(InputError, "no 'result' entry"):
        Result.from_json(json.dumps({"format": FORMAT}))


def test_encode_and_decode_take_a_hook_for_other_objects():
    class Thing:
        pass

    def out(obj, where):
        return {"__type__": "thing", "where": where} if isinstance(obj, Thing) else None

    data = encode({"a": [Thing()]}, out)
    assert data["items"]["a"][0] == {"__type__": "thing", "where": "a[0]"}
    back = decode(data, lambda d: d["where"])
    assert back == {"a": ["a[0]"]}


# --------------------------------------------------------------------------- flat
def test_to_flat_names_nested_fields_and_array_elements():
    res = Result(value=1.5, costs=np.array([0.25, 2.0]), policy=np.eye(2),
                 lp=Result(status=Status.OPTIMAL, lam=np.float64(3.0)),
                 policies={"lower": np.array([1, 0])}, pair=(1, "x"), none=None,
                 scalar0d=np.array(7.0))
    flat = res.to_flat()
    assert flat == {"value": 1.5, "costs[0]": 0.25, "costs[1]": 2.0, "policy[0,0]": 1.0,
                    "policy[0,1]": 0.0, "policy[1,0]": 0.0, "policy[1,1]": 1.0,
                    "lp.status": "optimal", "lp.lam": 3.0, "policies.lower[0]": 1,
                    "policies.lower[1]": 0, "pair[0]": 1, "pair[1]": "x", "none": None,
                    "scalar0d": 7.0}
    assert all(type(v) in (int, float, str, bool, type(None)) for v in flat.values())
    assert res.to_flat("list")["policy"] == [[1.0, 0.0], [0.0, 1.0]]
    assert res.to_flat("list")["pair"] == [1, "x"]
    dropped = res.to_flat("drop")
    assert "costs[0]" not in dropped and "policy" not in dropped and dropped["value"] == 1.5
    with raises_fact(InputError, "arrays", "'elements'"):
        res.to_flat("rows")


def test_to_flat_of_an_object_is_its_repr():
    m = TabularCMDP(np.ones((1, 1, 1)), R=[[1.0]], gamma=0.5)
    assert Result(model=m).to_flat()["model"] == repr(m)


def test_to_frame_builds_one_row_from_to_flat(monkeypatch):
    """pandas is optional: a stand-in module receives the row of to_flat()."""
    seen = {}

    class DataFrame:
        def __init__(self, rows):
            seen["rows"] = rows

    monkeypatch.setitem(sys.modules, "pandas", types.SimpleNamespace(DataFrame=DataFrame))
    res = Result(value=1.0, costs=np.array([2.0]))
    assert isinstance(res.to_frame(), DataFrame)
    assert seen["rows"] == [{"value": 1.0, "costs[0]": 2.0}]


def test_to_frame_without_pandas_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"rcmdp_exact\[frames\]"):
        Result(value=1.0).to_frame()


def test_max_size_keeps_the_key_numbers_and_drops_the_tables():
    """A row keeps the costs and multipliers (K,) and drops the policy (S, A) (Safe
    Navigation 1's solve_cmdp: 285 columns with every element, 10 with max_size=16)."""
    res = Result(value=1.5, costs=np.array([0.25, 2.0]), policy=np.full((25, 4), 0.25),
                 pair=(1, 2, 3), lp=Result(lam=np.array([3.0])))
    row = res.to_flat(max_size=16)
    assert row == {"value": 1.5, "costs[0]": 0.25, "costs[1]": 2.0, "pair[0]": 1,
                   "pair[1]": 2, "pair[2]": 3, "lp.lam[0]": 3.0}
    assert res.to_flat(max_size=2)["costs[1]"] == 2.0 and "pair[0]" not in res.to_flat(
        max_size=2)
    assert len(res.to_flat()) == 1 + 2 + 100 + 3 + 1
    with raises_fact(InputError, "max_size", "-1"):
        res.to_flat(max_size=-1)


def test_the_long_form_has_one_record_per_scalar_and_rebuilds_every_array():
    pol = np.arange(6.0).reshape(3, 2)
    res = Result(value=1.5, policy=pol, dual=Result(lo=-1.0, hi=2.0), tags=("a", "b"))
    long = res.to_long()
    assert {"field": "value", "index": (), "value": 1.5} in long
    assert {"field": "dual.hi", "index": (), "value": 2.0} in long
    assert {"field": "tags", "index": (1,), "value": "b"} in long
    back = np.zeros((3, 2))
    for rec in long:
        if rec["field"] == "policy":
            back[rec["index"]] = rec["value"]
    np.testing.assert_array_equal(back, pol)
    assert len(long) == 1 + 6 + 2 + 2
    assert [r["field"] for r in res.to_long(max_size=4)] == ["value", "dual.lo", "dual.hi",
                                                             "tags", "tags"]


def test_frames_of_both_forms():
    pd = pytest.importorskip("pandas")
    res = Result(value=1.5, costs=np.array([0.25, 2.0]), policy=np.eye(3))
    wide = res.to_frame(max_size=2)
    assert list(wide.columns) == ["value", "costs[0]", "costs[1]"] and len(wide) == 1
    long = res.to_frame(form="long")
    assert list(long.columns) == ["field", "index", "value"] and len(long) == 1 + 2 + 9
    stacked = pd.concat([res.to_frame(form="long").assign(run=i) for i in range(3)])
    assert len(stacked) == 36 and set(stacked["run"]) == {0, 1, 2}
    with raises_fact(InputError, "form", "'wide'"):
        res.to_frame(form="tall")


# --------------------------------------------------------------------------- paths
def test_one_path_rule_for_every_artefact(tmp_path):
    """The suffix is added on save and accepted with or without on load, for models,
    sets and results alike."""
    m = TabularCMDP(np.ones((1, 1, 1)), R=[[1.0]], gamma=0.5)
    uset = l1_ball(m, 0.1)
    res = Result(x=1.0)
    assert m.save(tmp_path / "m") == tmp_path / "m.npz"
    assert uset.save(tmp_path / "b") == tmp_path / "b.npz"
    assert res.save(tmp_path / "r") == tmp_path / "r.json"
    assert res.save(tmp_path / "r.v2") == tmp_path / "r.v2.json"
    for stem, load in (("m", TabularCMDP.load), ("b", type(uset).load), ("r", Result.load)):
        suffix = ".json" if stem == "r" else ".npz"
        a, b = load(tmp_path / stem), load(tmp_path / (stem + suffix))
        assert type(a) is type(b)
    assert Result.load(tmp_path / "r.v2").x == 1.0


def test_result_load_errors_name_the_path(tmp_path):
    with raises_fact(LoadError, "missing", "missing.json", "missing.npz"):
        Result.load(tmp_path / "missing")
    (tmp_path / "bad.json").write_text("{not json")
    with raises_fact(LoadError, "bad.json", "not JSON"):
        Result.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "x"}))
    with raises_fact(LoadError, "other.json", "'x'"):
        Result.load(tmp_path / "other.json")
    m = TabularCMDP(np.ones((1, 1, 1)), R=[[1.0]], gamma=0.5)
    m.save(tmp_path / "model.npz")
    with raises_fact(LoadError, "model.npz", "TabularCMDP"):
        Result.load(tmp_path / "model.npz")


# --------------------------------------------------------------------------- subclasses
class Tagged(Result, name="tests.test_results_out.Tagged"):
    """A Result subclass with a method and a field that the JSON form does not hold as
    it is (a set of strings, written as a sorted list)."""

    def total(self) -> float:
        return float(np.sum(self.x))

    def _fields_out(self) -> dict:
        return {**self, "tags": sorted(self.tags)}

    @classmethod
    def _from_fields(cls, fields: dict):
        return cls({**fields, "tags": set(fields["tags"])})


def test_a_subclass_round_trips_as_itself(tmp_path):
    res = Tagged(x=np.array([0.1, -0.0, np.nan]), tags={"b", "a"}, inner=Result(y=1))
    back = Result.from_json(res.to_json())
    assert type(back) is Tagged and back.tags == {"a", "b"} and type(back.inner) is Result
    assert same_bits(back.x, res.x) and math.isnan(back.total())
    assert type(Tagged.from_json(res.to_json())) is Tagged
    for name in ("t.json", "t.npz"):
        path = res.save(tmp_path / name)
        for load in (Result.load, Tagged.load):
            again = load(path)
            assert type(again) is Tagged and same_bits(again.x, res.x), (name, load)
    assert res.to_flat()["tags[0]"] == "a"  # flattened from the form it is saved in
    # a subclass's reader takes only that subclass
    plain = Result(x=np.zeros(2))
    with raises_fact(InputError, "Result", "Tagged"):
        Tagged.from_json(plain.to_json())
    with raises_fact(LoadError, "Tagged"):
        Tagged.load(plain.save(tmp_path / "plain.npz"))


def test_a_saved_subclass_that_is_not_defined_is_refused():
    text = Tagged(x=np.zeros(1), tags=set()).to_json().replace(
        "tests.test_results_out.Tagged", "elsewhere.Unknown")
    with raises_fact(InputError, "elsewhere.Unknown", "import"):
        Result.from_json(text)

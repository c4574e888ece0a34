"""The suite's instances frozen as package data (rcmdp_exact.suite.frozen): each archive
is its builder's model bit for bit and matches its checksum, a damaged or changed
archive is refused with its path, no instance needs Gymnasium, the toy-text tables are
Gymnasium's (where it is installed), and every table is the variant its page states,
checked against the cited numbers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from rcmdp_exact import LoadError
from rcmdp_exact.suite import frozen, instances
from rcmdp_exact.suite.instances import INSTANCES


# --------------------------------------------------------------------------- frozen
@pytest.mark.parametrize("name", list(INSTANCES))
def test_frozen_instance_is_its_builders_model(name):
    """The shipped archive and the builder give the same arrays (every field, every
    bit), and the checksum file holds their digest."""
    inst = INSTANCES[name]
    built = frozen.model_arrays(inst.rebuild())
    shipped = frozen.model_arrays(inst.build())
    assert sorted(built) == sorted(shipped)
    for key in built:
        assert built[key].dtype == shipped[key].dtype, key
        assert np.array_equal(built[key], shipped[key]), key
    sums = json.loads(frozen.CHECKSUMS.read_text())["sha256"]
    assert sums[name] == frozen.digest(built)


def test_checksums_cover_every_instance_and_the_archives_are_package_data():
    sums = json.loads(frozen.CHECKSUMS.read_text())["sha256"]
    assert list(sums) == list(INSTANCES)
    for name in INSTANCES:
        assert (frozen.FROZEN / f"{name}.npz").is_file()
    import glob
    import tomllib

    text = (frozen.FROZEN.parents[3] / "pyproject.toml").read_text()
    patterns = tomllib.loads(text)["tool"]["setuptools"]["package-data"]["rcmdp_exact.suite"]
    root = frozen.FROZEN.parents[1]  # rcmdp_exact/suite
    shipped = {p for pat in patterns for p in glob.glob(pat, root_dir=root, recursive=True)}
    for path in [*frozen.FROZEN.iterdir(), root / "data" / "values.json.gz"]:
        assert str(path.relative_to(root)) in shipped, path


def _copy(tmp_path):
    folder = tmp_path / "instances"
    shutil.copytree(frozen.FROZEN, folder)
    return folder


def test_a_changed_instance_is_refused_with_its_path(tmp_path):
    """An archive whose numbers differ from its checksum (here: riverswim-6 with another
    bank probability, saved as a valid archive) is refused; so is a truncated one, a
    missing one and one without a checksum."""
    from rcmdp_exact._io import save_npz

    folder = _copy(tmp_path)
    arrays = frozen.model_arrays(INSTANCES["riverswim-6"].rebuild())
    arrays["P"] = arrays["P"].copy()
    arrays["P"][0, 1] = [0.5, 0.5, 0, 0, 0, 0]
    save_npz(folder / "riverswim-6.npz", arrays, frozen.FORMAT, compressed=True)
    with pytest.raises(LoadError, match=r"riverswim-6\.npz.*does not match its checksum"):
        frozen.frozen_model("riverswim-6", folder)
    raw = (folder / "chain-10.npz").read_bytes()
    (folder / "chain-10.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(LoadError, match=r"chain-10\.npz"):
        frozen.frozen_model("chain-10", folder)
    (folder / "grid-5x5.npz").unlink()
    with pytest.raises(LoadError, match=r"grid-5x5\.npz"):
        frozen.frozen_model("grid-5x5", folder)
    sums = json.loads((folder / "checksums.json").read_text())
    del sums["sha256"]["forest-10"]
    (folder / "checksums.json").write_text(json.dumps(sums))
    with pytest.raises(LoadError, match="no checksum of instance 'forest-10'"):
        frozen.frozen_model("forest-10", folder)
    (folder / "checksums.json").write_text("{")
    with pytest.raises(LoadError, match=r"checksums\.json"):
        frozen.frozen_model("machine-10", folder)


def test_freeze_writes_what_frozen_model_reads(tmp_path):
    folder = tmp_path / "fresh"
    sums = instances.freeze(["riverswim-6", "taxi"], folder)
    assert list(sums) == ["riverswim-6", "taxi"]
    m = frozen.frozen_model("taxi", folder)
    assert (m.n_states, m.n_actions, m.horizon) == (500, 6, 200)
    assert frozen.digest(frozen.model_arrays(m)) == sums["taxi"]


def test_every_instance_loads_without_gymnasium():
    """With Gymnasium made unimportable, every instance and its set load (the frozen
    tables), and a suite command runs."""
    code = ("import sys\nsys.modules['gymnasium'] = None\n"
            "from rcmdp_exact import suite\n"
            "for n in suite.names():\n"
            "    m, u, rec = suite.load(n, 'l1', 0.1)\n"
            "    assert rec is not None, n\n"
            "from rcmdp_exact.cli import main\n"
            "rc = main(['suite', 'show', 'taxi'])\n"
            "print('ok', rc, sys.modules.get('gymnasium') is not None)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-3:] == ["ok", "0", "False"]


# --------------------------------------------------------------------------- Gymnasium
def _entries(table):
    return {(s, a): [(float(p), int(t), float(r), bool(d)) for p, t, r, d in table[s][a]]
            for s in table for a in table[s]}


@pytest.mark.parametrize("which", ["frozenlake-4x4", "frozenlake-8x8", "cliffwalking",
                                   "taxi", "cliffwalking-dry", "taxi-dry"])
def test_toy_text_tables_are_gymnasiums(which):
    """Our tables (written from the definitions) against the installed Gymnasium's,
    entry by entry (probabilities, next states, rewards, terminations), and the frozen
    model against ``from_gymnasium`` of Gymnasium's own environment."""
    gym = pytest.importorskip("gymnasium")
    from rcmdp_exact import TabularCMDP
    from rcmdp_exact.domains import classic

    if which.startswith("frozenlake"):
        size = which[-3:]
        ours = classic.frozen_lake_table(size)
        env = gym.make("FrozenLake-v1", map_name=size, is_slippery=True)
    elif which.startswith("cliffwalking"):
        ours = classic.cliff_walking_table(which == "cliffwalking")
        env = gym.make("CliffWalking-v1", is_slippery=which == "cliffwalking")
    else:
        try:
            env = gym.make("Taxi-v4", is_rainy=which == "taxi")
        except gym.error.Error:
            pytest.skip("this Gymnasium has no Taxi-v4")
        ours = classic.taxi_table(which == "taxi")
    theirs = env.unwrapped
    a, b = _entries(ours.P), _entries(theirs.P)
    assert a.keys() == b.keys()
    for key in a:  # 1e-15: another Gymnasium version may round 1/3 otherwise
        assert [x[1:] for x in a[key]] == [x[1:] for x in b[key]], key
        assert np.allclose([x[0] for x in a[key]], [x[0] for x in b[key]], rtol=0,
                           atol=1e-15), key
    assert np.allclose(ours.initial_state_distrib, theirs.initial_state_distrib,
                       rtol=0, atol=1e-15)
    if which in INSTANCES:
        m = INSTANCES[which].build()
        ref = TabularCMDP.from_gymnasium(env, gamma=m.gamma)
        assert np.allclose(np.asarray(m.P), np.asarray(ref.P), rtol=0, atol=1e-15)
        assert np.array_equal(np.asarray(m.terminal), np.asarray(ref.terminal))
        if which != "frozenlake-4x4" and which != "frozenlake-8x8":
            # FrozenLake's reward is also paid off the nominal support (1 for entering
            # the goal on any transition): the same expected reward on the support
            assert np.allclose(np.asarray(m.R), np.asarray(ref.R), rtol=0, atol=1e-12)
        assert np.allclose(np.asarray(m.r), np.asarray(ref.r), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- variants
def test_every_instance_states_its_variant():
    for inst in INSTANCES.values():
        assert len(inst.variant) > 40, inst.name


def test_riverswim_is_osband_et_al_with_strehl_and_littmans_interior():
    """Osband, Russo and Van Roy (2013)'s RiverSwim: the left bank moves up with 0.6 and
    stays with 0.4 (not 0.4 / 0.6), the right end stays with 0.6 and falls back with
    0.4; the interior is Strehl and Littman (2008)'s figure 1: 0.35 / 0.6 / 0.05; the
    rewards 5/1000 and 1."""
    for name, n in (("riverswim-6", 6), ("riverswim-20", 20)):
        m = INSTANCES[name].build()
        P, r = np.asarray(m.P), np.asarray(m.r)
        assert (P[0, 1, 1], P[0, 1, 0]) == (0.6, 0.4)
        assert (P[n - 1, 1, n - 1], P[n - 1, 1, n - 2]) == (0.6, 0.4)
        for s in range(1, n - 1):
            assert (P[s, 1, s + 1], P[s, 1, s], P[s, 1, s - 1]) == (0.35, 0.6, 0.05)
        assert all(P[s, 0, max(s - 1, 0)] == 1.0 for s in range(n))
        assert r[0, 0] == 0.005 and r[n - 1, 1] == 1.0 and np.count_nonzero(r) == 2
        assert m.gamma == 0.95 and np.asarray(m.p0)[0] == 1.0


#: Delage and Mannor (2010)'s machine replacement as the reference table of Petrik's
#: MDPs.jl ("Machine", 10 states: 1 = R1, 2 = R2, 3 to 10 working, 10 worn out): per
#: (state, action) the (next state, probability, reward) triples.
_MACHINE_REFERENCE = {
    (1, 1): [(1, 0.2, -2.0), (3, 0.8, 0.0)], (2, 1): [(2, 1.0, -10.0)],
    **{(s, 1): [(s, 0.2, 0.0), (s + 1, 0.8, 0.0)] for s in range(3, 9)},
    (9, 1): [(9, 0.2, 0.0), (10, 0.8, -20.0)], (10, 1): [(10, 1.0, -20.0)],
    (1, 2): [(1, 1.0, -2.0)], (2, 2): [(1, 0.6, -2.0), (2, 0.4, -10.0)],
    **{(s, 2): [(s + 1, 0.3, 0.0), (1, 0.6, 0.0), (2, 0.1, 0.0)] for s in range(3, 9)},
    (9, 2): [(10, 0.3, -20.0), (1, 0.6, 0.0), (2, 0.1, 0.0)],
    (10, 2): [(10, 0.3, -20.0), (1, 0.6, -2.0), (2, 0.1, -10.0)],
}


def test_machine_replacement_is_delage_and_mannors_with_costs_on_the_current_state():
    """The transitions of the reference table exactly (its state 1 = R1 is our 8, 2 = R2
    our 9, 3 to 10 our 0 to 7); the costs 20, 2, 10 of Delage and Mannor, charged here
    on the current state (r(s, a) = -cost(s)), where the reference charges a cost on
    entering the state: every reward of the reference is 0 or minus the cost of a state
    entered, and charging -cost(s') on every transition of our table gives, by one step
    of timing, V_entry = (V_current + cost(s0)) / gamma from the start (checked for the
    robust optimum's policy)."""
    m = INSTANCES["machine-10"].build()
    P, r = np.asarray(m.P), np.asarray(m.r)
    ours = {1: 8, 2: 9, **{s: s - 3 for s in range(3, 11)}}
    cost = np.array([0, 0, 0, 0, 0, 0, 0, 20.0, 2.0, 10.0])
    for (s, a), triples in _MACHINE_REFERENCE.items():
        row = np.zeros(10)
        for t, p, rew in triples:
            row[ours[t]] += p
            assert rew in (0.0, -cost[ours[t]])  # the reference: on entry, or nothing
        assert np.allclose(P[ours[s], a - 1], row, rtol=0, atol=1e-15), (s, a)
        assert r[ours[s], a - 1] == -cost[ours[s]]
    # the two timings differ by one step: on-entry values from on-current ones
    from rcmdp_exact.core.evaluation import evaluate

    pi = np.tile([1.0, 0.0], (10, 1))
    pi[7] = [0.0, 1.0]  # repair the worn-out machine
    current = evaluate(m, pi)["value"]
    entry = evaluate(m.replace(R=np.broadcast_to(-cost[None, None, :], (10, 2, 10))),
                     pi)["value"]
    assert entry == pytest.approx((current + cost[0]) / m.gamma, rel=1e-12)


def test_cliffwalking_is_the_slippery_variant_with_gymnasiums_rewards():
    """Each move reaches the intended cell and the two perpendicular ones with 1/3 each
    (a cliff cell sends the agent back to the start with -100); the edge cells are the
    cost; the goal ends the episode."""
    m = INSTANCES["cliffwalking"].build()
    P, R, C = np.asarray(m.P), np.asarray(m.R), np.asarray(m.C)[..., 0]
    # from (2, 5) = 29, "right" (1): right to 30, up to 17, down into the cliff -> 36
    assert (P[29, 1, 30], P[29, 1, 17], P[29, 1, 36]) == pytest.approx((1 / 3,) * 3)
    assert R[29, 1, 36] == -100.0 and R[29, 1, 30] == -1.0
    # "up" (0) from 29: up, left, right, never down
    assert (P[29, 0, 17], P[29, 0, 28], P[29, 0, 30], P[29, 0, 36]) == \
        pytest.approx((1 / 3, 1 / 3, 1 / 3, 0.0))
    assert C[29, 0, 30] == 1.0 and C[29, 0, 17] == 0.0 and C[29, 1, 36] == 0.0
    assert np.asarray(m.terminal)[47] and np.asarray(m.p0)[36] == 1.0
    assert m.horizon == 100


def test_frozenlake_and_taxi_are_the_slippery_and_rainy_variants():
    m = INSTANCES["frozenlake-4x4"].build()
    P = np.asarray(m.P)
    # from 0, "down" (1): down to 4 with 1/3, left (stays) and right (1) with (1-1/3)/2
    assert P[0, 1, 4] == 1.0 / 3.0 and P[0, 1, 1] == (1.0 - 1.0 / 3.0) / 2.0
    assert P[0, 1, 0] == (1.0 - 1.0 / 3.0) / 2.0
    assert m.horizon == 100 and INSTANCES["frozenlake-8x8"].build().horizon == 100
    t = INSTANCES["taxi"].build()
    P = np.asarray(t.P)
    s = ((2 * 5 + 2) * 5 + 0) * 4 + 1  # taxi at (2, 2), passenger at R, destination G
    south = ((3 * 5 + 2) * 5 + 0) * 4 + 1
    east, west = s + 20, s - 20  # (2, 3), (2, 1): the sides of "south"
    assert (P[s, 0, south], P[s, 0, east], P[s, 0, west]) == \
        pytest.approx((0.8, 0.1, 0.1), abs=1e-15)
    assert t.horizon == 200 and np.count_nonzero(np.asarray(t.p0)) == 300

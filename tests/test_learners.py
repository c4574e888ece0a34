"""Tests of the sampled learners: contract, determinism, the compiled loop against the
numpy reference and the package's sampler, gradients against finite differences,
records, save/load, budgets, robustness facts and the command line.

Runs are short (a few to a few hundred episodes); the long measurements (speed, gaps
over 20 seeds, the adversary's radius over full runs) are in ``benchmarks/`` and
``docs/learners.md``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcmdp_exact as rx
from rcmdp_exact import InputError, OptionError
from rcmdp_exact.core.nn import MLP, softmax
from rcmdp_exact.core.sampling import rollout
from rcmdp_exact.learners import ALGORITHMS, EPISODE_RECORDS, load, train
from rcmdp_exact.learners.dynamics import seed_generators
from rcmdp_exact.theory.differences import central_difference

ROBUST = [a for a in ALGORITHMS if ALGORITHMS[a].robust]


@pytest.fixture(scope="module")
def nav1():
    model = rx.domains.paper_domain("nav1")
    est = rx.estimate(model, 100, seed=0, progress=False)
    return model, est


@pytest.fixture(scope="module")
def inventory():
    model = rx.domains.paper_domain("inventory")
    est = rx.estimate(model, 100, seed=0, progress=False)
    return model, est


def _short(model, uset, alg, **kw):
    base = dict(uset=uset, episodes=6, seed=1, progress=False, eval_every=3,
                adversary_start=2, prefit_steps=100)
    base.update(kw)
    return train(model, alg, **base)


# ----------------------------------------------------------------------- contract
def test_registry_names():
    assert tuple(ALGORITHMS) == ("pg", "cpg", "rcpg-value", "rcpg-constraint",
                                 "rcpg-lagrangian", "adversarial-rcpg")
    assert [a for a in ALGORITHMS if not ALGORITHMS[a].robust] == ["pg", "cpg"]


@pytest.mark.parametrize("kwargs, exc, fact", [
    ({"algorithm": "ppo"}, OptionError, "'ppo'"),
    ({"algorithm": "rcpg-value"}, InputError, "uset="),
    ({"episodes": 0}, InputError, "episodes"),
    ({"seed": -1}, InputError, "seed"),
    ({"critic": "oracle"}, OptionError, "critic"),
    ({"gradient": "exact", "steps": 10}, InputError, "steps"),
    ({"episodes": None}, InputError, "episodes"),
])
def test_bad_arguments(nav1, kwargs, exc, fact):
    model, _ = nav1
    kw = {"algorithm": "pg", "episodes": 2, "progress": False, **kwargs}
    alg = kw.pop("algorithm")
    with pytest.raises(exc) as info:
        train(model, alg, **kw)
    assert fact in str(info.value)
    if kwargs.get("algorithm") == "ppo":
        assert "adversarial-rcpg" in str(info.value)  # the error lists the registry


def test_robust_error_says_how(nav1):
    model, _ = nav1
    with pytest.raises(InputError) as info:
        train(model, "adversarial-rcpg", episodes=1, progress=False)
    assert "estimate" in str(info.value)


# ----------------------------------------------------------------------- determinism
@pytest.mark.parametrize("alg", list(ALGORITHMS))
def test_same_seed_same_bits(nav1, alg):
    model, est = nav1
    a = _short(model, est.uset, alg)
    b = _short(model, est.uset, alg)
    assert np.array_equal(a.policy_params, b.policy_params)
    assert a.records.keys() == b.records.keys()
    for k in a.records:
        assert np.array_equal(a.records[k], b.records[k], equal_nan=True), k
    c = _short(model, est.uset, alg, seed=2)
    assert not np.array_equal(a.policy_params, c.policy_params)


# ----------------------------------------------------------------------- compiled == numpy
@pytest.mark.parametrize("alg", list(ALGORITHMS))
@pytest.mark.parametrize("domain", ["nav1", "inventory"])
def test_compiled_loop_equals_numpy_reference(nav1, inventory, alg, domain):
    model, est = nav1 if domain == "nav1" else inventory
    kw = dict(episodes=4 if domain == "inventory" else 6)
    if alg == "cpg" and domain == "nav1":
        kw.update(multiplier_update="sgd", entropy_form="gradient", discount_weight=True,
                  schedule="step", schedule_every=2, multiplier_signal="episode")
    if alg == "adversarial-rcpg" and domain == "nav1":
        kw.update(adversary_signal="corrected", multiplier_update="sgd",
                  adversary_multiplier_signal="batch")
    a = _short(model, est.uset, alg, backend="numba", **kw)
    b = _short(model, est.uset, alg, backend="numpy", **kw)
    assert a.steps == b.steps > 0
    np.testing.assert_allclose(a.policy_params, b.policy_params, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.adversary_params, b.adversary_params, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.critic_params, b.critic_params, rtol=0, atol=1e-12)
    for k in a.records:
        x, y = a.records[k], b.records[k]
        if x.dtype.kind in "iu":
            assert np.array_equal(x, y), k
        else:
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, equal_nan=True,
                                       err_msg=k)


@pytest.mark.parametrize("domain", ["nav1", "inventory"])
@pytest.mark.parametrize("variant", [
    {"adversary_multiplier_signal": "visited"},  # the paper's rule
    {"adversary_baseline": "critic", "adversary_margin": 0.1,
     "adversary_signal": "corrected"},
    {"adversary_baseline": "critic", "adversary_form": "mixture"},
])
def test_compiled_adversary_variants_equal_numpy_reference(nav1, inventory, domain, variant):
    model, est = nav1 if domain == "nav1" else inventory
    kw = dict(episodes=4 if domain == "inventory" else 6, **variant)
    a = _short(model, est.uset, "adversarial-rcpg", backend="numba", **kw)
    b = _short(model, est.uset, "adversarial-rcpg", backend="numpy", **kw)
    assert a.steps == b.steps > 0
    for x, y in ((a.policy_params, b.policy_params), (a.adversary_params, b.adversary_params),
                 (a.critic_params, b.critic_params)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)
    assert (a.critic_params.size > 0) == (variant.get("adversary_baseline") == "critic")
    for k in a.records:
        np.testing.assert_allclose(a.records[k], b.records[k], rtol=1e-12, atol=1e-12,
                                   equal_nan=True, err_msg=k)


@pytest.mark.parametrize("domain", ["nav1", "inventory"])
def test_compiled_episodes_equal_sampling_rollout(nav1, inventory, domain):
    """With a frozen policy (step 1e-300) the loop's episodes are those of rollout."""
    from rcmdp_exact.learners import loop

    model, _ = nav1 if domain == "nav1" else inventory
    n, seed = 40, 11
    res = train(model, "pg", episodes=n, seed=seed, lr_policy=1e-300, entropy=0.0,
                eval_every=None, progress=False)
    gens = seed_generators(seed)
    theta = MLP(res.inputs.shape[1], model.n_actions, hidden=100, seed=gens[0]).get_params()
    assert np.array_equal(theta, res.policy_params)  # frozen
    table = loop.policy_table(theta, res.inputs, 100, model.n_actions)
    ep = rollout(model, table, n, seed=gens[3])
    assert np.array_equal(ep.lengths, res.records["length"])
    R, C = np.asarray(model.R), np.asarray(model.C)
    for i in range(n):
        ret = 0.0
        cost = np.zeros(model.n_constraints)
        for t in range(int(ep.lengths[i])):
            s, a, s2 = ep.states[i, t], ep.actions[i, t], ep.next_states[i, t]
            ret += R[s, a, s2]
            cost = cost + C[s, a, s2]
        assert ret == res.records["return"][i]
        assert np.array_equal(cost, res.records["cost"][i])


# ----------------------------------------------------------------------- gradients
def _mlp(F, O, seed=0):
    net = MLP(F, O, hidden=12, seed=seed, bias_scale=0.5)
    return net, net.get_params()


def test_policy_score_and_entropy_gradient_finite_differences():
    rng = np.random.default_rng(0)
    net, theta = _mlp(2, 4)
    x = rng.normal(size=2)
    fast = net.grad_log_prob(x, 2, theta)
    fd = central_difference(lambda p: np.log(net.probs(x[None], p)[0, 2]), theta,
                            max_step=net.kink_free_step(x[None], theta))
    np.testing.assert_allclose(fast, fd, rtol=1e-6, atol=1e-8)
    assert np.array_equal(net.grad_log_softmax(x[None], np.array([2]), theta)[0], fast)
    # entropy gradient on the logits: dH/dl = -p (log p + H)
    logits = rng.normal(size=5)

    def ent(lg):
        p = softmax(lg)
        return -float(p @ np.log(p))

    p = softmax(logits)
    np.testing.assert_allclose(-p * (np.log(p) + ent(logits)),
                               central_difference(ent, logits), rtol=1e-7, atol=1e-9)


def test_critic_gradient_finite_differences():
    """The loop's critic step: per-state aggregated residuals of the episode's MSE."""
    rng = np.random.default_rng(1)
    S, K, L = 6, 2, 15
    X = rng.normal(size=(S, 1))
    net, psi = _mlp(1, 1 + K, seed=3)
    states = rng.integers(0, S, size=L)
    targets = rng.normal(size=(L, 1 + K))

    def mse(p):
        pred = net.logits(X, p)[states]
        return float(((pred - targets) ** 2).mean())

    pred = net.logits(X, psi)
    G = np.zeros((S, 1 + K))
    np.add.at(G, states, 2.0 * (pred[states] - targets) / (L * (1 + K)))
    grad = net.backward(X, G, psi)
    fd = central_difference(mse, psi, max_step=net.kink_free_step(X, psi))
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)


def test_adversary_deviation_gradient_finite_differences():
    """Algorithm 2: gradient of mean(max(0, ||y - nominal||_1 - alpha)) over a batch."""
    rng = np.random.default_rng(2)
    N, O = 8, 5
    net, phi = _mlp(3, O, seed=4)
    X = rng.normal(size=(N, 3))
    nom = rng.dirichlet(np.ones(O), size=N)
    alpha = np.full(N, 0.2)

    def dev(p):
        y = net.probs(X, p)
        return float(np.maximum(0.0, np.abs(y - nom).sum(axis=1) - alpha).mean())

    y = net.probs(X, phi)
    viol = np.abs(y - nom).sum(axis=1) > alpha
    assert viol.any() and not viol.all()
    G = np.where(viol[:, None], np.sign(y - nom) / N, 0.0)
    grad = net.vjp_probs(X, G, phi)
    fd = central_difference(dev, phi, order=2, step=1e-7)
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-7)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 7), st.floats(0.0, 2.5))
def test_compiled_inner_problem_equals_worst_case_l1(seed, n, alpha):
    """The compiled row of the L1 ball (uncertainty/l1_numba) against its numpy oracle."""
    from rcmdp_exact.learners import loop
    from rcmdp_exact.uncertainty import L1Rows

    rng = np.random.default_rng(seed)
    S, A, K = n, 2, 1
    nominal = rng.dirichlet(np.ones(n), size=S * A)
    support = rng.random((S * A, n)) < 0.8
    support[np.arange(S * A), nominal.argmax(axis=1)] = True
    nominal = np.where(support, nominal, 0.0)
    nominal /= nominal.sum(axis=1, keepdims=True)
    R = rng.normal(size=(S, A, n))
    C = rng.random((S, A, n, K))
    w = rng.normal(size=n)
    al = np.full(S * A, alpha)
    terminal = np.zeros(S, dtype=bool)
    out = np.empty((S * A, n))
    rows = L1Rows(nominal=nominal, support=support, radius=al)
    loop.worst_case_rows(rows, R, C, 1.0, np.array([-0.5]), w, 0.9, terminal, out)
    z = (R - 0.5 * C[..., 0] + 0.9 * w).reshape(S * A, n)
    ref = rx.worst_case_l1(nominal, z, al, support)
    np.testing.assert_allclose((out * z).sum(axis=1), ref.value, rtol=0, atol=1e-12)
    assert (out >= -1e-15).all() and np.allclose(out.sum(axis=1), 1.0)
    assert (np.abs(out - nominal).sum(axis=1) <= al + 1e-12).all()


# ----------------------------------------------------------------------- records, I/O
def test_records_and_save_load_round_trip(nav1, tmp_path):
    model, est = nav1
    res = _short(model, est.uset, "adversarial-rcpg", true_model=model, episodes=7)
    rec = res.records
    E, K = 7, model.n_constraints
    for name in EPISODE_RECORDS:
        assert rec[name].shape[0] == E, name
    assert rec["cost"].shape == (E, K) and rec["lam"].shape == (E, K)
    assert np.array_equal(rec["episode"], np.arange(1, E + 1))
    assert np.array_equal(np.cumsum(rec["length"]), rec["steps"])
    assert list(rec["eval_episode"]) == [3, 6, 7]
    for target in ("train", "true", "worst", "learner"):
        for pol in ("stochastic", "greedy"):
            assert rec[f"eval_{target}_{pol}_cost"].shape == (3, K)
            assert rec[f"eval_{target}_{pol}_value"].shape == (3,)
    table = res.policy_table()
    assert table.shape == (model.n_states, model.n_actions)
    np.testing.assert_allclose(table.sum(axis=1), 1.0)
    ev = rx.evaluate(model, table)
    assert rec["eval_train_stochastic_value"][-1] == pytest.approx(ev.value, abs=1e-9)
    path = tmp_path / "run.npz"
    res.save(path)
    back = load(path)
    assert back.settings == res.settings and back.algorithm == res.algorithm
    assert np.array_equal(back.policy_table(), table)
    assert np.array_equal(back.adversary_params, res.adversary_params)
    assert back.records.keys() == rec.keys()
    for k in rec:
        assert np.array_equal(back.records[k], rec[k], equal_nan=True), k
    assert back.lam_adv == res.lam_adv
    with pytest.raises(InputError):
        res.save(path, force=False)
    mix = _short(model, est.uset, "adversarial-rcpg", adversary_form="mixture", episodes=3)
    mix.save(tmp_path / "mix.npz")
    again = load(tmp_path / "mix.npz")
    assert np.array_equal(again.adversary_table(), mix.adversary_table())
    # the mixture's table is (1 - e) P_hat + e softmax: inside every radius
    S, A = model.n_states, model.n_actions
    P = np.zeros((S * A, S))
    np.add.at(P, (np.arange(S * A)[:, None], mix.adversary_outcomes), mix.adversary_table())
    dist = np.abs(P - est.uset.nominal.reshape(S * A, S)).sum(axis=1)
    assert (dist <= est.uset.alpha.reshape(-1) + 1e-12).all()


def test_step_budget_is_exact(nav1):
    model, _ = nav1
    res = train(model, "cpg", episodes=None, steps=777, seed=0, eval_every=None,
                progress=False)
    assert res.steps == 777 == int(res.records["length"].sum())
    both = train(model, "cpg", episodes=3, steps=10**6, seed=0, eval_every=None,
                 progress=False)
    assert both.episodes == 3
    ref = train(model, "cpg", episodes=None, steps=777, seed=0, eval_every=None,
                progress=False, backend="numpy")
    assert np.array_equal(ref.records["length"], res.records["length"])
    np.testing.assert_allclose(ref.policy_params, res.policy_params, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------- robustness facts
@pytest.mark.parametrize("alg, kw", [(a, {}) for a in ROBUST] + [
    ("adversarial-rcpg", {"adversary_multiplier_signal": "visited"}),
    ("adversarial-rcpg", {"adversary_form": "mixture"}),
    ("adversarial-rcpg", {"gradient": "exact"}),
])
def test_reported_worst_case_never_below_the_exact_worst_case(nav1, alg, kw):
    """The learner's reported worst case (its kernel, brought into the ball for the
    adversary) is a kernel of the ball, so its value is at least the ball's exact worst
    value and its costs at most the exact worst costs, at every evaluation."""
    model, est = nav1
    base = {"episodes": 40, "eval_every": 10, "lam_adv_init": 0.0}
    if kw.get("gradient") == "exact":
        base = {"episodes": 30, "eval_every": 10, "adversary_start": 0}
    res = _short(model, est.uset, alg, **{**base, **kw})
    rec = res.records
    for pol in ("stochastic", "greedy"):
        assert (rec[f"eval_learner_{pol}_value"] >= rec[f"eval_worst_{pol}_value"] - 1e-9).all()
        assert (rec[f"eval_learner_{pol}_cost"] <= rec[f"eval_worst_{pol}_cost"] + 1e-9).all()
    if alg == "adversarial-rcpg":
        assert rec["eval_adversary_stochastic_value"].shape == (len(rec["eval_episode"]),)
        inside = rec["adv_inside"]
        if kw.get("adversary_form") == "mixture":
            assert (inside == 1.0).all()
        elif kw.get("adversary_multiplier_signal") == "visited":
            # lam_adv = 0: the paper's adversary leaves its ball; its raw kernel is
            # reported as such and can beat the exact worst case
            assert inside.min() < 1.0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 5), st.floats(0.0, 2.0))
def test_pull_inside(seed, S, radius):
    """L1Ball.pull_inside (how the adversary's kernel is brought into the ball): inside
    every radius, unchanged where already inside, on the segment to the nominal."""
    rng = np.random.default_rng(seed)
    A = 2
    nominal = rng.dirichlet(np.ones(S), size=(S, A))
    alpha = rng.uniform(0.0, radius, size=(S, A))
    uset = rx.L1Ball(nominal, alpha)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    terminal = np.zeros(S, dtype=bool)
    Q = uset.pull_inside(P, keep=terminal)
    dist = np.abs(Q - nominal).sum(axis=2)
    assert (dist <= alpha + 1e-12).all()
    np.testing.assert_allclose(Q.sum(axis=2), 1.0)
    assert (Q >= -1e-15).all()
    inside = np.abs(P - nominal).sum(axis=2) <= alpha
    np.testing.assert_array_equal(Q[inside], P[inside])
    t = (Q - nominal)[~inside].sum(axis=-1)  # parallel to P - nominal (sums are 0)
    assert np.allclose(t, 0.0)
    ratio = np.abs(Q - nominal).sum(axis=2)[~inside] / np.abs(P - nominal).sum(axis=2)[~inside]
    np.testing.assert_allclose(
        (Q - nominal)[~inside], ratio[:, None] * (P - nominal)[~inside], atol=1e-12)


def test_adversary_prefit_and_multiplier(nav1):
    """The pre-fit starts inside the ball; lam_adv grows while pairs are outside and a
    large lam_adv keeps them inside (full runs: docs/learners.md)."""
    model, est = nav1
    res = train(model, "adversarial-rcpg", uset=est.uset, episodes=150, seed=0,
                eval_every=None, progress=False)
    assert res.info["prefit_inside"] == 1.0 and res.records["adv_inside"][0] == 1.0
    rec = res.records
    outside = rec["adv_inside"] < 1.0
    assert outside.any() and rec["lam_adv"][-1] > 1.0
    firm = train(model, "adversarial-rcpg", uset=est.uset, episodes=150, seed=0,
                 eval_every=None, progress=False, lam_adv_init=500.0)
    assert firm.records["adv_inside"].mean() >= 0.95 <= firm.records["adv_inside"][-1]
    assert 0.0 <= firm.info["adv_inside_final"] <= 1.0


def test_critic_exact_and_lp_inner_run(nav1):
    model, est = nav1
    a = _short(model, est.uset, "rcpg-lagrangian", critic="exact", episodes=2,
               eval_every=None)
    assert a.critic_params.size == 0 and a.steps > 0
    small = rx.domains.garnet(5, 2, 3, seed=4).replace(horizon=15)
    uset = rx.l1_ball(small, 0.3)
    b = _short(small, uset, "rcpg-value", episodes=3, eval_every=None)
    c = _short(small, uset, "rcpg-value", episodes=3, eval_every=None, inner="lp")
    assert b.steps == c.steps
    np.testing.assert_allclose(b.policy_params, c.policy_params, atol=1e-6)


# ----------------------------------------------------------------------- exact gradients
def test_exact_gradient_mode_pg_is_infeasible_on_inventory(inventory):
    model, _ = inventory
    res = train(model, "pg", gradient="exact", entropy=0.0, episodes=300, eval_every=None,
                progress=False)
    assert res.records["eval_train_stochastic_cost"][-1, 0] > 1.5 * model.d[0]
    assert np.all(res.records["lam"] == 0.0)


def test_exact_gradient_mode_is_deterministic_and_follows_the_gradient(nav1):
    model, est = nav1
    a = train(model, "rcpg-lagrangian", uset=est.uset, gradient="exact", episodes=5,
              eval_every=None, progress=False, entropy=0.0)
    b = train(model, "rcpg-lagrangian", uset=est.uset, gradient="exact", episodes=5,
              eval_every=None, progress=False, entropy=0.0)
    assert np.array_equal(a.policy_params, b.policy_params)
    assert a.records["length"].sum() == 0


def test_compiled_adversary_episodes_equal_sampling_rollout(nav1):
    """Outcome form: a frozen policy and a frozen adversary sample rollout's episodes."""
    from rcmdp_exact.learners import loop

    model, est = nav1
    n, seed = 30, 5
    res = train(model, "adversarial-rcpg", uset=est.uset, episodes=n, seed=seed,
                lr_policy=1e-300, adversary_start=n, prefit_steps=50, eval_every=None,
                progress=False)
    S, A = model.n_states, model.n_actions
    gens = seed_generators(seed)
    table = loop.policy_table(res.policy_params, res.inputs, 100, A)
    O = res.adversary_outcomes.shape[1]
    q = loop.policy_table(res.adversary_params, res.adversary_inputs, 100, O)
    ep = rollout(model, table, n, seed=gens[3], kernel=q.reshape(S, A, O),
                 outcomes=res.adversary_outcomes.reshape(S, A, O))
    assert np.array_equal(ep.lengths, res.records["length"])
    R = np.asarray(model.R)
    for i in range(n):
        ret = 0.0
        for t in range(int(ep.lengths[i])):
            ret += R[ep.states[i, t], ep.actions[i, t], ep.next_states[i, t]]
        assert ret == res.records["return"][i]


def test_options_by_name_and_settings_passed_whole(nav1):
    """train takes every Settings field by name; a run's settings passed whole reproduce
    it bit for bit, keyword options replace single fields, an unknown name is refused
    with the valid names."""
    model, est = nav1
    a = _short(model, est.uset, "rcpg-lagrangian", entropy=2.0)
    assert a.settings.entropy == 2.0
    b = train(model, "rcpg-lagrangian", uset=est.uset, seed=1, progress=False,
              settings=a.settings)
    np.testing.assert_array_equal(a.policy_params, b.policy_params)
    np.testing.assert_array_equal(a.records["return"], b.records["return"])
    c = train(model, "rcpg-lagrangian", uset=est.uset, seed=1, progress=False,
              settings=a.settings, entropy=5.0)
    assert c.settings.entropy == 5.0
    assert not np.array_equal(a.policy_params, c.policy_params)
    with pytest.raises(InputError, match="entropi") as err:
        train(model, "pg", entropi=1.0)
    assert "entropy" in str(err.value) and "Settings" in str(err.value)


def test_saved_metadata_is_strict_json_and_reads_back(tmp_path):
    """A learner without adversary has lam_adv = NaN: the archive's JSON holds no bare
    NaN (strict parsers refuse it), and the loaded result has the NaN back."""
    import json

    def strict(text):
        def refuse(name):
            raise ValueError(f"bare {name} in JSON")
        return json.loads(text, parse_constant=refuse)

    res = train(rx.domains.inventory(), "pg", episodes=2, eval_every=1, progress=False)
    assert np.isnan(res.lam_adv)
    path = res.save(tmp_path / "run.npz")
    with np.load(path, allow_pickle=False) as f:
        strict(str(f["structure"]))
    strict(res.to_json())
    back = load(path)
    assert np.isnan(back.lam_adv) and back.settings == res.settings
    strict(res.settings.to_json())

# ----------------------------------------------------------------------- one result type
def test_train_result_is_a_result_that_round_trips_as_itself(nav1, tmp_path):
    """TrainResult is a Result (fields as keys and attributes) whose JSON form, file and
    Result.load give a TrainResult back with the same settings, arrays and records."""
    from rcmdp_exact import LoadError, Result
    from rcmdp_exact.learners import TrainResult

    model, est = nav1
    res = _short(model, est.uset, "adversarial-rcpg", episodes=3, adversary_form="mixture")
    assert isinstance(res, Result) and res["lam"] is res.lam and res.episodes == 3
    for back in (TrainResult.from_json(res.to_json()), Result.from_json(res.to_json()),
                 Result.load(res.save(tmp_path / "r")), load(tmp_path / "r")):
        assert type(back) is TrainResult and back.settings == res.settings
        assert set(back) == set(res)
        for name, value in res.items():
            if isinstance(value, np.ndarray):
                assert value.dtype == back[name].dtype, name
                assert np.array_equal(value, back[name], equal_nan=True), name
        assert back.records.keys() == res.records.keys()
        for k in res.records:
            assert np.array_equal(back.records[k], res.records[k], equal_nan=True), k
        assert np.array_equal(back.adversary_table(), res.adversary_table())
    flat = res.to_flat(arrays="drop")
    assert flat["settings.lam_init"] == res.settings.lam_init and flat["algorithm"]
    with pytest.raises(LoadError, match="TrainResult"):
        load(Result(policy=np.eye(2)).save(tmp_path / "plain.npz"))
    with pytest.raises(TypeError, match="records"):
        TrainResult(**{k: v for k, v in res.items() if k != "records"})


def test_settings_are_checked_once_and_passed_whole(nav1, monkeypatch):
    """train validates one Settings at its entrance and gives that object to every
    function after it; the former lambda_* names are refused, naming the lam_* ones."""
    from rcmdp_exact.learners import Settings, training

    model, est = nav1
    checked, given = [], []
    real_checked, real_build = Settings.checked, training.build_problem

    def counting(self, m):
        checked.append(self)
        return real_checked(self, m)

    def build(m, algo, uset, settings):
        given.append(settings)
        return real_build(m, algo, uset, settings)

    monkeypatch.setattr(Settings, "checked", counting)
    monkeypatch.setattr(training, "build_problem", build)
    res = _short(model, est.uset, "adversarial-rcpg", episodes=2, lam_init=2.0)
    assert len(checked) == 1 and len(given) == 1 and given[0] is res.settings
    assert res.settings.lam_init == 2.0 and abs(res.records["lam"][0, 0] - 2.0) < 0.1
    for former in ("lambda_init", "lambda_adv_init", "lambda_max"):
        with pytest.raises(InputError, match=former) as err:
            train(model, "pg", episodes=1, progress=False, **{former: 1.0})
        assert former.replace("lambda", "lam") in str(err.value)
        with pytest.raises(InputError, match=former):
            Settings.from_dict({"algorithm": "pg", former: 1.0})


def test_the_reference_has_the_phases_of_the_compiled_loop():
    """The compiled loop is run_chunk calling one function per phase, and the numpy
    reference (its oracle, written without it) has the same phases by name."""
    import ast
    import inspect

    from rcmdp_exact.learners import loop, reference

    phases = {"_schedule", "_policy_tables", "_critic_tables", "_worst_case_kernel",
              "_adversary_kernel", "_rollout", "_episode_cost", "_policy_step",
              "_multiplier_update", "_adversary_step", "_critic_update", "_record"}
    trees = {m: ast.parse(inspect.getsource(m)) for m in (loop, reference)}
    for module, tree in trees.items():
        defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert phases <= set(defined), (module.__name__, phases - set(defined))
        called = {n.func.id for n in ast.walk(defined["run_chunk"])
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert phases <= called, (module.__name__, phases - called)
    imports = {a.name for n in ast.walk(trees[reference]) if isinstance(n, ast.ImportFrom)
               for a in n.names} | {n.module for n in ast.walk(trees[reference])
                                    if isinstance(n, ast.ImportFrom)}
    assert "loop" not in imports and "numba" not in imports
    # no positional unpacking of the configuration: the loop reads cfg's fields by name
    src = inspect.getsource(loop)
    assert "= cfg\n" not in src and "*cfg" not in src

r"""One run of the paper's protocol as a pure function of its :class:`RunSpec`.

:func:`run_one` performs the three phases:

1. **Estimation**: the uniform random policy on the true data model P_data for the
   protocol's number of episodes (:data:`rcmdp_exact.domains.ESTIMATION_EPISODES`),
   giving the nominal model and its Hoeffding L1 ball (:func:`rcmdp_exact.estimate`).
2. **Training**: the trainer (``rcmdp_exact.learners.train`` unless another is
   injected) on the nominal model (PG and CPG: the nominal model, or P_data with
   ``train_on="data"``; the robust algorithms: the nominal model and its ball), with
   the true model for its exact evaluations.
3. **Testing**: the trained policy (greedy: argmax, ties to the lowest action; and
   stochastic: as trained) on every setting of the domain's tests, evaluated exactly
   (undiscounted T steps from the start state); with ``sampled_episodes > 0`` also the
   greedy policy by that many sampled episodes per setting (:func:`rcmdp_exact.core.sampling
   .rollout`), the paper's procedure (50).

The result is a dict of plain Python numbers (JSON-able, float64 at full precision):
``key``, ``spec``, ``info`` (phase seeds, alpha range, steps, seconds, ...), ``tests``
(one row per (test, setting, mode)) and ``curves`` (training records averaged over
consecutive blocks of episodes, :data:`_CURVE_POINTS` points per run, and the periodic
exact evaluations).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._checks import InputError
from ..core.mdp import greedy_policy
from .groundtruth import estimated, exact_test, setting_param, suite_settings
from .spec import RunSpec, canonical_json

__all__ = [ "TrainerError", "check_trainer", "run_one",]

#: Points of the per-episode training curves kept in the store (block means over
#: ``episodes // _CURVE_POINTS`` episodes: 100-episode blocks in the full protocol).
_CURVE_POINTS = 50

class TrainerError(InputError):
    """A trainer that breaks the contract of :func:`run_one` (its signature or what it
    returns); the message names the trainer and what it must do."""


#: The keyword arguments :func:`run_one` passes to a trainer (besides ``spec.extra``).
TRAINER_KEYWORDS = ("uset", "seed", "episodes", "critic", "gradient", "inner",
                    "multiplier_update", "eval_every", "true_model", "progress")
_CONTRACT = ("a trainer is called as train(model, algorithm, *, " + ", ".join(TRAINER_KEYWORDS)
             + ", **extra) and returns a TrainResult-like object with policy_table() and "
               "records")


def _name(fn) -> str:
    mod = getattr(fn, "__module__", None)
    qual = getattr(fn, "__qualname__", None) or type(fn).__name__
    return f"{mod}:{qual}" if mod else qual


def check_trainer(fn, extra=()) -> None:
    """Check that ``fn`` can be called as :func:`run_one` calls a trainer.

    Binds placeholder arguments to ``inspect.signature(fn)`` (nothing is run); raises
    :class:`TrainerError` naming the trainer and the mismatch otherwise.  A callable
    without a signature (some builtins) passes.
    """
    import inspect

    if not callable(fn):
        raise TrainerError(f"the trainer {fn!r} is not callable; {_CONTRACT}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    kwargs = dict.fromkeys(TRAINER_KEYWORDS)
    kwargs.update(dict(extra))
    try:
        sig.bind(None, "pg", **kwargs)
    except TypeError as exc:
        raise TrainerError(f"the trainer {_name(fn)} cannot be called as a trainer ({exc}); "
                           f"{_CONTRACT}") from None


def check_result(res, train, n_states: int, n_actions: int) -> np.ndarray:
    """The policy table of a trainer's result, or :class:`TrainerError` naming the type
    it returned (or the shape of its table) when it is not a TrainResult-like object."""
    table = getattr(res, "policy_table", None)
    records = getattr(res, "records", None)
    if not callable(table) or records is None or not hasattr(records, "items"):
        raise TrainerError(f"the trainer {_name(train)} returned {type(res).__name__}; a "
                           f"trainer must return a TrainResult-like object with "
                           f"policy_table() and records (a dict of arrays)")
    policy = np.asarray(table(), dtype=np.float64)
    if policy.shape != (n_states, n_actions):
        why = f"of shape {policy.shape}"
    elif not np.all(np.isfinite(policy)):
        bad = np.argwhere(~np.isfinite(policy))[0]
        why = (f"with {int(np.sum(~np.isfinite(policy)))} entries that are not finite "
               f"(first: state {bad[0]}, action {bad[1]}: {policy[tuple(bad)]})")
    elif np.any(policy < 0):
        bad = np.argwhere(policy < 0)[0]
        why = f"with a negative probability (state {bad[0]}, action {bad[1]}: " \
              f"{policy[tuple(bad)]:.6g})"
    else:
        sums = policy.sum(axis=1)
        off = np.flatnonzero(np.abs(sums - 1.0) > 1e-6)
        why = (f"whose row {off[0]} sums to {sums[off[0]]:.9g}" if off.size else None)
    if why is not None:
        raise TrainerError(f"the trainer {_name(train)} returned a policy_table() {why}; it "
                           f"must be the (S, A) = {(n_states, n_actions)} table of a "
                           f"stochastic policy (rows of probabilities summing to 1)")
    return policy


def _default_trainer(*args, **kwargs):
    """``rcmdp_exact.learners.train`` (imported on first use)."""
    from ..learners import train

    return train(*args, **kwargs)


def _float(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def curve_rows(records: dict, block: int) -> list[dict]:
    """Training records as rows ``{name, idx, episode, value}``.

    Arrays with one entry per episode (first axis E, the length of ``records["length"]``
    or of ``records["return"]``) are averaged over consecutive blocks of ``block``
    episodes (``episode`` = the block's last episode, counted from 1); a second axis
    gives names ``name[k]``.  The periodic exact evaluations (``eval_*``) are kept as
    they are, at the episodes of ``records["eval_episode"]``; other arrays with
    ``episode`` = None.
    """
    E = None
    for ref in ("length", "return"):
        if ref in records:
            E = int(np.asarray(records[ref]).shape[0])
            break
    ev_ep = records.get("eval_episode")
    ev_ep = None if ev_ep is None else [int(e) for e in np.asarray(ev_ep).ravel()]
    rows = []
    for name in sorted(records):
        arr = np.asarray(records[name])
        if arr.dtype.kind not in "biuf" or arr.ndim == 0 or arr.ndim > 2:
            continue
        arr = arr.astype(np.float64)
        cols = [(name, arr)] if arr.ndim == 1 else [
            (f"{name}[{k}]", arr[:, k]) for k in range(arr.shape[1])]
        for cname, col in cols:
            if name.startswith("eval_") and ev_ep is not None and len(ev_ep) == col.shape[0]:
                rows += [{"name": cname, "idx": i, "episode": ev_ep[i], "value": _float(v)}
                         for i, v in enumerate(col)]
            elif E is not None and col.shape[0] == E and E > 0:
                nb = -(-E // block)
                for b in range(nb):
                    seg = col[b * block:(b + 1) * block]
                    rows.append({"name": cname, "idx": b, "episode": min(E, (b + 1) * block),
                                 "value": _float(seg.mean())})
            else:
                rows += [{"name": cname, "idx": i, "episode": None, "value": _float(v)}
                         for i, v in enumerate(col)]
    return rows


def sampled_test(settings, policy, n_episodes: int, seed: int) -> dict:
    """Mean undiscounted return and cost of ``policy`` over sampled episodes per setting.

    Setting ``n`` uses the ``n``-th child of ``SeedSequence(seed)``.  Returns
    ``value`` (N,), ``cost`` (N,) (summed over constraints) and their standard errors.
    """
    from ..core.sampling import rollout

    children = np.random.SeedSequence(seed).spawn(len(settings))
    value = np.empty(len(settings))
    cost = np.empty(len(settings))
    v_se = np.empty(len(settings))
    c_se = np.empty(len(settings))
    for n, st in enumerate(settings):
        m = st.model
        ep = rollout(m, policy, n_episodes, np.random.default_rng(children[n]), progress=False)
        R = np.asarray(m.R)[ep.states, ep.actions, ep.next_states]
        C = np.asarray(m.C)[ep.states, ep.actions, ep.next_states].sum(-1)
        ret = np.where(ep.alive, R, 0.0).sum(1)
        cst = np.where(ep.alive, C, 0.0).sum(1)
        value[n], cost[n] = ret.mean(), cst.mean()
        ddof = 1 if n_episodes > 1 else 0
        v_se[n] = ret.std(ddof=ddof) / math.sqrt(n_episodes)
        c_se[n] = cst.std(ddof=ddof) / math.sqrt(n_episodes)
    return {"value": value, "cost": cost, "value_se": v_se, "cost_se": c_se}


def _test_rows(spec: RunSpec, policy: np.ndarray, seeds: dict) -> list[dict]:
    pols = np.stack([greedy_policy(policy), policy])
    rows = []
    for si, (suite, settings) in enumerate(suite_settings(spec.settings_fields()).items()):
        met = exact_test(settings, pols, spec.penalty)
        budget = met["budget"]
        for n, st in enumerate(settings):
            x = setting_param(suite, st, n)
            for m, mode in enumerate(("greedy", "stochastic")):
                rows.append({"suite": suite, "group": st.group, "setting": st.label,
                             "param": x, "mode": mode, "value": float(met["value"][n, m]),
                             "cost": float(met["cost"][n, m]), "budget": budget,
                             "penalised": float(met["penalised"][n, m])})
        if spec.sampled_episodes:
            sub = int(np.random.SeedSequence(seeds["sampled_test"], spawn_key=(si,))
                      .generate_state(1, np.uint64)[0] >> np.uint64(1))
            smp = sampled_test(settings, pols[0], spec.sampled_episodes, sub)
            for n, st in enumerate(settings):
                v, c = float(smp["value"][n]), float(smp["cost"][n])
                rows.append({"suite": suite, "group": st.group, "setting": st.label,
                             "param": setting_param(suite, st, n), "mode": "sampled",
                             "value": v, "cost": c, "budget": budget,
                             "penalised": v - spec.penalty * max(0.0, c - budget)})
    return rows


def run_one(spec: RunSpec, trainer=None) -> dict:
    """The three phases of one run (module notes); same spec, same bits.

    Parameters
    ----------
    spec : RunSpec
    trainer : callable, optional
        ``trainer(model, algorithm, *, uset, seed, episodes, critic, gradient, inner,
        multiplier_update, eval_every, true_model, progress, **extra)`` returning an
        object with ``policy_table()`` (S, A) and ``records`` (dict of arrays).
        Default: ``rcmdp_exact.learners.train``.

    Returns
    -------
    dict
        ``key``, ``spec``, ``info``, ``tests`` and ``curves`` (module notes).
    """
    from .._checks import check_type
    from .user import ensure_sources

    check_type(spec, "spec", RunSpec, "build one with RunSpec(domain, algorithm, seed)")
    train = _default_trainer if trainer is None else trainer
    ensure_sources(spec.sources)
    seeds = spec.seeds()
    t0 = time.perf_counter()
    est = estimated(canonical_json(spec.estimation_fields()))
    true = est.true
    model = true if (spec.train_on == "data" and not spec.robust) else est.nominal
    t1 = time.perf_counter()
    res = train(model, spec.algorithm, uset=est.uset if spec.robust else None,
                seed=seeds["training"], episodes=spec.episodes, critic=spec.critic,
                gradient=spec.gradient, inner=spec.inner,
                multiplier_update=spec.multiplier_update, eval_every=spec.eval_every,
                true_model=true, progress=False, **dict(spec.extra))
    t2 = time.perf_counter()
    policy = check_result(res, train, model.n_states, model.n_actions)
    records = {k: np.asarray(v) for k, v in dict(res.records).items()}
    tests = _test_rows(spec, policy, seeds)
    t3 = time.perf_counter()
    steps = int(np.sum(records["length"])) if "length" in records else None
    lam = records.get("lam")
    from .estimation import support_text

    info = {
        "seeds": seeds, "estimation_episodes": int(est.n_episodes),
        "alpha_range": est.alpha_range,
        "set_type": type(est.uset).__name__, "set_support": support_text(est.uset, true),
        "trained_on": "true" if model is true else "nominal",
        "steps": steps,
        "final_lambda": (None if lam is None or np.asarray(lam).size == 0
                         else _float(np.asarray(lam, dtype=np.float64).reshape(
                             len(lam), -1)[-1].sum())),
        "policy": policy.tolist(),
        "seconds": {"estimation": t1 - t0, "training": t2 - t1, "testing": t3 - t2},
    }
    return {"key": spec.key, "spec": spec.fields(), "info": info, "tests": tests,
            "curves": curve_rows(records, max(1, spec.episodes // _CURVE_POINTS))}

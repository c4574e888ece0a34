"""``train``: run one of the six learners and judge it exactly (see ``docs/learners.md``)."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, fields

import numpy as np

from .._checks import InputError, check_int, check_seed, check_type
from .._progress import tqdm
from ..core.model import TabularCMDP, check_model
from ..core.nn import MLP, softmax
from ..robust.engine import checked_worst_case
from .base import ALGORITHMS, Settings
from .config import (
    COUNTERS,
    STEPS,
    AdamState,
    LoopState,
    MultiplierState,
    Records,
    loop_config,
)
from .dynamics import (
    Problem,
    build_problem,
    check_learner_set,
    prefit_adversary,
    seed_generators,
)
from .records import TrainResult, eval_records, evaluate_policy

__all__ = ["adversary_table", "train"]

_CHUNK = 100  # episodes per call of the loop when no evaluation interval is given


def _check_inputs(model, algorithm, uset, true_model):
    check_type(model, "model", TabularCMDP, "build one with rcmdp_exact.domains")
    check_model(model)
    check_int(model.horizon, "model.horizon", 1,
              hint="; the learners sample episodes of T steps: build the model with a horizon")
    if model.is_sparse:
        raise InputError(f"model {model.name or ''!s} is sparse (S={model.n_states}); the "
                         f"learners need a dense model: build it with a dense P")
    settings_algo = ALGORITHMS.get(algorithm) if isinstance(algorithm, str) else None
    if settings_algo is not None and settings_algo.robust:
        if uset is None:
            raise InputError(f"algorithm {algorithm!r} is robust and needs an uncertainty "
                             f"set: pass uset=rcmdp_exact.estimate(model, n_episodes, "
                             f"seed).uset (or another sa-rectangular set)")
        from ..robust import check_robust_inputs

        check_robust_inputs(model, uset, f"training {algorithm}")
    if true_model is not None:
        check_type(true_model, "true_model", TabularCMDP, "give the model to evaluate on")
        check_model(true_model)
        same = (true_model.n_states, true_model.n_actions, true_model.n_constraints)
        if same != (model.n_states, model.n_actions, model.n_constraints):
            raise InputError(
                f"true_model has (S, A, K) = {same} but model has "
                f"{(model.n_states, model.n_actions, model.n_constraints)}; give a model of "
                f"the same domain"
            )


def _init_state(s: Settings, pb: Problem, algo, gens, info) -> LoopState:
    F = pb.Xpol.shape[1]
    theta = MLP(F, pb.A, hidden=s.hidden, seed=gens[0]).get_params()
    psi = MLP(F, 1 + pb.K, hidden=s.hidden, seed=gens[2]).get_params()
    if algo.dynamics == "adversary":
        phi, fit = prefit_adversary(pb, s, gens[1])
        info.update(fit)
    else:
        phi = MLP(pb.Xadv.shape[1], pb.n_outcomes, hidden=s.hidden, seed=gens[1]).get_params()
    lam0 = s.lam_init if algo.learn_multiplier else 0.0
    tiny = 1e-300

    def adam(params):
        return AdamState(params=params, m=np.zeros(params.size), v=np.zeros(params.size))

    def multiplier(lam):
        return MultiplierState(value=lam, log=np.log(np.maximum(lam, tiny)),
                               m=np.zeros(lam.size), v=np.zeros(lam.size))

    return LoopState(
        policy=adam(theta), critic=adam(psi), adversary=adam(phi),
        lam=multiplier(np.full(pb.K, float(lam0))),
        lam_adv=multiplier(np.array([float(s.lam_adv_init)])),
        cnt=np.zeros(len(COUNTERS), dtype=np.int64),
    )


def _policy_table(pb: Problem, s: Settings, theta) -> np.ndarray:
    net = MLP(pb.Xpol.shape[1], pb.A, hidden=s.hidden, seed=0)
    return softmax(net.logits(pb.Xpol, theta))


def _worst_kernel_from_w(pb: Problem, uset, W, w_c, w_r, inner: str) -> np.ndarray:
    """The worst-case kernel (S*A, S) of the set for the state quantity W (one batched
    call of the set's solver; terminal rows keep the model's self-loop)."""
    S, A = pb.S, pb.A
    W = np.where(pb.terminal, 0.0, W)
    z = w_r * pb.R + pb.C @ w_c + pb.gamma * W[None, None, :]
    Pk = np.array(checked_worst_case(uset, z, method=inner).p).reshape(S * A, S)
    term = np.repeat(pb.terminal, A)
    Pk[term] = pb.kprob[term]
    return Pk


def adversary_table(pb: Problem, s: Settings, phi) -> np.ndarray:
    """The adversary's outcome probabilities (S*A, O): its softmax, or with
    ``adversary_form="mixture"`` ``(1 - e) P_hat + e softmax`` with ``e = min(1, alpha/2)``
    per pair (inside the ball by construction)."""
    net = MLP(pb.Xadv.shape[1], pb.n_outcomes, hidden=s.hidden, seed=0)
    q = softmax(net.logits(pb.Xadv, phi))
    if s.adversary_form == "mixture":
        e = np.minimum(1.0, pb.rows.radius / 2.0)[:, None]
        q = (1.0 - e) * pb.kprob + e * q
    return q


def _learner_kernel(model, uset, pb, s, algo, state, critic_exact) -> np.ndarray:
    """The kernel (S*A, S) the learner trains against now (next-state form)."""
    S, A = pb.S, pb.A
    if algo.dynamics == "nominal":
        return pb.kprob
    if algo.dynamics == "adversary":
        q = adversary_table(pb, s, state.adversary.params)
        P = np.zeros((S * A, S))
        np.add.at(P, (np.arange(S * A)[:, None], pb.nxt), q)
        term = np.repeat(pb.terminal, A)
        P[term] = np.asarray(model.P).reshape(S * A, S)[term]
        return P
    w_r = 0.0 if algo.objective == "constraint" else 1.0
    w_c = -state.lam.value.copy() if algo.objective == "lagrangian" else pb.w_c0
    if critic_exact:
        from ..robust import robust_evaluate

        pi = _policy_table(pb, s, state.policy.params)
        res = robust_evaluate(model, pi, uset, algo.objective, lam=state.lam.value,
                              per_constraint=False, inner=s.inner, progress=False)
        P = np.asarray(res.P_worst).reshape(S * A, S)
        return np.ascontiguousarray(P)
    net = MLP(pb.Xpol.shape[1], 1 + pb.K, hidden=s.hidden, seed=0)
    Vc = net.logits(pb.Xpol, state.critic.params)
    W = w_r * Vc[:, 0] + Vc[:, 1:] @ w_c
    return _worst_kernel_from_w(pb, uset, W, w_c, w_r, s.inner)


def _mixture_fields(pb: Problem, s: Settings, algo) -> dict:
    """The mixture weights and nominal a result needs to rebuild a mixture adversary."""
    if algo.dynamics != "adversary" or s.adversary_form != "mixture":
        return {}
    return {"adversary_mix": np.minimum(1.0, pb.rows.radius / 2.0),
            "adversary_nominal": pb.kprob}


def _runner(backend: str, pb: Problem, state: LoopState, cfg, rng_ep, rng_batch):
    """A function ``run(n, records, kcdf) -> episodes run`` over the chosen loop."""
    if backend == "numba":
        from . import loop as compiled_loop

        run_chunk = compiled_loop.run_chunk
    else:
        from . import reference

        run_chunk = reference.run_chunk

    def run(n, rec, kcdf):
        return run_chunk(n, cfg, rng_ep, rng_batch, pb, kcdf, state, rec)
    return run


def _settings_from(algorithm, seed, settings: Settings | None, options: dict) -> Settings:
    """The :class:`Settings` of a run: ``settings`` (or the defaults) with ``algorithm``,
    ``seed`` and the keyword ``options`` replacing fields (unchecked; see
    :meth:`Settings.checked`).  An option that is not a field is an error naming the
    valid ones."""
    names = [f.name for f in fields(Settings) if f.name not in ("algorithm", "seed")]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise InputError(f"unknown training option{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; the options are the fields of "
                         f"rcmdp_exact.learners.Settings: {', '.join(names)}")
    if settings is not None:
        check_type(settings, "settings", Settings, "build one with "
                   "rcmdp_exact.learners.Settings(algorithm, ...) or pass options by name")
    base = {} if settings is None else asdict(settings)
    base.update(options, algorithm=algorithm, seed=seed if isinstance(seed, int) else None)
    return Settings(**base)


def train(model, algorithm, *, uset=None, seed=0, true_model=None, progress=None,
          settings: Settings | None = None, **options) -> TrainResult:
    r"""Train one of the six learners of :data:`ALGORITHMS` and evaluate it exactly.

    Parameters
    ----------
    model : TabularCMDP
        The training model (dense, with a horizon T): rewards, costs, budgets, discount,
        p0, terminal states, and the nominal kernel of PG and CPG.
    algorithm : str
        One of :data:`~rcmdp_exact.learners.ALGORITHMS`.
    uset : UncertaintySet, optional
        The uncertainty set of the robust algorithms (e.g. ``estimate(model, n_episodes,
        seed).uset``); required by ``rcpg-*`` and ``adversarial-rcpg``.  The compiled
        loop's worst case and the adversary need an :class:`~rcmdp_exact.L1Ball`; with
        ``critic="exact"`` (or ``inner="lp"``) the RCPG variants take any sa-rectangular
        set.
    seed : int, SeedSequence or Generator
        Same seed, same bits.
    true_model : TabularCMDP, optional
        Also evaluate on this model.
    progress : bool or None
        Progress bar (None: when standard error is a terminal).
    settings : Settings, optional
        Every choice of the run at once (for example the ``settings`` of an earlier
        :class:`TrainResult`); keyword options replace its fields.
    **options
        Any field of :class:`~rcmdp_exact.learners.Settings` by name (``episodes``,
        ``steps``, ``critic``, ``gradient``, ``inner``, ``multiplier_update``,
        ``eval_every``, ``entropy``, the learning rates, ...): its docstring and
        ``docs/learners.md`` give every option, its default and its source.  An unknown
        name is an :class:`~rcmdp_exact.InputError` that lists the valid ones.

    Returns
    -------
    TrainResult
    """
    t_start = time.perf_counter()
    _check_inputs(model, algorithm, uset, true_model)
    settings = _settings_from(algorithm, seed, settings, options).checked(model)
    check_seed(seed)
    algo = ALGORITHMS[settings.algorithm]
    if not algo.robust:
        uset = None
    else:
        check_learner_set(uset, algo, "lp" if settings.critic == "exact" else settings.inner)
    if progress is None:
        progress = sys.stderr.isatty()
    if settings.gradient == "exact":
        from .exact import train_exact

        return train_exact(model, algo, uset, settings, true_model, progress, t_start, seed)
    return _train_sampled(model, algo, uset, settings, true_model, progress, seed, t_start)


def _train_sampled(model, algo, uset, s: Settings, true_model, progress, seed, t_start):
    gens = seed_generators(seed)
    pb = build_problem(model, algo, uset, s)
    info: dict = {}
    t0 = time.perf_counter()
    state = _init_state(s, pb, algo, gens, info)
    t_prefit = info.get("prefit_seconds", 0.0)
    critic_exact = algo.dynamics == "worst-case" and s.critic == "exact"
    py_kernel = algo.dynamics == "worst-case" and (critic_exact or s.inner == "lp")
    train_critic = (algo.dynamics == "worst-case" and not critic_exact) or (
        algo.dynamics == "adversary" and s.adversary_baseline == "critic")
    cfg = loop_config(s, algo, pb.T, pb.gamma, host_kernel=py_kernel,
                      train_critic=train_critic)
    run = _runner(s.backend, pb, state, cfg, gens[3], gens[4])
    if s.backend == "numba":  # compile (or load from the cache) outside the timed loop
        run(0, Records.empty(0, pb.K), pb.kcdf)
    t_setup = time.perf_counter() - t0 - t_prefit
    max_eps = s.episodes if s.episodes is not None else math.inf
    chunk = s.eval_every or _CHUNK
    parts, evals, eval_eps = [], [], []
    t_loop = t_eval = cpu_loop = 0.0
    done = 0
    total = s.episodes if s.episodes is not None else s.steps
    unit = "episodes" if s.episodes is not None else "steps"
    uset_eval = uset

    def evaluate_now():
        table = _policy_table(pb, s, state.policy.params)
        kernel = raw = None
        if algo.robust:
            kernel = _learner_kernel(model, uset, pb, s, algo, state, critic_exact).reshape(
                pb.S, pb.A, pb.S)
        if algo.dynamics == "adversary":
            raw, kernel = kernel, uset.pull_inside(kernel, keep=pb.terminal)
        return evaluate_policy(model, table, true_model=true_model, uset=uset_eval,
                               learner_kernel=kernel, adversary_kernel=raw, inner=s.inner)

    with tqdm(total=total, desc=f"train {algo.name}", unit=unit, disable=not progress,
              leave=False) as bar:
        while done < max_eps:
            want = int(min(chunk - done % chunk, max_eps - done))
            if py_kernel:
                want = 1
            rec = Records.empty(want, pb.K)
            tl = time.perf_counter()
            cl = time.process_time()
            if py_kernel:
                kern = _learner_kernel(model, uset, pb, s, algo, state, critic_exact)
                got = run(1, rec, np.cumsum(kern, axis=1))
            else:
                got = run(want, rec, pb.kcdf)
            t_loop += time.perf_counter() - tl
            cpu_loop += time.process_time() - cl
            parts.append(rec.head(got))
            steps_before = int(state.cnt[STEPS])
            done += got
            bar.update(got if unit == "episodes" else 0)
            if unit == "steps":
                bar.n = steps_before
                bar.refresh()
            finished = got < want or done >= max_eps
            if s.eval_every and done % s.eval_every == 0 and got:
                te = time.perf_counter()
                evals.append(evaluate_now())
                eval_eps.append(done)
                t_eval += time.perf_counter() - te
            if finished:
                break
    if not eval_eps or eval_eps[-1] != done:
        te = time.perf_counter()
        evals.append(evaluate_now())
        eval_eps.append(done)
        t_eval += time.perf_counter() - te
    records = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    records["episode"] = np.arange(1, done + 1, dtype=np.int64)
    if algo.dynamics != "adversary":
        records["lam_adv"][:] = np.nan
    records.update(eval_records(evals, eval_eps, pb.K))
    info.update(episodes=done, steps=int(state.cnt[STEPS]))
    if algo.dynamics == "adversary":  # the final adversary, after the last updates
        kern = _learner_kernel(model, uset, pb, s, algo, state, False)
        dist = np.abs(kern - pb.nom_state).sum(axis=1)[pb.live]
        info.update(adv_deviation_final=float(dist.mean()),
                    adv_inside_final=float((dist <= pb.rows.radius[pb.live] + 1e-9).mean()))
    timings = {"setup": t_setup, "prefit": t_prefit, "loop": t_loop, "loop_cpu": cpu_loop,
               "evaluation": t_eval, "total": time.perf_counter() - t_start}
    adversarial = algo.dynamics == "adversary"
    return TrainResult(
        algorithm=algo.name, settings=s, inputs=pb.Xpol, hidden=s.hidden, n_actions=pb.A,
        policy_params=state.policy.params.copy(), lam=state.lam.value.copy(),
        lam_adv=float(state.lam_adv.value[0]) if adversarial else float("nan"),
        records=records,
        adversary_params=state.adversary.params.copy() if adversarial else np.zeros(0),
        adversary_inputs=pb.Xadv if adversarial else np.zeros((0, 0)),
        adversary_outcomes=pb.nxt if adversarial else np.zeros((0, 0), np.int64),
        critic_params=state.critic.params.copy() if train_critic else np.zeros(0),
        **_mixture_fields(pb, s, algo),
        timings=timings, info=info, model_name=model.name or "",
    )

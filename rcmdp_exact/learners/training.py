"""``train``: run one of the six learners and judge it exactly (see ``docs/learners.md``)."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from .._checks import InputError, check_int, check_seed, check_type
from .._progress import tqdm
from ..uncertainty import worst_case_l1
from ..model import TabularCMDP, check_model
from ..nn import MLP, softmax
from ..uncertainty import L1Ball
from .base import ALGORITHMS, Settings
from .dynamics import Problem, build_problem, prefit_adversary, seed_generators
from .records import TrainResult, eval_records, evaluate_policy, into_ball

__all__ = ["adversary_table", "train"]

_CHUNK = 100  # episodes per call of the loop when no evaluation interval is given


@dataclass
class LoopState:
    """Everything the loop updates in place (parameters, Adam moments, counters)."""

    theta: np.ndarray
    m_th: np.ndarray
    v_th: np.ndarray
    psi: np.ndarray
    m_ps: np.ndarray
    v_ps: np.ndarray
    phi: np.ndarray
    m_ph: np.ndarray
    v_ph: np.ndarray
    lam: np.ndarray
    loglam: np.ndarray
    m_lam: np.ndarray
    v_lam: np.ndarray
    lamadv: np.ndarray
    loglamadv: np.ndarray
    m_la: np.ndarray
    v_la: np.ndarray
    cnt: np.ndarray


class _Records:
    """Record arrays of one chunk of episodes."""

    def __init__(self, n: int, K: int):
        self.length = np.zeros(n, dtype=np.int64)
        self.ret = np.zeros(n)
        self.cost = np.zeros((n, K))
        self.lam = np.zeros((n, K))
        self.lamadv = np.zeros(n)
        self.dev = np.zeros(n)
        self.inside = np.zeros(n)
        self.steps = np.zeros(n, dtype=np.int64)

    def head(self, n: int) -> dict:
        return {"length": self.length[:n], "return": self.ret[:n], "cost": self.cost[:n],
                "lambda": self.lam[:n], "lambda_adv": self.lamadv[:n],
                "adv_deviation": self.dev[:n], "adv_inside": self.inside[:n],
                "steps": self.steps[:n]}


def _check_inputs(model, algorithm, ball, true_model):
    check_type(model, "model", TabularCMDP, "build one with rcmdp_exact.domains")
    check_model(model)
    check_int(model.horizon, "model.horizon", 1,
              hint="; the learners sample episodes of T steps: build the model with a horizon")
    if model.is_sparse:
        raise InputError(f"model {model.name or ''!s} is sparse (S={model.n_states}); the "
                         f"learners need a dense model: build it with a dense P")
    settings_algo = ALGORITHMS.get(algorithm) if isinstance(algorithm, str) else None
    if settings_algo is not None and settings_algo.robust:
        check_type(ball, "ball", L1Ball,
                   f"algorithm {algorithm!r} is robust and needs an uncertainty set: pass "
                   f"ball=rcmdp_exact.estimate(model, n_episodes, seed).ball")
        from ..robust import check_robust_inputs

        check_robust_inputs(model, ball)
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


def _ci_cf(s: Settings, pb: Problem, algo, dyn: int, train_critic: bool, step_budget: int):
    mult = {"adam-log": 0, "sgd": 1}[s.multiplier_update]  # "augmented": exact mode only
    sched = {"gradient": 0, "step": 1, "none": 2}[s.schedule]
    obj = {"value": 0, "constraint": 1, "lagrangian": 2, None: 0}[algo.objective]
    ci = np.array([pb.T, dyn, int(algo.learn_multiplier), mult, sched, s.schedule_every,
                   {"weight": 0, "gradient": 1}[s.entropy_form], int(s.discount_weight),
                   {"printed": 0, "corrected": 1}[s.adversary_signal], s.adversary_start,
                   s.adversary_batch, int(train_critic), obj, s.hidden, step_budget,
                   {"cost-to-go": 0, "episode": 1}[s.multiplier_signal],
                   {"visited": 0, "batch": 1, "batch-hinge": 2}[s.adversary_multiplier_signal],
                   s.multiplier_start, int(s.adversary_baseline == "critic"),
                   {"softmax": 0, "mixture": 1}[s.adversary_form]],
                  dtype=np.int64)
    cf = np.array([pb.gamma, s.lr_policy, s.lr_multiplier, s.lr_adversary,
                   s.lr_adversary_multiplier, s.lr_critic, s.entropy, s.lambda_max,
                   0.9, 0.999, 1e-8, s.adversary_margin])
    return ci, cf


def _init_state(s: Settings, pb: Problem, algo, gens, info) -> LoopState:
    F = pb.Xpol.shape[1]
    theta = MLP(F, pb.A, hidden=s.hidden, seed=gens[0]).get_params()
    psi = MLP(F, 1 + pb.K, hidden=s.hidden, seed=gens[2]).get_params()
    if algo.dynamics == "adversary":
        phi, fit = prefit_adversary(pb, s.hidden, gens[1], s.prefit_steps, s.prefit_lr)
        info.update(fit)
    else:
        phi = MLP(pb.Xadv.shape[1], pb.n_outcomes, hidden=s.hidden, seed=gens[1]).get_params()
    lam0 = s.lambda_init if algo.learn_multiplier else 0.0
    lam = np.full(pb.K, float(lam0))
    lamadv = np.array([float(s.lambda_adv_init)])
    tiny = 1e-300

    def z(n):
        return np.zeros(n)

    return LoopState(
        theta=theta, m_th=z(theta.size), v_th=z(theta.size),
        psi=psi, m_ps=z(psi.size), v_ps=z(psi.size),
        phi=phi, m_ph=z(phi.size), v_ph=z(phi.size),
        lam=lam, loglam=np.log(np.maximum(lam, tiny)), m_lam=z(pb.K), v_lam=z(pb.K),
        lamadv=lamadv, loglamadv=np.log(np.maximum(lamadv, tiny)), m_la=z(1), v_la=z(1),
        cnt=np.zeros(7, dtype=np.int64),
    )


def _policy_table(pb: Problem, s: Settings, theta) -> np.ndarray:
    net = MLP(pb.Xpol.shape[1], pb.A, hidden=s.hidden, seed=0)
    return softmax(net.logits(pb.Xpol, theta))


def _worst_kernel_from_w(pb: Problem, W, w_c, w_r, inner: str) -> np.ndarray:
    """The worst-case kernel (S*A, S) for the state quantity W (one batched call)."""
    S, A = pb.S, pb.A
    W = np.where(pb.terminal, 0.0, W)
    z = (w_r * pb.R + pb.C @ w_c + pb.gamma * W[None, None, :]).reshape(S * A, S)
    Pk = pb.nominal.copy()
    rows = np.flatnonzero(np.repeat(~pb.terminal, A))
    res = worst_case_l1(pb.nominal[rows], z[rows], pb.alpha[rows], pb.support[rows],
                        method=inner, check=False)
    Pk[rows] = res.p
    return Pk


def adversary_table(pb: Problem, s: Settings, phi) -> np.ndarray:
    """The adversary's outcome probabilities (S*A, O): its softmax, or with
    ``adversary_form="mixture"`` ``(1 - e) P_hat + e softmax`` with ``e = min(1, alpha/2)``
    per pair (inside the ball by construction)."""
    net = MLP(pb.Xadv.shape[1], pb.n_outcomes, hidden=s.hidden, seed=0)
    q = softmax(net.logits(pb.Xadv, phi))
    if s.adversary_form == "mixture":
        e = np.minimum(1.0, pb.alpha / 2.0)[:, None]
        q = (1.0 - e) * pb.kprob + e * q
    return q


def _learner_kernel(model, ball, pb, s, algo, state, critic_exact) -> np.ndarray:
    """The kernel (S*A, S) the learner trains against now (next-state form)."""
    S, A = pb.S, pb.A
    if algo.dynamics == "nominal":
        return pb.kprob
    if algo.dynamics == "adversary":
        q = adversary_table(pb, s, state.phi)
        P = np.zeros((S * A, S))
        np.add.at(P, (np.arange(S * A)[:, None], pb.nxt), q)
        term = np.repeat(pb.terminal, A)
        P[term] = np.asarray(model.P).reshape(S * A, S)[term]
        return P
    w_r = 0.0 if algo.objective == "constraint" else 1.0
    w_c = -state.lam.copy() if algo.objective == "lagrangian" else pb.w_c0
    if critic_exact:
        from ..robust import robust_evaluate

        pi = _policy_table(pb, s, state.theta)
        res = robust_evaluate(model, pi, ball, algo.objective, lam=state.lam,
                              per_constraint=False, inner=s.inner)
        P = np.asarray(res.P_worst).reshape(S * A, S)
        return np.ascontiguousarray(P)
    net = MLP(pb.Xpol.shape[1], 1 + pb.K, hidden=s.hidden, seed=0)
    Vc = net.logits(pb.Xpol, state.psi)
    W = w_r * Vc[:, 0] + Vc[:, 1:] @ w_c
    return _worst_kernel_from_w(pb, W, w_c, w_r, s.inner)


def _mixture_fields(pb: Problem, s: Settings, algo) -> dict:
    """The mixture weights and nominal a result needs to rebuild a mixture adversary."""
    if algo.dynamics != "adversary" or s.adversary_form != "mixture":
        return {}
    return {"adversary_mix": np.minimum(1.0, pb.alpha / 2.0), "adversary_nominal": pb.kprob}


def _runner(backend: str, pb: Problem, state: LoopState, ci, cf, rng_ep, rng_batch):
    """A function ``run(n, kcdf=None) -> records`` over the chosen loop."""
    if backend == "numba":
        from . import loop as compiled_loop

        def run(n, rec, kcdf):
            return compiled_loop.run_chunk(
                n, ci, cf, state.cnt, rng_ep, rng_batch,
                pb.p0cdf, pb.terminal, pb.R, pb.C, pb.d, pb.Xpol,
                pb.nxt, pb.kprob, kcdf, pb.nominal, pb.support, pb.alpha, pb.w_c0, pb.live,
                pb.Xadv, pb.nom_state,
                state.theta, state.m_th, state.v_th, state.psi, state.m_ps, state.v_ps,
                state.phi, state.m_ph, state.v_ph,
                state.lam, state.loglam, state.m_lam, state.v_lam,
                state.lamadv, state.loglamadv, state.m_la, state.v_la,
                rec.length, rec.ret, rec.cost, rec.lam, rec.lamadv, rec.dev, rec.inside,
                rec.steps)
        return run
    from . import reference

    def run_np(n, rec, kcdf):
        saved = pb.kcdf
        pb.kcdf = kcdf
        try:
            return reference.run_chunk(n, ci, cf, state.cnt, rng_ep, rng_batch, pb, state, rec)
        finally:
            pb.kcdf = saved
    return run_np


def train(model, algorithm, *, ball=None, seed=0, episodes: int | None = 5000,
          steps: int | None = None, critic: str = "learned", gradient: str = "sampled",
          inner: str = "sort", multiplier_update: str | None = None,
          eval_every: int | None = 100, true_model=None, progress=None,
          entropy: float = 5.0, entropy_form: str = "weight", lambda_init=None,
          lambda_adv_init=None, lambda_max: float = 500.0, lr_policy=None,
          lr_multiplier=None, lr_adversary=None, lr_adversary_multiplier=None,
          lr_critic: float = 1e-3, schedule: str | None = None, schedule_every: int = 500,
          adversary_start: int = 50, adversary_batch: int = 100,
          adversary_signal: str = "printed", discount_weight: bool = False,
          multiplier_signal: str = "cost-to-go",
          adversary_multiplier_signal: str = "batch-hinge", adversary_baseline: str = "none",
          adversary_margin: float | None = None, adversary_form: str = "softmax",
          prefit_steps: int = 3000,
          prefit_lr: float = 0.01, hidden: int = 100, feature_scale=None,
          feature_centre: bool | None = None, multiplier_start: int | None = None,
          penalty: float = 0.02, backend: str = "numba") -> TrainResult:
    r"""Train one of the six learners of :data:`ALGORITHMS` and evaluate it exactly.

    Parameters
    ----------
    model : TabularCMDP
        The training model (dense, with a horizon T): rewards, costs, budgets, discount,
        p0, terminal states, and the nominal kernel of PG and CPG.
    algorithm : str
        One of :data:`~rcmdp_exact.learners.ALGORITHMS`.
    ball : L1Ball, optional
        The uncertainty set of the robust algorithms (e.g. ``estimate(model, n_episodes,
        seed).ball``); required by ``rcpg-*`` and ``adversarial-rcpg``.
    seed : int, SeedSequence or Generator
        Same seed, same bits.
    episodes, steps : int or None
        Budget: stop after ``episodes`` episodes or ``steps`` environment steps,
        whichever comes first (the episode that reaches the step budget is cut there).
    critic : {"learned", "exact"}
        RCPG's worst case from the learned critic, or from the exact robust fixed
        point of the current policy (:func:`~rcmdp_exact.robust.robust_evaluate`).
    gradient : {"sampled", "exact"}
        Sampled episodes, or one exact gradient step per "episode"
        (:mod:`rcmdp_exact.learners.exact`).
    inner : {"sort", "lp"}
        Inner solver of the worst case.
    multiplier_update : {"adam-log", "sgd", "augmented"} or None
        Adam on log lambda (the reference), projected SGD on lambda (the paper), or
        (exact mode only) the augmented Lagrangian of penalty ``penalty``.  None: the
        mode's default ("adam-log" sampled, "augmented" exact).
    eval_every : int or None
        Exact evaluation every so many episodes (and at the end); None: at the end only.
    true_model : TabularCMDP, optional
        Also evaluate on this model.
    progress : bool or None
        Progress bar (None: when standard error is a terminal).
    entropy, entropy_form, lambda_init, lambda_adv_init, lambda_max, lr_*, schedule,
    schedule_every, adversary_start, adversary_batch, adversary_signal,
    discount_weight, multiplier_signal, adversary_multiplier_signal, adversary_baseline,
    adversary_margin, adversary_form, prefit_steps,
    prefit_lr, hidden, feature_scale, feature_centre, multiplier_start, penalty, backend
        See ``docs/learners.md`` (one table of every option, its default and source).

    Returns
    -------
    TrainResult
    """
    t_start = time.perf_counter()
    _check_inputs(model, algorithm, ball, true_model)
    settings = Settings(
        algorithm=algorithm, seed=seed if isinstance(seed, int) else None, episodes=episodes,
        steps=steps, critic=critic, gradient=gradient, inner=inner,
        multiplier_update=multiplier_update, eval_every=eval_every, entropy=entropy,
        entropy_form=entropy_form, lambda_init=lambda_init, lambda_adv_init=lambda_adv_init,
        lambda_max=lambda_max, lr_policy=lr_policy, lr_multiplier=lr_multiplier,
        lr_adversary=lr_adversary, lr_adversary_multiplier=lr_adversary_multiplier,
        lr_critic=lr_critic, schedule=schedule, schedule_every=schedule_every,
        adversary_start=adversary_start, adversary_batch=adversary_batch,
        adversary_signal=adversary_signal, discount_weight=discount_weight,
        multiplier_signal=multiplier_signal,
        adversary_multiplier_signal=adversary_multiplier_signal,
        adversary_baseline=adversary_baseline, adversary_margin=adversary_margin,
        adversary_form=adversary_form,
        prefit_steps=prefit_steps, prefit_lr=prefit_lr, hidden=hidden, feature_scale=feature_scale,
        feature_centre=feature_centre, multiplier_start=multiplier_start, penalty=penalty,
        backend=backend,
    ).checked(model)
    check_seed(seed)
    algo = ALGORITHMS[settings.algorithm]
    if not algo.robust:
        ball = None
    if progress is None:
        progress = sys.stderr.isatty()
    if settings.gradient == "exact":
        from .exact import train_exact

        return train_exact(model, algo, ball, settings, true_model, progress, t_start, seed)
    return _train_sampled(model, algo, ball, settings, true_model, progress, seed, t_start)


def _train_sampled(model, algo, ball, s: Settings, true_model, progress, seed, t_start):
    gens = seed_generators(seed)
    pb = build_problem(model, algo, ball, s.feature_scale, s.feature_centre)
    info: dict = {}
    t0 = time.perf_counter()
    state = _init_state(s, pb, algo, gens, info)
    t_prefit = info.get("prefit_seconds", 0.0)
    critic_exact = algo.dynamics == "worst-case" and s.critic == "exact"
    py_kernel = algo.dynamics == "worst-case" and (critic_exact or s.inner == "lp")
    dyn = {"nominal": 0, "worst-case": 1, "adversary": 2}[algo.dynamics]
    if py_kernel:
        dyn = 0
    train_critic = (algo.dynamics == "worst-case" and not critic_exact) or (
        algo.dynamics == "adversary" and s.adversary_baseline == "critic")
    ci, cf = _ci_cf(s, pb, algo, dyn, train_critic, s.steps or 0)
    run = _runner(s.backend, pb, state, ci, cf, gens[3], gens[4])
    if s.backend == "numba":  # compile (or load from the cache) outside the timed loop
        run(0, _Records(0, pb.K), pb.kcdf)
    t_setup = time.perf_counter() - t0 - t_prefit
    max_eps = s.episodes if s.episodes is not None else math.inf
    chunk = s.eval_every or _CHUNK
    parts, evals, eval_eps = [], [], []
    t_loop = t_eval = cpu_loop = 0.0
    done = 0
    total = s.episodes if s.episodes is not None else s.steps
    unit = "episodes" if s.episodes is not None else "steps"
    ball_eval = ball

    def evaluate_now():
        table = _policy_table(pb, s, state.theta)
        kernel = raw = None
        if algo.robust:
            kernel = _learner_kernel(model, ball, pb, s, algo, state, critic_exact).reshape(
                pb.S, pb.A, pb.S)
        if algo.dynamics == "adversary":
            raw, kernel = kernel, into_ball(kernel, ball, pb.terminal)
        return evaluate_policy(model, table, true_model=true_model, ball=ball_eval,
                               learner_kernel=kernel, adversary_kernel=raw, inner=s.inner)

    with tqdm(total=total, desc=f"train {algo.name}", unit=unit, disable=not progress,
              leave=False) as bar:
        while done < max_eps:
            want = int(min(chunk - done % chunk, max_eps - done))
            if py_kernel:
                want = 1
            rec = _Records(want, pb.K)
            tl = time.perf_counter()
            cl = time.process_time()
            if py_kernel:
                kern = _learner_kernel(model, ball, pb, s, algo, state, critic_exact)
                got = run(1, rec, np.cumsum(kern, axis=1))
            else:
                got = run(want, rec, pb.kcdf)
            t_loop += time.perf_counter() - tl
            cpu_loop += time.process_time() - cl
            parts.append(rec.head(got))
            steps_before = int(state.cnt[6])
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
        records["lambda_adv"][:] = np.nan
    records.update(eval_records(evals, eval_eps, pb.K))
    info.update(episodes=done, steps=int(state.cnt[6]))
    if algo.dynamics == "adversary":  # the final adversary, after the last updates
        kern = _learner_kernel(model, ball, pb, s, algo, state, False)
        dist = np.abs(kern - pb.nom_state).sum(axis=1)[pb.live]
        info.update(adv_deviation_final=float(dist.mean()),
                    adv_inside_final=float((dist <= pb.alpha[pb.live] + 1e-9).mean()))
    timings = {"setup": t_setup, "prefit": t_prefit, "loop": t_loop, "loop_cpu": cpu_loop,
               "evaluation": t_eval, "total": time.perf_counter() - t_start}
    return TrainResult(
        algorithm=algo.name, settings=s, inputs=pb.Xpol, hidden=s.hidden, n_actions=pb.A,
        policy_params=state.theta.copy(), lam=state.lam.copy(),
        lambda_adv=float(state.lamadv[0]) if algo.dynamics == "adversary" else float("nan"),
        records=records,
        adversary_params=state.phi.copy() if algo.dynamics == "adversary" else np.zeros(0),
        adversary_inputs=pb.Xadv if algo.dynamics == "adversary" else np.zeros((0, 0)),
        adversary_outcomes=pb.nxt if algo.dynamics == "adversary" else np.zeros((0, 0),
                                                                                 np.int64),
        critic_params=state.psi.copy() if train_critic else np.zeros(0),
        **_mixture_fields(pb, s, algo),
        timings=timings, info=info, model_name=model.name or "",
    )

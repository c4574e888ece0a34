r"""Exact-gradient mode: every episode replaced by one exact gradient step.

The noise-free limit of each learner (``train(..., gradient="exact")``).  Iteration n:

1. the dynamics of the algorithm at the current parameters: the model's kernel (PG,
   CPG), the exact worst case of the current policy on the ball (RCPG variants: the
   kernel :math:`P^+` of the robust fixed point of
   :func:`~rcmdp_exact.robust.robust_evaluate` for the algorithm's objective; no
   critic), or the adversary's kernel;
2. the policy takes one Adam ascent step on the exact Lagrangian gradient under those
   dynamics (:func:`rcmdp_exact.gradients.policy_gradient`, Theorem 1) plus
   ``entropy`` times :math:`\sum_s d_\gamma(s) \nabla H(\pi(\cdot \mid s))`;
3. the multipliers take one step on :math:`C(p_0) - d` (exact, same dynamics);
4. the adversary (after ``adversary_start`` iterations) one Adam descent step on the
   exact gradient of the Lagrangian with respect to its outcome probabilities
   (Theorem 2, corrected form: :math:`d_\gamma(s)\pi(a|s)[R_\lambda + \gamma
   V_\lambda(s')]`) plus :math:`\lambda_{adv}` times the gradient of the mean hinge
   deviation over all non-terminal pairs; :math:`\lambda_{adv}` one step on the
   occupancy-weighted mean of :math:`\|\pi_{adv} - \hat P\|_1 - \alpha`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._progress import tqdm
from ..evaluation import evaluate
from ..gradients import policy_gradient
from ..nn import MLP, Adam, softmax
from ..parametrisations import MLPPolicy
from .dynamics import build_problem, prefit_adversary, seed_generators
from .records import TrainResult, eval_records, evaluate_policy

__all__ = ["train_exact"]


def _multiplier(lam, loglam, opt, diff, lr, sched_grad, mode, lam_max):
    if mode == "adam-log":
        loglam[:] = opt.step(loglam, -diff * sched_grad, lr=lr)
        np.minimum(loglam, math.log(lam_max), out=loglam)
        lam[:] = np.minimum(np.exp(loglam), lam_max)
    else:
        lam[:] = np.clip(lam + lr * sched_grad * diff, 0.0, lam_max)


def train_exact(model, algo, ball, s, true_model, progress, t_start, seed=0) -> TrainResult:
    """Run ``s.episodes`` exact gradient steps of ``algo`` (validated inputs)."""
    from ..robust import robust_evaluate

    gens = seed_generators(seed)
    pb = build_problem(model, algo, ball, s.feature_scale)
    S, A, K = pb.S, pb.A, pb.K
    F = pb.Xpol.shape[1]
    pol = MLPPolicy(model, hidden=s.hidden, feature_scale=s.feature_scale)
    theta = MLP(F, A, hidden=s.hidden, seed=gens[0]).get_params()
    info: dict = {}
    adversarial = algo.dynamics == "adversary"
    if adversarial:
        phi, fit = prefit_adversary(pb, s.hidden, gens[1], s.prefit_steps, s.prefit_lr)
        info.update(fit)
        adv = MLP(pb.Xadv.shape[1], pb.n_outcomes, hidden=s.hidden, seed=0)
        opt_ph = Adam(phi.size, lr=s.lr_adversary)
    lam = np.full(K, float(s.lambda_init if algo.learn_multiplier else 0.0))
    loglam = np.log(np.maximum(lam, 1e-300))
    lamadv = np.array([float(s.lambda_adv_init)])
    loglamadv = np.log(np.maximum(lamadv, 1e-300))
    opt_th = Adam(theta.size, lr=s.lr_policy)
    opt_lam = Adam(K, lr=s.lr_multiplier)
    opt_la = Adam(1, lr=s.lr_adversary_multiplier)
    live = pb.live
    P_model = np.asarray(model.P)
    term_rows = np.repeat(pb.terminal, A)
    R_lam_base = np.asarray(model.R)
    n = s.episodes
    rec = {"length": np.zeros(n, np.int64), "steps": np.zeros(n, np.int64),
           "return": np.zeros(n), "cost": np.zeros((n, K)), "lambda": np.zeros((n, K)),
           "lambda_adv": np.full(n, np.nan), "adv_deviation": np.full(n, np.nan),
           "adv_inside": np.full(n, np.nan)}
    evals, eval_eps = [], []
    t_eval = 0.0

    def adversary_kernel(q):
        P = np.zeros((S * A, S))
        np.add.at(P, (np.arange(S * A)[:, None], pb.nxt), q)
        P[term_rows] = P_model.reshape(S * A, S)[term_rows]
        return P.reshape(S, A, S)

    def kernel(pi):
        if algo.dynamics == "nominal":
            return P_model
        if adversarial:
            return adversary_kernel(softmax(adv.logits(pb.Xadv, phi)))
        res = robust_evaluate(model, pi, ball, algo.objective, lam=lam, per_constraint=False,
                              inner=s.inner)
        return np.asarray(res.P_worst)

    t_loop0 = time.perf_counter()
    for it in tqdm(range(n), desc=f"exact {algo.name}", disable=not progress, leave=False):
        n_ep = it + 1
        sched = 1.0 if s.schedule == "none" else 1.0 / (1.0 + n_ep // s.schedule_every)
        sched_grad = sched if s.schedule == "gradient" else 1.0
        sched_step = sched if s.schedule == "step" else 1.0
        pi = pol.probs(theta)
        P = kernel(pi)
        dyn = model.with_transitions(P, check=False)
        ev = evaluate(dyn, pi, lam, check=False)
        grad = policy_gradient(dyn, theta, lam, parametrisation=pol)
        if s.entropy > 0:
            with np.errstate(divide="ignore", invalid="ignore"):
                dH = -(np.where(pi > 0, np.log(pi), 0.0) + 1.0)
            G = ev.occupancy[:, None] * dH
            G[pb.terminal] = 0.0
            grad = grad + s.entropy * pol.vjp(theta, G)
        theta = opt_th.step(theta, -sched_grad * grad, lr=s.lr_policy * sched_step)
        if algo.learn_multiplier:
            _multiplier(lam, loglam, opt_lam, np.asarray(ev.cost) - pb.d,
                        s.lr_multiplier * sched_step, sched_grad, s.multiplier_update,
                        s.lambda_max)
        if adversarial:
            q = softmax(adv.logits(pb.Xadv, phi))
            merged = adversary_kernel(q).reshape(S * A, S)
            dist = np.abs(merged - pb.nom_state).sum(axis=1)[live]
            rec["adv_deviation"][it] = dist.mean()
            rec["adv_inside"][it] = (dist <= pb.alpha[live] + 1e-9).mean()
            if n_ep > s.adversary_start:
                R_lam = R_lam_base - np.asarray(model.C) @ ev.lam
                out = pb.nxt.reshape(S, A, pb.n_outcomes)
                U = np.take_along_axis(R_lam, out, axis=2) + pb.gamma * ev.lagrangian[out]
                Gq = (ev.occupancy[:, None, None] * pi[:, :, None] * U).reshape(S * A, -1)
                Gq[term_rows] = 0.0
                gap = merged - pb.nom_state
                devo = np.abs(gap).sum(axis=1)
                viol = np.zeros(S * A, dtype=bool)
                viol[live] = devo[live] > pb.alpha[live]
                sign = np.sign(np.take_along_axis(gap, pb.nxt, axis=1))
                Gd = np.where(viol[:, None], sign / max(live.size, 1), 0.0)
                gphi = adv.vjp_probs(pb.Xadv, Gq + lamadv[0] * Gd, phi)
                phi = opt_ph.step(phi, sched_grad * gphi, lr=s.lr_adversary * sched_step)
                if s.adversary_multiplier_signal == "batch":
                    w = np.ones(live.size)
                else:
                    w = (ev.occupancy[:, None] * pi).reshape(S * A)[live]
                excess = float(w @ (devo[live] - pb.alpha[live]) / max(w.sum(), 1e-300))
                _multiplier(lamadv, loglamadv, opt_la, np.array([excess]),
                            s.lr_adversary_multiplier * sched_step, sched_grad,
                            s.multiplier_update, s.lambda_max)
            rec["lambda_adv"][it] = lamadv[0]
        rec["return"][it] = ev.value
        rec["cost"][it] = ev.cost
        rec["lambda"][it] = lam
        if (s.eval_every and n_ep % s.eval_every == 0) or n_ep == n:
            te = time.perf_counter()
            table = pol.probs(theta)
            learner = kernel(table) if algo.robust else None
            evals.append(evaluate_policy(model, table, true_model=true_model, ball=ball,
                                         learner_kernel=learner, inner=s.inner))
            eval_eps.append(n_ep)
            t_eval += time.perf_counter() - te
    t_loop = time.perf_counter() - t_loop0 - t_eval
    rec["episode"] = np.arange(1, n + 1, dtype=np.int64)
    rec.update(eval_records(evals, eval_eps, K))
    info.update(episodes=n, steps=0)
    timings = {"setup": 0.0, "prefit": info.get("prefit_seconds", 0.0), "loop": t_loop,
               "evaluation": t_eval, "total": time.perf_counter() - t_start}
    return TrainResult(
        algorithm=algo.name, settings=s, inputs=pb.Xpol, hidden=s.hidden, n_actions=A,
        policy_params=theta, lam=lam.copy(),
        lambda_adv=float(lamadv[0]) if adversarial else float("nan"), records=rec,
        adversary_params=phi if adversarial else np.zeros(0),
        adversary_inputs=pb.Xadv if adversarial else np.zeros((0, 0)),
        adversary_outcomes=pb.nxt if adversarial else np.zeros((0, 0), np.int64),
        timings=timings, info=info, model_name=model.name or "",
    )

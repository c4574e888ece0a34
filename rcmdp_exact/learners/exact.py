r"""Exact-gradient mode: every episode replaced by one exact gradient step.

The noise-free limit of each learner (``train(..., gradient="exact")``): the same MLP
policy (and adversary), the same update rules, but every gradient is the exact one of
the algorithm's objective.  Iteration n:

1. the dynamics of the algorithm at the current parameters: the model's kernel (PG,
   CPG), the exact worst case of the current policy on the ball (RCPG variants: the
   kernel :math:`P^+` of the robust fixed point of
   :func:`~rcmdp_exact.robust.robust_evaluate` for the algorithm's objective; no
   critic), or the adversary's kernel;
2. exact discounted values, costs, occupancy and Q-values of the policy under those
   dynamics (:func:`dense_evaluation`: one dense solve on the non-terminal states);
3. the policy takes one Adam ascent step on the exact gradient of the Lagrangian
   :math:`V - \lambda_{eff}^\top C` (Theorem 1, the gradient of
   :func:`rcmdp_exact.theory.gradients.policy_gradient`) plus ``entropy`` times
   :math:`\sum_s d_\gamma(s) \nabla H(\pi(\cdot \mid s))`;
4. the multipliers take one step on :math:`C(p_0) - d` (after ``multiplier_start``
   iterations; until then they stay at ``lam_init``).  With
   ``multiplier_update="augmented"`` (the exact-mode default) the policy's
   :math:`\lambda_{eff} = \max(0, \lambda + \rho (C - d))` is the multiplier of the
   augmented Lagrangian :math:`V - \sum_k \psi_\rho(C_k - d_k, \lambda_k)`,
   :math:`\psi_\rho(g, \lambda) = \lambda g + \rho g^2 / 2` if :math:`\lambda + \rho g
   \ge 0` else :math:`-\lambda^2 / (2\rho)`, and :math:`\lambda` ascends
   :math:`\partial \psi_\rho / \partial \lambda = \max(g, -\lambda/\rho)`;
5. the adversary (after ``adversary_start`` iterations) one Adam descent step on the
   exact gradient of the Lagrangian with respect to its outcome probabilities
   (Theorem 2, corrected form: :math:`d_\gamma(s)\pi(a|s)[R_\lambda + \gamma
   V_\lambda(s')]`) plus :math:`\lambda_{adv}` times the gradient of the mean hinge
   deviation :math:`\max(0, \|\pi_{adv} - \hat P\|_1 - (1 - m)\alpha)` over all
   non-terminal pairs (m = ``adversary_margin``); :math:`\lambda_{adv}` one step on
   that mean hinge (``"batch-hinge"``), the mean signed excess (``"batch"``) or the
   occupancy-weighted mean excess (``"visited"``, the exact counterpart of the visited
   pair).  With ``adversary_form="mixture"`` the adversary is inside its ball by
   construction and has no penalty.

``docs/learners.md`` gives the exact-mode defaults and the measured result.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .._progress import tqdm
from ..core.evaluation import PolicySystem, policy_matrix
from ..core.nn import MLP, Adam, softmax
from .dynamics import build_problem, prefit_adversary, seed_generators
from .records import TrainResult, eval_records, evaluate_policy

__all__ = []


@dataclass
class _DenseEvaluation:
    """Exact discounted quantities of a policy under a kernel (see :func:`dense_evaluation`)."""

    v: np.ndarray
    """(S,) discounted reward-to-go (0 at terminal states)."""
    c: np.ndarray
    """(S, K) discounted costs-to-go."""
    occupancy: np.ndarray
    """(S,) discounted occupancy from p0 (0 at terminal states)."""
    q: np.ndarray
    """(S, A) discounted reward Q-values."""
    qc: np.ndarray
    """(S, A, K) discounted cost Q-values."""
    value: float
    costs: np.ndarray

    def lagrangian(self, lam) -> np.ndarray:
        """:math:`V_\\lambda = V - C \\lambda` (S,)."""
        return self.v - self.c @ lam

    def q_lagrangian(self, lam) -> np.ndarray:
        """:math:`Q_\\lambda = Q - Q_C \\lambda` (S, A)."""
        return self.q - self.qc @ lam


def dense_evaluation(P, R, C, pi, gamma: float, p0, nonterminal) -> _DenseEvaluation:
    r"""Exact values, costs, occupancy and Q-values of ``pi`` under the kernel ``P``.

    :math:`V = (I - \gamma P_\pi)^{-1} r_\pi` and :math:`d_\gamma^\top = p_0^\top (I -
    \gamma P_\pi)^{-1}` on the non-terminal states (dense LU, S is small in the
    learners' domains), :math:`Q(s, a) = \sum_{s'} P(s'|s,a) [R(s,a,s') + \gamma
    V(s')]`; the same for every cost.  Inputs are trusted (the loop's own arrays).

    Parameters
    ----------
    P, R : arrays (S, A, S)
    C : array (S, A, S, K)
    pi : array (S, A)
    gamma : float
    p0 : array (S,)
    nonterminal : bool array (S,)
    """
    r = np.einsum("sat,sat->sa", P, R)
    c = np.einsum("sat,satk->sak", P, C)
    rhs = np.column_stack([(pi * r).sum(axis=1), np.einsum("sa,sak->sk", pi, c)])
    system = PolicySystem(policy_matrix(P, pi), gamma, nonterminal)
    VC = system.solve(rhs)
    occ = system.solve(p0, transpose=True)
    nxt = P @ VC  # (S, A, 1 + K)
    q = r + gamma * nxt[:, :, 0]
    qc = c + gamma * nxt[:, :, 1:]
    return _DenseEvaluation(v=VC[:, 0], c=VC[:, 1:], occupancy=occ, q=q, qc=qc,
                           value=float(p0 @ VC[:, 0]), costs=p0 @ VC[:, 1:])


def exact_policy_gradient(net: MLP, X, theta, ev: _DenseEvaluation, lam, entropy: float = 0.0,
                          nonterminal=None, cache=None) -> np.ndarray:
    r"""Exact gradient of :math:`V_\lambda(p_0) + \beta \sum_s d_\gamma(s) H(\pi(\cdot|s))`
    (the entropy's occupancy held fixed) for the MLP policy ``net`` on inputs ``X``.

    The cotangent on the probabilities is :math:`G(s, a) = d_\gamma(s) [Q_\lambda(s, a) -
    \beta (\log \pi(a|s) + 1)]` (0 at terminal states), pulled back through the softmax
    and the network: Theorem 1, as in :func:`rcmdp_exact.theory.gradients.policy_gradient`.
    ``cache`` is ``net.forward(X, theta)`` when the caller has it.
    """
    if cache is None:
        cache = net.forward(X, theta)
    pi = softmax(cache["logits"])
    G = ev.q_lagrangian(lam)
    if entropy > 0:
        G = G - entropy * (np.log(np.where(pi > 0, pi, 1.0)) + 1.0)
    G = ev.occupancy[:, None] * G
    if nonterminal is not None:
        G[~nonterminal] = 0.0
    g = pi * (G - (pi * G).sum(axis=1, keepdims=True))
    return net.backward(X, g, theta, cache)


def _sgd(lam, step, lam_max):
    lam[:] = np.clip(lam + step, 0.0, lam_max)


def _adam_log(lam, loglam, opt, diff, lr, lam_max):
    loglam[:] = opt.step(loglam, -diff, lr=lr)
    np.minimum(loglam, math.log(lam_max), out=loglam)
    lam[:] = np.minimum(np.exp(loglam), lam_max)


def _multiplier(lam, loglam, opt, diff, lr, sched_grad, mode, lam_max, penalty):
    """One multiplier step on ``diff`` = cost - budget (see the module notes)."""
    if mode == "adam-log":
        _adam_log(lam, loglam, opt, diff * sched_grad, lr, lam_max)
    elif mode == "augmented":
        _sgd(lam, lr * sched_grad * np.maximum(diff, -lam / penalty), lam_max)
    else:
        _sgd(lam, lr * sched_grad * diff, lam_max)


def train_exact(model, algo, uset, s, true_model, progress, t_start, seed=0) -> TrainResult:
    """Run ``s.episodes`` exact gradient steps of ``algo`` (validated inputs)."""
    from ..robust import robust_evaluate

    gens = seed_generators(seed)
    pb = build_problem(model, algo, uset, s)
    S, A, K = pb.S, pb.A, pb.K
    X = pb.Xpol
    net = MLP(X.shape[1], A, hidden=s.hidden, seed=0)
    theta = MLP(X.shape[1], A, hidden=s.hidden, seed=gens[0]).get_params()
    info: dict = {}
    adversarial = algo.dynamics == "adversary"
    if adversarial:
        phi, fit = prefit_adversary(pb, s, gens[1])
        info.update(fit)
        adv = MLP(pb.Xadv.shape[1], pb.n_outcomes, hidden=s.hidden, seed=0)
        opt_ph = Adam(phi.size, lr=s.lr_adversary)
    lam = np.full(K, float(s.lam_init if algo.learn_multiplier else 0.0))
    loglam = np.log(np.maximum(lam, 1e-300))
    lamadv = np.array([float(s.lam_adv_init)])
    loglamadv = np.log(np.maximum(lamadv, 1e-300))
    opt_th = Adam(theta.size, lr=s.lr_policy)
    opt_lam = Adam(K, lr=s.lr_multiplier)
    opt_la = Adam(1, lr=s.lr_adversary_multiplier)
    adv_mode = "sgd" if s.multiplier_update == "augmented" else s.multiplier_update
    live = pb.live
    nonterminal = ~pb.terminal
    P_model = np.asarray(model.P)
    R = np.asarray(model.R)
    Cm = np.asarray(model.C)
    p0 = np.asarray(model.p0, dtype=np.float64)
    term_rows = np.repeat(pb.terminal, A)
    n = s.episodes
    rec = {"length": np.zeros(n, np.int64), "steps": np.zeros(n, np.int64),
           "return": np.zeros(n), "cost": np.zeros((n, K)), "lam": np.zeros((n, K)),
           "lam_adv": np.full(n, np.nan), "adv_deviation": np.full(n, np.nan),
           "adv_inside": np.full(n, np.nan)}
    evals, eval_eps = [], []
    t_eval = 0.0

    mix = np.minimum(1.0, pb.rows.radius / 2.0) if s.adversary_form == "mixture" else None
    shrink = 1.0 - s.adversary_margin

    def adversary_probs(ph):
        q = softmax(adv.logits(pb.Xadv, ph))
        if mix is None:
            return q
        return (1.0 - mix)[:, None] * pb.kprob + mix[:, None] * q

    def adversary_kernel(q):
        P = np.zeros((S * A, S))
        np.add.at(P, (np.arange(S * A)[:, None], pb.nxt), q)
        P[term_rows] = P_model.reshape(S * A, S)[term_rows]
        return P.reshape(S, A, S)

    def kernel(pi):
        if algo.dynamics == "nominal":
            return P_model
        if adversarial:
            return adversary_kernel(adversary_probs(phi))
        res = robust_evaluate(model, pi, uset, algo.objective, lam=lam, per_constraint=False,
                              inner=s.inner, progress=False)
        return np.asarray(res.P_worst)

    t_loop0 = time.perf_counter()
    for it in tqdm(range(n), desc=f"exact {algo.name}", disable=not progress, leave=False):
        n_ep = it + 1
        sched = 1.0 if s.schedule == "none" else 1.0 / (1.0 + n_ep // s.schedule_every)
        sched_grad = sched if s.schedule == "gradient" else 1.0
        sched_step = sched if s.schedule == "step" else 1.0
        cache = net.forward(X, theta)
        pi = softmax(cache["logits"])
        P = kernel(pi)
        ev = dense_evaluation(P, R, Cm, pi, pb.gamma, p0, nonterminal)
        excess = np.asarray(ev.costs) - pb.d
        learning = algo.learn_multiplier and n_ep > s.multiplier_start
        lam_eff = lam
        if learning and s.multiplier_update == "augmented":
            lam_eff = np.clip(lam + s.penalty * excess, 0.0, s.lam_max)
        grad = exact_policy_gradient(net, X, theta, ev, lam_eff, s.entropy, nonterminal, cache)
        theta = opt_th.step(theta, -sched_grad * grad, lr=s.lr_policy * sched_step)
        if learning:
            _multiplier(lam, loglam, opt_lam, excess, s.lr_multiplier * sched_step, sched_grad,
                        s.multiplier_update, s.lam_max, s.penalty)
        if adversarial:
            merged = adversary_kernel(adversary_probs(phi)).reshape(S * A, S)
            dist = np.abs(merged - pb.nom_state).sum(axis=1)[live]
            rec["adv_deviation"][it] = dist.mean()
            rec["adv_inside"][it] = (dist <= pb.rows.radius[live] + 1e-9).mean()
            if n_ep > s.adversary_start:
                R_lam = R - Cm @ lam_eff
                out = pb.nxt.reshape(S, A, pb.n_outcomes)
                U = np.take_along_axis(R_lam, out, axis=2) \
                    + pb.gamma * ev.lagrangian(lam_eff)[out]
                Gq = (ev.occupancy[:, None, None] * pi[:, :, None] * U).reshape(S * A, -1)
                Gq[term_rows] = 0.0
                if mix is not None:  # inside by construction: no deviation penalty
                    gphi = adv.vjp_probs(pb.Xadv, mix[:, None] * Gq, phi)
                else:
                    gap = merged - pb.nom_state
                    devo = np.abs(gap).sum(axis=1)
                    viol = np.zeros(S * A, dtype=bool)
                    viol[live] = devo[live] > shrink * pb.rows.radius[live]
                    sign = np.sign(np.take_along_axis(gap, pb.nxt, axis=1))
                    Gd = np.where(viol[:, None], sign / max(live.size, 1), 0.0)
                    gphi = adv.vjp_probs(pb.Xadv, Gq + lamadv[0] * Gd, phi)
                phi = opt_ph.step(phi, sched_grad * gphi, lr=s.lr_adversary * sched_step)
                if mix is None:
                    excess = devo[live] - shrink * pb.rows.radius[live]
                    if s.adversary_multiplier_signal == "batch-hinge":
                        adv_excess = float(np.maximum(excess, 0.0).mean())
                    elif s.adversary_multiplier_signal == "batch":
                        adv_excess = float(excess.mean())
                    else:
                        w = (ev.occupancy[:, None] * pi).reshape(S * A)[live]
                        adv_excess = float(w @ excess / max(w.sum(), 1e-300))
                    _multiplier(lamadv, loglamadv, opt_la, np.array([adv_excess]),
                                s.lr_adversary_multiplier * sched_step, sched_grad, adv_mode,
                                s.lam_max, s.penalty)
            rec["lam_adv"][it] = lamadv[0]
        rec["return"][it] = ev.value
        rec["cost"][it] = ev.costs
        rec["lam"][it] = lam
        if (s.eval_every and n_ep % s.eval_every == 0) or n_ep == n:
            te = time.perf_counter()
            table = softmax(net.logits(X, theta))
            learner = kernel(table) if algo.robust else None
            raw = None
            if adversarial:
                raw, learner = learner, uset.pull_inside(learner, keep=pb.terminal)
            evals.append(evaluate_policy(model, table, true_model=true_model, uset=uset,
                                         learner_kernel=learner, adversary_kernel=raw,
                                         inner=s.inner))
            eval_eps.append(n_ep)
            t_eval += time.perf_counter() - te
    t_loop = time.perf_counter() - t_loop0 - t_eval
    rec["episode"] = np.arange(1, n + 1, dtype=np.int64)
    rec.update(eval_records(evals, eval_eps, K))
    info.update(episodes=n, steps=0)
    timings = {"setup": 0.0, "prefit": info.get("prefit_seconds", 0.0), "loop": t_loop,
               "evaluation": t_eval, "total": time.perf_counter() - t_start}
    return TrainResult(
        algorithm=algo.name, settings=s, inputs=X, hidden=s.hidden, n_actions=A,
        policy_params=theta, lam=lam.copy(),
        lam_adv=float(lamadv[0]) if adversarial else float("nan"), records=rec,
        adversary_params=phi if adversarial else np.zeros(0),
        adversary_inputs=pb.Xadv if adversarial else np.zeros((0, 0)),
        adversary_outcomes=pb.nxt if adversarial else np.zeros((0, 0), np.int64),
        adversary_mix=mix if adversarial and mix is not None else np.zeros(0),
        adversary_nominal=pb.kprob if adversarial and mix is not None else np.zeros((0, 0)),
        timings=timings, info=info, model_name=model.name or "",
    )

"""The training loop of :mod:`rcmdp_exact.learners.loop` on the numpy MLP (the reference).

The same algorithm step for step, written with :class:`rcmdp_exact.core.nn.MLP` (forward,
backward, ``vjp_probs``), :class:`rcmdp_exact.core.nn.Adam`,
:func:`rcmdp_exact.uncertainty.worst_case_l1` and :func:`rcmdp_exact.core.sampling.draw_one`,
and nothing of the compiled module.  Its phases have the names of the compiled loop's
(:func:`_policy_tables`, :func:`_critic_tables`, :func:`_worst_case_kernel`,
:func:`_adversary_kernel`, :func:`_rollout`, the backward pass in :func:`run_chunk`
with :func:`_episode_cost`, :func:`_policy_step`, :func:`_multiplier_update` and
:func:`_adversary_step`, :func:`_critic_update`, :func:`_record`) and are written
separately: this module is the oracle of the compiled one.  ``train(...,
backend="numpy")`` runs it; the tests check that whole short runs agree with the
compiled loop to 1e-12.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..core.nn import MLP, Adam, softmax
from ..core.sampling import draw_one
from ..uncertainty import worst_case_l1
from .config import (
    ADAM_LOG,
    ADV_BATCH,
    ADV_BATCH_HINGE,
    ADVERSARY,
    ENT_GRADIENT,
    ENT_WEIGHT,
    EPISODE,
    OBJ_CONSTRAINT,
    OBJ_LAGRANGIAN,
    SCHED_GRADIENT,
    SCHED_NONE,
    SCHED_STEP,
    SIGNAL_CORRECTED,
    SIGNAL_PRINTED,
    STEPS,
    T_ADVERSARY,
    T_CRITIC,
    T_LAM,
    T_LAM_ADV,
    T_POLICY,
    WORST,
)

__all__ = ["merge", "run_chunk"]


def _adam(part, cfg) -> Adam:
    """An Adam optimiser whose moments start at those of ``part`` (an AdamState or a
    MultiplierState); :func:`run_chunk` writes them back at the end."""
    opt = Adam(part.m.size, lr=1.0, beta1=cfg.beta1, beta2=cfg.beta2, eps=cfg.eps)
    opt.m = part.m
    opt.v = part.v
    return opt


def _step(opt: Adam, params, grad, t: int, lr: float) -> np.ndarray:
    opt.t = t - 1
    return opt.step(params, grad, lr=lr)


def _multiplier(mult, opt, t, diff, lr, sched_grad, cfg):
    """One ascent step of the multipliers ``mult`` on ``diff`` (cost - budget)."""
    if cfg.multiplier_update == ADAM_LOG:
        mult.log[:] = _step(opt, mult.log, -diff * sched_grad, t, lr)
        np.minimum(mult.log, math.log(cfg.lam_max), out=mult.log)
        mult.value[:] = np.minimum(np.exp(mult.log), cfg.lam_max)
    else:
        mult.value[:] = np.clip(mult.value + lr * sched_grad * diff, 0.0, cfg.lam_max)


def merge(q, nxt, S):
    """Next-state distributions (N, S) of outcome distributions q (N, O) under nxt."""
    out = np.zeros((q.shape[0], S))
    for o in range(q.shape[1]):
        np.add.at(out, (np.arange(q.shape[0]), nxt[:, o]), q[:, o])
    return out


def _cache(cache, rows):
    return {"x": cache["x"][rows], "z": cache["z"][rows], "h": cache["h"][rows]}


def _networks(cfg, pb, st):
    """The three MLPs and the five Adam optimisers of a chunk."""
    F, Fa = pb.Xpol.shape[1], pb.Xadv.shape[1]
    return SimpleNamespace(
        pol=MLP(F, pb.A, hidden=cfg.hidden, seed=0),
        crit=MLP(F, 1 + pb.K, hidden=cfg.hidden, seed=0),
        adv=MLP(Fa, pb.n_outcomes, hidden=cfg.hidden, seed=0),
        opt_policy=_adam(st.policy, cfg), opt_critic=_adam(st.critic, cfg),
        opt_adversary=_adam(st.adversary, cfg), opt_lam=_adam(st.lam, cfg),
        opt_lam_adv=_adam(st.lam_adv, cfg),
    )


def _schedule(cfg, n_ep):
    sched = 1.0 if cfg.schedule == SCHED_NONE else 1.0 / (1.0 + n_ep // cfg.schedule_every)
    return (sched if cfg.schedule == SCHED_GRADIENT else 1.0,
            sched if cfg.schedule == SCHED_STEP else 1.0)


def _policy_tables(nets, pb, st, tb):
    tb.theta_roll = st.policy.params.copy()
    tb.cp = nets.pol.forward(pb.Xpol, tb.theta_roll)
    tb.Pp = softmax(tb.cp["logits"])
    tb.Cp = np.cumsum(tb.Pp, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tb.ent = -np.where(tb.Pp > 0, tb.Pp * np.log(tb.Pp), 0.0).sum(axis=1)


def _critic_tables(nets, pb, st, tb):
    tb.cc = nets.crit.forward(pb.Xpol, st.critic.params)
    tb.Vc = tb.cc["logits"]


def _worst_case_kernel(cfg, pb, st, tb):
    S, A = pb.S, pb.A
    w_c = pb.w_c0.copy()
    w_r = 0.0 if cfg.objective == OBJ_CONSTRAINT else 1.0
    if cfg.objective == OBJ_LAGRANGIAN:
        w_c = -st.lam.value.copy()
    W = w_r * tb.Vc[:, 0] + tb.Vc[:, 1:] @ w_c
    W[pb.terminal] = 0.0
    z = (w_r * pb.R + pb.C @ w_c + cfg.gamma * W[None, None, :]).reshape(S * A, S)
    Pk = pb.rows.nominal.copy()
    rows = np.flatnonzero(np.repeat(~pb.terminal, A))
    res = worst_case_l1(pb.rows.nominal[rows], z[rows], pb.rows.radius[rows],
                        pb.rows.support[rows], check=False, progress=False)
    Pk[rows] = res.p
    tb.Pk = Pk
    tb.kcdf = np.cumsum(Pk, axis=1)


def _adversary_kernel(cfg, nets, pb, st, tb):
    tb.phi_roll = st.adversary.params.copy()
    tb.ca = nets.adv.forward(pb.Xadv, tb.phi_roll)
    tb.Sk = softmax(tb.ca["logits"])
    mix = tb.mix
    tb.Pk = (1.0 - mix)[:, None] * pb.kprob + mix[:, None] * tb.Sk if cfg.mixture else tb.Sk
    tb.kcdf = np.cumsum(tb.Pk, axis=1)
    merged = merge(tb.Pk, pb.nxt, pb.S)
    tb.devo = np.abs(merged - pb.nom_state).sum(axis=1)
    dist = tb.devo[pb.live]
    if pb.live.size:
        return float(dist.mean()), float((dist <= pb.rows.radius[pb.live] + 1e-9).mean())
    return np.nan, np.nan


def _rollout(cfg, pb, tb, rng_ep, cnt):
    T, step_budget, A = cfg.horizon, cfg.step_budget, pb.A
    u = rng_ep.random(1 + 2 * T)
    s = draw_one(pb.p0cdf, u[0])
    ep = SimpleNamespace(st=[], ac=[], oc=[], rw=[], cs=[])
    if not pb.terminal[s]:
        for t in range(T):
            a = draw_one(tb.Cp[s], u[1 + 2 * t])
            r = s * A + a
            o = draw_one(tb.kcdf[r], u[2 + 2 * t])
            s2 = int(pb.nxt[r, o])
            ep.st.append(s)
            ep.ac.append(a)
            ep.oc.append(o)
            ep.rw.append(pb.R[s, a, s2])
            ep.cs.append(pb.C[s, a, s2].copy())
            s = s2
            if pb.terminal[s] or (step_budget > 0 and cnt[STEPS] + t + 1 >= step_budget):
                break
    ep.L = len(ep.st)
    cnt[STEPS] += ep.L
    return ep


def _policy_step(cfg, nets, pb, st, tb, s, a, lag, wt, sched_grad, sched_step, cnt):
    beta = cfg.entropy
    weight = (lag + (beta * tb.ent[s] if cfg.entropy_form == ENT_WEIGHT else 0.0)) * wt
    g = -weight * tb.Pp[s]
    g[a] += weight
    if cfg.entropy_form == ENT_GRADIENT and beta > 0:
        p = tb.Pp[s]
        with np.errstate(divide="ignore", invalid="ignore"):
            g -= np.where(p > 0, wt * beta * p * (np.log(p) + tb.ent[s]), 0.0)
    grad = nets.pol.backward(None, g[None, :], tb.theta_roll, _cache(tb.cp, [s]))
    cnt[T_POLICY] += 1
    st.policy.params[:] = _step(nets.opt_policy, st.policy.params, -sched_grad * grad,
                                int(cnt[T_POLICY]), cfg.lr_policy * sched_step)


def _multiplier_update(cfg, nets, pb, st, cost, sched_grad, sched_step, cnt):
    cnt[T_LAM] += 1
    _multiplier(st.lam, nets.opt_lam, int(cnt[T_LAM]), cost - pb.d,
                cfg.lr_multiplier * sched_step, sched_grad, cfg)


def _adversary_step(cfg, nets, pb, st, tb, s, a, o, lag, lag_next, wt, sched_grad, sched_step,
                    rng_batch, cnt):
    A, S, n_samp = pb.A, pb.S, cfg.adversary_batch
    shrink = 1.0 - cfg.adversary_margin
    lam = st.lam.value
    r = s * A + a
    signal = lag_next if cfg.adversary_signal == SIGNAL_PRINTED else lag
    if cfg.adversary_baseline:
        n2 = pb.nxt[r]
        W = np.where(pb.terminal, 0.0, tb.Vc[:, 0] - tb.Vc[:, 1:] @ lam)[n2]
        if cfg.adversary_signal == SIGNAL_CORRECTED:
            W = pb.R[s, a, n2] - pb.C[s, a, n2] @ lam + cfg.gamma * W
        signal -= float(tb.Pk[r] @ W)
    signal *= wt
    if cfg.mixture:
        fm = signal * tb.mix[r] * tb.Sk[r, o] / tb.Pk[r, o]
        ga = -fm * tb.Sk[r]
        ga[o] += fm
    else:
        ga = -signal * tb.Pk[r]
        ga[o] += signal
    grad_a = nets.adv.backward(None, ga[None, :], tb.phi_roll, _cache(tb.ca, [r]))
    dev = np.zeros(1)
    live, n_live, phi = pb.live, pb.live.size, st.adversary.params
    if not cfg.mixture:  # Algorithm 2: the deviation of a fresh batch
        ub = rng_batch.random(n_samp)
        idx = live[np.minimum((ub * n_live).astype(np.int64), n_live - 1)]
        Xb = pb.Xadv[idx]
        yb = nets.adv.probs(Xb, phi)
        gap = merge(yb, pb.nxt[idx], S) - pb.nom_state[idx]
        dev = np.abs(gap).sum(axis=1) - shrink * pb.rows.radius[idx]
        sign = np.sign(np.take_along_axis(gap, pb.nxt[idx], axis=1))
        G = np.where((dev > 0)[:, None], sign / n_samp, 0.0)
        if (dev > 0).any():
            grad_a = grad_a + st.lam_adv.value[0] * nets.adv.vjp_probs(Xb, G, phi)
    cnt[T_ADVERSARY] += 1
    phi[:] = _step(nets.opt_adversary, phi, sched_grad * grad_a, int(cnt[T_ADVERSARY]),
                   cfg.lr_adversary * sched_step)
    if not cfg.mixture:
        if cfg.adversary_multiplier_signal == ADV_BATCH:
            signal_la = float(np.sum(dev)) / n_samp
        elif cfg.adversary_multiplier_signal == ADV_BATCH_HINGE:
            signal_la = float(np.sum(np.maximum(dev, 0.0))) / n_samp
        else:
            signal_la = tb.devo[r] - shrink * pb.rows.radius[r]
        cnt[T_LAM_ADV] += 1
        _multiplier(st.lam_adv, nets.opt_lam_adv, int(cnt[T_LAM_ADV]), np.array([signal_la]),
                    cfg.lr_adversary_multiplier * sched_step, sched_grad, cfg)


def _episode_cost(cfg, ep, K):
    C0 = np.zeros(K)
    for t in range(ep.L - 1, -1, -1):
        C0 = ep.cs[t] + cfg.gamma * C0
    return C0


def _critic_update(cfg, nets, pb, st, tb, ep, cnt):
    K, L = pb.K, ep.L
    Gc = np.zeros((pb.S, 1 + K))
    scale = 2.0 / (L * (1 + K))
    for t in range(L):
        Gc[ep.st[t], 0] += scale * (tb.Vc[ep.st[t], 0] - ep.Vt[t])
        Gc[ep.st[t], 1:] += scale * (tb.Vc[ep.st[t], 1:] - ep.Ct[t])
    grad_c = nets.crit.backward(None, Gc, st.critic.params, tb.cc)
    cnt[T_CRITIC] += 1
    st.critic.params[:] = _step(nets.opt_critic, st.critic.params, grad_c, int(cnt[T_CRITIC]),
                                cfg.lr_critic)


def _record(rec, i, ep, mean_dev, inside, st, cnt):
    rec.length[i] = ep.L
    rec.ret[i] = sum(ep.rw)
    rec.cost[i] = np.sum(np.array(ep.cs).reshape(ep.L, rec.cost.shape[1]), axis=0)
    rec.lam[i] = st.lam.value
    rec.lam_adv[i] = st.lam_adv.value[0]
    rec.dev[i] = mean_dev
    rec.inside[i] = inside
    rec.steps[i] = cnt[STEPS]


def run_chunk(n_episodes, cfg, rng_ep, rng_batch, pb, kcdf_fixed, st, rec):
    """numpy version of :func:`rcmdp_exact.learners.loop.run_chunk` (the same arguments:
    ``cfg`` a :class:`~rcmdp_exact.learners.config.LoopConfig`, ``pb`` the
    :class:`~rcmdp_exact.learners.dynamics.Problem`, ``st`` the loop state, ``rec``
    the record arrays)."""
    nets = _networks(cfg, pb, st)
    cnt = st.cnt
    tb = SimpleNamespace(kcdf=kcdf_fixed.copy(), mix=np.minimum(1.0, pb.rows.radius / 2.0))
    done = 0
    for _ in range(n_episodes):
        if cfg.step_budget > 0 and cnt[STEPS] >= cfg.step_budget:
            break
        cnt[EPISODE] += 1
        n_ep = int(cnt[EPISODE])
        sched_grad, sched_step = _schedule(cfg, n_ep)
        _policy_tables(nets, pb, st, tb)
        if cfg.train_critic or cfg.dynamics == WORST:
            _critic_tables(nets, pb, st, tb)
        if cfg.dynamics == WORST:
            _worst_case_kernel(cfg, pb, st, tb)
        mean_dev = inside = np.nan
        if cfg.dynamics == ADVERSARY:
            mean_dev, inside = _adversary_kernel(cfg, nets, pb, st, tb)
        ep = _rollout(cfg, pb, tb, rng_ep, cnt)
        # the backward pass: V_t, C_t and the Lagrangian, then every step's updates
        C0 = _episode_cost(cfg, ep, pb.K)
        adv_on = cfg.dynamics == ADVERSARY and n_ep > cfg.adversary_start
        lam, L, gamma = st.lam.value, ep.L, cfg.gamma
        V = 0.0
        Cr = np.zeros(pb.K)
        ep.Vt = np.zeros(L)
        ep.Ct = np.zeros((L, pb.K))
        for t in range(L - 1, -1, -1):
            s, a = ep.st[t], ep.ac[t]
            lag_next = V - lam @ Cr
            V = ep.rw[t] + gamma * V
            Cr = ep.cs[t] + gamma * Cr
            ep.Vt[t], ep.Ct[t] = V, Cr
            lag = V - lam @ Cr
            wt = gamma ** float(t) if cfg.discount_weight else 1.0
            _policy_step(cfg, nets, pb, st, tb, s, a, lag, wt, sched_grad, sched_step, cnt)
            if cfg.learn_multiplier and n_ep > cfg.multiplier_start:
                _multiplier_update(cfg, nets, pb, st, C0 if cfg.multiplier_episode else Cr,
                                   sched_grad, sched_step, cnt)
            if adv_on:
                _adversary_step(cfg, nets, pb, st, tb, s, a, ep.oc[t], lag, lag_next, wt,
                                sched_grad, sched_step, rng_batch, cnt)
        if cfg.train_critic and ep.L > 0:
            _critic_update(cfg, nets, pb, st, tb, ep, cnt)
        _record(rec, done, ep, mean_dev, inside, st, cnt)
        done += 1
    for part, opt in ((st.policy, nets.opt_policy), (st.critic, nets.opt_critic),
                      (st.adversary, nets.opt_adversary), (st.lam, nets.opt_lam),
                      (st.lam_adv, nets.opt_lam_adv)):
        part.m[:] = opt.m
        part.v[:] = opt.v
    return done

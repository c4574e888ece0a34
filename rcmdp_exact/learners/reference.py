"""The training loop of :mod:`rcmdp_exact.learners.loop` on the numpy MLP (the reference).

The same algorithm step for step, written with :class:`rcmdp_exact.nn.MLP` (forward,
backward, ``vjp_probs``), :class:`rcmdp_exact.nn.Adam`,
:func:`rcmdp_exact.uncertainty.worst_case_l1` and :func:`rcmdp_exact.sampling.draw_one`,
and nothing of the compiled module.  ``train(..., backend="numpy")`` runs it; the tests
check that whole short runs agree with the compiled loop to 1e-12.
"""

from __future__ import annotations

import math

import numpy as np

from ..nn import MLP, Adam, softmax
from ..sampling import draw_one
from ..uncertainty import worst_case_l1
from .config import (
    ADAM_LOG,
    ADV_BATCH,
    ADV_BATCH_HINGE,
    ADVERSARY,
    ENT_GRADIENT,
    ENT_WEIGHT,
    OBJ_CONSTRAINT,
    OBJ_LAGRANGIAN,
    SCHED_GRADIENT,
    SCHED_NONE,
    SCHED_STEP,
    SIGNAL_CORRECTED,
    SIGNAL_PRINTED,
    WORST,
)

__all__ = ["merge", "run_chunk"]


def _adam(state, key: str, n: int, cfg) -> Adam:
    opt = Adam(n, lr=1.0, beta1=cfg.beta1, beta2=cfg.beta2, eps=cfg.eps)
    opt.m = getattr(state, f"m_{key}")
    opt.v = getattr(state, f"v_{key}")
    return opt


def _step(opt: Adam, params, grad, t: int, lr: float) -> np.ndarray:
    opt.t = t - 1
    return opt.step(params, grad, lr=lr)


def _multiplier(lam, loglam, opt, t, diff, lr, sched_grad, mode, lam_max):
    if mode == ADAM_LOG:
        loglam[:] = _step(opt, loglam, -diff * sched_grad, t, lr)
        np.minimum(loglam, math.log(lam_max), out=loglam)
        lam[:] = np.minimum(np.exp(loglam), lam_max)
    else:
        lam[:] = np.clip(lam + lr * sched_grad * diff, 0.0, lam_max)


def merge(q, nxt, S):
    """Next-state distributions (N, S) of outcome distributions q (N, O) under nxt."""
    out = np.zeros((q.shape[0], S))
    for o in range(q.shape[1]):
        np.add.at(out, (np.arange(q.shape[0]), nxt[:, o]), q[:, o])
    return out


def _cache(cache, rows):
    return {"x": cache["x"][rows], "z": cache["z"][rows], "h": cache["h"][rows]}


def run_chunk(n_episodes, cfg, cnt, rng_ep, rng_batch, pb, kcdf_fixed, state, rec):
    """numpy version of :func:`rcmdp_exact.learners.loop.run_chunk` (the same arguments:
    ``cfg`` a :class:`~rcmdp_exact.learners.config.LoopConfig`, ``pb`` the
    :class:`~rcmdp_exact.learners.dynamics.Problem`, ``state`` the loop state, ``rec``
    the record arrays)."""
    T, dyn, H = cfg.horizon, cfg.dynamics, cfg.hidden
    n_samp, step_budget, objective = cfg.adversary_batch, cfg.step_budget, cfg.objective
    gamma, beta, lam_max = cfg.gamma, cfg.entropy, cfg.lambda_max
    shrink = 1.0 - cfg.adversary_margin
    mixture = cfg.mixture
    mix = np.minimum(1.0, pb.rows.radius / 2.0)
    S, A, K, O = pb.S, pb.A, pb.K, pb.n_outcomes
    F = pb.Xpol.shape[1]
    Fa = pb.Xadv.shape[1]
    pol = MLP(F, A, hidden=H, seed=0)
    crit = MLP(F, 1 + K, hidden=H, seed=0)
    adv = MLP(Fa, O, hidden=H, seed=0)
    opt_th = _adam(state, "th", pol.n_params, cfg)
    opt_ps = _adam(state, "ps", state.psi.size, cfg)
    opt_ph = _adam(state, "ph", state.phi.size, cfg)
    opt_lam = _adam(state, "lam", K, cfg)
    opt_la = _adam(state, "la", 1, cfg)
    live = pb.live
    n_live = live.size
    kcdf = kcdf_fixed.copy()
    done = 0
    for _ in range(n_episodes):
        if step_budget > 0 and cnt[6] >= step_budget:
            break
        cnt[5] += 1
        n_ep = int(cnt[5])
        sched = 1.0 if cfg.schedule == SCHED_NONE else \
            1.0 / (1.0 + n_ep // cfg.schedule_every)
        sched_grad = sched if cfg.schedule == SCHED_GRADIENT else 1.0
        sched_step = sched if cfg.schedule == SCHED_STEP else 1.0
        theta_roll = state.theta.copy()
        cp = pol.forward(pb.Xpol, theta_roll)
        Pp = softmax(cp["logits"])
        Cp = np.cumsum(Pp, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.where(Pp > 0, Pp * np.log(Pp), 0.0).sum(axis=1)
        if cfg.train_critic or dyn == WORST:
            cc = crit.forward(pb.Xpol, state.psi)
            Vc = cc["logits"]
        if dyn == WORST:
            w_c = pb.w_c0.copy()
            w_r = 0.0 if objective == OBJ_CONSTRAINT else 1.0
            if objective == OBJ_LAGRANGIAN:
                w_c = -state.lam.copy()
            W = w_r * Vc[:, 0] + Vc[:, 1:] @ w_c
            W[pb.terminal] = 0.0
            z = (w_r * pb.R + pb.C @ w_c + gamma * W[None, None, :]).reshape(S * A, S)
            Pk = pb.rows.nominal.copy()
            rows = np.flatnonzero(np.repeat(~pb.terminal, A))
            res = worst_case_l1(pb.rows.nominal[rows], z[rows], pb.rows.radius[rows],
                                pb.rows.support[rows], check=False, progress=False)
            Pk[rows] = res.p
            kcdf = np.cumsum(Pk, axis=1)
        mean_dev = inside = np.nan
        if dyn == ADVERSARY:
            phi_roll = state.phi.copy()
            ca = adv.forward(pb.Xadv, phi_roll)
            Sk = softmax(ca["logits"])
            Pk = (1.0 - mix)[:, None] * pb.kprob + mix[:, None] * Sk if mixture else Sk
            kcdf = np.cumsum(Pk, axis=1)
            merged = merge(Pk, pb.nxt, S)
            devo = np.abs(merged - pb.nom_state).sum(axis=1)
            dist = devo[live]
            if n_live:
                mean_dev = float(dist.mean())
                inside = float((dist <= pb.rows.radius[live] + 1e-9).mean())

        u = rng_ep.random(1 + 2 * T)
        s = draw_one(pb.p0cdf, u[0])
        st, ac, oc, rw, cs = [], [], [], [], []
        if not pb.terminal[s]:
            for t in range(T):
                a = draw_one(Cp[s], u[1 + 2 * t])
                r = s * A + a
                o = draw_one(kcdf[r], u[2 + 2 * t])
                s2 = int(pb.nxt[r, o])
                st.append(s)
                ac.append(a)
                oc.append(o)
                rw.append(pb.R[s, a, s2])
                cs.append(pb.C[s, a, s2].copy())
                s = s2
                if pb.terminal[s] or (step_budget > 0 and cnt[6] + t + 1 >= step_budget):
                    break
        L = len(st)
        cnt[6] += L
        adv_on = dyn == ADVERSARY and n_ep > cfg.adversary_start
        C0 = np.zeros(K)
        for t in range(L - 1, -1, -1):
            C0 = cs[t] + gamma * C0
        V = 0.0
        Cr = np.zeros(K)
        Vt = np.zeros(L)
        Ct = np.zeros((L, K))
        for t in range(L - 1, -1, -1):
            s, a = st[t], ac[t]
            lag_next = V - state.lam @ Cr
            V = rw[t] + gamma * V
            Cr = cs[t] + gamma * Cr
            Vt[t], Ct[t] = V, Cr
            lag = V - state.lam @ Cr
            wt = gamma ** float(t) if cfg.discount_weight else 1.0
            weight = (lag + (beta * ent[s] if cfg.entropy_form == ENT_WEIGHT else 0.0)) * wt
            g = -weight * Pp[s]
            g[a] += weight
            if cfg.entropy_form == ENT_GRADIENT and beta > 0:
                p = Pp[s]
                with np.errstate(divide="ignore", invalid="ignore"):
                    g -= np.where(p > 0, wt * beta * p * (np.log(p) + ent[s]), 0.0)
            grad = pol.backward(None, g[None, :], theta_roll, _cache(cp, [s]))
            cnt[0] += 1
            state.theta[:] = _step(opt_th, state.theta, -sched_grad * grad, int(cnt[0]),
                                   cfg.lr_policy * sched_step)
            if cfg.learn_multiplier and n_ep > cfg.multiplier_start:
                cnt[3] += 1
                _multiplier(state.lam, state.loglam, opt_lam, int(cnt[3]),
                            (C0 if cfg.multiplier_episode else Cr) - pb.d,
                            cfg.lr_multiplier * sched_step, sched_grad, cfg.multiplier_update,
                            lam_max)
            if adv_on:
                r = s * A + a
                o = oc[t]
                signal = lag_next if cfg.adversary_signal == SIGNAL_PRINTED else lag
                if cfg.adversary_baseline:
                    n2 = pb.nxt[r]
                    W = np.where(pb.terminal, 0.0, Vc[:, 0] - Vc[:, 1:] @ state.lam)[n2]
                    if cfg.adversary_signal == SIGNAL_CORRECTED:
                        W = pb.R[s, a, n2] - pb.C[s, a, n2] @ state.lam + gamma * W
                    signal -= float(Pk[r] @ W)
                signal *= wt
                if mixture:
                    fm = signal * mix[r] * Sk[r, o] / Pk[r, o]
                    ga = -fm * Sk[r]
                    ga[o] += fm
                else:
                    ga = -signal * Pk[r]
                    ga[o] += signal
                grad_a = adv.backward(None, ga[None, :], phi_roll, _cache(ca, [r]))
                dev = np.zeros(1)
                if not mixture:
                    ub = rng_batch.random(n_samp)
                    idx = live[np.minimum((ub * n_live).astype(np.int64), n_live - 1)]
                    Xb = pb.Xadv[idx]
                    yb = adv.probs(Xb, state.phi)
                    gap = merge(yb, pb.nxt[idx], S) - pb.nom_state[idx]
                    dev = np.abs(gap).sum(axis=1) - shrink * pb.rows.radius[idx]
                    sign = np.sign(np.take_along_axis(gap, pb.nxt[idx], axis=1))
                    G = np.where((dev > 0)[:, None], sign / n_samp, 0.0)
                    if (dev > 0).any():
                        grad_a = grad_a + state.lamadv[0] * adv.vjp_probs(Xb, G, state.phi)
                cnt[1] += 1
                state.phi[:] = _step(opt_ph, state.phi, sched_grad * grad_a, int(cnt[1]),
                                     cfg.lr_adversary * sched_step)
                if not mixture:
                    if cfg.adversary_multiplier_signal == ADV_BATCH:
                        signal_la = float(np.sum(dev)) / n_samp
                    elif cfg.adversary_multiplier_signal == ADV_BATCH_HINGE:
                        signal_la = float(np.sum(np.maximum(dev, 0.0))) / n_samp
                    else:
                        signal_la = devo[r] - shrink * pb.rows.radius[r]
                    cnt[4] += 1
                    _multiplier(state.lamadv, state.loglamadv, opt_la, int(cnt[4]),
                                np.array([signal_la]), cfg.lr_adversary_multiplier * sched_step,
                                sched_grad, cfg.multiplier_update, lam_max)
        if cfg.train_critic and L > 0:
            Gc = np.zeros((S, 1 + K))
            scale = 2.0 / (L * (1 + K))
            for t in range(L):
                Gc[st[t], 0] += scale * (Vc[st[t], 0] - Vt[t])
                Gc[st[t], 1:] += scale * (Vc[st[t], 1:] - Ct[t])
            grad_c = crit.backward(None, Gc, state.psi, cc)
            cnt[2] += 1
            state.psi[:] = _step(opt_ps, state.psi, grad_c, int(cnt[2]), cfg.lr_critic)
        rec.length[done] = L
        rec.ret[done] = sum(rw)
        rec.cost[done] = np.sum(np.array(cs).reshape(L, K), axis=0)
        rec.lam[done] = state.lam
        rec.lamadv[done] = state.lamadv[0]
        rec.dev[done] = mean_dev
        rec.inside[done] = inside
        rec.steps[done] = cnt[6]
        done += 1
    for key, opt in (("th", opt_th), ("ps", opt_ps), ("ph", opt_ph), ("lam", opt_lam),
                     ("la", opt_la)):
        getattr(state, f"m_{key}")[:] = opt.m
        getattr(state, f"v_{key}")[:] = opt.v
    return done

r"""The one per-step training loop of the learners, compiled by numba.

This module imports numba at its top; :mod:`rcmdp_exact.learners` imports it only
inside :func:`~rcmdp_exact.learners.train`, so the package and the command line start
without it.  :mod:`rcmdp_exact.learners.reference` runs the same algorithm on the
numpy MLP of :mod:`rcmdp_exact.nn` (the reference the tests compare against).

One episode (``docs/learners.md`` has the maths):

1. tables at the episode's parameters: the policy :math:`\pi(\cdot \mid s)` for all S
   states, the critic's :math:`(\hat V, \hat C)` for all states and from it the worst
   case of every (s, a) (sort-based inner problem), or the adversary for all S*A pairs;
2. forward rollout from those tables with the package's sampling convention
   (:mod:`rcmdp_exact.sampling`: 1 + 2T uniforms of the run's Generator, inverse-CDF
   draws by :func:`~rcmdp_exact.sampling.draw_one`);
3. backward pass, t = L-1..0: :math:`V_t = r_t + \gamma V_{t+1}`,
   :math:`C_t = c_t + \gamma C_{t+1}`; one Adam step of the policy on
   :math:`(V_t - \lambda^\top C_t [+ \beta H_t])\,\nabla \log \pi(a_t \mid s_t)` (score at
   the rollout parameters, Algorithm 1); one step of the multipliers on
   :math:`C_t - d`; for the adversary one Adam step on
   :math:`\text{signal}\,\nabla \log \pi_{adv}(o_t \mid s_t, a_t) + \lambda_{adv}
   \nabla\,\mathrm{mean}(\mathrm{dev})` (a fresh batch of pairs, Algorithm 2; the
   signal optionally minus its expectation under the critic, the hinge beyond
   :math:`(1 - m)\alpha`) and one step of :math:`\lambda_{adv}` on the batch's mean
   hinge (default), its mean excess, or the visited pair's :math:`\Delta P - \alpha`
   (the paper); the mixture form has no penalty;
4. one Adam step of the critic on the episode's mean squared error.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..nn import MOMENT_FLOOR
from ..sampling import draw_one
from ..uncertainty.l1_numba import worst_pair
from .config import (
    ADAM_LOG,
    ADV_BATCH,
    ADV_BATCH_HINGE,
    ADVERSARY,
    ENT_GRADIENT,
    ENT_WEIGHT,
    FIXED,
    OBJ_CONSTRAINT,
    OBJ_LAGRANGIAN,
    SCHED_GRADIENT,
    SCHED_NONE,
    SCHED_STEP,
    SIGNAL_CORRECTED,
    SIGNAL_PRINTED,
    WORST,
)

__all__ = ["critic_table", "policy_table", "run_chunk", "worst_case_rows"]

# error_model="numpy": no zero-division checks, so the element-wise loops vectorise
_jit = numba.njit(cache=True, error_model="numpy")
_draw = _jit(draw_one)


# --------------------------------------------------------------------------- MLP pieces
@_jit
def _forward(params, X, nin, H, nout, Z, Hh, out):
    """Rows of X through the MLP: pre-activations Z, hidden Hh (N, H), logits out (N, O)."""
    N = X.shape[0]
    o_b1 = nin * H
    o_W2 = o_b1 + H
    o_b2 = o_W2 + H * nout
    W2 = np.ascontiguousarray(params[o_W2:o_b2]).reshape(H, nout)
    for n in range(N):
        for h in range(H):
            Z[n, h] = 0.0
        for f in range(nin):
            xf = X[n, f]
            for h in range(H):
                Z[n, h] += xf * params[f * H + h]
        for h in range(H):
            z = Z[n, h] + params[o_b1 + h]
            Z[n, h] = z
            Hh[n, h] = z if z > 0.0 else 0.0
    L = np.dot(Hh, W2)
    for n in range(N):
        for o in range(nout):
            out[n, o] = L[n, o] + params[o_b2 + o]


@_jit
def _softmax_rows(logits, P):
    """Row-wise stable softmax (max subtracted), in place into P."""
    N, O = logits.shape
    for n in range(N):
        m = logits[n, 0]
        for o in range(1, O):
            if logits[n, o] > m:
                m = logits[n, o]
        s = 0.0
        for o in range(O):
            e = math.exp(logits[n, o] - m)
            P[n, o] = e
            s += e
        for o in range(O):
            P[n, o] = P[n, o] / s


@_jit
def _backward_row(x, z, h, W2, g, nin, H, nout, grad):
    """Add the gradient of sum(g * logits) for one sample (x, cached z, h) to ``grad``."""
    o_b1 = nin * H
    o_W2 = o_b1 + H
    o_b2 = o_W2 + H * nout
    for j in range(H):
        if z[j] > 0.0:
            acc = 0.0
            for o in range(nout):
                acc += W2[j, o] * g[o]
            for f in range(nin):
                grad[f * H + j] += x[f] * acc
            grad[o_b1 + j] += acc
            hj = h[j]
            for o in range(nout):
                grad[o_W2 + j * nout + o] += hj * g[o]
    for o in range(nout):
        grad[o_b2 + o] += g[o]


@_jit
def _backward_row_set(x, z, h, W2, g, nin, H, nout, grad):
    """Write the gradient of sum(g * logits) for one sample into ``grad`` (every entry)."""
    for i in range(grad.shape[0]):
        grad[i] = 0.0
    _backward_row(x, z, h, W2, g, nin, H, nout, grad)


@_jit
def _adam(p, g, m, v, t, lr, b1, b2, eps, scale):
    """One Adam descent step in place on the gradient ``scale * g`` (the update of
    :class:`rcmdp_exact.nn.Adam`, moments below the smallest normal float flushed to
    zero: a parameter whose gradient stays 0 would otherwise keep a subnormal moment
    forever, since 0.9 times the smallest subnormal rounds back to it, and subnormal
    arithmetic is many times slower on some CPUs)."""
    bc1 = 1.0 - b1 ** float(t)
    bc2 = 1.0 - b2 ** float(t)
    for i in range(p.shape[0]):
        gi = scale * g[i]
        mi = b1 * m[i] + (1.0 - b1) * gi
        vi = b2 * v[i] + (1.0 - b2) * gi * gi
        if abs(mi) < MOMENT_FLOOR:
            mi = 0.0
        if vi < MOMENT_FLOOR:
            vi = 0.0
        m[i] = mi
        v[i] = vi
        p[i] = p[i] - lr * (mi / bc1) / (math.sqrt(vi / bc2) + eps)


@_jit
def _cumsum_rows(P, out):
    N, O = P.shape
    for n in range(N):
        acc = 0.0
        for o in range(O):
            acc += P[n, o]
            out[n, o] = acc


@_jit
def policy_table(params, X, H, nout):
    """Softmax table (N, O) of an MLP on the rows of X (the loop's own forward pass)."""
    N, nin = X.shape
    Z = np.empty((N, H))
    Hh = np.empty((N, H))
    L = np.empty((N, nout))
    P = np.empty((N, nout))
    _forward(params, X, nin, H, nout, Z, Hh, L)
    _softmax_rows(L, P)
    return P


@_jit
def critic_table(params, X, H, nout):
    """Linear outputs (N, O) of the critic MLP on the rows of X."""
    N, nin = X.shape
    Z = np.empty((N, H))
    Hh = np.empty((N, H))
    L = np.empty((N, nout))
    _forward(params, X, nin, H, nout, Z, Hh, L)
    return L


# --------------------------------------------------------------------------- worst case
@_jit
def worst_case_rows(rows, R, C, w_r, w_c, wstate, gamma, terminal, out):
    """Worst case of every non-terminal (s, a) for z = w_r R + w_c.C + gamma W(s').

    ``rows`` the ball by row (:class:`~rcmdp_exact.uncertainty.L1Rows`); ``wstate`` (S,)
    the robustified state quantity; terminal rows keep the nominal.  Writes the kernel
    rows into ``out`` (S*A, S) with the ball's compiled row solver.
    """
    S = terminal.shape[0]
    A = R.shape[1]
    K = w_c.shape[0]
    z = np.empty(S)
    for s in range(S):
        for a in range(A):
            r = s * A + a
            if terminal[s]:
                for t in range(S):
                    out[r, t] = rows.nominal[r, t]
                continue
            for t in range(S):
                g = w_r * R[s, a, t]
                for k in range(K):
                    g += w_c[k] * C[s, a, t, k]
                z[t] = g + gamma * wstate[t]
            worst_pair(rows, r, z, out[r])


@_jit
def _deviation(q, nxt_row, nominal_row, merged):
    """L1 distance of an outcome distribution ``q`` (O,), merged onto next states by
    ``nxt_row`` (O,), to ``nominal_row`` (S,); leaves the merged row in ``merged`` (S,)."""
    S = merged.shape[0]
    for t in range(S):
        merged[t] = 0.0
    for o in range(q.shape[0]):
        merged[nxt_row[o]] += q[o]
    dist = 0.0
    for t in range(S):
        dist += abs(merged[t] - nominal_row[t])
    return dist


# --------------------------------------------------------------------------- multipliers
@_jit
def _multiplier_step(lam, loglam, m, v, t, diff, lr, sched_grad, mode, lam_max, b1, b2, eps):
    """Ascent of the multipliers on ``diff`` (cost - budget): Adam on log lambda or SGD."""
    K = lam.shape[0]
    if mode == ADAM_LOG:
        g = np.empty(K)
        for k in range(K):
            g[k] = diff[k]
        _adam(loglam, g, m, v, t, lr, b1, b2, eps, -sched_grad)
        top = math.log(lam_max)
        for k in range(K):
            if loglam[k] > top:
                loglam[k] = top
            lam[k] = min(math.exp(loglam[k]), lam_max)
    else:
        for k in range(K):
            x = lam[k] + lr * sched_grad * diff[k]
            lam[k] = min(max(x, 0.0), lam_max)


# --------------------------------------------------------------------------- the loop
@_jit
def run_chunk(n_episodes, cfg, cnt, rng_ep, rng_batch, pb, kcdf_fixed, st, rec):
    """Run up to ``n_episodes`` episodes (fewer if the step budget ends); returns the count.

    ``cfg`` the :class:`~rcmdp_exact.learners.config.LoopConfig`, ``pb`` the problem's
    arrays (:class:`~rcmdp_exact.learners.dynamics.Problem`), ``kcdf_fixed`` the
    cumulative kernel of fixed dynamics, ``st`` the :class:`~rcmdp_exact.learners.config.
    LoopState` (every array updated in place), ``rec`` the :class:`~rcmdp_exact.learners.
    config.Records` (episode i of this call goes to row i); ``cnt`` the counters.
    """
    T = cfg.horizon
    dyn = cfg.dynamics
    learn_lam = cfg.learn_multiplier
    mult = cfg.multiplier_update
    sched_mode = cfg.schedule
    sched_every = cfg.schedule_every
    ent_form = cfg.entropy_form
    disc_weight = cfg.discount_weight
    adv_signal = cfg.adversary_signal
    adv_start = cfg.adversary_start
    n_samp = cfg.adversary_batch
    train_critic = cfg.train_critic
    objective = cfg.objective
    H = cfg.hidden
    step_budget = cfg.step_budget
    mult_episode = cfg.multiplier_episode
    adv_mult = cfg.adversary_multiplier_signal
    mult_start = cfg.multiplier_start
    adv_baseline = cfg.adversary_baseline
    mixture = cfg.mixture
    gamma = cfg.gamma
    lr_pol = cfg.lr_policy
    lr_lam = cfg.lr_multiplier
    lr_adv = cfg.lr_adversary
    lr_lamadv = cfg.lr_adversary_multiplier
    lr_critic = cfg.lr_critic
    beta = cfg.entropy
    lam_max = cfg.lambda_max
    b1 = cfg.beta1
    b2 = cfg.beta2
    eps = cfg.eps
    shrink = 1.0 - cfg.adversary_margin  # the deviation penalty acts beyond (1 - margin) alpha

    p0cdf, terminal, R, C, d, Xpol = pb.p0cdf, pb.terminal, pb.R, pb.C, pb.d, pb.Xpol
    nxt, kprob, rows, w_c0, live = pb.nxt, pb.kprob, pb.rows, pb.w_c0, pb.live
    Xadv, nom_state = pb.Xadv, pb.nom_state
    radius = rows.radius
    theta, m_th, v_th = st.theta, st.m_th, st.v_th
    psi, m_ps, v_ps = st.psi, st.m_ps, st.v_ps
    phi, m_ph, v_ph = st.phi, st.m_ph, st.v_ph
    lam, loglam, m_lam, v_lam = st.lam, st.loglam, st.m_lam, st.v_lam
    lamadv, loglamadv, m_la, v_la = st.lamadv, st.loglamadv, st.m_la, st.v_la
    rec_len, rec_ret, rec_cost, rec_lam = rec.length, rec.ret, rec.cost, rec.lam
    rec_lamadv, rec_dev, rec_inside, rec_steps = rec.lamadv, rec.dev, rec.inside, rec.steps

    S, A = Xpol.shape[0], R.shape[1]
    F = Xpol.shape[1]
    K = d.shape[0]
    O = nxt.shape[1]
    SA = S * A
    Fa = Xadv.shape[1]
    n_live = live.shape[0]

    # per-episode tables
    Zp = np.empty((S, H))
    Hp = np.empty((S, H))
    Lp = np.empty((S, A))
    Pp = np.empty((S, A))
    Cp = np.empty((S, A))
    ent = np.zeros(S)
    W2p = np.empty((H, A))
    Zc = np.empty((S, H))
    Hc = np.empty((S, H))
    Vc = np.empty((S, 1 + K))
    wstate = np.zeros(S)
    Pk = np.empty((SA, O))
    Sk = np.empty((SA, O))  # the adversary's softmax (= Pk unless the mixture form)
    mix = np.empty(SA)  # mixture weights min(1, alpha / 2)
    for r in range(SA):
        mix[r] = min(1.0, radius[r] / 2.0)
    kcdf = np.empty((SA, O))
    Za = np.empty((SA, H))
    Ha = np.empty((SA, H))
    La = np.empty((SA, O))
    W2a = np.empty((H, O))
    devo = np.zeros(SA)
    merged = np.zeros(S)
    w_c = w_c0.copy()
    # deviation batch buffers
    Xb = np.empty((n_samp, Fa))
    Zb = np.empty((n_samp, H))
    Hb = np.empty((n_samp, H))
    Lb = np.empty((n_samp, O))
    Pb = np.empty((n_samp, O))
    gb = np.empty(O)
    idx = np.empty(n_samp, dtype=np.int64)
    W2cur = np.empty((H, O))
    diff1 = np.empty(1)
    # episode buffers
    st = np.empty(T, dtype=np.int64)
    ac = np.empty(T, dtype=np.int64)
    oc = np.empty(T, dtype=np.int64)
    rw = np.empty(T)
    cs = np.empty((T, K))
    Vt = np.empty(T)
    Ct = np.empty((T, K))
    Cnow = np.zeros(K)
    Cprev = np.zeros(K)
    C0 = np.zeros(K)
    diff = np.empty(K)
    g_pol = np.empty(A)
    g_adv = np.empty(O)
    grad_th = np.zeros(theta.shape[0])
    grad_ph = np.zeros(phi.shape[0])
    grad_ps = np.zeros(psi.shape[0])
    Gc = np.zeros((S, 1 + K))
    o_W2p = F * H + H
    o_W2a = Fa * H + H

    if dyn == FIXED:
        for r in range(SA):
            for o in range(O):
                kcdf[r, o] = kcdf_fixed[r, o]

    done = 0
    for _ in range(n_episodes):
        if step_budget > 0 and cnt[6] >= step_budget:
            break
        cnt[5] += 1
        n_ep = cnt[5]
        sched = 1.0
        if sched_mode != SCHED_NONE:
            sched = 1.0 / (1.0 + n_ep // sched_every)
        sched_grad = sched if sched_mode == SCHED_GRADIENT else 1.0
        sched_step = sched if sched_mode == SCHED_STEP else 1.0

        # ---- tables at the episode's parameters
        _forward(theta, Xpol, F, H, A, Zp, Hp, Lp)
        _softmax_rows(Lp, Pp)
        _cumsum_rows(Pp, Cp)
        for s in range(S):
            e = 0.0
            for a in range(A):
                p = Pp[s, a]
                if p > 0.0:
                    e -= p * math.log(p)
            ent[s] = e
        for j in range(H):
            for a in range(A):
                W2p[j, a] = theta[o_W2p + j * A + a]
        if train_critic or dyn == WORST:
            _forward(psi, Xpol, F, H, 1 + K, Zc, Hc, Vc)
        if dyn == WORST:
            w_r = 1.0
            if objective == OBJ_CONSTRAINT:
                w_r = 0.0
            if objective == OBJ_LAGRANGIAN:
                for k in range(K):
                    w_c[k] = -lam[k]
            for s in range(S):
                if terminal[s]:
                    wstate[s] = 0.0
                else:
                    x = w_r * Vc[s, 0]
                    for k in range(K):
                        x += w_c[k] * Vc[s, 1 + k]
                    wstate[s] = x
            worst_case_rows(rows, R, C, w_r, w_c, wstate, gamma, terminal, Pk)
            _cumsum_rows(Pk, kcdf)
        mean_dev = np.nan
        inside = np.nan
        if dyn == ADVERSARY:
            _forward(phi, Xadv, Fa, H, O, Za, Ha, La)
            _softmax_rows(La, Sk)
            for r in range(SA):
                for o in range(O):
                    if mixture:
                        Pk[r, o] = (1.0 - mix[r]) * kprob[r, o] + mix[r] * Sk[r, o]
                    else:
                        Pk[r, o] = Sk[r, o]
            _cumsum_rows(Pk, kcdf)
            for j in range(H):
                for o in range(O):
                    W2a[j, o] = phi[o_W2a + j * O + o]
            tot = 0.0
            n_in = 0
            for i in range(n_live):
                r = live[i]
                dist = _deviation(Pk[r], nxt[r], nom_state[r], merged)
                devo[r] = dist
                tot += dist
                if dist <= radius[r] + 1e-9:
                    n_in += 1
            if n_live > 0:
                mean_dev = tot / n_live
                inside = n_in / n_live

        # ---- forward rollout (the sampling convention of rcmdp_exact.sampling)
        u = rng_ep.random(1 + 2 * T)
        s = _draw(p0cdf, u[0])
        L = 0
        ret = 0.0
        for k in range(K):
            Cnow[k] = 0.0
        if not terminal[s]:
            for t in range(T):
                a = _draw(Cp[s], u[1 + 2 * t])
                r = s * A + a
                o = _draw(kcdf[r], u[2 + 2 * t])
                s2 = nxt[r, o]
                st[t] = s
                ac[t] = a
                oc[t] = o
                rw[t] = R[s, a, s2]
                ret += rw[t]
                for k in range(K):
                    cs[t, k] = C[s, a, s2, k]
                    Cnow[k] += cs[t, k]
                L = t + 1
                s = s2
                if terminal[s]:
                    break
                if step_budget > 0 and cnt[6] + L >= step_budget:
                    break
        cnt[6] += L

        # ---- backward pass: updates at every step
        if mult_episode:  # the episode's discounted cost C_0 (computed backwards)
            for k in range(K):
                C0[k] = 0.0
            for t in range(L - 1, -1, -1):
                for k in range(K):
                    C0[k] = cs[t, k] + gamma * C0[k]
        adv_on = dyn == ADVERSARY and n_ep > adv_start
        V = 0.0
        for k in range(K):
            Cprev[k] = 0.0
        for t in range(L - 1, -1, -1):
            s = st[t]
            a = ac[t]
            Vnext = V
            lag_next = Vnext
            for k in range(K):
                lag_next -= lam[k] * Cprev[k]
            V = rw[t] + gamma * V
            for k in range(K):
                Cprev[k] = cs[t, k] + gamma * Cprev[k]
            Vt[t] = V
            for k in range(K):
                Ct[t, k] = Cprev[k]
            lag = V
            for k in range(K):
                lag -= lam[k] * Cprev[k]
            wt = 1.0
            if disc_weight:
                wt = gamma ** float(t)
            # policy: ascent on the weight times the score (at the rollout parameters)
            weight = lag
            if ent_form == ENT_WEIGHT:
                weight += beta * ent[s]
            weight *= wt
            for b in range(A):
                g_pol[b] = -weight * Pp[s, b]
            g_pol[a] += weight
            if ent_form == ENT_GRADIENT and beta > 0.0:
                for b in range(A):
                    p = Pp[s, b]
                    if p > 0.0:
                        g_pol[b] -= wt * beta * p * (math.log(p) + ent[s])
            _backward_row_set(Xpol[s], Zp[s], Hp[s], W2p, g_pol, F, H, A, grad_th)
            cnt[0] += 1
            _adam(theta, grad_th, m_th, v_th, cnt[0], lr_pol * sched_step, b1, b2, eps,
                  -sched_grad)
            # multipliers: ascent on C_t - d (held at their start value for mult_start episodes)
            if learn_lam and n_ep > mult_start:
                for k in range(K):
                    diff[k] = (C0[k] if mult_episode else Cprev[k]) - d[k]
                cnt[3] += 1
                _multiplier_step(lam, loglam, m_lam, v_lam, cnt[3], diff,
                                 lr_lam * sched_step, sched_grad, mult, lam_max, b1, b2, eps)
            # adversary: descent on the Lagrangian plus lambda_adv times the deviation
            if adv_on:
                r = s * A + a
                o = oc[t]
                if adv_signal == SIGNAL_PRINTED:
                    signal = lag_next
                else:
                    signal = lag
                if adv_baseline:  # minus its expectation over the outcomes (critic values)
                    base = 0.0
                    for q in range(O):
                        n2 = nxt[r, q]
                        w2 = 0.0
                        if not terminal[n2]:
                            w2 = Vc[n2, 0]
                            for k in range(K):
                                w2 -= lam[k] * Vc[n2, 1 + k]
                        if adv_signal == SIGNAL_CORRECTED:
                            w2 = R[s, a, n2] + gamma * w2
                            for k in range(K):
                                w2 -= lam[k] * C[s, a, n2, k]
                        base += Pk[r, q] * w2
                    signal -= base
                signal *= wt
                if mixture:  # score of the mixture: mix * softmax jacobian / q
                    fm = signal * mix[r] * Sk[r, o] / Pk[r, o]
                    for q in range(O):
                        g_adv[q] = -fm * Sk[r, q]
                    g_adv[o] += fm
                else:
                    for q in range(O):
                        g_adv[q] = -signal * Pk[r, q]
                    g_adv[o] += signal
                _backward_row_set(Xadv[r], Za[r], Ha[r], W2a, g_adv, Fa, H, O, grad_ph)
                batch_excess = 0.0
                batch_hinge = 0.0
                if not mixture:
                    # deviation gradient on a fresh batch, at the current parameters
                    ub = rng_batch.random(n_samp)
                    for i in range(n_samp):
                        rr = live[min(int(ub[i] * n_live), n_live - 1)]
                        idx[i] = rr
                        for f in range(Fa):
                            Xb[i, f] = Xadv[rr, f]
                    _forward(phi, Xb, Fa, H, O, Zb, Hb, Lb)
                    _softmax_rows(Lb, Pb)
                    for j in range(H):
                        for q in range(O):
                            W2cur[j, q] = phi[o_W2a + j * O + q]
                    la = lamadv[0]
                    for i in range(n_samp):
                        rr = idx[i]
                        dev = _deviation(Pb[i], nxt[rr], nom_state[rr], merged)
                        excess = dev - shrink * radius[rr]
                        batch_excess += excess
                        if excess > 0.0:
                            batch_hinge += excess
                            dot = 0.0
                            for q in range(O):
                                y = Pb[i, q]
                                x = merged[nxt[rr, q]] - nom_state[rr, nxt[rr, q]]
                                sg = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
                                gb[q] = sg / n_samp
                                dot += y * gb[q]
                            for q in range(O):
                                gb[q] = la * (Pb[i, q] * (gb[q] - dot))
                            _backward_row(Xb[i], Zb[i], Hb[i], W2cur, gb, Fa, H, O, grad_ph)
                cnt[1] += 1
                _adam(phi, grad_ph, m_ph, v_ph, cnt[1], lr_adv * sched_step, b1, b2, eps,
                      sched_grad)
                if not mixture:
                    # lambda_adv: ascent on the excess of the visited pair or of the batch
                    if adv_mult == ADV_BATCH:
                        diff1[0] = batch_excess / n_samp
                    elif adv_mult == ADV_BATCH_HINGE:
                        diff1[0] = batch_hinge / n_samp
                    else:
                        diff1[0] = devo[r] - shrink * radius[r]
                    cnt[4] += 1
                    _multiplier_step(lamadv, loglamadv, m_la, v_la, cnt[4], diff1,
                                     lr_lamadv * sched_step, sched_grad, mult, lam_max,
                                     b1, b2, eps)
        # ---- critic: one Adam step on the episode's mean squared error
        if train_critic and L > 0:
            for s in range(S):
                for j in range(1 + K):
                    Gc[s, j] = 0.0
            scale = 2.0 / (L * (1 + K))
            for t in range(L):
                s = st[t]
                Gc[s, 0] += scale * (Vc[s, 0] - Vt[t])
                for k in range(K):
                    Gc[s, 1 + k] += scale * (Vc[s, 1 + k] - Ct[t, k])
            for i in range(grad_ps.shape[0]):
                grad_ps[i] = 0.0
            W2c = np.ascontiguousarray(psi[F * H + H:F * H + H + H * (1 + K)]).reshape(H, 1 + K)
            for s in range(S):
                nz = False
                for j in range(1 + K):
                    if Gc[s, j] != 0.0:
                        nz = True
                if nz:
                    _backward_row(Xpol[s], Zc[s], Hc[s], W2c, Gc[s], F, H, 1 + K, grad_ps)
            cnt[2] += 1
            _adam(psi, grad_ps, m_ps, v_ps, cnt[2], lr_critic, b1, b2, eps, 1.0)

        rec_len[done] = L
        rec_ret[done] = ret
        for k in range(K):
            rec_cost[done, k] = Cnow[k]
            rec_lam[done, k] = lam[k]
        rec_lamadv[done] = lamadv[0]
        rec_dev[done] = mean_dev
        rec_inside[done] = inside
        rec_steps[done] = cnt[6]
        done += 1
    return done

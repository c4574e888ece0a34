r"""The one per-step training loop of the learners, compiled by numba.

This module imports numba at its top; :mod:`rcmdp_exact.learners` imports it only
inside :func:`~rcmdp_exact.learners.train`, so the package and the command line start
without it.  :mod:`rcmdp_exact.learners.reference` runs the same algorithm on the
numpy MLP of :mod:`rcmdp_exact.core.nn` (the reference the tests compare against).

One episode of :func:`run_chunk` is five phases, one compiled function each, over the
named tuples of :mod:`rcmdp_exact.learners.config` (``docs/learners.md`` has the maths):

1. tables at the episode's parameters: :func:`_policy_tables` (the policy
   :math:`\pi(\cdot \mid s)` for all S states), :func:`_critic_tables` (the critic's
   :math:`(\hat V, \hat C)`), and the kernel: :func:`_worst_case_kernel` (the worst case
   of every (s, a), sort-based inner problem) or :func:`_adversary_kernel` (the
   adversary for all S*A pairs);
2. :func:`_rollout`: a forward rollout from those tables with the package's sampling
   convention (:mod:`rcmdp_exact.core.sampling`: 1 + 2T uniforms of the run's Generator,
   inverse-CDF draws by :func:`~rcmdp_exact.core.sampling.draw_one`);
3. the backward pass, t = L-1..0 (in :func:`run_chunk`; :func:`_episode_cost` first for
   ``multiplier_signal="episode"``): :math:`V_t = r_t + \gamma V_{t+1}`,
   :math:`C_t = c_t + \gamma C_{t+1}`; :func:`_policy_step`: one Adam step of the policy
   on :math:`(V_t - \lambda^\top C_t [+ \beta H_t])\,\nabla \log \pi(a_t \mid s_t)` (score
   at the rollout parameters, Algorithm 1); :func:`_multiplier_update`: one step of the
   multipliers on :math:`C_t - d`; :func:`_adversary_step`: one Adam step of the
   adversary on :math:`\text{signal}\,\nabla \log \pi_{adv}(o_t \mid s_t, a_t) +
   \lambda_{adv} \nabla\,\mathrm{mean}(\mathrm{dev})` (:func:`_adversary_score`, and
   :func:`_deviation_batch`: a fresh batch of pairs, Algorithm 2; the signal optionally
   minus its expectation under the critic, the hinge beyond :math:`(1 - m)\alpha`) and
   :func:`_adversary_multiplier_update`: one step of :math:`\lambda_{adv}` on the
   batch's mean hinge (default), its mean excess, or the visited pair's
   :math:`\Delta P - \alpha` (the paper); the mixture form has no penalty;
4. :func:`_critic_update`: one Adam step of the critic on the episode's mean squared
   error;
5. :func:`_record`: the episode's row of the records.

:mod:`rcmdp_exact.learners.reference` has the same phases under the same names, written
separately on :mod:`rcmdp_exact.core.nn` (the oracle of this module).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..core.nn import MOMENT_FLOOR
from ..core.sampling import draw_one
from ..uncertainty.l1_numba import worst_pair
from .config import (
    ADAM_LOG,
    ADV_BATCH,
    ADV_BATCH_HINGE,
    ADVERSARY,
    ENT_GRADIENT,
    ENT_WEIGHT,
    EPISODE,
    FIXED,
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
    AdversaryTables,
    CriticTables,
    DeviationBatch,
    Episode,
    KernelTables,
    PolicyTables,
    Workspace,
)

__all__ = [ "policy_table", "run_chunk", "worst_case_rows"]

# error_model="numpy": no zero-division checks, so the element-wise loops vectorise
_jit = numba.njit(cache=True, error_model="numpy")
# the phases of an episode: inlined into run_chunk by numba (one function to compile and
# optimise, as fast to build as the loop written in one piece)
_phase = numba.njit(cache=True, error_model="numpy", inline="always")
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
    :class:`rcmdp_exact.core.nn.Adam`, moments below the smallest normal float flushed to
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


# --------------------------------------------------------------------------- buffers
@_phase
def _workspace(cfg, pb, st):
    """The buffers of a chunk (:class:`~rcmdp_exact.learners.config.Workspace`)."""
    T, H, n = cfg.horizon, cfg.hidden, cfg.adversary_batch
    S, A = pb.Xpol.shape[0], pb.R.shape[1]
    K = pb.d.shape[0]
    SA = S * A
    O = pb.nxt.shape[1]
    radius = pb.rows.radius
    mix = np.empty(SA)  # mixture weights min(1, alpha / 2)
    for r in range(SA):
        mix[r] = min(1.0, radius[r] / 2.0)
    policy = PolicyTables(
        pre=np.empty((S, H)), hidden=np.empty((S, H)), logits=np.empty((S, A)),
        prob=np.empty((S, A)), cdf=np.empty((S, A)), entropy=np.zeros(S), W2=np.empty((H, A)),
        logit_grad=np.empty(A), grad=np.zeros(st.policy.params.shape[0]))
    critic = CriticTables(
        pre=np.empty((S, H)), hidden=np.empty((S, H)), out=np.empty((S, 1 + K)),
        out_grad=np.zeros((S, 1 + K)), grad=np.zeros(st.critic.params.shape[0]))
    kernel = KernelTables(prob=np.empty((SA, O)), cdf=np.empty((SA, O)), w_c=pb.w_c0.copy(),
                          w_state=np.zeros(S))
    adversary = AdversaryTables(
        pre=np.empty((SA, H)), hidden=np.empty((SA, H)), logits=np.empty((SA, O)),
        softmax=np.empty((SA, O)), mix=mix, W2=np.empty((H, O)), deviation=np.zeros(SA),
        merged=np.zeros(S), logit_grad=np.empty(O), grad=np.zeros(st.adversary.params.shape[0]),
        excess=np.empty(1))
    batch = DeviationBatch(
        pairs=np.empty(n, dtype=np.int64), X=np.empty((n, pb.Xadv.shape[1])),
        pre=np.empty((n, H)), hidden=np.empty((n, H)), logits=np.empty((n, O)),
        prob=np.empty((n, O)), W2=np.empty((H, O)), logit_grad=np.empty(O))
    episode = Episode(
        states=np.empty(T, dtype=np.int64), actions=np.empty(T, dtype=np.int64),
        outcomes=np.empty(T, dtype=np.int64), rewards=np.empty(T), costs=np.empty((T, K)),
        value=np.empty(T), cost_to_go=np.empty((T, K)), cost_sum=np.zeros(K),
        cost_next=np.zeros(K), cost_first=np.zeros(K), excess=np.empty(K))
    return Workspace(policy=policy, critic=critic, kernel=kernel, adversary=adversary,
                     batch=batch, episode=episode)


@_jit
def _copy_out_weights(params, n_in, H, n_out, W2):
    """The output layer's weights (H, n_out) of an MLP's parameter vector into ``W2``."""
    o_W2 = n_in * H + H
    for j in range(H):
        for o in range(n_out):
            W2[j, o] = params[o_W2 + j * n_out + o]


# --------------------------------------------------------------------------- multipliers
@_jit
def _multiplier_ascent(mult, t, diff, lr, sched_grad, cfg):
    """Ascent of the multipliers ``mult`` (a :class:`~rcmdp_exact.learners.config.
    MultiplierState`) on ``diff`` (cost - budget): Adam on log lambda or SGD."""
    lam, loglam = mult.value, mult.log
    K = lam.shape[0]
    lam_max = cfg.lam_max
    if cfg.multiplier_update == ADAM_LOG:
        g = np.empty(K)
        for k in range(K):
            g[k] = diff[k]
        _adam(loglam, g, mult.m, mult.v, t, lr, cfg.beta1, cfg.beta2, cfg.eps, -sched_grad)
        top = math.log(lam_max)
        for k in range(K):
            if loglam[k] > top:
                loglam[k] = top
            lam[k] = min(math.exp(loglam[k]), lam_max)
    else:
        for k in range(K):
            x = lam[k] + lr * sched_grad * diff[k]
            lam[k] = min(max(x, 0.0), lam_max)


# --------------------------------------------------------------------------- the phases
# Each phase reads the named tuples (or their parts) and the problem's arrays it uses, and
# its loops index local names: numba inlines it into run_chunk, and a named tuple given
# to an inlined function costs a reference count per array it holds that the function
# does not use, so the phases are given few and the per-step ones arrays only.
@_phase
def _schedule(cfg, n_ep):
    """The factors of episode ``n_ep`` on the gradient and on the step size."""
    sched = 1.0
    if cfg.schedule != SCHED_NONE:
        sched = 1.0 / (1.0 + n_ep // cfg.schedule_every)
    sched_grad = sched if cfg.schedule == SCHED_GRADIENT else 1.0
    sched_step = sched if cfg.schedule == SCHED_STEP else 1.0
    return sched_grad, sched_step


@_phase
def _policy_tables(cfg, theta, X, pt):
    """Phase 1: the policy at every state (probabilities, their cumulative sums, the
    hidden layer for the scores, each state's entropy, the output weights) into the
    :class:`~rcmdp_exact.learners.config.PolicyTables` ``pt``."""
    S, F = X.shape
    A, H = pt.prob.shape[1], cfg.hidden
    prob, entropy = pt.prob, pt.entropy
    _forward(theta, X, F, H, A, pt.pre, pt.hidden, pt.logits)
    _softmax_rows(pt.logits, prob)
    _cumsum_rows(prob, pt.cdf)
    for s in range(S):
        e = 0.0
        for a in range(A):
            p = prob[s, a]
            if p > 0.0:
                e -= p * math.log(p)
        entropy[s] = e
    _copy_out_weights(theta, F, H, A, pt.W2)


@_phase
def _critic_tables(cfg, psi, X, ct):
    """Phase 1: the critic's (V_hat, C_hat) at every state into ``ct.out``."""
    _forward(psi, X, X.shape[1], cfg.hidden, ct.out.shape[1], ct.pre, ct.hidden, ct.out)


@_phase
def _worst_case_kernel(cfg, rows, R, C, terminal, lam, Vc, kt):
    """Phase 1, RCPG: the worst case of every pair over the ball (by row, ``rows``) for
    the critic's values ``Vc`` (for the Lagrangian, with the multipliers ``lam``), into
    the :class:`~rcmdp_exact.learners.config.KernelTables` ``kt``."""
    K = lam.shape[0]
    w_c, w_state = kt.w_c, kt.w_state
    w_r = 1.0
    if cfg.objective == OBJ_CONSTRAINT:
        w_r = 0.0
    if cfg.objective == OBJ_LAGRANGIAN:
        for k in range(K):
            w_c[k] = -lam[k]
    for s in range(terminal.shape[0]):
        if terminal[s]:
            w_state[s] = 0.0
        else:
            x = w_r * Vc[s, 0]
            for k in range(K):
                x += w_c[k] * Vc[s, 1 + k]
            w_state[s] = x
    worst_case_rows(rows, R, C, w_r, w_c, w_state, cfg.gamma, terminal, kt.prob)
    _cumsum_rows(kt.prob, kt.cdf)


@_phase
def _adversary_kernel(cfg, phi, Xadv, kprob, nxt, nom_state, live, radius, kt, at):
    """Phase 1, Adversarial RCPG: the adversary's outcome probabilities of every pair
    (into ``kt``, its tables into the :class:`~rcmdp_exact.learners.config.
    AdversaryTables` ``at``); returns the mean L1 distance to the nominal over the
    non-terminal pairs ``live`` and the fraction within their radius (NaN without such
    pairs)."""
    SA, Fa = Xadv.shape
    O, H = nxt.shape[1], cfg.hidden
    Pk, Sk, mix, deviation, merged = kt.prob, at.softmax, at.mix, at.deviation, at.merged
    _forward(phi, Xadv, Fa, H, O, at.pre, at.hidden, at.logits)
    _softmax_rows(at.logits, Sk)
    for r in range(SA):
        for o in range(O):
            if cfg.mixture:
                Pk[r, o] = (1.0 - mix[r]) * kprob[r, o] + mix[r] * Sk[r, o]
            else:
                Pk[r, o] = Sk[r, o]
    _cumsum_rows(Pk, kt.cdf)
    _copy_out_weights(phi, Fa, H, O, at.W2)
    n_live = live.shape[0]
    tot = 0.0
    n_in = 0
    for i in range(n_live):
        r = live[i]
        dist = _deviation(Pk[r], nxt[r], nom_state[r], merged)
        deviation[r] = dist
        tot += dist
        if dist <= radius[r] + 1e-9:
            n_in += 1
    mean_dev = np.nan
    inside = np.nan
    if n_live > 0:
        mean_dev = tot / n_live
        inside = n_in / n_live
    return mean_dev, inside


@_phase
def _rollout(cfg, p0cdf, terminal, R, C, nxt, pol_cdf, kernel_cdf, ep, rng_ep, cnt):
    """Phase 2: one episode from the tables (the sampling convention of
    :mod:`rcmdp_exact.core.sampling`) into the :class:`~rcmdp_exact.learners.config.Episode`
    ``ep``; returns its length and undiscounted return."""
    T, step_budget = cfg.horizon, cfg.step_budget
    A, K = R.shape[1], C.shape[3]
    states, actions, outcomes = ep.states, ep.actions, ep.outcomes
    rewards, costs, cost_sum = ep.rewards, ep.costs, ep.cost_sum
    u = rng_ep.random(1 + 2 * T)
    s = _draw(p0cdf, u[0])
    L = 0
    ret = 0.0
    for k in range(K):
        cost_sum[k] = 0.0
    if not terminal[s]:
        for t in range(T):
            a = _draw(pol_cdf[s], u[1 + 2 * t])
            r = s * A + a
            o = _draw(kernel_cdf[r], u[2 + 2 * t])
            s2 = nxt[r, o]
            states[t] = s
            actions[t] = a
            outcomes[t] = o
            rewards[t] = R[s, a, s2]
            ret += rewards[t]
            for k in range(K):
                costs[t, k] = C[s, a, s2, k]
                cost_sum[k] += costs[t, k]
            L = t + 1
            s = s2
            if terminal[s]:
                break
            if step_budget > 0 and cnt[STEPS] + L >= step_budget:
                break
    cnt[STEPS] += L
    return L, ret


@_phase
def _episode_cost(gamma, costs, L, C0):
    """Phase 3, ``multiplier_signal="episode"``: the episode's discounted costs C_0."""
    for k in range(C0.shape[0]):
        C0[k] = 0.0
    for t in range(L - 1, -1, -1):
        for k in range(C0.shape[0]):
            C0[k] = costs[t, k] + gamma * C0[k]


@_phase
def _policy_step(cfg, policy, prob, entropy, pre, hidden, W2, logit_grad, grad, x, s, a, lag,
                 wt, sched_grad, sched_step, cnt):
    """Phase 3, every step: one Adam ascent step of the ``policy`` (an
    :class:`~rcmdp_exact.learners.config.AdamState`) on the weight times the score at the
    rollout parameters (the arrays of :class:`~rcmdp_exact.learners.config.PolicyTables`;
    plus the entropy's gradient in the "gradient" form); ``x`` the input row of the
    state ``s``."""
    A, H = prob.shape[1], cfg.hidden
    beta = cfg.entropy
    weight = lag
    if cfg.entropy_form == ENT_WEIGHT:
        weight += beta * entropy[s]
    weight *= wt
    for b in range(A):
        logit_grad[b] = -weight * prob[s, b]
    logit_grad[a] += weight
    if cfg.entropy_form == ENT_GRADIENT and beta > 0.0:
        for b in range(A):
            p = prob[s, b]
            if p > 0.0:
                logit_grad[b] -= wt * beta * p * (math.log(p) + entropy[s])
    _backward_row_set(x, pre[s], hidden[s], W2, logit_grad, x.shape[0], H, A, grad)
    cnt[T_POLICY] += 1
    _adam(policy.params, grad, policy.m, policy.v, cnt[T_POLICY],
          cfg.lr_policy * sched_step, cfg.beta1, cfg.beta2, cfg.eps, -sched_grad)


@_phase
def _multiplier_update(cfg, mult, cost, d, diff, sched_grad, sched_step, cnt):
    """Phase 3, every step: one ascent step of the multipliers ``mult`` on ``cost - d``
    (C_t or C_0), written to ``diff``."""
    for k in range(diff.shape[0]):
        diff[k] = cost[k] - d[k]
    cnt[T_LAM] += 1
    _multiplier_ascent(mult, cnt[T_LAM], diff, cfg.lr_multiplier * sched_step, sched_grad,
                       cfg)


@_phase
def _adversary_score(cfg, nxt, terminal, R, C, Xadv, lam, Pk, Vc, at, s, a, o, lag, lag_next,
                     wt):
    """Phase 3, adversary: the gradient of its signal times the score of the sampled
    outcome ``o`` under the outcome probabilities ``Pk`` (into ``at.grad``, at the
    rollout parameters)."""
    A, K = R.shape[1], lam.shape[0]
    O, H, Fa = nxt.shape[1], cfg.hidden, Xadv.shape[1]
    Sk, g_adv = at.softmax, at.logit_grad
    r = s * A + a
    if cfg.adversary_signal == SIGNAL_PRINTED:
        signal = lag_next
    else:
        signal = lag
    if cfg.adversary_baseline:  # minus its expectation over the outcomes (critic values)
        base = 0.0
        for q in range(O):
            n2 = nxt[r, q]
            w2 = 0.0
            if not terminal[n2]:
                w2 = Vc[n2, 0]
                for k in range(K):
                    w2 -= lam[k] * Vc[n2, 1 + k]
            if cfg.adversary_signal == SIGNAL_CORRECTED:
                w2 = R[s, a, n2] + cfg.gamma * w2
                for k in range(K):
                    w2 -= lam[k] * C[s, a, n2, k]
            base += Pk[r, q] * w2
        signal -= base
    signal *= wt
    if cfg.mixture:  # score of the mixture: mix * softmax jacobian / q
        fm = signal * at.mix[r] * Sk[r, o] / Pk[r, o]
        for q in range(O):
            g_adv[q] = -fm * Sk[r, q]
        g_adv[o] += fm
    else:
        for q in range(O):
            g_adv[q] = -signal * Pk[r, q]
        g_adv[o] += signal
    _backward_row_set(Xadv[r], at.pre[r], at.hidden[r], at.W2, g_adv, Fa, H, O, at.grad)


@_phase
def _deviation_batch(cfg, Xadv, nxt, nom_state, live, radius, phi, lam_adv, at, batch,
                     rng_batch):
    """Phase 3, adversary (Algorithm 2): ``lam_adv`` times the gradient of the mean hinge
    deviation of a fresh batch of pairs at the current parameters ``phi``, added to
    ``at.grad``; returns the batch's summed excess and summed hinge."""
    O, H, Fa = nxt.shape[1], cfg.hidden, Xadv.shape[1]
    n_samp = cfg.adversary_batch
    n_live = live.shape[0]
    shrink = 1.0 - cfg.adversary_margin  # the penalty acts beyond (1 - margin) alpha
    Xb, Pb, gb, idx, merged = batch.X, batch.prob, batch.logit_grad, batch.pairs, at.merged
    pre, hidden, W2, grad = batch.pre, batch.hidden, batch.W2, at.grad
    ub = rng_batch.random(n_samp)
    for i in range(n_samp):
        rr = live[min(int(ub[i] * n_live), n_live - 1)]
        idx[i] = rr
        for f in range(Fa):
            Xb[i, f] = Xadv[rr, f]
    _forward(phi, Xb, Fa, H, O, pre, hidden, batch.logits)
    _softmax_rows(batch.logits, Pb)
    _copy_out_weights(phi, Fa, H, O, W2)
    la = lam_adv[0]
    batch_excess = 0.0
    batch_hinge = 0.0
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
            _backward_row(Xb[i], pre[i], hidden[i], W2, gb, Fa, H, O, grad)
    return batch_excess, batch_hinge


@_phase
def _adversary_multiplier_update(cfg, mult, excess, deviation_r, radius_r, batch_excess,
                                 batch_hinge, sched_grad, sched_step, cnt):
    """Phase 3, adversary: one ascent step of lam_adv (``mult``) on the batch's mean
    hinge, its mean excess, or the visited pair's excess (its deviation ``deviation_r``
    and radius ``radius_r``), written to ``excess`` (1,)."""
    n_samp = cfg.adversary_batch
    if cfg.adversary_multiplier_signal == ADV_BATCH:
        excess[0] = batch_excess / n_samp
    elif cfg.adversary_multiplier_signal == ADV_BATCH_HINGE:
        excess[0] = batch_hinge / n_samp
    else:
        excess[0] = deviation_r - (1.0 - cfg.adversary_margin) * radius_r
    cnt[T_LAM_ADV] += 1
    _multiplier_ascent(mult, cnt[T_LAM_ADV], excess, cfg.lr_adversary_multiplier * sched_step,
                       sched_grad, cfg)


@_phase
def _adversary_step(cfg, pb, lam, adv, lam_adv, Pk, Vc, at, batch, s, a, o, lag, lag_next, wt,
                    sched_grad, sched_step, rng_batch, cnt):
    """Phase 3, every step after ``adversary_start``: one Adam descent step of the
    adversary ``adv`` on the Lagrangian plus lam_adv times the deviation, then the step
    of lam_adv (``lam_adv``; the mixture form has no penalty)."""
    nxt, radius, Xadv = pb.nxt, pb.rows.radius, pb.Xadv
    _adversary_score(cfg, nxt, pb.terminal, pb.R, pb.C, Xadv, lam, Pk, Vc, at, s, a, o, lag,
                     lag_next, wt)
    batch_excess = 0.0
    batch_hinge = 0.0
    if not cfg.mixture:
        batch_excess, batch_hinge = _deviation_batch(cfg, Xadv, nxt, pb.nom_state, pb.live,
                                                     radius, adv.params, lam_adv.value, at,
                                                     batch, rng_batch)
    cnt[T_ADVERSARY] += 1
    _adam(adv.params, at.grad, adv.m, adv.v, cnt[T_ADVERSARY], cfg.lr_adversary * sched_step,
          cfg.beta1, cfg.beta2, cfg.eps, sched_grad)
    if not cfg.mixture:
        r = s * pb.R.shape[1] + a
        _adversary_multiplier_update(cfg, lam_adv, at.excess, at.deviation[r], radius[r],
                                     batch_excess, batch_hinge, sched_grad, sched_step, cnt)


@_phase
def _critic_update(cfg, critic, X, ct, states, value, cost_to_go, L, cnt):
    """Phase 4: one Adam step of the ``critic`` on the mean squared error of its outputs
    at the episode's ``states`` against their ``value`` V_t and ``cost_to_go`` C_t."""
    S, F = X.shape
    K, H = ct.out.shape[1] - 1, cfg.hidden
    Gc, Vc, grad, pre, hidden = ct.out_grad, ct.out, ct.grad, ct.pre, ct.hidden
    for s in range(S):
        for j in range(1 + K):
            Gc[s, j] = 0.0
    scale = 2.0 / (L * (1 + K))
    for t in range(L):
        s = states[t]
        Gc[s, 0] += scale * (Vc[s, 0] - value[t])
        for k in range(K):
            Gc[s, 1 + k] += scale * (Vc[s, 1 + k] - cost_to_go[t, k])
    for i in range(grad.shape[0]):
        grad[i] = 0.0
    psi = critic.params
    W2c = np.ascontiguousarray(psi[F * H + H:F * H + H + H * (1 + K)]).reshape(H, 1 + K)
    for s in range(S):
        nz = False
        for j in range(1 + K):
            if Gc[s, j] != 0.0:
                nz = True
        if nz:
            _backward_row(X[s], pre[s], hidden[s], W2c, Gc[s], F, H, 1 + K, grad)
    cnt[T_CRITIC] += 1
    _adam(psi, grad, critic.m, critic.v, cnt[T_CRITIC], cfg.lr_critic, cfg.beta1, cfg.beta2,
          cfg.eps, 1.0)


@_phase
def _record(rec, i, L, ret, mean_dev, inside, cost_sum, lam, lam_adv, steps):
    """Phase 5: row ``i`` of the chunk's records."""
    rec.length[i] = L
    rec.ret[i] = ret
    for k in range(cost_sum.shape[0]):
        rec.cost[i, k] = cost_sum[k]
        rec.lam[i, k] = lam[k]
    rec.lam_adv[i] = lam_adv[0]
    rec.dev[i] = mean_dev
    rec.inside[i] = inside
    rec.steps[i] = steps


# --------------------------------------------------------------------------- the loop
@_jit
def run_chunk(n_episodes, cfg, rng_ep, rng_batch, pb, kcdf_fixed, st, rec):
    """Run up to ``n_episodes`` episodes (fewer if the step budget ends); returns the count.

    ``cfg`` the :class:`~rcmdp_exact.learners.config.LoopConfig`, ``pb`` the problem's
    arrays (:class:`~rcmdp_exact.learners.dynamics.Problem`), ``kcdf_fixed`` the
    cumulative kernel of fixed dynamics, ``st`` the :class:`~rcmdp_exact.learners.config.
    LoopState` (every array updated in place, counters included), ``rec`` the
    :class:`~rcmdp_exact.learners.config.Records` (episode i of this call goes to row i).
    Each episode runs the phases of the module notes, one function each.
    """
    ws = _workspace(cfg, pb, st)
    pt, ct, kt, at, ep, batch = (ws.policy, ws.critic, ws.kernel, ws.adversary, ws.episode,
                                 ws.batch)
    cnt, policy, mult, adv, lam_adv = st.cnt, st.policy, st.lam, st.adversary, st.lam_adv
    lam, X, d, gamma = mult.value, pb.Xpol, pb.d, cfg.gamma
    K = d.shape[0]
    if cfg.dynamics == FIXED:
        kcdf = kt.cdf
        for r in range(kcdf_fixed.shape[0]):
            for o in range(kcdf_fixed.shape[1]):
                kcdf[r, o] = kcdf_fixed[r, o]
    states, actions, outcomes, rw, cs = (ep.states, ep.actions, ep.outcomes, ep.rewards,
                                         ep.costs)
    value, cost_to_go, Cprev, excess = ep.value, ep.cost_to_go, ep.cost_next, ep.excess
    signal = ep.cost_first if cfg.multiplier_episode else Cprev  # C_0 or C_t
    # the arrays of the per-step phases, read once
    prob, entropy, pre, hidden, W2 = pt.prob, pt.entropy, pt.pre, pt.hidden, pt.W2
    logit_grad, grad, Pk, Vc = pt.logit_grad, pt.grad, kt.prob, ct.out
    done = 0
    for _ in range(n_episodes):
        if cfg.step_budget > 0 and cnt[STEPS] >= cfg.step_budget:
            break
        cnt[EPISODE] += 1
        n_ep = cnt[EPISODE]
        sched_grad, sched_step = _schedule(cfg, n_ep)
        # 1. tables at the episode's parameters
        _policy_tables(cfg, policy.params, X, pt)
        if cfg.train_critic or cfg.dynamics == WORST:
            _critic_tables(cfg, st.critic.params, X, ct)
        if cfg.dynamics == WORST:
            _worst_case_kernel(cfg, pb.rows, pb.R, pb.C, pb.terminal, lam, ct.out, kt)
        mean_dev = np.nan
        inside = np.nan
        if cfg.dynamics == ADVERSARY:
            mean_dev, inside = _adversary_kernel(cfg, adv.params, pb.Xadv, pb.kprob, pb.nxt,
                                                 pb.nom_state, pb.live, pb.rows.radius, kt,
                                                 at)
        # 2. rollout
        L, ret = _rollout(cfg, pb.p0cdf, pb.terminal, pb.R, pb.C, pb.nxt, pt.cdf, kt.cdf, ep,
                          rng_ep, cnt)
        # 3. backward pass, t = L-1..0: V_t, C_t and the Lagrangian, then every step's
        #    updates of the policy, the multipliers and the adversary
        if cfg.multiplier_episode:
            _episode_cost(gamma, cs, L, ep.cost_first)
        adv_on = cfg.dynamics == ADVERSARY and n_ep > cfg.adversary_start
        # the multipliers stay at their start value for multiplier_start episodes
        learn_lam = cfg.learn_multiplier and n_ep > cfg.multiplier_start
        V = 0.0
        for k in range(K):
            Cprev[k] = 0.0
        for t in range(L - 1, -1, -1):
            s = states[t]
            a = actions[t]
            lag_next = V
            for k in range(K):
                lag_next -= lam[k] * Cprev[k]
            V = rw[t] + gamma * V
            for k in range(K):
                Cprev[k] = cs[t, k] + gamma * Cprev[k]
            value[t] = V
            for k in range(K):
                cost_to_go[t, k] = Cprev[k]
            lag = V
            for k in range(K):
                lag -= lam[k] * Cprev[k]
            wt = 1.0
            if cfg.discount_weight:
                wt = gamma ** float(t)
            _policy_step(cfg, policy, prob, entropy, pre, hidden, W2, logit_grad, grad, X[s],
                         s, a, lag, wt, sched_grad, sched_step, cnt)
            if learn_lam:
                _multiplier_update(cfg, mult, signal, d, excess, sched_grad, sched_step, cnt)
            if adv_on:
                _adversary_step(cfg, pb, lam, adv, lam_adv, Pk, Vc, at, batch, s, a,
                                outcomes[t], lag, lag_next, wt, sched_grad, sched_step,
                                rng_batch, cnt)
        # 4. critic
        if cfg.train_critic and L > 0:
            _critic_update(cfg, st.critic, X, ct, states, value, cost_to_go, L, cnt)
        # 5. records
        _record(rec, done, L, ret, mean_dev, inside, ep.cost_sum, lam, lam_adv.value,
                cnt[STEPS])
        done += 1
    return done

r"""The paper's sampled gradient estimators: their exact expectation and Monte Carlo.

The estimators estimate the gradients of the Lagrangian
:math:`L = p_0^\top V - \lambda^\top (p_0^\top C - d)` of
:mod:`rcmdp_exact.theory.gradients` (Theorems 1 and 2) from sampled episodes.

The sampled estimators of the paper and their corrections are listed in
:data:`ESTIMATORS`; :func:`estimator_expectation` gives the exact expected value of
each and :func:`monte_carlo_estimator` samples it; :func:`relative_error` and
:func:`cosine_similarity` compare an estimate with the exact gradient.
``docs/gradients.md`` derives every formula and explains where the printed forms are
biased.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import (
    ImproperPolicyError,
    check_choice,
    check_int,
    check_limit,
    check_shape,
    rng_from,
)
from .._progress import progress_default, tqdm
from .._result import Result
from ..core.evaluation import PolicySystem
from ..core.model import TabularCMDP
from ..core.model_checks import ModelError
from ..core.sampling import kernel_outcomes, rollout_arrays
from ._context import GradientContext, check_terminates, outcome_signal, solve_lagrangian
from .gradients import adversary_gradient, policy_gradient

__all__ = [
    "ESTIMATORS",
    "cosine_similarity",
    "estimator_expectation",
    "monte_carlo_estimator",
    "relative_error",
    "resolve_horizon",
]


# =========================================================================== estimators
@dataclass(frozen=True)
class _Estimator:
    """A sampled gradient estimator of the paper, or its correction.

    ``side`` is "policy" or "adversary"; ``weight`` is the per-step weight ("one" or
    "gamma^t"); ``signal`` is what multiplies the score; ``exact`` marks the analytic
    gradients of the two theorems (no sampling).
    """

    name: str
    side: str
    weight: str
    signal: str
    exact: bool
    description: str


#: The estimators judged by :func:`estimator_expectation` and
#: :func:`~rcmdp_exact.theory.verify.verify_theorems`.
ESTIMATORS: dict[str, _Estimator] = {
    e.name: e
    for e in (
        _Estimator("theorem1", "policy", "-", "Q_lam", True,
                  "Theorem 1: sum_s d_gamma(s) sum_a grad pi(a|s) Q_lam(s,a) (exact)"),
        _Estimator("algorithm1", "policy", "one", "return-to-go", False,
                  "Algorithm 1 as printed: sum_{t<T} (V_t - lam.C_t) grad log pi(a_t|s_t), "
                  "no gamma^t"),
        _Estimator("algorithm1_corrected", "policy", "gamma^t", "return-to-go", False,
                  "sum_{t<T} gamma^t (V_t - lam.C_t) grad log pi(a_t|s_t)"),
        _Estimator("theorem2", "adversary", "-", "R_lam + gamma V_lam(s')", True,
                  "Theorem 2, correct: sum_s d_gamma(s) sum_a pi sum_o grad pi_adv "
                  "(R_lam(s,a,s') + gamma V_lam(s')) (exact)"),
        _Estimator("theorem2_printed", "adversary", "one", "V_lam(s')", False,
                  "Theorem 2 as printed: sum_{k<T} V_lam(s_{k+1}) grad log pi_adv, no "
                  "discount, no immediate reward"),
        _Estimator("theorem2_discounted", "adversary", "gamma^t", "gamma V_lam(s')", False,
                  "sum_{k<T} gamma^{k+1} V_lam(s_{k+1}) grad log pi_adv: discount restored, "
                  "immediate reward still missing"),
        _Estimator("theorem2_corrected", "adversary", "gamma^t", "R_lam + gamma V_lam(s')", False,
                  "sum_{k<T} gamma^k (R_lam(s_k,a_k,s_{k+1}) + gamma V_lam(s_{k+1})) "
                  "grad log pi_adv"),
    )
}


def _estimator(name: str) -> _Estimator:
    try:
        return ESTIMATORS[name]
    except KeyError:
        raise ModelError(
            f"unknown estimator {name!r}; choose one of {', '.join(ESTIMATORS)}"
        ) from None



# =========================================================================== estimators, exactly
def resolve_horizon(model: TabularCMDP, horizon) -> int | None:
    """An episode length: "model" (the model's horizon), None (unbounded) or an int >= 1."""
    if isinstance(horizon, str):
        return model.horizon if check_choice(horizon, "horizon", ("model",)) else None
    return None if horizon is None else check_int(
        horizon, "horizon", 1, hint=" (or 'model', or None for unbounded episodes)")


def _visits(ctx: GradientContext, P_pi: np.ndarray, T: int | None, discounted: bool, what: str):
    """Weighted state visits before termination.

    Returns ``nu`` (T, S) with :math:`\\nu_t(s) = w_t P(s_t = s, \\text{not ended})`
    (``w_t`` = 1 or :math:`\\gamma^t`) when T is finite, or their sum (S,) when T is None.
    """
    nt = ctx.nt
    p0 = ctx.model.p0 * nt
    w = ctx.gamma if discounted else 1.0
    if T is None:
        if w == 1.0:
            check_terminates(ctx.model, P_pi, what)
        try:
            n = PolicySystem(P_pi, w, nt).solve(p0, transpose=True)
        except np.linalg.LinAlgError:
            raise ImproperPolicyError(
                f"{what}: the visit sums diverge; give a finite horizon T") from None
        return n
    nu = np.empty((T, ctx.S))
    cur = p0.copy()
    for t in range(T):
        nu[t] = cur
        cur = w * (cur @ P_pi) * nt
    return nu


def estimator_expectation(model: TabularCMDP, params, estimator: str, lam=None,
                          parametrisation="softmax", adversary_params=None,
                          adversary_parametrisation="softmax", horizon="model") -> np.ndarray:
    """The exact expected value of a sampled gradient estimator (see :data:`ESTIMATORS`).

    Episodes start from p0, follow the policy, take transitions from the adversary when
    ``adversary_params`` is given (else from the model) and end at a terminal state or
    after T steps.  With :math:`G_t` the discounted Lagrangian return-to-go within the
    episode, :math:`\\nu_t(s) = P(s_t = s, \\text{episode not ended})` and
    :math:`Q^{(h)}` the h-step discounted Lagrangian Q-function,

    * ``algorithm1`` (printed): :math:`E \\sum_{t<T} G_t \\nabla\\log\\pi(a_t|s_t) =
      \\sum_{t<T} \\sum_s \\nu_t(s) \\sum_a \\nabla\\pi(a|s)\\, Q^{(T-t)}(s, a)`;
    * ``algorithm1_corrected``: the same with :math:`\\gamma^t \\nu_t`; as
      :math:`T \\to \\infty` it is Theorem 1;
    * ``theorem2_printed``: :math:`\\sum_s n_T(s) \\sum_a \\pi(a|s) \\sum_o \\nabla
      \\pi_{adv}(o|s,a) V_\\lambda(s'_o)` with :math:`n_T = \\sum_{k<T} \\nu_k`;
    * ``theorem2_discounted``: weights :math:`\\sum_{k<T} \\gamma^k \\nu_k`, signal
      :math:`\\gamma V_\\lambda(s'_o)`;
    * ``theorem2_corrected``: weights :math:`\\sum_{k<T} \\gamma^k \\nu_k`, signal
      :math:`R_\\lambda(s, a, s'_o) + \\gamma V_\\lambda(s'_o)`;
    * ``theorem1`` / ``theorem2``: :func:`~rcmdp_exact.theory.gradients.policy_gradient` /
      :func:`~rcmdp_exact.theory.gradients.adversary_gradient`.

    :math:`V_\\lambda` in the adversary estimators is the exact (infinite-horizon,
    discounted) Lagrangian value, as the theorem states.

    Parameters
    ----------
    horizon : "model", None or int
        Episode length T: the model's horizon by default; None for unbounded episodes
        (the printed, undiscounted forms then need every reachable state to reach a
        terminal state).

    Returns
    -------
    numpy.ndarray
        Shaped like ``params`` (policy estimators) or ``adversary_params``.
    """
    est = _estimator(estimator)
    if est.name == "theorem1":
        return policy_gradient(model, params, lam, parametrisation, adversary_params,
                               adversary_parametrisation)
    if est.name == "theorem2":
        return adversary_gradient(model, params, adversary_params, lam, parametrisation,
                                  adversary_parametrisation)
    T = resolve_horizon(model, horizon)
    ctx = GradientContext(model, params, lam, parametrisation, adversary_params,
                          adversary_parametrisation, need_adversary=(est.side == "adversary"))
    pi = ctx.policy.probs(ctx.theta)
    P = ctx.kernel()
    P_pi = np.einsum("sa,sat->st", pi, P)
    discounted = est.weight == "gamma^t"
    what = f"the estimator {est.name!r}"
    r_lam = np.einsum("sat,sat->sa", P, ctx.R_lam) * ctx.nt[:, None]
    if est.side == "policy":
        if T is None:
            if ctx.gamma == 1.0:
                check_terminates(model, P_pi, what)
            _, V = solve_lagrangian(ctx, pi, P)
            G = _visits(ctx, P_pi, None, discounted, what)[:, None] * (r_lam + ctx.gamma * P @ V)
        else:
            nu = _visits(ctx, P_pi, T, discounted, what)
            G = np.zeros((ctx.S, ctx.A))
            V = np.zeros(ctx.S)
            # Q^{(h)} for h = 1..T pairs with t = T - h
            for h in range(1, T + 1):
                Q = r_lam + ctx.gamma * (P @ V)
                G += nu[T - h][:, None] * Q
                V = np.einsum("sa,sa->s", pi, Q)
        G[~ctx.nt] = 0.0
        return ctx.policy.vjp(ctx.theta, G).reshape(ctx.params_shape)
    # adversary estimators
    if ctx.gamma == 1.0:
        check_terminates(model, P_pi, what)
    _, V = solve_lagrangian(ctx, pi, P)
    n = _visits(ctx, P_pi, T, discounted, what)
    if T is not None:
        n = n.sum(axis=0)
    U = outcome_signal(ctx, V, est.signal)
    G = n[:, None, None] * pi[:, :, None] * U
    G[~ctx.nt] = 0.0
    adv = ctx.adversary
    return adv.vjp(ctx.phi, G.reshape(adv.n_rows, adv.n_categories)).reshape(ctx.adv_shape)


# =========================================================================== Monte Carlo
def monte_carlo_estimator(model: TabularCMDP, params, estimator: str, n_episodes: int,
                          seed=None, lam=None, parametrisation="softmax",
                          adversary_params=None, adversary_parametrisation="softmax",
                          horizon="model", directions=None, batch_size: int = 2000,
                          progress: bool | None = None) -> Result:
    """Sample a gradient estimator over independent episodes (seeded).

    Each episode gives one sample :math:`X_i = \\sum_{t<T} w_t\\, U_t\\, \\nabla \\log
    p(c_t \\mid r_t)` (the policy's score for the policy estimators, the adversary's for
    the adversary ones); the result is their mean with its standard error.  Episodes
    come from :func:`rcmdp_exact.core.sampling.rollout` (over the adversary's outcomes when
    ``adversary_params`` is given).

    Parameters
    ----------
    n_episodes : int
    seed : int or numpy.random.Generator
    horizon : "model" or int
        A finite episode length is needed.
    directions : array (m, n_params), optional
        Fixed directions on which the samples are also projected (for a confidence
        interval on a few numbers instead of every coordinate).
    batch_size : int
        Episodes simulated at once (vectorised over episodes).

    Returns
    -------
    Result
        ``mean`` and ``sem`` (shaped like the parameters), ``n_episodes``,
        ``horizon``, ``estimator``; with ``directions`` also ``projection_mean`` and
        ``projection_sem`` (m,).
    """
    est = _estimator(estimator)
    if est.exact:
        raise ModelError(
            f"{est.name!r} is an exact formula, not a sampled estimator; sample one of "
            f"{', '.join(n for n, e in ESTIMATORS.items() if not e.exact)}"
        )
    T = resolve_horizon(model, horizon)
    check_int(T, "horizon", 1, hint=" (Monte Carlo needs a finite episode length: pass "
              "horizon=T)" if T is None else "")
    check_limit(n_episodes, "n_episodes", "mc_episodes", 2)
    check_int(batch_size, "batch_size", 1)
    ctx = GradientContext(model, params, lam, parametrisation, adversary_params,
                          adversary_parametrisation, need_adversary=(est.side == "adversary"))
    rng = rng_from(seed)
    A = ctx.A
    pi = ctx.policy.probs(ctx.theta)
    if ctx.adversary is not None:
        outcomes = ctx.adversary.outcomes
        q_out = ctx.adversary.outcome_probs(ctx.phi)
    else:
        outcomes, q_out = kernel_outcomes(model)
    if est.side == "policy":
        par, theta = ctx.policy, ctx.theta
        V = None
    else:
        par, theta = ctx.adversary, ctx.phi
        _, V = solve_lagrangian(ctx, pi, ctx.kernel())
    score = par.score(theta).reshape(par.n_rows * par.n_categories, par.n_params)
    RC = par.n_rows * par.n_categories
    D = None if directions is None else np.asarray(directions, dtype=np.float64)
    if D is not None and (D.ndim != 2 or D.shape[1] != par.n_params):
        check_shape(D, (max(len(D), 1), par.n_params), "directions", ("m", "n_params"))
    w = ctx.gamma ** np.arange(T) if est.weight == "gamma^t" else np.ones(T)
    total = np.zeros(par.n_params)
    total_sq = np.zeros(par.n_params)
    ptotal = None if D is None else np.zeros(D.shape[0])
    ptotal_sq = None if D is None else np.zeros(D.shape[0])
    done = 0
    bar = tqdm(total=int(n_episodes), disable=not progress_default(progress),
               desc=f"sampling {est.name}", leave=False)
    while done < n_episodes:
        N = min(batch_size, int(n_episodes) - done)
        ep = rollout_arrays(model.p0, model.terminal, pi, outcomes, q_out, N, T, rng)
        st, at, ot, nxt, alive = (x.T for x in ep[:5])  # (T, N)
        rew = np.where(alive, ctx.R_lam[st, at, nxt], 0.0)
        if est.side == "policy":
            G = np.zeros(N)
            U = np.empty((T, N))
            for t in range(T - 1, -1, -1):
                G = rew[t] + ctx.gamma * G
                U[t] = G
            rows, cats = st, at
        else:
            if est.signal == "V_lam(s')":
                U = V[nxt]
            elif est.signal == "gamma V_lam(s')":
                U = ctx.gamma * V[nxt]
            else:
                U = rew + ctx.gamma * V[nxt]
            rows, cats = st * A + at, ot
        coef = (w[:, None] * U) * alive
        flat = (np.arange(N)[None, :] * RC + rows * par.n_categories + cats)
        W = np.bincount(flat[alive], weights=coef[alive], minlength=N * RC).reshape(N, RC)
        X = W @ score
        total += X.sum(axis=0)
        total_sq += (X * X).sum(axis=0)
        if D is not None:
            Y = X @ D.T
            ptotal += Y.sum(axis=0)
            ptotal_sq += (Y * Y).sum(axis=0)
        done += N
        bar.update(N)
    bar.close()
    n = float(n_episodes)
    mean = total / n
    var = np.maximum(total_sq / n - mean**2, 0.0) * n / (n - 1.0)
    out_shape = ctx.params_shape if est.side == "policy" else ctx.adv_shape
    res = Result(
        mean=mean.reshape(out_shape),
        sem=np.sqrt(var / n).reshape(out_shape),
        n_episodes=int(n_episodes),
        horizon=T,
        estimator=est.name,
    )
    if D is not None:
        pm = ptotal / n
        pv = np.maximum(ptotal_sq / n - pm**2, 0.0) * n / (n - 1.0)
        res.projection_mean = pm
        res.projection_sem = np.sqrt(pv / n)
    return res


# =========================================================================== comparisons
def relative_error(estimate, reference) -> float:
    """:math:`\\lVert x - y\\rVert_2 / \\lVert y\\rVert_2` (inf if y = 0 and x != y)."""
    x = np.ravel(np.asarray(estimate, dtype=np.float64))
    y = np.ravel(np.asarray(reference, dtype=np.float64))
    num = float(np.linalg.norm(x - y))
    den = float(np.linalg.norm(y))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def cosine_similarity(a, b) -> float:
    """:math:`a \\cdot b / (\\lVert a\\rVert \\lVert b\\rVert)` (nan if either is zero)."""
    x = np.ravel(np.asarray(a, dtype=np.float64))
    y = np.ravel(np.asarray(b, dtype=np.float64))
    den = float(np.linalg.norm(x) * np.linalg.norm(y))
    return math.nan if den == 0.0 else float(x @ y) / den

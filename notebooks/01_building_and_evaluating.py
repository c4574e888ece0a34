# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 1. Building an RCMDP and evaluating policies exactly
#
# A robust constrained MDP (RCMDP) is a constrained MDP whose transition kernel is only
# known to lie in a set.  This notebook builds one twice, by hand and from a domain of
# the paper, and evaluates policies on it exactly:
#
# 1. a three-state CMDP written by hand, and what happens when its input is wrong;
# 2. an L1 uncertainty set around it, which makes it an RCMDP;
# 3. exact evaluation of a policy (value, cost, Lagrangian, Q, occupancy) on the
#    nominal model and on the worst model of the set, each number checked by an
#    independent computation (a dense solve, Monte Carlo, brute force over kernels);
# 4. a paper domain (Safe Navigation 1), its test metric and test suite, and its
#    uncertainty set estimated from rollouts as in the paper;
# 5. saving a model, swapping its kernel, and sampling it through Gymnasium.
#
# The paper is *Robust Lagrangian and Adversarial Policy Gradient for Robust Constrained
# MDPs* (Bossens, 2024).  Every assertion below compares a number of the toolkit with one
# computed another way; the notebook stops at the first disagreement.

# %%
import matplotlib.pyplot as plt
import numpy as np

import rcmdp_exact as rx
from rcmdp_exact import domains, evaluate, evaluate_finite_horizon
from rcmdp_exact.core.evaluation import evaluate_finite_horizon_batch
from rcmdp_exact.core.sampling import rollout

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1.1 A constrained MDP in three states
#
# A CMDP is a tuple $(\mathcal S, \mathcal A, P, r, c, d, \gamma, p_0)$.  The toolkit stores
# it as one immutable `TabularCMDP` with the fixed axis order $(s, a, s')$:
#
# | field | shape | meaning |
# |---|---|---|
# | `P` | (S, A, S) | $P(s' \mid s, a)$ |
# | `R` | (S, A, S) or (S, A) | reward of a transition (it may depend on $s'$) |
# | `C` | (S, A, S, K) or (S, A, K) | the $K$ constraint costs of a transition |
# | `d` | (K,) | budgets of the discounted expected costs |
# | `gamma`, `p0`, `horizon`, `terminal` | | discount, start distribution, test horizon $T$, absorbing states |
#
# Our example: from **start** the agent can *walk* around (it reaches the **goal** with
# probability 0.4 per step, otherwise stays) or *cross* onto a **bridge**.  On the bridge,
# *cross* reaches the goal with probability 0.9 (with 0.1 it is sent back to start) and
# *walk* goes back to start.  Every step earns $-1$; **entering the bridge** costs one unit
# of the constraint, so the cost depends on the next state $s'$.  The budget is $d = 0.5$
# (discounted), $\gamma = 0.95$, and the goal is terminal (absorbing; nothing is earned
# there).

# %%
S, A = 3, 2
START, BRIDGE, GOAL = 0, 1, 2
WALK, CROSS = 0, 1

P = np.zeros((S, A, S))
P[START, WALK] = [0.6, 0.0, 0.4]
P[START, CROSS] = [0.0, 1.0, 0.0]
P[BRIDGE, WALK] = [1.0, 0.0, 0.0]
P[BRIDGE, CROSS] = [0.1, 0.0, 0.9]
P[GOAL, :, GOAL] = 1.0                       # terminal states must be absorbing

R = np.full((S, A), -1.0)                    # r(s, a): -1 per step
C = np.zeros((S, A, S, 1))                   # C(s, a, s', k)
C[:, :, BRIDGE, 0] = 1.0                     # cost of entering the bridge

model = rx.TabularCMDP(
    P, R, C, d=[0.5], gamma=0.95, p0=START, horizon=20, terminal=[GOAL],
    state_labels=["start", "bridge", "goal"], action_labels=["walk", "cross"],
    name="bridge",
)
model

# %% [markdown]
# The expected one-step quantities are derived, never stored twice:
# $r(s,a) = \sum_{s'} P(s' \mid s,a) R(s,a,s')$ and
# $c_k(s,a) = \sum_{s'} P(s' \mid s,a) C(s,a,s',k)$, both zero in terminal states.

# %%
print("r(s, a) =\n", model.r)
print("c(s, a, 0) =\n", model.c[:, :, 0])
assert np.allclose(model.c[:, :, 0], [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])

# %% [markdown]
# ### Wrong input is refused where it enters
#
# Every check runs when the model is built and raises an `rcmdp_exact.InputError` (a
# `ValueError`; `ModelError` is the same class) whose message names the argument, the
# entry and the value, and says how to fix it.  Subclasses a caller can branch on:
# `OptionError` (an unknown option name), `ImproperPolicyError` ($\gamma = 1$ and a
# policy that never terminates), `NotFiniteError` (sums that overflow float64) and
# `OutputPathError` (a file that exists, a missing folder).

# %%
bad = P.copy()
bad[BRIDGE, CROSS] = [0.1, 0.0, 0.8]         # sums to 0.9
try:
    rx.TabularCMDP(bad, R, C, d=[0.5], gamma=0.95, terminal=[GOAL])
except rx.InputError as err:
    print(type(err).__name__, "->", err)

try:
    domains.paper_domain("nav3")
except rx.OptionError as err:
    print(type(err).__name__, "->", err)

# %% [markdown]
# A kernel normalised in float32 misses 1 by about $10^{-7}$ per row, far more than the
# float64 tolerance ($10^{-12}\,S$).  `normalize=True` renormalises rows that miss 1 by at
# most $10^{-4}$ and refuses larger misses.

# %%
P32 = P.astype(np.float32)
P32 = P32 / P32.sum(axis=-1, keepdims=True) * np.float32(1.0000001)
print("largest row-sum error:", np.abs(P32.astype(float).sum(-1) - 1).max())
try:
    rx.TabularCMDP(P32, R, C, d=[0.5], gamma=0.95, terminal=[GOAL])
except rx.InputError as err:
    print("refused:", str(err)[:90], "...")
fixed = rx.TabularCMDP(P32, R, C, d=[0.5], gamma=0.95, terminal=[GOAL], normalize=True)
assert np.allclose(fixed.P.sum(-1), 1, atol=1e-15) and np.allclose(fixed.P, P, atol=1e-6)

# %% [markdown]
# ## 1.2 An uncertainty set makes it an RCMDP
#
# The paper's uncertainty sets are **(s, a)-rectangular L1 balls**: each row of the kernel
# may move independently within an L1 distance $\alpha(s, a)$ of the nominal row,
#
# $$
# \mathcal P = \bigl\{P : \lVert P(\cdot \mid s,a) - \hat P(\cdot \mid s,a)\rVert_1 \le \alpha(s,a)
# \ \ \forall (s, a)\bigr\}.
# $$
#
# `l1_ball(model, alpha, support)` builds one around a model's own kernel;
# `support="nominal"` lets a row put mass only on the next states it already reaches, so
# here the two uncertain rows ($P(\cdot \mid \text{start}, \text{walk})$ and
# $P(\cdot \mid \text{bridge}, \text{cross})$) are intervals and the deterministic rows
# stay fixed.  The RCMDP is the pair (model, uset).

# %%
alpha = 0.3
uset = rx.l1_ball(model, alpha, support="nominal")
print(uset)
print("nominal kernel inside:", bool(uset.contains(model.P).all()))

# %% [markdown]
# ## 1.3 Exact evaluation of a policy
#
# For a stochastic policy $\pi(a \mid s)$ (an (S, A) array) let
# $P_\pi(s, s') = \sum_a \pi(a \mid s) P(s' \mid s, a)$ and $r_\pi(s) = \sum_a \pi(a\mid s) r(s,a)$
# (likewise $c_\pi$).  The discounted value and cost of the paper's Section 2 solve the
# policy Bellman equations, one linear system with several right-hand sides:
#
# $$
# V = (I - \gamma P_\pi)^{-1} r_\pi, \qquad C_k = (I - \gamma P_\pi)^{-1} c_{\pi,k}.
# $$
#
# From them: $Q(s,a) = r(s,a) + \gamma \sum_{s'} P(s' \mid s,a) V(s')$, the discounted
# occupancy $d_\gamma^\top = p_0^\top (I - \gamma P_\pi)^{-1}$, and with a multiplier
# $\lambda \ge 0$ the paper's Lagrangian (Eq. "Lagrange")
# $L(\lambda, \pi) = V_{\pi}(s_0) - \lambda \big(C_{\pi}(s_0) - d\big)$.
# `evaluate` computes all of this from one sparse LU factorisation of $I - \gamma P_\pi$.

# %%
pi = np.array([[0.5, 0.5],      # start: walk or cross with equal probability
               [0.2, 0.8],      # bridge: mostly cross
               [0.5, 0.5]])     # goal: irrelevant (terminal)
lam = 2.0
res = evaluate(model, pi, lam=lam)
print("V          =", res.v)
print("C          =", res.c[:, 0])
print("Q =\n", res.q)
print("occupancy  =", res.occupancy)
print(f"value p0.V = {res.value:.6f}, costs p0.C = {res.costs}, L = {res.lagrangian_p0:.6f}")

# %% [markdown]
# Three checks computed without `evaluate`: a dense solve of the Bellman equations,
# $V(s) = \sum_a \pi(a \mid s) Q(s, a)$, and $p_0^\top V = \sum_s d_\gamma(s) r_\pi(s)$ with
# $\sum_s d_\gamma(s) = 1/(1-\gamma)$ (the goal keeps collecting discounted visits after
# the episode ends, but earns nothing).

# %%
P_pi = np.einsum("sa,sat->st", pi, model.P)
r_pi = (pi * model.r).sum(axis=1)
c_pi = (pi * model.c[:, :, 0]).sum(axis=1)
V_dense, C_dense = np.linalg.solve(np.eye(S) - model.gamma * P_pi, np.c_[r_pi, c_pi]).T
assert np.allclose(V_dense, res.v, atol=1e-12) and np.allclose(C_dense, res.c[:, 0], atol=1e-12)
assert np.allclose((pi * res.q).sum(axis=1), res.v, atol=1e-12)
assert np.isclose(res.occupancy @ r_pi, res.value, atol=1e-12)
assert np.isclose(res.occupancy.sum(), 1 / (1 - model.gamma))
assert np.isclose(res.lagrangian_p0, res.value - lam * (res.costs[0] - model.d[0]))
print("dense solve, V = sum_a pi Q, occupancy identities: all agree to 1e-12")

# %% [markdown]
# ### A Monte Carlo check
#
# The exact value is an expectation, so sampled episodes must agree with it within their
# confidence interval.  `rcmdp_exact.core.sampling.rollout` is the package's one sampler: it
# simulates 20,000 seeded episodes at once (here for up to 300 steps, after which
# $\gamma^{300} < 2\cdot 10^{-7}$), and we accumulate $\sum_t \gamma^t R_t$ and
# $\sum_t \gamma^t C_t$.  A 99% interval is $\bar X \pm 2.576\, s/\sqrt n$.

# %%
ep = rollout(model, pi, 20_000, seed=0, horizon=300)
disc = model.gamma ** np.arange(ep.states.shape[1]) * ep.alive
ret = (disc * model.R[ep.states, ep.actions, ep.next_states]).sum(axis=1)
cost = (disc * model.C[ep.states, ep.actions, ep.next_states, 0]).sum(axis=1)
for name, x, exact in [("value", ret, res.value), ("cost", cost, res.costs[0])]:
    mean, half = x.mean(), 2.576 * x.std(ddof=1) / np.sqrt(x.size)
    print(f"{name:5s}: exact {exact:.4f}   Monte Carlo {mean:.4f} +- {half:.4f} (99%)")
    assert abs(mean - exact) <= half

# %% [markdown]
# ### The worst case over the set
#
# The robust value of $\pi$ is $\min_{P \in \mathcal P} V_{\pi,P}(s_0)$ and its worst-case
# cost $\max_{P \in \mathcal P} C_{\pi,P}(s_0)$, each with its own adversary.
# `robust_evaluate` finds the worst kernel $P^+$ by the adversary's policy iteration
# (notebook 2 explains the inner problem).  Its status is a string: `"converged"` or
# `"not_converged"` (never silent: a warning says why).
#
# The independent check: a rectangular set's worst case is attained at a vertex of each
# row's set.  Our two uncertain rows are intervals with two end points each, so there are
# only $2 \times 2 = 4$ candidate kernels: `rx.extreme_kernels` lists every combination
# of the rows' vertices (found by enumerating active constraints, not by the sort).  We
# evaluate each by a dense solve and take the minimum value and the maximum cost.

# %%
rob = rx.robust_evaluate(model, pi, uset, objective="value", per_constraint=True)
print(f"status {rob.status}: robust value {rob.value:.6f}, worst-case cost "
      f"{rob.costs_worst[0]:.6f}  (nominal: {res.value:.6f}, {res.costs[0]:.6f})")

kernels = rx.extreme_kernels(uset, model)
print("extreme kernels:", len(kernels))
assert len(kernels) == 4
values, costs = [], []
for Pk in kernels:
    Pk_pi = np.einsum("sa,sat->st", pi, Pk)
    rk = (pi * np.einsum("sat,sat->sa", Pk, np.broadcast_to(R[:, :, None], P.shape))).sum(1)
    ck = (pi * np.einsum("sat,sat->sa", Pk, C[..., 0])).sum(1)
    rk[GOAL] = ck[GOAL] = 0.0
    v, c = np.linalg.solve(np.eye(S) - model.gamma * Pk_pi, np.c_[rk, ck]).T
    values.append(v[START])
    costs.append(c[START])
print(f"brute force over 4 kernels: min value {min(values):.6f}, max cost {max(costs):.6f}")
assert np.isclose(rob.value, min(values), atol=1e-10)
assert np.isclose(rob.costs_worst[0], max(costs), atol=1e-10)

# %% [markdown]
# Because the model is tiny we can scan the probability of crossing from the start and
# see the trade-off the constrained problem must settle: crossing is faster (higher value)
# but enters the bridge (higher cost), and the set makes both worse.

# %%
qs = np.linspace(0, 1, 41)
curves = {"nominal V": [], "robust V": [], "nominal C": [], "worst-case C": []}
for q in qs:
    pol = np.array([[1 - q, q], [0.0, 1.0], [0.5, 0.5]])
    nom = evaluate(model, pol)
    rb = rx.robust_evaluate(model, pol, uset, objective="value", per_constraint=True)
    curves["nominal V"].append(nom.value)
    curves["robust V"].append(rb.value)
    curves["nominal C"].append(nom.costs[0])
    curves["worst-case C"].append(rb.costs_worst[0])

fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
ax[0].plot(qs, curves["nominal V"], label="nominal")
ax[0].plot(qs, curves["robust V"], "--", label=rf"worst case, $\alpha$ = {alpha}")
ax[0].set(xlabel="P(cross | start)", ylabel=r"$V_\pi(s_0)$", title="value")
ax[1].plot(qs, curves["nominal C"], color="C3", label="nominal")
ax[1].plot(qs, curves["worst-case C"], "--", color="C3", label="worst case")
ax[1].axhline(model.d[0], color="k", ls=":", label="budget d")
ax[1].set(xlabel="P(cross | start)", ylabel=r"$C_\pi(s_0)$", title="constraint cost")
for a in ax:
    a.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 1.4 A paper domain: Safe Navigation 1
#
# `rcmdp_exact.domains` builds the three domains of the paper with the numbers of its
# protocol (the documentation's protocol page, `docs/protocol.md`, lists them and the
# options where the paper and its reference implementation disagree).
# `paper_domain(name)` gives the training model; `INITIAL_MULTIPLIER` the paper's
# starting $\lambda$.

# %%
print(f"{'name':10s} {'S':>3s} {'A':>3s} {'K':>3s} {'d':>5s} {'T':>4s} {'gamma':>5s} {'lam0':>5s}")
for name in domains.PAPER_DOMAINS:
    m = domains.paper_domain(name)
    print(f"{name:10s} {m.n_states:3d} {m.n_actions:3d} {m.n_constraints:3d} {m.d[0]:5.1f} "
          f"{m.horizon:4d} {m.gamma:5.2f} {domains.INITIAL_MULTIPLIER[name]:5.0f}")

# %% [markdown]
# **Safe Navigation 1** is a 5×5 grid; cell $(x, y)$ is state $s = 5x + y$ (`grid_state`,
# `grid_xy`), the start is $(0,0)$ and the goal $(4,4)$ is terminal.  The four actions move
# by $(-1,0), (+1,0), (0,+1), (0,-1)$; with probability `p_success` = 0.8 the move happens,
# clipped at the walls, otherwise the agent stays.  Each step earns $-1$ and **entering** a
# grey cell costs 1 (budget $d = 3$, horizon $T = 200$).
#
# Below: the cost cells, and the value function of two policies as heat maps: the uniform
# random policy and the least-cost path (`shortest_path_policy(model,
# minimise_cost=True)`, drawn as arrows).

# %%
nav1 = domains.paper_domain("nav1")
xy = np.array([domains.grid_xy(s) for s in range(nav1.n_states)])   # (S, 2)
enter_cost = nav1.C[0, 0, :, 0]              # cost of entering each cell

def grid_image(values):
    img = np.zeros((5, 5))
    img[xy[:, 1], xy[:, 0]] = values          # rows are y, columns are x
    return img

uniform = np.full((nav1.n_states, nav1.n_actions), 0.25)
shortest = domains.shortest_path_policy()                        # fewest steps
safe_path = domains.shortest_path_policy(nav1, minimise_cost=True)

fig, axes = plt.subplots(1, 3, figsize=(13, 4))
axes[0].imshow(grid_image(enter_cost), origin="lower", cmap="Greys", vmin=0, vmax=1.6)
axes[0].set_title("Safe Navigation 1: cost of entering a cell")
for ax, pol, title in [(axes[1], uniform, "V of the uniform random policy"),
                       (axes[2], safe_path, "V of the least-cost path policy")]:
    im = ax.imshow(grid_image(evaluate(nav1, pol).v), origin="lower", cmap="viridis")
    fig.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title(title)
dx, dy = domains.ACTION_OFFSETS[safe_path].T
nt = ~nav1.terminal
axes[2].quiver(xy[nt, 0], xy[nt, 1], dx[nt], dy[nt], color="w", scale=12)
for ax in axes:
    ax.text(0, 0, "S", ha="center", va="center", color="C1", fontsize=14, weight="bold")
    ax.text(4, 4, "G", ha="center", va="center", color="C1", fontsize=14, weight="bold")
    ax.set(xlabel="x", ylabel="y", xticks=range(5), yticks=range(5))
fig.tight_layout()
plt.show()

# %% [markdown]
# ### The test metric and the penalised return
#
# The paper tests a trained policy with **undiscounted** sums over at most $T$ steps (or
# until the goal), $V^T = \mathbb E[\sum_{t<T} r_t]$ and $C^T = \mathbb E[\sum_{t<T} c_t]$,
# which `evaluate_finite_horizon` computes exactly by backward induction
# ($W_T = 0$, $W_t = [r_\pi, c_\pi] + P_\pi W_{t+1}$; the horizon must be at least 1)
# instead of averaging 50 episodes.  The discounted budget is rescaled to the $T$-step
# sum, $d' = d\,T / \sum_{i<T}\gamma^i$, and Table 1 of the paper reports the penalised
# return $R_{pen} = V^T - 500 \max(0, C^T - d')$.
#
# The shortest path has a closed form to check against: it makes 8 moves, each taking a
# geometric number of steps with mean $1/0.8$, so $V^T = -8/0.8 = -10$ (the chance of not
# arriving within 200 steps is below $10^{-80}$); it enters one grey cell, $(1,0)$, and
# pays again each time a move out of it fails, $1 + 0.2/0.8 = 1.25$ in expectation.

# %%
d_prime = rx.rescaled_budget(nav1.d, nav1.gamma, nav1.horizon)
assert np.isclose(d_prime[0], 3 * 200 * (1 - 0.99) / (1 - 0.99 ** 200))
print(f"rescaled budget d' = {d_prime[0]:.3f}")
tests = {}
for name, pol in [("shortest path", shortest), ("least-cost path", safe_path),
                  ("uniform random", uniform)]:
    tests[name] = t = evaluate_finite_horizon(nav1, pol)
    print(f"{name:16s} V^T = {t.value:8.3f}   C^T = {t.costs[0]:6.3f}   "
          f"overshoot = {t.overshoot[0]:+7.3f}   R_pen = {t.penalised_return:9.2f}")
assert np.isclose(tests["shortest path"].value, -10.0, atol=1e-9)
assert np.isclose(tests["shortest path"].costs[0], 1.25, atol=1e-9)
t = tests["uniform random"]
assert np.isclose(t.penalised_return, t.value - 500 * max(0.0, t.costs[0] - d_prime[0]))

# %% [markdown]
# Test 1A changes the success probability of the moves (`domains.perturbations("1A")`);
# each setting is one model.  `evaluate_finite_horizon_batch` evaluates M policies on N
# kernels in one batched backward induction; we check it against one call per setting.

# %%
suite = domains.perturbations("1A")
p_succ = [s.info["p_success"] for s in suite]
policies = np.stack([np.eye(4)[shortest], np.eye(4)[safe_path]])        # (M, S, A)
kernels = np.stack([s.model.P for s in suite])                          # (N, S, A, S)
batch = evaluate_finite_horizon_batch(nav1, policies, kernels)
loop = np.array([[evaluate_finite_horizon(s.model, p).value for p in policies] for s in suite])
assert np.allclose(batch.value, loop, atol=1e-9)
# closed form of the shortest path again: -8 / p_success
assert np.allclose(batch.value[:, 0], [-8 / p for p in p_succ], atol=1e-6)

fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
for j, name in enumerate(["shortest path", "least-cost path"]):
    ax[0].plot(p_succ, batch.value[:, j], "o-", label=name)
    ax[1].plot(p_succ, batch.costs[:, j, 0], "o-", label=name)
ax[1].axhline(batch.budget[0], color="k", ls="--", label="d'")
ax[0].set(xlabel="p_success", ylabel="$V^T$", title="Test 1A: value")
ax[1].set(xlabel="p_success", ylabel="$C^T$", title="Test 1A: cost")
ax[0].legend()
ax[1].legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ### The paper's uncertainty set, estimated from rollouts
#
# Phase 1 of the paper runs the uniform random policy on the true dynamics (100 episodes
# on Safe Navigation 1), counts the observed outcomes $n(s, a, o)$ with a pseudo-count of
# 1 on each outcome, and sets
#
# $$
# \hat P(o \mid s, a) = \frac{n(s,a,o)}{n(s,a)}, \qquad
# \alpha(s, a) = \sqrt{\frac{2}{n(s,a)} \ln \frac{2^{S'} S A}{\delta}}, \qquad \delta = 0.1,
# $$
#
# with $S' = 5$ outcomes on the grid (stay and the four moves).  `estimate` does this
# (seeded) and returns the ball and the nominal model $\hat P$: the RCMDP a robust learner
# trains on.  We recompute one pair's radius from its counts.

# %%
est = rx.estimate(nav1, domains.ESTIMATION_EPISODES["nav1"]["paper"], seed=0)
print(est.uset)
print("alpha range over non-terminal pairs:", np.round(est.alpha_range, 3),
      "  the paper reports", domains.PAPER_ALPHA_RANGES["nav1"])
s0, a0 = 0, 1
n_sa = est.counts[s0, a0].sum() + 5                       # observed + one per outcome
alpha_by_hand = np.sqrt(2 / n_sa * np.log(2 ** 5 * nav1.n_states * nav1.n_actions / 0.1))
assert np.isclose(est.uset.alpha[s0, a0], alpha_by_hand)
print("true kernel inside the estimated set:", bool(est.uset.contains(nav1.P).all()))

# %% [markdown]
# ## 1.5 Saving, kernel swaps, Gymnasium
#
# Models save to `.npz` without pickle and load back exactly.  New dynamics make a new
# model: `with_transitions(P)` checks only what depends on P, and `check=False` skips even
# that for a kernel you already trust (a worst-case kernel from the set, say): a copy of
# about ten microseconds, meant for inner loops.

# %%
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as tmp:
    path = nav1.save(Path(tmp) / "nav1.npz")
    back = rx.TabularCMDP.load(path)
for field in ["P", "R", "C", "d", "p0", "terminal"]:
    assert np.array_equal(getattr(back, field), getattr(nav1, field)), field
assert back.gamma == nav1.gamma and back.horizon == nav1.horizon

worst = rx.robust_evaluate(est.nominal, safe_path, est.uset, objective="value")
swapped = est.nominal.with_transitions(worst.P_worst, check=False)
print(f"least-cost path: nominal V = {evaluate(est.nominal, safe_path).value:.3f}, "
      f"under its worst-case kernel V = {evaluate(swapped, safe_path).value:.3f}")
assert np.isclose(evaluate(swapped, safe_path).value, worst.value)

# %% [markdown]
# `rcmdp_exact.interop.TabularCMDPEnv` samples any model as a Gymnasium environment
# (`pip install ".[gym]"`): the reward $R(s, a, s')$ comes in the step tuple, the cost
# vector in `info["cost"]` (the safety-gymnasium convention), and episodes are truncated
# at the model's horizon.  The average undiscounted return of sampled episodes estimates
# the $V^T$ computed above.

# %%
from rcmdp_exact.interop import paper_env

env = paper_env("nav1")
returns, ep_costs = [], []
for episode in range(500):
    obs, info = env.reset(seed=episode)
    total_r = total_c = 0.0
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(int(shortest[obs]))
        total_r += reward
        total_c += info["cost"][0]
        done = terminated or truncated
    returns.append(total_r)
    ep_costs.append(total_c)

exact = tests["shortest path"]
for name, x, e in [("V^T", returns, exact.value), ("C^T", ep_costs, exact.costs[0])]:
    x = np.asarray(x)
    half = 2.576 * x.std(ddof=1) / np.sqrt(x.size)
    print(f"{name}: exact {e:8.4f}   sampled {x.mean():8.4f} +- {half:.4f} (99%)")
    assert abs(x.mean() - e) <= half

# %% [markdown]
# **Next:** notebook 2 opens the worst case: the L1 inner problem, solved exactly by a
# sort and checked against a linear program.

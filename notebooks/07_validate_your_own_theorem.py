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
# # 7. Validate your own theorem
#
# A theorem about MDPs is a statement about every model; on small models the toolkit
# computes every quantity in it exactly, so the statement can be *checked* on thousands
# of models, and when it is false, a counterexample can be *found*, *shrunk* to the
# smallest model that still breaks it, and *certified*.  The workflow:
#
# 1. write the claim as a function of one example that returns a **residual** (a number
#    that must be at most a tolerance) or a bool;
# 2. draw examples with the strategies of `rcmdp_exact.testing` (models, policies,
#    uncertainty sets of every kind, budgets that bind), on a grid of fractions so that
#    a shrunk example reads like a hand-made one;
# 3. run it under hypothesis (`@given`), or let `find_counterexample` search, shrink and
#    save what it finds;
# 4. certify what you found with the exact tools: robust evaluation, the certified
#    RCMDP bracket (`rcmdp_bracket`) and the certified Lagrangian dual
#    (`certified_dual`).
#
# Three examples: a theorem that holds (the performance difference lemma), one that
# fails for robust CMDPs (strong Lagrangian duality), and a landscape result (local
# robust policy-gradient ascent stopping at a strict local optimum).  The page
# `docs/theorems.md` is the reference for each tool.

# %%
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import brentq

import rcmdp_exact as rx
from rcmdp_exact import testing as T

np.set_printoptions(precision=4, suppress=True)

# %% tags=["remove-cell"]
# The LP solver (HiGHS) prints a banner the first time a process uses it; one
# small solve here keeps that banner out of the outputs below.
_ = rx.solve_cmdp(T.example(T.cmdps(n_constraints=1), seed=0))

# %% [markdown]
# ## 7.1 A theorem that holds: the performance difference lemma
#
# For two policies $\pi, \pi'$ and a start distribution $\mu$ (Kakade and Langford, 2002,
# Lemma 6.1),
#
# $$
# V^{\pi'}(\mu) - V^{\pi}(\mu) = \sum_s d^{\pi'}_\mu(s) \sum_a \pi'(a \mid s)\,
# A^{\pi}(s, a), \qquad A^\pi = Q^\pi - V^\pi,
# $$
#
# with $d^{\pi'}_\mu(s) = \sum_t \gamma^t \Pr_\mu^{\pi'}(s_t = s)$ the discounted
# occupancy from $\mu$.  `evaluate(model, policy, p0=mu)` gives the value, the occupancy
# from $\mu$ and the advantage; the whole check is a dozen lines, on 300 random models
# (with terminal states, next-state-dependent rewards, sparse rows) under the exact
# profile (derandomized: the same models every run).

# %%
errors = []


@T.exact_settings(max_examples=300)
@given(T.cmdps(n_states=(1, 5), n_constraints=0).flatmap(
    lambda m: st.tuples(st.just(m), T.policies(m), T.policies(m))))
def performance_difference(case):
    model, pi, pi2 = case
    mu = np.full(model.n_states, 1.0 / model.n_states)
    a, b = rx.evaluate(model, pi, p0=mu), rx.evaluate(model, pi2, p0=mu)
    rhs = b.occupancy @ (pi2 * a.advantage).sum(axis=1)
    errors.append(abs((b.value - a.value) - rhs))
    assert errors[-1] <= 1e-10 * max(1.0, abs(b.value))


performance_difference()
print(f"{len(errors)} models, largest error {max(errors):.1e}")

# %% [markdown]
# ## 7.2 A theorem that fails: strong duality for robust CMDPs
#
# For a CMDP, Lagrangian duality is strong (Altman, 1999; Paternain et al., 2019): the
# constrained optimum equals $\min_{\lambda \ge 0} \max_\pi V - \lambda^\top (C - d)$.
# A robust CMDP asks for
#
# $$
# \mathrm{OPT} = \max_\pi \min_P V(\pi, P) \quad\text{s.t.}\quad \max_P C_k(\pi, P) \le
# d_k,
# $$
#
# each quantity with its own adversary, and its Lagrangian dual uses one adversary for
# the Lagrangian:
#
# $$
# D = \min_{\lambda \ge 0} g(\lambda), \qquad g(\lambda) = \max_\pi \min_P \bigl[V -
# \lambda^\top C\bigr](\pi, P) + \lambda^\top d .
# $$
#
# Weak duality $\mathrm{OPT} \le D$ always holds; strong duality need not (Ma et al.,
# 2025, "Rectified robust policy optimization for model-uncertain constrained RL without
# strong duality", arXiv:2508.17448).  `certified_dual` brackets $D$ (each $g(\lambda)$
# is a robust MDP value certified by its Bellman residual; $g$ is not convex, so the
# minimum over $\lambda$ is certified by branch and bound with slope bounds and the
# concave minorants of the maximising policies), and `rcmdp_bracket` brackets OPT.  A
# certified gap `dual.lo - bracket.upper > 0` *proves* that strong duality fails.
#
# **Search.**  The claim "the duality gap is at most 0.05" on a family of small models:
# state 0 decides and state 1 is terminal; action 0 stays at no reward and no cost,
# action 1 earns $r$, costs $c$ and stays with probability $p$, which an L1 ball of
# radius $\alpha$ around $\hat p$ lets the adversary move; every number is a multiple
# of 1/8.  The dual side of the claim is certified (`certified_dual`, its lower end).
# The primal side is exact for this family: value and cost both increase with the
# probability $x$ of action 1, so the optimum plays the largest $x$ whose worst-case
# cost meets the budget, found by Brent's method on exact robust evaluations.

# %%
EIGHTHS = st.integers(1, 8).map(lambda k: k / 8)  # 1/8, 2/8, ..., 1


@st.composite
def one_decision(draw):
    """(model, uset): the family described above."""
    r, c, alpha, share = draw(st.tuples(EIGHTHS, EIGHTHS, EIGHTHS, EIGHTHS))
    p = draw(st.integers(0, 8)) / 8
    gamma = draw(st.sampled_from([0.5, 0.75]))
    P = np.zeros((2, 2, 2))
    P[0, 0, 0] = 1.0
    P[0, 1] = [p, 1 - p]
    P[1, :, 1] = 1.0
    R = np.zeros((2, 2))
    R[0, 1] = r
    C = np.zeros((2, 2, 1))
    C[0, 1, 0] = c
    d = share * c / (1 - gamma)  # a share of the largest possible cost
    radii = np.zeros((2, 2))
    radii[0, 1] = alpha
    return (rx.TabularCMDP(P, R, C, d=[d], gamma=gamma, terminal=[1]),
            rx.L1Ball(P, radii))


def play(x):
    return np.array([[1 - x, x], [1.0, 0.0]])


def primal(model, uset):
    """OPT of the family: the worst-case value of the largest x whose worst-case cost
    meets the budget (the cost increases with x: Brent's method on cost - budget)."""
    def excess(x):
        return rx.robust_evaluate(model, play(x), uset).costs_worst[0] - model.d[0]

    x = 1.0 if excess(1.0) <= 0 else brentq(excess, 0.0, 1.0, xtol=1e-15)
    return rx.robust_evaluate(model, play(x), uset).value


def small_duality_gap(case):
    """Residual: D (certified from below) minus OPT; strong duality says it is <= 0."""
    model, uset = case
    return rx.certified_dual(model, uset).lo - primal(model, uset)


folder = Path(tempfile.mkdtemp()) / "counterexample_duality"  # where the files go
found = T.find_counterexample(small_duality_gap, one_decision(), tolerance=0.05, seed=0,
                              max_examples=60, path=folder)
print(found.message)
model, uset = found.example
r, c, d, gamma = model.R[0, 1, 0], model.C[0, 1, 0, 0], model.d[0], model.gamma
p_hat, alpha = model.P[0, 1, 0], uset.alpha[0, 1]
print(f"r = {r}, c = {c}, d = {d}, gamma = {gamma}, p_hat = {p_hat}, alpha = {alpha}")

# %% [markdown]
# The files reload: the model and the set are `.npz` archives, the rest JSON.

# %%
again = T.load_counterexample(folder)
assert np.array_equal(again.example[0].P, model.P) and again.residual == found.residual
assert small_duality_gap(again.example) == found.residual  # it still fails the claim
print(sorted(p.name for p in found.files))

# %% [markdown]
# **Certificate.**  The bracket gives OPT $\le$ `upper` for any model (it does not use
# the structure of the family), the certified dual $D \ge$ `lo`; `duality_gap`
# combines them.

# %%
bracket = rx.rcmdp_bracket(model, uset, variants=(), progress=False, max_boxes=300)
gap = rx.duality_gap(model, uset, bracket, tol=1e-10)
print(f"OPT in [{bracket.lower:.6f}, {bracket.upper:.6f}]")
print(f"D   in [{gap.dual.lo:.6f}, {gap.dual.hi:.6f}]")
print(gap.message)
assert gap.strong_duality == "fails"

# %% [markdown]
# **By hand.**  With $x$ the probability of action 1 in state 0 and $p$ the probability
# that action 1 stays,
#
# $$
# V(x, p) = \frac{x r}{1 - \gamma + \gamma x (1 - p)}, \qquad C(x, p) = \frac{c}{r}
# V(x, p),
# $$
#
# both increasing in $x$ and in $p$, with $p \in [p_-, p_+] = [\hat p - \alpha/2,
# \hat p + \alpha/2] \cap [0, 1]$ (the L1 ball moves mass $\alpha/2$ between the two
# next states).  *Primal:* the value's adversary takes $p_-$, the cost's $p_+$, so
# $x^* = \min(1, d(1-\gamma)/(c - d\gamma(1 - p_+)))$ solves $C(x^*, p_+) = d$ and
# $\mathrm{OPT} = V(x^*, p_-)$.  *Dual:* for one kernel $p$, $V = (r/c)\, C$, so the
# CMDP optimum is $(r/c) \min(d, C(1, p))$; sa-rectangular sets have a value, so $D$ is
# the smallest CMDP optimum over the kernels of the set (`docs/theorems.md`):
# $D = (r/c)\min(d, C(1, p_-))$.  The value's adversary and the cost's disagree
# ($p_- \ne p_+$), and the gap is $D - \mathrm{OPT} > 0$.

# %%
p_lo, p_hi = max(0.0, p_hat - alpha / 2), min(1.0, p_hat + alpha / 2)


def V(x, p):
    return x * r / (1 - gamma + gamma * x * (1 - p))


x_star = min(1.0, d * (1 - gamma) / (c - d * gamma * (1 - p_hi)))
OPT = V(x_star, p_lo)
D = (r / c) * min(d, (c / r) * V(1.0, p_lo))
print(f"by hand: x* = {x_star:.6f}, OPT = {OPT:.6f}, D = {D:.6f}, gap = {D - OPT:.6f}")
assert bracket.lower - 1e-9 <= OPT <= bracket.upper + 1e-9
assert gap.dual.lo - 1e-9 <= D <= gap.dual.hi + 1e-9
assert gap.lo - 1e-9 <= D - OPT <= gap.hi + 1e-9

# %% [markdown]
# The dual function is not convex in general: $g(\lambda)$ is the *minimum* over
# kernels of convex functions (one CMDP dual per kernel), and the certificate does not
# assume convexity.  Its history holds every certified value of $g$ it computed:

# %%
h = gap.dual.history
order = np.argsort(h.lam[:, 0])
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(h.lam[order, 0], h.hi[order], ".-", ms=3, label=r"$g(\lambda)$ (certified)")
ax.axhline(bracket.upper, color="C3", ls="--", label="OPT (upper bound)")
top = 3 * max(float(gap.dual.lam[0]), 1e-3)
ax.set(xlim=(0, top), xlabel=r"$\lambda$", title="dual function")
ax.set_ylim(OPT - 0.2 * abs(OPT) - 0.05, D + 0.6 * abs(D) + 0.1)
ax.legend()
fig.tight_layout()

# %% [markdown]
# ## 7.3 Two kernels, a strict local optimum, and its certified gap
#
# With a *finite* uncertainty set the robust objective $J(\pi) = \min_m V(\pi, P_m)$ is
# a minimum of smooth functions; even with two kernels it can have strict local optima
# that are not global, and computing the optimum is NP-hard (Kitamura, Ghosh, Ayoub, Chu
# and Szepesvári, 2026, "Revisiting subgradient dominance in robust MDPs:
# counterexamples, hardness, and sufficient conditions", arXiv:2604.21177; Li, 2025,
# "Computational hardness of static distributionally robust MDPs", arXiv:2511.02224;
# for non-rectangular sets in general, Wiesemann, Kuhn and Rustem, 2013).
#
# A model of four states: from the start $s_0$, action 0 ("exit") and action 1
# ("continue") lead to $s_1$ or end the episode; at $s_1$ the actions lead to a goal
# $G$ (reward 2) or end.  The two kernels disagree on every row; with $x = \pi(1 \mid
# s_0)$, $y = \pi(1 \mid s_1)$ and $\gamma = 1$ the values are bilinear:
#
# $$
# V_1(x, y) = 1 - x + y + xy, \qquad V_2(x, y) = 1 + \tfrac12 x - y + xy .
# $$
#
# At the corner $(0, 0)$ both equal 1, $\nabla V_1 = (-1, 1)$ and $\nabla V_2 =
# (\tfrac12, -1)$: in every feasible direction $u \ge 0$ one of the two decreases
# (the directional derivative of $J$ is $\min(-u_1 + u_2, \tfrac12 u_1 - u_2)$: where
# the first is $\ge 0$, $u_2 \ge u_1$ and the second is $\le -\tfrac12 u_1$, negative
# unless $u_1 = 0$, and then it is $-u_2 < 0$), so $(0, 0)$ is a strict local maximum.
# Yet at $(1, 1)$, $J = \min(2, 3/2) = 3/2$.

# %%
S0, S1, G, END = 0, 1, 2, 3
P1 = np.zeros((4, 2, 4))
P2 = np.zeros((4, 2, 4))
P1[S0, 0, [S1, END]] = 0.5
P1[S0, 1, S1] = 1.0
P1[S1, 0, END] = 1.0
P1[S1, 1, G] = 1.0
P2[S0, 0, S1] = 1.0
P2[S0, 1, END] = 1.0
P2[S1, 0, [G, END]] = 0.5
P2[S1, 1, END] = 1.0
for P in (P1, P2):
    P[G, :, G] = P[END, :, END] = 1.0
R = np.zeros((4, 2, 4))
R[S0, 0, END] = 2.0   # exit now: 2
R[S0, 1, END] = 1.5   # what "continue" pays when it ends at once
R[S1, :, G] = 2.0     # reaching the goal
model2 = rx.TabularCMDP(P1, R, gamma=1.0, terminal=[G, END])
kernels = rx.FiniteSet([P1, P2])


def policy(x, y):
    return np.array([[1 - x, x], [1 - y, y], [1.0, 0.0], [1.0, 0.0]])


def J(x, y):
    return min(rx.evaluate(model2.with_transitions(P), policy(x, y)).value for P in (P1, P2))


for x, y in [(0, 0), (1, 1), (0.3, 0.2)]:
    v = [rx.evaluate(model2.with_transitions(P), policy(x, y)).value for P in (P1, P2)]
    assert np.allclose(v, [1 - x + y + x * y, 1 + x / 2 - y + x * y])
print(f"J(0, 0) = {J(0, 0)},  J(1, 1) = {J(1, 1)}")

# %% [markdown]
# **Local robust policy-gradient ascent.**  Projected gradient ascent on the direct
# parametrisation (Agarwal, Kakade, Lee and Mahajan, 2021): `robust_policy_gradient` is Danskin's gradient at the worst member
# (one supergradient where the two tie; it says so).  Started near the lower-left
# corner it ends there, oscillating within a step of $(0, 0)$ where the two kernels take
# turns as the worst; started elsewhere it finds the global optimum.

# %%
def ascend(x, y, steps=120, eta=0.05):
    """Projected (super)gradient ascent on (x, y) with a constant step."""
    path = [(x, y)]
    for _ in range(steps):
        g = rx.robust_policy_gradient(model2, policy(x, y), kernels,
                                      parametrisation="direct").gradient
        x = float(np.clip(x + eta * (g[S0, 1] - g[S0, 0]) / 2, 0, 1))
        y = float(np.clip(y + eta * (g[S1, 1] - g[S1, 0]) / 2, 0, 1))
        path.append((x, y))
    return np.array(path)


starts = [(0.15, 0.1), (0.05, 0.2), (0.6, 0.4), (0.3, 0.8)]
paths = [ascend(*s) for s in starts]
for s, p in zip(starts, paths, strict=True):
    print(f"start {s}: ends at ({p[-1, 0]:.3f}, {p[-1, 1]:.3f}), J = {J(*p[-1]):.4f}")
for p in paths[:2]:  # the last 30 steps stay within 0.05 of the corner (0, 0)
    assert np.abs(p[-30:]).max() < 0.05 and abs(J(*p[-1]) - 1.0) < 0.05
for p in paths[2:]:
    assert abs(J(*p[-1]) - 1.5) < 1e-9

# the landscape from the two values checked above against exact evaluation
xs = np.linspace(0, 1, 61)
X, Y = np.meshgrid(xs, xs)
Z = np.minimum(1 - X + Y + X * Y, 1 + X / 2 - Y + X * Y)
assert all(abs(Z[i, j] - J(xs[j], xs[i])) < 1e-12 for i, j in [(0, 0), (7, 40), (60, 60)])
fig, ax = plt.subplots(figsize=(4.5, 4))
cs = ax.contourf(xs, xs, Z, levels=20, cmap="viridis")
fig.colorbar(cs, label=r"$J = \min_m V(\pi, P_m)$")
for p in paths:
    ax.plot(p[:, 0], p[:, 1], "w.-", ms=2, lw=1)
ax.set(xlabel=r"$x = \pi(1 \mid s_0)$", ylabel=r"$y = \pi(1 \mid s_1)$",
       title="robust objective and ascent paths")
fig.tight_layout()

# %% [markdown]
# **Certificates.**  *Strict local optimum:* the members' gradients at $(0, 0)$ (exact,
# Theorem 1 under each kernel) give $\max_{u \ge 0, \|u\| = 1} \min(\nabla V_1 \cdot u,
# \nabla V_2 \cdot u) < 0$.  *Global optimum:* the exact robust value of the policy
# $(1, 1)$ is a lower bound, and no policy beats its worst member's own MDP optimum, so
# $\min_m \max_\pi V(\pi, P_m)$ (each attained by a deterministic policy) is an upper
# bound; they meet at $3/2$.  The gap to the global optimum is certified to be $1/2$.

# %%
grads = []
for P in (P1, P2):
    G_ = rx.policy_gradient(model2.with_transitions(P), policy(0, 0),
                            parametrisation="direct")
    grads.append(np.array([G_[S0, 1] - G_[S0, 0], G_[S1, 1] - G_[S1, 0]]))
print("gradients at (0, 0):", grads[0], grads[1])
angles = np.linspace(0, np.pi / 2, 10_001)
U = np.stack([np.cos(angles), np.sin(angles)], axis=1)
slope = np.minimum(U @ grads[0], U @ grads[1]).max()
print(f"largest directional derivative of J at (0, 0): {slope:.4f} < 0")
assert slope < 0

lower = J(1, 1)
# each member's own MDP optimum, attained by one of the 4 deterministic policies
upper = min(max(rx.evaluate(model2.with_transitions(P), policy(x, y)).value
                for x in (0, 1) for y in (0, 1)) for P in (P1, P2))
print(f"global optimum in [{lower}, {upper}]; local optimum J(0, 0) = {J(0, 0)}; "
      f"certified gap {lower - J(0, 0)}")
assert lower == upper == 1.5

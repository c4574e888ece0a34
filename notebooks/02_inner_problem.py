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
# # 2. The L1 inner problem: a sort against a linear program
#
# Every robust computation of the toolkit (robust evaluation, robust value iteration, the
# RCMDP bracket, the worst-case dynamics of the RCPG learners) repeats one small problem
# for each state-action pair: find the distribution in an L1 ball that makes a given
# quantity as small as possible.  This notebook
#
# 1. states the problem and its exact solution, a greedy move of mass found by sorting,
#    and checks it on the protocol's hand-computed case and against a linear program;
# 2. draws the worst case moving as the radius $\alpha$ grows, on a line and on the
#    probability simplex;
# 3. solves every pair of a paper domain at once and compares with one LP per pair;
# 4. uses it for robust evaluation of a policy, certified by a Bellman residual computed
#    with LP inner problems, and for robust value iteration.
#
# The algorithm, its proof and its implementation are described on the documentation's
# page on robust sets (`docs/robust.md`).

# %%
import matplotlib.pyplot as plt
import matplotlib.tri as mtri
import numpy as np

import rcmdp_exact as rx
from rcmdp_exact import domains, evaluate, worst_case_l1

np.set_printoptions(precision=4, suppress=True)

# %% tags=["remove-cell"]
# The LP solver (HiGHS) prints a banner the first time a process uses it; one
# small solve here keeps that banner out of the outputs below.
_ = worst_case_l1([0.5, 0.5], [0.0, 1.0], 0.1, method="lp")

# %% [markdown]
# ## 2.1 The problem and its exact solution
#
# The paper's sets are (s, a)-rectangular L1 balls.  The adversary's step (the paper's Eq.
# "robustvalue") is, for one pair with nominal next-state distribution $\hat p$ and a
# quantity $z$ per next state,
#
# $$
# \min_p\ p^\top z \quad \text{s.t.} \quad \lVert p - \hat p \rVert_1 \le \alpha,\quad
# \mathbf 1^\top p = 1,\quad p \ge 0 .
# $$
#
# $z$ is what is robustified: $z(s') = R(s,a,s') + \gamma V(s')$ for the value,
# $-(C(s,a,s') + \gamma C(s'))$ for a constraint (the worst case is the largest cost), or
# $R - \lambda C + \gamma (V - \lambda C)(s')$ for the Lagrangian.
#
# **Exact solution.** Moving a mass $m$ costs $2m$ of L1 budget, so at most
# $\epsilon = \min(\alpha/2,\ 1 - \hat p_k)$ can move.  It all goes to $k = \arg\min_i z_i$,
# and it is taken from the outcomes with the **largest** $z$ first (a fractional knapsack).
# The value falls as more mass moves, so the whole $\epsilon$ moves.
#
# The protocol's hand-computed case: $\hat p = (0.4, 0.3, 0.1, 0.2)$, $z = (1, 2, 5, 4)$.
# At $\alpha = 1$, $\epsilon = 0.5$ moves to outcome 0, taken as 0.1 from $z = 5$, 0.2 from
# $z = 4$ and 0.2 from $z = 2$, so $p^+ = (0.9, 0.1, 0, 0)$ and $p^{+\top} z = 1.1$.  At
# $\alpha = 0$ the value is $\hat p^\top z = 2.3$; at $\alpha = 2$, $\epsilon = 0.6$ and
# $p^+ = e_0$, value 1.
#
# The greedy rule for one distribution takes a few lines of plain Python; the toolkit's
# `worst_case_l1` solves whole batches by a sort (`method="sort"`, the default) or one
# cvxpy LP per row (`method="lp"`, a cross-check).

# %%
def greedy_worst_case(p_hat, z, alpha):
    p = [float(x) for x in p_hat]
    k = min(range(len(z)), key=lambda i: z[i])
    eps = min(alpha / 2, 1 - p[k])
    p[k] += eps
    for i in sorted(range(len(z)), key=lambda i: -z[i]):     # largest z first
        if i != k:
            take = min(p[i], eps)
            p[i] -= take
            eps -= take
    return np.array(p), sum(pi * zi for pi, zi in zip(p, z, strict=True))

p_hat = np.array([0.4, 0.3, 0.1, 0.2])
z = np.array([1.0, 2.0, 5.0, 4.0])
hand = {0.0: 2.3, 1.0: 1.1, 2.0: 1.0}
print(" alpha | by hand | greedy   | sort     | LP       | p+ (sort)          | status")
for alpha, expected in hand.items():
    p_g, v_g = greedy_worst_case(p_hat, z, alpha)
    res_sort = worst_case_l1(p_hat, z, alpha)
    res_lp = worst_case_l1(p_hat, z, alpha, method="lp")
    print(f"  {alpha:3.1f}  |  {expected:4.1f}   | {v_g:.6f} | {res_sort.value:.6f} | "
          f"{res_lp.value:.6f} | {res_sort.p} | {res_sort.status}")
    assert np.isclose(v_g, expected) and np.isclose(res_sort.value, expected)
    assert np.isclose(res_lp.value, expected, atol=1e-9)
    assert np.allclose(res_sort.p, p_g, atol=1e-12)

# %% [markdown]
# ## 2.2 The worst case moves as the radius grows
#
# `worst_case_l1` treats every leading axis as a batch axis, so one call solves a whole
# sweep over $\alpha$.  The worst-case value is convex, piecewise linear and non-increasing
# in $\alpha$: while mass is taken from outcome $i$ the slope is $(z_k - z_i)/2$, with
# breakpoints where an outcome runs empty ($\alpha = 0.2$: $z=5$ empty; $0.6$: $z=4$ empty;
# $1.2$: all mass on $k$).  The left panel shows where the mass sits, the right one the
# value, with the LP at eleven radii.

# %%
alphas = np.linspace(0.0, 1.6, 161)
sweep = worst_case_l1(np.broadcast_to(p_hat, (alphas.size, 4)), z, alphas)   # batched
lp_alphas = np.linspace(0.0, 1.6, 11)
lp = worst_case_l1(np.broadcast_to(p_hat, (lp_alphas.size, 4)), z, lp_alphas, method="lp")
on_grid = worst_case_l1(np.broadcast_to(p_hat, (lp_alphas.size, 4)), z, lp_alphas)
print("largest |sort - LP| over the eleven radii:", np.abs(on_grid.value - lp.value).max())
assert np.allclose(on_grid.value, lp.value, atol=1e-9)
# the slopes of the three pieces, from the knapsack argument
for (a0, a1), slope in zip([(0.0, 0.2), (0.2, 0.6), (0.6, 1.2)], [-2.0, -1.5, -0.5],
                           strict=True):
    v0, v1 = (greedy_worst_case(p_hat, z, a)[1] for a in (a0, a1))
    assert np.isclose((v1 - v0) / (a1 - a0), slope)

fig, ax = plt.subplots(1, 2, figsize=(11, 3.6))
ax[0].stackplot(alphas, sweep.p.T, labels=[f"outcome {i} (z = {z[i]:g})" for i in range(4)],
                alpha=0.85)
ax[0].set(xlabel=r"radius $\alpha$", ylabel="probability", xlim=(0, 1.6), ylim=(0, 1),
          title=r"worst-case distribution $p^+(\alpha)$")
ax[0].legend(loc="lower right", fontsize=8)
ax[1].plot(alphas, sweep.value, label="exact (sort)")
ax[1].plot(lp_alphas, lp.value, "o", mfc="none", label="LP (cvxpy)")
for b in [0.2, 0.6, 1.2]:
    for a in ax:
        a.axvline(b, color="grey", lw=0.6, ls=":")
ax[1].set(xlabel=r"radius $\alpha$", ylabel=r"$\min_p p^\top z$", title="worst-case value")
ax[1].legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# With three outcomes the whole picture fits on the probability simplex.  The L1 balls
# (hexagons cut by the triangle's edges) grow around $\hat p = (0.5, 0.3, 0.2)$; the
# background shades $p^\top z$ for $z = (2, 0, 1)$, and the worst case (dots) is the point
# of each ball with the smallest $p^\top z$.  It first moves straight from $\hat p$ towards
# the corner of outcome 1 (the smallest $z$), taking mass from outcome 0 (the largest
# $z$); once outcome 0 is empty ($\alpha = 1$) it slides along the edge, taking mass from
# outcome 2, and stops in the corner at $\alpha = 1.4$.  Each dot is checked against the LP.

# %%
p3 = np.array([0.5, 0.3, 0.2])
z3 = np.array([2.0, 0.0, 1.0])
corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])   # outcomes 0, 1, 2

def to_xy(p):
    return np.asarray(p) @ corners

tri = mtri.Triangulation(*corners.T, triangles=[[0, 1, 2]])
fine = mtri.UniformTriRefiner(tri).refine_triangulation(subdiv=7)
bary = np.linalg.solve(np.c_[corners, np.ones(3)].T, np.vstack([fine.x, fine.y, np.ones(fine.x.size)])).T
bary = np.clip(bary, 0, 1)
radii = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4]
path = worst_case_l1(np.broadcast_to(p3, (len(radii), 3)), z3, radii)
path_lp = worst_case_l1(np.broadcast_to(p3, (len(radii), 3)), z3, radii, method="lp")
assert np.allclose(path.value, path_lp.value, atol=1e-9)
assert np.allclose(path.p[-1], [0, 1, 0])                  # the corner at alpha = 1.4

fig, ax = plt.subplots(figsize=(5.6, 4.8))
shade = ax.tricontourf(fine, bary @ z3, levels=20, cmap="Greys", alpha=0.6)
fig.colorbar(shade, ax=ax, shrink=0.8, label=r"$p^\top z$")
ax.tricontour(fine, np.abs(bary - p3).sum(axis=1), levels=radii, cmap="viridis",
              linewidths=1.2)
xy_path = to_xy(path.p)
ax.plot(*to_xy(p3), "k*", ms=12, label=r"$\hat p$")
ax.plot(*np.vstack([to_xy(p3), xy_path]).T, "-", color="C3", lw=1)
ax.scatter(*xy_path.T, c=radii, cmap="viridis", edgecolors="C3", s=60, zorder=3,
           label=r"worst case $p^+(\alpha)$")
for i, name in enumerate(["outcome 0\nz = 2", "outcome 1\nz = 0", "outcome 2\nz = 1"]):
    ax.annotate(name, corners[i], textcoords="offset points",
                xytext=[(-30, -24), (22, -24), (0, 6)][i], ha="center", fontsize=9)
ax.plot(*np.vstack([corners, corners[:1]]).T, "k-", lw=0.8)
ax.set(aspect="equal", xticks=[], yticks=[])
ax.set_title(r"L1 balls for $\alpha$ = 0.2 ... 1.4", pad=28)
ax.legend(loc="upper right", fontsize=8)
plt.show()

# %% [markdown]
# ## 2.3 Every pair of a model at once
#
# For a model, `p_hat` is the whole kernel (S, A, S) and the radii are (S, A); a `support`
# (S, A, S) says which next states may receive mass.  We take the estimated uncertainty
# set of Safe Navigation 1 (notebook 1), form $z(s, a, s') = R(s, a, s') + \gamma V(s')$ for
# the uniform policy's nominal values, and solve the 100 problems by the sort and by 100
# LPs.  (`L1Ball.worst_case(z)` does the same from the ball.)

# %%
nav1 = domains.paper_domain("nav1")
est = rx.estimate(nav1, domains.ESTIMATION_EPISODES["nav1"]["paper"], seed=0)
uset, nominal = est.uset, est.nominal
uniform = np.full((25, 4), 0.25)
V = evaluate(nominal, uniform).v
z_sas = nominal.R + nominal.gamma * V[None, None, :]                # (S, A, S)
by_sort = worst_case_l1(uset.nominal, z_sas, uset.alpha, support=uset.support)
by_lp = worst_case_l1(uset.nominal, z_sas, uset.alpha, support=uset.support, method="lp")
gap = np.abs(by_sort.value - by_lp.value).max()
print(f"{by_sort.value.size} pairs; largest |sort - LP| = {gap:.1e}; LP statuses:",
      set(np.ravel(by_lp.lp_status)))
assert gap < 1e-9
assert np.allclose(by_sort.value, uset.worst_case(z_sas).value)
print("every worst-case row inside its ball:", bool(uset.contains(by_sort.p).all()))

# %% [markdown]
# ## 2.4 Robust evaluation of a policy
#
# For a fixed policy $\pi$ the robust Bellman operator
# $(T_\pi W)(s) = \sum_a \pi(a \mid s) \min_{p \in \mathcal P_{s,a}} p^\top \big(g(s,a,\cdot) + \gamma W\big)$
# is a $\gamma$-contraction; its fixed point $W^+$ is the worst case of the objective $g$
# (reward, minus cost, or Lagrangian reward) and its minimiser is the worst-case kernel
# $P^+$.  Because the set is rectangular the adversary chooses every row on its own.
# `robust_evaluate` finds the fixed point by the adversary's policy iteration (a few
# linear solves) and reports the exact evaluation of $\pi$ under $P^+$, plus each
# constraint's own worst case (`costs_worst`).
#
# **Certificate.** If $W$ is the fixed point, applying the operator with LP inner
# problems (not the sort) must return $W$ again; the residual below is that check.
# We evaluate two policies of notebook 1: the shortest path (crosses one grey cell) and
# the least-cost path (avoids them on the nominal model).

# %%
policies = {
    "shortest path": np.eye(4)[domains.shortest_path_policy()],
    "least-cost path": np.eye(4)[domains.shortest_path_policy(nav1, minimise_cost=True)],
}
print(f"{'policy':16s} {'nominal V':>10s} {'robust V':>10s} {'nominal C':>10s} "
      f"{'worst C':>10s}  LP residual   (budget d = {nav1.d[0]})")
for name, pol in policies.items():
    nom = evaluate(nominal, pol)
    rv = rx.robust_evaluate(nominal, pol, uset, objective="value", per_constraint=True)
    assert rv.status == "converged"
    z_w = nominal.R + nominal.gamma * rv.v[None, None, :]
    live = ~nominal.terminal
    inner = worst_case_l1(uset.nominal[live], z_w[live], uset.alpha[live],
                          support=uset.support[live], method="lp").value
    residual = np.abs((pol[live] * inner).sum(axis=1) - rv.v[live]).max()
    assert residual < 1e-8
    print(f"{name:16s} {nom.value:10.3f} {rv.value:10.3f} {nom.costs[0]:10.3f} "
          f"{rv.costs_worst[0]:10.3f}  {residual:.1e}")

# %% [markdown]
# The least-cost path is safe on the nominal model, yet the set allows a worst-case
# discounted cost above the budget: along its route the adversary pushes the agent
# sideways into grey cells.  At cell $(2, 2)$ with the action *down*, the cost-maximising
# kernel moves mass onto a grey neighbour.  As the exact solution says, all the moved mass
# goes to one outcome, the one with the smallest $z$ (here the largest cost-to-go), and is
# taken from the outcomes with the largest $z$.

# %%
pol = policies["least-cost path"]
rc = rx.robust_evaluate(nominal, pol, uset, objective="constraint")
s, a = domains.grid_state(2, 2), 3                      # cell (2,2), action "down" (0,-1)
nbrs = nav1.outcomes[s, a]                              # stay, left, right, up, down
cells = [nav1.state_labels[n] for n in nbrs]
moved = rc.P_worst[s, a] - nominal.P[s, a]
k = np.argmax(moved)                                    # the one cell that gains mass
assert (moved > 1e-12).sum() == 1
assert np.isclose(np.abs(moved).sum(), min(uset.alpha[s, a], 2 * (1 - nominal.P[s, a, k])))
width = 0.38
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.bar(np.arange(5) - width / 2, nominal.P[s, a, nbrs], width, label=r"nominal $\hat P$")
ax.bar(np.arange(5) + width / 2, rc.P_worst[s, a, nbrs], width, label=r"worst case $P^+$ (cost)")
ax.set_xticks(range(5), [f"{lab}\ncost {nav1.C[0, 0, n, 0]:g}"
                         for lab, n in zip(cells, nbrs, strict=True)])
ax.set(ylabel="probability",
       title=rf"next cell from (2,2), action down, $\alpha$ = {uset.alpha[s, a]:.2f}")
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# **The price of robustness.** Scaling all radii by a factor $t$ (`uset.with_alpha`) moves
# from the nominal model ($t = 0$) to ever larger sets; the robust value falls and the
# worst-case cost rises, monotonically.

# %%
scales = np.linspace(0.0, 1.5, 13)
fig, ax = plt.subplots(1, 2, figsize=(10, 3.4))
for name, pol in policies.items():
    runs = [rx.robust_evaluate(nominal, pol, uset.with_alpha(t * uset.alpha),
                               objective="value", per_constraint=True) for t in scales]
    vals = np.array([r.value for r in runs])
    worst_costs = np.array([r.costs_worst[0] for r in runs])
    assert np.all(np.diff(vals) <= 1e-9) and np.all(np.diff(worst_costs) >= -1e-9)
    assert np.isclose(vals[0], evaluate(nominal, pol).value)
    ax[0].plot(scales, vals, "o-", ms=3, label=name)
    ax[1].plot(scales, worst_costs, "o-", ms=3, label=name)
ax[1].axhline(nav1.d[0], color="k", ls="--", label="budget d")
ax[0].set(xlabel=r"radius scale $t$ ($\alpha \to t\,\alpha$)", ylabel=r"$\min_P V$",
          title="robust value")
ax[1].set(xlabel=r"radius scale $t$", ylabel=r"$\max_P C$", title="worst-case cost")
ax[0].legend()
ax[1].legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 2.5 Robust value iteration
#
# The optimal robust policy of the Lagrangian reward $r - \lambda c$ solves the robust
# Bellman optimality equation
#
# $$
# V(s) = \max_a \min_{p \in \mathcal P_{s,a}} p^\top \big(R(s,a,\cdot) - \lambda C(s,a,\cdot) + \gamma V\big),
# $$
#
# again a $\gamma$-contraction.  `robust_value_iteration` returns the greedy policy, its
# robust values and the worst-case kernel, with a bound on its suboptimality.  The
# cross-check evaluates the returned policy with `robust_evaluate`, a different algorithm
# (the adversary's policy iteration with exact linear solves).

# %%
xy = np.array([domains.grid_xy(s) for s in range(nav1.n_states)])
live = ~nav1.terminal
results = {}
for lam in [0.0, 5.0]:
    rvi = rx.robust_value_iteration(nominal, uset, lam=lam, progress=False)
    check = rx.robust_evaluate(nominal, rvi.policy, uset, objective="lagrangian", lam=lam)
    results[lam] = rvi
    lagr_p0 = check.lagrangian_p0 - lam * nominal.d[0]          # p0.(V - lam C) under P+
    print(f"lam = {lam}: {rvi.status}; robust p0.V_lam = {rvi.value:.6f}, re-evaluated "
          f"{lagr_p0:.6f}; under P+: V = {check.value:.3f}, C = {check.costs[0]:.3f}")
    assert np.isclose(rvi.value, lagr_p0, atol=1e-6)

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
cost_cells = nav1.C[0, 0, :, 0] > 0
for ax, (lam, rvi) in zip(axes, results.items(), strict=True):
    img = np.full((5, 5), np.nan)
    img[xy[live, 1], xy[live, 0]] = rvi.v[live]
    im = ax.imshow(img, origin="lower", cmap="viridis")
    fig.colorbar(im, ax=ax, shrink=0.85, label=r"robust $V_\lambda$")
    dx, dy = domains.ACTION_OFFSETS[rvi.actions].T
    ax.quiver(xy[live, 0], xy[live, 1], dx[live], dy[live], color="w", scale=12)
    ax.scatter(xy[cost_cells, 0], xy[cost_cells, 1], marker="s", s=300, facecolors="none",
               edgecolors="r", lw=1.5)
    ax.set(title=rf"robust optimal policy, $\lambda$ = {lam:g} (red: cost cells)",
           xlabel="x", ylabel="y", xticks=range(5), yticks=range(5))
fig.tight_layout()
plt.show()

# %% [markdown]
# With $\lambda = 0$ the robust policy only cares about reaching the goal fast against the
# worst dynamics and walks through grey cells; with $\lambda = 5$ it pays for cost and
# avoids most of them.  Whether some policy's *worst-case* cost meets the budget, and how
# far the best such policy is from the best possible, is the question of the RCMDP
# bracket in notebook 4.  Notebook 3 first checks the gradients that the learners follow.

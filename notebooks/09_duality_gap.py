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
# # 9. Where strong duality fails: a certified duality gap, and where the planners end
#
# A constrained MDP has no duality gap: the optimum of the CMDP equals the minimum over
# multipliers $\lambda \ge 0$ of the Lagrangian dual, which is why primal-dual methods
# (gradient ascent on the policy, descent on $\lambda$) find it.  A **robust** CMDP
#
# $$\mathrm{OPT} = \max_\pi \min_{P \in \mathcal P} V_r(\pi, P) \quad \text{s.t.} \quad
#   \max_{P \in \mathcal P} C_k(\pi, P) \le d_k,$$
#
# with each objective against its own adversary, has the dual
#
# $$D = \min_{\lambda \ge 0} g(\lambda), \qquad
#   g(\lambda) = \max_\pi \min_{P} \bigl[V_r - \lambda^\top C\bigr](\pi, P) + \lambda^\top d,$$
#
# and only **weak** duality, $\mathrm{OPT} \le D$: inside $g$ one adversary plays against
# the reward and the costs at once, while the constraint of the RCMDP is judged by each
# cost's own, worse, adversary.  When the two disagree, $D > \mathrm{OPT}$ and a method
# that converges to this Lagrangian's saddle points cannot end at the optimum: it ends
# either worth more than OPT and infeasible, or feasible and worth less.
#
# This tutorial certifies such a gap on one instance, with two independent certificates
# (the bracket of OPT and the certified interval on D), checks both by brute force, and
# runs the published planners of `rcmdp_exact.planners` on it to see where each ends.

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np

import rcmdp_exact as rx
from rcmdp_exact.ground_truth import certified_dual, duality_gap
from rcmdp_exact.planners import plan, record_duality_gap
from rcmdp_exact.suite.sets import budget
from rcmdp_exact.testing import random_cmdp

warnings.simplefilter("ignore", RuntimeWarning)

# %% [markdown]
# ## 9.1 The instance and its certified optimum
#
# A small random RCMDP (3 states, 2 actions, one constraint, $\gamma = 0.9$) with the
# sa-rectangular L1 ball of radius 0.4 on every next state, and the suite's "halfway"
# budget: halfway between the least worst-case cost and the worst-case cost of the
# unconstrained robust optimum, so the budget binds.  The bracket (branch and bound over
# policy boxes, `rcmdp_bracket`) closes on OPT; its budget is a number of boxes, so the
# answer is the same on every machine.

# %%
model = random_cmdp(0, 3, 2, 1, 0.9)
uset = rx.l1_ball(model, 0.4, support="all")
d, levels = budget(model, uset, "halfway")
model = model.replace(d=d)
bracket = rx.rcmdp_bracket(model, uset, max_boxes=3000, time_limit=None,
                           dual_evaluations=0, progress=False)
print(f"budget d = {d[0]:.4f} (least worst-case cost {levels.least[0]:.4f}, cost of the "
      f"unconstrained robust optimum {levels.free[0]:.4f})")
print(f"OPT in [{bracket.lower:.6f}, {bracket.upper:.6f}] ({bracket.status})")

# %% [markdown]
# The lower side is the exact worst-case value of a policy that exact robust evaluation
# certifies as feasible; check it apart from the bracket, with `robust_evaluate` (each
# cost against its own adversary).  And the upper side: no robust-feasible policy may
# beat it; try every deterministic policy and 4000 random stochastic ones.

# %%
low = rx.robust_evaluate(model, bracket.policy, uset)
assert abs(low.value - bracket.lower) <= 1e-9 and low.costs_worst[0] <= d[0] + 1e-9

rng = np.random.default_rng(0)
S, A = model.n_states, model.n_actions
candidates = [np.eye(A)[list(acts)] for acts in np.ndindex(*([A] * S))]
candidates += list(rng.dirichlet(np.ones(A), size=(4000, S)))
best_found = -np.inf
for pi in candidates:
    ev = rx.robust_evaluate(model, pi, uset)
    if ev.costs_worst[0] <= d[0]:
        best_found = max(best_found, ev.value)
print(f"best robust-feasible policy of {len(candidates)} tried: {best_found:.6f}")
assert best_found <= bracket.upper + 1e-9

# %% [markdown]
# ## 9.2 The certified dual, and the gap
#
# `certified_dual` bounds $D$ from both sides: above by the certified value of
# $g(\lambda)$ at the best multiplier it met, below by a branch and bound over
# $\lambda$ that uses only what holds for any $g$ (its slopes lie between
# $d - \overline c$ and $d - \underline c$, and a Slater point bounds the search box).
# `duality_gap` subtracts: $\text{lo}(D) - \text{upper}(\mathrm{OPT}) \le D -
# \mathrm{OPT}$, and a positive lower end proves that strong duality fails here.
# `record_duality_gap` does the same for a record of the suite (a dict with the
# bracket), as `suite.load(name, set=..., radius=...)` returns it.

# %%
dual = certified_dual(model, uset)
gap = duality_gap(model, uset, bracket, dual=dual)
print(f"D in [{dual.lo:.6f}, {dual.hi:.6f}] at lambda = {dual.lam}")
print(gap.message)
assert gap.strong_duality == "fails" and gap.lo > 1.0
rec = {"key": "tutorial", "bracket": {"lower": bracket.lower, "upper": bracket.upper}}
assert record_duality_gap(model, uset, rec).strong_duality == "fails"

# %% [markdown]
# Check $D$ by brute force: $g(\lambda)$ on a grid of multipliers, each the robust optimum
# of the reward $r - \lambda c$ (robust value iteration, another solver), plus
# $\lambda d$.  Every $g(\lambda)$ is at least the certified lower end of $D$, and the
# smallest is within the grid's resolution of its upper end.

# %%
grid = np.linspace(0.0, 5.0, 101)
g = np.array([rx.robust_value_iteration(model, uset, np.array([lam])).value + lam * d[0]
              for lam in grid])
assert g.min() >= dual.lo - 1e-9
print(f"min over the grid of g: {g.min():.6f} at lambda = {grid[g.argmin()]:.2f}")
assert g.min() - dual.hi <= 1e-6 + 0.05 * np.abs(np.diff(g)).max()

fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(grid, g, label=r"$g(\lambda)$ (robust value iteration)")
ax.axhline(dual.hi, ls="--", c="C1", label=f"D = {dual.hi:.3f}")
ax.axhspan(bracket.lower, bracket.upper, color="C2", alpha=0.5,
           label=f"OPT = {bracket.upper:.3f}")
ax.set_xlabel(r"$\lambda$")
ax.legend(loc="upper right", fontsize=8)
ax.set_title("weak duality: OPT < D, by a certified margin")
plt.tight_layout()

# %% [markdown]
# Here the dual is smallest at $\lambda = 0$: the combined adversary of the Lagrangian
# makes the unconstrained robust optimum look feasible, so $D$ is the robust optimum
# itself, while the costs' own adversary makes that policy violate the budget.

# %%
free = rx.robust_value_iteration(model, uset)
free_eval = rx.robust_evaluate(model, free.policy, uset)
print(f"unconstrained robust optimum {free.value:.6f}, its worst-case cost "
      f"{free_eval.costs_worst[0]:.4f} > d = {d[0]:.4f}")
assert abs(free.value - dual.hi) <= 1e-6 and free_eval.costs_worst[0] > d[0]

# %% [markdown]
# ## 9.3 Where the planners end
#
# Six planners of `rcmdp_exact.planners`, each with its defaults, exact robust
# evaluations and Danskin gradients, 500 iterations from the same random start: three
# primal-dual methods and three primal-only ones (EpiRC-PGS, RNPG, RRPO).  The primal-dual
# methods do not all optimise the same Lagrangian:
#
# * Bossens and Nitanda's robust PMD-PD and the seed paper's RCPG with the robust
#   Lagrangian optimise $\min_P [V_r - \lambda^\top C](\pi, P)$, **one** adversary for
#   the reward and the costs: the Lagrangian whose dual is $D$ above;
# * Wang, Miao and Zou's robust primal-dual optimises $\min_P V_r(\pi, P) - \lambda^\top
#   (\max_P C(\pi, P) - d)$, each objective against **its own** adversary: a smaller
#   Lagrangian (for every $\lambda$ it is at most $g(\lambda)$), whose dual lies between
#   OPT and $D$.
#
# For each run: the last iterate's worst-case value and violation, and the best
# robust-feasible iterate met.

# %%
names = ("robust-primal-dual", "pmd-pd", "rcpg-lagrangian-exact", "epirc-pgs", "rnpg", "rrpo")
runs = {name: plan(model, uset, name, iterations=500, seed=0) for name in names}
print(f"{'planner':<20}{'value':>10}{'violation':>11}{'feasible':>10}{'best feasible':>15}")
for name, r in runs.items():
    best = "-" if r.best is None else f"{r.best['value']:.4f}"
    print(f"{name:<20}{r.value:>10.4f}{r.violation:>11.4f}{r.feasible!s:>10}{best:>15}")
    # the result's numbers are the exact robust evaluation of its policy
    assert abs(rx.robust_evaluate(model, r.policy, uset).value - r.value) <= 1e-9
    # nothing robust-feasible is worth more than the certified upper side
    assert r.best is None or r.best["value"] <= bracket.upper + 1e-9

# %% [markdown]
# The picture: each run's iterates in the plane (worst-case violation, worst-case value).

# %%
fig, ax = plt.subplots(figsize=(7, 4))
for i, (name, r) in enumerate(runs.items()):
    c = r.curve
    ax.plot(c["violation"], c["value"], ".", ms=2, alpha=0.4, c=f"C{i}")
    ax.plot(c["violation"][-1], c["value"][-1], "o", c=f"C{i}", label=name)
ax.axhline(dual.hi, ls="--", c="k", lw=1, label="D")
ax.axhline(bracket.upper, ls=":", c="k", lw=1, label="OPT")
ax.set_xlabel("worst-case violation")
ax.set_ylabel("worst-case value")
ax.set_xscale("symlog", linthresh=1e-3)
ax.legend(fontsize=7, ncol=2)
plt.tight_layout()

# %% [markdown]
# What the runs show, checked:
#
# * **PMD-PD ends at the dual's answer**: worth $D$ (the unconstrained robust optimum),
#   with its multiplier at 0, and infeasible.  Against its single adversary the
#   constraint looks satisfied, so nothing pushes the multiplier up; against the cost's
#   own adversary the budget is violated.  No step size changes this: it is where the
#   saddle point of its Lagrangian is.
# * **The robust primal-dual of Wang et al.**, each cost against its own adversary, does
#   not see that gap: its iterates circle the budget's boundary (about half of the last
#   200 feasible), its multiplier settles, and its Lagrangian averages OPT; its last
#   iterate is feasible or not depending on where the circle stops, and the best
#   feasible iterate it met is within 1% of OPT.
# * The seed paper's RCPG (robust Lagrangian), in the learners' exact mode with their step
#   sizes, has barely started to learn its multiplier in 500 steps: infeasible.
# * The primal-only methods each met a robust-feasible iterate within 2% of OPT.

# %%
pmd = runs["pmd-pd"]
assert abs(pmd.value - dual.hi) <= 1e-3 * abs(dual.hi) and not pmd.feasible
assert np.all(pmd.curve["lam"][-50:] == 0.0)

rpd = runs["robust-primal-dual"].curve
tail = slice(-200, None)
feasible_share = np.mean(rpd["violation"][tail] == 0.0)
print(f"robust primal-dual: {feasible_share:.0%} of the last 200 iterates feasible, mean "
      f"Lagrangian {np.mean(rpd['lagrangian'][tail]):.4f} (OPT {bracket.upper:.4f})")
assert 0.2 <= feasible_share <= 0.8
assert abs(np.mean(rpd["lagrangian"][tail]) - bracket.upper) <= 0.01 * abs(bracket.upper)
assert bracket.upper - runs["robust-primal-dual"].best["value"] <= 0.01 * abs(bracket.upper)

for name in ("epirc-pgs", "rnpg", "rrpo"):
    best = runs[name].best
    assert best is not None and bracket.upper - best["value"] <= 0.02 * abs(bracket.upper)

# %% [markdown]
# So the certified gap separates the methods by the Lagrangian they optimise: one whose
# single adversary hides the cost's worst case ends at $D$, worth more than any feasible
# policy and infeasible; one that judges each cost by its own adversary, or a primal-only
# method, can end near OPT.  `docs/field.md` runs every planner on every certified
# instance of the suite and lists the records whose duality gap is certified;
# `docs/planners.md` gives each planner's updates, the version of the paper it follows
# and its hyperparameters.

# %% [markdown]
# ## 9.4 A gap on the suite: garnet-15x5-s1, L1 ball 0.05
#
# The certified suite has such records too: on nine garnet records the bracket's upper
# side lies below the certified dual (`docs/field.md`, "Where strong duality fails").
# One of them, loaded as any suite record: the stored bracket (the branch and bound
# spent 60,000 boxes on it and left it open at 1.2%), its lower side checked as above,
# and `record_duality_gap` on it.

# %%
from rcmdp_exact import suite

model, uset, rec = suite.load("garnet-15x5-s1", set="l1", level=0.05)
b = rec["bracket"]
print(f"{model.n_states} states, {model.n_actions} actions; OPT in [{b['lower']:.6f}, "
      f"{b['upper']:.6f}] ({b['status']}, {b['boxes']} boxes)")
low = rx.robust_evaluate(model, np.asarray(b["lower_policy"]), uset)
assert abs(low.value - b["lower"]) <= 1e-9 * abs(b["lower"])
assert low.costs_worst[0] <= model.d[0] + 1e-9
gap = record_duality_gap(model, uset, rec)
print(gap.message)
assert gap.strong_duality == "fails" and gap.gap_lo > 0.05

# %% [markdown]
# The same brute-force check of $D$: $g(\lambda)$ by robust value iteration on a grid
# of multipliers is never below the certified lower end of $D$, so never below the
# bracket's upper side either.

# %%
grid = np.linspace(0.0, 3.0, 61)
g = np.array([rx.robust_value_iteration(model, uset, np.array([lam])).value
              + lam * model.d[0] for lam in grid])
print(f"min over the grid of g: {g.min():.6f} at lambda = {grid[g.argmin()]:.2f}; "
      f"D >= {gap.dual_lo:.6f}; OPT <= {b['upper']:.6f}")
assert g.min() >= gap.dual_lo - 1e-9 and g.min() > b["upper"]

# %% [markdown]
# Four planners, three seeds each, 300 iterations (the field's budget): the last
# iterate, and the best robust-feasible iterate met, against the bracket.  Nothing
# robust-feasible may be worth more than the upper side; how far below the lower side
# each ends is the measurement.

# %%
print(f"{'planner':<20}{'seed':>5}{'value':>10}{'feasible':>10}{'best feasible':>15}"
      f"{'best - lower':>14}")
for name in ("robust-primal-dual", "pmd-pd", "rnpg", "epirc-pgs"):
    for seed in range(3):
        r = plan(model, uset, name, iterations=300, seed=seed)
        best = None if r.best is None else r.best["value"]
        shown = ("-", "-") if best is None else (f"{best:.4f}", f"{best - b['lower']:+.4f}")
        print(f"{name:<20}{seed:>5}{r.value:>10.4f}{r.feasible!s:>10}{shown[0]:>15}"
              f"{shown[1]:>14}")
        assert best is None or best <= b["upper"] + 1e-9

# %% [markdown]
# Here the dual's multiplier is not 0 (the grid's minimum is at about 0.6): unlike the
# small model above, the Lagrangian's adversary does not simply hide the constraint, and
# no planner is pinned at $D$.  Every robust-feasible iterate stays below the upper side,
# as it must; the last column is how far below the certified lower side each run
# stopped at the field's budget.  `docs/field.md` gives the same for the primal-dual
# planners on all nine records, ten seeds each.

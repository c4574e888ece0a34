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
# # 8. The certified benchmark suite: score a learner on it
#
# `rcmdp_exact.suite` holds the small instances that robust and safe RL papers use
# (RiverSwim, chains, machine replacement, forest management, FrozenLake, gridworlds,
# Garnets, the paper's domains, ...), each with a natural constraint and a budget that
# binds, and, in a data file shipped with the package, their **certified** values for a
# grid of uncertainty sets: the nominal optimum, the CMDP optimum, the robust optimum
# without constraints and the RCMDP bracket `lower <= OPT <= upper` with the policy
# that attains `lower`.  A learner is scored **exactly** against them:
#
# * its worst-case value $\min_P V(\pi, P)$ and worst-case violation
#   $\max_k(\max_P C_k(\pi, P) - d_k)^+$ over the set;
# * for a robust-feasible policy only, the share of the certified bracket reached, with
#   $f = \min_\pi \min_P V$ as zero: $(V - f)/(\text{upper} - f)$ is a lower bound on
#   the share of the optimum itself (a policy that violates its budget has no share:
#   its violation is shown apart).
#
# This tutorial loads an instance, checks its record independently, and scores the
# plain tabular baseline and a learner of your own on three instances.  The page
# `docs/suite.md` has every instance's definition and the leaderboard.

# %%
import matplotlib.pyplot as plt
import numpy as np

from rcmdp_exact import robust_evaluate, suite

print(len(suite.names()), "instances:", ", ".join(suite.names()))

# %% [markdown]
# ## 8.1 An instance, its set and its certified record
#
# `suite.load(name, set, level)` returns the model (with the budget of the instance's
# rule for that set), the set and the record of the data file.  The level r names the
# set on the grid; the set's own radius is r for the L1 balls, r^2/2 for the KL ball and
# r/2 for the interval set (`record["radius"]`).  RiverSwim's constraint is the number
# of upstream strokes; the set is the sa-rectangular L1 ball of radius 0.1 on the
# nominal support.

# %%
model, uset, rec = suite.load("riverswim-6", set="l1", level=0.1)
b = rec["bracket"]
print(rec["set"])
print(f"budget {rec['budget'][0]:.4f} (least worst-case cost {abs(rec['least'][0]):.4f}, "
      f"least cost of a robust optimum {rec['free'][0]:.4f})")
print(f"nominal optimum {rec['nominal_optimum']:.4f}, CMDP optimum {rec['cmdp_optimum']:.4f}, "
      f"robust optimum {rec['robust_optimum']:.4f}")
print(f"RCMDP bracket [{b['lower']:.4f}, {b['upper']:.4f}] ({b['status']})")

# %% [markdown]
# The lower side is a claim about one stored policy: it is robust-feasible and its
# worst-case value is `lower`.  We check it with the set's convex program (`inner="lp"`,
# cvxpy) instead of the sort-based worst case the data file was made with.

# %%
pi = np.asarray(b["lower_policy"])
ev = robust_evaluate(model, pi, uset, inner="lp", progress=False)
print(f"worst-case value {ev.value:.6f} (stored {b['lower']:.6f}), worst-case cost "
      f"{ev.costs_worst[0]:.6f} <= budget {model.d[0]:.6f}")
assert abs(ev.value - b["lower"]) <= 1e-6 * max(1.0, abs(ev.value))
assert ev.costs_worst[0] <= model.d[0] + 1e-6

# %% [markdown]
# ## 8.2 Score the baselines
#
# The tabular baseline explores with the uniform policy, estimates the kernel from counts
# and solves the CMDP of its estimate by linear programming (certainty equivalence): it
# ignores the set, so its worst-case cost may exceed the budget.  The least-cost
# baseline ignores the reward: it is robust-feasible on every record.

# %%
names = ["riverswim-6", "forest-10", "frozenlake-4x4"]
base = suite.score(algorithms=["tabular", "uniform", "least-cost"], names=names,
                   seeds=range(3), episodes=300, progress=False)
print(base.table())

# %% [markdown]
# Each score is an exact robust evaluation of the trained policy, which the result keeps
# (`rows[i]["policy"]`).  We recompute one with the LP worst case.

# %%
row = base.rows[0]
m, u, _ = suite.load(row["instance"])
ev = robust_evaluate(m, np.asarray(row["policy"]), u, inner="lp", progress=False)
print(row["instance"], row["entrant"], row["worst_value"], float(ev.value))
assert abs(row["worst_value"] - ev.value) <= 1e-6 * max(1.0, abs(ev.value))

# %% [markdown]
# ## 8.3 Your own learner
#
# A learner is a function of the trainer protocol (`docs/your_learner.md`): called as
# `train(model, algorithm, *, uset, seed, episodes, ...)`, it returns an object with
# `policy_table()` and `records`.  Here a small robust learner of our own: robust value
# iteration on the Lagrangian reward $r - \lambda c$ for a few multipliers, keeping the
# best policy whose worst-case cost fits the budget.  Its rows carry its own name
# (`name=`); `rcmdp suite score --trainer MODULE:FUNCTION --name NAME` does the same from
# the command line.

# %%
from rcmdp_exact.robust import robust_value_iteration


class Trained:
    def __init__(self, table):
        self.table, self.records = table, {}

    def policy_table(self):
        return self.table


def lagrangian_sweep(model, algorithm, *, uset=None, seed=0, episodes=0, critic=None,
                     gradient=None, inner=None, multiplier_update=None, eval_every=None,
                     true_model=None, progress=None):
    best, best_v = None, -np.inf
    for lam in (0.0, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0):
        pol = robust_value_iteration(model, uset, lam=[lam], method="policy_iteration",
                                     progress=False).policy
        ev = robust_evaluate(model, pol, uset, progress=False)
        if ev.costs_worst[0] <= model.d[0] and ev.value > best_v:
            best, best_v = pol, ev.value
    if best is None:  # nothing fits: the cheapest
        best = pol
    return Trained(np.asarray(best, dtype=float))


mine = suite.score(lagrangian_sweep, ["rcpg-lagrangian"], names, seeds=[0],
                   name="lagrangian-sweep", progress=False)
print(mine.table())
for r in mine.rows:  # a feasible policy can never beat the certified upper side
    if r["feasible"]:
        assert r["worst_value"] <= r["upper"] + 1e-7 * max(1.0, abs(r["upper"]))

# %% [markdown]
# The sweep returns deterministic policies, and a deterministic policy of a Lagrangian
# jumps over the budget: the feasible ones it finds are far below the certified lower
# side, whose policy randomises where the budget binds.
#
# ## 8.4 The shares side by side

# %%
rows = [*base.summary(), *mine.summary()]
labels = list(dict.fromkeys(r["entrant"] for r in rows))
fig, ax = plt.subplots(figsize=(7, 3))
w = 0.8 / len(labels)
for j, a in enumerate(labels):
    ys = [next((r["share_upper"] for r in rows if r["instance"] == n and r["entrant"] == a),
               0.0) or 0.0 for n in names]  # no robust-feasible run: no bar
    ax.bar(np.arange(len(names)) + (j - (len(labels) - 1) / 2) * w, ys, width=w, label=a)
ax.set_xticks(range(len(names)), names)
ax.axhline(1.0, color="k", lw=0.8)
ax.set_ylabel("share of the certified upper side\n(robust-feasible runs)")
ax.legend(fontsize=8)
plt.show()

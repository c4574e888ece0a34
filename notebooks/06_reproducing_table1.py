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
# # 6. Reproducing Table 1: a small sweep, its table and its figures
#
# The paper's Table 1 reports the penalised test return of six learners on five tests,
# averaged over 20 seeds.  `rcmdp_exact.protocol` runs that protocol and judges it
# exactly.  This tutorial runs a slice of it (one test, two learners, two seeds, a few
# hundred episodes) in well under a minute, and reads what comes out.
#
# What you will see:
#
# 1. the protocol as pure functions of frozen specifications (`RunSpec`), whose hash is
#    the key of the results store and whose seeds derive from the specification;
# 2. a sweep into a SQLite store, and the table it gives, beside the paper's numbers and
#    the exact ground truth;
# 3. resuming: a second sweep computes nothing, a wider one only what is missing;
# 4. one stored number re-derived by an independent exact evaluation, and a run
#    repeated bit for bit;
# 5. the report rebuilt from the store alone, byte for byte, and its figures.
#
# The protocol, the table's columns and the measured full reproduction are on the
# documentation's reproduction page (`docs/reproduction.md`).

# %%
import csv
import io
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import rcmdp_exact as rx
from rcmdp_exact import domains
from rcmdp_exact import protocol as ex

work = Path(tempfile.mkdtemp(prefix="rcmdp-tutorial-6-"))
db = work / "runs.sqlite"
print("store and outputs in", work)

# %% [markdown]
# ## 6.1 The protocol as pure functions
#
# One **run** is three phases, as in the paper: (1) estimate the model from episodes of
# the uniform random policy on the data model (Hoeffding L1 ball, 100 episodes for
# Inventory Management); (2) train the learner on the estimated nominal model (robust
# learners on its ball); (3) test the trained policy on every setting of the test suite,
# here exactly (finite-horizon backward induction) instead of 50 sampled episodes.
#
# A run is described by a frozen `RunSpec`.  Its key is the SHA-256 of its canonical
# JSON, and the seed of each phase is derived from the fields that phase depends on
# (`numpy.random.SeedSequence`), never from the order in which runs execute.  So the
# estimation of seed 0 is shared by every learner of that seed, while their training
# seeds differ.

# %%
cpg = ex.RunSpec("inventory", "cpg", 0, episodes=300)
rob = ex.RunSpec("inventory", "rcpg-lagrangian", 0, episodes=300)
print("key of", cpg.algorithm, cpg.key[:16], "| key of", rob.algorithm, rob.key[:16])
print("seeds of cpg:            ", cpg.seeds())
print("seeds of rcpg-lagrangian:", rob.seeds())
assert cpg.key != rob.key
assert ex.RunSpec("inventory", "cpg", 0, episodes=300).key == cpg.key   # pure: same fields
assert cpg.seeds()["estimation"] == rob.seeds()["estimation"]              # shared phase 1
assert cpg.seeds()["training"] != rob.seeds()["training"]

# %% [markdown]
# ## 6.2 A small sweep
#
# `plan` lists the jobs of a reproduction: the runs, and the ground-truth jobs that
# the table needs (the exact optimum of every test setting, and the certified RCMDP
# bracket of the estimated ball).  `sweep` computes the jobs the store does not have
# yet, serially, on local processes (joblib) or on a Dask cluster; only this process
# writes the store, one transaction per finished job.

# %%
tests, algorithms = ["inventory"], ["cpg", "rcpg-lagrangian"]
jobs = ex.plan(tests, algorithms, seeds=2, episodes=300, bracket_seeds=1, eval_every=50)
print(len(jobs), "jobs:", [type(j).__name__ for j in jobs])

with ex.Store(db) as store:
    store.request_tests(tests)
    summary = ex.sweep(store, jobs, workers=1, progress=False)
    counts = store.counts()
print(f"computed {summary.computed} of {summary.total} jobs in {summary.seconds:.1f} s")
print("rows in the store:", counts)
assert summary.computed == summary.total and not summary.failed
assert counts["runs"] == 4 and counts["tests"] == counts["distinct_test_rows"]

# %% [markdown]
# ## 6.3 Table 1 from the store
#
# `write_report` reads the store (and nothing else) and writes `table1.md`, the long
# `table1.csv` (one row per test, algorithm and test mode), `report.md` and the figures.
# Each cell is the mean over seeds of the penalised return
# $R_{pen} = V^T - 500 \max(0, C^T - d')$, averaged over the test settings, with its
# standard error; `greedy` tests the arg-max action as the paper did, `stochastic` the
# policy as trained.  Beside it: the paper's number, `bound` (the exact largest value
# of this metric any policy can reach), `cmdp_optimum` (the T-step CMDP optimum of each
# setting) and `robust_lower` (the test metric of the bracket's certified robust
# policy).

# %%
out = work / "report"
with ex.Store(db) as store:
    report = ex.write_report(store, out, tests=tests, algorithms=algorithms)
print(sorted(p.name for p in out.iterdir()))
print((out / "table1.md").read_text().split("\n\n")[2])

rows = list(csv.DictReader(io.StringIO((out / "table1.csv").read_text())))
cols = ["mode", "algorithm", "n_seeds", "mean", "spread", "paper_mean", "paper_spread",
        "bound", "cmdp_optimum", "robust_lower"]
for r in rows:
    print("  ".join(f"{c}={float(r[c]):.2f}" if c not in ("mode", "algorithm", "n_seeds")
                    else f"{c}={r[c]}" for c in cols))

# %% [markdown]
# The ground-truth columns bound what any learner can do: no trained policy's mean can
# exceed `bound`, because `bound` is the exact optimum of the same finite-horizon metric.
# And the paper's numbers sit beside ours so that every difference is visible; with two
# seeds and 300 episodes ours is of course a rough version of the 20 seeds and 5,000
# episodes of the full protocol.

# %%
for r in rows:
    assert float(r["mean"]) <= float(r["bound"]) + 1e-9
    assert int(r["n_seeds"]) == 2
assert {r["algorithm"] for r in rows} == set(algorithms)

# %% [markdown]
# ## 6.4 Resuming: only what is missing runs
#
# Planning the same sweep again finds every key in the store and computes nothing.
# Asking for a third seed adds only the two new runs (the ground truth of the test
# settings does not depend on the seed, and the bracket was asked for seed 0 only).
# An interrupted sweep (Ctrl-C, a killed process, a crashed worker) resumes the same way:
# a job is either fully written in one transaction or absent.

# %%
with ex.Store(db) as store:
    again = ex.sweep(store, jobs, workers=1, progress=False)
    wider = ex.sweep(store, ex.plan(tests, algorithms, seeds=3, episodes=300,
                                    bracket_seeds=1, eval_every=50),
                     workers=1, progress=False)
    counts3 = store.counts()
print(f"same sweep again: computed {again.computed}, already stored {again.stored_before}")
print(f"three seeds:      computed {wider.computed}, already stored {wider.stored_before}")
assert again.computed == 0 and again.stored_before == again.total
assert wider.computed == 2 and counts3["runs"] == 6
assert counts3["tests"] == counts3["distinct_test_rows"]        # no duplicated row

# %% [markdown]
# ## 6.5 Checking one stored number independently
#
# The store keeps each run's trained policy.  Take the CPG run of seed 0, round it to its
# greedy action, and evaluate it on one test setting with
# `rx.evaluate_finite_horizon` (backward induction on the setting's kernel, built here
# by `domains.perturbations`, not by the experiments code).  It must give the stored
# value and cost.  Then run the same spec again from nothing: the same policy, bit for
# bit.

# %%
with ex.Store(db) as store:
    run = next(r for r in store.runs() if r["algorithm"] == "cpg" and r["seed"] == 0)
    stored = [t for t in store.tests(run["key"]) if t["mode"] == "greedy"]
policy = np.asarray(run["info"]["policy"])
greedy = np.eye(policy.shape[1])[np.argmax(policy, axis=1)]
suite = domains.perturbations("inventory")
setting = next(s for s in suite if s.label == stored[0]["setting"])
mine = rx.evaluate_finite_horizon(setting.model, greedy)
print(f"{setting.label}: stored V = {stored[0]['value']:.10f}, C = {stored[0]['cost']:.10f}")
print(f"{' ' * len(setting.label)}  exact  V = {mine.value:.10f}, C = {mine.costs[0]:.10f}")
assert np.isclose(mine.value, stored[0]["value"], rtol=0, atol=1e-9)
assert np.isclose(mine.costs[0], stored[0]["cost"], rtol=0, atol=1e-9)

spec = ex.RunSpec.from_fields(run["spec"])
rerun = ex.run_one(spec)
assert rerun["key"] == run["key"]
assert np.array_equal(np.asarray(rerun["info"]["policy"]), policy)     # bit for bit
print("the run repeated from its spec gives the same policy, bit for bit")

# %% [markdown]
# ## 6.6 The report from the store alone, and the figures
#
# `rcmdp report --db PATH --out DIR` (here `write_report`) rebuilds every output from the
# store; two stores with the same runs give the same `table1.csv` byte for byte (full
# precision, no timestamps).  The figures are the paper's: the test value and the
# overshoot $\max(0, C^T - d')$ against the test parameter, and training curves of value,
# cost and $\lambda$ with the exact optimum drawn in.

# %%
with ex.Store(db) as store:
    ex.write_report(store, work / "first", tests=tests, algorithms=algorithms)
    ex.write_report(store, work / "second", tests=tests, algorithms=algorithms)
same = (work / "first" / "table1.csv").read_bytes() == (work / "second" / "table1.csv").read_bytes()
print("table1.csv rebuilt from the store, byte for byte the same:", same)
assert same

figures = sorted((work / "first").glob("*.png"))
fig, ax = plt.subplots(len(figures), 1, figsize=(12, 5.5 * len(figures)))
for a, path in zip(np.atleast_1d(ax), figures, strict=True):
    a.imshow(plt.imread(path))
    a.set_title(path.name)
    a.axis("off")
fig.tight_layout()
plt.show()

print("\n".join((work / "first" / "report.md").read_text().splitlines()[:12]))

# %% [markdown]
# ## 6.7 The same from the command line
#
# ```bash
# rcmdp reproduce --tests inventory --algorithms cpg,rcpg-lagrangian --seeds 2 \
#     --episodes 300 --out DIR          # this sweep (DIR/runs.sqlite is the store)
# rcmdp reproduce --quick               # every test and learner, 2 seeds, 200 episodes
# rcmdp reproduce                       # the full protocol: 20 seeds, 5,000 episodes
# rcmdp reproduce --dask tcp://HOST:8786  # on a Dask cluster
# rcmdp report --db DIR/runs.sqlite --out DIR2   # the outputs again, from the store
# ```
#
# Interrupt any of them and run it again: finished runs are kept and only the missing
# ones run.  The full protocol's table, figures, report and measured time are on the
# reproduction page (`docs/reproduction.md`), with the reasons, cell by cell, where
# ours differs from the paper.

"""Benchmark of the plain MDP solver ``solve_mdp`` against QuantEcon and pymdptoolbox.

Models: ``domains.garnet(S, 4, 3, n_constraints=0, seed=0, gamma=gamma)`` (three next
states per pair, rewards uniform), dense.  For each method of the same name the three
libraries solve the same discounted MDP:

* ``ours``: :func:`rcmdp_exact.solve_mdp` (``tol=1e-12``, its default);
* ``quantecon``: ``DiscreteDP(R, Q, beta).solve(method, epsilon=1e-10, max_iter=100_000)``
  on the arrays of ``model.to_quantecon()`` (its default ``max_iter`` is 250);
* ``mdptoolbox``: ``PolicyIteration``, ``ValueIteration`` (``epsilon=1e-10``) and
  ``PolicyIterationModified`` (``epsilon=1e-10``) on ``model.to_mdptoolbox()``.

Columns: median wall time over ``--repeats`` runs, the ratios quantecon / ours and
mdptoolbox / ours (above 1: ours is faster), and ``max|dV|``, the largest difference of
each library's values from the exact values of ``solve_mdp(method="policy_iteration")``
(a linear solve of the optimal policy), so the accuracy of each answer is printed beside
its time.  ``lp`` (ours only, HiGHS) is listed for its time and accuracy.

    python benchmarks/bench_mdp.py [--sizes 50,200,1000] [--gammas 0.9,0.99] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import rcmdp_exact as rx

METHODS = ("policy_iteration", "value_iteration", "modified_policy_iteration", "lp")


def timed(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def quantecon_solver(model, method):
    from quantecon.markov import DiscreteDP

    R, Q, beta = model.to_quantecon()
    ddp = DiscreteDP(R, Q, beta)
    if method == "lp":
        return None
    kw = {} if method == "policy_iteration" else {"epsilon": 1e-10, "max_iter": 100_000}
    return lambda: np.asarray(ddp.solve(method=method, **kw).v)


def mdptoolbox_solver(model, method):
    import mdptoolbox.mdp as mdp

    P, R = model.to_mdptoolbox()
    cls = {"policy_iteration": lambda: mdp.PolicyIteration(P, R, model.gamma),
           "value_iteration": lambda: mdp.ValueIteration(P, R, model.gamma, epsilon=1e-10,
                                                         max_iter=100_000),
           "modified_policy_iteration": lambda: mdp.PolicyIterationModified(
               P, R, model.gamma, epsilon=1e-10, max_iter=100_000)}.get(method)
    if cls is None:
        return None

    def run():
        solver = cls()
        solver.run()
        return np.asarray(solver.V, dtype=float)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,200,1000")
    ap.add_argument("--gammas", default="0.9,0.99")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    head = (f"{'S':>5} {'gamma':>5} {'method':<26} {'ours':>9} {'quantecon':>10} "
            f"{'x':>6} {'mdptoolbox':>11} {'x':>6} {'ours dV':>9} {'qe dV':>9} {'mdp dV':>9}")
    print(head)
    for S in (int(s) for s in args.sizes.split(",")):
        for gamma in (float(g) for g in args.gammas.split(",")):
            m = rx.domains.garnet(S, 4, 3, n_constraints=0, seed=0, gamma=gamma)
            exact = rx.solve_mdp(m, "policy_iteration").v
            for method in METHODS:
                t_ours, res = timed(lambda m=m, method=method: rx.solve_mdp(m, method),
                                    args.repeats)
                cells = [f"{t_ours * 1e3:8.1f}ms"]
                errs = [f"{np.abs(res.v - exact).max():9.1e}"]
                for make in (quantecon_solver, mdptoolbox_solver):
                    fn = make(m, method)
                    if fn is None:
                        cells += ["-".rjust(10 if make is quantecon_solver else 11), "-".rjust(6)]
                        errs.append("-".rjust(9))
                        continue
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t, v = timed(fn, args.repeats)
                    width = 10 if make is quantecon_solver else 11
                    cells += [f"{t * 1e3:{width - 2}.1f}ms", f"{t / t_ours:6.2f}"]
                    errs.append(f"{np.abs(v - exact).max():9.1e}")
                print(f"{S:>5} {gamma:>5} {method:<26} {' '.join(cells)} {' '.join(errs)}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

"""Per-call costs that a learner pays thousands of times, beside plain numpy.

* Kernel swap on Safe Navigation 1: ``model.with_transitions(P, check=False)`` (a trusted
  kernel: a copy), ``with_transitions(P)`` (checks only what depends on P),
  ``model.replace(P=P)`` (rebuilds and revalidates the whole model) and a fresh
  ``TabularCMDP(...)``; the reference is ``np.array(P)``, the copy any swap must make.
* The L1 worst case of one row (n = 5, 25, 100): ``worst_case_l1(p_hat, z, alpha)`` on
  1-D arrays, validated and with ``check=False`` (the trusted path), and the batched
  call on one row, beside ``np.argsort`` of the same row (the floor of any sort-based
  solver called from Python) and the compiled row of the learners
  (``rcmdp_exact.uncertainty.l1_numba.worst_row``, what a training step pays).

Prints microseconds per call (median of --repeats rounds of --number calls each) and
the ratio to ``np.argsort``.  ``--json PATH`` also writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import timeit

import numpy as np

import rcmdp_exact as rx
from rcmdp_exact import domains


def per_call(fn, number: int, repeats: int) -> float:
    """Median over ``repeats`` rounds of the mean time of one call, in microseconds."""
    times = timeit.repeat(fn, number=number, repeat=repeats)
    return statistics.median(times) / number * 1e6


def bench_swap(number, repeats):
    nav = domains.safe_navigation_1()
    P = np.array(domains.safe_navigation_1(p_success=0.6).P)
    args = dict(R=nav.R, C=nav.C, d=nav.d, gamma=nav.gamma, p0=nav.p0, horizon=nav.horizon,
                terminal=nav.terminal, outcomes=nav.outcomes)
    ref = per_call(lambda: np.array(P), number, repeats)
    rows = [
        ("copy of P (reference)", ref),
        ("with_transitions(P, check=False)",
         per_call(lambda: nav.with_transitions(P, check=False), number, repeats)),
        ("with_transitions(P)", per_call(lambda: nav.with_transitions(P), number, repeats)),
        ("replace(P=P)", per_call(lambda: nav.replace(P=P), number // 10, repeats)),
        ("TabularCMDP(P, ...)", per_call(lambda: rx.TabularCMDP(P, **args), number // 10,
                                         repeats)),
    ]
    return ref, rows


def bench_row(number, repeats, n, seed=0):
    from rcmdp_exact.uncertainty.l1_numba import worst_row

    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    z = rng.normal(size=n)
    sup = np.ones(n, dtype=bool)
    out = np.empty(n)
    worst_row(p, z, sup, 0.5, out)  # compile (or load from numba's cache) first
    ref = per_call(lambda: np.argsort(-z, kind="stable"), number, repeats)
    compiled = per_call(lambda: worst_row(p, z, sup, 0.5, out), number, repeats)
    ours = per_call(lambda: rx.worst_case_l1(p, z, 0.5), number, repeats)
    trusted = per_call(lambda: rx.worst_case_l1(p, z, 0.5, check=False), number, repeats)
    batched = per_call(lambda: rx.worst_case_l1(p[None], z[None], np.array([0.5])), number,
                       repeats)
    a = rx.worst_case_l1(p, z, 0.5)
    assert abs(a.value - float(out @ z)) <= 1e-12 * max(1.0, abs(a.value))
    return ref, compiled, ours, trusted, batched


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    out = {"swap": {}, "row": {}}
    ref, rows = bench_swap(args.number, args.repeats)
    print("Kernel swap, Safe Navigation 1 (S = 25, A = 4)")
    print(f"{'':36s} {'us/call':>9s} {'x copy':>8s}")
    for name, t in rows:
        print(f"{name:36s} {t:9.1f} {t / ref:8.1f}")
        out["swap"][name] = t
    print()
    print("L1 worst case of one row (alpha = 0.5), microseconds per call")
    print(f"{'n':>4s} {'np.argsort':>11s} {'compiled':>9s} {'1-D':>7s} {'ratio':>6s} "
          f"{'check=False':>12s} {'ratio':>6s} {'batched':>9s}")
    for n in (5, 25, 100):
        ref, compiled, ours, trusted, batched = bench_row(args.number, args.repeats, n)
        print(f"{n:4d} {ref:11.2f} {compiled:9.2f} {ours:7.1f} {ours / ref:6.1f} "
              f"{trusted:12.1f} {trusted / ref:6.1f} {batched:9.1f}")
        out["row"][n] = {"argsort": ref, "compiled": compiled, "ours": ours,
                         "trusted": trusted, "batched": batched}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()

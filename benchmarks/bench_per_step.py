"""Per-call costs that a learner pays thousands of times, beside plain numpy.

* Kernel swap on Safe Navigation 1: ``model.with_transitions(P, check=False)`` (a trusted
  kernel: a copy), ``with_transitions(P)`` (checks only what depends on P),
  ``model.replace(P=P)`` (rebuilds and revalidates the whole model) and a fresh
  ``TabularCMDP(...)``; the reference is ``np.array(P)``, the copy any swap must make.
* The L1 worst case of one row (n = 5, 25, 100): ``worst_case_l1(p_hat, z, alpha)`` on
  1-D arrays, validated and with ``check=False`` (the trusted path), beside the same
  algorithm written inline in plain numpy on the same arrays (argsort, cumulative sum,
  one crossing), and the batched call on one row.

Prints microseconds per call (median of --repeats rounds of --number calls each) and
the ratio to the plain-numpy reference.  ``--json PATH`` also writes the numbers.
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


def plain_worst_case(p, z, alpha):
    """The sort-based inner problem inline in numpy (the reference of the fast path)."""
    n = p.size
    o = np.argsort(-z, kind="stable")
    k = o[-1]
    eps = max(0.0, min(0.5 * alpha, 1.0 - p[k]))
    ps = p[o]
    ps[-1] = 0.0
    cs = np.cumsum(ps)
    j = min(int(np.count_nonzero(cs <= eps)), n - 1)
    part = min(max(eps - (cs[j] - ps[j]), 0.0), ps[j])
    out = p.copy()
    out[o[:j]] = 0.0
    out[o[j]] -= part
    out[k] = p[k] + eps
    return out, float(out @ z)


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
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n))
    z = rng.normal(size=n)
    ref = per_call(lambda: plain_worst_case(p, z, 0.5), number, repeats)
    ours = per_call(lambda: rx.worst_case_l1(p, z, 0.5), number, repeats)
    trusted = per_call(lambda: rx.worst_case_l1(p, z, 0.5, check=False), number, repeats)
    batched = per_call(lambda: rx.worst_case_l1(p[None], z[None], np.array([0.5])), number,
                       repeats)
    a = rx.worst_case_l1(p, z, 0.5)
    _, v = plain_worst_case(p, z, 0.5)
    assert abs(a.value - v) <= 1e-12 * max(1.0, abs(v))
    return ref, ours, trusted, batched


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
    print("L1 worst case of one row (alpha = 0.5)")
    print(f"{'n':>4s} {'plain numpy':>12s} {'ours 1-D':>9s} {'ratio':>6s} "
          f"{'check=False':>12s} {'ratio':>6s} {'batched':>9s}")
    for n in (5, 25, 100):
        ref, ours, trusted, batched = bench_row(args.number, args.repeats, n)
        print(f"{n:4d} {ref:12.1f} {ours:9.1f} {ours / ref:6.2f} {trusted:12.1f} "
              f"{trusted / ref:6.2f} {batched:9.1f}")
        out["row"][n] = {"plain": ref, "ours": ours, "trusted": trusted, "batched": batched}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()

"""Timings of the ground truth and the width of the RCMDP bracket.

Sections (``--section``, default all):

* ``pipeline``: the whole ``rcmdp ground-truth`` table per paper domain and for all
  three (estimation, LPs, bracket with the three RCPG variant targets, exact test
  metrics of every policy on every test setting), and the share of each step.
* ``lp``: the occupancy LP (discounted, and finite horizon with the T-step budget) by
  HiGHS and by CLARABEL on each training model, side by side with the ratio.
* ``s-rect``: the s-rectangular ball's box update (the chord search of
  ``bellman_max_min(method="dual")``) compiled against its numpy oracle: the time of
  one call on the box updates of machine-10/s-l1/0.1's bracket (300 boxes), and the
  whole bracket at 1,000 boxes (``deep_after`` 0) with either, its bounds beside
  (the same bits), and the ratios.
* ``riverswim20``: the lower side of RiverSwim-20 (Strehl and Littman's bank) with one
  box and no dual evaluations: the defaults, ``n_ascent=300``, ``n_starts=12`` and both,
  SLSQP restarted every ``search.RESTART_EVERY`` iterations and in one run (the
  restarts switched off), and the defaults' share of the best policy found apart
  (0.0635314) for seeds 0 to 3 (docs/ground_truth.md, "RiverSwim-20's lower side").
* ``gaps``: ``rcmdp_bracket`` with its default arguments on small random RCMDPs (S <= 4,
  A <= 3, K <= 2, gamma in {0.8, 0.85, 0.9}, radii in [0.1, 0.6], budgets between the
  least and the unconstrained worst-case cost): the gap ``upper - lower`` of every model,
  its median, and ``lower`` against an independent search for robust-feasible policies
  written here (enumeration, random policies, penalised hill climbing, bisection of
  mixtures; every number by ``robust_evaluate``).
* ``garnets``: the table of the goals: Garnets (``garnet_case``: A = 3, branching 3,
  gamma 0.9, radii 0.1-0.6) of S in ``--sizes`` (default 6, 10, 15, 20), K = 1 and
  2, seeds ``--seeds`` (default 0-4), ``rcmdp_bracket(..., time_limit=--seconds (60),
  max_boxes=10**7)``, then S in ``--large`` (default 50) with K = 1 and
  ``--large-seconds`` (600): the relative gap ``gap / max(1, |lower|)`` reached, the
  first second of the trace within 1%, the seconds (wall and CPU) and the load
  average; the models certified to 1% within the time.
* ``bounds``: the box bounds side by side on the same models (``--box-bounds`` lists
  the variants, default: the Lagrangian bound alone, with the performance-difference
  bound, with the occupancy LP, with both), at the same time budget: the relative gap.
* ``small``: every model of ``small_case`` with S <= 3 (24 of the first 40),
  ``rcmdp_bracket(model, uset, rtol=1e-6)`` with the other arguments at their defaults,
  after one warm-up call: seconds (wall and CPU) per model, its relative gap and the
  boxes; the goal is every model certified to 1e-6 in under 0.5 s.
* ``inventory``: the paper's Inventory on its estimated ball (seed 0), the default
  arguments: the gap relative to the value; the goal is below 0.1%.
* ``deadline``: the safety net ``time_limit = 3`` (and ``max_boxes = 10**7``) on Garnets
  of ``--deadline-sizes`` states (default 20 to 400): the seconds past the limit (the
  goal: under one second) and the phase it stopped.
* ``load``: one Garnet (``--sizes``, first) at a budget of ``--boxes`` boxes, on the idle
  machine and beside two CPU-bound processes per core: the same bracket to the bit
  (issue 43: work budgets, not clocks, decide it).
* ``dask``: one Garnet (``--sizes``, first; K = 1, seed 0) with a budget of
  ``--boxes`` boxes serially and on a local Dask cluster of 2 single-thread workers:
  both answers (the same bits) and the ratio of the times.
* ``domains``: the bracket on the estimated balls of the paper's three domains (seed 0,
  the paper's episodes), with the budget of the ground-truth table and with the
  default budget.
* ``structured``: the classic instances of robust RL papers
  (:mod:`rcmdp_exact.domains.classic`, budgets by its halfway rule): RiverSwim-6 (60 s),
  RiverSwim-20, the 10-state chain, machine replacement with 10 states, FrozenLake 4x4
  (600 s each), FrozenLake 8x8 and CliffWalking (600 s), each on an L1 ball of radius
  0.1 over all next states and over the nominal support, and FrozenLake 8x8 on a KL
  ball of radius 0.1: lower, upper, the gap absolute and relative to |lower|, boxes,
  boxes per second, seconds and the load.  ``--quick``: 10 s and 30 s instead of 60 s and
  600 s; ``--only`` a comma-separated list of instance names; ``--max-boxes`` a box
  budget (box counts do not depend on the machine; the time limit is then a guard).
* ``anatomy``: where the gap of a structured instance (``--only``, default FrozenLake
  8x8 on both of its sets and RiverSwim-20) lies, for K = 1: the certified Lagrangian
  dual D (``certified_dual``, an upper bound on OPT), the robust-Lagrangian greedy
  deterministic policies on a grid of multipliers around D's, the best robust-feasible
  one and the infeasible one next to it, the states where the two differ, the best
  robust-feasible policy on the straight line between them (bisection on the budget;
  a lower bound on OPT) and the robust Lagrangian g at the slope of that pair, which
  would equal the line's value if value and cost shared one adversary: the difference
  is what the two adversaries' disagreement adds to the dual.
* ``alpha0``: at alpha = 0 the bracket must equal the CMDP optimum: dense random models
  with binding budgets (the generator of the tests, ``testing.dense_binding_cmdp``),
  rewards and costs of magnitude 1 or 10 (``--magnitudes``), K = 1..3, gamma up to
  0.99; the largest
  differences between the bracket and the LP, the LP policy's largest budget excess by
  an exact dense evaluation, and the status agreement.

    python benchmarks/bench_ground_truth.py [--section gaps] [--cases N] [--repeats N]
    python benchmarks/bench_ground_truth.py --section alpha0 --cases 1500 [--magnitudes 1,10]
    python benchmarks/bench_ground_truth.py --section garnets [--sizes 6,10] [--seeds 0-4]
        [--seconds 60] [--constraints 1,2] [--large 50] [--large-seconds 600]
    python benchmarks/bench_ground_truth.py --section inventory
    python benchmarks/bench_ground_truth.py --section small
    python benchmarks/bench_ground_truth.py --section structured [--quick] [--only riverswim6]
        [--max-boxes 2000] [--bracket-bounds local+lp]
    python benchmarks/bench_ground_truth.py --section load [--sizes 10] [--boxes 400]
    python benchmarks/bench_ground_truth.py --section dask --sizes 50 --boxes 400
    python benchmarks/bench_ground_truth.py --section anatomy [--only frozenlake8]
    python benchmarks/bench_ground_truth.py --section riverswim20
    python benchmarks/bench_ground_truth.py --section s-rect
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
import warnings

import numpy as np

from rcmdp_exact import rcmdp_bracket, robust_evaluate
from rcmdp_exact.domains import ESTIMATION_EPISODES, PAPER_DOMAINS, garnet, paper_domain
from rcmdp_exact.ground_truth import solve_cmdp, solve_cmdp_finite_horizon
from rcmdp_exact.testing import budget_levels, dense_binding_cmdp
from rcmdp_exact.uncertainty import l1_ball

SECTIONS = ("pipeline", "lp", "gaps", "garnets", "bounds", "small", "inventory", "deadline",
            "load", "dask", "domains", "alpha0", "structured", "anatomy", "riverswim20", "s-rect")

#: The instances of ``--section structured``: (name, builder keywords, set, seconds of
#: the goal).  Sets: ("l1", support) or ("kl", None), radius 0.1.
STRUCTURED = (
    ("riverswim6", "riverswim", {"n": 6}, ("l1", "all"), 60.0),
    ("riverswim6", "riverswim", {"n": 6}, ("l1", "nominal"), 60.0),
    ("riverswim20", "riverswim", {"n": 20}, ("l1", "all"), 600.0),
    ("riverswim20", "riverswim", {"n": 20}, ("l1", "nominal"), 600.0),
    ("chain10", "chain", {"n": 10}, ("l1", "all"), 600.0),
    ("chain10", "chain", {"n": 10}, ("l1", "nominal"), 600.0),
    ("machine10", "machine_replacement", {"n": 10}, ("l1", "all"), 600.0),
    ("machine10", "machine_replacement", {"n": 10}, ("l1", "nominal"), 600.0),
    ("frozenlake4", "frozen_lake", {"map": "4x4"}, ("l1", "all"), 600.0),
    ("frozenlake4", "frozen_lake", {"map": "4x4"}, ("l1", "nominal"), 600.0),
    ("frozenlake8", "frozen_lake", {"map": "8x8"}, ("l1", "all"), 600.0),
    ("frozenlake8", "frozen_lake", {"map": "8x8"}, ("kl", None), 600.0),
    ("cliffwalking", "cliff_walking", {}, ("l1", "all"), 600.0),
)


def best_of(f, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


# --------------------------------------------------------------------------- models
def small_case(seed: int):
    """A small random RCMDP: (model, uset); the same seed gives the same model."""
    rng = np.random.default_rng(np.random.SeedSequence([20261123, seed]))
    S, A, K = int(rng.integers(2, 5)), int(rng.integers(2, 4)), int(rng.integers(1, 3))
    gamma = float(rng.choice([0.8, 0.85, 0.9]))
    branching = int(rng.integers(1, S + 1))
    m = garnet(S, A, branching, n_constraints=K, seed=int(rng.integers(2**31)), gamma=gamma)
    uset = l1_ball(m, rng.uniform(0.1, 0.6, size=(S, A)), support="all")
    frac = float(rng.uniform(0.2, 0.8))
    # budgets between the worst-case costs of the policy of least total worst-case cost
    # (kept feasible with a slack) and those of the unconstrained robust optimum
    levels = budget_levels(m, uset)
    c_safe, c_free = levels.joint, levels.free
    slack = 0.02 * np.abs(m.c).max() / (1 - gamma)
    d = np.maximum(c_safe + slack, (1 - frac) * c_safe + frac * c_free)
    return m.replace(d=d), uset


def garnet_case(seed: int, S: int, A: int, K: int):
    """A larger Garnet RCMDP built like :func:`small_case`."""
    rng = np.random.default_rng(np.random.SeedSequence([20261124, S, A, K, seed]))
    m = garnet(S, A, 3, n_constraints=K, seed=int(rng.integers(2**31)), gamma=0.9)
    uset = l1_ball(m, rng.uniform(0.1, 0.6, size=(S, A)), support="all")
    levels = budget_levels(m, uset)
    c_safe, c_free = levels.joint, levels.free
    d = np.maximum(c_safe + 0.02 * np.abs(m.c).max() / 0.1, 0.5 * (c_safe + c_free))
    return m.replace(d=d), uset


def robust_numbers(model, uset, policy):
    """Worst-case value and worst-case costs (K,) of a policy by robust_evaluate."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = robust_evaluate(model, policy, uset, tol=1e-12)
    return float(res.value), np.asarray(res.costs_worst)


def reference_search(model, uset, seed: int = 0, n_random: int = 100, n_climb: int = 150,
                     n_starts: int = 4, weight: float = 100.0) -> float:
    """The best worst-case value of a robust-feasible policy found by a plain search."""
    rng = np.random.default_rng(seed)
    S, A, d = model.n_states, model.n_actions, model.d
    best = [-np.inf, None]

    def score(pi):
        v, c = robust_numbers(model, uset, pi)
        if np.all(c <= d) and v > best[0]:
            best[0], best[1] = v, pi
        return v - weight * np.maximum(c - d, 0.0).sum(), v, c

    pool = [np.eye(A)[list(a)] for a in itertools.product(range(A), repeat=S)]
    pool += list(rng.dirichlet(np.ones(A), size=(n_random, S)))
    scored = sorted(((score(pi), pi) for pi in pool), key=lambda t: -t[0][0])
    for (sc, _, _), pi in scored[:n_starts]:
        step = 0.5
        for _ in range(n_climb):
            s = rng.integers(S)
            cand = pi.copy()
            cand[s] = (1 - step) * cand[s] + step * rng.dirichlet(np.full(A, 0.5))
            new = score(cand)
            if new[0] > sc:
                pi, sc = cand, new[0]
            else:
                step = max(0.97 * step, 1e-4)
    if best[1] is not None:
        base = best[1]
        risky = [pi for (_, v, c), pi in scored[:20] if v > best[0] and np.any(c > d)]
        for other in risky[:5]:
            t, _ = bisect_line(model, uset, base, other, 30)
            score((1 - t) * base + t * other)
    return best[0]


def bisect_line(model, uset, safe, risky, steps: int):
    """(theta, value): the largest robust-feasible theta of (1 - theta) safe + theta
    risky found by ``steps`` bisection steps, and its worst-case value (None if no
    theta > 0 was feasible), every number by robust_evaluate."""
    lo, hi, value = 0.0, 1.0, None
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        v, c = robust_numbers(model, uset, (1 - mid) * safe + mid * risky)
        if np.all(c <= model.d):
            lo, value = mid, v
        else:
            hi = mid
    return lo, value


# --------------------------------------------------------------------------- sections
def _bracket_row(i, model, uset, kw):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        br = rcmdp_bracket(model, uset, progress=False, **kw)
    sec = time.perf_counter() - t0
    extra = (f"  {br.get('lower_method', '-'):<16} {br.get('upper_method', '-'):<16} "
             f"{br.get('boxes', '-'):>6}")
    line = (f"{i:>4} {model.n_states:>2} {model.n_actions:>2} {model.n_constraints:>2} "
            f"{model.gamma:>5} {br.lower:>10.5f} {br.upper:>10.5f} "
            f"{br.gap:>9.2e} {sec:>8.2f}")
    return br, line, extra


def section_gaps(cases, reference: bool, title: str, kw=None) -> None:
    print(title)
    print(f"{'case':>4} {'S':>2} {'A':>2} {'K':>2} {'gamma':>5} {'lower':>10} "
          f"{'upper':>10} {'gap':>9} {'seconds':>8}" + ("  reference  lower-ref" if reference
                                                      else "") + "  lower method     "
          "upper method      boxes")
    gaps, below = [], []
    for i, (model, uset) in enumerate(cases):
        br, line, extra = _bracket_row(i, model, uset, kw or {})
        gaps.append(br.gap)
        if reference:
            ref = reference_search(model, uset, seed=i)
            below.append((ref - br.lower) / max(1.0, abs(ref)))
            line += f"  {ref:>9.5f}  {br.lower - ref:>9.2e}"
        print(line + extra, flush=True)
    print(f"median gap {statistics.median(gaps):.4g}, mean {statistics.fmean(gaps):.4g}, "
          f"largest {max(gaps):.4g}")
    if reference:
        print(f"lower below the reference search by more than 1% of max(1, |ref|): "
              f"{sum(b > 0.01 for b in below)} of {len(below)}; largest shortfall "
              f"{max(below):.3g}")


def _load() -> str:
    import os

    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _timed_bracket(model, uset, **kw):
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        br = rcmdp_bracket(model, uset, progress=False, **kw)
    return br, time.perf_counter() - t0, time.process_time() - c0


def section_garnets(sizes, seeds, constraints, seconds: float, large=(),
                    large_seconds: float = 600.0) -> None:
    runs = [(S, K, seconds) for S in sizes for K in constraints]
    runs += [(S, 1, large_seconds) for S in large]
    print("rcmdp_bracket on garnet_case (A = 3), max_boxes = 10**7; relative gap = "
          "the result's relative_gap (gap / max(|lower|, 1e-6 value range))")
    print(f"{'S':>3} {'K':>2} {'seed':>4} {'lower':>11} {'upper':>11} {'rel gap':>9} "
          f"{'to 1% (s)':>9} {'wall':>6} {'cpu':>6} {'boxes':>7}  status            load")
    for S, K, seconds in runs:
        hit = []
        for seed in seeds:
            m, uset = garnet_case(seed, S, 3, K)
            br, wall, cpu = _timed_bracket(m, uset, time_limit=seconds,
                                           max_boxes=10**7)
            rel = br.relative_gap
            tr = br.trace
            floor = 1e-6 * br.value_range
            ok = (tr[:, 3] - tr[:, 2]) <= 0.01 * np.maximum(floor, np.abs(tr[:, 2]))
            first = f"{tr[np.argmax(ok), 0]:9.1f}" if ok.any() else f"{'-':>9}"
            hit.append(rel <= 0.01)
            print(f"{S:>3} {K:>2} {seed:>4} {br.lower:>11.5f} {br.upper:>11.5f} "
                  f"{rel:>9.2e} {first} {wall:>6.1f} {cpu:>6.1f} {br.boxes:>7} "
                  f" {br.status:<17} {_load()}", flush=True)
        print(f"    S = {S}, K = {K}, time_limit = {seconds:g} s: {sum(hit)} of "
              f"{len(hit)} within 1%", flush=True)


def section_bounds(sizes, seeds, constraints, seconds: float, variants) -> None:
    print(f"box bounds side by side (time_limit = {seconds:g} s): relative gap, boxes")
    print(f"{'S':>3} {'K':>2} {'seed':>4} " + " ".join(f"{'+'.join(v) or 'lagrangian':>22}"
                                                      for v in variants))
    for S in sizes:
        for K in constraints:
            for seed in seeds:
                m, uset = garnet_case(seed, S, 3, K)
                cells = []
                for v in variants:
                    br, wall, _ = _timed_bracket(m, uset, time_limit=seconds,
                                                 max_boxes=10**7, box_bounds=v)
                    cells.append(f"{br.relative_gap:>10.2e} "
                                 f"{br.boxes:>7} {wall:>3.0f}s")
                print(f"{S:>3} {K:>2} {seed:>4} " + " ".join(f"{c:>22}" for c in cells)
                      + f"  {_load()}", flush=True)


def section_small(rules=None) -> None:
    kw = dict(rules or {})
    cases = [c for c in (small_case(i) for i in range(40)) if c[0].n_states <= 3]
    _timed_bracket(*cases[0])  # imports and compilation out of the timing
    print(f"rcmdp_bracket(model, uset, rtol=1e-6), defaults otherwise, on the {len(cases)} "
          f"models of small_case with S <= 3")
    print(f"{'case':>4} {'S':>2} {'A':>2} {'K':>2} {'rel gap':>9} {'boxes':>6} {'wall':>6} "
          f"{'cpu':>6}  status")
    walls, cpus, closed = [], [], 0
    for i, (m, uset) in enumerate(cases):
        br, wall, cpu = _timed_bracket(m, uset, rtol=1e-6, **kw)
        walls.append(wall)
        cpus.append(cpu)
        closed += bool(br.closed)
        print(f"{i:>4} {m.n_states:>2} {m.n_actions:>2} {m.n_constraints:>2} "
              f"{br.get('relative_gap', np.nan):>9.1e} {br.boxes:>6} {wall:>6.2f} "
              f"{cpu:>6.2f}  {br.status}", flush=True)
    print(f"certified to 1e-6: {closed} of {len(cases)}; wall median {np.median(walls):.2f} s,"
          f" largest {max(walls):.2f} s; CPU median {np.median(cpus):.2f} s, largest "
          f"{max(cpus):.2f} s; under 0.5 s (wall): {sum(w < 0.5 for w in walls)}; {_load()}")


def section_dask(S: int, boxes: int) -> None:
    from distributed import Client, LocalCluster

    m, uset = garnet_case(0, S, 3, 1)
    kw = dict(time_limit=1e6, max_boxes=boxes)
    serial, t_serial, _ = _timed_bracket(m, uset, **kw)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, \
            Client(cluster) as client:
        dask, t_dask, _ = _timed_bracket(m, uset, client=client, **kw)
    print(f"garnet_case(0, {S}, 3, 1), max_boxes = {boxes}")
    for name, br, t in (("serial", serial, t_serial), ("dask, 2 workers", dask, t_dask)):
        print(f"  {name:<16} [{br.lower!r}, {br.upper!r}] {br.boxes} boxes, {t:.1f} s, "
              f"branch and bound from {br.trace[0, 0]:.1f} s")
    same = serial.lower == dask.lower and serial.upper == dask.upper
    bb_s = t_serial - serial.trace[0, 0]
    bb_d = t_dask - dask.trace[0, 0]
    print(f"  the same bounds: {same}; time ratio serial / dask {t_serial / t_dask:.2f} "
          f"(branch and bound alone {bb_s / bb_d:.2f}); {_load()}")


def section_deadline(sizes, seconds: float) -> None:
    print(f"the safety net kept: rcmdp_bracket(garnet_case(0, S, 3, 1), time_limit="
          f"{seconds:g}, max_boxes=10**7), defaults otherwise; seconds past the limit, the "
          f"phase it stopped")
    print(f"{'S':>4} {'wall':>7} {'past':>6}  status            stopped  {'boxes':>5}  "
          f"reproducible  phase  load")
    for S in sizes:
        m, uset = garnet_case(0, S, 3, 1)
        br, wall, _ = _timed_bracket(m, uset, time_limit=seconds, max_boxes=10**7)
        print(f"{S:>4} {wall:>7.2f} {wall - seconds:>6.2f}  {br.status:<17} "
              f"{br.stopped:<8} {br.boxes:>5}  {br.reproducible!s:<12}  "
              f"{br.time_limit_phase}  {_load()}", flush=True)


def _spin(stop) -> None:
    """A CPU-bound loop until ``stop`` is set (another process: the load)."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1103515245 + 12345) % 2**31


def section_load(S: int, boxes: int) -> None:
    """The same bracket, at a work budget, on an idle machine and beside CPU-bound
    processes (two per core): every number the same, bit for bit (issue 43)."""
    import multiprocessing as mp
    import os

    m, uset = garnet_case(0, S, 3, 1)
    kw = dict(max_boxes=boxes, time_limit=None, variants=("value", "lagrangian"))
    idle, t_idle, _ = _timed_bracket(m, uset, **kw)
    stop = mp.Event()
    spinners = [mp.Process(target=_spin, args=(stop,), daemon=True)
                for _ in range(2 * (os.cpu_count() or 1))]
    for p in spinners:
        p.start()
    try:
        time.sleep(2.0)
        loaded, t_loaded, _ = _timed_bracket(m, uset, **kw)
        load = _load()
    finally:
        stop.set()
        for p in spinners:
            p.join(10)
    same = all(np.array_equal(np.asarray(idle[k]), np.asarray(loaded[k]))
               for k in ("lower", "upper", "boxes", "policy", "lam", "message"))
    same = same and np.array_equal(idle.trace[:, 1:], loaded.trace[:, 1:])
    same = same and (idle.dual.lo, idle.dual.hi) == (loaded.dual.lo, loaded.dual.hi)
    print(f"garnet_case(0, {S}, 3, 1), max_boxes = {boxes}, no time limit: idle "
          f"[{idle.lower!r}, {idle.upper!r}] {idle.boxes} boxes in {t_idle:.1f} s; beside "
          f"{len(spinners)} CPU-bound processes ({load}) the same to the bit: {same}, in "
          f"{t_loaded:.1f} s")


def section_inventory() -> None:
    from rcmdp_exact.uncertainty import estimate

    est = estimate(paper_domain("inventory"), ESTIMATION_EPISODES["inventory"]["paper"],
                   seed=0, progress=False)
    m = est.nominal
    print(f"rcmdp_bracket on the paper's Inventory (S = {m.n_states}, A = {m.n_actions}, "
          f"K = {m.n_constraints}; the ball estimated with the paper's episodes, seed 0), "
          f"default arguments")
    br, wall, cpu = _timed_bracket(m, est.uset)
    rel = br.gap / abs(br.lower)
    print(f"  [{br.lower:.8f}, {br.upper:.8f}] gap {br.gap:.3e} = {100 * rel:.4f}% of |lower|"
          f"; {br.boxes} boxes, {wall:.1f} s wall, {cpu:.1f} s CPU, status {br.status}; "
          f"goal < 0.1%: {'met' if rel < 1e-3 else 'not met'}; {_load()}")


def section_domains() -> None:
    from rcmdp_exact.names import BRACKET_ASCENT, BRACKET_BOXES
    from rcmdp_exact.uncertainty import estimate

    budgets = {"table": {"max_boxes": BRACKET_BOXES, "n_ascent": BRACKET_ASCENT,
                         "time_limit": 120.0}, "default": {}}
    print("rcmdp_bracket on the estimated balls of the paper's domains (seed 0)")
    print(f"{'domain':<10} {'budget':<8} {'lower':>12} {'upper':>12} {'gap':>9} "
          f"{'seconds':>8}  lower method     upper method      boxes")
    for name in PAPER_DOMAINS:
        est = estimate(paper_domain(name), ESTIMATION_EPISODES[name]["paper"], seed=0,
                       progress=False)
        for label, kw in budgets.items():
            br, _, extra = _bracket_row(0, est.nominal, est.uset, {"variants": (), **kw})
            print(f"{name:<10} {label:<8} {br.lower:>12.6f} {br.upper:>12.6f} "
                  f"{br.gap:>9.2e} {br.seconds:>8.2f}" + extra, flush=True)


def section_pipeline() -> None:
    import cProfile
    import pstats

    from rcmdp_exact.protocol.ground_truth_table import ground_truth_table

    print("rcmdp ground-truth pipeline (one run per domain, then all three together)")
    print(f"{'domain':<10} {'seconds':>8}")
    for name in PAPER_DOMAINS:
        t = best_of(lambda name=name: ground_truth_table([name], progress=False), 1)
        print(f"{name:<10} {t:8.2f}")
    total = best_of(lambda: ground_truth_table(progress=False), 1)
    print(f"{'all':<10} {total:8.2f}   (before: about 40 s for the command, see the README)")
    prof = cProfile.Profile()
    prof.runcall(ground_truth_table, progress=False)
    print("shares of one run under the profiler (cumulative seconds):")
    stats = pstats.Stats(prof).stats
    steps = {"estimate": "estimate", "LPs": "solve_cmdp", "T-step LPs":
             "solve_cmdp_finite_horizon", "bracket": "rcmdp_bracket", "of which variants":
             "rcmdp_variant", "test metrics": "_test_rows"}
    for label, fn in steps.items():
        cum = sum(v[3] for k, v in stats.items() if k[2] == fn)
        print(f"  {label:<18} {cum:7.2f} s")


def section_lp(repeats: int) -> None:
    print(f"occupancy LPs, minimum of {repeats} runs (seconds); x = CLARABEL / HIGHS")
    print(f"{'domain':<10} {'HIGHS':>8} {'CLARABEL':>9} {'x':>6} {'T HIGHS':>9} "
          f"{'T CLARABEL':>11} {'x':>6}  |V_H - V_C|  |V^T_H - V^T_C|")
    for name in PAPER_DOMAINS:
        m = paper_domain(name)
        res, times = {}, {}
        for sv in ("HIGHS", "CLARABEL"):
            for key, fn in ((sv, solve_cmdp), ("T" + sv, solve_cmdp_finite_horizon)):
                def job(key=key, fn=fn, sv=sv, m=m, res=res):
                    res[key] = fn(m, solver=sv)

                times[key] = best_of(job, repeats)
        print(f"{name:<10} {times['HIGHS']:8.3f} {times['CLARABEL']:9.3f} "
              f"{times['CLARABEL'] / times['HIGHS']:6.2f} {times['THIGHS']:9.3f} "
              f"{times['TCLARABEL']:11.3f} {times['TCLARABEL'] / times['THIGHS']:6.2f}  "
              f"{abs(res['HIGHS'].value - res['CLARABEL'].value):11.2e}  "
              f"{abs(res['THIGHS'].value - res['TCLARABEL'].value):14.2e}")


def section_alpha0(cases: int, magnitudes) -> None:
    quick = {"variants": (), "progress": False, "time_limit": 2.0, "max_boxes": 400}
    worst = {"lower": 0.0, "upper": 0.0, "excess": -np.inf}
    rel, n_opt, n_inf, mismatch, t0 = 0.0, 0, 0, [], time.perf_counter()
    off = []  # seeds where a side of the bracket is more than 1e-8 from the LP optimum
    for seed in range(cases):
        m = dense_binding_cmdp(seed, magnitudes)
        lp = solve_cmdp(m)
        br = rcmdp_bracket(m, l1_ball(m, 0.0, support="all"), **quick)
        if lp.status != "optimal":
            n_inf += 1
            if not (lp.status == "infeasible" and br.status == "infeasible"):
                mismatch.append((seed, lp.status, br.status))
            continue
        n_opt += 1
        P_pi = np.einsum("sa,sat->st", lp.policy, m.P)
        c_pi = np.einsum("sa,sak->sk", lp.policy, m.c)
        costs = m.p0 @ np.linalg.solve(np.eye(m.n_states) - m.gamma * P_pi, c_pi)
        if max(abs(br.lower - lp.value), abs(br.upper - lp.value)) > 1e-8:
            off.append(seed)
        worst["lower"] = max(worst["lower"], abs(br.lower - lp.value))
        worst["upper"] = max(worst["upper"], abs(br.upper - lp.value))
        worst["excess"] = max(worst["excess"], float(np.max(costs - m.d)))
        scale = max(1.0, np.abs(m.r).max(), np.abs(m.c).max()) / (1 - m.gamma)
        rel = max(rel, max(abs(br.lower - lp.value), abs(br.upper - lp.value)) / scale)
    print(f"alpha = 0 on {cases} dense random CMDPs with binding budgets, magnitudes "
          f"{', '.join(map(str, magnitudes))} ({time.perf_counter() - t0:.0f} s)")
    print(f"  LP optimal: {n_opt}; LP infeasible: {n_inf}, status mismatches: {len(mismatch)} "
          f"{mismatch[:5]}")
    print(f"  largest |lower - LP| {worst['lower']:.3g}, |upper - LP| {worst['upper']:.3g}, "
          f"as a share of the value scale {rel:.3g}")
    print(f"  models with a side more than 1e-8 from the LP optimum: {len(off)} {off[:8]}")
    print(f"  largest budget excess of the LP policy (dense evaluation): {worst['excess']:.3g}")


def structured_case(builder: str, kw: dict, kind: str, support):
    """(model, set) of a classic instance with the halfway budget of its set.  With a
    version of the package that has no ``domains.classic`` (the baseline of the speed
    goals: ``PYTHONPATH=<older tree>``), the module is loaded from this tree's file."""
    try:
        from rcmdp_exact.domains import classic_instance
    except ImportError:
        import importlib.util
        import sys
        from pathlib import Path

        name = "rcmdp_exact.domains.classic"
        path = Path(__file__).resolve().parents[1] / "rcmdp_exact" / "domains" / "classic.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        classic_instance = module.classic_instance

    return classic_instance(builder, "l1" if kind == "l1" else "kl", 0.1,
                            support=support or "all", **kw)


def section_structured(quick: bool, only=None, max_boxes: int | None = None,
                       scale: float = 1.0, sets=None, rules=None) -> None:
    print(f"rcmdp_bracket on the classic instances (domains.classic, halfway budgets), "
          f"{'--quick: 10 s / 30 s' if quick else 'the goals: 60 s / 600 s'}"
          + (f", max_boxes = {max_boxes}" if max_boxes else "")
          + "; rel = gap / |lower| (the goals), rel* = the result's relative_gap")
    print(f"{'instance':<13} {'set':<10} {'lower':>11} {'upper':>11} {'gap':>9} "
          f"{'rel':>9} {'rel*':>9} {'boxes':>7} {'box/s':>7} {'wall':>6} {'cpu':>6}  "
          f"status            load")
    for name, builder, kw, (kind, support), seconds in STRUCTURED:
        set_name = f"{kind} {support}" if kind == "l1" else "kl"
        if (only and name not in only) or (sets and set_name.replace(" ", "-") not in sets):
            continue
        model, uset = structured_case(builder, kw, kind, support)
        limit = (10.0 if seconds <= 60 else 30.0) if quick else seconds
        limit *= scale
        opts = dict(time_limit=limit, max_boxes=max_boxes or 10**7, **(rules or {}))
        if max_boxes:
            opts["time_limit"] = None  # the box budget decides
        br, wall, cpu = _timed_bracket(model, uset, **opts)
        rel = br.gap / abs(br.lower) if br.lower not in (0.0,) and np.isfinite(br.lower) \
            else np.inf
        bb = br.trace[-1, 0] - br.trace[0, 0] if br.trace.shape[0] > 1 else 0.0
        rate = (br.boxes - 1) / bb if bb > 0 else float("nan")
        print(f"{name:<13} {set_name:<10} {br.lower:>11.6g} {br.upper:>11.6g} "
              f"{br.gap:>9.3g} {rel:>9.2e} {br.get('relative_gap', np.nan):>9.2e} "
              f"{br.boxes:>7} {rate:>7.1f} {wall:>6.1f} {cpu:>6.1f}  {br.status:<17} "
              f"{_load()}", flush=True)


def section_anatomy(only=None, sets=None) -> None:
    """Where the gap of a structured instance lies (module docstring, ``anatomy``)."""
    from rcmdp_exact import certified_dual
    from rcmdp_exact.robust.engine import RobustGame

    only = only or ["frozenlake8", "riverswim20"]
    print("the anatomy of the gap (K = 1): D the certified Lagrangian dual (an upper "
          "bound on OPT); pi_f / pi_i the best robust-feasible and the next infeasible "
          "robust-Lagrangian greedy deterministic policies; line: the best robust-feasible "
          "policy between them (a lower bound on OPT); g(slope): the robust Lagrangian at "
          "the pair's slope (the line's value if one adversary served value and cost)")
    for name, builder, kw, (kind, support), _ in STRUCTURED:
        set_name = f"{kind} {support}" if kind == "l1" else "kl"
        if name not in only or (sets and set_name.replace(" ", "-") not in sets):
            continue
        model, uset = structured_case(builder, kw, kind, support)
        t0 = time.process_time()
        dual = certified_dual(model, uset)
        d = float(model.d[0])
        lam0 = float(dual.lam[0])
        game = RobustGame(model, uset, tol=1e-13, max_iter=10_000)
        centre = lam0 if lam0 > 0 else 1.0
        lams = np.concatenate([[0.0], centre * np.geomspace(1e-3, 1e4, 500)])
        sol = game.value_iteration(game.lagrangian(lams[:, None]),
                                   np.zeros((lams.size, model.n_states)), 100_000)
        ev = game.evaluate(sol.policy)
        V, C = ev.value, ev.costs[:, 0]
        feasible = C <= d
        if not feasible.any():
            print(f"{name} ({set_name}): D in [{dual.lo:.9g}, {dual.hi:.9g}]; no greedy "
                  f"policy on the grid is robust-feasible (least cost {C.min():.9g}, budget "
                  f"{d:.9g})")
            continue
        f = int(np.flatnonzero(feasible)[np.argmax(V[feasible])])
        better = np.flatnonzero(~feasible & (V > V[f]))
        print(f"{name} ({set_name}): D in [{dual.lo:.9g}, {dual.hi:.9g}] at lambda "
              f"{lam0:.6g}; budget {d:.9g}; {len({p.tobytes() for p in sol.policy})} "
              f"greedy policies on the grid")
        print(f"  pi_f: V {V[f]:.9g}  C {C[f]:.9g}")
        if not better.size:
            print(f"  no infeasible greedy policy is worth more: the line is pi_f "
                  f"({time.process_time() - t0:.1f} s CPU)")
            continue
        i = int(better[np.argmax((V[better] - V[f]) / (C[better] - C[f]))])
        differ = np.flatnonzero((sol.policy[f] != sol.policy[i]).any(axis=1))
        print(f"  pi_i: V {V[i]:.9g}  C {C[i]:.9g}; they differ in {differ.size} "
              f"state(s): {differ.tolist()[:12]}{' ...' if differ.size > 12 else ''}")
        lo, v_line = bisect_line(model, uset, sol.policy[f], sol.policy[i], 40)
        v_line = float(V[f]) if v_line is None else v_line
        slope = float((V[i] - V[f]) / (C[i] - C[f]))
        g = game.value_iteration(game.lagrangian(np.array([[slope]])),
                                 np.zeros((1, model.n_states)), 100_000)
        g_slope = float(g.w[0] @ game.p0) + slope * d
        print(f"  line: t = {lo:.6f}, V {v_line:.9g}; g(slope {slope:.6g}) = {g_slope:.9g}")
        print(f"  D - line = {dual.hi - v_line:.3g} ({(dual.hi - v_line) / abs(v_line):.2%} "
              f"of |line|); g(slope) - line = {g_slope - v_line:.3g} "
              f"({time.process_time() - t0:.1f} s CPU)", flush=True)



def section_riverswim20() -> None:
    """The lower side of RiverSwim-20 with one box, with and without SLSQP's restarts."""
    from rcmdp_exact.domains import classic_instance
    from rcmdp_exact.ground_truth import search

    best = 0.0635314  # found apart (tests/test_ground_truth_bracket.py)
    m, uset = classic_instance("riverswim", n=20, bank_up=0.4)
    every = search.RESTART_EVERY
    print("\n== RiverSwim-20's lower side (max_boxes=1, dual_evaluations=0)")
    for restart, label in ((every, f"restarted every {every}"), (10**9, "one run")):
        search.RESTART_EVERY = restart
        for kw in ({}, {"n_ascent": 300}, {"n_starts": 12}, {"n_ascent": 300, "n_starts": 12}):
            res = rcmdp_bracket(m, uset, progress=False, max_boxes=1, time_limit=None,
                                dual_evaluations=0, **kw)
            print(f"  {label:<22} {kw or 'defaults'!s:<36} lower {res.lower:.7f}")
        shares = [rcmdp_bracket(m, uset, progress=False, max_boxes=1, time_limit=None,
                                seed=s).lower / best for s in range(4)]
        print(f"  {label:<22} defaults, seeds 0-3: " +
              ", ".join(f"{x:.1%}" for x in shares) + " of 0.0635314")
    search.RESTART_EVERY = every


def section_s_rect() -> None:
    """The s-rectangular ball's chord search, compiled and numpy, on a real bracket."""
    from unittest import mock

    from rcmdp_exact import suite
    from rcmdp_exact.uncertainty import s_l1

    model, uset, _ = suite.load("machine-10", set="s-l1", level=0.1)
    kw = dict(n_ascent=20, dual_evaluations=0, progress=False, deep_after=0,
              time_limit=None)
    calls = []

    def keep(*args):
        calls.append(args)
        return s_l1._dual_numpy(*args)

    with mock.patch.object(s_l1, "_dual", keep):
        rcmdp_bracket(model, uset, max_boxes=300, **kw)
    s_l1._dual(*calls[0])  # compiled before it is timed
    t_np = best_of(lambda: [s_l1._dual_numpy(*c) for c in calls], 3) / len(calls)
    t_nb = best_of(lambda: [s_l1._dual(*c) for c in calls], 3) / len(calls)
    print(f"\n== The s-rectangular chord search: {len(calls)} calls of machine-10/s-l1/0.1's "
          f"box updates ({calls[0][0].shape[0]} rows each)")
    print(f"  numpy {1e3 * t_np:.3f} ms a call, compiled {1e3 * t_nb:.3f} ms: "
          f"ratio {t_np / t_nb:.1f}")
    rows = {}
    for name, fn in (("numpy", s_l1._dual_numpy), ("compiled", s_l1._dual)):
        with mock.patch.object(s_l1, "_dual", fn):
            t0 = time.process_time()
            res = rcmdp_bracket(model, uset, max_boxes=1000, **kw)
            rows[name] = time.process_time() - t0
        print(f"  the bracket at 1,000 boxes, {name:<8}: [{res.lower!r}, {res.upper!r}] "
              f"{res.boxes} boxes, {rows[name]:.1f} s of CPU")
    print(f"  ratio {rows['numpy'] / rows['compiled']:.2f}")

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--section", choices=SECTIONS, action="append",
                    help="section to run (repeatable; default all)")
    ap.add_argument("--repeats", type=int, default=3, help="LP repeats (minimum kept)")
    ap.add_argument("--cases", type=int, default=40, help="random models of the gaps")
    ap.add_argument("--no-reference", action="store_true",
                    help="gaps: skip the independent search for feasible policies")
    ap.add_argument("--magnitudes", default="1,10",
                    help="alpha0: magnitudes of rewards and costs, comma-separated")
    ap.add_argument("--sizes", default="6,10,15,20", help="garnets: numbers of states")
    ap.add_argument("--large", default="50",
                    help="garnets: numbers of states run with K = 1 and --large-seconds "
                         "('' for none)")
    ap.add_argument("--large-seconds", type=float, default=600.0,
                    help="garnets: time_limit of the --large models")
    ap.add_argument("--seeds", default="0-4", help="garnets: seeds, 'a-b' or 'a,b,c'")
    ap.add_argument("--constraints", default="1,2", help="garnets: values of K")
    ap.add_argument("--seconds", type=float, default=60.0, help="garnets: time_limit")
    ap.add_argument("--box-bounds", default="lagrangian,local,lp,local+lp",
                    help="bounds: the variants of box_bounds, comma-separated")
    ap.add_argument("--boxes", type=int, default=400, help="dask and load: the box budget")
    ap.add_argument("--quick", action="store_true",
                    help="structured: 10 s and 30 s instead of 60 s and 600 s")
    ap.add_argument("--only", default="",
                    help="structured: instance names, comma-separated (default all)")
    ap.add_argument("--sets", default="",
                    help="structured: sets, comma-separated, of l1-all, l1-nominal, kl "
                         "(default all)")
    ap.add_argument("--max-boxes", type=int, default=0,
                    help="structured: a box budget (the time limit becomes a guard)")
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help="structured: multiply every time limit by this")
    ap.add_argument("--deadline-sizes", default="20,50,100,200,400",
                    help="deadline: numbers of states")
    ap.add_argument("--bracket-bounds", default=None,
                    help="structured and small: the box bounds of the bracket, e.g. "
                         "'local+lp' or 'lp' (BracketSettings.box_bounds; default: its "
                         "default)")
    args = ap.parse_args()
    # bracket options beyond the defaults (they reach Dask workers too)
    rules = {}
    if args.bracket_bounds is not None:
        rules["box_bounds"] = tuple(x for x in args.bracket_bounds.split("+")
                                    if x and x != "lagrangian")
    print(f"bracket options beyond the defaults: {rules or 'none'}")
    sizes = [int(x) for x in args.sizes.split(",") if x]
    constraints = [int(x) for x in args.constraints.split(",")]
    if "-" in args.seeds:
        a, b = (int(x) for x in args.seeds.split("-"))
        seeds = list(range(a, b + 1))
    else:
        seeds = [int(x) for x in args.seeds.split(",")]
    for sec in args.section or SECTIONS:
        if sec == "pipeline":
            section_pipeline()
        elif sec == "riverswim20":
            section_riverswim20()
        elif sec == "s-rect":
            section_s_rect()
        elif sec == "lp":
            section_lp(args.repeats)
        elif sec == "gaps":
            section_gaps([small_case(i) for i in range(args.cases)], not args.no_reference,
                         f"rcmdp_bracket (default arguments) on {args.cases} small random "
                         f"RCMDPs")
        elif sec == "garnets":
            section_garnets(sizes, seeds, constraints, args.seconds,
                            [int(x) for x in args.large.split(",") if x], args.large_seconds)
        elif sec == "bounds":
            section_bounds(sizes, seeds, constraints, args.seconds,
                           [tuple(x for x in v.split("+") if x and x != "lagrangian")
                            for v in args.box_bounds.split(",")])
        elif sec == "small":
            section_small(rules)
        elif sec == "deadline":
            section_deadline([int(x) for x in args.deadline_sizes.split(",")], 3.0)
        elif sec == "load":
            section_load(sizes[0], args.boxes)
        elif sec == "inventory":
            section_inventory()
        elif sec == "dask":
            section_dask(sizes[0], args.boxes)
        elif sec == "structured":
            section_structured(args.quick, [x for x in args.only.split(",") if x],
                               args.max_boxes or None, args.time_scale,
                               [x for x in args.sets.split(",") if x],
                               rules)
        elif sec == "anatomy":
            section_anatomy([x for x in args.only.split(",") if x],
                            [x for x in args.sets.split(",") if x])
        elif sec == "alpha0":
            section_alpha0(args.cases, tuple(float(x) for x in args.magnitudes.split(",")))
        else:
            section_domains()
        print()


if __name__ == "__main__":
    main()

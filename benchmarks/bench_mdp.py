"""The plain MDP solver ``solve_mdp`` side by side with QuantEcon and pymdptoolbox.

The table of issue 41: random models as a user draws them (QuantEcon's
``random_discrete_dp`` recipe, seeded with numpy): rewards standard normal, every row
of P a Dirichlet(1) distribution over all S next states (``dense``, the (S, A, S)
array) or over ``k`` next states drawn at random (``sparse``, a CSR (S*A, S) matrix).
Cells (``--cells all``, the default):

* dense S = 500, A = 5 and A = 10, gamma 0.95 and 0.999: policy iteration, modified
  policy iteration, value iteration, LP (ours only: neither peer has one);
* dense S = 2,000, A = 5, gamma 0.95, 0.999 and 0.9999: the three iterations;
* sparse S = 20,000, A = 5, k = 5, gamma 0.95, 0.999 and 0.9999: the three iterations;
* sparse S = 3,000, A = 5, k = 5, gamma 0.95 and 0.999: the LP (ours only; ``--cells
  lp`` runs these two cells alone).

Every library solves the same model to the same accuracy: ours with ``tol=1e-12`` (its
default: a certified error bound of at most 1e-12 times the value scale
max|r| / (1 - gamma)), QuantEcon's ``DiscreteDP.solve`` and pymdptoolbox's
``PolicyIteration`` / ``PolicyIterationModified`` / ``ValueIteration`` with ``epsilon``
equal to that same absolute accuracy (and ``max_iter`` 10^6 where they have one for
the outer loop).  Each call runs in a child process forked from the benchmark (so a
peer that does not answer within ``--timeout`` seconds is stopped and printed as
"> T s"), the libraries interleaved repeat by repeat; the time is the minimum over
``--repeats`` (the machine is shared: the minimum is the least disturbed run).  Columns:
our time, QuantEcon's, pymdptoolbox's, the ratio ours / (the faster peer that answered)
(at most 1: ours is at least as fast), the same ratio of processor times (``cpu``: on
a loaded machine the wall time of a run includes the time other processes held the
core; the processor time of a one-thread run does not), and the error of each answer
against a certified reference, our ``error_bound`` and whether it holds.

The reference (``--reference 50``, the default in every cell: about 15 s for dense
2,000 and a minute for sparse 20,000) is :func:`reference50.optimal_reference`: the
values of the greedy policy of our policy iteration's values, improved in exact
arithmetic while an action is surely better, refined to about 32 digits, with a
rigorous bound on their distance to :math:`v^*` from the Bellman residual computed
exactly and carried in mpmath at 50 digits (||Tv - v|| / (1 - beta),
printed in each model's header).  An error column prints the upper end D + B of the
answer's certified error interval [D - B, D + B]; ``holds``: D + B <= our bound
(``FAILS``: D - B > it, printed loudly; ``unknown``: undecided).  ``--reference own``:
our policy iteration's values (not independent), as before.  The load
average before and after and the BLAS threads are printed (``--threads``, default 1:
on a shared machine two BLAS threads wait for each other).

    python benchmarks/bench_mdp.py [--cells all|small|500|2000|20000|lp] [--repeats 3]
        [--timeout 120] [--threads 1] [--methods policy_iteration,...] [--json out.json]

``--robust``: issue 41's item 4, robust value iteration on the suite's instances (S up
to 500: Taxi) with an L1 ball of radius 0.1 on the instance's support, the reward alone:
``robust_value_iteration`` (value iteration and policy iteration, ``tol=1e-10``) beside
:func:`numpy_robust_vi`, robust value iteration as a user writes it in numpy (the
textbook sort of Iyengar, one ordering per sweep shared by all rows), with the same
stopping rule; processor times, the minimum of ``--repeats``, and the largest difference
of the values.

    python benchmarks/bench_mdp.py --robust [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp

METHODS = ("policy_iteration", "modified_policy_iteration", "value_iteration", "lp")
SHORT = {"policy_iteration": "PI", "modified_policy_iteration": "MPI",
         "value_iteration": "VI", "lp": "LP"}


def dense_model(S: int, A: int, seed: int = 0):
    """(P (S, A, S), R (S, A)): Dirichlet(1) rows over every state, normal rewards."""
    rng = np.random.default_rng(seed)
    P = rng.exponential(size=(S, A, S))
    P /= P.sum(axis=-1, keepdims=True)
    return P, rng.standard_normal((S, A))


def sparse_model(S: int, A: int, k: int, seed: int = 0):
    """(P CSR (S*A, S), R (S, A)): Dirichlet(1) rows over k distinct random states."""
    rng = np.random.default_rng(seed)
    n = S * A
    cols = np.empty((n, k), dtype=np.int64)
    for lo in range(0, n, 4096):  # k distinct states per row: the k smallest of S keys
        keys = rng.random((min(4096, n - lo), S))
        cols[lo:lo + keys.shape[0]] = np.argpartition(keys, k, axis=1)[:, :k]
    w = rng.exponential(size=(n, k))
    w /= w.sum(axis=1, keepdims=True)
    P = sp.csr_array((w.ravel(), cols.ravel(), np.arange(0, n * k + 1, k)), shape=(n, S))
    P.sort_indices()
    return P, rng.standard_normal((S, A))


def cells(which: str):
    """(label, builder, gamma, methods) of the table."""
    out = []
    for gamma in (0.95, 0.999, 0.9999):
        if which in ("all", "small", "500") and gamma < 0.9999:
            for A in (5, 10):
                out.append((f"dense S=500 A={A}", ("dense", 500, A), gamma, METHODS))
        if which in ("all", "2000"):
            out.append(("dense S=2000 A=5", ("dense", 2000, 5), gamma, METHODS[:3]))
        if which in ("all", "20000"):
            out.append(("sparse S=20000 A=5 k=5", ("sparse", 20000, 5), gamma, METHODS[:3]))
        if which in ("all", "lp") and gamma < 0.9999:
            out.append(("sparse S=3000 A=5 k=5", ("sparse", 3000, 5), gamma, ("lp",)))
    return out


# ------------------------------------------------------------------ the three libraries
def ours(P, R, gamma, method, tol):
    import rcmdp_exact as rx

    m = rx.TabularCMDP(P, R, gamma=gamma)
    m.P_sparse if m.is_sparse else m.P  # noqa: B018 (a user's model, its caches built)

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = rx.solve_mdp(m, method, tol=tol)
        return res.v, res.error_bound
    return run


def quantecon(P, R, gamma, method, eps):
    if method == "lp":
        return None
    from quantecon.markov import DiscreteDP

    if sp.issparse(P):
        S, A = R.shape
        s_idx, a_idx = np.repeat(np.arange(S), A), np.tile(np.arange(A), S)
        ddp = DiscreteDP(R.ravel(), sp.csr_matrix(P), gamma, s_idx, a_idx)
    else:
        ddp = DiscreteDP(R, P, gamma)
    kw = {} if method == "policy_iteration" else {"epsilon": eps, "max_iter": 10**6}
    return lambda: (np.asarray(ddp.solve(method, **kw).v), None)


def mdptoolbox(P, R, gamma, method, eps):
    import mdptoolbox.mdp as mdp

    S, A = R.shape
    if sp.issparse(P):
        Pm = [sp.csr_matrix(P[np.arange(S) * A + a]) for a in range(A)]
    else:
        Pm = np.ascontiguousarray(np.transpose(P, (1, 0, 2)))
    make = {"policy_iteration": lambda: mdp.PolicyIteration(Pm, R, gamma, max_iter=10**6),
            "modified_policy_iteration": lambda: mdp.PolicyIterationModified(
                Pm, R, gamma, epsilon=eps),
            "value_iteration": lambda: mdp.ValueIteration(Pm, R, gamma, epsilon=eps,
                                                          max_iter=10**6)}.get(method)
    if make is None:
        return None

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solver = make()
            solver.run()
        return np.asarray(solver.V, dtype=float), None
    return run


def _child(fn, conn, inner):
    try:
        wall, cpu, start = [], [], time.perf_counter()
        for _ in range(inner):  # short calls: the least disturbed of a few, in one child
            t0, c0 = time.perf_counter(), time.process_time()
            v, bound = fn()
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            if time.perf_counter() - start > 0.5:
                break
        conn.send(("ok", (min(wall), min(cpu)), v, bound))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"[:60], None, None))
    conn.close()


def timed(fn, timeout: float, inner: int = 1):
    """((wall, cpu) seconds, values, bound) of fn() in a forked child (the minima of up to
    ``inner`` calls within half a second), or (None, reason, None)."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, send, inner))
    proc.start()
    send.close()
    if not recv.poll(timeout):
        proc.kill()
        proc.join()
        return None, f"> {timeout:g} s", None
    status, t, v, bound = recv.recv()
    proc.join()
    if status != "ok":
        return None, t, None
    return t, v, bound


def warm_up(threads: int) -> None:
    """Compile and import what every library needs, on a small model, in this process
    (the forked children inherit it)."""
    P, R = dense_model(30, 3)
    Ps, Rs = sparse_model(300, 3, 3)
    for m in METHODS:
        for make in (ours, quantecon, mdptoolbox):
            for PP, RR in ((P, R), (Ps, Rs)):
                fn = make(PP, RR, 0.95, m, 1e-6) if make is not ours else make(
                    PP, RR, 0.95, m, 1e-12)
                if fn is not None:
                    try:
                        fn()
                    except Exception:
                        pass


ROBUST = ("machine-20", "garnet-15x5-s0", "cliffwalking", "frozenlake-8x8",
          "inventory-50", "taxi")


def numpy_robust_vi(G, P, support, alpha, gamma, tol, max_iter=10**6):
    """Robust value iteration on an sa-rectangular L1 ball as a user writes it in numpy
    (the benchmark's peer).  The worst case of row (s, a) at the values z = G(s, a, .) +
    gamma V (G the reward per transition, (S, A, S), or per pair, (S, A)) moves up to
    alpha/2 of mass from the next states of largest z to the one of smallest z on the
    row's support (Iyengar's sort); with a reward per pair the order of z is the order
    of V, one ordering per sweep serving every row, else each row is sorted.  Stops when
    ||TV - V|| <= tol max(1, max|V|), the rule of ``robust_value_iteration``."""
    S, A, _ = P.shape
    n = S * A
    rows = P.reshape(n, S)
    sup = support.reshape(n, S)
    eps_cap = alpha.reshape(n) / 2.0
    shared = G.ndim == 2
    base = G.reshape(n) if shared else G.reshape(n, S)
    idx = np.arange(n)
    v = np.zeros(S)
    for it in range(1, max_iter + 1):
        if shared:
            z = np.broadcast_to(gamma * v, (n, S))
            order = np.broadcast_to(np.argsort(-v, kind="stable"), (n, S))
        else:
            z = base + gamma * v[None, :]
            order = np.argsort(-z, axis=1, kind="stable")
        low = np.where(sup, z, np.inf).argmin(axis=1)
        eps = np.minimum(eps_cap, 1.0 - rows[idx, low])
        p = np.take_along_axis(rows, order, axis=1)
        zs = np.take_along_axis(z, order, axis=1)
        taken = np.clip(eps[:, None] - (np.cumsum(p, axis=1) - p), 0.0, p)
        worst = (rows * z).sum(axis=1) - (taken * (zs - z[idx, low][:, None])).sum(axis=1)
        q = (base + worst if shared else worst).reshape(S, A)
        tv = q.max(axis=1)
        if np.abs(tv - v).max() <= tol * max(1.0, float(np.abs(tv).max())):
            return tv, it
        v = tv
    return v, max_iter


def robust_section(args) -> list[dict]:
    """Robust value iteration on the suite's instances (``--robust``): ours (value
    iteration and policy iteration) beside :func:`numpy_robust_vi`, an L1 ball of radius
    0.1 on the instance's support, the reward alone, tol = 1e-10."""
    import rcmdp_exact as rx
    from rcmdp_exact.suite.instances import INSTANCES
    from rcmdp_exact.suite.sets import build_set

    print("\nrobust value iteration, L1 ball r = 0.1 (the suite's support), tol 1e-10; "
          "times: minimum of repeats", flush=True)
    print(f"{'instance':<16} {'S x A':>7} {'ours VI':>9} {'ours PI':>9} {'numpy VI':>9} "
          f"{'ratio VI':>8} {'ratio PI':>8} {'|dV| VI':>9} {'|dV| PI':>9}", flush=True)
    out = []
    for name in ROBUST:
        inst = INSTANCES[name]
        base = inst.build()
        m = base.replace(C=None, d=None)
        uset = build_set(base, "l1", 0.1, inst.support)
        P = np.asarray(m.P)
        r = np.asarray(m.R) if m.reward_depends_on_next_state else np.asarray(m.r)
        calls = {
            "ours VI": lambda m=m, uset=uset: (rx.robust_value_iteration(
                m, uset, tol=1e-10, progress=False).v, None),
            "ours PI": lambda m=m, uset=uset: (rx.robust_value_iteration(
                m, uset, method="policy_iteration", tol=1e-10, progress=False).v, None),
            "numpy VI": lambda r=r, P=P, uset=uset, g=m.gamma: (numpy_robust_vi(
                r, P, np.asarray(uset.support), np.asarray(uset.alpha), g, 1e-10)[0], None),
        }
        for fn in calls.values():
            fn()  # compile and warm
        best, vals = {k: np.inf for k in calls}, {}
        for _ in range(args.repeats):
            for k, fn in calls.items():
                t0 = time.process_time()
                vals[k] = fn()[0]
                best[k] = min(best[k], time.process_time() - t0)
        row = dict(instance=name, S=m.n_states, A=m.n_actions, **best,
                   ratio_vi=best["ours VI"] / best["numpy VI"],
                   ratio_pi=best["ours PI"] / best["numpy VI"],
                   dv_vi=float(np.abs(vals["ours VI"] - vals["numpy VI"]).max()),
                   dv_pi=float(np.abs(vals["ours PI"] - vals["numpy VI"]).max()))
        out.append(row)
        print(f"{name:<16} {f'{m.n_states}x{m.n_actions}':>7} {fmt(best['ours VI']):>9} "
              f"{fmt(best['ours PI']):>9} {fmt(best['numpy VI']):>9} "
              f"{row['ratio_vi']:>8.2f} {row['ratio_pi']:>8.2f} {row['dv_vi']:>9.1e} "
              f"{row['dv_pi']:>9.1e}", flush=True)
    return out


def fmt_bound(b) -> str:
    return "-" if b is None else f"{b:.1e}"


def fmt(t) -> str:
    if t is None:
        return "-"
    if isinstance(t, str):
        return t
    return f"{t * 1e3:.1f}ms" if t < 1 else f"{t:.2f}s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="all",
                    choices=("all", "small", "500", "2000", "20000", "lp"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds a peer may take per call before it is stopped")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="comma-separated methods to time (default: all four)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (all libraries)")
    ap.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    ap.add_argument("--reference", choices=("50", "own"), default="50",
                    help="the certified 50-digit reference (reference50.py, the default) "
                         "or our own policy iteration's values (faster, not independent)")
    ap.add_argument("--robust", action="store_true",
                    help="robust value iteration on the suite's instances instead (item 4)")
    args = ap.parse_args(argv)
    chosen = tuple(m.strip() for m in args.methods.split(","))
    if not chosen or any(m not in METHODS for m in chosen):
        ap.error(f"--methods: give some of {', '.join(METHODS)} (comma-separated)")
    import scipy.linalg
    import scipy.sparse.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"BLAS threads {args.threads}; minimum of {args.repeats} interleaved repeats",
          flush=True)
    if args.robust:
        rows = robust_section(args)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=2)
        return 0
    warm_up(args.threads)
    from reference50 import optimal_reference, verdict
    head = (f"{'model':<24} {'gamma':>6} {'method':<4} {'ours':>9} {'quantecon':>10} "
            f"{'mdptoolbox':>11} {'ratio':>6} {'cpu':>6} {'ours err':>9} {'bound':>9} "
            f"{'':>5} {'qe err':>9} {'mdp err':>9}")
    rows = []
    built = {}
    for label, (kind, S, A), gamma, methods in cells(args.cells):
        if (kind, S, A) not in built:
            built.clear()
            built[(kind, S, A)] = (dense_model(S, A) if kind == "dense"
                                   else sparse_model(S, A, 5))
        P, R = built[(kind, S, A)]
        scale = float(np.abs(R).max()) / (1.0 - gamma)
        eps = 1e-12 * scale
        _, start, start_bound = timed(ours(P, R, gamma, "policy_iteration", 1e-12),
                                      args.timeout * 10)
        if args.reference == "50":
            # the certified reference: from the greedy policy of our policy iteration's
            # values, improved while an action is surely better (reference50)
            flat = P.reshape(-1, P.shape[-1]) if not sp.issparse(P) else P
            greedy = (R + gamma * (flat @ start).reshape(R.shape)).argmax(axis=1)
            t_ref = time.perf_counter()
            cert = optimal_reference(P, R, gamma, greedy, v0=start)
            ref = cert.hi
            print(f"\n{label}, gamma {gamma}: certified 50-digit reference, its own "
                  f"error <= {float(cert.bound):.1e} ({time.perf_counter() - t_ref:.0f} s); "
                  f"accuracy asked of all: {eps:.1e}", flush=True)
        else:
            cert, ref = None, start
            print(f"\n{label}, gamma {gamma}: reference = our policy iteration "
                  f"(its bound {start_bound:.1e}); accuracy asked of all: {eps:.1e}",
                  flush=True)
        print(head)
        for method in (m for m in methods if m in chosen):
            makers = {"ours": ours(P, R, gamma, method, 1e-12),
                      "quantecon": quantecon(P, R, gamma, method, eps),
                      "mdptoolbox": mdptoolbox(P, R, gamma, method, eps)}
            best = {name: None for name in makers}
            cpu = {name: None for name in makers}
            vals = {name: None for name in makers}
            bounds = {name: None for name in makers}
            # one call of ours in this process first, on a model of its own: the compiled
            # code of this size's path (GMRES, its index types) is loaded here once, not
            # again from numba's disk cache in every forked child (the cost of a
            # process's first call; the peers' compiled code is loaded by warm_up)
            ours(P, R, gamma, method, 1e-12)()
            for _ in range(args.repeats):
                for name, fn in makers.items():
                    if fn is None or isinstance(best[name], str):
                        continue  # no such method, or it did not answer once already
                    t, v, answer_bound = timed(fn, args.timeout)
                    if t is None:
                        best[name] = v
                        continue
                    bounds[name] = answer_bound
                    if best[name] is None or t[0] < best[name]:
                        best[name] = t[0]
                    if cpu[name] is None or t[1] < cpu[name]:
                        cpu[name] = t[1]
                    vals[name] = v
            peers = [n for n in ("quantecon", "mdptoolbox") if isinstance(best[n], float)]
            ok = isinstance(best["ours"], float) and peers
            ratio = best["ours"] / min(best[n] for n in peers) if ok else None
            ratio_cpu = cpu["ours"] / min(cpu[n] for n in peers) if ok else None
            if cert is not None:  # the upper ends of the certified error intervals
                intervals = {n: cert.error_interval(vals[n]) for n in makers
                             if vals[n] is not None}
                errs = {n: intervals[n][1] if n in intervals else None for n in makers}
                holds = (verdict(intervals["ours"], bounds["ours"]) if "ours" in intervals
                         else "-")
            else:
                errs = {n: (float(np.abs(vals[n] - ref).max()) if vals[n] is not None
                            else None) for n in makers}
                holds = "-"
            if holds == "FAILS":
                print(f"BOUND FAILS: ours {method} error >= {intervals['ours'][0]:.3e} > "
                      f"its bound {bounds['ours']:.3e}", flush=True)
            row = dict(model=label, gamma=gamma, method=method,
                       **{n: best[n] for n in makers}, ratio=ratio, ratio_cpu=ratio_cpu,
                       **{f"{n}_cpu": cpu[n] for n in makers},
                       **{f"{n}_err": errs[n] for n in makers},
                       ours_bound=bounds["ours"], holds=holds,
                       reference_bound=None if cert is None else float(cert.bound))
            rows.append(row)
            e = {n: "-" if errs[n] is None else f"{errs[n]:.1e}" for n in makers}
            print(f"{label:<24} {gamma:>6} {SHORT[method]:<4} {fmt(best['ours']):>9} "
                  f"{fmt(best['quantecon']):>10} {fmt(best['mdptoolbox']):>11} "
                  f"{'-' if ratio is None else f'{ratio:.2f}':>6} "
                  f"{'-' if ratio_cpu is None else f'{ratio_cpu:.2f}':>6} {e['ours']:>9} "
                  f"{fmt_bound(bounds['ours']):>9} {holds:>5} "
                  f"{e['quantecon']:>9} {e['mdptoolbox']:>9}", flush=True)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

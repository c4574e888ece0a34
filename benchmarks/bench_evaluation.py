r"""Benchmark of exact policy evaluation against pymdptoolbox's matrix evaluation.

Models: rectangular grids of S cells with the 4 moves (-1, 0), (+1, 0), (0, +1),
(0, -1) of Safe Navigation, a move succeeding with probability 0.8 (else the agent
stays), clipped at walls; reward -1 per step, a cost of 1 on every 7th cell, the far
corner terminal, gamma = 0.99.  They are built directly as sparse ``TabularCMDP``
(P a CSR matrix (S*A, S), R (S, A), C (S, A, 1)), so the dense (S, A, S) tensor never
exists.

Policies: the deterministic "go right, then down" policy, which reaches the goal
from every cell (so the undiscounted evaluation is defined too), and a random
stochastic policy (Dirichlet(1, 1, 1, 1) rows, seed 0).  Columns:

* ``ours det`` / ``ours sto``: :func:`rcmdp_exact.evaluate` of each policy (V, the
  cost, Q for reward and cost, and the occupancy measure, from one sparse LU);
* ``g=1 det`` / ``g=1 sto``: the undiscounted evaluation (gamma = 1) of each policy,
  including the networkx check that every reachable state reaches the goal;
* ``mdp det``: ``PolicyIteration._evalPolicyMatrix`` of pymdptoolbox for the same
  deterministic policy on the same model (its dense ``P[a, s, s']`` form; it builds a
  dense P_pi and calls ``numpy.linalg.solve``);
* ``mdp sto``: the same evaluation of the stochastic policy, given to pymdptoolbox as
  the single-action MDP (P_pi, r_pi) (pymdptoolbox takes deterministic policies only);
* ``x det`` / ``x sto``: the speed-up mdptoolbox time / our time, and ``max|dV|`` the
  largest difference between the value vectors of the two libraries.

Times are medians over repeats.  Run with

    python benchmarks/bench_evaluation.py

Goals: at least 50x faster than pymdptoolbox at S = 3000, and S = 10^5 evaluated in
under 2 s.

``--peers``: issue 44's table, :class:`rcmdp_exact.PolicySystem` (the one solve of
:math:`I - \gamma P_\pi` that ``evaluate`` and every solver use) and ``evaluate`` beside
``numpy.linalg.solve``, ``scipy.sparse.linalg.spsolve`` and a plain
``scipy.sparse.linalg.gmres`` (its defaults, ``rtol=1e-12``), on the value system of a
random stochastic policy (A = 5) of random models: ``dense`` (every row of P a
Dirichlet(1) distribution over all S states) and ``sparse`` (over 5 random states), S =
200, 2,000 and 20,000, gamma 0.95, 0.999 and 0.9999.  Each call runs in a forked child
(stopped after ``--timeout`` seconds), the solvers interleaved, the minimum of
``--repeats`` (a child repeats a short call for up to half a second and keeps its
fastest); columns: each time, the ratio of ours (the solve with its error bound) and of
the whole ``evaluate`` (values, costs, Q-values, the occupancy by the transposed solve,
both bounds) to the fastest peer, the same two ratios of processor times (``cpu``: on a
loaded machine the wall time includes the time other processes held the core), the
error of each answer against a certified reference, our bound and whether it holds,
and the method chosen.

The reference (``--reference 50``, the default at every size of the table: about 20 s
a cell for dense 2,000 and sparse 20,000) is :mod:`reference50`'s: the float data taken
as exact numbers, a solution refined to about 32 digits with residuals computed exactly
(TwoProduct and ``math.fsum``) and carried in mpmath at 50 digits, and a rigorous bound
B on its own error (:math:`\|r\|_\infty / (1 - \beta)`).  Two references per cell: the
float :math:`P_\pi` as given (the system ``ours``, numpy, spsolve and GMRES solve) and
the model's exact :math:`P_\pi = \sum_a \pi(a|s) P(s, a)` (the system ``evaluate``
is about).  An error column prints the upper end D + B of the certified interval
[D - B, D + B] of the answer's true error; ``holds`` says D + B <= the bound printed
beside it (``FAILS``: D - B > the bound; ``unknown``: B too large to decide).
``--reference longdouble``: the faster uncertified reference of before (a float64 LU or
GMRES solve refined with residuals in numpy.longdouble; ``ok?`` where the error is
within the bound).  A dense matrix of 20,000 states takes 3.2 GB
and numpy's LU of it minutes, so dense models stop at ``--dense-max`` (2,000); sparse
models are densified for numpy up to it too.

``--random``: random sparse models instead (``garnet(S, 4, 3, sparse=True)``, three next
states per pair, gamma = 0.99, a random stochastic policy), whose LU factors fill in.
Columns: ``ours`` (:func:`rcmdp_exact.evaluate`, which chooses BiCGSTAB there, with its
``solver`` and ``error_bound``), ``lu`` (the same with ``method="lu"``, up to
``--max-lu`` states), ``gmres`` (plain ``scipy.sparse.linalg.gmres`` on the value system
alone, to a residual of 1e-13, no preconditioner), ``quantecon`` (``DiscreteDP``'s
``evaluate_policy`` in its sparse state-action form, up to ``--max-quantecon``), the
ratio ours / gmres and ``max|dV|`` between ours and gmres.  Goal: S = 20,000 within 20x
of the plain GMRES and within 1e-10 of it.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from rcmdp_exact import TabularCMDP, evaluate, policy_transition_matrix

MOVES = np.array([(-1, 0), (1, 0), (0, 1), (0, -1)])
SIZES = ((10, 10), (20, 50), (40, 50), (50, 60), (80, 100), (150, 200), (250, 400))


def grid_model(n_rows: int, n_cols: int, p_success: float = 0.8,
               gamma: float = 0.99) -> TabularCMDP:
    """Sparse grid model of S = n_rows * n_cols cells (see the module docstring)."""
    S, A = n_rows * n_cols, len(MOVES)
    i, j = np.divmod(np.arange(S), n_cols)
    goal = S - 1
    rows, cols, vals = [], [], []
    for a, (di, dj) in enumerate(MOVES):
        target = np.clip(i + di, 0, n_rows - 1) * n_cols + np.clip(j + dj, 0, n_cols - 1)
        target[goal] = goal
        success = np.full(S, p_success)
        success[goal] = 1.0
        rows += [np.arange(S) * A + a] * 2
        cols += [target, np.arange(S)]
        vals += [success, 1.0 - success]
    P = sp.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(S * A, S),
    )  # duplicates (moves into a wall) are summed
    R = -np.ones((S, A))
    C = np.zeros((S, A, 1))
    C[::7, :, 0] = 1.0
    return TabularCMDP(P, R, C, d=[10.0], gamma=gamma, p0=0, terminal=[goal],
                       name=f"grid {n_rows}x{n_cols}")


def right_then_down(n_rows: int, n_cols: int) -> np.ndarray:
    """Deterministic policy (S,): move right (action 2) until the last column, then down."""
    j = np.arange(n_rows * n_cols) % n_cols
    return np.where(j < n_cols - 1, 2, 1)


def median_time(fn, repeats: int) -> tuple[float, object]:
    out = fn()  # warm-up (imports, caches of the model such as r and c)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def mdptoolbox_evaluation(P, R, gamma: float, policy: np.ndarray):
    """A function running pymdptoolbox's matrix evaluation of a deterministic policy."""
    import mdptoolbox.mdp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver = mdptoolbox.mdp.PolicyIteration(P, R, gamma, policy0=policy,
                                                eval_type="matrix")

    def run():
        solver._evalPolicyMatrix()
        return np.asarray(solver.V).ravel()

    return run


def fmt_ms(t: float | None) -> str:
    return "-" if t is None else f"{1e3 * t:.1f}ms"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.1f}x" if r < 10 else f"{r:.0f}x"


RANDOM_SIZES = (1000, 2000, 4000, 20000, 100000)


def random_section(max_lu: int, max_quantecon: int, repeats: int) -> list[dict]:
    """The ``--random`` table (module docstring)."""
    import scipy.sparse.linalg as spla

    from rcmdp_exact.domains import garnet

    rows = []
    for S in RANDOM_SIZES:
        model = garnet(S, 4, 3, n_constraints=1, seed=0, gamma=0.99, sparse=True)
        pi = np.random.default_rng(0).dirichlet(np.ones(4), size=S)
        reps = repeats if S <= 20_000 else min(3, repeats)
        t_ours, res = median_time(lambda m=model, p=pi: evaluate(m, p), reps)
        P_pi = policy_transition_matrix(model, pi)
        M = sp.csr_array(sp.eye_array(S, format="csr") - model.gamma * P_pi)
        b = np.einsum("sa,sa->s", pi, model.r)
        t_gmres, (v_gmres, _) = median_time(lambda A=M, y=b: spla.gmres(A, y, rtol=1e-13,
                                                                        atol=0.0), reps)
        row = dict(S=S, ours=t_ours, solver=res.solver, error_bound=res.error_bound,
                   gmres=t_gmres, ratio=t_ours / t_gmres,
                   max_abs_diff=float(np.abs(res.v - v_gmres).max()), lu=None, quantecon=None)
        if S <= max_lu:
            row["lu"] = median_time(lambda m=model, p=pi: evaluate(m, p, method="lu"),
                                    min(3, reps))[0]
        if S <= max_quantecon:
            from quantecon.markov import DiscreteDP

            R, Q, beta, s_idx, a_idx = model.to_quantecon(sparse=True)
            ddp = DiscreteDP(R, Q, beta, s_idx, a_idx)
            det = np.argmax(pi, axis=1)  # QuantEcon evaluates deterministic policies
            row["quantecon"] = median_time(lambda d=ddp, s=det: d.evaluate_policy(s),
                                           min(3, reps))[0]
        rows.append(row)
    print(f"{'S':>7} {'ours':>9} {'solver':>9} {'bound':>8} {'lu':>9} {'gmres':>9} "
          f"{'ours/gmres':>10} {'quantecon':>10} {'max|dV|':>8}")
    for r in rows:
        print(f"{r['S']:>7} {fmt_ms(r['ours']):>9} {r['solver']:>9} {r['error_bound']:>8.1e} "
              f"{fmt_ms(r['lu']):>9} {fmt_ms(r['gmres']):>9} {r['ratio']:>10.2f} "
              f"{fmt_ms(r['quantecon']):>10} {r['max_abs_diff']:>8.1e}")
    return rows


def small_section(repeats: int) -> list[dict]:
    """Small dense models: evaluate's LAPACK path ("auto", solver "dense") against the
    sparse LU it replaced (method="lu") and pymdptoolbox's dense matrix evaluation, on
    Garnets with A = 4 and a stochastic policy."""
    from rcmdp_exact.domains import garnet

    print("small dense models (Garnet, A = 4, a stochastic policy, K = 1): evaluate with "
          "method='auto' (LAPACK up to EVALUATE_DENSE_LIMIT states) against method='lu'")
    print(f"{'S':>5} {'auto':>10} {'lu':>10} {'lu/auto':>8} {'mdptoolbox':>11} "
          f"{'max|dV|':>9} {'bound':>9}")
    rows = []
    for S in (2, 5, 10, 50, 100, 200, 400):
        model = garnet(S, 4, max(2, S // 5), n_constraints=1, seed=0, gamma=0.95)
        pi = np.random.default_rng(0).dirichlet(np.ones(4), size=S)
        n = max(repeats, 2000 // S)
        t_auto, auto = median_time(lambda m=model, p=pi: evaluate(m, p), n)
        t_lu, lu = median_time(lambda m=model, p=pi: evaluate(m, p, method="lu"), n)
        P_pi = policy_transition_matrix(model, pi).toarray()[None]
        r_pi = np.einsum("sa,sa->s", pi, model.r)[:, None]
        t_mdp, _ = median_time(
            mdptoolbox_evaluation(P_pi, r_pi, model.gamma, np.zeros(S, dtype=int)), n)
        row = dict(S=S, auto=t_auto, lu=t_lu, mdptoolbox=t_mdp, solver=auto.solver,
                   max_abs_diff=float(np.abs(auto.v - lu.v).max()),
                   error_bound=auto.error_bound)
        rows.append(row)
        print(f"{S:>5} {fmt_ms(t_auto):>10} {fmt_ms(t_lu):>10} {t_lu / t_auto:>7.1f}x "
              f"{fmt_ms(t_mdp):>11} {row['max_abs_diff']:>9.1e} {auto.error_bound:>9.1e}"
              f"  ({auto.solver})", flush=True)
    return rows


def peer_problem(kind: str, S: int, gamma: float, seed: int = 0):
    """(P_pi (dense or CSR), r_pi, the model, the policy) of a random stochastic policy
    (A = 5) on a random model (module docstring, ``--peers``)."""
    from bench_mdp import dense_model, sparse_model

    A = 5
    P, R = dense_model(S, A, seed) if kind == "dense" else sparse_model(S, A, 5, seed)
    pi = np.random.default_rng(seed + 1).dirichlet(np.ones(A), size=S)
    model = TabularCMDP(P, R, gamma=gamma)
    model.P_sparse if model.is_sparse else model.P  # noqa: B018 (its caches, built once)
    P_pi = (np.einsum("sa,sat->st", pi, P) if kind == "dense"
            else policy_transition_matrix(model, pi))
    return P_pi, np.einsum("sa,sa->s", pi, R), model, pi


def reference(P_pi, b: np.ndarray, gamma: float) -> np.ndarray:
    """x with (I - gamma P_pi) x = b to about 1e-18 relative: a float64 solve refined with
    residuals computed in numpy.longdouble (an independent arithmetic)."""
    import scipy.sparse.linalg as spla

    n = b.shape[0]
    if sp.issparse(P_pi):
        M = sp.csr_array(sp.eye_array(n, format="csr") - gamma * P_pi)
        csr = sp.csr_array(P_pi)
        rows = np.repeat(np.arange(n), np.diff(csr.indptr))
        data = csr.data.astype(np.longdouble)

        def prod(x):
            out = np.zeros(n, dtype=np.longdouble)
            np.add.at(out, rows, data * x[csr.indices])
            return out

        def solve(r):
            return spla.gmres(M, r, rtol=1e-14, atol=0.0, restart=60, maxiter=200)[0]
    else:
        from scipy.linalg import lu_factor, lu_solve

        lu = lu_factor(np.eye(n) - gamma * P_pi)
        Pl = P_pi.astype(np.longdouble)

        def prod(x):
            return Pl @ x

        def solve(r):
            return lu_solve(lu, r)
    x = solve(b).astype(np.longdouble)
    bl, gl = b.astype(np.longdouble), np.longdouble(gamma)
    for _ in range(4):
        r = bl - x + gl * prod(x)
        x = x + solve(r.astype(np.float64)).astype(np.longdouble)
    return x


def peers_section(args) -> list[dict]:
    """The ``--peers`` table (module docstring)."""
    import os

    import scipy.linalg  # noqa: F401 (scipy's BLAS loaded before the limit)
    import scipy.sparse.linalg as spla
    from bench_mdp import timed
    from reference50 import policy_reference, verdict
    from threadpoolctl import threadpool_limits

    from rcmdp_exact import PolicySystem

    threadpool_limits(1)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"one BLAS thread; minimum of {args.repeats} interleaved repeats", flush=True)
    head = (f"{'model':<8} {'S':>6} {'gamma':>7} {'ours':>9} {'evaluate':>9} {'numpy':>9} "
            f"{'spsolve':>9} {'gmres':>9} {'x ours':>7} {'x eval':>7} {'cpu':>7} "
            f"{'cpu ev':>7} {'ours err':>9} {'bound':>9} {'':>5} {'eval err':>9} "
            f"{'ev bound':>9} {'':>5} {'numpy err':>9} {'sps err':>9} {'gmres err':>9}  "
            f"method")
    print(head, flush=True)
    rows = []
    # warm-up: compile and import on a small problem
    P_pi, b, model, pi = peer_problem("sparse", 50, 0.95)
    evaluate(model, pi)
    PolicySystem(P_pi, 0.95).solve(b)
    for kind in ("dense", "sparse"):
        for S in (int(x) for x in args.sizes.split(",")):
            if kind == "dense" and S > args.dense_max:
                print(f"{kind:<8} {S:>6}  (not run: a dense matrix of {S} states takes "
                      f"{8 * S * S / 1e9:.1f} GB; --dense-max {S} runs it)", flush=True)
                continue
            for gamma in (float(x) for x in args.gammas.split(",")):
                P_pi, b, model, pi = peer_problem(kind, S, gamma)
                if args.reference == "50":
                    # certified: P_pi as given (ours, the peers) and the model's exact
                    # P_pi = sum_a pi P (evaluate)
                    ref = policy_reference(P_pi, b, None, gamma)
                    ref_model = policy_reference(model.P_sparse if model.is_sparse
                                                 else model.P, model.r, pi, gamma)
                else:
                    ref, ref_model = reference(P_pi, b, gamma), None
                small = S <= args.dense_max
                dense_P = (P_pi.toarray() if sp.issparse(P_pi) else P_pi) if small else None
                csc = sp.csc_array(sp.eye_array(S, format="csc") - gamma * sp.csc_array(
                    P_pi)) if sp.issparse(P_pi) or S <= args.dense_max else None

                def ours(P_pi=P_pi, b=b, gamma=gamma):
                    system = PolicySystem(P_pi, gamma)
                    x = system.solve(b)
                    return x, (system.error_bound, system.method, system.note)

                def whole(model=model, pi=pi):
                    res = evaluate(model, pi)
                    return res.v, (res.error_bound, res.solver, res.solver_note)

                calls = {"ours": ours, "evaluate": whole}
                if dense_P is not None:
                    calls["numpy"] = lambda M=dense_P, b=b, g=gamma: (
                        np.linalg.solve(np.eye(M.shape[0]) - g * M, b), None)
                if csc is not None:
                    calls["spsolve"] = lambda M=csc, b=b: (spla.spsolve(M, b), None)
                    calls["gmres"] = lambda M=csc, b=b: (spla.gmres(sp.csr_array(M), b,
                                                                    rtol=1e-12)[0], None)
                best = {k: None for k in calls}
                cpu = {k: None for k in calls}
                vals, info = {}, {}
                # ours once in this process first: the compiled code of this size's path
                # is loaded here, not again from numba's disk cache in every forked child
                ours()
                whole()
                for _ in range(args.repeats):
                    for name, fn in calls.items():
                        if isinstance(best[name], str):
                            continue
                        t, v, extra = timed(fn, args.timeout, inner=20)
                        if t is None:
                            best[name] = v
                            continue
                        best[name] = t[0] if best[name] is None else min(best[name], t[0])
                        cpu[name] = t[1] if cpu[name] is None else min(cpu[name], t[1])
                        vals[name], info[name] = v, extra
                peers = [k for k in ("numpy", "spsolve", "gmres")
                         if isinstance(best.get(k), float)]
                fastest = min(best[k] for k in peers) if peers else None
                fastest_cpu = min(cpu[k] for k in peers) if peers else None
                bound, method, note = info["ours"]
                ev_bound = info["evaluate"][0]
                if ref_model is not None:
                    # certified intervals of the errors; the upper ends are printed
                    cert = {k: (ref_model if k == "evaluate" else ref).error_interval(
                        vals[k]) for k in vals}
                    err = {k: cert[k][1] for k in vals}
                    holds = {"ours": verdict(cert["ours"], bound),
                             "evaluate": verdict(cert["evaluate"], ev_bound)}
                    ref_bounds = (float(ref.bound), float(ref_model.bound))
                else:
                    err = {k: float(np.abs(vals[k].astype(np.longdouble) - ref).max())
                           for k in vals}
                    holds = {"ours": "?" if err["ours"] > bound else "ok?",
                             "evaluate": "?"}
                    ref_bounds = (None, None)
                row = dict(kind=kind, S=S, gamma=gamma, **{k: best.get(k) for k in
                           ("ours", "evaluate", "numpy", "spsolve", "gmres")},
                           ratio=(best["ours"] / fastest if fastest else None),
                           ratio_evaluate=(best["evaluate"] / fastest if fastest else None),
                           ratio_cpu=(cpu["ours"] / fastest_cpu if fastest else None),
                           ratio_evaluate_cpu=(cpu["evaluate"] / fastest_cpu
                                               if fastest else None),
                           cpu={k: cpu[k] for k in calls},
                           error={k: err.get(k) for k in calls}, bound=bound,
                           evaluate_bound=ev_bound, holds=holds,
                           reference=args.reference, reference_bounds=ref_bounds,
                           method=method, note=note)
                rows.append(row)

                t = {k: "-" if best.get(k) is None else best[k] if isinstance(best[k], str)
                     else fmt_ms(best[k]) for k in ("ours", "evaluate", "numpy", "spsolve",
                                                      "gmres")}
                e = {k: "-" if k not in err else f"{err[k]:.1e}" for k in
                     ("ours", "evaluate", "numpy", "spsolve", "gmres")}
                ratios = " ".join(f"{fmt_ratio(row[k]):>7}" for k in
                                  ("ratio", "ratio_evaluate", "ratio_cpu",
                                   "ratio_evaluate_cpu"))
                print(f"{kind:<8} {S:>6} {gamma:>7} {t['ours']:>9} {t['evaluate']:>9} "
                      f"{t['numpy']:>9} {t['spsolve']:>9} {t['gmres']:>9} {ratios} "
                      f"{e['ours']:>9} {bound:>9.1e} {holds['ours']:>5} {e['evaluate']:>9} "
                      f"{ev_bound:>9.1e} {holds['evaluate']:>5} {e['numpy']:>9} "
                      f"{e['spsolve']:>9} {e['gmres']:>9}  "
                      f"{method}{' (' + note + ')' if note else ''}",
                      flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-mdptoolbox", type=int, default=5000,
                        help="largest S given to pymdptoolbox (dense S x S solve)")
    parser.add_argument("--repeats", type=int, default=11,
                        help="timed repeats per size (3 above S = 10^4)")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--random", action="store_true",
                        help="random sparse models (LU fills in) instead of grids")
    parser.add_argument("--max-lu", type=int, default=4000,
                        help="largest random S also solved with method='lu'")
    parser.add_argument("--max-quantecon", type=int, default=20000,
                        help="largest random S given to QuantEcon")
    parser.add_argument("--small", action="store_true",
                        help="small dense models: the LAPACK path against the sparse LU")
    parser.add_argument("--peers", action="store_true",
                        help="issue 44's table: PolicySystem and evaluate beside numpy, "
                             "spsolve and GMRES")
    parser.add_argument("--sizes", default="200,2000,20000", help="--peers: state counts")
    parser.add_argument("--gammas", default="0.95,0.999,0.9999", help="--peers: discounts")
    parser.add_argument("--dense-max", type=int, default=2000,
                        help="--peers: largest S of a dense matrix (numpy, dense models)")
    parser.add_argument("--reference", choices=("50", "longdouble"), default="50",
                        help="--peers: the certified 50-digit reference (reference50.py, "
                             "the default) or a float64 solve refined in longdouble "
                             "(uncertified, faster)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="--peers: seconds a call may take before it is stopped")
    args = parser.parse_args(argv)
    if args.peers:
        rows = peers_section(args)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=2)
        return 0
    if args.small:
        rows = small_section(args.repeats)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=2)
        return 0
    if args.random:
        rows = random_section(args.max_lu, args.max_quantecon, args.repeats)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=2)
        return 0

    cols = ("S", "ours det", "ours sto", "g=1 det", "g=1 sto", "mdp det", "mdp sto",
            "x det", "x sto", "max|dV|")
    widths = (7, 9, 9, 9, 9, 9, 9, 7, 7, 8)
    header = " ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))
    # Two passes: all of ours first, then pymdptoolbox, so that the BLAS threads that
    # numpy.linalg.solve leaves spinning for a moment never overlap our timings.
    results, values = [], []
    for n_rows, n_cols in tqdm(SIZES, disable=args.no_progress, leave=False, desc="ours"):
        S = n_rows * n_cols
        model = grid_model(n_rows, n_cols)
        undiscounted = model.replace(gamma=1.0)
        det = right_then_down(n_rows, n_cols)
        sto = np.random.default_rng(0).dirichlet(np.ones(4), size=S)
        repeats = args.repeats if S <= 10_000 else min(3, args.repeats)
        row = dict(S=S, mdp_det=None, mdp_sto=None, ratio_det=None, ratio_sto=None,
                   max_abs_diff=None)
        res = {}
        for key, mdl, pol in (("ours_det", model, det), ("ours_sto", model, sto),
                              ("g1_det", undiscounted, det), ("g1_sto", undiscounted, sto)):
            row[key], res[key] = median_time(lambda m=mdl, p=pol: evaluate(m, p), repeats)
        results.append(row)
        values.append((res["ours_det"].v, res["ours_sto"].v))
    for row, (n_rows, n_cols), (v_det_ours, v_sto_ours) in tqdm(
        list(zip(results, SIZES, values, strict=True)), disable=args.no_progress,
        leave=False, desc="pymdptoolbox",
    ):
        S = row["S"]
        if S > args.max_mdptoolbox:
            continue
        model = grid_model(n_rows, n_cols)
        det = right_then_down(n_rows, n_cols)
        sto = np.random.default_rng(0).dirichlet(np.ones(4), size=S)
        repeats = args.repeats if S <= 10_000 else min(3, args.repeats)
        P, R = model.to_mdptoolbox()
        row["mdp_det"], v_det = median_time(
            mdptoolbox_evaluation(P, R, model.gamma, det), repeats)
        P_pi = policy_transition_matrix(model, sto).toarray()[None]
        r_pi = np.einsum("sa,sa->s", sto, model.r)[:, None]
        row["mdp_sto"], v_sto = median_time(
            mdptoolbox_evaluation(P_pi, r_pi, model.gamma, np.zeros(S, dtype=int)), repeats)
        row["ratio_det"] = row["mdp_det"] / row["ours_det"]
        row["ratio_sto"] = row["mdp_sto"] / row["ours_sto"]
        row["max_abs_diff"] = float(max(np.abs(v_det - v_det_ours).max(),
                                        np.abs(v_sto - v_sto_ours).max()))
    print(header)
    print("-" * len(header))
    for row in results:
        cells = (
            str(row["S"]), fmt_ms(row["ours_det"]), fmt_ms(row["ours_sto"]),
            fmt_ms(row["g1_det"]), fmt_ms(row["g1_sto"]), fmt_ms(row["mdp_det"]),
            fmt_ms(row["mdp_sto"]),
            fmt_ratio(row["ratio_det"]),
            fmt_ratio(row["ratio_sto"]),
            "-" if row["max_abs_diff"] is None else f"{row['max_abs_diff']:.1e}",
        )
        print(" ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

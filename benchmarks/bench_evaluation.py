"""Benchmark of exact policy evaluation against pymdptoolbox's matrix evaluation.

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
    args = parser.parse_args(argv)
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

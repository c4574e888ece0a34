"""Benchmark of exact policy evaluation against pymdptoolbox's matrix evaluation.

Models: rectangular grids of S cells with the 4 moves (-1, 0), (+1, 0), (0, +1),
(0, -1) of Safe Navigation, a move succeeding with probability 0.8 (else the agent
stays), clipped at walls; reward -1 per step, a cost of 1 on every 7th cell, the far
corner terminal, gamma = 0.99.  They are built directly as sparse ``TabularCMDP``
(P a CSR matrix (S*A, S), R (S, A), C (S, A, 1)), so the dense (S, A, S) tensor never
exists.

Policy: the deterministic "go right, then down" policy, which reaches the goal from
every cell (so the undiscounted evaluation is defined too).  Columns:

* ``ours det``   :func:`rcmdp_exact.evaluate` of that policy (V, the cost, Q for
  reward and cost, and the occupancy measure; one sparse LU);
* ``ours stoch`` the same for a random stochastic policy (every action has mass);
* ``ours g=1``   the undiscounted evaluation of the deterministic policy (gamma = 1,
  including the networkx check that every reachable state reaches the goal);
* ``mdptoolbox`` ``PolicyIteration._evalPolicyMatrix`` of pymdptoolbox for the same
  deterministic policy on the same model (given in its sparse list form; its
  evaluation builds a dense P_pi and calls ``numpy.linalg.solve``);
* ``ratio``      mdptoolbox / ours det, and ``max|dV|`` the largest difference of the
  two value vectors.

Times are medians over repeats.  Run with

    python benchmarks/bench_evaluation.py

Goals: at least 50x faster than pymdptoolbox at S = 3000, and S = 10^5 evaluated in
under 2 s.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from rcmdp_exact import TabularCMDP, evaluate

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


def mdptoolbox_evaluation(model: TabularCMDP, policy: np.ndarray):
    """A function running pymdptoolbox's matrix evaluation of ``policy``."""
    import mdptoolbox.mdp

    P, R = model.to_mdptoolbox(sparse=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver = mdptoolbox.mdp.PolicyIteration(P, R, model.gamma, policy0=policy,
                                                eval_type="matrix")

    def run():
        solver._evalPolicyMatrix()
        return np.asarray(solver.V).ravel()

    return run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-mdptoolbox", type=int, default=5000,
                        help="largest S given to pymdptoolbox (dense S x S solve)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per size")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)

    header = (f"{'S':>7} {'ours det':>10} {'ours stoch':>11} {'ours g=1':>10} "
              f"{'mdptoolbox':>11} {'ratio':>8} {'max|dV|':>9}")
    print(header)
    print("-" * len(header))
    results = []
    for n_rows, n_cols in tqdm(SIZES, disable=args.no_progress, leave=False):
        S = n_rows * n_cols
        model = grid_model(n_rows, n_cols)
        undiscounted = model.replace(gamma=1.0)
        policy = right_then_down(n_rows, n_cols)
        stochastic = np.random.default_rng(0).dirichlet(np.ones(4), size=S)
        repeats = args.repeats if S <= 10_000 else max(3, args.repeats // 2)
        t_det, res = median_time(lambda: evaluate(model, policy), repeats)  # noqa: B023
        t_sto, _ = median_time(lambda: evaluate(model, stochastic), repeats)  # noqa: B023
        t_g1, _ = median_time(lambda: evaluate(undiscounted, policy), repeats)  # noqa: B023
        row = dict(S=S, ours_det=t_det, ours_stochastic=t_sto, ours_gamma1=t_g1,
                   mdptoolbox=None, ratio=None, max_abs_diff=None)
        text_mdp, text_ratio, text_diff = "-", "-", "-"
        if S <= args.max_mdptoolbox:
            run = mdptoolbox_evaluation(model, policy)
            t_mdp, v_mdp = median_time(run, repeats)
            diff = float(np.abs(v_mdp - res.v).max())
            row.update(mdptoolbox=t_mdp, ratio=t_mdp / t_det, max_abs_diff=diff)
            text_mdp = f"{1e3 * t_mdp:9.1f}ms"
            text_ratio = f"{t_mdp / t_det:7.1f}x"
            text_diff = f"{diff:9.1e}"
        tqdm.write(f"{S:>7} {1e3 * t_det:8.1f}ms {1e3 * t_sto:9.1f}ms {1e3 * t_g1:8.1f}ms "
                   f"{text_mdp:>11} {text_ratio:>8} {text_diff:>9}")
        results.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``rcmdp evaluate``: exact test metrics of fixed policies on the paper's domains.

For each domain (the training model of :func:`rcmdp_exact.domains.paper_domain`, or a
variant picked by the options) and each fixed policy, prints the undiscounted T-step
value and cost from the start state (the paper's test metric, by backward induction),
the rescaled budget d T / sum_{i<T} gamma^i, the overshoot C - d', the penalised return
V - 500 max(0, C - d'), and the discounted value and cost (one sparse LU solve).

Policies: uniform random on every domain; on the grids the shortest path to the goal
and the path of least cost (cost-free when one exists); on Inventory Management:
order nothing, order up to ceil(mu), and the myopically greedy order argmax_a r(s, a).

``--model PATH.npz`` evaluates your own model (a file written by ``TabularCMDP.save``)
instead: the uniform random policy, the myopically greedy policy argmax_a r(s, a), the
optimal policy of the reward alone (the unconstrained MDP, :func:`rcmdp_exact.solve_mdp`)
and the policy of least total cost (the MDP of reward -sum_k c_k).  The T-step metrics
need a horizon (the model's or ``--horizon T``); without one only the discounted value
and cost are printed.
"""

from __future__ import annotations

import argparse
import json
import math

from ..names import DEMANDS, NAV1_COST_LAYOUTS, PAPER_DOMAINS, REVENUES, USER_DOMAIN
from ._args import add_model_options, load_user_model, refuse_with_model

NAME = "evaluate"
HELP = ("exact value, cost and penalised return of fixed policies on the paper's three "
        "domains or on your own model")

TITLES = {
    "inventory": "Inventory Management",
    "nav1": "Safe Navigation 1",
    "nav2": "Safe Navigation 2",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--domain", choices=("all", *PAPER_DOMAINS), default=None,
        help="domain to evaluate (default: all three; not with --model)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--cost-layout", choices=NAV1_COST_LAYOUTS, default=None,
        help="Safe Navigation 1 cost cells (default: reference, 7 cells)",
    )
    parser.add_argument(
        "--revenue", choices=REVENUES, default=None,
        help="Inventory revenue term (default: economic, 3.99 x units sold)",
    )
    parser.add_argument(
        "--demand", choices=DEMANDS, default=None,
        help="Inventory demand discretisation (default: reference, Phi(k) - Phi(k-1))",
    )
    add_model_options(parser, kinds=False, set_file=False, estimation=False)


def build_model(name: str, args: argparse.Namespace):
    """The training model of ``name`` with the variant options of ``args``."""
    from ..domains import inventory, safe_navigation_1, safe_navigation_2

    if name == "inventory":
        return inventory(revenue=args.revenue or REVENUES[0], demand=args.demand or DEMANDS[0])
    if name == "nav1":
        return safe_navigation_1(cost_layout=args.cost_layout or NAV1_COST_LAYOUTS[0])
    return safe_navigation_2()


def fixed_policies(name: str, model) -> list:
    """The fixed policies evaluated on domain ``name``: (label, policy) pairs."""
    import numpy as np

    from ..domains import order_up_to_policy, shortest_path_policy

    S, A = model.n_states, model.n_actions
    out = [("uniform random", np.full((S, A), 1.0 / A))]
    if name == USER_DOMAIN:
        from ..core.mdp import solve_mdp

        least = model.replace(R=-np.asarray(model.c).sum(axis=-1), C=np.asarray(model.c))
        out.append(("greedy argmax_a r(s,a)", np.argmax(model.r, axis=1).astype(np.int64)))
        out.append(("optimal for the reward alone", solve_mdp(model).policy))
        out.append(("least total cost", solve_mdp(least).policy))
    elif name in ("nav1", "nav2"):
        out.append(("shortest path", shortest_path_policy(model)))
        out.append(("least-cost path", shortest_path_policy(model, minimise_cost=True)))
    else:
        mu = S / 4
        level = min(S - 1, math.ceil(mu))
        out.append(("order nothing", np.zeros(S, dtype=np.int64)))
        out.append((f"order up to {level} (ceil mu)", order_up_to_policy(level, S)))
        out.append(("greedy argmax_a r(s,a)", np.argmax(model.r, axis=1).astype(np.int64)))
    return out


def evaluate_domain(name: str, model) -> dict:
    """Exact metrics of every fixed policy on ``model``, as a JSON-friendly dict."""
    from ..core.evaluation import evaluate, evaluate_finite_horizon

    rows = []
    budget = None
    for label, pol in fixed_policies(name, model):
        disc = evaluate(model, pol)
        row = {"policy": label, "value": None, "costs": None, "budget": None,
               "overshoot": None, "penalised_return": None}
        if model.horizon is not None:
            fh = evaluate_finite_horizon(model, pol)
            budget = fh.budget
            row.update(value=fh.value, costs=fh.costs.tolist(), budget=fh.budget.tolist(),
                       overshoot=fh.overshoot.tolist(), penalised_return=fh.penalised_return)
        row.update(discounted_value=disc.value, discounted_costs=disc.costs.tolist())
        rows.append(row)
    return {
        "domain": name,
        "title": TITLES.get(name, "Your model"),
        "model": model.name,
        "horizon": model.horizon,
        "gamma": model.gamma,
        "d": model.d.tolist(),
        "budget": [] if budget is None else budget.tolist(),
        "policies": rows,
    }


def _num(x: float) -> str:
    if x is None:
        return "-"
    return f"{round(float(x), 3) + 0.0:.3f}"  # + 0.0 turns -0.0 into 0.0


def _fmt_vec(v) -> str:
    return "-" if v is None else " ".join(_num(x) for x in v)


def format_table(res: dict) -> str:
    """A text table of :func:`evaluate_domain`'s result."""
    head = (
        f"{res['title']}: {res['model']}\n"
        f"  T = {res['horizon']}, gamma = {res['gamma']}, d = {_fmt_vec(res['d'])}, "
        f"rescaled budget d' = {_fmt_vec(res['budget'])}"
        + ("" if res["horizon"] is not None else
           "\n  (no horizon: T-step metrics need --horizon T; discounted metrics only)")
    )
    cols = ("policy", "value V_T", "cost C_T", "d'", "overshoot", "R_pen",
            "disc. value", "disc. cost")
    lines = [
        (r["policy"], _num(r["value"]), _fmt_vec(r["costs"]), _fmt_vec(r["budget"]),
         _fmt_vec(r["overshoot"]), _num(r["penalised_return"]),
         _num(r["discounted_value"]), _fmt_vec(r["discounted_costs"]))
        for r in res["policies"]
    ]
    widths = [max(len(c), *(len(x[i]) for x in lines)) for i, c in enumerate(cols)]
    def row(cells):
        return "  " + cells[0].ljust(widths[0]) + "  " + "  ".join(
            c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
    sep = "  " + "-" * (sum(widths) + 2 * (len(widths) - 1))
    return "\n".join([head, row(cols), sep, *(row(x) for x in lines)])


def run(args: argparse.Namespace) -> int:
    parser = args._parser
    refuse_with_model(parser, args, ("domain", "cost_layout", "revenue", "demand"))
    own = load_user_model(args)
    if own is not None:
        results = [evaluate_domain(USER_DOMAIN, own.model)]
    else:
        names = PAPER_DOMAINS if args.domain in (None, "all") else (args.domain,)
        results = [evaluate_domain(n, build_model(n, args)) for n in names]
    if args.json:
        print(json.dumps({"domains": {r["domain"]: r for r in results}}, indent=2))
    else:
        print("Exact undiscounted T-step metrics from the start state (value V_T, cost "
              "C_T, penalised return R_pen = V_T - 500 max(0, C_T - d')) and discounted "
              f"value/cost, on {'your model' if own is not None else 'the training models'}."
              f"\n")
        print("\n\n".join(format_table(r) for r in results))
    return 0

r"""Score learners on the suite exactly: the leaderboard.

For each instance, learner and seed, :func:`score` trains the learner on the
instance's nominal model (the robust learners also get the set of the suite's grid),
takes its final policy table :math:`\pi` and evaluates it exactly on the set
(:func:`~rcmdp_exact.robust_evaluate`):

* ``worst_value`` :math:`\min_P V(\pi, P)` and ``worst_costs`` :math:`\max_P
  C_k(\pi, P)`, each under its own adversary;
* ``violation`` :math:`\max_k (\max_P C_k(\pi, P) - d_k)^+` and ``feasible``
  (violation 0, up to 1e-9 max(1, |d|));
* the share of the certified bracket reached, with the record's ``floor_value``
  :math:`f = \min_\pi \min_P V` as zero: ``share_lower`` = (worst_value - f) / (lower
  - f) (above 1 when the learner beats the certified lower side) and ``share_upper``
  = (worst_value - f) / (upper - f), a lower bound on the share of the RCMDP optimum
  itself (the optimum is at most ``upper``).  Both are None when the side is not
  finite.  A policy that violates its budget is not robust-feasible, so its share says
  how much value it reached, not that it solved the problem: read it with
  ``feasible``.

The learners: the six of :data:`rcmdp_exact.learners.ALGORITHMS` (through
:func:`rcmdp_exact.learners.train`), a user's trainer (the trainer protocol of ``rcmdp
train --trainer``, ``docs/your_learner.md``) and the baselines of
:data:`rcmdp_exact.suite.BASELINES` (:func:`tabular_baseline`, the uniform policy).
"""

from __future__ import annotations

import json
import time

import numpy as np

from .._result import Result

__all__ = ["Scores", "learnable", "read_scores", "score", "score_policy", "tabular_baseline",
           "write_scores"]


def learnable() -> list[str]:
    """The instances the leaderboard trains on by default (``Instance.learn``)."""
    from .instances import INSTANCES

    return [n for n, i in INSTANCES.items() if i.learn]


def _share(v, lo, side):
    if side is None or lo is None or not np.isfinite(side) or side - lo <= 0:
        return None
    return float((v - lo) / (side - lo))


def score_policy(model, uset, record: dict, policy) -> dict:
    """The exact scores of one policy table (module notes) on ``model`` (with its budget)
    and ``uset``, against ``record`` (None: no shares)."""
    import warnings

    from ..robust import robust_evaluate

    pi = np.asarray(policy, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = robust_evaluate(model, pi, uset, progress=False)
    d = np.atleast_1d(np.asarray(model.d, dtype=np.float64))
    costs = np.atleast_1d(np.asarray(ev.costs_worst, dtype=np.float64))
    viol = float(np.max(np.maximum(costs - d, 0.0)))
    out = dict(worst_value=float(ev.value), worst_costs=costs.tolist(), violation=viol,
               feasible=bool(np.all(costs <= d + 1e-9 * np.maximum(1.0, np.abs(d)))),
               share_lower=None, share_upper=None)
    if record is not None:
        b, f = record["bracket"], record.get("floor_value")
        out["share_lower"] = _share(out["worst_value"], f, b.get("lower"))
        out["share_upper"] = _share(out["worst_value"], f, b.get("upper"))
    return out


def tabular_baseline(model, episodes: int, seed=0):
    r"""The plain tabular baseline: certainty equivalence.

    ``episodes`` episodes of the uniform random policy from p0 on ``model`` (each of
    ``model.horizon`` steps or until a terminal state), the transition counts
    :math:`n(s, a, s')`, the estimate :math:`\hat P = n / \sum_{s'} n` (an unvisited
    pair stays where it is), and the CMDP optimum of the estimated model (the
    occupancy LP, :func:`~rcmdp_exact.solve_cmdp`); when the estimated CMDP is
    infeasible, the policy of least estimated cost.  It knows the rewards and costs, not
    the kernel, and ignores the set.  Returns the (S, A) policy table.
    """
    from ..ground_truth import solve_cmdp

    rng = np.random.default_rng(seed)
    S, A = model.n_states, model.n_actions
    P = np.asarray(model.P, dtype=np.float64)
    cdf = np.cumsum(P, axis=2)
    cdf[..., -1] = 1.0
    p0 = np.asarray(model.p0, dtype=np.float64)
    term = np.asarray(model.terminal, dtype=bool)
    T = int(model.horizon or 100)
    counts = np.zeros((S, A, S))
    s = np.searchsorted(np.cumsum(p0), rng.random(episodes), side="right").clip(0, S - 1)
    live = ~term[s]
    for _ in range(T):
        if not live.any():
            break
        a = rng.integers(A, size=episodes)
        nxt = (rng.random(episodes)[:, None] > cdf[s, a]).sum(axis=1).clip(0, S - 1)
        np.add.at(counts, (s[live], a[live], nxt[live]), 1.0)
        s = np.where(live, nxt, s)
        live &= ~term[s]
    n = counts.sum(axis=2, keepdims=True)
    P_hat = np.where(n > 0, counts / np.maximum(n, 1.0), np.eye(S)[:, None, :])
    est = model.with_transitions(P_hat)
    lp = solve_cmdp(est)
    if lp.success and lp.get("policy") is not None:
        return np.asarray(lp.policy, dtype=np.float64)
    least = solve_cmdp(est.replace(R=-np.asarray(model.C)[..., 0], C=None, d=None))
    return np.asarray(least.policy, dtype=np.float64)


class Scores(Result, name="rcmdp_exact.suite.Scores", kind="suite scores"):
    """What :func:`score` returns: ``rows`` (one dict per instance, algorithm and seed:
    the scores of :func:`score_policy`, ``seconds``, ``episodes`` and ``policy``, the
    trained (S, A) table as nested lists), ``settings`` and ``seconds``."""

    def summary(self) -> list[dict]:
        """One row per (instance, algorithm): means over the seeds."""
        groups: dict = {}
        for r in self["rows"]:
            groups.setdefault((r["instance"], r["algorithm"]), []).append(r)
        out = []
        for (inst, algo), rows in groups.items():
            def mean(field, rows=rows):
                vals = [r[field] for r in rows if r[field] is not None]
                return float(np.mean(vals)) if vals else None

            out.append(dict(instance=inst, algorithm=algo, seeds=len(rows),
                            worst_value=mean("worst_value"), violation=mean("violation"),
                            feasible=sum(r["feasible"] for r in rows),
                            share_lower=mean("share_lower"), share_upper=mean("share_upper"),
                            lower=rows[0]["lower"], upper=rows[0]["upper"],
                            seconds=float(sum(r["seconds"] for r in rows))))
        return out

    def table(self) -> str:
        """The summary as a text table (means over the seeds)."""
        def f(x, d=4):
            return "-" if x is None else f"{x:.{d}g}"

        head = ("instance", "algorithm", "seeds", "worst value", "violation", "feasible",
                "share (lower)", "share (upper)", "bracket")
        rows = [(s["instance"], s["algorithm"], str(s["seeds"]), f(s["worst_value"]),
                 f(s["violation"], 3), f"{s['feasible']}/{s['seeds']}", f(s["share_lower"], 3),
                 f(s["share_upper"], 3), f"[{f(s['lower'])}, {f(s['upper'])}]")
                for s in self.summary()]
        w = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = ["  ".join(h.ljust(x) for h, x in zip(head, w, strict=True)),
                 "  ".join("-" * x for x in w)]
        lines += ["  ".join(c.ljust(x) for c, x in zip(r, w, strict=True)) for r in rows]
        return "\n".join(lines)


def _train(trainer, algo, model, uset, seed, episodes, options):
    """The trained (S, A) policy table of one run."""
    from ..names import ROBUST_ALGORITHMS

    if algo == "uniform":
        return np.full((model.n_states, model.n_actions), 1.0 / model.n_actions)
    if algo == "tabular" and trainer is None:
        return tabular_baseline(model, episodes, seed)
    robust = algo in ROBUST_ALGORITHMS
    if trainer is None:
        from ..learners import train

        res = train(model, algo, ball=uset if robust else None, seed=seed, episodes=episodes,
                    eval_every=None, progress=False, **options)
        return np.asarray(res.policy_table(), dtype=np.float64)
    from ..protocol.run import check_result

    res = trainer(model, algo, ball=uset if robust else None, seed=seed, episodes=episodes,
                  critic="learned", gradient="sampled", inner="sort",
                  multiplier_update="adam-log", eval_every=None, true_model=None,
                  progress=False, **options)
    return check_result(res, trainer, model.n_states, model.n_actions)


def score(trainer=None, algorithms=("pg",), names=None, seeds=(0, 1, 2), episodes: int = 1000,
          *, set: str = "l1", radius: float = 0.1, path=None, progress: bool | None = None,
          **options) -> Scores:
    """Train and score learners on the suite (module notes).

    Parameters
    ----------
    trainer : callable, optional
        A trainer of the trainer protocol (``docs/your_learner.md``), called as
        ``trainer(model, algorithm, ball=..., seed=..., episodes=..., ...)``; None: the
        package's learners and baselines.
    algorithms : str or sequence of str
        Learners of :data:`rcmdp_exact.learners.ALGORITHMS` or baselines of
        :data:`rcmdp_exact.suite.BASELINES`; with a ``trainer``, the one name passed to
        it.
    names : sequence of str, optional
        Instances (default: :func:`learnable`).
    seeds : iterable of int
        One run per seed.
    episodes : int
        Training episodes per run (the tabular baseline's exploration episodes).
    set, radius : the set of the grid the robust learners train on and the scores use.
    path : a data file (default: the shipped one).
    progress : bar over the runs (None: when standard error is a terminal).
    **options : passed to the learners (``rcmdp_exact.learners.train``) or the trainer.
    """
    from .._checks import InputError, check_int
    from .._progress import progress_default, tqdm
    from ..names import ALGORITHMS
    from .sets import KINDS
    from .store import BASELINES, definition, load

    algorithms = [algorithms] if isinstance(algorithms, str) else list(algorithms)
    if not algorithms:
        raise InputError("algorithms is empty; give e.g. ['pg'] or ['tabular']")
    valid = (*ALGORITHMS, *BASELINES)
    for a in algorithms:
        if a not in valid:
            raise InputError(f"unknown algorithm {a!r}; give one of {', '.join(valid)}")
    if trainer is not None:
        from ..protocol.run import check_trainer

        check_trainer(trainer)
        if len(algorithms) != 1 or algorithms[0] in BASELINES:
            raise InputError("a trainer trains one learner: give one algorithm name of "
                             f"{', '.join(ALGORITHMS)} with it (the name passed to it)")
    if set not in KINDS:
        raise InputError(f"unknown set {set!r}; the suite's sets are {', '.join(KINDS)}")
    names = learnable() if names is None else ([names] if isinstance(names, str) else
                                               list(names))
    for n in names:
        definition(n)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise InputError("seeds is empty; give e.g. range(3)")
    check_int(episodes, "episodes", 1)
    if set != "l1" and any(a in ("adversarial-rcpg", "rcpg-value", "rcpg-constraint",
                                 "rcpg-lagrangian") for a in algorithms) and trainer is None:
        raise InputError(f"the package's robust learners train on L1 balls (their compiled "
                         f"worst case); score them with set='l1', not {set!r}")
    loaded = {}
    for n in names:
        loaded[n] = load(n, set=set, radius=radius, path=path)
        if loaded[n].record is None:
            raise InputError(f"the data file has no record of {n} with the {set} set of "
                             f"radius {radius:g}; certify it first (rcmdp suite certify)")
    runs = [(n, a, s) for n in names for a in algorithms for s in seeds]
    rows = []
    t0 = time.perf_counter()
    for n, a, s in tqdm(runs, desc="rcmdp suite score", disable=not progress_default(progress)):
        model, uset, rec = loaded[n]
        t1 = time.perf_counter()
        pol = _train(trainer, a, model, uset, s, episodes, options)
        secs = time.perf_counter() - t1
        sc = score_policy(model, uset, rec, pol)
        b = rec["bracket"]
        rows.append(dict(instance=n, algorithm=a, seed=s, key=rec["key"], episodes=episodes,
                         budget=list(rec["budget"]), lower=b.get("lower"),
                         upper=b.get("upper"), floor_value=rec.get("floor_value"), **sc,
                         seconds=secs, policy=pol.tolist()))
    who = None if trainer is None else f"{trainer.__module__}:{trainer.__qualname__}"
    return Scores(rows=rows, seconds=time.perf_counter() - t0,
                  settings=dict(trainer=who, algorithms=algorithms, names=names, seeds=seeds,
                                episodes=episodes, set=set, radius=float(radius),
                                options={k: v for k, v in options.items()
                                         if isinstance(v, int | float | str | bool)}),
                  success=True, status="scored", message=f"{len(rows)} runs scored")


def write_scores(path, scores: Scores) -> None:
    """Write ``scores`` as JSON (the rows with their policies and the settings)."""
    from pathlib import Path

    Path(path).write_text(json.dumps({"format": "rcmdp_exact suite scores", "schema": 1,
                                      "settings": scores["settings"],
                                      "seconds": scores["seconds"],
                                      "rows": scores["rows"]}, indent=None))


def read_scores(path) -> Scores:
    """The scores written by :func:`write_scores`."""
    from pathlib import Path

    from .._io import LoadError

    try:
        payload = json.loads(Path(path).read_text())
        rows = payload["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LoadError(f"{str(path)!r} is not a score file of rcmdp suite score --out "
                        f"({exc})") from None
    return Scores(rows=rows, settings=payload.get("settings", {}),
                  seconds=payload.get("seconds"), success=True, status="scored",
                  message=f"{len(rows)} runs")

r"""Score learners and planners on the suite exactly: the leaderboard.

For each instance, **entrant** and seed, :func:`score` gets a policy table
:math:`\pi` from the entrant (a learner trained on the instance's nominal model, the
robust learners also given the set; a planner given the model and the set) and
evaluates it exactly on the set (:func:`~rcmdp_exact.robust_evaluate`):

* ``worst_value`` :math:`\min_P V(\pi, P)` and ``worst_costs`` :math:`\max_P
  C_k(\pi, P)`, each under its own adversary;
* ``violation`` :math:`\max_k (\max_P C_k(\pi, P) - d_k)^+` and ``feasible``
  (violation within 1e-9 max(1, |d|));
* **only for a robust-feasible policy**, the share of the certified bracket reached,
  with the record's ``floor_value`` :math:`f = \min_\pi \min_P V` as zero:
  ``share_lower`` = (worst_value - f) / (lower - f) and ``share_upper`` =
  (worst_value - f) / (upper - f), a lower bound on the share of the RCMDP optimum
  itself.  A policy that violates its budget has no share (None): it did not solve the
  problem, and its worst value and violation are shown apart.  A robust-feasible
  share above 1 of the upper side would contradict the certificate: ``flag`` says so
  (and one above the lower side says the entrant beat the certified lower side).

Entrants (:data:`ENTRANTS`, :func:`register`): the six learners of
:data:`rcmdp_exact.learners.ALGORITHMS`, the baselines "tabular" (certainty equivalence,
:func:`tabular_baseline`), "uniform" and "least-cost" (the policy of least worst-case
cost, robust-feasible on every record that is not infeasible, so every scored instance
has a robust-feasible entry), a user's trainer of the trainer protocol under a name of
the user's (``score(trainer, name=...)``, ``rcmdp suite score --trainer M:F --name
N``), and any planner registered by name (``register("my-planner", fn)``: the package
of exact-gradient planners registers its own; ``rcmdp suite score --planner M:F
--name N`` scores a function of the user's).

:class:`Scores` is a :class:`~rcmdp_exact.Result`: ``rows`` (one per run, with the
policy), ``summary()`` (per instance and entrant: the number of seeds and of
robust-feasible runs, means with 95% t-intervals over the seeds), ``table()``,
``to_frame()`` (one row per run) and ``save``/``Result.load``.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass

import numpy as np

from .._result import Result

__all__ = ["ENTRANTS", "Entrant", "Scores", "learnable", "register", "rescore", "score",
           "tabular_baseline"]

#: Tolerance of the feasibility of a scored policy (times max(1, |d|)).
FEASIBLE_TOL = 1e-9


def plus_minus(m, h, d: int = 3, sign: str = "+-") -> str:
    """``m +- h`` with ``d`` significant digits ("-" for no mean, ``m`` alone for no
    half-width; a half-width below 1e-9 of the value, the rounding of equal runs, shown
    as 0)."""
    if m is None:
        return "-"
    if h is None:
        return f"{m:.{d}g}"
    return f"{m:.{d}g} {sign} {0.0 if h <= 1e-9 * max(1.0, abs(m)) else h:.2g}"


def learnable() -> list[str]:
    """The instances the leaderboard trains on by default (``Instance.learn``)."""
    from .instances import INSTANCES

    return [n for n, i in INSTANCES.items() if i.learn]


@dataclass(frozen=True)
class Entrant:
    """An entrant of the leaderboard: ``fn(model, uset, *, seed, episodes, record,
    **options)`` returns a policy table (S, A) or a result with ``policy_table()``;
    ``kind`` is "learner", "planner" or "baseline"; ``robust``: whether it is given the
    set (a learner that is not is trained on the nominal model alone)."""

    name: str
    fn: object
    kind: str = "planner"
    robust: bool = True
    description: str = ""


#: The registered entrants by name (:func:`register`).
ENTRANTS: dict = {}


def register(name: str, fn, *, kind: str = "planner", robust: bool = True,
             description: str = "", replace: bool = False) -> Entrant:
    """Register an entrant under ``name`` (an InputError when the name is taken, unless
    ``replace``).  ``fn(model, uset, *, seed, episodes, record, **options)`` returns a
    policy table (S, A) or an object with ``policy_table()``."""
    from .._checks import InputError, check_choice

    if not isinstance(name, str) or not name or any(ch in name for ch in " ,/"):
        raise InputError(f"an entrant's name is a word without spaces, commas or "
                         f"slashes; got {name!r}")
    if not callable(fn):
        raise InputError(f"the entrant {name!r} must be callable; got {type(fn).__name__}")
    check_choice(kind, "kind", ("learner", "planner", "baseline"))
    if name in ENTRANTS and not replace:
        raise InputError(f"an entrant named {name!r} is registered already; choose "
                         f"another name (or replace=True)")
    ENTRANTS[name] = Entrant(name, fn, kind, bool(robust), description)
    return ENTRANTS[name]


# --------------------------------------------------------------------------- built-ins
def _learner(algo):
    def train_it(model, uset, *, seed, episodes, record=None, **options):
        from ..learners import train
        from ..names import ROBUST_ALGORITHMS

        robust = algo in ROBUST_ALGORITHMS
        return train(model, algo, uset=uset if robust else None, seed=seed,
                     episodes=episodes, eval_every=None, progress=False, **options)
    return train_it


def _uniform(model, uset, *, seed, episodes, record=None, **options):
    return np.full((model.n_states, model.n_actions), 1.0 / model.n_actions)


def _least_cost(model, uset, *, seed, episodes, record=None, **options):
    if record is not None and record.get("least_policy") is not None:
        return np.asarray(record["least_policy"], dtype=np.float64)
    from ..domains.classic import cost_levels

    return cost_levels(model, uset).policies["least"]


def _tabular(model, uset, *, seed, episodes, record=None, **options):
    return tabular_baseline(model, episodes, seed)


def _builtins() -> None:
    from ..names import ALGORITHMS, ROBUST_ALGORITHMS

    for algo in ALGORITHMS:
        register(algo, _learner(algo), kind="learner", robust=algo in ROBUST_ALGORITHMS,
                 description=f"the package's learner {algo}", replace=True)
    register("tabular", _tabular, kind="baseline", robust=False, replace=True,
             description="certainty equivalence: the CMDP optimum of the kernel "
                         "estimated from uniform exploration (ignores the set)")
    register("uniform", _uniform, kind="baseline", robust=False, replace=True,
             description="the uniform random policy")
    register("least-cost", _least_cost, kind="baseline", replace=True,
             description="the policy of least worst-case cost (ignores the reward): "
                         "robust-feasible on every record that is not infeasible")


def entrant(name: str) -> Entrant:
    """The entrant registered as ``name`` (a built-in planner of
    :mod:`rcmdp_exact.planners` is registered on first use); an InputError naming the
    entrants otherwise."""
    from .._checks import InputError

    if not ENTRANTS:
        _builtins()
    if name not in ENTRANTS:
        from ..planners import NAMES as planner_names

        if name in planner_names:  # the built-in planners register themselves
            import sys

            from ..planners.base import load_builtin, register_entrants

            load_builtin()
            register_entrants(sys.modules[__name__])
    if name not in ENTRANTS:
        raise InputError(f"unknown entrant {name!r}; give one of {', '.join(ENTRANTS)} "
                         f"(or a trainer with --trainer, a planner with --planner, named "
                         f"by --name)")
    return ENTRANTS[name]


# --------------------------------------------------------------------------- scoring
def _share(v, lo, side):
    if side is None or lo is None or not np.isfinite(side) or side - lo <= 0:
        return None
    return float((v - lo) / (side - lo))


def _score_policy(model, uset, record: dict | None, policy) -> dict:
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
    viol = float(np.max(np.maximum(costs - d, 0.0), initial=0.0))
    ok = bool(np.all(costs <= d + FEASIBLE_TOL * np.maximum(1.0, np.abs(d))))
    out = dict(worst_value=float(ev.value), worst_costs=costs.tolist(), violation=viol,
               feasible=ok, share_lower=None, share_upper=None, flag="")
    if record is not None and ok:
        b, f = record["bracket"], record.get("floor_value")
        out["share_lower"] = _share(out["worst_value"], f, b.get("lower"))
        out["share_upper"] = _share(out["worst_value"], f, b.get("upper"))
        up = b.get("upper")
        if up is not None and out["worst_value"] > up + 1e-7 * max(1.0, abs(up)):
            out["flag"] = "above the certified upper side: the certificate is contradicted"
        elif out["share_lower"] is not None and out["share_lower"] > 1.0 + 1e-9:
            out["flag"] = "beats the certified lower side"
    elif not ok:
        out["flag"] = "violates its budget: no share"
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
    from .._checks import check_limit, rng_from
    from ..ground_truth import solve_cmdp

    episodes = check_limit(episodes, "episodes", "episodes")
    rng = rng_from(seed)
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


def _t_interval(values) -> tuple:
    """(mean, half-width of the 95% t-interval) of ``values``; (None, None) when empty,
    half-width None for one value."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None, None
    mean = float(np.mean(vals))
    if len(vals) < 2:
        return mean, None
    from scipy.stats import t

    half = float(t.ppf(0.975, len(vals) - 1) * np.std(vals, ddof=1) / math.sqrt(len(vals)))
    return mean, half


class Scores(Result, kind="suite scores"):
    """What :func:`score` returns: ``rows`` (one dict per instance, entrant and seed:
    the scores of :func:`_score_policy`, ``entrant``, ``kind``, ``seed``, ``seconds``,
    ``episodes``, ``error`` (the message of a run whose entrant raised, else "") and
    ``policy``, the (S, A) table as nested lists), ``settings``, ``seconds``,
    ``complete`` (False while runs are still to come) and ``failed`` (runs that raised).
    Save it with ``save(path)`` (JSON) and read it with ``Result.load(path)`` or
    ``Scores.load(path)``."""

    def summary(self) -> list[dict]:
        """One row per (instance, entrant): ``seeds``, ``feasible`` (runs), ``failed``;
        ``share_upper``, ``share_lower``, ``worst_value`` (means over the
        robust-feasible runs) with their 95% t-interval half-widths (``*_ci``);
        ``violation`` (mean over the runs that violate), ``flags``."""
        groups: dict = {}
        for r in self["rows"]:
            groups.setdefault((r["instance"], r["entrant"]), []).append(r)
        out = []
        for (inst, name), rows in groups.items():
            good = [r for r in rows if not r.get("error")]
            feas = [r for r in good if r["feasible"]]
            bad = [r for r in good if not r["feasible"]]
            row = dict(instance=inst, entrant=name, kind=rows[0].get("kind", ""),
                       seeds=len(rows), feasible=len(feas), failed=len(rows) - len(good),
                       lower=rows[0].get("lower"), upper=rows[0].get("upper"))
            for field in ("share_upper", "share_lower", "worst_value"):
                row[field], row[field + "_ci"] = _t_interval(r[field] for r in feas)
            row["violation"], row["violation_ci"] = _t_interval(r["violation"] for r in bad)
            row["infeasible_worst_value"], _ = _t_interval(r["worst_value"] for r in bad)
            row["flags"] = sorted({r["flag"] for r in feas if r.get("flag")})
            out.append(row)
        return out

    def table(self) -> str:
        """The summary as a text table: the share of the certified upper side over the
        robust-feasible runs (mean +- 95% CI), their count, and the runs that violate
        their budget apart (mean violation)."""
        def f(x, d=4):
            return "-" if x is None else f"{x:.{d}g}"

        head = ("instance", "entrant", "feasible", "share of upper (feasible runs)",
                "worst value (feasible)", "violating: mean violation", "failed", "flags")
        rows = [(s["instance"], s["entrant"], f"{s['feasible']}/{s['seeds']}",
                 plus_minus(s["share_upper"], s["share_upper_ci"]),
                 plus_minus(s["worst_value"], s["worst_value_ci"], 4),
                 "-" if s["violation"] is None else
                 f"{s['seeds'] - s['feasible'] - s['failed']} runs: {f(s['violation'], 3)}",
                 str(s["failed"]), "; ".join(s["flags"]))
                for s in self.summary()]
        w = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = ["  ".join(h.ljust(x) for h, x in zip(head, w, strict=True)),
                 "  ".join("-" * x for x in w)]
        lines += ["  ".join(c.ljust(x) for c, x in zip(r, w, strict=True)) for r in rows]
        return "\n".join(lines)

    def to_frame(self, arrays: str = "elements", *, form: str = "wide",
                 max_size: int | None = None):
        """A :class:`pandas.DataFrame` with one row per run (the policy left out, the
        worst-case costs as ``worst_costs[k]``); ``form="long"`` as
        :meth:`Result.to_frame`.  ``max_size`` (an int >= 0 or None) is checked as
        there; the wide form holds no arrays (the policy is left out), so it leaves
        nothing out."""
        if max_size is not None:
            from .._checks import check_int

            max_size = check_int(max_size, "max_size", 0)
        if form != "wide":
            return super().to_frame(arrays, form=form, max_size=max_size)
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Scores.to_frame needs pandas; pip install "
                              "\"rcmdp_exact[frames]\" (or use the rows, a dict per run)") \
                from None
        flat = []
        for r in self["rows"]:
            row = {k: v for k, v in r.items() if k not in ("policy", "worst_costs", "budget")}
            for k, c in enumerate(r.get("worst_costs") or []):
                row[f"worst_costs[{k}]"] = c
            for k, c in enumerate(r.get("budget") or []):
                row[f"budget[{k}]"] = c
            flat.append(row)
        return pd.DataFrame(flat)


# A score file carries the format of every Result ("rcmdp_exact.Result/1") and names its
# class in its tree, so that ``Result.load(path)`` reads it in a session that has not
# imported this module (the tree's class name imports it), and ``Scores.load(path)``
# reads it as Scores (and refuses any other result).
Scores.result_format = Result.result_format


def _policy_of(res, who: str, S: int, A: int) -> np.ndarray:
    """The (S, A) table an entrant returned (a table, or an object with
    ``policy_table()``), checked: a non-finite entry is named as such, then the shape,
    then the rows."""
    from .._checks import InputError

    table = res.policy_table() if callable(getattr(res, "policy_table", None)) else res
    try:
        pi = np.asarray(table, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{who} returned {type(res).__name__}, not a policy table (S, A) "
                         f"or an object with policy_table()") from None
    if pi.size and not np.all(np.isfinite(pi)):
        bad = np.argwhere(~np.isfinite(pi))[0]
        raise InputError(f"{who} returned a policy with a non-finite entry "
                         f"({pi[tuple(bad)]!r} at index {tuple(int(i) for i in bad)}); a "
                         f"policy holds probabilities")
    if pi.shape != (S, A):
        raise InputError(f"{who} returned a policy of shape {pi.shape}; it must be the "
                         f"(S, A) = {(S, A)} table of a stochastic policy")
    if np.any(pi < 0) or not np.allclose(pi.sum(axis=1), 1.0, rtol=0.0, atol=1e-6):
        s = int(np.argmax(np.abs(pi.sum(axis=1) - 1.0) + (pi < 0).any(axis=1)))
        raise InputError(f"{who} returned a policy whose row {s} is not a distribution "
                         f"(sum {pi[s].sum():.6g}, min {pi[s].min():.6g})")
    return pi


def _trainer_entrant(trainer, algorithm: str, name: str) -> Entrant:
    """A user's trainer of the trainer protocol as an entrant (``algorithm`` is the
    name passed to it)."""
    from ..names import ROBUST_ALGORITHMS

    robust = algorithm in ROBUST_ALGORITHMS

    def fn(model, uset, *, seed, episodes, record=None, **options):
        return trainer(model, algorithm, uset=uset if robust else None, seed=seed,
                       episodes=episodes, critic="learned", gradient="sampled",
                       inner="sort", multiplier_update="adam-log", eval_every=None,
                       true_model=None, progress=False, **options)
    return Entrant(name, fn, "learner", robust, f"{trainer.__module__}:"
                   f"{trainer.__qualname__} ({algorithm})")


def score(trainer=None, algorithms=("pg",), names=None, seeds=range(10),
          episodes: int = 1000, *, name: str | None = None, planner=None,
          set: str = "l1", level: float = 0.1, path=None, progress: bool | None = None,
          on_run=None, **options) -> Scores:
    """Score entrants on the suite (module notes).

    Parameters
    ----------
    trainer : callable, optional
        A trainer of the trainer protocol (``docs/your_learner.md``), scored under
        ``name`` (default: its function's name); ``algorithms`` then holds the one
        algorithm name passed to it.
    algorithms : str or sequence of str
        Registered entrants (:data:`ENTRANTS`: the six learners, "tabular", "uniform",
        "least-cost", and planners registered by name).
    names : sequence of str, optional
        Instances (default: :func:`learnable`).
    seeds : iterable of int
        One run per seed (default 10: 0 to 9).
    episodes : int
        Training episodes per run (the tabular baseline's exploration episodes).
    name : str, optional
        The name of ``trainer``'s or ``planner``'s rows.
    planner : callable, optional
        ``planner(model, uset, *, seed, episodes, record, **options)`` returning a
        policy table, scored under ``name`` (default: its function's name).
    set, level : the set of the grid the robust entrants get and the scores use.
    path : a data file (default: the shipped one).
    progress : bar over the runs (None: when standard error is a terminal).
    on_run : callable, optional
        Called with the :class:`Scores` so far after every run (the command line writes
        its ``--out`` file there, so an interrupted run keeps its finished runs).
    **options : passed to the entrants.

    A run whose entrant raises is kept as a row with its ``error`` and the other runs go
    on (``failed`` counts them; ``success`` is False).
    """
    from .._checks import InputError, check_limit
    from .._progress import progress_default, tqdm
    from .sets import KINDS
    from .store import definition, load

    algorithms = [algorithms] if isinstance(algorithms, str) else list(algorithms)
    entrants = []
    if trainer is not None and planner is not None:
        raise InputError("give a trainer or a planner, not both")
    if trainer is not None:
        from ..names import ALGORITHMS
        from ..protocol.run import check_trainer

        check_trainer(trainer)
        if len(algorithms) != 1 or algorithms[0] not in ALGORITHMS:
            raise InputError(f"a trainer trains one learner: give one algorithm name of "
                             f"{', '.join(ALGORITHMS)} with it (the name passed to it)")
        entrants.append(_trainer_entrant(trainer, algorithms[0],
                                         name or trainer.__name__))
    elif planner is not None:
        if not callable(planner):
            raise InputError(f"planner must be callable; got {type(planner).__name__}")
        entrants.append(Entrant(name or planner.__name__, planner, "planner", True,
                                f"{planner.__module__}:{planner.__qualname__}"))
    else:
        if not algorithms:
            raise InputError("algorithms is empty; give e.g. ['pg'] or ['least-cost']")
        entrants = [entrant(a) for a in algorithms]
    if name is not None and trainer is None and planner is None:
        raise InputError("name names a trainer's or a planner's rows; give it with "
                         "trainer= or planner=")
    if set not in KINDS:
        raise InputError(f"unknown set {set!r}; the suite's sets are {', '.join(KINDS)}")
    names = learnable() if names is None else ([names] if isinstance(names, str) else
                                               list(names))
    for n in names:
        definition(n)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise InputError("seeds is empty; give e.g. range(10)")
    check_limit(episodes, "episodes", "episodes")
    if set != "l1" and trainer is None and any(
            e.kind == "learner" and e.robust for e in entrants):
        raise InputError(f"the package's robust learners train on L1 balls (their compiled "
                         f"worst case); score them with set='l1', not {set!r}")
    loaded = {}
    for n in names:
        loaded[n] = load(n, set=set, level=level, path=path)
        if loaded[n].record is None:
            raise InputError(f"the data file has no record of {n} with the {set} set of "
                             f"level {level:g}; certify it first (rcmdp suite certify)")
    runs = [(n, e, s) for n in names for e in entrants for s in seeds]
    rows = []
    t0 = time.perf_counter()
    settings = dict(entrants=[e.name for e in entrants],
                    descriptions={e.name: e.description for e in entrants},
                    names=names, seeds=seeds, episodes=episodes, set=set,
                    level=float(level),
                    options={k: v for k, v in options.items()
                             if isinstance(v, int | float | str | bool)})

    def scores(complete):
        failed = sum(bool(r["error"]) for r in rows)
        return Scores(rows=list(rows), seconds=time.perf_counter() - t0, settings=settings,
                      complete=complete, failed=failed, success=complete and not failed,
                      status="scored" if complete else "partial",
                      message=f"{len(rows)} runs scored, {failed} failed")

    for n, e, s in tqdm(runs, desc="rcmdp suite score", disable=not progress_default(progress)):
        model, uset, rec = loaded[n]
        b = rec["bracket"]
        row = dict(instance=n, entrant=e.name, kind=e.kind, seed=s, key=rec["key"],
                   episodes=episodes, budget=list(rec["budget"]), lower=b.get("lower"),
                   upper=b.get("upper"), floor_value=rec.get("floor_value"), error="")
        t1 = time.perf_counter()
        try:
            res = e.fn(model, uset if e.robust else None, seed=s, episodes=episodes,
                       record=rec, **options)
            pol = _policy_of(res, f"the entrant {e.name!r} on {n} (seed {s})",
                             model.n_states, model.n_actions)
        except Exception as exc:  # a failing entrant: the run is kept with its error
            last = traceback.extract_tb(exc.__traceback__)[-1:]
            where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
            row.update(error=f"{type(exc).__name__}: {exc}{where}", seconds=
                       time.perf_counter() - t1, worst_value=None, worst_costs=[],
                       violation=None, feasible=None, share_lower=None, share_upper=None,
                       flag="failed", policy=None)
        else:
            row.update(_score_policy(model, uset, rec, pol),
                       seconds=time.perf_counter() - t1, policy=pol.tolist())
        rows.append(row)
        if on_run is not None:
            on_run(scores(False))
    return scores(True)


def rescore(scores: Scores, path=None) -> Scores:
    """The same runs scored again against the data file ``path`` (default: the shipped
    one): each stored policy evaluated exactly on its record's set and budget (a new
    certified file moves the shares; a run that failed stays failed).  A record whose
    budget is not the one the runs were trained for is refused (InputError)."""
    from .._checks import InputError
    from .store import load

    st = scores["settings"]
    rows = []
    for row in scores["rows"]:
        model, uset, rec = load(row["instance"], set=st["set"], level=st["level"],
                                path=path)
        if rec is None:
            raise InputError(f"the data file has no record {row['key']}")
        if row.get("budget") is not None and not np.allclose(
                row["budget"], rec["budget"], rtol=1e-12, atol=0.0):
            raise InputError(f"{rec['key']}: the runs were trained for the budget "
                             f"{row['budget']} and the data file has {rec['budget']}; "
                             f"a new budget needs new runs (rcmdp suite score)")
        new = dict(row)
        b = rec["bracket"]
        new.update(key=rec["key"], budget=list(rec["budget"]), lower=b.get("lower"),
                   upper=b.get("upper"), floor_value=rec.get("floor_value"))
        if row.get("policy") is not None and not row.get("error"):
            new.update(_score_policy(model, uset, rec, row["policy"]))
        rows.append(new)
    out = Scores(scores)
    out["rows"] = rows
    return out

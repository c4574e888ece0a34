r"""What every planner shares: the registry, the entrance :func:`plan`, the run's context,
the curve over iterations and the result.

A planner is a :class:`Planner`: a name, a frozen settings class (its hyperparameters,
validated once by ``checked``), the paper it comes from, the rectangularities of the
sets it accepts, and a function ``run(ctx) -> dict`` that takes a :class:`Context`
(model, set, the exact :class:`~.oracle.RobustOracle`, settings, iteration budget,
seeded generator, start policy, scales) and returns at least the ``policy`` it outputs.
:data:`PLANNERS` maps names to planners; :func:`register` adds one (a user's planner is
registered under its own name the same way: ``docs/planners.md``).

:func:`plan` checks every input once, builds one oracle, runs the planner within its
iteration budget (never a clock), and evaluates the output policy again with
:func:`~rcmdp_exact.robust_evaluate` (a second path to the same exact numbers): the
result's ``value``, ``costs``, ``violation`` and ``feasible`` are those.

**Scales.**  The papers assume rewards and costs in [0, 1]; the toolkit's models do not
(values from 0.1 to 400 in the suite).  Every planner therefore reads rewards and each
cost divided by their largest magnitude (:attr:`Context.scale_r`,
:attr:`Context.scale_c`): a scaling, not a shift, so neither the optimal nor the
feasible policies change (a shift would, with terminal states), and a step size means
the same on every model.  Multipliers are reported in the model's own units
(:meth:`Context.multipliers`).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np

from .._checks import (
    InputError,
    check_int,
    check_limit,
    check_real,
    check_seed,
    check_type,
    rng_from,
)
from .._progress import progress_default, tqdm
from .._result import Result, Status
from ..core.model import TabularCMDP, check_model
from ..core.model_checks import check_policy
from ..names import MAX_ITERATIONS
from .oracle import Evaluation, RobustOracle

__all__ = ["PLANNERS", "STARTS", "Context", "PlanResult", "Planner", "PlannerSettings",
           "Trace", "as_entrant", "as_trainer", "entrants", "plan", "planner", "register",
           "register_entrants"]

#: The starting policies :func:`plan` knows by name (or give an (S, A) array).
STARTS = ("random", "uniform")
#: Relative tolerance of "robust-feasible": every worst-case cost at most
#: d + FEAS_TOL * max(1, |d|) (the suite leaderboard's rule).
FEAS_TOL = 1e-9
#: The largest real setting (a step size, a scale, a tolerance) a planner takes: a
#: step of 1e300 times a gradient overflows to inf in the first update.
MAX_SETTING = 1e12
#: How the rectangularities read in messages.
_KIND_TEXT = {"sa": "sa-rectangular", "s": "s-rectangular",
              "none": "whole-kernel (FiniteSet)"}


# =========================================================================== settings
@dataclass(frozen=True)
class PlannerSettings:
    """Base of every planner's settings: a frozen dataclass whose fields are the
    planner's hyperparameters; :meth:`checked` validates them (one line per field, in
    the subclass's :meth:`rules`)."""

    def rules(self) -> dict:
        """``{field: (low, high, kind)}`` with kind "int", "real" or "real+" (a positive
        real); a subclass lists each numeric field (other fields validate in
        :meth:`extra_checks`)."""
        return {}

    def extra_checks(self) -> None:
        """Checks that are not a range (a subclass overrides)."""

    def checked(self):
        """Self, after checking every field (an :class:`~rcmdp_exact.InputError` that
        names the field, its value and the range)."""
        for name, (low, high, kind) in self.rules().items():
            value = getattr(self, name)
            if kind == "int":  # a count of work or of points: at most MAX_ITERATIONS
                check_int(value, f"setting {name!r}", low,
                          MAX_ITERATIONS if high is None else high)
            else:  # a step of 1e300 overflows the first update: a finite cap
                check_real(value, f"setting {name!r}", low,
                           MAX_SETTING if high is None else high, low_open=kind == "real+")
        self.extra_checks()
        return self

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Planner:
    """One planner: its name, settings, source and run function (module notes)."""

    name: str
    run: Callable
    settings: type = PlannerSettings
    title: str = ""
    paper: str = ""
    """The citation, with the version followed."""
    sets: tuple = ("sa", "s", "none")
    """The rectangularities of the sets it accepts ("sa", "s", "none": a set of kernels)."""
    starts: bool = True
    """False when the planner has its own initialisation (only ``start="random"``)."""
    description: str = ""
    check: Callable | None = None
    """``check(model, uset)``: the planner's own input checks beyond :attr:`sets` (raise
    an :class:`~rcmdp_exact.InputError`), called by :func:`plan` before any work."""


#: The registry of planners, by name (filled by :mod:`rcmdp_exact.planners`).
PLANNERS: dict[str, Planner] = {}


def register(p: Planner, *, replace: bool = False) -> Planner:
    """Add ``p`` to :data:`PLANNERS` under ``p.name`` (refused when the name is taken,
    unless ``replace``)."""
    check_type(p, "planner", Planner, "build one with rcmdp_exact.planners.Planner(name, "
               "run, settings, ...)")
    if not isinstance(p.name, str) or not p.name.strip():
        raise InputError(f"a planner's name must be a non-empty string, got {p.name!r}")
    if p.name in PLANNERS and not replace and PLANNERS[p.name] is not p:
        raise InputError(f"a planner named {p.name!r} is registered already; choose another "
                         f"name or pass replace=True")
    PLANNERS[p.name] = p
    register_entrants(only=(p.name,))
    return p


def planner(name) -> Planner:
    """The planner registered as ``name`` (or ``name`` itself when it is a
    :class:`Planner`), else an error that lists the names."""
    if isinstance(name, Planner):
        return name
    load_builtin()
    if isinstance(name, str) and name in PLANNERS:
        return PLANNERS[name]
    raise InputError(f"unknown planner {name!r}; the planners are "
                     f"{', '.join(sorted(PLANNERS))} (rcmdp_exact.planners.PLANNERS), or pass "
                     f"a Planner")


# =========================================================================== the curve
class Trace:
    """The curve of a run: one row per iteration (the iterate the planner stepped from).

    Every row holds the iteration, the worst-case value and costs of the iterate, its
    violation :math:`\\max_k (C_k - d_k)^+`, the Lagrangian and multipliers when the
    planner has them (NaN otherwise, in the model's units), the wall-clock seconds since
    the start (reported, never used to decide anything) and any extra series the planner
    names.  It also keeps the best robust-feasible iterate met.
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.rows: list = []
        self.extra: dict = {}
        self.best = None  # (value, iteration, policy, costs)
        self.t0 = time.perf_counter()

    def record(self, ev: Evaluation, *, lam=None, lagrangian=float("nan"), **extra) -> None:
        """One row for the evaluation ``ev`` of the current iterate (module notes);
        ``lam`` in the planner's scaled units (converted here)."""
        lam_out = None if lam is None else self.ctx.multipliers(lam)
        self.add(ev.value, ev.costs, ev.policy, lam=lam_out, lagrangian=lagrangian, **extra)

    def add(self, value: float, costs, policy=None, *, iteration: int | None = None,
            lam=None, lagrangian=float("nan"), tick: bool = True, **extra) -> None:
        """One row from numbers: the worst-case ``value`` and ``costs`` of an iterate
        (``policy``, when known, for the best robust-feasible iterate), ``lam`` in the
        model's units; ``iteration`` defaults to the row's index."""
        ctx = self.ctx
        it = len(self.rows) if iteration is None else int(iteration)
        costs = np.asarray(costs, dtype=np.float64).reshape(ctx.K)
        lam_out = np.full(ctx.K, np.nan) if lam is None else np.asarray(lam, dtype=np.float64)
        viol = float(max(0.0, np.max(costs - ctx.d))) if ctx.K else 0.0
        self.rows.append((it, float(value), costs, viol, float(lagrangian), lam_out,
                          time.perf_counter() - self.t0))
        for key, val in extra.items():
            self.extra.setdefault(key, [np.nan] * (len(self.rows) - 1)).append(float(val))
        for vals in self.extra.values():
            if len(vals) < len(self.rows):
                vals.append(np.nan)
        if policy is not None and ctx.feasible(costs) and (self.best is None
                                                            or value > self.best[0]):
            self.best = (float(value), it, np.array(policy), costs.copy())
        if tick:
            ctx.tick()

    def curve(self) -> dict:
        """The rows as arrays: ``iteration``, ``value``, ``costs`` (n, K),
        ``violation``, ``lagrangian``, ``lam`` (n, K), ``seconds`` and the extras."""
        K = self.ctx.K
        n = len(self.rows)
        out = {
            "iteration": np.array([r[0] for r in self.rows], dtype=np.int64),
            "value": np.array([r[1] for r in self.rows], dtype=np.float64),
            "costs": np.array([r[2] for r in self.rows], dtype=np.float64).reshape(n, K),
            "violation": np.array([r[3] for r in self.rows], dtype=np.float64),
            "lagrangian": np.array([r[4] for r in self.rows], dtype=np.float64),
            "lam": np.array([r[5] for r in self.rows], dtype=np.float64).reshape(n, K),
            "seconds": np.array([r[6] for r in self.rows], dtype=np.float64),
        }
        for key, vals in self.extra.items():
            out[key] = np.array(vals, dtype=np.float64)
        return out


# =========================================================================== context
@dataclass
class Context:
    """What a planner's ``run`` gets (module notes).  Inputs are valid: ``run`` does not
    check them again."""

    model: TabularCMDP
    uset: object
    oracle: RobustOracle
    settings: PlannerSettings
    iterations: int
    rng: np.random.Generator
    start: np.ndarray
    seed: object = 0
    bar: object = None
    trace: Trace = field(init=False)

    def __post_init__(self):
        self.S, self.A, self.K = (self.model.n_states, self.model.n_actions,
                                  self.model.n_constraints)
        self.gamma = float(self.model.gamma)
        self.d = np.asarray(self.model.d, dtype=np.float64)
        R = np.abs(np.asarray(self.model.R, dtype=np.float64))
        C = np.abs(np.asarray(self.model.C, dtype=np.float64))
        self.scale_r = float(R.max(initial=0.0)) or 1.0
        self.scale_c = np.array([float(C[..., k].max(initial=0.0)) or 1.0
                                 for k in range(self.K)])
        self.trace = Trace(self)

    # scaled quantities (the papers' units: rewards and costs at most 1 in magnitude)
    @property
    def d_scaled(self) -> np.ndarray:
        return self.d / self.scale_c

    def value_scaled(self, ev: Evaluation) -> float:
        return ev.value / self.scale_r

    def costs_scaled(self, ev: Evaluation) -> np.ndarray:
        return np.asarray(ev.costs) / self.scale_c

    def gradient_scaled(self, ev: Evaluation, j: int) -> np.ndarray:
        """Danskin's gradient of objective j in scaled units."""
        return ev.gradient(j) / (self.scale_r if j == 0 else self.scale_c[j - 1])

    def q_scaled(self, ev: Evaluation, j: int) -> np.ndarray:
        return ev.q[j] / (self.scale_r if j == 0 else self.scale_c[j - 1])

    def multipliers(self, lam_scaled) -> np.ndarray:
        r"""Multipliers in the model's units: :math:`\lambda_k = \lambda'_k\, s_r / s_k`
        (the Lagrangian :math:`V' - \lambda'^\top C'` times :math:`s_r`)."""
        return np.asarray(lam_scaled, dtype=np.float64) * self.scale_r / self.scale_c

    def unscaled(self, lam) -> np.ndarray:
        """The inverse of :meth:`multipliers`."""
        return np.asarray(lam, dtype=np.float64) * self.scale_c / self.scale_r

    def feasible(self, costs) -> bool:
        """Every worst-case cost within its budget (up to :data:`FEAS_TOL`)."""
        costs = np.asarray(costs, dtype=np.float64)
        return bool(np.all(costs <= self.d + FEAS_TOL * np.maximum(1.0, np.abs(self.d))))

    def evaluate(self, pi, lam=None) -> Evaluation:
        """The oracle's exact evaluation (``lam`` in the model's units)."""
        return self.oracle.evaluate(pi, lam)

    def tick(self) -> None:
        if self.bar is not None:
            self.bar.update(1)


# =========================================================================== the result
class PlanResult(Result, name="rcmdp_exact.planners.PlanResult", kind="planner result"):
    """What :func:`plan` returns.

    Fields: ``planner`` (name), ``policy`` (S, A) the planner's output (its paper's
    rule); its exact worst-case ``value``, ``costs`` (K,), ``violation`` (:math:`\\max_k
    (C_k - d_k)^+`) and ``feasible`` (by :func:`~rcmdp_exact.robust_evaluate`, apart from
    the run); ``best`` the best robust-feasible iterate met (``iteration``, ``value``,
    ``costs``, ``policy``; None when no iterate was robust-feasible); ``curve`` (the
    :class:`Trace` arrays); ``lam`` the final multipliers (model units; empty when the
    planner has none); ``work`` {``iterations``, ``evaluations`` (oracle calls),
    ``fixed_points`` (robust fixed points), ``unconverged``}; ``settings`` (dict),
    ``seed``, ``start``; ``seconds`` (wall clock, reported only); ``success``,
    ``status``, ``message``; planner-specific fields under ``info``.

    It is also a trainer's result (the protocol of ``docs/your_learner.md``):
    :meth:`policy_table` and :attr:`records` (the curve), so that code scoring learners
    scores a planner the same way (:func:`as_trainer`).
    """

    def policy_table(self) -> np.ndarray:
        """The output policy (S, A)."""
        return np.asarray(self["policy"], dtype=np.float64)

    @property
    def records(self) -> dict:
        """The curve, as a trainer's records."""
        return self["curve"]


# =========================================================================== entrance
def _start_policy(start, S: int, A: int, rng: np.random.Generator) -> np.ndarray:
    """The first policy of a checked ``start``."""
    if isinstance(start, str):
        if start == "uniform":
            return np.full((S, A), 1.0 / A)
        return rng.dirichlet(np.ones(A), size=S)
    return np.array(check_policy(start, S, A, "start"), dtype=np.float64)


def _settings(p: Planner, settings, options: dict):
    names = [f.name for f in fields(p.settings)]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise InputError(f"unknown setting{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))} of planner {p.name!r}; its settings "
                         f"are {', '.join(names) or 'none'}")
    if settings is None:
        settings = p.settings()
    else:
        check_type(settings, "settings", p.settings,
                   f"give a {p.settings.__name__} for planner {p.name!r} or options by name")
    try:
        settings = dataclasses.replace(settings, **options)
    except TypeError as exc:  # a wrong-typed field the dataclass itself rejects
        raise InputError(f"settings of planner {p.name!r}: {exc}") from None
    return settings.checked()


def check_plan_inputs(model, uset, name, iterations, seed, start, settings, options):
    """Every input of :func:`plan`, checked once (module notes); returns ``(planner,
    settings, iterations)``."""
    from ..robust import check_robust_inputs
    from ..uncertainty import PROTOCOLS, check_set

    p = planner(name)
    check_model(model)
    if model.is_sparse:
        raise InputError(f"model {model.name or ''!s} is sparse (S={model.n_states}); the "
                         f"planners need a dense model: build it with a dense P")
    check_set(uset, model)
    if not isinstance(uset, tuple(PROTOCOLS[k] for k in p.sets)):
        have = getattr(uset, "rectangularity", "?")
        raise InputError(
            f"planner {p.name!r} takes {' or '.join(_KIND_TEXT[k] for k in p.sets)} sets, "
            f"but {type(uset).__name__} is {_KIND_TEXT.get(have, have)}; use another set "
            f"or another planner (docs/planners.md lists the sets each takes)")
    check_robust_inputs(model, uset, f"planner {p.name!r}", kinds=p.sets)
    if p.check is not None:
        p.check(model, uset)
    iterations = check_limit(iterations, "iterations", "iterations",
                             hint="; give the iteration budget (one policy update each)")
    check_seed(seed)
    if not p.starts and not (isinstance(start, str) and start == "random"):
        raise InputError(f"planner {p.name!r} starts from its own seeded initialisation; "
                         f"leave start='random' (got {start!r})")
    if not isinstance(start, str):
        check_policy(start, model.n_states, model.n_actions, "start")
    elif start not in STARTS:
        raise InputError(f"unknown start {start!r}; give 'random' (Dirichlet(1) rows from the "
                         f"seed), 'uniform' or an (S, A) policy")
    return p, _settings(p, settings, options), iterations


def plan(model, uset, name, *, iterations: int, seed=0, start="random", settings=None,
         progress: bool | None = None, **options) -> PlanResult:
    r"""Run the planner ``name`` on ``model`` and ``uset`` for ``iterations`` iterations.

    Parameters
    ----------
    model : TabularCMDP
        Discounted (gamma < 1), dense; rewards, costs and budgets of the RCMDP
        :math:`\max_\pi \min_P V(\pi, P)` s.t. :math:`\max_P C_k(\pi, P) \le d_k`.
    uset : UncertaintySet
        Any built-in set the planner accepts (:attr:`Planner.sets`); the L1 ball of
        radius 0 is the nominal CMDP.
    name : str or Planner
        A name of :data:`PLANNERS` (``docs/planners.md``), or a :class:`Planner`.
    iterations : int
        The budget: policy updates (each one exact robust evaluation and one step; see
        each planner for what an iteration is).  Results depend on it, never on time.
    seed : int, SeedSequence or Generator
        Seeds the random start (and anything else random in the planner).
    start : {"random", "uniform"} or array (S, A)
        The first policy: Dirichlet(1) rows from the seed (default), uniform, or given.
    settings : PlannerSettings, optional
        The planner's settings; keyword options replace its fields.
    progress : bool or None
        A bar over the iterations (None: when standard error is a terminal).
    **options
        Fields of the planner's settings by name (an unknown one is an error that lists
        them).

    Returns
    -------
    PlanResult
        See :class:`PlanResult`.
    """
    from ..robust import robust_evaluate

    p, settings, iterations = check_plan_inputs(model, uset, name, iterations, seed, start,
                                                settings, options)
    rng = rng_from(seed)
    S, A = model.n_states, model.n_actions
    pi0 = _start_policy(start, S, A, rng)
    t0 = time.perf_counter()
    oracle = RobustOracle(model, uset)
    with tqdm(total=iterations + 1, desc=f"plan {p.name}", disable=not progress_default(progress),
              leave=False) as bar:
        ctx = Context(model, uset, oracle, settings, iterations, rng, pi0, seed=seed, bar=bar)
        out = p.run(ctx)
    if not isinstance(out, dict) or "policy" not in out:
        raise InputError(f"planner {p.name!r} returned {type(out).__name__}; its run(ctx) "
                         f"must return a dict with at least 'policy' (S, A)")
    pi = np.array(check_policy(out["policy"], S, A, f"the policy of planner {p.name!r}"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        final = robust_evaluate(model, pi, uset, progress=False)
    costs = np.atleast_1d(np.asarray(final.costs_worst, dtype=np.float64)) \
        if model.n_constraints else np.zeros(0)
    viol = float(max(0.0, np.max(costs - ctx.d))) if costs.size else 0.0
    curve = ctx.trace.curve()
    best = None
    if ctx.trace.best is not None:
        bv, bi, bp, bc = ctx.trace.best
        best = dict(iteration=int(bi), value=float(bv), costs=bc, policy=bp)
    iters_done = int(out.get("iterations", len(curve["iteration"])))
    work = dict(iterations=iters_done, evaluations=int(oracle.evaluations),
                fixed_points=int(oracle.fixed_points), unconverged=int(oracle.unconverged))
    work.update(out.get("work", {}))
    conv = oracle.unconverged == 0 and bool(final.converged) and out.get("success", True)
    status = out.get("status", Status.BUDGET_EXHAUSTED)
    message = out.get("message", f"{p.name}: {iters_done} iterations")
    if not conv:
        status = Status.NOT_CONVERGED
        message += (f"; {oracle.unconverged} robust evaluation(s) did not converge, the "
                    f"numbers of those iterates are not exact") if oracle.unconverged else \
            ("; the final robust evaluation did not converge" if not final.converged else "")
    lam = out.get("lam")
    return PlanResult(
        planner=p.name, policy=pi, value=float(final.value), costs=costs, violation=viol,
        feasible=ctx.feasible(costs), best=best, curve=curve,
        lam=np.zeros(0) if lam is None else np.asarray(lam, dtype=np.float64),
        work=work, settings=settings.as_dict(), seed=seed if isinstance(seed, int) else None,
        start=start if isinstance(start, str) else "given",
        seconds=time.perf_counter() - t0, success=bool(conv), status=Status(status),
        message=message, info=out.get("info", {}))


def as_trainer(name, **options) -> Callable:
    """The planner ``name`` as a trainer of the trainer protocol (``docs/your_learner.md``):
    ``trainer(model, algorithm, uset=..., seed=..., episodes=..., **ignored)`` runs
    ``plan(model, uset, name, iterations=episodes, seed=seed, **options)`` and returns its
    :class:`PlanResult` (which has ``policy_table()`` and ``records``).  The learners'
    other keywords (``critic``, ``gradient``, ...) are accepted and ignored; the
    algorithm name passed is ignored too (the planner is ``name``)."""
    p = planner(name)
    _settings(p, None, options)  # checked now, not at the first call

    def trainer(model, algorithm=None, *, uset=None, seed=0, episodes=1000, progress=False,
                **ignored) -> PlanResult:
        return plan(model, uset, p, iterations=episodes, seed=seed, progress=progress,
                    **options)

    trainer.__name__ = trainer.__qualname__ = f"planner_{p.name.replace('-', '_')}"
    trainer.planner = p.name
    return trainer


# =========================================================================== the suite


def as_entrant(name, **options) -> Callable:
    """The planner ``name`` as an entrant of the suite's leaderboard
    (:mod:`rcmdp_exact.suite.leaderboard`): ``fn(model, uset, *, seed, episodes,
    record=None, **more)`` runs ``plan(model, uset, name, iterations=episodes, seed=seed,
    **options, **more)`` without a progress bar and returns its :class:`PlanResult`
    (which has ``policy_table()``).  ``more`` are fields of the planner's settings (the
    leaderboard's options); ``record`` is not used (a planner does not see the certified
    values it is scored against)."""
    p = planner(name)
    _settings(p, None, options)  # checked now, not at the first call

    def entrant(model, uset, *, seed=0, episodes=1000, record=None, **more) -> PlanResult:
        return plan(model, uset, p, iterations=episodes, seed=seed, progress=False,
                    **{**options, **more})

    entrant.__name__ = entrant.__qualname__ = f"entrant_{p.name.replace('-', '_')}"
    entrant.planner = p.name
    return entrant


def entrants() -> dict[str, dict]:
    """Every registered planner as an entrant of the suite's leaderboard: ``{name:
    dict(fn=..., kind="planner", robust=True, description=...)}``, ready for
    ``rcmdp_exact.suite.leaderboard.register(name, **entry)``."""
    load_builtin()
    return {n: _entry(p) for n, p in PLANNERS.items()}


def _entry(p: Planner) -> dict:
    return dict(fn=as_entrant(p), kind="planner", robust=True,
                description=f"planner: {p.title or p.name}"
                            + (f" ({p.paper})" if p.paper else ""))


def register_entrants(leaderboard=None, *, only=None) -> list[str]:
    """Register the planners (``only`` those names) as entrants of the suite's
    leaderboard, so that ``rcmdp suite score --algorithm NAME`` and
    ``suite.score(algorithms=[NAME])`` score them; returns the names registered.

    ``leaderboard`` is the module (default: :mod:`rcmdp_exact.suite.leaderboard` when it
    is imported already, so that importing the planners costs nothing more).  A
    leaderboard without entrants by name (no ``register``) is left alone.  A name the
    leaderboard holds already for another kind of entrant (a learner or a baseline) is
    kept, not replaced."""
    import sys

    if only is not None:
        only = [only] if isinstance(only, str) else list(only)
        unknown = [n for n in only if n not in PLANNERS]
        if unknown:
            raise InputError(f"register_entrants(only=...): unknown planner "
                             f"{', '.join(map(repr, unknown))}; the planners are "
                             f"{', '.join(sorted(PLANNERS))}")
    if leaderboard is None:
        leaderboard = sys.modules.get("rcmdp_exact.suite.leaderboard")
    reg = getattr(leaderboard, "register", None)
    table = getattr(leaderboard, "ENTRANTS", None)
    if reg is None or not isinstance(table, dict):
        return []
    if not table and callable(getattr(leaderboard, "_builtins", None)):
        # the leaderboard fills its built-ins when its table is empty: fill them first
        leaderboard._builtins()
    done = []
    for n in (PLANNERS if only is None else only):
        old = table.get(n)
        if old is not None and getattr(old, "kind", "planner") != "planner":
            continue
        reg(n, replace=True, **_entry(PLANNERS[n]))
        done.append(n)
    return done


#: The modules that register the built-in planners (imported by :func:`load_builtin`).
BUILTIN_MODULES = ("primal_dual", "epigraph", "switching", "rrpo", "mirror", "rcpg",
                   "reference")


def load_builtin() -> None:
    """Import the modules that register the built-in planners (idempotent)."""
    import importlib

    for mod in BUILTIN_MODULES:
        importlib.import_module(f"rcmdp_exact.planners.{mod}")

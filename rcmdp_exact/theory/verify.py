r"""Numerical verification of the paper's two gradient theorems and of its estimators.

:func:`verify_theorems` takes a model, draws seeded policy and adversary parameters
(tabular softmax and MLP), computes the finite-difference gradient of the Lagrangian
:math:`L = p_0^\top V - \lambda^\top (p_0^\top C - d)` with respect to each, and
compares with it the exact gradient of each theorem and the exact expected value of
each sampled estimator of :data:`~rcmdp_exact.theory.estimators.ESTIMATORS`:

* ``rel_error`` :math:`= \lVert E - g_{FD}\rVert / \lVert g_{FD}\rVert`,
* ``cosine`` :math:`= E \cdot g_{FD} / (\lVert E\rVert \lVert g_{FD}\rVert)`,
* ``norm_ratio`` :math:`= \lVert E\rVert / \lVert g_{FD}\rVert`,
* ``bias`` :math:`= \lVert E - g_{FD}\rVert` (the absolute bias of the estimator),
* ``expected``: "exact" where the row must equal the gradient (the two theorems, and an
  estimator whose expectation is the gradient on that model: :func:`expected_exact`),
  "biased" where a bias is the finding (finite episodes, dropped terms),
* ``check``: "pass" or "fail" for the "exact" rows (``rel_error <= tol``) and for every
  Monte Carlo row (the sample mean covers the exact expectation), "-" otherwise.

Policy estimators use the model's own transitions; adversary estimators take
transitions from the adversary.  ``docs/gradients.md`` explains every row.
"""

from __future__ import annotations

import json
import math

import numpy as np
from scipy.special import ndtri

from .._checks import (
    ImproperPolicyError,
    check_choice,
    check_int,
    check_limit,
    check_real,
)
from ..core.model import TabularCMDP, check_model
from ..core.parametrisations import DEFAULT_HIDDEN, adversary_outcomes, make_adversary, make_policy
from ..domains import INITIAL_MULTIPLIER as PAPER_LAMBDA  # noqa: F401 (historical name)
from ..names import EXACT_TOL
from .differences import check_order, finite_difference
from .estimators import (
    ESTIMATORS,
    cosine_similarity,
    estimator_expectation,
    monte_carlo_estimator,
    relative_error,
    resolve_horizon,
)

__all__ = [
    "COLUMNS",
    "EXACT_TOL",
    "VerifyTable",
    "lagrangian_reward_depends_on_next_state",
    "suite_models",
    "verify_suite",
    "verify_theorems",
]

#: Columns of a verification row, in order.
COLUMNS = (
    "model", "S", "A", "K", "gamma", "horizon", "lam", "r_next_state", "parametrisation",
    "side", "estimator", "n_params", "rel_error", "cosine", "norm_ratio", "bias", "fd_norm",
    "mc_episodes", "mc_rel_error", "mc_z_max", "mc_covers", "expected", "check", "note",
)

_TEXT_COLUMNS = (
    ("model", "{}"), ("gamma", "{:g}"), ("horizon", "{}"), ("r_next_state", "{}"),
    ("parametrisation", "{}"), ("side", "{}"), ("estimator", "{}"), ("n_params", "{}"),
    ("rel_error", "{:.2e}"), ("cosine", "{:+.6f}"), ("norm_ratio", "{:.4f}"),
    ("expected", "{}"), ("check", "{}"),
)


class VerifyTable:
    """A tidy table of verification rows (a list of dicts with :data:`COLUMNS`).

    ``to_text()`` prints aligned columns, ``to_json()`` gives
    ``{"columns", "rows", "estimators", "summary", "notes"}`` (non-finite numbers as null),
    ``select(**criteria)`` filters rows by equality.
    """

    def __init__(self, rows=None, notes=None):
        self.rows: list[dict] = list(rows or [])
        self.notes: list[str] = list(notes or [])

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def __add__(self, other: VerifyTable) -> VerifyTable:
        return VerifyTable(self.rows + other.rows, self.notes + other.notes)

    def __repr__(self) -> str:
        return f"VerifyTable({len(self.rows)} rows)"

    @property
    def failures(self) -> list[dict]:
        """The rows whose check failed."""
        return [r for r in self.rows if r.get("check") == "fail"]

    @property
    def passed(self) -> bool:
        """True when no row failed its check."""
        return not self.failures

    def select(self, **criteria) -> list[dict]:
        """Rows whose fields equal every given value."""
        return [r for r in self.rows if all(r.get(k) == v for k, v in criteria.items())]

    def to_text(self) -> str:
        """Aligned plain-text table, followed by the estimator legend and the notes."""
        cols = list(_TEXT_COLUMNS)
        if any(r.get("mc_episodes") for r in self.rows):
            cols += [("mc_rel_error", "{:.2e}"), ("mc_z_max", "{:.2f}"), ("mc_covers", "{}")]
        cols.append(("note", "{}"))
        cells = [[name for name, _ in cols]]
        for r in self.rows:
            line = []
            for name, fmt in cols:
                v = r.get(name)
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    line.append("-")
                else:
                    line.append(fmt.format(v))
            cells.append(line)
        widths = [max(len(row[j]) for row in cells) for j in range(len(cols))]
        lines = []
        for k, row in enumerate(cells):
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
            if k == 0:
                lines.append("  ".join("-" * w for w in widths))
        summary = self.summary()
        if summary:
            lines.append("")
            lines.append("bias of the printed estimators (relative to the true gradient):")
            lines.extend(f"  {n}" for n in summary)
        used = {r["estimator"] for r in self.rows}
        lines.append("")
        lines.append("estimators:")
        for name, est in ESTIMATORS.items():
            if name in used:
                lines.append(f"  {name}: {est.description}")
        if self.notes:
            lines.append("")
            lines.append("notes:")
            lines.extend(f"  {n}" for n in self.notes)
        checked = sum(r.get("check") in ("pass", "fail") for r in self.rows)
        lines.append("")
        lines.append(f"{checked - len(self.failures)} of {checked} checks passed"
                     + ("" if self.passed else
                        ": FAILED " + ", ".join(f"{r['model']}/{r['parametrisation']}/"
                                                f"{r['estimator']}" for r in self.failures)))
        return "\n".join(lines)

    def summary(self) -> list[str]:
        """One line per printed-estimator row: its relative bias and cosine, in words."""
        out = []
        for r in self.rows:
            if r["estimator"] not in ("algorithm1", "theorem2_printed"):
                continue
            if r.get("rel_error") is None:
                continue
            what = "Algorithm 1" if r["estimator"] == "algorithm1" else "Theorem 2"
            out.append(
                f"{r['model']} [{r['parametrisation']}, T={r['horizon']}]: printed {what} "
                f"estimator off by {r['rel_error']:.3g} x |grad| (bias norm {r['bias']:.4g}, "
                f"cosine {r['cosine']:.4f})"
            )
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """JSON text; NaN and infinities become null."""

        def clean(v):
            if isinstance(v, float | np.floating):
                return float(v) if math.isfinite(v) else None
            if isinstance(v, np.integer):
                return int(v)
            if isinstance(v, np.bool_):
                return bool(v)
            if isinstance(v, list | tuple):
                return [clean(x) for x in v]
            return v

        payload = {
            "columns": list(COLUMNS),
            "rows": [{k: clean(r.get(k)) for k in COLUMNS} for r in self.rows],
            "estimators": {n: e.description for n, e in ESTIMATORS.items()},
            "summary": self.summary(),
            "notes": self.notes,
            "passed": self.passed,
        }
        return json.dumps(payload, indent=indent)


def lagrangian_reward_depends_on_next_state(model: TabularCMDP, lam=None) -> bool:
    """True if :math:`R_\\lambda(s, a, s')` differs between the adversary's outcomes of a pair.

    Only then does the immediate term of Theorem 2 contribute (non-terminal pairs).
    """
    lam = model.check_multipliers(lam)
    R_lam = np.asarray(model.R) - np.asarray(model.C) @ lam
    out = adversary_outcomes(model)
    vals = np.take_along_axis(R_lam, out, axis=2)
    spread = vals.max(axis=2) - vals.min(axis=2)
    nt = ~np.asarray(model.terminal, dtype=bool)
    scale = max(1.0, float(np.abs(R_lam).max()))
    return bool((spread[nt] > 1e-12 * scale).any())


def expected_exact(estimator: str, horizon: int | None, gamma: float, r_next: bool) -> bool:
    """Whether the exact expectation of ``estimator`` equals the gradient on a model.

    The theorems always; with unbounded episodes (``horizon`` None) the corrected
    estimators, Algorithm 1 as printed when gamma = 1, Theorem 2 with the discount
    restored when the Lagrangian reward does not depend on the next state, and Theorem 2
    as printed when both hold; never with a finite horizon (truncation).
    """
    if ESTIMATORS[estimator].exact:
        return True
    if horizon is not None:
        return False
    return {
        "algorithm1_corrected": True,
        "theorem2_corrected": True,
        "algorithm1": gamma == 1.0,
        "theorem2_discounted": not r_next,
        "theorem2_printed": gamma == 1.0 and not r_next,
    }[estimator]


def _mc_directions(g_fd, rng, n_random: int = 4) -> np.ndarray:
    """Unit directions for the Monte Carlo check: the true gradient and random ones.

    Single coordinates of a tabular gradient can belong to pairs that few episodes
    visit; their sample means are far from normal.  Projections mix many coordinates,
    so their confidence intervals are reliable.
    """
    g = np.ravel(g_fd)
    D = rng.standard_normal((n_random + 1, g.size))
    if np.linalg.norm(g) > 0:
        D[0] = g
    return D / np.linalg.norm(D, axis=1, keepdims=True)


def verify_theorems(model: TabularCMDP, lam=None, *, label: str | None = None,
                    parametrisations=("softmax", "mlp"), estimators=None, horizons=("model",),
                    seed=0, hidden: int = DEFAULT_HIDDEN, order: int = 4,
                    n_episodes: int = 0, mc_level: float = 0.99, tol: float = EXACT_TOL,
                    progress=None) -> VerifyTable:
    """Compare the theorems and the sampled estimators with finite differences.

    Parameters
    ----------
    model : TabularCMDP
    lam : array (K,) or float, optional
        Lagrange multipliers (default 1 for every constraint).
    label : str, optional
        Name of the model in the table (default ``model.name``).
    parametrisations : sequence of "softmax", "mlp"
        Forms of the policy and adversary to check (the same form for both).
    estimators : sequence of str, optional
        Names from :data:`~rcmdp_exact.theory.estimators.ESTIMATORS` (default: all).
    horizons : sequence of "model", None or int
        Episode lengths T at which the sampled estimators are judged (one row each):
        "model" is the model's horizon, None means unbounded episodes that end only at
        terminal states (where a printed, undiscounted form then diverges, the row
        says so in ``note``).  The exact theorems get one row each.
    seed : int
        Seed of the random policy and adversary parameters (and of Monte Carlo).
    hidden : int
        Hidden width of the MLPs (100 in the paper).
    order : 2 or 4
        Order of the finite-difference stencil.
    n_episodes : int
        If positive, also sample every estimator over that many episodes and report
        ``mc_rel_error`` (sample mean to the finite difference), ``mc_z_max`` (the
        largest abs(mean - exact expectation) / standard error over five unit
        directions: the true gradient's and four random ones) and ``mc_covers`` (the
        exact expectation lies in the simultaneous ``mc_level`` interval of the five
        directions, Bonferroni-corrected: ``mc_z_max <= Phi^-1(1 - (1 - mc_level) / 10)``).
    mc_level : float
        Family-wise confidence level of ``mc_covers`` (default 0.99).  A correct
        estimator fails it with probability about ``1 - mc_level`` per seed.
    tol : float
        Largest ``rel_error`` of a row expected to be exact (:func:`expected_exact`).
    progress : bool

    Returns
    -------
    VerifyTable
    """
    from .._progress import progress_default

    progress = progress_default(progress)
    check_model(model)
    check_real(mc_level, "mc_level", 0.0, 1.0, low_open=True, high_open=True)
    check_real(tol, "tol", 0.0, low_open=True)
    check_limit(n_episodes, "n_episodes", "mc_episodes", 0)
    check_limit(hidden, "hidden", "hidden")
    check_order(order)
    seed = check_int(seed, "seed", 0)  # mixed into [seed, k] below: an int, not a Generator
    K = model.n_constraints
    lam = np.ones(K) if lam is None else model.check_multipliers(lam)
    names = list(ESTIMATORS) if estimators is None else list(estimators)
    for n in names:
        check_choice(n, "estimator", tuple(ESTIMATORS))
    if isinstance(horizons, str | int | np.integer) or horizons is None:
        horizons = (horizons,)
    Ts = []
    for h in horizons:
        T = resolve_horizon(model, h)
        if T not in Ts:
            Ts.append(T)
    label = label or model.name or "model"
    r_next = lagrangian_reward_depends_on_next_state(model, lam)
    rows = []
    for k, kind in enumerate(parametrisations):
        pol = make_policy(model, kind, hidden=hidden)
        adv = make_adversary(model, kind, hidden=hidden)
        rng = np.random.default_rng([int(seed), k])
        theta, phi = pol.init(rng), adv.init(rng)
        fd = {}
        for side in ("policy", "adversary"):
            if not any(ESTIMATORS[n].side == side for n in names):
                continue
            fd[side] = finite_difference(
                model, theta, lam, pol, phi if side == "adversary" else None, adv,
                wrt=side, order=order, progress=progress)
        jobs = [(name, T) for name in names
                for T in ((None,) if ESTIMATORS[name].exact else Ts)]
        for j, (name, T) in enumerate(jobs):
            est = ESTIMATORS[name]
            use_adv = est.side == "adversary"
            g_fd = fd[est.side]
            row = {
                "model": label, "S": model.n_states, "A": model.n_actions, "K": K,
                "gamma": model.gamma,
                "horizon": "-" if est.exact else ("inf" if T is None else int(T)),
                "lam": [float(x) for x in lam], "r_next_state": "yes" if r_next else "no",
                "parametrisation": kind, "side": est.side, "estimator": name,
                "n_params": int(np.size(g_fd)), "rel_error": None, "cosine": None,
                "norm_ratio": None, "bias": None, "fd_norm": float(np.linalg.norm(g_fd)),
                "mc_episodes": 0, "mc_rel_error": None, "mc_z_max": None, "mc_covers": None,
                "expected": "exact" if expected_exact(name, T, model.gamma, r_next)
                else "biased", "check": "-", "note": "",
            }
            try:
                E = estimator_expectation(model, theta, name, lam, pol,
                                          phi if use_adv else None, adv, horizon=T)
            except ImproperPolicyError:
                row.update(expected="diverges", note="diverges: undiscounted visits, and a "
                           "reachable state never reaches a terminal state")
                rows.append(row)
                continue
            fd_norm = row["fd_norm"]
            row.update(
                rel_error=relative_error(E, g_fd),
                cosine=cosine_similarity(E, g_fd),
                norm_ratio=(float(np.linalg.norm(E)) / fd_norm if fd_norm > 0 else math.nan),
                bias=float(np.linalg.norm(np.ravel(E) - np.ravel(g_fd))),
            )
            if row["expected"] == "exact":
                row["check"] = "pass" if row["rel_error"] <= tol else "fail"
            if n_episodes and not est.exact and T is not None:
                mc_rng = np.random.default_rng([int(seed), k, j])
                D = _mc_directions(g_fd, mc_rng)
                mc = monte_carlo_estimator(
                    model, theta, name, int(n_episodes), seed=mc_rng, lam=lam,
                    parametrisation=pol, adversary_params=phi if use_adv else None,
                    adversary_parametrisation=adv, horizon=int(T), directions=D,
                    progress=progress)
                pm, ps, pe = mc.projection_mean, mc.projection_sem, D @ np.ravel(E)
                with np.errstate(divide="ignore", invalid="ignore"):
                    z = np.where(ps > 0, np.abs(pm - pe) / ps, np.where(pm == pe, 0.0, np.inf))
                zc = float(ndtri(1 - (1 - mc_level) / (2 * pm.size)))
                row.update(mc_episodes=int(n_episodes),
                           mc_rel_error=relative_error(mc.mean, g_fd),
                           mc_z_max=float(z.max()), mc_covers=bool(z.max() <= zc))
                row["check"] = "fail" if (not row["mc_covers"] or row["check"] == "fail") \
                    else "pass"
            rows.append(row)
    T_text = ", ".join("inf" if T is None else str(T) for T in Ts)
    notes = [
        f"{label}: gamma={model.gamma:g}, T = {T_text}, lam="
        f"{[float(x) for x in lam]}; the Lagrangian reward "
        f"{'depends' if r_next else 'does not depend'} on the next state"
    ]
    if "theorem2_printed" in names:
        notes.append(f"{label}: {printed_theorem2_verdict(model.gamma, r_next)}")
    return VerifyTable(rows, notes)


def printed_theorem2_verdict(gamma: float, r_next: bool) -> str:
    """Why the printed Theorem 2 estimator is biased on a model, or where it is exact.

    It is exact iff (i) :math:`R_\\lambda` takes one value over the outcomes of each
    pair and (ii) gamma = 1 with episodes that end at a terminal state (T = inf).
    """
    if r_next:
        return ("printed Theorem 2 stays biased even at gamma = 1 with T = inf: R_lam "
                "depends on the next state, so the dropped immediate term sum_o grad "
                "pi_adv(o|s,a) R_lam(s,a,s'_o) is not zero (theorem2_corrected keeps it)")
    if gamma < 1.0:
        return ("printed Theorem 2 is biased: it drops gamma^k and the gamma in front of "
                "V_lam(s_{k+1}); R_lam does not depend on the next state, so restoring "
                "the discount (theorem2_discounted) is exact for T = inf")
    return ("printed Theorem 2 is exact for T = inf (episodes that end at a terminal "
            "state): gamma = 1 and R_lam does not depend on the next state")


def suite_models(domains=("inventory", "nav1", "nav2"), n_random: int = 2,
                       variants: bool = True, parametrisations=("softmax", "mlp")):
    """The models checked by ``rcmdp verify``.

    Returns (label, model, lam, parametrisations, horizons) tuples:

    * the paper's three training models (:func:`~rcmdp_exact.domains.paper_domain`)
      with the paper's initial multipliers
      (:data:`~rcmdp_exact.domains.INITIAL_MULTIPLIER`), at the model's
      horizon T and with unbounded episodes;
    * with ``variants``: Safe Navigation 1 with rewards and costs charged on the
      pair, ``R(s, a) = r(s, a)`` and ``C(s, a) = c(s, a)`` (so they no longer depend
      on the next state), at gamma = 0.99 (T = 200) and gamma = 1 (unbounded episodes,
      which end at the goal); and Safe Navigation 1 itself at gamma = 1; tabular only;
    * ``n_random`` seeded Garnet models (S = 8, A = 3, 3 next states, K = 2,
      next-state-dependent R and C, gamma = 0.9, T = 100 and unbounded, lam = (1, 0.5)).
    """
    from .. import domains as dom

    n_random = check_limit(n_random, "n_random", "random_models", 0)
    both = ("model", None)
    suite = []
    for name in domains:
        model = dom.paper_domain(name)
        suite.append((name, model, dom.INITIAL_MULTIPLIER[name], tuple(parametrisations),
                      both))
    if variants:
        nav = dom.paper_domain("nav1")
        sa = nav.replace(R=np.asarray(nav.r), C=np.asarray(nav.c))
        suite.append(("nav1 R,C(s,a)", sa, 1.0, ("softmax",), both))
        suite.append(("nav1 R,C(s,a) g=1", sa.replace(gamma=1.0, horizon=None), 1.0,
                      ("softmax",), (None,)))
        suite.append(("nav1 g=1", nav.replace(gamma=1.0, horizon=None), 1.0, ("softmax",),
                      (None,)))
    for seed in range(int(n_random)):
        g = dom.garnet(8, 3, 3, n_constraints=2, seed=seed, gamma=0.9,
                       next_state_dependent=True)
        suite.append((f"garnet seed={seed}", g.replace(horizon=100), [1.0, 0.5],
                      tuple(parametrisations), both))
    return suite


def verify_suite(domains=("inventory", "nav1", "nav2"), n_random: int = 2,
                 variants: bool = True, parametrisations=("softmax", "mlp"), seed: int = 0,
                 hidden: int = DEFAULT_HIDDEN, n_episodes: int = 0, mc_level: float = 0.99,
                 tol: float = EXACT_TOL, progress=None) -> VerifyTable:
    """Run :func:`verify_theorems` on every model of :func:`suite_models`."""
    from .._progress import progress_default, tqdm

    progress = progress_default(progress)
    table = VerifyTable()
    models = suite_models(domains, n_random, variants, parametrisations)
    for label, model, lam, kinds, horizons in tqdm(models, desc="verify", disable=not progress):
        table = table + verify_theorems(model, lam, label=label, parametrisations=kinds,
                                        horizons=horizons, seed=seed, hidden=hidden,
                                        n_episodes=n_episodes, mc_level=mc_level, tol=tol,
                                        progress=False)
    return table

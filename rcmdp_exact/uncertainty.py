r"""L1 uncertainty sets: the ball, its estimation from counts, and the data collection.

The sa-rectangular set of the paper's Sec. "Uncertainty Set and Uncertainty Budget",

.. math::

    \mathcal P_{s,a} = \{ p \in \Delta(\Sigma_{s,a}) :
    \|p - \hat P(\cdot \mid s, a)\|_1 \le \alpha(s, a) \},

is an :class:`L1Ball` (nominal (S, A, S), radii (S, A), support (S, A, S), and the
outcome form when the model has outcomes: merging outcomes maps the outcome ball onto the
state ball, so both give the same worst case).  :func:`estimate` is the paper's phase 1:
counts of the uniform random policy (:func:`collect_counts`, from the one sampler), a
pseudo-count of 1, :math:`\hat P = n / n(s, a)` and the Hoeffding radius
:math:`\alpha = \sqrt{2 \ln(2^{S'} S A / \delta) / n(s, a)}` (:func:`hoeffding_radius`).
Terminal rows are the model's self-loop with radius 0.  The proofs and the paper's
alpha ranges are in ``docs/robust.md``.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    as_array,
    as_float_array,
    check_choice,
    check_indices,
    check_int,
    check_nonnegative,
    check_real,
    check_shape,
    check_support,
    check_type,
    readonly,
    row_tolerance,
)
from ._result import Result
from .inner import worst_case_l1
from .model import ModelError, TabularCMDP, check_model, check_transition_rows
from .sampling import rollout

__all__ = [
    "L1Ball",
    "check_ball",
    "collect_counts",
    "estimate",
    "estimate_l1_ball",
    "hoeffding_radius",
    "l1_ball",
    "merge_outcomes",
]


def _radii(alpha, S: int, A: int) -> np.ndarray:
    """Radii as a float (S, A) array, each finite and >= 0."""
    al = as_float_array(alpha, "alpha", "give a number or an array (S, A) of radii")
    if al.shape not in ((), (S, A)):
        check_shape(al, (S, A), "alpha (or one number)", ("s", "a"))
    al = np.array(np.broadcast_to(al, (S, A)))
    check_nonnegative(al, "alpha", "the radii of L1 balls (0 gives the nominal distribution)")
    return al


def check_ball(ball, model: TabularCMDP) -> None:
    """Raise unless ``ball`` is an :class:`L1Ball` with the model's (S, A)."""
    check_type(ball, "ball", L1Ball, "build one with rcmdp_exact.estimate(model, ...).ball, "
               "l1_ball(model, alpha) or L1Ball(nominal, alpha)")
    check_shape(ball.nominal, (model.n_states, model.n_actions, model.n_states),
                "the ball (its nominal kernel, for this model)", ("s", "a", "s'"))


def merge_outcomes(q, outcomes, n_states: int | None = None) -> np.ndarray:
    r"""Merge outcome distributions into next-state distributions: :math:`p = Mq`.

    Parameters
    ----------
    q : array (S, A, O)
        Mass of each outcome.
    outcomes : int array (S, A, O)
        Next state reached by each outcome.
    n_states : int, optional
        Number of next states (default S = ``q.shape[0]``).

    Returns
    -------
    array (S, A, n_states)
        :math:`p(s, a, s') = \sum_{o : \mathrm{outcomes}(s, a, o) = s'} q(s, a, o)`.
    """
    q = as_float_array(q, "q", "give an (S, A, O) array of outcome masses")
    out = _outcome_map(outcomes, q.shape, n_states)
    S, A, O = q.shape
    n = S if n_states is None else int(n_states)
    rows = np.arange(S * A, dtype=np.int64).repeat(O)
    flat = rows * n + out.reshape(-1)
    p = np.bincount(flat, weights=q.reshape(-1), minlength=S * A * n)
    return p.reshape(S, A, n)


def _outcome_map(outcomes, shape, n_states=None) -> np.ndarray:
    """``outcomes`` as an int64 (S, A, O) map of states, checked against ``shape``."""
    out = check_indices(outcomes, "outcomes", shape[0] if n_states is None else n_states,
                        "state")
    check_shape(out, tuple(shape), "outcomes", ("s", "a", "o"))
    return out


def _support_mask(support, S: int, A: int, values=None, name: str = "",
                  fix: str = "") -> np.ndarray:
    """A copy of a boolean support mask of shape (S, A, S), or a ModelError.

    With ``values`` (S, A, S), also refuse a positive entry outside the support, naming
    it as ``name[s, a, s']`` and ending the message with ``fix``.
    """
    sup = as_array(support, "support", "give a boolean array (S, A, S)")
    if sup.dtype != bool:
        raise ModelError(f"support must be a boolean array (S, A, S), got dtype {sup.dtype}")
    check_shape(sup, (S, A, S), "support", ("s", "a", "s'"))
    if values is not None:
        check_support(values, sup, name, fix)
    return sup.copy()


def _first_outcome_split(P: np.ndarray, outcomes: np.ndarray) -> np.ndarray:
    """Outcome distribution putting each state's mass on the first outcome reaching it."""
    vals = np.take_along_axis(P, outcomes, axis=2)
    return np.where(_first_outcomes(outcomes), vals, 0.0)


def _first_outcomes(outcomes: np.ndarray) -> np.ndarray:
    """(S, A, O) bool: outcome o is the first of its pair to reach its state."""
    S, A, O = outcomes.shape
    first = np.ones((S, A, O), dtype=bool)
    for o in range(1, O):  # O is small (the outcomes of one pair)
        first[:, :, o] = ~(outcomes[:, :, :o] == outcomes[:, :, o : o + 1]).any(axis=2)
    return first


class L1Ball:
    r"""An sa-rectangular L1 uncertainty set around a nominal model.

    Parameters
    ----------
    nominal : array (S, A, S)
        Nominal transition probabilities :math:`\hat P(s' \mid s, a)`.
    alpha : float or array (S, A)
        Radius of each ball, >= 0.  Values >= 2 allow every distribution on the
        support.
    support : bool array (S, A, S), optional
        Next states that may receive mass (default: all).  ``nominal`` must be zero
        outside the support.
    outcomes : int array (S, A, O), optional
        The outcome map this ball came from (see :meth:`from_outcomes`); stored with
        ``outcome_nominal`` for adversaries that act on outcomes.
    outcome_nominal : array (S, A, O), optional
        Nominal outcome probabilities; must merge to ``nominal``.

    Attributes
    ----------
    nominal, alpha, support, outcomes, outcome_nominal
        Read-only arrays (``outcomes`` and ``outcome_nominal`` may be None).

    Notes
    -----
    Immutable; :meth:`with_alpha` makes a new ball.  Validation errors are
    :class:`~rcmdp_exact.InputError` naming the culprit (s, a).
    """

    __slots__ = ("_alpha", "_frozen", "_nominal", "_out_nominal", "_outcomes", "_support")

    def __init__(self, nominal, alpha, support=None, *, outcomes=None, outcome_nominal=None):
        object.__setattr__(self, "_frozen", False)
        P = np.array(as_float_array(nominal, "nominal", "give an array (S, A, S)", finite=False))
        if P.ndim != 3 or P.shape[0] != P.shape[2] or 0 in P.shape:
            raise ModelError(
                f"nominal must have shape (S, A, S) with S, A >= 1 and nominal[s, a, s'] the "
                f"probability of s' after a in s, got shape {P.shape}"
            )
        S, A, _ = P.shape
        check_transition_rows(P, "nominal")
        al = _radii(alpha, S, A)
        if support is None:
            sup = np.ones((S, A, S), dtype=bool)
        else:
            sup = _support_mask(support, S, A, P, "nominal",
                                "put the nominal mass on the support or enlarge it")
        if (outcomes is None) != (outcome_nominal is None):
            raise ModelError("give both outcomes and outcome_nominal, or neither")
        out = q = None
        if outcomes is not None:
            q = np.array(as_float_array(outcome_nominal, "outcome_nominal",
                                        "give (S, A, O) outcome probabilities"))
            out = _outcome_map(outcomes, q.shape if q.ndim == 3 else (S, A, -1), S)
            gap = np.abs(merge_outcomes(q, out, S) - P).max(axis=2)
            reach = merge_outcomes(np.ones(out.shape), out, S) > 0
            if (gap > row_tolerance(S)).any() or (reach != sup).any():
                s, a = (int(i) for i in np.argwhere((gap > row_tolerance(S))
                                                    | (reach != sup).any(axis=2))[0])
                raise ModelError(
                    f"the outcome form of ({s}, {a}) disagrees with the state form: "
                    f"outcome_nominal must merge to nominal[{s}, {a}] (largest gap "
                    f"{gap[s, a]:.3e}) and the support must be the states the outcomes "
                    f"reach; build the ball with L1Ball.from_outcomes"
                )
        self._set(P, al, sup, out, q)

    def _set(self, P, al, sup, out, q) -> None:
        """Store validated arrays (read-only) and freeze."""
        object.__setattr__(self, "_frozen", False)
        self._nominal = readonly(P)
        self._alpha = readonly(al)
        self._support = readonly(sup)
        self._outcomes = None if out is None else readonly(out)
        self._out_nominal = None if q is None else readonly(q)
        self._frozen = True

    @classmethod
    def _trusted(cls, P, al, sup, out=None, q=None) -> L1Ball:
        """A ball of arrays that are already valid (no checks)."""
        ball = object.__new__(cls)
        ball._set(P, al, sup, out, q)
        return ball

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError("L1Ball is immutable; use with_alpha or build a new ball")
        object.__setattr__(self, name, value)

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_outcomes(cls, outcome_nominal, alpha, outcomes) -> L1Ball:
        r"""The state-form ball of an outcome-form ball (see the module docstring).

        ``nominal`` is :math:`M\hat q` and ``support`` the states reached by the
        outcomes; the outcome form is kept.
        """
        q = as_float_array(outcome_nominal, "outcome_nominal",
                           "give (S, A, O) outcome probabilities")
        out = _outcome_map(outcomes, q.shape if q.ndim == 3 else (-1, -1, -1))
        S = q.shape[0]
        nominal = merge_outcomes(q, out, S)
        support = merge_outcomes(np.ones(q.shape), out, S) > 0
        return cls(nominal, alpha, support, outcomes=out, outcome_nominal=q)

    # ----------------------------------------------------------------- attributes
    @property
    def nominal(self) -> np.ndarray:
        """Nominal transitions (S, A, S)."""
        return self._nominal

    @property
    def alpha(self) -> np.ndarray:
        """Radii (S, A)."""
        return self._alpha

    @property
    def support(self) -> np.ndarray:
        """Support mask (S, A, S)."""
        return self._support

    @property
    def outcomes(self) -> np.ndarray | None:
        """Outcome map (S, A, O) of the outcome form, or None."""
        return self._outcomes

    @property
    def outcome_nominal(self) -> np.ndarray | None:
        """Nominal outcome probabilities (S, A, O), or None."""
        return self._out_nominal

    @property
    def n_states(self) -> int:
        return self._nominal.shape[0]

    @property
    def n_actions(self) -> int:
        return self._nominal.shape[1]

    @property
    def full_support(self) -> bool:
        """True when every next state may receive mass."""
        return bool(self._support.all())

    def __repr__(self) -> str:
        form = "" if self._outcomes is None else f", O={self._outcomes.shape[2]} outcomes"
        return (
            f"<L1Ball S={self.n_states}, A={self.n_actions}{form}, alpha in "
            f"[{self._alpha.min():.4g}, {self._alpha.max():.4g}]>"
        )

    # ----------------------------------------------------------------- operations
    def with_alpha(self, alpha) -> L1Ball:
        """The same ball with new radii (only the radii are checked)."""
        S, A = self.n_states, self.n_actions
        return L1Ball._trusted(self._nominal, _radii(alpha, S, A), self._support,
                               self._outcomes, self._out_nominal)

    def distance(self, P) -> np.ndarray:
        r""":math:`\|P(\cdot|s,a) - \hat P(\cdot|s,a)\|_1` for every pair, shape (S, A)."""
        P = as_float_array(P, "P", "give an (S, A, S) kernel", shape=self._nominal.shape,
                           axes=("s", "a", "s'"), finite=False)
        return np.abs(P - self._nominal).sum(axis=2)

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``P`` (S, A, S) lies in the set (up to ``tol``), (S, A)."""
        P = np.asarray(P, dtype=np.float64)
        d = self.distance(P)
        ok = d <= self._alpha + tol
        ok &= P.min(axis=2) >= -tol
        ok &= np.abs(P.sum(axis=2) - 1.0) <= tol
        ok &= np.where(self._support, 0.0, np.abs(P)).max(axis=2) <= tol
        return ok

    def worst_case(self, z, method: str = "sort", form: str = "state") -> Result:
        r"""Solve the inner problem of every (s, a): :math:`\min_{p} p^\top z(s, a, \cdot)`.

        Parameters
        ----------
        z : array (S,) or (S, A, S)
            The quantity minimised over next states (shared by all pairs, or per
            transition).
        method : {"sort", "lp"}
            See :func:`rcmdp_exact.inner.worst_case_l1`.
        form : {"state", "outcome"}
            Solve on next states (default) or on outcomes (needs the outcome form);
            both give the same value (see the module docstring).

        Returns
        -------
        Result
            ``p`` (S, A, S) worst-case kernel, ``value`` (S, A); the outcome form adds
            ``q`` (S, A, O), the worst-case outcome distributions.
        """
        S, A = self.n_states, self.n_actions
        zz = as_float_array(z, "z", "give z of shape (S,) or (S, A, S)")
        if zz.shape not in ((S,), (S, A, S)):
            check_shape(zz, (S, A, S), "z (or shape (S,))", ("s", "a", "s'"))
        check_choice(form, "form", ("state", "outcome"))
        if form == "state":
            sup = None if self.full_support else self._support
            res = worst_case_l1(self._nominal, zz, self._alpha, sup, method=method, check=False)
            return Result(p=res.p, value=res.value, method=method, success=res.success)
        if self._outcomes is None:
            raise ModelError(
                "this ball has no outcome form; build it with L1Ball.from_outcomes, "
                "estimate_l1_ball(..., outcomes=...) or from a model with outcomes"
            )
        out = self._outcomes
        if zz.ndim == 1:
            zo = zz[out]
        else:
            zo = np.take_along_axis(zz, out, axis=2)
        res = worst_case_l1(self._out_nominal, zo, self._alpha, method=method, check=False)
        return Result(
            p=merge_outcomes(res.p, out, S), value=res.value, q=res.p, method=method,
            success=res.success,
        )

    # ----------------------------------------------------------------- persistence
    def save(self, path) -> None:
        """Save to ``.npz`` (no pickle)."""
        arrays = {"nominal": self._nominal, "alpha": self._alpha, "support": self._support}
        if self._outcomes is not None:
            arrays["outcomes"] = self._outcomes
            arrays["outcome_nominal"] = self._out_nominal
        np.savez_compressed(path, **arrays)

    @classmethod
    def load(cls, path) -> L1Ball:
        """Load a ball saved by :meth:`save`."""
        with np.load(path, allow_pickle=False) as f:
            kw = {}
            if "outcomes" in f:
                kw = {"outcomes": f["outcomes"], "outcome_nominal": f["outcome_nominal"]}
            return cls(f["nominal"], f["alpha"], f["support"], **kw)


# --------------------------------------------------------------------------- estimation
def hoeffding_radius(n, n_outcomes: int, n_states: int, n_actions: int,
                     delta: float = 0.1) -> np.ndarray:
    r"""The paper's Hoeffding radius :math:`\sqrt{\frac{2}{n} \ln \frac{2^{S'} S A}{\delta}}`.

    Computed as :math:`\sqrt{2 (S' \ln 2 + \ln(S A / \delta)) / n}` (no overflow of
    :math:`2^{S'}`).

    >>> round(float(hoeffding_radius(100, 5, 25, 4, 0.1)), 6)  # a navigation pair
    0.455489
    """
    d = check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                   hint=" (the error probability)")
    n = as_float_array(n, "counts n(s, a)", "give positive counts")
    if (n <= 0).any():
        raise ModelError("every count n(s, a) must be > 0 to define a radius; use a "
                         "pseudo-count")
    log_term = n_outcomes * np.log(2.0) + np.log(n_states * n_actions / d)
    return np.sqrt(2.0 * log_term / n)


def estimate_l1_ball(counts, delta: float = 0.1, n_outcomes: int | None = None, *,
                     outcomes=None, pseudo_count: float = 1.0, support=None) -> L1Ball:
    r"""The Hoeffding L1 ball of observed counts (the paper's phase 1).

    Parameters
    ----------
    counts : array (S, A, O)
        Observed transitions, without pseudo-counts: over outcomes when ``outcomes``
        is given, else over next states (O = S).
    delta : float in (0, 1)
        Error probability (0.1: a 90% set).
    n_outcomes : int, optional
        :math:`S'` of the radius; default O (the number of outcomes, or S).
    outcomes : int array (S, A, O), optional
        Next state of each outcome; the ball is merged into the state form and keeps
        the outcome form.
    pseudo_count : float >= 0
        Added to every outcome (every supported next state in the state form) before
        normalising; 1 in the paper.
    support : bool array (S, A, S), optional
        State form only: the next states that get the pseudo-count and may receive
        mass (default: all); counts outside it are an error.

    Returns
    -------
    L1Ball
        nominal :math:`\hat P = (n + \text{pseudo}) / n(s, a)`, alpha from
        :func:`hoeffding_radius` with :math:`n(s, a)` including the pseudo-counts.
    """
    c = as_float_array(counts, "counts", "give an array (S, A, O) of counts")
    if c.ndim != 3 or 0 in c.shape:
        raise ModelError(f"counts must have shape (S, A, O) with S, A, O >= 1, got {c.shape}")
    S, A, O = c.shape
    check_nonnegative(c, "counts", "counts")
    pc = check_real(pseudo_count, "pseudo_count", 0.0)
    if outcomes is None:
        check_shape(c, (S, A, S), "counts over next states (pass outcomes=model.outcomes "
                                  "for counts over outcomes)", ("s", "a", "s'"))
        mask = (np.ones((S, A, S), dtype=bool) if support is None else
                _support_mask(support, S, A, c, "counts", "enlarge the support"))
    elif support is not None:
        raise ModelError("give either outcomes or support, not both")
    else:
        mask = np.ones((S, A, O), dtype=bool)
    total = c + pc * mask
    n = total.sum(axis=2)
    if (n <= 0).any():
        s, a = (int(i) for i in np.argwhere(n <= 0)[0])
        raise ModelError(
            f"state-action pair ({s}, {a}) has no counts and pseudo_count=0, so its "
            f"nominal distribution is undefined; use pseudo_count > 0 or collect more data"
        )
    q = total / n[:, :, None]
    Sp = O if n_outcomes is None else check_int(n_outcomes, "n_outcomes", 1)
    alpha = hoeffding_radius(n, Sp, S, A, delta)
    if outcomes is None:
        return L1Ball(q, alpha, None if support is None else mask)
    return L1Ball.from_outcomes(q, alpha, _outcome_map(outcomes, c.shape))


FORMS = ("auto", "outcomes", "states")


def _resolve_form(model: TabularCMDP, form: str) -> bool:
    """True when counts are over outcomes."""
    check_choice(form, "form", FORMS)
    if form == "outcomes" and model.outcomes is None:
        raise ModelError("form='outcomes' needs a model with outcomes (built by "
                         "TabularCMDP.from_outcomes); use form='states'")
    return form == "outcomes" or (form == "auto" and model.outcomes is not None)


def collect_counts(model: TabularCMDP, n_episodes: int, seed=None, *,
                   horizon: int | None = None, form: str = "auto",
                   progress: bool = False) -> np.ndarray:
    r"""Roll out the uniform random policy and count transitions.

    The episodes come from :func:`rcmdp_exact.sampling.rollout`: each starts in a
    state drawn from :math:`p_0`, picks actions uniformly at random, draws next states
    from ``model.P`` and stops after ``horizon`` steps or on entering a terminal state
    (the transition into it is counted).

    Parameters
    ----------
    model : TabularCMDP
    n_episodes : int >= 1
    seed : int >= 0, numpy.random.Generator or None
        Same seed, same counts.
    horizon : int, optional
        Episode length; default ``model.horizon``.
    form : {"auto", "outcomes", "states"}
        Count outcomes (``model.outcomes``; "auto" does when the model has them) or
        next states.  An observed next state goes to the first outcome reaching it.
    progress : bool
        Show a progress bar.

    Returns
    -------
    int array (S, A, O) or (S, A, S)
        The counts, without pseudo-counts.
    """
    check_model(model)
    use_out = _resolve_form(model, form)
    S, A = model.n_states, model.n_actions
    ep = rollout(model, np.full((S, A), 1.0 / A), n_episodes, seed, horizon=horizon,
                 progress=progress)
    s, a, nxt = ep.states[ep.alive], ep.actions[ep.alive], ep.next_states[ep.alive]
    if use_out:
        out = model.outcomes
        O = out.shape[2]
        # the first outcome of (s, a) that reaches the observed next state
        o = np.argmax((out[s, a] == nxt[:, None]) & _first_outcomes(out)[s, a], axis=1)
    else:
        O, o = S, nxt
    counts = np.bincount((s * A + a) * O + o, minlength=S * A * O)
    return counts.reshape(S, A, O)


def _absorb_terminal(ball: L1Ball, model: TabularCMDP) -> L1Ball:
    """Terminal rows become the model's self-loop with radius 0."""
    term = model.terminal
    if not term.any():
        return ball
    ts = np.flatnonzero(term)
    nominal = np.array(ball.nominal)
    alpha = np.array(ball.alpha)
    support = np.array(ball.support)
    nominal[ts] = 0.0
    nominal[ts, :, ts] = 1.0
    alpha[ts] = 0.0
    support[ts] = False
    support[ts, :, ts] = True
    out = q = None
    if ball.outcomes is not None:
        out = np.array(ball.outcomes)
        q = np.array(ball.outcome_nominal)
        out[ts] = ts[:, None, None]
        q[ts] = 1.0 / out.shape[2]
    return L1Ball._trusted(nominal, alpha, support, out, q)


def estimate(model: TabularCMDP, n_episodes: int, seed=None, delta: float = 0.1, *,
             pseudo_count: float = 1.0, horizon: int | None = None, form: str = "auto",
             n_outcomes: int | None = None, progress: bool = False) -> Result:
    r"""Phase 1 of the paper: estimate a nominal model and its Hoeffding L1 ball.

    Runs :func:`collect_counts` and :func:`estimate_l1_ball` (with the model's
    outcomes when it has them: :math:`S'` = the number of outcomes, 5 for navigation).

    Returns
    -------
    Result
        ``ball`` (:class:`L1Ball`), ``nominal`` (the model with the estimated
        transitions, :meth:`TabularCMDP.with_transitions`), ``counts``, ``visits``
        (S, A) observed visits (no pseudo-counts), ``alpha_range`` (min, max) of the
        radius over the non-terminal pairs, ``n_episodes``, ``delta``, ``form``.
    """
    check_model(model)
    counts = collect_counts(model, n_episodes, seed, horizon=horizon, form=form,
                            progress=progress)
    use_out = _resolve_form(model, form)
    ball = estimate_l1_ball(
        counts, delta, n_outcomes,
        outcomes=model.outcomes if use_out else None, pseudo_count=pseudo_count,
    )
    ball = _absorb_terminal(ball, model)
    live = ~model.terminal
    al = ball.alpha[live]
    return Result(
        ball=ball,
        nominal=model.with_transitions(ball.nominal, outcomes=ball.outcomes),
        counts=counts,
        visits=counts.sum(axis=2),
        alpha_range=(float(al.min()), float(al.max())) if al.size else (0.0, 0.0),
        n_episodes=int(n_episodes),
        delta=float(delta),
        form="outcomes" if use_out else "states",
    )


SUPPORTS = ("auto", "all", "nominal", "outcomes")


def l1_ball(model: TabularCMDP, alpha, support="auto") -> L1Ball:
    r"""An L1 ball around a model's own transitions with the given radius.

    Parameters
    ----------
    model : TabularCMDP
    alpha : float or array (S, A)
        Radii.
    support : {"auto", "all", "nominal", "outcomes"} or bool array (S, A, S)
        ``"outcomes"``: the states the model's outcomes reach (the ball keeps the
        outcome form, each state's mass on the first outcome reaching it);
        ``"all"``: every state; ``"nominal"``: the support of ``model.P`` (no new
        next states); ``"auto"`` (default): ``"outcomes"`` when the model has
        outcomes, else ``"all"``.

    Terminal rows are the model's self-loop with radius 0.
    """
    check_model(model)
    P = model.P
    S, A = model.n_states, model.n_actions
    al = _radii(alpha, S, A)
    if not isinstance(support, str):
        return _absorb_terminal(L1Ball(P, al, support), model)
    check_choice(support, "support", SUPPORTS)
    if support == "auto":
        support = "outcomes" if model.outcomes is not None else "all"
    if support == "outcomes":
        if model.outcomes is None:
            raise ModelError("support='outcomes' needs a model with outcomes; use 'all' "
                             "or 'nominal'")
        # the model's validation put all of P's mass on states its outcomes reach
        q = _first_outcome_split(P, model.outcomes)
        reach = merge_outcomes(np.ones(q.shape), model.outcomes, S) > 0
        ball = L1Ball._trusted(P, al, reach, model.outcomes, q)
    elif support == "all":
        ball = L1Ball._trusted(P, al, np.ones((S, A, S), dtype=bool))
    else:
        ball = L1Ball._trusted(P, al, P > 0)
    return _absorb_terminal(ball, model)

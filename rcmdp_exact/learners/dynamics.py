r"""Where next states come from: the nominal kernel, the L1 worst case, the adversary.

:func:`build_problem` turns a validated model, ball and settings into the flat arrays
the training loop reads (the same arrays for the compiled loop and the numpy
reference).  Kernels are in the outcome form of :mod:`rcmdp_exact.core.sampling`: outcome o
of pair r = s * A + a leads to ``nxt[r, o]``.

* nominal (PG, CPG): ``model.P`` over next states;
* worst case (RCPG variants): the ball by row (its
  :meth:`~rcmdp_exact.L1Ball.compiled_rows`, an :class:`~rcmdp_exact.uncertainty.L1Rows`,
  the hook of the set protocol); the loop solves the inner problem of every pair at the
  start of every episode with the ball's compiled row solver
  (:mod:`rcmdp_exact.uncertainty.l1_numba`);
* adversary (Adversarial RCPG): the ball's outcome form when it has one (navigation:
  the 5 offsets), otherwise every next state; the adversary's nominal is the ball's
  nominal in that form, and its deviation penalty the ball's L1 distance and radius.
  :func:`prefit_adversary` fits it to that nominal by mean absolute error on all pairs
  (Algorithm 1, line 3).

The compiled loop takes the worst case and the adversary on an :class:`~rcmdp_exact.
L1Ball` (the paper's set: a set whose ``compiled_rows()`` are the rows of an L1 ball);
:func:`check_learner_set` refuses another set for those algorithms with a message that
names the alternatives.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from .._checks import InputError
from ..core.nn import MLP, Adam, softmax
from ..core.parametrisations import adversary_inputs, policy_inputs
from ..uncertainty import L1Rows, SARectangularSet

__all__ = [ "build_problem", "check_learner_set", "prefit_adversary",
           "seed_generators"]


def seed_generators(seed) -> list:
    """Five independent Generators of a run: policy init, adversary init, critic init,
    episodes, adversary batches (``numpy.random.SeedSequence.spawn``)."""
    if isinstance(seed, np.random.Generator):
        return seed.spawn(5)
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return [np.random.default_rng(c) for c in ss.spawn(5)]


class Problem(NamedTuple):
    """The arrays of one training problem (see the module notes)."""

    S: int
    A: int
    K: int
    T: int
    gamma: float
    p0cdf: np.ndarray
    terminal: np.ndarray
    R: np.ndarray
    C: np.ndarray
    d: np.ndarray
    Xpol: np.ndarray
    nxt: np.ndarray
    kprob: np.ndarray
    kcdf: np.ndarray
    rows: L1Rows
    w_c0: np.ndarray
    live: np.ndarray
    Xadv: np.ndarray
    nom_state: np.ndarray

    @property
    def n_outcomes(self) -> int:
        return self.nxt.shape[1]


def _l1_rows(uset) -> L1Rows | None:
    """The set by row when it is an L1 ball (its ``compiled_rows()`` are
    :class:`~rcmdp_exact.uncertainty.L1Rows`), else None."""
    rows = uset.compiled_rows() if isinstance(uset, SARectangularSet) else None
    return rows if isinstance(rows, L1Rows) else None


def check_learner_set(uset, algo, inner: str) -> None:
    """Raise unless the compiled loop can train ``algo`` on ``uset``.

    The RCPG variants with a learned critic and the sort inner method solve the worst
    case of every pair in the compiled loop, and the adversary of Adversarial RCPG is
    penalised by its L1 distance to the nominal: both need an :class:`~rcmdp_exact.
    L1Ball`.  With ``critic="exact"`` or ``inner="lp"`` the RCPG variants take their
    worst case from the set itself, so any sa-rectangular set works.
    """
    if algo.dynamics == "nominal" or _l1_rows(uset) is not None:
        return
    what = type(uset).__name__
    if algo.dynamics == "adversary":
        raise InputError(
            f"{algo.name} needs an L1Ball: its adversary is penalised by the L1 distance to "
            f"the nominal, which a {what} does not define; use an L1Ball (e.g. "
            f"rcmdp_exact.estimate(...).uset), or an RCPG variant with critic='exact' on "
            f"the {what}")
    if inner == "sort":
        raise InputError(
            f"{algo.name} with a learned critic solves the worst case of the L1 ball inside "
            f"the compiled loop; a {what} needs critic='exact' (the exact worst case of the "
            f"set, every episode) or inner='lp', or use an L1Ball")


def build_problem(model, algo, uset, settings) -> Problem:
    """The loop's arrays for ``model`` under the dynamics of ``algo`` (validated inputs).

    ``settings`` the run's validated :class:`~rcmdp_exact.learners.Settings`: inputs are
    the state features times its ``feature_scale``
    (:func:`~rcmdp_exact.core.parametrisations.policy_inputs`); with ``feature_centre`` their
    mean over the states is subtracted (policy and the adversary's state columns).
    """
    S, A, K = model.n_states, model.n_actions, model.n_constraints
    SA = S * A
    states = np.ascontiguousarray(np.broadcast_to(np.arange(S, dtype=np.int64), (SA, S)))
    Xpol = np.asarray(policy_inputs(model, settings.feature_scale), dtype=np.float64)
    shift = Xpol.mean(axis=0) if settings.feature_centre else np.zeros(Xpol.shape[1])
    Xpol = Xpol - shift
    terminal = np.ascontiguousarray(model.terminal, dtype=np.bool_)
    live_states = np.flatnonzero(~terminal)
    live = (live_states[:, None] * A + np.arange(A)[None, :]).ravel().astype(np.int64)
    w_c0 = np.zeros(K)
    rows = L1Rows(nominal=np.zeros((SA, S)), support=np.ones((SA, S), dtype=np.bool_),
                  radius=np.zeros(SA))
    Xadv = np.zeros((SA, 1))
    nom_state = np.zeros((SA, S))
    l1_rows = None if algo.dynamics == "nominal" else _l1_rows(uset)
    if l1_rows is None:
        # a set other than the L1 ball: its worst case comes from the set, every episode
        nxt, kprob = states, np.ascontiguousarray(np.asarray(model.P).reshape(SA, S))
        if algo.objective == "constraint":
            w_c0 = -np.ones(K)
    else:
        rows = l1_rows
        if algo.objective == "constraint":
            w_c0 = -np.ones(K)
        if algo.dynamics == "worst-case":
            nxt, kprob = states, rows.nominal
        else:
            out = uset.outcome_rows() if hasattr(uset, "outcome_rows") else None
            nxt, kprob = (states, rows.nominal) if out is None else out
            Xadv = np.array(adversary_inputs(model, settings.feature_scale), dtype=np.float64)
            Xadv[:, :shift.size] -= shift
            nom_state = rows.nominal
    def own(x, dtype=np.float64):
        # a writable C-contiguous copy: one compiled signature for every problem
        return np.array(x, dtype=dtype, order="C", copy=True)

    return Problem(
        S=S, A=A, K=K, T=int(model.horizon), gamma=float(model.gamma),
        p0cdf=own(np.cumsum(model.p0)), terminal=own(terminal, np.bool_),
        R=own(model.R), C=own(model.C), d=own(model.d), Xpol=own(Xpol),
        nxt=own(nxt, np.int64), kprob=own(kprob), kcdf=own(np.cumsum(kprob, axis=1)),
        rows=L1Rows(own(rows.nominal), own(rows.support, np.bool_), own(rows.radius)),
        w_c0=own(w_c0), live=own(live, np.int64), Xadv=own(Xadv), nom_state=own(nom_state),
    )


def prefit_adversary(problem: Problem, settings, rng):
    r"""Adversary parameters fitted to the nominal by mean absolute error on all pairs.

    Minimises :math:`\frac{1}{SA\,S}\sum_{r,s'} |P_{adv}(s' \mid r) - \hat P(s' \mid
    r)|`, with :math:`P_{adv}` the adversary's outcome distribution merged onto next
    states (the ball's own norm: outcomes that reach the same state are one), by
    full-batch Adam (``settings.prefit_steps`` steps of size ``settings.prefit_lr``) from
    an initialisation drawn from ``rng``, with ``settings.hidden`` hidden units.

    Returns
    -------
    params : array
    info : dict
        ``prefit_mae`` (final), ``prefit_seconds``, ``prefit_max_deviation`` (largest
        L1 distance to the nominal over non-terminal pairs) and ``prefit_inside``
        (fraction of non-terminal pairs within their radius).
    """
    start = time.perf_counter()
    X = problem.Xadv
    nxt = problem.nxt
    target = problem.nom_state
    rows = np.arange(X.shape[0])
    S = problem.S

    def merged(q):
        out = np.zeros((q.shape[0], S))
        for o in range(q.shape[1]):
            np.add.at(out, (rows, nxt[:, o]), q[:, o])
        return out

    net = MLP(X.shape[1], problem.n_outcomes, hidden=settings.hidden, seed=rng)
    params = net.get_params()
    opt = Adam(net.n_params, lr=settings.prefit_lr)
    n = target.size
    for _ in range(settings.prefit_steps):
        q = net.probs(X, params)
        gap = merged(q) - target
        G = np.sign(np.take_along_axis(gap, nxt, axis=1)) / n
        params = opt.step(params, net.vjp_probs(X, G, params))
    gap = merged(softmax(net.logits(X, params))) - target
    live = problem.live
    dev = np.abs(gap).sum(axis=1)[live]
    info = {
        "prefit_mae": float(np.abs(gap).mean()),
        "prefit_max_deviation": float(dev.max()) if dev.size else 0.0,
        "prefit_inside": float((dev <= problem.rows.radius[live] + 1e-9).mean())
        if dev.size else 1.0,
        "prefit_seconds": time.perf_counter() - start,
    }
    return params, info

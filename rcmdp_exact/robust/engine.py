r"""The one robust fixed-point engine: batched robust Bellman operators over any sa-set.

Every robust quantity of the toolkit is the fixed point of one operator, for a batch of
J problems that share a model and an uncertainty set but not their reward, policy box
or multiplier:

.. math::

    (T_B W)(s) = \max_{\pi_s \in B_s} \sum_a \pi_s(a)\, Q_W(s, a), \qquad
    Q_W(s, a) = \min_{p \in \mathcal P_{s,a}} p^\top \bigl(g(s, a, \cdot) + \gamma W\bigr),

with :math:`B_s = \{\pi_s \in \Delta_A : l_s \le \pi_s \le u_s\}` a box intersected with
the simplex.  A box that is one policy (l = u = pi) gives the robust evaluation of pi
(:func:`~rcmdp_exact.robust.robust_evaluate`); the full box (l = 0, u = 1) gives robust
value and policy iteration (:func:`~rcmdp_exact.robust.robust_value_iteration`); a
worst-case *cost* is the fixed point with reward :math:`g = -c_k` (the adversary that
minimises :math:`-C_k` maximises :math:`C_k`); the bracket and the RCPG variants'
targets (:mod:`rcmdp_exact.ground_truth`) and the learners' exact dynamics use the same
engine.  :math:`T_B` is a :math:`\gamma`-contraction, so for any W

.. math::

    \|W^* - W\|_\infty \le \|T_B W - W\|_\infty / (1 - \gamma),

and :meth:`RobustGame.solve` returns this bound with every answer: the bracket adds it
to upper bounds and subtracts it from lower bounds, so a fixed point stopped at a
tolerance never overstates a bound.

The inner minimum is the set's own :meth:`~rcmdp_exact.uncertainty.UncertaintySet.
worst_case`, called once per iteration for the whole batch (with one vector per state
when every reward of the batch is :math:`f(s, a) + h(s')` on the live states: then a
set may sort once per problem instead of once per pair).  The fixed point is found by
Howard's policy iteration for both players: the adversary's (kernels, each evaluated by
:class:`~rcmdp_exact.core.evaluation.PolicySystem`) inside the policy player's (greedy in
the box, keeping the current choice unless another is better by more than the
tolerance), or by value iteration for the adversary when asked.  The greedy maximiser
over a box intersected with the simplex starts at :math:`l_s` and fills the best actions
up to :math:`u_s` (:func:`~rcmdp_exact.core.mdp.greedy_box`); the policy player's iteration is
the toolkit's one Howard iteration, :func:`~rcmdp_exact.core.mdp.box_policy_iteration`.

An optimistic nature (the best case over the set, :math:`\max_p` instead of
:math:`\min_p`) is the adversary of the negated reward, negated:
``inner(..., optimistic=True)`` and ``value_iteration(..., optimistic=True)``.

For an s-rectangular set (one budget per state shared by its actions, e.g.
:class:`~rcmdp_exact.SRectL1Ball`) the adversary depends on the policy: the inner step
calls ``worst_case(z, policy)`` (one value per state; ``q(s, a) = p_{s,a}^\top z_{s,a}``
at the adversary's answer, so that :math:`\sum_a \pi_a q_a` is the state's value), and
the policy player's step over a box is the set's own robust max-min,
``bellman_max_min(z, lo, hi)``, whose maximiser may be randomised.

Terminal states earn nothing and keep the model's self-loop, whatever the set says.

**No failure passes silently.**  Every answer of a set goes through
:func:`checked_worst_case`: a result whose ``success`` is False (a row the set's
solver could not solve, and its second solver could not repair) raises
:class:`~rcmdp_exact.InnerProblemError` naming the set, the (state, action) row and the
cause.  The rows of a set that is not one of the toolkit's own are checked as well, once
per fixed point (finite, the right shape, distributions, inside the set's own
``contains()`` within :data:`CONTAINS_TOL`, and ``value`` equal to :math:`p^\top z`),
and every answer is checked to be finite.
"""

from __future__ import annotations

import copy
import time

import numpy as np

from .._checks import InnerProblemError, check_int, check_real
from .._result import Result
from ..core.evaluation import PolicySystem, policy_matrix, policy_values
from ..core.mdp import box_policy_iteration, greedy_box
from ..uncertainty import SARectangularSet, SRectangularSet

__all__ = ["CONTAINS_TOL", "RobustGame", "SafetyNet", "checked_worst_case"]

#: Rounding allowance of a certified bound, relative to the value scale: a bound built
#: from objectives of total weight ``weight`` is moved outwards by ``ROUNDING * scale *
#: weight`` (:meth:`RobustGame.rounding`).  16 eps: twice the rounding of a worst-case
#: cost seen where a multiplier of 2e10 turned it into a bound 3.6e-4 on the wrong side
#: (8 eps of the cost); the residual bounds of the fixed points do not see rounding.
ROUNDING = 16.0 * np.finfo(float).eps

#: Tolerance of the check that a user's set answers with rows inside itself
#: (``uset.contains(P, tol=CONTAINS_TOL)``), of the row sums of those rows, and of the
#: relative difference between a returned ``value`` and :math:`p^\top z`.
CONTAINS_TOL = 1e-7


class SafetyNet:
    """A wall-clock limit that only stops a run, and remembers that it did.

    Work budgets (iterations, boxes, evaluations) decide every number a run computes;
    the safety net is the guard against a run that would take far longer than asked.
    It reads the clock (``time.perf_counter``) only when asked (:meth:`expired`), and
    once the limit has passed it stays expired and records the phase that saw it first
    (:attr:`phase`, set by the caller as it goes), so that the result can say that it
    was cut by the clock: such a result depends on the machine and its load and is not
    reproducible.  ``seconds=None``: no limit (never expires).  Games made by
    :meth:`RobustGame.replace` share their net, so a run stops as one.
    """

    def __init__(self, seconds: float | None = None, start: float | None = None):
        self.seconds = None if seconds is None else check_real(
            seconds, "seconds", 0.0, low_open=True, hint=" (a time limit; None: no limit)")
        self.start = time.perf_counter() if start is None else float(start)
        self.deadline = None if seconds is None else self.start + self.seconds
        self.phase = ""  # what the run is doing (the caller's words)
        self.fired = False  # the limit was reached
        self.fired_in = None  # the phase in which it was reached first

    def expired(self) -> bool:
        """True once the limit has passed (and from then on)."""
        if not self.fired and self.deadline is not None \
                and time.perf_counter() > self.deadline:
            self.trip()
        return self.fired

    def trip(self, phase: str | None = None) -> None:
        """Record that the limit stopped something (a solver given :meth:`remaining`
        that stopped on its own clock calls this)."""
        if not self.fired:
            self.fired = True
            self.fired_in = self.phase if phase is None else phase

    def remaining(self) -> float | None:
        """Seconds left (at least 0), or None without a limit."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.perf_counter(), 0.0)

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.perf_counter() - self.start


def _builtin(uset) -> bool:
    return type(uset).__module__.startswith("rcmdp_exact.uncertainty")


def _compiled_greedy():
    """The compiled greedy fill of boxes (:func:`._compiled.greedy_fill`)."""
    from ._compiled import greedy_fill

    return greedy_fill


def _compiled_rows(uset, inner: str):
    """The set's rows for the compiled inner step (its ``compiled_rows()``), or None (sets
    without them, and the LP cross-check, keep the set's ``worst_case``)."""
    if inner != "sort" or not isinstance(uset, SARectangularSet):
        return None
    return uset.compiled_rows()


def _row_name(idx, batched: bool, per_state: bool) -> str:
    names = (("j",) if batched else ()) + (("s",) if per_state else ("s", "a"))
    return "(" + ", ".join(f"{n}={int(i)}" for n, i in zip(names, idx, strict=False)) + ")"


def _fail(uset, what: str, fix: str):
    raise InnerProblemError(f"{type(uset).__name__}.worst_case {what}; {fix}")


def checked_worst_case(uset, z, policy=None, method: str = "sort", *,
                       check_rows: bool = False) -> Result:
    """``uset.worst_case(z[, policy], method=method)``, checked (module docstring).

    ``z`` is (S,), (J, S), (S, A, S) or (J, S, A, S); ``policy`` the (J, S, A) or (S, A)
    policies of an s-rectangular set.  ``check_rows=True`` also checks that the rows lie
    in the set (for sets that are not the toolkit's own; their shape and finiteness are
    always checked).

    Raises
    ------
    InnerProblemError
        If the set reports a failure, or its answer is not finite, not of the right shape
        or (with ``check_rows``) not a kernel of the set whose values are ``p @ z``.
    """
    S, A = uset.n_states, uset.n_actions
    s_rect = isinstance(uset, SRectangularSet)
    z = np.asarray(z, dtype=np.float64)
    res = uset.worst_case(z, policy, method=method) if s_rect else \
        uset.worst_case(z, method=method)
    builtin = _builtin(uset)
    if not builtin or check_rows:
        _check_answer(uset, z, res, S, A, s_rect, check_rows and not builtin)
    if not bool(res.get("success", True)):
        ok = res.get("row_success")
        where = ""
        if ok is not None:
            ok = np.asarray(ok, dtype=bool)
            first = np.argwhere(~ok)
            if first.size:
                where = " on row " + _row_name(first[0], ok.ndim == (2 if s_rect else 3),
                                               s_rect) + f" ({int((~ok).sum())} of {ok.size})"
        cause = res.get("message") or f"success=False (method={method!r})"
        _fail(uset, f"failed{where}: {cause}",
              "the bounds built on this answer would not be certified; report the set and "
              "the values z (uset.save(...), numpy.save) if it is one of the toolkit's own, "
              "or fix the set's solver")
    return res


def _check_answer(uset, z, res, S, A, s_rect, in_set):
    """Shape, finiteness and (``in_set``) membership of a set's answer (module docstring)."""
    batched = z.ndim in (2, 4)
    J = z.shape[0] if batched else 1
    lead = ((J,) if batched else ()) + ((S,) if s_rect else (S, A))
    if "p" not in res or "value" not in res:
        _fail(uset, "returned no 'p' or no 'value'",
              "return a Result (or dict) with p (the minimising rows) and value")
    p = np.asarray(res["p"], dtype=np.float64)
    val = np.asarray(res["value"], dtype=np.float64)
    shape_p = ((J,) if batched else ()) + (S, A, S)
    if p.shape != shape_p or val.shape != lead:
        _fail(uset, f"returned p of shape {p.shape} and value of shape {val.shape} for z of "
              f"shape {z.shape}; expected {shape_p} and {lead}",
              "see docs/your_set.md for the shapes worst_case returns")
    for name, arr in (("p", p), ("value", val)):
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = np.argwhere(bad)[0]
            _fail(uset, f"returned a non-finite {name} ({arr[tuple(idx)]}) at "
                  f"{_row_name(idx, batched, False)}",
                  "check the set's solver (and the values z it was given)")
    if not in_set:
        return
    tol = CONTAINS_TOL
    sums = p.sum(axis=-1)
    rows = p.reshape(J, S, A, S)
    zz = np.broadcast_to(z.reshape(J, 1, 1, S) if z.ndim in (1, 2) else z.reshape(J, S, A, S),
                         (J, S, A, S))
    bad = (np.abs(sums - 1.0) > tol * max(S, 1)) | (p.min(axis=-1) < -tol)
    if bad.any():
        idx = np.argwhere(bad)[0]
        _fail(uset, f"returned a row that is not a distribution at "
              f"{_row_name(idx, batched, False)} (sum {sums[tuple(idx)]!r}, min "
              f"{p[tuple(idx)].min()!r})",
              "return rows of nonnegative probabilities that sum to 1")
    for j in range(J):
        inside = np.asarray(uset.contains(rows[j], tol=tol), dtype=bool)
        if not inside.all():
            idx = np.argwhere(~inside)[0]
            full = ((j,) if batched else ()) + tuple(int(i) for i in idx)
            dist = np.asarray(uset.distance(rows[j]))[tuple(idx)]
            _fail(uset, f"returned a row outside the set at "
                  f"{_row_name(full, batched, s_rect)}: contains(P, tol={tol:g}) is False "
                  f"(distance {float(dist):.6g})",
                  "worst_case must return rows of the set (check it against contains())")
    if not s_rect:
        pz = np.einsum("jsat,jsat->jsa", rows, zz).reshape(val.shape)
        scale = np.maximum(1.0, np.abs(zz).max(axis=-1)).reshape(val.shape)
        off = np.abs(pz - val) > tol * scale
        if off.any():
            idx = np.argwhere(off)[0]
            _fail(uset, f"returned value {val[tuple(idx)]!r} at "
                  f"{_row_name(idx, batched, False)}, but p @ z there is {pz[tuple(idx)]!r}",
                  "value must be the value of the returned rows, p @ z")


class RobustGame:
    r"""The arrays of one model and one uncertainty set, and batched fixed points of
    :math:`T_B`.

    Parameters
    ----------
    model : TabularCMDP
        Rewards R (S, A, S), costs C (S, A, S, K), budgets, gamma < 1, p0, terminal
        states (its transitions are used only on terminal rows).
    uset : UncertaintySet
        An sa-rectangular set of the model's shape; its nominal is the centre.
    tol : float
        Stop a fixed point when :math:`\|T W - W\|_\infty \le` tol * max(1, max|W|).
    max_iter : int
        Iterations of each policy iteration (a cap; the answers carry their residual).
    inner : {"sort", "lp"}
        The set's solver (exact, or its convex program as a cross-check).
    net : SafetyNet, optional
        A time limit after which every fixed point stops at its next iteration (the
        answers keep their residual bounds, so they stay certified, only looser) and
        that records that it did.  None (the default): the iteration caps alone bound
        the work, and the answers do not depend on the machine.
    d : array_like, optional
        The budgets (K,) (default: the model's).  One vector: the bracket's budgets,
        model budgets plus its ``feas_tol``, are given here once; :attr:`d_bound` is
        derived from it.
    compiled : bool
        With ``inner="sort"``, solve the rows of a batch in one compiled call when the set
        offers one (:meth:`~rcmdp_exact.uncertainty.SARectangularSet.compiled_rows`: the
        :class:`~rcmdp_exact.L1Ball`'s own compiled row) instead of its numpy
        ``worst_case`` (the reference, ``compiled=False``), and fill the policy boxes by
        the compiled greedy fill.  Both are the exact sort-based solution.
    """

    def __init__(self, model, uset, tol: float = 1e-12, max_iter: int = 200,
                 inner: str = "sort", net: SafetyNet | None = None, d=None,
                 compiled: bool = True):
        tol = check_real(tol, "tol", 0.0, low_open=True)
        max_iter = check_int(max_iter, "max_iter", 1)
        S, A, K = model.n_states, model.n_actions, model.n_constraints
        self.model = model
        self.S, self.A, self.K = S, A, K
        self.gamma = float(model.gamma)
        self.p0 = np.asarray(model.p0, dtype=np.float64)
        self.d = np.array(model.d if d is None else d, dtype=np.float64).reshape(K)
        self.d.flags.writeable = False
        self.term = np.asarray(model.terminal, dtype=bool)
        self.P_term = np.asarray(model.P)[self.term] if self.term.any() else None
        self.uset = uset
        self.s_rect = isinstance(uset, SRectangularSet)
        self.nominal = np.array(uset.nominal, dtype=np.float64)
        if self.P_term is not None:
            self.nominal[self.term] = self.P_term
        self.R = np.asarray(model.R, dtype=np.float64)
        self.C = np.ascontiguousarray(np.moveaxis(np.asarray(model.C, dtype=np.float64), 3, 0))
        mag = max([1.0, float(np.abs(self.R).max(initial=0.0)),
                   float(np.abs(self.C).max(initial=0.0))])
        self.scale = mag / (1.0 - self.gamma)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.inner_method = inner
        self.n_inner = 0
        self.net = net
        self._check_rows = True  # the next inner step checks a user's rows (once per fixed point)
        self.compiled = bool(compiled)
        self.rows = _compiled_rows(uset, inner) if compiled else None
        self.greedy = _compiled_greedy() if compiled else greedy_box
        self._shared_last = (None, None)

    def replace(self, **settings) -> RobustGame:
        """A game on the same arrays and set (nothing is checked or built again) with other
        settings: any of ``tol``, ``max_iter``, ``net``, ``d``, ``compiled``.  The game
        itself is never changed."""
        bad = set(settings) - {"tol", "max_iter", "net", "d", "compiled"}
        if bad:
            raise TypeError(f"RobustGame.replace: unknown settings {sorted(bad)}")
        out = copy.copy(self)
        compiled = settings.pop("compiled", None)
        if "d" in settings:
            d = np.array(settings.pop("d"), dtype=np.float64).reshape(self.K)
            d.flags.writeable = False
            out.d = d
        for key, value in settings.items():
            setattr(out, key, value)
        if compiled is not None:
            out.compiled = bool(compiled)
            out.rows = _compiled_rows(self.uset, self.inner_method) if compiled else None
            out.greedy = _compiled_greedy() if compiled else greedy_box
        out.n_inner = 0
        return out

    def rounding(self, weight=1.0):
        r"""The rounding allowance of a bound whose objectives carry total weight
        ``weight`` (a number or an array): :data:`ROUNDING` times ``scale`` times the
        weight.  Certified bounds are moved outwards by it, so that the rounding of the
        solves and sums behind them (which a residual bound does not see) cannot put a
        bound on the wrong side; a multiplier of 1e10 times a cost rounded by 1e-15 would
        otherwise move a bound by 1e-5."""
        return ROUNDING * self.scale * np.asarray(weight, dtype=np.float64)

    @property
    def d_bound(self) -> np.ndarray:
        """The budgets at which upper bounds are computed: ``d`` plus the rounding
        allowance of a cost (:meth:`rounding` of weight 1), so that a policy accepted on
        the lower side at ``d``, whose costs are known up to that rounding, is covered by
        the upper side."""
        return self.d + self.rounding(1.0)

    def late(self) -> bool:
        """True once the safety net (if any) has expired."""
        return self.net is not None and self.net.expired()

    # ------------------------------------------------------------------ rewards
    def objectives(self) -> np.ndarray:
        """The value and every cost as rewards (1 + K, S, A, S): R, -C_1, ..., -C_K."""
        return np.concatenate([self.R[None], -self.C], axis=0)

    def lagrangian(self, lam: np.ndarray) -> np.ndarray:
        r"""Rewards :math:`R - \lambda^\top C` for a batch of multipliers (J, K)."""
        lam = np.asarray(lam, dtype=np.float64)
        lam = lam.reshape(lam.shape[0] if lam.ndim == 2 else -1, self.K)
        return self.R[None] - np.einsum("jk,ksat->jsat", lam, self.C)

    # ------------------------------------------------------------------ operators
    def _shared(self, g: np.ndarray):
        """(f, h) with g = f(s, a) + h(s') on the live rows of every problem, or None
        (the answer for the last ``g`` is kept: a fixed point asks for it every
        iteration)."""
        if self._shared_last[0] is g:
            return self._shared_last[1]
        out = self._split(g)
        self._shared_last = (g, out)
        return out

    def _split(self, g: np.ndarray):
        live = ~self.term
        gl = g[:, live]
        if not gl.size:
            return None
        h = gl[:, :1, :1, :] - gl[:, :1, :1, :1]
        if not np.array_equal(gl - gl[..., :1], np.broadcast_to(h, gl.shape)):
            return None
        return g[..., 0], h[:, 0, 0, :]

    def inner(self, g: np.ndarray, w: np.ndarray, pi=None, *, optimistic: bool = False):
        """Worst-case Q (J, S, A) and kernels (J, S, A, S) at state values w (J, S).

        An s-rectangular set needs the policies pi (J, S, A) its adversary answers.
        ``optimistic``: the best case instead, :math:`\\max_p p^\\top (g + \\gamma w)
        = -\\min_p p^\\top (-g - \\gamma w)`.
        """
        if optimistic:
            q, P = self._inner(-g, -w, pi)
            return -q, P
        return self._inner(g, w, pi)

    def _inner(self, g: np.ndarray, w: np.ndarray, pi):
        J = g.shape[0]
        check = self._check_rows
        self._check_rows = False
        if self.rows is not None:
            return self._terminal_rows(*self._compiled_inner(g, w))
        if self.s_rect:
            z = g + self.gamma * w[:, None, None, :]
            res = checked_worst_case(self.uset, z, pi, self.inner_method, check_rows=check)
            P = np.array(res.p, dtype=np.float64).reshape(J, self.S, self.A, self.S)
            q = np.einsum("jsat,jsat->jsa", P, z)
            return self._terminal_rows(q, P)
        shared = self._shared(g)
        if shared is None:
            res = checked_worst_case(self.uset, g + self.gamma * w[:, None, None, :],
                                     method=self.inner_method, check_rows=check)
            q = np.array(res.value).reshape(J, self.S, self.A)
        else:
            f, h = shared
            res = checked_worst_case(self.uset, h + self.gamma * w, method=self.inner_method,
                                     check_rows=check)
            q = np.asarray(res.value).reshape(J, self.S, self.A) + f
        P = np.asarray(res.p, dtype=np.float64).reshape(J, self.S, self.A, self.S)
        if not P.flags.writeable:
            P = P.copy()
        return self._terminal_rows(q, P)

    def _compiled_inner(self, g, w):
        """The inner step on the toolkit's L1 ball, every row of the batch in one
        compiled call (the set's ``compiled_rows().solve``); an answer that is not finite
        raises like a set's failure."""
        shared = self._shared(g)
        if shared is None:
            q, P = self.rows.solve(g + self.gamma * w[:, None, None, :])
        else:
            f, h = shared
            q, P = self.rows.solve(h + self.gamma * w, f)
        if not np.isfinite(q).all():
            _fail(self.uset, "gave a non-finite worst-case value (compiled rows)",
                  "check the values z it was given (rewards and values must be finite)")
        return q, P

    def _terminal_rows(self, q, P):
        self.n_inner += 1
        if self.P_term is not None:
            q[:, self.term] = 0.0
            P[:, self.term] = self.P_term
        return q, P

    def max_min(self, g: np.ndarray, w: np.ndarray, lo, hi):
        """The policy player's step: the box maximiser (J, S, A) of the worst-case values
        at w, and its values T_B w (J, S).

        For an sa-rectangular set the greedy fill of the box (:func:`greedy_box`) on the
        worst-case Q; for an s-rectangular set the set's ``bellman_max_min``.
        """
        if not self.s_rect:
            q, _ = self.inner(g, w)
            best = self.greedy(q, lo, hi)
            return best, np.einsum("jsa,jsa->js", best, q)
        z = g + self.gamma * w[:, None, None, :]
        res = self.uset.bellman_max_min(z, lo, hi)
        best = np.array(res.policy, dtype=np.float64).reshape(lo.shape)
        tw = np.array(res.value, dtype=np.float64).reshape(g.shape[:2])
        if not (bool(res.get("success", True)) and np.isfinite(tw).all()
                and np.isfinite(best).all()):
            raise InnerProblemError(
                f"{type(self.uset).__name__}.bellman_max_min failed: "
                f"{res.get('message') or 'a non-finite value or policy'}; the bounds built "
                f"on this answer would not be certified")
        if self.term.any():
            tw[:, self.term] = 0.0
        return best, tw

    def values(self, P, g, pi) -> np.ndarray:
        """Exact values (J, S) of policies pi under kernels P (no adversary)."""
        return policy_values(P, g, pi, self.gamma, self.term)

    def numbers(self, P: np.ndarray, pi: np.ndarray):
        """Exact value (J,) and costs (J, K) from p0 of policies pi under kernels P."""
        J, n = P.shape[0], 1 + self.K
        g = np.concatenate([self.R[None], self.C], axis=0)
        g = np.broadcast_to(g, (J, *g.shape)).reshape(J * n, self.S, self.A, self.S)
        vals = self.values(np.repeat(P, n, axis=0), g, np.repeat(pi, n, axis=0))
        out = (vals @ self.p0).reshape(J, n)
        return out[:, 0], out[:, 1:]

    def occupancy(self, P: np.ndarray, pi: np.ndarray) -> np.ndarray:
        r"""Discounted occupancies (J, S) from p0: :math:`(I - \gamma P_\pi)^{-\top} p_0`."""
        rhs = np.broadcast_to(self.p0, (P.shape[0], self.S))
        return PolicySystem(policy_matrix(P, pi), self.gamma).solve(rhs, transpose=True)

    def _scale(self, w: np.ndarray) -> np.ndarray:
        return np.maximum(1.0, np.abs(w).max(axis=1))

    def start_values(self, g, pi) -> np.ndarray:
        """Values (J, S) of policies pi under the nominal kernel: the adversary's start."""
        J = g.shape[0]
        return self.values(np.broadcast_to(self.nominal, (J, *self.nominal.shape)), g, pi)

    # ------------------------------------------------------------------ fixed points
    def adversary(self, g, pi, w=None, *, method: str = "policy_iteration",
                  max_iter: int | None = None, bar=None) -> Result:
        """The adversary's fixed point for fixed policies pi (J, S, A), rewards g.

        Policy iteration (default): each kernel is evaluated exactly and replaced by the
        worst case at its values, until the residual :math:`\\|T_\\pi w - w\\|_\\infty` is
        at most tol * max(1, max|w|) or the kernel repeats (the same w would follow: the
        tolerance is below the rounding error of the solve).  Value iteration: w <-
        T_pi w.  Starts from ``w`` or the nominal values.

        Returns
        -------
        Result
            ``w`` (J, S) the last evaluated values; ``q`` (J, S, A), ``P`` (J, S, A, S)
            the worst case at that same ``w`` (so that a residual computed from them is
            the residual of ``w``); per problem (J,) ``iterations`` (the iteration that
            met the tolerance, or the last), ``residual``, ``converged`` and ``stalled``
            (its kernel repeated above the tolerance).  The batch goes on until every
            problem has converged or repeated its kernel; the problems that converged
            earlier keep being improved meanwhile.
        """
        self._check_rows = True
        J = g.shape[0]
        max_iter = self.max_iter if max_iter is None else int(max_iter)
        w = self.start_values(g, pi) if w is None else np.array(w, dtype=np.float64)
        stalled = np.zeros(J, dtype=bool)
        iterations = np.zeros(J, dtype=np.int64)
        P_prev = None
        it = 0
        while it < max_iter:
            it += 1
            q, P = self.inner(g, w, pi)
            tw = np.einsum("jsa,jsa->js", pi, q)
            residual = np.abs(tw - w).max(axis=1)
            converged = residual <= self.tol * self._scale(w)
            iterations[(iterations == 0) & converged] = it
            if bar is not None:
                bar.update(1)
            if converged.all() or it == max_iter or self.late():
                break
            if method == "value_iteration":
                w = tw
                continue
            # a kernel seen again: w is its exact evaluation, the same w would follow
            rep = np.zeros(J, dtype=bool) if P_prev is None else \
                (P == P_prev).all(axis=(1, 2, 3))
            if (rep | converged).all():
                stalled = rep & ~converged
                break
            w, P_prev = self.values(P, g, pi), P
        iterations[iterations == 0] = it
        return Result(w=w, q=q, P=P, iterations=iterations, residual=residual,
                      converged=converged, stalled=stalled)

    def solve(self, g: np.ndarray, lo: np.ndarray, hi: np.ndarray, w=None, pi=None) -> Result:
        r"""Fixed points of :math:`T_B` for a batch: rewards g (J, S, A, S), boxes lo, hi (J, S, A).

        The policy player's Howard iteration (:func:`~rcmdp_exact.core.mdp.box_policy_iteration`)
        whose evaluation is the adversary's fixed point (:meth:`adversary`, warm-started
        from the previous round's values).

        Returns
        -------
        Result
            ``w`` (J, S), ``pi`` (J, S, A) the box maximiser, ``q`` (J, S, A) and ``P``
            (J, S, A, S) the worst case at ``w``, ``value`` (J,) = p0.w and ``err``
            (J,) = :math:`\|T_B w - w\|_\infty / (1-\gamma)`: the fixed point lies in
            ``value -+ err``; ``rounds`` the policy player's iterations, ``stable``
            (no action improved at the end) and ``adversary`` the last fixed point of
            :meth:`adversary`.
        """
        self._check_rows = True
        if pi is None:
            pi, _ = self.max_min(g, np.zeros(g.shape[:2]) if w is None else w, lo, hi)
        start = [w]

        def evaluate(pi):
            adv = self.adversary(g, pi, start[0])
            start[0] = adv.w
            return adv.w, adv.q, adv

        improve = None
        if self.s_rect:  # the gain of the box's robust max-min over pi's own value
            def improve(w, q, pi):
                best, tw = self.max_min(g, w, lo, hi)
                return best, tw - w

        sol = box_policy_iteration(evaluate, pi, lo, hi, max_iter=self.max_iter,
                                   rtol=self.tol, improve=improve, stop=self.late,
                                   greedy=self.greedy)
        w, q, adv = sol.w, sol.q, sol.info[0]
        tw = self.max_min(g, w, lo, hi)[1] if self.s_rect else \
            np.einsum("jsa,jsa->js", sol.best, q)
        err = np.abs(tw - w).max(axis=1) / (1.0 - self.gamma)
        return Result(w=w, pi=sol.pi, q=q, P=adv.P, value=w @ self.p0, err=err,
                      rounds=sol.rounds, stable=sol.stable, adversary=adv)

    def value_iteration(self, g: np.ndarray, w0: np.ndarray, max_iter: int, bar=None, *,
                        optimistic: bool = False):
        r"""Robust value iteration :math:`W \leftarrow \max_a Q_W` for a batch g (J, S, A, S)
        (for an s-rectangular set, :math:`W \leftarrow \max_\pi \min_p`).  With
        ``optimistic`` (sa-rectangular sets) the best case, :math:`W \leftarrow \max_a
        \max_p p^\top (g + \gamma W)`: a plain MDP whose actions are the pairs (a, p).

        Stops when every residual is at most tol * max(1, max|W|).

        Returns
        -------
        Result
            ``w`` (J, S), ``q`` (J, S, A) and ``P`` (J, S, A, S) the worst case at the
            returned w against the maximising ``policy`` (J, S, A) (one-hot greedy for an
            sa-rectangular set, possibly randomised for an s-rectangular one),
            ``iterations``, ``residual`` (J,), ``converged`` (J,).
        """
        self._check_rows = True
        w = np.array(w0, dtype=np.float64)
        it = 0
        residual = np.full(w.shape[0], np.inf)
        converged = np.zeros(w.shape[0], dtype=bool)
        full = (np.zeros(g.shape[:3]), np.ones(g.shape[:3]))
        while it < max_iter:
            it += 1
            if self.s_rect:
                tw = self.max_min(g, w, *full)[1]
            else:
                q, _ = self.inner(g, w, optimistic=optimistic)
                tw = q.max(axis=2)
            residual = np.abs(tw - w).max(axis=1)
            w = tw
            if bar is not None:
                bar.update(1)
            converged = residual <= self.tol * self._scale(w)
            if converged.all() or self.late():
                break
        if self.s_rect:
            pi, _ = self.max_min(g, w, *full)
        else:
            pi = None
        q, P = self.inner(g, w, pi, optimistic=optimistic)
        if pi is None:
            pi = greedy_box(q, *full)
        return Result(w=w, q=q, P=P, iterations=it, residual=residual, converged=converged,
                      policy=pi)

    def evaluate(self, pi: np.ndarray, w=None):
        """Certified robust numbers of policies pi (M, S, A) for the value and every cost.

        Returns a :class:`Result`: ``value`` (M,) a lower bound on the worst-case value,
        ``costs`` (M, K) upper bounds on the worst-case costs, and per objective j (value,
        then costs): ``w`` (M, 1+K, S), ``q`` (M, 1+K, S, A), ``P`` (M, 1+K, S, A, S), the
        residual bounds ``err`` (M, 1+K) and the estimates ``value_estimate``,
        ``costs_estimate`` (p0 . w).
        """
        M, J = pi.shape[0], 1 + self.K
        g = np.broadcast_to(self.objectives(), (M, J, self.S, self.A, self.S))
        g = g.reshape(M * J, self.S, self.A, self.S)
        pis = np.repeat(pi, J, axis=0)
        sol = self.solve(g, pis, pis, w=None if w is None else w.reshape(M * J, self.S),
                         pi=pis)
        est = sol.value.reshape(M, J)
        err = sol.err.reshape(M, J)
        return Result(value=est[:, 0] - err[:, 0], costs=-est[:, 1:] + err[:, 1:],
                      value_estimate=est[:, 0], costs_estimate=-est[:, 1:],
                      w=sol.w.reshape(M, J, self.S), q=sol.q.reshape(M, J, self.S, self.A),
                      P=sol.P.reshape(M, J, self.S, self.A, self.S), err=err)

r"""The upper side of the bracket: Lagrangian bounds and branch and bound over policy boxes.

A box is :math:`B = \{\pi : l \le \pi \le u, \text{rows in the simplex}\}`.  For every
:math:`\lambda \ge 0`

.. math::

    U_B(\lambda) = \max_{\pi \in B} \min_P V_{r - \lambda^\top c}(\pi, P) + \lambda^\top d
    \;\ge\; \max_{\pi \in B,\ \text{robust-feasible}} \min_P V(\pi, P),

because for a robust-feasible :math:`\pi`, :math:`\min_P [V - \lambda^\top C] \ge
\min_P V - \lambda^\top \max_P C \ge \min_P V - \lambda^\top d`.  :math:`U_B` is the
fixed point of :math:`T_B` with reward :math:`r - \lambda^\top c`
(:class:`~rcmdp_exact.robust.engine.RobustGame`), certified by its residual bound.
By Danskin, :math:`\partial U_B / \partial \lambda_k = d_k - C_k(\pi_B, P_B)` at the
maximising pair, and :math:`\lambda` follows sign-gradient steps (the step grows after
a decrease and shrinks otherwise) from the better of the parent's :math:`\lambda` and
:math:`\lambda = 0` (U_B need not be convex in :math:`\lambda`); any
:math:`\lambda \ge 0` gives a valid bound, so a poor :math:`\lambda` costs tightness,
never correctness.

A box is dropped when some constraint cannot be met in it, :math:`\min_{\pi \in B}
\max_P C_k(\pi, P) > d_k` (the same recursion with reward :math:`-c_k`, certified from
below), or when :math:`U_B \le` lower + half the target gap (its bound is kept in the
upper side).  The box of largest :math:`U_B` is split first, at the middle of one
interval :math:`(s, a)`: the one of largest width times the mean loss of bound per
unit width that splitting that coordinate bought so far (pseudocosts,
:mod:`.structure`).  ``upper`` is the largest bound over the open boxes and the boxes
dropped by the bound: a certified upper bound whatever the budget.

**Work, not time.**  The search is bounded by ``max_boxes``; the boxes of a round are
bounded in chunks, serially or on a Dask cluster, and the results are applied in the
order of the chunks whatever the order in which workers finish, so the bracket is the
same either way.  The game's safety net (a time limit) only stops the search early, and
the bracket then says so.  The open boxes are kept in memory: the search also stops
(``stopped = "memory"``, a count, so the same on every machine) once they would pass
:data:`OPEN_BOX_MEMORY`.
"""

from __future__ import annotations

import time

import numpy as np

from .._result import Result
from ..robust.engine import RobustGame
from .local_bound import local_bounds, occupancy_intervals
from .occupancy_bound import OccupancyLP
from .search import Incumbent
from .structure import Pseudocosts

__all__ = ["BOX_BOUNDS", "OPEN_BOX_MEMORY",
           "feasibility_bounds", "lagrangian_bounds",]

#: The bounds a box may add to its Lagrangian bound: the performance-difference bound
#: (:mod:`.local_bound`) and the occupancy LP with McCormick envelopes
#: (:mod:`.occupancy_bound`); both keep one adversary per objective.  Both by default
#: on models of more than 3 states (:data:`~.bracket.SMALL_STATES`).
BOX_BOUNDS = ("local", "lp")
#: The memory the open boxes of a branch and bound may hold (their policy bounds, the
#: parents' occupancy values they start from, their LP bases): 2 GiB.
OPEN_BOX_MEMORY = 2 * 2**30


def _open_box_bytes(S: int, A: int, K: int, split_point: str = "middle") -> int:
    """The memory one open box holds, about: its bounds lo, hi (S, A), lam and step (K,),
    U, the occupancies and values (S,), the occupancy values its children start from,
    (1 + K, 2, S, S) float32, an LP basis (a byte per column and row), and with
    ``split_point="lp"`` its LP policy (S, A)."""
    n = S * A
    lp = n * (2 + K) + 1 + S + (1 + K) * (S + 4 * n + 1)
    point = n if split_point == "lp" else 0
    return 8 * (2 * n + point + 2 * K + 1 + 2 * S) + 4 * (1 + K) * 2 * S * S + lp + 512


def lagrangian_bounds(game: RobustGame, lo, hi, lam, w=None) -> Result:
    r"""Certified :math:`U_B(\lambda)` of boxes (J, S, A) at multipliers (J, K).

    Returns ``U`` (J,), ``pi`` (J, S, A) maximisers, ``grad`` (J, K) =
    :math:`d - C(\pi_B, P_B)`, ``occ`` (J, S) occupancies under the maximising pair,
    ``w`` (J, S).
    """
    sol = game.solve(game.lagrangian(lam), lo, hi, w=w)
    U = sol["value"] + sol["err"] + lam @ game.d_bound + game.rounding(1.0 + lam.sum(axis=1))
    P, pi = sol["P"], sol["pi"]
    grad = game.d - game.numbers(P, pi)[1]
    return Result(U=U, pi=pi, grad=grad, occ=game.occupancy(P, pi), w=sol["w"])


def feasibility_bounds(game: RobustGame, lo, hi) -> np.ndarray:
    r"""Certified lower bounds (J, K) on :math:`\min_{\pi \in B} \max_P C_k(\pi, P)`."""
    J, K = lo.shape[0], game.K
    g = np.broadcast_to(-game.C, (J, K, game.S, game.A, game.S)).reshape(J * K, game.S,
                                                                         game.A, game.S)
    sol = game.solve(g, np.repeat(lo, K, axis=0), np.repeat(hi, K, axis=0))
    return -(sol["value"] + sol["err"]).reshape(J, K) - game.rounding(1.0)


def improve_lam(game: RobustGame, lo, hi, lam, delta, n_steps: int, bounds: Result):
    """Sign steps on lam for each box (Rprop); keeps the best bound of each box.

    Each coordinate moves by ``delta`` against the sign of its Danskin slope; after a
    decrease of the bound its step grows by 1.5 (or halves if the slope changed sign),
    otherwise the step halves and lam stays.  Returns (bounds, lam, delta).
    """
    best, lam, delta = bounds, lam.copy(), delta.copy()
    for _ in range(n_steps if game.K else 0):
        if game.late():
            break
        sign = np.sign(best.grad)
        trial = np.maximum(lam - delta * sign, 0.0)
        new = lagrangian_bounds(game, lo, hi, trial, w=best.w)
        down = new.U < best.U
        same = np.sign(new.grad) == sign
        delta = np.where(down[:, None] & same, 1.5 * delta, 0.5 * delta)
        lam = np.where(down[:, None], trial, lam)
        for key in best:
            best[key] = np.where(down.reshape(-1, *([1] * (best[key].ndim - 1))), new[key],
                                 best[key])
    return best, lam, delta


def _start_bounds(game, lo, hi, lam, w=None):
    """Bounds at the parent's lam and at lam = 0 (one batch); the better of each box."""
    J = lo.shape[0]
    w2 = None if w is None else np.concatenate([w, w])
    both = lagrangian_bounds(game, np.concatenate([lo, lo]), np.concatenate([hi, hi]),
                             np.concatenate([lam, np.zeros_like(lam)]), w=w2)
    zero = both.U[J:] < both.U[:J]
    pick = np.where(zero, np.arange(J, 2 * J), np.arange(J))
    return Result({key: val[pick] for key, val in both.items()}), np.where(
        zero[:, None], 0.0, lam)


_LPS: dict = {}


def _box_lp(game: RobustGame) -> OccupancyLP:
    """One LP builder (and HiGHS instance) per game and process."""
    key = id(game)
    if key not in _LPS or _LPS[key][0] is not game:
        for old in [k for k in _LPS if _LPS[k][0] is not game]:
            del _LPS[old]
        _LPS[key] = (game, OccupancyLP(game))
    return _LPS[key][1]


def _lp_bound(game: RobustGame, olp: OccupancyLP, lo, hi, kernels, dlo, dhi, carried):
    r"""The occupancy-LP bound of one box (S, A) with one kernel per objective.

    ``kernels`` (1 + K, S, A, S): the worst cases of the box's maximiser, with their
    occupancy intervals ``dlo``, ``dhi``; ``carried``: the parent's ``{"highs": basis}``
    (or None), a warm start that changes only the speed.  Returns (the certified bound,
    ``{"highs": its basis}`` for the children).
    """
    highs = None if carried is None else carried.get("highs")
    u, b = olp.bound(lo, hi, kernels, dlo, dhi, basis=highs)
    # an LP without duals bounds nothing: its children start from the parent's basis
    return u, {"highs": b if u < np.inf else highs}


def _occupancy_start(base, n: int, S: int):
    """The values (J, n, 2, S, S) of the parents' occupancy problems (zeros, the cold
    start, where a parent has none), or None when no parent has them."""
    have = [b is not None and b.get("occ") is not None and b["occ"].shape == (n, 2, S, S)
            for b in base]
    if not any(have):
        return None
    out = np.zeros((len(base), n, 2, S, S))
    for i, ok in enumerate(have):
        if ok:
            out[i] = base[i]["occ"]
    return out


def bound_boxes(game: RobustGame, lo, hi, lam, step, w, basis, threshold: float, *,
                bounds=BOX_BOUNDS, n_lam_steps: int = 0) -> dict:
    r"""Certified upper bounds of boxes (J, S, A), each from its parent's data.

    A pure function of its arguments (the same numbers in any process), run on chunks
    of the children of a round, serially or on a Dask cluster:

    1. drop the boxes where some constraint cannot be met (:func:`feasibility_bounds`);
    2. the Lagrangian bound at the parent's ``lam`` and at 0, then ``n_lam_steps`` sign
       steps (:func:`improve_lam`), the fixed points started from the parent's values
       ``w`` (J, S) (or None);
    3. the robust evaluation of each box's maximiser (a candidate for the lower side; its
       worst-case kernels are the kernels of the next bounds);
    4. with ``"local"`` in ``bounds``, the performance-difference bound
       (:func:`~.local_bound.local_bounds`); with ``"lp"``, for the boxes whose bound is
       still above ``threshold``, the occupancy LP (:func:`_lp_bound`, from the parent's
       ``basis``: a list of J ``{"highs": basis, "occ": occupancy values}`` or None).

    Returns a dict: ``ok`` (J,) the boxes kept, and for those: ``U``, ``lam``, ``step``,
    ``w``, ``occ`` (occupancies under the maximising pair), ``pi`` (maximisers),
    ``value``, ``costs`` (their certified robust numbers), ``basis``, ``lp_pi`` (the
    occupancy LP's policy, nan where no LP gave one: a split point,
    :mod:`.structure`).
    """
    J = lo.shape[0]
    ok = np.ones(J, dtype=bool)
    if game.K:
        ok = np.all(feasibility_bounds(game, lo, hi) <= game.d_bound, axis=1)
    out = {"ok": ok}
    idx = np.flatnonzero(ok)
    if not idx.size:
        return out
    lo, hi, lam, step = lo[idx], hi[idx], lam[idx], step[idx]
    w = None if w is None else w[idx]
    if game.K:
        first, lam = _start_bounds(game, lo, hi, lam, w)
    else:
        first = lagrangian_bounds(game, lo, hi, lam, w=w)
    res, lam, step = improve_lam(game, lo, hi, lam, step, n_lam_steps, first)
    U = res.U.copy()
    ev = game.evaluate(res.pi)
    base = [None if basis is None else basis[i] for i in idx]
    new_basis = list(base)
    lp_pi = np.full(lo.shape, np.nan)
    if {"local", "lp"} & set(bounds) and np.isfinite(U).any():
        n = 1 + game.K
        dlo, dhi, occ_v = occupancy_intervals(game, ev["P"], lo, hi,
                                              start=_occupancy_start(base, n, game.S),
                                              values=True)
        if occ_v is not None:  # the children start their occupancy problems from these
            occ_v = occ_v.astype(np.float32)
            new_basis = [dict(b or {}, occ=occ_v[i]) for i, b in enumerate(base)]
        if "local" in bounds:
            U = np.minimum(U, local_bounds(game, lo, hi, ev, dlo, dhi).U)
        if "lp" in bounds:
            olp = _box_lp(game)
            for i in np.flatnonzero(U > threshold):
                u, b = _lp_bound(game, olp, lo[i], hi[i],
                                ev["P"][i].reshape(n, *ev["P"].shape[2:]), dlo[i], dhi[i],
                                base[i])
                U[i] = min(U[i], u)
                new_basis[i] = dict(new_basis[i] or {}, **b)
                if olp.last is not None:
                    lp_pi[i] = olp.last
    out.update(U=U, lam=lam, step=step, w=res.w, occ=res.occ, pi=res.pi,
               value=ev["value"], costs=ev["costs"], basis=new_basis, lp_pi=lp_pi)
    return out


def _chunk_job(recipe, lo, hi, lam, step, w, basis, threshold, bounds, n_lam_steps):
    """:func:`bound_boxes` on a worker, with the game of ``recipe``."""
    return bound_boxes(recipe.game(), lo, hi, lam, step, w, basis, threshold, bounds=bounds,
                       n_lam_steps=n_lam_steps)


_FIELDS = ("lo", "hi", "lam", "step", "U", "occ", "w", "pt")


class _Open:
    """The open boxes, as arrays, with their LP bases (a list); ``pt`` (n, S, A) the
    points their splits take (``split_point="lp"``: the box's LP policy), (n, 0)
    otherwise."""

    def __init__(self, **arrays):
        for key in _FIELDS:
            setattr(self, key, arrays[key])
        self.basis = list(arrays["basis"])

    def keep(self, mask):
        for key in _FIELDS:
            setattr(self, key, getattr(self, key)[mask])
        self.basis = [b for b, m in zip(self.basis, mask, strict=True) if m]

    def add(self, other: _Open):
        for key in _FIELDS:
            setattr(self, key, np.concatenate([getattr(self, key), getattr(other, key)]))
        self.basis += other.basis


def _set_payload(uset) -> bytes:
    """The set as it travels to a worker: the bytes of its own ``save`` (``.npz``, no
    pickle), read back by :func:`_rebuild_game`."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        return Path(uset.save(Path(tmp) / "set.npz")).read_bytes()


def _rebuild_game(model, payload: bytes, tol, max_iter, inner, d, compiled=True):
    """The game a worker uses (see :class:`_GameRecipe`)."""
    import tempfile
    from pathlib import Path

    from ..uncertainty import load_set

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "set.npz"
        path.write_bytes(payload)
        uset = load_set(path)
    return RobustGame(model, uset, tol=tol, max_iter=max_iter, inner=inner, d=d,
                      compiled=compiled)


class _GameRecipe:
    """What a worker needs to rebuild the game: the model, the set, the settings, the
    budgets (no safety net: the caller keeps time).  The game is built once per
    process, on first use, and never travels."""

    def __init__(self, model, game: RobustGame):
        self.args = (model, _set_payload(game.uset), game.tol, game.max_iter,
                     game.inner_method, np.array(game.d), game.compiled)
        self.built = None

    def __getstate__(self):
        return {"args": self.args, "built": None}

    def game(self) -> RobustGame:
        if self.built is None:
            self.built = _rebuild_game(*self.args)
        return self.built


class _Runner:
    """Runs the chunks of a round, serially or on a Dask client, in a fixed order."""

    def __init__(self, game, client, bounds, n_lam_steps, model=None,
                 split_point="middle"):
        self.game, self.client = game, client
        self.split_point = split_point
        self.bounds, self.n_lam_steps = tuple(bounds), n_lam_steps
        self.remote = None
        if client is not None:
            self.remote = client.scatter(_GameRecipe(model, game), broadcast=True,
                                         hash=False)

    def run(self, chunks) -> list:
        """Results of the chunks, in their order whatever the order in which workers
        finish (None for a chunk not run because the safety net expired)."""
        if self.client is None:
            out = []
            for args in chunks:
                if self.game.late():
                    out.append(None)
                    continue
                out.append(bound_boxes(self.game, *args, bounds=self.bounds,
                                       n_lam_steps=self.n_lam_steps))
            return out
        futs = [self.client.submit(_chunk_job, self.remote, *args, self.bounds,
                                   self.n_lam_steps, pure=False)
                for args in chunks]
        net = self.game.net
        _wait(futs, None if net is None else net.remaining())
        out = []
        for f in futs:
            if f.status == "finished":
                out.append(f.result())
            elif f.status == "error":  # a worker's failure is the caller's
                f.result()
                raise RuntimeError(f"a chunk of boxes failed on a Dask worker: {f!r}")
            elif net is None or net.deadline is None:  # no time limit: a lost chunk
                raise RuntimeError(f"a chunk of boxes did not finish on the Dask cluster "
                                   f"(status {f.status!r}): {f!r}")
            else:  # not finished when the safety net expired
                f.cancel()
                out.append(None)
                net.trip("the branch and bound (Dask workers)")
        return out


def _wait(futures, timeout) -> None:
    """Wait for every future of a round, at most ``timeout`` seconds (None: no limit)."""
    from distributed import wait

    try:
        wait(futures, timeout=timeout, return_when="ALL_COMPLETED")
    except TimeoutError:  # the futures not finished are read as such by the caller
        pass


def _points(runner, boxes: _Open, take, incumbent):
    """The policies whose values split the boxes ``take`` (``runner.split_point``), or
    None (the middle)."""
    if runner.split_point == "lp":
        return boxes.pt[take]
    if runner.split_point == "incumbent" and incumbent is not None:
        return np.broadcast_to(incumbent, boxes.lo[take].shape)
    return None


def _point_field(runner, res_pt, n: int, shape):
    """The ``pt`` of n new boxes: their LP policies with ``split_point="lp"``, else an
    empty (n, 0) array."""
    if runner.split_point != "lp":
        return np.zeros((n, 0))
    return np.full((n, *shape), np.nan) if res_pt is None else res_pt


def _children(runner, boxes: _Open, take, *, threshold, lam_unit, chunk, incumbent=None):
    """Split the boxes ``take`` and bound the children; a new _Open and the number of
    children.  Children whose chunk did not run (the safety net expired) keep their
    parent's bound (valid: a child is a subset of its parent).  ``incumbent``: the lower
    side's policy (a split point with ``split_point="incumbent"``)."""
    # the split rule: pseudocosts (structure.py), at the point of runner.split_point
    pseudo = runner.pseudo
    lo, hi, parent, ok = pseudo.split(boxes.lo[take], boxes.hi[take], boxes.occ[take],
                                      boxes.U[take],
                                      points=_points(runner, boxes, take, incumbent))
    kids_of = np.flatnonzero(ok)  # each bounded child's place among all children
    child_U = np.where(ok, np.nan, -np.inf)
    lo, hi, parent = lo[ok], hi[ok], take[parent[ok]]
    n = lo.shape[0]
    if not n:
        pseudo.update(child_U, threshold)
        return None, [], 0
    lam = boxes.lam[parent]
    step = np.maximum(boxes.step[parent], 0.01 * np.maximum(lam, lam_unit))
    w = boxes.w[parent]
    basis = [boxes.basis[p] for p in parent]
    cuts = list(range(0, n, chunk))
    chunks = [(lo[a:a + chunk], hi[a:a + chunk], lam[a:a + chunk], step[a:a + chunk],
               w[a:a + chunk], basis[a:a + chunk], threshold) for a in cuts]
    results = runner.run(chunks)
    parts, found = [], []
    for a, res in zip(cuts, results, strict=True):
        sl = slice(a, a + chunk)
        if res is None:  # not bounded (the safety net): the parent's bound holds
            p = parent[sl]
            parts.append(dict(lo=lo[sl], hi=hi[sl], lam=lam[sl], step=step[sl],
                              U=boxes.U[p], occ=boxes.occ[p], w=w[sl], basis=basis[sl],
                              pt=_point_field(runner, None, p.size, lo.shape[1:])))
            continue
        keep = res["ok"]
        child_U[kids_of[sl]] = -np.inf  # for the pseudocosts: dropped, or its bound below
        child_U[kids_of[sl][keep]] = res["U"] if keep.any() else []
        if keep.any():
            # a child is a subset of its parent: the parent's bound holds for it too
            U = np.minimum(res["U"], boxes.U[parent[sl][keep]])
            parts.append(dict(lo=lo[sl][keep], hi=hi[sl][keep], lam=res["lam"],
                              step=res["step"], U=U, occ=res["occ"], w=res["w"],
                              basis=res["basis"],
                              pt=_point_field(runner, res.get("lp_pi"), int(keep.sum()),
                                              lo.shape[1:])))
            found.append(res)
    pseudo.update(child_U, threshold)  # the gains of this round's splits
    if not parts:
        return None, found, n
    merged = {key: np.concatenate([p[key] for p in parts]) for key in _FIELDS}
    merged["basis"] = [b for p in parts for b in p["basis"]]
    return _Open(**merged), found, n


def branch_and_bound(game: RobustGame, inc: Incumbent, lam0, *, lam_unit: float,
                     max_boxes: int, gap_tol, batch: int = 32,
                     chunk: int = 16, n_lam_steps: int | None = None, bounds=BOX_BOUNDS,
                     client=None, bar=None, t0: float | None = None, state=None,
                     model=None, scale_of=None, split_point: str = "middle") -> Result:
    """Best-first branch and bound from the full box at ``lam0``; feeds ``inc``.

    ``lam_unit``: a typical size of lam; a box's lam step is at least 1% of
    max(lam, lam_unit).  ``gap_tol(lower)``: the target gap at the incumbent's value.
    Each round splits the ``batch`` boxes of largest bound and bounds their children in
    chunks of ``chunk`` (:func:`bound_boxes`), serially or on the Dask ``client``; the
    chunks are the same and are merged in the same order either way, so the result is
    the same for the same box budget.  ``n_lam_steps``: sign steps on lam per child
    (default 2 with the Lagrangian bound alone, 0 with the other bounds).

    Returns ``upper`` (certified), ``boxes`` (bounded), ``open_boxes``, ``closed``
    (the target gap was reached, or no box is left), ``stopped`` ("gap", "boxes",
    "memory": the open boxes would pass :data:`OPEN_BOX_MEMORY`, "time": the game's
    safety net, or "empty"), ``trace`` (rounds, 4): seconds, boxes, lower, upper, and
    ``state``: pass it back as ``state`` (with a larger ``max_boxes``) to go on from
    where this call stopped (the boxes count on).  ``scale_of(lower)``: the denominator
    of the relative gap the progress bar shows (default max(1, |lower|)).
    ``split_point``: where a chosen interval is split (:data:`.structure.SPLIT_POINTS`:
    its middle, the box's LP policy, the incumbent's policy; the order of the search
    only).
    """
    S, A = game.S, game.A
    t0 = time.perf_counter() if t0 is None else t0
    if n_lam_steps is None:
        n_lam_steps = 2
    runner = _Runner(game, client, bounds, n_lam_steps, model, split_point=split_point)
    runner.pseudo = Pseudocosts(S, A)
    runner.scale_of = scale_of or (lambda v: max(1.0, abs(v)))
    runner.box_bytes = _open_box_bytes(S, A, game.K, split_point)
    if state is not None:
        boxes, pruned, n_boxes, trace = state
        runner.pseudo = boxes.pseudo  # the pseudocosts' records go on
        return _search(runner, inc, boxes, pruned, n_boxes, trace, lam_unit=lam_unit,
                       max_boxes=max_boxes, gap_tol=gap_tol, batch=batch,
                       chunk=chunk, bar=bar, t0=t0)
    lam = np.asarray(lam0, dtype=np.float64).reshape(1, game.K)
    step = 0.1 * np.maximum(lam, lam_unit)
    root = bound_boxes(game, np.zeros((1, S, A)), np.ones((1, S, A)), lam, step, None,
                       None, inc.value + 0.5 * gap_tol(inc.value), bounds=bounds,
                       n_lam_steps=n_lam_steps)
    n_boxes = 1
    if bar is not None:
        bar.update(1)
    if root["ok"][0]:
        inc.take(root["pi"], root["value"], root["costs"], "branch and bound")
        boxes = _Open(lo=np.zeros((1, S, A)), hi=np.ones((1, S, A)), lam=root["lam"],
                      step=root["step"], U=root["U"], occ=root["occ"], w=root["w"],
                      basis=root["basis"],
                      pt=_point_field(runner, root.get("lp_pi"), 1, (S, A)))
    else:
        boxes = _Open(lo=np.zeros((0, S, A)), hi=np.zeros((0, S, A)),
                      lam=np.zeros((0, game.K)), step=np.zeros((0, game.K)), U=np.zeros(0),
                      occ=np.zeros((0, S)), w=np.zeros((0, S)), basis=[],
                      pt=_point_field(runner, None, 0, (S, A)))
    return _search(runner, inc, boxes, -np.inf, n_boxes, [], lam_unit=lam_unit,
                   max_boxes=max_boxes, gap_tol=gap_tol, batch=batch,
                   chunk=chunk, bar=bar, t0=t0)


def _search(runner, inc, boxes: _Open, pruned, n_boxes, trace, *, lam_unit, max_boxes,
            gap_tol, batch, chunk, bar, t0) -> Result:
    """The rounds of :func:`branch_and_bound` from the open ``boxes``."""
    stopped = "empty"
    while boxes.U.size:
        tol = gap_tol(inc.value)
        drop = boxes.U <= inc.value + 0.5 * tol
        pruned = max(pruned, float(boxes.U[drop].max(initial=-np.inf)))
        boxes.keep(~drop)
        upper = max(float(boxes.U.max(initial=-np.inf)), pruned)
        trace.append((time.perf_counter() - t0, n_boxes, inc.value, upper))
        if bar is not None:
            gap = upper - inc.value
            scale = runner.scale_of(inc.value)
            rel = gap / scale if scale > 0 else np.inf
            bar.set_postfix_str(f"lower {inc.value:.8g} upper {upper:.8g} gap {gap:.3g} "
                                f"({rel:.2e} relative)", refresh=False)
        if not boxes.U.size:
            break
        if upper - inc.value <= tol:
            stopped = "gap"
            break
        if n_boxes >= max_boxes:
            stopped = "boxes"
            break
        if boxes.U.size * runner.box_bytes > OPEN_BOX_MEMORY:
            stopped = "memory"
            break
        if runner.game.late():
            stopped = "time"
            break
        take = np.argsort(-boxes.U, kind="stable")[:batch]
        kids, found, n_new = _children(runner, boxes, take, lam_unit=lam_unit, chunk=chunk,
                                       threshold=inc.value + 0.5 * tol,
                                       incumbent=inc.policy)
        boxes.keep(np.isin(np.arange(boxes.U.size), take, invert=True))
        for res in found:
            inc.take(res["pi"], res["value"], res["costs"], "branch and bound")
        if kids is not None:
            boxes.add(kids)
        n_boxes += n_new
        if bar is not None:
            bar.update(n_new)
    if bar is not None:
        bar.refresh()  # the last bounds drawn once, however fast the search (tqdm draws
        # at most every 0.1 s)
    upper = max(float(boxes.U.max(initial=-np.inf)), pruned)
    trace.append((time.perf_counter() - t0, n_boxes, inc.value, upper))
    boxes.pseudo = runner.pseudo  # the pseudocosts' records, kept in the state
    return Result(upper=upper, boxes=n_boxes, open_boxes=int(boxes.U.size),
                  closed=bool(upper - inc.value <= gap_tol(inc.value) or not boxes.U.size),
                  stopped=stopped, trace=np.array(trace, dtype=np.float64).reshape(-1, 4),
                  state=(boxes, pruned, n_boxes, trace))

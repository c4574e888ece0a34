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
interval :math:`(s, a)`: by default the one of largest width times the mean loss of
bound per unit width that splitting that coordinate bought so far (pseudocosts,
:mod:`.structure`); with ``branching="occupancy"`` the one of largest width times the
occupancy of s under the box's maximising pair.  ``upper`` is the largest bound over
the open boxes and the boxes dropped by the bound: a certified upper bound whatever
the budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._result import Result
from ..robust.engine import RobustGame
from .local_bound import local_bounds, occupancy_intervals
from .occupancy_bound import OccupancyLP
from .search import Incumbent
from .structure import Pseudocosts, ValueFormLP, value_intervals

__all__ = ["BOX_BOUNDS", "BOX_BOUND_CHOICES", "BRANCHING_RULES", "KERNEL_ROUNDS", "BoxRules",
           "bound_boxes", "branch_and_bound", "feasibility_bounds", "lagrangian_bounds",
           "lp_bound", "split_boxes", "tighten"]

#: The bounds a box adds to its Lagrangian bound by default: the performance-difference
#: bound (:mod:`.local_bound`) and the occupancy LP with McCormick envelopes
#: (:mod:`.occupancy_bound`); both keep one adversary per objective.
BOX_BOUNDS = ("local", "lp")
#: Every bound a box may add: those of :data:`BOX_BOUNDS` and the value-form LP
#: (:class:`~.structure.ValueFormLP`, each objective with its exact adversary; L1 balls
#: only, elsewhere it bounds nothing), off by default (docs/ground_truth.md, 3.9).
BOX_BOUND_CHOICES = ("local", "lp", "value")


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


def tighten(lo: np.ndarray, hi: np.ndarray):
    """The tightest bounds of boxes intersected with the simplex; (lo, hi, non-empty)."""
    slo, shi = lo.sum(axis=-1, keepdims=True), hi.sum(axis=-1, keepdims=True)
    new_lo = np.maximum(lo, 1.0 - (shi - hi))
    new_hi = np.minimum(hi, 1.0 - (slo - lo))
    ok = (new_lo <= new_hi + 1e-15).all(axis=(1, 2))
    return new_lo, np.maximum(new_hi, new_lo), ok


def split_boxes(lo, hi, occ):
    """Split each box on the interval of largest width x weight, at its middle.

    The weight of a state is its occupancy plus 10% of the largest occupancy of the box.

    Returns the children (2n, S, A) lo, hi, the index of each child's parent (2n,) and
    a mask of the non-empty children.
    """
    n, S, A = lo.shape
    weight = occ + 0.1 * occ.max(axis=1, keepdims=True)  # every state is split in the end
    score = (hi - lo) * weight[..., None]
    flat = np.argmax(score.reshape(n, S * A), axis=1)
    from .structure import split_on

    return split_on(lo, hi, flat // A, flat % A)


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


def _box_lp(game: RobustGame, kind=OccupancyLP):
    """One LP builder (and HiGHS instance) of each kind per game and process."""
    key = (id(game), kind)
    if key not in _LPS or _LPS[key][0] is not game:
        for old in [k for k in _LPS if _LPS[k][0] is not game]:
            del _LPS[old]
        _LPS[key] = (game, kind(game))
    return _LPS[key][1]


#: Kernels a box keeps per objective, beyond its maximiser's, for its children's LPs.
POOL = 2
#: Cutting-plane rounds of the occupancy LP (:func:`lp_bound`) on a box.  0 by default:
#: within a time limit the rounds lose (RiverSwim-6 in 60 s: a gap of 51% with two
#: rounds, 25% without; RiverSwim-20 in 600 s: 26% and 23%); at a box budget they win
#: (RiverSwim-6 at 8,000 boxes: upper 0.2103 with two, 0.2334 without).  docs/ground_truth.md
#: section 3.9.
KERNEL_ROUNDS = 0
#: The split rules of :func:`branch_and_bound` (:attr:`BoxRules.branching`).
BRANCHING_RULES = ("pseudocost", "occupancy")


@dataclass(frozen=True)
class BoxRules:
    """How the branch and bound bounds and splits its boxes: one value, passed whole to
    every chunk of boxes (on this process or a Dask worker), so a worker bounds with the
    rules of the caller.

    kernel_rounds : int
        Cutting-plane rounds of the occupancy LP (:func:`lp_bound`) on a box
        (:data:`KERNEL_ROUNDS`).
    round_width : float
        The rounds run only on boxes whose widest interval is at most this (inf: on every
        box).  Wide boxes are split anyway; on narrow ones the cost's adversary switching
        inside the box is what the one-kernel LP misses (docs/ground_truth.md, 3.9).
    lazy_kernels : bool
        Each box's last LP policy passes its worst-case kernels to the children's LPs
        (:func:`lp_bound`'s ``lazy``).
    branching : {"pseudocost", "occupancy"}
        The split rule: "pseudocost" (:class:`~.structure.Pseudocosts`: the coordinate
        whose splits lowered the bound most per unit width; RiverSwim-6 at 10,000 boxes:
        a gap of 7.4% for 13.9% with "occupancy"; machine replacement closed in 3,175
        boxes for 7,255; docs/ground_truth.md section 3.9) or "occupancy"
        (:func:`split_boxes`: width times the occupancy under the box's maximising pair).

    A user sets them through :class:`~.bracket.BracketSettings`, which validates them
    with messages that say how to fix them; here an unknown split rule is refused too.
    """

    kernel_rounds: int = KERNEL_ROUNDS
    round_width: float = np.inf
    lazy_kernels: bool = False
    branching: str = "pseudocost"

    def __post_init__(self):
        if self.branching not in BRANCHING_RULES:
            raise ValueError(f"branching must be one of {BRANCHING_RULES}, not "
                             f"{self.branching!r}")


def _pool_add(pool, objs, kernels, intervals=None):
    """The pool (objectives (p,), kernels (p, S, A, S)) with new kernels added; at most
    :data:`POOL` per objective, the newest kept.  With ``intervals`` (low, high), each
    (p, S), certified occupancy intervals of the kernels over a box that contains the
    children (lazy kernels), the pool carries them: (objectives, kernels, low, high)."""
    parts = [objs, kernels] + ([] if intervals is None else list(intervals))
    if pool is not None and len(pool) == len(parts):
        parts = [np.concatenate([a, b]) for a, b in zip(pool, parts, strict=True)]
    o = parts[0]
    keep = np.zeros(o.size, dtype=bool)
    for j in np.unique(o):
        keep[np.flatnonzero(o == j)[-POOL:]] = True
    return tuple(a[keep] for a in parts)


def lp_bound(game: RobustGame, olp: OccupancyLP, lo, hi, kernels, dlo, dhi, carried,
             rounds: int = 2, threshold: float = -np.inf, lazy: bool = False):
    r"""The occupancy-LP bound of one box (S, A) with several kernels per objective.

    Starts from ``kernels`` (1 + K, S, A, S) (the worst cases of the box's maximiser,
    with their occupancy intervals ``dlo``, ``dhi``) and the kernels the box inherited
    (``carried``: its parent's ``{"highs": basis, "pool": (objectives, kernels)}``, or
    None).  Then, up to ``rounds`` times while the bound is above ``threshold``: the
    LP's own policy is robustly evaluated, and every objective whose worst-case kernel
    there is worse than all its kernels in the LP (a cost higher, the value lower)
    gets that kernel too (a cutting plane: every kernel of the set gives a valid
    relaxation, and the worst-case cost is convex where its adversary switches, so one
    kernel alone misses it to first order in the box's width).  Every LP solved is a
    certified bound; the smallest is returned, with ``{"highs": its basis, "pool":
    the kernels added}`` for the children.  ``lazy``: after the last LP, its policy's
    worst-case kernels that would have been added go to the pool without another LP,
    with their occupancy intervals over this box, which hold for every sub-box: the
    children's LPs start with them and compute no intervals for them (one robust
    evaluation and the intervals of at most 1 + K kernels per box, instead of an LP
    and a set of intervals per round and per child).
    """
    n = 1 + game.K
    objs = np.arange(n)
    pool = None if carried is None else carried.get("pool")
    highs = None if carried is None else carried.get("highs")
    Ks, Ls, Hs = [kernels], [dlo], [dhi]
    if pool is not None and pool[0].size:
        if len(pool) == 4:  # lazy kernels: intervals of a box containing this one
            plo, phi = pool[2][None], pool[3][None]
        else:
            plo, phi = occupancy_intervals(game, pool[1][None], lo[None], hi[None])
        objs = np.concatenate([objs, pool[0]])
        Ks.append(pool[1])
        Ls.append(plo[0])
        Hs.append(phi[0])
    best, best_basis = np.inf, highs
    tol = 1e-9 * game.scale
    for r in range(rounds + 1):
        allK = np.concatenate(Ks)
        u, b = olp.bound(lo, hi, allK, np.concatenate(Ls), np.concatenate(Hs),
                         basis=highs, objectives=objs)
        if u < best:
            best, best_basis = u, b
        final = r == rounds  # lazy kernels: a last cut for the children only
        if (final and not lazy) or olp.last is None or best <= threshold or game.late():
            break
        pi = np.clip(olp.last, lo, hi)
        sums = pi.sum(axis=1, keepdims=True)
        if not (sums > 0.0).all():
            break
        pi = pi / sums  # a policy of the box up to the solver's tolerance; any policy will do
        ev = game.evaluate(pi[None])
        P_new = ev["P"][0]
        vals, costs = game.numbers(allK, np.broadcast_to(pi, (allK.shape[0], *pi.shape)))
        add = []
        for j in range(n):
            mine = objs == j
            if j == 0:
                if ev["value_estimate"][0] < vals[mine].min() - tol:
                    add.append(j)
            elif ev["costs_estimate"][0, j - 1] > costs[mine, j - 1].max() + tol:
                add.append(j)
        if not add:
            break
        add = np.array(add)
        if final:  # lazy kernels: no LP now; the children's LPs get the kernels
            # with their intervals over this box (valid for every sub-box)
            nlo, nhi = occupancy_intervals(game, P_new[add][None], lo[None], hi[None])
            pool = _pool_add(pool if pool is None or len(pool) == 4 else None, add,
                             P_new[add], (nlo[0], nhi[0]))
            break
        nlo, nhi = occupancy_intervals(game, P_new[add][None], lo[None], hi[None])
        objs = np.concatenate([objs, add])
        Ks.append(P_new[add])
        Ls.append(nlo[0])
        Hs.append(nhi[0])
        pool = _pool_add(pool, add, P_new[add])
        highs = None  # another shape
    # a basis of another shape than the children's LPs is ignored there
    return best, {"highs": best_basis, "pool": pool}


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
                bounds=BOX_BOUNDS, n_lam_steps: int = 0, rules: BoxRules = BoxRules()) -> dict:
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
       still above ``threshold``, the occupancy LP (:func:`lp_bound`, from the parent's
       ``basis``: a list of J ``{"highs": basis, "pool": kernels}`` or None), with the
       kernel rounds of ``rules`` (:class:`BoxRules`); with ``"value"``, for the boxes
       still above ``threshold``, the value-form LP (:class:`~.structure.ValueFormLP`).

    Returns a dict: ``ok`` (J,) the boxes kept, and for those: ``U``, ``lam``, ``step``,
    ``w``, ``occ`` (occupancies under the maximising pair), ``pi`` (maximisers),
    ``value``, ``costs`` (their certified robust numbers), ``basis``.
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
                narrow = (hi[i] - lo[i]).max() <= rules.round_width
                u, b = lp_bound(game, olp, lo[i], hi[i],
                                ev["P"][i].reshape(n, *ev["P"].shape[2:]), dlo[i], dhi[i],
                                base[i], rounds=rules.kernel_rounds if narrow else 0,
                                threshold=threshold, lazy=rules.lazy_kernels)
                U[i] = min(U[i], u)
                new_basis[i] = dict(new_basis[i] or {}, **b)
    if "value" in bounds and (U > threshold).any():
        vlp = _box_lp(game, ValueFormLP)
        high = np.flatnonzero(U > threshold)
        wlo, whi = value_intervals(game, lo[high], hi[high])
        for j, i in enumerate(high):
            U[i] = min(U[i], vlp.bound(lo[i], hi[i], wlo[j], whi[j]))
    out.update(U=U, lam=lam, step=step, w=res.w, occ=res.occ, pi=res.pi,
               value=ev["value"], costs=ev["costs"], basis=new_basis)
    return out


def _chunk_job(recipe, lo, hi, lam, step, w, basis, threshold, bounds, n_lam_steps,
               rules: BoxRules):
    """:func:`bound_boxes` on a worker, with the game of ``recipe`` and the caller's
    ``rules``."""
    return bound_boxes(recipe.game(), lo, hi, lam, step, w, basis, threshold, bounds=bounds,
                       n_lam_steps=n_lam_steps, rules=rules)


_FIELDS = ("lo", "hi", "lam", "step", "U", "occ", "w")


class _Open:
    """The open boxes, as arrays, with their LP bases (a list)."""

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
                 rules: BoxRules = BoxRules()):
        self.game, self.client, self.rules = game, client, rules
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
                                       n_lam_steps=self.n_lam_steps, rules=self.rules))
            return out
        futs = [self.client.submit(_chunk_job, self.remote, *args, self.bounds,
                                   self.n_lam_steps, self.rules, pure=False)
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
            else:  # not finished when the safety net expired
                f.cancel()
                out.append(None)
                if net is not None:
                    net.trip("the branch and bound (Dask workers)")
        return out


def _wait(futures, timeout) -> None:
    """Wait for every future of a round, at most ``timeout`` seconds (None: no limit)."""
    from distributed import wait

    try:
        wait(futures, timeout=timeout, return_when="ALL_COMPLETED")
    except TimeoutError:  # the futures not finished are read as such by the caller
        pass


def _children(runner, boxes: _Open, take, *, threshold, lam_unit, chunk):
    """Split the boxes ``take`` and bound the children; a new _Open and the number of
    children.  Children whose chunk did not run (the safety net expired) keep their
    parent's bound (valid: a child is a subset of its parent)."""
    # the split rule (pseudocosts, structure.py, or width x occupancy)
    pseudo = getattr(runner, "pseudo", None)
    if pseudo is not None:
        lo, hi, parent, ok = pseudo.split(boxes.lo[take], boxes.hi[take], boxes.occ[take],
                                          boxes.U[take])
    else:
        lo, hi, parent, ok = split_boxes(boxes.lo[take], boxes.hi[take], boxes.occ[take])
    kids_of = np.flatnonzero(ok)  # each bounded child's place among all children
    child_U = np.where(ok, np.nan, -np.inf)
    lo, hi, parent = lo[ok], hi[ok], take[parent[ok]]
    n = lo.shape[0]
    if not n:
        if pseudo is not None:
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
                              U=boxes.U[p], occ=boxes.occ[p], w=w[sl], basis=basis[sl]))
            continue
        keep = res["ok"]
        child_U[kids_of[sl]] = -np.inf  # pseudocost branching: dropped, or its bound below
        child_U[kids_of[sl][keep]] = res["U"] if keep.any() else []
        if keep.any():
            # a child is a subset of its parent: the parent's bound holds for it too
            U = np.minimum(res["U"], boxes.U[parent[sl][keep]])
            parts.append(dict(lo=lo[sl][keep], hi=hi[sl][keep], lam=res["lam"],
                              step=res["step"], U=U, occ=res["occ"], w=res["w"],
                              basis=res["basis"]))
            found.append(res)
    if pseudo is not None:  # pseudocost branching: the gains of this round's splits
        pseudo.update(child_U, threshold)
    if not parts:
        return None, found, n
    merged = {key: np.concatenate([p[key] for p in parts]) for key in _FIELDS}
    merged["basis"] = [b for p in parts for b in p["basis"]]
    return _Open(**merged), found, n


def branch_and_bound(game: RobustGame, inc: Incumbent, lam0, *, lam_unit: float,
                     max_boxes: int, gap_tol, batch: int = 32,
                     chunk: int = 16, n_lam_steps: int | None = None, bounds=BOX_BOUNDS,
                     client=None, bar=None, t0: float | None = None, state=None,
                     model=None, scale_of=None, rules: BoxRules = BoxRules()) -> Result:
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
    "time" or "empty"), ``trace`` (rounds, 4): seconds, boxes, lower, upper, and
    ``state``: pass it back as ``state`` (with a larger ``max_boxes``) to go on from
    where this call stopped (the boxes count on).  ``scale_of(lower)``: the denominator
    of the relative gap the progress bar shows (default max(1, |lower|)).
    ``rules`` (:class:`BoxRules`): the kernel rounds of :func:`lp_bound` and the split
    rule, the same on every worker.
    """
    S, A = game.S, game.A
    t0 = time.perf_counter() if t0 is None else t0
    if n_lam_steps is None:
        n_lam_steps = 2
    runner = _Runner(game, client, bounds, n_lam_steps, model, rules)
    runner.pseudo = Pseudocosts(S, A) if rules.branching == "pseudocost" else None
    runner.scale_of = scale_of or (lambda v: max(1.0, abs(v)))
    if state is not None:
        boxes, pruned, n_boxes, trace = state
        if runner.pseudo is not None and getattr(boxes, "pseudo", None) is not None:
            runner.pseudo = boxes.pseudo  # pseudocost branching: the records go on
        return _search(runner, inc, boxes, pruned, n_boxes, trace, lam_unit=lam_unit,
                       max_boxes=max_boxes, gap_tol=gap_tol, batch=batch,
                       chunk=chunk, bar=bar, t0=t0)
    lam = np.asarray(lam0, dtype=np.float64).reshape(1, game.K)
    step = 0.1 * np.maximum(lam, lam_unit)
    root = bound_boxes(game, np.zeros((1, S, A)), np.ones((1, S, A)), lam, step, None,
                       None, inc.value + 0.5 * gap_tol(inc.value), bounds=bounds,
                       n_lam_steps=n_lam_steps, rules=rules)
    n_boxes = 1
    if bar is not None:
        bar.update(1)
    if root["ok"][0]:
        inc.take(root["pi"], root["value"], root["costs"], "branch and bound")
        boxes = _Open(lo=np.zeros((1, S, A)), hi=np.ones((1, S, A)), lam=root["lam"],
                      step=root["step"], U=root["U"], occ=root["occ"], w=root["w"],
                      basis=root["basis"])
    else:
        boxes = _Open(lo=np.zeros((0, S, A)), hi=np.zeros((0, S, A)),
                      lam=np.zeros((0, game.K)), step=np.zeros((0, game.K)), U=np.zeros(0),
                      occ=np.zeros((0, S)), w=np.zeros((0, S)), basis=[])
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
        if n_boxes >= max_boxes or runner.game.late():
            stopped = "boxes" if n_boxes >= max_boxes else "time"
            break
        take = np.argsort(-boxes.U, kind="stable")[:batch]
        kids, found, n_new = _children(runner, boxes, take, lam_unit=lam_unit, chunk=chunk,
                                       threshold=inc.value + 0.5 * tol)
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
    boxes.pseudo = getattr(runner, "pseudo", None)  # pseudocost branching: kept in the state
    return Result(upper=upper, boxes=n_boxes, open_boxes=int(boxes.U.size),
                  closed=bool(upper - inc.value <= gap_tol(inc.value) or not boxes.U.size),
                  stopped=stopped, trace=np.array(trace, dtype=np.float64).reshape(-1, 4),
                  state=(boxes, pruned, n_boxes, trace))

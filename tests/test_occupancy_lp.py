"""The occupancy LP built once and filled per box (``LPLayout`` + ``OccupancyLP.values``)
against the LP built from scratch (``OccupancyLP.matrix``, the reference), and its
bases (HiGHS's own objects, pickled as int8 arrays)."""

import pickle

import numpy as np
import scipy.sparse as sp
from hypothesis import event, given
from hypothesis import strategies as st
from test_ground_truth import scale, scaled
from test_occupancy_compiled import kernel_boxes

from rcmdp_exact.ground_truth.local_bound import occupancy_intervals
from rcmdp_exact.ground_truth.occupancy_bound import LPBasis, OccupancyLP


def _kernels(P, rng, K):
    """One kernel of the set per objective: the worst cases of the box's maximiser, each
    objective's taken from a random one of them (any kernel of the set will do)."""
    return P[rng.integers(0, 1 + K, size=1 + K)]


@scaled(25)
@given(kernel_boxes())
def test_filled_pattern_is_the_lp_built_from_scratch(case):
    """The pattern filled with a box's values is the reference matrix entry for entry
    (the pattern's explicit zeros aside; the McCormick entries summed from two terms may
    differ in the last bit), with the same row and column bounds and cost."""
    model, _ball, game, lo, hi, P, rng = case
    K = model.n_constraints
    kernels = _kernels(P[0], rng, K)
    dlo, dhi = occupancy_intervals(game, kernels[None], lo[:1], hi[:1])
    olp = OccupancyLP(game)
    ref = olp.matrix(lo[0], hi[0], kernels, dlo[0], dhi[0])
    lay = olp.layout()
    data, rl, ru, clo, chi = olp.values(lay, lo[0], hi[0], kernels, dlo[0], dhi[0])
    A = sp.csc_array((data, lay.indices, lay.indptr), shape=(lay.n_rows, lay.N))
    np.testing.assert_allclose(A.toarray(), ref[0].toarray(), rtol=1e-15, atol=1e-15)
    for mine, theirs in zip((rl, ru, clo, chi, lay.cost), ref[1:], strict=True):
        np.testing.assert_array_equal(mine, theirs)


def _bound_from_scratch(olp, lo, hi, kernels, dlo, dhi):
    """The bound of the reference LP (solved by HiGHS from the matrix built from scratch
    and certified by the same weak-duality rule), and whether HiGHS solved it to
    optimality (an infeasible LP has no optimum to agree on: any multipliers give a valid
    bound, and another basis gives other ones)."""
    import highspy

    A, rl, ru, clo, chi, cost = olp.matrix(lo, hi, kernels, dlo, dhi)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("presolve", "off")
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = cost.size, A.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, clo, chi
    lp.row_lower_, lp.row_upper_ = rl, ru
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    h.passModel(lp)
    h.run()
    sol = h.getSolution()
    if not sol.dual_valid:
        return np.inf, False
    y = np.asarray(sol.row_dual)
    optimal = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return -olp.certify(y, cost - A.T @ y, rl, ru, clo, chi), optimal


@scaled(20)
@given(kernel_boxes(), st.booleans(), st.booleans())
def test_incremental_lp_bound_equals_the_one_built_from_scratch(case, own, loose):
    """The bound of the filled pattern (one HiGHS instance reused across boxes,
    warm-started from another box's basis) is the bound of the LP built from scratch and
    solved cold, to the solver's tolerance, on every box of the batch whose LP has an
    optimum (``own``: each box with its maximiser's worst cases, else kernels of the set
    drawn at random; ``loose``: budgets that every policy meets, so that it has)."""
    model, _ball, game, lo, hi, P, rng = case
    K = model.n_constraints
    if loose:
        game = game.replace(d=game.d + 2.0 * scale(model))
    olp = OccupancyLP(game)
    basis = None
    for j in range(lo.shape[0]):
        kernels = P[j] if own else _kernels(P[j], rng, K)
        dlo, dhi = occupancy_intervals(game, kernels[None], lo[j:j + 1], hi[j:j + 1])
        mine, basis = olp.bound(lo[j], hi[j], kernels, dlo[0], dhi[0], basis=basis)
        solved = olp.last is not None
        ref, optimal = _bound_from_scratch(olp, lo[j], hi[j], kernels, dlo[0], dhi[0])
        assert solved == optimal
        if optimal:
            assert abs(mine - ref) <= 1e-7 * scale(model)
            # a cold solve on the reused instance is the same too (no state carried over)
            cold, _ = olp.bound(lo[j], hi[j], kernels, dlo[0], dhi[0])
            assert abs(cold - mine) <= 1e-7 * scale(model)
        event(f"LP optimal: {optimal}, loose {loose}, own kernels {own}")


def test_basis_travels_as_int8_arrays():
    """A basis pickled (for a Dask worker) becomes two int8 arrays and warm-starts the
    same LP to the same bound; one of another shape is ignored."""
    from test_ground_truth_bracket import mid_budget_model

    from rcmdp_exact.robust.engine import RobustGame
    from rcmdp_exact.testing import random_box

    m, uset = mid_budget_model(1, 0.3)
    game = RobustGame(m, uset)
    rng = np.random.default_rng(0)
    lo, hi = random_box(rng, m.n_states, m.n_actions, 0.3)
    pi = game.greedy(rng.normal(size=lo.shape), lo, hi)
    ev = game.evaluate(pi[None])
    dlo, dhi = occupancy_intervals(game, ev["P"], lo[None], hi[None])
    olp = OccupancyLP(game)
    first, basis = olp.bound(lo, hi, ev["P"][0], dlo[0], dhi[0])
    assert isinstance(basis, LPBasis)
    back = pickle.loads(pickle.dumps(basis))
    assert back[0].dtype == np.int8 and back[1].dtype == np.int8
    np.testing.assert_array_equal(back[0], basis[0])
    np.testing.assert_array_equal(back[1], basis[1])
    again, _ = olp.bound(lo, hi, ev["P"][0], dlo[0], dhi[0], basis=back)
    assert again == first or abs(again - first) <= 1e-9 * scale(m)
    tup, _ = olp.bound(lo, hi, ev["P"][0], dlo[0], dhi[0], basis=(back[0], back[1]))
    assert tup == again
    # a basis of another LP (of a model with two constraints: more rows and columns)
    # does not fit: ignored
    m2 = m.replace(C=np.repeat(np.asarray(m.C), 2, axis=3), d=np.repeat(m.d, 2))
    game2 = RobustGame(m2, uset)
    ev2 = game2.evaluate(pi[None])
    d2 = occupancy_intervals(game2, ev2["P"], lo[None], hi[None])
    _, big = OccupancyLP(game2).bound(lo, hi, ev2["P"][0], d2[0][0], d2[1][0])
    assert big.shape != basis.shape
    other, _ = olp.bound(lo, hi, ev["P"][0], dlo[0], dhi[0], basis=big)
    assert abs(other - first) <= 1e-9 * scale(m)

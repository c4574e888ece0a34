"""The LP and convex solvers' options, in one place, and a quiet HiGHS.

Every LP or convex program of the toolkit (the CMDP LP of :mod:`rcmdp_exact.ground_truth.lp`,
the LP of :func:`rcmdp_exact.solve_mdp`, the sets' cross-checks and the occupancy LP of
the bracket's boxes) takes its solver options from here:

* :data:`LP_TOL`, the one feasibility and gap tolerance (1e-10, tighter than the solvers'
  defaults so that optima and duals reach about 1e-9), and :data:`CROSS_CHECK_TOL`
  (1e-11), the tighter one of the convex programs that cross-check an exact solver (the
  L1 ball's sort: at 1e-10 Clarabel's answers move by about 1e-10, at 1e-11 they agree
  with the sort to 2e-11);
* :func:`cvxpy_options` (``prob.solve(**cvxpy_options("HIGHS"))``), :data:`HIGHS_OPTIONS`
  (the same options for ``scipy.optimize.linprog(method="highs", options=...)``) and
  :func:`new_highs` (a ``highspy.Highs`` instance, quiet, with the options given).

The module is on the floor: it imports no solver at module level.

HiGHS prints a two-line banner on standard output the first time a ``Highs`` object is
created in a process, whatever the options it is later given (cvxpy creates one before
it passes ``output_flag``).  :func:`silence_highs_banner` creates that first object with
the process's file descriptor 1 pointed at the null device, so the banner goes nowhere
and later solves print nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = [ "CROSS_CHECK_TOL", "HIGHS_OPTIONS", "LP_SOLVERS", "LP_TOL",
           "cvxpy_options", "new_highs", "silence_highs_banner"]

from .names import LP_SOLVERS  # the vocabulary list, in its one home

#: The one tolerance of the LP and convex solvers (primal and dual feasibility, and
#: Clarabel's gaps).
LP_TOL = 1e-10
#: The tolerance of the convex programs that cross-check an exact solver.
CROSS_CHECK_TOL = 1e-11
#: HiGHS's options (cvxpy's keyword arguments and scipy's ``linprog`` options alike).
HIGHS_OPTIONS = {"primal_feasibility_tolerance": LP_TOL,
                 "dual_feasibility_tolerance": LP_TOL}
#: Clarabel's options through cvxpy; its iteration cap is raised from 200 (a cap only
#: matters where the solver has not converged: a converged answer is the same).
_CLARABEL_OPTIONS = {"tol_gap_abs": LP_TOL, "tol_gap_rel": LP_TOL, "tol_feas": LP_TOL,
                    "max_iter": 500}
_CVXPY = {"HIGHS": HIGHS_OPTIONS, "CLARABEL": _CLARABEL_OPTIONS}


def cvxpy_options(solver: str, tol: float | None = None) -> dict:
    """The keyword arguments of ``cvxpy.Problem.solve`` for ``solver`` ("HIGHS" or
    "CLARABEL"), ``solver`` included, at :data:`LP_TOL` or ``tol`` (e.g.
    :data:`CROSS_CHECK_TOL`); HiGHS is silenced first (:func:`silence_highs_banner`)."""
    if solver == "HIGHS":
        silence_highs_banner()
    opts = dict(_CVXPY[solver])
    if tol is not None:
        opts.update({k: float(tol) for k in opts if k != "max_iter"})
    return {"solver": solver, **opts}


def new_highs(**options):
    """A new ``highspy.Highs`` that prints nothing, with these options set."""
    silence_highs_banner()
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for key, value in options.items():
        h.setOptionValue(key, value)
    return h


_done = False


def silence_highs_banner() -> None:
    """Create the process's first ``highspy.Highs`` with stdout discarded (once)."""
    global _done
    if _done:
        return
    _done = True
    try:
        import highspy
    except ImportError:  # cvxpy without HiGHS: nothing to silence
        return
    # HiGHS writes with the C library, to file descriptor 1 whatever ``sys.stdout`` is:
    # a Jupyter kernel's stream reports another descriptor (the terminal it replaced)
    # while it captures descriptor 1 into the notebook.
    fd = 1
    sys.stdout.flush()
    saved, null = os.dup(fd), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
        highspy.Highs()
        ctypes.CDLL(None).fflush(None)  # the C library's buffer, before fd 1 comes back
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(null)

r"""A finite uncertainty set: a list of whole kernels, not rectangular.

A :class:`FiniteSet` holds M kernels :math:`P_1, \dots, P_M` (M, S, A, S); the
adversary picks one of them as a whole, so the rows of different pairs are coupled and
there is no worst case per (s, a) (``rectangularity = "none"``).  The robust value of
a policy is the worst of its values under the members, each objective with its own
adversary (:func:`rcmdp_exact.robust_evaluate` takes a finite set):

.. math::

    V^{\min}(\pi) = \min_m V(\pi, P_m), \qquad C_k^{\max}(\pi) = \max_m C_k(\pi, P_m).

The nominal kernel is the first member.
"""

from __future__ import annotations

import numpy as np

from .._checks import (
    InputError,
    as_float_array,
    check_distributions,
    check_finite,
    readonly,
)
from ._rows import Frozen
from .base import UncertaintySet

__all__ = ["FiniteSet"]


class FiniteSet(Frozen, UncertaintySet):
    r"""A finite set of M whole kernels; the adversary picks one of them.

    Parameters
    ----------
    kernels : array (M, S, A, S) or a sequence of M arrays (S, A, S)
        The members, each a transition kernel (rows summing to 1).  ``kernels[0]`` is
        the nominal kernel.

    Notes
    -----
    Not rectangular (``rectangularity = "none"``): :meth:`worst_case` raises, and
    :func:`rcmdp_exact.robust_evaluate` evaluates a policy against the worst member.
    :meth:`distance` and :meth:`contains` compare a kernel with its closest member.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[[0.5, 0.5]], [[0.0, 1.0]]])
    >>> b = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
    >>> fs = FiniteSet([a, b])
    >>> fs.contains(b).tolist(), fs.contains(0.5 * (a + b)).tolist()
    ([[True], [True]], [[False], [True]])
    """

    rectangularity = "none"

    def __init__(self, kernels):
        K = np.array(as_float_array(kernels, "kernels", "give an array (M, S, A, S) of M "
                                                       "kernels, or a list of (S, A, S) "
                                                       "kernels", finite=False))
        if K.ndim != 4 or K.shape[1] != K.shape[3] or 0 in K.shape:
            raise InputError(
                f"kernels must have shape (M, S, A, S) with M, S, A >= 1 (M kernels "
                f"kernels[m, s, a, s']), got shape {K.shape}; stack the kernels with "
                f"np.stack"
            )
        check_finite(K, "kernels", ("m", "s", "a", "s'"))
        check_distributions(K, "kernels", ("m", "s", "a"), what="transition probabilities")
        self._kernels = readonly(K)
        self._nominal = readonly(K[0].copy())
        self._support = readonly((K > 0).any(axis=0))
        self._freeze()

    @property
    def kernels(self) -> np.ndarray:
        """The members (M, S, A, S)."""
        return self._kernels

    @property
    def n_members(self) -> int:
        """The number M of kernels."""
        return self._kernels.shape[0]

    def __repr__(self) -> str:
        return f"<FiniteSet of {self.n_members} kernels, S={self.n_states}, " \
               f"A={self.n_actions}>"

    def closest(self, P) -> int:
        """The index of the member closest to ``P`` in the largest absolute difference
        over all entries (the first of equally close ones)."""
        P = self._kernel(P)
        return int(np.argmin(np.abs(self._kernels - P).max(axis=(1, 2, 3))))

    def distance(self, P) -> np.ndarray:
        r"""Per pair (S, A): :math:`\max_{s'} |P(s'|s,a) - P_{m^*}(s'|s,a)|` for the
        closest member :math:`m^*` (:meth:`closest`: smallest largest difference over
        the whole kernel).  All zero exactly when P is a member."""
        P = self._kernel(P)
        return np.abs(P - self._kernels[self.closest(P)]).max(axis=2)

    def contains(self, P, tol: float = 1e-9) -> np.ndarray:
        """(S, A): the rows of ``P`` that equal, up to ``tol``, those of the closest member.

        All True exactly when P is a member up to ``tol``; otherwise the pairs where
        P differs from the closest member are False (rows taken from different members
        do not make a member: the set is not rectangular).
        """
        return self.distance(P) <= tol

    def worst_case(self, z, policy=None, *, method: str = "sort"):
        """Not defined: a finite set is not rectangular (always raises an InputError)."""
        raise InputError(
            f"FiniteSet is not rectangular (the adversary picks one of its "
            f"{self.n_members} kernels as a whole), so it has no worst case per (s, a); "
            f"evaluate a policy against it with rcmdp_exact.robust_evaluate(model, "
            f"policy, set) (the worst of the members), or use each member of "
            f"FiniteSet.kernels with model.with_transitions(P); the robust Bellman "
            f"operator, robust value iteration and the bracket need a rectangular set"
        )

    def _arrays(self) -> dict:
        return {"kernels": self._kernels}

    @classmethod
    def _from_arrays(cls, data: dict):
        return cls(data["kernels"])

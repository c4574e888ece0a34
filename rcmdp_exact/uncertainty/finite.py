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
from .base import KernelSet, check_strategy

__all__ = ["KIND", "FiniteSet"]

#: The kind of this file's set (read by :mod:`.kinds`; not estimated from data).
KIND = "finite"


class FiniteSet(Frozen, KernelSet):
    r"""A finite set of M whole kernels; the adversary picks one of them.

    Parameters
    ----------
    kernels : array (M, S, A, S) or a sequence of M arrays (S, A, S)
        The members, each a transition kernel (rows summing to 1).  ``kernels[0]`` is
        the nominal kernel.

    Notes
    -----
    Not rectangular (a :class:`~rcmdp_exact.uncertainty.KernelSet`): :meth:`worst_case`
    raises, and :func:`rcmdp_exact.robust_evaluate` evaluates a policy against the worst
    member.  :meth:`distance` and :meth:`contains` compare a kernel with its closest
    member.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[[0.5, 0.5]], [[0.0, 1.0]]])
    >>> b = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
    >>> fs = FiniteSet([a, b])
    >>> fs.contains(b).tolist(), fs.contains(0.5 * (a + b)).tolist()
    ([[True], [True]], [[False], [True]])
    """

    kind = KIND
    note = "a finite set of whole kernels, the adversary's choices (not estimated from data)"

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
    def members(self) -> np.ndarray:
        """The members (M, S, A, S)."""
        return self._kernels

    def __repr__(self) -> str:
        return f"<FiniteSet of {self.n_members} kernels, S={self.n_states}, " \
               f"A={self.n_actions}>"

    def _absorb_arrays(self, data: dict, ts: np.ndarray) -> None:
        K = data["kernels"]
        K[:, ts] = 0.0
        K[:, ts, :, ts] = 1.0

    @classmethod
    def strategy(cls, model, *, n_kernels=(2, 3), grid: int | None = 4):
        """Hypothesis strategy of finite sets: ``model.P`` first, then kernels drawn on
        the model's support (terminal states absorbing)."""
        check_strategy(grid)
        from hypothesis import strategies as st

        from .._checks import check_int
        from ._draw import kernels, sizes

        P = np.asarray(model.P)
        term = np.asarray(model.terminal, dtype=bool)

        def members(M):
            M = check_int(M, "n_kernels", 1)
            return st.lists(kernels(model, grid=grid), min_size=M - 1, max_size=M - 1)

        def build(others):
            for Q in others:
                Q[term] = P[term]
            return cls(np.stack([P, *others]))

        return sizes(n_kernels).flatmap(members).map(build)

    def _arrays(self) -> dict:
        return {"kernels": self._kernels}

    @classmethod
    def _from_arrays(cls, data: dict):
        return cls(data["kernels"])

"""Float64 facts used by the certified bounds of :mod:`rcmdp_exact.core` (IEEE 754,
round to nearest): ``U = 2^-53`` the unit roundoff, ``ETA = 2^-1074`` the smallest
subnormal, ``gam(n) = n U / (1 - n U)`` (Higham, *Accuracy and Stability of Numerical
Algorithms*, Lemma 3.1): a sum of n products computed in any order is within ``gam(n)``
of the sum of the magnitudes of its terms."""
from __future__ import annotations

U = 2.0 ** -53
ETA = 2.0 ** -1074
#: Relative widening of a computed bound: covers the rounding of the few dozen
#: operations that compute the bound itself (each at most u = 1.1e-16).
WIDEN = 1.0 + 1e-13


def gam(n: int) -> float:
    """Higham's gamma_n = n u / (1 - n u)."""
    return n * U / (1.0 - n * U)
